//! PLACEHOLDER by the world developer with the contract's signatures (todo!() bodies); the host
//! developer owns and replaces this file with the port of simulate/tcp/host.py.
#![allow(unused_variables)]

use crate::sim::app::App;
use crate::sim::engine::Ns;
use crate::sim::ground_truth::Stall;
use crate::sim::net::Net;
use crate::sim::segment::Segment;

#[derive(Debug)]
pub enum HostEvent {
    Placeholder,
}

pub struct Host {
    pub index: u8,
    pub app: App,
    pub segments_sent: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub maxseg: u32,
    pub sndbuf: u32,
    pub rcvbuf: u32,
    pub rx_drops: Vec<(Ns, u64)>,
    pub icmp_mss_changes: u64,
    pub aborted_at: Option<Ns>,
    pub stopped: bool,
    pub stalls: Vec<Stall>,
}

impl Host {
    pub fn listen(&mut self) {
        todo!()
    }
    pub fn connect(&mut self, net: &mut Net, now: Ns) {
        todo!()
    }
    pub fn write(&mut self, net: &mut Net, now: Ns, nbytes: u64, eom: bool) {
        todo!()
    }
    pub fn read(&mut self, net: &mut Net, now: Ns, maxbytes: u64) {
        todo!()
    }
    pub fn close(&mut self, net: &mut Net, now: Ns) {
        todo!()
    }
    pub fn idle_app(&mut self) {
        todo!()
    }
    pub fn stop(&mut self, net: &mut Net) {
        todo!()
    }
    pub fn receive(&mut self, net: &mut Net, now: Ns, seg: Segment) {
        todo!()
    }
    pub fn handle(&mut self, net: &mut Net, now: Ns, ev: HostEvent) {
        todo!()
    }
}
