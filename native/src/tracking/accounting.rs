//! Where every record went: a TCP packet, not TCP (by reason) or not decoded (by reason), plus
//! how many TCP packets carried each anomaly. `records == tcp_packets + Σ not_tcp + Σ not_decoded`
//! holds after every call to `count`.

use crate::wire::outcome::{Dissection, NotDecoded, NotTcp, Outcome};
use crate::wire::packet::anomaly;

/// Anomaly bits and their stable names (the packet table's `anomalies` column uses these bits).
pub const ANOMALY_NAMES: [(u32, &str); 9] = [
    (anomaly::TS_INVALID, "ts_invalid"),
    (anomaly::CAPLEN_GT_LEN, "caplen_gt_len"),
    (anomaly::CAPLEN_GT_SNAPLEN, "caplen_gt_snaplen"),
    (anomaly::SUPERFRAME, "superframe"),
    (anomaly::PAYLOAD_TRUNCATED, "payload_truncated"),
    (anomaly::BAD_OPTION, "bad_option"),
    (anomaly::WSCALE_CLAMPED, "wscale_clamped"),
    (anomaly::IP_LENGTH_MISMATCH, "ip_length_mismatch"),
    (anomaly::OPTIONS_TRUNCATED, "options_truncated"),
];

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Accounting {
    pub records: u64,
    pub tcp_packets: u64,
    pub not_tcp: [u64; NotTcp::COUNT],
    pub not_decoded: [u64; NotDecoded::COUNT],
    /// TCP packets per anomaly, indexed like `ANOMALY_NAMES`.
    pub anomalies: [u64; ANOMALY_NAMES.len()],
}

impl Accounting {
    pub fn new() -> Self {
        Self::default()
    }

    /// Count one record's outcome.
    pub fn count(&mut self, d: &Dissection) {
        match d {
            Dissection::Tcp(p) => self.count_outcome(Outcome::Tcp, p.anomalies),
            Dissection::NotTcp(r) => self.count_outcome(Outcome::NotTcp(*r), 0),
            Dissection::NotDecoded(r) => self.count_outcome(Outcome::NotDecoded(*r), 0),
        }
    }

    /// Count one record from `dissect_into`; `anomalies` is the packet's bits when it is TCP.
    #[inline]
    pub fn count_outcome(&mut self, o: Outcome, anomalies: u32) {
        self.records += 1;
        match o {
            Outcome::Tcp => {
                self.tcp_packets += 1;
                if anomalies != 0 {
                    for (i, (bit, _)) in ANOMALY_NAMES.iter().enumerate() {
                        if anomalies & bit != 0 {
                            self.anomalies[i] += 1;
                        }
                    }
                }
            }
            Outcome::NotTcp(r) => self.not_tcp[r as usize] += 1,
            Outcome::NotDecoded(r) => self.not_decoded[r as usize] += 1,
        }
    }

    pub fn not_tcp_total(&self) -> u64 {
        self.not_tcp.iter().sum()
    }

    pub fn not_decoded_total(&self) -> u64 {
        self.not_decoded.iter().sum()
    }

    /// The invariant: every record ended in exactly one place.
    pub fn balanced(&self) -> bool {
        self.records == self.tcp_packets + self.not_tcp_total() + self.not_decoded_total()
    }

    /// Non-zero reasons with their names, in the enums' declaration order (stable).
    pub fn not_tcp_by_reason(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        NotTcp::ALL.iter().map(|r| (r.name(), self.not_tcp[*r as usize])).filter(|(_, n)| *n > 0)
    }

    pub fn not_decoded_by_reason(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        NotDecoded::ALL.iter().map(|r| (r.name(), self.not_decoded[*r as usize])).filter(|(_, n)| *n > 0)
    }

    pub fn anomalies_by_name(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        ANOMALY_NAMES.iter().zip(self.anomalies.iter()).map(|((_, name), n)| (*name, *n)).filter(|(_, n)| *n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::packet::TcpPacket;

    #[test]
    fn enum_indices_match_all_tables() {
        for (i, r) in NotTcp::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
        }
        for (i, r) in NotDecoded::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
        }
    }

    #[test]
    fn every_outcome_counted_once() {
        let mut a = Accounting::new();
        let p = TcpPacket { anomalies: anomaly::SUPERFRAME | anomaly::BAD_OPTION, ..TcpPacket::default() };
        a.count(&Dissection::Tcp(p));
        a.count(&Dissection::NotTcp(NotTcp::Udp));
        a.count(&Dissection::NotTcp(NotTcp::Udp));
        a.count(&Dissection::NotDecoded(NotDecoded::IpFragment));
        assert!(a.balanced());
        assert_eq!((a.records, a.tcp_packets), (4, 1));
        assert_eq!(a.not_tcp_by_reason().collect::<Vec<_>>(), vec![("udp", 2)]);
        assert_eq!(a.not_decoded_by_reason().collect::<Vec<_>>(), vec![("ip_fragment", 1)]);
        assert_eq!(a.anomalies_by_name().collect::<Vec<_>>(), vec![("superframe", 1), ("bad_option", 1)]);
    }
}
