"""Stalls that end in a retransmission timeout (docs/tcp-rules.md#loss-recovery: one fast
retransmit repairs one loss per window; several losses, or a lost repair, leave the sender
waiting for its timer).

Which loss: the segments resent in the stall. Several -> burst (Kung & Morris: an ATM switch drops
cells of several packets, so fast retransmit cannot recover); one -> single. A path cause found for
the whole connection (path.py: jumbo receive slots, PMTU black hole, an unusable MSS) names the
stall when the lost segments are the ones that path cannot carry. The data was delivered after all
when the peer reports the resend as a duplicate (DSACK) or ACKs it sooner than a round trip after
it went out: a spurious timeout, or lost ACKs.
"""

from __future__ import annotations

from stallscope.analyzers.causes.common import before, mss, peer_delay, release, tolerance
from stallscope.analyzers.findings import Alternative, Verdict
from stallscope.analyzers.peer_acks import MAX_ACK_DELAY_NS
from stallscope.analyzers.sender_state import TIMEOUT_FLOOR_NS
from stallscope.analyzers.stalls import StallContext
from stallscope.vocabulary import UNDETERMINED, Cause

# IP datagrams above this were large frames: what jumbo slots and black holes refuse.
STANDARD_IP_MTU = 1500
# ATM's IP MTUs (RFC 1626's default 9180; FORE's 9244 in Moldeklev): above Ethernet's 9000-byte jumbo
# frames. AAL5 PDUs this large lose cells, not whole frames.
ATM_MTU_LOW, ATM_MTU_HIGH = 9001, 9300


def rule(ctx: StallContext) -> Verdict | None:
    timeouts = [r for r in ctx.repairs() if r.kind == "timeout"]
    if not timeouts:
        # No resend of unacknowledged data after a timeout.
        return _acked_at_tap_resent(ctx) or _lost_window(ctx) or _sent_unseen(ctx)
    first = timeouts[0]
    lost = sorted({r.seq for r in ctx.resends})
    # Before a receiver's tap, data sent past the highest seen and lost never shows: the sender's
    # ids skipped before its first resend count those packets (an ATM switch that dropped the cells
    # of two frames, one behind a frame that arrived).
    episode = max(len(lost) + ctx.resend_ids_unseen, ctx.recovery_segments)
    evidence = {
        "timeouts": len(timeouts),
        "first_timeout_frame": first.frame,
        "silence_before_timeout_ns": first.ts_ns - ctx.start_ns,
        "segments_resent": len(lost),
        "segments_resent_in_repair": episode,
        **({"ids_unseen_before_resend": ctx.resend_ids_unseen} if ctx.resend_ids_unseen else {}),
        "resent_frames": [r.frame for r in ctx.resends[:16]],
        "resent_lengths": sorted({r.length for r in ctx.resends}),
        "largest_resent_ip_len": max(r.ip_len for r in ctx.resends),
    }
    if first.ts_ns - ctx.start_ns > MAX_RTO_NS:
        # No retransmission timer waits that long (a capture whose clock jumped, or two captures
        # joined): the resend is not a timeout's that the trace can show.
        evidence["reason"] = (f"frame {first.frame} resent data after {(first.ts_ns - ctx.start_ns) / 1e9:.0f} s of "
                              "silence, longer than any retransmission timer waits (Linux's largest RTO is 120 s)")
        return Verdict(UNDETERMINED, None, 0.0, evidence)
    delivered = _delivered(ctx, first)
    if delivered is not None:
        cause, why = delivered
        evidence["delivered"] = why
        return Verdict(cause, None, 0.7, evidence,
                       (Alternative(Cause.SINGLE_LOSS_TIMEOUT.value, None, 0.3, "if the DSACK came from a reordering"),))
    acked = _ack_lost(ctx, first, len(timeouts), len(lost))
    if acked is not None:
        evidence["peer_ids_unseen"] = ctx.resend_peer_ids_unseen
        evidence["resend_acked_frame"] = acked.frame
        return Verdict(Cause.ACK_LOSS_TIMEOUT.value, None, 0.6, evidence,
                       (Alternative(Cause.SINGLE_LOSS_TIMEOUT.value if episode == 1 else Cause.BURST_LOSS_TIMEOUT.value,
                                    None, 0.3, "if the peer's missing packet was another and the data was lost"),))
    path = ctx.profile.get("path_cause")
    # Resends of datagrams the path finding says it drops: above Ethernet's MTU, or as large as the
    # segment a black hole swallowed (a 1280-byte hop drops 1500-byte datagrams).
    hole_ip_len = ctx.profile.get("_path_lost_ip_len")
    big = (evidence["largest_resent_ip_len"] > STANDARD_IP_MTU
           or bool(hole_ip_len) and evidence["largest_resent_ip_len"] >= hole_ip_len)
    if path is not None and big:
        evidence["path_finding"] = path
        alt = Cause.BURST_LOSS_TIMEOUT.value if episode > 1 else Cause.SINGLE_LOSS_TIMEOUT.value
        # Which hop drops them (a router further on, or the sender's own link when its interface
        # MTU is larger than the link carries) the trace cannot tell: the cause is the same.
        return Verdict(path, None, 0.8, evidence, (Alternative(alt, None, 0.2, "the loss pattern alone"),))
    if not ctx.ended_by_new_data and not any(a.ack > first.seq for a in ctx.acks if a.ts_ns > first.ts_ns):
        # The capture ends with the resent data still unacknowledged: whether the data, its ACKs
        # or the peer itself was lost, nothing here can tell.
        evidence["reason"] = (f"the sender's timer resent the same data {len(timeouts)} time(s) from frame {first.frame} "
                              "on, and the capture ends before anything acknowledged it: the data or its ACKs lost, or the peer gone")
        return Verdict(UNDETERMINED, None, 0.0, evidence,
                       (Alternative(Cause.SINGLE_LOSS_TIMEOUT.value if episode == 1 else Cause.BURST_LOSS_TIMEOUT.value,
                                    None, 0.3, "if the peer was still there and the data was lost"),))
    atm = ATM_MTU_LOW <= link_mtu(ctx.profile) <= ATM_MTU_HIGH
    if episode > 1:
        detail = "atm_cell_loss" if atm else None
        return Verdict(Cause.BURST_LOSS_TIMEOUT.value, detail, 0.8, evidence,
                       (Alternative(Cause.SINGLE_LOSS_TIMEOUT.value, None, 0.2, "if the other resends were go-back-N"),))
    alts = [Alternative(Cause.BURST_LOSS_TIMEOUT.value, "atm_cell_loss" if atm else None, 0.3,
                        "a capture at the sender cannot see losses repaired later")]
    if ctx.snd_max_before_end - ctx.una_at_start <= max((r.length for r in ctx.resends), default=0):
        # Only the resent data was out: the ACK after the resend covers nothing it did not carry,
        # so a lost ACK of the first copy reads the same where no IP id gap or timestamp tells (a
        # SunOS sender with one segment out in a simulated run: 16 of draw 4's 16 ACK losses).
        alts.append(Alternative(Cause.ACK_LOSS_TIMEOUT.value, None, 0.2,
                                "if the first copy arrived and its ACK was lost: only the resent data was outstanding"))
    return Verdict(Cause.SINGLE_LOSS_TIMEOUT.value, None, 0.7, evidence, tuple(alts))


# More of the peer's ids skipped than this is its counter at work elsewhere, not lost ACKs.
MAX_PEER_IDS_UNSEEN = 4


def _ack_lost(ctx: StallContext, first, timeouts: int, resent: int):
    """The peer's first ACK after the stall's single timeout resend (`timeouts` resends by the timer,
    `resent` distinct segments in all), where that ACK covers the whole
    resend and the peer's IPv4 ids (counting one per packet) skipped in the silence: it sent a packet
    this tap never saw, and with the data delivered (nothing of it left to repair) that packet was
    the ACK the timer waited for (5 % of ACKs lost on the way back from a SunOS receiver: one
    segment out, each lost ACK a 1-2 s timeout). A receiver that got nothing sends nothing, so a
    lost segment leaves no gap in its ids. Not at the peer's own tap, which sees each of its packets
    leave: a gap there is its counter numbering another flow's (an nDPI client's id skipped between
    its ACKs of one connection)."""
    n = ctx.resend_peer_ids_unseen
    if not 0 < n <= MAX_PEER_IDS_UNSEEN or ctx.timing.vantage == "receiver" or timeouts != 1 or resent != 1:
        return None
    end = first.seq + first.length
    after = next((a for a in ctx.acks if a.ts_ns > first.ts_ns), None)
    if after is None or after.ack < min(end, ctx.snd_max_before_end):
        return None
    return after


def link_mtu(profile: dict) -> int:
    """The interface MTU the hosts announced (largest SYN MSS + 40), else the largest datagram:
    BSD rounds its MSS down to mbuf clusters (9140 -> 8192 on ATM), so datagrams understate it."""
    mss = [v for v in (profile.get("mss_advertised"), profile.get("mss_offered_by_peer")) if v]
    return max(mss) + 40 if mss else int(profile.get("max_ip_len") or 0)


def _delivered(ctx: StallContext, first) -> tuple[str, str] | None:
    after = [a for a in ctx.acks if a.ts_ns > first.ts_ns]
    rtt = ctx.timing.path_rtt_ns
    if any(a.dsack for a in after):
        # The peer had it: its ACKs went missing, or the timer fired before they could come.
        early = [a for a in ctx.acks if a.ts_ns <= first.ts_ns and a.ack > first.seq]
        if early:
            return Cause.ACK_LOSS_TIMEOUT.value, "the peer acknowledged the segment before it was resent"
        heard = next((a for a in ctx.acks if a.ts_ns > ctx.start_ns), after[0])
        if heard.ts_ns - ctx.start_ns > ack_due_ns(ctx) + (rtt or 0):
            # The receiver had the data and owed an ACK for it; the sender heard nothing for longer.
            return (Cause.ACK_LOSS_TIMEOUT.value, "the peer reported the resend as a duplicate (DSACK) after a "
                    "silence longer than a receiver may hold an ACK: its ACKs were sent and lost")
        return Cause.SPURIOUS_TIMEOUT.value, "the peer reported the resend as a duplicate (DSACK)"
    # Only the handshake's RTT is free of queueing: one read from bulk data can be many times the
    # path's (burst_loss without its SYNs: 19 ms for 2.2 ms), making a prompt ACK look too soon.
    if rtt and ctx.timing.source == "handshake":
        for a in after:
            if a.ack > first.seq and a.ts_ns - first.ts_ns + ctx.timing.lag_ns < rtt // 2:
                return Cause.SPURIOUS_TIMEOUT.value, "an ACK covering it came back sooner than a round trip after the resend"
    beyond = _acked_beyond_resends(ctx, first)
    if beyond is None:
        return None
    ack, covered = beyond
    # Everything was delivered. The receiver must acknowledge data within its delayed-ACK limit
    # (RFC 1122 4.2.3.2: 0.5 s, or sooner as this receiver showed: ack_due_ns) of receiving it: a
    # timeout later than that plus a round trip after the last data means those ACKs were sent and
    # lost; an earlier one fired before they were due.
    silence = first.ts_ns - ctx.start_ns
    why = (f"the first ACK after the resend (frame {ack.frame}) covered {covered} bytes sent before the timeout "
           "and never resent, and no duplicate ACK came during the silence: all of it had arrived")
    if silence > ack_due_ns(ctx, pairs_share=EVERY_SECOND_CLEAR) + (rtt or 0):
        return Cause.ACK_LOSS_TIMEOUT.value, why + "; its ACKs were due long before the timeout: they were lost"
    return Cause.SPURIOUS_TIMEOUT.value, why + "; the timer fired before the receiver's ACK was due"


# A receiver's ACK delays learned from this many held ACKs bound its timer well enough to say an
# ACK was overdue; twice the longest seen leaves room for a timer that fired late.
LEARNED_TIMER_MIN_ACKS = 8
LEARNED_TIMER_MARGIN = 2
# A receiver whose ACKs covered two segments at least this often ACKs every second segment; its
# ACK for a flight of two or more was due within this many typical round trips.
EVERY_SECOND_SHARE = 0.5
# Without a DSACK the ACK-due bound alone names the lost ACKs: there a receiver must have covered
# two segments with most of its ACKs (one at half may hold some for its timer: Linux 2.0 below 8 KB).
EVERY_SECOND_CLEAR = 0.75
PROMPT_ACK_RTTS = 4


def ack_due_ns(ctx: StallContext, pairs_share: float = EVERY_SECOND_SHARE) -> int:
    """How long after the data the receiver's ACK was due at the latest: RFC 1122 4.2.3.2's 0.5 s,
    or sooner when the trace showed how this receiver ACKs: one that ACKs every second full segment
    at once (RFC 5681 4.2) owed an ACK as soon as two of the flight's segments arrived, within a
    few of the connection's typical round trips (queueing included); one whose held ACKs showed
    its timer (a Linux peer holds an ACK 40 ms) owed it within that timer."""
    peer = ctx.profile.get("peer_delayed_ack") or {}
    rtt = ctx.timing.typical_rtt_ns or ctx.timing.path_rtt_ns
    pairs = (peer.get("every_second_segment") or 0) >= pairs_share
    if rtt and pairs and ctx.in_flight_at_start >= 2 * max(ctx.segment_size, 1):
        return min(MAX_ACK_DELAY_NS, PROMPT_ACK_RTTS * rtt)
    longest = peer.get("delay_max_ns")
    if longest and (peer.get("delayed_acks") or 0) >= LEARNED_TIMER_MIN_ACKS:
        return min(MAX_ACK_DELAY_NS, LEARNED_TIMER_MARGIN * longest)
    return MAX_ACK_DELAY_NS


# The longest a first retransmission can wait on its timer: RFC 6298 2.5 lets the RTO be capped at
# no less than 60 s; Linux caps it at 120 s (TCP_RTO_MAX). A resend after a longer silence is not
# the timer's answer to a lost ACK.
MAX_RTO_NS = 120_000_000_000
# Keep-alives and zero-window probes resend at most one byte of acknowledged data (RFC 1122
# 4.2.3.6, 4.2.2.17): probes, not retransmissions.
PROBE_MAX_BYTES = 1


def stale_resends(ctx: StallContext) -> list:
    """Resends of data the peer had already acknowledged where the tap saw it, after a silence
    the sender's retransmission timer could have ended (a tail-loss probe comes sooner); keep-alives
    and window probes left out."""
    out = []
    for r in ctx.resends:
        acked = ctx.acked_seen_before(r.ts_ns)
        if (acked is not None and r.seq + r.length <= acked and r.length > PROBE_MAX_BYTES
                and r.ts_ns - ctx.start_ns >= TIMEOUT_FLOOR_NS):
            out.append(r)
    return out


# How far past one (typical) round trip after the ACK at the tap a resend still counts as having
# crossed it: a Windows client's 200 ms delayed ACK racing a server's 290 ms timer on an 87 ms path
# was seen 88 ms before the resend.
ACK_CROSS_MARGIN = 0.1


def _acked_at_tap_resent(ctx: StallContext) -> Verdict | None:
    """Seen from the receiver, or from a tap between the hosts: the sender resent data the tap had
    seen acknowledged, after a silence, and nothing it had not. Those ACKs went by the tap and never
    reached the sender: a sender's timer resends only what it still holds unacknowledged. When the
    resend left the sender before the ACK could have reached it (less than a round trip after the
    ACK at a tap by the receiver), the timer fired early instead."""
    if ctx.timing.vantage not in ("receiver", "middle") or any(not _reported_duplicate(ctx, r) for r in ctx.repairs()):
        return None
    stale = stale_resends(ctx)
    if not stale:
        return None
    first = stale[0]
    silence = first.ts_ns - ctx.start_ns
    if silence > MAX_RTO_NS:
        return None
    covered_to = first.seq + first.length
    ack = next((a for a in ctx.acks if a.ts_ns < first.ts_ns and a.ack >= covered_to), None)
    acked_ns = ack.ts_ns if ack is not None else ctx.start_ns  # acknowledged before the stall began
    rtt = ctx.timing.path_rtt_ns or 0
    evidence = {
        "vantage": ctx.timing.vantage,
        "first_resend_frame": first.frame,
        "silence_before_resend_ns": silence,
        "resent_frames": [r.frame for r in stale[:16]],
        "acked_before_resend_ns": first.ts_ns - acked_ns,
        "acking_frame": ack.frame if ack is not None else None,
    }
    # (A resend within ACK_CROSS_MARGIN of a round trip past the boundary raced the ACK: the path's
    # jitter decides which came first, and a timer cannot wait for an ACK still on its way.)
    if first.ts_ns - acked_ns <= (1 + ACK_CROSS_MARGIN) * max(rtt, ctx.timing.typical_rtt_ns or 0):
        return Verdict(Cause.SPURIOUS_TIMEOUT.value, None, 0.5, evidence,
                       (Alternative(Cause.ACK_LOSS_TIMEOUT.value, None, 0.4, "if that ACK was lost after the tap"),))
    evidence["why"] = ("the sender resent data this tap had already seen acknowledged, more than a round trip "
                       "after the ACK: the ACKs were lost between the tap and the sender")
    return Verdict(Cause.ACK_LOSS_TIMEOUT.value, None, 0.7, evidence,
                   (Alternative(Cause.SPURIOUS_TIMEOUT.value, None, 0.2, "if the sender's timer misfired"),))


def _reported_duplicate(ctx: StallContext, resend) -> bool:
    """The peer's next ACK after `resend` reported it a duplicate (DSACK): it repaired nothing (a
    tail-loss probe of a segment whose delayed ACK the peer still held, ack_loss without timestamps)."""
    after = next((a for a in ctx.acks if (a.ts_ns, a.frame) > (resend.ts_ns, resend.frame)), None)
    return after is not None and after.dsack


def _acked_beyond_resends(ctx: StallContext, first) -> tuple[object, int] | None:
    """The first ACK after the timeout's first resend, when it acknowledges data sent before the
    timeout that no resend before it carried, and no duplicate ACK (nor SACK) came between the
    last data and that resend. A receiver ACKs every segment that arrives out of order at once
    (RFC 5681 4.2, RFC 1122 4.2.2.21): with the resent segment lost, the later ones would have
    drawn duplicate ACKs; with none and the later data acknowledged, the resent segment had
    arrived too, so nothing was lost. Returns (that ACK, the bytes it covered beyond the resends)."""
    if ctx.peer_dups_since_sent or not ctx.profile.get("_peer_dupacks_visible", True):
        return None
    if any(a.ack < ctx.una_at_start for a in ctx.acks if (a.ts_ns, a.frame) < (first.ts_ns, first.frame)):
        # The peer acknowledged less than the tap took for acknowledged: the capture began after
        # data that was still outstanding (a hole below the first byte seen, which its ACK points
        # at), so what arrived cannot be told from what the tap saw sent.
        return None
    wait = ctx.timing.typical_rtt_ns or ctx.timing.path_rtt_ns
    if ctx.timing.vantage == "sender" and wait and any(
            a.ack <= first.seq and a.ts_ns - ctx.start_ns >= wait
            for a in ctx.acks if (a.ts_ns, a.frame) < (first.ts_ns, first.frame)):
        # An ACK sent after all the data before the silence had had time to arrive still asked for
        # the first byte resent: the receiver lacked it, so that segment was lost, whatever came
        # after (a SunOS receiver's window update 1.4 ms after the flight on a 0.06 ms path, the
        # same ACK with a larger window, so no duplicate ACK by RFC 5681's letter).
        return None
    # (At the receiver the ACK a resend draws can carry the same timestamp: capture order decides.)
    ack = next((a for a in ctx.acks if (a.ts_ns, a.frame) > (first.ts_ns, first.frame) and a.advances), None)
    if ack is None:
        return None
    sent_before = ctx.una_at_start + ctx.in_flight_at_start  # snd_max when the silence began
    # The bytes it acknowledged from the timer's first resend on (the timer resends from snd_una:
    # what lies below was acknowledged before) that were sent before the silence and that no resend
    # before it carried (a tail-loss probe resends the last segment, the timer the first: the rest
    # was acknowledged from the first sending).
    end = min(ack.ack, sent_before)
    covered, at = 0, max(ctx.acked_before(ack.ts_ns), first.seq)
    for lo, hi in sorted((r.seq, r.seq + r.length) for r in ctx.resends if (r.ts_ns, r.frame) < (ack.ts_ns, ack.frame)):
        covered += max(0, min(lo, end) - at)
        at = max(at, hi)
    covered += max(0, end - at)
    return (ack, covered) if covered > 0 else None


# More ids skipped than this is a counter that jumped (another flow, a restart), not lost packets.
MAX_IDS_UNSEEN = 256
MAX_FIRST_RTO_NS = 3_000_000_000
RTO_RTTS = 4


def _sent_unseen(ctx: StallContext) -> Verdict | None:
    """The sender's IPv4 ids, counting one per packet, skipped before the segment that ended the
    silence: it had sent packets this tap never saw, dropped below the tap (a shaping queue on the
    sender's own host, with the tap after it) or on the path before a receiver-side tap, and the
    silence was its wait to send their data again (a loss-probe or retransmission timer). Not the
    application's idle time: the data it resent had been sent already."""
    n = ctx.ids_unseen
    if not ctx.ended_by_new_data or ctx.resends or not 0 < n <= MAX_IDS_UNSEEN:
        return None
    if ctx.snd_max_before_end - (ctx.una_at_start + ctx.in_flight_at_start) > 1:
        # The segment that ended the silence starts past the last data seen: the unseen packets
        # carried the data between, new data sent during the "silence" and lost before the tap
        # (repaired later), not data the sender waited to send again.
        return None
    # A sender the peer's window held had no segment to send, and one that sent as a peer's packet
    # reached it (a window update, a request) was reacting to it, where a retransmission timer fires
    # on its own: the ids went to the host's other packets.
    # (A window of unknown scale, no SYN option seen, is a raw value: only a zero one is known small.)
    if (ctx.usable_at_start is not None and ctx.usable_at_start < max(1, min(ctx.held_len, mss(ctx)))
            and (ctx.profile.get("window_known", True) or (ctx.window_at_start or 0) == 0)):
        return None
    if ctx.releasing_ack(tolerance(ctx)) is not None:
        return None
    if ctx.last_peer_data_ts is not None and ctx.acked_before(ctx.last_peer_data_ts + 1) >= ctx.snd_max_before_end:
        return None  # all acknowledged, then a request came: an answer (however slow), not a resend
    # n unseen packets are at most n sends before the seen one, each a timeout after the last: the
    # silence they explain is at most (2^n - 1) first timeouts (RFC 6298's initial 1 s, RFC 1122's
    # 3 s; a long path's RTO can be 4 round trips). A longer one was mostly the application's.
    rto = max(MAX_FIRST_RTO_NS, RTO_RTTS * (ctx.timing.typical_rtt_ns or ctx.timing.path_rtt_ns or 0))
    if ctx.duration_ns > ((1 << min(n, 8)) - 1) * rto:
        return None
    evidence = {
        "ids_unseen": n,
        "unseen_before_frame": ctx.held_frame,
        "why": f"the sender's IPv4 ids skipped {n} before frame {ctx.held_frame}: it had sent {n} packet(s) this "
               "tap never saw, and the silence was its wait to send them again",
    }
    path = ctx.profile.get("path_cause")
    if path is not None:
        # A path that cannot carry the large segments (a black hole seen from the receiver: the
        # first data came seconds after the handshake) names what the unseen packets met.
        evidence["path_finding"] = path
        return Verdict(path, None, 0.7, evidence,
                       (Alternative(Cause.BURST_LOSS_TIMEOUT.value, None, 0.2, "the loss pattern alone"),))
    cause = Cause.BURST_LOSS_TIMEOUT.value if n > 1 else Cause.SINGLE_LOSS_TIMEOUT.value
    return Verdict(cause, None, 0.6, evidence,
                   (Alternative(UNDETERMINED, None, 0.3, "if the capture itself dropped them"),))


def _lost_window(ctx: StallContext) -> Verdict | None:
    """The peer's window had no room, but what filled it had been lost: a retransmission timeout
    after the stall resent the data outstanding in it before the peer acknowledged it. The window
    was full of data the receiver never got (its buffer held none of it; only the hole at the left
    edge kept the ACKs from advancing), so the stall is the loss episode's, not a slow receiver's."""
    lost, timeout_frame = ctx.lost_after
    if not lost or ctx.resends or not ctx.ended_by_new_data:
        return None
    rel = release(ctx)
    if rel is None:
        return None
    ack_before, win_before = before(ctx, rel)
    usable = None if win_before is None else ack_before + win_before - ctx.snd_max_before_end
    if usable is None or usable > 0:
        return None
    evidence = {
        "releasing_ack_frame": rel.frame,
        "releasing_ack_delay_ns": peer_delay(ctx, rel),
        "window_before_release": win_before,
        "window_after_release": rel.window,
        "usable_window_before_release": usable,
        "outstanding_bytes": ctx.snd_max_before_end - ack_before,
        "lost_from_window": lost,
        "later_timeout_frame": timeout_frame,
    }
    atm = ATM_MTU_LOW <= link_mtu(ctx.profile) <= ATM_MTU_HIGH
    cause = Cause.BURST_LOSS_TIMEOUT.value if lost > 1 else Cause.SINGLE_LOSS_TIMEOUT.value
    detail = "atm_cell_loss" if atm and lost > 1 else None
    return Verdict(cause, detail, 0.6, evidence,
                   (Alternative(Cause.RECEIVER_WINDOW_LIMITED.value, None, 0.3, "the peer's window had no room"),))
