//! Linux "cooked" capture v1 (LINKTYPE_LINUX_SLL = 113): a 16-byte pseudo header
//! (packet type, ARPHRD type, address length, 8 address bytes, protocol).

use super::{be16, ethernet, truncated, LinkResult};
use crate::wire::outcome::{NotTcp, Skip};

pub const HEADER_LEN: usize = 16;
/// ARPHRD types whose protocol field is not an ethertype (netlink, raw 802.2, ...).
pub(crate) const ARPHRD_NETLINK: u16 = 824;
/// Protocol values below 0x0600 are Linux's "pseudo" protocols (ETH_P_802_2 = 4, ETH_P_802_3 = 1...).
const LINUX_PSEUDO_PROTO_MAX: u16 = 0x05ff;

pub fn strip(data: &[u8]) -> LinkResult<'_> {
    let proto = be16(data, 14).ok_or_else(truncated)?;
    let arphrd = be16(data, 2).ok_or_else(truncated)?;
    by_protocol(arphrd, proto, &data[HEADER_LEN..])
}

/// Shared with SLL2: the protocol field is an ethertype unless the device is netlink or the
/// value is one of Linux's pseudo protocols.
pub(crate) fn by_protocol(arphrd: u16, proto: u16, rest: &[u8]) -> LinkResult<'_> {
    if arphrd == ARPHRD_NETLINK {
        return Err(Skip::NotTcp(NotTcp::OtherEthertype));
    }
    if proto <= LINUX_PSEUDO_PROTO_MAX {
        // ETH_P_802_2 (4): an LLC frame follows; other pseudo protocols are not IP.
        return if proto == 4 { ethernet::llc(rest) } else { Err(Skip::NotTcp(NotTcp::Llc)) };
    }
    ethernet::by_ethertype(proto, rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::outcome::NotDecoded;
    use crate::wire::link::L3;

    fn hdr(arphrd: u16, proto: u16) -> Vec<u8> {
        let mut v = vec![0, 0]; // packet type: to us
        v.extend_from_slice(&arphrd.to_be_bytes());
        v.extend_from_slice(&6u16.to_be_bytes());
        v.extend_from_slice(&[1, 2, 3, 4, 5, 6, 0, 0]);
        v.extend_from_slice(&proto.to_be_bytes());
        v
    }

    #[test]
    fn ipv4_ipv6_vlan() {
        let mut f = hdr(1, 0x0800);
        f.push(0x45);
        assert_eq!(strip(&f), Ok(L3::V4(&[0x45][..])));
        let mut f = hdr(1, 0x86dd);
        f.push(0x60);
        assert_eq!(strip(&f), Ok(L3::V6(&[0x60][..])));
        let mut f = hdr(1, 0x8100);
        f.extend_from_slice(&[0, 5, 0x08, 0x00, 0x45]);
        assert_eq!(strip(&f), Ok(L3::V4(&[0x45][..])));
    }

    #[test]
    fn non_ip_and_truncated() {
        assert_eq!(strip(&hdr(1, 0x0806)), Err(Skip::NotTcp(NotTcp::Arp)));
        assert_eq!(strip(&hdr(824, 0x0800)), Err(Skip::NotTcp(NotTcp::OtherEthertype)));
        assert_eq!(strip(&hdr(1, 1)), Err(Skip::NotTcp(NotTcp::Llc)));
        assert_eq!(strip(&hdr(1, 0x0800)[..15]), Err(Skip::NotDecoded(NotDecoded::TruncatedLinkHeader)));
    }
}
