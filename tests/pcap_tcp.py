"""The TCP segments of an Ethernet pcap, read with dpkt (the decoding oracle the tests share)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import dpkt


def tcp_segments(pcap: Path) -> Iterator[tuple[dpkt.ip.IP, dpkt.tcp.TCP, int]]:
    """(IP packet, TCP segment, payload length) for every IPv4 TCP frame, in file order."""
    with Path(pcap).open("rb") as f:
        for _, buf in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            if not isinstance(ip, dpkt.ip.IP) or not isinstance(ip.data, dpkt.tcp.TCP):
                continue
            tcp = ip.data
            yield ip, tcp, ip.len - 4 * ip.hl - 4 * tcp.off
