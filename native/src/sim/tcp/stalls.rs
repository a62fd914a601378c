//! Ground truth for the sender (docs/simulate-cli.md, "Ground truth"). The host reports why each
//! tcp_output sent nothing new (`hold`) and what let new data go (`progress`); a long enough gap
//! becomes a Stall, named by the hold that explains it and what released it.

use crate::sim::engine::Ns;
use crate::sim::ground_truth::{Cause, Evidence, Stall};

/// The cause of a timeout from the uids of the segments it resent (sim::loss::LossClassifier
/// over the run's drop log).
pub type LossClassifier<'a> = dyn FnMut(&[u64]) -> (Cause, Option<&'static str>) + 'a;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum HoldReason {
    Nagle,
    BufferFull,
    Window,
    Sws,
    Partial,
    AppIdle,
}

/// What ran tcp_output.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Ctx {
    Copy,
    Block,
    Ack,
    TimerAck,
    Read,
    Timer,
    Close,
    Input,
    Rto,
    Persist,
    PartialTimer,
    FastRetransmit,
    Icmp,
    App,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Trigger {
    Ack,
    TimerAck,
    Rto,
    Persist,
    PartialTimer,
    Write,
    Abort,
}

impl Trigger {
    pub fn name(self) -> &'static str {
        match self {
            Trigger::Ack => "ack",
            Trigger::TimerAck => "timer_ack",
            Trigger::Rto => "rto",
            Trigger::Persist => "persist",
            Trigger::PartialTimer => "partial_timer",
            Trigger::Write => "write",
            Trigger::Abort => "abort",
        }
    }
}

/// A hold's evidence, kept flat until a stall needs it as key/value pairs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum HoldEvidence {
    None,
    /// sosend found the send buffer full: bytes outstanding and bytes in the buffer.
    Copy { b_sent: i64, s_byte: i64 },
    /// tcp_output's hold: b_sent, s_byte, held, snd_wnd, writing, and cwnd when it (not the
    /// peer's window) left no room for a window hold.
    /// `maxseg` is the sender's segment size when it held; it is not part of the evidence.
    Output { b_sent: i64, s_byte: i64, held: i64, snd_wnd: i64, writing: bool, cwnd: Option<i64>, blocked: bool, maxseg: i64 },
}

impl HoldEvidence {
    fn writing(&self) -> bool {
        match *self {
            HoldEvidence::Output { writing, .. } => writing,
            _ => true, // a hold without the flag counts as mid-write
        }
    }

    fn blocked(&self) -> bool {
        matches!(*self, HoldEvidence::Output { blocked: true, .. })
    }

    /// Nothing was outstanding (b_sent 0); a hold without b_sent counts as something outstanding.
    fn nothing_unacked(&self) -> bool {
        match *self {
            HoldEvidence::Output { b_sent, .. } | HoldEvidence::Copy { b_sent, .. } => b_sent == 0,
            HoldEvidence::None => false,
        }
    }

    fn to_dict(self) -> Vec<(&'static str, Evidence)> {
        match self {
            HoldEvidence::None => Vec::with_capacity(1),
            HoldEvidence::Copy { b_sent, s_byte } => {
                vec![("b_sent", Evidence::Int(b_sent)), ("s_byte", Evidence::Int(s_byte))]
            }
            HoldEvidence::Output { b_sent, s_byte, held, snd_wnd, writing, cwnd, blocked, .. } => {
                let mut ev = vec![
                    ("b_sent", Evidence::Int(b_sent)),
                    ("s_byte", Evidence::Int(s_byte)),
                    ("held", Evidence::Int(held)),
                    ("snd_wnd", Evidence::Int(snd_wnd)),
                    ("writing", Evidence::Bool(writing)),
                ];
                if let Some(cwnd) = cwnd {
                    ev.push(("cwnd", Evidence::Int(cwnd)));
                }
                ev.push(("blocked", Evidence::Bool(blocked)));
                ev
            }
        }
    }
}

/// A Nagle hold this few sends after a timer ACK was entered through the timer's phase.
pub const TIMER_PHASE_SENDS: i64 = 3;

#[derive(Clone, Copy, Debug)]
struct Hold {
    reason: HoldReason,
    context: Ctx,
    evidence: HoldEvidence,
    /// When it was entered (a repeat of the same hold keeps the first time).
    at: Ns,
}

impl Hold {
    /// A Nagle hold with no data unacknowledged: it waits for no ACK.
    fn alone(&self) -> bool {
        self.reason == HoldReason::Nagle && self.evidence.nothing_unacked()
    }
}

pub struct StallTracker {
    /// This host records ground truth (only a sender does).
    pub record: bool,
    pub threshold_ns: Ns,
    pub direction: String,
    /// The socket layer copies a write in fixed chunks (SunOS's copy rule).
    pub chunked_copy: bool,
    pub last_progress: Option<Ns>,
    holds: Vec<Hold>,
    timeout_uids: Option<Vec<u64>>,
    timer_ack_seen: bool,
    sends_since_timer_ack: Option<i64>,
    last_nagle_detail: Option<&'static str>,
    bytes_since_stall: i64,
    /// A fast retransmission or SACK recovery began in this gap.
    repaired: bool,
    pub sticky_bytes: i64,
    pub update_unreachable: bool,
}

impl StallTracker {
    pub fn new(record: bool, threshold_ns: Ns, direction: String, chunked_copy: bool) -> StallTracker {
        StallTracker {
            record,
            threshold_ns,
            direction,
            chunked_copy,
            last_progress: None,
            holds: Vec::with_capacity(8),
            timeout_uids: None,
            timer_ack_seen: false,
            sends_since_timer_ack: None,
            last_nagle_detail: None,
            bytes_since_stall: 0,
            repaired: false,
            sticky_bytes: 0,
            update_unreachable: false,
        }
    }

    pub fn start(&mut self, now: Ns) {
        self.last_progress = Some(now);
    }

    pub fn hold(&mut self, reason: HoldReason, context: Ctx, evidence: HoldEvidence, now: Ns) {
        let recent = matches!(self.sends_since_timer_ack, Some(n) if n <= TIMER_PHASE_SENDS);
        let mut context = context;
        if reason == HoldReason::Nagle && recent && evidence.writing() {
            context = Ctx::TimerAck;
        }
        let hold = Hold { reason, context, evidence, at: now };
        if let Some(last) = self.holds.last() {
            // A hold is a new one when what it holds changed kind: nothing unacknowledged, or the
            // write finished copying (its short segment is now the write's final one).
            if last.reason == reason
                && last.context == context
                && last.alone() == hold.alone()
                && last.evidence.writing() == evidence.writing()
            {
                return;
            }
        }
        self.holds.push(hold);
    }

    pub fn timer_ack(&mut self) {
        self.timer_ack_seen = true;
        self.sends_since_timer_ack = Some(0);
    }

    pub fn timeout(&mut self, uids: Vec<u64>) {
        if self.timeout_uids.is_none() {
            self.timeout_uids = Some(uids);
        }
    }

    /// New data went out at `now`; `trigger` is what ran tcp_output.
    pub fn progress(&mut self, classify: &mut LossClassifier, out: &mut Vec<Stall>, now: Ns, trigger: Trigger, nbytes: i64) {
        let last = self.last_progress;
        let uids = self.timeout_uids.take();
        let repaired = std::mem::replace(&mut self.repaired, false);
        let mut trigger = trigger;
        if self.timer_ack_seen {
            if trigger == Trigger::Ack {
                trigger = Trigger::TimerAck;
            }
            self.timer_ack_seen = false;
        }
        if let Some(n) = self.sends_since_timer_ack.as_mut() {
            *n += 1;
        }
        self.last_progress = Some(now);
        let stalled = matches!(last, Some(l) if now - l >= self.threshold_ns)
            && self.record
            && !(repaired && uids.is_none());
        if !stalled {
            self.holds.clear();
            self.bytes_since_stall += nbytes;
            return;
        }
        self.record_stall(classify, out, last.unwrap(), now, trigger, uids);
        self.bytes_since_stall = nbytes;
    }

    /// Attributes the stall from `start` to `end` and records it.
    fn record_stall(
        &mut self, classify: &mut LossClassifier, out: &mut Vec<Stall>, start: Ns, end: Ns, trigger: Trigger,
        uids: Option<Vec<u64>>,
    ) {
        let (cause, detail, mut evidence) = self.attribute(classify, trigger, uids, start, end);
        self.holds.clear();
        evidence.push(("trigger", Evidence::Str(trigger.name())));
        out.push(Stall { start_ns: start, end_ns: end, cause, detail, direction: self.direction.clone(), evidence });
    }

    /// A fast retransmission or SACK recovery began; a gap ending without a timeout is loss
    /// repair, not a stall with a cause.
    pub fn repaired(&mut self) {
        self.repaired = true;
    }

    /// The connection was dropped: the time since the last new data is a stall ended by the abort.
    pub fn abort(&mut self, classify: &mut LossClassifier, out: &mut Vec<Stall>, now: Ns) {
        let last = self.last_progress.take();
        let uids = self.timeout_uids.take();
        let stalled = matches!(last, Some(l) if now - l >= self.threshold_ns) && self.record;
        if !stalled {
            self.holds.clear();
            return;
        }
        self.record_stall(classify, out, last.unwrap(), now, Trigger::Abort, uids);
    }

    /// The cause, detail and evidence of a stall from the holds collected since the last progress.
    fn attribute(
        &mut self,
        classify: &mut LossClassifier,
        trigger: Trigger,
        uids: Option<Vec<u64>>,
        start: Ns,
        end: Ns,
    ) -> (Cause, Option<&'static str>, Vec<(&'static str, Evidence)>) {
        if let Some(uids) = uids {
            let (cause, detail) = classify(&uids);
            let first: Vec<i64> = uids.iter().take(32).map(|&u| u as i64).collect();
            return (cause, detail, vec![("timeout_uids", Evidence::Ints(first)), ("segments", Evidence::Int(uids.len() as i64))]);
        }
        // The application went idle, and what held the sender after that began in the second half
        // of the gap: the gap was the application's. (A think time ends with a write whose first
        // copied chunk Nagle holds for an instant before the next chunk lets a segment go.)
        if let Some(i) = self.holds.iter().rposition(|h| h.reason == HoldReason::AppIdle) {
            if self.holds[i + 1..].iter().all(|h| 2 * (end - h.at) < end - start) {
                return (Cause::ApplicationIdle, None, Vec::with_capacity(1));
            }
        }
        let Some(final_hold) = self.holds.last().copied() else {
            return (Cause::ApplicationIdle, None, Vec::with_capacity(1));
        };
        // A short segment held with nothing unacknowledged waits for no ACK: the hold before it
        // explains the gap.
        // When the gap ends so (the ACK came and the segment stayed: cork, MORE), no Nagle hold
        // of the gap explains it either.
        let ends_alone = final_hold.alone();
        let explains = |h: &&Hold| if ends_alone { h.reason != HoldReason::Nagle } else { !h.alone() };
        let Some(last) = self.holds.iter().rev().find(explains).copied() else {
            let ev = final_hold.evidence.to_dict();
            if matches!(final_hold.evidence, HoldEvidence::Output { writing: true, .. }) {
                return (Cause::SendBufferLimited, None, ev);
            }
            return (Cause::ApplicationIdle, None, ev);
        };
        let ev = last.evidence.to_dict();
        match last.reason {
            HoldReason::Nagle => {
                if trigger == Trigger::TimerAck && self.update_unreachable {
                    return (Cause::WindowUpdateDeadlock, None, ev);
                }
                (Cause::NagleDelayedAck, Some(self.nagle_detail(&last)), ev)
            }
            HoldReason::BufferFull | HoldReason::Window => {
                let cwnd_bound = matches!(last.evidence, HoldEvidence::Output { cwnd: Some(_), .. });
                let detail = if cwnd_bound { Some("congestion_window") } else { None };
                if trigger == Trigger::TimerAck {
                    return (Cause::WindowUpdateDeadlock, detail, ev);
                }
                let cause = if last.reason == HoldReason::BufferFull {
                    Cause::SendBufferLimited
                } else {
                    Cause::ReceiverWindowLimited
                };
                (cause, detail, ev)
            }
            HoldReason::Sws => (Cause::SenderSws, None, ev),
            HoldReason::Partial => (Cause::NodelayTailHeld, None, ev),
            HoldReason::AppIdle => (Cause::ApplicationIdle, None, ev),
        }
    }

    /// The mechanism that left the short segment (docs/simulate-cli.md): a timer ACK's phase,
    /// a write still being copied (tearing, or a chunked copy rule while the writer is not
    /// blocked), the write's short final segment behind full segments only (OF+SFS), else its
    /// final piece behind a shorter piece of it (the chunked copy rule's, or tearing).
    fn nagle_detail(&mut self, last: &Hold) -> &'static str {
        // A deadlock keeps the class of the stall that entered it (Moldeklev 3.1).
        if let Some(d) = self.last_nagle_detail {
            if self.bytes_since_stall <= self.sticky_bytes {
                return d;
            }
        }
        // Only reached when the gap did not end alone, so the explaining holds are those that
        // are not lone Nagle holds: is one of them a Nagle hold entered through a timer ACK's phase?
        let detail = if self.holds.iter().any(|h| !h.alone() && h.reason == HoldReason::Nagle && h.context == Ctx::TimerAck) {
            "timer_phase"
        } else if matches!(last.evidence, HoldEvidence::Output { writing: true, .. }) {
            if self.chunked_copy && !last.evidence.blocked() {
                "copy_rule"
            } else {
                "buffer_tearing"
            }
        } else if matches!(last.evidence, HoldEvidence::Output { b_sent, maxseg, .. } if maxseg > 0 && b_sent > 0 && b_sent % maxseg == 0) {
            "of_sfs" // the write's short final segment behind full segments only
        } else if self.chunked_copy {
            "copy_rule" // behind a shorter piece of the same write
        } else {
            "buffer_tearing"
        };
        self.last_nagle_detail = Some(detail);
        detail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Ns = 1_000_000;

    fn no_loss(_: &[u64]) -> (Cause, Option<&'static str>) {
        panic!("no timeout in this test")
    }

    fn tracker() -> StallTracker {
        let mut t = StallTracker::new(true, 10 * MS, "a -> b".to_string(), false);
        t.sticky_bytes = 8192;
        t.start(0);
        t
    }

    fn output(held: i64) -> HoldEvidence {
        HoldEvidence::Output { b_sent: 1000, s_byte: 1000 + held, held, snd_wnd: 4096, writing: true, cwnd: None, blocked: false, maxseg: 1460 }
    }

    #[test]
    fn short_gaps_are_not_stalls_and_the_last_hold_names_a_long_one() {
        let mut t = tracker();
        let mut out = Vec::new();
        t.hold(HoldReason::Nagle, Ctx::Copy, output(100), 0);
        t.progress(&mut no_loss, &mut out, 5 * MS, Trigger::Ack, 1000);
        assert!(out.is_empty());
        t.hold(HoldReason::Window, Ctx::Ack, output(0), 5 * MS);
        t.hold(HoldReason::Nagle, Ctx::Ack, output(300), 5 * MS);
        t.progress(&mut no_loss, &mut out, 205 * MS, Trigger::Ack, 300);
        assert_eq!(out.len(), 1);
        let s = &out[0];
        assert_eq!((s.start_ns, s.end_ns, s.cause, s.detail), (5 * MS, 205 * MS, Cause::NagleDelayedAck, Some("buffer_tearing")));
        assert_eq!(s.evidence[2], ("held", Evidence::Int(300)));
        assert_eq!(s.evidence.last().unwrap(), &("trigger", Evidence::Str("ack")));
    }

    #[test]
    fn a_window_hold_with_cwnd_in_its_evidence_is_named_a_congestion_window_wait() {
        let mut t = tracker();
        let mut out = Vec::new();
        let slow_start = HoldEvidence::Output { b_sent: 1460, s_byte: 8192, held: 0, snd_wnd: 8192, writing: true, cwnd: Some(1460), blocked: false, maxseg: 1460 };
        t.hold(HoldReason::Window, Ctx::Copy, slow_start, 0);
        t.timer_ack();
        t.progress(&mut no_loss, &mut out, 200 * MS, Trigger::Ack, 1460);
        assert_eq!((out[0].cause, out[0].detail), (Cause::WindowUpdateDeadlock, Some("congestion_window")));
        assert_eq!(out[0].evidence[5], ("cwnd", Evidence::Int(1460)));
        // Released by an ordinary ACK: the limited-window class keeps the detail.
        t.hold(HoldReason::Window, Ctx::Ack, slow_start, 200 * MS);
        t.progress(&mut no_loss, &mut out, 400 * MS, Trigger::Ack, 1460);
        assert_eq!((out[1].cause, out[1].detail), (Cause::ReceiverWindowLimited, Some("congestion_window")));
        // The peer's window binding (no cwnd in the evidence): no detail.
        t.hold(HoldReason::Window, Ctx::Ack, output(0), 400 * MS);
        t.progress(&mut no_loss, &mut out, 600 * MS, Trigger::Ack, 1460);
        assert_eq!((out[2].cause, out[2].detail), (Cause::ReceiverWindowLimited, None));
    }

    #[test]
    fn a_timer_ack_turns_a_full_buffer_into_a_window_update_deadlock_and_marks_the_nagle_phase() {
        let mut t = tracker();
        let mut out = Vec::new();
        t.hold(HoldReason::BufferFull, Ctx::Copy, HoldEvidence::Copy { b_sent: 4096, s_byte: 4096 }, 0);
        t.timer_ack();
        t.progress(&mut no_loss, &mut out, 200 * MS, Trigger::Ack, 4096);
        assert_eq!(out[0].cause, Cause::WindowUpdateDeadlock);
        assert_eq!(out[0].evidence.last().unwrap(), &("trigger", Evidence::Str("timer_ack")));
        // Within TIMER_PHASE_SENDS sends of the timer ACK a Nagle hold was entered through its phase.
        t.hold(HoldReason::Nagle, Ctx::Ack, output(100), 200 * MS);
        t.progress(&mut no_loss, &mut out, 400 * MS, Trigger::Ack, 100);
        assert_eq!((out[1].cause, out[1].detail), (Cause::NagleDelayedAck, Some("timer_phase")));
        // The next Nagle stall within sticky_bytes keeps that class.
        let tail = HoldEvidence::Output { b_sent: 1000, s_byte: 100, held: 100, snd_wnd: 4096, writing: false, cwnd: None, blocked: false, maxseg: 1460 };
        t.hold(HoldReason::Nagle, Ctx::Ack, tail, 400 * MS);
        t.progress(&mut no_loss, &mut out, 600 * MS, Trigger::Ack, 100);
        assert_eq!(out[2].detail, Some("timer_phase"));
        // update_unreachable: a Nagle stall released by a timer ACK is the window-update rule's.
        t.update_unreachable = true;
        t.hold(HoldReason::Nagle, Ctx::Ack, output(5), 600 * MS);
        t.timer_ack();
        t.progress(&mut no_loss, &mut out, 800 * MS, Trigger::Ack, 5);
        assert_eq!(out[3].cause, Cause::WindowUpdateDeadlock);
    }

    #[test]
    fn a_timeout_is_classified_from_its_segments_and_an_abort_ends_the_last_stall() {
        let mut t = tracker();
        let mut out = Vec::new();
        t.timeout((1..=40).collect());
        t.timeout(vec![99]); // only the first timeout of a stall counts
        let mut seen = Vec::new();
        let mut classify = |u: &[u64]| {
            seen.push(u.len());
            (Cause::BurstLossTimeout, Some("queue_overflow"))
        };
        t.progress(&mut classify, &mut out, 1500 * MS, Trigger::Rto, 1000);
        assert_eq!(seen, vec![40]);
        assert_eq!((out[0].cause, out[0].detail), (Cause::BurstLossTimeout, Some("queue_overflow")));
        match &out[0].evidence[0] {
            ("timeout_uids", Evidence::Ints(u)) => assert_eq!(u.len(), 32),
            other => panic!("unexpected evidence {other:?}"),
        }
        assert_eq!(out[0].evidence[1], ("segments", Evidence::Int(40)));
        t.abort(&mut no_loss, &mut out, 9000 * MS);
        assert_eq!((out[1].start_ns, out[1].cause), (1500 * MS, Cause::ApplicationIdle));
        assert_eq!(t.last_progress, None);
    }

    #[test]
    fn a_hold_entered_late_in_an_application_idle_gap_does_not_explain_it() {
        let mut t = tracker();
        let mut out = Vec::new();
        // The writer slept 60 ms once its data was out; its next write's first chunk was held by
        // Nagle for an instant before the second let a segment go.
        t.hold(HoldReason::AppIdle, Ctx::App, HoldEvidence::None, 0);
        t.hold(HoldReason::Nagle, Ctx::Copy, output(2048), 60 * MS);
        t.progress(&mut no_loss, &mut out, 60 * MS, Trigger::Write, 4096);
        assert_eq!((out[0].start_ns, out[0].cause), (0, Cause::ApplicationIdle));
        // Idle, then Nagle held the next write for half of the gap: Nagle's.
        t.hold(HoldReason::AppIdle, Ctx::App, HoldEvidence::None, 60 * MS);
        t.hold(HoldReason::Nagle, Ctx::Copy, output(100), 70 * MS);
        t.progress(&mut no_loss, &mut out, 80 * MS, Trigger::Ack, 100);
        assert_eq!((out[1].start_ns, out[1].cause), (60 * MS, Cause::NagleDelayedAck));
        // With no idle application before it, the last hold names the gap however late it came
        // (a repair's resends record no hold).
        t.hold(HoldReason::Sws, Ctx::Ack, output(0), 95 * MS);
        t.progress(&mut no_loss, &mut out, 100 * MS, Trigger::Ack, 1460);
        assert_eq!((out[2].start_ns, out[2].cause), (80 * MS, Cause::SenderSws));
    }

    #[test]
    fn a_tracker_without_ground_truth_records_nothing() {
        let mut t = StallTracker::new(false, 10 * MS, String::new(), false);
        let mut out = Vec::new();
        t.start(0);
        t.hold(HoldReason::Window, Ctx::Ack, output(0), 0);
        t.progress(&mut no_loss, &mut out, 900 * MS, Trigger::Ack, 1);
        assert!(out.is_empty());
    }
}
