//! Every public fixture (../shared/fixtures/public beside the repository, or
//! $STALLSCOPE_PUBLIC_FIXTURES, as tests/shared_material.py finds them) read with the record count tshark 4.0
//! reports (`tshark -r F -T fields -e frame.number | wc -l`), and the files libpcap refuses
//! refused with libpcap's own messages. Skipped when the folder is absent.

// Timestamps are written seconds_nanoseconds, as tshark prints them.
#![allow(clippy::inconsistent_digit_grouping, clippy::type_complexity)]

use std::path::{Path, PathBuf};

use _native::containers::error::ReadError;
use _native::containers::reader::{CaptureFormat, CaptureReader};


/// (file, records, sum of caplen, sum of original length) — all taken from tshark 4.0 on these
/// exact files (`tshark -r F -T fields -e frame.cap_len -e frame.len`).
const TSHARK_COUNTS: &[(&str, u64, u64, u64)] = &[
    ("tcpdump/802.1ad_QinQ.pcap", 2, 128, 128),
    ("tcpdump/bigtcp-ipv4.pcap", 1, 80066, 80066),
    ("tcpdump/empty.pcapng", 0, 0, 0),
    ("tcpdump/ipv4_tcp_http_xml_tso.pcap", 1, 2030, 2030),
    ("tcpdump/tcp-auth-heapoverflow.pcap", 1, 64, 262144),
    ("tcpdump/tcp-handshake-nano.pcap", 3, 220, 220),
    ("tcpdump/tcp_eight_lowest_weight_flags_set.pcap", 1, 54, 54),
    ("tcpdump/timestamp_invalid_nano.pcap", 3, 220, 220),
    ("zeek/communityid_ipv6.pcap", 17, 1532, 1532),
    ("zeek/empty.pcap", 0, 0, 0),
    ("zeek/http-vlan-0.pcap", 14, 6143, 6143),
    ("zeek/linux_dlt_sll2.pcap", 6, 552, 552),
    ("zeek/pcapng-multi-interface.pcapng", 6, 798, 798),
    ("zeek/q-in-q.pcap", 5, 856, 856),
    ("zeek/tcp_fin_retransmission.pcap", 5, 330, 330),
    ("zeek/tcp_option-sack.pcap", 4, 312, 312),
    ("zeek/tcp_options.pcap", 4, 396, 396),
    ("zeek/tcp_retransmit-fast009.pcap", 39, 2210, 30757),
    ("zeek/tcp_retransmit-timeout.pcapng", 3, 198, 198),
    ("zeek/tcp_syn-synack.pcap", 2, 152, 152),
    ("zeek/tcp_timestamp.pcap", 878, 78694, 1057964),
    ("zeek/tcp_truncated-header.pcap", 24, 1314, 1993),
    ("zeek/tcp_window-scale-range.pcap", 5, 291, 291),
    ("zeek/trunc_ip-discarder-truncated-tcp-oob.pcapng", 1, 34, 54),
    ("zeek/trunc_ip4-trunc.pcap", 1, 20, 46),
    ("zeek/trunc_ip6-ext-trunc.pcap", 1, 54, 54),
    ("zeek/trunc_ip6-trunc.pcap", 1, 48, 74),
    ("zeek/trunc_ipv4-internally-truncated-header.pcap", 1, 34, 134),
    ("zeek/trunc_ipv4-truncated-broken-header.pcap", 1, 34, 34),
    ("zeek/trunc_trunc-hdr.pcap", 1, 8, 78),
];

/// Per-record (ts_ns, caplen, origlen, interface) from tshark 4.0 (`-e frame.time_epoch
/// -e frame.cap_len -e frame.len -e frame.interface_id`): two interfaces with different
/// if_tsresol (10^-9 and 10^-6) in one pcapng, and a nanosecond pcap.
const TSHARK_RECORDS: &[(&str, &[(i64, u32, u32, u32)])] = &[
    (
        "zeek/pcapng-multi-interface.pcapng",
        &[
            (1767663089_500330493, 96, 96, 0),
            (1767663089_514291940, 214, 214, 0),
            (1767663437_111897000, 70, 70, 1),
            (1767663437_126460000, 166, 166, 1),
            (1767663437_128303000, 70, 70, 1),
            (1767663437_140942000, 182, 182, 1),
        ],
    ),
    (
        "zeek/tcp_retransmit-timeout.pcapng",
        &[(629503200_000030000, 72, 72, 0), (629503200_000040000, 54, 54, 0), (629503500_000040000, 72, 72, 0)],
    ),
    (
        "tcpdump/tcp-handshake-nano.pcap",
        &[(1418145369_924505488, 76, 76, 0), (1418145370_052027262, 76, 76, 0), (1418145370_052115157, 68, 68, 0)],
    ),
    ("zeek/trunc_ip-discarder-truncated-tcp-oob.pcapng", &[(1000, 34, 54, 0)]),
];

/// Files libpcap refuses, with the messages listed in PROVENANCE.md (libpcap's own).
/// tshark 4.0 diverges on pcap-invalid-version-2.pcap (reads 1 packet); we follow libpcap.
const LIBPCAP_REJECTS: &[(&str, &str, &str)] = &[
    ("libpcap/pcap-invalid-version-1.pcap", "unsupported_version", "unsupported pcap savefile version 1.4"),
    ("libpcap/pcap-invalid-version-2.pcap", "unsupported_version", "unsupported pcap savefile version 2.5"),
    ("libpcap/pcapng-invalid-vers-1.pcapng", "unsupported_version", "unsupported pcapng savefile version 0.1"),
    ("libpcap/pcapng-invalid-vers-2.pcapng", "unsupported_version", "unsupported pcapng savefile version 1.1"),
    (
        "libpcap/linktype-reserved-field-not-zero.pcap",
        "linktype_reserved",
        "savefile linktype reserved field not zero (0x00300000)",
    ),
];

/// The public fixtures: $STALLSCOPE_PUBLIC_FIXTURES, else ../shared/fixtures/public beside the
/// repository (this crate is its native/ folder).
fn public() -> Option<PathBuf> {
    let p = match std::env::var_os("STALLSCOPE_PUBLIC_FIXTURES") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/public"),
    };
    p.is_dir().then_some(p)
}

/// One record's fields that tshark shows too.
type Row = (i64, u32, u32, u32);

/// Reads a whole file: (records, the error if any).
fn read_all(path: &Path) -> (Vec<Row>, Option<ReadError>) {
    let mut r = match CaptureReader::open(path.to_str().unwrap()) {
        Ok(r) => r,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut rows = Vec::new();
    loop {
        match r.next_record() {
            Ok(Some(rec)) => {
                assert_eq!(rec.frame, rows.len() as u64 + 1);
                assert_eq!(rec.data.len(), rec.caplen as usize);
                rows.push((rec.ts_ns, rec.caplen, rec.origlen, rec.interface));
            }
            Ok(None) => return (rows, None),
            Err(e) => return (rows, Some(e)),
        }
    }
}

#[test]
fn public_fixtures_have_tsharks_record_counts() {
    let Some(dir) = public() else { return };
    for (file, records, caplen, origlen) in TSHARK_COUNTS {
        let (rows, err) = read_all(&dir.join(file));
        assert!(err.is_none(), "{file}: unexpected error {:?}", err);
        assert_eq!(rows.len() as u64, *records, "{file}");
        assert_eq!(rows.iter().map(|r| r.1 as u64).sum::<u64>(), *caplen, "{file}");
        assert_eq!(rows.iter().map(|r| r.2 as u64).sum::<u64>(), *origlen, "{file}");
    }
}

#[test]
fn timestamps_and_interfaces_match_tshark() {
    let Some(dir) = public() else { return };
    for (file, expected) in TSHARK_RECORDS {
        let (rows, err) = read_all(&dir.join(file));
        assert!(err.is_none(), "{file}: {:?}", err);
        assert_eq!(&rows[..], *expected, "{file}");
    }
}

/// tshark prints nonsense times for fractions >= 1e9; we keep the packet, flag its timestamp
/// and count it (case 5 of docs/capture-input.md#input-cases).
#[test]
fn nanosecond_fraction_out_of_range_is_kept_and_flagged() {
    let Some(dir) = public() else { return };
    let mut r = CaptureReader::open(dir.join("tcpdump/timestamp_invalid_nano.pcap").to_str().unwrap()).unwrap();
    let mut valid = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        valid.push(rec.ts_valid);
    }
    assert_eq!(valid, [true, false, false]);
    assert_eq!(r.stats().ts_invalid, 2);
    assert_eq!(
        r.format(),
        &CaptureFormat::Pcap { nanosecond: true, big_endian: false, version: (2, 4) }
    );
}

/// Two interfaces, named, with if_tsresol 9 and 6, are listed in the stats.
#[test]
fn pcapng_interfaces_are_described() {
    let Some(dir) = public() else { return };
    let mut r = CaptureReader::open(dir.join("zeek/pcapng-multi-interface.pcapng").to_str().unwrap()).unwrap();
    while r.next_record().unwrap().is_some() {}
    let s = r.stats();
    assert_eq!(s.sections, 1);
    assert_eq!(s.interfaces.len(), 2);
    assert_eq!(s.interfaces[0].name.as_deref(), Some("eth0"));
    assert_eq!((s.interfaces[0].tsresol, s.interfaces[1].tsresol), (9, 6));
    assert_eq!(s.blocks_by_type.get("IDB"), Some(&2));
    assert_eq!(s.bytes_read, 1348);
}

/// tshark calls this file "damaged or corrupt": the SHB's first option claims 0x3030 bytes and
/// its trailing length is "0000" too. The trailer is checked first, so that is what is reported
/// (hand-built option overruns are tested in containers_pcapng.rs).
#[test]
fn damaged_shb_is_a_typed_error_at_its_offset() {
    let Some(dir) = public() else { return };
    let (rows, err) = read_all(&dir.join("libpcap/shb-option-too-long.pcapng"));
    assert!(rows.is_empty());
    let err = err.expect("accepted");
    assert!(matches!(err, ReadError::BlockLengthMismatch { offset: 0, header: 52, trailer: 0x3030_3030 }), "{err}");
    assert!(!err.rejected());
}

#[test]
fn libpcap_rejected_files_are_rejected_with_libpcaps_messages() {
    let Some(dir) = public() else { return };
    for (file, kind, message) in LIBPCAP_REJECTS {
        let (rows, err) = read_all(&dir.join(file));
        let err = err.unwrap_or_else(|| panic!("{file} was accepted"));
        assert!(rows.is_empty(), "{file}");
        assert_eq!(err.kind(), *kind, "{file}: {err}");
        assert_eq!(err.to_string(), *message, "{file}");
        assert!(err.rejected(), "{file}");
    }
}
