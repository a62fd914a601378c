"""One bulk transfer between two simulated hosts over a named path, with taps at the sender.

Returns goodput, duration, the ground-truth stalls and the packet records; optionally writes a
pcap and the ground truth JSON beside it (`<pcap>.truth.json`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any

from .engine import NS_PER_MS, NS_PER_S, Simulator
from .ground_truth import GroundTruth, Stall
from .links.drops import DropLog
from .links.presets import LINK_PRESETS, make_path
from .links.tap import Tap
from .loss_attribution import make_loss_classifier
from .nagle import NagleVariant
from .segment import Segment
from .apps.bulk import BulkReader, BulkWriter
from .tcp.costs import COST_MODELS, HostCost
from .tcp import rules
from .tcp.host import Host
from .tcp.personality import get_personality

SENDER_ADDR, RECEIVER_ADDR = "10.0.0.1", "10.0.0.2"
SENDER_PORT, RECEIVER_PORT = 40000, 5001
# Free-running clocks of the two hosts start at seeded phases, as two machines booted apart.
MAX_SIM_NS = 4 * 3600 * NS_PER_S


@dataclass(frozen=True)
class BulkConfig:
    personality: str = "sunos41"
    link: str = "atm140"
    mtu: int | None = None
    mss: int | None = None
    sndbuf: int | None = None
    rcvbuf: int | None = None
    write: int = 8192
    read: int = 8192
    bytes: int = 16 * 1024 * 1024
    nagle: str | None = None
    receiver_inference: bool | None = None
    seed: int = 1
    rate_bps: int | None = None
    delay_ns: int | None = None
    queue_bytes: int | None = None
    cost: str | HostCost = "free"
    receiver_personality: str | None = None
    receiver_nagle: str | None = None
    think_ns: int = 0
    reply: int = 0  # > 0: request/response; each write is a message answered by `reply` bytes
    route_mtu: int | None = None
    advertised_mss: int | None = None
    # Interface MTU of both hosts when larger than the path's: each advertises its MSS from it
    # (tcp_mssopt), so a sender trusting the offer sends segments the path cannot carry.
    host_mtu: int | None = None
    # The sender's net.ipv4.tcp_mtu_probing (Linux personalities): 1 = black-hole detection.
    mtu_probing: int = 0
    # Both hosts offer SACK in the handshake (net.ipv4.tcp_sack); None: the personality's default.
    sack: bool | None = None
    # The sender's congestion control (TCP_CONGESTION, modern Linux): "reno" or "cubic"; None: the
    # personality's (cubic for linux).
    congestion: str | None = None

    def host_cost(self) -> HostCost:
        if isinstance(self.cost, HostCost):
            return self.cost
        try:
            return COST_MODELS[self.cost]
        except KeyError:
            raise ValueError(f"unknown host cost model {self.cost!r}; expected one of {', '.join(COST_MODELS)}") from None


@dataclass
class BulkResult:
    config: BulkConfig
    goodput_mbit_s: float
    duration_s: float
    duration_ns: int
    bytes: int
    completed: bool
    stalls: list[Stall]
    packets: int
    retransmits: int
    timeouts: int
    events: int
    ground_truth: GroundTruth
    records: list[tuple[int, Segment]] = field(repr=False, default_factory=list)
    path_inputs: tuple[Any, Any] | None = field(repr=False, default=None)
    # The sender gave up after its maximum number of retransmissions and reset the connection.
    aborted: bool = False
    aborted_at_ns: int | None = None
    # Every packet the path threw away (links/drops.py Drop), in log order: what the truth's loss
    # causes are checked against.
    drops: list[Any] = field(repr=False, default_factory=list)

    def to_json(self) -> dict[str, Any]:
        truth = self.ground_truth.to_json()
        return {
            "goodput_mbit_s": round(self.goodput_mbit_s, 4),
            "duration_s": round(self.duration_s, 6),
            "bytes": self.bytes,
            "completed": self.completed,
            "aborted": self.aborted,
            "packets": self.packets,
            "retransmits": self.retransmits,
            "timeouts": self.timeouts,
            "events": self.events,
            "stall_summary": stall_summary(self.stalls),
            "stalls": truth["stalls"],
            "drops": truth["drops"],
            "parameters": truth["parameters"],
        }


def stall_summary(stalls: list[Stall]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for s in stalls:
        key = s.cause.value + (f"/{s.detail}" if s.detail else "")
        d = out.setdefault(key, {"count": 0, "total_ns": 0})
        d["count"] += 1
        d["total_ns"] += s.duration_ns
    return dict(sorted(out.items()))


def path_parameters(cfg: BulkConfig) -> dict[str, Any]:
    """The preset's rate, delay and MTU with the run's overrides."""
    preset = LINK_PRESETS.get(cfg.link)
    if preset is None:
        raise ValueError(f"unknown link {cfg.link!r}; expected one of {', '.join(sorted(LINK_PRESETS))}")
    return {
        "rate_bps": cfg.rate_bps if cfg.rate_bps is not None else preset.rate_bps,
        "delay_ns": cfg.delay_ns if cfg.delay_ns is not None else preset.delay_ns,
        "mtu": cfg.mtu if cfg.mtu is not None else preset.mtu,
    }


def impairment_parameters(impairments: dict[str, Any] | None) -> dict[str, Any]:
    """The run's make_path impairments as JSON values for the ground truth (what a scorer needs to
    know was injected); callbacks and logs passed in by the caller are left out."""
    out: dict[str, Any] = {}
    for key, value in sorted((impairments or {}).items()):
        if key in ("icmp_sink", "drop_log") or callable(value):
            continue
        if is_dataclass(value) and not isinstance(value, type):
            value = asdict(value)
        elif isinstance(value, tuple):
            value = list(value)
        out[key] = value
    return out


def run_bulk(cfg: BulkConfig, pcap: Path | None = None, *, impairments: dict[str, Any] | None = None,
             engine: str = "auto") -> BulkResult:
    """Run one transfer. `impairments` go to make_path (loss, atm_switch, jumbo_slots, pmtu_mtu...);
    the built path inputs are kept on the result as `path_inputs` for their counters.
    `engine`: "auto" runs the identical native core when it supports the config and is built,
    "python" forces this code, "native" requires the native core (simulate/native_core.py)."""
    from . import native_core

    if native_core.choose(engine, cfg, impairments):
        result = native_core.run_bulk_native(cfg, impairments)
        if pcap is not None:
            write_outputs(result, Path(pcap), path_parameters(cfg))
        return result
    sim = Simulator(cfg.seed)
    send_p = get_personality(cfg.personality)
    recv_p = get_personality(cfg.receiver_personality or cfg.personality)
    cost = cfg.host_cost()
    path = path_parameters(cfg)
    params = {k: (v if not isinstance(v, HostCost) else asdict(v)) for k, v in asdict(cfg).items()}
    params["mtu"] = path["mtu"]
    params["impairments"] = impairment_parameters(impairments)
    gt = GroundTruth(parameters=params)
    drop_log = DropLog(gt)
    classify = make_loss_classifier(drop_log)
    rtt_ns = 2 * path["delay_ns"]
    threshold = max(10 * NS_PER_MS, 2 * rtt_ns)
    nagle = NagleVariant.parse(cfg.nagle) if cfg.nagle else None
    host_mtu = cfg.host_mtu if cfg.host_mtu is not None else path["mtu"]
    sender = Host(
        sim, "sender", SENDER_ADDR, SENDER_PORT, send_p, mtu=host_mtu, sndbuf=cfg.sndbuf, rcvbuf=cfg.rcvbuf,
        mss=cfg.mss, nagle=nagle, cost=cost, ground_truth=gt, loss_classifier=classify,
        stall_threshold_ns=threshold, tick_phase_ns=sim.rng.randrange(NS_PER_S), uid_base=0,
        route_mtu=cfg.route_mtu, advertised_mss=cfg.advertised_mss, mtu_probing=cfg.mtu_probing, sack=cfg.sack,
        congestion=cfg.congestion,
    )
    receiver = Host(
        sim, "receiver", RECEIVER_ADDR, RECEIVER_PORT, recv_p, mtu=host_mtu, sndbuf=cfg.sndbuf,
        rcvbuf=cfg.rcvbuf, mss=cfg.mss, nagle=NagleVariant.parse(cfg.receiver_nagle) if cfg.receiver_nagle else None,
        receiver_inference=cfg.receiver_inference, cost=cost, ground_truth=gt, loss_classifier=classify,
        stall_threshold_ns=threshold, tick_phase_ns=sim.rng.randrange(NS_PER_S), uid_base=1 << 40, sack=cfg.sack,
    )
    receiver.on_rx_drop = drop_log.callback("receiver-rx-fifo")
    sender.on_established_hooks.append(lambda now: _mark_predictable(sender, receiver))
    impairments = dict(impairments or {})
    if impairments.get("pmtu_mtu") and impairments.get("pmtu_mode", "icmp") == "icmp":
        impairments.setdefault("icmp_sink", sender.on_icmp_frag_needed)  # the hop's ICMP reaches the sender
    fwd_in, rev_in = make_path(
        sim, cfg.link, rate_bps=path["rate_bps"], delay_ns=path["delay_ns"], mtu=path["mtu"],
        queue_bytes=cfg.queue_bytes, drop_log=drop_log, **impairments,
    )
    out_tap = Tap("sender-out", fwd_in)
    in_tap = Tap("sender-in", sender)
    sender.attach(out_tap)
    fwd_in.connect(receiver)
    receiver.attach(rev_in)
    rev_in.connect(in_tap)

    writer = BulkWriter(sender, cfg.bytes, cfg.write, cfg.think_ns, reply_bytes=cfg.reply)
    finished: dict[str, int] = {}

    def done(now: int) -> None:
        finished["at"] = now

    reader = BulkReader(receiver, cfg.read, cfg.bytes, done, message=cfg.write, reply_bytes=cfg.reply)
    started: dict[str, int] = {}

    def sender_up(now: int) -> None:
        started["at"] = now
        writer.start(now)

    receiver.on_established = reader.start
    sender.on_established = sender_up
    receiver.listen()
    sim.schedule(0, lambda now: sender.connect(now, RECEIVER_ADDR, RECEIVER_PORT))

    def watchdog(now: int) -> None:
        if "at" in finished and receiver.state.value in ("CLOSED", "LAST-ACK") or now >= MAX_SIM_NS:
            sender.stop()
            receiver.stop()
            return
        if "at" in finished and now - finished["at"] > 5 * NS_PER_S:
            sender.stop()
            receiver.stop()
            return
        if sender.stopped and "at" not in started:
            receiver.stop()  # the sender gave up opening the connection
            return
        if sender.stopped and receiver.stopped:
            return
        sim.schedule(now + NS_PER_S, watchdog)

    sim.schedule(NS_PER_S, watchdog)
    sim.run(until=MAX_SIM_NS)
    start = started.get("at", 0)
    end = finished.get("at")
    completed = end is not None
    # An unfinished run lasts until the sender gave up, else to where the run stopped.
    duration = (end if completed else sender.aborted_at if sender.aborted_at is not None else sim.now) - start
    goodput = reader.received * 8 / (duration / NS_PER_S) / 1e6 if duration > 0 else 0.0
    # At equal times an arrival comes before what the sender sent at that instant (its ACK of a
    # SYN-ACK, the data an ACK released): a capture shows cause before effect.
    records = sorted(in_tap.records + out_tap.records, key=lambda r: r[0])
    # Both hosts record (the replying host's stalls too): one order whatever the engine.
    gt.stalls.sort(key=stall_order)
    gt.summary = {
        "goodput_mbit_s": round(goodput, 4), "duration_ns": duration, "completed": completed,
        "maxseg": sender.maxseg, "sndbuf": sender.sndbuf, "rcvbuf": receiver.rcvbuf,
        "segments_sent": sender.segments_sent, "retransmits": sender.retransmits, "timeouts": sender.timeouts,
        "rx_fifo_drops": len(receiver.rx_drops), "aborted": sender.aborted_at is not None,
        "icmp_mss_changes": sender.icmp_mss_changes,
    }
    result = BulkResult(
        config=cfg, goodput_mbit_s=goodput, duration_s=duration / NS_PER_S, duration_ns=duration,
        bytes=reader.received, completed=completed, stalls=sorted(gt.stalls, key=lambda s: (s.start_ns, s.end_ns)),
        packets=len(records), retransmits=sender.retransmits, timeouts=sender.timeouts, events=sim.events_run,
        ground_truth=gt, records=records, path_inputs=(fwd_in, rev_in),
        aborted=sender.aborted_at is not None, aborted_at_ns=sender.aborted_at, drops=list(drop_log.drops),
    )
    if pcap is not None:
        write_outputs(result, Path(pcap), path)
    return result


def stall_order(s: Stall) -> tuple[int, int, str]:
    """Ground truth's stall order: by end (when the stall was recorded), start, direction."""
    return (s.end_ns, s.start_ns, s.direction)


def _mark_predictable(sender: Host, receiver: Host) -> None:
    """Tell the sender's stall tracker when its whole buffer cannot trigger the receiver's window
    update (Moldeklev (1)): such deadlocks are the window-update rule's, not Nagle's."""
    s, r = sender.sndbuf, receiver.rcvbuf
    sender.stalls.update_unreachable = s < r and not rules.window_update_due(
        receiver.p.window_update, s, 0, r, sender.maxseg, r - s)  # the receiver is not up yet


def write_outputs(result: BulkResult, pcap: Path, path: dict[str, Any]) -> None:
    from .pcap_writer import write_pcap

    write_pcap(pcap, result.records)  # addresses are already IPv4 strings
    result.ground_truth.write(truth_path(pcap))


def truth_path(pcap: Path) -> Path:
    return pcap.with_name(pcap.name + ".truth.json")
