"""Batch benchmark: many small captures through `stallscope analyze DIR --jobs N` against
`stallscope analyze ONE_FILE` run once per file (docs/batch.md; bench/README.md, "Batch analysis").

Generates `--captures` small simulated captures (short bulk transfers over varied personalities,
links, write sizes, Nagle and loss; seeded, so the same files every time) under `--dir` unless
they are there, reads them once into the page cache, then times in one run, each as its own
process:

  single-file   `stallscope analyze FILE -o /dev/null` for a sample of `--single` files spread
                over the set (half before the batch rows, half after, so load hits both alike)
  batch         `stallscope analyze DIR --jobs N --no-cache --parquet OUT -q`
  batch -j 1    the same in one process (`--jobs 1`)
  cache fill    `--cache CACHE` into an empty cache (analyses everything and stores it)
  cache hit     the same again: nothing is analysed (the tables are read from the cache)
  check         `stallscope check DIR --each --forbid nagle_delayed_ack --jobs N -f json` (the CI gate over
                the whole set), against `stallscope check FILE` for a sample of the files

and prints captures per second for each row and its ratio to the single-file rate, as JSON and
as a Markdown table. The batch and cache-hit tables are checked identical.

    python3 bench/batch_bench.py [--captures 1000] [--jobs 2] [--single 100] [--dir bench/out/batch]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import console_script, run_once  # noqa: E402  (bench/run.py's process timing)

PERSONALITIES = ("sunos41", "bsd44", "freebsd4", "tru64", "linux20", "linux")
LINKS = ("ethernet10", "fddi", "fastethernet", "atm140")
MANIFEST = "batch-manifest.json"


def generate(out: Path, n: int, seed: int) -> dict:
    """`n` captures of 8-32 KB transfers under out/runK/ (K = i % 10), each with its .truth.json."""
    from stallscope.simulate.run_bulk import BulkConfig, run_bulk

    want = {"captures": n, "seed": seed, "generator": 1}
    manifest = out / MANIFEST
    if manifest.exists():
        have = json.loads(manifest.read_text())
        if {k: have.get(k) for k in want} == want:
            return have
    shutil.rmtree(out, ignore_errors=True)
    rnd = random.Random(seed)
    t0 = time.perf_counter()
    total = packets = 0
    for i in range(n):
        cfg = BulkConfig(personality=PERSONALITIES[i % len(PERSONALITIES)],
                         link=LINKS[(i // len(PERSONALITIES)) % len(LINKS)],
                         bytes=rnd.choice((8, 16, 24, 32)) * 1024, write=rnd.choice((1000, 3000, 4096, 8192)),
                         nagle=rnd.choice((None, None, "OFF")), seed=rnd.randrange(1, 1 << 30))
        impairments = {"loss": 0.05} if rnd.random() < 0.3 else None
        sub = out / f"run{i % 10}"
        sub.mkdir(parents=True, exist_ok=True)
        pcap = sub / f"cap{i:05d}.pcap"
        packets += run_bulk(cfg, pcap=pcap, impairments=impairments).packets
        total += pcap.stat().st_size
    doc = {**want, "bytes": total, "packets": packets, "generate_s": round(time.perf_counter() - t0, 2)}
    manifest.write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def loadavg() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except OSError:
        return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--captures", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--single", type=int, default=100, help="files timed one process each (0: all of them)")
    ap.add_argument("--dir", type=Path, default=HERE / "out" / "batch")
    args = ap.parse_args()

    from stallscope.analyzers.batch import TABLES, expand_paths

    facts = generate(args.dir, args.captures, args.seed)
    files = expand_paths([args.dir])
    assert len(files) == args.captures, f"{len(files)} captures under {args.dir}, expected {args.captures}"
    for f in files:  # into the page cache
        Path(f).read_bytes()
    exe = console_script("stallscope")
    n_single = len(files) if args.single <= 0 else min(args.single, len(files))
    step = len(files) / n_single
    sample = [files[int(i * step)] for i in range(n_single)]
    load = [loadavg()]

    def single(part: list[str]) -> float:
        total = 0.0
        for f in part:
            total += run_once([exe, "analyze", f, "-o", os.devnull])[0]
        return total

    with tempfile.TemporaryDirectory(prefix="stallscope-batch-bench-") as tmp:
        t = Path(tmp)
        half = len(sample) // 2
        single_s = single(sample[:half])

        counts: dict[str, tuple[int, int]] = {}

        def batch(name: str, *extra: str) -> float:
            """Wall seconds of one batch; its stderr's last line gives the analysed/cached counts."""
            argv = [exe, "analyze", str(args.dir), "--parquet", str(t / name), *extra]
            t0 = time.perf_counter()
            done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            wall = time.perf_counter() - t0
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr}")
            m = re.search(r"(\d+) analysed, (\d+) from the cache", done.stderr)
            counts[name] = (int(m.group(1)), int(m.group(2)))
            return wall

        rows = {
            "batch": batch("batch", "--jobs", str(args.jobs), "--no-cache"),
            "batch -j 1": batch("batch1", "--jobs", "1", "--no-cache"),
            "cache fill": batch("fill", "--jobs", str(args.jobs), "--cache", str(t / "cache")),
            "cache hit": batch("hit", "--jobs", str(args.jobs), "--cache", str(t / "cache")),
        }
        names = dict(zip(rows, ("batch", "batch1", "fill", "hit")))
        gate = [exe, "check", "--each", "--forbid", "nagle_delayed_ack", "-f", "json", "-o", os.devnull, "-q"]
        t0 = time.perf_counter()
        done = subprocess.run([*gate, "--jobs", str(args.jobs), str(args.dir)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        check_s = time.perf_counter() - t0
        if done.returncode not in (0, 1):  # 1: a capture broke the policy, as some do
            raise RuntimeError(f"check exited {done.returncode}: {done.stderr}")
        check_sample = sample[: max(1, len(sample) // 5)]
        check_single_s = sum(run_once([*gate, f])[0] for f in check_sample)
        single_s += single(sample[half:])
        load.append(loadavg())
        import polars as pl

        identical = all(pl.read_parquet(t / "batch" / f"{n}.parquet").equals(pl.read_parquet(t / "hit" / f"{n}.parquet"))
                        and pl.read_parquet(t / "batch" / f"{n}.parquet").equals(
                            pl.read_parquet(t / "batch1" / f"{n}.parquet")) for n in TABLES)
        statuses = pl.read_parquet(t / "batch" / "files.parquet")["status"].value_counts().sort("status").rows()
        stalls = pl.read_parquet(t / "batch" / "stalls.parquet").height

    single_rate = n_single / single_s
    result = {
        "captures": len(files), "bytes": facts["bytes"], "packets": facts["packets"], "jobs": args.jobs,
        "cores": len(os.sched_getaffinity(0)), "load_before_after": load, "statuses": dict(statuses),
        "stalls": stalls, "tables_identical": identical,
        "single_file": {"files_timed": n_single, "seconds": round(single_s, 2),
                        "captures_per_s": round(single_rate, 2), "s_per_file": round(single_s / n_single, 3)},
        "rows": {name: {"seconds": round(s, 2), "captures_per_s": round(len(files) / s, 1),
                        "x_single_file": round(len(files) / s / single_rate, 1),
                        "analysed": counts[names[name]][0], "from_cache": counts[names[name]][1]}
                 for name, s in rows.items()},
        "check": {"seconds": round(check_s, 2), "captures_per_s": round(len(files) / check_s, 1),
                  "single_file_captures_per_s": round(len(check_sample) / check_single_s, 2),
                  "x_single_file": round(len(files) / check_s / (len(check_sample) / check_single_s), 1)},
    }
    print(json.dumps(result, indent=2))
    print()
    print("| row | wall s | captures/s | x single-file | analysed / from the cache |")
    print("|---|---|---|---|---|")
    print(f"| `stallscope analyze FILE` x {n_single} | {single_s:.1f} | {single_rate:.2f} | 1 | |")
    for name, r in result["rows"].items():
        print(f"| {name} | {r['seconds']} | {r['captures_per_s']} | **{r['x_single_file']}** | "
              f"{r['analysed']} / {r['from_cache']} |")
    c = result["check"]
    print(f"| `stallscope check DIR --jobs {args.jobs}` | {c['seconds']} | {c['captures_per_s']} | "
          f"**{c['x_single_file']}** (against `check FILE`: {c['single_file_captures_per_s']}/s) | |")
    if not identical:
        sys.exit("the tables of the batch, --jobs 1 and cache-hit runs differ")
    if result["rows"]["cache hit"]["analysed"]:
        sys.exit("the cache-hit run analysed captures: the analyzer's code changed between the fill and the hit")


if __name__ == "__main__":
    main()
