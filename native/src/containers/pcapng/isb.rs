//! Interface statistics block: the capture's own drop counters (cumulative per interface).

use crate::containers::byte_order::ByteOrder;
use crate::containers::error::ReadError;
use crate::containers::pcapng::options;

pub const MIN_LEN: usize = 24;
const OPT_ISB_IFDROP: u16 = 4;
const OPT_ISB_OSDROP: u16 = 7;

#[derive(Debug, Clone, Copy, Default)]
pub struct Isb {
    pub interface: u32,
    pub if_drop: Option<u64>,
    pub os_drop: Option<u64>,
}

pub fn parse(b: &[u8], order: ByteOrder, offset: u64) -> Result<Isb, ReadError> {
    let mut isb = Isb { interface: order.u32(b, 8), ..Isb::default() };
    options::for_each(&b[20..b.len() - 4], order, offset + 20, |code, value, at| {
        match code {
            OPT_ISB_IFDROP => isb.if_drop = Some(order.u64(&options::fixed::<8>(code, value, at)?, 0)),
            OPT_ISB_OSDROP => isb.os_drop = Some(order.u64(&options::fixed::<8>(code, value, at)?, 0)),
            _ => {}
        }
        Ok(())
    })?;
    Ok(isb)
}
