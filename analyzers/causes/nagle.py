"""A segment shorter than the MSS held until an ACK came (Nagle's rule, or Minshall's in Linux),
while the receiver delayed that ACK: the Nagle / delayed-ACK stall (Mogul & Minshall; Moldeklev).

Evidence: the held segment and its length, the unacknowledged data it waited behind, the ACK that
released it and how long the receiver had delayed it against the timer learned for that receiver.
Details: `of_sfs` an odd number of full segments outstanding, the short final one held (Heidemann);
`timer_phase` a free-running 200 ms tick acked only part of the flight (Moldeklev 3.1.3);
`copy_rule` SunOS-style 4 KB copies left a sub-MSS piece in flight; `buffer_tearing` a short piece
of a write was in flight and the rest waited (Mogul 3.1).

With Nagle shown to be off, a tail held until *everything* was acknowledged is Linux 2.0's
`nodelay_tail_held` (Salamon). When even the whole send buffer could not reach the receiver's
window-update threshold (Moldeklev (1): S < 2 MSS and below half of R), the deadlock is the
window-update rule's, Nagle or not.
"""

from __future__ import annotations

from stallscope.analyzers.causes.common import before, held_in_buffer, mss, peer_delay, release, send_buffer_plateau, timer_driven
from stallscope.analyzers.findings import Alternative, Verdict
from stallscope.analyzers.inference import segment_size_shown
from stallscope.analyzers.peer_acks import BSD_TICK_NS, MAX_ACK_DELAY_NS
from stallscope.analyzers.stalls import MIN_THRESHOLD_NS, StallContext
from stallscope.analyzers.writes import MCLBYTES, tail_held
from stallscope.vocabulary import UNDETERMINED, Cause

SUNOS_COPY = 4096  # SunOS 4.1 sosend calls the protocol every 4 KB (docs/tcp-rules.md#socket-copy-loop)
# The receiver's window-update threshold of Moldeklev (1): SunOS sends an update when the window
# slides 35 % of the buffer (4.4BSD: 50 %; the trace does not tell the two apart, the paper's is used).
UPDATE_SHARE = 0.35
# A peer that sent no more data packets than this is not asking for responses: a one-way transfer.
BULK_PEER_PACKETS = 2
# Outstanding plus held at least this share of the flight plateau: the whole send buffer in use.
BUFFER_IN_USE = 0.9
# Segments of one length sent behind an unacknowledged short one this often: the sender does not
# hold such a write, so one that followed an ACK was the writer's timing (fewer: undetermined).
WRITER_PACED_MIN = 10


def rule(ctx: StallContext) -> Verdict | None:
    if ctx.resends or not ctx.ended_by_new_data:
        return None
    rel = release(ctx)
    m = mss(ctx)
    if rel is None:
        return _held_until_write(ctx, m)
    if not m or ctx.held_len >= m:
        return None
    ack_before, win_before = before(ctx, rel)
    outstanding = ctx.snd_max_before_end - ack_before
    if outstanding <= 0:
        return None
    delay = peer_delay(ctx, rel)
    timer = timer_driven(ctx, rel)
    learned = ctx.profile.get("peer_delayed_ack", {})
    evidence = {
        "held_segment_frame": ctx.held_frame,
        "held_segment_len": ctx.held_len,
        "mss": m,
        "outstanding_bytes": outstanding,
        "releasing_ack_frame": rel.frame,
        "releasing_ack_delay_ns": delay,
        "learned_ack_timer_ns": learned.get("timer_ns"),
        "learned_ack_timer": learned.get("timer"),
        "released_all": rel.ack >= ctx.snd_max_before_end,
    }
    conf = 0.9 if timer else 0.55
    free = (ctx.profile.get("_nagle_free_lengths") or {}).get(ctx.held_len, 0)
    if ctx.profile.get("nagle") == "off" and free >= WRITER_PACED_MIN:
        # Segments of this very length went out behind unacknowledged short ones again and again:
        # nothing holds them, so this one waited for its write (a meter streaming a frame every
        # 20 ms, whose writes now and then come just after the peer's delayed ACK).
        return Verdict(Cause.APPLICATION_IDLE.value, None, 0.7, {
            **evidence, "free_sends_of_this_length": free},
            (Alternative(Cause.NAGLE_DELAYED_ACK.value, None, 0.1, "if a Nagle variant held this one"),))
    if ctx.profile.get("nagle") == "off" and free:
        # This sender let segments of this very length go behind unacknowledged short ones: its
        # rule (Nagle off, or a variant) did not hold such a segment, so the ACK that came before it
        # did not release it either; the writer was late (an FTP server's "226" written when its
        # data connection closed, at the same delayed-ACK tick of the client).
        return Verdict(UNDETERMINED, None, 0.0, {
            **evidence, "reason": (f"a {ctx.held_len}-byte segment followed an ACK, but this sender sent segments of "
                                   "that length behind unacknowledged short ones (Nagle off or a variant that "
                                   "lets them go): nothing held it, the write came late")},
            (Alternative(Cause.NAGLE_DELAYED_ACK.value, None, 0.2, "if a Nagle variant held this one"),
             Alternative(Cause.APPLICATION_IDLE.value, None, 0.3, "the application wrote it then")))
    if ctx.profile.get("nagle") == "off":
        no_room = ctx.usable_at_start is not None and ctx.usable_at_start < ctx.held_len
        opened = _window_opened_earlier(ctx, rel) if no_room else None
        if rel.ack >= ctx.snd_max_before_end and opened is not None:
            # Salamon: the tail did not fit the window when written; a later ACK made room, yet it
            # went only once everything was acknowledged (Linux 2.0's tcp_ack,
            # docs/tcp-rules.md#linux-20-partial-segment).
            evidence["window_opened_frame"] = opened.frame
            return Verdict(Cause.NODELAY_TAIL_HELD.value, None, conf, evidence)
    if ctx.first_len < m and rel.ack < ctx.first_end:
        # The last segment before the silence was short and the releasing ACK left it unacknowledged:
        # Nagle's rule (everything acknowledged) and Minshall's (no short segment outstanding) both
        # still held the segment then, so that ACK did not release it from either. It went when its
        # write came (a Winsock writer blocked on its 8 KB send buffer, woken by the partial ACK).
        return Verdict(UNDETERMINED, None, 0.0, {
            **evidence, "short_segment_unacknowledged": ctx.start_frame,
            "reason": (f"the {ctx.held_len}-byte segment went on ACK frame {rel.frame}, which left the short segment "
                       f"of frame {ctx.start_frame} unacknowledged: neither Nagle's rule nor Minshall's lets a short "
                       "segment go then, so no Nagle hold ended there; the write came then")},
            (Alternative(Cause.SEND_BUFFER_LIMITED.value, None, 0.3, "the writer waited for room in its send buffer"),
             Alternative(Cause.APPLICATION_IDLE.value, None, 0.3, "the application wrote it then")))
    if delay is not None and delay > MAX_ACK_DELAY_NS:
        # Nagle held the segment, but what it waited for was no delayed ACK: no timer may hold one
        # that long. The peer's host paused, a queue held the flight, or the capture missed an ACK.
        return Verdict(UNDETERMINED, None, 0.0, {**evidence, "reason": (
            f"Nagle held the {ctx.held_len}-byte segment for the ACK of frame {rel.frame}, which the peer held "
            f"{delay / 1e6:.0f} ms, longer than any delayed-ACK timer may (RFC 1122: 0.5 s): its host paused, a "
            "queue held the data, or the capture missed an earlier ACK")},
            (Alternative(Cause.NAGLE_DELAYED_ACK.value, None, 0.3, "if a delayed ACK was among what held it"),))
    peer_max = ctx.profile.get("peer_receive_window_max") or 0
    total = outstanding + ctx.held_len
    plateau = send_buffer_plateau(ctx)
    if plateau and outstanding >= buffer_in_flight(ctx, plateau) and not held_in_buffer(ctx, rel, m):
        return None  # the whole buffer was in flight: nothing was held back (the window rules' case)
    # Moldeklev (1): the sender's whole buffer was in use and still below the receiver's
    # window-update threshold, so no ACK but the timer's could come.
    # A window of unknown scale (no SYN, or its options cut) is read raw: a floor of the real one,
    # so a buffer below the update threshold of the raw window is below that of the real one too.
    # ...for a bulk writer with more queued behind (the peer sends no requests): a message that is
    # complete once the tail goes waits for nothing else.
    # (Where no SYN showed the MSS, the segments may be writes below it: mss_beyond.)
    if (timer and one_way(ctx) and peer_max and plateau and total >= BUFFER_IN_USE * plateau
            and not update_reachable(ctx, rel, ack_before, total,
                                     m if segment_size_shown(ctx.profile) else mss_beyond(ctx, m, outstanding),
                                     peer_max)):
        evidence["buffer_in_use"] = total
        return Verdict(Cause.WINDOW_UPDATE_DEADLOCK.value, None, 0.7, evidence,
                       (Alternative(Cause.NAGLE_DELAYED_ACK.value, "copy_rule", 0.3, "Nagle held the rest of the buffer"),))
    off_here = ctx.profile.get("nagle") == "off" and ctx.timing.vantage == "sender"
    if not timer and rel.ack < ctx.snd_max_before_end and (off_here or ctx.in_recovery()):
        # The segment went on an ACK that left data unacknowledged, and no delayed ACK shows. A
        # sender shown at its own tap to have Nagle off (short segments behind unacknowledged short
        # ones, inference.nagle_evidence) held nothing, and a Nagle variant that still held this one
        # would wait for all its data (a Linux sender in jumbo-slot loss recovery, 2.7 MB out, its
        # 6468-byte segment 10 ms after the previous one among 103 ACKs). With duplicate ACKs
        # through the silence the receiver was answering every segment that reached it, so it held
        # no ACK back: loss recovery's pace (a Linux sender 2.8 MB deep in EPD's losses, its
        # 4984-byte segment 139 ms after the last among 230 ACKs).
        why = ("but this sender has Nagle off (short segments behind unacknowledged short ones, at its own tap) and "
               "that ACK was not visibly delayed: neither Nagle nor a delayed ACK held it") if off_here else (
               "during loss recovery (duplicate ACKs through the silence): the receiver held no ACK back, so no "
               "delayed ACK made this wait")
        return Verdict(UNDETERMINED, None, 0.0, {**evidence, "reason": (
            f"the {ctx.held_len}-byte segment followed ACK frame {rel.frame}, which left data unacknowledged, {why}")},
            (Alternative(Cause.NAGLE_DELAYED_ACK.value, None, 0.2, "if a Nagle variant held this one"),))
    if not timer and ctx.timing.vantage == "receiver" and delay is not None and delay < MIN_THRESHOLD_NS:
        # The tap is at the receiver, so the ACK's hold is measured, not estimated: it went at once.
        # Nagle's rule holds a segment for the ACK's round trip only; no delayed ACK made this stall
        # (a telnet server echoing 12-20 ms after ACKs that left its client's host at once).
        return Verdict(UNDETERMINED, None, 0.0, {**evidence, "reason": (
            f"the tap is the peer's, so that delay is measured: no delayed ACK held the {ctx.held_len}-byte "
            "segment, Nagle's rule holds one for the ACK's round trip only, and what held it longer is not in "
            "the trace")},
            (Alternative(Cause.NAGLE_DELAYED_ACK.value, None, 0.2, "if the sender's host was slow to send on the ACK"),
             Alternative(Cause.APPLICATION_IDLE.value, None, 0.3, "the application wrote it then")))
    detail = _detail(ctx, rel, outstanding, m, learned)
    alts = ()
    if not timer:
        alts = (Alternative("undetermined", None, 0.45, "the releasing ACK was not visibly delayed"),)
    return Verdict(Cause.NAGLE_DELAYED_ACK.value, detail, conf, evidence, alts)


def held_until_write(ctx: StallContext, m: int) -> tuple[int, int]:
    """(bytes of a write's tail, writes of a clocked writer) that Nagle held through the silence
    until the next write sent them (writes.py), or (0, 0): not where Nagle is shown off, and a whole
    write only when it is below a segment and data stayed unacknowledged through the silence."""
    w = ctx.writer
    if w is None or not m or ctx.profile.get("nagle") == "off":
        return 0, 0
    unacked = ctx.acked_before(ctx.end_ns) < ctx.snd_max_before_end
    due = ctx.writes_due if w.size < m and unacked else 0
    if (not due and w.period_ns is None and w.size < m and unacked and ctx.ended_by_new_data
            and ctx.snd_max_before_end == ctx.first_end and (ctx.first_end - 1 - w.phase) % w.size == 0
            and ctx.held_len > w.size):
        # No clock to say when the next write fell due, but the silence began at a write's end and
        # the segment that ended it carried more than a write below a segment: the first of them
        # waited in the buffer, short, behind unacknowledged data, until the next made a segment
        # (a 4.4BSD writer of 1244 bytes every 109 ms sends 1460 bytes 109 ms into each silence).
        due = 1
    return tail_held(ctx, w), due


def _held_until_write(ctx: StallContext, m: int) -> Verdict | None:
    """No ACK released the closing segment, but the sender's writes show what it held (writes.py):
    the silence began short of a write's end by less than a segment, or a clocked writer's write
    below a segment fell due inside it, and those bytes went only with the next write, with data
    outstanding unacknowledged through the silence. Nagle held them, and the next write made a full
    segment before the peer's delayed ACK came (a writer pausing less than that timer: Mogul &
    Minshall's held tail, released by the application instead of the ACK)."""
    short, due = held_until_write(ctx, m)
    if not short and not due:
        return None
    w = ctx.writer
    outstanding = ctx.snd_max_before_end - ctx.acked_before(ctx.end_ns)
    evidence = {
        "write_size": w.size,
        "write_period_ns": w.period_ns,
        "held_bytes": short or due * w.size,
        "held_tail_from_offset": ctx.first_end - 1 if short else None,
        "writes_due_in_silence": due,
        "held_segment_frame": ctx.held_frame,
        "held_segment_len": ctx.held_len,
        "mss": m,
        "outstanding_bytes": outstanding,
        "learned_ack_timer_ns": (ctx.profile.get("peer_delayed_ack") or {}).get("timer_ns"),
        "learned_ack_timer": (ctx.profile.get("peer_delayed_ack") or {}).get("timer"),
    }
    detail = "of_sfs" if outstanding % m == 0 and (outstanding // m) % 2 == 1 else "buffer_tearing"
    return Verdict(Cause.NAGLE_DELAYED_ACK.value, detail, 0.6 if short else 0.5, evidence,
                   (Alternative(Cause.APPLICATION_IDLE.value, None, 0.3 if short else 0.4,
                                "if the application wrote those bytes only when they went"),))


def update_reachable(ctx: StallContext, rel, ack_before: int, total: int, m: int, peer_max: int) -> bool:
    """Could the sender's whole buffer (`total`) make the receiver send a window update
    (docs/tcp-rules.md#window-update-thresholds)?
    BSD family (SunOS 35 % or 2 MSS; the paper's threshold is used for 4.4BSD's 50 % too). A
    receiver that held two full segments or more until its timer, and whose timer is not BSD's
    200 ms tick, ACKs neither every second segment (RFC 1122, FreeBSD, Linux 2.6's quick ACK) nor
    on BSD's rule: Linux's (tcp_cleanup_rbuf) updates only once the window it advertised has
    fallen to half the buffer."""
    tick = ctx.profile.get("_peer_tick") or {}
    if tick.get("period_ns") != BSD_TICK_NS and rel.ack - ack_before >= 2 * m:
        return 2 * total >= peer_max
    return total >= 2 * m or total >= UPDATE_SHARE * peer_max


# RFC 1191's MTU plateaus (7.1), with jumbo Ethernet's 9000 and RFC 1626's 9180 for ATM; each one's
# MSS, and that MSS rounded down to whole 2 KB clusters as 4.4BSD's tcp_mss does (9140 -> 8192): where
# no SYN gave the MSS, the one a sender most likely has above a bound is the least of these.
MTU_PLATEAUS = (68, 296, 508, 1006, 1492, 1500, 2002, 4352, 8166, 9000, 9180, 17914, 32000, 65535)
IP_TCP_HEADERS = 40
LIKELY_MSS = tuple(sorted({mtu - IP_TCP_HEADERS for mtu in MTU_PLATEAUS}
                          | {(mtu - IP_TCP_HEADERS) // MCLBYTES * MCLBYTES for mtu in MTU_PLATEAUS
                             if mtu - IP_TCP_HEADERS >= MCLBYTES}))


def mss_beyond(ctx: StallContext, m: int, held_out: int) -> int:
    """The MSS to test the receiver's window-update rule with where no SYN showed it: at least the
    largest segment `m`, and, where the receiver left `held_out` bytes unacknowledged until its timer
    below the share of its window that would have made it update, more than half of that (it
    updates at two segments); the least likely MSS (LIKELY_MSS) from there. (SunOS's 4 KB copies
    over ATM: segments of 4096, 12288 bytes held to the timer, so the MSS exceeds 6144; 2 x 8126
    puts 15372 bytes in use below the update where 2 x 4096 did not.)"""
    peer_max = ctx.profile.get("peer_receive_window_max") or 0
    low = m
    if peer_max and held_out < UPDATE_SHARE * peer_max:
        low = max(low, held_out // 2 + 1)
    return next((mss for mss in LIKELY_MSS if mss >= low), low)


def one_way(ctx: StallContext) -> bool:
    """A one-way bulk writer: the peer sent no requests (BULK_PEER_PACKETS data packets at most)."""
    return (ctx.profile.get("peer_data_packets") or 0) <= BULK_PEER_PACKETS


def buffer_in_flight(ctx: StallContext, plateau: int) -> float:
    """What outstanding data means the whole send buffer was in flight. A one-way bulk writer (the
    peer sends no requests) keeps its buffer full, and the buffer holds at least the largest flight
    ever seen: a flight below that left data unsent (Moldeklev's S = 16 KB, R = 40 KB: Nagle holds
    3084 bytes behind 12288 every cycle, though 13300 were out once). Otherwise a writer between
    messages need not fill it: most of the plateau counts."""
    if one_way(ctx):
        return max(plateau, ctx.profile.get("max_in_flight") or 0)
    return BUFFER_IN_USE * plateau


def _window_opened_earlier(ctx: StallContext, rel):
    """An ACK before the releasing one after which the window had room for the held segment."""
    for a in ctx.acks:
        if a is rel:
            return None
        if a.ack + a.window - ctx.snd_max_before_end >= ctx.held_len:
            return a
    return None


def _detail(ctx: StallContext, rel, outstanding: int, m: int, learned: dict) -> str:
    if learned.get("timer") == "tick" and rel.ack < ctx.snd_max_before_end:
        return "timer_phase"
    if outstanding % m == 0 and (outstanding // m) % 2 == 1:
        return "of_sfs"
    if m > SUNOS_COPY and outstanding % SUNOS_COPY == 0 and ctx.profile.get("stack", {}).get("guess") == "bsd":
        return "copy_rule"
    return "buffer_tearing"
