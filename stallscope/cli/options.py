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
AsOneOption = Annotated[
    bool,
    typer.Option("--as-one", help="Read all the files named as one capture (cut in pieces), in the order they "
                 "were written.", rich_help_panel=INPUT_PANEL),
]
EachOption = Annotated[
    bool,
    typer.Option("--each", help="Read every file on its own, even files named as a rotated set (cap.pcap0, "
                 "cap.pcap1 ...; by default such a set is read as one capture).", rich_help_panel=INPUT_PANEL),
]


class TableOrJson(str, Enum):
    """The simulator and reproduction commands print a table or their documented JSON."""

    table = "table"
    json = "json"


TableOrJsonOption = Annotated[TableOrJson, typer.Option("--format", "-f", help="table or json.",
                                                        rich_help_panel=OUTPUT_PANEL)]
