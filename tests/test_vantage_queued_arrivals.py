"""The round trip at a receiver's tap without the handshake, behind a bottleneck's queue
(vantage.unqueued_lags): a sender held by its 16 KB send buffer, captured at the receiver with its
SYNs cut. Its flight reaches the tap spread by the bottleneck, each segment one serialization after
the one before, and the receiver's ACKs of the first go out among the rest; the time from each such
ACK to the next segment, which had left the sender long before, read as the round trip, and every
wait for the buffer to drain became a stall (32 spurious `application_idle` in this trace, 34 in
its 8 KB Tru64 neighbour). Simulated traces of the scoring corpus; the truth is the simulator's."""

from __future__ import annotations

from pathlib import Path

import pytest

from pcap_edit import drop_syns, read
from stallscope.analyzers import corpus, corpus_holdout, scoring
from stallscope.analyzers.analyze import analyze_file


def _cut_at_receiver(spec, tmp_path: Path) -> tuple[Path, Path]:
    corpus.run_trace(spec, tmp_path, tap="receiver")
    whole = tmp_path / f"{spec.name}.pcap"
    cut = tmp_path / "cut.pcap"
    drop_syns(read(whole)).write(cut)
    return whole, cut


def _rtt(path: Path) -> int:
    return analyze_file(path).to_json()["files"][0]["connections"][0]["vantage"]["0"]["path_rtt_ns"]


@pytest.mark.parametrize("name", ["sndbuf-bsd44-snd16384", "sndbuf-tru64-snd8192"])
def test_queued_segments_are_no_reactions(tmp_path: Path, name: str) -> None:
    (spec,) = [s for s in corpus.plan() if s.name == name]
    whole, cut = _cut_at_receiver(spec, tmp_path)
    handshake = _rtt(whole)
    # (Before: 0.7 ms against the handshake's 40-100 ms, the serialization of one segment.)
    assert _rtt(cut) >= handshake // 3, (_rtt(cut), handshake)
    report = scoring.score_files(cut, Path(f"{whole}.truth.json")).to_json()["ground_truth"]
    assert report["totals"]["spurious"] <= 1, report["totals"]


def test_a_writer_that_paused_is_no_queue(tmp_path: Path) -> None:
    """Negative control: FreeBSD writing 4 KB every 10 ms over FDDI (a 35 us path) into a window that
    never fills, at the receiver without its SYNs. Each write is one segment with PSH, the next
    written 10 ms later; read as reactions once the queued ones were set aside, the writes made the
    round trip 10 ms and all 55 of the trace's idle stalls went unseen. After a segment that ended
    a write, what comes next is the next write, not a reaction."""
    (spec,) = [s for s in corpus_holdout.plan() if s.name == "idle-freebsd4-think10ms-w4096"]
    whole, cut = _cut_at_receiver(spec, tmp_path)
    assert _rtt(cut) < 1_000_000, _rtt(cut)
    report = scoring.score_files(cut, Path(f"{whole}.truth.json")).to_json()["ground_truth"]
    assert report["totals"]["recall"] >= 0.9, report["totals"]
