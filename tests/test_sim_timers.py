"""The connection timers' slow-tick countdown (simulate/tcp/timers.py)."""

from stallscope.simulate.engine import Simulator
from stallscope.simulate.tcp.state import TimerKind
from stallscope.simulate.tcp.timers import Timers

TICK = 500_000_000


def test_a_timer_cancelled_by_one_that_fired_in_the_same_tick_is_skipped():
    # REXMT and PERSIST both reach zero on one tick; REXMT's handler cancels PERSIST (as an
    # abort or a retransmission that finds the window open would). The native core skips the
    # cancelled timer; the reference used to raise KeyError.
    sim = Simulator(seed=0)
    fired: list[TimerKind] = []

    def on_fire(now: int, kind: TimerKind) -> None:
        fired.append(kind)
        if kind is TimerKind.REXMT:
            timers.cancel(TimerKind.PERSIST)

    timers = Timers(sim, TICK, on_fire)
    timers.set(TimerKind.REXMT, TICK)
    timers.set(TimerKind.PERSIST, TICK)
    timers.slow_tick(TICK)
    assert fired == [TimerKind.REXMT]
    assert not timers.running(TimerKind.PERSIST)


def test_ticked_timers_fire_in_the_order_they_were_set_and_count_down():
    sim = Simulator(seed=0)
    fired: list[tuple[int, TimerKind]] = []
    timers = Timers(sim, TICK, lambda now, kind: fired.append((now, kind)))
    timers.set(TimerKind.PERSIST, 2 * TICK)
    timers.set(TimerKind.REXMT, TICK)
    for n in (1, 2, 3):
        timers.slow_tick(n * TICK)
    assert [k for _, k in fired] == [TimerKind.REXMT, TimerKind.PERSIST]
    assert fired[0][0] < fired[1][0]
