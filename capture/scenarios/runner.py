"""Runs one scenario end to end: topology, knobs, emulator, two tcpdumps, the workload, the JSON.

Every process it starts lives inside the run's namespaces, and the topology's teardown kills
whatever is still there, so nothing outlives a run (error, SIGTERM or Ctrl-C included).
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from stallscope.capture import ground_truth
from stallscope.capture.observe import observe
from stallscope.capture.netns import PREFIX_LEN, Topology, check_environment, sweep_stale, topology
from stallscope.capture.scenarios.spec import SERVER_SIDE, Scenario
from stallscope.capture.tcpdump import DEFAULT_SNAPLEN, Tcpdump

READY_TIMEOUT_S = 10.0
GRACE_S = 5.0


class ScenarioFailed(RuntimeError):
    """A scenario could not run (a process did not start, the workload crashed); names the step."""


def child_argv(module: str, *args: str) -> list[str]:
    """This interpreter running `module`. -P: the working directory is never put on sys.path, so
    that started from a checkout the child imports the installed package, not the checkout's
    partial stallscope/ folder (the package is assembled from several folders at install)."""
    return [sys.executable, "-P", "-m", module, *args]


def _spawn(netns: str, module: str, *args: str) -> subprocess.Popen:
    argv = ["ip", "netns", "exec", netns, *child_argv(module, *args)]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_ready(proc: subprocess.Popen, what: str) -> None:
    ready, _, _ = select.select([proc.stdout], [], [], READY_TIMEOUT_S)
    line = proc.stdout.readline() if ready else ""
    if line.strip() != "ready":
        proc.kill()
        _, err = proc.communicate()
        raise ScenarioFailed(f"{what} did not start: {err.strip() or line.strip() or 'no output'}")


def _result(proc: subprocess.Popen, what: str, timeout_s: float) -> dict[str, Any] | None:
    """The workload's last stdout line (JSON); None if it had to be killed."""
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None
    lines = [ln for ln in out.splitlines() if ln.strip() and ln.strip() != "ready"]
    if proc.returncode != 0 or not lines:
        raise ScenarioFailed(f"{what} failed ({proc.returncode}): {err.strip()[-500:]}")
    return json.loads(lines[-1])


def _configure(topo: Topology, scn: Scenario) -> None:
    prefix = f"{topo.receiver_ip.rsplit('.', 1)[0]}.0/{PREFIX_LEN}"
    scn.sender.apply_host(topo.sender, prefix, topo.sender_if)
    scn.receiver.apply_host(topo.receiver, prefix, topo.receiver_if)


def run_scenario(scn: Scenario, out_dir: Path, *, seconds: float | None = None,
                 snaplen: int = DEFAULT_SNAPLEN) -> dict[str, Any]:
    """Run `scn`, write OUT/NAME.pcap (sender tap), OUT/NAME.receiver.pcap and OUT/NAME.json; return the JSON."""
    check_environment()
    sweep_stale()
    seconds = scn.seconds if seconds is None else seconds
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sender_pcap = out_dir / f"{scn.name}.pcap"
    receiver_pcap = out_dir / f"{scn.name}.receiver.pcap"
    link_mtu = max(scn.sender_mtu, scn.receiver_mtu, 1500) + 216
    with tempfile.TemporaryDirectory(prefix="stallscope-") as tmp, \
            topology(sender_mtu=scn.sender_mtu, receiver_mtu=scn.receiver_mtu, link_mtu=link_mtu) as topo:
        _configure(topo, scn)
        config_path, stats_path = Path(tmp) / "link.json", Path(tmp) / "stats.json"
        config_path.write_text(json.dumps(scn.link.to_json()))
        emulator = _spawn(topo.link, "stallscope.capture.emulator", str(config_path), str(stats_path),
                          *topo.link_ifs)
        _wait_ready(emulator, "link emulator")
        taps = {
            "sender": Tcpdump(topo.sender_if, sender_pcap, netns=topo.sender, snaplen=snaplen, bpf="tcp or icmp"),
            "receiver": Tcpdump(topo.receiver_if, receiver_pcap, netns=topo.receiver, snaplen=snaplen,
                                bpf="tcp or icmp"),
        }
        try:
            for tap in taps.values():
                tap.start()
            workload = _run_workload(topo, scn, seconds)
            time.sleep(0.2)  # let the last ACKs and FINs reach both taps
        finally:
            tcpdump_stats = {side: tap.stop() for side, tap in taps.items()}
            interface_drops = topo.interface_drops()
            if emulator.poll() is None:
                emulator.terminate()
            try:
                emulator.communicate(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                emulator.kill()
        emulator_stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
    doc = ground_truth.truth_document(
        scenario=scn.name,
        description=scn.description,
        parameters={**scn.parameters(seconds), "snaplen": snaplen},
        expected=[c.value for c in scn.expected],
        detail=scn.detail,
        emulator=emulator_stats,
        tcpdump=tcpdump_stats,
        workload=workload,
        files={"sender": sender_pcap.name, "receiver": receiver_pcap.name},
        interfaces=interface_drops,
        observed={side: observe(path, topo.sender_ip, topo.receiver_ip).to_json()
                  for side, path in (("sender", sender_pcap), ("receiver", receiver_pcap))},
    )
    ground_truth.write(out_dir / f"{scn.name}.json", doc)
    return doc


def _run_workload(topo: Topology, scn: Scenario, seconds: float) -> dict[str, Any]:
    server_side = SERVER_SIDE[scn.workload]
    server_ns = topo.receiver if server_side == "receiver" else topo.sender
    client_ns = topo.sender if server_side == "receiver" else topo.receiver
    peer_ip = topo.receiver_ip if server_side == "receiver" else topo.sender_ip
    spec = {
        **scn.workload_spec,
        "seconds": seconds,
        "grace_s": GRACE_S,
        "host": peer_ip,
        "sender_socket": scn.sender.socket.to_json(),
        "receiver_socket": scn.receiver.socket.to_json(),
    }
    module = f"stallscope.capture.workloads.{scn.workload}"
    server = _spawn(server_ns, module, "server", json.dumps(spec))
    _wait_ready(server, f"{scn.workload} server")
    client = _spawn(client_ns, module, "client", json.dumps(spec))
    try:
        client_result = _result(client, f"{scn.workload} client", seconds + 2 * GRACE_S + 10)
        server_result = _result(server, f"{scn.workload} server", GRACE_S)
    finally:
        for p in (client, server):
            if p.poll() is None:
                p.kill()
                p.communicate()
    return {"client": client_result, "server": server_result}
