"""run_bulk over a path with impairments (an ATM switch port, a jumbo-slot NIC...).

run_bulk builds its path with `make_path(sim, link, rate_bps=..., delay_ns=..., mtu=...,
queue_bytes=..., drop_log=...)` and has no way to pass impairments yet, so for the duration of
one call this wraps the `make_path` that run_bulk looks up to add them. Everything else (hosts,
taps, ground truth, the drop-log loss classifier) is run_bulk's own.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from typing import Any, Iterator

from .. import run_bulk as bulk_module
from ..run_bulk import BulkConfig, BulkResult


@contextmanager
def _impaired_paths(impairments: dict[str, Any]) -> Iterator[dict[str, Any]]:
    original = bulk_module.make_path
    built: dict[str, Any] = {}

    def make_path(*args: Any, **kwargs: Any):
        fwd, rev = original(*args, **kwargs, **impairments)
        built["forward"], built["reverse"] = fwd, rev
        return fwd, rev

    bulk_module.make_path = functools.update_wrapper(make_path, original)
    try:
        yield built
    finally:
        bulk_module.make_path = original


def run_impaired(cfg: BulkConfig, **impairments: Any) -> tuple[BulkResult, dict[str, Any]]:
    """run_bulk(cfg) with `impairments` added to its path; also returns the built path inputs
    ({"forward": PathInput, "reverse": PathInput}) so callers can read switch/NIC counters."""
    with _impaired_paths(impairments) as built:
        result = bulk_module.run_bulk(cfg)
    return result, built
