"""Simulator benchmark: events and packets per second on bulk runs and naglemark trials, and the
wall time of each reproduction.

Usage: python3 bench/sim_bench.py [--repeat N] [--skip-tables] [--mogul]
Prints one JSON document. Hosts handle a segment inline (input, tcp_output, the link enqueue) so an
event carries a whole packet's work; packets/s is the figure that compares across designs. Targets
from the brief: >= 1M events/s; Table 1 (64 runs of 16 MB) in < 30 s. Each figure is the best of
--repeat runs (the machine is shared). A BulkResult builds its (t, Segment) records on first use:
"run_bulk" times the run as callers see it, "with_trace" adds building the records, "core" is
the native run alone (no Python objects).
"""

from __future__ import annotations

import argparse
import json
import time

from stallscope.simulate import native_core
from stallscope.simulate.host_cost import SUN_IPX
from stallscope.simulate.links.presets import AtmSwitchSpec
from stallscope.simulate.reproductions import REPRODUCTIONS
from stallscope.simulate.run_bulk import BulkConfig, run_bulk

BULK_CASES = {
    # a normal Moldeklev cell: many segments, host-cost model on
    "sunos41 atm140 S=32k R=32k 16MB": BulkConfig(sndbuf=32768, rcvbuf=32768, bytes=16 << 20, cost=SUN_IPX),
    # a fast path with small segments: the engine's hot path dominates
    "linux gige 64k 32MB": BulkConfig(personality="linux", link="gige", sndbuf=65536, rcvbuf=65536,
                                      write=65536, read=65536, bytes=32 << 20),
    # path impairments: a Kung & Morris switch port, GigaTCP's jumbo pool (slots return 30 ms late)
    "tru64 oc3 ATM 48KB no-discard 4470 32MB": BulkConfig(personality="tru64", link="oc3", mtu=4470, sndbuf=65536,
                                                         rcvbuf=65536, write=65536, read=65536, bytes=32 << 20),
    "freebsd4 gige jumbo 384 slots 4MB 64MB": BulkConfig(personality="freebsd4", link="gige", mtu=8940,
                                                         sndbuf=4 << 20, rcvbuf=4 << 20, write=65536, read=65536,
                                                         bytes=64 << 20),
}
IMPAIRMENTS = {
    "tru64 oc3 ATM 48KB no-discard 4470 32MB": {"atm_switch": AtmSwitchSpec(48 * 1024, 51_040_000, "none")},
    "freebsd4 gige jumbo 384 slots 4MB 64MB": {"jumbo_slots": 384, "jumbo_hold_until_acked": False,
                                               "jumbo_replenish_ns": 30_000_000},
}


# naglemark trials (Mogul tables 4/5): tru64 over Ethernet, NAGLE server, 4 KB writes, 16 KB buffer.
NAGLEMARK_CASES = {"naglemark S 1000 responses": ("S", 1000), "naglemark s 1000 connections": ("s", 1000)}


def naglemark_row(trial: str, n: int, repeat: int) -> dict:
    from stallscope.simulate.apps import naglemark as nm

    lengths = nm.response_lengths(nm.TrialType(trial), n)
    kw = dict(personality="tru64", link="ethernet10", variant="NAGLE", sockbuf=16384, receiver_inference=False, seed=1)
    wall, got = best_of(repeat, lambda: native_core.naglemark_trial(**kw, trial=trial, app_buf=4096, lengths=lengths))
    events = got[1]["events"]
    return {"wall_s": round(wall, 4), "events": events, "events_per_s": round(events / wall),
            "score_pct": got[0].score_pct}


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
    ap.add_argument("--mogul", action="store_true", help="also time mogul-table4/5")
    args = ap.parse_args()
    out: dict = {"bulk": {}, "naglemark": {}, "reproductions": {}}
    for name, cfg in BULK_CASES.items():
        im = IMPAIRMENTS.get(name)
        wall, r = best_of(args.repeat, lambda cfg=cfg, im=im: run_bulk(cfg, impairments=im))
        row: dict = {"run_bulk": {"wall_s": round(wall, 3), "events": r.events, "events_per_s": round(r.events / wall),
                                  "packets_per_s": round(r.packets / wall), "packets": r.packets,
                                  "goodput_mbit_s": round(r.goodput_mbit_s, 2)}}
        wall, raw = best_of(args.repeat, lambda cfg=cfg, im=im: native_core.simulate_raw(cfg, im))
        row["core"] = {"wall_s": round(wall, 4), "events_per_s": round(raw["events"] / wall),
                       "packets_per_s": round(len(raw["trace"]) / wall)}
        wall, _ = best_of(args.repeat, lambda cfg=cfg, im=im: len(run_bulk(cfg, impairments=im).records.materialize()))
        row["with_trace"] = {"wall_s": round(wall, 3), "events_per_s": round(r.events / wall)}
        out["bulk"][name] = row
    for name, (trial, n) in NAGLEMARK_CASES.items():
        out["naglemark"][name] = naglemark_row(trial, n, args.repeat)
    for name, rep in REPRODUCTIONS.items():
        if not name.startswith(("moldeklev", "salamon", "kung-morris", "gigatcp")) and not (args.mogul and name.startswith("mogul-table")):
            continue
        if args.skip_tables and name in ("moldeklev-table1", "moldeklev-table2"):
            continue
        kwargs = {"workers": 1} if name in ("moldeklev-table1", "moldeklev-table2") else {}
        wall, res = best_of(1, lambda rep=rep, kwargs=kwargs: rep.run(**kwargs))
        out["reproductions"][name] = {"wall_s": round(wall, 2), "passed": res.passed, "verdict": res.verdict}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
