//! Apple's PKTAP (LINKTYPE_PKTAP = 258; LINKTYPE_USER2 = 149 in older macOS files): what
//! `tcpdump -i pktap` and `-k` write on macOS. A header in the capturing host's byte order (little
//! endian on every Mac) gives its own length, the type of what follows and the packet's own DLT
//! (Ethernet, loopback, ...); the packet follows the header.

use super::{truncated, LinkResult};
use crate::wire::outcome::{NotDecoded, Skip};

/// pth_length, pth_type_next, pth_dlt: the fields read.
const FIXED_LEN: usize = 12;
/// pth_type_next: a packet follows (the others carry no frame).
const PTH_TYPE_PACKET: u32 = 1;

fn le32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

pub fn strip(data: &[u8]) -> LinkResult<'_> {
    let len = le32(data, 0).ok_or_else(truncated)? as usize;
    if len < FIXED_LEN || len > data.len() {
        return Err(truncated());
    }
    if le32(data, 4) != Some(PTH_TYPE_PACKET) {
        return Err(Skip::NotDecoded(NotDecoded::UnsupportedLinktype));
    }
    let dlt = le32(data, 8).ok_or_else(truncated)?;
    if dlt == super::linktype::PKTAP || dlt == super::linktype::USER2 {
        return Err(Skip::NotDecoded(NotDecoded::UnsupportedLinktype)); // no header inside a header
    }
    super::strip(dlt, &data[len..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::link::L3;

    fn header(len: u32, type_next: u32, dlt: u32) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&len.to_le_bytes());
        v.extend_from_slice(&type_next.to_le_bytes());
        v.extend_from_slice(&dlt.to_le_bytes());
        v.resize(len as usize, 0);
        v
    }

    #[test]
    fn ethernet_and_loopback_inside() {
        let mut eth = header(108, 1, 1);
        eth.extend_from_slice(&[0u8; 12]);
        eth.extend_from_slice(&[0x08, 0x00, 0x45]);
        assert_eq!(strip(&eth), Ok(L3::V4(&[0x45][..])));
        let mut lo = header(108, 1, 0);
        lo.extend_from_slice(&[30, 0, 0, 0, 0x60]);
        assert_eq!(strip(&lo), Ok(L3::V6(&[0x60][..])));
    }

    #[test]
    fn bad_lengths_other_types_and_nesting_are_refused() {
        assert_eq!(strip(&[0u8; 3]), Err(truncated()));
        assert_eq!(strip(&header(8, 1, 1)), Err(truncated()));
        let mut long = header(108, 1, 1);
        long[0] = 200;
        assert_eq!(strip(&long), Err(truncated()));
        assert!(matches!(strip(&header(108, 2, 1)), Err(Skip::NotDecoded(NotDecoded::UnsupportedLinktype))));
        assert!(matches!(strip(&header(108, 1, 258)), Err(Skip::NotDecoded(NotDecoded::UnsupportedLinktype))));
    }
}
