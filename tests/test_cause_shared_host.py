"""Several connections from one host, tapped at the receiver: real Linux, four iperf3 flows through
the sender's own 10 Mbit/s tbf (tests/data/linux_four_flows_shared_tbf.receiver.pcap, made by
four_flows_shared_tbf.sh). The queue dropped most of three flows' first flight before any tap:
the receiver saw each flow's 37-byte greeting acknowledged, then some 215 ms of silence, then data.
By its look that is the application's idle time; the sender's IPv4 ids say it had sent 20 packets
in between. Linux numbers each connection's packets with a counter of its own (the flows' ids are
far apart), so ids skipped by a flow are its own packets lost before the tap, even where losses
leave fewer than 80 % of its steps at one. A host that numbers all its packets with one counter
makes no such claim: its skips are its other flows' packets."""

from __future__ import annotations

from pathlib import Path

import pcap_edit

from stallscope.analyzers.analyze import analyze_file

CAPTURE = Path(__file__).resolve().parent / "data" / "linux_four_flows_shared_tbf.receiver.pcap"
SENDER = bytes([10, 9, 0, 1])


def _first_silences(stalls) -> list:
    """Each flow's silence after its greeting: the stalls that start in the first 40 frames."""
    return [s for s in stalls if s.dir == 0 and s.start_frame <= 40]


def test_a_flight_lost_below_the_tap_of_a_host_with_per_connection_ids_is_a_loss() -> None:
    first = _first_silences(analyze_file(CAPTURE).stalls)
    assert len(first) == 3
    for s in first:
        assert s.duration_ns > 200_000_000
        assert s.cause == "burst_loss_timeout"
        assert s.evidence["ids_unseen"] == 20
        assert s.evidence["unseen_before_frame"] == s.end_frame


def _one_host_counter(path: Path, skip_every: int | None = None) -> Path:
    """CAPTURE with the sender's ids rewritten as one counter over all its packets in capture order
    (a host-wide counter), skipping every `skip_every`-th value (packets of the host's the tap did
    not see) if given."""
    cap = pcap_edit.read(CAPTURE)
    records, next_id = [], 0x4000
    for r in cap.records:
        t = pcap_edit.tcp_of(r)
        if t is not None and t.src == SENDER:
            if skip_every and next_id % skip_every == 0:
                next_id += 1
            r = r.with_data(pcap_edit.set_u16(r.data, t.ip_off + 4, next_id))
            next_id += 1
        records.append(r)
    return cap.replace_records(records).write(path)


def test_ids_from_one_host_wide_counter_claim_no_unseen_packet(tmp_path: Path) -> None:
    """The same capture with the sender's ids rewritten as one counter over all its packets in
    capture order (as a host-wide counter would number them with every packet seen): no skip is
    left to read, and none of those silences may be put down to packets lost before the tap."""
    stalls = analyze_file(_one_host_counter(tmp_path / "one_counter.pcap")).stalls
    assert not any("ids_unseen" in s.evidence for s in stalls)
    assert {s.cause for s in _first_silences(stalls)} == {"application_idle"}


def test_a_host_wide_counter_skipping_for_its_other_flows_is_not_read_as_loss(tmp_path: Path) -> None:
    """Ids from one counter over all the sender's packets, with every fifth packet of the host
    missing from the capture (a second host-wide counter user the tap did not see): each flow's
    ids now skip, yet the host's switches between flows step by one or two, so the skips are
    not losses."""
    stalls = analyze_file(_one_host_counter(tmp_path / "skipping.pcap", skip_every=5)).stalls
    assert not any("ids_unseen" in s.evidence for s in stalls)
