"""Shalunov's GigaTCP report reproduced on the simulator: the Tigon jumbo-slot pool and the
FreeBSD cloned-route MSS."""

import pytest

from stallscope.simulate.reproductions import REPRODUCTIONS
from stallscope.simulate.reproductions.gigatcp import (
    JUMBO_MTU,
    MB,
    ladder_matches,
    mss_case,
    run_case,
    slow_return_case,
)


@pytest.mark.paper
def test_pool_smaller_than_the_window_turns_one_loss_into_the_backoff_ladder():
    """Report: large frames lost while small ones pass, the retransmission backs off 1, 2, 4 ...
    64 s and never gets through; with 8192 slots the same window runs at ~985 Mbit/s."""
    stuck = run_case(JUMBO_MTU, 384, 4 * MB, transfer=32 * MB)
    assert not stuck["completed"] and stuck["jumbo_drops"] >= 100
    assert ladder_matches(stuck["retransmit_gaps_s"])
    fixed = run_case(JUMBO_MTU, 8192, 4 * MB, transfer=32 * MB)
    assert fixed["completed"] and fixed["jumbo_drops"] == 0
    assert abs(fixed["goodput_mbit_s"] - 985) < 0.02 * 985


def test_window_within_the_pool_recovers_from_the_same_loss():
    small = run_case(JUMBO_MTU, 384, 2 * MB, transfer=32 * MB)
    assert small["completed"] and small["jumbo_drops"] == 0 and small["timeouts"] == 0


def test_ladder_check_rejects_other_patterns():
    assert ladder_matches([1, 2, 4, 8, 16, 32, 64, 64])
    assert not ladder_matches([1, 1, 1, 1, 1, 1, 1])
    assert not ladder_matches([1, 2, 4])


@pytest.mark.paper
def test_ground_truth_names_the_slot_pool_when_the_driver_recovers():
    """Report: sometimes a one-second-step ladder and the driver recovers; each timeout stall in
    ground truth carries jumbo_slot_exhaustion (via the drop-log loss classifier)."""
    case = slow_return_case(transfer=32 * MB)
    assert case["completed"] and case["timeouts"] > 0
    assert case["stall_causes"] == ["jumbo_slot_exhaustion"]


@pytest.mark.paper
def test_cloned_route_advertises_4430_and_sends_1448():
    """Report: both sides advertise MSS 4430, the sender then sends 1448-byte segments."""
    normal, cloned = mss_case(None), mss_case(1500)
    assert (normal["advertised_mss"], normal["max_payload"]) == (4430, 4096)
    assert (cloned["advertised_mss"], cloned["max_payload"]) == (4430, 1448)


@pytest.mark.slow
@pytest.mark.paper
def test_registered_reproduction_passes():
    result = REPRODUCTIONS["gigatcp"].run()
    assert result.passed, result.verdict
    assert len(result.rows) == 16
