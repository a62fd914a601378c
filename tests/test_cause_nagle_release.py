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


def test_a_release_that_covers_the_short_segment_is_nagles_though_a_later_one_came_first() -> None:
    """nDPI's tor.pcap, its first connection's first 200 packets (cut to 96 bytes), at the client: the
    relay's 586-byte segment is acknowledged 204 ms later (the client's delayed ACK), and the relay's
    next two segments reach the tap out of order, the 298-byte one first. The releasing ACK covered the
    short segment itself; measured against the highest sequence number before the closing segment
    (the 298-byte one's start, past the 1460 bytes still on their way) it read as a partial release
    and the stall as `undetermined`."""
    (conn,) = analyze_file(Path(__file__).parent / "data" / "ndpi_tor_segment_seen_out_of_order.pcap").files[0].connections
    (stall,) = [s for s in conn.stalls if s.start_frame == 92]
    assert stall.cause == "nagle_delayed_ack" and "short_segment_unacknowledged" not in stall.evidence
    assert stall.evidence["releasing_ack_frame"] == 93


def test_an_ack_sent_at_once_at_the_receivers_tap_is_no_delayed_ack() -> None:
    """Practical Packet Analysis' telnet.pcap, tapped at the client: five times the server's echo
    waits 12-20 ms behind a short segment for an ACK that left the client 0-2.1 ms after the data
    reached it. At the receiver's tap that hold is measured, not estimated: no delayed ACK held the
    echo (the path's round trip is 2.6 ms; the rest was the server's). They read as
    nagle_delayed_ack/buffer_tearing at confidence 0.55."""
    (conn,) = analyze_file(Path(__file__).parent / "data" / "ppa_telnet_spurious_then_idle.pcap").files[0].connections
    assert conn.vantage["1"]["vantage"] == "receiver"
    held = [s for s in conn.stalls if s.dir == 1 and "held_segment_frame" in s.evidence]
    assert [s.start_frame for s in held] == [25, 40, 45, 73, 83]
    for s in held:
        assert s.cause == "undetermined" and s.evidence["releasing_ack_delay_ns"] < 10_000_000
        assert "measured" in s.evidence["reason"]
        assert [a.cause for a in s.alternatives] == ["application_idle", "nagle_delayed_ack"]
    assert "nagle_delayed_ack" not in {s.cause for s in conn.stalls}


def test_a_short_segment_sent_during_loss_recovery_is_no_nagle_hold() -> None:
    """Real Linux through the emulator's ATM switch with EPD on a 20 ms path (atm_epd__rtt20 of a
    live rescore, its first 3,960 packets cut to 66 bytes), at the sender: 2.8 MB out in recovery,
    230 ACKs (duplicate ones among them) through a 139 ms silence, then a 4984-byte segment on an
    ACK that left data unacknowledged. The receiver was answering every segment, so it held no ACK
    back: that was nagle_delayed_ack/buffer_tearing at 0.55; now loss repair (no stall of its own),
    the burst loss's timeout still named."""
    (conn,) = analyze_file(Path(__file__).parent / "data" / "atm_epd_recovery_short_segment.pcap").files[0].connections
    causes = {(s.start_frame, s.cause) for s in conn.stalls if s.cause != "application_idle"}
    assert causes == {(557, "burst_loss_timeout")}, causes
