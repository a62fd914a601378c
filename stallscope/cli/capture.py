"""`stallscope capture`: run a labelled scenario through emulated links, list them, or capture live."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import polars as pl
import typer

from stallscope.cli.common import spinner
from stallscope.cli.options import DebugOption, FormatOption, OutputOption, QuietOption
from stallscope.exit_codes import ExitCode
from stallscope.output import OutputFormat, render_frame

# Shell convention for a run stopped by a signal (128 + SIGINT).
INTERRUPTED = int(ExitCode.INTERRUPTED)

app = typer.Typer(help="Capture TCP traffic: labelled scenarios through an emulated link, or live.",
                  no_args_is_help=True)


def _fail(message: str, code: ExitCode) -> None:
    typer.echo(f"stallscope capture: {message}", err=True)
    raise typer.Exit(int(code))


def _known() -> dict:
    """The library's scenarios, then their variants (capture/scenarios/variants.py)."""
    from stallscope.capture.scenarios.library import SCENARIOS
    from stallscope.capture.scenarios.variants import VARIANTS

    return {**SCENARIOS, **VARIANTS}


@app.command("list")
def list_scenarios(
    variants: Annotated[bool, typer.Option("--variants", help="List the library's variants too: each scenario with "
                                           "settings its fixture never used, labelled the same.")] = False,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """List the scenario library: name, workload, expected causes (empty: a negative control)."""
    from stallscope.capture.scenarios.library import SCENARIOS

    shown = list((_known() if variants else SCENARIOS).values())
    df = pl.DataFrame(
        {
            "name": [s.name for s in shown],
            "workload": [s.workload for s in shown],
            "expected_causes": [",".join(c.value for c in s.expected) or "(negative control)" for s in shown],
            "description": [s.description for s in shown],
        }
    )
    render_frame(df, fmt, output=output, title="capture scenarios",
                 json_document={"schema": "stallscope.scenarios/1", "rows": df.to_dicts()})


@app.command("scenario")
def scenario(
    name: Annotated[str, typer.Argument(help="Scenario name (see `stallscope capture list [--variants]`).")],
    out: Annotated[Path, typer.Option("--out", help="Directory for NAME.pcap, NAME.receiver.pcap, NAME.json.")] = Path("."),
    seconds: Annotated[Optional[float], typer.Option("--seconds", help="Workload duration (default: the scenario's).")] = None,
    snaplen: Annotated[int, typer.Option("--snaplen", help="Bytes kept per packet.")] = 128,
    fmt: FormatOption = OutputFormat.table,
    quiet: QuietOption = False,
    debug: DebugOption = False,
) -> None:
    """Run one scenario in fresh network namespaces and write its captures and ground truth."""
    from stallscope.capture.netns import CommandFailed, EnvironmentUnavailable, Terminated
    from stallscope.capture.scenarios.library import SCENARIOS
    from stallscope.capture.scenarios.runner import ScenarioFailed, run_scenario

    known = _known()
    if name not in known:
        _fail(f"no scenario {name!r}; known: {', '.join(SCENARIOS)} (and their variants: "
              "`stallscope capture list --variants`)", ExitCode.USAGE)
    if seconds is not None and seconds <= 0:
        _fail("--seconds must be positive", ExitCode.USAGE)
    try:
        with spinner(f"capture scenario {name}", quiet):
            doc = run_scenario(known[name], out, seconds=seconds, snaplen=snaplen)
    except EnvironmentUnavailable as e:
        _fail(str(e), ExitCode.ENVIRONMENT)
    except (ScenarioFailed, CommandFailed) as e:
        if debug:
            raise
        _fail(f"scenario {name} failed: {e}", ExitCode.INTERNAL)
    except (Terminated, KeyboardInterrupt):
        # The topology has already been torn down by the time the exception gets here.
        typer.echo(f"stallscope capture: scenario {name} interrupted; namespaces removed", err=True)
        raise typer.Exit(INTERRUPTED)
    rows = {
        "scenario": [doc["scenario"]],
        "expected_causes": [",".join(doc["expected_causes"]) or "(negative control)"],
        "emulator_drops": [sum(doc["drops"].values())],
        "tcpdump_drops": [sum(t.get("dropped_by_kernel", 0) for t in doc["tcpdump"].values())],
        "sender_pcap": [str(Path(out) / doc["files"]["sender"])],
        "truth": [str(Path(out) / f"{name}.json")],
    }
    render_frame(pl.DataFrame(rows), fmt, title="scenario captured", json_document=doc)


@app.command("live")
def live(
    interface: Annotated[str, typer.Option("-i", "--interface", help="Interface to capture on.")],
    write: Annotated[Path, typer.Option("-w", "--write", help="Capture file to write (pcap).")],
    netns: Annotated[Optional[str], typer.Option("--netns", help="Capture inside this network namespace.")] = None,
    bpf: Annotated[Optional[str], typer.Option("--filter", help="BPF filter, e.g. 'tcp port 443'.")] = None,
    snaplen: Annotated[int, typer.Option("--snaplen", help="Bytes kept per packet.")] = 128,
    rotate: Annotated[Optional[int], typer.Option("--rotate", help="Start a new file every this many MB.")] = None,
    files: Annotated[Optional[int], typer.Option("--files", help="With --rotate: keep at most this many files.")] = None,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """Capture until Ctrl-C/SIGTERM, then print packets captured and tcpdump's own drops."""
    import os

    from stallscope.capture.live import capture_live
    from stallscope.capture.netns import EnvironmentUnavailable
    from stallscope.capture.tcpdump import TcpdumpFailed

    if files is not None and rotate is None:
        _fail("--files needs --rotate", ExitCode.USAGE)
    if os.geteuid() != 0:
        _fail("live capture needs root (or CAP_NET_RAW for tcpdump)", ExitCode.ENVIRONMENT)
    try:
        summary = capture_live(interface, write, netns=netns, bpf=bpf, snaplen=snaplen, rotate_mb=rotate,
                               files=files)
    except (EnvironmentUnavailable, TcpdumpFailed) as e:
        _fail(str(e), ExitCode.ENVIRONMENT)
    d = summary.to_json()
    d["files"] = ",".join(d["files"])
    render_frame(pl.DataFrame([d]), fmt, output=output, title="live capture",
                 json_document={"schema": "stallscope.live_capture/1", **summary.to_json()})
