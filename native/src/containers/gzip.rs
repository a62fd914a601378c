//! gzip (RFC 1952, several members in a row) over flate2's raw inflate. flate2's own GzDecoder
//! drops the bytes it inflated in the same call as a corruption error; this one hands them out
//! first and reports the error on the next read, so every whole record before the damage is
//! kept and the result does not depend on read sizes. It inflates into its own staging buffer,
//! larger than miniz_oxide's 32 KiB window, so that an error never strands decoded bytes inside
//! the inflater (found by fuzzing: a small caller buffer lost up to 32 KiB).

use std::io::{self, ErrorKind, Read};

use flate2::{Crc, Decompress, FlushDecompress, Status};

const INPUT_BUFFER: usize = 256 * 1024;
/// Inflate output staging: more than the inflater's 32 KiB window.
const STAGING: usize = 64 * 1024;
const FHCRC: u8 = 0x02;
const FEXTRA: u8 = 0x04;
const FNAME: u8 = 0x08;
const FCOMMENT: u8 = 0x10;
const FRESERVED: u8 = 0xe0;

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Header,
    Body,
    Trailer,
    Done,
}

pub struct GzipReader<R: Read> {
    inner: R,
    input: Vec<u8>,
    pos: usize,
    len: usize,
    input_eof: bool,
    state: State,
    inflate: Decompress,
    /// Inflated bytes not yet handed out: `staged[spos..slen]`.
    staged: Vec<u8>,
    spos: usize,
    slen: usize,
    crc: Crc,
    members: u64,
    /// An error found while producing bytes that were handed out first.
    deferred: Option<io::Error>,
}

fn corrupt(msg: &str) -> io::Error {
    io::Error::new(ErrorKind::InvalidData, format!("gzip: {msg}"))
}

fn cut(msg: &str) -> io::Error {
    io::Error::new(ErrorKind::UnexpectedEof, format!("gzip: {msg}"))
}

impl<R: Read> GzipReader<R> {
    pub fn new(inner: R) -> GzipReader<R> {
        GzipReader {
            inner,
            input: vec![0; INPUT_BUFFER],
            pos: 0,
            len: 0,
            input_eof: false,
            state: State::Header,
            inflate: Decompress::new(false),
            staged: vec![0; STAGING],
            spos: 0,
            slen: 0,
            crc: Crc::new(),
            members: 0,
            deferred: None,
        }
    }

    /// Refills the input buffer once it is empty; false at the end of input.
    fn refill(&mut self) -> io::Result<bool> {
        while self.pos == self.len && !self.input_eof {
            match self.inner.read(&mut self.input) {
                Ok(0) => self.input_eof = true,
                Ok(n) => {
                    self.pos = 0;
                    self.len = n;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(self.pos < self.len)
    }

    fn byte(&mut self) -> io::Result<Option<u8>> {
        if !self.refill()? {
            return Ok(None);
        }
        self.pos += 1;
        Ok(Some(self.input[self.pos - 1]))
    }

    fn need(&mut self, what: &str) -> io::Result<u8> {
        self.byte()?.ok_or_else(|| cut(what))
    }

    /// Reads a member header; Ok(false) at a clean end after at least one member.
    fn header(&mut self) -> io::Result<bool> {
        let Some(b0) = self.byte()? else {
            return if self.members > 0 { Ok(false) } else { Err(cut("empty stream")) };
        };
        let b1 = self.need("member header")?;
        if (b0, b1) != (0x1f, 0x8b) {
            return Err(corrupt(if self.members > 0 { "data after the last member" } else { "bad magic" }));
        }
        if self.need("member header")? != 8 {
            return Err(corrupt("compression method is not deflate"));
        }
        let flags = self.need("member header")?;
        if flags & FRESERVED != 0 {
            return Err(corrupt("reserved header flags set"));
        }
        for _ in 0..6 {
            self.need("member header")?; // mtime, xfl, os
        }
        if flags & FEXTRA != 0 {
            let xlen = self.need("extra field")? as usize | (self.need("extra field")? as usize) << 8;
            for _ in 0..xlen {
                self.need("extra field")?;
            }
        }
        for flag in [FNAME, FCOMMENT] {
            if flags & flag != 0 {
                while self.need("file name or comment")? != 0 {}
            }
        }
        if flags & FHCRC != 0 {
            self.need("header crc")?;
            self.need("header crc")?;
        }
        self.inflate.reset(false);
        self.crc.reset();
        Ok(true)
    }

    fn trailer(&mut self) -> io::Result<()> {
        let mut t = [0u8; 8];
        for b in &mut t {
            *b = self.need("member trailer")?;
        }
        let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
        let size = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
        if crc != self.crc.sum() || size != self.crc.amount() {
            return Err(corrupt("crc or length mismatch in member trailer"));
        }
        self.members += 1;
        Ok(())
    }

    /// Inflates into the (empty) staging buffer; Ok(0) when the member's data ended.
    fn body(&mut self) -> io::Result<usize> {
        loop {
            let has_input = self.refill()?;
            let (before_in, before_out) = (self.inflate.total_in(), self.inflate.total_out());
            let flush = if has_input { FlushDecompress::None } else { FlushDecompress::Finish };
            let res = self.inflate.decompress(&self.input[self.pos..self.len], &mut self.staged[..], flush);
            let consumed = (self.inflate.total_in() - before_in) as usize;
            let produced = (self.inflate.total_out() - before_out) as usize;
            self.pos += consumed;
            self.crc.update(&self.staged[..produced]);
            match res {
                Err(e) => {
                    let err = corrupt(&e.to_string());
                    if produced > 0 {
                        self.deferred = Some(err);
                        return Ok(produced);
                    }
                    return Err(err);
                }
                Ok(Status::StreamEnd) => {
                    self.state = State::Trailer;
                    return Ok(produced);
                }
                Ok(_) if produced > 0 => return Ok(produced),
                Ok(_) if !has_input => return Err(cut("stream ends inside deflate data")),
                // Progress without output (e.g. a header of a stored block): go on.
                Ok(_) if consumed > 0 => {}
                // Neither progress nor output with input left: never loop on it.
                Ok(_) => return Err(corrupt("inflate makes no progress")),
            }
        }
    }
}

impl<R: Read> Read for GzipReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            if self.spos < self.slen {
                let n = out.len().min(self.slen - self.spos);
                out[..n].copy_from_slice(&self.staged[self.spos..self.spos + n]);
                self.spos += n;
                return Ok(n);
            }
            if let Some(e) = self.deferred.take() {
                self.state = State::Done;
                return Err(e);
            }
            match self.state {
                State::Header => {
                    if !self.header()? {
                        self.state = State::Done;
                        return Ok(0);
                    }
                    self.state = State::Body;
                }
                State::Body => {
                    self.spos = 0;
                    self.slen = self.body()?;
                }
                State::Trailer => {
                    self.trailer()?;
                    self.state = State::Header;
                }
                State::Done => return Ok(0),
            }
        }
    }
}
