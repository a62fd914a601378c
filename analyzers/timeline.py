"""What limited a sender, as shares of its active time: the peer's window, its send buffer, loss
recovery, the application (nothing outstanding), the congestion window (none of the others), a
window of unknown scale that may or may not have, and stalls by cause. Each interval between two packets of the connection is charged to the limit in
force after the first; stall intervals are charged to their cause.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from stallscope.analyzers.findings import StallFinding


def limit_shares(part: pl.DataFrame, d: int, profile: dict[str, Any], stalls: list[StallFinding]) -> dict[str, float]:
    if not profile.get("data_packets"):
        return {}
    m = profile.get("max_segment") or 1
    plateau = profile.get("send_buffer_estimate")
    # The sender's state is carried on its own rows; between them it holds.
    own = (pl.col("dir") == d)
    df = part.select(
        "ts_ns",
        pl.when(own).then(pl.col("in_flight")).forward_fill().alias("flight"),
        pl.when(own).then(pl.col("usable_window")).forward_fill().alias("usable"),
        pl.when(own).then(pl.col("peer_window")).forward_fill().alias("peer_window"),
        pl.when(own & pl.col("retransmission")).then(pl.lit(True)).when(own & pl.col("new_data")).then(pl.lit(False))
        .forward_fill().fill_null(False).alias("recovering"),
        (pl.col("ts_ns").shift(-1) - pl.col("ts_ns")).fill_null(0).alias("dt"),
    )
    first = part.filter(own & (pl.col("payload_len") > 0))["ts_ns"].min()
    last = part.filter(own & (pl.col("payload_len") > 0))["ts_ns"].max()
    df = df.filter((pl.col("ts_ns") >= first) & (pl.col("ts_ns") < last))
    limit = (
        pl.when(pl.col("recovering")).then(pl.lit("loss"))
        .when(pl.col("flight").fill_null(0) == 0).then(pl.lit("application"))
        # Windows of unknown scale (no SYN seen) are raw values: only a zero one is known small.
        .when((pl.col("usable").fill_null(1 << 40) < m)
              & (pl.lit(bool(profile.get("window_known", True))) | (pl.col("peer_window") == 0))).then(pl.lit("peer_window"))
        .when(pl.col("usable").fill_null(1 << 40) < m).then(pl.lit("window_unknown"))
        .when(pl.lit(bool(plateau)) & (pl.col("flight") >= (plateau or 0) - m)).then(pl.lit("send_buffer"))
        .otherwise(pl.lit("cwnd"))
    )
    stall_mask = pl.lit(False)
    for s in stalls:
        stall_mask = stall_mask | ((pl.col("ts_ns") >= s.start_ns) & (pl.col("ts_ns") < s.end_ns))
    shares = df.with_columns(limit=limit, in_stall=stall_mask).filter(~pl.col("in_stall")).group_by("limit").agg(
        pl.col("dt").sum())
    total = max(1, (last or 0) - (first or 0))
    out = {r["limit"]: r["dt"] / total for r in shares.iter_rows(named=True)}
    for s in stalls:
        # Only the part inside the data's span: a black hole's stall from the handshake to the first
        # data that got through lies before it, and the shares are of that span.
        inside = min(s.end_ns, last or 0) - max(s.start_ns, first or 0)
        if inside > 0:
            key = f"stall:{s.cause}"
            out[key] = out.get(key, 0.0) + inside / total
    return dict(sorted(out.items()))
