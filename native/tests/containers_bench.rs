//! Throughput of the container layer alone (no dissection): a 256 MiB pcap and pcapng file in
//! the page cache, read record by record, checksumming one byte per record so nothing is
//! optimised away. Ignored by default; run with
//! `cargo test --release --test containers_bench -- --ignored --nocapture`.

mod containers_common;

use std::io::Write;
use std::time::Instant;

use _native::containers::reader::CaptureReader;
use containers_common::build::{epb, idb, pcap_header, pcap_record, shb, Order};

const TARGET: usize = 256 << 20;

fn write_file(name: &str, header: Vec<u8>, record: impl Fn(u32) -> Vec<u8>) -> (std::path::PathBuf, u64) {
    let path = std::env::temp_dir().join(format!("stallscope-bench-{}-{name}", std::process::id()));
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    f.write_all(&header).unwrap();
    let mut written = header.len();
    let mut n = 0u64;
    let mut i = 0u32;
    while written < TARGET {
        let r = record(i);
        f.write_all(&r).unwrap();
        written += r.len();
        n += 1;
        i = i.wrapping_add(1);
    }
    f.flush().unwrap();
    (path, n)
}

fn measure(name: &str, path: &std::path::Path, records: u64) {
    measure_sized(name, path, records, std::fs::metadata(path).unwrap().len());
}

/// `size` = bytes of capture the reader gets (decompressed for gzip).
fn measure_sized(name: &str, path: &std::path::Path, records: u64, size: u64) {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let mut r = CaptureReader::open(path.to_str().unwrap()).unwrap();
        let (mut n, mut sum) = (0u64, 0u64);
        while let Some(rec) = r.next_record().unwrap() {
            n += 1;
            sum = sum.wrapping_add(rec.data.first().copied().unwrap_or(0) as u64 + rec.ts_ns as u64);
        }
        best = best.min(t.elapsed().as_secs_f64());
        assert_eq!(n, records);
        assert!(sum != 0);
    }
    println!(
        "{name}: {:.0} MiB, {records} records, best of 5: {:.3} s = {:.2} GB/s, {:.1} M records/s",
        size as f64 / 1048576.0,
        best,
        size as f64 / best / 1e9,
        records as f64 / best / 1e6
    );
}

#[test]
#[ignore = "benchmark; run in release with --ignored --nocapture"]
fn container_throughput() {
    // Mixed sizes like a TCP capture: full segments and bare ACKs.
    let size = |i: u32| if i % 3 == 2 { 66 } else { 1514 };
    let payload = vec![0x5au8; 1514];
    let (p, n) = write_file("pcap", pcap_header(Order::Le, true, (2, 4), 65535, 1), |i| {
        pcap_record(Order::Le, 1_700_000_000 + i / 1000, i % 1000, size(i), size(i), &payload[..size(i) as usize])
    });
    measure("pcap", &p, n);
    // The same file gzipped (throughput counted in decompressed bytes).
    let gz = p.with_extension("gz");
    let mut e = flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::fast());
    std::io::copy(&mut std::fs::File::open(&p).unwrap(), &mut e).unwrap();
    e.finish().unwrap();
    measure_sized("pcap.gz", &gz, n, std::fs::metadata(&p).unwrap().len());
    std::fs::remove_file(&gz).unwrap();
    std::fs::remove_file(&p).unwrap();
    let mut head = shb(Order::Le, (1, 0), &[]);
    head.extend(idb(Order::Le, 1, 0, &[]));
    let (p, n) = write_file("pcapng", head, |i| {
        epb(Order::Le, 0, 1_700_000_000_000_000 + i as u64, size(i), &payload[..size(i) as usize], &[])
    });
    measure("pcapng", &p, n);
    std::fs::remove_file(&p).unwrap();
    // Header-only capture (snaplen 66): the per-record cost dominates.
    let (p, n) = write_file("pcap-small", pcap_header(Order::Le, false, (2, 4), 66, 1), |i| {
        pcap_record(Order::Le, 1_700_000_000 + i / 1000, i % 1000, 66, size(i), &payload[..66])
    });
    measure("pcap-small", &p, n);
    std::fs::remove_file(&p).unwrap();
}
