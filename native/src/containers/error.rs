//! The one typed error of the capture-container readers. Every variant carries the byte offset
//! (in the decompressed input) where the problem starts, so a report can say where it happened.

use std::fmt;

/// Which part of the container the input ended inside (for `ReadError::Truncated`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The pcap file header or the first pcapng section header: nothing was read yet.
    FileHeader,
    RecordHeader,
    RecordData,
    BlockHeader,
    BlockBody,
    /// A gzip stream that ended before its trailer.
    CompressedStream,
}

impl Part {
    pub fn name(self) -> &'static str {
        match self {
            Part::FileHeader => "file header",
            Part::RecordHeader => "record header",
            Part::RecordData => "record data",
            Part::BlockHeader => "block header",
            Part::BlockBody => "block body",
            Part::CompressedStream => "gzip stream",
        }
    }
}

#[derive(Debug)]
pub enum ReadError {
    /// Input ended inside a header, record or block: "need more data" (a file still being
    /// written looks like this too).
    Truncated { offset: u64, part: Part, needed: u64, available: u64 },
    /// Neither pcap nor pcapng (nor gzip of either): the first four bytes.
    NotACapture { offset: u64, magic: [u8; 4] },
    /// `format` is "pcap" or "pcapng"; messages follow libpcap's.
    UnsupportedVersion { offset: u64, format: &'static str, major: u16, minor: u16 },
    /// pcap link-type field with reserved bits 16-25 set; `reserved` holds just those bits.
    LinktypeReserved { offset: u64, reserved: u32 },
    /// A record's captured length (or a pcapng block's total length) above the cap, refused
    /// before allocating.
    RecordTooLarge { offset: u64, length: u64, limit: u64 },
    /// pcapng block total length that can never be valid: < 12, not a multiple of 4, or below
    /// the fixed part of its block type.
    BadBlockLength { offset: u64, block_type: u32, length: u32 },
    /// pcapng block whose trailing length differs from its leading one.
    BlockLengthMismatch { offset: u64, header: u32, trailer: u32 },
    /// Packet block naming an interface that its section has not described.
    UnknownInterface { offset: u64, interface: u32, interfaces: u32 },
    /// IDB if_tsresol that would make timestamps meaningless (exponent too large).
    BadTsResolution { offset: u64, value: u8 },
    /// An option whose length runs past the end of its block, or has the wrong size.
    BadOption { offset: u64, code: u16, length: u16 },
    /// Any other field that can never be valid (e.g. captured length beyond the block body,
    /// bad byte-order magic).
    Corrupt { offset: u64, detail: String },
    /// The underlying read failed (includes a corrupt gzip stream).
    Io { offset: u64, source: std::io::Error },
}

impl ReadError {
    /// Stable snake_case name; the Python side maps it to an exception class.
    pub fn kind(&self) -> &'static str {
        match self {
            ReadError::Truncated { .. } => "truncated",
            ReadError::NotACapture { .. } => "not_a_capture",
            ReadError::UnsupportedVersion { .. } => "unsupported_version",
            ReadError::LinktypeReserved { .. } => "linktype_reserved",
            ReadError::RecordTooLarge { .. } => "record_too_large",
            ReadError::BadBlockLength { .. } => "bad_block_length",
            ReadError::BlockLengthMismatch { .. } => "block_length_mismatch",
            ReadError::UnknownInterface { .. } => "unknown_interface",
            ReadError::BadTsResolution { .. } => "bad_ts_resolution",
            ReadError::BadOption { .. } => "bad_option",
            ReadError::Corrupt { .. } => "corrupt",
            ReadError::Io { .. } => "io",
        }
    }

    pub fn offset(&self) -> u64 {
        match self {
            ReadError::Truncated { offset, .. }
            | ReadError::NotACapture { offset, .. }
            | ReadError::UnsupportedVersion { offset, .. }
            | ReadError::LinktypeReserved { offset, .. }
            | ReadError::RecordTooLarge { offset, .. }
            | ReadError::BadBlockLength { offset, .. }
            | ReadError::BlockLengthMismatch { offset, .. }
            | ReadError::UnknownInterface { offset, .. }
            | ReadError::BadTsResolution { offset, .. }
            | ReadError::BadOption { offset, .. }
            | ReadError::Corrupt { offset, .. }
            | ReadError::Io { offset, .. } => *offset,
        }
    }

    /// True when the file was refused before any packet could be read (not a capture, an
    /// unsupported version, or too short to hold its own file header); false when a capture
    /// started and was damaged later.
    pub fn rejected(&self) -> bool {
        match self {
            ReadError::NotACapture { .. }
            | ReadError::LinktypeReserved { .. }
            | ReadError::Truncated { part: Part::FileHeader, .. } => true,
            // The version sits at byte 4 (pcap) or 12 (first pcapng section); a later pcapng
            // section with an unknown version is damage after a start.
            ReadError::UnsupportedVersion { offset, .. } => *offset <= 12,
            _ => false,
        }
    }

    /// "Need more data" rather than damage: the input simply ended early.
    pub fn is_truncation(&self) -> bool {
        matches!(self, ReadError::Truncated { .. })
    }
}

/// The compressed formats a capture is often kept in besides gzip (which the reader sees
/// through), by their magic numbers: the name and the command that decompresses to stdout.
pub fn compression_named(magic: [u8; 4]) -> Option<(&'static str, &'static str)> {
    match magic {
        [0x28, 0xb5, 0x2f, 0xfd] => Some(("zstd", "zstd")),
        [0x04, 0x22, 0x4d, 0x18] => Some(("lz4", "lz4")),
        [0xfd, 0x37, 0x7a, 0x58] => Some(("xz", "xz")),
        [0x42, 0x5a, 0x68, _] => Some(("bzip2", "bzip2")),
        _ => None,
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Truncated { offset, part, needed, available } => write!(
                f,
                "truncated {} at byte {offset}: needed {needed} bytes, only {available} left",
                part.name()
            ),
            ReadError::NotACapture { magic, .. } => {
                write!(
                    f,
                    "not a pcap/pcapng file: magic {:02x} {:02x} {:02x} {:02x}",
                    magic[0], magic[1], magic[2], magic[3]
                )?;
                match compression_named(*magic) {
                    Some((name, tool)) => write!(
                        f,
                        " ({name}-compressed: only gzip is read through; decompress it first, as in \
                         `{tool} -dc FILE | stallscope analyze -`)"
                    ),
                    None => Ok(()),
                }
            }
            ReadError::UnsupportedVersion { format, major, minor, .. } => {
                write!(f, "unsupported {format} savefile version {major}.{minor}")
            }
            ReadError::LinktypeReserved { reserved, .. } => {
                write!(f, "savefile linktype reserved field not zero (0x{reserved:08x})")
            }
            ReadError::RecordTooLarge { offset, length, limit } => write!(
                f,
                "record at byte {offset} claims {length} bytes, more than the limit of {limit}"
            ),
            ReadError::BadBlockLength { offset, block_type, length } => write!(
                f,
                "pcapng block 0x{block_type:08x} at byte {offset} has invalid total length {length}"
            ),
            ReadError::BlockLengthMismatch { offset, header, trailer } => write!(
                f,
                "pcapng block at byte {offset}: leading length {header} != trailing length {trailer}"
            ),
            ReadError::UnknownInterface { offset, interface, interfaces } => write!(
                f,
                "packet block at byte {offset} names interface {interface}, \
                 but its section has {interfaces} interface(s)"
            ),
            ReadError::BadTsResolution { offset, value } => write!(
                f,
                "interface block at byte {offset}: if_tsresol 0x{value:02x} is out of range"
            ),
            ReadError::BadOption { offset, code, length } => write!(
                f,
                "option {code} of length {length} in block at byte {offset} runs past the block \
                 or has the wrong size"
            ),
            ReadError::Corrupt { offset, detail } => write!(f, "corrupt capture at byte {offset}: {detail}"),
            ReadError::Io { offset, source } => write!(f, "read error at byte {offset}: {source}"),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compressed_file_is_named_with_how_to_read_it() {
        let zst = ReadError::NotACapture { offset: 0, magic: [0x28, 0xb5, 0x2f, 0xfd] }.to_string();
        assert!(zst.starts_with("not a pcap/pcapng file: magic 28 b5 2f fd (zstd-compressed"), "{zst}");
        assert!(zst.contains("zstd -dc FILE | stallscope analyze -"), "{zst}");
        assert!(ReadError::NotACapture { offset: 0, magic: *b"BZh9" }.to_string().contains("bzip2"));
        let junk = ReadError::NotACapture { offset: 0, magic: *b"junk" }.to_string();
        assert_eq!(junk, "not a pcap/pcapng file: magic 6a 75 6e 6b");
    }
}
