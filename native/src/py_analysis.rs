//! Python binding of the analyzer's per-packet passes (native/src/analysis). Columns arrive as
//! contiguous numpy arrays (bools as uint8) and leave as Arrow buffers in the decoder's column
//! shape, so capture/decoder.py's wrapper turns them into Polars columns without a copy.

use std::collections::HashMap;

use pyo3::buffer::{Element, PyBuffer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::analysis::sender_state::sender_state;
use crate::analysis::sender_view::sender_view;
use crate::analysis::PacketView;
use crate::py_bindings::NativeBuffer;

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

fn le<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

fn i64s(name: &str, v: &[i64]) -> ColumnOut {
    (
        name.into(),
        "i64",
        v.len(),
        0,
        None,
        NativeBuffer::new(le(v, i64::to_le_bytes)),
        None,
        None,
    )
}

fn opt<T: Copy + Default>(v: &[Option<T>]) -> (usize, Option<NativeBuffer>, Vec<T>) {
    let nulls = v.iter().filter(|x| x.is_none()).count();
    let validity =
        (nulls > 0).then(|| NativeBuffer::new(bits(v.iter().map(Option::is_some), v.len())));
    (
        nulls,
        validity,
        v.iter().map(|x| x.unwrap_or_default()).collect(),
    )
}

fn opt_i64s(name: &str, v: &[Option<i64>]) -> ColumnOut {
    let (nulls, validity, values) = opt(v);
    (
        name.into(),
        "i64",
        v.len(),
        nulls,
        validity,
        NativeBuffer::new(le(&values, i64::to_le_bytes)),
        None,
        None,
    )
}

fn opt_u32s(name: &str, v: &[Option<u32>]) -> ColumnOut {
    let (nulls, validity, values) = opt(v);
    (
        name.into(),
        "u32",
        v.len(),
        nulls,
        validity,
        NativeBuffer::new(le(&values, u32::to_le_bytes)),
        None,
        None,
    )
}

struct Inputs {
    stream: Vec<u32>,
    dir: Vec<u8>,
    ts_ns: Vec<i64>,
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
        if inputs.stream.windows(2).any(|w| w[0] > w[1])
            || inputs
                .ts_ns
                .windows(2)
                .zip(inputs.stream.windows(2))
                .any(|(t, s)| s[0] == s[1] && t[0] > t[1])
        {
            return Err(PyValueError::new_err(
                "rows must be sorted by stream, then time",
            ));
        }
        Ok(inputs)
    }

    fn view(&self) -> PacketView<'_> {
        PacketView {
            stream: &self.stream,
            dir: &self.dir,
            ts_ns: &self.ts_ns,
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

/// The sender-state columns of a packet table sorted by (stream, ts_ns, frame). `cols` maps the
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
        i64s("seq_end", &s.seq_end),
        i64s("snd_una", &s.snd_una),
        i64s("snd_max", &s.snd_max),
        i64s("in_flight", &s.in_flight),
        i64s("sacked", &s.sacked),
        i64s("pipe", &s.pipe),
        opt_i64s("peer_window", &s.peer_window),
        opt_i64s("usable_window", &s.usable_window),
        bools("new_data", &s.new_data),
        bools("retransmission", &s.retransmission),
        bools("control_retransmission", &s.control_retransmission),
        (
            "retrans_kind".into(),
            "u8",
            s.retrans_kind.len(),
            0,
            None,
            NativeBuffer::new(s.retrans_kind.clone()),
            None,
            None,
        ),
        opt_i64s("silence_ns", &s.silence_ns),
        bools("dup_ack", &s.dup_ack),
        (
            "dup_run".into(),
            "u32",
            s.dup_run.len(),
            0,
            None,
            NativeBuffer::new(le(&s.dup_run, u32::to_le_bytes)),
            None,
            None,
        ),
        bools("acks_new", &s.acks_new),
        opt_i64s("rtt_ns", &s.rtt_ns),
        opt_i64s("ack_delay_ns", &s.ack_delay_ns),
        opt_u32s("ack_segments", &s.ack_segments),
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
    let peer_window: Vec<Option<i64>> = window
        .iter()
        .zip(&valid)
        .map(|(&w, &v)| (v != 0).then_some(w))
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
        i64s("snd_una", &v.snd_una),
        opt_i64s("peer_window", &v.peer_window),
        i64s("in_flight", &v.in_flight),
        i64s("pipe", &v.pipe),
        opt_i64s("usable_window", &v.usable_window),
    ])
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(analysis_sender_state, m)?)?;
    m.add_function(wrap_pyfunction!(analysis_sender_view, m)?)?;
    Ok(())
}
