//! ATM: LINKTYPE_ATM_RFC1483 (11) frames start with an RFC 1483 LLC header (SNAP for routed IP,
//! OUI 00-80-C2 for bridged Ethernet); LINKTYPE_SUNATM (123) prefixes a 4-byte pseudo header
//! (flags with the traffic type in the low nibble, VPI, VCI).

use super::{ethernet, truncated, LinkResult};
use crate::wire::outcome::{NotTcp, Skip};

pub const SUNATM_HEADER_LEN: usize = 4;
/// SunATM traffic types (libpcap's pcap/sunatmpos.h).
const PT_LANE: u8 = 0x01;
const PT_LLC: u8 = 0x02;
/// RFC 1483 bridged-Ethernet OUI; PIDs 0x0001 / 0x0007 = 802.3 with / without FCS.
const OUI_BRIDGED: [u8; 3] = [0x00, 0x80, 0xc2];
/// LANE frames carry a 2-byte LE client id before the Ethernet header.
const LANE_LECID_LEN: usize = 2;

pub fn strip_rfc1483(data: &[u8]) -> LinkResult<'_> {
    if data.len() >= 8 && data[..3] == [0xaa, 0xaa, 0x03] && data[3..6] == OUI_BRIDGED {
        let pid = u16::from_be_bytes([data[6], data[7]]);
        if pid == 0x0001 || pid == 0x0007 {
            // Bridged 802.3: 2 pad bytes, then the Ethernet frame.
            return ethernet::strip(data.get(10..).ok_or_else(truncated)?);
        }
        return Err(Skip::NotTcp(NotTcp::Llc));
    }
    ethernet::llc(data)
}

pub fn strip_sunatm(data: &[u8]) -> LinkResult<'_> {
    if data.len() < SUNATM_HEADER_LEN {
        return Err(truncated());
    }
    let rest = &data[SUNATM_HEADER_LEN..];
    match data[0] & 0x0f {
        PT_LLC => strip_rfc1483(rest),
        PT_LANE => ethernet::strip(rest.get(LANE_LECID_LEN..).ok_or_else(truncated)?),
        // Unknown traffic type: libpcap sniffs for an LLC/SNAP header the same way.
        _ if rest.starts_with(&[0xaa, 0xaa, 0x03]) => strip_rfc1483(rest),
        _ => Err(Skip::NotTcp(NotTcp::AtmOther)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::outcome::NotDecoded;
    use crate::wire::link::L3;

    const SNAP_V4: [u8; 8] = [0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00];

    #[test]
    fn rfc1483_routed_and_bridged() {
        let mut f = SNAP_V4.to_vec();
        f.push(0x45);
        assert_eq!(strip_rfc1483(&f), Ok(L3::V4(&[0x45][..])));
        let mut f = vec![0xaa, 0xaa, 0x03, 0x00, 0x80, 0xc2, 0x00, 0x07, 0, 0];
        f.extend_from_slice(&[0u8; 12]);
        f.extend_from_slice(&[0x86, 0xdd, 0x60]);
        assert_eq!(strip_rfc1483(&f), Ok(L3::V6(&[0x60][..])));
        assert_eq!(strip_rfc1483(&[0xfe, 0xfe, 0x03, 0xcc]), Err(Skip::NotTcp(NotTcp::Llc)));
        assert_eq!(strip_rfc1483(&SNAP_V4[..5]), Err(Skip::NotDecoded(NotDecoded::TruncatedLinkHeader)));
    }

    #[test]
    fn sunatm_llc_lane_other() {
        let mut f = vec![PT_LLC, 0, 0, 32];
        f.extend_from_slice(&SNAP_V4);
        f.push(0x45);
        assert_eq!(strip_sunatm(&f), Ok(L3::V4(&[0x45][..])));
        let mut f = vec![PT_LANE, 0, 0, 33, 0, 1];
        f.extend_from_slice(&[0u8; 12]);
        f.extend_from_slice(&[0x08, 0x00, 0x45]);
        assert_eq!(strip_sunatm(&f), Ok(L3::V4(&[0x45][..])));
        assert_eq!(strip_sunatm(&[0x05, 0, 0, 5, 1, 2, 3]), Err(Skip::NotTcp(NotTcp::AtmOther)));
        assert_eq!(strip_sunatm(&[2, 0, 0]), Err(Skip::NotDecoded(NotDecoded::TruncatedLinkHeader)));
    }
}
