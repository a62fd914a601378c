//! pcapng, hand-built per block type in both byte orders: cases 15-27 of
//! docs/capture-input.md#input-cases and the
//! block types the reader understands (SHB, IDB, EPB, SPB, OPB, ISB) or skips and counts.

mod containers_common;

use _native::containers::error::{Part, ReadError};
use _native::containers::reader::CaptureReader;
use containers_common::build::{block, epb, idb, isb, opb, opt, opt_end, shb, spb, Order, W};
use containers_common::{read_bytes, Outcome};

const ORDERS: [Order; 2] = [Order::Le, Order::Be];

fn head(order: Order) -> Vec<u8> {
    let mut out = shb(order, (1, 0), &[]);
    out.extend(idb(order, 1, 0, &[]));
    out
}

fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

fn tsresol(order: Order, v: u8) -> Vec<u8> {
    cat(&[opt(order, 9, &[v]), opt_end(order)])
}

fn err(o: &Outcome) -> &ReadError {
    o.error.as_ref().expect("expected an error")
}

#[test]
fn epb_with_default_microsecond_resolution_and_options() {
    for order in ORDERS {
        let mut opts = opt(order, 2, &W::new(order).u32(0x0000_0001).out); // epb_flags: inbound
        opts.extend(opt(order, 4, &W::new(order).u64(7).out)); // epb_dropcount
        opts.extend(opt_end(order));
        let bytes = cat(&[head(order), epb(order, 0, 1_500_000_000_123_456, 60, b"hello", &opts)]);
        let mut r = CaptureReader::from_bytes(bytes.clone()).unwrap();
        let rec = r.next_record().unwrap().unwrap();
        assert_eq!(rec.ts_ns, 1_500_000_000_123_456_000);
        assert_eq!((rec.caplen, rec.origlen, rec.data), (5, 60, &b"hello"[..]));
        assert_eq!(rec.offset, 28 + 20);
        assert_eq!(r.record_flags(), Some(1));
        assert!(r.next_record().unwrap().is_none());
        let s = r.stats();
        assert_eq!(s.epb_dropcount, 7);
        assert_eq!(s.bytes_read, bytes.len() as u64);
        assert_eq!((s.sections, s.blocks_by_type.get("SHB"), s.blocks_by_type.get("IDB")), (1, Some(&1), Some(&1)));
    }
}

#[test]
fn idb_options_name_tsresol_tsoffset_fcslen() {
    for order in ORDERS {
        let mut opts = opt(order, 2, b"eth7");
        opts.extend(opt(order, 9, &[3])); // milliseconds
        opts.extend(opt(order, 14, &W::new(order).u64(100).out)); // +100 s
        opts.extend(opt(order, 13, &[4]));
        opts.extend(opt_end(order));
        let bytes = cat(&[shb(order, (1, 0), &[]), idb(order, 105, 262_144, &opts), epb(order, 0, 2_500, 4, b"abcd", &[])]);
        let o = read_bytes(&bytes);
        assert!(o.error.is_none(), "{:?}", o.error);
        assert_eq!(o.records[0].1, 2_500_000_000 + 100_000_000_000);
        assert_eq!((o.records[0].4, o.records[0].7), (105, 262_144));
        let i = &o.stats.unwrap().interfaces[0];
        assert_eq!((i.name.as_deref(), i.tsresol, i.tsoffset, i.fcs_len), (Some("eth7"), 3, 100, Some(4)));
    }
}

#[test]
fn tsresol_base10_base2_and_fine_resolutions() {
    // (if_tsresol, units, expected ns)
    let cases: [(u8, u64, i64); 5] = [
        (0, 7, 7_000_000_000),
        (9, 123, 123),
        (12, 5_000_999, 5_000),          // picoseconds, truncated toward zero
        (0x8a, 1024 * 3 + 512, 3_500_000_000), // 2^-10 s
        (0x9f, 1u64 << 31, 1_000_000_000),  // 2^-31 s (valid: base-2 exponents up to 63)
    ];
    for order in ORDERS {
        for (v, units, want) in cases {
            let bytes = cat(&[shb(order, (1, 0), &[]), idb(order, 1, 0, &tsresol(order, v)), epb(order, 0, units, 1, b"x", &[])]);
            let o = read_bytes(&bytes);
            assert!(o.error.is_none(), "tsresol {v:#x}: {:?}", o.error);
            assert_eq!(o.records[0].1, want, "tsresol {v:#x}");
        }
    }
}

#[test]
fn case23_bad_tsresol_rejected_never_divides_by_zero() {
    for order in ORDERS {
        for v in [0x7f, 20, 0xc0, 0xff] {
            let bytes = cat(&[shb(order, (1, 0), &[]), idb(order, 1, 0, &tsresol(order, v)), epb(order, 0, 1, 1, b"x", &[])]);
            let o = read_bytes(&bytes);
            let e = err(&o);
            assert!(matches!(e, ReadError::BadTsResolution { offset: 44, value } if *value == v), "{v:#x}: {e}");
        }
        for v in [19, 0xbf] {
            let bytes = cat(&[shb(order, (1, 0), &[]), idb(order, 1, 0, &tsresol(order, v)), epb(order, 0, u64::MAX, 1, b"x", &[])]);
            let o = read_bytes(&bytes);
            assert!(o.error.is_none(), "{v:#x} is a valid exponent");
        }
    }
}

#[test]
fn timestamp_beyond_i64_is_flagged_not_wrapped() {
    let order = Order::Le;
    let bytes = cat(&[shb(order, (1, 0), &[]), idb(order, 1, 0, &tsresol(order, 0)), epb(order, 0, u64::MAX, 1, b"x", &[])]);
    let o = read_bytes(&bytes);
    assert!(o.error.is_none());
    assert_eq!((o.records[0].1, o.records[0].2), (i64::MAX, false));
    assert_eq!(o.stats.unwrap().ts_invalid, 1);
}

#[test]
fn case26_spb_caplen_is_min_of_len_and_snaplen() {
    for order in ORDERS {
        let bytes = cat(&[
            shb(order, (1, 0), &[]),
            idb(order, 1, 6, &[]),
            spb(order, 10, b"abcdef"),
            spb(order, 3, b"xyz"),
        ]);
        let o = read_bytes(&bytes);
        assert!(o.error.is_none(), "{:?}", o.error);
        assert_eq!((o.records[0].5, o.records[0].6, &o.records[0].9[..]), (6, 10, &b"abcdef"[..]));
        assert_eq!((o.records[1].5, o.records[1].6, &o.records[1].9[..]), (3, 3, &b"xyz"[..]));
        assert!(!o.records[0].2, "an SPB has no timestamp");
        // Data shorter than min(len, snaplen) does not fit the block: corrupt, not a short packet.
        let bad = cat(&[shb(order, (1, 0), &[]), idb(order, 1, 0, &[]), spb(order, 100, b"abcd")]);
        assert_eq!(err(&read_bytes(&bad)).kind(), "corrupt");
    }
}

#[test]
fn obsolete_packet_block_with_drops_count() {
    for order in ORDERS {
        let bytes = cat(&[head(order), opb(order, 0, 3, 1_000_000, 5, b"abc", &[]), opb(order, 0, 0xffff, 2_000_000, 3, b"d", &[])]);
        let o = read_bytes(&bytes);
        assert!(o.error.is_none(), "{:?}", o.error);
        assert_eq!(o.records.iter().map(|r| r.1).collect::<Vec<_>>(), [1_000_000_000, 2_000_000_000]);
        assert_eq!(o.stats.unwrap().epb_dropcount, 3, "0xffff means unknown");
    }
}

#[test]
fn isb_counters_keep_the_last_per_interface_and_sum() {
    for order in ORDERS {
        let stats = |iface: u32, ifdrop: u64, osdrop: u64| {
            let mut o = opt(order, 4, &W::new(order).u64(ifdrop).out);
            o.extend(opt(order, 7, &W::new(order).u64(osdrop).out));
            o.extend(opt_end(order));
            isb(order, iface, 0, &o)
        };
        let bytes = cat(&[
            head(order),
            idb(order, 1, 0, &[]),
            stats(0, 5, 1),
            stats(1, 2, 0),
            stats(0, 9, 4), // cumulative: replaces the 5 and 1
        ]);
        let o = read_bytes(&bytes);
        assert!(o.error.is_none(), "{:?}", o.error);
        let s = o.stats.unwrap();
        assert_eq!((s.if_drop, s.os_drop), (11, 4));
        assert_eq!(s.blocks_by_type.get("ISB"), Some(&3));
    }
}

#[test]
fn case18_27_other_blocks_skipped_and_counted_by_type() {
    for order in ORDERS {
        let bytes = cat(&[
            head(order),
            block(order, 4, &[0; 8]),          // NRB
            block(order, 0x0a, &[1; 20]),      // DSB
            block(order, 0x0bad, &[2; 8]),     // CB
            block(order, 0x4000_0bad, &[2; 8]), // CB, do not copy
            block(order, 0x0b, &[]),           // unknown
            block(order, 0x0b, &[3; 4]),
            epb(order, 0, 1, 1, b"x", &[]),
        ]);
        let o = read_bytes(&bytes);
        assert!(o.error.is_none(), "{:?}", o.error);
        assert_eq!(o.records.len(), 1);
        let b = o.stats.unwrap().blocks_by_type;
        assert_eq!((b["NRB"], b["DSB"], b["CB"], b["unknown:0x0000000B"]), (1, 1, 2, 2));
    }
}

#[test]
fn case15_bad_block_lengths_are_fatal_with_the_offset() {
    for order in ORDERS {
        for len in [0u32, 4, 8, 13, 30] {
            let mut b = W::new(order);
            b.u32(0x0b).u32(len).bytes(&[0; 40]);
            let bytes = cat(&[head(order), b.out]);
            let o = read_bytes(&bytes);
            let e = err(&o);
            assert!(matches!(e, ReadError::BadBlockLength { offset: 48, length, .. } if *length == len), "{e}");
        }
        // An EPB shorter than its fixed part.
        let mut b = W::new(order);
        b.u32(6).u32(28).bytes(&[0; 16]).u32(28);
        let e = read_bytes(&cat(&[head(order), b.out])).error.unwrap();
        assert_eq!(e.kind(), "bad_block_length");
    }
}

#[test]
fn case16_header_trailer_mismatch_reports_the_offset() {
    for order in ORDERS {
        for btype in [6u32, 0x0b] {
            let mut blk = if btype == 6 { epb(order, 0, 1, 1, b"x", &[]) } else { block(order, btype, &[0; 8]) };
            let n = blk.len();
            blk[n - 4..].copy_from_slice(&W::new(order).u32(999).out);
            let o = read_bytes(&cat(&[head(order), epb(order, 0, 1, 1, b"y", &[]), blk]));
            assert_eq!(o.records.len(), 1);
            let e = err(&o);
            assert!(matches!(e, ReadError::BlockLengthMismatch { offset: 84, trailer: 999, .. }), "{e}");
        }
    }
}

#[test]
fn case17_huge_block_length_capped_before_allocating() {
    for order in ORDERS {
        let mut b = W::new(order);
        b.u32(6).u32(0x7fff_fff0).bytes(&[0; 64]);
        let e = read_bytes(&cat(&[head(order), b.out])).error.unwrap();
        assert!(matches!(e, ReadError::RecordTooLarge { offset: 48, length: 0x7fff_fff0, limit: 16_777_216 }), "{e}");
    }
}

#[test]
fn case19_20_packet_without_its_interface() {
    for order in ORDERS {
        let o = read_bytes(&cat(&[shb(order, (1, 0), &[]), epb(order, 0, 1, 1, b"x", &[])]));
        let e = err(&o);
        assert!(matches!(e, ReadError::UnknownInterface { offset: 28, interface: 0, interfaces: 0 }), "{e}");
        let o = read_bytes(&cat(&[shb(order, (1, 0), &[]), spb(order, 1, b"x")]));
        assert_eq!(err(&o).kind(), "unknown_interface");
        let o = read_bytes(&cat(&[head(order), epb(order, 0, 1, 1, b"x", &[]), epb(order, 5, 1, 1, b"x", &[])]));
        assert_eq!(o.records.len(), 1);
        assert!(matches!(err(&o), ReadError::UnknownInterface { interface: 5, interfaces: 1, .. }));
        let o = read_bytes(&cat(&[head(order), isb(order, 2, 0, &[])]));
        assert_eq!(err(&o).kind(), "unknown_interface");
    }
}

#[test]
fn case21_interfaces_with_different_link_types_and_resolutions() {
    let order = Order::Le;
    let bytes = cat(&[
        shb(order, (1, 0), &[]),
        idb(order, 1, 0, &tsresol(order, 9)),
        idb(order, 113, 0, &[]),
        epb(order, 1, 5, 1, b"a", &[]),
        epb(order, 0, 5, 1, b"b", &[]),
    ]);
    let o = read_bytes(&bytes);
    let got: Vec<_> = o.records.iter().map(|r| (r.3, r.4, r.1)).collect();
    assert_eq!(got, [(1, 113, 5_000), (0, 1, 5)]);
}

#[test]
fn case22_sections_in_different_byte_orders_reset_interfaces() {
    let bytes = cat(&[
        head(Order::Le),
        idb(Order::Le, 113, 0, &[]),
        epb(Order::Le, 1, 1, 1, b"a", &[]),
        shb(Order::Be, (1, 0), &[]),
        idb(Order::Be, 228, 0, &[]),
        epb(Order::Be, 0, 2, 1, b"b", &[]),
    ]);
    let o = read_bytes(&bytes);
    assert!(o.error.is_none(), "{:?}", o.error);
    let got: Vec<_> = o.records.iter().map(|r| (r.3, r.4, r.1)).collect();
    assert_eq!(got, [(1, 113, 1_000), (0, 228, 2_000)]);
    let s = o.stats.unwrap();
    assert_eq!(s.sections, 2);
    assert_eq!(s.interfaces.iter().map(|i| (i.section, i.id)).collect::<Vec<_>>(), [(0, 0), (0, 1), (1, 0)]);
    // Interface 1 belonged to the first section only.
    let bytes = cat(&[head(Order::Le), idb(Order::Le, 1, 0, &[]), head(Order::Be), epb(Order::Be, 1, 1, 1, b"a", &[])]);
    assert!(matches!(read_bytes(&bytes).error, Some(ReadError::UnknownInterface { interface: 1, interfaces: 1, .. })));
}

#[test]
fn case24_option_beyond_block_end_is_reported() {
    for order in ORDERS {
        let long = W::new(order).u16(2).u16(200).bytes(b"eth0").out.clone();
        let o = read_bytes(&cat(&[shb(order, (1, 0), &[]), idb(order, 1, 0, &long)]));
        assert!(matches!(err(&o), ReadError::BadOption { offset: 44, code: 2, length: 200 }), "{}", err(&o));
        let o = read_bytes(&cat(&[shb(order, (1, 0), &long)]));
        assert!(matches!(err(&o), ReadError::BadOption { offset: 24, .. }), "{}", err(&o));
        let o = read_bytes(&cat(&[head(order), epb(order, 0, 1, 1, b"x", &long)]));
        assert!(matches!(err(&o), ReadError::BadOption { offset: 80, .. }), "{}", err(&o));
        // A fixed-size option with the wrong size (epb_dropcount of 4 bytes).
        let o = read_bytes(&cat(&[head(order), epb(order, 0, 1, 1, b"x", &opt(order, 4, &[0; 4]))]));
        assert!(matches!(err(&o), ReadError::BadOption { code: 4, length: 4, .. }), "{}", err(&o));
    }
}

#[test]
fn case25_epb_caplen_beyond_block_body() {
    for order in ORDERS {
        let mut blk = epb(order, 0, 1, 8, b"abcd", &[]);
        blk[20..24].copy_from_slice(&W::new(order).u32(64).out);
        let o = read_bytes(&cat(&[head(order), blk]));
        let e = err(&o);
        assert_eq!((e.kind(), e.offset()), ("corrupt", 48), "{e}");
        let mut blk = epb(order, 0, 1, 8, b"abcd", &[]);
        blk[20..24].copy_from_slice(&W::new(order).u32(0x7fff_ffff).out);
        assert_eq!(read_bytes(&cat(&[head(order), blk])).error.unwrap().kind(), "record_too_large");
    }
}

#[test]
fn shb_versions_and_byte_order_magic() {
    for order in ORDERS {
        for (v, msg) in [((0, 1), "unsupported pcapng savefile version 0.1"), ((1, 1), "unsupported pcapng savefile version 1.1"), ((2, 0), "unsupported pcapng savefile version 2.0")] {
            let e = CaptureReader::from_bytes(shb(order, v, &[])).err().unwrap();
            assert_eq!(e.to_string(), msg);
            assert!(e.rejected());
            // The same in a later section: damage after a start, every earlier packet first.
            let o = read_bytes(&cat(&[head(order), epb(order, 0, 1, 1, b"x", &[]), shb(order, v, &[])]));
            assert_eq!(o.records.len(), 1);
            assert_eq!(err(&o).kind(), "unsupported_version");
            assert!(!err(&o).rejected());
        }
        let mut bad = shb(order, (1, 0), &[]);
        bad[8..12].copy_from_slice(b"\x01\x02\x03\x04");
        assert_eq!(CaptureReader::from_bytes(bad).err().unwrap().kind(), "corrupt");
    }
}

#[test]
fn truncated_blocks_give_whole_packets_then_truncated() {
    for order in ORDERS {
        let whole = cat(&[head(order), epb(order, 0, 1, 1, b"x", &[])]);
        let next = epb(order, 0, 2, 2, b"yz", &[]);
        for (keep, part) in [(5, Part::BlockHeader), (20, Part::BlockBody)] {
            let o = read_bytes(&cat(&[whole.clone(), next[..keep].to_vec()]));
            assert_eq!(o.records.len(), 1);
            let e = err(&o);
            assert!(matches!(e, ReadError::Truncated { offset, part: p, .. } if *offset == whole.len() as u64 && *p == part), "{e}");
            assert_eq!(o.trailing_truncation, Some(whole.len() as u64));
        }
        // A skipped block cut short is truncation too.
        let blk = block(order, 0x0a, &[0; 40]);
        let o = read_bytes(&cat(&[whole.clone(), blk[..30].to_vec()]));
        assert!(matches!(err(&o), ReadError::Truncated { part: Part::BlockBody, .. }));
        // A first SHB cut short means nothing could be read: the file is refused.
        let e = CaptureReader::from_bytes(shb(order, (1, 0), &[])[..20].to_vec()).err().unwrap();
        assert!(e.rejected() && e.is_truncation());
    }
}

#[test]
fn empty_sections_end_cleanly() {
    let o = read_bytes(&cat(&[shb(Order::Le, (1, 0), &[]), shb(Order::Be, (1, 0), &[])]));
    assert!(o.error.is_none() && o.records.is_empty());
    assert_eq!(o.stats.unwrap().sections, 2);
}
