"""Mogul & Minshall tables 4 and 5 from the simulator, held to reference/README.md's tolerances.

CI runs the sequential trials whole and subsamples the random ones (100 random draws instead of
1000, 2 repetitions instead of 10); the tolerances are the full ones. The full-size tests (1000
responses, 10 repetitions: 8-30 s per table here) run with `make test-slow`. Measured at full size on 2026-11-23 with the OSF/1 sosend
copy (a cluster per PRU_SEND whatever the round's space left), MSMV's tearing exemption read as
sb_cc a multiple of MCLBYTES, and a short segment only at the end of a write (write_more_hold):
- table 4 (Ethernet): 98/99 cells within 8 points, tau-b 0.78, 10/11 worst scores within 5 points
  (EOM 37.3 against 31.9: sequential trials with 4 KB writes, where EOM is NAGLE);
- table 5 (FDDI): 90/99 cells, tau-b 0.76, 9/11 worst scores (MINSHALL 66.4 against 8.8 and
  MIN+MORE 66.4 against 8.7, both in the 4 KB / 16 KB cell).
With MINSHALL as Mogul's kernel measured it (tru64's minshall_idle_writes_only, inferred from these
tables; personality.py says why), the same day:
- table 4: 98/99 cells, tau-b 0.78, 10/11 worst scores (EOM as above; MINSHALL 2.9 against 2.6);
- table 5: 94/99 cells, tau-b 0.95, 11/11 worst scores: it meets every tolerance.
With that rule remembering only a short segment a write sent alone (not the 1176-byte end of an
Ethernet 4 KB write, which follows two full segments in the same call), 2026-11-23: table 4 tau-b
0.84, MINSHALL and MIN+MORE 0.0 % in every cell (paper 0.0-2.6), the rest unchanged; table 5
identical cell for cell.
With the naglemark client's 25 ms think time between responses (CALIBRATED;
docs/mogul-calibration.md#client-think-time gives the fit), the same day: table 4 meets every tolerance (11/11 worst scores, 98/99
cells, tau-b 0.84; the NAGLE family's worst 32.9 against 31.9-33.4), table 5 as before.
"""
from __future__ import annotations

import pytest

from shared_material import requires_reference
from stallscope.simulate.reproductions import mogul
from stallscope.simulate.reproductions import mogul_compare as mc

pytestmark = requires_reference

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
def test_table5_fddi_within_the_paper_tolerances(fddi):
    """Mogul table 5 whole: every variant's worst score within 5 points, >= 85 % of cells within 8
    points, Kendall tau-b >= 0.7 (MINSHALL as his Tru64 kernel measured it: tru64's
    minshall_idle_writes_only)."""
    sim, v = fddi
    assert v.passed, f"worst ok={v.worst_ok}, cells {v.cells_within}/{v.cells_total}, tau {v.tau:.2f}"


@pytest.mark.slow
@pytest.mark.paper
def test_table5_minshall_waits_only_behind_a_write_sent_alone(fddi):
    """Mogul section 8, figure 9: with 4 KB writes (below the FDDI MSS) MINSHALL delays a response
    from 4097 bytes until app_buf + 2 * MSS = 12720, and nowhere else (8.7-8.8 % in every 4 KB
    column, 0.0 % with larger writes); MIN+MORE scores the same."""
    sim, _ = fddi
    for variant in ("MINSHALL", "MIN+MORE"):
        for app_buf in (4096,):
            for sockbuf in (16384, 65536, 131072):
                assert 6.0 <= sim.cells[(variant, app_buf, sockbuf)] <= 12.0
        for app_buf in (32768, 131072):
            for sockbuf in (16384, 65536, 131072):
                assert sim.cells[(variant, app_buf, sockbuf)] <= 1.0


def _full(link: str):
    sim = mogul.run_table(link, responses=1000, random_repetitions=10, workers=2)
    return mc.judge(sim.cells, mc.load_paper_table(link))


@pytest.fixture(scope="module")
def ethernet_full():
    return _full("ethernet10")


@pytest.fixture(scope="module")
def fddi_full():
    return _full("fddi")


@pytest.mark.slow
@pytest.mark.parametrize("table", ["ethernet_full", "fddi_full"])
def test_full_size_cells_and_ranking_within_the_paper_tolerances(table, request):
    """Mogul tables 4 and 5 at the paper's size (1000 responses, 10 repetitions): >= 85 % of the 99
    cells within 8 points and the ranking of the 11 variants by worst score with Kendall tau-b >= 0.7."""
    v = request.getfixturevalue(table)
    assert v.cell_share >= mc.CELL_SHARE_REQUIRED, f"{v.cells_within}/{v.cells_total}"
    assert v.tau >= mc.KENDALL_TAU_REQUIRED


@pytest.mark.slow
@pytest.mark.parametrize("table", ["ethernet_full", "fddi_full"])
def test_full_size_worst_score_of_every_variant_within_5_points(table, request):
    v = request.getfixturevalue(table)
    off = {k: w for k, w in v.worst.items() if not v.worst_ok[k]}
    assert not off, f"worst scores off by more than 5 points: {off}"


@pytest.mark.slow
@pytest.mark.paper
def test_the_calibrated_think_time_is_what_brings_table4s_eom_within_5_points():
    """The fitted think time (mogul.CLIENT_THINK_NS) is the reason table 4 passes:
    without it EOM's worst score is more than 5 points above the paper's, in the sequential 4 KB
    trials where stalls phase-lock to the client's 200 ms tick. Keeps the calibration visible."""
    base = dict(responses=1000, random_repetitions=1, workers=2, variants=(mogul.NagleVariant.EOM,))
    paper_worst = max(p.score_pct for c, p in mc.load_paper_table("ethernet10").items() if c[0] == "EOM")
    without = max(mogul.run_table("ethernet10", think_ns=0, **base).cells.values())
    calibrated = max(mogul.run_table("ethernet10", **base).cells.values())
    assert without - paper_worst > mc.WORST_TOLERANCE_POINTS >= abs(calibrated - paper_worst)
    assert calibrated < without - 3.0
