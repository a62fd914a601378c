//! Simple packet block: original length and data only, always interface 0, no timestamp.

use crate::containers::byte_order::ByteOrder;
use crate::containers::error::ReadError;
use crate::containers::pcapng::packet_fields::{check_caplen, PacketFields};

pub const MIN_LEN: usize = 16;
const DATA_START: usize = 12;

/// `snaplen` is interface 0's; the captured length is min(original length, snaplen).
pub fn parse(b: &[u8], order: ByteOrder, offset: u64, snaplen: u32) -> Result<PacketFields, ReadError> {
    let origlen = order.u32(b, 8);
    let caplen = if snaplen != 0 { origlen.min(snaplen) } else { origlen };
    check_caplen(b.len(), DATA_START, caplen, offset)?;
    Ok(PacketFields {
        interface: 0,
        ts_units: None,
        caplen,
        origlen,
        data_start: DATA_START,
        flags: None,
        drops: 0,
    })
}
