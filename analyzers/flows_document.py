"""The documented JSON document of `stallscope flows` (docs/flows-json.md), written to a stream.

Connections are serialised by Polars (one object per line, nested `orig` / `resp` structs, in
slices), not by Python's json module: with indentation that module falls back to its pure-Python
encoder, which took seconds and hundreds of MB for 20,000 connections. The rest uses json.dumps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TextIO

import polars as pl

from stallscope.analyzers.connection_schema import CONNECTION_COLUMNS, DIRECTION_COLUMNS, DIRECTIONS
from stallscope.analyzers.connections import FileSummary

SCHEMA = "stallscope.flows"
SCHEMA_VERSION = 1
_INDENT = " " * 8  # connections sit four levels deep
_SLICE_ROWS = 4096


@dataclass
class FileResult:
    """What one FILE argument gave: rejected files have no summary and no table."""

    path: str
    status: str  # "ok", "damaged" or "rejected"
    error: dict | None
    summary: FileSummary | None
    table: pl.DataFrame | None


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


def _nested(table: pl.DataFrame) -> pl.DataFrame:
    """Connection columns, then `orig` and `resp` structs: the documented field order."""
    return table.select(
        *CONNECTION_COLUMNS,
        *(pl.struct([pl.col(f"{side}_{n}").alias(n) for n in DIRECTION_COLUMNS]).alias(side) for side in DIRECTIONS),
    )


def _write_connections(table: pl.DataFrame | None, out: TextIO) -> None:
    if table is None or table.height == 0:
        out.write("[]")
        return
    nested = _nested(table)
    sep = "["
    # In slices, so the text of 100,000 connections is never held at once.
    for start in range(0, nested.height, _SLICE_ROWS):
        for line in nested.slice(start, _SLICE_ROWS).write_ndjson().splitlines():
            out.write(f"{sep}\n{_INDENT}{line}")
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
    text = json.dumps({"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "files": files}, indent=2, ensure_ascii=False)
    for i, r in enumerate(results):
        head, text = text.split(f'"\\u0000connections-{i}"', 1)
        out.write(head)
        _write_connections(r.table, out)
    out.write(text + "\n")
