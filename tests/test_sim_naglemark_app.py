"""naglemark's app and score (Mogul & Minshall §6-7): the trial letters, lengths and cutoff, and
whole trials in the simulator, recorded at the server where the packets show how the client and
server talk."""

from __future__ import annotations

import pytest

from stallscope.simulate.apps import naglemark as nm
from stallscope.simulate.apps.naglemark_capture import (CLIENT_ADDR, FIRST_CLIENT_PORT, SERVER_ADDR,
                                                         run_naglemark_capture)
from stallscope.simulate.links.presets import LINK_PRESETS
from stallscope.simulate.segment import SYN
from stallscope.simulate.units import NS_PER_MS

RATE = 10_000_000
FDDI_MSS = 4312
MCLBYTES = 8192  # tru64's socket-buffer cluster


def test_trial_letters_follow_mogul_table_2():
    assert nm.TrialType.s.sequential and nm.TrialType.s.per_request
    assert nm.TrialType.S.sequential and not nm.TrialType.S.per_request
    assert not nm.TrialType.r.sequential and nm.TrialType.r.per_request
    assert not nm.TrialType.R.sequential and not nm.TrialType.R.per_request


def test_lengths_are_sequential_by_100_or_seeded_uniform():
    seq = nm.response_lengths(nm.TrialType.S)
    assert seq[0] == 100 and seq[-1] == 100_000 and len(seq) == 1000
    a = nm.response_lengths(nm.TrialType.r, seed=7)
    assert a == nm.response_lengths(nm.TrialType.R, seed=7) != nm.response_lengths(nm.TrialType.r, seed=8)
    assert min(a) >= 1 and max(a) <= 100_000 and len(set(a)) > 900


def test_cutoff_is_three_times_length_over_rate_plus_10ms():
    assert nm.cutoff_ns(100_000, RATE) == 3 * (80 * NS_PER_MS + 10 * NS_PER_MS)
    assert nm.cutoff_ns(1, 100_000_000) == 3 * (80 + 10 * NS_PER_MS)


def test_score_counts_only_samples_above_the_cutoff():
    cut = nm.cutoff_ns(1000, RATE)
    samples = [nm.Sample(1000, cut), nm.Sample(1000, cut + 1), nm.Sample(1000, 0), nm.Sample(1000, 10**12)]
    assert nm.score_pct(samples, RATE) == 50.0
    with pytest.raises(ValueError, match="empty"):
        nm.score_pct([], RATE)


def _stream_offsets(records):
    """{client port: the server's initial sequence number + 1} and the server's data segments as
    (client port, stream offset, length)."""
    start = {s.dport: s.seq + 1 for _, s in records if s.src == SERVER_ADDR and s.flags & SYN}
    data = [(s.dport, (s.seq - start[s.dport]) % (1 << 32), s.payload_len)
            for _, s in records if s.src == SERVER_ADDR and s.payload_len]
    return start, data


@pytest.mark.parametrize("trial, connections", [("S", 1), ("R", 1), ("s", 50), ("r", 50)])
def test_trial_runs_every_response_on_the_right_number_of_connections(trial, connections):
    """Fifty responses over Ethernet with TCP_NODELAY on the server (variant OFF): nothing is ever
    held, so each app_buf-sized write leaves as it is written and no segment spans two writes."""
    lengths = nm.response_lengths(nm.TrialType(trial), n=50, seed=3)
    cap = run_naglemark_capture(personality="tru64", link="ethernet10", variant="OFF", sockbuf=16384, app_buf=4096,
                                trial=trial, lengths=lengths, seed=0)
    res = cap.result
    assert [s.length for s in res.samples] == lengths
    assert cap.ground_truth.summary["connections"] == connections
    start, data = _stream_offsets(cap.records)
    assert sorted(start) == [FIRST_CLIENT_PORT + k for k in range(connections)]
    # The client sends one 16-byte request per response; the server sends every response byte once.
    requests = [s.payload_len for _, s in cap.records if s.src == CLIENT_ADDR and s.payload_len]
    assert requests == [16] * len(lengths)
    assert sum(n for _, _, n in data) == sum(lengths)
    # The server wrote each response in app_buf chunks: no segment crosses a chunk's end.
    ends: dict[int, set[int]] = {}
    offset = 0
    for k, n in enumerate(lengths):
        port = FIRST_CLIENT_PORT + (k if connections > 1 else 0)
        base = 0 if connections > 1 else offset
        ends.setdefault(port, set()).update(base + j for j in range(4096, n, 4096))
        ends[port].add(base + n)
        offset += n
    assert not [(port, a, n) for port, a, n in data if any(a < e < a + n for e in ends[port])]
    # Elapsed: at least the request and the response serialised and two link delays, never delayed.
    delay = LINK_PRESETS["ethernet10"].delay_ns
    for s in res.samples:
        ideal = -(-(16 * 8 * 10**9) // RATE) + 2 * delay
        assert s.elapsed_ns >= ideal + s.length * 800 - 4096 * 800
    assert res.score_pct == 0.0


@pytest.mark.parametrize("trial", ["R", "r"])
def test_a_nagle_stall_on_the_section_3_3_lengths_shows_up_in_the_score(trial):
    """tru64 on FDDI, each response one 128 KB write (Mogul §3.3): a response longer than a
    cluster with an odd number of full segments and a short one waits for the client's delayed
    ACK, every other one is sent at once. The score is exactly the share of the first kind."""
    lengths = nm.response_lengths(nm.TrialType(trial), n=200, seed=5)
    res = nm.run_trial(personality="tru64", link="fddi", variant="NAGLE", sockbuf=131_072, app_buf=131_072,
                       trial=trial, lengths=lengths, seed=5)

    def held(n: int) -> bool:
        return (n // FDDI_MSS) % 2 == 1 and n % FDDI_MSS != 0 and n > MCLBYTES

    rate = LINK_PRESETS["fddi"].rate_bps
    assert [s.length for s in res.samples if s.elapsed_ns > nm.cutoff_ns(s.length, rate)] == \
        [n for n in lengths if held(n)]
    assert res.score_pct == pytest.approx(100.0 * sum(map(held, lengths)) / len(lengths))
    assert 20.0 < res.score_pct < 80.0


def test_bad_parameters_are_rejected():
    with pytest.raises(ValueError, match="app_buf"):
        nm.run_trial(personality="tru64", link="ethernet10", variant="NAGLE", trial=nm.TrialType.S, app_buf=0,
                     sockbuf=1, lengths=[1])
