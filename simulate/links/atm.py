"""ATM: AAL5 segmentation and a cell-level switch output buffer with no discard, PPD or EPD.

Pure decision code (time passed in, integer ns, no simulator types) so the capture package's
user-space emulator can reuse it. Rules: docs/tcp-rules.md#atm-cells, docs/tcp-rules.md#atm-cell-discard and
Kung & Morris, "Detailed Behavior of TCP over ATM" (GLOBECOM '95), section "Discard Policies".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CELL_BYTES = 53
CELL_PAYLOAD = 48
LLC_SNAP = 8  # RFC 1483/2684 LLC/SNAP encapsulation header
AAL5_TRAILER = 8  # AAL5 CPCS trailer (UU, CPI, length, CRC-32)
NS_PER_S = 1_000_000_000

Policy = Literal["none", "ppd", "epd"]
POLICIES: tuple[str, ...] = ("none", "ppd", "epd")

# Drop reasons (loss_attribution maps them onto ground-truth causes).
REASON_CELL_LOSS = "atm_cell_loss"  # no discard: cells lost here and there, PDU unusable
REASON_PPD = "atm_ppd"  # partial packet discard: the tail of the PDU dropped
REASON_EPD = "atm_epd"  # early packet discard: the whole PDU refused at its first cell


def aal5_cells(ip_len: int, llc_snap: bool = True) -> int:
    """Cells carrying one IP datagram: ceil((ip_len + LLC/SNAP + trailer) / 48)."""
    if ip_len <= 0:
        raise ValueError(f"aal5_cells: ip_len must be positive, got {ip_len}")
    return -(-(ip_len + (LLC_SNAP if llc_snap else 0) + AAL5_TRAILER) // CELL_PAYLOAD)


def aal5_wire_bytes(ip_len: int, llc_snap: bool = True) -> int:
    """Bytes on the cell stream for one datagram (9180 -> 192 cells -> 10176 bytes)."""
    return aal5_cells(ip_len, llc_snap) * CELL_BYTES


def cell_time_ns(rate_bps: int) -> int:
    """Time to send one 53-byte cell at `rate_bps` (cell rate after SONET framing), rounded up."""
    if rate_bps <= 0:
        raise ValueError(f"cell rate must be positive, got {rate_bps}")
    return -(-(CELL_BYTES * 8 * NS_PER_S) // rate_bps)


@dataclass(frozen=True, slots=True)
class PduFate:
    delivered: bool
    cells_dropped: int
    cells_queued: int
    # When the last accepted cell leaves the output port (the PDU's end if delivered);
    # -1 when no cell of the PDU was accepted.
    last_cell_departure_ns: int
    reason: str | None


class CellSwitchBuffer:
    """One output port's cell buffer.

    A PDU's cells arrive back to back at the input rate (cell i completes at
    now + ceil((i + 1) * 424e9 / in_rate)); the port sends one cell every cell_time(out_rate).
    A cell occupies the buffer until its last bit has left. Because offers come in time order
    and the port is work-conserving, the occupancy at time t is ceil((D - t) / cell_time) where
    D is the departure of the last accepted cell, so no per-cell history is kept.

    - "none": a cell that finds the buffer full is dropped; the PDU is lost but its other cells
      still take buffer and link.
    - "ppd": after a PDU's first dropped cell the rest of it is dropped too, except the
      end-of-PDU cell, which the CreditNet switch keeps when there is room (Kung & Morris).
    - "epd": a PDU whose first cell finds more than `epd_threshold_cells` queued is refused whole
      (default threshold: capacity minus the PDU's own cells, i.e. "roughly one packet's worth of
      space"); an accepted PDU that still overflows falls back to PPD.
    """

    def __init__(self, capacity_cells: int, out_rate_bps: int, policy: Policy = "none",
                 epd_threshold_cells: int | None = None) -> None:
        if capacity_cells <= 0:
            raise ValueError(f"capacity_cells must be positive, got {capacity_cells}")
        if policy not in POLICIES:
            raise ValueError(f"unknown discard policy {policy!r}; expected one of {POLICIES}")
        if epd_threshold_cells is not None and not 0 <= epd_threshold_cells <= capacity_cells:
            raise ValueError(f"epd_threshold_cells {epd_threshold_cells} outside 0..{capacity_cells}")
        self.capacity_cells = capacity_cells
        self.out_rate_bps = out_rate_bps
        self.policy = policy
        self.epd_threshold_cells = epd_threshold_cells
        self.out_cell_ns = cell_time_ns(out_rate_bps)
        self._last_departure = 0
        self.cells_in = 0
        self.cells_dropped = 0
        self.pdus_in = 0
        self.pdus_lost = 0
        self.max_occupancy = 0

    def occupancy(self, now_ns: int) -> int:
        """Cells in the buffer (waiting or being sent) at `now_ns`."""
        ahead = self._last_departure - now_ns
        return -(-ahead // self.out_cell_ns) if ahead > 0 else 0

    def offer_pdu(self, now_ns: int, n_cells: int, in_rate_bps: int) -> PduFate:
        """The first cell of an `n_cells` PDU starts arriving at `now_ns`."""
        if n_cells <= 0:
            raise ValueError(f"offer_pdu: n_cells must be positive, got {n_cells}")
        self.pdus_in += 1
        self.cells_in += n_cells
        cell_bits_ns = CELL_BYTES * 8 * NS_PER_S
        first_arrival = now_ns + -(-cell_bits_ns // in_rate_bps)
        if self.policy == "epd":
            threshold = self.epd_threshold_cells
            if threshold is None:
                threshold = max(0, self.capacity_cells - n_cells)
            if self.occupancy(first_arrival) > threshold:
                return self._lost(n_cells, n_cells, 0, REASON_EPD)
        if self.occupancy(first_arrival) + n_cells <= self.capacity_cells:
            return self._accept_whole(now_ns, n_cells, in_rate_bps)
        dropped = 0
        queued = 0
        discarding = False
        out = self.out_cell_ns
        for i in range(n_cells):
            t = now_ns + -(-((i + 1) * cell_bits_ns) // in_rate_bps)
            last = i == n_cells - 1
            occ = self.occupancy(t)
            room = occ < self.capacity_cells
            if room and (not discarding or last):
                self._last_departure = max(t, self._last_departure) + out
                queued += 1
                if occ + 1 > self.max_occupancy:
                    self.max_occupancy = occ + 1
            else:
                dropped += 1
                if self.policy != "none":
                    discarding = True
        if dropped == 0:
            return PduFate(True, 0, queued, self._last_departure, None)
        reason = REASON_CELL_LOSS if self.policy == "none" else REASON_PPD
        return self._lost(n_cells, dropped, queued, reason)

    def _accept_whole(self, now_ns: int, n_cells: int, in_rate_bps: int) -> PduFate:
        """Fast path when the PDU cannot overflow (occupancy rises at most one cell per
        arrival). The per-cell chain d_i = max(a_i, d_(i-1)) + c ends at
        max(D0 + n*c, max_i(a_i + (n - i) * c)); arrival gaps are all <= c when the input is at
        least as fast as the port (maximum at i = 0) and all >= c otherwise (maximum at
        i = n - 1), so the end is exact without the loop."""
        cell_bits_ns = CELL_BYTES * 8 * NS_PER_S
        out = self.out_cell_ns
        first = now_ns + -(-cell_bits_ns // in_rate_bps)
        last = now_ns + -(-(n_cells * cell_bits_ns) // in_rate_bps)
        start_occ = self.occupancy(first)
        end = max(self._last_departure + n_cells * out, first + n_cells * out, last + out)
        self._last_departure = end
        peak = max(start_occ + 1, -(-(end - last) // out))
        if peak > self.max_occupancy:
            self.max_occupancy = peak
        return PduFate(True, 0, n_cells, end, None)

    def _lost(self, n_cells: int, dropped: int, queued: int, reason: str) -> PduFate:
        self.pdus_lost += 1
        self.cells_dropped += dropped
        departure = self._last_departure if queued else -1
        return PduFate(False, dropped, queued, departure, reason)
