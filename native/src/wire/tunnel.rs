//! Overlay tunnels over UDP that carry whole frames: VXLAN (RFC 7348, port 4789, and 8472, the
//! Linux kernel's default that flannel uses) and Geneve (RFC 8926, port 6081). A capture taken on a cloud host's underlay holds the tenants' TCP only
//! inside them; the inner packet is dissected as if captured on the inner link (addresses, ports
//! and IP ids are the inner ones; the VNI is not kept). Only an unfragmented outer datagram is
//! opened, IPv4 or IPv6 without extension headers; anything else stays "not TCP: udp".

use crate::wire::ip::{ipv4, ipv6, PROTO_UDP};
use crate::wire::link::ethernet::{self, ETHERTYPE_IPV4, ETHERTYPE_IPV6};
use crate::wire::link::{be16, L3};

pub const VXLAN_PORT: u16 = 4789;
pub const VXLAN_LINUX_PORT: u16 = 8472;
pub const GENEVE_PORT: u16 = 6081;
const UDP_HEADER_LEN: usize = 8;
const VXLAN_HEADER_LEN: usize = 8;
/// VXLAN's I flag: the VNI is valid (RFC 7348 5).
const VXLAN_FLAG_I: u8 = 0x08;
const GENEVE_BASE_LEN: usize = 8;
/// Geneve's protocol type for an Ethernet frame (Transparent Ethernet Bridging).
const ETHERTYPE_TEB: u16 = 0x6558;

/// The network layer inside `outer` when it is a VXLAN or Geneve datagram carrying IP; None
/// otherwise (TCP itself, other UDP, anything malformed or cut short: the caller goes on with the
/// outer packet as it is). The returned bytes run to the end of the record, like `outer`.
pub fn inner(outer: L3<'_>) -> Option<L3<'_>> {
    let udp = match outer {
        L3::V4(b) => {
            let first = *b.first()?;
            let ihl = usize::from(first & 0x0f) * 4;
            if first >> 4 != 4 || ihl < ipv4::MIN_HEADER_LEN || *b.get(9)? != PROTO_UDP {
                return None;
            }
            let frag = be16(b, 6)?;
            if frag & (ipv4::FLAG_MF | ipv4::FRAG_OFFSET_MASK) != 0 {
                return None;
            }
            b.get(ihl..)?
        }
        L3::V6(b) => {
            if *b.first()? >> 4 != 6 || *b.get(6)? != PROTO_UDP {
                return None;
            }
            b.get(ipv6::HEADER_LEN..)?
        }
    };
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
