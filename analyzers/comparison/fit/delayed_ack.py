"""The peer's delayed-ACK timer, and the phase of the BSD receivers' 200 ms clock."""

from __future__ import annotations

import functools

import polars as pl

from ...findings import ConnectionAnalysis, DirectionAnalysis
from .model import Fit, Fitted

# The BSD receivers acknowledge held data on a free-running 200 ms clock (tcp_fasttimo), whose
# phase the simulator draws from the run's seed, with each host's ISS (native/src/sim/world.rs
# Draws: MT19937 seeded as Python's random.Random, native/src/sim/rng.rs): sender's phase, sender's
# ISS, receiver's phase, each phase below a second, on a grid from the connection's start (t = 0).
TICK_STACKS = ("sunos41", "bsd44", "tru64")


BSD_DELACK_TICK_NS = 200_000_000


DRAW_PHASE_RANGE = 1_000_000_000


# A stall the peer's ACK ended, held at least this long after the newest segment it covered (less
# the round trip the tap adds): the analyzer's stall threshold, longer than a slow host's copies
# (a Sun IPX receiver's ACKs wait 3-7 ms behind its reads) and than an ACK of two segments.
HELD_ACK_NS = 10_000_000


# Stalls the peer's ACK ends (not a timeout's resend).
RELEASED_BY_ACK = ("window_update_deadlock", "nagle_delayed_ack", "receiver_window_limited", "sender_sws",
                   "send_buffer_limited")


# Seeds searched for the receiver's phase: their phases lie about 50 us apart.
TICK_SEEDS = 4096


@functools.lru_cache(maxsize=1)
def receiver_phases() -> tuple[int, ...]:
    """The receiver's delayed-ACK tick phase (mod 200 ms) each seed 1..TICK_SEEDS draws."""
    import random

    out = []
    for seed in range(1, TICK_SEEDS + 1):
        rng = random.Random(seed)
        rng.randrange(DRAW_PHASE_RANGE)
        rng.randrange(1 << 32)
        out.append(rng.randrange(DRAW_PHASE_RANGE) % BSD_DELACK_TICK_NS)
    return tuple(out)


def fit_tick_phase(d: DirectionAnalysis, conn: ConnectionAnalysis, rows: pl.DataFrame | None,
                    values: dict[str, Fitted]) -> None:
    """The peer's delayed-ACK clock's phase, where the receiver may run a BSD stack (a 200 ms tick)
    and the sender stalled until an ACK the peer held (at least HELD_ACK_NS): that ACK left on the
    tick (the first such stall's; or the phase the analyzer learned from several held ACKs),
    counted from the connection's start; the fit takes the seed whose receiver tick falls there. A
    short transfer's one window-update deadlock lasts until that tick: its length, and so the
    goodput, is the phase (a Nagle trace of 256 KB over FDDI held 87 ms where seed 1's tick held
    127). Not where the peer's delays lock to Linux 2.0's 10 ms jiffies."""
    pers = values["personality"].value
    recv = values["receiver_personality"].value if "receiver_personality" in values else pers
    if rows is None or pers not in TICK_STACKS + ("linux20",) or recv not in TICK_STACKS + ("linux20",):
        return
    tick = d.profile.get("_peer_tick") or {}
    if tick and tick.get("period_ns") != BSD_DELACK_TICK_NS:
        return
    vantage = (conn.vantage.get(str(d.dir)) or {}).get("vantage")
    path = values["_path"].value if "_path" in values else {}
    # At the sender's tap an ACK's delay holds the round trip; at a middle tap about half of it.
    trip = int(path.get("rtt") or 0) * (1 if vantage == "sender" else 0 if vantage == "receiver" else 0.5)
    syn = rows.filter(pl.col("flag_syn")).sort("ts_ns")
    released = sorted((s for s in conn.stalls if s.dir == d.dir and s.cause in RELEASED_BY_ACK
                       and isinstance(s.evidence, dict)
                       and (s.evidence.get("releasing_ack_delay_ns") or 0) - trip >= HELD_ACK_NS),
                      key=lambda s: s.end_ns)
    if syn.is_empty() or not released:
        return
    t0 = int(syn["ts_ns"][0])
    if tick.get("period_ns") == BSD_DELACK_TICK_NS:
        at, how = int(tick["phase_ns"]), (f"the phase the analyzer learned from {tick.get('acks_on_phase')} of the "
                                          f"peer's {tick.get('acks_held')} held ACKs")
    else:
        s = released[0]
        at, how = int(s.end_ns), (f"the ACK that ended the first {s.cause} stall, held "
                                  f"{s.evidence['releasing_ack_delay_ns'] / 1e6:.1f} ms after the newest segment it "
                                  "covered")
    # The release as the receiver sent it, from the sender's SYN as it left (the run's t = 0).
    delay = int(values["delay_ns"].value) if "delay_ns" in values else 0
    shift = -delay if vantage == "sender" else delay if vantage == "receiver" else 0
    phase = (at - t0 + shift) % BSD_DELACK_TICK_NS
    phases = receiver_phases()

    def off(x: int) -> int:
        e = abs(x - phase)
        return min(e, BSD_DELACK_TICK_NS - e)

    best = min(range(len(phases)), key=lambda i: off(phases[i]))
    values["seed"] = Fitted(best + 1, f"the seed whose receiver's 200 ms delayed-ACK tick falls {phase / 1e6:.2f} ms "
                            f"after the connection's start (within {off(phases[best]) / 1e3:.0f} us), as the trace "
                            f"showed it: {how} (the simulator draws each host's tick phase from the seed)")


# Each receiver stack's delayed-ACK timer (native/src/sim/tcp/personality.rs, docs/tcp-rules.md):
# the BSD 200 ms tick, FreeBSD 4's 100 ms delack, Linux's minimum ATO of 40 ms (tcp_delack_min),
# Linux 2.0's initial ATO of HZ/3.
DELACK_NS = {"sunos41": 200_000_000, "bsd44": 200_000_000, "tru64": 200_000_000, "freebsd4": 100_000_000,
             "linux": 40_000_000, "linux20": 333_333_333}


def with_delack(fit: Fit, conn: ConnectionAnalysis) -> Fit:
    """The fit with the peer's delayed-ACK timer: the fitted receiver stack's (the reference runs
    with it), beside what the trace showed of the peer's delayed ACKs."""
    recv = fit.value("receiver_personality") or fit.value("personality")
    timer = DELACK_NS.get(recv)
    if timer is None:
        return fit
    d = conn.data_direction
    seen = (d.profile.get("peer_delayed_ack") or {}) if d is not None else {}
    shown = (f"; the trace's delayed ACKs: {seen.get('timer')}, median {seen['delay_median_ns'] / 1e6:.1f} ms, longest "
             f"{seen['delay_max_ns'] / 1e6:.1f} ms (a tick fires anywhere up to its period after the segment)"
             if seen.get("delay_median_ns") and seen.get("delay_max_ns") else "; the trace showed no delayed ACK")
    return fit.with_values({"receiver_delack_ns": Fitted(timer, f"the {recv} receiver's delayed-ACK timer" + shown)})
