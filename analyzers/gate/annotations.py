"""GitHub Actions annotations: one `::error file=CAPTURE,title=TITLE::MESSAGE` workflow command per
capture and rule that failed (its connections together) or per capture that could not be read,
with the workflow-command escaping (% CR LF in the message; also : and , in a property).

GitHub shows at most 10 error annotations per step and 50 per job; after MAX_ANNOTATIONS a last
`::notice::` says how many more there were (the JUnit and JSON reports hold them all)."""

from __future__ import annotations

import os
from typing import Mapping

from .document import CheckRun
from .rules import ERROR, FAIL
from .text import annotation_data, annotation_property

MAX_ANNOTATIONS = 50
# Evidence lines per annotation: the message is for a glance, the reports hold the rest.
EVIDENCE_LINES = 5


def under_github_actions(env: Mapping[str, str] | None = None) -> bool:
    return (os.environ if env is None else env).get("GITHUB_ACTIONS") == "true"


def annotations(run: CheckRun) -> list[str]:
    groups: dict[tuple[int, str, str | None], list] = {}
    for i, v in enumerate(run.verdicts):
        for r in v.results:
            if r.status in (FAIL, ERROR):
                groups.setdefault((i, r.rule, r.scope), []).append(r)
    lines = []
    for (i, rule, scope), results in groups.items():
        path = run.verdicts[i].path
        name = rule if scope in (None, "rules") else f"{scope}: {rule}"
        title = f"stallscope check: {name}" if results[0].status == FAIL else "stallscope check: capture not read"
        parts = []
        for r in results:
            head = r.message if r.stream is None else f"stream {r.stream} ({r.connection}): {r.message}"
            parts.append(r.failure_text(EVIDENCE_LINES).replace(r.message, head, 1))
        lines.append(f"::error file={annotation_property(path)},title={annotation_property(title)}::"
                     f"{annotation_data(chr(10).join(parts))}")
    if len(lines) > MAX_ANNOTATIONS:
        rest = len(lines) - MAX_ANNOTATIONS
        lines = lines[:MAX_ANNOTATIONS] + [f"::notice title=stallscope check::{rest} more failed rules "
                                           "(see the JUnit or JSON report)"]
    return lines
