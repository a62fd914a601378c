"""Stalls in which a window, not Nagle, left no room: the peer's advertised window (a slow reader,
a zero window), Moldeklev's window-update deadlock (the receiver's window-update rule is not met,
so only its delayed-ACK timer moves the sender), the sender's silly-window avoidance (a usable
window smaller than a segment and than half the peer's largest, notes 1.3 test 4), and a send
buffer too small for the path (the flight stops at the buffer's size with the peer's window open).
"""

from __future__ import annotations

from stallscope.analyzers.causes.common import before, mss, peer_delay, release, timer_driven
from stallscope.analyzers.findings import Alternative, Verdict
from stallscope.analyzers.stalls import StallContext
from stallscope.simulate.ground_truth import Cause


def rule(ctx: StallContext) -> Verdict | None:
    if ctx.resends or not ctx.ended_by_new_data or not ctx.profile.get("window_known", True):
        return None
    rel = release(ctx)
    if rel is None:
        return None
    m = mss(ctx)
    ack_before, win_before = before(ctx, rel)
    if win_before is None or not m:
        return None
    outstanding = max(0, ctx.snd_max_before_end - ack_before)
    usable = ack_before + win_before - ctx.snd_max_before_end
    need = max(1, ctx.held_len)
    timer = timer_driven(ctx, rel)
    evidence = {
        "releasing_ack_frame": rel.frame,
        "releasing_ack_delay_ns": peer_delay(ctx, rel),
        "window_before_release": win_before,
        "window_after_release": rel.window,
        "usable_window_before_release": usable,
        "outstanding_bytes": outstanding,
        "next_segment_len": ctx.held_len,
    }
    if usable < need:
        peer_max = ctx.profile.get("peer_receive_window_max") or win_before
        if 0 < usable < m and usable < peer_max // 2 and ctx.held_len >= usable:
            return Verdict(Cause.SENDER_SWS.value, None, 0.7, evidence,
                           (Alternative(Cause.RECEIVER_WINDOW_LIMITED.value, None, 0.3, "the peer's window was small"),))
        if win_before == 0 or outstanding >= win_before - m:
            alt = (Alternative(Cause.WINDOW_UPDATE_DEADLOCK.value, None, 0.3,
                               "the window update came with the delayed-ACK timer") if timer else None)
            return Verdict(Cause.RECEIVER_WINDOW_LIMITED.value, None, 0.85, evidence, tuple(a for a in [alt] if a))
        return None
    plateau = ctx.profile.get("send_buffer_estimate")
    full = ctx.held_len >= m
    if plateau and full and outstanding >= plateau - m:
        evidence["send_buffer_estimate"] = plateau
        if timer:
            return Verdict(Cause.WINDOW_UPDATE_DEADLOCK.value, None, 0.75, evidence,
                           (Alternative(Cause.SEND_BUFFER_LIMITED.value, None, 0.25, "a small send buffer"),))
        return Verdict(Cause.SEND_BUFFER_LIMITED.value, None, 0.75, evidence)
    return None
