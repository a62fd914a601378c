"""Replaying a trace in the simulator: scheduled writes (BulkConfig.writes: the application's writes
at their times and sizes) and segment-exact losses (the drop_segments / drop_acks impairments: the
k-th transmission of a named segment, the k-th pure ACK of an ack number)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from stallscope.cli.app import app
from stallscope.simulate.run_bulk import BulkConfig, run_bulk
from stallscope.simulate.segment import ACK, FIN, PSH, RST, SYN
from stallscope.simulate.truth_audit import audit

MS = 1_000_000
SENDER = "10.0.0.1"


def _base(result) -> int:
    """The sequence number of the stream's byte 0 (the sender's SYN's + 1)."""
    return next(s.seq for _, s in result.records if s.src == SENDER and s.flags & SYN) + 1


def _established(result) -> int:
    """When the connection opened at the sender (the SYN-ACK reached it): writes count from here."""
    return next(t for t, s in result.records if s.src != SENDER and s.flags & SYN)


def _data(result) -> list[tuple[int, int, int, int, int]]:
    """The sender's data segments as (t, offset, payload_len, flags, uid), offsets from byte 0."""
    base = _base(result)
    return [(t, s.seq - base, s.payload_len, s.flags, s.uid) for t, s in result.records
            if s.src == SENDER and s.payload_len > 0]


def _pure_acks(result) -> list[tuple[int, int, int]]:
    """The receiver's pure ACKs reaching the sender as (t, ack offset, uid)."""
    base = _base(result)
    return [(t, s.ack - base, s.uid) for t, s in result.records
            if s.src != SENDER and s.payload_len == 0 and s.flags & ACK and not s.flags & (SYN | FIN | RST)]


# --- scheduled writes ----------------------------------------------------------------------------

SCHEDULE = ((0, 1000), (40 * MS, 6000), (80 * MS, 300), (250 * MS, 20000), (400 * MS, 1))


@pytest.mark.parametrize("personality", ["linux", "sunos41", "bsd44"])
def test_scheduled_writes_reproduce_the_write_times_and_sizes(personality: str) -> None:
    """Every write's first byte leaves at its time, within one RTT, when the window allows (all
    earlier data acknowledged by then), else within an RTT of the ACK that frees it; no byte
    leaves before its write; each write's last byte ends a PSH segment."""
    cfg = BulkConfig.with_writes(SCHEDULE, personality=personality, link="fastethernet", delay_ns=2 * MS)
    assert cfg.bytes == sum(n for _, n in SCHEDULE)
    r = run_bulk(cfg)
    assert r.completed and r.bytes == cfg.bytes
    t0, rtt = _established(r), 4 * MS
    data, acks = _data(r), _pure_acks(r)
    psh_ends = {off + n for _, off, n, flags, _ in data if flags & PSH}
    offset, on_time, alone = 0, 0, 0
    for i, (at, n) in enumerate(SCHEDULE):
        first = min(t for t, off, plen, _, _ in data if off <= offset < off + plen)
        acked = min((t for t, a, _ in acks if a >= offset), default=t0) if offset else t0
        free = max(t0 + at, acked)  # the window allows from here (cwnd after an idle start)
        assert t0 + at <= first <= free + rtt, (personality, at, first - t0, acked - t0)
        on_time += first == t0 + at
        offset += n
        # Sent whole before the next write came, the write ends its own segment, with PSH.
        last = min(t for t, off, plen, _, _ in data if off < offset <= off + plen)
        if i + 1 == len(SCHEDULE) or last < t0 + SCHEDULE[i + 1][0]:
            alone += 1
            assert offset in psh_ends, (personality, offset, sorted(psh_ends))
    assert on_time >= 3 and alone >= 4, (personality, on_time, alone)
    # No byte goes out before its write was issued.
    starts = [sum(n for _, n in SCHEDULE[:i]) for i in range(len(SCHEDULE))]
    for t, off, plen, _, _ in data:
        i = max(k for k, s in enumerate(starts) if s <= off + plen - 1)
        assert t - t0 >= SCHEDULE[i][0]


def test_an_idle_gap_in_the_schedule_is_application_idle() -> None:
    r = run_bulk(BulkConfig.with_writes(((0, 30_000), (500 * MS, 30_000)), personality="linux", link="fastethernet"))
    assert r.completed
    t0 = _established(r)
    idle = [s for s in r.stalls if s.cause.value == "application_idle"]
    assert len(idle) == 1 and idle[0].end_ns - t0 == 500 * MS
    assert idle[0].duration_ns > 490 * MS
    assert {s.cause.value for s in r.stalls} == {"application_idle"}


def test_a_write_later_than_its_time_waits_for_the_previous_one() -> None:
    """A blocking write() loop: 2 MB into a 64 KB send buffer takes longer than the next write's 5 ms."""
    r = run_bulk(BulkConfig.with_writes(((0, 2_000_000), (5 * MS, 500)), personality="linux", link="fastethernet",
                                        sndbuf=65536))
    t0 = _established(r)
    data = _data(r)
    last = min(t for t, off, plen, _, _ in data if off <= 2_000_000 < off + plen)
    assert last - t0 > 100 * MS  # about 2 MB at 100 Mbit/s, not 5 ms
    assert not [s for s in r.stalls if s.cause.value == "application_idle"]


def test_scheduled_writes_with_replies() -> None:
    """With `reply`, each scheduled write is a message the receiver answers; the next write waits
    for its reply (or its own time, whichever is later)."""
    sched = ((0, 3000), (1 * MS, 500), (100 * MS, 2500))
    r = run_bulk(BulkConfig.with_writes(sched, personality="linux", link="fastethernet", delay_ns=5 * MS, reply=200))
    assert r.completed and r.bytes == 6000
    replied = sum(s.payload_len for _, s in r.records if s.src != SENDER)
    assert replied == 400  # the last message is not answered, as with `write`
    t0 = _established(r)
    data = _data(r)
    second = min(t for t, off, _, _, _ in data if off == 3000)
    third = min(t for t, off, _, _, _ in data if off == 3500)
    assert second - t0 >= 10 * MS  # after the first reply's round trip, not at 1 ms
    assert third - t0 == 100 * MS


def test_default_runs_carry_no_schedule_in_their_truth() -> None:
    plain = run_bulk(BulkConfig(bytes=50_000))
    assert "writes" not in plain.ground_truth.to_json()["parameters"]
    sched = run_bulk(BulkConfig.with_writes([[0, 20_000], [30 * MS, 30_000]]))
    params = json.loads(json.dumps(sched.to_json()))["parameters"]
    assert params["writes"] == [[0, 20_000], [30 * MS, 30_000]]
    assert sched.config.writes == ((0, 20_000), (30 * MS, 30_000))  # a list of lists becomes tuples


# --- segment-exact losses ------------------------------------------------------------------------

@pytest.mark.parametrize("personality,sack", [("linux", True), ("sunos41", False), ("linux", False)])
def test_drop_segments_drop_exactly_the_named_transmissions(personality: str, sack: bool) -> None:
    cfg = BulkConfig(personality=personality, link="fastethernet", bytes=200_000, sack=sack, seed=3)
    s1 = _data(run_bulk(cfg))[8][1]
    # Segments after a loss are cut where the recovery cuts them: name a later one from the run
    # with the first losses.
    first = {"drop_segments": ((s1, 1), (s1, 2))}
    probe = _data(run_bulk(cfg, impairments=first))
    s2 = probe[max(i for i, d in enumerate(probe) if d[1] == s1) + 12][1]
    named = ((s1, 1), (s1, 2), (s2, 1))
    r = run_bulk(cfg, impairments={"drop_segments": named})
    assert r.completed and r.bytes == 200_000
    base, data = _base(r), _data(r)
    sent = {s: [d for d in data if d[1] == s] for s in (s1, s2)}
    # The drops are the named transmissions: their uids, in order, with the injected-loss reason.
    expect = [sent[s1][0][4], sent[s1][1][4], sent[s2][0][4]]
    assert [d.uid for d in r.drops] == expect
    assert [(d.seq - base, d.reason, d.flow[0]) for d in r.drops] == [(s1, "injected_loss", SENDER),
                                                                      (s1, "injected_loss", SENDER),
                                                                      (s2, "injected_loss", SENDER)]
    assert r.ground_truth.drops == {"injected_loss": 3}
    assert r.retransmits >= 3
    assert len(sent[s1]) >= 3 and len(sent[s2]) >= 2
    # Downstream the named transmissions are missing: nothing acknowledges the segment before the
    # transmission after the last one lost.
    for s, k in ((s1, 2), (s2, 1)):
        covered = min(t for t, a, _ in _pure_acks(r) if a > s)
        assert covered > sent[s][k][0]
    assert r.path.forward.losses[0].lost == 3
    # The loss causes hold against the drop log, as for drop_nth.
    assert any(st.cause.value.endswith("loss_timeout") for st in r.stalls) or r.timeouts == 0
    assert audit(r) == []


def test_drop_segments_name_no_segment_that_was_never_sent_so() -> None:
    """An offset inside a segment matches nothing: a replay whose segments are cut elsewhere loses
    nothing rather than something else."""
    cfg = BulkConfig(personality="linux", link="fastethernet", bytes=50_000)
    plain = run_bulk(cfg)
    r = run_bulk(cfg, impairments={"drop_segments": ((7, 1), (_data(plain)[3][1], 9))})
    assert not r.drops and r.records == plain.records


def test_drop_acks_drop_the_kth_pure_ack_of_an_ack_number() -> None:
    cfg = BulkConfig(personality="linux", link="fastethernet", bytes=100_000, seed=2)
    plain = run_bulk(cfg)
    acks = _pure_acks(plain)
    a = acks[5][1]
    r = run_bulk(cfg, impairments={"drop_acks": ((a, 1),)})
    assert len(r.drops) == 1
    d = r.drops[0]
    assert (d.reason, d.payload_len) == ("injected_loss", 0)
    assert d.flow[0] == "10.0.0.2" and d.uid == acks[5][2]
    # The sender never sees it (the ACKs before it arrive as they did).
    assert d.uid not in {u for _, _, u in _pure_acks(r)}
    assert _pure_acks(r)[:5] == acks[:5]
    assert audit(r) == []


def test_replay_impairments_are_recorded_in_the_truth() -> None:
    r = run_bulk(BulkConfig(bytes=30_000), impairments={"drop_segments": ((0, 1),), "drop_acks": [(1000, 2)]})
    doc = json.loads(json.dumps(r.to_json()))
    assert doc["parameters"]["impairments"] == {"drop_acks": [[1000, 2]], "drop_segments": [[0, 1]]}
    assert doc["drops"] == {"injected_loss": 1}


# --- validation ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,impairments,needle", [
    ({"writes": ((0, 100), (5, 100)), "bytes": 150}, None, "bytes=150 must equal the sum of the writes"),
    ({"writes": ((10, 100), (5, 100)), "bytes": 200}, None, "writes[1]"),
    ({"writes": ((0, 0),), "bytes": 1}, None, "writes[0]"),
    ({"writes": ((-1, 10),), "bytes": 10}, None, "writes[0]"),
    ({"writes": (), "bytes": 10}, None, "writes must be a non-empty"),
    ({"writes": ((0, 10),), "bytes": 10, "think_ns": 5}, None, "think_ns must be 0 when writes"),
    ({}, {"drop_segments": ((100, 0),)}, "drop_segments[0]"),
    ({}, {"drop_segments": ((-1, 1),)}, "drop_segments[0]"),
    ({}, {"drop_segments": (5,)}, "drop_segments must be"),
    ({}, {"drop_acks": ((0, 1), (3, 1.5))}, "drop_acks[1]"),
])
def test_validation_errors_name_the_field(kwargs: dict, impairments: dict | None, needle: str) -> None:
    with pytest.raises(ValueError) as e:
        run_bulk(BulkConfig(**kwargs), impairments=impairments)
    assert needle in str(e.value)


# --- command line --------------------------------------------------------------------------------

def test_cli_writes_file_and_drop_options(tmp_path) -> None:
    sched = tmp_path / "writes.json"
    sched.write_text(json.dumps([[0, 1000], [50 * MS, 3000], [300 * MS, 2000]]))
    runner = CliRunner()
    res = runner.invoke(app, ["simulate", "bulk", "--personality", "linux", "--link", "fastethernet",
                              "--writes", str(sched), "--drop-segment", "1000", "--drop-ack", "6000:3",
                              "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["bytes"] == 6000 and doc["parameters"]["writes"] == [[0, 1000], [50 * MS, 3000], [300 * MS, 2000]]
    assert doc["parameters"]["impairments"] == {"drop_acks": [[6000, 3]], "drop_segments": [[1000, 1]]}
    assert doc["drops"] == {"injected_loss": 1} and "application_idle" in doc["stall_summary"]
    direct = run_bulk(BulkConfig.with_writes(((0, 1000), (50 * MS, 3000), (300 * MS, 2000)), personality="linux",
                                             link="fastethernet"),
                      impairments={"drop_segments": ((1000, 1),), "drop_acks": ((6000, 3),)})
    assert doc["goodput_mbit_s"] == round(direct.goodput_mbit_s, 4)
    bad = runner.invoke(app, ["simulate", "bulk", "--writes", str(sched), "--bytes", "5"])
    assert bad.exit_code == 2 and "bytes=5 must equal the sum" in bad.output
