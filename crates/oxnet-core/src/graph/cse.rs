//! Common subexpression elimination: the graph rewrite MXNet runs when an
//! executor is bound (`MXNET_ELIMINATE_COMMON_EXPR`, on unless set to `0`).
//!
//! Walking the nodes inputs first, two op nodes are merged when they call the same
//! op with the same attributes (compared as the strings the user gave, so
//! `scalar=2` and `scalar=2.0` stay apart, as in MXNet) on the same inputs (after
//! earlier merges); the first one in graph order stays. Names do not matter. Nodes
//! whose result is not a function of their inputs are never merged: ops that draw
//! random numbers (Dropout, the samplers), ops that write their inputs (BatchNorm's
//! moving statistics, optimizer updates), host ops (control flow, `Custom`) and ops
//! whose output shape depends on the input values. Variables are never merged, so
//! the rewritten symbol has the same arguments in the same order.
//!
//! When a merge leaves two heads on one entry, each later head gets a `_copy` of
//! the entry before it, named `{node}_{index}_copy` after the node it copies (a
//! chain for three or more), so that the outputs stay distinct arrays, as MXNet
//! does; heads that were the same entry before any merge are left alone when
//! nothing merges.

use super::{Entry, Node, Symbol};
use crate::op::{self, Params};
use parking_lot::RwLock;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Whether binding runs the pass (`MXNET_ELIMINATE_COMMON_EXPR`, default on).
pub fn enabled() -> bool {
    match std::env::var("MXNET_ELIMINATE_COMMON_EXPR") {
        Ok(v) => {
            let v = v.trim().to_ascii_lowercase();
            !(v == "0" || v == "false")
        }
        Err(_) => true,
    }
}

fn ptr(n: &Arc<Node>) -> usize {
    Arc::as_ptr(n) as usize
}

/// Whether a node's outputs are a function of its op, attributes and inputs.
fn mergeable(n: &Node) -> bool {
    let Some(op) = n.op else { return false };
    !op.random
        && op.host.is_none()
        && op.dynamic.is_none()
        && op.mutated(&n.params).is_empty()
        && op.train_writes.map(|f| f(&n.params).is_empty()).unwrap_or(true)
        && !matches!(n.params.get(op::control_flow::SUBGRAPHS), op::Value::Subgraphs(_))
}

type Key = (usize, BTreeMap<String, String>, Vec<(usize, usize)>);

/// `sym` with common subexpressions merged (see the module docs); `sym` itself
/// when nothing merges.
pub fn eliminate_common_expr(sym: &Symbol) -> Symbol {
    let mut map: HashMap<usize, Arc<Node>> = HashMap::new();
    let mut seen: HashMap<Key, Arc<Node>> = HashMap::new();
    let mut merged = false;
    let remap = |e: &Entry, map: &HashMap<usize, Arc<Node>>| Entry { node: map[&ptr(&e.node)].clone(), index: e.index };
    for n in sym.topo() {
        if n.is_var() {
            map.insert(ptr(&n), n.clone());
            continue;
        }
        let ins: Vec<Entry> = n.inputs.iter().map(|e| remap(e, &map)).collect();
        let same_inputs = ins.iter().zip(&n.inputs).all(|(a, b)| Arc::ptr_eq(&a.node, &b.node));
        let key = mergeable(&n).then(|| {
            let op = n.op.map(|o| o as *const op::OpDef as usize).unwrap_or(0);
            (op, n.attrs.read().clone(), ins.iter().map(|e| (ptr(&e.node), e.index)).collect::<Vec<_>>())
        });
        if let Some(m) = key.as_ref().and_then(|k| seen.get(k)) {
            map.insert(ptr(&n), m.clone());
            merged = true;
            continue;
        }
        let node = if same_inputs { n.clone() } else { Arc::new(n.copy(ins)) };
        if let Some(k) = key {
            seen.insert(k, node.clone());
        }
        map.insert(ptr(&n), node);
    }
    if !merged {
        return sym.clone();
    }
    let mut outputs: Vec<Entry> = sym.outputs.iter().map(|e| remap(e, &map)).collect();
    // Heads that now share an entry: a chain of copies keeps them distinct.
    let copy_op = op::lookup("_copy").ok();
    let mut latest: HashMap<(usize, usize), Entry> = HashMap::new();
    for out in outputs.iter_mut() {
        let key = (ptr(&out.node), out.index);
        let (Some(prev), Some(copy_op)) = (latest.get(&key), copy_op) else {
            latest.insert(key, out.clone());
            continue;
        };
        let node = Node {
            op: Some(copy_op),
            name: format!("{}_{}_copy", prev.node.name, prev.index),
            params: Params::default(),
            attrs: RwLock::new(BTreeMap::new()),
            inputs: vec![prev.clone()],
        };
        let e = Entry { node: Arc::new(node), index: 0 };
        latest.insert(key, e.clone());
        *out = e;
    }
    Symbol { outputs }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::lookup;

    fn var(n: &str) -> Symbol {
        Symbol::var(n, vec![]).unwrap()
    }
    fn add(name: &str, a: &Symbol, b: &Symbol) -> Symbol {
        Symbol::create(
            lookup("elemwise_add").unwrap(),
            name,
            vec![],
            vec![("lhs".into(), Some(a.clone())), ("rhs".into(), Some(b.clone()))],
        )
        .unwrap()
    }
    fn scalar(op: &str, name: &str, a: &Symbol, v: &str) -> Symbol {
        Symbol::create(lookup(op).unwrap(), name, vec![("scalar".into(), v.into())], vec![("data".into(), Some(a.clone()))]).unwrap()
    }

    #[test]
    fn merges_equal_nodes_and_keeps_distinct_ones() {
        let (a, b) = (var("a"), var("b"));
        // (a + b) + (a + b): one sum of a and b is left
        let s = add("top", &add("p1", &a, &b), &add("p2", &a, &b));
        let o = eliminate_common_expr(&s);
        assert_eq!(o.get_internals().list_outputs(), vec!["a", "b", "p1_output", "top_output"]);
        assert_eq!(o.list_arguments(), s.list_arguments());
        // (a + 1) + (a + 2), and 2 against 2.0: nothing merges
        let s = add("top", &scalar("_plus_scalar", "x", &a, "1"), &scalar("_plus_scalar", "y", &a, "2"));
        assert_eq!(eliminate_common_expr(&s).get_internals().outputs.len(), 4);
        let g = Symbol::group(&[scalar("_mul_scalar", "x", &a, "2"), scalar("_mul_scalar", "y", &a, "2.0")]);
        assert_eq!(eliminate_common_expr(&g).list_outputs(), vec!["x_output", "y_output"]);
    }

    #[test]
    fn merged_heads_get_copies_and_random_ops_stay() {
        let a = var("a");
        let d = scalar("_plus_scalar", "d", &a, "1");
        let m1 = Symbol::create(
            lookup("elemwise_mul").unwrap(),
            "m1",
            vec![],
            vec![("lhs".into(), Some(a.clone())), ("rhs".into(), Some(d.clone()))],
        )
        .unwrap();
        let m2 =
            Symbol::create(lookup("elemwise_mul").unwrap(), "m2", vec![], vec![("lhs".into(), Some(a.clone())), ("rhs".into(), Some(d))])
                .unwrap();
        let o = eliminate_common_expr(&Symbol::group(&[m1.clone(), m2.clone(), m2]));
        assert_eq!(o.list_outputs(), vec!["m1_output", "m1_0_copy_output", "m1_0_copy_0_copy_output"]);
        // the same entry twice, nothing merged: no copy
        let o = eliminate_common_expr(&Symbol::group(&[m1.clone(), m1]));
        assert_eq!(o.list_outputs(), vec!["m1_output", "m1_output"]);
        let drop = |n: &str| Symbol::create(lookup("Dropout").unwrap(), n, vec![], vec![("data".into(), Some(a.clone()))]).unwrap();
        let s = add("top", &drop("d1"), &drop("d2"));
        assert_eq!(eliminate_common_expr(&s).get_internals().outputs.len(), 4);
    }
}
