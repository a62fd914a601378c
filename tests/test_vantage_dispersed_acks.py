"""vantage.dispersed_acks: where the tap sits against the path's bottleneck, from how far apart the
peer's ACKs come back against the data they cover. Hand-built rows first (a sender's tap, a
receiver's tap, a receiver's timer), then a simulated paced writer at its own tap with its
handshake cut off, whose think times went unseen before the ACKs' spacing placed the tap."""

from __future__ import annotations

from pathlib import Path

import polars as pl

import pcap_edit as pe
from stallscope.analyzers import corpus, scoring, vantage
from stallscope.analyzers.analyze import analyze_file

US = 1_000
MS = 1_000_000
SEG = 1448


def _rows(stream: int, flights: int, data_gap: int, ack_gap: int, ack_after: int) -> list[dict]:
    """`flights` flights of two segments `data_gap` apart at the tap, each segment ACKed on its own,
    the first `ack_after` after it and the second `ack_gap` after the first ACK."""
    rows, seq = [], 0
    for f in range(flights):
        t = f * 100 * MS
        for k in range(2):
            seq += SEG
            rows.append({"stream": stream, "dir": 0, "ts_ns": t + k * data_gap, "flag_ack": True, "acks_new": False,
                         "payload_len": SEG, "ack_rel": 1, "new_data": True, "seq_end": seq})
            rows.append({"stream": stream, "dir": 1, "ts_ns": t + ack_after + k * ack_gap, "flag_ack": True,
                         "acks_new": True, "payload_len": 0, "ack_rel": seq, "new_data": False, "seq_end": 1})
    return rows


def _state(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"stream": pl.UInt32, "dir": pl.UInt8, "ts_ns": pl.Int64, "flag_ack": pl.Boolean,
                                      "acks_new": pl.Boolean, "payload_len": pl.UInt32, "ack_rel": pl.Int64,
                                      "new_data": pl.Boolean, "seq_end": pl.Int64}).sort("ts_ns")


def test_acks_spread_from_data_sent_together_place_the_tap_upstream() -> None:
    # Stream 0 at the sender: both segments leave at once, the ACKs come 116 us apart (a 100 Mbit/s
    # bottleneck's serialization of one segment). Stream 1 at the receiver: the segments arrive
    # 116 us apart and each is ACKed 20 us after it.
    state = _state(_rows(0, 20, 0, 116 * US, 2 * MS) + _rows(1, 20, 116 * US, 116 * US, 20 * US))
    assert vantage.dispersed_acks(state, [0, 1]) == {(0, 0)}
    assert vantage.dispersed_acks(state, [1]) == set()


def test_a_receivers_timer_is_no_bottleneck() -> None:
    """The second ACK held 40 ms by the receiver's timer: spread, but no serialization does that."""
    assert vantage.dispersed_acks(_state(_rows(0, 20, 0, 40 * MS, 2 * MS)), [0]) == set()


def test_too_few_pairs_say_nothing() -> None:
    assert vantage.dispersed_acks(_state(_rows(0, vantage.SPREAD_MIN - 1, 0, 116 * US, 2 * MS)), [0]) == set()


def test_a_paced_writer_at_its_own_tap_without_the_handshake(tmp_path: Path) -> None:
    """Linux writing 2644 bytes (two segments) every 105 ms over Fast Ethernet, each segment ACKed
    at once: every write follows the ACK before it by the same 104.7 ms, which without the
    handshake read as a receiver's tap's round trip (nothing moved to tell a paced writer, and the
    TTLs are 64 both ways), and all 99 think times went unseen. The two segments leave together and
    their ACKs return 0.1 ms apart: the tap is before the bottleneck, and each gap is
    application_idle."""
    spec = corpus._bulk("idle", "linux-fastethernet-think105ms-w2644", personality="linux", link="fastethernet",
                        write=2644, think_ns=105 * MS, seed=473)
    corpus.run_trace(spec, tmp_path)
    pcap = tmp_path / f"{spec.name}.pcap"
    cut = pe.drop_syns(pe.read(pcap)).write(tmp_path / "nosyn.pcap")
    timing = analyze_file(cut).files[0].connections[0].vantage["0"]
    assert timing["vantage"] == "sender" and timing["reaction_lag_ns"] == 0, timing
    report = scoring.score_files(cut, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]
    assert report["causes"]["application_idle"]["recall"] >= 0.9, report["causes"]
    assert report["totals"]["misattributed"] == 0


def test_a_coarse_clock_spreads_nothing() -> None:
    """Timestamps in whole milliseconds (nDPI's tls-appdata.pcap, a receiver's tap): data and ACKs
    stamped in one millisecond and the next ACKs in the following one read as 1 ms of spread from
    data sent together, and the tap was put upstream, half the time (see the next test)."""
    rows = _rows(0, 20, 0, 1 * MS, 2 * MS)
    assert vantage.dispersed_acks(_state(rows), [0]) == set()
    # The same at a fine clock, 0.9 ms apart, is a bottleneck's spread.
    fine = _rows(0, 20, 0, 900 * US, 2 * MS + 7)
    assert vantage.dispersed_acks(_state(fine), [0]) == {(0, 0)}


def test_acks_of_one_timestamp_give_one_answer_whatever_their_order() -> None:
    """ACKs sharing a timestamp were paired in whatever order the sort left them, so the same
    capture placed its tap in two places from one run to the next: they are taken in sequence
    order. Each flight here: four segments, two sent at once and two 1 ms later; the middle two
    ACKed in one tick, so the pairs spread (data sent together) in sequence order and kept in the
    other."""
    rows = []
    for f in range(12):
        t, seq = f * 100 * MS, 4 * SEG * f
        for k, (sent, acked) in enumerate(((0, 5000 * US), (0, 5200 * US), (1 * MS, 5200 * US), (1 * MS, 5400 * US))):
            end = seq + (k + 1) * SEG
            rows.append({"stream": 0, "dir": 0, "ts_ns": t + sent, "flag_ack": True, "acks_new": False,
                         "payload_len": SEG, "ack_rel": 1, "new_data": True, "seq_end": end})
            rows.append({"stream": 0, "dir": 1, "ts_ns": t + acked, "flag_ack": True, "acks_new": True,
                         "payload_len": 0, "ack_rel": end, "new_data": False, "seq_end": 1})
    frame = pl.DataFrame(rows, schema=_state(rows).schema)
    answers = {frozenset(vantage.dispersed_acks(frame.sample(fraction=1.0, shuffle=True, seed=s), [0]))
               for s in range(20)}
    assert answers == {frozenset({(0, 0)})}
