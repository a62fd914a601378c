"""The documented schema of the connection table: one row per TCP connection (stream).

Connection-level columns come first, then every per-direction column twice, as `orig_<name>`
(sent by the initiator) and `resp_<name>` (sent by the responder), as in Zeek's conn.log.
Times are integer nanoseconds; windows are in bytes, scaled when `wscale_known`.
docs/flows-json.md describes each column; this module is the single source of names and types.
"""

from __future__ import annotations

import polars as pl

CONNECTION_COLUMNS: dict[str, pl.DataType] = {
    "stream": pl.UInt32(),  # 0-based, in order of first packet (tshark's tcp.stream)
    "ip_version": pl.UInt8(),
    "orig_addr": pl.String(),
    "orig_port": pl.UInt16(),
    "resp_addr": pl.String(),
    "resp_port": pl.UInt16(),
    "start_captured": pl.Boolean(),  # the initiator's SYN is in the capture
    "port_reused": pl.Boolean(),  # a later connection reused this 4-tuple
    "wscale_known": pl.Boolean(),  # both SYNs seen: windows below are exact
    "first_frame": pl.UInt64(),
    "last_frame": pl.UInt64(),
    "first_ts_ns": pl.Int64(),
    "last_ts_ns": pl.Int64(),
    "duration_ns": pl.Int64(),
    "max_idle_ns": pl.Int64(),  # longest gap between two packets of the connection
    "handshake_rtt_ns": pl.Int64(),  # SYN -> first ACK after SYN/ACK; null if retransmitted/unseen
    "packets": pl.UInt64(),
}

DIRECTION_COLUMNS: dict[str, pl.DataType] = {
    "mss": pl.UInt16(),  # advertised in this side's SYN
    "wscale": pl.UInt8(),  # as sent in the SYN (values > 14 are used as 14)
    "sack_permitted": pl.Boolean(),
    "timestamps": pl.Boolean(),
    "packets": pl.UInt64(),
    "frame_bytes": pl.UInt64(),  # on-the-wire frame lengths
    "payload_bytes": pl.UInt64(),
    "unique_bytes": pl.UInt64(),  # payload above the highest sequence sent before
    "retrans_packets": pl.UInt64(),  # segments with payload starting below that highest sequence
    "retrans_bytes": pl.UInt64(),  # payload_bytes == unique_bytes + retrans_bytes
    "largest_segment": pl.UInt32(),
    "effective_mss": pl.UInt32(),  # largest payload not in a TSO/GRO super-frame
    "pure_acks": pl.UInt64(),
    "dup_acks": pl.UInt64(),
    "zero_windows": pl.UInt64(),
    "min_window": pl.Int64(),
    "max_window": pl.Int64(),
    "max_in_flight": pl.Int64(),  # highest seq sent - highest ACK received, maximum over time
    "syn": pl.UInt32(),
    "fin": pl.UInt32(),
    "rst": pl.UInt32(),
    "rtt_samples": pl.UInt64(),  # Karn's rule: none from retransmitted data
    "rtt_min_ns": pl.Int64(),
    "rtt_median_ns": pl.Int64(),
    "goodput_bps": pl.Float64(),  # unique bytes per second of connection duration
}

DIRECTIONS = ("orig", "resp")


def table_schema() -> dict[str, pl.DataType]:
    """Column name -> dtype of the whole table, in column order (without the `file` column)."""
    schema = dict(CONNECTION_COLUMNS)
    for side in DIRECTIONS:
        for name, dtype in DIRECTION_COLUMNS.items():
            schema[f"{side}_{name}"] = dtype
    return schema


def empty_table() -> pl.DataFrame:
    return pl.DataFrame(schema=table_schema())
