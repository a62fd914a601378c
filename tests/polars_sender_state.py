"""The analyzer's per-packet sender state written as vectorised Polars window functions: the
first implementation, kept as an independent oracle for the native pass that replaced it
(native/src/analysis). tests/test_sender_state_native.py holds the two equal column by column.
"""

from __future__ import annotations

import polars as pl

from stallscope.analyzers.sender_state import FAST_DUPACKS, PACKET_INPUT, STATE_COLUMNS, TIMEOUT_FLOOR_NS


def _per_direction(col: pl.Expr, direction: int, where: pl.Expr | None = None) -> pl.Expr:
    """`col` on rows of `direction` (and `where`), cumulative maximum forward-filled over the stream."""
    cond = pl.col("dir") == direction
    if where is not None:
        cond = cond & where
    return pl.when(cond).then(col).cum_max().forward_fill().over("stream")


def _own(name: str) -> pl.Expr:
    return pl.when(pl.col("dir") == 0).then(pl.col(f"{name}_0")).otherwise(pl.col(f"{name}_1"))


def _peer(name: str) -> pl.Expr:
    return pl.when(pl.col("dir") == 0).then(pl.col(f"{name}_1")).otherwise(pl.col(f"{name}_0"))


def sender_state(packets: pl.DataFrame) -> pl.DataFrame:
    """The per-packet state table (columns `STATE_COLUMNS`), rows ordered by stream, time, frame."""
    pk = packets.sort(["stream", "ts_ns", "frame"])
    seq_end = (
        pl.col("seq_rel") + pl.col("payload_len").cast(pl.Int64)
        + pl.col("flag_syn").cast(pl.Int64) + pl.col("flag_fin").cast(pl.Int64)
    )
    is_ack = pl.col("flag_ack") & ~pl.col("flag_rst")
    # DSACK (RFC 2883): a first block below the cumulative ACK reports a duplicate, not a hole.
    dsack = (pl.col("sack_left").list.len() > 0) & (pl.col("sack_left").list.first() < pl.col("ack_rel"))
    sack_total = pl.col("sack_right").list.sum().fill_null(0) - pl.col("sack_left").list.sum().fill_null(0)
    dsack_len = pl.when(dsack).then(pl.col("sack_right").list.first() - pl.col("sack_left").list.first()).otherwise(0)
    pk = pk.with_columns(
        seq_end=seq_end,
        _ack=pl.when(is_ack).then(pl.col("ack_rel")),
        _sack=(sack_total - dsack_len).clip(lower_bound=0),
        _dsack=dsack,
    )
    # Per direction d: snd_max_d (highest seq end sent by d) and snd_una_d (highest ACK from 1-d).
    pk = pk.with_columns(
        *[_per_direction(pl.col("seq_end"), d).alias(f"snd_max_{d}") for d in (0, 1)],
        *[_per_direction(pl.col("_ack"), 1 - d).alias(f"snd_una_{d}") for d in (0, 1)],
        # Latest window and SACK report each side gave (not cumulative: plain forward fill).
        *[pl.when(pl.col("dir") == 1 - d).then(pl.col("win_scaled")).forward_fill().over("stream").alias(f"wnd_{d}")
          for d in (0, 1)],
        *[pl.when((pl.col("dir") == 1 - d) & is_ack).then(pl.col("_sack")).forward_fill().over("stream")
          .alias(f"sacked_{d}") for d in (0, 1)],
    )
    prev_own_max = pl.col("_own_max").shift(1).over(["stream", "dir"])
    pk = pk.with_columns(
        _own_max=_own("snd_max"),
        snd_una=_own("snd_una"),
        peer_window=_own("wnd"),
        sacked=_own("sacked").fill_null(0),
        _peer_max=_peer("snd_max"),
    )
    has_payload = pl.col("payload_len") > 0
    _data_end = pl.col("seq_end") - pl.col("flag_fin").cast(pl.Int64)
    pk = pk.with_columns(
        snd_max=pl.col("_own_max"),
        _prev_max=prev_own_max,
        silence_ns=pl.col("ts_ns") - pl.col("ts_ns").shift(1).over(["stream", "dir"]),
    )
    pk = pk.with_columns(
        # (Payload all sent before is resent even where a FIN rides on it for the first time.)
        new_data=has_payload & (pl.col("_prev_max").is_null() | (_data_end > pl.col("_prev_max"))),
        retransmission=has_payload & pl.col("_prev_max").is_not_null() & (_data_end <= pl.col("_prev_max")),
        control_retransmission=~has_payload & (pl.col("flag_syn") | pl.col("flag_fin")) & pl.col("_prev_max").is_not_null()
        & (pl.col("seq_end") <= pl.col("_prev_max")),
        snd_una=pl.col("snd_una").fill_null(pl.col("seq_rel").first().over(["stream", "dir"])),
    )
    pk = pk.with_columns(
        in_flight=(pl.col("snd_max") - pl.col("snd_una")).clip(lower_bound=0),
    )
    pk = pk.with_columns(
        pipe=(pl.col("in_flight") - pl.col("sacked")).clip(lower_bound=0),
        usable_window=pl.col("snd_una") + pl.col("peer_window") - pl.col("snd_max"),
    )
    pk = _ack_roles(pk)
    prev_dir, prev_ts = pl.col("dir").shift(1).over("stream"), pl.col("ts_ns").shift(1).over("stream")
    prev_advanced = (pl.col("acks_new") & (pl.col("payload_len") == 0)).shift(1).over("stream").fill_null(False)
    pk = pk.with_columns(reaction_ns=pl.when(pl.col("new_data") & (prev_dir != pl.col("dir")) & prev_advanced)
                         .then(pl.col("ts_ns") - prev_ts))
    pk = _retransmission_kinds(pk)
    pk = _rtt_samples(pk)
    return pk.select(list(STATE_COLUMNS) + [c for c in PACKET_INPUT if c not in STATE_COLUMNS])


def _ack_roles(pk: pl.DataFrame) -> pl.DataFrame:
    """Duplicate ACKs, ACKs that advance, ACKs of data the capture never saw."""
    pure = (pl.col("payload_len") == 0) & pl.col("flag_ack") & ~pl.col("flag_syn") & ~pl.col("flag_fin") & ~pl.col("flag_rst")
    prev_ack = pl.col("_ack").shift(1).over(["stream", "dir"])
    prev_win = pl.col("win_scaled").shift(1).over(["stream", "dir"])
    # Data of the other direction outstanding when this ACK was sent (its snd_max above this ACK),
    # or data (or a FIN) of it arrived since this side's previous ACK (a resend of what was already
    # acknowledged is answered by a duplicate ACK too, as tshark counts it).
    outstanding = pl.col("_peer_max") > pl.col("ack_rel")
    carries = (pl.col("payload_len") > 0) | pl.col("flag_fin")
    peer_data = [pl.when((pl.col("dir") == 1 - d) & carries).then(1).otherwise(0).cum_sum()
                 .over("stream") for d in (0, 1)]
    pk = pk.with_columns(_pd=pl.when(pl.col("dir") == 0).then(peer_data[0]).otherwise(peer_data[1]))
    arrived = pl.col("_pd") > pl.col("_pd").shift(1).over(["stream", "dir"])
    # A DSACK block reports a duplicate the peer sent: that ACK answers it, whatever is outstanding;
    # a SACK block above the ACK reports data the peer sent beyond it (outstanding, though a
    # capture of the ACKs alone never showed it).
    outstanding = outstanding | arrived.fill_null(False) | pl.col("_dsack") | (pl.col("_sack") > 0)
    pk = pk.with_columns(
        dup_ack=(pure & (pl.col("ack_rel") == prev_ack) & (pl.col("win_scaled") == prev_win) & outstanding).fill_null(False),
        acks_new=(pl.col("_ack") > pl.col("_ack").shift(1).cum_max().forward_fill().over(["stream", "dir"])).fill_null(
            pl.col("_ack").is_not_null()),
        acked_unseen=(pl.col("_ack") > pl.col("_peer_max")).fill_null(False),
    )
    # Run length of duplicate ACKs: rows since the last non-duplicate ACK of this direction.
    pk = pk.with_columns(_run_id=(~pl.col("dup_ack")).cum_sum().over(["stream", "dir"]))
    pk = pk.with_columns(
        dup_run=pl.when(pl.col("dup_ack")).then(pl.col("dup_ack").cum_sum().over(["stream", "dir", "_run_id"])).otherwise(0)
    )
    return pk


def _retransmission_kinds(pk: pl.DataFrame) -> pl.DataFrame:
    """Timeout or fast: what the peer said between the first send and the retransmission."""
    # The peer's duplicate-ACK run and SACK report as last seen before each packet of ours.
    peer_run = [pl.when(pl.col("dir") == 1 - d).then(pl.col("dup_run")).forward_fill().over("stream").alias(f"_run_{d}")
                for d in (0, 1)]
    pk = pk.with_columns(*peer_run)
    pk = pk.with_columns(_peer_run=_own("_run").fill_null(0))
    fast = (pl.col("_peer_run") >= FAST_DUPACKS) | (pl.col("sacked") > 0)
    timeout = pl.col("silence_ns").fill_null(0) >= TIMEOUT_FLOOR_NS
    return pk.with_columns(
        retrans_kind=pl.when(~pl.col("retransmission")).then(None)
        .when(timeout).then(pl.lit("timeout"))
        .when(fast).then(pl.lit("fast"))
        .otherwise(pl.lit("other"))
    )


def _rtt_samples(pk: pl.DataFrame) -> pl.DataFrame:
    """RTT per new-data packet (first peer ACK covering it) and ACK delay per advancing ACK."""
    data = (
        pk.filter(pl.col("new_data"))
        .select("stream", "dir", "frame", "ts_ns", "seq_end")
        .with_columns(_key=pl.col("stream").cast(pl.Int64) * 2 + pl.col("dir").cast(pl.Int64))
        .sort(["_key", "seq_end"])
    )
    acks = (
        pk.filter(pl.col("acks_new"))
        .select(pl.col("stream"), (1 - pl.col("dir").cast(pl.Int64)).alias("_data_dir"), pl.col("ack_rel").alias("_ackv"),
                pl.col("ts_ns").alias("_ack_ts"), pl.col("frame").alias("_ack_frame"))
        .with_columns(_key=pl.col("stream").cast(pl.Int64) * 2 + pl.col("_data_dir"))
        .sort(["_key", "_ackv"])
    )
    retx = pk.filter(pl.col("retransmission")).select(
        (pl.col("stream").cast(pl.Int64) * 2 + pl.col("dir").cast(pl.Int64)).alias("_key"), pl.col("ts_ns").alias("_rt_ts"))
    if data.height == 0 or acks.height == 0:
        return pk.with_columns(rtt_ns=pl.lit(None, pl.Int64), ack_delay_ns=pl.lit(None, pl.Int64),
                               ack_segments=pl.lit(None, pl.UInt32))
    matched = data.join_asof(acks.drop("stream", "_data_dir"), left_on="seq_end", right_on="_ackv", by="_key",
                             strategy="forward", check_sortedness=False)
    matched = matched.filter(pl.col("_ack_ts").is_not_null() & (pl.col("_ack_ts") >= pl.col("ts_ns")))
    # Karn: a sample is kept only if no retransmission of that direction fell between send and ACK.
    if retx.height:
        retx = retx.sort(["_key", "_rt_ts"])
        nxt = matched.sort(["_key", "ts_ns"]).join_asof(
            retx.rename({"_rt_ts": "_next_rt"}), left_on="ts_ns", right_on="_next_rt", by="_key", strategy="forward",
            check_sortedness=False)
        matched = nxt.filter(pl.col("_next_rt").is_null() | (pl.col("_next_rt") > pl.col("_ack_ts")))
    rtt = matched.select("stream", "frame", (pl.col("_ack_ts") - pl.col("ts_ns")).alias("rtt_ns"))
    # An ACK's delay: from the newest data it covers (the last matched data packet) to the ACK.
    delay = (
        matched.group_by(["stream", "_ack_frame"])
        .agg((pl.col("_ack_ts").first() - pl.col("ts_ns").max()).alias("ack_delay_ns"),
             pl.len().cast(pl.UInt32).alias("ack_segments"))
        .rename({"_ack_frame": "frame"})
    )
    return pk.join(rtt, on=["stream", "frame"], how="left").join(delay, on=["stream", "frame"], how="left")


def sender_view(state: pl.DataFrame, timings: dict) -> pl.DataFrame:
    """Rewrites snd_una, in_flight, pipe, peer_window and usable_window as the *sender* knew them.

    At a tap away from the sender an ACK is seen one reaction lag before the sender acts on it, and
    data the sender has already sent is still on its way to the tap: the flight seen there (data
    arrived less ACKs sent) misses what is in the network. Taking the peer's ACKs and window as of
    one lag earlier than each of the sender's packets gives the flight the sender had.
    """
    lags = pl.DataFrame(
        {"stream": [k[0] for k in timings], "dir": [k[1] for k in timings], "_lag": [t.lag_ns for t in timings.values()]},
        schema={"stream": pl.UInt32, "dir": pl.UInt8, "_lag": pl.Int64},
    )
    key = pl.col("stream").cast(pl.Int64) * 2
    acks = (
        state.filter(pl.col("flag_ack") & ~pl.col("flag_rst"))
        .select((key + 1 - pl.col("dir").cast(pl.Int64)).alias("_key"), pl.col("ts_ns").alias("_ats"),
                pl.col("ack_rel").cum_max().over(["stream", "dir"]).alias("_una"), pl.col("win_scaled").alias("_wnd"))
        .sort(["_key", "_ats"])
    )
    rows = (
        state.with_row_index("_row").join(lags, on=["stream", "dir"], how="left")
        .with_columns(_key=key + pl.col("dir").cast(pl.Int64), _at=pl.col("ts_ns") - pl.col("_lag").fill_null(0) // 2)
    )
    seen = rows.sort(["_key", "_at"]).join_asof(acks, left_on="_at", right_on="_ats", by="_key", strategy="backward",
                                                check_sortedness=False).sort("_row")
    una = pl.col("_una").clip(upper_bound=pl.col("snd_max"))
    una = pl.when(pl.col("_una").is_null()).then(pl.col("snd_una")).otherwise(una)
    wnd = pl.col("_wnd").fill_null(pl.col("peer_window"))
    out = seen.with_columns(snd_una=una, peer_window=wnd).with_columns(
        in_flight=(pl.col("snd_max") - pl.col("snd_una")).clip(lower_bound=0))
    out = out.with_columns(
        pipe=(pl.col("in_flight") - pl.col("sacked")).clip(lower_bound=0),
        usable_window=pl.col("snd_una") + pl.col("peer_window") - pl.col("snd_max"),
    )
    return out.select(state.columns)
