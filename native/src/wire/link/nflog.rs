//! Linux netfilter log (LINKTYPE_NFLOG = 239: `tcpdump -i nflog:GROUP` on packets an iptables or
//! nftables NFLOG rule sends to userspace): a 4-byte header (address family, version 0, resource
//! id) and type-length-value attributes, the packet itself in NFULA_PAYLOAD (type 9) as an IP
//! datagram. A TLV's length counts its own 4 bytes and not the padding to 4-byte alignment;
//! length and type are in the byte order of the host that wrote the file (libpcap swaps them on
//! reading), told here by the type, which is small in the right order.

use super::{raw, truncated, LinkResult};

const HEADER_LEN: usize = 4;
const TLV_HEADER_LEN: usize = 4;
const NFULA_PAYLOAD: u16 = 9;
/// Attribute types stop well below this (NFULA_* in linux/netfilter/nfnetlink_log.h).
const LARGEST_TYPE: u16 = 0xff;

pub fn strip(data: &[u8]) -> LinkResult<'_> {
    if data.len() < HEADER_LEN || data[1] != 0 {
        // Only version 0 exists; anything else is not this format.
        return Err(truncated());
    }
    let mut at = HEADER_LEN;
    while at + TLV_HEADER_LEN <= data.len() {
        let (len, kind) = tlv(&data[at..at + TLV_HEADER_LEN]);
        if kind == NFULA_PAYLOAD {
            return raw::strip_any(&data[at + TLV_HEADER_LEN..]);
        }
        let len = len as usize;
        if len < TLV_HEADER_LEN {
            return Err(truncated());
        }
        at += len.div_ceil(4) * 4;
    }
    Err(truncated())
}

/// A TLV's (length, type), in whichever byte order gives a plausible type.
fn tlv(h: &[u8]) -> (u16, u16) {
    let le = (u16::from_le_bytes([h[0], h[1]]), u16::from_le_bytes([h[2], h[3]]));
    let be = (u16::from_be_bytes([h[0], h[1]]), u16::from_be_bytes([h[2], h[3]]));
    if le.1 > LARGEST_TYPE && be.1 <= LARGEST_TYPE {
        be
    } else {
        le
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::link::L3;
    use crate::wire::outcome::{NotDecoded, Skip};

    fn tlv_bytes(kind: u16, body: &[u8], big_endian: bool) -> Vec<u8> {
        let len = (TLV_HEADER_LEN + body.len()) as u16;
        let mut v = if big_endian {
            [len.to_be_bytes(), kind.to_be_bytes()].concat()
        } else {
            [len.to_le_bytes(), kind.to_le_bytes()].concat()
        };
        v.extend_from_slice(body);
        v.resize(v.len().div_ceil(4) * 4, 0);
        v
    }

    #[test]
    fn the_payload_attribute_after_others_in_either_byte_order() {
        for big_endian in [false, true] {
            let mut f = vec![2, 0, 0, 1];
            f.extend(tlv_bytes(1, &[0x08, 0x00, 3], big_endian)); // packet header, padded
            f.extend(tlv_bytes(10, b"prefix\0", big_endian)); // log prefix
            f.extend(tlv_bytes(NFULA_PAYLOAD, &[0x45, 0, 0, 20], big_endian));
            assert_eq!(strip(&f), Ok(L3::V4(&[0x45, 0, 0, 20][..])), "big endian {big_endian}");
        }
        let mut f = vec![10, 0, 0, 0];
        f.extend(tlv_bytes(NFULA_PAYLOAD, &[0x60, 0, 0, 0], false));
        assert_eq!(strip(&f), Ok(L3::V6(&[0x60, 0, 0, 0][..])));
    }

    #[test]
    fn damaged_headers_are_link_header_errors_not_loops() {
        let bad = Err(Skip::NotDecoded(NotDecoded::TruncatedLinkHeader));
        assert_eq!(strip(&[2, 0, 0]), bad);
        assert_eq!(strip(&[2, 1, 0, 0, 8, 0, 9, 0, 0x45]), bad); // version 1
        assert_eq!(strip(&[2, 0, 0, 0, 2, 0, 1, 0, 0x45, 0, 0, 0]), bad); // a TLV shorter than its header
        let mut f = vec![2, 0, 0, 0];
        f.extend(tlv_bytes(1, &[0; 8], false));
        assert_eq!(strip(&f), bad); // no payload attribute
        f.extend([200, 0, 9]); // a length running past the end, cut
        assert_eq!(strip(&f), bad);
    }
}
