"""The analyzer on a loopback capture of real Linux TCP (a vantage the fixtures lack: both ends on one
host, a 65483-byte MSS, microsecond round trips). A server answers each 4-byte request with a
response written in 4 KB pieces; with Nagle on, Linux's Minshall rule holds the rest of a response
behind its first short piece until the client's ~40 ms delayed ACK; with TCP_NODELAY nothing waits.
"""

from __future__ import annotations

import random
import socket
import threading
from pathlib import Path

import pytest

from stallscope.analyzers.analyze import analyze_file
from stallscope.capture.tcpdump import Tcpdump

pytestmark = pytest.mark.root

RESPONSES = 30
WRITE = 4096


def _serve(listener: socket.socket, nodelay: bool, sizes: list[int]) -> None:
    conn, _ = listener.accept()
    if nodelay:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with conn:
        for n in sizes:
            if not conn.recv(4):
                return
            body = b"x" * n
            for i in range(0, n, WRITE):
                conn.sendall(body[i:i + WRITE])


def _run(tmp_path: Path, nodelay: bool) -> tuple[Path, int]:
    sizes = [random.Random(7).randint(5000, 60000) for _ in range(RESPONSES)]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    pcap = tmp_path / "lo.pcap"
    dump = Tcpdump("lo", pcap, snaplen=128, bpf=f"tcp port {port}")
    dump.start()
    try:
        server = threading.Thread(target=_serve, args=(listener, nodelay, sizes), daemon=True)
        server.start()
        with socket.create_connection(("127.0.0.1", port)) as c:
            for n in sizes:
                c.sendall(b"req!")
                got = 0
                while got < n:
                    got += len(c.recv(65536))
        server.join(5)
    finally:
        dump.stop()
        listener.close()
    return pcap, port


def _server_side(pcap: Path, port: int):
    conn = analyze_file(pcap).files[0].connections[0]
    server = next(d for d in conn.directions if d.direction.startswith(f"127.0.0.1:{port} "))
    return conn, server


def test_loopback_nagle_holds_found_with_their_evidence(tmp_path: Path) -> None:
    pcap, port = _run(tmp_path, nodelay=False)
    conn, server = _server_side(pcap, port)
    held = [s for s in conn.stalls if s.dir == server.dir and s.cause == "nagle_delayed_ack"]
    # Every response longer than one piece waits once (its rest behind the first 4 KB piece).
    assert len(held) >= RESPONSES * 2 // 3, [s.cause for s in conn.stalls if s.dir == server.dir]
    assert server.profile["nagle"] == "on" and server.profile["stack"]["guess"] == "linux"
    assert conn.vantage[str(server.dir)]["path_rtt_ns"] < 1_000_000
    for s in held:
        assert s.evidence["held_segment_len"] < s.evidence["mss"]
        assert s.evidence["releasing_ack_delay_ns"] >= 30_000_000  # the client's delayed-ACK timer
    assert not conn.findings


def test_loopback_nodelay_is_a_negative_control(tmp_path: Path) -> None:
    pcap, port = _run(tmp_path, nodelay=True)
    conn, server = _server_side(pcap, port)
    assert [s.cause for s in conn.stalls if s.dir == server.dir and s.cause != "application_idle"] == []
    assert server.profile["nagle"] == "off"
    assert not conn.findings  # 4 KB segments under a 65483-byte MSS are write-sized, not an MSS mismatch
