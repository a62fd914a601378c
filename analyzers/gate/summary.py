"""The gate's results for a person: a terminal summary (Rich) and a Markdown summary for a CI job's
summary page (GitHub's $GITHUB_STEP_SUMMARY, a GitLab merge-request note). Every string from a
capture is escaped for its medium (text.terminal, text.markdown)."""

from __future__ import annotations

import io

from stallscope.analyzers.analysis_text import _ms

from . import text
from .document import CheckRun
from .rules import ERROR, FAIL, PASS, CaptureVerdict, RuleResult

# Markdown: every capture listed up to this many, else only those that did not pass.
MD_ALL_CAPTURES = 50
# Markdown: failed results listed (GitHub caps a job summary at 1 MiB).
MD_FAILURES = 100
MD_FRAMES = 8
# Terminal: stalls and findings shown per failed rule.
TERMINAL_EVIDENCE = 8

_WORD = {PASS: "pass", FAIL: "FAIL", ERROR: "ERROR"}


def _headline(run: CheckRun) -> str:
    t = run.totals()
    captures = f"{t['captures']} capture{'s' * (t['captures'] != 1)}"
    bad = []
    if t["captures_failed"]:
        bad.append(f"{t['captures_failed']} failed")
    if t["captures_with_errors"]:
        bad.append(f"{t['captures_with_errors']} could not be read in full")
    return (f"{captures}" + (f", {', '.join(bad)}" if bad else ", all passed") + f"; {t['tests']} tests: "
            f"{t['passed']} passed, {t['failed']} failed, {t['skipped']} skipped, {t['errors']} errors")


def _problems(run: CheckRun) -> list[tuple[CaptureVerdict, RuleResult]]:
    return [(v, r) for v in run.verdicts for r in v.results if r.status in (FAIL, ERROR)]


def _frames(r: RuleResult) -> str:
    spans = []
    for e in r.evidence:
        if e.kind == "stall":
            spans.append(f"{e.start_frame}-{e.end_frame}")
        elif e.frames:
            spans.append(", ".join(map(str, e.frames)))
    shown = spans[:MD_FRAMES]
    more = r.evidence_count - len(shown)
    return ", ".join(shown) + (f" (+{more} more)" if more > 0 else "")


def markdown(run: CheckRun) -> str:
    verdict = {PASS: "passed", FAIL: "failed", ERROR: "could not read every capture"}[run.verdict]
    out = [f"## stallscope check: {verdict}", ""]
    if run.policy:
        out.append(f"Policy: {text.markdown(run.policy)}" + (f"; baseline: {text.markdown(run.baseline)}"
                                                             if run.baseline else "") + "  ")
    out += [text.markdown(_headline(run)), ""]
    shown = run.verdicts if len(run.verdicts) <= MD_ALL_CAPTURES else [v for v in run.verdicts if v.verdict != PASS]
    if shown:
        out += ["| capture | verdict | connections | stall time | tests | failed | skipped |",
                "|---|---|---|---|---|---|---|"]
        for v in shown:
            conns = "-" if v.summary is None else str(v.summary.connections)
            stall = "-" if v.summary is None else _ms(v.summary.stall_time_ns)
            out.append(f"| {text.markdown(v.path)} | {_WORD[v.verdict]} | {conns} | {text.markdown(stall)} | "
                       f"{len(v.results)} | {v.count(FAIL)} | {v.count('skip')} |")
        if len(shown) < len(run.verdicts):
            out.append("")
            out.append(f"{len(run.verdicts) - len(shown)} other captures passed.")
    problems = _problems(run)
    if problems:
        out += ["", "### Failures", "", "| capture | connection | rule | what | frames |", "|---|---|---|---|---|"]
        for v, r in problems[:MD_FAILURES]:
            conn = "-" if r.stream is None else f"stream {r.stream} ({r.connection})"
            rule = r.rule if r.scope in (None, "rules") else f"{r.scope}: {r.rule}"
            out.append(f"| {text.markdown(v.path)} | {text.markdown(conn)} | {text.markdown(rule)} | "
                       f"{text.markdown(r.message)} | {text.markdown(_frames(r))} |")
        if len(problems) > MD_FAILURES:
            out += ["", f"... and {len(problems) - MD_FAILURES} more in the JUnit or JSON report."]
    return "\n".join(out) + "\n"


def terminal(run: CheckRun, width: int | None = None) -> str:
    from rich.console import Console
    from rich.table import Table

    buf = io.StringIO()
    console = Console(file=buf, width=width or 160, force_terminal=False, color_system=None, highlight=False,
                      emoji=False)
    table = Table(title="stallscope check", show_lines=False)
    for name in ("capture", "verdict", "connections", "stall time", "tests", "failed", "skipped"):
        table.add_column(name, overflow="fold")
    for v in run.verdicts:
        table.add_row(text.terminal(v.path), _WORD[v.verdict], "-" if v.summary is None else str(v.summary.connections),
                      "-" if v.summary is None else _ms(v.summary.stall_time_ns), str(len(v.results)),
                      str(v.count(FAIL)), str(v.count("skip")))
    console.print(table)
    for v, r in _problems(run):
        console.print(f"\n{_WORD[r.status]} {text.terminal(v.path)}: {text.terminal(r.name)}")
        for line in r.failure_text(TERMINAL_EVIDENCE).split("\n"):
            console.print("  " + text.terminal(line))
    console.print("\n" + text.terminal(_headline(run)))
    return buf.getvalue()
