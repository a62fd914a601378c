"""Timer grids and per-personality behaviour of the TCP host on whole simulated runs."""

import pytest

from stallscope.simulate.engine import NS_PER_MS, NS_PER_S, Simulator
from stallscope.simulate.ground_truth import Cause
from stallscope.simulate.reproductions.salamon import salamon
from stallscope.simulate.run_bulk import BulkConfig, run_bulk
from stallscope.simulate.tcp.host import TAG_TIMER_ACK, Host
from stallscope.simulate.tcp.personality import SUNOS41


def test_bsd_delayed_ack_rides_a_free_running_200ms_tick():
    """Every timer-generated ACK leaves on the receiver's global 200 ms grid, whatever the data timing."""
    r = run_bulk(BulkConfig(sndbuf=8192, rcvbuf=16384, bytes=200_000, seed=5))
    acks = [t for t, s in r.records if TAG_TIMER_ACK in s.tags]
    assert len(acks) > 10
    assert {(t - acks[0]) % (200 * NS_PER_MS) for t in acks} == {0}


class _DropData:
    """Passes the handshake, drops every data segment: a black hole after connection set-up."""

    def __init__(self, sink):
        self.sink, self.sent = sink, []

    def receive(self, now, seg):
        if seg.payload_len:
            self.sent.append((now, seg))
            return
        self.sink.receive(now, seg)


def test_retransmission_timer_backs_off_on_the_500ms_slow_tick():
    sim = Simulator(3)
    a = Host(sim, "a", "10.0.0.1", 1000, SUNOS41, mtu=1500, tick_phase_ns=123 * NS_PER_MS)
    b = Host(sim, "b", "10.0.0.2", 2000, SUNOS41, mtu=1500, tick_phase_ns=77 * NS_PER_MS)
    wire = _DropData(b)
    a.attach(wire)
    b.attach(a)
    b.listen()
    a.on_established = lambda now: a.write(now, 1000, lambda t: None)
    sim.schedule(0, lambda now: a.connect(now, "10.0.0.2", 2000))
    sim.run(until=400 * NS_PER_S)
    times = [t for t, _ in wire.sent]
    assert len(times) >= 9
    tick = 500 * NS_PER_MS
    assert {(t - 123 * NS_PER_MS) % tick for t in times[1:]} == {0}  # retransmissions fire on the slow tick
    gaps = [b_ - a_ for a_, b_ in zip(times[1:], times[2:])]
    # Each interval doubles (tcp_backoff) until the 64 s ceiling, within one tick of rounding.
    for prev, nxt in zip(gaps, gaps[1:]):
        assert nxt == 64 * NS_PER_S or abs(nxt - 2 * prev) <= tick
    assert gaps[-1] == 64 * NS_PER_S


@pytest.mark.parametrize("inference, fast", [(True, True), (False, False)])
def test_tru64_small_sender_inference_breaks_the_fddi_stall(inference, fast):
    """Mogul section 9: 8192-byte buffers on FDDI move one segment per 200 ms tick unless the
    receiver infers the small sender buffer and ACKs at once."""
    r = run_bulk(BulkConfig(personality="tru64", link="fddi", sndbuf=8192, rcvbuf=32768, write=8192, read=8192,
                            bytes=400_000, receiver_inference=inference))
    if fast:
        assert r.goodput_mbit_s > 20 and not r.stalls
    else:
        assert r.goodput_mbit_s < 1
        assert {s.cause for s in r.stalls} <= {Cause.NAGLE_DELAYED_ACK, Cause.WINDOW_UPDATE_DEADLOCK}


def test_nagle_off_removes_the_copy_rule_deadlock_but_not_the_window_update_one():
    """Paper: Moldeklev section 4.1 (S=8k R=16k is lifted, S=4k R=16k stays)."""
    lifted = run_bulk(BulkConfig(sndbuf=8192, rcvbuf=16384, bytes=1_000_000, nagle="OFF"))
    stays = run_bulk(BulkConfig(sndbuf=4096, rcvbuf=16384, bytes=200_000, nagle="OFF"))
    assert lifted.goodput_mbit_s > 10 and not lifted.stalls
    assert stays.goodput_mbit_s < 1
    assert {s.cause for s in stays.stalls} == {Cause.WINDOW_UPDATE_DEADLOCK}


@pytest.mark.paper
def test_salamon_tail_held_with_nodelay_and_hidden_by_fast_acks():
    """Paper: Salamon's report (linux20 + TCP_NODELAY, message = receive window)."""
    result = salamon()
    assert result.passed, result.verdict
    assert 2.0 <= result.details["drop"] <= 6.0  # paper: 11 -> 3.5 MB/s, a 3.1x drop
