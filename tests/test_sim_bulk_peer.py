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


def test_tshark_reads_the_sack_blocks_the_simulator_sent(tmp_path):
    """Peer: tshark decodes SACK-permitted in both SYNs and, on every ACK that carries blocks, the
    same left and right edges (relative to the sender's ISN) as the simulated segments."""
    pcap = tmp_path / "sack.pcap"
    r = run_bulk(BulkConfig(personality="linux", link="ethernet10", bytes=300_000, write=65536, read=65536),
                 pcap=pcap, impairments={"drop_nth": (50, 51, 52, 90), "loss_data_only": True})
    isn = next(s.seq for _, s in r.records if s.src == "10.0.0.1")  # the sender's SYN
    want = [[(a - isn, b - isn) for a, b in s.sack] for _, s in r.records if s.sack]
    assert want
    perm = _tshark(pcap, "-Y", "tcp.flags.syn == 1 and tcp.options.sack_perm", "-T", "fields", "-e", "frame.number")
    assert len(perm.split()) == 2
    out = _tshark(pcap, "-o", "tcp.relative_sequence_numbers:TRUE", "-Y", "tcp.options.sack_le", "-T", "fields",
                  "-e", "tcp.options.sack_le", "-e", "tcp.options.sack_re")
    got = []
    for line in out.splitlines():
        le, re_ = line.split("\t")
        got.append(list(zip(map(int, le.split(",")), map(int, re_.split(",")))))
    assert got == want
