"""`stallscope capture scenario NAME --out DIR --seconds N` writes the sender pcap, the receiver pcap
and the truth JSON, and prints the JSON document with --format json."""

from __future__ import annotations

import json
import shutil
import subprocess

import dpkt
import pytest

pytestmark = pytest.mark.root


def test_scenario_writes_two_captures_and_the_truth(tmp_path):
    proc = subprocess.run([shutil.which("stallscope"), "capture", "scenario", "pmtu_icmp", "--out", str(tmp_path),
                           "--seconds", "0.3", "--format", "json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc == json.loads((tmp_path / "pmtu_icmp.json").read_text())
    assert doc["parameters"]["seconds"] == 0.3 and doc["parameters"]["snaplen"] == 128
    assert doc["negative_control"] and doc["expected_causes"] == []
    for name in ("pmtu_icmp.pcap", "pmtu_icmp.receiver.pcap"):
        with open(tmp_path / name, "rb") as f:
            reader = dpkt.pcap.Reader(f)
            assert reader.snaplen == 128
            n = sum(1 for _ in reader)
        side = "sender" if name == "pmtu_icmp.pcap" else "receiver"
        assert n == doc["tcpdump"][side]["captured"] == doc["observed"][side]["packets"]
    # The ICMP the link sent is in the sender's capture and not past the link.
    assert doc["observed"]["sender"]["icmp_frag_needed"] == doc["emulator"]["icmp_sent"] >= 1
    assert doc["observed"]["receiver"]["icmp_frag_needed"] == 0
