//! Packetization-layer path MTU discovery (RFC 4821) as Linux's tcp_mtu_probe does it
//! (docs/tcp-rules.md#path-mtu). MTUs count the IP and TCP headers (40 bytes, no options on data).

pub const HEADERS: i64 = 40;
pub const PROBE_THRESHOLD: i64 = 8;
pub const REORDERING: i64 = 3;
pub const MIN_CWND_SEGMENTS: i64 = 11;

#[derive(Clone, Debug)]
pub struct MtuSearch {
    pub search_low: i64,
    pub search_high: i64,
    pub headers: i64,
    /// (MTU, first seq, end seq) of the probe in flight.
    pub probe: Option<(i64, i64, i64)>,
}

/// new_search (tcp_mtup_init): high from the negotiated MSS, low from tcp_base_mss.
/// `headers`: the data segments' IP and TCP header bytes (52 with the timestamp option).
pub fn new_search(mss_clamp: i64, base_mss: i64, headers: i64) -> MtuSearch {
    MtuSearch { search_low: base_mss + headers, search_high: mss_clamp + HEADERS, headers, probe: None }
}

/// probe_size: the next probe's payload, or None when the search is over.
pub fn probe_size(st: &MtuSearch) -> Option<i64> {
    let size = (st.search_high + st.search_low).div_euclid(2) - st.headers;
    if size > st.search_high - st.headers || st.search_high - st.search_low < PROBE_THRESHOLD {
        None
    } else {
        Some(size)
    }
}

/// succeeded (tcp_mtup_probe_success): returns the new MSS.
pub fn succeeded(st: &mut MtuSearch) -> i64 {
    let probe = st.probe.take().expect("a probe in flight");
    st.search_low = probe.0;
    st.search_low - st.headers
}

/// failed (tcp_mtup_probe_failed).
pub fn failed(st: &mut MtuSearch) {
    let probe = st.probe.take().expect("a probe in flight");
    st.search_high = probe.0 - 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_towards_the_hole() {
        let mut st = new_search(8960, 1024, HEADERS);
        assert_eq!(probe_size(&st), Some(4992));
        st.probe = Some((4992 + HEADERS, 0, 4992));
        failed(&mut st);
        assert_eq!(probe_size(&st), Some(3007));
        st.probe = Some((1271 + HEADERS, 0, 1271));
        assert_eq!(succeeded(&mut st), 1271);
    }
}
