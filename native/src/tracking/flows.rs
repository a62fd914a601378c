//! Connection tracking: assigns every TCP segment to a stream (tshark's `tcp.stream`), a direction,
//! relative 64-bit sequence/ack numbers and its scaled window. State is O(connections).
//!
//! Conventions (chosen to agree with tshark 4.0's relative numbers):
//! - A direction's base is its ISN when its SYN is seen (the SYN has seq_rel 0, data starts at 1);
//!   without a SYN, it is the first sequence number seen minus one (the first segment has seq_rel 1),
//!   or, when the other side's ACK arrives first, that ACK minus one.
//! - Every sequence space is unwrapped to 64 bits against the last value seen in it, so a 2^32 wrap
//!   keeps counting up; values just below the base come out negative.
//! - `win_scaled` is `window << shift` once both SYNs were seen and both carried window scale (shift
//!   clamped to 14, RFC 7323); after a handshake without it, the raw window (scale 0). Either way
//!   `wscale_known` is true. Without both SYNs the raw window is returned with `wscale_known` false,
//!   and so it is when a SYN's options were cut by the snaplen before any window scale option: the
//!   option may have been in the part cut off. SYN segments are never scaled.
//! - A pure SYN on a 4-tuple that already has a stream starts a new stream (port reuse) when its
//!   ISN differs from that side's SYN and either the old connection saw FIN or RST, or its first
//!   SYN was never answered (a retry with a new ISN), or the SYN lies more than 2^30 from the old
//!   sequence space. tshark starts a new stream for any SYN with a different ISN; an in-window SYN
//!   on an established connection stays in its stream here (RFC 5961 treats it as suspect).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::wire::packet::{anomaly, flags, TcpPacket, MAX_SACK_BLOCKS};

/// Per-segment result of `FlowTracker::assign`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowInfo {
    pub stream: u32,
    /// 0 = from the initiator (SYN sender, else the sender of the first packet seen).
    pub dir: u8,
    pub seq_rel: i64,
    pub ack_rel: i64,
    pub win_scaled: i64,
    pub wscale_known: bool,
    /// SACK blocks relative to the other direction's base; unused entries are (0, 0).
    pub sack_rel: [(i64, i64); MAX_SACK_BLOCKS],
}

/// RFC 7323: a shift above 14 is treated as 14.
pub const MAX_WSCALE: u8 = 14;

/// A SYN further than this from a live connection's sequence space starts a new stream even without
/// FIN/RST (the old connection was evidently abandoned). Larger than any window (2^30 max).
const FAR_OUTSIDE: i64 = 1 << 30;

/// One unwrapped 32-bit sequence space (one per direction; seq of that side, ack/SACK of the other).
#[derive(Debug, Clone, Copy, Default)]
struct SeqSpace {
    set: bool,
    /// Unwrapped base (see module docs).
    base: i64,
    /// Last unwrapped value seen in this space; the next raw value is taken nearest to it.
    last: i64,
    /// Highest unwrapped sequence number sent in this space (seq + len), for the port-reuse check.
    high: i64,
}

impl SeqSpace {
    fn init(&mut self, base_raw: u32) {
        self.set = true;
        self.base = base_raw as i64;
        self.last = self.base;
        self.high = self.base;
    }

    /// Unwraps `raw` to the value nearest the last one seen and returns it relative to the base.
    fn rel(&mut self, raw: u32) -> i64 {
        let delta = raw.wrapping_sub(self.last as u32) as i32 as i64;
        let abs = self.last + delta;
        self.last = abs;
        abs - self.base
    }

    /// Unwraps without moving the reference (for values that are not a position of the stream).
    fn peek_rel(&self, raw: u32) -> i64 {
        let delta = raw.wrapping_sub(self.last as u32) as i32 as i64;
        self.last + delta - self.base
    }
}

#[derive(Debug, Clone, Default)]
struct DirState {
    space: SeqSpace,
    syn_seen: bool,
    isn: u32,
    /// Window scale from this side's SYN (already clamped), if it carried one.
    wscale: Option<u8>,
    /// The SYN's options were cut by the snaplen with no window scale among those kept: whether it
    /// offered scaling is unknown.
    wscale_cut: bool,
    fin_seen: bool,
    rst_seen: bool,
}

#[derive(Debug, Clone)]
struct Conn {
    stream: u32,
    /// Initiator's address and port (direction 0's source).
    init_addr: [u8; 16],
    init_port: u16,
    dirs: [DirState; 2],
}

impl Conn {
    fn closed(&self) -> bool {
        self.dirs.iter().any(|d| d.fin_seen || d.rst_seen)
    }

    /// The shift that applies to `dir`'s windows: None while the handshake is not fully seen.
    fn shift(&self, dir: usize) -> Option<u8> {
        let (a, b) = (&self.dirs[0], &self.dirs[1]);
        if !(a.syn_seen && b.syn_seen) || a.wscale_cut || b.wscale_cut {
            return None;
        }
        match (a.wscale, b.wscale) {
            (Some(_), Some(_)) => Some(self.dirs[dir].wscale.unwrap_or(0)),
            _ => Some(0),
        }
    }
}

/// Both endpoints, lower (address, port) first, so both directions share one key.
type Key = ([u8; 16], u16, [u8; 16], u16);

fn key_of(p: &TcpPacket) -> Key {
    if (p.src, p.src_port) <= (p.dst, p.dst_port) {
        (p.src, p.src_port, p.dst, p.dst_port)
    } else {
        (p.dst, p.dst_port, p.src, p.src_port)
    }
}

/// FxHash (as in rustc): the key is not attacker-chosen in a way that matters for a one-shot
/// offline pass, and SipHash would cost a visible share of the per-packet budget.
#[derive(Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(buf));
        }
    }
    fn write_u16(&mut self, n: u16) {
        self.add(n as u64);
    }
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
    fn finish(&self) -> u64 {
        self.hash
    }
}

impl FxHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.hash = (self.hash.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type FxBuild = BuildHasherDefault<FxHasher>;

/// Per-stream facts the tracker learns that are not per-packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamFacts {
    /// The initiator's SYN (without ACK) was seen.
    pub start_captured: bool,
    /// A new SYN on the same 4-tuple after this stream, i.e. this stream's 4-tuple was reused.
    pub port_reused: bool,
}

pub struct FlowTracker {
    /// Key -> index into `conns` of the newest connection on that 4-tuple.
    by_key: HashMap<Key, usize, FxBuild>,
    conns: Vec<Conn>,
    facts: Vec<StreamFacts>,
}

impl Default for FlowTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl FlowTracker {
    pub fn new() -> Self {
        FlowTracker { by_key: HashMap::default(), conns: Vec::new(), facts: Vec::new() }
    }

    /// Number of streams assigned so far (stream ids are 0..n).
    pub fn stream_count(&self) -> usize {
        self.conns.len()
    }

    pub fn facts(&self, stream: u32) -> Option<StreamFacts> {
        self.facts.get(stream as usize).copied()
    }

    /// The scale shift in force for `dir` of `stream`, None while unknown.
    pub fn wscale_shift(&self, stream: u32, dir: u8) -> Option<u8> {
        self.conns.get(stream as usize).and_then(|c| c.shift(dir as usize & 1))
    }

    fn new_conn(&mut self, p: &TcpPacket, key: Key) -> usize {
        let idx = self.conns.len();
        let pure_syn = p.flags & (flags::SYN | flags::ACK) == flags::SYN;
        // A lone SYN/ACK means the responder's reply was the first thing seen: the initiator is
        // its destination.
        let synack = p.flags & (flags::SYN | flags::ACK) == (flags::SYN | flags::ACK);
        let (init_addr, init_port) = if synack { (p.dst, p.dst_port) } else { (p.src, p.src_port) };
        self.conns.push(Conn {
            stream: idx as u32,
            init_addr,
            init_port,
            dirs: [DirState::default(), DirState::default()],
        });
        self.facts.push(StreamFacts { start_captured: pure_syn, port_reused: false });
        if let Some(&old) = self.by_key.get(&key) {
            self.facts[old].port_reused = true;
        }
        self.by_key.insert(key, idx);
        idx
    }

    /// Does this pure SYN start a new connection on a 4-tuple that already has one?
    fn is_reuse(c: &Conn, dir: usize, seq: u32) -> bool {
        let d = &c.dirs[dir];
        if d.syn_seen && d.isn == seq {
            return false; // a retransmitted SYN
        }
        if c.closed() {
            return true;
        }
        // A new ISN while the first SYN is still unanswered: the client gave up and retried.
        if d.syn_seen && !c.dirs[1 - dir].syn_seen {
            return true;
        }
        if d.space.set {
            let dist = d.space.peek_rel(seq) + d.space.base - d.space.high;
            return dist.abs() > FAR_OUTSIDE;
        }
        false
    }

    pub fn assign(&mut self, p: &TcpPacket) -> FlowInfo {
        let key = key_of(p);
        let pure_syn = p.flags & (flags::SYN | flags::ACK) == flags::SYN;
        let idx = match self.by_key.get(&key) {
            Some(&i) => {
                let c = &self.conns[i];
                let dir = usize::from(!(p.src == c.init_addr && p.src_port == c.init_port));
                if pure_syn && Self::is_reuse(c, dir, p.seq) {
                    self.new_conn(p, key)
                } else {
                    i
                }
            }
            None => self.new_conn(p, key),
        };
        let c = &mut self.conns[idx];
        let dir = usize::from(!(p.src == c.init_addr && p.src_port == c.init_port));
        let is_syn = p.flags & flags::SYN != 0;
        let has_ack = p.flags & flags::ACK != 0;

        {
            let d = &mut c.dirs[dir];
            if is_syn && !d.syn_seen {
                d.syn_seen = true;
                d.isn = p.seq;
                d.wscale = p.options.wscale.map(|w| w.min(MAX_WSCALE));
                d.wscale_cut = d.wscale.is_none() && p.anomalies & anomaly::OPTIONS_TRUNCATED != 0;
                if !d.space.set {
                    d.space.init(p.seq);
                }
            } else if !d.space.set {
                d.space.init(p.seq.wrapping_sub(1));
            }
            if p.flags & flags::FIN != 0 {
                d.fin_seen = true;
            }
            if p.flags & flags::RST != 0 {
                d.rst_seen = true;
            }
        }
        let seq_rel = c.dirs[dir].space.rel(p.seq);
        // SYN and FIN each take one sequence number.
        let seg_len = p.payload_len as i64
            + i64::from(is_syn)
            + i64::from(p.flags & flags::FIN != 0);
        {
            let s = &mut c.dirs[dir].space;
            s.high = s.high.max(s.base + seq_rel + seg_len);
        }

        let other = 1 - dir;
        let mut ack_rel = 0;
        let mut sack_rel = [(0i64, 0i64); MAX_SACK_BLOCKS];
        if has_ack {
            let o = &mut c.dirs[other].space;
            if !o.set {
                o.init(p.ack.wrapping_sub(1));
            }
            ack_rel = o.rel(p.ack);
            for (i, &(l, r)) in p.options.sack.iter().take(p.options.sack_count as usize).enumerate() {
                sack_rel[i] = (o.peek_rel(l), o.peek_rel(r));
            }
        }

        let (win_scaled, wscale_known) = if is_syn {
            (p.window as i64, true)
        } else {
            match c.shift(dir) {
                Some(s) => ((p.window as i64) << s, true),
                None => (p.window as i64, false),
            }
        };

        FlowInfo {
            stream: c.stream,
            dir: dir as u8,
            seq_rel,
            ack_rel,
            win_scaled,
            wscale_known,
            sack_rel,
        }
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
        a[12] = 10;
        a[15] = last;
        a
    }

    fn pkt(from_client: bool, fl: u16, seq: u32, ack: u32, len: u32) -> TcpPacket {
        let (src, sp, dst, dp) =
            if from_client { (v4(1), 40000, v4(2), 80) } else { (v4(2), 80, v4(1), 40000) };
        TcpPacket {
            src,
            dst,
            src_port: sp,
            dst_port: dp,
            seq,
            ack,
            flags: fl,
            window: 1000,
            payload_len: len,
            ..Default::default()
        }
    }

    fn syn(from_client: bool, fl: u16, seq: u32, ack: u32, ws: Option<u8>) -> TcpPacket {
        let mut p = pkt(from_client, fl, seq, ack, 0);
        p.options = TcpOptions { wscale: ws, ..Default::default() };
        p
    }

    const SA: u16 = flags::SYN | flags::ACK;

    #[test]
    fn handshake_relative_numbers() {
        let mut t = FlowTracker::new();
        let a = t.assign(&syn(true, flags::SYN, 1000, 0, Some(7)));
        assert_eq!((a.stream, a.dir, a.seq_rel, a.ack_rel), (0, 0, 0, 0));
        let b = t.assign(&syn(false, SA, 5000, 1001, Some(2)));
        assert_eq!((b.stream, b.dir, b.seq_rel, b.ack_rel), (0, 1, 0, 1));
        let c = t.assign(&pkt(true, flags::ACK, 1001, 5001, 100));
        assert_eq!((c.dir, c.seq_rel, c.ack_rel), (0, 1, 1));
        assert!(t.facts(0).unwrap().start_captured);
    }

    #[test]
    fn wraps_around_2_pow_32() {
        let mut t = FlowTracker::new();
        let isn = u32::MAX - 10;
        t.assign(&syn(true, flags::SYN, isn, 0, None));
        t.assign(&syn(false, SA, 7, isn.wrapping_add(1), None));
        let mut seq = isn.wrapping_add(1);
        let mut rel = 1i64;
        // 3 * 2^32 bytes in 1400-byte steps would be slow; step by 1 GiB "segments" instead.
        for _ in 0..12 {
            let i = t.assign(&pkt(true, flags::ACK, seq, 8, 0));
            assert_eq!(i.seq_rel, rel);
            let ack = t.assign(&pkt(false, flags::ACK, 8, seq, 0));
            assert_eq!(ack.ack_rel, rel);
            seq = seq.wrapping_add(1 << 30);
            rel += 1 << 30;
        }
        assert!(rel > 2 * (1i64 << 32));
        // A retransmission slightly behind the highest sequence stays behind it.
        let back = t.assign(&pkt(true, flags::ACK, seq.wrapping_sub(1 << 30).wrapping_sub(500), 8, 0));
        assert_eq!(back.seq_rel, rel - (1 << 30) - 500);
    }

    #[test]
    fn missing_handshake_uses_first_seen() {
        let mut t = FlowTracker::new();
        // Mid-connection: the server's data is seen first.
        let a = t.assign(&pkt(false, flags::ACK | flags::PSH, 900_000, 77_000, 500));
        assert_eq!((a.stream, a.dir, a.seq_rel, a.ack_rel), (0, 0, 1, 1));
        assert!(!a.wscale_known);
        let b = t.assign(&pkt(true, flags::ACK, 77_000, 900_500, 0));
        assert_eq!((b.dir, b.seq_rel, b.ack_rel), (1, 1, 501));
        assert!(!t.facts(0).unwrap().start_captured);
        assert_eq!(t.wscale_shift(0, 0), None);
    }

    #[test]
    fn window_scaling_needs_both_syns() {
        let mut t = FlowTracker::new();
        let s = t.assign(&syn(true, flags::SYN, 1, 0, Some(20)));
        assert_eq!((s.win_scaled, s.wscale_known), (1000, true)); // SYN windows are never scaled
        let before = t.assign(&pkt(true, flags::ACK, 2, 0, 0));
        assert_eq!((before.win_scaled, before.wscale_known), (1000, false));
        t.assign(&syn(false, SA, 10, 2, Some(3)));
        let c = t.assign(&pkt(true, flags::ACK, 2, 11, 0));
        assert_eq!((c.win_scaled, c.wscale_known), (1000 << 14, true)); // 20 clamped to 14
        let s2 = t.assign(&pkt(false, flags::ACK, 11, 2, 0));
        assert_eq!(s2.win_scaled, 1000 << 3);

        // A SYN whose options the snaplen cut before any window scale: the scale is unknown.
        let mut t = FlowTracker::new();
        t.assign(&syn(true, flags::SYN, 1, 0, Some(7)));
        let mut cut = syn(false, SA, 10, 2, None);
        cut.anomalies |= anomaly::OPTIONS_TRUNCATED;
        t.assign(&cut);
        let c = t.assign(&pkt(true, flags::ACK, 2, 11, 0));
        assert_eq!((c.win_scaled, c.wscale_known), (1000, false));
        assert_eq!(t.wscale_shift(0, 1), None);
        // ...but a scale kept before the cut is known.
        let mut t = FlowTracker::new();
        t.assign(&syn(true, flags::SYN, 1, 0, Some(7)));
        let mut kept = syn(false, SA, 10, 2, Some(2));
        kept.anomalies |= anomaly::OPTIONS_TRUNCATED;
        t.assign(&kept);
        let c = t.assign(&pkt(true, flags::ACK, 2, 11, 0));
        assert_eq!((c.win_scaled, c.wscale_known), (1000 << 7, true));

        // Only one side offers scaling: no scaling, but known.
        let mut t = FlowTracker::new();
        t.assign(&syn(true, flags::SYN, 1, 0, Some(5)));
        t.assign(&syn(false, SA, 10, 2, None));
        let c = t.assign(&pkt(true, flags::ACK, 2, 11, 0));
        assert_eq!((c.win_scaled, c.wscale_known), (1000, true));
    }

    #[test]
    fn port_reuse_after_fin_starts_new_stream() {
        let mut t = FlowTracker::new();
        t.assign(&syn(true, flags::SYN, 100, 0, None));
        t.assign(&syn(false, SA, 200, 101, None));
        t.assign(&pkt(true, flags::FIN | flags::ACK, 101, 201, 0));
        t.assign(&pkt(false, flags::FIN | flags::ACK, 201, 102, 0));
        // Retransmitted original SYN would stay; a new ISN after FIN is a new connection.
        let n = t.assign(&syn(true, flags::SYN, 9_000, 0, None));
        assert_eq!((n.stream, n.dir, n.seq_rel), (1, 0, 0));
        let r = t.assign(&syn(false, SA, 50, 9_001, None));
        assert_eq!((r.stream, r.dir, r.ack_rel), (1, 1, 1));
        assert!(t.facts(0).unwrap().port_reused);
        assert_eq!(t.stream_count(), 2);
    }

    #[test]
    fn retransmitted_syn_and_in_window_syn_keep_stream() {
        let mut t = FlowTracker::new();
        t.assign(&syn(true, flags::SYN, 100, 0, None));
        let again = t.assign(&syn(true, flags::SYN, 100, 0, None));
        assert_eq!(again.stream, 0);
        t.assign(&syn(false, SA, 900, 101, None));
        // A different ISN on an established connection, close to its space: same stream
        // (tshark would start a new one; an in-window SYN is treated as bogus, RFC 5961).
        let near = t.assign(&syn(true, flags::SYN, 150, 0, None));
        assert_eq!(near.stream, 0);
        // Far outside the old sequence space: a new connection even without FIN/RST.
        let far = t.assign(&syn(true, flags::SYN, 100u32.wrapping_add(3 << 30), 0, None));
        assert_eq!(far.stream, 1);
    }

    #[test]
    fn new_isn_before_any_answer_is_a_new_attempt() {
        let mut t = FlowTracker::new();
        t.assign(&syn(true, flags::SYN, 1000, 0, None));
        let again = t.assign(&syn(true, flags::SYN, 5000, 0, None));
        assert_eq!((again.stream, again.seq_rel), (1, 0));
        let answer = t.assign(&syn(false, SA, 77, 5001, None));
        assert_eq!((answer.stream, answer.ack_rel), (1, 1));
    }

    #[test]
    fn reuse_after_rst_from_the_other_side() {
        let mut t = FlowTracker::new();
        t.assign(&syn(true, flags::SYN, 100, 0, None));
        t.assign(&pkt(false, flags::RST | flags::ACK, 0, 101, 0));
        // The former responder now opens a connection: it becomes the initiator of stream 1.
        let n = t.assign(&syn(false, flags::SYN, 7, 0, None));
        assert_eq!((n.stream, n.dir), (1, 0));
    }

    #[test]
    fn sack_blocks_relative_to_peer() {
        let mut t = FlowTracker::new();
        t.assign(&syn(true, flags::SYN, 1000, 0, None));
        t.assign(&syn(false, SA, 5000, 1001, None));
        let mut p = pkt(false, flags::ACK, 5001, 1001, 0);
        p.options.sack[0] = (2001, 3001);
        p.options.sack_count = 1;
        let i = t.assign(&p);
        assert_eq!(i.sack_rel[0], (1001, 2001));
        assert_eq!(i.sack_rel[1], (0, 0));
    }
}
