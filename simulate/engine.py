"""The deterministic discrete-event engine.

Time is an integer number of nanoseconds, passed into every callback and never read from a
clock. Events at the same instant run in the order they were scheduled (a sequence number breaks
ties), so a run is a pure function of its parameters and seed.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field
from typing import Callable

Callback = Callable[[int], None]

NS_PER_US = 1_000
NS_PER_MS = 1_000_000
NS_PER_S = 1_000_000_000


@dataclass(order=True)
class _Event:
    at: int
    seq: int
    callback: Callback = field(compare=False)
    cancelled: bool = field(default=False, compare=False)


class EventHandle:
    """Returned by `schedule`; lets the owner cancel a pending event (a timer)."""

    __slots__ = ("_event",)

    def __init__(self, event: _Event) -> None:
        self._event = event

    @property
    def at(self) -> int:
        return self._event.at

    @property
    def pending(self) -> bool:
        return not self._event.cancelled

    def cancel(self) -> None:
        self._event.cancelled = True


class Simulator:
    """Event queue plus the run's seeded random source."""

    def __init__(self, seed: int = 0) -> None:
        self.now: int = 0
        self.rng = random.Random(seed)
        self.events_run: int = 0
        self._queue: list[_Event] = []
        self._seq = 0

    def schedule(self, at: int, callback: Callback) -> EventHandle:
        if at < self.now:
            raise ValueError(f"event scheduled in the past: {at} < now {self.now}")
        event = _Event(at, self._seq, callback)
        self._seq += 1
        heapq.heappush(self._queue, event)
        return EventHandle(event)

    def after(self, delay: int, callback: Callback) -> EventHandle:
        return self.schedule(self.now + delay, callback)

    def run(self, until: int | None = None, max_events: int | None = None) -> None:
        """Run events in time order until the queue is empty, `until` is reached (events at
        exactly `until` still run) or `max_events` have run."""
        queue = self._queue
        budget = max_events
        while queue:
            event = queue[0]
            if until is not None and event.at > until:
                self.now = until
                return
            heapq.heappop(queue)
            if event.cancelled:
                continue
            self.now = event.at
            event.cancelled = True  # a handle to a run event is no longer pending
            event.callback(event.at)
            self.events_run += 1
            if budget is not None:
                budget -= 1
                if budget <= 0:
                    return
        if until is not None:
            self.now = max(self.now, until)
