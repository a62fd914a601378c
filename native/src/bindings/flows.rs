//! Python binding of the connection table: `connection_table(path, progress=None)` reads a capture
//! once and returns `{"columns": {name: list}, "summary": {...}}`; the column names and types are
//! documented in analyzers/connection_schema.py and docs/flows-json.md.
//! Errors are returned in `summary["error"]`, not raised, so a damaged file still yields its table.

use std::net::Ipv6Addr;

use pyo3::prelude::*;
use pyo3::types::PyDict;

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

fn columns<'py>(py: Python<'py>, t: &ConnTable) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let cs = &t.conns;
    macro_rules! col {
        ($name:expr, |$c:ident| $e:expr) => {
            d.set_item($name, cs.iter().map(|$c: &ConnStats| $e).collect::<Vec<_>>())?;
        };
    }
    col!("stream", |c| c.stream);
    col!("ip_version", |c| u32::from(c.ip_version)); // a Vec<u8> would become bytes
    col!("orig_addr", |c| addr_text(c.ip_version, &c.orig_addr));
    col!("orig_port", |c| c.orig_port);
    col!("resp_addr", |c| addr_text(c.ip_version, &c.resp_addr));
    col!("resp_port", |c| c.resp_port);
    col!("start_captured", |c| c.start_captured);
    col!("port_reused", |c| c.port_reused);
    col!("wscale_known", |c| c.wscale_known);
    col!("first_frame", |c| c.first_frame);
    col!("last_frame", |c| c.last_frame);
    col!("first_ts_ns", |c| c.first_ts_ns);
    col!("last_ts_ns", |c| c.last_ts_ns);
    col!("duration_ns", |c| c.duration_ns());
    col!("max_idle_ns", |c| c.max_idle_ns);
    col!("handshake_rtt_ns", |c| c.handshake_rtt_ns);
    col!("packets", |c| c.packets());
    for (side, dir) in [("orig", 0u8), ("resp", 1u8)] {
        macro_rules! dcol {
            ($name:expr, |$s:ident| $e:expr) => {
                d.set_item(
                    format!("{side}_{}", $name),
                    cs.iter()
                        .map(|c: &ConnStats| {
                            let $s: &DirStats = if dir == 0 { &c.orig } else { &c.resp };
                            $e
                        })
                        .collect::<Vec<_>>(),
                )?;
            };
        }
        dcol!("mss", |s| s.mss);
        dcol!("wscale", |s| s.wscale);
        dcol!("sack_permitted", |s| s.sack_permitted);
        dcol!("timestamps", |s| s.timestamps);
        dcol!("packets", |s| s.packets);
        dcol!("frame_bytes", |s| s.frame_bytes);
        dcol!("payload_bytes", |s| s.payload_bytes);
        dcol!("unique_bytes", |s| s.unique_bytes);
        dcol!("retrans_packets", |s| s.retrans_packets);
        dcol!("retrans_bytes", |s| s.retrans_bytes);
        dcol!("largest_segment", |s| s.largest_segment);
        dcol!("effective_mss", |s| s.effective_mss);
        dcol!("pure_acks", |s| s.pure_acks);
        dcol!("dup_acks", |s| s.dup_acks);
        dcol!("zero_windows", |s| s.zero_windows);
        dcol!("min_window", |s| s.min_window);
        dcol!("max_window", |s| s.max_window);
        dcol!("max_in_flight", |s| s.max_in_flight);
        dcol!("syn", |s| s.syn);
        dcol!("fin", |s| s.fin);
        dcol!("rst", |s| s.rst);
        dcol!("rtt_samples", |s| s.rtt_count);
        dcol!("rtt_min_ns", |s| s.rtt_min_ns);
        dcol!("rtt_median_ns", |s| s.rtt_median_ns());
        d.set_item(
            format!("{side}_goodput_bps"),
            cs.iter().map(|c| c.goodput_bps(dir)).collect::<Vec<_>>(),
        )?;
    }
    Ok(d)
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
    Ok(())
}
