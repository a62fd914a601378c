"""`stallscope flows FILE...`: the connection table of each capture (one row per TCP connection).

JSON output is a documented interface (docs/flows-json.md, schema_version below); table, csv and
parquet give the flat table with a `file` column. Exit status: INPUT_REJECTED if any file could not
be read at all, else INPUT_DAMAGED if any was read only in part, else OK.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import polars as pl
import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

from stallscope.analyzers.connection_schema import CONNECTION_COLUMNS, DIRECTION_COLUMNS, DIRECTIONS, table_schema
from stallscope.analyzers.connections import FileSummary, connections
from stallscope.capture.errors import CaptureRejected
from stallscope.cli.options import CaptureFiles, DebugOption, FormatOption, OutputOption
from stallscope.exit_codes import ExitCode
from stallscope.output import OutputFormat, render_frame

SCHEMA = "stallscope.flows"
SCHEMA_VERSION = 1
# Files at least this large get a progress bar (when standard error is a terminal).
PROGRESS_MIN_BYTES = 64 << 20


def _read(path: Path, err: Console) -> tuple[pl.DataFrame, FileSummary]:
    size = path.stat().st_size if path.is_file() else 0
    if size < PROGRESS_MIN_BYTES or not err.is_terminal:
        return connections(path)
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(path.name, total=size)
        # bytes_read counts decompressed bytes, so a .gz file may run past its size.
        return connections(path, progress=lambda n: bar.update(task, completed=min(n, size)))


def _accounting(s: FileSummary) -> dict:
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


def _connection_objects(table: pl.DataFrame) -> list[dict]:
    out = []
    for row in table.iter_rows(named=True):
        obj = {name: row[name] for name in CONNECTION_COLUMNS}
        for side in DIRECTIONS:
            obj[side] = {name: row[f"{side}_{name}"] for name in DIRECTION_COLUMNS}
        out.append(obj)
    return out


def json_document(results: list[dict]) -> dict:
    """The documented JSON document (docs/flows-json.md) from per-file results."""
    files = []
    for r in results:
        s: FileSummary | None = r["summary"]
        files.append(
            {
                "path": r["path"],
                "status": r["status"],
                "format": s.format if s else None,
                "error": r["error"],
                "accounting": _accounting(s) if s else None,
                "connections": _connection_objects(r["table"]) if r["table"] is not None else [],
            }
        )
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "files": files}


def _ms(ns: int | None) -> str:
    return "" if ns is None else f"{ns / 1e6:.1f}"


def _endpoint(addr: str, port: int) -> str:
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def _readable(table: pl.DataFrame) -> pl.DataFrame:
    """The columns worth a glance on a terminal."""
    rows = []
    for r in table.iter_rows(named=True):
        notes = []
        if not r["start_captured"]:
            notes.append("no SYN")
        if r["port_reused"]:
            notes.append("port reused")
        if r["orig_rst"] or r["resp_rst"]:
            notes.append("RST")
        rows.append(
            {
                "file": Path(r["file"]).name,
                "stream": r["stream"],
                "initiator": _endpoint(r["orig_addr"], r["orig_port"]),
                "responder": _endpoint(r["resp_addr"], r["resp_port"]),
                "packets": r["packets"],
                "bytes ->/<-": f"{r['orig_payload_bytes']}/{r['resp_payload_bytes']}",
                "retrans ->/<-": f"{r['orig_retrans_packets']}/{r['resp_retrans_packets']}",
                "duration s": f"{r['duration_ns'] / 1e9:.3f}",
                "max idle s": f"{r['max_idle_ns'] / 1e9:.3f}",
                "hs rtt ms": _ms(r["handshake_rtt_ns"]),
                "notes": ", ".join(notes),
            }
        )
    df = pl.DataFrame(rows) if rows else pl.DataFrame({"file": [], "stream": []})
    if df.height and df["file"].n_unique() == 1:
        df = df.drop("file")
    return df


def flows(
    files: CaptureFiles,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
    debug: DebugOption = False,
) -> None:
    """One row per TCP connection: packets, bytes, retransmissions, windows, RTT, idle time."""
    if fmt is OutputFormat.parquet and output is None:
        raise typer.BadParameter("--format parquet needs an output file (-o FILE)", param_hint="--output")
    err = Console(stderr=True)
    try:
        results, code = _read_all(files, err)
        _render(results, fmt, output)
    except Exception:
        if debug:
            raise
        err.print("stallscope flows: internal error; rerun with --debug for the traceback", markup=False)
        raise typer.Exit(int(ExitCode.INTERNAL)) from None
    if code is not ExitCode.OK:
        raise typer.Exit(int(code))


def _read_all(files: list[Path], err: Console) -> tuple[list[dict], ExitCode]:
    """Every file in turn; a rejected file outranks a damaged one in the exit code."""
    results: list[dict] = []
    code = ExitCode.OK
    for path in files:
        try:
            table, summary = _read(path, err)
        except CaptureRejected as e:
            err.print(f"stallscope flows: {e}", markup=False, highlight=False, soft_wrap=True)
            results.append({"path": str(path), "status": "rejected", "error": _error_of(e), "summary": None, "table": None})
            code = ExitCode.INPUT_REJECTED
            continue
        if summary.error is not None:
            err.print(f"stallscope flows: {path}: {summary.error.message}", markup=False, highlight=False, soft_wrap=True)
            if code is ExitCode.OK:
                code = ExitCode.INPUT_DAMAGED
        error = asdict(summary.error) if summary.error else None
        results.append({"path": str(path), "status": summary.status, "error": error, "summary": summary, "table": table})
    return results, code


def _render(results: list[dict], fmt: OutputFormat, output: Path | None) -> None:
    if fmt is OutputFormat.json:
        render_frame(pl.DataFrame(), fmt, output=output, json_document=json_document(results))
        return
    flat = _flat(results)
    if fmt is OutputFormat.table:
        _render_table(_readable(flat), output)
    else:
        render_frame(flat, fmt, output=output)


def _render_table(df: pl.DataFrame, output: Path | None) -> None:
    # Off a terminal Rich assumes 80 columns, which folds addresses; a pipe or file gets wide rows.
    out = sys.stdout if output is None else open(output, "w")
    try:
        console = Console(file=out, width=None if out.isatty() else 200)
        render_frame(df, OutputFormat.table, title="TCP connections", console=console)
    finally:
        if output is not None:
            out.close()


def _error_of(e: CaptureRejected) -> dict:
    return {"kind": e.kind, "message": e.reason, "offset": e.offset, "rejected": True}


def _flat(results: list[dict]) -> pl.DataFrame:
    frames = [r["table"].with_columns(pl.lit(r["path"]).alias("file")) for r in results if r["table"] is not None]
    schema = {"file": pl.String(), **table_schema()}
    if not frames:
        return pl.DataFrame(schema=schema)
    return pl.concat(frames).select(list(schema))
