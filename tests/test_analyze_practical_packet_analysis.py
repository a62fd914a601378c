"""Captures from Chris Sanders' Practical Packet Analysis (tests/data/ppa_*, cited in
tests/data/README.md), each a textbook case taken on someone else's network, with no handshake in
three of them. What the book says of each, and what the analysis must say:

- inconsistent_printer: a print server (Windows, TTL 128) sends a job to a printer whose receive
  window keeps falling below one segment; the server waits for each window update, and at the end
  its timer resends a window-filling segment the printer never acknowledges. The server's IPv4 ids
  skip during the waits: Windows numbers every packet of the host from one counter, so those skips
  are its other traffic, not packets lost before the tap.
- tcp_zerowindowdead: the client's window is zero and stays zero; the server probes it at 3.4, 10.2
  and 23.7 s (zero-length probes at snd_una - 1) and the capture ends.
- tcp_retransmissions: one direction only: a client resends the same 648 bytes five times, its
  timer backing off from 0.2 to 4.8 s; no packet of the server is in the capture.
- tcp_dupack: no SYN, so the window scale is unknown: the raw windows (382, 108) are no limit.
- latency3, latency4: an HTTP GET to a server 30 ms away, the client slow to send it in one and
  the server slow to answer it in the other.
- ftp_upload_bufferbloat (the first edition's ftp-uploadfailed, its first 500 frames): an FTP
  upload from a home line at 370 kbit/s; the uplink's queue holds the whole 33 KB window, so every
  ACK comes 0.7 s after its data on a 14 ms path, and the sender sends as each ACK slides the
  window: the path's pace, not a stall.
- pop3_download_no_handshake (the first edition's email-troubles, its first 240 frames): a mail
  client fetching mail over POP3 from a server 80 ms away, captured at the client with no
  handshake; the server sends with its window open, so the data right after an ACK is no reaction
  to it and says nothing of the server's side of the round trip.
"""

from __future__ import annotations

from pathlib import Path

import pcap_edit

from stallscope.analyzers.analyze import analyze_file

DATA = Path(__file__).resolve().parent / "data"
LOSS = {"burst_loss_timeout", "single_loss_timeout"}


def _conn(name: str):
    [f] = analyze_file(DATA / name).files
    [c] = f.connections
    return c


def test_a_windows_senders_id_skips_while_a_small_window_held_it_are_no_loss() -> None:
    c = _conn("ppa_inconsistent_printer.pcapng")
    causes = {s.cause for s in c.stalls}
    assert not causes & LOSS
    assert not any("ids_unseen" in s.evidence for s in c.stalls)
    # Each wait for the printer's window update: the window had less room than a segment.
    by_start = {s.start_frame: s for s in c.stalls}
    for start in (30, 49, 65, 83, 100):
        assert by_start[start].cause == "sender_sws"
        assert by_start[start].evidence["usable_window_before_release"] < 1460
    # Frames 118-120: no ACK let it go; after 4.8 s the server's own timer sent the 1092 bytes the
    # window held (RFC 1122's override), not an application that was idle.
    held = by_start[118]
    assert held.cause == "sender_sws"
    assert held.evidence["next_segment_len"] == held.evidence["usable_window_before_release"] == 1092
    assert held.duration_ns > 4_000_000_000
    # Frames 120-122: resent by timeout twice and never acknowledged before the capture ends.
    tail = by_start[120]
    assert tail.cause == "undetermined"
    assert tail.evidence["timeouts"] == 2
    assert "capture ends" in tail.evidence["reason"]


def _with_sender_ttl(tmp_path: Path, ttl: int) -> Path:
    """linux_shaped_sender_drops.pcap (one connection: real Linux tapped after its own tbf, which
    dropped packets the tap never saw) with the data sender's IPv4 TTL rewritten to `ttl`."""
    cap = pcap_edit.read(DATA / "linux_shaped_sender_drops.pcap")
    sender = pcap_edit.data_dir_key(cap)
    records = []
    for r in cap.records:
        t = pcap_edit.tcp_of(r)
        if t is not None and t.key == sender:
            off = t.ip_off + 8
            r = r.with_data(r.data[:off] + bytes([ttl]) + r.data[off + 1:])
        records.append(r)
    return cap.replace_records(records).write(tmp_path / f"ttl{ttl}.pcap")


def test_ttl_tells_a_linux_senders_own_counter_from_a_host_wide_one(tmp_path: Path) -> None:
    """Control for the rule above: packets dropped by the sender's own queue, below the tap. Sent
    with Linux's TTL (64) the skipped ids are the connection's own lost packets; the same capture
    with Windows' TTL (128) makes no loss claim from ids (its counter numbers the host's packets)."""
    def unseen(path: Path) -> list:
        [f] = analyze_file(path).files
        return [s for c in f.connections for s in c.stalls if "ids_unseen" in s.evidence]

    linux = unseen(_with_sender_ttl(tmp_path, 64))
    assert len(linux) >= 5 and {s.cause for s in linux} == {"burst_loss_timeout"}
    assert unseen(_with_sender_ttl(tmp_path, 128)) == []


def test_a_zero_window_that_never_reopens_is_the_receivers_limit() -> None:
    c = _conn("ppa_tcp_zerowindowdead.pcapng")
    [s] = c.stalls
    assert s.cause == "receiver_window_limited"
    assert (s.start_frame, s.end_frame) == (1, 7)
    assert s.evidence["window_reopened"] is False and s.evidence["zero_window_frame"] == 2
    assert 23_000_000_000 < s.time_lost_ns < 24_000_000_000


def test_timeouts_seen_one_way_are_a_stall_with_no_cause_named() -> None:
    c = _conn("ppa_tcp_retransmissions.pcapng")
    assert "one_direction" in {n.kind for n in c.notes}
    [s] = c.stalls
    assert s.cause == "undetermined"
    assert (s.start_frame, s.end_frame) == (1, 6)
    assert "5 time(s)" in s.evidence["reason"]
    assert 9_000_000_000 < s.time_lost_ns < 9_300_000_000


def test_raw_windows_of_unknown_scale_are_no_peer_window_limit() -> None:
    c = _conn("ppa_tcp_dupack.pcapng")
    [sender] = [d for d in c.directions if d.role == "data sender"]
    assert "peer_window" not in sender.limits
    assert sender.limits["window_unknown"] > 0.9
    assert not c.stalls


def test_a_slow_client_and_a_slow_server_are_told_apart() -> None:
    """latency3: the client waits 1.35 s after the handshake before its GET, and the server answers
    62 ms after the GET passed the tap; latency4: the GET goes at once and the server answers 1.03 s
    after it (the book's client and server latency)."""
    slow_client = {s.dir: s for s in _conn("ppa_latency3.pcapng").stalls}
    assert slow_client[0].cause == "application_idle" and slow_client[0].duration_ns > 1_300_000_000
    assert slow_client[1].evidence["peer_data_frame"] == 4
    assert 50_000_000 < slow_client[1].evidence["answered_after_ns"] < 80_000_000
    [slow_server] = _conn("ppa_latency4.pcapng").stalls
    assert slow_server.dir == 1 and slow_server.cause == "application_idle"
    assert slow_server.evidence["answered_after_ns"] > 1_000_000_000


def test_an_upload_paced_by_its_uplinks_queue_has_no_window_stalls() -> None:
    """Each silence between ACK-clocked sends (40-110 ms, over two 14 ms path RTTs) ends with an ACK
    of data sent long before it, with the rest of the window still in the queue: the path was
    delivering all along. The old reading was 106 receiver_window_limited stalls and 18
    window-update deadlocks (the queue's 50-160 ms in slow start read as a delayed-ACK timer)."""
    c = _conn("ppa_ftp_upload_bufferbloat.pcap")
    sender = next(d for d in c.directions if d.role == "data sender")
    window_causes = {"receiver_window_limited", "window_update_deadlock", "send_buffer_limited"}
    assert len([s for s in c.stalls if s.cause in window_causes]) <= 2
    # The sender's limit stays named: its flight was the peer's window nearly all the time.
    assert sender.limits.get("peer_window", 0) > 0.8




def test_without_a_handshake_the_senders_side_of_the_rtt_is_the_peers_data_to_ack_time() -> None:
    """The client's commands are acknowledged 79 ms after they pass the tap: the round trip to the
    server. The server's data that follows an ACK within 1 ms was already on its way (its window
    was open), so the old reading took 1 ms for the path's RTT, 10 ms for the stall threshold, and
    named the server's pauses between messages (with its busy host's IPv4 ids skipping) 8 burst
    and 1 single loss timeouts."""
    c = _conn("ppa_pop3_download_no_handshake.pcap")
    server = c.vantage["1"]
    assert 70e6 < server["path_rtt_ns"] < 90e6 and server["vantage"] == "receiver"
    assert not {s.cause for s in c.stalls} & LOSS

