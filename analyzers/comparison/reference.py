"""The reference run of a fit: the simulator runs the fitted configuration (with a what-if's
change), its capture is written to a pcap and analysed by the same analyzer as the trace, so the
two are compared on the same terms (goodput, stalls by cause, time lost)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from ..analyze import analyze_one
from ..findings import ConnectionAnalysis
from .fit import Fit


@dataclass
class ReferenceRun:
    """What the simulator did with a configuration, as the analyzer reads its capture."""

    changes: dict[str, Any]
    connection: ConnectionAnalysis | None
    # The connection's per-packet sender state (for stall offsets and the progress curve).
    rows: pl.DataFrame | None = None
    # The simulator's own ground truth: its stalls' causes and time, to check the analyzer by.
    truth_stalls: list[dict[str, Any]] = field(default_factory=list)
    completed: bool = True
    error: str | None = None
    packets: int = 0
    # A request/response run: each response's (length, ns from request to its last byte).
    samples: list[tuple[int, int]] = field(default_factory=list)
    # The simulator's own summary of the run (the segment size, buffers the stacks settled on).
    summary: dict[str, Any] = field(default_factory=dict)
    # A bulk run's goodput read from the simulator's output as whatif.quick_run reads it (bit/s):
    # the what-ifs' baseline, measured as they are.
    sim_goodput_bps: float | None = None

    @property
    def goodput_bps(self) -> float | None:
        d = self.connection.data_direction if self.connection else None
        return d.goodput_bps if d else None


def run_reference(fit: Fit, changes: dict[str, Any] | None = None, *, pcap: Path | None = None) -> ReferenceRun:
    """Simulate `fit` with `changes` (BulkConfig fields or naglemark arguments, plus
    "impairments" for a bulk run) and analyse the capture. `pcap`: keep the capture there."""
    changes = dict(changes or {})
    with tempfile.TemporaryDirectory(prefix="stallscope-ref-") as tmp:
        path = Path(pcap) if pcap is not None else Path(tmp) / "reference.pcap"
        try:
            truth, packets, completed, samples, summary, sim_goodput = _simulate(fit, changes, path, pcap is not None)
        except (ValueError, KeyError, RuntimeError) as e:
            return ReferenceRun(changes, None, error=f"{type(e).__name__}: {e}", completed=False)
        file = analyze_one(path)
    conns = [c for c in file.connections if c.data_direction is not None]
    if not conns:
        return ReferenceRun(changes, None, None, truth, completed, "the reference run carried no data", packets, samples,
                            summary, sim_goodput)
    if fit.kind == "bulk":
        conn = max(conns, key=lambda c: c.data_direction.profile.get("bytes") or 0)
        rows = stream_rows(file, conn.stream)
        return ReferenceRun(changes, conn, rows, truth, completed, None, packets, samples, summary, sim_goodput)
    # A request/response trial may open a connection per request: one merged view would need the
    # analyzer's help, so the first (or only) connection stands for the trial.
    conn = conns[0]
    rows = stream_rows(file, conn.stream)
    return ReferenceRun(changes, conn, rows, truth, completed, None, packets, samples, summary, sim_goodput)


def _simulate(fit: Fit, changes: dict[str, Any], path: Path, keep_truth: bool = False
              ) -> tuple[list[dict[str, Any]], int, bool, list, dict, float | None]:
    if fit.kind == "bulk":
        from stallscope.simulate.run_bulk import run_bulk

        cfg = fit.bulk_config(**changes)
        result = run_bulk(cfg, impairments=fit.impairments(changes))
        from stallscope.simulate.run_bulk import RECEIVER_ADDR, SENDER_ADDR, host_ttls

        from .calibrate.target import run_goodput, sender_goodput

        # The hosts' TTLs as the simulator's own captures carry them.
        ttls = host_ttls(cfg)

        trace = getattr(result.records, "_trace", None)
        if trace is not None:
            # The columns once, for the capture and the goodput: write_pcap's bytes, without dpkt.
            from .fastpcap import write_columns_pcap

            cols = trace.columns()
            write_columns_pcap(path, cols, (ttls[SENDER_ADDR], ttls[RECEIVER_ADDR]))
            # The what-ifs' baseline, measured as they are (whatif.quick_run).
            goodput = run_goodput(result, cols)
        else:
            from stallscope.simulate.pcap_writer import write_pcap

            write_pcap(path, result.records, ttls=ttls)
            goodput = sender_goodput(result)
        if keep_truth:
            from stallscope.simulate.run_bulk import truth_path

            result.ground_truth.write(truth_path(path))
        return (result.ground_truth.to_json()["stalls"], result.packets, result.completed, [],
                result.ground_truth.summary, goodput * 1e6)
    from stallscope.simulate.apps.naglemark_capture import run_naglemark_capture

    cap = run_naglemark_capture(**fit.trial_args(**changes), pcap=path)
    samples = [(s.length, s.elapsed_ns) for s in cap.result.samples]
    return cap.ground_truth.to_json()["stalls"], len(cap.records), True, samples, cap.ground_truth.summary, None


def stream_rows(file, stream: int) -> pl.DataFrame | None:
    """One connection's rows of the packet table, without its derived columns (no reader in the
    comparison needs them, and they cost a pass of their own over every row)."""
    table = file.packet_table(derived=False)
    return table.filter(pl.col("stream") == stream) if table is not None else None
