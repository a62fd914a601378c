"""The JSON written beside each scenario capture: what was asked for, what should show, what happened.

Causes are the simulator's Cause names, so analyzers are scored against live captures and
simulated ones alike. Stall timings are not known in a live run (the kernel decides them);
the expected causes, the emulator's drop counts and tcpdump's own drops are.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA = "stallscope.capture_truth/1"


def truth_document(
    *,
    scenario: str,
    description: str,
    parameters: dict[str, Any],
    expected: list[str],
    detail: str | None,
    emulator: dict[str, Any],
    tcpdump: dict[str, dict[str, int]],
    workload: dict[str, Any],
    files: dict[str, str],
    observed: dict[str, Any] | None = None,
    interfaces: dict[str, dict[str, int]] | None = None,
) -> dict[str, Any]:
    fwd, rev = emulator.get("forward", {}), emulator.get("reverse", {})
    drops: dict[str, int] = {}
    for direction in (fwd, rev):
        for reason, n in direction.get("drops", {}).items():
            drops[reason] = drops.get(reason, 0) + n
    return {
        "schema": SCHEMA,
        "scenario": scenario,
        "description": description,
        "expected_causes": expected,
        "detail": detail,
        "negative_control": not expected,
        "parameters": parameters,
        "drops": dict(sorted(drops.items())),
        "emulator": emulator,
        "tcpdump": tcpdump,
        # Kernel drop counters of the veth ends (s0, l0, l1, r0).
        "interfaces": interfaces or {},
        "workload": workload,
        "files": files,
        # What the captures show, read with dpkt (segment sizes, timeouts, zero windows...).
        "observed": observed or {},
    }


def write(path: Path, document: dict[str, Any]) -> None:
    Path(path).write_text(json.dumps(document, indent=2) + "\n")
