"""What every workload process shares: argument parsing, the listening socket, the result line."""

from __future__ import annotations

import json
import socket
import sys
import time
from typing import Any, Callable

from stallscope.capture.knobs import SocketKnobs

PORT = 5001


def listen(knobs: SocketKnobs, host: str = "0.0.0.0", port: int = PORT) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    knobs.apply(s)  # buffer sizes before listen(): accepted sockets inherit them and the window scale
    s.bind((host, port))
    s.listen(16)
    print("ready", flush=True)
    return s


def connect(knobs: SocketKnobs, host: str, port: int = PORT) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    knobs.apply(s)
    s.connect((host, port))
    return s


def recv_exact(sock: socket.socket, n: int, chunk: int = 1 << 20) -> bytes:
    parts = []
    while n > 0:
        b = sock.recv(min(n, chunk))
        if not b:
            raise ConnectionError(f"peer closed with {n} bytes still expected")
        parts.append(b)
        n -= len(b)
    return b"".join(parts)


def now_ns() -> int:
    return time.monotonic_ns()


def main(roles: dict[str, Callable[[dict[str, Any]], dict[str, Any]]]) -> None:
    if len(sys.argv) != 3 or sys.argv[1] not in roles:
        sys.exit(f"usage: {sys.argv[0]} {{{'|'.join(roles)}}} SPEC_JSON")
    result = roles[sys.argv[1]](json.loads(sys.argv[2]))
    print(json.dumps(result), flush=True)
