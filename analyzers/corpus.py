"""The scoring corpus: simulated traces with their ground truth, generated deterministically.

    python -m stallscope.analyzers.corpus OUT_DIR [--small] [--jobs 2]
    (or scripts/make_corpus.py OUT_DIR ...)

writes `NAME.pcap` and `NAME.pcap.truth.json` (stallscope.ground_truth/1) for every trace of the
plan below, and `manifest.json` listing each trace's configuration, packets, stalls by cause and
the SHA-256 of both files. Names and seeds are fixed, so two runs give byte-identical files (the
simulator is deterministic; the native core and the Python reference give identical runs).
`stallscope score --corpus OUT_DIR` then scores the analyzer on it (docs/scoring.md).

The plan covers every personality, the Nagle variant families, serial (a T1 line), Ethernet,
FDDI and ATM links with an ATM switch without discard, with PPD and with EPD, jumbo NIC receive
slots, PMTU hops answering with ICMP or black-holing, random and Gilbert loss on the forward path
and random loss on the ACK path, the Moldeklev buffer grid (S, R in 4k..52k over atm140 with the
Sun IPX host cost: the 200 ms deadlocks), bulk, request/response (`reply`), slow readers (a read
cost: `stallscope simulate bulk --read-rate`), writers that pause (application idle) and naglemark
trials recorded at the server (`stallscope simulate naglemark --pcap`). `--small` keeps about 30
of them, spread over every family, personality, link family, ATM policy and PMTU mode, for CI.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MANIFEST_SCHEMA = "stallscope.corpus/1"
PERSONALITIES = ("sunos41", "bsd44", "freebsd4", "tru64", "linux20", "linux")
MB = 1024 * 1024
KB = 1024
# A T1 serial line: the `custom` preset (no framing) at 1.544 Mbit/s, 20 ms one way.
SERIAL = {"link": "custom", "rate_bps": 1_544_000, "delay_ns": 20_000_000}
MOLDEKLEV_BUFFERS = (4096, 8192, 16384, 24576, 32768, 40960, 49152, 52428)
SMALL_PER_FAMILY = 2


@dataclass(frozen=True)
class TraceSpec:
    """One trace: `kind` bulk (run_bulk's BulkConfig fields in `config`, make_path's impairments
    as JSON values) or naglemark (naglemark_capture's arguments in `config`)."""

    name: str
    family: str
    kind: str
    config: dict[str, Any]
    impairments: dict[str, Any] = field(default_factory=dict)
    read_rate_bps: int | None = None

    @property
    def link_family(self) -> str:
        link = self.config.get("link", "")
        if link == "custom":
            return "serial"
        if link in ("ethernet10", "fastethernet", "gige"):
            return "ethernet"
        if link in ("atm140", "oc3"):
            return "atm"
        return link

    @property
    def personality(self) -> str:
        return self.config["personality"]

    def to_json(self) -> dict[str, Any]:
        doc = {"name": self.name, "family": self.family, "kind": self.kind, "link_family": self.link_family,
               "config": self.config, "impairments": self.impairments}
        if self.read_rate_bps is not None:
            doc["read_rate_bps"] = self.read_rate_bps
        return doc


def _bulk(family: str, tag: str, *, impairments: dict[str, Any] | None = None, read_rate_bps: int | None = None,
          **config: Any) -> TraceSpec:
    config.setdefault("bytes", 256 * KB)
    config.setdefault("seed", 1)
    return TraceSpec(f"{family}-{tag}", family, "bulk", dict(sorted(config.items())), dict(impairments or {}),
                     read_rate_bps)


def _link(name: str) -> dict[str, Any]:
    return dict(SERIAL) if name == "serial" else {"link": name}


def plan() -> list[TraceSpec]:
    """The full corpus, in a fixed order (names are unique and stable)."""
    out: list[TraceSpec] = []
    # Every personality over every link family, with writes of a multiple and a non-multiple of the MSS.
    for p in PERSONALITIES:
        for link in ("serial", "ethernet10", "fddi", "atm140"):
            for write in (8192, 3000):
                out.append(_bulk("bulk", f"{p}-{link}-w{write}", personality=p, write=write, **_link(link)))
    # Nagle variant families at the sender (Mogul's table 3, TCP_CORK, Moldeklev's UNACKED-MSS).
    variants = ("NAGLE", "OFF", "MINSHALL", "CORK", "MSMV", "EOM", "E+M", "MIN+MORE", "DLDET", "BORMAN",
                "UNACKED-MSS")
    for i, v in enumerate(variants):
        for j, p in enumerate(("tru64", "bsd44", "linux")):
            link = ("ethernet10", "fddi")[(i + j) % 2]
            out.append(_bulk("nagle", f"{p}-{link}-{v}", personality=p, link=link, nagle=v, write=4096 + 1000 * j,
                             sndbuf=16384, seed=1 + i))
    # ATM: a congested switch port fed by the 140 Mbit/s link, without discard, with PPD, with EPD.
    for p in ("sunos41", "bsd44", "freebsd4", "linux"):
        for policy in ("none", "ppd", "epd"):
            for cells in (200, 600):
                out.append(_bulk("atm", f"{p}-{policy}-{cells}cells", personality=p, link="atm140", bytes=512 * KB,
                                 sndbuf=52428, rcvbuf=52428,
                                 impairments={"atm_switch": {"buffer_bytes": 48 * cells, "out_rate_bps": 100_000_000,
                                                             "policy": policy}}))
    # Jumbo frames into a NIC with few jumbo receive slots.
    for p in ("linux", "freebsd4", "bsd44", "tru64"):
        for slots in (2, 4, 8):
            out.append(_bulk("jumbo", f"{p}-{slots}slots", personality=p, link="gige", mtu=9000, bytes=512 * KB,
                             sndbuf=65536, rcvbuf=65536, impairments={"jumbo_slots": slots}))
    # GigaTCP's slot exhaustion: a pool the driver refills slowly (jumbo_replenish_ns), so a burst
    # of jumbo frames finds it dry while small frames pass (simulate/reproductions/gigatcp.py).
    for p in ("freebsd4", "linux"):
        for slots, refill_ms in ((64, 5), (128, 10)):
            out.append(_bulk("jumbo", f"{p}-{slots}slots-refill{refill_ms}ms", personality=p, link="gige", mtu=8940,
                             bytes=2 * MB, sndbuf=MB, rcvbuf=MB, write=65536, read=65536,
                             impairments={"jumbo_slots": slots, "jumbo_hold_until_acked": False,
                                          "jumbo_replenish_ns": refill_ms * 1_000_000}))
    # Salamon: Linux 2.0 with TCP_NODELAY holds a tail that did not fit the window until all is
    # acknowledged; a message one window long triggers it, a shorter one does not.
    for message, receiver in ((32768, "linux20"), (24576, "linux20"), (32768, "linux")):
        out.append(_bulk("nodelay", f"linux20-msg{message}-{receiver}", personality="linux20",
                         receiver_personality=receiver, link="fastethernet", sndbuf=32768, rcvbuf=32768,
                         write=message, read=message, bytes=message * 40, nagle="OFF", reply=4))
    # A hop with a smaller MTU that answers with ICMP or silently drops (black hole).
    for p in PERSONALITIES:
        for mode in ("icmp", "blackhole"):
            out.append(_bulk("pmtu", f"{p}-fddi-{mode}", personality=p, link="fddi",
                             impairments={"pmtu_mtu": 1500, "pmtu_mode": mode}))
    for mode, probing in (("icmp", 0), ("blackhole", 0), ("blackhole", 1)):
        out.append(_bulk("pmtu", f"linux-gige9000-{mode}-probing{probing}", personality="linux", link="gige",
                         mtu=9000, mtu_probing=probing, impairments={"pmtu_mtu": 1500, "pmtu_mode": mode}))
    out.append(_bulk("pmtu", "linux-fddi-blackhole-probing1", personality="linux", link="fddi", mtu_probing=1,
                     impairments={"pmtu_mtu": 1500, "pmtu_mode": "blackhole"}))
    # Loss: random and Gilbert-Elliott bursts on the data path, random loss of ACKs.
    losses = {"random1": {"loss": 0.01}, "random3": {"loss": 0.03},
              "gilbert": {"gilbert": [0.01, 0.25, 0.0, 0.6]}, "ackloss": {"reverse_loss": 0.05}}
    for k, p in enumerate(PERSONALITIES):
        for tag, im in losses.items():
            out.append(_bulk("loss", f"{p}-{tag}", personality=p, link="ethernet10", bytes=512 * KB, seed=11 + k,
                             impairments=im))
    for sack in (False, True):
        for tag in ("random3", "gilbert"):
            out.append(_bulk("loss", f"linux-sack{'on' if sack else 'off'}-{tag}-fast", personality="linux",
                             link="fastethernet", sack=sack, bytes=1024 * KB, seed=5, impairments=losses[tag]))
    # Moldeklev's buffer grid: sunos41 over atm140, write/read 8192, Sun IPX costs.
    for s in MOLDEKLEV_BUFFERS:
        for r in MOLDEKLEV_BUFFERS:
            out.append(_bulk("moldeklev", f"S{s}-R{r}", personality="sunos41", link="atm140", mtu=9244, sndbuf=s,
                             rcvbuf=r, write=8192, read=8192, cost="sun_ipx", bytes=512 * KB))
    for s in MOLDEKLEV_BUFFERS:
        out.append(_bulk("moldeklev", f"S{s}-R{s}-nagleoff", personality="sunos41", link="atm140", mtu=9244,
                         sndbuf=s, rcvbuf=s, write=8192, read=8192, cost="sun_ipx", nagle="OFF", bytes=512 * KB))
    # Request/response: each write a message the receiver answers with `reply` bytes.
    for p in PERSONALITIES:
        for k, (write, reply) in enumerate(((4096, 64), (20000, 512), (1000, 8192))):
            link = ("ethernet10", "fddi")[k % 2]
            out.append(_bulk("reqresp", f"{p}-{link}-w{write}-r{reply}", personality=p, link=link, write=write,
                             reply=reply))
    for p in ("tru64", "linux"):
        out.append(_bulk("reqresp", f"{p}-ethernet10-w4096-r64-nagleoff", personality=p, link="ethernet10",
                         write=4096, reply=64, nagle="OFF"))
    # Slow readers: the receiving application copies at 1 or 4 Mbit/s.
    for p in PERSONALITIES:
        for rate in (1_000_000, 4_000_000):
            for rcvbuf in (8192, 32768):
                out.append(_bulk("slowreader", f"{p}-{rate // 1_000_000}mbit-rcv{rcvbuf}", personality=p,
                                 link="ethernet10", read=2048, rcvbuf=rcvbuf, read_rate_bps=rate))
    # Writers that pause between writes: application idle.
    for p in PERSONALITIES:
        for think_ms in (30, 120):
            out.append(_bulk("idle", f"{p}-think{think_ms}ms", personality=p, link="ethernet10", write=16384,
                             think_ns=think_ms * 1_000_000))
    # Send buffer limited: a small buffer over a long path.
    for p in PERSONALITIES:
        for sndbuf in (8192, 16384):
            out.append(_bulk("sndbuf", f"{p}-snd{sndbuf}", personality=p, link="custom", rate_bps=10_000_000,
                             delay_ns=50_000_000, sndbuf=sndbuf))
    # Interfaces with a larger MTU than the path's: the MSS offered is larger than the path carries.
    for p in ("linux", "freebsd4", "bsd44"):
        for mode in ("icmp", "blackhole"):
            out.append(_bulk("mss", f"{p}-hostmtu9000-{mode}", personality=p, link="fastethernet", host_mtu=9000,
                             impairments={"pmtu_mtu": 1500, "pmtu_mode": mode}))
    # naglemark (Mogul & Minshall) recorded at the server, the data sender.
    for p in ("tru64", "bsd44", "linux"):
        for v in ("NAGLE", "OFF", "MINSHALL", "E+M"):
            for link in ("ethernet10", "fddi"):
                out.append(_naglemark(p, v, link, "S", 24))
        out.append(_naglemark(p, "NAGLE", "ethernet10", "R", 12))
        out.append(_naglemark(p, "NAGLE", "fddi", "s", 40))
        out.append(_naglemark(p, "NAGLE", "ethernet10", "S", 24, think_ms=30))
    names = [s.name for s in out]
    assert len(names) == len(set(names)), "trace names must be unique"
    return out


def _naglemark(p: str, variant: str, link: str, trial: str, responses: int, think_ms: int = 0) -> TraceSpec:
    tag = f"{p}-{link}-{variant}-{trial}{responses}" + (f"-think{think_ms}ms" if think_ms else "")
    return TraceSpec(f"naglemark-{tag}", "naglemark", "naglemark", {
        "personality": p, "link": link, "nagle": variant, "trial": trial, "responses": responses,
        "app_buf": 4096, "sockbuf": 16384, "seed": 1, "think_ns": think_ms * 1_000_000,
    })


def features(spec: TraceSpec) -> set[str]:
    """What a trace adds to the small corpus's coverage."""
    out = {f"personality:{spec.personality}", f"link:{spec.link_family}", f"family:{spec.family}"}
    atm = spec.impairments.get("atm_switch")
    if atm:
        out.add(f"atm:{atm['policy']}")
    if "pmtu_mode" in spec.impairments:
        out.add(f"pmtu:{spec.impairments['pmtu_mode']}")
    return out


def small_plan(full: list[TraceSpec] | None = None) -> list[TraceSpec]:
    """About 30 traces for CI: SMALL_PER_FAMILY from each family, then one more for every
    personality, link family, ATM policy or PMTU mode still missing; each pick the member adding
    the most coverage (ties: by a hash of the name), listed in the full plan's order."""
    full = plan() if full is None else full
    chosen: list[TraceSpec] = []
    seen: set[str] = set()

    def pick(candidates: list[TraceSpec]) -> None:
        # Ties go to a fixed pseudo-random order (a hash of the name), spreading picks over a family.
        best = max(candidates, key=lambda s: (len(features(s) - seen), hashlib.sha256(s.name.encode()).hexdigest()))
        chosen.append(best)
        seen.update(features(best))

    for fam in dict.fromkeys(s.family for s in full):
        for _ in range(SMALL_PER_FAMILY):
            rest = [s for s in full if s.family == fam and s not in chosen]
            if rest:
                pick(rest)
    wanted = set().union(*(features(s) for s in full))
    while wanted - seen:
        pick([s for s in full if s not in chosen])
    order = {s.name: i for i, s in enumerate(full)}
    return sorted(chosen, key=lambda s: order[s.name])


# --- running one trace --------------------------------------------------------------------------------


def _impairments(spec: TraceSpec) -> dict[str, Any]:
    from stallscope.simulate.links.presets import AtmSwitchSpec

    im = dict(spec.impairments)
    if "atm_switch" in im:
        im["atm_switch"] = AtmSwitchSpec(**im["atm_switch"])
    if "gilbert" in im:
        im["gilbert"] = tuple(im["gilbert"])
    return im


def run_trace(spec: TraceSpec, out_dir: Path, tap: str = "sender") -> dict[str, Any]:
    """Simulate one trace into `out_dir`; its manifest entry. `tap` "receiver" captures a bulk run
    beside its receiver instead (naglemark trials stay recorded at their servers)."""
    pcap = Path(out_dir) / f"{spec.name}.pcap"
    if spec.kind == "bulk":
        from stallscope.simulate.slow_reader import reader_cost
        from stallscope.simulate.run_bulk import BulkConfig, run_bulk

        config = dict(spec.config)
        if tap != "sender":
            config["tap"] = tap
        config["cost"] = reader_cost(config.get("cost", "free"), spec.read_rate_bps)
        result = run_bulk(BulkConfig(**config), pcap=pcap, impairments=_impairments(spec))
        packets, truth = result.packets, result.ground_truth
        outcome = {"completed": result.completed, "aborted": result.aborted, "duration_ns": result.duration_ns,
                   "bytes": result.bytes}
    elif spec.kind == "naglemark":
        from stallscope.simulate.apps.naglemark_capture import run_naglemark_capture
        from stallscope.simulate.apps.naglemark import TrialType
        from stallscope.simulate.nagle import NagleVariant
        from stallscope.simulate.reproductions.mogul import TrialSpec, trial_lengths

        c = spec.config
        variant = NagleVariant.parse(c["nagle"])
        lengths = trial_lengths(TrialSpec(c["link"], variant, c["app_buf"], c["sockbuf"], TrialType(c["trial"]),
                                          c["seed"], c["responses"], c["personality"], False))
        cap = run_naglemark_capture(personality=c["personality"], link=c["link"], variant=variant,
                                    sockbuf=c["sockbuf"], app_buf=c["app_buf"], trial=c["trial"], lengths=lengths,
                                    seed=c["seed"], think_ns=c["think_ns"], pcap=pcap)
        packets, truth = len(cap.records), cap.ground_truth
        outcome = {"score_pct": round(cap.result.score_pct, 4), "finished_ns": cap.result.finished_ns,
                   "bytes": sum(lengths)}
    else:
        raise ValueError(f"unknown trace kind {spec.kind!r}")
    causes: dict[str, int] = {}
    for s in truth.stalls:
        causes[s.cause.value] = causes.get(s.cause.value, 0) + 1
    truth_file = pcap.with_name(pcap.name + ".truth.json")
    return {**spec.to_json(), "pcap": pcap.name, "truth": truth_file.name, "packets": packets,
            "pcap_bytes": pcap.stat().st_size, "stalls": dict(sorted(causes.items())), "outcome": outcome,
            "pcap_sha256": _sha256(pcap), "truth_sha256": _sha256(truth_file)}


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _run_one(args: tuple[TraceSpec, Path, str]) -> dict[str, Any]:
    return run_trace(*args)


def _plan(small: bool, holdout: bool, draw: int | None = None) -> list[TraceSpec]:
    """The scoring corpus's plan, its small subset, the holdout plan, or a drawn one."""
    if draw is not None:
        from stallscope.analyzers import corpus_drawn  # (it imports this module)

        return corpus_drawn.plan(draw)
    if holdout:
        from stallscope.analyzers import corpus_holdout  # (it imports this module)

        return corpus_holdout.plan()
    return small_plan() if small else plan()


def generate(out_dir: Path, *, small: bool = False, jobs: int = 2, only: list[str] | None = None,
             on_trace: Callable[[int, int], None] | None = None, holdout: bool = False,
             draw: int | None = None, tap: str = "sender") -> dict[str, Any]:
    """Write the corpus (or the small one) into `out_dir` with its manifest; the manifest.
    `on_trace(done, total)` is called as each trace is written (a progress display). `tap`
    "receiver": the bulk runs captured beside their receivers (an odd vantage for the analyzer)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    specs = _plan(small, holdout, draw)
    if only:
        specs = [s for s in specs if any(o in s.name for o in only)]
    tasks = [(s, out_dir, tap) for s in specs]
    entries: list[dict[str, Any]] = []
    if jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            # Longest first would balance better, but the order of results is the plan's either way.
            for entry in pool.imap(_run_one, tasks, chunksize=1):
                entries.append(entry)
                if on_trace:
                    on_trace(len(entries), len(tasks))
    else:
        for t in tasks:
            entries.append(_run_one(t))
            if on_trace:
                on_trace(len(entries), len(tasks))
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "mode": "holdout" if holdout else "small" if small else "full",
        **({"tap": tap} if tap != "sender" else {}),
        "traces": entries,
        "coverage": coverage(entries),
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def coverage(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """What the traces cover: counts per family, personality, link family, and true stalls per cause."""
    def count(key: Any) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in entries:
            k = key(e)
            out[k] = out.get(k, 0) + 1
        return dict(sorted(out.items()))

    causes: dict[str, int] = {}
    for e in entries:
        for c, n in e["stalls"].items():
            causes[c] = causes.get(c, 0) + n
    return {"traces": len(entries), "families": count(lambda e: e["family"]),
            "personalities": count(lambda e: e["config"]["personality"]),
            "link_families": count(lambda e: e["link_family"]),
            "atm_policies": count(lambda e: e["impairments"].get("atm_switch", {}).get("policy", "-")),
            "true_stalls": dict(sorted(causes.items())),
            "pcap_bytes": sum(e["pcap_bytes"] for e in entries)}


@contextmanager
def _progress(quiet: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A Rich bar on standard error while traces are written: only on a terminal, not with --quiet
    or STALLSCOPE_QUIET=1 (the CLI's rule, docs/cli.md)."""
    if quiet or os.environ.get("STALLSCOPE_QUIET") == "1" or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("corpus"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("corpus", total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stallscope.analyzers.corpus",
                                     description="Generate the scoring corpus (simulated traces with ground truth).")
    parser.add_argument("out_dir", type=Path, help="directory to write NAME.pcap, NAME.pcap.truth.json and manifest.json")
    parser.add_argument("--small", action="store_true", help="about 30 traces, for CI")
    parser.add_argument("--holdout", action="store_true",
                        help="the holdout corpus instead (analyzers/corpus_holdout.py: parameters the full one never uses)")
    parser.add_argument("--draw", type=int, metavar="N",
                        help="drawn corpus N instead (analyzers/corpus_drawn.py: every parameter drawn at random, "
                             "seeded by N; a corpus no rule was shaped on)")
    parser.add_argument("--tap", choices=("sender", "receiver"), default="sender",
                        help="where the bulk runs are captured: beside the sender (default) or the receiver "
                             "(naglemark trials stay at their servers)")
    parser.add_argument("--jobs", "-j", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--only", action="append", help="only traces whose name contains this (repeatable)")
    parser.add_argument("--list", action="store_true", help="print the plan's trace names and exit")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar (shown only on a terminal)")
    args = parser.parse_args(argv)
    if args.list:
        for s in _plan(args.small, args.holdout, args.draw):
            print(s.name)
        return 0
    t0 = time.monotonic()
    with _progress(args.quiet) as advance:
        manifest = generate(args.out_dir, small=args.small, jobs=args.jobs, only=args.only, on_trace=advance,
                            holdout=args.holdout, draw=args.draw, tap=args.tap)
    cov = manifest["coverage"]
    print(f"{cov['traces']} traces, {cov['pcap_bytes'] / 1e6:.1f} MB of pcap in {args.out_dir} "
          f"({time.monotonic() - t0:.1f} s, {args.jobs} worker(s))", file=sys.stderr)
    print(json.dumps(cov, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
