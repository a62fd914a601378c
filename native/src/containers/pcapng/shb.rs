//! Section header block: byte order, version, start of a new section.

use crate::containers::byte_order::ByteOrder;
use crate::containers::error::{Part, ReadError};
use crate::containers::pcapng::{block_len_ok, options, MAX_BLOCK};
use crate::containers::source::Source;

pub const MIN_LEN: u32 = 28;
const BOM: u32 = 0x1a2b_3c4d;

/// Reads a whole SHB at the current position and returns the section's byte order. The block
/// stays buffered; the caller consumes `len` bytes (returned too).
pub fn read(src: &mut Source, first: bool) -> Result<(ByteOrder, usize), ReadError> {
    let offset = src.offset();
    let header_part = if first { Part::FileHeader } else { Part::BlockHeader };
    src.require(12, offset, header_part)?;
    let b = src.available();
    let order = match ByteOrder::Little.u32(b, 8) {
        BOM => ByteOrder::Little,
        x if x.swap_bytes() == BOM => ByteOrder::Big,
        x => {
            return Err(ReadError::Corrupt {
                offset: offset + 8,
                detail: format!("section header byte-order magic 0x{x:08x} is neither 0x1a2b3c4d nor swapped"),
            })
        }
    };
    let len = order.u32(b, 4);
    block_len_ok(offset, 0x0a0d_0d0a, len, MIN_LEN)?;
    if len > MAX_BLOCK {
        return Err(ReadError::RecordTooLarge { offset, length: len as u64, limit: MAX_BLOCK as u64 });
    }
    let len = len as usize;
    src.require(len, offset, if first { Part::FileHeader } else { Part::BlockBody })?;
    let b = &src.available()[..len];
    let (major, minor) = (order.u16(b, 12), order.u16(b, 14));
    if (major, minor) != (1, 0) {
        return Err(ReadError::UnsupportedVersion { offset: offset + 12, format: "pcapng", major, minor });
    }
    crate::containers::pcapng::trailer_ok(b, order, offset)?;
    // Options (shb_hardware, shb_os, shb_userappl) are not needed, but must be well formed.
    options::for_each(&b[24..len - 4], order, offset + 24, |_, _, _| Ok(()))?;
    Ok((order, len))
}
