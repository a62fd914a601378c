"""The receiving application's pace and the sender's write lattice, read from the stalls."""

from __future__ import annotations

import statistics

import polars as pl

from ...findings import ConnectionAnalysis, DirectionAnalysis
from .model import Fitted

# Idle periods are a writer's pace when the writes between them (their count x the median bytes
# between two) make up at least this share of the transfer.
PACE_COVERAGE = 0.5


# Where the write size came from when the analyzer read it (analyzers/writes.py).
LATTICE_WRITE = ("the sender's constant write size: the writes' ends (pauses with everything acknowledged, the close) "
                 "at its multiples")


# The receiver's window was the limit: the stalls a slow reading application leaves.
WINDOW_CAUSES = ("receiver_window_limited", "sender_sws", "window_update_deadlock")


# The right edge of the receiver's window moving slower than this share of the path's rate: the
# reader may have been the limit (the calibration tries its pace).
READER_BELOW_RATE = 0.8


UNREAD_SHARE = 0.5


def fit_pace(conn: ConnectionAnalysis, d: DirectionAnalysis, rows: pl.DataFrame | None,
              values: dict[str, Fitted]) -> None:
    """The applications' pace: a writer that pauses between writes (the sender's idle stalls: the
    pause and the bytes written between two) and a reader slower than the path (the right edge of
    the receiver's window, which moves as the application reads, over the time it moved)."""
    if rows is None:
        return
    from ..compare import IDLE

    first = rows.filter((pl.col("dir") == d.dir) & pl.col("new_data") & (pl.col("payload_len") > 0))["frame"].min()
    # A pause in which Nagle held a write's tail until the next write (the analyzer read the writes'
    # size, analyzers/writes.py) is the writer's pause too: its offset is that write's end.
    idle = [(s, o + (s.evidence.get("held_bytes") or 0) if s.cause != IDLE else o)
            for s, o in _stall_points_all(conn, d.dir, rows, IDLE, "nagle_delayed_ack")
            if first is not None and s.start_frame > first and (s.cause == IDLE or _tail_held(s))]
    write_size = next((s.evidence["write_size"] for s, _ in idle if s.cause != IDLE), None)
    clock = next((s.evidence for s in conn.stalls if s.dir == d.dir and s.evidence.get("write_period_ns")), None)
    if clock is not None:
        # A writer on a clock, its writes held by Nagle now and then (so its pauses on the wire are
        # not its own): a write of that size every period, as the analyzer read them.
        period = int(clock["write_period_ns"])
        values["think_ns"] = Fitted(period, "the writer's clock: a write every period (the analyzer's write events, "
                                    "analyzers/writes.py)")
        values["write"] = Fitted(int(clock["write_size"]), LATTICE_WRITE + ", each write on the writer's clock")
        values["_write_cycle"] = Fitted(period, "the writer's clock")
        idle = []
    if len(idle) >= 2:
        offsets = [o for _, o in idle if o >= 0]
        steps = [b - a for a, b in zip(offsets, offsets[1:]) if b > a]
        total = d.profile.get("bytes") or 0
        # A writer's pace shows as pauses between its writes all through the transfer; a few pauses
        # in one stretch (a loaded host that did not run the application for a while) are not how it
        # writes, and replayed between every write they would bound the whole run.
        covered = len(idle) * statistics.median(steps) if steps else 0
        if total and covered < PACE_COVERAGE * total:
            values["_occasional_idle"] = Fitted(len(idle), f"{len(idle)} idle periods between writes, the writes between "
                                                f"them about {covered / total:.0%} of the bytes: occasional pauses, not "
                                                "the writer's pace (not replayed)")
        else:
            pause = int(statistics.median(s.end_ns - s.start_ns for s, _ in idle))
            values["think_ns"] = Fitted(pause, f"the median of the sender's {len(idle)} idle periods between writes "
                                        "(application_idle stalls)")
            if write_size:
                values["write"] = Fitted(int(write_size), LATTICE_WRITE)
            elif steps:
                values["write"] = Fitted(int(statistics.median(steps)), f"the median bytes sent between two idle "
                                         f"periods ({len(steps)}): one write each")
            ends = sorted(s.end_ns for s, _ in idle)
            cycles = [b - a for a, b in zip(ends, ends[1:]) if b > a]
            if cycles:
                # From one write's first segment to the next's: a write the buffer holds whole
                # returns at once, so this is its pause (the wire's quiet is what the pause left
                # after the write drained and its tail waited; calibrate.buffer_groups.pace_candidates).
                values["_write_cycle"] = Fitted(int(statistics.median(cycles)), f"the median time from one write's "
                                                f"first segment to the next's ({len(cycles)})")
    window_stalls = any(s.dir == d.dir and s.cause in WINDOW_CAUSES for s in conn.stalls)
    acks = (rows.filter((pl.col("dir") == 1 - d.dir) & pl.col("ack_rel").is_not_null()
                        & pl.col("win_scaled").is_not_null() & pl.col("wscale_known")).sort("ts_ns"))
    if acks.height >= 4:
        edge = acks["ack_rel"] + acks["win_scaled"]
        span = acks["ts_ns"][-1] - acks["ts_ns"][0]
        moved = int(edge[-1]) - int(edge[0])
        pace = int(moved * 8e9 / span) if span > 0 and moved > 0 else 0
        rate = values["rate_bps"].value if "rate_bps" in values else None
        # A reader that keeps pace below the path's rate leaves no stall when the window never
        # closes (each read opens it again before the flight fills it): its edge moves slower
        # than the path carries.
        # And data sat unread: on most ACKs the window stayed short of the largest so far by more
        # than a segment (a host slow at both ends reads what arrives, and its window stays open;
        # a window that autotuning grows is short only of its later size).
        mss = values["_segment"].value if "_segment" in values else 0
        wins = acks.filter(~pl.col("flag_syn"))["win_scaled"]
        largest = int(wins.max() or 0)
        short = float((wins < wins.cum_max() - mss).mean() or 0) if wins.len() else 0.0
        slow = bool(pace and rate and pace < READER_BELOW_RATE * rate and short >= UNREAD_SHARE)
        if pace and (window_stalls or slow):
            why = ("window stalls" if window_stalls else
                   f"no window stall, but the edge moved at under {READER_BELOW_RATE:.0%} of the path's {rate} bit/s "
                   f"and the window stayed over a segment short of its largest ({largest}) on {short:.0%} of the ACKs")
            values["_read_rate"] = Fitted(pace, "the right edge of the receiver's window (ACK + window) moved "
                                          f"{moved} bytes in {span / 1e9:.3f} s ({why}): the application's reads, "
                                          "when slower than the path")


def _tail_held(s) -> bool:
    """A Nagle stall whose held bytes were a write's tail, released by the next write."""
    return s.evidence.get("held_tail_from_offset") is not None


def _stall_points_all(conn: ConnectionAnalysis, dir_: int, rows: pl.DataFrame, *causes: str) -> list:
    """Stalls of these causes with the byte offset each began at (compare._stall_points, any cause)."""
    stalls = [s for s in conn.stalls if s.dir == dir_ and s.cause in causes]
    if not stalls:
        return []
    import bisect

    sent = rows.filter((pl.col("dir") == dir_) & pl.col("snd_max").is_not_null()).select("frame", "snd_max").sort("frame")
    frames, highs = sent["frame"].to_list(), sent["snd_max"].to_list()
    out = []
    for s in stalls:
        i = bisect.bisect_right(frames, s.start_frame) - 1
        out.append((s, int(highs[i]) if i >= 0 else -1))
    return out
