"""`stallscope capture live`: captures in a namespace until SIGINT/SIGTERM, stops cleanly and reports
packets and tcpdump's drops; the file it leaves is a readable capture with those packets."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time

import dpkt
import pytest

from stallscope.capture.netns import run, topology

pytestmark = pytest.mark.root


# Sending to the unresolved receiver makes the kernel broadcast ARP requests for it.
SEND_UDP = "import socket, sys, time\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n" \
           "for _ in range(5):\n    s.sendto(b'x', (sys.argv[1], 9)); time.sleep(0.2)\n"


def _count(path) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in dpkt.pcap.Reader(f))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_live_capture_stops_cleanly_and_summarises(tmp_path, sig):
    out = tmp_path / "live.pcap"
    with topology() as topo:
        # No emulator here: the sender's ARP requests for the receiver are traffic enough.
        proc = subprocess.Popen([shutil.which("stallscope"), "capture", "live", "-i", topo.sender_if, "--netns",
                                 topo.sender, "--filter", "arp", "-w", str(out), "--format", "json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        run([sys.executable, "-c", SEND_UDP, topo.receiver_ip], netns=topo.sender)
        time.sleep(0.5)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=15)
    assert proc.returncode == 0, stderr
    summary = json.loads(stdout)
    assert summary["interface"] == "s0" and summary["dropped_by_kernel"] == 0
    assert summary["packets"] >= 1
    assert _count(out) == summary["packets"]


def test_live_capture_in_a_missing_namespace_is_an_environment_error(tmp_path):
    proc = subprocess.run([shutil.which("stallscope"), "capture", "live", "-i", "s0", "--netns", "stsc-no-such-ns",
                           "-w", str(tmp_path / "x.pcap")], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 5
    assert proc.stderr.strip().splitlines() == ["stallscope capture: no network namespace named 'stsc-no-such-ns'"]
