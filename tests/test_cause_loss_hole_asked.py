"""An ACK that still asked for the first byte resent, a round trip after the flight left, shows the
receiver lacked that segment: data was lost, not the ACKs. SunOS over ATM, cells dropped at a
197-cell switch port: each loss of a 9204-byte segment drew from the receiver a window update (the
same ACK with a larger window, 1.4 ms after the flight on a 0.06 ms path), not a duplicate ACK by
RFC 5681's letter; the ACK after the timeout's resend covered the segment behind it, and with "no
duplicate ACK" the analyzer called all of it delivered and its ACKs lost (5 ack_loss_timeout for
the truth's single_loss_timeout). Scored against the simulator's truth."""

from __future__ import annotations

from pathlib import Path

from stallscope.analyzers import corpus, scoring


def test_a_window_update_asking_for_the_lost_byte_is_data_loss(tmp_path: Path) -> None:
    spec = corpus._bulk("atm", "sunos41-none-197cells-107m-b24576", personality="sunos41", link="atm140",
                        bytes=512 * corpus.KB, sndbuf=24576, rcvbuf=24576, seed=1248,
                        impairments={"atm_switch": {"buffer_bytes": 48 * 197, "out_rate_bps": 107_000_000,
                                                    "policy": "none"}})
    corpus.run_trace(spec, tmp_path)
    pcap = tmp_path / f"{spec.name}.pcap"
    report = scoring.score_files(pcap, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]
    assert report["causes"]["single_loss_timeout"]["recall"] >= 0.9, report["causes"]
    assert (report["causes"].get("ack_loss_timeout") or {}).get("reported", 0) == 0, report["causes"]
