//! A receiving NIC's jumbo buffers (docs/tcp-rules.md#nic-jumbo-receive-slots; GigaTCP, the
//! Tigon II `ti` driver's TI_JSLOTS): JumboSlotPool drops a large frame when no slot is free, and
//! JumboNic, in front of the receiver, holds each slot until the receiver's ACK covers the frame,
//! watching the ACKs on the reverse path.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::engine::Ns;
use super::net::HostIndex;
use super::segment::{Segment, ACK};

pub const REASON_JUMBO_SLOT: &str = "jumbo_slot_exhaustion";
/// 14-byte header + 4-byte FCS: what a receive slot must hold beyond the IP datagram.
pub const ETHERNET_FRAME_OVERHEAD: i64 = 18;

#[derive(Clone, Debug)]
pub struct JumboSlotPool {
    pub slots: i64,
    pub min_frame_len: i64,
    pub replenish_ns: Ns,
    returning: BinaryHeap<Reverse<Ns>>,
    held: HashMap<u64, i64>,
    pub in_use: i64,
    pub accepted: i64,
    pub dropped: i64,
    pub small_passed: i64,
    pub min_free: i64,
}

impl JumboSlotPool {
    pub fn new(slots: i64, min_frame_len: i64, replenish_ns: Ns) -> Result<Self, String> {
        if slots <= 0 {
            return Err(format!("slots must be positive, got {slots}"));
        }
        if replenish_ns < 0 {
            return Err(format!("replenish_ns must not be negative, got {replenish_ns}"));
        }
        Ok(JumboSlotPool {
            slots, min_frame_len, replenish_ns, returning: BinaryHeap::new(), held: HashMap::new(), in_use: 0,
            accepted: 0, dropped: 0, small_passed: 0, min_free: slots,
        })
    }

    pub fn free(&mut self, now: Ns) -> i64 {
        while let Some(&Reverse(t)) = self.returning.peek() {
            if t > now {
                break;
            }
            self.returning.pop();
            self.in_use -= 1;
        }
        self.slots - self.in_use
    }

    /// True if the frame is received; false if it needed a jumbo slot and none was free.
    pub fn offer(&mut self, now: Ns, frame_len: i64, key: Option<u64>) -> bool {
        if frame_len < self.min_frame_len {
            self.small_passed += 1;
            return true;
        }
        let free = self.free(now);
        if free == 0 {
            self.dropped += 1;
            return false;
        }
        self.in_use += 1;
        self.accepted += 1;
        self.min_free = self.min_free.min(free - 1);
        match key {
            None => self.returning.push(Reverse(now + self.replenish_ns)),
            Some(k) => *self.held.entry(k).or_insert(0) += 1,
        }
        true
    }

    /// The host consumed the frames held under `key`; returns how many slots start returning.
    pub fn release(&mut self, now: Ns, key: u64) -> i64 {
        let n = self.held.remove(&key).unwrap_or(0);
        for _ in 0..n {
            self.returning.push(Reverse(now + self.replenish_ns));
        }
        n
    }
}

/// The jumbo-slot NIC in front of the receiver. A flow (src, sport, dst, dport) is named by its
/// sending host: one connection per host pair.
#[derive(Clone, Debug)]
pub struct JumboNic {
    pub name: String,
    pub pool: JumboSlotPool,
    pub hold_until_acked: bool,
    held: HashMap<HostIndex, BinaryHeap<Reverse<(i64, u64)>>>,
    acked: HashMap<HostIndex, i64>,
    pub next_key: u64,
}

impl JumboNic {
    pub fn new(name: String, pool: JumboSlotPool, hold_until_acked: bool) -> Self {
        JumboNic { name, pool, hold_until_acked, held: HashMap::new(), acked: HashMap::new(), next_key: 0 }
    }

    /// receive(): true to pass the frame on, false when it found no slot (the caller logs the drop).
    pub fn receive(&mut self, now: Ns, seg: &Segment) -> bool {
        let frame_len = i64::from(seg.ip_len()) + ETHERNET_FRAME_OVERHEAD;
        let flow = seg.src;
        let seq_end = seg.seq + seg.seq_space();
        let mut key = None;
        // A frame already covered by the ACK is a duplicate the stack frees at once.
        let hold = self.hold_until_acked && seg.payload_len > 0 && seq_end > self.acked.get(&flow).copied().unwrap_or(-1);
        if hold {
            key = Some(self.next_key);
            self.next_key += 1;
        }
        if !self.pool.offer(now, frame_len, key) {
            return false;
        }
        if let Some(k) = key {
            self.held.entry(flow).or_default().push(Reverse((seq_end, k)));
        }
        true
    }

    /// saw_ack(): an ACK on the reverse path towards `data_src` (the data direction's sender).
    pub fn saw_ack(&mut self, now: Ns, seg: &Segment, data_src: HostIndex) {
        if seg.flags & ACK == 0 {
            return;
        }
        if seg.ack <= self.acked.get(&data_src).copied().unwrap_or(-1) {
            return;
        }
        self.acked.insert(data_src, seg.ack);
        if let Some(held) = self.held.get_mut(&data_src) {
            while let Some(&Reverse((end, key))) = held.peek() {
                if end > seg.ack {
                    break;
                }
                held.pop();
                self.pool.release(now, key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_drops_large_frames_when_empty_and_replenishes() {
        let mut p = JumboSlotPool::new(2, 1519, 100).unwrap();
        assert!(p.offer(0, 9018, None) && p.offer(0, 9018, None));
        assert!(!p.offer(50, 9018, None), "no slot before the replenish time");
        assert!(p.offer(50, 1518, None), "small frames use the standard ring");
        assert!(p.offer(100, 9018, None));
        assert_eq!((p.accepted, p.dropped, p.small_passed, p.min_free), (3, 1, 1, 0));
    }

    #[test]
    fn held_slots_return_after_the_covering_ack() {
        let mut nic = JumboNic::new("n".into(), JumboSlotPool::new(1, 1519, 0).unwrap(), true);
        let data = Segment { src: 0, seq: 1000, payload_len: 8960, ..Default::default() };
        assert!(nic.receive(0, &data));
        assert!(!nic.receive(1, &Segment { seq: 9960, ..data.clone() }));
        let ack = Segment { src: 1, ack: 9960, flags: ACK, ..Default::default() };
        nic.saw_ack(2, &ack, 0);
        assert!(nic.receive(3, &Segment { seq: 9960, ..data }));
    }
}
