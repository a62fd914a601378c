"""The one Typer app. Commands are registered explicitly from the table below (one module each)."""

from __future__ import annotations

import importlib
from typing import Annotated

import typer

from stallscope import __version__

app = typer.Typer(
    name="stallscope",
    help="Why was this TCP connection slow? Reads pcap/pcapng captures and names the cause of each stall.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# name -> (module under stallscope.cli, attribute). A Typer attribute becomes a command group,
# a function becomes a command.
_COMMANDS: dict[str, tuple[str, str]] = {
    "flows": ("flows", "flows"),
    "capture": ("capture", "app"),
    "decode": ("decode", "decode"),
    "simulate": ("simulate", "app"),
    "reproduce": ("reproduce", "reproduce"),
}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"stallscope {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """stallscope: TCP stall diagnosis from packet captures."""


def _register() -> None:
    for name, (module, attr) in _COMMANDS.items():
        target = getattr(importlib.import_module(f"stallscope.cli.{module}"), attr)
        if isinstance(target, typer.Typer):
            app.add_typer(target, name=name)
        else:
            app.command(name)(target)


_register()


def main() -> None:
    app()
