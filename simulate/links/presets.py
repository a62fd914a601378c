"""Named links and `make_path`, which wires one direction's stages each way.

Framing per packet (bytes on the wire beyond the IP datagram):
- Ethernet (IEEE 802.3): 14 header + 4 FCS + 8 preamble/SFD + 12 inter-frame gap = 38, and the
  frame payload is padded to at least 46 bytes.
- FDDI (ANSI X3.139): 8 preamble + 1 SD + 1 FC + 6 DA + 6 SA + 8 LLC/SNAP + 4 FCS + 2 ED/FS = 36.
- ATM: AAL5 with LLC/SNAP in 53-byte cells (docs/tcp-rules.md#atm-cells); the rate is the
  cell rate (TAXI 140 Mbit/s; OC-3 SONET payload 149.76 Mbit/s).
Default delays are one-way LAN figures (cable plus switch latency), an assumption: the papers do
not give them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..engine import Simulator
from ..segment import Receiver, Segment
from .atm import CellSwitchBuffer, aal5_wire_bytes
from .atm_path import AtmSwitchPath
from .drops import DropLog
from .loss import GilbertElliott, NthLoss, RandomLoss
from .nic import JumboSlotPool
from .pmtu import PmtuHop
from .serial import SerialLink
from .stages import JumboNicStage, LossStage, PmtuStage

ETHERNET_OVERHEAD = 38
ETHERNET_MIN_PAYLOAD = 46
FDDI_OVERHEAD = 36
STANDARD_ETHERNET_FRAME = 1518  # larger frames need a jumbo receive slot (Tigon `ti` driver)
OC3_CELL_RATE = 149_760_000  # SONET STS-3c payload carrying cells


def ethernet_wire_bytes(ip_len: int) -> int:
    return max(ip_len, ETHERNET_MIN_PAYLOAD) + ETHERNET_OVERHEAD


def fddi_wire_bytes(ip_len: int) -> int:
    return ip_len + FDDI_OVERHEAD


def no_framing(ip_len: int) -> int:
    return ip_len


@dataclass(frozen=True)
class LinkPreset:
    name: str
    rate_bps: int
    delay_ns: int
    mtu: int
    wire_bytes: Callable[[int], int]
    description: str

    def framing_overhead(self, ip_len: int) -> int:
        return self.wire_bytes(ip_len) - ip_len


LINK_PRESETS: dict[str, LinkPreset] = {
    p.name: p
    for p in (
        LinkPreset("atm140", 140_000_000, 20_000, 9244, aal5_wire_bytes,
                   "FORE ATM over 140 Mbit/s TAXI, MTU 9244 (Moldeklev & Gunningberg), AAL5 cell tax"),
        LinkPreset("oc3", OC3_CELL_RATE, 20_000, 9180, aal5_wire_bytes,
                   "ATM over 155 Mbit/s SONET OC-3 (Kung & Morris), MTU 9180 (RFC 1626)"),
        LinkPreset("ethernet10", 10_000_000, 10_000, 1500, ethernet_wire_bytes,
                   "10 Mbit/s Ethernet (Mogul table 4)"),
        LinkPreset("fddi", 100_000_000, 10_000, 4352, fddi_wire_bytes,
                   "100 Mbit/s FDDI, MTU 4352 (Mogul table 5)"),
        LinkPreset("fastethernet", 100_000_000, 10_000, 1500, ethernet_wire_bytes,
                   "100 Mbit/s Fast Ethernet (Salamon)"),
        LinkPreset("gige", 1_000_000_000, 10_000, 1500, ethernet_wire_bytes,
                   "Gigabit Ethernet; pass mtu=8940/9000 for jumbo frames (Shalunov)"),
        LinkPreset("custom", 0, 0, 1500, no_framing,
                   "explicit rate_bps and delay_ns, no framing overhead"),
    )
}


@dataclass(frozen=True)
class AtmSwitchSpec:
    """A congested switch output port on the forward path (Kung & Morris): the preset's link is
    the input, cells leave at `out_rate_bps`. Buffer bytes count 48-byte cell payloads only."""

    buffer_bytes: int
    out_rate_bps: int
    policy: str = "none"
    epd_threshold_cells: int | None = None
    out_delay_ns: int = 0

    @property
    def capacity_cells(self) -> int:
        return self.buffer_bytes // 48


class PathInput:
    """The entry of one direction: `receive` feeds the first stage, `connect` sets the far end."""

    def __init__(self, name: str, stages: list[Any]) -> None:
        self.name = name
        self.stages = stages
        for a, b in zip(stages, stages[1:]):
            a.connect(b)

    def receive(self, now: int, segment: Segment) -> None:
        self.stages[0].receive(now, segment)

    def connect(self, sink: Receiver) -> None:
        self.stages[-1].connect(sink)

    def find(self, kind: type) -> Any:
        """The first stage of a type (the SerialLink, the AtmSwitchPath, the JumboNicStage...)."""
        for stage in self.stages:
            if isinstance(stage, kind):
                return stage
        raise LookupError(f"path {self.name} has no {kind.__name__} stage")


_IMPAIRMENTS = frozenset({
    "reverse_rate_bps", "loss", "reverse_loss", "gilbert", "loss_data_only", "drop_nth", "atm_switch",
    "jumbo_slots", "jumbo_min_frame_len", "jumbo_replenish_ns", "jumbo_hold_until_acked",
    "pmtu_mtu", "pmtu_mode", "icmp_sink", "drop_log",
})


def make_path(sim: Simulator, name: str, *, rate_bps: int | None = None, delay_ns: int | None = None,
              mtu: int | None = None, queue_bytes: int | None = None,
              **impairments: Any) -> tuple[PathInput, PathInput]:
    """(forward input, reverse input); connect each to the host at its far end.

    Impairments (forward direction unless named reverse_): loss=p, gilbert=(p_gb, p_bg,
    loss_good, loss_bad), drop_nth=(n, ...) (lose exactly those packets), loss_data_only
    (count and lose data segments only), atm_switch=AtmSwitchSpec, jumbo_slots=N (receiving
    NIC; jumbo_min_frame_len, jumbo_replenish_ns, jumbo_hold_until_acked), pmtu_mtu=M with
    pmtu_mode "icmp" | "blackhole" and icmp_sink(now, mtu), reverse_rate_bps, reverse_loss,
    drop_log=DropLog (gets every drop with where and why).
    """
    unknown = set(impairments) - _IMPAIRMENTS
    if unknown:
        raise TypeError(f"make_path({name!r}): unknown impairment(s) {sorted(unknown)}")
    preset = LINK_PRESETS.get(name)
    if preset is None:
        raise KeyError(f"unknown link preset {name!r}; known: {sorted(LINK_PRESETS)}")
    rate = rate_bps if rate_bps is not None else preset.rate_bps
    delay = delay_ns if delay_ns is not None else preset.delay_ns
    mtu = mtu if mtu is not None else preset.mtu
    if rate <= 0:
        raise ValueError(f"make_path({name!r}) needs a positive rate_bps")
    log: DropLog | None = impairments.get("drop_log")

    def on_drop(where: str):
        return log.callback(where) if log is not None else None

    forward: list[Any] = []
    reverse: list[Any] = []
    data_only = bool(impairments.get("loss_data_only", False))
    if impairments.get("loss"):
        forward.append(LossStage(RandomLoss(impairments["loss"], sim.rng), name=f"{name}-loss",
                                 on_drop=on_drop(f"{name}-fwd-loss"), data_only=data_only))
    if impairments.get("gilbert"):
        p_gb, p_bg, lg, lb = impairments["gilbert"]
        forward.append(LossStage(GilbertElliott(p_gb, p_bg, lg, lb, sim.rng), name=f"{name}-ge",
                                 on_drop=on_drop(f"{name}-fwd-loss"), reason="gilbert_loss",
                                 data_only=data_only))
    if impairments.get("drop_nth"):
        forward.append(LossStage(NthLoss(impairments["drop_nth"]), name=f"{name}-nth",
                                 on_drop=on_drop(f"{name}-fwd-loss"), reason="injected_loss",
                                 data_only=data_only))
    spec: AtmSwitchSpec | None = impairments.get("atm_switch")
    if spec is not None:
        switch = CellSwitchBuffer(spec.capacity_cells, spec.out_rate_bps, spec.policy,  # type: ignore[arg-type]
                                  spec.epd_threshold_cells)
        forward.append(AtmSwitchPath(sim, rate, delay, switch, spec.out_delay_ns, mtu,
                                     name=f"{name}-switch", on_drop=on_drop(f"{name}-switch")))
    else:
        forward.append(SerialLink(sim, rate, delay, mtu, queue_bytes, name=f"{name}-fwd",
                                  on_drop=on_drop(f"{name}-fwd"), wire_bytes=preset.wire_bytes))
    if impairments.get("pmtu_mtu"):
        hop = PmtuHop(impairments["pmtu_mtu"], impairments.get("pmtu_mode", "icmp"))
        forward.append(PmtuStage(sim, hop, name=f"{name}-pmtu", on_drop=on_drop(f"{name}-pmtu"),
                                 icmp_sink=impairments.get("icmp_sink"), icmp_delay_ns=delay))
    nic: JumboNicStage | None = None
    if impairments.get("jumbo_slots"):
        pool = JumboSlotPool(impairments["jumbo_slots"],
                             impairments.get("jumbo_min_frame_len", STANDARD_ETHERNET_FRAME + 1),
                             impairments.get("jumbo_replenish_ns", 0))
        nic = JumboNicStage(pool, name=f"{name}-nic", on_drop=on_drop(f"{name}-nic"),
                            hold_until_acked=impairments.get("jumbo_hold_until_acked", True))
        forward.append(nic)
        reverse.append(nic.ack_watcher())
    if impairments.get("reverse_loss"):
        reverse.append(LossStage(RandomLoss(impairments["reverse_loss"], sim.rng),
                                 name=f"{name}-rev-loss", on_drop=on_drop(f"{name}-rev-loss")))
    reverse_rate = impairments.get("reverse_rate_bps") or (spec.out_rate_bps if spec else rate)
    reverse.append(SerialLink(sim, reverse_rate, delay + (spec.out_delay_ns if spec else 0), mtu,
                              queue_bytes, name=f"{name}-rev", on_drop=on_drop(f"{name}-rev"),
                              wire_bytes=preset.wire_bytes))
    return PathInput(f"{name}-forward", forward), PathInput(f"{name}-reverse", reverse)
