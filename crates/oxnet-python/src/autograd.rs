//! Autograd glue: the recording/training flags, attach_grad / mark_variables,
//! backward and grad, and custom Python functions (`autograd.Function`), over
//! `oxnet_core::autograd`. python/oxnet/autograd.py is the user-facing module.

use crate::array::NDArray as PyND;
use crate::{err, IntoPy};
use oxnet_core::autograd::{self as ag, CustomGrad, GradReq};
use oxnet_core::op;
use oxnet_core::Error;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::sync::Arc;

#[pyfunction]
fn is_recording() -> bool {
    ag::is_recording()
}
#[pyfunction]
fn is_training() -> bool {
    ag::is_training()
}
#[pyfunction]
fn set_recording(on: bool) -> bool {
    ag::set_recording(on)
}
#[pyfunction]
fn set_training(on: bool) -> bool {
    ag::set_training(on)
}

/// Marks `var` as a variable with gradient buffer `grad` (MXNet's mark_variables).
#[pyfunction]
fn mark_variable(var: &PyND, grad: &PyND, grad_req: &str) -> PyResult<()> {
    let req = GradReq::parse(grad_req).py_err()?;
    if let Some(vs) = &var.sparse {
        let e = match &grad.sparse {
            Some(g) => ag::sparse_variable(vs.shape(), g.clone(), req),
            None => ag::dense_variable(vs.shape(), grad.inner.clone(), req),
        };
        vs.set_ag_entry(Some(e.py_err()?));
        return Ok(());
    }
    let mut v = var.inner.clone();
    match &grad.sparse {
        Some(s) => ag::mark_variable_sparse(&mut v, s.clone(), req).py_err()?,
        None => ag::mark_variable(&mut v, grad.inner.clone(), req).py_err()?,
    }
    *var.ag.lock() = v.ag_entry().cloned();
    Ok(())
}

/// `attach_grad`: a zero gradient buffer like the array, and the array marked.
#[pyfunction]
fn attach_grad(var: &PyND, grad_req: &str) -> PyResult<()> {
    let req = GradReq::parse(grad_req).py_err()?;
    if let Some(vs) = &var.sparse {
        // A csr/row_sparse array with a dense gradient buffer (stype='default').
        let g = oxnet_core::NDArray::empty(vs.shape(), vs.ctx(), vs.dtype()).py_err()?;
        let g = op::call1("zeros_like", std::slice::from_ref(&g), &[]).py_err()?;
        vs.set_ag_entry(Some(ag::dense_variable(vs.shape(), g, req).py_err()?));
        return Ok(());
    }
    let g = op::call1("zeros_like", std::slice::from_ref(&var.inner), &[]).py_err()?;
    let mut v = var.inner.clone();
    ag::mark_variable(&mut v, g, req).py_err()?;
    *var.ag.lock() = v.ag_entry().cloned();
    Ok(())
}

/// Makes `var` a variable with a sparse (row_sparse or csr) gradient buffer.
#[pyfunction]
fn attach_grad_sparse(var: &PyND, grad_req: &str, stype: &str) -> PyResult<()> {
    let req = GradReq::parse(grad_req).py_err()?;
    let st = oxnet_core::SType::from_name(stype).py_err()?;
    if let Some(vs) = &var.sparse {
        let g = oxnet_core::SparseArray::zeros(st, vs.shape(), vs.ctx(), vs.dtype(), None).py_err()?;
        vs.set_ag_entry(Some(ag::sparse_variable(vs.shape(), g, req).py_err()?));
        return Ok(());
    }
    let a = &var.inner;
    let g = oxnet_core::SparseArray::zeros(st, a.shape(), a.ctx(), a.dtype(), None).py_err()?;
    let mut v = var.inner.clone();
    ag::mark_variable_sparse(&mut v, g, req).py_err()?;
    *var.ag.lock() = v.ag_entry().cloned();
    Ok(())
}

/// The gradient buffer of a variable (sparse for a sparse buffer), or None.
#[pyfunction]
fn get_grad(py: Python<'_>, var: &PyND) -> PyResult<Option<Py<PyAny>>> {
    let entry = match &var.sparse {
        Some(s) => s.ag_entry(),
        None => var.ag.lock().clone(),
    };
    let Some(e) = entry else { return Ok(None) };
    if !e.is_variable() {
        return Ok(None);
    }
    if let Some(s) = e.sparse_grad() {
        return Ok(Some(crate::sparse::wrap_sparse(py, s)?));
    }
    match e.grad() {
        Some(g) => Ok(Some(Py::new(py, PyND::new(g))?.into_any())),
        None => Ok(None),
    }
}

/// The grad_req of a variable ('null', 'write', 'add'), or None.
#[pyfunction]
fn get_grad_req(var: &PyND) -> Option<&'static str> {
    let e = var.ag.lock().clone()?;
    e.grad_req().map(|r| r.name())
}

#[pyfunction]
fn get_fresh_grad(var: &PyND) -> bool {
    var.ag.lock().as_ref().map(|e| e.fresh_grad()).unwrap_or(false)
}

#[pyfunction]
fn set_fresh_grad(var: &PyND, v: bool) {
    if let Some(e) = var.ag.lock().as_ref() {
        e.set_fresh_grad(v);
    }
}

/// The same data outside any graph.
#[pyfunction]
fn detach(a: &PyND) -> PyND {
    PyND::view(a.inner.clone(), a.writable)
}

/// True when the array is the output of a recorded op or a variable.
#[pyfunction]
fn in_graph(a: &PyND) -> bool {
    match &a.sparse {
        Some(s) => s.ag_entry().map(|e| e.is_live()).unwrap_or(false),
        None => a.ag.lock().as_ref().map(|e| e.is_live()).unwrap_or(false),
    }
}

fn arrays(list: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<oxnet_core::NDArray>> {
    let mut v = Vec::new();
    for item in list.try_iter()? {
        let item = item?;
        let a = item.cast::<PyND>().map_err(|_| err(Error::new(format!("{what} must be NDArrays"))))?;
        v.push(graph_array(a.get())?);
    }
    Ok(v)
}

/// The array as autograd sees it: a dense array with its entry; for a csr or
/// row_sparse array, a stand-in of its logical shape carrying the sparse array's
/// entry (never read; the core does the same for sparse variables, see
/// `op::sparse`), so sparse variables and sparse outputs of custom functions take
/// part in backward.
fn graph_array(a: &PyND) -> PyResult<oxnet_core::NDArray> {
    match &a.sparse {
        None => Ok(a.with_entry()),
        Some(s) => {
            let mut anchor = oxnet_core::NDArray::empty(s.shape(), s.ctx(), s.dtype()).py_err()?;
            anchor.set_ag_entry(s.ag_entry());
            Ok(anchor)
        }
    }
}

/// Runs backward from `heads`; `head_grads` items may be None (ones). With
/// `variables`, returns their gradients (autograd.grad) instead of writing buffers.
#[pyfunction]
#[pyo3(signature = (heads, head_grads, variables=None, retain_graph=false, train_mode=true, create_graph=false))]
fn backward<'py>(
    py: Python<'py>,
    heads: &Bound<'py, PyAny>,
    head_grads: &Bound<'py, PyAny>,
    variables: Option<&Bound<'py, PyAny>>,
    retain_graph: bool,
    train_mode: bool,
    create_graph: bool,
) -> PyResult<Option<Py<PyList>>> {
    let hs = arrays(heads, "heads")?;
    let mut hg = Vec::new();
    for item in head_grads.try_iter()? {
        let item = item?;
        if item.is_none() {
            hg.push(None);
        } else {
            let a = item.cast::<PyND>().map_err(|_| err(Error::new("head_grads must be NDArrays or None")))?;
            hg.push(Some(a.get().inner.clone()));
        }
    }
    let vs = match variables {
        Some(v) => Some(arrays(v, "variables")?),
        None => None,
    };
    crate::throttle(py);
    let res = ag::backward(&hs, &hg, vs.as_deref(), retain_graph, train_mode, create_graph).py_err()?;
    match res {
        None => Ok(None),
        Some(gs) => {
            let list = PyList::empty(py);
            for g in gs {
                list.append(Py::new(py, PyND::new(g))?)?;
            }
            Ok(Some(list.unbind()))
        }
    }
}

/// A Python `autograd.Function`'s backward, called by the core's backward.
struct PyFunction {
    name: String,
    func: Py<PyAny>,
}

impl CustomGrad for PyFunction {
    fn name(&self) -> &str {
        &self.name
    }
    fn backward(&self, out_grads: &[oxnet_core::NDArray], _is_train: bool) -> oxnet_core::Result<Vec<Option<oxnet_core::NDArray>>> {
        Python::attach(|py| {
            let fail = |e: PyErr| Error::new(format!("Error in custom function {}.backward: {}", self.name, e.value(py)));
            let mut gs = Vec::with_capacity(out_grads.len());
            for g in out_grads {
                gs.push(Py::new(py, PyND::new(g.clone())).map_err(fail)?);
            }
            let args = PyTuple::new(py, gs).map_err(fail)?;
            let ret = self.func.bind(py).call1(args).map_err(fail)?;
            let mut out = Vec::new();
            for item in ret.try_iter().map_err(fail)? {
                let item = item.map_err(fail)?;
                if item.is_none() {
                    out.push(None);
                } else {
                    let a = item
                        .cast::<PyND>()
                        .map_err(|_| Error::new(format!("custom function {}.backward must return NDArrays", self.name)))?;
                    let a = a.get();
                    // gradients flow dense; a sparse one is cast (a sparse variable's
                    // buffer gets it cast back)
                    out.push(Some(match &a.sparse {
                        Some(sp) => {
                            let d = op::sparse::cast_storage(&oxnet_core::AnyArray::Sparse(sp.clone()), oxnet_core::SType::Default)?;
                            d.dense().cloned().ok_or_else(|| Error::new("cast to default storage gave a sparse array"))?
                        }
                        None => a.inner.clone(),
                    }));
                }
            }
            Ok(out)
        })
    }
}

/// Records a custom function: `outputs` (computed from `inputs` outside recording)
/// get entries whose backward calls `backward_fn(*out_grads)`, which returns the
/// list of input gradients.
#[pyfunction]
fn record_custom(name: String, inputs: &Bound<'_, PyAny>, outputs: &Bound<'_, PyAny>, backward_fn: Py<PyAny>) -> PyResult<()> {
    let ins = arrays(inputs, "inputs")?;
    let mut outs = Vec::new();
    let mut handles = Vec::new();
    for item in outputs.try_iter()? {
        let item = item?;
        let a = item.cast::<PyND>().map_err(|_| err(Error::new("Function outputs must be NDArrays")))?.clone();
        outs.push(match &a.get().sparse {
            Some(s) => oxnet_core::NDArray::empty(s.shape(), s.ctx(), s.dtype()).py_err()?,
            None => a.get().inner.clone(),
        });
        handles.push(a);
    }
    ag::record_custom(Arc::new(PyFunction { name, func: backward_fn }), &ins, &mut outs);
    for (h, o) in handles.iter().zip(&outs) {
        match &h.get().sparse {
            Some(s) => s.set_ag_entry(o.ag_entry().cloned()),
            None => *h.get().ag.lock() = o.ag_entry().cloned(),
        }
    }
    Ok(())
}

/// The recorded history of `x` as a symbol (autograd.get_symbol).
#[pyfunction]
fn get_symbol(x: &PyND) -> PyResult<crate::symbol::SymbolHandle> {
    let s = ag::get_symbol(&x.with_entry()).py_err()?;
    Ok(crate::symbol::SymbolHandle { inner: s })
}

pub(crate) fn add_functions(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(get_symbol, m)?)?;
    m.add_function(wrap_pyfunction!(is_recording, m)?)?;
    m.add_function(wrap_pyfunction!(is_training, m)?)?;
    m.add_function(wrap_pyfunction!(set_recording, m)?)?;
    m.add_function(wrap_pyfunction!(set_training, m)?)?;
    m.add_function(wrap_pyfunction!(mark_variable, m)?)?;
    m.add_function(wrap_pyfunction!(attach_grad, m)?)?;
    m.add_function(wrap_pyfunction!(get_grad, m)?)?;
    m.add_function(wrap_pyfunction!(attach_grad_sparse, m)?)?;
    m.add_function(wrap_pyfunction!(get_grad_req, m)?)?;
    m.add_function(wrap_pyfunction!(get_fresh_grad, m)?)?;
    m.add_function(wrap_pyfunction!(set_fresh_grad, m)?)?;
    m.add_function(wrap_pyfunction!(detach, m)?)?;
    m.add_function(wrap_pyfunction!(in_graph, m)?)?;
    m.add_function(wrap_pyfunction!(backward, m)?)?;
    m.add_function(wrap_pyfunction!(record_custom, m)?)?;
    Ok(())
}
