"""The loss rules (analyzers/causes/loss.py) on simulated traces whose ground truth knows what was
dropped: a timeout whose data had all arrived is `ack_loss_timeout` (the receiver's ACKs were due
long before the timer and were lost) or `spurious_timeout` (the timer fired before the ACK was
due), and a timeout with a hole the receiver reported (duplicate ACKs, SACK blocks) stays a loss."""

from __future__ import annotations

from pathlib import Path

import pytest

from stallscope.analyzers import corpus, scoring
from stallscope.analyzers.analyze import analyze_file

TIMEOUT_CAUSES = {"ack_loss_timeout", "spurious_timeout", "single_loss_timeout", "burst_loss_timeout"}
TRACES = [
    "loss-bsd44-ackloss",  # 4.4BSD: ACKs lost for 1.3 s, the resend's ACK covers three more segments
    "loss-sunos41-ackloss",
    "sndbuf-linux20-snd8192",  # Linux 2.0: a 300 ms RTO behind the receiver's ACK
    "reqresp-linux20-ethernet10-w4096-r64",
    "reqresp-linux20-ethernet10-w1000-r8192",  # the server's spurious timeout, seen at the client
    "loss-linux20-random3",  # a hole reported by duplicate ACKs before the stall began
    "atm-linux-epd-200cells",  # holes reported by SACK blocks on ACKs whose window changed
    "loss-linux-random3",
]


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("loss_traces")
    manifest = corpus.generate(out, jobs=1, only=TRACES)
    assert {t["name"] for t in manifest["traces"]} >= set(TRACES)
    return out


def _timeout_verdicts(pcap: Path) -> list[tuple[str, str | None]]:
    """(true cause, reported cause) of every true timeout stall of the trace."""
    truth = scoring.load_json(Path(f"{pcap}.truth.json"))
    reported = scoring.reported_intervals(analyze_file(pcap).to_json())
    out = []
    for t in scoring.truth_intervals(truth):
        if t.cause not in TIMEOUT_CAUSES:
            continue
        hits = [r for r in reported if scoring.overlaps_enough(t, r) and scoring.same_direction(t, r)]
        out.append((t.cause, hits[0].cause if hits else None))
    return out


@pytest.mark.parametrize("name", TRACES)
def test_timeouts_are_told_apart_by_what_arrived(traces: Path, name: str) -> None:
    verdicts = _timeout_verdicts(traces / f"{name}.pcap")
    assert verdicts, f"{name}: no true timeout stall"
    delivered = {"ack_loss_timeout", "spurious_timeout"}
    for true, reported in verdicts:
        if true in delivered:
            assert reported == true, verdicts
        else:
            # A real loss is never called a delivery (burst and single may be confused: a capture at
            # the sender cannot see which go-back-N resends were needed).
            assert reported not in delivered, verdicts


def test_the_delivery_evidence_is_in_the_stall(traces: Path) -> None:
    analysis = analyze_file(traces / "loss-bsd44-ackloss.pcap")
    stall = next(s for s in analysis.stalls if s.cause == "ack_loss_timeout")
    assert "covered" in stall.evidence["delivered"] and "lost" in stall.evidence["delivered"]
    assert stall.evidence["silence_before_timeout_ns"] > 500_000_000


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.parametrize("capture", ["atm_small_buffer.pcap", "atm_small_buffer.receiver.pcap"])
def test_a_window_full_of_lost_data_is_the_loss(capture: str) -> None:
    """158720 bytes out filled the receiver's window, but the cells of nearly all of them were lost:
    the timeout at frame 171 resent them. The window held none of the receiver's unread data, so
    the 46 ms wait before it is the loss episode's, not a slow receiver's."""
    analysis = analyze_file(FIXTURES / capture)
    causes = {s.cause for s in analysis.stalls if s.dir == 0}
    assert "receiver_window_limited" not in causes
    lost = [s for s in analysis.stalls if "lost_from_window" in s.evidence]
    assert lost and all(s.cause == "burst_loss_timeout" and s.evidence["lost_from_window"] > 1 for s in lost)


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _stalls(pcap: Path, cause: str) -> list:
    return [s for s in analyze_file(pcap).stalls if s.cause == cause]


def test_acks_lost_after_a_receiver_side_tap_are_named_from_the_resend() -> None:
    """fixtures/ack_loss (real Linux, only ACKs dropped on the way back): at the receiver's tap the
    data was acknowledged, then the sender resent it after its timer. The tap saw the ACKs go, so
    they were lost between it and the sender; the stall is not the application's idle time."""
    stalls = _stalls(FIXTURES / "ack_loss.receiver.pcap", "ack_loss_timeout")
    assert len(stalls) >= 2
    for s in stalls:
        e = s.evidence
        assert e["vantage"] == "receiver"
        assert e["silence_before_resend_ns"] >= 150_000_000  # a retransmission timer, not a probe
        assert e["acked_before_resend_ns"] > 2_000_000  # well over the 2 ms round trip
        assert e["first_resend_frame"] in e["resent_frames"]
    assert not _stalls(FIXTURES / "ack_loss.receiver.pcap", "application_idle")


def test_a_tail_probe_the_receiver_reported_duplicate_repairs_nothing() -> None:
    """ack_loss captured again with TCP timestamps off on both hosts, at the receiver (its first
    1000 frames): the last segment before the lost ACKs waited for the receiver's delayed ACK, and
    the sender's tail-loss probe resent it first, which the receiver answered with a DSACK. That
    resend repaired nothing, so it does not hide the timer's resends of data this tap had seen
    acknowledged (the stall was undetermined)."""
    (stall,) = _stalls(Path(__file__).parent / "data" / "linux_ack_loss_no_timestamps.receiver.pcap", "ack_loss_timeout")
    assert stall.evidence["vantage"] == "receiver" and stall.evidence["acked_before_resend_ns"] > 100_000_000


def test_a_dsack_after_a_long_silence_is_lost_acks_at_the_sender() -> None:
    """The same run at the sender: nothing came back until the resend drew a DSACK. The receiver,
    which ACKs every second segment at once, owed an ACK for the full flight within a few round
    trips; a longer silence means its ACKs were lost, not that the timer fired early."""
    stalls = _stalls(FIXTURES / "ack_loss.pcap", "ack_loss_timeout")
    assert len(stalls) >= 2
    assert all("DSACK" in s.evidence["delivered"] for s in stalls)
    assert not _stalls(FIXTURES / "ack_loss.pcap", "spurious_timeout")


def test_packets_dropped_below_a_sender_side_tap_are_a_loss_not_idle_time() -> None:
    """tests/data/linux_shaped_sender_drops.pcap: a tap on the sender's veth sees what leaves its
    tbf queue, which dropped 496 packets. The capture shows everything acknowledged, a silence, then
    the next data: the application's idle time by its look. The sender's IPv4 ids (one per packet)
    skipped the dropped ones before each silence ended: it had sent them and waited to send again."""
    stalls = analyze_file(FIXTURES.parent / "tests" / "data" / "linux_shaped_sender_drops.pcap").stalls
    lost = [s for s in stalls if s.cause == "burst_loss_timeout"]
    assert len(lost) >= 8
    assert all(s.evidence["ids_unseen"] >= 2 and s.evidence["unseen_before_frame"] == s.end_frame for s in lost)
    assert sum(s.cause == "application_idle" for s in stalls) <= 1


def test_an_id_skipped_then_seen_soon_after_was_reordered_not_lost() -> None:
    """At the receiver a resend overtaken on the path (ids 0x92df after 0x92e0 and 0x92e1, in a
    second capture of slow_reader under load) skips an id before the next data: it arrived two
    packets later, so nothing was lost. An id never seen counts."""
    from stallscope.analyzers.stalls import _ids_unseen

    rows = {"frame": [1, 2, 3, 4, 5, 6], "dir": [0, 1, 0, 0, 1, 0], "ip_id": [0x92DE, 7, 0x92E0, 0x92E1, 8, 0x92DF],
            "payload_len": [1448, 0, 1448, 1448, 0, 1448]}
    assert _ids_unseen(rows, 2, 0, 1448) == 0
    rows["ip_id"][5] = 0x92E2
    assert _ids_unseen(rows, 2, 0, 1448) == 1


def test_the_ids_a_super_frame_took_are_not_unseen_packets() -> None:
    """A receiver's tap with GRO on (Suricata's ethernet-eve test capture) sees 16413-byte frames
    whose ids step by 12: each merged twelve packets of at most the 1448-byte MSS, each numbered.
    Only an id beyond those is a packet the tap did not see."""
    from stallscope.analyzers.stalls import _ids_unseen

    rows = {"frame": [1, 2, 3], "dir": [0, 1, 0], "ip_id": [0xDCE0, 7, 0xDCEC], "payload_len": [16413, 0, 16413]}
    assert _ids_unseen(rows, 2, 0, 1448) == 0
    assert _ids_unseen(rows, 2, 0, 0) == 11  # (no segment size known: every skip counts)
    rows["ip_id"][2] = 0xDCED
    assert _ids_unseen(rows, 2, 0, 1448) == 1


DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("name", ["atm_small_buffer_lost_flight.pcap", "atm_epd_recovery_paused.pcap"])
def test_a_wait_inside_a_loss_episode_is_the_loss_repair(name: str) -> None:
    """Real Linux through the ATM switch port, SACK off (tests/data, captured again from the
    scenarios). In the first, 22 of a 24-segment flight were lost: the receiver's delayed-ACK timer
    acknowledged the one segment before the hole, and fast retransmission repaired the rest. In the
    second, the sender was in recovery and a duplicate ACK ended a 40 ms wait. Both waits are loss
    repair (the simulator's ground truth counts repairs so), not a window deadlock nor a limit of the
    receiver's window, and nothing is left undetermined."""
    causes = {s.cause for s in analyze_file(DATA / name).stalls}
    assert "burst_loss_timeout" in causes
    assert causes <= {"burst_loss_timeout", "application_idle"}, causes


def test_a_resend_that_raced_the_delayed_ack_is_a_spurious_timeout() -> None:
    """One HTTP connection of PcapPlusPlus' example2.pcap, captured at a Windows client: the
    server's 170-byte answer is acknowledged by the client's 200 ms delayed-ACK timer, and the
    server's ~290 ms retransmission timer resends it 88 ms after that ACK passed the tap, on an
    87 ms path: the ACK and the resend crossed, within the path's jitter. Read against the bare
    round trip it was an ACK lost after the tap (0.7)."""
    from stallscope.analyzers.analyze import analyze_file

    (conn,) = analyze_file(Path(__file__).parent / "data" / "http_windows_delayed_ack_races_rto.pcap").files[0].connections
    [stall] = [s for s in conn.stalls if s.cause != "application_idle"]
    assert stall.cause == "spurious_timeout"
    assert stall.alternatives[0].cause == "ack_loss_timeout"


def test_ids_skipped_for_new_data_lost_before_the_tap_are_no_timeout() -> None:
    """One HTTP download of PcapPlusPlus' example.pcap, captured at the client: four of the
    server's segments (IPv4 ids 11758-11761) are lost on the way, the next one arrives 104 ms
    later past the hole, SACK blocks follow and the four are resent without a timeout. The
    server was sending all along (the segment that ended the gap starts past the lost data), so
    the ids say nothing of a timer it waited on: the old reading was a burst_loss_timeout."""
    from stallscope.analyzers.analyze import analyze_file

    (conn,) = analyze_file(Path(__file__).parent / "data" / "http_lost_before_client_sack_repair.pcap").files[0].connections
    assert [s.cause for s in conn.stalls if s.cause != "application_idle"] == []
    sender = next(d for d in conn.directions if d.role == "data sender")
    assert sender.profile["retransmitted_packets"] >= 4


def test_a_timeouts_stall_ends_when_all_it_resent_is_acknowledged() -> None:
    """Practical Packet Analysis' telnet.pcap (first edition): the client's 26-byte keystroke is
    resent by its timer at 370 ms and acknowledged 1 ms later (the server had it: spurious), then
    the user types nothing for 5.5 s. One stall of 5.9 s charged all of it to the timeout; the
    timeout's stall now ends at that ACK and the user's pause is application_idle."""
    from stallscope.analyzers.analyze import analyze_file

    (conn,) = analyze_file(Path(__file__).parent / "data" / "ppa_telnet_spurious_then_idle.pcap").files[0].connections
    [spurious] = [s for s in conn.stalls if s.cause == "spurious_timeout"]
    assert spurious.end_frame == 54 and spurious.time_lost_ns < 400_000_000
    [idle] = [s for s in conn.stalls if s.start_frame == 54]
    assert idle.cause == "application_idle" and idle.evidence["after_stall"] == "spurious_timeout"
    assert idle.end_ns - idle.start_ns > 5_000_000_000


def test_a_mirror_ports_late_copies_are_no_retransmissions() -> None:
    """The same telnet capture holds each of the client's keystrokes twice, the copy 1.2-1.6 ms late
    and cut short (its wire length 66 bytes under an IPv4 total length of 137): the same IPv4 id and
    TCP timestamp, so the same packet, not a resend (tshark, reading the cut copy as empty, flags
    none of them). Only the timer's one resend of frame 51 is a retransmission."""
    from stallscope.analyzers.analyze import analyze_file

    f = analyze_file(Path(__file__).parent / "data" / "ppa_telnet_spurious_then_idle.pcap").files[0]
    (conn,) = f.connections
    assert next(n for n in conn.notes if n.kind == "duplicate_frames").count == 5
    client = next(d for d in conn.directions if d.dir == 0)
    assert client.profile["retransmitted_packets"] == 1


def test_a_syn_resent_by_its_timer_is_a_single_loss() -> None:
    """suricata-verify's bug-5486 154.pcap (its first 40 frames, cut to 96 bytes), at an infected
    client 159 ms from its server: the SYN goes unanswered, the client's timer sends it again 3 s
    later, and the SYN/ACK comes 159 ms after that. Timed from the first SYN the path was 3.2 s (a
    6 s stall threshold hid the wait); timed from the second, the wait from the first SYN to the
    first data read as a Nagle hold of the request behind the SYN's one sequence number."""
    (conn,) = analyze_file(Path(__file__).parent / "data" / "http_syn_resent_after_3s.pcap").files[0].connections
    assert 150_000_000 < conn.vantage["0"]["path_rtt_ns"] < 170_000_000
    first = conn.stalls[0]
    assert (first.cause, first.start_frame, first.end_frame) == ("single_loss_timeout", 1, 5)
    assert first.evidence["first_timeout_frame"] == 2
    assert "nagle_delayed_ack" not in {s.cause for s in conn.stalls}


def test_a_syn_ack_later_than_half_the_syn_timer_leaves_the_round_trip_to_the_data() -> None:
    """Karn's rule for the handshake: a SYN/ACK 3.96 s after a SYN resent 3.01 s after the first
    (suricata-verify's tcp-rst-unacked-stream-10, whose data show a 450 ms path) may answer either
    SYN, or neither at once; one 18 ms after the resend answers the resend. Copies of a SYN closer
    than any timer (two capture points, nDPI's imaps.pcap) are one SYN."""
    import polars as pl

    from stallscope.analyzers.vantage import handshake_times

    s = 1_000_000_000
    rows = [(0, 0, True, False, 0), (0, 0, True, False, 3_010_000_000), (0, 1, True, True, 6_970_000_000),
            (0, 0, False, True, 6_980_000_000),
            (1, 0, True, False, 0), (1, 0, True, False, 3 * s), (1, 1, True, True, 3 * s + 18_000_000),
            (1, 0, False, True, 3 * s + 18_100_000),
            # a SYN seen twice 1.5 ms apart (a second capture point's copy, no timer's): the first copy
            (2, 0, True, False, 0), (2, 0, True, False, 1_500_000), (2, 1, True, True, 76_000_000),
            (2, 0, False, True, 76_100_000)]
    state = pl.DataFrame(rows, schema={"stream": pl.UInt32, "dir": pl.UInt8, "flag_syn": pl.Boolean,
                                       "flag_ack": pl.Boolean, "ts_ns": pl.Int64}, orient="row")
    hs = {r["stream"]: r for r in handshake_times(state).iter_rows(named=True)}
    assert set(hs) == {1, 2}
    assert hs[1]["t_syn"] == 3 * s and hs[1]["t_synack"] - hs[1]["t_syn"] == 18_000_000
    assert hs[2]["t_syn"] == 0


def test_a_syn_seen_twice_by_two_capture_points_is_no_resend() -> None:
    """One IMAPS connection of nDPI's imaps.pcap (cut to 96 bytes): every packet appears twice, 1-5
    ms apart (two capture points merged), the SYN and the SYN/ACK among them. A resent SYN counts as
    a timeout in the stall it opens only when its timer could have sent it (TIMEOUT_FLOOR_NS after
    the first): read as resends, the copies made a burst_loss_timeout and a single_loss_timeout."""
    (conn,) = analyze_file(Path(__file__).parent / "data" / "ndpi_imaps_two_capture_points.pcap").files[0].connections
    assert not {"single_loss_timeout", "burst_loss_timeout"} & {s.cause for s in conn.stalls}
