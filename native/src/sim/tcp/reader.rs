//! When the receiving application reads (docs/tcp-rules.md#small-sender-inference): a reader asleep
//! in soreceive is woken by sorwakeup when a segment arrives, but runs only once the host has
//! dispatched it; it copies what the socket buffer holds at that moment (segments that arrived
//! meanwhile included) and only then calls PRU_RCVD, i.e. tcp_output and its window-update tests.
//! With an immediate reader every segment is read and tested alone; with this model the number of
//! segments that arrive between two window-update decisions depends on where the reader's
//! dispatch falls relative to the segment arrivals, which is what Tru64's small-sender inference
//! sees (Mogul section 9).
//!
//! The model is per receiving host and link (`for_link`): a fixed dispatch time, a copy rate, and
//! a rare, heavy-tailed wait for other work on the CPU; every draw comes from the host's own
//! generator, seeded from the run's seed, so a run is deterministic.

use crate::sim::engine::Ns;
use crate::sim::rng::SimRng;

const NS_PER_US: Ns = 1_000;

/// One host/link pair's read scheduling (the values and their sources: docs/tcp-rules.md#small-sender-inference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadScheduling {
    pub link: &'static str,
    /// sorwakeup (from tcp_input, inside the receive interrupt's work) to the reader running in
    /// soreceive: the rest of that frame's input work, the context switch, the return from tsleep.
    pub dispatch_ns: Ns,
    /// soreceive's uiomove to the user buffer, per 1024 bytes, before PRU_RCVD.
    pub copy_ns_per_kib: Ns,
    /// Chance per wakeup, in millionths, that the CPU is running other kernel or daemon work the
    /// reader must wait for; the wait is then heavy-tailed (Pareto, shape 1) from `busy_min_ns`,
    /// capped at `busy_max_ns`.
    pub busy_ppm: u32,
    pub busy_min_ns: Ns,
    pub busy_max_ns: Ns,
}

/// Tru64 UNIX V4.0F on an Alpha, as Mogul's hosts ran it. The host's part (copy rate, other
/// work) is the same on both links; the dispatch includes the link driver's per-frame work.
pub const TRU64_ETHERNET10: ReadScheduling = ReadScheduling {
    link: "ethernet10",
    dispatch_ns: 30 * NS_PER_US,
    copy_ns_per_kib: 10 * NS_PER_US,
    busy_ppm: 1_000,
    busy_min_ns: 100 * NS_PER_US,
    busy_max_ns: 10_000 * NS_PER_US,
};

pub const TRU64_FDDI: ReadScheduling = ReadScheduling { link: "fddi", dispatch_ns: 40 * NS_PER_US, ..TRU64_ETHERNET10 };

static MODELS: [&ReadScheduling; 2] = [&TRU64_ETHERNET10, &TRU64_FDDI];

/// The read scheduling of a receiving Tru64 host on a link preset, None where none is modelled
/// (the reader then runs at once, as everywhere else in the simulator).
pub fn for_link(link: &str) -> Option<&'static ReadScheduling> {
    MODELS.iter().copied().find(|m| m.link == link)
}

/// A host's reader: its parameters and its own generator.
#[derive(Clone, Debug)]
pub struct Reader {
    pub sched: &'static ReadScheduling,
    rng: SimRng,
}

impl Reader {
    pub fn new(sched: &'static ReadScheduling, seed: i64) -> Reader {
        Reader { sched, rng: SimRng::from_seed(seed) }
    }

    /// From sorwakeup to the reader running: the dispatch and, now and then, a wait for other
    /// work. One draw per wakeup, a second when the CPU is busy; integer arithmetic only.
    pub fn wakeup_ns(&mut self) -> Ns {
        let s = self.sched;
        if (self.rng.randrange(1_000_000) as u32) >= s.busy_ppm {
            return s.dispatch_ns;
        }
        // Pareto with shape 1: P(wait > x) = busy_min / x, by inverse transform of u in (0, 1].
        let u = self.rng.randrange(1 << 32) as i128 + 1;
        let wait = (i128::from(s.busy_min_ns) << 32) / u;
        s.dispatch_ns + (wait as Ns).min(s.busy_max_ns)
    }

    /// soreceive's copy of `bytes` to the user buffer.
    pub fn copy_ns(&self, bytes: i64) -> Ns {
        (bytes * self.sched.copy_ns_per_kib).div_euclid(1024)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_by_link() {
        assert_eq!(for_link("fddi").unwrap().link, "fddi");
        assert_eq!(for_link("ethernet10").unwrap().dispatch_ns, 30 * NS_PER_US);
        assert!(for_link("atm140").is_none());
    }

    #[test]
    fn wakeups_are_seeded_and_mostly_the_dispatch() {
        let draws = |seed| {
            let mut r = Reader::new(&TRU64_FDDI, seed);
            (0..200_000).map(|_| r.wakeup_ns()).collect::<Vec<_>>()
        };
        let a = draws(7);
        assert_eq!(a, draws(7));
        assert_ne!(a, draws(8));
        let d = TRU64_FDDI.dispatch_ns;
        assert!(a.iter().all(|&w| (d..=d + TRU64_FDDI.busy_max_ns).contains(&w)));
        // about 1000 per million wait for other work, at least 100 us, half of them at least 200 us
        let busy = a.iter().filter(|&&w| w > d).count();
        let long = a.iter().filter(|&&w| w >= d + 200 * NS_PER_US).count();
        assert!((150..250).contains(&busy), "{busy}");
        assert!(busy / 3 < long && long < 2 * busy / 3, "{long} of {busy}");
    }

    #[test]
    fn copy_time_is_per_byte() {
        let r = Reader::new(&TRU64_ETHERNET10, 1);
        assert_eq!(r.copy_ns(1024), 10 * NS_PER_US);
        assert_eq!(r.copy_ns(4312), 42_109);
        assert_eq!(r.copy_ns(0), 0);
    }
}
