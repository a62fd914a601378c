"""Stalls in which a window, not Nagle, left no room: the peer's advertised window (a slow reader,
a zero window), Moldeklev's window-update deadlock (the receiver's window-update rule is not met,
so only its delayed-ACK timer moves the sender), the sender's silly-window avoidance (a usable
window smaller than a segment and than half the peer's largest,
docs/tcp-rules.md#bsd-output-decision-order), and a send buffer too small for the path (the flight
stops at the buffer's size with the peer's window open).
"""

from __future__ import annotations

from stallscope.analyzers.causes.nagle import buffer_in_flight, mss_beyond, one_way, update_reachable
from stallscope.analyzers.causes.common import (Rows, before, resent_before_silence, rows_of, filled_small_window, held_in_buffer, mss, tolerance, zero_window_at_end, peer_delay, release, send_buffer_plateau,
                                                sporadic_peer_delay, timer_driven)
from stallscope.analyzers.inference import segment_size_shown
from stallscope.analyzers.peer_acks import DELAYED_MIN_NS, MAX_ACK_DELAY_NS
from stallscope.analyzers.findings import Alternative, Verdict
from stallscope.analyzers.stalls import RTT_MULTIPLE, StallContext
from stallscope.vocabulary import UNDETERMINED, Cause


# No stack restarts slow start after a pause shorter than its smallest retransmission timeout
# (Linux's TCP_RTO_MIN; BSD's idle check waits a whole RTO, a second or more).
IDLE_RESTART_NS = 200_000_000


def _window_past_one_segment(ctx: StallContext, outstanding: int, m: int) -> bool:
    """One segment was out, yet the congestion window had grown past one: a full segment of this
    sender's had been acknowledged before, with no resend since the capture began and no pause
    before this flight long enough to restart slow start."""
    first_resend = ctx.profile.get("_first_resend_ns")
    return (outstanding <= m and ctx.una_at_start >= 2 * m
            and ctx.idle_before_ns is not None and ctx.idle_before_ns < IDLE_RESTART_NS
            and (first_resend is None or first_resend > ctx.start_ns))


def rule(ctx: StallContext) -> Verdict | None:
    if not ctx.repairs() and zero_window_at_end(ctx):
        return _zero_window_held(ctx)
    if (ctx.resends and not resent_before_silence(ctx)) or not ctx.ended_by_new_data:
        return None
    rel = release(ctx)
    if rel is None and filled_small_window(ctx):
        return _sws_timer(ctx)
    if rel is None or rel.dup:
        return None  # a duplicate ACK let it go: loss recovery's pace, not a window's
    m = mss(ctx)
    ack_before, win_before = before(ctx, rel)
    if win_before is None or not m:
        return None
    outstanding = max(0, ctx.snd_max_before_end - ack_before)
    usable = ack_before + win_before - ctx.snd_max_before_end
    need = max(1, ctx.held_len)
    if not ctx.profile.get("window_known", True) and (win_before == 0 or usable < need):
        # A window of unknown scale is read raw, a floor of the real one: room in the raw window
        # is room in the real one (so the sender's own limits held it, below), but a raw window
        # too small says nothing unless it is zero at every scale.
        return _zero_window_unscaled(ctx, rel, ack_before, win_before)
    if lost_flight(ctx, outstanding, m):
        # Most of a flight of several segments was lost and fast retransmission resent it after
        # the stall: the receiver had one segment to acknowledge (its timer did) instead of the
        # flight, so the loss, not a window, stopped the ACK clock; the repair that followed is
        # loss recovery, not a stall with a cause (as the simulator's ground truth counts it).
        if not ctx.lost_after[0]:
            return None
        # Where a timeout finished the repair, the simulator names the wait for the delayed ACK by
        # the window that stopped the sender (the congestion window); the capture's truth names the
        # loss. Both readings hold: neither is claimed.
        return Verdict(UNDETERMINED, None, 0.0, {
            "reason": (f"{ctx.repaired_after} of the {outstanding // m} segments outstanding were lost and resent after "
                       f"it (a timeout at frame {ctx.lost_after[1]}): the receiver's delayed ACK of what arrived ended "
                       "the wait; a loss, or the congestion window waiting for that ACK"),
            "releasing_ack_frame": rel.frame, "releasing_ack_delay_ns": peer_delay(ctx, rel),
            "outstanding_bytes": outstanding, "timeout_frame": ctx.lost_after[1]},
            (Alternative(Cause.BURST_LOSS_TIMEOUT.value, None, 0.4, "the flight was lost"),
             Alternative(Cause.WINDOW_UPDATE_DEADLOCK.value, "congestion_window", 0.3,
                         "the congestion window waited for the delayed ACK")))
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
    # A writer that never had 2 KB out wrote little (a 100-byte reply held by Nagle behind another
    # on loopback): the flight shows its messages, not a buffer that filled.
    plateau = send_buffer_plateau(ctx)
    if usable < need and not (win_before > 0 and _whole_buffer_out(ctx, outstanding)):
        peer_max = ctx.profile.get("peer_receive_window_max") or win_before
        if 0 < usable < m and usable < peer_max // 2 and ctx.held_len >= usable:
            return Verdict(Cause.SENDER_SWS.value, None, 0.7, evidence,
                           (Alternative(Cause.RECEIVER_WINDOW_LIMITED.value, None, 0.3, "the peer's window was small"),))
        if win_before == 0 or outstanding >= win_before - m:
            if win_before > 0 and rel.window >= win_before - m and sporadic_peer_delay(ctx, rel):
                # The window stayed open as wide: the flight filled it because the peer's ACK
                # clock stopped (its host or the path paused), not because a slow reader closed
                # it (undetermined).
                return None
            alt = (Alternative(Cause.WINDOW_UPDATE_DEADLOCK.value, None, 0.3,
                               "the window update came with the delayed-ACK timer") if timer else None)
            return Verdict(Cause.RECEIVER_WINDOW_LIMITED.value, None, 0.85, evidence, tuple(a for a in [alt] if a))
        return None
    # (With all of its send buffer in flight the sender had nothing unsent for a small window to
    # hold back: the buffer, not the window, stopped it.)
    buffer_full = (bool(plateau) and outstanding >= buffer_in_flight(ctx, plateau)
                   and not held_in_buffer(ctx, rel, m))
    if ctx.held_len < m and outstanding > 0 and not buffer_full:
        return None  # a short segment waited behind unacknowledged data: the Nagle rules' case
    # The peer's window had room, so the sender's own limits held it: its send buffer (all of it in
    # flight) or its congestion window (slow start, after a timeout). Released by the receiver's
    # delayed-ACK timer that is Moldeklev's deadlock (the window update never came on its own);
    # released by an ordinary ACK, the buffer or the window was simply too small for the path.
    # The buffer holds at least the largest flight ever seen: below it by more than a segment, the
    # congestion window (slow start) stopped the sender, not the buffer.
    ceiling = max(plateau, ctx.profile.get("max_in_flight") or 0)
    growing = ctx.flight_seen <= outstanding < ceiling  # slow start: a new largest flight, outgrown later
    buffer_full = buffer_full or bool(plateau) and outstanding >= ceiling - m and not growing
    evidence["send_buffer_estimate"] = plateau or None
    detail = None if buffer_full else "congestion_window"
    if sporadic_peer_delay(ctx, rel):
        return None  # neither the buffer nor the window: the peer or the path paused (undetermined)
    if timer:
        alts = [Alternative(Cause.SEND_BUFFER_LIMITED.value if buffer_full else Cause.RECEIVER_WINDOW_LIMITED.value,
                            detail, 0.25, "the ACK that released it was the peer's delayed-ACK timer's")]
        conf = 0.75
        if ctx.held_len >= m and not segment_size_shown(ctx.profile):
            # No SYN gave the MSS and every segment of the largest size was a write's: the flight
            # may be a short segment, the next write waiting in the buffer behind it for Nagle
            # (SunOS's 4 KB copies under an 8 KB buffer look the same as a 4 KB buffer).
            evidence["segment_size_shown"] = False
            queued = plateau - outstanding if plateau else 0
            peer_max = ctx.profile.get("peer_receive_window_max") or 0
            if detail is None and one_way(ctx) and peer_max and 0 < queued < m:
                # ...and the buffer a bulk writer keeps full held less than a segment behind the
                # flight: what waited was short, whatever the MSS, and the segment that went on the
                # ACK took data written after it (SunOS's 4 KB copies under a 12 KB buffer: 8192
                # out, 4096 held, 8192 sent on the ACK). Nagle held it, unless even the whole
                # buffer could not reach the receiver's window-update threshold (Moldeklev (1),
                # tested with the MSS the receiver's timer implies: mss_beyond).
                evidence["held_in_buffer"] = queued
                return _deadlock_or_nagle(ctx, rel, ack_before, plateau, mss_beyond(ctx, m, outstanding), peer_max,
                                          evidence, Alternative(Cause.WINDOW_UPDATE_DEADLOCK.value, None, 0.35,
                                          "if the buffer is smaller than its plateau: the whole of it was out"))
            if detail == "congestion_window" and _window_past_one_segment(ctx, outstanding, m):
                # ...but a congestion window of one segment is slow start's first round only: each
                # ACK of new data opens it (RFC 5681: by a segment, in either phase, while it is one
                # segment), and only a loss or an idle restart shuts it again. A sender that had a
                # segment acknowledged and sent on without either, one segment out, was held by
                # something else: the segments are writes below the MSS (SunOS's 4 KB copies over
                # ATM's 9 KB MSS, the SYN cut), and Nagle held the next one; unless, as Moldeklev
                # (1), the whole of it could not reach the receiver's window-update threshold (an
                # MSS above the segments puts two MSS out of its reach): the deadlock, Nagle or not.
                evidence["held_segment_frame"] = ctx.held_frame
                evidence["idle_before_ns"] = ctx.idle_before_ns
                return _deadlock_or_nagle(ctx, rel, ack_before, outstanding + ctx.held_len, ctx.held_len + 1,
                                          peer_max, evidence,
                                          Alternative(Cause.WINDOW_UPDATE_DEADLOCK.value, "congestion_window", 0.35,
                                                      f"if the MSS is the {m}-byte segments: the congestion window "
                                                      "held the next"))
            alts.insert(0, Alternative(Cause.NAGLE_DELAYED_ACK.value, None, 0.45,
                                       f"if the MSS exceeds the {m}-byte segments, Nagle held the next one"))
            conf = 0.5
        return Verdict(Cause.WINDOW_UPDATE_DEADLOCK.value, detail, conf, evidence, tuple(alts))
    if buffer_full:
        return Verdict(Cause.SEND_BUFFER_LIMITED.value, None, 0.75, evidence)
    typical = ctx.timing.typical_rtt_ns or ctx.timing.path_rtt_ns or 0
    held = peer_delay(ctx, rel) or 0
    if held > MAX_ACK_DELAY_NS:
        return Verdict(UNDETERMINED, None, 0.0, {**evidence, "reason": (
            f"the peer held the ACK that released it {held / 1e6:.0f} ms, longer than any delayed-ACK timer may "
            "(RFC 1122: 0.5 s): its host paused, or the capture missed an earlier ACK")},
            (Alternative(Cause.RECEIVER_WINDOW_LIMITED.value, "congestion_window", 0.3,
                         "if the sender's congestion window waited for that ACK"),))
    if ctx.duration_ns < RTT_MULTIPLE * typical and held < DELAYED_MIN_NS:
        # The congestion window at the pace of a queued path: no stall, the path was full. (Not
        # when the receiver itself held the releasing ACK: its delay is not the path's queue.)
        return None
    unused = _room_left_unused(ctx, rel, m)
    if unused is not None:
        # An earlier ACK of the stall freed a segment of the flight with the peer's window open, and
        # the sender sent nothing until this one: a congestion window would have let it go (an ACK
        # frees what it acknowledges), so the window did not hold it. A sender that had its whole
        # buffer out waits for the buffer to drain far enough to wake its writer (Linux at half of
        # it; a Winsock writer with an 8 KB SO_SNDBUF until its write is acknowledged).
        evidence["room_unused_after_frame"] = unused.frame
        if plateau and ctx.in_flight_at_start >= plateau - m:
            return Verdict(Cause.SEND_BUFFER_LIMITED.value, None, 0.6, evidence,
                           (Alternative(Cause.APPLICATION_IDLE.value, None, 0.3,
                                        "the application wrote again only once its data was acknowledged"),))
        return None
    return Verdict(Cause.RECEIVER_WINDOW_LIMITED.value, "congestion_window", 0.5, evidence)


def _deadlock_or_nagle(ctx: StallContext, rel, ack_before: int, in_use: int, mss_test: int, peer_max: int,
                       evidence: dict, deadlock_alt: Alternative) -> Verdict:
    """Where no SYN showed the MSS and Nagle held what waited: the window-update deadlock if even
    the `in_use` bytes could not reach the receiver's update threshold (Moldeklev (1), tested with
    `mss_test`), Nagle's stall otherwise, the other reading its alternative."""
    if peer_max and not update_reachable(ctx, rel, ack_before, in_use, mss_test, peer_max):
        evidence["buffer_in_use"] = in_use
        return Verdict(Cause.WINDOW_UPDATE_DEADLOCK.value, None, 0.6, evidence,
                       (Alternative(Cause.NAGLE_DELAYED_ACK.value, None, 0.3, "Nagle held the rest of the buffer"),))
    return Verdict(Cause.NAGLE_DELAYED_ACK.value, None, 0.6, evidence, (deadlock_alt,))


def _room_left_unused(ctx: StallContext, rel, m: int):
    """The first of the peer's ACKs during the stall, seen by the sender well before it sent again,
    after which a segment of the flight had been acknowledged and the peer's window had room for
    another: room a congestion-window-bound sender fills at once. None if there was none."""
    seen_by = ctx.end_ns - ctx.timing.lag_ns - tolerance(ctx)
    for a in ctx.acks:
        if a is rel or a.ts_ns >= seen_by:
            return None
        if (a.advances and not a.dup and a.ack - ctx.una_at_start >= m
                and a.ack + a.window - ctx.snd_max_before_end >= m):
            return a
    return None


def _zero_window_held(ctx: StallContext) -> Verdict:
    """The peer closed its window and the capture ends before it opened again, the sender probing
    it all the while: a receiver that stopped reading (or a receiver gone, its stack still
    answering)."""
    closed = None  # the first of the peer's ACKs that have kept the window shut since
    for a in reversed(ctx.acks):
        if a.window != 0:
            break
        closed = a
    return Verdict(Cause.RECEIVER_WINDOW_LIMITED.value, None, 0.8, {
        "zero_window_frame": closed.frame if closed is not None else None,
        "window_reopened": False,
        "probes_until_frame": ctx.end_frame,
        "outstanding_bytes": max(0, ctx.snd_max_before_end - ctx.acked_before(ctx.end_ns + 1)),
        "why": "the peer's window was zero to the end of the capture and the sender kept probing it: it had data to send",
    })


def _sws_timer(ctx: StallContext) -> Verdict:
    """No ACK let the segment go: the sender's own timer sent what fitted a window smaller than a
    segment, after holding it (RFC 1122 4.2.3.4's override timeout; BSD and Windows send it when
    the persist timer fires)."""
    return Verdict(Cause.SENDER_SWS.value, None, 0.7, {
        "released_by": "the sender's own timer (no ACK came)",
        "usable_window_before_release": ctx.usable_before_end,
        "outstanding_bytes": ctx.in_flight_before_end,
        "next_segment_len": ctx.held_len,
        "held_ns": ctx.duration_ns,
    }, (Alternative(Cause.RECEIVER_WINDOW_LIMITED.value, None, 0.3, "the peer's window was small"),))


def _zero_window_unscaled(ctx: StallContext, rel, ack_before: int, win_before: int) -> Verdict | None:
    """With the window scale unknown (no SYN seen) windows are raw field values, so only a zero
    window can be read: it is zero at every scale. The peer closed its window and reopened it with
    the releasing ACK (a reader that stopped)."""
    if win_before != 0 or rel.window == 0:
        return None
    return Verdict(Cause.RECEIVER_WINDOW_LIMITED.value, None, 0.7, {
        "releasing_ack_frame": rel.frame,
        "releasing_ack_delay_ns": peer_delay(ctx, rel),
        "window_before_release": 0,
        "window_after_release": None,  # a raw value of unknown scale
        "usable_window_before_release": 0,
        "outstanding_bytes": max(0, ctx.snd_max_before_end - ack_before),
        "next_segment_len": ctx.held_len,
    })


def _whole_buffer_out(ctx: StallContext, outstanding: int) -> bool:
    """All the sender's buffer was in flight: the flight stood at the largest it ever reached, and
    that ceiling was reached with the peer's window open (so the window did not set it: the buffer
    did). A sender with nothing unsent has nothing for a small window to hold back."""
    plateau = send_buffer_plateau(ctx)
    ceiling = ctx.profile.get("max_in_flight") or 0
    return bool(plateau) and plateau >= ceiling and outstanding >= ceiling


# A flight at least this many segments long, half of it or more resent after the stall, was lost.
LOST_FLIGHT_SEGMENTS = 4


def lost_flight(ctx: StallContext, outstanding: int, m: int) -> bool:
    """Most of a flight of several segments outstanding at the stall was resent after it (by fast
    retransmission or a timeout) before the peer acknowledged it: the flight was lost."""
    return outstanding >= LOST_FLIGHT_SEGMENTS * m and ctx.repaired_after * m * 2 >= outstanding


# A send-buffer-limited sender waits with data outstanding for most of each round trip: it has
# sent all its buffer holds. These bound the finding (see send_buffer_finding).
SILENCE_SHARE = 0.5
SILENCE_GAP_RTT = 0.5
PLATEAU_OF_WINDOW = 0.5
ROOM_SEGMENTS = 2
MIN_BUFFERS_SENT = 8


# A standing queue (typical RTT this far above the path's) means the path was full: not the buffer.
QUEUE_FREE_RTT = 1.25


def send_buffer_finding(own: Rows, profile: dict, timing, peer_data_packets: int = 0,
                        peer_acks: Rows | None = None) -> tuple[str, float, dict] | None:
    """Connection finding: the flight stopped at the send buffer's size, well inside the peer's
    window, with no loss, and the sender sat silent with data outstanding most of the time (no
    standing queue: the path could have carried more). A bulk transfer through a small SO_SNDBUF on
    a long path (Moldeklev's S against a large bandwidth-delay product). `peer_acks`: the peer's
    ACK times (column ts_ns); without them every silence with data out counts as waiting. Either
    table may be given as how to read it (causes.common.Rows), read once past the profile's tests."""
    import polars as pl

    rtt = timing.path_rtt_ns if timing is not None else None
    plateau = profile.get("send_buffer_estimate") or 0
    peer = profile.get("peer_receive_window_max") or 0
    if not rtt or not plateau or profile.get("timeouts") or profile.get("retransmitted_packets"):
        return None
    m = profile.get("max_segment") or 0
    # A window read with a floor of its scale (no SYN seen: the least scale that explains the flight)
    # may read under twice the flight however wide the real one was; there the room it showed at
    # each silence stands in for the margin (the silences below count only where it left two
    # segments or more). A floor only understates the room, never shows room that was not there.
    floor = not profile.get("window_known", True) and bool(profile.get("_window_floor_scale"))
    if peer < (plateau + ROOM_SEGMENTS * m if floor else plateau / PLATEAU_OF_WINDOW):
        return None
    if (profile.get("bytes") or 0) < MIN_BUFFERS_SENT * plateau:
        return None
    if plateau < 2 * m:
        return None  # a buffer under two segments is the Nagle and window-update rules' ground
    if peer_data_packets > 2:
        return None  # request/response: the silences wait for requests, not for buffer space
    if timing.vantage != "receiver" and (timing.typical_rtt_ns or rtt) > QUEUE_FREE_RTT * rtt:
        return None
    own = rows_of(own)
    data = own.filter(pl.col("payload_len") > 0).select("ts_ns", "in_flight", "rtt_ns", "payload_len",
                                                        *(["usable_window"] if floor else []))
    if data.height < 3:
        return None
    span = int(data["ts_ns"].max() - data["ts_ns"].min())
    if _queued_flight(data, timing, rtt) or (not timing.clock_ns and _link_paced(data, span)):
        return None
    gaps = data.with_columns(next_ts=pl.col("ts_ns").shift(-1)).drop_nulls("next_ts").with_columns(
        gap=pl.col("next_ts") - pl.col("ts_ns"))
    silences = gaps.filter((pl.col("gap") >= SILENCE_GAP_RTT * rtt) & (pl.col("in_flight") > 0))
    if floor:
        silences = silences.filter(pl.col("usable_window").fill_null(0) >= ROOM_SEGMENTS * m)
    waiting = _waiting_for_acks(silences, peer_acks, timing, rtt)
    share = waiting / span if span else 0.0
    evidence = {"send_buffer_estimate": plateau, "peer_window_max": peer, "waiting_share": round(share, 3),
                "path_rtt_ns": rtt}
    if share >= SILENCE_SHARE:
        offered = f"at least {peer} (its window scale unseen, read as a floor)" if floor else str(peer)
        return (Cause.SEND_BUFFER_LIMITED.value, 0.75, {**evidence, "why": (
            f"the flight stopped at {plateau} bytes while the peer offered {offered}; the sender spent "
            f"{share:.0%} of the transfer waiting for ACKs with its buffer in flight")})
    # A window read with a floor of its scale shows room as well as a known one (never too much).
    room_shown = bool(profile.get("window_known", True)) or floor
    ceiling = _flight_ceiling(own, plateau, rtt, profile.get("max_segment") or 1, room_shown)
    if ceiling is None:
        return None
    at, rtts, start = ceiling
    return (Cause.SEND_BUFFER_LIMITED.value, 0.75, {
        **evidence, "ceiling_rtts": at, "rtts": rtts, "ceiling_from_ns": start,
        "why": f"the flight's peak stood at the send buffer's {plateau} bytes in {at} of the {rtts} round trips "
               f"after it first got there, while the peer offered {peer} and nothing was lost: "
               "each ACK let the writer refill its buffer (no congestion window stays that flat)"})


# An ACK-clocked sender refilled as its buffer drains has no silences: each round trip its flight
# climbs back to the same ceiling (Linux wakes the writer once half its buffer is free). A congestion
# window without loss would outgrow a ceiling held this many round trips; an application's own pace
# would not press against one. A round trip reaches the ceiling with its peak at CEILING_NEAR of it.
CEILING_NEAR = 0.9
# ...and within two segments of it, or this share of a flight of more than 66 segments (Linux's
# send buffer, autotuned to 4 MB, holds a 2.8 MB flight a few segments either way).
CEILING_BAND = 0.03
CEILING_SHARE = 0.8
MIN_CEILING_RTTS = 8


def _flight_ceiling(own, plateau: int, rtt: int, m: int, window_known: bool) -> tuple[int, int, int] | None:
    """(round trips at the ceiling, round trips from the first there to the last data, time of the
    first) where the flight pressed against `plateau` (its round trip's peak in the band below where
    the peaks near it mostly stand)
    in CEILING_SHARE of MIN_CEILING_RTTS or more round trips with data, each with the peer's window
    at least twice the plateau (so the window did not set the ceiling), no round trip without data
    (an idle writer's pace is its own), and the peaks not rising by more than a segment from the
    first third of those round trips to the last."""
    import polars as pl

    if not window_known:
        return None  # a raw window of unknown scale cannot show the window had room
    data = own.filter(pl.col("payload_len") > 0)
    t0 = data["ts_ns"].min()
    per_rtt = data.group_by(((pl.col("ts_ns") - t0) // rtt).alias("rtt_index")).agg(
        pl.col("ts_ns").min().alias("first_ts"), pl.col("in_flight").max().alias("peak"),
        pl.col("peer_window").min().alias("window")).sort("rtt_index")
    # The ceiling is where the round trips' peaks stand, not the highest of them: at a receiver's tap
    # the flight reads a segment or two high now and then (data in before the ACK it held went out),
    # and a plateau taken from those few (70,952 bytes against 67,360 in most round trips behind a
    # 128 KB Linux buffer on a 60 ms path) put every other round trip below the band.
    high = per_rtt.filter(pl.col("peak") >= CEILING_NEAR * plateau)["peak"]
    if high.is_empty():
        return None
    ceiling = min(plateau, float(high.median()))
    band = pl.col("peak") >= max(CEILING_NEAR * plateau, ceiling - max(2 * m, CEILING_BAND * ceiling))
    near = per_rtt.select(band).to_series()
    if not near.any():
        return None
    first = int(near.arg_true()[0])
    steady = per_rtt.slice(first)
    last_index = int(per_rtt["rtt_index"][-1])
    rtts = last_index - int(steady["rtt_index"][0]) + 1
    if steady.height < rtts:
        return None  # a round trip without data: the writer paused
    at_ceiling = steady.filter(band & (pl.col("window").fill_null(0) >= plateau / PLATEAU_OF_WINDOW))["peak"]
    at = at_ceiling.len()
    if at < MIN_CEILING_RTTS or at < CEILING_SHARE * rtts:
        return None
    third = at // 3
    if float(at_ceiling.tail(third).median()) - float(at_ceiling.head(third).median()) > m:
        return None  # still rising within the band: a congestion window growing a segment a round trip
    return at, rtts, int(steady["first_ts"][0])


# The data's own rate against the rate its back-to-back packets show (their PAIR_QUANTILE pace):
# at BUSY_SHARE or more of it, the packets came at the bottleneck's pace with no room between them.
PAIR_QUANTILE = 0.9
BUSY_SHARE = 0.7


def _link_paced(data, span: int) -> bool:
    """The data reached the tap as fast as its bottleneck lets packets follow each other, all the
    way: the path was busy, so it set the pace, not the buffer. At a receiver's tap the flight read
    there is then the bottleneck's rate times the round trip, as flat from one round trip to the
    next as a buffer's (a clean 5 Mbit/s path over 80 ms: 26.5 KB at every peak, the data in at 0.97
    of its packets' back-to-back rate; a buffer-bound sender's flights arrive as bursts, at 0.01-0.03
    of it). At a sender's tap the packets leave at the host's line rate: never busy by this test.
    Not read on a coarse clock (timestamps_coarse): packets within a tick show no spacing at all.
    `span`: from the first data packet to the last, ns."""
    import polars as pl

    pairs = data.select(gap=pl.col("ts_ns").diff(), size=pl.col("payload_len")).drop_nulls().filter(pl.col("gap") > 0)
    if pairs.height < 10:
        return False
    fast = pairs.select((pl.col("size") * 8e9 / pl.col("gap")).quantile(PAIR_QUANTILE)).item()
    return bool(fast) and span > 0 and int(data["payload_len"].sum()) * 8e9 / span >= BUSY_SHARE * fast


def _queued_flight(data, timing, rtt: int) -> bool:
    """The flight's own round trip (the sender's data-to-ACK time: the tap's lag plus its median
    sample) stood QUEUE_FREE_RTT above the path's: the flight waited in a bottleneck's queue, so the
    path, not the buffer, paced the sender. A buffer-bound sender's flight crosses an idle path. (The
    median less the fastest sample, the typical RTT, misses a queue that never drained: a bulk
    transfer whose flight of 200 KB kept 5 ms in front of a 135 Mbit/s link on a 2 ms path.)"""
    samples = data["rtt_ns"].drop_nulls()
    if samples.len() == 0:
        return False
    lag = timing.lag_ns if timing.vantage != "sender" else 0
    return lag + float(samples.median()) > QUEUE_FREE_RTT * rtt


# An ACK this much of a round trip after the sender could have reacted to it still counts as
# the one it reacted to (jitter between the tap and the sender).
REACTION_SLACK_RTT = 0.25


def _waiting_for_acks(silences, peer_acks, timing, rtt: int) -> int:
    """The part of each silence the sender spent waiting for ACKs: up to the last ACK it could have
    seen before it sent again (the tap's reaction lag added). A buffer-limited sender sends as soon
    as an ACK frees space, so that ACK ends its silence; a writer that stays silent long after
    everything it sent was acknowledged had nothing to send (application idle, not its buffer)."""
    import polars as pl

    peer_acks = rows_of(peer_acks) if peer_acks is not None else None
    if peer_acks is None or peer_acks.height == 0 or silences.height == 0:
        return int(silences["gap"].sum()) if silences.height else 0
    lag = timing.lag_ns if timing is not None else 0
    acks = peer_acks.select(pl.col("ts_ns").alias("ack_ts")).sort("ack_ts").with_columns(
        seen=pl.col("ack_ts") + lag)
    probe = silences.select("ts_ns", "gap", "next_ts").with_columns(
        latest=pl.col("next_ts") + int(REACTION_SLACK_RTT * rtt)).sort("latest")
    joined = probe.join_asof(acks, left_on="latest", right_on="seen", strategy="backward")
    waited = (pl.min_horizontal(pl.col("seen"), pl.col("next_ts")) - pl.col("ts_ns")).clip(0).fill_null(0)
    return int(joined.select(pl.min_horizontal(waited, pl.col("gap")).sum()).item())
