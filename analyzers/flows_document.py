"""The documented JSON document of `stallscope flows` (docs/flows-json.md), written to a stream.

Each connection is one compact line (json's C encoder; with indentation that module falls back to
its pure-Python encoder, which took seconds and hundreds of MB for 20,000 connections), built from
the native table's plain column lists: this path never imports Polars, whose import alone costs
about 85 ms of the command's run.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TextIO

from stallscope.analyzers.connection_schema import CONNECTION_COLUMNS, DIRECTION_COLUMNS, DIRECTIONS
from stallscope.analyzers.connections import Columns, FileSummary

SCHEMA = "stallscope.flows/2"
_INDENT = " " * 8  # connections sit four levels deep
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


@dataclass
class FileResult:
    """What one FILE argument gave: rejected files have no summary and no table."""

    path: str
    status: str  # "ok", "damaged" or "rejected"
    error: dict | None
    summary: FileSummary | None
    columns: Columns | None  # connection_schema.column_names() -> one value per connection


def accounting(s: FileSummary) -> dict:
    return {
        "bytes_read": s.bytes_read,
        "records": s.records,
        "tcp_packets": s.tcp_packets,
        "not_tcp": s.not_tcp,
        "not_decoded": s.not_decoded,
        "capture_drops": {"if_drop": s.if_drop, "os_drop": s.os_drop, "epb_dropcount": s.epb_dropcount},
        "anomalies": s.anomalies,
        "truncation": {
            "payload_cut_packets": s.anomalies.get("payload_truncated", 0),
            "trailing_offset": s.trailing_truncation,
        },
    }


def _finite(column: list) -> list:
    """JSON has no NaN or infinity: such a float is written as null."""
    if column and any(isinstance(v, float) and not math.isfinite(v) for v in column):
        return [None if isinstance(v, float) and not math.isfinite(v) else v for v in column]
    return column


def _write_connections(columns: Columns | None, out: TextIO) -> None:
    """Connection columns, then `orig` and `resp` objects: the documented field order."""
    rows = len(columns["stream"]) if columns else 0
    if rows == 0:
        out.write("[]")
        return
    top = list(CONNECTION_COLUMNS)
    sides = [(side, [f"{side}_{n}" for n in DIRECTION_COLUMNS]) for side in DIRECTIONS]
    names = list(DIRECTION_COLUMNS)
    top_values = list(zip(*(_finite(columns[c]) for c in top)))
    side_values = [list(zip(*(_finite(columns[c]) for c in cols))) for _, cols in sides]
    sep = "["
    for i in range(rows):
        row = dict(zip(top, top_values[i]))
        for (side, _), values in zip(sides, side_values):
            row[side] = dict(zip(names, values[i]))
        out.write(f"{sep}\n{_INDENT}{_ENCODE(row)}")
        sep = ","
    out.write("\n      ]")


def write_document(results: list[FileResult], out: TextIO) -> None:
    """Writes the whole document to `out`; deterministic for the same inputs."""
    files = []
    for i, r in enumerate(results):
        files.append(
            {
                "path": r.path,
                "status": r.status,
                "format": r.summary.format if r.summary else None,
                "error": r.error,
                "accounting": accounting(r.summary) if r.summary else None,
                # Replaced while writing; a NUL cannot occur in a path, so the token cannot collide.
                "connections": f"\x00connections-{i}",
            }
        )
    text = json.dumps({"schema": SCHEMA, "files": files}, indent=2, ensure_ascii=False)
    for i, r in enumerate(results):
        head, text = text.split(f'"\\u0000connections-{i}"', 1)
        out.write(head)
        _write_connections(r.columns, out)
    out.write(text + "\n")
