"""A short segment that left with no ACK of the short one before it: Nagle (classic or Minshall's)
would have held it for that ACK, so it did not, and no timer that sends new data runs under 200 ms;
the silence before it was the writer's (`causes/application.py`, `_not_held`). Built with dpkt: a
TLS-like server at its own tap answers each request with a 51-byte record and, `gap_ms` later, a
391-byte one, the client's delayed ACK of both coming after the second (as a Windows client's did in
a public SMB capture, sbousseaden/PCAP-ATTACK's PsLoggedOn enumeration)."""

from __future__ import annotations

from pathlib import Path

import dpkt
import pytest

from stallscope.analyzers.analyze import analyze_one

MS = 1_000_000
CLIENT, SERVER = (b"\x0a\x00\x00\x01", 40000), (b"\x0a\x00\x00\x02", 443)


def _frame(src, dst, seq: int, ack: int, flags: int, payload: bytes = b"", mss: bool = False) -> bytes:
    opts = b"\x02\x04\x05\xb4" if mss else b""
    tcp = dpkt.tcp.TCP(sport=src[1], dport=dst[1], seq=seq, ack=ack, flags=flags, win=65535, opts=opts,
                       data=payload)
    tcp.off = 5 + len(opts) // 4
    ip = dpkt.ip.IP(src=src[0], dst=dst[0], p=dpkt.ip.IP_PROTO_TCP, ttl=64, data=tcp)
    ip.len = 20 + len(bytes(tcp))
    eth = dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
    return bytes(eth)


def _capture(path: Path, gap_ms: float, rounds: int = 6, special: int = 3, unseen: int = 0) -> Path:
    """Packets as the server's tap sees them: a 2 ms round trip, requests 1 s apart. In every round
    but `special` the client ACKs the 51-byte record before the server writes the next one, so the
    server's Nagle is never shown off (one short segment behind an unacknowledged short one is too
    few to call it off). `unseen`: bytes the client sent during the special round's silence that the
    tap missed (the server's 391-byte record acknowledges them)."""
    syn, ack, psh = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK, dpkt.tcp.TH_PUSH | dpkt.tcp.TH_ACK
    c_seq, s_seq = 1000, 5000
    pkts = [(0, _frame(CLIENT, SERVER, c_seq, 0, syn, mss=True)),
            (10_000, _frame(SERVER, CLIENT, s_seq, c_seq + 1, syn | ack, mss=True)),
            (2 * MS, _frame(CLIENT, SERVER, c_seq + 1, s_seq + 1, ack))]
    c_seq, s_seq = c_seq + 1, s_seq + 1
    for i in range(rounds):
        t = 10 * MS + i * 1000 * MS
        pkts.append((t, _frame(CLIENT, SERVER, c_seq, s_seq, psh, b"q" * 100)))
        c_seq += 100
        pkts.append((t + 100_000, _frame(SERVER, CLIENT, s_seq, c_seq, psh, b"a" * 51)))
        s_seq += 51
        if i != special:
            pkts.append((t + 2 * MS, _frame(CLIENT, SERVER, c_seq, s_seq, ack)))
        t2 = t + 100_000 + int(gap_ms * MS)
        if i == special:
            c_seq += unseen
        pkts.append((t2, _frame(SERVER, CLIENT, s_seq, c_seq, psh, b"b" * 391)))
        s_seq += 391
        pkts.append((t2 + 2 * MS, _frame(CLIENT, SERVER, c_seq, s_seq, ack)))
    with path.open("wb") as f:
        w = dpkt.pcap.Writer(f, nano=True)
        for ts, buf in pkts:
            w.writepkt(buf, ts=ts / 1e9)
    return path


def _held(path: Path):
    """The stall of the special round: the server's, 51 bytes out, no ACK during it."""
    (conn,) = analyze_one(path).connections
    server = next(d for d in conn.directions if d.dir == 1)
    assert server.profile["nagle"] != "off"
    return [s for s in conn.stalls if s.dir == 1 and s.evidence.get("peer_acks_during") == 0
            and s.evidence.get("outstanding_at_start") == 51]


def test_a_short_record_sent_with_the_last_unacknowledged_is_the_writers(tmp_path: Path) -> None:
    (stall,) = _held(_capture(tmp_path / "resumed.pcap", gap_ms=24))
    assert stall.cause == "application_idle", stall
    assert stall.evidence["resumed_segment_len"] == 391


def test_past_a_probe_timer_it_stays_undetermined(tmp_path: Path) -> None:
    """After 200 ms a tail-loss probe (or TCP_CORK's timer) may have sent what Nagle held."""
    (stall,) = _held(_capture(tmp_path / "late.pcap", gap_ms=250))
    assert stall.cause == "undetermined", stall


def test_not_where_the_tap_missed_the_peers_packets(tmp_path: Path) -> None:
    """The record acknowledges 40 bytes of the client's the capture never showed: the tap missed
    packets of the client's in the silence, and one of them may have been the ACK that let it go."""
    (stall,) = _held(_capture(tmp_path / "gap.pcap", gap_ms=24, unseen=40))
    assert stall.cause == "undetermined", stall
