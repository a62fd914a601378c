//! Congestion window and loss recovery (Tahoe, Reno, NewReno): simulate/tcp/congestion.py.

use super::personality::Recovery;
use super::rules::fdiv;

pub const DUPACK_THRESHOLD: i64 = 3;
const UNLIMITED: i64 = 1 << 30;

#[derive(Clone, Debug)]
pub struct CongestionState {
    pub recovery: Recovery,
    pub mss: i64,
    pub cwnd: i64,
    pub ssthresh: i64,
    pub dupacks: i64,
    pub recover: i64,
    pub in_recovery: bool,
}

pub fn new_state(recovery: Recovery, mss: i64, initial_segments: i64) -> CongestionState {
    let cwnd = if initial_segments <= 0 { UNLIMITED } else { initial_segments * mss };
    CongestionState { recovery, mss, cwnd, ssthresh: UNLIMITED, dupacks: 0, recover: 0, in_recovery: false }
}

fn halve(st: &mut CongestionState, wnd: i64) {
    st.ssthresh = 2.max(fdiv(fdiv(wnd.min(st.cwnd), 2), st.mss)) * st.mss;
}

pub fn on_timeout(st: &mut CongestionState, snd_wnd: i64) {
    halve(st, snd_wnd);
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

/// on_new_ack: true when NewReno saw a partial ACK and the next hole must be resent.
pub fn on_new_ack(st: &mut CongestionState, acked: i64, ack: i64) -> bool {
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
        let mut st = new_state(Recovery::Reno, 1000, 1);
        assert_eq!(st.cwnd, 1000);
        st.ssthresh = 3000;
        on_new_ack(&mut st, 1000, 1000);
        on_new_ack(&mut st, 1000, 2000);
        assert_eq!(st.cwnd, 3000);
        on_new_ack(&mut st, 1000, 3000);
        assert_eq!(st.cwnd, 3333); // + mss*mss/cwnd
        assert_eq!(new_state(Recovery::Tahoe, 1000, 0).cwnd, 1 << 30);
    }

    #[test]
    fn third_dupack_enters_recovery_per_flavour() {
        let mut reno = new_state(Recovery::Reno, 1000, 1);
        reno.cwnd = 8000;
        assert!(!on_dupack(&mut reno, 16000, 9000));
        assert!(!on_dupack(&mut reno, 16000, 9000));
        assert!(on_dupack(&mut reno, 16000, 9000));
        assert_eq!((reno.ssthresh, reno.cwnd, reno.in_recovery), (4000, 7000, true));
        on_dupack(&mut reno, 16000, 9000);
        assert_eq!(reno.cwnd, 8000);
        assert!(!on_new_ack(&mut reno, 1000, 9000));
        assert_eq!((reno.cwnd, reno.in_recovery), (4250, false)); // deflated to ssthresh (dupacks > 3), then + mss*mss/cwnd

        let mut tahoe = new_state(Recovery::Tahoe, 1000, 1);
        tahoe.cwnd = 8000;
        for _ in 0..2 {
            on_dupack(&mut tahoe, 16000, 9000);
        }
        assert!(on_dupack(&mut tahoe, 16000, 9000));
        assert_eq!((tahoe.cwnd, tahoe.in_recovery), (1000, false));

        let mut nr = new_state(Recovery::NewReno, 1000, 1);
        nr.cwnd = 8000;
        for _ in 0..3 {
            on_dupack(&mut nr, 16000, 9000);
        }
        assert!(on_new_ack(&mut nr, 2000, 3000)); // partial ACK below recover
        assert_eq!(nr.cwnd, 7000 - 2000 + 1000);
        on_timeout(&mut nr, 16000);
        assert_eq!((nr.cwnd, nr.ssthresh, nr.in_recovery), (1000, 3000, false));
    }
}
