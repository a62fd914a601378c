//! Python binding of the packet decoder. `Decoder(path, columns)` streams the packet table in
//! batches; each column crosses as Arrow buffers held by `NativeBuffer`, which exposes its bytes
//! through the buffer protocol so pyarrow wraps them without a copy. Container errors are
//! returned beside the batch they ended (never raised mid-batch) so no decoded packet is lost.

use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::tracking::accounting::Accounting;
use crate::tables::columns::{column_by_name, Col, ColumnBuilder, Kind, PacketColumns, SCHEMA};
use crate::decode::{drive, drive_pipelined, spare_core, DriveStatus, ThreadChoice};
use crate::containers::error::ReadError;
use crate::tracking::flows::FlowTracker;
use crate::containers::reader::{CaptureFormat, CaptureReader};

pyo3::create_exception!(_native, NativeReadError, PyException, "A capture could not be read: args are (kind, offset, message, rejected).");

/// An immutable buffer owned by Rust, readable through the buffer protocol as bytes. Typed
/// storage lets a column of numbers cross without being copied into bytes first (Arrow and
/// Polars read little-endian buffers: the crate is built for little-endian targets only).
#[pyclass(frozen, module = "stallscope._native")]
pub struct NativeBuffer {
    data: Storage,
}

enum Storage {
    Bytes(Vec<u8>),
    I64(Vec<i64>),
    U32(Vec<u32>),
    U64(Vec<u64>),
}

const _: () = assert!(cfg!(target_endian = "little"), "Arrow buffers are little-endian");

impl NativeBuffer {
    pub fn new(data: Vec<u8>) -> Self {
        NativeBuffer { data: Storage::Bytes(data) }
    }

    pub fn from_i64(data: Vec<i64>) -> Self {
        NativeBuffer { data: Storage::I64(data) }
    }

    pub fn from_u32(data: Vec<u32>) -> Self {
        NativeBuffer { data: Storage::U32(data) }
    }

    pub fn from_u64(data: Vec<u64>) -> Self {
        NativeBuffer { data: Storage::U64(data) }
    }

    fn raw(&self) -> (*const u8, usize) {
        match &self.data {
            Storage::Bytes(v) => (v.as_ptr(), v.len()),
            Storage::I64(v) => (v.as_ptr() as *const u8, std::mem::size_of_val(v.as_slice())),
            Storage::U32(v) => (v.as_ptr() as *const u8, std::mem::size_of_val(v.as_slice())),
            Storage::U64(v) => (v.as_ptr() as *const u8, std::mem::size_of_val(v.as_slice())),
        }
    }
}

#[pymethods]
impl NativeBuffer {
    fn __len__(&self) -> usize {
        self.raw().1
    }

    // The one unsafe block of the crate: the buffer protocol hands CPython a pointer into
    // `data`, which is never mutated (frozen class) and lives as long as the exporting object,
    // which PyBuffer_FillInfo keeps a reference to.
    #[allow(unsafe_code)]
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::os::raw::c_int,
    ) -> PyResult<()> {
        let (ptr, len) = slf.get().raw();
        let rc = pyo3::ffi::PyBuffer_FillInfo(
            view,
            slf.as_ptr(),
            ptr as *mut std::os::raw::c_void,
            len as pyo3::ffi::Py_ssize_t,
            1,
            flags,
        );
        if rc == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    #[allow(unsafe_code)]
    unsafe fn __releasebuffer__(&self, _view: *mut pyo3::ffi::Py_buffer) {}
}

/// (kind, offset, message, rejected) of a container error.
type ErrorOut = (String, u64, String, bool);

fn error_tuple(e: &ReadError) -> ErrorOut {
    (e.kind().to_string(), e.offset(), e.to_string(), e.rejected())
}

fn to_py_error(e: &ReadError) -> PyErr {
    NativeReadError::new_err(error_tuple(e))
}

fn format_name(f: &CaptureFormat) -> &'static str {
    match f {
        CaptureFormat::Pcap { .. } => "pcap",
        CaptureFormat::Pcapng => "pcapng",
    }
}

/// (name, kind, length, null_count, validity, values, offsets, child). For "str" columns
/// `values` is the character data and `offsets` the 16-byte Utf8View entries; for "list_i64"
/// `offsets` are i64 (LargeList) and `child` the Int64 values.
type ColumnOut = (String, &'static str, usize, usize, Option<NativeBuffer>, NativeBuffer, Option<NativeBuffer>, Option<NativeBuffer>);

fn column_out(name: &str, b: ColumnBuilder) -> ColumnOut {
    let kind = b.kind.unwrap_or(Kind::U8);
    let has_offsets = matches!(kind, Kind::Str | Kind::ListI64);
    (
        name.to_string(),
        kind.name(),
        b.len,
        b.null_count,
        b.validity.map(NativeBuffer::new),
        NativeBuffer::new(b.values),
        has_offsets.then_some(NativeBuffer::new(b.offsets)),
        (kind == Kind::ListI64).then_some(NativeBuffer::new(b.child)),
    )
}

/// Streams one capture into packet-table batches. Unsendable: the reader's input is not Sync;
/// one Python thread drives a decoder (the GIL is released while it decodes).
#[pyclass(unsendable, module = "stallscope._native")]
pub struct Decoder {
    reader: CaptureReader,
    tracker: FlowTracker,
    acct: Accounting,
    cols: Vec<Col>,
    finished: bool,
    error: Option<ReadError>,
}

/// One choice for the process: what was measured on earlier decoders carries over to the next.
static THREADS: std::sync::Mutex<ThreadChoice> = std::sync::Mutex::new(ThreadChoice::new());

#[pymethods]
impl Decoder {
    /// Opens `source`: a path ("-" = stdin) or the capture's bytes; gzip is recognised.
    /// `columns`: names to build (None = all). Raises ValueError for an unknown column,
    /// NativeReadError if the input is refused.
    #[new]
    #[pyo3(signature = (source, columns=None))]
    fn new(py: Python<'_>, source: &Bound<'_, PyAny>, columns: Option<Vec<String>>) -> PyResult<Self> {
        let cols = match columns {
            None => SCHEMA.iter().map(|c| c.0).collect(),
            Some(names) => names
                .iter()
                .map(|n| column_by_name(n).ok_or_else(|| PyValueError::new_err(format!("unknown packet column {n:?}"))))
                .collect::<PyResult<Vec<_>>>()?,
        };
        let opened = if let Ok(bytes) = source.downcast::<PyBytes>() {
            let bytes = bytes.as_bytes().to_vec();
            py.allow_threads(|| CaptureReader::from_bytes(bytes))
        } else {
            let path: String = source.extract()?;
            py.allow_threads(|| CaptureReader::open(&path))
        };
        let reader = opened.map_err(|e| to_py_error(&e))?;
        Ok(Decoder {
            reader,
            tracker: FlowTracker::new(),
            acct: Accounting::new(),
            cols,
            finished: false,
            error: None,
        })
    }

    /// Decodes up to `max_rows` TCP packets. Returns (columns, error, finished): columns as
    /// (name, kind, length, null_count, validity, values, offsets, child) tuples; error as
    /// (kind, offset, message, rejected) when the container ended in damage.
    fn next_batch(&mut self, py: Python<'_>, max_rows: usize) -> (Vec<ColumnOut>, Option<ErrorOut>, bool) {
        let max_rows = max_rows.max(1);
        let mut pc = PacketColumns::new(&self.cols, if self.finished { 0 } else { max_rows });
        if !self.finished {
            let Decoder { reader, tracker, acct, .. } = self;
            // Columns are built on a second thread while this one reads, dissects and tracks,
            // when a core is free and that measured faster on this machine lately.
            let pipelined = spare_core() && THREADS.lock().is_ok_and(|t| t.pipelined(max_rows));
            let start = std::time::Instant::now();
            let res = py.allow_threads(|| {
                if pipelined {
                    drive_pipelined(reader, tracker, acct, max_rows, |p, f| pc.append(p, f))
                } else {
                    drive(reader, tracker, acct, max_rows, |p, f| pc.append(p, f))
                }
            });
            if let Ok(mut t) = THREADS.lock() {
                t.record(pipelined, pc.len(), start.elapsed());
            }
            match res {
                Ok(DriveStatus::Paused) => {}
                Ok(DriveStatus::Ended) => self.finished = true,
                Err(e) => {
                    self.finished = true;
                    self.error = Some(e);
                }
            }
        }
        let cols = pc.cols.clone();
        let out = cols
            .iter()
            .zip(pc.finish())
            .map(|(c, b)| column_out(SCHEMA[*c as usize].1, b))
            .collect();
        let err = if self.finished { self.error.as_ref().map(error_tuple) } else { None };
        (out, err, self.finished)
    }

    /// Bytes of (decompressed) input consumed so far, for progress bars.
    fn bytes_read(&self) -> u64 {
        self.reader.stats().bytes_read
    }

    /// The accounting and the container's statistics as plain Python values.
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let a = &self.acct;
        let d = PyDict::new(py);
        d.set_item("format", format_name(self.reader.format()))?;
        d.set_item("records", a.records)?;
        d.set_item("tcp_packets", a.tcp_packets)?;
        let nt = PyDict::new(py);
        for (k, v) in a.not_tcp_by_reason() {
            nt.set_item(k, v)?;
        }
        d.set_item("not_tcp", nt)?;
        let nd = PyDict::new(py);
        for (k, v) in a.not_decoded_by_reason() {
            nd.set_item(k, v)?;
        }
        d.set_item("not_decoded", nd)?;
        let an = PyDict::new(py);
        for (k, v) in a.anomalies_by_name() {
            an.set_item(k, v)?;
        }
        d.set_item("anomalies", an)?;
        d.set_item("streams", self.tracker.stream_count())?;
        let s = self.reader.stats();
        let c = PyDict::new(py);
        c.set_item("bytes_read", s.bytes_read)?;
        c.set_item("records", s.records)?;
        let blocks = PyDict::new(py);
        for (k, v) in &s.blocks_by_type {
            blocks.set_item(k, v)?;
        }
        c.set_item("blocks_by_type", blocks)?;
        c.set_item("sections", s.sections)?;
        let ifaces = PyList::empty(py);
        for i in &s.interfaces {
            let id = PyDict::new(py);
            id.set_item("section", i.section)?;
            id.set_item("id", i.id)?;
            id.set_item("linktype", i.linktype)?;
            id.set_item("snaplen", i.snaplen)?;
            id.set_item("name", i.name.clone())?;
            ifaces.append(id)?;
        }
        c.set_item("interfaces", ifaces)?;
        c.set_item("caplen_gt_len", s.caplen_gt_len)?;
        c.set_item("caplen_gt_snaplen", s.caplen_gt_snaplen)?;
        c.set_item("ts_invalid", s.ts_invalid)?;
        c.set_item("if_drop", s.if_drop)?;
        c.set_item("os_drop", s.os_drop)?;
        c.set_item("epb_dropcount", s.epb_dropcount)?;
        c.set_item("trailing_truncation", s.trailing_truncation)?;
        d.set_item("container", c)?;
        Ok(d)
    }
}

/// The Rust column declaration: [(name, kind, nullable)] in table order.
#[pyfunction]
fn packet_schema() -> Vec<(&'static str, &'static str, bool)> {
    SCHEMA.iter().map(|(_, name, kind, nullable)| (*name, kind.name(), *nullable)).collect()
}

/// Stable reason names, so Python can list reasons with zero counts too.
#[pyfunction]
fn reason_names() -> (Vec<&'static str>, Vec<&'static str>) {
    (
        crate::wire::outcome::NotTcp::ALL.iter().map(|r| r.name()).collect(),
        crate::wire::outcome::NotDecoded::ALL.iter().map(|r| r.name()).collect(),
    )
}

/// The anomaly bits of the `anomalies` column with their names.
#[pyfunction]
fn anomaly_names() -> Vec<(u32, &'static str)> {
    crate::tracking::accounting::ANOMALY_NAMES.to_vec()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeBuffer>()?;
    m.add_function(wrap_pyfunction!(anomaly_names, m)?)?;
    m.add_class::<Decoder>()?;
    m.add("NativeReadError", m.py().get_type::<NativeReadError>())?;
    m.add_function(wrap_pyfunction!(packet_schema, m)?)?;
    m.add_function(wrap_pyfunction!(reason_names, m)?)?;
    Ok(())
}
