//! The IP layer: IPv4 (with options, fragments counted) and IPv6 (with its extension chain)
//! reduced to what the TCP layer and the packet table need.

pub mod ipv4;
pub mod ipv6;

use crate::wire::outcome::{NotTcp, Skip};

pub const PROTO_ICMP: u8 = 1;
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;
pub const PROTO_ESP: u8 = 50;
pub const PROTO_AH: u8 = 51;
pub const PROTO_ICMPV6: u8 = 58;
pub const PROTO_NONE: u8 = 59;

/// A datagram that carries TCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpHeader<'a> {
    pub version: u8,
    /// IPv4 addresses IPv4-mapped (::ffff:a.b.c.d), as `TcpPacket` stores them.
    pub src: [u8; 16],
    pub dst: [u8; 16],
    pub id: u16,
    pub ttl: u8,
    /// Datagram length from the header (TSO value 0: from the wire length).
    pub ip_len: u32,
    /// The captured TCP bytes, trimmed to the datagram (link padding removed).
    pub segment: &'a [u8],
    /// The TCP segment length the IP header claims (header + payload).
    pub segment_len: u32,
    pub anomalies: u32,
}

/// Classify a non-TCP upper-layer protocol.
pub(crate) fn not_tcp(proto: u8) -> Skip {
    Skip::NotTcp(match proto {
        PROTO_UDP => NotTcp::Udp,
        PROTO_ICMP => NotTcp::Icmp,
        PROTO_ICMPV6 => NotTcp::Icmpv6,
        PROTO_ESP => NotTcp::Esp,
        PROTO_NONE => NotTcp::NoNextHeader,
        _ => NotTcp::OtherIpProtocol,
    })
}

pub(crate) fn mapped_v4(a: &[u8]) -> [u8; 16] {
    let mut m = [0u8; 16];
    m[10] = 0xff;
    m[11] = 0xff;
    m[12..16].copy_from_slice(&a[..4]);
    m
}
