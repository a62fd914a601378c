"""Write-write-read over loopback (tests/data, real Linux): a tiny writer's flight is not a send
buffer. The server's flight never exceeded one 100-byte write, so a buffer-size reading would call
every held second write the whole buffer in flight, released by the delayed-ACK timer: Moldeklev's
window-update deadlock. It is Nagle holding a short segment behind another until the client's
delayed ACK, and with TCP_NODELAY nothing stalls."""

from __future__ import annotations

from pathlib import Path

import pytest

import pcap_edit as pe

from stallscope.analyzers.analyze import analyze_file

DATA = Path(__file__).resolve().parent / "data"


def test_a_held_second_write_is_nagle_not_a_window_update_deadlock() -> None:
    analysis = analyze_file(DATA / "loopback_write_write_read.pcap")
    transport = [s for s in analysis.stalls if s.cause != "application_idle"]
    assert len(transport) >= 30  # one per request but the first few (quick-ACK mode)
    assert {s.cause for s in transport} == {"nagle_delayed_ack"}
    for s in transport:
        assert s.evidence["held_segment_len"] == 100 and s.evidence["outstanding_bytes"] == 100
        assert 35_000_000 <= s.evidence["releasing_ack_delay_ns"] <= 60_000_000  # Linux's 40 ms timer


def test_with_nodelay_nothing_stalls() -> None:
    analysis = analyze_file(DATA / "loopback_write_write_read_nodelay.pcap")
    assert [s for s in analysis.stalls if s.cause != "application_idle"] == []


def _without_handshake(name: str, tmp_path: Path) -> Path:
    """The capture with its SYN and SYN/ACK removed (a capture that starts mid-connection)."""
    return pe.drop_syns(pe.read(DATA / name)).write(tmp_path / name)


def test_without_the_handshake_a_100_byte_segment_is_still_short(tmp_path: Path) -> None:
    """No SYN, so no MSS: every segment is 100 bytes, yet none is full, for every IPv4 host's MSS is
    at least 536 bytes (RFC 1122 4.2.2.6). The held second writes stay Nagle's."""
    analysis = analyze_file(_without_handshake("loopback_write_write_read.pcap", tmp_path))
    assert {n.kind for n in analysis.files[0].connections[0].notes} >= {"no_syn", "window_scale_unknown"}
    transport = [s for s in analysis.stalls if s.cause != "application_idle"]
    assert len(transport) >= 30 and {s.cause for s in transport} == {"nagle_delayed_ack"}


def test_a_zero_window_is_read_with_the_scale_unknown(tmp_path: Path) -> None:
    """With the window scale unknown no window is read, but a zero window is zero at every scale:
    the reader's three pauses stay receiver_window_limited, with and without the handshake."""
    with_syn = analyze_file(DATA / "loopback_zero_window.pcap").stalls
    without = analyze_file(_without_handshake("loopback_zero_window.pcap", tmp_path)).stalls
    for stalls in (with_syn, without):
        assert [s.cause for s in stalls] == ["receiver_window_limited"] * 3
        assert all(350_000_000 <= s.duration_ns <= 500_000_000 for s in stalls)
        assert all(s.evidence["window_before_release"] == 0 for s in stalls)
    assert all(s.evidence["window_after_release"] is None for s in without)


@pytest.mark.parametrize("name", ["nagle_128k_window_split.pcap", "nagle_128k_window_split.receiver.pcap"])
def test_a_response_split_by_the_peer_window_is_held_by_nagle_at_either_tap(name: str) -> None:
    """Real Linux, 128 KB responses over a 9000-byte MTU, Nagle on (the nagle_128k_buffer scenario
    captured again, its first 120 packets): the client's 84 KB window cut a response into a full
    flight ending in 3436 bytes; the window reopened, yet the 1352-byte rest waited behind that short
    segment (Linux's Minshall test) for the client's 41 ms delayed ACK. Both taps name that Nagle
    hold: at the receiver, the ACK that reopened the window, seen there just before the stall began,
    reached the sender during it (the receiver-side reading of the whole capture said
    receiver_window_limited before, and of this part counted 8396 bytes outstanding)."""
    stalls = [s for s in analyze_file(DATA / name).stalls if s.cause != "application_idle"]
    assert [(s.cause, s.detail) for s in stalls] == [("nagle_delayed_ack", "buffer_tearing")]
    # Held behind the one short segment left unacknowledged once the reopening ACK arrived.
    assert stalls[0].evidence["held_segment_len"] == 1352 and stalls[0].evidence["outstanding_bytes"] == 3436
