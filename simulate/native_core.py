"""The bridge to the simulator, which runs in the native (Rust) core (native/src/sim/): checks a
configuration, passes it in with its seed, and turns the core's output into the BulkResult and
naglemark TrialResult the Python API returns. Nothing here simulates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from stallscope.vocabulary import Cause

from .ground_truth import GroundTruth, Stall
from .links.presets import LINK_PRESETS
from .nagle import NagleVariant
from .segment import Segment
from .host_cost import COST_MODELS, HostCost
from .units import NS_PER_S

SENDER_END, RECEIVER_END = ("10.0.0.1", 40000), ("10.0.0.2", 5001)  # a bulk run's hosts 0 and 1
PERSONALITIES = ("sunos41", "bsd44", "freebsd4", "tru64", "linux20", "linux")
# The path impairments a bulk run takes (links/presets.py's link, then these stages).
# drop_segments: ((offset, k), ...): lose the k-th transmission (k >= 1) of the data segment whose
# first byte is the stream's byte `offset` (0 = the first data byte, the sender's ISN + 1); first of
# the forward stages, so k counts what the sender sent. drop_acks: ((offset, k), ...): lose the k-th
# pure ACK whose ack number is the stream's byte `offset`, first of the reverse stages. Both drop
# with reason "injected_loss", as drop_nth does.
IMPAIRMENTS = frozenset({
    "loss", "gilbert", "drop_nth", "drop_segments", "drop_acks", "loss_data_only", "reverse_loss",
    "reverse_rate_bps", "atm_switch", "jumbo_slots", "jumbo_min_frame_len", "jumbo_replenish_ns",
    "jumbo_hold_until_acked", "pmtu_mtu", "pmtu_mode",
})
REPLAY_IMPAIRMENTS = ("drop_segments", "drop_acks")


class NativeUnavailable(RuntimeError):
    """The Rust core is not built, or is a stale build without the simulator."""


def _native_module() -> Any:
    try:
        from stallscope import _native
    except ImportError as e:
        raise NativeUnavailable(f"the native core is not built ({e}): run `make native`") from None
    if not hasattr(_native, "simulate_bulk"):
        raise NativeUnavailable("stallscope._native has no simulate_bulk (a stale build): run `make native`")
    return _native


def invalid_reason(cfg: Any, impairments: dict[str, Any] | None = None) -> str | None:
    """Why `cfg` (a BulkConfig) cannot run, or None when it can."""
    if impairments:
        other = sorted(set(impairments) - IMPAIRMENTS)
        if other:
            return f"impairments {other} are not known (expected some of {', '.join(sorted(IMPAIRMENTS))})"
        for key in REPLAY_IMPAIRMENTS:
            reason = _replay_reason(key, impairments.get(key))
            if reason is not None:
                return reason
        if native_impairments(impairments) is None:
            return "an impairment value is out of range (a probability outside [0, 1], a size or rate not positive...)"
    for field in ("personality", "receiver_personality"):
        name = getattr(cfg, field)
        if name is not None and name not in PERSONALITIES:
            return f"unknown personality {name!r} ({field}); expected one of {', '.join(PERSONALITIES)}"
    if cfg.link not in LINK_PRESETS:
        return f"link {cfg.link!r} is not a named preset"
    for field in ("nagle", "receiver_nagle"):
        name = getattr(cfg, field)
        if name:
            try:
                NagleVariant.parse(name)
            except (ValueError, KeyError):
                return f"{field} {name!r} is not a Nagle variant"
    if not isinstance(cfg.cost, HostCost) and cfg.cost not in COST_MODELS:
        return f"unknown host cost model {cfg.cost!r}; expected one of {', '.join(COST_MODELS)}"
    if cfg.bytes <= 0 or cfg.write <= 0 or cfg.read <= 0:
        return "sizes must be positive"
    if getattr(cfg, "tap", "sender") not in ("sender", "receiver"):
        return f"tap {cfg.tap!r} is neither 'sender' nor 'receiver'"
    if cfg.mtu_probing not in (0, 1) or isinstance(cfg.mtu_probing, bool):
        return "mtu_probing must be 0 or 1"
    if cfg.think_ns < 0 or cfg.reply < 0 or (cfg.delay_ns is not None and cfg.delay_ns < 0):
        return "negative think_ns, reply or delay_ns"
    writes = getattr(cfg, "writes", None)
    if writes is not None:
        reason = _writes_reason(writes, cfg)
        if reason is not None:
            return reason
    rate = cfg.rate_bps if cfg.rate_bps is not None else LINK_PRESETS[cfg.link].rate_bps
    if rate <= 0:
        return "the link needs a positive rate"
    for field in ("mtu", "mss", "sndbuf", "rcvbuf", "route_mtu", "advertised_mss", "host_mtu", "queue_bytes"):
        v = getattr(cfg, field)
        if v is not None and not 0 < v < 1 << 31:
            return f"{field}={v} is outside 1 .. 2**31 - 1"
    return None




_MAX = 1 << 62  # integers the native core holds in i64 with room for sums


def _probability(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0


def _int(v: Any, lo: int, hi: int = _MAX) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v < hi


def _pairs(value: Any) -> list[Any] | None:
    """`value` as a list of its items when it is a sequence of 2-item sequences, else None."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        return None
    items = list(value)
    if not all(isinstance(x, Sequence) and not isinstance(x, (str, bytes)) and len(x) == 2 for x in items):
        return None
    return items


def _writes_reason(writes: Any, cfg: Any) -> str | None:
    """Why BulkConfig.writes cannot run, or None."""
    items = _pairs(writes)
    if not items:
        return "writes must be a non-empty sequence of (at_ns, nbytes) pairs"
    prev = 0
    for i, (at, n) in enumerate(items):
        if not _int(at, 0, 1 << 48) or not _int(n, 1, 1 << 48):
            return f"writes[{i}] = ({at!r}, {n!r}): at_ns must be an integer >= 0 and nbytes an integer >= 1"
        if at < prev:
            return f"writes[{i}]: at_ns {at} is before the previous write's {prev} (times must not decrease)"
        prev = at
    total = sum(n for _, n in items)
    if cfg.bytes != total:
        return f"bytes={cfg.bytes} must equal the sum of the writes' sizes ({total}) when writes is given"
    if cfg.think_ns != 0:
        return f"think_ns must be 0 when writes is given (got {cfg.think_ns}): the schedule sets the gaps"
    return None


def _replay_reason(key: str, value: Any) -> str | None:
    """Why a drop_segments or drop_acks impairment cannot run, or None (absent or empty is fine)."""
    if value is None or (isinstance(value, Sequence) and len(value) == 0):
        return None
    items = _pairs(value)
    if items is None:
        return f"{key} must be a sequence of (offset, k) pairs"
    for i, (offset, k) in enumerate(items):
        if not _int(offset, 0) or not _int(k, 1, 1 << 32):
            return (f"{key}[{i}] = ({offset!r}, {k!r}): the offset must be an integer >= 0 (0 = the first data "
                    f"byte) and the transmission number k an integer >= 1")
    return None


def _atm_spec(spec: Any) -> dict[str, Any] | None:
    """The AtmSwitchSpec as the native core takes it, or None when CellSwitchBuffer would reject it
    (or a value is outside the native integer range)."""
    from .links.atm import POLICIES
    from .links.presets import AtmSwitchSpec

    # out_rate_bps >= 424: a cell time of at most 1 s keeps a PDU's departures within i64.
    if not isinstance(spec, AtmSwitchSpec) or not _int(spec.buffer_bytes, 48) or not _int(spec.out_rate_bps, 424):
        return None
    cap = spec.buffer_bytes // 48
    epd = spec.epd_threshold_cells
    if spec.policy not in POLICIES or (epd is not None and not _int(epd, 0, cap + 1)):
        return None
    if not _int(spec.out_delay_ns, 0, 1 << 48):
        return None
    return asdict(spec)


def native_impairments(impairments: dict[str, Any] | None) -> dict[str, Any] | None:
    """make_path's reading of the impairments (falsy means absent; atm_switch None is absent), or
    None when a value is one make_path would reject or the native core cannot hold."""
    im = impairments or {}
    out: dict[str, Any] = {"loss": None, "gilbert": None, "drop_nth": None, "drop_segments": None, "drop_acks": None,
                           "loss_data_only": bool(im.get("loss_data_only", False)), "reverse_loss": None,
                           "reverse_rate_bps": im.get("reverse_rate_bps") or None, "atm_switch": None,
                           "pmtu_mtu": None, "pmtu_mode": None, "jumbo_slots": None, "jumbo_min_frame_len": None,
                           "jumbo_replenish_ns": None, "jumbo_hold_until_acked": None}
    for key in ("loss", "reverse_loss"):
        if im.get(key):
            if not _probability(im[key]):
                return None
            out[key] = float(im[key])
    if im.get("gilbert"):
        g = tuple(im["gilbert"])
        if len(g) != 4 or not all(_probability(x) for x in g):
            return None
        out["gilbert"] = tuple(float(x) for x in g)
    if im.get("drop_nth"):
        nth = list(im["drop_nth"])
        if not all(isinstance(i, int) and i >= 1 for i in nth):
            return None
        out["drop_nth"] = nth
    for key in REPLAY_IMPAIRMENTS:
        if im.get(key):
            if _replay_reason(key, im[key]) is not None:
                return None
            out[key] = [(int(offset), int(k)) for offset, k in im[key]]
    rr = out["reverse_rate_bps"]
    if rr is not None and not (isinstance(rr, int) and 0 < rr < 1 << 62):
        return None
    if im.get("atm_switch") is not None:
        out["atm_switch"] = _atm_spec(im["atm_switch"])
        if out["atm_switch"] is None:
            return None
    if im.get("pmtu_mtu"):
        from .links.pmtu import MIN_IPV4_MTU, MODES

        mode = im.get("pmtu_mode", "icmp")
        if not _int(im["pmtu_mtu"], MIN_IPV4_MTU, 1 << 30) or mode not in MODES:
            return None
        out["pmtu_mtu"], out["pmtu_mode"] = im["pmtu_mtu"], mode
    if im.get("jumbo_slots"):
        from .links.presets import STANDARD_ETHERNET_FRAME

        min_len = im.get("jumbo_min_frame_len", STANDARD_ETHERNET_FRAME + 1)
        replenish = im.get("jumbo_replenish_ns", 0)
        if not (_int(im["jumbo_slots"], 1) and _int(min_len, -_MAX) and _int(replenish, 0, 1 << 48)):
            return None
        out.update(jumbo_slots=im["jumbo_slots"], jumbo_min_frame_len=min_len, jumbo_replenish_ns=replenish,
                   jumbo_hold_until_acked=bool(im.get("jumbo_hold_until_acked", True)))
    return out


def config_dict(cfg: Any, impairments: dict[str, Any] | None = None) -> dict[str, Any]:
    d = asdict(cfg)
    d["cost"] = asdict(cfg.host_cost())
    d["impairments"] = native_impairments(impairments)
    return d


def simulate_raw(cfg: Any, impairments: dict[str, Any] | None = None) -> dict[str, Any]:
    """The core's own output for a bulk run: stall and drop tuples, counters, and the packet trace
    as a native object under "trace" (`.segments(Segment, endpoints)` or `.columns()` on demand).
    Raises ValueError naming what is wrong with an invalid configuration."""
    reason = invalid_reason(cfg, impairments)
    if reason is not None:
        raise ValueError(f"simulator: {reason}")
    return _native_module().simulate_bulk(config_dict(cfg, impairments), int(cfg.seed))


class LazyList(Sequence):
    """A list built on first use (a native run's packet records, the ATM path's PDU records: most
    callers never read them). Compares equal to the list it stands for; pickles as one."""

    __slots__ = ("_build", "_list")

    def __init__(self, build: Any) -> None:
        self._build = build
        self._list: list | None = None

    def materialize(self) -> list:
        if self._list is None:
            self._list = self._build()
            self._build = None
        return self._list

    def __len__(self) -> int:
        return len(self.materialize())

    def __getitem__(self, index):  # type: ignore[override]
        return self.materialize()[index]

    def __iter__(self):
        return iter(self.materialize())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyList):
            other = other.materialize()
        return self.materialize() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.materialize()!r})"

    def __reduce__(self):
        return (list, (self.materialize(),))


class LazyRecords(LazyList):
    """BulkResult.records from a native run: the (t, Segment) list costs more than the simulation
    itself, so it is built on first use; its length is known without building it."""

    __slots__ = ("_trace",)

    def __init__(self, trace: Any) -> None:
        super().__init__(lambda: trace.segments(Segment, (SENDER_END, RECEIVER_END)))
        self._trace = trace

    def materialize(self) -> list[tuple[int, Segment]]:
        self._trace = None
        return super().materialize()

    def __len__(self) -> int:
        return len(self._trace) if self._list is None and self._trace is not None else len(self.materialize())

    def __repr__(self) -> str:
        return f"LazyRecords({len(self)} records)"


def run_bulk(cfg: Any, impairments: dict[str, Any] | None = None) -> Any:
    """One bulk run as a BulkResult."""
    return result_from_raw(cfg, simulate_raw(cfg, impairments), impairments)


def result_from_raw(cfg: Any, raw: dict[str, Any], impairments: dict[str, Any] | None = None) -> Any:
    """The BulkResult of the core's output."""
    from .path_counters import path_counters
    from .run_bulk import BulkResult, impairment_parameters, path_parameters

    path = path_parameters(cfg)
    params = {k: (v if not isinstance(v, HostCost) else asdict(v)) for k, v in asdict(cfg).items()}
    if params.get("writes", 0) is None:
        del params["writes"]  # recorded only when given: a run without a schedule keeps its truth
    if params.get("tap") == "sender":
        del params["tap"]  # likewise: the default tap leaves every earlier truth as it was
    params["mtu"] = path["mtu"]
    params["impairments"] = impairment_parameters(impairments)
    gt = GroundTruth(parameters=params)
    for start, end, cause, detail, direction, evidence in raw["stalls"]:
        gt.add(Stall(start, end, Cause(cause), detail, direction, evidence))
    for drop in raw["drops"]:
        gt.count_drop(drop[2])
    start = raw["started_at"] or 0
    end = raw["finished_at"]
    completed = end is not None
    aborted_at = raw["sender"]["aborted_at"]
    # An unfinished run lasts until the sender gave up, else to where the run stopped.
    duration = (end if completed else aborted_at if aborted_at is not None else raw["now"]) - start
    received = raw["received"]
    goodput = received * 8 / (duration / NS_PER_S) / 1e6 if duration > 0 else 0.0
    records = LazyRecords(raw["trace"])
    snd, rcv = raw["sender"], raw["receiver"]
    gt.summary = {
        "goodput_mbit_s": round(goodput, 4), "duration_ns": duration, "completed": completed,
        "maxseg": snd["maxseg"], "sndbuf": snd["sndbuf"], "rcvbuf": rcv["rcvbuf"],
        "segments_sent": snd["segments_sent"], "retransmits": snd["retransmits"], "timeouts": snd["timeouts"],
        "rx_fifo_drops": rcv["rx_fifo_drops"], "aborted": snd["aborted_at"] is not None,
        "icmp_mss_changes": snd["icmp_mss_changes"],
    }
    return BulkResult(
        config=cfg, goodput_mbit_s=goodput, duration_s=duration / NS_PER_S, duration_ns=duration,
        bytes=received, completed=completed, stalls=sorted(gt.stalls, key=lambda s: (s.start_ns, s.end_ns)),
        packets=len(records), retransmits=snd["retransmits"], timeouts=snd["timeouts"], events=raw["events"],
        ground_truth=gt, records=records, path=path_counters(cfg.link, raw, LazyList),
        aborted=snd["aborted_at"] is not None, aborted_at_ns=snd["aborted_at"], drops=drops_of(raw),
    )


def drops_of(raw: dict[str, Any]) -> list[Any]:
    """The core's drop tuples as links/drops.py Drop records (flow from the sending host's index)."""
    from .links.drops import Drop

    flows = {0: (*SENDER_END, *RECEIVER_END), 1: (*RECEIVER_END, *SENDER_END)}
    return [Drop(at, uid, reason, place, flows[src], seq, plen, ilen)
            for at, uid, reason, place, src, seq, plen, ilen in raw["drops"]]


def naglemark_trial(
    *, personality: str, link: str, variant: Any, sockbuf: int, receiver_inference: bool, seed: int,
    trial: Any, app_buf: int, lengths: list[int], think_ns: int = 0, record: bool = False,
    rate_bps: int | None = None, delay_ns: int | None = None, mtu: int | None = None,
) -> tuple[Any, dict[str, Any]]:
    """One naglemark trial (Mogul & Minshall §6-7): (TrialResult, the core's raw output). With
    `record` the raw output also holds the servers' trace, both ends' stalls and the drops.
    `rate_bps`, `delay_ns` and `mtu` override the link preset's (a capture rig's path)."""
    from .apps import naglemark as nm

    preset = LINK_PRESETS.get(link)
    if preset is None or (rate_bps or preset.rate_bps) <= 0:
        raise KeyError(f"unknown link preset {link!r} for naglemark; try ethernet10 or fddi")
    if personality not in PERSONALITIES:
        raise ValueError(f"naglemark: unknown personality {personality!r}; expected one of {', '.join(PERSONALITIES)}")
    if not 0 < sockbuf < 1 << 31:
        raise ValueError(f"naglemark: sockbuf must be positive, got {sockbuf}")
    if app_buf <= 0 or not lengths:
        raise ValueError("naglemark: app_buf must be positive and the trial needs at least one response length")
    trial = nm.TrialType(trial)
    config = {
        "personality": personality, "link": link, "variant": NagleVariant(variant).value, "sockbuf": sockbuf,
        "receiver_inference": bool(receiver_inference), "per_request": trial.per_request, "app_buf": app_buf,
        "lengths": list(lengths), "think_ns": int(think_ns), "record": bool(record),
        "rate_bps": rate_bps, "delay_ns": delay_ns, "mtu": mtu,
    }
    raw = _native_module().naglemark_trial(config, int(seed))
    samples = tuple(nm.Sample(length, elapsed) for length, elapsed in raw["samples"])
    return nm.TrialResult(trial, app_buf, sockbuf, rate_bps or preset.rate_bps, samples, raw["finished_ns"]), raw
