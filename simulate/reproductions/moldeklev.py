"""Moldeklev & Gunningberg, "Deadlock situations in TCP over ATM": tables 1 and 2, appendix A.

Every cell is a 16 MB memory-to-memory bulk run, write(8192)/read(8192), sunos41 on both hosts
over the atm140 preset (MTU 9244, MSS 9204) with the SUN_IPX host-cost model (costs.py),
calibrated once for all cells. Tolerances (docs/simulate-cli.md#stallscope-reproduce-name): a cell passes when it is in
the paper's band (deadlock < 1 Mbit/s, degraded 1-10, normal > 10) and, for deadlock cells,
within 25 % of the paper, for normal cells within 20 %; a column passes with >= 58 of 64 cells.
"""

from __future__ import annotations

import csv
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from ..units import NS_PER_MS
from stallscope.vocabulary import Cause
from ..run_bulk import BulkConfig, BulkResult, run_bulk
from ..host_cost import SUN_IPX
from . import ReproductionResult, reference_dir

TRANSFER_BYTES = 16 * 1024 * 1024
USER_BYTES = 8192
MIN_CELLS_PASSING = 58
DEADLOCK_TOL = 0.25
NORMAL_TOL = 0.20


def band(mbit_s: float) -> str:
    if mbit_s < 1.0:
        return "deadlock"
    if mbit_s <= 10.0:
        return "degraded"
    return "normal"


def cell_passes(sim: float, paper: float) -> bool:
    b = band(paper)
    if band(sim) != b:
        return False
    rel = abs(sim - paper) / paper
    if b == "deadlock":
        return rel <= DEADLOCK_TOL
    if b == "normal":
        return rel <= NORMAL_TOL
    return True


@dataclass(frozen=True)
class Cell:
    sndbuf: int
    rcvbuf: int
    nagle: bool


def load_table(name: str = "moldeklev-table2.csv") -> list[dict[str, float]]:
    with open(reference_dir() / name) as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def cell_config(cell: Cell, nbytes: int = TRANSFER_BYTES, seed: int = 1) -> BulkConfig:
    return BulkConfig(
        personality="sunos41", link="atm140", mtu=9244, sndbuf=cell.sndbuf, rcvbuf=cell.rcvbuf,
        write=USER_BYTES, read=USER_BYTES, bytes=nbytes, nagle=None if cell.nagle else "OFF",
        seed=seed, cost=SUN_IPX,
    )


def run_cell(cell: Cell, nbytes: int = TRANSFER_BYTES) -> tuple[float, dict[str, int]]:
    r: BulkResult = run_bulk(cell_config(cell, nbytes))
    causes: dict[str, int] = {}
    for s in r.stalls:
        key = s.cause.value + (f"/{s.detail}" if s.detail else "")
        causes[key] = causes.get(key, 0) + 1
    return r.goodput_mbit_s, causes


def _run_cells(cells: list[Cell], nbytes: int, workers: int) -> list[tuple[float, dict[str, int]]]:
    if workers <= 1:
        return [run_cell(c, nbytes) for c in cells]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(run_cell, cells, [nbytes] * len(cells)))


def _table(columns: list[tuple[str, bool]], name: str, title: str, nbytes: int, workers: int) -> ReproductionResult:
    paper_rows = load_table()
    cells = [Cell(int(r["sndbuf_bytes"]), int(r["rcvbuf_bytes"]), nagle) for _, nagle in columns for r in paper_rows]
    results = _run_cells(cells, nbytes, workers)
    by_cell = dict(zip(cells, results))
    rows = []
    passing = {col: 0 for col, _ in columns}
    for r in paper_rows:
        row: dict = {"sndbuf": int(r["sndbuf_bytes"]), "rcvbuf": int(r["rcvbuf_bytes"])}
        for col, nagle in columns:
            sim, causes = by_cell[Cell(row["sndbuf"], row["rcvbuf"], nagle)]
            paper = r[col]
            ok = cell_passes(sim, paper)
            passing[col] += ok
            tag = "on" if nagle else "off"
            row[f"paper_{tag}"] = paper
            row[f"sim_{tag}"] = round(sim, 2)
            row[f"ok_{tag}"] = ok
            row[f"cause_{tag}"] = max(causes, key=causes.get) if causes else ""
        rows.append(row)
    passed = all(n >= MIN_CELLS_PASSING for n in passing.values())
    counts = ", ".join(f"Nagle {'on' if nagle else 'off'}: {passing[col]}/64" for col, nagle in columns)
    verdict = (f"cells in the paper's band (deadlock within 25 %, normal within 20 %): {counts}; "
               f"need >= {MIN_CELLS_PASSING}/64 per column")
    return ReproductionResult(name, title, rows, passed, verdict, {"passing": passing, "bytes": nbytes})


def table1(nbytes: int = TRANSFER_BYTES, workers: int = 2) -> ReproductionResult:
    return _table([("mbit_s_nagle_on", True)], "moldeklev-table1",
                  "Moldeklev table 1 (Mbit/s, Nagle on): simulator beside paper", nbytes, workers)


def table2(nbytes: int = TRANSFER_BYTES, workers: int = 2) -> ReproductionResult:
    return _table([("mbit_s_nagle_on", True), ("mbit_s_nagle_off", False)], "moldeklev-table2",
                  "Moldeklev table 2 (Mbit/s, Nagle on and off): simulator beside paper", nbytes, workers)


def appendix_a(nbytes: int = 4 * 1024 * 1024) -> ReproductionResult:
    """S=16k R=32k: the connection deadlocks within ~600 ms and then moves 8192 bytes per
    timer-generated ACK (200 ms): 0.32-0.34 Mbit/s."""
    r = run_bulk(cell_config(Cell(16384, 32768, True), nbytes))
    nagle = [s for s in r.stalls if s.cause is Cause.NAGLE_DELAYED_ACK]
    first = (nagle[0].start_ns - r.records[0][0]) if nagle else None
    # Bytes per deadlock cycle once settled: new data the sender sent between consecutive stalls.
    data = [(t, seg) for t, seg in r.records if seg.src == "10.0.0.1" and seg.payload_len and "retransmit" not in seg.tags]
    cycle_bytes = []
    for a, b in zip(nagle[5:], nagle[6:]):
        cycle_bytes.append(sum(seg.payload_len for t, seg in data if a.end_ns <= t < b.end_ns))
    per_cycle = max(set(cycle_bytes), key=cycle_bytes.count) if cycle_bytes else 0
    periods = [b.end_ns - a.end_ns for a, b in zip(nagle[5:], nagle[6:])]
    period_ms = (sum(periods) / len(periods) / NS_PER_MS) if periods else 0.0
    entered_ms = (first / NS_PER_MS) if first is not None else None
    rows = [
        {"quantity": "deadlock entered (ms after start)", "paper": "within ~600 ms (about 350 ms in figure 6)",
         "sim": None if entered_ms is None else round(entered_ms, 1),
         "ok": entered_ms is not None and entered_ms <= 600},
        {"quantity": "bytes per cycle once settled", "paper": 8192, "sim": per_cycle, "ok": per_cycle == 8192},
        {"quantity": "cycle period (ms)", "paper": 200, "sim": round(period_ms, 1), "ok": abs(period_ms - 200) <= 10},
        {"quantity": "throughput (Mbit/s)", "paper": "0.32-0.34", "sim": round(r.goodput_mbit_s, 3),
         "ok": 0.30 <= r.goodput_mbit_s <= 0.37},
        {"quantity": "stall cause", "paper": "timer ACK + Nagle", "sim": (nagle[-1].cause.value + "/" + str(nagle[-1].detail)) if nagle else "",
         "ok": bool(nagle) and nagle[-1].detail == "timer_phase"},
    ]
    passed = all(row["ok"] for row in rows)
    return ReproductionResult("moldeklev-appendix-a", "Moldeklev appendix A: S=16k R=32k", rows, passed,
                              f"{sum(1 for r in rows if r['ok'])}/{len(rows)} statements hold")
