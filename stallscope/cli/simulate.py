"""`stallscope simulate`: runs of the reference TCP simulator. `bulk` is one bulk transfer."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import polars as pl
import typer

from stallscope.cli.impairments import AtmPolicy, JumboRelease, PmtuMode, impairments_from_options
from stallscope.cli.options import OUTPUT_PANEL, OutputOption, TableOrJson, TableOrJsonOption
from stallscope.simulate.slow_reader import reader_cost
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


class Tap(str, Enum):
    sender = "sender"
    receiver = "receiver"



HOSTS, APP, LINK, PATH, RUN = "Hosts", "Application", "Link", "Path impairments", "Run"


def _opt(*names: str, panel: str, **kw):
    return typer.Option(*names, rich_help_panel=panel, **kw)


# BulkConfig fields a preset may set, by the command-line parameter that also sets them.
_CONFIG_PARAMS = {"personality": "personality", "link": "link", "mtu": "mtu", "sndbuf": "sndbuf", "rcvbuf": "rcvbuf",
                  "write": "write", "read": "read", "nbytes": "bytes", "route_mtu": "route_mtu"}


def _given(ctx: typer.Context) -> set[str]:
    """The parameters the user set (command line or environment), as opposed to left at default."""
    from typer._click.core import ParameterSource

    return {name for name in ctx.params
            if ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)}


@app.command("bulk")
def bulk(
    ctx: typer.Context,
    preset: Annotated[Optional[str], _opt("--preset", panel=RUN, help="A paper's setting by name (--preset list shows them); options given beside it override it.")] = None,
    personality: Annotated[str, _opt("--personality", panel=HOSTS, help="sunos41, bsd44, freebsd4, tru64, linux20 or linux.")] = "sunos41",
    receiver_personality: Annotated[Optional[str], _opt("--receiver-personality", panel=HOSTS, help="Receiver's stack (default: --personality).")] = None,
    link: Annotated[str, _opt("--link", panel=LINK, help="Link preset: atm140, oc3, ethernet10, fddi, fastethernet, gige, custom.")] = "atm140",
    mtu: Annotated[Optional[int], _opt("--mtu", panel=LINK, min=68, help="Interface MTU, bytes (default: the link's).")] = None,
    mss: Annotated[Optional[int], _opt("--mss", panel=HOSTS, min=1, help="Force this MSS, bytes (default: from the MTU and personality).")] = None,
    sndbuf: Annotated[Optional[int], _opt("--sndbuf", panel=HOSTS, min=1, help="Socket send buffer, bytes (both hosts).")] = None,
    rcvbuf: Annotated[Optional[int], _opt("--rcvbuf", panel=HOSTS, min=1, help="Socket receive buffer, bytes (both hosts).")] = None,
    write: Annotated[int, _opt("--write", panel=APP, min=1, help="Bytes per write() call.")] = 8192,
    read: Annotated[int, _opt("--read", panel=APP, min=1, help="Bytes per read() call.")] = 8192,
    nbytes: Annotated[int, _opt("--bytes", panel=APP, min=1, help="Bytes to transfer.")] = 16 * 1024 * 1024,
    reply: Annotated[int, _opt("--reply", panel=APP, min=0, help="Request/response: each write is a message the receiver answers with this many bytes before the next is written (0: plain bulk).")] = 0,
    think_ms: Annotated[float, _opt("--think-ms", panel=APP, min=0.0, help="The writer's pause between writes, ms (application idle time).")] = 0.0,
    writes: Annotated[Optional[Path], _opt("--writes", panel=APP, help="Scheduled writes instead of --write: a JSON list of [at_ns, nbytes] pairs, at_ns from the connection's establishment; each write is issued then, or when the previous one completed if later. --bytes defaults to their sum.")] = None,
    read_rate: Annotated[Optional[int], _opt("--read-rate", panel=APP, min=1, help="Slow reader: the receiving application copies at most this many bit/s out of its socket (read() cost on top of --host-cost).")] = None,
    host_mtu: Annotated[Optional[int], _opt("--host-mtu", panel=HOSTS, min=68, help="Both hosts' interface MTU when larger than the path's: the MSS they advertise comes from it.")] = None,
    route_mtu: Annotated[Optional[int], _opt("--route-mtu", panel=HOSTS, min=68, help="The sender's route MTU when it differs from the interface's (GigaTCP's cloned route: MSS used from it, MSS advertised from the interface).")] = None,
    nagle: Annotated[Optional[str], _opt("--nagle", panel=HOSTS, help="Sender's Nagle variant (NAGLE, OFF, MINSHALL, CORK, ...); default: the personality's.")] = None,
    receiver_inference: Annotated[OnOff, _opt("--receiver-inference", panel=HOSTS, help="Tru64 small-sender ACK inference at the receiver.")] = OnOff.default,
    cost: Annotated[str, _opt("--host-cost", panel=HOSTS, help="Host CPU cost model: free or sun_ipx.")] = "free",
    rate: Annotated[Optional[int], _opt("--rate", panel=LINK, min=1, help="Link rate, bit/s (overrides the link preset).")] = None,
    delay_ms: Annotated[Optional[float], _opt("--delay-ms", panel=LINK, min=0.0, help="One-way delay, ms (overrides the link preset).")] = None,
    delay: Annotated[Optional[int], _opt("--delay", panel=LINK, min=0, help="One-way delay in ns (the same as --delay-ms, finer).")] = None,
    loss: Annotated[Optional[float], _opt("--loss", panel=PATH, min=0.0, max=1.0, help="Forward random loss probability.")] = None,
    reverse_loss: Annotated[Optional[float], _opt("--reverse-loss", panel=PATH, min=0.0, max=1.0, help="Reverse (ACK path) random loss probability.")] = None,
    gilbert: Annotated[Optional[str], _opt("--gilbert", panel=PATH, help="Forward Gilbert-Elliott loss: P_GB,P_BG,LOSS_GOOD,LOSS_BAD (state change chances per packet, loss in each state).")] = None,
    drop_nth: Annotated[Optional[list[int]], _opt("--drop-nth", panel=PATH, min=1, help="Lose exactly the n-th forward packet (repeatable; 1 = the SYN).")] = None,
    drop_segment: Annotated[Optional[list[str]], _opt("--drop-segment", panel=PATH, help="S[:K]: lose the K-th transmission (default 1) of the data segment starting at stream byte S (0 = the first data byte); repeatable.")] = None,
    drop_ack: Annotated[Optional[list[str]], _opt("--drop-ack", panel=PATH, help="A[:K]: lose the K-th pure ACK (default 1) acknowledging stream bytes up to A; repeatable.")] = None,
    data_only: Annotated[bool, _opt("--loss-data-only", panel=PATH, help="--loss/--drop-nth count and lose data segments only.")] = False,
    pmtu: Annotated[Optional[int], _opt("--pmtu", panel=PATH, min=68, help="A hop with this MTU on the forward path.")] = None,
    pmtu_mode: Annotated[PmtuMode, _opt("--pmtu-mode", panel=PATH, help="The hop answers with ICMP or silently drops (black hole).")] = PmtuMode.icmp,
    mtu_probing: Annotated[int, _opt("--mtu-probing", panel=HOSTS, min=0, max=1, help="Linux sender's tcp_mtu_probing: 1 = black-hole detection.")] = 0,
    sack: Annotated[OnOff, _opt("--sack", panel=HOSTS, help="Both hosts offer SACK (RFC 2018) and recover by RFC 6675 (default: the personality's; on for linux).")] = OnOff.default,
    congestion: Annotated[Optional[Congestion], _opt("--congestion", panel=HOSTS, help="The sender's congestion control, as TCP_CONGESTION (default: the personality's; cubic for linux, which alone has both).")] = None,
    jumbo_slots: Annotated[Optional[int], _opt("--jumbo-slots", panel=PATH, min=1, help="Receiving NIC's pool of jumbo receive slots; a large frame finding none free is dropped, small frames pass.")] = None,
    jumbo_release: Annotated[Optional[JumboRelease], _opt("--jumbo-release", panel=PATH, help="When a slot comes back: acked (when the cumulative ACK covers its data; default) or timer (--jumbo-replenish-us after arrival).")] = None,
    jumbo_replenish_us: Annotated[Optional[float], _opt("--jumbo-replenish-us", panel=PATH, min=0.0, help="Time a slot takes to come back, us: after its frame arrived (--jumbo-release timer) or after the ACK released it (acked).")] = None,
    jumbo_min_frame: Annotated[Optional[int], _opt("--jumbo-min-frame", panel=PATH, min=1, help="Smallest frame that needs a jumbo slot, bytes (default 1519: anything above a standard Ethernet frame).")] = None,
    atm_buffer_cells: Annotated[Optional[int], _opt("--atm-buffer-cells", panel=PATH, min=1, help="A congested ATM switch port on the forward path: its buffer, in 53-byte cells.")] = None,
    atm_switch_buffer: Annotated[Optional[int], _opt("--atm-switch-buffer", panel=PATH, min=48, help="The same buffer in bytes of cell payload (48 per cell); --atm-buffer-cells is the usual unit.")] = None,
    atm_out_rate: Annotated[Optional[int], _opt("--atm-out-rate", panel=PATH, min=424, help="That port's output rate, bit/s of cells.")] = None,
    atm_policy: Annotated[Optional[AtmPolicy], _opt("--atm-policy", panel=PATH, help="The switch's discard policy: none, ppd (partial packet discard) or epd (early packet discard). Default none.")] = None,
    atm_epd_threshold_cells: Annotated[Optional[int], _opt("--atm-epd-threshold-cells", panel=PATH, min=0, help="EPD: refuse a new PDU when more than this many cells are queued (default: the buffer's size less one PDU).")] = None,
    seed: Annotated[int, _opt("--seed", panel=RUN, help="Seed for every random choice; the same seed gives the same output.")] = 1,
    pcap: Annotated[Optional[Path], _opt("--pcap", panel=OUTPUT_PANEL, help="Write the capture here (and <pcap>.truth.json), taken beside the sender unless --tap receiver.")] = None,
    tap: Annotated[Tap, _opt("--tap", panel=OUTPUT_PANEL, help="Where the --pcap capture is taken: beside the sender (what it sent, what reached it) or the receiver (its ACKs as they leave, the data as it arrives).")] = Tap.sender,
    fmt: TableOrJsonOption = TableOrJson.table,
    output: OutputOption = None,
) -> None:
    """One bulk transfer; prints goodput, duration and the ground-truth stalls.

    The path options (--loss, --pmtu, --jumbo-slots, --atm-buffer-cells, ...) add impairments to the
    link; --preset NAME starts from a paper's setting (list them with --preset list)."""
    from stallscope.simulate import presets
    from stallscope.simulate.nagle import NagleVariant
    from stallscope.simulate.run_bulk import BulkConfig, run_bulk

    if preset == "list":
        _list_presets(fmt, output)
        return
    given = _given(ctx)
    try:
        chosen = presets.get(preset) if preset is not None else None
        if nagle is not None:
            nagle = NagleVariant.parse(nagle).value
        if delay is not None and delay_ms is not None:
            raise ValueError("give the delay once: --delay-ms or --delay (ns)")
        cli = {"personality": personality, "link": link, "mtu": mtu, "sndbuf": sndbuf, "rcvbuf": rcvbuf,
               "write": write, "read": read, "nbytes": nbytes, "route_mtu": route_mtu}
        fields = {field: (chosen.config[field] if chosen is not None and field in chosen.config and name not in given
                          else cli[name]) for name, field in _CONFIG_PARAMS.items()}
        schedule = _read_writes(writes) if writes is not None else None
        if schedule is not None and "nbytes" not in given:
            fields["bytes"] = sum(n for _, n in schedule if isinstance(n, int))
        cfg = BulkConfig(
            **fields, receiver_personality=receiver_personality, mss=mss, nagle=nagle, seed=seed, rate_bps=rate,
            delay_ns=delay if delay is not None else None if delay_ms is None else round(delay_ms * 1_000_000),
            cost=reader_cost(cost, read_rate), reply=reply, think_ns=round(think_ms * 1_000_000), host_mtu=host_mtu,
            receiver_inference=None if receiver_inference is OnOff.default else receiver_inference is OnOff.on,
            mtu_probing=mtu_probing, sack=None if sack is OnOff.default else sack is OnOff.on,
            congestion=congestion.value if congestion is not None else None, writes=schedule, tap=tap.value,
        )
        impairments = impairments_from_options(
            loss=loss, reverse_loss=reverse_loss, drop_nth=drop_nth, data_only=data_only, pmtu=pmtu,
            pmtu_mode=pmtu_mode, jumbo_slots=jumbo_slots, atm_switch_buffer=atm_switch_buffer,
            atm_out_rate=atm_out_rate, atm_policy=atm_policy, gilbert=gilbert,
            jumbo_replenish_us=jumbo_replenish_us, jumbo_release=jumbo_release, jumbo_min_frame=jumbo_min_frame,
            atm_buffer_cells=atm_buffer_cells, atm_epd_threshold_cells=atm_epd_threshold_cells,
            preset=chosen.impairments if chosen is not None else None,
        )
        for key, option, values in (("drop_segments", "--drop-segment", drop_segment), ("drop_acks", "--drop-ack", drop_ack)):
            if values:
                impairments = {**(impairments or {}), key: tuple(_offset_k(option, v) for v in values)}
        result = run_bulk(cfg, pcap=pcap, impairments=impairments)
    except (ValueError, KeyError, TypeError) as exc:
        typer.echo(f"stallscope simulate bulk: {str(exc).strip(chr(34) + chr(39))}", err=True)
        raise typer.Exit(ExitCode.USAGE) from None
    doc = result.to_json()
    if fmt is TableOrJson.json:
        write_json({"schema": JSON_SCHEMA, "preset": preset, **doc}, output)
        return
    summary = pl.DataFrame([{
        "goodput_mbit_s": doc["goodput_mbit_s"], "duration_s": doc["duration_s"], "bytes": doc["bytes"],
        "packets": doc["packets"], "retransmits": doc["retransmits"], "timeouts": doc["timeouts"],
        "stalls": len(doc["stalls"]), "drops": sum(_count(v) for v in doc["drops"].values()),
    }])
    title = f"bulk: {cfg.personality} over {cfg.link}" + (f" (preset {preset})" if preset else "")
    render_frame(summary, OutputFormat.table, output=output, title=title)
    causes = pl.DataFrame(
        [{"cause": k, "count": v["count"], "total_s": round(v["total_ns"] / 1e9, 3)} for k, v in doc["stall_summary"].items()],
        schema={"cause": pl.Utf8, "count": pl.Int64, "total_s": pl.Float64},
    )
    if output is None:
        render_frame(causes, OutputFormat.table, title="stalls by cause")


def _read_writes(path: Path) -> tuple[tuple[int, int], ...]:
    """--writes FILE: a JSON list of [at_ns, nbytes] pairs (checked by the simulator's validation)."""
    import json

    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"--writes {path}: {exc}") from None
    if not isinstance(doc, list) or not all(isinstance(w, list) and len(w) == 2 for w in doc):
        raise ValueError(f"--writes {path}: expected a JSON list of [at_ns, nbytes] pairs")
    return tuple((w[0], w[1]) for w in doc)


def _offset_k(option: str, text: str) -> tuple[int, int]:
    """S[:K] of --drop-segment / --drop-ack (K defaults to 1)."""
    offset, _, k = text.partition(":")
    try:
        return int(offset), int(k) if k else 1
    except ValueError:
        raise ValueError(f"{option} {text!r}: expected OFFSET or OFFSET:K (integers)") from None


def _count(value) -> int:
    if isinstance(value, dict):
        return sum(_count(v) for v in value.values())
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _list_presets(fmt: TableOrJson, output: Path | None) -> None:
    from stallscope.simulate.presets import PRESETS

    rows = [{"name": p.name, "source": p.source, "shows": p.shows, "settings": p.settings()} for p in PRESETS.values()]
    if fmt is TableOrJson.json:
        write_json({"schema": "stallscope.presets/1", "rows": rows}, output)
    else:
        render_frame(pl.DataFrame(rows), OutputFormat.table, output=output, title="simulate bulk presets")


try:  # the Nagle developer's command joins this group
    from stallscope.cli.simulate_naglemark import naglemark as _naglemark

    app.command("naglemark")(_naglemark)
except ImportError:  # pragma: no cover - only while that module is absent
    pass
