"""run_bulk over a path with impairments (an ATM switch port, a jumbo-slot NIC...), returning the
built path inputs by name so callers can read the switch and NIC counters."""

from __future__ import annotations

from typing import Any

from ..run_bulk import BulkConfig, BulkResult, run_bulk


def run_impaired(cfg: BulkConfig, **impairments: Any) -> tuple[BulkResult, dict[str, Any]]:
    """run_bulk(cfg) with `impairments` added to its path; also returns the built path inputs
    ({"forward": PathInput, "reverse": PathInput})."""
    result = run_bulk(cfg, impairments=impairments)
    assert result.path_inputs is not None
    forward, reverse = result.path_inputs
    return result, {"forward": forward, "reverse": reverse}
