"""Where the capture was taken, and the path's round trip, per connection and direction.

A capture point sees a sender react to an ACK after a delay that depends on where it sits: at the
sender the data follows the ACK within microseconds; at the receiver it follows one round trip later.
So every rule that asks "did this ACK release that segment?" needs this *reaction lag*, and every
threshold tied to the RTT needs the *path* RTT, not the data-to-ACK time seen at the tap (which at
the receiver is only the receiver's own ACK delay).

From the handshake when it was captured (SYN -> SYN/ACK -> ACK: each side's reaction seen at the
tap), else from the data: the low percentile of new data following a peer ACK (lag) plus the low
percentile of data-to-ACK times (the rest of the round trip).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import polars as pl

from stallscope.analyzers.sender_state import TIMEOUT_FLOOR_NS

# Low percentile used for "the fastest the path can be": robust to one odd packet.
LOW_Q = 0.05
# Without a handshake the round trip is read from the FASTEST_K-th fastest data-to-ACK time where
# that is faster: as robust to odd packets, and not outvoted by a long run of ACKs that something
# else paced (a slow reader's window updates after slow start's few prompt ones).
FASTEST_K = 3
# A data-to-ACK time this long is a delayed ACK's (peer_acks.DELAYED_MIN_NS), not the path's.
DELAYED_ACK_NS = 20_000_000
# Vantage classes by lag / path RTT.
AT_SENDER_MAX = 0.2
AT_RECEIVER_MIN = 0.8


@dataclass(frozen=True)
class Timing:
    path_rtt_ns: int | None  # the network round trip (no delayed ACK in it)
    lag_ns: int  # from an ACK at the tap to the data it releases at the tap
    vantage: str  # "sender", "receiver", "middle", "unknown"
    source: str  # "handshake" or "data"
    # The path RTT plus the typical queueing the data met (median less fastest data-to-ACK time).
    typical_rtt_ns: int | None = None
    # Fastest time at the tap from data to an ACK covering two or more segments (which no receiver
    # delays): the data-to-ACK time of this path with its serialization, and no ACK timer in it.
    prompt_ack_ns: int | None = None
    # The capture clock's step where its timestamps are coarse (every one a multiple of 1 ms or
    # more: an old kernel's 10 ms jiffy, a tool that writes milliseconds); 0 where they are fine.
    clock_ns: int = 0
    # Low percentile of the time from a peer's pure ACK to this direction's next new data at the tap,
    # where that happened REACTIONS_MIN times or more (None otherwise): the host's own reaction with
    # its copy and output costs where each send waited for an ACK (a stop-and-go deadlock), a few
    # microseconds where data in flight follows every ACK (a bulk transfer seen at its receiver).
    data_lag_ns: int | None = None

    def rest_of_rtt(self) -> int:
        """What an ACK's time at the tap holds besides the receiver's own delay."""
        if self.prompt_ack_ns is not None:
            return self.prompt_ack_ns
        return max(0, (self.path_rtt_ns or 0) - self.lag_ns)

    def to_json(self) -> dict:
        return {"vantage": self.vantage, "path_rtt_ns": self.path_rtt_ns, "typical_rtt_ns": self.typical_rtt_ns,
                "reaction_lag_ns": self.lag_ns, "from": self.source}


# Steps tried, largest first, for a capture clock that ticks coarsely; the share of timestamps that
# must fall on the step.
CLOCK_STEPS_NS = (100_000_000, 10_000_000, 1_000_000)
CLOCK_STEP_SHARE = 0.99
CLOCK_SAMPLE = 100_000


def clock_step_ns(ts_ns: pl.Series) -> int:
    """The capture clock's step: the largest of CLOCK_STEPS_NS that (nearly) every timestamp of the
    capture's first CLOCK_SAMPLE packets is a multiple of, or 0 (finer than a millisecond)."""
    if ts_ns.len() < 2:
        return 0
    # The capture's first packets tell (every packet would cost a pass per step on the hot path).
    ts_ns = ts_ns.head(CLOCK_SAMPLE)
    for step in CLOCK_STEPS_NS:
        if ((ts_ns % step) == 0).mean() >= CLOCK_STEP_SHARE:
            return step
    return 0


def _classify(lag: int, rtt: int | None) -> str:
    if not rtt:
        return "unknown"
    f = lag / rtt
    return "sender" if f <= AT_SENDER_MAX else "receiver" if f >= AT_RECEIVER_MIN else "middle"


def handshake_times(state: pl.DataFrame) -> pl.DataFrame:
    """Per stream: the SYN the SYN/ACK answered, the first SYN/ACK, and the initiator's first ACK
    after it (null if unseen). Where the SYN was sent again before the SYN/ACK came, the SYN/ACK
    answers the last one when it came within half the timer's gap after it (one answering the one
    before would make a round trip longer than the timer): timed from the first, a lost SYN read as
    a 3-second round trip. A SYN/ACK later than that is ambiguous (Karn: a server slow to answer, or
    the earlier SYN's); the stream is left to the data's timing."""
    synack = state.filter(pl.col("flag_syn") & pl.col("flag_ack") & (pl.col("dir") == 1)).group_by("stream").agg(
        pl.col("ts_ns").min().alias("t_synack"))
    syns = (state.filter(pl.col("flag_syn") & ~pl.col("flag_ack") & (pl.col("dir") == 0)).select("stream", "ts_ns")
            .join(synack, on="stream", how="inner").filter(pl.col("ts_ns") <= pl.col("t_synack"))
            .with_columns(_last=pl.col("ts_ns").max().over("stream")))
    # The last SYN sent (copies of it a second capture point added, closer than any timer, with it)
    # and the one its timer resent it after.
    last = pl.col("ts_ns") > pl.col("_last") - TIMEOUT_FLOOR_NS
    syn = (syns.group_by("stream").agg(pl.col("ts_ns").filter(last).min().alias("t_syn"),
                                       pl.col("ts_ns").filter(~last).max().alias("_prev"), pl.first("t_synack"))
           .filter(pl.col("_prev").is_null()
                   | (2 * (pl.col("t_synack") - pl.col("t_syn")) < pl.col("t_syn") - pl.col("_prev")))
           .select("stream", "t_syn", syn_resent=pl.col("_prev").is_not_null()))
    hs = syn.join(synack, on="stream", how="inner")
    ack = (
        state.filter(~pl.col("flag_syn") & pl.col("flag_ack") & (pl.col("dir") == 0))
        .select("stream", "ts_ns").join(hs, on="stream").filter(pl.col("ts_ns") >= pl.col("t_synack"))
        .group_by("stream").agg(pl.col("ts_ns").min().alias("t_ack"))
    )
    return hs.join(ack, on="stream", how="inner").filter(pl.col("t_synack") >= pl.col("t_syn"))


def data_lags(state: pl.DataFrame) -> pl.DataFrame:
    """Per (stream, dir): low percentile of new data right after a peer ACK, and of data-to-ACK time."""
    lag = state.select("stream", "dir", "reaction_ns").filter(pl.col("reaction_ns").is_not_null()).group_by(
        ["stream", "dir"]).agg(pl.col("reaction_ns").quantile(LOW_Q).alias("lag"), pl.len().alias("lag_n"))
    rtt = state.select("stream", "dir", "rtt_ns").filter(pl.col("rtt_ns").is_not_null()).group_by(["stream", "dir"]).agg(
        pl.col("rtt_ns").quantile(LOW_Q).alias("d2a"), pl.col("rtt_ns").median().alias("d2a_median"),
        pl.col("rtt_ns").min().alias("d2a_min"), pl.col("rtt_ns").bottom_k(FASTEST_K).max().alias("d2a_fastest"))
    # The fastest such ACK: in a stop-and-go deadlock nearly every ACK is the timer's, so even a
    # low percentile would be one.
    prompt = state.select("stream", "dir", "ack_segments", "ack_delay_ns").filter(pl.col("ack_segments") >= 2).group_by(
        ["stream", "dir"]).agg(pl.col("ack_delay_ns").min().alias("prompt")).with_columns(dir=(1 - pl.col("dir").cast(pl.Int64)).cast(pl.UInt8))
    return lag.join(rtt, on=["stream", "dir"], how="full", coalesce=True).join(prompt, on=["stream", "dir"], how="full",
                                                                             coalesce=True)


# A queued flight's segments reach a tap after the bottleneck each its serialization after the one
# before: within this factor of the direction's fastest spacing per byte, and this jitter.
SER_SLACK = 1.25
SER_JITTER_NS = 100_000
# The fastest spacing per byte is read from this low quantile over consecutive full-size segments,
# where at least SER_PAIRS_MIN of them were spaced apart at all.
SER_QUANTILE = 0.1
SER_PAIRS_MIN = 8


def serialization_per_byte(rows: pl.DataFrame, through_prompt_acks: bool = False) -> pl.DataFrame:
    """(stream, dir, _ser): the fastest spacing per IP byte of consecutive segments of the direction
    (both at least half its largest, no packet of the peer between them, so no ACK clocked the
    second: a flight released one segment per ACK is spaced by the round trip, not by the link),
    the SER_QUANTILE over SER_PAIRS_MIN pairs or more. Beside a receiver it is the bottleneck's
    serialization; beside a sender its own output's.

    `through_prompt_acks`: a peer packet within SER_JITTER_NS of the packet before it does not part
    two segments: a receiver that ACKs each segment answers at once at its own tap, and no ACK that
    quick was heard by the sender before the next segment left (beside the sender no ACK comes that
    soon after data, but on loopback)."""
    by = ["stream", "dir"]
    rows = rows.select("stream", "dir", "ts_ns", "payload_len", "ip_len")
    if through_prompt_acks:
        rows = rows.filter((pl.col("payload_len") > 0) | (pl.col("dir") == pl.col("dir").shift(1).over("stream"))
                           | (pl.col("ts_ns") - pl.col("ts_ns").shift(1).over("stream") > SER_JITTER_NS)
                           | pl.col("ts_ns").shift(1).over("stream").is_null())
    pairs = rows.with_columns(
        _gap=pl.col("ts_ns") - pl.col("ts_ns").shift(1).over("stream"),
        _pdir=pl.col("dir").shift(1).over("stream"),
        _plen=pl.col("payload_len").shift(1).over("stream"),
        _big=pl.col("payload_len").max().over(by))
    full = pairs.filter((pl.col("_pdir") == pl.col("dir")) & (pl.col("_gap") > 0)
                        & (2 * pl.col("payload_len") >= pl.col("_big")) & (2 * pl.col("_plen") >= pl.col("_big")))
    return (full.group_by(by).agg((pl.col("_gap") / pl.col("ip_len")).quantile(SER_QUANTILE).alias("_ser"),
                                  pl.len().alias("_n"))
            .filter(pl.col("_n") >= SER_PAIRS_MIN).drop("_n"))


def unqueued_lags(state: pl.DataFrame, streams: list[int]) -> dict[tuple[int, int], tuple[int, int]]:
    """Per (stream, data direction) of `streams`: the low percentile (LOW_Q) and count of the
    reactions (`reaction_ns`) of data that did not reach the tap queued, where REACTIONS_MIN or
    more such remain and queued ones were set aside. Downstream of a bottleneck a flight arrives
    spread, each segment its serialization after the one before, and the receiver's ACKs of the
    first go out among the rest: a segment that follows the previous one by its own serialization
    (within SER_SLACK, and SER_JITTER_NS above) had left the sender before that ACK could reach it,
    so the time since the ACK is no reaction. Read from them, a 148 ms round trip seen at the
    receiver without its handshake was 0.67 ms, the serialization of a segment at 18 Mbit/s, and
    every wait for an ACK became a stall. Beside the sender the spacing read is its own output's,
    faster than the ACK clock, and nothing is set aside.

    A segment that came sooner than its serialization was no queue's (on a LAN whose round trip is
    shorter than a segment's serialization, 35 us against 350 us over FDDI, reactions come sooner
    than the queue would space them), and only segments of at least half the largest are judged,
    as the spacing was read from them (a 411-byte tail whose serialization, 37 us, matched that
    LAN's round trip was a reaction)."""
    mine = state.filter(pl.col("stream").is_in(streams))
    ser = serialization_per_byte(mine, through_prompt_acks=True)
    if ser.height == 0:
        return {}
    by = ["stream", "dir"]
    data = (mine.select("stream", "dir", "ts_ns", "payload_len", "ip_len", "new_data", "reaction_ns", "flag_psh")
            .filter(pl.col("payload_len") > 0)
            .with_columns(_prev=pl.col("ts_ns").shift(1).over(by), _prev_psh=pl.col("flag_psh").shift(1).over(by),
                          _big=pl.col("payload_len").max().over(by), _ip_max=pl.col("ip_len").max().over(by)))
    seen = (data.filter(pl.col("new_data") & pl.col("reaction_ns").is_not_null() & pl.col("_prev").is_not_null())
            .join(ser, on=by, how="inner")
            .with_columns(_own=pl.col("_ser") * pl.col("ip_len").cast(pl.Float64),
                          _full=SER_SLACK * pl.col("_ser") * pl.col("_ip_max").cast(pl.Float64) + SER_JITTER_NS,
                          _gap=pl.col("ts_ns") - pl.col("_prev")))
    queued = ((pl.col("_gap") <= SER_SLACK * pl.col("_own") + SER_JITTER_NS) & (pl.col("_gap") >= pl.col("_own") / SER_SLACK)
              & (2 * pl.col("payload_len") >= pl.col("_big")))
    # Nor is data after a segment that ended a write or emptied the buffer (PSH) a reaction: the
    # sender had nothing left, so what came next was written then, not released by the ACK before
    # it (a writer of 4 KB every 10 ms over FDDI read a 10 ms round trip on a 35 us path).
    kept = ~queued & ~pl.col("_prev_psh")
    lags = seen.group_by(by).agg(pl.col("reaction_ns").filter(kept).quantile(LOW_Q).alias("lag"),
                                 kept.sum().alias("n"), queued.sum().alias("queued"), pl.col("_full").first())
    # Taken only where what is left comes clearly later than a full segment's serialization: on a
    # shorter path the two coincide, and the old reading stands (Linux 2.0 on a 10 Mbit/s LAN: its
    # Nagle-held tails came 0.4 ms after their ACKs, a reaction, where a segment takes 1.2 ms).
    taken = lags.filter((pl.col("n") >= REACTIONS_MIN) & (pl.col("queued") > 0) & (pl.col("lag") > pl.col("_full")))
    return {(int(s), int(d)): (int(lag), int(n)) for s, d, lag, n in taken.select(*by, "lag", "n").iter_rows()}


# New data right after a peer ACK needed this many times before its low percentile is the
# sender's reaction lag.
REACTIONS_MIN = 3


# A zero window reopened this many times gives the sender's reaction lag on its own.
REOPENS_MIN = 3


def reopen_lags(state: pl.DataFrame, streams: list[int]) -> dict[tuple[int, int], int]:
    """Per (stream, data direction) of `streams`: the median time from the peer's ACK that reopened
    a zero window to the sender's next new data, where that happened REOPENS_MIN times or more.
    Nothing was in flight behind a zero window, so the data that follows answers that ACK: at the
    sender's tap at once, at the receiver's a round trip later. (Any other ACK may be followed by
    data already on its way: at a receiver's tap in a bulk transfer, microseconds after each ACK.)"""
    wanted = pl.col("stream").is_in(streams)
    acks = state.select("stream", "dir", "ts_ns", "win_scaled", "flag_ack", "payload_len").filter(
        wanted & pl.col("flag_ack") & (pl.col("payload_len") == 0)).select("stream", "dir", "ts_ns", "win_scaled")
    if not (acks["win_scaled"] == 0).any():
        return {}
    reopened = (acks.sort(["stream", "dir", "ts_ns"])
                .with_columns(prev=pl.col("win_scaled").shift(1).over(["stream", "dir"]))
                .filter((pl.col("prev") == 0) & (pl.col("win_scaled") > 0))
                .select("stream", sender=(1 - pl.col("dir").cast(pl.Int64)), at=pl.col("ts_ns")).sort("at"))
    data = (state.select("stream", "dir", "ts_ns", "new_data", "payload_len")
            .filter(wanted & pl.col("new_data") & (pl.col("payload_len") > 0))
            .select("stream", sender=pl.col("dir").cast(pl.Int64), data_ts=pl.col("ts_ns")).sort("data_ts"))
    joined = reopened.join_asof(data, left_on="at", right_on="data_ts", by=["stream", "sender"], strategy="forward",
                               check_sortedness=False)
    lags = (joined.drop_nulls("data_ts").group_by(["stream", "sender"])
            .agg((pl.col("data_ts") - pl.col("at")).median().alias("lag"), pl.len().alias("n"))
            .filter(pl.col("n") >= REOPENS_MIN))
    return {(int(r["stream"]), int(r["sender"])): int(r["lag"]) for r in lags.iter_rows(named=True)}


# Full windows reopened this many times give the sender's reaction lag (their median).
EDGES_MIN = 5


def _one_way_data(cols: pl.DataFrame, **extra: str) -> pl.DataFrame:
    """The data packets of one-way transfers (stream, sender, t, seq_end, new, size, and `extra`
    columns renamed): where the peer sends data too, the sender's next data may answer a request
    (a think time after it), not the window's edge moving."""
    data = cols.filter(pl.col("payload_len") > 0).select(
        "stream", sender=pl.col("dir").cast(pl.Int64), t="ts_ns", seq_end="seq_end", new="new_data",
        size="payload_len", **{name: pl.col(col) for name, col in extra.items()})
    two_way = data.select("stream", "sender").unique().group_by("stream").len().filter(pl.col("len") > 1)["stream"]
    return data.filter(~pl.col("stream").is_in(two_way.implode()))


def _edge_moves(cols: pl.DataFrame) -> pl.DataFrame:
    """The peer's pure ACKs that moved the window's right edge (ack + window) of the data sender
    `sender`: when (`at`), the edge before (`old`) and its ACK (`old_ack`), the new `edge`, and
    when the peer's next pure ACK came (`next_at`), in time order."""
    return (cols.filter(pl.col("flag_ack") & (pl.col("payload_len") == 0) & pl.col("win_scaled").is_not_null())
            .select("stream", sender=(1 - pl.col("dir").cast(pl.Int64)), at="ts_ns", ack="ack_rel",
                    edge=pl.col("ack_rel") + pl.col("win_scaled").cast(pl.Int64))
            .sort(["stream", "sender", "at"])
            .with_columns(old=pl.col("edge").shift(1).over(["stream", "sender"]),
                          old_ack=pl.col("ack").shift(1).over(["stream", "sender"]),
                          next_at=pl.col("at").shift(-1).over(["stream", "sender"]))
            .filter(pl.col("old").is_not_null() & (pl.col("edge") > pl.col("old")))
            .sort("at"))


def edge_lags(state: pl.DataFrame, streams: list[int]) -> dict[tuple[int, int], int]:
    """Per (stream, data direction) of `streams`: the median time from a peer ACK that moved the
    window's right edge (ack + window) while the tap had seen the sender's data reach the old edge,
    within a segment and not past it, to the first new data past the old edge. The sender could send
    nothing past that edge before this ACK reached it, so at the receiver's tap the data comes a
    round trip later and at the sender's at once: reopen_lags for windows that never closed (a slow
    reader's window updates, a window-limited transfer). Not past the edge matters: a window of
    unknown scale read raw puts the edge too low, and a sender's flight then runs past it. One-way
    transfers only (a request/response server's data answers requests, seconds after an ACK)."""
    wanted = pl.col("stream").is_in(streams)
    cols = state.select("stream", "dir", "ts_ns", "flag_ack", "ack_rel", "win_scaled", "payload_len", "seq_end",
                        "new_data", "snd_max").filter(wanted)
    acks = _edge_moves(cols)
    if acks.height == 0:
        return {}
    data = _one_way_data(cols, seen="snd_max")
    mss = data.group_by(["stream", "sender"]).agg(pl.col("size").max().alias("mss"))
    before = acks.join_asof(data.select("stream", "sender", "t", "seen").sort("t"), left_on="at", right_on="t",
                            by=["stream", "sender"], strategy="backward", check_sortedness=False)
    # The window before held two segments or more (a raw window of unknown scale is often less, and
    # an idle sender's last data then sits at its edge), and the new edge leaves room for a full
    # segment (less, and silly-window avoidance waits for a later ACK).
    full = (before.join(mss, on=["stream", "sender"], how="inner")
            .filter(pl.col("seen").is_not_null() & (pl.col("seen") <= pl.col("old"))
                    & (pl.col("seen") >= pl.col("old") - pl.col("mss"))
                    & (pl.col("old") - pl.col("old_ack") >= 2 * pl.col("mss"))
                    & (pl.col("edge") - pl.col("seen") >= pl.col("mss")))
            .select("stream", "sender", "at", "old").sort("at"))
    if full.height == 0:
        return {}
    new = data.filter(pl.col("new")).select("stream", "sender", d_t="t", d_end="seq_end").sort("d_t")
    joined = full.join_asof(new, left_on="at", right_on="d_t", by=["stream", "sender"], strategy="forward",
                            check_sortedness=False).filter(pl.col("d_end") > pl.col("old"))
    lags = (joined.group_by(["stream", "sender"])
            .agg((pl.col("d_t") - pl.col("at")).median().alias("lag"), pl.len().alias("n"))
            .filter(pl.col("n") >= EDGES_MIN))
    return {(int(r["stream"]), int(r["sender"])): int(r["lag"]) for r in lags.iter_rows(named=True)}


def filled_window_lags(state: pl.DataFrame, streams: list[int]) -> dict[tuple[int, int], int]:
    """Per (stream, data direction) of `streams`: edge_lags read where the tap is away from the
    sender. There the data still in flight when an ACK leaves reaches the tap after it, so the tap
    never sees the sender at the old edge when the ACK comes; but the data that arrives just before
    the first data past the old edge ends at that edge (within a segment), and arrives after the ACK
    (it was on its way), with no later ACK before it: the sender had filled the window and waited
    for this ACK. (Data that reached the edge before the ACK, or after the receiver had ACKed more,
    is an application's: a write that came a think time later and happened to end at that edge.)
    The shortest time from such an ACK to the data past its old edge is the round trip from the tap
    and back: none can come sooner (SunOS over a T1 with a 4 KB window, captured at its receiver
    without the handshake: 48 ms, where the data's own spacing read 7.8 ms and every window wait a
    stall). Read only where the data's reactions already place the tap at the receiver."""
    wanted = pl.col("stream").is_in(streams)
    cols = state.select("stream", "dir", "ts_ns", "flag_ack", "ack_rel", "win_scaled", "payload_len", "seq_end",
                        "new_data", "flag_psh").filter(wanted)
    acks = _edge_moves(cols)
    data = (_one_way_data(cols, psh="flag_psh")
            .with_columns(prev_end=pl.col("seq_end").shift(1).over(["stream", "sender"]),
                          prev_t=pl.col("t").shift(1).over(["stream", "sender"]),
                          prev_psh=pl.col("psh").shift(1).over(["stream", "sender"]),
                          mss=pl.col("size").max().over(["stream", "sender"])))
    if acks.height == 0 or data.height == 0:
        return {}
    # The first new data past the old edge (in sequence: new data only rises), which no ACK before
    # this one let the sender send.
    new = data.filter(pl.col("new")).select("stream", "sender", d_t="t", d_end="seq_end", prev_end="prev_end",
                                            prev_t="prev_t", prev_psh="prev_psh", mss="mss").sort("d_end")
    joined = (acks.sort("old").join_asof(new, left_on="old", right_on="d_end", by=["stream", "sender"],
                                         strategy="forward", allow_exact_matches=False, check_sortedness=False)
              .filter((pl.col("d_t") > pl.col("at")) & (pl.col("old") - pl.col("old_ack") >= 2 * pl.col("mss"))
                      & (pl.col("prev_end") <= pl.col("old")) & (pl.col("prev_end") >= pl.col("old") - pl.col("mss"))
                      & (pl.col("prev_t") > pl.col("at")) & ~pl.col("prev_psh")
                      & (pl.col("next_at").is_null() | (pl.col("next_at") >= pl.col("prev_t")))))
    lags = (joined.group_by(["stream", "sender"])
            .agg((pl.col("d_t") - pl.col("at")).min().alias("lag"), pl.len().alias("n"))
            .filter(pl.col("n") >= EDGES_MIN))
    return {(int(r["stream"]), int(r["sender"])): int(r["lag"]) for r in lags.iter_rows(named=True)}


# Echoes needed before they give a direction's reaction lag, and the low share of them taken (the
# fastest reactions: an application's later writes echo the same ACK, later).
ECHOES_MIN = 8
ECHO_Q = 0.05


def echo_lags(state: pl.DataFrame, streams: list[int]) -> dict[tuple[int, int], int]:
    """Per (stream, data direction) of `streams`: the low percentile of the time from the peer's
    last ACK carrying a TCP timestamp value to the first new data that echoes it (RFC 7323: a sender
    echoes the latest value it received). The data cannot leave before that ACK reached its sender,
    so at a receiver's tap every such time is a round trip or more and at the sender's the fastest
    are its reaction; no data in flight fakes it, unlike the data that merely follows an ACK (at a
    receiver's tap in a bulk transfer, microseconds after each ACK: a 60 ms path read as 68 us)."""
    wanted = pl.col("stream").is_in(streams)
    acks = (state.select("stream", "dir", "ts_ns", "opt_ts_val", "flag_ack", "payload_len")
            .filter(wanted & pl.col("flag_ack") & pl.col("opt_ts_val").is_not_null())
            .group_by(["stream", "dir", "opt_ts_val"])
            .agg(pl.col("ts_ns").max().alias("t_last"))
            .select("stream", sender=(1 - pl.col("dir").cast(pl.Int64)), echo=pl.col("opt_ts_val"), t_last="t_last"))
    if acks.height == 0:
        return {}
    data = (state.select("stream", "dir", "ts_ns", "new_data", "payload_len", "opt_ts_ecr")
            .filter(wanted & pl.col("new_data") & (pl.col("payload_len") > 0) & pl.col("opt_ts_ecr").is_not_null())
            .with_columns(gap=pl.col("ts_ns") - pl.col("ts_ns").shift(1).over(["stream", "dir"]))
            .group_by(["stream", "dir", "opt_ts_ecr"]).agg(pl.col("ts_ns").min().alias("t_data"),
                                                           pl.col("gap").sort_by("ts_ns").first())
            .select("stream", "gap", sender=pl.col("dir").cast(pl.Int64), echo=pl.col("opt_ts_ecr"), t_data="t_data"))
    # Data that broke a silence of its own as long as half its echo's wait resumed a paced writer,
    # which sends what it wrote, not what an ACK let go (a 100 ms pause echoing the ACK before it).
    joined = (data.join(acks, on=["stream", "sender", "echo"], how="inner")
              .filter((pl.col("t_data") >= pl.col("t_last"))
                      & (pl.col("gap").is_not_null())
                      & (2 * pl.col("gap") < pl.col("t_data") - pl.col("t_last"))))
    lags = (joined.group_by(["stream", "sender"])
            .agg((pl.col("t_data") - pl.col("t_last")).quantile(ECHO_Q, "lower").alias("lag"), pl.len().alias("n"))
            .filter(pl.col("n") >= ECHOES_MIN))
    return {(int(r["stream"]), int(r["sender"])): int(r["lag"]) for r in lags.iter_rows(named=True)}


# Samples needed before a writer's own pace is told from reactions; how much more the "reactions"
# must vary than the writer's own gaps, and at least by how much (a share of their median, and 1 ms).
PACED_MIN = 8
PACED_FACTOR = 4
PACED_SHARE = 0.1
PACED_FLOOR_NS = 1_000_000


def paced_writers(state: pl.DataFrame, streams: list[int]) -> set[tuple[int, int]]:
    """(stream, data direction) of `streams` whose new data after a peer ACK kept the writer's own
    clock, not the ACK's: across those packets the time since the ACK varied (by PACED_FACTOR times
    more, and by a tenth of its median or more) while the time since the writer's previous data
    stayed put. A sender that reacts to the ACKs moves with them (at a receiver's tap each of its
    packets a round trip after the ACK, whenever the ACK came), so these "reactions" are a paced
    application's writes: a Linux writer of 2000 bytes every 300 ms, whose peer's ACKs went from
    prompt to its 40 ms timer, read as a 260 ms round trip at a receiver's tap."""
    d = (state.select("stream", "dir", "ts_ns", "new_data", "payload_len", "reaction_ns")
         .filter(pl.col("stream").is_in(streams) & pl.col("new_data") & (pl.col("payload_len") > 0))
         .sort(["stream", "dir", "ts_ns"])
         .with_columns(gap=pl.col("ts_ns") - pl.col("ts_ns").shift(1).over(["stream", "dir"]))
         .filter(pl.col("reaction_ns").is_not_null() & pl.col("gap").is_not_null()))
    ranges = d.group_by(["stream", "dir"]).agg(
        pl.len().alias("n"), (pl.col("reaction_ns").max() - pl.col("reaction_ns").min()).alias("lag_range"),
        pl.col("reaction_ns").median().alias("lag_median"), (pl.col("gap").max() - pl.col("gap").min()).alias("gap_range"))
    paced = ranges.filter((pl.col("n") >= PACED_MIN) & (pl.col("lag_range") >= PACED_FLOOR_NS)
                          & (pl.col("lag_range") >= PACED_SHARE * pl.col("lag_median"))
                          & (pl.col("lag_range") > PACED_FACTOR * pl.col("gap_range")))
    return {(int(s), int(x)) for s, x in paced.select("stream", "dir").iter_rows()}


# ACK pairs needed before their spacing places the tap, the slack that receivers' own jitter and
# interrupt batching stay within, and the share of pairs that must be spread.
SPREAD_MIN = 8
SPREAD_SLACK_NS = 50_000
SPREAD_FACTOR = 3


def dispersed_acks(state: pl.DataFrame, streams: list[int]) -> set[tuple[int, int]]:
    """(stream, data direction) of `streams` whose tap is upstream of the path's bottleneck: the
    peer's ACKs come back spread out (by the bottleneck's serialization of the data between them)
    from data the tap saw leave back to back. Downstream of the bottleneck, at a receiver's tap, the
    data already arrives spread and each ACK follows its data, so consecutive ACKs are as far apart
    as the data they cover. Pairs of ACKs that each advanced to the end of a segment, at most
    DELAYED_ACK_NS apart (a receiver's timer spreads them too); spread when the ACKs' gap exceeds
    twice the data's plus SPREAD_SLACK_NS (or two ticks of a coarse clock), kept when within 1.5
    times plus the slack: spread on SPREAD_MIN pairs or more and SPREAD_FACTOR times the kept. A
    Linux writer of 2644 bytes every 105 ms at its own tap: its two segments left together and were
    ACKed 0.1 ms apart; without the handshake the 105 ms from each ACK to the next write read as a
    receiver's-tap round trip."""
    wanted = pl.col("stream").is_in(streams)
    acks = (state.select("stream", "dir", "ts_ns", "flag_ack", "acks_new", "payload_len", "ack_rel")
            .filter(wanted & pl.col("flag_ack") & pl.col("acks_new") & (pl.col("payload_len") == 0))
            .select("stream", sender=(1 - pl.col("dir").cast(pl.Int64)), at="ts_ns", end="ack_rel"))
    if acks.height < SPREAD_MIN:
        return set()
    data = (state.select("stream", "dir", "ts_ns", "new_data", "payload_len", "seq_end")
            .filter(wanted & pl.col("new_data") & (pl.col("payload_len") > 0))
            .group_by(["stream", "dir", "seq_end"]).agg(pl.col("ts_ns").min().alias("sent"))
            .select("stream", "sent", sender=pl.col("dir").cast(pl.Int64), end="seq_end"))
    pairs = (acks.join(data, on=["stream", "sender", "end"], how="inner")
             .sort(["stream", "sender", "at", "end"])  # (ACKs of one timestamp in sequence order: deterministic)
             .with_columns(g_a=pl.col("at") - pl.col("at").shift(1).over(["stream", "sender"]),
                           g_d=pl.col("sent") - pl.col("sent").shift(1).over(["stream", "sender"]))
             .filter(pl.col("g_a").is_not_null() & (pl.col("g_d") >= 0) & (pl.col("g_a") > 0)
                     & (pl.col("g_a") <= DELAYED_ACK_NS)))
    # A coarse clock (a tool writing milliseconds) puts a tick between data and ACKs stamped alike.
    slack = max(SPREAD_SLACK_NS, 2 * clock_step_ns(state["ts_ns"]))
    counts = pairs.group_by(["stream", "sender"]).agg(
        (pl.col("g_a") >= 2 * pl.col("g_d") + slack).sum().alias("spread"),
        (2 * pl.col("g_a") <= 3 * pl.col("g_d") + 2 * slack).sum().alias("kept"))
    upstream = counts.filter((pl.col("spread") >= SPREAD_MIN) & (pl.col("spread") >= SPREAD_FACTOR * pl.col("kept")))
    return {(int(s), int(x)) for s, x in upstream.select("stream", "sender").iter_rows()}


# A resend after a silence this long (RFC 1122's longest delayed ACK, 0.5 s) follows an original no
# ACK answered: the ACK that covers it answers the resend.
RESEND_SILENCE_NS = 500_000_000


def resend_rtts(state: pl.DataFrame, streams: list[int]) -> dict[tuple[int, int], int]:
    """Per (stream, data direction) of `streams`: the fastest time from a retransmission sent after
    RESEND_SILENCE_NS of silence to the peer's first ACK that covers it. Karn's rule sets aside every
    ACK of resent data, since it may answer the original; but an original no ACK answered in half a
    second never arrived (no receiver holds an ACK longer), so this ACK answers the resend, at once
    (it fills the receiver's hole): the path's round trip. Where every other ACK waited for the
    receiver's timer (a FreeBSD receiver's 100 ms, each flight of one segment) it is the only one."""
    wanted = pl.col("stream").is_in(streams)
    resends = (state.select("stream", "dir", "ts_ns", "retransmission", "silence_ns", "seq_end")
               .filter(wanted & pl.col("retransmission") & (pl.col("silence_ns") >= RESEND_SILENCE_NS))
               .select("stream", "ts_ns", "seq_end", sender=pl.col("dir").cast(pl.Int64)).sort("ts_ns"))
    if resends.height == 0:
        return {}
    acks = (state.select("stream", "dir", "ts_ns", "flag_ack", "acks_new", "ack_rel")
            .filter(wanted & pl.col("flag_ack") & pl.col("acks_new"))
            .select("stream", at="ts_ns", ack="ack_rel", sender=(1 - pl.col("dir").cast(pl.Int64))).sort("at"))
    joined = (resends.join_asof(acks, left_on="ts_ns", right_on="at", by=["stream", "sender"], strategy="forward",
                                check_sortedness=False)
              .filter(pl.col("at").is_not_null() & (pl.col("ack") >= pl.col("seq_end")) & (pl.col("at") > pl.col("ts_ns"))))
    fastest = joined.group_by(["stream", "sender"]).agg((pl.col("at") - pl.col("ts_ns")).min().alias("rtt"))
    return {(int(r["stream"]), int(r["sender"])): int(r["rtt"]) for r in fastest.iter_rows(named=True)}


def _int(v) -> int | None:
    return None if v is None else int(v)


# The TTLs (IPv6 hop limits) stacks start their packets with: 32 (old Windows), 60 (AIX), 64, 128,
# 255, and 1 where a protocol keeps to its link on purpose (eBGP, GTSM's peers). A packet seen with
# one of these was captured on its sender's own network segment, no router between; one seen below
# it crossed routers.
INITIAL_TTLS = (1, 32, 60, 64, 128, 255)


def sender_side(ttls: dict[tuple[int, int], int], stream: int, d: int) -> bool:
    """The IP TTLs put the tap on this sender's side of the path: its packets carry an initial TTL
    (no router between it and the tap) and its peer's arrive with routers behind them. `ttls`: the
    largest TTL seen per (stream, dir)."""
    own, peer = ttls.get((stream, d)), ttls.get((stream, 1 - d))
    return own in INITIAL_TTLS and peer is not None and peer not in INITIAL_TTLS


def timings(state: pl.DataFrame, ttls: dict[tuple[int, int], int] | None = None,
            loopback: frozenset[int] = frozenset()) -> dict[tuple[int, int], Timing]:
    """Timing per (stream, dir) for every direction that appears in the state table. `ttls`: the
    largest IP TTL per (stream, dir), where the capture had them (sender_side). `loopback`: streams
    between loopback addresses, whose tap is beside both ends (on_loopback)."""
    out = _timings(state, ttls)
    return {k: on_loopback(t) if k[0] in loopback else t for k, t in out.items()}


# A round trip between loopback addresses longer than this has something between the ends (a
# tunnel or relay that kept the addresses), not lo alone, whose round trip is the scheduler's.
LOOPBACK_RTT_MAX_NS = 1_000_000


def on_loopback(t: Timing) -> Timing:
    """A connection over lo is captured on the one host both ends share: the tap sees each packet
    as it is sent, beside every sender, so no reaction waits for a path. Its handshake's few
    microseconds split however the scheduler ran the two ends, which read as a tap "in the middle"
    (Zeek's websocket captures on 127.0.0.1). Not where the round trip shows a path (nDPI's
    openvpn.pcap: 22 ms to 127.0.0.1:443, the server's data 22 ms after each ACK)."""
    if t.path_rtt_ns is not None and t.path_rtt_ns > LOOPBACK_RTT_MAX_NS:
        return t
    return replace(t, lag_ns=0, vantage="sender")


def _timings(state: pl.DataFrame, ttls: dict[tuple[int, int], int] | None) -> dict[tuple[int, int], Timing]:
    out: dict[tuple[int, int], Timing] = {}
    hs = {r["stream"]: r for r in handshake_times(state).iter_rows(named=True)}
    lags = {(r["stream"], r["dir"]): r for r in data_lags(state).iter_rows(named=True)}
    # (Only streams without a handshake read their lag from data.)
    streams = state["stream"].unique()
    no_handshake = [int(v) for v in streams if v not in hs]
    reopens: dict[tuple[int, int], int] = {}
    edges: dict[tuple[int, int], int] = {}
    echoes: dict[tuple[int, int], int] = {}
    paced: set[tuple[int, int]] = set()
    upstream: set[tuple[int, int]] = set()
    resent: dict[tuple[int, int], int] = {}
    filled: dict[tuple[int, int], int] = {}
    unqueued: dict[tuple[int, int], tuple[int, int]] = {}
    if no_handshake:
        # Their rows alone, taken once (each reading below would otherwise scan the whole table).
        alone = state.filter(pl.col("stream").is_in(no_handshake))
        reopens = reopen_lags(alone, no_handshake)
        edges = edge_lags(alone, no_handshake)
        echoes = echo_lags(alone, no_handshake)
        # A paced writer's data after an ACK is no reaction to it (paced_writers): no lag is read from it.
        paced = paced_writers(alone, no_handshake)
        upstream = dispersed_acks(alone, no_handshake)
        resent = resend_rtts(alone, no_handshake)
        filled = filled_window_lags(alone, no_handshake)
        unqueued = unqueued_lags(alone, no_handshake)
    keys = state.select("stream", "dir").unique().sort(["stream", "dir"]).iter_rows()
    for stream, d in keys:
        h = hs.get(stream)
        r = lags.get((stream, d)) or {}
        if (stream, d) in unqueued:
            # Segments that reached the tap queued behind others are no reactions (unqueued_lags; read
            # only for streams without a handshake).
            lag_kept, n_kept = unqueued[(stream, d)]
            if r.get("lag") is None or lag_kept > r["lag"]:
                r = {**r, "lag": lag_kept, "lag_n": n_kept}
        # (One or two "reactions" are anecdotes: a request a think time after the ACK of the last
        # reply, the only new data that ever followed a peer ACK, read a 30 ms pause as the path.)
        reacted = r.get("lag") is not None and (r.get("lag_n") or 0) >= REACTIONS_MIN
        data_lag = int(r["lag"]) if reacted else None
        queueing = 0
        if r.get("d2a") is not None and r.get("d2a_median") is not None:
            queueing = max(0, int(r["d2a_median"] - r["d2a"]))
        if h is not None:
            rtt = int(h["t_ack"] - h["t_syn"])
            # The responder reacts to the SYN, the initiator to the SYN/ACK, each seen at the tap.
            lag = int(h["t_synack"] - h["t_syn"]) if d == 1 else int(h["t_ack"] - h["t_synack"])
            fastest = r.get("d2a_fastest")
            if (h["syn_resent"] and fastest is not None and 2 * fastest < rtt
                    and _classify(lag, rtt) == _classify(lag, int(fastest)) == "sender"):
                # The SYN was resent, so the SYN/ACK may answer either SYN, or be the peer's own
                # resend of one lost (Karn). At the sender's tap no data is ACKed sooner than a
                # round trip: data ACKed in under half the handshake's time shows the SYN/ACK came
                # late (233 ms after a resent SYN on a 0.4 ms path, which then called every
                # ACK-loss timeout spurious). Not where the handshake's reaction lag, as late, would
                # then exceed a sender's: that was timed by the same SYN/ACK.
                rtt = int(fastest)
            out[(stream, d)] = Timing(rtt, lag, _classify(lag, rtt), "handshake", rtt + queueing, _int(r.get("prompt")),
                                      data_lag_ns=data_lag)
            continue
        lag = int(r["lag"]) if reacted and (stream, d) not in paced else 0
        # The sender's side of the round trip is also the peer's data-to-ACK time at the tap (its
        # own data acknowledged by this sender): a sender whose window is open sends on without
        # waiting for ACKs, so data that happens to follow an ACK closely is no reaction to it
        # (a POP3 server's download seen at the client read a 0.9 ms lag on an 80 ms path).
        other = lags.get((stream, 1 - d)) or {}
        if other.get("d2a") is not None:
            lag = max(lag, int(other["d2a"]))
        if (stream, d) in upstream:
            # The ACKs' spacing puts the tap before the bottleneck, beside the sender
            # (dispersed_acks): data long after an ACK was written then, not released by it.
            lag = 0
        if (stream, d) in echoes:
            # The timestamps' echoes say which ACK each segment answered (echo_lags).
            lag = echoes[(stream, d)]
        if (stream, d) in edges:
            # So are reactions to a full window's edge moving (edge_lags).
            lag = edges[(stream, d)]
        if (stream, d) in reopens:
            # Reactions to reopened zero windows are the only ones no data in flight can fake (a
            # slow reader's own tap without its handshake read a 4 us lag on a 2 ms path).
            lag = reopens[(stream, d)]
        if (lag and (stream, d) in filled and (stream, d) not in reopens and r.get("d2a") is not None
                and _classify(lag, lag + int(r["d2a"])) == "receiver"):
            # A tap away from the sender (its data's reactions take time): a window it filled and
            # waited on times the whole round trip from the tap (filled_window_lags).
            lag = max(lag, filled[(stream, d)])
        if ttls and sender_side(ttls, stream, d):
            # A writer paced by its application, each write a fixed time after the peer's ACK,
            # shows "reactions" as long as a receiver-side tap's round trip; the TTLs say the tap
            # is beside the sender, where a reaction takes no time.
            lag = 0
        d2a = int(r["d2a"]) if r.get("d2a") is not None else None
        if d2a is not None and r.get("d2a_fastest") is not None:
            # A sender cannot hear an ACK sooner than a round trip after its data: the fastest few
            # show the path, however many more a reader's pace or a timer held (a Linux reader of
            # 4 KB every 20 ms: 10 prompt ACKs in slow start, 2.1 ms, then 200 at 14-20 ms).
            d2a = min(d2a, int(r["d2a_fastest"]))
        if d2a is not None and d2a >= DELAYED_ACK_NS and r.get("d2a_min") is not None:
            # Even the low percentile was held by the receiver's timer (a stop-and-go deadlock, a
            # writer of one short segment per ACK): the fastest ACK is the only one that shows the
            # path. (None comes sooner than the round trip: the tap saw the data before the ACK.)
            d2a = int(r["d2a_min"])
        if d2a is not None and d2a >= DELAYED_ACK_NS and resent.get((stream, d), d2a) < d2a:
            # Every ACK Karn's rule keeps was the timer's: the ACK of a resend nothing else answered
            # shows the path (resend_rtts).
            d2a = resent[(stream, d)]
        if d2a is not None and r.get("prompt") is not None and r["prompt"] < d2a:
            # An ACK of two segments or more comes at once (RFC 1122's every second segment): its
            # time bounds the path's. A slow reader's ACKs wait for its reads (each its window
            # update, 11 ms after the data), so even their low percentile was the reader's pace.
            d2a = int(r["prompt"])
        rtt = None if d2a is None else d2a + lag
        out[(stream, d)] = Timing(rtt, lag, _classify(lag, rtt), "data", None if rtt is None else rtt + queueing,
                                  _int(r.get("prompt")), data_lag_ns=data_lag)
    return out


def sender_view(state: pl.DataFrame, timings: dict[tuple[int, int], Timing]) -> pl.DataFrame:
    """Rewrites snd_una, in_flight, pipe, peer_window and usable_window as the *sender* knew them.

    At a tap away from the sender an ACK is seen one reaction lag before the sender acts on it, and
    data the sender has already sent is still on its way to the tap: the flight seen there (data
    arrived less ACKs sent) misses what is in the network. Taking the peer's ACKs and window as of
    one lag earlier than each of the sender's packets gives the flight the sender had.
    """
    from stallscope.analyzers.sender_state import sender_view_columns

    return sender_view_columns(state, {k: t.lag_ns for k, t in timings.items()})
