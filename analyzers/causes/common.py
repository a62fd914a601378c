"""Small shared readings of a stall's context used by several cause rules."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from stallscope.analyzers.peer_acks import (BSD_TICK_NS, DELAYED_MIN_NS, MAX_ACK_DELAY_NS, ONE_SHOT_MIN_NS,
                                            TICK_MIN_DELAY_NS, on_tick)
from stallscope.analyzers.stalls import MIN_THRESHOLD_NS, PeerAck, StallContext
from stallscope.analyzers.writes import MCLBYTES

# How far from the tap's reaction lag an ACK may be and still count as what released the sender.
LAG_TOLERANCE_NS = 2_000_000
LAG_TOLERANCE_SHARE = 0.5


# One direction's rows, or how to read them: the connection findings test what the profile already
# counted first, and the filter that selects the rows was most of the cost of a short connection.
Rows = pl.DataFrame | Callable[[], pl.DataFrame]


def rows_of(rows: Rows) -> pl.DataFrame:
    return rows() if callable(rows) else rows


def tolerance(ctx: StallContext) -> int:
    return max(LAG_TOLERANCE_NS, int(LAG_TOLERANCE_SHARE * ctx.timing.lag_ns))


def mss(ctx: StallContext) -> int:
    """The full segment size this sender was using when the stall began (its largest recent
    segment: PMTU discovery may have lowered it since the connection's largest)."""
    return ctx.segment_size


def release(ctx: StallContext) -> PeerAck | None:
    """The peer's pure ACK that released the closing segment (None if the sender was not reacting
    to an ACK, or reacted to the peer's data)."""
    a = ctx.releasing_ack(tolerance(ctx))
    if a is None or a.payload > 0:
        return None
    return a


def filled_small_window(ctx: StallContext) -> bool:
    """The segment that ended the silence filled the peer's usable window exactly, and that window
    was smaller than a full segment: the sender had more to send and the window held it back (its
    silly-window avoidance, until a timer let what fitted go), not an application that wrote late.
    An application's short write goes out at once, smaller than the room it has."""
    u = ctx.usable_before_end
    return (ctx.profile.get("window_known", True) and u is not None and 0 < u < mss(ctx)
            and ctx.held_len == u)


def zero_window_at_end(ctx: StallContext) -> bool:
    """The capture ends in the silence with the peer's window closed (zero at any scale) by its last
    ACK, and the sender probed it: a sender probes a zero window only with data waiting
    (RFC 9293 3.8.6.1), so it was held, not idle."""
    if ctx.ended_by_new_data:
        return False
    last = ctx.acks[-1] if ctx.acks else None
    closed = last.window == 0 if last is not None else ctx.window_at_start == 0
    return closed and ctx.end_frame != ctx.start_frame


def before(ctx: StallContext, ack: PeerAck) -> tuple[int, int | None]:
    """The cumulative ACK and the peer's window in force just before `ack` arrived."""
    prior = ctx.acks[: ctx.acks.index(ack)]
    ack_before = max([ctx.una_at_start] + [a.ack for a in prior])
    window = prior[-1].window if prior else ctx.window_at_start
    return ack_before, window


def resent_before_silence(ctx: StallContext) -> bool:
    """The sender resent at once, neither on a timer nor on duplicate ACKs (an ICMP "fragmentation
    needed" made it cut the lost segment smaller), then sat silent a whole stall threshold, and the
    ACK that first covered what it resent let its next data go: the silence waited for that ACK, as
    for any flight (a 4.4BSD sender, its window one segment after the cut, waiting 174 ms for the
    receiver's delayed ACK), not for a repair."""
    if not ctx.resends or any(r.kind != "other" for r in ctx.resends):
        return False
    if ctx.end_ns - max(r.ts_ns for r in ctx.resends) < ctx.threshold_ns:
        return False
    end = max(r.seq + r.length for r in ctx.resends)
    covering = next((a for a in ctx.acks if a.ack >= end), None)
    return covering is not None and covering is ctx.releasing_ack(tolerance(ctx))


def peer_delay(ctx: StallContext, ack: PeerAck) -> int | None:
    """How long the peer held `ack` after the data it covers reached it: its data-to-ACK time at
    the tap less the rest of the round trip, and never more than the flight's own ACK pace leaves
    (`queue_paced_hold`). An ACK of data resent at once before the silence (resent_before_silence)
    has no data-to-ACK time (Karn: which copy it answers is unknown); timed from the later copy it
    has a floor, which is what it is read as."""
    if ack.delay_ns is None:
        if not resent_before_silence(ctx) or ack is not ctx.releasing_ack(tolerance(ctx)):
            return None
        return max(0, ack.ts_ns - max(r.ts_ns for r in ctx.resends) - ctx.timing.rest_of_rtt())
    held = max(0, ack.delay_ns - ctx.timing.rest_of_rtt())
    paced = queue_paced_hold(ctx, ack)
    return held if paced is None else min(held, paced)


# Consecutive ACKs of the stall's flight needed before `ack` to read the pace at which its data
# reached the receiver, and how far past that pace the flight's first ACK may come.
PACE_ACKS = 2
PACE_SLACK = 1.5


def queue_paced_hold(ctx: StallContext, ack: PeerAck) -> int | None:
    """What the receiver added to `ack`, read from the pace of the flight's earlier ACKs. A tap
    before the bottleneck sees a burst leave at once and its ACKs return as the burst drains
    through the queue, so the last segment's data-to-ACK time holds the whole flight's queueing
    (8 KB through a 600 kbit/s uplink: 110 ms, a delayed-ACK timer's figure). The earlier ACKs of
    the same flight give the time per byte at which its data reached the receiver; the gap before
    `ack` less its bytes at that pace is the receiver's own hold. None where that cannot be read (a
    receiver's tap measures the hold itself; fewer than PACE_ACKS advancing ACKs before it)."""
    if ctx.timing.vantage == "receiver":
        return None
    prior = [a for a in ctx.acks if a.advances and not a.dup and a.ts_ns < ack.ts_ns and a.ts_ns >= ctx.start_ns]
    if len(prior) < PACE_ACKS:
        return None
    paces = sorted((b.ts_ns - a.ts_ns) / (b.ack - a.ack) for a, b in zip(prior, prior[1:]) if b.ack > a.ack)
    covered = ack.ack - prior[-1].ack
    if not paces or covered <= 0:
        return None
    pace = paces[len(paces) // 2]
    # The pace is a queue's only if the flight's first ACK came when that queue would have let it:
    # ACKs that all arrive together after a pause (the peer's host or the path stopped) have a fast
    # pace between them and say nothing of how long each was held.
    first = prior[0]
    if first.delay_ns is None:
        return None
    first_held = first.delay_ns - ctx.timing.rest_of_rtt()
    if first_held > PACE_SLACK * (first.ack - ctx.una_at_start) * pace + tolerance(ctx):
        return None
    return max(0, int(ack.ts_ns - prior[-1].ts_ns - covered * pace))


def timer_driven(ctx: StallContext, ack: PeerAck) -> bool:
    """The ACK came from the peer's delayed-ACK timer: it was held well past the round trip, by a
    delay some delayed-ACK timer gives (a one-shot timer never fires before Linux's 40 ms minimum,
    less jitter; a 200 ms tick fires at any phase). A receiver that answers a steady 30 ms late is
    paced by its reading application's window updates, not by a timer."""
    d = peer_delay(ctx, ack)
    if d is not None and d > MAX_ACK_DELAY_NS:
        return False  # longer than any delayed-ACK timer may hold it
    tick = ctx.profile.get("_peer_tick")
    if tick and d is not None and d >= TICK_MIN_DELAY_NS and on_tick(ack.ts_ns, tick):
        return True  # on the phase of the clock the peer's held ACKs are locked to
    if tick and tick["period_ns"] == BSD_TICK_NS:
        return False  # tcp_fasttimo fires only on its tick: a held ACK off it was sent by a read
    if d is None or d < MIN_THRESHOLD_NS:
        return False
    learned = ctx.profile.get("peer_delayed_ack", {})
    if d >= DELAYED_MIN_NS and (d >= ONE_SHOT_MIN_NS or learned.get("timer") == "tick"):
        return True
    # Under a one-shot timer's minimum (even under 20 ms, a delay long enough to make a stall on
    # its own), yet the only ACK this peer ever held: a 200 ms tick fires at any phase (one ACK in
    # ten under 20 ms), and with less than two segments to acknowledge no window update (BSD: two
    # segments or 35 % of the buffer; Linux: doubling its window) and no every-second-segment ACK
    # was due, so nothing but a timer sent it (the first segment of slow start, waiting for the
    # delayed ACK). A receiver that held many ACKs this long is paced by something else.
    if not tick and (learned.get("delayed_acks") or 0) <= 1:
        ack_before, _ = before(ctx, ack)
        m = mss(ctx)
        return bool(m) and 0 < ack.ack - ack_before < 2 * m
    return False


def held_in_buffer(ctx: StallContext, rel: PeerAck, m: int) -> bool:
    """The short segment the releasing ACK let go was the rest of a full buffer, held by Nagle behind
    the flight: 4.4BSD rounds its send buffer up to a whole number of segments (tcp_mss), and the
    flight plus that segment made one (a buffer of 8760 bytes under a 1460-byte MSS: 8436 out and 324
    held every cycle), where the flight alone did not. Then the flight was not all of the buffer."""
    if not m or not 0 < ctx.held_len < m:
        return False
    outstanding = ctx.snd_max_before_end - before(ctx, rel)[0]
    room = ctx.usable_before_end if ctx.usable_before_end is not None else 0
    return outstanding % m != 0 and (outstanding + ctx.held_len) % m == 0 and room >= ctx.held_len


def send_buffer_plateau(ctx: StallContext) -> int:
    """The send-buffer estimate (the flight's plateau with window room), or 0 when it is no more
    than MCLBYTES: a writer that never had more than a cluster out wrote little or was torn by
    sosend's copy, its buffer never shown full."""
    plateau = ctx.profile.get("send_buffer_estimate") or 0
    if ctx.profile.get("_send_buffer_flight") == ctx.una_at_start:
        # This stall's own flight alone reached it: it shows where the flight's data ended (8600
        # bytes sent as 8408 with Nagle holding 192, on a connection of its own), no ceiling.
        return 0
    w = ctx.profile.get("_writer")
    if w is not None and plateau == w.size:
        # The flight never passed one of the writer's writes (writes.py: its pauses found them
        # complete): the write bounded it, whatever the buffer (writes of 2310 bytes every 300 ms
        # under an 8 KB buffer).
        return 0
    # No socket send buffer is smaller than one mbuf cluster (Linux's SOCK_MIN_SNDBUF is about 4 KB,
    # BSD's low-water mark 2 KB): below it the plateau is a small writer's. Nor is a plateau of one
    # cluster a buffer: sosend's first cluster leaves alone on an idle connection and Nagle holds the
    # rest of the write behind it (a request of 2936 bytes went as 2048 + 888 under an 8 KB buffer).
    return plateau if plateau > MCLBYTES else 0


# A delay of the peer's ACK shown by at most this share of its ACKs (over at least SPORADIC_MIN_ACKS),
# most of the stall and no timer's, is not how its TCP behaves: its host or the path paused (a
# descheduled VM, a stalled emulator or middlebox), which no cause of the vocabulary names.
SPORADIC_SHARE = 0.01
SPORADIC_MIN_ACKS = 200
SPORADIC_SHARE_OF_STALL = 0.5
# ...or it held an ACK over this many full segments, where it ACKs every second one (a share of its
# ACKs covering two or more of at least EVERY_SECOND_MIN): its ACK clock stopped.
PAUSED_MIN_SEGMENTS = 8
EVERY_SECOND_MIN = 0.5


def acks_as_late(ctx: StallContext, delay_ns: int) -> tuple[int, int]:
    """(how many of the peer's ACKs were held at least `delay_ns`, how many were measured). The
    delays are sorted on the first stall that asks, not for every direction of every connection."""
    import numpy as np

    delays = ctx.profile.get("_peer_delays_sorted")
    if delays is None:
        measured = ctx.profile.get("_peer_delays")
        delays = np.sort(measured.to_numpy()) if measured is not None else np.empty(0)
        ctx.profile["_peer_delays_sorted"] = delays
    if len(delays) == 0:
        return 0, 0
    return int(len(delays) - np.searchsorted(delays, delay_ns, side="left")), len(delays)


def sporadic_peer_delay(ctx: StallContext, ack: PeerAck) -> bool:
    """The peer's holding `ack` made most of the stall, no timer explains it, and its other ACKs
    almost never came so late: a pause of the peer's host or of the path, not its TCP's behaviour."""
    d = peer_delay(ctx, ack)
    if d is None or d < SPORADIC_SHARE_OF_STALL * ctx.duration_ns:
        return False
    # No delayed-ACK timer holds the ACK of many segments from a receiver that ACKs every second one.
    every_second = (ctx.profile.get("peer_delayed_ack") or {}).get("every_second_segment") or 0
    m = mss(ctx)
    covered = ack.ack - before(ctx, ack)[0]
    if m and every_second >= EVERY_SECOND_MIN and covered >= PAUSED_MIN_SEGMENTS * m:
        return True
    late, measured = acks_as_late(ctx, d)
    rare = measured >= SPORADIC_MIN_ACKS and late <= SPORADIC_SHARE * measured
    # ...nor, held as rarely, the ACK of two full segments or more, or of one with two or more sent
    # behind it: the second one's arrival sends it at once (a 35-58 ms hold on a loaded host looks
    # like Linux's 40 ms timer, yet covered 1-3 segments with 12-48 more behind it).
    behind = ctx.snd_max_before_end - ack.ack
    if rare and m and every_second >= EVERY_SECOND_MIN and (covered >= 2 * m or behind >= 2 * m):
        return True
    if timer_driven(ctx, ack):
        return False
    return rare
