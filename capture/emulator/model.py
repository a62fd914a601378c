"""What happens to one frame on one direction of the link: dropped (and why) or delivered (and when).

Pure and deterministic (integer ns, seeded randomness) so it is unit-tested without root; the
bridge only feeds it arrival times and frame lengths. The ATM switch, NIC slot pool and loss
processes are the simulator's own decision classes (stallscope.simulate.links), not copies.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from stallscope.capture.emulator.bursts import ScheduledBursts
from stallscope.capture.emulator.config import DirectionConfig
from stallscope.simulate.links.atm import CellSwitchBuffer, aal5_cells
from stallscope.simulate.links.loss import GilbertElliott, RandomLoss
from stallscope.simulate.links.nic import JumboSlotPool
from stallscope.simulate.links.pmtu import PmtuHop

CELL_WIRE_BYTES = 53
ETH_HEADER = 14

# Drop reasons (the keys of the emulator's drop counts, written to the ground truth); the ATM
# and PMTU ones come from the decision classes themselves (atm_cell_loss, atm_ppd, atm_epd,
# pmtu_blackhole, pmtu_frag_needed), the scheduled bursts' from emulator.bursts.
RANDOM_LOSS = "random_loss"
GILBERT_LOSS = "gilbert_loss"
QUEUE_OVERFLOW = "queue_overflow"
SLOT_EXHAUSTED = "slot_exhausted"

GILBERT_SLOT_BYTES = 1514
# After this many idle steps the chain has long forgotten its state; stepping further is wasted time.
GILBERT_MAX_IDLE_STEPS = 256


@dataclass(frozen=True, slots=True)
class Verdict:
    deliver_ns: int | None  # None: dropped
    reason: str | None = None
    icmp_mtu: int | None = None  # set when the link answers "fragmentation needed"
    cells_dropped: int = 0

    @property
    def delivered(self) -> bool:
        return self.deliver_ns is not None


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _serialisation_ns(wire_bytes: int, rate_bps: int) -> int:
    return _ceil_div(wire_bytes * 8 * 1_000_000_000, rate_bps)


@dataclass
class DirectionModel:
    config: DirectionConfig
    drops: dict[str, int] = field(default_factory=dict)
    delivered: int = 0
    delivered_bytes: int = 0
    cells_dropped: int = 0
    # Cells of lost PDUs that still crossed the switch's output port: link time spent on data the
    # receiver's reassembly discards (Kung & Morris's wasted bandwidth; zero under EPD's default threshold).
    cells_wasted: int = 0
    _busy_until_ns: int = 0
    _access_free_ns: int = 0
    _last_deliver_ns: int = 0
    _last_gilbert_ns: int | None = None

    def __post_init__(self) -> None:
        c = self.config
        rng = random.Random(c.seed)
        self._random = None
        self._gilbert = None
        self._bursts = None
        self._switch = None
        self._slots = None
        self._pmtu = None
        if c.pmtu is not None:
            self._pmtu = PmtuHop(c.pmtu, c.pmtu_mode)
        if c.loss > 0:
            self._random = RandomLoss(c.loss, random.Random(rng.getrandbits(64)))
        if c.gilbert is not None:
            g = c.gilbert
            self._gilbert = GilbertElliott(g.p_gb, g.p_bg, g.loss_good, g.loss_bad, random.Random(rng.getrandbits(64)))
        if c.bursts is not None:
            self._bursts = ScheduledBursts(c.bursts)
        if c.switch is not None:
            s = c.switch
            self._switch = CellSwitchBuffer(s.capacity_cells, c.rate_bps, s.policy, s.epd_threshold_cells)
        if c.slot_pool is not None:
            p = c.slot_pool
            self._slots = JumboSlotPool(p.slots, p.min_frame_len, p.replenish_ns)

    def _drop(self, reason: str, **extra) -> Verdict:
        self.drops[reason] = self.drops.get(reason, 0) + 1
        return Verdict(None, reason, **extra)

    @staticmethod
    def cells(ip_len: int) -> int:
        return aal5_cells(ip_len)

    def wire_bytes(self, frame_len: int) -> int:
        if self.config.atm_cell_tax or self._switch is not None:
            return self.cells(frame_len - ETH_HEADER) * CELL_WIRE_BYTES
        return frame_len

    def offer(self, now_ns: int, frame_len: int, *, impair: bool = True, segment: bytes | None = None) -> Verdict:
        """Frame of `frame_len` bytes (Ethernet header included) arrives at `now_ns`; `segment` is
        its TCP identity (emulator.bursts.tcp_segment_key), used to recognise retransmissions.

        `impair=False` (ARP and other non-IP frames) only queues and delays, so the path
        keeps working whatever the experiment does to TCP.
        """
        c = self.config
        ip_len = frame_len - ETH_HEADER
        if impair and self._pmtu is not None:
            hop = self._pmtu.decide(ip_len)
            if not hop.forward:
                return self._drop(hop.reason, icmp_mtu=hop.icmp_mtu)
        if impair and self._random is not None and self._random.lose():
            return self._drop(RANDOM_LOSS)
        if impair and self._gilbert is not None:
            self._advance_gilbert(now_ns)
            if self._gilbert.lose():
                return self._drop(GILBERT_LOSS)
        if impair and self._bursts is not None:
            reason = self._bursts.decide(frame_len, segment)
            if reason is not None:
                return self._drop(reason)

        if self._switch is not None:
            deliver = self._through_switch(now_ns, ip_len, impair)
            if isinstance(deliver, Verdict):
                return deliver
        else:
            deliver = self._through_queue(now_ns, frame_len, impair)
            if isinstance(deliver, Verdict):
                return deliver
        deliver += c.delay_ns
        # One FIFO path: never deliver before a frame that arrived earlier.
        deliver = max(deliver, self._last_deliver_ns)
        self._last_deliver_ns = deliver
        if impair and self._slots is not None and not self._slots.offer(deliver, frame_len):
            return self._drop(SLOT_EXHAUSTED)
        self.delivered += 1
        self.delivered_bytes += frame_len
        return Verdict(deliver)

    def _advance_gilbert(self, now_ns: int) -> None:
        """On a rate-limited link the chain steps once per full-frame time, sent or not, so a bad
        spell lasts a stretch of time. Stepping only per offered frame would keep a lone
        retransmission after a timeout inside the same burst, again and again."""
        c = self.config
        if c.rate_bps > 0 and self._last_gilbert_ns is not None:
            slots = (now_ns - self._last_gilbert_ns) // _serialisation_ns(GILBERT_SLOT_BYTES, c.rate_bps) - 1
            for _ in range(min(slots, GILBERT_MAX_IDLE_STEPS)):
                self._gilbert.lose()  # the outcome for an empty slot is irrelevant; only the state moves
        self._last_gilbert_ns = now_ns

    def _through_queue(self, now_ns: int, frame_len: int, impair: bool) -> int | Verdict:
        c = self.config
        if c.rate_bps <= 0:
            return now_ns
        wire = self.wire_bytes(frame_len)
        start = max(now_ns, self._busy_until_ns)
        if impair and (c.queue_bytes is not None or c.queue_cells is not None):
            backlog_bytes = (start - now_ns) * c.rate_bps // (8 * 1_000_000_000)
            if c.queue_bytes is not None and backlog_bytes + wire > c.queue_bytes:
                return self._drop(QUEUE_OVERFLOW)
            if c.queue_cells is not None and _ceil_div(backlog_bytes + wire, CELL_WIRE_BYTES) > c.queue_cells:
                return self._drop(QUEUE_OVERFLOW)
        self._busy_until_ns = start + _serialisation_ns(wire, c.rate_bps)
        return self._busy_until_ns

    def _through_switch(self, now_ns: int, ip_len: int, impair: bool) -> int | Verdict:
        """Cells cross the access link at its rate into the switch buffer, which drains at rate_bps."""
        s = self.config.switch
        if not impair:  # ARP and friends bypass the cell switch
            return max(now_ns, self._access_free_ns)
        n = self.cells(ip_len)
        first_cell = max(now_ns, self._access_free_ns)
        self._access_free_ns = first_cell + _serialisation_ns(n * CELL_WIRE_BYTES, s.access_rate_bps)
        fate = self._switch.offer_pdu(first_cell, n, s.access_rate_bps)
        if fate.cells_dropped:
            self.cells_dropped += fate.cells_dropped
        if not fate.delivered:
            self.cells_wasted += fate.cells_queued
            return self._drop(fate.reason or "atm_cell_loss", cells_dropped=fate.cells_dropped)
        return fate.last_cell_departure_ns

    def stats(self) -> dict:
        return {
            "delivered": self.delivered,
            "delivered_bytes": self.delivered_bytes,
            "drops": dict(sorted(self.drops.items())),
            "cells_dropped": self.cells_dropped,
            "cells_wasted": self.cells_wasted,
        }
