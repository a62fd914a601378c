"""The receiver's ACK behaviour, learned from the trace: how long it delays an ACK, whether that
delay is a one-shot timer (Linux 40..200 ms from its ATO estimate, FreeBSD 100 ms) or a free-running
200 ms tick that every connection shares (4.4BSD, SunOS: delays spread over 0..200 ms and
phase-locked), and whether it ACKs every second full segment at once.

The delay of an ACK is measured at the tap from the newest data it covers; at the sender that time
also holds the round trip, which is taken off with the path RTT from vantage.py.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from stallscope.analyzers.vantage import DELAYED_ACK_NS, Timing

# An ACK later than this after the data it covers was held by a timer, not sent at once: no
# delayed-ACK timer runs shorter (Linux TCP_DELACK_MIN 40 ms, FreeBSD 100 ms, BSD 0..200 ms tick), and
# queueing on a loaded path can hold an immediate ACK several ms.
DELAYED_MIN_NS = DELAYED_ACK_NS  # (one value: vantage reads it for the round trip)
LINUX_DELACK_MIN_NS = 40_000_000  # TCP_DELACK_MIN
# The shortest delay a one-shot delayed-ACK timer gives, with some jitter below Linux's minimum.
ONE_SHOT_MIN_NS = 35_000_000
BSD_TICK_NS = 200_000_000  # tcp_fasttimo
# RFC 1122 4.2.3.2: an ACK may be delayed by less than 0.5 s; no delayed-ACK timer holds one longer.
MAX_ACK_DELAY_NS = 500_000_000


def every_second_shares(state: pl.DataFrame) -> dict[tuple[int, int], float]:
    """Per (stream, acker's dir): the share of the acker's ACKs that covered two or more data packets
    at once (a receiver that ACKs every second full segment shows about one half or more; a delaying
    one, few); no entry for a direction without such ACKs. Packets seen as TSO/GRO super-frames hold
    several segments, so where the peer sent super-frames an ACK that advanced by two full segments
    or more counts too (the receiver ACKed every second wire segment of one super-frame). One pass
    over all connections: a query per connection (~85 us each) made most of the time of a capture
    of many short connections."""
    keys = ["stream", "dir"]
    covering = pl.col("ack_segments").is_not_null()
    # (Each pass selects its few columns before it filters: a filter copies every column it keeps.)
    out = {(int(s), int(d)): float(v) for s, d, v in state.select(*keys, "ack_segments").filter(covering)
           .group_by(keys).agg((pl.col("ack_segments") >= 2).mean()).iter_rows()}
    data = pl.col("payload_len") > 0
    # The sender's full segment, where it also sent super-frames (most captures hold none).
    supers = state.select(*keys, "payload_len", "superframe").filter(data & pl.col("superframe")).select(keys).unique()
    if supers.is_empty():
        return out
    # Only the connections with super-frames: filters keep the table's order, which the diffs need.
    theirs = state.select(*keys, "payload_len", "superframe", "ack_segments", "ack_rel").filter(
        pl.col("stream").is_in(supers["stream"].unique().implode()))
    sent = theirs.join(supers, on=keys, how="inner").filter(data & ~pl.col("superframe")).group_by(keys).agg(
        pl.col("payload_len").max().alias("segment"))
    segment = sent.filter(pl.col("segment") > 0).select(
        "stream", (1 - pl.col("dir").cast(pl.Int16)).cast(state.schema["dir"]).alias("dir"), "segment")
    acks = theirs.filter(covering).select(*keys, advance=pl.col("ack_rel").diff().over(keys))
    wide = (acks.join(segment, on=keys, how="inner").filter(pl.col("advance") > 0)
            .group_by(keys).agg((pl.col("advance") >= 2 * pl.col("segment")).mean().alias("wide")))
    for s, d, v in wide.iter_rows():
        out[(int(s), int(d))] = max(out[(int(s), int(d))], float(v))
    return out


def ack_delays(state: pl.DataFrame, timings: dict[tuple[int, int], Timing]) -> pl.DataFrame:
    """Every advancing ACK's delay at the receiver, ns (never negative; column ack_delay_ns), with
    its (stream, acker's dir) and the data packets it covered (ack_segments), sorted by those and
    else in the table's order: the delay seen at the
    tap less the part of the round trip it holds there (the rest of the RTT of the direction whose
    data the ACKs answer). One pass over all connections (a partition and two Series operations
    per direction cost 0.2 ms each)."""
    keys = ["stream", "dir"]
    held = state.select(*keys, "ack_delay_ns", "ack_segments").filter(pl.col("ack_delay_ns").is_not_null())
    # The ACKs of direction d answer the data of direction 1 - d: that direction's timing says where the tap was.
    rest = [(s, 1 - d, t.rest_of_rtt()) for (s, d), t in timings.items()]
    rest_of = pl.DataFrame(rest, schema={"stream": state.schema["stream"], "dir": state.schema["dir"], "rest": pl.Int64},
                           orient="row")
    return (held.join(rest_of, on=keys, how="left", maintain_order="left")
            .select(*keys, (pl.col("ack_delay_ns") - pl.col("rest").fill_null(0)).clip(lower_bound=0)
                    .alias("ack_delay_ns"), "ack_segments")
            .sort(keys, maintain_order=True))


def split_delays(delays: pl.DataFrame) -> dict[tuple[int, int], pl.Series]:
    """ack_delays' column per (stream, acker's dir), each a slice of it."""
    column = delays["ack_delay_ns"]
    out: dict[tuple[int, int], pl.Series] = {}
    at = 0
    for s, d, n in delays.group_by(["stream", "dir"], maintain_order=True).len().iter_rows():
        out[(int(s), int(d))] = column.slice(at, n)
        at += n
    return out


# A receiver's ACK delays in brief: ACKs measured, those held (delay >= DELAYED_MIN_NS), the held
# ones' median, 10th and 90th percentiles (nearest rank) and maximum, ns (None when none held), and
# the ACKs of a single data packet it sent at once before its timer first held one (quick ACKs).
DelaySummary = tuple[int, int, int | None, int | None, int | None, int | None, int]


def delay_summaries(delays: pl.DataFrame) -> dict[tuple[int, int], DelaySummary]:
    """DelaySummary per (stream, acker's dir) of ack_delays' table (each group in time order), in
    one group-by."""
    x = pl.col("ack_delay_ns")
    held = x.filter(x >= DELAYED_MIN_NS)
    at = pl.int_range(pl.len())
    # A receiver whose timer held an ACK (ONE_SHOT_MIN_NS or more: no queue on an ordinary path
    # holds one that long, and no timer runs shorter) but ACKed single segments at once before it
    # first did: quick ACKs at the start (Linux's quickack mode, up to 16; none held: 0).
    quick = ((at < at.filter(x >= ONE_SHOT_MIN_NS).min()) & (pl.col("ack_segments") == 1)
             & (x < DELAYED_MIN_NS)).sum()
    rows = delays.group_by(["stream", "dir"], maintain_order=True).agg(
        pl.len().alias("n"), held.len().alias("held"), held.median().alias("med"),
        held.quantile(0.1, interpolation="nearest").alias("lo"), held.quantile(0.9, interpolation="nearest").alias("hi"),
        held.max().alias("max"), quick.alias("quick"))
    return {(int(s), int(d)): (int(n), int(h), *(None if v is None else int(v) for v in (med, lo, hi, mx)), int(q or 0))
            for s, d, n, h, med, lo, hi, mx, q in rows.iter_rows()}


def delayed_ack_profile(summary: DelaySummary | None, acks_covering_two: float | None) -> dict[str, Any]:
    """One receiver's ACK delays (their DelaySummary) as its timer's typical value and its kind."""
    if summary is None or summary[0] == 0:
        return {"acks_measured": 0, "timer": "unknown"}
    n, held, med, lo, hi, mx, quick = summary
    out: dict[str, Any] = {
        "acks_measured": n,
        "delayed_acks": held,
        "every_second_segment": None if acks_covering_two is None else round(acks_covering_two, 3),
        "quick_acks_at_start": quick,
    }
    if held == 0:
        out["timer"] = "none seen"
        return out
    out.update({"delay_median_ns": med, "delay_p10_ns": lo, "delay_p90_ns": hi, "delay_max_ns": mx})
    # A free-running tick spreads delays over its period; a one-shot timer repeats one value.
    spread = hi - lo
    if hi <= BSD_TICK_NS * 1.1 and spread > 0.4 * hi and held >= 3:
        out["timer"] = "tick"
        out["timer_ns"] = BSD_TICK_NS if hi > 120_000_000 else hi
    else:
        out["timer"] = "one-shot"
        out["timer_ns"] = med
    return out


# Timers that run on a free-running clock fire only at its ticks, so the ACKs they send are
# phase-locked to it: 4.4BSD/SunOS tcp_fasttimo every 200 ms, and Linux 2.0's delayed-ACK timer,
# whose expiry is rounded up to a jiffy (HZ = 100: 10 ms). (period, half-width of the phase window.)
TICK_CLOCKS = ((BSD_TICK_NS, 1_000_000), (10_000_000, 250_000))
# Only ACKs held at least this long beyond the prompt data-to-ACK time are asked for their phase.
TICK_MIN_DELAY_NS = 2_000_000
# A phase counts as a timer's when that many ACKs in one window would happen by chance less often
# than this (Poisson tail, times the number of windows that fit in the period).
TICK_SIGNIFICANCE = 1e-4
TICK_MIN_ACKS = 4
# ACKs on one phase whose holds are all short (under this share of the period) and equal to within
# the phase window: the data they answer arrived on that phase too, so the clock is the traffic's
# (a sender's rounds dividing 200 ms, each ACK queued the same few ms on the path), not a timer's,
# which holds data that arrives at any phase until its next tick. (Moldeklev's deadlock locks the
# data to the tick as well, but each segment is held most of the period.)
TICK_SHORT_SHARE = 0.1


def _poisson_tail(k: int, lam: float) -> float:
    """P(X >= k) for X ~ Poisson(lam)."""
    import math

    if k <= 0:
        return 1.0
    term = math.exp(-lam)
    below = term
    for i in range(1, k):
        term *= lam / i
        below += term
    return max(0.0, 1.0 - below)


def learn_tick(ack_ts, delays) -> dict[str, int] | None:
    """The free-running clock the receiver's delayed ACKs are locked to, if any: among the ACKs it
    held (delay >= TICK_MIN_DELAY_NS; tap times and delays as arrays or lists), the phase window of
    each clock in TICK_CLOCKS that holds far more of their tap times than chance would. Returns
    period, phase, half-width and counts, or None."""
    import numpy as np

    ts, held = np.asarray(ack_ts, dtype=np.int64), np.asarray(delays, dtype=np.float64)
    keep = held >= TICK_MIN_DELAY_NS  # (nan, an unknown delay, is not held)
    ts, held = ts[keep], held[keep]
    n = int(ts.size)
    if n < TICK_MIN_ACKS:
        return None
    for period, half in TICK_CLOCKS:
        width = 2 * half
        order = np.argsort(ts % period, kind="stable")
        ph = (ts % period)[order]
        ext = np.concatenate([ph, ph + period])
        counts = np.searchsorted(ext, ph + width, side="right") - np.arange(n)
        best = int(counts.argmax())
        c = int(counts[best])
        if c < TICK_MIN_ACKS:
            continue
        windows = period / width
        if _poisson_tail(c, n / windows) * windows >= TICK_SIGNIFICANCE:
            continue
        holds = held[np.concatenate([order, order])[best:best + c]]
        if holds.max() < TICK_SHORT_SHARE * period and holds.max() - holds.min() <= width:
            continue
        inside = ext[best:best + c]
        phase = int(np.median(inside)) % period
        return {"period_ns": period, "phase_ns": phase, "half_width_ns": half, "acks_on_phase": c, "acks_held": n}
    return None


def on_tick(ts_ns: int, tick: dict[str, int]) -> bool:
    """The tap time `ts_ns` falls in the learned clock's phase window."""
    period = tick["period_ns"]
    off = (ts_ns - tick["phase_ns"]) % period
    return min(off, period - off) <= tick["half_width_ns"]
