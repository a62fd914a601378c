"""The delayed-ACK clock learned from the phase of a receiver's held ACKs (analyzers/peer_acks.py,
docs/analyzer.md "Timer ACKs")."""

from __future__ import annotations

import random

import polars as pl

from stallscope.analyzers import inference, peer_acks

MS = 1_000_000


def test_acks_locked_to_a_200ms_tick_are_found_among_others():
    rng = random.Random(1)
    tick = [k * 200 * MS + 5 * MS + rng.randint(-300_000, 300_000) for k in range(10)]
    reads = [rng.randint(0, 2000 * MS) for _ in range(50)]  # a reader's window updates, any phase
    found = peer_acks.learn_tick(tick + reads, [30 * MS] * 60)
    assert found is not None and found["period_ns"] == peer_acks.BSD_TICK_NS
    assert abs(found["phase_ns"] - 5 * MS) < MS and found["acks_on_phase"] >= 10
    assert peer_acks.on_tick(605 * MS, found) and not peer_acks.on_tick(650 * MS, found)


def test_a_jiffy_clock_is_found_and_random_times_give_none():
    jiffy = [370 * MS + k * 10 * MS + 77_200 for k in range(30)]
    found = peer_acks.learn_tick(jiffy, [8 * MS] * 30)
    assert found is not None and found["period_ns"] == 10 * MS and found["phase_ns"] == 77_200
    rng = random.Random(2)
    assert peer_acks.learn_tick([rng.randint(0, 5000 * MS) for _ in range(200)], [30 * MS] * 200) is None


def test_prompt_acks_do_not_count():
    """ACKs sent at once (delay under TICK_MIN_DELAY_NS) say nothing of a timer, however regular."""
    times = [k * 200 * MS for k in range(20)]
    assert peer_acks.learn_tick(times, [0] * 20) is None
    assert peer_acks.learn_tick(times, [None] * 20) is None


def test_a_size_flagged_datagram_within_the_offered_mss_is_a_segment():
    """The decoder flags datagrams above its 9216-byte jumbo limit; FORE's ATM MTU 9244 carries 9204."""
    state = pl.DataFrame({
        "stream": [0, 0, 0, 0], "dir": [0, 1, 0, 0], "flag_syn": [True, True, False, False],
        "opt_mss": [9204, 9204, None, None], "payload_len": [0, 0, 9204, 20000],
        "superframe": [False, False, True, True],
    }, schema_overrides={"stream": pl.UInt32, "dir": pl.UInt8})
    out = inference.wire_superframes(state, ["stream", "dir", "payload_len", "superframe"])
    assert out["superframe"].to_list() == [False, False, False, True]
