"""The application's writes where the trace shows them: a writer that writes W bytes each time
leaves its data at multiples of W, and one that writes on a clock (every P) sends W per tick on
average. Where a silence began short of a write's end, or a tick's write came inside it, and those
bytes went only when the next write came (no ACK released them), the sender held them: Nagle's
rule, its peer's delayed ACK slower than the writer (`causes/nagle.py`).

The size is learned from readings that must agree: the pauses after which the peer had acknowledged
everything and the next data went on its own (nothing can be held then, so the writes so far were
complete), and the end of the data where the sender closed (unless it lies off the pauses' lattice:
the last write was a file's remainder), are multiples of W (their gcd is W or a multiple of it); the divisor is chosen by the mean bytes per write event (a send after a pause that
no peer packet just before it explains), or by the writer's clock where its events keep one. A
writer whose writes vary in size has no such lattice (the gcd falls to a few bytes): nothing is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd
from typing import Any

# A send at least this long after the direction's previous one and after the peer's last packet
# (past the tap's reaction lag) started a write event: a write, not the ACK clock.
EVENT_GAP_NS = 1_000_000
# At least this many write-complete offsets (pauses and the close), and write events.
MIN_COMPLETE = 2
MIN_EVENTS = 4
# The lattice's step may differ this much from the mean bytes per write event (events missed
# where a write met an ACK-clocked send, the last write cut short): enough to choose among the
# step's divisors, which lie a third or more apart.
MEAN_TOLERANCE = 0.25
# A step below this is no write size (writes of varying sizes share small divisors).
MIN_WRITE = 512
# BSD's sosend copies a write into the send buffer one mbuf cluster at a time and calls tcp_output
# after each (Mogul & Minshall 3.1): what the buffer holds ends at a write's end or a cluster's.
MCLBYTES = 2048
# A clock: the shortest gap between write events that recurs at least PACE_MIN times, every gap a
# whole number of it (within PACE_JITTER of it, or PACE_JITTER_NS) on PACE_SHARE of them, and the
# bytes per tick over the whole transfer within PACE_RATE_TOLERANCE of W.
PACE_MIN = 4
PACE_SHARE = 0.9
PACE_JITTER = 0.02
PACE_JITTER_NS = 200_000
PACE_RATE_TOLERANCE = 0.05
# A host's own reaction to an ACK (its copy and output costs on a slow CPU, the segment's
# serialization before the tap) stays below this; a longer "reaction" is an application's pace.
REACTION_MAX_NS = 2_000_000
# How far back a silence's last write event is looked for (rows).
LOOKBACK_ROWS = 256


@dataclass(frozen=True)
class Writer:
    size: int  # bytes per write
    period_ns: int | None = None  # the clock it writes on, where its events keep one
    # Where the writes' ends lie, modulo `size`, in the offsets from the first data byte seen (0
    # with the handshake seen: the first byte begins a write).
    phase: int = 0

    def jitter_ns(self) -> int:
        return max(PACE_JITTER_NS, int(PACE_JITTER * (self.period_ns or 0)))


def event_lag_ns(lag_ns: int, data_lag_ns: int | None) -> int:
    """How long after a peer's packet the sender's data may still be its reaction to it at the tap:
    the tap's reaction lag, or the sender's own fastest reactions to ACKs where they are slower yet
    a host's (a Sun IPX's 4 KB copies 1.2 ms after each ACK at the receiver's tap, whose handshake
    read 0.36 ms: each send read as a write, the writes' lattice 4096 bytes every 200 ms)."""
    if data_lag_ns is not None and data_lag_ns <= REACTION_MAX_NS:
        return max(lag_ns, data_lag_ns)
    return lag_ns


def writer(rows: dict[str, list], d: int, lag_ns: int, start_seen: bool = True) -> Writer | None:
    """Direction `d`'s constant write size (and clock), or None where the trace does not show one.
    `rows` are the connection's rows in time order (the stall reader's lists); offsets are from
    the first data byte seen (sequence 1), a write's start where the handshake was seen
    (`start_seen`); without it the first byte may be inside a write, and the lattice is read from
    the differences between the writes' ends (one more of them needed)."""
    ts, dirs, plen = rows["ts_ns"], rows["dir"], rows["payload_len"]
    seq, end, resent, ack = rows["seq_rel"], rows["seq_end"], rows["retransmission"], rows["ack_rel"]
    complete: list[int] = []
    event_ts: list[int] = []
    total = 0
    last_send: int | None = None  # row of the direction's previous new data
    last_peer_ts: int | None = None
    acked = edge = 0
    fin = False
    released: list[int] = []  # ends of short segments that emptied the buffer on an ACK of all
    largest = 0
    for i in range(len(ts)):
        if dirs[i] != d:
            if rows["flag_ack"][i] and ack[i] is not None:
                acked = max(acked, ack[i])
                if rows["win_scaled"][i] is not None:
                    edge = ack[i] + rows["win_scaled"][i]
            last_peer_ts = ts[i]
            continue
        fin = fin or bool(rows["flag_fin"][i])
        if not plen[i] or resent[i]:
            continue
        if (last_send is not None and i and dirs[i - 1] != d and acked >= end[last_send] and rows["flag_psh"][i]
                and plen[i] < largest):
            released.append(end[i] - 1)
        largest = max(largest, plen[i])
        if last_send is None:
            event_ts.append(ts[i])
        elif (ts[i] - ts[last_send] >= EVENT_GAP_NS
              and (last_peer_ts is None or ts[i] - last_peer_ts > lag_ns + EVENT_GAP_NS)):
            event_ts.append(ts[i])
            # Everything acknowledged and the window open, and the next data went on its own (not
            # on an ACK, as a sender waiting on its congestion window's does): the writes so far
            # were complete.
            if acked >= end[last_send] and edge - end[last_send] >= MIN_WRITE and seq[i] == end[last_send]:
                complete.append(end[last_send] - 1)
        total = max(total, seq[i] + plen[i] - 1)
        last_send = i
    closed = total if fin and total else None  # the writer closed after its last write
    if len(complete) + (closed is not None) < MIN_COMPLETE + (not start_seen) or len(event_ts) < MIN_EVENTS:
        return buffer_end_writer(released, start_seen)
    step = _step(complete, 0 if start_seen else complete[0])
    if closed is not None:
        # The close ends a write, but the last of a file sent in W-byte writes is its remainder:
        # off the pauses' lattice it is that short write (262144 bytes in writes of 2310), not a
        # finer lattice.
        with_close = gcd(step, closed - (0 if start_seen or not complete else complete[0]))
        if with_close >= MIN_WRITE or len(complete) < MIN_COMPLETE + (not start_seen):
            step = with_close
    if step < MIN_WRITE:
        return buffer_end_writer(released, start_seen)
    phase = 0 if start_seen else complete[0]
    period = _period(event_ts)
    if period is not None:
        # A clock: W is the bytes per tick (a tick whose write was held sends two writes on the next).
        per_tick = total * period / (event_ts[-1] - event_ts[0] + period)
        w = _divisor_near(step, per_tick, PACE_RATE_TOLERANCE)
        if w is not None:
            return Writer(w, period, phase % w)
    w = _divisor_near(step, total / len(event_ts), MEAN_TOLERANCE)
    return Writer(w, None, phase % w) if w is not None else buffer_end_writer(released, start_seen)


# Short segments that emptied the buffer on an ACK needed before their ends give the writes.
RELEASED_MIN = 3


def buffer_end_writer(ends: list[int], start_seen: bool) -> Writer | None:
    """Where no pause showed the writes complete (a writer of less than a segment, Nagle holding each
    write behind the last until an ACK), the offsets where short segments emptied the send buffer
    (PSH, right after an ACK of everything; or, for the fit, the tails Nagle held) each lie where
    the writes so far ended (or, for a writer blocked on a full buffer, where sosend stopped copying
    a 2 KB cluster): their gcd, no multiple of the cluster, is the write (4.4BSD writing 1244 bytes
    every 109 ms: held tails of 1244 and 1028 bytes ending at 2488, 3732, 6220, ...). Without the
    handshake the first byte seen may be inside a write: the step is the gcd of the differences
    between the ends (one more of them needed), its phase the first end's, as for the pauses."""
    if len(ends) < RELEASED_MIN + (not start_seen):
        return None
    base = 0 if start_seen else ends[0]
    step = _step(ends, base)
    if step < MIN_WRITE or step % MCLBYTES == 0:
        return None
    return Writer(step, None, base % step)


def _step(ends: list[int], base: int) -> int:
    """The gcd of the writes' end offsets counted from `base`: the lattice's step."""
    step = 0
    for x in ends:
        step = gcd(step, x - base)
    return step


def _divisor_near(step: int, target: float, tolerance: float) -> int | None:
    """The divisor of `step` closest to `target`, if within `tolerance` of it (and MIN_WRITE or more)."""
    k = max(1, round(step / target))
    if step % k:
        return None
    w = step // k
    if w < MIN_WRITE or abs(w - target) > tolerance * target:
        return None
    return w


def _period(event_ts: list[int]) -> int | None:
    """The writer's clock: the shortest gap between write events that recurs PACE_MIN times, where
    PACE_SHARE of all gaps are whole multiples of it."""
    gaps = sorted(b - a for a, b in zip(event_ts, event_ts[1:]))
    for i, g in enumerate(gaps):
        tol = max(PACE_JITTER_NS, PACE_JITTER * g)
        if i + PACE_MIN > len(gaps) or gaps[i + PACE_MIN - 1] - g > tol:
            continue
        period = gaps[i + PACE_MIN // 2]
        whole = sum(1 for x in gaps if abs(x - round(x / period) * period) <= tol * max(1, round(x / period)))
        return period if whole >= PACE_SHARE * len(gaps) else None
    return None


def tail_held(ctx: Any, w: Writer | None) -> int:
    """Bytes of a write the sender had not sent when its silence began, by the lattice of writes
    of `w.size` bytes: the silence began short of a write's end by less than a segment, with window
    room for the rest and data unacknowledged through it, and the closing segment went on from
    there past that end (the tail left with the next write's data). 0 where that is not so."""
    if w is None or not ctx.ended_by_new_data:
        return 0
    short = (w.phase - (ctx.first_end - 1)) % w.size
    if not 0 < short < ctx.segment_size:
        return 0
    if ctx.usable_at_start is not None and ctx.usable_at_start < short:
        return 0  # the window held it
    if ctx.snd_max_before_end != ctx.first_end or ctx.held_len <= short:
        return 0
    if ctx.acked_before(ctx.end_ns) >= ctx.snd_max_before_end:
        return 0  # everything was acknowledged: Nagle's rule would have let the tail go then
    return short


def writes_due(rows: dict[str, list], i0: int, i1: int, d: int, w: Writer | None) -> int:
    """Writes a clocked writer was due to make inside the silence from row `i0` to row `i1` (its
    ticks after the last write event before it) whose bytes went only from `i1` on: the data sent
    from `i1` until the next tick carries them and the write of `i1`'s own tick. 0 where that is
    not so (no clock, no tick inside, no such catch-up: a writer that skipped a tick)."""
    if w is None or w.period_ns is None:
        return 0
    ts, dirs, plen = rows["ts_ns"], rows["dir"], rows["payload_len"]
    jitter = w.jitter_ns()
    # The last write event at or before the silence's start: its tick is the clock's phase here.
    tick = None
    for i in range(i0, max(-1, i0 - LOOKBACK_ROWS), -1):
        if dirs[i] == d and plen[i] and not rows["retransmission"][i]:
            prev = next((j for j in range(i - 1, max(-1, i - LOOKBACK_ROWS), -1) if dirs[j] == d and plen[j]), None)
            if prev is None or ts[i] - ts[prev] >= EVENT_GAP_NS:
                tick = ts[i]
                break
    if tick is None:
        return 0
    due = round((ts[i1] - tick) / w.period_ns) - 1
    if due < 1 or abs(ts[i1] - tick - (due + 1) * w.period_ns) > jitter * (due + 1):
        return 0  # the silence did not end on the writer's clock
    sent = 0
    for i in range(i1, len(ts)):
        if ts[i] >= ts[i1] + w.period_ns - jitter:
            break
        if dirs[i] == d and not rows["retransmission"][i]:
            sent += plen[i]
    return due if sent >= (due + 1) * w.size else 0
