"""A lost ACK shown by the peer's IPv4 ids (causes/loss._ack_lost): at the sender's tap a receiver
that got the data and whose ACK was lost leaves a gap in its ids (it sent a packet the tap never
saw), where one that got nothing sent nothing. SunOS over FDDI with 9 % of ACKs lost on the way back
(drawn corpus 19, one 4 KB segment out at a time): all 25 ACK-loss timeouts were read as data loss,
the resend's ACK being no different."""

from __future__ import annotations

from pathlib import Path

from stallscope.analyzers import corpus, corpus_drawn, scoring


def _report(tmp_path: Path, spec) -> dict:
    corpus.run_trace(spec, tmp_path)
    pcap = tmp_path / f"{spec.name}.pcap"
    return scoring.score_files(pcap, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]


def test_timeouts_after_lost_acks_are_named_from_the_peers_ids(tmp_path: Path) -> None:
    spec = next(s for s in corpus_drawn.plan(19) if s.name.startswith("loss-sunos41-fddi-ackloss0.09"))
    causes = _report(tmp_path, spec)["causes"]
    assert causes["ack_loss_timeout"]["true"] >= 20
    assert causes["ack_loss_timeout"]["recall"] == 1.0 and causes["ack_loss_timeout"]["precision"] == 1.0, causes


def test_data_lost_on_the_way_leaves_no_gap_in_the_peers_ids(tmp_path: Path) -> None:
    # Random loss of 3 % of the data segments, SunOS on Ethernet (the scoring corpus's): no ACK lost.
    spec = next(s for s in corpus.plan() if s.name == "loss-sunos41-random3")
    causes = _report(tmp_path, spec)["causes"]
    assert "ack_loss_timeout" not in causes, causes
    lost = causes["single_loss_timeout"]
    assert lost["true"] >= 5 and lost["recall"] == 1.0, causes
