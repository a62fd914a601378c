//! Obsolete packet block (type 2): like the EPB with a 16-bit interface id and a drops count.

use crate::containers::byte_order::ByteOrder;
use crate::containers::error::ReadError;
use crate::containers::pcapng::options;
use crate::containers::pcapng::packet_fields::{check_caplen, options_start, PacketFields};

pub const MIN_LEN: usize = 32;
const DATA_START: usize = 28;
const OPT_PACK_FLAGS: u16 = 2;
/// drops_count 0xFFFF means "not known".
const DROPS_UNKNOWN: u16 = 0xffff;

pub fn parse(b: &[u8], order: ByteOrder, offset: u64) -> Result<PacketFields, ReadError> {
    let caplen = order.u32(b, 20);
    check_caplen(b.len(), DATA_START, caplen, offset)?;
    let drops = order.u16(b, 10);
    let mut f = PacketFields {
        interface: order.u16(b, 8) as u32,
        ts_units: Some(((order.u32(b, 12) as u64) << 32) | order.u32(b, 16) as u64),
        caplen,
        origlen: order.u32(b, 24),
        data_start: DATA_START,
        flags: None,
        drops: if drops == DROPS_UNKNOWN { 0 } else { drops as u64 },
    };
    let opts = options_start(DATA_START, caplen);
    if opts < b.len() - 4 {
        options::for_each(&b[opts..b.len() - 4], order, offset + opts as u64, |code, value, at| {
            if code == OPT_PACK_FLAGS {
                f.flags = Some(order.u32(&options::fixed::<4>(code, value, at)?, 0));
            }
            Ok(())
        })?;
    }
    Ok(f)
}
