//! A fixed-size buffered byte source with absolute offsets. Records are handed out as slices of
//! its buffer, so the hot path never allocates; the buffer only grows (bounded by the callers'
//! caps) when one block is larger than it.

use std::io::{ErrorKind, Read};

use crate::containers::error::{Part, ReadError};

/// Buffer size for streaming: large reads keep syscalls rare, small enough to never matter for
/// memory. The buffer starts small and doubles up to this, so tiny inputs stay cheap.
pub const DEFAULT_BUFFER: usize = 1 << 20;
const INITIAL_BUFFER: usize = 8 * 1024;

pub struct Source {
    inner: Box<dyn Read + Send>,
    buf: Vec<u8>,
    /// Size the buffer may double up to (beyond it only for one large request).
    capacity: usize,
    /// Unconsumed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// Absolute offset of `buf[start]`.
    offset: u64,
    /// Total bytes pulled from `inner`.
    pulled: u64,
    eof: bool,
    /// The stream ended before its own end marker (a truncated gzip member); reported by the
    /// reader once every whole record before it has been handed out.
    cut_short: bool,
}

impl Source {
    pub fn new(inner: Box<dyn Read + Send>) -> Source {
        Source::with_capacity(inner, DEFAULT_BUFFER)
    }

    /// `capacity` is the streaming buffer size; a single larger request still grows it.
    pub fn with_capacity(inner: Box<dyn Read + Send>, capacity: usize) -> Source {
        let capacity = capacity.max(64);
        Source {
            inner,
            buf: vec![0; INITIAL_BUFFER.min(capacity)],
            capacity,
            start: 0,
            end: 0,
            offset: 0,
            pulled: 0,
            eof: false,
            cut_short: false,
        }
    }

    /// Absolute offset of the first unconsumed byte.
    #[inline]
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes pulled from the input so far (consumed or buffered).
    #[inline]
    pub fn pulled(&self) -> u64 {
        self.pulled
    }

    /// The stream ended before its own end marker (truncated gzip).
    pub fn cut_short(&self) -> bool {
        self.cut_short
    }

    /// The unconsumed bytes currently buffered.
    #[inline]
    pub fn available(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Makes at least `n` bytes available; Ok(false) when the input ends first (then
    /// `available()` holds everything that is left).
    #[inline]
    pub fn ensure(&mut self, n: usize) -> Result<bool, ReadError> {
        if self.end - self.start >= n {
            return Ok(true);
        }
        self.fill(n)
    }

    /// Like `ensure`, but an input that ends first is the typed "need more data" error for
    /// `part`, which starts at byte `offset`.
    #[inline]
    pub fn require(&mut self, n: usize, offset: u64, part: Part) -> Result<(), ReadError> {
        if self.ensure(n)? {
            return Ok(());
        }
        Err(ReadError::Truncated { offset, part, needed: n as u64, available: self.available().len() as u64 })
    }

    #[cold]
    fn fill(&mut self, n: usize) -> Result<bool, ReadError> {
        if self.buf.len() - self.start < n {
            // Move the tail to the front; grow only if one request exceeds the buffer.
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            let want = n.max((self.buf.len() * 2).min(self.capacity));
            if self.buf.len() < want {
                self.buf.resize(want, 0);
            }
        }
        while self.end - self.start < n && !self.eof {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(k) => {
                    self.end += k;
                    self.pulled += k as u64;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
                    self.eof = true;
                    self.cut_short = true;
                }
                Err(e) => {
                    let offset = self.offset + (self.end - self.start) as u64;
                    // Invalid data comes from a decoder (gzip), not the device: damage, not I/O.
                    if e.kind() == ErrorKind::InvalidData {
                        return Err(ReadError::Corrupt { offset, detail: e.to_string() });
                    }
                    return Err(ReadError::Io { offset, source: e });
                }
            }
        }
        Ok(self.end - self.start >= n)
    }

    /// Drops `n` bytes that are already buffered.
    #[inline]
    pub fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.end - self.start);
        self.start += n;
        self.offset += n as u64;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Skips `n` bytes, buffered or not, without holding them; Ok(false) if the input ends
    /// first (everything left is consumed then).
    pub fn skip(&mut self, mut n: u64) -> Result<bool, ReadError> {
        loop {
            let have = (self.end - self.start) as u64;
            if have >= n {
                self.consume(n as usize);
                return Ok(true);
            }
            self.consume(have as usize);
            n -= have;
            let want = (n.min(self.buf.len() as u64)) as usize;
            if !self.ensure(want)? && self.end == self.start {
                return Ok(false);
            }
        }
    }
}
