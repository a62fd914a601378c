"""Calibrate what a trace cannot show: the applications' pace, the link's framing and the hosts'
costs, which of the stacks with the same SYN options it was, the write and read sizes and the
exact send buffer behind a measured flight. A Nagle or window-update stall depends on them byte for
byte (Moldeklev & Gunningberg's deadlocks come and go with S, R and the write size), so the fit
runs the simulator over a small grid of plausible values, group by group, and keeps the one whose
run is closest to the trace: its goodput, its number of stalls and its time lost per cause. Each
candidate run is a few milliseconds; the candidates and the choice are reported with the fit."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from typing import Any

from ...findings import ConnectionAnalysis
from ..compare import IDLE
from ..fit import Fit, Fitted
from .buffer_groups import (
    MEASURED_AS,
    buffer_candidates,
    hosted_buffer_candidates,
    joint_candidates,
    pace_candidates,
    write_candidates,
)
from .link_groups import ENSEMBLE_MARGIN, ensemble_of, framed_candidates, holds_two_pdus, path_mechanism_candidates
from .ranges import with_sndbuf_range
from .request_response import refine_request_response
from .stack_groups import stack_candidates, stack_names, tick_phase_candidates
from .target import (
    KEEP_FIRST_MARGIN,
    SECOND_PASS_SCORE,
    Target,
    calibration_prefix,
    candidate_score,
    trace_acks,
    trace_target,
)

# Times the groups are gone through at most (SECOND_PASS_SCORE says when once more).
PASSES = 3


# Closer than this, a pass that changed something is not followed by another.
CONVERGED_SCORE = 0.02


# Each group's choice, for reading a fit that went astray (logging at DEBUG).
log = logging.getLogger(__name__)


@dataclass
class _Search:
    """Where one run of the calibration's groups ended."""

    best_score: float
    chosen: dict[str, Any]
    tried: int
    passes: int
    joint_ran: bool
    ports: list[tuple[float, int, dict[str, Any]]]
    nics: list[tuple[float, int, dict[str, Any]]]


# Searches from different first stacks that end this close (distance with the ACKs counted) are
# as good as each other: the first estimate's stays.
RESTART_MARGIN = KEEP_FIRST_MARGIN


# A search run again from the joint host, reader and buffer search's closest run replaces the first
# only where it ends at most this share of the first's distance.
RESTART_SHARE = 0.5


def refine(fit: Fit, conn: ConnectionAnalysis, rows: Any = None, read_step: int | None = None) -> Fit:
    """The bulk fit with the link's framing, write and read sizes and send buffer chosen by
    simulation, one group after the other; a request/response fit's rate."""
    if fit.kind == "request_response":
        return refine_request_response(fit, rows)
    if fit.kind != "bulk":
        return fit
    d = conn.data_direction
    goodput = (d.goodput_bps or 0) / 1e6 if d else 0
    if goodput <= 0 or d is None:
        return fit
    data_ns = (d.profile.get("bytes") or 0) * 8 / (goodput * 1e6) * 1e9
    if fit.value("_occasional_idle"):
        # Pauses the run does not replay (fit.pace.fit_pace): the run is held against the trace without them.
        idle = sum(s.time_lost_ns for s in conn.stalls if s.dir == d.dir and s.cause == IDLE)
        if 0 < idle < data_ns:
            goodput, data_ns = goodput * data_ns / (data_ns - idle), data_ns - idle
    cut, target, prefix = fit, trace_target(conn, d.dir, goodput, int(data_ns)), calibration_prefix(fit, conn, rows)
    full_target = target
    if prefix is not None:
        cut, target = prefix
    if (fit.value("_atm_path") or fit.value("_jumbo_path")) and prefix is None:
        # A path mechanism is tried in place of the replayed losses: how often the sender had to
        # repeat itself counts too (over a prefix, its own: calibration_prefix).
        target = replace(target, retransmissions=fit.value("_retransmissions"))
    acks_held = replace(target, acks=trace_acks(rows, fit.dir, cut.value("bytes") if prefix is not None else None))

    runs_scored: dict[tuple[str, int], float | None] = {}

    def run_score(changes: dict[str, Any], held: Target) -> float | None:
        """candidate_score once per run and target: the simulator is deterministic, and the groups and
        passes ask again for runs already made (each group's first, the start's)."""
        key = (repr(sorted(changes.items())), id(held))
        if key not in runs_scored:
            runs_scored[key] = candidate_score(cut, changes, held)
        return runs_scored[key]

    def far(changes: dict[str, Any]) -> bool:
        score = run_score(changes, target)
        return score is None or score > SECOND_PASS_SCORE

    def search(start: dict[str, Any]) -> _Search:
        """The groups one after the other from `start`, until a pass changes nothing or the run is close."""
        chosen: dict[str, Any] = dict(start)
        tried = 0
        best_score = math.inf
        # The applications' pace first: a pause or a slow reader changes the goodput more than a host
        # model does, and a host chosen to make up for a pause not yet replayed would stay.
        # An ATM switch port before the framing and host: a slow host chosen to make up for timeouts
        # not yet modelled would stay; the port sets its own (AAL5) link, the host is then tried with it.
        # The receiver's unseen tick phase first, where the start is far off: a phase that deadlocks
        # where the trace did not stall makes every later group make up for a stall that was never
        # there (and where the start is close, another phase only trades one fit for another).
        named = (("phase", lambda: tick_phase_candidates(fit, chosen) if far(chosen) else [{}]),
                 ("phase_fine", lambda: tick_phase_candidates(fit, chosen, True)),
                 ("pace", lambda: pace_candidates(fit, chosen, read_step)), ("path", lambda: path_mechanism_candidates(fit, rows)),
                 ("writes", lambda: write_candidates(fit)), ("framing", lambda: framed_candidates(fit, rows, chosen)),
                 ("stack", lambda: stack_candidates(fit, target)), ("buffers", lambda: buffer_candidates(fit, read_step, chosen)),
                 ("joint", lambda: joint_candidates(fit, rows, chosen, read_step, best_score)))
        names, groups = tuple(n for n, _ in named), tuple(g for _, g in named)
        passes = 0
        joint_ran = False
        ports: list[tuple[float, int, dict[str, Any]]] = []
        nics: list[tuple[float, int, dict[str, Any]]] = []
        pass_start = dict(chosen)  # what the pass under way started from
        for step, make in enumerate(groups * PASSES):
            if step and step % len(groups) == 0:
                # One group after the other can settle early on a choice made under a wrong stack (all
                # framings equally far from a trace a wrong stack deadlocks): far off, once more, each
                # group now starting from what is chosen.
                # And where a later group changed what an earlier one was chosen under (the stack,
                # the buffer after the link), until a pass changes nothing or the run is close.
                if best_score <= CONVERGED_SCORE or (best_score <= SECOND_PASS_SCORE and chosen == pass_start):
                    break
            if step % len(groups) == 0:
                pass_start = dict(chosen)
            passes = 1 + step // len(groups)
            group = make() if step < len(groups) else [{}, *make()]
            # A candidate's None takes the value back out (a reader chosen in the first pass, say).
            runs = [{k: v for k, v in {**chosen, **cand}.items() if v is not None} for cand in group]
            # Stacks are told apart by their receivers' ACKs too (Target.acks).
            held = acks_held if names[step % len(groups)] == "stack" and len(runs) > 1 else target
            if names[step % len(groups)] == "joint" and len(runs) > 2:
                joint_ran = True
            scores = [run_score(changes, held) for changes in runs]
            tried += len(runs)
            # An infinite distance rules a run out (no goodput, or a Nagle rule the trace does not
            # show); a group whose runs are all ruled out changes nothing (a few-packet trace).
            scored = [(round(score, 6), i, changes) for i, (score, changes) in enumerate(zip(scores, runs))
                      if score is not None and math.isfinite(score)]
            if scored:
                # Each group lists the first estimate first; it stays unless another run is clearly
                # closer (several stacks or buffers can give one goodput: the measured value decides).
                scored.sort(key=lambda x: (x[0], x[1]))
                if names[step % len(groups)] == "path":
                    ports = [x for x in scored if x[2].get("atm_switch")]
                    nics = [x for x in scored if x[2].get("jumbo_nic")]
                first = next((x for x in scored if x[1] == 0), None)
                if names[step % len(groups)] == "stack":
                    # Stacks about as close as the closest: the one the trace's own evidence named
                    # first (with its buffer where S did not show) stays.
                    first = min((x for x in scored if x[0] - scored[0][0] <= KEEP_FIRST_MARGIN), key=lambda x: x[1])
                if first is not None and first[0] - scored[0][0] <= KEEP_FIRST_MARGIN:
                    best_score, _, chosen = first
                else:
                    best_score, _, chosen = scored[0]
            log.debug("group %s: %d runs, distance %.4f, chosen %s", names[step % len(groups)], len(runs),
                      best_score, chosen)

        return _Search(best_score, chosen, tried, passes, joint_ran, ports, nics)

    # Where the segments named no stack among several the trace leaves, the groups run once from
    # each (calibrate.stack_groups.stack_names): the framing and host are chosen before the stack, and under a
    # stack picked only by order a wrong link can win by making up for it (a SunOS sender of 16 KB
    # writes every 30 ms over 10 Mbit/s Ethernet, fitted first as Linux 2.0: that stack's runs
    # stalled on every link but a gigabit one behind a Sun IPX's copies, where its ACK counts then
    # kept Linux 2.0). The search that ends closest, its ACKs counted as the stack group counts
    # them, wins; the first estimate's among those as close.
    stacks = stack_names(fit)
    starts: list[dict[str, Any]] = [{}]
    # Stacks the sender's TTL alone rules out are still searched from: each search's stack group
    # chooses among the stacks left, and a start elsewhere can reach their closest run by another
    # way (a Linux 2.0 writer of 6000-byte messages settles on a 4.1 Mbit/s link searched from
    # Linux 2.0, and on Fast Ethernet, its own, searched from SunOS).
    by_ttl = fit.value("_stacks_ruled_out_by_ttl") or ()
    if (len(stacks) > 1 or by_ttl) and not fit.value("_stack_named"):
        theirs = fit.value("receiver_stacks_ruled_out") or ()
        starts += [{"personality": p, "receiver_personality": p} for p in (*stacks[1:], *by_ttl) if p not in theirs]
    found = [search(x) for x in starts]
    # (A search whose stack group found no run stays on its start: not on a stack ruled out.)
    found = [f for f in found if f.chosen.get("personality") not in by_ttl] or found[:1]
    tried = sum(f.tried for f in found)
    if len(found) > 1:
        closeness = [run_score(f.chosen, acks_held) if f.chosen else None for f in found]
        ranked = sorted((round(c, 6), i) for i, c in enumerate(closeness) if c is not None and math.isfinite(c))
        if ranked:
            # The first estimate's stack keeps its place among ends about as close; ends on another
            # stack are told apart by their distance (a search from SunOS that its stack group took to
            # Tru64 kept the link it chose under SunOS, 1.07 times the trace's goodput, where the one
            # from Tru64 ran at the measured rate).
            named = fit.value("personality")

            def own(x: tuple[float, int]) -> bool:
                return found[x[1]].chosen.get("personality", named) == named

            best = min((x for x in ranked if x[0] - ranked[0][0] <= RESTART_MARGIN),
                       key=lambda x: (not own(x), x[0] if not own(x) else 0, x[1]))
            found = [found[best[1]], *(f for i, f in enumerate(found) if i != best[1])]
    won = found[0]
    # Far off at the end: the host, the reader and the buffers together around what was chosen
    # (hosted_buffer_candidates), and where one is closer, the groups once more from it; the closer end wins.
    restarted = False
    if won.best_score > SECOND_PASS_SCORE and won.chosen:
        around = [{k: v for k, v in {**won.chosen, **cand}.items() if v is not None}
                  for cand in hosted_buffer_candidates(fit, rows, won.chosen, read_step, won.best_score)[1:]]
        scored = sorted((s, i) for i, s in enumerate(run_score(c, target) for c in around)
                        if s is not None and math.isfinite(s))
        tried += len(around)
        if scored and scored[0][0] < won.best_score:
            again = search(around[scored[0][1]])
            tried += again.tried
            log.debug("restart from %s (%.4f): ended at %.4f against %.4f", around[scored[0][1]], scored[0][0],
                      again.best_score, won.best_score)
            # Only a restart that ends at most half as far: one that ends a little closer by trading
            # the read or S leaves the fit's goodput where it was, and not its what-ifs (the captured
            # atm_small_buffer, 0.35 -> 0.30 with 4 KB reads for the whole window's: EPD's predicted
            # goodput 1.47 times the EPD capture's, 1.06 before).
            if again.best_score <= RESTART_SHARE * won.best_score:
                won, restarted = again, True
    best_score, chosen, passes, joint_ran, ports, nics = (won.best_score, won.chosen, won.passes, won.joint_ran,
                                                          won.ports, won.nics)
    if not chosen:
        return with_sndbuf_range(fit, conn, rows, full_target)
    over = (f" over the first {cut.value('bytes')} bytes (the trace's and each run's)" if prefix is not None
            else "")
    runs_how = (f"{tried} runs" + (f", {('two', 'three')[passes - 2]} passes" if passes > 1 else "")
                + (f", searched from each of {len(starts)} stacks" if len(starts) > 1 else ""))
    port_how = (", then an ATM switch port in place of the replayed losses" if fit.value("_atm_path") else
                ", then a NIC's jumbo receive slots or a smaller-MTU hop in place of the replayed losses"
                if fit.value("_jumbo_path")
                else "")
    phase_how = ("the receiver's delayed-ACK tick phase, unseen in the trace, then "
                 if chosen.get("seed", fit.value("seed")) != fit.value("seed") else "")
    why = (f"chosen by simulation ({runs_how}: {phase_how}the applications' pace{port_how}, then the link's framing and host, "
           f"then the stack among those with the same SYN options, then write x read x send buffer"
           + (", then, far off with the reads unseen, link x host x write x read together" if joint_ran else "")
           + (", then, still far off, host x reader's pace x read x send buffer together and the groups again from "
              "the closest of those" if restarted else "")
           + "): the run "
           "closest to the trace's goodput, stall count and time lost per cause"
           + (" and its retransmissions" if target.retransmissions is not None else "")
           + f"{over} (distance {best_score:.3f})")
    values = dict(fit.values)
    for k, v in chosen.items():
        if k in values and values[k].value == v:
            continue
        old = values.get(k) or values.get(MEASURED_AS.get(k, ""))
        values[k] = Fitted(v, f"{why}; first estimate {old.value if old else None} ({old.source if old else 'none'})")
    if chosen.get("atm_switch"):
        port = chosen["atm_switch"]
        values["atm_switch"] = Fitted(port, f"an ATM switch port of {port['buffer_cells']} cells, discard policy "
                                      f"{port['policy']}, cells out at {port['out_rate_bps'] / 1e6:.2f} Mbit/s from a "
                                      f"{port['access_rate_bps'] / 1e6:.2f} Mbit/s access link, in place of the "
                                      f"trace's replayed losses ({fit.value('_atm_path')}); {why}")
        alternatives = ensemble_of(chosen, ports, "atm_switch", "policy", holds_two_pdus(fit))
        if len(alternatives) > 1:
            values["ensemble_of"] = Fitted(alternatives, f"the {len(alternatives)} ports within {ENSEMBLE_MARGIN} of "
                                         "the closest one's distance")
    if chosen.get("pmtu_hop"):
        hop = chosen["pmtu_hop"]
        how = ("drops them without a word (a black hole)" if hop["mode"] == "blackhole"
               else "sends ICMP frag-needed back (RFC 1191)")
        probing = (", with the sender's black-hole detection on (RFC 4821, Linux's tcp_mtu_probing=1)"
                   if chosen.get("mtu_probing") else "")
        values["pmtu_hop"] = Fitted(hop, f"a hop with MTU {hop['mtu']} that {how}, for larger datagrams{probing}, in "
                                    f"place of the trace's replayed losses ({fit.value('_jumbo_path')}); {why}")
    if chosen.get("jumbo_nic"):
        nic = chosen["jumbo_nic"]
        release = ("each slot back when its frame's data is acknowledged" if nic["hold_until_acked"] else
                   f"each slot back {nic['replenish_ns'] / 1e6:g} ms after use")
        values["jumbo_nic"] = Fitted(nic, f"a receiving NIC with {nic['slots']} jumbo receive slots, {release}, in "
                                     f"place of the trace's replayed losses ({fit.value('_jumbo_path')}); {why}")
        alternatives = ensemble_of(chosen, nics, "jumbo_nic", "slots")
        if len(alternatives) > 1:
            values["ensemble_of"] = Fitted(alternatives, f"the {len(alternatives)} NICs within {ENSEMBLE_MARGIN} of "
                                         "the closest one's distance")
    return with_sndbuf_range(replace(fit, values=values), conn, rows, full_target)
