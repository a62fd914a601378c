"""A path MTU black hole seen from the receiver's host: the handshake passes, the full-size data never
arrives, and minutes later the sender's reset does, its sequence number past everything seen (the
classic "download hangs after the handshake" seen at the client). The tap saw no data outstanding,
so no stall candidate marked the wait: the finding's silence is the stall (analyze._far_side_silences).
Scored against the simulator's ground truth, traces at the receiver's tap (`BulkConfig.tap`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stallscope.analyzers import corpus, scoring
from stallscope.analyzers.analyze import analyze_file


def _rx_trace(tmp_path: Path, personality: str, link: str, impairments: dict) -> Path:
    spec = corpus._bulk("pmtu", f"{personality}-{link}-rx", personality=personality, link=link, seed=7,
                        impairments=impairments)
    corpus.run_trace(spec, tmp_path, tap="receiver")
    return tmp_path / f"{spec.name}.pcap"


@pytest.mark.parametrize("personality,link,mtu", [("linux", "fddi", 1500), ("freebsd4", "fastethernet", 1400),
                                                  ("linux20", "fastethernet", 1280)])
def test_the_silence_a_black_hole_left_at_the_receiver_is_its_stall(tmp_path: Path, personality: str, link: str,
                                                                     mtu: int) -> None:
    """Every full-size segment dropped by a hop (1500 under FDDI's 4352, 1400 and 1280 under
    Ethernet's 1500: the reset's sequence number then runs one segment, 1448-1460 bytes, past the
    handshake, under the 1500 bytes the rule first asked for). No stall was reported at all."""
    pcap = _rx_trace(tmp_path, personality, link, {"pmtu_mtu": mtu, "pmtu_mode": "blackhole"})
    (conn,) = analyze_file(pcap).files[0].connections
    assert conn.vantage["0"]["vantage"] == "receiver"
    (stall,) = [s for s in conn.stalls if s.dir == 0]
    assert stall.cause == "pmtu_blackhole"
    assert stall.duration_ns > 100_000_000_000  # the sender's retries, to its reset
    # Its IPv4 ids skipped the resends that never arrived, and the text says so.
    assert stall.evidence["ip_ids_skipped"] >= 5
    from stallscope.analyzers.analysis_text import _evidence_line
    assert "never reached this tap" in _evidence_line(stall), _evidence_line(stall)
    report = scoring.score_files(pcap, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]
    assert report["causes"]["pmtu_blackhole"]["recall"] == 1.0, report
    assert report["totals"]["spurious"] == 0


def test_a_short_tail_through_a_hole_that_never_filled(tmp_path: Path) -> None:
    """Linux writes 8 KB behind a 1400-byte hop: five full segments vanish, the write's 952-byte tail
    passes, the receiver asks for byte 1 until the sender resets 140 s later. The data seen lies past
    a hole nothing filled (`_unfilled_hole`), and the reset's number is behind the data seen."""
    pcap = _rx_trace(tmp_path, "linux", "fastethernet", {"pmtu_mtu": 1400, "pmtu_mode": "blackhole"})
    (conn,) = analyze_file(pcap).files[0].connections
    (finding,) = conn.findings
    assert finding.cause == "pmtu_blackhole" and finding.evidence["bytes_never_seen"] >= 1448
    (stall,) = [s for s in conn.stalls if s.dir == 0]
    assert stall.cause == "pmtu_blackhole" and stall.duration_ns > 100_000_000_000


def test_the_same_transfer_through_a_clean_path_has_no_black_hole(tmp_path: Path) -> None:
    """Negative control: the same receiver-side capture with the hop's MTU at the link's own, and
    with random loss that the resends repair (they arrive, so nothing is lost for its size)."""
    for impairments in ({"pmtu_mtu": 1500, "pmtu_mode": "blackhole"}, {"loss": 0.03}):
        pcap = _rx_trace(tmp_path, "linux", "fastethernet", impairments)
        analysis = analyze_file(pcap)
        assert not [f for c in analysis.files[0].connections for f in c.findings if f.cause == "pmtu_blackhole"]
        assert not [s for s in analysis.stalls if s.cause == "pmtu_blackhole"]


def test_a_close_right_after_one_missing_packet_is_no_black_hole(tmp_path: Path) -> None:
    """Negative control: the handshake, then the client's FIN 3 ms later numbered 722 bytes on, with
    the one data packet between missing (nDPI's ftp.pcap with every third frame left out: a data
    connection of one 722-byte segment). The sender waited for no timer: whatever the tap missed,
    nothing shows it was lost for its size. (Named a black hole once the rule counted runs of 536
    bytes, under the 1500 it asked before.)"""
    import dpkt

    from pcap_edit import tcp_frame as frame

    c, s = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    A, SYN, FIN = dpkt.tcp.TH_ACK, dpkt.tcp.TH_SYN, dpkt.tcp.TH_FIN
    path = tmp_path / "one_missing.pcap"
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f)
        w.writepkt(frame(c, s, 20000, 21, 100, 0, SYN, 10), 1.0)
        w.writepkt(frame(s, c, 21, 20000, 900, 101, SYN | A, 50), 1.010)
        w.writepkt(frame(c, s, 20000, 21, 101, 901, A, 11), 1.020)
        w.writepkt(frame(c, s, 20000, 21, 101 + 722, 901, FIN | A, 13), 1.023)
    analysis = analyze_file(path)
    assert [x.cause for x in analysis.files[0].connections[0].findings] == []
    assert [x.cause for x in analysis.stalls if x.cause == "pmtu_blackhole"] == []
