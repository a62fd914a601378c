"""A hop whose MTU is smaller than the path's first link (RFC 1191 path MTU discovery).

mode "icmp": a datagram larger than the hop MTU with DF set is dropped and the sender is told
"fragmentation needed" with the next-hop MTU; mode "blackhole": dropped silently (a filter eats
the ICMP), so the sender retransmits the same large segment until it gives up.
Pure decision code; the simulator link in links/pmtu_link.py applies it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Mode = Literal["icmp", "blackhole"]
MODES: tuple[str, ...] = ("icmp", "blackhole")

REASON_BLACKHOLE = "pmtu_blackhole"
REASON_FRAG_NEEDED = "pmtu_frag_needed"

# RFC 791: every IPv4 hop forwards 68-byte datagrams.
MIN_IPV4_MTU = 68


@dataclass(frozen=True, slots=True)
class PmtuVerdict:
    forward: bool
    reason: str | None = None
    icmp_mtu: int | None = None  # next-hop MTU to report, when mode is "icmp"


class PmtuHop:
    def __init__(self, mtu: int, mode: Mode = "icmp") -> None:
        if mtu < MIN_IPV4_MTU:
            raise ValueError(f"hop mtu {mtu} below the IPv4 minimum {MIN_IPV4_MTU}")
        if mode not in MODES:
            raise ValueError(f"unknown pmtu mode {mode!r}; expected one of {MODES}")
        self.mtu = mtu
        self.mode = mode
        self.forwarded = 0
        self.dropped = 0

    def decide(self, ip_len: int) -> PmtuVerdict:
        """Datagrams are sent with DF (as TCP with PMTU discovery does), so oversize ones are
        never fragmented here."""
        if ip_len <= self.mtu:
            self.forwarded += 1
            return PmtuVerdict(True)
        self.dropped += 1
        if self.mode == "blackhole":
            return PmtuVerdict(False, REASON_BLACKHOLE)
        return PmtuVerdict(False, REASON_FRAG_NEEDED, self.mtu)
