//! Shape and dtype inference over a symbol's graph.
//!
//! Forward: an op whose input shapes and dtypes are all known gets its outputs from
//! its registry `infer`. Backward: an op's `fill` derives unknown input shapes from
//! the known ones (FullyConnected's weight from its data); before that, each known
//! input is checked against what the others imply, so a conflict names the op, the
//! argument and both shapes. Unknown variable dtypes take the dtype of the other
//! inputs of the op they feed, else float32. Passes repeat until nothing changes.

use super::{Node, Symbol};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::{fmt_shape, Shape};
use std::collections::HashMap;
use std::sync::Arc;

/// Inference results for every node output.
pub struct Inferred {
    pub topo: Vec<Arc<Node>>,
    pub index: HashMap<usize, usize>,
    pub shapes: Vec<Vec<Option<Shape>>>,
    pub dtypes: Vec<Vec<Option<DType>>>,
    /// What is known of entries without a full shape: their rank and some
    /// dimensions (0 where unknown); see [`super::partial`].
    pub partial: Vec<Vec<Option<Shape>>>,
}

impl Inferred {
    pub fn node_id(&self, n: &Arc<Node>) -> usize {
        self.index[&(Arc::as_ptr(n) as usize)]
    }
    pub fn shape_of(&self, e: &super::Entry) -> Option<&Shape> {
        self.shapes[self.node_id(&e.node)].get(e.index).and_then(|s| s.as_ref())
    }
    pub fn dtype_of(&self, e: &super::Entry) -> Option<DType> {
        self.dtypes[self.node_id(&e.node)].get(e.index).copied().flatten()
    }
    /// The full shape of an entry, else its partial shape (0 for unknown dims).
    pub fn partial_of(&self, e: &super::Entry) -> Option<&Shape> {
        let i = self.node_id(&e.node);
        self.shapes[i].get(e.index).and_then(|s| s.as_ref()).or_else(|| self.partial[i].get(e.index).and_then(|s| s.as_ref()))
    }
    /// The full or partial shape of a variable node.
    pub fn var_partial(&self, n: &Arc<Node>) -> Option<&Shape> {
        let i = self.node_id(n);
        self.shapes[i][0].as_ref().or(self.partial[i][0].as_ref())
    }
    /// The shape and dtype recorded for a variable node.
    pub fn var(&self, n: &Arc<Node>) -> (Option<&Shape>, Option<DType>) {
        let i = self.node_id(n);
        (self.shapes[i][0].as_ref(), self.dtypes[i][0])
    }
}

/// A `__shape__` attribute's dimensions, unknown ones (0 or negative) as 0; an
/// empty `()` is the scalar shape.
fn attr_raw(n: &Node) -> Option<Shape> {
    let s = n.attrs.read().get("__shape__").cloned()?;
    let t = s.trim().trim_start_matches(['(', '[']).trim_end_matches([')', ']']);
    let mut out = Shape::new();
    for item in t.split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let d: i64 = item.trim_end_matches('L').parse().ok()?;
        out.push(d.max(0) as usize);
    }
    Some(out)
}

/// A `__shape__` attribute, when fully known (MXNet writes 0 for unknown dims).
fn attr_shape(n: &Node) -> Option<Shape> {
    attr_raw(n).filter(|s| !s.contains(&0))
}

/// A `__shape__` attribute with some dimensions unknown (0).
fn attr_dims(n: &Node) -> Option<Shape> {
    attr_raw(n).filter(|s| !s.is_empty())
}

fn attr_dtype(n: &Node) -> Option<DType> {
    let s = n.attrs.read().get("__dtype__").cloned()?;
    s.trim().parse::<i32>().ok().and_then(|f| DType::from_flag(f).ok())
}

/// Whether a full shape agrees with a partly known one (0 = any size).
fn fits(partial: &Shape, full: &Shape) -> bool {
    partial.len() == full.len() && partial.iter().zip(full.iter()).all(|(&p, &f)| p == 0 || p == f)
}

fn node_desc(n: &Node) -> String {
    format!("{} ({})", n.name, n.op.map(|o| o.name).unwrap_or("null"))
}

/// The first known input that contradicts what the op's fill derives from the
/// other inputs, as an error naming the op, the argument and both shapes.
fn conflict(n: &Node, fill: crate::op::FillFn, known: &[Option<Shape>], ins: &[(usize, usize)], topo: &[Arc<Node>]) -> Option<Error> {
    let names = n.input_names();
    for i in 0..known.len() {
        let Some(given) = &known[i] else { continue };
        let mut probe = known.to_vec();
        probe[i] = None;
        if fill(&n.params, &mut probe).is_err() {
            continue;
        }
        let Some(implied) = &probe[i] else { continue };
        if implied == given {
            continue;
        }
        let (s, _) = ins[i];
        let arg = names.get(i).cloned().unwrap_or_else(|| format!("arg{i}"));
        let var = if topo[s].is_var() { format!(" ({})", topo[s].name) } else { String::new() };
        return Some(Error::new(format!(
            "Error in operator {}: shape inconsistent for argument '{arg}'{var}: provided {}, but the other inputs imply {}",
            node_desc(n),
            fmt_shape(given),
            fmt_shape(implied)
        )));
    }
    None
}

/// Runs inference. `shapes`/`dtypes` give variables by name; a 0 in a given shape
/// is an unknown dimension (MXNet 1.x's `infer_shape`). With `shapes_needed`
/// false (infer_type), outputs of ops whose shapes are unknown take the dtype of
/// their first input (or of their `dtype` parameter).
pub fn infer(sym: &Symbol, shapes: &HashMap<String, Shape>, dtypes: &HashMap<String, DType>, shapes_needed: bool) -> Result<Inferred> {
    guarded(sym, shapes, dtypes, shapes_needed, false)
}

/// [`infer`] for arrays being bound: the given shapes are the arrays' own, so a 0
/// is a dimension of size zero (an empty array), not an unknown one.
pub fn infer_bound(sym: &Symbol, shapes: &HashMap<String, Shape>, dtypes: &HashMap<String, DType>) -> Result<Inferred> {
    guarded(sym, shapes, dtypes, true, true)
}

fn guarded(
    sym: &Symbol,
    shapes: &HashMap<String, Shape>,
    dtypes: &HashMap<String, DType>,
    shapes_needed: bool,
    bound: bool,
) -> Result<Inferred> {
    // An op's inference function that panics is a bug; it must still reach the
    // caller as an error, never as a panic.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| infer_graph(sym, shapes, dtypes, shapes_needed, bound))).unwrap_or_else(|p| {
        let what = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
        Err(Error::new(format!("shape/type inference failed (internal error: {what})")))
    })
}

/// The `shape` parameter of an op without inputs when some of its dimensions are
/// unknown (0, or negative as MXNet writes them too): the shape with 0 for them.
fn unknown_dims_shape(n: &Node) -> Option<Vec<i64>> {
    let t = n.params.tuple("shape");
    t.iter().any(|&d| d <= 0).then(|| t.iter().map(|&d| d.max(0)).collect())
}

fn infer_graph(
    sym: &Symbol,
    shapes: &HashMap<String, Shape>,
    dtypes: &HashMap<String, DType>,
    shapes_needed: bool,
    bound: bool,
) -> Result<Inferred> {
    let topo = sym.topo();
    for n in &topo {
        if n.is_atomic() {
            return Err(Error::new(format!(
                "operator {} of node '{}' has no inputs yet: call the atomic symbol with its inputs first",
                n.op.map(|o| o.name).unwrap_or(""),
                n.name
            )));
        }
    }
    let index: HashMap<usize, usize> = topo.iter().enumerate().map(|(i, n)| (Arc::as_ptr(n) as usize, i)).collect();
    let mut sh: Vec<Vec<Option<Shape>>> = topo.iter().map(|n| vec![None; n.num_outputs()]).collect();
    let mut dt: Vec<Vec<Option<DType>>> = topo.iter().map(|n| vec![None; n.num_outputs()]).collect();
    let mut part: Vec<Vec<Option<Shape>>> = topo.iter().map(|n| vec![None; n.num_outputs()]).collect();
    for (i, n) in topo.iter().enumerate() {
        if n.is_var() {
            if let (true, Some(s)) = (bound, shapes.get(&n.name)) {
                sh[i][0] = Some(s.clone());
                dt[i][0] = dtypes.get(&n.name).copied().or_else(|| attr_dtype(n));
                continue;
            }
            part[i][0] = shapes.get(&n.name).cloned().filter(|s| s.contains(&0)).or_else(|| attr_dims(n).filter(|s| s.contains(&0)));
            sh[i][0] = shapes.get(&n.name).cloned().filter(|s| !s.contains(&0)).or_else(|| attr_shape(n));
            dt[i][0] = dtypes.get(&n.name).copied().or_else(|| attr_dtype(n));
        }
    }
    let id = |n: &Arc<Node>| index[&(Arc::as_ptr(n) as usize)];
    let mut defaulted = false;
    for _pass in 0..(2 * topo.len() + 8) {
        let mut changed = false;
        for (ni, n) in topo.iter().enumerate() {
            let Some(op) = n.op else { continue };
            let ins: Vec<(usize, usize)> = n.inputs.iter().map(|e| (id(&e.node), e.index)).collect();
            // Dtypes of unknown variable inputs from the other inputs.
            if let Some(f) = op.dtype_fill {
                let mut known: Vec<Option<DType>> = ins.iter().map(|&(s, k)| dt[s].get(k).copied().flatten()).collect();
                f(&n.params, &mut known);
                for (&(s, k), d) in ins.iter().zip(known) {
                    if topo[s].is_var() && dt[s][k].is_none() && d.is_some() {
                        dt[s][k] = d;
                        changed = true;
                    }
                }
            } else if let Some(d) = ins.iter().find_map(|&(s, k)| dt[s].get(k).copied().flatten()) {
                for &(s, k) in &ins {
                    if topo[s].is_var() && dt[s][k].is_none() {
                        dt[s][k] = Some(d);
                        changed = true;
                    }
                }
            }
            // Backward shape fill. When the op rejects the known shapes, each known
            // input is compared with what the others imply, to name the argument.
            if let Some(fill) = op.fill {
                let known: Vec<Option<Shape>> = ins.iter().map(|&(s, k)| sh[s].get(k).cloned().flatten()).collect();
                let mut filled = known.clone();
                if let Err(e) = fill(&n.params, &mut filled) {
                    return Err(conflict(n, fill, &known, &ins, &topo)
                        .unwrap_or_else(|| Error::new(format!("{} (in node {})", e.message(), n.name))));
                }
                for (i, f) in filled.into_iter().enumerate() {
                    if let (None, Some(f)) = (&known[i], f) {
                        let (s, k) = ins[i];
                        if let Some(Some(p)) = part[s].get(k) {
                            if !fits(p, &f) {
                                let arg = n.input_names().get(i).cloned().unwrap_or_else(|| format!("arg{i}"));
                                return Err(Error::new(format!(
                                    "Error in operator {}: shape inconsistent for argument '{arg}': provided {}, but the other inputs imply {}",
                                    node_desc(n),
                                    fmt_shape(p),
                                    fmt_shape(&f)
                                )));
                            }
                        }
                        sh[s][k] = Some(f);
                        changed = true;
                    }
                }
            }
            let in_sh: Option<Vec<Shape>> = ins.iter().map(|&(s, k)| sh[s].get(k).cloned().flatten()).collect();
            let in_dt: Option<Vec<DType>> = ins.iter().map(|&(s, k)| dt[s].get(k).copied().flatten()).collect();
            let done = sh[ni].first().map(|s| s.is_some()).unwrap_or(true) && dt[ni].first().map(|d| d.is_some()).unwrap_or(true);
            if done {
                continue;
            }
            match (in_sh, in_dt) {
                // A data-dependent output: its shape stays unknown (its static
                // dimensions are kept as a partial shape), its dtype is known.
                (Some(_), Some(_)) if op.dynamic.is_some() && dt[ni].first().map(|x| x.is_some()).unwrap_or(true) => {}
                (Some(s), Some(d)) if op.dynamic.is_some() => {
                    let refs: Vec<&[usize]> = s.iter().map(|x| &x[..]).collect();
                    let out = op.infer(&n.params, &refs, &d).map_err(|e| {
                        let m = e.message().to_string();
                        Error::new(if m.contains(&n.name) { m } else { format!("{m} (in node {})", n.name) })
                    })?;
                    dt[ni].resize(out.len(), None);
                    sh[ni].resize(out.len(), None);
                    part[ni].resize(out.len(), None);
                    for (k, (s, d)) in out.into_iter().enumerate() {
                        dt[ni][k] = Some(d);
                        part[ni][k] = Some(s);
                    }
                    changed = true;
                }
                // `arange(infer_range=True)` without `stop`: a 1-D output of unknown
                // length, for the consumers to determine.
                (Some(_), Some(_)) if ins.is_empty() && crate::op::infers_range(&n.params) => {
                    if dt[ni][0].is_none() {
                        dt[ni][0] = Some(n.params.dtype("dtype").unwrap_or(DType::F32));
                        changed = true;
                    }
                    if part[ni][0].is_none() && sh[ni][0].is_none() {
                        part[ni][0] = Some(Shape::from_slice(&[0]));
                        changed = true;
                    }
                }
                // An op without inputs (`zeros`, `ones`, the random samplers) whose
                // `shape` has 0 (or negative) dimensions: unknown dimensions in MXNet
                // 1.x (the default begin states of `mx.rnn` cells are (0, H);
                // `ones(shape=(-1, -1))`), left partial for the consumers to
                // determine; the executor then runs the op with the inferred shape.
                (Some(_), Some(d)) if ins.is_empty() && unknown_dims_shape(n).is_some() => {
                    let mut params = n.params.clone();
                    params.set_extra("shape", crate::op::Value::Tuple(unknown_dims_shape(n).unwrap_or_default()));
                    let out = op.infer(&params, &[], &d).map_err(|e| Error::new(format!("{} (in node {})", e.message(), n.name)))?;
                    for (k, (s, d)) in out.into_iter().enumerate().take(sh[ni].len()) {
                        if dt[ni][k].is_none() {
                            dt[ni][k] = Some(d);
                            changed = true;
                        }
                        if part[ni][k].is_none() && sh[ni][k].is_none() {
                            part[ni][k] = Some(s);
                            changed = true;
                        }
                    }
                }
                (Some(s), Some(d)) => {
                    let refs: Vec<&[usize]> = s.iter().map(|x| &x[..]).collect();
                    let out = op.infer(&n.params, &refs, &d).map_err(|e| {
                        let known: Vec<Option<Shape>> = s.iter().cloned().map(Some).collect();
                        op.fill.and_then(|f| conflict(n, f, &known, &ins, &topo)).unwrap_or_else(|| {
                            let m = e.message().to_string();
                            Error::new(if m.contains(&n.name) { m } else { format!("{m} (in node {})", n.name) })
                        })
                    })?;
                    // The registry's infer is the truth on how many outputs there are.
                    sh[ni].resize(out.len(), None);
                    dt[ni].resize(out.len(), None);
                    part[ni].resize(out.len(), None);
                    for (k, (s, d)) in out.into_iter().enumerate() {
                        if let Some(prev) = sh[ni][k].as_ref().or(part[ni].get(k).and_then(|p| p.as_ref())) {
                            if !fits(prev, &s) {
                                return Err(Error::new(format!(
                                    "Error in operator {}: shape inconsistent for output {k}: the consumers imply {}, the operator computes {}",
                                    node_desc(n),
                                    fmt_shape(prev),
                                    fmt_shape(&s)
                                )));
                            }
                        }
                        sh[ni][k] = Some(s);
                        dt[ni][k] = Some(d);
                    }
                    changed = true;
                }
                // Input shapes known but some input dtypes not yet (variables typed
                // later, by default): the output shapes are computed now with
                // float32 for the unknown dtypes, so that backward inference never
                // guesses what forward inference determines; the dtypes (and a
                // check of these shapes) come when the inputs' dtypes are known.
                (Some(s), None) if shapes_needed && sh[ni].first().map(|x| x.is_none()).unwrap_or(false) => {
                    let refs: Vec<&[usize]> = s.iter().map(|x| &x[..]).collect();
                    let d: Vec<DType> = ins.iter().map(|&(s, k)| dt[s].get(k).copied().flatten().unwrap_or(DType::F32)).collect();
                    if let Ok(out) = op.infer(&n.params, &refs, &d) {
                        sh[ni].resize(out.len(), None);
                        dt[ni].resize(out.len(), None);
                        part[ni].resize(out.len(), None);
                        for (k, (s, _)) in out.into_iter().enumerate() {
                            let fits_part = part[ni][k].as_ref().map(|p| fits(p, &s)).unwrap_or(true);
                            if sh[ni][k].is_none() && fits_part {
                                sh[ni][k] = Some(s);
                                changed = true;
                            }
                        }
                    }
                }
                (_, Some(d)) if !shapes_needed && dt[ni][0].is_none() => {
                    let od = n.params.dtype("dtype").or_else(|| d.first().copied()).unwrap_or(DType::F32);
                    for x in dt[ni].iter_mut() {
                        *x = Some(od);
                    }
                    changed = true;
                }
                // An op with an explicit `dtype` (Cast, Embedding, ...) types its
                // outputs without its inputs' dtypes (infer_type_partial).
                (_, None) if !shapes_needed && dt[ni][0].is_none() && n.params.dtype("dtype").is_some() && n.num_outputs() == 1 => {
                    dt[ni][0] = n.params.dtype("dtype");
                    changed = true;
                }
                (_, None) if !shapes_needed && ins.is_empty() && dt[ni][0].is_none() => {
                    let od = n.params.dtype("dtype").unwrap_or(DType::F32);
                    for x in dt[ni].iter_mut() {
                        *x = Some(od);
                    }
                    changed = true;
                }
                _ => {}
            }
        }
        if !changed && shapes_needed && partial_pass(&topo, &index, &mut sh, &mut part, &dt) {
            continue;
        }
        if !changed {
            if defaulted || !shapes_needed {
                break;
            }
            // Variables nobody constrains are float32, as in MXNet.
            defaulted = true;
            for (i, n) in topo.iter().enumerate() {
                if n.is_var() && dt[i][0].is_none() {
                    dt[i][0] = Some(DType::F32);
                }
            }
        }
    }
    for (p, s) in part.iter_mut().zip(&sh) {
        for (pk, sk) in p.iter_mut().zip(s) {
            if sk.is_some() {
                *pk = None;
            }
        }
    }
    Ok(Inferred { topo, index, shapes: sh, dtypes: dt, partial: part })
}

/// Probes the ops whose inputs are partly known (see [`super::partial`]), forward
/// then backward, until nothing more is learnt. Returns true when some entry got
/// its full shape, so that the full inference runs again.
fn partial_pass(
    topo: &[Arc<Node>],
    index: &HashMap<usize, usize>,
    sh: &mut [Vec<Option<Shape>>],
    part: &mut [Vec<Option<Shape>>],
    dt: &[Vec<Option<DType>>],
) -> bool {
    use super::partial::{learn, Known};
    let known = |sh: &[Vec<Option<Shape>>], part: &[Vec<Option<Shape>>], s: usize, k: usize| match (
        sh[s].get(k).cloned().flatten(),
        part[s].get(k).cloned().flatten(),
    ) {
        (Some(f), _) => Known::Full(f),
        (None, Some(p)) => Known::Partial(p),
        _ => Known::None,
    };
    let mut full = false;
    for _round in 0..4 {
        let mut learnt_any = false;
        let order: Vec<usize> = (0..topo.len()).chain((0..topo.len()).rev()).collect();
        for ni in order {
            let n = &topo[ni];
            // Data-dependent outputs stay unknown (see OpDef::dynamic).
            if n.op.map(|o| o.dynamic.is_some()).unwrap_or(true) {
                continue;
            }
            let ins: Vec<(usize, usize)> = n.inputs.iter().map(|e| (index[&(Arc::as_ptr(&e.node) as usize)], e.index)).collect();
            let ik: Vec<Known> = ins.iter().map(|&(s, k)| known(sh, part, s, k)).collect();
            let ok: Vec<Known> = (0..sh[ni].len()).map(|k| known(sh, part, ni, k)).collect();
            if ik.iter().all(|k| matches!(k, Known::Full(_)))
                || (ik.iter().all(|k| matches!(k, Known::None)) && ok.iter().all(|k| matches!(k, Known::None)))
            {
                continue;
            }
            let dts: Vec<DType> = ins.iter().map(|&(s, k)| dt[s].get(k).copied().flatten().unwrap_or(DType::F32)).collect();
            let Some(l) = learn(n, &ik, &ok, dts) else { continue };
            for (i, k) in l.inputs {
                let (s, e) = ins[i];
                match k {
                    Known::Full(f) => {
                        sh[s][e] = Some(f);
                        part[s][e] = None;
                        full = true;
                        learnt_any = true;
                    }
                    Known::Partial(p) => {
                        part[s][e] = Some(p);
                        learnt_any = true;
                    }
                    Known::None => {}
                }
            }
            for (k, o) in l.outputs.unwrap_or_default().into_iter().enumerate() {
                if k >= sh[ni].len() || k >= part[ni].len() || sh[ni][k].is_some() {
                    continue;
                }
                let zeros = |s: &Shape| s.iter().filter(|&&v| v == 0).count();
                match o {
                    Known::Full(f) => {
                        sh[ni][k] = Some(f);
                        part[ni][k] = None;
                        full = true;
                        learnt_any = true;
                    }
                    Known::Partial(p) => {
                        if part[ni][k].as_ref().map(|old| zeros(&p) < zeros(old)).unwrap_or(true) {
                            part[ni][k] = Some(p);
                            learnt_any = true;
                        }
                    }
                    Known::None => {}
                }
            }
        }
        if !learnt_any || full {
            break;
        }
    }
    full
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::lookup;

    #[test]
    fn forward_and_conflicts() {
        let a = Symbol::var("a", vec![]).unwrap();
        let b = Symbol::var("b", vec![("__shape__".into(), "(2, 3)".into())]).unwrap();
        let s =
            Symbol::create(lookup("elemwise_add").unwrap(), "p", vec![], vec![("lhs".into(), Some(a)), ("rhs".into(), Some(b))]).unwrap();
        let e = Symbol::create(lookup("sum").unwrap(), "s", vec![("axis".into(), "1".into())], vec![("data".into(), Some(s))]).unwrap();
        let mut m = HashMap::new();
        m.insert("a".to_string(), Shape::from_slice(&[2, 3]));
        let r = infer(&e, &m, &HashMap::new(), true).unwrap();
        assert_eq!(r.shape_of(&e.outputs[0]).unwrap().as_slice(), &[2]);
        assert_eq!(r.dtype_of(&e.outputs[0]), Some(DType::F32));
        m.insert("a".to_string(), Shape::from_slice(&[2, 4]));
        let err = infer(&e, &m, &HashMap::new(), true).err().unwrap();
        assert!(err.message().contains("elemwise_add") && err.message().contains("(2, 4)"), "{}", err.message());
        // dtype-only inference
        let mut d = HashMap::new();
        d.insert("a".to_string(), DType::F64);
        let r = infer(&e, &HashMap::new(), &d, false).unwrap();
        assert_eq!(r.dtype_of(&e.outputs[0]), Some(DType::F64));
    }
}
