//! What a run records as its ground truth: the stall causes (stable names), each Stall, and each
//! Drop on the path.

use super::engine::Ns;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Cause {
    NagleDelayedAck,
    WindowUpdateDeadlock,
    SenderSws,
    NodelayTailHeld,
    ReceiverWindowLimited,
    SendBufferLimited,
    BurstLossTimeout,
    SingleLossTimeout,
    AckLossTimeout,
    SpuriousTimeout,
    JumboSlotExhaustion,
    PmtuBlackhole,
    MssMismatch,
    ApplicationIdle,
}

impl Cause {
    /// The stable name the ground truth records and analyzers are scored against
    /// (docs/scoring.md).
    pub fn name(self) -> &'static str {
        match self {
            Cause::NagleDelayedAck => "nagle_delayed_ack",
            Cause::WindowUpdateDeadlock => "window_update_deadlock",
            Cause::SenderSws => "sender_sws",
            Cause::NodelayTailHeld => "nodelay_tail_held",
            Cause::ReceiverWindowLimited => "receiver_window_limited",
            Cause::SendBufferLimited => "send_buffer_limited",
            Cause::BurstLossTimeout => "burst_loss_timeout",
            Cause::SingleLossTimeout => "single_loss_timeout",
            Cause::AckLossTimeout => "ack_loss_timeout",
            Cause::SpuriousTimeout => "spurious_timeout",
            Cause::JumboSlotExhaustion => "jumbo_slot_exhaustion",
            Cause::PmtuBlackhole => "pmtu_blackhole",
            Cause::MssMismatch => "mss_mismatch",
            Cause::ApplicationIdle => "application_idle",
        }
    }
}

/// A value in a stall's evidence: an integer, a flag, a name or a list of integers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evidence {
    Int(i64),
    Bool(bool),
    Str(&'static str),
    Ints(Vec<i64>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stall {
    pub start_ns: Ns,
    pub end_ns: Ns,
    pub cause: Cause,
    pub detail: Option<&'static str>,
    pub direction: String,
    /// Named evidence values in the order the host recorded them (the order the ground truth
    /// lists them).
    pub evidence: Vec<(&'static str, Evidence)>,
}

impl Stall {
    pub fn duration_ns(&self) -> Ns {
        self.end_ns - self.start_ns
    }
}

/// One packet a link, path stage or interface threw away. `flow_src` is the sending
/// host's index, which names the flow (src, sport, dst, dport): one connection per host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Drop {
    pub at_ns: Ns,
    pub uid: u64,
    pub reason: &'static str,
    pub place: String,
    pub flow_src: super::net::HostIndex,
    pub seq: i64,
    pub payload_len: u32,
    pub ip_len: u32,
}
