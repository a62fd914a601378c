"""Congestion window and loss recovery: Tahoe, Reno, NewReno (docs/tcp-rules.md#loss-recovery).
Modern Linux counts its window in packets and grows it by the packets each ACK covers (`linux_ca`: tcp_slow_start,
tcp_cong_avoid_ai), with Reno's halving or CUBIC's growth and 0.7 reduction (net/ipv4/tcp_cubic.c,
RFC 9438); the recovery on top is the same."""

from __future__ import annotations

from dataclasses import dataclass

from .personality import Recovery

DUPACK_THRESHOLD = 3


NS_PER_JIFFY = 1_000_000  # HZ = 1000
HZ = 1000
BICTCP_BETA_SCALE = 1024
BETA = 717  # multiplicative decrease 717 / 1024 (about 0.7)
BICTCP_HZ = 10  # time in 1/1024 s inside the cubic function
BETA_SCALE = 8 * (BICTCP_BETA_SCALE + BETA) // 3 // (BICTCP_BETA_SCALE - BETA)  # TCP-friendly slope
CUBE_RTT_SCALE = 41 * 10  # bic_scale * 10
CUBE_FACTOR = (1 << (10 + 3 * BICTCP_HZ)) // CUBE_RTT_SCALE


@dataclass(slots=True)
class Cubic:
    """struct bictcp (tcp_cubic.c), windows in packets, times in jiffies; epoch_start None = no epoch."""

    cnt: int = 0
    last_max_cwnd: int = 0
    last_cwnd: int = 0
    last_time: int = 0
    bic_origin_point: int = 0
    bic_k: int = 0
    delay_min_ns: int = 0
    epoch_start: int | None = None
    ack_cnt: int = 0
    tcp_cwnd: int = 0


def icbrt(x: int) -> int:
    """Floor of the cube root of x >= 0 (tcp_cubic.c's cubic_root approximates the same)."""
    r = int(round(x ** (1.0 / 3.0))) if x > 0 else 0
    while r * r * r > x:
        r -= 1
    while (r + 1) ** 3 <= x:
        r += 1
    return r


@dataclass(slots=True)
class CongestionState:
    recovery: Recovery
    mss: int
    cwnd: int
    ssthresh: int = 1 << 30
    dupacks: int = 0
    recover: int = 0  # NewReno: snd_max when recovery began
    in_recovery: bool = False
    linux_ca: bool = False  # Linux: window in packets, grown per packet acknowledged
    cwnd_cnt: int = 0  # tp->snd_cwnd_cnt (linux_ca)
    cubic: Cubic | None = None  # linux_ca with CUBIC; None: Reno


def new_state(recovery: Recovery, mss: int, initial_segments: int, linux_ca: bool = False,
              cubic: bool = False) -> CongestionState:
    cwnd = (1 << 30) if initial_segments <= 0 else initial_segments * mss
    return CongestionState(recovery=recovery, mss=mss, cwnd=cwnd, linux_ca=linux_ca or cubic,
                           cubic=Cubic() if cubic else None)


def _halve(st: CongestionState, wnd: int) -> None:
    c = st.cubic
    if not st.linux_ca:
        st.ssthresh = max(2, min(wnd, st.cwnd) // 2 // st.mss) * st.mss
        return
    cwnd = st.cwnd // st.mss
    st.cwnd_cnt = 0  # tcp_init_cwnd_reduction, tcp_enter_loss
    if c is None:
        st.ssthresh = max(cwnd >> 1, 2) * st.mss  # tcp_reno_ssthresh
        return
    # cubictcp_recalc_ssthresh: the epoch ends; W_max with fast convergence; cwnd * 0.7.
    c.epoch_start = None
    if cwnd < c.last_max_cwnd:
        c.last_max_cwnd = cwnd * (BICTCP_BETA_SCALE + BETA) // (2 * BICTCP_BETA_SCALE)
    else:
        c.last_max_cwnd = cwnd
    st.ssthresh = max(cwnd * BETA // BICTCP_BETA_SCALE, 2) * st.mss


def on_timeout(st: CongestionState, snd_wnd: int) -> None:
    _halve(st, snd_wnd)
    if st.cubic is not None:
        st.cubic = Cubic()  # tcp_enter_loss -> cubictcp_state(TCP_CA_Loss): bictcp_reset
    st.cwnd = st.mss
    st.dupacks = 0
    st.in_recovery = False


def enter_sack_recovery(st: CongestionState, snd_wnd: int, snd_max: int) -> None:
    """RFC 6675 section 5 (4.2): ssthresh and cwnd to half the window; recovery ends at snd_max."""
    _halve(st, snd_wnd)
    st.cwnd = st.ssthresh
    st.recover = snd_max
    st.in_recovery = True


def enter_loss_without_reduction(st: CongestionState, snd_max: int) -> None:
    """tcp_simple_retransmit after a lost MTU probe: recover up to snd_max with cwnd unchanged
    (ssthresh = tcp_current_ssthresh, at least three quarters of cwnd)."""
    st.ssthresh = max(st.ssthresh, st.cwnd * 3 // 4)
    st.recover = snd_max
    st.in_recovery = True


def leave_sack_recovery(st: CongestionState) -> None:
    """The ACK reached the recovery point (RFC 6675 section 5 (6)): cwnd = ssthresh."""
    st.cwnd = min(st.cwnd, st.ssthresh)
    st.in_recovery = False
    st.dupacks = 0


def on_rtt_sample(st: CongestionState, rtt_ns: int) -> None:
    """cubictcp_acked: the smallest RTT seen (delay_min)."""
    c = st.cubic
    if c is not None and (c.delay_min_ns == 0 or c.delay_min_ns > rtt_ns):
        c.delay_min_ns = rtt_ns


def _cubic_update(c: Cubic, cwnd: int, acked: int, now_j: int) -> None:
    """bictcp_update: cnt, the ACKs per one-packet increase, from the cubic function of the time
    since the epoch began and from the TCP-friendly (Reno-rate) window."""
    c.ack_cnt += acked
    if c.last_cwnd == cwnd and now_j - c.last_time <= HZ // 32:
        return
    if not (c.epoch_start is not None and now_j == c.last_time):
        c.last_cwnd = cwnd
        c.last_time = now_j
        if c.epoch_start is None:
            c.epoch_start = now_j
            c.ack_cnt = acked
            c.tcp_cwnd = cwnd
            if c.last_max_cwnd <= cwnd:
                c.bic_k = 0
                c.bic_origin_point = cwnd
            else:
                c.bic_k = icbrt(CUBE_FACTOR * (c.last_max_cwnd - cwnd))
                c.bic_origin_point = c.last_max_cwnd
        t = now_j - c.epoch_start + -(-c.delay_min_ns // NS_PER_JIFFY)  # + usecs_to_jiffies(delay_min)
        t = (t << BICTCP_HZ) // HZ
        offs = c.bic_k - t if t < c.bic_k else t - c.bic_k
        delta = (CUBE_RTT_SCALE * offs * offs * offs) >> (10 + 3 * BICTCP_HZ)
        target = c.bic_origin_point - delta if t < c.bic_k else c.bic_origin_point + delta
        c.cnt = cwnd // (target - cwnd) if target > cwnd else 100 * cwnd
        if c.last_max_cwnd == 0 and c.cnt > 20:
            c.cnt = 20  # 5 % per RTT while the available bandwidth is unknown
    delta = (cwnd * BETA_SCALE) >> 3
    while c.ack_cnt > delta:
        c.ack_cnt -= delta
        c.tcp_cwnd += 1
    if c.tcp_cwnd > cwnd:
        c.cnt = min(c.cnt, cwnd // (c.tcp_cwnd - cwnd))
    c.cnt = max(c.cnt, 2)


def _linux_cong_avoid(st: CongestionState, acked_bytes: int, now: int) -> None:
    """tcp_reno_cong_avoid / cubictcp_cong_avoid in packets: tcp_slow_start up to ssthresh, then
    tcp_cong_avoid_ai with w = cwnd (Reno) or CUBIC's cnt (bictcp_update). Not modelled: HyStart,
    and the is-cwnd-limited test."""
    c = st.cubic
    mss = st.mss
    cwnd, ssthresh = st.cwnd // mss, st.ssthresh // mss
    acked = max(1, -(-acked_bytes // mss))
    if cwnd < ssthresh:
        new = min(cwnd + acked, ssthresh)
        acked -= new - cwnd
        cwnd = new
    if acked > 0:
        if c is not None:
            _cubic_update(c, cwnd, acked, now // NS_PER_JIFFY)
            w = c.cnt
        else:
            w = cwnd
        if st.cwnd_cnt >= w:
            st.cwnd_cnt = 0
            cwnd += 1
        st.cwnd_cnt += acked
        if st.cwnd_cnt >= w:
            d = st.cwnd_cnt // w
            st.cwnd_cnt -= d * w
            cwnd += d
    st.cwnd = max(cwnd, 1) * mss


def on_new_ack(st: CongestionState, acked: int, ack: int, now: int = 0) -> bool:
    """A new ACK. Returns True when NewReno saw a partial ACK and the next hole must be resent."""
    if st.in_recovery:
        if st.recovery is Recovery.NEWRENO and ack < st.recover:
            st.cwnd = max(st.cwnd - acked + st.mss, st.mss)  # partial ACK: deflate, stay in recovery
            return True
        # Reno quirk (docs/tcp-rules.md#loss-recovery): deflate only if dupacks > 3; NewReno always on full ACK.
        if st.recovery is Recovery.NEWRENO or st.dupacks > DUPACK_THRESHOLD:
            st.cwnd = min(st.cwnd, st.ssthresh)
        st.in_recovery = False
    st.dupacks = 0
    if st.cwnd >= 1 << 30:
        return False
    if st.linux_ca:
        _linux_cong_avoid(st, acked, now)
        return False
    if st.cwnd < st.ssthresh:
        st.cwnd += st.mss
    else:
        st.cwnd += max(1, st.mss * st.mss // st.cwnd)
    return False


def on_dupack(st: CongestionState, snd_wnd: int, snd_max: int) -> bool:
    """A duplicate ACK. Returns True when the segment at snd_una must be fast-retransmitted."""
    st.dupacks += 1
    if st.dupacks == DUPACK_THRESHOLD:
        if st.recovery is Recovery.NEWRENO and st.in_recovery:
            return False
        _halve(st, snd_wnd)
        st.recover = snd_max
        if st.recovery is Recovery.TAHOE:
            st.cwnd = st.mss
        else:
            st.cwnd = st.ssthresh + DUPACK_THRESHOLD * st.mss
            st.in_recovery = True
        return True
    if st.dupacks > DUPACK_THRESHOLD and st.recovery is not Recovery.TAHOE and st.in_recovery:
        st.cwnd += st.mss
    return False
