"""A connection's timers (the TimerKind sum type). BSD-family personalities count REXMT and
PERSIST down on the host's 500 ms slow tick (docs/tcp-rules.md#retransmission-timer); other timers are exact
one-shot events.

An exact timer keeps one pending engine event per kind and only moves its deadline, so re-arming
on every ACK does not leave a cancelled event per ACK in the engine's heap.
"""

from __future__ import annotations

from typing import Callable

from ..engine import EventHandle, Simulator
from . import rules
from .state import TimerKind

TICKED = (TimerKind.REXMT, TimerKind.PERSIST)


class Timers:
    __slots__ = ("_deadline", "_handles", "_ticks", "on_fire", "sim", "slow_tick_ns", "stopped")

    def __init__(self, sim: Simulator, slow_tick_ns: int | None, on_fire: Callable[[int, TimerKind], None]) -> None:
        self.sim, self.slow_tick_ns, self.on_fire = sim, slow_tick_ns, on_fire
        self._ticks: dict[TimerKind, int] = {}
        self._deadline: dict[TimerKind, int] = {}
        self._handles: dict[TimerKind, EventHandle] = {}
        self.stopped = False

    def set(self, kind: TimerKind, delay_ns: int) -> None:
        if self.slow_tick_ns is not None and kind in TICKED:
            self._ticks[kind] = rules.ticks_for(delay_ns, self.slow_tick_ns)
            return
        if self.stopped:
            return
        deadline = self.sim.now + delay_ns
        self._deadline[kind] = deadline
        h = self._handles.get(kind)
        if h is None or not h.pending or h.at > deadline:
            if h is not None:
                h.cancel()
            self._handles[kind] = self.sim.schedule(deadline, lambda t, k=kind: self._event(t, k))

    def cancel(self, kind: TimerKind) -> None:
        self._ticks.pop(kind, None)
        self._deadline.pop(kind, None)  # a pending event finds no deadline and does nothing

    def running(self, kind: TimerKind) -> bool:
        return kind in self._ticks or kind in self._deadline

    def slow_tick(self, now: int) -> None:
        """tcp_slowtimo's countdown: fire every ticked timer that reaches zero."""
        for kind in list(self._ticks):
            if kind not in self._ticks:
                continue  # cancelled by a timer that fired earlier in this tick
            left = self._ticks[kind] - 1
            if left <= 0:
                del self._ticks[kind]
                self.on_fire(now, kind)
            else:
                self._ticks[kind] = left

    def stop(self) -> None:
        self.stopped = True
        for h in self._handles.values():
            h.cancel()
        self._handles.clear()
        self._deadline.clear()
        self._ticks.clear()

    def _event(self, now: int, kind: TimerKind) -> None:
        self._handles.pop(kind, None)
        deadline = self._deadline.get(kind)
        if deadline is None:
            return
        if deadline > now:  # re-armed later since this event was scheduled
            self._handles[kind] = self.sim.schedule(deadline, lambda t, k=kind: self._event(t, k))
            return
        del self._deadline[kind]
        self.on_fire(now, kind)
