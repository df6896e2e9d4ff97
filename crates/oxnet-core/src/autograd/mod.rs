//! Autograd state: whether ops are being recorded and whether they run in training
//! mode. Both are per thread, as in MXNet (`autograd.record()` on one thread does
//! not record another thread's ops). [`crate::op::invoke`] reads the training flag
//! when it pushes an op and hands it to the compute as `OpCall::is_train`.
//!
//! The tape: while recording, [`crate::op::invoke`] calls [`record`] for every op
//! one of whose inputs is in a graph (a variable marked by [`mark_variable`], i.e.
//! `attach_grad`, or the output of a recorded op). A recorded op becomes a [`Node`]
//! holding the op, its parameters, its input arrays (with their entries: the graph's
//! edges) and its output arrays; each output array gets an [`Entry`] pointing at the
//! node. [`backward`] walks the nodes reachable from the heads in reverse
//! topological order, calls each op's registry gradient (which runs registry ops,
//! so it is asynchronous like any op), sums the gradients of arrays used several
//! times and writes or adds them into the variables' gradient buffers.
//!
//! Ops invoked while not recording pay one thread-local flag check.

use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::op::{self, OpDef, Params, Value};
use parking_lot::Mutex;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;

thread_local! {
    static RECORDING: Cell<bool> = const { Cell::new(false) };
    static TRAINING: Cell<bool> = const { Cell::new(false) };
}

/// True while ops on this thread are recorded for backward.
pub fn is_recording() -> bool {
    RECORDING.with(|c| c.get())
}

/// True while ops on this thread run in training mode.
pub fn is_training() -> bool {
    TRAINING.with(|c| c.get())
}

/// Sets the recording flag; returns the previous value.
pub fn set_recording(on: bool) -> bool {
    RECORDING.with(|c| c.replace(on))
}

/// Sets the training flag; returns the previous value.
pub fn set_training(on: bool) -> bool {
    TRAINING.with(|c| c.replace(on))
}

/// How a variable's gradient buffer is updated by [`backward`] (MXNet's `grad_req`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GradReq {
    Null,
    Write,
    Add,
}

impl GradReq {
    /// Parses MXNet's names (`'null'`, `'write'`, `'add'`; `'inplace'` is `write`).
    pub fn parse(s: &str) -> Result<GradReq> {
        match s {
            "null" => Ok(GradReq::Null),
            "write" | "inplace" => Ok(GradReq::Write),
            "add" => Ok(GradReq::Add),
            _ => Err(Error::new(format!("grad_req must be one of 'null', 'write', 'add', got '{s}'"))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            GradReq::Null => "null",
            GradReq::Write => "write",
            GradReq::Add => "add",
        }
    }
}

/// A gradient computed outside the registry (a Python `autograd.Function`): gets
/// the gradients of the outputs, returns those of the inputs (None: zero).
pub trait CustomGrad: Send + Sync {
    fn name(&self) -> &str;
    fn backward(&self, out_grads: &[NDArray], is_train: bool) -> Result<Vec<Option<NDArray>>>;
    /// The graph the recorded call ran, when it has one (a hybridized block's
    /// cached op): the symbol and the names of its variables in the order of the
    /// node's inputs. [`get_symbol`] shows such a node as a `_CachedOp`.
    fn graph(&self) -> Option<(crate::graph::Symbol, Vec<String>)> {
        None
    }
}

enum Kind {
    Var,
    Op {
        op: &'static OpDef,
        params: Params,
    },
    Custom(Arc<dyn CustomGrad>),
    /// The recorded backward of a custom node (under `create_graph`): has no gradient.
    NoGrad(String),
}

#[derive(Default)]
struct State {
    /// Inputs as given to the op, with their entries (the edges of the graph).
    inputs: Vec<NDArray>,
    /// Outputs, without entries (an entry points back at this node).
    outputs: Vec<NDArray>,
    /// Set once a backward without `retain_graph` has run through the node.
    freed: bool,
    /// Variables: the gradient buffer and how it is updated.
    grad: Option<NDArray>,
    /// Variables whose gradient has sparse storage (`attach_grad(stype=...)`): the
    /// buffer, instead of `grad`; backward casts the gradient into it.
    sgrad: Option<crate::ndarray::SparseArray>,
    req: Option<GradReq>,
    /// Variables: set by backward, cleared by the user (MXNet's `_fresh_grad`).
    fresh: bool,
}

/// One node of a recorded graph: a variable or a recorded op.
pub struct Node {
    kind: Kind,
    state: Mutex<State>,
}

impl Node {
    fn name(&self) -> &str {
        match &self.kind {
            Kind::Var => "variable",
            Kind::Op { op, .. } => op.name,
            Kind::Custom(c) => c.name(),
            Kind::NoGrad(name) => name,
        }
    }
    fn live(&self) -> bool {
        matches!(self.kind, Kind::Var) || !self.state.lock().freed
    }
}

impl Drop for Node {
    /// Frees the graph above this node iteratively: a long recorded chain (an
    /// unrolled loop) would otherwise drop recursively, one stack frame set per node.
    fn drop(&mut self) {
        let mut stack: Vec<NDArray> = std::mem::take(&mut self.state.get_mut().inputs);
        while let Some(mut a) = stack.pop() {
            let Some(e) = a.ag_entry().cloned() else { continue };
            a.set_ag_entry(None);
            drop(a);
            if let Some(mut node) = Arc::into_inner(e.node) {
                stack.append(&mut node.state.get_mut().inputs);
            }
        }
    }
}

/// An array's place in a graph: the node that produced it and which output it is.
#[derive(Clone)]
pub struct Entry {
    node: Arc<Node>,
    index: usize,
}

impl Entry {
    fn key(&self) -> (usize, usize) {
        (Arc::as_ptr(&self.node) as usize, self.index)
    }
    /// True for a variable's entry (made by [`mark_variable`]).
    pub fn is_variable(&self) -> bool {
        matches!(self.node.kind, Kind::Var)
    }
    /// True while the entry can still be differentiated (variables always; op
    /// outputs until a backward without `retain_graph` frees their graph).
    pub fn is_live(&self) -> bool {
        self.node.live()
    }
    /// A variable's gradient buffer.
    pub fn grad(&self) -> Option<NDArray> {
        self.node.state.lock().grad.clone()
    }
    /// A variable's sparse gradient buffer (see [`mark_variable_sparse`]).
    pub fn sparse_grad(&self) -> Option<crate::ndarray::SparseArray> {
        self.node.state.lock().sgrad.clone()
    }
    /// A variable's grad_req.
    pub fn grad_req(&self) -> Option<GradReq> {
        self.node.state.lock().req
    }
    /// A variable's fresh-gradient flag (set by backward).
    pub fn fresh_grad(&self) -> bool {
        self.node.state.lock().fresh
    }
    pub fn set_fresh_grad(&self, v: bool) {
        self.node.state.lock().fresh = v;
    }
}

/// The weight's entry when `op` is an Embedding with `sparse_grad=True` whose weight is
/// a variable with a row_sparse gradient buffer (its gradient is then made sparse).
fn sparse_embedding_weight(op: &OpDef, params: &Params, inputs: &[NDArray]) -> Option<Entry> {
    if op.name != "Embedding" || !params.bool("sparse_grad") {
        return None;
    }
    let e = live_entry(inputs.get(1)?)?;
    let sparse = e.is_variable() && e.sparse_grad().is_some_and(|s| s.stype() == crate::ndarray::SType::RowSparse);
    sparse.then(|| e.clone())
}

/// Writes (or adds) a gradient into a sparse gradient buffer.
fn write_sparse_grad(buf: &crate::ndarray::SparseArray, req: GradReq, g: Option<crate::ndarray::AnyArray>) -> Result<()> {
    use crate::ndarray::AnyArray;
    use crate::op::sparse::{cast_into, cast_storage, invoke_any};
    let dst = AnyArray::Sparse(buf.clone());
    let out = std::slice::from_ref(&dst);
    match (req, g) {
        (GradReq::Null, _) | (GradReq::Add, None) => {}
        (GradReq::Write, Some(g)) => cast_into(&g, &dst)?,
        (GradReq::Write, None) => {
            invoke_any(op::lookup("zeros_like")?, out, Params::default(), Some(out), None)?;
        }
        (GradReq::Add, Some(g)) => {
            let g = match g {
                AnyArray::Dense(d) if d.dtype() != buf.dtype() => {
                    AnyArray::Dense(op::call1("Cast", &[d], &[("dtype", Value::DType(buf.dtype()))])?)
                }
                g => g,
            };
            let gs = if g.stype() == buf.stype() { g } else { cast_storage(&g, buf.stype())? };
            invoke_any(op::lookup("elemwise_add")?, &[dst.clone(), gs], Params::default(), Some(out), None)?;
        }
    }
    Ok(())
}

fn live_entry(a: &NDArray) -> Option<&Entry> {
    a.ag_entry().filter(|e| e.is_live())
}

/// True when `a` is in a recorded graph (a variable, or the output of a recorded
/// op whose graph was not freed): a recorded op using it will be differentiated.
pub fn is_in_graph(a: &NDArray) -> bool {
    live_entry(a).is_some()
}

/// Makes `var` a variable of autograd with gradient buffer `grad` (same shape)
/// updated per `req` (MXNet's `mark_variables`, behind `attach_grad`).
pub fn mark_variable(var: &mut NDArray, grad: NDArray, req: GradReq) -> Result<()> {
    var.set_ag_entry(Some(dense_variable(var.shape(), grad, req)?));
    Ok(())
}

/// A variable entry with a dense gradient buffer, for a variable of logical shape
/// `shape` (a dense array, or a sparse array holding the entry itself: MXNet's
/// row_sparse parameter with the default dense gradient).
pub fn dense_variable(shape: &[usize], grad: NDArray, req: GradReq) -> Result<Entry> {
    if grad.shape() != shape {
        return Err(Error::new(format!(
            "mark_variables: gradient buffer of shape {} for a variable of shape {}",
            crate::shape::fmt_shape(grad.shape()),
            crate::shape::fmt_shape(shape)
        )));
    }
    let state = State { grad: Some(grad.detach()), req: Some(req), ..State::default() };
    Ok(Entry { node: Arc::new(Node { kind: Kind::Var, state: Mutex::new(state) }), index: 0 })
}

/// Like [`mark_variable`], with a row_sparse or csr gradient buffer: backward writes
/// (or adds) the gradient into it in that storage type, as MXNet does for
/// `attach_grad(stype='row_sparse')`.
pub fn mark_variable_sparse(var: &mut NDArray, grad: crate::ndarray::SparseArray, req: GradReq) -> Result<()> {
    var.set_ag_entry(Some(sparse_variable(var.shape(), grad, req)?));
    Ok(())
}

/// A variable entry with a sparse gradient buffer, for a variable of logical shape
/// `shape` (a dense array, or a sparse array holding the entry itself).
pub fn sparse_variable(shape: &[usize], grad: crate::ndarray::SparseArray, req: GradReq) -> Result<Entry> {
    if grad.shape() != shape {
        return Err(Error::new(format!(
            "mark_variables: gradient buffer of shape {} for a variable of shape {}",
            crate::shape::fmt_shape(grad.shape()),
            crate::shape::fmt_shape(shape)
        )));
    }
    let state = State { sgrad: Some(grad), req: Some(req), ..State::default() };
    Ok(Entry { node: Arc::new(Node { kind: Kind::Var, state: Mutex::new(state) }), index: 0 })
}

const IN_GRAPH_MSG: &str = "Assigning to NDArrays that are already in a computational graph will cause undefined behavior when evaluating gradients. Please call backward first to clear the graph or do this out side of a record section. Also note that you cannot use inplace operations like +=, *=, relu(x, out=x), y[idx]=x, etc inside a record section.";

/// While recording, writing into an array that is in a graph is an error (as in
/// MXNet). Called by invoke before anything is pushed.
pub fn check_outputs(op_name: &str, outs: &[NDArray]) -> Result<()> {
    if outs.iter().any(|o| live_entry(o).is_some()) {
        return Err(Error::op(op_name, IN_GRAPH_MSG));
    }
    Ok(())
}

fn record_node(kind: Kind, inputs: &[NDArray], outputs: &mut [NDArray]) {
    if !inputs.iter().any(|a| live_entry(a).is_some()) {
        for o in outputs.iter_mut() {
            o.set_ag_entry(None);
        }
        return;
    }
    let state = State { inputs: inputs.to_vec(), outputs: outputs.iter().map(|o| o.detach()).collect(), ..State::default() };
    let node = Arc::new(Node { kind, state: Mutex::new(state) });
    for (i, o) in outputs.iter_mut().enumerate() {
        o.set_ag_entry(Some(Entry { node: node.clone(), index: i }));
    }
}

/// Records one invoked op (called by [`crate::op::invoke`] while recording): when
/// an input is in a graph, the outputs get entries pointing at a new node.
pub fn record(op: &'static OpDef, params: &Params, inputs: &[NDArray], outputs: &mut [NDArray]) {
    record_node(Kind::Op { op, params: params.clone() }, inputs, outputs)
}

/// Records a view made outside the registry (NDArray's `reshape`, `x[i]`, `x[a:b]`,
/// which share memory) as the registry op computing the same values, so gradients
/// flow through it as in MXNet. Does nothing unless recording with `input` in a graph.
pub fn record_view(op_name: &str, attrs: &[(&str, Value)], input: &NDArray, out: &mut NDArray) -> Result<()> {
    if !is_recording() || !is_in_graph(input) {
        return Ok(());
    }
    let op = op::lookup(op_name)?;
    let params = op.parse(attrs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())?;
    record(op, &params, std::slice::from_ref(input), std::slice::from_mut(out));
    Ok(())
}

/// Records a custom function (Python's `autograd.Function`): `outputs` get entries
/// whose backward calls `grad`.
pub fn record_custom(grad: Arc<dyn CustomGrad>, inputs: &[NDArray], outputs: &mut [NDArray]) {
    record_node(Kind::Custom(grad), inputs, outputs)
}

/// Restores the recording and training flags when dropped.
struct FlagGuard(bool, bool);
impl Drop for FlagGuard {
    fn drop(&mut self) {
        set_recording(self.0);
        set_training(self.1);
    }
}

const NOT_IN_GRAPH_MSG: &str = "Cannot differentiate node because it is not in a computational graph. You need to set is_recording to true or use autograd.record() to save computational graphs for backward. If you want to differentiate the same graph twice, you need to pass retain_graph=True to backward.";

fn add_grad(grads: &mut HashMap<(usize, usize), NDArray>, key: (usize, usize), g: NDArray) -> Result<()> {
    let g = match grads.remove(&key) {
        Some(prev) => op::call1("elemwise_add", &[prev, g], &[])?,
        None => g,
    };
    grads.insert(key, g);
    Ok(())
}

/// Nodes reachable from `heads`, inputs before the nodes that use them.
fn topo_order(heads: &[&Entry]) -> Vec<Arc<Node>> {
    let mut order = Vec::new();
    let mut seen: std::collections::HashSet<usize> = std::collections::HashSet::new();
    // Iterative post-order DFS: (node, expanded?).
    let mut stack: Vec<(Arc<Node>, bool)> = heads.iter().rev().map(|e| (e.node.clone(), false)).collect();
    while let Some((node, expanded)) = stack.pop() {
        let key = Arc::as_ptr(&node) as usize;
        if expanded {
            order.push(node);
            continue;
        }
        if !seen.insert(key) {
            continue;
        }
        let children: Vec<Arc<Node>> = node.state.lock().inputs.iter().filter_map(|a| live_entry(a).map(|e| e.node.clone())).collect();
        stack.push((node, true));
        for c in children.into_iter().rev() {
            if !seen.contains(&(Arc::as_ptr(&c) as usize)) {
                stack.push((c, false));
            }
        }
    }
    order
}

/// The first `prod(shape)` elements of `g` (row-major), as an array of `shape`.
fn leading_elements(g: &NDArray, shape: &[usize]) -> Result<NDArray> {
    let n: usize = shape.iter().product();
    let tuple = |v: &[usize]| Value::Tuple(v.iter().map(|&x| x as i64).collect());
    let flat = op::call1("Reshape", std::slice::from_ref(g), &[("shape", tuple(&[g.size()]))])?;
    let head = op::call1("slice_axis", &[flat], &[("axis", Value::Int(0)), ("begin", Value::Int(0)), ("end", Value::Int(n as i64))])?;
    op::call1("Reshape", &[head], &[("shape", tuple(shape))])
}

/// Runs backward from `heads` (MXNet's `autograd.backward`): `head_grads[i]` is the
/// gradient of `heads[i]` (None: ones). Without `variables`, every variable reached
/// gets its gradient written or added into its buffer per its grad_req, and None is
/// returned; with `variables`, their gradients are returned instead (MXNet's
/// `autograd.grad`) and no buffer is touched. Without `retain_graph` the graph is
/// freed: a second backward through it is an error. Ops run in training mode when
/// `train_mode`.
///
/// With `create_graph` (MXNet's higher-order gradients) the gradient computation is
/// itself recorded: the registry gradients run with recording on, on the nodes'
/// inputs and outputs as they sit in the graph, so the returned gradients are in a
/// graph and can be differentiated again. An op whose gradient is made of ops
/// without gradients (`_backward_*` kernels) makes that second backward fail with
/// MXNet's "non-differentiable" error; so does a custom node (a Python Function or a
/// hybridized block), whose backward is recorded as one non-differentiable node.
pub fn backward(
    heads: &[NDArray],
    head_grads: &[Option<NDArray>],
    variables: Option<&[NDArray]>,
    retain_graph: bool,
    train_mode: bool,
    create_graph: bool,
) -> Result<Option<Vec<NDArray>>> {
    if heads.is_empty() {
        return Err(Error::new("autograd.backward: heads must not be empty"));
    }
    if head_grads.len() != heads.len() {
        return Err(Error::new(format!("autograd.backward: {} heads but {} head gradients", heads.len(), head_grads.len())));
    }
    let mut head_entries = Vec::with_capacity(heads.len());
    for h in heads {
        head_entries.push(live_entry(h).ok_or_else(|| Error::new(NOT_IN_GRAPH_MSG))?);
    }
    // A head gradient must have the head's shape, except that one with more elements
    // is read as MXNet 1.9.1 reads it: its first `head.size()` elements in row-major
    // order (MXNet hands the buffer to the backward kernels, which read the head's
    // size from it; a smaller one is out of bounds there and an error here).
    let mut fitted: Vec<Option<NDArray>> = Vec::with_capacity(head_grads.len());
    for (i, (h, g)) in heads.iter().zip(head_grads).enumerate() {
        fitted.push(match g {
            Some(g) if g.shape() != h.shape() => {
                let n: usize = h.shape().iter().product();
                if g.size() < n {
                    return Err(Error::new(format!(
                        "autograd.backward: head gradient {i} has shape {} but the head has shape {}",
                        crate::shape::fmt_shape(g.shape()),
                        crate::shape::fmt_shape(h.shape())
                    )));
                }
                Some(leading_elements(g, h.shape())?)
            }
            g => g.clone(),
        });
    }
    let head_grads = &fitted[..];
    let var_keys: Option<Vec<(usize, usize)>> = match variables {
        Some(vs) => {
            let mut keys = Vec::with_capacity(vs.len());
            for (i, v) in vs.iter().enumerate() {
                match v.ag_entry() {
                    Some(e) if e.is_variable() => keys.push(e.key()),
                    _ => {
                        return Err(Error::new(format!(
                            "autograd.grad: variable {i} is not marked for gradients (call attach_grad or mark_variables first)"
                        )))
                    }
                }
            }
            Some(keys)
        }
        None => None,
    };
    let order = topo_order(&head_entries);
    let wants = |n: &Node| matches!(n.kind, Kind::Var) && n.state.lock().req.is_some_and(|r| r != GradReq::Null);
    if variables.is_none() && !order.iter().any(|n| wants(n)) {
        return Err(Error::new("There are no inputs in computation graph that require gradients."));
    }

    let _guard = FlagGuard(set_recording(create_graph), set_training(train_mode));
    let mut grads: HashMap<(usize, usize), NDArray> = HashMap::new();
    // Row_sparse gradients of variables with a row_sparse buffer, made sparse from
    // the start (Embedding with sparse_grad=True), by variable.
    let mut sparse_grads: HashMap<(usize, usize), crate::ndarray::AnyArray> = HashMap::new();
    for ((h, e), g) in heads.iter().zip(&head_entries).zip(head_grads) {
        let g = match g {
            Some(g) if create_graph => g.clone(),
            Some(g) => g.detach(),
            None => op::call1("ones_like", &[h.detach()], &[])?,
        };
        add_grad(&mut grads, e.key(), g)?;
    }

    for node in order.iter().rev() {
        let ptr = Arc::as_ptr(node) as usize;
        if matches!(node.kind, Kind::Var) {
            continue;
        }
        let (inputs, mut outputs) = {
            let st = node.state.lock();
            (st.inputs.clone(), st.outputs.clone())
        };
        if create_graph {
            // The gradient is recorded against the node's outputs as they are in the
            // graph (the stored copies carry no entry, which would be a cycle).
            for (i, o) in outputs.iter_mut().enumerate() {
                o.set_ag_entry(Some(Entry { node: node.clone(), index: i }));
            }
        }
        let mut any = false;
        let mut out_grads = Vec::with_capacity(outputs.len());
        for (i, o) in outputs.iter().enumerate() {
            match grads.remove(&(ptr, i)) {
                Some(g) => {
                    any = true;
                    out_grads.push(g);
                }
                None => out_grads.push(op::call1("zeros_like", std::slice::from_ref(o), &[])?),
            }
        }
        if !any {
            continue;
        }
        let plain_inputs: Vec<NDArray> = if create_graph { inputs.clone() } else { inputs.iter().map(|a| a.detach()).collect() };
        if let (Kind::Op { op, params }, false, None) = (&node.kind, create_graph, &var_keys) {
            if let Some(e) = sparse_embedding_weight(op, params, &inputs) {
                let g = crate::op::sparse::embedding_grad_rsp(&out_grads[0], &plain_inputs[0], params)?;
                let g = crate::ndarray::AnyArray::Sparse(g);
                let g = match sparse_grads.remove(&e.key()) {
                    Some(prev) => {
                        crate::op::sparse::invoke_any(op::lookup("elemwise_add")?, &[prev, g], Params::default(), None, None)?.remove(0)
                    }
                    None => g,
                };
                sparse_grads.insert(e.key(), g);
                // (Embedding's indices get no gradient.)
                continue;
            }
        }
        let in_grads = match &node.kind {
            Kind::Op { op, params } => {
                let f = op.grad.ok_or_else(|| non_differentiable(op.name))?;
                let wanted = inputs.iter().map(|a| live_entry(a).is_some_and(|e| grad_used(e, var_keys.as_deref())));
                op::with_unwanted_grads(wanted, || f(params, &plain_inputs, &outputs, &out_grads))?
            }
            Kind::Custom(c) if create_graph => {
                let mut g = {
                    let _off = FlagGuard(set_recording(false), train_mode);
                    c.backward(&out_grads, train_mode)?
                };
                // Differentiating this backward again is an error naming it.
                let mut made: Vec<NDArray> = g.iter().flatten().cloned().collect();
                let mut ins = out_grads.clone();
                ins.extend(plain_inputs.iter().cloned());
                record_node(Kind::NoGrad(format!("_backward_{}", c.name())), &ins, &mut made);
                let mut made = made.into_iter();
                for slot in g.iter_mut().filter(|s| s.is_some()) {
                    *slot = made.next();
                }
                g
            }
            Kind::Custom(c) => c.backward(&out_grads, train_mode)?,
            Kind::NoGrad(name) => return Err(non_differentiable(name)),
            Kind::Var => unreachable_var()?,
        };
        if in_grads.len() != inputs.len() {
            return Err(Error::new(format!(
                "Error in operator {}: its gradient returned {} input gradients for {} inputs",
                node.name(),
                in_grads.len(),
                inputs.len()
            )));
        }
        for (a, g) in inputs.iter().zip(in_grads) {
            let (Some(e), Some(g)) = (live_entry(a), g) else { continue };
            if g.shape() != a.shape() {
                return Err(Error::new(format!(
                    "Error in operator {}: gradient of shape {} for an input of shape {}",
                    node.name(),
                    crate::shape::fmt_shape(g.shape()),
                    crate::shape::fmt_shape(a.shape())
                )));
            }
            let g = if g.dtype() != a.dtype() { op::call1("Cast", &[g], &[("dtype", Value::DType(a.dtype()))])? } else { g };
            add_grad(&mut grads, e.key(), g)?;
        }
    }

    let result = match var_keys {
        Some(keys) => {
            let vs = variables.unwrap_or_default();
            let mut out = Vec::with_capacity(keys.len());
            for (k, v) in keys.iter().zip(vs) {
                out.push(match grads.get(k) {
                    Some(g) => g.clone(),
                    None => op::call1("zeros_like", &[v.detach()], &[])?,
                });
            }
            Some(out)
        }
        None => {
            // Writing the gradient buffers is not part of any graph.
            let _off = FlagGuard(set_recording(false), train_mode);
            for node in order.iter().filter(|n| matches!(n.kind, Kind::Var)) {
                let mut st = node.state.lock();
                if let (Some(sbuf), Some(req)) = (st.sgrad.clone(), st.req) {
                    let key = (Arc::as_ptr(node) as usize, 0);
                    let g = match (grads.remove(&key).map(crate::ndarray::AnyArray::Dense), sparse_grads.remove(&key)) {
                        (Some(d), Some(s)) => {
                            let d = crate::op::sparse::cast_storage(&d, sbuf.stype())?;
                            Some(
                                crate::op::sparse::invoke_any(op::lookup("elemwise_add")?, &[d, s], Params::default(), None, None)?
                                    .remove(0),
                            )
                        }
                        (d, s) => s.or(d),
                    };
                    write_sparse_grad(&sbuf, req, g)?;
                    if req != GradReq::Null {
                        st.fresh = true;
                    }
                    continue;
                }
                let (Some(buf), Some(req)) = (st.grad.clone(), st.req) else { continue };
                let g = grads.remove(&(Arc::as_ptr(node) as usize, 0));
                let out = std::slice::from_ref(&buf);
                match (req, g) {
                    (GradReq::Null, _) => continue,
                    (GradReq::Write, Some(g)) => {
                        let name = if g.dtype() == buf.dtype() { "_copyto" } else { "Cast" };
                        let p = if name == "Cast" { vec![("dtype".to_string(), Value::DType(buf.dtype()))] } else { vec![] };
                        let o = op::lookup(name)?;
                        op::invoke(o, &[g], o.parse(p)?, Some(out), None)?;
                    }
                    (GradReq::Write, None) => {
                        op::invoke(op::lookup("zeros_like")?, std::slice::from_ref(&buf), Params::default(), Some(out), None)?;
                    }
                    (GradReq::Add, Some(g)) => {
                        let g =
                            if g.dtype() != buf.dtype() { op::call1("Cast", &[g], &[("dtype", Value::DType(buf.dtype()))])? } else { g };
                        op::invoke(op::lookup("elemwise_add")?, &[buf.clone(), g], Params::default(), Some(out), None)?;
                    }
                    (GradReq::Add, None) => {}
                }
                st.fresh = true;
            }
            None
        }
    };

    if !retain_graph {
        for node in &order {
            if !matches!(node.kind, Kind::Var) {
                let mut st = node.state.lock();
                st.inputs.clear();
                st.outputs.clear();
                st.freed = true;
            }
        }
    }
    Ok(result)
}

/// The recorded history of `head` as a symbol (MXNet's `autograd.get_symbol`),
/// named as MXNet names it. Walking the graph depth first from `head`, inputs in
/// order, ops are named `node_0`, `node_1`, ... as they are left; the variables
/// (`attach_grad`) are `var0`, `var1`, ... in the order reached, and the inputs
/// recorded without a graph of their own (constants, one variable per array) go on
/// counting from there as `null{k}`. Op attributes are the parameters that differ
/// from their defaults. A hybridized block's call recorded as one node is a
/// `_CachedOp` node holding the block's graph (a call recorded op by op, MXNet's
/// inlining, shows its ops). A Python `autograd.Function` in the history has no
/// symbol form: that is an error naming it.
pub fn get_symbol(head: &NDArray) -> Result<crate::graph::Symbol> {
    use crate::graph::{Entry as GEntry, Node as GNode, Symbol};
    let Some(e) = live_entry(head) else {
        return Err(Error::new("get_symbol: NDArray is not part of a computation graph. Did you forget to turn on recording?"));
    };
    /// A place in the walk: a tape node, or an input array with no entry.
    enum Item {
        Tape(Arc<Node>),
        Leaf(NDArray),
    }
    type LeafKey = (usize, usize, Vec<usize>);
    fn leaf_key(a: &NDArray) -> LeafKey {
        (Arc::as_ptr(a.chunk()) as usize, a.offset(), a.shape().to_vec())
    }
    // Post-order of the distinct nodes and constant leaves: (item, expanded?).
    let mut order: Vec<Item> = Vec::new();
    let mut seen_nodes: std::collections::HashSet<usize> = std::collections::HashSet::new();
    let mut seen_leaves: std::collections::HashSet<LeafKey> = std::collections::HashSet::new();
    let mut stack: Vec<(Item, bool)> = vec![(Item::Tape(e.node.clone()), false)];
    while let Some((item, expanded)) = stack.pop() {
        match item {
            Item::Leaf(a) => {
                if seen_leaves.insert(leaf_key(&a)) {
                    order.push(Item::Leaf(a));
                }
            }
            Item::Tape(node) => {
                let key = Arc::as_ptr(&node) as usize;
                if seen_nodes.contains(&key) {
                    continue;
                }
                if expanded {
                    seen_nodes.insert(key);
                    order.push(Item::Tape(node));
                    continue;
                }
                let inputs: Vec<NDArray> = node.state.lock().inputs.clone();
                stack.push((Item::Tape(node), true));
                for a in inputs.into_iter().rev() {
                    match live_entry(&a) {
                        Some(e) => stack.push((Item::Tape(e.node.clone()), false)),
                        None => stack.push((Item::Leaf(a), false)),
                    }
                }
            }
        }
    }
    let var = |name: String| Symbol::var(&name, vec![]).map(|s| s.outputs[0].node.clone());
    let mut built: HashMap<usize, Arc<GNode>> = HashMap::new();
    let mut leaves: HashMap<LeafKey, Arc<GNode>> = HashMap::new();
    let mut nvar = 0;
    for item in &order {
        if let Item::Tape(n) = item {
            if matches!(n.kind, Kind::Var) {
                built.insert(Arc::as_ptr(n) as usize, var(format!("var{nvar}"))?);
                nvar += 1;
            }
        }
    }
    for item in &order {
        if let Item::Leaf(a) = item {
            leaves.insert(leaf_key(a), var(format!("null{nvar}"))?);
            nvar += 1;
        }
    }
    let mut nop = 0;
    for item in &order {
        let Item::Tape(node) = item else { continue };
        let inputs: Vec<NDArray> = node.state.lock().inputs.clone();
        let ins: Vec<GEntry> = inputs
            .iter()
            .map(|a| match live_entry(a) {
                Some(e) => GEntry { node: built[&(Arc::as_ptr(&e.node) as usize)].clone(), index: e.index },
                None => GEntry { node: leaves[&leaf_key(a)].clone(), index: 0 },
            })
            .collect();
        if let Some((sub, names)) = if let Kind::Custom(c) = &node.kind { c.graph() } else { None } {
            let g = Symbol::cached_op_node(&format!("node_{nop}"), sub, &names, &ins)?;
            nop += 1;
            built.insert(Arc::as_ptr(node) as usize, g);
            continue;
        }
        let (op, params) = match &node.kind {
            Kind::Var => continue,
            Kind::Op { op, params } => (*op, params),
            Kind::Custom(_) | Kind::NoGrad(_) => {
                return Err(Error::new(format!(
                    "get_symbol: the recorded history contains {}, a Python autograd.Function, which has no symbol form",
                    node.name()
                )))
            }
        };
        let g = GNode {
            op: Some(op),
            name: format!("node_{nop}"),
            params: params.clone(),
            attrs: parking_lot::RwLock::new(non_default_attrs(op, params)),
            inputs: ins,
        };
        nop += 1;
        built.insert(Arc::as_ptr(node) as usize, Arc::new(g));
    }
    Ok(Symbol { outputs: vec![GEntry { node: built[&(Arc::as_ptr(&e.node) as usize)].clone(), index: e.index }] })
}

/// `op`'s parameters in `params` whose values differ from the defaults (required
/// ones always), as the strings a symbol stores.
fn non_default_attrs(op: &'static OpDef, params: &Params) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    for (name, val) in params.to_strings() {
        let default = op.params.iter().find(|s| s.name == name).and_then(|spec| {
            let d = spec.default?;
            let p = Params::parse(op.name, std::slice::from_ref(spec), vec![(name.to_string(), Value::Str(d.to_string()))]).ok()?;
            p.to_strings().into_iter().next().map(|(_, v)| v)
        });
        if default.as_deref() != Some(val.as_str()) {
            out.insert(name.to_string(), val);
        }
    }
    out
}

fn non_differentiable(name: &str) -> Error {
    Error::new(format!("Operator {name} is non-differentiable because it didn't register FGradient attribute."))
}

/// Whether a gradient reaching entry `e` is used: an op's output passes it on; a
/// variable's is used when it is one of the `variables` asked for, or, without
/// those, when its grad_req is not null.
fn grad_used(e: &Entry, var_keys: Option<&[(usize, usize)]>) -> bool {
    if !e.is_variable() {
        return true;
    }
    match var_keys {
        Some(keys) => keys.contains(&e.key()),
        None => e.grad_req().is_some_and(|r| r != GradReq::Null),
    }
}

fn unreachable_var() -> Result<Vec<Option<NDArray>>> {
    Err(Error::new("autograd: internal error: a variable node has no gradient function"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_per_thread_and_return_previous() {
        assert!(!is_recording());
        assert!(!set_recording(true));
        assert!(!set_training(true));
        assert!(set_training(true));
        assert!(is_recording() && is_training());
        std::thread::spawn(|| assert!(!is_recording() && !is_training())).join().unwrap();
        set_recording(false);
        set_training(false);
    }
}

#[cfg(test)]
mod tape_tests {
    use super::*;
    use crate::op::call1;
    use crate::Context;

    fn arr(v: &[f64]) -> NDArray {
        NDArray::from_vec(&[v.len()], v, Context::default()).unwrap()
    }
    fn var(v: &[f64], req: GradReq) -> NDArray {
        let mut x = arr(v);
        let g = call1("zeros_like", &[x.clone()], &[]).unwrap();
        mark_variable(&mut x, g, req).unwrap();
        x
    }
    fn grad_of(x: &NDArray) -> Vec<f64> {
        x.ag_entry().unwrap().grad().unwrap().to_vec::<f64>().unwrap()
    }
    struct Rec(bool, bool);
    impl Rec {
        fn on() -> Rec {
            Rec(set_recording(true), set_training(true))
        }
    }
    impl Drop for Rec {
        fn drop(&mut self) {
            set_recording(self.0);
            set_training(self.1);
        }
    }

    #[test]
    fn chain_and_reuse_sum_gradients() {
        let x = var(&[1.0, 2.0, 3.0], GradReq::Write);
        let z = {
            let _r = Rec::on();
            let y = call1("_mul_scalar", &[x.clone()], &[("scalar", Value::Float(2.0))]).unwrap();
            // z = y * y + x: dz/dx = 8x + 1
            let yy = call1("elemwise_mul", &[y.clone(), y], &[]).unwrap();
            call1("elemwise_add", &[yy, x.clone()], &[]).unwrap()
        };
        backward(&[z], &[None], None, false, true, false).unwrap();
        assert_eq!(grad_of(&x), vec![9.0, 17.0, 25.0]);
    }

    #[test]
    fn not_recorded_without_flag_or_variables() {
        let x = var(&[1.0], GradReq::Write);
        let y = call1("exp", &[x.clone()], &[]).unwrap();
        assert!(y.ag_entry().is_none());
        let _r = Rec::on();
        let c = call1("exp", &[arr(&[1.0])], &[]).unwrap();
        assert!(c.ag_entry().is_none());
        let e = backward(&[c], &[None], None, false, true, false).unwrap_err();
        assert!(e.message().contains("not in a computational graph"));
    }

    #[test]
    fn add_req_accumulates_and_graph_is_freed() {
        let x = var(&[1.0, 2.0], GradReq::Add);
        for _ in 0..2 {
            let y = {
                let _r = Rec::on();
                call1("square", &[x.clone()], &[]).unwrap()
            };
            backward(&[y.clone()], &[None], None, false, true, false).unwrap();
            let e = backward(&[y], &[None], None, false, true, false).unwrap_err();
            assert!(e.message().contains("retain_graph"));
        }
        assert_eq!(grad_of(&x), vec![4.0, 8.0]);
    }

    #[test]
    fn retain_graph_head_grads_and_grad_mode() {
        let x = var(&[1.0, 2.0], GradReq::Write);
        let y = {
            let _r = Rec::on();
            call1("_mul_scalar", &[x.clone()], &[("scalar", Value::Float(3.0))]).unwrap()
        };
        let hg = arr(&[1.0, 10.0]);
        backward(&[y.clone()], &[Some(hg)], None, true, true, false).unwrap();
        assert_eq!(grad_of(&x), vec![3.0, 30.0]);
        let g = backward(&[y], &[None], Some(&[x.clone()]), false, true, false).unwrap().unwrap();
        assert_eq!(g[0].to_vec::<f64>().unwrap(), vec![3.0, 3.0]);
        assert_eq!(grad_of(&x), vec![3.0, 30.0]);
    }

    #[test]
    fn writing_into_graph_arrays_while_recording_fails() {
        let x = var(&[1.0], GradReq::Write);
        let _r = Rec::on();
        let op = crate::op::lookup("_plus_scalar").unwrap();
        let p = op.parse(vec![("scalar".into(), Value::Float(1.0))]).unwrap();
        let e = crate::op::invoke(op, &[x.clone()], p, Some(&[x.clone()]), None).unwrap_err();
        assert!(e.message().contains("_plus_scalar") && e.message().contains("already in a computational graph"));
        assert_eq!(x.to_vec::<f64>().unwrap(), vec![1.0]);
    }

    #[test]
    fn op_without_gradient_is_named() {
        let x = NDArray::from_vec(&[1, 3], &[1.0f64, 5.0, 2.0], Context::default()).unwrap();
        let mut x = x;
        let g = call1("zeros_like", &[x.clone()], &[]).unwrap();
        mark_variable(&mut x, g, GradReq::Write).unwrap();
        let y = {
            let _r = Rec::on();
            call1("argmax_channel", &[x.clone()], &[]).unwrap()
        };
        let e = backward(&[y], &[None], None, false, true, false).unwrap_err();
        assert!(e.message().contains("Operator argmax_channel is non-differentiable"), "{}", e.message());
    }

    #[test]
    fn long_chain_drops_without_deep_recursion() {
        let x = var(&[1.0], GradReq::Write);
        let _r = Rec::on();
        let mut y = x.clone();
        for _ in 0..200_000 {
            y = call1("_plus_scalar", &[y], &[("scalar", Value::Float(1.0))]).unwrap();
        }
        drop(y);
        assert!(x.ag_entry().unwrap().is_variable());
    }

    #[test]
    fn broadcast_gradient_is_reduced_to_input_shape() {
        let mut a = NDArray::from_vec(&[2, 3], &[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], Context::default()).unwrap();
        let ga = call1("zeros_like", &[a.clone()], &[]).unwrap();
        mark_variable(&mut a, ga, GradReq::Write).unwrap();
        let mut b = NDArray::from_vec(&[1, 3], &[1.0f64, 2.0, 3.0], Context::default()).unwrap();
        let gb = call1("zeros_like", &[b.clone()], &[]).unwrap();
        mark_variable(&mut b, gb, GradReq::Write).unwrap();
        let y = {
            let _r = Rec::on();
            call1("broadcast_mul", &[a.clone(), b.clone()], &[]).unwrap()
        };
        backward(&[y], &[None], None, false, true, false).unwrap();
        assert_eq!(grad_of(&a), vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
        assert_eq!(grad_of(&b), vec![5.0, 7.0, 9.0]);
    }
}
