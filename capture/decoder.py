"""The packet decoder's Python API: captures (pcap, pcapng, optionally gzip; "-" = stdin) to
Polars packet tables, streamed in bounded batches. The native core does all per-packet work; each
batch's columns arrive as Arrow buffers wrapped here without copying (schema: capture/schema.py).

    table, summary = read_packets("trace.pcap", columns=["ts_ns", "seq_rel"])
    for batch in iter_batches("big.pcapng.gz", batch_rows=100_000): ...
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from stallscope import _native
from stallscope.capture.errors import CaptureDamaged, CaptureRejected
from stallscope.capture.schema import BY_NAME, COLUMN_NAMES

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
