"""A capture that missed packets throughout (sampled, or dropped by a capture host under load): every
third frame of a recorded capture left out. Its ACKs then cover data it never showed on a third of
their advances, and the packets the cause rules read (the ACK that released a segment, the window
before it) are missing at random: a cause read from what is left is a guess. Each such stall is
`undetermined` with the share in its reason, the rules' reading kept as an alternative
(artifacts.sampled_streams). A capture that missed a packet here and there keeps its causes."""

from __future__ import annotations

from pathlib import Path

from pcap_edit import read
from stallscope.analyzers.analyze import analyze_file

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _every_third_left_out(name: str, out: Path) -> Path:
    cap = read(FIXTURES / name)
    return cap.replace_records([r for i, r in enumerate(cap.records) if i % 3 != 2]).write(out / name)


def test_a_sampled_slow_reader_names_no_window_limit(tmp_path: Path) -> None:
    """slow_reader.pcap (real Linux, a reader of 64 KB every 400 ms): whole, its stalls are
    receiver_window_limited; with a third of its frames gone, 42 of them still were."""
    whole = analyze_file(FIXTURES / "slow_reader.pcap")
    assert "receiver_window_limited" in {s.cause for s in whole.stalls}
    sampled = analyze_file(_every_third_left_out("slow_reader.pcap", tmp_path))
    causes = {s.cause for s in sampled.stalls}
    assert causes <= {"undetermined", "application_idle"}, causes
    missed = [s for s in sampled.stalls if "sampled or lossy capture" in s.evidence.get("reason", "")]
    assert missed and all(s.alternatives for s in missed)
    assert "receiver_window_limited" in {a.cause for s in missed for a in s.alternatives}


def test_one_packet_missed_keeps_the_causes(tmp_path: Path) -> None:
    """Negative control: the same capture with one data frame left out keeps its window-limited
    stalls (the gap is the capture's, local, and the per-stall check handles it)."""
    cap = read(FIXTURES / "slow_reader.pcap")
    records = list(cap.records)
    del records[len(records) // 2]
    out = cap.replace_records(records).write(tmp_path / "one.pcap")
    assert "receiver_window_limited" in {s.cause for s in analyze_file(out).stalls}
