"""Ground truth of a writer that thinks between writes (native/src/sim/tcp/stalls.rs attribute):
the gap a think time leaves is `application_idle`, though its next write's first 2 KB chunk is
held by Nagle for an instant before the second chunk lets a segment go (4.4BSD copies a write
cluster by cluster). Before, that instant's hold named the whole 60 ms gap a Nagle stall."""

from __future__ import annotations

import json
from pathlib import Path

from stallscope.analyzers import corpus, scoring


def test_a_think_time_ended_by_a_write_whose_first_chunk_nagle_held_is_the_applications(tmp_path: Path) -> None:
    # 4.4BSD on FDDI: 50000-byte writes 60 ms apart into an 8 KB buffer; each write's tail goes out
    # after the writer fell asleep (parameters outside the scoring corpus's plan).
    spec = corpus._bulk("idle", "bsd44-think60ms-w50000", personality="bsd44", link="fddi", write=50000,
                        think_ns=60_000_000, seed=71)
    corpus.run_trace(spec, tmp_path)
    pcap = tmp_path / f"{spec.name}.pcap"
    stalls = json.loads(Path(f"{pcap}.truth.json").read_text())["stalls"]
    # The first segment's delayed ACK in slow start; then per think time either the application's
    # gap (the write's tail went out before the writer slept) or a Nagle stall (its last 848 bytes
    # were held behind 848 unacknowledged until the peer's 200 ms tick, which the next write met).
    causes = [s["cause"] for s in stalls]
    assert causes == ["window_update_deadlock", "application_idle", "nagle_delayed_ack", "nagle_delayed_ack",
                      "application_idle", "nagle_delayed_ack"], causes
    # The analyzer reads the application's gaps so from the capture. (The Nagle ones it reads as
    # idle too: the write boundary inside the 4096-byte segment that ended them is not on the wire.)
    report = scoring.score_files(pcap, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]
    assert report["causes"]["application_idle"]["recall"] == 1.0, report
    assert report["causes"]["window_update_deadlock"]["recall"] == 1.0, report
