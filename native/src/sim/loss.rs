//! Loss attribution for the drops a run without impairments can have (link queue
//! overflow, MTU, receive FIFO): when a retransmission timeout fires, name how the loss came about
//! from the drops of the same flow since the previous answer plus the drops of the named uids.

use super::ground_truth::{Cause, Drop};
use super::net::HostIndex;

/// Drop reason -> (cause, detail), in priority order for mixed episodes: a path that cannot
/// carry the segment at all explains the stall before any loss pattern does. One packet of a
/// congestion kind becomes a single loss.
const BY_REASON: [(&str, Cause, Option<&str>); 11] = [
    ("pmtu_blackhole", Cause::PmtuBlackhole, None),
    ("pmtu_frag_needed", Cause::PmtuBlackhole, None),
    // A host whose interface MTU is larger than its own link carries loses every larger segment
    // silently, as a black hole further along does: the same stall, at the first hop.
    ("exceeds_mtu", Cause::PmtuBlackhole, Some("interface_mtu")),
    ("jumbo_slot_exhaustion", Cause::JumboSlotExhaustion, None),
    ("atm_cell_loss", Cause::BurstLossTimeout, Some("atm_cell_loss")),
    ("atm_ppd", Cause::BurstLossTimeout, Some("atm_cell_loss")),
    ("atm_epd", Cause::BurstLossTimeout, Some("queue_overflow")),
    ("queue_overflow", Cause::BurstLossTimeout, Some("queue_overflow")),
    ("random_loss", Cause::BurstLossTimeout, None),
    ("gilbert_loss", Cause::BurstLossTimeout, None),
    ("injected_loss", Cause::BurstLossTimeout, None),
];

fn structural(c: Cause) -> bool {
    matches!(c, Cause::PmtuBlackhole | Cause::MssMismatch | Cause::JumboSlotExhaustion)
}

/// One segment -> single loss, several -> burst (what a host assumes with no drop log).
pub fn default_classification(uids: &[u64]) -> (Cause, Option<&'static str>) {
    if uids.len() <= 1 {
        (Cause::SingleLossTimeout, None)
    } else {
        (Cause::BurstLossTimeout, Some("queue_overflow"))
    }
}

/// A uid's host: every host numbers its segments from its own uid base (a bulk run's 0 and
/// 1 << 40, a naglemark trial's k << 32 per host), so the bits above 32 tell whose segment a drop was.
pub const HOST_UID_SHIFT: u32 = 32;

/// A timeout none of whose segments was dropped, so the data arrived: lost ACKs of the peer
/// since the previous answer make it an ack_loss_timeout, nothing lost a spurious_timeout.
fn no_data_lost(acks_lost: usize) -> (Cause, Option<&'static str>) {
    if acks_lost > 0 {
        (Cause::AckLossTimeout, None)
    } else {
        (Cause::SpuriousTimeout, None)
    }
}

/// The classifier's memory over one run's drop log: per flow (sending host), how far into the
/// log drops were already attributed to an earlier timeout, and how far the peers' pure ACKs were
/// counted.
#[derive(Debug, Default, Clone)]
pub struct LossClassifier {
    seen: Vec<usize>,
    acks_seen: usize,
}

impl LossClassifier {
    /// Pure ACKs of other hosts dropped since the previous count.
    fn acks_lost(&mut self, drops: &[Drop], uids: &[u64]) -> usize {
        let start = std::mem::replace(&mut self.acks_seen, drops.len());
        let Some(&first) = uids.first() else {
            return 0;
        };
        let host = first >> HOST_UID_SHIFT;
        drops[start.min(drops.len())..].iter().filter(|d| d.payload_len == 0 && d.uid >> HOST_UID_SHIFT != host).count()
    }

    pub fn classify(&mut self, drops: &[Drop], uids: &[u64]) -> (Cause, Option<&'static str>) {
        // A uid dropped more than once counts by its latest drop.
        let mut named: Vec<usize> = Vec::new();
        for &u in uids {
            if let Some(i) = drops.iter().rposition(|d| d.uid == u) {
                named.push(i);
            }
        }
        let acks_lost = self.acks_lost(drops, uids);
        if !uids.is_empty() && named.is_empty() {
            // None of the resent segments was dropped: the data was delivered.
            return no_data_lost(acks_lost);
        }
        let mut flows: Vec<HostIndex> = named.iter().map(|&i| drops[i].flow_src).collect();
        flows.sort_unstable();
        flows.dedup();
        let seen = |f: HostIndex, s: &[usize]| s.get(usize::from(f)).copied().unwrap_or(0);
        let mut episode: Vec<usize> = named.clone();
        for (i, d) in drops.iter().enumerate() {
            if flows.contains(&d.flow_src) && i >= seen(d.flow_src, &self.seen) {
                episode.push(i);
            }
        }
        for &f in &flows {
            let f = usize::from(f);
            if self.seen.len() <= f {
                self.seen.resize(f + 1, 0);
            }
            self.seen[f] = drops.len();
        }
        episode.sort_unstable();
        episode.dedup();
        if episode.is_empty() {
            return default_classification(uids);
        }
        let Some(&(_, cause, detail)) =
            BY_REASON.iter().find(|(r, _, _)| episode.iter().any(|&i| drops[i].reason == *r))
        else {
            return default_classification(uids);
        };
        let mut packets: Vec<(HostIndex, i64)> = episode.iter().map(|&i| (drops[i].flow_src, drops[i].seq)).collect();
        packets.sort_unstable();
        packets.dedup();
        if !structural(cause) && packets.len() == 1 {
            return (Cause::SingleLossTimeout, None);
        }
        (cause, detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drop(uid: u64, seq: i64, reason: &'static str) -> Drop {
        Drop { at_ns: 0, uid, reason, place: "l".into(), flow_src: 0, seq, payload_len: 1, ip_len: 41 }
    }

    #[test]
    fn one_lost_packet_is_a_single_loss() {
        let drops = vec![drop(5, 100, "queue_overflow")];
        let mut c = LossClassifier::default();
        assert_eq!(c.classify(&drops, &[5]), (Cause::SingleLossTimeout, None));
    }

    #[test]
    fn an_episode_counts_fresh_drops_of_the_flow_once() {
        let mut drops = vec![drop(5, 100, "queue_overflow"), drop(6, 200, "queue_overflow")];
        let mut c = LossClassifier::default();
        assert_eq!(c.classify(&drops, &[5]), (Cause::BurstLossTimeout, Some("queue_overflow")));
        drops.push(drop(7, 300, "queue_overflow"));
        // Only uid 7 is fresh now: a single loss.
        assert_eq!(c.classify(&drops, &[7]), (Cause::SingleLossTimeout, None));
    }

    #[test]
    fn mtu_drops_are_structural() {
        let drops = vec![drop(9, 100, "exceeds_mtu")];
        assert_eq!(
            LossClassifier::default().classify(&drops, &[9]),
            (Cause::PmtuBlackhole, Some("interface_mtu"))
        );
    }

    /// A 1000-byte data segment of the host `flow_src`, dropped at `at_ns`.
    fn lost(at_ns: i64, flow_src: HostIndex, uid: u64, seq: i64, reason: &'static str) -> Drop {
        Drop { at_ns, uid, reason, place: "link".into(), flow_src, seq, payload_len: 1000, ip_len: 1040 }
    }

    #[test]
    fn cell_loss_in_two_packets_is_a_burst_with_atm_detail() {
        let drops = vec![lost(10, 0, 1, 0, "atm_cell_loss"), lost(12, 0, 2, 1000, "atm_ppd")];
        assert_eq!(LossClassifier::default().classify(&drops, &[1]), (Cause::BurstLossTimeout, Some("atm_cell_loss")));
    }

    #[test]
    fn several_overflows_are_a_queue_overflow_burst() {
        let drops: Vec<Drop> = (0..3).map(|i| lost(5 + i, 0, 1 + i as u64, 1000 * i, "queue_overflow")).collect();
        assert_eq!(
            LossClassifier::default().classify(&drops, &[1, 2, 3]),
            (Cause::BurstLossTimeout, Some("queue_overflow"))
        );
    }

    #[test]
    fn structural_causes_win_even_for_one_packet() {
        let one = |reason| LossClassifier::default().classify(&[lost(1, 0, 1, 0, reason)], &[1]).0;
        assert_eq!(one("jumbo_slot_exhaustion"), Cause::JumboSlotExhaustion);
        assert_eq!(one("pmtu_blackhole"), Cause::PmtuBlackhole);
        assert_eq!(one("exceeds_mtu"), Cause::PmtuBlackhole);
        let mixed = vec![lost(1, 0, 1, 0, "queue_overflow"), lost(2, 0, 2, 1000, "jumbo_slot_exhaustion")];
        assert_eq!(LossClassifier::default().classify(&mixed, &[1]), (Cause::JumboSlotExhaustion, None));
    }

    #[test]
    fn retransmissions_of_the_same_segment_count_as_one_packet() {
        let drops = vec![lost(1, 0, 1, 0, "queue_overflow"), lost(900, 0, 7, 0, "queue_overflow")];
        assert_eq!(LossClassifier::default().classify(&drops, &[7]), (Cause::SingleLossTimeout, None));
    }

    #[test]
    fn other_flows_do_not_leak_in_and_nothing_lost_is_spurious() {
        let drops = vec![lost(1, 0, 1, 0, "queue_overflow"), lost(2, 1, 2, 0, "queue_overflow")];
        assert_eq!(LossClassifier::default().classify(&drops, &[1]), (Cause::SingleLossTimeout, None));
        // None of the timed-out segments dropped and nothing lost at all: the RTO was spurious.
        let mut empty = LossClassifier::default();
        assert_eq!(empty.classify(&[], &[5]), (Cause::SpuriousTimeout, None));
        assert_eq!(empty.classify(&[], &[5, 6]), (Cause::SpuriousTimeout, None));
    }

    #[test]
    fn a_timeout_whose_data_arrived_but_whose_acks_were_lost_is_an_ack_loss() {
        // A pure ACK of the peer (uid base 1 << 40) lost on the reverse path.
        let ack = || Drop { payload_len: 0, ip_len: 40, ..lost(1, 1, (1 << 40) + 7, 0, "random_loss") };
        let mut drops = vec![ack()];
        let mut c = LossClassifier::default();
        assert_eq!(c.classify(&drops, &[5, 6]), (Cause::AckLossTimeout, None));
        // The lost ACK explained one timeout; the next with nothing new lost is spurious.
        assert_eq!(c.classify(&drops, &[7]), (Cause::SpuriousTimeout, None));
        // A dropped data segment among the timed-out ones stays a loss, whatever ACKs were lost.
        drops.push(ack());
        drops.push(lost(3, 0, 8, 0, "queue_overflow"));
        assert_eq!(c.classify(&drops, &[8]), (Cause::SingleLossTimeout, None));
    }

    #[test]
    fn a_timeout_on_one_flow_leaves_the_other_flows_drops_for_its_own_timeout() {
        let drops = vec![
            lost(1, 0, 1, 0, "atm_cell_loss"),
            lost(2, 1, 2, 0, "queue_overflow"),
            lost(3, 1, 3, 1000, "queue_overflow"),
        ];
        let mut c = LossClassifier::default();
        assert_eq!(c.classify(&drops, &[1]), (Cause::SingleLossTimeout, None));
        // flow 1's timeout still sees both of its drops although they were logged earlier
        assert_eq!(c.classify(&drops, &[2]), (Cause::BurstLossTimeout, Some("queue_overflow")));
    }
}
