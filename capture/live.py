"""Live capture on a real interface (optionally inside a namespace) until SIGINT/SIGTERM, with a summary."""

from __future__ import annotations

import signal
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from stallscope.capture.netns import EnvironmentUnavailable, list_namespaces
from stallscope.capture.tcpdump import DEFAULT_SNAPLEN, Tcpdump


@dataclass(frozen=True)
class LiveSummary:
    interface: str
    netns: str | None
    files: list[str]
    packets: int
    dropped_by_kernel: int
    dropped_by_interface: int

    def to_json(self) -> dict:
        return {
            "interface": self.interface,
            "netns": self.netns,
            "files": self.files,
            "packets": self.packets,
            "dropped_by_kernel": self.dropped_by_kernel,
            "dropped_by_interface": self.dropped_by_interface,
        }


def check_live(interface: str, netns: str | None) -> None:
    """Fail early, in one line, when the namespace or the interface is not there."""
    if netns is not None and netns not in list_namespaces():
        raise EnvironmentUnavailable(f"no network namespace named {netns!r}")
    argv = (["ip", "netns", "exec", netns] if netns else []) + ["ip", "link", "show", "dev", interface]
    if subprocess.run(argv, capture_output=True).returncode != 0:
        where = f" in namespace {netns}" if netns else ""
        raise EnvironmentUnavailable(f"no interface {interface!r}{where}")


def capture_live(
    interface: str,
    output: Path,
    *,
    netns: str | None = None,
    bpf: str | None = None,
    snaplen: int = DEFAULT_SNAPLEN,
    rotate_mb: int | None = None,
    files: int | None = None,
    stop: threading.Event | None = None,
) -> LiveSummary:
    """Capture until `stop` is set or SIGINT/SIGTERM arrives; then stop tcpdump cleanly and summarise."""
    check_live(interface, netns)
    stop = stop or threading.Event()
    tap = Tcpdump(interface, Path(output), netns=netns, snaplen=snaplen, bpf=bpf, rotate_mb=rotate_mb, files=files)
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGINT, signal.SIGTERM):
            previous[s] = signal.signal(s, lambda *_: stop.set())
    try:
        tap.start()
        while not stop.wait(0.2):
            if not tap.running:
                break  # tcpdump ended on its own (interface gone): summarise what it got
        counts = tap.stop()
    finally:
        tap.kill()
        for s, h in previous.items():
            signal.signal(s, h)
    out = Path(output)
    written = sorted(str(p) for p in out.parent.glob(out.name + "*")) if rotate_mb else [str(out)]
    return LiveSummary(interface, netns, written, counts.get("captured", 0), counts.get("dropped_by_kernel", 0),
                       counts.get("dropped_by_interface", 0))
