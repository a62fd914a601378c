"""What the trace leaves open: the send buffers, and the Nagle rules, whose runs come as close to
the trace as the fitted one; S at the stack's default where the range leaves it."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from ...findings import ConnectionAnalysis
from ..fit import Fit, Fitted
from ..fit.buffers import DEFAULT_SNDBUF, SNDBUF_DOUBLED
from .buffer_groups import write_unseen
from .target import (
    KEEP_FIRST_MARGIN,
    SECOND_PASS_SCORE,
    Target,
    calibration_prefix,
    candidate_score,
    data_side,
    nagle_shown,
    score_of,
    trace_shorts,
)

# The simulator's Nagle variants (native/src/sim/nagle.rs: Mogul & Minshall's table 3, Moldeklev's
# UNACKED-MSS and Linux's TCP_CORK); NAGLE is the BSD stacks' own rule, MINSHALL Linux's.
NAGLE_VARIANTS = ("NAGLE", "OFF", "MINSHALL", "MSMV", "EOM", "E+M", "MIN+MORE", "DLDET", "E+M+M", "E+M+D",
                  "BORMAN", "UNACKED-MSS", "CORK")


# The send buffers a bulk fit's S is held against, as multiples of the fitted request: down to the
# flight's plateau, up to 64 times (where a larger buffer never shows, S is only a floor).
SNDBUF_STEPS_DOWN = (1 / 1.1, 1 / 1.25, 1 / 1.5, 1 / 2, 1 / 3, 1 / 4)


SNDBUF_STEPS_UP = (1.1, 1.25, 1.5, 2, 3, 4, 8, 16, 64)


# A buffer is as consistent with the trace as the fitted one when its run's distance from the trace
# (_score) is at most this much larger: the calibration's own indifference (KEEP_FIRST_MARGIN).
SNDBUF_MARGIN = KEEP_FIRST_MARGIN


# A fit claims S when the buffers consistent with the trace all lie within this share of it.
SNDBUF_CLAIM = 0.10


# How far a stack's flight can stand above its send buffer: OSF/1's sosend (Tru64) copies a whole
# 8 KB cluster once any room is left (the simulator's mbuf_threshold copy), so a 4 KB buffer carries
# 8 KB flights. Every other stack copies no more than the room (its flight is at most its buffer).
SNDBUF_OVERFILL = {"tru64": 8192}


# A buffer whose run's goodput is within this share of the fitted run's is taken into an interval or
# floor even where the run is further off by its stalls: S there did not change the goodput.
SNDBUF_SAME_GOODPUT = 0.05


def sndbuf_range(fit: Fit, conn: ConnectionAnalysis, rows: Any, target: Target) -> Fitted | None:
    """What the trace tells of S: the send buffers (as the stack settles them) whose runs are as
    close to the trace as the fitted one's (within SNDBUF_MARGIN of its distance), walking down from
    the fitted request to the flight's plateau (a buffer holds at least its flight) and up to 64
    times it. A value is claimed when they all lie within SNDBUF_CLAIM of the fitted buffer;
    otherwise the interval is the claim (`high` None: no larger buffer changes the run, S is only
    a floor). None for a fit that is not bulk or cannot run."""
    if fit.kind != "bulk":
        return None
    d = conn.data_direction
    plateau = int((d.profile.get("send_buffer_estimate") or 0) if d is not None else 0)
    # The smallest buffer that could hold the flight the trace showed (a buffer holds its flight, but
    # for a stack that copies past it).
    floor = max(0, plateau - SNDBUF_OVERFILL.get(fit.value("personality"), 0))
    prefix = calibration_prefix(fit, conn, rows)
    cut, target = prefix if prefix is not None else (fit, target)
    base = score_of(cut, {}, target)
    if base is None or not base[1]:
        return None
    settled0 = int(base[1])
    if base[0] > SECOND_PASS_SCORE:
        # A run this far from its trace cannot tell one buffer from another by how close it comes.
        return Fitted({"low": floor or None, "high": None, "fitted": settled0, "claims_value": False,
                       "floor": floor},
                      f"undetermined: the fitted run is too far from the trace (distance {base[0]:.3f}, above "
                      f"{SECOND_PASS_SCORE}) for runs with other send buffers to tell them apart; S is at least "
                      f"{floor} (the flight's plateau {plateau}: a buffer holds its flight"
                      + (", less the cluster its stack copies past it)" if floor != plateau else ")"))
    asked0 = fit.value("sndbuf")
    if not asked0:

        asked0 = settled0 // 2 if fit.value("personality") in SNDBUF_DOUBLED else settled0
    # Every step is run, not only up to the first that is further off: a buffer's effect on Nagle
    # and window-update stalls is not monotonic (Moldeklev), so the claim is the hull of the buffers
    # as close as the fitted one.
    # A buffer whose run is further from the trace but carries the fitted run's goodput (within
    # SNDBUF_SAME_GOODPUT: a stall more or less, or another stall's length) is not ruled out by it:
    # an interval or floor takes it in (the claim is that S within it does not change the run).
    close, far, same, runs, top, top_same = [settled0], [], [], 1, False, False
    for step in (*SNDBUF_STEPS_DOWN, *SNDBUF_STEPS_UP):
        asked = int(asked0 * step)
        if asked < 1024:
            continue
        got = score_of(cut, {"sndbuf": asked}, target)
        runs += 1
        if got is None or not got[1] or got[1] < floor:
            # Below the flight the trace showed: ruled out by the trace itself.
            continue
        alike = got[0] <= base[0] + SNDBUF_MARGIN
        (close if alike else far).append(int(got[1]))
        as_fast = bool(base[2]) and abs(got[2] / base[2] - 1) <= SNDBUF_SAME_GOODPUT
        if not alike and as_fast:
            same.append(int(got[1]))
        if step == SNDBUF_STEPS_UP[-1]:
            top, top_same = alike, alike or as_fast
    claims = (not top and min(close) >= (1 - SNDBUF_CLAIM) * settled0
              and max(close) <= (1 + SNDBUF_CLAIM) * settled0)
    hull = close if claims else close + same
    low, high = min(hull), (None if (top if claims else top_same) else max(hull))
    tried_low = min(close + far)
    if not claims and floor and tried_low in hull and tried_low > floor:
        # The smallest buffer tried (a quarter of the request) is as close: no run ruled out one
        # between it and the flight's plateau.
        low = floor
    below = max((x for x in far if x < low), default=None)
    above = min((x for x in far if high is not None and x > high), default=None)
    tried = (f"{runs} runs of the fit with other send buffers, each held against the trace (the fitted one's "
             f"distance {base[0]:.3f}; alike within {SNDBUF_MARGIN}"
             + (f", or with the fitted run's goodput within {SNDBUF_SAME_GOODPUT:.0%}: {len(same)} more" if same and not claims
                else "") + ")")
    if claims:
        how = (f"determined: {tried}; only buffers within {SNDBUF_CLAIM:.0%} of the fitted {settled0} are as close "
               f"(at {below if below else 'the floor ' + str(floor)} and {above} the runs are further off)")
    elif high is None:
        how = (f"undetermined above a floor: {tried}; the buffers as close to the trace span {low} (the flight's "
               f"plateau {plateau} makes {floor} a floor: a buffer holds its flight) to 64 times the fitted request: a window, "
               "the congestion window or the application held the flight, not the buffer")
    else:
        how = (f"an interval: {tried}; the buffers as close to the trace as the fitted {settled0} span {low} to "
               f"{high}" + (f" (at {below} and at {above} further off)" if below else f" (at {above} further off)"))
    return Fitted({"low": low, "high": high, "fitted": settled0, "claims_value": claims, "floor": floor}, how)


def with_sndbuf_range(fit: Fit, conn: ConnectionAnalysis, rows: Any, target: Target) -> Fit:
    """The fit with `sndbuf_range` (sndbuf_range) and `nagle_range` (nagle_range): how far the
    trace determines S and the sender's Nagle rule; where S is left open, the stack's default in
    it (stack_default_sndbuf)."""
    got = sndbuf_range(fit, conn, rows, target)
    if got is not None:
        fit, got = stack_default_sndbuf(fit, conn, rows, target, got)
    fit = fit if got is None else fit.with_values({"sndbuf_range": got})
    rule = nagle_range(fit, conn, rows, target)
    return fit if rule is None else fit.with_values({"nagle_range": rule})


# The default replaces the fitted S only where its run's goodput is this close to the fitted run's:
# the refitted goodput should not move for a choice the trace cannot make.
DEFAULT_SAME_GOODPUT = 0.02


def stack_default_sndbuf(fit: Fit, conn: ConnectionAnalysis, rows: Any, target: Target, got: Fitted
                         ) -> tuple[Fit, Fitted]:
    """Where the trace leaves S open (an interval or a floor, the fitted run close to the trace) and
    the stack's default send buffer lies in it, the default as the fitted value: any S in the range
    runs alike, and an application that sets no buffer, the common case, gets its stack's (a Tru64
    bulk sender's flight of 16 KB on a fast path, held by the ACK clock, is no 16 KB buffer: the
    default 32 KB runs the same). Only where the default's own run is as close as the fitted one's
    (SNDBUF_MARGIN) and carries its goodput (DEFAULT_SAME_GOODPUT)."""

    rng = got.value
    default = DEFAULT_SNDBUF.get(fit.value("personality"))
    if rng["claims_value"] or not default or default == fit.value("sndbuf"):
        return fit, got
    prefix = calibration_prefix(fit, conn, rows)
    cut, held = prefix if prefix is not None else (fit, target)
    base, alt = score_of(cut, {}, held), score_of(cut, {"sndbuf": default}, held)
    if base is None or alt is None or base[0] > SECOND_PASS_SCORE or not alt[1] or not base[2]:
        return fit, got
    settled = int(alt[1])
    if (settled < (rng["low"] or 0) or (rng["high"] is not None and settled > rng["high"])
            or alt[0] > base[0] + SNDBUF_MARGIN or abs(alt[2] / base[2] - 1) > DEFAULT_SAME_GOODPUT):
        return fit, got
    old = fit.values["sndbuf"] if "sndbuf" in fit.values else Fitted(None, "none")
    span = f"{rng['low']} to {rng['high']}" if rng["high"] is not None else f"{rng['low']} or more"
    fit = fit.with_values({"sndbuf": Fitted(default, (
        f"{fit.value('personality')}'s default send buffer ({default}): the trace leaves S anywhere from {span} "
        f"(sndbuf_range), and the run with the default is as close to it (distance {alt[0]:.3f} against "
        f"{base[0]:.3f}); an application that sets no buffer gets it; first estimate {old.value} ({old.source})"))})
    return fit, Fitted({**rng, "fitted": settled}, got.source + f"; fitted at the stack's default, {settled}")


def own_nagle(personality: str | None) -> str:
    """A stack's own Nagle rule among the simulator's variants: Linux's test is Minshall's
    (docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay), the others' the classic one."""
    return "MINSHALL" if personality == "linux" else "NAGLE"


def nagle_range(fit: Fit, conn: ConnectionAnalysis, rows: Any, target: Target) -> Fitted | None:
    """What the trace tells of the sender's Nagle rule, where it sent short segments: the fitted
    run again with each of the simulator's variants, each held against the trace; a variant whose
    run does not show the trace's small-segment behaviour (short segments behind an unacknowledged
    short one, behind full ones only, or never behind data: nagle_shown) is ruled out, and those as
    close to the trace as the fitted rule (within KEEP_FIRST_MARGIN) are the claim. The fitted rule
    stays the stack's own (or off, where the segments showed it): on the scoring corpus a variant
    chosen as the closest run was never the true one (docs/comparison.md). None for a fit that is
    not bulk, whose sender sent no short segment, or whose run's data sender is its receiver."""
    if fit.kind != "bulk" or "nagle" not in fit.values or data_side(fit.bulk_config()):
        return None
    prefix = calibration_prefix(fit, conn, rows)
    cut, target = prefix if prefix is not None else (fit, target)
    shorts = trace_shorts(rows, fit.dir, cut.value("bytes") if prefix is not None else None)
    if not shorts or not shorts[0]:
        return None
    fitted = fit.value("nagle") or own_nagle(fit.value("personality"))
    if write_unseen(fit):
        # Where a short segment goes depends on the writes as much as on the rule: under a write
        # the segments did not show, the variants' runs tell nothing of the trace's rule (a 4.4BSD
        # sender of 8 KB writes over ATM, fitted with 24 KB ones, came 0.1 further with its own
        # rule than with Nagle off).
        return Fitted({"variants": list(NAGLE_VARIANTS), "fitted": fitted, "claims_value": False},
                      f"undetermined: the write did not show ({fit.values['write'].source}), and where a short "
                      "segment goes depends on the writes as much as on the Nagle rule")
    held = replace(target, shorts=shorts)
    base = candidate_score(cut, {"nagle": fitted}, held)
    scores = {v: candidate_score(cut, {"nagle": v}, held) for v in NAGLE_VARIANTS if v != fitted}
    scores[fitted] = base
    shows = [v for v in NAGLE_VARIANTS if scores.get(v) is not None and scores[v] != math.inf]
    if base is None or base == math.inf:
        # The fitted run itself does not show what the trace does: the rest of the fit decides
        # the short segments as much as the rule, and no variant is ruled out.
        return Fitted({"variants": list(NAGLE_VARIANTS), "fitted": fitted, "claims_value": False},
                      f"undetermined: the fitted run ({fitted}) does not show the trace's small-segment behaviour "
                      f"({nagle_shown(shorts)}: {shorts[0]} short segments, {shorts[1]} behind an unacknowledged "
                      f"short one, {shorts[2]} behind data), so its runs cannot rule a variant out (those that "
                      f"show it: {', '.join(shows) or 'none'})")
    far = base > SECOND_PASS_SCORE
    alike = list(NAGLE_VARIANTS) if far else [v for v in shows if scores[v] <= base + KEEP_FIRST_MARGIN]
    how = (f"{len(NAGLE_VARIANTS)} runs, one per Nagle variant of the simulator, each held against the trace; "
           f"the trace's short segments show {nagle_shown(shorts)} ({shorts[0]} short segments, {shorts[1]} behind an "
           f"unacknowledged short one, {shorts[2]} behind data), which {len(shows)} variants' runs show too")
    if far:
        how += (f"; undetermined: the fitted run is too far from the trace (distance {base:.3f}) to tell them apart "
                "or rule one out")
    else:
        how += f"; as close to the trace as the fitted {fitted} (distance {base:.3f}, within {KEEP_FIRST_MARGIN}): "
        how += ", ".join(alike)
    return Fitted({"variants": alike, "fitted": fitted, "claims_value": alike == [fitted],
                   "distances": {v: (None if x is None or x == math.inf else round(x, 4)) for v, x in scores.items()}},
                  how)
