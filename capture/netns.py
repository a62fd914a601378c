"""Topology: sender, link and receiver network namespaces joined by two veth pairs.

    [sender ns] s0 <--veth--> l0 [link ns: emulator bridges l0<->l1] l1 <--veth--> r0 [receiver ns]

Names carry the owning process id, so parallel runs never collide and a startup sweep can tell a
left-over namespace (owner dead) from a live one. Teardown always runs: on return, on error, and on
SIGTERM (turned into an exception so `with` blocks unwind) or Ctrl-C.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
from dataclasses import dataclass, field
from types import FrameType
from typing import Iterator, Sequence

from contextlib import contextmanager

PREFIX = "stsc"
SENDER_IP = "10.77.0.1"
RECEIVER_IP = "10.77.0.2"
PREFIX_LEN = 24
_NAME = re.compile(rf"^{PREFIX}-(?P<pid>\d+)-(?P<tag>[0-9a-f]+)-(?P<role>snd|lnk|rcv)$")


class EnvironmentUnavailable(RuntimeError):
    """This machine cannot build the topology (not root, no namespaces, a missing tool)."""


class CommandFailed(RuntimeError):
    """A setup command (ip, ethtool, sysctl) failed; the message names the command and its error."""


def run(argv: Sequence[str], *, netns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    full = (["ip", "netns", "exec", netns] if netns else []) + list(argv)
    proc = subprocess.run(full, capture_output=True, text=True)
    if check and proc.returncode != 0:
        where = f" in namespace {netns}" if netns else ""
        raise CommandFailed(f"{' '.join(argv)}{where} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def check_environment() -> None:
    """Raise EnvironmentUnavailable with a one-line reason if namespaces cannot be used here."""
    if os.geteuid() != 0:
        raise EnvironmentUnavailable("capture needs root (network namespaces, AF_PACKET, tcpdump)")
    for tool in ("ip", "ethtool", "tcpdump"):
        if subprocess.run(["which", tool], capture_output=True).returncode != 0:
            raise EnvironmentUnavailable(f"capture needs '{tool}' (scripts/install-deps.sh installs it)")
    probe = f"{PREFIX}-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        raise EnvironmentUnavailable(f"cannot create a network namespace: {made.stderr.strip()}")
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)


def list_namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def destroy_namespace(name: str) -> None:
    """Kill what runs inside (only our own run's emulator/tcpdump/workloads live there) and delete it."""
    pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    subprocess.run(["ip", "netns", "del", name], capture_output=True)


def sweep_stale() -> list[str]:
    """Delete stallscope namespaces whose owning process is gone (crashed or killed runs)."""
    removed = []
    for name in list_namespaces():
        m = _NAME.match(name)
        if m and not _pid_alive(int(m["pid"])):
            destroy_namespace(name)
            removed.append(name)
    return removed


@dataclass
class Topology:
    """Three namespaces and two veth pairs. Interface names are fixed inside each namespace."""

    sender_mtu: int = 1500
    receiver_mtu: int = 1500
    link_mtu: int = 9216
    tag: str = field(default_factory=lambda: secrets.token_hex(3))
    sender_if: str = "s0"
    receiver_if: str = "r0"
    link_ifs: tuple[str, str] = ("l0", "l1")
    sender_ip: str = SENDER_IP
    receiver_ip: str = RECEIVER_IP

    def ns(self, role: str) -> str:
        return f"{PREFIX}-{os.getpid()}-{self.tag}-{role}"

    @property
    def sender(self) -> str:
        return self.ns("snd")

    @property
    def link(self) -> str:
        return self.ns("lnk")

    @property
    def receiver(self) -> str:
        return self.ns("rcv")

    @property
    def namespaces(self) -> list[str]:
        return [self.sender, self.link, self.receiver]

    def create(self) -> None:
        for name in self.namespaces:
            run(["ip", "netns", "add", name])
            run(["ip", "link", "set", "lo", "up"], netns=name)
            # No IPv6 chatter (router solicitations, MLD) in the captures.
            run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"], netns=name)
            run(["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"], netns=name)
        l0, l1 = self.link_ifs
        run(["ip", "link", "add", self.sender_if, "netns", self.sender, "type", "veth",
             "peer", "name", l0, "netns", self.link])
        run(["ip", "link", "add", self.receiver_if, "netns", self.receiver, "type", "veth",
             "peer", "name", l1, "netns", self.link])
        ends = [(self.sender, self.sender_if, self.sender_mtu), (self.link, l0, self.link_mtu),
                (self.link, l1, self.link_mtu), (self.receiver, self.receiver_if, self.receiver_mtu)]
        for ns, dev, mtu in ends:
            run(["ip", "link", "set", dev, "mtu", str(mtu)], netns=ns)
            # Forwarded frames must carry finished checksums and be real MTU-sized frames.
            run(["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off"],
                netns=ns)
            run(["ip", "link", "set", dev, "up"], netns=ns)
        run(["ip", "addr", "add", f"{self.sender_ip}/{PREFIX_LEN}", "dev", self.sender_if], netns=self.sender)
        run(["ip", "addr", "add", f"{self.receiver_ip}/{PREFIX_LEN}", "dev", self.receiver_if],
            netns=self.receiver)

    def interface_drops(self) -> dict[str, dict[str, int]]:
        """Kernel drop counters of every veth end: a loss here is neither the emulator's nor TCP's."""
        out = {}
        ends = [(self.sender, self.sender_if), (self.link, self.link_ifs[0]), (self.link, self.link_ifs[1]),
                (self.receiver, self.receiver_if)]
        for ns, dev in ends:
            stats = run(["cat", f"/sys/class/net/{dev}/statistics/rx_dropped",
                         f"/sys/class/net/{dev}/statistics/tx_dropped"], netns=ns).stdout.split()
            out[dev] = {"rx_dropped": int(stats[0]), "tx_dropped": int(stats[1])}
        return out

    def destroy(self) -> None:
        for name in self.namespaces:
            destroy_namespace(name)

    def exists(self) -> list[str]:
        present = set(list_namespaces())
        return [n for n in self.namespaces if n in present]


class Terminated(BaseException):
    """Raised from the SIGTERM handler so that every `with` block tears down what it built."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated(f"signal {signum}")


@contextmanager
def terminate_unwinds() -> Iterator[None]:
    """While inside, SIGTERM (and SIGHUP) unwind the stack like Ctrl-C does."""
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        for s in old:
            signal.signal(s, _raise_terminated)
    except ValueError:  # not the main thread: leave handlers alone
        old = {}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextmanager
def topology(**kwargs) -> Iterator[Topology]:
    """Build a topology and always remove it, whatever happens inside."""
    topo = Topology(**kwargs)
    with terminate_unwinds():
        try:
            topo.create()
            yield topo
        finally:
            # Teardown must not itself be interrupted halfway by a second signal.
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
            try:
                topo.destroy()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
