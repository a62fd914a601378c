"""The comparison with the reference simulator (issue 13): fit each connection to a simulator
configuration (fit/), run it and analyse its capture (reference.py), set the two side by side
(compare.py) and predict what one change would do (whatif.py). `compare_file` runs it all."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from ..analyze import FileAnalysis
from .calibrate import refine
from .compare import Comparison, compare, time_lost
from .fit import Fit, Fitted, fit_connection
from .fit.buffers import read_step
from .fit.delayed_ack import with_delack
from .reference import run_reference
from .whatif import QuickRun, Workers, plan, start_all

__all__ = ["compare_file", "fit_connection", "refine", "read_step", "run_reference", "compare", "Workers",
           "ConnectionReference", "Prediction"]

# A prediction is flagged when the fitted run itself is further than this from the trace's goodput.
POOR_FIT = 0.25
# From a request/response connection of this many packets on, the what-ifs' worker processes start
# at once, so their start-up overlaps the fit (bulk what-ifs run in threads: whatif.start_all).
EARLY_WORKERS_PACKETS = 20_000


@dataclass
class Prediction:
    name: str
    description: str
    changes: dict[str, Any]
    goodput_bps: float | None
    gain: float | None  # predicted goodput / the fitted run's
    time_lost_ns: dict[str, int]
    error: str | None = None
    # Request/response fits: the predicted response times (ns from request to last byte), in order.
    responses_ns: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = {"name": self.name, "description": self.description, "changes": self.changes,
               "goodput_bps": self.goodput_bps, "gain": None if self.gain is None else round(self.gain, 4),
               "time_lost_ns": dict(sorted(self.time_lost_ns.items())), "error": self.error}
        if self.responses_ns:
            ordered = sorted(self.responses_ns)
            out["responses"] = {"count": len(ordered), "median_ns": ordered[len(ordered) // 2], "max_ns": ordered[-1]}
        return out


@dataclass
class ConnectionReference:
    """One connection's comparison: its fit, the comparison and the what-ifs, best gain first."""

    stream: int
    fit: Fit
    comparison: Comparison
    what_ifs: list[Prediction] = field(default_factory=list)
    poor_fit: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"stream": self.stream, "fit": self.fit.to_json(), "comparison": self.comparison.to_json(),
                "poor_fit": self.poor_fit, "what_ifs": [w.to_json() for w in self.what_ifs]}


def compare_file(file: FileAnalysis, *, what_if: str | None = None, jobs: int = 2,
                 reference_pcap: Path | None = None, stream: int | None = None,
                 reference: dict[str, Any] | None = None) -> list[ConnectionReference]:
    """Fit, run and compare every connection of an analysed file that carried data (or `stream`);
    what-ifs as `what_if` asks (None: those the causes suggest; "" for none). `reference_pcap`
    keeps the first connection's reference capture. `reference`: values the reference is
    configured with instead of the fitted ones (e.g. {"personality": "linux"} to hold an old
    stack's trace against a modern one)."""
    big = what_if != "" and any(_frames(c) >= EARLY_WORKERS_PACKETS and _exchanges(c) for c in file.connections
              if stream is None or c.stream == stream)
    with Workers(jobs) as workers:
        if big:
            workers.start()
        return _compare_all(file, what_if, workers, reference_pcap, stream, reference)


def _compare_all(file: FileAnalysis, what_if: str | None, workers: Workers, reference_pcap: Path | None,
                 stream: int | None, reference: dict[str, Any] | None) -> list[ConnectionReference]:
    out = []
    state = file.packet_table(derived=False)
    # A capture filtered to data (no pure ACK anywhere): its ACK timing, and so every stall's cause
    # and the path, cannot be read; each connection is fitted but not compared.
    unreadable = ("the capture was filtered to data (no pure ACK in it): the ACKs' timing, the path and the "
                  "peer are unseen" if any(n.kind == "data_only" for n in file.notes) else None)
    for conn in file.connections:
        if stream is not None and conn.stream != stream:
            continue
        trows = state.filter(pl.col("stream") == conn.stream) if state is not None else None
        fit = fit_connection(conn, trows)
        if fit is None:
            continue
        fit = refine(fit, conn, trows, read_step(trows, fit.dir))
        if reference:
            fit = fit.with_values({k: Fitted(v, "given: the reference asked for") for k, v in reference.items()})
        fit = with_delack(fit, conn)
        items = plan(fit, {s.cause for s in conn.stalls} | {f.cause for f in conn.findings}, what_if) \
            if what_if != "" else []
        # The what-ifs need the fit alone: the worker processes run them while the reference runs here.
        what_ifs = start_all(fit, items, workers)
        ref = run_reference(fit, pcap=reference_pcap if not out else None)
        cmp = compare(conn, trows, ref.connection, ref.rows, unreadable)
        if ref.error:
            cmp.verdict = f"no reference: {ref.error}"
        ratio = cmp.goodput_ratio
        poor = ratio is None or abs(ratio - 1) > POOR_FIT
        item = ConnectionReference(conn.stream, fit, cmp, poor_fit=poor)
        runs = what_ifs()
        if what_if != "" and ref.connection is not None:
            # Bulk what-ifs are read from the simulator's output (whatif.quick_run), so their baseline
            # is the fitted run measured the same way; request/response ones are analysed captures.
            base = ref.sim_goodput_bps if fit.kind == "bulk" else ref.goodput_bps
            for (name, desc, changes), run in zip(items, runs):
                g = run.goodput_bps
                lost = (run.time_lost_ns if isinstance(run, QuickRun)
                        else time_lost(run.connection, run.connection.data_direction.dir if run.connection else None))
                item.what_ifs.append(Prediction(name, desc, changes, g, g / base if g and base else None,
                                                lost, run.error, [ns for _, ns in run.samples]))
            item.what_ifs.sort(key=lambda p: (-(p.gain or 0), p.name))
        out.append(item)
    return out


def _frames(conn: Any) -> int:
    """The frames a connection spans in its capture (its packets, and any interleaved)."""
    return conn.last_frame - conn.first_frame + 1


def _exchanges(conn: Any) -> bool:
    """Whether a connection is fitted as requests and responses (fit.REQUEST_RESPONSE_SHARE)."""
    from .fit import REQUEST_RESPONSE_SHARE

    d = conn.data_direction
    if d is None:
        return False
    p = d.profile
    return (p.get("peer_data_packets") or 0) > max(3, REQUEST_RESPONSE_SHARE * (p.get("data_packets") or 0))
