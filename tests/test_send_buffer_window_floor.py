"""The send-buffer finding where the peer's window scale is a floor (real Linux, captured at the
sender with its SYNs cut; tests/data). The flight stopped at the buffer's 69,504 bytes; without the
handshake the window scale is the least that explains the flight (2^9, the real one 2^10), so the
peer's window reads 119,808 bytes. The finding asked for a window twice the flight, which a floor
one scale short cannot show, and the buffer went unnamed; the window that left room for two more
segments shows the window did not stop the sender, whatever its real scale."""

from __future__ import annotations

from pathlib import Path

from stallscope.analyzers.analyze import analyze_file

DATA = Path(__file__).resolve().parent / "data"


def test_a_buffer_under_a_floor_window_is_named() -> None:
    (conn,) = analyze_file(DATA / "linux_small_sndbuf_long_rtt_no_syn.pcap").files[0].connections
    sender = next(d for d in conn.directions if d.role == "data sender")
    assert sender.profile["window_known"] is False and sender.profile["_window_floor_scale"] == 9
    assert sender.profile["peer_receive_window_max"] < 2 * sender.profile["send_buffer_estimate"]
    found = [f for f in conn.findings if f.cause == "send_buffer_limited"]
    assert found, [f.cause for f in conn.findings]
    assert found[0].evidence["send_buffer_estimate"] == 69504
    assert "at least 119808" in found[0].evidence["why"]  # the window is said to be a floor
