//! A hop with a smaller MTU, datagrams sent with DF (docs/tcp-rules.md#path-mtu): PmtuHop drops
//! what does not fit, and PmtuStage sends ICMP "fragmentation needed" with the hop's MTU to the
//! sender (RFC 1191) or, in a black hole, nothing (RFC 2923 section 2.1).

use super::engine::Ns;
use super::net::HostIndex;

pub const REASON_BLACKHOLE: &str = "pmtu_blackhole";
pub const REASON_FRAG_NEEDED: &str = "pmtu_frag_needed";
/// RFC 791: every IPv4 hop forwards 68-byte datagrams.
pub const MIN_IPV4_MTU: u32 = 68;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Icmp,
    Blackhole,
}

impl Mode {
    pub fn parse(name: &str) -> Option<Mode> {
        match name {
            "icmp" => Some(Mode::Icmp),
            "blackhole" => Some(Mode::Blackhole),
            _ => None,
        }
    }
}

/// PmtuVerdict: forwarded, or dropped with a reason and (mode "icmp") the MTU to report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PmtuVerdict {
    Forward,
    Drop { reason: &'static str, icmp_mtu: Option<u32> },
}

#[derive(Clone, Debug)]
pub struct PmtuHop {
    pub mtu: u32,
    pub mode: Mode,
    pub forwarded: i64,
    pub dropped: i64,
}

impl PmtuHop {
    pub fn new(mtu: u32, mode: Mode) -> Result<Self, String> {
        if mtu < MIN_IPV4_MTU {
            return Err(format!("hop mtu {mtu} below the IPv4 minimum {MIN_IPV4_MTU}"));
        }
        Ok(PmtuHop { mtu, mode, forwarded: 0, dropped: 0 })
    }

    pub fn decide(&mut self, ip_len: u32) -> PmtuVerdict {
        if ip_len <= self.mtu {
            self.forwarded += 1;
            return PmtuVerdict::Forward;
        }
        self.dropped += 1;
        match self.mode {
            Mode::Blackhole => PmtuVerdict::Drop { reason: REASON_BLACKHOLE, icmp_mtu: None },
            Mode::Icmp => PmtuVerdict::Drop { reason: REASON_FRAG_NEEDED, icmp_mtu: Some(self.mtu) },
        }
    }
}

/// PmtuStage: the hop plus where its ICMP goes (run_bulk: the sender's on_icmp_frag_needed,
/// `icmp_delay_ns` after the drop).
#[derive(Clone, Debug)]
pub struct PmtuStage {
    pub name: String,
    pub hop: PmtuHop,
    pub icmp_sink: Option<HostIndex>,
    pub icmp_delay_ns: Ns,
    pub icmp_sent: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_forwards_small_and_reports_or_eats_large() {
        let mut icmp = PmtuHop::new(1280, Mode::Icmp).unwrap();
        assert_eq!(icmp.decide(1280), PmtuVerdict::Forward);
        assert_eq!(icmp.decide(1281), PmtuVerdict::Drop { reason: REASON_FRAG_NEEDED, icmp_mtu: Some(1280) });
        let mut hole = PmtuHop::new(1280, Mode::Blackhole).unwrap();
        assert_eq!(hole.decide(1500), PmtuVerdict::Drop { reason: REASON_BLACKHOLE, icmp_mtu: None });
        assert_eq!((icmp.forwarded, icmp.dropped), (1, 1));
        assert!(PmtuHop::new(67, Mode::Icmp).is_err());
    }
}
