//! Link layers: strip the link header of a record and say which IP version follows.
//! Each link type has its own module; `strip` dispatches on the DLT/LINKTYPE number.

pub mod atm;
pub mod ethernet;
pub mod nflog;
pub mod null;
pub mod pktap;
pub mod ppp;
pub mod raw;
pub mod sll;
pub mod sll2;
pub mod wlan;

use crate::wire::outcome::{NotDecoded, Skip};

/// LINKTYPE_* numbers handled here (tcpdump.org/linktypes.html).
pub mod linktype {
    pub const NULL: u32 = 0;
    pub const ETHERNET: u32 = 1;
    pub const PPP: u32 = 9;
    pub const ATM_RFC1483: u32 = 11;
    pub const RAW_12: u32 = 12;
    pub const PPP_HDLC: u32 = 50;
    pub const RAW_14: u32 = 14;
    pub const RAW: u32 = 101;
    pub const C_HDLC: u32 = 104;
    pub const IEEE802_11: u32 = 105;
    pub const LOOP: u32 = 108;
    pub const LINUX_SLL: u32 = 113;
    pub const SUNATM: u32 = 123;
    pub const IEEE802_11_RADIOTAP: u32 = 127;
    /// What older macOS wrote for PKTAP.
    pub const USER2: u32 = 149;
    pub const IPV4: u32 = 228;
    pub const IPV6: u32 = 229;
    pub const NFLOG: u32 = 239;
    pub const PKTAP: u32 = 258;
    pub const LINUX_SLL2: u32 = 276;
}

/// The network-layer bytes of a record, starting at the IP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L3<'a> {
    V4(&'a [u8]),
    V6(&'a [u8]),
}

impl<'a> L3<'a> {
    pub fn payload(&self) -> &'a [u8] {
        match *self {
            L3::V4(b) | L3::V6(b) => b,
        }
    }
}

pub type LinkResult<'a> = Result<L3<'a>, Skip>;

pub fn strip(linktype: u32, data: &[u8]) -> LinkResult<'_> {
    match linktype {
        linktype::ETHERNET => ethernet::strip(data),
        linktype::LINUX_SLL => sll::strip(data),
        linktype::LINUX_SLL2 => sll2::strip(data),
        linktype::NULL => null::strip_host_order(data),
        linktype::LOOP => null::strip_network_order(data),
        linktype::RAW_12 | linktype::RAW_14 | linktype::RAW => raw::strip_any(data),
        linktype::IPV4 => raw::strip_v4(data),
        linktype::IPV6 => raw::strip_v6(data),
        linktype::ATM_RFC1483 => atm::strip_rfc1483(data),
        linktype::SUNATM => atm::strip_sunatm(data),
        linktype::PKTAP | linktype::USER2 => pktap::strip(data),
        linktype::PPP | linktype::PPP_HDLC => ppp::strip_ppp(data),
        linktype::C_HDLC => ppp::strip_cisco_hdlc(data),
        linktype::NFLOG => nflog::strip(data),
        linktype::IEEE802_11 => wlan::strip(data),
        linktype::IEEE802_11_RADIOTAP => wlan::strip_radiotap(data),
        _ => Err(Skip::NotDecoded(NotDecoded::UnsupportedLinktype)),
    }
}

/// Largest IP datagram a link can carry; anything longer was built by TSO/GSO/GRO in the
/// capturing host's stack (a super-frame). Ethernet-like links allow jumbo frames up to a
/// 9216-byte MTU (the largest common switch setting); loopback and raw IP allow 65535 (IPv4's
/// limit, Linux lo MTU 65536).
pub fn max_ip_len(linktype: u32) -> u32 {
    match linktype {
        linktype::ETHERNET
        | linktype::LINUX_SLL
        | linktype::LINUX_SLL2
        | linktype::ATM_RFC1483
        | linktype::SUNATM
        | linktype::IEEE802_11
        | linktype::IEEE802_11_RADIOTAP => 9216,
        _ => 65535,
    }
}

#[inline]
pub(crate) fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

pub(crate) fn truncated() -> Skip {
    Skip::NotDecoded(NotDecoded::TruncatedLinkHeader)
}
