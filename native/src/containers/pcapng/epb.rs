//! Enhanced packet block.

use crate::containers::byte_order::ByteOrder;
use crate::containers::error::ReadError;
use crate::containers::pcapng::options;
use crate::containers::pcapng::packet_fields::{check_caplen, options_start, PacketFields};

pub const MIN_LEN: usize = 32;
const DATA_START: usize = 28;
const OPT_EPB_FLAGS: u16 = 2;
const OPT_EPB_DROPCOUNT: u16 = 4;

#[inline]
pub fn parse(b: &[u8], order: ByteOrder, offset: u64) -> Result<PacketFields, ReadError> {
    let caplen = order.u32(b, 20);
    check_caplen(b.len(), DATA_START, caplen, offset)?;
    let mut f = PacketFields {
        interface: order.u32(b, 8),
        ts_units: Some(((order.u32(b, 12) as u64) << 32) | order.u32(b, 16) as u64),
        caplen,
        origlen: order.u32(b, 24),
        data_start: DATA_START,
        flags: None,
        drops: 0,
    };
    let opts = options_start(DATA_START, caplen);
    if opts < b.len() - 4 {
        options::for_each(&b[opts..b.len() - 4], order, offset + opts as u64, |code, value, at| {
            match code {
                OPT_EPB_FLAGS => f.flags = Some(order.u32(&options::fixed::<4>(code, value, at)?, 0)),
                OPT_EPB_DROPCOUNT => f.drops = order.u64(&options::fixed::<8>(code, value, at)?, 0),
                _ => {}
            }
            Ok(())
        })?;
    }
    Ok(f)
}
