//! The executor: a symbol bound to argument, gradient and auxiliary arrays.
//!
//! Binding infers every shape and dtype and plans the intermediate buffers: walking
//! the nodes in order, an output takes a free buffer of its dtype (best fit, grown
//! if none is large enough) and the buffers of inputs seen for the last time are
//! freed. Without gradients every dead intermediate is reused; with gradients the
//! values the backward pass reads (the inputs and outputs of the nodes a gradient
//! flows through, see [`Graph::grad_flow`]) are kept and the others reused, so a
//! graph whose heads are all `BlockGrad` plans as if it had no gradients. Before
//! that, unless `MXNET_ELIMINATE_COMMON_EXPR=0`, common subexpressions are merged
//! ([`super::cse`]); [`Executor::optimized_symbol`] is the graph that runs.
//! `forward` pushes every node through [`crate::op::invoke`] with the training flag
//! set; `backward` runs the registry's gradient functions in reverse order, sums
//! gradients that meet, and writes or adds them into the gradient arrays as
//! `grad_req` says.
//!
//! With a `group2ctx` map, nodes carrying a `ctx_group` attribute run on the mapped
//! context: their buffers are planned there and their inputs from other contexts
//! are copied over before they run (gradients flow back the same way). A
//! [`Monitor`] passed to [`Executor::forward_monitored`] sees every node's outputs
//! (and with `monitor_all` its inputs) right after the node is pushed, and, passed
//! to [`Executor::backward_monitored`], the gradients each node's backward gives
//! its inputs (`{node}_backward_output{i}`, as MXNet names its backward nodes).

use super::infer::{infer_bound, Inferred};
use super::{Node, Symbol};
use crate::autograd;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::op::{self, Params, Value};
use crate::shape::{fmt_shape, Shape};
use crate::Context;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// How an argument's gradient is stored: the same `grad_req` as autograd's.
pub use crate::autograd::GradReq;

/// Where each node's inputs come from.
#[derive(Clone, Copy)]
enum Src {
    Var(usize),
    Out(usize, usize),
}

struct Plan {
    /// Per node, per output: the buffer it lives in.
    slot: Vec<Vec<usize>>,
    /// Per buffer: dtype, capacity in elements and device (index into the contexts).
    slots: Vec<(DType, usize, usize)>,
}

/// Which node outputs keep their buffers after their last forward reader.
pub enum Keep<'a> {
    /// None: every dead intermediate is reused (inference).
    Nothing,
    /// All of them (a cached op recorded for an unknown backward).
    All,
    /// Per node, per output (an executor's backward, see [`Graph::kept_for_backward`]).
    These(&'a [Vec<bool>]),
}

/// `dev[ni]`: the device of node `ni`; a buffer only serves nodes of its device.
fn plan(topo: &[Arc<Node>], info: &[Vec<(Shape, DType)>], srcs: &[Vec<Src>], heads: &[(usize, usize)], keep: Keep, dev: &[usize]) -> Plan {
    let kept = |n: usize, k: usize| match keep {
        Keep::Nothing => false,
        Keep::All => true,
        Keep::These(m) => m[n].get(k).copied().unwrap_or(false),
    };
    const FOREVER: usize = usize::MAX;
    let mut last: Vec<Vec<Option<usize>>> = info.iter().map(|o| vec![None; o.len()]).collect();
    for (ni, ins) in srcs.iter().enumerate() {
        for s in ins {
            if let Src::Out(n, k) = *s {
                last[n][k] = Some(ni);
            }
        }
    }
    for &(n, k) in heads {
        if k < last[n].len() {
            last[n][k] = Some(FOREVER);
        }
    }
    let mut slot: Vec<Vec<usize>> = info.iter().map(|o| vec![usize::MAX; o.len()]).collect();
    let mut slots: Vec<(DType, usize, usize)> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    for (ni, n) in topo.iter().enumerate() {
        if n.is_var() {
            continue;
        }
        for (k, (s, d)) in info[ni].iter().enumerate() {
            let need: usize = s.iter().product::<usize>().max(1);
            let fit = free
                .iter()
                .enumerate()
                .filter(|(_, &b)| slots[b].0 == *d && slots[b].2 == dev[ni] && slots[b].1 >= need)
                .min_by_key(|(_, &b)| slots[b].1)
                .map(|(i, _)| i);
            let pick = fit.or_else(|| {
                free.iter()
                    .enumerate()
                    .filter(|(_, &b)| slots[b].0 == *d && slots[b].2 == dev[ni])
                    .max_by_key(|(_, &b)| slots[b].1)
                    .map(|(i, _)| i)
            });
            let b = match pick {
                Some(i) => {
                    let b = free.swap_remove(i);
                    slots[b].1 = slots[b].1.max(need);
                    b
                }
                None => {
                    slots.push((*d, need, dev[ni]));
                    slots.len() - 1
                }
            };
            slot[ni][k] = b;
        }
        // Outputs nobody reads die at once; inputs read for the last time die now
        // (unless the backward pass reads them).
        for k in 0..info[ni].len() {
            if last[ni][k].is_none() && !kept(ni, k) {
                free.push(slot[ni][k]);
            }
        }
        let mut done: Vec<(usize, usize)> = Vec::new();
        for s in &srcs[ni] {
            if let Src::Out(n, k) = *s {
                if last[n][k] == Some(ni) && !kept(n, k) && !done.contains(&(n, k)) {
                    done.push((n, k));
                    free.push(slot[n][k]);
                }
            }
        }
    }
    Plan { slot, slots }
}

/// A symbol compiled for given variable shapes and dtypes: the nodes in order,
/// where each node's inputs come from, every output's shape and dtype, and the
/// heads. The executor and the cached op (gluon's hybridize) both run one.
pub struct Graph {
    topo: Vec<Arc<Node>>,
    srcs: Vec<Vec<Src>>,
    info: Vec<Vec<(Shape, DType)>>,
    heads: Vec<(usize, usize)>,
    /// Node index of each argument and auxiliary variable, in `var_nodes` order.
    pub arg_nodes: Vec<usize>,
    pub aux_nodes: Vec<usize>,
    /// Per node: the context it runs on (a variable: where its array lives), and
    /// its index into `ctxs`.
    node_ctx: Vec<Context>,
    dev: Vec<usize>,
    ctxs: Vec<Context>,
    /// Per variable node: its shape and dtype.
    var_info: Vec<Option<(Shape, DType)>>,
    /// The buffer plans, made once: [reusing dead buffers, keeping every value].
    plans: [OnceLock<Plan>; 2],
    /// The symbol compiled (after the executor's rewrites).
    sym: Symbol,
}

/// The arrays one run of a graph writes.
pub struct Buffers {
    /// Per node, per output: views into the planned buffers.
    pub entries: Vec<Vec<NDArray>>,
    /// Per node, per input: the copy of an input that lives on another context.
    xfer: Vec<Vec<Option<NDArray>>>,
}

/// A monitor callback: `(name, operator, array)`: the name of an output
/// (`node_output`, `node_output1`, `node_mask`, ...), of an input (`node_data`,
/// `node_input0`, a variable's own name) or of a gradient
/// (`node_backward_output0`), the node's operator, and the array.
pub type MonitorFn<'a> = &'a mut dyn FnMut(&str, &str, &NDArray) -> Result<()>;

/// What a run reports to a monitor callback.
pub struct Monitor<'a> {
    pub f: MonitorFn<'a>,
    /// Inputs too (MXNet's `monitor_all`): `{node}_{input}` with the op's input
    /// names, `input0`, `input1`, ... for ops MXNet registers without them.
    pub all: bool,
    /// As MXNet's executor reports (rather than its cached op, gluon's op hook):
    /// every output, the hidden ones (Dropout's `mask`) included, and, before
    /// `{node}_{input}`, an input that is a variable under its own name.
    pub executor: bool,
}

impl<'a> Monitor<'a> {
    /// An executor's monitor (see [`Monitor::executor`]).
    pub fn executor(f: MonitorFn<'a>, all: bool) -> Monitor<'a> {
        Monitor { f, all, executor: true }
    }
    /// A cached op's monitor (gluon's `register_op_hook`).
    pub fn hook(f: MonitorFn<'a>, all: bool) -> Monitor<'a> {
        Monitor { f, all, executor: false }
    }
    /// Calls the callback for array `a` of node `n` under `name`.
    pub fn report(&mut self, name: &str, n: &Node, a: &NDArray) -> Result<()> {
        let op = n.op.map(|o| o.name).unwrap_or("null");
        (self.f)(name, op, a)
            .map_err(|e| Error::new(format!("monitor callback failed on '{name}' of node '{}' (operator {op}): {}", n.name, e.message())))
    }
}

/// `a` itself when it lives on `ctx`, else a copy there.
fn to_ctx(a: NDArray, ctx: Context) -> Result<NDArray> {
    if a.ctx() == ctx {
        return Ok(a);
    }
    let o = NDArray::empty(a.shape(), ctx, a.dtype())?;
    op::invoke(op::lookup("_copyto")?, &[a], Params::default(), Some(std::slice::from_ref(&o)), None)?;
    Ok(o)
}

/// The `ctx_group` attribute of a node, if any.
fn ctx_group(n: &Node) -> Option<String> {
    let a = n.attrs.read();
    a.get("__ctx_group__").or_else(|| a.get("ctx_group")).cloned()
}

impl Graph {
    /// Infers every shape and dtype from the variables' (`shapes`, `dtypes`, by name)
    /// and places the nodes: on `ctx`, or with a non-empty `group2ctx` on the context
    /// of their `ctx_group` (host contexts only). `var_ctx` gives where variables'
    /// arrays live (default `ctx`).
    pub fn compile(
        sym: &Symbol,
        shapes: &HashMap<String, Shape>,
        dtypes: &HashMap<String, DType>,
        ctx: Context,
        var_ctx: &HashMap<String, Context>,
        group2ctx: &HashMap<String, Context>,
    ) -> Result<Graph> {
        let (arg_vars, aux_vars) = sym.var_nodes();
        // The shapes are those of the arrays bound: a 0 is an empty dimension.
        let inf: Inferred = infer_bound(sym, shapes, dtypes)?;
        for n in arg_vars.iter().chain(&aux_vars) {
            if let (Some(s), Some(given)) = (inf.var(n).0, shapes.get(&n.name)) {
                if s != given {
                    return Err(Error::new(format!(
                        "bind: array for '{}' has shape {}, the graph needs {}",
                        n.name,
                        fmt_shape(given),
                        fmt_shape(s)
                    )));
                }
            }
        }
        let topo = inf.topo.clone();
        let mut info: Vec<Vec<(Shape, DType)>> = Vec::with_capacity(topo.len());
        for (ni, n) in topo.iter().enumerate() {
            if n.is_var() {
                info.push(vec![]);
                continue;
            }
            let mut outs = Vec::new();
            for k in 0..inf.shapes[ni].len() {
                match (&inf.shapes[ni][k], inf.dtypes[ni][k]) {
                    (Some(s), Some(d)) => outs.push((s.clone(), d)),
                    _ => {
                        return Err(Error::new(format!(
                            "bind: cannot infer the shape of output {k} of node '{}' ({}); give the shapes of its inputs",
                            n.name,
                            n.op.map(|o| o.name).unwrap_or("")
                        )))
                    }
                }
            }
            info.push(outs);
        }
        let srcs: Vec<Vec<Src>> = topo
            .iter()
            .map(|n| {
                n.inputs
                    .iter()
                    .map(|e| {
                        let s = inf.node_id(&e.node);
                        if e.node.is_var() {
                            Src::Var(s)
                        } else {
                            Src::Out(s, e.index)
                        }
                    })
                    .collect()
            })
            .collect();
        let heads = sym.outputs.iter().map(|e| (inf.node_id(&e.node), e.index)).collect();
        let arg_nodes = arg_vars.iter().map(|n| inf.node_id(n)).collect();
        let aux_nodes = aux_vars.iter().map(|n| inf.node_id(n)).collect();
        // Devices: ctxs[0] is the graph's; a node runs on its group's context.
        let mut ctxs = vec![ctx];
        let mut dev = vec![0usize; topo.len()];
        let mut node_ctx = vec![ctx; topo.len()];
        let mut var_info = vec![None; topo.len()];
        for (ni, n) in topo.iter().enumerate() {
            if n.is_var() {
                node_ctx[ni] = var_ctx.get(&n.name).copied().unwrap_or(ctx);
                if let (Some(s), Some(d)) = (inf.shapes[ni][0].clone(), inf.dtypes[ni][0]) {
                    var_info[ni] = Some((s, d));
                }
                continue;
            }
            let Some(g) = ctx_group(n).filter(|_| !group2ctx.is_empty()) else { continue };
            let c = *group2ctx.get(&g).ok_or_else(|| {
                let mut known: Vec<&str> = group2ctx.keys().map(|k| k.as_str()).collect();
                known.sort();
                Error::new(format!(
                    "bind: the device assignment for group '{g}' of node '{}' ({}) is not found in group2ctx (it maps {})",
                    n.name,
                    n.op.map(|o| o.name).unwrap_or(""),
                    known.join(", ")
                ))
            })?;
            if !(c.is_host() && ctx.is_host()) && c != ctx {
                return Err(Error::new(format!("bind: group '{g}' maps to {c}; groups on other devices than {ctx} need host contexts")));
            }
            dev[ni] = match ctxs.iter().position(|x| *x == c) {
                Some(i) => i,
                None => {
                    ctxs.push(c);
                    ctxs.len() - 1
                }
            };
            node_ctx[ni] = c;
        }
        Ok(Graph {
            topo,
            srcs,
            info,
            heads,
            arg_nodes,
            aux_nodes,
            node_ctx,
            dev,
            ctxs,
            var_info,
            plans: [OnceLock::new(), OnceLock::new()],
            sym: sym.clone(),
        })
    }

    pub fn num_nodes(&self) -> usize {
        self.topo.len()
    }

    /// The node index of the variable named `name`.
    pub fn var_node(&self, name: &str) -> Option<usize> {
        self.topo.iter().position(|n| n.is_var() && n.name == name)
    }

    /// Names of the op nodes' ops, in order (for tests of graph rewrites).
    pub fn op_names(&self) -> Vec<&'static str> {
        self.topo.iter().filter_map(|n| n.op.map(|o| o.name)).collect()
    }

    /// The symbol this graph was compiled from.
    pub fn symbol(&self) -> &Symbol {
        &self.sym
    }

    /// Plans the intermediate buffers (`keep_all`: every output keeps its own, for a
    /// backward pass) and allocates them on the nodes' contexts: the buffers, the
    /// planned bytes and the bytes without reuse.
    pub fn allocate(&self, keep_all: bool) -> Result<(Buffers, usize, usize)> {
        let keep = if keep_all { Keep::All } else { Keep::Nothing };
        let p = self.plans[keep_all as usize].get_or_init(|| plan(&self.topo, &self.info, &self.srcs, &self.heads, keep, &self.dev));
        self.allocate_plan(p)
    }

    /// [`Graph::allocate`] keeping exactly the outputs `keep` marks.
    pub fn allocate_keeping(&self, keep: &[Vec<bool>]) -> Result<(Buffers, usize, usize)> {
        let p = plan(&self.topo, &self.info, &self.srcs, &self.heads, Keep::These(keep), &self.dev);
        self.allocate_plan(&p)
    }

    fn allocate_plan(&self, p: &Plan) -> Result<(Buffers, usize, usize)> {
        let mut buffers = Vec::with_capacity(p.slots.len());
        let mut planned = 0;
        for (d, n, dv) in &p.slots {
            planned += n * d.size();
            buffers.push(NDArray::empty(&[*n], self.ctxs[*dv], *d)?);
        }
        let mut naive = 0;
        let mut entries = Vec::with_capacity(self.topo.len());
        for (ni, outs) in self.info.iter().enumerate() {
            let mut v = Vec::with_capacity(outs.len());
            for (k, (s, d)) in outs.iter().enumerate() {
                let n: usize = s.iter().product();
                naive += n * d.size();
                v.push(buffers[p.slot[ni][k]].slice_view(0, n)?.reshape_view(s)?);
            }
            entries.push(v);
        }
        // Inputs from another context get a buffer on the node's context.
        let mut xfer = Vec::with_capacity(self.topo.len());
        for (ni, ins) in self.srcs.iter().enumerate() {
            let mut v = Vec::with_capacity(ins.len());
            for s in ins {
                let (src, info) = match *s {
                    Src::Var(n) => (n, self.var_info[n].clone()),
                    Src::Out(n, k) => (n, Some(self.info[n][k].clone())),
                };
                let moved = !self.topo[ni].is_var() && self.node_ctx[src] != self.node_ctx[ni];
                v.push(match (moved, info) {
                    (true, Some((shape, d))) => Some(NDArray::empty(&shape, self.node_ctx[ni], d)?),
                    _ => None,
                });
            }
            xfer.push(v);
        }
        Ok((Buffers { entries, xfer }, planned, naive))
    }

    /// Arrays for the heads: the entries, and a new array for a head that is a
    /// variable (filled by [`Graph::forward`]).
    pub fn head_arrays(&self, vars: &[Option<NDArray>], bufs: &Buffers) -> Result<Vec<NDArray>> {
        let mut outputs = Vec::with_capacity(self.heads.len());
        for &(n, k) in &self.heads {
            if self.topo[n].is_var() {
                let v = self.var_array(n, vars)?;
                outputs.push(NDArray::empty(v.shape(), self.ctxs[0], v.dtype())?);
            } else {
                outputs.push(bufs.entries[n][k].clone());
            }
        }
        Ok(outputs)
    }

    fn var_array(&self, n: usize, vars: &[Option<NDArray>]) -> Result<NDArray> {
        vars[n].clone().ok_or_else(|| Error::new(format!("no array is bound for variable '{}'", self.topo[n].name)))
    }

    /// The value an input refers to, where it was made.
    fn source(&self, s: Src, vars: &[Option<NDArray>], bufs: &Buffers) -> Result<NDArray> {
        match s {
            Src::Var(n) => self.var_array(n, vars),
            Src::Out(n, k) => Ok(bufs.entries[n][k].clone()),
        }
    }

    /// The arrays a node reads: its inputs, or their copies on its context.
    fn input_arrays(&self, ni: usize, vars: &[Option<NDArray>], bufs: &Buffers) -> Result<Vec<NDArray>> {
        self.srcs[ni]
            .iter()
            .zip(&bufs.xfer[ni])
            .map(|(s, x)| match x {
                Some(x) => Ok(x.clone()),
                None => self.source(*s, vars, bufs),
            })
            .collect()
    }

    /// Pushes every node through the engine (`vars`: per node index, the array of
    /// each variable), calling `monitor` as [`Executor::forward_monitored`]
    /// describes. The caller sets the autograd flags.
    pub fn forward(
        &self,
        vars: &[Option<NDArray>],
        bufs: &Buffers,
        outputs: &[NDArray],
        mut monitor: Option<&mut Monitor<'_>>,
    ) -> Result<()> {
        let copy = op::lookup("_copyto")?;
        for (ni, n) in self.topo.iter().enumerate() {
            let Some(op) = n.op else { continue };
            for (s, x) in self.srcs[ni].iter().zip(&bufs.xfer[ni]) {
                if let Some(x) = x {
                    let src = self.source(*s, vars, bufs)?;
                    op::invoke(copy, &[src], Params::default(), Some(std::slice::from_ref(x)), None)?;
                }
            }
            let inputs = self.input_arrays(ni, vars, bufs)?;
            if let Some(m) = monitor.as_deref_mut().filter(|m| m.all) {
                for (i, (name, a)) in op.monitor_input_names(&n.params).into_iter().zip(&inputs).enumerate() {
                    if let (true, Some(Src::Var(v))) = (m.executor, self.srcs[ni].get(i)) {
                        m.report(&self.topo[*v].name, &self.topo[*v], a)?;
                    }
                    m.report(&format!("{}_{name}", n.name), n, a)?;
                }
            }
            let mut params = n.params.clone();
            // An input-less op whose `shape` had unknown (0) dimensions runs with the
            // shape inference found (see infer::infer_graph).
            if inputs.is_empty() && params.tuple("shape").iter().any(|&d| d <= 0) {
                if let Some(o) = bufs.entries[ni].first() {
                    params.set_extra("shape", Value::Tuple(o.shape().iter().map(|&v| v as i64).collect()));
                }
            }
            // `arange(infer_range=True)`: `stop` from the length inference found.
            if inputs.is_empty() && op::infers_range(&params) {
                if let Some(o) = bufs.entries[ni].first() {
                    let reps = params.int("repeat").max(1) as usize;
                    let n = o.shape().first().copied().unwrap_or(0).div_ceil(reps);
                    // half a step short of the n-th value: ceil((stop - start) / step)
                    // is n whatever the rounding
                    let stop = params.float("start") + (n as f64 - 0.5) * params.float("step");
                    params.set_extra("stop", Value::Float(stop));
                    params.set_extra("infer_range", Value::Bool(false));
                }
            }
            op::invoke(op, &inputs, params, Some(&bufs.entries[ni]), None)
                .map_err(|e| Error::new(format!("{} (in node {})", e.message(), n.name)))?;
            if let Some(m) = monitor.as_deref_mut() {
                let shown = if m.executor { bufs.entries[ni].len() } else { n.num_visible().min(bufs.entries[ni].len()) };
                for k in 0..shown {
                    m.report(&n.output_name(k), n, &bufs.entries[ni][k])?;
                }
            }
        }
        for (i, &(n, _)) in self.heads.iter().enumerate() {
            if self.topo[n].is_var() {
                let v = self.var_array(n, vars)?;
                op::invoke(copy, &[v], Params::default(), Some(std::slice::from_ref(&outputs[i])), None)?;
            }
        }
        Ok(())
    }

    /// Fails, as MXNet's bind does, when a gradient must flow back through an op
    /// that defines none: the node lies between a variable that wants a gradient
    /// and a head, with no `BlockGrad` on the way to the head.
    pub fn check_differentiable(&self, wants: &[bool]) -> Result<()> {
        let needs = self.needs(wants);
        let mut reached = vec![false; self.topo.len()];
        for &(h, _) in &self.heads {
            reached[h] = true;
        }
        for ni in (0..self.topo.len()).rev() {
            let Some(op) = self.topo[ni].op else { continue };
            if !reached[ni] || op.name == "BlockGrad" {
                continue;
            }
            if needs[ni] && op.grad.is_none() {
                return Err(Error::op(
                    op.name,
                    format!(
                        "Operator {} is non-differentiable because it didn't register FGradient attribute (node {})",
                        op.name, self.topo[ni].name
                    ),
                ));
            }
            for s in &self.srcs[ni] {
                let (Src::Var(v) | Src::Out(v, _)) = *s;
                reached[v] = true;
            }
        }
        Ok(())
    }

    /// Which nodes a gradient flows through, given which variables want one: those
    /// that depend on such a variable ([`Graph::needs`]) and that a gradient reaches
    /// from a head without crossing a `BlockGrad` (whose gradient is zero). A
    /// variable is marked when it wants a gradient and one reaches it.
    pub fn grad_flow(&self, wants: &[bool]) -> Vec<bool> {
        let needs = self.needs(wants);
        let mut reached = vec![false; self.topo.len()];
        for &(h, _) in &self.heads {
            reached[h] = true;
        }
        for ni in (0..self.topo.len()).rev() {
            let Some(op) = self.topo[ni].op else { continue };
            if !reached[ni] || !needs[ni] || op.name == "BlockGrad" {
                reached[ni] = false;
                continue;
            }
            for s in &self.srcs[ni] {
                let (Src::Var(v) | Src::Out(v, _)) = *s;
                reached[v] = true;
            }
        }
        needs.iter().zip(&reached).map(|(&n, &r)| n && r).collect()
    }

    /// The node outputs the backward pass reads, given [`Graph::grad_flow`]: the
    /// inputs and outputs of every node a gradient flows through (its gradient
    /// function gets both).
    pub fn kept_for_backward(&self, flow: &[bool]) -> Vec<Vec<bool>> {
        let mut keep: Vec<Vec<bool>> = self.info.iter().map(|o| vec![false; o.len()]).collect();
        for ni in 0..self.topo.len() {
            if self.topo[ni].is_var() || !flow[ni] {
                continue;
            }
            keep[ni].iter_mut().for_each(|k| *k = true);
            for s in &self.srcs[ni] {
                if let Src::Out(n, k) = *s {
                    keep[n][k] = true;
                }
            }
        }
        keep
    }

    /// Which nodes a gradient must flow through, given which variables want one.
    pub fn needs(&self, wants: &[bool]) -> Vec<bool> {
        let mut needs = wants.to_vec();
        for ni in 0..self.topo.len() {
            if !self.topo[ni].is_var() {
                needs[ni] = self.srcs[ni].iter().any(|s| match *s {
                    Src::Var(v) => needs[v],
                    Src::Out(v, _) => needs[v],
                });
            }
        }
        needs
    }

    /// Whether node `n`'s gradient is zero everywhere (None for every input, what
    /// the registry's zero-gradient ops return): probed with zero head gradients.
    fn zero_gradient(&self, n: usize, vars: &[Option<NDArray>], bufs: &Buffers) -> Result<bool> {
        let node = &self.topo[n];
        let Some(op) = node.op else { return Ok(false) };
        let Some(gf) = op.grad else { return Ok(false) };
        let outs = &bufs.entries[n];
        let mut zeros = Vec::with_capacity(outs.len());
        for o in outs {
            zeros.push(op::call1("zeros_like", std::slice::from_ref(o), &[])?);
        }
        let inputs = self.input_arrays(n, vars, bufs)?;
        Ok(match gf(&node.params, &inputs, outs, &zeros) {
            Ok(g) => g.iter().all(|x| x.is_none()),
            Err(_) => false,
        })
    }

    /// Back-propagates `out_grads` (one per head; ones where None) through the
    /// registry's gradients; returns the gradient of each variable node reached
    /// (by node index). `monitor` sees, for each node, the gradient its backward
    /// gives each input (zeros where it gives none) as `{node}_backward_output{i}`
    /// (`{node}_backward_output` for a one-input node), every input's gradient then
    /// computed whether used or not. The caller sets the autograd flags.
    pub fn backward(
        &self,
        vars: &[Option<NDArray>],
        bufs: &Buffers,
        outputs: &[NDArray],
        out_grads: &[Option<NDArray>],
        needs: &[bool],
        mut monitor: Option<&mut Monitor<'_>>,
    ) -> Result<HashMap<usize, NDArray>> {
        if !out_grads.is_empty() && out_grads.len() != self.heads.len() {
            return Err(Error::new(format!("backward: {} head gradients given for {} outputs", out_grads.len(), self.heads.len())));
        }
        let mut acc: HashMap<(usize, usize), NDArray> = HashMap::new();
        let add = |acc: &mut HashMap<(usize, usize), NDArray>, key: (usize, usize), g: NDArray| -> Result<()> {
            match acc.remove(&key) {
                Some(prev) => {
                    acc.insert(key, op::call1("elemwise_add", &[prev, g], &[])?);
                }
                None => {
                    acc.insert(key, g);
                }
            }
            Ok(())
        };
        for (i, &(n, k)) in self.heads.iter().enumerate() {
            if !needs[n] {
                continue;
            }
            let out = &outputs[i];
            let g = match out_grads.get(i).cloned().flatten() {
                Some(g) => {
                    if g.shape() != out.shape() {
                        // MXNet copies a head gradient only where the backward
                        // graph reads it: a head whose op has a zero gradient
                        // everywhere (shape_array, argsort, ...) ignores it.
                        if self.zero_gradient(n, vars, bufs)? {
                            continue;
                        }
                        return Err(Error::new(format!(
                            "backward: head gradient {i} has shape {}, the output has {}",
                            fmt_shape(g.shape()),
                            fmt_shape(out.shape())
                        )));
                    }
                    g
                }
                None => op::call1("ones_like", std::slice::from_ref(out), &[])?,
            };
            add(&mut acc, (n, k), to_ctx(g, self.node_ctx[n])?)?;
        }
        for ni in (0..self.topo.len()).rev() {
            let node = &self.topo[ni];
            let Some(op) = node.op else { continue };
            if !needs[ni] {
                continue;
            }
            let outs = &bufs.entries[ni];
            if !(0..outs.len()).any(|k| acc.contains_key(&(ni, k))) {
                continue;
            }
            let mut ograds = Vec::with_capacity(outs.len());
            for (k, o) in outs.iter().enumerate() {
                ograds.push(match acc.remove(&(ni, k)) {
                    Some(g) => g,
                    None => op::call1("zeros_like", std::slice::from_ref(o), &[])?,
                });
            }
            let gf = op.grad.ok_or_else(|| Error::op(op.name, format!("no gradient is defined for this operator (node {})", node.name)))?;
            let inputs = self.input_arrays(ni, vars, bufs)?;
            let watched = monitor.is_some();
            let wanted = self.srcs[ni].iter().map(|s| match *s {
                Src::Var(v) | Src::Out(v, _) => needs[v] || watched,
            });
            let gin = op::with_unwanted_grads(wanted, || gf(&node.params, &inputs, outs, &ograds))
                .map_err(|e| Error::new(format!("{} (in the backward of node {})", e.message(), node.name)))?;
            if let Some(m) = monitor.as_deref_mut() {
                for (i, a) in inputs.iter().enumerate() {
                    let g = match gin.get(i).cloned().flatten() {
                        Some(g) => g,
                        None => op::call1("zeros_like", std::slice::from_ref(a), &[])?,
                    };
                    let name = if inputs.len() == 1 {
                        format!("{}_backward_output", node.name)
                    } else {
                        format!("{}_backward_output{i}", node.name)
                    };
                    m.report(&name, node, &g)?;
                }
            }
            for (i, g) in gin.into_iter().enumerate() {
                let (Some(g), Some(src)) = (g, self.srcs[ni].get(i)) else { continue };
                let key = match *src {
                    Src::Var(v) => (v, 0),
                    Src::Out(v, k) => (v, k),
                };
                if needs[key.0] {
                    add(&mut acc, key, to_ctx(g, self.node_ctx[key.0])?)?;
                }
            }
        }
        Ok(acc.into_iter().filter(|((n, _), _)| self.topo[*n].is_var()).map(|((n, _), g)| (n, g)).collect())
    }
}

pub struct Executor {
    graph: Graph,
    /// Per node index: the array of a variable (argument or auxiliary state).
    vars: Vec<Option<NDArray>>,
    pub args: Vec<NDArray>,
    pub grads: Vec<Option<NDArray>>,
    pub reqs: Vec<GradReq>,
    pub aux: Vec<NDArray>,
    pub outputs: Vec<NDArray>,
    bufs: Buffers,
    /// Some argument wants a gradient.
    has_grads: bool,
    /// The nodes a gradient flows through ([`Graph::grad_flow`]).
    flow: Vec<bool>,
    planned_bytes: usize,
    naive_bytes: usize,
    trained: bool,
}

fn zero_into(a: &NDArray) -> Result<()> {
    let shape: Vec<i64> = a.shape().iter().map(|&d| d as i64).collect();
    let p = Params::parse(
        "_zeros",
        op::lookup("_zeros")?.params,
        vec![("shape".into(), Value::Tuple(shape)), ("dtype".into(), Value::DType(a.dtype()))],
    )?;
    op::invoke(op::lookup("_zeros")?, &[], p, Some(std::slice::from_ref(a)), Some(a.ctx()))?;
    Ok(())
}

/// Runs `f` with the recording flag off and the training flag at `train`.
fn with_flags<T>(train: bool, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let prev_t = autograd::set_training(train);
    let prev_r = autograd::set_recording(false);
    let r = f();
    autograd::set_training(prev_t);
    autograd::set_recording(prev_r);
    r
}

impl Executor {
    /// Binds `sym` to arrays given in `list_arguments` / `list_auxiliary_states`
    /// order. `grads[i]` must be given where `reqs[i]` is not `Null`.
    pub fn bind(
        sym: &Symbol,
        ctx: Context,
        args: Vec<NDArray>,
        grads: Vec<Option<NDArray>>,
        reqs: Vec<GradReq>,
        aux: Vec<NDArray>,
    ) -> Result<Executor> {
        Self::bind_grouped(sym, ctx, args, grads, reqs, aux, &HashMap::new())
    }

    /// [`Executor::bind`] with MXNet's `group2ctx`: a node whose `ctx_group` is
    /// mapped runs on that context (every group in the graph must be mapped when the
    /// map is not empty); arrays may then live on any host context.
    pub fn bind_grouped(
        sym: &Symbol,
        ctx: Context,
        args: Vec<NDArray>,
        grads: Vec<Option<NDArray>>,
        reqs: Vec<GradReq>,
        aux: Vec<NDArray>,
        group2ctx: &HashMap<String, Context>,
    ) -> Result<Executor> {
        sym.check_unique_names()?;
        // MXNet merges common subexpressions when binding unless told not to; the
        // merge keeps the variables (and their order), so the arrays still match.
        let optimized;
        let sym = if super::cse::enabled() {
            optimized = super::cse::eliminate_common_expr(sym);
            &optimized
        } else {
            sym
        };
        let grouped = !group2ctx.is_empty();
        let (arg_vars, aux_vars) = sym.var_nodes();
        if args.len() != arg_vars.len() {
            return Err(Error::new(format!("bind: the symbol has {} arguments, {} arrays given", arg_vars.len(), args.len())));
        }
        if aux.len() != aux_vars.len() {
            return Err(Error::new(format!("bind: the symbol has {} auxiliary states, {} arrays given", aux_vars.len(), aux.len())));
        }
        if grads.len() != args.len() || reqs.len() != args.len() {
            return Err(Error::new("bind: one gradient array and one grad_req per argument are needed"));
        }
        let mut shapes = HashMap::new();
        let mut dtypes = HashMap::new();
        let mut var_ctx = HashMap::new();
        for (n, a) in arg_vars.iter().zip(&args).chain(aux_vars.iter().zip(&aux)) {
            var_ctx.insert(n.name.clone(), a.ctx());
            if a.ctx() != ctx && !(grouped && a.ctx().is_host() && ctx.is_host()) {
                return Err(Error::new(format!("bind: array for '{}' is on {} but the executor is on {ctx}", n.name, a.ctx())));
            }
            shapes.insert(n.name.clone(), Shape::from_slice(a.shape()));
            dtypes.insert(n.name.clone(), a.dtype());
        }
        for ((n, a), (g, r)) in arg_vars.iter().zip(&args).zip(grads.iter().zip(&reqs)) {
            match (g, r) {
                (None, GradReq::Write | GradReq::Add) => {
                    return Err(Error::new(format!("bind: grad_req for '{}' is not 'null' but no gradient array was given", n.name)))
                }
                (Some(g), GradReq::Write | GradReq::Add) if g.shape() != a.shape() || g.dtype() != a.dtype() => {
                    return Err(Error::new(format!(
                        "bind: gradient array for '{}' has shape {} {}, the argument has {} {}",
                        n.name,
                        fmt_shape(g.shape()),
                        g.dtype().name(),
                        fmt_shape(a.shape()),
                        a.dtype().name()
                    )))
                }
                _ => {}
            }
        }
        let graph = Graph::compile(sym, &shapes, &dtypes, ctx, &var_ctx, group2ctx)?;
        let has_grads = reqs.iter().any(|r| *r != GradReq::Null);
        let mut wants = vec![false; graph.num_nodes()];
        for (&ni, r) in graph.arg_nodes.iter().zip(&reqs) {
            wants[ni] = *r != GradReq::Null;
        }
        if has_grads {
            graph.check_differentiable(&wants)?;
        }
        let flow = graph.grad_flow(&wants);
        let (bufs, planned_bytes, naive_bytes) = graph.allocate_keeping(&graph.kept_for_backward(&flow))?;
        let mut vars = vec![None; graph.num_nodes()];
        for (&ni, a) in graph.arg_nodes.iter().zip(&args).chain(graph.aux_nodes.iter().zip(&aux)) {
            vars[ni] = Some(a.clone());
        }
        let outputs = graph.head_arrays(&vars, &bufs)?;
        Ok(Executor { graph, vars, args, grads, reqs, aux, outputs, bufs, has_grads, flow, planned_bytes, naive_bytes, trained: false })
    }

    /// Makes each output write into the first elements of `base[i]`, as the outputs
    /// of MXNet's reshaped executors share memory with the executor they came from.
    /// Outputs that are variables, or whose base is smaller or of another dtype or
    /// context, keep their own buffers.
    pub fn share_outputs(&mut self, base: &[NDArray]) -> Result<()> {
        for (i, &(n, k)) in self.graph.heads.iter().enumerate() {
            let Some(b) = base.get(i) else { break };
            let cur = &self.outputs[i];
            if self.graph.topo[n].is_var() || b.dtype() != cur.dtype() || b.ctx() != cur.ctx() || b.size() < cur.size() {
                continue;
            }
            let view = b.reshape_view(&[b.size()])?.slice_view(0, cur.size())?.reshape_view(cur.shape())?;
            self.bufs.entries[n][k] = view.clone();
            self.outputs[i] = view;
        }
        Ok(())
    }

    /// The graph the executor runs: the bound symbol after common subexpression
    /// elimination (MXNet's `get_optimized_symbol`).
    pub fn optimized_symbol(&self) -> Symbol {
        self.graph.symbol().clone()
    }

    /// Bytes of intermediate buffers after planning, and without reuse.
    pub fn planned_bytes(&self) -> (usize, usize) {
        (self.planned_bytes, self.naive_bytes)
    }

    /// Runs the graph once (asynchronously, through the engine).
    pub fn forward(&mut self, is_train: bool) -> Result<()> {
        self.forward_monitored(is_train, None)
    }

    /// [`Executor::forward`] calling `monitor` (the callback and `monitor_all`) with
    /// every node's outputs right after the node is pushed, and with its inputs
    /// before, when `monitor_all`. An error from the callback stops the forward and
    /// is returned naming the node, its operator and the array.
    pub fn forward_monitored(&mut self, is_train: bool, monitor: Option<&mut Monitor<'_>>) -> Result<()> {
        // For the profiler, an executor's ops are symbolic ones (as in MXNet).
        let _symbolic = crate::engine::profiler::graph_scope();
        let r = with_flags(is_train, || self.graph.forward(&self.vars, &self.bufs, &self.outputs, monitor));
        self.trained = r.is_ok() && is_train;
        r
    }

    /// Back-propagates `out_grads` (one per output; ones where not given) and
    /// stores the arguments' gradients as their `grad_req` says.
    pub fn backward(&mut self, out_grads: &[Option<NDArray>]) -> Result<()> {
        self.backward_monitored(out_grads, None)
    }

    /// [`Executor::backward`] reporting each node's input gradients to `monitor`
    /// (see [`Graph::backward`]).
    pub fn backward_monitored(&mut self, out_grads: &[Option<NDArray>], monitor: Option<&mut Monitor<'_>>) -> Result<()> {
        if !self.has_grads {
            return Err(Error::new("backward: the executor was bound with grad_req='null' for every argument"));
        }
        let _symbolic = crate::engine::profiler::graph_scope();
        let flow = &self.flow;
        let mut acc = with_flags(true, || self.graph.backward(&self.vars, &self.bufs, &self.outputs, out_grads, flow, monitor))?;
        let copy = op::lookup("_copyto")?;
        let plus = op::lookup("elemwise_add")?;
        for (j, &ni) in self.graph.arg_nodes.iter().enumerate() {
            let Some(dst) = self.grads[j].clone() else { continue };
            match (self.reqs[j], acc.remove(&ni)) {
                (GradReq::Null, _) => {}
                (GradReq::Write, Some(g)) => {
                    op::invoke(copy, &[g], Params::default(), Some(std::slice::from_ref(&dst)), None)?;
                }
                (GradReq::Write, None) => zero_into(&dst)?,
                (GradReq::Add, Some(g)) => {
                    let g = to_ctx(g, dst.ctx())?;
                    op::invoke(plus, &[dst.clone(), g], Params::default(), Some(std::slice::from_ref(&dst)), None)?;
                }
                (GradReq::Add, None) => {}
            }
        }
        Ok(())
    }

    /// Whether the last forward ran in training mode.
    pub fn trained(&self) -> bool {
        self.trained
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::lookup;

    fn chain() -> Symbol {
        let a = Symbol::var("a", vec![]).unwrap();
        let mut s = a;
        for i in 0..4 {
            s = Symbol::create(lookup("exp").unwrap(), &format!("e{i}"), vec![], vec![("data".into(), Some(s))]).unwrap();
        }
        s
    }

    #[test]
    fn forward_reuses_dead_buffers() {
        let s = chain();
        let ctx = Context::default();
        let a = NDArray::from_vec(&[2, 2], &[0.0f32, 0.0, 0.0, 0.0], ctx).unwrap();
        let mut ex = Executor::bind(&s, ctx, vec![a], vec![None], vec![GradReq::Null], vec![]).unwrap();
        let (planned, naive) = ex.planned_bytes();
        assert_eq!(naive, 4 * 16);
        // e0 and e2 share, e1 and e3: the head keeps its own buffer.
        assert!(planned < naive, "{planned} {naive}");
        ex.forward(false).unwrap();
        let v: Vec<f32> = ex.outputs[0].to_vec().unwrap();
        let want = 1f32.exp().exp().exp();
        assert!((v[0] - want).abs() < 1e-4 * want);
    }

    fn grouped_chain() -> Symbol {
        let a = Symbol::var("a", vec![]).unwrap();
        let mut s = a;
        for i in 0..4 {
            let g = if i < 2 { "g1" } else { "g2" };
            s = Symbol::create(
                lookup("exp").unwrap(),
                &format!("e{i}"),
                vec![("__ctx_group__".into(), g.into())],
                vec![("data".into(), Some(s))],
            )
            .unwrap();
        }
        s
    }

    #[test]
    fn groups_run_on_their_contexts_and_match_the_plain_run() {
        let s = grouped_chain();
        let ctx = Context::default();
        let vals = [0.1f32, -0.2, 0.05, 0.0];
        let run = |groups: &HashMap<String, Context>| {
            let a = NDArray::from_vec(&[4], &vals, ctx).unwrap();
            let g = NDArray::from_vec(&[4], &[0f32; 4], ctx).unwrap();
            let mut ex = Executor::bind_grouped(&s, ctx, vec![a], vec![Some(g.clone())], vec![GradReq::Write], vec![], groups).unwrap();
            ex.forward(true).unwrap();
            ex.backward(&[]).unwrap();
            (ex.outputs[0].ctx(), ex.outputs[0].to_vec::<f32>().unwrap(), g.to_vec::<f32>().unwrap())
        };
        let (c0, o0, g0) = run(&HashMap::new());
        let groups: HashMap<String, Context> = [("g1".to_string(), Context::cpu(1)), ("g2".to_string(), Context::cpu(2))].into();
        let (c1, o1, g1) = run(&groups);
        assert_eq!(c0, ctx);
        assert_eq!(c1, Context::cpu(2));
        assert_eq!(o0, o1);
        assert_eq!(g0, g1);
        // a group the map does not name
        let only: HashMap<String, Context> = [("g1".to_string(), Context::cpu(1))].into();
        let a = NDArray::from_vec(&[4], &vals, ctx).unwrap();
        let e = Executor::bind_grouped(&s, ctx, vec![a], vec![None], vec![GradReq::Null], vec![], &only).err().unwrap();
        assert!(e.message().contains("group 'g2' of node 'e2' (exp)"), "{}", e.message());
    }

    #[test]
    fn monitor_sees_outputs_and_inputs_and_stops_on_error() {
        let s = chain();
        let ctx = Context::default();
        let a = NDArray::from_vec(&[2], &[0.0f32, 0.0], ctx).unwrap();
        let mut ex = Executor::bind(&s, ctx, vec![a], vec![None], vec![GradReq::Null], vec![]).unwrap();
        let mut seen = Vec::new();
        let mut f = |n: &str, _: &str, _: &NDArray| -> Result<()> {
            seen.push(n.to_string());
            Ok(())
        };
        ex.forward_monitored(false, Some(&mut Monitor::executor(&mut f, true))).unwrap();
        // exp has no input names in MXNet: its input is `input0`; a variable input
        // is reported under its own name first.
        assert_eq!(seen[..4], ["a".to_string(), "e0_input0".into(), "e0_output".into(), "e1_input0".into()]);
        assert_eq!(seen.len(), 9);
        let mut bad = |n: &str, _: &str, _: &NDArray| -> Result<()> {
            if n == "e2_output" {
                Err(Error::new("boom"))
            } else {
                Ok(())
            }
        };
        let e = ex.forward_monitored(false, Some(&mut Monitor::executor(&mut bad, false))).unwrap_err();
        assert!(e.message().contains("'e2_output' of node 'e2' (operator exp): boom"), "{}", e.message());
    }

    #[test]
    fn stopped_heads_plan_without_backward_memory_and_backward_writes_zeros() {
        let ctx = Context::default();
        let a = || NDArray::from_vec(&[2, 2], &[0.5f32; 4], ctx).unwrap();
        let bind = |s: &Symbol, req: GradReq| {
            let g = NDArray::from_vec(&[2, 2], &[9f32; 4], ctx).unwrap();
            let ex = Executor::bind(s, ctx, vec![a()], vec![Some(g.clone())], vec![req], vec![]).unwrap();
            (ex, g)
        };
        let s = chain();
        let stopped = Symbol::create(lookup("BlockGrad").unwrap(), "bg", vec![], vec![("data".into(), Some(s.clone()))]).unwrap();
        let (with_grad, _) = bind(&s, GradReq::Write);
        let (no_grad, _) = bind(&s, GradReq::Null);
        let (mut blocked, g) = bind(&stopped, GradReq::Write);
        // 4 kept values against 2 reused buffers
        assert_eq!(with_grad.planned_bytes().0, 4 * 16);
        assert_eq!(no_grad.planned_bytes().0, 2 * 16);
        assert_eq!(blocked.planned_bytes().0, 2 * 16);
        blocked.forward(true).unwrap();
        blocked.backward(&[]).unwrap();
        assert_eq!(g.to_vec::<f32>().unwrap(), vec![0f32; 4]);
    }

    #[test]
    fn backward_monitor_names_each_nodes_input_gradients() {
        let s = chain();
        let ctx = Context::default();
        let a = NDArray::from_vec(&[2], &[0.0f32, 0.0], ctx).unwrap();
        let g = NDArray::from_vec(&[2], &[0.0f32, 0.0], ctx).unwrap();
        let mut ex = Executor::bind(&s, ctx, vec![a], vec![Some(g)], vec![GradReq::Write], vec![]).unwrap();
        ex.forward(true).unwrap();
        let mut seen = Vec::new();
        let mut f = |n: &str, op: &str, _: &NDArray| -> Result<()> {
            seen.push(format!("{n}:{op}"));
            Ok(())
        };
        ex.backward_monitored(&[], Some(&mut Monitor::executor(&mut f, false))).unwrap();
        assert_eq!(seen, ["e3_backward_output:exp", "e2_backward_output:exp", "e1_backward_output:exp", "e0_backward_output:exp"]);
    }

    #[test]
    fn bind_checks() {
        let s = chain();
        let ctx = Context::default();
        assert!(Executor::bind(&s, ctx, vec![], vec![], vec![], vec![]).is_err());
        let a = NDArray::from_vec(&[2], &[0.0f32, 0.0], ctx).unwrap();
        let e = Executor::bind(&s, ctx, vec![a], vec![None], vec![GradReq::Write], vec![]).err().unwrap();
        assert!(e.message().contains("'a'"));
        assert!(GradReq::parse("bogus").is_err());
    }
}
