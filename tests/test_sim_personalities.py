"""Timer grids and per-personality behaviour of the simulated TCP hosts on whole runs (4.4BSD's
200 ms delayed-ACK tick and 500 ms slow tick, the persist timer, Tahoe/Reno/NewReno repair,
Moldeklev's and Mogul's deadlocks, Salamon's held tail)."""

import pytest

from stallscope.simulate.host_cost import HostCost
from stallscope.simulate.reproductions.salamon import salamon
from stallscope.simulate.run_bulk import RECEIVER_ADDR, SENDER_ADDR, BulkConfig, run_bulk
from stallscope.simulate.units import NS_PER_MS, NS_PER_S
from stallscope.vocabulary import Cause

TAG_TIMER_ACK = "delack_timer"  # an ACK the delayed-ACK timer sent


def test_bsd_delayed_ack_rides_a_free_running_200ms_tick():
    """Every timer-generated ACK leaves on the receiver's global 200 ms grid, whatever the data timing."""
    r = run_bulk(BulkConfig(sndbuf=8192, rcvbuf=16384, bytes=200_000, seed=5))
    acks = [t for t, s in r.records if TAG_TIMER_ACK in s.tags]
    assert len(acks) > 10
    assert {(t - acks[0]) % (200 * NS_PER_MS) for t in acks} == {0}


def test_retransmission_timer_backs_off_on_the_500ms_slow_tick():
    """A black hole after connection set-up (every data segment lost, the handshake and ACKs
    pass): the retransmissions fire on the sender's 500 ms slow tick and each interval doubles
    (tcp_backoff) up to the 64 s ceiling."""
    r = run_bulk(BulkConfig(personality="sunos41", link="ethernet10", bytes=1000, seed=3),
                 impairments={"loss": 1.0, "loss_data_only": True})
    times = [t for t, s in r.records if s.src == SENDER_ADDR and s.payload_len and t <= 400 * NS_PER_S]
    assert len(times) >= 9
    tick = 500 * NS_PER_MS
    assert {(t - times[1]) % tick for t in times[1:]} == {0}  # retransmissions fire on the slow tick
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


@pytest.mark.parametrize("personality", ["sunos41", "bsd44", "freebsd4", "linux"])
def test_isolated_losses_repaired_by_fast_retransmit(personality):
    """Tahoe, Reno and NewReno (docs/tcp-rules.md#loss-recovery): a lone loss in a wide window costs no timeout."""
    r = run_bulk(BulkConfig(personality=personality, link="ethernet10", sndbuf=65536, rcvbuf=65536,
                            bytes=3_000_000, seed=2), impairments={"loss": 0.003})
    assert r.completed and r.bytes == 3_000_000
    assert r.ground_truth.drops["random_loss"] == r.retransmits > 0
    assert r.timeouts == 0


def test_zero_window_is_probed_by_the_persist_timer():
    """A receiver that never reads closes its window; the sender probes on the persist timer,
    backing off from 5 s to the 60 s ceiling, on the 500 ms slow tick (docs/tcp-rules.md#persist-timer).
    The receiving application's first read() never finishes (its copy costs 10^6 s per KB, past
    the run's 4 h horizon), so the 8 KB buffer fills and stays full. The hosts' tick phases come
    from the seed, and with them the RTT samples counted in slow ticks: with seed 10,
    (srtt + 2 rttvar) x 64 lies above the ceiling (with many seeds the ladder ends at 50 s)."""
    r = run_bulk(BulkConfig(personality="sunos41", link="ethernet10", sndbuf=16384, rcvbuf=8192, write=100_000,
                            bytes=100_000, cost=HostCost(read_copy_ns_per_kb=10**15), seed=10))
    probes = [t for t, s in r.records if "persist_probe" in s.tags and t <= 400 * NS_PER_S]
    assert len(probes) >= 5
    gaps = [y - x for x, y in zip(probes, probes[1:])]
    assert all(5 * NS_PER_S <= g <= 60 * NS_PER_S + 500 * NS_PER_MS for g in gaps)
    assert gaps == sorted(gaps) and gaps[0] == 5 * NS_PER_S  # backs off from the 5 s floor
    assert gaps[-1] > 50 * NS_PER_S  # (srtt + 2 rttvar) x 64, at most the 60 s ceiling
    assert {(t - probes[0]) % (500 * NS_PER_MS) for t in probes} == {0}
    # The window stayed shut: no probe's byte was accepted past the buffer.
    iss = next(s.seq for _, s in r.records if s.src == SENDER_ADDR)
    acks = [s for t, s in r.records if s.src == RECEIVER_ADDR and t > probes[1]]
    assert acks and all((s.ack - iss - 1) % (1 << 32) == 8192 and s.window == 0 for s in acks)
    assert r.bytes == 0 and not r.completed


def _request_stalls(personality):
    r = run_bulk(BulkConfig(personality=personality, link="ethernet10", sndbuf=16384, rcvbuf=16384, write=3000,
                            read=3000, bytes=30000, think_ns=500 * NS_PER_MS))
    return [s for s in r.stalls if s.cause is Cause.NAGLE_DELAYED_ACK]


def test_per_cluster_send_tears_writes_and_moretocome_does_not():
    """4.4BSD calls tcp_output per 2 KB cluster, so a 3000-byte write goes out as 1448 + 600 and the
    last 952 bytes wait for the delayed ACK; FreeBSD's MORETOCOME carries idleness to the last
    chunk and sends the write whole (docs/tcp-rules.md#socket-copy-loop,
    docs/tcp-rules.md#freebsd-more-to-come)."""
    torn = _request_stalls("bsd44")
    assert len(torn) >= 8 and {s.detail for s in torn} == {"buffer_tearing"}
    assert all(s.duration_ns <= 200 * NS_PER_MS for s in torn)  # released by the 200 ms tick
    assert _request_stalls("freebsd4") == []


def test_slow_start_behind_a_delayed_ack_is_named_a_congestion_window_wait():
    """4.4BSD opens with one segment: the receiver holds its ACK for the 200 ms tick with the
    sender's window wide open. The stall is the window-update kind, with detail congestion_window
    and the cwnd that bound it in the evidence; the peer's own window never gets that detail."""
    r = run_bulk(BulkConfig(personality="bsd44", link="ethernet10", bytes=200_000))
    first = r.stalls[0]
    assert (first.cause, first.detail) == (Cause.WINDOW_UPDATE_DEADLOCK, "congestion_window")
    assert first.evidence["cwnd"] < first.evidence["snd_wnd"]
    assert first.evidence["trigger"] == "timer_ack"
    # Moldeklev's S=4k R=16k deadlock: the receiver's window-update rule, not cwnd.
    small = run_bulk(BulkConfig(sndbuf=4096, rcvbuf=16384, bytes=200_000, nagle="OFF"))
    assert small.stalls and all(s.cause is Cause.WINDOW_UPDATE_DEADLOCK for s in small.stalls)
    assert all(s.detail is None and "cwnd" not in s.evidence for s in small.stalls)
