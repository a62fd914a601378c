"""One bulk transfer between two simulated hosts over a named path, recorded at the sender.

Returns goodput, duration, the ground-truth stalls and the packet records; optionally writes a
pcap and the ground truth JSON beside it (`<pcap>.truth.json`). The run itself is the native
core's (simulate/native_core.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any

from .ground_truth import GroundTruth, Stall
from .host_cost import COST_MODELS, HostCost
from .links.presets import LINK_PRESETS
from .path_counters import PathCounters
from .segment import Segment

SENDER_ADDR, RECEIVER_ADDR = "10.0.0.1", "10.0.0.2"
SENDER_PORT, RECEIVER_PORT = 40000, 5001


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
    # Scheduled writes instead of a loop of `write`-byte writes: (at_ns, nbytes) pairs, at_ns counted
    # from the connection's establishment at the sender, not decreasing. Write i is issued at its
    # at_ns or when write i - 1 completed (and, with `reply`, its reply was read), whichever is
    # later: a blocking write() loop that sleeps until the next write's time. `bytes` must equal
    # the sum of the sizes (BulkConfig.with_writes sets it), think_ns must be 0; `write` is then
    # unused, and with `reply` > 0 each scheduled write is a message the receiver answers.
    # None: the loop of `write`-byte writes. Recorded in the ground truth's parameters when given.
    writes: tuple[tuple[int, int], ...] | None = None
    # Where the capture is taken: "sender" (beside it: what it emitted, what reached it) or
    # "receiver" (its ACKs as they leave, the data that arrived). The truth's stalls keep the
    # sender's clock either way. Recorded in the ground truth's parameters only when "receiver".
    tap: str = "sender"

    def __post_init__(self) -> None:
        # A list of lists (read from JSON) becomes the hashable tuple of pairs.
        if self.writes is not None and not isinstance(self.writes, tuple):
            try:
                object.__setattr__(self, "writes", tuple(tuple(w) for w in self.writes))
            except TypeError:
                pass  # left for the validation to name

    @classmethod
    def with_writes(cls, writes: Any, **kwargs: Any) -> BulkConfig:
        """A configuration replaying `writes` ((at_ns, nbytes) pairs), `bytes` their sum."""
        writes = tuple(tuple(w) for w in writes)
        return cls(writes=writes, bytes=sum(int(n) for _, n in writes), **kwargs)

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
    # What the path's stages counted (links, loss stages, ATM switch, PMTU hop, jumbo NIC).
    path: PathCounters | None = field(repr=False, default=None)
    # The sender gave up after its maximum number of retransmissions and reset the connection.
    aborted: bool = False
    aborted_at_ns: int | None = None
    # Every packet the path threw away (links/drops.py Drop), in time order: what the truth's loss
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
    """The run's path impairments as JSON values for the ground truth (what a scorer needs to know
    was injected)."""
    out: dict[str, Any] = {}
    for key, value in sorted((impairments or {}).items()):
        if is_dataclass(value) and not isinstance(value, type):
            value = asdict(value)
        elif isinstance(value, tuple):
            value = list(value)
        out[key] = value
    return out


def run_bulk(cfg: BulkConfig, pcap: Path | None = None, *, impairments: dict[str, Any] | None = None) -> BulkResult:
    """Run one transfer. `impairments` are the path's (loss, gilbert, drop_nth, drop_segments,
    drop_acks, atm_switch, jumbo_slots, pmtu_mtu...: native_core.IMPAIRMENTS); their counters are on
    `result.path`.
    Raises ValueError naming what is wrong with an invalid configuration."""
    from . import native_core

    result = native_core.run_bulk(cfg, impairments)
    if pcap is not None:
        write_outputs(result, Path(pcap))
    return result


def write_outputs(result: BulkResult, pcap: Path) -> None:
    from .pcap_writer import write_pcap

    write_pcap(pcap, result.records, ttls=host_ttls(result.config))  # addresses are already IPv4 strings
    result.ground_truth.write(truth_path(pcap))


def host_ttls(cfg: BulkConfig) -> dict[str, int]:
    """Each host's IP TTL, its stack's (pcap_writer.PERSONALITY_TTL), by address."""
    from .pcap_writer import personality_ttl

    return {SENDER_ADDR: personality_ttl(cfg.personality),
            RECEIVER_ADDR: personality_ttl(cfg.receiver_personality or cfg.personality)}


def truth_path(pcap: Path) -> Path:
    return pcap.with_name(pcap.name + ".truth.json")
