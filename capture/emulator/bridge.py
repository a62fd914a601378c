"""The running emulator: bridges two interfaces with AF_PACKET sockets, each direction through a
DirectionModel. Runs inside the link namespace as its own process (see __main__)."""

from __future__ import annotations

import heapq
import select
import socket
import struct
import time
from dataclasses import dataclass, field

from stallscope.capture.emulator.bursts import tcp_segment_key
from stallscope.capture.emulator.config import LinkConfig
from stallscope.capture.emulator.icmp import frag_needed
from stallscope.capture.emulator.model import DirectionModel

ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
SO_SNDBUFFORCE = 32
SO_RCVBUFFORCE = 33
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
PACKET_STATISTICS = 6
# Line-rate bursts of jumbo frames must not overflow the socket: that would be a loss nobody asked for.
SOCKET_BUFFER = 64 * 1024 * 1024
DRAIN_BATCH = 64
# How long before a frame is due the loop stops sleeping and spins.
SPIN_NS = 200_000


def open_port(ifname: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, SOCKET_BUFFER)
    s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, SOCKET_BUFFER)
    try:
        s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    except OSError:
        pass  # older kernel: outgoing frames are filtered by pkttype below
    s.bind((ifname, ETH_P_ALL))
    s.setblocking(False)
    return s


@dataclass
class Bridge:
    """Frames entering `ifs[0]` leave `ifs[1]` through `forward`; the reverse through `reverse`."""

    ifs: tuple[str, str]
    config: LinkConfig
    tx_errors: int = 0
    icmp_sent: int = 0
    _heap: list = field(default_factory=list)
    _seq: int = 0

    def __post_init__(self) -> None:
        self.models = (DirectionModel(self.config.forward), DirectionModel(self.config.reverse))
        self.ports: tuple[socket.socket, socket.socket] | None = None
        self._socket_drops: list[int] | None = None

    def open(self) -> None:
        self.ports = (open_port(self.ifs[0]), open_port(self.ifs[1]))

    def close(self) -> None:
        self._socket_drops = self.socket_drops()
        for p in self.ports or ():
            p.close()

    def socket_drops(self) -> list[int]:
        """Frames the kernel dropped because a port's receive buffer was full: losses the
        experiment did not ask for, so they are reported beside the emulator's own drops.
        (Reading the counters resets them, so this is read once, at close.)"""
        if self._socket_drops is not None:
            return self._socket_drops
        drops = []
        for p in self.ports or ():
            _, dropped = struct.unpack("II", p.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
            drops.append(dropped)
        return drops

    def _handle(self, direction: int, frame: bytes, now_ns: int) -> None:
        ethertype = int.from_bytes(frame[12:14], "big") if len(frame) >= 14 else 0
        ip = ethertype == ETH_P_IP
        verdict = self.models[direction].offer(now_ns, len(frame), impair=ip,
                                               segment=tcp_segment_key(frame) if ip else None)
        if verdict.delivered:
            self._seq += 1
            heapq.heappush(self._heap, (verdict.deliver_ns, self._seq, 1 - direction, frame))
        elif verdict.icmp_mtu is not None:
            in_port = self.ports[direction]
            reply = frag_needed(frame, verdict.icmp_mtu, router_mac=frame[0:6])
            if reply is not None:
                self._send(in_port, reply)
                self.icmp_sent += 1

    def _send(self, port: socket.socket, frame: bytes) -> None:
        try:
            port.send(frame)
        except OSError:
            self.tx_errors += 1

    def run(self, should_stop) -> None:
        _tight_timer_slack()
        assert self.ports is not None, "open() first"
        fds = {p.fileno(): i for i, p in enumerate(self.ports)}
        watched = list(fds)
        heap = self._heap
        while not should_stop():
            now = time.monotonic_ns()
            # select() waits with microsecond resolution and wakes when a frame arrives, so a frame
            # is read, and stamped, when it arrives, even while another is due within a millisecond
            # (poll() waits whole milliseconds; sleeping instead left arrivals unread and stamped
            # late, half the frames right behind another ~1 ms late: docs/comparison.md).
            # The last SPIN_NS before a frame is due are spun (select without waiting): a wakeup
            # from select() comes some tens of microseconds late (timer slack, scheduling).
            timeout = 0.05 if not heap else max(0.0, min(0.05, (heap[0][0] - now - SPIN_NS) / 1e9))
            readable, _, _ = select.select(watched, [], [], timeout)
            for fd in readable:
                direction = fds[fd]
                port = self.ports[direction]
                for _ in range(DRAIN_BATCH):
                    try:
                        frame, addr = port.recvfrom(65536)
                    except BlockingIOError:
                        break
                    if addr[2] == PACKET_OUTGOING:
                        continue
                    self._handle(direction, frame, time.monotonic_ns())
            now = time.monotonic_ns()
            while heap and heap[0][0] <= now:
                _, _, out, frame = heapq.heappop(heap)
                self._send(self.ports[out], frame)

    def stats(self) -> dict:
        fwd, rev = (m.stats() for m in self.models)
        return {"forward": fwd, "reverse": rev, "tx_errors": self.tx_errors, "icmp_sent": self.icmp_sent,
                "socket_drops": self.socket_drops(),
                "undelivered_at_stop": len(self._heap)}


def _tight_timer_slack() -> None:
    """Ask the kernel to wake this thread within a microsecond of its timeouts (PR_SET_TIMERSLACK;
    the default 50 us would make every delay that much longer). Best effort: Linux only."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(29, 1000, 0, 0, 0)  # PR_SET_TIMERSLACK, 1 us
    except (OSError, AttributeError):
        pass
