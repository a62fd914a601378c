"""Per-direction link configuration, JSON round-trippable so the runner can hand it to the emulator process."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class SwitchConfig:
    """A cell switch between an access link and a slower output port (ATM, 1995)."""

    capacity_cells: int
    policy: Literal["none", "ppd", "epd"] = "none"
    epd_threshold_cells: int | None = None
    # Cells arrive from the sender's access link at this rate (bit/s of 53-byte cells).
    access_rate_bps: int = 155_520_000


@dataclass(frozen=True)
class GilbertConfig:
    p_gb: float
    p_bg: float
    loss_good: float = 0.0
    loss_bad: float = 1.0


@dataclass(frozen=True)
class BurstLossConfig:
    """Deterministic bursts: after `warmup` data-sized frames, drop `length` consecutive ones, and a
    burst starts again every `every` frames, `count` bursts in all. Only frames of at least `min_frame_len` bytes count
    (and can be dropped), so ACKs, SYNs and FINs neither shift the pattern nor vanish."""

    length: int
    every: int
    warmup: int = 0
    count: int = 1
    min_frame_len: int = 1000
    # Also drop the first retransmission of each burst's first segment (see emulator.bursts).
    lose_first_repair: bool = False

    def __post_init__(self) -> None:
        if self.length < 1 or self.count < 1 or self.warmup < 0 or self.min_frame_len < 0:
            raise ValueError("burst length and count must be >= 1, warmup and min_frame_len >= 0")
        if self.count > 1 and self.every <= self.length:
            raise ValueError(f"bursts every {self.every} frames would overlap bursts of {self.length}")

    def indices(self) -> tuple[int, ...]:
        """1-based counts of data-sized frames that are dropped."""
        return tuple(self.warmup + k * self.every + j
                     for k in range(self.count) for j in range(1, self.length + 1))


@dataclass(frozen=True)
class SlotPoolConfig:
    """The receiving NIC's pool of jumbo receive buffers."""

    slots: int
    min_frame_len: int
    replenish_ns: int


@dataclass(frozen=True)
class DirectionConfig:
    rate_bps: int = 0  # 0: no rate limit
    atm_cell_tax: bool = False  # each frame costs ceil((ip_len + 16) / 48) * 53 bytes of link time
    delay_ns: int = 0
    queue_bytes: int | None = None  # tail drop above this backlog
    queue_cells: int | None = None
    switch: SwitchConfig | None = None
    loss: float = 0.0
    gilbert: GilbertConfig | None = None
    bursts: BurstLossConfig | None = None
    slot_pool: SlotPoolConfig | None = None
    pmtu: int | None = None  # largest IP packet that passes
    pmtu_mode: Literal["blackhole", "icmp"] = "blackhole"  # silent drop, or ICMP "fragmentation needed"
    seed: int = 1

    def __post_init__(self) -> None:
        if self.rate_bps < 0 or self.delay_ns < 0:
            raise ValueError("rate_bps and delay_ns must be >= 0")
        if not 0.0 <= self.loss <= 1.0:
            raise ValueError(f"loss probability {self.loss} is outside [0, 1]")
        if self.pmtu_mode not in ("blackhole", "icmp"):
            raise ValueError(f"pmtu_mode must be 'blackhole' or 'icmp', not {self.pmtu_mode!r}")
        if self.switch is not None and self.rate_bps <= 0:
            raise ValueError("a cell switch needs an output rate (rate_bps)")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> "DirectionConfig":
        d = dict(d or {})
        for key, typ in (("switch", SwitchConfig), ("gilbert", GilbertConfig), ("bursts", BurstLossConfig),
                          ("slot_pool", SlotPoolConfig)):
            if d.get(key) is not None:
                d[key] = typ(**d[key])
        return cls(**d)


@dataclass(frozen=True)
class LinkConfig:
    """Both directions: `forward` carries sender -> receiver, `reverse` the ACKs back."""

    forward: DirectionConfig = field(default_factory=DirectionConfig)
    reverse: DirectionConfig = field(default_factory=DirectionConfig)

    def to_json(self) -> dict[str, Any]:
        return {"forward": self.forward.to_json(), "reverse": self.reverse.to_json()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "LinkConfig":
        return cls(DirectionConfig.from_json(d.get("forward")), DirectionConfig.from_json(d.get("reverse")))
