//! Everything of a run but the hosts (so a host method can take `&mut Net`): the event queue,
//! the seeded random source, the two link directions, the taps at the sender, the drop log and
//! the loss classifier. Event is the sum type of everything a run schedules.

use super::app::AppEvent;
use super::atm::{AtmSwitchPath, AtmVerdict, REASON_CELL_LOSS, REASON_EPD, REASON_PPD};
use super::engine::{EventId, EventQueue, Ns};
use super::ground_truth::{Cause, Drop};
use super::link::{SerialLink, Verdict, DROP_EXCEEDS_MTU};
use super::loss::LossClassifier;
use super::rng::SimRng;
use super::segment::Segment;
use super::stage::LossStage;
use super::naglemark::Naglemark;
use super::nic::{JumboNic, REASON_JUMBO_SLOT};
use super::pmtu::{PmtuStage, PmtuVerdict};
use super::tcp::host::{Host, HostEvent};

/// A host's number in the run (run_bulk: 0 = sender, 1 = receiver; naglemark: 2k and 2k + 1 for
/// the client and server of connection k). Hosts use this alias so the width can grow.
pub type HostIndex = u16;

pub const SENDER: HostIndex = 0;
pub const RECEIVER: HostIndex = 1;

/// `Event::Link` numbers from ASIDE up are not links but a path stage's own scheduled callback
/// (the ATM path's drop, logged when its last cell reached the switch; the PMTU hop's ICMP), so
/// run loops without such stages need no arm of their own: ASIDE | index into ASIDE_DROPS, or
/// ASIDE | ASIDE_ICMP | next-hop MTU.
pub const ASIDE: u32 = 1 << 31;
const ASIDE_ICMP: u32 = 1 << 30;
const ASIDE_DROPS: [&str; 4] = [DROP_EXCEEDS_MTU, REASON_CELL_LOSS, REASON_PPD, REASON_EPD];

/// The forward path's stages beyond loss and link (the ATM switch port, the PMTU hop and the
/// jumbo-slot NIC), each with the link (index) it belongs to.
#[derive(Debug, Default)]
pub struct PathStages {
    /// Replaces the link's SerialLink.
    pub atm: Option<(u32, AtmSwitchPath)>,
    /// After the link, before the far end.
    pub pmtu: Option<(u32, PmtuStage)>,
    /// (data link, reverse link whose ACKs it watches, NIC): last before the far end.
    pub nic: Option<(u32, u32, JumboNic)>,
}

/// Which hosts the taps record (what a capture at them would show).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tapped {
    Nobody,
    /// A bulk run's sender.
    One(HostIndex),
    /// Every naglemark server (odd host indices), the data senders.
    Servers,
}

impl Tapped {
    #[inline]
    fn covers(self, h: HostIndex) -> bool {
        match self {
            Tapped::Nobody => false,
            Tapped::One(t) => t == h,
            Tapped::Servers => h & 1 == 1,
        }
    }
}

#[derive(Debug)]
pub enum Event {
    /// A host's own scheduled callback (ticks, timers, CPU completions, delayed emits).
    Host(HostIndex, HostEvent),
    /// An application's scheduled callback (a writer's think time).
    App(HostIndex, AppEvent),
    /// A link (index into Net.links) delivers a segment at its far end.
    Link(u32, Segment),
    Watchdog,
    /// The bulk sender connects at time 0; naglemark: a client connect (the first, and each one
    /// after a think time).
    Start,
    /// naglemark: stop host pair k, a second after the next connection opened.
    Retire(u32),
}

pub struct Net {
    pub queue: EventQueue<Event>,
    pub rng: SimRng,
    pub drops: Vec<Drop>,
    pub finished_at: Option<Ns>,
    pub started_at: Option<Ns>,
    pub links: Vec<SerialLink>,
    /// Loss stages in front of each link (the run's loss impairments), by link index.
    pub stages: Vec<Vec<LossStage>>,
    /// The link each host emits into, by host index.
    pub out_link: Vec<u32>,
    /// The host each link delivers to, by link index.
    pub link_sink: Vec<HostIndex>,
    /// The hosts whose traffic the taps record.
    pub tapped: Tapped,
    /// [out, in] of the tapped host: what it emitted and what reached it.
    pub taps: [Vec<(Ns, Segment)>; 2],
    pub loss: LossClassifier,
    /// The host whose interface drops go to the drop log (run_bulk wires only the receiver's).
    pub rx_drops_logged: Option<HostIndex>,
    /// Hosts a callback may reach besides its own (naglemark: the client starts its server); the
    /// host being dispatched is taken out meanwhile. run_bulk keeps its two hosts outside.
    pub hosts: Vec<Option<Box<Host>>>,
    /// The naglemark client and network state (it spans connections).
    pub naglemark: Option<Box<Naglemark>>,
    pub path: PathStages,
}

impl Net {
    pub fn new(rng: SimRng) -> Net {
        Net {
            queue: EventQueue::new(), rng, drops: Vec::new(), finished_at: None, started_at: None,
            links: Vec::new(), stages: Vec::new(), out_link: Vec::new(), link_sink: Vec::new(), tapped: Tapped::Nobody,
            taps: [Vec::new(), Vec::new()], loss: LossClassifier::default(), rx_drops_logged: None,
            hosts: Vec::new(), naglemark: None, path: PathStages::default(),
        }
    }

    /// Wire hosts `a` and `b` with a link each way (a path's forward and reverse directions).
    pub fn connect_pair(&mut self, a: HostIndex, b: HostIndex, a_to_b: SerialLink, b_to_a: SerialLink) {
        for (from, to, link) in [(a, b, a_to_b), (b, a, b_to_a)] {
            let l = self.links.len() as u32;
            self.links.push(link);
            self.stages.push(Vec::new());
            self.link_sink.push(to);
            let i = usize::from(from);
            if self.out_link.len() <= i {
                self.out_link.resize(i + 1, u32::MAX);
            }
            self.out_link[i] = l;
        }
    }

    #[inline]
    pub fn now(&self) -> Ns {
        self.queue.now()
    }

    #[inline]
    pub fn schedule(&mut self, at: Ns, ev: Event) -> EventId {
        self.queue.schedule(at, ev)
    }

    #[inline]
    pub fn cancel(&mut self, id: EventId) {
        self.queue.cancel(id)
    }

    #[inline]
    pub fn pending(&self, id: EventId) -> bool {
        self.queue.pending(id)
    }

    /// A host sends `seg`: a tapped host's output is recorded (what a capture at it shows), a
    /// segment on the jumbo NIC's reverse link passes its ACK watcher, then the segment goes
    /// through its link's loss stages into the ATM path or the serial link, synchronously.
    pub fn emit(&mut self, now: Ns, from: HostIndex, seg: Segment) {
        let l = self.out_link[usize::from(from)];
        if self.tapped.covers(from) {
            self.taps[0].push((now, seg.clone()));
        }
        if let Some((_, _, nic)) = self.path.nic.as_mut().filter(|n| n.1 == l) {
            nic.saw_ack(now, &seg, self.link_sink[l as usize]);
        }
        if let Some(i) = self.stages[l as usize].iter_mut().position(|st| st.drops(&mut self.rng, &seg)) {
            let st = &self.stages[l as usize][i];
            let (reason, place) = (st.reason, st.place.clone());
            self.push_drop(now, &seg, reason, place);
            return;
        }
        if let Some((_, atm)) = self.path.atm.as_mut().filter(|a| a.0 == l) {
            // One scheduled event either way: the delivery, or the drop logged when the PDU's
            // last cell reached the switch.
            match atm.receive(now, &seg) {
                AtmVerdict::DeliverAt(at) => self.schedule(at, Event::Link(l, seg)),
                AtmVerdict::DropAt(at, reason) => {
                    let code = ASIDE_DROPS.iter().position(|r| *r == reason).expect("an ATM drop reason") as u32;
                    self.schedule(at, Event::Link(ASIDE | code, seg))
                }
            };
            return;
        }
        match self.links[l as usize].offer(now, seg.ip_len()) {
            Verdict::DeliverAt(at) => {
                self.schedule(at, Event::Link(l, seg));
            }
            Verdict::Drop(reason) => {
                let place = self.links[l as usize].name.clone();
                self.push_drop(now, &seg, reason, place);
            }
        }
    }

    /// The stages after link `link` (PMTU hop, jumbo NIC) on a delivery: false when one dropped it.
    pub fn pass_stages(&mut self, now: Ns, link: u32, seg: &Segment) -> bool {
        if let Some((_, st)) = self.path.pmtu.as_mut().filter(|p| p.0 == link) {
            if let PmtuVerdict::Drop { reason, icmp_mtu } = st.hop.decide(seg.ip_len()) {
                let place = st.name.clone();
                let icmp = icmp_mtu.filter(|_| st.icmp_sink.is_some()).map(|mtu| {
                    st.icmp_sent += 1;
                    (now + st.icmp_delay_ns, mtu)
                });
                self.push_drop(now, seg, reason, place);
                if let Some((at, mtu)) = icmp {
                    self.schedule(at, Event::Link(ASIDE | ASIDE_ICMP | mtu, Segment::default()));
                }
                return false;
            }
        }
        if let Some((_, _, nic)) = self.path.nic.as_mut().filter(|n| n.0 == link) {
            if !nic.receive(now, seg) {
                let place = nic.name.clone();
                self.push_drop(now, seg, REASON_JUMBO_SLOT, place);
                return false;
            }
        }
        true
    }

    /// An ASIDE event: logs the ATM path's drop, or returns (host, mtu) for the PMTU hop's ICMP.
    pub fn aside(&mut self, now: Ns, code: u32, seg: &Segment) -> Option<(HostIndex, i64)> {
        if code & ASIDE_ICMP != 0 {
            let sink = self.path.pmtu.as_ref().and_then(|p| p.1.icmp_sink).expect("an ICMP sink");
            return Some((sink, i64::from(code & !(ASIDE | ASIDE_ICMP))));
        }
        let reason = ASIDE_DROPS[(code & !ASIDE) as usize];
        let place = self.path.atm.as_ref().map(|a| a.1.name.clone()).expect("an ATM path");
        self.push_drop(now, seg, reason, place);
        None
    }

    /// Where a link's delivery goes; the tapped host's arrivals pass its "in" tap first.
    #[inline]
    pub fn deliver_to(&mut self, now: Ns, link: u32, seg: &Segment) -> HostIndex {
        let to = self.link_sink[link as usize];
        if self.tapped.covers(to) {
            self.taps[1].push((now, seg.clone()));
        }
        to
    }

    /// Which loss a retransmission timeout followed (LossClassifier over the run's one drop log,
    /// shared by both hosts of a bulk run).
    pub fn classify_loss(&mut self, uids: &[u64]) -> (Cause, Option<&'static str>) {
        self.loss.classify(&self.drops, uids)
    }

    /// A frame dropped at a host's interface (its receive FIFO was full): logged only at the host
    /// `rx_drops_logged` names (a bulk run's receiver, "receiver-rx-fifo"), so a drop at another
    /// host's interface stays out of the drop log.
    pub fn record_drop(&mut self, now: Ns, seg: &Segment, reason: &'static str, place: &'static str) {
        let at_host = self.link_sink[self.out_link[usize::from(seg.src)] as usize];
        if self.rx_drops_logged != Some(at_host) {
            return;
        }
        self.push_drop(now, seg, reason, place.to_string());
    }

    fn push_drop(&mut self, now: Ns, seg: &Segment, reason: &'static str, place: String) {
        self.drops.push(Drop {
            at_ns: now, uid: seg.uid, reason, place, flow_src: seg.src, seq: seg.seq,
            payload_len: seg.payload_len, ip_len: seg.ip_len(),
        });
    }
}
