"""What limited a sender, as shares of its active time: the peer's window, its send buffer, loss
recovery, the application (nothing outstanding, or a sender that never had more than its flight to
send), the congestion window (none of the others), a window of unknown scale that may or may not
have, and stalls by cause. Each interval between two packets of the connection is charged to the
limit in force after the first; stall intervals are charged to their cause.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from stallscope.analyzers.findings import StallFinding


# New data sent at once on a pure ACK of the peer's this many times shows a sender with more to send.
REFILLS_MIN = 3


def limit_shares(part: pl.DataFrame, d: int, profile: dict[str, Any], stalls: list[StallFinding]) -> dict[str, float]:
    if not profile.get("data_packets"):
        return {}
    m = profile.get("max_segment") or 1
    plateau = profile.get("send_buffer_estimate")
    # The sender's state is carried on its own rows; between them it holds.
    own = (pl.col("dir") == d)
    flight = pl.when(own).then(pl.col("in_flight")).forward_fill()
    df = part.select(
        "ts_ns",
        flight.alias("flight"),
        pl.when(own).then(pl.col("usable_window")).forward_fill().alias("usable"),
        pl.when(own).then(pl.col("peer_window")).forward_fill().alias("peer_window"),
        pl.when(own & pl.col("retransmission")).then(pl.lit(True)).when(own & pl.col("new_data")).then(pl.lit(False))
        .forward_fill().fill_null(False).alias("recovering"),
        (pl.col("ts_ns").shift(-1) - pl.col("ts_ns")).fill_null(0).alias("dt"),
    )
    # Whether more data waited behind the flight: a sender that sent new data at once on a pure ACK
    # of the peer's had it (the ACK clock; a writer woken as its buffer drained), after a flight at
    # its plateau too where that plateau is its send buffer (Moldeklev's S). One that sent only
    # when the peer's data came (a request, an answer) sent all it had each time: with data
    # outstanding it waits for the answer, the application's limit, and its largest message is
    # no buffer.
    refill = (own & pl.col("new_data") & (pl.col("payload_len") > 0) & (~own).shift(1).fill_null(False)
              & pl.col("acks_new").shift(1).fill_null(False) & (pl.col("payload_len").shift(1) == 0).fill_null(False))
    sent_ts = pl.col("ts_ns").filter(own & (pl.col("payload_len") > 0))
    refills, at_plateau, first, last = part.select(
        refill.sum().alias("refills"), (refill & (flight.shift(1) >= (plateau or 0) - m)).sum().alias("at_plateau"),
        sent_ts.min().alias("first"), sent_ts.max().alias("last")).row(0)
    clocked = refills >= REFILLS_MIN
    buffered = bool(plateau) and at_plateau >= REFILLS_MIN
    df = df.filter((pl.col("ts_ns") >= first) & (pl.col("ts_ns") < last))
    limit = (
        pl.when(pl.col("recovering")).then(pl.lit("loss"))
        .when(pl.col("flight").fill_null(0) == 0).then(pl.lit("application"))
        # Windows of unknown scale (no SYN seen) are raw values: only a zero one is known small.
        .when((pl.col("usable").fill_null(1 << 40) < m)
              & (pl.lit(bool(profile.get("window_known", True))) | (pl.col("peer_window") == 0))).then(pl.lit("peer_window"))
        .when(pl.col("usable").fill_null(1 << 40) < m).then(pl.lit("window_unknown"))
        .when(pl.lit(buffered) & (pl.col("flight") >= (plateau or 0) - m)).then(pl.lit("send_buffer"))
        # A flight shown to press against the buffer every round trip (windows.send_buffer_finding's
        # ceiling) waits for buffer space between its peaks too: no congestion window held it.
        .when(pl.col("ts_ns") >= (profile.get("_buffer_bound_from_ns") or (1 << 62))).then(pl.lit("send_buffer"))
        .when(pl.lit(not clocked)).then(pl.lit("application"))
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
