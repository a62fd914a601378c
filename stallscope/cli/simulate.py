"""`stallscope simulate`: runs of the reference TCP simulator. `bulk` is one bulk transfer."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import polars as pl
import typer

from stallscope.cli.options import OutputOption, SeedOption
from stallscope.exit_codes import ExitCode
from stallscope.output import OutputFormat, render_frame, write_json

app = typer.Typer(help="Run the deterministic reference TCP simulator.", no_args_is_help=True)


class OnOff(str, Enum):
    on = "on"
    off = "off"
    default = "default"


class TableOrJson(str, Enum):
    table = "table"
    json = "json"


@app.command("bulk")
def bulk(
    personality: Annotated[str, typer.Option("--personality", help="sunos41, bsd44, freebsd4, tru64, linux20 or linux.")] = "sunos41",
    receiver_personality: Annotated[Optional[str], typer.Option("--receiver-personality", help="Receiver's stack (default: --personality).")] = None,
    link: Annotated[str, typer.Option("--link", help="Link preset: atm140, oc3, ethernet10, fddi, fastethernet, gige, custom.")] = "atm140",
    mtu: Annotated[Optional[int], typer.Option("--mtu", min=68, help="Interface MTU (default: the link's).")] = None,
    mss: Annotated[Optional[int], typer.Option("--mss", min=1, help="Force this MSS (default: from the MTU and personality).")] = None,
    sndbuf: Annotated[Optional[int], typer.Option("--sndbuf", min=1, help="Socket send buffer, bytes (both hosts).")] = None,
    rcvbuf: Annotated[Optional[int], typer.Option("--rcvbuf", min=1, help="Socket receive buffer, bytes (both hosts).")] = None,
    write: Annotated[int, typer.Option("--write", min=1, help="Bytes per write() call.")] = 8192,
    read: Annotated[int, typer.Option("--read", min=1, help="Bytes per read() call.")] = 8192,
    nbytes: Annotated[int, typer.Option("--bytes", min=1, help="Bytes to transfer.")] = 16 * 1024 * 1024,
    nagle: Annotated[Optional[str], typer.Option("--nagle", help="Sender's Nagle variant (NAGLE, OFF, MINSHALL, CORK, ...); default: the personality's.")] = None,
    receiver_inference: Annotated[OnOff, typer.Option("--receiver-inference", help="Tru64 small-sender ACK inference at the receiver.")] = OnOff.default,
    cost: Annotated[str, typer.Option("--host-cost", help="Host CPU cost model: free or sun_ipx.")] = "free",
    rate: Annotated[Optional[int], typer.Option("--rate", min=1, help="Link rate, bit/s (overrides the preset).")] = None,
    delay: Annotated[Optional[int], typer.Option("--delay", min=0, help="One-way delay, ns (overrides the preset).")] = None,
    seed: SeedOption = 1,
    pcap: Annotated[Optional[Path], typer.Option("--pcap", help="Write the sender-side capture here (and <pcap>.truth.json).")] = None,
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="table or json.")] = TableOrJson.table,
    output: OutputOption = None,
) -> None:
    """One bulk transfer; prints goodput, duration and the ground-truth stalls."""
    from stallscope.simulate.nagle import NagleVariant
    from stallscope.simulate.run_bulk import BulkConfig, run_bulk

    try:
        if nagle is not None:
            nagle = NagleVariant.parse(nagle).value
        cfg = BulkConfig(
            personality=personality, receiver_personality=receiver_personality, link=link, mtu=mtu, mss=mss, sndbuf=sndbuf, rcvbuf=rcvbuf, write=write,
            read=read, bytes=nbytes, nagle=nagle, seed=seed, rate_bps=rate, delay_ns=delay, cost=cost,
            receiver_inference=None if receiver_inference is OnOff.default else receiver_inference is OnOff.on,
        )
        result = run_bulk(cfg, pcap=pcap)
    except (ValueError, KeyError) as exc:
        typer.echo(f"stallscope simulate bulk: {exc}", err=True)
        raise typer.Exit(ExitCode.USAGE) from None
    doc = result.to_json()
    if fmt is TableOrJson.json:
        write_json(doc, output)
        return
    summary = pl.DataFrame([{
        "goodput_mbit_s": doc["goodput_mbit_s"], "duration_s": doc["duration_s"], "bytes": doc["bytes"],
        "packets": doc["packets"], "retransmits": doc["retransmits"], "timeouts": doc["timeouts"],
        "stalls": len(doc["stalls"]),
    }])
    render_frame(summary, OutputFormat.table, output=output, title=f"bulk: {personality} over {link}")
    causes = pl.DataFrame(
        [{"cause": k, "count": v["count"], "total_s": round(v["total_ns"] / 1e9, 3)} for k, v in doc["stall_summary"].items()],
        schema={"cause": pl.Utf8, "count": pl.Int64, "total_s": pl.Float64},
    )
    if output is None:
        render_frame(causes, OutputFormat.table, title="stalls by cause")


try:  # the Nagle developer's command joins this group
    from stallscope.cli.simulate_naglemark import naglemark as _naglemark

    app.command("naglemark")(_naglemark)
except ImportError:  # pragma: no cover - only while that module is absent
    pass
