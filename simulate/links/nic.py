"""A receiving NIC's jumbo receive-slot pool (Tigon II `ti` driver, TI_JSLOTS; Shalunov,
"GigaTCP", section "ti Driver Problem Solved, Sort Of"; docs/tcp-rules.md#nic-jumbo-receive-slots).

Frames of at least `min_frame_len` bytes need a jumbo slot; with none free the frame is dropped
("ti0: jumbo allocation failed -- packet dropped!") while smaller frames use the standard ring
and pass. A slot comes back `replenish_ns` after the frame arrived, or, for a frame offered with
a `key`, `replenish_ns` after `release(key)`: the simulator holds a slot while its data sits
unacknowledged in the receiver (the reassembly queue keeps the mbuf and so the slot).
Pure decision code: time passed in, no simulator types.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable


class JumboSlotPool:
    def __init__(self, slots: int, min_frame_len: int, replenish_ns: int) -> None:
        if slots <= 0:
            raise ValueError(f"slots must be positive, got {slots}")
        if replenish_ns < 0:
            raise ValueError(f"replenish_ns must not be negative, got {replenish_ns}")
        self.slots = slots
        self.min_frame_len = min_frame_len
        self.replenish_ns = replenish_ns
        self._returning: list[int] = []  # heap of times slots come back
        self._held: dict[Hashable, int] = {}  # key -> slots held under it
        self._in_use = 0
        self.accepted = 0
        self.dropped = 0
        self.small_passed = 0
        self.min_free = slots

    def free(self, now_ns: int) -> int:
        returning = self._returning
        while returning and returning[0] <= now_ns:
            heapq.heappop(returning)
            self._in_use -= 1
        return self.slots - self._in_use

    def offer(self, now_ns: int, frame_len: int, key: Hashable | None = None) -> bool:
        """True if the frame is received; False if it needed a jumbo slot and none was free."""
        if frame_len < self.min_frame_len:
            self.small_passed += 1
            return True
        free = self.free(now_ns)
        if free == 0:
            self.dropped += 1
            return False
        self._in_use += 1
        self.accepted += 1
        self.min_free = min(self.min_free, free - 1)
        if key is None:
            heapq.heappush(self._returning, now_ns + self.replenish_ns)
        else:
            self._held[key] = self._held.get(key, 0) + 1
        return True

    def release(self, now_ns: int, key: Hashable) -> int:
        """The host consumed the frames held under `key`; returns how many slots start returning."""
        n = self._held.pop(key, 0)
        for _ in range(n):
            heapq.heappush(self._returning, now_ns + self.replenish_ns)
        return n

    @property
    def held_keys(self) -> list[Hashable]:
        return list(self._held)
