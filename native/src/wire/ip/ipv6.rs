//! IPv6 (RFC 8200) and its extension headers: hop-by-hop (with the RFC 2675 jumbo payload
//! option), routing, fragment, destination options, AH. ESP ends the walk (encrypted).

use super::{not_tcp, IpHeader, PROTO_AH, PROTO_TCP};
use crate::wire::outcome::{NotDecoded, Skip};
use crate::wire::packet::anomaly;

pub const HEADER_LEN: usize = 40;
const HOP_BY_HOP: u8 = 0;
const ROUTING: u8 = 43;
const FRAGMENT: u8 = 44;
const DEST_OPTS: u8 = 60;
const OPT_JUMBO: u8 = 0xc2;
/// A longer chain is garbage (or an attack), not a real packet.
const MAX_EXT_HEADERS: usize = 16;

fn nd(r: NotDecoded) -> Skip {
    Skip::NotDecoded(r)
}

fn is_ext(nh: u8) -> bool {
    matches!(nh, HOP_BY_HOP | ROUTING | FRAGMENT | DEST_OPTS | PROTO_AH)
}

/// The jumbo payload length in a hop-by-hop header's options, if present.
fn jumbo_len(opts: &[u8]) -> Option<u32> {
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => i += 1, // Pad1
            kind => {
                let len = usize::from(*opts.get(i + 1)?);
                if kind == OPT_JUMBO && len == 4 {
                    let v = opts.get(i + 2..i + 6)?;
                    return Some(u32::from_be_bytes([v[0], v[1], v[2], v[3]]));
                }
                i += 2 + len;
            }
        }
    }
    None
}

/// See `ipv4::parse` for `wire_room` and `max_len`.
pub fn parse(b: &[u8], wire_room: usize, max_len: u32) -> Result<IpHeader<'_>, Skip> {
    let first = *b.first().ok_or(nd(NotDecoded::TruncatedIpHeader))?;
    if first >> 4 != 6 {
        return Err(nd(NotDecoded::BadIpVersion));
    }
    if b.len() < HEADER_LEN {
        return Err(nd(NotDecoded::TruncatedIpHeader));
    }
    let payload_len = usize::from(u16::from_be_bytes([b[4], b[5]]));
    let mut nh = b[6];
    let mut off = HEADER_LEN;
    let mut jumbo = None;
    let mut walked = 0;
    while is_ext(nh) {
        walked += 1;
        if walked > MAX_EXT_HEADERS {
            return Err(nd(NotDecoded::BadIpExtHeader));
        }
        let h = b.get(off..off + 2).ok_or(nd(NotDecoded::TruncatedIpExtHeader))?;
        let len = match nh {
            FRAGMENT => 8,
            PROTO_AH => (usize::from(h[1]) + 2) * 4,
            _ => (usize::from(h[1]) + 1) * 8,
        };
        if payload_len != 0 && off + len > HEADER_LEN + payload_len {
            return Err(nd(NotDecoded::BadIpExtHeader));
        }
        let ext = b.get(off..off + len).ok_or(nd(NotDecoded::TruncatedIpExtHeader))?;
        if nh == HOP_BY_HOP {
            jumbo = jumbo_len(&ext[2..]);
        }
        if nh == FRAGMENT {
            let fo = u16::from_be_bytes([ext[2], ext[3]]);
            // Offset != 0 or M set: part of a fragmented datagram ("atomic" fragments are whole).
            if fo & 0xfff9 != 0 {
                return Err(if ext[0] == PROTO_TCP || is_ext(ext[0]) {
                    nd(NotDecoded::IpFragment)
                } else {
                    not_tcp(ext[0])
                });
            }
        }
        nh = ext[0];
        off += len;
    }
    if nh != PROTO_TCP {
        return Err(not_tcp(nh));
    }
    let mut anomalies = 0;
    let ip_len = if payload_len != 0 {
        HEADER_LEN + payload_len
    } else if let Some(j) = jumbo {
        HEADER_LEN + j as usize
    } else {
        // Payload length 0 with TCP after it: a GSO/GRO (BIG TCP) super-frame; use the wire length.
        anomalies |= anomaly::SUPERFRAME;
        wire_room.max(off)
    };
    if ip_len as u64 > u64::from(max_len) {
        anomalies |= anomaly::SUPERFRAME;
    }
    if ip_len > wire_room {
        anomalies |= anomaly::IP_LENGTH_MISMATCH;
    }
    let end = b.len().min(ip_len);
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    src.copy_from_slice(&b[8..24]);
    dst.copy_from_slice(&b[24..40]);
    Ok(IpHeader {
        version: 6,
        src,
        dst,
        id: 0,
        ttl: b[7],
        ip_len: ip_len as u32,
        segment: &b[off.min(end)..end],
        segment_len: (ip_len - off) as u32,
        anomalies,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::outcome::NotTcp;

    fn hdr(payload_len: u16, nh: u8) -> Vec<u8> {
        let mut v = vec![0x60, 0, 0, 0];
        v.extend_from_slice(&payload_len.to_be_bytes());
        v.extend_from_slice(&[nh, 55]);
        v.extend_from_slice(&[0x20; 16]);
        v.extend_from_slice(&[0x30; 16]);
        v
    }

    #[test]
    fn plain_tcp() {
        let mut b = hdr(20, 6);
        b.extend_from_slice(&[1u8; 20]);
        let ip = parse(&b, b.len(), 9216).unwrap();
        assert_eq!((ip.version, ip.ttl, ip.ip_len, ip.segment_len), (6, 55, 60, 20));
        assert_eq!(ip.src, [0x20; 16]);
        assert_eq!(ip.segment.len(), 20);
    }

    #[test]
    fn extension_chain() {
        // hop-by-hop (8) -> dest opts (16) -> routing (8) -> AH (12) -> fragment (atomic) -> TCP
        let mut b = hdr(8 + 16 + 8 + 12 + 8 + 20, 0);
        b.extend_from_slice(&[60, 0, 1, 4, 0, 0, 0, 0]);
        b.extend_from_slice(&[43, 1]);
        b.extend_from_slice(&[0u8; 14]);
        b.extend_from_slice(&[51, 0, 0, 0, 0, 0, 0, 0]);
        b.extend_from_slice(&[44, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        b.extend_from_slice(&[6, 0, 0, 0, 0, 0, 0, 1]);
        b.extend_from_slice(&[2u8; 20]);
        let ip = parse(&b, b.len(), 9216).unwrap();
        assert_eq!(ip.segment, &[2u8; 20][..]);
        assert_eq!(ip.segment_len, 20);
    }

    #[test]
    fn fragments_esp_none_udp() {
        let mut b = hdr(8 + 20, 44);
        b.extend_from_slice(&[6, 0, 0, 0x01, 0, 0, 0, 9]); // M set
        b.extend_from_slice(&[0u8; 20]);
        assert_eq!(parse(&b, b.len(), 9216), Err(nd(NotDecoded::IpFragment)));
        let mut b = hdr(8 + 8, 44);
        b.extend_from_slice(&[17, 0, 0x05, 0x00, 0, 0, 0, 9]); // offset 160, UDP
        b.extend_from_slice(&[0u8; 8]);
        assert_eq!(parse(&b, b.len(), 9216), Err(Skip::NotTcp(NotTcp::Udp)));
        assert_eq!(parse(&hdr(0, 59), 40, 9216), Err(Skip::NotTcp(NotTcp::NoNextHeader)));
        assert_eq!(parse(&hdr(8, 50), 48, 9216), Err(Skip::NotTcp(NotTcp::Esp)));
        assert_eq!(parse(&hdr(8, 58), 48, 9216), Err(Skip::NotTcp(NotTcp::Icmpv6)));
    }

    #[test]
    fn truncated_and_bad_chains() {
        assert_eq!(parse(&hdr(20, 6)[..39], 60, 9216), Err(nd(NotDecoded::TruncatedIpHeader)));
        assert_eq!(parse(&hdr(8, 0), 48, 9216), Err(nd(NotDecoded::TruncatedIpExtHeader)));
        let mut b = hdr(8, 0);
        b.extend_from_slice(&[6, 3, 0, 0, 0, 0, 0, 0]); // claims 32 bytes in an 8-byte payload
        assert_eq!(parse(&b, b.len(), 9216), Err(nd(NotDecoded::BadIpExtHeader)));
        let mut b = hdr(2000, 60);
        for _ in 0..20 {
            b.extend_from_slice(&[60, 0, 1, 4, 0, 0, 0, 0]);
        }
        assert_eq!(parse(&b, 2040, 9216), Err(nd(NotDecoded::BadIpExtHeader)));
    }

    #[test]
    fn jumbo_and_gso_superframes() {
        let mut b = hdr(0, 0);
        b.extend_from_slice(&[6, 0, OPT_JUMBO, 4, 0, 1, 0, 8]); // 65544-byte payload
        b.extend_from_slice(&[0u8; 20]);
        let ip = parse(&b, 40 + 65544, 9216).unwrap();
        assert_eq!(ip.ip_len, 40 + 65544);
        assert_eq!(ip.segment_len, 65544 - 8);
        assert_eq!(ip.anomalies, anomaly::SUPERFRAME);
        let mut b = hdr(0, 6);
        b.extend_from_slice(&[0u8; 20]);
        let ip = parse(&b, 70000, 65535).unwrap();
        assert_eq!(ip.ip_len, 70000);
        assert_eq!(ip.anomalies, anomaly::SUPERFRAME);
    }
}
