"""A segment that times out again and again because its ACKs are lost is no PMTU black hole
(tests/data/ack_loss_repeated_timeouts.pcap: the ack_loss scenario captured again on 2026-11-28,
real Linux at the sender, 32 of the peer's ACKs lost in bursts, cut to 80 bytes per packet). One
full-size segment was resent three times while its ACKs were lost, and a write's short tail went
out later: the black-hole rule read that tail as "smaller segments went through". What goes through
after a black hole is the timed-out segment's own data, resent smaller."""

from __future__ import annotations

from pathlib import Path

from stallscope.analyzers.analyze import analyze_one

CAPTURE = Path(__file__).resolve().parent / "data" / "ack_loss_repeated_timeouts.pcap"


def test_lost_acks_behind_repeated_timeouts_are_no_black_hole() -> None:
    conn = analyze_one(CAPTURE).connections[0]
    assert [f.cause for f in conn.findings] == []
    assert {s.cause for s in conn.stalls} == {"ack_loss_timeout"}
