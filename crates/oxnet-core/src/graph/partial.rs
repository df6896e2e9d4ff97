//! Partial shapes: inference when some dimensions are unknown (MXNet writes them as
//! 0, or -1 under `np_shape`), as in `infer_shape_partial` and in symbols whose batch
//! size comes later.
//!
//! The registry's `infer` and `fill` functions only take fully known shapes. Rather
//! than teach every op about unknown dimensions, this pass asks them with probe
//! values: each unknown dimension is replaced by a large prime, the op's shapes are
//! inferred, and the same is done with a second prime. An output dimension that is
//! the same in both runs does not depend on the unknowns and is known; one that
//! differs stays unknown. Backward, the known dimensions of an op's outputs (set by
//! its consumers) and of its other inputs are candidate values for its unknown input
//! dimensions (and, for an input with one unknown dimension, the size that keeps a
//! known output's element count, for `Reshape`): an assignment is kept only where
//! the op accepts it and rejects the probe values in its place, i.e. where the value
//! is forced (`a + b` with `a` of shape (0, 10) and `b` of (12, 0) makes both
//! (12, 10); `FullyConnected` with a known output batch gives its data that batch;
//! `Reshape` to a known (2, 75) gives data (2, 0, 5, 5) its 3).
//!
//! Ops that give no partial result in MXNet (`where` needs its condition whole) are
//! the ones whose registry inference rejects the probes; the pass never invents a
//! dimension the op does not determine.

use super::Node;
use crate::dtype::DType;
use crate::op::OpDef;
use crate::shape::Shape;
use std::sync::Arc;

/// Probe values for unknown dimensions: primes far from real sizes, small enough
/// that a product of several stays far from overflow.
const P1: usize = 9973;
const P2: usize = 10007;
/// The most assignments tried for one node.
const MAX_TRIES: usize = 4096;

/// What is known of one tensor: nothing, its rank with some dimensions (0 =
/// unknown), or all of it.
#[derive(Clone, Debug, PartialEq)]
pub enum Known {
    None,
    Partial(Shape),
    Full(Shape),
}

impl Known {
    pub fn from_dims(s: &[usize]) -> Known {
        if s.contains(&0) {
            Known::Partial(Shape::from_slice(s))
        } else {
            Known::Full(Shape::from_slice(s))
        }
    }
    fn dims(&self) -> Option<&Shape> {
        match self {
            Known::None => None,
            Known::Partial(s) | Known::Full(s) => Some(s),
        }
    }
}

/// What the pass learnt about one node.
pub struct Learnt {
    /// New knowledge about the node's inputs (index, what is now known).
    pub inputs: Vec<(usize, Known)>,
    /// The node's outputs, when the probes determined anything.
    pub outputs: Option<Vec<Known>>,
}

struct Probe<'a> {
    op: &'static OpDef,
    node: &'a Node,
    ins: &'a [Known],
    outs: &'a [Known],
    dtypes: Vec<DType>,
    /// (input, dim) of every unknown input dimension.
    unknown: Vec<(usize, usize)>,
}

impl Probe<'_> {
    /// The inputs with `vals` in place of the unknown dimensions and the inputs of
    /// unknown rank filled by the op's `fill`; None when the op cannot fill them.
    fn inputs(&self, vals: &[usize]) -> Option<Vec<Shape>> {
        let mut shapes: Vec<Option<Shape>> = self.ins.iter().map(|k| k.dims().cloned()).collect();
        for (&(i, d), &v) in self.unknown.iter().zip(vals) {
            if let Some(s) = shapes[i].as_mut() {
                s[d] = v;
            }
        }
        if shapes.iter().any(|s| s.is_none()) {
            let fill = self.op.fill?;
            fill(&self.node.params, &mut shapes).ok()?;
        }
        shapes.into_iter().collect()
    }

    /// Output shapes for these values, if the op accepts them and they agree with
    /// every known output dimension.
    fn eval(&self, vals: &[usize]) -> Option<(Vec<Shape>, Vec<Shape>)> {
        let ins = self.inputs(vals)?;
        let refs: Vec<&[usize]> = ins.iter().map(|s| &s[..]).collect();
        let outs = self.op.infer(&self.node.params, &refs, &self.dtypes).ok()?;
        let outs: Vec<Shape> = outs.into_iter().map(|(s, _)| s).collect();
        for (o, k) in outs.iter().zip(self.outs) {
            if let Some(kd) = k.dims() {
                if kd.len() != o.len() || kd.iter().zip(o.iter()).any(|(&a, &b)| a != 0 && a != b) {
                    return None;
                }
            }
        }
        Some((ins, outs))
    }

    /// Values that may stand for unknown dimension `u`: the probe, the known
    /// dimensions of the other inputs at the same position, and the known output
    /// dimensions.
    fn candidates(&self, u: usize) -> Vec<usize> {
        let (i, d) = self.unknown[u];
        let rank = self.ins[i].dims().map(|s| s.len()).unwrap_or(0);
        let mut c = vec![P1];
        for (j, k) in self.ins.iter().enumerate() {
            if let Some(s) = k.dims() {
                if j != i && s.len() == rank && s[d] != 0 {
                    c.push(s[d]);
                }
            }
        }
        for k in self.outs {
            if let Some(s) = k.dims() {
                c.extend(s.iter().copied().filter(|&v| v != 0));
            }
        }
        // An op that keeps the element count (`Reshape`) fixes the only unknown
        // dimension of an input to a known output's size over the input's known ones.
        if self.unknown.iter().filter(|&&(j, _)| j == i).count() == 1 {
            if let Some(known) = self.ins[i].dims().map(|s| s.iter().filter(|&&v| v != 0).product::<usize>()).filter(|&k| k > 0) {
                for k in self.outs {
                    if let Known::Full(s) = k {
                        let total: usize = s.iter().product();
                        if total > 0 && total.is_multiple_of(known) {
                            c.push(total / known);
                        }
                    }
                }
            }
        }
        let mut seen = Vec::new();
        c.retain(|v| {
            let new = !seen.contains(v);
            seen.push(*v);
            new
        });
        c
    }

    /// The first assignment (in candidate order, the probe first) the op accepts.
    fn solve(&self) -> Option<Vec<usize>> {
        let base = vec![P1; self.unknown.len()];
        if self.eval(&base).is_some() {
            return Some(base);
        }
        let cands: Vec<Vec<usize>> = (0..self.unknown.len()).map(|u| self.candidates(u)).collect();
        let total = cands.iter().try_fold(1usize, |acc, c| acc.checked_mul(c.len()).filter(|&t| t <= MAX_TRIES))?;
        let mut idx = vec![0usize; cands.len()];
        for _ in 0..total {
            let vals: Vec<usize> = idx.iter().zip(&cands).map(|(&i, c)| c[i]).collect();
            if self.eval(&vals).is_some() {
                return Some(vals);
            }
            for (i, c) in idx.iter_mut().zip(&cands) {
                *i += 1;
                if *i < c.len() {
                    break;
                }
                *i = 0;
            }
        }
        None
    }
}

/// Runs the probes on one op node: `ins` and `outs` are what is known of its
/// inputs and outputs. Returns what that determines, or None.
pub fn learn(node: &Arc<Node>, ins: &[Known], outs: &[Known], dtypes: Vec<DType>) -> Option<Learnt> {
    let op = node.op?;
    if !op.partial {
        return None;
    }
    let holes = ins.iter().any(|k| *k == Known::None);
    match learn_dims(op, node, ins, outs, dtypes.clone()) {
        Some(l) => Some(l),
        None if holes => learn_ranks(op, node, ins, outs, &dtypes),
        None => None,
    }
}

fn learn_dims(op: &'static OpDef, node: &Arc<Node>, ins: &[Known], outs: &[Known], dtypes: Vec<DType>) -> Option<Learnt> {
    let unknown: Vec<(usize, usize)> = ins
        .iter()
        .enumerate()
        .flat_map(|(i, k)| match k {
            Known::Partial(s) => s.iter().enumerate().filter(|(_, &v)| v == 0).map(|(d, _)| (i, d)).collect(),
            _ => Vec::new(),
        })
        .collect();
    let probe = Probe { op, node, ins, outs, dtypes, unknown };
    let sol = probe.solve()?;
    // Keep the values that are forced: the op rejects both probes in their place.
    let mut fixed = sol.clone();
    for u in 0..fixed.len() {
        if sol[u] == P1 {
            continue;
        }
        let forced = [P1, P2].iter().all(|&p| {
            let mut v = fixed.clone();
            v[u] = p;
            probe.eval(&v).is_none()
        });
        if !forced {
            fixed[u] = P1;
        }
    }
    // Forward: what does not move between the two probes is known. When the op
    // rejects the second probe the unknowns are tied to values it does not reveal:
    // only the forced dimensions are learnt.
    let alt: Vec<usize> = fixed.iter().map(|&f| if f == P1 { P2 } else { f }).collect();
    let (ins1, outs1) = probe.eval(&fixed)?;
    let second = probe.eval(&alt);
    let merge = |a: &Shape, b: &Shape| -> Known {
        if a.len() != b.len() {
            return Known::None;
        }
        let s: Vec<usize> = a.iter().zip(b.iter()).map(|(&x, &y)| if x == y { x } else { 0 }).collect();
        Known::from_dims(&s)
    };
    let mut inputs = Vec::new();
    for (i, k) in ins.iter().enumerate() {
        let now = match (&second, k) {
            (Some((ins2, _)), _) => merge(&ins1[i], &ins2[i]),
            (None, Known::Partial(old)) => {
                let mut s = old.clone();
                for (&(j, d), &v) in probe.unknown.iter().zip(&fixed) {
                    if j == i && v != P1 {
                        s[d] = v;
                    }
                }
                Known::from_dims(&s)
            }
            (None, _) => Known::None,
        };
        let zeros = |s: &Shape| s.iter().filter(|&&v| v == 0).count();
        let better = match (k, &now) {
            (Known::Full(_), _) | (_, Known::None) => false,
            (Known::None, _) => true,
            (Known::Partial(old), Known::Partial(new)) => zeros(new) < zeros(old),
            (Known::Partial(_), Known::Full(_)) => true,
        };
        if better {
            inputs.push((i, now));
        }
    }
    let mut outputs: Option<Vec<Known>> = second.map(|(_, outs2)| outs1.iter().zip(&outs2).map(|(a, b)| merge(a, b)).collect());
    if let (true, Some(outs), Some(Known::Partial(first))) = (op.partial_per_axis, outputs.as_mut(), ins.first()) {
        for o in outs.iter_mut() {
            if let Known::Partial(s) | Known::Full(s) = o {
                if s.len() == first.len() {
                    let dims: Vec<usize> = s.iter().zip(first.iter()).map(|(&v, &f)| if f == 0 { 0 } else { v }).collect();
                    *o = Known::from_dims(&dims);
                }
            }
        }
    }
    Some(Learnt { inputs, outputs })
}

/// Inputs of unknown rank that the op cannot fill from the others: a known shape of
/// another input or of an output is tried in their place, and kept where the op
/// rejects the probe shapes of the same rank (all dimensions large, and all 1, so a
/// broadcast input is never pinned to the full shape). `_identity_with_attr_like_rhs`
/// and elementwise ops pass a consumer's shape back to their inputs this way. An
/// output known in part is tried with the probe value in its unknown dimensions,
/// which the input then learns as unknown (`Cast` passes a convolution's partly
/// known weight shape back to the weight variable).
fn learn_ranks(op: &'static OpDef, node: &Node, ins: &[Known], outs: &[Known], dtypes: &[DType]) -> Option<Learnt> {
    if ins.iter().any(|k| matches!(k, Known::Partial(_))) {
        return None;
    }
    let holes: Vec<usize> = (0..ins.len()).filter(|&i| ins[i] == Known::None).collect();
    let mut cands: Vec<Shape> = Vec::new();
    for k in outs.iter().chain(ins) {
        let c = match k {
            Known::Full(s) => s.clone(),
            Known::Partial(s) => s.iter().map(|&d| if d == 0 { P1 } else { d }).collect(),
            Known::None => continue,
        };
        if !cands.contains(&c) {
            cands.push(c);
        }
    }
    if cands.is_empty() || outs.iter().all(|k| *k == Known::None) {
        return None;
    }
    let eval = |shapes: &[Shape]| -> bool {
        let refs: Vec<&[usize]> = shapes.iter().map(|s| &s[..]).collect();
        let Ok(got) = op.infer(&node.params, &refs, dtypes) else { return false };
        got.iter().zip(outs).all(|((o, _), k)| match k {
            Known::Full(s) => s == o,
            Known::Partial(p) => p.len() == o.len() && p.iter().zip(o.iter()).all(|(&a, &b)| a == 0 || a == b),
            Known::None => true,
        })
    };
    let total = (cands.len() as u64).checked_pow(holes.len() as u32).filter(|&t| t <= MAX_TRIES as u64)?;
    let base: Vec<Shape> = ins.iter().map(|k| k.dims().cloned().unwrap_or_default()).collect();
    for t in 0..total {
        let mut shapes = base.clone();
        let mut r = t;
        for &h in &holes {
            shapes[h] = cands[(r % cands.len() as u64) as usize].clone();
            r /= cands.len() as u64;
        }
        if !eval(&shapes) {
            continue;
        }
        let mut inputs = Vec::new();
        for &h in &holes {
            let rank = shapes[h].len();
            let forced = [Shape::from_slice(&vec![P1; rank]), Shape::from_slice(&vec![1; rank])].into_iter().all(|probe| {
                let mut v = shapes.clone();
                v[h] = probe;
                !eval(&v)
            });
            if forced {
                // The probe value stands for a dimension still unknown.
                let dims: Vec<usize> = shapes[h].iter().map(|&d| if d == P1 { 0 } else { d }).collect();
                inputs.push((h, Known::from_dims(&dims)));
            }
        }
        return Some(Learnt { inputs, outputs: None });
    }
    None
}
