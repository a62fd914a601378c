"""A host's CPU under the cost model (costs.py): kernel work runs in order on its own timeline and
pre-empts application copies, which are pushed back by whatever kernel time ran meanwhile; frames
wait in the receive interface's FIFO until kernel input has taken them."""

from __future__ import annotations

from collections import deque
from typing import Callable

from ..engine import Simulator
from .costs import HostCost


class HostCpu:
    __slots__ = ("_kfree", "_pfree", "_rx", "_rx_bytes", "_stolen", "cost", "sim")

    def __init__(self, sim: Simulator, cost: HostCost) -> None:
        self.sim, self.cost = sim, cost
        self._kfree = 0  # the kernel timeline is busy until here
        self._pfree = 0  # the application timeline is busy until here
        self._stolen = 0  # kernel time spent so far (pre-empts application work)
        self._rx: deque[tuple[int, int]] = deque()  # (input done at, ip bytes) waiting in the FIFO
        self._rx_bytes = 0

    def kernel(self, now: int, cost: int) -> int:
        """Run `cost` ns of kernel work; returns when it is done."""
        done = max(now, self._kfree) + cost
        self._kfree = done
        self._stolen += cost
        return done

    def process(self, now: int, cost: int, fn: Callable[[int], None]) -> None:
        """Application-level work (a copy); `fn(done)` runs when it has had `cost` ns of CPU."""
        start = max(now, self._pfree, self._kfree)
        done = start + cost
        self._pfree = done
        snap = self._stolen
        self.sim.schedule(done, lambda t: self._process_fire(t, snap, fn))

    def _process_fire(self, now: int, snap: int, fn: Callable[[int], None]) -> None:
        extra = self._stolen - snap
        if extra > 0:
            self._pfree = max(self._pfree, now + extra)
            self.sim.schedule(now + extra, lambda t: self._process_fire(t, snap + extra, fn))
            return
        fn(now)

    def input_cost(self, payload: int) -> int:
        cost = self.cost.input_ns(payload)
        if self.cost.input_jitter_ns:
            cost += self.sim.rng.randrange(self.cost.input_jitter_ns + 1)
        return cost

    def rx_admit(self, now: int, ip_len: int) -> bool:
        """Does a frame of `ip_len` bytes fit the receive FIFO at `now`?"""
        fifo = self.cost.rx_fifo_bytes
        if fifo is None:
            return True
        rx = self._rx
        while rx and rx[0][0] <= now:
            self._rx_bytes -= rx.popleft()[1]
        return self._rx_bytes + ip_len <= fifo

    def rx_hold(self, done: int, ip_len: int) -> None:
        """The frame occupies the FIFO until kernel input is done with it."""
        if self.cost.rx_fifo_bytes is not None:
            self._rx.append((done, ip_len))
            self._rx_bytes += ip_len
