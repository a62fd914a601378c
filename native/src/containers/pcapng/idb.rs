//! Interface description block: link type, snaplen, timestamp resolution and offset.

use crate::containers::byte_order::ByteOrder;
use crate::containers::error::ReadError;
use crate::containers::pcapng::options;

pub const MIN_LEN: usize = 20;
const OPT_IF_NAME: u16 = 2;
const OPT_IF_TSRESOL: u16 = 9;
const OPT_IF_FCSLEN: u16 = 13;
const OPT_IF_TSOFFSET: u16 = 14;

/// How raw timestamp units become nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TsScale {
    /// 10^-n s with n <= 9: multiply by 10^(9-n).
    Mul(i128),
    /// 10^-n s with 9 < n <= 19: divide by 10^(n-9) (rounds toward zero).
    Div(i128),
    /// 2^-n s: ns = units * 1e9 >> n.
    Shift(u32),
}

impl TsScale {
    /// Checked mapping of if_tsresol; exponents that cannot be represented are refused so that
    /// nothing ever divides by zero or overflows.
    pub fn from_tsresol(v: u8, at: u64) -> Result<TsScale, ReadError> {
        let n = (v & 0x7f) as u32;
        if v & 0x80 != 0 {
            if n > 63 {
                return Err(ReadError::BadTsResolution { offset: at, value: v });
            }
            return Ok(TsScale::Shift(n));
        }
        match n {
            0..=9 => Ok(TsScale::Mul(10i128.pow(9 - n))),
            10..=19 => Ok(TsScale::Div(10i128.pow(n - 9))),
            _ => Err(ReadError::BadTsResolution { offset: at, value: v }),
        }
    }

    #[inline]
    pub fn to_ns(self, units: u64) -> i128 {
        match self {
            TsScale::Mul(m) => units as i128 * m,
            TsScale::Div(d) => units as i128 / d,
            TsScale::Shift(s) => (units as i128 * 1_000_000_000) >> s,
        }
    }
}

/// One IDB's contents.
#[derive(Debug, Clone)]
pub struct Idb {
    pub linktype: u32,
    pub snaplen: u32,
    pub tsresol: u8,
    pub scale: TsScale,
    pub tsoffset: i64,
    pub fcs_len: Option<u8>,
    pub name: Option<String>,
}

/// Parses a whole IDB (`b` = the block including header and trailer, length already checked).
pub fn parse(b: &[u8], order: ByteOrder, offset: u64) -> Result<Idb, ReadError> {
    let mut idb = Idb {
        linktype: order.u16(b, 8) as u32,
        snaplen: order.u32(b, 12),
        tsresol: 6,
        scale: TsScale::Mul(1000),
        tsoffset: 0,
        fcs_len: None,
        name: None,
    };
    options::for_each(&b[16..b.len() - 4], order, offset + 16, |code, value, at| {
        match code {
            OPT_IF_NAME => idb.name = Some(String::from_utf8_lossy(value).into_owned()),
            OPT_IF_TSRESOL => {
                let [v] = options::fixed::<1>(code, value, at)?;
                idb.scale = TsScale::from_tsresol(v, at)?;
                idb.tsresol = v;
            }
            OPT_IF_FCSLEN => idb.fcs_len = Some(options::fixed::<1>(code, value, at)?[0]),
            OPT_IF_TSOFFSET => idb.tsoffset = order.u64(&options::fixed::<8>(code, value, at)?, 0) as i64,
            _ => {}
        }
        Ok(())
    })?;
    Ok(idb)
}
