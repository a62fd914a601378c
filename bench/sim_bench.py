"""Simulator benchmark: engine events per second on bulk runs, and the wall time of each reproduction.

Usage: python3 bench/sim_bench.py [--repeat N] [--skip-tables] [--python-tables]
Prints one JSON document. Hosts handle a segment inline (input, tcp_output, the link enqueue) so an
engine event carries a whole packet's work; packets/s is the figure that compares across designs. Targets from the brief: >= 1M events/s; Table 1 (64 runs of 16 MB) in < 30 s.
Each figure is the best of --repeat runs (the machine is shared). "engine" times the event engine
alone (50 event chains, each event arming and cancelling a timer, as a connection does): the
bulk figures minus it are the TCP hosts' share.
Each bulk case runs in both engines (run_bulk engine="python" / "native"): events/s, packets/s and the
native/Python ratio. A native BulkResult builds its (t, Segment) records on first use:
"native_with_trace" times run_bulk plus building them, "native_core" the Rust run alone. Reproductions run with engine "auto" (native where supported);
--python-tables also times them with STALLSCOPE_SIM_ENGINE=python.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from stallscope.simulate import native_core
from stallscope.simulate.engine import Simulator
from stallscope.simulate.links.presets import AtmSwitchSpec
from stallscope.simulate.reproductions import REPRODUCTIONS
from stallscope.simulate.run_bulk import BulkConfig, run_bulk
from stallscope.simulate.tcp.costs import SUN_IPX

BULK_CASES = {
    # a normal Moldeklev cell: many segments, host-cost model on
    "sunos41 atm140 S=32k R=32k 16MB": BulkConfig(sndbuf=32768, rcvbuf=32768, bytes=16 << 20, cost=SUN_IPX),
    # a fast path with small segments: the engine's hot path dominates
    "linux gige 64k 32MB": BulkConfig(personality="linux", link="gige", sndbuf=65536, rcvbuf=65536,
                                      write=65536, read=65536, bytes=32 << 20),
    # make_path impairments: a Kung & Morris switch port, GigaTCP's jumbo pool (slots return 30 ms late)
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


ENGINE_EVENTS = 300_000
ENGINE_CHAINS = 50


def engine_only() -> int:
    """Events run by the bare engine (each schedules its successor and a cancelled timer)."""
    sim = Simulator(1)
    left = [ENGINE_EVENTS]

    def timer(now: int) -> None:
        raise AssertionError("a cancelled timer ran")

    def step(now: int) -> None:
        left[0] -= 1
        if left[0] > 0:
            sim.schedule(now + 1000, timer).cancel()
            sim.schedule(now + 10, step)

    for i in range(ENGINE_CHAINS):
        sim.schedule(i, step)
    sim.run()
    return sim.events_run


# naglemark trials (Mogul tables 4/5): tru64 over Ethernet, NAGLE server, 4 KB writes, 16 KB buffer.
NAGLEMARK_CASES = {"naglemark S 1000 responses": ("S", 1000), "naglemark s 1000 connections": ("s", 1000)}


def naglemark_row(trial: str, n: int, repeat: int) -> dict:
    from stallscope.simulate.apps import naglemark as nm
    from stallscope.simulate.apps.naglemark_net import make_network

    lengths = nm.response_lengths(nm.TrialType(trial), n)
    kw = dict(personality="tru64", link="ethernet10", variant="NAGLE", sockbuf=16384, receiver_inference=False, seed=1)

    def python():
        net, rate = make_network(**kw)
        nm.run_trial(net, trial=nm.TrialType(trial), app_buf=4096, sockbuf=16384, raw_rate_bps=rate, lengths=lengths)
        return net.sim.events_run

    row: dict = {}
    wall, events = best_of(repeat, python)
    row["python"] = {"wall_s": round(wall, 3), "events": events, "events_per_s": round(events / wall)}
    if native_core.native_built():
        wall, got = best_of(repeat, lambda: native_core.naglemark_trial(
            **kw, trial=trial, app_buf=4096, lengths=lengths, engine="native"))
        events = got[1]["events"]
        row["native"] = {"wall_s": round(wall, 4), "events": events, "events_per_s": round(events / wall)}
        row["ratio_native_over_python"] = round(row["python"]["wall_s"] / wall, 1)
    return row


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
    ap.add_argument("--python-tables", action="store_true", help="also time the reproductions in Python")
    ap.add_argument("--mogul", action="store_true", help="also time mogul-table4/5")
    args = ap.parse_args()
    out: dict = {"engine": {}, "bulk": {}, "naglemark": {}, "reproductions": {}}
    wall, events = best_of(args.repeat, engine_only)
    out["engine"] = {"wall_s": round(wall, 3), "events": events, "events_per_s": round(events / wall)}
    for name, cfg in BULK_CASES.items():
        row: dict = {}
        for engine in ("python", "native"):
            if engine == "native" and not native_core.native_built():
                row[engine] = "not built (make native)"
                continue
            im = IMPAIRMENTS.get(name)
            wall, r = best_of(args.repeat, lambda cfg=cfg, engine=engine, im=im: run_bulk(cfg, engine=engine,
                                                                                          impairments=im))
            row[engine] = {"wall_s": round(wall, 3), "events": r.events, "events_per_s": round(r.events / wall),
                           "packets_per_s": round(r.packets / wall), "packets": r.packets,
                           "goodput_mbit_s": round(r.goodput_mbit_s, 2)}
        if isinstance(row.get("native"), dict):
            wall, raw = best_of(args.repeat, lambda cfg=cfg: native_core.simulate_raw(cfg, IMPAIRMENTS.get(name)))
            row["native_core"] = {"wall_s": round(wall, 4), "events_per_s": round(raw["events"] / wall),
                                  "packets_per_s": round(len(raw["trace"]) / wall)}
            wall, r = best_of(args.repeat, lambda cfg=cfg: len(run_bulk(
                cfg, engine="native", impairments=IMPAIRMENTS.get(name)).records.materialize()))
            row["native_with_trace"] = {"wall_s": round(wall, 3), "events_per_s": round(row["native"]["events"] / wall)}
            row["ratio_native_over_python"] = round(row["python"]["wall_s"] / row["native"]["wall_s"], 1)
            row["identical_events"] = row["python"]["events"] == row["native"]["events"]
        out["bulk"][name] = row
    for name, (trial, n) in NAGLEMARK_CASES.items():
        out["naglemark"][name] = naglemark_row(trial, n, args.repeat)
    engines = [("auto", None)] + ([("python", "python")] if args.python_tables else [])
    for name, rep in REPRODUCTIONS.items():
        if not name.startswith(("moldeklev", "salamon", "kung-morris", "gigatcp")) and not (args.mogul and name.startswith("mogul-table")):
            continue
        if args.skip_tables and name in ("moldeklev-table1", "moldeklev-table2"):
            continue
        kwargs = {"workers": 1} if name in ("moldeklev-table1", "moldeklev-table2") else {}
        for label, env in engines:
            if env is None:
                os.environ.pop(native_core.ENGINE_ENV, None)
            else:
                os.environ[native_core.ENGINE_ENV] = env
            wall, res = best_of(1, lambda rep=rep, kwargs=kwargs: rep.run(**kwargs))
            out["reproductions"].setdefault(name, {})[label] = {
                "wall_s": round(wall, 2), "passed": res.passed, "verdict": res.verdict}
        os.environ.pop(native_core.ENGINE_ENV, None)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
