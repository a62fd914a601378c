//! The streaming decode loop allocates nothing per packet: ten times the packets cost only the
//! few extra allocations of amortised growth (buffers, the connection table), counted with a
//! counting global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use _native::tracking::accounting::Accounting;
use _native::tables::columns::{PacketColumns, SCHEMA};
use _native::decode::drive;
use _native::tracking::flows::FlowTracker;
use _native::containers::reader::CaptureReader;

struct Counting;

thread_local! {
    // Per thread, so tests running in parallel do not count each other's allocations.
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}

fn allocs() -> usize {
    ALLOCS.with(Cell::get)
}

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A pcap of one connection: `n` data segments with the timestamp option.
fn capture(n: u32) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes());
    v.extend_from_slice(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    v.extend_from_slice(&65535u32.to_le_bytes());
    v.extend_from_slice(&1u32.to_le_bytes());
    for i in 0..n {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend_from_slice(&[0x45, 0, 0, 152, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend_from_slice(&[0x9c, 0x40, 0, 80]);
        f.extend_from_slice(&(1 + i * 100).to_be_bytes());
        f.extend_from_slice(&[0, 0, 0, 1, 0x80, 0x18, 4, 0, 0, 0, 0, 0, 1, 1, 8, 10]);
        f.extend_from_slice(&i.to_be_bytes());
        f.extend_from_slice(&[0, 0, 0, 0]);
        f.extend(std::iter::repeat(0x61).take(100));
        v.extend_from_slice(&i.to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(&(f.len() as u32).to_le_bytes());
        v.extend_from_slice(&(f.len() as u32).to_le_bytes());
        v.extend_from_slice(&f);
    }
    v
}

fn allocations_while_driving(n: u32) -> (usize, u64) {
    let mut reader = CaptureReader::from_bytes(capture(n)).unwrap();
    let mut tracker = FlowTracker::new();
    let mut acct = Accounting::new();
    let mut payload = 0u64;
    let before = allocs();
    drive(&mut reader, &mut tracker, &mut acct, usize::MAX, |p, _| payload += u64::from(p.payload_len)).unwrap();
    (allocs() - before, payload)
}

#[test]
fn drive_allocates_nothing_per_packet() {
    let (small, p_small) = allocations_while_driving(2_000);
    let (large, p_large) = allocations_while_driving(20_000);
    assert_eq!((p_small, p_large), (200_000, 2_000_000));
    // Per-packet allocation would add >= 18,000 here; amortised (doubling) growth adds a handful.
    assert!(large < 64 && large - small.min(large) < 8, "{small} allocations for 2k packets, {large} for 20k");
}

fn allocations_building_columns(n: u32) -> (usize, usize) {
    let mut reader = CaptureReader::from_bytes(capture(n)).unwrap();
    let mut tracker = FlowTracker::new();
    let mut acct = Accounting::new();
    let cols: Vec<_> = SCHEMA.iter().map(|c| c.0).collect();
    let before = allocs();
    let mut pc = PacketColumns::new(&cols, 4096);
    drive(&mut reader, &mut tracker, &mut acct, usize::MAX, |p, f| pc.append(p, f)).unwrap();
    let rows = pc.len();
    drop(pc.finish());
    (allocs() - before, rows)
}

#[test]
fn column_building_allocates_only_amortised_growth() {
    let (small, rows_small) = allocations_building_columns(2_000);
    let (large, rows_large) = allocations_building_columns(20_000);
    assert_eq!((rows_small, rows_large), (2_000, 20_000));
    // 45 columns, each growing by doubling: a few hundred reallocations at most, never one per row.
    assert!(small < 1_000 && large < 1_000, "{small} allocations for 2k rows, {large} for 20k");
}
