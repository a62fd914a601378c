"""Per-packet readings that the stall rules do not need, added to the packet table when it is asked
for (`FileAnalysis.state`, `stallscope analyze --packets`): RTT samples from timestamp echoes (RFC
7323), the sender's retransmission-timer estimate (RFC 6298's SRTT, RTTVAR and RTO over the trace's
RTT samples: the echoes where there are, else Karn's) and whether each
retransmission was needed (a DSACK reported it as a duplicate, RFC 2883, or the ACK that covered it
echoed a timestamp older than its own, the Eifel test of RFC 3522: the original had arrived).

Both are Polars passes over the whole table; the analysis itself never builds them.
"""

from __future__ import annotations

import polars as pl

from stallscope.analyzers.sender_state import is_dsack

KEYS = ["stream", "dir"]
# RFC 6298 (2.3): SRTT gains 1/8 of each sample, RTTVAR 1/4 of each deviation.
ALPHA = 1 / 8
BETA = 1 / 4
K = 4

COLUMNS = {
    "rtt_ts_ns": "on an ACK that advanced and echoes a timestamp: time since the peer's data packet that first "
                 "carried the echoed TSval (RFC 7323 RTTM, a sample across retransmissions)",
    "srtt_ns": "this direction's sender: smoothed RTT after the samples seen so far (RFC 6298 over rtt_ts_ns where "
               "the direction's ACKs echo timestamps, else rtt_ns, each sample taken when its ACK arrived; null "
               "before the first)",
    "rttvar_ns": "this direction's sender: RTT variation, as srtt_ns",
    "rto_ns": "srtt_ns + 4 x rttvar_ns: RFC 6298's timeout without its 1 s floor (Linux floors it at 200 ms)",
    "spurious_retransmission": "on a retransmission: a DSACK reported it as a duplicate, the ACK that covered it "
                               "echoed a timestamp older than its own (Eifel), or the peer had acknowledged it before: "
                               "the original had arrived; null on other packets",
}


def add(state: pl.DataFrame) -> pl.DataFrame:
    """`state` (the packet table, each connection's rows in time order) with COLUMNS added."""
    return _spurious(_rto(_echo_rtt(state)))


def _echo_rtt(state: pl.DataFrame) -> pl.DataFrame:
    """rtt_ts_ns: on an ACK that advanced and echoes a timestamp, the time since the data packet
    that first carried that TSval (RFC 7323's RTTM: the echo names the transmission, so a resent
    segment's ACK is a sample too, where Karn's rule gives none)."""
    rows = state.select(*KEYS, "ts_ns", "payload_len", "opt_ts_val", "opt_ts_ecr", "acks_new").with_row_index("_row")
    sent = (rows.filter((pl.col("payload_len") > 0) & pl.col("opt_ts_val").is_not_null())
            .group_by(*KEYS, pl.col("opt_ts_val").alias("echo")).agg(pl.col("ts_ns").min().alias("sent_ns"))
            .with_columns(_peer(state)))
    acks = rows.filter(pl.col("acks_new") & pl.col("opt_ts_ecr").is_not_null()).select(
        "_row", *KEYS, "ts_ns", pl.col("opt_ts_ecr").alias("echo"))
    if sent.is_empty() or acks.is_empty():
        return state.with_columns(pl.lit(None, pl.Int64).alias("rtt_ts_ns"))
    hit = acks.join(sent, on=[*KEYS, "echo"], how="inner").select(
        "_row", (pl.col("ts_ns") - pl.col("sent_ns")).alias("rtt_ts_ns")).filter(pl.col("rtt_ts_ns") >= 0)
    # (Only the row index is joined: a join of the whole table copies every column.)
    column = rows.select("_row").join(hit, on="_row", how="left", maintain_order="left")["rtt_ts_ns"]
    return state.with_columns(column)


def _rto(state: pl.DataFrame) -> pl.DataFrame:
    # The samples: each direction's echoes where it has them (RFC 7323), else Karn's (rtt_ns on
    # the data packet, taken when its ACK came).
    karn = (state.select(*KEYS, "ts_ns", "rtt_ns").filter(pl.col("rtt_ns").is_not_null())
            .select(*KEYS, (pl.col("ts_ns") + pl.col("rtt_ns")).alias("at"), pl.col("rtt_ns").cast(pl.Float64).alias("r")))
    echo = (state.select("stream", _peer(state),
                         pl.col("ts_ns").alias("at"), "rtt_ts_ns").filter(pl.col("rtt_ts_ns").is_not_null())
            .select(*KEYS, "at", pl.col("rtt_ts_ns").cast(pl.Float64).alias("r")))
    with_echo = echo.select(KEYS).unique()
    samples = pl.concat([karn.join(with_echo, on=KEYS, how="anti"), echo]).sort([*KEYS, "at"])
    if samples.is_empty():
        return state.with_columns(pl.lit(None, pl.Int64).alias(c) for c in ("srtt_ns", "rttvar_ns", "rto_ns"))
    srtt = pl.col("r").ewm_mean(alpha=ALPHA, adjust=False).over(KEYS)
    samples = samples.with_columns(srtt=srtt)
    # RTTVAR's first value is R/2; then it takes |SRTT - R| against the SRTT before this sample.
    deviation = (pl.col("srtt").shift(1).over(KEYS) - pl.col("r")).abs().fill_null(pl.col("r") / 2)
    samples = samples.with_columns(rttvar=deviation.ewm_mean(alpha=BETA, adjust=False).over(KEYS))
    samples = samples.select(*KEYS, "at", pl.col("srtt").round().cast(pl.Int64).alias("srtt_ns"),
                             pl.col("rttvar").round().cast(pl.Int64).alias("rttvar_ns"))
    # Each connection's rows are in time order, so each (stream, dir)'s are too: the as-of join
    # needs no sort, and it keeps the rows' order.
    est = state.select(*KEYS, "ts_ns").join_asof(samples, left_on="ts_ns", right_on="at", by=KEYS,
                                                 strategy="backward", check_sortedness=False)
    return state.with_columns(est["srtt_ns"], est["rttvar_ns"], (est["srtt_ns"] + K * est["rttvar_ns"]).alias("rto_ns"))


def _spurious(state: pl.DataFrame) -> pl.DataFrame:
    rows = state.with_row_index("_row")
    resends = rows.select("_row", *KEYS, "ts_ns", "seq_rel", "seq_end", "opt_ts_val", "retransmission",
                          "payload_len").filter(pl.col("retransmission") & (pl.col("payload_len") > 0))
    if resends.is_empty():
        return state.with_columns(pl.lit(None, pl.Boolean).alias("spurious_retransmission"))
    # The peer's ACKs, keyed by the direction whose data they acknowledge.
    peer = _peer(state)
    acks = rows.select("stream", "dir", "ts_ns", "flag_ack", "ack_rel", "opt_ts_ecr").filter(
        pl.col("flag_ack") & pl.col("ack_rel").is_not_null()).select(
        "stream", peer, pl.col("ts_ns").alias("ack_ts"), "ack_rel", "opt_ts_ecr")
    # DSACK (sender_state.is_dsack) whose block covers the resent range, after it.
    # (The list columns are read only on the ACKs that carry blocks.)
    dsack = (rows.select("stream", "dir", "ts_ns", "ack_rel", "sack_left", "sack_right")
             .filter(is_dsack())
             .select("stream", peer, pl.col("ts_ns").alias("ack_ts"), pl.col("sack_left").list.first().alias("lo"),
                     pl.col("sack_right").list.first().alias("hi"), "ack_rel"))
    dup = (resends.join(dsack, on=KEYS, how="inner")
           .filter((pl.col("ack_ts") >= pl.col("ts_ns")) & (pl.col("lo") <= pl.col("seq_rel"))
                   & (pl.col("hi") >= pl.col("seq_end")))
           .select("_row").unique())
    # Eifel: the first ACK that covered the resend echoes a timestamp older than the resend's, and
    # reaches past it (an ACK that ends at it may be a delayed ACK of two resends, echoing the first).
    covering = acks.select(*KEYS, "ack_ts", "ack_rel", "opt_ts_ecr").sort([*KEYS, "ack_rel", "ack_ts"])
    first = (resends.filter(pl.col("opt_ts_val").is_not_null()).sort([*KEYS, "seq_end"])
             .join_asof(covering, left_on="seq_end", right_on="ack_rel", by=KEYS, strategy="forward",
                        check_sortedness=False)
             .filter((pl.col("ack_ts") >= pl.col("ts_ns")) & (pl.col("ack_rel") > pl.col("seq_end")))
             .filter(pl.col("opt_ts_ecr").is_not_null() & _older(pl.col("opt_ts_ecr"), pl.col("opt_ts_val")))
             .select("_row"))
    # Data the peer had acknowledged before it was sent again (a go-back-N past what arrived).
    acked = rows.select("_row", "retransmission", "payload_len", "seq_end", "snd_una").filter(
        pl.col("retransmission") & (pl.col("payload_len") > 0) & (pl.col("seq_end") <= pl.col("snd_una"))).select("_row")
    spurious = pl.concat([dup, first, acked]).unique()
    resent = pl.col("retransmission") & (pl.col("payload_len") > 0)
    flag = rows.select(pl.when(resent).then(pl.col("_row").is_in(spurious["_row"].implode()))
                       .otherwise(pl.lit(None, pl.Boolean)).alias("spurious_retransmission"))
    return state.with_columns(flag.to_series())


def _peer(state: pl.DataFrame) -> pl.Expr:
    """The other direction's number as `dir`: a peer's ACKs keyed by the data they acknowledge."""
    return (1 - pl.col("dir").cast(pl.Int16)).cast(state.schema["dir"]).alias("dir")


def _older(a: pl.Expr, b: pl.Expr) -> pl.Expr:
    """TCP timestamp a is older than b (modulo 2^32, RFC 7323's comparison)."""
    gap = (b.cast(pl.Int64) - a.cast(pl.Int64)) % (1 << 32)
    return (gap > 0) & (gap < (1 << 31))
