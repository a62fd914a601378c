"""The round trip at a receiver's tap without the handshake (vantage.filled_window_lags): SunOS
sending over a T1 (1.544 Mbit/s, 20 ms each way) into a 4 KB window, captured at the receiver with
its SYNs cut. Each data segment reaches the tap 7.8 ms after the one before (its serialization), and
that spacing was read as the round trip: every 40 ms wait for the window to move was a "stall" (88
spurious `application_idle`). The window's edge times it: the data past the old edge came 48 ms
after the ACK that moved it, right behind data that had filled the window up to that edge."""

from __future__ import annotations

from pathlib import Path

from pcap_edit import drop_syns, read
from stallscope.analyzers import corpus, scoring
from stallscope.analyzers.analyze import analyze_file

_SPECS = {s.name: s for s in corpus.plan()}


def test_a_filled_window_times_the_round_trip_at_the_receiver(tmp_path: Path) -> None:
    spec = _SPECS["bulk-sunos41-serial-w8192"]
    corpus.run_trace(spec, tmp_path, tap="receiver")
    whole = tmp_path / f"{spec.name}.pcap"
    cut = tmp_path / "cut.pcap"
    drop_syns(read(whole)).write(cut)
    vantage = analyze_file(cut).to_json()["files"][0]["connections"][0]["vantage"]["0"]
    assert vantage["vantage"] == "receiver"
    handshake = analyze_file(whole).to_json()["files"][0]["connections"][0]["vantage"]["0"]["path_rtt_ns"]
    assert handshake <= vantage["path_rtt_ns"] <= 1.5 * handshake, (vantage, handshake)
    report = scoring.score_files(cut, Path(f"{whole}.truth.json")).to_json()["ground_truth"]
    assert report["totals"]["spurious"] == 0, report["totals"]


def test_a_write_that_ended_at_the_edge_did_not_fill_the_window(tmp_path: Path) -> None:
    """Negative control (drawn corpus 21, generated after the rule): 4.4BSD writing 4362 bytes every
    351 ms over FDDI into an 8 KB window, at the receiver without its SYNs. Each write's last segment
    carries PSH (BSD sets it where the send buffer emptied) and often ends within a segment (4096
    bytes) of the window's edge; the next write, 153 ms or more after an ACK, read as the round
    trip behind a filled window, and 90 of the trace's 105 stalls went unseen. A sender that emptied
    its buffer at the edge had run out of data, not of window: its PSH rules the event out."""
    from stallscope.analyzers import corpus_drawn

    (spec,) = [s for s in corpus_drawn.plan(21) if s.name == "idle-bsd44-fddi-think351ms-w4362-d21n118"]
    corpus.run_trace(spec, tmp_path, tap="receiver")
    whole = tmp_path / f"{spec.name}.pcap"
    cut = tmp_path / "cut.pcap"
    drop_syns(read(whole)).write(cut)
    vantage = analyze_file(cut).to_json()["files"][0]["connections"][0]["vantage"]["0"]
    assert vantage["path_rtt_ns"] < 5_000_000, vantage  # (the handshake's: 32 us; the data's 0.2 ms)
    report = scoring.score_files(cut, Path(f"{whole}.truth.json")).to_json()["ground_truth"]
    assert report["totals"]["recall"] >= 0.9, report["totals"]
