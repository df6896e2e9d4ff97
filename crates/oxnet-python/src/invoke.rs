//! Calling registry ops from Python: the `Op` handle (what the generated `mx.nd.*`
//! functions wrap) and `invoke`, the one generic call.

use crate::array::NDArray as PyND;
use crate::convert::{ctx_of, value_of};
use crate::{err, IntoPy};
use oxnet_core::ndarray::AnyArray;
use oxnet_core::op::{self, Arity, OpDef, Value};
use oxnet_core::Error;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyTuple};

/// A registered operator.
#[pyclass(frozen, module = "oxnet._core")]
pub struct Op {
    pub(crate) def: &'static OpDef,
}

#[pymethods]
impl Op {
    #[getter]
    fn name(&self) -> &'static str {
        self.def.name
    }
    #[getter]
    fn doc(&self) -> String {
        self.def.docstring()
    }
    /// Names of the inputs (for variadic ops, the one name of the list).
    #[getter]
    fn input_names(&self) -> Vec<&'static str> {
        match self.def.inputs {
            Arity::Fixed(n) => n.to_vec(),
            Arity::Variadic { name, .. } => vec![name],
            Arity::Dynamic { all, .. } => all.to_vec(),
        }
    }
    /// The count parameter of a variadic op (e.g. `num_args`), else None.
    #[getter]
    fn variadic(&self) -> Option<&'static str> {
        match self.def.inputs {
            Arity::Fixed(_) | Arity::Dynamic { .. } => None,
            Arity::Variadic { count, .. } => Some(count),
        }
    }
    #[getter]
    fn param_names(&self) -> Vec<&'static str> {
        self.def.params.iter().map(|p| p.name).collect()
    }
    #[getter]
    fn num_outputs_hint(&self) -> usize {
        1
    }
    fn __repr__(&self) -> String {
        format!("<Op {}>", self.def.name)
    }
}

static NULL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Registers the sentinel that marks "argument not given" in generated functions.
#[pyfunction]
fn _set_null(py: Python<'_>, null: Py<PyAny>) -> PyResult<()> {
    let _ = NULL.set(py, null);
    Ok(())
}

/// The op registered under `name`.
#[pyfunction]
fn get_op(name: &str) -> PyResult<Op> {
    Ok(Op { def: op::lookup(name).map_err(err)? })
}

/// Every registered name (ops and aliases) with the op's canonical name.
#[pyfunction]
fn list_ops() -> Vec<(&'static str, &'static str)> {
    op::all_names().into_iter().map(|n| (n, op::lookup(n).map(|d| d.name).unwrap_or(n))).collect()
}

/// Registry ops without a CUDA kernel (on a GPU they run on the host; see
/// `op::cuda_host`).
#[pyfunction]
fn ops_without_cuda() -> Vec<&'static str> {
    op::cuda_host::ops_without_cuda()
}

fn collect_inputs<'py>(def: &'static OpDef, obj: &Bound<'py, PyAny>, names: &[&str], idx: usize, out: &mut Vec<AnyArray>) -> PyResult<()> {
    if obj.is_none() {
        return Err(err(Error::op(def.name, format!("required input '{}' is missing", names.get(idx).unwrap_or(&"data")))));
    }
    if let Ok(a) = obj.cast::<PyND>() {
        out.push(crate::sparse::any_of(a.get()));
        return Ok(());
    }
    if matches!(def.inputs, Arity::Variadic { .. }) && (obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>()) {
        for item in obj.try_iter()? {
            collect_inputs(def, &item?, names, idx, out)?;
        }
        return Ok(());
    }
    Err(err(Error::op(
        def.name,
        format!(
            "input '{}' must be an NDArray, got {}",
            names.get(idx).unwrap_or(&"data"),
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ),
    )))
}

fn outputs_of(obj: &Bound<'_, PyAny>) -> PyResult<Vec<AnyArray>> {
    if let Ok(a) = obj.cast::<PyND>() {
        if !a.get().writable {
            return Err(err(Error::new("trying to write to a readonly NDArray")));
        }
        return Ok(vec![crate::sparse::any_of(a.get())]);
    }
    let mut v = Vec::new();
    for item in obj.try_iter()? {
        let item = item?;
        let a = item.cast::<PyND>().map_err(|_| err(Error::new("out must be an NDArray or a list of NDArrays")))?;
        v.push(crate::sparse::any_of(a.get()));
    }
    Ok(v)
}

/// Hands the autograd entries of a recorded op's outputs to the `out` arrays.
fn give_entries(obj: &Bound<'_, PyAny>, res: &[oxnet_core::NDArray]) -> PyResult<()> {
    if let Ok(a) = obj.cast::<PyND>() {
        if let Some(r) = res.first() {
            a.get().take_entry_of(r);
        }
        return Ok(());
    }
    for (item, r) in obj.try_iter()?.zip(res) {
        if let Ok(a) = item?.cast::<PyND>() {
            a.get().take_entry_of(r);
        }
    }
    Ok(())
}

/// A parameter conversion error, naming the op and the parameter.
fn param_err(py: Python<'_>, def: &OpDef, name: &str, e: PyErr) -> PyErr {
    err(Error::op(def.name, format!("invalid value for parameter '{name}': {}", e.value(py))))
}

/// Runs `op`: `inputs` are the NDArray arguments in order, `params` the values of
/// the op's parameters in declaration order (the null sentinel where not given),
/// `kwargs` anything else by name. Returns `out` when given, else the new
/// array (or the list of arrays for ops with several outputs).
#[pyfunction]
#[pyo3(signature = (op, inputs, params, out=None, kwargs=None))]
fn invoke<'py>(
    py: Python<'py>,
    op: &Op,
    inputs: &Bound<'py, PyTuple>,
    params: &Bound<'py, PyTuple>,
    out: Option<&Bound<'py, PyAny>>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let def = op.def;
    let null = NULL.get(py).map(|n| n.bind(py).clone());
    let is_null = |o: &Bound<'py, PyAny>| null.as_ref().map(|n| o.is(n)).unwrap_or(false);
    let names: Vec<&str> = match def.inputs {
        Arity::Fixed(n) => n.to_vec(),
        Arity::Variadic { name, .. } => vec![name],
        Arity::Dynamic { all, .. } => all.to_vec(),
    };
    let mut arrays = Vec::with_capacity(inputs.len());
    for (i, obj) in inputs.iter().enumerate() {
        // Inputs a parameter can drop (no_bias=True drops `bias`) default to None.
        if is_null(&obj) || (matches!(def.inputs, Arity::Dynamic { .. }) && obj.is_none()) {
            continue;
        }
        collect_inputs(def, &obj, &names, i, &mut arrays)?;
    }
    let mut given: Vec<(String, Value)> = Vec::with_capacity(params.len());
    for (spec, obj) in def.params.iter().zip(params.iter()) {
        if !is_null(&obj) {
            let v = value_of(&obj).map_err(|e| param_err(py, def, spec.name, e))?;
            given.push((spec.name.to_string(), v));
        }
    }
    let mut ctx = None;
    if let Some(kw) = kwargs {
        for (k, v) in kw.iter() {
            let k: String = k.extract()?;
            match k.as_str() {
                "name" | "attr" => {}
                "ctx" if !def.params.iter().any(|p| p.name == "ctx") => {
                    if !v.is_none() {
                        ctx = Some(ctx_of(&v)?);
                    }
                }
                _ => {
                    let val = value_of(&v).map_err(|e| param_err(py, def, &k, e))?;
                    given.push((k, val));
                }
            }
        }
    }
    if let Arity::Variadic { count, .. } = def.inputs {
        if !given.iter().any(|(k, _)| k == count) {
            given.push((count.to_string(), Value::Int(arrays.len() as i64)));
        }
    }
    let params = def.parse(given).py_err()?;
    let out_arrays = match out {
        Some(o) if !o.is_none() && !is_null(o) => Some(outputs_of(o)?),
        _ => None,
    };
    crate::throttle(py);
    let sparse = def.sparse.is_some()
        || arrays.iter().any(|a| a.sparse().is_some())
        || out_arrays.as_ref().map(|o| o.iter().any(|a| a.sparse().is_some())).unwrap_or(false);
    if sparse {
        let mut result = op::sparse::invoke_any(def, &arrays, params.clone(), out_arrays.as_deref(), ctx).py_err()?;
        result.truncate(def.num_visible(&params, result.len()));
        if let Some(o) = out {
            if !o.is_none() && !is_null(o) {
                if oxnet_core::autograd::is_recording() {
                    let dense: Vec<oxnet_core::NDArray> = result.iter().filter_map(|a| a.dense().cloned()).collect();
                    give_entries(o, &dense)?;
                }
                return Ok(o.clone().unbind());
            }
        }
        if result.len() == 1 {
            return crate::sparse::wrap_any(py, result.remove(0));
        }
        let list = PyList::empty(py);
        for a in result {
            list.append(crate::sparse::wrap_any(py, a)?)?;
        }
        return Ok(list.into_any().unbind());
    }
    let arrays: Vec<oxnet_core::NDArray> = arrays.into_iter().map(|a| a.dense().unwrap().clone()).collect();
    let out_arrays: Option<Vec<oxnet_core::NDArray>> = out_arrays.map(|o| o.into_iter().map(|a| a.dense().unwrap().clone()).collect());
    let mut result = op::invoke(def, &arrays, params.clone(), out_arrays.as_deref(), ctx).py_err()?;
    result.truncate(def.num_visible(&params, result.len()));
    if let Some(o) = out {
        if !o.is_none() && !is_null(o) {
            if oxnet_core::autograd::is_recording() {
                give_entries(o, &result)?;
            }
            return Ok(o.clone().unbind());
        }
    }
    if result.len() == 1 {
        let a = result.into_iter().next().unwrap();
        return Ok(Py::new(py, PyND::new(a))?.into_any());
    }
    let list = PyList::empty(py);
    for a in result {
        list.append(Py::new(py, PyND::new(a))?)?;
    }
    Ok(list.into_any().unbind())
}

pub(crate) fn add_functions(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_set_null, m)?)?;
    m.add_function(wrap_pyfunction!(get_op, m)?)?;
    m.add_function(wrap_pyfunction!(list_ops, m)?)?;
    m.add_function(wrap_pyfunction!(ops_without_cuda, m)?)?;
    m.add_function(wrap_pyfunction!(invoke, m)?)?;
    Ok(())
}
