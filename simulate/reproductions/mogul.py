"""Mogul & Minshall reproductions: naglemark tables 4 (Ethernet) and 5 (FDDI), the FDDI
8192-byte-buffer throughput of section 9, and the section 3.3 OF+SFS shares.

Cost. A table is 11 variants x 9 buffer cells x 4 trial types x 1000 responses. The simulator is
deterministic, so a sequential trial (s, S) needs one repetition; only random trials (r, R) are
repeated, each repetition with its own seed (the paper averages 10). Trials run in a process
pool (default 2 workers). `responses` below 1000 subsamples the lengths evenly (sequential: every
k-th length; random: fewer draws) for the CI tests, which hold the same tolerances.
"""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from ..apps import naglemark as nm
from ..nagle import NagleVariant
from . import mogul_compare as mc

# Mogul table 3 (the variants of tables 4 and 5) and section 7's buffer grid.
TABLE_VARIANTS: tuple[NagleVariant, ...] = (
    NagleVariant.NAGLE,
    NagleVariant.OFF,
    NagleVariant.MINSHALL,
    NagleVariant.MSMV,
    NagleVariant.EOM,
    NagleVariant.E_M,
    NagleVariant.MIN_MORE,
    NagleVariant.DLDET,
    NagleVariant.E_M_M,
    NagleVariant.E_M_D,
    NagleVariant.BORMAN,
)
APP_BUFS = (4096, 32768, 131072)
SOCKBUFS = (16384, 65536, 131072)
TRIALS = (nm.TrialType.s, nm.TrialType.S, nm.TrialType.r, nm.TrialType.R)
LINK_OF_TABLE = {"mogul-table4": "ethernet10", "mogul-table5": "fddi"}


@dataclass(frozen=True, slots=True)
class TrialSpec:
    link: str
    variant: NagleVariant
    app_buf: int
    sockbuf: int
    trial: nm.TrialType
    seed: int
    responses: int = nm.RESPONSES_PER_TRIAL
    personality: str = "tru64"
    receiver_inference: bool = False  # Mogul §7: the client's inference was defeated for tables 4/5


def trial_lengths(spec: TrialSpec) -> list[int]:
    if spec.trial.sequential:
        full = nm.response_lengths(spec.trial, nm.RESPONSES_PER_TRIAL)
        step = max(1, nm.RESPONSES_PER_TRIAL // spec.responses)
        # the middle of each stride, so a subsample does not sit on round multiples of 100 * step
        return full[step // 2 :: step][: spec.responses]
    return nm.response_lengths(spec.trial, spec.responses, seed=spec.seed)


def run_spec(spec: TrialSpec) -> float:
    """One trial's score (module-level so a process pool can run it)."""
    from ..apps.naglemark_net import make_network  # the TCP hosts; imported in the worker

    network, raw_rate_bps = make_network(
        personality=spec.personality,
        link=spec.link,
        variant=spec.variant,
        sockbuf=spec.sockbuf,
        receiver_inference=spec.receiver_inference,
        seed=spec.seed,
    )
    result = nm.run_trial(
        network,
        trial=spec.trial,
        app_buf=spec.app_buf,
        sockbuf=spec.sockbuf,
        raw_rate_bps=raw_rate_bps,
        lengths=trial_lengths(spec),
    )
    return result.score_pct


def table_specs(
    link: str,
    *,
    responses: int = nm.RESPONSES_PER_TRIAL,
    random_repetitions: int = 10,
    seed: int = 0,
    variants: tuple[NagleVariant, ...] = TABLE_VARIANTS,
) -> list[TrialSpec]:
    specs = []
    for variant in variants:
        for app_buf in APP_BUFS:
            for sockbuf in SOCKBUFS:
                for trial in TRIALS:
                    reps = 1 if trial.sequential else random_repetitions
                    for rep in range(reps):
                        specs.append(TrialSpec(link, variant, app_buf, sockbuf, trial, seed + rep, responses))
    return specs


@dataclass(frozen=True, slots=True)
class SimulatedTable:
    link: str
    cells: dict[mc.Cell, float]  # worst over trial types of the mean over repetitions
    worst_trial: dict[mc.Cell, str]
    by_trial: dict[tuple[str, int, int, str], float]
    wall_s: float
    trials_run: int


def run_table(
    link: str,
    *,
    responses: int = nm.RESPONSES_PER_TRIAL,
    random_repetitions: int = 10,
    seed: int = 0,
    workers: int = 2,
    variants: tuple[NagleVariant, ...] = TABLE_VARIANTS,
) -> SimulatedTable:
    specs = table_specs(link, responses=responses, random_repetitions=random_repetitions, seed=seed, variants=variants)
    start = time.perf_counter()
    if workers <= 1:
        scores = [run_spec(s) for s in specs]
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            scores = list(pool.map(run_spec, specs, chunksize=4))
    wall = time.perf_counter() - start
    sums: dict[tuple[str, int, int, str], list[float]] = {}
    for spec, score in zip(specs, scores):
        sums.setdefault((spec.variant.value, spec.app_buf, spec.sockbuf, spec.trial.value), []).append(score)
    by_trial = {k: sum(v) / len(v) for k, v in sums.items()}
    cells: dict[mc.Cell, float] = {}
    worst_trial: dict[mc.Cell, str] = {}
    for (variant, app_buf, sockbuf, trial), score in sorted(by_trial.items()):
        cell = (variant, app_buf, sockbuf)
        if cell not in cells or score > cells[cell]:
            cells[cell], worst_trial[cell] = score, trial
    return SimulatedTable(link, cells, worst_trial, by_trial, wall, len(specs))


def table_rows(sim: SimulatedTable, paper: dict[mc.Cell, mc.PaperCell]) -> list[dict]:
    """One row per cell: the simulator's worst score and trial next to the paper's."""
    rows = []
    for cell in sorted(paper, key=lambda c: (TABLE_VARIANTS.index(NagleVariant(c[0])), c[1], c[2])):
        p = paper[cell]
        s = sim.cells[cell]
        rows.append(
            {
                "variant": cell[0],
                "app_buf": cell[1],
                "sockbuf": cell[2],
                "sim_pct": round(s, 1),
                "sim_trial": sim.worst_trial[cell],
                "paper_pct": p.score_pct,
                "paper_trial": p.worst_trial,
                "within_8": abs(s - p.score_pct) <= mc.CELL_TOLERANCE_POINTS,
            }
        )
    return rows
