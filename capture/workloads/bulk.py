"""Bulk transfer: the client (sender namespace) writes, the server (receiver namespace) reads.

Spec keys: host, port, total_bytes, seconds, write_size, read_size, write_think_us, read_think_us
(a slow reader reads little and sleeps), sender/receiver socket knobs.
"""

from __future__ import annotations

import socket
import time
from typing import Any

from stallscope.capture.knobs import SocketKnobs
from stallscope.capture.workloads.common import PORT, connect, listen, main, now_ns


def server(spec: dict[str, Any]) -> dict[str, Any]:
    lsock = listen(SocketKnobs.from_json(spec.get("receiver_socket")), port=int(spec.get("port", PORT)))
    conn, _ = lsock.accept()
    read_size = int(spec.get("read_size", 1 << 20))
    think = spec.get("read_think_us", 0) / 1e6
    received, reads, start = 0, 0, now_ns()
    while True:
        b = conn.recv(read_size)
        if not b:
            break
        received += len(b)
        reads += 1
        if think:
            time.sleep(think)
    elapsed = now_ns() - start
    conn.close()
    return {"role": "server", "bytes_received": received, "reads": reads, "elapsed_ns": elapsed}


def write_all(sock: socket.socket, spec: dict[str, Any]) -> dict[str, Any]:
    """Write `total_bytes` (or until `seconds` pass) in `write_size` pieces, optionally pausing."""
    total = int(spec.get("total_bytes", 1 << 62))
    size = int(spec.get("write_size", 64 * 1024))
    think = spec.get("write_think_us", 0) / 1e6
    burst = int(spec.get("burst_bytes", 0))
    pause = spec.get("pause_ms", 0) / 1e3
    deadline = now_ns() + int(spec.get("seconds", 3) * 1e9)
    chunk = b"\x5a" * size
    grace_s = float(spec.get("grace_s", 5))
    sent, since_pause, pauses, start = 0, 0, 0, now_ns()
    stuck = False
    while sent < total and now_ns() < deadline:
        # A path that stops delivering (a black hole) must not block the writer past its deadline.
        sock.settimeout(max(0.001, (deadline - now_ns()) / 1e9))
        try:
            n = sock.send(chunk[: min(size, total - sent)])
        except (socket.timeout, BlockingIOError):
            stuck = True
            break
        sent += n
        since_pause += n
        if think:
            time.sleep(think)
        if burst and since_pause >= burst:
            if now_ns() + pause * 1e9 >= deadline:
                break  # end on a pause boundary: the run is bursts and pauses only
            time.sleep(pause)
            since_pause = 0
            pauses += 1
    sock.shutdown(socket.SHUT_WR)
    sock.settimeout(grace_s)
    try:
        sock.recv(1)  # wait for the server's close: everything was read
        drained = True
    except socket.timeout:
        drained = False
    return {"bytes_sent": sent, "pauses": pauses, "elapsed_ns": now_ns() - start, "send_blocked": stuck,
            "drained": drained}


def client(spec: dict[str, Any]) -> dict[str, Any]:
    sock = connect(SocketKnobs.from_json(spec.get("sender_socket")), spec["host"], int(spec.get("port", PORT)))
    result = {"role": "client", **write_all(sock, spec)}
    sock.close()
    result["throughput_bps"] = result["bytes_sent"] * 8 * 10**9 // max(1, result["elapsed_ns"])
    return result


if __name__ == "__main__":
    main({"server": server, "client": client})
