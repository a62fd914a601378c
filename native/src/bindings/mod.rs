//! The Python module `stallscope._native`: the decoder, the connection table, the analyzer's
//! passes and the simulator, each bound in its own file.

pub mod analysis;
pub mod decoder;
pub mod flows;
pub mod sim;

pub fn register(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
    analysis::register(m)?;
    decoder::register(m)?;
    flows::register(m)?;
    sim::register(m)?;
    Ok(())
}
