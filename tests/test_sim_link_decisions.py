"""Pure link decisions: jumbo slot pool, random and Gilbert-Elliott loss, the path-MTU hop."""

import random

import pytest

from stallscope.simulate.links.loss import GilbertElliott, RandomLoss
from stallscope.simulate.links.nic import JumboSlotPool
from stallscope.simulate.links.pmtu import PmtuHop


def test_slot_pool_drops_large_frames_when_empty_and_passes_small_ones():
    pool = JumboSlotPool(slots=2, min_frame_len=1600, replenish_ns=100)
    assert pool.offer(0, 9000) and pool.offer(0, 9000)
    assert not pool.offer(50, 9000)
    assert pool.offer(50, 1500)  # standard ring
    assert pool.offer(100, 9000)  # both slots came back at 100
    assert (pool.accepted, pool.dropped, pool.small_passed, pool.min_free) == (3, 1, 1, 0)


def test_keyed_frames_hold_their_slot_until_released():
    pool = JumboSlotPool(slots=1, min_frame_len=1600, replenish_ns=10)
    assert pool.offer(0, 9000, key=("seg", 1))
    assert not pool.offer(10_000, 9000)  # still held: no timer returns it
    assert pool.release(20_000, ("seg", 1)) == 1
    assert pool.free(20_009) == 0 and pool.free(20_010) == 1
    assert pool.release(30_000, "unknown") == 0


def test_slot_pool_rejects_bad_sizes():
    with pytest.raises(ValueError):
        JumboSlotPool(0, 1600, 0)


def test_random_loss_rate_and_reproducibility():
    a = RandomLoss(0.1, random.Random(5))
    seq = [a.lose() for _ in range(50_000)]
    assert abs(sum(seq) / len(seq) - 0.1) < 0.005
    b = RandomLoss(0.1, random.Random(5))
    assert [b.lose() for _ in range(50_000)] == seq
    with pytest.raises(ValueError):
        RandomLoss(1.5, random.Random())


def test_gilbert_elliott_losses_come_in_bursts_of_the_expected_length():
    ge = GilbertElliott(p_gb=0.01, p_bg=0.25, loss_good=0.0, loss_bad=1.0, rng=random.Random(3))
    seq = [ge.lose() for _ in range(200_000)]
    runs, n = [], 0
    for lost in seq:
        if lost:
            n += 1
        elif n:
            runs.append(n)
            n = 0
    assert 3.6 < sum(runs) / len(runs) < 4.4  # mean bad sojourn 1 / p_bg = 4
    assert abs(sum(seq) / len(seq) - ge.stationary_loss) < 0.005
    # a Bernoulli channel at the same rate would average bursts of ~1.04
    assert ge.stationary_loss == pytest.approx(0.01 / 0.26)


def test_pmtu_hop_modes():
    icmp = PmtuHop(1500, "icmp")
    assert icmp.decide(1500).forward
    v = icmp.decide(1501)
    assert (v.forward, v.reason, v.icmp_mtu) == (False, "pmtu_frag_needed", 1500)
    hole = PmtuHop(1500, "blackhole").decide(9000)
    assert (hole.forward, hole.reason, hole.icmp_mtu) == (False, "pmtu_blackhole", None)
    with pytest.raises(ValueError, match="mode"):
        PmtuHop(1500, "fragment")
    with pytest.raises(ValueError):
        PmtuHop(40)


def test_nth_loss_loses_exactly_the_listed_packets():
    from stallscope.simulate.links.loss import NthLoss

    model = NthLoss((2, 5))
    assert [model.lose() for _ in range(6)] == [False, True, False, False, True, False]
    with pytest.raises(ValueError):
        NthLoss((0,))
