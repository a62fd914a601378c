"""Throughput of the user-space link emulator with no impairment: iperf3 through the namespace topology.

Usage (root): python3 bench/emulator_bench.py [--mtu 9000] [--seconds 5] [--delay-ms 0]
Prints one JSON line: Mbit/s received, retransmissions, the emulator's own counts. The brief asks
for >= 500 Mbit/s of 9000-byte frames.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from stallscope.capture.emulator.config import DirectionConfig, LinkConfig
from stallscope.capture.netns import check_environment, sweep_stale, topology


def bench(mtu: int, seconds: float, delay_ms: float = 0.0) -> dict:
    check_environment()
    sweep_stale()
    with tempfile.TemporaryDirectory() as tmp, topology(sender_mtu=mtu, receiver_mtu=mtu, link_mtu=mtu + 216) as topo:
        cfg, stats = Path(tmp) / "link.json", Path(tmp) / "stats.json"
        way = DirectionConfig(delay_ns=int(delay_ms * 1_000_000))
        cfg.write_text(json.dumps(LinkConfig(way, way).to_json()))
        emu = subprocess.Popen(["ip", "netns", "exec", topo.link, sys.executable, "-m", "stallscope.capture.emulator",
                                str(cfg), str(stats), *topo.link_ifs], stdout=subprocess.PIPE, text=True)
        assert emu.stdout.readline().strip() == "ready"
        server = subprocess.Popen(["ip", "netns", "exec", topo.receiver, "iperf3", "-s", "-1"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        client = subprocess.run(["ip", "netns", "exec", topo.sender, "iperf3", "-c", topo.receiver_ip, "-t",
                                 str(seconds), "-J"], capture_output=True, text=True, timeout=seconds + 30)
        server.wait(10)
        interface_drops = topo.interface_drops()
        emu.terminate()
        emu.wait(10)
        result = json.loads(client.stdout)
        end = result["end"]
        return {
            "mtu": mtu,
            "seconds": seconds,
            "one_way_delay_ms": delay_ms,
            "mbit_s": round(end["sum_received"]["bits_per_second"] / 1e6, 1),
            "retransmits": end["sum_sent"].get("retransmits"),
            "emulator": json.loads(stats.read_text()),
            "interface_drops": interface_drops,
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mtu", type=int, default=9000)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--delay-ms", type=float, default=0.0, help="one-way delay per direction (exercises the timer path)")
    args = ap.parse_args()
    print(json.dumps(bench(args.mtu, args.seconds, args.delay_ms)))


if __name__ == "__main__":
    main()
