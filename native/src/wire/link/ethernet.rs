//! Ethernet II / 802.3 (LINKTYPE_ETHERNET = 1) with 802.1Q and 802.1ad (Q-in-Q) tags, and the
//! ethertype dispatch shared by every link layer that carries an ethertype (SLL, SLL2, ATM SNAP),
//! including MPLS label stacks (RFC 3032) and PPPoE sessions (RFC 2516) in front of IP.

use super::{be16, truncated, LinkResult, L3};
use crate::wire::outcome::{NotDecoded, NotTcp, Skip};

pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_ARP: u16 = 0x0806;
pub const ETHERTYPE_VLAN: u16 = 0x8100; // 802.1Q
pub const ETHERTYPE_QINQ: u16 = 0x88a8; // 802.1ad service tag
pub const ETHERTYPE_QINQ_OLD: u16 = 0x9100; // pre-standard Q-in-Q
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
pub const ETHERTYPE_MPLS: u16 = 0x8847;
pub const ETHERTYPE_MPLS_MULTICAST: u16 = 0x8848;
pub const ETHERTYPE_PPPOE_SESSION: u16 = 0x8864;
const PPPOE_HEADER_LEN: usize = 6;
/// More labels than this is garbage, as for VLAN tags.
const MAX_MPLS_LABELS: usize = 16;
/// Values up to 1500 are an 802.3 length field, not an ethertype.
const MAX_8023_LENGTH: u16 = 1500;
/// Real networks stack at most two or three tags; more means garbage.
const MAX_VLAN_TAGS: usize = 8;

pub const HEADER_LEN: usize = 14;

pub fn strip(data: &[u8]) -> LinkResult<'_> {
    let etype = be16(data, 12).ok_or_else(truncated)?;
    if etype <= MAX_8023_LENGTH {
        return llc(&data[HEADER_LEN..]);
    }
    by_ethertype(etype, &data[HEADER_LEN..])
}

/// Dispatch on an ethertype, walking any VLAN tags (4 bytes each: TCI then the next type).
pub fn by_ethertype(mut etype: u16, mut rest: &[u8]) -> LinkResult<'_> {
    let mut tags = 0;
    while matches!(etype, ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD) {
        tags += 1;
        if tags > MAX_VLAN_TAGS {
            return Err(Skip::NotDecoded(NotDecoded::TooManyVlanTags));
        }
        etype = be16(rest, 2).ok_or_else(truncated)?;
        rest = &rest[4..];
    }
    match etype {
        ETHERTYPE_IPV4 => Ok(L3::V4(rest)),
        ETHERTYPE_IPV6 => Ok(L3::V6(rest)),
        ETHERTYPE_ARP => Err(Skip::NotTcp(NotTcp::Arp)),
        ETHERTYPE_MPLS | ETHERTYPE_MPLS_MULTICAST => mpls(rest),
        ETHERTYPE_PPPOE_SESSION => pppoe(rest),
        t if t <= MAX_8023_LENGTH => llc(rest),
        _ => Err(Skip::NotTcp(NotTcp::OtherEthertype)),
    }
}

/// MPLS: 4-byte label entries until the bottom-of-stack bit; the payload carries no type, so the
/// IP version nibble decides (as Wireshark and tcpdump do).
fn mpls(mut rest: &[u8]) -> LinkResult<'_> {
    for _ in 0..MAX_MPLS_LABELS {
        let entry = rest.get(..4).ok_or_else(truncated)?;
        let bottom = entry[2] & 0x01 != 0;
        rest = &rest[4..];
        if bottom {
            return match rest.first().map(|b| b >> 4) {
                Some(4) => Ok(L3::V4(rest)),
                Some(6) => Ok(L3::V6(rest)),
                Some(_) => Err(Skip::NotTcp(NotTcp::OtherEthertype)), // e.g. pseudowire Ethernet
                None => Err(truncated()),
            };
        }
    }
    Err(Skip::NotDecoded(NotDecoded::TooManyVlanTags))
}

/// PPPoE session stage: version/type, code, session id, length, then the PPP protocol field
/// (one byte where compressed: RFC 1661 6.5).
fn pppoe(rest: &[u8]) -> LinkResult<'_> {
    super::ppp::by_protocol(rest.get(PPPOE_HEADER_LEN..).ok_or_else(truncated)?)
}

/// 802.2 LLC: only SNAP with the zero OUI (RFC 1042) carries an ethertype; the rest is not IP.
pub fn llc(rest: &[u8]) -> LinkResult<'_> {
    if rest.len() < 3 {
        return Err(truncated());
    }
    if rest[0] == 0xaa && rest[1] == 0xaa && rest[2] == 0x03 {
        if rest.len() < 8 {
            return Err(truncated());
        }
        if rest[3..6] == [0, 0, 0] {
            let etype = u16::from_be_bytes([rest[6], rest[7]]);
            return by_ethertype(etype, &rest[8..]);
        }
    }
    Err(Skip::NotTcp(NotTcp::Llc))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(types: &[u16], payload: &[u8]) -> Vec<u8> {
        let mut v = vec![0u8; 12];
        for (i, t) in types.iter().enumerate() {
            v.extend_from_slice(&t.to_be_bytes());
            if i + 1 < types.len() {
                v.extend_from_slice(&[0x00, 0x64]); // TCI: VLAN 100
            }
        }
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn plain_ipv4_and_ipv6() {
        let f = frame(&[0x0800], &[0x45, 1, 2]);
        assert_eq!(strip(&f), Ok(L3::V4(&[0x45, 1, 2][..])));
        let f = frame(&[0x86dd], &[0x60]);
        assert_eq!(strip(&f), Ok(L3::V6(&[0x60][..])));
    }

    #[test]
    fn dot1q_and_qinq() {
        let f = frame(&[0x8100, 0x0800], &[0x45]);
        assert_eq!(strip(&f), Ok(L3::V4(&[0x45][..])));
        let f = frame(&[0x88a8, 0x8100, 0x86dd], &[0x60]);
        assert_eq!(strip(&f), Ok(L3::V6(&[0x60][..])));
        let f = frame(&[0x9100, 0x8100, 0x0800], &[0x45]);
        assert_eq!(strip(&f), Ok(L3::V4(&[0x45][..])));
    }

    #[test]
    fn too_many_tags_and_truncated_tag() {
        let f = frame(&[0x8100; 10], &[]);
        assert_eq!(strip(&f), Err(Skip::NotDecoded(NotDecoded::TooManyVlanTags)));
        let mut f = frame(&[0x8100], &[]);
        f.extend_from_slice(&[0, 1, 8]);
        assert_eq!(strip(&f), Err(Skip::NotDecoded(NotDecoded::TruncatedLinkHeader)));
        assert_eq!(strip(&[0u8; 13]), Err(Skip::NotDecoded(NotDecoded::TruncatedLinkHeader)));
    }

    #[test]
    fn mpls_stack_and_pppoe() {
        // Two labels, the second with bottom-of-stack, then IPv6.
        let f = frame(&[0x8847], &[0, 0x01, 0x00, 64, 0, 0x02, 0x01, 64, 0x60]);
        assert_eq!(strip(&f), Ok(L3::V6(&[0x60][..])));
        let f = frame(&[0x8847], &[0, 0x01, 0x01, 64, 0x45]);
        assert_eq!(strip(&f), Ok(L3::V4(&[0x45][..])));
        assert_eq!(strip(&frame(&[0x8847], &[0, 0, 0, 64])), Err(Skip::NotDecoded(NotDecoded::TruncatedLinkHeader)));
        assert_eq!(strip(&frame(&[0x8847], &[0u8; 80])), Err(Skip::NotDecoded(NotDecoded::TooManyVlanTags)));
        let f = frame(&[0x8864], &[0x11, 0, 0, 7, 0, 22, 0x00, 0x21, 0x45]);
        assert_eq!(strip(&f), Ok(L3::V4(&[0x45][..])));
        let f = frame(&[0x8100, 0x8864], &[0x11, 0, 0, 7, 0, 22, 0x00, 0x57, 0x60]);
        assert_eq!(strip(&f), Ok(L3::V6(&[0x60][..])));
        // A compressed (one-byte) PPP protocol field, as some access concentrators negotiate.
        let f = frame(&[0x8864], &[0x11, 0, 0, 7, 0, 22, 0x21, 0x45]);
        assert_eq!(strip(&f), Ok(L3::V4(&[0x45][..])));
        let f = frame(&[0x8864], &[0x11, 0, 0, 7, 0, 22, 0xc0, 0x21, 1]);
        assert_eq!(strip(&f), Err(Skip::NotTcp(NotTcp::OtherEthertype)));
        assert_eq!(strip(&frame(&[0x8864], &[0x11, 0, 0, 7, 0])), Err(Skip::NotDecoded(NotDecoded::TruncatedLinkHeader)));
    }

    #[test]
    fn arp_other_and_llc() {
        assert_eq!(strip(&frame(&[0x0806], &[0; 28])), Err(Skip::NotTcp(NotTcp::Arp)));
        assert_eq!(strip(&frame(&[0x88cc], &[0; 8])), Err(Skip::NotTcp(NotTcp::OtherEthertype)));
        // 802.3 length + STP LLC (42 42 03).
        assert_eq!(strip(&frame(&[38], &[0x42, 0x42, 0x03, 0])), Err(Skip::NotTcp(NotTcp::Llc)));
        // 802.3 length + SNAP carrying IPv4.
        let f = frame(&[60], &[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00, 0x45]);
        assert_eq!(strip(&f), Ok(L3::V4(&[0x45][..])));
    }
}
