"""Modern Linux's congestion control in the simulator's `linux` personality: the window counted in
packets and grown by the packets each ACK covers (tcp_slow_start, tcp_cong_avoid_ai), with Reno's
halving (TCP_CONGESTION "reno") or CUBIC (the default; net/ipv4/tcp_cubic.c, RFC 9438): the 0.7
reduction with fast convergence, and growth along W(t) = C (t - K)^3 + W_max, concave up to the
window before the loss and convex beyond it."""

from __future__ import annotations

import pytest

from stallscope.simulate.run_bulk import BulkConfig, run_bulk
from stallscope.simulate.tcp import congestion as cc
from stallscope.simulate.tcp.personality import LINUX, LINUX20, Recovery

MSS = 1000
RTT_NS = 100_000_000


def _after_loss_at(w_max: int) -> cc.CongestionState:
    st = cc.new_state(Recovery.NEWRENO, MSS, 10, cubic=True)
    st.cwnd = w_max * MSS
    cc.on_rtt_sample(st, RTT_NS)
    cc.enter_sack_recovery(st, 1 << 30, 0)
    cc.leave_sack_recovery(st)
    return st


def _grow(st: cc.CongestionState, rounds: int) -> list[tuple[float, int]]:
    """One ACK per packet, spread over each 100 ms round trip: (seconds since the loss, cwnd)."""
    now, out = 0, []
    for _ in range(rounds):
        w = st.cwnd // MSS
        for i in range(w):
            cc.on_new_ack(st, MSS, 0, now + RTT_NS * i // w)
        now += RTT_NS
        out.append((now / 1e9, st.cwnd // MSS))
    return out


def test_linux_uses_cubic_and_linux20_reno():
    assert LINUX.cubic and LINUX.linux_ca and not LINUX20.cubic and not LINUX20.linux_ca


def test_linux_counts_the_packets_each_ack_covers():
    """A delayed ACK for two segments grows Linux's slow-start window by two (BSD's by one), and
    in congestion avoidance a window's worth of acknowledged packets adds one."""
    linux = cc.new_state(Recovery.NEWRENO, MSS, 10, linux_ca=True)
    bsd = cc.new_state(Recovery.NEWRENO, MSS, 10)
    for st in (linux, bsd):
        cc.on_new_ack(st, 2 * MSS, 0)
    assert (linux.cwnd, bsd.cwnd) == (12 * MSS, 11 * MSS)
    linux.ssthresh = linux.cwnd
    for _ in range(6):  # 12 packets acknowledged, two per ACK
        cc.on_new_ack(linux, 2 * MSS, 0)
    assert linux.cwnd == 13 * MSS
    cc.on_dupack(linux, 1 << 30, 0)
    cc.on_dupack(linux, 1 << 30, 0)
    assert cc.on_dupack(linux, 1 << 30, 0)
    assert linux.ssthresh == 6 * MSS  # tcp_reno_ssthresh: cwnd / 2 in packets


def test_congestion_control_is_chosen_per_sender():
    """TCP_CONGESTION: reno or cubic where the window counts packets; the BSD stacks have only Reno."""
    base = dict(link="ethernet10", bytes=200_000, write=65536, read=65536)
    assert run_bulk(BulkConfig(personality="linux", congestion="reno", **base)).completed
    with pytest.raises(ValueError, match="cubic"):
        run_bulk(BulkConfig(personality="bsd44", congestion="cubic", **base), engine="python")
    with pytest.raises(ValueError):
        run_bulk(BulkConfig(personality="linux", congestion="vegas", **base), engine="python")


def test_a_loss_cuts_to_0_7_and_fast_convergence_lowers_w_max():
    st = _after_loss_at(100)
    assert st.ssthresh == st.cwnd == 70 * MSS  # Reno would halve to 50
    assert st.cubic.last_max_cwnd == 100
    st.cwnd = 80 * MSS  # a second loss below the last maximum: release bandwidth (fast convergence)
    cc.enter_sack_recovery(st, 1 << 30, 0)
    assert st.cubic.last_max_cwnd == 80 * (1024 + 717) // 2048
    assert st.ssthresh == 80 * 717 // 1024 * MSS


def test_window_growth_follows_the_cubic_function():
    """K = cbrt(W_max (1 - beta) / C) = 4.21 s for W_max 100 packets; the curve is computed on time
    since the epoch plus the minimum RTT (tcp_cubic.c), and the window tracks it within 3 packets or
    3 % (it trails by up to a round trip where the curve is steep): concave below W_max, flat around
    K, convex above."""
    st = _after_loss_at(100)
    curve = _grow(st, 100)
    k = st.cubic.bic_k / 1024
    assert k == pytest.approx(4.21, abs=0.01)
    for t, w in curve:
        target = 0.4 * (t + RTT_NS / 1e9 - k) ** 3 + 100
        if 0.5 <= t <= 9.5:
            assert abs(w - target) <= max(3, 0.03 * target), (t, w, target)
    flat = [w for t, w in curve if abs(t - k) <= 0.8]
    assert min(flat) >= 99 and max(flat) <= 101
    assert curve[-1][1] > 150


def test_after_a_timeout_cubic_starts_over():
    """tcp_enter_loss: ssthresh from the cubic reduction, then bictcp_reset (no W_max remembered)."""
    st = _after_loss_at(100)
    cc.on_timeout(st, 1 << 30)
    assert st.cwnd == MSS and st.ssthresh == 49 * MSS
    assert st.cubic.last_max_cwnd == 0 and st.cubic.epoch_start is None
