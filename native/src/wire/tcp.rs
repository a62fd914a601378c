//! TCP header (RFC 9293) and options: MSS (2), window scale (3, RFC 7323), SACK-permitted (4),
//! SACK blocks (5, RFC 2018), timestamps (8, RFC 7323). Malformed options are flagged and the
//! options before them kept; options cut by the snaplen are flagged and the packet kept.

use crate::wire::outcome::{NotDecoded, Skip};
use crate::wire::packet::{anomaly, TcpOptions, MAX_SACK_BLOCKS, TcpPacket};

pub const MIN_HEADER_LEN: usize = 20;
const OPT_EOL: u8 = 0;
const OPT_NOP: u8 = 1;
const OPT_MSS: u8 = 2;
const OPT_WSCALE: u8 = 3;
const OPT_SACK_PERM: u8 = 4;
const OPT_SACK: u8 = 5;
const OPT_TIMESTAMP: u8 = 8;
/// RFC 7323 §2.3: larger shift counts are treated as 14.
pub const MAX_WSCALE: u8 = 14;
/// The 12 bits after the data offset: 3 reserved bits, AE (ex-NS), CWR ... FIN.
const FLAGS_MASK: u16 = 0x0fff;

/// `seg`: captured TCP bytes (trimmed to the datagram); `seg_len`: the length the IP header claims.
pub fn parse(seg: &[u8], seg_len: u32, p: &mut TcpPacket) -> Result<(), Skip> {
    if seg.len() < MIN_HEADER_LEN {
        return Err(Skip::NotDecoded(if (seg.len() as u32) < seg_len {
            NotDecoded::TruncatedTcpHeader
        } else {
            NotDecoded::BadTcpHeaderLength
        }));
    }
    let doff = usize::from(seg[12] >> 4) * 4;
    if doff < MIN_HEADER_LEN || doff as u32 > seg_len {
        return Err(Skip::NotDecoded(NotDecoded::BadTcpHeaderLength));
    }
    p.src_port = u16::from_be_bytes([seg[0], seg[1]]);
    p.dst_port = u16::from_be_bytes([seg[2], seg[3]]);
    p.seq = u32::from_be_bytes([seg[4], seg[5], seg[6], seg[7]]);
    p.ack = u32::from_be_bytes([seg[8], seg[9], seg[10], seg[11]]);
    p.flags = u16::from_be_bytes([seg[12], seg[13]]) & FLAGS_MASK;
    p.window = u16::from_be_bytes([seg[14], seg[15]]);
    p.tcp_hdr_len = doff as u8;
    p.payload_len = seg_len - doff as u32;
    p.payload_captured = seg.len().saturating_sub(doff) as u32;
    if p.payload_captured < p.payload_len {
        p.anomalies |= anomaly::PAYLOAD_TRUNCATED;
    }
    let opt_end = doff.min(seg.len());
    if opt_end < doff {
        p.anomalies |= anomaly::OPTIONS_TRUNCATED;
    }
    p.anomalies |= parse_options(&seg[MIN_HEADER_LEN..opt_end], doff - MIN_HEADER_LEN, &mut p.options);
    Ok(())
}

/// Decode the captured option bytes `b` into `o`; returns anomaly bits. `header_room` is the
/// option space the data offset declares (>= b.len() when the capture cut the options): an
/// option running past it is malformed and ends the walk; one running only past `b` was cut by
/// the snaplen and ends the walk silently (the caller flags OPTIONS_TRUNCATED).
pub fn parse_options(b: &[u8], header_room: usize, o: &mut TcpOptions) -> u32 {
    let mut flags = 0;
    let mut i = 0;
    while i < b.len() {
        let kind = b[i];
        match kind {
            OPT_EOL => break,
            OPT_NOP => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let Some(&len) = b.get(i + 1) else {
            // Kind byte without its length byte.
            return if i + 1 < header_room { flags } else { flags | anomaly::BAD_OPTION };
        };
        let len = usize::from(len);
        if len < 2 || i + len > header_room {
            return flags | anomaly::BAD_OPTION;
        }
        if i + len > b.len() {
            return flags;
        }
        let v = &b[i + 2..i + len];
        match (kind, len) {
            (OPT_MSS, 4) => o.mss = Some(u16::from_be_bytes([v[0], v[1]])),
            (OPT_WSCALE, 3) => {
                o.wscale = Some(v[0]);
                if v[0] > MAX_WSCALE {
                    flags |= anomaly::WSCALE_CLAMPED;
                }
            }
            (OPT_SACK_PERM, 2) => o.sack_permitted = true,
            (OPT_TIMESTAMP, 10) => {
                o.timestamp = Some((
                    u32::from_be_bytes([v[0], v[1], v[2], v[3]]),
                    u32::from_be_bytes([v[4], v[5], v[6], v[7]]),
                ))
            }
            (OPT_SACK, l) if l >= 10 && (l - 2) % 8 == 0 => {
                let n = ((l - 2) / 8).min(MAX_SACK_BLOCKS);
                for (k, blk) in v.chunks_exact(8).take(n).enumerate() {
                    o.sack[k] = (
                        u32::from_be_bytes([blk[0], blk[1], blk[2], blk[3]]),
                        u32::from_be_bytes([blk[4], blk[5], blk[6], blk[7]]),
                    );
                }
                o.sack_count = n as u8;
            }
            (OPT_MSS | OPT_WSCALE | OPT_SACK_PERM | OPT_TIMESTAMP | OPT_SACK, _) => {
                // A known option with the wrong length: skip it by its length, flag it.
                flags |= anomaly::BAD_OPTION;
            }
            _ => {} // Unknown or unused option (MD5, TCP-AO, MPTCP, fast open...): skipped.
        }
        i += len;
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(doff_words: u8, flags: u16, opts: &[u8], payload: usize) -> Vec<u8> {
        let mut v = vec![0x1f, 0x90, 0xc0, 0x01, 0, 0, 0, 100, 0, 0, 1, 0];
        v.extend_from_slice(&((u16::from(doff_words) << 12) | flags).to_be_bytes());
        v.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0]);
        v.extend_from_slice(opts);
        v.resize(usize::from(doff_words) * 4, 0);
        v.extend(std::iter::repeat(0xab).take(payload));
        v
    }

    #[test]
    fn header_fields() {
        let s = seg(5, 0x018, &[], 10);
        let mut p = TcpPacket::default();
        parse(&s, 30, &mut p).unwrap();
        assert_eq!((p.src_port, p.dst_port, p.seq, p.ack), (8080, 49153, 100, 256));
        assert_eq!((p.flags, p.window, p.tcp_hdr_len), (0x018, 0xffff, 20));
        assert_eq!((p.payload_len, p.payload_captured, p.anomalies), (10, 10, 0));
    }

    #[test]
    fn all_flag_bits_kept() {
        let mut p = TcpPacket::default();
        parse(&seg(5, 0xfff, &[], 0), 20, &mut p).unwrap();
        assert_eq!(p.flags, 0xfff);
    }

    #[test]
    fn syn_options() {
        let opts = [2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2, 1, 3, 3, 7];
        let mut p = TcpPacket::default();
        parse(&seg(10, 0x002, &opts, 0), 40, &mut p).unwrap();
        assert_eq!(p.options.mss, Some(1460));
        assert!(p.options.sack_permitted);
        assert_eq!(p.options.timestamp, Some((1, 2)));
        assert_eq!(p.options.wscale, Some(7));
        assert_eq!(p.anomalies, 0);
    }

    #[test]
    fn sack_blocks() {
        let mut opts = vec![1, 1, 5, 26];
        for k in 1..=3u32 {
            opts.extend_from_slice(&(k * 1000).to_be_bytes());
            opts.extend_from_slice(&(k * 1000 + 500).to_be_bytes());
        }
        let mut p = TcpPacket::default();
        parse(&seg(13, 0x010, &opts, 0), 52, &mut p).unwrap();
        assert_eq!(p.options.sack_count, 3);
        assert_eq!(p.options.sack[2], (3000, 3500));
    }

    #[test]
    fn malformed_options_flagged() {
        let mut o = TcpOptions::default();
        // MSS ok, then a timestamp whose length runs past the header.
        assert_eq!(parse_options(&[2, 4, 1, 0, 8, 10, 0, 0], 8, &mut o), anomaly::BAD_OPTION);
        assert_eq!(o.mss, Some(256));
        let mut o = TcpOptions::default();
        assert_eq!(parse_options(&[3, 3, 15, 2, 3, 0, 0, 0], 8, &mut o), anomaly::WSCALE_CLAMPED | anomaly::BAD_OPTION);
        assert_eq!(o.wscale, Some(15));
        let mut o = TcpOptions::default();
        assert_eq!(parse_options(&[0x1d, 0, 2, 4, 0, 1], 6, &mut o), anomaly::BAD_OPTION); // zero length
        let mut o = TcpOptions::default();
        assert_eq!(parse_options(&[0, 2, 4, 5, 0xb4], 5, &mut o), 0); // after EOL: ignored
        assert_eq!(o.mss, None);
        // A timestamp cut by the capture inside a header that has room for it: not malformed.
        let mut o = TcpOptions::default();
        assert_eq!(parse_options(&[2, 4, 5, 0xb4, 8, 10, 0], 16, &mut o), 0);
        assert_eq!((o.mss, o.timestamp), (Some(1460), None));
        assert_eq!(parse_options(&[1, 8], 2, &mut o), anomaly::BAD_OPTION);
        assert_eq!(parse_options(&[1, 8], 12, &mut o), 0);
    }

    #[test]
    fn truncation_and_bad_offsets() {
        let mut p = TcpPacket::default();
        let s = seg(8, 0x002, &[2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0], 0);
        parse(&s[..24], 32, &mut p).unwrap();
        assert_eq!(p.options.mss, Some(1460));
        assert_eq!(p.anomalies, anomaly::OPTIONS_TRUNCATED); // the cut timestamp is not malformed
        let mut p = TcpPacket::default();
        parse(&seg(5, 0x018, &[], 100)[..30], 120, &mut p).unwrap();
        assert_eq!((p.payload_len, p.payload_captured), (100, 10));
        assert_eq!(p.anomalies, anomaly::PAYLOAD_TRUNCATED);
        let s = seg(5, 0, &[], 0);
        assert_eq!(parse(&s[..19], 20, &mut p), Err(Skip::NotDecoded(NotDecoded::TruncatedTcpHeader)));
        assert_eq!(parse(&s[..12], 12, &mut p), Err(Skip::NotDecoded(NotDecoded::BadTcpHeaderLength)));
        let mut short_off = seg(5, 0, &[], 0);
        short_off[12] = 0x40; // data offset 4 words
        assert_eq!(parse(&short_off, 20, &mut p), Err(Skip::NotDecoded(NotDecoded::BadTcpHeaderLength)));
        assert_eq!(parse(&seg(6, 0, &[], 0), 20, &mut p), Err(Skip::NotDecoded(NotDecoded::BadTcpHeaderLength)));
    }
}
