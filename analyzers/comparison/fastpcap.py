"""The reference run's capture written from the simulator's columns, byte for byte the file
simulate.pcap_writer.write_pcap writes from its Segment records (tests/test_comparison.py checks
both on runs with every option: SYN options, timestamps, SACK blocks).

write_pcap builds each frame with dpkt, one Python object per header: on a 100,000-packet
reference run that is ten seconds, most of `--compare`'s time. Here the headers are laid out with
numpy, a column per field: only the rare packets whose options are not a lone timestamp (the
handshake, SACK blocks) are encoded one by one, by write_pcap's own encode_options. The payload
is zeros, as write_pcap's, so a checksum is the headers' words alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from stallscope.simulate.native_core import RECEIVER_END, SENDER_END
from stallscope.simulate.pcap_writer import TTL, default_isn, encode_options
from stallscope.simulate.segment import ACK, Segment

# pcap file header, little endian, nanosecond magic, snaplen 262144, Ethernet (write_pcap's).
_FILE_HEADER = bytes.fromhex("4d3cb2a1020004000000000000000000") + (262_144).to_bytes(4, "little") + (1).to_bytes(4, "little")
_PREFIX = 16 + 14 + 20 + 20  # record header, Ethernet, IPv4, TCP without options
_IP_DF = 0x4000
_WIRE = 1 << 32


_HEADER = np.dtype([
    ("sec", "<u4"), ("nsec", "<u4"), ("caplen", "<u4"), ("len", "<u4"),
    ("dmac", "u1", 6), ("smac", "u1", 6), ("type", ">u2"),
    ("vhl", "u1"), ("tos", "u1"), ("ip_len", ">u2"), ("ip_id", ">u2"), ("ip_off", ">u2"), ("ttl", "u1"),
    ("proto", "u1"), ("ip_sum", ">u2"), ("saddr", ">u4"), ("daddr", ">u4"),
    ("sport", ">u2"), ("dport", ">u2"), ("seq", ">u4"), ("ack", ">u4"), ("off_flags", ">u2"), ("win", ">u2"),
    ("tcp_sum", ">u2"), ("urp", ">u2"),
    ("opt", "u1", 4), ("ts_val", ">u4"), ("ts_ecr", ">u4"),
])


def _ip_words(addr: str) -> tuple[int, int, bytes]:
    raw = bytes(int(x) for x in addr.split("."))
    return int.from_bytes(raw[:2], "big"), int.from_bytes(raw[2:], "big"), raw


def _fold(s: np.ndarray) -> np.ndarray:
    s = (s >> 16) + (s & 0xFFFF)
    s = s + (s >> 16)
    return ~s & 0xFFFF


def write_columns_pcap(path: str | Path, cols: dict[str, Any], ttls: tuple[int, int] = (TTL, TTL)) -> int:
    """Write a bulk run's trace (NativeTrace.columns(): host 0 the sender at SENDER_END, host 1
    the receiver) as write_pcap(path, result.records, ttls=...) would, with `ttls` the IP TTLs of
    hosts 0 and 1; returns the number of packets."""
    n = len(cols["t"])
    t = np.asarray(cols["t"], dtype=np.int64)
    if n and (np.diff(t) < 0).any():
        raise ValueError("records go back in time")
    src = np.asarray(cols["src"], dtype=np.int64) & 1
    ends = (SENDER_END, RECEIVER_END)
    flows = [(ends[h][0], ends[h][1], ends[1 - h][0], ends[1 - h][1]) for h in (0, 1)]
    isn = np.array([default_isn(f) for f in flows], dtype=np.int64)
    ips = [_ip_words(e[0]) for e in ends]
    seq = (isn[src] + np.asarray(cols["seq"], dtype=np.int64)) % _WIRE
    flags = np.asarray(cols["flags"], dtype=np.int64)
    ack = np.where(flags & ACK, (isn[1 - src] + np.asarray(cols["ack"], dtype=np.int64)) % _WIRE, 0)
    win = np.asarray(cols["window"], dtype=np.int64) & 0xFFFF
    plen = np.asarray(cols["payload_len"], dtype=np.int64)
    ip_id = np.asarray(cols["ip_id"], dtype=np.int64) & 0xFFFF
    ts_list, mss, ws, sok, sack = cols["timestamp"], cols["mss"], cols["wscale"], cols["sack_permitted"], cols["sack"]
    has_ts = np.fromiter((x is not None for x in ts_list), bool, n)
    # A lone timestamp (most packets of a stack with RFC 1323 on): NOP NOP TS, 12 bytes.
    other = np.fromiter((m is not None or w is not None or bool(k) or bool(b) for m, w, k, b in zip(mss, ws, sok, sack)),
                        bool, n)
    lone_ts = has_ts & ~other
    optlen = np.where(lone_ts, 12, 0)
    encoded: dict[int, bytes] = {}
    for i in np.flatnonzero(other).tolist():
        h = int(src[i])
        seg = Segment(ends[h][0], ends[1 - h][0], ends[h][1], ends[1 - h][1], 0, 0, 0, 0, int(plen[i]), mss[i], ws[i],
                      bool(sok[i]), ts_list[i], tuple(tuple(b) for b in sack[i]))
        peer = int(isn[1 - h])
        encoded[i] = encode_options(seg, [((peer + a) % _WIRE, (peer + b) % _WIRE) for a, b in seg.sack])
        optlen[i] = len(encoded[i])
    ts_val = np.zeros(n, np.int64)
    ts_ecr = np.zeros(n, np.int64)
    idx = np.flatnonzero(lone_ts)
    if idx.size:
        pairs = np.array([ts_list[i] for i in idx.tolist()], dtype=np.int64).reshape(-1, 2) % _WIRE
        ts_val[idx], ts_ecr[idx] = pairs[:, 0], pairs[:, 1]

    tcp_len = 20 + optlen + plen
    ip_len = 20 + tcp_len
    frame = 14 + ip_len
    starts = len(_FILE_HEADER) + np.concatenate(([0], np.cumsum(16 + frame)[:-1])) if n else np.zeros(0, np.int64)
    total = len(_FILE_HEADER) + int((16 + frame).sum())
    buf = np.zeros(total, dtype=np.uint8)
    buf[: len(_FILE_HEADER)] = np.frombuffer(_FILE_HEADER, np.uint8)

    sa_hi = np.array([ips[0][0], ips[1][0]])[src]
    sa_lo = np.array([ips[0][1], ips[1][1]])[src]
    da_hi = np.array([ips[0][0], ips[1][0]])[1 - src]
    da_lo = np.array([ips[0][1], ips[1][1]])[1 - src]
    ttl = np.array(ttls, dtype=np.int64)[src]
    ip_sum = _fold(0x4500 + ip_len + ip_id + _IP_DF + ((ttl << 8) | 6) + sa_hi + sa_lo + da_hi + da_lo)
    sport = np.array([ends[0][1], ends[1][1]])[src]
    dport = np.array([ends[0][1], ends[1][1]])[1 - src]
    off_flags = (((20 + optlen) // 4) << 12) | flags
    opt_sum = np.where(lone_ts, 0x0101 + 0x080A + (ts_val >> 16) + (ts_val & 0xFFFF) + (ts_ecr >> 16)
                       + (ts_ecr & 0xFFFF), 0)
    for i, raw in encoded.items():
        padded = raw + b"\0" * (len(raw) & 1)
        opt_sum[i] = sum(int.from_bytes(padded[k:k + 2], "big") for k in range(0, len(padded), 2))
    tcp_sum = _fold(sa_hi + sa_lo + da_hi + da_lo + 6 + tcp_len + sport + dport + (seq >> 16) + (seq & 0xFFFF)
                    + (ack >> 16) + (ack & 0xFFFF) + off_flags + win + opt_sum)

    head = np.zeros(n, dtype=_HEADER)
    secs, nsecs = np.divmod(t, 1_000_000_000)
    head["sec"], head["nsec"], head["caplen"], head["len"] = secs, nsecs, frame, frame
    macs = np.array([np.frombuffer(b"\x02\x00" + ips[h][2], np.uint8) for h in (0, 1)])
    head["dmac"], head["smac"] = macs[1 - src], macs[src]
    head["type"], head["vhl"], head["ip_len"], head["ip_id"], head["ip_off"] = 0x0800, 0x45, ip_len, ip_id, _IP_DF
    head["ttl"], head["proto"], head["ip_sum"] = ttl, 6, ip_sum
    head["saddr"], head["daddr"] = (sa_hi << 16) | sa_lo, (da_hi << 16) | da_lo
    head["sport"], head["dport"], head["seq"], head["ack"] = sport, dport, seq, ack
    head["off_flags"], head["win"], head["tcp_sum"] = off_flags, win, tcp_sum
    head["opt"][lone_ts] = np.frombuffer(b"\x01\x01\x08\x0a", np.uint8)
    head["ts_val"], head["ts_ecr"] = ts_val, ts_ecr
    rows = head.view(np.uint8).reshape(n, _HEADER.itemsize)
    # Each packet's record header and headers (the lone timestamp's 12 bytes only where it has one).
    width = _PREFIX + optlen * lone_ts
    for w in np.unique(width).tolist():
        sel = width == w
        buf[starts[sel, None] + np.arange(w)] = rows[sel, :w]
    o = starts + _PREFIX
    for i, raw in encoded.items():
        buf[int(o[i]): int(o[i]) + len(raw)] = np.frombuffer(raw, np.uint8)
    Path(path).write_bytes(buf.tobytes())
    return n
