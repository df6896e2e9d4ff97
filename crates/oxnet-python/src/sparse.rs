//! Sparse arrays in Python: a row_sparse or csr array is an instance of the Python
//! classes `RowSparseNDArray` / `CSRNDArray` (python/oxnet/ndarray/sparse.py), which
//! subclass NDArray and hold the core `SparseArray` in the handle's `sparse` field.
//! This module creates them, exposes their parts, and converts between the Python
//! handle and the core's `AnyArray` for the storage dispatch (`op::sparse`).

use crate::array::NDArray as PyND;
use crate::convert::{ctx_of, dtype_of};
use crate::{err, IntoPy};
use oxnet_core::ndarray::{AnyArray, SType, SparseArray};
use oxnet_core::{DType, Error};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;

/// The core array a Python sparse NDArray is constructed from.
#[pyclass(frozen, module = "oxnet._core")]
pub struct SparseHandle {
    pub(crate) inner: SparseArray,
}

static CLASSES: PyOnceLock<(Py<PyAny>, Py<PyAny>)> = PyOnceLock::new();

/// Registers the Python classes of row_sparse and csr arrays.
#[pyfunction]
fn _set_sparse_classes(py: Python<'_>, rsp: Py<PyAny>, csr: Py<PyAny>) -> PyResult<()> {
    let _ = CLASSES.set(py, (rsp, csr));
    Ok(())
}

/// The Python object for an array of any storage type.
pub(crate) fn wrap_any(py: Python<'_>, a: AnyArray) -> PyResult<Py<PyAny>> {
    match a {
        AnyArray::Dense(d) => Ok(Py::new(py, PyND::new(d))?.into_any()),
        AnyArray::Sparse(s) => wrap_sparse(py, s),
    }
}

pub(crate) fn wrap_sparse(py: Python<'_>, s: SparseArray) -> PyResult<Py<PyAny>> {
    let (rsp, csr) = CLASSES.get(py).ok_or_else(|| err(Error::new("sparse classes not registered (import oxnet.ndarray.sparse)")))?;
    let cls = if s.stype() == SType::Csr { csr } else { rsp };
    Ok(cls.bind(py).call1((SparseHandle { inner: s },))?.unbind())
}

/// The core array behind a Python NDArray of any storage type.
pub(crate) fn any_of(a: &PyND) -> AnyArray {
    match &a.sparse {
        Some(s) => AnyArray::Sparse(s.clone()),
        None => AnyArray::Dense(a.arr()),
    }
}

fn sparse_of(a: &PyND) -> PyResult<&SparseArray> {
    a.sparse.as_ref().ok_or_else(|| err(Error::new("not a sparse array")))
}

fn stype_of(s: &str) -> PyResult<SType> {
    SType::from_name(s).map_err(err)
}

fn aux_dtypes(aux_types: Option<Vec<Bound<'_, PyAny>>>) -> PyResult<Option<Vec<DType>>> {
    match aux_types {
        None => Ok(None),
        Some(v) => Ok(Some(v.iter().map(dtype_of).collect::<PyResult<_>>()?)),
    }
}

/// An all-zero sparse array.
#[pyfunction]
#[pyo3(signature = (stype, shape, ctx, dtype, aux_types=None))]
fn _sparse_zeros(
    py: Python<'_>,
    stype: &str,
    shape: Vec<usize>,
    ctx: &Bound<'_, PyAny>,
    dtype: &Bound<'_, PyAny>,
    aux_types: Option<Vec<Bound<'_, PyAny>>>,
) -> PyResult<Py<PyAny>> {
    let st = stype_of(stype)?;
    let aux = aux_dtypes(aux_types)?;
    let s = SparseArray::zeros(st, &shape, ctx_of(ctx)?, dtype_of(dtype)?, aux.as_deref()).py_err()?;
    wrap_sparse(py, s)
}

/// A sparse array from copies of its parts (data, then the aux arrays in MXNet's
/// order: row_sparse [indices]; csr [indptr, indices]).
#[pyfunction]
fn _sparse_from_parts(
    py: Python<'_>,
    stype: &str,
    shape: Vec<usize>,
    data: PyRef<'_, PyND>,
    aux: Vec<PyRef<'_, PyND>>,
) -> PyResult<Py<PyAny>> {
    let st = stype_of(stype)?;
    let aux: Vec<oxnet_core::NDArray> = aux.iter().map(|a| a.inner.clone()).collect();
    let s = SparseArray::from_parts(st, &shape, &data.inner, &aux).py_err()?;
    wrap_sparse(py, s)
}

/// (stype, shape, dtype name, (device type id, device id), aux dtype names).
#[pyfunction]
fn _sp_info<'py>(py: Python<'py>, a: PyRef<'_, PyND>) -> PyResult<Bound<'py, PyTuple>> {
    let s = sparse_of(&a)?;
    let ctx = s.ctx();
    let aux: Vec<&str> = s.aux_types().iter().map(|d| d.name()).collect();
    (s.stype().name(), PyTuple::new(py, s.shape())?, s.dtype().name(), (ctx.dev_type as i32, ctx.dev_id), aux).into_pyobject(py)
}

/// Part `i` of a sparse array (-1: the values; 0.. the aux arrays), after pending
/// writes; it shares memory with the sparse array.
#[pyfunction]
fn _sp_part(py: Python<'_>, a: PyRef<'_, PyND>, i: i64) -> PyResult<Py<PyAny>> {
    let s = sparse_of(&a)?.clone();
    let parts = py.detach(|| s.parts_now()).py_err()?;
    let arr = if i < 0 {
        parts.data
    } else {
        parts.aux.get(i as usize).cloned().ok_or_else(|| err(Error::new(format!("aux index {i} out of range"))))?
    };
    Ok(Py::new(py, PyND::new(arr))?.into_any())
}

#[pyfunction]
fn _sp_check_format(py: Python<'_>, a: PyRef<'_, PyND>, full_check: bool) -> PyResult<()> {
    let s = sparse_of(&a)?.clone();
    py.detach(|| s.check_format(full_check)).py_err()
}

#[pyfunction]
fn _sp_wait(py: Python<'_>, a: PyRef<'_, PyND>, write: bool) -> PyResult<()> {
    let s = sparse_of(&a)?.clone();
    py.detach(|| if write { s.wait_to_write() } else { s.wait_to_read() }).py_err()
}

/// The same sparse array outside any autograd graph.
#[pyfunction]
fn _sp_detach(py: Python<'_>, a: PyRef<'_, PyND>) -> PyResult<Py<PyAny>> {
    wrap_sparse(py, sparse_of(&a)?.detach())
}

/// `a` cast to storage type `stype` (a new array; the same data for the same type).
#[pyfunction]
fn _cast_storage(py: Python<'_>, a: PyRef<'_, PyND>, stype: &str) -> PyResult<Py<PyAny>> {
    let st = stype_of(stype)?;
    let r = oxnet_core::op::sparse::cast_storage(&any_of(&a), st).py_err()?;
    wrap_any(py, r)
}

/// Writes `src` into `dst` (any storage types; cast as needed), in engine order.
#[pyfunction]
fn _copy_any(src: PyRef<'_, PyND>, dst: PyRef<'_, PyND>) -> PyResult<()> {
    oxnet_core::op::sparse::cast_into(&any_of(&src), &any_of(&dst)).py_err()
}

pub(crate) fn add_functions(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SparseHandle>()?;
    m.add_function(wrap_pyfunction!(_set_sparse_classes, m)?)?;
    m.add_function(wrap_pyfunction!(_sparse_zeros, m)?)?;
    m.add_function(wrap_pyfunction!(_sparse_from_parts, m)?)?;
    m.add_function(wrap_pyfunction!(_sp_info, m)?)?;
    m.add_function(wrap_pyfunction!(_sp_part, m)?)?;
    m.add_function(wrap_pyfunction!(_sp_check_format, m)?)?;
    m.add_function(wrap_pyfunction!(_sp_wait, m)?)?;
    m.add_function(wrap_pyfunction!(_cast_storage, m)?)?;
    m.add_function(wrap_pyfunction!(_sp_detach, m)?)?;
    m.add_function(wrap_pyfunction!(_copy_any, m)?)?;
    Ok(())
}
