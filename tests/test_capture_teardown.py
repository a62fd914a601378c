"""Namespaces, veths and emulator processes are gone after every run: normal, failed, interrupted
(SIGTERM, SIGINT) and killed outright (the next run's startup sweep removes the leftovers)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import pytest

from stallscope.capture.netns import (
    PREFIX,
    list_namespaces,
    run,
    sweep_stale,
    topology,
)

pytestmark = pytest.mark.root


def _owned_by(pid: int) -> list[str]:
    return [n for n in list_namespaces() if n.startswith(f"{PREFIX}-{pid}-")]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it has exited all the same.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def test_topology_passes_traffic_and_is_removed_on_error():
    with pytest.raises(RuntimeError, match="boom"):
        with topology(sender_mtu=9000, receiver_mtu=9000) as topo:
            assert sorted(_owned_by(os.getpid())) == sorted(topo.namespaces)
            mtu = run(["cat", f"/sys/class/net/{topo.sender_if}/mtu"], netns=topo.sender).stdout.strip()
            assert mtu == "9000"
            feats = run(["ethtool", "-k", topo.link_ifs[0]], netns=topo.link).stdout
            for feature in ("tcp-segmentation-offload", "generic-receive-offload", "tx-checksumming"):
                assert f"{feature}: off" in feats
            raise RuntimeError("boom")
    assert _owned_by(os.getpid()) == []


def test_two_topologies_side_by_side_do_not_collide():
    with topology() as a, topology() as b:
        assert set(a.namespaces).isdisjoint(b.namespaces)
        assert len(_owned_by(os.getpid())) == 6
    assert _owned_by(os.getpid()) == []


def test_sweep_removes_namespaces_of_dead_owners_only():
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = f"{PREFIX}-{dead.pid}-abc123-lnk"
    live = f"{PREFIX}-{os.getpid()}-abc123-lnk"
    for name in (stale, live):
        subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        removed = sweep_stale()
        assert stale in removed and live not in removed
        assert stale not in list_namespaces() and live in list_namespaces()
    finally:
        subprocess.run(["ip", "netns", "del", live])
        subprocess.run(["ip", "netns", "del", stale])


def _start_run(tmp_path) -> tuple[subprocess.Popen, list[int]]:
    """A long scenario run in a child process; returns it once its emulator is up, with the pids
    of everything running inside its namespaces."""
    proc = subprocess.Popen(
        [shutil.which("stallscope"), "capture", "scenario", "clean_bulk", "--out", str(tmp_path),
         "--seconds", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        names = _owned_by(proc.pid)
        pids = []
        for n in names:
            pids += [int(p) for p in subprocess.run(["ip", "netns", "pids", n], capture_output=True,
                                                     text=True).stdout.split()]
        if len(names) == 3 and len(pids) >= 4:  # emulator, two tcpdumps, a workload
            return proc, pids
        time.sleep(0.1)
    proc.kill()
    pytest.fail(f"run never got going: {proc.communicate()}")


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_interrupted_run_tears_everything_down(tmp_path, sig):
    proc, pids = _start_run(tmp_path)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert _owned_by(proc.pid) == []
    assert [p for p in pids if _alive(p)] == []


@pytest.mark.slow
def test_killed_run_is_cleaned_up_by_the_next_sweep(tmp_path):
    proc, pids = _start_run(tmp_path)
    proc.kill()  # no chance to clean up
    proc.wait()
    assert len(_owned_by(proc.pid)) == 3
    sweep_stale()
    assert _owned_by(proc.pid) == []
    time.sleep(0.2)
    assert [p for p in pids if _alive(p)] == []


def test_failed_run_raises_a_typed_error_and_leaves_nothing(tmp_path):
    from stallscope.capture.scenarios.runner import ScenarioFailed, run_scenario
    from stallscope.capture.scenarios.spec import Scenario

    # An empty list of response lengths makes the client crash after the servers started.
    broken = Scenario(name="broken", description="a workload that crashes", workload="reqresp",
                      workload_spec={"lengths": []})
    with pytest.raises(ScenarioFailed, match="reqresp client failed"):
        run_scenario(broken, tmp_path, seconds=1)
    assert _owned_by(os.getpid()) == []
    assert not (tmp_path / "broken.json").exists()
