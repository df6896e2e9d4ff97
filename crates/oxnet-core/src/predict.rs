//! Inference on a saved MXNet model from plain Rust: [`Predictor`] loads
//! `prefix-symbol.json` and `prefix-0000.params` (written by MXNet 1.x's
//! `Module.save_checkpoint`/`HybridBlock.export`, or by oxnet), binds the input
//! shapes and runs forward passes, as MXNet's C predict API did.
//!
//! ```
//! use oxnet_core::predict::Predictor;
//! use oxnet_core::{nd, Context};
//! # let dir = std::env::temp_dir().join(format!("oxnet-doc-predict-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).unwrap();
//! # let sym = dir.join("fc-symbol.json");
//! # let params = dir.join("fc-0000.params");
//! # std::fs::write(&sym, r#"{"nodes": [{"op": "null", "name": "data", "inputs": []},
//! #   {"op": "null", "name": "fc_weight", "inputs": []}, {"op": "null", "name": "fc_bias", "inputs": []},
//! #   {"op": "FullyConnected", "name": "fc", "attrs": {"num_hidden": "2"}, "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]}],
//! #   "arg_nodes": [0, 1, 2], "heads": [[3, 0, 0]]}"#).unwrap();
//! # let ctx = Context::cpu(0);
//! # let w = nd::array(&[1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0], &[2, 3], ctx)?;
//! # let b = nd::array(&[0.5f32, -0.5], &[2], ctx)?;
//! # oxnet_core::io::params::save_file(&params, &[(Some("arg:fc_weight"), &w), (Some("arg:fc_bias"), &b)])?;
//! // fc-symbol.json: data -> FullyConnected(num_hidden=2); fc-0000.params: its weights
//! let mut p = Predictor::load(&sym, &params, &[("data", &[1, 3])], Context::cpu(0))?;
//! let x = nd::array(&[1.0f32, 2.0, 3.0], &[1, 3], Context::cpu(0))?;
//! let out = p.forward(&[("data", &x)])?;
//! assert_eq!(out[0].to_vec::<f32>()?, vec![1.5, 5.5]);
//! assert_eq!(p.output_names(), vec!["fc_output".to_string()]);
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), oxnet_core::Error>(())
//! ```

use std::collections::HashMap;
use std::path::Path;

use crate::autograd::GradReq;
use crate::context::Context;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::{infer, Executor, Symbol};
use crate::io::params;
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};

/// A model bound for inference: arguments and auxiliary states from the params,
/// inputs of fixed shapes, no gradients.
pub struct Predictor {
    sym: Symbol,
    exec: Executor,
    inputs: Vec<(String, usize)>,
}

/// Splits MXNet's `arg:`/`aux:` prefixes off the names of a params file (a file
/// without prefixes, as `save_parameters` writes, names both kinds plainly).
fn split_params(arrays: Vec<NDArray>, names: Vec<String>) -> Result<(HashMap<String, NDArray>, HashMap<String, NDArray>)> {
    if names.len() != arrays.len() {
        return Err(Error::new("Predictor: the params file has unnamed arrays; a model's params are saved with names"));
    }
    let (mut args, mut aux) = (HashMap::new(), HashMap::new());
    for (n, a) in names.into_iter().zip(arrays) {
        let (map, key) = match n.split_once(':') {
            Some(("arg", k)) => (&mut args, k.to_string()),
            Some(("aux", k)) => (&mut aux, k.to_string()),
            _ => (&mut args, n),
        };
        map.insert(key, a);
    }
    Ok((args, aux))
}

/// Whether every use of variable `var` is the `label` input of an op (a loss
/// layer's label, which inference does not read).
fn feeds_only_labels(sym: &Symbol, var: &std::sync::Arc<crate::graph::Node>) -> bool {
    let mut used = false;
    for n in sym.topo() {
        let names = n.input_names();
        for (i, e) in n.inputs.iter().enumerate() {
            if std::sync::Arc::ptr_eq(&e.node, var) {
                used = true;
                if names.get(i).map(String::as_str) != Some("label") {
                    return false;
                }
            }
        }
    }
    used
}

impl Predictor {
    /// Loads a model from its symbol JSON and params files and binds `inputs`
    /// (name and shape of each data input) on `ctx`.
    pub fn load(
        symbol_json: impl AsRef<Path>,
        params_file: impl AsRef<Path>,
        inputs: &[(&str, &[usize])],
        ctx: Context,
    ) -> Result<Predictor> {
        let sj = symbol_json.as_ref();
        let text = std::fs::read_to_string(sj).map_err(|e| Error::new(format!("Predictor: cannot read {}: {e}", sj.display())))?;
        let sym = Symbol::from_json(&text).map_err(|e| Error::new(format!("Predictor: {}: {}", sj.display(), e.message())))?;
        let pf = params_file.as_ref();
        let (arrays, names) = params::load_file(pf).map_err(|e| Error::new(format!("Predictor: {}: {}", pf.display(), e.message())))?;
        let (args, aux) = split_params(arrays, names)?;
        Self::new(sym, args, aux, inputs, ctx)
    }

    /// Binds `sym` with the named argument and auxiliary arrays. Every argument
    /// that is neither an input nor in `args` must have a shape inference can find
    /// (a loss layer's label): it is bound to zeros. Names in `args`/`aux` that the
    /// symbol does not have, and arrays whose shape differs from the inferred one,
    /// are errors naming the parameter.
    pub fn new(
        sym: Symbol,
        args: HashMap<String, NDArray>,
        aux: HashMap<String, NDArray>,
        inputs: &[(&str, &[usize])],
        ctx: Context,
    ) -> Result<Predictor> {
        let arg_names = sym.list_arguments();
        let aux_names = sym.list_auxiliary_states();
        for (name, _) in inputs {
            if !arg_names.iter().any(|n| n == name) {
                return Err(Error::new(format!("Predictor: input '{name}' is not an argument of the symbol; arguments are {arg_names:?}")));
            }
        }
        let mut extra: Vec<&String> =
            args.keys().filter(|k| !arg_names.contains(k)).chain(aux.keys().filter(|k| !aux_names.contains(k))).collect();
        if !extra.is_empty() {
            extra.sort();
            return Err(Error::new(format!("Predictor: the params have arrays the symbol does not use: {extra:?}")));
        }
        let mut shapes: HashMap<String, Shape> = HashMap::new();
        let mut dtypes: HashMap<String, DType> = HashMap::new();
        for (name, s) in inputs {
            shapes.insert(name.to_string(), Shape::from_slice(s));
        }
        for (k, a) in args.iter().chain(aux.iter()) {
            shapes.entry(k.clone()).or_insert_with(|| Shape::from_slice(a.shape()));
            dtypes.insert(k.clone(), a.dtype());
        }
        let inf = infer::infer(&sym, &shapes, &dtypes, true)?;
        let (arg_nodes, aux_nodes) = sym.var_nodes();
        let bound = |node: &std::sync::Arc<crate::graph::Node>, given: Option<&NDArray>, what: &str| -> Result<NDArray> {
            let (shape, dtype) = inf.var(node);
            let Some(shape) = shape else {
                return Err(Error::new(format!(
                    "Predictor: the shape of {what} '{}' is unknown: give it as an input or in the params",
                    node.name
                )));
            };
            match given {
                Some(a) if a.shape() != &shape[..] => Err(Error::new(format!(
                    "Predictor: {what} '{}' has shape {} in the params, but the symbol needs {}",
                    node.name,
                    fmt_shape(a.shape()),
                    fmt_shape(shape)
                ))),
                Some(a) => a.copy_to(ctx),
                None => crate::nd::zeros_dtype(shape, dtype.unwrap_or(DType::F32), ctx),
            }
        };
        let mut arg_arrays = Vec::with_capacity(arg_nodes.len());
        let mut input_pos = Vec::new();
        for (i, n) in arg_nodes.iter().enumerate() {
            let is_input = inputs.iter().any(|(name, _)| *name == n.name);
            if is_input {
                input_pos.push((n.name.clone(), i));
            } else if !args.contains_key(&n.name) && !feeds_only_labels(&sym, n) {
                return Err(Error::new(format!("Predictor: argument '{}' is neither an input nor in the params", n.name)));
            }
            arg_arrays.push(bound(n, args.get(&n.name), "argument")?);
        }
        let mut aux_arrays = Vec::with_capacity(aux_nodes.len());
        for n in &aux_nodes {
            if !aux.contains_key(&n.name) {
                return Err(Error::new(format!("Predictor: auxiliary state '{}' is not in the params", n.name)));
            }
            aux_arrays.push(bound(n, aux.get(&n.name), "auxiliary state")?);
        }
        let k = arg_arrays.len();
        let exec = Executor::bind(&sym, ctx, arg_arrays, vec![None; k], vec![GradReq::Null; k], aux_arrays)?;
        Ok(Predictor { sym, exec, inputs: input_pos })
    }

    /// Copies the named inputs in, runs the model and returns its outputs. The
    /// returned arrays are the predictor's own output buffers: the next `forward`
    /// writes into them (copy them to keep them).
    pub fn forward(&mut self, inputs: &[(&str, &NDArray)]) -> Result<Vec<NDArray>> {
        for (name, a) in inputs {
            let Some((_, i)) = self.inputs.iter().find(|(n, _)| n == name) else {
                return Err(Error::new(format!("Predictor.forward: '{name}' is not an input of this predictor")));
            };
            let dst = &self.exec.args[*i];
            if a.shape() != dst.shape() {
                return Err(Error::new(format!(
                    "Predictor.forward: input '{name}' has shape {}, bound as {}",
                    fmt_shape(a.shape()),
                    fmt_shape(dst.shape())
                )));
            }
            if a.dtype() == dst.dtype() {
                a.copy_into(dst)?;
            } else {
                crate::nd::Op::new("Cast")?.input(a).attr("dtype", dst.dtype()).out(&[dst]).call()?;
            }
        }
        self.exec.forward(false)?;
        Ok(self.exec.outputs.clone())
    }

    /// The names of the outputs (`fc1_output`, ...).
    pub fn output_names(&self) -> Vec<String> {
        self.sym.list_outputs()
    }

    /// The bound input names.
    pub fn input_names(&self) -> Vec<String> {
        self.inputs.iter().map(|(n, _)| n.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nd;

    const FC: &str = r#"{"nodes": [{"op": "null", "name": "data", "inputs": []},
      {"op": "null", "name": "fc_weight", "inputs": []}, {"op": "null", "name": "fc_bias", "inputs": []},
      {"op": "FullyConnected", "name": "fc", "attrs": {"num_hidden": "2"}, "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]},
      {"op": "null", "name": "softmax_label", "inputs": []},
      {"op": "SoftmaxOutput", "name": "softmax", "inputs": [[3, 0, 0], [4, 0, 0]]}],
      "arg_nodes": [0, 1, 2, 4], "heads": [[5, 0, 0]]}"#;

    fn parts() -> (Symbol, HashMap<String, NDArray>) {
        let c = Context::cpu(0);
        let sym = Symbol::from_json(FC).unwrap();
        let mut args = HashMap::new();
        args.insert("fc_weight".to_string(), nd::array(&[1.0f32, 0.0, 0.0, 1.0], &[2, 2], c).unwrap());
        args.insert("fc_bias".to_string(), nd::zeros(&[2], c).unwrap());
        (sym, args)
    }

    #[test]
    fn runs_with_label_bound_to_zeros() {
        let c = Context::cpu(0);
        let (sym, args) = parts();
        let mut p = Predictor::new(sym, args, HashMap::new(), &[("data", &[1, 2])], c).unwrap();
        let x = nd::array(&[0.0f32, 0.0], &[1, 2], c).unwrap();
        let out = p.forward(&[("data", &x)]).unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![0.5, 0.5]);
        assert_eq!(p.input_names(), vec!["data".to_string()]);
        let bad = nd::zeros(&[2, 2], c).unwrap();
        let e = p.forward(&[("data", &bad)]).unwrap_err();
        assert!(e.message().contains("'data'"), "{}", e.message());
        assert!(p.forward(&[("nope", &x)]).is_err());
    }

    #[test]
    fn mismatched_params_are_named() {
        let c = Context::cpu(0);
        let (sym, mut args) = parts();
        args.insert("fc_weight".to_string(), nd::zeros(&[3, 2], c).unwrap());
        let e = Predictor::new(sym.clone(), args, HashMap::new(), &[("data", &[1, 2])], c).err().unwrap();
        assert!(e.message().contains("fc_weight"), "{}", e.message());
        let (_, mut args) = parts();
        args.insert("conv9_weight".to_string(), nd::zeros(&[1], c).unwrap());
        let e = Predictor::new(sym.clone(), args, HashMap::new(), &[("data", &[1, 2])], c).err().unwrap();
        assert!(e.message().contains("conv9_weight"), "{}", e.message());
        let (_, mut args) = parts();
        args.remove("fc_bias");
        let e = Predictor::new(sym.clone(), args, HashMap::new(), &[("data", &[1, 2])], c).err().unwrap();
        assert!(e.message().contains("fc_bias"), "{}", e.message());
        let (_, args) = parts();
        let e = Predictor::new(sym, args, HashMap::new(), &[("dat", &[1, 2])], c).err().unwrap();
        assert!(e.message().contains("dat"), "{}", e.message());
        let e = Predictor::load("/nonexistent-symbol.json", "/nonexistent.params", &[], c).err().unwrap();
        assert!(e.message().contains("nonexistent-symbol.json"), "{}", e.message());
    }
}
