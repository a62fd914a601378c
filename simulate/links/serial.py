"""One direction of a point-to-point link: a byte-bounded FIFO, a serialiser and a fixed delay.

A datagram occupies the queue from its arrival until its last bit has been serialised, so
`queue_bytes` bounds what is waiting plus what is on the transmitter (a router's output buffer).
Serialisation takes ceil(wire_bytes * 8e9 / rate) ns, where wire_bytes adds the link layer's
framing (Ethernet header/FCS/preamble/gap, or AAL5 cells) to the IP length.
"""

from __future__ import annotations

from collections import deque
from typing import Callable

from ..engine import NS_PER_S, Simulator
from ..segment import Receiver, Segment

DropCallback = Callable[[int, Segment, str], None]
WireBytes = Callable[[int], int]

DROP_QUEUE_OVERFLOW = "queue_overflow"
DROP_EXCEEDS_MTU = "exceeds_mtu"


def serialisation_ns(wire_bytes: int, rate_bps: int) -> int:
    """Exact ceil(wire_bytes * 8 * 1e9 / rate_bps) in integer arithmetic."""
    return -(-(wire_bytes * 8 * NS_PER_S) // rate_bps)


class SerialLink:
    """A Receiver: enqueue, serialise, propagate, hand to `sink`."""

    __slots__ = (
        "_busy_until", "_held", "_held_bytes", "delay_ns", "drops", "mtu", "name", "on_drop",
        "queue_bytes", "rate_bps", "sent_bytes", "sent_packets", "sim", "sink", "wire_bytes",
    )

    def __init__(
        self,
        sim: Simulator,
        rate_bps: int,
        delay_ns: int,
        mtu: int,
        queue_bytes: int | None,
        sink: Receiver | None = None,
        name: str = "link",
        on_drop: DropCallback | None = None,
        *,
        wire_bytes: WireBytes | None = None,
    ) -> None:
        if rate_bps <= 0:
            raise ValueError(f"{name}: rate_bps must be positive, got {rate_bps}")
        if delay_ns < 0:
            raise ValueError(f"{name}: delay_ns must not be negative, got {delay_ns}")
        if mtu <= 0:
            raise ValueError(f"{name}: mtu must be positive, got {mtu}")
        self.sim = sim
        self.rate_bps = rate_bps
        self.delay_ns = delay_ns
        self.mtu = mtu
        self.queue_bytes = queue_bytes
        self.sink = sink
        self.name = name
        self.on_drop = on_drop
        self.wire_bytes: WireBytes = wire_bytes or (lambda ip_len: ip_len)
        self._busy_until = 0
        # (time the last bit leaves, ip bytes) of every datagram still holding buffer space.
        self._held: deque[tuple[int, int]] = deque()
        self._held_bytes = 0
        self.sent_packets = 0
        self.sent_bytes = 0
        self.drops: list[tuple[int, int, str]] = []  # (now, segment uid, reason)

    def connect(self, sink: Receiver) -> None:
        self.sink = sink

    def queued_bytes(self, now: int) -> int:
        """IP bytes waiting or on the transmitter at `now`."""
        held = self._held
        while held and held[0][0] <= now:
            self._held_bytes -= held.popleft()[1]
        return self._held_bytes

    def receive(self, now: int, segment: Segment) -> None:
        ip_len = segment.ip_len
        if ip_len > self.mtu:
            self._drop(now, segment, DROP_EXCEEDS_MTU)
            return
        if self.queue_bytes is not None and self.queued_bytes(now) + ip_len > self.queue_bytes:
            self._drop(now, segment, DROP_QUEUE_OVERFLOW)
            return
        start = max(now, self._busy_until)
        done = start + serialisation_ns(self.wire_bytes(ip_len), self.rate_bps)
        self._busy_until = done
        self._held.append((done, ip_len))
        self._held_bytes += ip_len
        self.sent_packets += 1
        self.sent_bytes += ip_len
        # Finish times strictly increase and the delay is fixed, so delivery stays FIFO.
        self.sim.schedule(done + self.delay_ns, lambda at, seg=segment: self._deliver(at, seg))

    def _deliver(self, now: int, segment: Segment) -> None:
        if self.sink is None:
            raise RuntimeError(f"{self.name}: delivering uid {segment.uid} but no sink is connected")
        self.sink.receive(now, segment)

    def _drop(self, now: int, segment: Segment, reason: str) -> None:
        self.drops.append((now, segment.uid, reason))
        if self.on_drop is not None:
            self.on_drop(now, segment, reason)
