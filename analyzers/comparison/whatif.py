"""What-ifs: the fitted run with one change at a time, each predicting goodput and time lost by
cause, ranked by gain. The changes offered follow the causes found (a Nagle stall suggests
TCP_NODELAY and Minshall's variant; a window-update deadlock Moldeklev's S >= R; a burst-loss
timeout SACK...); `all` runs every one that applies to the workload, and NAME=VALUE sets a knob."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from .fit import Fit



@dataclass(frozen=True)
class WhatIf:
    name: str
    description: str
    # Causes after which the change is worth predicting (empty: any).
    for_causes: frozenset[str]
    change: Callable[[Fit], dict[str, Any] | None]  # None: does not apply to this fit


def _nagle(variant: str) -> Callable[[Fit], dict[str, Any] | None]:
    def change(fit: Fit) -> dict[str, Any] | None:
        if variant == "CORK" and fit.value("personality") != "linux":
            return None
        if fit.kind != "request_response":
            return {"nagle": variant}
        out: dict[str, Any] = {"variant": variant}
        if variant in UNHELD:
            out.update(_unpaced(fit))
        return out
    return change


# Nagle variants with which no short segment waits for the peer's delayed ACK.
UNHELD = ("OFF", "CORK")


def _unpaced(fit: Fit) -> dict[str, Any]:
    """A request/response fit whose Linux sender paced itself because Nagle holds raised its srtt
    (fit.exchange.fit_host_pace): without the holds, the rate its unpaced responses left at, and the
    delay fitted from the responses' round trip at that rate (calibrate.request_response.response_delays)."""
    pace = fit.value("_host_pace")
    rate = fit.value("rate_bps")
    if not pace or not rate or pace["unpaced_rate"] <= rate:
        return {}
    from .calibrate.request_response import response_delays

    out: dict[str, Any] = {"rate_bps": int(pace["unpaced_rate"])}
    fitted = response_delays(fit, None, int(rate))
    if len(fitted) > 1 and fit.value("delay_ns") == fitted[1][0]:
        # The fitted delay is the loaded round trip's: the same round trip at the new rate.
        out["delay_ns"] = response_delays(fit, None, out["rate_bps"])[1][0]
    return out


def _bulk_only(f: Callable[[Fit], dict[str, Any] | None]) -> Callable[[Fit], dict[str, Any] | None]:
    return lambda fit: f(fit) if fit.kind == "bulk" else None


def _sndbuf_3mss(fit: Fit) -> dict[str, Any] | None:
    s, mss = fit.value("sndbuf"), fit.value("_segment")
    if fit.kind == "request_response":
        s = fit.value("sockbuf")
        return {"sockbuf": 3 * mss} if mss and s and s < 3 * mss else None
    return {"sndbuf": 3 * mss} if mss and s and s < 3 * mss else None


def _s_ge_r(fit: Fit) -> dict[str, Any] | None:
    s, r = fit.value("sndbuf"), fit.value("rcvbuf")
    return {"sndbuf": r} if s and r and s < r else None


def _times(name: str, k: int) -> Callable[[Fit], dict[str, Any] | None]:
    def change(fit: Fit) -> dict[str, Any] | None:
        v = fit.value(name)
        return {name: min(v * k, 1 << 30)} if v else None
    return _bulk_only(change)


def _sack(fit: Fit) -> dict[str, Any] | None:
    return None if fit.value("sack") else {"sack": True}


def _mtu_probing(fit: Fit) -> dict[str, Any] | None:
    # (Not where the fit already runs with it: a sender seen falling back after its timeouts.)
    if fit.kind != "bulk" or fit.value("personality") != "linux" or fit.value("mtu_probing"):
        return None
    return {"mtu_probing": 1}


def _atm_policy(policy: str) -> Callable[[Fit], dict[str, Any] | None]:
    """The fitted ATM switch port with another discard policy (Kung & Morris): its buffer, rates
    and everything else as fitted."""
    def change(fit: Fit) -> dict[str, Any] | None:
        port = fit.value("atm_switch")
        if fit.kind != "bulk" or not port or port.get("policy") == policy:
            return None
        return _with_ensemble(fit, "atm_switch", lambda p: {**p, "policy": policy})
    return change


def _with_ensemble(fit: Fit, name: str, change: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """The fitted path mechanism `name` changed, and so each of the mechanisms that fit the trace
    about as well (calibrate.link_groups.ENSEMBLE_MARGIN): the prediction is their runs' median (quick_run)."""
    out: dict[str, Any] = {name: change(fit.value(name))}
    ensemble = fit.value("_ensemble")
    if ensemble and all(name in alt for alt in ensemble):
        out["ensemble"] = [{**alt, name: change(alt[name])} for alt in ensemble]
    out.update(_autotuned_sndbuf(fit))
    return out


# Linux's send-buffer autotuning ceiling (net.ipv4.tcp_wmem[2], 4 MB; tcp_sndbuf_expand grows
# sk_sndbuf with the congestion window up to it), as the fit's `sndbuf` counts it: the size asked
# for, which Linux doubles.
LINUX_WMEM_MAX = 4 * 1024 * 1024
AUTOTUNING = ("linux",)


def _autotuned_sndbuf(fit: Fit) -> dict[str, Any]:
    """A what-if that changes the path mechanism behind the trace's losses lets the flight grow past
    what those losses allowed: where the fitted S is only a floor (calibrate.ranges.with_sndbuf_range: the
    flight's plateau of a lossy trace, no run told a larger buffer apart) and the stack autotunes its
    send buffer (Linux), the run's S is the autotuning ceiling. Without it the run keeps the flight
    the trace's own losses capped (atm_small_buffer's 420 KB plateau, where the EPD capture's
    flight reached 1.3 MB), and its EPD loses fewer, shorter episodes than the capture's."""
    s, rng = fit.value("sndbuf"), fit.value("sndbuf_range") or {}
    if fit.kind != "bulk" or fit.value("personality") not in AUTOTUNING or not s:
        return {}
    if rng.get("claims_value") or rng.get("high") is not None:
        return {}
    ceiling = LINUX_WMEM_MAX // 2
    return {"sndbuf": ceiling} if s < ceiling else {}


def _more_slots(fit: Fit) -> dict[str, Any] | None:
    """The fitted NIC with jumbo slots for the peer's whole window of full segments, at least 4
    times as many (GigaTCP: the Tigon II's 384 slots against a window of thousands of frames)."""
    nic = fit.value("jumbo_nic")
    if fit.kind != "bulk" or not nic:
        return None

    def more(n: dict[str, Any]) -> dict[str, Any]:
        segment, window = fit.value("_segment") or 1, fit.value("rcvbuf") or 0
        return {**n, "slots": max(4 * int(n["slots"]), -(-int(window) // int(segment)) + 1)}

    return _with_ensemble(fit, "jumbo_nic", more)


def _pmtu_icmp(fit: Fit) -> dict[str, Any] | None:
    """The fitted black-hole hop with its ICMP frag-needed reaching the sender (RFC 1191)."""
    hop = fit.value("pmtu_hop")
    if fit.kind != "bulk" or not hop or hop.get("mode") == "icmp":
        return None
    return {"pmtu_hop": {**hop, "mode": "icmp"}}


def _correct_mss(fit: Fit) -> dict[str, Any] | None:
    """The sender's segments at the MSS both ends offered: its route MTU no smaller than the
    interface's (GigaTCP's advertised-vs-used MSS)."""
    return {"route_mtu": None} if fit.kind == "bulk" and fit.value("route_mtu") else None


CATALOGUE: tuple[WhatIf, ...] = (
    WhatIf("nodelay", "TCP_NODELAY: Nagle off", frozenset({"nagle_delayed_ack", "window_update_deadlock"}),
           _nagle("OFF")),
    WhatIf("minshall", "Minshall's Nagle variant (hold a short segment only behind another short one)",
           frozenset({"nagle_delayed_ack"}), _nagle("MINSHALL")),
    WhatIf("cork", "TCP_CORK (Linux) around each response or message: full segments only until its last write, "
           "then the tail", frozenset(), _nagle("CORK")),
    WhatIf("sndbuf_3mss", "send buffer of at least 3 MSS (Moldeklev & Gunningberg's rule)",
           frozenset({"nagle_delayed_ack", "window_update_deadlock", "send_buffer_limited"}), _sndbuf_3mss),
    WhatIf("s_ge_r", "send buffer at least the receive buffer, S >= R (Moldeklev & Gunningberg)",
           frozenset({"window_update_deadlock", "nagle_delayed_ack"}), _bulk_only(_s_ge_r)),
    WhatIf("rcvbuf_x4", "a receive buffer 4 times larger", frozenset({"receiver_window_limited"}), _times("rcvbuf", 4)),
    WhatIf("sndbuf_x4", "a send buffer 4 times larger", frozenset({"send_buffer_limited"}), _times("sndbuf", 4)),
    WhatIf("sack", "SACK on both ends (RFC 2018, RFC 6675 recovery)",
           frozenset({"burst_loss_timeout", "single_loss_timeout"}), _bulk_only(_sack)),
    WhatIf("epd", "early packet discard at the ATM switch port: a PDU that finds the buffer nearly full is refused "
           "whole (Kung & Morris)", frozenset({"burst_loss_timeout", "single_loss_timeout"}), _atm_policy("epd")),
    WhatIf("ppd", "partial packet discard at the ATM switch port: after a PDU's first lost cell the rest of it is "
           "dropped but its last (Kung & Morris)", frozenset({"burst_loss_timeout", "single_loss_timeout"}),
           _atm_policy("ppd")),
    WhatIf("jumbo_slots", "jumbo receive slots for the peer's whole window at the receiving NIC (at least 4 times "
           "as many; Shalunov, GigaTCP)", frozenset({"jumbo_slot_exhaustion", "burst_loss_timeout",
                                                     "single_loss_timeout"}), _more_slots),
    WhatIf("pmtu_icmp", "working path-MTU discovery: the smaller-MTU hop's ICMP frag-needed reaches the sender "
           "(RFC 1191)", frozenset({"pmtu_blackhole"}), _pmtu_icmp),
    WhatIf("correct_mss", "segments at the MSS both ends offered: the sender's route MTU the interface's (Shalunov, "
           "GigaTCP)", frozenset({"mss_mismatch"}), _correct_mss),
    WhatIf("mtu_probing", "working path-MTU black-hole detection (Linux tcp_mtu_probing=1, RFC 4821)",
           frozenset({"pmtu_blackhole", "mss_mismatch"}), _mtu_probing),
)
BY_NAME = {w.name: w for w in CATALOGUE}
# NAME=VALUE knobs: the fit's value replaced (bulk: BulkConfig fields; request/response: trial arguments).
KNOBS = {"nagle": str, "mss": int, "sndbuf": int, "rcvbuf": int, "sockbuf": int, "app_buf": int, "rate_bps": int,
         "delay_ns": int, "mtu": int, "sack": lambda v: v.lower() in ("1", "on", "true", "yes"), "variant": str}


def parse(spec: str) -> list[tuple[str, dict[str, Any] | None]]:
    """`all`, or a comma-separated list of catalogue names and NAME=VALUE knobs: [(label, changes
    or None for a catalogue name)]. Raises ValueError naming an unknown name or knob."""
    out: list[tuple[str, dict[str, Any] | None]] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        if part == "all":
            out += [(w.name, None) for w in CATALOGUE]
        elif "=" in part:
            key, value = (x.strip() for x in part.split("=", 1))
            if key not in KNOBS:
                raise ValueError(f"--what-if: unknown knob {key!r}; expected one of {', '.join(sorted(KNOBS))}")
            try:
                out.append((part, {key: KNOBS[key](value)}))
            except ValueError:
                raise ValueError(f"--what-if: {key}={value!r} is not a valid value") from None
        elif part in BY_NAME:
            out.append((part, None))
        else:
            raise ValueError(f"--what-if: unknown change {part!r}; expected all, NAME=VALUE or one of "
                             f"{', '.join(BY_NAME)}")
    return out


def plan(fit: Fit, causes: set[str], spec: str | None) -> list[tuple[str, str, dict[str, Any]]]:
    """The what-ifs to run: (name, description, changes). Without a spec, those the causes suggest;
    with `all`, every one that applies to the fit."""
    chosen = parse(spec) if spec else [(w.name, None) for w in CATALOGUE if w.for_causes & causes]
    out = []
    for label, changes in chosen:
        if changes is None:
            w = BY_NAME[label]
            c = w.change(fit)
            if c is not None:
                out.append((w.name, w.description, c))
        else:
            out.append((label, f"set {label}", changes))
    return out


@dataclass
class QuickRun:
    """A bulk what-if measured from the simulator's own output, without writing and analysing a
    capture (most of a reference run's time on a long trace): goodput as the analyzer measures it at
    the sender's tap, and time lost per cause from the run's ground truth (the sender's stalls)."""

    goodput_bps: float | None
    time_lost_ns: dict[str, int]
    error: str | None = None
    samples: tuple = ()


def quick_run(fit: Fit, changes: dict[str, Any]) -> QuickRun:
    """The run of `fit` with `changes`; with changes["ensemble"] (alternative changes, each laid
    over the rest), the run of median goodput among them (its time lost with it)."""
    if changes.get("ensemble"):
        base = {k: v for k, v in changes.items() if k != "ensemble"}
        runs = [quick_run(fit, {**base, **alt}) for alt in changes["ensemble"]]
        ok = sorted((r for r in runs if r.goodput_bps is not None), key=lambda r: r.goodput_bps)
        if not ok:
            return runs[0]
        return ok[(len(ok) - 1) // 2]
    return _quick_run(fit, changes)


def _quick_run(fit: Fit, changes: dict[str, Any]) -> QuickRun:
    from stallscope.simulate.run_bulk import run_bulk

    from .calibrate.target import run_goodput, sender_stalls

    try:
        res = run_bulk(fit.bulk_config(**changes), impairments=fit.impairments(changes))
    except (ValueError, KeyError, RuntimeError) as e:
        return QuickRun(None, {}, f"{type(e).__name__}: {e}")
    _, lost = sender_stalls(res)
    return QuickRun(run_goodput(res) * 1e6, lost)


def _run(args: tuple[Fit, dict[str, Any]]) -> Any:
    from .reference import run_reference

    fit, changes = args
    if fit.kind == "bulk":
        return quick_run(fit, changes)
    return run_reference(fit, changes)


class Workers:
    """A pool of spawned worker processes, started on first use (or by `start`, so its start-up
    overlaps the fit) that runs the what-ifs. Spawned, not forked:
    a fork after Polars started its thread pool can deadlock the child."""

    def __init__(self, jobs: int = 2) -> None:
        self.jobs = max(1, jobs)
        self._pool: ProcessPoolExecutor | None = None

    def start(self) -> Workers:
        if self._pool is None and self.jobs > 1:
            self._pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=multiprocessing.get_context("spawn"))
            for _ in range(self.jobs):
                self._pool.submit(_warm)
        return self

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _warm() -> None:
    """A worker's imports, done while the parent fits."""
    from stallscope.simulate.run_bulk import run_bulk  # noqa: F401

    from . import calibrate, reference  # noqa: F401


def start_all(fit: Fit, items: list[tuple[str, str, dict[str, Any]]], workers: Workers) -> Callable[[], list[Any]]:
    """Start the what-ifs' runs in `workers` (in this process, one after the other, without a pool)
    and return what collects their results in order: the pool works on them meanwhile."""
    args = [(fit, c) for _, _, c in items]
    if workers.jobs <= 1 or len(args) <= 1:
        return lambda: [_run(a) for a in args]
    if fit.kind == "bulk":
        # A bulk what-if is the native run alone (quick_run), which releases the GIL: threads run
        # them side by side without the processes' start-up (a second or two of imports each).
        threads = ThreadPoolExecutor(max_workers=workers.jobs)
        futures = [threads.submit(_run, a) for a in args]
        threads.shutdown(wait=False)
        return lambda: [f.result() for f in futures]
    pool = workers.start()._pool
    assert pool is not None
    futures = [pool.submit(_run, a) for a in args]
    return lambda: [f.result() for f in futures]


def run_all(fit: Fit, items: list[tuple[str, str, dict[str, Any]]], jobs: int = 2) -> list[Any]:
    """Run the what-ifs' reference runs, in parallel processes when there are several."""
    if not items:
        return []
    with Workers(min(jobs, len(items))) as workers:
        return start_all(fit, items, workers)()
