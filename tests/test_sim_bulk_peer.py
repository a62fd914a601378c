"""A simulated bulk run's pcap, read by tshark: the simulator's TCP is well-formed on the wire."""

import shutil
import subprocess

import pytest

from stallscope.simulate.run_bulk import BulkConfig, run_bulk

pytestmark = [pytest.mark.peer, pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")]


def _tshark(pcap, *args):
    return subprocess.run(["tshark", "-n", "-r", str(pcap), *args], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("personality", ["sunos41", "freebsd4", "linux"])
def test_tshark_sees_the_transfer_without_analysis_anomalies(tmp_path, personality):
    """Peer: tshark's TCP analysis finds no retransmission, duplicate ACK or out-of-order flag in a
    loss-free run, and its sequence analysis counts the bytes the receiver read."""
    pcap = tmp_path / "bulk.pcap"
    r = run_bulk(BulkConfig(personality=personality, sndbuf=16384, rcvbuf=32768, bytes=300_000), pcap=pcap)
    assert r.bytes == 300_000
    flagged = _tshark(pcap, "-Y", "tcp.analysis.retransmission or tcp.analysis.duplicate_ack "
                                  "or tcp.analysis.out_of_order or tcp.analysis.lost_segment")
    assert flagged.strip() == ""
    lens = _tshark(pcap, "-Y", "ip.src == 10.0.0.1", "-T", "fields", "-e", "tcp.len")
    assert sum(int(x) for x in lens.split()) == 300_000
    assert len(_tshark(pcap, "-T", "fields", "-e", "frame.number").split()) == r.packets
