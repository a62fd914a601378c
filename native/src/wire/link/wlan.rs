//! IEEE 802.11 as a monitor-mode capture sees it: LINKTYPE_IEEE802_11 (105, the MAC header first)
//! and LINKTYPE_IEEE802_11_RADIOTAP (127, a radiotap header before it, whose flags field says
//! whether the frame ends in its 4-byte FCS). Data frames carry an 802.2 LLC/SNAP header and then
//! the IP datagram; management and control frames, null data and encrypted payloads are not TCP
//! the analysis can read, and an A-MSDU (several frames in one) is left undecoded.

use super::{ethernet, truncated, LinkResult};
use crate::wire::outcome::{NotDecoded, NotTcp, Skip};

const RADIOTAP_MIN: usize = 8;
/// radiotap "present" word: TSFT (8 bytes, 8-aligned) then Flags (1 byte); bit 31 extends it.
const PRESENT_TSFT: u32 = 1 << 0;
const PRESENT_FLAGS: u32 = 1 << 1;
const PRESENT_EXT: u32 = 1 << 31;
const FLAGS_FCS_AT_END: u8 = 0x10;
const FCS_LEN: usize = 4;

const MAC_HEADER: usize = 24;
const TYPE_DATA: u8 = 2;
/// Subtype bits of a data frame: QoS (a 2-byte QoS control field), no data (null function).
const SUBTYPE_QOS: u8 = 0x8;
const SUBTYPE_NO_DATA: u8 = 0x4;
/// Flags byte: both distribution-system bits (a fourth address), protected, +HTC/order.
const FLAGS_TO_AND_FROM_DS: u8 = 0x03;
const FLAGS_PROTECTED: u8 = 0x40;
const FLAGS_ORDER: u8 = 0x80;
const QOS_AMSDU: u8 = 0x80;

pub fn strip_radiotap(data: &[u8]) -> LinkResult<'_> {
    if data.len() < RADIOTAP_MIN || data[0] != 0 {
        return Err(truncated());
    }
    let len = u16::from_le_bytes([data[2], data[3]]) as usize;
    if len < RADIOTAP_MIN || len > data.len() {
        return Err(truncated());
    }
    let frame = &data[len..];
    let frame = if radiotap_fcs(&data[..len]) {
        frame.get(..frame.len().saturating_sub(FCS_LEN)).unwrap_or(frame)
    } else {
        frame
    };
    strip(frame)
}

/// Whether the radiotap Flags field (when present) says the frame ends in its FCS.
fn radiotap_fcs(h: &[u8]) -> bool {
    let word = |at: usize| h.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let Some(first) = word(4) else { return false };
    // Fields follow the last present word.
    let mut at = 4;
    while word(at).is_some_and(|w| w & PRESENT_EXT != 0) {
        at += 4;
    }
    at += 4;
    if first & PRESENT_FLAGS == 0 {
        return false;
    }
    if first & PRESENT_TSFT != 0 {
        at = at.div_ceil(8) * 8 + 8;
    }
    h.get(at).is_some_and(|f| f & FLAGS_FCS_AT_END != 0)
}

/// An 802.11 frame from its MAC header.
pub fn strip(f: &[u8]) -> LinkResult<'_> {
    if f.len() < 2 {
        return Err(truncated());
    }
    let (kind, subtype, flags) = ((f[0] >> 2) & 0x3, f[0] >> 4, f[1]);
    if kind != TYPE_DATA {
        return Err(Skip::NotTcp(NotTcp::WlanManagement));
    }
    if subtype & SUBTYPE_NO_DATA != 0 {
        return Err(Skip::NotTcp(NotTcp::WlanNoData));
    }
    if flags & FLAGS_PROTECTED != 0 {
        return Err(Skip::NotTcp(NotTcp::WlanProtected));
    }
    let mut header = MAC_HEADER;
    if flags & FLAGS_TO_AND_FROM_DS == FLAGS_TO_AND_FROM_DS {
        header += 6;
    }
    if subtype & SUBTYPE_QOS != 0 {
        let qos = *f.get(header).ok_or_else(truncated)?;
        if qos & QOS_AMSDU != 0 {
            return Err(Skip::NotDecoded(NotDecoded::WlanAmsdu));
        }
        header += 2;
        if flags & FLAGS_ORDER != 0 {
            header += 4; // HT control
        }
    }
    ethernet::llc(f.get(header..).ok_or_else(truncated)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::link::L3;

    const SNAP_IPV4: [u8; 8] = [0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00];

    fn data_frame(fc0: u8, fc1: u8, extra: &[u8]) -> Vec<u8> {
        let mut f = vec![fc0, fc1];
        f.extend_from_slice(&[0; 22]); // duration, three addresses, sequence control
        f.extend_from_slice(extra);
        f.extend_from_slice(&SNAP_IPV4);
        f.push(0x45);
        f
    }

    #[test]
    fn data_qos_four_address_and_ht_control_frames() {
        let ip = Ok(L3::V4(&[0x45][..]));
        assert_eq!(strip(&data_frame(0x08, 0x01, &[])), ip); // data, to the distribution system
        assert_eq!(strip(&data_frame(0x88, 0x02, &[0, 0])), ip); // QoS data
        assert_eq!(strip(&data_frame(0x88, 0x03, &[0; 6 + 2])), ip); // QoS, four addresses
        assert_eq!(strip(&data_frame(0x88, 0x82, &[0, 0, 0, 0, 0, 0])), ip); // QoS + HT control
    }

    #[test]
    fn frames_that_are_not_tcp_or_not_read() {
        assert_eq!(strip(&[0x80, 0, 0, 0]), Err(Skip::NotTcp(NotTcp::WlanManagement))); // beacon
        assert_eq!(strip(&[0xd4, 0]), Err(Skip::NotTcp(NotTcp::WlanManagement))); // ACK
        assert_eq!(strip(&data_frame(0x48, 0x01, &[])), Err(Skip::NotTcp(NotTcp::WlanNoData))); // null
        assert_eq!(strip(&data_frame(0x88, 0x41, &[0, 0])), Err(Skip::NotTcp(NotTcp::WlanProtected)));
        assert_eq!(strip(&data_frame(0x88, 0x02, &[0x80, 0])), Err(Skip::NotDecoded(NotDecoded::WlanAmsdu)));
        assert_eq!(strip(&data_frame(0x08, 0x01, &[])[..26]), Err(truncated()));
        assert_eq!(strip(&[0x08]), Err(truncated()));
    }

    fn radiotap(present: &[u32], fields: &[u8]) -> Vec<u8> {
        let mut h = vec![0, 0, 0, 0];
        for p in present {
            h.extend_from_slice(&p.to_le_bytes());
        }
        h.extend_from_slice(fields);
        let len = h.len() as u16;
        h[2..4].copy_from_slice(&len.to_le_bytes());
        h
    }

    #[test]
    fn radiotap_length_and_the_fcs_flag() {
        let frame = data_frame(0x08, 0x01, &[]);
        let ip = Ok(L3::V4(&[0x45][..]));
        // Flags without the FCS bit; the frame is all that follows.
        let mut r = radiotap(&[PRESENT_FLAGS], &[0x00, 0]);
        r.extend_from_slice(&frame);
        assert_eq!(strip_radiotap(&r), ip);
        // Two present words (12 bytes), 4 bytes of padding to align TSFT to 8, TSFT, then Flags
        // with the FCS bit: the last 4 bytes go.
        let mut fields = vec![0; 4 + 8];
        fields.extend_from_slice(&[FLAGS_FCS_AT_END, 0, 0, 0]);
        let mut r = radiotap(&[PRESENT_TSFT | PRESENT_FLAGS | PRESENT_EXT, 0], &fields);
        r.extend_from_slice(&frame);
        r.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(strip_radiotap(&r), Ok(L3::V4(&[0x45][..])));
        // A header length past the record, a version other than 0.
        let mut bad = radiotap(&[0], &[]);
        bad[2] = 200;
        assert_eq!(strip_radiotap(&bad), Err(truncated()));
        assert_eq!(strip_radiotap(&[1, 0, 8, 0, 0, 0, 0, 0]), Err(truncated()));
    }
}
