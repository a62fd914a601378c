"""The event engine: time order, stable ties, cancellation, bounded runs."""

import pytest

from stallscope.simulate.engine import Simulator


def test_events_run_in_time_order_with_ties_in_schedule_order():
    sim = Simulator()
    seen = []
    sim.schedule(20, lambda now: seen.append(("b", now)))
    sim.schedule(10, lambda now: seen.append(("a", now)))
    sim.schedule(20, lambda now: seen.append(("c", now)))
    sim.run()
    assert seen == [("a", 10), ("b", 20), ("c", 20)]
    assert sim.now == 20


def test_cancelled_event_does_not_run_and_run_stops_at_until():
    sim = Simulator()
    seen = []
    handle = sim.schedule(5, lambda now: seen.append(now))
    sim.schedule(50, lambda now: seen.append(now))
    handle.cancel()
    sim.run(until=30)
    assert seen == [] and sim.now == 30
    sim.run()
    assert seen == [50]


def test_scheduling_in_the_past_is_an_error():
    sim = Simulator()
    sim.schedule(10, lambda now: sim.schedule(5, lambda _: None))
    with pytest.raises(ValueError):
        sim.run()


def test_same_seed_same_random_sequence():
    a, b = Simulator(seed=7), Simulator(seed=7)
    assert [a.rng.random() for _ in range(5)] == [b.rng.random() for _ in range(5)]
