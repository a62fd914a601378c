"""`stallscope report FILE... -o report.html`: the analysis as one self-contained HTML file.

The page (stallscope.analyzers.report) holds the capture facts and decode accounting, an index of
the connections (worst first), per connection a summary card, the findings as text with frame
numbers and Wireshark display filters, and linked time graphs; plotly.js is inlined, nothing is
fetched when it is opened. The path written is printed on standard output.

Exit status as `stallscope analyze`: 3 if a capture was damaged (the report covers what was read
and says so first), 4 if one was rejected (the report still names it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from stallscope.cli.common import file_progress, say
from stallscope.cli.options import ANALYSIS_PANEL, OUTPUT_PANEL, CaptureFiles, DebugOption, QuietOption
from stallscope.exit_codes import ExitCode

ReportOutput = Annotated[Path, typer.Option("--output", "-o", help="The HTML file to write.",
                                            rich_help_panel=OUTPUT_PANEL)]
StreamOpt = Annotated[Optional[int], typer.Option("--stream", help="Report only this connection (tcp.stream index).",
                                                  min=0, rich_help_panel=ANALYSIS_PANEL)]
GraphsOpt = Annotated[int, typer.Option("--max-graphs", help="Draw graphs for at most this many connections, the "
                                        "worst first (the others keep their summary and findings).", min=0,
                                        rich_help_panel=OUTPUT_PANEL)]


def _say(message: str) -> None:
    say("report", message)


def report(
    files: CaptureFiles,
    stream: StreamOpt = None,
    output: ReportOutput = Path("report.html"),
    max_graphs: GraphsOpt = 12,
    quiet: QuietOption = False,
    debug: DebugOption = False,
) -> None:
    """Write an HTML report of why each TCP connection was slow: findings, evidence and linked graphs."""
    from stallscope.analyzers.analyze import Analysis, analyze_one
    from stallscope.analyzers.report import write_report

    code = ExitCode.OK
    results = []
    with file_progress(files, quiet, "report") as advance:
        for path in files:
            result = analyze_one(path, stream=stream)
            results.append(result)
            advance(path)
            if result.status == "rejected":
                _say(f"{path}: rejected: {result.error['message']}")
                code = ExitCode.INPUT_REJECTED
            elif result.status == "damaged":
                _say(f"{path}: damaged at byte {result.error['offset']}: {result.error['message']}")
                if code is ExitCode.OK:
                    code = ExitCode.INPUT_DAMAGED
            elif not result.connections:
                _say(f"{path}: no TCP connection to analyze")
    write_report(Analysis(results), output, max_graphed=max_graphs)
    print(output)
    if code is not ExitCode.OK:
        raise typer.Exit(int(code))
