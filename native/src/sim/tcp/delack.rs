//! Delayed-ACK policies (RFC 1122 section 4.2.3.2, docs/tcp-rules.md#delayed-ack-timers): the BSD
//! global 200 ms tick, FreeBSD's one-shot callout with an ACK every second segment, Linux's ATO
//! estimate with quick-ACK mode, Linux 2.0's tcp_delack_estimator, and Tru64's small-sender
//! inference (docs/tcp-rules.md#small-sender-inference).

use super::personality::{DelAckPolicy, Personality};
use super::rules::fdiv;

const NS_PER_MS: i64 = 1_000_000;
pub const LINUX_ATO_MIN: i64 = 40 * NS_PER_MS;
pub const LINUX_ATO_MAX: i64 = 200 * NS_PER_MS;
pub const LINUX_QUICKACK_MAX: i64 = 16;
pub const LINUX20_JIFFY: i64 = 10 * NS_PER_MS;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AckNow {
    Now,
    Delay,
}

#[derive(Clone, Debug)]
pub struct DelAckState {
    pub policy: DelAckPolicy,
    pub ato_ns: i64,
    pub quick: i64,
    pub unacked_segments: i64,
    pub largest_outstanding: i64,
    pub last_data_at: Option<i64>,
}

pub fn new_state(p: &Personality, rcvbuf: i64, rcv_mss: i64) -> DelAckState {
    let mut st = DelAckState {
        policy: p.delack,
        ato_ns: p.delack_ns,
        quick: 0,
        unacked_segments: 0,
        largest_outstanding: 0,
        last_data_at: None,
    };
    if p.delack == DelAckPolicy::LinuxAto {
        st.ato_ns = LINUX_ATO_MIN;
        st.quick = fdiv(rcvbuf, 2 * rcv_mss).clamp(2, LINUX_QUICKACK_MAX);
    }
    st
}

/// on_data: decide for one arriving data segment.
#[allow(clippy::too_many_arguments)]
pub fn on_data(
    p: &Personality,
    st: &mut DelAckState,
    now: i64,
    in_order: bool,
    unacked_bytes: i64,
    rcv_mss: i64,
    infer_small_sender: bool,
    rto_ns: i64,
    srtt_ns: i64,
) -> AckNow {
    let gap = st.last_data_at.map(|t| now - t);
    st.last_data_at = Some(now);
    if !in_order {
        return AckNow::Now;
    }
    if infer_small_sender {
        st.largest_outstanding = st.largest_outstanding.max(unacked_bytes);
        if st.largest_outstanding >= rcv_mss && 2 * unacked_bytes >= st.largest_outstanding {
            return AckNow::Now;
        }
    }
    match st.policy {
        DelAckPolicy::BsdTick => AckNow::Delay,
        DelAckPolicy::FreeBsd => {
            st.unacked_segments += 1;
            if st.unacked_segments >= 2 { AckNow::Now } else { AckNow::Delay }
        }
        DelAckPolicy::LinuxAto => {
            if let Some(gap) = gap {
                if gap <= fdiv(st.ato_ns, 2) {
                    st.ato_ns = fdiv(st.ato_ns, 2) + fdiv(LINUX_ATO_MIN, 2);
                } else if gap < st.ato_ns {
                    st.ato_ns = (fdiv(st.ato_ns, 2) + gap).min(rto_ns);
                }
                st.ato_ns = st.ato_ns.clamp(LINUX_ATO_MIN, LINUX_ATO_MAX);
            }
            if st.quick > 0 || unacked_bytes > rcv_mss { AckNow::Now } else { AckNow::Delay }
        }
        DelAckPolicy::Linux20Ato => {
            if let Some(gap) = gap {
                let m = 1.max(fdiv(now, LINUX20_JIFFY) - fdiv(now - gap, LINUX20_JIFFY)) * LINUX20_JIFFY;
                let srtt_j = fdiv(srtt_ns, LINUX20_JIFFY) * LINUX20_JIFFY;
                st.ato_ns = if m > srtt_j { srtt_j } else { fdiv(st.ato_ns, 2) + m };
            }
            if unacked_bytes >= p.linux20_max_unacked { AckNow::Now } else { AckNow::Delay }
        }
    }
}

pub fn on_ack_sent(st: &mut DelAckState) {
    st.unacked_segments = 0;
    if st.quick > 0 {
        st.quick -= 1;
    }
}

/// one_shot_delay: the delay of the one-shot delayed-ACK timer, None for the global tick.
pub fn one_shot_delay(st: &DelAckState, now: i64) -> Option<i64> {
    match st.policy {
        DelAckPolicy::BsdTick => None,
        DelAckPolicy::Linux20Ato => {
            let fire = -fdiv(-(now + st.ato_ns), LINUX20_JIFFY) * LINUX20_JIFFY;
            Some(fire - now)
        }
        _ => Some(st.ato_ns),
    }
}

#[cfg(test)]
mod tests {
    use super::super::personality::{Personality, FREEBSD4, LINUX, LINUX20, SUNOS41, TRU64};
    use super::*;

    const MS: i64 = 1_000_000;

    fn feed(p: &Personality, segments: &[i64], infer: bool) -> Vec<AckNow> {
        let (rcvbuf, mss) = (32768, 1460);
        let mut st = new_state(p, rcvbuf, mss);
        let (mut out, mut unacked) = (Vec::new(), 0);
        for (i, &len) in segments.iter().enumerate() {
            unacked += len;
            let d = on_data(p, &mut st, i as i64 * MS, true, unacked, mss, infer, 1000 * MS, 0);
            out.push(d);
            if d == AckNow::Now {
                on_ack_sent(&mut st);
                unacked = 0;
            }
        }
        out
    }

    #[test]
    fn delayed_ack_policies_as_transition_table() {
        use AckNow::*;
        assert_eq!(feed(&SUNOS41, &[1460; 4], false), vec![Delay; 4]);
        assert_eq!(feed(&FREEBSD4, &[1460; 4], false), vec![Delay, Now, Delay, Now]);
        let linux = feed(&LINUX, &[1460; 14], false);
        assert_eq!(linux[..11], [Now; 11]);
        assert_eq!(linux[11..], [Delay, Now, Delay]);
        assert_eq!(feed(&TRU64, &[1460, 1460], true), vec![Now, Now]);
        assert_eq!(feed(&TRU64, &[1460, 1460], false), vec![Delay, Delay]);
    }

    #[test]
    fn one_shot_timers() {
        assert_eq!(one_shot_delay(&new_state(&SUNOS41, 4096, 536), 0), None);
        assert_eq!(one_shot_delay(&new_state(&FREEBSD4, 4096, 536), 0), Some(100 * MS));
        // Linux 2.0: HZ/3 from 5 ms rounds up to the next 10 ms jiffy (340 ms).
        assert_eq!(one_shot_delay(&new_state(&LINUX20, 4096, 536), 5 * MS), Some(335 * MS));
    }
}
