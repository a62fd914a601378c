"""The one Typer app. Commands are registered explicitly from the table below (one module each) and
imported only when invoked, so `stallscope flows` does not pay for the simulator's or the parquet
writer's imports (start-up time counts: the tool runs as a CI gate on many small files)."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup, TyperOption

from stallscope import __version__
from stallscope.cli.common import guarded
from stallscope.exit_codes import ExitCode

# name -> (module under stallscope.cli, attribute). A Typer attribute becomes a command group,
# a function becomes a command. Order here is the order `--help` lists them.
_COMMANDS: dict[str, tuple[str, str]] = {
    "analyze": ("analyze", "analyze"),
    "check": ("check", "check"),
    "report": ("report", "report"),
    "flows": ("flows", "flows"),
    "decode": ("decode", "decode"),
    "simulate": ("simulate", "app"),
    "reproduce": ("reproduce", "reproduce"),
    "capture": ("capture", "app"),
    "score": ("score", "score"),
}


# Examples shown at the end of each command's --help (each runs as written from the repository root).
EXAMPLES: dict[str, list[str]] = {
    "analyze": ["stallscope analyze fixtures/nagle_4k_jumbo.pcap",
                "stallscope analyze -f json -o analysis.json fixtures/*.pcap"],
    "check": ["stallscope check fixtures/clean_bulk.pcap fixtures/nagle_4k_jumbo_nodelay.pcap --forbid nagle_delayed_ack",
              "stallscope check fixtures/atm_clean.pcap --forbid burst_loss_timeout -f junit -o check.xml"],
    "report": ["stallscope report fixtures/nagle_4k_jumbo.pcap -o report.html"],
    "flows": ["stallscope flows fixtures/clean_bulk.pcap",
              "stallscope flows -f csv fixtures/*.pcap > flows.csv"],
    "decode": ["stallscope decode fixtures/clean_bulk.pcap -o packets.parquet",
               "stallscope decode -c frame,ts_ns,seq_rel,ack_rel,payload_len -f csv fixtures/clean_bulk.pcap"],
    "simulate bulk": ["stallscope simulate bulk --preset list",
                      "stallscope simulate bulk --preset gigatcp-ti --bytes 2000000",
                      "stallscope simulate bulk --link atm140 --nagle OFF --pcap run.pcap"],
    "simulate naglemark": ["stallscope simulate naglemark --nagle MINSHALL --responses 50"],
    "reproduce": ["stallscope reproduce --list", "stallscope reproduce kung-morris"],
    "capture list": ["stallscope capture list", "stallscope capture list -f json"],
    "capture scenario": ["sudo stallscope capture scenario nagle_4k_jumbo --out /tmp/captures"],
    "capture live": ["sudo stallscope capture live -i lo -w /tmp/cap.pcap --rotate 10 --files 3"],
    "score": ["stallscope score fixtures/nagle_4k_jumbo.pcap fixtures/nagle_4k_jumbo.json"],
}


def _epilog(name: str) -> str | None:
    lines = EXAMPLES.get(name)
    if not lines:
        return None
    return "Examples:\n\n" + "\n\n".join(f"  $ {line}" for line in lines)


def load_command(name: str) -> Any:
    """Import one command's module and build its Click command (Typer vendors its own Click, so
    no `click` import here). Every command's function is wrapped by the one shared error and exit
    handler (stallscope.cli.common.guarded) and gets its examples as the help's epilog."""
    module, attr = _COMMANDS[name]
    target = getattr(importlib.import_module(f"stallscope.cli.{module}"), attr)
    if not isinstance(target, typer.Typer):
        single = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
        single.command(name, epilog=_epilog(name))(guarded(name, target))
        target = single
    else:
        for info in target.registered_commands:
            sub = info.name or info.callback.__name__
            info.callback = guarded(f"{name} {sub}", info.callback)
            if info.epilog is None:
                info.epilog = _epilog(f"{name} {sub}")
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
    add_completion=True,
    pretty_exceptions_enable=False,
)


def _flag_type(self: TyperOption, ctx: Any) -> str | None:
    """Typer (0.29) shows a boolean flag's type as `<bool>`, as if it took a value: a flag has no
    value to show."""
    if self.is_flag and not self.count and self.metavar is None:
        return None
    return _typer_display_type_rich(self, ctx)


_typer_display_type_rich = TyperOption.display_type_rich
TyperOption.display_type_rich = _flag_type  # type: ignore[method-assign]


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
    """The console script. Click's own handling of a closed pipe (help text into `| head`) exits
    1; it is mapped to the same quiet 141 the commands use, and standard output is flushed here so
    a failure at the very end is classified too."""
    from stallscope.allocator import return_large_frees
    from stallscope.cli.common import BrokenPipeWatch

    # A command runs one analysis of a whole capture: large freed arrays go back to the system.
    return_large_frees()
    try:
        with BrokenPipeWatch():
            app()
    except SystemExit as e:
        if e.code == ExitCode.BROKEN_PIPE:
            # The reader went away mid-output, with the decoder's Arrow work perhaps still in flight:
            # the interpreter's teardown then tears down Arrow's C++ thread pools under a live
            # worker, and now and then std::terminate turns 141 into SIGABRT (apache/arrow#34314;
            # one fresh-clone CI run in four here, `decode -f csv` into a closed pipe). Nothing is
            # left to write, so the process ends here, without that teardown.
            sys.stderr.flush()
            os._exit(int(ExitCode.BROKEN_PIPE))
        raise
