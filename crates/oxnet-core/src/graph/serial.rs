//! Symbol ⇄ MXNet 1.9.1 JSON (`nodes`, `arg_nodes`, `node_row_ptr`, `heads`,
//! `attrs.mxnet_version`). Reading also accepts older files whose nodes keep
//! their attributes under `attr` or `param` and whose entries have two fields.

use super::json::{self, Json, Writer};
use super::{Entry, Node, Symbol};
use crate::error::{Error, Result};
use crate::op::{lookup, Params};
use parking_lot::RwLock;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// MXNet 1.9.1's version number as it appears in JSON.
pub const MXNET_VERSION: usize = 10901;

pub fn to_json(sym: &Symbol) -> String {
    let mut w = Writer::new();
    write_graph(&mut w, sym);
    w.out
}

/// One graph object; a control-flow node's subgraphs are graph objects in its
/// `subgraphs` array, after its inputs (as nnvm writes them).
fn write_graph(w: &mut Writer, sym: &Symbol) {
    let topo = sym.topo();
    let index: HashMap<usize, usize> = topo.iter().enumerate().map(|(i, n)| (Arc::as_ptr(n) as usize, i)).collect();
    let id = |n: &Arc<Node>| index[&(Arc::as_ptr(n) as usize)];
    w.begin_obj(true);
    w.key("nodes");
    w.begin_arr(true);
    for n in &topo {
        w.item();
        w.begin_obj(true);
        w.key("op");
        w.raw(&json::quote(n.op.map(|o| o.name).unwrap_or("null")));
        w.key("name");
        w.raw(&json::quote(&n.name));
        let attrs: Vec<(String, String)> = n.attrs.read().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        if !attrs.is_empty() {
            w.key("attrs");
            w.str_map(&attrs);
        }
        w.key("inputs");
        w.begin_arr(false);
        let mutate = n.op.map(|o| o.mutated(&n.params)).unwrap_or_default();
        for (i, e) in n.inputs.iter().enumerate() {
            w.item();
            let ver = usize::from(mutate.contains(&i) && e.node.is_var());
            w.int_arr(&[id(&e.node), e.index, ver]);
        }
        w.end_arr();
        let subgraphs = super::subgraph::node_subgraphs(n);
        if !subgraphs.is_empty() {
            w.key("subgraphs");
            w.begin_arr(true);
            for g in &subgraphs {
                w.item();
                write_graph(w, g);
            }
            w.end_arr();
        }
        w.end_obj();
    }
    w.end_arr();
    w.key("arg_nodes");
    let args: Vec<usize> = topo.iter().enumerate().filter(|(_, n)| n.is_var()).map(|(i, _)| i).collect();
    w.int_arr(&args);
    w.key("node_row_ptr");
    let mut rows = vec![0usize];
    for n in &topo {
        rows.push(rows.last().unwrap() + n.num_outputs());
    }
    w.int_arr(&rows);
    w.key("heads");
    w.begin_arr(false);
    for e in &sym.outputs {
        w.item();
        w.int_arr(&[id(&e.node), e.index, 0]);
    }
    w.end_arr();
    w.key("attrs");
    w.begin_obj(false);
    w.key("mxnet_version");
    w.raw(&format!("[\"int\", {MXNET_VERSION}]"));
    w.end_obj();
    w.end_obj();
}

fn bad(msg: impl std::fmt::Display) -> Error {
    Error::new(format!("malformed symbol JSON: {msg}"))
}

fn str_attrs(v: Option<&Json>, node: &str) -> Result<Vec<(String, String)>> {
    let Some(v) = v else { return Ok(vec![]) };
    match v {
        Json::Obj(kv) => kv
            .iter()
            .map(|(k, v)| match v {
                Json::Str(s) => Ok((k.clone(), s.clone())),
                Json::Num(n) => Ok((k.clone(), n.to_string())),
                Json::Bool(b) => Ok((k.clone(), b.to_string())),
                _ => Err(bad(format!("attribute '{k}' of node '{node}' is not a string"))),
            })
            .collect(),
        Json::Null => Ok(vec![]),
        _ => Err(bad(format!("the attributes of node '{node}' are not an object"))),
    }
}

fn entry_of(v: &Json, nodes: &[Arc<Node>], what: &str) -> Result<Entry> {
    let a = v.as_arr().ok_or_else(|| bad(format!("{what}: an entry must be an array [node, index, version]")))?;
    if a.len() < 2 || a.len() > 3 {
        return Err(bad(format!("{what}: an entry must have 2 or 3 fields, got {}", a.len())));
    }
    let nid = a[0].as_usize().ok_or_else(|| bad(format!("{what}: node id is not a non-negative integer")))?;
    let idx = a[1].as_usize().ok_or_else(|| bad(format!("{what}: output index is not a non-negative integer")))?;
    let node = nodes.get(nid).ok_or_else(|| bad(format!("{what}: refers to node {nid}, which is not defined before it")))?;
    if idx >= node.num_outputs() {
        return Err(bad(format!("{what}: node '{}' has {} output(s), no output {idx}", node.name, node.num_outputs())));
    }
    Ok(Entry { node: node.clone(), index: idx })
}

pub fn from_json(text: &str) -> Result<Symbol> {
    from_doc(&json::parse(text)?)
}

fn from_doc(doc: &Json) -> Result<Symbol> {
    let jnodes = doc.get("nodes").and_then(|n| n.as_arr()).ok_or_else(|| bad("no 'nodes' array"))?;
    let mut nodes: Vec<Arc<Node>> = Vec::with_capacity(jnodes.len());
    for (i, jn) in jnodes.iter().enumerate() {
        let opname = jn.get("op").and_then(|o| o.as_str()).ok_or_else(|| bad(format!("node {i} has no 'op' string")))?;
        let name = jn.get("name").and_then(|o| o.as_str()).ok_or_else(|| bad(format!("node {i} has no 'name' string")))?;
        let mut attrs = str_attrs(jn.get("attrs"), name)?;
        attrs.extend(str_attrs(jn.get("attr"), name)?);
        attrs.extend(str_attrs(jn.get("param"), name)?);
        let jin = match jn.get("inputs") {
            None => &[][..],
            Some(v) => v.as_arr().ok_or_else(|| bad(format!("the inputs of node '{name}' are not an array")))?,
        };
        let mut inputs = Vec::with_capacity(jin.len());
        for v in jin {
            inputs.push(entry_of(v, &nodes, &format!("input of node '{name}'"))?);
        }
        let node = if opname == "null" {
            if !inputs.is_empty() {
                return Err(bad(format!("variable '{name}' has inputs")));
            }
            let map: BTreeMap<String, String> = attrs.into_iter().map(|(k, v)| (super::attr_key(&k), v)).collect();
            Node { op: None, name: name.to_string(), params: Params::default(), attrs: RwLock::new(map), inputs }
        } else {
            let op = lookup(opname)
                .map_err(|_| Error::new(format!("cannot load symbol: node '{name}' uses operator '{opname}', which is not registered")))?;
            let (mut params, map) =
                Symbol::parse_attrs(op, attrs).map_err(|e| Error::new(format!("cannot load node '{name}': {}", e.message())))?;
            if let Some(subs) = jn.get("subgraphs") {
                let subs = subs.as_arr().ok_or_else(|| bad(format!("the subgraphs of node '{name}' are not an array")))?;
                let graphs = subs.iter().map(from_doc).collect::<Result<Vec<_>>>()?;
                super::subgraph::attach(op, name, &mut params, graphs)?;
            }
            let want = op.num_inputs(&params);
            if inputs.len() != want {
                return Err(Error::op(
                    op.name,
                    format!("node '{name}' has {} inputs in the JSON but the operator takes {want}", inputs.len()),
                ));
            }
            if crate::op::control_flow::subgraph_count(op.name).is_some() {
                crate::op::control_flow::check_node(op.name, &params, inputs.len())?;
            }
            Node { op: Some(op), name: name.to_string(), params, attrs: RwLock::new(map), inputs }
        };
        nodes.push(Arc::new(node));
    }
    let heads = doc.get("heads").and_then(|h| h.as_arr()).ok_or_else(|| bad("no 'heads' array"))?;
    if heads.is_empty() {
        return Err(bad("'heads' is empty"));
    }
    let mut outputs = Vec::with_capacity(heads.len());
    for h in heads {
        outputs.push(entry_of(h, &nodes, "head")?);
    }
    Ok(Symbol { outputs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let text = r#"{
  "nodes": [
    {"op": "null", "name": "data", "inputs": []},
    {"op": "_plus_scalar", "name": "_plusscalar0", "attrs": {"scalar": "1"}, "inputs": [[0, 0, 0]]},
    {"op": "elemwise_mul", "name": "_mul0", "inputs": [[1, 0, 0], [0, 0, 0]]}
  ],
  "arg_nodes": [0],
  "node_row_ptr": [0, 1, 2, 3],
  "heads": [[2, 0, 0]],
  "attrs": {"mxnet_version": ["int", 10901]}
}"#;
        let s = Symbol::from_json(text).unwrap();
        let out = s.to_json();
        let again = Symbol::from_json(&out).unwrap();
        assert_eq!(again.to_json(), out);
        assert!(out.contains("\"attrs\": {\"scalar\": \"1\"}"));
        assert!(out.ends_with("\"heads\": [[2, 0, 0]], \n  \"attrs\": {\"mxnet_version\": [\"int\", 10901]}\n}"));
        for bad in [
            "{",
            r#"{"nodes": [{"op": "nope", "name": "x", "inputs": []}], "heads": [[0,0,0]]}"#,
            r#"{"nodes": [{"op": "null", "name": "x", "inputs": []}], "heads": [[3,0,0]]}"#,
            r#"{"nodes": [{"op": "exp", "name": "x", "inputs": [[0,0,0]]}], "heads": [[0,0,0]]}"#,
            r#"{"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "exp", "name": "e", "inputs": []}], "heads": [[1,0,0]]}"#,
            r#"{"nodes": [], "heads": []}"#,
        ] {
            assert!(Symbol::from_json(bad).is_err(), "{bad}");
        }
    }
}
