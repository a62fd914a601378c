"""Candidates for the stack: the personalities the trace's SYN options and segments leave, their
Nagle rules, and the phase of the BSD receivers' 200 ms clock."""

from __future__ import annotations

from typing import Any

from ..fit import Fit
from ..fit.delayed_ack import BSD_DELACK_TICK_NS, TICK_STACKS, receiver_phases
from ..fit.stack import OPEN_START_STACKS, SLOW_START_STACKS
from .target import Target

# Each old stack is also tried with this many times the peer's window as its send buffer.
STACK_SNDBUF_WINDOWS = 2


# Stacks a trace cannot tell apart by their SYN options (none of RFC 1323/2018): the calibration
# tries each; their rules (copy sizes, window updates, delayed ACKs) show in the run they produce.
PRE_1323 = ("sunos41", "bsd44", "tru64", "linux20")


# Stacks that hold a write's short tail while any data is unacknowledged, that write's own full
# segments too (Linux 2.0's partial segment), where BSD's tcp_output decides "idle" once per call.
PER_SEGMENT_NAGLE = ("linux20",)


# Stalls a sender's Nagle rule makes: where the trace has none, the stack it named may have run
# another rule than its own.
NAGLE_HOLDS = ("nagle_delayed_ack", "window_update_deadlock")


def stack_names(fit: Fit) -> tuple[str, ...]:
    """The pre-1323 stacks the trace leaves, the first estimate first (none for a modern one)."""
    first = fit.value("personality")
    if first not in PRE_1323:
        return ()
    # How the window opened leaves two of them (fit.stack.first_flight).

    start = fit.value("slow_start")
    stacks = PRE_1323 if start is None else SLOW_START_STACKS if start else OPEN_START_STACKS
    # And what the segments and windows rule out (fit.stack.stacks_ruled_out).
    stacks = tuple(x for x in stacks if x not in (fit.value("stacks_ruled_out") or ())) or stacks
    return (first, *(x for x in stacks if x != first))


def stack_candidates(fit: Fit, target: Target | None = None) -> list[dict[str, Any]]:
    names = stack_names(fit)
    if not names:
        return [{}]
    first = names[0]
    # The first estimate first: among runs that fit equally well it stays.
    # The receiver runs the sender's stack unless its own window rules that out; then each stack
    # its window leaves (the modern Linux too: without the sender's offer it shows no option).
    theirs = fit.value("receiver_stacks_ruled_out") or ()
    receivers = tuple(x for x in (*PRE_1323, "linux") if x not in theirs)
    out = [{"personality": p, "receiver_personality": r} for p in names
           for r in ((p,) if p not in theirs else receivers)]
    if fit.value("nagle") is None and fit.value("_classic_nagle_broken") and any(
            c["personality"] in PER_SEGMENT_NAGLE for c in out):
        # Short segments ended bursts while data sent before them was unacknowledged, with room for
        # a full one (fit.stack.classic_nagle_broken). A BSD sender decides "idle" once per tcp_output
        # call, so a burst begun idle sends its tail; Linux 2.0 keeps a tail written while data is
        # unacknowledged unless TCP_NODELAY is set (docs/tcp-rules.md#linux-20-partial-segment):
        # for Linux 2.0, also Nagle off (TCP_NODELAY, Salamon's senders), after every
        # stack with its own rule (one about as close stays; None: a later pass takes an earlier
        # pass's choice back out).
        out = [*({**c, "nagle": None} for c in out),
               *({**c, "nagle": "OFF"} for c in out if c["personality"] in PER_SEGMENT_NAGLE)]
    if (fit.value("_stack_named") == first and fit.value("nagle") is None and target is not None
            and not any(target.lost.get(c) for c in NAGLE_HOLDS)):
        # The stack the segments named, run with its own Nagle rule, may hold a short segment
        # where the trace shows no hold (4.4BSD's classic rule deadlocks a 2-segment window until
        # its 200 ms tick; the sender ran another of Mogul's variants): the stack is then tried
        # with Nagle off too, ahead of the others, so that a stack the segments rule against does
        # not win by its own rule's luck (SunOS's 4096-byte copies never leave the short piece).
        mine = [c for c in out if c["personality"] == first and "nagle" not in c]
        out = [*mine, *({**c, "nagle": "OFF"} for c in mine), *(c for c in out if c not in mine)]
    r = fit.value("rcvbuf")
    if r:
        # The flight shows S only as a floor (a window held it, or none showed it at all: each stack
        # would run with its own default, SunOS's 4 KB smaller than the window): a stack run with
        # a buffer below the true one loses to another stack that makes up for it. Each stack is
        # also tried with a buffer the window, not S, limits.
        out = [x for c in out for x in (c, {**c, "sndbuf": STACK_SNDBUF_WINDOWS * int(r)})]
    return out


# Where the trace showed no ACK held on a BSD receiver's 200 ms delayed-ACK tick, its phase is tried
# every TICK_PHASE_STEP_NS over the tick (a deadlock the trace does not have must end within the
# analyzer's 10 ms stall threshold, so a window of 10 ms holds the phases that fit; a step of half
# that lands in it), then every millisecond up to TICK_PHASE_FINE_NS either side of the closest.
TICK_PHASE_STEP_NS = 5_000_000


TICK_PHASE_FINE_NS = 4_000_000


def tick_phase_candidates(fit: Fit, chosen: dict[str, Any] | None = None, fine: bool = False) -> list[dict[str, Any]]:
    """Where the receiver may run a BSD stack (a free-running 200 ms delayed-ACK tick) and the trace
    showed no ACK held on it (fit.delayed_ack.fit_tick_phase left the seed as it was): the seeds whose receiver
    tick falls at phases spread over the tick (`fine`: around the phase chosen). Unseen, the phase
    still decides whether a short transfer deadlocks until the tick or never stalls (a Tru64 sender
    of 4 KB writes over FDDI, MIN+MORE: seed 1's tick held it 120 ms where the trace had no stall,
    and the groups made up for the stall with another link and write, 35 % fast; only phases 1-10 ms
    from its start fit it)."""

    seed = fit.values.get("seed")
    if seed is None or not seed.source.startswith("fixed"):
        return [{}]
    stacks = {fit.value("receiver_personality") or fit.value("personality"), *stack_names(fit)}
    if not stacks & set(TICK_STACKS):
        return [{}]
    phases = receiver_phases()

    def apart(a: int, b: int) -> int:
        return min(abs(a - b) % BSD_DELACK_TICK_NS, BSD_DELACK_TICK_NS - abs(a - b) % BSD_DELACK_TICK_NS)

    def nearest(at: int) -> int:
        return 1 + min(range(len(phases)), key=lambda i: apart(phases[i], at))

    now = (chosen or {}).get("seed", seed.value)
    if fine:
        if now == seed.value:
            return [{}]
        at = phases[now - 1]
        grid = (at + k for k in range(-TICK_PHASE_FINE_NS, TICK_PHASE_FINE_NS + 1, 1_000_000) if k)
    else:
        grid = range(0, BSD_DELACK_TICK_NS, TICK_PHASE_STEP_NS)
    seeds = dict.fromkeys(nearest(x % BSD_DELACK_TICK_NS) for x in grid)
    return [{}, *({"seed": x} for x in seeds if x != now)]
