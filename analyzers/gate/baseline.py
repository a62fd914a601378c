"""A previous run's results, as the gate's baseline: per capture, its stall time and its count of
each cause. Read from a `stallscope check -f json` document (`stallscope.check/1`, whose captures
carry this summary) or a `stallscope analyze -f json` one (`stallscope.analysis/1`, summarised
here the same way)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any, Mapping

# Time the sender had nothing to send is not a stall a gate should count.
NOT_COUNTED = frozenset({"application_idle"})


class BaselineError(ValueError):
    """A baseline file that cannot be used; the message names the file and what is wrong."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path, self.problem = str(path), problem
        super().__init__(f"{path}: {problem}")


@dataclass(frozen=True)
class CaptureSummary:
    """What a baseline compares: connections, stall time (the connections' `time_lost_ns`,
    application_idle excluded) and, per cause, its stalls plus its connection findings."""

    connections: int
    stall_time_ns: int
    causes: Mapping[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"connections": self.connections, "stall_time_ns": self.stall_time_ns,
                "causes": dict(sorted(self.causes.items()))}


def summarize(file_analysis: Any) -> CaptureSummary:
    """The summary of one analysed capture (stallscope.analyzers.analyze.FileAnalysis)."""
    causes: dict[str, int] = {}
    for c in file_analysis.connections:
        for cause in [s.cause for s in c.stalls] + [f.cause for f in c.findings]:
            if cause not in NOT_COUNTED:
                causes[cause] = causes.get(cause, 0) + 1
    return CaptureSummary(len(file_analysis.connections),
                          sum(c.time_lost_ns for c in file_analysis.connections), dict(sorted(causes.items())))


def _summarize_analysis_json(f: Mapping[str, Any]) -> CaptureSummary:
    causes: dict[str, int] = {}
    conns = f.get("connections") or []
    for c in conns:
        for item in list(c.get("stalls") or []) + list(c.get("findings") or []):
            cause = item.get("cause")
            if isinstance(cause, str) and cause not in NOT_COUNTED:
                causes[cause] = causes.get(cause, 0) + 1
    return CaptureSummary(len(conns), sum(int(c.get("time_lost_ns") or 0) for c in conns), dict(sorted(causes.items())))


@dataclass(frozen=True)
class Baseline:
    """Per capture path, its summary in the previous run."""

    source: str
    captures: Mapping[str, CaptureSummary]

    def lookup(self, path: str) -> tuple[str, CaptureSummary] | None:
        """The baseline's entry for a capture: the same path, else the only entry with the same
        file name (a CI job that checks out into another directory). None when neither."""
        if path in self.captures:
            return path, self.captures[path]
        name = PurePath(path).name
        same = [p for p in self.captures if PurePath(p).name == name]
        return (same[0], self.captures[same[0]]) if len(same) == 1 else None


def load_baseline(path: str | Path) -> Baseline:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise BaselineError(path, f"cannot read the baseline: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise BaselineError(path, "not UTF-8 text: expected the JSON of `stallscope check -f json`") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise BaselineError(path, f"not JSON ({e.msg} at line {e.lineno}): expected the output of "
                                  "`stallscope check -f json` or `stallscope analyze -f json`") from None
    return parse_baseline(doc, str(path))


def parse_baseline(doc: Any, source: str) -> Baseline:
    schema = doc.get("schema") if isinstance(doc, dict) else None
    captures: dict[str, CaptureSummary] = {}
    try:
        if schema == "stallscope.check/1":
            for c in doc["captures"]:
                if c.get("status") == "rejected":
                    continue
                s = c["summary"]
                captures[c["path"]] = CaptureSummary(int(s["connections"]), int(s["stall_time_ns"]),
                                                     {str(k): int(v) for k, v in s["causes"].items()})
        elif schema == "stallscope.analysis/1":
            for f in doc["files"]:
                if f.get("status") != "rejected":
                    captures[f["path"]] = _summarize_analysis_json(f)
        else:
            raise BaselineError(source, f"a document of schema {schema!r}; allowed: stallscope.check/1, "
                                        "stallscope.analysis/1")
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        if isinstance(e, BaselineError):
            raise
        raise BaselineError(source, f"not a complete {schema} document (missing or odd {e})") from None
    return Baseline(source, captures)
