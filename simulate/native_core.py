"""The native (Rust) simulator core behind `run_bulk(engine=...)`: which configurations it runs,
and turning its columns back into the `BulkResult` the Python simulator returns.

The Rust core is a transliteration of this package, held identical by
tests/test_native_sim_differential.py. Python's random draws before the run (the two hosts' tick
phases and ISNs, in run_bulk's order) are made here and passed as values; the generator state
after them goes along for the draws made during the run (interrupt jitter).
"""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from .engine import NS_PER_S
from stallscope.vocabulary import Cause
from .ground_truth import GroundTruth, Stall
from .links.presets import LINK_PRESETS
from .nagle import NagleVariant
from .segment import Segment
from .tcp.costs import HostCost

ENGINES = ("auto", "python", "native")
# Overrides engine="auto" for a whole process (benchmarks, bisecting a divergence): python | native.
ENGINE_ENV = "STALLSCOPE_SIM_ENGINE"

_ADDR = {0: ("10.0.0.1", 40000), 1: ("10.0.0.2", 5001)}  # run_bulk's SENDER/RECEIVER
_TAGS = ((0x01, "delack_timer"), (0x02, "retransmit"), (0x04, "window_update"), (0x08, "persist_probe"),
         (0x10, "abort"))
_PERSONALITIES = frozenset({"sunos41", "bsd44", "freebsd4", "tru64", "linux20", "linux"})
# Personalities whose Rust host is behind a change to the Python one: "auto" runs them in Python
# until tests/test_native_sim_differential.py shows them identical again.
PENDING_PERSONALITIES: dict[str, str] = {}


# The Python sources the native core transliterates: when any of them changes, "auto" runs Python
# (the reference) until the differential test has passed again and `verify` recorded the new
# fingerprint in native_verified.py. So a calibration edit to the Python hosts takes effect at once.
_PORTED = ("engine.py", "segment.py", "ground_truth.py", "run_bulk.py", "loss_attribution.py", "nagle.py",
           "apps/bulk.py", "apps/naglemark.py", "apps/naglemark_net.py", "links/serial.py", "links/presets.py",
           "links/atm.py", "links/atm_path.py", "links/nic.py", "links/pmtu.py", "links/drops.py", "links/tap.py", "links/loss.py", "links/stages.py", "tcp/*.py")
_HERE = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def python_fingerprint() -> str:
    """sha256 over the ported Python sources (path and content), computed once per process."""
    h = hashlib.sha256()
    for pattern in _PORTED:
        for path in sorted(_HERE.glob(pattern)):
            h.update(path.relative_to(_HERE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def verified() -> bool:
    """Did the differential test pass against exactly these Python sources?"""
    from .native_verified import FINGERPRINT

    return FINGERPRINT == python_fingerprint()


def verify(pytest_args: tuple[str, ...] = ("-m", "not slow")) -> int:
    """Run tests/test_native_sim_differential.py; on success record the sources' fingerprint."""
    test = _HERE.parent / "tests" / "test_native_sim_differential.py"
    if not test.exists():
        raise FileNotFoundError(f"{test}: verify needs the repository checkout")
    # The pytest executable, not `python -m pytest`: the repository root must not shadow the package.
    exe = Path(sys.executable).with_name("pytest")
    rc = subprocess.call([str(exe) if exe.exists() else "pytest", "-q", str(test), *pytest_args],
                         cwd=test.parent.parent)
    if rc == 0:
        python_fingerprint.cache_clear()
        (_HERE / "native_verified.py").write_text(
            '"""Fingerprint of the Python simulator sources the native core was last held identical to\n'
            '(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""\n\n'
            f'FINGERPRINT = "{python_fingerprint()}"\n')
    return rc


class NativeUnavailable(RuntimeError):
    """engine="native" was asked for a run the native core cannot do (or is not built)."""


def _native_module() -> Any | None:
    try:
        from stallscope import _native
    except ImportError:
        return None
    return _native if hasattr(_native, "simulate_bulk") else None


def native_built() -> bool:
    """Is the Rust core built with the simulator (a stale .so lacks `simulate_bulk`)?"""
    return _native_module() is not None


def unsupported_reason(cfg: Any, impairments: dict[str, Any] | None = None) -> str | None:
    """Why the native core cannot run `cfg`, or None when it can. Invalid names are 'unsupported'
    too, so the Python path raises its usual error for them."""
    if impairments:
        other = sorted(set(impairments) - _NATIVE_IMPAIRMENTS)
        if other:
            return f"impairments {other} run in Python only"
        if native_impairments(impairments) is None:
            return ("impairment values out of range (the Python path raises the error) or outside what "
                    "the native core holds")
    for field in ("personality", "receiver_personality"):
        name = getattr(cfg, field)
        if name is not None and name not in _PERSONALITIES:
            return f"{field} {name!r} is not a known personality"
    if cfg.link not in LINK_PRESETS:
        return f"link {cfg.link!r} is not a named preset"
    for field in ("nagle", "receiver_nagle"):
        name = getattr(cfg, field)
        if name:
            try:
                NagleVariant.parse(name)
            except (ValueError, KeyError):
                return f"{field} {name!r} is not a Nagle variant"
    if not isinstance(cfg.cost, HostCost) and cfg.cost not in ("free", "sun_ipx"):
        return f"cost model {cfg.cost!r} is not known"
    if cfg.bytes <= 0 or cfg.write <= 0 or cfg.read <= 0:
        return "sizes must be positive (the Python path raises the error)"
    if cfg.mtu_probing not in (0, 1) or isinstance(cfg.mtu_probing, bool):
        return "mtu_probing must be 0 or 1 (the Python path raises the error)"
    if cfg.think_ns < 0 or cfg.reply < 0 or (cfg.delay_ns is not None and cfg.delay_ns < 0):
        return "negative think_ns, reply or delay_ns (the Python path raises the error)"
    rate = cfg.rate_bps if cfg.rate_bps is not None else LINK_PRESETS[cfg.link].rate_bps
    if rate <= 0:
        return "the link needs a positive rate (the Python path raises the error)"
    for field in ("mtu", "mss", "sndbuf", "rcvbuf", "route_mtu", "advertised_mss", "host_mtu", "queue_bytes"):
        v = getattr(cfg, field)
        if v is not None and not 0 < v < 1 << 31:
            return f"{field}={v} is outside what the native core takes"
    return None


# make_path's impairments the native core runs: everything but the Python callables and objects
# (icmp_sink, drop_log). run_bulk wires the PMTU hop's ICMP to the sender itself.
_NATIVE_IMPAIRMENTS = frozenset({
    "loss", "gilbert", "drop_nth", "loss_data_only", "reverse_loss", "reverse_rate_bps", "atm_switch",
    "jumbo_slots", "jumbo_min_frame_len", "jumbo_replenish_ns", "jumbo_hold_until_acked", "pmtu_mtu", "pmtu_mode",
})
_MAX = 1 << 62  # integers the native core holds in i64 with room for sums


def _probability(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0


def _int(v: Any, lo: int, hi: int = _MAX) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v < hi


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
    out: dict[str, Any] = {"loss": None, "gilbert": None, "drop_nth": None,
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


def pre_run_draws(seed: Any) -> tuple[tuple[int, int, int, int], tuple[list[int], int]]:
    """run_bulk's draws before the first event, in its order: each Host's tick phase is an
    argument (drawn first), its ISN is drawn in the constructor."""
    rng = random.Random(seed)
    draws = (rng.randrange(NS_PER_S), rng.randrange(1 << 32), rng.randrange(NS_PER_S), rng.randrange(1 << 32))
    _version, internal, _gauss = rng.getstate()
    return draws, (list(internal[:624]), internal[624])


def config_dict(cfg: Any, impairments: dict[str, Any] | None = None) -> dict[str, Any]:
    d = asdict(cfg)
    d["cost"] = asdict(cfg.host_cost())
    d["impairments"] = native_impairments(impairments)
    return d


def simulate_raw(cfg: Any, impairments: dict[str, Any] | None = None) -> dict[str, Any]:
    """The native core's own output: stall and drop tuples, counters, and the packet trace as a
    native object under "trace" (`.segments(Segment, endpoints)` or `.columns()` on demand)."""
    native = _native_module()
    if native is None:
        raise NativeUnavailable("stallscope._native has no simulate_bulk: run `make native`")
    draws, state = pre_run_draws(cfg.seed)
    return native.simulate_bulk(config_dict(cfg, impairments), state, draws)


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
        super().__init__(lambda: trace.segments(Segment, (_ADDR[0], _ADDR[1])))
        self._trace = trace

    def materialize(self) -> list[tuple[int, Segment]]:
        self._trace = None
        return super().materialize()

    def __len__(self) -> int:
        return len(self._trace) if self._list is None and self._trace is not None else len(self.materialize())

    def __repr__(self) -> str:
        return f"LazyRecords({len(self)} records)"


def _tags(bits: int) -> tuple[str, ...]:
    return tuple(name for bit, name in _TAGS if bits & bit)


def records_of(cols: dict[str, list]) -> list[tuple[int, Segment]]:
    out = []
    for t, src, seq, ack, flags, window, plen, mss, wscale, sackp, ts, sack, ip_id, uid, tags in zip(
        cols["t"], cols["src"], cols["seq"], cols["ack"], cols["flags"], cols["window"], cols["payload_len"],
        cols["mss"], cols["wscale"], cols["sack_permitted"], cols["timestamp"], cols["sack"], cols["ip_id"],
        cols["uid"], cols["tags"], strict=True,
    ):
        (saddr, sport), (daddr, dport) = _ADDR[src], _ADDR[1 - src]
        out.append((t, Segment(
            src=saddr, dst=daddr, sport=sport, dport=dport, seq=seq, ack=ack, flags=flags, window=window,
            payload_len=plen, mss=mss, wscale=wscale, sack_permitted=sackp, timestamp=ts,
            sack=tuple(tuple(b) for b in sack), ip_id=ip_id, uid=uid, tags=_tags(tags),
        )))
    return out


def run_bulk_native(cfg: Any, impairments: dict[str, Any] | None = None) -> Any:
    """run_bulk(cfg) in the native core, as the same BulkResult (path_inputs: see path_inputs_of)."""
    return result_from_raw(cfg, simulate_raw(cfg, impairments), impairments)


def path_inputs_of(cfg: Any, impairments: dict[str, Any] | None, raw: dict[str, Any]) -> tuple[Any, Any]:
    """BulkResult.path_inputs for a native run: make_path's stage objects (built on an idle
    Simulator) carrying the native run's counters: the serial links' sent_packets, sent_bytes and
    drops, the loss models' offered/lost (and Gilbert state), the ATM switch's counters and PDU
    records, the PMTU hop's and the jumbo pool's counters. Queue contents are not carried."""
    from .engine import Simulator
    from .links.atm import PduFate
    from .links.atm_path import AtmSwitchPath, PduRecord
    from .links.loss import GilbertElliott
    from .links.presets import make_path
    from .links.serial import SerialLink
    from .links.stages import JumboNicStage, LossStage, PmtuStage
    from .run_bulk import path_parameters

    path = path_parameters(cfg)
    fwd, rev = make_path(Simulator(cfg.seed), cfg.link, rate_bps=path["rate_bps"], delay_ns=path["delay_ns"],
                         mtu=path["mtu"], queue_bytes=cfg.queue_bytes, **(impairments or {}))
    native = raw["path"]
    for side, path_input in enumerate((fwd, rev)):
        losses = iter(native["loss"][side])
        for stage in path_input.stages:
            if isinstance(stage, LossStage):
                stage.model.offered, stage.model.lost, bad = next(losses)
                if isinstance(stage.model, GilbertElliott):
                    stage.model.bad = bad
            elif isinstance(stage, SerialLink):
                stage.sent_packets, stage.sent_bytes = native["links"][side]
                stage.drops = [(d[0], d[1], d[2]) for d in raw["drops"] if d[3] == stage.name]
            elif isinstance(stage, AtmSwitchPath):
                atm, sw = native["atm"], stage.switch
                for key in ("cells_in", "cells_dropped", "pdus_in", "pdus_lost", "max_occupancy"):
                    setattr(sw, key, atm[key])
                sw._last_departure = atm["last_departure"]
                stage._in_busy = atm["in_busy"]
                stage.pdus = LazyList(lambda rows=atm["pdus"]: [
                    PduRecord(at, uid, cells, PduFate(*fate)) for at, uid, cells, *fate in rows])
            elif isinstance(stage, PmtuStage):
                stage.hop.forwarded, stage.hop.dropped, stage.icmp_sent = native["pmtu"]
            elif isinstance(stage, JumboNicStage):
                nic, pool = native["nic"], stage.pool
                pool.accepted, pool.dropped = nic["accepted"], nic["dropped"]
                pool.small_passed, pool.min_free = nic["small_passed"], nic["min_free"]
                stage._next_key = nic["next_key"]
    return fwd, rev


def result_from_raw(cfg: Any, raw: dict[str, Any], impairments: dict[str, Any] | None = None) -> Any:
    """The BulkResult run_bulk builds, from the native core's output."""
    from .run_bulk import BulkResult, impairment_parameters, path_parameters

    path = path_parameters(cfg)
    params = {k: (v if not isinstance(v, HostCost) else asdict(v)) for k, v in asdict(cfg).items()}
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
        ground_truth=gt, records=records, path_inputs=path_inputs_of(cfg, impairments, raw),
        aborted=snd["aborted_at"] is not None, aborted_at_ns=snd["aborted_at"], drops=drops_of(raw),
    )


def drops_of(raw: dict[str, Any]) -> list[Any]:
    """The native drop tuples as links/drops.py Drop records (flow from the sending host's index)."""
    from .links.drops import Drop
    from .run_bulk import RECEIVER_ADDR, RECEIVER_PORT, SENDER_ADDR, SENDER_PORT

    flows = {0: (SENDER_ADDR, SENDER_PORT, RECEIVER_ADDR, RECEIVER_PORT),
             1: (RECEIVER_ADDR, RECEIVER_PORT, SENDER_ADDR, SENDER_PORT)}
    return [Drop(at, uid, reason, place, flows[src], seq, plen, ilen)
            for at, uid, reason, place, src, seq, plen, ilen in raw["drops"]]


def choose(engine: str, cfg: Any, impairments: dict[str, Any] | None) -> bool:
    """True to run natively. "auto": when supported (make_path's impairments included), built and
    verified for these Python sources; "native": required (raises NativeUnavailable naming why
    not); "python": never."""
    if engine == "auto":
        engine = os.environ.get(ENGINE_ENV) or "auto"
    if engine not in ENGINES:
        raise ValueError(f"unknown simulator engine {engine!r}; expected one of {', '.join(ENGINES)}")
    if engine == "python":
        return False
    reason = unsupported_reason(cfg, impairments)
    if reason is None and engine == "auto":
        pending = [p for p in (cfg.personality, cfg.receiver_personality) if p in PENDING_PERSONALITIES]
        # Impaired runs too: result.path_inputs carries the native path's counters (path_inputs_of).
        if pending or not verified():
            return False
    if reason is None and not native_built():
        reason = "stallscope._native has no simulate_bulk (stale build: run `make native`)"
    if reason is not None:
        if engine == "native":
            raise NativeUnavailable(f"native simulator cannot run this config: {reason}")
        return False
    return True


def naglemark_trial(
    *, personality: str, link: str, variant: Any, sockbuf: int, receiver_inference: bool, seed: int,
    trial: Any, app_buf: int, lengths: list[int], engine: str = "auto", think_ns: int = 0, record: bool = False,
) -> Any | None:
    """naglemark_net.make_network + naglemark.run_trial in the native core, as the same
    TrialResult; None when the Python simulator must run it ("auto": not built, an unknown name,
    or more connections than the native host index holds)."""
    from .apps import naglemark as nm

    if engine == "auto":
        engine = os.environ.get(ENGINE_ENV) or "auto"
    if engine not in ENGINES:
        raise ValueError(f"unknown simulator engine {engine!r}; expected one of {', '.join(ENGINES)}")
    native = _native_module()
    preset = LINK_PRESETS.get(link)
    supported = (engine != "python" and native is not None and hasattr(native, "naglemark_trial")
                 and (engine == "native" or verified())
                 and personality in _PERSONALITIES and preset is not None and preset.rate_bps > 0
                 and 0 < sockbuf < 1 << 31 and app_buf > 0 and bool(lengths))
    if not supported:
        if engine == "native":
            raise NativeUnavailable("native naglemark cannot run this trial (not built or unsupported config)")
        return None
    trial = nm.TrialType(trial)
    rng = random.Random(seed)
    tick = 200 * 1_000_000  # make_network's tick-phase range
    phases = (rng.randrange(tick), rng.randrange(tick))
    _version, internal, _gauss = rng.getstate()
    config = {
        "personality": personality, "link": link, "variant": NagleVariant(variant).value, "sockbuf": sockbuf,
        "receiver_inference": bool(receiver_inference), "per_request": trial.per_request, "app_buf": app_buf,
        "lengths": list(lengths), "think_ns": int(think_ns), "record": bool(record),
    }
    try:
        raw = native.naglemark_trial(config, (list(internal[:624]), internal[624]), phases)
    except ValueError as e:
        if "host index" in str(e) and engine == "auto":
            return None  # more host pairs than the native index holds: Python runs it
        raise
    samples = tuple(nm.Sample(length, elapsed) for length, elapsed in raw["samples"])
    result = nm.TrialResult(trial, app_buf, sockbuf, preset.rate_bps, samples, raw["finished_ns"])
    return result, raw


if __name__ == "__main__":
    if sys.argv[1:2] != ["verify"]:
        sys.exit("usage: python -m stallscope.simulate.native_core verify [pytest args]")
    sys.exit(verify(tuple(sys.argv[2:]) or ("-m", "not slow")))
