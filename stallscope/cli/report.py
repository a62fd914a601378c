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

from stallscope.cli.common import analyze_captures
from stallscope.cli.options import (ANALYSIS_PANEL, OUTPUT_PANEL, AsOneOption, CaptureFiles, DebugOption, EachOption,
                                    QuietOption)
from stallscope.exit_codes import ExitCode

ReportOutput = Annotated[Path, typer.Option("--output", "-o", help="The HTML file to write.",
                                            rich_help_panel=OUTPUT_PANEL)]
StreamOpt = Annotated[Optional[int], typer.Option("--stream", help="Report only this connection (tcp.stream index).",
                                                  min=0, rich_help_panel=ANALYSIS_PANEL)]
GraphsOpt = Annotated[int, typer.Option("--max-graphs", help="Draw graphs for at most this many connections, the "
                                        "worst first (the others keep their summary and findings).", min=0,
                                        rich_help_panel=OUTPUT_PANEL)]



def report(
    files: CaptureFiles,
    as_one: AsOneOption = False,
    each: EachOption = False,
    stream: StreamOpt = None,
    output: ReportOutput = Path("report.html"),
    max_graphs: GraphsOpt = 12,
    quiet: QuietOption = False,
    debug: DebugOption = False,
) -> None:
    """Write an HTML report of why each TCP connection was slow: findings, evidence and linked graphs."""
    from stallscope.analyzers.analyze import Analysis
    from stallscope.analyzers.report import write_report

    results, containers, code = analyze_captures("report", files, as_one=as_one, each=each, stream=stream,
                                                 quiet=quiet, container_facts=True)
    write_report(Analysis(results), output, max_graphed=max_graphs, containers=containers)
    print(output)
    if code is not ExitCode.OK:
        raise typer.Exit(int(code))
