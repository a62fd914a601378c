//! Sender state at every packet, one stream at a time: what each direction's sender had sent and had
//! acknowledged right after each packet, as the capture point saw it (RFC 793 snd_una / snd_max,
//! RFC 6675 pipe without loss marks), duplicate ACKs (RFC 5681 section 2), retransmissions and
//! their kind, and RTT samples under Karn's rule. Meanings of the outputs: `STATE_COLUMNS` in
//! analyzers/sender_state.py.

use super::{PacketView, NULL};

/// A retransmission with at least this many duplicate ACKs (or SACKed bytes) before it is fast
/// (RFC 5681 3.2 says three; Linux RACK and early retransmit fire on fewer).
pub const FAST_DUPACKS: u32 = 1;
/// Silence before a retransmission that no duplicate ACK explains: below this it is no timeout
/// (Linux's minimum RTO is 200 ms, a tail-loss probe fires at 2 x srtt).
pub const TIMEOUT_FLOOR_NS: i64 = 150_000_000;

/// `retrans_kind` codes (0: not a retransmission).
pub const KIND_TIMEOUT: u8 = 1;
pub const KIND_FAST: u8 = 2;
pub const KIND_OTHER: u8 = 3;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct SenderState {
    pub seq_end: Vec<i64>,
    pub snd_una: Vec<i64>,
    pub snd_max: Vec<i64>,
    pub in_flight: Vec<i64>,
    pub sacked: Vec<i64>,
    pub pipe: Vec<i64>,
    pub peer_window: Vec<i64>,
    pub usable_window: Vec<i64>,
    pub new_data: Vec<bool>,
    pub retransmission: Vec<bool>,
    pub control_retransmission: Vec<bool>,
    pub retrans_kind: Vec<u8>,
    pub silence_ns: Vec<i64>,
    pub reaction_ns: Vec<i64>,
    pub dup_ack: Vec<bool>,
    pub dup_run: Vec<u32>,
    pub acks_new: Vec<bool>,
    pub acked_unseen: Vec<bool>,
    pub rtt_ns: Vec<i64>,
    pub ack_delay_ns: Vec<i64>,
    /// 0: not the first ACK to cover any data packet (null).
    pub ack_segments: Vec<u32>,
}

impl SenderState {
    fn with_len(n: usize) -> Self {
        SenderState {
            seq_end: vec![0; n],
            snd_una: vec![0; n],
            snd_max: vec![0; n],
            in_flight: vec![0; n],
            sacked: vec![0; n],
            pipe: vec![0; n],
            peer_window: vec![NULL; n],
            usable_window: vec![NULL; n],
            new_data: vec![false; n],
            retransmission: vec![false; n],
            control_retransmission: vec![false; n],
            retrans_kind: vec![0; n],
            silence_ns: vec![NULL; n],
            reaction_ns: vec![NULL; n],
            dup_ack: vec![false; n],
            dup_run: vec![0; n],
            acks_new: vec![false; n],
            acked_unseen: vec![false; n],
            rtt_ns: vec![NULL; n],
            ack_delay_ns: vec![NULL; n],
            ack_segments: vec![0; n],
        }
    }
}

/// What one direction has shown so far within its stream.
#[derive(Default, Clone, Copy)]
struct Side {
    /// Highest sequence end this side sent (its snd_max).
    max_seq_end: Option<i64>,
    /// Highest cumulative ACK this side sent (the other side's snd_una).
    max_ack: Option<i64>,
    /// The latest window and SACK report this side gave.
    last_win: Option<i64>,
    last_sack: Option<i64>,
    first_seq: Option<i64>,
    prev_ts: Option<i64>,
    /// The previous packet of this side: its ACK field when it was an ACK, and its window.
    prev_ack: Option<i64>,
    prev_win: Option<i64>,
    seen: bool,
    /// Packets of this side that carried data or a FIN.
    carried: u64,
    /// The other side's `carried` when this side last sent.
    peer_carried_at_prev: u64,
    dup_run: u32,
    /// dup_run of this side's latest packet.
    last_dup_run: u32,
}

pub fn sender_state(p: &PacketView) -> SenderState {
    let mut out = SenderState::with_len(p.len());
    let (rows, ranges) = p.stream_rows();
    for range in ranges {
        walk_stream(p, &rows[range.clone()], &mut out);
        rtt_samples(p, &rows[range], &mut out);
    }
    out
}

/// `rows`: one stream's rows in time order.
fn walk_stream(p: &PacketView, rows: &[usize], out: &mut SenderState) {
    let mut side = [Side::default(); 2];
    // The connection's previous packet: (direction, time, its ACK advanced).
    let mut previous: Option<(u8, i64, bool)> = None;
    for &i in rows {
        let d = (p.dir[i] & 1) as usize;
        let (own, peer) = if d == 0 {
            (side[0], side[1])
        } else {
            (side[1], side[0])
        };
        let seq_end = p.seq_end(i);
        let payload = p.payload_len[i] > 0;
        let is_ack = p.ack[i] && !p.rst[i];
        let ack = is_ack.then_some(p.ack_rel[i]);
        let first_seq = own.first_seq.unwrap_or(p.seq_rel[i]);
        let prev_max = own.seen.then_some(own.max_seq_end).flatten();
        let snd_max = prev_max.map_or(seq_end, |m| m.max(seq_end));
        let snd_una = peer.max_ack.unwrap_or(first_seq);
        let sacked = peer.last_sack.unwrap_or(0);
        let in_flight = (snd_max - snd_una).max(0);
        out.seq_end[i] = seq_end;
        out.snd_max[i] = snd_max;
        out.snd_una[i] = snd_una;
        out.sacked[i] = sacked;
        out.in_flight[i] = in_flight;
        out.pipe[i] = (in_flight - sacked).max(0);
        out.peer_window[i] = peer.last_win.unwrap_or(NULL);
        out.usable_window[i] = peer.last_win.map_or(NULL, |w| snd_una + w - snd_max);
        let resent = prev_max.is_some_and(|m| seq_end <= m);
        // Payload all sent before is a retransmission even when a FIN rides on it for the first
        // time (a response resent by timeout with the close behind it, as tshark counts it).
        let data_end = seq_end - i64::from(p.fin[i]);
        let data_resent = prev_max.is_some_and(|m| data_end <= m);
        out.new_data[i] = payload && !data_resent;
        out.retransmission[i] = payload && data_resent;
        out.control_retransmission[i] = !payload && (p.syn[i] || p.fin[i]) && resent;
        let silence = own.prev_ts.map(|t| p.ts_ns[i] - t);
        out.silence_ns[i] = silence.unwrap_or(NULL);

        // A duplicate ACK: a pure ACK repeating the previous one's number and window while the
        // other side's data was outstanding (its SACK blocks above the ACK show some, though a
        // capture of the ACKs alone never saw it), or arrived since (a resend of acknowledged data
        // is answered by one too, as tshark counts it), or a DSACK reports a duplicate.
        let pure = !payload && p.ack[i] && !p.syn[i] && !p.fin[i] && !p.rst[i];
        let outstanding = peer.max_seq_end.is_some_and(|m| m > p.ack_rel[i]) || p.sacked[i] > 0;
        let arrived = own.seen && peer.carried > own.peer_carried_at_prev;
        let dup = pure
            && own.prev_ack == Some(p.ack_rel[i])
            && own.prev_win == Some(p.win_scaled[i])
            && (outstanding || arrived || p.dsack[i]);
        let dup_run = if dup { own.dup_run + 1 } else { 0 };
        out.dup_ack[i] = dup;
        out.dup_run[i] = dup_run;
        out.acks_new[i] = match (ack, own.max_ack) {
            (Some(a), Some(m)) => a > m,
            (Some(_), None) => true,
            (None, _) => false,
        };
        out.acked_unseen[i] = matches!((ack, peer.max_seq_end), (Some(a), Some(m)) if a > m);
        // New data right behind a peer ACK that advanced: the sender's reaction time at this tap.
        // Not behind the peer's data: that is a request's turnaround (or a reply's, then a think
        // time), the application's pace, not the ACK's.
        if let Some((pd, pts, advanced)) = previous {
            if out.new_data[i] && pd != p.dir[i] && advanced {
                out.reaction_ns[i] = p.ts_ns[i] - pts;
            }
        }
        previous = Some((p.dir[i], p.ts_ns[i], out.acks_new[i] && !payload));
        if out.retransmission[i] {
            let fast = peer.last_dup_run >= FAST_DUPACKS || sacked > 0;
            out.retrans_kind[i] = if silence.unwrap_or(0) >= TIMEOUT_FLOOR_NS {
                KIND_TIMEOUT
            } else if fast {
                KIND_FAST
            } else {
                KIND_OTHER
            };
        }

        let s = &mut side[d];
        s.max_seq_end = Some(snd_max);
        s.first_seq = Some(first_seq);
        if let Some(a) = ack {
            s.max_ack = Some(s.max_ack.map_or(a, |m| m.max(a)));
            s.last_sack = Some(p.sacked[i]);
        }
        s.last_win = Some(p.win_scaled[i]);
        s.prev_ts = Some(p.ts_ns[i]);
        s.prev_ack = ack;
        s.prev_win = Some(p.win_scaled[i]);
        s.seen = true;
        s.carried += (payload || p.fin[i]) as u64;
        s.peer_carried_at_prev = peer.carried;
        s.dup_run = dup_run;
        s.last_dup_run = dup_run;
    }
}

/// RTT per new-data packet: time to the first peer ACK that advanced past it (Karn: none if that
/// direction retransmitted in between); on that ACK, its delay since the newest data it covers and
/// how many data packets it was the first to cover.
fn rtt_samples(p: &PacketView, rows: &[usize], out: &mut SenderState) {
    for d in 0..2u8 {
        let data: Vec<usize> = rows
            .iter()
            .copied()
            .filter(|&i| p.dir[i] == d && out.new_data[i])
            .collect();
        // Advancing ACKs carry strictly rising numbers, so time order is ACK-number order.
        let acks: Vec<usize> = rows
            .iter()
            .copied()
            .filter(|&i| p.dir[i] != d && out.acks_new[i])
            .collect();
        let resends: Vec<i64> = rows
            .iter()
            .copied()
            .filter(|&i| p.dir[i] == d && out.retransmission[i])
            .map(|i| p.ts_ns[i])
            .collect();
        let mut newest: Vec<Option<i64>> = vec![None; acks.len()];
        let mut count: Vec<u32> = vec![0; acks.len()];
        for &i in &data {
            let seq_end = out.seq_end[i];
            let k = acks.partition_point(|&a| p.ack_rel[a] < seq_end);
            let Some(&a) = acks.get(k) else { continue };
            let (ts, ack_ts) = (p.ts_ns[i], p.ts_ns[a]);
            if ack_ts < ts {
                continue;
            }
            let r = resends.partition_point(|&t| t < ts);
            if resends.get(r).is_some_and(|&t| t <= ack_ts) {
                continue;
            }
            out.rtt_ns[i] = ack_ts - ts;
            newest[k] = Some(newest[k].map_or(ts, |n| n.max(ts)));
            count[k] += 1;
        }
        for (k, &a) in acks.iter().enumerate() {
            if let Some(n) = newest[k] {
                out.ack_delay_ns[a] = p.ts_ns[a] - n;
                out.ack_segments[a] = count[k];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rows {
        stream: Vec<u32>,
        dir: Vec<u8>,
        ts: Vec<i64>,
        frame: Vec<u64>,
        seq: Vec<i64>,
        ack: Vec<i64>,
        syn: Vec<bool>,
        fin: Vec<bool>,
        rst: Vec<bool>,
        ackf: Vec<bool>,
        len: Vec<u32>,
        win: Vec<i64>,
        sacked: Vec<i64>,
        dsack: Vec<bool>,
    }

    impl Rows {
        fn new() -> Self {
            Rows {
                stream: vec![],
                dir: vec![],
                ts: vec![],
                frame: vec![],
                seq: vec![],
                ack: vec![],
                syn: vec![],
                fin: vec![],
                rst: vec![],
                ackf: vec![],
                len: vec![],
                win: vec![],
                sacked: vec![],
                dsack: vec![],
            }
        }
        fn push(&mut self, dir: u8, ts_ms: i64, seq: i64, ack: i64, len: u32) -> &mut Self {
            self.stream.push(0);
            self.dir.push(dir);
            self.ts.push(ts_ms * 1_000_000);
            self.frame.push(self.frame.len() as u64 + 1);
            self.seq.push(seq);
            self.ack.push(ack);
            self.syn.push(false);
            self.fin.push(false);
            self.rst.push(false);
            self.ackf.push(true);
            self.len.push(len);
            self.win.push(65535);
            self.sacked.push(0);
            self.dsack.push(false);
            self
        }
        fn view(&self) -> PacketView<'_> {
            PacketView {
                stream: &self.stream,
                dir: &self.dir,
                ts_ns: &self.ts,
                frame: &self.frame,
                seq_rel: &self.seq,
                ack_rel: &self.ack,
                syn: &self.syn,
                fin: &self.fin,
                rst: &self.rst,
                ack: &self.ackf,
                payload_len: &self.len,
                win_scaled: &self.win,
                sacked: &self.sacked,
                dsack: &self.dsack,
            }
        }
    }

    #[test]
    fn flight_duplicates_and_a_fast_retransmission() {
        let mut r = Rows::new();
        r.push(0, 0, 1, 1, 100) // 1..101
            .push(0, 1, 101, 1, 100) // 101..201 (lost)
            .push(0, 2, 201, 1, 100)
            .push(1, 10, 1, 101, 0) // advances
            .push(1, 11, 1, 101, 0) // duplicate
            .push(0, 12, 101, 1, 100) // fast retransmission
            .push(1, 20, 1, 301, 0);
        let s = sender_state(&r.view());
        assert_eq!(s.snd_max[2], 301);
        assert_eq!(s.in_flight[2], 300);
        assert_eq!(s.snd_una[5], 101);
        assert_eq!(
            s.dup_ack,
            vec![false, false, false, false, true, false, false]
        );
        assert_eq!(s.dup_run[4], 1);
        assert!(s.retransmission[5] && !s.new_data[5]);
        assert_eq!(s.retrans_kind[5], KIND_FAST);
        assert_eq!(s.rtt_ns[0], 10_000_000);
        // Karn: the second segment was resent before the ACK covering it.
        assert_eq!(s.rtt_ns[1], NULL);
        assert_eq!(s.rtt_ns[2], NULL);
        assert_eq!(s.ack_segments[3], 1);
        assert_eq!(s.ack_delay_ns[3], 10_000_000);
        assert!(s.acks_new[6] && !s.acks_new[4]);
    }

    #[test]
    fn silence_makes_a_timeout_and_unseen_data_is_flagged() {
        let mut r = Rows::new();
        r.push(0, 0, 1, 1, 100)
            .push(0, 300, 1, 1, 100)
            .push(1, 310, 1, 501, 0);
        let s = sender_state(&r.view());
        assert_eq!(s.retrans_kind[1], KIND_TIMEOUT);
        assert_eq!(s.silence_ns[1], 300_000_000);
        assert!(s.acked_unseen[2]);
        assert_eq!(s.peer_window[0], NULL);
        assert_eq!(s.usable_window[0], NULL);
        assert_eq!(s.usable_window[2], 1 + 65535 - 1);
    }
}
