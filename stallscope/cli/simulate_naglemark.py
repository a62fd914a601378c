"""`stallscope simulate naglemark`: one naglemark trial (Mogul & Minshall §6) on the simulator."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import polars as pl
import typer

from stallscope.cli.options import OUTPUT_PANEL, OutputOption, SeedOption, TableOrJson, TableOrJsonOption

HOSTS, LINK, APP = "Hosts", "Link", "Application"
from stallscope.exit_codes import ExitCode
from stallscope.output import OutputFormat, dumps_json, render_frame


class OnOff(str, Enum):
    on = "on"
    off = "off"



def naglemark(
    personality: Annotated[str, typer.Option("--personality", rich_help_panel=HOSTS, help="TCP personality of both hosts (e.g. tru64).")] = "tru64",
    link: Annotated[str, typer.Option("--link", rich_help_panel=LINK, help="Link preset: ethernet10 or fddi (any preset works).")] = "ethernet10",
    nagle: Annotated[str, typer.Option("--nagle", rich_help_panel=HOSTS, help="Server's Nagle variant: NAGLE, OFF, MINSHALL, MSMV, EOM, E+M, MIN+MORE, DLDET, E+M+M, E+M+D, BORMAN, UNACKED-MSS, CORK.")] = "NAGLE",
    app_buf: Annotated[int, typer.Option("--app-buf", rich_help_panel=APP, min=1, help="Server write() size in bytes.")] = 4096,
    sockbuf: Annotated[int, typer.Option("--sockbuf", rich_help_panel=HOSTS, min=1, help="Server socket send buffer in bytes.")] = 16384,
    trial: Annotated[str, typer.Option("--trial", rich_help_panel=APP, help="s, S (sequential lengths), r, R (random); lower case = one connection per request.")] = "S",
    receiver_inference: Annotated[OnOff, typer.Option("--receiver-inference", rich_help_panel=HOSTS, help="Client's Tru64 small-sender ACK inference (Mogul §9).")] = OnOff.off,
    responses: Annotated[int, typer.Option("--responses", rich_help_panel=APP, min=1, max=1000, help="Responses per trial (1000 in the paper).")] = 1000,
    think_ms: Annotated[float, typer.Option("--think-ms", rich_help_panel=APP, min=0.0, help="Client's time between a response's last byte and its next request, never part of a sample (the Mogul reproductions use a calibrated value).")] = 0.0,
    seed: SeedOption = 0,
    pcap: Annotated[Optional[Path], typer.Option("--pcap", rich_help_panel=OUTPUT_PANEL, help="Write the server's capture here (the data sender's side) and its ground truth as <pcap>.truth.json (stallscope.ground_truth/1); the same trial, recorded.")] = None,
    fmt: TableOrJsonOption = TableOrJson.table,
    output: OutputOption = None,
) -> None:
    """Run one naglemark trial and print its score and each response's elapsed time."""
    from stallscope.simulate.apps import naglemark as nm
    from stallscope.simulate.nagle import NagleVariant
    from stallscope.simulate.reproductions.mogul import TrialSpec, trial_lengths

    try:
        variant = NagleVariant.parse(nagle)
        trial_type = nm.TrialType(trial)
    except ValueError as exc:
        typer.echo(f"error: {exc}" if "Nagle" in str(exc) else f"error: --trial must be one of s, S, r, R (got {trial!r})", err=True)
        raise typer.Exit(ExitCode.USAGE) from None
    spec = TrialSpec(link, variant, app_buf, sockbuf, trial_type, seed, responses, personality, receiver_inference is OnOff.on)
    think_ns = round(think_ms * 1_000_000)
    try:
        if pcap is not None:
            from stallscope.simulate.apps.naglemark_capture import run_naglemark_capture

            capture = run_naglemark_capture(
                personality=personality, link=link, variant=variant, sockbuf=sockbuf, app_buf=app_buf,
                trial=trial_type, lengths=trial_lengths(spec), seed=seed,
                receiver_inference=receiver_inference is OnOff.on, think_ns=think_ns, pcap=pcap,
            )
            result = capture.result
        else:
            result = nm.run_trial(personality=personality, link=link, variant=variant, sockbuf=sockbuf,
                                  app_buf=app_buf, trial=trial_type, lengths=trial_lengths(spec), seed=seed,
                                  receiver_inference=receiver_inference is OnOff.on, think_ns=think_ns)
    except (KeyError, ValueError) as exc:
        typer.echo(f"error: {exc.args[0] if isinstance(exc, KeyError) else exc}", err=True)
        raise typer.Exit(ExitCode.USAGE) from None
    rate = result.raw_rate_bps
    rows = [
        {"length": s.length, "elapsed_ns": s.elapsed_ns, "cutoff_ns": nm.cutoff_ns(s.length, rate),
         "delayed": s.elapsed_ns > nm.cutoff_ns(s.length, rate)}
        for s in result.samples
    ]
    if fmt is TableOrJson.json:
        doc = {
            "schema": "stallscope.naglemark/2",
            "parameters": {
                "personality": personality, "link": link, "nagle": variant.value, "app_buf": app_buf,
                "sockbuf": sockbuf, "trial": trial_type.value, "receiver_inference": receiver_inference.value,
                "responses": responses, "seed": seed, "raw_rate_bps": rate, "think_ns": think_ns,
            },
            "score_pct": result.score_pct,
            "rows": [{"length": r["length"], "elapsed_ns": r["elapsed_ns"]} for r in rows],
        }
        text = dumps_json(doc) + "\n"
        if output is None:
            typer.echo(text, nl=False)
        else:
            output.write_text(text)
        return
    title = (f"naglemark {variant.value} {link} app_buf={app_buf} sockbuf={sockbuf} trial={trial_type.value}: "
             f"score {result.score_pct:.1f} %")
    render_frame(pl.DataFrame(rows), OutputFormat.table, output=output, title=title)
