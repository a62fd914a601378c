"""The one Typer app. Commands are registered explicitly from the table below (one module each) and
imported only when invoked, so `stallscope flows` does not pay for the simulator's or the parquet
writer's imports (start-up time counts: the tool runs as a CI gate on many small files)."""

from __future__ import annotations

import importlib
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from stallscope import __version__

# name -> (module under stallscope.cli, attribute). A Typer attribute becomes a command group,
# a function becomes a command. Order here is the order `--help` lists them.
_COMMANDS: dict[str, tuple[str, str]] = {
    "analyze": ("analyze", "analyze"),
    "report": ("report", "report"),
    "flows": ("flows", "flows"),
    "decode": ("decode", "decode"),
    "simulate": ("simulate", "app"),
    "reproduce": ("reproduce", "reproduce"),
    "capture": ("capture", "app"),
    "score": ("score", "score"),
}


def load_command(name: str) -> Any:
    """Import one command's module and build its Click command (Typer vendors its own Click, so
    no `click` import here)."""
    module, attr = _COMMANDS[name]
    target = getattr(importlib.import_module(f"stallscope.cli.{module}"), attr)
    if not isinstance(target, typer.Typer):
        single = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
        single.command(name)(target)
        target = single
    command = typer.main.get_command(target)
    command.name = name
    return command


class _LazyGroup(TyperGroup):
    """Lists every command from `_COMMANDS` but imports one only when it is looked up."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(_COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return load_command(cmd_name) if cmd_name in _COMMANDS else None


app = typer.Typer(
    name="stallscope",
    cls=_LazyGroup,
    help="Why was this TCP connection slow? Reads pcap/pcapng captures and names the cause of each stall.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


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


def main() -> None:
    app()
