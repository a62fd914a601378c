"""Write simulated segments as a nanosecond pcap of Ethernet/IPv4/TCP frames (built with dpkt).

Sequence numbers in the simulator are unbounded ints; on the wire each direction adds its own
32-bit ISN (given, or derived from a CRC of the flow so files are reproducible) modulo 2**32.
IP and TCP checksums are computed by dpkt; options are encoded in exactly Segment.options_len
bytes so the IP length on the wire matches the length the links serialised.
"""

from __future__ import annotations

import ipaddress
import struct
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path

import dpkt

from .segment import Segment

DLT_EN10MB = dpkt.pcap.DLT_EN10MB
DLT_RAW = 101  # LINKTYPE_RAW: IPv4/IPv6 with no link header
LINKTYPES = (DLT_EN10MB, DLT_RAW)
SNAPLEN = 262_144
WIRE_MOD = 1 << 32
TTL = 64
# The TTL each simulated stack starts its TCP segments with (the tap sits beside the host: no router
# lowers it). 4.3BSD-Tahoe raised TCP_TTL from 30 to 60, and its descendants SunOS 4.1 and OSF/1
# (Digital UNIX, Tru64's ancestor) kept 60 for TCP; 4.4BSD and FreeBSD send IPDEFTTL, 64, RFC 1340's
# recommendation, as Linux does (sysctl_ip_default_ttl). Fingerprinting tools read it the same way.
PERSONALITY_TTL = {"sunos41": 60, "tru64": 60, "bsd44": 64, "freebsd4": 64, "linux20": 64, "linux": 64}


def personality_ttl(personality: str | None) -> int:
    """The IP TTL a host running `personality` sends (TTL for a stack without one)."""
    return PERSONALITY_TTL.get(personality or "", TTL)

Flow = tuple[str, int, str, int]

# TCP option kinds (RFC 793, 7323, 2018)
_NOP, _MSS, _WS, _SACK_OK, _SACK, _TS = 1, 2, 3, 4, 5, 8


class PcapWriteError(ValueError):
    """A record cannot be written; the message names the record index and the reason."""


def default_isn(flow: Flow) -> int:
    return zlib.crc32(f"{flow[0]}:{flow[1]}>{flow[2]}:{flow[3]}".encode())


def _ts_option(seg: Segment) -> bytes:
    assert seg.timestamp is not None
    return struct.pack("!BBII", _TS, 10, seg.timestamp[0] % WIRE_MOD, seg.timestamp[1] % WIRE_MOD)


def encode_options(seg: Segment, sack_wire: Iterable[tuple[int, int]] = ()) -> bytes:
    """Options in BSD/Linux order with NOP alignment when that fits Segment.options_len,
    otherwise packed and NOP-padded; always exactly options_len bytes."""
    mss = struct.pack("!BBH", _MSS, 4, seg.mss) if seg.mss is not None else b""
    ws = struct.pack("!BBB", _WS, 3, seg.wscale) if seg.wscale is not None else b""
    sok = struct.pack("!BB", _SACK_OK, 2) if seg.sack_permitted else b""
    ts = _ts_option(seg) if seg.timestamp is not None else b""
    blocks = list(sack_wire)
    sack = struct.pack("!BB", _SACK, 2 + 8 * len(blocks)) + b"".join(
        struct.pack("!II", a, b) for a, b in blocks) if blocks else b""
    want = seg.options_len
    if want > 40:
        raise PcapWriteError(f"TCP options need {want} bytes; at most 40 fit")
    nop = bytes([_NOP])
    if sok and ts:  # Linux tcp_options_write: MSS, SACK-permitted, timestamp, NOP, window scale
        aligned = mss + sok + ts + (nop + ws if ws else b"")
    else:  # BSD tcp_output: MSS, NOP window scale, NOP NOP timestamp
        aligned = mss + (nop + ws if ws else b"")
        aligned += (nop * 2 + ts if ts else b"") + (nop * 2 + sok if sok else b"")
    aligned += nop * 2 + sack if sack else b""
    if len(aligned) == want:
        return aligned
    packed = mss + ws + sok + ts + sack
    return packed + nop * (want - len(packed))


def _ipv4(name: str, addresses: Mapping[str, str]) -> bytes:
    text = addresses.get(name, name)
    try:
        return ipaddress.IPv4Address(text).packed
    except ValueError as exc:
        raise PcapWriteError(f"host {name!r} has no IPv4 address (give one in `addresses`)") from exc


def _mac(ip: bytes) -> bytes:
    return b"\x02\x00" + ip  # locally administered, unique per host address


def build_frame(seg: Segment, addresses: Mapping[str, str], isn: Mapping[Flow, int],
                linktype: int = DLT_EN10MB, ttl: int = TTL) -> bytes:
    flow: Flow = (seg.src, seg.sport, seg.dst, seg.dport)
    back: Flow = (seg.dst, seg.dport, seg.src, seg.sport)
    my_isn = isn.get(flow, default_isn(flow))
    peer_isn = isn.get(back, default_isn(back))
    sack_wire = [((peer_isn + a) % WIRE_MOD, (peer_isn + b) % WIRE_MOD) for a, b in seg.sack]
    opts = encode_options(seg, sack_wire)
    ack = (peer_isn + seg.ack) % WIRE_MOD if seg.flags & dpkt.tcp.TH_ACK else 0
    tcp = dpkt.tcp.TCP(sport=seg.sport, dport=seg.dport, seq=(my_isn + seg.seq) % WIRE_MOD, ack=ack,
                       flags=seg.flags, win=seg.window & 0xFFFF, opts=opts,
                       data=bytes(seg.payload_len))
    tcp.off = (20 + len(opts)) // 4
    src, dst = _ipv4(seg.src, addresses), _ipv4(seg.dst, addresses)
    ip = dpkt.ip.IP(src=src, dst=dst, p=dpkt.ip.IP_PROTO_TCP, id=seg.ip_id & 0xFFFF, ttl=ttl,
                    df=1, data=tcp)
    ip.len = 20 + len(tcp)
    if ip.len != seg.ip_len:
        raise PcapWriteError(f"encoded IP length {ip.len} differs from the segment's {seg.ip_len}")
    if linktype == DLT_RAW:
        return bytes(ip)
    eth = dpkt.ethernet.Ethernet(src=_mac(src), dst=_mac(dst), type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
    return bytes(eth)


def write_pcap(path: str | Path, records: Iterable[tuple[int, Segment]], *,
               addresses: Mapping[str, str] | None = None, linktype: int = DLT_EN10MB,
               isn: Mapping[Flow, int] | None = None, epoch_ns: int = 0,
               ttls: Mapping[str, int] | None = None) -> int:
    """Write `records` ((time ns, segment), in time order) to a nanosecond pcap; returns the
    number of packets. `addresses` maps host names used in segments to IPv4 addresses (names
    that already are addresses need no entry); `ttls` a sending host (as named in the segments)
    to the IP TTL of its packets (PERSONALITY_TTL; TTL for a host without one)."""
    if linktype not in LINKTYPES:
        raise PcapWriteError(f"unsupported linktype {linktype}; use one of {LINKTYPES}")
    addresses = addresses or {}
    isn = isn or {}
    header = dpkt.pcap.LEFileHdr(magic=dpkt.pcap.TCPDUMP_MAGIC_NANO, snaplen=SNAPLEN, linktype=linktype)
    count = 0
    last = None
    with open(path, "wb") as out:
        out.write(bytes(header))
        for index, (now, seg) in enumerate(records):
            if last is not None and now < last:
                raise PcapWriteError(f"record {index}: time {now} ns goes back from {last} ns")
            last = now
            try:
                frame = build_frame(seg, addresses, isn, linktype, (ttls or {}).get(seg.src, TTL))
            except PcapWriteError as exc:
                raise PcapWriteError(f"record {index} (uid {seg.uid}): {exc}") from None
            sec, nsec = divmod(epoch_ns + now, 1_000_000_000)
            out.write(bytes(dpkt.pcap.LEPktHdr(tv_sec=sec, tv_usec=nsec, caplen=len(frame), len=len(frame))))
            out.write(frame)
            count += 1
    return count


__all__ = ["write_pcap", "build_frame", "PERSONALITY_TTL", "personality_ttl", "encode_options", "default_isn", "PcapWriteError",
           "DLT_EN10MB", "DLT_RAW"]
