//! The connection table: one streaming pass over (TcpPacket, FlowInfo) pairs, one row per stream.
//! Memory is O(connections): every per-direction aggregate is constant-size except the RTT
//! bookkeeping, which is capped (see `MAX_OUTSTANDING`, `RTT_KEEP`).
//!
//! Definitions (per direction; `high` = highest sequence number sent so far, seq + payload):
//! - unique bytes: the part of a segment's payload above `high`.
//! - retransmitted packet: a segment with payload that starts below `high`; its retransmitted bytes
//!   are the part below `high`. So payload_bytes == unique_bytes + retrans_bytes.
//!   This is a superset of tshark's tcp.analysis.retransmission + fast_retransmission +
//!   spurious_retransmission restricted to segments with payload: tshark instead calls some of these
//!   out_of_order (arrived below `high` soon after it) or keep_alive (one byte at high - 1), and
//!   also flags SYN/FIN-only retransmissions, which carry no payload and are not counted here.
//! - in flight: `high` minus the highest ACK the peer has sent so far (its first seq before any ACK).
//! - RTT: from a first transmission (data, SYN or FIN) to the first ACK covering it (Karn: segments
//!   overlapped by a resend give no sample); one sample per advancing ACK, from the highest segment
//!   it covers. Same count as tcptrace's "RTT samples" on captures taken at the sender.
//! - duplicate ACK: no payload, no SYN/FIN/RST, same ACK and same raw window as this side's previous
//!   segment (as tshark's tcp.analysis.duplicate_ack).

use std::collections::VecDeque;

use crate::tracking::flows::{FlowInfo, FlowTracker};
use crate::wire::packet::{anomaly, flags, TcpPacket};

/// Outstanding segments remembered per direction for RTT samples (older ones are dropped).
const MAX_OUTSTANDING: usize = 4096;
/// RTT samples kept exactly; beyond this every second one is dropped and the stride doubles, so the
/// median stays a deterministic systematic sample.
const RTT_KEEP: usize = 8192;

#[derive(Debug, Clone, Default)]
pub struct DirStats {
    // Handshake options from this side's SYN.
    pub mss: Option<u16>,
    /// Window scale as sent (may exceed 14; the tracker clamps it when scaling).
    pub wscale: Option<u8>,
    pub sack_permitted: bool,
    pub timestamps: bool,
    pub packets: u64,
    /// Sum of the original (on-the-wire) frame lengths.
    pub frame_bytes: u64,
    pub payload_bytes: u64,
    pub unique_bytes: u64,
    pub retrans_packets: u64,
    pub retrans_bytes: u64,
    pub largest_segment: u32,
    /// Largest payload of a segment that is not a TSO/GRO super-frame.
    pub effective_mss: u32,
    pub pure_acks: u64,
    pub dup_acks: u64,
    pub zero_windows: u64,
    /// Advertised window (scaled when known), over segments other than SYN and RST.
    pub min_window: Option<i64>,
    pub max_window: Option<i64>,
    pub max_in_flight: i64,
    pub syn: u32,
    pub fin: u32,
    pub rst: u32,
    pub rtt_count: u64,
    pub rtt_min_ns: Option<i64>,
    // Working state.
    high: Option<i64>,
    first_seq: Option<i64>,
    /// Highest ACK this side has sent (relative to the peer's base).
    high_ack: Option<i64>,
    /// Highest ACK the peer has sent for this side's data.
    peer_acked: Option<i64>,
    last_ack: Option<i64>,
    last_window: Option<u16>,
    /// Highest sequence number sent counting SYN and FIN (the RTT bookkeeping's space).
    rtt_high: Option<i64>,
    /// (end_seq, ts_ns, ambiguous) of first transmissions not yet acked, ascending end.
    outstanding: VecDeque<(i64, i64, bool)>,
    rtt_samples: Vec<i64>,
    rtt_stride: u64,
}

impl DirStats {
    /// Median of the kept RTT samples (exact while fewer than `RTT_KEEP` samples were taken);
    /// the lower middle for an even count, so the value is always an observed sample.
    pub fn rtt_median_ns(&self) -> Option<i64> {
        if self.rtt_samples.is_empty() {
            return None;
        }
        let mut v = self.rtt_samples.clone();
        v.sort_unstable();
        Some(v[(v.len() - 1) / 2])
    }

    fn add_rtt(&mut self, ns: i64) {
        self.rtt_count += 1;
        self.rtt_min_ns = Some(self.rtt_min_ns.map_or(ns, |m| m.min(ns)));
        if self.rtt_stride == 0 {
            self.rtt_stride = 1;
        }
        if !(self.rtt_count - 1).is_multiple_of(self.rtt_stride) {
            return;
        }
        if self.rtt_samples.len() >= RTT_KEEP {
            let kept: Vec<i64> = self.rtt_samples.iter().copied().step_by(2).collect();
            self.rtt_samples = kept;
            self.rtt_stride *= 2;
            if !(self.rtt_count - 1).is_multiple_of(self.rtt_stride) {
                return;
            }
        }
        self.rtt_samples.push(ns);
    }
}

#[derive(Debug, Clone)]
pub struct ConnStats {
    pub stream: u32,
    pub ip_version: u8,
    pub orig_addr: [u8; 16],
    pub orig_port: u16,
    pub resp_addr: [u8; 16],
    pub resp_port: u16,
    pub start_captured: bool,
    pub port_reused: bool,
    /// True once both SYNs were seen, so windows are scaled correctly.
    pub wscale_known: bool,
    pub first_frame: u64,
    pub last_frame: u64,
    pub first_ts_ns: i64,
    pub last_ts_ns: i64,
    pub max_idle_ns: i64,
    /// SYN -> the initiator's first ACK after the SYN/ACK (the full path round trip as seen at the
    /// capture point); None when the SYN or SYN/ACK was retransmitted (Karn) or not seen.
    pub handshake_rtt_ns: Option<i64>,
    pub orig: DirStats,
    pub resp: DirStats,
    syn_ts: Option<i64>,
    synack_seen: bool,
    handshake_ambiguous: bool,
    handshake_done: bool,
}

impl ConnStats {
    pub fn duration_ns(&self) -> i64 {
        self.last_ts_ns - self.first_ts_ns
    }

    pub fn packets(&self) -> u64 {
        self.orig.packets + self.resp.packets
    }

    /// Unique payload bytes per second of connection duration, per direction; None for duration 0.
    pub fn goodput_bps(&self, dir: u8) -> Option<f64> {
        let d = self.duration_ns();
        if d <= 0 {
            return None;
        }
        let b = if dir == 0 { self.orig.unique_bytes } else { self.resp.unique_bytes };
        Some(b as f64 * 1e9 / d as f64)
    }

    fn dir_mut(&mut self, dir: u8) -> (&mut DirStats, &mut DirStats) {
        if dir == 0 {
            (&mut self.orig, &mut self.resp)
        } else {
            (&mut self.resp, &mut self.orig)
        }
    }
}

#[derive(Debug, Default)]
pub struct ConnTable {
    pub conns: Vec<ConnStats>,
}

impl ConnTable {
    pub fn new() -> Self {
        ConnTable { conns: Vec::new() }
    }

    /// Adds one packet with what the tracker assigned to it.
    pub fn update(&mut self, p: &TcpPacket, fi: &FlowInfo) {
        let s = fi.stream as usize;
        while self.conns.len() <= s {
            // Streams appear in order, so this pushes exactly the new one.
            let (orig, resp) = if fi.dir == 0 {
                ((p.src, p.src_port), (p.dst, p.dst_port))
            } else {
                ((p.dst, p.dst_port), (p.src, p.src_port))
            };
            self.conns.push(ConnStats {
                stream: self.conns.len() as u32,
                ip_version: p.ip_version,
                orig_addr: orig.0,
                orig_port: orig.1,
                resp_addr: resp.0,
                resp_port: resp.1,
                start_captured: false,
                port_reused: false,
                wscale_known: false,
                first_frame: p.frame,
                last_frame: p.frame,
                first_ts_ns: p.ts_ns,
                last_ts_ns: p.ts_ns,
                max_idle_ns: 0,
                handshake_rtt_ns: None,
                orig: DirStats::default(),
                resp: DirStats::default(),
                syn_ts: None,
                synack_seen: false,
                handshake_ambiguous: false,
                handshake_done: false,
            });
        }
        let c = &mut self.conns[s];
        c.wscale_known |= fi.wscale_known && p.flags & flags::SYN == 0;
        c.max_idle_ns = c.max_idle_ns.max(p.ts_ns - c.last_ts_ns);
        c.last_ts_ns = c.last_ts_ns.max(p.ts_ns);
        c.last_frame = p.frame;
        handshake(c, p, fi);

        let (me, peer) = c.dir_mut(fi.dir);
        count_packet(me, p, fi);
        sequence(me, p, fi);
        rtt_send(me, p, fi);
        acks(me, peer, p, fi);
    }

    /// Copies the stream-level facts the tracker learned (call once after the last packet).
    pub fn apply_facts(&mut self, tracker: &FlowTracker) {
        for c in &mut self.conns {
            if let Some(f) = tracker.facts(c.stream) {
                c.start_captured = f.start_captured;
                c.port_reused = f.port_reused;
            }
        }
    }
}

fn handshake(c: &mut ConnStats, p: &TcpPacket, fi: &FlowInfo) {
    let syn = p.flags & flags::SYN != 0;
    let ack = p.flags & flags::ACK != 0;
    if c.handshake_done {
        return;
    }
    if syn && !ack && fi.dir == 0 {
        c.handshake_ambiguous |= c.syn_ts.is_some();
        c.syn_ts = Some(p.ts_ns);
    } else if syn && ack && fi.dir == 1 {
        c.handshake_ambiguous |= c.synack_seen;
        c.synack_seen = true;
    } else if !syn && ack && fi.dir == 0 && c.synack_seen {
        c.handshake_done = true;
        if let (Some(t0), false) = (c.syn_ts, c.handshake_ambiguous) {
            c.handshake_rtt_ns = Some(p.ts_ns - t0);
        }
    }
}

fn count_packet(me: &mut DirStats, p: &TcpPacket, fi: &FlowInfo) {
    me.packets += 1;
    me.frame_bytes += p.origlen as u64;
    me.payload_bytes += p.payload_len as u64;
    me.largest_segment = me.largest_segment.max(p.payload_len);
    if p.anomalies & anomaly::SUPERFRAME == 0 {
        me.effective_mss = me.effective_mss.max(p.payload_len);
    }
    let f = p.flags;
    if f & flags::SYN != 0 {
        me.syn += 1;
        if me.syn == 1 {
            me.mss = p.options.mss;
            me.wscale = p.options.wscale;
            me.sack_permitted = p.options.sack_permitted;
            me.timestamps = p.options.timestamp.is_some();
        }
    }
    if f & flags::FIN != 0 {
        me.fin += 1;
    }
    if f & flags::RST != 0 {
        me.rst += 1;
    } else if f & flags::SYN == 0 {
        // SYN windows are never scaled, so they would mix units with the rest (as tcptrace).
        if p.window == 0 {
            me.zero_windows += 1;
        }
        me.min_window = Some(me.min_window.map_or(fi.win_scaled, |m| m.min(fi.win_scaled)));
        me.max_window = Some(me.max_window.map_or(fi.win_scaled, |m| m.max(fi.win_scaled)));
    }
}

/// Unique vs retransmitted payload, in-flight, and the RTT bookkeeping of first transmissions.
fn sequence(me: &mut DirStats, p: &TcpPacket, fi: &FlowInfo) {
    // The SYN's sequence number is consumed by the SYN; data starts one above it.
    let start = fi.seq_rel + i64::from(p.flags & flags::SYN != 0);
    let len = p.payload_len as i64;
    let end = start + len;
    if me.first_seq.is_none() {
        me.first_seq = Some(start);
    }
    let high = *me.high.get_or_insert(start);
    if len > 0 {
        let unique = (end - high.max(start)).max(0);
        me.unique_bytes += unique as u64;
        if start < high {
            me.retrans_packets += 1;
            me.retrans_bytes += (len - unique) as u64;
        }
    }
    let fin = i64::from(p.flags & flags::FIN != 0);
    let new_high = high.max(end + fin);
    me.high = Some(new_high);
    let floor = me.first_seq.unwrap_or(start);
    me.max_in_flight = me.max_in_flight.max(new_high - fin - me.peer_acked.unwrap_or(floor));
}

/// Remembers first transmissions for RTT samples. SYN and FIN take a sequence number each, so
/// they are timed like data (as tcptrace does); anything a resend overlaps becomes ambiguous (Karn).
fn rtt_send(me: &mut DirStats, p: &TcpPacket, fi: &FlowInfo) {
    let f = p.flags;
    let start = fi.seq_rel;
    let end = start + i64::from(f & flags::SYN != 0) + p.payload_len as i64 + i64::from(f & flags::FIN != 0);
    if end == start || f & flags::RST != 0 {
        return;
    }
    let high = *me.rtt_high.get_or_insert(start);
    let resent = start < high;
    if resent {
        for o in me.outstanding.iter_mut().rev() {
            if o.0 <= start {
                break;
            }
            o.2 = true;
        }
    }
    if end > high {
        if me.outstanding.len() == MAX_OUTSTANDING {
            me.outstanding.pop_front();
        }
        me.outstanding.push_back((end, p.ts_ns, resent));
        me.rtt_high = Some(end);
    }
}

/// ACK-side effects: duplicate ACKs, the peer's in-flight floor and RTT samples.
fn acks(me: &mut DirStats, peer: &mut DirStats, p: &TcpPacket, fi: &FlowInfo) {
    let f = p.flags;
    let is_ack = f & flags::ACK != 0;
    let pure = is_ack && p.payload_len == 0 && f & (flags::SYN | flags::FIN | flags::RST) == 0;
    if pure {
        me.pure_acks += 1;
        if me.last_ack == Some(fi.ack_rel) && me.last_window == Some(p.window) {
            me.dup_acks += 1;
        }
    }
    if !is_ack {
        me.last_window = Some(p.window);
        return;
    }
    me.last_ack = Some(fi.ack_rel);
    me.last_window = Some(p.window);
    let advanced = me.high_ack.is_none_or(|h| fi.ack_rel > h);
    if !advanced {
        return;
    }
    me.high_ack = Some(fi.ack_rel);
    peer.peer_acked = Some(fi.ack_rel);
    let mut sample = None;
    while let Some(&(end, ts, ambiguous)) = peer.outstanding.front() {
        if end > fi.ack_rel {
            break;
        }
        peer.outstanding.pop_front();
        sample = Some((ts, ambiguous));
    }
    if let Some((ts, false)) = sample {
        peer.add_rtt(p.ts_ns - ts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::packet::TcpOptions;

    fn v4(last: u8) -> [u8; 16] {
        let mut a = [0u8; 16];
        a[10] = 0xff;
        a[11] = 0xff;
        a[15] = last;
        a
    }

    struct Run {
        t: FlowTracker,
        table: ConnTable,
        frame: u64,
    }

    impl Run {
        fn new() -> Self {
            Run { t: FlowTracker::new(), table: ConnTable::new(), frame: 0 }
        }
        /// Client = 10.0.0.1:40000, server = 10.0.0.2:80.
        fn send(&mut self, client: bool, ts_ns: i64, fl: u16, seq: u32, ack: u32, len: u32, window: u16) {
            self.send_opts(client, ts_ns, fl, seq, ack, len, window, TcpOptions::default());
        }
        #[allow(clippy::too_many_arguments)]
        fn send_opts(
            &mut self,
            client: bool,
            ts_ns: i64,
            fl: u16,
            seq: u32,
            ack: u32,
            len: u32,
            window: u16,
            options: TcpOptions,
        ) {
            self.frame += 1;
            let (src, sp, dst, dp) = if client { (v4(1), 40000, v4(2), 80) } else { (v4(2), 80, v4(1), 40000) };
            let p = TcpPacket {
                frame: self.frame,
                ts_ns,
                ip_version: 4,
                src,
                dst,
                src_port: sp,
                dst_port: dp,
                seq,
                ack,
                flags: fl,
                window,
                payload_len: len,
                origlen: 54 + len,
                options,
                ..Default::default()
            };
            let fi = self.t.assign(&p);
            self.table.update(&p, &fi);
            self.table.apply_facts(&self.t);
        }
    }

    const A: u16 = flags::ACK;
    const MS: i64 = 1_000_000;

    /// Handshake (wscale 2 both ways); the server sends 1..1001 and 1001..2001 (relative), then
    /// resends 501..1001 after it was acked (a spurious retransmission).
    fn lossy_transfer() -> Run {
        let mut r = Run::new();
        let opts = |ws| TcpOptions { mss: Some(1460), wscale: Some(ws), sack_permitted: true, ..Default::default() };
        r.send_opts(true, 0, flags::SYN, 100, 0, 0, 64000, opts(2));
        r.send_opts(false, 10 * MS, flags::SYN | A, 500, 101, 0, 32000, opts(2));
        r.send(true, 20 * MS, A, 101, 501, 0, 1000);
        r.send(false, 30 * MS, A, 501, 101, 1000, 8000); // 1..1001
        r.send(false, 31 * MS, A, 1501, 101, 1000, 8000); // 1001..2001
        r.send(true, 40 * MS, A, 101, 1501, 0, 1000); // acks 1..1001
        r.send(true, 41 * MS, A, 101, 1501, 0, 1000); // dup ack
        r.send(false, 45 * MS, A, 1001, 101, 500, 8000); // 501..1001 again
        r.send(true, 60 * MS, A, 101, 2501, 0, 0); // acks all, zero window
        r.send(false, 70 * MS, flags::FIN | A, 2501, 101, 0, 8000);
        r
    }

    #[test]
    fn counts_unique_and_retransmitted_bytes() {
        let r = lossy_transfer();
        assert_eq!(r.table.conns.len(), 1);
        let c = &r.table.conns[0];
        assert!(c.start_captured && c.wscale_known);
        let s = &c.resp;
        assert_eq!(s.packets, 5);
        assert_eq!(s.payload_bytes, 2500);
        // 501..1001 starts below the highest sequence sent (2001): retransmitted, nothing unique.
        assert_eq!(s.unique_bytes, 2000);
        assert_eq!((s.retrans_packets, s.retrans_bytes), (1, 500));
        assert_eq!(s.payload_bytes, s.unique_bytes + s.retrans_bytes);
        assert_eq!((s.largest_segment, s.effective_mss), (1000, 1000));
        assert_eq!((s.syn, s.fin, s.rst), (1, 1, 0));
        assert_eq!(s.mss, Some(1460));
        assert!(s.sack_permitted);
        assert_eq!(s.max_window, Some(8000 << 2));
        let o = &c.orig;
        assert_eq!((o.pure_acks, o.dup_acks, o.zero_windows), (4, 1, 1));
        assert_eq!(o.min_window, Some(0));
        assert_eq!(c.handshake_rtt_ns, Some(20 * MS));
        assert_eq!(c.max_idle_ns, 15 * MS);
        assert_eq!(c.duration_ns(), 70 * MS);
    }

    #[test]
    fn in_flight_and_karn_rtt() {
        let r = lossy_transfer();
        let s = &r.table.conns[0].resp;
        // Before any ACK, 2000 bytes (1..2001) were out.
        assert_eq!(s.max_in_flight, 2000);
        // The SYN/ACK (10 ms) is acked at 20 ms: 10 ms. The ACK at 40 ms covers the segment sent
        // at 30 ms: 10 ms. The ACK at 60 ms covers 1001..2001, which the retransmission made
        // ambiguous: no sample (Karn). The FIN is never acked.
        assert_eq!(s.rtt_count, 2);
        assert_eq!((s.rtt_min_ns, s.rtt_median_ns()), (Some(10 * MS), Some(10 * MS)));
        // The client's SYN (0 ms) is acked by the SYN/ACK at 10 ms.
        let o = &r.table.conns[0].orig;
        assert_eq!((o.rtt_count, o.rtt_min_ns), (1, Some(10 * MS)));
    }

    #[test]
    fn retransmitted_syn_gives_no_handshake_rtt() {
        let mut r = Run::new();
        r.send(true, 0, flags::SYN, 100, 0, 0, 1000);
        r.send(true, 1000 * MS, flags::SYN, 100, 0, 0, 1000);
        r.send(false, 1010 * MS, flags::SYN | A, 7, 101, 0, 1000);
        r.send(true, 1020 * MS, A, 101, 8, 0, 1000);
        let c = &r.table.conns[0];
        assert_eq!(c.orig.syn, 2);
        assert_eq!(c.handshake_rtt_ns, None);
        assert!(!c.wscale_known || c.orig.wscale.is_none());
    }

    #[test]
    fn rtt_median_is_bounded_and_deterministic() {
        let mut d = DirStats::default();
        for i in 0..(3 * RTT_KEEP as i64) {
            d.add_rtt(i % 1000);
        }
        assert_eq!(d.rtt_count, 3 * RTT_KEEP as u64);
        assert!(d.rtt_samples.len() <= RTT_KEEP);
        assert_eq!(d.rtt_min_ns, Some(0));
        let m = d.rtt_median_ns().unwrap();
        assert!((450..550).contains(&m), "median {m}");
    }
}
