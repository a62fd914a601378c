"""Comparison benchmark: `stallscope analyze FILE --compare --what-if all` on a ~100,000-packet capture
(issue 13: under 10 s on this machine), with the time of each stage.

Usage: python3 bench/compare_bench.py [--repeat N] [--capture PATH] [--bytes N] [--loss P]

The capture is simulated once (a Linux transfer over Fast Ethernet, 100 MB with 0.1 % random loss:
about 105,000 packets) into bench/out/ unless --capture names one. Each figure is the best of
--repeat runs (the machine is shared): "cli" is the whole command as a user runs it, in a fresh
process, "cli_cpu" its CPU time (user + system, with any worker processes: the figure load does not
inflate); the stages are timed in this process, one after the other (analysis of the trace, fit,
calibration, the reference run with its capture written and analysed, the comparison, the what-ifs
in their threads). Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"


def _capture(path: Path, nbytes: int, loss: float) -> Path:
    if path.exists():
        return path
    from stallscope.simulate.run_bulk import BulkConfig, run_bulk

    path.parent.mkdir(parents=True, exist_ok=True)
    run_bulk(BulkConfig(personality="linux", link="fastethernet", bytes=nbytes), path, impairments={"loss": loss})
    return path


def _stages(path: Path) -> dict[str, float]:
    from stallscope.analyzers.analyze import analyze_one
    from stallscope.analyzers.comparison import Workers, compare, fit_connection, read_step, refine, run_reference
    from stallscope.analyzers.comparison.reference import stream_rows
    from stallscope.analyzers.comparison.whatif import plan, start_all

    t: dict[str, float] = {}
    t0 = time.perf_counter()
    file = analyze_one(path)
    t["analyze"] = time.perf_counter() - t0
    conn = max(file.connections, key=lambda c: (c.data_direction.profile.get("bytes") or 0) if c.data_direction else 0)
    rows = stream_rows(file, conn.stream)
    with Workers(2) as workers:
        workers.start()
        t0 = time.perf_counter()
        fit = fit_connection(conn, rows)
        t["fit"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        fit = refine(fit, conn, rows, read_step(rows, fit.dir))
        t["calibration"] = time.perf_counter() - t0
        items = plan(fit, {s.cause for s in conn.stalls}, "all")
        t0 = time.perf_counter()
        ref = run_reference(fit)
        t["reference_run"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        compare(conn, rows, ref.connection, ref.rows)
        t["compare"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        start_all(fit, items, workers)()
        t[f"what_ifs ({len(items)}, 2 threads, alone)"] = time.perf_counter() - t0
    return {k: round(v, 3) for k, v in t.items()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--capture", type=Path)
    ap.add_argument("--bytes", type=int, default=100_000_000)
    ap.add_argument("--loss", type=float, default=0.001)
    args = ap.parse_args()
    path = _capture(args.capture or OUT / f"compare-linux-{args.bytes}-loss{args.loss}.pcap", args.bytes, args.loss)
    exe = shutil.which("stallscope") or sys.executable
    cmd = [exe, "analyze", str(path), "--compare", "--what-if", "all", "-f", "json", "-o", os.devnull]
    cli, cpu = [], []
    for _ in range(args.repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        cli.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    stages = min((_stages(path) for _ in range(args.repeat)), key=lambda s: sum(s.values()))
    from stallscope.analyzers.analyze import analyze_one

    conn = analyze_one(path).connections[0]
    doc = {"capture": str(path), "packets": conn.last_frame - conn.first_frame + 1,
           "cli_s": round(min(cli), 3), "cli_runs_s": [round(x, 3) for x in cli],
           "cli_cpu_s": round(min(cpu), 3), "stages_s": stages,
           "load_average": os.getloadavg()[0], "target_s": 10}
    json.dump(doc, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
