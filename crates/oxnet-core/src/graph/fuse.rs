//! Inference fusion: before a hybridized graph runs outside training, each
//! `Convolution` is merged with what follows it when nothing else reads the
//! values in between: a `BatchNorm` over its channels (inference form), an
//! `elemwise_add` of another value (a residual connection), and a ReLU
//! (`Activation(act_type='relu')`, `relu`) or ReLU6 (`clip(0, 6)`), in that order,
//! each optional. The chain becomes one `_sg_oxnet_conv` node (see
//! `op::nn_fused`), so the convolution's output pass does all of it and the
//! intermediate activations are never written.
//!
//! The rewritten symbol keeps every variable (same names, same nodes' names), so a
//! caller binds it by name exactly like the original. Training graphs are never
//! rewritten: BatchNorm then normalises with the batch's statistics and the
//! gradients need the intermediate values.

use super::{ptr, Entry, Node, Symbol};
use crate::op::{self, nn_fused, Value};
use parking_lot::RwLock;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// Who reads what: `(node, output) -> readers` (a head counts as a reader).
struct Readers {
    by_entry: HashMap<(usize, usize), Vec<Option<Arc<Node>>>>,
}

impl Readers {
    fn new(sym: &Symbol, topo: &[Arc<Node>]) -> Readers {
        let mut by_entry: HashMap<(usize, usize), Vec<Option<Arc<Node>>>> = HashMap::new();
        for n in topo {
            for e in &n.inputs {
                by_entry.entry((ptr(&e.node), e.index)).or_default().push(Some(n.clone()));
            }
        }
        for e in &sym.outputs {
            by_entry.entry((ptr(&e.node), e.index)).or_default().push(None);
        }
        Readers { by_entry }
    }

    /// The only reader of output `i` of `n`, when there is exactly one and it is a node.
    fn sole(&self, n: &Arc<Node>, i: usize) -> Option<Arc<Node>> {
        match self.by_entry.get(&(ptr(n), i)).map(|v| v.as_slice()) {
            Some([Some(r)]) => Some(r.clone()),
            _ => None,
        }
    }

    fn unread(&self, n: &Arc<Node>, i: usize) -> bool {
        self.by_entry.get(&(ptr(n), i)).is_none_or(|v| v.is_empty())
    }
}

fn op_name(n: &Node) -> &str {
    n.op.map(|o| o.name).unwrap_or("")
}

/// The clamp of an activation node, if it is one the fusion takes.
fn activation(n: &Node) -> Option<(f64, f64)> {
    match op_name(n) {
        "relu" => Some((0.0, f64::INFINITY)),
        "Activation" if n.params.str("act_type") == "relu" => Some((0.0, f64::INFINITY)),
        "clip" => {
            let (lo, hi) = (n.params.float("a_min"), n.params.float("a_max"));
            (lo <= hi && !lo.is_nan() && !hi.is_nan()).then_some((lo, hi))
        }
        _ => None,
    }
}

/// One fusable chain, found from its convolution.
struct Chain {
    conv: Arc<Node>,
    bn: Option<Arc<Node>>,
    residual: Option<Entry>,
    act: Option<(f64, f64)>,
    /// The chain's last node, whose output 0 the fused node replaces.
    tail: Arc<Node>,
    /// The nodes after the convolution that the chain takes.
    absorbed: Vec<Arc<Node>>,
}

/// The chain starting at `conv`, taking no node in `claimed` (nodes of chains
/// found before: a residual add reached from both of its addends goes to one).
fn chain(conv: &Arc<Node>, readers: &Readers, claimed: &HashSet<usize>) -> Option<Chain> {
    let next = |n: &Arc<Node>| readers.sole(n, 0).filter(|r| !claimed.contains(&ptr(r)));
    if op_name(conv) != "Convolution" || !matches!(conv.params.str("layout"), "None" | "NCW" | "NCHW" | "NCDHW") {
        return None;
    }
    let mut tail = conv.clone();
    let mut bn = None;
    let mut residual = None;
    let mut act = None;
    let mut absorbed = Vec::new();
    if let Some(b) = next(&tail) {
        if op_name(&b) == "BatchNorm"
            && b.params.int("axis") == 1
            && ptr(&b.inputs[0].node) == ptr(&tail)
            && b.inputs[0].index == 0
            && readers.unread(&b, 1)
            && readers.unread(&b, 2)
        {
            bn = Some(b.clone());
            absorbed.push(b.clone());
            tail = b;
        }
    }
    if let Some(a) = next(&tail) {
        if op_name(&a) == "elemwise_add" && a.inputs.len() == 2 {
            let mine = |e: &Entry| ptr(&e.node) == ptr(&tail) && e.index == 0;
            let other = match (mine(&a.inputs[0]), mine(&a.inputs[1])) {
                (true, false) => Some(a.inputs[1].clone()),
                (false, true) => Some(a.inputs[0].clone()),
                _ => None,
            };
            if let Some(o) = other {
                residual = Some(o);
                absorbed.push(a.clone());
                tail = a;
            }
        }
    }
    if let Some(r) = next(&tail) {
        if let Some(c) = activation(&r) {
            act = Some(c);
            absorbed.push(r.clone());
            tail = r;
        }
    }
    if bn.is_none() && residual.is_none() && act.is_none() {
        return None;
    }
    Some(Chain { conv: conv.clone(), bn, residual, act, tail, absorbed })
}

/// The symbol with every fusable chain fused, or None when there is none.
pub fn fuse_inference(sym: &Symbol) -> Option<Symbol> {
    let topo = sym.topo();
    let readers = Readers::new(sym, &topo);
    let fused_op = op::lookup(nn_fused::NAME).ok()?;
    // tail node -> its chain; nodes inside a chain (not its tail) are dropped.
    let mut chains: HashMap<usize, Chain> = HashMap::new();
    let mut claimed = HashSet::new();
    for n in &topo {
        if let Some(c) = chain(n, &readers, &claimed) {
            claimed.extend(c.absorbed.iter().map(ptr));
            chains.insert(ptr(&c.tail), c);
        }
    }
    if chains.is_empty() {
        return None;
    }
    // Rebuild in topological order; `new` maps old nodes to their replacements.
    let mut new: HashMap<usize, Arc<Node>> = HashMap::new();
    let map = |e: &Entry, new: &HashMap<usize, Arc<Node>>| -> Entry {
        match new.get(&ptr(&e.node)) {
            Some(n) => Entry { node: n.clone(), index: e.index },
            None => e.clone(),
        }
    };
    for n in &topo {
        if n.is_var() {
            continue;
        }
        let node = match chains.get(&ptr(n)) {
            Some(c) => {
                let mut inputs: Vec<Entry> = c.conv.inputs.iter().map(|e| map(e, &new)).collect();
                let mut params = c.conv.params.clone();
                if let Some(b) = &c.bn {
                    inputs.extend(b.inputs[1..5].iter().map(|e| map(e, &new)));
                    params.set_extra("__bn", Value::Bool(true));
                    params.set_extra("__eps", Value::Float(b.params.float("eps")));
                    params.set_extra("__fix_gamma", Value::Bool(b.params.bool("fix_gamma")));
                }
                if let Some(r) = &c.residual {
                    inputs.push(map(r, &new));
                    params.set_extra("__residual", Value::Bool(true));
                }
                if let Some((lo, hi)) = c.act {
                    params.set_extra("__lo", Value::Float(lo));
                    params.set_extra("__hi", Value::Float(hi));
                }
                Node { op: Some(fused_op), name: c.conv.name.clone(), params, attrs: RwLock::new(BTreeMap::new()), inputs }
            }
            None => n.copy(n.inputs.iter().map(|e| map(e, &new)).collect()),
        };
        new.insert(ptr(n), Arc::new(node));
    }
    Some(Symbol { outputs: sym.outputs.iter().map(|e| map(e, &new)).collect() })
}
