"""Small simulator stages that apply a pure decision to each passing segment: random or
Gilbert-Elliott loss, a smaller-MTU hop (with ICMP "fragmentation needed" or as a black hole),
and a receiving NIC with a jumbo slot pool. Each is a Receiver with `connect(sink)`."""

from __future__ import annotations

import heapq
from typing import Callable, Protocol

from ..engine import Simulator
from ..segment import ACK, Receiver, Segment
from .nic import JumboSlotPool
from .pmtu import PmtuHop
from .serial import DropCallback

ETHERNET_FRAME_OVERHEAD = 18  # 14-byte header + 4-byte FCS: what a receive slot must hold

REASON_RANDOM_LOSS = "random_loss"
REASON_JUMBO_SLOT = "jumbo_slot_exhaustion"


class LossModel(Protocol):
    def lose(self) -> bool: ...


class _Stage:
    name: str
    sink: Receiver | None = None

    def connect(self, sink: Receiver) -> None:
        self.sink = sink

    def _forward(self, now: int, segment: Segment) -> None:
        if self.sink is None:
            raise RuntimeError(f"{self.name}: forwarding uid {segment.uid} but no sink is connected")
        self.sink.receive(now, segment)


class LossStage(_Stage):
    def __init__(self, model: LossModel, sink: Receiver | None = None, name: str = "loss",
                 on_drop: DropCallback | None = None, reason: str = REASON_RANDOM_LOSS,
                 data_only: bool = False) -> None:
        self.model, self.sink, self.name, self.on_drop = model, sink, name, on_drop
        self.reason = reason
        # Losing only data segments keeps handshakes intact in reproductions that study data loss.
        self.data_only = data_only

    def receive(self, now: int, segment: Segment) -> None:
        if (not self.data_only or segment.payload_len > 0) and self.model.lose():
            if self.on_drop is not None:
                self.on_drop(now, segment, self.reason)
            return
        self._forward(now, segment)


IcmpSink = Callable[[int, int], None]  # (now, next-hop mtu), e.g. Host.on_icmp_frag_needed


class PmtuStage(_Stage):
    def __init__(self, sim: Simulator, hop: PmtuHop, sink: Receiver | None = None, name: str = "pmtu",
                 on_drop: DropCallback | None = None, icmp_sink: IcmpSink | None = None,
                 icmp_delay_ns: int = 0) -> None:
        self.sim, self.hop, self.sink, self.name, self.on_drop = sim, hop, sink, name, on_drop
        self.icmp_sink = icmp_sink
        self.icmp_delay_ns = icmp_delay_ns
        self.icmp_sent = 0

    def receive(self, now: int, segment: Segment) -> None:
        verdict = self.hop.decide(segment.ip_len)
        if verdict.forward:
            self._forward(now, segment)
            return
        if self.on_drop is not None:
            self.on_drop(now, segment, verdict.reason or "pmtu")
        if verdict.icmp_mtu is not None and self.icmp_sink is not None:
            self.icmp_sent += 1
            sink, mtu = self.icmp_sink, verdict.icmp_mtu
            self.sim.schedule(now + self.icmp_delay_ns, lambda at: sink(at, mtu))


class JumboNicStage(_Stage):
    """The receiving host's NIC. With `hold_until_acked`, a jumbo slot stays taken until the
    receiver's cumulative ACK covers the frame's data (out-of-order data waits in the reassembly
    queue in its mbuf, i.e. in its slot); `ack_watcher()` is the stage to put on the reverse
    path's input so the NIC sees those ACKs. Otherwise slots return `replenish_ns` after arrival."""

    def __init__(self, pool: JumboSlotPool, sink: Receiver | None = None, name: str = "nic",
                 on_drop: DropCallback | None = None, hold_until_acked: bool = True) -> None:
        self.pool, self.sink, self.name, self.on_drop = pool, sink, name, on_drop
        self.hold_until_acked = hold_until_acked
        # per flow (data direction): heap of (seq_end, key) still holding a slot, highest ACK seen
        self._held: dict[tuple[str, int, str, int], list[tuple[int, int]]] = {}
        self._acked: dict[tuple[str, int, str, int], int] = {}
        self._next_key = 0

    def receive(self, now: int, segment: Segment) -> None:
        frame_len = segment.ip_len + ETHERNET_FRAME_OVERHEAD
        flow = (segment.src, segment.sport, segment.dst, segment.dport)
        seq_end = segment.seq + segment.seq_space
        key = None
        # A frame already covered by the ACK is a duplicate the stack frees at once.
        hold = (self.hold_until_acked and segment.payload_len > 0
                and seq_end > self._acked.get(flow, -1))
        if hold:
            key = self._next_key
            self._next_key += 1
        if not self.pool.offer(now, frame_len, key):
            if self.on_drop is not None:
                self.on_drop(now, segment, REASON_JUMBO_SLOT)
            return
        if key is not None:
            heapq.heappush(self._held.setdefault(flow, []), (seq_end, key))
        self._forward(now, segment)

    def saw_ack(self, now: int, segment: Segment) -> None:
        if not segment.flags & ACK:
            return
        flow = (segment.dst, segment.dport, segment.src, segment.sport)  # the data direction
        if segment.ack <= self._acked.get(flow, -1):
            return
        self._acked[flow] = segment.ack
        held = self._held.get(flow)
        while held and held[0][0] <= segment.ack:
            _, key = heapq.heappop(held)
            self.pool.release(now, key)

    def ack_watcher(self, sink: Receiver | None = None) -> "AckWatcher":
        return AckWatcher(self, sink)


class AckWatcher(_Stage):
    def __init__(self, nic: JumboNicStage, sink: Receiver | None = None) -> None:
        self.nic, self.sink, self.name = nic, sink, f"{nic.name}-ack-watcher"

    def receive(self, now: int, segment: Segment) -> None:
        self.nic.saw_ack(now, segment)
        self._forward(now, segment)
