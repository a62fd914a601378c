//! Loss stages in front of a link: Bernoulli, Gilbert-Elliott and "lose exactly the n-th
//! packets". The random models draw from the run's generator in a fixed order per packet (the
//! Gilbert-Elliott state change, then the loss), so a seed loses the same packets every run.

use super::rng::SimRng;
use super::segment::Segment;

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
}

impl LossModel {
    pub fn lose(&mut self, rng: &mut SimRng) -> bool {
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
        let hit = self.model.lose(rng);
        self.lost += u64::from(hit);
        hit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nth_loses_exactly_the_listed_packets() {
        let mut rng = SimRng::from_seed(1);
        let mut m = LossModel::Nth { indices: vec![2, 4], offered: 0 };
        let got: Vec<bool> = (0..5).map(|_| m.lose(&mut rng)).collect();
        assert_eq!(got, vec![false, true, false, true, false]);
    }

    #[test]
    fn data_only_spares_pure_acks() {
        let mut rng = SimRng::from_seed(1);
        let mut s = LossStage { model: LossModel::Random { p: 1.0 }, reason: REASON_RANDOM_LOSS, place: "x".into(), data_only: true, offered: 0, lost: 0 };
        assert!(!s.drops(&mut rng, &Segment::default()));
        assert!(s.drops(&mut rng, &Segment { payload_len: 1, ..Default::default() }));
    }
}
