"""Naglemark-style request/response. The server (sender namespace) answers each request with the
asked-for number of bytes, written in `app_buffer`-sized writes; the client (receiver namespace)
times every response from request sent to last byte received.

Spec keys: host, port, seconds, requests, app_buffer, lengths ("random" 1..100000 seeded, "sequential"
1..100000 by `step`, or a list cycled),
per_request_connection, seed, sender/receiver socket knobs.
"""

from __future__ import annotations

import random
import socket
import struct
from typing import Any

from stallscope.capture.knobs import SocketKnobs
from stallscope.capture.workloads.common import PORT, connect, listen, main, now_ns, recv_exact

REQUEST = struct.Struct("!I")  # response length asked for; 0 ends the connection


def _serve(conn: socket.socket, knobs: SocketKnobs, app_buffer: int) -> int:
    knobs.apply(conn)
    served = 0
    while True:
        try:
            (length,) = REQUEST.unpack(recv_exact(conn, REQUEST.size))
        except ConnectionError:
            break
        if length == 0:
            break
        body = b"\x5a" * length
        for off in range(0, length, app_buffer):
            conn.sendall(body[off:off + app_buffer])
        served += 1
    conn.close()
    return served


def server(spec: dict[str, Any]) -> dict[str, Any]:
    knobs = SocketKnobs.from_json(spec.get("sender_socket"))
    lsock = listen(knobs, port=int(spec.get("port", PORT)))
    app_buffer = int(spec.get("app_buffer", 4096))
    connections = 1 if not spec.get("per_request_connection") else int(spec.get("max_connections", 10**9))
    served = 0
    lsock.settimeout(spec.get("seconds", 3) + 10)
    for _ in range(connections):
        try:
            conn, _ = lsock.accept()
        except socket.timeout:
            break
        n = _serve(conn, knobs, app_buffer)
        if n == 0:  # the client's goodbye connection
            break
        served += n
    return {"role": "server", "responses": served}


def _lengths(spec: dict[str, Any]):
    lengths = spec.get("lengths", "random")
    if lengths == "sequential":  # naglemark's sweep: 1, 1 + step, ... up to 100000, then again
        n = 1
        while True:
            yield n
            n = n + int(spec.get("step", 1)) if n + int(spec.get("step", 1)) <= 100_000 else 1
    if lengths == "random":
        rng = random.Random(spec.get("seed", 1))
        while True:
            yield rng.randint(1, 100_000)
    i = 0
    while True:
        yield int(lengths[i % len(lengths)])
        i += 1


def client(spec: dict[str, Any]) -> dict[str, Any]:
    knobs = SocketKnobs.from_json(spec.get("receiver_socket"))
    per_request = bool(spec.get("per_request_connection"))
    deadline = now_ns() + int(spec.get("seconds", 3) * 1e9)
    limit = int(spec.get("requests", 10**9))
    times: list[list[int]] = []
    sock = None if per_request else connect(knobs, spec["host"], int(spec.get("port", PORT)))
    for length in _lengths(spec):
        if len(times) >= limit or now_ns() >= deadline:
            break
        if per_request:
            sock = connect(knobs, spec["host"], int(spec.get("port", PORT)))
        t0 = now_ns()
        sock.settimeout(float(spec.get("grace_s", 5)))
        try:
            sock.sendall(REQUEST.pack(length))
            recv_exact(sock, length)
        except socket.timeout:
            return {"role": "client", "responses": len(times), "response_times": times, "timed_out": True}
        times.append([length, now_ns() - t0])
        if per_request:
            sock.sendall(REQUEST.pack(0))
            sock.close()
    if per_request:  # tell the server no more connections are coming
        sock = connect(knobs, spec["host"], int(spec.get("port", PORT)))
    sock.sendall(REQUEST.pack(0))
    sock.close()
    return {"role": "client", "responses": len(times), "response_times": times}


if __name__ == "__main__":
    main({"server": server, "client": client})
