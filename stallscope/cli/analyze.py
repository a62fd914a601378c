"""`stallscope analyze FILE...`: why each TCP connection was slow, with evidence.

For a person (`--format table`): one line per connection (goodput, time lost, top cause), then the
findings with their frame numbers. `json` is the documented `stallscope.analysis/1` document
(docs/analysis-json.md); `markdown` the same summary as Markdown tables; `csv` one row per stall.
`--packets OUT.parquet` writes the per-packet sender-state table. Exit status as `flows`: 3 if a
capture was damaged (the analysis covers what was read), 4 if one was rejected.

Batch mode (any of `--jobs`, `--parquet`, `--cache`, `--no-cache`, `--dask`; docs/batch.md):
directories and globs expand to their capture files, each analysed on its own by
stallscope.analyzers.batch (worker processes or a dask.distributed cluster, a content-keyed
cache), the results are Parquet tables (`--parquet DIR`) and standard output gets a summary.

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

from stallscope.cli.common import (PIPE_WIDTH, InputPathError, analyze_captures, check_inputs, file_progress,
                                   own_inputs, say, write_parquet)
from stallscope.cli.options import (ANALYSIS_PANEL, OUTPUT_PANEL, AsOneOption, DebugOption, EachOption, OutputOption,
                                    QuietOption)
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

BATCH_PANEL = "Batch (docs/batch.md)"
AnalyzeFiles = Annotated[
    list[Path],
    typer.Argument(help="Capture files (pcap, pcapng, optionally .gz); '-' reads standard input. With a batch option "
                   "also directories (searched recursively) and globs ('caps/**/*.pcap').", show_default=False),
]
JobsOpt = Annotated[Optional[int], typer.Option("--jobs", "-j", help="Batch: analyse the captures in N worker "
                                                "processes (default: one per core).", min=1,
                                                rich_help_panel=BATCH_PANEL, show_default=False)]
ParquetOpt = Annotated[Optional[Path], typer.Option("--parquet", help="Batch: write files, connections, stalls and "
                                                    "findings .parquet into this directory.",
                                                    rich_help_panel=BATCH_PANEL, show_default=False)]
CacheOpt = Annotated[Optional[Path], typer.Option("--cache", help="Batch: the result cache's directory (default "
                                                  "$XDG_CACHE_HOME/stallscope).", rich_help_panel=BATCH_PANEL,
                                                  show_default=False)]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Batch: analyse every capture, read and write no cache.",
                                          rich_help_panel=BATCH_PANEL)]
DaskOpt = Annotated[Optional[str], typer.Option("--dask", help="Batch: run on the dask.distributed scheduler at this "
                                                "address (tcp://HOST:8786), one task per capture.",
                                                rich_help_panel=BATCH_PANEL, show_default=False)]
COMPARE_PANEL = "Reference simulator (docs/comparison.md)"
CompareOpt = Annotated[bool, typer.Option("--compare", help="Refit each connection into the reference simulator, "
                                          "run it and compare: goodput, stalls by cause, the deviation verdict.",
                                          rich_help_panel=COMPARE_PANEL)]
WhatIfOpt = Annotated[Optional[str], typer.Option("--what-if", help="With --compare: 'all', or changes by name "
                                                  "(nodelay, minshall, cork, sndbuf_3mss, s_ge_r, rcvbuf_x4, sndbuf_x4, "
                                                  "sack, mtu_probing) and NAME=VALUE knobs, comma-separated; default: "
                                                  "those the causes found suggest; 'none' for none.",
                                                  rich_help_panel=COMPARE_PANEL, show_default=False)]
ReferenceOpt = Annotated[Optional[str], typer.Option("--reference", help="With --compare: configure the reference "
                                                     "with these values instead of fitted ones, NAME=VALUE,... (e.g. "
                                                     "personality=linux to hold a trace against a modern stack).",
                                                     rich_help_panel=COMPARE_PANEL, show_default=False)]
ReferencePcapOpt = Annotated[Optional[Path], typer.Option("--reference-pcap", help="With --compare: write the "
                                                          "reference run's capture (the first compared connection's) "
                                                          "here, with its ground truth beside it.",
                                                          rich_help_panel=COMPARE_PANEL, show_default=False)]


@own_inputs
def analyze(
    files: AnalyzeFiles,
    as_one: AsOneOption = False,
    each: EachOption = False,
    stream: StreamOpt = None,
    fmt: FormatOpt = AnalyzeFormat.table,
    output: OutputOption = None,
    packets: PacketsOpt = None,
    report: ReportOpt = None,
    jobs: JobsOpt = None,
    parquet: ParquetOpt = None,
    cache: CacheOpt = None,
    no_cache: NoCacheOpt = False,
    dask: DaskOpt = None,
    compare: CompareOpt = False,
    what_if: WhatIfOpt = None,
    reference: ReferenceOpt = None,
    reference_pcap: ReferencePcapOpt = None,
    quiet: QuietOption = False,
    debug: DebugOption = False,
) -> None:
    """Name the cause of every stall in each capture, with the evidence (frames, ACKs, windows)."""
    overrides = _compare_options(compare, what_if, reference, reference_pcap)
    if compare and (jobs is not None or parquet is not None or dask is not None):
        raise typer.BadParameter("does not go with the batch options: compare one capture at a time",
                                 param_hint="--compare")
    if jobs is not None or parquet is not None or cache is not None or no_cache or dask is not None:
        _batch(files, as_one=as_one, stream=stream, fmt=fmt, output=output, packets=packets, report=report,
               jobs=jobs, parquet=parquet, cache=cache, no_cache=no_cache, dask=dask, quiet=quiet)
        return
    check_inputs({"files": files})
    from stallscope.analyzers.analyze import Analysis

    results, containers, code = analyze_captures("analyze", files, as_one=as_one, each=each, stream=stream,
                                                 quiet=quiet, container_facts=report is not None)
    analysis = Analysis(results)
    if compare:
        _compare(results, what_if=what_if, reference=overrides, reference_pcap=reference_pcap, stream=stream)
    if packets is not None:
        _write_packets(results, packets)
    if report is not None:
        from stallscope.analyzers.report import write_report

        write_report(analysis, report, containers=containers)
    text = _render(analysis, fmt)
    if compare and fmt is AnalyzeFormat.table:
        text += _render_reference(results)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
    if code is not ExitCode.OK:
        raise typer.Exit(int(code))


def _compare_options(compare: bool, what_if: str | None, reference: str | None,
                     reference_pcap: Path | None) -> dict[str, object] | None:
    """Check the comparison's options before any work; the parsed --reference values."""
    for given, hint in ((what_if is not None, "--what-if"), (reference is not None, "--reference"),
                        (reference_pcap is not None, "--reference-pcap")):
        if given and not compare:
            raise typer.BadParameter("needs --compare", param_hint=hint)
    from stallscope.analyzers.comparison.whatif import KNOBS, parse

    if what_if not in (None, "none"):
        try:
            parse(what_if)
        except ValueError as e:
            raise typer.BadParameter(str(e).removeprefix("--what-if: "), param_hint="--what-if") from None
    if reference is None:
        return None
    values: dict[str, object] = {}
    kinds = {**KNOBS, "personality": str, "receiver_personality": str}
    for part in (p.strip() for p in reference.split(",") if p.strip()):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in kinds:
            raise typer.BadParameter(f"{part!r}: expected NAME=VALUE with NAME one of {', '.join(sorted(kinds))}",
                                     param_hint="--reference")
        try:
            values[key.strip()] = kinds[key.strip()](value.strip())
        except ValueError:
            raise typer.BadParameter(f"{part!r}: not a valid value", param_hint="--reference") from None
    return values


def _compare(results, *, what_if: str | None, reference: dict | None, reference_pcap: Path | None,
             stream: int | None) -> None:
    from stallscope.analyzers.comparison import compare_file

    for r in results:
        if r.status == "rejected":
            continue
        r.reference = compare_file(r, what_if="" if what_if == "none" else what_if, jobs=2,
                                   reference_pcap=reference_pcap, stream=stream, reference=reference)
        reference_pcap = None  # only the first compared connection's capture is kept


def _render_reference(results) -> str:
    import shutil

    from rich.console import Console

    from stallscope.analyzers.comparison.text import tables

    buf = io.StringIO()
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else PIPE_WIDTH
    console = Console(file=buf, width=width, force_terminal=False, color_system=None, highlight=False, emoji=False)
    for r in results:
        for t in tables(r.path, r.reference or []):
            console.print()
            console.print(t)
    return buf.getvalue()


def _write_packets(results, path: Path) -> None:
    import polars as pl

    # (`state` builds the table, its derived columns included, on each read: once per file here.)
    tables = [(r.path, r.state) for r in results]
    frames = [t.with_columns(pl.lit(p).alias("file")) for p, t in tables if t is not None]
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


# --- batch mode ------------------------------------------------------------------------------------


def _batch(files: list[Path], *, as_one: bool, stream: int | None, fmt: AnalyzeFormat, output: Path | None,
           packets: Path | None, report: Path | None, jobs: int | None, parquet: Path | None, cache: Path | None,
           no_cache: bool, dask: str | None, quiet: bool) -> None:
    """`analyze DIR|GLOB... --jobs N`: the captures' tables, a summary on standard output."""
    for given, hint in ((as_one, "--as-one"), (stream is not None, "--stream"), (packets is not None, "--packets"),
                        (report is not None, "--report")):
        if given:
            raise typer.BadParameter("does not go with the batch options (--jobs, --parquet, --cache, --no-cache, "
                                     "--dask): a batch reads each capture on its own, whole", param_hint=hint)
    if fmt is not AnalyzeFormat.table:
        raise typer.BadParameter("a batch's results are the Parquet tables (--parquet DIR); standard output gets "
                                 "the summary table", param_hint="--format")
    if cache is not None and no_cache:
        raise typer.BadParameter("--cache and --no-cache exclude each other", param_hint="--cache")
    if dask is not None and jobs is not None:
        raise typer.BadParameter("--jobs and --dask exclude each other: the cluster's workers run the tasks",
                                 param_hint="--jobs")
    from stallscope.analyzers import batch
    from stallscope.exit_codes import ExitCode

    try:
        paths = batch.expand_paths(files)
    except batch.BatchInputError as e:
        raise InputPathError(e.path, e.problem) from None
    client = None
    if dask is not None:
        try:
            client = batch.connect_dask(dask)
        except ImportError:
            say("analyze", "--dask needs dask.distributed: pip install 'stallscope[dask]'")
            raise typer.Exit(int(ExitCode.ENVIRONMENT)) from None
        except (OSError, TimeoutError) as e:
            say("analyze", f"cannot reach the dask scheduler at {dask}: {e}")
            raise typer.Exit(int(ExitCode.ENVIRONMENT)) from None
    cache_dir = None if no_cache else (cache if cache is not None else batch.default_cache_dir())
    try:
        with file_progress(paths, quiet, "analyze") as advance:
            result = batch.run_batch(paths, jobs=jobs or batch.default_jobs(), cache_dir=cache_dir, dask=client,
                                     progress=advance)
    finally:
        if client is not None:
            client.close()
    for line in result.problems():
        say("analyze", line)
    if result.cache_write_error is not None:
        say("analyze", f"cannot write the cache ({result.cache_write_error}); the results are complete")
    if not quiet:
        rate = result.captures / result.seconds if result.seconds > 0 else 0.0
        say("analyze", f"{result.captures} captures in {result.seconds:.1f} s ({rate:.1f}/s): {result.analysed} "
            f"analysed, {result.cached} from the cache" + (f" ({cache_dir})" if cache_dir is not None else ""))
    if parquet is not None:
        try:
            result.write_parquet(parquet)
        except OSError as e:
            say("analyze", f"cannot write {e.filename or parquet}: {e.strerror or e}")
            raise typer.Exit(int(ExitCode.ENVIRONMENT)) from None
    text = _batch_summary(result)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
    code = result.exit_code()
    if code:
        raise typer.Exit(code)


def _batch_summary(result) -> str:
    """What a person reads after a batch: captures by status, stalls by cause (deterministic: no
    times, no cache counts; those go to standard error)."""
    import shutil

    import polars as pl
    from rich.console import Console
    from rich.table import Table

    from stallscope.analyzers.analysis_text import _ms

    files, stalls = result.tables["files"], result.tables["stalls"]
    out = io.StringIO()
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else PIPE_WIDTH
    console = Console(file=out, width=width, force_terminal=sys.stdout.isatty(), no_color=not sys.stdout.isatty())
    status = Table(title=f"{files.height} captures")
    for name in ("status", "captures", "connections", "stalls", "findings", "time lost, not idle"):
        status.add_column(name, justify="left" if name == "status" else "right")
    for s, n in result.statuses().items():
        part = files.filter(pl.col("status") == s)
        status.add_row(s, str(n), str(part["connections"].sum()), str(part["stalls"].sum()),
                       str(part["findings"].sum()), _ms(int(part["time_lost_ns"].sum())))
    console.print(status)
    by_cause = (stalls.group_by("cause").agg(pl.len().alias("stalls"), pl.col("path").n_unique().alias("captures"),
                                             pl.col("time_lost_ns").sum().alias("lost"))
                .sort(["lost", "cause"], descending=[True, False]))
    causes = Table(title="stalls by cause")
    for name in ("cause", "stalls", "captures", "time lost"):
        causes.add_column(name, justify="left" if name == "cause" else "right")
    for r in by_cause.iter_rows(named=True):
        causes.add_row(r["cause"], str(r["stalls"]), str(r["captures"]), _ms(int(r["lost"])))
    if by_cause.height:
        console.print(causes)
    else:
        console.print("no stalls")
    return out.getvalue()
