"""Two capture points merged with clocks apart (or a capture that stamps one direction late): the
data receiver's packets of a recorded capture stamped 3 ms late. Wherever a tap sits, an ACK that
opens a window passes it before the data sent into the window; here the data past every edge the
peer had advertised shows 3 ms before the ACK that opened it, again and again, and the slow reader's
172 window-limited stalls read as 130 `application_idle` ones. The connection gets note
`clock_offset` and no stall of it a cause (artifacts.disordered_streams; the rules' reading is kept
as an alternative)."""

from __future__ import annotations

from pathlib import Path

from pcap_edit import clock_offset, read, sampled
from stallscope.analyzers.analyze import analyze_file

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _notes(analysis) -> set[str]:
    return {n.kind for c in analysis.files[0].connections for n in c.notes}


def test_a_receivers_clock_3_ms_late_names_no_cause(tmp_path: Path) -> None:
    out = clock_offset(read(FIXTURES / "slow_reader.pcap"), 3_000_000).write(tmp_path / "late.pcap")
    analysis = analyze_file(out)
    assert "clock_offset" in _notes(analysis)
    assert {s.cause for s in analysis.stalls} == {"undetermined"}
    # What the packets in their captured order show is kept, as an alternative only (it is the
    # misreading: the window's waits as the application's).
    assert all(s.alternatives for s in analysis.stalls)
    (note,) = [n for c in analysis.files[0].connections for n in c.notes if n.kind == "clock_offset"]
    assert "by a median 2.9" in note.message or "by a median 3.0" in note.message, note.message


def test_acks_stamped_early_before_their_data_are_read_the_same(tmp_path: Path) -> None:
    """The other way: the receiver's packets 3 ms early on nagle_4k_jumbo's 1 ms path put each ACK
    before the response it acknowledges (before: the 23 Nagle holds undetermined, and 40 idle
    periods named from the misordered packets)."""
    out = clock_offset(read(FIXTURES / "nagle_4k_jumbo.pcap"), -3_000_000).write(tmp_path / "early.pcap")
    analysis = analyze_file(out)
    assert "clock_offset" in _notes(analysis)
    assert {s.cause for s in analysis.stalls} == {"undetermined"}


def test_the_recorded_and_a_sampled_capture_are_not_read_as_clocked_apart(tmp_path: Path) -> None:
    """Negative controls: the capture as recorded, and with every third frame left out (whose
    window overruns, the ACKs the capture dropped, lead by varying times)."""
    assert "clock_offset" not in _notes(analyze_file(FIXTURES / "slow_reader.pcap"))
    out = sampled(read(FIXTURES / "slow_reader.pcap")).write(tmp_path / "sampled.pcap")
    assert "clock_offset" not in _notes(analyze_file(out))
