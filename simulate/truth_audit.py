"""Checks a bulk run's ground truth against the run's own records (issue 17).

Each truth stall must be borne out by what the run did:
- a loss cause (burst/single loss, PMTU black hole, MSS mismatch, jumbo slots) has a data segment of
  its direction dropped in its episode, and one of the episode's drop reasons gives that cause and
  detail (_BY_REASON below);
- ack_loss_timeout: none of the timed-out segments was dropped, and a pure ACK of the peer was;
- spurious_timeout: none of the timed-out segments was dropped;
- nagle_delayed_ack: data unacknowledged (evidence b_sent > 0, and for the tapped sender, the
  packet records: data sent and not yet acknowledged just before the stall ended) and a held
  segment shorter than the MSS. With nothing unacknowledged there is no Nagle stall.

A loss stall's episode is what loss attribution reads: drops since the previous timeout stall of
the same direction up to the stall's end.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

from stallscope.vocabulary import Cause
from .ground_truth import Stall


# The simulator's reading of its drop reasons (native/src/sim/loss.rs), restated so the audit
# checks the ground truth against the drops independently of the code that wrote it.
# Drop reason -> (cause, detail when several packets were lost); single losses of the
# congestion kinds become SINGLE_LOSS_TIMEOUT. Listed in priority order for mixed episodes:
# a path that cannot carry the segment at all explains the stall before any loss pattern does.
_BY_REASON: dict[str, tuple[Cause, str | None]] = {
    "pmtu_blackhole": (Cause.PMTU_BLACKHOLE, None),
    "pmtu_frag_needed": (Cause.PMTU_BLACKHOLE, None),  # the sender timed out despite the ICMP
    # An interface MTU larger than the host's own link carries: a black hole at the first hop.
    "exceeds_mtu": (Cause.PMTU_BLACKHOLE, "interface_mtu"),
    "jumbo_slot_exhaustion": (Cause.JUMBO_SLOT_EXHAUSTION, None),
    "atm_cell_loss": (Cause.BURST_LOSS_TIMEOUT, "atm_cell_loss"),
    "atm_ppd": (Cause.BURST_LOSS_TIMEOUT, "atm_cell_loss"),
    "atm_epd": (Cause.BURST_LOSS_TIMEOUT, "queue_overflow"),  # whole packets, as a packet switch
    "queue_overflow": (Cause.BURST_LOSS_TIMEOUT, "queue_overflow"),
    "random_loss": (Cause.BURST_LOSS_TIMEOUT, None),
    "gilbert_loss": (Cause.BURST_LOSS_TIMEOUT, None),
    "injected_loss": (Cause.BURST_LOSS_TIMEOUT, None),
}
_STRUCTURAL = {Cause.PMTU_BLACKHOLE, Cause.MSS_MISMATCH, Cause.JUMBO_SLOT_EXHAUSTION}

# A uid's host: every host numbers its segments from its own uid_base (run_bulk: 0 and 1 << 40,
# naglemark: n << 32), so the bits above 32 tell whose segment a drop was.
HOST_UID_SHIFT = 32

LOSS_CAUSES = {Cause.BURST_LOSS_TIMEOUT, Cause.SINGLE_LOSS_TIMEOUT, *_STRUCTURAL}
TIMEOUT_CAUSES = LOSS_CAUSES | {Cause.ACK_LOSS_TIMEOUT, Cause.SPURIOUS_TIMEOUT}
SEQ_MOD = 1 << 32


@dataclass(frozen=True)
class Violation:
    stall: Stall
    rule: str

    def __str__(self) -> str:
        s = self.stall
        return (f"{self.rule}: {s.cause.value}/{s.detail} {s.direction} {s.start_ns}..{s.end_ns} "
                f"evidence={s.evidence}")


def _host_of_uid(uid: int) -> int:
    return uid >> HOST_UID_SHIFT


def _direction_src(direction: str) -> str:
    return direction.split("->")[0].strip().split(":")[0]


def _later(a: int, b: int | None) -> bool:
    return b is None or 0 < (a - b) % SEQ_MOD < SEQ_MOD // 2


class _Outstanding:
    """For one host seen at the tap: after each record, its highest data sent and the highest ACK
    its peer sent back (modulo 2**32)."""

    def __init__(self, records: list[tuple[int, Any]], src: str) -> None:
        self.times: list[int] = []
        self.unacked: list[bool] = []
        high: int | None = None
        acked: int | None = None
        for at, seg in records:
            if seg.src == src:
                if seg.payload_len > 0:
                    end = (seg.seq + seg.payload_len) % SEQ_MOD
                    if _later(end, high):
                        high = end
            elif seg.flags & 0x10 and _later(seg.ack, acked):  # ACK
                acked = seg.ack
            self.times.append(at)
            self.unacked.append(high is not None and (acked is None or _later(high, acked)))

    def before(self, t: int) -> bool:
        """Data unacknowledged just before `t` (records at `t` itself are the release)."""
        i = bisect_left(self.times, t)
        return i > 0 and self.unacked[i - 1]


def audit(result: Any) -> list[Violation]:
    """Violations of the rules above in one BulkResult (run_bulk)."""
    out: list[Violation] = []
    drops = list(result.drops)
    records = list(result.records)
    maxseg = result.ground_truth.summary.get("maxseg") or 0
    # The first packet is the sender's SYN, seen where it leaves: its sends and the ACKs it gets
    # are on the records at the times it saw them.
    tapped = {seg.src: _Outstanding(records, seg.src) for _, seg in records[:1]}
    hosts: dict[str, int] = {}
    if records:
        for _, seg in records:
            if seg.uid is not None:
                hosts.setdefault(seg.src, _host_of_uid(seg.uid))
    last_timeout_end: dict[str, int] = {}
    for s in sorted(result.ground_truth.stalls, key=lambda s: (s.end_ns, s.start_ns)):
        src = _direction_src(s.direction)
        host = hosts.get(src)
        if s.cause in TIMEOUT_CAUSES:
            since = last_timeout_end.get(s.direction, -1)
            last_timeout_end[s.direction] = s.end_ns
            uids = set(s.evidence.get("timeout_uids", ()))
            dropped_uids = {d.uid for d in drops if d.at_ns <= s.end_ns}
            window = [d for d in drops if since < d.at_ns <= s.end_ns]
            data = [d for d in window if d.payload_len > 0 and (host is None or _host_of_uid(d.uid) == host)]
            if s.cause in LOSS_CAUSES:
                if not data and not (uids & dropped_uids):
                    out.append(Violation(s, "loss cause without a dropped data segment"))
                    continue
                reasons = {d.reason for d in data} | {d.reason for d in drops if d.uid in uids}
                mapped = {_BY_REASON[r] for r in reasons if r in _BY_REASON}
                if s.cause is Cause.SINGLE_LOSS_TIMEOUT:
                    ok = any(c not in _STRUCTURAL for c, _ in mapped)
                else:
                    ok = (s.cause, s.detail) in mapped
                if not ok:
                    out.append(Violation(s, f"drop reasons {sorted(reasons)} do not give the cause/detail"))
            else:
                if uids & dropped_uids:
                    out.append(Violation(s, "a timed-out segment was dropped: a loss, not " + s.cause.value))
                if s.cause is Cause.ACK_LOSS_TIMEOUT and not any(
                        d.payload_len == 0 and (host is None or _host_of_uid(d.uid) != host) for d in window):
                    out.append(Violation(s, "ack_loss_timeout without a lost ACK"))
        elif s.cause is Cause.NAGLE_DELAYED_ACK:
            b_sent = s.evidence.get("b_sent", 0)
            held = s.evidence.get("held", 0)
            if b_sent <= 0:
                out.append(Violation(s, "Nagle cause with nothing unacknowledged (evidence)"))
            if not 0 < held < maxseg:
                out.append(Violation(s, f"Nagle cause without a held segment shorter than the MSS ({maxseg})"))
            if src in tapped and not tapped[src].before(s.end_ns):
                out.append(Violation(s, "Nagle cause with nothing unacknowledged (packet records)"))
    return out
