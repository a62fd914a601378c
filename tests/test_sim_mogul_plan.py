"""How the Mogul table reproduction plans its trials (without running the TCP hosts)."""

from __future__ import annotations

import pytest

from stallscope.simulate.apps import naglemark as nm
from stallscope.simulate.reproductions import mogul
from stallscope.simulate.reproductions import mogul_compare as mc
from shared_material import requires_reference


def test_sequential_trials_run_once_and_random_ones_per_repetition():
    specs = mogul.table_specs("fddi", random_repetitions=3)
    per_cell = 1 + 1 + 3 + 3  # s, S once; r, R three times each
    assert len(specs) == 11 * 9 * per_cell
    seeds = {s.seed for s in specs if s.trial is nm.TrialType.R}
    assert seeds == {0, 1, 2}


def test_a_table_subsamples_only_its_random_trials():
    """A sequential trial's delays depend on how long ago the previous delay was released, so a
    table (CI size or not) runs every sequential length; `responses` thins the random draws."""
    specs = mogul.table_specs("ethernet10", responses=100, random_repetitions=2)
    assert {s.responses for s in specs if s.trial.sequential} == {nm.RESPONSES_PER_TRIAL}
    assert {s.responses for s in specs if not s.trial.sequential} == {100}
    assert {s.think_ns for s in specs} == {mogul.CLIENT_THINK_NS}


def test_subsampled_sequential_lengths_spread_over_the_whole_range():
    spec = mogul.TrialSpec("fddi", mogul.TABLE_VARIANTS[0], 4096, 16384, nm.TrialType.S, 0, responses=100)
    lengths = mogul.trial_lengths(spec)
    assert len(lengths) == 100
    # one length from each stride of ten: 100..1000, 1100..2000, ...
    assert all(1000 * i < n <= 1000 * (i + 1) for i, n in enumerate(lengths))
    assert len({n % 1000 for n in lengths}) > 5  # not a fixed offset
    assert mogul.trial_lengths(spec) == lengths  # seeded
    full = mogul.TrialSpec("fddi", mogul.TABLE_VARIANTS[0], 4096, 16384, nm.TrialType.S, 0)
    assert mogul.trial_lengths(full) == nm.response_lengths(nm.TrialType.S)


@requires_reference
def test_rows_pair_each_cell_with_the_paper():
    paper = mc.load_paper_table("ethernet10")
    cells = {c: p.score_pct + (9.0 if c == ("NAGLE", 4096, 16384) else 0.0) for c, p in paper.items()}
    sim = mogul.SimulatedTable("ethernet10", cells, {c: "S" for c in cells}, {}, 0.0, 0)
    rows = mogul.table_rows(sim, paper)
    assert len(rows) == 99 and rows[0]["variant"] == "NAGLE"
    off = [r for r in rows if not r["within_8"]]
    assert [(r["variant"], r["app_buf"], r["sockbuf"]) for r in off] == [("NAGLE", 4096, 16384)]


@requires_reference
@pytest.mark.slow
def test_reproduction_result_has_every_cell_and_a_worst_row_per_variant():
    """A tiny FDDI run (10 responses per trial) through the `reproduce` entry: shape and verdict text."""
    r = mogul.table5(responses=10, random_repetitions=1, workers=1)
    assert r.name == "mogul-table5"
    assert len(r.rows) == 99 + 11
    worst = [row for row in r.rows if row["app_buf"] == "worst"]
    assert {row["variant"] for row in worst} == {v.value for v in mogul.TABLE_VARIANTS}
    assert "cells within 8 points" in r.verdict and f"{r.details['cells_within']}/99" in r.verdict
    # DLDET never waits for a tick, whatever the sample size
    assert all(row["sim_pct"] == 0.0 for row in r.rows if row["variant"] == "DLDET")


def test_reproduce_runs_the_papers_size():
    """The tolerances are stated for 1000 responses and 10 repetitions of the random trials;
    `stallscope reproduce` runs that size."""
    assert mogul.default_size() == (1000, 10)
