"""The first segment of slow start waiting for the receiver's delayed ACK (the simulator's
`window_update_deadlock` / `congestion_window`): found as such where the trace shows only that one
held ACK (no timer to learn from others), and where periodic traffic queued on the path lines up
ACKs on a 200 ms phase that no timer made (analyzers/peer_acks.py learn_tick)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stallscope.analyzers import corpus, peer_acks, scoring

MS = 1_000_000
# Parameters outside the scoring corpus's plan (its write sizes, links and seeds differ).
SPECS = {
    # Tru64 (a 200 ms tick) acknowledges the lone first segment 27 ms late: under a one-shot
    # timer's minimum, the only ACK it ever held.
    "first-tru64-fddi-w2500": dict(personality="tru64", link="fddi", nagle="NAGLE", write=2500, sndbuf=32768,
                                   seed=100),
    # 4.4BSD's tick 15.9 ms after the first segment: under 20 ms, yet long enough to make the
    # stall on its own (the scoring corpus's nagle-bsd44-ethernet10-EOM).
    "first-bsd44-ethernet10-eom": dict(personality="bsd44", link="ethernet10", nagle="EOM", write=5096,
                                       sndbuf=16384, seed=6),
    # FreeBSD's one-shot 100 ms timer; the sender's rounds at 100 Mbit/s queue ACKs 2.4 ms on a
    # 200 ms phase.
    "first-freebsd4-fastethernet-w5000": dict(personality="freebsd4", link="fastethernet", write=5000, seed=93),
}


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("first_segment")
    for name, config in SPECS.items():
        corpus.run_trace(corpus._bulk("first", name.removeprefix("first-"), **config), out)
    return out


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_first_segments_delayed_ack_is_named(traces: Path, name: str) -> None:
    pcap = traces / f"{name}.pcap"
    result = scoring.score_files(pcap, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]
    assert result["causes"]["window_update_deadlock"]["true"] >= 1
    t = result["totals"]
    assert (t["missed"], t["spurious"], t["misattributed"], t["undetermined"]) == (0, 0, 0, 0), result


def test_equal_short_holds_on_one_phase_are_the_traffics_clock() -> None:
    """Twelve ACKs every 200 ms, each held 2.4 ms (queued on the path): on one phase, but no timer's."""
    times = [37 * MS + k * 200 * MS + (k % 5) * 300_000 for k in range(12)]  # within BSD's 2 ms window
    assert peer_acks.learn_tick(times, [2.4 * MS + (k % 3) * 50_000 for k in range(12)]) is None
    # The same phase with holds spread as a tick's are (data arriving at any phase before it).
    assert peer_acks.learn_tick(times, [(2 + 7 * k) * MS for k in range(12)])["period_ns"] == peer_acks.BSD_TICK_NS
    # ...or held most of the period (Moldeklev's deadlock: the data is locked to the tick too).
    assert peer_acks.learn_tick(times, [196 * MS] * 12)["period_ns"] == peer_acks.BSD_TICK_NS
