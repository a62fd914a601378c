//! Serial links a router's capture holds: PPP (LINKTYPE_PPP = 9, RFC 1661, with or without RFC
//! 1662's 0xff 0x03 address and control bytes), PPP in HDLC-like framing (LINKTYPE_PPP_HDLC = 50,
//! which may also hold Cisco's framing) and Cisco HDLC (LINKTYPE_C_HDLC = 104: address 0x0f or
//! 0x8f, control 0, then an ethertype). IP, and MPLS in front of IP, are opened; the rest (LCP,
//! IPCP, Cisco's SLARP keepalives) is not TCP.

use super::ethernet::{self, ETHERTYPE_MPLS};
use super::{be16, truncated, LinkResult, L3};
use crate::wire::outcome::{NotTcp, Skip};

const HDLC_ADDRESS: u8 = 0xff;
const HDLC_CONTROL: u8 = 0x03;
const CISCO_UNICAST: u8 = 0x0f;
const CISCO_MULTICAST: u8 = 0x8f;
const PPP_IPV4: u16 = 0x0021;
const PPP_IPV6: u16 = 0x0057;
const PPP_MPLS: u16 = 0x0281;
const PPP_MPLS_MULTICAST: u16 = 0x0283;

/// LINKTYPE_PPP and LINKTYPE_PPP_HDLC: optional HDLC address and control, or Cisco's framing,
/// then the PPP protocol field (one byte when compressed: RFC 1661 6.5, an odd first byte).
pub fn strip_ppp(data: &[u8]) -> LinkResult<'_> {
    match *data.first().ok_or_else(truncated)? {
        CISCO_UNICAST | CISCO_MULTICAST => return strip_cisco_hdlc(data),
        HDLC_ADDRESS if data.get(1) == Some(&HDLC_CONTROL) => return by_protocol(&data[2..]),
        _ => {}
    }
    by_protocol(data)
}

/// The PPP protocol field (two bytes, or one where compressed: an odd first byte) and what follows.
pub(crate) fn by_protocol(data: &[u8]) -> LinkResult<'_> {
    let first = *data.first().ok_or_else(truncated)?;
    let (proto, rest) = if first & 1 == 1 {
        (u16::from(first), &data[1..])
    } else {
        (be16(data, 0).ok_or_else(truncated)?, &data[2..])
    };
    match proto {
        PPP_IPV4 => Ok(L3::V4(rest)),
        PPP_IPV6 => Ok(L3::V6(rest)),
        PPP_MPLS | PPP_MPLS_MULTICAST => ethernet::by_ethertype(ETHERTYPE_MPLS, rest),
        _ => Err(Skip::NotTcp(NotTcp::OtherEthertype)), // LCP, IPCP, CHAP, ...
    }
}

/// LINKTYPE_C_HDLC: address, control, then an ethertype (IPv4, IPv6, MPLS; SLARP is not TCP).
pub fn strip_cisco_hdlc(data: &[u8]) -> LinkResult<'_> {
    let etype = be16(data, 2).ok_or_else(truncated)?;
    ethernet::by_ethertype(etype, &data[4..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::outcome::NotDecoded;

    const IP4: [u8; 2] = [0x45, 0];

    #[test]
    fn ppp_with_and_without_framing_and_a_compressed_protocol() {
        for frame in [vec![0xff, 0x03, 0x00, 0x21], vec![0x00, 0x21], vec![0x21], vec![0xff, 0x03, 0x21]] {
            let mut f = frame.clone();
            f.extend_from_slice(&IP4);
            assert_eq!(strip_ppp(&f), Ok(L3::V4(&IP4[..])), "{frame:?}");
        }
        let v6 = [0x00, 0x57, 0x60, 0];
        assert_eq!(strip_ppp(&v6), Ok(L3::V6(&[0x60, 0][..])));
    }

    #[test]
    fn mpls_over_ppp_and_cisco_hdlc() {
        // One label, bottom of stack, then IPv4.
        let ppp = [0xff, 0x03, 0x02, 0x81, 0, 0x01, 0x01, 64, 0x45, 0];
        assert_eq!(strip_ppp(&ppp), Ok(L3::V4(&[0x45, 0][..])));
        let chdlc = [0x0f, 0x00, 0x88, 0x47, 0, 0x01, 0x01, 64, 0x60, 0];
        assert_eq!(strip_cisco_hdlc(&chdlc), Ok(L3::V6(&[0x60, 0][..])));
        assert_eq!(strip_ppp(&chdlc), Ok(L3::V6(&[0x60, 0][..]))); // Cisco framing under DLT 50
        let ip = [0x8f, 0x00, 0x08, 0x00, 0x45, 0];
        assert_eq!(strip_cisco_hdlc(&ip), Ok(L3::V4(&[0x45, 0][..])));
    }

    #[test]
    fn control_protocols_are_not_tcp_and_short_headers_are_counted() {
        assert_eq!(strip_ppp(&[0xff, 0x03, 0xc0, 0x21, 1]), Err(Skip::NotTcp(NotTcp::OtherEthertype))); // LCP
        assert_eq!(strip_cisco_hdlc(&[0x8f, 0, 0x80, 0x35, 0]), Err(Skip::NotTcp(NotTcp::OtherEthertype))); // SLARP
        for short in [&[][..], &[0xff, 0x03][..], &[0x00][..], &[0x0f, 0, 0x08][..]] {
            assert_eq!(strip_ppp(short), Err(Skip::NotDecoded(NotDecoded::TruncatedLinkHeader)), "{short:?}");
        }
    }
}
