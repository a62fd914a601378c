//! A connection's timers. BSD-family personalities count REXMT and PERSIST down on the host's
//! 500 ms slow tick (4.4BSD tcp_slowtimo, docs/tcp-rules.md#retransmission-timer); the others are
//! exact one-shot events (one pending engine event per kind whose deadline only moves). The host
//! runs the slow-tick countdown and the timer's action itself: this module only says what fires.

use super::rules;
use super::state::TimerKind;
use crate::sim::engine::{EventId, Ns};
use crate::sim::net::{Event, HostIndex, Net};
use crate::sim::tcp::host::HostEvent;

fn ticked(kind: TimerKind) -> bool {
    matches!(kind, TimerKind::Rexmt | TimerKind::Persist)
}

pub struct Timers {
    index: HostIndex,
    pub slow_tick_ns: Option<Ns>,
    /// Ticked timers and their ticks left, in the order they were set (the order they fire in).
    ticks: Vec<(TimerKind, i64)>,
    deadline: [Option<Ns>; 4],
    /// Pending engine event per kind and the time it was scheduled for.
    handles: [Option<(EventId, Ns)>; 4],
    pub stopped: bool,
}

impl Timers {
    pub fn new(index: HostIndex, slow_tick_ns: Option<Ns>) -> Timers {
        Timers { index, slow_tick_ns, ticks: Vec::with_capacity(2), deadline: [None; 4], handles: [None; 4], stopped: false }
    }

    pub fn set(&mut self, net: &mut Net, kind: TimerKind, delay_ns: Ns) {
        if let Some(tick) = self.slow_tick_ns {
            if ticked(kind) {
                let n = rules::ticks_for(delay_ns, tick);
                match self.ticks.iter_mut().find(|(k, _)| *k == kind) {
                    Some(slot) => slot.1 = n,
                    None => self.ticks.push((kind, n)),
                }
                return;
            }
        }
        if self.stopped {
            return;
        }
        let deadline = net.now() + delay_ns;
        let k = kind as usize;
        self.deadline[k] = Some(deadline);
        let h = self.handles[k];
        let reschedule = match h {
            None => true,
            Some((id, at)) => !net.queue.pending(id) || at > deadline,
        };
        if reschedule {
            if let Some((id, _)) = h {
                net.cancel(id);
            }
            let id = net.schedule(deadline, Event::Host(self.index, HostEvent::Timer(kind)));
            self.handles[k] = Some((id, deadline));
        }
    }

    pub fn cancel(&mut self, kind: TimerKind) {
        self.ticks.retain(|(k, _)| *k != kind);
        self.deadline[kind as usize] = None; // a pending event finds no deadline and does nothing
    }

    pub fn running(&self, kind: TimerKind) -> bool {
        self.deadline[kind as usize].is_some() || self.ticks.iter().any(|(k, _)| *k == kind)
    }

    /// The ticked kinds in the order they were set, taken before a slow tick counts them down.
    pub fn ticked_kinds(&self) -> [Option<TimerKind>; 2] {
        let mut out = [None; 2];
        for (slot, (k, _)) in out.iter_mut().zip(&self.ticks) {
            *slot = Some(*k);
        }
        out
    }

    /// One slow-tick countdown step for `kind`: true when it reached zero and must fire (it is
    /// then removed). A kind cancelled meanwhile, by a timer that fired on the same tick, is skipped.
    pub fn count_down(&mut self, kind: TimerKind) -> bool {
        let Some(pos) = self.ticks.iter().position(|(k, _)| *k == kind) else { return false };
        let left = self.ticks[pos].1 - 1;
        if left <= 0 {
            self.ticks.remove(pos);
            true
        } else {
            self.ticks[pos].1 = left;
            false
        }
    }

    pub fn stop(&mut self, net: &mut Net) {
        self.stopped = true;
        for h in self.handles.iter_mut() {
            if let Some((id, _)) = h.take() {
                net.cancel(id);
            }
        }
        self.deadline = [None; 4];
        self.ticks.clear();
    }

    /// An exact timer's engine event: true when the timer fires now (the host then acts on it).
    pub fn event(&mut self, net: &mut Net, now: Ns, kind: TimerKind) -> bool {
        let k = kind as usize;
        self.handles[k] = None;
        let Some(deadline) = self.deadline[k] else { return false };
        if deadline > now {
            // re-armed later since this event was scheduled
            let id = net.schedule(deadline, Event::Host(self.index, HostEvent::Timer(kind)));
            self.handles[k] = Some((id, deadline));
            return false;
        }
        self.deadline[k] = None;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::rng::SimRng;

    fn net() -> Net {
        Net::new(SimRng::from_seed(1))
    }

    fn pop_timer(net: &mut Net) -> Option<(Ns, TimerKind)> {
        match net.queue.pop(i64::MAX)? {
            (at, Event::Host(0, HostEvent::Timer(k))) => Some((at, k)),
            (at, other) => panic!("unexpected event at {at}: {other:?}"),
        }
    }

    #[test]
    fn ticked_timers_count_slow_ticks_in_insertion_order() {
        let mut net = net();
        let mut t = Timers::new(0, Some(500));
        t.set(&mut net, TimerKind::Persist, 1000); // 2 ticks
        t.set(&mut net, TimerKind::Rexmt, 1); // 1 tick
        assert!(net.queue.is_empty(), "ticked timers schedule no engine event");
        assert_eq!(t.ticked_kinds(), [Some(TimerKind::Persist), Some(TimerKind::Rexmt)]);
        assert!(!t.count_down(TimerKind::Persist));
        assert!(t.count_down(TimerKind::Rexmt));
        assert!(!t.running(TimerKind::Rexmt) && t.running(TimerKind::Persist));
        t.set(&mut net, TimerKind::Rexmt, 1500); // re-inserted last
        assert_eq!(t.ticked_kinds(), [Some(TimerKind::Persist), Some(TimerKind::Rexmt)]);
        t.cancel(TimerKind::Persist);
        assert!(!t.count_down(TimerKind::Persist), "a cancelled kind is skipped");
    }

    /// One slow tick as the host runs it (tcp_slowtimo): count every ticked timer down in the
    /// order they were set and run `fire` on each that reaches zero.
    fn slow_tick(t: &mut Timers, mut fire: impl FnMut(&mut Timers, TimerKind)) {
        for kind in t.ticked_kinds().into_iter().flatten() {
            if t.count_down(kind) {
                fire(t, kind);
            }
        }
    }

    #[test]
    fn a_timer_cancelled_by_one_that_fired_in_the_same_tick_is_skipped() {
        // REXMT and PERSIST both reach zero on one tick; REXMT's handler cancels PERSIST (as an
        // abort or a retransmission that finds the window open would).
        const TICK: Ns = 500_000_000;
        let mut net = net();
        let mut t = Timers::new(0, Some(TICK));
        t.set(&mut net, TimerKind::Rexmt, TICK);
        t.set(&mut net, TimerKind::Persist, TICK);
        let mut fired = Vec::new();
        slow_tick(&mut t, |t, kind| {
            fired.push(kind);
            if kind == TimerKind::Rexmt {
                t.cancel(TimerKind::Persist);
            }
        });
        assert_eq!(fired, [TimerKind::Rexmt]);
        assert!(!t.running(TimerKind::Persist));
    }

    #[test]
    fn ticked_timers_fire_in_the_order_they_were_set_and_count_down() {
        const TICK: Ns = 500_000_000;
        let mut net = net();
        let mut t = Timers::new(0, Some(TICK));
        t.set(&mut net, TimerKind::Persist, 2 * TICK);
        t.set(&mut net, TimerKind::Rexmt, TICK);
        let mut fired = Vec::new();
        for n in 1..=3 {
            slow_tick(&mut t, |_, kind| fired.push((n * TICK, kind)));
        }
        assert_eq!(fired, [(TICK, TimerKind::Rexmt), (2 * TICK, TimerKind::Persist)]);
    }

    #[test]
    fn an_exact_timer_keeps_one_event_and_moves_its_deadline() {
        let mut net = net();
        let mut t = Timers::new(0, None);
        t.set(&mut net, TimerKind::Delack, 100);
        t.set(&mut net, TimerKind::Delack, 300); // later: the pending event stays
        let (at, k) = pop_timer(&mut net).unwrap();
        assert_eq!((at, k), (100, TimerKind::Delack));
        assert!(!t.event(&mut net, at, k), "deadline moved to 300: re-armed, not fired");
        let (at, k) = pop_timer(&mut net).unwrap();
        assert_eq!(at, 300);
        assert!(t.event(&mut net, at, k));
        assert!(!t.running(TimerKind::Delack));
        // Earlier deadline: the old event is cancelled and a new one scheduled.
        t.set(&mut net, TimerKind::Partial, 1000);
        t.set(&mut net, TimerKind::Partial, 200);
        assert_eq!(pop_timer(&mut net).unwrap().0, 500);
        assert!(pop_timer(&mut net).is_none());
        // cancel leaves the event queued; it finds no deadline and does nothing.
        t.set(&mut net, TimerKind::Delack, 10);
        t.cancel(TimerKind::Delack);
        let (at, k) = pop_timer(&mut net).unwrap();
        assert!(!t.event(&mut net, at, k));
        // stop cancels every pending event and refuses new exact timers.
        t.set(&mut net, TimerKind::Delack, 10);
        t.stop(&mut net);
        t.set(&mut net, TimerKind::Partial, 10);
        assert!(pop_timer(&mut net).is_none());
        assert!(!t.running(TimerKind::Partial));
    }
}
