"""Simulated traces with their handshake cut off (a capture started mid-connection) or its options
cut by a 54-byte snaplen, scored against the simulator's truth: the round trip read from the data
when every ACK but one was held by the receiver's timer, windows read as unscaled when the flight
shows it, no jumbo-slot finding where no SYN named the link, and Moldeklev's deadlock read against
the raw window. The traces are holdout ones (analyzers/corpus_holdout.py), not the scoring
corpus's."""

from __future__ import annotations

from pathlib import Path

import pytest

import pcap_edit as pe
from stallscope.analyzers import corpus, corpus_holdout, scoring
from stallscope.analyzers.analyze import analyze_file

NAMES = ("moldeklev-bsd44-S8192-R32768-w4096", "slowreader-linux-3mbit-rcv65535-fastethernet",
         "slowreader-linux-2mbit-rcv16384-fddi", "atm-bsd44-none-400cells-s7", "sndbuf-linux20-snd4096-2m-20ms",
         "moldeklev-freebsd4-S8192-R32768-w4096", "slowreader-sunos41-2mbit-rcv16384-fddi",
         "slowreader-sunos41-3mbit-rcv65535-fastethernet", "idle-linux-think300ms-w2000",
         "idle-sunos41-think300ms-w2000")


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("no_handshake")
    for spec in corpus_holdout.plan():
        if spec.name in NAMES:
            corpus.run_trace(spec, out)
            pcap = out / f"{spec.name}.pcap"
            pe.drop_syns(pe.read(pcap)).write(out / f"{spec.name}.nosyn.pcap")
            (out / f"{spec.name}.nosyn.pcap.truth.json").write_text(Path(f"{pcap}.truth.json").read_text())
    return out


def _score(traces: Path, name: str) -> dict:
    pcap = traces / f"{name}.nosyn.pcap"
    return scoring.score_files(pcap, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]


def test_the_round_trip_is_the_fastest_ack_when_the_timer_held_the_rest(traces: Path) -> None:
    """4.4BSD writing 4 KB into an 8 KB buffer: every ACK but one waits for the peer's 200 ms tick,
    so even the 5th percentile of data-to-ACK times is 200 ms. Read as the round trip, it put the
    stall threshold at 400 ms and hid all 126 stalls."""
    name = "moldeklev-bsd44-S8192-R32768-w4096"
    timing = analyze_file(traces / f"{name}.nosyn.pcap").files[0].connections[0].vantage["0"]
    assert timing["from"] == "data" and timing["path_rtt_ns"] < 1_000_000
    report = _score(traces, name)
    assert report["totals"]["missed"] == 0, report["totals"]
    assert report["causes"]["window_update_deadlock"]["recall"] >= 0.9, report["causes"]


@pytest.mark.parametrize("name", ["slowreader-linux-3mbit-rcv65535-fastethernet",
                                  "slowreader-linux-2mbit-rcv16384-fddi"])
def test_a_window_the_flight_filled_is_read_unscaled(traces: Path, name: str) -> None:
    """A slow reader's window of Linux without scaling offered: the sender's flight stopped at the
    raw window again and again, never past it (but by the FIN's sequence number, one byte, in the
    FDDI run). Its sender_sws stalls are found as with the SYNs."""
    conn = analyze_file(traces / f"{name}.nosyn.pcap").files[0].connections[0]
    assert "window_scale_inferred" in {n.kind for n in conn.notes}
    report = _score(traces, name)
    assert report["causes"]["sender_sws"]["recall"] >= 0.9, report["causes"]
    assert report["totals"]["misattributed"] == 0


def test_no_jumbo_slot_finding_where_no_syn_named_the_link(traces: Path) -> None:
    """8232-byte datagrams through a congested ATM switch, one or two lost per timeout: without a
    SYN's MSS the link could be ATM or jumbo Ethernet, and so few per timeout is no dry slot pool."""
    f = analyze_file(traces / "atm-bsd44-none-400cells-s7.nosyn.pcap").files[0]
    assert not [x for c in f.connections for x in c.findings if x.cause == "jumbo_slot_exhaustion"]
    report = _score(traces, "atm-bsd44-none-400cells-s7")
    assert report["causes"].get("jumbo_slot_exhaustion", {}).get("reported", 0) == 0


def test_a_deadlock_needs_no_window_scale(traces: Path) -> None:
    """Linux 2.0 with a 4 KB send buffer on a 40 ms path: each short tail waits for the peer's timer
    because even the whole buffer could not make the receiver send a window update (Moldeklev's
    rule). The raw window of an unknown scale is a floor of the real one, so a buffer below the
    update threshold of the raw window is below that of the real one too: the deadlock is named
    when a 54-byte snaplen cut the SYNs' options (it was read as a plain Nagle stall)."""
    from dataclasses import replace

    name = "sndbuf-linux20-snd4096-2m-20ms"
    cap = pe.read(traces / f"{name}.pcap")
    cut = traces / f"{name}.snap54.pcap"
    replace(cap, snaplen=54, records=[r.with_data(r.data[:54]) for r in cap.records]).write(cut)
    report = scoring.score_files(cut, traces / f"{name}.pcap.truth.json").to_json()["ground_truth"]
    conn = analyze_file(cut).files[0].connections[0]
    assert "window_scale_unknown" in {n.kind for n in conn.notes}
    assert report["causes"]["window_update_deadlock"]["true"] == 73
    assert report["causes"]["window_update_deadlock"]["recall"] >= 0.9, report["causes"]
    assert report["totals"]["misattributed"] == 0


@pytest.mark.parametrize("name", ["moldeklev-freebsd4-S8192-R32768-w4096", "slowreader-sunos41-2mbit-rcv16384-fddi"])
def test_room_in_a_raw_window_is_room(traces: Path, name: str) -> None:
    """A whole send buffer of one segment out, the raw window with room for the next, the peer's
    timer releasing it: a raw window of unknown scale is a floor of the real one, so the window did
    not hold the sender and the window-update deadlock is named (every stall was undetermined).
    No SYN gave the MSS and each segment was a write's, so each verdict says the flight may have
    been a short segment Nagle held behind, its alternative."""
    report = _score(traces, name)
    assert report["causes"]["window_update_deadlock"]["recall"] >= 0.9, report["causes"]
    assert report["totals"]["misattributed"] == 0
    stalls = analyze_file(traces / f"{name}.nosyn.pcap").files[0].connections[0].stalls
    named = [s for s in stalls if s.cause == "window_update_deadlock"]
    assert named and all(s.evidence["segment_size_shown"] is False and s.alternatives[0].cause == "nagle_delayed_ack"
                         for s in named)


def test_the_round_trip_is_no_longer_than_a_prompt_ack(traces: Path) -> None:
    """SunOS sending 4 KB segments to a reader of 3 Mbit/s: the reader ACKs each segment as it reads
    it, 11 ms after it came, so even the 5th percentile of data-to-ACK times was the reader's pace
    and the stall threshold (two such round trips) hid every 11-14 ms stall. An ACK of two segments
    comes at once (0.38 ms here), so it bounds the round trip."""
    name = "slowreader-sunos41-3mbit-rcv65535-fastethernet"
    timing = analyze_file(traces / f"{name}.nosyn.pcap").files[0].connections[0].vantage["0"]
    assert timing["from"] == "data" and timing["path_rtt_ns"] < 1_000_000
    report = _score(traces, name)
    assert report["causes"]["send_buffer_limited"]["recall"] >= 0.9, report["causes"]


def test_a_writer_that_keeps_its_own_clock_is_not_reacting_to_acks(traces: Path) -> None:
    """Linux writing 2000 bytes every 300 ms: its peer ACKs the first writes at once, then by its
    40 ms timer. Without a handshake the time from each ACK to the next write read as a receiver-side
    tap's 260 ms round trip, and the think times went unseen. The writes kept their 300 ms clock
    while that "reaction" moved by the ACKs' 40 ms: a sender that reacts to ACKs moves with them, so
    no lag is read from these (vantage.paced_writers) and every think time is application_idle."""
    name = "idle-linux-think300ms-w2000"
    timing = analyze_file(traces / f"{name}.nosyn.pcap").files[0].connections[0].vantage["0"]
    assert timing["vantage"] == "sender" and timing["reaction_lag_ns"] == 0, timing
    report = _score(traces, name)
    assert report["causes"]["application_idle"]["recall"] >= 0.9, report["causes"]
    assert report["totals"]["misattributed"] == 0


def test_ttls_place_the_tap_beside_an_application_paced_sender(traces: Path) -> None:
    """SunOS writing 2000 bytes every 300 ms, each ACKed at once, 0.2 ms after it: every write
    300 ms after the ACK before it, so without a handshake the writes are as well a receiver-side
    tap's sender reacting a round trip after each ACK (nothing moved to tell them apart), and the
    idle gaps went unseen. Both ends' TTLs 64 (one network segment) tell nothing, so the control
    still misses them; with the peer 7 routers away and the sender's packets at their initial TTL,
    the tap is beside the sender and every think time is application_idle."""
    name = "idle-sunos41-think300ms-w2000"
    assert _score(traces, name)["causes"]["application_idle"]["recall"] < 0.1
    routed = traces / f"{name}.routed.nosyn.pcap"
    pe.routed_peer(pe.read(traces / f"{name}.nosyn.pcap")).write(routed)
    timing = analyze_file(routed).files[0].connections[0].vantage["0"]
    assert timing["vantage"] == "sender" and timing["reaction_lag_ns"] == 0
    report = scoring.score_files(routed, traces / f"{name}.nosyn.pcap.truth.json").to_json()["ground_truth"]
    assert report["causes"]["application_idle"]["recall"] >= 0.9, report["causes"]
    assert report["totals"]["misattributed"] == 0


def test_reopened_zero_windows_place_a_receivers_tap(tmp_path: Path) -> None:
    """fixtures/slow_reader at the receiver's tap with its SYNs dropped, TTL 64 both ways (the
    emulator forwards at layer 2): data arriving right behind the receiver's own ACKs looked like
    4 us reactions to them, the tap was taken for the sender's, and every zero-window wait became
    application_idle. Behind a zero window nothing is in flight, so the data after the ACK that
    reopened it answers that ACK: a round trip later here."""
    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    cut = pe.drop_syns(pe.read(fixtures / "slow_reader.receiver.pcap")).write(tmp_path / "nosyn.pcap")
    (conn,) = analyze_file(cut).files[0].connections
    sender = next(d for d in conn.directions if d.role == "data sender")
    assert conn.vantage[str(sender.dir)]["reaction_lag_ns"] >= 1_000_000  # the path's 2.2 ms round trip
    causes = [s.cause for s in conn.stalls]
    assert causes.count("receiver_window_limited") >= 150 and causes.count("application_idle") <= 5


def test_a_receiver_tap_without_the_handshake_reads_its_round_trip_from_timestamp_echoes(tmp_path: Path) -> None:
    """At a receiver's tap a bulk sender's data follows the receiver's ACKs within microseconds
    (data already on its way), which read a 100 ms path as a 68 us one and hid every stall behind
    that threshold. The data's TCP timestamp echo names the ACK it answered: it cannot arrive sooner
    than a round trip after that ACK left (vantage.echo_lags)."""
    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    path = pe.drop_syns(pe.read(fixtures / "small_sndbuf_long_rtt.receiver.pcap")).write(tmp_path / "r.pcap")
    (conn,) = analyze_file(path).files[0].connections
    with_syn = analyze_file(fixtures / "small_sndbuf_long_rtt.receiver.pcap").files[0].connections[0]
    d = next(x.dir for x in conn.directions if x.role == "data sender")
    got, want = conn.vantage[str(d)], with_syn.vantage[str(d)]
    assert got["vantage"] == want["vantage"] == "receiver", got
    assert abs(got["path_rtt_ns"] - want["path_rtt_ns"]) < 0.1 * want["path_rtt_ns"], (got, want)


def test_the_round_trip_is_read_from_the_fastest_acks_a_reader_did_not_pace(tmp_path: Path) -> None:
    """tests/data/linux_slow_reader_4k_20ms.pcap: real Linux, a reader of 4 KB every 20 ms on a
    2.1 ms path, at the sender, its SYNs dropped. Slow start's ten prompt ACKs show the path; the
    200 after them came with the reader's window updates, 14-20 ms after the data, so even the 5th
    percentile was the reader's pace and every 20 ms wait for the window fell under the threshold.
    A sender cannot hear an ACK sooner than a round trip after its data: the third fastest is read."""
    capture = Path(__file__).resolve().parent / "data" / "linux_slow_reader_4k_20ms.pcap"
    cut = pe.drop_syns(pe.read(capture)).write(tmp_path / "nosyn.pcap")
    (conn,) = analyze_file(cut).files[0].connections
    timing = conn.vantage["0"]
    assert timing["from"] == "data" and timing["path_rtt_ns"] < 3_000_000, timing
    with_syn = analyze_file(capture).files[0].connections[0]
    want = [s.start_ns for s in with_syn.stalls if s.cause == "receiver_window_limited"]
    got = [s.start_ns for s in conn.stalls if s.cause == "receiver_window_limited"]
    assert len(want) >= 80 and got == want


def test_a_receivers_tap_reads_its_round_trip_from_the_window_edge_moving(tmp_path: Path) -> None:
    """tests/data/linux_slow_reader_20ms_no_timestamps.receiver.pcap: real Linux, a reader of 2 KB
    every 10 ms behind a 20 ms path, TCP timestamps off, at the receiver's tap, its SYNs dropped. No
    echo and no zero window to time a reaction by: data arriving right behind the receiver's own
    ACKs read as a 17 us round trip, and each 20 ms wait for the window as a stall (211 idle gaps and
    a window_update_deadlock in the whole capture). The sender could send nothing past the window's
    edge before the ACK that moved it reached it, so the first data past it, a round trip later at
    this tap, times the reaction (vantage.edge_lags); as with the SYNs, no stall."""
    capture = Path(__file__).resolve().parent / "data" / "linux_slow_reader_20ms_no_timestamps.receiver.pcap"
    cut = pe.drop_syns(pe.read(capture)).write(tmp_path / "nosyn.pcap")
    (conn,) = analyze_file(cut).files[0].connections
    with_syn = analyze_file(capture).files[0].connections[0]
    got, want = conn.vantage["0"], with_syn.vantage["0"]
    assert got["from"] == "data" and got["vantage"] == want["vantage"] == "receiver", got
    assert abs(got["path_rtt_ns"] - want["path_rtt_ns"]) < 0.1 * want["path_rtt_ns"], (got, want)
    assert [s.cause for s in conn.stalls] == [s.cause for s in with_syn.stalls] == []
