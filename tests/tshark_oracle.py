"""tshark as a test oracle: per-packet TCP facts and per-stream aggregates for one capture file.

Runs tshark 4.x once per file (`-T fields`), in one pass with its default TCP preferences
(relative sequence numbers, sequence analysis on). Used only by tests that compare against it.
"""

from __future__ import annotations

import functools
import ipaddress
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

FIELDS = [
    "frame.number",
    "frame.len",
    "tcp.stream",
    "ip.src",
    "ipv6.src",
    "tcp.srcport",
    "tcp.flags",
    "tcp.len",
    "tcp.seq",
    "tcp.ack",
    "tcp.seq_raw",
    "tcp.window_size",
    "tcp.window_size_scalefactor",
    "tcp.analysis.retransmission",
    "tcp.analysis.fast_retransmission",
    "tcp.analysis.spurious_retransmission",
    "tcp.analysis.out_of_order",
    "tcp.analysis.keep_alive",
    "tcp.analysis.duplicate_ack",
]


class TsharkMissing(RuntimeError):
    pass


def available() -> bool:
    return shutil.which("tshark") is not None


@dataclass(frozen=True)
class Packet:
    frame: int
    frame_len: int
    stream: int
    src: str  # normalised address text (IPv4 as a.b.c.d, IPv6 compressed)
    src_port: int
    flags: int
    length: int
    seq: int | None
    ack: int | None
    window: int | None
    # tshark's window_size_scalefactor: -1 unknown, -2 no scaling, else the multiplier.
    scalefactor: int | None
    retransmission: bool
    fast_retransmission: bool
    spurious_retransmission: bool
    out_of_order: bool
    keep_alive: bool
    duplicate_ack: bool

    @property
    def any_retransmission(self) -> bool:
        return self.retransmission or self.fast_retransmission or self.spurious_retransmission


@dataclass
class Direction:
    packets: int = 0
    frame_bytes: int = 0
    payload_bytes: int = 0
    # Segments with payload that tshark flags retransmission, fast or spurious retransmission.
    retrans_packets: int = 0
    # Segments with payload flagged out-of-order (tshark's other name for "below the highest").
    out_of_order_packets: int = 0
    keep_alives: int = 0
    dup_acks: int = 0


@dataclass
class Stream:
    stream: int
    # (address, port) of the sender of the stream's first packet.
    first_sender: tuple[str, int]
    dirs: dict[tuple[str, int], Direction] = field(default_factory=dict)

    @property
    def packets(self) -> int:
        return sum(d.packets for d in self.dirs.values())


def _int(text: str) -> int | None:
    if text == "":
        return None
    return int(text, 0)


def _flag(text: str) -> bool:
    return text != ""


def _addr(v4: str, v6: str) -> str:
    return str(ipaddress.ip_address(v4 or v6))


@functools.lru_cache(maxsize=64)
def packets(path: str | Path) -> tuple[Packet, ...]:
    """Every TCP packet tshark decodes in `path`, in frame order."""
    exe = shutil.which("tshark")
    if exe is None:
        raise TsharkMissing("tshark is not installed")
    cmd = [exe, "-n", "-r", str(path), "-Y", "tcp", "-T", "fields", "-E", "separator=\t", "-E", "occurrence=f"]
    for f in FIELDS:
        cmd += ["-e", f]
    # tshark exits 2 on a cut-short file after printing every whole packet; keep what it printed.
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    out: list[Packet] = []
    for line in run.stdout.splitlines():
        c = line.split("\t")
        if len(c) != len(FIELDS) or c[2] == "":
            continue
        out.append(
            Packet(
                frame=int(c[0]),
                frame_len=int(c[1]),
                stream=int(c[2]),
                src=_addr(c[3], c[4]),
                src_port=int(c[5]),
                flags=int(c[6], 16),
                length=int(c[7] or 0),
                seq=_int(c[8]),
                ack=_int(c[9]),
                window=_int(c[11]),
                scalefactor=_int(c[12]),
                retransmission=_flag(c[13]),
                fast_retransmission=_flag(c[14]),
                spurious_retransmission=_flag(c[15]),
                out_of_order=_flag(c[16]),
                keep_alive=_flag(c[17]),
                duplicate_ack=_flag(c[18]),
            )
        )
    return tuple(out)


def streams(path: str | Path) -> dict[int, Stream]:
    """Per-stream, per-direction aggregates of `packets(path)`."""
    result: dict[int, Stream] = {}
    for p in packets(path):
        s = result.setdefault(p.stream, Stream(p.stream, (p.src, p.src_port)))
        d = s.dirs.setdefault((p.src, p.src_port), Direction())
        d.packets += 1
        d.frame_bytes += p.frame_len
        d.payload_bytes += p.length
        if p.length > 0 and p.any_retransmission:
            d.retrans_packets += 1
        if p.length > 0 and p.out_of_order:
            d.out_of_order_packets += 1
        d.keep_alives += p.keep_alive
        d.dup_acks += p.duplicate_ack
    return result


def conv_tcp(path: str | Path) -> list[dict[str, object]]:
    """`tshark -q -z conv,tcp`: one dict per conversation with total frames and bytes."""
    exe = shutil.which("tshark")
    if exe is None:
        raise TsharkMissing("tshark is not installed")
    run = subprocess.run([exe, "-n", "-q", "-r", str(path), "-z", "conv,tcp"], capture_output=True, text=True, timeout=300)
    rows = []
    for line in run.stdout.splitlines():
        if "<->" not in line:
            continue
        left, rest = line.split("<->", 1)
        t = rest.split()
        # B | frames bytes unit (B->A) | frames bytes unit (A->B) | frames bytes unit (total) | ...
        # Bytes carry a unit ("1488 bytes", "29 kB"), so only the frame counts are exact.
        rows.append(
            {
                "a": left.strip(),
                "b": t[0],
                "frames_to_a": int(t[1]),
                "frames_to_b": int(t[4]),
                "frames_total": int(t[7]),
            }
        )
    return rows
