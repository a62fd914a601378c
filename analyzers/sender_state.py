"""Sender state at every packet: one vectorised Polars pass over a capture's packet table.

For each packet, the state of the TCP sender *of that packet's direction* right after it, as seen at
the capture point: snd_una (highest ACK the peer sent so far), snd_max (highest sequence sent), bytes
in flight (SACK-aware, RFC 6675 "pipe" without loss marks), the peer's window and what is left of it,
whether the packet carried new data or a retransmission (and which kind), and, on the peer's ACKs,
duplicate ACKs and RTT samples (Karn's rule: never from a range that was retransmitted).

Every column is documented in `STATE_COLUMNS` (docs/analysis-json.md renders them). No Python loop per
packet: the speed target of the analyzer rules one out.
"""

from __future__ import annotations

import polars as pl

# Columns read from the packet table (capture/schema.py).
PACKET_INPUT = [
    "frame", "ts_ns", "stream", "dir", "seq_rel", "ack_rel", "flag_syn", "flag_fin", "flag_rst", "flag_ack",
    "flag_psh", "win_scaled", "wscale_known", "payload_len", "payload_captured", "opt_mss", "opt_ts_val",
    "opt_ts_ecr", "opt_sack_perm", "opt_wscale", "sack_left", "sack_right", "superframe", "ip_len", "ip_id",
    "src_addr", "dst_addr", "src_port", "dst_port", "anomalies",
]

# A retransmission with at least this many duplicate ACKs (or SACKed bytes) before it is a fast
# retransmission (RFC 5681 3.2 uses three; Linux RACK and early retransmit fire on fewer).
FAST_DUPACKS = 1
# Silence before a retransmission that no duplicate ACK explains: below this it is not a timeout.
# Linux's minimum RTO is 200 ms (TCP_RTO_MIN), BSD's 1 s; a tail-loss probe fires at 2 x srtt.
TIMEOUT_FLOOR_NS = 150_000_000

STATE_COLUMNS: dict[str, str] = {
    "frame": "record number in the file (as the packet table)",
    "ts_ns": "capture timestamp, ns",
    "stream": "connection index",
    "dir": "direction of this packet: 0 initiator -> responder, 1 the reverse",
    "seq_end": "seq_rel + payload_len (+1 for SYN and FIN): the sequence number after this segment",
    "snd_una": "this direction's sender: highest cumulative ACK from the peer so far",
    "snd_max": "this direction's sender: highest sequence number sent so far (after this packet)",
    "in_flight": "snd_max - snd_una, bytes (never negative)",
    "sacked": "bytes above snd_una the peer's latest ACK reported in SACK blocks (DSACK excluded)",
    "pipe": "in_flight - sacked: RFC 6675 pipe without loss marking",
    "peer_window": "the peer's latest advertised window, bytes (scaled when known)",
    "usable_window": "snd_una + peer_window - snd_max: room the peer's window still gives",
    "new_data": "this packet carries sequence numbers never sent before in the capture",
    "retransmission": "this packet carries only sequence numbers sent before",
    "control_retransmission": "a SYN or FIN without data sent again (counted with retransmissions, as tshark does)",
    "retrans_kind": "timeout, fast (duplicate ACKs or SACK before it), or other; null if not a retransmission",
    "silence_ns": "time since the previous packet of this direction",
    "dup_ack": "a duplicate ACK for the other direction's data (no payload, same ACK and window, data outstanding)",
    "dup_run": "how many duplicate ACKs in a row this one is (0 for a new ACK)",
    "acks_new": "this packet's ACK advanced the other direction's snd_una",
    "rtt_ns": "on a data packet: time until the first peer ACK covering it (Karn: null if the range was resent)",
    "ack_delay_ns": "on an ACK: time since the newest data packet it covers was seen (the ACK's delay at this vantage)",
    "ack_segments": "on an ACK: how many data packets it was the first to cover",
    "acked_unseen": "this ACK covers sequence numbers the capture never showed (a capture drop, not loss)",
}


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
    pk = pk.with_columns(
        snd_max=pl.col("_own_max"),
        _prev_max=prev_own_max,
        silence_ns=pl.col("ts_ns") - pl.col("ts_ns").shift(1).over(["stream", "dir"]),
    )
    pk = pk.with_columns(
        new_data=has_payload & (pl.col("_prev_max").is_null() | (pl.col("seq_end") > pl.col("_prev_max"))),
        retransmission=has_payload & pl.col("_prev_max").is_not_null() & (pl.col("seq_end") <= pl.col("_prev_max")),
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
    # A DSACK block reports a duplicate the peer sent: that ACK answers it, whatever is outstanding.
    outstanding = outstanding | arrived.fill_null(False) | pl.col("_dsack")
    pk = pk.with_columns(
        dup_ack=(pure & (pl.col("ack_rel") == prev_ack) & (pl.col("win_scaled") == prev_win) & outstanding).fill_null(False),
        acks_new=(pl.col("_ack") > pl.col("_ack").shift(1).cum_max().over(["stream", "dir"])).fill_null(
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
