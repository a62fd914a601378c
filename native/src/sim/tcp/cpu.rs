//! A host's CPU under the cost model: simulate/tcp/cpu.py. Kernel work runs in order on its own
//! timeline and pre-empts application copies; frames wait in the receive FIFO until input.

use std::collections::VecDeque;

use super::costs::HostCost;
use crate::sim::engine::Ns;
use crate::sim::net::{Event, Net};
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
    pub fn process(&mut self, net: &mut Net, index: u8, now: Ns, cost: Ns, job: CpuJob) {
        let start = now.max(self.pfree).max(self.kfree);
        let done = start + cost;
        self.pfree = done;
        let snap = self.stolen;
        net.schedule(done, Event::Host(index, HostEvent::Cpu { snap, job }));
    }

    /// _process_fire: Some(job) when the work is done, None when kernel time pushed it back.
    pub fn process_fire(&mut self, net: &mut Net, index: u8, now: Ns, snap: Ns, job: CpuJob) -> Option<CpuJob> {
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
