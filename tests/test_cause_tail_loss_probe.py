"""A segment that breaks a silence with no ACK while everything outstanding, the segment before the
silence among it, goes unacknowledged until the timer resends it: a tail-loss probe (RFC 8985, new
data two round trips after the last) or a write in a loss; not the writer resuming after an idle
spell. tests/data/linux_bbr_ack_loss_probe.pcap: real Linux with BBR through the user-space link
emulator, the scenario library's `ack_loss` at the sender: the peer's ACKs lost to the capture's
end, a 1448-byte probe 26 ms after the last segment, then five timeouts of the same segment."""

from __future__ import annotations

from pathlib import Path

from stallscope.analyzers.analyze import analyze_one

CAPTURE = Path(__file__).resolve().parent / "data" / "linux_bbr_ack_loss_probe.pcap"


def test_a_probe_after_a_silence_is_no_writer_resuming() -> None:
    (conn,) = analyze_one(CAPTURE).connections
    probe = [s for s in conn.stalls if s.end_frame == 898]
    assert len(probe) == 1, [(s.start_frame, s.end_frame, s.cause) for s in conn.stalls]
    (stall,) = probe
    assert stall.cause == "undetermined"
    assert "tail-loss probe" in stall.evidence["reason"] and "frame 899" in stall.evidence["reason"]
    assert not [s for s in conn.stalls if s.cause == "application_idle" and s.start_frame >= 890]
