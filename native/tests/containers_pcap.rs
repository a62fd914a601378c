//! Legacy pcap, hand-built in both byte orders: cases 1-14 of docs/capture-input.md#input-cases.

mod containers_common;

use _native::containers::error::{Part, ReadError};
use _native::containers::reader::CaptureReader;
use containers_common::build::{pcap_header, pcap_record, Order};
use containers_common::read_bytes;

const ORDERS: [Order; 2] = [Order::Le, Order::Be];

fn file(order: Order, ns: bool, snaplen: u32, records: &[Vec<u8>]) -> Vec<u8> {
    let mut out = pcap_header(order, ns, (2, 4), snaplen, 1);
    for r in records {
        out.extend_from_slice(r);
    }
    out
}

#[test]
fn case01_shorter_than_the_file_header() {
    for len in [0, 1, 4, 10, 23] {
        let bytes = &pcap_header(Order::Le, false, (2, 4), 65535, 1)[..len];
        let err = CaptureReader::from_bytes(bytes.to_vec()).err().expect("accepted");
        assert!(matches!(err, ReadError::Truncated { offset: 0, part: Part::FileHeader, .. }), "{err}");
        assert!(err.rejected());
        assert!(err.to_string().starts_with("truncated file header at byte 0"), "{err}");
    }
}

#[test]
fn case02_unknown_magic_shows_the_four_bytes() {
    let mut bytes = pcap_header(Order::Le, false, (2, 4), 65535, 1);
    bytes[..4].copy_from_slice(b"GIF8");
    let err = CaptureReader::from_bytes(bytes).err().expect("accepted");
    assert_eq!(err.kind(), "not_a_capture");
    assert!(err.rejected());
    assert_eq!(err.to_string(), "not a pcap/pcapng file: magic 47 49 46 38");
}

#[test]
fn case03_04_both_byte_orders_and_resolutions_give_integer_ns() {
    for order in ORDERS {
        for ns in [false, true] {
            let frac = if ns { 999_999_999 } else { 999_999 };
            let bytes = file(order, ns, 0, &[pcap_record(order, 1_600_000_000, frac, 4, 4, b"abcd")]);
            let o = read_bytes(&bytes);
            assert!(o.error.is_none());
            let want = 1_600_000_000_i64 * 1_000_000_000 + if ns { 999_999_999 } else { 999_999_000 };
            assert_eq!(o.records[0].1, want, "{order:?} ns={ns}");
            assert!(o.records[0].2);
            assert_eq!(o.records[0].9, b"abcd");
        }
    }
}

#[test]
fn case05_fraction_out_of_range_is_kept_and_flagged() {
    for order in ORDERS {
        for (ns, frac) in [(true, 1_000_000_000u32), (false, 1_000_000u32), (false, u32::MAX)] {
            let bytes = file(order, ns, 0, &[pcap_record(order, 10, frac, 2, 2, b"hi")]);
            let o = read_bytes(&bytes);
            assert!(o.error.is_none());
            let r = &o.records[0];
            assert!(!r.2, "ts_valid must be false for fraction {frac}");
            // Kept as read: seconds plus the fraction in its unit, not clamped or dropped.
            assert_eq!(r.1, 10_000_000_000 + frac as i64 * if ns { 1 } else { 1000 });
            assert_eq!(o.stats.unwrap().ts_invalid, 1);
        }
    }
}

#[test]
fn case06_other_versions_rejected_with_libpcaps_message() {
    for order in ORDERS {
        for (v, msg) in [
            ((1, 4), "unsupported pcap savefile version 1.4"),
            ((3, 0), "unsupported pcap savefile version 3.0"),
            ((2, 5), "unsupported pcap savefile version 2.5"),
            ((543, 1), "unsupported pcap savefile version 543.1"),
        ] {
            let bytes = pcap_header(order, false, v, 65535, 1);
            let err = CaptureReader::from_bytes(bytes).err().expect("accepted");
            assert_eq!(err.to_string(), msg);
            assert!(err.rejected());
        }
    }
}

#[test]
fn case07_linktype_reserved_bits_rejected_fcs_bits_understood() {
    for order in ORDERS {
        let err = CaptureReader::from_bytes(pcap_header(order, false, (2, 4), 65535, 0x0030_0001)).err().unwrap();
        assert_eq!(err.to_string(), "savefile linktype reserved field not zero (0x00300000)");
        assert_eq!(err.kind(), "linktype_reserved");
        // FCS present (bit 26) with 2 16-bit words: linktype 1 with a 4-byte FCS.
        let mut bytes = pcap_header(order, false, (2, 4), 65535, 0x2400_0001);
        bytes.extend(pcap_record(order, 1, 0, 1, 1, b"x"));
        let mut r = CaptureReader::from_bytes(bytes).unwrap();
        assert_eq!(r.next_record().unwrap().unwrap().linktype, 1);
        assert_eq!(r.stats().interfaces[0].fcs_len, Some(4));
    }
}

#[test]
fn case08_snaplen_zero_means_no_limit() {
    let big = vec![7u8; 70_000];
    let bytes = file(Order::Le, false, 0, &[pcap_record(Order::Le, 1, 0, big.len() as u32, big.len() as u32, &big)]);
    let o = read_bytes(&bytes);
    assert!(o.error.is_none());
    assert_eq!(o.records[0].7, 0);
    assert_eq!(o.stats.unwrap().caplen_gt_snaplen, 0);
}

#[test]
fn case09_10_partial_record_at_end_gives_every_whole_record_then_truncated() {
    for order in ORDERS {
        let whole = pcap_record(order, 1, 0, 4, 4, b"abcd");
        let next = pcap_record(order, 2, 0, 4, 4, b"efgh");
        for (keep, part) in [(10, Part::RecordHeader), (18, Part::RecordData)] {
            let bytes = file(order, false, 65535, &[whole.clone(), whole.clone(), next[..keep].to_vec()]);
            let o = read_bytes(&bytes);
            assert_eq!(o.records.len(), 2);
            let err = o.error.expect("a partial record must not end cleanly");
            let at = 24 + 2 * whole.len() as u64;
            assert!(matches!(err, ReadError::Truncated { offset, part: p, .. } if offset == at && p == part), "{err}");
            assert_eq!(o.trailing_truncation, Some(at));
            assert!(!err.rejected());
            assert_eq!(o.stats.unwrap().bytes_read, bytes.len() as u64, "every byte read");
        }
    }
}

#[test]
fn case11_12_caplen_above_len_or_snaplen_kept_and_counted() {
    let bytes = file(
        Order::Le,
        false,
        8,
        &[pcap_record(Order::Le, 1, 0, 10, 6, &[1; 10]), pcap_record(Order::Le, 1, 0, 4, 100, &[2; 4])],
    );
    let o = read_bytes(&bytes);
    assert!(o.error.is_none());
    assert_eq!(o.records.len(), 2);
    assert_eq!((o.records[0].5, o.records[0].6), (10, 6));
    let s = o.stats.unwrap();
    assert_eq!((s.caplen_gt_len, s.caplen_gt_snaplen), (1, 1));
}

#[test]
fn case13_huge_caplen_refused_before_allocating() {
    for order in ORDERS {
        let ok = pcap_record(order, 1, 0, 1, 1, b"x");
        let mut huge = pcap_record(order, 2, 0, 0x7fff_ffff, 0x7fff_ffff, &[]);
        huge.extend_from_slice(&[0; 64]);
        let o = read_bytes(&file(order, false, 0, &[ok, huge]));
        assert_eq!(o.records.len(), 1);
        let err = o.error.expect("huge caplen accepted");
        assert!(
            matches!(err, ReadError::RecordTooLarge { offset: 41, length: 0x7fff_ffff, limit: 262_144 }),
            "{err}"
        );
    }
    // The cap itself is allowed.
    let max = vec![0u8; 262_144];
    let o = read_bytes(&file(Order::Le, false, 0, &[pcap_record(Order::Le, 1, 0, 262_144, 262_144, &max)]));
    assert!(o.error.is_none());
    assert_eq!(o.records[0].5, 262_144);
}

#[test]
fn case14_zero_length_record_is_a_packet_with_no_data() {
    let o = read_bytes(&file(Order::Be, true, 65535, &[pcap_record(Order::Be, 5, 6, 0, 0, &[])]));
    assert!(o.error.is_none());
    assert_eq!(o.records.len(), 1);
    assert_eq!((o.records[0].5, o.records[0].9.len()), (0, 0));
    assert_eq!(o.records[0].8, 24, "offset of the record header");
}

#[test]
fn header_only_file_ends_cleanly_with_one_interface() {
    let o = read_bytes(&pcap_header(Order::Le, false, (2, 4), 65535, 113));
    assert!(o.error.is_none() && o.records.is_empty());
    let s = o.stats.unwrap();
    assert_eq!((s.interfaces.len(), s.interfaces[0].linktype, s.sections), (1, 113, 0));
    assert_eq!(s.trailing_truncation, None);
}

#[test]
fn older_versions_read_with_their_length_order_as_libpcap_does() {
    // Before 2.3 (and in DG/UX's 543.0) a record header held the original length before the
    // captured one; 2.3 files come in either order, the captured length never above the original.
    for order in ORDERS {
        for (v, third, fourth, want) in [
            ((2, 1), 60, 4, (4, 60)),
            ((2, 0), 4, 4, (4, 4)),
            ((543, 0), 60, 4, (4, 60)),
            ((2, 3), 60, 4, (4, 60)),
            ((2, 3), 4, 60, (4, 60)),
            ((2, 4), 4, 60, (4, 60)),
        ] {
            let mut bytes = pcap_header(order, false, v, 65535, 1);
            bytes.extend(pcap_record(order, 1, 0, third, fourth, b"abcd"));
            let o = read_bytes(&bytes);
            assert!(o.error.is_none(), "{v:?}: {:?}", o.error);
            assert_eq!((o.records[0].5, o.records[0].6), want, "{v:?} {order:?}");
            assert_eq!(o.records[0].9, b"abcd");
        }
    }
}
