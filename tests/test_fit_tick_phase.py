"""A BSD receiver's 200 ms delayed-ACK tick whose phase the trace never showed (no ACK held on it):
the calibration tries phases over the tick where the first estimate is far off (docs/comparison.md,
calibration). Traces from the scoring corpus (analyzers/corpus.py), checked as `validate` does."""

from __future__ import annotations

from stallscope.analyzers.comparison.calibrate.stack_groups import tick_phase_candidates
from stallscope.analyzers.comparison.fit.delayed_ack import BSD_DELACK_TICK_NS, receiver_phases
from stallscope.analyzers.comparison.validate import validate_trace
from stallscope.analyzers.corpus import plan, run_trace


def _trace(tmp_path, name):
    (spec,) = [s for s in plan() if s.name == name]
    run_trace(spec, tmp_path)
    return validate_trace(str(tmp_path / f"{name}.pcap"))


def test_a_stall_free_short_transfer_is_fitted_with_a_phase_that_does_not_deadlock(tmp_path):
    """Tru64 sending 256 KB in 4 KB writes over FDDI with Mogul's MIN+MORE rule (seed 8: the
    receiver's tick 7.4 ms after the start): the trace has no stall. Under seed 1's phase (127 ms)
    the fit's first estimate deadlocks until the tick, and the groups made up for it with another
    link and write: the refitted run was 35 % fast. Only phases 1-10 ms from the start fit."""
    row = _trace(tmp_path, "nagle-tru64-fddi-MIN+MORE")
    assert row["personality"] == "tru64" and row["goodput_ok"], row
    phase = receiver_phases()[row["fit_seed"] - 1]
    assert 1_000_000 <= phase <= 10_000_000, phase


def test_the_phases_tried_cover_the_tick_at_half_a_stall_threshold(tmp_path):
    """The coarse grid: a seed every 5 ms over the 200 ms tick (a deadlock the trace lacks ends
    within the analyzer's 10 ms threshold, so a window 10 ms wide holds the phases that fit);
    nothing is tried where the fit read the phase from the trace."""
    from stallscope.analyzers.comparison.fit import Fitted

    class _Fit:
        def __init__(self, source):
            self.values = {"seed": Fitted(1, source)}

        def value(self, k):
            return {"personality": "tru64", "receiver_personality": "tru64"}.get(k)

    phases = receiver_phases()
    seeds = [c["seed"] for c in tick_phase_candidates(_Fit("fixed: the simulator is deterministic per seed")) if c]
    got = sorted(phases[s - 1] for s in seeds)
    gaps = [b - a for a, b in zip(got, got[1:])] + [got[0] + BSD_DELACK_TICK_NS - got[-1]]
    assert len(seeds) >= 39 and max(gaps) <= 5_200_000, (len(seeds), max(gaps))
    assert tick_phase_candidates(_Fit("the seed whose receiver's 200 ms delayed-ACK tick falls ...")) == [{}]
