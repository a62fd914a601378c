"""The documented schema of the connection table: one row per TCP connection (stream).

Connection-level columns come first, then every per-direction column twice, as `orig_<name>`
(sent by the initiator) and `resp_<name>` (sent by the responder), as in Zeek's conn.log.
Times are integer nanoseconds; windows are in bytes, scaled when `wscale_known`.
docs/flows-json.md describes each column; this module is the single source of names and types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

# Types are Polars dtype names, resolved only when a DataFrame is built: the JSON path of
# `stallscope flows` never imports Polars (~85 ms of start-up).

CONNECTION_COLUMNS: dict[str, str] = {
    "stream": "UInt32",  # 0-based, in order of first packet (tshark's tcp.stream)
    "ip_version": "UInt8",
    "orig_addr": "String",
    "orig_port": "UInt16",
    "resp_addr": "String",
    "resp_port": "UInt16",
    "start_captured": "Boolean",  # the initiator's SYN is in the capture
    "port_reused": "Boolean",  # a later connection reused this 4-tuple
    "wscale_known": "Boolean",  # both SYNs seen: windows below are exact
    "first_frame": "UInt64",
    "last_frame": "UInt64",
    "first_ts_ns": "Int64",
    "last_ts_ns": "Int64",
    "duration_ns": "Int64",
    "max_idle_ns": "Int64",  # longest gap between two packets of the connection
    "handshake_rtt_ns": "Int64",  # SYN -> first ACK after SYN/ACK; null if retransmitted/unseen
    "packets": "UInt64",
}

DIRECTION_COLUMNS: dict[str, str] = {
    "mss": "UInt16",  # advertised in this side's SYN
    "wscale": "UInt8",  # as sent in the SYN (values > 14 are used as 14)
    "sack_permitted": "Boolean",
    "timestamps": "Boolean",
    "packets": "UInt64",
    "frame_bytes": "UInt64",  # on-the-wire frame lengths
    "payload_bytes": "UInt64",
    "unique_bytes": "UInt64",  # payload above the highest sequence sent before
    "retrans_packets": "UInt64",  # segments with payload starting below that highest sequence
    "retrans_bytes": "UInt64",  # payload_bytes == unique_bytes + retrans_bytes
    "largest_segment": "UInt32",
    "effective_mss": "UInt32",  # largest payload not in a TSO/GRO super-frame
    "pure_acks": "UInt64",
    "dup_acks": "UInt64",
    "zero_windows": "UInt64",
    "min_window": "Int64",
    "max_window": "Int64",
    "max_in_flight": "Int64",  # highest seq sent - highest ACK received, maximum over time
    "syn": "UInt32",
    "fin": "UInt32",
    "rst": "UInt32",
    "rtt_samples": "UInt64",  # Karn's rule: none from retransmitted data
    "rtt_min_ns": "Int64",
    "rtt_median_ns": "Int64",
    "goodput_bps": "Float64",  # unique bytes per second of connection duration
}

DIRECTIONS = ("orig", "resp")


def column_names() -> list[str]:
    """The whole table's column names, in column order (without the `file` column)."""
    return [*CONNECTION_COLUMNS, *(f"{side}_{name}" for side in DIRECTIONS for name in DIRECTION_COLUMNS)]


def table_schema() -> dict[str, pl.DataType]:
    """Column name -> Polars dtype of the whole table, in column order (without the `file` column)."""
    import polars as pl

    types = {**CONNECTION_COLUMNS, **{f"{s}_{n}": t for s in DIRECTIONS for n, t in DIRECTION_COLUMNS.items()}}
    return {name: getattr(pl, types[name])() for name in column_names()}


def empty_table() -> pl.DataFrame:
    import polars as pl

    return pl.DataFrame(schema=table_schema())
