"""Captures that start mid-connection (tcpdump started late, a ring buffer's later file): the
fixtures with their first records cut. Data sent before the capture began may still be
unacknowledged: the peer's ACKs point below the first byte the capture shows, and the sender's
timer resends what lies there. Until the peer's first packet, snd_una is only the first byte seen,
no acknowledgement, so none of that is read as data the tap saw acknowledged (it was read so: a
false ack_loss_timeout, a black hole missed, a spurious timeout)."""

from __future__ import annotations

from pathlib import Path

import pcap_edit as pe
from stallscope.analyzers.analyze import analyze_file

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
REPAIR_MISREAD = {"ack_loss_timeout", "spurious_timeout"}


def _cut(tmp_path: Path, name: str, share: float) -> Path:
    cap = pe.read(FIXTURES / name)
    return cap.replace_records(cap.records[int(len(cap.records) * share):]).write(tmp_path / name)


def test_a_hole_below_the_first_byte_seen_is_no_data_acknowledged(tmp_path: Path) -> None:
    """jumbo_slots at its receiver from a quarter in: the capture opens during a repair, the peer's
    ACKs 700 KB below the first byte seen. Its resends are the jumbo frames' repair, as in the
    whole capture; none is data the tap saw acknowledged."""
    [conn] = analyze_file(_cut(tmp_path, "jumbo_slots.receiver.pcap", 0.25)).files[0].connections
    assert "no_syn" in {n.kind for n in conn.notes}
    assert min(s.start_frame for s in conn.stalls) < 200  # the stall at the capture's start is read
    assert {s.cause for s in conn.stalls} == {"jumbo_slot_exhaustion"}, [(s.cause, s.evidence) for s in conn.stalls]


def test_a_black_hole_whose_first_sending_the_capture_missed_is_named(tmp_path: Path) -> None:
    """pmtu_blackhole from a quarter in: the segment that times out again and again lies below the
    first byte seen, and the peer never acknowledged it (its FIN's ACK points at it)."""
    [conn] = analyze_file(_cut(tmp_path, "pmtu_blackhole.pcap", 0.25)).files[0].connections
    assert [f.cause for f in conn.findings] == ["pmtu_blackhole"]
    assert conn.findings[0].evidence["segment_seq"] < 0 and conn.findings[0].evidence["never_acknowledged"]
    assert [s.cause for s in conn.stalls] == ["pmtu_blackhole"]


def test_a_timeout_repairing_a_hole_from_before_the_capture_is_no_misread_repair(tmp_path: Path) -> None:
    """atm_ppd at its receiver from half-way: the first thing seen is data, then the receiver's ACK
    of a hole below it, then the timer's resend of that hole. The ACK reports the hole, so the
    resend repairs a loss: neither lost ACKs nor a spurious timer."""
    [conn] = analyze_file(_cut(tmp_path, "atm_ppd.receiver.pcap", 0.5)).files[0].connections
    first = min(conn.stalls, key=lambda s: s.start_frame)
    assert first.start_frame == 1 and first.cause not in REPAIR_MISREAD, (first.cause, first.evidence)
    assert not {s.cause for s in conn.stalls} & REPAIR_MISREAD
