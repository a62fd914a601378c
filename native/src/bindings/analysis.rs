//! Python binding of the analyzer's per-packet passes (native/src/analysis). Columns arrive as
//! contiguous numpy arrays (bools as uint8) and leave as Arrow buffers in the decoder's column
//! shape, so packets/decoder.py's wrapper turns them into Polars columns without a copy.

use std::collections::HashMap;

use pyo3::buffer::{Element, PyBuffer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::analysis::duplicates::{duplicate_rows, Identity};
use crate::analysis::order::stream_time_order;
use crate::analysis::sender_state::sender_state;
use crate::analysis::sender_view::sender_view;
use crate::analysis::{PacketView, NULL};
use crate::bindings::decoder::NativeBuffer;

type ColumnOut = (
    String,
    &'static str,
    usize,
    usize,
    Option<NativeBuffer>,
    NativeBuffer,
    Option<NativeBuffer>,
    Option<NativeBuffer>,
);

fn array<T: Element + Copy>(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    name: &str,
    len: Option<usize>,
) -> PyResult<Vec<T>> {
    let buf = PyBuffer::<T>::get(obj)
        .map_err(|e| PyValueError::new_err(format!("column {name}: {e}")))?;
    let v = buf.to_vec(py)?;
    if let Some(n) = len {
        if v.len() != n {
            return Err(PyValueError::new_err(format!(
                "column {name}: {} rows, expected {n}",
                v.len()
            )));
        }
    }
    Ok(v)
}

fn bits(values: impl Iterator<Item = bool>, n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n.div_ceil(8)];
    for (i, b) in values.enumerate() {
        out[i / 8] |= (b as u8) << (i % 8);
    }
    out
}

fn bools(name: &str, v: &[bool]) -> ColumnOut {
    (
        name.into(),
        "bool",
        v.len(),
        0,
        None,
        NativeBuffer::new(bits(v.iter().copied(), v.len())),
        None,
        None,
    )
}

fn i64s(name: &str, v: Vec<i64>) -> ColumnOut {
    (
        name.into(),
        "i64",
        v.len(),
        0,
        None,
        NativeBuffer::from_i64(v),
        None,
        None,
    )
}

fn u8s(name: &str, v: Vec<u8>) -> ColumnOut {
    (name.into(), "u8", v.len(), 0, None, NativeBuffer::new(v), None, None)
}

fn u32s(name: &str, v: Vec<u32>) -> ColumnOut {
    (name.into(), "u32", v.len(), 0, None, NativeBuffer::from_u32(v), None, None)
}

/// An i64 column whose `NULL` rows are null.
fn opt_i64s(name: &str, v: Vec<i64>) -> ColumnOut {
    let nulls = v.iter().filter(|&&x| x == NULL).count();
    let validity =
        (nulls > 0).then(|| NativeBuffer::new(bits(v.iter().map(|&x| x != NULL), v.len())));
    (
        name.into(),
        "i64",
        v.len(),
        nulls,
        validity,
        NativeBuffer::from_i64(v),
        None,
        None,
    )
}

/// A u32 column whose zero rows are null.
fn nonzero_u32s(name: &str, v: Vec<u32>) -> ColumnOut {
    let nulls = v.iter().filter(|&&x| x == 0).count();
    let validity = (nulls > 0).then(|| NativeBuffer::new(bits(v.iter().map(|&x| x != 0), v.len())));
    (
        name.into(),
        "u32",
        v.len(),
        nulls,
        validity,
        NativeBuffer::from_u32(v),
        None,
        None,
    )
}

struct Inputs {
    stream: Vec<u32>,
    dir: Vec<u8>,
    ts_ns: Vec<i64>,
    frame: Vec<u64>,
    seq_rel: Vec<i64>,
    ack_rel: Vec<i64>,
    syn: Vec<bool>,
    fin: Vec<bool>,
    rst: Vec<bool>,
    ack: Vec<bool>,
    payload_len: Vec<u32>,
    win_scaled: Vec<i64>,
    sacked: Vec<i64>,
    dsack: Vec<bool>,
}

impl Inputs {
    fn read(py: Python<'_>, cols: &HashMap<String, Bound<'_, PyAny>>) -> PyResult<Self> {
        let get = |name: &str| {
            cols.get(name)
                .ok_or_else(|| PyValueError::new_err(format!("missing column {name}")))
        };
        let stream: Vec<u32> = array(py, get("stream")?, "stream", None)?;
        let n = Some(stream.len());
        let flag = |name: &str| -> PyResult<Vec<bool>> {
            Ok(array::<u8>(py, get(name)?, name, n)?
                .into_iter()
                .map(|b| b != 0)
                .collect())
        };
        let inputs = Inputs {
            dir: array(py, get("dir")?, "dir", n)?,
            ts_ns: array(py, get("ts_ns")?, "ts_ns", n)?,
            frame: array(py, get("frame")?, "frame", n)?,
            seq_rel: array(py, get("seq_rel")?, "seq_rel", n)?,
            ack_rel: array(py, get("ack_rel")?, "ack_rel", n)?,
            syn: flag("flag_syn")?,
            fin: flag("flag_fin")?,
            rst: flag("flag_rst")?,
            ack: flag("flag_ack")?,
            payload_len: array(py, get("payload_len")?, "payload_len", n)?,
            win_scaled: array(py, get("win_scaled")?, "win_scaled", n)?,
            sacked: array(py, get("sacked")?, "sacked", n)?,
            dsack: flag("dsack")?,
            stream,
        };
        Ok(inputs)
    }

    fn view(&self) -> PacketView<'_> {
        PacketView {
            stream: &self.stream,
            dir: &self.dir,
            ts_ns: &self.ts_ns,
            frame: &self.frame,
            seq_rel: &self.seq_rel,
            ack_rel: &self.ack_rel,
            syn: &self.syn,
            fin: &self.fin,
            rst: &self.rst,
            ack: &self.ack,
            payload_len: &self.payload_len,
            win_scaled: &self.win_scaled,
            sacked: &self.sacked,
            dsack: &self.dsack,
        }
    }
}

/// The sender-state columns of a packet table, in its row order (any: each stream is walked in
/// time order). `cols` maps the
/// packet-table names (plus `sacked` and `dsack`) to arrays; `retrans_kind` is coded 0 none,
/// 1 timeout, 2 fast, 3 other.
#[pyfunction]
fn analysis_sender_state(
    py: Python<'_>,
    cols: HashMap<String, Bound<'_, PyAny>>,
) -> PyResult<Vec<ColumnOut>> {
    let inputs = Inputs::read(py, &cols)?;
    let s = py.allow_threads(|| sender_state(&inputs.view()));
    Ok(vec![
        i64s("seq_end", s.seq_end),
        i64s("snd_una", s.snd_una),
        i64s("snd_max", s.snd_max),
        i64s("in_flight", s.in_flight),
        i64s("sacked", s.sacked),
        i64s("pipe", s.pipe),
        opt_i64s("peer_window", s.peer_window),
        opt_i64s("usable_window", s.usable_window),
        bools("new_data", &s.new_data),
        bools("retransmission", &s.retransmission),
        bools("control_retransmission", &s.control_retransmission),
        u8s("retrans_kind", s.retrans_kind),
        opt_i64s("silence_ns", s.silence_ns),
        opt_i64s("reaction_ns", s.reaction_ns),
        bools("dup_ack", &s.dup_ack),
        u32s("dup_run", s.dup_run),
        bools("acks_new", &s.acks_new),
        opt_i64s("rtt_ns", s.rtt_ns),
        opt_i64s("ack_delay_ns", s.ack_delay_ns),
        nonzero_u32s("ack_segments", s.ack_segments),
        bools("acked_unseen", &s.acked_unseen),
    ])
}

/// snd_una, peer_window, in_flight, pipe and usable_window as the sender knew them (see
/// analysis/sender_view.rs). `cols` as for `analysis_sender_state` plus the state's `snd_una`,
/// `snd_max`, `sacked`, `peer_window` (with `peer_window_valid`); `lags`: (stream, dir, lag_ns).
#[pyfunction]
fn analysis_sender_view(
    py: Python<'_>,
    cols: HashMap<String, Bound<'_, PyAny>>,
    lags: Vec<(u32, u8, i64)>,
) -> PyResult<Vec<ColumnOut>> {
    let inputs = Inputs::read(py, &cols)?;
    let n = Some(inputs.stream.len());
    let get = |name: &str| {
        cols.get(name)
            .ok_or_else(|| PyValueError::new_err(format!("missing column {name}")))
    };
    let snd_una: Vec<i64> = array(py, get("snd_una")?, "snd_una", n)?;
    let snd_max: Vec<i64> = array(py, get("snd_max")?, "snd_max", n)?;
    let sacked: Vec<i64> = array(py, get("sacked")?, "sacked", n)?;
    let window: Vec<i64> = array(py, get("peer_window")?, "peer_window", n)?;
    let valid: Vec<u8> = array(py, get("peer_window_valid")?, "peer_window_valid", n)?;
    let peer_window: Vec<i64> = window
        .iter()
        .zip(&valid)
        .map(|(&w, &v)| if v != 0 { w } else { NULL })
        .collect();
    let lags: HashMap<(u32, u8), i64> = lags.into_iter().map(|(s, d, l)| ((s, d), l)).collect();
    let v = py.allow_threads(|| {
        sender_view(
            &inputs.view(),
            &snd_una,
            &snd_max,
            &sacked,
            &peer_window,
            &lags,
        )
    });
    Ok(vec![
        i64s("snd_una", v.snd_una),
        opt_i64s("peer_window", v.peer_window),
        i64s("in_flight", v.in_flight),
        i64s("pipe", v.pipe),
        opt_i64s("usable_window", v.usable_window),
    ])
}

/// Per row, the time its burst began at a tap after the bottleneck (analysis::bursts).
#[pyfunction]
fn analysis_burst_starts(
    py: Python<'_>,
    group: Bound<'_, PyAny>,
    ts_ns: Bound<'_, PyAny>,
    released_by: Bound<'_, PyAny>,
    forced: Bound<'_, PyAny>,
    joined: Bound<'_, PyAny>,
) -> PyResult<NativeBuffer> {
    let group: Vec<u64> = array(py, &group, "group", None)?;
    let n = Some(group.len());
    let ts: Vec<i64> = array(py, &ts_ns, "ts_ns", n)?;
    let released: Vec<i64> = array(py, &released_by, "released_by", n)?;
    let (forced, joined) = (flags(py, &forced, "forced", n)?, flags(py, &joined, "joined", n)?);
    let starts =
        py.allow_threads(|| crate::analysis::bursts::burst_starts(&group, &ts, &released, &forced, &joined));
    Ok(NativeBuffer::from_i64(starts))
}

/// A column of u8 flags (numpy's bool as u8) as bools.
fn flags(py: Python<'_>, obj: &Bound<'_, PyAny>, name: &str, len: Option<usize>) -> PyResult<Vec<bool>> {
    Ok(array::<u8>(py, obj, name, len)?.into_iter().map(|f| f != 0).collect())
}

/// The permutation (u64 row numbers) that orders rows by stream, time and frame; None if they
/// already are.
#[pyfunction]
fn analysis_order(
    py: Python<'_>,
    stream: Bound<'_, PyAny>,
    ts_ns: Bound<'_, PyAny>,
    frame: Bound<'_, PyAny>,
) -> PyResult<Option<NativeBuffer>> {
    let stream: Vec<u32> = array(py, &stream, "stream", None)?;
    let n = Some(stream.len());
    let ts: Vec<i64> = array(py, &ts_ns, "ts_ns", n)?;
    let frame: Vec<u64> = array(py, &frame, "frame", n)?;
    let order = py.allow_threads(|| stream_time_order(&stream, &ts, &frame));
    Ok(order.map(NativeBuffer::from_u64))
}

/// Rows that repeat an earlier row of their connection's identity within `window_ns`, or
/// `identified_window_ns` where a non-zero IPv4 id and a TCP timestamp name the packet (any row
/// order; the answer keeps it).
/// `cols`: stream, dir, seq_rel, ack_rel, ip_id, opt_ts_val and opt_ts_ecr (i64, -1 when absent),
/// payload_len, flags (u8), win_scaled, sack_key, ts_ns, frame.
#[pyfunction]
fn analysis_duplicates(
    py: Python<'_>,
    cols: HashMap<String, Bound<'_, PyAny>>,
    window_ns: i64,
    identified_window_ns: i64,
) -> PyResult<ColumnOut> {
    let get = |name: &str| {
        cols.get(name)
            .ok_or_else(|| PyValueError::new_err(format!("missing column {name}")))
    };
    let stream: Vec<u32> = array(py, get("stream")?, "stream", None)?;
    let n = Some(stream.len());
    let dir: Vec<u8> = array(py, get("dir")?, "dir", n)?;
    let seq: Vec<i64> = array(py, get("seq_rel")?, "seq_rel", n)?;
    let ack: Vec<i64> = array(py, get("ack_rel")?, "ack_rel", n)?;
    let ip_id: Vec<i64> = array(py, get("ip_id")?, "ip_id", n)?;
    let ts_val: Vec<i64> = array(py, get("opt_ts_val")?, "opt_ts_val", n)?;
    let ts_ecr: Vec<i64> = array(py, get("opt_ts_ecr")?, "opt_ts_ecr", n)?;
    let len: Vec<u32> = array(py, get("payload_len")?, "payload_len", n)?;
    let flags: Vec<u8> = array(py, get("flags")?, "flags", n)?;
    let window: Vec<i64> = array(py, get("win_scaled")?, "win_scaled", n)?;
    let sack: Vec<i64> = array(py, get("sack_key")?, "sack_key", n)?;
    let ts: Vec<i64> = array(py, get("ts_ns")?, "ts_ns", n)?;
    let frame: Vec<u64> = array(py, get("frame")?, "frame", n)?;
    let identity = |i: usize| Identity {
        stream: stream[i],
        dir: dir[i],
        seq: seq[i],
        ack: ack[i],
        ip_id: u16::try_from(ip_id[i]).ok(),
        ts_val: u32::try_from(ts_val[i]).ok(),
        ts_ecr: u32::try_from(ts_ecr[i]).ok(),
        len: len[i],
        flags: flags[i],
        window: window[i],
        sack: sack[i],
    };
    let dup = py.allow_threads(|| {
        let rows: Vec<usize> = match stream_time_order(&stream, &ts, &frame) {
            None => (0..stream.len()).collect(),
            Some(idx) => idx.into_iter().map(|i| i as usize).collect(),
        };
        duplicate_rows(&rows, identity, &ts, window_ns, identified_window_ns)
    });
    Ok(bools("duplicate", &dup))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(analysis_order, m)?)?;
    m.add_function(wrap_pyfunction!(analysis_burst_starts, m)?)?;
    m.add_function(wrap_pyfunction!(analysis_duplicates, m)?)?;
    m.add_function(wrap_pyfunction!(analysis_sender_state, m)?)?;
    m.add_function(wrap_pyfunction!(analysis_sender_view, m)?)?;
    Ok(())
}
