"""The analyzer's typed findings. Analyzers build these and never print; the JSON document
(analysis_document.py), the terminal summary and later the report are rendered from them.

Cause names are the shared vocabulary (`stallscope.vocabulary`: `Cause`, plus `UNDETERMINED` for a
stall no rule explains, with the reason, never a guess).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stallscope.vocabulary import UNDETERMINED  # noqa: F401  (the findings name it too)


@dataclass(frozen=True)
class Note:
    """Something about the capture itself (an artifact of how it was taken, not of the network),
    reported so that a reader knows what the analysis could and could not see."""

    kind: str
    message: str
    count: int = 1
    frames: tuple[int, ...] = ()  # a few example frame numbers

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "count": self.count, "frames": list(self.frames)}


@dataclass(frozen=True)
class Alternative:
    cause: str
    detail: str | None
    confidence: float
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"cause": self.cause, "detail": self.detail, "confidence": round(self.confidence, 3), "why": self.why}


@dataclass(frozen=True)
class Verdict:
    """What one cause rule concludes about one stall."""

    cause: str
    detail: str | None
    confidence: float
    evidence: dict[str, Any]
    alternatives: tuple[Alternative, ...] = ()


@dataclass(frozen=True)
class StallFinding:
    """An interval in which one direction's sender made no forward progress."""

    stream: int
    dir: int
    direction: str
    start_ns: int
    end_ns: int
    start_frame: int
    end_frame: int
    time_lost_ns: int
    cause: str
    detail: str | None
    confidence: float
    evidence: dict[str, Any]
    alternatives: tuple[Alternative, ...] = ()

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    def to_json(self) -> dict[str, Any]:
        return {
            "dir": self.dir,
            "direction": self.direction,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "start_frame": self.start_frame,
            "end_frame": self.end_frame,
            "duration_ns": self.duration_ns,
            "time_lost_ns": self.time_lost_ns,
            "cause": self.cause,
            "detail": self.detail,
            "confidence": round(self.confidence, 3),
            "evidence": self.evidence,
            "alternatives": [a.to_json() for a in self.alternatives],
        }


@dataclass(frozen=True)
class ConnectionFinding:
    """A cause that shows in the connection as a whole rather than in one stall (an MSS that was
    advertised but never used, loss that only large frames suffer, a path MTU black hole)."""

    dir: int
    direction: str
    cause: str
    detail: str | None
    confidence: float
    evidence: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "dir": self.dir,
            "direction": self.direction,
            "cause": self.cause,
            "detail": self.detail,
            "confidence": round(self.confidence, 3),
            "evidence": self.evidence,
        }


@dataclass
class DirectionAnalysis:
    """One direction of a connection: its sender's profile, what limited it, what it lost."""

    dir: int
    direction: str
    role: str  # "data sender" or "acknowledger"
    profile: dict[str, Any]
    limits: dict[str, float]  # share of the direction's active time per limiting factor
    time_lost_ns: dict[str, int]  # by cause
    goodput_bps: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "dir": self.dir,
            "direction": self.direction,
            "role": self.role,
            "goodput_bps": None if self.goodput_bps is None else round(self.goodput_bps, 1),
            "time_lost_ns": self.time_lost_ns,
            "limits": {k: round(v, 4) for k, v in self.limits.items()},
            "profile": {k: v for k, v in self.profile.items() if not k.startswith("_")},
        }


@dataclass
class ConnectionAnalysis:
    stream: int
    initiator: str
    responder: str
    start_captured: bool
    first_frame: int
    last_frame: int
    duration_ns: int
    vantage: dict[str, Any]
    directions: list[DirectionAnalysis] = field(default_factory=list)
    stalls: list[StallFinding] = field(default_factory=list)
    findings: list[ConnectionFinding] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)

    @property
    def time_lost_ns(self) -> int:
        return sum(s.time_lost_ns for s in self.stalls if s.cause != "application_idle")

    @property
    def data_direction(self) -> DirectionAnalysis | None:
        """The direction that sent the data (the first direction when neither did): the one a
        summary speaks of."""
        senders = [d for d in self.directions if d.role == "data sender"]
        return senders[0] if senders else (self.directions[0] if self.directions else None)

    def peer_of(self, d: DirectionAnalysis) -> DirectionAnalysis | None:
        """The direction opposite `d` (None where the capture showed one direction only)."""
        return next((o for o in self.directions if o.dir != d.dir), None)

    def top_cause(self) -> str | None:
        lost: dict[str, int] = {}
        for s in self.stalls:
            if s.cause != "application_idle":
                lost[s.cause] = lost.get(s.cause, 0) + s.time_lost_ns
        if lost:
            return max(sorted(lost), key=lambda c: lost[c])
        return self.findings[0].cause if self.findings else None

    def to_json(self) -> dict[str, Any]:
        return {
            "stream": self.stream,
            "initiator": self.initiator,
            "responder": self.responder,
            "start_captured": self.start_captured,
            "first_frame": self.first_frame,
            "last_frame": self.last_frame,
            "duration_ns": self.duration_ns,
            "time_lost_ns": self.time_lost_ns,
            "top_cause": self.top_cause(),
            "vantage": self.vantage,
            "directions": [d.to_json() for d in self.directions],
            "stalls": [s.to_json() for s in self.stalls],
            "findings": [f.to_json() for f in self.findings],
            "notes": [n.to_json() for n in self.notes],
        }
