"""`stallscope reproduce NAME`: the simulator's numbers beside a paper's, with the verdict."""

from __future__ import annotations

from typing import Annotated, Optional

import polars as pl
import typer

from stallscope.cli.options import OutputOption, TableOrJson, TableOrJsonOption
from stallscope.exit_codes import ExitCode
from stallscope.output import OutputFormat, render_frame, write_json



def reproduce(
    name: Annotated[Optional[str], typer.Argument(help="Reproduction name (see --list).", show_default=False)] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the reproductions and exit.")] = False,
    fmt: TableOrJsonOption = TableOrJson.table,
    output: OutputOption = None,
) -> None:
    """Run a paper reproduction; exits 1 (VERDICT_FAILED) when it is outside its tolerance."""
    from stallscope.simulate.reproductions import REPRODUCTIONS

    if list_ or name is None:
        rows = [{"name": r.name, "title": r.title} for r in REPRODUCTIONS.values()]
        if fmt is TableOrJson.json:
            write_json({"reproductions": rows})
        else:
            render_frame(pl.DataFrame(rows), OutputFormat.table, title="reproductions")
        if name is None and not list_:
            raise typer.Exit(ExitCode.USAGE)
        return
    entry = REPRODUCTIONS.get(name)
    if entry is None:
        typer.echo(f"stallscope reproduce: unknown reproduction {name!r}; see --list", err=True)
        raise typer.Exit(ExitCode.USAGE)
    result = entry.run()
    if fmt is TableOrJson.json:
        write_json({"name": result.name, "title": result.title, "passed": result.passed,
                    "verdict": result.verdict, "rows": result.rows}, output)
    else:
        frame = pl.DataFrame([{k: (v if isinstance(v, (int, float, bool)) or v is None else str(v)) for k, v in row.items()}
                              for row in result.rows])
        render_frame(frame, OutputFormat.table, output=output, title=result.title)
        typer.echo(("PASS: " if result.passed else "FAIL: ") + result.verdict)
    if not result.passed:
        raise typer.Exit(ExitCode.VERDICT_FAILED)
