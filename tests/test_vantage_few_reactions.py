"""A reaction lag is read from new data right after the peer's pure ACKs (native sender state: not
after the peer's data, which a request or a reply answers), and only where that happened
REACTIONS_MIN times or more. A naglemark client at the server's tap, handshake cut, sends each
request a 30 ms think time after the last reply: those four "reactions" read as the path put the
tap at the client's receiver, and every think time hid under that round trip. (In public captures
one or two such anecdotes read loopback OpenFlow sessions' round trips as 0.8-486 s and a FIX
session's as 6.2 s.)"""

from __future__ import annotations

from pathlib import Path

import pcap_edit as pe
from stallscope.analyzers import corpus, scoring, vantage
from stallscope.analyzers.analyze import analyze_file


def test_one_request_after_an_ack_is_no_round_trip(tmp_path: Path) -> None:
    spec = corpus._naglemark("bsd44", "E+M", "fddi", "R", 34, think_ms=30)
    corpus.run_trace(spec, tmp_path)
    pcap = tmp_path / f"{spec.name}.pcap"
    cut = pe.drop_syns(pe.read(pcap)).write(tmp_path / "nosyn.pcap")
    (conn,) = analyze_file(cut).files[0].connections
    client = conn.vantage["0"]
    assert client["reaction_lag_ns"] < vantage.DELAYED_ACK_NS and client["path_rtt_ns"] < vantage.DELAYED_ACK_NS, client
    report = scoring.score_files(cut, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]
    assert report["causes"]["application_idle"]["recall"] >= 0.9, report["causes"]
    assert report["totals"]["misattributed"] == 0
