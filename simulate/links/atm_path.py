"""A simulator ATM path through one congested switch port (Kung & Morris's CreditNet setup):
host --(input link, cell rate in_rate)--> switch buffer --(output port, out_rate)--> receiver.

Each datagram becomes an AAL5 PDU whose cells leave the host back to back at the input cell rate;
the pure CellSwitchBuffer decides which cells survive. A PDU that lost any cell is dropped (AAL5's
CRC fails at reassembly) and logged at the time its last cell reached the switch.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine import Simulator
from ..segment import Receiver, Segment
from .atm import CELL_BYTES, CellSwitchBuffer, PduFate, aal5_cells
from .serial import DROP_EXCEEDS_MTU, DropCallback

NS_PER_S = 1_000_000_000


@dataclass(frozen=True, slots=True)
class PduRecord:
    at_ns: int  # first cell reaches the switch
    uid: int
    cells: int
    fate: PduFate


class AtmSwitchPath:
    def __init__(self, sim: Simulator, in_rate_bps: int, in_delay_ns: int, switch: CellSwitchBuffer,
                 out_delay_ns: int, mtu: int, sink: Receiver | None = None, name: str = "atm",
                 on_drop: DropCallback | None = None, llc_snap: bool = True) -> None:
        self.sim = sim
        self.in_rate_bps = in_rate_bps
        self.in_delay_ns = in_delay_ns
        self.switch = switch
        self.out_delay_ns = out_delay_ns
        self.mtu = mtu
        self.sink = sink
        self.name = name
        self.on_drop = on_drop
        self.llc_snap = llc_snap
        self._in_busy = 0
        self.pdus: list[PduRecord] = []

    def connect(self, sink: Receiver) -> None:
        self.sink = sink

    def receive(self, now: int, segment: Segment) -> None:
        if segment.ip_len > self.mtu:
            self._drop_at(now, segment, DROP_EXCEEDS_MTU)
            return
        cells = aal5_cells(segment.ip_len, self.llc_snap)
        start = max(now, self._in_busy)
        self._in_busy = start + -(-(cells * CELL_BYTES * 8 * NS_PER_S) // self.in_rate_bps)
        at_switch = start + self.in_delay_ns
        # Host transmissions are serialised, so offers reach the switch in time order.
        fate = self.switch.offer_pdu(at_switch, cells, self.in_rate_bps)
        self.pdus.append(PduRecord(at_switch, segment.uid, cells, fate))
        if fate.delivered:
            self.sim.schedule(fate.last_cell_departure_ns + self.out_delay_ns,
                              lambda at, seg=segment: self._deliver(at, seg))
        else:
            self._drop_at(self._in_busy + self.in_delay_ns, segment, fate.reason or "atm_cell_loss")

    def _deliver(self, now: int, segment: Segment) -> None:
        if self.sink is None:
            raise RuntimeError(f"{self.name}: delivering uid {segment.uid} but no sink is connected")
        self.sink.receive(now, segment)

    def _drop_at(self, at: int, segment: Segment, reason: str) -> None:
        if self.on_drop is not None:
            callback = self.on_drop
            self.sim.schedule(at, lambda t, seg=segment: callback(t, seg, reason))
