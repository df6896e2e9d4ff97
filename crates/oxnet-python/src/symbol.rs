//! Symbol and executor handles: `mx.sym.Symbol` and `mx.executor.Executor` wrap
//! these. The graph, its JSON, inference and execution are all in
//! `oxnet_core::graph`; this file only converts arguments and results.

use crate::array::NDArray as PyND;
use crate::convert::{ctx_of, dtype_of};
use crate::invoke::Op;
use crate::IntoPy;
use oxnet_core::graph::{self, GradReq};
use oxnet_core::shape::Shape;
use oxnet_core::DType;
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::HashMap;

#[pyclass(name = "SymbolHandle", module = "oxnet._core", frozen)]
pub struct SymbolHandle {
    pub(crate) inner: graph::Symbol,
}

fn wrap(s: graph::Symbol) -> SymbolHandle {
    SymbolHandle { inner: s }
}

type ShapeList = Vec<Option<Vec<usize>>>;
type DTypeList = Vec<Option<&'static str>>;

#[pymethods]
impl SymbolHandle {
    fn to_json(&self) -> String {
        self.inner.to_json()
    }
    fn list_arguments(&self) -> Vec<String> {
        self.inner.list_arguments()
    }
    fn list_outputs(&self) -> Vec<String> {
        self.inner.list_outputs()
    }
    fn list_auxiliary_states(&self) -> Vec<String> {
        self.inner.list_auxiliary_states()
    }
    fn list_inputs(&self) -> Vec<String> {
        self.inner.list_inputs()
    }
    #[getter]
    fn name(&self) -> Option<String> {
        self.inner.name()
    }
    fn num_outputs(&self) -> usize {
        self.inner.outputs.len()
    }
    fn output(&self, i: usize) -> PyResult<SymbolHandle> {
        self.inner.output(i).py_err().map(wrap)
    }
    fn find_output(&self, name: &str) -> PyResult<usize> {
        self.inner.find_output(name).py_err()
    }
    fn get_internals(&self) -> SymbolHandle {
        wrap(self.inner.get_internals())
    }
    fn get_children(&self) -> Option<SymbolHandle> {
        self.inner.get_children().map(wrap)
    }
    fn attr(&self, key: &str) -> Option<String> {
        self.inner.attr(key)
    }
    fn list_attr(&self) -> Vec<(String, String)> {
        self.inner.list_attr()
    }
    fn attr_dict(&self) -> Vec<(String, Vec<(String, String)>)> {
        self.inner.attr_dict()
    }
    fn set_attr(&self, attrs: Vec<(String, String)>) -> PyResult<()> {
        self.inner.set_attr(&attrs).py_err()
    }
    /// (node name, op name or "null") of each output.
    fn output_nodes(&self) -> Vec<(String, String)> {
        self.inner.outputs.iter().map(|e| (e.node.name.clone(), e.node.op.map(|o| o.name).unwrap_or("null").to_string())).collect()
    }
    /// A copy with variables replaced; an atomic symbol becomes a node named
    /// `name` applied to the inputs.
    #[pyo3(signature = (positional, named, name=None))]
    fn compose(
        &self,
        positional: Vec<PyRef<'_, SymbolHandle>>,
        named: Vec<(String, PyRef<'_, SymbolHandle>)>,
        name: Option<String>,
    ) -> PyResult<SymbolHandle> {
        let pos: Vec<graph::Symbol> = positional.iter().map(|s| s.inner.clone()).collect();
        let nam: Vec<(String, graph::Symbol)> = named.iter().map(|(k, s)| (k.clone(), s.inner.clone())).collect();
        self.inner.compose_named(&pos, &nam, name.as_deref()).py_err().map(wrap)
    }
    /// The head node's op and attributes without inputs (MXNet's
    /// `_gen_atomic_symbol`).
    fn gen_atomic_symbol(&self) -> PyResult<SymbolHandle> {
        self.inner.gen_atomic_symbol().py_err().map(wrap)
    }
    /// Cuts the subgraph marked by `__subgraph_name__` (MXNet's
    /// `MXSymbolCutSubgraph`): (the subgraph, the outside entries it now takes).
    fn cut_subgraph(&self) -> PyResult<(SymbolHandle, Vec<SymbolHandle>)> {
        let (g, ins) = self.inner.cut_subgraph().py_err()?;
        Ok((wrap(g), ins.into_iter().map(wrap).collect()))
    }
    /// The variables, one symbol each, in `list_inputs` order.
    fn input_vars(&self) -> Vec<SymbolHandle> {
        self.inner.input_vars().into_iter().map(wrap).collect()
    }
    /// The output index of each output (MXNet's `_value_index`).
    fn value_indices(&self) -> Vec<usize> {
        self.inner.value_indices()
    }
    fn check_unique_names(&self) -> PyResult<()> {
        self.inner.check_unique_names().py_err()
    }
    /// Shapes of (arguments, outputs, auxiliary states); None where unknown, 0 for
    /// the unknown dimensions of a partly known shape.
    /// Variables sharing a name (which cannot be bound) are inferred each on its own,
    /// a given shape applying to all of them, as in MXNet.
    fn infer_shape(&self, known: HashMap<String, Vec<usize>>) -> PyResult<(ShapeList, ShapeList, ShapeList)> {
        let shapes: HashMap<String, Shape> = known.into_iter().map(|(k, v)| (k, Shape::from_slice(&v))).collect();
        let r = graph::infer::infer(&self.inner, &shapes, &HashMap::new(), true).py_err()?;
        let (args, aux) = self.inner.var_nodes();
        let v = |n: &std::sync::Arc<graph::Node>| r.var_partial(n).map(|s| s.to_vec());
        Ok((
            args.iter().map(v).collect(),
            self.inner.outputs.iter().map(|e| r.partial_of(e).map(|s| s.to_vec())).collect(),
            aux.iter().map(v).collect(),
        ))
    }
    /// Dtype names of (arguments, outputs, auxiliary states); None where unknown.
    fn infer_type(&self, known: &Bound<'_, PyDict>) -> PyResult<(DTypeList, DTypeList, DTypeList)> {
        let mut dtypes: HashMap<String, DType> = HashMap::new();
        for (k, v) in known.iter() {
            dtypes.insert(k.extract()?, dtype_of(&v)?);
        }
        let r = graph::infer::infer(&self.inner, &HashMap::new(), &dtypes, false).py_err()?;
        let (args, aux) = self.inner.var_nodes();
        let v = |n: &std::sync::Arc<graph::Node>| r.var(n).1.map(|d| d.name());
        Ok((
            args.iter().map(v).collect(),
            self.inner.outputs.iter().map(|e| r.dtype_of(e).map(|d| d.name())).collect(),
            aux.iter().map(v).collect(),
        ))
    }
    /// Storage types of (outputs, argument gradients) for arguments and auxiliary
    /// states stored as `args` / `aux` (names: 'default', 'row_sparse', 'csr'), and
    /// whether some node computes on sparse storage (see `graph::storage`).
    fn infer_storage(&self, args: Vec<String>, aux: Vec<String>) -> PyResult<(Vec<&'static str>, Vec<&'static str>, bool)> {
        let st = |v: &[String]| v.iter().map(|s| oxnet_core::ndarray::SType::from_name(s)).collect::<oxnet_core::Result<Vec<_>>>();
        let (args, aux) = (st(&args).py_err()?, st(&aux).py_err()?);
        let r = graph::storage::infer_storage(&self.inner, &args, &aux).py_err()?;
        Ok((r.outputs.iter().map(|s| s.name()).collect(), r.arg_grads.iter().map(|s| s.name()).collect(), r.computes_sparse))
    }
    /// Runs the graph once node by node on arrays of any storage type (arguments and
    /// auxiliary states in list order); returns the outputs (see `graph::storage`).
    fn run_sparse(
        &self,
        py: Python<'_>,
        ctx: &Bound<'_, PyAny>,
        args: Vec<PyRef<'_, PyND>>,
        aux: Vec<PyRef<'_, PyND>>,
        is_train: bool,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let ctx = ctx_of(ctx)?;
        let args: Vec<oxnet_core::AnyArray> = args.iter().map(|a| crate::sparse::any_of(a)).collect();
        let aux: Vec<oxnet_core::AnyArray> = aux.iter().map(|a| crate::sparse::any_of(a)).collect();
        let outs = py.detach(|| graph::storage::run_sparse(&self.inner, &args, &aux, ctx, is_train)).py_err()?;
        outs.into_iter().map(|a| crate::sparse::wrap_any(py, a)).collect()
    }
    fn __repr__(&self) -> String {
        match self.inner.name() {
            Some(n) => format!("<Symbol {n}>"),
            None => format!("<Symbol group [{}]>", self.inner.outputs.iter().map(|e| e.node.name.clone()).collect::<Vec<_>>().join(", ")),
        }
    }
}

#[pyfunction]
fn sym_var(name: &str, attrs: Vec<(String, String)>) -> PyResult<SymbolHandle> {
    graph::Symbol::var(name, attrs).py_err().map(wrap)
}

#[pyfunction]
fn sym_create(
    op: &Op,
    name: &str,
    attrs: Vec<(String, String)>,
    inputs: Vec<(String, Option<PyRef<'_, SymbolHandle>>)>,
) -> PyResult<SymbolHandle> {
    let ins = inputs.into_iter().map(|(k, s)| (k, s.map(|s| s.inner.clone()))).collect();
    graph::Symbol::create(op.def, name, attrs, ins).py_err().map(wrap)
}

/// A control-flow node (`_foreach`, `_while_loop`, `_cond`) holding `subgraphs`.
#[pyfunction]
fn sym_create_subgraph_op(
    op: &Op,
    name: &str,
    attrs: Vec<(String, String)>,
    subgraphs: Vec<PyRef<'_, SymbolHandle>>,
    inputs: Vec<PyRef<'_, SymbolHandle>>,
) -> PyResult<SymbolHandle> {
    let subs = subgraphs.iter().map(|s| s.inner.clone()).collect();
    let ins = inputs.iter().map(|s| s.inner.clone()).collect();
    graph::Symbol::create_with_subgraphs(op.def, name, attrs, subs, ins).py_err().map(wrap)
}

#[pyfunction]
fn sym_group(syms: Vec<PyRef<'_, SymbolHandle>>) -> SymbolHandle {
    let v: Vec<graph::Symbol> = syms.iter().map(|s| s.inner.clone()).collect();
    wrap(graph::Symbol::group(&v))
}

#[pyfunction]
fn sym_from_json(text: &str) -> PyResult<SymbolHandle> {
    graph::Symbol::from_json(text).py_err().map(wrap)
}

#[pyclass(name = "ExecutorHandle", module = "oxnet._core", frozen)]
pub struct ExecutorHandle {
    inner: Mutex<graph::Executor>,
}

#[pymethods]
impl ExecutorHandle {
    #[new]
    #[pyo3(signature = (sym, ctx, args, grads, reqs, aux, group2ctx=None))]
    fn new(
        sym: &SymbolHandle,
        ctx: &Bound<'_, PyAny>,
        args: Vec<PyRef<'_, PyND>>,
        grads: Vec<Option<PyRef<'_, PyND>>>,
        reqs: Vec<String>,
        aux: Vec<PyRef<'_, PyND>>,
        group2ctx: Option<Vec<(String, Bound<'_, PyAny>)>>,
    ) -> PyResult<ExecutorHandle> {
        let ctx = ctx_of(ctx)?;
        let reqs: Vec<GradReq> = reqs.iter().map(|r| GradReq::parse(r)).collect::<Result<_, _>>().py_err()?;
        let mut groups = HashMap::new();
        for (g, c) in group2ctx.unwrap_or_default() {
            groups.insert(g, ctx_of(&c)?);
        }
        let ex = graph::Executor::bind_grouped(
            &sym.inner,
            ctx,
            args.iter().map(|a| a.inner.clone()).collect(),
            grads.iter().map(|g| g.as_ref().map(|g| g.inner.clone())).collect(),
            reqs,
            aux.iter().map(|a| a.inner.clone()).collect(),
            &groups,
        )
        .py_err()?;
        Ok(ExecutorHandle { inner: Mutex::new(ex) })
    }
    /// Runs the graph; with `callback`, calls `callback(name, array)` for every
    /// node output (and input, with `monitor_all`) as the node is pushed.
    #[pyo3(signature = (is_train, callback=None, monitor_all=false))]
    fn forward(&self, py: Python<'_>, is_train: bool, callback: Option<Py<PyAny>>, monitor_all: bool) -> PyResult<()> {
        let Some(cb) = callback else {
            return py
                .detach(|| {
                    oxnet_core::engine::throttle();
                    self.inner.lock().forward(is_train)
                })
                .py_err();
        };
        let mut f = |name: &str, _op: &str, a: &oxnet_core::NDArray| -> oxnet_core::Result<()> {
            cb.call1(py, (name, PyND::new(a.clone()))).map(|_| ()).map_err(|e| oxnet_core::Error::new(e.to_string()))
        };
        self.inner.lock().forward_monitored(is_train, Some(&mut graph::exec::Monitor::executor(&mut f, monitor_all))).py_err()
    }
    /// Back-propagates; with `callback`, calls `callback(name, array)` with the
    /// gradients each node's backward gives its inputs (`fc_backward_output0`, ...).
    #[pyo3(signature = (out_grads, callback=None, monitor_all=false))]
    fn backward(
        &self,
        py: Python<'_>,
        out_grads: Vec<Option<PyRef<'_, PyND>>>,
        callback: Option<Py<PyAny>>,
        monitor_all: bool,
    ) -> PyResult<()> {
        let g: Vec<Option<oxnet_core::NDArray>> = out_grads.iter().map(|g| g.as_ref().map(|g| g.inner.clone())).collect();
        let Some(cb) = callback else {
            return py
                .detach(|| {
                    oxnet_core::engine::throttle();
                    self.inner.lock().backward(&g)
                })
                .py_err();
        };
        let mut f = |name: &str, _op: &str, a: &oxnet_core::NDArray| -> oxnet_core::Result<()> {
            cb.call1(py, (name, PyND::new(a.clone()))).map(|_| ()).map_err(|e| oxnet_core::Error::new(e.to_string()))
        };
        self.inner.lock().backward_monitored(&g, Some(&mut graph::exec::Monitor::executor(&mut f, monitor_all))).py_err()
    }
    /// The graph the executor runs (after common subexpression elimination).
    fn optimized_symbol(&self) -> SymbolHandle {
        wrap(self.inner.lock().optimized_symbol())
    }
    fn outputs(&self) -> Vec<PyND> {
        self.inner.lock().outputs.iter().map(|a| PyND::new(a.clone())).collect()
    }
    /// Outputs written into the first elements of `base`'s arrays (a reshaped executor).
    fn share_outputs(&self, base: Vec<PyRef<'_, PyND>>) -> PyResult<()> {
        let base: Vec<oxnet_core::NDArray> = base.iter().map(|a| a.inner.clone()).collect();
        self.inner.lock().share_outputs(&base).py_err()
    }
    /// (planned bytes of intermediate buffers, bytes without reuse).
    fn planned_bytes(&self) -> (usize, usize) {
        self.inner.lock().planned_bytes()
    }
}

/// A symbol run as one cached graph per call (gluon's `hybridize`, `mx.nd.CachedOp`).
#[pyclass(name = "CachedOpHandle", module = "oxnet._core", frozen)]
pub struct CachedOpHandle {
    inner: graph::CachedOp,
}

#[pymethods]
impl CachedOpHandle {
    /// `inline_limit`: a recorded call of a graph of at most that many ops is
    /// recorded op by op (MXNet's inlining); None never inlines.
    #[new]
    #[pyo3(signature = (sym, inline_limit=None))]
    fn new(sym: &SymbolHandle, inline_limit: Option<usize>) -> PyResult<CachedOpHandle> {
        Ok(CachedOpHandle { inner: graph::CachedOp::with_inline_limit(&sym.inner, inline_limit).py_err()? })
    }
    /// Input names in call order: arguments, then auxiliary states.
    fn input_names(&self) -> Vec<String> {
        self.inner.input_names().to_vec()
    }
    fn num_compiled(&self) -> usize {
        self.inner.num_compiled()
    }
    /// Runs the graph on `inputs`; recorded as one node while autograd records.
    /// With `callback` (gluon's op hook), calls `callback(name, op_name, array)`
    /// for every node output (and input, with `monitor_all`) as the node runs.
    #[pyo3(signature = (inputs, callback=None, monitor_all=false))]
    fn forward(&self, py: Python<'_>, inputs: Vec<PyRef<'_, PyND>>, callback: Option<Py<PyAny>>, monitor_all: bool) -> PyResult<Vec<PyND>> {
        let ins: Vec<oxnet_core::NDArray> = inputs.iter().map(|a| a.arr()).collect();
        let outs = match callback {
            None => py
                .detach(|| {
                    oxnet_core::engine::throttle();
                    self.inner.forward(&ins)
                })
                .py_err()?,
            Some(cb) => {
                let mut f = |name: &str, op: &str, a: &oxnet_core::NDArray| -> oxnet_core::Result<()> {
                    cb.call1(py, (name, op, PyND::new(a.clone()))).map(|_| ()).map_err(|e| oxnet_core::Error::new(e.to_string()))
                };
                self.inner.forward_monitored(&ins, Some(&mut graph::exec::Monitor::hook(&mut f, monitor_all))).py_err()?
            }
        };
        Ok(outs.into_iter().map(PyND::new).collect())
    }
    /// The ops an inference call on `inputs` runs, after fusion (for tests).
    fn fused_ops(&self, inputs: Vec<PyRef<'_, PyND>>) -> PyResult<Vec<String>> {
        let ins: Vec<oxnet_core::NDArray> = inputs.iter().map(|a| a.arr()).collect();
        Ok(self.inner.fused_ops(&ins).py_err()?.into_iter().map(String::from).collect())
    }
}

pub(crate) fn add_functions(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SymbolHandle>()?;
    m.add_class::<CachedOpHandle>()?;
    m.add_class::<ExecutorHandle>()?;
    m.add_function(wrap_pyfunction!(sym_var, m)?)?;
    m.add_function(wrap_pyfunction!(sym_create, m)?)?;
    m.add_function(wrap_pyfunction!(sym_group, m)?)?;
    m.add_function(wrap_pyfunction!(sym_create_subgraph_op, m)?)?;
    m.add_function(wrap_pyfunction!(sym_from_json, m)?)?;
    Ok(())
}
