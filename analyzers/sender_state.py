"""Sender state at every packet: one vectorised Polars pass over a capture's packet table.

For each packet, the state of the TCP sender *of that packet's direction* right after it, as seen at
the capture point: snd_una (highest ACK the peer sent so far), snd_max (highest sequence sent), bytes
in flight (SACK-aware, RFC 6675 "pipe" without loss marks), the peer's window and what is left of it,
whether the packet carried new data or a retransmission (and which kind), and, on the peer's ACKs,
duplicate ACKs and RTT samples (Karn's rule: never from a range that was retransmitted).

Every column is documented in `STATE_COLUMNS` (docs/analysis-json.md renders them). The walk itself
is native (native/src/analysis/sender_state.rs): one linear pass per connection, where the same
rules written as Polars window functions (kept as the test oracle, tests/polars_sender_state.py)
took seconds on a two-million-packet capture. No Python loop per packet.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from stallscope import _native
from stallscope.packets.decoder import frame_from_columns

# Columns read from the packet table (packets/schema.py).
PACKET_INPUT = [
    "frame", "ts_ns", "stream", "dir", "seq_rel", "ack_rel", "flag_syn", "flag_fin", "flag_rst", "flag_ack",
    "flag_psh", "win_scaled", "wscale_known", "payload_len", "payload_captured", "opt_mss", "opt_ts_val",
    "opt_ts_ecr", "opt_sack_perm", "opt_wscale", "sack_left", "sack_right", "superframe", "ip_len", "ip_id",
    "src_addr", "dst_addr", "src_port", "dst_port", "anomalies",
]

# The native pass's rules (native/src/analysis/sender_state.rs), stated here for the docs and the
# oracle: a retransmission with at least FAST_DUPACKS duplicate ACKs (or SACKed bytes) before it is
# fast (RFC 5681 3.2 uses three; Linux RACK and early retransmit fire on fewer); one after at least
# TIMEOUT_FLOOR_NS of silence that no duplicate ACK explains is a timeout (Linux's minimum RTO is
# 200 ms, BSD's 1 s; a tail-loss probe fires at 2 x srtt).
FAST_DUPACKS = 1
TIMEOUT_FLOOR_NS = 150_000_000
_KINDS = {1: "timeout", 2: "fast", 3: "other"}

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
    "new_data": "this packet carries payload never sent before in the capture",
    "retransmission": "this packet's payload was all sent before (a FIN riding on it for the first time included)",
    "control_retransmission": "a SYN or FIN without data sent again (counted with retransmissions, as tshark does)",
    "retrans_kind": "timeout, fast (duplicate ACKs or SACK before it), or other; null if not a retransmission",
    "silence_ns": "time since the previous packet of this direction",
    "reaction_ns": "on new data whose connection's previous packet was a peer ACK that advanced, without data (data after the peer's is a turnaround): the time since that ACK (the sender's reaction at this vantage)",
    "dup_ack": "a duplicate ACK for the other direction's data (no payload, same ACK and window, data outstanding: seen, or shown by SACK blocks above the ACK)",
    "dup_run": "how many duplicate ACKs in a row this one is (0 for a new ACK)",
    "acks_new": "this packet's ACK advanced the other direction's snd_una",
    "rtt_ns": "on a data packet: time until the first peer ACK covering it (Karn: null if the range was resent)",
    "ack_delay_ns": "on an ACK: time since the newest data packet it covers was seen (the ACK's delay at this vantage)",
    "ack_segments": "on an ACK: how many data packets it was the first to cover",
    "acked_unseen": "this ACK covers sequence numbers the capture never showed (a capture drop, not loss)",
}


def is_dsack() -> pl.Expr:
    """DSACK (RFC 2883): an ACK whose first SACK block lies below its cumulative ACK reports a
    duplicate, not a hole."""
    return (pl.col("sack_left").list.len() > 0) & (pl.col("sack_left").list.first() < pl.col("ack_rel"))


def _inputs(pk: pl.DataFrame) -> dict[str, np.ndarray]:
    """The columns the native pass reads, as contiguous arrays (flags as uint8)."""
    dsack = is_dsack()
    sack_total = pl.col("sack_right").list.sum().fill_null(0) - pl.col("sack_left").list.sum().fill_null(0)
    dsack_len = pl.when(dsack).then(pl.col("sack_right").list.first() - pl.col("sack_left").list.first()).otherwise(0)
    flags = ["flag_syn", "flag_fin", "flag_rst", "flag_ack"]
    cols = pk.select(
        pl.col("stream").cast(pl.UInt32), pl.col("dir").cast(pl.UInt8), "ts_ns", pl.col("frame").cast(pl.UInt64),
        "seq_rel", "ack_rel",
        *[pl.col(f).cast(pl.UInt8) for f in flags], pl.col("payload_len").cast(pl.UInt32), "win_scaled",
        sacked=(sack_total - dsack_len).clip(lower_bound=0).cast(pl.Int64), dsack=dsack.fill_null(False).cast(pl.UInt8),
    )
    return {c: np.ascontiguousarray(cols[c].to_numpy()) for c in cols.columns}


def by_stream_time(packets: pl.DataFrame) -> pl.DataFrame:
    """Rows ordered by stream, time and frame (the documented order of the per-packet table). A
    capture in time order needs only a linear pass (native/src/analysis/order.rs), and a table
    already in this order is returned as it is."""
    keys = packets.select(pl.col("stream").cast(pl.UInt32), "ts_ns", pl.col("frame").cast(pl.UInt64))
    order = _native.analysis_order(*(np.ascontiguousarray(keys[c].to_numpy()) for c in keys.columns))
    if order is None:
        return packets
    return packets[pl.Series(np.frombuffer(order, dtype=np.uint64))]


def sender_state(packets: pl.DataFrame) -> pl.DataFrame:
    """The per-packet state table (columns `STATE_COLUMNS`), in the input's row order (the native
    pass walks each connection in time order whatever the order of the rows)."""
    pk = packets
    state = frame_from_columns(_native.analysis_sender_state(_inputs(pk)))
    state = state.with_columns(
        retrans_kind=pl.col("retrans_kind").replace_strict(_KINDS, default=None, return_dtype=pl.String))
    pk = pk.drop([c for c in state.columns if c in pk.columns]).hstack(state)
    return pk.select(list(STATE_COLUMNS) + [c for c in PACKET_INPUT if c not in STATE_COLUMNS and c in pk.columns])


def sender_view_columns(state: pl.DataFrame, lags: dict[tuple[int, int], int]) -> pl.DataFrame:
    """snd_una, peer_window, in_flight, pipe and usable_window re-read as the sender knew them
    (native/src/analysis/sender_view.rs; analyzers/vantage.py says why)."""
    cols = _inputs(state)
    extra = state.select(
        "snd_una", "snd_max", "sacked", peer_window=pl.col("peer_window").fill_null(0),
        peer_window_valid=pl.col("peer_window").is_not_null().cast(pl.UInt8))
    cols.update({c: np.ascontiguousarray(extra[c].to_numpy()) for c in extra.columns})
    view = frame_from_columns(_native.analysis_sender_view(cols, [(s, d, lag) for (s, d), lag in lags.items()]))
    return state.with_columns(view.get_columns())
