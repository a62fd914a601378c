"""What may end a Nagle hold: the ACK the held segment waited for must be one a delayed-ACK timer
could have held. A peer that held it longer than RFC 1122 lets any timer (0.5 s) paused, or a queue
held the data: Nagle waited, but the stall is not the Nagle / delayed-ACK interaction."""

from __future__ import annotations

from pathlib import Path

from stallscope.analyzers.analyze import analyze_file


def test_an_ack_held_longer_than_any_timer_is_no_delayed_ack() -> None:
    """suricata-verify's bug-4953 file76.pcap (cut to 96 bytes), tapped at an infected client 240 ms
    from its server: the client's 714-byte tail waits behind 4.6 KB for an ACK that comes 870 ms
    after the last of it, 626 ms past the round trip. It was nagle_delayed_ack/buffer_tearing."""
    (conn,) = analyze_file(Path(__file__).parent / "data" / "http_ack_held_870ms_behind_nagle.pcap").files[0].connections
    (stall,) = [s for s in conn.stalls if s.start_frame == 154]
    assert stall.cause == "undetermined"
    assert stall.evidence["releasing_ack_delay_ns"] > 500_000_000 and "0.5 s" in stall.evidence["reason"]
    assert [a.cause for a in stall.alternatives] == ["nagle_delayed_ack"]
    assert "nagle_delayed_ack" not in {s.cause for s in conn.stalls}
