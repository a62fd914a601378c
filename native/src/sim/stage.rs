//! Loss stages in front of a link: Bernoulli, Gilbert-Elliott, "lose exactly the n-th
//! packets", and the segment-exact replay of a trace's losses ("lose the k-th transmission of the
//! data segment starting at byte s", "lose the k-th pure ACK carrying ack number a"). The random
//! models draw from the run's generator in a fixed order per packet (the Gilbert-Elliott state
//! change, then the loss), so a seed loses the same packets every run; the others draw nothing.

use std::collections::BTreeMap;

use super::rng::SimRng;
use super::segment::{Segment, ACK, FIN, RST, SYN};

pub const REASON_RANDOM_LOSS: &str = "random_loss";
pub const REASON_GILBERT_LOSS: &str = "gilbert_loss";
pub const REASON_INJECTED_LOSS: &str = "injected_loss";

#[derive(Clone, Debug)]
pub enum LossModel {
    /// Each packet lost with probability p (Bernoulli).
    Random { p: f64 },
    /// A two-state channel: good to bad with p_gb, bad to good with p_bg, then a loss with the
    /// state's probability.
    Gilbert { p_gb: f64, p_bg: f64, loss_good: f64, loss_bad: f64, bad: bool },
    /// The packets at these 1-based positions among those offered.
    Nth { indices: Vec<u64>, offered: u64 },
    /// Named transmissions of named segments: a data segment whose first byte is at `base` + s
    /// (for the forward path, `base` is the sender's ISN + 1, so s is the byte's offset in the
    /// stream) is lost on its k-th transmission when (s, k) was listed.
    Segments(Replay),
    /// Named pure ACKs (no data, no SYN, FIN or RST; window updates count): one whose ack number
    /// is `base` + a is lost on its k-th transmission when (a, k) was listed.
    Acks(Replay),
}

/// The (position, transmission number k >= 1) pairs a replay model loses, and how many times
/// each listed position has been offered so far.
#[derive(Clone, Debug, Default)]
pub struct Replay {
    pub base: i64,
    /// Position relative to `base` -> (the transmission numbers to lose, transmissions seen).
    targets: BTreeMap<i64, (Vec<u32>, u32)>,
}

impl Replay {
    pub fn new(base: i64, pairs: &[(i64, u32)]) -> Replay {
        let mut targets: BTreeMap<i64, (Vec<u32>, u32)> = BTreeMap::new();
        for &(pos, k) in pairs {
            targets.entry(pos).or_default().0.push(k);
        }
        Replay { base, targets }
    }

    /// One more transmission at absolute position `at`: whether it is one of the listed.
    fn offer(&mut self, at: i64) -> bool {
        match self.targets.get_mut(&(at - self.base)) {
            None => false,
            Some((ks, seen)) => {
                *seen += 1;
                ks.contains(seen)
            }
        }
    }
}

impl LossModel {
    /// Whether the model loses `seg` (the random models ignore it and draw).
    pub fn lose(&mut self, rng: &mut SimRng, seg: &Segment) -> bool {
        match self {
            LossModel::Random { p } => rng.random() < *p,
            LossModel::Gilbert { p_gb, p_bg, loss_good, loss_bad, bad } => {
                let flip = if *bad { *p_bg } else { *p_gb };
                if rng.random() < flip {
                    *bad = !*bad;
                }
                rng.random() < if *bad { *loss_bad } else { *loss_good }
            }
            LossModel::Nth { indices, offered } => {
                *offered += 1;
                indices.contains(offered)
            }
            LossModel::Segments(r) => seg.payload_len > 0 && r.offer(seg.seq),
            LossModel::Acks(r) => is_pure_ack(seg) && r.offer(seg.ack),
        }
    }
}

/// LossStage: drops what its model loses (only data segments with `data_only`).
#[derive(Clone, Debug)]
pub struct LossStage {
    pub model: LossModel,
    pub reason: &'static str,
    pub place: String,
    pub data_only: bool,
    /// The packets the model was offered and the ones it lost.
    pub offered: u64,
    pub lost: u64,
}

impl LossStage {
    pub fn drops(&mut self, rng: &mut SimRng, seg: &Segment) -> bool {
        if self.data_only && seg.payload_len == 0 {
            return false;
        }
        self.offered += 1;
        let hit = self.model.lose(rng, seg);
        self.lost += u64::from(hit);
        hit
    }
}

/// A segment carrying nothing but its acknowledgment (window updates included).
fn is_pure_ack(seg: &Segment) -> bool {
    seg.payload_len == 0 && seg.flags & ACK != 0 && seg.flags & (SYN | FIN | RST) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nth_loses_exactly_the_listed_packets() {
        let mut rng = SimRng::from_seed(1);
        let mut m = LossModel::Nth { indices: vec![2, 4], offered: 0 };
        let got: Vec<bool> = (0..5).map(|_| m.lose(&mut rng, &Segment::default())).collect();
        assert_eq!(got, vec![false, true, false, true, false]);
    }

    fn data(seq: i64, len: u32) -> Segment {
        Segment { seq, payload_len: len, flags: ACK, ..Default::default() }
    }

    #[test]
    fn segments_lose_the_named_transmissions_only() {
        let mut rng = SimRng::from_seed(1);
        // base 1001: the stream's byte 0 is sequence number 1001 (ISN 1000).
        let mut m = LossModel::Segments(Replay::new(1001, &[(0, 1), (1000, 2), (1000, 3)]));
        let sent = [data(1001, 1000), data(2001, 1000), data(1001, 1000), data(2001, 1000), data(2001, 1000), data(2001, 1000)];
        let got: Vec<bool> = sent.iter().map(|s| m.lose(&mut rng, s)).collect();
        assert_eq!(got, vec![true, false, false, true, true, false]);
    }

    #[test]
    fn segments_ignore_other_boundaries_and_pure_acks() {
        let mut rng = SimRng::from_seed(1);
        let mut m = LossModel::Segments(Replay::new(1, &[(0, 1)]));
        // A segment starting inside the named one, and a pure ACK at its sequence number: neither counts.
        assert!(!m.lose(&mut rng, &data(2, 100)));
        assert!(!m.lose(&mut rng, &data(1, 0)));
        assert!(m.lose(&mut rng, &data(1, 1460)));
        assert!(!m.lose(&mut rng, &data(1, 1460)));
    }

    #[test]
    fn acks_lose_the_kth_pure_ack_of_an_ack_number() {
        let mut rng = SimRng::from_seed(1);
        let ack = |a: i64, flags: u8, len: u32| Segment { ack: a, flags, payload_len: len, ..Default::default() };
        // Lose the second ACK of byte 2920 (the first duplicate), relative to base 101.
        let mut m = LossModel::Acks(Replay::new(101, &[(2920, 2)]));
        assert!(!m.lose(&mut rng, &ack(3021, ACK, 0)));
        assert!(!m.lose(&mut rng, &ack(3021, ACK | FIN, 0))); // a FIN is not a pure ACK
        assert!(!m.lose(&mut rng, &ack(3021, ACK, 10))); // nor is data
        assert!(m.lose(&mut rng, &ack(3021, ACK, 0)));
        assert!(!m.lose(&mut rng, &ack(3021, ACK, 0)));
    }

    #[test]
    fn replay_draws_nothing() {
        let mut a = SimRng::from_seed(7);
        let mut b = SimRng::from_seed(7);
        let mut m = LossModel::Segments(Replay::new(0, &[(0, 1)]));
        assert!(m.lose(&mut a, &data(0, 1)));
        assert_eq!(a.random(), b.random());
    }

    #[test]
    fn data_only_spares_pure_acks() {
        let mut rng = SimRng::from_seed(1);
        let mut s = LossStage { model: LossModel::Random { p: 1.0 }, reason: REASON_RANDOM_LOSS, place: "x".into(), data_only: true, offered: 0, lost: 0 };
        assert!(!s.drops(&mut rng, &Segment::default()));
        assert!(s.drops(&mut rng, &Segment { payload_len: 1, ..Default::default() }));
    }
}
