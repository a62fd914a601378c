"""Captures from nDPI's test set (tests/data/ndpi_*, cited in tests/data/README.md): real traffic
from other people's hosts, cut to 96 bytes.

- ndpi_gnutella_windows_host.pcap: three connections of a busy Windows P2P client (TTL 128) whose
  one IPv4 id counter also numbers its UDP traffic, left out here: its ids skip at almost every
  pause. Across its connections the ids step on by more than 8 between them (the UDP packets in
  between), which once read as counters of their own, and each skip as a lost packet (14 false
  loss stalls).
- ndpi_mining_pushes.pcap: a mining pool pushing jobs seconds to minutes apart, one id skipped before each.
- ndpi_netflix_three_connections.pcap: a TLS connection idle for 30 s until the client's FIN, which
  the server answers with a 31-byte alert; and two HTTP downloads whose sniffer missed runs of the
  server's segments (the segment after each silence starts thousands of bytes past the last one
  seen, and nothing ever resends the bytes between), in one of which the client held an ACK 564 ms.
- ndpi_skinny_phone_rtp.pcap: two SCCP phones (TTL 64, their call manager two hops off), no
  handshake. A phone's 12 signalling packets stepped by one id until its call's RTP stream began,
  and then skipped the ids of the RTP packets it sent (UDP, in the file but not in the analysis).
- ndpi_ultrasurf_gro_no_handshake.pcap: a download taken on a cloud VM with GRO on, no handshake:
  frames of 2576 bytes among 1288-byte ones, each two segments merged.
"""

from __future__ import annotations

from pathlib import Path

from stallscope.analyzers.analyze import analyze_file

DATA = Path(__file__).resolve().parent / "data"
LOSS = {"burst_loss_timeout", "single_loss_timeout"}


def test_a_busy_windows_hosts_id_skips_are_not_losses() -> None:
    a = analyze_file(DATA / "ndpi_gnutella_windows_host.pcap")
    [f] = a.files
    assert len(f.connections) == 3
    assert a.stalls and not any("ids_unseen" in s.evidence for s in a.stalls)
    assert not {s.cause for s in a.stalls} & LOSS


def _connection(port: int):
    [f] = analyze_file(DATA / "ndpi_netflix_three_connections.pcap").files
    [c] = [c for c in f.connections if c.initiator.endswith(f":{port}")]
    return c


def test_an_answer_to_the_peers_fin_after_idle_is_no_window_limit() -> None:
    c = _connection(53105)
    assert {s.cause for s in c.stalls} == {"application_idle"}
    last = max(c.stalls, key=lambda s: s.end_ns)
    assert last.duration_ns > 30_000_000_000  # 30 s of keep-alive idle, ended by the close


def test_segments_the_sniffer_missed_are_no_stall_cause() -> None:
    c = _connection(53148)
    gaps = [s for s in c.stalls if "capture missed" in s.evidence.get("reason", "")]
    assert sum("past the last data" in s.evidence["reason"] for s in gaps) >= 5
    assert all(s.cause == "undetermined" for s in gaps)
    assert not {s.cause for s in c.stalls} & (LOSS | {"receiver_window_limited", "window_update_deadlock"})


def test_one_skipped_id_cannot_make_a_silence_of_many_timeouts() -> None:
    """ndpi_mining_pushes.pcap: a mining pool pushes jobs to a miner (tapped at the miner) seconds
    to minutes apart, its IPv4 id skipping one before each 310-byte job. One unseen packet is one
    send before the seen one: the wait for its timer is a first timeout (at most 3 s, or 4 round
    trips), not the 5 to 72 s between jobs, which were the pool's to choose."""
    a = analyze_file(DATA / "ndpi_mining_pushes.pcap")
    long = [s for s in a.stalls if s.dir == 1 and s.duration_ns > 5_000_000_000]
    assert len(long) >= 20
    assert {s.cause for s in long} == {"application_idle"}
    assert not any("ids_unseen" in s.evidence for s in a.stalls)


def test_an_ack_held_past_any_delayed_ack_timer_is_not_the_timers() -> None:
    """ndpi_netflix_three_connections.pcap, port 53163: the client's ACK that let the server go on
    came 564 ms after the data it covered; RFC 1122 lets no delayed-ACK timer hold one 0.5 s, so
    the stall is no window-update deadlock, and with the window open no window limit either."""
    c = _connection(53163)
    held = [s for s in c.stalls if (s.evidence.get("releasing_ack_delay_ns") or 0) > 500_000_000]
    assert held and all(s.cause == "undetermined" and "0.5 s" in s.evidence["reason"] for s in held)


def test_merged_segments_without_a_handshake_are_super_frames() -> None:
    """With no SYN to tell the MSS, datagrams larger than Ethernet carries whose payload is exactly
    twice the direction's common 1288-byte segment are GRO's merges: a super-frame note, and no
    path finding from their resends (read as 2628-byte frames lost they made a PMTU black hole,
    then jumbo-slot exhaustion)."""
    [f] = analyze_file(DATA / "ndpi_ultrasurf_gro_no_handshake.pcap").files
    [c] = f.connections
    assert {"superframes", "no_syn"} <= {n.kind for n in c.notes}
    assert c.findings == []



def test_a_short_connections_id_steps_do_not_prove_a_counter_of_its_own() -> None:
    """The phones' TTLs put the tap on their side, so their 20-100 ms pauses are stalls. One ended
    after 4 ids were skipped: RTP packets of the same host, its one counter having stepped by one
    only while the phone sent nothing else. Twelve packets do not show a per-connection counter,
    so the skip is no loss (it was a 42 ms burst_loss_timeout)."""
    [f] = analyze_file(DATA / "ndpi_skinny_phone_rtp.pcap").files
    assert len(f.connections) == 2
    phones = [s for c in f.connections for s in c.stalls if s.direction.startswith("192.168.195.")]
    assert phones and all(v["vantage"] == "sender" for c in f.connections
                          for k, v in c.vantage.items() if c.directions[int(k)].direction.startswith("192.168.195."))
    assert not {s.cause for s in phones} & LOSS
    assert not any("ids_unseen" in s.evidence for s in phones)
