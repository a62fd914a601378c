//! One direction of a point-to-point link with no impairments (byte-bounded FIFO, serialiser,
//! fixed delay) and the named presets with their framing.

use std::collections::VecDeque;

use super::engine::{Ns, NS_PER_S};

pub const DROP_QUEUE_OVERFLOW: &str = "queue_overflow";
pub const DROP_EXCEEDS_MTU: &str = "exceeds_mtu";

const ETHERNET_OVERHEAD: u64 = 38;
const ETHERNET_MIN_PAYLOAD: u64 = 46;
const FDDI_OVERHEAD: u64 = 36;
const CELL_BYTES: u64 = 53;
const CELL_PAYLOAD: u64 = 48;
const LLC_SNAP: u64 = 8;
const AAL5_TRAILER: u64 = 8;
pub const OC3_CELL_RATE: i64 = 149_760_000;

/// The link layer's framing: the bytes a datagram takes on the wire (docs/tcp-rules.md#atm-cells
/// for AAL5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// AAL5 with LLC/SNAP in 53-byte cells.
    Aal5,
    /// 14 header + 4 FCS + 8 preamble + 12 gap, payload padded to 46.
    Ethernet,
    Fddi,
    None,
}

impl Framing {
    pub fn wire_bytes(self, ip_len: u32) -> u64 {
        let ip = u64::from(ip_len);
        match self {
            Framing::Aal5 => (ip + LLC_SNAP + AAL5_TRAILER).div_ceil(CELL_PAYLOAD) * CELL_BYTES,
            Framing::Ethernet => ip.max(ETHERNET_MIN_PAYLOAD) + ETHERNET_OVERHEAD,
            Framing::Fddi => ip + FDDI_OVERHEAD,
            Framing::None => ip,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct LinkPreset {
    pub name: &'static str,
    pub rate_bps: i64,
    pub delay_ns: Ns,
    pub mtu: u32,
    pub framing: Framing,
}

pub const LINK_PRESETS: [LinkPreset; 7] = [
    LinkPreset { name: "atm140", rate_bps: 140_000_000, delay_ns: 20_000, mtu: 9244, framing: Framing::Aal5 },
    LinkPreset { name: "oc3", rate_bps: OC3_CELL_RATE, delay_ns: 20_000, mtu: 9180, framing: Framing::Aal5 },
    LinkPreset { name: "ethernet10", rate_bps: 10_000_000, delay_ns: 10_000, mtu: 1500, framing: Framing::Ethernet },
    LinkPreset { name: "fddi", rate_bps: 100_000_000, delay_ns: 10_000, mtu: 4352, framing: Framing::Fddi },
    LinkPreset { name: "fastethernet", rate_bps: 100_000_000, delay_ns: 10_000, mtu: 1500, framing: Framing::Ethernet },
    LinkPreset { name: "gige", rate_bps: 1_000_000_000, delay_ns: 10_000, mtu: 1500, framing: Framing::Ethernet },
    LinkPreset { name: "custom", rate_bps: 0, delay_ns: 0, mtu: 1500, framing: Framing::None },
];

pub fn preset(name: &str) -> Option<&'static LinkPreset> {
    LINK_PRESETS.iter().find(|p| p.name == name)
}

/// Exact ceil(wire_bytes * 8 * 1e9 / rate_bps) in integer arithmetic.
pub fn serialisation_ns(wire_bytes: u64, rate_bps: i64) -> Ns {
    let num = i128::from(wire_bytes) * 8 * i128::from(NS_PER_S);
    let rate = i128::from(rate_bps);
    ((num + rate - 1) / rate) as Ns
}

/// What a link did with an offered segment.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Deliver to the far end at this time.
    DeliverAt(Ns),
    Drop(&'static str),
}

#[derive(Debug)]
pub struct SerialLink {
    pub name: String,
    pub rate_bps: i64,
    pub delay_ns: Ns,
    pub mtu: u32,
    pub queue_bytes: Option<u64>,
    pub framing: Framing,
    busy_until: Ns,
    // (time the last bit leaves, ip bytes) of every datagram still holding buffer space.
    held: VecDeque<(Ns, u32)>,
    held_bytes: u64,
    pub sent_packets: u64,
    pub sent_bytes: u64,
}

impl SerialLink {
    pub fn new(name: String, rate_bps: i64, delay_ns: Ns, mtu: u32, queue_bytes: Option<u64>, framing: Framing) -> Result<Self, String> {
        if rate_bps <= 0 {
            return Err(format!("{name}: rate_bps must be positive, got {rate_bps}"));
        }
        if delay_ns < 0 {
            return Err(format!("{name}: delay_ns must not be negative, got {delay_ns}"));
        }
        if mtu == 0 {
            return Err(format!("{name}: mtu must be positive, got {mtu}"));
        }
        Ok(SerialLink {
            name, rate_bps, delay_ns, mtu, queue_bytes, framing, busy_until: 0, held: VecDeque::new(),
            held_bytes: 0, sent_packets: 0, sent_bytes: 0,
        })
    }

    /// IP bytes waiting or on the transmitter at `now`.
    pub fn queued_bytes(&mut self, now: Ns) -> u64 {
        while let Some(&(done, n)) = self.held.front() {
            if done > now {
                break;
            }
            self.held.pop_front();
            self.held_bytes -= u64::from(n);
        }
        self.held_bytes
    }

    /// A datagram arriving at the link: it occupies the queue until its last bit is serialised,
    /// so `queue_bytes` bounds what waits plus what is on the transmitter (a router's output
    /// buffer). The caller schedules the delivery (one engine event) or logs the drop.
    pub fn offer(&mut self, now: Ns, ip_len: u32) -> Verdict {
        if ip_len > self.mtu {
            return Verdict::Drop(DROP_EXCEEDS_MTU);
        }
        if let Some(limit) = self.queue_bytes {
            if self.queued_bytes(now) + u64::from(ip_len) > limit {
                return Verdict::Drop(DROP_QUEUE_OVERFLOW);
            }
        }
        let start = now.max(self.busy_until);
        let done = start + serialisation_ns(self.framing.wire_bytes(ip_len), self.rate_bps);
        self.busy_until = done;
        self.held.push_back((done, ip_len));
        self.held_bytes += u64::from(ip_len);
        self.sent_packets += 1;
        self.sent_bytes += u64::from(ip_len);
        Verdict::DeliverAt(done + self.delay_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aal5_9180_is_192_cells() {
        assert_eq!(Framing::Aal5.wire_bytes(9180), 192 * 53);
        assert_eq!(Framing::Ethernet.wire_bytes(40), 46 + 38);
        assert_eq!(Framing::Fddi.wire_bytes(1500), 1536);
    }

    #[test]
    fn serialisation_rounds_up() {
        assert_eq!(serialisation_ns(1000, 8_000_000), 1_000_000); // 8000 bits at 8 Mbit/s
        assert_eq!(serialisation_ns(1, 3), 2_666_666_667); // 8/3 s rounded up
        assert_eq!(serialisation_ns(1250, 10_000_000), 1_000_000);
    }

    #[test]
    fn arrival_is_serialisation_plus_delay_and_back_to_back_packets_queue() {
        // 1000-byte datagrams take 1 ms each at 8 Mbit/s; the second waits for the first.
        let mut l = SerialLink::new("l".into(), 8_000_000, 5_000_000, 1500, None, Framing::None).unwrap();
        let arrivals: Vec<Verdict> = (0..3).map(|_| l.offer(0, 1000)).collect();
        assert_eq!(
            arrivals,
            [Verdict::DeliverAt(6_000_000), Verdict::DeliverAt(7_000_000), Verdict::DeliverAt(8_000_000)]
        );
    }

    #[test]
    fn framing_overhead_adds_to_wire_time() {
        let mut l = SerialLink::new("l".into(), 8_000_000, 0, 1500, None, Framing::Ethernet).unwrap();
        assert_eq!(l.offer(0, 1000), Verdict::DeliverAt(1_038_000)); // 1000 + 38 bytes of Ethernet
    }

    #[test]
    fn tail_drop_when_the_queue_bytes_are_exceeded() {
        let mut l = SerialLink::new("l".into(), 8_000_000, 0, 1500, Some(2500), Framing::None).unwrap();
        let verdicts: Vec<Verdict> = (0..4).map(|_| l.offer(0, 1000)).collect();
        // 1000 + 1000 fit in 2500 bytes, the third and fourth do not.
        assert_eq!(verdicts[2..], [Verdict::Drop(DROP_QUEUE_OVERFLOW), Verdict::Drop(DROP_QUEUE_OVERFLOW)]);
        // Once the first has left (1 ms) there is room again.
        assert_eq!(l.offer(1_000_000, 1000), Verdict::DeliverAt(3_000_000));
        assert_eq!(l.sent_packets, 3);
    }

    #[test]
    fn an_oversize_datagram_is_dropped_with_its_reason() {
        let mut l = SerialLink::new("l".into(), 1_000_000_000, 0, 576, None, Framing::None).unwrap();
        assert_eq!(l.offer(0, 1040), Verdict::Drop(DROP_EXCEEDS_MTU));
        assert_eq!(l.sent_packets, 0);
    }

    #[test]
    fn bad_parameters_are_rejected() {
        let err = SerialLink::new("fwd".into(), 0, 0, 1500, None, Framing::None).unwrap_err();
        assert!(err.contains("rate_bps") && err.contains("fwd"), "{err}");
        assert!(SerialLink::new("l".into(), 1, -1, 1500, None, Framing::None).is_err());
        assert!(SerialLink::new("l".into(), 1, 0, 0, None, Framing::None).is_err());
    }

    #[test]
    fn link_queues_back_to_back_and_overflows() {
        let mut l = SerialLink::new("l".into(), 8_000_000_000, 5, 1500, Some(2000), Framing::None).unwrap();
        assert_eq!(l.offer(0, 1000), Verdict::DeliverAt(1000 + 5));
        assert_eq!(l.offer(0, 1000), Verdict::DeliverAt(2000 + 5));
        assert_eq!(l.offer(0, 1000), Verdict::Drop(DROP_QUEUE_OVERFLOW));
        assert_eq!(l.offer(1000, 1000), Verdict::DeliverAt(3000 + 5)); // the first has left
        assert_eq!(l.offer(1000, 1501), Verdict::Drop(DROP_EXCEEDS_MTU));
    }
}
