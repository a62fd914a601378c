//! gzip damage: every whole record before the damaged part comes out first, then one typed
//! error; the outcome does not depend on read sizes.

mod containers_common;

use std::io::{Cursor, Write};

use _native::containers::reader::CaptureReader;
use containers_common::build::{pcap_file, Order, Pkt};
use containers_common::{read_bytes, read_reader, Trickle};
use flate2::write::GzEncoder;

/// 400 records of 1000 bytes (~406 KB) so the damage is far past the first reads.
fn big_pcap() -> Vec<u8> {
    let pkts: Vec<Pkt> = (0..400u32)
        .map(|i| Pkt { sec: i, nsec: 0, origlen: 1000, data: (0..1000u32).map(|b| (b * 7 + i) as u8).collect() })
        .collect();
    pcap_file(Order::Le, true, &pkts)
}

fn gzip(b: &[u8], level: u32) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), flate2::Compression::new(level));
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

#[test]
fn corruption_inside_the_deflate_data_keeps_records_before_it() {
    let plain = big_pcap();
    // Level 0 = stored blocks: the bytes before the damage inflate unchanged.
    let mut gz = gzip(&plain, 0);
    // Walk the stored blocks (header byte, LEN, NLEN, data) from the end of the 10-byte gzip
    // header to one past the middle, and give it the reserved block type 11.
    let mut hdr = 10;
    while hdr < gz.len() / 2 {
        let len = u16::from_le_bytes([gz[hdr + 1], gz[hdr + 2]]) as usize;
        hdr += 5 + len;
    }
    gz[hdr] = 0x06;
    let whole = read_bytes(&gz);
    let err = whole.error.as_ref().expect("damage must be reported");
    assert_eq!(err.kind(), "corrupt", "{err}");
    // Every record wholly inside the bytes inflated before the damage came out.
    let good = err.offset() as usize;
    let expect = (good - 24) / 1016;
    assert_eq!(whole.records.len(), expect, "damage at decompressed byte {good}");
    assert!(expect > 100);
    for chunk in [1, 5, 4096] {
        let t = Trickle { inner: Cursor::new(gz.clone()), chunk };
        let o = read_reader(CaptureReader::from_reader(Box::new(t)));
        assert_eq!(o.records, whole.records, "read {chunk} bytes at a time");
        assert_eq!(o.error.map(|e| (e.kind(), e.offset())), Some((err.kind(), err.offset())));
    }
}

#[test]
fn crc_mismatch_and_trailing_garbage_are_corrupt_after_every_record() {
    let plain = big_pcap();
    let mut gz = gzip(&plain, 6);
    let n = gz.len();
    gz[n - 8] ^= 0xff; // CRC32 in the trailer
    let o = read_bytes(&gz);
    assert_eq!(o.records.len(), 400);
    assert_eq!(o.error.unwrap().kind(), "corrupt");
    let mut gz = gzip(&plain, 6);
    gz.extend_from_slice(b"garbage!");
    let o = read_bytes(&gz);
    assert_eq!(o.records.len(), 400);
    assert!(o.error.unwrap().to_string().contains("data after the last member"));
}

#[test]
fn gzip_header_fields_are_skipped() {
    let plain = big_pcap();
    let mut e = flate2::GzBuilder::new()
        .filename("capture.pcap")
        .comment("a comment")
        .extra(vec![1, 2, 3, 4])
        .write(Vec::new(), flate2::Compression::fast());
    e.write_all(&plain).unwrap();
    let o = read_bytes(&e.finish().unwrap());
    assert!(o.error.is_none(), "{:?}", o.error);
    assert_eq!(o.records.len(), 400);
}

#[test]
fn gzip_cut_inside_the_data_is_truncation_after_whole_records() {
    let gz = gzip(&big_pcap(), 6);
    let o = read_bytes(&gz[..gz.len() / 2]);
    let err = o.error.as_ref().expect("cut stream");
    assert!(err.is_truncation(), "{err}");
    assert!(o.records.len() > 10 && o.records.len() < 400);
    assert_eq!(o.trailing_truncation, Some(err.offset()));
}

/// Damage anywhere in compressed data: a whole-buffer read and a 3-bytes-at-a-time read give
/// the same records and the same error (fuzzing found bytes stranded in the inflater's window
/// when the caller's buffer was small).
#[test]
fn damaged_deflate_data_gives_the_same_outcome_for_any_read_size() {
    let plain = big_pcap();
    let clean = gzip(&plain, 6);
    for k in 1..40 {
        let mut gz = clean.clone();
        let at = 10 + (gz.len() - 20) * k / 40;
        gz[at] ^= 0x5a;
        let whole = read_bytes(&gz);
        let t = Trickle { inner: Cursor::new(gz.clone()), chunk: 3 };
        let small = read_reader(CaptureReader::from_reader(Box::new(t)));
        assert_eq!(small.records, whole.records, "damage at compressed byte {at}");
        let key = |o: &containers_common::Outcome| o.error.as_ref().map(|e| (e.kind(), e.offset()));
        assert_eq!(key(&small), key(&whole), "damage at compressed byte {at}");
    }
}
