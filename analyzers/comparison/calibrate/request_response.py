"""A request/response fit's path: the rate and delay its responses' round trips show."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from ..fit import Fit, Fitted
from ..fit.path import one_way_delay

# Request/response: the bottleneck rate measured from ACK spacing is only a floor when responses
# are short (the link idles between them); these multiples of it, and a rate no LAN limits, are tried.
RATE_FACTORS = (1, 2, 5, 10)


UNLIMITED_BPS = 10_000_000_000


# The naglemark client's receive window: its stack's default buffer, at most 65535 without window
# scaling (native/src/sim/naglemark.rs, personality.rs default_rcvbuf).
TRIAL_CLIENT_WINDOW = 65535


def _exchange_times(rows: Any, dir_: int, rtt: int | None, think_ns: int = 0) -> list[int | None]:
    """The trace's response times as the requesting client saw them, one per response in order
    (None before the first request): from each request reaching the sender's tap to the response's
    last byte leaving it, plus the round trip that followed it (the turnaround to the next request,
    less the client's think time `think_ns`: the last byte's trip and the next request's, as
    this exchange's path met them), or `rtt` for the last response."""
    from ..compare import messages

    if rows is None:
        return []
    import bisect

    import polars as pl

    reqs = (rows.filter((pl.col("dir") != dir_) & pl.col("new_data") & (pl.col("payload_len") > 0))
            .sort("ts_ns")["ts_ns"].to_list())
    out: list[int | None] = []
    for m in messages(rows, dir_):
        i = bisect.bisect_right(reqs, m["first_ns"]) - 1  # the last request before the response began
        if i < 0:
            out.append(None)
            continue
        j = bisect.bisect_right(reqs, m["last_ns"])  # the next request after its last byte
        trip = max(0, reqs[j] - m["last_ns"] - think_ns) if j < len(reqs) else (rtt or 0)
        out.append(m["last_ns"] - reqs[i] + trip)
    return out


def response_delays(fit: Fit, rows: Any, rate: int) -> list[tuple[int, str]]:
    """The one-way delays tried at `rate`: the fitted one (the handshake's round trip), and where
    the responses met a longer one (fit.exchange.fit_turnaround) than the queue they could build at `rate`
    explains, that round trip less a full segment's and an ACK's serialisation at `rate`."""

    path = fit.value("_path") or {}
    out = [(int(fit.value("delay_ns")), "")]
    loaded = path.get("loaded_rtt")
    lengths = fit.value("lengths") or [0]
    # The queue a response can meet at `rate` (its own bytes, at most the send buffer): a longer
    # round trip under load that this explains is the link's, which the trial makes itself.
    queue_ns = min(max(lengths), fit.value("sockbuf") or max(lengths)) * 8e9 / rate
    if loaded and loaded - (path.get("rtt") or 0) > queue_ns:
        mtu = fit.value("mtu")
        d = one_way_delay(rows, int(loaded), rate, lambda ip: ip, False, mtu)
        out.append((d, f"half the round trip the responses met ({loaded} ns: {path.get('loaded_rtt_source')}) less "
                       "a full segment's and an ACK's serialisation"))
    return out


def refine_request_response(fit: Fit, rows: Any) -> Fit:
    """The path of a request/response fit, rate and one-way delay, by simulation: each candidate
    trial's response times against the trace's, response by response (the same lengths in the same
    order), as the mean log ratio, plus the relative difference in slow responses (over three times
    the trace's median). Per response, not only the median: a slower link stretches the long
    responses, a longer delay every one, which the trace tells apart."""
    from stallscope.simulate.apps.naglemark import run_trial

    path = fit.value("_path") or {}
    think = int(fit.value("think_ns") or 0)
    exchanges = _exchange_times(rows, fit.dir, path.get("loaded_rtt") or path.get("rtt"), think)
    trace = sorted(t for t in exchanges if t is not None)
    rate = fit.value("rate_bps")
    if not trace or not rate:
        return fit
    median_trace = trace[len(trace) // 2]
    slow_trace = sum(1 for t in trace if t > 3 * median_trace)
    lengths = fit.value("lengths") or []
    # The trial's client keeps its stack's default receive buffer (the trial has no knob for it):
    # where the trace's peer advertised more (Linux autotunes it), a response longer than the
    # trial's window takes it a round trip more, which no path explains: those are held out.
    peer_window = fit.value("_peer_window") or 0
    window = TRIAL_CLIENT_WINDOW if peer_window > TRIAL_CLIENT_WINDOW else max(lengths, default=0)
    scored = []
    for r in sorted({*(rate * k for k in RATE_FACTORS), UNLIMITED_BPS}):
        for delay, how in response_delays(fit, rows, int(r)):
            args = fit.trial_args(rate_bps=int(r), delay_ns=delay)
            try:
                res = run_trial(**{k: v for k, v in args.items() if k != "link"}, link=args["link"])
            except (ValueError, KeyError, RuntimeError):
                continue
            times = [s.elapsed_ns for s in res.samples]
            pairs = [(m, t) for m, t, n in zip(times, exchanges, lengths) if t is not None and m > 0 and t > 0
                     and n <= window]
            if not pairs:
                continue
            slow = sum(1 for m, _ in pairs if m > 3 * median_trace)
            score = (sum(abs(math.log(m / t)) for m, t in pairs) / len(pairs)
                     + abs(slow - slow_trace) / max(slow_trace, 1))
            scored.append((score, int(r), delay, how))
    if not scored:
        return fit
    score, best, delay, how = min(scored, key=lambda x: x[0])
    values = dict(fit.values)
    old = values["rate_bps"]
    candidates = f"{len(scored)} rates and delays (the measured rate's multiples and 10 Gbit/s; the handshake's " \
                 "delay and the loaded one)" if any(h for *_, h in scored) else \
                 f"{len(scored)} rates (the measured one's multiples and 10 Gbit/s)"
    values["rate_bps"] = Fitted(best, f"chosen by simulation among {candidates}: the trial closest to the trace's "
                                f"response times, response by response, and its slow responses (distance {score:.3f}); "
                                f"first estimate {old.value} ({old.source})")
    if how:
        values["delay_ns"] = Fitted(delay, f"{how}: chosen with the rate (distance {score:.3f}); first estimate "
                                    f"{values['delay_ns'].value} ({values['delay_ns'].source})")
    return replace(fit, values=values)
