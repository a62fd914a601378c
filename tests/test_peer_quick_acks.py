"""The receiver's quick ACKs at the start (issue 12: the peer's delayed-ACK behaviour, "quick-ACK
at start"), measured on the recorded captures: Linux 6.x's receiver in nagle_4k_jumbo ACKs each of
the first responses' single segments at once (its quickack mode) and then holds them ~40 ms."""

from __future__ import annotations

from pathlib import Path

import pytest

from stallscope.analyzers.analyze import analyze_one

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _peer(name: str) -> dict:
    f = analyze_one(FIXTURES / f"{name}.pcap")
    (d,) = [d for c in f.connections for d in c.directions if d.role == "data sender"][:1]
    return d.profile["peer_delayed_ack"]


@pytest.mark.parametrize("tap", ["", ".receiver"])
def test_linux_quick_acks_before_its_delayed_ones(tap: str) -> None:
    peer = _peer("nagle_4k_jumbo" + tap)
    assert peer["timer"] == "one-shot" and 35e6 <= peer["timer_ns"] <= 60e6
    # Linux's quickack mode: at most 16 quick ACKs, and both taps see the same ones.
    assert 2 <= peer["quick_acks_at_start"] <= 16
    assert peer["quick_acks_at_start"] == _peer("nagle_4k_jumbo" + ("" if tap else ".receiver"))["quick_acks_at_start"]


def test_no_quick_acks_where_no_timer_held_an_ack() -> None:
    """clean_bulk's ACKs queued 20-30 ms behind the data on a 50 Mbit/s path: no timer's hold
    (under 35 ms), so none of its prompt ACKs before them were quick ones."""
    peer = _peer("clean_bulk")
    assert peer["delay_max_ns"] < 35e6
    assert peer["quick_acks_at_start"] == 0
