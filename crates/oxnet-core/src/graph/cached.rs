//! The cached op behind gluon's `hybridize()`: a symbol run as one graph per call.
//!
//! The inputs are the symbol's arguments then its auxiliary states (in
//! `var_nodes` order). Each distinct set of input shapes, dtypes and device is
//! compiled once ([`Graph::compile`]) and kept. A call outside autograd recording
//! (inference) plans its intermediate buffers so that dead ones are reused; a call
//! while recording keeps every intermediate value and records the whole graph as
//! one node on the autograd tape, whose backward runs the graph's registry
//! gradients in reverse: one call per forward and one per backward.
//!
//! An inference call (not recording, not training) on host arrays runs the symbol with its
//! convolution chains fused ([`super::fuse`]: Convolution + BatchNorm + residual
//! add + ReLU as one op), compiled and cached apart from the training graph; the
//! environment variable `OXNET_INFERENCE_FUSION=0` turns that off.
//!
//! A symbol holding an op whose output shape depends on input values
//! (`boolean_mask`, see `OpDef::dynamic`) cannot be planned ahead: like MXNet's
//! dynamic-shape CachedOp, each call then runs the nodes one by one through
//! [`crate::op::invoke`], and autograd records each of them. So does a recorded
//! call of a graph of at most `inline_limit` ops (MXNet's inlining, 2 by default in
//! gluon's `hybridize`; none with `static_alloc`): autograd then holds its ops, not
//! one node.
//!
//! A [`Monitor`] (gluon's `register_op_hook`) sees the outputs of every node (and
//! with `monitor_all` its inputs) as the call runs; such a call runs unfused.

use super::exec::{Buffers, Graph, Monitor};
use super::Symbol;
use crate::autograd::{self, CustomGrad};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};
use crate::Context;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

type Signature = (Context, Vec<(Shape, DType)>);

pub struct CachedOp {
    sym: Symbol,
    names: Vec<String>,
    /// Some node has a data-dependent output shape: run node by node.
    dynamic: bool,
    /// A recorded call runs node by node (see the module docs).
    inline: bool,
    graphs: Mutex<HashMap<Signature, Arc<Graph>>>,
    /// The symbol with its inference fusions, when it has any.
    fused: Option<Symbol>,
    fused_graphs: Mutex<HashMap<Signature, Arc<Graph>>>,
}

fn fusion_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("OXNET_INFERENCE_FUSION").map(|v| v.trim() != "0").unwrap_or(true))
}

/// The saved state of one recorded call: what its backward needs.
struct Recorded {
    name: String,
    /// The symbol and its input names in call order (for `get_symbol`).
    sym: Symbol,
    names: Vec<String>,
    graph: Arc<Graph>,
    vars: Vec<Option<NDArray>>,
    bufs: Buffers,
    outputs: Vec<NDArray>,
    /// Per input: its variable node, and whether a gradient is wanted for it.
    input_nodes: Vec<usize>,
    wants: Vec<bool>,
}

impl CachedOp {
    /// A cached op that never inlines.
    pub fn new(sym: &Symbol) -> Result<CachedOp> {
        Self::with_inline_limit(sym, None)
    }

    /// A cached op whose recorded calls run node by node when the graph has at most
    /// `inline_limit` ops (see the module docs).
    pub fn with_inline_limit(sym: &Symbol, inline_limit: Option<usize>) -> Result<CachedOp> {
        sym.check_unique_names()?;
        let (a, x) = sym.var_nodes();
        let names = a.iter().chain(&x).map(|n| n.name.clone()).collect();
        let topo = sym.topo();
        let dynamic = topo.iter().any(|n| n.op.map(|o| o.dynamic.is_some()).unwrap_or(false));
        let ops = topo.iter().filter(|n| !n.is_var()).count();
        // A node whose shape inference fills in (`zeros(shape=(0, H))`) needs the
        // whole graph: such a graph is not inlined.
        let unknown_shapes = topo.iter().any(|n| n.inputs.is_empty() && n.params.tuple("shape").iter().any(|&d| d <= 0));
        let inline = inline_limit.map(|l| ops <= l).unwrap_or(false) && !unknown_shapes;
        let fused = if dynamic || !fusion_enabled() { None } else { super::fuse::fuse_inference(sym) };
        Ok(CachedOp {
            sym: sym.clone(),
            names,
            dynamic,
            inline,
            graphs: Mutex::new(HashMap::new()),
            fused,
            fused_graphs: Mutex::new(HashMap::new()),
        })
    }

    /// Names of the inputs a call takes, in order: arguments, then auxiliary states.
    pub fn input_names(&self) -> &[String] {
        &self.names
    }

    pub fn symbol(&self) -> &Symbol {
        &self.sym
    }

    /// Number of compiled graphs (one per shape signature, and per form: training
    /// or fused inference), for tests.
    pub fn num_compiled(&self) -> usize {
        self.graphs.lock().len() + self.fused_graphs.lock().len()
    }

    /// The ops of the fused inference graph compiled for these inputs (for tests).
    pub fn fused_ops(&self, inputs: &[NDArray]) -> Result<Vec<&'static str>> {
        match &self.fused {
            Some(f) => Ok(self.graph(inputs, f, &self.fused_graphs)?.op_names()),
            None => Ok(self.graph(inputs, &self.sym, &self.graphs)?.op_names()),
        }
    }

    fn graph(&self, inputs: &[NDArray], sym: &Symbol, cache: &Mutex<HashMap<Signature, Arc<Graph>>>) -> Result<Arc<Graph>> {
        if inputs.len() != self.names.len() {
            return Err(Error::new(format!(
                "CachedOp: {} inputs given, the graph takes {} ({})",
                inputs.len(),
                self.names.len(),
                self.names.join(", ")
            )));
        }
        let ctx = inputs.first().map(|a| a.ctx()).unwrap_or_default();
        for (n, a) in self.names.iter().zip(inputs) {
            if a.ctx() != ctx {
                return Err(Error::new(format!(
                    "CachedOp: input '{n}' is on {} but input '{}' is on {ctx}; all inputs must be on one device",
                    a.ctx(),
                    self.names[0]
                )));
            }
        }
        let sig: Signature = (ctx, inputs.iter().map(|a| (Shape::from_slice(a.shape()), a.dtype())).collect());
        if let Some(g) = cache.lock().get(&sig) {
            return Ok(g.clone());
        }
        let shapes: HashMap<String, Shape> = self.names.iter().cloned().zip(sig.1.iter().map(|(s, _)| s.clone())).collect();
        let dtypes: HashMap<String, DType> = self.names.iter().cloned().zip(sig.1.iter().map(|(_, d)| *d)).collect();
        let g = Arc::new(Graph::compile(sym, &shapes, &dtypes, ctx, &HashMap::new(), &HashMap::new())?);
        cache.lock().insert(sig, g.clone());
        Ok(g)
    }

    /// Runs the graph on `inputs` (in [`CachedOp::input_names`] order) in the
    /// current training mode; while recording, the call is put on the tape.
    pub fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        self.forward_monitored(inputs, None)
    }

    /// [`CachedOp::forward`] reporting the nodes' arrays to `monitor`.
    pub fn forward_monitored(&self, inputs: &[NDArray], monitor: Option<&mut Monitor<'_>>) -> Result<Vec<NDArray>> {
        if self.dynamic {
            return self.forward_nodes(inputs, monitor);
        }
        let wants: Vec<bool> =
            if autograd::is_recording() { inputs.iter().map(autograd::is_in_graph).collect() } else { vec![false; inputs.len()] };
        let record = wants.iter().any(|&w| w);
        if record && self.inline {
            return self.forward_nodes(inputs, monitor);
        }
        // (The fused op has host kernels only: device graphs run unfused.)
        if !record && monitor.is_none() && !autograd::is_training() && inputs.iter().all(|a| a.ctx().is_host()) {
            if let Some(fused) = &self.fused {
                return self.forward_fused(fused, inputs);
            }
        }
        let graph = self.graph(inputs, &self.sym, &self.graphs)?;
        let (bufs, _, _) = graph.allocate(record)?;
        let mut vars = vec![None; graph.num_nodes()];
        let input_nodes: Vec<usize> = graph.arg_nodes.iter().chain(&graph.aux_nodes).copied().collect();
        for (&ni, a) in input_nodes.iter().zip(inputs) {
            vars[ni] = Some(a.detach());
        }
        let mut outputs = graph.head_arrays(&vars, &bufs)?;
        let prev = autograd::set_recording(false);
        let r = graph.forward(&vars, &bufs, &outputs, monitor);
        autograd::set_recording(prev);
        r?;
        if record {
            let name = self.sym.outputs.first().map(|e| e.node.name.clone()).unwrap_or_default();
            let saved = Recorded {
                name: format!("CachedOp({name})"),
                sym: self.sym.clone(),
                names: self.names.clone(),
                graph: graph.clone(),
                vars,
                bufs,
                outputs: outputs.iter().map(|o| o.detach()).collect(),
                input_nodes,
                wants,
            };
            autograd::record_custom(Arc::new(saved), inputs, &mut outputs);
        }
        Ok(outputs)
    }
}

impl CachedOp {
    /// An inference call of the fused symbol; its variables are bound by name (the
    /// fusion may list them in another order).
    fn forward_fused(&self, fused: &Symbol, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let graph = self.graph(inputs, fused, &self.fused_graphs)?;
        let (bufs, _, _) = graph.allocate(false)?;
        let mut vars = vec![None; graph.num_nodes()];
        for (name, a) in self.names.iter().zip(inputs) {
            // (A variable the fusion left unused has no node: nothing reads it.)
            if let Some(ni) = graph.var_node(name) {
                vars[ni] = Some(a.detach());
            }
        }
        let outputs = graph.head_arrays(&vars, &bufs)?;
        let prev = autograd::set_recording(false);
        let r = graph.forward(&vars, &bufs, &outputs, None);
        autograd::set_recording(prev);
        r?;
        Ok(outputs)
    }

    /// Runs the symbol node by node (see the module docs); each op call is
    /// recorded by autograd as an imperative call would be.
    fn forward_nodes(&self, inputs: &[NDArray], mut monitor: Option<&mut Monitor<'_>>) -> Result<Vec<NDArray>> {
        if inputs.len() != self.names.len() {
            return Err(Error::new(format!(
                "CachedOp: {} inputs given, the graph takes {} ({})",
                inputs.len(),
                self.names.len(),
                self.names.join(", ")
            )));
        }
        let by_name: HashMap<&str, &NDArray> = self.names.iter().map(|s| s.as_str()).zip(inputs).collect();
        let mut values: HashMap<usize, Vec<NDArray>> = HashMap::new();
        let key = |n: &Arc<super::Node>| Arc::as_ptr(n) as usize;
        for n in self.sym.topo() {
            let outs = match n.op {
                None => {
                    let a =
                        by_name.get(n.name.as_str()).ok_or_else(|| Error::new(format!("CachedOp: no input for variable '{}'", n.name)))?;
                    vec![(*a).clone()]
                }
                Some(op) => {
                    let ins: Vec<NDArray> = n
                        .inputs
                        .iter()
                        .map(|e| values.get(&key(&e.node)).and_then(|v| v.get(e.index)).cloned())
                        .collect::<Option<Vec<NDArray>>>()
                        .ok_or_else(|| Error::new(format!("CachedOp: an input of node '{}' was not computed", n.name)))?;
                    if let Some(m) = monitor.as_deref_mut().filter(|m| m.all) {
                        for (name, a) in op.monitor_input_names(&n.params).into_iter().zip(&ins) {
                            m.report(&format!("{}_{name}", n.name), &n, a)?;
                        }
                    }
                    let outs = crate::op::invoke(op, &ins, n.params.clone(), None, None)
                        .map_err(|e| Error::new(format!("{} (in node {})", e.message(), n.name)))?;
                    if let Some(m) = monitor.as_deref_mut() {
                        for (k, a) in outs.iter().enumerate().take(n.num_visible()) {
                            m.report(&n.output_name(k), &n, a)?;
                        }
                    }
                    outs
                }
            };
            values.insert(key(&n), outs);
        }
        self.sym
            .outputs
            .iter()
            .map(|e| {
                let v = values.get(&key(&e.node)).and_then(|v| v.get(e.index)).cloned();
                // A head that is a variable is returned as a copy, as the graph path does.
                match (v, e.node.is_var()) {
                    (Some(a), true) => crate::op::call1("_copy", &[a], &[]),
                    (Some(a), false) => Ok(a),
                    (None, _) => Err(Error::new(format!("CachedOp: output of node '{}' was not computed", e.node.name))),
                }
            })
            .collect()
    }
}

impl CustomGrad for Recorded {
    fn name(&self) -> &str {
        &self.name
    }

    fn graph(&self) -> Option<(Symbol, Vec<String>)> {
        Some((self.sym.clone(), self.names.clone()))
    }

    fn backward(&self, out_grads: &[NDArray], _is_train: bool) -> Result<Vec<Option<NDArray>>> {
        if out_grads.len() != self.outputs.len() {
            return Err(Error::new(format!("{}: {} output gradients for {} outputs", self.name, out_grads.len(), self.outputs.len())));
        }
        for (i, (g, o)) in out_grads.iter().zip(&self.outputs).enumerate() {
            if g.shape() != o.shape() {
                return Err(Error::new(format!(
                    "{}: gradient of output {i} has shape {}, the output has {}",
                    self.name,
                    fmt_shape(g.shape()),
                    fmt_shape(o.shape())
                )));
            }
        }
        let mut wants = vec![false; self.graph.num_nodes()];
        for (&ni, &w) in self.input_nodes.iter().zip(&self.wants) {
            wants[ni] = w;
        }
        let needs = self.graph.needs(&wants);
        let og: Vec<Option<NDArray>> = out_grads.iter().cloned().map(Some).collect();
        let mut acc = self.graph.backward(&self.vars, &self.bufs, &self.outputs, &og, &needs, None)?;
        Ok(self.input_nodes.iter().zip(&self.wants).map(|(ni, &w)| if w { acc.remove(ni) } else { None }).collect())
    }
}
