"""Holding a simulated naglemark table against Mogul & Minshall tables 4 and 5.

Tolerances (reference/README.md): each variant's worst score within 5 points of the paper's, at
least 85 % of cells within 8 points, and the ranking of variants by worst score with Kendall
tau >= 0.7 (tau-b, since the paper's table 5 has ties at 0.0 %).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

WORST_TOLERANCE_POINTS = 5.0
CELL_TOLERANCE_POINTS = 8.0
CELL_SHARE_REQUIRED = 0.85
KENDALL_TAU_REQUIRED = 0.7

PAPER_FILES = {"ethernet10": "mogul-table4-ethernet.csv", "fddi": "mogul-table5-fddi.csv"}

Cell = tuple[str, int, int]  # (variant, app_buf, sockbuf)


@dataclass(frozen=True, slots=True)
class PaperCell:
    score_pct: float
    worst_trial: str


def load_paper_table(link: str, reference_dir: Path | None = None) -> dict[Cell, PaperCell]:
    if reference_dir is None:
        from . import reference_dir as default_reference_dir  # the one resolver, beside the checkout

        reference_dir = default_reference_dir()
    path = reference_dir / PAPER_FILES[link]
    try:
        text = path.read_text()
    except OSError as exc:
        raise FileNotFoundError(f"Mogul reference table for {link} not readable at {path}: {exc}") from exc
    out: dict[Cell, PaperCell] = {}
    for lineno, row in enumerate(csv.DictReader(text.splitlines()), start=2):
        try:
            key = (row["variant"], int(row["app_buf_bytes"]), int(row["sockbuf_bytes"]))
            out[key] = PaperCell(float(row["score_pct"]), row["worst_trial_type"])
        except (KeyError, ValueError) as exc:
            raise ValueError(f"{path}:{lineno}: bad row {row!r}: {exc}") from exc
    return out


def kendall_tau_b(xs: list[float], ys: list[float]) -> float:
    """Kendall's tau-b (ties in either ranking reduce the denominator)."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError("Kendall tau needs two equally long lists of at least two values")
    concordant = discordant = ties_x = ties_y = 0
    n = len(xs)
    for i in range(n):
        for j in range(i + 1, n):
            dx = (xs[i] > xs[j]) - (xs[i] < xs[j])
            dy = (ys[i] > ys[j]) - (ys[i] < ys[j])
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif dx == dy:
                concordant += 1
            else:
                discordant += 1
    denom = ((concordant + discordant + ties_x) * (concordant + discordant + ties_y)) ** 0.5
    return 0.0 if denom == 0 else (concordant - discordant) / denom


@dataclass(frozen=True, slots=True)
class TableVerdict:
    worst: dict[str, tuple[float, float]]  # variant -> (simulated worst, paper worst)
    cells_within: int
    cells_total: int
    tau: float

    @property
    def worst_ok(self) -> dict[str, bool]:
        return {v: abs(s - p) <= WORST_TOLERANCE_POINTS for v, (s, p) in self.worst.items()}

    @property
    def cell_share(self) -> float:
        return self.cells_within / self.cells_total

    @property
    def passed(self) -> bool:
        return (
            all(self.worst_ok.values())
            and self.cell_share >= CELL_SHARE_REQUIRED
            and self.tau >= KENDALL_TAU_REQUIRED
        )


def judge(simulated: dict[Cell, float], paper: dict[Cell, PaperCell]) -> TableVerdict:
    """Compare the cells both tables have (every paper cell must be simulated)."""
    missing = sorted(set(paper) - set(simulated))
    if missing:
        raise ValueError(f"simulated table lacks {len(missing)} paper cells, e.g. {missing[0]}")
    variants = sorted({v for v, _, _ in paper})
    worst = {
        v: (
            max(simulated[c] for c in paper if c[0] == v),
            max(p.score_pct for c, p in paper.items() if c[0] == v),
        )
        for v in variants
    }
    within = sum(1 for c, p in paper.items() if abs(simulated[c] - p.score_pct) <= CELL_TOLERANCE_POINTS)
    tau = kendall_tau_b([worst[v][0] for v in variants], [worst[v][1] for v in variants])
    return TableVerdict(worst, within, len(paper), tau)
