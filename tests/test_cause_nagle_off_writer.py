"""A sender whose rule let short segments go behind unacknowledged short ones cannot have been held
by Nagle: tests/data/ftp_control_nagle_off.pcap, the first 600 packets of Zeek's public
ftp/cwd-navigation.pcap (an FTP control connection, tapped at the Windows client, which delays its
ACKs to a 200 ms tick). After each RETR the server replies "150 Opening..." (80 bytes) and, once
the data connection closes, "226 Transfer complete" (23 bytes). Often the 226 goes out with the
150 unacknowledged (Nagle off). Sometimes it comes one round trip after the client's delayed ACK of
the 150: the data connection's last ACK left at the same tick, and the server wrote 226 then. By
its look that is Nagle's hold released by a delayed ACK; it is not."""

from __future__ import annotations

from pathlib import Path

from stallscope.analyzers.analyze import analyze_one

CAPTURE = Path(__file__).resolve().parent / "data" / "ftp_control_nagle_off.pcap"


def test_nagle_is_off_where_short_replies_go_behind_unacknowledged_short_ones() -> None:
    f = analyze_one(CAPTURE)
    server = next(d for d in f.connections[0].directions if d.dir == 1)
    assert server.profile["nagle"] == "off"
    assert 23 in server.profile["_nagle_free_lengths"]


def test_a_reply_of_a_length_that_goes_unheld_elsewhere_is_not_a_nagle_hold() -> None:
    """The 226 replies went out behind an unacknowledged 150 ten times and more: nothing holds a
    23-byte write of this server's, so one that followed an ACK was the writer's timing."""
    stalls = analyze_one(CAPTURE).connections[0].stalls
    assert not [s for s in stalls if s.cause == "nagle_delayed_ack"]
    late = [s for s in stalls if s.evidence.get("held_segment_len") == 23]
    assert len(late) >= 4
    for s in late:
        assert s.cause == "application_idle"
        assert s.evidence["free_sends_of_this_length"] >= 10
        assert [a.cause for a in s.alternatives] == ["nagle_delayed_ack"]
