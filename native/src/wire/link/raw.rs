//! Raw IP without a link header: LINKTYPE_RAW (101, and the historical 12 / 14) carries IPv4 or
//! IPv6 told apart by the version nibble; LINKTYPE_IPV4 (228) and LINKTYPE_IPV6 (229) carry one.

use super::{LinkResult, L3};
use crate::wire::outcome::{NotDecoded, Skip};

pub fn strip_any(data: &[u8]) -> LinkResult<'_> {
    match data.first().map(|b| b >> 4) {
        Some(4) => Ok(L3::V4(data)),
        Some(6) => Ok(L3::V6(data)),
        Some(_) => Err(Skip::NotDecoded(NotDecoded::BadIpVersion)),
        None => Err(Skip::NotDecoded(NotDecoded::TruncatedIpHeader)),
    }
}

/// The IP layer checks the version nibble, so these only pick the parser.
pub fn strip_v4(data: &[u8]) -> LinkResult<'_> {
    Ok(L3::V4(data))
}

pub fn strip_v6(data: &[u8]) -> LinkResult<'_> {
    Ok(L3::V6(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_nibble_decides() {
        assert_eq!(strip_any(&[0x45, 0]), Ok(L3::V4(&[0x45, 0][..])));
        assert_eq!(strip_any(&[0x60, 0]), Ok(L3::V6(&[0x60, 0][..])));
        assert_eq!(strip_any(&[0x50]), Err(Skip::NotDecoded(NotDecoded::BadIpVersion)));
        assert_eq!(strip_any(&[]), Err(Skip::NotDecoded(NotDecoded::TruncatedIpHeader)));
        assert_eq!(strip_v6(&[0x60]), Ok(L3::V6(&[0x60][..])));
    }
}
