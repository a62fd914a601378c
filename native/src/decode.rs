//! The decode pipeline: container records -> dissection -> accounting -> connection tracking,
//! streamed in bounded steps. `drive` is the one loop; the packet table and the connection
//! table are both built from it.

use crate::tracking::accounting::Accounting;
use crate::wire::dissect::dissect_into;
use crate::wire::outcome::Outcome;
use crate::containers::error::ReadError;
use crate::tracking::flows::{FlowInfo, FlowTracker};
use crate::wire::packet::TcpPacket;
use crate::containers::reader::CaptureReader;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriveStatus {
    /// The input ended cleanly; no more records.
    Ended,
    /// `max_packets` TCP packets were handed to the callback; call again to continue.
    Paused,
}

/// Read records until `max_packets` TCP packets went to `f` or the input ends. Every record is
/// counted in `acct`; on a container error the packets before it have already been handed out
/// and counted, and the error is returned (the reader is then finished).
pub fn drive<F: FnMut(&TcpPacket, &FlowInfo)>(
    reader: &mut CaptureReader,
    tracker: &mut FlowTracker,
    acct: &mut Accounting,
    max_packets: usize,
    mut f: F,
) -> Result<DriveStatus, ReadError> {
    dissect_records(reader, acct, max_packets, |p| {
        let info = tracker.assign(p);
        f(p, &info);
    })
}

/// `drive` before connection tracking: each TCP packet goes to `f` as dissected.
#[inline]
fn dissect_records<F: FnMut(&TcpPacket)>(
    reader: &mut CaptureReader,
    acct: &mut Accounting,
    max_packets: usize,
    mut f: F,
) -> Result<DriveStatus, ReadError> {
    let mut handed = 0;
    // One packet buffer reused for every record: no per-packet copies or allocation.
    let mut p = TcpPacket::default();
    while handed < max_packets {
        let Some(rec) = reader.next_record()? else {
            return Ok(DriveStatus::Ended);
        };
        let outcome = dissect_into(&rec, &mut p);
        acct.count_outcome(outcome, p.anomalies);
        if outcome == Outcome::Tcp {
            f(&p);
            handed += 1;
        }
    }
    Ok(DriveStatus::Paused)
}

/// Packets per hand-over in `drive_pipelined` (about 160 KB: L2-resident on both sides, and
/// few enough hand-overs that thread wake-ups do not matter).
const PIPE_CHUNK: usize = 1024;
/// Chunks waiting before the reading thread stops to work through them itself.
const HELP_AFTER: usize = 3;

/// Tracking and the caller's `f`: what the second thread of `drive_pipelined` runs.
struct Sink<'a, F> {
    tracker: &'a mut FlowTracker,
    f: F,
}

struct Queue {
    chunks: std::collections::VecDeque<Vec<TcpPacket>>,
    spare: Vec<Vec<TcpPacket>>,
    done: bool,
}

/// `drive` on two threads: this one reads, dissects and counts records; a helper thread
/// tracks connections and runs `f` (building the packet table's columns), the packets handed
/// over in chunks. When the helper falls behind (on a busy machine it may get no core for a
/// while), this thread works through the waiting chunks itself, so the result never waits long
/// on the helper's time slices. Chunks are taken in order by whoever holds the sink, so the
/// packets, their order and the result are those of `drive`; the helper is joined before this
/// returns, so every packet before an error has been through `f`.
pub fn drive_pipelined<F: FnMut(&TcpPacket, &FlowInfo) + Send>(
    reader: &mut CaptureReader,
    tracker: &mut FlowTracker,
    acct: &mut Accounting,
    max_packets: usize,
    f: F,
) -> Result<DriveStatus, ReadError> {
    use std::sync::{Condvar, Mutex};
    let queue = Mutex::new(Queue { chunks: Default::default(), spare: Vec::new(), done: false });
    let ready = Condvar::new();
    let sink = Mutex::new(Sink { tracker, f });
    // Runs queued chunks, oldest first, while the caller holds the sink; returns when none wait.
    let drain = |sink: &mut Sink<'_, F>| loop {
        let Some(mut chunk) = queue.lock().ok().and_then(|mut q| q.chunks.pop_front()) else { return };
        for p in &chunk {
            let info = sink.tracker.assign(p);
            (sink.f)(p, &info);
        }
        chunk.clear();
        if let Ok(mut q) = queue.lock() {
            q.spare.push(chunk);
        }
    };
    std::thread::scope(|s| {
        s.spawn(|| loop {
            {
                let Ok(mut q) = queue.lock() else { return };
                while q.chunks.is_empty() && !q.done {
                    q = match ready.wait(q) {
                        Ok(q) => q,
                        Err(_) => return,
                    };
                }
                if q.chunks.is_empty() {
                    return;
                }
            }
            if let Ok(mut sk) = sink.lock() {
                drain(&mut sk);
            }
        });
        let mut chunk: Vec<TcpPacket> = Vec::with_capacity(PIPE_CHUNK);
        let hand_over = |chunk: &mut Vec<TcpPacket>| {
            let waiting = match queue.lock() {
                Ok(mut q) => {
                    let next = q.spare.pop().unwrap_or_else(|| Vec::with_capacity(PIPE_CHUNK));
                    q.chunks.push_back(std::mem::replace(chunk, next));
                    q.chunks.len()
                }
                // The helper panicked; the scope re-raises that panic.
                Err(_) => 0,
            };
            ready.notify_one();
            if waiting > HELP_AFTER {
                if let Ok(mut sk) = sink.try_lock() {
                    drain(&mut sk);
                }
            }
        };
        let res = dissect_records(reader, acct, max_packets, |p| {
            chunk.push(p.clone());
            if chunk.len() == PIPE_CHUNK {
                hand_over(&mut chunk);
            }
        });
        if !chunk.is_empty() {
            hand_over(&mut chunk);
        }
        if let Ok(mut q) = queue.lock() {
            q.done = true;
        }
        ready.notify_all();
        // Whatever is still queued is run here rather than waiting for the helper to get a core.
        if let Ok(mut sk) = sink.lock() {
            drain(&mut sk);
        }
        res
    })
}

/// Chooses per batch between `drive` and `drive_pipelined` by their measured cost. Two threads
/// win when a second core is free and lose badly when it is not (on a busy machine the
/// threads wait on each other's time slices), so the choice follows the measured wall time
/// per packet of each mode, re-trying the other mode every `PROBE_EVERY` batches.
#[derive(Debug, Default, Clone)]
pub struct ThreadChoice {
    batches: u64,
    /// Smoothed wall nanoseconds per packet: [one thread, two threads].
    cost: [Option<f64>; 2],
}

const PROBE_EVERY: u64 = 16;

/// Whether a core looks free right now: Linux's count of runnable threads (/proc/loadavg,
/// which includes the caller) is below the cores available. Elsewhere, or if unreadable, true
/// (the measured choice alone decides). A second thread on a machine whose cores are all busy
/// only waits for time slices, and probing that costs more than it can win.
pub fn spare_core() -> bool {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match std::fs::read_to_string("/proc/loadavg") {
        Ok(s) => runnable_of_loadavg(&s).is_none_or(|running| running < cores),
        Err(_) => true,
    }
}

/// The runnable count of a /proc/loadavg line ("0.50 0.40 0.30 2/123 4567" -> 2).
fn runnable_of_loadavg(s: &str) -> Option<usize> {
    s.split_whitespace().nth(3)?.split('/').next()?.parse().ok()
}
/// Batches smaller than this are neither worth a second thread nor a reliable measurement.
pub const PIPELINE_MIN_ROWS: usize = 4096;

impl ThreadChoice {
    pub const fn new() -> Self {
        ThreadChoice { batches: 0, cost: [None, None] }
    }

    /// Whether the next batch of `rows` packets should use two threads.
    pub fn pipelined(&self, rows: usize) -> bool {
        if rows < PIPELINE_MIN_ROWS || std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            return false;
        }
        match self.cost {
            [None, _] => false,
            [_, None] => true,
            [Some(one), Some(two)] => (two < one) != self.batches.is_multiple_of(PROBE_EVERY),
        }
    }

    /// Records how long a batch of `packets` took with the mode `pipelined` chose.
    pub fn record(&mut self, pipelined: bool, packets: usize, wall: std::time::Duration) {
        if packets < PIPELINE_MIN_ROWS {
            return;
        }
        let ns = wall.as_nanos() as f64 / packets as f64;
        let slot = &mut self.cost[usize::from(pipelined)];
        *slot = Some(slot.map_or(ns, |old| (old + ns) / 2.0));
        self.batches += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A little-endian microsecond pcap with the given Ethernet frames.
    pub(crate) fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes());
        v.extend_from_slice(&2u16.to_le_bytes());
        v.extend_from_slice(&4u16.to_le_bytes());
        v.extend_from_slice(&[0u8; 8]);
        v.extend_from_slice(&65535u32.to_le_bytes());
        v.extend_from_slice(&1u32.to_le_bytes());
        for (i, f) in frames.iter().enumerate() {
            v.extend_from_slice(&(1_000 + i as u32).to_le_bytes());
            v.extend_from_slice(&(i as u32 * 10).to_le_bytes());
            v.extend_from_slice(&(f.len() as u32).to_le_bytes());
            v.extend_from_slice(&(f.len() as u32).to_le_bytes());
            v.extend_from_slice(f);
        }
        v
    }

    fn tcp_frame(sport: u16, seq: u32, flags: u8) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x08, 0x00]);
        f.extend_from_slice(&[0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend_from_slice(&sport.to_be_bytes());
        f.extend_from_slice(&80u16.to_be_bytes());
        f.extend_from_slice(&seq.to_be_bytes());
        f.extend_from_slice(&[0, 0, 0, 0, 0x50, flags, 0x10, 0x00, 0, 0, 0, 0]);
        f
    }

    #[test]
    fn drive_pauses_resumes_and_counts_everything() {
        let mut udp = tcp_frame(1, 1, 2);
        udp[23] = 17;
        let frames = vec![tcp_frame(1000, 5, 0x02), udp, tcp_frame(1000, 6, 0x10), vec![0u8; 10], tcp_frame(1000, 7, 0x10)];
        let mut r = CaptureReader::from_bytes(pcap(&frames)).unwrap();
        let mut t = FlowTracker::new();
        let mut a = Accounting::new();
        let mut seqs = Vec::new();
        let s = drive(&mut r, &mut t, &mut a, 2, |p, fi| seqs.push((p.frame, p.seq, fi.seq_rel))).unwrap();
        assert_eq!(s, DriveStatus::Paused);
        let s = drive(&mut r, &mut t, &mut a, 2, |p, fi| seqs.push((p.frame, p.seq, fi.seq_rel))).unwrap();
        assert_eq!(s, DriveStatus::Ended);
        assert_eq!(seqs, vec![(1, 5, 0), (3, 6, 1), (5, 7, 2)]);
        assert_eq!((a.records, a.tcp_packets, a.not_tcp_total(), a.not_decoded_total()), (5, 3, 1, 1));
        assert!(a.balanced());
        assert_eq!(r.stats().records, a.records);
    }

    #[test]
    fn pipelined_hands_out_the_same_packets_in_order() {
        // Several chunks, paused mid-chunk, then to the end: same as `drive`.
        let frames: Vec<Vec<u8>> = (0..5000u32).map(|i| tcp_frame(1000 + (i % 7) as u16, i, 0x10)).collect();
        let bytes = pcap(&frames);
        let run = |pipelined: bool| {
            let mut r = CaptureReader::from_bytes(bytes.clone()).unwrap();
            let (mut t, mut a) = (FlowTracker::new(), Accounting::new());
            let mut seen = Vec::new();
            let mut statuses = Vec::new();
            for max in [300, 2100, 50_000] {
                let s = if pipelined {
                    drive_pipelined(&mut r, &mut t, &mut a, max, |p, fi| seen.push((p.frame, p.seq, fi.stream, fi.seq_rel)))
                } else {
                    drive(&mut r, &mut t, &mut a, max, |p, fi| seen.push((p.frame, p.seq, fi.stream, fi.seq_rel)))
                };
                statuses.push(s.unwrap());
            }
            (seen, statuses, a.records)
        };
        let (want, got) = (run(false), run(true));
        assert_eq!(want.1, vec![DriveStatus::Paused, DriveStatus::Paused, DriveStatus::Ended]);
        assert_eq!(want.0.len(), 5000);
        assert_eq!(got, want);
    }

    #[test]
    fn pipelined_returns_error_after_handing_out_whole_packets() {
        let mut bytes = pcap(&[tcp_frame(1000, 5, 0x02), tcp_frame(1000, 6, 0x10)]);
        bytes.truncate(bytes.len() - 3);
        let mut r = CaptureReader::from_bytes(bytes).unwrap();
        let (mut t, mut a) = (FlowTracker::new(), Accounting::new());
        let mut n = 0;
        let e = drive_pipelined(&mut r, &mut t, &mut a, 100, |_, _| n += 1).unwrap_err();
        assert!(e.is_truncation());
        assert_eq!((n, a.records), (1, 1));
    }

    #[test]
    fn thread_choice_measures_both_then_follows_the_cheaper_and_reprobes() {
        use std::time::Duration;
        let ms = Duration::from_millis;
        let mut c = ThreadChoice::default();
        assert!(!c.pipelined(100), "small batches stay on one thread");
        assert!(!c.pipelined(65536), "one thread is measured first");
        c.record(false, 65536, ms(20));
        c.record(false, 10, ms(1000)); // too small to count
        if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            assert!(!c.pipelined(65536));
            return;
        }
        assert!(c.pipelined(65536), "then two threads");
        c.record(true, 65536, ms(10));
        // Two threads are cheaper: used, except on every PROBE_EVERY-th batch.
        let picks: Vec<bool> = (0..PROBE_EVERY).map(|_| {
            let p = c.pipelined(65536);
            c.record(p, 65536, if p { ms(10) } else { ms(20) });
            p
        }).collect();
        assert_eq!(picks.iter().filter(|p| !**p).count(), 1, "{picks:?}");
        // The machine gets busy: two threads now cost more and are dropped.
        c.record(true, 65536, ms(200));
        c.record(true, 65536, ms(200));
        let picks: Vec<bool> = (0..PROBE_EVERY).map(|_| {
            let p = c.pipelined(65536);
            c.record(p, 65536, if p { ms(200) } else { ms(20) });
            p
        }).collect();
        assert_eq!(picks.iter().filter(|p| **p).count(), 1, "{picks:?}");
    }

    #[test]
    fn loadavg_runnable_count() {
        assert_eq!(runnable_of_loadavg("3.62 3.36 3.21 4/120 12345\n"), Some(4));
        assert_eq!(runnable_of_loadavg("0.00 0.01 0.05 1/80 99"), Some(1));
        assert_eq!(runnable_of_loadavg("garbage"), None);
    }

    #[test]
    fn drive_returns_error_after_handing_out_whole_packets() {
        let mut bytes = pcap(&[tcp_frame(1000, 5, 0x02), tcp_frame(1000, 6, 0x10)]);
        bytes.truncate(bytes.len() - 3);
        let mut r = CaptureReader::from_bytes(bytes).unwrap();
        let (mut t, mut a) = (FlowTracker::new(), Accounting::new());
        let mut n = 0;
        let e = drive(&mut r, &mut t, &mut a, 100, |_, _| n += 1).unwrap_err();
        assert!(e.is_truncation());
        assert_eq!((n, a.records), (1, 1));
    }
}
