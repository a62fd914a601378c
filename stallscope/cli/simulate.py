"""`stallscope simulate`: runs of the reference TCP simulator. `bulk` is one bulk transfer."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import polars as pl
import typer

from stallscope.cli.impairments import AtmPolicy, PmtuMode, impairments_from_options
from stallscope.simulate.slow_reader import reader_cost
from stallscope.cli.options import OutputOption, SeedOption, TableOrJson, TableOrJsonOption
from stallscope.exit_codes import ExitCode
from stallscope.output import OutputFormat, render_frame, write_json

JSON_SCHEMA = "stallscope.simulation/1"

app = typer.Typer(help="Run the deterministic reference TCP simulator.", no_args_is_help=True)


class OnOff(str, Enum):
    on = "on"
    off = "off"
    default = "default"


class Congestion(str, Enum):
    reno = "reno"
    cubic = "cubic"



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
    reply: Annotated[int, typer.Option("--reply", min=0, help="Request/response: each write is a message the receiver answers with this many bytes before the next is written (0: plain bulk).")] = 0,
    think_ms: Annotated[float, typer.Option("--think-ms", min=0.0, help="The writer's pause between writes (application idle time).")] = 0.0,
    read_rate: Annotated[Optional[int], typer.Option("--read-rate", min=1, help="Slow reader: the receiving application copies at most this many bit/s out of its socket (read() cost on top of --host-cost).")] = None,
    host_mtu: Annotated[Optional[int], typer.Option("--host-mtu", min=68, help="Both hosts' interface MTU when larger than the path's: the MSS they advertise comes from it.")] = None,
    nagle: Annotated[Optional[str], typer.Option("--nagle", help="Sender's Nagle variant (NAGLE, OFF, MINSHALL, CORK, ...); default: the personality's.")] = None,
    receiver_inference: Annotated[OnOff, typer.Option("--receiver-inference", help="Tru64 small-sender ACK inference at the receiver.")] = OnOff.default,
    cost: Annotated[str, typer.Option("--host-cost", help="Host CPU cost model: free or sun_ipx.")] = "free",
    rate: Annotated[Optional[int], typer.Option("--rate", min=1, help="Link rate, bit/s (overrides the preset).")] = None,
    delay: Annotated[Optional[int], typer.Option("--delay", min=0, help="One-way delay, ns (overrides the preset).")] = None,
    loss: Annotated[Optional[float], typer.Option("--loss", min=0.0, max=1.0, help="Forward random loss probability.")] = None,
    reverse_loss: Annotated[Optional[float], typer.Option("--reverse-loss", min=0.0, max=1.0, help="Reverse (ACK path) random loss probability.")] = None,
    gilbert: Annotated[Optional[str], typer.Option("--gilbert", help="Forward Gilbert-Elliott loss: P_GB,P_BG,LOSS_GOOD,LOSS_BAD (state change chances per packet, loss in each state).")] = None,
    drop_nth: Annotated[Optional[list[int]], typer.Option("--drop-nth", min=1, help="Lose exactly the n-th forward packet (repeatable; 1 = the SYN).")] = None,
    data_only: Annotated[bool, typer.Option("--loss-data-only", help="--loss/--drop-nth count and lose data segments only.")] = False,
    pmtu: Annotated[Optional[int], typer.Option("--pmtu", min=68, help="A hop with this MTU on the forward path.")] = None,
    pmtu_mode: Annotated[PmtuMode, typer.Option("--pmtu-mode", help="The hop answers with ICMP or silently drops (black hole).")] = PmtuMode.icmp,
    mtu_probing: Annotated[int, typer.Option("--mtu-probing", min=0, max=1, help="Linux sender's tcp_mtu_probing: 1 = black-hole detection.")] = 0,
    sack: Annotated[OnOff, typer.Option("--sack", help="Both hosts offer SACK (RFC 2018) and recover by RFC 6675 (default: the personality's; on for linux).")] = OnOff.default,
    congestion: Annotated[Optional[Congestion], typer.Option("--congestion", help="The sender's congestion control, as TCP_CONGESTION (default: the personality's; cubic for linux, which alone has both).")] = None,
    jumbo_slots: Annotated[Optional[int], typer.Option("--jumbo-slots", min=1, help="Receiving NIC's pool of jumbo receive slots.")] = None,
    atm_switch_buffer: Annotated[Optional[int], typer.Option("--atm-switch-buffer", min=48, help="A congested ATM switch port: its buffer, bytes of cell payload.")] = None,
    atm_out_rate: Annotated[Optional[int], typer.Option("--atm-out-rate", min=424, help="That port's output rate, bit/s.")] = None,
    atm_policy: Annotated[AtmPolicy, typer.Option("--atm-policy", help="The switch's discard policy: none, ppd or epd.")] = AtmPolicy.none,
    seed: SeedOption = 1,
    pcap: Annotated[Optional[Path], typer.Option("--pcap", help="Write the sender-side capture here (and <pcap>.truth.json).")] = None,
    fmt: TableOrJsonOption = TableOrJson.table,
    output: OutputOption = None,
) -> None:
    """One bulk transfer; prints goodput, duration and the ground-truth stalls. The path options
    (--loss, --pmtu, --jumbo-slots, --atm-switch-buffer, ...) add impairments to the link."""
    from stallscope.simulate.nagle import NagleVariant
    from stallscope.simulate.run_bulk import BulkConfig, run_bulk

    try:
        if nagle is not None:
            nagle = NagleVariant.parse(nagle).value
        cfg = BulkConfig(
            personality=personality, receiver_personality=receiver_personality, link=link, mtu=mtu, mss=mss, sndbuf=sndbuf, rcvbuf=rcvbuf, write=write,
            read=read, bytes=nbytes, nagle=nagle, seed=seed, rate_bps=rate, delay_ns=delay,
            cost=reader_cost(cost, read_rate), reply=reply, think_ns=round(think_ms * 1_000_000), host_mtu=host_mtu,
            receiver_inference=None if receiver_inference is OnOff.default else receiver_inference is OnOff.on,
            mtu_probing=mtu_probing, sack=None if sack is OnOff.default else sack is OnOff.on,
            congestion=congestion.value if congestion is not None else None,
        )
        impairments = impairments_from_options(
            loss=loss, reverse_loss=reverse_loss, drop_nth=drop_nth, data_only=data_only, pmtu=pmtu,
            pmtu_mode=pmtu_mode, jumbo_slots=jumbo_slots, atm_switch_buffer=atm_switch_buffer,
            atm_out_rate=atm_out_rate, atm_policy=atm_policy, gilbert=gilbert,
        )
        result = run_bulk(cfg, pcap=pcap, impairments=impairments)
    except (ValueError, KeyError, TypeError) as exc:
        typer.echo(f"stallscope simulate bulk: {exc}", err=True)
        raise typer.Exit(ExitCode.USAGE) from None
    doc = result.to_json()
    if fmt is TableOrJson.json:
        write_json({"schema": JSON_SCHEMA, **doc}, output)
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
