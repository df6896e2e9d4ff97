//! The executor: a symbol bound to argument, gradient and auxiliary arrays.
//!
//! Binding infers every shape and dtype and plans the intermediate buffers: walking
//! the nodes in order, an output takes a free buffer of its dtype (best fit, grown
//! if none is large enough) and the buffers of inputs seen for the last time are
//! freed. Without gradients every dead intermediate is reused; with gradients the
//! forward values are kept for the backward pass. `forward` pushes every node
//! through [`crate::op::invoke`] with the training flag set; `backward` runs the
//! registry's gradient functions in reverse order, sums gradients that meet, and
//! writes or adds them into the gradient arrays as `grad_req` says.

use super::infer::{infer, Inferred};
use super::{Node, Symbol};
use crate::autograd;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::op::{self, Params, Value};
use crate::shape::{fmt_shape, Shape};
use crate::Context;
use std::collections::HashMap;
use std::sync::Arc;

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
    /// Per buffer: dtype and capacity in elements.
    slots: Vec<(DType, usize)>,
}

fn plan(topo: &[Arc<Node>], info: &[Vec<(Shape, DType)>], srcs: &[Vec<Src>], heads: &[(usize, usize)], keep_all: bool) -> Plan {
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
    let mut slots: Vec<(DType, usize)> = Vec::new();
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
                .filter(|(_, &b)| slots[b].0 == *d && slots[b].1 >= need)
                .min_by_key(|(_, &b)| slots[b].1)
                .map(|(i, _)| i);
            let pick =
                fit.or_else(|| free.iter().enumerate().filter(|(_, &b)| slots[b].0 == *d).max_by_key(|(_, &b)| slots[b].1).map(|(i, _)| i));
            let b = match pick {
                Some(i) => {
                    let b = free.swap_remove(i);
                    slots[b].1 = slots[b].1.max(need);
                    b
                }
                None => {
                    slots.push((*d, need));
                    slots.len() - 1
                }
            };
            slot[ni][k] = b;
        }
        if keep_all {
            continue;
        }
        // Outputs nobody reads die at once; inputs read for the last time die now.
        for k in 0..info[ni].len() {
            if last[ni][k].is_none() {
                free.push(slot[ni][k]);
            }
        }
        let mut done: Vec<(usize, usize)> = Vec::new();
        for s in &srcs[ni] {
            if let Src::Out(n, k) = *s {
                if last[n][k] == Some(ni) && !done.contains(&(n, k)) {
                    done.push((n, k));
                    free.push(slot[n][k]);
                }
            }
        }
    }
    Plan { slot, slots }
}

pub struct Executor {
    topo: Vec<Arc<Node>>,
    srcs: Vec<Vec<Src>>,
    /// Node index → array of a variable (argument or auxiliary state).
    vars: HashMap<usize, NDArray>,
    arg_nodes: Vec<usize>,
    pub args: Vec<NDArray>,
    pub grads: Vec<Option<NDArray>>,
    pub reqs: Vec<GradReq>,
    pub aux: Vec<NDArray>,
    pub outputs: Vec<NDArray>,
    heads: Vec<(usize, usize)>,
    entries: Vec<Vec<NDArray>>,
    keep_all: bool,
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
        sym.check_unique_names()?;
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
        for (n, a) in arg_vars.iter().zip(&args).chain(aux_vars.iter().zip(&aux)) {
            if a.ctx() != ctx {
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
        let inf: Inferred = infer(sym, &shapes, &dtypes, true)?;
        // Every given array must agree with what inference derived for it.
        for (n, a) in arg_vars.iter().zip(&args).chain(aux_vars.iter().zip(&aux)) {
            if let (Some(s), _) = inf.var(n) {
                if &s[..] != a.shape() {
                    return Err(Error::new(format!(
                        "bind: array for '{}' has shape {}, the graph needs {}",
                        n.name,
                        fmt_shape(a.shape()),
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
        let heads: Vec<(usize, usize)> = sym.outputs.iter().map(|e| (inf.node_id(&e.node), e.index)).collect();
        let keep_all = reqs.iter().any(|r| *r != GradReq::Null);
        let p = plan(&topo, &info, &srcs, &heads, keep_all);
        let mut buffers = Vec::with_capacity(p.slots.len());
        let mut planned_bytes = 0;
        for (d, n) in &p.slots {
            planned_bytes += n * d.size();
            buffers.push(NDArray::empty(&[*n], ctx, *d)?);
        }
        let mut naive_bytes = 0;
        let mut entries: Vec<Vec<NDArray>> = Vec::with_capacity(topo.len());
        for (ni, outs) in info.iter().enumerate() {
            let mut v = Vec::with_capacity(outs.len());
            for (k, (s, d)) in outs.iter().enumerate() {
                let n: usize = s.iter().product();
                naive_bytes += n * d.size();
                v.push(buffers[p.slot[ni][k]].slice_view(0, n)?.reshape_view(s)?);
            }
            entries.push(v);
        }
        let mut vars = HashMap::new();
        let arg_nodes: Vec<usize> = arg_vars.iter().map(|n| inf.node_id(n)).collect();
        for (n, a) in arg_vars.iter().zip(&args).chain(aux_vars.iter().zip(&aux)) {
            vars.insert(inf.node_id(n), a.clone());
        }
        let mut outputs = Vec::with_capacity(heads.len());
        for &(n, k) in &heads {
            if topo[n].is_var() {
                let v = &vars[&n];
                outputs.push(NDArray::empty(v.shape(), ctx, v.dtype())?);
            } else {
                outputs.push(entries[n][k].clone());
            }
        }
        Ok(Executor {
            topo,
            srcs,
            vars,
            arg_nodes,
            args,
            grads,
            reqs,
            aux,
            outputs,
            heads,
            entries,
            keep_all,
            planned_bytes,
            naive_bytes,
            trained: false,
        })
    }

    /// Bytes of intermediate buffers after planning, and without reuse.
    pub fn planned_bytes(&self) -> (usize, usize) {
        (self.planned_bytes, self.naive_bytes)
    }

    fn input_arrays(&self, ni: usize) -> Vec<NDArray> {
        self.srcs[ni]
            .iter()
            .map(|s| match *s {
                Src::Var(n) => self.vars[&n].clone(),
                Src::Out(n, k) => self.entries[n][k].clone(),
            })
            .collect()
    }

    /// Runs the graph once (asynchronously, through the engine).
    pub fn forward(&mut self, is_train: bool) -> Result<()> {
        let prev_t = autograd::set_training(is_train);
        let prev_r = autograd::set_recording(false);
        let r = (|| {
            for (ni, n) in self.topo.iter().enumerate() {
                let Some(op) = n.op else { continue };
                let inputs = self.input_arrays(ni);
                op::invoke(op, &inputs, n.params.clone(), Some(&self.entries[ni]), None)
                    .map_err(|e| Error::new(format!("{} (in node {})", e.message(), n.name)))?;
            }
            let copy = op::lookup("_copyto")?;
            for (i, &(n, _)) in self.heads.iter().enumerate() {
                if self.topo[n].is_var() {
                    op::invoke(copy, &[self.vars[&n].clone()], Params::default(), Some(std::slice::from_ref(&self.outputs[i])), None)?;
                }
            }
            Ok(())
        })();
        autograd::set_training(prev_t);
        autograd::set_recording(prev_r);
        self.trained = r.is_ok() && is_train;
        r
    }

    /// Back-propagates `out_grads` (one per output; ones where not given) and
    /// stores the arguments' gradients as their `grad_req` says.
    pub fn backward(&mut self, out_grads: &[Option<NDArray>]) -> Result<()> {
        if !self.keep_all {
            return Err(Error::new("backward: the executor was bound with grad_req='null' for every argument"));
        }
        if !out_grads.is_empty() && out_grads.len() != self.heads.len() {
            return Err(Error::new(format!("backward: {} head gradients given for {} outputs", out_grads.len(), self.heads.len())));
        }
        let n = self.topo.len();
        // needs[ni]: some argument with a gradient depends on node ni.
        let mut needs = vec![false; n];
        for (j, &ni) in self.arg_nodes.iter().enumerate() {
            needs[ni] = self.reqs[j] != GradReq::Null;
        }
        for ni in 0..n {
            if !self.topo[ni].is_var() {
                needs[ni] = self.srcs[ni].iter().any(|s| match *s {
                    Src::Var(v) => needs[v],
                    Src::Out(v, _) => needs[v],
                });
            }
        }
        let prev_t = autograd::set_training(true);
        let prev_r = autograd::set_recording(false);
        let r = self.run_backward(out_grads, &needs);
        autograd::set_training(prev_t);
        autograd::set_recording(prev_r);
        r
    }

    fn run_backward(&mut self, out_grads: &[Option<NDArray>], needs: &[bool]) -> Result<()> {
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
            let out = &self.outputs[i];
            let g = match out_grads.get(i).cloned().flatten() {
                Some(g) => {
                    if g.shape() != out.shape() {
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
            add(&mut acc, (n, k), g)?;
        }
        for ni in (0..self.topo.len()).rev() {
            let node = self.topo[ni].clone();
            let Some(op) = node.op else { continue };
            if !needs[ni] {
                continue;
            }
            let outs = &self.entries[ni];
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
            let inputs = self.input_arrays(ni);
            let gin = gf(&node.params, &inputs, outs, &ograds)
                .map_err(|e| Error::new(format!("{} (in the backward of node {})", e.message(), node.name)))?;
            for (i, g) in gin.into_iter().enumerate() {
                let (Some(g), Some(src)) = (g, self.srcs[ni].get(i)) else { continue };
                let key = match *src {
                    Src::Var(v) => (v, 0),
                    Src::Out(v, k) => (v, k),
                };
                if needs[key.0] {
                    add(&mut acc, key, g)?;
                }
            }
        }
        let copy = op::lookup("_copyto")?;
        let plus = op::lookup("elemwise_add")?;
        for (j, &ni) in self.arg_nodes.iter().enumerate() {
            let Some(dst) = self.grads[j].clone() else { continue };
            let g = acc.remove(&(ni, 0));
            match (self.reqs[j], g) {
                (GradReq::Null, _) => {}
                (GradReq::Write, Some(g)) => {
                    op::invoke(copy, &[g], Params::default(), Some(std::slice::from_ref(&dst)), None)?;
                }
                (GradReq::Write, None) => zero_into(&dst)?,
                (GradReq::Add, Some(g)) => {
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
