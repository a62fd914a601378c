"""The deterministic discrete-event engine.

Time is an integer number of nanoseconds, passed into every callback and never read from a
clock. Events at the same instant run in the order they were scheduled (a sequence number breaks
ties), so a run is a pure function of its parameters and seed.
"""

from __future__ import annotations

import random
from heapq import heappop, heappush
from typing import Callable

Callback = Callable[[int], None]

NS_PER_US = 1_000
NS_PER_MS = 1_000_000
NS_PER_S = 1_000_000_000


# A queue entry is the list [at, seq, callback]: heapq compares lists in C, and (at, seq) is
# unique so the callback is never compared. Cancelling sets the callback to None (the flag), so
# the entry stays in the heap and is skipped when popped.
_AT, _SEQ, _CB = 0, 1, 2


class EventHandle:
    """Returned by `schedule`; lets the owner cancel a pending event (a timer)."""

    __slots__ = ("_entry",)

    def __init__(self, entry: list) -> None:
        self._entry = entry

    @property
    def at(self) -> int:
        return self._entry[_AT]

    @property
    def pending(self) -> bool:
        return self._entry[_CB] is not None

    def cancel(self) -> None:
        self._entry[_CB] = None


class Simulator:
    """Event queue plus the run's seeded random source."""

    __slots__ = ("now", "rng", "events_run", "_queue", "_seq")

    def __init__(self, seed: int = 0) -> None:
        self.now: int = 0
        self.rng = random.Random(seed)
        self.events_run: int = 0
        self._queue: list[list] = []
        self._seq = 0

    def schedule(self, at: int, callback: Callback) -> EventHandle:
        if at < self.now:
            raise ValueError(f"event scheduled in the past: {at} < now {self.now}")
        entry = [at, self._seq, callback]
        self._seq += 1
        heappush(self._queue, entry)
        return EventHandle(entry)

    def after(self, delay: int, callback: Callback) -> EventHandle:
        return self.schedule(self.now + delay, callback)

    def run(self, until: int | None = None, max_events: int | None = None) -> None:
        """Run events in time order until the queue is empty, `until` is reached (events at
        exactly `until` still run) or `max_events` have run."""
        queue = self._queue
        budget = max_events
        limit = until if until is not None else -1
        ran = 0
        try:
            while queue:
                entry = queue[0]
                at = entry[0]
                if at > limit >= 0:
                    self.now = until  # type: ignore[assignment]
                    return
                heappop(queue)
                callback = entry[2]
                if callback is None:
                    continue
                entry[2] = None  # a handle to a run event is no longer pending
                self.now = at
                callback(at)
                ran += 1
                if budget is not None:
                    budget -= 1
                    if budget <= 0:
                        return
        finally:
            self.events_run += ran
        if until is not None:
            self.now = max(self.now, until)
