"""Simulator benchmark: engine events per second on bulk runs, and the wall time of each reproduction.

Usage: python3 bench/sim_bench.py [--quick] [--skip-tables]
Prints one JSON document. Hosts handle a segment inline (input, tcp_output, the link enqueue) so an
engine event carries a whole packet's work; packets/s is the figure that compares across designs. Targets from the brief: >= 1M events/s; Table 1 (64 runs of 16 MB) in < 30 s.
Each figure is the best of --repeat runs (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import time

from stallscope.simulate.reproductions import REPRODUCTIONS
from stallscope.simulate.run_bulk import BulkConfig, run_bulk
from stallscope.simulate.tcp.costs import SUN_IPX

BULK_CASES = {
    # a normal Moldeklev cell: many segments, host-cost model on
    "sunos41 atm140 S=32k R=32k 16MB": BulkConfig(sndbuf=32768, rcvbuf=32768, bytes=16 << 20, cost=SUN_IPX),
    # a fast path with small segments: the engine's hot path dominates
    "linux gige 64k 32MB": BulkConfig(personality="linux", link="gige", sndbuf=65536, rcvbuf=65536,
                                      write=65536, read=65536, bytes=32 << 20),
}


def best_of(repeat: int, fn):
    best, value = None, None
    for _ in range(repeat):
        t = time.perf_counter()
        value = fn()
        wall = time.perf_counter() - t
        best = wall if best is None else min(best, wall)
    return best, value


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--skip-tables", action="store_true", help="skip moldeklev-table1/2")
    args = ap.parse_args()
    out: dict = {"bulk": {}, "reproductions": {}}
    for name, cfg in BULK_CASES.items():
        wall, r = best_of(args.repeat, lambda cfg=cfg: run_bulk(cfg))
        out["bulk"][name] = {"wall_s": round(wall, 3), "events": r.events, "events_per_s": round(r.events / wall),
                             "packets_per_s": round(r.packets / wall),
                             "packets": r.packets, "goodput_mbit_s": round(r.goodput_mbit_s, 2)}
    for name, rep in REPRODUCTIONS.items():
        if not name.startswith(("moldeklev", "salamon")):
            continue
        if args.skip_tables and name in ("moldeklev-table1", "moldeklev-table2"):
            continue
        kwargs = {"workers": 1} if name in ("moldeklev-table1", "moldeklev-table2") else {}
        wall, res = best_of(1, lambda rep=rep, kwargs=kwargs: rep.run(**kwargs))
        out["reproductions"][name] = {"wall_s": round(wall, 2), "passed": res.passed, "verdict": res.verdict}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
