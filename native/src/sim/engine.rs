//! The deterministic discrete-event queue. Time is an integer number of nanoseconds, never read
//! from a clock; events pop in (time, schedule order), so a run is a pure function of its
//! parameters and seed. A cancelled entry stays queued and is skipped when popped (not counted).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

pub type Ns = i64;

pub const NS_PER_US: Ns = 1_000;
pub const NS_PER_MS: Ns = 1_000_000;
pub const NS_PER_S: Ns = 1_000_000_000;

/// The sequence number of the `schedule` call that made the event.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct EventId(pub u64);

struct Entry<E> {
    at: Ns,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.at == o.at && self.seq == o.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: BinaryHeap is a max-heap and the earliest (at, seq) must come out first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    now: Ns,
    next_seq: u64,
    events_run: u64,
    // live[seq - base]: still pending (neither run nor cancelled). Seqs below `base` are all
    // finished; the ring only spans the lifetime of the oldest pending event, so pending() and
    // cancel() are O(1) without hashing.
    live: VecDeque<bool>,
    base: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::new(), now: 0, next_seq: 0, events_run: 0, live: VecDeque::new(), base: 0 }
    }

    /// Panics when `at` is in the past: that is a bug in the caller, not bad input.
    pub fn schedule(&mut self, at: Ns, ev: E) -> EventId {
        if at < self.now {
            panic!("event scheduled in the past: {at} < now {}", self.now);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { at, seq, ev });
        self.live.push_back(true);
        EventId(seq)
    }

    pub fn cancel(&mut self, id: EventId) {
        if id.0 >= self.base {
            if let Some(slot) = self.live.get_mut((id.0 - self.base) as usize) {
                *slot = false;
            }
        }
        self.trim();
    }

    pub fn pending(&self, id: EventId) -> bool {
        id.0 >= self.base && self.live.get((id.0 - self.base) as usize).copied().unwrap_or(false)
    }

    /// The next live event at or before `until` (None when the queue is empty or the next event
    /// is later). Sets `now` to the event's time and counts it as run.
    pub fn pop(&mut self, until: Ns) -> Option<(Ns, E)> {
        loop {
            let top = self.heap.peek()?;
            if top.at > until {
                return None;
            }
            let Entry { at, seq, ev } = self.heap.pop().expect("peeked");
            // Below `base` or marked false: cancelled while queued.
            if seq < self.base || !self.live[(seq - self.base) as usize] {
                continue;
            }
            self.live[(seq - self.base) as usize] = false;
            self.trim();
            self.now = at;
            self.events_run += 1;
            return Some((at, ev));
        }
    }

    /// The end of a run bounded by `until`: time is then at least `until`, even when the queue
    /// ran dry earlier.
    pub fn advance_to(&mut self, until: Ns) {
        self.now = self.now.max(until);
    }

    pub fn now(&self) -> Ns {
        self.now
    }

    pub fn events_run(&self) -> u64 {
        self.events_run
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    fn trim(&mut self) {
        while let Some(false) = self.live.front() {
            self.live.pop_front();
            self.base += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_schedule_order() {
        let mut q = EventQueue::new();
        q.schedule(5, 'a');
        q.schedule(3, 'b');
        q.schedule(5, 'c');
        q.schedule(3, 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop(Ns::MAX).map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['b', 'd', 'a', 'c']);
        assert_eq!(q.now(), 5);
        assert_eq!(q.events_run(), 4);
    }

    #[test]
    fn cancelled_events_are_skipped_and_not_counted() {
        let mut q = EventQueue::new();
        let a = q.schedule(1, 1);
        let b = q.schedule(2, 2);
        assert!(q.pending(a) && q.pending(b));
        q.cancel(a);
        assert!(!q.pending(a));
        assert_eq!(q.pop(Ns::MAX), Some((2, 2)));
        assert!(!q.pending(b), "a run event is no longer pending");
        assert_eq!(q.events_run(), 1);
        assert_eq!(q.pop(Ns::MAX), None);
    }

    #[test]
    fn until_leaves_later_events_queued() {
        let mut q = EventQueue::new();
        q.schedule(10, 'x');
        q.schedule(20, 'y');
        assert_eq!(q.pop(10), Some((10, 'x')));
        assert_eq!(q.pop(15), None);
        assert_eq!(q.pop(20), Some((20, 'y')));
    }

    #[test]
    fn a_cancelled_event_does_not_run_and_a_run_to_until_ends_at_until() {
        let mut q = EventQueue::new();
        let early = q.schedule(5, 5);
        q.schedule(50, 50);
        q.cancel(early);
        assert_eq!(q.pop(30), None);
        q.advance_to(30);
        assert_eq!(q.now(), 30);
        assert_eq!(q.pop(Ns::MAX), Some((50, 50)));
    }

    #[test]
    fn events_at_exactly_until_run_even_at_time_zero() {
        let mut q = EventQueue::new();
        q.schedule(0, 0);
        q.schedule(1, 1);
        assert_eq!(q.pop(0), Some((0, 0)));
        assert_eq!(q.pop(0), None);
        q.advance_to(0);
        assert_eq!(q.now(), 0);
    }

    #[test]
    fn a_run_stopped_after_some_events_continues_where_it_left_off() {
        let mut q = EventQueue::new();
        for t in 1..=3 {
            q.schedule(t, t);
        }
        let first: Vec<Ns> = (0..2).filter_map(|_| q.pop(Ns::MAX).map(|(t, _)| t)).collect();
        assert_eq!((first, q.events_run()), (vec![1, 2], 2));
        assert_eq!(q.pop(Ns::MAX), Some((3, 3)));
        assert_eq!(q.events_run(), 3);
    }

    #[test]
    fn pending_survives_a_long_lived_event() {
        let mut q = EventQueue::new();
        let long = q.schedule(1_000, 0u32);
        for i in 1..100u32 {
            let id = q.schedule(i64::from(i), i);
            if i % 2 == 0 {
                q.cancel(id);
            }
        }
        while let Some((t, _)) = q.pop(999) {
            assert!(t % 2 == 1);
        }
        assert!(q.pending(long));
        assert_eq!(q.events_run(), 50);
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn scheduling_in_the_past_panics() {
        let mut q = EventQueue::new();
        q.schedule(10, ());
        q.pop(Ns::MAX);
        q.schedule(5, ());
    }
}
