//! BSD loopback: LINKTYPE_NULL (0) holds the address family as a 4-byte integer in the
//! *capturing host's* byte order; LINKTYPE_LOOP (108) holds it in network byte order.

use super::{truncated, LinkResult, L3};
use crate::wire::outcome::{NotTcp, Skip};

pub const HEADER_LEN: usize = 4;
const AF_INET: u32 = 2;
/// AF_INET6 differs by OS: Linux 10, NetBSD/OpenBSD 24, FreeBSD 28, macOS 30.
const AF_INET6: [u32; 4] = [10, 24, 28, 30];

/// DLT_NULL: the file does not say the writer's byte order; families are small numbers, so a
/// value whose low 16 bits are zero was written in the other order (as Wireshark decides).
pub fn strip_host_order(data: &[u8]) -> LinkResult<'_> {
    let raw: [u8; 4] = data.get(..HEADER_LEN).ok_or_else(truncated)?.try_into().map_err(|_| truncated())?;
    let le = u32::from_le_bytes(raw);
    let af = if le & 0xffff == 0 { le.swap_bytes() } else { le };
    by_family(af, &data[HEADER_LEN..])
}

pub fn strip_network_order(data: &[u8]) -> LinkResult<'_> {
    let raw: [u8; 4] = data.get(..HEADER_LEN).ok_or_else(truncated)?.try_into().map_err(|_| truncated())?;
    by_family(u32::from_be_bytes(raw), &data[HEADER_LEN..])
}

fn by_family(af: u32, rest: &[u8]) -> LinkResult<'_> {
    if af == AF_INET {
        Ok(L3::V4(rest))
    } else if AF_INET6.contains(&af) {
        Ok(L3::V6(rest))
    } else {
        Err(Skip::NotTcp(NotTcp::OtherAddressFamily))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::outcome::NotDecoded;

    #[test]
    fn both_byte_orders() {
        assert_eq!(strip_host_order(&[2, 0, 0, 0, 0x45]), Ok(L3::V4(&[0x45][..])));
        assert_eq!(strip_host_order(&[0, 0, 0, 2, 0x45]), Ok(L3::V4(&[0x45][..])));
        assert_eq!(strip_host_order(&[30, 0, 0, 0, 0x60]), Ok(L3::V6(&[0x60][..])));
        assert_eq!(strip_host_order(&[0, 0, 0, 24, 0x60]), Ok(L3::V6(&[0x60][..])));
        assert_eq!(strip_network_order(&[0, 0, 0, 2, 0x45]), Ok(L3::V4(&[0x45][..])));
        assert_eq!(strip_network_order(&[0, 0, 0, 28, 0x60]), Ok(L3::V6(&[0x60][..])));
    }

    #[test]
    fn other_family_and_truncated() {
        assert_eq!(strip_host_order(&[7, 0, 0, 0]), Err(Skip::NotTcp(NotTcp::OtherAddressFamily)));
        assert_eq!(strip_network_order(&[2, 0, 0, 0]), Err(Skip::NotTcp(NotTcp::OtherAddressFamily)));
        assert_eq!(strip_host_order(&[2, 0, 0]), Err(Skip::NotDecoded(NotDecoded::TruncatedLinkHeader)));
    }
}
