"""`stallscope flows FILE...`: the connection table of each capture (one row per TCP connection).

JSON output is a documented interface (docs/flows-json.md, built by analyzers/flows_document.py); table, csv and
parquet give the flat table with a `file` column. Exit status: INPUT_REJECTED if any file could not
be read at all, else INPUT_DAMAGED if any was read only in part, else OK.

Polars and Rich are imported only by the paths that need them (tables, csv/parquet, a progress bar on
a terminal): `flows -f json` is scripted against and timed against tcptrace, and those two imports
were a third of its run on a 200 MB capture.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from stallscope.analyzers.connections import Columns, FileSummary, connection_columns, to_frame
from stallscope.analyzers.flows_document import FileResult, write_document
from stallscope.packets.errors import CaptureRejected
from stallscope.cli.common import console as table_console
from stallscope.cli.common import CaptureInput, capture_inputs, file_progress, progress_wanted, say
from stallscope.output import RICH_TABLE_MAX_ROWS
from stallscope.cli.options import (AsOneOption, CaptureFiles, DebugOption, EachOption, FormatOption, OutputOption,
                                    QuietOption)
from stallscope.exit_codes import ExitCode
from stallscope.output import OutputFormat

if TYPE_CHECKING:
    import polars as pl

# Files at least this large get a progress bar (when standard error is a terminal).
PROGRESS_MIN_BYTES = 64 << 20
# Above this many connections the table is printed as plain aligned text instead of a Rich table.
RICH_MAX_ROWS = RICH_TABLE_MAX_ROWS


def _say(message: str) -> None:
    say("flows", message)


def _read(path: Path, quiet: bool = False) -> tuple[Columns, FileSummary]:
    size = path.stat().st_size if path.is_file() else 0
    if size < PROGRESS_MIN_BYTES or not progress_wanted(quiet):
        return connection_columns(path)
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(path.name, total=size)
        # bytes_read counts decompressed bytes, so a .gz file may run past its size.
        return connection_columns(path, progress=lambda n: bar.update(task, completed=min(n, size)))


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
    import polars as pl

    df = pl.DataFrame(rows) if rows else pl.DataFrame({"file": [], "stream": []})
    if df.height and df["file"].n_unique() == 1:
        df = df.drop("file")
    return df


def flows(
    files: CaptureFiles,
    as_one: AsOneOption = False,
    each: EachOption = False,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
    quiet: QuietOption = False,
    debug: DebugOption = False,
) -> None:
    """One row per TCP connection: packets, bytes, retransmissions, windows, RTT, idle time.

    A rotated capture (cap.pcap0 cap.pcap1 ...) is read as one, connections continuing across its
    files; --as-one does the same for any files, --each reads every file on its own."""
    if fmt is OutputFormat.parquet and output is None:
        raise typer.BadParameter("--format parquet needs an output file (-o FILE)", param_hint="--output")
    results, code = _read_all(capture_inputs(files, as_one=as_one, each=each), quiet)
    _render(results, fmt, output)
    if code is not ExitCode.OK:
        raise typer.Exit(int(code))


def _read_all(inputs: list[CaptureInput], quiet: bool = False) -> tuple[list[FileResult], ExitCode]:
    """Every capture in turn; a rejected one outranks a damaged one in the exit code."""
    with file_progress([i.label for i in inputs], quiet, "flows") as advance:
        return _read_each(inputs, quiet, advance)


def _read_each(inputs: list[CaptureInput], quiet: bool, advance) -> tuple[list[FileResult], ExitCode]:
    results: list[FileResult] = []
    code = ExitCode.OK
    for inp in inputs:
        label = inp.label
        with inp.path() as path:
            try:
                columns, summary = _read(path, quiet or len(inputs) > 1)
                advance(label)
            except CaptureRejected as e:
                advance(label)
                _say(str(e).replace(str(path), label))
                error = {"kind": e.kind, "message": e.reason, "offset": e.offset, "rejected": True}
                results.append(FileResult(label, "rejected", error, None, None))
                code = ExitCode.INPUT_REJECTED
                continue
        if summary.error is not None:
            _say(f"{label}: {summary.error.message}")
            if code is ExitCode.OK:
                code = ExitCode.INPUT_DAMAGED
        error = asdict(summary.error) if summary.error else None
        results.append(FileResult(label, summary.status, error, summary, columns))
    return results, code


def _render(results: list[FileResult], fmt: OutputFormat, output: Path | None) -> None:
    if fmt is OutputFormat.json:
        if output is None:
            write_document(results, sys.stdout)
        else:
            with open(output, "w", encoding="utf-8") as out:
                write_document(results, out)
        return
    from stallscope.output import render_frame

    flat = _flat(results)
    if fmt is OutputFormat.table:
        _render_table(_readable(flat), output)
    else:
        render_frame(flat, fmt, output=output)


def _render_table(df: pl.DataFrame, output: Path | None) -> None:
    out = sys.stdout if output is None else open(output, "w")
    try:
        from stallscope.output import plain_table, render_frame

        if df.height > RICH_MAX_ROWS:
            out.write(plain_table(df))
            return

        # Off a terminal Rich would assume 80 columns and fold addresses; a pipe or file gets the
        # table's natural width.
        console = table_console(out)
        render_frame(df, OutputFormat.table, title="TCP connections", console=console)
    finally:
        if output is not None:
            out.close()


def _flat(results: list[FileResult]) -> pl.DataFrame:
    import polars as pl

    from stallscope.analyzers.connection_schema import table_schema

    frames = [to_frame(r.columns).with_columns(pl.lit(r.path).alias("file")) for r in results if r.columns is not None]
    schema = {"file": pl.String(), **table_schema()}
    if not frames:
        return pl.DataFrame(schema=schema)
    return pl.concat(frames).select(list(schema))
