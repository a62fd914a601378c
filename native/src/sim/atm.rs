//! IP over ATM through a switch (docs/tcp-rules.md#atm-cells): CellSwitchBuffer is a switch
//! output port's cell buffer with no discard policy, PPD or EPD (Kung & Morris, "Discard
//! Policies"; docs/tcp-rules.md#atm-cell-discard), and AtmSwitchPath carries AAL5 PDUs from the
//! host's input link into that port. Integer nanoseconds, cell times rounded up, widened to i128
//! where a product can pass i64, so every platform computes the same times.

use super::engine::{Ns, NS_PER_S};
use super::link::DROP_EXCEEDS_MTU;
use super::segment::Segment;

pub const CELL_BYTES: i64 = 53;
pub const CELL_PAYLOAD: i64 = 48;
const LLC_SNAP: i64 = 8;
const AAL5_TRAILER: i64 = 8;

pub const REASON_CELL_LOSS: &str = "atm_cell_loss";
pub const REASON_PPD: &str = "atm_ppd";
pub const REASON_EPD: &str = "atm_epd";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    None,
    Ppd,
    Epd,
}

impl Policy {
    pub fn parse(name: &str) -> Option<Policy> {
        match name {
            "none" => Some(Policy::None),
            "ppd" => Some(Policy::Ppd),
            "epd" => Some(Policy::Epd),
            _ => None,
        }
    }
}

/// ceil((ip_len + LLC/SNAP header + AAL5 trailer) / 48): the cells of one datagram with RFC
/// 2684 LLC/SNAP encapsulation, as a host's ATM interface sends it.
pub fn aal5_cells(ip_len: u32) -> i64 {
    (i64::from(ip_len) + LLC_SNAP + AAL5_TRAILER + CELL_PAYLOAD - 1) / CELL_PAYLOAD
}

fn ceil_div(num: i128, den: i128) -> i64 {
    ((num + den - 1) / den) as i64
}

const CELL_BITS_NS: i128 = (CELL_BYTES as i128) * 8 * (NS_PER_S as i128);

/// cell_time_ns(rate): one 53-byte cell at `rate_bps`, rounded up.
pub fn cell_time_ns(rate_bps: i64) -> Ns {
    ceil_div(CELL_BITS_NS, i128::from(rate_bps))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PduFate {
    pub delivered: bool,
    pub cells_dropped: i64,
    pub cells_queued: i64,
    /// -1 when no cell of the PDU was accepted.
    pub last_cell_departure_ns: Ns,
    pub reason: Option<&'static str>,
}

#[derive(Clone, Debug)]
pub struct CellSwitchBuffer {
    pub capacity_cells: i64,
    pub policy: Policy,
    pub epd_threshold_cells: Option<i64>,
    pub out_cell_ns: Ns,
    pub last_departure: Ns,
    pub cells_in: i64,
    pub cells_dropped: i64,
    pub pdus_in: i64,
    pub pdus_lost: i64,
    pub max_occupancy: i64,
}

impl CellSwitchBuffer {
    pub fn new(capacity_cells: i64, out_rate_bps: i64, policy: Policy, epd_threshold_cells: Option<i64>) -> Result<Self, String> {
        if capacity_cells <= 0 {
            return Err(format!("capacity_cells must be positive, got {capacity_cells}"));
        }
        if let Some(t) = epd_threshold_cells {
            if !(0..=capacity_cells).contains(&t) {
                return Err(format!("epd_threshold_cells {t} outside 0..{capacity_cells}"));
            }
        }
        if out_rate_bps <= 0 {
            return Err(format!("cell rate must be positive, got {out_rate_bps}"));
        }
        Ok(CellSwitchBuffer {
            capacity_cells, policy, epd_threshold_cells, out_cell_ns: cell_time_ns(out_rate_bps), last_departure: 0,
            cells_in: 0, cells_dropped: 0, pdus_in: 0, pdus_lost: 0, max_occupancy: 0,
        })
    }

    /// Cells in the buffer (waiting or being sent) at `now`.
    pub fn occupancy(&self, now: Ns) -> i64 {
        let ahead = self.last_departure - now;
        if ahead > 0 { (ahead + self.out_cell_ns - 1) / self.out_cell_ns } else { 0 }
    }

    /// The first cell of an `n_cells` PDU starts arriving at `now`.
    pub fn offer_pdu(&mut self, now: Ns, n_cells: i64, in_rate_bps: i64) -> PduFate {
        self.pdus_in += 1;
        self.cells_in += n_cells;
        let rate = i128::from(in_rate_bps);
        let first_arrival = now + ceil_div(CELL_BITS_NS, rate);
        if self.policy == Policy::Epd {
            let threshold = self.epd_threshold_cells.unwrap_or((self.capacity_cells - n_cells).max(0));
            if self.occupancy(first_arrival) > threshold {
                return self.lost(n_cells, n_cells, 0, REASON_EPD);
            }
        }
        if self.occupancy(first_arrival) + n_cells <= self.capacity_cells {
            return self.accept_whole(now, n_cells, in_rate_bps);
        }
        let (mut dropped, mut queued, mut discarding) = (0, 0, false);
        let out = self.out_cell_ns;
        for i in 0..n_cells {
            let t = now + ceil_div(i128::from(i + 1) * CELL_BITS_NS, rate);
            let last = i == n_cells - 1;
            let occ = self.occupancy(t);
            let room = occ < self.capacity_cells;
            if room && (!discarding || last) {
                self.last_departure = t.max(self.last_departure) + out;
                queued += 1;
                if occ + 1 > self.max_occupancy {
                    self.max_occupancy = occ + 1;
                }
            } else {
                dropped += 1;
                if self.policy != Policy::None {
                    discarding = true;
                }
            }
        }
        if dropped == 0 {
            return PduFate { delivered: true, cells_dropped: 0, cells_queued: queued, last_cell_departure_ns: self.last_departure, reason: None };
        }
        let reason = if self.policy == Policy::None { REASON_CELL_LOSS } else { REASON_PPD };
        self.lost(n_cells, dropped, queued, reason)
    }

    /// The closed form of `offer_pdu`'s per-cell loop when the PDU cannot overflow the buffer.
    fn accept_whole(&mut self, now: Ns, n_cells: i64, in_rate_bps: i64) -> PduFate {
        let rate = i128::from(in_rate_bps);
        let out = self.out_cell_ns;
        let first = now + ceil_div(CELL_BITS_NS, rate);
        let last = now + ceil_div(i128::from(n_cells) * CELL_BITS_NS, rate);
        let start_occ = self.occupancy(first);
        let end = (self.last_departure + n_cells * out).max(first + n_cells * out).max(last + out);
        self.last_departure = end;
        let peak = (start_occ + 1).max((end - last + out - 1).div_euclid(out));
        if peak > self.max_occupancy {
            self.max_occupancy = peak;
        }
        PduFate { delivered: true, cells_dropped: 0, cells_queued: n_cells, last_cell_departure_ns: end, reason: None }
    }

    fn lost(&mut self, _n_cells: i64, dropped: i64, queued: i64, reason: &'static str) -> PduFate {
        self.pdus_lost += 1;
        self.cells_dropped += dropped;
        let departure = if queued > 0 { self.last_departure } else { -1 };
        PduFate { delivered: false, cells_dropped: dropped, cells_queued: queued, last_cell_departure_ns: departure, reason: Some(reason) }
    }
}

/// One AAL5 PDU offered to the switch port (when its first cell got there) and its fate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PduRecord {
    pub at_ns: Ns,
    pub uid: u64,
    pub cells: i64,
    pub fate: PduFate,
}

/// What the path does with a datagram: one scheduled event either way, its delivery at the far
/// end or its drop, logged when the PDU's last cell has reached the switch.
#[derive(Debug, PartialEq, Eq)]
pub enum AtmVerdict {
    DeliverAt(Ns),
    DropAt(Ns, &'static str),
}

/// AtmSwitchPath: host --(input link)--> switch port --(output port)--> far end.
#[derive(Clone, Debug)]
pub struct AtmSwitchPath {
    pub name: String,
    pub in_rate_bps: i64,
    pub in_delay_ns: Ns,
    pub switch: CellSwitchBuffer,
    pub out_delay_ns: Ns,
    pub mtu: u32,
    pub in_busy: Ns,
    pub pdus: Vec<PduRecord>,
}

impl AtmSwitchPath {
    pub fn new(name: String, in_rate_bps: i64, in_delay_ns: Ns, switch: CellSwitchBuffer, out_delay_ns: Ns, mtu: u32) -> Self {
        AtmSwitchPath { name, in_rate_bps, in_delay_ns, switch, out_delay_ns, mtu, in_busy: 0, pdus: Vec::new() }
    }

    pub fn receive(&mut self, now: Ns, seg: &Segment) -> AtmVerdict {
        let ip_len = seg.ip_len();
        if ip_len > self.mtu {
            return AtmVerdict::DropAt(now, DROP_EXCEEDS_MTU);
        }
        let cells = aal5_cells(ip_len);
        let start = now.max(self.in_busy);
        self.in_busy = start + ceil_div(i128::from(cells) * CELL_BITS_NS, i128::from(self.in_rate_bps));
        let at_switch = start + self.in_delay_ns;
        let fate = self.switch.offer_pdu(at_switch, cells, self.in_rate_bps);
        self.pdus.push(PduRecord { at_ns: at_switch, uid: seg.uid, cells, fate });
        if fate.delivered {
            AtmVerdict::DeliverAt(fate.last_cell_departure_ns + self.out_delay_ns)
        } else {
            AtmVerdict::DropAt(self.in_busy + self.in_delay_ns, fate.reason.unwrap_or(REASON_CELL_LOSS))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_and_cell_time() {
        assert_eq!(aal5_cells(9180), 192);
        assert_eq!(aal5_cells(32), 1);
        assert_eq!(aal5_cells(33), 2);
        assert_eq!(cell_time_ns(149_760_000), 2832); // ceil(424e9 / 149.76e6)
    }

    #[test]
    fn big_buffer_accepts_whole_and_small_one_overflows() {
        let mut big = CellSwitchBuffer::new(10_000, 50_000_000, Policy::None, None).unwrap();
        let f = big.offer_pdu(0, 100, 150_000_000);
        assert!(f.delivered && f.cells_queued == 100 && f.last_cell_departure_ns > 0);
        let mut small = CellSwitchBuffer::new(10, 50_000_000, Policy::None, None).unwrap();
        let f = small.offer_pdu(0, 100, 150_000_000);
        assert!(!f.delivered && f.reason == Some(REASON_CELL_LOSS) && f.cells_dropped + f.cells_queued == 100);
        let mut ppd = CellSwitchBuffer::new(10, 50_000_000, Policy::Ppd, None).unwrap();
        let p = ppd.offer_pdu(0, 100, 150_000_000);
        // PPD drops the tail after the first loss but keeps the end-of-PDU cell: fewer queued cells.
        assert!(p.reason == Some(REASON_PPD) && p.cells_queued < f.cells_queued);
    }

    #[test]
    fn epd_refuses_a_pdu_at_its_first_cell() {
        let mut epd = CellSwitchBuffer::new(200, 50_000_000, Policy::Epd, None).unwrap();
        assert!(epd.offer_pdu(0, 150, 150_000_000).delivered);
        let f = epd.offer_pdu(0, 150, 150_000_000);
        assert_eq!((f.delivered, f.cells_queued, f.last_cell_departure_ns, f.reason), (false, 0, -1, Some(REASON_EPD)));
    }
}
