"""The TCP host against Moldeklev & Gunningberg (tables 1 and 2, appendix A, the deadlock
predicates of section 3) and determinism of bulk runs."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stallscope.vocabulary import Cause
from stallscope.simulate.reproductions import moldeklev as mk
from stallscope.simulate.run_bulk import BulkConfig, run_bulk
from shared_material import requires_reference

MSS = 9204


@pytest.fixture(scope="module")
def table2():
    return mk.table2(workers=2)


@requires_reference
@pytest.mark.paper
@pytest.mark.slow
def test_table1_nagle_on_within_tolerance(table2):
    """Paper: Moldeklev table 1 (= table 2's Nagle-on column); >= 58/64 cells in band and tolerance."""
    assert table2.details["passing"]["mbit_s_nagle_on"] >= mk.MIN_CELLS_PASSING


@requires_reference
@pytest.mark.paper
@pytest.mark.slow
def test_table2_nagle_off_within_tolerance(table2):
    """Paper: Moldeklev table 2, Nagle off column; and turning Nagle off lifts the copy-rule cells."""
    assert table2.details["passing"]["mbit_s_nagle_off"] >= mk.MIN_CELLS_PASSING
    rows = {(r["sndbuf"], r["rcvbuf"]): r for r in table2.rows}
    assert rows[(8192, 16384)]["sim_on"] < 1 < 10 < rows[(8192, 16384)]["sim_off"]
    assert rows[(4096, 16384)]["sim_off"] < 1  # predictable deadlocks stay (section 4.1)


@requires_reference
@pytest.mark.paper
@pytest.mark.slow
def test_deadlock_classes_match_the_papers_shading(table2):
    """Paper: Moldeklev table 1's three deadlock classes, as the ground truth names them."""
    rows = {(r["sndbuf"], r["rcvbuf"]): r for r in table2.rows}
    assert rows[(4096, 24576)]["cause_on"] == "window_update_deadlock"  # (1) predictable
    assert rows[(8192, 24576)]["cause_on"] == "window_update_deadlock"
    assert rows[(16384, 49152)]["cause_on"] == "window_update_deadlock"
    assert rows[(8192, 16384)]["cause_on"] == "nagle_delayed_ack/copy_rule"  # copy rule + Nagle
    assert rows[(16384, 40960)]["cause_on"] == "nagle_delayed_ack/copy_rule"
    assert rows[(16384, 24576)]["cause_on"] == "nagle_delayed_ack/timer_phase"  # timer ACK + Nagle
    assert rows[(16384, 32768)]["cause_on"] == "nagle_delayed_ack/timer_phase"


@pytest.mark.paper
def test_appendix_a_settles_into_8192_bytes_per_tick():
    """Paper: Moldeklev appendix A, S=16k R=32k."""
    result = mk.appendix_a()
    assert result.passed, result.rows


def _run(S, R, nagle=True, nbytes=300_000, seed=3):
    return run_bulk(BulkConfig(personality="sunos41", link="atm140", sndbuf=S, rcvbuf=R, bytes=nbytes,
                               nagle=None if nagle else "OFF", seed=seed))


BUFS = st.integers(min_value=4, max_value=52).map(lambda k: k * 1024)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(S=BUFS, R=BUFS)
def test_deadlock_predicates_hold_over_runs(S, R):
    """Paper: Moldeklev section 3, predicates (1)-(3), and section 5's avoidance rule."""
    r = _run(S, R)
    nagle = [s for s in r.stalls if s.cause is Cause.NAGLE_DELAYED_ACK]
    wud = [s for s in r.stalls if s.cause is Cause.WINDOW_UPDATE_DEADLOCK]
    pred1 = S < 0.35 * R and S < 2 * MSS
    pred2 = S < 0.35 * R + MSS and S < 3 * MSS
    if pred1:  # (1): predictable from the window-update rule, Nagle on or off
        assert (wud or nagle) and r.goodput_mbit_s < 1.0
        off = _run(S, R, nagle=False, nbytes=100_000)
        assert off.goodput_mbit_s < 1.0
        assert {s.cause for s in off.stalls} == {Cause.WINDOW_UPDATE_DEADLOCK}
    if nagle:  # a Nagle deadlock needs (1) or (2), and (3) holds where it held the sender
        assert pred1 or pred2
        for s in nagle:
            ev = s.evidence
            assert ev["held"] < MSS and ev["s_byte"] - ev["b_sent"] < MSS
    if S >= 3 * MSS or S >= R:  # section 5: such buffers avoid every deadlock
        assert not nagle and not wud


def test_same_seed_same_trace_and_different_seed_different_phase():
    a = _run(16384, 32768, nbytes=200_000, seed=7)
    b = _run(16384, 32768, nbytes=200_000, seed=7)
    c = _run(16384, 32768, nbytes=200_000, seed=8)
    trace = lambda r: [(t, s.seq, s.ack, s.payload_len, s.flags) for t, s in r.records]  # noqa: E731
    assert trace(a) == trace(b)
    assert a.ground_truth.to_json() == b.ground_truth.to_json()
    assert trace(a) != trace(c)  # the seed moves the hosts' tick phases and ISNs
