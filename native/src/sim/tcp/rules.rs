//! Pure per-rule decisions of the TCP host (docs/tcp-rules.md), each testable as a transition
//! table: nothing here holds simulator state, every input is passed in.

use super::personality::{CopyRule, Personality, WindowUpdateRule};

pub const IP_TCP_HEADERS: i64 = 40;
pub const TIMESTAMP_OPTION: i64 = 12;
/// BSD tcp_backoff[]: the multiplier for the n-th retransmission.
pub const BACKOFF: [i64; 13] = [1, 2, 4, 8, 16, 32, 64, 64, 64, 64, 64, 64, 64];
pub const MAX_RXTSHIFT: i64 = 12;

/// Floor division: toward minus infinity like the kernels' arithmetic right shifts, unlike `/`
/// (the RTT smoothing of negative errors depends on it). Every divisor here is positive.
#[inline]
pub fn fdiv(a: i64, b: i64) -> i64 {
    a.div_euclid(b)
}

/// Which of BSD tcp_output's data tests lets the data go (docs/tcp-rules.md#bsd-output-decision-order).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SendReason {
    FullSegment,
    NagleOk,
    Persist,
    HalfPeerWindow,
    Retransmit,
}

/// sosend_chunk: bytes copied before the next PRU_SEND; 0 means the writer sleeps. The low-water
/// test runs when a copy round starts; `in_round`: a 4.4BSD/OSF round still uses its space.
pub fn sosend_chunk(p: &Personality, resid: i64, space: i64, in_round: bool, lowat: Option<i64>) -> i64 {
    if resid <= 0 {
        return 0;
    }
    let mark = lowat.unwrap_or(p.writer_lowat);
    if space <= 0 || (!in_round && space < resid && space < mark) {
        return 0;
    }
    if p.mbuf_threshold != 0 && resid >= p.mbuf_threshold {
        return resid.min(p.mclbytes); // OSF/1: the cluster does not depend on the space left
    }
    let n = resid.min(space);
    match p.copy_rule {
        CopyRule::SunosChunk => n.min(p.send_chunk),
        CopyRule::PerCluster => n.min(p.mclbytes),
        CopyRule::WholeWrite => n,
    }
}

/// sosend_rounds: 4.4BSD/OSF sosend measures sbspace once per round and copies cluster after
/// cluster until that space is used up; SunOS re-measures per 4 KB chunk, Linux appends it all.
pub fn sosend_rounds(p: &Personality) -> bool {
    p.copy_rule == CopyRule::PerCluster
}

/// bsd_send_reason: the data tests of BSD tcp_output in order; `nagle_ok` is step 2 as the
/// Nagle module decided it. None: the data is held.
pub fn bsd_send_reason(
    length: i64,
    maxseg: i64,
    nagle_ok: bool,
    force: bool,
    max_sndwnd: i64,
    retransmitting: bool,
) -> Option<SendReason> {
    if length <= 0 {
        return None;
    }
    if length >= maxseg {
        return Some(SendReason::FullSegment);
    }
    if nagle_ok {
        return Some(SendReason::NagleOk);
    }
    if force {
        return Some(SendReason::Persist);
    }
    if max_sndwnd > 0 && length >= fdiv(max_sndwnd, 2) {
        return Some(SendReason::HalfPeerWindow);
    }
    if retransmitting {
        return Some(SendReason::Retransmit);
    }
    None
}

/// window_update_due: should a read send a pure window update?
pub fn window_update_due(rule: WindowUpdateRule, adv: i64, rcv_cc: i64, rcv_hiwat: i64, maxseg: i64, peer_has: i64) -> bool {
    if adv <= 0 {
        return false;
    }
    match rule {
        WindowUpdateRule::Sunos35 => (rcv_cc == 0 && adv >= 2 * maxseg) || fdiv(100 * adv, rcv_hiwat) >= 35,
        WindowUpdateRule::Bsd50 => adv >= 2 * maxseg || 2 * adv >= rcv_hiwat,
        WindowUpdateRule::Linux => 2 * peer_has <= rcv_hiwat && adv + peer_has >= 2 * peer_has,
    }
}

/// receive_window: receiver silly-window avoidance and never shrinking.
pub fn receive_window(space: i64, hiwat: i64, maxseg: i64, peer_has: i64, max_window: i64) -> i64 {
    let mut win = space;
    if win < fdiv(hiwat, 4) && win < maxseg {
        win = 0;
    }
    win = win.min(max_window);
    win.max(peer_has)
}

/// offered_mss: the MSS put in our SYN, from the interface MTU.
pub fn offered_mss(_p: &Personality, if_mtu: i64) -> i64 {
    if_mtu - IP_TCP_HEADERS
}

/// select_mss (tcp_mss): the timestamp option comes off after the peer's offer.
pub fn select_mss(
    p: &Personality,
    if_mtu: i64,
    peer_offer: Option<i64>,
    route_mtu: Option<i64>,
    timestamps: bool,
) -> i64 {
    let mut mss = route_mtu.unwrap_or(if_mtu) - IP_TCP_HEADERS;
    if let Some(offer) = peer_offer {
        mss = mss.min(offer);
    }
    if timestamps {
        mss -= TIMESTAMP_OPTION;
    }
    if p.mss_cluster_round && mss > p.mclbytes {
        mss = fdiv(mss, p.mclbytes) * p.mclbytes;
    }
    mss.max(1)
}

/// round_buffer: 4.4BSD rounds socket buffers up to a multiple of the MSS.
pub fn round_buffer(p: &Personality, size: i64, mss: i64) -> i64 {
    if p.buffer_round_to_mss && size.rem_euclid(mss) != 0 {
        return (fdiv(size, mss) + 1) * mss;
    }
    size
}

/// rto_ns: srtt + k * rttvar clamped to [min, max].
pub fn rto_ns(p: &Personality, srtt_ns: i64, rttvar_ns: i64) -> i64 {
    (srtt_ns + p.rttvar_mult * rttvar_ns).max(p.rto_min_ns).min(p.rto_max_ns)
}

/// LinuxRtt: tcp_sock's srtt_us (x8), mdev_us (x4), mdev_max_us, rttvar_us and rtt_seq, in ns.
#[derive(Clone, Debug, Default)]
pub struct LinuxRtt {
    pub srtt8: i64,
    pub mdev4: i64,
    pub mdev_max: i64,
    pub rttvar: i64,
    pub rtt_seq: i64,
}

/// linux_rtt_estimator: net/ipv4/tcp_input.c tcp_rtt_estimator, line for line.
pub fn linux_rtt_estimator(st: &mut LinuxRtt, mut m: i64, snd_una: i64, snd_nxt: i64, rto_min: i64) {
    if st.srtt8 != 0 {
        m -= st.srtt8 >> 3;
        st.srtt8 += m;
        if m < 0 {
            m = -m;
            m -= st.mdev4 >> 2;
            if m > 0 {
                m >>= 3;
            }
        } else {
            m -= st.mdev4 >> 2;
        }
        st.mdev4 += m;
        if st.mdev4 > st.mdev_max {
            st.mdev_max = st.mdev4;
            if st.mdev_max > st.rttvar {
                st.rttvar = st.mdev_max;
            }
        }
        if snd_una > st.rtt_seq {
            if st.mdev_max < st.rttvar {
                st.rttvar -= (st.rttvar - st.mdev_max) >> 2;
            }
            st.rtt_seq = snd_nxt;
            st.mdev_max = rto_min;
        }
    } else {
        st.srtt8 = m << 3;
        st.mdev4 = m << 1;
        st.rttvar = st.mdev4.max(rto_min);
        st.mdev_max = st.rttvar;
        st.rtt_seq = snd_nxt;
    }
    st.srtt8 = st.srtt8.max(1);
}

/// tsopt_rtt_ns: Linux tcp_rtt_tsopt_us, the round trip read from an ACK's timestamp echo: our
/// clock now less the TSecr, in whole ticks of the timestamp clock, a zero delta counted as one
/// tick; None for a TSecr of 0 (RFC 7323: not an echo) or a delta past INT_MAX / 1000 ticks (a
/// bogus echo, tcp_rtt_tsopt_us's -1).
pub fn tsopt_rtt_ns(tsval_now: u32, tsecr: u32, tick_ns: i64) -> Option<i64> {
    if tsecr == 0 {
        return None;
    }
    let delta = i64::from(tsval_now.wrapping_sub(tsecr));
    if delta >= i64::from(i32::MAX) / 1000 {
        return None;
    }
    Some(delta.max(1) * tick_ns)
}

/// linux_rto_ns (tcp_set_rto): srtt + rttvar, bounded by TCP_RTO_MAX.
pub fn linux_rto_ns(p: &Personality, st: &LinuxRtt) -> i64 {
    ((st.srtt8 >> 3) + st.rttvar).min(p.rto_max_ns)
}

/// t_srtt: slow ticks scaled by 8 (TCP_RTT_SHIFT); t_rttvar: scaled by 4 (TCP_RTTVAR_SHIFT).
pub const RTT_SHIFT: u32 = 3;
pub const RTTVAR_SHIFT: u32 = 2;

/// bsd_xmit_timer: 4.4BSD / OSF tcp_xmit_timer on integer slow ticks (x8 and x4, origin 0,
/// floored at 1); the integer arithmetic keeps rttvar at 3/4 tick on a LAN.
pub fn bsd_xmit_timer(srtt_fp: Option<i64>, rttvar_fp: i64, rtt_ticks: i64) -> (i64, i64) {
    let Some(srtt_fp) = srtt_fp else {
        return (rtt_ticks << RTT_SHIFT, rtt_ticks << (RTTVAR_SHIFT - 1)); // first retransmit at 3 x rtt
    };
    let delta = rtt_ticks - 1 - (srtt_fp >> RTT_SHIFT);
    let srtt_fp = (srtt_fp + delta).max(1);
    let delta = delta.abs() - (rttvar_fp >> RTTVAR_SHIFT);
    let rttvar_fp = (rttvar_fp + delta).max(1);
    (srtt_fp, rttvar_fp)
}

/// bsd_rexmtval_ticks: TCP_REXMTVAL = (t_srtt >> 3) + t_rttvar, in slow ticks.
pub fn bsd_rexmtval_ticks(srtt_fp: i64, rttvar_fp: i64) -> i64 {
    (srtt_fp >> RTT_SHIFT) + rttvar_fp
}

fn backoff(shift: i64) -> i64 {
    BACKOFF[shift.clamp(0, BACKOFF.len() as i64 - 1) as usize]
}

/// backed_off_rto: base * tcp_backoff[shift], clamped.
pub fn backed_off_rto(p: &Personality, base_ns: i64, shift: i64) -> i64 {
    (base_ns * backoff(shift)).max(p.rto_min_ns).min(p.rto_max_ns)
}

/// ticks_for: a delay rounded up to whole ticks, at least one.
pub fn ticks_for(delay_ns: i64, tick_ns: i64) -> i64 {
    1.max(-fdiv(-delay_ns, tick_ns))
}

/// persist_ns: (srtt + 2 rttvar) * backoff, clamped to [5 s, 60 s].
pub fn persist_ns(srtt_ns: i64, rttvar_ns: i64, shift: i64) -> i64 {
    let base = (srtt_ns + 2 * rttvar_ns) * backoff(shift);
    base.clamp(5_000_000_000, 60_000_000_000)
}

/// Linux black-hole detection (net/ipv4/tcp_timer.c, RFC 4821): tcp_write_timeout calls
/// tcp_mtu_probing once retransmits_timed_out(tcp_retries1 = 3), i.e. the model timeout
/// ((2 << 3) - 1) * TCP_RTO_MIN = 3 s has passed since the episode's first retransmission; then
/// tcp_base_mss (1024), never below tcp_mtu_probe_floor (48). A capture of this kernel through a
/// 1500-byte black hole shows four full-size retransmissions, the fifth (3.2 s on) at 1024 bytes.
pub const LINUX_BASE_MSS: i64 = 1024;
pub const LINUX_MTU_PROBE_FLOOR: i64 = 48;
pub const LINUX_BLACK_HOLE_AFTER_NS: i64 = 15 * 200_000_000;

pub fn black_hole_suspected(first_rexmit_at: Option<i64>, now: i64) -> bool {
    matches!(first_rexmit_at, Some(t) if now - t >= LINUX_BLACK_HOLE_AFTER_NS)
}

#[cfg(test)]
mod tests {
    use super::super::personality::{BSD44, FREEBSD4, LINUX, LINUX20, SUNOS41, TRU64};
    use super::*;

    const MSS: i64 = 9204;

    #[test]
    fn bsd_output_decision_order() {
        use SendReason::*;
        let cases: [(i64, bool, bool, i64, bool, Option<SendReason>); 8] = [
            (9204, false, false, 32768, false, Some(FullSegment)),
            (3084, true, false, 32768, false, Some(NagleOk)),
            (3084, false, true, 32768, false, Some(Persist)),
            (4096, false, false, 8192, false, Some(HalfPeerWindow)),
            (4095, false, false, 8192, false, None),
            (3084, false, false, 32768, true, Some(Retransmit)),
            (3084, false, false, 32768, false, None),
            (0, true, true, 32768, true, None),
        ];
        for (length, ok, force, maxw, rexmit, expected) in cases {
            assert_eq!(bsd_send_reason(length, MSS, ok, force, maxw, rexmit), expected, "length {length}");
        }
    }

    #[test]
    fn window_update_thresholds() {
        use WindowUpdateRule::*;
        let cases = [
            (Sunos35, 8192, 5108, 32768, 19468, false),
            (Sunos35, 13300, 0, 32768, 19468, true),
            (Sunos35, 4096, 0, 16384, 12288, false),
            (Sunos35, 5735, 100, 16384, 0, true),
            (Sunos35, 18408, 100, 65536, 0, false),
            (Sunos35, 18408, 0, 65536, 0, true),
            (Bsd50, 18408, 9000, 65536, 0, true),
            (Bsd50, 8192, 0, 16384, 0, true),
            (Bsd50, 8191, 0, 16384, 0, false),
            (Linux, 20000, 0, 32768, 12000, true),
            (Linux, 20000, 0, 32768, 20000, false),
        ];
        for (rule, adv, cc, hiwat, peer, expected) in cases {
            assert_eq!(window_update_due(rule, adv, cc, hiwat, MSS, peer), expected, "{rule:?} adv {adv}");
        }
    }

    #[test]
    fn sosend_chunking() {
        assert_eq!(sosend_chunk(&SUNOS41, 8192, 16384, false, None), 4096);
        assert_eq!(sosend_chunk(&SUNOS41, 8192, 3084, false, None), 3084);
        assert_eq!(sosend_chunk(&SUNOS41, 8192, 1012, false, None), 0);
        assert_eq!(sosend_chunk(&SUNOS41, 500, 1012, false, None), 500);
        assert_eq!(sosend_chunk(&BSD44, 8192, 16384, false, None), 2048);
        assert_eq!(sosend_chunk(&LINUX, 8192, 16384, false, None), 8192);
        assert_eq!(sosend_chunk(&LINUX, 8192, 0, false, None), 0);
        // Inside a 4.4BSD round the low-water mark is not tested again.
        assert_eq!(sosend_chunk(&BSD44, 8192, 1000, false, None), 0);
        assert_eq!(sosend_chunk(&BSD44, 8192, 1000, true, None), 1000);
        assert!(sosend_rounds(&BSD44) && !sosend_rounds(&SUNOS41) && !sosend_rounds(&LINUX));
    }

    #[test]
    fn sosend_round_tests_the_low_water_mark_once() {
        // 4.4BSD/OSF sosend tests space against sb_lowat when a round starts, then copies cluster
        // by cluster until that space is used (`} while (resid && space > 0)`); SunOS re-tests
        // per chunk (docs/tcp-rules.md#socket-copy-loop).
        assert_eq!(sosend_chunk(&BSD44, 20000, 12000, false, None), 2048); // round starts: 12000 >= lowat
        assert_eq!(sosend_chunk(&BSD44, 1808, 1000, false, None), 0); // a new round would sleep
        assert_eq!(sosend_chunk(&BSD44, 1808, 1000, true, None), 1000); // the round goes on
        assert_eq!(sosend_chunk(&TRU64, 11808, 3808, false, None), 0); // OSF: 3808 < 8192
        assert!(sosend_rounds(&TRU64) && sosend_rounds(&BSD44));
        assert!(!sosend_rounds(&SUNOS41) && !sosend_rounds(&LINUX));
    }

    #[test]
    fn osf_sosend_cluster_does_not_depend_on_the_space_left() {
        // DEC OSF/1 uipc_socket.c (mbufthreshold = 1024): with at least 1024 bytes of the write
        // left, a cluster of min(resid, MCLBYTES) even when the round has less space, so a round
        // can pass sb_hiwat by up to a cluster; below it small mbufs fill at most the space.
        // 4.4BSD bounds every copy by the space.
        assert_eq!(sosend_chunk(&TRU64, 11808, 3808, true, None), 8192); // overshoots by 4384
        assert_eq!(sosend_chunk(&TRU64, 3616, 864, true, None), 3616);
        assert_eq!(sosend_chunk(&TRU64, 900, 500, true, None), 500); // small mbufs: bounded
        assert_eq!(sosend_chunk(&TRU64, 11808, 0, true, None), 0); // the round ended
        let bsd_8k = Personality { mclbytes: 8192, ..BSD44 };
        assert_eq!(sosend_chunk(&bsd_8k, 11808, 3808, true, None), 3808);
    }

    #[test]
    fn writer_low_water_mark_can_be_the_mss() {
        // OSF/1 tcp_mss sets so_snd.sb_lowat = mss; the host passes it as `lowat`.
        let osf = Personality { lowat_is_mss: true, ..TRU64 };
        assert_eq!(sosend_chunk(&osf, 8000, 4400, false, Some(4312)), 8000);
        assert_eq!(sosend_chunk(&osf, 8000, 4300, false, Some(4312)), 0);
    }

    #[test]
    fn linux_rto_is_srtt_plus_at_least_the_minimum() {
        let ms = 1_000_000;
        let mut st = LinuxRtt::default();
        linux_rtt_estimator(&mut st, 150 * ms, 0, 10, LINUX.rto_min_ns);
        assert_eq!(linux_rto_ns(&LINUX, &st), 450 * ms);
        let mut st = LinuxRtt::default();
        for i in 0..200 {
            linux_rtt_estimator(&mut st, 40 * ms, 10 * i, 10 * i + 10, LINUX.rto_min_ns);
        }
        assert_eq!(linux_rto_ns(&LINUX, &st), 240 * ms);
        assert_eq!(rto_ns(&LINUX, 40 * ms, 0), 200 * ms); // Jacobson's clamp, which Linux does not use
        // A larger error raises rttvar above the minimum at once; it decays once per round trip.
        linux_rtt_estimator(&mut st, 400 * ms, 2000, 2010, LINUX.rto_min_ns);
        let spike = linux_rto_ns(&LINUX, &st);
        assert!(spike > 85 * ms + 360 * ms - ms, "{spike}");
        linux_rtt_estimator(&mut st, 40 * ms, 2010, 2020, LINUX.rto_min_ns);
        assert!(linux_rto_ns(&LINUX, &st) < spike);
    }

    #[test]
    fn mss_selection_per_personality() {
        assert_eq!(select_mss(&SUNOS41, 9244, None, None, false), 9204);
        assert_eq!(select_mss(&BSD44, 9180, None, None, false), 8192);
        assert_eq!(select_mss(&FREEBSD4, 1500, None, None, true), 1448);
        assert_eq!(select_mss(&FREEBSD4, 1500, None, None, false), 1460);
        assert_eq!(select_mss(&SUNOS41, 9244, Some(1460), None, false), 1460);
        assert_eq!(select_mss(&LINUX, 9000, None, Some(1500), false), 1460);
        assert_eq!(select_mss(&LINUX, 1500, Some(1460), None, true), 1448);
        // FreeBSD tcp_mss: the option comes off after the peer's offer, before the cluster rounding.
        assert_eq!(select_mss(&FREEBSD4, 4470, Some(4430), None, true), 4096);
        assert_eq!(select_mss(&FREEBSD4, 9000, Some(8960), None, true), 8192);
    }

    #[test]
    fn receiver_silly_window_avoidance() {
        assert_eq!(receive_window(3000, 16384, MSS, 0, 65535), 0);
        assert_eq!(receive_window(3000, 16384, MSS, 5000, 65535), 5000);
        assert_eq!(receive_window(5000, 16384, MSS, 0, 65535), 5000);
    }

    #[test]
    fn rto_backoff_grid_and_slow_tick() {
        let base = 1_500_000_000;
        for (s, m) in (1..9).zip([2, 4, 8, 16, 32, 64, 64, 64]) {
            assert_eq!(backed_off_rto(&BSD44, base, s), (base * m).min(64_000_000_000));
        }
        assert_eq!(backed_off_rto(&SUNOS41, 100_000_000, 0), 1_000_000_000);
        assert_eq!(ticks_for(1_000_000_000, 500_000_000), 2);
        assert_eq!(ticks_for(1_000_000_001, 500_000_000), 3);
        assert_eq!(ticks_for(1, 500_000_000), 1);
    }

    #[test]
    fn bsd_fixed_point_rto_settles_at_three_ticks_on_a_lan() {
        let (mut srtt, mut var) = bsd_xmit_timer(None, 0, 1);
        assert_eq!((srtt, var, bsd_rexmtval_ticks(srtt, var)), (8, 2, 3));
        for _ in 0..20 {
            (srtt, var) = bsd_xmit_timer(Some(srtt), var, 1);
        }
        assert_eq!((srtt, var, bsd_rexmtval_ticks(srtt, var)), (7, 3, 3));
        (srtt, var) = bsd_xmit_timer(Some(srtt), var, 2);
        assert_eq!(bsd_rexmtval_ticks(srtt, var), 5);
        for _ in 0..20 {
            (srtt, var) = bsd_xmit_timer(Some(srtt), var, 1);
        }
        assert_eq!(bsd_rexmtval_ticks(srtt, var), 3);
        assert!(BSD44.rtt_fixed_point && TRU64.rtt_fixed_point);
        assert!(!SUNOS41.rtt_fixed_point && !FREEBSD4.rtt_fixed_point);
    }

    #[test]
    fn buffers_round_up_to_the_mss_on_bsd_only() {
        assert_eq!(round_buffer(&BSD44, 8192, 1460), 8760);
        assert_eq!(round_buffer(&BSD44, 8760, 1460), 8760);
        assert_eq!(round_buffer(&SUNOS41, 8192, 1460), 8192);
        assert_eq!(fdiv(-7, 4), -2); // floor division for the RTT estimator's negative errors
    }

    #[test]
    fn black_hole_is_suspected_3s_after_the_first_retransmission() {
        assert!(!black_hole_suspected(None, 10 * 1_000_000_000));
        assert!(!black_hole_suspected(Some(1_000_000_000), 3_999_999_999));
        assert!(black_hole_suspected(Some(1_000_000_000), 4_000_000_000));
    }

    #[test]
    fn tsopt_rtt_is_the_echo_age_in_ticks() {
        // tcp_rtt_tsopt_us: (now - TSecr) ticks of 1 ms, a zero delta counted as one tick.
        assert_eq!(tsopt_rtt_ns(1005, 1000, 1_000_000), Some(5_000_000));
        assert_eq!(tsopt_rtt_ns(1000, 1000, 1_000_000), Some(1_000_000));
        assert_eq!(tsopt_rtt_ns(3, u32::MAX - 1, 1_000_000), Some(5_000_000)); // across the wrap
        assert_eq!(tsopt_rtt_ns(1000, 0, 1_000_000), None); // no echo
        assert_eq!(tsopt_rtt_ns(1000, 1001, 1_000_000), None); // an echo from the future
        // Which stacks take it: Linux 2.6 on only; Karn alone for Linux 2.0 and the BSDs.
        assert!(LINUX.tsecr_rtt && !LINUX20.tsecr_rtt);
        assert!([SUNOS41, BSD44, FREEBSD4, TRU64].iter().all(|p| !p.tsecr_rtt));
    }
}
