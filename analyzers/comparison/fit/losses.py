"""The trace's losses, replayed on the same segments: data lost, ACKs lost, spurious timeouts."""

from __future__ import annotations

from typing import Any

import polars as pl

from ...findings import ConnectionAnalysis
from .model import Fitted

# Retransmissions that mark their segment's earlier transmission as lost: a fast or SACK repair
# (the peer reported the hole) and a timeout's first resend. A timeout's later resends ("other",
# go-back-N) may carry data that had arrived: only those the ACKs show were holes count.
LOSS_KINDS = ("fast", "timeout", "sack")


ACK_LOSS = "ack_loss_timeout"


SPURIOUS = "spurious_timeout"


def fit_losses(rows: pl.DataFrame | None, dir_: int, values: dict[str, Fitted],
                conn: ConnectionAnalysis | None = None) -> None:
    """The trace's losses, to be replayed on the same segments: each retransmitted segment's
    start (counted from the first data byte) and which of its transmissions the path dropped. In a
    stall the analyzer found to be lost ACKs (ack_loss_timeout: the data had arrived), the ACKs
    are dropped instead (_lost_acks), and the resends in it are no data loss."""
    if rows is None:
        return
    data = rows.filter((pl.col("dir") == dir_) & (pl.col("payload_len") > 0) & ~pl.col("superframe"))
    acks_lost, ack_stalls = _lost_acks(rows, dir_, data, conn)
    resent = data.filter(pl.col("retransmission"))
    # A spurious timeout's resend repeated data that had arrived (its ACK was late, not lost): the
    # run's own timer makes it or not, and a drop replayed there would be a loss the trace never had.
    spurious = [(s.start_frame, s.end_frame) for s in (conn.stalls if conn is not None else ())
                if s.dir == dir_ and s.cause == SPURIOUS]
    for first, last in (*ack_stalls, *spurious):
        resent = resent.filter((pl.col("frame") < first) | (pl.col("frame") > last))
    # A go-back-N resend was a hole when the first ACK to cover it stops exactly at its end: had
    # the receiver held it, that ACK would have run on past it.
    acks = (rows.filter((pl.col("dir") == 1 - dir_) & pl.col("ack_rel").is_not_null())
            .select(pl.col("ack_rel").alias("covered_by")).unique().sort("covered_by"))
    resent = resent.sort("seq_end").join_asof(acks, left_on="seq_end", right_on="covered_by", strategy="forward")
    lost = resent.filter(pl.col("retrans_kind").is_in(LOSS_KINDS)
                         | ((pl.col("retrans_kind") == "other") & (pl.col("covered_by") == pl.col("seq_end"))))
    if lost.is_empty() and not acks_lost:
        return
    values["_retransmissions"] = Fitted(resent.height, "the sender's retransmitted data segments")
    drops: list[tuple[int, int]] = []
    counts: dict[int, int] = {}
    for seq_rel in lost.sort("ts_ns")["seq_rel"].to_list():
        counts[seq_rel] = counts.get(seq_rel, 0) + 1
        drops.append((int(seq_rel) - 1, counts[seq_rel]))
    how = (f"{len(drops)} transmissions the sender had to repeat (fast, SACK or timeout retransmissions, and go-back-N "
           "resends of holes), dropped again at the same bytes")
    out: dict[str, Any] = {"drop_segments": tuple(drops)}
    if acks_lost:
        out["drop_acks"] = tuple(acks_lost)
        how += (f"; in {len(ack_stalls)} stall(s) the analyzer found lost ACKs ({ACK_LOSS}: the data had arrived), "
                f"the peer's ACKs of the data outstanding there dropped instead ({len(acks_lost)} ACK numbers and "
                "transmissions: each segment end up to the ACK that ended the stall, as many times as the sender "
                "timed out)")
    values["impairments"] = Fitted(out, how)


def _lost_acks(rows: pl.DataFrame, dir_: int, data: pl.DataFrame, conn: ConnectionAnalysis | None
               ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The ACKs an ack_loss_timeout stall lost, as drop_acks pairs ((ack offset, k): the k-th pure
    ACK with that ack number, 0 the first data byte), and each such stall's frames (first, last).
    Nothing the sender sent was lost there: the peer's ACKs of it were, from the last ACK heard
    before the stall to the one that ended it: each segment end between them is dropped as many
    times as the sender timed out before that ACK came (the ACK of the last segment and of each
    resend but the last went missing too; the run's flight may end at another segment than the
    trace's; a receiver that acknowledges every other segment sends no ACK at some ends: nothing
    drops there)."""
    if conn is None:
        return [], []
    stalls = [s for s in conn.stalls if s.dir == dir_ and s.cause == ACK_LOSS]
    if not stalls:
        return [], []
    peer = (rows.filter((pl.col("dir") == 1 - dir_) & pl.col("ack_rel").is_not_null())
            .select("frame", "ack_rel").sort("frame"))
    ends = sorted(set(data.filter(~pl.col("retransmission"))["seq_end"].to_list()))
    out: list[tuple[int, int]] = []
    frames: list[tuple[int, int]] = []
    import bisect

    for s in stalls:
        before = peer.filter(pl.col("frame") <= s.start_frame)["ack_rel"].max()
        if before is None:
            continue
        after = peer.filter((pl.col("frame") > s.start_frame) & (pl.col("ack_rel") > before)).head(1)["ack_rel"]
        if after.is_empty():
            continue
        lo, hi = int(before), int(after[0])
        timeouts = int((s.evidence or {}).get("timeouts") or 1) if isinstance(s.evidence, dict) else 1
        between = ends[bisect.bisect_right(ends, lo):bisect.bisect_right(ends, hi)]
        if not between or between[-1] != hi:
            between.append(hi)
        # The run's flight may stop short of the trace's (its last ACK before the stall at another
        # segment end): each end in the range is dropped as often as the sender timed out.
        out += [(e - 1, k) for e in between for k in range(1, timeouts + 1)]
        frames.append((s.start_frame, s.end_frame))
    return out, frames
