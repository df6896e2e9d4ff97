//! Symbols: graphs of registry ops, as in MXNet 1.x's `mx.sym`.
//!
//! A [`Symbol`] is a list of output entries; each entry points at a [`Node`] (a
//! variable, or a registry op with parsed parameters and string attributes) and one
//! of its outputs. Nodes are shared and immutable except for their attributes, so
//! composing symbols is cheap. This module owns the graph structure, names, the
//! argument/auxiliary lists and composition; [`json`] reads and writes MXNet 1.9.1's
//! JSON, [`infer`] runs shape and dtype inference, [`exec`] binds a graph to arrays
//! and runs it through the engine, [`storage`] infers storage types and runs graphs
//! on sparse storage, [`subgraph`] gives control-flow nodes
//! (`_foreach`, `_while_loop`, `_cond`) their subgraphs. It must not know about Python.

pub mod cached;
pub mod cse;
pub mod exec;
pub mod fuse;
pub mod infer;
pub mod json;
pub mod partial;
mod serial;
pub mod storage;
pub mod subgraph;

use crate::error::{Error, Result};
use crate::op::{OpDef, Params, Value};
use parking_lot::RwLock;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

pub use cached::CachedOp;
pub use exec::{Executor, GradReq};
pub use infer::Inferred;

/// Attribute names MXNet stores hidden (as `__name__`) and lists under both names.
pub const HIDDEN_KEYS: &[&str] = &["ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage", "profiler_scope"];

/// One node: a variable (`op` None) or an op call.
pub struct Node {
    pub op: Option<&'static OpDef>,
    pub name: String,
    pub params: Params,
    /// Every attribute as a string: the op parameters the user gave, and the
    /// `__hidden__` ones (`__shape__`, `__lr_mult__`, `__init__`, ...).
    pub attrs: RwLock<BTreeMap<String, String>>,
    pub inputs: Vec<Entry>,
}

impl Node {
    pub fn is_var(&self) -> bool {
        self.op.is_none()
    }
    /// Outputs the op produces (visible or not) before shapes are known.
    pub fn num_outputs(&self) -> usize {
        match self.op {
            None => 1,
            Some(op) => {
                let n = op.num_outputs(&self.params);
                match op.visible {
                    Some(f) => n.max(f(&self.params)),
                    None => n,
                }
            }
        }
    }
    /// Outputs the user sees.
    pub fn num_visible(&self) -> usize {
        match self.op {
            None => 1,
            Some(op) => op.num_visible(&self.params, self.num_outputs()),
        }
    }
    /// The name of output `i` as `list_outputs` shows it: `{node}_{name}` with the
    /// op's output names, else `{node}_output` for an op with one output and
    /// `{node}_output{i}` for several (hidden ones counted, as in MXNet). A node
    /// without a name (an atomic symbol) gives the bare suffix.
    pub fn output_name(&self, i: usize) -> String {
        if self.is_var() {
            return self.name.clone();
        }
        let suffix = if let Some(n) = self.op.and_then(|o| o.output_names).and_then(|f| f(&self.params).get(i).cloned()) {
            n
        } else if self.num_outputs() == 1 {
            "output".to_string()
        } else {
            format!("output{i}")
        };
        if self.name.is_empty() {
            suffix
        } else {
            format!("{}_{suffix}", self.name)
        }
    }
    /// An op node not yet given its inputs (MXNet's atomic symbol, see
    /// [`Symbol::gen_atomic_symbol`]).
    pub fn is_atomic(&self) -> bool {
        self.op.map(|op| self.inputs.is_empty() && op.num_inputs(&self.params) > 0).unwrap_or(false)
    }
    /// The names of this op's inputs (`data`, `weight`, ... or `arg0`, ...).
    pub fn input_names(&self) -> Vec<String> {
        self.op.map(|op| op.input_names(&self.params)).unwrap_or_default()
    }
    fn copy(&self, inputs: Vec<Entry>) -> Node {
        Node { op: self.op, name: self.name.clone(), params: self.params.clone(), attrs: RwLock::new(self.attrs.read().clone()), inputs }
    }
}

/// One output of one node.
#[derive(Clone)]
pub struct Entry {
    pub node: Arc<Node>,
    pub index: usize,
}

/// A symbol: one or more output entries of a graph.
#[derive(Clone)]
pub struct Symbol {
    pub outputs: Vec<Entry>,
}

fn ptr(n: &Arc<Node>) -> usize {
    Arc::as_ptr(n) as usize
}

/// Stores `key=value` the way MXNet does: hidden keys get double underscores.
pub fn attr_key(key: &str) -> String {
    if HIDDEN_KEYS.contains(&key) {
        format!("__{key}__")
    } else {
        key.to_string()
    }
}

fn is_dunder(k: &str) -> bool {
    k.len() > 4 && k.starts_with("__") && k.ends_with("__")
}

impl Symbol {
    /// A variable named `name` with these attributes (already in stored form).
    pub fn var(name: &str, attrs: Vec<(String, String)>) -> Result<Symbol> {
        if name.is_empty() {
            return Err(Error::new("Variable: the name must not be empty"));
        }
        let mut map = BTreeMap::new();
        for (k, v) in attrs {
            map.insert(attr_key(&k), v);
        }
        let node = Node { op: None, name: name.to_string(), params: Params::default(), attrs: RwLock::new(map), inputs: vec![] };
        Ok(Symbol { outputs: vec![Entry { node: Arc::new(node), index: 0 }] })
    }

    /// Parses an op's string attributes: parameters go to `Params`, hidden keys are
    /// stored with double underscores, anything else is an error naming the op.
    fn parse_attrs(op: &'static OpDef, attrs: Vec<(String, String)>) -> Result<(Params, BTreeMap<String, String>)> {
        let mut map = BTreeMap::new();
        let mut given = Vec::new();
        for (k, v) in attrs {
            let key = attr_key(&k);
            if !is_dunder(&key) {
                given.push((key.clone(), Value::Str(v.clone())));
            }
            map.insert(key, v);
        }
        Ok((op.parse(given)?, map))
    }

    /// An op node named `name` applied to `inputs`. For fixed and dynamic arities
    /// `inputs` pairs input names with symbols (None: create the variable
    /// `{name}_{input}`); for variadic ops the names are ignored.
    pub fn create(op: &'static OpDef, name: &str, attrs: Vec<(String, String)>, inputs: Vec<(String, Option<Symbol>)>) -> Result<Symbol> {
        if let Some((_, builder)) = crate::op::control_flow::subgraph_count(op.name) {
            return Err(Error::op(op.name, format!("the operator holds subgraphs; build it with {builder}")));
        }
        let (params, map) = Self::parse_attrs(op, attrs)?;
        let names = op.input_names(&params);
        let mut entries = Vec::with_capacity(names.len());
        let one = |s: &Symbol, what: &str| -> Result<Entry> {
            if s.outputs.len() != 1 {
                return Err(Error::op(
                    op.name,
                    format!("input '{what}' of {name} is a group of {} outputs; it must be a single output", s.outputs.len()),
                ));
            }
            Ok(s.outputs[0].clone())
        };
        if matches!(op.inputs, crate::op::Arity::Variadic { .. }) {
            if inputs.len() != names.len() {
                return Err(Error::op(op.name, format!("expects {} inputs (num_args), got {}", names.len(), inputs.len())));
            }
            for (i, (_, s)) in inputs.iter().enumerate() {
                let s = s.as_ref().ok_or_else(|| Error::op(op.name, format!("input {i} is missing")))?;
                entries.push(one(s, &format!("arg{i}"))?);
            }
        } else {
            let mut given: HashMap<&str, &Symbol> = HashMap::new();
            for (k, s) in &inputs {
                if let Some(s) = s {
                    if !names.iter().any(|n| n == k) {
                        return Err(Error::op(
                            op.name,
                            format!("input '{k}' is not used with these parameters; inputs are: {}", names.join(", ")),
                        ));
                    }
                    given.insert(k.as_str(), s);
                }
            }
            for n in &names {
                match given.get(n.as_str()) {
                    Some(s) => entries.push(one(s, n)?),
                    None => {
                        let vname = if name.is_empty() { n.clone() } else { format!("{name}_{n}") };
                        let v = Symbol::var(&vname, map.iter().map(|(k, v)| (k.clone(), v.clone())).collect())?;
                        entries.push(v.outputs[0].clone());
                    }
                }
            }
        }
        let node = Arc::new(Node { op: Some(op), name: name.to_string(), params, attrs: RwLock::new(map), inputs: entries });
        let n = node.num_visible();
        Ok(Symbol { outputs: (0..n).map(|i| Entry { node: node.clone(), index: i }).collect() })
    }

    /// A symbol of one node with the op and attributes of this symbol's node and no
    /// inputs, named '' (MXNet's `_gen_atomic_symbol`); calling it with inputs
    /// ([`Symbol::compose_named`]) builds a new node. Its outputs are the visible
    /// outputs of the op. Every output of this symbol must come from that node.
    pub fn gen_atomic_symbol(&self) -> Result<Symbol> {
        let Some(n) = self.outputs.first().map(|e| &e.node) else {
            return Err(Error::new("cannot generate an atomic symbol from a symbol without outputs"));
        };
        if self.outputs.iter().any(|e| !Arc::ptr_eq(&e.node, n)) {
            return Err(Error::new("Generating atomic symbol from other symbol only works for nongrouped symbol."));
        }
        if n.is_var() {
            return Err(Error::new(format!("cannot generate an atomic symbol from variable '{}': it has no operator", n.name)));
        }
        let node = Arc::new(Node {
            op: n.op,
            name: String::new(),
            params: n.params.clone(),
            attrs: RwLock::new(n.attrs.read().clone()),
            inputs: vec![],
        });
        let k = node.num_visible();
        Ok(Symbol { outputs: (0..k).map(|i| Entry { node: node.clone(), index: i }).collect() })
    }

    /// The atomic node of this symbol, when it is one (every output from one op node
    /// that has no inputs yet).
    fn atomic_node(&self) -> Option<&Arc<Node>> {
        let first = &self.outputs.first()?.node;
        (first.is_atomic() && self.outputs.iter().all(|e| Arc::ptr_eq(&e.node, first))).then_some(first)
    }

    /// Several symbols' outputs as one symbol.
    pub fn group(syms: &[Symbol]) -> Symbol {
        Symbol { outputs: syms.iter().flat_map(|s| s.outputs.iter().cloned()).collect() }
    }

    /// Every node reachable from the outputs, inputs before users (MXNet's order).
    pub fn topo(&self) -> Vec<Arc<Node>> {
        let mut order = Vec::new();
        let mut seen: HashSet<usize> = HashSet::new();
        for head in &self.outputs {
            if !seen.insert(ptr(&head.node)) {
                continue;
            }
            // Iterative post-order DFS.
            let mut stack: Vec<(Arc<Node>, usize)> = vec![(head.node.clone(), 0)];
            while let Some((n, i)) = stack.pop() {
                if i < n.inputs.len() {
                    let child = n.inputs[i].node.clone();
                    stack.push((n, i + 1));
                    if seen.insert(ptr(&child)) {
                        stack.push((child, 0));
                    }
                } else {
                    order.push(n);
                }
            }
        }
        order
    }

    /// Variables written by some op (MXNet's auxiliary states).
    fn aux_set(topo: &[Arc<Node>]) -> HashSet<usize> {
        let mut aux = HashSet::new();
        for n in topo {
            if let Some(op) = n.op {
                for m in op.mutated(&n.params) {
                    if let Some(e) = n.inputs.get(m) {
                        if e.node.is_var() {
                            aux.insert(ptr(&e.node));
                        }
                    }
                }
            }
        }
        aux
    }

    /// Variable nodes: (arguments, auxiliary states), in graph order.
    pub fn var_nodes(&self) -> (Vec<Arc<Node>>, Vec<Arc<Node>>) {
        let topo = self.topo();
        let aux = Self::aux_set(&topo);
        let (mut a, mut x) = (Vec::new(), Vec::new());
        for n in topo.into_iter().filter(|n| n.is_var()) {
            if aux.contains(&ptr(&n)) {
                x.push(n)
            } else {
                a.push(n)
            }
        }
        (a, x)
    }

    pub fn list_arguments(&self) -> Vec<String> {
        self.var_nodes().0.iter().map(|n| n.name.clone()).collect()
    }
    pub fn list_auxiliary_states(&self) -> Vec<String> {
        self.var_nodes().1.iter().map(|n| n.name.clone()).collect()
    }
    pub fn list_inputs(&self) -> Vec<String> {
        self.topo().iter().filter(|n| n.is_var()).map(|n| n.name.clone()).collect()
    }
    pub fn list_outputs(&self) -> Vec<String> {
        self.outputs.iter().map(|e| e.node.output_name(e.index)).collect()
    }

    /// Errors when two different variables share a name (they could not be bound).
    pub fn check_unique_names(&self) -> Result<()> {
        let mut seen: HashMap<String, usize> = HashMap::new();
        for n in self.topo().iter().filter(|n| n.is_var()) {
            if let Some(p) = seen.insert(n.name.clone(), ptr(n)) {
                if p != ptr(n) {
                    return Err(Error::new(format!(
                        "the symbol has two different variables named '{}'; argument names must be unique",
                        n.name
                    )));
                }
            }
        }
        Ok(())
    }

    /// The single-output name (`None` for groups).
    pub fn name(&self) -> Option<String> {
        if self.outputs.len() == 1 {
            Some(self.outputs[0].node.name.clone())
        } else {
            None
        }
    }

    /// Every output of every node, as one symbol.
    pub fn get_internals(&self) -> Symbol {
        let mut outs = Vec::new();
        for n in self.topo() {
            for i in 0..n.num_visible() {
                outs.push(Entry { node: n.clone(), index: i });
            }
        }
        Symbol { outputs: outs }
    }

    /// The inputs of the output nodes, or None for variables.
    pub fn get_children(&self) -> Option<Symbol> {
        let outs: Vec<Entry> = self.outputs.iter().flat_map(|e| e.node.inputs.iter().cloned()).collect();
        if outs.is_empty() {
            None
        } else {
            Some(Symbol { outputs: outs })
        }
    }

    /// Output `i` as a symbol.
    pub fn output(&self, i: usize) -> Result<Symbol> {
        self.outputs
            .get(i)
            .map(|e| Symbol { outputs: vec![e.clone()] })
            .ok_or_else(|| Error::new(format!("index {i} is out of range for a symbol with {} outputs", self.outputs.len())))
    }

    /// The attribute `key` of the (single) output node.
    pub fn attr(&self, key: &str) -> Option<String> {
        if self.outputs.len() != 1 {
            return None;
        }
        self.outputs[0].node.attrs.read().get(&attr_key(key)).cloned()
    }

    /// A node's attributes as `list_attr` shows them: hidden keys both ways.
    pub fn node_attrs(n: &Node) -> Vec<(String, String)> {
        let mut v = Vec::new();
        for (k, val) in n.attrs.read().iter() {
            v.push((k.clone(), val.clone()));
            if is_dunder(k) {
                let bare = &k[2..k.len() - 2];
                if HIDDEN_KEYS.contains(&bare) {
                    v.push((bare.to_string(), val.clone()));
                }
            }
        }
        v
    }

    pub fn list_attr(&self) -> Vec<(String, String)> {
        if self.outputs.len() != 1 {
            return vec![];
        }
        Self::node_attrs(&self.outputs[0].node)
    }

    /// Attributes of every node that has some, by node name.
    pub fn attr_dict(&self) -> Vec<(String, Vec<(String, String)>)> {
        self.topo()
            .iter()
            .filter_map(|n| {
                let a = Self::node_attrs(n);
                (!a.is_empty()).then(|| (n.name.clone(), a))
            })
            .collect()
    }

    /// Sets attributes on the output nodes (op parameters cannot be changed).
    pub fn set_attr(&self, attrs: &[(String, String)]) -> Result<()> {
        for e in &self.outputs {
            if let Some(op) = e.node.op {
                for (k, _) in attrs {
                    if op.params.iter().any(|p| p.name == k) {
                        return Err(Error::op(op.name, format!("cannot change parameter '{k}' of {} with set_attr", e.node.name)));
                    }
                }
            }
        }
        for e in &self.outputs {
            let mut a = e.node.attrs.write();
            for (k, v) in attrs {
                a.insert(attr_key(k), v.clone());
            }
        }
        Ok(())
    }

    /// A copy of the graph with variables replaced: `positional` in
    /// `list_arguments` order, `named` by variable name.
    pub fn compose(&self, positional: &[Symbol], named: &[(String, Symbol)]) -> Result<Symbol> {
        self.compose_named(positional, named, None)
    }

    /// [`Symbol::compose`]; an atomic symbol ([`Symbol::gen_atomic_symbol`]) instead
    /// becomes a node named `name` (else keeping its name) whose inputs are
    /// `positional` in order, then `named` by input name; inputs not given are new
    /// variables `{name}_{input}`, as [`Symbol::create`] makes them.
    pub fn compose_named(&self, positional: &[Symbol], named: &[(String, Symbol)], name: Option<&str>) -> Result<Symbol> {
        if let Some(n) = self.atomic_node() {
            let op = n.op.ok_or_else(|| Error::new("compose: the atomic symbol has no operator"))?;
            let name = name.map(|s| s.to_string()).unwrap_or_else(|| n.name.clone());
            let names = op.input_names(&n.params);
            if positional.len() > names.len() {
                return Err(Error::op(op.name, format!("{} inputs given, the operator takes {}", positional.len(), names.len())));
            }
            let mut inputs: Vec<(String, Option<Symbol>)> = names.iter().map(|k| (k.clone(), None)).collect();
            for (slot, s) in inputs.iter_mut().zip(positional) {
                slot.1 = Some(s.clone());
            }
            for (k, s) in named {
                let slot = inputs.iter_mut().find(|(n, _)| n == k).ok_or_else(|| {
                    Error::op(op.name, format!("input '{k}' is not an input of the operator; its inputs are: {}", names.join(", ")))
                })?;
                if slot.1.is_some() {
                    return Err(Error::op(op.name, format!("input '{k}' is given twice")));
                }
                slot.1 = Some(s.clone());
            }
            let attrs: Vec<(String, String)> = n.attrs.read().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            return Symbol::create(op, &name, attrs, inputs);
        }
        let (args, _) = self.var_nodes();
        if positional.len() > args.len() {
            return Err(Error::new(format!(
                "compose: {} positional arguments given but the symbol has only {} arguments",
                positional.len(),
                args.len()
            )));
        }
        let single = |s: &Symbol, what: &str| -> Result<Entry> {
            if s.outputs.len() != 1 {
                return Err(Error::new(format!(
                    "compose: the symbol given for '{what}' has {} outputs; it must have one",
                    s.outputs.len()
                )));
            }
            Ok(s.outputs[0].clone())
        };
        let mut repl: HashMap<usize, Entry> = HashMap::new();
        for (a, s) in args.iter().zip(positional) {
            repl.insert(ptr(a), single(s, &a.name)?);
        }
        let topo = self.topo();
        for (k, s) in named {
            let vars: Vec<&Arc<Node>> = topo.iter().filter(|n| n.is_var() && &n.name == k).collect();
            if vars.is_empty() {
                return Err(Error::new(format!(
                    "compose: the symbol has no argument named '{k}'; its arguments are: {}",
                    self.list_inputs().join(", ")
                )));
            }
            for v in vars {
                repl.insert(ptr(v), single(s, k)?);
            }
        }
        let mut map: HashMap<usize, Arc<Node>> = HashMap::new();
        let remap = |e: &Entry, map: &HashMap<usize, Arc<Node>>, repl: &HashMap<usize, Entry>| -> Entry {
            if let Some(r) = repl.get(&ptr(&e.node)) {
                return r.clone();
            }
            Entry { node: map[&ptr(&e.node)].clone(), index: e.index }
        };
        for n in &topo {
            if repl.contains_key(&ptr(n)) {
                continue;
            }
            let inputs = n.inputs.iter().map(|e| remap(e, &map, &repl)).collect();
            map.insert(ptr(n), Arc::new(n.copy(inputs)));
        }
        Ok(Symbol { outputs: self.outputs.iter().map(|e| remap(e, &map, &repl)).collect() })
    }

    /// The entry for output name `name` (as `list_outputs` spells it).
    pub fn find_output(&self, name: &str) -> Result<usize> {
        let outs = self.list_outputs();
        let hits: Vec<usize> = outs.iter().enumerate().filter(|(_, o)| *o == name).map(|(i, _)| i).collect();
        match hits.len() {
            1 => Ok(hits[0]),
            0 => Err(Error::new(format!("cannot find output that matches name '{name}'"))),
            _ => Err(Error::new(format!("there are multiple outputs with name '{name}'"))),
        }
    }

    pub fn to_json(&self) -> String {
        serial::to_json(self)
    }
    pub fn from_json(text: &str) -> Result<Symbol> {
        serial::from_json(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::lookup;

    fn v(n: &str) -> Symbol {
        Symbol::var(n, vec![]).unwrap()
    }

    #[test]
    fn build_and_list() {
        let a = v("a");
        let b = v("b");
        let s = Symbol::create(
            lookup("elemwise_add").unwrap(),
            "_plus0",
            vec![],
            vec![("lhs".into(), Some(a.clone())), ("rhs".into(), Some(b))],
        )
        .unwrap();
        let e = Symbol::create(lookup("exp").unwrap(), "exp0", vec![], vec![("data".into(), Some(s.clone()))]).unwrap();
        assert_eq!(e.list_arguments(), vec!["a", "b"]);
        assert_eq!(e.list_outputs(), vec!["exp0_output"]);
        assert_eq!(e.get_internals().list_outputs(), vec!["a", "b", "_plus0_output", "exp0_output"]);
        assert_eq!(e.get_children().unwrap().list_outputs(), vec!["_plus0_output"]);
        let c = e.compose(&[], &[("a".into(), v("z"))]).unwrap();
        assert_eq!(c.list_arguments(), vec!["z", "b"]);
        assert_eq!(e.list_arguments(), vec!["a", "b"]);
        assert!(e.compose(&[], &[("nope".into(), v("z"))]).is_err());
        let sp =
            Symbol::create(lookup("split").unwrap(), "split0", vec![("num_outputs".into(), "3".into())], vec![("data".into(), Some(a))])
                .unwrap();
        assert_eq!(sp.list_outputs(), vec!["split0_output0", "split0_output1", "split0_output2"]);
        // As in MXNet 1.9.1: an op without parameters ignores unknown attributes, an
        // op with parameters rejects them by name.
        assert!(Symbol::create(lookup("exp").unwrap(), "x", vec![("foo".into(), "1".into())], vec![]).is_ok());
        let err =
            Symbol::create(lookup("split").unwrap(), "y", vec![("num_outputs".into(), "2".into()), ("foo".into(), "1".into())], vec![])
                .err()
                .unwrap();
        assert!(err.message().contains("foo"));
    }

    #[test]
    fn atomic_symbols_compose_into_nodes() {
        let fc = Symbol::create(
            lookup("FullyConnected").unwrap(),
            "fc",
            vec![("num_hidden".into(), "3".into())],
            vec![("data".into(), Some(v("x")))],
        )
        .unwrap();
        let a = fc.gen_atomic_symbol().unwrap();
        assert_eq!(a.list_outputs(), vec!["output"]);
        assert!(a.list_arguments().is_empty());
        let c = a.compose_named(&[v("d")], &[], Some("f2")).unwrap();
        assert_eq!(c.list_arguments(), vec!["d", "f2_weight", "f2_bias"]);
        assert_eq!(c.list_outputs(), vec!["f2_output"]);
        let c = a.compose_named(&[], &[("weight".into(), v("w"))], None).unwrap();
        assert_eq!(c.list_arguments(), vec!["data", "w", "bias"]);
        assert!(a.compose_named(&[], &[("nope".into(), v("w"))], None).is_err());
        // every output from one node is fine (a multi-output op); two nodes are not
        assert_eq!(Symbol::group(&[fc.clone(), fc.clone()]).gen_atomic_symbol().unwrap().list_outputs(), vec!["output"]);
        assert!(Symbol::group(&[fc, v("x")]).gen_atomic_symbol().is_err());
        assert!(v("x").gen_atomic_symbol().is_err());
        let e = super::infer::infer(&a, &HashMap::new(), &HashMap::new(), true).err().unwrap();
        assert!(e.message().contains("no inputs yet"), "{}", e.message());
    }

    #[test]
    fn auto_variables_copy_attrs() {
        let s = Symbol::create(lookup("exp").unwrap(), "e", vec![("__mood__".into(), "x".into())], vec![("data".into(), None)]).unwrap();
        assert_eq!(s.list_arguments(), vec!["e_data"]);
        let internals = s.get_internals();
        assert_eq!(internals.output(0).unwrap().attr("__mood__").as_deref(), Some("x"));
    }
}
