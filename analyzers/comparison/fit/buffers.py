"""The socket buffers (Moldeklev's S and R) and the reader's read size."""

from __future__ import annotations

import polars as pl

from ...findings import ConnectionAnalysis, DirectionAnalysis
from ...writes import RELEASED_MIN, buffer_end_writer
from .model import Fitted
from .stack import OPEN_START_STACKS, SLOW_START_STACKS


def buffer_size(flight: int) -> int:
    """The socket buffer that held a flight: at least the flight, as set in whole kilobytes; the
    fit takes the next multiple of 4 KB (setsockopt values are round numbers; the kernel's own
    rounding is the personality's)."""
    return -(-flight // 4096) * 4096


# Stacks that settle a send buffer other than the one asked for (native/src/sim/tcp/personality.rs):
# Linux doubles SO_SNDBUF (half is kept for its bookkeeping, sk_sndbuf = 2 x the value); 4.4BSD and
# FreeBSD round the buffers up to whole segments in tcp_mss.
SNDBUF_DOUBLED = ("linux",)


BUFFERS_ROUNDED_TO_MSS = ("bsd44", "freebsd4")


# Each stack's send buffer when the application does not set one (personality.rs default_sndbuf).
DEFAULT_SNDBUF = {"sunos41": 4096, "bsd44": 8192, "freebsd4": 32768, "tru64": 32768, "linux20": 32768, "linux": 65536}


# How far below the peer's largest window an ACK-clocked flight may stay and still be the window's.
WINDOW_SLACK = 0.25


def sndbuf_floor(d: DirectionAnalysis, values: dict[str, Fitted]) -> None:
    """When something other than the send buffer held the flight (the peer's window, or an
    application that wrote no more than the flight between pauses or answers), the plateau is only
    a floor of S: the stack's default buffer then, where larger (no larger one shows)."""
    s, pers = values.get("sndbuf"), values["personality"].value if "personality" in values else None
    default = DEFAULT_SNDBUF.get(pers)
    plateau = d.profile.get("send_buffer_estimate")
    if s is None or not default or not plateau:
        return
    r = d.profile.get("peer_receive_window_max")
    flight = d.profile.get("max_in_flight") or 0
    mss = values.get("_segment")
    if r and flight >= r and flight > plateau:
        # The flight filled the peer's window at its peak: a buffer holds every unacknowledged byte,
        # so the largest flight is a floor of S, above the plateau below the window (less a FIN's
        # sequence number, which takes no buffer room).
        held, how = sndbuf_request(flight - 1, pers, mss.value if mss else None)
        if held > s.value and held >= default:
            values["sndbuf"] = Fitted(held, f"the largest flight ({flight}) filled the peer's window ({r}): a "
                                      f"buffer holds every unacknowledged byte, so S is at least the flight{how}; "
                                      f"{s.value} from the plateau alone ({s.source})")
            return
    if default <= s.value:
        return
    write = values["write"].value if "write" in values else None
    paced = (values.get("think_ns") is not None or values.get("reply") is not None) and write
    # An ACK-clocked flight dips below the window between ACKs: within a segment of it, or within
    # WINDOW_SLACK of it for a stack its SYN options name (its default is then its own; among the
    # stacks without options, a default would be another stack's as often).
    slack = mss.value if mss else 0
    if pers not in SLOW_START_STACKS + OPEN_START_STACKS:
        slack = max(slack, int(WINDOW_SLACK * (r or 0)))
    if r and plateau >= r - slack:
        why = f"the flight ({plateau}) reached the peer's window ({r})"
    elif paced and plateau <= write + (mss.value if mss else 0):
        why = f"the flight ({plateau}) was no more than a write ({write}) between the application's pauses"
    else:
        return
    values["sndbuf"] = Fitted(default, f"{why}, so S is at least the flight and no more shows: {pers}'s default send "
                              f"buffer ({default}); {s.value} from the flight alone ({s.source})")


def sndbuf_request(plateau: int, personality: str | None, mss: int | None) -> tuple[int, str]:
    """The SO_SNDBUF value behind a measured plateau: the value the stack settles on (doubled,
    rounded to segments) is what the flight shows, so the request is the round number that settles
    there: a whole 4 KB, or the one a segment's rounding took up to the plateau."""
    if personality in SNDBUF_DOUBLED:
        half = buffer_size(-(-plateau // 2))
        return half, f"; half of it asked for ({half}, rounded up to a whole 4 KB): {personality} doubles SO_SNDBUF"
    if personality in BUFFERS_ROUNDED_TO_MSS and mss and plateau % 4096:
        below = plateau // 4096 * 4096
        if below > plateau - mss and below > 0:
            return below, (f"; {below} asked for, which {personality} rounds up to whole {mss}-byte segments: "
                           f"the plateau")
    size = buffer_size(plateau)
    return size, ("; rounded up to a whole 4 KB" if size != plateau else "")


def read_step(rows: pl.DataFrame | None, dir_: int) -> int | None:
    """The receiving application's read size, from its window: the right edge it advertises (ACK
    plus window) moves when the application reads, by what it read (or a window update's share of
    it), so the most common step is the read size. None when no step recurs."""
    if rows is None:
        return None
    acks = rows.filter((pl.col("dir") == 1 - dir_) & pl.col("ack_rel").is_not_null() & pl.col("win_scaled").is_not_null()
                       & pl.col("wscale_known")).sort("ts_ns")
    steps = (acks["ack_rel"] + acks["win_scaled"]).diff().drop_nulls()
    steps = steps.filter(steps > 0)
    if steps.len() < 4:
        return None
    counts = steps.value_counts(sort=True)
    top, n = counts.row(0)
    return int(top) if n >= 0.3 * steps.len() else None


def fit_bulk(d: DirectionAnalysis, values: dict[str, Fitted]) -> None:
    p = d.profile
    values["bytes"] = Fitted(int(p["bytes"]), "the new bytes the sender sent (profile.bytes)")
    s = p.get("send_buffer_estimate")
    if s:
        pers = values["personality"].value if "personality" in values else None
        mss = values["_segment"].value if "_segment" in values else None
        size, how = sndbuf_request(int(s), pers, mss)
        values["sndbuf"] = Fitted(size, f"the flight's plateau while the peer's window had room ({s} bytes, Moldeklev's "
                                  f"S; a buffer holds at least its flight){how}")
    r = p.get("peer_receive_window_max")
    if r:
        values["rcvbuf"] = Fitted(int(r), "the largest window the peer advertised (Moldeklev's R)")
    pushes = p.get("push_segments") or 0
    write = None
    if pushes > 1 and p.get("bytes"):
        write = int(p["bytes"] / pushes)
    mss = values["_segment"].value if "_segment" in values else None
    short_share = (p.get("short_segments") or 0) / max(p.get("data_packets") or 1, 1)
    if short_share < 0.05:
        # Nearly every segment full: the writes were larger than a segment and ran together.
        values["write"] = Fitted(65536, f"64 KB writes: {short_share:.0%} of the segments are short, so the "
                                 "writes ran together into full segments")
    elif write and mss and write >= mss // 2:
        values["write"] = Fitted(write, f"bytes per PSH-marked segment ({pushes} pushes): one write each")
    else:
        values["write"] = Fitted(65536, "default 64 KB writes: the write pattern is not visible")
    values["read"] = Fitted(int(r) if r else 65536, "the receive buffer (the reader takes what is there)")



def fit_held_tails(conn: ConnectionAnalysis, d: DirectionAnalysis, rows: pl.DataFrame | None,
                   values: dict[str, Fitted]) -> None:
    """The write size where the PSH flags could not give it: a short segment that Nagle held until
    an ACK and that emptied the send buffer (PSH) ends where the buffered data ended: a write's
    end, or a cluster's where sosend stopped copying for want of room. So the tails' offsets are
    multiples of the write unless clusters made them; a gcd that is no multiple of the cluster is
    the writes' (a 4.4BSD writer of 15836 bytes under an 8 KB buffer: every held 3548-byte tail ends
    at k x 15836, while BSD's PSH flags mark wherever its buffer ran empty, 82 of 87 segments). A
    multiple of the cluster proves nothing (writes of 8192 bytes under full buffers left tails at
    every 2048)."""
    source = values["write"].source if "write" in values else ""
    if rows is None or not ("PSH-marked" in source or "64 KB writes" in source):
        return
    frames = [s.evidence.get("held_segment_frame") for s in conn.stalls
              if s.dir == d.dir and s.cause == "nagle_delayed_ack" and s.evidence.get("held_segment_frame") is not None]
    if len(frames) < RELEASED_MIN or not d.profile.get("syn_seen"):
        return  # (without the SYN the first byte seen need not begin a write)
    held = rows.filter(pl.col("frame").is_in(frames) & (pl.col("dir") == d.dir) & pl.col("flag_psh"))
    w = buffer_end_writer([int(end) - 1 for end in held["seq_end"].to_list()], True)
    if w is None or w.size >= int(d.profile.get("bytes") or 0):
        return
    values["write"] = Fitted(w.size, f"the ends of {held.height} short segments Nagle held until an ACK, each emptying "
                                     f"the buffer (PSH): a write ended at each, their gcd {w.size} bytes (no multiple "
                                     "of a 2 KB cluster, so not sosend's copies)")
