"""Options shared by every command, declared once so every command spells them the same way.

Options are grouped in `--help` by panel: input, analysis (or the simulated path and hosts),
output, and the rest (debugging)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from stallscope.output import OutputFormat

INPUT_PANEL = "Input"
ANALYSIS_PANEL = "Analysis"
OUTPUT_PANEL = "Output"
OTHER_PANEL = "Other"

FormatOption = Annotated[
    OutputFormat,
    typer.Option("--format", "-f", help="Output format: table, json, csv or parquet.", case_sensitive=False,
                 rich_help_panel=OUTPUT_PANEL),
]
OutputOption = Annotated[
    Optional[Path],
    typer.Option("--output", "-o", help="Write the result to this file instead of standard output.",
                 rich_help_panel=OUTPUT_PANEL),
]
QuietOption = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="No progress display on standard error (it is shown only on a terminal).",
                 rich_help_panel=OUTPUT_PANEL),
]
DebugOption = Annotated[
    bool,
    typer.Option("--debug", help="Re-raise internal errors with their traceback.", rich_help_panel=OTHER_PANEL),
]
SeedOption = Annotated[
    int,
    typer.Option("--seed", help="Seed for every random choice; the same seed gives the same output."),
]
CaptureFiles = Annotated[
    list[Path],
    typer.Argument(help="Capture files (pcap, pcapng, optionally .gz); '-' reads standard input.", show_default=False),
]


class TableOrJson(str, Enum):
    """The simulator and reproduction commands print a table or their documented JSON."""

    table = "table"
    json = "json"


TableOrJsonOption = Annotated[TableOrJson, typer.Option("--format", "-f", help="table or json.",
                                                        rich_help_panel=OUTPUT_PANEL)]
