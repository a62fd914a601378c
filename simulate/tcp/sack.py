"""Selective acknowledgment: the receiver's blocks (RFC 2018) and the sender's scoreboard with the
loss-recovery arithmetic of RFC 6675 (IsLost, NextSeg, SetPipe).

Only connections whose both ends offered SACK-permitted in the handshake use it (Host.sack_ok).
Sequence numbers are the unbounded ints of simulate/segment.py, ranges half-open [start, end).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Blocks that fit in TCP's 40 option bytes (RFC 2018 section 3): four alone (2 + 8 * 4 = 34), three
# beside the timestamp option (NOP NOP TS, NOP NOP SACK: 12 + 4 + 8 * 3 = 40).
MAX_BLOCKS = 4
MAX_BLOCKS_WITH_TIMESTAMP = 3
DUP_THRESH = 3  # RFC 6675 DupThresh


def receiver_blocks(
    ooo: list[tuple[int, int]], arrivals: list[tuple[int, int]], max_blocks: int = MAX_BLOCKS
) -> tuple[tuple[int, int], ...]:
    """The SACK blocks for the out-of-order queue `ooo` (sorted ranges above rcv_nxt): contiguous
    ranges merged, the one holding the most recently arrived segment first, then the others by how
    recently they grew (RFC 2018 section 4), at most `max_blocks`."""
    blocks: list[list[int]] = []
    for s, e in ooo:
        if blocks and s <= blocks[-1][1]:
            blocks[-1][1] = max(blocks[-1][1], e)
        else:
            blocks.append([s, e])
    if not blocks:
        return ()
    recency: dict[int, int] = {}
    for i, (s, e) in enumerate(arrivals):
        for b, (bs, be) in enumerate(blocks):
            if bs <= s and e <= be:
                recency[b] = i
                break
    order = sorted(range(len(blocks)), key=lambda b: (-recency.get(b, -1), blocks[b][0]))
    return tuple((blocks[b][0], blocks[b][1]) for b in order[:max_blocks])


@dataclass(slots=True)
class Scoreboard:
    """The sender's record of SACKed ranges above snd_una and of the ranges retransmitted in this
    recovery, each with the uid of its transmission (uids grow with every segment a host sends):
    RFC 6675's HighRxt kept per range, so that a retransmission can be found lost again."""

    sacked: list[list[int]] = field(default_factory=list)  # sorted, disjoint [start, end)
    rexmit: list[list[int]] = field(default_factory=list)  # [start, end, uid of the resend]

    def clear(self) -> None:
        self.sacked.clear()
        self.rexmit.clear()


def update(sb: Scoreboard, snd_una: int, snd_max: int, blocks: tuple[tuple[int, int], ...]) -> None:
    """Merge an ACK's blocks (clipped to [snd_una, snd_max)) and forget what snd_una now covers."""
    ranges = [r for r in sb.sacked if r[1] > snd_una]
    for s, e in blocks:
        s, e = max(s, snd_una), min(e, snd_max)
        if s < e:
            ranges.append([s, e])
    ranges.sort()
    merged: list[list[int]] = []
    for s, e in ranges:
        s = max(s, snd_una)
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    sb.sacked = merged
    sb.rexmit = [r for r in sb.rexmit if r[1] > snd_una and not _covered(merged, r[0], r[1])]


def is_sacked(sb: Scoreboard, seq: int) -> bool:
    return any(s <= seq < e for s, e in sb.sacked)


def forget_lost_rexmits(sb: Scoreboard, newest_delivered_uid: int) -> None:
    """A retransmission is lost too once a segment sent after it has been SACKed (the receiver got
    later data but not the repair; Linux's RACK, without its reordering window): it then counts
    as not yet resent, so NextSeg sends it again."""
    sb.rexmit = [r for r in sb.rexmit if r[2] > newest_delivered_uid]


def _covered(sacked: list[list[int]], s: int, e: int) -> bool:
    return any(a <= s and e <= b for a, b in sacked)


def sacked_bytes(sb: Scoreboard) -> int:
    return sum(e - s for s, e in sb.sacked)


def _gaps(sb: Scoreboard, snd_una: int, snd_max: int) -> list[tuple[int, int, int, int]]:
    """Unsacked ranges in [snd_una, snd_max) with, for each, the SACKed bytes and blocks above it
    (constant inside a gap, so IsLost is too)."""
    out = []
    pos = snd_una
    above_bytes = sacked_bytes(sb)
    above_blocks = len(sb.sacked)
    for s, e in sb.sacked:
        if s > pos:
            out.append((pos, s, above_bytes, above_blocks))
        above_bytes -= e - s
        above_blocks -= 1
        pos = max(pos, e)
    if pos < snd_max:
        out.append((pos, snd_max, 0, 0))
    return out


def _lost(above_bytes: int, above_blocks: int, mss: int) -> bool:
    """RFC 6675 IsLost: DupThresh discontiguous SACKed blocks above, or more than
    (DupThresh - 1) * SMSS SACKed bytes above."""
    return above_blocks >= DUP_THRESH or above_bytes > (DUP_THRESH - 1) * mss


def is_lost(sb: Scoreboard, seq: int, snd_max: int, mss: int) -> bool:
    for s, e, b, n in _gaps(sb, seq, snd_max):
        if s <= seq < e:
            return _lost(b, n, mss)
    return False


def _resent_overlap(sb: Scoreboard, s: int, e: int) -> int:
    return sum(max(0, min(e, r[1]) - max(s, r[0])) for r in sb.rexmit)


def pipe(sb: Scoreboard, snd_una: int, snd_max: int, mss: int) -> int:
    """RFC 6675 SetPipe: unSACKed bytes not deemed lost, plus those retransmitted (again)."""
    total = 0
    for s, e, b, n in _gaps(sb, snd_una, snd_max):
        if not _lost(b, n, mss):
            total += e - s
        total += _resent_overlap(sb, s, e)
    return total


def next_hole(sb: Scoreboard, snd_una: int, snd_max: int, mss: int) -> tuple[int, int] | None:
    """RFC 6675 NextSeg rule 1: the first unSACKed byte below the highest SACKed one that IsLost
    and is not being retransmitted; (seq, length) of at most one segment, or None."""
    resent = sorted((r[0], r[1]) for r in sb.rexmit)
    for s, e, b, n in _gaps(sb, snd_una, snd_max):
        if b == 0:
            break  # nothing SACKed above: not below the highest SACKed byte
        if not _lost(b, n, mss):
            continue
        pos = s
        for rs, re_ in resent:
            if rs <= pos < re_:
                pos = re_
        if pos >= e:
            continue
        end = min(e, pos + mss)
        for rs, _ in resent:
            if pos < rs < end:
                end = rs
        return pos, end - pos
    return None


def record_rexmit(sb: Scoreboard, seq: int, length: int, uid: int) -> None:
    sb.rexmit.append([seq, seq + length, uid])
