"""`stallscope decode FILE`: the packet table of one capture, streamed to parquet/csv or shown as
json/table, with the record accounting on stderr and the documented exit codes."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Optional

import polars as pl
import pyarrow.parquet as pq
import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

from stallscope.packets.decoder import DecodeSummary, PacketBatches, empty_table, iter_batches
from stallscope.packets.errors import CaptureDamaged, CaptureRejected
from stallscope.cli.common import capture_inputs, progress_wanted
from stallscope.cli.options import INPUT_PANEL, OUTPUT_PANEL, AsOneOption, DebugOption, OutputOption, QuietOption
from stallscope.exit_codes import ExitCode
from stallscope.output import OutputFormat, render_frame

JSON_SCHEMA = "stallscope.packets/1"
# Files smaller than this decode in well under a second: no progress bar.
PROGRESS_MIN_BYTES = 64 * 1024 * 1024

FileArguments = Annotated[
    list[Path],
    typer.Argument(help="Capture file (pcap, pcapng, optionally .gz; '-' reads standard input), or the files of one "
                   "capture.", show_default=False),
]
DecodeFormat = Annotated[
    Optional[OutputFormat],
    typer.Option(
        "--format", "-f", case_sensitive=False,
        help="parquet, csv, json or table. Default: from the -o suffix (.parquet/.csv/.json), else table.",
        rich_help_panel=OUTPUT_PANEL,
    ),
]
ColumnsOption = Annotated[
    Optional[str], typer.Option("--columns", "-c", help="Comma-separated packet columns to decode (default: all).",
                                 rich_help_panel=INPUT_PANEL)
]
BatchRowsOption = Annotated[int, typer.Option("--batch-rows", min=1, help="Rows per streamed batch.",
                                                           rich_help_panel=INPUT_PANEL)]


def _infer_format(fmt: OutputFormat | None, output: Path | None) -> OutputFormat:
    if fmt is not None:
        return fmt
    suffix = output.suffix.lower() if output is not None else ""
    return {".parquet": OutputFormat.parquet, ".csv": OutputFormat.csv, ".json": OutputFormat.json}.get(
        suffix, OutputFormat.table
    )


def _flat_lists(df: pl.DataFrame) -> pl.DataFrame:
    """CSV and the terminal table cannot hold list columns: SACK edges become space-separated text."""
    lists = [n for n, t in df.schema.items() if isinstance(t, pl.List)]
    return df.with_columns(pl.col(n).cast(pl.List(pl.String)).list.join(" ") for n in lists)


def summary_line(s: DecodeSummary) -> str:
    def parts(d: dict[str, int]) -> str:
        return ", ".join(f"{k}={v}" for k, v in d.items()) or "none"

    line = (
        f"{s.path}: {s.records} records: {s.tcp_packets} TCP packets in {s.streams} connections; "
        f"not TCP: {parts(s.not_tcp)}; not decoded: {parts(s.not_decoded)}; anomalies: {parts(s.anomalies)}"
    )
    c = s.container
    drops = {k: c[k] for k in ("if_drop", "os_drop", "epb_dropcount") if c.get(k)}
    if drops:
        line += f"; capture drops: {parts(drops)}"
    return line


class _Sink:
    """Writes batches as they come (parquet, csv) or keeps them for one rendering (json, table)."""

    def __init__(self, fmt: OutputFormat, output: Path | None) -> None:
        if fmt is OutputFormat.parquet and output is None:
            raise typer.BadParameter("--format parquet needs an output file (-o FILE)", param_hint="--output")
        self.fmt, self.output = fmt, output
        self.kept: list[pl.DataFrame] = []
        self._parquet: pq.ParquetWriter | None = None
        self._csv = None

    def write(self, batch: pl.DataFrame) -> None:
        if self.fmt is OutputFormat.parquet:
            table = batch.to_arrow()
            if self._parquet is None:
                self._parquet = pq.ParquetWriter(str(self.output), table.schema)
            self._parquet.write_table(table)
        elif self.fmt is OutputFormat.csv:
            first = self._csv is None
            if first:
                self._csv = open(self.output, "w", newline="") if self.output else sys.stdout
            _flat_lists(batch).write_csv(self._csv, include_header=first)
        else:
            self.kept.append(batch)

    def close(self, columns: list[str] | None, summary: DecodeSummary | None) -> None:
        if self.fmt is OutputFormat.parquet:
            if self._parquet is None:  # no packet: still write a file with the schema
                empty_table(columns).write_parquet(self.output)
            else:
                self._parquet.close()
        elif self.fmt is OutputFormat.csv:
            if self._csv is None:
                self.write(empty_table(columns))
            if self._csv is not sys.stdout:
                self._csv.close()
        else:
            df = pl.concat(self.kept) if self.kept else empty_table(columns)
            if self.fmt is OutputFormat.table:
                df = _flat_lists(df)
            # JSON carries the accounting beside the rows: {"schema", "summary": {...}, "rows": [...]}.
            doc = {"schema": JSON_SCHEMA, "summary": summary.to_dict() if summary else None, "rows": df.to_dicts()}
            render_frame(df, self.fmt, output=self.output, json_document=doc if self.fmt is OutputFormat.json else None)


def _pump(batches: PacketBatches, sink: _Sink, err: Console, quiet: bool = False) -> None:
    show = batches.size is not None and batches.size >= PROGRESS_MIN_BYTES and progress_wanted(quiet)
    columns = [BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=err, transient=True, disable=not show) as progress:
        task = progress.add_task("decode", total=batches.size)
        for batch in batches:
            sink.write(batch)
            progress.update(task, completed=batches.bytes_read)


def decode(
    files: FileArguments,
    as_one: AsOneOption = False,
    columns: ColumnsOption = None,
    batch_rows: BatchRowsOption = 65_536,
    output: OutputOption = None,
    fmt: DecodeFormat = None,
    quiet: QuietOption = False,
    debug: DebugOption = False,
) -> None:
    """Decode every TCP packet of a capture into the packet table (docs/packet-schema.md).

    Several files are accepted when they are one capture: a rotated set (cap.pcap0 cap.pcap1 ...),
    or any files with --as-one; they are read as one stream in the order they were written."""
    inputs = capture_inputs(files, as_one=as_one)
    if len(inputs) > 1:
        raise typer.BadParameter("decode reads one capture: name one file, the files of one rotated set, or "
                                 "several files with --as-one", param_hint="FILES")
    inp = inputs[0]
    with inp.path() as readable:
        _decode(str(readable), inp.label, columns, batch_rows, output, fmt, quiet)


def _decode(path: str, label: str, columns: str | None, batch_rows: int, output: Path | None,
            fmt: OutputFormat | None, quiet: bool) -> None:
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    names = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    sink = _Sink(_infer_format(fmt, output), output)

    def named(e: Exception) -> str:
        return str(e).replace(path, label)

    try:
        batches = iter_batches(path, batch_rows=batch_rows, columns=names)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--columns") from None
    except CaptureRejected as e:
        err.print(f"stallscope decode: rejected: {named(e)}", markup=False)
        raise typer.Exit(ExitCode.INPUT_REJECTED) from None
    code = ExitCode.OK
    message = None
    try:
        _pump(batches, sink, err, quiet)
    except CaptureRejected as e:
        err.print(f"stallscope decode: rejected: {named(e)}", markup=False)
        raise typer.Exit(ExitCode.INPUT_REJECTED) from None
    except CaptureDamaged as e:
        code, message = ExitCode.INPUT_DAMAGED, f"stallscope decode: damaged: {named(e)} (kept {e.packets_decoded} packets)"
    summary = batches.summary
    if summary is not None and label != path:
        summary = replace(summary, path=label)
    sink.close(batches.columns, summary)
    if summary is not None:
        err.print(summary_line(summary), markup=False)
    if message:
        err.print(message, markup=False)
    raise typer.Exit(code)
