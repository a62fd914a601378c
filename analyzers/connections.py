"""The connection model: one row per TCP connection of a capture, read in one native pass.

`connections(path)` returns `(table, summary)`: a Polars DataFrame with the schema of
`connection_schema.table_schema()` and a `FileSummary` of what the file held. `connection_columns(path)`
returns the same columns as plain lists, for callers that never need Polars (the JSON output). A damaged file
(cut short, corrupt after some packets) still returns everything read before the damage, with
`summary.error` set; a file that cannot be read at all raises `CaptureRejected`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal

from stallscope import _native
from stallscope.analyzers.connection_schema import table_schema

if TYPE_CHECKING:
    import polars as pl
from stallscope.packets.errors import CaptureRejected

Status = Literal["ok", "damaged"]


@dataclass(frozen=True)
class ReadProblem:
    """The one typed error that stopped reading, with the byte offset where it happened."""

    kind: str
    message: str
    offset: int
    rejected: bool


@dataclass(frozen=True)
class FileSummary:
    """Where every record of one file went, and the capture's own losses."""

    path: str
    format: str
    bytes_read: int
    records: int
    tcp_packets: int
    not_tcp: dict[str, int] = field(default_factory=dict)
    not_decoded: dict[str, int] = field(default_factory=dict)
    # The capture's own drop counters (pcapng ISB isb_ifdrop / isb_osdrop, EPB epb_dropcount).
    if_drop: int = 0
    os_drop: int = 0
    epb_dropcount: int = 0
    # TCP packets per anomaly name (capture.schema.ANOMALY_BITS), e.g. payload_truncated for a
    # snaplen cut; only names that occurred.
    anomalies: dict[str, int] = field(default_factory=dict)
    # Records whose captured length exceeds the original length.
    caplen_gt_len: int = 0
    # Byte offset of an incomplete record or block at the end of the input.
    trailing_truncation: int | None = None
    connections: int = 0
    error: ReadProblem | None = None

    @property
    def status(self) -> Status:
        return "ok" if self.error is None else "damaged"


def _summary(path: str, raw: dict) -> FileSummary:
    err = raw.get("error")
    return FileSummary(
        path=path,
        format=raw["format"],
        bytes_read=raw["bytes_read"],
        records=raw["records"],
        tcp_packets=raw["tcp_packets"],
        not_tcp=dict(raw["not_tcp"]),
        not_decoded=dict(raw["not_decoded"]),
        if_drop=raw["if_drop"],
        os_drop=raw["os_drop"],
        epb_dropcount=raw["epb_dropcount"],
        anomalies=dict(raw["anomalies"]),
        caplen_gt_len=raw["caplen_gt_len"],
        trailing_truncation=raw["trailing_truncation"],
        connections=raw["connections"],
        error=None if err is None else ReadProblem(err["kind"], err["message"], err["offset"], err["rejected"]),
    )


Columns = dict[str, list]


def connection_columns(
    path: str | Path, *, progress: Callable[[int], None] | None = None
) -> tuple[Columns, FileSummary]:
    """Reads `path` once; `progress(bytes_read)` is called every few thousand records. The columns
    are lists in `connection_schema.column_names()` order, one entry per connection."""
    text = str(path)
    raw = _native.connection_table(text, progress)
    err = raw["summary"]["error"]
    if err is not None and err["rejected"]:
        raise CaptureRejected(text, err["offset"], err["kind"], err["message"])
    return raw["columns"], _summary(text, raw["summary"])


def to_frame(columns: Columns) -> pl.DataFrame:
    import polars as pl

    return pl.DataFrame(columns, schema=table_schema())


def connections(
    path: str | Path, *, progress: Callable[[int], None] | None = None
) -> tuple[pl.DataFrame, FileSummary]:
    """As `connection_columns`, as a Polars DataFrame."""
    columns, summary = connection_columns(path, progress=progress)
    return to_frame(columns), summary
