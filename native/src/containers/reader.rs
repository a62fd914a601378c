//! The capture reader: opens a file, stdin or bytes, sees through gzip, recognises pcap or
//! pcapng by magic and hands out packet records borrowed from one fixed buffer.

use std::fs::File;
use std::io::{Cursor, Read};

use crate::containers::stats::ContainerStats;
use crate::containers::error::{Part, ReadError};
use crate::containers::gzip::GzipReader;
use crate::containers::pcap::{self, PcapState};
use crate::containers::pcapng::{self, PcapngState};
use crate::containers::record::Record;
use crate::containers::source::Source;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureFormat {
    Pcap { nanosecond: bool, big_endian: bool, version: (u16, u16) },
    Pcapng,
}

enum Container {
    Pcap(PcapState),
    Pcapng(PcapngState),
}

pub struct CaptureReader {
    source: Source,
    container: Container,
    format: CaptureFormat,
    stats: ContainerStats,
    /// Bytes of the record handed out last, dropped at the next call (the record borrows them).
    pending: usize,
    done: bool,
}

impl CaptureReader {
    /// Opens a file by path; "-" reads stdin. gzip is recognised by its magic.
    pub fn open(path: &str) -> Result<CaptureReader, ReadError> {
        if path == "-" {
            return CaptureReader::from_reader(Box::new(std::io::stdin()));
        }
        let file = File::open(path).map_err(|source| ReadError::Io { offset: 0, source })?;
        CaptureReader::from_reader(Box::new(file))
    }

    pub fn from_bytes(bytes: Vec<u8>) -> Result<CaptureReader, ReadError> {
        CaptureReader::from_reader(Box::new(Cursor::new(bytes)))
    }

    pub fn from_reader(mut r: Box<dyn Read + Send>) -> Result<CaptureReader, ReadError> {
        // Peek at two bytes for gzip, then put them back in front of the stream.
        let mut head = [0u8; 2];
        let mut got = 0;
        while got < head.len() {
            match r.read(&mut head[got..]) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => return Err(ReadError::Io { offset: got as u64, source }),
            }
        }
        let stream: Box<dyn Read + Send> = Box::new(Cursor::new(head[..got].to_vec()).chain(r));
        let stream: Box<dyn Read + Send> = if got == 2 && head == GZIP_MAGIC {
            Box::new(GzipReader::new(stream))
        } else {
            stream
        };
        CaptureReader::start(Source::new(stream))
    }

    fn start(mut source: Source) -> Result<CaptureReader, ReadError> {
        let mut stats = ContainerStats::default();
        let result = CaptureReader::sniff(&mut source, &mut stats);
        stats.bytes_read = source.pulled();
        let (container, format) = result?;
        Ok(CaptureReader { source, container, format, stats, pending: 0, done: false })
    }

    fn sniff(source: &mut Source, stats: &mut ContainerStats) -> Result<(Container, CaptureFormat), ReadError> {
        source.require(4, 0, Part::FileHeader)?;
        let mut magic = [0u8; 4];
        magic.copy_from_slice(&source.available()[..4]);
        if let Some((nanosecond, order)) = pcap::sniff(magic) {
            let h = pcap::read_header(source, nanosecond, order)?;
            let format = CaptureFormat::Pcap { nanosecond, big_endian: order.is_big(), version: h.version };
            return Ok((Container::Pcap(PcapState::new(&h, stats)), format));
        }
        if magic == pcapng::SHB_MAGIC {
            let state = PcapngState::start(source, stats)?;
            return Ok((Container::Pcapng(state), CaptureFormat::Pcapng));
        }
        Err(ReadError::NotACapture { offset: 0, magic })
    }

    /// Ok(Some) a record; Ok(None) clean end of input; Err = the one typed error, after which
    /// every further call returns Ok(None).
    #[inline]
    pub fn next_record(&mut self) -> Result<Option<Record<'_>>, ReadError> {
        if self.done {
            return Ok(None);
        }
        self.source.consume(self.pending);
        self.pending = 0;
        let got = match &mut self.container {
            Container::Pcap(p) => p.next(&mut self.source, &mut self.stats),
            Container::Pcapng(p) => p.next(&mut self.source, &mut self.stats),
        };
        self.stats.bytes_read = self.source.pulled();
        match got {
            Ok(Some(m)) => {
                self.pending = m.consumed;
                self.stats.records += 1;
                let data = &self.source.available()[m.data_start..m.data_start + m.caplen as usize];
                Ok(Some(Record {
                    frame: self.stats.records,
                    ts_ns: m.ts_ns,
                    ts_valid: m.ts_valid,
                    interface: m.interface,
                    linktype: m.linktype,
                    caplen: m.caplen,
                    origlen: m.origlen,
                    snaplen: m.snaplen,
                    offset: m.offset,
                    data,
                }))
            }
            Ok(None) => {
                self.done = true;
                if self.source.cut_short() {
                    // The gzip stream was cut: whole records came out, but the file is not whole.
                    let offset = self.source.offset();
                    self.stats.trailing_truncation = Some(offset);
                    return Err(ReadError::Truncated { offset, part: Part::CompressedStream, needed: 1, available: 0 });
                }
                Ok(None)
            }
            Err(e) => {
                self.done = true;
                if let ReadError::Truncated { offset, .. } = e {
                    self.stats.trailing_truncation = Some(offset);
                }
                Err(e)
            }
        }
    }

    pub fn stats(&self) -> &ContainerStats {
        &self.stats
    }

    pub fn format(&self) -> &CaptureFormat {
        &self.format
    }

    /// pcapng epb_flags / pack_flags of the record handed out last (direction, reception
    /// type, link-layer errors); None for pcap or when the block had none.
    pub fn record_flags(&self) -> Option<u32> {
        match &self.container {
            Container::Pcapng(p) => p.last_flags(),
            Container::Pcap(_) => None,
        }
    }
}
