"""Stalls in which the sender had nothing to send: everything it had sent was acknowledged and the
next data did not follow an ACK that let it go, or it followed the peer's own data (a request's
turnaround). Reported as `application_idle`, apart from the stalls with a transport cause.
"""

from __future__ import annotations

from stallscope.analyzers.causes.common import before, filled_small_window, mss, tolerance, zero_window_at_end
from stallscope.analyzers.causes.loss import stale_resends
from stallscope.analyzers.causes.nagle import held_until_write
from stallscope.analyzers.findings import Verdict
from stallscope.analyzers.stalls import StallContext
from stallscope.vocabulary import Cause


def rule(ctx: StallContext) -> Verdict | None:
    if ctx.timing.vantage != "sender" and stale_resends(ctx):
        # Away from the sender, a resend of data this tap saw acknowledged means the sender never
        # heard of it: it was waiting on its timer, not idle (causes/loss.py names it when it can).
        return None
    if not ctx.ended_by_new_data:
        # The capture ends in silence: idle if everything had been acknowledged and the only
        # resends were of acknowledged data (a probe, a spurious retransmission).
        acked = ctx.acked_before(ctx.end_ns + 1) >= ctx.snd_max_before_end
        if acked and not ctx.repairs() and not zero_window_at_end(ctx):
            return Verdict(Cause.APPLICATION_IDLE.value, None, 0.6, {
                "all_acked": True, "resends_of_acked_data": [r.frame for r in ctx.resends[:8]]})
        return None
    if ctx.repairs():
        return None
    released = ctx.releasing_ack(tolerance(ctx))
    evidence = {"outstanding_before_next_data": ctx.in_flight_before_end}
    if released is not None and released.payload > 0 and ctx.in_flight_before_end == 0:
        evidence.update({"peer_data_frame": released.frame, "peer_data_bytes": ctx.peer_data_bytes})
        return Verdict(Cause.APPLICATION_IDLE.value, None, 0.85, {**evidence, "turnaround": True})
    if ctx.in_flight_before_end > 0:
        # Data was still unacknowledged, yet the next segment went out on its own, not on an ACK:
        # the writer resumed. Nagle holds only short segments, so a full one (or any, with Nagle
        # off) after a completed write (PSH) was waiting for the application, not for TCP.
        m = mss(ctx)
        resumed = released is None and ctx.first_psh and (ctx.held_len >= m or ctx.profile.get("nagle") == "off"
                                                           or _not_held(ctx, m))
        if resumed and ctx.flight_lost_unanswered():
            # What was out then (the segment before the silence among it) went unacknowledged until
            # the timer resent it: no ACK came, and the segment that broke the silence was a
            # tail-loss probe's (RFC 8985: new data, two round trips after the last), not a write
            # (Linux with BBR, its peer's ACKs lost, 26 ms).
            return None
        if resumed and any(held_until_write(ctx, m)):
            return None  # a write (or its tail) held until the next write: causes/nagle.py
        if resumed:
            evidence.update({"write_ended_frame": ctx.start_frame, "resumed_frame": ctx.held_frame,
                             "resumed_segment_len": ctx.held_len})
            return Verdict(Cause.APPLICATION_IDLE.value, None, 0.7, evidence)
        return None
    if released is None and filled_small_window(ctx):
        return None  # the peer's small window held it, not the writer (windows.py)
    acked_at = next((a for a in ctx.acks if a.ack >= ctx.snd_max_before_end), None)
    # The data went out on its own: not right after an ACK that advanced or opened the window, or
    # right after one it did not need, the window already having room for the segment: either a
    # completed write's short tail was all that was out (a connection that never timed out has a
    # congestion window of two segments or more), or nothing was out at all (no congestion window
    # holds one segment with nothing in flight: the ACK, a FIN or a window update, was not what it
    # waited for; a raw window of unknown scale understates the room).
    m = mss(ctx)
    unneeded = False
    if released is not None:
        ack_before, window = before(ctx, released)
        out = ctx.snd_max_before_end - ack_before
        room = window is not None and ack_before + window - ctx.snd_max_before_end >= max(1, ctx.held_len)
        tail_only = (ctx.first_psh and ctx.held_len >= m and not ctx.profile.get("timeouts") and out < m
                     and ctx.flight_seen >= 2 * m)
        unneeded = room and (tail_only or (ctx.held_len <= m and out <= 0))
    if released is None or unneeded or not (released.advances or _opened(ctx, released)):
        asked = next((a for a in reversed(ctx.acks) if a.payload > 0), None)
        if asked is not None and ctx.in_flight_before_end == 0:
            # The peer's data came during the silence (a request): the part after it is the time
            # this side took to answer, the part before it the peer's own wait.
            evidence.update({"peer_data_frame": asked.frame, "answered_after_ns": ctx.end_ns - asked.ts_ns})
        if acked_at is not None:
            evidence.update({"all_acked_frame": acked_at.frame, "idle_after_acked_ns": ctx.end_ns - acked_at.ts_ns})
        elif ctx.in_flight_at_start == 0:
            evidence["idle_after_acked_ns"] = ctx.duration_ns
        return Verdict(Cause.APPLICATION_IDLE.value, None, 0.8, evidence)
    return None


# The shortest wait of a timer that sends new data a Nagle test held: a tail-loss probe with one
# segment out waits two round trips and 200 ms (Linux's TCP_RTO_MIN), TCP_CORK's timer 200 ms.
PROBE_MIN_NS = 200_000_000


def _not_held(ctx: StallContext, m: int) -> bool:
    """The closing segment was short and left with no ACK of the short one that opened the silence:
    Nagle, classic or Minshall's, would have held it for that ACK, so it did not, and no timer that
    sends new data runs this short. The writer wrote it then (a TLS server's 391-byte record 24 ms
    after its 51-byte one, the client's delayed ACK still to come). Not where the segment itself
    acknowledged peer data the capture never showed: the tap missed the peer's packets, and with
    them perhaps the ACK (Zeek's ldap/gap-data-missing.pcapng)."""
    return (0 < ctx.held_len < m and 0 < ctx.first_len < m and ctx.opening_unacknowledged()
            and ctx.duration_ns < PROBE_MIN_NS and not ctx.closing_acks_unseen)


def _opened(ctx: StallContext, ack) -> bool:
    i = ctx.acks.index(ack)
    prev = ctx.acks[i - 1] if i else None
    before_edge = (prev.ack + prev.window) if prev else (ctx.una_at_start + (ctx.window_at_start or 0))
    return ack.ack + ack.window > before_edge
