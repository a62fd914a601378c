//! Everything of a run but the hosts (so a host method can take `&mut Net`): the event queue,
//! the seeded random source, the two link directions, the taps at the sender, the drop log and
//! the loss classifier. Event is the sum type of every scheduled callback in the Python run.

use super::app::AppEvent;
use super::engine::{EventId, EventQueue, Ns};
use super::ground_truth::{Cause, Drop};
use super::link::{SerialLink, Verdict};
use super::loss::LossClassifier;
use super::rng::PyRandom;
use super::segment::Segment;
use super::tcp::host::HostEvent;

pub const SENDER: u8 = 0;
pub const RECEIVER: u8 = 1;
/// Link directions: forward carries the sender's segments, reverse the receiver's.
pub const FORWARD: u8 = 0;
pub const REVERSE: u8 = 1;

#[derive(Debug)]
pub enum Event {
    /// A host's own scheduled callback (ticks, timers, CPU completions, delayed emits).
    Host(u8, HostEvent),
    /// An application's scheduled callback (a writer's think time).
    App(u8, AppEvent),
    /// A link delivers a segment at its far end (direction, segment).
    Link(u8, Segment),
    Watchdog,
    /// sender.connect at time 0.
    Start,
}

pub struct Net {
    pub queue: EventQueue<Event>,
    pub rng: PyRandom,
    pub drops: Vec<Drop>,
    pub finished_at: Option<Ns>,
    pub started_at: Option<Ns>,
    /// [forward, reverse].
    pub links: [SerialLink; 2],
    /// [sender-out, sender-in]: what the sender emitted and what reached it.
    pub taps: [Vec<(Ns, Segment)>; 2],
    pub loss: LossClassifier,
}

impl Net {
    pub fn new(rng: PyRandom, forward: SerialLink, reverse: SerialLink) -> Net {
        Net {
            queue: EventQueue::new(), rng, drops: Vec::new(), finished_at: None, started_at: None,
            links: [forward, reverse], taps: [Vec::new(), Vec::new()], loss: LossClassifier::default(),
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

    /// Python's `host.out.receive(now, seg)`: the sender's output passes its tap, then both hosts'
    /// segments enter their link, synchronously.
    pub fn emit(&mut self, now: Ns, from: u8, seg: Segment) {
        let dir = if from == SENDER { FORWARD } else { REVERSE };
        if from == SENDER {
            self.taps[0].push((now, seg.clone()));
        }
        match self.links[usize::from(dir)].offer(now, seg.ip_len()) {
            Verdict::DeliverAt(at) => {
                self.schedule(at, Event::Link(dir, seg));
            }
            Verdict::Drop(reason) => {
                let place = self.links[usize::from(dir)].name.clone();
                self.push_drop(now, &seg, reason, place);
            }
        }
    }

    /// Python's loss_classifier (the sender's; the Python receiver gets no drop log and uses
    /// `loss::default_classification`).
    pub fn classify_loss(&mut self, uids: &[u64]) -> (Cause, Option<&'static str>) {
        self.loss.classify(&self.drops, uids)
    }

    /// Python's `on_rx_drop`: only the receiver has one (run_bulk wires "receiver-rx-fifo"), so a
    /// drop at the sender's interface (a segment from the receiver) is not logged.
    pub fn record_drop(&mut self, now: Ns, seg: &Segment, reason: &'static str, place: &'static str) {
        if seg.src == RECEIVER {
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
