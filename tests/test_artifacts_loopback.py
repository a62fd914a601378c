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


def _capture(path: Path, src: str, dst: str, segments: int = 20) -> Path:
    """A bulk transfer seen from its middle: no SYN, `segments` full segments each acknowledged at
    once, payload cut by the snaplen (the IP header keeps the length)."""
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
        t += 50_000
        records.append((t, *frame(b, a, 5001, 40000, ack, seq, 0)))
        t += 50_000
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
