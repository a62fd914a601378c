"""Path causes on simulated traces: a PMTU black hole is named for every stall it causes, the first
one included when the stack re-cuts its first resend into a larger segment (4.4BSD after a
timeout sends from snd_una as much as its MSS allows, so the resend also carries new data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stallscope.analyzers import corpus, scoring
from stallscope.analyzers.analyze import analyze_file


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("path_traces")
    corpus.generate(out, jobs=1, only=["pmtu-bsd44-fddi-blackhole", "pmtu-linux-fddi-blackhole"])
    return out


@pytest.mark.parametrize("name", ["pmtu-bsd44-fddi-blackhole", "pmtu-linux-fddi-blackhole"])
def test_every_black_hole_stall_is_named(traces: Path, name: str) -> None:
    pcap = traces / f"{name}.pcap"
    report = scoring.score_files(pcap, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]
    assert report["causes"]["pmtu_blackhole"]["recall"] == 1.0, report["stalls"]
    assert report["totals"]["spurious"] == 0 and report["totals"]["misattributed"] == 0


def test_a_recut_first_resend_is_the_timeout(traces: Path) -> None:
    stalls = analyze_file(traces / "pmtu-bsd44-fddi-blackhole.pcap").stalls
    first = min(stalls, key=lambda s: s.start_ns)
    assert first.cause == "pmtu_blackhole"
    # Frame 5 resends bytes 1..2048 of frame 4 and carries 2049..4096 new: the timer's resend.
    assert first.evidence["first_timeout_frame"] == first.end_frame == 5
    # GigaTCP's MSS offered and never used costs no stall, so it is no alternative to a black hole.
    assert {a.cause for a in first.alternatives} <= {"burst_loss_timeout", "single_loss_timeout"}


def test_segments_cut_by_a_small_window_are_no_mss_mismatch() -> None:
    """Real Linux into a receiver with a 1460-byte window (tests/data): the sender cuts its segments
    to half of it (730 bytes, tcp_bound_to_half_wnd) under the 1460-byte MSS both SYNs offered. The
    window sized them, not an unused MSS: no mss_mismatch (it was reported before)."""
    data = Path(__file__).resolve().parent / "data" / "linux_small_receive_buffer.pcap"
    analysis = analyze_file(data)
    (conn,) = analysis.files[0].connections
    sender = next(d for d in conn.directions if d.role == "data sender")
    assert sender.profile["max_segment"] == 730 and sender.profile["mss_offered_by_peer"] == 1460
    assert sender.profile["peer_receive_window_max"] == 1460
    assert conn.findings == [] and analysis.stalls == []
