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
