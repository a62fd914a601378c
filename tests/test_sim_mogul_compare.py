"""The Mogul table tolerances (reference/README.md) applied to simulated tables."""

from __future__ import annotations

import pytest

from stallscope.simulate.reproductions import mogul_compare as mc
from shared_material import requires_reference


def test_kendall_tau_b_known_values():
    assert mc.kendall_tau_b([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert mc.kendall_tau_b([1, 2, 3, 4], [40, 30, 20, 10]) == pytest.approx(-1.0)
    # one swapped pair out of six: (5 - 1) / 6
    assert mc.kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    # ties in x: tau-b = (C - D) / sqrt((C + D + Tx)(C + D + Ty)) = 5 / sqrt(6 * 5)
    assert mc.kendall_tau_b([0, 0, 1, 2], [1, 2, 3, 4]) == pytest.approx(5 / (30**0.5))
    with pytest.raises(ValueError):
        mc.kendall_tau_b([1], [1])


@requires_reference
@pytest.mark.paper
@pytest.mark.parametrize("link, variants", [("ethernet10", 11), ("fddi", 11)])
def test_paper_tables_load_with_all_cells(link, variants):
    """Mogul tables 4 and 5 as committed in reference/: 11 variants x 9 buffer cells."""
    paper = mc.load_paper_table(link)
    assert len(paper) == variants * 9
    assert paper[("NAGLE", 4096, 65536)].score_pct == (32.4 if link == "ethernet10" else 56.0)


@requires_reference
@pytest.mark.paper
def test_the_paper_table_passes_against_itself_and_a_shifted_one_fails():
    paper = mc.load_paper_table("fddi")
    same = {c: p.score_pct for c, p in paper.items()}
    v = mc.judge(same, paper)
    assert v.passed and v.tau == pytest.approx(1.0) and v.cell_share == 1.0
    worse = dict(same)
    for c in worse:
        if c[0] == "DLDET":
            worse[c] += 6.0  # DLDET's worst now 6 points off
    v = mc.judge(worse, paper)
    assert not v.passed and not v.worst_ok["DLDET"] and v.worst_ok["NAGLE"]


@requires_reference
def test_missing_cells_and_bad_files_are_reported(tmp_path):
    paper = mc.load_paper_table("ethernet10")
    with pytest.raises(ValueError, match="lacks 99 paper cells"):
        mc.judge({}, paper)
    (tmp_path / "mogul-table4-ethernet.csv").write_text("variant,app_buf_bytes,sockbuf_bytes,worst_trial_type,score_pct\nX,4k,1,S,0\n")
    with pytest.raises(ValueError, match="mogul-table4-ethernet.csv:2"):
        mc.load_paper_table("ethernet10", tmp_path)
    with pytest.raises(FileNotFoundError, match="fddi"):
        mc.load_paper_table("fddi", tmp_path)
