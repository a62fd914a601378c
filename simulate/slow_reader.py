"""A slow reader: a host cost model whose read() copies run at a given rate, so that the receiving
application drains its socket buffer slowly and the window it offers shrinks (receiver-window
limited transfers). Used by `stallscope simulate --read-rate` and the analyzer's scoring corpus."""

from __future__ import annotations

from typing import Any


def reader_cost(cost: str | Any, read_rate_bps: int | None) -> Any:
    """The host cost model `cost` (a name from simulate.tcp.costs.COST_MODELS or a HostCost) with
    read() copies slowed to `read_rate_bps`: a slow reader. The receiving application then takes
    1024 * 8 / rate seconds per KB it reads, during which its socket buffer fills and the window it
    offers shrinks (the cost model is both hosts'; in request/response runs the sender reads its
    replies at that rate too). None: the model as it is."""
    from dataclasses import replace

    from stallscope.simulate.host_cost import COST_MODELS, HostCost

    if read_rate_bps is None:
        return cost
    if read_rate_bps <= 0:
        raise ValueError(f"--read-rate must be positive, got {read_rate_bps}")
    base = cost if isinstance(cost, HostCost) else COST_MODELS.get(cost)
    if base is None:
        raise ValueError(f"unknown host cost model {cost!r}; expected one of {', '.join(COST_MODELS)}")
    return replace(base, read_copy_ns_per_kb=-(-8 * 1024 * 1_000_000_000 // read_rate_bps))
