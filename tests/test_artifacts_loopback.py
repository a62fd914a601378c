"""Loopback captures taken mid-connection: lo carries 64 KB datagrams whole, so without a SYN's MSS
a 65483-byte segment between loopback addresses is a segment, not a TSO/GRO super-frame. The same
datagrams between other addresses exceed every link the decoder knows (9216-byte jumbo frames) and
stay super-frames: the control."""

from __future__ import annotations

import socket
import struct
from pathlib import Path

import dpkt
import pytest

from stallscope.analyzers.analyze import analyze_file

SEGMENT = 65483
SNAPLEN = 128


def _capture(path: Path, src: str, dst: str, segments: int = 20, gap_ns: int = 50_000) -> Path:
    """A bulk transfer seen from its middle: no SYN, `segments` full segments each acknowledged
    `gap_ns` after it and the next sent `gap_ns` after the ACK, payload cut by the snaplen (the IP
    header keeps the length)."""
    a, b = socket.inet_aton(src), socket.inet_aton(dst)
    records = []
    t = 1_000_000_000
    seq, ack = 1_000, 5_000

    def frame(s, d, sport, dport, sq, ak, payload_len):
        tcp = dpkt.tcp.TCP(sport=sport, dport=dport, seq=sq, ack=ak, flags=dpkt.tcp.TH_ACK, win=512)
        tcp.data = b"x" * min(payload_len, 32)
        ip = dpkt.ip.IP(src=s, dst=d, p=dpkt.ip.IP_PROTO_TCP, ttl=64, data=tcp)
        raw = bytes(ip)
        ip_len = 20 + 20 + payload_len
        raw = raw[:2] + struct.pack(">H", ip_len) + raw[4:]
        eth = bytes(dpkt.ethernet.Ethernet(src=b"\0" * 6, dst=b"\0" * 6, type=dpkt.ethernet.ETH_TYPE_IP)) + raw
        return eth, 14 + ip_len

    for _ in range(segments):
        records.append((t, *frame(a, b, 40000, 5001, seq, ack, SEGMENT)))
        seq += SEGMENT
        t += gap_ns
        records.append((t, *frame(b, a, 5001, 40000, ack, seq, 0)))
        t += gap_ns
    with open(path, "wb") as fh:
        dpkt.pcap.Writer(fh, snaplen=SNAPLEN, nano=True)  # the file header only
        for ts, data, wire in records:
            # Records written by hand: dpkt's writepkt records the captured length as the wire's.
            fh.write(struct.pack("<IIII", ts // 1_000_000_000, ts % 1_000_000_000, min(len(data), SNAPLEN), wire)
                     + data[:SNAPLEN])
    return path


@pytest.mark.parametrize("src,dst,superframes", [("127.0.0.1", "127.0.0.1", False), ("127.0.0.1", "127.0.0.2", False),
                                                 ("10.0.0.1", "10.0.0.2", True)])
def test_loopback_segments_are_not_superframes(tmp_path: Path, src: str, dst: str, superframes: bool) -> None:
    conn = analyze_file(_capture(tmp_path / "lo.pcap", src, dst)).files[0].connections[0]
    kinds = {n.kind for n in conn.notes}
    assert "no_syn" in kinds
    sender = conn.directions[0].profile
    if superframes:
        assert "superframes" in kinds and sender["superframes"] == 20 and sender["max_segment"] is None
    else:
        assert "superframes" not in kinds and sender["superframes"] == 0 and sender["max_segment"] == SEGMENT


def test_a_loopback_tap_is_beside_both_ends(tmp_path: Path) -> None:
    """Over lo the tap sees each packet as it is sent: every direction's reaction lag is 0 and its
    vantage the sender's. The same timings between two hosts (each ACK 50 us after the data, the
    next data 50 us after it) put the tap half way."""
    on_lo = analyze_file(_capture(tmp_path / "lo.pcap", "127.0.0.1", "127.0.0.1")).files[0].connections[0]
    assert {d: (v["vantage"], v["reaction_lag_ns"]) for d, v in on_lo.vantage.items()} == {
        "0": ("sender", 0), "1": ("sender", 0)}
    apart = analyze_file(_capture(tmp_path / "net.pcap", "10.0.0.1", "10.0.0.2")).files[0].connections[0]
    assert apart.vantage["0"]["vantage"] == "middle" and apart.vantage["0"]["reaction_lag_ns"] > 0

    # Loopback addresses 22 ms apart are a tunnel or relay that kept them, not lo: the measured
    # timing stands (nDPI's openvpn.pcap).
    relayed = analyze_file(_capture(tmp_path / "relay.pcap", "127.0.0.1", "127.0.0.1", gap_ns=11_000_000))
    assert relayed.files[0].connections[0].vantage["0"]["reaction_lag_ns"] > 0
