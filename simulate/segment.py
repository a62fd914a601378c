"""One simulated TCP/IP segment, as a run's packet records carry it (the pcap writer's input).

Sequence numbers here are unbounded Python ints counted from the connection's ISN; the pcap writer
maps them onto 32-bit wire values. Windows are the raw 16-bit field (the sender applies its scale).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# TCP header flag bits (same values as native/src/wire/packet.rs).
FIN, SYN, RST, PSH, ACK, URG = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20

IP_HEADER = 20
TCP_HEADER = 20


@dataclass(slots=True, frozen=True)
class Segment:
    """Immutable once built (a retransmission is a new Segment), so taps and drop logs may keep
    the object itself."""

    src: str
    dst: str
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int
    window: int
    payload_len: int = 0
    mss: int | None = None
    wscale: int | None = None
    sack_permitted: bool = False
    timestamp: tuple[int, int] | None = None
    sack: tuple[tuple[int, int], ...] = ()
    ip_id: int = 0
    # Unique per run, assigned by the sending host; lets ground truth name packets.
    uid: int = 0
    # Free-form annotations for ground truth (e.g. "retransmit", "persist_probe", "window_update").
    tags: tuple[str, ...] = field(default=())

    @property
    def options_len(self) -> int:
        n = 0
        if self.mss is not None:
            n += 4
        if self.wscale is not None:
            n += 3
        if self.sack_permitted:
            n += 2
        if self.timestamp is not None:
            n += 10
        if self.sack:
            n += 2 + 8 * len(self.sack)
            if self.timestamp is not None:
                n += 4  # NOP NOP TS, NOP NOP SACK: each option aligned on its own (Linux, BSD)
        return (n + 3) & ~3  # padded to 32-bit words

    @property
    def ip_len(self) -> int:
        if (self.mss is None and self.timestamp is None and self.wscale is None and not self.sack
                and not self.sack_permitted):
            return IP_HEADER + TCP_HEADER + self.payload_len  # most segments carry no options
        return IP_HEADER + TCP_HEADER + self.options_len + self.payload_len

    @property
    def seq_space(self) -> int:
        """Sequence space the segment occupies (SYN and FIN count one each)."""
        return self.payload_len + (1 if self.flags & SYN else 0) + (1 if self.flags & FIN else 0)
