"""After an ICMP "fragmentation needed", a sender re-cuts its lost segment smaller and goes on at the
new size: that size is its full segment from then on, and the silence after the re-cut resend waits
for that resend's ACK like any flight's (analyzers/stalls.py `_recent_sizes`, causes/common.py
`resent_before_silence`). A holdout trace (analyzers/corpus_holdout.py) scored against the
simulator's ground truth."""

from __future__ import annotations

from stallscope.analyzers.analyze import analyze_file
from stallscope.analyzers.corpus import run_trace
from stallscope.analyzers.corpus_holdout import plan


def test_a_recut_segment_is_full_and_the_wait_after_the_recut_is_the_delayed_ack(tmp_path):
    """4.4BSD over Fast Ethernet behind a 1280-byte hop that answers with ICMP: its first 1460-byte
    segment is lost and resent as 1240 + 220 at once; one segment of window then waits 174 ms for
    the receiver's delayed ACK, and two 1240-byte segments 200 ms more. Both are
    `window_update_deadlock/congestion_window` in the truth. Before, the first was dropped as loss
    repair and the second read as Nagle holding a "short" 1240-byte segment behind the lost 1460."""
    name = "pmtu-bsd44-fastethernet-1280-icmp"
    (spec,) = [s for s in plan() if s.name == name]
    run_trace(spec, tmp_path)
    (conn,) = analyze_file(tmp_path / f"{name}.pcap").files[0].connections
    got = [(s.start_frame, s.end_frame, s.cause, s.detail) for s in conn.stalls]
    assert got[:2] == [(4, 8, "window_update_deadlock", "congestion_window"),
                       (9, 11, "window_update_deadlock", "congestion_window")], got
    first = conn.stalls[0].evidence
    # The ACK answers the resend (Karn: the copy it answers is unknown); timed from the later copy.
    assert first["releasing_ack_frame"] == 7 and 170e6 < first["releasing_ack_delay_ns"] < 175e6, first
