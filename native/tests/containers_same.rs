//! The same packets come out whatever the container: pcap with microsecond or nanosecond
//! timestamps in both byte orders, pcapng in both byte orders, gzip of any of them, a file on
//! disk, stdin, and any read size.

mod containers_common;

use std::io::{Cursor, Write};
use std::process::{Command, Stdio};

use _native::containers::reader::{CaptureFormat, CaptureReader};
use containers_common::build::{pcap_file, pcapng_file, sample_packets, Order};
use containers_common::{packets, read_bytes, read_reader, Trickle};
use flate2::write::GzEncoder;

fn variants() -> Vec<(&'static str, Vec<u8>)> {
    let p = sample_packets();
    vec![
        ("pcap-us-le", pcap_file(Order::Le, false, &p)),
        ("pcap-us-be", pcap_file(Order::Be, false, &p)),
        ("pcap-ns-le", pcap_file(Order::Le, true, &p)),
        ("pcap-ns-be", pcap_file(Order::Be, true, &p)),
        ("pcapng-le", pcapng_file(Order::Le, &p)),
        ("pcapng-be", pcapng_file(Order::Be, &p)),
    ]
}

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

fn expected() -> Vec<(i64, u32, u32, Vec<u8>)> {
    sample_packets()
        .into_iter()
        .map(|p| (p.sec as i64 * 1_000_000_000 + p.nsec as i64, p.data.len() as u32, p.origlen, p.data))
        .collect()
}

#[test]
fn every_container_variant_yields_the_same_packets() {
    for (name, bytes) in variants() {
        let o = read_bytes(&bytes);
        assert!(o.error.is_none(), "{name}: {:?}", o.error);
        assert_eq!(packets(&o), expected(), "{name}");
        let gz = read_bytes(&gzip(&bytes));
        assert!(gz.error.is_none(), "{name}.gz: {:?}", gz.error);
        assert_eq!(packets(&gz), expected(), "{name}.gz");
        assert_eq!(gz.stats.unwrap().bytes_read, bytes.len() as u64, "{name}.gz counts decompressed bytes");
        for chunk in [1, 3, 7, 4096] {
            let t = Trickle { inner: Cursor::new(bytes.clone()), chunk };
            let o = read_reader(CaptureReader::from_reader(Box::new(t)));
            assert_eq!(packets(&o), expected(), "{name} read {chunk} bytes at a time");
        }
    }
}

#[test]
fn formats_are_reported() {
    let v = variants();
    let fmt = |b: &[u8]| CaptureReader::from_bytes(b.to_vec()).unwrap().format().clone();
    assert_eq!(fmt(&v[0].1), CaptureFormat::Pcap { nanosecond: false, big_endian: false, version: (2, 4) });
    assert_eq!(fmt(&v[3].1), CaptureFormat::Pcap { nanosecond: true, big_endian: true, version: (2, 4) });
    assert_eq!(fmt(&v[5].1), CaptureFormat::Pcapng);
}

#[test]
fn files_on_disk_plain_and_gzipped() {
    let dir = std::env::temp_dir().join(format!("stallscope-containers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in variants() {
        for (suffix, content) in [("", bytes.clone()), (".gz", gzip(&bytes))] {
            let path = dir.join(format!("{name}{suffix}"));
            std::fs::write(&path, &content).unwrap();
            let o = read_reader(CaptureReader::open(path.to_str().unwrap()));
            assert_eq!(packets(&o), expected(), "{}", path.display());
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Concatenated gzip members (as `cat a.gz b.gz` makes) are one stream.
#[test]
fn multi_member_gzip_is_read_whole() {
    let bytes = pcap_file(Order::Le, true, &sample_packets());
    let (a, b) = bytes.split_at(100);
    let mut two = gzip(a);
    two.extend(gzip(b));
    assert_eq!(packets(&read_bytes(&two)), expected());
}

/// A gzip file cut short: every whole record, then a truncation error.
#[test]
fn truncated_gzip_gives_whole_records_then_truncated() {
    let bytes = pcap_file(Order::Le, true, &sample_packets());
    let gz = gzip(&bytes);
    let cut = &gz[..gz.len() - 6];
    let o = read_bytes(cut);
    let err = o.error.as_ref().expect("a cut gzip stream must not end cleanly");
    assert!(err.is_truncation(), "{err}");
    assert_eq!(packets(&o), expected(), "every record was inside the part that remained");
    assert_eq!(o.trailing_truncation, Some(err.offset()));
}

/// Runs in a child process whose stdin is a capture; prints a digest of what it read.
#[test]
#[ignore = "helper: run by stdin_is_read_like_a_file in a child process"]
fn stdin_child() {
    if std::env::var_os("STALLSCOPE_STDIN_CHILD").is_none() {
        return;
    }
    let o = read_reader(CaptureReader::open("-"));
    let digest: Vec<String> = packets(&o).iter().map(|p| format!("{}:{}:{}:{}", p.0, p.1, p.2, p.3.len())).collect();
    println!("DIGEST {} ERR {:?}", digest.join(","), o.error.map(|e| e.kind()));
}

#[test]
fn stdin_is_read_like_a_file() {
    let want: Vec<String> = expected().iter().map(|p| format!("{}:{}:{}:{}", p.0, p.1, p.2, p.3.len())).collect();
    let want = format!("DIGEST {} ERR None", want.join(","));
    for (name, bytes) in variants().into_iter().take(5).step_by(2) {
        for content in [bytes.clone(), gzip(&bytes)] {
            let mut child = Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "stdin_child", "--ignored", "--nocapture", "--test-threads=1"])
                .env("STALLSCOPE_STDIN_CHILD", "1")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(&content).unwrap();
            let out = child.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains(&format!("{want}\n")), "{name} via stdin: {text}");
        }
    }
}
