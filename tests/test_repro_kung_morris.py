"""Kung & Morris (GLOBECOM '95) reproduced on the simulator: a 64 KB window through a 155 -> 53
Mbit/s ATM switch port."""

import pytest

from stallscope.simulate.reproductions import REPRODUCTIONS
from stallscope.simulate.reproductions.kung_morris import run_case


@pytest.mark.paper
def test_small_buffer_collapses_into_timeouts_that_follow_two_damaged_packets():
    """Paper: with 48 KB of buffer TCP sends bursts separated by ~1.5 s timeout pauses, and the
    switch drops cells from two packets each time the window grows."""
    small = run_case(9180, "none", 48 * 1024)
    assert small["goodput_mbit_s"] < 5  # of ~46 loss-free
    assert small["timeouts"] >= 10
    assert small["pdus_per_episode"] == 2
    # 3 slow ticks from the BSD fixed-point RTO (not the 2-tick floor): 1.0-1.5 s after re-arming
    assert 1.2 <= small["pause_s"] <= 1.5
    assert small["stall_causes"] == ["burst_loss_timeout/atm_cell_loss"]


@pytest.mark.paper
def test_buffer_holding_the_window_and_epd_keep_goodput():
    """Paper: good performance once the buffer holds a 64 KB window; EPD (whole-packet drops,
    repaired by fast retransmit) recovers most of the bandwidth at the same small buffer."""
    big = run_case(9180, "none", 72 * 1024)
    assert big["pdus_lost"] == 0 and big["goodput_mbit_s"] > 44  # ~5.7 MB/s after SONET and ATM
    epd = run_case(9180, "epd", 48 * 1024)
    assert epd["goodput_mbit_s"] > 0.5 * big["goodput_mbit_s"]
    assert epd["timeouts"] <= 2 and epd["pdus_lost"] > 0


@pytest.mark.paper
def test_ppd_barely_changes_anything():
    """Paper: turning Partial Packet Discard on has little effect."""
    none = run_case(9180, "none", 40 * 1024)
    ppd = run_case(9180, "ppd", 40 * 1024)
    assert abs(none["goodput_mbit_s"] - ppd["goodput_mbit_s"]) < 1.0
    assert ppd["goodput_mbit_s"] < 5


@pytest.mark.slow
@pytest.mark.paper
def test_registered_reproduction_passes_its_tolerance():
    """The whole table (2 MTUs x 3 policies x 6 buffers) held to the paper's direction and size."""
    result = REPRODUCTIONS["kung-morris"].run()
    assert result.passed, result.verdict
    assert len(result.rows) == 36
    assert sum(r["holds"] for r in result.rows) >= 0.8 * len(result.rows)
