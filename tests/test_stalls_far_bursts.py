"""A flight seen after the bottleneck (stalls.bursts with bottleneck_spacing): a sender that issued a
write at once stopped when it issued it, though its segments reach a receiver's tap one
serialization apart, the receiver's ACKs of the first ones among the rest. Linux 2.0 writing 16 KB
every 30 ms over 10 Mbit/s Ethernet, captured at the receiver: each write's last 324 bytes were held
by Nagle for 20 ms (the peer's 10 ms tick, twice), but at the tap the write took 13.5 ms to arrive,
so its silence before the held tail was 6.6 ms, no stall. Read from where the flight began, the
stalls are found; a sender whose every segment an ACK released (one 9 KB segment per ACK, 5 ms
apart, seen from the middle of a LAN) is no flight spread by a link, and gains no stall."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stallscope import _native
from stallscope.analyzers import corpus, scoring

_SPECS = {s.name: s for s in corpus.plan()}


def _causes(tmp_path: Path, name: str, tap: str) -> tuple[dict, dict]:
    corpus.run_trace(_SPECS[name], tmp_path, tap=tap)
    pcap = tmp_path / f"{name}.pcap"
    report = scoring.score_files(pcap, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]
    return report["causes"], report["totals"]


def test_nagle_stalls_behind_a_write_spread_by_the_link_are_found_at_the_receiver(tmp_path: Path) -> None:
    causes, totals = _causes(tmp_path, "idle-linux20-think30ms", "receiver")
    assert causes["nagle_delayed_ack"]["recall"] == 1.0, causes
    assert totals["spurious"] == 0 and totals["precision"] == 1.0, totals


def test_a_flight_clocked_by_acks_is_not_one_burst(tmp_path: Path) -> None:
    # SunOS with a 32 KB buffer under a 16 KB window on ATM, at the sender (its handshake reads
    # "middle"): no stall but the first flight's.
    causes, totals = _causes(tmp_path, "moldeklev-S32768-R16384", "sender")
    assert totals["spurious"] == 0, (causes, totals)


def test_the_native_pass_starts_a_burst_where_an_ack_since_its_start_could_have_released_it() -> None:
    null = -(1 << 63)
    starts = _native.analysis_burst_starts(
        np.zeros(4, dtype=np.uint64), np.array([0, 10, 20, 30], dtype=np.int64),
        np.array([null, null, 12, 12], dtype=np.int64), np.zeros(4, dtype=np.uint8), np.zeros(4, dtype=np.uint8))
    assert np.frombuffer(starts, dtype=np.int64).tolist() == [0, 0, 20, 20]
