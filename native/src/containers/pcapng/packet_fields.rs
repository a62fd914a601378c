//! What each packet block type (EPB, SPB, OPB) yields, before the interface is applied.

use crate::containers::error::ReadError;
use crate::containers::record::MAX_CAPLEN;

#[derive(Debug, Clone, Copy)]
pub struct PacketFields {
    pub interface: u32,
    /// Raw timestamp units (None for the SPB, which has no timestamp).
    pub ts_units: Option<u64>,
    pub caplen: u32,
    pub origlen: u32,
    /// Offset of the packet bytes from the block start.
    pub data_start: usize,
    /// epb_flags / pack_flags when present (direction, reception type, FCS length, errors).
    pub flags: Option<u32>,
    /// epb_dropcount, or the OPB drops count (0 when absent/unknown).
    pub drops: u64,
}

/// Checks that `caplen` bytes (padded to 4) fit between `data_start` and the trailer, and that
/// they stay under the per-record cap (refused before they are handed on).
#[inline]
pub fn check_caplen(block_len: usize, data_start: usize, caplen: u32, offset: u64) -> Result<(), ReadError> {
    if caplen > MAX_CAPLEN {
        return Err(ReadError::RecordTooLarge { offset, length: caplen as u64, limit: MAX_CAPLEN as u64 });
    }
    let padded = (caplen as usize + 3) & !3;
    if data_start + padded + 4 > block_len {
        return Err(ReadError::Corrupt {
            offset,
            detail: format!(
                "captured length {caplen} does not fit in a packet block of total length {block_len}"
            ),
        });
    }
    Ok(())
}

/// Where the options of a packet block start.
#[inline]
pub fn options_start(data_start: usize, caplen: u32) -> usize {
    data_start + ((caplen as usize + 3) & !3)
}
