"""`stallscope check PATHS... --policy POLICY.toml`: the CI gate. Analyses every capture named
(files, directories, glob patterns), judges it by the policy (stallscope.analyzers.gate: the
policy's dataclasses, the rules as a pure function) and writes what CI systems read: a table,
`stallscope.check/1` JSON, JUnit XML or a Markdown summary (`--format`, `-o`), JUnit and Markdown
beside it (`--junit`, `--markdown`), and GitHub annotations under GitHub Actions.

Exit status: 0 every rule held, 1 a rule failed, 2 usage or a bad policy or baseline (the message
names the key and what it allows), 3 a capture was damaged, 4 one could not be used; 3 and 4 win
over 1, and every other capture is still checked and reported. docs/check.md has it all.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from stallscope.cli.common import PIPE_WIDTH, analyze_captures, capture_inputs, say
from stallscope.cli.options import (INPUT_PANEL, OUTPUT_PANEL, AsOneOption, DebugOption, EachOption, OutputOption,
                                    QuietOption)
from stallscope.exit_codes import ExitCode

COMMAND = "check"


class CheckFormat(str, Enum):
    table = "table"
    json = "json"
    junit = "junit"
    markdown = "markdown"


PathsArg = Annotated[list[Path], typer.Argument(
    help="Captures (pcap, pcapng, optionally .gz), directories (the captures in them, recursively, sorted) or "
         "glob patterns ('captures/**/*.pcap').", show_default=False)]
PolicyOpt = Annotated[Optional[Path], typer.Option(
    "--policy", "-p", help="The policy (TOML; docs/check.md lists every key).", rich_help_panel=INPUT_PANEL)]
BaselineOpt = Annotated[Optional[Path], typer.Option(
    "--baseline", help="A previous run's results (check -f json, or analyze -f json): fail where stall time or a "
    "cause's count grew by more than the policy's margins. Overrides the policy's baseline.file.",
    rich_help_panel=INPUT_PANEL)]
ForbidOpt = Annotated[Optional[list[str]], typer.Option(
    "--forbid", help="Forbid a cause in every connection (repeatable); added to the policy's rules.forbid_causes.",
    metavar="CAUSE", rich_help_panel=INPUT_PANEL)]
FormatOpt = Annotated[CheckFormat, typer.Option("--format", "-f", help="table, json, junit or markdown.",
                                                case_sensitive=False, rich_help_panel=OUTPUT_PANEL)]
JunitOpt = Annotated[Optional[Path], typer.Option("--junit", help="Also write the JUnit XML report to this file.",
                                                  rich_help_panel=OUTPUT_PANEL)]
MarkdownOpt = Annotated[Optional[Path], typer.Option(
    "--markdown", help="Also write the Markdown summary to this file (e.g. \"$GITHUB_STEP_SUMMARY\").",
    rich_help_panel=OUTPUT_PANEL)]


JobsOpt = Annotated[int, typer.Option("--jobs", "-j", min=1, help="Analyse the captures in N worker processes "
                                      "(the verdicts and their order are the same).", rich_help_panel=INPUT_PANEL)]


def check(
    paths: PathsArg,
    policy: PolicyOpt = None,
    baseline: BaselineOpt = None,
    forbid: ForbidOpt = None,
    as_one: AsOneOption = False,
    each: EachOption = False,
    fmt: FormatOpt = CheckFormat.table,
    output: OutputOption = None,
    junit: JunitOpt = None,
    markdown: MarkdownOpt = None,
    jobs: JobsOpt = 1,
    quiet: QuietOption = False,
    debug: DebugOption = False,
) -> None:
    """Fail the build when a capture breaks the policy: forbidden causes, stalled share, time lost per
    cause, goodput, retransmissions, growth against a baseline."""
    from stallscope.analyzers.analyze import FileAnalysis
    from stallscope.analyzers.gate import annotations as gha
    from stallscope.analyzers.gate.document import CheckRun
    from stallscope.analyzers.gate.inputs import InputProblem, expand
    from stallscope.analyzers.gate.rules import evaluate
    from stallscope.analyzers.gate.text import printable

    rules, base, base_rule = _policy(policy, baseline, forbid)
    items = expand([str(p) for p in paths])
    files = [p for p in items if isinstance(p, Path)]
    position = {p: i for i, p in enumerate(items) if isinstance(p, Path)}
    for p in items:
        if isinstance(p, InputProblem):
            say(COMMAND, f"{printable(p.path)}: {p.message}")
    inputs = capture_inputs(files, as_one=as_one, each=each)
    results, _, _ = analyze_captures(COMMAND, files, as_one=as_one, each=each, stream=None, quiet=quiet,
                                     container_facts=False, jobs=jobs, keep_state=bool(rules.needs_prediction))
    placed: list[tuple[int, Any]] = [(min(position[f] for f in inp.paths), r) for inp, r in zip(inputs, results)]
    placed += [(i, FileAnalysis(p.path, "rejected", {"kind": p.kind, "offset": None, "message": p.message}, {}))
               for i, p in enumerate(items) if isinstance(p, InputProblem)]
    analyses = [r for _, r in sorted(placed, key=lambda t: t[0])]
    predictor = _reference_goodput if rules.needs_prediction else None
    run = CheckRun([evaluate(fa, rules, base, baseline_rule=base_rule, predictor=predictor) for fa in analyses],
                   policy=None if policy is None else str(policy),
                   baseline=None if base is None else base.source)

    text = _render(run, fmt)
    for path, extra in ((junit, CheckFormat.junit), (markdown, CheckFormat.markdown)):
        if path is not None:
            _write_side(path, _render(run, extra))
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
    if gha.under_github_actions():
        # Workflow commands on standard error: the runner reads them from both streams, and standard
        # output keeps only the chosen format (`-f json > results.json` stays JSON).
        for line in gha.annotations(run):
            print(line, file=sys.stderr)
        sys.stderr.flush()
    if run.exit_status is not ExitCode.OK:
        raise typer.Exit(int(run.exit_status))


def _policy(path: Path | None, baseline: Path | None, forbid: list[str] | None):
    """The policy (with --forbid added), the baseline and its margins; exit 2 naming the bad key."""
    from dataclasses import replace

    from stallscope.analyzers.gate.baseline import BaselineError, load_baseline
    from stallscope.analyzers.gate.policy import CAUSES, BaselineRule, Policy, PolicyError, load_policy

    if path is None and baseline is None and not forbid:
        raise typer.BadParameter("give a policy (--policy FILE), a baseline (--baseline FILE) or --forbid CAUSE",
                                 param_hint="--policy")
    try:
        policy = load_policy(path) if path is not None else Policy()
    except PolicyError as e:
        _usage(f"{path}: {e}")
    for cause in forbid or []:
        if cause not in CAUSES:
            _usage(f"--forbid: unknown cause {cause!r}; allowed: {', '.join(CAUSES)}")
    if forbid:
        rules = policy.rules
        policy = replace(policy, rules=replace(rules, forbid_causes=tuple(dict.fromkeys([*rules.forbid_causes, *forbid]))))
    if policy.rules.empty and not policy.scopes and policy.baseline is None and baseline is None:
        _usage(f"{path}: the policy holds no rule; allowed: [rules], [[scope]], [baseline] (docs/check.md)")
    rule = policy.baseline or BaselineRule()
    source = baseline if baseline is not None else rule.file
    base = None
    if source is not None:
        try:
            base = load_baseline(source)
        except BaselineError as e:
            _usage(str(e) if baseline is not None else f"{path}: baseline.file: {e}")
    return policy, base, rule


def _reference_goodput(fa, conn) -> float | None:
    """`min_goodput_of_prediction`'s prediction: the goodput of the connection refitted into the
    reference simulator (docs/comparison.md), i.e. what the reference stack would do on this path."""
    from stallscope.analyzers.comparison import compare_file

    if fa.reference is None:  # every connection of the file at once: the packet table is joined once
        fa.reference = compare_file(fa, what_if="", jobs=1)
    ref = next((r for r in fa.reference if r.stream == conn.stream), None)
    return ref.comparison.goodput_model_bps if ref is not None else None


def _usage(message: str) -> None:
    say(COMMAND, message)
    raise typer.Exit(int(ExitCode.USAGE))


def _write_side(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        import os

        say(COMMAND, f"cannot write {path}: {os.strerror(e.errno) if e.errno else e}")
        raise typer.Exit(int(ExitCode.ENVIRONMENT)) from None


def _render(run, fmt: CheckFormat) -> str:
    if fmt is CheckFormat.json:
        from stallscope.output import dumps_json

        return dumps_json(run.to_json()) + "\n"
    if fmt is CheckFormat.junit:
        from stallscope.analyzers.gate.junit import junit_xml

        return junit_xml(run)
    if fmt is CheckFormat.markdown:
        from stallscope.analyzers.gate.summary import markdown

        return markdown(run)
    import shutil

    from stallscope.analyzers.gate.summary import terminal

    return terminal(run, width=shutil.get_terminal_size().columns if sys.stdout.isatty() else PIPE_WIDTH)
