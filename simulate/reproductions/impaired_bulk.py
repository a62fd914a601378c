"""run_bulk over a path with impairments (an ATM switch port, a jumbo-slot NIC...), returning the
path's counters beside the result so callers can read the switch and NIC figures."""

from __future__ import annotations

from typing import Any

from ..path_counters import PathCounters
from ..run_bulk import BulkConfig, BulkResult, run_bulk


def run_impaired(cfg: BulkConfig, **impairments: Any) -> tuple[BulkResult, PathCounters]:
    """run_bulk(cfg) with `impairments` added to its path, and the path's counters."""
    result = run_bulk(cfg, impairments=impairments)
    assert result.path is not None
    return result, result.path
