"""Ground truth written beside every simulated pcap: the stalls the simulator caused, by cause.

Causes and their details are the shared vocabulary (stallscope/vocabulary.py): analyzers are scored
against them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from stallscope.vocabulary import DETAILS, Cause


@dataclass(frozen=True, slots=True)
class Stall:
    start_ns: int
    end_ns: int
    cause: Cause
    detail: str | None = None
    # Sender-side direction of the connection that stalled ("sender -> receiver").
    direction: str = ""
    # Free-form evidence (held segment length, timer that released it, drops that caused it...).
    evidence: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.end_ns < self.start_ns:
            raise ValueError(f"stall ends before it starts: {self.start_ns}..{self.end_ns}")
        allowed = DETAILS.get(self.cause)
        if self.detail is not None and (allowed is None or self.detail not in allowed):
            raise ValueError(f"detail {self.detail!r} is not defined for cause {self.cause.value}")

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass
class GroundTruth:
    """Everything a scorer needs: the run's parameters, its stalls, and what the links dropped."""

    parameters: dict[str, Any]
    stalls: list[Stall] = field(default_factory=list)
    drops: dict[str, int] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)

    def add(self, stall: Stall) -> None:
        self.stalls.append(stall)

    def count_drop(self, reason: str, n: int = 1) -> None:
        self.drops[reason] = self.drops.get(reason, 0) + n

    def to_json(self) -> dict[str, Any]:
        stalls = []
        for s in sorted(self.stalls, key=lambda s: (s.start_ns, s.end_ns, s.cause.value)):
            d = asdict(s)
            d["cause"] = s.cause.value
            d["duration_ns"] = s.duration_ns
            stalls.append(d)
        return {
            "schema": "stallscope.ground_truth/1",
            "parameters": self.parameters,
            "summary": self.summary,
            "stalls": stalls,
            "drops": dict(sorted(self.drops.items())),
        }

    def write(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=2) + "\n")
