//! Delayed-ACK policies (RFC 1122 section 4.2.3.2, docs/tcp-rules.md#delayed-ack-timers): the BSD
//! global 200 ms tick, FreeBSD's one-shot callout with an ACK every second segment, Linux's ATO
//! estimate with quick-ACK mode, Linux 2.0's tcp_delack_estimator, and Tru64's small-sender
//! inference (docs/tcp-rules.md#small-sender-inference) in two forms: the kernel's, decided by
//! tcp_output's window-update tests once the reader has read (`note_sent_into_window`,
//! `small_sender_update_due`), where the host models when its reads run; and an approximation
//! decided here on arrival (`infer_on_arrival`) where reads are instantaneous (bulk transfers).

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
    infer_on_arrival: bool,
    rto_ns: i64,
    srtt_ns: i64,
) -> AckNow {
    let gap = st.last_data_at.map(|t| now - t);
    st.last_data_at = Some(now);
    if !in_order {
        return AckNow::Now;
    }
    if infer_on_arrival {
        // The small-sender inference decided on arrival, with the bytes unacknowledged for the
        // largest distance: with a reader that runs at once this is what the window-update test
        // after its read would decide, but for the window it then advertises (the segment not yet
        // read) and hole fills (never counted here).
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

/// Tru64's small-sender inference, first half (OSF/1 tcp_input, fast and slow path alike, on every
/// data segment): "Note the amount of data that peer has sent into our window, in order to
/// estimate the sender's buffer size": len = so_rcv.sb_hiwat - (rcv_adv - rcv_nxt), kept as the
/// largest value seen (`max_rcvd`). It counts the bytes received since the last ACK or window
/// update plus those left unread when it was sent (they had shrunk the window it advertised).
pub fn note_sent_into_window(max_rcvd: i64, rcv_hiwat: i64, rcv_adv: i64, rcv_nxt: i64) -> i64 {
    max_rcvd.max(rcv_hiwat - (rcv_adv - rcv_nxt))
}

/// Tru64's small-sender inference, second half: a third window-update test in tcp_output, after
/// the 2 MSS and half-buffer ones ("If peer's send buffer is small, but not tiny!"). As Mogul
/// section 9 describes the Tru64 V4.0F kernel he measured: the largest value is at least one MSS
/// and the update would advance the advertised window by at least half of it. (The OSF/1 1.0
/// source, tcp_output.c 4.3.5.2 of 1993, tests both strictly: max_rcvd > t_maxseg && 2 * adv >
/// max_rcvd; docs/tcp-rules.md#small-sender-inference says why the paper's reading is kept.)
pub fn small_sender_update_due(max_rcvd: i64, adv: i64, maxseg: i64) -> bool {
    adv > 0 && max_rcvd >= maxseg && 2 * adv >= max_rcvd
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
        // Tru64 without the inference, or with it decided at the read (not here), delays like
        // 4.4BSD; the arrival-time approximation ACKs each full segment.
        assert_eq!(feed(&TRU64, &[1460, 1460], false), vec![Delay, Delay]);
        assert_eq!(feed(&TRU64, &[1460, 1460], true), vec![Now, Now]);
    }

    /// A reader that reads after every `batch` arrivals of `len` bytes (32 KB buffer, MSS 1460):
    /// per read, whether the window update (4.4BSD's 2 MSS / half-buffer tests plus the
    /// inference) sends an ACK, and max_rcvd after it.
    fn reads(segments: &[(i64, usize)]) -> Vec<(bool, i64)> {
        let (hiwat, mss) = (32768, 1460);
        let (mut rcv_nxt, mut rcv_adv, mut max_rcvd) = (0, hiwat, 0);
        let mut out = Vec::new();
        for &(len, batch) in segments {
            for _ in 0..batch {
                rcv_nxt += len;
                max_rcvd = note_sent_into_window(max_rcvd, hiwat, rcv_adv, rcv_nxt);
            }
            let adv = hiwat - (rcv_adv - rcv_nxt); // everything read: the whole buffer is free
            let ack = adv >= 2 * mss || 2 * adv >= hiwat || small_sender_update_due(max_rcvd, adv, mss);
            if ack {
                rcv_adv = rcv_nxt + hiwat;
            }
            out.push((ack, max_rcvd));
        }
        out
    }

    #[test]
    fn small_sender_inference_as_transition_table() {
        // Each full segment read alone: the first reaches one MSS, is ACKed, and so is every
        // later one (the sender looks like one whose buffer holds a segment or two).
        assert_eq!(reads(&[(1460, 1); 4]), vec![(true, 1460); 4]);
        // Two segments before one read: 2 MSS, still "small" (2 * 1460 >= 2920), ACKed singly after.
        assert_eq!(reads(&[(1460, 2), (1460, 1)]), vec![(true, 2920), (true, 2920)]);
        // Three before one read: max_rcvd 4380, a lone full segment no longer reaches half of it,
        // and from then on only the 2 MSS rule ACKs: the inference is over for the connection.
        assert_eq!(reads(&[(1460, 3), (1460, 1), (1460, 1)]), vec![(true, 4380), (false, 4380), (true, 4380)]);
        // Below one MSS nothing is inferred (one 1000-byte segment waits for the tick); once
        // the largest value passes one MSS, half of it is enough.
        assert_eq!(reads(&[(1000, 1), (1000, 1), (1000, 1)]), vec![(false, 1000), (true, 2000), (true, 2000)]);
    }

    #[test]
    fn mogul_msmv_12289_bytes_on_fddi() {
        // Mogul section 9: 4096, then 4312 (full) and 3880 with MSS 4312. The inference ACKs the
        // full segment (8408 since the last ACK) and must then delay the 3880 (2 * 3880 < 8408);
        // 4.4BSD's rules alone ACK only the third packet (12288 >= 2 * MSS).
        let (hiwat, mss) = (32768, 4312);
        let mut max_rcvd = 0;
        let mut rcv_adv = hiwat;
        let mut since = 0;
        let mut acks = Vec::new();
        for len in [4096, 4312, 3880] {
            since += len;
            max_rcvd = note_sent_into_window(max_rcvd, hiwat, rcv_adv, since);
            let adv = hiwat - (rcv_adv - since);
            let ack = adv >= 2 * mss || 2 * adv >= hiwat || small_sender_update_due(max_rcvd, adv, mss);
            if ack {
                rcv_adv = since + hiwat;
            }
            acks.push(ack);
        }
        assert_eq!(acks, vec![false, true, false]);
        assert!(!small_sender_update_due(0, 3880, mss) && !small_sender_update_due(8408, 0, mss));
    }

    #[test]
    fn one_shot_timers() {
        assert_eq!(one_shot_delay(&new_state(&SUNOS41, 4096, 536), 0), None);
        assert_eq!(one_shot_delay(&new_state(&FREEBSD4, 4096, 536), 0), Some(100 * MS));
        // Linux 2.0: HZ/3 from 5 ms rounds up to the next 10 ms jiffy (340 ms).
        assert_eq!(one_shot_delay(&new_state(&LINUX20, 4096, 536), 5 * MS), Some(335 * MS));
    }
}
