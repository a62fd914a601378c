"""vantage.resend_rtts: without the handshake, the round trip from the ACK of a resend that nothing
else answered, where every ACK Karn's rule keeps was the receiver's timer's. FreeBSD over ATM (the
scoring corpus's EPD run), handshake cut: a flight of one segment at a time, each ACKed by the
peer's 100 ms timer, so the path read as 101 ms and every 101 ms window-update deadlock hid under
that threshold; the resends after a second's silence were ACKed 1.26 ms later."""

from __future__ import annotations

from pathlib import Path

import pcap_edit as pe
from stallscope.analyzers import corpus, scoring, vantage
from stallscope.analyzers.analyze import analyze_file

NAME = "atm-freebsd4-epd-200cells"


def test_the_ack_of_a_resend_after_a_silence_shows_the_path(tmp_path: Path) -> None:
    (spec,) = [s for s in corpus.plan() if s.name == NAME]
    corpus.run_trace(spec, tmp_path)
    pcap = tmp_path / f"{spec.name}.pcap"
    cut = pe.drop_syns(pe.read(pcap)).write(tmp_path / "nosyn.pcap")
    (conn,) = analyze_file(cut).files[0].connections
    assert conn.vantage["0"]["path_rtt_ns"] < vantage.DELAYED_ACK_NS, conn.vantage["0"]
    report = scoring.score_files(cut, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]
    assert report["causes"]["window_update_deadlock"]["recall"] >= 0.9, report["causes"]
    assert report["totals"]["missed"] == 0, report["totals"]
