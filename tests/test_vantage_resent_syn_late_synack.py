"""A handshake whose SYN was resent times the path only as well as its SYN/ACK answered the last
SYN (Karn). 4.4BSD over FDDI losing a tenth of its peer's packets: the first SYN/ACK was lost and
the one that came, 233 ms after the resent SYN, was the peer's own resend; read as a 233 ms round
trip on a 0.4 ms path, every ACK that came back 1 ms after a timeout's resend looked sooner than a
round trip, so the original had arrived, and each ACK-loss timeout was called spurious. At the
sender's tap no data is ACKed sooner than a round trip: data ACKed in under half the handshake's
time shows the SYN/ACK came late."""

from __future__ import annotations

from pathlib import Path

from stallscope.analyzers import corpus, scoring
from stallscope.analyzers.analyze import analyze_file


def test_data_acked_faster_than_a_late_synack_times_the_path(tmp_path: Path) -> None:
    spec = corpus._bulk("loss", "bsd44-fddi-ackloss0.1", personality="bsd44", link="fddi", bytes=1024 * corpus.KB,
                        seed=4638, impairments={"reverse_loss": 0.1})
    corpus.run_trace(spec, tmp_path)
    pcap = tmp_path / f"{spec.name}.pcap"
    (conn,) = analyze_file(pcap).files[0].connections
    timing = conn.vantage["0"]
    assert timing["from"] == "handshake" and timing["path_rtt_ns"] < 1_000_000, timing
    report = scoring.score_files(pcap, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]
    assert report["causes"]["ack_loss_timeout"]["recall"] >= 0.9, report["causes"]
    assert "spurious_timeout" not in [s.cause for s in conn.stalls]
