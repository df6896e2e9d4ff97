//! `mx.nd.save` / `mx.nd.load` and the pickle bytes, over oxnet-core's `.params`
//! reader and writer.

use crate::array::NDArray as PyND;
use crate::IntoPy;
use oxnet_core::io::params;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

fn named<'a>(arrays: &'a [PyRef<'a, PyND>], names: &'a [String]) -> Vec<(Option<&'a str>, &'a oxnet_core::NDArray)> {
    arrays.iter().enumerate().map(|(i, a)| (names.get(i).map(|s| s.as_str()), &a.inner)).collect()
}

/// Saves arrays (with names for a dict, none for a list) to `fname`.
#[pyfunction]
fn save(py: Python<'_>, fname: &str, arrays: Vec<PyRef<'_, PyND>>, names: Vec<String>) -> PyResult<()> {
    if !names.is_empty() && names.len() != arrays.len() {
        return Err(crate::err(oxnet_core::Error::new("save: one name per array is needed")));
    }
    let list = named(&arrays, &names);
    let bytes = py.detach(|| params::save_to_bytes(&list)).py_err()?;
    std::fs::write(fname, bytes).map_err(|e| crate::err(oxnet_core::Error::new(format!("cannot write {fname}: {e}"))))
}

fn wrap(py: Python<'_>, loaded: (Vec<oxnet_core::NDArray>, Vec<String>)) -> PyResult<(Vec<Py<PyND>>, Vec<String>)> {
    let arrays = loaded.0.into_iter().map(|a| Py::new(py, PyND::new(a))).collect::<PyResult<Vec<_>>>()?;
    Ok((arrays, loaded.1))
}

/// Loads (arrays, names) from a file in MXNet's format.
#[pyfunction]
fn load(py: Python<'_>, fname: &str) -> PyResult<(Vec<Py<PyND>>, Vec<String>)> {
    let bytes = std::fs::read(fname).map_err(|e| crate::err(oxnet_core::Error::new(format!("cannot read {fname}: {e}"))))?;
    let loaded = py.detach(|| params::load_from_bytes(&bytes)).py_err()?;
    wrap(py, loaded)
}

/// Loads (arrays, names) from bytes in MXNet's format.
#[pyfunction]
fn load_frombuffer(py: Python<'_>, buf: &[u8]) -> PyResult<(Vec<Py<PyND>>, Vec<String>)> {
    let loaded = py.detach(|| params::load_from_bytes(buf)).py_err()?;
    wrap(py, loaded)
}

/// One array's bytes in MXNet's single-array format (what pickling stores).
#[pyfunction]
fn save_raw<'py>(py: Python<'py>, a: PyRef<'py, PyND>) -> PyResult<Bound<'py, PyBytes>> {
    let inner = a.inner.clone();
    let bytes = py.detach(move || params::save_raw_bytes(&inner)).py_err()?;
    Ok(PyBytes::new(py, &bytes))
}

/// An array from MXNet's single-array bytes.
#[pyfunction]
fn load_raw(py: Python<'_>, buf: &[u8]) -> PyResult<PyND> {
    Ok(PyND::new(py.detach(|| params::load_raw_bytes(buf)).py_err()?))
}

/// Saves arrays of any storage type (sparse ones in MXNet's sparse layout).
#[pyfunction]
#[pyo3(signature = (fname, arrays, names, np_shape=false))]
fn save_any(py: Python<'_>, fname: &str, arrays: Vec<PyRef<'_, PyND>>, names: Vec<String>, np_shape: bool) -> PyResult<()> {
    if !names.is_empty() && names.len() != arrays.len() {
        return Err(crate::err(oxnet_core::Error::new("save: one name per array is needed")));
    }
    let any: Vec<oxnet_core::AnyArray> = arrays.iter().map(|a| crate::sparse::any_of(a)).collect();
    let list: Vec<(Option<&str>, &oxnet_core::AnyArray)> =
        any.iter().enumerate().map(|(i, a)| (names.get(i).map(|s| s.as_str()), a)).collect();
    let sem = if np_shape { params::ShapeSemantics::Np } else { params::ShapeSemantics::Legacy };
    let bytes = py.detach(|| params::save_any_to_bytes_with(&list, sem)).py_err()?;
    std::fs::write(fname, bytes).map_err(|e| crate::err(oxnet_core::Error::new(format!("cannot write {fname}: {e}"))))
}

/// Loads (arrays, names), sparse arrays kept sparse. With `np_shape` given, MXNet's
/// rule applies: arrays saved under NumPy shape semantics load only with them on
/// (`np_shape=True`), the others only with them off.
#[pyfunction]
#[pyo3(signature = (buf, np_shape=None))]
fn load_any(py: Python<'_>, buf: &[u8], np_shape: Option<bool>) -> PyResult<(Vec<Py<PyAny>>, Vec<String>)> {
    let (arrays, names) = py
        .detach(|| match np_shape {
            None => params::load_any_from_bytes(buf),
            Some(np) => params::load_any_from_bytes_with(buf, if np { params::ShapeSemantics::Np } else { params::ShapeSemantics::Legacy }),
        })
        .py_err()?;
    let arrays = arrays.into_iter().map(|a| crate::sparse::wrap_any(py, a)).collect::<PyResult<Vec<_>>>()?;
    Ok((arrays, names))
}

/// One array of any storage type in the single-array format.
#[pyfunction]
fn save_raw_any<'py>(py: Python<'py>, a: PyRef<'py, PyND>) -> PyResult<Bound<'py, PyBytes>> {
    let any = crate::sparse::any_of(&a);
    let bytes = py.detach(move || params::save_raw_any(&any)).py_err()?;
    Ok(PyBytes::new(py, &bytes))
}

/// An array of any storage type from single-array bytes.
#[pyfunction]
fn load_raw_any(py: Python<'_>, buf: &[u8]) -> PyResult<Py<PyAny>> {
    let a = py.detach(|| params::load_raw_any(buf)).py_err()?;
    crate::sparse::wrap_any(py, a)
}

pub(crate) fn add_functions(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(save_any, m)?)?;
    m.add_function(wrap_pyfunction!(load_any, m)?)?;
    m.add_function(wrap_pyfunction!(save_raw_any, m)?)?;
    m.add_function(wrap_pyfunction!(load_raw_any, m)?)?;
    m.add_function(wrap_pyfunction!(save, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(load_frombuffer, m)?)?;
    m.add_function(wrap_pyfunction!(save_raw, m)?)?;
    m.add_function(wrap_pyfunction!(load_raw, m)?)?;
    Ok(())
}
