//! Congestion window and loss recovery: Tahoe, Reno, NewReno (RFC 5681, RFC 6582,
//! docs/tcp-rules.md#loss-recovery). Modern Linux counts its window in packets and grows it by the
//! packets each ACK covers (tcp_slow_start, tcp_cong_avoid_ai), with Reno's halving or CUBIC's
//! growth and 0.7 reduction (net/ipv4/tcp_cubic.c, RFC 9438); the recovery on top is the same.

use super::personality::Recovery;
use super::rules::fdiv;

pub const DUPACK_THRESHOLD: i64 = 3;
const UNLIMITED: i64 = 1 << 30;

const NS_PER_JIFFY: i64 = 1_000_000; // HZ = 1000
const HZ: i64 = 1000;
const BICTCP_BETA_SCALE: i64 = 1024;
const BETA: i64 = 717;
const BICTCP_HZ: u32 = 10;
const BETA_SCALE: i64 = 8 * (BICTCP_BETA_SCALE + BETA) / 3 / (BICTCP_BETA_SCALE - BETA);
const CUBE_RTT_SCALE: i128 = 41 * 10;
const CUBE_FACTOR: i128 = (1i128 << (10 + 3 * BICTCP_HZ)) / CUBE_RTT_SCALE;

/// struct bictcp (tcp_cubic.c): windows in packets, times in jiffies; epoch_start None = no epoch.
#[derive(Clone, Debug, Default)]
pub struct Cubic {
    pub cnt: i64,
    pub last_max_cwnd: i64,
    pub last_cwnd: i64,
    pub last_time: i64,
    pub bic_origin_point: i64,
    pub bic_k: i64,
    pub delay_min_ns: i64,
    pub epoch_start: Option<i64>,
    pub ack_cnt: i64,
    pub tcp_cwnd: i64,
}

/// icbrt: floor of the cube root.
pub fn icbrt(x: i128) -> i64 {
    if x <= 0 {
        return 0;
    }
    let mut r = (x as f64).cbrt().round() as i128;
    while r * r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r as i64
}

#[derive(Clone, Debug)]
pub struct CongestionState {
    pub recovery: Recovery,
    pub mss: i64,
    pub cwnd: i64,
    pub ssthresh: i64,
    pub dupacks: i64,
    pub recover: i64,
    pub in_recovery: bool,
    /// Linux: window in packets, grown per packet acknowledged.
    pub linux_ca: bool,
    /// tp->snd_cwnd_cnt (linux_ca).
    pub cwnd_cnt: i64,
    pub cubic: Option<Cubic>,
}

pub fn new_state(recovery: Recovery, mss: i64, initial_segments: i64, linux_ca: bool, cubic: bool) -> CongestionState {
    let cwnd = if initial_segments <= 0 { UNLIMITED } else { initial_segments * mss };
    CongestionState {
        recovery,
        mss,
        cwnd,
        ssthresh: UNLIMITED,
        dupacks: 0,
        recover: 0,
        in_recovery: false,
        linux_ca: linux_ca || cubic,
        cwnd_cnt: 0,
        cubic: if cubic { Some(Cubic::default()) } else { None },
    }
}

fn halve(st: &mut CongestionState, wnd: i64) {
    if !st.linux_ca {
        st.ssthresh = 2.max(fdiv(fdiv(wnd.min(st.cwnd), 2), st.mss)) * st.mss;
        return;
    }
    let cwnd = fdiv(st.cwnd, st.mss);
    st.cwnd_cnt = 0; // tcp_init_cwnd_reduction, tcp_enter_loss
    let Some(c) = st.cubic.as_mut() else {
        st.ssthresh = (cwnd >> 1).max(2) * st.mss; // tcp_reno_ssthresh
        return;
    };
    // cubictcp_recalc_ssthresh
    c.epoch_start = None;
    c.last_max_cwnd = if cwnd < c.last_max_cwnd {
        cwnd * (BICTCP_BETA_SCALE + BETA) / (2 * BICTCP_BETA_SCALE)
    } else {
        cwnd
    };
    st.ssthresh = (cwnd * BETA / BICTCP_BETA_SCALE).max(2) * st.mss;
}

pub fn on_timeout(st: &mut CongestionState, snd_wnd: i64) {
    halve(st, snd_wnd);
    if st.cubic.is_some() {
        st.cubic = Some(Cubic::default()); // bictcp_reset on TCP_CA_Loss
    }
    st.cwnd = st.mss;
    st.dupacks = 0;
    st.in_recovery = false;
}

/// enter_sack_recovery (RFC 6675 section 5 (4.2)): ssthresh = cwnd = half the window.
pub fn enter_sack_recovery(st: &mut CongestionState, snd_wnd: i64, snd_max: i64) {
    halve(st, snd_wnd);
    st.cwnd = st.ssthresh;
    st.recover = snd_max;
    st.in_recovery = true;
}

/// enter_loss_without_reduction: tcp_simple_retransmit after a lost MTU probe (cwnd unchanged).
pub fn enter_loss_without_reduction(st: &mut CongestionState, snd_max: i64) {
    st.ssthresh = st.ssthresh.max(fdiv(st.cwnd * 3, 4));
    st.recover = snd_max;
    st.in_recovery = true;
}

/// leave_sack_recovery: the ACK reached the recovery point; cwnd = ssthresh.
pub fn leave_sack_recovery(st: &mut CongestionState) {
    st.cwnd = st.cwnd.min(st.ssthresh);
    st.in_recovery = false;
    st.dupacks = 0;
}

/// on_rtt_sample (cubictcp_acked): delay_min.
pub fn on_rtt_sample(st: &mut CongestionState, rtt_ns: i64) {
    if let Some(c) = st.cubic.as_mut() {
        if c.delay_min_ns == 0 || c.delay_min_ns > rtt_ns {
            c.delay_min_ns = rtt_ns;
        }
    }
}

/// cubic_update (bictcp_update).
fn cubic_update(c: &mut Cubic, cwnd: i64, acked: i64, now_j: i64) {
    c.ack_cnt += acked;
    if c.last_cwnd == cwnd && now_j - c.last_time <= HZ / 32 {
        return;
    }
    if !(c.epoch_start.is_some() && now_j == c.last_time) {
        c.last_cwnd = cwnd;
        c.last_time = now_j;
        if c.epoch_start.is_none() {
            c.epoch_start = Some(now_j);
            c.ack_cnt = acked;
            c.tcp_cwnd = cwnd;
            if c.last_max_cwnd <= cwnd {
                c.bic_k = 0;
                c.bic_origin_point = cwnd;
            } else {
                c.bic_k = icbrt(CUBE_FACTOR * i128::from(c.last_max_cwnd - cwnd));
                c.bic_origin_point = c.last_max_cwnd;
            }
        }
        let start = c.epoch_start.expect("epoch");
        let mut t = now_j - start + (c.delay_min_ns + NS_PER_JIFFY - 1).div_euclid(NS_PER_JIFFY);
        t = (t << BICTCP_HZ).div_euclid(HZ);
        let offs = i128::from(if t < c.bic_k { c.bic_k - t } else { t - c.bic_k });
        let delta = ((CUBE_RTT_SCALE * offs * offs * offs) >> (10 + 3 * BICTCP_HZ)) as i64;
        let target = if t < c.bic_k { c.bic_origin_point - delta } else { c.bic_origin_point + delta };
        c.cnt = if target > cwnd { fdiv(cwnd, target - cwnd) } else { 100 * cwnd };
        if c.last_max_cwnd == 0 && c.cnt > 20 {
            c.cnt = 20;
        }
    }
    let delta = (cwnd * BETA_SCALE) >> 3;
    while c.ack_cnt > delta {
        c.ack_cnt -= delta;
        c.tcp_cwnd += 1;
    }
    if c.tcp_cwnd > cwnd {
        c.cnt = c.cnt.min(fdiv(cwnd, c.tcp_cwnd - cwnd));
    }
    c.cnt = c.cnt.max(2);
}

/// linux_cong_avoid (tcp_reno_cong_avoid / cubictcp_cong_avoid in packets).
fn linux_cong_avoid(st: &mut CongestionState, acked_bytes: i64, now: i64) {
    let mss = st.mss;
    let (mut cwnd, ssthresh) = (fdiv(st.cwnd, mss), fdiv(st.ssthresh, mss));
    let mut acked = 1.max(-fdiv(-acked_bytes, mss));
    if cwnd < ssthresh {
        let new = (cwnd + acked).min(ssthresh);
        acked -= new - cwnd;
        cwnd = new;
    }
    if acked > 0 {
        let w = match st.cubic.as_mut() {
            Some(c) => {
                cubic_update(c, cwnd, acked, now.div_euclid(NS_PER_JIFFY));
                c.cnt
            }
            None => cwnd,
        };
        if st.cwnd_cnt >= w {
            st.cwnd_cnt = 0;
            cwnd += 1;
        }
        st.cwnd_cnt += acked;
        if st.cwnd_cnt >= w {
            let d = fdiv(st.cwnd_cnt, w);
            st.cwnd_cnt -= d * w;
            cwnd += d;
        }
    }
    st.cwnd = cwnd.max(1) * mss;
}

/// on_new_ack: true when NewReno saw a partial ACK and the next hole must be resent.
pub fn on_new_ack(st: &mut CongestionState, acked: i64, ack: i64, now: i64) -> bool {
    if st.in_recovery {
        if st.recovery == Recovery::NewReno && ack < st.recover {
            st.cwnd = (st.cwnd - acked + st.mss).max(st.mss);
            return true;
        }
        if st.recovery == Recovery::NewReno || st.dupacks > DUPACK_THRESHOLD {
            st.cwnd = st.cwnd.min(st.ssthresh);
        }
        st.in_recovery = false;
    }
    st.dupacks = 0;
    if st.cwnd >= UNLIMITED {
        return false;
    }
    if st.linux_ca {
        linux_cong_avoid(st, acked, now);
        return false;
    }
    if st.cwnd < st.ssthresh {
        st.cwnd += st.mss;
    } else {
        st.cwnd += 1.max(fdiv(st.mss * st.mss, st.cwnd));
    }
    false
}

/// on_dupack: true when the segment at snd_una must be fast-retransmitted.
pub fn on_dupack(st: &mut CongestionState, snd_wnd: i64, snd_max: i64) -> bool {
    st.dupacks += 1;
    if st.dupacks == DUPACK_THRESHOLD {
        if st.recovery == Recovery::NewReno && st.in_recovery {
            return false;
        }
        halve(st, snd_wnd);
        st.recover = snd_max;
        if st.recovery == Recovery::Tahoe {
            st.cwnd = st.mss;
        } else {
            st.cwnd = st.ssthresh + DUPACK_THRESHOLD * st.mss;
            st.in_recovery = true;
        }
        return true;
    }
    if st.dupacks > DUPACK_THRESHOLD && st.recovery != Recovery::Tahoe && st.in_recovery {
        st.cwnd += st.mss;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_then_congestion_avoidance() {
        let mut st = new_state(Recovery::Reno, 1000, 1, false, false);
        assert_eq!(st.cwnd, 1000);
        st.ssthresh = 3000;
        on_new_ack(&mut st, 1000, 1000, 0);
        on_new_ack(&mut st, 1000, 2000, 0);
        assert_eq!(st.cwnd, 3000);
        on_new_ack(&mut st, 1000, 3000, 0);
        assert_eq!(st.cwnd, 3333); // + mss*mss/cwnd
        assert_eq!(new_state(Recovery::Tahoe, 1000, 0, false, false).cwnd, 1 << 30);
    }

    #[test]
    fn cubic_cuts_to_0_7_and_regrows_to_the_old_maximum_around_k() {
        let mss = 1000;
        let mut st = new_state(Recovery::NewReno, mss, 10, true, true);
        st.cwnd = 100 * mss;
        on_rtt_sample(&mut st, 100_000_000);
        enter_sack_recovery(&mut st, 1 << 30, 0);
        leave_sack_recovery(&mut st);
        assert_eq!((st.cwnd, st.ssthresh), (70 * mss, 70 * mss));
        let mut now = 0;
        for _ in 0..42 {
            let w = st.cwnd / mss;
            for i in 0..w {
                on_new_ack(&mut st, mss, 0, now + 100_000_000 * i / w);
            }
            now += 100_000_000;
        }
        let k = st.cubic.as_ref().unwrap().bic_k;
        assert_eq!(k, 4316); // cbrt(100 * 0.3 / 0.4) s in 1/1024 s
        assert!((99..=101).contains(&(st.cwnd / mss)), "{}", st.cwnd / mss);
        assert_eq!(icbrt(27_000_000_000), 3000);
        assert_eq!(icbrt(26_999_999_999), 2999);
    }

    #[test]
    fn linux_counts_the_packets_each_ack_covers() {
        let mss = 1000;
        let mut linux = new_state(Recovery::NewReno, mss, 10, true, false);
        let mut bsd = new_state(Recovery::NewReno, mss, 10, false, false);
        on_new_ack(&mut linux, 2 * mss, 0, 0);
        on_new_ack(&mut bsd, 2 * mss, 0, 0);
        assert_eq!((linux.cwnd, bsd.cwnd), (12 * mss, 11 * mss));
        linux.ssthresh = linux.cwnd;
        for _ in 0..6 {
            on_new_ack(&mut linux, 2 * mss, 0, 0);
        }
        assert_eq!(linux.cwnd, 13 * mss);
        for _ in 0..3 {
            on_dupack(&mut linux, 1 << 30, 0);
        }
        assert_eq!(linux.ssthresh, 6 * mss);
    }

    #[test]
    fn third_dupack_enters_recovery_per_flavour() {
        let mut reno = new_state(Recovery::Reno, 1000, 1, false, false);
        reno.cwnd = 8000;
        assert!(!on_dupack(&mut reno, 16000, 9000));
        assert!(!on_dupack(&mut reno, 16000, 9000));
        assert!(on_dupack(&mut reno, 16000, 9000));
        assert_eq!((reno.ssthresh, reno.cwnd, reno.in_recovery), (4000, 7000, true));
        on_dupack(&mut reno, 16000, 9000);
        assert_eq!(reno.cwnd, 8000);
        assert!(!on_new_ack(&mut reno, 1000, 9000, 0));
        assert_eq!((reno.cwnd, reno.in_recovery), (4250, false)); // deflated to ssthresh (dupacks > 3), then + mss*mss/cwnd

        let mut tahoe = new_state(Recovery::Tahoe, 1000, 1, false, false);
        tahoe.cwnd = 8000;
        for _ in 0..2 {
            on_dupack(&mut tahoe, 16000, 9000);
        }
        assert!(on_dupack(&mut tahoe, 16000, 9000));
        assert_eq!((tahoe.cwnd, tahoe.in_recovery), (1000, false));

        let mut nr = new_state(Recovery::NewReno, 1000, 1, false, false);
        nr.cwnd = 8000;
        for _ in 0..3 {
            on_dupack(&mut nr, 16000, 9000);
        }
        assert!(on_new_ack(&mut nr, 2000, 3000, 0)); // partial ACK below recover
        assert_eq!(nr.cwnd, 7000 - 2000 + 1000);
        on_timeout(&mut nr, 16000);
        assert_eq!((nr.cwnd, nr.ssthresh, nr.in_recovery), (1000, 3000, false));
    }
}
