//! stallscope's native core, laid out by stage as data flows through it:
//! `containers` (pcap, pcapng, gzip: records out of a file) -> `wire` (link, IP and TCP headers of a
//! record: one packet or the reason it is not one) -> `tracking` (connections and accounting) ->
//! `tables` (Arrow columns for Python); `decode` drives those stages over a file. `analysis` holds
//! the analyzer's per-packet passes, `sim` the reference simulator, and `bindings` (behind the
//! `python` feature) exposes them to Python. No stage imports a later one; tests/test_layers.py
//! holds that.
#![deny(unsafe_code)]

pub mod analysis;
#[cfg(feature = "python")]
pub mod bindings;
pub mod containers;
pub mod decode;
pub mod sim;
pub mod tables;
pub mod tracking;
pub mod wire;

#[cfg(feature = "python")]
#[pyo3::pymodule]
fn _native(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
    bindings::register(m)
}
