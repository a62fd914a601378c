"""The packet decoder's Python API: captures (pcap, pcapng, optionally gzip; "-" = stdin) to
Polars packet tables, streamed in bounded batches. The native core does all per-packet work; each
batch's columns arrive as Arrow buffers wrapped here without copying (schema: packets/schema.py).

    table, summary = read_packets("trace.pcap", columns=["ts_ns", "seq_rel"])
    for batch in iter_batches("big.pcapng.gz", batch_rows=100_000): ...
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from stallscope import _native
from stallscope.packets.errors import CaptureDamaged, CaptureRejected
from stallscope.packets.schema import BY_NAME, COLUMN_NAMES

DEFAULT_BATCH_ROWS = 65_536

# A path ("-" = stdin) or a whole capture already in memory.
Source = str | os.PathLike[str] | bytes

_ARROW_TYPES: dict[str, pa.DataType] = {
    "bool": pa.bool_(),
    "u8": pa.uint8(),
    "u16": pa.uint16(),
    "u32": pa.uint32(),
    "u64": pa.uint64(),
    "i64": pa.int64(),
}


@dataclass(frozen=True)
class DecodeSummary:
    """Where every record went. records == tcp_packets + sum(not_tcp) + sum(not_decoded);
    `container` holds the container layer's own counts (blocks by type, interfaces, drops,
    trailing truncation); `error` is set when the file was not fully read."""

    path: str
    format: str
    records: int
    tcp_packets: int
    not_tcp: dict[str, int]
    not_decoded: dict[str, int]
    anomalies: dict[str, int]
    streams: int
    container: dict[str, Any]
    error: dict[str, Any] | None = None
    complete: bool = field(default=True)

    @property
    def balanced(self) -> bool:
        return self.records == self.tcp_packets + sum(self.not_tcp.values()) + sum(self.not_decoded.values())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _column(name: str, kind: str, length: int, nulls: int, validity, values, offsets, child) -> pa.Array:
    # Strings arrive as Utf8View (16-byte views + the texts) and lists as LargeList (i64 offsets):
    # polars' own layouts, so it adopts them without converting.
    vbuf = pa.py_buffer(validity) if validity is not None and nulls else None
    if kind == "str":
        return pa.Array.from_buffers(
            pa.string_view(), length, [vbuf, pa.py_buffer(offsets), pa.py_buffer(values)], nulls
        )
    if kind == "list_i64":
        child_buf = pa.py_buffer(child)
        items = pa.Array.from_buffers(pa.int64(), child_buf.size // 8, [None, child_buf])
        return pa.Array.from_buffers(
            pa.large_list(pa.int64()), length, [vbuf, pa.py_buffer(offsets)], nulls, children=[items]
        )
    return pa.Array.from_buffers(_ARROW_TYPES[kind], length, [vbuf, pa.py_buffer(values)], nulls)


def _frame(columns: list[tuple]) -> pl.DataFrame:
    # A RecordBatch crosses into polars in about a third of a Table's time.
    batch = pa.RecordBatch.from_arrays([_column(*c) for c in columns], names=[c[0] for c in columns])
    df = pl.from_arrow(batch, rechunk=False)
    assert isinstance(df, pl.DataFrame)
    return df


def frame_from_columns(columns: list[tuple]) -> pl.DataFrame:
    """Columns in the native core's Arrow shape (the decoder's, or the analyzer passes') as a
    DataFrame, without copying."""
    return _frame(columns)


def _check_columns(columns: Sequence[str] | None) -> list[str] | None:
    if columns is None:
        return None
    if not columns:
        raise ValueError("columns must name at least one packet column (or be None for all)")
    unknown = [c for c in columns if c not in BY_NAME]
    if unknown:
        raise ValueError(f"unknown packet column(s) {unknown}; known: {', '.join(COLUMN_NAMES)}")
    return list(dict.fromkeys(columns))


def empty_table(columns: Sequence[str] | None = None) -> pl.DataFrame:
    names = list(columns) if columns is not None else list(COLUMN_NAMES)
    return pl.DataFrame(schema={n: BY_NAME[n].dtype for n in names})


class PacketBatches:
    """Iterator over DataFrames of at most `batch_rows` rows. After iteration `summary` holds the
    accounting. On damage, the batch holding the last whole packets is yielded first, then
    CaptureDamaged is raised. `bytes_read` / `size` let a caller draw progress."""

    def __init__(self, source: Source, batch_rows: int, columns: Sequence[str] | None) -> None:
        if batch_rows < 1:
            raise ValueError("batch_rows must be at least 1")
        self.path = "<bytes>" if isinstance(source, bytes) else os.fspath(source)
        self.batch_rows = batch_rows
        self.columns = _check_columns(columns)
        self.packets_decoded = 0
        self.summary: DecodeSummary | None = None
        try:
            self._decoder = _native.Decoder(source if isinstance(source, bytes) else self.path, self.columns)
        except _native.NativeReadError as e:
            kind, offset, message, _rejected = e.args
            # Refused at open (or unreadable): no packet can come out of this file.
            raise CaptureRejected(self.path, offset, kind, message) from None
        self.size = len(source) if isinstance(source, bytes) else _plain_size(self.path)

    @property
    def bytes_read(self) -> int:
        return self._decoder.bytes_read()

    def _summary(self, error: dict[str, Any] | None) -> DecodeSummary:
        s = self._decoder.summary()
        return DecodeSummary(path=self.path, error=error, complete=error is None, **s)

    def __iter__(self) -> Iterator[pl.DataFrame]:
        while True:
            columns, error, finished = self._decoder.next_batch(self.batch_rows)
            batch = _frame(columns)
            self.packets_decoded += batch.height
            if batch.height:
                yield batch
            if not finished:
                continue
            if error is None:
                self.summary = self._summary(None)
                return
            kind, offset, message, rejected = error
            self.summary = self._summary({"kind": kind, "offset": offset, "reason": message})
            if rejected and self.packets_decoded == 0:
                raise CaptureRejected(self.path, offset, kind, message)
            raise CaptureDamaged(
                self.path, offset, kind, message, packets_decoded=self.packets_decoded, summary=self.summary
            )


def _plain_size(path: str) -> int | None:
    """Size in bytes of an uncompressed regular file (progress total), else None."""
    if path == "-":
        return None
    try:
        with open(path, "rb") as f:
            if f.read(2) == b"\x1f\x8b":
                return None
        return Path(path).stat().st_size
    except OSError:
        return None


def iter_batches(
    path: Source, *, batch_rows: int = DEFAULT_BATCH_ROWS, columns: Sequence[str] | None = None
) -> PacketBatches:
    """Stream the packet table of `path` in batches of at most `batch_rows` rows."""
    return PacketBatches(path, batch_rows, columns)


def read_packets(
    path: Source, *, columns: Sequence[str] | None = None, batch_rows: int = DEFAULT_BATCH_ROWS
) -> tuple[pl.DataFrame, DecodeSummary]:
    """The whole packet table and its accounting. Raises CaptureRejected, or CaptureDamaged with
    `.packets` = every whole packet decoded before the damage."""
    batches = iter_batches(path, batch_rows=batch_rows, columns=columns)
    frames: list[pl.DataFrame] = []
    try:
        for b in batches:
            frames.append(b)
    except CaptureDamaged as e:
        e.packets = _concat(frames, batches.columns)
        raise
    assert batches.summary is not None
    return _concat(frames, batches.columns), batches.summary


def _concat(frames: list[pl.DataFrame], columns: list[str] | None) -> pl.DataFrame:
    if not frames:
        return empty_table(columns)
    return pl.concat(frames, how="vertical", rechunk=False) if len(frames) > 1 else frames[0]


# --- several files that are one capture ---------------------------------------------------------
#
# A rotated capture (tcpdump -C/-G, with or without -W; dumpcap's ring buffer; cap-000.pcap ...)
# is one stream cut into files. `join_captures` writes the files as one capture, in the order they
# were written, so the decoder, the connection table and the analyzer see one time-ordered stream
# with connections continuing across the cuts:
#   - classic pcap: the first file whole, then each next file's records without its 24-byte file
#     header (the files must agree on byte order, time precision and link type; the largest
#     snaplen is kept);
#   - pcapng: the files one after the other, each its own section (pcapng allows any number).
# Gzipped members are decompressed on the way. The order is the files' first packet times (a ring
# buffer's oldest file may have any number), the names' natural order breaking ties.

_PCAP_MAGICS = {b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d",
                b"\x34\xcd\xb2\xa1", b"\xa1\xb2\xcd\x34"}
_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
_CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap", ".pcap.gz", ".pcapng.gz")
_ROTATED = re.compile(r"^(?P<prefix>.*?)(?P<number>\d+)(?P<suffix>(?:\.(?:pcapng|pcap|cap|gz))*)$")


class CaptureSetError(ValueError):
    """Files that cannot be read as one capture (different formats or link types)."""


def _open_plain(path: str | os.PathLike[str]):
    import gzip

    f = open(path, "rb")
    if f.peek(2)[:2] == b"\x1f\x8b":
        return gzip.open(f, "rb")
    return f


def _natural_key(path: Path) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.name)]


def rotation_groups(paths: Sequence[Path]) -> list[list[Path]]:
    """The named files grouped into captures. One rotated capture: tcpdump's names (-C/-G with or
    without -W: cap.pcap, cap.pcap1, cap.pcap2 ... or cap.pcap0 ... cap.pcap9, zero-padded to the
    width of -W), or names differing only in a zero-padded number of one width (cap-000.pcap,
    cap-001.pcap ...). Every other file is a capture of its own (read several other files as one
    with --as-one). Groups keep the order of their first file on the command line."""
    keys: dict[Path, tuple[str, str, str, int] | None] = {}
    for p in paths:
        m = _ROTATED.match(p.name)
        if not m or not m["prefix"]:
            keys[p] = None
            continue
        tcpdump = not m["suffix"] and m["prefix"].endswith(_CAPTURE_SUFFIXES)
        # Numbered files count as one set only in the two schemes rotation tools use: tcpdump's
        # (the number after the whole name) or zero-padded numbers of one width (cap-000.pcap):
        # trace1.pcap and trace2.pcap stay two captures.
        width = 0 if tcpdump else len(m["number"]) if len(m["number"]) >= 2 else -1
        keys[p] = (str(p.parent), m["prefix"], m["suffix"], width) if width >= 0 else None
    numbered: dict[tuple[str, str, str, int], list[Path]] = {}
    for p, k in keys.items():
        if k is not None:
            numbered.setdefault(k, []).append(p)
    sets = {k: v for k, v in numbered.items()
            if len(v) >= 2 and (k[3] == 0 or any(_ROTATED.match(q.name)["number"].startswith("0") for q in v))}
    for p in paths:  # tcpdump -C without -W: cap.pcap, cap.pcap1, cap.pcap2 ...
        for k in sets:
            if keys.get(p) is None and str(p.parent) == k[0] and p.name == k[1] + k[2] and p not in sets[k]:
                sets[k].append(p)
    groups: list[list[Path]] = []
    seen: set[Path] = set()
    for p in paths:
        if p in seen:
            continue
        k = next((k for k, members in sets.items() if p in members), None)
        group = sets[k] if k is not None else [p]
        seen.update(group)
        groups.append(group)
    return groups


def _first_packet_ns(path: Path) -> int | None:
    """The time of the first packet (None when there is none, or for pcapng: read by the decoder)."""
    try:
        batches = iter_batches(str(path), batch_rows=1, columns=["ts_ns"])
        for batch in batches:
            return int(batch["ts_ns"][0])
    except (CaptureRejected, CaptureDamaged):
        return None
    return None


def written_order(paths: Sequence[Path]) -> list[Path]:
    """The files of one capture in the order they were written: by first packet time, then name."""
    firsts = {p: _first_packet_ns(p) for p in paths}
    return sorted(paths, key=lambda p: (firsts[p] is None, firsts[p] or 0, _natural_key(p)))


def join_captures(paths: Sequence[Path], out: Path) -> Path:
    """Write the files, already in written order, to `out` as one capture (see above). Raises
    CaptureSetError when they cannot be one (pcap beside pcapng, another link type)."""
    import shutil

    header: bytes | None = None
    kind: str | None = None
    with open(out, "wb") as dst:
        for p in paths:
            with _open_plain(p) as src:
                head = src.read(24)
                magic = head[:4]
                this = "pcapng" if magic == _PCAPNG_MAGIC else "pcap" if magic in _PCAP_MAGICS else None
                if this is None:
                    raise CaptureSetError(f"{p}: not a pcap or pcapng file, cannot be read as part of one capture")
                if kind is not None and this != kind:
                    raise CaptureSetError(f"{p}: {this} beside {kind}; the files cannot be read as one capture")
                kind = kind or this
                if this == "pcapng":
                    dst.write(head)
                elif header is None:
                    header = head
                    dst.write(head)
                else:
                    if len(head) < 24 or head[:4] != header[:4] or head[20:24] != header[20:24]:
                        raise CaptureSetError(f"{p}: another byte order, time precision or link type than "
                                              f"{paths[0]}; the files cannot be read as one capture")
                    snap = max(int.from_bytes(head[16:20], _order(header)), int.from_bytes(header[16:20], _order(header)))
                    if snap != int.from_bytes(header[16:20], _order(header)):
                        header = header[:16] + snap.to_bytes(4, _order(header)) + header[20:]
                        pos = dst.tell()
                        dst.seek(0)
                        dst.write(header)
                        dst.seek(pos)
                shutil.copyfileobj(src, dst, 1 << 20)
    return out


def _order(header: bytes) -> str:
    return "little" if header[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1", b"\x34\xcd\xb2\xa1") else "big"
