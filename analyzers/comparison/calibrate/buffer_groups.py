"""Candidates for the applications and buffers: S and R, the write and read sizes, the reader's
pace, and these together with the hosts' costs when each alone ends far off."""

from __future__ import annotations

from itertools import product
from typing import Any

from ..fit import Fit
from ..fit.buffers import buffer_size
from .link_groups import framed_candidates
from .target import SECOND_PASS_SCORE, data_side

COMMON_WRITES = (4096, 8192, 16384, 65536)


MAX_CANDIDATES = 64


def buffer_candidates(fit: Fit, read_step: int | None, chosen: dict[str, Any] | None = None) -> list[dict[str, int]]:
    s = fit.value("sndbuf")
    r = fit.value("rcvbuf")
    write = fit.value("write")
    # Replayed losses name segments by their first byte: other write sizes would cut them elsewhere.
    replay = bool((fit.value("impairments") or {}).get("drop_segments"))
    # A writer that pauses writes what it wrote between two pauses: its write is measured. So is a
    # peer's message where the answers are the data (data_side): another write would change how many
    # answers, and so the data's bytes, the run carries.
    measured = replay or fit.value("think_ns") or (fit.value("reply") and data_side(fit.bulk_config()))
    writes = [write] if measured else sorted({w for w in (write, *COMMON_WRITES, s) if w})
    reads = sorted({x for x in (read_step, fit.value("read"), 4096, 8192, r) if x})
    # The measured flight is a floor of S (a window or Nagle may have kept it lower): S, its power of
    # two and twice it.
    # And the buffer the stack group chose (a stack tried with one the window limits): the write and
    # read are tried under it too, not only under the flight's.
    held = (chosen or {}).get("sndbuf")
    sndbufs = list(dict.fromkeys(x for x in (s, _pow2(s) if s else None, 2 * s if s else None, held) if x)) or [None]
    first = {"write": write, "read": fit.value("read"), "sndbuf": s}
    out = [first] + [c for c in ({"write": w, "read": rd, "sndbuf": sb} for w, rd, sb in product(writes, reads, sndbufs))
                     if c != first]
    return out[:MAX_CANDIDATES]


# Send buffers tried with the host and the read, as multiples of the flight's floor: where the
# peer's window kept the flight below S, S shows nowhere, and Moldeklev's S = R = 48 KB stalls (a
# sender holding less than a segment of window, released by the reader's next window update)
# come and go with S between the 32 KB floor and the 64 KB the grid above tries.
SNDBUF_BETWEEN = (1, 1.25, 1.5, 1.75, 2)


def hosted_buffer_candidates(fit: Fit, rows: Any, chosen: dict[str, Any], read_step: int | None, score: float
                             ) -> list[dict[str, Any]]:
    """Where the groups end far off the trace and neither the reads nor S showed (the read is the
    receive buffer, S the flight's floor): the host model, the reader's pace, the read and the send
    buffer together, on the chosen link. A host's copies pace the window's right edge as a slow
    reader would, and a window update's timing is set by the read and by how much the sender
    still holds (S): each one changed alone moves a run that stalls like the trace further away (a
    Moldeklev S = R = 48 KB trace: only a Sun IPX host with 8 KB reads and S = 48 KB stalls its 8
    times; the pace group's reader at the edge's 22 Mbit/s, chosen first, then kept every host and
    buffer further off)."""
    if score <= SECOND_PASS_SCORE or chosen.get("atm_switch") or not _read_is_buffer(fit):
        return [{}]
    s, r = fit.value("sndbuf"), fit.value("rcvbuf")
    link, rate = chosen.get("link", fit.value("link")), chosen.get("rate_bps", fit.value("rate_bps"))
    hosts = [{k: v for k, v in c.items() if k in ("cost", "delay_ns")} for c in framed_candidates(fit, rows, chosen)
             if c.get("link") == link and c.get("rate_bps") == rate] or [{}]
    pace = [{}, {"read_rate_bps": None}] if chosen.get("read_rate_bps") else [{}]
    reads = [{}, *({"read": x} for x in dict.fromkeys((read_step, 4096, 8192, 16384, r)) if x)]
    sndbufs = [{}, *({"sndbuf": x} for x in dict.fromkeys(
        [buffer_size(int(s * k)) for k in SNDBUF_BETWEEN] + ([r] if r and s < r < 2 * s else [])))] if s else [{}]
    return [{**h, **p, **rd, **sb} for h in hosts for p in pace for rd in reads for sb in sndbufs]


def write_candidates(fit: Fit) -> list[dict[str, Any]]:
    """The write size alone, before the link and host are chosen, where the trace did not show it
    (its segments all full: the writes ran together, fit.buffers.fit_bulk): a sender's writes decide
    byte for byte where Nagle holds a short segment, so a link chosen under a wrong write makes up
    for stalls the trace never had (a Tru64 sender of 4 KB writes has none; with 64 KB writes the
    same run stalls 13 times). The first estimate first."""
    write = fit.value("write")
    if not write_unseen(fit) or "64 KB writes" not in fit.values["write"].source:
        return [{}]
    return [{}, *({"write": w} for w in COMMON_WRITES if w != write)]


def write_unseen(fit: Fit) -> bool:
    """Whether the segments left the write size unseen: all full (the writes ran together), or
    estimated from the PSH flags, which a BSD stack sets where its send buffer ran empty, not where
    a write ended (tcp_output: the segment reaches the end of the buffered data), so a writer
    blocked on a full buffer shows them where the wire caught up with its copies. A replay, a
    writer's pause or the messages of an exchange measure it."""
    source = fit.values["write"].source if "write" in fit.values else ""
    replay = bool((fit.value("impairments") or {}).get("drop_segments"))
    if replay or fit.value("think_ns") or fit.value("reply"):
        return False
    return "64 KB writes" in source or "PSH-marked" in source


def _pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def _read_is_buffer(fit: Fit) -> bool:
    """The fit's read is the receive buffer (fit.buffers: the reader takes what is there), no read
    size the trace showed."""
    return "reader takes what is there" in (fit.values["read"].source if "read" in fit.values else "")


def read_unseen(fit: Fit) -> bool:
    """Whether the reads did not show: the fit's read is the receive buffer, and the window's edge
    showed no reader's pace (the pace group tries a slow reader's reads with its pace)."""
    return _read_is_buffer(fit) and not fit.value("_read_rate")


def joint_candidates(fit: Fit, rows: Any, chosen: dict[str, Any], read_step: int | None, score: float) -> list[dict[str, Any]]:
    """Where the groups, one after the other, end far off the trace (above SECOND_PASS_SCORE) and
    the segments showed neither the write nor the read: each link and host with each write and
    read together. A host's copies decide where the wire catches up with the writer and when a
    read opens the window, so the host, the write and the read make a deadlock together, and
    chosen one at a time each is chosen under the others' wrong first estimates (a Sun IPX host
    reading the whole 52 KB buffer at once deadlocks a Moldeklev run its 8 KB reads leave clean;
    a free host at 100 Mbit/s then wins, five times the trace's goodput)."""
    if score <= SECOND_PASS_SCORE or (chosen or {}).get("atm_switch") or not read_unseen(fit):
        return [{}]
    writes = [None, *COMMON_WRITES] if write_unseen(fit) else [None]
    reads = [None, *dict.fromkeys(x for x in (read_step, 4096, 8192, 16384) if x)]
    out = [{}]
    for link in framed_candidates(fit, rows, chosen):
        for w in writes:
            for rd in reads:
                cand = dict(link)
                if w is not None:
                    cand["write"] = w
                if rd is not None:
                    cand["read"] = rd
                out.append(cand)
    return out


# Multiples of the window's measured pace tried for a slow reader.
READER_FACTORS = (1, 1.05, 1.1, 1.15, 1.25, 1.5, 2)


# Candidates measured from the trace under another name than the simulator's input.
MEASURED_AS = {"read_rate_bps": "_read_rate"}


def pace_candidates(fit: Fit, chosen: dict[str, Any], read_step: int | None = None) -> list[dict[str, Any]]:
    """The applications' pace: a writer's pause as the wire showed it or lengthened by the time the
    write took to drain from the send buffer (the pause began when the write was copied, not when
    the wire went quiet); a reader at the pace the window's right edge moved, or as fast as the host copies."""
    think = fit.value("think_ns")
    thinks: list[int | None] = [think] if think else [None]
    s, rate = chosen.get("sndbuf", fit.value("sndbuf")), chosen.get("rate_bps", fit.value("rate_bps"))
    write = chosen.get("write", fit.value("write"))
    if think and s and rate and write:
        # A write returns once its last byte is in the buffer: the wire drains the write (or the
        # buffer, when the write was larger) during the pause before going quiet.
        thinks.append(think + int(min(write, s) * 8e9 / rate))
    cycle = fit.value("_write_cycle")
    if think and cycle and s and write and write <= s and cycle > think:
        # A write the buffer holds whole returns at once: the writer pauses the whole cycle from one
        # write to the next, its tail's wait for an ACK (a Nagle hold) included.
        thinks.append(cycle)
    thinks = list(dict.fromkeys(thinks))
    read_rate = fit.value("_read_rate")
    # A slow reader's pace depends on its read size (each read is a copy the window waits for): the
    # right edge's common step, the fitted read and two small ones.
    reads = [x for x in dict.fromkeys((read_step, fit.value("read"), 2048, 4096)) if x] if read_rate else []
    # The right edge's average pace is a floor of the reader's: it idles when the buffer runs dry.
    readers: list[dict[str, Any]] = [{"read_rate_bps": None}] + [
        {"read_rate_bps": int(read_rate * k), "read": rd} for k in READER_FACTORS for rd in reads]
    return [{"think_ns": t, **r} for t in thinks for r in readers]
