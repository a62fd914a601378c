//! A host's CPU under the cost model (costs.rs). Kernel work runs in order on its own timeline
//! and pre-empts application copies; frames wait in the receive FIFO until input.

use std::collections::VecDeque;

use super::costs::HostCost;
use crate::sim::engine::Ns;
use crate::sim::net::{Event, HostIndex, Net};
use crate::sim::tcp::host::{CpuJob, HostEvent};

pub struct HostCpu {
    pub cost: HostCost,
    kfree: Ns,
    pfree: Ns,
    stolen: Ns,
    rx: VecDeque<(Ns, i64)>,
    rx_bytes: i64,
}

impl HostCpu {
    pub fn new(cost: HostCost) -> HostCpu {
        HostCpu { cost, kfree: 0, pfree: 0, stolen: 0, rx: VecDeque::new(), rx_bytes: 0 }
    }

    /// Run `cost` ns of kernel work; returns when it is done.
    pub fn kernel(&mut self, now: Ns, cost: Ns) -> Ns {
        let done = now.max(self.kfree) + cost;
        self.kfree = done;
        self.stolen += cost;
        done
    }

    /// Application-level work: `job` completes when it has had `cost` ns of CPU.
    pub fn process(&mut self, net: &mut Net, index: HostIndex, now: Ns, cost: Ns, job: CpuJob) {
        let start = now.max(self.pfree).max(self.kfree);
        let done = start + cost;
        self.pfree = done;
        let snap = self.stolen;
        net.schedule(done, Event::Host(index, HostEvent::Cpu { snap, job }));
    }

    /// Application work reached its planned end: Some(job) when it is done, None when kernel
    /// work since it was planned pushed it back (it is then rescheduled).
    pub fn process_fire(&mut self, net: &mut Net, index: HostIndex, now: Ns, snap: Ns, job: CpuJob) -> Option<CpuJob> {
        let extra = self.stolen - snap;
        if extra > 0 {
            self.pfree = self.pfree.max(now + extra);
            net.schedule(now + extra, Event::Host(index, HostEvent::Cpu { snap: snap + extra, job }));
            return None;
        }
        Some(job)
    }

    pub fn input_cost(&self, net: &mut Net, payload: i64) -> Ns {
        let mut cost = self.cost.input_ns(payload);
        if self.cost.input_jitter_ns != 0 {
            cost += net.rng.randrange((self.cost.input_jitter_ns + 1) as u64) as i64;
        }
        cost
    }

    /// Does a frame of `ip_len` bytes fit the receive FIFO at `now`?
    pub fn rx_admit(&mut self, now: Ns, ip_len: i64) -> bool {
        let Some(fifo) = self.cost.rx_fifo_bytes else { return true };
        while let Some(&(at, n)) = self.rx.front() {
            if at > now {
                break;
            }
            self.rx.pop_front();
            self.rx_bytes -= n;
        }
        self.rx_bytes + ip_len <= fifo
    }

    /// The frame occupies the FIFO until kernel input is done with it.
    pub fn rx_hold(&mut self, done: Ns, ip_len: i64) {
        if self.cost.rx_fifo_bytes.is_some() {
            self.rx.push_back((done, ip_len));
            self.rx_bytes += ip_len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::rng::SimRng;
    use crate::sim::tcp::costs::SUN_IPX;

    fn net() -> Net {
        Net::new(SimRng::from_seed(1))
    }

    #[test]
    fn kernel_work_pushes_an_application_copy_back() {
        let mut net = net();
        let mut cpu = HostCpu::new(SUN_IPX);
        cpu.process(&mut net, 0, 0, 1000, CpuJob::Copied(10));
        assert_eq!(cpu.kernel(100, 300), 400); // kernel work pre-empts the copy
        assert_eq!(cpu.kernel(200, 50), 450); // and runs in order
        let (at, ev) = net.queue.pop(i64::MAX).unwrap();
        let Event::Host(0, HostEvent::Cpu { snap, job }) = ev else { panic!("{ev:?}") };
        assert_eq!((at, snap), (1000, 0));
        assert_eq!(cpu.process_fire(&mut net, 0, at, snap, job), None, "350 ns stolen: not done yet");
        let (at, ev) = net.queue.pop(i64::MAX).unwrap();
        let Event::Host(0, HostEvent::Cpu { snap, job }) = ev else { panic!("{ev:?}") };
        assert_eq!((at, snap), (1350, 350));
        assert_eq!(cpu.process_fire(&mut net, 0, at, snap, job), Some(CpuJob::Copied(10)));
    }

    #[test]
    fn the_receive_fifo_holds_frames_until_input_is_done() {
        let mut cpu = HostCpu::new(SUN_IPX);
        assert!(cpu.rx_admit(0, 20_000));
        cpu.rx_hold(1_000, 20_000);
        assert!(!cpu.rx_admit(500, 9_000), "28 KB FIFO: 20 KB + 9 KB does not fit");
        assert!(cpu.rx_admit(1_000, 9_000), "the first frame left at 1000");
        let mut free = HostCpu::new(crate::sim::tcp::costs::FREE);
        free.rx_hold(10, 1 << 40);
        assert!(free.rx_admit(0, 1 << 40), "no FIFO without rx_fifo_bytes");
    }

    #[test]
    fn input_jitter_draws_from_the_run_generator() {
        let mut a = net();
        let mut b = SimRng::from_seed(1);
        let cpu = HostCpu::new(SUN_IPX);
        let cost = cpu.input_cost(&mut a, 1024);
        assert_eq!(cost, 100_000 + 200_000 + b.randrange(300_001) as i64);
    }
}
