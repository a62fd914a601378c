"""Path causes on simulated traces: a PMTU black hole is named for every stall it causes, the first
one included when the stack re-cuts its first resend into a larger segment (4.4BSD after a
timeout sends from snd_una as much as its MSS allows, so the resend also carries new data)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from stallscope.analyzers import corpus, scoring
from stallscope.analyzers.analyze import analyze_file


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("path_traces")
    corpus.generate(out, jobs=1, only=["pmtu-bsd44-fddi-blackhole", "pmtu-linux-fddi-blackhole"])
    return out


@pytest.mark.parametrize("name", ["pmtu-bsd44-fddi-blackhole", "pmtu-linux-fddi-blackhole"])
def test_every_black_hole_stall_is_named(traces: Path, name: str) -> None:
    pcap = traces / f"{name}.pcap"
    report = scoring.score_files(pcap, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]
    assert report["causes"]["pmtu_blackhole"]["recall"] == 1.0, report["stalls"]
    assert report["totals"]["spurious"] == 0 and report["totals"]["misattributed"] == 0


def test_a_recut_first_resend_is_the_timeout(traces: Path) -> None:
    stalls = analyze_file(traces / "pmtu-bsd44-fddi-blackhole.pcap").stalls
    first = min(stalls, key=lambda s: s.start_ns)
    assert first.cause == "pmtu_blackhole"
    # Frame 5 resends bytes 1..2048 of frame 4 and carries 2049..4096 new: the timer's resend.
    assert first.evidence["first_timeout_frame"] == first.end_frame == 5
    # GigaTCP's MSS offered and never used costs no stall, so it is no alternative to a black hole.
    assert {a.cause for a in first.alternatives} <= {"burst_loss_timeout", "single_loss_timeout"}


def test_segments_cut_by_a_small_window_are_no_mss_mismatch() -> None:
    """Real Linux into a receiver with a 1460-byte window (tests/data): the sender cuts its segments
    to half of it (730 bytes, tcp_bound_to_half_wnd) under the 1460-byte MSS both SYNs offered. The
    window sized them, not an unused MSS: no mss_mismatch (it was reported before)."""
    data = Path(__file__).resolve().parent / "data" / "linux_small_receive_buffer.pcap"
    analysis = analyze_file(data)
    (conn,) = analysis.files[0].connections
    sender = next(d for d in conn.directions if d.role == "data sender")
    assert sender.profile["max_segment"] == 730 and sender.profile["mss_offered_by_peer"] == 1460
    assert sender.profile["peer_receive_window_max"] == 1460
    assert conn.findings == [] and analysis.stalls == []


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _late_first_data(tmp_path: Path, skip_ids: int) -> Path:
    """fixtures/mss_mismatch.receiver.pcap with everything from the first data on arriving 2 ms
    later (path jitter the user-space emulator showed in a second capture of the same scenario: the
    first data 1.24 ms behind the handshake on a 2.4 ms round trip), and the sender's IPv4 ids from
    the first data on moved by `skip_ids` (packets numbered and never seen)."""
    import pcap_edit as pe

    cap = pe.read(FIXTURES / "mss_mismatch.receiver.pcap")
    sender = pe.data_dir_key(cap)
    out, late = [], False
    for r in cap.records:
        t = pe.tcp_of(r)
        late = late or (t is not None and t.key == sender and t.payload_len > 0)
        if late:
            r = cap.at(r, cap.ts(r) + 2_000_000)
            if t is not None and t.key == sender and skip_ids:
                ip_id = int.from_bytes(r.data[t.ip_off + 4:t.ip_off + 6], "big")
                r = r.with_data(pe.set_u16(r.data, t.ip_off + 4, (ip_id + skip_ids) % 65536))
        out.append(r)
    return cap.replace_records(out).write(tmp_path / f"late_{skip_ids}.pcap")


def test_a_receiver_sees_the_unused_mss_behind_late_first_data_when_no_id_is_skipped(tmp_path: Path) -> None:
    """From the receiver, IPv4 ids that count up with none skipped before the first data show that
    nothing larger was sent and lost: the finding stands even when jitter delays that data."""
    (conn,) = analyze_file(_late_first_data(tmp_path, 0)).files[0].connections
    assert [f.cause for f in conn.findings] == ["mss_mismatch"]


def test_a_receiver_names_no_unused_mss_when_ids_were_skipped(tmp_path: Path) -> None:
    """The same with three ids skipped before the first data: three packets were sent that never
    arrived (larger attempts lost on the path, then the MSS lowered): no mss_mismatch."""
    (conn,) = analyze_file(_late_first_data(tmp_path, 3)).files[0].connections
    assert "mss_mismatch" not in [f.cause for f in conn.findings]


def _jumbo_rows(small_resend_seq: int) -> pl.DataFrame:
    """A jumbo sender (8948-byte segments) whose segments at the hole were resent after two
    timeouts, then one 1104-byte piece resent at `small_resend_seq` while the peer's cumulative ACK
    stood at 100,000 (a resend spanning it fills the hole; above it is go-back-N, wholly below it a
    resend of data the peer had)."""
    seg, rows = 8948, []
    for i in range(40):
        rows.append({"seq_rel": 1 + i * seg, "payload_len": seg, "ip_len": seg + 52, "retransmission": False,
                     "retrans_kind": None, "snd_una": 1})
    for i, kind in enumerate(["timeout", "timeout", "fast", "fast"]):
        rows.append({"seq_rel": 1 + i * seg, "payload_len": seg, "ip_len": seg + 52, "retransmission": True,
                     "retrans_kind": kind, "snd_una": 1 + i * seg})
    rows.append({"seq_rel": small_resend_seq, "payload_len": 1104, "ip_len": 1156, "retransmission": True,
                 "retrans_kind": "other", "snd_una": 100_000})
    return pl.DataFrame(rows)


def test_a_small_frame_resent_past_the_hole_is_no_small_frame_lost() -> None:
    """Jumbo slots lose only large frames. After a timeout Linux without SACK resends past the hole
    (go-back-N), and a second capture of jumbo_slots had one 1104-byte piece among 1,483 resends
    (the receiver already had it: the ACK jumped past it). Only a small resend that fills the hole
    the peer's ACK points at shows a small frame lost."""
    from stallscope.analyzers.causes.path import _jumbo_slots

    profile = {"max_ip_len": 9000, "mss_advertised": 8960, "mss_offered_by_peer": 8960}
    found = _jumbo_slots(_jumbo_rows(small_resend_seq=200_001), profile, None)
    assert found is not None and found[0] == "jumbo_slot_exhaustion"
    assert found[2]["small_frames_resent_past_the_hole"] == 1 and found[2]["lost_large_frames"] == 4
    assert _jumbo_slots(_jumbo_rows(small_resend_seq=100_000), profile, None) is None
    # Wholly below the ACK (the peer had it: jumbo_slots captured again at the receiver resent a
    # 604-byte tail the sender then knew acknowledged) it filled no hole either.
    found = _jumbo_slots(_jumbo_rows(small_resend_seq=100_000 - 2000), profile, None)
    assert found is not None and found[0] == "jumbo_slot_exhaustion"


def test_a_segment_acknowledged_before_its_resends_was_no_black_hole() -> None:
    """One TLS connection of PcapPlusPlus' tls2.pcap, captured at the client: the server's 1440-byte
    first segment arrives and the client acknowledges it (with everything else) within 4 ms; the
    server resends it 2 s later, then five more times at 1220 bytes (IPv6's minimum MTU, Linux's
    probing after timeouts), none answered. The segment went through: its ACKs did not. The old
    rule read the smaller resends as a black hole's fallback (pmtu_blackhole) without asking
    whether they were ever acknowledged."""
    (conn,) = analyze_file(Path(__file__).parent / "data" / "tls_server_resending_acked_data.pcap").files[0].connections
    assert [f.cause for f in conn.findings] == []
    assert [s.cause for s in conn.stalls] == ["ack_loss_timeout"]



def test_a_server_resending_to_a_receiver_that_stopped_is_no_black_hole() -> None:
    """Zeek's http_206_example_b.pcap (cut to 80 bytes), taken at the client: the server's 1400-byte
    segment is resent twelve times over 80 s and never acknowledged, yet every resend reached the
    client's tap. Seen from the receiver, a segment that arrives went through the path: the
    receiver stopped answering. It was a pmtu_blackhole (never acknowledged)."""
    a = analyze_file(Path(__file__).parent / "data" / "zeek_http_206_receiver_gone.pcap")
    assert [f.cause for c in a.files[0].connections for f in c.findings] == []


def test_a_segment_size_the_path_had_carried_is_no_black_hole_when_the_peer_falls_silent() -> None:
    """The scenario library's ack_loss with bursts of 24 lost ACKs instead of 16, at the sender:
    the burst swallowed the answers to five timeouts of the same 1448-byte segment, and the capture
    ended before one came. Seen from the sender that is a black hole "never acknowledged", yet
    1448-byte segments had been acknowledged up to the one before it: nothing shows it was lost for
    its size (a peer or path gone silent looks the same). The stall is undetermined, not a black hole."""
    (conn,) = analyze_file(Path(__file__).parent / "data" / "linux_ack_loss_to_capture_end.pcap").files[0].connections
    assert [f.cause for f in conn.findings] == []
    (stall,) = [s for s in conn.stalls if s.time_lost_ns > 1_000_000_000]
    assert stall.cause == "undetermined" and "capture ends" in stall.evidence["reason"]


def test_data_the_capture_filtered_out_but_the_receiver_acknowledged_is_no_black_hole() -> None:
    """Zeek's http_bro.org-filtered.pcap: HTTP connections with the requests filtered out of
    the capture, acknowledged by the server. The sender's sequence numbers ran ahead of the
    data seen with its small packets passing: the far-side black hole's picture, but the ACKs
    show the data arrived (note acked_unseen). It was a pmtu_blackhole on three of them."""
    a = analyze_file(Path(__file__).parent / "data" / "zeek_http_filtered_data.pcap")
    conns = a.files[0].connections
    assert len([c for c in conns if "acked_unseen" in {n.kind for n in c.notes}]) >= 3
    assert [f.cause for c in conns for f in c.findings] == []


def test_a_late_answer_to_a_request_seen_at_the_client_is_no_black_hole() -> None:
    """nDPI's webex.pcap, a TLS connection seen at a VPN client: the server answered the
    ClientHello 1.7 s after the handshake, in records smaller than the MSS. Seen from the receiver
    that was the far-side black hole's picture (late first data, small segments), and it was named
    pmtu_blackhole (as was another of the capture's, answered 1.3 s in); the late answer waited on
    the request, not on the path, as the middle tap's rule already said for a request seen pass."""
    a = analyze_file(Path(__file__).parent / "data" / "ndpi_webex_late_tls_answers.pcap")
    conns = a.files[0].connections
    assert len(conns) == 1 and conns[0].data_direction is not None
    assert conns[0].data_direction.profile.get("peer_data_packets")
    assert [f.cause for c in conns for f in c.findings] == []


def test_data_acknowledged_past_a_gap_the_fin_closes_is_no_black_hole() -> None:
    """Zeek's miss_end_data.pcap, seen at the client: its request, then the server's FIN 10 s later,
    2902 bytes past any data the capture showed, and the client's ACK of all of it. The far-side
    black hole's picture (sequence numbers ahead, no data), but the data arrived: the receiver
    acknowledged it. acked_unseen reads ACKs past every sequence number seen, and the FIN was seen,
    so it was a pmtu_blackhole until the rule read the receiver's ACKs itself."""
    a = analyze_file(Path(__file__).parent / "data" / "zeek_response_acked_unseen_before_fin.pcap")
    conns = a.files[0].connections
    assert len(conns) == 1
    assert [f.cause for c in conns for f in c.findings] == []


def _fddi_random_loss(tmp_path: Path, personality: str, seed: int):
    """A 384 KB transfer over FDDI (4352-byte frames) with 2 % random loss: its pcap and analysis."""
    spec = corpus._bulk("loss", f"{personality}-random2-fddi", personality=personality, link="fddi",
                        bytes=384 * 1024, seed=seed, impairments={"loss": 0.02})
    corpus.run_trace(spec, tmp_path)
    pcap = tmp_path / f"{spec.name}.pcap"
    return pcap, analyze_file(pcap)


def _jumbo_findings(analysis) -> list:
    return [x for f in analysis.files for c in f.connections for x in c.findings if x.cause == "jumbo_slot_exhaustion"]


def test_single_losses_of_large_frames_with_no_small_ones_are_no_jumbo_slot_exhaustion(tmp_path: Path) -> None:
    """SunOS 4.1 with 4 KB buffers on FDDI sends only 4136-byte frames; 2 % random loss takes one at
    a time and each ends in a timeout. No small frame could show the loss to be size-selective, and
    single losses are no slot pool emptied by a burst: single-loss timeouts (an out-of-sample
    trace: the scoring corpus has no FDDI loss run)."""
    pcap, analysis = _fddi_random_loss(tmp_path, "sunos41", seed=60)
    assert not _jumbo_findings(analysis)
    report = scoring.score_files(pcap, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]
    assert report["causes"]["single_loss_timeout"]["true"] == 4
    assert report["causes"]["single_loss_timeout"]["recall"] == 1.0, report
    assert report["totals"]["misattributed"] == 0


@pytest.mark.parametrize("personality", ["linux", "bsd44"])
def test_a_black_hole_below_ethernets_mtu_names_its_stall(tmp_path: Path, personality: str) -> None:
    """A hop of MTU 1280 (IPv6's minimum, a tunnel) that drops 1500-byte datagrams silently: the
    connection dies with its first full segment resent again and again. Its stall is the black
    hole's, though the resends are no larger than Ethernet's MTU (out-of-sample: the scoring
    corpus's holes are 1500-byte hops under FDDI and jumbo links)."""
    spec = corpus._bulk("pmtu", f"{personality}-fastethernet-1280-blackhole", personality=personality,
                        link="fastethernet", seed=4, impairments={"pmtu_mtu": 1280, "pmtu_mode": "blackhole"})
    corpus.run_trace(spec, tmp_path)
    pcap = tmp_path / f"{spec.name}.pcap"
    report = scoring.score_files(pcap, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]
    assert report["causes"]["pmtu_blackhole"]["true"] == 1
    assert report["causes"]["pmtu_blackhole"]["recall"] == 1.0, report
    assert report["totals"]["undetermined"] == 0


def test_one_small_frame_among_hundreds_shows_no_size_selective_loss(tmp_path: Path) -> None:
    """Linux 2.0 on FDDI with 2 % random loss: three 4352-byte frames lost in two timeouts, and the
    one small frame it sent (the transfer's tail) passed. Size-blind loss at that rate would have
    taken 0.02 small frames: "only large frames lost" shows nothing, and 1.5 frames per timeout is
    no burst (a holdout trace with its seed moved by 1000)."""
    _, analysis = _fddi_random_loss(tmp_path, "linux20", seed=1064)
    assert not _jumbo_findings(analysis)
    # Its one stall is the tail's: resent twice, and the trace ends before anything acknowledged it
    # (the simulator's truth records no stall there, the transfer having closed).
    assert [s.cause for s in analysis.stalls] == ["undetermined"]


def test_the_jumbo_findings_why_says_which_evidence_named_it() -> None:
    """Size-selective loss (small frames enough that loss blind to size would have taken some) and
    loss in bursts per timeout are two readings of GigaTCP's dry slot pool; the finding's `why`
    says which one it rests on, with its numbers (it said "in bursts" for both)."""
    from stallscope.analyzers.causes.path import _jumbo_slots

    profile = {"max_ip_len": 9000, "mss_advertised": 8960, "mss_offered_by_peer": 8960}
    bursts = _jumbo_slots(_jumbo_rows(small_resend_seq=200_001), profile, None)
    assert bursts is not None and bursts[2]["small_losses_expected"] < 3
    assert bursts[2]["why"].endswith("in bursts that timed out (5 frames resent over 2 timeouts)"), bursts[2]["why"]
    rows = _jumbo_rows(small_resend_seq=200_001)
    small = pl.DataFrame([{"seq_rel": 400_001 + i * 1000, "payload_len": 1000, "ip_len": 1052, "retransmission": False,
                           "retrans_kind": None, "snd_una": 1} for i in range(400)])
    selective = _jumbo_slots(pl.concat([rows, small]), profile, None)
    assert selective is not None and selective[2]["small_losses_expected"] >= 3
    assert f"would have taken {selective[2]['small_losses_expected']:.0f} of the 401 small ones" in selective[2]["why"]


def test_a_reset_answering_a_stray_ack_is_no_black_hole() -> None:
    """One connection of suricata-verify's tls-subjectaltname capture (cut to 96 bytes), taken at
    the client: its SYN draws a stray ACK from the server (an earlier connection's numbers), the
    client resets it with that ACK's number as its sequence (RFC 9293 3.10.7.3), resends the SYN 3 s
    later and the handshake completes; no data follows. Read from the first SYN, the path's round
    trip was 3.07 s (it is 18 ms from the SYN the SYN/ACK answered), and the stray ACK's sequence
    number, 525 MB ahead of any data, made a far-side pmtu_blackhole."""
    (conn,) = analyze_file(Path(__file__).parent / "data" / "tls_syn_resent_after_stray_ack.pcap").files[0].connections
    assert [f.cause for f in conn.findings] == []
    assert 15_000_000 < conn.vantage["0"]["path_rtt_ns"] < 25_000_000


def test_a_directions_rows_are_not_read_where_the_profile_rules_every_check_out() -> None:
    """The path checks test the profile's counts first and read the direction's rows only when a
    check gets past them: the filter that selects the rows was most of a short connection's cost."""
    from stallscope.analyzers.causes.path import findings

    def rows():
        raise AssertionError("rows read although the profile ruled every check out")

    # No timeouts (black hole, jumbo slots), a sender-side tap (far-side black hole), no bulk flight
    # (MSS unused).
    profile = {"timeouts": 0, "max_segment": 1448, "mss_advertised": 1460, "mss_offered_by_peer": 1460,
               "max_in_flight": 2896}
    assert findings(rows, profile, None) == []
    read = []
    bulk = {**profile, "max_segment": 536, "max_in_flight": 40 * 536}
    findings(lambda: read.append(1) or pl.DataFrame(schema={"payload_len": pl.Int64, "flag_psh": pl.Boolean}), bulk, None)
    assert read == [1]  # (a bulk sender under a larger MSS: the MSS check reads the rows)


def test_a_receivers_tap_reads_no_rows_where_the_profile_rules_the_far_side_black_hole_out() -> None:
    """Seen from the receiver, the far-side black hole needs a direction with no data whose sequence
    numbers ran a packet ahead, or a bulk one-way transfer in segments under the MSS offered; the
    profile says when neither can be. (20,000 short connections seen from their receiver took 23 s
    of a 32 s analysis reading each direction's rows for it.)"""
    from stallscope.analyzers.causes.path import findings
    from stallscope.analyzers.vantage import Timing

    def rows():
        raise AssertionError("rows read although the profile ruled every check out")

    far = Timing(2_000_000, 2_000_000, "receiver", "handshake", 2_000_000, None)
    short = {"timeouts": 0, "max_segment": 1448, "mss_advertised": 1460, "mss_offered_by_peer": 1460,
             "max_in_flight": 2896, "data_packets": 3, "sequence_span": 4000}
    assert findings(rows, short, far) == []
    acks_only = {**short, "data_packets": 0, "max_segment": 0, "max_in_flight": 0, "sequence_span": 1}
    assert findings(rows, acks_only, far) == []
    # A direction with no data whose sequence numbers ran ahead: its rows are read, and name the hole.
    ran_ahead = pl.DataFrame({"payload_len": [0, 0], "flag_rst": [False, False], "flag_ack": [True, True],
                              "seq_rel": [0, 8001], "seq_end": [1, 8001], "snd_una": [1, 1], "ts_ns": [0, 10**9],
                              "frame": [3, 9], "ip_id": [100, 106]})
    found = findings(lambda: ran_ahead, {**acks_only, "sequence_span": 8001, "peer_receive_window_max": 65535}, far)
    assert [f[0] for f in found] == ["pmtu_blackhole"] and found[0][2]["bytes_sent_never_seen"] == 8000
    # ...and the sender's silence before the packet that showed it, with the ids it skipped.
    assert {k: found[0][2][k] for k in ("silence_from_frame", "silence_to_frame", "ip_ids_skipped")} == {
        "silence_from_frame": 3, "silence_to_frame": 9, "ip_ids_skipped": 5}


def test_bursts_of_8k_frames_lost_without_a_syn_are_no_jumbo_slot_exhaustion(tmp_path: Path) -> None:
    """FreeBSD over ATM into a congested switch port with partial packet discard: 12 frames of 8244
    bytes resent over 3 timeouts. Without the SYN's MSS the link is unknown, and 8 KB datagrams fit
    ATM's MTU as well as a jumbo Ethernet one; an ATM switch's cell loss takes large frames in bursts
    too (Kung & Morris), so no jumbo finding: burst-loss timeouts (drawn corpus 3 with its SYNs cut;
    before, 3 `jumbo_slot_exhaustion` stalls and the finding)."""
    import pcap_edit as pe
    from stallscope.analyzers import corpus_drawn

    (spec,) = [s for s in corpus_drawn.plan(3) if s.name.startswith("atm-freebsd4-ppd-582cells")]
    corpus.run_trace(spec, tmp_path)
    pcap = tmp_path / f"{spec.name}.pcap"
    pe.drop_syns(pe.read(pcap)).write(pcap)
    analysis = analyze_file(pcap)
    assert not _jumbo_findings(analysis)
    report = scoring.score_files(pcap, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]
    assert report["causes"]["burst_loss_timeout"]["true"] >= 3
    assert report["causes"]["burst_loss_timeout"]["matched"] == report["causes"]["burst_loss_timeout"]["true"]


def test_frames_of_the_jumbo_mtu_name_the_link_without_a_syn(tmp_path: Path) -> None:
    """A real Linux capture through 3 jumbo receive slots (fixtures/jumbo_slots.pcap) with its SYN
    and SYN/ACK cut: its datagrams of exactly 9000 bytes are Ethernet's jumbo MTU (no ATM stack
    fills 9000), so its bursts of lost jumbo frames still name the slot pool."""
    import pcap_edit as pe

    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    pcap = tmp_path / "jumbo_slots.pcap"
    pe.drop_syns(pe.read(fixtures / "jumbo_slots.pcap")).write(pcap)
    assert _jumbo_findings(analyze_file(pcap))


def test_a_burst_of_fddi_frames_lost_is_no_jumbo_slot_exhaustion(tmp_path: Path) -> None:
    """Tru64 on FDDI with Gilbert-Elliott loss: only 4352-byte frames are sent, and the bursts take
    two or more per timeout. FDDI's MTU (RFC 1390) is its standard frame, no jumbo Ethernet one, so
    the bursts are burst-loss timeouts (drawn corpus 7; before, 2 `jumbo_slot_exhaustion`)."""
    from stallscope.analyzers import corpus_drawn

    (spec,) = [s for s in corpus_drawn.plan(7) if s.name.startswith("loss-tru64-fddi-gilbert0.024")]
    corpus.run_trace(spec, tmp_path)
    pcap = tmp_path / f"{spec.name}.pcap"
    assert not _jumbo_findings(analyze_file(pcap))
    report = scoring.score_files(pcap, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]
    blt = report["causes"]["burst_loss_timeout"]
    assert blt["true"] >= 2 and blt["matched"] == blt["true"]
