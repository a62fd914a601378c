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


def test_handles_report_pending_until_run_or_cancelled_and_cancelled_events_are_not_counted():
    sim = Simulator()
    ran = sim.schedule(1, lambda now: None)
    dropped = sim.schedule(2, lambda now: None)
    assert ran.pending and dropped.pending and (ran.at, dropped.at) == (1, 2)
    dropped.cancel()
    assert not dropped.pending
    sim.run()
    assert not ran.pending and sim.events_run == 1


def test_max_events_stops_after_that_many_and_a_later_run_continues():
    sim = Simulator()
    seen = []
    for t in (1, 2, 3):
        sim.schedule(t, seen.append)
    sim.run(max_events=2)
    assert seen == [1, 2] and sim.events_run == 2
    sim.run()
    assert seen == [1, 2, 3] and sim.events_run == 3


def test_events_at_exactly_until_run_even_at_time_zero():
    sim = Simulator()
    seen = []
    sim.schedule(0, seen.append)
    sim.schedule(1, seen.append)
    sim.run(until=0)
    assert seen == [0] and sim.now == 0


def test_events_run_counts_the_events_before_a_callback_raised():
    sim = Simulator()

    def boom(now: int) -> None:
        raise RuntimeError("boom")

    sim.schedule(1, lambda now: None)
    sim.schedule(2, boom)
    with pytest.raises(RuntimeError):
        sim.run()
    assert sim.events_run == 1 and sim.now == 2
