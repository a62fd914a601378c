"""A fit's values, each with where it came from, and how they become the simulator's inputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stallscope.simulate.run_bulk import BulkConfig


@dataclass(frozen=True)
class Fitted:
    """One fitted value and where it came from (a profile field, a measurement, a default)."""

    value: Any
    source: str


@dataclass
class Fit:
    """A connection's fitted configuration: `kind` is "bulk" or "request_response"; `values` are
    the simulator's inputs with their sources; `warnings` say where the fit is weak."""

    stream: int
    dir: int
    kind: str
    values: dict[str, Fitted]
    warnings: list[str] = field(default_factory=list)

    def with_values(self, values: dict[str, Fitted]) -> Fit:
        return Fit(self.stream, self.dir, self.kind, {**self.values, **values}, list(self.warnings))

    def value(self, name: str) -> Any:
        v = self.values.get(name)
        return None if v is None else v.value

    def bulk_config(self, **changes: Any) -> BulkConfig:
        """The BulkConfig of a bulk fit, with `changes` applied (a what-if)."""
        names = ("personality", "receiver_personality", "mtu", "mss", "sndbuf", "rcvbuf", "write", "read", "bytes",
                 "nagle", "receiver_nagle", "rate_bps", "delay_ns", "sack", "seed", "link", "reply", "cost", "read_rate_bps", "think_ns",
                 "route_mtu", "mtu_probing", "host_mtu")
        kw = {n: self.value(n) for n in names if self.value(n) is not None}
        changes = {k: v for k, v in changes.items() if k not in PATH_CHANGES}
        kw.update(changes)
        kw.setdefault("link", "custom")
        # The hosts' costs: a model by name, its reads slowed to the receiving application's pace.
        cost, read_rate = kw.pop("cost", None) or "free", kw.pop("read_rate_bps", None)
        if read_rate:
            from stallscope.simulate.slow_reader import reader_cost

            cost = reader_cost(cost, int(read_rate))
        return BulkConfig(cost=cost, **kw)

    def impairments(self, changes: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The path impairments a bulk run of the fit takes, with `changes` applied: `impairments`
        given whole, or a fitted path mechanism (`atm_switch`, `jumbo_nic`, `pmtu_hop`: the
        mechanism replaces the replayed losses), else the trace's losses replayed on the same
        segments."""
        changes = changes or {}
        if changes.get("impairments") is not None:
            return changes["impairments"]
        out: dict[str, Any] = {}
        port = changes.get("atm_switch", self.value("atm_switch"))
        if port:
            out["atm_switch"] = atm_spec(port)
        nic = changes.get("jumbo_nic", self.value("jumbo_nic"))
        if nic:
            out.update(jumbo_impairments(nic))
        hop = changes.get("pmtu_hop", self.value("pmtu_hop"))
        if hop:
            out.update(pmtu_mtu=int(hop["mtu"]), pmtu_mode=str(hop["mode"]))
        if out:
            return out
        return self.value("impairments")

    def trial_args(self, **changes: Any) -> dict[str, Any]:
        """run_naglemark_capture's arguments for a request/response fit, with `changes` applied."""
        names = ("personality", "variant", "sockbuf", "app_buf", "lengths", "think_ns", "rate_bps", "delay_ns", "mtu",
                 "seed")
        kw = {n: self.value(n) for n in names}
        kw.update(changes)
        kw.setdefault("trial", "S")
        # The path is given whole (rate, delay, MTU), so the preset only names the framing.
        kw.setdefault("link", "gige")
        return kw

    def to_json(self) -> dict[str, Any]:
        values = {}
        for name, v in sorted(self.values.items()):
            if name.startswith("_"):
                continue
            value = v.value
            if name == "lengths":
                value = {"responses": len(value), "bytes": sum(value), "first": value[:5]}
            values[name] = {"value": value, "source": v.source}
        return {"stream": self.stream, "dir": self.dir, "kind": self.kind, "values": values,
                "warnings": list(self.warnings)}


# What-if and calibration changes that configure the path's impairments, not the BulkConfig.
PATH_CHANGES = ("impairments", "atm_switch", "jumbo_nic", "pmtu_hop", "ensemble")


def atm_spec(port: dict[str, Any]) -> Any:
    """The simulator's AtmSwitchSpec of a fitted switch port ({"buffer_cells", "policy",
    "out_rate_bps"}): the fitted link is its input (the access link), cells leave at out_rate_bps."""
    from stallscope.simulate.links.atm import CELL_PAYLOAD
    from stallscope.simulate.links.presets import AtmSwitchSpec

    return AtmSwitchSpec(int(port["buffer_cells"]) * CELL_PAYLOAD, int(port["out_rate_bps"]), str(port["policy"]))


def jumbo_impairments(nic: dict[str, Any]) -> dict[str, Any]:
    """The simulator's jumbo-NIC impairments of a fitted receive-slot pool ({"slots",
    "replenish_ns", "hold_until_acked"})."""
    out: dict[str, Any] = {"jumbo_slots": int(nic["slots"])}
    if nic.get("replenish_ns"):
        out["jumbo_replenish_ns"] = int(nic["replenish_ns"])
    if "hold_until_acked" in nic:
        out["jumbo_hold_until_acked"] = bool(nic["hold_until_acked"])
    return out
