"""A capture filtered to connections' set-up and tear-down (tcpdump 'tcp[tcpflags] & (tcp-syn|tcp-fin|
tcp-rst) != 0', a common way to log connections cheaply): every client's FIN carries a sequence
number thousands of bytes past its handshake, since its data was never kept. That is the far-side
black hole's picture (numbers run ahead, no data seen), and it was named pmtu_blackhole on 18 of the
29 connections of suricata-verify's smb-filename capture filtered this way, and 64 stalls across 12
public captures once the black hole's silence became a stall. A connection with none but SYN, FIN
and RST packets shows nothing of its data: note `control_only`, and no finding."""

from __future__ import annotations

from pathlib import Path

import dpkt

from pcap_edit import tcp_frame as _frame
from stallscope.analyzers.analyze import analyze_file

CLIENT, SERVER = bytes([10, 4, 30, 101]), bytes([10, 4, 30, 5])


def _control_only(path: Path, connections: int = 8) -> Path:
    """Per connection: the client's SYN, the server's SYN/ACK, and 2 s later the client's FIN 12,266
    bytes on (what it sent in between was filtered out; the server sent nothing), as the flags filter
    keeps them."""
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f)
        for i in range(connections):
            t0, port = 10.0 * i, 49191 + i
            w.writepkt(_frame(CLIENT, SERVER, port, 445, 1000, 0, dpkt.tcp.TH_SYN, 100 * i), t0)
            w.writepkt(_frame(SERVER, CLIENT, 445, port, 5000, 1001, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, 7000 + i),
                       t0 + 0.0007)
            w.writepkt(_frame(CLIENT, SERVER, port, 445, 1001 + 12266, 5001,
                              dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK, 100 * i + 40), t0 + 2.0)
    return path


def test_a_capture_of_syns_fins_and_resets_names_no_black_hole(tmp_path: Path) -> None:
    analysis = analyze_file(_control_only(tmp_path / "flags.pcap"))
    (f,) = analysis.files
    assert "control_only" in {n.kind for n in f.notes}
    assert [x.cause for c in f.connections for x in c.findings] == []
    assert [s.cause for s in analysis.stalls if s.cause == "pmtu_blackhole"] == []


def test_one_such_connection_among_others_is_no_black_hole_either(tmp_path: Path) -> None:
    """Too few packets for the file's note: the connection's own packets (none without SYN, FIN or
    RST on either side) rule the reading out."""
    analysis = analyze_file(_control_only(tmp_path / "one.pcap", connections=1))
    assert [x.cause for c in analysis.files[0].connections for x in c.findings] == []
