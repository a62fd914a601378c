//! Whole-file fuzzing of the capture readers: any input ends in "N records + at most one typed
//! error", never a panic or a loop, and the result does not depend on how the input is read.
#![no_main]

use std::io::{Cursor, Read};

use _native::containers::reader::CaptureReader;
use libfuzzer_sys::fuzz_target;

/// Reads at most `chunk` bytes per call.
struct Trickle {
    inner: Cursor<Vec<u8>>,
    chunk: usize,
}

impl Read for Trickle {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = out.len().min(self.chunk);
        self.inner.read(&mut out[..n])
    }
}

/// (records as (ts, caplen, origlen, offset, first data byte), error kind and offset)
type Summary = (Vec<(i64, u32, u32, u64, u8)>, Option<(&'static str, u64)>);

fn run(opened: Result<CaptureReader, _native::containers::error::ReadError>) -> Summary {
    let mut r = match opened {
        Ok(r) => r,
        Err(e) => return (Vec::new(), Some((e.kind(), e.offset()))),
    };
    let mut out = Vec::new();
    let err = loop {
        // Each record takes at least 12 bytes of decompressed input; more would be a loop.
        assert!(out.len() as u64 * 12 <= r.stats().bytes_read, "reader does not advance");
        match r.next_record() {
            Ok(Some(rec)) => {
                assert_eq!(rec.frame, out.len() as u64 + 1);
                assert_eq!(rec.data.len(), rec.caplen as usize);
                out.push((rec.ts_ns, rec.caplen, rec.origlen, rec.offset, rec.data.first().copied().unwrap_or(0)));
            }
            Ok(None) => break None,
            Err(e) => {
                let _ = e.to_string();
                if e.is_truncation() {
                    assert_eq!(r.stats().trailing_truncation, Some(e.offset()));
                }
                break Some((e.kind(), e.offset()));
            }
        }
    };
    assert!(r.next_record().unwrap().is_none());
    assert!(r.next_record().unwrap().is_none());
    (out, err)
}

fuzz_target!(|data: &[u8]| {
    let whole = run(CaptureReader::from_bytes(data.to_vec()));
    let chunk = 1 + data.len() % 7;
    let trickled = run(CaptureReader::from_reader(Box::new(Trickle { inner: Cursor::new(data.to_vec()), chunk })));
    assert_eq!(whole, trickled, "result depends on read size");
});
