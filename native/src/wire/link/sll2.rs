//! Linux "cooked" capture v2 (LINKTYPE_LINUX_SLL2 = 276): a 20-byte pseudo header
//! (protocol, reserved, interface index, ARPHRD type, packet type, address length, 8 address bytes).

use super::{be16, sll, truncated, LinkResult};

pub const HEADER_LEN: usize = 20;

pub fn strip(data: &[u8]) -> LinkResult<'_> {
    if data.len() < HEADER_LEN {
        return Err(truncated());
    }
    let proto = be16(data, 0).ok_or_else(truncated)?;
    let arphrd = be16(data, 8).ok_or_else(truncated)?;
    sll::by_protocol(arphrd, proto, &data[HEADER_LEN..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::outcome::{NotDecoded, NotTcp, Skip};
    use crate::wire::link::L3;

    fn hdr(proto: u16, arphrd: u16) -> Vec<u8> {
        let mut v = proto.to_be_bytes().to_vec();
        v.extend_from_slice(&[0, 0, 0, 0, 0, 3]); // reserved, ifindex 3
        v.extend_from_slice(&arphrd.to_be_bytes());
        v.extend_from_slice(&[4, 6, 1, 2, 3, 4, 5, 6, 0, 0]);
        v
    }

    #[test]
    fn ipv4_ipv6_and_others() {
        let mut f = hdr(0x0800, 1);
        f.push(0x45);
        assert_eq!(strip(&f), Ok(L3::V4(&[0x45][..])));
        let mut f = hdr(0x86dd, 1);
        f.push(0x60);
        assert_eq!(strip(&f), Ok(L3::V6(&[0x60][..])));
        assert_eq!(strip(&hdr(0x0806, 1)), Err(Skip::NotTcp(NotTcp::Arp)));
        assert_eq!(strip(&hdr(0x0800, 1)[..19]), Err(Skip::NotDecoded(NotDecoded::TruncatedLinkHeader)));
    }
}
