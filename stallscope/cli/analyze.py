"""`stallscope analyze FILE...`: why each TCP connection was slow, with evidence.

For a person (`--format table`): one line per connection (goodput, time lost, top cause), then the
findings with their frame numbers. `json` is the documented `stallscope.analysis/1` document
(docs/analysis-json.md); `markdown` the same summary as Markdown tables; `csv` one row per stall.
`--packets OUT.parquet` writes the per-packet sender-state table. Exit status as `flows`: 3 if a
capture was damaged (the analysis covers what was read), 4 if one was rejected.

Everything taken from a capture (file names, addresses) is escaped for the output it goes into.
"""

from __future__ import annotations

import csv
import io
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from stallscope.cli.common import PIPE_WIDTH, analyze_captures, write_parquet
from stallscope.cli.options import (ANALYSIS_PANEL, OUTPUT_PANEL, AsOneOption, CaptureFiles, DebugOption, EachOption,
                                    OutputOption, QuietOption)
from stallscope.exit_codes import ExitCode


class AnalyzeFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    csv = "csv"


FormatOpt = Annotated[AnalyzeFormat, typer.Option("--format", "-f", help="table, json, markdown or csv.",
                                                  case_sensitive=False, rich_help_panel=OUTPUT_PANEL)]
StreamOpt = Annotated[Optional[int], typer.Option("--stream", help="Analyze only this connection (tcp.stream index).",
                                                  min=0, rich_help_panel=ANALYSIS_PANEL)]
PacketsOpt = Annotated[Optional[Path], typer.Option("--packets", help="Write the per-packet sender-state table "
                                                    "(Parquet) to this file.", rich_help_panel=OUTPUT_PANEL)]
ReportOpt = Annotated[Optional[Path], typer.Option("--report", help="Also write the HTML report (stallscope report) "
                                                   "to this file.", rich_help_panel=OUTPUT_PANEL)]



def analyze(
    files: CaptureFiles,
    as_one: AsOneOption = False,
    each: EachOption = False,
    stream: StreamOpt = None,
    fmt: FormatOpt = AnalyzeFormat.table,
    output: OutputOption = None,
    packets: PacketsOpt = None,
    report: ReportOpt = None,
    quiet: QuietOption = False,
    debug: DebugOption = False,
) -> None:
    """Name the cause of every stall in each capture, with the evidence (frames, ACKs, windows)."""
    from stallscope.analyzers.analyze import Analysis

    results, containers, code = analyze_captures("analyze", files, as_one=as_one, each=each, stream=stream,
                                                 quiet=quiet, container_facts=report is not None)
    analysis = Analysis(results)
    if packets is not None:
        _write_packets(results, packets)
    if report is not None:
        from stallscope.analyzers.report import write_report

        write_report(analysis, report, containers=containers)
    text = _render(analysis, fmt)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
    if code is not ExitCode.OK:
        raise typer.Exit(int(code))


def _write_packets(results, path: Path) -> None:
    import polars as pl

    frames = [r.state.with_columns(pl.lit(r.path).alias("file")) for r in results if r.state is not None]
    if not frames:
        raise typer.BadParameter("no packets to write", param_hint="--packets")
    write_parquet(pl.concat(frames, how="vertical_relaxed"), path)


def _render(analysis, fmt: AnalyzeFormat) -> str:
    if fmt is AnalyzeFormat.json:
        from stallscope.output import dumps_json

        return dumps_json(analysis.to_json()) + "\n"
    if fmt is AnalyzeFormat.csv:
        return _csv(analysis)
    if fmt is AnalyzeFormat.markdown:
        from stallscope.analyzers.analysis_text import markdown

        return markdown(analysis)
    import shutil

    from stallscope.analyzers.analysis_text import terminal

    return terminal(analysis, width=shutil.get_terminal_size().columns if sys.stdout.isatty() else PIPE_WIDTH)


def _csv(analysis) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["file", "stream", "direction", "start_ns", "end_ns", "start_frame", "end_frame", "duration_ns",
                "time_lost_ns", "cause", "detail", "confidence"])
    for f in analysis.files:
        for c in f.connections:
            for s in c.stalls:
                w.writerow([f.path, c.stream, s.direction, s.start_ns, s.end_ns, s.start_frame, s.end_frame,
                            s.duration_ns, s.time_lost_ns, s.cause, s.detail or "", f"{s.confidence:.3f}"])
    return out.getvalue()
