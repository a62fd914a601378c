"""Per-rule decisions of the TCP host, as transition tables (the sender, receiver and timer rules of
docs/tcp-rules.md)."""

import pytest

from stallscope.simulate.tcp import rules
from stallscope.simulate.tcp.personality import BSD44, FREEBSD4, LINUX, SUNOS41, TRU64, WindowUpdateRule

MSS = 9204


@pytest.mark.parametrize(
    "length, nagle_ok, force, max_sndwnd, rexmit, expected",
    [
        (9204, False, False, 32768, False, "full_segment"),  # 1. len == maxseg
        (3084, True, False, 32768, False, "nagle_ok"),  # 2. idle / emptying
        (3084, False, True, 32768, False, "persist"),  # 3. t_force
        (4096, False, False, 8192, False, "half_peer_window"),  # 4. len >= max_sndwnd/2
        (4095, False, False, 8192, False, None),  # just under half the peer window
        (3084, False, False, 32768, True, "retransmit"),  # 5. snd_nxt < snd_max
        (3084, False, False, 32768, False, None),  # held by Nagle
        (0, True, True, 32768, True, None),  # nothing to send
    ],
)
def test_bsd_output_decision_order(length, nagle_ok, force, max_sndwnd, rexmit, expected):
    assert rules.bsd_send_reason(length, MSS, nagle_ok, force, max_sndwnd, rexmit) == expected


@pytest.mark.parametrize(
    "rule, adv, rcv_cc, hiwat, peer_has, expected",
    [
        (WindowUpdateRule.SUNOS_35, 8192, 5108, 32768, 19468, False),  # 25 %: appendix A line 5
        (WindowUpdateRule.SUNOS_35, 13300, 0, 32768, 19468, True),  # 40.6 %: appendix A line 6
        (WindowUpdateRule.SUNOS_35, 4096, 0, 16384, 12288, False),  # 25 % of 16k: S=8k R=16k deadlock
        (WindowUpdateRule.SUNOS_35, 5735, 100, 16384, 0, True),  # 35 % exactly
        (WindowUpdateRule.SUNOS_35, 18408, 100, 65536, 0, False),  # 2 MSS but data unread and < 35 %
        (WindowUpdateRule.SUNOS_35, 18408, 0, 65536, 0, True),  # 2 MSS with the buffer empty
        (WindowUpdateRule.BSD_50, 18408, 9000, 65536, 0, True),  # 2 MSS suffices in 4.4BSD
        (WindowUpdateRule.BSD_50, 8192, 0, 16384, 0, True),  # 50 %
        (WindowUpdateRule.BSD_50, 8191, 0, 16384, 0, False),
        (WindowUpdateRule.LINUX, 20000, 0, 32768, 12000, True),  # peer fell below half, window doubles
        (WindowUpdateRule.LINUX, 20000, 0, 32768, 20000, False),  # peer still holds more than half
    ],
)
def test_window_update_thresholds(rule, adv, rcv_cc, hiwat, peer_has, expected):
    assert rules.window_update_due(rule, adv, rcv_cc, hiwat, MSS, peer_has) is expected


@pytest.mark.parametrize(
    "p, resid, space, expected",
    [
        (SUNOS41, 8192, 16384, 4096),  # the 4 KB copy rule
        (SUNOS41, 8192, 3084, 3084),  # space above the low-water mark
        (SUNOS41, 8192, 1012, 0),  # sleeps: space < 1024 and the write does not fit (appendix A line 32)
        (SUNOS41, 500, 1012, 500),  # a small tail that fits is copied
        (BSD44, 8192, 16384, 2048),  # one cluster per PRU_SEND
        (LINUX, 8192, 16384, 8192),  # the whole write
        (LINUX, 8192, 0, 0),
    ],
)
def test_sosend_chunking(p, resid, space, expected):
    assert rules.sosend_chunk(p, resid, space) == expected


def test_sosend_round_tests_the_low_water_mark_once():
    """4.4BSD/OSF sosend tests space against sb_lowat when a round starts, then copies cluster by
    cluster until that space is used (`} while (resid && space > 0)`); SunOS re-tests per chunk."""
    assert rules.sosend_chunk(BSD44, 20000, 12000) == 2048  # round starts: 12000 >= lowat
    assert rules.sosend_chunk(BSD44, 1808, 1000) == 0  # a new round would sleep (1000 < 2048)
    assert rules.sosend_chunk(BSD44, 1808, 1000, in_round=True) == 1000  # the round goes on
    assert rules.sosend_chunk(TRU64, 11808, 3808) == 0  # OSF: the same mark (3808 < 8192)
    assert rules.sosend_rounds(TRU64) and rules.sosend_rounds(BSD44)
    assert not rules.sosend_rounds(SUNOS41) and not rules.sosend_rounds(LINUX)


def test_osf_sosend_cluster_does_not_depend_on_the_space_left():
    """DEC OSF/1 uipc_socket.c (mbufthreshold = 1024): with at least 1024 bytes of the write left,
    sosend takes a cluster of min(resid, MCLBYTES) even when the round has less space, so the
    round can overshoot sb_hiwat by up to a cluster; below the threshold small mbufs fill at most
    the space. 4.4BSD bounds every copy by the space."""
    assert rules.sosend_chunk(TRU64, 11808, 3808, in_round=True) == 8192  # overshoots by 4384
    assert rules.sosend_chunk(TRU64, 3616, 864, in_round=True) == 3616
    assert rules.sosend_chunk(TRU64, 900, 500, in_round=True) == 500  # small mbufs: bounded
    assert rules.sosend_chunk(TRU64, 11808, 0, in_round=True) == 0  # the round ended
    assert rules.sosend_chunk(BSD44.with_(mclbytes=8192), 11808, 3808, in_round=True) == 3808


def test_writer_low_water_mark_can_be_the_mss():
    """OSF/1 tcp_mss sets so_snd.sb_lowat = mss; the host passes it as `lowat`."""
    osf = TRU64.with_(lowat_is_mss=True)
    assert rules.sosend_chunk(osf, 8000, 4400, lowat=4312) == 8000
    assert rules.sosend_chunk(osf, 8000, 4300, lowat=4312) == 0


def test_mss_selection_per_personality():
    assert rules.select_mss(SUNOS41, 9244, None) == 9204  # no cluster rounding on SunOS
    assert rules.select_mss(BSD44, 9180, None) == 8192  # 9140 rounded down to 2 KB clusters
    assert rules.select_mss(FREEBSD4, 1500, None, timestamps=True) == 1448  # timestamps take 12 bytes
    assert rules.select_mss(FREEBSD4, 1500, None) == 1460  # ... only when both ends use them
    assert rules.select_mss(SUNOS41, 9244, 1460) == 1460  # the peer's offer caps it
    assert rules.select_mss(LINUX, 9000, None, route_mtu=1500) == 1460  # cloned-route MTU
    assert rules.select_mss(LINUX, 1500, 1460, timestamps=True) == 1448  # what real Linux sends
    # FreeBSD tcp_mss: the option comes off after the peer's offer, before the cluster rounding.
    assert rules.select_mss(FREEBSD4, 4470, 4430, timestamps=True) == 4096
    assert rules.select_mss(FREEBSD4, 9000, 8960, timestamps=True) == 8192


def test_receiver_silly_window_avoidance():
    # less than a quarter of the buffer and less than an MSS: advertise zero
    assert rules.receive_window(3000, 16384, MSS, 0, 65535) == 0
    # never shrink below what the peer was already offered
    assert rules.receive_window(3000, 16384, MSS, 5000, 65535) == 5000
    assert rules.receive_window(5000, 16384, MSS, 0, 65535) == 5000


def test_rto_backoff_grid_and_slow_tick():
    base = 1_500_000_000
    grid = [rules.backed_off_rto(BSD44, base, s) for s in range(1, 9)]
    assert grid == [
        min(base * m, 64_000_000_000) for m in (2, 4, 8, 16, 32, 64, 64, 64)
    ]
    assert rules.backed_off_rto(SUNOS41, 100_000_000, 0) == 1_000_000_000  # clamped to the 1 s minimum
    assert rules.ticks_for(1_000_000_000, 500_000_000) == 2
    assert rules.ticks_for(1_000_000_001, 500_000_000) == 3
    assert rules.ticks_for(1, 500_000_000) == 1


from stallscope.simulate.tcp import delack  # noqa: E402

MS = 1_000_000


def _feed(p, segments, rcvbuf=32768, mss=1460, infer=False):
    st = delack.new_state(p, rcvbuf, mss)
    out, unacked = [], 0
    for i, length in enumerate(segments):
        unacked += length
        d = delack.on_data(p, st, i * MS, True, unacked, mss, infer, 1000 * MS)
        out.append(d.value)
        if d is delack.AckNow.NOW:
            delack.on_ack_sent(st)
            unacked = 0
    return out


def test_delayed_ack_policies_as_transition_table():
    # BSD: every in-order segment waits for the global tick.
    assert _feed(SUNOS41, [1460] * 4) == ["delay"] * 4
    # FreeBSD 4: ACK every second in-order segment.
    assert _feed(FREEBSD4, [1460] * 4) == ["delay", "now", "delay", "now"]
    # Linux: quick-ACK mode first (clamp(32768 / 2920, 2, 16) = 11 segments), then > 1 full frame.
    assert _feed(LINUX, [1460] * 14)[:11] == ["now"] * 11
    assert _feed(LINUX, [1460] * 14)[11:] == ["delay", "now", "delay"]
    # Tru64 inference: once 1 MSS was seen outstanding, ACK when half of the largest is unacked.
    assert _feed(TRU64, [1460, 1460], infer=True) == ["now", "now"]
    assert _feed(TRU64, [1460, 1460], infer=False) == ["delay", "delay"]


def test_bsd_fixed_point_rto_settles_at_three_ticks_on_a_lan():
    """4.4BSD / Digital UNIX tcp_xmit_timer + TCP_REXMTVAL in integer slow ticks: LAN samples
    (t_rtt = 1) leave rttvar stuck at 3/4 tick, so the RTO is 3 ticks = 1.5 s, not the 2-tick
    floor a real-valued estimator decays to; a one-tick sample raises it and it comes back."""
    srtt, var = rules.bsd_xmit_timer(None, 0, 1)
    assert (srtt, var, rules.bsd_rexmtval_ticks(srtt, var)) == (8, 2, 3)  # first: 3 x rtt
    for _ in range(20):
        srtt, var = rules.bsd_xmit_timer(srtt, var, 1)
    assert (srtt, var, rules.bsd_rexmtval_ticks(srtt, var)) == (7, 3, 3)
    srtt, var = rules.bsd_xmit_timer(srtt, var, 2)
    assert rules.bsd_rexmtval_ticks(srtt, var) == 5
    for _ in range(20):
        srtt, var = rules.bsd_xmit_timer(srtt, var, 1)
    assert rules.bsd_rexmtval_ticks(srtt, var) == 3
    assert BSD44.rtt_fixed_point and TRU64.rtt_fixed_point
    assert not SUNOS41.rtt_fixed_point and not FREEBSD4.rtt_fixed_point


def test_linux_rto_is_srtt_plus_at_least_the_minimum():
    """tcp_rtt_estimator / tcp_set_rto: the first sample gives srtt + max(2 * rtt, 200 ms); steady
    40 ms samples settle at 40 + 200 ms, where Jacobson's clamp (BSD, Linux 2.0) stays at 200 ms."""
    ms = 1_000_000
    st = rules.LinuxRtt()
    rules.linux_rtt_estimator(st, 150 * ms, snd_una=0, snd_nxt=10, rto_min=LINUX.rto_min_ns)
    assert rules.linux_rto_ns(LINUX, st) == 150 * ms + 300 * ms
    st = rules.LinuxRtt()
    for i in range(200):
        rules.linux_rtt_estimator(st, 40 * ms, snd_una=10 * i, snd_nxt=10 * i + 10, rto_min=LINUX.rto_min_ns)
    assert rules.linux_rto_ns(LINUX, st) == 240 * ms
    assert rules.rto_ns(LINUX, 40 * ms, 0) == 200 * ms  # the clamp Linux does not use
    # A larger error raises rttvar above the minimum at once, and it decays once per round trip.
    rules.linux_rtt_estimator(st, 400 * ms, snd_una=2000, snd_nxt=2010, rto_min=LINUX.rto_min_ns)
    spike = rules.linux_rto_ns(LINUX, st)
    assert spike > 85 * ms + 360 * ms - ms
    rules.linux_rtt_estimator(st, 40 * ms, snd_una=2010, snd_nxt=2020, rto_min=LINUX.rto_min_ns)
    assert rules.linux_rto_ns(LINUX, st) < spike
