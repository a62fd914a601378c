//! Where a record went: a TCP packet, not TCP (by reason) or not decoded (by reason). The layers
//! (link/, ip/, tcp.rs) return `Skip` when a record stops being a TCP candidate; `dissect` turns
//! that into the record's `Dissection` or `Outcome`. Kept apart from dissect.rs so that the layers
//! and their driver do not import each other.

use crate::wire::packet::TcpPacket;

/// Why a record holds something other than TCP (counted, not an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum NotTcp {
    Arp = 0,
    Udp,
    Icmp,
    Icmpv6,
    /// Encrypted payload (IPsec ESP): the transport header cannot be read.
    Esp,
    /// Any other IP protocol number (SCTP, GRE, IGMP, OSPF, ...).
    OtherIpProtocol,
    /// IPv6 "no next header" (59).
    NoNextHeader,
    /// An ethertype / link protocol that carries neither IPv4 nor IPv6.
    OtherEthertype,
    /// 802.2 LLC frames that are not SNAP-encapsulated IP (STP, CDP, NetBIOS, ...).
    Llc,
    /// ATM cells that are neither LLC-muxed nor LANE (signalling, raw cells).
    AtmOther,
    /// A null/loopback address family that is neither IPv4 nor IPv6.
    OtherAddressFamily,
    /// 802.11 management, control and extension frames (beacons, probes, RTS/CTS, ACKs).
    WlanManagement,
    /// 802.11 data frames without data (null function: power save, keep-alive).
    WlanNoData,
    /// 802.11 data frames encrypted (WEP, WPA): the payload cannot be read.
    WlanProtected,
}

impl NotTcp {
    pub const ALL: [NotTcp; 14] = [
        NotTcp::Arp,
        NotTcp::Udp,
        NotTcp::Icmp,
        NotTcp::Icmpv6,
        NotTcp::Esp,
        NotTcp::OtherIpProtocol,
        NotTcp::NoNextHeader,
        NotTcp::OtherEthertype,
        NotTcp::Llc,
        NotTcp::AtmOther,
        NotTcp::OtherAddressFamily,
        NotTcp::WlanManagement,
        NotTcp::WlanNoData,
        NotTcp::WlanProtected,
    ];
    pub const COUNT: usize = Self::ALL.len();

    pub fn name(self) -> &'static str {
        match self {
            NotTcp::Arp => "arp",
            NotTcp::Udp => "udp",
            NotTcp::Icmp => "icmp",
            NotTcp::Icmpv6 => "icmpv6",
            NotTcp::Esp => "esp",
            NotTcp::OtherIpProtocol => "other_ip_protocol",
            NotTcp::NoNextHeader => "ipv6_no_next_header",
            NotTcp::OtherEthertype => "other_ethertype",
            NotTcp::Llc => "llc",
            NotTcp::AtmOther => "atm_other",
            NotTcp::OtherAddressFamily => "other_address_family",
            NotTcp::WlanManagement => "wlan_management",
            NotTcp::WlanNoData => "wlan_no_data",
            NotTcp::WlanProtected => "wlan_protected",
        }
    }
}

/// Why a record that may hold TCP could not be decoded (counted, never a crash).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum NotDecoded {
    UnsupportedLinktype = 0,
    TruncatedLinkHeader,
    /// More stacked VLAN tags (8) or MPLS labels (16) than any real network uses (the name is
    /// kept for MPLS too: reason names are a published interface).
    TooManyVlanTags,
    TruncatedIpHeader,
    BadIpVersion,
    BadIpHeaderLength,
    /// IPv4 total length shorter than its own header (and not the TSO value 0).
    BadIpTotalLength,
    /// A fragment (first or later) of a fragmented datagram; fragments are not reassembled.
    IpFragment,
    TruncatedIpExtHeader,
    /// An IPv6 extension header chain that is too long or overruns the datagram.
    BadIpExtHeader,
    TruncatedTcpHeader,
    /// TCP data offset < 5 or beyond the segment the IP header claims.
    BadTcpHeaderLength,
    /// An 802.11 A-MSDU: several frames in one, not split.
    WlanAmsdu,
}

impl NotDecoded {
    pub const ALL: [NotDecoded; 13] = [
        NotDecoded::UnsupportedLinktype,
        NotDecoded::TruncatedLinkHeader,
        NotDecoded::TooManyVlanTags,
        NotDecoded::TruncatedIpHeader,
        NotDecoded::BadIpVersion,
        NotDecoded::BadIpHeaderLength,
        NotDecoded::BadIpTotalLength,
        NotDecoded::IpFragment,
        NotDecoded::TruncatedIpExtHeader,
        NotDecoded::BadIpExtHeader,
        NotDecoded::TruncatedTcpHeader,
        NotDecoded::BadTcpHeaderLength,
        NotDecoded::WlanAmsdu,
    ];
    pub const COUNT: usize = Self::ALL.len();

    pub fn name(self) -> &'static str {
        match self {
            NotDecoded::UnsupportedLinktype => "unsupported_linktype",
            NotDecoded::TruncatedLinkHeader => "truncated_link_header",
            NotDecoded::TooManyVlanTags => "too_many_vlan_tags",
            NotDecoded::TruncatedIpHeader => "truncated_ip_header",
            NotDecoded::BadIpVersion => "bad_ip_version",
            NotDecoded::BadIpHeaderLength => "bad_ip_header_length",
            NotDecoded::BadIpTotalLength => "bad_ip_total_length",
            NotDecoded::IpFragment => "ip_fragment",
            NotDecoded::TruncatedIpExtHeader => "truncated_ip_ext_header",
            NotDecoded::BadIpExtHeader => "bad_ip_ext_header",
            NotDecoded::TruncatedTcpHeader => "truncated_tcp_header",
            NotDecoded::BadTcpHeaderLength => "bad_tcp_header_length",
            NotDecoded::WlanAmsdu => "wlan_amsdu",
        }
    }
}

/// What an inner layer returns when the record stops being a TCP candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    NotTcp(NotTcp),
    NotDecoded(NotDecoded),
}

/// The outcome for one record.
#[derive(Debug, Clone)]
pub enum Dissection {
    Tcp(TcpPacket),
    NotTcp(NotTcp),
    NotDecoded(NotDecoded),
}

impl From<Skip> for Dissection {
    fn from(s: Skip) -> Self {
        match s {
            Skip::NotTcp(r) => Dissection::NotTcp(r),
            Skip::NotDecoded(r) => Dissection::NotDecoded(r),
        }
    }
}

/// The outcome of `dissect_into`: where the record went (the packet itself is in the caller's buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Tcp,
    NotTcp(NotTcp),
    NotDecoded(NotDecoded),
}

