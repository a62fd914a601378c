"""Options shared by every command, declared once so every command spells them the same way."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from stallscope.output import OutputFormat

FormatOption = Annotated[
    OutputFormat,
    typer.Option("--format", "-f", help="Output format: table, json, csv or parquet.", case_sensitive=False),
]
OutputOption = Annotated[
    Optional[Path],
    typer.Option("--output", "-o", help="Write the result to this file instead of standard output."),
]
DebugOption = Annotated[
    bool,
    typer.Option("--debug", help="Re-raise internal errors with their traceback."),
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


TableOrJsonOption = Annotated[TableOrJson, typer.Option("--format", "-f", help="table or json.")]

