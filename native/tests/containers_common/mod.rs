//! Helpers shared by the container integration tests: in-memory readers, a whole-input read,
//! and (in `build`) hand-built capture bytes.
#![allow(dead_code)]

pub mod build;

use std::io::Read;
use std::sync::Arc;

use _native::containers::error::ReadError;
use _native::containers::reader::CaptureReader;

/// The first `end` bytes of shared data, without copying them per reader.
pub struct Prefix {
    pub data: Arc<Vec<u8>>,
    pub pos: usize,
    pub end: usize,
}

impl Read for Prefix {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = out.len().min(self.end - self.pos);
        out[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Hands out at most `chunk` bytes per read, to show results do not depend on read sizes.
pub struct Trickle<R: Read> {
    pub inner: R,
    pub chunk: usize,
}

impl<R: Read> Read for Trickle<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = out.len().min(self.chunk);
        self.inner.read(&mut out[..n])
    }
}

/// A record's fields, owned: (frame, ts_ns, ts_valid, interface, linktype, caplen, origlen,
/// snaplen, offset, data).
pub type Owned = (u64, i64, bool, u32, u32, u32, u32, u32, u64, Vec<u8>);

/// Everything a whole read yields. Asserts the reader's contract on the way: records numbered
/// from 1, data exactly caplen long, and after the end or an error only Ok(None).
pub struct Outcome {
    pub records: Vec<Owned>,
    pub error: Option<ReadError>,
    pub trailing_truncation: Option<u64>,
    pub stats: Option<_native::containers::stats::ContainerStats>,
}

pub fn read_reader(opened: Result<CaptureReader, ReadError>) -> Outcome {
    let mut r = match opened {
        Ok(r) => r,
        Err(e) => return Outcome { records: Vec::new(), error: Some(e), trailing_truncation: None, stats: None },
    };
    let mut records = Vec::new();
    let error = loop {
        // Every record takes at least 12 bytes of (decompressed) input: more would be a loop.
        assert!(records.len() as u64 * 12 <= r.stats().bytes_read, "reader does not advance");
        match r.next_record() {
            Ok(Some(rec)) => {
                assert_eq!(rec.frame, records.len() as u64 + 1);
                assert_eq!(rec.data.len(), rec.caplen as usize);
                records.push((
                    rec.frame,
                    rec.ts_ns,
                    rec.ts_valid,
                    rec.interface,
                    rec.linktype,
                    rec.caplen,
                    rec.origlen,
                    rec.snaplen,
                    rec.offset,
                    rec.data.to_vec(),
                ));
            }
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    for _ in 0..2 {
        assert!(matches!(r.next_record(), Ok(None)), "a finished reader must keep returning Ok(None)");
    }
    assert_eq!(r.stats().records, records.len() as u64);
    Outcome { records, error, trailing_truncation: r.stats().trailing_truncation, stats: Some(r.stats().clone()) }
}

pub fn read_bytes(bytes: &[u8]) -> Outcome {
    read_reader(CaptureReader::from_bytes(bytes.to_vec()))
}

pub fn read_prefix(data: &Arc<Vec<u8>>, end: usize) -> Outcome {
    let src = Prefix { data: data.clone(), pos: 0, end };
    read_reader(CaptureReader::from_reader(Box::new(src)))
}

/// Only the fields that must not depend on the container (offsets and interface details may).
pub fn packets(o: &Outcome) -> Vec<(i64, u32, u32, Vec<u8>)> {
    o.records.iter().map(|r| (r.1, r.5, r.6, r.9.clone())).collect()
}

/// The public fixtures ($STALLSCOPE_PUBLIC_FIXTURES, else ../shared/fixtures/public beside the
/// repository), if present.
pub fn public_files() -> Vec<std::path::PathBuf> {
    let dir = match std::env::var_os("STALLSCOPE_PUBLIC_FIXTURES") {
        Some(d) if !d.is_empty() => std::path::PathBuf::from(d),
        _ => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/public"),
    };
    let mut out = Vec::new();
    for sub in ["libpcap", "tcpdump", "zeek"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else { continue };
        for e in entries.flatten() {
            out.push(e.path());
        }
    }
    out.sort();
    out
}

/// Captures this project made itself (the repository's fixtures/), if any.
pub fn project_files() -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.to_string_lossy();
            n.ends_with(".pcap") || n.ends_with(".pcapng") || n.ends_with(".pcap.gz") || n.ends_with(".pcapng.gz")
        })
        .collect();
    out.sort();
    out
}
