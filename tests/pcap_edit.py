"""Rewriting classic pcap files record by record, for the bad-input tests of the analyzer.

Records are kept as raw bytes with their header fields as integers (seconds, fraction in the file's
unit, captured and original length), so a nanosecond capture stays exact; dpkt parses each frame to
find its headers, and edits patch the raw bytes at those offsets (TCP checksums are left as they
were: the analyzer never checks them).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace
from pathlib import Path

import dpkt

NS_MAGIC = 0xA1B23C4D
US_MAGIC = 0xA1B2C3D4
ETH_LEN = 14


@dataclass(frozen=True)
class Record:
    sec: int
    frac: int
    orig_len: int
    data: bytes

    def with_data(self, data: bytes, orig_len: int | None = None) -> "Record":
        return replace(self, data=data, orig_len=self.orig_len if orig_len is None else orig_len)


@dataclass(frozen=True)
class Capture:
    endian: str  # "<" or ">"
    nano: bool
    snaplen: int
    linktype: int
    records: list[Record]

    @property
    def unit(self) -> int:
        return 1_000_000_000 if self.nano else 1_000_000

    def ts(self, r: Record) -> int:
        """The record's time, ns."""
        return r.sec * 1_000_000_000 + r.frac * (1 if self.nano else 1000)

    def at(self, r: Record, ts_ns: int) -> Record:
        scale = 1 if self.nano else 1000
        return replace(r, sec=ts_ns // 1_000_000_000, frac=(ts_ns % 1_000_000_000) // scale)

    def replace_records(self, records: list[Record]) -> "Capture":
        return replace(self, records=list(records))

    def to_bytes(self) -> bytes:
        e = self.endian
        out = [struct.pack(e + "IHHiIII", NS_MAGIC if self.nano else US_MAGIC, 2, 4, 0, 0, self.snaplen,
                           self.linktype)]
        for r in self.records:
            out.append(struct.pack(e + "IIII", r.sec, r.frac, len(r.data), r.orig_len))
            out.append(r.data)
        return b"".join(out)

    def write(self, path: Path) -> Path:
        Path(path).write_bytes(self.to_bytes())
        return Path(path)

    def record_offsets(self) -> list[int]:
        """Byte offset of each record header in `to_bytes()`."""
        offs, pos = [], 24
        for r in self.records:
            offs.append(pos)
            pos += 16 + len(r.data)
        return offs


def read(path: Path) -> Capture:
    b = Path(path).read_bytes()
    magic_le = struct.unpack("<I", b[:4])[0]
    if magic_le in (NS_MAGIC, US_MAGIC):
        e = "<"
    else:
        e = ">"
    magic, _, _, _, _, snaplen, linktype = struct.unpack(e + "IHHiIII", b[:24])
    nano = magic == NS_MAGIC
    records, pos = [], 24
    while pos + 16 <= len(b):
        sec, frac, incl, orig = struct.unpack(e + "IIII", b[pos:pos + 16])
        records.append(Record(sec, frac, orig, b[pos + 16:pos + 16 + incl]))
        pos += 16 + incl
    return Capture(e, nano, snaplen, linktype, records)


@dataclass(frozen=True)
class Tcp:
    """Where a frame's TCP fields sit (Ethernet + IPv4 only)."""

    ip_off: int
    tcp_off: int
    ip_len: int
    src: bytes
    dst: bytes
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int
    payload_len: int
    tcp_hdr_len: int

    @property
    def key(self) -> tuple:
        return (self.src, self.sport, self.dst, self.dport)

    @property
    def syn(self) -> bool:
        return bool(self.flags & dpkt.tcp.TH_SYN)


def tcp_of(r: Record) -> Tcp | None:
    """The frame's TCP header fields, or None if it is not Ethernet/IPv4/TCP."""
    d = r.data
    if len(d) < ETH_LEN + 20 or d[12:14] != b"\x08\x00":
        return None
    ihl = (d[ETH_LEN] & 0x0F) * 4
    if d[ETH_LEN + 9] != 6 or len(d) < ETH_LEN + ihl + 20:
        return None
    ip_len = struct.unpack("!H", d[ETH_LEN + 2:ETH_LEN + 4])[0]
    t = ETH_LEN + ihl
    sport, dport, seq, ack = struct.unpack("!HHII", d[t:t + 12])
    off = (d[t + 12] >> 4) * 4
    return Tcp(ETH_LEN, t, ip_len, d[ETH_LEN + 12:ETH_LEN + 16], d[ETH_LEN + 16:ETH_LEN + 20], sport, dport, seq, ack,
               d[t + 13], ip_len - ihl - off, off)


def set_u32(data: bytes, off: int, value: int) -> bytes:
    return data[:off] + struct.pack("!I", value % (1 << 32)) + data[off + 4:]


def set_u16(data: bytes, off: int, value: int) -> bytes:
    return data[:off] + struct.pack("!H", value) + data[off + 2:]


def _options(r: Record, t: Tcp):
    """(kind, byte offset of the option's data, its data length) of each TCP option in the frame."""
    d = r.data
    i, end = t.tcp_off + 20, min(t.tcp_off + t.tcp_hdr_len, len(d))
    while i < end:
        kind = d[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= end:
            break
        length = d[i + 1]
        if length < 2:
            break
        yield kind, i + 2, length - 2
        i += length


def sack_offsets(r: Record, t: Tcp) -> list[int]:
    """Byte offsets of every SACK edge (32-bit) in the frame's TCP options."""
    return [o for kind, start, n in _options(r, t) if kind == 5 for o in range(start, start + n, 4)]


# --- the bad inputs, each built from a good capture ---------------------------------------------


def data_dir_key(cap: Capture) -> tuple:
    """(src, sport, dst, dport) of the direction that sends the most payload."""
    total: dict[tuple, int] = {}
    for r in cap.records:
        t = tcp_of(r)
        if t:
            total[t.key] = total.get(t.key, 0) + max(t.payload_len, 0)
    return max(total, key=total.__getitem__)


def one_direction(cap: Capture, keep_data: bool = True) -> Capture:
    """Only the data sender's packets (keep_data) or only the other side's."""
    k = data_dir_key(cap)
    return cap.replace_records([r for r in cap.records if (t := tcp_of(r)) and ((t.key == k) == keep_data)])


def drop_syns(cap: Capture, syn: bool = True, synack: bool = True) -> Capture:
    """The capture without its SYN and/or SYN/ACK."""
    def keep(t: Tcp | None) -> bool:
        if t is None or not t.syn:
            return True
        is_synack = bool(t.flags & dpkt.tcp.TH_ACK)
        return not (synack if is_synack else syn)
    return cap.replace_records([r for r in cap.records if keep(tcp_of(r))])


def routed_peer(cap: Capture, hops: int = 7) -> Capture:
    """The data receiver's packets with their IPv4 TTL lowered by `hops` (header checksum redone),
    as a tap beside the sender sees a peer `hops` routers away."""
    k = data_dir_key(cap)

    def lowered(r: Record) -> Record:
        d = r.data
        ttl_at, csum_at = ETH_LEN + 8, ETH_LEN + 10
        hdr = bytearray(d[ETH_LEN:ETH_LEN + (d[ETH_LEN] & 0x0F) * 4])
        hdr[8] = max(1, hdr[8] - hops)
        hdr[10:12] = b"\0\0"
        total = sum(struct.unpack(f"!{len(hdr) // 2}H", bytes(hdr)))
        while total >> 16:
            total = (total & 0xFFFF) + (total >> 16)
        d = d[:ttl_at] + bytes([hdr[8]]) + d[ttl_at + 1:csum_at] + struct.pack("!H", ~total & 0xFFFF) + d[csum_at + 2:]
        return r.with_data(d)
    return cap.replace_records([lowered(r) if (t := tcp_of(r)) and t.key != k else r for r in cap.records])


def isn_wrap(cap: Capture) -> tuple[Capture, dict[tuple, int]]:
    """Each direction's sequence numbers (and the peer's ACKs and SACK edges of them) shifted so that
    they pass 2^32 half way through what that direction sends; returns the shift per direction."""
    first: dict[tuple, int] = {}
    span: dict[tuple, int] = {}
    for r in cap.records:
        t = tcp_of(r)
        if t:
            first.setdefault(t.key, t.seq)
            span[t.key] = max(span.get(t.key, 0), (t.seq - first[t.key]) % (1 << 32) + max(t.payload_len, 0))
    shift = {k: ((1 << 32) - span[k] // 2 - first[k]) % (1 << 32) for k in first}
    out = []
    for r in cap.records:
        t = tcp_of(r)
        if t is None:
            out.append(r)
            continue
        rev = (t.dst, t.dport, t.src, t.sport)
        d = set_u32(r.data, t.tcp_off + 4, t.seq + shift[t.key])
        if rev in shift:
            if t.flags & dpkt.tcp.TH_ACK:
                d = set_u32(d, t.tcp_off + 8, t.ack + shift[rev])
            for o in sack_offsets(r, t):
                if o + 4 <= len(d):
                    d = set_u32(d, o, struct.unpack("!I", d[o:o + 4])[0] + shift[rev])
        out.append(r.with_data(d))
    return cap.replace_records(out), shift


def snaplen_cut(cap: Capture, keep_payload: int = 0) -> Capture:
    """Every frame cut after its TCP header plus `keep_payload` bytes, as a small snaplen would."""
    out = []
    for r in cap.records:
        t = tcp_of(r)
        n = t.tcp_off + t.tcp_hdr_len + keep_payload if t else len(r.data)
        out.append(r.with_data(r.data[:n]))
    return replace(cap, snaplen=max(len(r.data) for r in out), records=out)


def duplicated(cap: Capture, delay_ns: int = 300_000) -> Capture:
    """Every frame twice, the copy `delay_ns` later with its TTL one lower: two capture points on
    either side of a router, merged by time."""
    out = []
    for r in cap.records:
        out.append((cap.ts(r), 0, r))
        d = r.data
        ttl = ETH_LEN + (7 if d[12:14] == b"\x86\xdd" else 8)  # IPv6 hop limit, IPv4 TTL
        d = d[:ttl] + bytes([d[ttl] - 1]) + d[ttl + 1:]
        out.append((cap.ts(r) + delay_ns, 1, cap.at(r.with_data(d), cap.ts(r) + delay_ns)))
    out.sort(key=lambda x: (x[0], x[1]))
    return cap.replace_records([r for _, _, r in out])


def swap_pairs(cap: Capture, every: int = 50) -> tuple[Capture, int]:
    """Every `every`-th pair of neighbouring records swapped in the file (a multi-queue capture's
    local reordering): timestamps go backwards, the set of times is unchanged."""
    recs = list(cap.records)
    n = 0
    for i in range(10, len(recs) - 1, every):
        recs[i], recs[i + 1] = recs[i + 1], recs[i]
        n += 1
    return cap.replace_records(recs), n


def clock_step(cap: Capture, at_frac: float = 0.5, step_ns: int = -50_000_000) -> Capture:
    """The capture clock stepped by `step_ns` at a fraction of the file (an NTP step)."""
    recs = list(cap.records)
    k = int(len(recs) * at_frac)
    return cap.replace_records(recs[:k] + [cap.at(r, cap.ts(r) + step_ns) for r in recs[k:]])


def superframes(cap: Capture, group: int = 8, max_gap_ns: int = 100_000) -> tuple[Capture, int]:
    """Runs of up to `group` data segments of the data sender that follow each other in the file with
    nothing in between, contiguous in sequence and each within `max_gap_ns` of the one before, merged
    into one datagram (what a tap before TSO sees of one send): the first's headers, PSH if any had
    it, the IP length of the whole (0, as Linux writes it, above 65535); returns how many were made."""
    k = data_dir_key(cap)
    recs = cap.records

    def mergeable(t: Tcp | None) -> bool:
        return bool(t and t.key == k and t.payload_len > 0 and not t.flags & (dpkt.tcp.TH_SYN | dpkt.tcp.TH_FIN))

    out: list[Record] = []
    i = merged = 0
    while i < len(recs):
        t = tcp_of(recs[i])
        if not mergeable(t):
            out.append(recs[i])
            i += 1
            continue
        run, end, j = [i], t.seq + t.payload_len, i + 1
        while j < len(recs) and len(run) < group:
            u = tcp_of(recs[j])
            if not (mergeable(u) and u.seq == end % (1 << 32) and u.tcp_hdr_len == t.tcp_hdr_len
                    and cap.ts(recs[j]) - cap.ts(recs[j - 1]) <= max_gap_ns):
                break
            run.append(j)
            end += u.payload_len
            j += 1
        if len(run) == 1:
            out.append(recs[i])
            i += 1
            continue
        ip_len = t.ip_len - t.payload_len + sum(tcp_of(recs[x]).payload_len for x in run)
        flags = t.flags
        for x in run:
            flags |= tcp_of(recs[x]).flags & dpkt.tcp.TH_PUSH
        d = set_u16(recs[i].data, t.ip_off + 2, ip_len if ip_len < 65536 else 0)
        d = d[:t.tcp_off + 13] + bytes([flags]) + d[t.tcp_off + 14:]
        out.append(recs[i].with_data(d, ETH_LEN + ip_len))
        merged += 1
        i = run[-1] + 1
    return cap.replace_records(out), merged


def timestamps_of(r: Record, t: Tcp) -> tuple[int, int] | None:
    """(TSval, TSecr) of the frame's RFC 7323 timestamp option, or None."""
    for kind, start, n in _options(r, t):
        if kind == 8 and n == 8 and start + 8 <= len(r.data):
            return struct.unpack("!II", r.data[start:start + 8])
    return None


def sender_pause(cap: Capture, at_frac: float = 0.5, pause_ns: int = 15_000_000,
                 lag_ns: int = 1_700_000) -> tuple[Capture, int]:
    """Seen from a tap at the receiver: the sender (and the receiver's ACK) paused `pause_ns` after
    a data segment, from `at_frac` of the file on, where the receiver's ACK came between two data
    segments and the second was sent before the sender had that ACK (its TSecr older than the
    ACK's TSval). The ACK is put `lag_ns` (the tap's reaction lag) before the next data, so the tap's
    timing alone says that ACK released it. Returns the capture and the paused data's frame number."""
    recs, k_dir = cap.records, data_dir_key(cap)
    tcp = [tcp_of(r) for r in recs]
    data = [t is not None and t.key == k_dir and t.payload_len > 0 for t in tcp]
    ack = [t is not None and t.key != k_dir and t.payload_len == 0 for t in tcp]
    k = int(len(recs) * at_frac)
    while not (data[k] and ack[k + 1] and data[k + 2]
               and timestamps_of(recs[k + 1], tcp[k + 1])[0] > timestamps_of(recs[k + 2], tcp[k + 2])[1]):
        k += 1
    out = list(recs[:k + 1]) + [cap.at(recs[k + 1], cap.ts(recs[k + 1]) + pause_ns - lag_ns)]
    out += [cap.at(r, cap.ts(r) + pause_ns) for r in recs[k + 2:]]
    return cap.replace_records(out), k + 1


def vxlan(cap: Capture, port: int = 4789) -> Capture:
    """Every frame carried whole in VXLAN (RFC 7348) over IPv4/UDP, as an overlay's underlay
    capture holds it (port 6081: the same bytes as Geneve version 0 with no options, protocol
    type 0x6558); the records grow by the 50 bytes of the outer headers."""
    out = []
    for r in cap.records:
        inner_len = r.orig_len
        udp_len = 8 + 8 + inner_len
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 0, 0x4000, 64, 17, 0, bytes([192, 0, 2, 1]),
                         bytes([192, 0, 2, 2]))
        udp = struct.pack("!HHHH", 49152, port, udp_len, 0)
        tunnel = bytes([0, 0, 0x65, 0x58, 0, 0, 0x2a, 0]) if port == 6081 else bytes([0x08, 0, 0, 0, 0, 0, 0x2a, 0])
        eth = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00"
        out.append(r.with_data(eth + ip + udp + tunnel + r.data, r.orig_len + 50))
    return replace(cap, linktype=1, records=out)


def erspan(cap: Capture) -> Capture:
    """Every frame carried whole in ERSPAN type II (GRE with a sequence number, protocol 0x88be,
    the 8-byte ERSPAN header) over IPv4, as a switch mirrors a port to a remote analyzer; the
    records grow by the 50 bytes of the outer headers."""
    out = []
    for n, r in enumerate(cap.records):
        gre = struct.pack("!BBHI", 0x10, 0, 0x88BE, n) + struct.pack("!HHI", 0x1000 | 7, 0, 0)
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(gre) + r.orig_len, 0, 0x4000, 64, 47, 0,
                         bytes([192, 0, 2, 1]), bytes([192, 0, 2, 2]))
        eth = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00"
        out.append(r.with_data(eth + ip + gre + r.data, r.orig_len + 50))
    return replace(cap, linktype=1, records=out)


def pktap(cap: Capture, linktype: int = 258) -> Capture:
    """Every frame behind Apple's PKTAP header (108 bytes, little endian: its length, type 1 = a
    packet, the frame's own DLT, "en0"), as macOS `tcpdump -i pktap` writes it."""
    head = struct.pack("<III", 108, 1, cap.linktype) + b"en0".ljust(24, b"\0")
    head = head.ljust(108, b"\0")
    return replace(cap, linktype=linktype,
                   records=[r.with_data(head + r.data, r.orig_len + 108) for r in cap.records])


def clock_offset(cap: Capture, shift_ns: int = 3_000_000) -> Capture:
    """The data receiver's packets stamped `shift_ns` later (earlier if negative) than the data
    sender's, in time order again: two capture points merged with clocks apart."""
    key = data_dir_key(cap)
    records = []
    for r in cap.records:
        t = tcp_of(r)
        records.append(cap.at(r, cap.ts(r) + shift_ns) if t is not None and t.key != key else r)
    return cap.replace_records(sorted(records, key=cap.ts))


def sampled(cap: Capture, every: int = 3) -> Capture:
    """Every `every`-th frame left out: a sampled capture, or one whose host dropped a share of the
    packets throughout."""
    return cap.replace_records([r for i, r in enumerate(cap.records) if i % every != every - 1])


def coarse_clock(cap: Capture, step_ns: int = 10_000_000) -> Capture:
    """Every timestamp cut down to a multiple of `step_ns` (a capture clock that ticks every 10 ms:
    an old kernel's jiffy)."""
    return cap.replace_records([cap.at(r, cap.ts(r) // step_ns * step_ns) for r in cap.records])


def capture_gap(cap: Capture, at_frac: float = 1 / 3, share: float = 0.2) -> Capture:
    """The capture missed a block of the data sender's packets (a fifth of its data segments, from a
    third of the way in): a tcpdump overrun, whose ACKs the peer still sent and the tap kept."""
    key = data_dir_key(cap)
    data = [i for i, r in enumerate(cap.records) if (t := tcp_of(r)) is not None and t.key == key and t.payload_len]
    start = int(len(data) * at_frac)
    gone = set(data[start:start + int(len(data) * share)])
    return cap.replace_records([r for i, r in enumerate(cap.records) if i not in gone])


def cut_mid_record(cap: Capture, frac: float = 0.6) -> tuple[bytes, int]:
    """The file's bytes cut 10 bytes into the data of the record at `frac` of the file, and how many
    whole records remain before it."""
    offs = cap.record_offsets()
    k = int(len(offs) * frac)
    return cap.to_bytes()[:offs[k] + 16 + 10], k


def udp_icmp_only(path: Path, packets: int = 20) -> Path:
    """A capture with UDP datagrams and ICMP echoes between two hosts, no TCP (built with dpkt)."""
    import socket

    src, dst = socket.inet_aton("192.0.2.1"), socket.inet_aton("192.0.2.2")
    with Path(path).open("wb") as f:
        w = dpkt.pcap.Writer(f, nano=True)
        for i in range(packets):
            if i % 2:
                body = dpkt.udp.UDP(sport=5353, dport=53, data=b"q%d" % i)
                ip = dpkt.ip.IP(src=src, dst=dst, p=dpkt.ip.IP_PROTO_UDP, data=body, id=i)
            else:
                echo = dpkt.icmp.ICMP.Echo(id=7, seq=i, data=b"ping")
                body = dpkt.icmp.ICMP(type=dpkt.icmp.ICMP_ECHO, data=echo)
                ip = dpkt.ip.IP(src=src, dst=dst, p=dpkt.ip.IP_PROTO_ICMP, data=body, id=i)
            eth = dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
            w.writepkt(bytes(eth), ts=1_700_000_000 + i / 1000)
    return Path(path)


def _pair_key(r: Record, t: Tcp) -> tuple:
    """What names one packet at both taps: its connection direction, IPv4 id, sequence and ACK
    numbers, flags and length (the frames' MAC addresses differ between the two interfaces)."""
    ip_id = struct.unpack("!H", r.data[t.ip_off + 4:t.ip_off + 6])[0]
    return (t.key, ip_id, t.seq, t.ack, t.flags, t.payload_len)


def middle_tap(sender: Capture, receiver: Capture, at: float = 0.5, unpaired: bool = True) -> tuple[Capture, dict]:
    """A tap `at` of the way from the data sender to the receiver, made from the two taps of one
    capture (`capture scenario` writes both): each packet seen at both is placed that share of its
    own transit after it left (data) or before it arrived (ACKs), so queueing on the link shows
    as it would there. A packet one tap saw and the other never did (lost on the link, or dropped
    by the receiver's NIC) is kept where a tap before its loss would have seen it (`unpaired`: at
    its direction's median transit times `at`), or left out (a tap after the loss). Returns the
    capture and counts of packets paired, kept unpaired and left out."""
    data_key = data_dir_key(sender)
    seen: dict[tuple, list[tuple[int, Record]]] = {}
    for r in receiver.records:
        t = tcp_of(r)
        if t:
            seen.setdefault(_pair_key(r, t), []).append((receiver.ts(r), r))
    placed: list[tuple[int, int, Record]] = []
    lonely: list[tuple[bool, int, Record]] = []  # (forward, origin time, record)
    transits: dict[bool, list[int]] = {True: [], False: []}
    for r in sender.records:
        t = tcp_of(r)
        if t is None:
            continue
        forward = t.key == data_key
        twins = seen.get(_pair_key(r, t))
        ts = sender.ts(r)
        if not twins:
            if forward:
                lonely.append((True, ts, r))
            continue  # an ACK the sender's tap saw that the receiver's did not: none sent so
        rts, rrec = twins.pop(0)
        transit = (rts - ts) if forward else (ts - rts)
        transits[forward].append(transit)
        # Data: `at` of its transit after it left the sender; an ACK: `at` of its transit before it
        # reached the sender (it crossed the tap after the receiver sent it).
        when = ts + int(at * transit) if forward else rts + int((1 - at) * transit)
        placed.append((when, len(placed), r if forward else rrec))
    for twins in seen.values():
        for rts, rrec in twins:
            t = tcp_of(rrec)
            if t.key != data_key:
                lonely.append((False, rts, rrec))  # an ACK lost on its way to the sender
    median = {k: sorted(v)[len(v) // 2] if v else 0 for k, v in transits.items()}
    kept = 0
    if unpaired:
        for forward, ts, r in lonely:
            when = ts + int(at * median[True]) if forward else ts + int((1 - at) * median[False])
            placed.append((when, len(placed), r))
            kept += 1
    placed.sort(key=lambda x: (x[0], x[1]))
    out = replace(sender, nano=True).replace_records(
        [replace(r, sec=when // 1_000_000_000, frac=when % 1_000_000_000) for when, _, r in placed])
    return out, {"paired": len(placed) - kept, "unpaired_kept": kept, "unpaired_left_out": len(lonely) - kept}


def tcp_frame(src: bytes, dst: bytes, sport: int, dport: int, seq: int, ack: int, flags: int, ip_id: int,
              win: int = 65535) -> bytes:
    """One Ethernet/IPv4/TCP frame with no payload (a SYN offers MSS 1460), for captures written by
    hand with dpkt.pcap.Writer."""
    tcp = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq, ack=ack, flags=flags, win=win)
    if flags & dpkt.tcp.TH_SYN:
        tcp.opts, tcp.off = b"\x02\x04\x05\xb4", 6
    ip = dpkt.ip.IP(src=src, dst=dst, p=dpkt.ip.IP_PROTO_TCP, ttl=64, id=ip_id, data=tcp)
    ip.len = len(ip)
    return bytes(dpkt.ethernet.Ethernet(src=b"\0" * 6, dst=b"\0" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip))
