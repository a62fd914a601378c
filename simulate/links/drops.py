"""Every packet a link throws away, with where and why: the evidence loss attribution reads.

Links take an `on_drop(now, segment, reason)` callback; `DropLog.callback(where)` makes one that
records the drop and counts it into the run's GroundTruth.drops under its reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..ground_truth import GroundTruth
from ..segment import Segment


@dataclass(frozen=True, slots=True)
class Drop:
    at_ns: int
    uid: int
    reason: str
    where: str
    flow: tuple[str, int, str, int]  # (src, sport, dst, dport)
    seq: int
    payload_len: int
    ip_len: int


class DropLog:
    def __init__(self, ground_truth: GroundTruth | None = None) -> None:
        self.ground_truth = ground_truth
        self.drops: list[Drop] = []
        self.by_uid: dict[int, Drop] = {}

    def callback(self, where: str) -> Callable[[int, Segment, str], None]:
        def on_drop(now: int, segment: Segment, reason: str) -> None:
            self.record(now, segment, reason, where)

        return on_drop

    def record(self, now: int, segment: Segment, reason: str, where: str) -> Drop:
        drop = Drop(now, segment.uid, reason, where,
                    (segment.src, segment.sport, segment.dst, segment.dport),
                    segment.seq, segment.payload_len, segment.ip_len)
        self.drops.append(drop)
        self.by_uid[segment.uid] = drop
        if self.ground_truth is not None:
            self.ground_truth.count_drop(reason)
        return drop

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for d in self.drops:
            out[d.reason] = out.get(d.reason, 0) + 1
        return dict(sorted(out.items()))

    def for_seq(self, flow: tuple[str, int, str, int], seq: int) -> list[Drop]:
        """Drops of any transmission of the segment starting at `seq` on `flow`."""
        return [d for d in self.drops if d.flow == flow and d.seq == seq]
