"""Every packet a simulated path threw away, with where and why (BulkResult.drops): the evidence
the ground truth's loss causes are checked against (simulate/truth_audit.py)."""

from __future__ import annotations

from dataclasses import dataclass


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
