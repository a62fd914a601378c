"""Mogul & Minshall tables 4 and 5 from the simulator, held to reference/README.md's tolerances.

CI runs a subsample: 100 of the 1000 response lengths per trial (one seeded pick from each stride
of ten sequential lengths, 100 random draws) and 2 repetitions of the random trials; the
tolerances are the full ones. At full size (1000 responses; measured 2026-11-22: Ethernet 275 s,
FDDI 256 s on 2 workers) table 4 keeps 98/99 cells within 8 points and tau-b 0.75, but the worst
scores of EOM, MSMV and E+M+M exceed the paper's by 5.4-6.3 points (4 KB writes into a 16 KB buffer).
"""

from __future__ import annotations

import pytest

from stallscope.simulate.reproductions import mogul
from stallscope.simulate.reproductions import mogul_compare as mc

RESPONSES = 100
REPETITIONS = 2


@pytest.fixture(scope="module")
def ethernet():
    sim = mogul.run_table("ethernet10", responses=RESPONSES, random_repetitions=REPETITIONS, workers=2)
    return sim, mc.judge(sim.cells, mc.load_paper_table("ethernet10"))


@pytest.fixture(scope="module")
def fddi():
    sim = mogul.run_table("fddi", responses=RESPONSES, random_repetitions=REPETITIONS, workers=2)
    return sim, mc.judge(sim.cells, mc.load_paper_table("fddi"))


@pytest.mark.slow
@pytest.mark.paper
def test_table4_ethernet_within_the_paper_tolerances(ethernet):
    """Mogul table 4 (10 Mbit/s Ethernet, MSS 1460): every variant's worst score within 5 points,
    >= 85 % of cells within 8 points, Kendall tau-b of the ranking >= 0.7."""
    sim, v = ethernet
    off = {k: w for k, w in v.worst.items() if not v.worst_ok[k]}
    assert not off, f"worst scores off by more than 5 points: {off}"
    assert v.cell_share >= mc.CELL_SHARE_REQUIRED
    assert v.tau >= mc.KENDALL_TAU_REQUIRED


@pytest.mark.slow
@pytest.mark.paper
def test_table4_orders_the_families_as_the_paper_does(ethernet):
    """Mogul §8: DLDET, E+M+D and OFF near 0; MSMV and E+M+M in between; NAGLE, EOM, E+M, BORMAN worst."""
    sim, v = ethernet
    worst = {k: s for k, (s, _) in v.worst.items()}
    assert max(worst[k] for k in ("DLDET", "E+M+D", "OFF")) < 3.0
    assert 10.0 < worst["MSMV"] < worst["NAGLE"] and 10.0 < worst["E+M+M"] < worst["NAGLE"]
    assert min(worst[k] for k in ("NAGLE", "EOM", "E+M", "BORMAN")) > 25.0


@pytest.mark.slow
@pytest.mark.paper
def test_table5_fddi_holds_outside_the_16k_socket_buffer_column(fddi):
    """Mogul table 5 (100 Mbit/s FDDI, MSS 4312), 64 KB and 128 KB socket buffers: >= 85 % of cells
    within 8 points and the variant ranking with Kendall tau-b >= 0.7; DLDET, E+M+D and OFF score
    0 in every cell (paper: 0.0 everywhere) and NAGLE's worst is no better than the paper's."""
    sim, v = fddi
    paper = {c: p for c, p in mc.load_paper_table("fddi").items() if c[2] != 16384}
    sub = mc.judge(sim.cells, paper)
    assert sub.cell_share >= mc.CELL_SHARE_REQUIRED
    assert sub.tau >= mc.KENDALL_TAU_REQUIRED
    for k in ("DLDET", "E+M+D", "OFF"):
        assert v.worst[k][0] == 0.0
    assert v.worst["NAGLE"][0] >= v.worst["NAGLE"][1] - mc.WORST_TOLERANCE_POINTS  # at least as bad as the paper


@pytest.mark.slow
@pytest.mark.paper
@pytest.mark.xfail(strict=True, reason="FDDI 16 KB socket buffer: after a refill the short remainder leaves alone "
                   "on the ACK and the write's tail waits behind it for the 200 ms tick (the receiver has < 2 * MSS "
                   "to acknowledge); the host also re-tests the writer's low-water mark after every 8192-byte "
                   "cluster where BSD sosend tests it once per round (full size: NAGLE and MINSHALL 84 %, paper "
                   "44 % and 9 %); see simulate/reproductions/mogul.py")
def test_table5_fddi_within_the_paper_tolerances(fddi):
    sim, v = fddi
    assert v.passed, f"worst ok={v.worst_ok}, cells {v.cells_within}/{v.cells_total}, tau {v.tau:.2f}"
