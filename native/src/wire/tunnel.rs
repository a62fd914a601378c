//! Tunnels whose inner packets carry the TCP a capture on the outer network holds only inside
//! them: overlays over UDP that carry whole frames, VXLAN (RFC 7348, port 4789, and 8472, the Linux
//! kernel's default that flannel uses) and Geneve (RFC 8926, port 6081); a mobile core's GTP-U
//! (3GPP TS 29.281, port 2152), which carries the subscribers' IP packets; and IP in IP (RFC 2003's
//! IPv4 in IPv4, RFC 4213's IPv6 in IPv4, RFC 2473's IPv4 or IPv6 in IPv6); and GRE (RFC 2784 and
//! 2890: IP, Ethernet, MPLS inside), with the ERSPAN types II and III that switches mirror
//! traffic to a remote analyzer in (the capture of a monitoring port far away). The inner packet is
//! dissected as if captured on the inner link (addresses, ports and IP ids are the inner ones; the
//! VNI or TEID is not kept; a tunnel inside one is opened in turn). Only an unfragmented outer
//! datagram is opened, IPv4 or IPv6 without
//! extension headers; anything else stays "not TCP" with the outer protocol's reason.

use crate::wire::ip::{ipv4, ipv6, PROTO_UDP};
use crate::wire::link::ethernet::{self, ETHERTYPE_IPV4, ETHERTYPE_IPV6};
use crate::wire::link::{be16, L3};

pub const VXLAN_PORT: u16 = 4789;
pub const VXLAN_LINUX_PORT: u16 = 8472;
pub const GENEVE_PORT: u16 = 6081;
pub const GTP_U_PORT: u16 = 2152;
/// Tunnels opened one inside another at most this deep (real networks nest two; more is garbage).
pub const MAX_TUNNEL_DEPTH: usize = 4;
/// IP protocol numbers of an IP packet inside IP.
pub const PROTO_IPV4_IN_IP: u8 = 4;
pub const PROTO_IPV6_IN_IP: u8 = 41;
pub const PROTO_GRE: u8 = 47;
/// GRE: checksum, routing, key and sequence-number flags (the first byte), version 0 only.
const GRE_BASE_LEN: usize = 4;
const GRE_FLAG_C: u8 = 0x80;
const GRE_FLAG_R: u8 = 0x40;
const GRE_FLAG_K: u8 = 0x20;
const GRE_FLAG_S: u8 = 0x10;
const GRE_VERSION_MASK: u8 = 0x07;
/// ERSPAN's protocol types: type II (type I when no sequence number), type III.
const ETHERTYPE_ERSPAN_II: u16 = 0x88be;
const ETHERTYPE_ERSPAN_III: u16 = 0x22eb;
const ERSPAN_II_HEADER_LEN: usize = 8;
const ERSPAN_III_HEADER_LEN: usize = 12;
/// ERSPAN III's O flag (the header's last bit): an 8-byte platform-specific subheader follows.
const ERSPAN_III_PLATFORM_LEN: usize = 8;
const UDP_HEADER_LEN: usize = 8;
const VXLAN_HEADER_LEN: usize = 8;
/// VXLAN's I flag: the VNI is valid (RFC 7348 5).
const VXLAN_FLAG_I: u8 = 0x08;
const GENEVE_BASE_LEN: usize = 8;
/// Geneve's protocol type for an Ethernet frame (Transparent Ethernet Bridging).
const ETHERTYPE_TEB: u16 = 0x6558;
/// GTPv1-U: version 1, protocol type GTP (the first byte's top four bits), message G-PDU (a user's
/// packet), and the E, S and PN flags that add the 4 optional bytes (TS 29.281 5.1).
const GTP_HEADER_LEN: usize = 8;
const GTP_OPTIONAL_LEN: usize = 4;
const GTP_V1_PT: u8 = 0x30;
const GTP_FLAGS_OPTIONAL: u8 = 0x07;
const GTP_FLAG_E: u8 = 0x04;
const GTP_G_PDU: u8 = 0xff;

/// The network layer inside `outer` when it is a tunnel packet carrying IP; None otherwise (TCP
/// itself, other UDP, anything malformed or cut short: the caller goes on with the outer packet
/// as it is). The returned bytes run to the end of the record, like `outer`.
pub fn inner(outer: L3<'_>) -> Option<L3<'_>> {
    let (proto, payload) = match outer {
        L3::V4(b) => {
            let first = *b.first()?;
            let ihl = usize::from(first & 0x0f) * 4;
            if first >> 4 != 4 || ihl < ipv4::MIN_HEADER_LEN {
                return None;
            }
            let frag = be16(b, 6)?;
            if frag & (ipv4::FLAG_MF | ipv4::FRAG_OFFSET_MASK) != 0 {
                return None;
            }
            (*b.get(9)?, b.get(ihl..)?)
        }
        L3::V6(b) => {
            if *b.first()? >> 4 != 6 {
                return None;
            }
            (*b.get(6)?, b.get(ipv6::HEADER_LEN..)?)
        }
    };
    match proto {
        PROTO_UDP => over_udp(payload),
        PROTO_IPV4_IN_IP => ip_version(payload, 4).map(L3::V4),
        PROTO_IPV6_IN_IP => ip_version(payload, 6).map(L3::V6),
        PROTO_GRE => gre(payload),
        _ => None,
    }
}

/// What a GRE packet carries: IP, an Ethernet frame (transparent bridging, ERSPAN), or MPLS.
fn gre(g: &[u8]) -> Option<L3<'_>> {
    let flags = *g.first()?;
    if flags & GRE_FLAG_R != 0 || *g.get(1)? & GRE_VERSION_MASK != 0 {
        return None; // source routing (RFC 1701) or PPTP's enhanced GRE (version 1, PPP inside)
    }
    let words = [GRE_FLAG_C, GRE_FLAG_K, GRE_FLAG_S].iter().filter(|&&f| flags & f != 0).count();
    let proto = be16(g, 2)?;
    let rest = g.get(GRE_BASE_LEN + 4 * words..)?;
    match proto {
        ETHERTYPE_IPV4 => ip_version(rest, 4).map(L3::V4),
        ETHERTYPE_IPV6 => ip_version(rest, 6).map(L3::V6),
        ETHERTYPE_TEB => ethernet::strip(rest).ok(),
        ETHERTYPE_ERSPAN_II if flags & GRE_FLAG_S == 0 => ethernet::strip(rest).ok(), // type I: no header
        ETHERTYPE_ERSPAN_II => ethernet::strip(rest.get(ERSPAN_II_HEADER_LEN..)?).ok(),
        ETHERTYPE_ERSPAN_III => {
            let platform = *rest.get(ERSPAN_III_HEADER_LEN - 1)? & 0x01 != 0;
            let len = ERSPAN_III_HEADER_LEN + if platform { ERSPAN_III_PLATFORM_LEN } else { 0 };
            ethernet::strip(rest.get(len..)?).ok()
        }
        ethernet::ETHERTYPE_MPLS => ethernet::by_ethertype(proto, rest).ok(),
        _ => None,
    }
}

/// `b` when it starts an IP header of `version`.
fn ip_version(b: &[u8], version: u8) -> Option<&[u8]> {
    (*b.first()? >> 4 == version).then_some(b)
}

fn over_udp(udp: &[u8]) -> Option<L3<'_>> {
    let port = be16(udp, 2)?;
    let payload = udp.get(UDP_HEADER_LEN..)?;
    match port {
        VXLAN_PORT | VXLAN_LINUX_PORT => {
            if *payload.first()? & VXLAN_FLAG_I == 0 {
                return None;
            }
            ethernet::strip(payload.get(VXLAN_HEADER_LEN..)?).ok()
        }
        GENEVE_PORT => {
            let first = *payload.first()?;
            if first >> 6 != 0 {
                return None; // version 0 only
            }
            let options = usize::from(first & 0x3f) * 4;
            let proto = be16(payload, 2)?;
            let rest = payload.get(GENEVE_BASE_LEN + options..)?;
            match proto {
                ETHERTYPE_TEB => ethernet::strip(rest).ok(),
                ETHERTYPE_IPV4 => Some(L3::V4(rest)),
                ETHERTYPE_IPV6 => Some(L3::V6(rest)),
                _ => None,
            }
        }
        GTP_U_PORT => gtp_u(payload),
        _ => None,
    }
}

/// The user's IP packet in a GTPv1-U G-PDU, past the optional fields and the extension headers
/// (each `4 * its first byte` long, the next one's type in its last byte, 0 ending the chain).
fn gtp_u(g: &[u8]) -> Option<L3<'_>> {
    let flags = *g.first()?;
    if flags & 0xf0 != GTP_V1_PT || *g.get(1)? != GTP_G_PDU {
        return None;
    }
    let mut at = GTP_HEADER_LEN;
    if flags & GTP_FLAGS_OPTIONAL != 0 {
        at += GTP_OPTIONAL_LEN;
        if flags & GTP_FLAG_E != 0 {
            let mut next = *g.get(at - 1)?;
            while next != 0 {
                let len = usize::from(*g.get(at)?) * 4;
                if len == 0 {
                    return None;
                }
                next = *g.get(at + len - 1)?;
                at += len;
            }
        }
    }
    let user = g.get(at..)?;
    match *user.first()? >> 4 {
        4 => Some(L3::V4(user)),
        6 => Some(L3::V6(user)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4/UDP datagram to `port` around `payload` (checksums zero: never read).
    fn udp4(port: u16, payload: &[u8], frag: u16) -> Vec<u8> {
        let total = (20 + 8 + payload.len()) as u16;
        let mut v = vec![0x45, 0, (total >> 8) as u8, total as u8, 0, 1, (frag >> 8) as u8, frag as u8, 64, 17, 0, 0];
        v.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        let ulen = (8 + payload.len()) as u16;
        v.extend_from_slice(&[0xc0, 0x00, (port >> 8) as u8, port as u8, (ulen >> 8) as u8, ulen as u8, 0, 0]);
        v.extend_from_slice(payload);
        v
    }

    fn inner_frame() -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 40]);
        f.extend(std::iter::repeat(0).take(36));
        f
    }

    #[test]
    fn vxlan_opens_to_the_inner_ip() {
        let mut p = vec![VXLAN_FLAG_I, 0, 0, 0, 0, 0, 42, 0];
        p.extend(inner_frame());
        let outer = udp4(VXLAN_PORT, &p, 0);
        let Some(L3::V4(ip)) = inner(L3::V4(&outer)) else { panic!() };
        assert_eq!(&ip[..2], &[0x45, 0]);
        assert_eq!(ip.len(), 40);
    }

    #[test]
    fn geneve_with_options_and_a_bare_ip_payload() {
        let mut p = vec![0x01, 0, 0x08, 0x00, 0, 0, 7, 0]; // one 4-byte option word, IPv4 inside
        p.extend_from_slice(&[0xff; 4]);
        p.extend_from_slice(&[0x45, 0, 0, 40]);
        let outer = udp4(GENEVE_PORT, &p, 0);
        let Some(L3::V4(ip)) = inner(L3::V4(&outer)) else { panic!() };
        assert_eq!(ip, &[0x45, 0, 0, 40]);
    }

    #[test]
    fn gtp_u_opens_past_its_optional_fields_and_extension_headers() {
        let ip = [0x45, 0, 0, 40];
        // Plain G-PDU: flags 0x30, type 0xff, length, TEID.
        let mut plain = vec![0x30, 0xff, 0, 4, 0, 0, 0, 9];
        plain.extend_from_slice(&ip);
        let outer = udp4(GTP_U_PORT, &plain, 0);
        let Some(L3::V4(got)) = inner(L3::V4(&outer)) else { panic!() };
        assert_eq!(got, &ip);
        // E flag: sequence, N-PDU, next type 0x85 (PDU session container, 4 bytes), then none.
        let mut ext = vec![0x34, 0xff, 0, 12, 0, 0, 0, 9, 0, 0, 0, 0x85, 1, 0x10, 5, 0];
        ext.extend_from_slice(&[0x60, 0, 0, 0]);
        let outer = udp4(GTP_U_PORT, &ext, 0);
        let Some(L3::V6(got)) = inner(L3::V4(&outer)) else { panic!() };
        assert_eq!(got, &[0x60, 0, 0, 0]);
        // Not a G-PDU (an echo request), GTP' (PT 0), an extension of length 0: closed.
        let mut echo = plain.clone();
        echo[1] = 1;
        assert_eq!(inner(L3::V4(&udp4(GTP_U_PORT, &echo, 0))), None);
        let mut prime = plain.clone();
        prime[0] = 0x20;
        assert_eq!(inner(L3::V4(&udp4(GTP_U_PORT, &prime, 0))), None);
        let mut bad = ext.clone();
        bad[12] = 0;
        assert_eq!(inner(L3::V4(&udp4(GTP_U_PORT, &bad, 0))), None);
        let whole = udp4(GTP_U_PORT, &ext, 0);
        for cut in 0..whole.len() - 4 {
            // (Up to the end of the GTP headers: from there on the inner IP is handed on.)
            assert_eq!(inner(L3::V4(&whole[..cut])), None, "cut at {cut}");
        }
    }

    #[test]
    fn ip_in_ip_opens_by_protocol_number() {
        let mut v4in4 = vec![0x45, 0, 0, 40, 0, 1, 0, 0, 64, PROTO_IPV4_IN_IP, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        v4in4.extend_from_slice(&[0x45, 0, 0, 20]);
        let Some(L3::V4(got)) = inner(L3::V4(&v4in4)) else { panic!() };
        assert_eq!(got, &[0x45, 0, 0, 20]);
        let mut v6in4 = v4in4[..20].to_vec();
        v6in4[9] = PROTO_IPV6_IN_IP;
        v6in4.extend_from_slice(&[0x60, 0, 0, 0]);
        let Some(L3::V6(got)) = inner(L3::V4(&v6in4)) else { panic!() };
        assert_eq!(got, &[0x60, 0, 0, 0]);
        let mut v4in6 = vec![0x60, 0, 0, 0, 0, 4, PROTO_IPV4_IN_IP, 64];
        v4in6.extend_from_slice(&[0; 32]);
        v4in6.extend_from_slice(&[0x45, 0, 0, 20]);
        let Some(L3::V4(got)) = inner(L3::V6(&v4in6)) else { panic!() };
        assert_eq!(got, &[0x45, 0, 0, 20]);
        // The protocol number says IPv6 but an IPv4 header follows: closed.
        let mut wrong = v4in4.clone();
        wrong[9] = PROTO_IPV6_IN_IP;
        assert_eq!(inner(L3::V4(&wrong)), None);
    }

    /// An IPv4 datagram of protocol GRE around `gre`.
    fn gre4(gre: &[u8]) -> Vec<u8> {
        let mut v = vec![0x45, 0, 0, 0, 0, 1, 0, 0, 64, PROTO_GRE, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        v.extend_from_slice(gre);
        v
    }

    #[test]
    fn gre_opens_ip_ethernet_and_erspan() {
        // Plain GRE with a key, IPv4 inside.
        let mut keyed = vec![0x20, 0, 0x08, 0x00, 0, 0, 0, 7];
        keyed.extend_from_slice(&[0x45, 0, 0, 20]);
        let outer = gre4(&keyed);
        assert_eq!(inner(L3::V4(&outer)), Some(L3::V4(&[0x45, 0, 0, 20][..])));
        // ERSPAN II: a sequence number, the 8-byte ERSPAN header, then an Ethernet frame.
        let mut erspan2 = vec![0x10, 0, 0x88, 0xbe, 0, 0, 0, 1];
        erspan2.extend_from_slice(&[0x10, 0, 0, 1, 0, 0, 0, 0]);
        erspan2.extend(inner_frame());
        let outer = gre4(&erspan2);
        let Some(L3::V4(ip)) = inner(L3::V4(&outer)) else { panic!() };
        assert_eq!(ip.len(), 40);
        // ERSPAN III with the platform subheader (O flag), then Ethernet.
        let mut erspan3 = vec![0x10, 0, 0x22, 0xeb, 0, 0, 0, 1];
        erspan3.extend_from_slice(&[0x20, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x01]);
        erspan3.extend_from_slice(&[0; 8]);
        erspan3.extend(inner_frame());
        let outer = gre4(&erspan3);
        let Some(L3::V4(ip)) = inner(L3::V4(&outer)) else { panic!() };
        assert_eq!(ip.len(), 40);
        // PPTP's enhanced GRE (version 1) and source routing stay closed; so does a cut header.
        let mut pptp = keyed.clone();
        pptp[1] = 1;
        assert_eq!(inner(L3::V4(&gre4(&pptp))), None);
        let mut routed = keyed.clone();
        routed[0] |= GRE_FLAG_R;
        assert_eq!(inner(L3::V4(&gre4(&routed))), None);
        let whole = gre4(&erspan2);
        for cut in 0..20 + 8 + 8 + 14 {
            assert_eq!(inner(L3::V4(&whole[..cut])), None, "cut at {cut}");
        }
    }

    #[test]
    fn other_udp_fragments_and_short_headers_stay_closed() {
        let mut p = vec![VXLAN_FLAG_I, 0, 0, 0, 0, 0, 42, 0];
        p.extend(inner_frame());
        assert_eq!(inner(L3::V4(&udp4(53, &p, 0))), None);
        assert_eq!(inner(L3::V4(&udp4(VXLAN_PORT, &p, ipv4::FLAG_MF))), None);
        let mut no_i = p.clone();
        no_i[0] = 0;
        assert_eq!(inner(L3::V4(&udp4(VXLAN_PORT, &no_i, 0))), None);
        let whole = udp4(VXLAN_PORT, &p, 0);
        for cut in 0..whole.len() - 40 {
            // (Up to the end of the inner Ethernet header: from there on the inner IP is handed on.)
            assert_eq!(inner(L3::V4(&whole[..cut])), None, "cut at {cut}");
        }
    }
}
