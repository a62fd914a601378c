"""artifacts.window_releases: a window of unknown scale is read unscaled where the receiver's window
updates released a sender the raw window held. A simulated Linux 2.0 slow reader (which never
scales its window) with its handshake cut off: its raw windows are under two segments, so no flight
"fills" them as unscaled_windows counted, and every sender_sws stall was undetermined."""

from __future__ import annotations

from pathlib import Path

import pcap_edit as pe
from stallscope.analyzers import artifacts, corpus, scoring
from stallscope.analyzers.analyze import analyze_file

SPEC = corpus._bulk("slowreader", "linux20-fddi-read2048-rcv24576-1200k", personality="linux20", link="fddi",
                    read=2048, rcvbuf=24576, read_rate_bps=1_200_000, seed=11)


def _cut(tmp_path: Path) -> tuple[Path, Path]:
    corpus.run_trace(SPEC, tmp_path)
    pcap = tmp_path / f"{SPEC.name}.pcap"
    return pe.drop_syns(pe.read(pcap)).write(tmp_path / "nosyn.pcap"), Path(f"{pcap}.truth.json")


def test_window_updates_that_release_the_sender_read_the_window_unscaled(tmp_path: Path) -> None:
    cut, truth = _cut(tmp_path)
    (conn,) = analyze_file(cut).files[0].connections
    assert "window_scale_inferred" in [n.kind for n in conn.notes]
    report = scoring.score_files(cut, truth).to_json()["ground_truth"]
    assert report["causes"]["sender_sws"]["recall"] >= 0.9, report["causes"]
    assert report["totals"]["misattributed"] == 0


def test_a_flight_past_the_raw_window_is_no_release(tmp_path: Path) -> None:
    """The same capture with every window the receiver advertised halved: the sender's flight now
    runs past the raw windows, which only a scale explains; the releases are still counted but the
    windows are not read as unscaled."""
    cut, _ = _cut(tmp_path)
    cap = pe.read(cut)
    sender = pe.data_dir_key(cap)

    def halved(r):
        t = pe.tcp_of(r)
        if t is None or t.key == sender:
            return r
        at = t.tcp_off + 14
        return r.with_data(pe.set_u16(r.data, at, int.from_bytes(r.data[at:at + 2], "big") // 2))
    out = cap.replace_records([halved(r) for r in cap.records]).write(tmp_path / "halved.pcap")
    assert artifacts.window_releases(_state(out))  # the updates still release the sender
    (conn,) = analyze_file(out).files[0].connections
    assert "window_scale_inferred" not in [n.kind for n in conn.notes]


def _state(pcap: Path):
    from stallscope.analyzers import sender_state
    from stallscope.packets.decoder import read_packets
    return sender_state.sender_state(read_packets(pcap)[0])
