//! IPv4 (RFC 791). Options are skipped by the header length; fragments are counted, not
//! reassembled; AH (RFC 4302) in front of TCP is walked.

use super::{mapped_v4, not_tcp, IpHeader, PROTO_AH, PROTO_TCP};
use crate::wire::outcome::{NotDecoded, Skip};
use crate::wire::packet::anomaly;

pub const MIN_HEADER_LEN: usize = 20;
pub const FLAG_MF: u16 = 0x2000;
pub const FRAG_OFFSET_MASK: u16 = 0x1fff;

fn nd(r: NotDecoded) -> Skip {
    Skip::NotDecoded(r)
}

/// `wire_room`: bytes the datagram had on the wire (origlen minus the link header);
/// `max_len`: the largest datagram the link can carry (longer = super-frame).
pub fn parse(b: &[u8], wire_room: usize, max_len: u32) -> Result<IpHeader<'_>, Skip> {
    let first = *b.first().ok_or(nd(NotDecoded::TruncatedIpHeader))?;
    if first >> 4 != 4 {
        return Err(nd(NotDecoded::BadIpVersion));
    }
    if b.len() < MIN_HEADER_LEN {
        return Err(nd(NotDecoded::TruncatedIpHeader));
    }
    let ihl = usize::from(first & 0x0f) * 4;
    if ihl < MIN_HEADER_LEN {
        return Err(nd(NotDecoded::BadIpHeaderLength));
    }
    if b.len() < ihl {
        return Err(nd(NotDecoded::TruncatedIpHeader));
    }
    let mut anomalies = 0;
    let total = u16::from_be_bytes([b[2], b[3]]) as usize;
    let ip_len = if total == 0 && wire_room >= ihl + 20 {
        // TSO/BIG TCP: the stack leaves total length 0 and the wire length is the truth.
        anomalies |= anomaly::SUPERFRAME;
        wire_room
    } else if total < ihl {
        return Err(nd(NotDecoded::BadIpTotalLength));
    } else {
        total
    };
    if ip_len as u64 > u64::from(max_len) {
        anomalies |= anomaly::SUPERFRAME;
    }
    if ip_len > wire_room {
        anomalies |= anomaly::IP_LENGTH_MISMATCH;
    }
    let mut proto = b[9];
    let mut hdr_len = ihl;
    if proto == PROTO_AH {
        // AH length is in 4-byte words minus 2.
        let ah = b.get(ihl..ihl + 2).ok_or(nd(NotDecoded::TruncatedIpExtHeader))?;
        proto = ah[0];
        hdr_len += (usize::from(ah[1]) + 2) * 4;
        if hdr_len > ip_len {
            return Err(nd(NotDecoded::BadIpExtHeader));
        }
        if hdr_len > b.len() {
            return Err(nd(NotDecoded::TruncatedIpExtHeader));
        }
    }
    if proto != PROTO_TCP {
        return Err(not_tcp(proto));
    }
    let frag = u16::from_be_bytes([b[6], b[7]]);
    if frag & FLAG_MF != 0 || frag & FRAG_OFFSET_MASK != 0 {
        return Err(nd(NotDecoded::IpFragment));
    }
    let end = b.len().min(ip_len);
    Ok(IpHeader {
        version: 4,
        src: mapped_v4(&b[12..16]),
        dst: mapped_v4(&b[16..20]),
        id: u16::from_be_bytes([b[4], b[5]]),
        ttl: b[8],
        ip_len: ip_len as u32,
        segment: &b[hdr_len.min(end)..end],
        segment_len: (ip_len - hdr_len) as u32,
        anomalies,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::outcome::NotTcp;

    fn hdr(ihl_words: u8, total: u16, proto: u8, frag: u16) -> Vec<u8> {
        let mut v = vec![0x40 | ihl_words, 0];
        v.extend_from_slice(&total.to_be_bytes());
        v.extend_from_slice(&[0x12, 0x34]);
        v.extend_from_slice(&frag.to_be_bytes());
        v.extend_from_slice(&[64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        v.resize(usize::from(ihl_words) * 4, 1); // options: NOPs
        v
    }

    #[test]
    fn plain_with_options_and_padding() {
        let mut b = hdr(6, 24 + 20, 6, 0);
        b.extend_from_slice(&[7u8; 20]);
        b.extend_from_slice(&[0u8; 6]); // Ethernet padding, not part of the datagram
        let ip = parse(&b, b.len(), 9216).unwrap();
        assert_eq!(ip.ip_len, 44);
        assert_eq!(ip.segment.len(), 20);
        assert_eq!(ip.segment_len, 20);
        assert_eq!(ip.id, 0x1234);
        assert_eq!(ip.ttl, 64);
        assert_eq!(&ip.src[10..], &[0xff, 0xff, 10, 0, 0, 1]);
        assert_eq!(ip.anomalies, 0);
    }

    #[test]
    fn errors_in_order() {
        assert_eq!(parse(&[], 0, 9216), Err(nd(NotDecoded::TruncatedIpHeader)));
        assert_eq!(parse(&[0x65; 20], 20, 9216), Err(nd(NotDecoded::BadIpVersion)));
        assert_eq!(parse(&hdr(5, 40, 6, 0)[..19], 40, 9216), Err(nd(NotDecoded::TruncatedIpHeader)));
        let mut b = hdr(5, 40, 6, 0);
        b[0] = 0x44;
        assert_eq!(parse(&b, 40, 9216), Err(nd(NotDecoded::BadIpHeaderLength)));
        assert_eq!(parse(&hdr(8, 40, 6, 0)[..24], 40, 9216), Err(nd(NotDecoded::TruncatedIpHeader)));
        assert_eq!(parse(&hdr(5, 10, 6, 0), 40, 9216), Err(nd(NotDecoded::BadIpTotalLength)));
    }

    #[test]
    fn fragments_and_other_protocols() {
        assert_eq!(parse(&hdr(5, 40, 6, 0x2000), 40, 9216), Err(nd(NotDecoded::IpFragment)));
        assert_eq!(parse(&hdr(5, 40, 6, 0x00b9), 40, 9216), Err(nd(NotDecoded::IpFragment)));
        assert!(parse(&hdr(5, 40, 6, 0x4000), 40, 9216).is_ok()); // DF is not a fragment
        assert_eq!(parse(&hdr(5, 40, 17, 0), 40, 9216), Err(Skip::NotTcp(NotTcp::Udp)));
        assert_eq!(parse(&hdr(5, 40, 1, 0), 40, 9216), Err(Skip::NotTcp(NotTcp::Icmp)));
        assert_eq!(parse(&hdr(5, 40, 47, 0), 40, 9216), Err(Skip::NotTcp(NotTcp::OtherIpProtocol)));
    }

    #[test]
    fn superframes_and_mismatch() {
        let b = hdr(5, 0, 6, 0);
        let ip = parse(&b, 3000, 9216).unwrap();
        assert_eq!(ip.ip_len, 3000);
        assert_eq!(ip.anomalies, anomaly::SUPERFRAME);
        let b = hdr(5, 30000, 6, 0);
        assert_eq!(parse(&b, 30000, 9216).unwrap().anomalies, anomaly::SUPERFRAME);
        let b = hdr(5, 1500, 6, 0);
        assert_eq!(parse(&b, 60, 9216).unwrap().anomalies, anomaly::IP_LENGTH_MISMATCH);
    }

    #[test]
    fn ah_before_tcp() {
        let mut b = hdr(5, 20 + 24 + 20, 51, 0);
        b.extend_from_slice(&[6, 4, 0, 0]); // AH: next TCP, (4+2)*4 = 24 bytes
        b.extend_from_slice(&[0u8; 20]);
        b.extend_from_slice(&[9u8; 20]);
        let ip = parse(&b, b.len(), 9216).unwrap();
        assert_eq!(ip.segment, &[9u8; 20][..]);
        assert_eq!(ip.segment_len, 20);
    }
}
