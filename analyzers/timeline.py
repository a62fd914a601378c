"""What limited a sender, as shares of its active time: the peer's window, its send buffer, loss
recovery, the application (nothing outstanding, or a sender that never had more than its flight to
send), the congestion window (none of the others), a window of unknown scale that may or may not
have, and stalls by cause. Each interval between two packets of the connection is charged to the
limit in force after the first; stall intervals are charged to their cause.

One pass per direction over all connections (window functions over `stream`): a few queries per
connection made most of the time of a capture of many short connections.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from stallscope.analyzers.findings import StallFinding


# New data sent at once on a pure ACK of the peer's this many times shows a sender with more to send.
REFILLS_MIN = 3
# The columns the timeline reads.
COLUMNS = ["stream", "dir", "ts_ns", "in_flight", "usable_window", "peer_window", "retransmission", "new_data",
           "payload_len", "acks_new"]
_NEVER_NS = 1 << 62

Direction = tuple[int, int]


def limit_shares(rows: pl.DataFrame, directions: dict[Direction, tuple[dict[str, Any], list[StallFinding]]]
                 ) -> dict[Direction, dict[str, float]]:
    """Per (stream, dir) of `directions` (its profile and its stalls): the shares of its data's span
    by limit. `rows` holds the connections' packets (at least COLUMNS), each connection's in time
    order; a direction that sent no data gets {}."""
    out: dict[Direction, dict[str, float]] = {k: {} for k in directions}
    for d in (0, 1):
        mine = {s: v for (s, d_), v in directions.items() if d_ == d and v[0].get("data_packets")}
        if mine:
            out.update(_direction_shares(rows, d, mine))
    return out


def _direction_shares(rows: pl.DataFrame, d: int, mine: dict[int, tuple[dict[str, Any], list[StallFinding]]]
                      ) -> dict[Direction, dict[str, float]]:
    df, facts = _limits(rows, d, mine)
    g = "stream"
    df = _outside_stalls(df.select(g, "ts_ns", "dt", "limit"), {s: v[1] for s, v in mine.items()}, rows.schema["stream"])
    spans = {s: (first, last) for s, first, last in facts.select(g, "first", "last").iter_rows()}
    out: dict[Direction, dict[str, float]] = {(s, d): {} for s in mine}
    for s, lim, dt in df.group_by(g, "limit").agg(pl.col("dt").sum()).iter_rows():
        first, last = spans[s]
        out[(s, d)][lim] = dt / max(1, (last or 0) - (first or 0))
    for s, (_, stalls) in mine.items():
        first, last = spans.get(s, (None, None))
        total = max(1, (last or 0) - (first or 0))
        shares = out[(s, d)]
        for st in stalls:
            # Only the part inside the data's span: a black hole's stall from the handshake to the first
            # data that got through lies before it, and the shares are of that span.
            inside = min(st.end_ns, last or 0) - max(st.start_ns, first or 0)
            if inside > 0:
                key = f"stall:{st.cause}"
                shares[key] = shares.get(key, 0.0) + inside / total
        out[(s, d)] = dict(sorted(shares.items()))
    return out


# A connection with at least this many rows gets its own pass in packet_limits (window functions
# over all of a large table hold a dozen full-length columns at once).
OWN_PASS_ROWS = 100_000


def packet_limits(rows: pl.DataFrame, directions: dict[Direction, tuple[dict[str, Any], list[StallFinding]]]
                  ) -> pl.Series:
    """The `limit` column for `rows` (as for limit_shares), row for row: for each packet of a
    direction in `directions` sent within its data's span, what limited that packet's sender right
    after it (the limits of limit_shares), or `stall:CAUSE` inside one of its stalls; null
    elsewhere."""
    keyed = rows.select(COLUMNS).with_row_index("_row")
    sizes = keyed.group_by("stream").len()
    big = sizes.filter(pl.col("len") >= OWN_PASS_ROWS)["stream"].to_list()
    groups = [keyed.filter(pl.col("stream") == s) for s in big]
    if len(big) < sizes.height:
        groups.append(keyed.filter(~pl.col("stream").is_in(pl.Series(big, dtype=keyed.schema["stream"]).implode())))
    column = pl.repeat(None, rows.height, dtype=pl.String, eager=True).alias("limit")
    for g in groups:
        streams = set(g["stream"].unique().to_list())
        found = _packet_limits(g, {k: v for k, v in directions.items() if k[0] in streams})
        if found.height:
            column = column.scatter(found["_row"], found["limit"])
    return column


def _packet_limits(rows: pl.DataFrame, directions: dict[Direction, tuple[dict[str, Any], list[StallFinding]]]
                   ) -> pl.DataFrame:
    """(_row, limit) of packet_limits for the connections in `rows`."""
    parts = []
    for d in (0, 1):
        mine = {s: v for (s, d_), v in directions.items() if d_ == d and v[0].get("data_packets")}
        if not mine:
            continue
        df, _ = _limits(rows, d, mine)
        df = df.filter(pl.col("dir") == d).select("stream", "_row", "ts_ns", "limit")
        spans = [(s, st.start_ns, st.end_ns, f"stall:{st.cause}") for s, (_, stalls) in mine.items() for st in stalls]
        if spans:
            iv = pl.DataFrame(spans, schema={"stream": rows.schema["stream"], "stall_start": pl.Int64,
                                             "stall_end": pl.Int64, "stall": pl.String}, orient="row").sort(
                "stream", "stall_start")
            df = df.sort("stream", "ts_ns").join_asof(iv, left_on="ts_ns", right_on="stall_start", by="stream",
                                                      strategy="backward", check_sortedness=False)
            # The stall's own first packet (its last data before the silence) is what the stall waits behind.
            inside = pl.col("stall").is_not_null() & (pl.col("ts_ns") < pl.col("stall_end"))
            df = df.select("_row", pl.when(inside).then(pl.col("stall")).otherwise(pl.col("limit")).alias("limit"))
        parts.append(df.select("_row", "limit"))
    if not parts:
        return pl.DataFrame(schema={"_row": pl.UInt32, "limit": pl.String})
    return pl.concat(parts)


def _limits(rows: pl.DataFrame, d: int, mine: dict[int, tuple[dict[str, Any], list[StallFinding]]]
            ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Direction d's limit after each row of its connections within its data's span (stream, dir,
    ts_ns, dt, limit, and _row where `rows` has it), and per connection its first and last data
    (facts)."""
    stream_type = rows.schema["stream"]
    params = pl.DataFrame({
        "stream": list(mine),
        "m": [p.get("max_segment") or 1 for p, _ in mine.values()],
        "plateau": [p.get("send_buffer_estimate") or 0 for p, _ in mine.values()],
        "window_known": [bool(p.get("window_known", True)) for p, _ in mine.values()],
        "bound_from": [p.get("_buffer_bound_from_ns") or _NEVER_NS for p, _ in mine.values()],
    }, schema_overrides={"stream": stream_type, "m": pl.Int64, "plateau": pl.Int64, "bound_from": pl.Int64})
    g = "stream"
    # The sender's state is carried on its own rows; between them it holds.
    own = pl.col("dir") == d
    # (Over one connection's rows no window is needed: over() costs a group-by per expression.)
    several = len(mine) > 1

    def per(e: pl.Expr) -> pl.Expr:
        return e.over(g) if several else e

    def held(e: pl.Expr) -> pl.Expr:
        return per(pl.when(own).then(e).forward_fill())

    # Whether more data waited behind the flight: a sender that sent new data at once on a pure ACK
    # of the peer's had it (the ACK clock; a writer woken as its buffer drained), after a flight at
    # its plateau too where that plateau is its send buffer (Moldeklev's S). One that sent only
    # when the peer's data came (a request, an answer) sent all it had each time: with data
    # outstanding it waits for the answer, the application's limit, and its largest message is
    # no buffer.
    refill = (own & pl.col("new_data") & (pl.col("payload_len") > 0) & per((~own).shift(1)).fill_null(False)
              & per(pl.col("acks_new").shift(1)).fill_null(False)
              & (per(pl.col("payload_len").shift(1)) == 0).fill_null(False))
    extra = [c for c in ("_row",) if c in rows.columns]
    part = rows.select(COLUMNS + extra).filter(pl.col("stream").is_in(params["stream"].implode()))
    df = part.select(
        "stream", "ts_ns", "dir", *extra,
        held(pl.col("in_flight")).alias("flight"),
        held(pl.col("usable_window")).alias("usable"),
        held(pl.col("peer_window")).alias("peer_window"),
        per(pl.when(own & pl.col("retransmission")).then(pl.lit(True)).when(own & pl.col("new_data")).then(pl.lit(False))
            .forward_fill()).fill_null(False).alias("recovering"),
        (per(pl.col("ts_ns").shift(-1)) - pl.col("ts_ns")).fill_null(0).alias("dt"),
        refill.alias("refill"),
        (own & (pl.col("payload_len") > 0)).alias("sent"),
    ).with_columns(per(pl.col("flight").shift(1)).alias("flight_before")).join(params, on=g, how="inner")
    ts = pl.col("ts_ns").filter(pl.col("sent"))
    facts = df.group_by(g).agg(
        pl.col("refill").sum().alias("refills"),
        (pl.col("refill") & (pl.col("flight_before") >= pl.col("plateau") - pl.col("m"))).sum().alias("at_plateau"),
        ts.min().alias("first"), ts.max().alias("last"),
    ).select(g, "first", "last", (pl.col("refills") >= REFILLS_MIN).alias("clocked"),
             (pl.col("at_plateau") >= REFILLS_MIN).alias("enough_at_plateau"))
    df = df.join(facts, on=g, how="inner").filter((pl.col("ts_ns") >= pl.col("first")) & (pl.col("ts_ns") < pl.col("last")))
    unbounded = pl.col("usable").fill_null(1 << 40) < pl.col("m")
    limit = (
        pl.when(pl.col("recovering")).then(pl.lit("loss"))
        .when(pl.col("flight").fill_null(0) == 0).then(pl.lit("application"))
        # Windows of unknown scale (no SYN seen) are raw values: only a zero one is known small.
        .when(unbounded & (pl.col("window_known") | (pl.col("peer_window") == 0))).then(pl.lit("peer_window"))
        .when(unbounded).then(pl.lit("window_unknown"))
        .when((pl.col("plateau") > 0) & pl.col("enough_at_plateau") & (pl.col("flight") >= pl.col("plateau") - pl.col("m")))
        .then(pl.lit("send_buffer"))
        # A flight shown to press against the buffer every round trip (windows.send_buffer_finding's
        # ceiling) waits for buffer space between its peaks too: no congestion window held it.
        .when(pl.col("ts_ns") >= pl.col("bound_from")).then(pl.lit("send_buffer"))
        .when(~pl.col("clocked")).then(pl.lit("application"))
        .otherwise(pl.lit("cwnd"))
    )
    return df.with_columns(limit.alias("limit")), facts


def _outside_stalls(df: pl.DataFrame, stalls: dict[int, list[StallFinding]], stream_type: pl.DataType) -> pl.DataFrame:
    """The rows of `df` outside every stall of their connection (stall intervals are charged to
    their cause, not to a limit)."""
    spans = []
    for s, own in stalls.items():
        merged: list[list[int]] = []
        for st in sorted(own, key=lambda x: (x.start_ns, x.end_ns)):
            if merged and st.start_ns <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], st.end_ns)
            else:
                merged.append([st.start_ns, st.end_ns])
        spans += [(s, a, b) for a, b in merged]
    if not spans:
        return df
    iv = pl.DataFrame(spans, schema={"stream": stream_type, "stall_start": pl.Int64, "stall_end": pl.Int64},
                      orient="row").sort("stream", "stall_start")
    with_stalls = pl.col("stream").is_in(iv["stream"].unique().implode())
    # (Timestamps can go backwards in a capture: sorted here, after the forward fills that read the
    # capture's order; the sums below do not depend on it.)
    hit = df.filter(with_stalls).sort("stream", "ts_ns").join_asof(
        iv, left_on="ts_ns", right_on="stall_start", by="stream", strategy="backward", check_sortedness=False)
    hit = hit.filter(pl.col("stall_end").is_null() | (pl.col("ts_ns") >= pl.col("stall_end"))).select(df.columns)
    return pl.concat([df.filter(~with_stalls), hit])
