"""Named links: rate, one-way delay, MTU and per-packet framing (the native core holds the same
table, native/src/sim/link.rs; tests/test_sim_link_presets.py holds them equal).

Framing per packet (bytes on the wire beyond the IP datagram):
- Ethernet (IEEE 802.3): 14 header + 4 FCS + 8 preamble/SFD + 12 inter-frame gap = 38, and the
  frame payload is padded to at least 46 bytes.
- FDDI (ANSI X3.139): 8 preamble + 1 SD + 1 FC + 6 DA + 6 SA + 8 LLC/SNAP + 4 FCS + 2 ED/FS = 36.
- ATM: AAL5 with LLC/SNAP in 53-byte cells (docs/tcp-rules.md#atm-cells); the rate is the
  cell rate (TAXI 140 Mbit/s; OC-3 SONET payload 149.76 Mbit/s).
Default delays are one-way LAN figures (cable plus switch latency), an assumption: the papers do
not give them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .atm import aal5_wire_bytes

ETHERNET_OVERHEAD = 38
ETHERNET_MIN_PAYLOAD = 46
FDDI_OVERHEAD = 36
STANDARD_ETHERNET_FRAME = 1518  # larger frames need a jumbo receive slot (Tigon `ti` driver)
OC3_CELL_RATE = 149_760_000  # SONET STS-3c payload carrying cells


def ethernet_wire_bytes(ip_len: int) -> int:
    return max(ip_len, ETHERNET_MIN_PAYLOAD) + ETHERNET_OVERHEAD


def fddi_wire_bytes(ip_len: int) -> int:
    return ip_len + FDDI_OVERHEAD


def no_framing(ip_len: int) -> int:
    return ip_len


@dataclass(frozen=True)
class LinkPreset:
    name: str
    rate_bps: int
    delay_ns: int
    mtu: int
    wire_bytes: Callable[[int], int]
    description: str

    def framing_overhead(self, ip_len: int) -> int:
        return self.wire_bytes(ip_len) - ip_len


LINK_PRESETS: dict[str, LinkPreset] = {
    p.name: p
    for p in (
        LinkPreset("atm140", 140_000_000, 20_000, 9244, aal5_wire_bytes,
                   "FORE ATM over 140 Mbit/s TAXI, MTU 9244 (Moldeklev & Gunningberg), AAL5 cell tax"),
        LinkPreset("oc3", OC3_CELL_RATE, 20_000, 9180, aal5_wire_bytes,
                   "ATM over 155 Mbit/s SONET OC-3 (Kung & Morris), MTU 9180 (RFC 1626)"),
        LinkPreset("ethernet10", 10_000_000, 10_000, 1500, ethernet_wire_bytes,
                   "10 Mbit/s Ethernet (Mogul table 4)"),
        LinkPreset("fddi", 100_000_000, 10_000, 4352, fddi_wire_bytes,
                   "100 Mbit/s FDDI, MTU 4352 (Mogul table 5)"),
        LinkPreset("fastethernet", 100_000_000, 10_000, 1500, ethernet_wire_bytes,
                   "100 Mbit/s Fast Ethernet (Salamon)"),
        LinkPreset("gige", 1_000_000_000, 10_000, 1500, ethernet_wire_bytes,
                   "Gigabit Ethernet; pass mtu=8940/9000 for jumbo frames (Shalunov)"),
        LinkPreset("custom", 0, 0, 1500, no_framing,
                   "explicit rate_bps and delay_ns, no framing overhead"),
    )
}


@dataclass(frozen=True)
class AtmSwitchSpec:
    """A congested switch output port on the forward path (Kung & Morris): the preset's link is
    the input, cells leave at `out_rate_bps`. Buffer bytes count 48-byte cell payloads only."""

    buffer_bytes: int
    out_rate_bps: int
    policy: str = "none"
    epd_threshold_cells: int | None = None
    out_delay_ns: int = 0

    @property
    def capacity_cells(self) -> int:
        return self.buffer_bytes // 48
