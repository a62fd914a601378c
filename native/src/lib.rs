//! stallscope's native core: capture containers (pcap, pcapng) -> TCP packet columns.
//! `lib.rs` only declares modules and, behind the `python` feature, binds them.
#![deny(unsafe_code)]

pub mod accounting;
pub mod analysis;
pub mod byte_order;
pub mod columns;
pub mod container_stats;
pub mod conntable;
pub mod decode;
pub mod dissect;
pub mod error;
pub mod flows;
pub mod gzip;
pub mod ip;
pub mod link;
pub mod packet;
pub mod pcap;
pub mod pcapng;
#[cfg(feature = "python")]
pub mod py_analysis;
#[cfg(feature = "python")]
pub mod py_bindings;
#[cfg(feature = "python")]
pub mod py_flows;
#[cfg(feature = "python")]
pub mod py_sim;
pub mod reader;
pub mod record;
pub mod sim;
pub mod source;
pub mod tcp;

#[cfg(feature = "python")]
#[pyo3::pymodule]
fn _native(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
    py_analysis::register(m)?;
    py_bindings::register(m)?;
    py_flows::register(m)?;
    py_sim::register(m)?;
    Ok(())
}
