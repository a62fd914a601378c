//! Python binding of the connection table: `connection_table(path, progress=None)` reads a capture
//! once and returns `{"columns": {name: list}, "summary": {...}}`, and `connection_columns()`
//! returns the columns' declaration below (name, Polars dtype, nullable, meaning, side), from
//! which analyzers/connection_schema.py takes the names and types and docs/flows-json.md its
//! column tables. Errors are returned in `summary["error"]`, not raised, so a damaged file still
//! yields its table.

use std::net::Ipv6Addr;
use std::ops::Deref;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::tracking::conntable::{ConnStats, ConnTable, DirStats};
use crate::tracking::accounting::Accounting;
use crate::decode::{drive, DriveStatus};
use crate::tracking::flows::FlowTracker;
use crate::containers::reader::{CaptureFormat, CaptureReader};

/// TCP packets per drive step (between progress callbacks).
const STEP_PACKETS: usize = 1 << 16;

fn addr_text(version: u8, a: &[u8; 16]) -> String {
    let v6 = Ipv6Addr::from(*a);
    match (version, v6.to_ipv4_mapped()) {
        (4, Some(v4)) => v4.to_string(),
        _ => v6.to_string(),
    }
}

fn format_name(f: &CaptureFormat) -> &'static str {
    match f {
        CaptureFormat::Pcap { .. } => "pcap",
        CaptureFormat::Pcapng => "pcapng",
    }
}

/// A column's value type: its Polars dtype, and whether it can be null (an `Option`). The
/// declaration takes both from the Rust type of each column's value, so they cannot disagree.
trait Cell {
    const DTYPE: &'static str;
    const NULLABLE: bool = false;
}

macro_rules! cells {
    ($( $t:ty => $dtype:literal ),* $(,)?) => { $( impl Cell for $t { const DTYPE: &'static str = $dtype; } )* };
}
cells!(bool => "Boolean", u8 => "UInt8", u16 => "UInt16", u32 => "UInt32", u64 => "UInt64", i64 => "Int64",
       f64 => "Float64", String => "String");

impl<T: Cell> Cell for Option<T> {
    const DTYPE: &'static str = T::DTYPE;
    const NULLABLE: bool = true;
}

/// One direction of a connection as its columns read it: that side's `DirStats` (fields and
/// methods, through `Deref`), and the connection and direction for what needs both.
struct Side<'a> {
    conn: &'a ConnStats,
    dir: u8,
}

impl Deref for Side<'_> {
    type Target = DirStats;
    fn deref(&self) -> &DirStats {
        if self.dir == 0 { &self.conn.orig } else { &self.conn.resp }
    }
}

impl Side<'_> {
    fn goodput_bps(&self) -> Option<f64> {
        self.conn.goodput_bps(self.dir)
    }
}

/// The per-direction columns appear once per side, in this order, as `<side>_<name>`.
const SIDES: [(&str, u8); 2] = [("orig", 0), ("resp", 1)];

/// (name, Polars dtype, nullable, meaning) of one declared column.
type Decl = (&'static str, &'static str, bool, &'static str);

fn decl<A: ?Sized, T: Cell>(name: &'static str, meaning: &'static str, _value: impl Fn(&A) -> T) -> Decl {
    (name, T::DTYPE, T::NULLABLE, meaning)
}

/// Declares the connection table once: each column's name, its value (whose Rust type gives the
/// dtype and nullability) and its meaning. Generates `declaration()` and `columns()` from the same
/// list, so the table holds exactly the declared columns, in the declared order: the
/// connection-level ones, then the per-direction ones for each of `SIDES`.
macro_rules! declare_columns {
    (
        connection { $( $name:literal = |$c:ident| $e:expr, $meaning:expr; )* }
        direction { $( $dname:literal = |$s:ident| $de:expr, $dmeaning:expr; )* }
    ) => {
        /// The connection-level columns, then the per-direction ones (unprefixed), in table order.
        fn declaration() -> (Vec<Decl>, Vec<Decl>) {
            (
                vec![ $( decl($name, $meaning, |$c: &ConnStats| $e), )* ],
                vec![ $( decl($dname, $dmeaning, |$s: &Side| $de), )* ],
            )
        }

        fn columns<'py>(py: Python<'py>, t: &ConnTable) -> PyResult<Bound<'py, PyDict>> {
            let d = PyDict::new(py);
            let cs = &t.conns;
            $( d.set_item($name, PyList::new(py, cs.iter().map(|$c: &ConnStats| $e))?)?; )*
            for (side, dir) in SIDES {
                let sides: Vec<Side> = cs.iter().map(|conn| Side { conn, dir }).collect();
                $( d.set_item(format!("{side}_{}", $dname), PyList::new(py, sides.iter().map(|$s: &Side| $de))?)?; )*
            }
            Ok(d)
        }
    };
}

declare_columns! {
    connection {
        "stream" = |c| c.stream,
            "0-based stream index within the file, in order of first packet (tshark's `tcp.stream`)";
        "ip_version" = |c| c.ip_version, "4 or 6";
        "orig_addr" = |c| addr_text(c.ip_version, &c.orig_addr), "the initiator's address";
        "orig_port" = |c| c.orig_port, "the initiator's port";
        "resp_addr" = |c| addr_text(c.ip_version, &c.resp_addr), "the responder's address";
        "resp_port" = |c| c.resp_port, "the responder's port";
        "start_captured" = |c| c.start_captured, "the initiator's SYN (without ACK) is in the capture";
        "port_reused" = |c| c.port_reused, "a later stream reused this 4-tuple";
        "wscale_known" = |c| c.wscale_known,
            "both SYNs were seen with their options whole (or a window scale option kept before a snaplen \
             cut), so windows are exact (scaled, or unscaled when the handshake did not negotiate scaling)";
        "first_frame" = |c| c.first_frame, "frame number (1-based, as tshark) of the first packet";
        "last_frame" = |c| c.last_frame, "frame number of the last packet";
        "first_ts_ns" = |c| c.first_ts_ns, "timestamp of the first packet";
        "last_ts_ns" = |c| c.last_ts_ns, "timestamp of the last packet";
        "duration_ns" = |c| c.duration_ns(), "`last_ts_ns - first_ts_ns`";
        "max_idle_ns" = |c| c.max_idle_ns,
            "longest gap between consecutive packets of the connection (either direction)";
        "handshake_rtt_ns" = |c| c.handshake_rtt_ns,
            "SYN -> the initiator's first ACK after the SYN/ACK (the full round trip, wherever the capture \
             point is); null when the SYN or SYN/ACK was retransmitted (Karn) or not seen";
        "packets" = |c| c.packets(), "packets in both directions";
    }
    direction {
        "mss" = |s| s.mss, "MSS option of this side's SYN";
        "wscale" = |s| s.wscale,
            "window scale option of this side's SYN, as sent (values > 14 are used as 14, RFC 7323)";
        "sack_permitted" = |s| s.sack_permitted, "SACK-permitted option in the SYN";
        "timestamps" = |s| s.timestamps, "timestamps option in the SYN";
        "packets" = |s| s.packets, "segments sent";
        "frame_bytes" = |s| s.frame_bytes, "sum of on-the-wire frame lengths (tshark's `frame.len`)";
        "payload_bytes" = |s| s.payload_bytes,
            "sum of TCP payload lengths from the IP header (even when the capture cut the payload)";
        "unique_bytes" = |s| s.unique_bytes, "payload above `high`: new data";
        "retrans_packets" = |s| s.retrans_packets, "segments with payload that starts below `high`";
        "retrans_bytes" = |s| s.retrans_bytes,
            "their payload below `high`; `payload_bytes == unique_bytes + retrans_bytes`";
        "largest_segment" = |s| s.largest_segment, "largest payload, super-frames included";
        "effective_mss" = |s| s.effective_mss,
            "largest payload of a segment that is not a TSO/GRO super-frame";
        "pure_acks" = |s| s.pure_acks, "ACK segments without payload, SYN, FIN or RST";
        "dup_acks" = |s| s.dup_acks,
            "pure ACKs repeating this side's previous ACK number and window (tshark's \
             `tcp.analysis.duplicate_ack`)";
        "zero_windows" = |s| s.zero_windows, "segments (not SYN, not RST) advertising a zero window";
        "min_window" = |s| s.min_window,
            "smallest advertised window in bytes over segments other than SYN and RST (scaled once \
             `wscale_known`)";
        "max_window" = |s| s.max_window, "largest advertised window in bytes, over the same segments";
        "max_in_flight" = |s| s.max_in_flight,
            "largest `high` minus the highest ACK received from the peer so far (before any ACK: the \
             first sequence number seen)";
        "syn" = |s| s.syn, "segments with SYN set";
        "fin" = |s| s.fin, "segments with FIN set";
        "rst" = |s| s.rst, "segments with RST set";
        "rtt_samples" = |s| s.rtt_count,
            "RTT samples taken: an advancing ACK from the peer gives one sample, from the highest \
             first-transmitted segment (data, SYN or FIN) it covers; segments overlapped by a resend give \
             none (Karn). Equals tcptrace's \"RTT samples\" on a capture taken at the sender";
        "rtt_min_ns" = |s| s.rtt_min_ns, "smallest RTT sample";
        "rtt_median_ns" = |s| s.rtt_median_ns(),
            "median RTT sample: the lower middle, an observed sample (above 8192 samples it is taken from \
             a deterministic systematic subsample)";
        "goodput_bps" = |s| s.goodput_bps(),
            "`unique_bytes` per second of connection duration; null when the duration is 0";
    }
}

/// The connection table's columns in table order, as `connection_table` returns them: (name,
/// Polars dtype, nullable, meaning, side), where side is None for a connection-level column and
/// "orig" or "resp" for a per-direction one (named `<side>_<name>`, with that name's meaning).
#[pyfunction]
fn connection_columns() -> Vec<(String, &'static str, bool, &'static str, Option<&'static str>)> {
    let (connection, direction) = declaration();
    let mut out: Vec<_> = connection.into_iter().map(|(n, t, nl, m)| (n.to_string(), t, nl, m, None)).collect();
    for (side, _) in SIDES {
        out.extend(direction.iter().map(|&(n, t, nl, m)| (format!("{side}_{n}"), t, nl, m, Some(side))));
    }
    out
}

/// Reads `path` once and returns the connection table and the file's accounting summary.
#[pyfunction]
#[pyo3(signature = (path, progress=None))]
fn connection_table<'py>(py: Python<'py>, path: &str, progress: Option<PyObject>) -> PyResult<Bound<'py, PyDict>> {
    let summary = PyDict::new(py);
    let result = PyDict::new(py);
    let mut reader = match CaptureReader::open(path) {
        Ok(r) => r,
        Err(e) => {
            // Nothing could be read: the file is refused whatever the reason (missing file too).
            let err = PyDict::new(py);
            err.set_item("kind", e.kind())?;
            err.set_item("message", e.to_string())?;
            err.set_item("offset", e.offset())?;
            err.set_item("rejected", true)?;
            summary.set_item("error", err)?;
            result.set_item("columns", columns(py, &ConnTable::new())?)?;
            result.set_item("summary", summary)?;
            return Ok(result);
        }
    };
    let mut tracker = FlowTracker::new();
    let mut table = ConnTable::new();
    let mut acct = Accounting::new();
    // Stepped so progress can be reported (and Ctrl-C seen) between steps.
    let error = loop {
        let step = drive(&mut reader, &mut tracker, &mut acct, STEP_PACKETS, |p, fi| {
            // `tracker` is borrowed by drive; stream facts are taken after the step.
            table.update(p, fi);
        });
        if let Some(cb) = &progress {
            cb.call1(py, (reader.stats().bytes_read,))?;
        }
        py.check_signals()?;
        match step {
            Ok(DriveStatus::Paused) => continue,
            Ok(DriveStatus::Ended) => break None,
            Err(e) => break Some(e),
        }
    };
    table.apply_facts(&tracker);
    let st = reader.stats();
    summary.set_item("format", format_name(reader.format()))?;
    summary.set_item("bytes_read", st.bytes_read)?;
    summary.set_item("records", acct.records)?;
    summary.set_item("tcp_packets", acct.tcp_packets)?;
    summary.set_item("not_tcp", acct.not_tcp_by_reason().collect::<Vec<_>>())?;
    summary.set_item("not_decoded", acct.not_decoded_by_reason().collect::<Vec<_>>())?;
    summary.set_item("anomalies", acct.anomalies_by_name().collect::<Vec<_>>())?;
    summary.set_item("if_drop", st.if_drop)?;
    summary.set_item("os_drop", st.os_drop)?;
    summary.set_item("epb_dropcount", st.epb_dropcount)?;
    summary.set_item("caplen_gt_len", st.caplen_gt_len)?;
    summary.set_item("trailing_truncation", st.trailing_truncation)?;
    summary.set_item("connections", table.conns.len())?;
    match error {
        None => summary.set_item("error", py.None())?,
        Some(e) => {
            let err = PyDict::new(py);
            err.set_item("kind", e.kind())?;
            err.set_item("message", e.to_string())?;
            err.set_item("offset", e.offset())?;
            err.set_item("rejected", e.rejected())?;
            summary.set_item("error", err)?;
        }
    }
    result.set_item("columns", columns(py, &table)?)?;
    result.set_item("summary", summary)?;
    Ok(result)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(connection_table, m)?)?;
    m.add_function(wrap_pyfunction!(connection_columns, m)?)?;
    Ok(())
}
