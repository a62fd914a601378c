"""tcpdump as a managed subprocess: started (optionally in a namespace), waited on until it listens,
stopped with SIGINT, and its own drop counts parsed from the summary it prints on exit."""

from __future__ import annotations

import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_SNAPLEN = 128
# Before stopping: the output must stay this long without growing (at most SETTLE_MAX_S).
SETTLE_QUIET_S = 0.1
SETTLE_MAX_S = 2.0
_COUNTERS = {
    "captured": re.compile(r"(\d+) packets? captured"),
    "received_by_filter": re.compile(r"(\d+) packets? received by filter"),
    "dropped_by_kernel": re.compile(r"(\d+) packets? dropped by kernel"),
    "dropped_by_interface": re.compile(r"(\d+) packets? dropped by interface"),
}


class TcpdumpFailed(RuntimeError):
    """tcpdump exited early or never started listening; the message carries its stderr."""


def parse_summary(stderr: str) -> dict[str, int]:
    """Counts from tcpdump's exit summary ("N packets dropped by kernel", ...); absent lines are omitted."""
    out = {}
    for key, rx in _COUNTERS.items():
        m = rx.search(stderr)
        if m:
            out[key] = int(m.group(1))
    return out


@dataclass
class Tcpdump:
    interface: str
    output: Path
    netns: str | None = None
    snaplen: int = DEFAULT_SNAPLEN
    bpf: str | None = None
    rotate_mb: int | None = None
    files: int | None = None
    nanosecond: bool = True
    _proc: subprocess.Popen | None = None
    _stderr: list[str] = field(default_factory=list)
    _listening: threading.Event = field(default_factory=threading.Event)

    def argv(self) -> list[str]:
        argv = ["tcpdump", "-i", self.interface, "-s", str(self.snaplen), "-w", str(self.output), "-U",
                "-Z", "root", "-n",
                # Without it TPACKET_V3 hands over a block only when full or after ~1 s, so the
                # last second of a short run would still be in the ring when SIGINT arrives.
                "--immediate-mode"]
        if self.nanosecond:
            argv += ["--time-stamp-precision", "nano"]
        if self.rotate_mb is not None:
            argv += ["-C", str(self.rotate_mb)]
            if self.files is not None:
                argv += ["-W", str(self.files)]
        if self.bpf:
            argv += self.bpf.split()
        return (["ip", "netns", "exec", self.netns] if self.netns else []) + argv

    def _pump(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        for line in self._proc.stderr:
            self._stderr.append(line)
            if "listening on" in line:
                self._listening.set()
        self._listening.set()  # EOF: stop waiting either way

    def start(self, timeout_s: float = 5.0) -> None:
        self._proc = subprocess.Popen(self.argv(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._pump, daemon=True).start()
        if not self._listening.wait(timeout_s) or self._proc.poll() is not None:
            self.kill()
            raise TcpdumpFailed(f"tcpdump on {self.interface} did not start: {''.join(self._stderr).strip()}")
        time.sleep(0.05)  # "listening on" is printed just before the capture loop starts

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self, timeout_s: float = 5.0) -> dict[str, int]:
        """SIGINT (tcpdump flushes and prints its summary), then the parsed counts. Waits first
        until the output has stopped growing: on SIGINT tcpdump stops reading its ring, and what a
        descheduled tcpdump had not yet read is lost (a loaded machine's loopback capture of a
        50 ms exchange held no packet at all)."""
        if self._proc is None:
            return {}
        if self._proc.poll() is None:
            self._settle()
            self._proc.send_signal(signal.SIGINT)
        try:
            self._proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
        time.sleep(0.05)  # let the stderr pump read the summary
        return parse_summary("".join(self._stderr))

    def _written(self) -> int:
        out = Path(self.output)
        return sum(p.stat().st_size for p in out.parent.glob(out.name + "*") if p.is_file())

    def _settle(self, quiet_s: float = SETTLE_QUIET_S, timeout_s: float = SETTLE_MAX_S) -> None:
        """Returns once the output has not grown for `quiet_s` (tcpdump writes each packet as it
        reads it, -U), or after `timeout_s` on a link that never falls quiet."""
        deadline = time.monotonic() + timeout_s
        size, since = self._written(), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(quiet_s / 4)
            now = self._written()
            if now != size:
                size, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                return

    def kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
