"""Sender/receiver knobs: socket options (applied by the workload to its own socket), routes and
sysctls (applied inside a namespace by the scenario runner)."""

from __future__ import annotations

import socket
from dataclasses import asdict, dataclass, field
from typing import Any

from stallscope.capture.netns import run

# Only the per-namespace TCP sysctls a scenario may set; anything else is a typo.
SYSCTLS = {
    "tcp_mtu_probing": "net.ipv4.tcp_mtu_probing",
    "tcp_sack": "net.ipv4.tcp_sack",
    "tcp_timestamps": "net.ipv4.tcp_timestamps",
    "tcp_window_scaling": "net.ipv4.tcp_window_scaling",
    "tcp_base_mss": "net.ipv4.tcp_base_mss",
}


@dataclass(frozen=True)
class SocketKnobs:
    sndbuf: int | None = None
    rcvbuf: int | None = None
    nodelay: bool = False
    cork: bool = False
    quickack: bool = False
    congestion: str | None = None  # TCP_CONGESTION, e.g. "reno" (no HyStart, unlike the default cubic)

    def apply(self, sock: socket.socket) -> None:
        """Set before connect()/listen(): buffer sizes fix the window scale at the handshake."""
        if self.sndbuf is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.sndbuf)
        if self.rcvbuf is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rcvbuf)
        if self.nodelay:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.cork:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
        if self.quickack:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        if self.congestion is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, self.congestion.encode())

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> "SocketKnobs":
        return cls(**(d or {}))


@dataclass(frozen=True)
class RouteKnobs:
    """Options on the route to the peer: `mtu lock N` pins the path MTU, `advmss N` the MSS we advertise."""

    mtu: int | None = None
    mtu_lock: bool = False
    advmss: int | None = None

    def argv(self, prefix: str, dev: str) -> list[str] | None:
        if self.mtu is None and self.advmss is None:
            return None
        argv = ["ip", "route", "replace", prefix, "dev", dev]
        if self.mtu is not None:
            argv += ["mtu"] + (["lock"] if self.mtu_lock else []) + [str(self.mtu)]
        if self.advmss is not None:
            argv += ["advmss", str(self.advmss)]
        return argv


@dataclass(frozen=True)
class HostKnobs:
    """Everything set on one end host: its sysctls, its route to the peer, its socket options."""

    sysctls: dict[str, int] = field(default_factory=dict)
    route: RouteKnobs = field(default_factory=RouteKnobs)
    socket: SocketKnobs = field(default_factory=SocketKnobs)

    def __post_init__(self) -> None:
        unknown = set(self.sysctls) - set(SYSCTLS)
        if unknown:
            raise ValueError(f"unknown sysctl knob(s) {sorted(unknown)}; known: {sorted(SYSCTLS)}")

    def apply_host(self, netns: str, peer_prefix: str, dev: str) -> None:
        for name, value in sorted(self.sysctls.items()):
            run(["sysctl", "-qw", f"{SYSCTLS[name]}={value}"], netns=netns)
        argv = self.route.argv(peer_prefix, dev)
        if argv:
            run(argv, netns=netns)

    def to_json(self) -> dict[str, Any]:
        return {"sysctls": dict(sorted(self.sysctls.items())), "route": asdict(self.route),
                "socket": self.socket.to_json()}
