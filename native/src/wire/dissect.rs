//! Record -> exactly one of: a TCP packet, not TCP (by reason), not decoded (by reason).
//! Link (link/) -> IP (ip/) -> TCP (tcp.rs); every layer is bounds-checked, so no byte
//! sequence panics, and nothing here allocates.

use crate::containers::record::Record;
use crate::wire::ip::{self, IpHeader};
use crate::wire::link::{self, L3};
use crate::wire::outcome::{Dissection, Outcome, Skip};
use crate::wire::packet::{anomaly, TcpOptions, TcpPacket};
use crate::wire::tcp;
use crate::wire::tunnel;

/// Dissect one record. Container-level anomalies (timestamps, caplen) are copied into the packet.
pub fn dissect(rec: &Record<'_>) -> Dissection {
    let mut p = TcpPacket::default();
    match dissect_into(rec, &mut p) {
        Outcome::Tcp => Dissection::Tcp(p),
        Outcome::NotTcp(r) => Dissection::NotTcp(r),
        Outcome::NotDecoded(r) => Dissection::NotDecoded(r),
    }
}

/// `dissect` writing into a reused packet (the streaming loop's form: no packet copies). `p` is
/// fully overwritten when the outcome is `Tcp` and unspecified otherwise.
#[inline]
pub fn dissect_into(rec: &Record<'_>, p: &mut TcpPacket) -> Outcome {
    match dissect_inner(rec, p) {
        Ok(()) => Outcome::Tcp,
        Err(Skip::NotTcp(r)) => Outcome::NotTcp(r),
        Err(Skip::NotDecoded(r)) => Outcome::NotDecoded(r),
    }
}

fn dissect_inner(rec: &Record<'_>, p: &mut TcpPacket) -> Result<(), Skip> {
    let mut l3 = link::strip(rec.linktype, rec.data)?;
    let mut limit = link::max_ip_len(rec.linktype);
    // A tunnel's packet, on its own (Ethernet-sized) link; a tunnel inside a tunnel (GRE in
    // Geneve) is opened too, up to MAX_TUNNEL_DEPTH.
    for _ in 0..tunnel::MAX_TUNNEL_DEPTH {
        let Some(opened) = tunnel::inner(l3) else { break };
        l3 = opened;
        limit = link::max_ip_len(link::linktype::ETHERNET);
    }
    // Bytes the IP datagram had on the wire, per the record's original length (the inner bytes
    // run to the record's end, so the same count holds inside a tunnel).
    let link_hdr = rec.data.len() - l3.payload().len();
    let wire_room = (rec.origlen.max(rec.caplen) as usize).saturating_sub(link_hdr);
    let ip: IpHeader<'_> = match l3 {
        L3::V4(b) => ip::ipv4::parse(b, wire_room, limit)?,
        L3::V6(b) => ip::ipv6::parse(b, wire_room, limit)?,
    };
    // Field by field rather than a whole new packet: the TCP fields are all written by
    // `tcp::parse` below, only the options need clearing.
    p.frame = rec.frame;
    p.ts_ns = rec.ts_ns;
    p.interface = rec.interface;
    p.linktype = rec.linktype;
    p.caplen = rec.caplen;
    p.origlen = rec.origlen;
    p.ip_version = ip.version;
    p.src = ip.src;
    p.dst = ip.dst;
    p.ip_id = ip.id;
    p.ttl = ip.ttl;
    p.ip_len = ip.ip_len;
    p.anomalies = ip.anomalies;
    p.options = TcpOptions::default();
    if !rec.ts_valid {
        p.anomalies |= anomaly::TS_INVALID;
    }
    if rec.caplen > rec.origlen {
        p.anomalies |= anomaly::CAPLEN_GT_LEN;
    }
    if rec.snaplen != 0 && rec.caplen > rec.snaplen {
        p.anomalies |= anomaly::CAPLEN_GT_SNAPLEN;
    }
    tcp::parse(ip.segment, ip.segment_len, p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::link::linktype;

    fn record(linktype: u32, data: &[u8], origlen: u32) -> Record<'_> {
        Record {
            frame: 7,
            ts_ns: 1_500_000_000_123_456_789,
            ts_valid: true,
            interface: 0,
            linktype,
            caplen: data.len() as u32,
            origlen,
            snaplen: 0,
            offset: 24,
            data,
        }
    }

    fn eth_ipv4_tcp(payload: usize) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x08, 0x00]);
        let total = (40 + payload) as u16;
        f.extend_from_slice(&[0x45, 0, (total >> 8) as u8, total as u8, 0, 9, 0x40, 0, 64, 6, 0, 0]);
        f.extend_from_slice(&[192, 0, 2, 1, 198, 51, 100, 7]);
        f.extend_from_slice(&[0x04, 0xd2, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 2, 0x50, 0x18, 0x20, 0x00, 0, 0, 0, 0]);
        f.extend(std::iter::repeat(0x61).take(payload));
        f
    }

    #[test]
    fn whole_frame_to_packet() {
        let f = eth_ipv4_tcp(100);
        let Dissection::Tcp(p) = dissect(&record(linktype::ETHERNET, &f, f.len() as u32)) else { panic!() };
        assert_eq!((p.frame, p.ts_ns, p.ip_version, p.ttl, p.ip_id), (7, 1_500_000_000_123_456_789, 4, 64, 9));
        assert_eq!(&p.src[12..], &[192, 0, 2, 1]);
        assert_eq!((p.src_port, p.dst_port, p.seq, p.ack, p.flags, p.window), (1234, 80, 1, 2, 0x18, 0x2000));
        assert_eq!((p.payload_len, p.payload_captured, p.ip_len, p.anomalies), (100, 100, 140, 0));
    }

    #[test]
    fn record_anomalies_copied() {
        let f = eth_ipv4_tcp(0);
        let mut r = record(linktype::ETHERNET, &f, 10);
        r.ts_valid = false;
        r.snaplen = 40;
        let Dissection::Tcp(p) = dissect(&r) else { panic!() };
        let want = anomaly::TS_INVALID | anomaly::CAPLEN_GT_LEN | anomaly::CAPLEN_GT_SNAPLEN;
        assert_eq!(p.anomalies & want, want);
    }

    #[test]
    fn snaplen_cut_payload_is_kept() {
        let f = eth_ipv4_tcp(1000);
        let Dissection::Tcp(p) = dissect(&record(linktype::ETHERNET, &f[..60], f.len() as u32)) else { panic!() };
        assert_eq!((p.payload_len, p.payload_captured), (1000, 6));
        assert_eq!(p.anomalies, anomaly::PAYLOAD_TRUNCATED);
    }

    /// xorshift64*: deterministic noise without a dependency.
    fn noise(state: &mut u64) -> u64 {
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    #[test]
    fn never_panics_on_random_or_mutated_bytes() {
        let linktypes = [0, 1, 11, 12, 14, 101, 105, 108, 113, 123, 127, 228, 229, 239, 276, 999];
        let valid = eth_ipv4_tcp(40);
        let mut s = 0x5eed_u64;
        let mut counts = [0usize; 3];
        for i in 0..60_000 {
            let lt = linktypes[i % linktypes.len()];
            let mut buf: Vec<u8> = if i % 2 == 0 {
                let n = (noise(&mut s) % 160) as usize;
                (0..n).map(|_| noise(&mut s) as u8).collect()
            } else {
                valid.clone()
            };
            // Flip a few bytes and cut at a random length.
            for _ in 0..(noise(&mut s) % 4) {
                if !buf.is_empty() {
                    let at = (noise(&mut s) as usize) % buf.len();
                    buf[at] = noise(&mut s) as u8;
                }
            }
            let cut = if buf.is_empty() { 0 } else { (noise(&mut s) as usize) % (buf.len() + 1) };
            let origlen = noise(&mut s) as u32 % 70_000;
            match dissect(&record(lt, &buf[..cut], origlen)) {
                Dissection::Tcp(p) => {
                    counts[0] += 1;
                    assert!(p.payload_captured <= p.payload_len || p.anomalies & anomaly::SUPERFRAME != 0);
                }
                Dissection::NotTcp(_) => counts[1] += 1,
                Dissection::NotDecoded(_) => counts[2] += 1,
            }
        }
        // The mutated valid frames reach every outcome.
        assert!(counts.iter().all(|&c| c > 100), "{counts:?}");
    }
}
