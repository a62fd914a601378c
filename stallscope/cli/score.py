"""`stallscope score`: an analysis against ground truth (docs/scoring.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from stallscope.cli.common import spinner
from stallscope.cli.options import ANALYSIS_PANEL, INPUT_PANEL, OutputOption, QuietOption, TableOrJson, TableOrJsonOption
from stallscope.exit_codes import ExitCode
from stallscope.untrusted_text import terminal
from stallscope.output import write_json


def score(
    source: Annotated[Optional[Path], typer.Argument(help="An analysis JSON (stallscope.analysis/1) or a capture to analyze.", show_default=False)] = None,
    truth: Annotated[Optional[Path], typer.Argument(help="Ground truth: <pcap>.truth.json (stallscope.ground_truth/1) or fixtures/NAME.json (stallscope.capture_truth/1).", show_default=False)] = None,
    corpus: Annotated[Optional[Path], typer.Option("--corpus", rich_help_panel=INPUT_PANEL, help="Score every capture in this directory that has a truth file beside it (instead of SOURCE TRUTH).")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, rich_help_panel=INPUT_PANEL, help="Analyzer processes for --corpus.")] = 1,
    offset_ns: Annotated[int, typer.Option("--offset-ns", rich_help_panel=ANALYSIS_PANEL, help="Subtract this from every reported time (a capture whose clock starts at another epoch than the truth's; 0 for the simulator's pcaps).")] = 0,
    fmt: TableOrJsonOption = TableOrJson.table,
    output: OutputOption = None,
    quiet: QuietOption = False,
) -> None:
    """Score stalls and causes against ground truth: per-cause precision and recall and a confusion
    matrix (simulator truth), or hit/miss/extra per capture (capture truth). Exit 1 when a trace
    could not be scored."""
    from stallscope.analyzers import scoring

    try:
        if corpus is not None:
            if source is not None or truth is not None:
                raise scoring.ScoreError("give either --corpus DIR or SOURCE TRUTH, not both")
            with spinner(f"scoring the corpus in {corpus}", quiet):
                report = scoring.score_corpus(corpus, jobs=jobs, offset_ns=offset_ns)
        else:
            if source is None or truth is None:
                raise scoring.ScoreError("give SOURCE and TRUTH (or --corpus DIR)")
            report = scoring.score_files(source, truth, offset_ns=offset_ns)
    except (scoring.ScoreError, FileNotFoundError) as exc:
        typer.echo(f"stallscope score: {exc}", err=True)
        raise typer.Exit(ExitCode.USAGE) from None
    doc = report.to_json()
    if fmt is TableOrJson.json:
        write_json(doc, output)
    else:
        render_tables(doc, output)
    if report.errors:
        raise typer.Exit(ExitCode.VERDICT_FAILED)


_ABBREVIATIONS = {"window_update_deadlock": "WUD", "pmtu_blackhole": "PMTU", "mss_mismatch": "MSS",
                  "application_idle": "IDLE", "undetermined": "UND", "missed": "MISS", "spurious": "SPUR",
                  "sender_sws": "SWS", "spurious_timeout": "SPTO"}


def abbreviation(name: str) -> str:
    """A short column header: fixed for a few names, else the words' initials (nagle_delayed_ack: NDA)."""
    return _ABBREVIATIONS.get(name) or "".join(w[0] for w in name.split("_") if w).upper()


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def render_tables(doc: dict[str, Any], output: Path | None = None) -> None:
    from rich.table import Table

    from stallscope.output import table_console

    out = open(output, "w") if output is not None else None
    console = table_console(out)  # natural width off a terminal: no cell folded mid-word
    try:
        gt = doc.get("ground_truth")
        if gt is not None:
            t = Table(title="per cause (simulator ground truth)")
            for col in ("cause", "true", "reported", "matched", "precision", "recall"):
                t.add_column(col, justify="left" if col == "cause" else "right")
            for cause, row in gt["causes"].items():
                t.add_row(cause, *(_fmt(row[k]) for k in ("true", "reported", "matched", "precision", "recall")))
            tot = gt["totals"]
            t.add_row("total", *(_fmt(tot[k]) for k in ("true", "reported", "matched", "precision", "recall")))
            console.print(t)
            conf = gt["confusion"]
            m = Table(title="confusion (rows: true cause, columns: reported cause)")
            m.add_column("true\\rep", no_wrap=True)
            for c in conf["columns"]:
                m.add_column(abbreviation(c), justify="right")
            for r in conf["rows"]:
                m.add_row(abbreviation(r), *(str(conf["matrix"][r][c] or ".") for c in conf["columns"]))
            console.print(m)
            names = dict.fromkeys([*conf["rows"], *conf["columns"]])
            console.print("  ".join(f"{abbreviation(n)} {n}" for n in names), soft_wrap=False)
            console.print(", ".join(f"{k} {tot[k]}" for k in ("missed", "spurious", "misattributed", "undetermined"))
                          + f"; {len(gt['traces'])} trace(s)")
        ct = doc.get("capture_truth")
        if ct is not None:
            t = Table(title="captures (capture truth: causes reported for the data sender)")
            for col in ("capture", "expected", "reported", "miss", "extra", "undetermined", "ok"):
                t.add_column(col)
            for c in ct["captures"]:
                t.add_row(terminal(c["capture"]), ", ".join(c["expected"]) or "(negative control)",
                          ", ".join(c["reported"]) or "-", ", ".join(c["miss"]) or "-", ", ".join(c["extra"]) or "-",
                          str(c["undetermined"]), "yes" if c["ok"] else "NO")
            console.print(t)
            p = Table(title="per cause (capture truth)")
            for col in ("cause", "hit", "miss", "extra"):
                p.add_column(col, justify="left" if col == "cause" else "right")
            for cause, row in ct["causes"].items():
                p.add_row(cause, str(row["hit"]), str(row["miss"]), str(row["extra"]))
            console.print(p)
            tot = ct["totals"]
            console.print(f"{tot['ok']} of {tot['captures']} captures as expected "
                          f"({tot['negative_controls']} negative controls)")
        for err in doc.get("errors", []):
            console.print(f"[red]not scored[/red] {terminal(err['trace'])}: {terminal(err['error'])}")
    finally:
        if out is not None:
            out.close()
