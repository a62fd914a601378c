//! Python binding of the native simulator: `simulate_bulk(config, seed) -> dict` and
//! `naglemark_trial(config, seed) -> dict`. `config` is BulkConfig as a dict (cost as HostCost
//! fields, optional "writes" as (at_ns, nbytes) pairs, plus the path's "impairments", whose
//! optional "drop_segments" and "drop_acks" are (offset, k) pairs) or the trial's parameters. A bulk result holds the
//! packet trace (a NativeTrace, turned into records on demand), stalls and drops as tuples and
//! the summary counters; simulate/native_core.py turns it into a BulkResult.

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::sim::ground_truth::{Drop, Evidence, Stall};
use crate::sim::nagle::NagleVariant;
use crate::sim::naglemark::{run_trial, TrialConfig};
use crate::sim::tcp::costs::HostCost;
use crate::sim::world::{run_bulk, AtmSpec, BulkOutcome, BulkRun, HostSummary, Impairments, JumboSpec, PmtuSpec};

fn get<'py, T: FromPyObject<'py>>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<T> {
    match d.get_item(key)? {
        Some(v) => v.extract().map_err(|e| PyValueError::new_err(format!("config[{key:?}]: {e}"))),
        None => Err(PyKeyError::new_err(format!("config has no {key:?}"))),
    }
}

/// An optional config entry: absent or None both mean "the preset's".
fn opt<'py, T: FromPyObject<'py>>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<T>> {
    match d.get_item(key)? {
        Some(v) if !v.is_none() => v.extract().map(Some).map_err(|e| PyValueError::new_err(format!("config[{key:?}]: {e}"))),
        _ => Ok(None),
    }
}

fn cost_of(d: &Bound<'_, PyDict>) -> PyResult<HostCost> {
    let c: Bound<'_, PyDict> = get(d, "cost")?;
    Ok(HostCost {
        write_copy_ns_per_kb: get(&c, "write_copy_ns_per_kb")?,
        read_copy_ns_per_kb: get(&c, "read_copy_ns_per_kb")?,
        output_ns_per_packet: get(&c, "output_ns_per_packet")?,
        output_ns_per_kb: get(&c, "output_ns_per_kb")?,
        input_ns_per_packet: get(&c, "input_ns_per_packet")?,
        input_ns_per_kb: get(&c, "input_ns_per_kb")?,
        rx_fifo_bytes: get(&c, "rx_fifo_bytes")?,
        input_jitter_ns: get(&c, "input_jitter_ns")?,
    })
}

fn config_of(d: &Bound<'_, PyDict>) -> PyResult<BulkRun> {
    Ok(BulkRun {
        personality: get(d, "personality")?,
        receiver_personality: get(d, "receiver_personality")?,
        link: get(d, "link")?,
        mtu: get(d, "mtu")?,
        mss: get(d, "mss")?,
        sndbuf: get(d, "sndbuf")?,
        rcvbuf: get(d, "rcvbuf")?,
        write: get(d, "write")?,
        read: get(d, "read")?,
        bytes: get(d, "bytes")?,
        nagle: get(d, "nagle")?,
        receiver_nagle: get(d, "receiver_nagle")?,
        receiver_inference: get(d, "receiver_inference")?,
        rate_bps: get(d, "rate_bps")?,
        delay_ns: get(d, "delay_ns")?,
        queue_bytes: get(d, "queue_bytes")?,
        cost: cost_of(d)?,
        think_ns: get(d, "think_ns")?,
        reply: get(d, "reply")?,
        writes: opt(d, "writes")?,
        route_mtu: get(d, "route_mtu")?,
        advertised_mss: get(d, "advertised_mss")?,
        host_mtu: get(d, "host_mtu")?,
        mtu_probing: get(d, "mtu_probing")?,
        sack: get(d, "sack")?,
        congestion: get(d, "congestion")?,
        tap_receiver: match opt::<String>(d, "tap")?.as_deref() {
            None | Some("sender") => false,
            Some("receiver") => true,
            Some(other) => return Err(PyValueError::new_err(format!("config[\"tap\"]: {other:?} is neither \"sender\" nor \"receiver\""))),
        },
        impair: match d.get_item("impairments")? {
            None => Impairments::default(),
            Some(v) => {
                let im: Bound<'_, PyDict> = v.downcast_into()?;
                Impairments {
                    drop_segments: opt(&im, "drop_segments")?,
                    drop_acks: opt(&im, "drop_acks")?,
                    loss: get(&im, "loss")?,
                    gilbert: get(&im, "gilbert")?,
                    drop_nth: get(&im, "drop_nth")?,
                    loss_data_only: get(&im, "loss_data_only")?,
                    reverse_loss: get(&im, "reverse_loss")?,
                    reverse_rate_bps: get(&im, "reverse_rate_bps")?,
                    atm_switch: match get::<Option<Bound<'_, PyDict>>>(&im, "atm_switch")? {
                        None => None,
                        Some(a) => Some(AtmSpec {
                            buffer_bytes: get(&a, "buffer_bytes")?,
                            out_rate_bps: get(&a, "out_rate_bps")?,
                            policy: get(&a, "policy")?,
                            epd_threshold_cells: get(&a, "epd_threshold_cells")?,
                            out_delay_ns: get(&a, "out_delay_ns")?,
                        }),
                    },
                    pmtu: match get::<Option<u32>>(&im, "pmtu_mtu")? {
                        None => None,
                        Some(mtu) => Some(PmtuSpec { mtu, mode: get(&im, "pmtu_mode")? }),
                    },
                    jumbo: match get::<Option<i64>>(&im, "jumbo_slots")? {
                        None => None,
                        Some(slots) => Some(JumboSpec {
                            slots,
                            min_frame_len: get(&im, "jumbo_min_frame_len")?,
                            replenish_ns: get(&im, "jumbo_replenish_ns")?,
                            hold_until_acked: get(&im, "jumbo_hold_until_acked")?,
                        }),
                    },
                }
            }
        },
    })
}

fn host_dict<'py>(py: Python<'py>, h: &HostSummary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("segments_sent", h.segments_sent)?;
    d.set_item("retransmits", h.retransmits)?;
    d.set_item("timeouts", h.timeouts)?;
    d.set_item("maxseg", h.maxseg)?;
    d.set_item("sndbuf", h.sndbuf)?;
    d.set_item("rcvbuf", h.rcvbuf)?;
    d.set_item("rx_fifo_drops", h.rx_fifo_drops)?;
    d.set_item("icmp_mss_changes", h.icmp_mss_changes)?;
    d.set_item("aborted_at", h.aborted_at)?;
    Ok(d)
}

fn evidence_value(py: Python<'_>, e: &Evidence) -> PyResult<PyObject> {
    Ok(match e {
        Evidence::Int(v) => v.into_pyobject(py)?.into_any().unbind(),
        Evidence::Bool(v) => v.into_pyobject(py)?.to_owned().into_any().unbind(),
        Evidence::Str(v) => v.into_pyobject(py)?.into_any().unbind(),
        Evidence::Ints(v) => PyList::new(py, v)?.into_any().unbind(),
    })
}

/// A run's stalls as `(start_ns, end_ns, cause, detail, direction, evidence dict)` tuples.
fn stalls_list<'py>(py: Python<'py>, stalls: &[Stall]) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for s in stalls {
        let ev = PyDict::new(py);
        for (k, v) in &s.evidence {
            ev.set_item(*k, evidence_value(py, v)?)?;
        }
        let t = PyTuple::new(
            py,
            [
                s.start_ns.into_pyobject(py)?.into_any(),
                s.end_ns.into_pyobject(py)?.into_any(),
                s.cause.name().into_pyobject(py)?.into_any(),
                s.detail.into_pyobject(py)?.into_any(),
                s.direction.as_str().into_pyobject(py)?.into_any(),
                ev.into_any(),
            ],
        )?;
        out.append(t)?;
    }
    Ok(out)
}

/// A run's drops as `(at_ns, uid, reason, place, source host, seq, payload_len, ip_len)` tuples.
fn drops_list(drops: &[Drop]) -> Vec<(i64, u64, &'static str, &str, u32, i64, u32, u32)> {
    drops
        .iter()
        .map(|x| (x.at_ns, x.uid, x.reason, x.place.as_str(), u32::from(x.flow_src), x.seq, x.payload_len, x.ip_len))
        .collect()
}

/// The trace as columns (one list per Segment field, plus the time "t").
fn record_columns<'py>(py: Python<'py>, r: &[(i64, crate::sim::segment::Segment)]) -> PyResult<Bound<'py, PyDict>> {
    let cols = PyDict::new(py);
    macro_rules! col {
        ($name:expr, |$s:ident| $e:expr) => {
            cols.set_item($name, r.iter().map(|(_, $s)| $e).collect::<Vec<_>>())?;
        };
    }
    cols.set_item("t", r.iter().map(|(t, _)| *t).collect::<Vec<_>>())?;
    col!("src", |s| u32::from(s.src));
    col!("seq", |s| s.seq);
    col!("ack", |s| s.ack);
    col!("flags", |s| u32::from(s.flags));
    col!("window", |s| s.window);
    col!("payload_len", |s| s.payload_len);
    col!("mss", |s| s.mss);
    col!("wscale", |s| s.wscale.map(u32::from));
    col!("sack_permitted", |s| s.sack_permitted);
    col!("timestamp", |s| s.timestamp);
    col!("sack", |s| s.sack.clone());
    col!("ip_id", |s| u32::from(s.ip_id));
    col!("uid", |s| s.uid);
    col!("tags", |s| u32::from(s.tags));
    Ok(cols)
}

/// The trace as `[(t, segment_class(src, dst, sport, dport, seq, ack, flags, window, payload_len,
/// mss, wscale, sack_permitted, timestamp, sack, ip_id, uid, tags)), ...]`, built here because
/// that is most of a fast run's cost when done from the columns in Python.
fn segments<'py>(
    py: Python<'py>,
    records: &[(i64, crate::sim::segment::Segment)],
    class: &Bound<'py, PyAny>,
    endpoints: &[(String, u16); 2],
    pair_port_step: u16,
) -> PyResult<Bound<'py, PyList>> {
    let addr: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> = endpoints
        .iter()
        .map(|(a, p)| Ok((a.as_str().into_pyobject(py)?.into_any(), p.into_pyobject(py)?.into_any())))
        .collect::<PyResult<_>>()?;
    let empty = PyTuple::empty(py).into_any();
    let none = py.None().into_bound(py);
    let mut tag_cache: Vec<Option<Bound<'py, PyAny>>> = vec![None; 32];
    let out = PyList::empty(py);
    for (t, s) in records {
        let tags = match &tag_cache[usize::from(s.tags & 31)] {
            Some(v) => v.clone(),
            None => {
                let v = PyTuple::new(py, s.tag_names())?.into_any();
                tag_cache[usize::from(s.tags & 31)] = Some(v.clone());
                v
            }
        };
        let (src, sport) = &addr[usize::from(s.src & 1)];
        let (dst, dport) = &addr[usize::from(1 - (s.src & 1))];
        // Host pair k of a naglemark trial: the even host's port is endpoints[0]'s + k * step.
        let pair_port = |p: &Bound<'py, PyAny>| -> PyResult<Bound<'py, PyAny>> {
            if pair_port_step == 0 {
                return Ok(p.clone());
            }
            let port = endpoints[0].1 as u64 + u64::from(s.src >> 1) * u64::from(pair_port_step);
            Ok(port.into_pyobject(py)?.into_any())
        };
        let (sport, dport) = if s.src & 1 == 0 { (pair_port(sport)?, dport.clone()) } else { (sport.clone(), pair_port(dport)?) };
        let sack = if s.sack.is_empty() { empty.clone() } else { PyTuple::new(py, &s.sack)?.into_any() };
        let opt = |v: Option<u32>| -> PyResult<Bound<'py, PyAny>> {
            Ok(match v { Some(x) => x.into_pyobject(py)?.into_any(), None => none.clone() })
        };
        let ts = match s.timestamp { Some(x) => x.into_pyobject(py)?.into_any(), None => none.clone() };
        let args = PyTuple::new(
            py,
            [
                src.clone(), dst.clone(), sport, dport,
                s.seq.into_pyobject(py)?.into_any(), s.ack.into_pyobject(py)?.into_any(),
                u32::from(s.flags).into_pyobject(py)?.into_any(), s.window.into_pyobject(py)?.into_any(),
                s.payload_len.into_pyobject(py)?.into_any(), opt(s.mss)?, opt(s.wscale.map(u32::from))?,
                s.sack_permitted.into_pyobject(py)?.to_owned().into_any(), ts, sack,
                u32::from(s.ip_id).into_pyobject(py)?.into_any(), s.uid.into_pyobject(py)?.into_any(), tags,
            ],
        )?;
        let seg = class.call1(args)?;
        out.append((*t, seg))?;
    }
    Ok(out)
}

/// A run's packet trace, kept native until asked for: most callers want the summary and the
/// stalls, and building a Python Segment per packet costs more than the whole simulation.
#[pyclass(frozen, module = "stallscope._native")]
struct NativeTrace {
    records: Vec<(i64, crate::sim::segment::Segment)>,
}

#[pymethods]
impl NativeTrace {
    fn __len__(&self) -> usize {
        self.records.len()
    }

    /// One list per Segment field, plus the time "t".
    fn columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        record_columns(py, &self.records)
    }

    /// `[(t, segment_class(src, dst, sport, dport, seq, ..., uid, tags)), ...]`; `endpoints` are
    /// the (addr, port) of even and odd hosts; with `pair_port_step`, host pair k's even host
    /// has port endpoints[0]'s + k * step (a naglemark client's port per connection).
    #[pyo3(signature = (segment_class, endpoints, pair_port_step = 0))]
    fn segments<'py>(
        &self,
        py: Python<'py>,
        segment_class: Bound<'py, PyAny>,
        endpoints: [(String, u16); 2],
        pair_port_step: u16,
    ) -> PyResult<Bound<'py, PyList>> {
        segments(py, &self.records, &segment_class, &endpoints, pair_port_step)
    }
}

/// Run one bulk transfer natively. Raises ValueError on a config the core cannot run. The
/// result's "trace" is a NativeTrace.
#[pyfunction]
#[pyo3(signature = (config, seed))]
fn simulate_bulk<'py>(py: Python<'py>, config: &Bound<'py, PyDict>, seed: i64) -> PyResult<Bound<'py, PyDict>> {
    let cfg = config_of(config)?;
    let out = py.allow_threads(|| run_bulk(&cfg, seed)).map_err(PyValueError::new_err)?;

    let d = PyDict::new(py);
    let mut out = out;
    let records = std::mem::take(&mut out.records);
    d.set_item("trace", Bound::new(py, NativeTrace { records })?)?;

    d.set_item("stalls", stalls_list(py, &out.stalls)?)?;
    d.set_item("drops", drops_list(&out.drops))?;
    d.set_item("started_at", out.started_at)?;
    d.set_item("finished_at", out.finished_at)?;
    d.set_item("now", out.now)?;
    d.set_item("events", out.events)?;
    d.set_item("received", out.received)?;
    d.set_item("path_mtu", out.path_mtu)?;
    d.set_item("sender", host_dict(py, &out.sender)?)?;
    d.set_item("receiver", host_dict(py, &out.receiver)?)?;
    d.set_item("path", path_dict(py, &out)?)?;
    Ok(d)
}

/// The path stages' counters after the run (simulate/path_counters.py turns them into
/// BulkResult.path): "links" [(sent_packets, sent_bytes)] forward and reverse, "loss"
/// [[(offered, lost, gilbert bad)] per stage] forward and reverse, and "atm", "pmtu", "nic"
/// (None when absent).
fn path_dict<'py>(py: Python<'py>, out: &BulkOutcome) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("links", out.link_sent.to_vec())?;
    let loss: Vec<Vec<(u64, u64, bool)>> = out
        .loss_stages
        .iter()
        .map(|v| {
            v.iter()
                .map(|st| {
                    let bad = matches!(st.model, crate::sim::stage::LossModel::Gilbert { bad: true, .. });
                    (st.offered, st.lost, bad)
                })
                .collect()
        })
        .collect();
    d.set_item("loss", loss)?;
    match &out.path.atm {
        None => d.set_item("atm", py.None())?,
        Some((_, a)) => {
            let x = PyDict::new(py);
            let sw = &a.switch;
            x.set_item("cells_in", sw.cells_in)?;
            x.set_item("cells_dropped", sw.cells_dropped)?;
            x.set_item("pdus_in", sw.pdus_in)?;
            x.set_item("pdus_lost", sw.pdus_lost)?;
            x.set_item("max_occupancy", sw.max_occupancy)?;
            x.set_item("last_departure", sw.last_departure)?;
            x.set_item("in_busy", a.in_busy)?;
            let pdus: Vec<_> = a
                .pdus
                .iter()
                .map(|p| {
                    let f = &p.fate;
                    (p.at_ns, p.uid, p.cells, f.delivered, f.cells_dropped, f.cells_queued, f.last_cell_departure_ns, f.reason)
                })
                .collect();
            x.set_item("pdus", pdus)?;
            d.set_item("atm", x)?;
        }
    }
    match &out.path.pmtu {
        None => d.set_item("pmtu", py.None())?,
        Some((_, st)) => d.set_item("pmtu", (st.hop.forwarded, st.hop.dropped, st.icmp_sent))?,
    }
    match &out.path.nic {
        None => d.set_item("nic", py.None())?,
        Some((_, _, nic)) => {
            let x = PyDict::new(py);
            let p = &nic.pool;
            x.set_item("accepted", p.accepted)?;
            x.set_item("dropped", p.dropped)?;
            x.set_item("small_passed", p.small_passed)?;
            x.set_item("min_free", p.min_free)?;
            x.set_item("next_key", nic.next_key)?;
            d.set_item("nic", x)?;
        }
    }
    Ok(d)
}

/// One naglemark trial natively: `config` holds personality, link, variant, sockbuf,
/// receiver_inference, per_request, app_buf, lengths, think_ns and optionally record and the
/// path's rate_bps, delay_ns and mtu (None: the preset's). Returns
/// samples as (length, elapsed_ns) pairs, finished_ns, events, now and connections; with record
/// also the servers' trace, both ends' stalls and the drops, as simulate_bulk does.
#[pyfunction]
fn naglemark_trial<'py>(
    py: Python<'py>,
    config: &Bound<'py, PyDict>,
    seed: i64,
) -> PyResult<Bound<'py, PyDict>> {
    let variant: String = get(config, "variant")?;
    let cfg = TrialConfig {
        personality: get(config, "personality")?,
        link: get(config, "link")?,
        variant: NagleVariant::parse(&variant)
            .ok_or_else(|| PyValueError::new_err(format!("unknown Nagle variant {variant:?}")))?,
        sockbuf: get(config, "sockbuf")?,
        receiver_inference: get(config, "receiver_inference")?,
        per_request: get(config, "per_request")?,
        app_buf: get(config, "app_buf")?,
        lengths: get(config, "lengths")?,
        think_ns: get(config, "think_ns")?,
        record: match config.get_item("record")? {
            Some(v) => v.extract()?,
            None => false,
        },
        rate_bps: opt(config, "rate_bps")?,
        delay_ns: opt(config, "delay_ns")?,
        mtu: opt(config, "mtu")?,
    };
    let out = py.allow_threads(|| run_trial(&cfg, seed)).map_err(PyValueError::new_err)?;
    let d = PyDict::new(py);
    d.set_item("samples", out.samples)?;
    d.set_item("finished_ns", out.finished_ns)?;
    d.set_item("events", out.events)?;
    d.set_item("now", out.now)?;
    d.set_item("connections", out.connections)?;
    if cfg.record {
        d.set_item("stalls", stalls_list(py, &out.stalls)?)?;
        d.set_item("drops", drops_list(&out.drops))?;
        d.set_item("trace", Bound::new(py, NativeTrace { records: out.records })?)?;
    }
    Ok(d)
}

/// The simulator's link presets as (name, rate_bps, delay_ns, mtu, wire bytes of a 40- and a
/// 1500-byte datagram): simulate/links/presets.py names the same links for the Python API.
#[pyfunction]
fn sim_link_presets() -> Vec<(&'static str, i64, i64, u32, u64, u64)> {
    crate::sim::link::LINK_PRESETS
        .iter()
        .map(|p| (p.name, p.rate_bps, p.delay_ns, p.mtu, p.framing.wire_bytes(40), p.framing.wire_bytes(1500)))
        .collect()
}

/// The simulator's TCP personalities by name.
#[pyfunction]
fn sim_personalities() -> Vec<&'static str> {
    crate::sim::tcp::personality::PERSONALITIES.iter().map(|p| p.name).collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sim_link_presets, m)?)?;
    m.add_function(wrap_pyfunction!(sim_personalities, m)?)?;
    m.add_class::<NativeTrace>()?;
    m.add_function(wrap_pyfunction!(simulate_bulk, m)?)?;
    m.add_function(wrap_pyfunction!(naglemark_trial, m)?)?;
    Ok(())
}
