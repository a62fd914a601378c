"""Workloads over loopback (no root): the bulk transfer moves exactly what it says, the request/response
client gets every response it asked for, in one connection or one per request, and the pausing
application really pauses."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from stallscope.capture.workloads.reqresp import _lengths


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(module: str, spec: dict, timeout: float = 60) -> tuple[dict, dict]:
    spec = {"host": "127.0.0.1", "port": _free_port(), "seconds": 5, **spec}
    argv = [sys.executable, "-m", f"stallscope.capture.workloads.{module}"]
    server = subprocess.Popen(argv + ["server", json.dumps(spec)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "ready"
        client = subprocess.run(argv + ["client", json.dumps(spec)], capture_output=True, text=True, timeout=timeout)
        assert client.returncode == 0, client.stderr
        out, _ = server.communicate(timeout=timeout)
    finally:
        server.kill()
    return json.loads(client.stdout.splitlines()[-1]), json.loads(out.splitlines()[-1])


def test_bulk_moves_exactly_total_bytes():
    client, server = _run("bulk", {"total_bytes": 3_000_000, "write_size": 10_000, "read_size": 7_000})
    assert client["bytes_sent"] == server["bytes_received"] == 3_000_000
    assert client["drained"] and not client["send_blocked"]


@pytest.mark.parametrize("per_request", [False, True])
def test_reqresp_gets_every_response_in_full(per_request):
    spec = {"lengths": [1, 4096, 4097, 20_000], "requests": 6, "app_buffer": 4096, "per_request_connection": per_request}
    client, server = _run("reqresp", spec)
    assert [n for n, _ in client["response_times"]] == [1, 4096, 4097, 20_000, 1, 4096]
    assert client["responses"] == server["responses"] == 6
    assert all(t > 0 for _, t in client["response_times"])


def test_pausing_application_pauses_between_bursts():
    client, server = _run("pausing", {"burst_bytes": 50_000, "pause_ms": 100, "write_size": 10_000, "seconds": 1})
    assert client["pauses"] >= 5
    assert server["bytes_received"] == client["bytes_sent"] <= (client["pauses"] + 1) * 50_000
    assert client["elapsed_ns"] >= client["pauses"] * 100_000_000


def test_response_lengths_random_is_seeded_and_sequential_walks_the_range():
    a = _lengths({"lengths": "random", "seed": 3})
    b = _lengths({"lengths": "random", "seed": 3})
    first = [next(a) for _ in range(50)]
    assert first == [next(b) for _ in range(50)] and all(1 <= n <= 100_000 for n in first)
    seq = _lengths({"lengths": "sequential", "step": 25_000})
    assert [next(seq) for _ in range(6)] == [1, 25_001, 50_001, 75_001, 1, 25_001]
