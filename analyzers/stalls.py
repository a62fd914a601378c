"""Stall detection: intervals in which a direction's sender sent no new data for longer than a
threshold tied to the round trip, and the facts about each that the cause rules read.

A sender waiting on a slow ACK clock (a standing queue, a slow link) is not stalled: a candidate
during which the peer's ACKs kept advancing, never silent as long as the threshold, is dropped
(`StallContext.ack_clocked`).

A stall runs from the last new data before the silence to the first new data after it (the same
definition as the simulator's ground truth, simulate/tcp/stalls.py), so time lost is measured at
the sender's pace. The threshold is max(10 ms, 2 x path RTT): below two round trips a gap is the
normal rhythm of ACK clocking. It is measured from the start of the burst the last new data went
out in (`bursts`): a host paces one decision's segments out at its output cost, and the silence
began when it issued them. A connection that ends while its sender still retransmits (a black
hole, an abort) has a final stall from its last new data to its last packet.

Candidates are found in one vectorised pass; only the few candidate intervals are then read row by
row to build their `StallContext`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from stallscope import _native
from stallscope.analyzers.inference import full_segment_size
from stallscope.analyzers.peer_acks import learn_tick
from stallscope.analyzers.sender_state import TIMEOUT_FLOOR_NS
from stallscope.analyzers.vantage import SER_JITTER_NS, SER_SLACK, Timing, serialization_per_byte
from stallscope.analyzers.writes import Writer, event_lag_ns, writer, writes_due

MIN_THRESHOLD_NS = 10_000_000
# Rows after a stall read for the rest of a timeout's repair.
RECOVERY_ROWS = 4096
# Rows before a stall over which its sender's full segment size is read (PMTU changes it).
RECENT_ROWS = 64
RTT_MULTIPLE = 2
# Packets of one direction closer than this, with nothing from the peer between them, went out as
# one burst: a host's output cost per segment (SunOS on a SPARCstation IPX: 0.7 ms for 9 KB), a
# fast link's serialization.
BURST_GAP_NS = 1_000_000


# A silence must last this many of a coarse capture clock's steps: each time is off by up to one.
CLOCK_MULTIPLE = 3


def threshold_ns(timing: Timing | None) -> int:
    if timing is None:
        return gap_threshold_ns(None)
    return gap_threshold_ns(timing.path_rtt_ns, timing.clock_ns)


def gap_threshold_ns(rtt_ns: int | None, clock_ns: int = 0) -> int:
    """The shortest silence that is a stall on a path of this round trip and capture clock step."""
    return max(MIN_THRESHOLD_NS, RTT_MULTIPLE * (rtt_ns or 0), CLOCK_MULTIPLE * clock_ns)


@dataclass(frozen=True)
class PeerAck:
    frame: int
    ts_ns: int
    ack: int
    window: int
    advances: bool
    dup: bool
    payload: int
    delay_ns: int | None  # time since the newest data it covers was seen at the tap
    dsack: bool
    ts_val: int | None = None  # its RFC 7323 timestamp value (None without the option)


@dataclass(frozen=True)
class Resend:
    frame: int
    ts_ns: int
    seq: int
    length: int
    kind: str
    ip_len: int


@dataclass
class StallContext:
    """Everything one stall's cause rules may read: the interval, what the sender had out, what the
    peer said during it, and the connection's learned profile."""

    stream: int
    dir: int
    start_ns: int
    end_ns: int
    start_frame: int
    end_frame: int
    ended_by_new_data: bool  # false: the connection ended (or the capture) while still stalled
    first_len: int  # payload of the new data that opened the interval
    first_psh: bool  # it ended a write (PSH)
    held_len: int  # payload of the new data that ended it (0 if none)
    held_frame: int | None
    held_psh: bool
    in_flight_at_start: int
    una_at_start: int
    usable_at_start: int | None
    window_at_start: int | None
    in_flight_before_end: int  # outstanding just before the closing segment was sent
    usable_before_end: int | None
    snd_max_before_end: int
    acks: list[PeerAck]
    resends: list[Resend]
    recovery_segments: int  # distinct segments resent in the timeout's repair (0 without a timeout)
    # When the stall ended on new data: the distinct segments of what was outstanding before the
    # closing segment that a later retransmission timeout resent before the peer acknowledged them
    # (the flight was lost, not held by the receiver), and that timeout's first frame.
    lost_after: tuple[int, int | None]
    # The same segments resent by any later retransmission, fast ones included: the flight the
    # sender waited on had been lost; its repair came after the stall.
    repaired_after: int
    # Duplicate ACKs (SACK blocks included) the peer sent since the data at snd_una was first sent,
    # up to the stall's first resend (None without a resend): a hole the receiver saw.
    peer_dups_since_sent: int | None
    peer_data_bytes: int  # data the peer sent during the interval (a request, say)
    last_peer_data_ts: int | None
    segment_size: int  # the full segment size in use just before the stall
    flight_seen: int  # the largest flight of this sender in the rows before the stall (congestion window grown)
    timing: Timing
    threshold_ns: int
    profile: dict[str, Any] = field(default_factory=dict)
    # IPv4 ids the sender skipped between its last packet before the closing segment and that
    # segment (0 when its ids do not count per packet): packets it sent that this tap never saw.
    ids_unseen: int = 0
    # The same before the stall's first resend: packets sent in the silence that never reached the
    # tap (data past the highest seen, lost before a receiver's tap, whose resends arrive as new data).
    resend_ids_unseen: int = 0
    # The peer's IPv4 ids skipped between its last packet before the first resend and its first
    # after it (0 unless they count per packet): packets the peer sent in the silence that this tap
    # never saw, at a sender's tap its ACKs lost on the way back.
    resend_peer_ids_unseen: int = 0
    # The closing segment's RFC 7323 timestamp echo (None without the option): the newest peer
    # timestamp the sender had received when it sent that segment.
    closing_ts_ecr: int | None = None
    # Where the new data that opened the interval ends (its last sequence number + 1).
    first_end: int = 0
    # Bytes of the peer's the closing segment acknowledged that the capture never showed: the peer
    # sent packets during the silence that the tap missed (one may have carried the releasing ACK).
    closing_acks_unseen: int = 0
    # The sender's writes where the trace shows their size (writes.writer; read only for a silence
    # that new data ended with data outstanding), and the writes its clock was due to make inside
    # the silence whose bytes went only at its end (writes.writes_due).
    writer: Writer | None = None
    writes_due: int = 0
    # How long after the peer's ACK of everything before it the interval's first segment left
    # (None where data was still unacknowledged then, or no such ACK is near): a pause long enough
    # to restart slow start (RFC 2861, BSD's idle check) resets the congestion window to a segment.
    idle_before_ns: int | None = None

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    def ack_clocked(self) -> bool:
        """ACKs kept advancing through the interval with no silence as long as the threshold: the
        sender was clocked by a slow ACK stream (a queue, cwnd), not stopped."""
        times = [self.start_ns] + [a.ts_ns for a in self.acks if a.advances] + [self.end_ns]
        if len(times) <= 3 or max(b - a for a, b in zip(times, times[1:])) >= self.threshold_ns:
            return False
        # ...and the peer's window let it send before the ACK that ended it: otherwise the window
        # held it (SWS, a slow reader whose window opened only then).
        before_last = self.acks[:-1] if self.ended_by_new_data else self.acks
        room = max((a.ack + a.window - self.snd_max_before_end for a in before_last), default=0)
        return room >= max(self.segment_size, 1)

    def opening_unacknowledged(self) -> bool:
        """No ACK covered the segment that opened the interval before the closing one was sent."""
        return self.acked_before(self.end_ns) < self.first_end

    def flight_lost_unanswered(self) -> bool:
        """What was out when the silence began, its opening segment among it, went unacknowledged
        until a timer resent it (`lost_after`): no ACK came through the silence."""
        return bool(self.lost_after[0]) and self.lost_after[1] is not None and self.opening_unacknowledged()

    def in_recovery(self) -> bool:
        """Duplicate ACKs or SACK blocks came during the interval: loss repair under way."""
        return sum(1 for a in self.acks if a.dup) >= 2

    def acked_before(self, ts_ns: int) -> int:
        """The peer's cumulative ACK as last seen before `ts_ns`."""
        return max([self.una_at_start] + [a.ack for a in self.acks if a.ts_ns < ts_ns])

    def acked_seen_before(self, ts_ns: int) -> int | None:
        """`acked_before` from ACKs the capture showed only (None before the first): until the peer's
        first packet, snd_una is the first byte the capture saw the sender send, no acknowledgement,
        and in a capture that starts mid-connection data below it may still be unacknowledged."""
        seen = [a.ack for a in self.acks if a.ts_ns < ts_ns]
        if self.window_at_start is not None:  # a peer packet came before the interval
            seen.append(self.una_at_start)
        return max(seen, default=None)

    def repairs(self) -> list[Resend]:
        """Resends of data not yet acknowledged when resent: the ones that repair a loss (a resend of
        acknowledged data is a probe or a spurious retransmission, not a repair). Acknowledged as
        the capture showed it: data below the first byte seen was not, before the peer's first ACK."""
        out = []
        for r in self.resends:
            acked = self.acked_seen_before(r.ts_ns)
            if acked is None or r.seq + r.length > acked:
                out.append(r)
        return out

    def releasing_ack(self, tolerance_ns: int) -> PeerAck | None:
        """The peer's last packet before the closing segment, if the sender reacted to it: the gap
        between them is the tap's reaction lag give or take `tolerance_ns`."""
        if not self.ended_by_new_data or not self.acks:
            return None
        a = self.acks[-1]
        gap = self.end_ns - a.ts_ns
        if gap > self.timing.lag_ns + tolerance_ns:
            return None
        if (a.payload > 0 or self.profile.get("_echoes_pure_acks", True)) and not_yet_echoed(self.closing_ts_ecr, a.ts_val):
            # The closing segment's timestamp echo is older than this ACK's timestamp: the sender
            # had not received the ACK when it sent, however well the tap's timing fits. (Not for
            # a pure ACK where the sender never echoes one: RFC 1323's rule takes TS.Recent from
            # data segments only, as an OpenFlow switch in tcpdump's captures does.)
            return None
        return a


def _segment_size(recent: int, profile: dict[str, Any]) -> int:
    """The full segment size in force near a stall (inference.full_segment_size with the largest
    recent segment: PMTU discovery may have lowered the MSS since the connection's largest)."""
    return full_segment_size(profile, recent)


NULL_NS = -(1 << 63)  # native/src/analysis NULL


def bursts(state: pl.DataFrame, after_bottleneck: pl.DataFrame | None = None) -> pl.DataFrame:
    """`state` with `_burst_ns`: for each packet, the time of the first packet of its burst, the run
    of data segments of its direction that follow each other within BURST_GAP_NS with no packet of
    the peer between them and no write ending (PSH) before the last. Nothing but the sender's own
    pacing (its output cost per segment, the link's serialization) separates them: one ACK or one
    write released them all, so the sender went silent when it issued the burst, not when its last
    segment reached the tap. (A segment after a PSH may be the next write's, issued later.)

    `after_bottleneck` (stream, dir, _lag, _ser: ns per IP byte; bottleneck_spacing) names the
    directions whose tap is beside their receiver: there a flight the sender issued at once reaches
    the tap spread by the bottleneck's serialization, each segment `_ser` x its length after the one
    before, and the peer's ACKs of its first segments come back among the rest. A segment continues
    the burst unless a peer packet since the burst began came a reaction lag (`_lag`) before it, and
    could have released it (native/src/analysis/bursts.rs); one the rule above joined to the segment
    before stays joined. (A 10 Mbit/s link spreads a 16 KB write over 13 ms, whose Nagle-held tail
    then went on a delayed ACK 6 ms after its last full segment reached the receiver: at the sender,
    a 20 ms stall.)"""
    cols = ("dir", "ts_ns", "payload_len", "flag_psh")
    st = state.with_columns(**{f"_p{i}": pl.col(c).shift(1).over("stream") for i, c in enumerate(cols)})
    starts = (pl.col("_p0").is_null() | (pl.col("dir") != pl.col("_p0"))
              | ((pl.col("ts_ns") - pl.col("_p1")) > BURST_GAP_NS) | (pl.col("payload_len") == 0)
              | (pl.col("_p2") == 0) | pl.col("_p3"))
    out = st.with_columns(_burst_ns=pl.when(starts).then(pl.col("ts_ns")).forward_fill().over("stream")).drop(
        [f"_p{i}" for i in range(len(cols))])
    if after_bottleneck is None or after_bottleneck.filter(pl.col("_ser").is_not_null()).height == 0:
        return out
    return _far_bursts(out, after_bottleneck.filter(pl.col("_ser").is_not_null()))


def _far_bursts(marked: pl.DataFrame, far: pl.DataFrame) -> pl.DataFrame:
    """`marked` with `_burst_ns` read again for the data of the `far` directions (bursts)."""
    by = ["stream", "dir"]
    rows = marked.with_row_index("_row")
    data = (rows.filter(pl.col("payload_len") > 0).join(far, on=by, how="inner")
            .select("_row", "stream", "dir", "ts_ns", "ip_len", "flag_psh", "_lag", "_ser",
                    _joined=pl.col("_burst_ns") != pl.col("ts_ns"))
            .sort(["stream", "dir", "ts_ns", "_row"]))
    ser = (pl.col("_ser") * pl.col("ip_len").cast(pl.Float64)).cast(pl.Int64)
    data = data.with_columns(_reach=pl.col("ts_ns") - pl.col("_lag"),
                             _forced=(pl.col("ts_ns") - pl.col("ts_ns").shift(1).over(by)
                                      > pl.max_horizontal(pl.lit(BURST_GAP_NS), SER_SLACK * ser + SER_JITTER_NS))
                             | pl.col("flag_psh").shift(1).over(by).fill_null(True))
    # The latest packet of the peer at or before `_reach`: the last that could have released it.
    peer = (rows.select("stream", pl.col("dir").cast(pl.Int16), pl.col("ts_ns").alias("_peer_ts"))
            .with_columns(dir=(1 - pl.col("dir")).cast(pl.UInt8)).join(far.select(by), on=by, how="semi")
            .with_columns(_at=pl.col("_peer_ts")).sort("_at"))
    data = (data.sort("_reach").join_asof(peer, left_on="_reach", right_on="_at", by=by, strategy="backward",
                                          check_sortedness=False)
            .sort(["stream", "dir", "ts_ns", "_row"]))
    group = (data["stream"].cast(pl.UInt64) * 2 + data["dir"].cast(pl.UInt64)).to_numpy()
    starts = _native.analysis_burst_starts(
        np.ascontiguousarray(group), np.ascontiguousarray(data["ts_ns"].to_numpy()),
        np.ascontiguousarray(data["_peer_ts"].fill_null(NULL_NS).to_numpy()),
        np.ascontiguousarray(data["_forced"].fill_null(True).cast(pl.UInt8).to_numpy()),
        np.ascontiguousarray(data["_joined"].cast(pl.UInt8).to_numpy()))
    # Only the far directions' data rows change: written in place, no join or sort of the table.
    burst = marked["_burst_ns"].to_numpy().copy()
    burst[data["_row"].to_numpy()] = np.frombuffer(starts, dtype=np.int64)
    return marked.with_columns(_burst_ns=pl.Series("_burst_ns", burst))


def bottleneck_spacing(state: pl.DataFrame, timings: dict[tuple[int, int], Timing]) -> pl.DataFrame:
    """(stream, dir, _lag, _ser) for the data directions whose tap is beside their receiver (not
    "middle": a slow host's own pace, a SunOS sender's 9 KB copies 1.5 ms apart, reads as a link's
    at a tap whose handshake puts it mid-path, where the sender was busy, not silent): the
    tap's reaction lag and the bottleneck's serialization per IP byte, the low quantile of the
    spacing per byte of consecutive segments of at least half the direction's largest with no packet
    of the peer between them (null where fewer than SER_PAIRS_MIN pairs)."""
    far = [k for k, t in timings.items() if t.vantage == "receiver"]
    schema = {"stream": pl.UInt32, "dir": pl.UInt8, "_lag": pl.Int64, "_ser": pl.Float64}
    if not far:
        return pl.DataFrame(schema=schema)
    # The shortest time from a peer packet to data it released at this tap: the tap's lag, or the
    # sender's fastest reactions where quicker (the lag read from a handshake or the data is a
    # round trip's, and a Nagle-held tail follows the ACK that released it by less), none where
    # unknown: a segment any peer packet since its burst began could have released starts anew.
    keys = pl.DataFrame({"stream": [k[0] for k in far], "dir": [k[1] for k in far],
                         "_lag": [min(timings[k].lag_ns, timings[k].data_lag_ns or 0) for k in far]},
                        schema={"stream": pl.UInt32, "dir": pl.UInt8, "_lag": pl.Int64})
    rows = state.select("stream", "dir", "ts_ns", "payload_len", "ip_len").filter(
        pl.col("stream").is_in(keys["stream"].unique().implode()))
    ser = serialization_per_byte(rows).join(keys.select("stream", "dir"), on=["stream", "dir"], how="semi")
    return keys.join(ser, on=["stream", "dir"], how="left").cast(schema)


def candidates(state: pl.DataFrame, timings: dict[tuple[int, int], Timing]) -> pl.DataFrame:
    """Rows (stream, dir, start/end ts and frame, ended_by_new_data) of every silence in new data
    longer than its direction's threshold."""
    thr = pl.DataFrame(
        {"stream": [k[0] for k in timings], "dir": [k[1] for k in timings],
         "_thr": [threshold_ns(t) for t in timings.values()]},
        schema={"stream": pl.UInt32, "dir": pl.UInt8, "_thr": pl.Int64},
    )
    # A direction's first SYN opens its sequence space: the silence from it to the first data is one
    # too (a server that waits for a request).
    opening = pl.col("new_data") | pl.col("flag_syn") & ~pl.col("control_retransmission")
    marks = bursts(state.select("stream", "dir", "ts_ns", "frame", "payload_len", "flag_psh", "new_data", "flag_syn",
                                "control_retransmission", "ip_len"), bottleneck_spacing(state, timings))
    new = marks.filter(pl.col("new_data")).select("stream", "dir", "ts_ns", "frame", "_burst_ns")
    gaps = (
        marks.filter(opening).select("stream", "dir", "ts_ns", "frame", "_burst_ns", "new_data").with_columns(
            start_ns=pl.col("ts_ns").shift(1).over(["stream", "dir"]),
            start_frame=pl.col("frame").shift(1).over(["stream", "dir"]),
            _from_ns=pl.col("_burst_ns").shift(1).over(["stream", "dir"]),
        )
        .rename({"ts_ns": "end_ns", "frame": "end_frame"})
        .filter(pl.col("start_ns").is_not_null() & pl.col("new_data"))
        .join(thr, on=["stream", "dir"], how="left")
        .filter((pl.col("end_ns") - pl.col("_from_ns")) >= pl.col("_thr"))
        # The closing segment must begin a burst of its own: one within a burst of the opening one
        # followed without a pause (a sender paced at a segment a millisecond, its burst longer than
        # the threshold) ends no silence.
        .filter(pl.col("_burst_ns") != pl.col("_from_ns"))
        .with_columns(ended_by_new_data=pl.lit(True))
    )
    # Tails: the last new data of a direction, then only retransmissions until the end, or probes:
    # a segment of at most one byte starting below what was acknowledged (Linux's zero-window probe
    # and every keep-alive are sent at snd_una - 1).
    last_new = new.group_by(["stream", "dir"]).agg(pl.col("ts_ns").max().alias("start_ns"),
                                                   pl.col("frame").max().alias("start_frame"))
    probe = ((pl.col("payload_len") <= 1) & ~pl.col("new_data") & ~pl.col("flag_syn") & ~pl.col("flag_fin")
             & ~pl.col("flag_rst") & (pl.col("seq_rel") < pl.col("snd_una")))
    last_resend = state.filter(pl.col("retransmission") | probe).group_by(["stream", "dir"]).agg(
        pl.col("ts_ns").max().alias("end_ns"), pl.col("frame").max().alias("end_frame"))
    tails = (
        last_new.join(last_resend, on=["stream", "dir"], how="inner")
        .join(thr, on=["stream", "dir"], how="left")
        .filter((pl.col("end_ns") - pl.col("start_ns")) >= pl.col("_thr"))
        .with_columns(ended_by_new_data=pl.lit(False))
    )
    cols = ["stream", "dir", "start_ns", "end_ns", "start_frame", "end_frame", "ended_by_new_data"]
    return pl.concat([gaps.select(cols), tails.select(cols)]).sort(["stream", "dir", "start_ns"])


def _recent_sizes(rows: dict[str, list], i0: int, i1: int, d: int, resegmented: bool) -> list[int]:
    """The segment sizes of direction `d` over RECENT_ROWS before the stall, read for the full
    segment in force. Where the sender re-cut a segment smaller since (a resend from the same first
    byte, shorter: an ICMP "fragmentation needed" lowered its MSS), only the sizes from that resend
    on up to the closing segment: the larger ones before it are the MSS the path could not carry
    (4.4BSD's 1240-byte segments behind a 1280-byte hop, each read as a short one Nagle held
    behind the 1460-byte segment that was lost)."""
    start = max(-1, i0 - RECENT_ROWS)
    recent = [rows["payload_len"][i] for i in range(i0, start, -1) if rows["dir"][i] == d]
    if not resegmented:
        return recent
    first: dict[int, int] = {}
    cut = None
    for i in range(start + 1, i1 + 1):
        if rows["dir"][i] != d or not rows["payload_len"][i]:
            continue
        q, n = rows["seq_rel"][i], rows["payload_len"][i]
        if rows["retransmission"][i] and n < first.get(q, 0):
            cut = i
        first.setdefault(q, n)
    if cut is None:
        return recent
    return [rows["payload_len"][i] for i in range(cut, i1 + 1) if rows["dir"][i] == d]


def _recut_resend(rows: dict[str, list], i0: int, i1: int, d: int) -> Resend | None:
    """The segment that ended the stall, when it starts below the highest sequence sent before it:
    it resends data, re-cut into a larger segment that also carries new data (4.4BSD after a
    timeout: tcp_output sends from snd_una as much as the window and MSS allow; RFC 793 allows
    repacketizing a retransmission). The sender state calls it new data, for the bytes it adds;
    its kind is the one a retransmission would get (sender_state.py: a timeout after
    TIMEOUT_FLOOR_NS of silence, fast after a duplicate ACK, else other)."""
    max_before = max(rows["snd_max"][i1] - (rows["seq_end"][i1] - rows["seq_rel"][i1]), rows["snd_max"][i0])
    if rows["seq_rel"][i1] >= max_before or not rows["payload_len"][i1]:
        return None
    prev = max(i for i in range(i0, i1) if rows["dir"][i] == d)
    dups = any(rows["dup_ack"][i] for i in range(prev + 1, i1) if rows["dir"][i] != d)
    kind = ("timeout" if rows["ts_ns"][i1] - rows["ts_ns"][prev] >= TIMEOUT_FLOOR_NS
            else "fast" if dups else "other")
    return Resend(rows["frame"][i1], rows["ts_ns"][i1], rows["seq_rel"][i1], rows["payload_len"][i1], kind,
                  rows["ip_len"][i1])


def _lost_after(rows: dict[str, list], i1: int, d: int, una: int, sent: int) -> tuple[int, int | None, int]:
    """(distinct segments in [una, sent) that a retransmission timeout after row i1 resent before
    the peer acknowledged `sent`, the timeout's frame, distinct segments in [una, sent) resent by any
    retransmission, fast ones included): rows after the stall, at most RECOVERY_ROWS, until an ACK
    covers `sent`."""
    resent: set[int] = set()
    repaired: set[int] = set()
    timeout = None
    for i in range(i1 + 1, min(len(rows["frame"]), i1 + RECOVERY_ROWS)):
        if rows["dir"][i] != d:
            if rows["flag_ack"][i] and rows["ack_rel"][i] >= sent:
                break
        elif rows["retransmission"][i]:
            if timeout is None and rows["retrans_kind"][i] == "timeout":
                timeout = rows["frame"][i]
            if una <= rows["seq_rel"][i] < sent:
                repaired.add(rows["seq_rel"][i])
                if timeout is not None:
                    resent.add(rows["seq_rel"][i])
    return len(resent), timeout, len(repaired)


def _dups_since_sent(rows: dict[str, list], i0: int, d: int, first: Resend) -> int:
    """The peer's duplicate ACKs from the first transmission of the data `first` resends (the
    newest packet of direction `d` that carried its first byte and was not itself a resend) up to
    that resend: rows from the stall's start back at most RECOVERY_ROWS, and the stall's own."""
    n = 0
    for i in range(i0, max(-1, i0 - RECOVERY_ROWS), -1):
        if rows["dir"][i] != d:
            n += _hole_reported(rows, i)
        elif (not rows["retransmission"][i] and rows["seq_rel"][i] <= first.seq < rows["seq_end"][i]):
            break
    frames = rows["frame"]
    for i in range(i0 + 1, frames.index(first.frame)):
        if rows["dir"][i] != d:
            n += _hole_reported(rows, i)
    return n


def _hole_reported(rows: dict[str, list], i: int) -> bool:
    """Row i, an ACK of the peer, says data is missing: a duplicate ACK, or SACK blocks above the
    cumulative ACK (not a DSACK, whose first block lies below it)."""
    sack = rows["sack_left"][i]
    return bool(rows["dup_ack"][i]) or bool(sack) and sack[0] >= rows["ack_rel"][i]


# A skipped IPv4 id that shows up within this many of the sender's later packets came late
# (reordered on the path), it was not lost.
REORDER_LOOKAHEAD = 16


def _ids_unseen(rows: dict[str, list], i1: int, d: int, segment: int) -> int:
    """IPv4 ids skipped between the sender's packet before row i1 and row i1 itself, less those
    that arrive among the sender's next REORDER_LOOKAHEAD packets (reordered, not lost), and less
    the ids a super-frame before it took: GRO or TSO merged its packets of at most `segment` bytes
    (the MSS the peer offered), each numbered (a receiver's tap with GRO on sees 16 KB frames whose
    ids step by 12)."""
    prev = next((i for i in range(i1 - 1, -1, -1) if rows["dir"][i] == d), None)
    if prev is None or rows["ip_id"][i1] is None or rows["ip_id"][prev] is None:
        return 0
    size = rows["payload_len"][prev]
    merged = -(-size // segment) - 1 if segment and size > segment else 0
    skipped = max(0, (rows["ip_id"][i1] - rows["ip_id"][prev] - 1) % 65536 - merged)
    if not skipped:
        return 0
    first = rows["ip_id"][prev] + 1 + merged
    missing = {(first + k) % 65536 for k in range(min(skipped, REORDER_LOOKAHEAD))}
    seen = 0
    for i in range(i1 + 1, len(rows["frame"])):
        if rows["dir"][i] != d:
            continue
        missing.discard(rows["ip_id"][i])
        seen += 1
        if seen >= REORDER_LOOKAHEAD or not missing:
            break
    return skipped - (min(skipped, REORDER_LOOKAHEAD) - len(missing))


def _peer_ids_unseen(rows: dict[str, list], i: int | None, d: int) -> int:
    """The peer's IPv4 ids skipped across row i (_ids_unseen of its first packet after it)."""
    if i is None:
        return 0
    after = next((j for j in range(i + 1, min(len(rows["dir"]), i + REORDER_LOOKAHEAD * 4)) if rows["dir"][j] != d),
                 None)
    return 0 if after is None else _ids_unseen(rows, after, 1 - d, 0)


def not_yet_echoed(ts_ecr: int | None, ts_val: int | None) -> bool:
    """A segment echoing `ts_ecr` was sent before its sender received a packet stamped `ts_val`
    (RFC 7323 serial arithmetic). False when either is unknown or zero (no timestamps, a SYN)."""
    if not ts_ecr or not ts_val:
        return False
    return (ts_val - ts_ecr) % (1 << 32) < (1 << 31) and ts_val != ts_ecr


# A sender is read as never echoing pure ACKs once this many of its packets, each the first after a
# new pure-ACK timestamp, echoed something older (and none ever echoed such a timestamp).
STALE_ECHOES_MIN = 3


def echoes_pure_acks(rows: dict[str, list], d: int) -> bool:
    """Whether direction `d`'s timestamp echoes follow its peer's pure ACKs (RFC 7323's rule:
    TS.Recent from any segment at the left edge). False only when it never echoed a value its
    peer sent on pure ACKs alone (SYN and FIN aside) and STALE_ECHOES_MIN times its first packet
    after such a value echoed something older: RFC 1323's rule, which takes TS.Recent from data
    segments only, so the echo says nothing of the ACKs it had. True when it cannot tell (no
    timestamps, no pure ACK, a short connection whose few packets left before the ACKs came)."""
    # (A SYN or FIN takes sequence space: both rules take TS.Recent from it, as from data.)
    packets = list(zip(rows["dir"], rows["payload_len"], rows["flag_syn"], rows["flag_fin"],
                       rows["opt_ts_val"], rows["opt_ts_ecr"]))
    data_vals, pure_vals, echoed = set(), set(), set()
    for dr, n, syn, fin, val, ecr in packets:
        if dr == d:
            if ecr:
                echoed.add(ecr)
        elif val:
            (data_vals if n or syn or fin else pure_vals).add(val)
    pure_only = pure_vals - data_vals
    if pure_only & echoed:
        return True
    pending = None  # a pure-ACK-only timestamp no packet of `d` has followed yet
    stale = 0
    for dr, _, _, _, val, ecr in packets:
        if dr != d:
            if val in pure_only:
                pending = val
        elif ecr and pending is not None:
            stale += not_yet_echoed(ecr, pending)
            pending = None
    return stale < STALE_ECHOES_MIN


# Rows read back from a closing segment for the peer's last packet (a one-way capture has none).
ACKS_UNSEEN_LOOKBACK = 256


def _acks_unseen(rows: dict[str, list], i1: int, d: int) -> int:
    """How far the ACK of the segment at `i1` (direction `d`) runs past the peer's data seen before
    it: the end of the peer's last packet that was no retransmission (0 where none was seen within
    ACKS_UNSEEN_LOOKBACK rows)."""
    if not rows["flag_ack"][i1]:
        return 0
    for j in range(i1 - 1, max(-1, i1 - 1 - ACKS_UNSEEN_LOOKBACK), -1):
        if rows["dir"][j] != d and not rows["retransmission"][j]:
            return max(0, rows["ack_rel"][i1] - rows["seq_end"][j])
    return 0


def build_context(rows: dict[str, list], cand: dict[str, Any], timing: Timing, profile: dict[str, Any]) -> StallContext:
    """The context of one candidate, read from its stream's rows (columns as lists, time order)."""
    if "_echoes_pure_acks" not in profile:
        profile["_echoes_pure_acks"] = echoes_pure_acks(rows, cand["dir"])
    frames = rows["frame"]
    i0 = frames.index(cand["start_frame"])
    i1 = frames.index(cand["end_frame"])
    d = cand["dir"]
    acks: list[PeerAck] = []
    resends: list[Resend] = []
    syn_resends = 0
    peer_bytes = 0
    last_peer_data = None
    # Away from the sender, a peer ACK the tap saw less than the reaction lag before the stall began
    # reached the sender during it (the state at the start is the sender's: without that ACK).
    early: list[int] = []
    if timing.vantage != "sender" and timing.lag_ns:
        j = i0 - 1
        while j >= 0 and rows["ts_ns"][j] > rows["ts_ns"][i0] - timing.lag_ns:
            if rows["dir"][j] != d and rows["flag_ack"][j]:
                early.append(j)
            j -= 1
        early.reverse()
    first_resend_row: int | None = None
    for i in early + list(range(i0 + 1, i1 + (0 if cand["ended_by_new_data"] else 1))):
        if rows["dir"][i] != d:
            if rows["payload_len"][i] > 0:
                peer_bytes += rows["payload_len"][i]
                last_peer_data = rows["ts_ns"][i]
            if rows["flag_ack"][i]:
                acks.append(PeerAck(
                    frames[i], rows["ts_ns"][i], rows["ack_rel"][i], rows["win_scaled"][i], rows["acks_new"][i],
                    rows["dup_ack"][i], rows["payload_len"][i], rows["ack_delay_ns"][i],
                    bool(rows["sack_left"][i]) and rows["sack_left"][i][0] < rows["ack_rel"][i],
                    rows["opt_ts_val"][i]))
        elif rows["retransmission"][i]:
            if first_resend_row is None:
                first_resend_row = i
            resends.append(Resend(frames[i], rows["ts_ns"][i], rows["seq_rel"][i], rows["payload_len"][i],
                                  rows["retrans_kind"][i], rows["ip_len"][i]))
        elif rows["flag_syn"][i] and rows["ts_ns"][i] - rows["ts_ns"][i0] >= TIMEOUT_FLOOR_NS:
            # The SYN sent again by its timer (the stall runs from the first one): a resend of its
            # one sequence number, as a data segment's would be. (A copy a few milliseconds after
            # it is a second capture point's, no timer's.)
            resends.append(Resend(frames[i], rows["ts_ns"][i], rows["seq_rel"][i], 1, "timeout", rows["ip_len"][i]))
            syn_resends += 1
    ended = cand["ended_by_new_data"]
    recut = _recut_resend(rows, i0, i1, d) if ended else None
    if recut is not None:
        resends.append(recut)
    if "_peer_tick" not in profile:
        # Learned once per direction, on its first stall: the clock the peer's delayed ACKs follow.
        delay = np.asarray(rows["ack_delay_ns"], dtype=np.float64)  # None -> nan
        peer = (np.asarray(rows["dir"]) != d) & np.asarray(rows["flag_ack"], dtype=bool) & ~np.isnan(delay)
        profile["_peer_tick"] = learn_tick(np.asarray(rows["ts_ns"], dtype=np.int64)[peer],
                                           np.clip(delay[peer] - timing.rest_of_rtt(), 0, None))
    # A timeout's whole repair: resends until the peer acknowledged all that was out before it
    # (go-back-N goes on past the first new data), so one episode's lost segments are counted once.
    # (A resent SYN is an episode of its own: the data resent after it is the next one's.)
    recovery: set[int] = {r.seq for r in resends}
    if any(r.kind == "timeout" for r in resends) and len(resends) > syn_resends:
        # ...and the losses repaired without a timeout since the previous one: one episode
        # (several losses in a window, only the last of which fast retransmit could not repair).
        # A resend of data first sent before an earlier timeout, with no duplicate ACKs before it
        # (kind `other`: that timeout's go-back-N), belongs to that timeout's episode, not this one.
        earlier: list[tuple[int, bool]] = []
        floor = 0
        for i in range(i0, max(-1, i0 - RECOVERY_ROWS), -1):
            if rows["dir"][i] == d and rows["retransmission"][i]:
                if rows["retrans_kind"][i] == "timeout":
                    floor = rows["snd_max"][i]
                    break
                earlier.append((rows["seq_rel"][i], rows["retrans_kind"][i] == "fast"))
        recovery.update(q for q, fast in earlier if fast or q >= floor)
        point = rows["snd_max"][i0]
        for i in range(i1 + 1, min(len(frames), i1 + RECOVERY_ROWS)):
            if rows["dir"][i] != d:
                if rows["flag_ack"][i] and rows["ack_rel"][i] >= point:
                    break
            elif rows["retransmission"][i]:
                recovery.add(rows["seq_rel"][i])
    dups_since_sent = _dups_since_sent(rows, i0, d, resends[0]) if resends else None
    recent = _recent_sizes(rows, i0, i1 if ended else i0, d, bool(profile.get("resegmented")))
    # Outstanding just before the closing segment: its own row's snd_una with the snd_max before it.
    if ended:
        una_end = rows["snd_una"][i1]
        max_before = rows["snd_max"][i1] - (rows["seq_end"][i1] - rows["seq_rel"][i1])
        max_before = max(max_before, rows["snd_max"][i0])
        usable_end = None if rows["peer_window"][i1] is None else una_end + rows["peer_window"][i1] - max_before
    else:
        una_end, max_before, usable_end = rows["snd_una"][i1], rows["snd_max"][i1], rows["usable_window"][i1]
    lost, timeout, repaired = _lost_after(rows, i1, d, una_end, max_before) if ended and not resends else (0, None, 0)
    lost_after = (lost, timeout)
    w, due = None, 0
    if ended and not resends:
        if "_writer" not in profile:
            # Learned once per direction, on the first stall that new data ended (the send-buffer
            # estimate asks it too: causes/common.send_buffer_plateau).
            profile["_writer"] = writer(rows, d, event_lag_ns(timing.lag_ns, timing.data_lag_ns),
                                        bool(profile.get("syn_seen")))
        if max_before > una_end:
            # Only a stall with data unacknowledged to its end may have held a write.
            w = profile["_writer"]
            due = writes_due(rows, i0, i1, d, w)
    offered = profile.get("mss_offered_by_peer") or profile.get("common_segment") or 0
    return StallContext(
        writer=w, writes_due=due,
        repaired_after=repaired,
        ids_unseen=(_ids_unseen(rows, i1, d, offered) if ended and profile.get("_ip_ids_count") else 0),
        resend_ids_unseen=(_ids_unseen(rows, first_resend_row, d, offered)
                           if first_resend_row is not None and profile.get("_ip_ids_count") else 0),
        resend_peer_ids_unseen=_peer_ids_unseen(rows, first_resend_row, d) if profile.get("_peer_ip_ids_count") else 0,
        lost_after=lost_after,
        closing_ts_ecr=rows["opt_ts_ecr"][i1] if ended else None,
        closing_acks_unseen=_acks_unseen(rows, i1, d) if ended else 0,
        stream=cand["stream"], dir=d, start_ns=cand["start_ns"], end_ns=cand["end_ns"],
        start_frame=cand["start_frame"], end_frame=cand["end_frame"], ended_by_new_data=ended,
        first_len=rows["payload_len"][i0], first_psh=bool(rows["flag_psh"][i0]), first_end=rows["seq_end"][i0],
        held_len=rows["payload_len"][i1] if ended else 0,
        held_frame=frames[i1] if ended else None,
        held_psh=bool(rows["flag_psh"][i1]) if ended else False,
        in_flight_at_start=rows["in_flight"][i0], una_at_start=rows["snd_una"][i0], usable_at_start=rows["usable_window"][i0],
        window_at_start=rows["peer_window"][i0],
        in_flight_before_end=max(0, max_before - una_end), usable_before_end=usable_end,
        snd_max_before_end=max_before,
        acks=acks, resends=resends, recovery_segments=len(recovery) if resends else 0,
        peer_dups_since_sent=dups_since_sent, peer_data_bytes=peer_bytes, last_peer_data_ts=last_peer_data,
        segment_size=_segment_size(max(recent, default=0), profile),
        flight_seen=max((rows["in_flight"][i] for i in range(max(0, i0 - RECOVERY_ROWS), i0 + 1) if rows["dir"][i] == d),
                        default=0),
        timing=timing, threshold_ns=threshold_ns(timing), profile=profile,
        idle_before_ns=_idle_before(rows, i0, d),
    )


# How far back the ACK before a stall's first segment is looked for (rows).
IDLE_LOOKBACK_ROWS = 64


def _idle_before(rows: dict[str, list], i0: int, d: int) -> int | None:
    """From the peer's last ACK before row `i0` to row `i0`'s send, where that ACK had acknowledged
    everything sent before `i0` (an idle sender's pause); None otherwise."""
    for j in range(i0 - 1, max(-1, i0 - IDLE_LOOKBACK_ROWS), -1):
        if rows["dir"][j] == d:
            if rows["payload_len"][j]:
                return None  # its own data went between: no pause with everything acknowledged
            continue
        if rows["flag_ack"][j] and rows["ack_rel"][j] is not None:
            return rows["ts_ns"][i0] - rows["ts_ns"][j] if rows["ack_rel"][j] >= rows["seq_rel"][i0] else None
    return None
