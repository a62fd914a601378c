"""`stallscope reproduce NAME`: the simulator's numbers beside a paper's, with the verdict."""

from __future__ import annotations

from typing import Annotated, Optional

import polars as pl
import typer

from stallscope.cli.common import spinner
from stallscope.cli.options import OutputOption, QuietOption, TableOrJson, TableOrJsonOption
from stallscope.exit_codes import ExitCode
from stallscope.output import OutputFormat, render_frame, write_json

LIST_SCHEMA = "stallscope.reproductions/1"
RESULT_SCHEMA = "stallscope.reproduction/1"


def reproduce(
    name: Annotated[Optional[str], typer.Argument(help="Reproduction name (see --list).", show_default=False)] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the reproductions and exit.")] = False,
    fmt: TableOrJsonOption = TableOrJson.table,
    output: OutputOption = None,
    quiet: QuietOption = False,
) -> None:
    """Run a paper reproduction: the paper's table beside the simulator's, and the verdict.

    Exits 1 (VERDICT_FAILED) when the simulator is outside the paper's tolerance."""
    from stallscope.simulate.reproductions import REPRODUCTIONS

    if list_ or name is None:
        rows = [{"name": r.name, "title": r.title} for r in REPRODUCTIONS.values()]
        if fmt is TableOrJson.json:
            write_json({"schema": LIST_SCHEMA, "rows": rows}, output)
        else:
            render_frame(pl.DataFrame(rows), OutputFormat.table, output=output, title="reproductions")
        if name is None and not list_:
            raise typer.Exit(ExitCode.USAGE)
        return
    entry = REPRODUCTIONS.get(name)
    if entry is None:
        typer.echo(f"stallscope reproduce: unknown reproduction {name!r}; see --list", err=True)
        raise typer.Exit(ExitCode.USAGE)
    with spinner(f"reproducing {name}", quiet):
        result = entry.run()
    if fmt is TableOrJson.json:
        write_json({"schema": RESULT_SCHEMA, "name": result.name, "title": result.title, "passed": result.passed,
                    "verdict": result.verdict, "rows": result.rows}, output)
    else:
        frame = pl.DataFrame([{k: (v if isinstance(v, (int, float, bool)) or v is None else str(v)) for k, v in row.items()}
                              for row in result.rows])
        render_frame(frame, OutputFormat.table, output=output, title=result.title)
        line = ("PASS: " if result.passed else "FAIL: ") + result.verdict
        if output is None:
            typer.echo(line)
        else:
            with open(output, "a", encoding="utf-8") as out:
                out.write(line + "\n")
    if not result.passed:
        raise typer.Exit(ExitCode.VERDICT_FAILED)
