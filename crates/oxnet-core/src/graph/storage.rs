//! Storage types over a symbol's graph, and running a graph on sparse storage.
//!
//! [`infer_storage`] is MXNet's storage-type pass as an executor sees it: given the
//! storage types of the bound arguments and auxiliary states, it gives every
//! output's storage type, the storage type each argument's gradient gets (what
//! `simple_bind` allocates), and whether any node computes on sparse storage (see
//! [`crate::op::sparse::stype`] for the rules). It fails, naming the node, where
//! MXNet's pass fails (BatchNorm with `fix_gamma=True` on sparse inputs).
//!
//! [`run_sparse`] runs a graph node by node through [`crate::op::sparse::invoke_any`],
//! so nodes with sparse inputs compute as the imperative API does (sparse kernels
//! where an op has them, the dense fallback elsewhere). The planned dense executor
//! ([`super::exec`]) cannot express sparse results (a row_sparse output's stored
//! rows, the scatter ops' "only stored values" semantics), so executors whose graph
//! computes sparse storage run their forward passes here.

use super::infer::infer;
use super::{Entry, Node, Symbol};
use crate::autograd;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::ndarray::{AnyArray, SType};
use crate::op::sparse::{invoke_any, stype};
use crate::op::Value;
use crate::shape::Shape;
use std::collections::HashMap;
use std::sync::Arc;

/// What [`infer_storage`] finds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageInfo {
    /// One per symbol output.
    pub outputs: Vec<SType>,
    /// One per argument (`list_arguments` order): the storage type of its gradient.
    pub arg_grads: Vec<SType>,
    /// Whether some node computes on sparse storage (a sparse kernel runs).
    pub computes_sparse: bool,
}

fn ptr(n: &Arc<Node>) -> usize {
    Arc::as_ptr(n) as usize
}

/// Each node's position in the topological order, by node address.
fn topo_index(topo: &[Arc<Node>]) -> HashMap<usize, usize> {
    topo.iter().enumerate().map(|(i, n)| (ptr(n), i)).collect()
}

/// The values given for the graph's arguments and auxiliary states (their list
/// orders), by variable node address; `what` names the caller and `kind` the values
/// in the error when the counts differ.
fn by_variable<T: Clone>(
    what: &str,
    kind: &str,
    arg_vars: &[Arc<Node>],
    aux_vars: &[Arc<Node>],
    args: &[T],
    aux: &[T],
) -> Result<HashMap<usize, T>> {
    if args.len() != arg_vars.len() || aux.len() != aux_vars.len() {
        return Err(Error::new(format!(
            "{what}: the symbol has {} arguments and {} auxiliary states, {} and {} {kind} given",
            arg_vars.len(),
            aux_vars.len(),
            args.len(),
            aux.len()
        )));
    }
    Ok(arg_vars.iter().zip(args).chain(aux_vars.iter().zip(aux)).map(|(n, v)| (ptr(n), v.clone())).collect())
}

/// The storage type of the node output entry `e` (default where none was found).
fn stype_at(st: &[Vec<SType>], index: &HashMap<usize, usize>, e: &Entry) -> SType {
    st[index[&ptr(&e.node)]].get(e.index).copied().unwrap_or(SType::Default)
}

/// The value of the node output entry `e` computed so far.
fn value_at(vals: &[Vec<AnyArray>], index: &HashMap<usize, usize>, e: &Entry) -> Result<AnyArray> {
    vals[index[&ptr(&e.node)]]
        .get(e.index)
        .cloned()
        .ok_or_else(|| Error::new(format!("run_sparse: node {} has no output {}", e.node.name, e.index)))
}

fn in_node(n: &Node, e: Error) -> Error {
    Error::new(format!("{} (in node {})", e.message(), n.name))
}

/// The storage types of a graph's outputs and argument gradients for arguments and
/// auxiliary states of storage types `args` and `aux` (their list orders).
pub fn infer_storage(sym: &Symbol, args: &[SType], aux: &[SType]) -> Result<StorageInfo> {
    let topo = sym.topo();
    let index = topo_index(&topo);
    let (arg_vars, aux_vars) = sym.var_nodes();
    let var_st = by_variable("infer_storage", "storage types", &arg_vars, &aux_vars, args, aux)?;
    let mut st: Vec<Vec<SType>> = Vec::with_capacity(topo.len());
    let mut computes_sparse = false;
    for n in &topo {
        let Some(op) = n.op else {
            st.push(vec![var_st.get(&ptr(n)).copied().unwrap_or(SType::Default)]);
            continue;
        };
        let ins: Vec<SType> = n.inputs.iter().map(|e| stype_at(&st, &index, e)).collect();
        let (outs, sparse) = stype::forward(op, &n.params, &ins, n.num_outputs()).map_err(|e| in_node(n, e))?;
        computes_sparse |= sparse;
        st.push(outs);
    }
    // Gradients flow back from the heads, whose gradients are stored as the outputs are.
    let mut contrib: Vec<Vec<Vec<SType>>> = st.iter().map(|o| vec![Vec::new(); o.len()]).collect();
    for e in &sym.outputs {
        let i = index[&ptr(&e.node)];
        if let Some(c) = contrib[i].get_mut(e.index) {
            c.push(st[i][e.index]);
        }
    }
    for (i, n) in topo.iter().enumerate().rev() {
        let Some(op) = n.op else { continue };
        if contrib[i].iter().all(|c| c.is_empty()) {
            continue;
        }
        let ograd = contrib[i].first().map(|c| stype::sum_of(c)).unwrap_or(SType::Default);
        let ins: Vec<SType> = n.inputs.iter().map(|e| stype_at(&st, &index, e)).collect();
        for (e, g) in n.inputs.iter().zip(stype::backward(op, &n.params, &ins, ograd)) {
            if let Some(c) = contrib[index[&ptr(&e.node)]].get_mut(e.index) {
                c.push(g);
            }
        }
    }
    let outputs = sym.outputs.iter().map(|e| stype_at(&st, &index, e)).collect();
    let arg_grads = arg_vars.iter().map(|n| stype::sum_of(&contrib[index[&ptr(n)]][0])).collect();
    Ok(StorageInfo { outputs, arg_grads, computes_sparse })
}

/// Runs the graph once on arrays of any storage type (arguments and auxiliary
/// states in their list orders), node by node, with autograd's training flag at
/// `is_train` and recording off; returns one array per output. Auxiliary states
/// the ops update are updated in place.
pub fn run_sparse(sym: &Symbol, args: &[AnyArray], aux: &[AnyArray], ctx: Context, is_train: bool) -> Result<Vec<AnyArray>> {
    let topo = sym.topo();
    let index = topo_index(&topo);
    let (arg_vars, aux_vars) = sym.var_nodes();
    let var_val = by_variable("run_sparse", "arrays", &arg_vars, &aux_vars, args, aux)?;
    let prev_t = autograd::set_training(is_train);
    let prev_r = autograd::set_recording(false);
    let run = || -> Result<Vec<Vec<AnyArray>>> {
        let mut vals: Vec<Vec<AnyArray>> = Vec::with_capacity(topo.len());
        let mut inferred = None;
        for n in &topo {
            let Some(op) = n.op else {
                let v = var_val.get(&ptr(n)).cloned().ok_or_else(|| Error::new(format!("run_sparse: no array for '{}'", n.name)))?;
                vals.push(vec![v]);
                continue;
            };
            let inputs: Vec<AnyArray> = n.inputs.iter().map(|e| value_at(&vals, &index, e)).collect::<Result<_>>()?;
            let mut params = n.params.clone();
            // An input-less op whose `shape` has unknown (0) dimensions runs with the
            // shape inference finds, as in the dense executor.
            if inputs.is_empty() && params.tuple("shape").contains(&0) {
                if inferred.is_none() {
                    let (mut shapes, mut dtypes) = (HashMap::new(), HashMap::new());
                    for (v, a) in arg_vars.iter().zip(args).chain(aux_vars.iter().zip(aux)) {
                        shapes.insert(v.name.clone(), Shape::from_slice(a.shape()));
                        dtypes.insert(v.name.clone(), a.dtype());
                    }
                    inferred = Some(infer(sym, &shapes, &dtypes, true)?);
                }
                let inf = inferred.as_ref().unwrap();
                if let Some(s) = inf.shapes[inf.node_id(n)].first().cloned().flatten() {
                    params.set_extra("shape", Value::Tuple(s.iter().map(|&v| v as i64).collect()));
                }
            }
            vals.push(invoke_any(op, &inputs, params, None, Some(ctx)).map_err(|e| in_node(n, e))?);
        }
        Ok(vals)
    };
    let res = run();
    autograd::set_training(prev_t);
    autograd::set_recording(prev_r);
    let vals = res?;
    sym.outputs.iter().map(|e| value_at(&vals, &index, e)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ndarray::NDArray;
    use crate::op::{lookup, sparse::cast_storage};

    fn op_sym(name: &str, inputs: Vec<(&str, Symbol)>, attrs: &[(&str, &str)]) -> Symbol {
        let attrs = attrs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let inputs = inputs.into_iter().map(|(k, s)| (k.to_string(), Some(s))).collect();
        Symbol::create(lookup(name).unwrap(), name, attrs, inputs).unwrap()
    }

    #[test]
    fn relu_of_row_sparse_stays_row_sparse_and_so_does_its_gradient() {
        let x = Symbol::var("x", vec![]).unwrap();
        let y = op_sym("relu", vec![("data", x.clone())], &[]);
        let info = infer_storage(&y, &[SType::RowSparse], &[]).unwrap();
        assert_eq!(info, StorageInfo { outputs: vec![SType::RowSparse], arg_grads: vec![SType::RowSparse], computes_sparse: true });
        let e = op_sym("exp", vec![("data", x)], &[]);
        let info = infer_storage(&e, &[SType::RowSparse], &[]).unwrap();
        assert_eq!(info, StorageInfo { outputs: vec![SType::Default], arg_grads: vec![SType::Default], computes_sparse: false });
    }

    #[test]
    fn scatter_div_runs_on_the_stored_rows_only() {
        let (l, r) = (Symbol::var("l", vec![]).unwrap(), Symbol::var("r", vec![]).unwrap());
        let y = op_sym("_scatter_elemwise_div", vec![("lhs", l), ("rhs", r)], &[]);
        let ctx = Context::cpu(0);
        let lv = AnyArray::Dense(NDArray::from_vec(&[3, 1], &[2.0f32, 0.0, 6.0], ctx).unwrap());
        let lv = cast_storage(&lv, SType::RowSparse).unwrap();
        let rv = AnyArray::Dense(NDArray::from_vec(&[3, 1], &[4.0f32, 0.0, 0.0], ctx).unwrap());
        let out = run_sparse(&y, &[lv, rv], &[], ctx, false).unwrap();
        assert_eq!(out[0].stype(), SType::RowSparse);
        let p = out[0].sparse().unwrap().parts_now().unwrap();
        assert_eq!(p.aux[0].to_vec::<i64>().unwrap(), vec![0, 2]);
        let v = p.data.to_vec::<f32>().unwrap();
        assert_eq!(v[0], 0.5);
        assert!(v[1].is_infinite());
    }
}
