"""Writes the benchmark capture: a nanosecond pcap of a few interleaved bulk TCP transfers.

Ethernet/IPv4/TCP with the timestamp option, data segments of 1448 bytes cut at a 96-byte snaplen
(header-only capture), one pure ACK per two segments, and every 500th round of a connection
retransmitting an earlier segment with a duplicate ACK. The file is built as whole numpy arrays
of fixed-size "rounds" (data, data, ack), so >= 2 million packets take a second or two to write.

    python3 bench/make_capture.py [--packets N] [--connections C] [-o bench/out/bulk.pcap]
"""

from __future__ import annotations

import argparse
import struct
from pathlib import Path

import numpy as np

SNAPLEN = 96
MSS = 1448
ETH, IP, TCP = 14, 20, 32  # TCP: 20 + NOP NOP TS(10)
DATA_ORIG = ETH + IP + TCP + MSS  # 1514
DATA_CAP = SNAPLEN
ACK_LEN = ETH + IP + TCP  # 66
REC = 16  # pcap record header
DATA_REC = REC + DATA_CAP
ACK_REC = REC + ACK_LEN
ROUND = 2 * DATA_REC + ACK_REC
RETRANS_EVERY = 500  # rounds of one connection between two retransmissions
ROUND_NS = 24_000  # 2 x 1514 bytes every 24 us: about 1 Gbit/s in all
SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01


def frame(src: int, dst: int, sport: int, dport: int, seq: int, ack: int, flags: int, payload: int, ip_id: int) -> bytes:
    """One whole Ethernet frame header stack (payload bytes not included)."""
    eth = bytes.fromhex("020000000002" "020000000001" "0800")
    ip = struct.pack(">BBHHHBBHII", 0x45, 0, IP + TCP + payload, ip_id, 0x4000, 64, 6, 0, src, dst)
    opts = struct.pack(">BBBBII", 1, 1, 8, 10, 1, 0)
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq, ack, (TCP // 4) << 4, flags, 1024, 0, 0) + opts
    return eth + ip + tcp


def record(ts_ns: int, data: bytes, origlen: int) -> bytes:
    return struct.pack("<IIII", ts_ns // 1_000_000_000, ts_ns % 1_000_000_000, len(data), origlen) + data


def _template(payload: int, caplen: int, origlen: int) -> np.ndarray:
    f = frame(0, 0, 0, 0, 0, 0, ACK, payload, 0)
    f = (f + bytes(caplen))[:caplen]
    return np.frombuffer(record(0, f, origlen), dtype=np.uint8)


def _put_be32(block: np.ndarray, at: int, values: np.ndarray) -> None:
    block[:, at : at + 4] = values.astype(">u4").view(np.uint8).reshape(-1, 4)


def _put_be16(block: np.ndarray, at: int, values: np.ndarray) -> None:
    block[:, at : at + 2] = values.astype(">u2").view(np.uint8).reshape(-1, 2)


def _put_le32(block: np.ndarray, at: int, values: np.ndarray) -> None:
    block[:, at : at + 4] = values.astype("<u4").view(np.uint8).reshape(-1, 4)


# Offsets within a record of the fields filled per packet.
TS_SEC, TS_NS = 0, 4
IP_ID = REC + ETH + 4
IP_SRC, IP_DST = REC + ETH + 12, REC + ETH + 16
T = REC + ETH + IP
SPORT, DPORT, SEQ, ACKN, FLAGS = T, T + 2, T + 4, T + 8, T + 13
TSVAL = T + 24


def build(packets: int, connections: int) -> tuple[list[bytes], np.ndarray, list[bytes]]:
    """Handshake records, the bulk rounds (n_rounds x ROUND bytes), FIN records."""
    n_rounds = -(-max(packets - 6 * connections, 3) // 3)
    idx = np.arange(n_rounds, dtype=np.int64)
    conn = idx % connections
    k = idx // connections  # round number within its connection
    retrans = (k % RETRANS_EVERY == RETRANS_EVERY - 1)
    # New segments per round: 2, or 1 when the first slot carries a retransmission.
    new = np.where(retrans, 1, 2)
    before = np.zeros(n_rounds, dtype=np.int64)
    for c in range(connections):
        m = conn == c
        before[m] = np.cumsum(new[m]) - new[m]
    isn_c = (np.arange(connections, dtype=np.int64) * 0x3FFF_FFFF + 0xF000_0000) & 0xFFFF_FFFF
    # Server ISNs just below 2^32: every connection's data sequence wraps.
    isn_s = (0xFFFF_0000 - np.arange(connections, dtype=np.int64) * 0x1000_0000) & 0xFFFF_FFFF
    base = isn_s[conn] + 1  # the server sends the data
    seg1 = np.where(retrans, before - 40, before)  # a retransmission resends a segment 40 back
    seg2 = np.where(retrans, before, before + 1)
    seq1 = (base + seg1 * MSS) & 0xFFFF_FFFF
    seq2 = (base + seg2 * MSS) & 0xFFFF_FFFF
    acked = np.where(retrans, before, before + 2)  # a retransmission round repeats the last ACK
    ackv = (base + acked * MSS) & 0xFFFF_FFFF
    client_ack = (isn_c[conn] + 1) & 0xFFFF_FFFF
    t0 = 1_700_000_000 * 10**9
    ts = t0 + 10_000_000 + idx * ROUND_NS

    server = 0x0A000002
    client_ip = 0x0A000001
    cport = 40000 + conn
    d = _template(MSS, DATA_CAP, DATA_ORIG)
    a = _template(0, ACK_LEN, ACK_LEN)
    out = np.empty((n_rounds, ROUND), dtype=np.uint8)
    for slot, (tpl, seqs, offs) in enumerate(((d, seq1, 0), (d, seq2, DATA_REC))):
        blk = np.ascontiguousarray(np.broadcast_to(tpl, (n_rounds, tpl.size)))
        t = ts + slot * (ROUND_NS // 3)
        _put_le32(blk, TS_SEC, t // 10**9)
        _put_le32(blk, TS_NS, t % 10**9)
        _put_be16(blk, IP_ID, (2 * idx + slot) & 0xFFFF)
        _put_be32(blk, IP_SRC, np.full(n_rounds, server))
        _put_be32(blk, IP_DST, np.full(n_rounds, client_ip))
        _put_be16(blk, SPORT, np.full(n_rounds, 80))
        _put_be16(blk, DPORT, cport)
        _put_be32(blk, SEQ, seqs)
        _put_be32(blk, ACKN, client_ack)
        blk[:, FLAGS] = ACK | PSH
        _put_be32(blk, TSVAL, t // 1_000_000)
        out[:, offs : offs + DATA_REC] = blk
    blk = np.ascontiguousarray(np.broadcast_to(a, (n_rounds, a.size)))
    t = ts + 2 * (ROUND_NS // 3)
    _put_le32(blk, TS_SEC, t // 10**9)
    _put_le32(blk, TS_NS, t % 10**9)
    _put_be16(blk, IP_ID, idx & 0xFFFF)
    _put_be32(blk, IP_SRC, np.full(n_rounds, client_ip))
    _put_be32(blk, IP_DST, np.full(n_rounds, server))
    _put_be16(blk, SPORT, cport)
    _put_be16(blk, DPORT, np.full(n_rounds, 80))
    _put_be32(blk, SEQ, client_ack)
    _put_be32(blk, ACKN, ackv)
    _put_be32(blk, TSVAL, t // 1_000_000)
    out[:, 2 * DATA_REC :] = blk

    head, tail = [], []
    for c in range(connections):
        ci, si, port = int(isn_c[c]), int(isn_s[c]), 40000 + c
        t = t0 + c * 1_000_000
        for dt, (src, dst, sp, dp, seq, ack, fl) in enumerate(
            (
                (client_ip, server, port, 80, ci, 0, SYN),
                (server, client_ip, 80, port, si, ci + 1, SYN | ACK),
                (client_ip, server, port, 80, ci + 1, si + 1, ACK),
            )
        ):
            head.append(record(t + dt * 100_000, frame(src, dst, sp, dp, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, fl, 0, dt), ACK_LEN))
        m = conn == c
        end = int(si + 1 + (before[m][-1] + new[m][-1]) * MSS) & 0xFFFFFFFF if m.any() else (si + 1) & 0xFFFFFFFF
        t = int(ts[-1]) + 1_000_000 + c * 1_000_000
        for dt, (src, dst, sp, dp, seq, ack, fl) in enumerate(
            (
                (server, client_ip, 80, port, end, ci + 1, FIN | ACK),
                (client_ip, server, port, 80, ci + 1, (end + 1) & 0xFFFFFFFF, FIN | ACK),
                (server, client_ip, 80, port, (end + 1) & 0xFFFFFFFF, ci + 2, ACK),
            )
        ):
            tail.append(record(t + dt * 100_000, frame(src, dst, sp, dp, seq, ack, fl, 0, dt), ACK_LEN))
    return head, out, tail


def write(path: Path, packets: int, connections: int) -> int:
    head, rounds, tail = build(packets, connections)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        # Nanosecond pcap, Ethernet, snaplen 96.
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, SNAPLEN, 1))
        f.writelines(head)
        f.write(rounds.tobytes())
        f.writelines(tail)
    return len(head) + 3 * rounds.shape[0] + len(tail)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=2_100_000)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("-o", "--output", type=Path, default=Path(__file__).parent / "out" / "bulk.pcap")
    args = ap.parse_args()
    n = write(args.output, args.packets, args.connections)
    print(f"{args.output}: {n} packets, {args.output.stat().st_size} bytes")


if __name__ == "__main__":
    main()
