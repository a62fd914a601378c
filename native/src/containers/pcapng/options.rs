//! pcapng options: (code, length, value padded to 4 bytes) up to opt_endofopt or the block end.

use crate::containers::byte_order::ByteOrder;
use crate::containers::error::ReadError;

pub const OPT_ENDOFOPT: u16 = 0;

/// Calls `f(code, value, value_offset)` for each option in `region`, which starts at absolute
/// offset `region_offset`. An option running past the region is a typed error, never a panic.
#[inline]
pub fn for_each<'a>(
    region: &'a [u8],
    order: ByteOrder,
    region_offset: u64,
    mut f: impl FnMut(u16, &'a [u8], u64) -> Result<(), ReadError>,
) -> Result<(), ReadError> {
    let mut pos = 0usize;
    while pos < region.len() {
        let at = region_offset + pos as u64;
        if region.len() - pos < 4 {
            return Err(ReadError::BadOption { offset: at, code: 0, length: 0 });
        }
        let code = order.u16(region, pos);
        let length = order.u16(region, pos + 2);
        if code == OPT_ENDOFOPT {
            return Ok(());
        }
        let start = pos + 4;
        let padded = (length as usize + 3) & !3;
        if padded > region.len() - start {
            return Err(ReadError::BadOption { offset: at, code, length });
        }
        f(code, &region[start..start + length as usize], at)?;
        pos = start + padded;
    }
    Ok(())
}

/// A fixed-size option value, or the typed error naming the option.
#[inline]
pub fn fixed<const N: usize>(code: u16, value: &[u8], at: u64) -> Result<[u8; N], ReadError> {
    value.try_into().map_err(|_| ReadError::BadOption { offset: at, code, length: value.len() as u16 })
}
