//! Control flow: `_foreach`, `_while_loop` and `_cond`, MXNet's graph nodes that hold
//! subgraphs (built by `mx.sym.contrib.foreach` / `while_loop` / `cond`), and
//! `_CachedOp`, the node that stands for one call of a hybridized block in
//! `mx.autograd.get_symbol`'s result: its one subgraph is the block's graph, its
//! inputs are that graph's inputs (in its `list_inputs` order), its outputs and
//! their names are the graph's.
//!
//! Design. A node's subgraphs travel in its parameters as a [`Subgraphs`] value: a
//! list of [`Subgraph`] objects. This module knows them only through that trait
//! (infer a subgraph's shapes and dtypes, run it once on arrays); the graph layer
//! implements it over a symbol and a cached graph (`graph::subgraph`), so the
//! registry stays below the graph layer as DESIGN.md asks, and every consumer of the
//! registry (symbolic inference with its partial-shape probes, the executor, the
//! cached op of a hybridized block, JSON through the graph layer) handles these ops
//! like any other. The loops themselves are host ops ([`OpDef::host`]): they run on
//! the calling thread, one subgraph run per iteration, each of which pushes its ops
//! to the engine; only the loop condition (`_while_loop`) and the predicate
//! (`_cond`) are read back, as MXNet reads them.
//!
//! Gradients replay the forward: the gradient function runs the loop again on the
//! node's inputs with autograd recording (each subgraph run is recorded as one
//! cached-graph node, slices and stacks as registry ops) and back-propagates the
//! output gradients through that record. This costs a second forward instead of
//! keeping every iteration's intermediates; ops that draw random numbers in a loop
//! body (Dropout) draw again in the replay, unlike MXNet, which keeps the forward's.
//!
//! Inputs follow MXNet: `_foreach` takes the data arrays (sliced on axis 0), the
//! initial states, then the other free variables, placed into the body's inputs by
//! `in_data_locs`, `in_state_locs`, `remain_locs`; `_while_loop` and `_cond` take the
//! union of their subgraphs' inputs and `*_input_locs` map each subgraph input to
//! it. `num_args` counts the subgraphs too, as in MXNet.

use super::custom::intern_list;
use super::params::intern;
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::autograd::{self, GradReq};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};
use std::any::Any;
use std::sync::Arc;

/// What inference of one subgraph found: its inputs' and outputs' shapes (full
/// shapes only) and dtypes, None where unknown.
#[derive(Clone, Debug, Default)]
pub struct SubInfer {
    pub in_shapes: Vec<Option<Shape>>,
    pub in_dtypes: Vec<Option<DType>>,
    pub out_shapes: Vec<Option<Shape>>,
    pub out_dtypes: Vec<Option<DType>>,
}

/// A subgraph as the control-flow ops see it. Inputs are in the subgraph's
/// `list_inputs` order, outputs in its output order.
pub trait Subgraph: Send + Sync {
    fn num_inputs(&self) -> usize;
    fn num_outputs(&self) -> usize;
    /// Shape and dtype inference from what is known of the inputs; `shapes_needed`
    /// false infers dtypes only (as `infer_type`).
    fn infer(&self, shapes: &[Option<Shape>], dtypes: &[Option<DType>], shapes_needed: bool) -> Result<SubInfer>;
    /// Runs the subgraph once in the current training mode; while autograd
    /// records, the run is recorded.
    fn run(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>>;
    /// The names of the outputs (`list_outputs`), for a node that shows them.
    fn output_names(&self) -> Vec<String> {
        Vec::new()
    }
    fn as_any(&self) -> &dyn Any;
}

/// The subgraphs of a node (the `subgraphs` parameter).
#[derive(Clone)]
pub struct Subgraphs(pub Arc<Vec<Arc<dyn Subgraph>>>);

impl std::fmt::Debug for Subgraphs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{} subgraphs>", self.0.len())
    }
}

impl PartialEq for Subgraphs {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The parameter name under which a node keeps its subgraphs.
pub const SUBGRAPHS: &str = "subgraphs";

/// The ops that hold subgraphs, with how many each takes and the user's builder.
pub fn subgraph_count(op: &str) -> Option<(usize, &'static str)> {
    match op {
        "_foreach" => Some((1, "mx.sym.contrib.foreach")),
        "_while_loop" => Some((2, "mx.sym.contrib.while_loop")),
        "_cond" => Some((3, "mx.sym.contrib.cond")),
        CACHED => Some((1, "mx.autograd.get_symbol (from a hybridized block's recorded call)")),
        _ => None,
    }
}

fn subgraphs(op: &str, p: &Params) -> Result<Arc<Vec<Arc<dyn Subgraph>>>> {
    let (n, builder) = subgraph_count(op).unwrap_or((0, ""));
    match p.get(SUBGRAPHS) {
        Value::Subgraphs(s) if s.0.len() == n => Ok(s.0.clone()),
        Value::Subgraphs(s) => Err(Error::op(op, format!("the node holds {} subgraphs, the operator needs {n}", s.0.len()))),
        _ => Err(Error::op(op, format!("the node has no subgraph; build it with {builder}"))),
    }
}

fn locs(p: &Params, name: &str) -> Vec<usize> {
    p.tuple(name).into_iter().map(|x| x.max(0) as usize).collect()
}

/// Checks that every loc is below `n` (the inputs of the node or of a subgraph).
fn check_locs(op: &str, what: &str, l: &[usize], n: usize) -> Result<()> {
    if let Some(bad) = l.iter().find(|&&x| x >= n) {
        return Err(Error::op(op, format!("{what} refers to input {bad}, but there are only {n}")));
    }
    Ok(())
}

fn n_subgraphs(name: &str) -> i64 {
    subgraph_count(name).map(|(n, _)| n as i64).unwrap_or(0)
}

/// `data0`, `data1`, ... : the inputs (`num_args` less the subgraphs).
fn input_names_of(op: &str, p: &Params) -> &'static [&'static str] {
    let n = (p.int("num_args") - n_subgraphs(op)).max(0) as usize;
    intern_list((0..n).map(|i| intern(&format!("data{i}"))).collect())
}

fn foreach_inputs(p: &Params) -> &'static [&'static str] {
    input_names_of("_foreach", p)
}
fn while_inputs(p: &Params) -> &'static [&'static str] {
    input_names_of("_while_loop", p)
}
fn cond_inputs(p: &Params) -> &'static [&'static str] {
    input_names_of("_cond", p)
}

fn num_outputs(p: &Params) -> usize {
    p.int("num_outputs").max(0) as usize
}

fn not_on_engine(c: &mut OpCall) -> Result<()> {
    Err(Error::op(c.op.name, "a control-flow operator runs on the calling thread, not as an engine kernel"))
}

// ---- helpers over arrays ------------------------------------------------------------

fn tuple(s: &[usize]) -> Value {
    Value::Tuple(s.iter().map(|&d| d as i64).collect())
}

/// Row `t` of `a` along axis 0, as MXNet's `data[t]` (a 1-D array gives shape (1,)).
fn row(a: &NDArray, t: usize) -> Result<NDArray> {
    let s = super::call1(
        "slice_axis",
        std::slice::from_ref(a),
        &[("axis", Value::Int(0)), ("begin", Value::Int(t as i64)), ("end", Value::Int(t as i64 + 1))],
    )?;
    super::call1("Reshape", &[s], &[("shape", tuple(&row_shape(a.shape())))])
}

fn row_shape(s: &[usize]) -> Shape {
    if s.len() > 1 {
        Shape::from_slice(&s[1..])
    } else {
        Shape::from_slice(&[1])
    }
}

fn zeros(shape: &[usize], dtype: DType) -> Result<NDArray> {
    super::call1("_zeros", &[], &[("shape", tuple(shape)), ("dtype", Value::DType(dtype))])
}

/// The arrays of `steps` stacked on a new axis 0, then padded with zero rows up to
/// `rows` (`want` gives the shape and dtype when there is no step).
fn stack_rows(steps: &[NDArray], rows: usize, want: &(Shape, DType)) -> Result<NDArray> {
    if steps.is_empty() {
        return zeros(&want.0, want.1);
    }
    let n = steps.len() as i64;
    let stacked = super::call1("stack", steps, &[("axis", Value::Int(0)), ("num_args", Value::Int(n))])?;
    if steps.len() >= rows {
        return Ok(stacked);
    }
    let mut pad_shape = stacked.shape().to_vec();
    pad_shape[0] = rows - steps.len();
    let pad = zeros(&pad_shape, stacked.dtype())?;
    super::call1("Concat", &[stacked, pad], &[("dim", Value::Int(0)), ("num_args", Value::Int(2))])
}

/// A one-element array as a truth value (MXNet's `bool(x.asscalar())`).
fn truth(op: &str, a: &NDArray, what: &str) -> Result<bool> {
    if a.size() != 1 {
        return Err(Error::op(op, format!("{what} must be a scalar (one element), got shape {}", fmt_shape(a.shape()))));
    }
    let f = super::call1("Cast", std::slice::from_ref(&a.detach()), &[("dtype", Value::DType(DType::F64))])?;
    Ok(f.to_vec::<f64>()?[0] != 0.0)
}

/// A subgraph's inference, its errors naming the control-flow op and the subgraph.
fn sub_infer(op: &str, what: &str, g: &dyn Subgraph, s: &[Option<Shape>], d: &[Option<DType>], need: bool) -> Result<SubInfer> {
    g.infer(s, d, need).map_err(|e| Error::op(op, format!("in the {what}: {}", e.message())))
}

fn pick(xs: &[NDArray], l: &[usize]) -> Vec<NDArray> {
    l.iter().map(|&k| xs[k].clone()).collect()
}

fn run_checked(op: &str, g: &dyn Subgraph, inputs: &[NDArray], what: &str) -> Result<Vec<NDArray>> {
    let outs = g.run(inputs).map_err(|e| {
        let m = e.message();
        Error::op(op, format!("in the {what}: {m}"))
    })?;
    if outs.len() != g.num_outputs() {
        return Err(Error::op(op, format!("the {what} gave {} outputs, expected {}", outs.len(), g.num_outputs())));
    }
    Ok(outs)
}

// ---- _foreach -----------------------------------------------------------------------

struct Foreach {
    body: Arc<dyn Subgraph>,
    data: Vec<usize>,
    states: Vec<usize>,
    remain: Vec<usize>,
    n_out_data: usize,
}

const FOREACH: &str = "_foreach";

fn foreach_of(p: &Params) -> Result<Foreach> {
    let g = subgraphs(FOREACH, p)?;
    let f = Foreach {
        body: g[0].clone(),
        data: locs(p, "in_data_locs"),
        states: locs(p, "in_state_locs"),
        remain: locs(p, "remain_locs"),
        n_out_data: p.int("num_out_data").max(0) as usize,
    };
    let n = f.body.num_inputs();
    check_locs(FOREACH, "in_data_locs", &f.data, n)?;
    check_locs(FOREACH, "in_state_locs", &f.states, n)?;
    check_locs(FOREACH, "remain_locs", &f.remain, n)?;
    if f.data.len() + f.states.len() + f.remain.len() != n {
        return Err(Error::op(
            FOREACH,
            format!(
                "the loop body has {n} inputs, but in_data_locs, in_state_locs and remain_locs place {}",
                f.data.len() + f.states.len() + f.remain.len()
            ),
        ));
    }
    if f.data.is_empty() {
        return Err(Error::op(FOREACH, "there must be at least one data array to iterate over"));
    }
    if f.body.num_outputs() != f.n_out_data + f.states.len() || num_outputs(p) != f.body.num_outputs() {
        return Err(Error::op(
            FOREACH,
            format!(
                "the loop body has {} outputs; num_outputs={} and num_out_data={} with {} states do not match",
                f.body.num_outputs(),
                num_outputs(p),
                f.n_out_data,
                f.states.len()
            ),
        ));
    }
    Ok(f)
}

impl Foreach {
    /// The body's inputs from the node's (`row` maps a data input to its row).
    fn place<T: Clone>(&self, ins: &[T], row: impl Fn(&T) -> T, empty: T) -> Vec<T> {
        let mut sub = vec![empty; self.body.num_inputs()];
        let nd = self.data.len();
        let ns = self.states.len();
        for (i, &l) in self.data.iter().enumerate() {
            sub[l] = row(&ins[i]);
        }
        for (i, &l) in self.states.iter().enumerate() {
            sub[l] = ins[nd + i].clone();
        }
        for (j, &l) in self.remain.iter().enumerate() {
            sub[l] = ins[nd + ns + j].clone();
        }
        sub
    }
    fn sub_infer(&self, shapes: &[Option<Shape>], dtypes: &[Option<DType>], need: bool) -> Result<SubInfer> {
        let s = self.place(shapes, |s| s.as_ref().map(|s| row_shape(s)), None);
        let d = self.place(dtypes, |d| *d, None);
        sub_infer(FOREACH, "loop body", self.body.as_ref(), &s, &d, need)
    }
}

fn foreach_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let f = foreach_of(a.params)?;
    let n_in = f.data.len() + f.states.len() + f.remain.len();
    if a.shapes.len() != n_in {
        return Err(a.err(format!("expects {n_in} inputs, got {}", a.shapes.len())));
    }
    let len = a.shapes[0].first().copied().unwrap_or(0);
    for (i, s) in a.shapes[..f.data.len()].iter().enumerate() {
        if s.is_empty() || s[0] != len {
            return Err(a.err(format!(
                "data input {i} has shape {}; every data input must have {len} rows on axis 0, as data input 0",
                fmt_shape(s)
            )));
        }
    }
    let shapes: Vec<Option<Shape>> = a.shapes.iter().map(|s| Some(Shape::from_slice(s))).collect();
    let dtypes: Vec<Option<DType>> = a.dtypes.iter().map(|d| Some(*d)).collect();
    let r = f.sub_infer(&shapes, &dtypes, true)?;
    let mut outs = Vec::with_capacity(r.out_shapes.len());
    for (k, (s, d)) in r.out_shapes.iter().zip(&r.out_dtypes).enumerate() {
        let (Some(s), Some(d)) = (s, d) else {
            return Err(a.err(format!("cannot infer the shape and dtype of output {k} of the loop body")));
        };
        if k < f.n_out_data {
            let mut o = Shape::from_slice(&[len]);
            o.extend_from_slice(s);
            outs.push((o, *d));
        } else {
            let i = k - f.n_out_data;
            let (ws, wd) = (a.shapes[f.data.len() + i], a.dtypes[f.data.len() + i]);
            if ws != &s[..] || wd != *d {
                return Err(a.err(format!(
                    "loop state {i} enters the loop body as {} {} but the body returns it as {} {}; a state must keep its shape and dtype",
                    fmt_shape(ws),
                    wd.name(),
                    fmt_shape(s),
                    d.name()
                )));
            }
            outs.push((s.clone(), *d));
        }
    }
    Ok(outs)
}

fn foreach_fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let f = foreach_of(p)?;
    let nd = f.data.len();
    let ns = f.states.len();
    if shapes.len() != nd + ns + f.remain.len() {
        return Ok(());
    }
    for _ in 0..2 {
        let dtypes = vec![None; shapes.len()];
        let r = f.sub_infer(shapes, &dtypes, true)?;
        for (i, &l) in f.states.iter().enumerate() {
            if shapes[nd + i].is_none() {
                shapes[nd + i] = r.in_shapes[l].clone().or_else(|| r.out_shapes[f.n_out_data + i].clone());
            }
        }
        for (j, &l) in f.remain.iter().enumerate() {
            if shapes[nd + ns + j].is_none() {
                shapes[nd + ns + j] = r.in_shapes[l].clone();
            }
        }
    }
    Ok(())
}

fn foreach_dtype_fill(p: &Params, dtypes: &mut [Option<DType>]) {
    let Ok(f) = foreach_of(p) else { return };
    let nd = f.data.len();
    let ns = f.states.len();
    if dtypes.len() != nd + ns + f.remain.len() {
        return;
    }
    let shapes = vec![None; dtypes.len()];
    let Ok(r) = f.sub_infer(&shapes, dtypes, false) else { return };
    for (i, &l) in f.states.iter().enumerate() {
        if dtypes[nd + i].is_none() {
            dtypes[nd + i] = r.in_dtypes[l].or(r.out_dtypes[f.n_out_data + i]);
        }
    }
    for (j, &l) in f.remain.iter().enumerate() {
        if dtypes[nd + ns + j].is_none() {
            dtypes[nd + ns + j] = r.in_dtypes[l];
        }
    }
    for (i, &l) in f.data.iter().enumerate() {
        if dtypes[i].is_none() {
            dtypes[i] = r.in_dtypes[l];
        }
    }
}

fn foreach_forward(p: &Params, inputs: &[NDArray], want: &[(Shape, DType)]) -> Result<Vec<NDArray>> {
    let f = foreach_of(p)?;
    let nd = f.data.len();
    let ns = f.states.len();
    let len = inputs[0].shape().first().copied().unwrap_or(0);
    let mut cur: Vec<NDArray> = inputs.to_vec();
    let mut steps: Vec<Vec<NDArray>> = vec![Vec::with_capacity(len); f.n_out_data];
    for t in 0..len {
        let mut rows = Vec::with_capacity(nd);
        for a in &inputs[..nd] {
            rows.push(row(a, t)?);
        }
        let mut ins = cur.clone();
        ins[..nd].clone_from_slice(&rows);
        let sub = f.place(&ins, |a| a.clone(), inputs[0].clone());
        let outs = run_checked(FOREACH, f.body.as_ref(), &sub, "loop body")?;
        for (k, o) in outs[..f.n_out_data].iter().enumerate() {
            steps[k].push(o.clone());
        }
        for (i, o) in outs[f.n_out_data..].iter().enumerate() {
            cur[nd + i] = o.clone();
        }
    }
    let mut result = Vec::with_capacity(f.n_out_data + ns);
    for (k, s) in steps.iter().enumerate() {
        result.push(stack_rows(s, len, &want[k])?);
    }
    result.extend(cur[nd..nd + ns].iter().cloned());
    Ok(result)
}

// ---- _while_loop ----------------------------------------------------------------------

const WHILE: &str = "_while_loop";

struct While {
    cond: Arc<dyn Subgraph>,
    func: Arc<dyn Subgraph>,
    cond_locs: Vec<usize>,
    func_locs: Vec<usize>,
    /// Per loop variable: the node input it lives in.
    var_inputs: Vec<usize>,
    n_out_data: usize,
    max_iterations: usize,
}

fn while_of(p: &Params, n_inputs: Option<usize>) -> Result<While> {
    let g = subgraphs(WHILE, p)?;
    let cond_locs = locs(p, "cond_input_locs");
    let func_locs = locs(p, "func_input_locs");
    let var_locs = locs(p, "func_var_locs");
    let n_in = n_inputs.unwrap_or((p.int("num_args") - 2).max(0) as usize);
    let (cond, func) = (g[0].clone(), g[1].clone());
    if cond_locs.len() != cond.num_inputs() || func_locs.len() != func.num_inputs() {
        return Err(Error::op(
            WHILE,
            format!(
                "cond_input_locs has {} entries for a condition of {} inputs, func_input_locs {} for a body of {}",
                cond_locs.len(),
                cond.num_inputs(),
                func_locs.len(),
                func.num_inputs()
            ),
        ));
    }
    check_locs(WHILE, "cond_input_locs", &cond_locs, n_in)?;
    check_locs(WHILE, "func_input_locs", &func_locs, n_in)?;
    check_locs(WHILE, "func_var_locs", &var_locs, func.num_inputs())?;
    if cond.num_outputs() != 1 {
        return Err(Error::op(WHILE, format!("the loop condition must have one output, it has {}", cond.num_outputs())));
    }
    let n_out_data = p.int("num_out_data").max(0) as usize;
    if func.num_outputs() != n_out_data + var_locs.len() || num_outputs(p) != func.num_outputs() {
        return Err(Error::op(
            WHILE,
            format!(
                "the loop body has {} outputs; num_outputs={} and num_out_data={} with {} loop variables do not match",
                func.num_outputs(),
                num_outputs(p),
                n_out_data,
                var_locs.len()
            ),
        ));
    }
    let max_iterations = p.int("max_iterations");
    if max_iterations < 0 {
        return Err(Error::op(WHILE, format!("max_iterations must not be negative, got {max_iterations}")));
    }
    let var_inputs = var_locs.iter().map(|&l| func_locs[l]).collect();
    Ok(While { cond, func, cond_locs, func_locs, var_inputs, n_out_data, max_iterations: max_iterations as usize })
}

fn while_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let w = while_of(a.params, Some(a.shapes.len()))?;
    let shapes: Vec<Option<Shape>> = pick_opt(a.shapes.iter().map(|s| Some(Shape::from_slice(s))).collect(), &w.func_locs);
    let dtypes: Vec<Option<DType>> = pick_opt(a.dtypes.iter().map(|d| Some(*d)).collect(), &w.func_locs);
    let r = sub_infer(WHILE, "loop body", w.func.as_ref(), &shapes, &dtypes, true)?;
    let mut outs = Vec::with_capacity(r.out_shapes.len());
    for (k, (s, d)) in r.out_shapes.iter().zip(&r.out_dtypes).enumerate() {
        let (Some(s), Some(d)) = (s, d) else {
            return Err(a.err(format!("cannot infer the shape and dtype of output {k} of the loop body")));
        };
        if k < w.n_out_data {
            let mut o = Shape::from_slice(&[w.max_iterations]);
            o.extend_from_slice(s);
            outs.push((o, *d));
        } else {
            let i = k - w.n_out_data;
            let n = w.var_inputs[i];
            if a.shapes[n] != &s[..] || a.dtypes[n] != *d {
                return Err(a.err(format!(
                    "loop variable {i} enters the loop as {} {} but the body returns it as {} {}; a loop variable must keep its shape and dtype",
                    fmt_shape(a.shapes[n]),
                    a.dtypes[n].name(),
                    fmt_shape(s),
                    d.name()
                )));
            }
            outs.push((s.clone(), *d));
        }
    }
    Ok(outs)
}

fn pick_opt<T: Clone>(xs: Vec<Option<T>>, l: &[usize]) -> Vec<Option<T>> {
    l.iter().map(|&k| xs.get(k).cloned().flatten()).collect()
}

/// Fills unknown node inputs from what each subgraph's inference found.
fn fill_from<T: Clone>(slots: &mut [Option<T>], l: &[usize], found: &[Option<T>]) {
    for (j, &k) in l.iter().enumerate() {
        if let (Some(slot), Some(Some(v))) = (slots.get_mut(k), found.get(j)) {
            if slot.is_none() {
                *slot = Some(v.clone());
            }
        }
    }
}

fn while_fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let w = while_of(p, Some(shapes.len()))?;
    for _ in 0..2 {
        let rc = sub_infer(
            WHILE,
            "loop condition",
            w.cond.as_ref(),
            &pick_opt(shapes.to_vec(), &w.cond_locs),
            &vec![None; w.cond_locs.len()],
            true,
        )?;
        fill_from(shapes, &w.cond_locs, &rc.in_shapes);
        let rf =
            sub_infer(WHILE, "loop body", w.func.as_ref(), &pick_opt(shapes.to_vec(), &w.func_locs), &vec![None; w.func_locs.len()], true)?;
        fill_from(shapes, &w.func_locs, &rf.in_shapes);
        let outs: Vec<Option<Shape>> = rf.out_shapes[w.n_out_data..].to_vec();
        fill_from(shapes, &w.var_inputs, &outs);
    }
    Ok(())
}

fn while_dtype_fill(p: &Params, dtypes: &mut [Option<DType>]) {
    let Ok(w) = while_of(p, Some(dtypes.len())) else { return };
    if let Ok(r) = w.cond.infer(&vec![None; w.cond_locs.len()], &pick_opt(dtypes.to_vec(), &w.cond_locs), false) {
        fill_from(dtypes, &w.cond_locs, &r.in_dtypes);
    }
    if let Ok(r) = w.func.infer(&vec![None; w.func_locs.len()], &pick_opt(dtypes.to_vec(), &w.func_locs), false) {
        fill_from(dtypes, &w.func_locs, &r.in_dtypes);
        fill_from(dtypes, &w.var_inputs, &r.out_dtypes[w.n_out_data.min(r.out_dtypes.len())..]);
    }
}

fn while_forward(p: &Params, inputs: &[NDArray], want: &[(Shape, DType)]) -> Result<Vec<NDArray>> {
    let w = while_of(p, Some(inputs.len()))?;
    let mut cur: Vec<NDArray> = inputs.to_vec();
    let mut steps: Vec<Vec<NDArray>> = vec![Vec::new(); w.n_out_data];
    let mut n = 0;
    while n < w.max_iterations {
        let c = run_checked(WHILE, w.cond.as_ref(), &pick(&cur, &w.cond_locs), "loop condition")?;
        if !truth(WHILE, &c[0], "the loop condition")? {
            break;
        }
        let outs = run_checked(WHILE, w.func.as_ref(), &pick(&cur, &w.func_locs), "loop body")?;
        for (k, o) in outs[..w.n_out_data].iter().enumerate() {
            steps[k].push(o.clone());
        }
        for (i, o) in outs[w.n_out_data..].iter().enumerate() {
            cur[w.var_inputs[i]] = o.clone();
        }
        n += 1;
    }
    let mut result = Vec::with_capacity(want.len());
    for (k, s) in steps.iter().enumerate() {
        result.push(stack_rows(s, w.max_iterations, &want[k])?);
    }
    for &k in &w.var_inputs {
        result.push(cur[k].clone());
    }
    Ok(result)
}

// ---- _cond ---------------------------------------------------------------------------

const COND: &str = "_cond";

struct Cond {
    pred: Arc<dyn Subgraph>,
    then: Arc<dyn Subgraph>,
    other: Arc<dyn Subgraph>,
    pred_locs: Vec<usize>,
    then_locs: Vec<usize>,
    else_locs: Vec<usize>,
}

fn cond_of(p: &Params, n_inputs: Option<usize>) -> Result<Cond> {
    let g = subgraphs(COND, p)?;
    let c = Cond {
        pred: g[0].clone(),
        then: g[1].clone(),
        other: g[2].clone(),
        pred_locs: locs(p, "cond_input_locs"),
        then_locs: locs(p, "then_input_locs"),
        else_locs: locs(p, "else_input_locs"),
    };
    let n_in = n_inputs.unwrap_or((p.int("num_args") - 3).max(0) as usize);
    for (what, l, s) in [
        ("cond_input_locs", &c.pred_locs, &c.pred),
        ("then_input_locs", &c.then_locs, &c.then),
        ("else_input_locs", &c.else_locs, &c.other),
    ] {
        if l.len() != s.num_inputs() {
            return Err(Error::op(COND, format!("{what} has {} entries for a subgraph of {} inputs", l.len(), s.num_inputs())));
        }
        check_locs(COND, what, l, n_in)?;
    }
    if c.pred.num_outputs() != 1 {
        return Err(Error::op(COND, format!("the predicate must have one output, it has {}", c.pred.num_outputs())));
    }
    if c.then.num_outputs() != num_outputs(p) || c.other.num_outputs() != num_outputs(p) {
        return Err(Error::op(
            COND,
            format!(
                "the then branch has {} outputs and the else branch {}; num_outputs is {}",
                c.then.num_outputs(),
                c.other.num_outputs(),
                num_outputs(p)
            ),
        ));
    }
    Ok(c)
}

fn cond_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let c = cond_of(a.params, Some(a.shapes.len()))?;
    let shapes: Vec<Option<Shape>> = a.shapes.iter().map(|s| Some(Shape::from_slice(s))).collect();
    let dtypes: Vec<Option<DType>> = a.dtypes.iter().map(|d| Some(*d)).collect();
    let rt = sub_infer(
        COND,
        "then branch",
        c.then.as_ref(),
        &pick_opt(shapes.clone(), &c.then_locs),
        &pick_opt(dtypes.clone(), &c.then_locs),
        true,
    )?;
    let re = sub_infer(COND, "else branch", c.other.as_ref(), &pick_opt(shapes, &c.else_locs), &pick_opt(dtypes, &c.else_locs), true)?;
    let mut outs = Vec::new();
    for k in 0..rt.out_shapes.len() {
        let t = rt.out_shapes[k].clone().zip(rt.out_dtypes[k]);
        let e = re.out_shapes[k].clone().zip(re.out_dtypes[k]);
        match (t, e) {
            (Some(t), Some(e)) if t != e => {
                return Err(a.err(format!(
                    "output {k} is {} {} in the then branch but {} {} in the else branch; both branches must agree",
                    fmt_shape(&t.0),
                    t.1.name(),
                    fmt_shape(&e.0),
                    e.1.name()
                )))
            }
            (Some(t), _) | (None, Some(t)) => outs.push(t),
            (None, None) => return Err(a.err(format!("cannot infer the shape and dtype of output {k} of either branch"))),
        }
    }
    Ok(outs)
}

fn cond_fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let c = cond_of(p, Some(shapes.len()))?;
    for (g, l, what) in
        [(&c.pred, &c.pred_locs, "predicate"), (&c.then, &c.then_locs, "then branch"), (&c.other, &c.else_locs, "else branch")]
    {
        let r = sub_infer(COND, what, g.as_ref(), &pick_opt(shapes.to_vec(), l), &vec![None; l.len()], true)?;
        fill_from(shapes, l, &r.in_shapes);
    }
    Ok(())
}

fn cond_dtype_fill(p: &Params, dtypes: &mut [Option<DType>]) {
    let Ok(c) = cond_of(p, Some(dtypes.len())) else { return };
    for (g, l) in [(&c.pred, &c.pred_locs), (&c.then, &c.then_locs), (&c.other, &c.else_locs)] {
        if let Ok(r) = g.infer(&vec![None; l.len()], &pick_opt(dtypes.to_vec(), l), false) {
            fill_from(dtypes, l, &r.in_dtypes);
        }
    }
}

fn cond_forward(p: &Params, inputs: &[NDArray], _want: &[(Shape, DType)]) -> Result<Vec<NDArray>> {
    let c = cond_of(p, Some(inputs.len()))?;
    let v = run_checked(COND, c.pred.as_ref(), &pick(inputs, &c.pred_locs), "predicate")?;
    if truth(COND, &v[0], "the predicate")? {
        run_checked(COND, c.then.as_ref(), &pick(inputs, &c.then_locs), "then branch")
    } else {
        run_checked(COND, c.other.as_ref(), &pick(inputs, &c.else_locs), "else branch")
    }
}

/// Checks a control-flow node's parameters against its subgraphs and its number of
/// inputs (when a node is built or read from JSON).
pub fn check_node(op: &str, p: &Params, n_inputs: usize) -> Result<()> {
    match op {
        FOREACH => {
            let f = foreach_of(p)?;
            let n = f.data.len() + f.states.len() + f.remain.len();
            if n != n_inputs {
                return Err(Error::op(op, format!("the node has {n_inputs} inputs but the locations place {n}")));
            }
        }
        WHILE => {
            let w = while_of(p, Some(n_inputs))?;
            if w.var_inputs.is_empty() {
                return Err(Error::op(op, "loop_vars should contain at least one element"));
            }
        }
        COND => {
            cond_of(p, Some(n_inputs))?;
        }
        CACHED => {
            let g = cached_graph(p)?;
            if g.num_inputs() != n_inputs {
                return Err(Error::op(op, format!("the node has {n_inputs} inputs but its graph takes {}", g.num_inputs())));
            }
        }
        _ => {}
    }
    Ok(())
}

// ---- host forward and replayed gradient ------------------------------------------------

type Forward = fn(&Params, &[NDArray], &[(Shape, DType)]) -> Result<Vec<NDArray>>;

fn info(xs: &[NDArray]) -> Vec<(Shape, DType)> {
    xs.iter().map(|a| (Shape::from_slice(a.shape()), a.dtype())).collect()
}

/// Runs `fwd` without recording and copies its results into `outputs`.
fn host_run(name: &str, fwd: Forward, p: &Params, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let prev = autograd::set_recording(false);
    let r = fwd(p, inputs, &info(outputs));
    autograd::set_recording(prev);
    let r = r?;
    if r.len() != outputs.len() {
        return Err(Error::op(name, format!("computed {} outputs for {} (internal error)", r.len(), outputs.len())));
    }
    let copy = super::lookup("_copyto")?;
    for (k, (src, dst)) in r.iter().zip(outputs).enumerate() {
        if src.shape() != dst.shape() || src.dtype() != dst.dtype() {
            return Err(Error::op(
                name,
                format!(
                    "output {k} was inferred as {} {} but the loop computed {} {}",
                    fmt_shape(dst.shape()),
                    dst.dtype().name(),
                    fmt_shape(src.shape()),
                    src.dtype().name()
                ),
            ));
        }
        super::invoke(copy, std::slice::from_ref(src), Params::default(), Some(std::slice::from_ref(dst)), None)?;
    }
    Ok(())
}

/// The gradient by replay: the forward again on the inputs (as autograd variables,
/// the wanted ones), recorded, then back-propagated from the output gradients.
fn replay_grad(fwd: Forward, p: &Params, inputs: &[NDArray], outputs: &[NDArray], out_grads: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    let wanted: Vec<bool> = (0..inputs.len()).map(super::grad_wanted).collect();
    let mut vars = Vec::with_capacity(inputs.len());
    let mut marked = Vec::new();
    for (a, &w) in inputs.iter().zip(&wanted) {
        let mut v = a.detach();
        if w {
            let g = super::call1("zeros_like", &[a.detach()], &[])?;
            autograd::mark_variable(&mut v, g, GradReq::Write)?;
            marked.push(v.clone());
        }
        vars.push(v);
    }
    if marked.is_empty() {
        return Ok(vec![None; inputs.len()]);
    }
    let prev = autograd::set_recording(true);
    let outs = fwd(p, &vars, &info(outputs));
    autograd::set_recording(prev);
    let outs = outs?;
    let mut heads = Vec::new();
    let mut head_grads = Vec::new();
    for (o, g) in outs.iter().zip(out_grads) {
        if autograd::is_in_graph(o) {
            heads.push(o.clone());
            head_grads.push(Some(g.clone()));
        }
    }
    if heads.is_empty() {
        return Ok(vec![None; inputs.len()]);
    }
    let grads = autograd::backward(&heads, &head_grads, Some(&marked), false, autograd::is_training(), false)?.unwrap_or_default();
    let mut grads = grads.into_iter();
    Ok(wanted.iter().map(|&w| if w { grads.next() } else { None }).collect())
}

fn foreach_host(p: &Params, i: &[NDArray], o: &[NDArray], _: bool) -> Result<()> {
    host_run(FOREACH, foreach_forward, p, i, o)
}
fn while_host(p: &Params, i: &[NDArray], o: &[NDArray], _: bool) -> Result<()> {
    host_run(WHILE, while_forward, p, i, o)
}
fn cond_host(p: &Params, i: &[NDArray], o: &[NDArray], _: bool) -> Result<()> {
    host_run(COND, cond_forward, p, i, o)
}
fn foreach_grad(p: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    replay_grad(foreach_forward, p, i, o, g)
}
fn while_grad(p: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    replay_grad(while_forward, p, i, o, g)
}
fn cond_grad(p: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    replay_grad(cond_forward, p, i, o, g)
}

// ---- _CachedOp ------------------------------------------------------------------------------

const CACHED: &str = "_CachedOp";

fn cached_graph(p: &Params) -> Result<Arc<dyn Subgraph>> {
    Ok(subgraphs(CACHED, p)?[0].clone())
}

/// `data0`, `data1`, ...: one per input of the graph.
fn cached_inputs(p: &Params) -> &'static [&'static str] {
    let n = cached_graph(p).map(|g| g.num_inputs()).unwrap_or(0);
    intern_list((0..n).map(|i| intern(&format!("data{i}"))).collect())
}

fn cached_outputs(p: &Params) -> usize {
    cached_graph(p).map(|g| g.num_outputs()).unwrap_or(0)
}

fn cached_output_names(p: &Params) -> Vec<String> {
    cached_graph(p).map(|g| g.output_names()).unwrap_or_default()
}

fn cached_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let g = cached_graph(a.params)?;
    let shapes: Vec<Option<Shape>> = a.shapes.iter().map(|s| Some(Shape::from_slice(s))).collect();
    let dtypes: Vec<Option<DType>> = a.dtypes.iter().map(|d| Some(*d)).collect();
    let r = sub_infer(CACHED, "graph", g.as_ref(), &shapes, &dtypes, true)?;
    let mut outs = Vec::with_capacity(r.out_shapes.len());
    for (k, (s, d)) in r.out_shapes.into_iter().zip(r.out_dtypes).enumerate() {
        match (s, d) {
            (Some(s), Some(d)) => outs.push((s, d)),
            _ => return Err(a.err(format!("cannot infer the shape and dtype of output {k} of the graph"))),
        }
    }
    Ok(outs)
}

fn cached_fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let g = cached_graph(p)?;
    let r = sub_infer(CACHED, "graph", g.as_ref(), shapes, &vec![None; shapes.len()], true)?;
    let all: Vec<usize> = (0..shapes.len()).collect();
    fill_from(shapes, &all, &r.in_shapes);
    Ok(())
}

fn cached_dtype_fill(p: &Params, dtypes: &mut [Option<DType>]) {
    let Ok(g) = cached_graph(p) else { return };
    if let Ok(r) = g.infer(&vec![None; dtypes.len()], dtypes, false) {
        let all: Vec<usize> = (0..dtypes.len()).collect();
        fill_from(dtypes, &all, &r.in_dtypes);
    }
}

fn cached_forward(p: &Params, inputs: &[NDArray], _want: &[(Shape, DType)]) -> Result<Vec<NDArray>> {
    run_checked(CACHED, cached_graph(p)?.as_ref(), inputs, "graph")
}

fn cached_host(p: &Params, i: &[NDArray], o: &[NDArray], _: bool) -> Result<()> {
    host_run(CACHED, cached_forward, p, i, o)
}

fn cached_grad(p: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    replay_grad(cached_forward, p, i, o, g)
}

// ---- registration ------------------------------------------------------------------------

const NUM_ARGS: ParamSpec = ParamSpec::new("num_args", PType::Int, None, "Number of inputs, the subgraphs included.");
const NUM_OUTPUTS: ParamSpec = ParamSpec::new("num_outputs", PType::Int, None, "The number of outputs of the subgraph.");

const FOREACH_PARAMS: &[ParamSpec] = &[
    NUM_ARGS,
    NUM_OUTPUTS,
    ParamSpec::new("num_out_data", PType::Int, None, "The number of output data of the subgraph."),
    ParamSpec::new("in_state_locs", PType::Tuple, None, "The locations of loop states among the inputs."),
    ParamSpec::new("in_data_locs", PType::Tuple, None, "The locations of input data among the inputs."),
    ParamSpec::new("remain_locs", PType::Tuple, None, "The locations of remaining data among the inputs."),
];

const WHILE_PARAMS: &[ParamSpec] = &[
    NUM_ARGS,
    NUM_OUTPUTS,
    ParamSpec::new("num_out_data", PType::Int, None, "The number of outputs from the function body."),
    ParamSpec::new("max_iterations", PType::Int, None, "Maximum number of iterations."),
    ParamSpec::new("cond_input_locs", PType::Tuple, None, "The locations of cond's inputs in the given inputs."),
    ParamSpec::new("func_input_locs", PType::Tuple, None, "The locations of func's inputs in the given inputs."),
    ParamSpec::new("func_var_locs", PType::Tuple, None, "The locations of loop_vars among func's inputs."),
];

const COND_PARAMS: &[ParamSpec] = &[
    NUM_ARGS,
    NUM_OUTPUTS,
    ParamSpec::new("cond_input_locs", PType::Tuple, None, "The locations of cond's inputs in the given inputs."),
    ParamSpec::new("then_input_locs", PType::Tuple, None, "The locations of then's inputs in the given inputs."),
    ParamSpec::new("else_input_locs", PType::Tuple, None, "The locations of else's inputs in the given inputs."),
];

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "_foreach",
            "Run a for loop over an NDArray with user-defined computation (built by mx.sym.contrib.foreach).",
            Arity::Dynamic { all: &["data"], select: foreach_inputs },
            FOREACH_PARAMS,
            foreach_infer,
            not_on_engine,
        )
        .host(foreach_host)
        .grad(foreach_grad)
        .outputs(num_outputs)
        .fill(foreach_fill)
        .dtype_fill(foreach_dtype_fill),
    );
    r.add(
        OpDef::new(
            "_while_loop",
            "Run a while loop with user-defined computation and loop condition (built by mx.sym.contrib.while_loop).",
            Arity::Dynamic { all: &["data"], select: while_inputs },
            WHILE_PARAMS,
            while_infer,
            not_on_engine,
        )
        .host(while_host)
        .grad(while_grad)
        .outputs(num_outputs)
        .fill(while_fill)
        .dtype_fill(while_dtype_fill),
    );
    r.add(
        OpDef::new(
            "_cond",
            "Run a if-then-else using user-defined condition and computation (built by mx.sym.contrib.cond).",
            Arity::Dynamic { all: &["data"], select: cond_inputs },
            COND_PARAMS,
            cond_infer,
            not_on_engine,
        )
        .host(cond_host)
        .grad(cond_grad)
        .outputs(num_outputs)
        .fill(cond_fill)
        .dtype_fill(cond_dtype_fill),
    );
    r.add(
        OpDef::new(
            CACHED,
            "One call of a hybridized block's graph (its subgraph), as mx.autograd.get_symbol shows a call that was recorded as one node.",
            Arity::Dynamic { all: &["data"], select: cached_inputs },
            &[],
            cached_infer,
            not_on_engine,
        )
        .host(cached_host)
        .grad(cached_grad)
        .outputs(cached_outputs)
        .output_names(cached_output_names)
        .fill(cached_fill)
        .dtype_fill(cached_dtype_fill),
    );
}
