"""Turns the links' drop logs into the host's `loss_classifier`: when a retransmission timeout
fires, the host asks how the loss came about and records the stall under that cause.

The classifier gets the uids of the segments retransmitted after the timeout (the lost
transmissions). It looks them up in the DropLog and also counts every drop of the same flow
since its previous answer, because one timeout usually repairs an episode of several losses
(one fast retransmit repairs one loss per window: docs/tcp-rules.md#loss-recovery).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

from stallscope.vocabulary import Cause
from .links.drops import Drop, DropLog

LossClassifier = Callable[[list[int]], tuple[Cause, str | None]]

# Drop reason -> (cause, detail when several packets were lost); single losses of the
# congestion kinds become SINGLE_LOSS_TIMEOUT. Listed in priority order for mixed episodes:
# a path that cannot carry the segment at all explains the stall before any loss pattern does.
_BY_REASON: dict[str, tuple[Cause, str | None]] = {
    "pmtu_blackhole": (Cause.PMTU_BLACKHOLE, None),
    "pmtu_frag_needed": (Cause.PMTU_BLACKHOLE, None),  # the sender timed out despite the ICMP
    "exceeds_mtu": (Cause.MSS_MISMATCH, None),  # a segment sized by an MSS the path cannot carry
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


def _no_data_lost(acks_lost: int) -> tuple[Cause, str | None]:
    """A timeout none of whose segments was dropped: the data arrived. With ACKs of the peer lost
    since the previous answer, the ACKs never came back (ack_loss_timeout); with nothing lost at
    all, the RTO fired before an ACK that was on its way (spurious_timeout)."""
    return (Cause.ACK_LOSS_TIMEOUT, None) if acks_lost else (Cause.SPURIOUS_TIMEOUT, None)


def default_classification(uids: list[int]) -> tuple[Cause, str | None]:
    """What the host assumes with no drop log: one segment -> single loss, several -> burst."""
    if len(uids) <= 1:
        return Cause.SINGLE_LOSS_TIMEOUT, None
    return Cause.BURST_LOSS_TIMEOUT, "queue_overflow"


class DropLogClassifier:
    """Callable loss classifier over one run's DropLog; keeps the evidence of each answer."""

    def __init__(self, log: DropLog) -> None:
        self.log = log
        # Per flow: how far into the log drops were already attributed to an earlier timeout.
        self._seen: dict[tuple[str, int, str, int], int] = {}
        # How far into the log the peers' pure ACKs were already counted for a timeout.
        self._acks_seen = 0
        self.answers: list[dict[str, Any]] = []

    def episode(self, uids: list[int]) -> list[Drop]:
        named = [self.log.by_uid[u] for u in uids if u in self.log.by_uid]
        flows = {d.flow for d in named}
        drops = self.log.drops
        start = min((self._seen.get(f, 0) for f in flows), default=len(drops))
        fresh = [d for i, d in enumerate(drops[start:], start)
                 if d.flow in flows and i >= self._seen.get(d.flow, 0)]
        for f in flows:
            self._seen[f] = len(drops)
        out = {id(d): d for d in named}
        out.update({id(d): d for d in fresh})
        return sorted(out.values(), key=lambda d: (d.at_ns, d.uid))

    def acks_lost(self, uids: list[int]) -> int:
        """Pure ACKs (no payload) of other hosts dropped since the previous count."""
        drops = self.log.drops
        start, self._acks_seen = self._acks_seen, len(drops)
        if not uids:
            return 0
        host = uids[0] >> HOST_UID_SHIFT
        return sum(1 for d in drops[start:] if d.payload_len == 0 and d.uid >> HOST_UID_SHIFT != host)

    def __call__(self, uids: list[int]) -> tuple[Cause, str | None]:
        named = [u for u in uids if u in self.log.by_uid]
        acks_lost = self.acks_lost(uids)
        drops = self.episode(uids)
        if uids and not named:
            # None of the resent segments was dropped: the data was delivered.
            answer = _no_data_lost(acks_lost)
        elif not drops:
            answer = default_classification(uids)
        else:
            reasons = Counter(d.reason for d in drops)
            known = [r for r in _BY_REASON if r in reasons]
            if not known:
                answer = default_classification(uids)
            else:
                cause, detail = _BY_REASON[known[0]]
                packets = len({(d.flow, d.seq) for d in drops})
                if cause not in _STRUCTURAL and packets == 1:
                    cause, detail = Cause.SINGLE_LOSS_TIMEOUT, None
                answer = (cause, detail)
        self.answers.append({
            "uids": list(uids), "cause": answer[0].value, "detail": answer[1],
            "drops": dict(sorted(Counter(d.reason for d in drops).items())),
            "packets_lost": len({(d.flow, d.seq) for d in drops}), "acks_lost": acks_lost,
        })
        return answer

    @property
    def last_evidence(self) -> dict[str, Any]:
        return self.answers[-1] if self.answers else {}


def make_loss_classifier(log: DropLog) -> DropLogClassifier:
    return DropLogClassifier(log)
