//! Connection state (RFC 793 section 3.2 names) and the kinds of timer a connection runs.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TcpState {
    Closed,
    Listen,
    SynSent,
    SynReceived,
    Established,
    FinWait1,
    FinWait2,
    CloseWait,
    Closing,
    LastAck,
    TimeWait,
}

impl TcpState {
    /// The RFC 793 name.
    pub fn value(self) -> &'static str {
        match self {
            TcpState::Closed => "CLOSED",
            TcpState::Listen => "LISTEN",
            TcpState::SynSent => "SYN-SENT",
            TcpState::SynReceived => "SYN-RECEIVED",
            TcpState::Established => "ESTABLISHED",
            TcpState::FinWait1 => "FIN-WAIT-1",
            TcpState::FinWait2 => "FIN-WAIT-2",
            TcpState::CloseWait => "CLOSE-WAIT",
            TcpState::Closing => "CLOSING",
            TcpState::LastAck => "LAST-ACK",
            TcpState::TimeWait => "TIME-WAIT",
        }
    }

    pub fn can_send_data(self) -> bool {
        matches!(self, TcpState::Established | TcpState::CloseWait)
    }

    pub fn receives_data(self) -> bool {
        matches!(self, TcpState::Established | TcpState::FinWait1 | TcpState::FinWait2)
    }
}

/// Every timer a connection can run (4.4BSD TCPT_REXMT and TCPT_PERSIST, the delayed ACK, the
/// Linux 2.0 partial-segment timer); the discriminant indexes the timer arrays.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TimerKind {
    Rexmt = 0,
    Persist = 1,
    Delack = 2,
    Partial = 3,
}

impl TimerKind {
    pub const ALL: [TimerKind; 4] = [TimerKind::Rexmt, TimerKind::Persist, TimerKind::Delack, TimerKind::Partial];
}
