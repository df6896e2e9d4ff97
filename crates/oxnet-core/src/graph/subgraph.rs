//! Subgraphs of control-flow nodes (`_foreach`, `_while_loop`, `_cond`; see
//! `op::control_flow` for their semantics and the design).
//!
//! [`GraphFunc`] is the graph layer's implementation of the registry's
//! [`Subgraph`] trait: a symbol whose inputs are its `list_inputs` in order, inferred
//! with [`super::infer`] and run as a [`CachedOp`] (one compiled graph per input
//! signature, recorded as one node while autograd records). This module also builds
//! control-flow nodes and cuts a subgraph out of the graph the user's function
//! built (MXNet's `MXSymbolCutSubgraph`): nodes marked with the subgraph's
//! `__subgraph_name__` attribute stay, and each edge from a node outside becomes a
//! new variable named after that output, the outside entries being returned as the
//! node's inputs.

use super::infer::infer;
use super::{CachedOp, Entry, Node, Symbol};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::op::control_flow::{subgraph_count, SubInfer, Subgraph, Subgraphs, SUBGRAPHS};
use crate::op::{OpDef, Value};
use crate::shape::Shape;
use parking_lot::RwLock;
use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

/// A symbol as a subgraph of a control-flow node.
pub struct GraphFunc {
    sym: Symbol,
    /// The variables in `list_inputs` order.
    vars: Vec<Arc<Node>>,
    cached: CachedOp,
    /// Per input of the cached op: its index in `vars`.
    order: Vec<usize>,
}

impl GraphFunc {
    pub fn new(sym: Symbol) -> Result<GraphFunc> {
        sym.check_unique_names()?;
        let vars: Vec<Arc<Node>> = sym.topo().into_iter().filter(|n| n.is_var()).collect();
        let cached = CachedOp::new(&sym)?;
        let pos: HashMap<&str, usize> = vars.iter().enumerate().map(|(i, n)| (n.name.as_str(), i)).collect();
        let order = cached.input_names().iter().map(|n| pos[n.as_str()]).collect();
        Ok(GraphFunc { sym, vars, cached, order })
    }
    pub fn symbol(&self) -> &Symbol {
        &self.sym
    }
}

impl Subgraph for GraphFunc {
    fn num_inputs(&self) -> usize {
        self.vars.len()
    }
    fn num_outputs(&self) -> usize {
        self.sym.outputs.len()
    }
    fn infer(&self, shapes: &[Option<Shape>], dtypes: &[Option<DType>], shapes_needed: bool) -> Result<SubInfer> {
        let mut sm = HashMap::new();
        let mut dm = HashMap::new();
        for (i, n) in self.vars.iter().enumerate() {
            if let Some(Some(s)) = shapes.get(i) {
                sm.insert(n.name.clone(), s.clone());
            }
            if let Some(Some(d)) = dtypes.get(i) {
                dm.insert(n.name.clone(), *d);
            }
        }
        let r = infer(&self.sym, &sm, &dm, shapes_needed)?;
        let full = |s: Option<&Shape>| s.filter(|s| !s.contains(&0)).cloned();
        Ok(SubInfer {
            in_shapes: self.vars.iter().map(|n| full(r.var(n).0)).collect(),
            in_dtypes: self.vars.iter().map(|n| r.var(n).1).collect(),
            out_shapes: self.sym.outputs.iter().map(|e| full(r.shape_of(e))).collect(),
            out_dtypes: self.sym.outputs.iter().map(|e| r.dtype_of(e)).collect(),
        })
    }
    fn run(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        if inputs.len() != self.vars.len() {
            return Err(Error::new(format!("the subgraph takes {} inputs, {} given", self.vars.len(), inputs.len())));
        }
        let ins: Vec<NDArray> = self.order.iter().map(|&i| inputs[i].clone()).collect();
        self.cached.forward(&ins)
    }
    fn output_names(&self) -> Vec<String> {
        self.sym.list_outputs()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The subgraph symbols a node holds (none for other nodes).
pub fn node_subgraphs(n: &Node) -> Vec<Symbol> {
    match n.params.get(SUBGRAPHS) {
        Value::Subgraphs(s) => s.0.iter().filter_map(|g| g.as_any().downcast_ref::<GraphFunc>().map(|f| f.sym.clone())).collect(),
        _ => vec![],
    }
}

fn ptr(n: &Arc<Node>) -> usize {
    Arc::as_ptr(n) as usize
}

impl Symbol {
    /// A control-flow node `name` of `op` holding `subgraphs`, applied to `inputs`.
    pub fn create_with_subgraphs(
        op: &'static OpDef,
        name: &str,
        attrs: Vec<(String, String)>,
        subgraphs: Vec<Symbol>,
        inputs: Vec<Symbol>,
    ) -> Result<Symbol> {
        let Some((want, _)) = subgraph_count(op.name) else {
            return Err(Error::op(op.name, "this operator takes no subgraphs"));
        };
        if subgraphs.len() != want {
            return Err(Error::op(op.name, format!("takes {want} subgraphs, {} given", subgraphs.len())));
        }
        let (mut params, map) = Self::parse_attrs(op, attrs)?;
        let funcs: Vec<Arc<dyn Subgraph>> =
            subgraphs.into_iter().map(|g| GraphFunc::new(g).map(|f| Arc::new(f) as Arc<dyn Subgraph>)).collect::<Result<_>>()?;
        params.set_extra(SUBGRAPHS, Value::Subgraphs(Subgraphs(Arc::new(funcs))));
        let n_in = op.num_inputs(&params);
        if inputs.len() != n_in {
            return Err(Error::op(op.name, format!("node {name} has {} inputs, but num_args gives {n_in}", inputs.len())));
        }
        let mut entries = Vec::with_capacity(inputs.len());
        for (i, s) in inputs.iter().enumerate() {
            if s.outputs.len() != 1 {
                return Err(Error::op(
                    op.name,
                    format!("input {i} of {name} is a group of {} outputs; it must be one output", s.outputs.len()),
                ));
            }
            entries.push(s.outputs[0].clone());
        }
        // Checks the locations and counts against the subgraphs now, not at bind.
        crate::op::control_flow::check_node(op.name, &params, entries.len())?;
        let node = Arc::new(Node { op: Some(op), name: name.to_string(), params, attrs: RwLock::new(map), inputs: entries });
        let n = node.num_visible();
        Ok(Symbol { outputs: (0..n).map(|i| Entry { node: node.clone(), index: i }).collect() })
    }

    /// A `_CachedOp` node named `name` that runs `graph` on `inputs`, which are
    /// given in the order `names` names the graph's variables (a hybridized block's
    /// call as `mx.autograd.get_symbol` shows it); the node's inputs follow the
    /// graph's `list_inputs` order.
    pub fn cached_op_node(name: &str, graph: Symbol, names: &[String], inputs: &[Entry]) -> Result<Arc<Node>> {
        let op = crate::op::lookup("_CachedOp")?;
        if names.len() != inputs.len() {
            return Err(Error::op(op.name, format!("{} inputs for {} names", inputs.len(), names.len())));
        }
        let by_name: HashMap<&str, &Entry> = names.iter().map(|n| n.as_str()).zip(inputs).collect();
        let mut entries = Vec::new();
        for v in graph.list_inputs() {
            let e =
                by_name.get(v.as_str()).ok_or_else(|| Error::op(op.name, format!("no input is given for the graph's variable '{v}'")))?;
            entries.push((*e).clone());
        }
        let (mut params, map) = Self::parse_attrs(op, vec![])?;
        let f: Arc<dyn Subgraph> = Arc::new(GraphFunc::new(graph)?);
        params.set_extra(SUBGRAPHS, Value::Subgraphs(Subgraphs(Arc::new(vec![f]))));
        crate::op::control_flow::check_node(op.name, &params, entries.len())?;
        Ok(Arc::new(Node { op: Some(op), name: name.to_string(), params, attrs: RwLock::new(map), inputs: entries }))
    }

    /// Cuts the subgraph marked by the `__subgraph_name__` of the first output's
    /// node: returns the subgraph, whose edges from unmarked nodes are now new
    /// variables named after those outputs, and the outside entries (one per
    /// distinct entry, in the order first met). Without the attribute, the symbol
    /// itself and no inputs.
    pub fn cut_subgraph(&self) -> Result<(Symbol, Vec<Symbol>)> {
        const KEY: &str = "__subgraph_name__";
        let Some(first) = self.outputs.first() else { return Ok((self.clone(), vec![])) };
        let Some(name) = first.node.attrs.read().get(KEY).cloned() else { return Ok((self.clone(), vec![])) };
        let inside = |n: &Node| n.attrs.read().get(KEY).map(|v| *v == name).unwrap_or(false);
        let mut cut: Vec<Entry> = Vec::new();
        let mut cut_vars: HashMap<(usize, usize), Entry> = HashMap::new();
        let mut map: HashMap<usize, Arc<Node>> = HashMap::new();
        let mut remap = |e: &Entry, map: &HashMap<usize, Arc<Node>>| -> Result<Entry> {
            if let Some(n) = map.get(&ptr(&e.node)) {
                return Ok(Entry { node: n.clone(), index: e.index });
            }
            let key = (ptr(&e.node), e.index);
            if let Some(v) = cut_vars.get(&key) {
                return Ok(v.clone());
            }
            let v = Symbol::var(&e.node.output_name(e.index), vec![])?.outputs[0].clone();
            cut.push(e.clone());
            cut_vars.insert(key, v.clone());
            Ok(v)
        };
        for n in self.topo() {
            if !inside(&n) {
                continue;
            }
            if n.is_var() {
                map.insert(ptr(&n), n.clone());
                continue;
            }
            let mut ins = Vec::with_capacity(n.inputs.len());
            for e in &n.inputs {
                ins.push(remap(e, &map)?);
            }
            map.insert(ptr(&n), Arc::new(n.copy(ins)));
        }
        let mut outs = Vec::with_capacity(self.outputs.len());
        for e in &self.outputs {
            outs.push(remap(e, &map)?);
        }
        let inputs = cut.into_iter().map(|e| Symbol { outputs: vec![e] }).collect();
        Ok((Symbol { outputs: outs }, inputs))
    }

    /// The variables, one symbol each, in `list_inputs` order.
    pub fn input_vars(&self) -> Vec<Symbol> {
        self.topo().into_iter().filter(|n| n.is_var()).map(|n| Symbol { outputs: vec![Entry { node: n, index: 0 }] }).collect()
    }

    /// The output index of each output entry (MXNet's `_value_index` attribute).
    pub fn value_indices(&self) -> Vec<usize> {
        self.outputs.iter().map(|e| e.index).collect()
    }
}

/// Puts `subgraphs` (read from JSON) into the parameters of node `name`.
pub(super) fn attach(op: &'static OpDef, name: &str, params: &mut crate::op::Params, subgraphs: Vec<Symbol>) -> Result<()> {
    let Some((want, _)) = subgraph_count(op.name) else {
        return Err(Error::new(format!("cannot load node '{name}': operator {} takes no subgraphs", op.name)));
    };
    if subgraphs.len() != want {
        return Err(Error::op(op.name, format!("node '{name}' has {} subgraphs in the JSON, the operator takes {want}", subgraphs.len())));
    }
    let funcs: Vec<Arc<dyn Subgraph>> =
        subgraphs.into_iter().map(|g| GraphFunc::new(g).map(|f| Arc::new(f) as Arc<dyn Subgraph>)).collect::<Result<_>>()?;
    params.set_extra(SUBGRAPHS, Value::Subgraphs(Subgraphs(Arc::new(funcs))));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Executor, GradReq};
    use crate::op::lookup;
    use crate::Context;

    fn var(n: &str, attrs: Vec<(String, String)>) -> Symbol {
        Symbol::var(n, attrs).unwrap()
    }

    fn op(name: &str, node: &str, attrs: Vec<(String, String)>, ins: Vec<(&str, Symbol)>) -> Symbol {
        Symbol::create(lookup(name).unwrap(), node, attrs, ins.into_iter().map(|(k, s)| (k.to_string(), Some(s))).collect()).unwrap()
    }

    /// A foreach body `out = x * s + w; s' = out`, where `w * 2` is made outside.
    fn foreach_graph() -> Symbol {
        let mark = || vec![("__subgraph_name__".to_string(), "foreach0".to_string())];
        let (data, state, w) = (var("data", vec![]), var("state", vec![]), var("w", vec![]));
        let w2 = op("_mul_scalar", "w2", vec![("scalar".into(), "2".into())], vec![("data", w)]);
        let (x, s) = (var("data-0", mark()), var("state-0", mark()));
        let m = op("elemwise_mul", "m", mark(), vec![("lhs", x), ("rhs", s)]);
        let out = op("elemwise_add", "out", mark(), vec![("lhs", m), ("rhs", w2)]);
        let again = op("identity", "again", mark(), vec![("data", out.clone())]);
        let (body, cut) = Symbol::group(&[out, again]).cut_subgraph().unwrap();
        assert_eq!(body.list_inputs(), vec!["data-0", "state-0", "w2_output"]);
        assert_eq!(cut.len(), 1);
        assert_eq!(cut[0].outputs[0].node.name, "w2");
        let attrs: Vec<(String, String)> = [
            ("num_args", "4"),
            ("num_outputs", "2"),
            ("num_out_data", "1"),
            ("in_data_locs", "[0]"),
            ("in_state_locs", "[1]"),
            ("remain_locs", "[2]"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        Symbol::create_with_subgraphs(lookup("_foreach").unwrap(), "_foreach0", attrs, vec![body], vec![data, state, cut[0].clone()])
            .unwrap()
    }

    #[test]
    fn foreach_runs_round_trips_and_differentiates() {
        let g = foreach_graph();
        assert_eq!(g.list_arguments(), vec!["data", "state", "w"]);
        let text = g.to_json();
        assert!(text.contains("\"subgraphs\""));
        let again = Symbol::from_json(&text).unwrap();
        assert_eq!(again.to_json(), text);
        let ctx = Context::default();
        let arr = |s: &[usize], v: &[f32]| NDArray::from_vec(s, v, ctx).unwrap();
        let args = vec![arr(&[3, 2], &[1., 2., 3., 4., 5., 6.]), arr(&[2], &[1., 1.]), arr(&[2], &[0.5, -0.5])];
        let grads: Vec<Option<NDArray>> = (0..3).map(|i| Some(arr(args[i].shape(), &vec![0.; args[i].size()]))).collect();
        let mut ex = Executor::bind(&again, ctx, args, grads.clone(), vec![GradReq::Write; 3], vec![]).unwrap();
        ex.forward(true).unwrap();
        // s0 = 1; out_t = x_t * s + 2w; s = out_t
        let (x, w) = ([[1f32, 2.], [3., 4.], [5., 6.]], [1f32, -1.]);
        let mut s = [1f32, 1.];
        let mut rows = Vec::new();
        for xt in x {
            let o = [xt[0] * s[0] + w[0], xt[1] * s[1] + w[1]];
            rows.extend_from_slice(&o);
            s = o;
        }
        assert_eq!(ex.outputs[0].to_vec::<f32>().unwrap(), rows);
        assert_eq!(ex.outputs[1].to_vec::<f32>().unwrap(), s.to_vec());
        ex.backward(&[]).unwrap();
        // d(sum of the outputs)/dw is the sum over the steps of the chain through s
        let gw = grads[2].as_ref().unwrap().to_vec::<f32>().unwrap();
        let mut want = [0f32; 2];
        for k in 0..2 {
            // outputs: o_t (t = 0..2) and s = o_2; d o_t / d w = 2 * (1 + x_t * d o_{t-1} / d w)
            let mut d = 0f32;
            let mut total = 0f32;
            for xt in x {
                d = 2.0 + xt[k] * d;
                total += d;
            }
            want[k] = total + d;
        }
        for (a, b) in gw.iter().zip(want) {
            assert!((a - b).abs() < 1e-4, "{gw:?} {want:?}");
        }
    }

    #[test]
    fn bad_locations_are_errors_naming_the_op() {
        let text = foreach_graph().to_json().replace("\"remain_locs\": \"[2]\"", "\"remain_locs\": \"[9]\"");
        let e = Symbol::from_json(&text).err().unwrap();
        assert!(e.message().contains("_foreach"), "{}", e.message());
        let e = Symbol::create(lookup("_foreach").unwrap(), "f", vec![("num_args".into(), "2".into())], vec![]).err().unwrap();
        assert!(e.message().contains("_foreach") && e.message().contains("mx.sym.contrib.foreach"), "{}", e.message());
    }
}
