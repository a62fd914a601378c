"""Scheduled (deterministic) burst loss: runs of consecutive data-sized frames at fixed frame counts.

Pure, like the rest of the emulator's decisions. The schedule itself is the simulator's NthLoss
over the indices BurstLossConfig lists. Optionally the burst also takes the first retransmission
of its first segment, recognised by its TCP four-tuple and sequence number: Linux NewReno (SACK
off) repairs a burst of holes one per round trip from partial ACKs and needs no timeout unless a
repair is lost, and then it has no way but the retransmission timer; a SACK sender's RACK sees the
lost repair once later repairs are SACKed and sends it again within a round trip or two.
"""

from __future__ import annotations

from stallscope.capture.emulator.config import BurstLossConfig
from stallscope.simulate.links.loss import NthLoss

ETH_HEADER = 14
ETH_P_IP = 0x0800
IPPROTO_TCP = 6
# Drop reasons (written to the ground truth).
BURST_LOSS = "burst_loss"
BURST_REPAIR_LOSS = "burst_repair_loss"


def tcp_segment_key(frame: bytes) -> bytes | None:
    """Addresses, ports and sequence number of an IPv4 TCP frame; None for anything else."""
    if len(frame) < ETH_HEADER + 20 or int.from_bytes(frame[12:14], "big") != ETH_P_IP:
        return None
    ip = frame[ETH_HEADER:]
    ihl = (ip[0] & 0x0F) * 4
    if ip[0] >> 4 != 4 or ip[9] != IPPROTO_TCP or len(ip) < ihl + 8:
        return None
    return bytes(ip[12:20]) + bytes(ip[ihl:ihl + 8])


class ScheduledBursts:
    def __init__(self, config: BurstLossConfig) -> None:
        self.config = config
        self._nth = NthLoss(config.indices())
        self._starts = frozenset(config.warmup + k * config.every + 1 for k in range(config.count))
        self._awaiting_repair: set[bytes] = set()

    def decide(self, frame_len: int, segment: bytes | None) -> str | None:
        """The drop reason for this frame, or None to let it through."""
        if frame_len < self.config.min_frame_len:
            return None  # ACKs, SYNs, FINs: neither counted nor dropped
        if segment is not None and segment in self._awaiting_repair:
            self._awaiting_repair.discard(segment)
            return BURST_REPAIR_LOSS
        if not self._nth.lose():
            return None
        if self.config.lose_first_repair and segment is not None and self._nth.offered in self._starts:
            self._awaiting_repair.add(segment)
        return BURST_LOSS
