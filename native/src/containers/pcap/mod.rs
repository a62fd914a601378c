//! Legacy pcap (libpcap savefile): the 24-byte file header and 16-byte record headers.
//! Checks and messages follow libpcap's sf-pcap.c.

use crate::containers::byte_order::ByteOrder;
use crate::containers::stats::{ContainerStats, InterfaceInfo};
use crate::containers::error::{Part, ReadError};
use crate::containers::record::{RecordMeta, MAX_CAPLEN};
use crate::containers::source::Source;

pub const MAGIC_US: u32 = 0xa1b2_c3d4;
pub const MAGIC_NS: u32 = 0xa1b2_3c4d;
pub const FILE_HEADER_LEN: usize = 24;
pub const RECORD_HEADER_LEN: usize = 16;

// Link-type field layout (libpcap pcap-common.h LT_* macros).
const LT_LINKTYPE_MASK: u32 = 0x0000_ffff;
const LT_RESERVED1_MASK: u32 = 0x03ff_0000;
const LT_FCS_PRESENT: u32 = 0x0400_0000;

/// The parsed file header.
#[derive(Debug, Clone, Copy)]
pub struct PcapHeader {
    pub order: ByteOrder,
    pub nanosecond: bool,
    pub version: (u16, u16),
    pub snaplen: u32,
    pub linktype: u32,
    pub fcs_len: Option<u8>,
}

/// Recognises a pcap magic in the first four bytes: (nanosecond, byte order).
pub fn sniff(magic: [u8; 4]) -> Option<(bool, ByteOrder)> {
    let le = u32::from_le_bytes(magic);
    let be = u32::from_be_bytes(magic);
    match (le, be) {
        (MAGIC_US, _) => Some((false, ByteOrder::Little)),
        (MAGIC_NS, _) => Some((true, ByteOrder::Little)),
        (_, MAGIC_US) => Some((false, ByteOrder::Big)),
        (_, MAGIC_NS) => Some((true, ByteOrder::Big)),
        _ => None,
    }
}

/// Reads and validates the file header (the magic is already known to be a pcap one).
pub fn read_header(src: &mut Source, nanosecond: bool, order: ByteOrder) -> Result<PcapHeader, ReadError> {
    src.require(FILE_HEADER_LEN, 0, Part::FileHeader)?;
    let h = &src.available()[..FILE_HEADER_LEN];
    let major = order.u16(h, 4);
    let minor = order.u16(h, 6);
    let snaplen = order.u32(h, 16);
    let field = order.u32(h, 20);
    // libpcap reads 2.0 to 2.4, and DG/UX tcpdump's 543.0.
    if !(major == 2 && minor <= 4 || (major, minor) == (543, 0)) {
        return Err(ReadError::UnsupportedVersion { offset: 4, format: "pcap", major, minor });
    }
    if field & LT_RESERVED1_MASK != 0 {
        return Err(ReadError::LinktypeReserved { offset: 20, reserved: field & LT_RESERVED1_MASK });
    }
    // The FCS length is in 16-bit units (bits 28-31), valid only when bit 26 is set.
    let fcs_len = (field & LT_FCS_PRESENT != 0).then(|| ((field >> 28) * 2) as u8);
    src.consume(FILE_HEADER_LEN);
    Ok(PcapHeader {
        order,
        nanosecond,
        version: (major, minor),
        snaplen,
        linktype: field & LT_LINKTYPE_MASK,
        fcs_len,
    })
}

/// Where a record header keeps its two lengths. The fields were interchanged at version 2.3 to
/// match the bpf header: before it (and in DG/UX's 543.0) the original length comes first; some
/// 2.3 files were written in the old order, told by a captured length above the original one
/// (libpcap's lengths_swapped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LengthOrder {
    CaplenFirst,
    OrigFirst,
    Either,
}

impl LengthOrder {
    fn of(version: (u16, u16)) -> LengthOrder {
        match version {
            (2, minor) if minor < 3 => LengthOrder::OrigFirst,
            (2, 3) => LengthOrder::Either,
            (543, _) => LengthOrder::OrigFirst,
            _ => LengthOrder::CaplenFirst,
        }
    }

    /// (caplen, origlen) from the header's third and fourth fields.
    #[inline]
    fn read(self, third: u32, fourth: u32) -> (u32, u32) {
        match self {
            LengthOrder::CaplenFirst => (third, fourth),
            LengthOrder::OrigFirst => (fourth, third),
            LengthOrder::Either if third > fourth => (fourth, third),
            LengthOrder::Either => (third, fourth),
        }
    }
}

/// Per-file state for reading records.
pub struct PcapState {
    order: ByteOrder,
    /// Nanoseconds per unit of the sub-second field (1000 or 1).
    frac_ns: i64,
    /// First out-of-range sub-second value (1e6 or 1e9).
    frac_limit: u32,
    snaplen: u32,
    linktype: u32,
    lengths: LengthOrder,
}

impl PcapState {
    pub fn new(h: &PcapHeader, stats: &mut ContainerStats) -> PcapState {
        stats.interfaces.push(InterfaceInfo {
            section: 0,
            id: 0,
            linktype: h.linktype,
            snaplen: h.snaplen,
            tsresol: if h.nanosecond { 9 } else { 6 },
            tsoffset: 0,
            fcs_len: h.fcs_len,
            name: None,
        });
        PcapState {
            order: h.order,
            frac_ns: if h.nanosecond { 1 } else { 1000 },
            frac_limit: if h.nanosecond { 1_000_000_000 } else { 1_000_000 },
            snaplen: h.snaplen,
            linktype: h.linktype,
            lengths: LengthOrder::of(h.version),
        }
    }

    /// The next record: Ok(None) at a clean end (input ends exactly between records).
    #[inline]
    pub fn next(&mut self, src: &mut Source, stats: &mut ContainerStats) -> Result<Option<RecordMeta>, ReadError> {
        let offset = src.offset();
        if !src.ensure(RECORD_HEADER_LEN)? {
            let left = src.available().len();
            if left == 0 {
                return Ok(None);
            }
            return Err(ReadError::Truncated {
                offset,
                part: Part::RecordHeader,
                needed: RECORD_HEADER_LEN as u64,
                available: left as u64,
            });
        }
        // One 16-byte read, then four fields in the file's byte order (no per-byte checks).
        let mut h = [0u8; RECORD_HEADER_LEN];
        h.copy_from_slice(&src.available()[..RECORD_HEADER_LEN]);
        let big = self.order.is_big();
        let field = |at: usize| {
            let v = u32::from_le_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
            if big {
                v.swap_bytes()
            } else {
                v
            }
        };
        let (sec, frac) = (field(0), field(4));
        let (caplen, origlen) = self.lengths.read(field(8), field(12));
        if caplen > MAX_CAPLEN {
            return Err(ReadError::RecordTooLarge { offset, length: caplen as u64, limit: MAX_CAPLEN as u64 });
        }
        let total = RECORD_HEADER_LEN + caplen as usize;
        src.require(total, offset, Part::RecordData)?;
        let ts_valid = frac < self.frac_limit;
        // Counted without branches: these are almost always false.
        stats.ts_invalid += u64::from(!ts_valid);
        stats.caplen_gt_len += u64::from(caplen > origlen);
        stats.caplen_gt_snaplen += u64::from(self.snaplen != 0 && caplen > self.snaplen);
        Ok(Some(RecordMeta {
            // Kept as read even when the fraction is out of range (flagged, never "fixed").
            ts_ns: sec as i64 * 1_000_000_000 + frac as i64 * self.frac_ns,
            ts_valid,
            interface: 0,
            linktype: self.linktype,
            caplen,
            origlen,
            snaplen: self.snaplen,
            offset,
            data_start: RECORD_HEADER_LEN,
            consumed: total,
        }))
    }
}
