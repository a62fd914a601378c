"""ICMP "fragmentation needed" (type 3 code 4) answering an oversized frame, built with dpkt."""

from __future__ import annotations

import dpkt

# The link's "router" address: Linux accepts the message from any source once the quoted TCP
# sequence number is inside the connection's window.
ROUTER_IP = bytes([10, 77, 0, 254])


def frag_needed(frame: bytes, mtu: int, router_mac: bytes) -> bytes | None:
    """The Ethernet frame to send back to the sender of `frame`, or None if `frame` is not IPv4."""
    eth = dpkt.ethernet.Ethernet(frame)
    ip = eth.data
    if not isinstance(ip, dpkt.ip.IP):
        return None
    raw_ip = bytes(frame[14:14 + ip.hl * 4 + 8])  # header + first 8 payload bytes (RFC 792)
    icmp = dpkt.icmp.ICMP(type=dpkt.icmp.ICMP_UNREACH, code=dpkt.icmp.ICMP_UNREACH_NEEDFRAG,
                          data=dpkt.icmp.ICMP.Unreach(mtu=mtu, data=raw_ip))
    reply = dpkt.ip.IP(src=ROUTER_IP, dst=ip.src, p=dpkt.ip.IP_PROTO_ICMP, ttl=64, data=icmp)
    reply.len = len(reply)  # dpkt fills checksums when the packet is serialised
    return bytes(dpkt.ethernet.Ethernet(dst=eth.src, src=router_mac, type=dpkt.ethernet.ETH_TYPE_IP, data=reply))
