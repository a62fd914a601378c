"""Write-write-read over loopback (tests/data, real Linux): a tiny writer's flight is not a send
buffer. The server's flight never exceeded one 100-byte write, so a buffer-size reading would call
every held second write the whole buffer in flight, released by the delayed-ACK timer: Moldeklev's
window-update deadlock. It is Nagle holding a short segment behind another until the client's
delayed ACK, and with TCP_NODELAY nothing stalls."""

from __future__ import annotations

from pathlib import Path

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
