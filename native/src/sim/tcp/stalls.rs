//! Ground truth for the sender: simulate/tcp/stalls.py. The host reports why each tcp_output sent
//! nothing new (`hold`) and what let new data go (`progress`); a long enough gap becomes a Stall.

use crate::sim::engine::Ns;
use crate::sim::ground_truth::{Cause, Evidence, Stall};
use crate::sim::net::Net;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum HoldReason {
    Nagle,
    BufferFull,
    Window,
    Sws,
    Partial,
    AppIdle,
}

/// What ran tcp_output (Python's `context` string).
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

/// A hold's evidence keyword arguments, kept flat until a stall needs the dict.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum HoldEvidence {
    None,
    /// `hold(HOLD_BUFFER_FULL, "copy", b_sent=, s_byte=)` in _sosend_step.
    Copy { b_sent: i64, s_byte: i64 },
    /// tcp_output's hold: b_sent, s_byte, held, snd_wnd, writing.
    Output { b_sent: i64, s_byte: i64, held: i64, snd_wnd: i64, writing: bool },
}

impl HoldEvidence {
    fn writing(&self) -> bool {
        match *self {
            HoldEvidence::Output { writing, .. } => writing,
            _ => true, // evidence.get("writing", True)
        }
    }

    fn to_dict(self) -> Vec<(&'static str, Evidence)> {
        match self {
            HoldEvidence::None => Vec::with_capacity(1),
            HoldEvidence::Copy { b_sent, s_byte } => {
                vec![("b_sent", Evidence::Int(b_sent)), ("s_byte", Evidence::Int(s_byte))]
            }
            HoldEvidence::Output { b_sent, s_byte, held, snd_wnd, writing } => vec![
                ("b_sent", Evidence::Int(b_sent)),
                ("s_byte", Evidence::Int(s_byte)),
                ("held", Evidence::Int(held)),
                ("snd_wnd", Evidence::Int(snd_wnd)),
                ("writing", Evidence::Bool(writing)),
            ],
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
}

pub struct StallTracker {
    /// Python's `gt is not None`: only the sender records stalls.
    pub record: bool,
    pub threshold_ns: Ns,
    pub direction: String,
    pub nagle_detail_default: &'static str,
    pub last_progress: Option<Ns>,
    holds: Vec<Hold>,
    timeout_uids: Option<Vec<u64>>,
    timer_ack_seen: bool,
    sends_since_timer_ack: Option<i64>,
    last_nagle_detail: Option<&'static str>,
    bytes_since_stall: i64,
    pub sticky_bytes: i64,
    pub update_unreachable: bool,
}

impl StallTracker {
    pub fn new(record: bool, threshold_ns: Ns, direction: String, nagle_detail_default: &'static str) -> StallTracker {
        StallTracker {
            record,
            threshold_ns,
            direction,
            nagle_detail_default,
            last_progress: None,
            holds: Vec::with_capacity(8),
            timeout_uids: None,
            timer_ack_seen: false,
            sends_since_timer_ack: None,
            last_nagle_detail: None,
            bytes_since_stall: 0,
            sticky_bytes: 0,
            update_unreachable: false,
        }
    }

    pub fn start(&mut self, now: Ns) {
        self.last_progress = Some(now);
    }

    pub fn hold(&mut self, reason: HoldReason, context: Ctx, evidence: HoldEvidence) {
        let recent = matches!(self.sends_since_timer_ack, Some(n) if n <= TIMER_PHASE_SENDS);
        let mut context = context;
        if reason == HoldReason::Nagle && recent && evidence.writing() {
            context = Ctx::TimerAck;
        }
        if let Some(last) = self.holds.last() {
            if last.reason == reason && last.context == context {
                return;
            }
        }
        self.holds.push(Hold { reason, context, evidence });
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
    pub fn progress(&mut self, net: &mut Net, out: &mut Vec<Stall>, now: Ns, trigger: Trigger, nbytes: i64) {
        let last = self.last_progress;
        let uids = self.timeout_uids.take();
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
        let stalled = matches!(last, Some(l) if now - l >= self.threshold_ns) && self.record;
        if !stalled {
            self.holds.clear();
            self.bytes_since_stall += nbytes;
            return;
        }
        let (cause, detail, mut evidence) = self.attribute(net, trigger, uids);
        self.holds.clear();
        evidence.push(("trigger", Evidence::Str(trigger.name())));
        out.push(Stall {
            start_ns: last.unwrap(),
            end_ns: now,
            cause,
            detail,
            direction: self.direction.clone(),
            evidence,
        });
        self.bytes_since_stall = nbytes;
    }

    /// The connection was dropped: the time since the last new data is a stall ended by the abort.
    pub fn abort(&mut self, net: &mut Net, out: &mut Vec<Stall>, now: Ns) {
        let last = self.last_progress.take();
        let uids = self.timeout_uids.take();
        let stalled = matches!(last, Some(l) if now - l >= self.threshold_ns) && self.record;
        if !stalled {
            self.holds.clear();
            return;
        }
        let (cause, detail, mut evidence) = self.attribute(net, Trigger::Abort, uids);
        self.holds.clear();
        evidence.push(("trigger", Evidence::Str(Trigger::Abort.name())));
        out.push(Stall {
            start_ns: last.unwrap(),
            end_ns: now,
            cause,
            detail,
            direction: self.direction.clone(),
            evidence,
        });
    }

    /// _attribute over the holds collected since the last progress (self.holds).
    fn attribute(
        &mut self,
        net: &mut Net,
        trigger: Trigger,
        uids: Option<Vec<u64>>,
    ) -> (Cause, Option<&'static str>, Vec<(&'static str, Evidence)>) {
        if let Some(uids) = uids {
            let (cause, detail) = net.classify_loss(&uids);
            let first: Vec<i64> = uids.iter().take(32).map(|&u| u as i64).collect();
            return (cause, detail, vec![("timeout_uids", Evidence::Ints(first)), ("segments", Evidence::Int(uids.len() as i64))]);
        }
        let Some(last) = self.holds.last().copied() else {
            return (Cause::ApplicationIdle, None, Vec::with_capacity(1));
        };
        let ev = last.evidence.to_dict();
        match last.reason {
            HoldReason::Nagle => {
                if trigger == Trigger::TimerAck && self.update_unreachable {
                    return (Cause::WindowUpdateDeadlock, None, ev);
                }
                (Cause::NagleDelayedAck, Some(self.nagle_detail()), ev)
            }
            HoldReason::BufferFull | HoldReason::Window => {
                if trigger == Trigger::TimerAck {
                    return (Cause::WindowUpdateDeadlock, None, ev);
                }
                let cause = if last.reason == HoldReason::BufferFull {
                    Cause::SendBufferLimited
                } else {
                    Cause::ReceiverWindowLimited
                };
                (cause, None, ev)
            }
            HoldReason::Sws => (Cause::SenderSws, None, ev),
            HoldReason::Partial => (Cause::NodelayTailHeld, None, ev),
            HoldReason::AppIdle => (Cause::ApplicationIdle, None, ev),
        }
    }

    fn nagle_detail(&mut self) -> &'static str {
        // A deadlock keeps the class of the stall that entered it (Moldeklev 3.1).
        if let Some(d) = self.last_nagle_detail {
            if self.bytes_since_stall <= self.sticky_bytes {
                return d;
            }
        }
        let detail = if self.holds.iter().any(|h| h.reason == HoldReason::Nagle && h.context == Ctx::TimerAck) {
            "timer_phase"
        } else {
            self.nagle_detail_default
        };
        self.last_nagle_detail = Some(detail);
        detail
    }
}
