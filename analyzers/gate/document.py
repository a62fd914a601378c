"""One gate run over many captures, and its JSON document `stallscope.check/1` (docs/check.md,
docs/schemas/check.schema.json). The document doubles as a baseline for a later run: each capture
carries its summary (connections, stall time, count per cause)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stallscope.exit_codes import ExitCode

from .rules import ERROR, FAIL, PASS, SKIP, CaptureVerdict, exit_status
from .text import decoded

SCHEMA = "stallscope.check/1"


@dataclass
class CheckRun:
    verdicts: list[CaptureVerdict]
    policy: str | None = None  # the policy file, as named
    baseline: str | None = None  # the baseline file, as named

    @property
    def exit_status(self) -> ExitCode:
        return exit_status(self.verdicts)

    @property
    def verdict(self) -> str:
        code = self.exit_status
        return PASS if code is ExitCode.OK else FAIL if code is ExitCode.VERDICT_FAILED else ERROR

    def totals(self) -> dict[str, int]:
        results = [r for v in self.verdicts for r in v.results]
        return {
            "captures": len(self.verdicts),
            "captures_failed": sum(v.verdict == FAIL for v in self.verdicts),
            "captures_with_errors": sum(v.verdict == ERROR for v in self.verdicts),
            "tests": len(results),
            "passed": sum(r.status == PASS for r in results),
            "failed": sum(r.status == FAIL for r in results),
            "skipped": sum(r.status == SKIP for r in results),
            "errors": sum(r.status == ERROR for r in results),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "verdict": self.verdict,
            "exit_status": int(self.exit_status),
            "policy": None if self.policy is None else decoded(self.policy),
            "baseline": None if self.baseline is None else decoded(self.baseline),
            "totals": self.totals(),
            "captures": [_capture_json(v) for v in self.verdicts],
        }


def _capture_json(v: CaptureVerdict) -> dict[str, Any]:
    return {
        "path": decoded(v.path),
        "status": v.status,
        "error": v.error,
        "verdict": v.verdict,
        "summary": None if v.summary is None else v.summary.to_json(),
        "tests": len(v.results),
        "failed": v.count(FAIL),
        "skipped": v.count(SKIP),
        "errors": v.count(ERROR),
        "results": [_result_json(r) for r in v.results],
    }


def _result_json(r: Any) -> dict[str, Any]:
    doc = r.to_json()
    doc["connection"] = None if r.connection is None else decoded(r.connection)
    doc["message"] = decoded(r.message)
    for e in doc["evidence"]:
        e["text"] = decoded(e["text"])
    return doc
