//! `Custom`: operators written by the user in the host language (MXNet's
//! `mx.operator.CustomOp`), as nodes of symbols, executors and hybridized blocks.
//!
//! The core knows nothing of Python: a [`CustomHost`] registered at start-up (the
//! PyO3 crate registers one) answers for each `op_type` and its string keyword
//! arguments: the input, output and auxiliary-state names, shape and dtype
//! inference, and the forward and backward computations. Those run on the calling
//! thread, in program order with the rest of the graph (the op is a *host* op, see
//! [`OpDef::host`]): the user's code pushes ordinary registry ops to the engine, so
//! everything it computes is ordered like any other work, and nothing waits for the
//! host language inside an engine worker.

use super::params::intern;
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::Shape;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The names a custom op declares.
#[derive(Clone, Debug)]
pub struct CustomSpec {
    pub arguments: Vec<String>,
    pub outputs: Vec<String>,
    pub aux_states: Vec<String>,
}

/// Shapes (or dtypes) of (arguments, outputs, auxiliary states).
pub type Triple<T> = (Vec<T>, Vec<T>, Vec<T>);

/// What runs the user's custom operators.
pub trait CustomHost: Send + Sync {
    fn spec(&self, op_type: &str, kwargs: &[(String, String)]) -> Result<CustomSpec>;
    /// From the argument shapes.
    fn infer_shape(&self, op_type: &str, kwargs: &[(String, String)], args: &[Shape]) -> Result<Triple<Shape>>;
    /// From the argument dtypes.
    fn infer_type(&self, op_type: &str, kwargs: &[(String, String)], args: &[DType]) -> Result<Triple<DType>>;
    /// `inputs` are the arguments then the auxiliary states (written in place).
    fn forward(&self, op_type: &str, kwargs: &[(String, String)], inputs: &[NDArray], outputs: &[NDArray], is_train: bool) -> Result<()>;
    /// The gradients of the arguments (None where none flows).
    fn backward(
        &self,
        op_type: &str,
        kwargs: &[(String, String)],
        out_grads: &[NDArray],
        inputs: &[NDArray],
        outputs: &[NDArray],
    ) -> Result<Vec<Option<NDArray>>>;
}

static HOST: OnceLock<Box<dyn CustomHost>> = OnceLock::new();

/// Registers the host of custom operators (once; later calls are ignored).
pub fn set_host(h: Box<dyn CustomHost>) {
    let _ = HOST.set(h);
}

fn host() -> Result<&'static dyn CustomHost> {
    HOST.get().map(|b| b.as_ref()).ok_or_else(|| Error::op("Custom", "no host for custom operators is registered (mx.operator)"))
}

/// The op_type and the other keyword arguments, as strings.
fn call_args(p: &Params) -> (String, Vec<(String, String)>) {
    let op_type = p.str("op_type").to_string();
    let kwargs = p
        .iter()
        .filter(|(n, _)| *n != "op_type")
        .map(|(n, v)| {
            let s = match v {
                Value::Str(s) => s.clone(),
                Value::Int(i) => i.to_string(),
                Value::Float(f) => f.to_string(),
                Value::Bool(b) => if *b { "True" } else { "False" }.to_string(),
                other => format!("{other:?}"),
            };
            (n.to_string(), s)
        })
        .collect();
    (op_type, kwargs)
}

/// Specs by (op_type, kwargs): asked by arity and output counts many times.
fn spec_of(p: &Params) -> Result<CustomSpec> {
    static CACHE: OnceLock<Mutex<HashMap<String, CustomSpec>>> = OnceLock::new();
    let (t, kw) = call_args(p);
    let key = format!("{t}\u{0}{kw:?}");
    let cache = CACHE.get_or_init(Default::default);
    if let Some(s) = cache.lock().get(&key) {
        return Ok(s.clone());
    }
    let s = host()?.spec(&t, &kw)?;
    cache.lock().insert(key, s.clone());
    Ok(s)
}

/// Arguments then auxiliary states, as the node's input names.
fn input_names(p: &Params) -> &'static [&'static str] {
    match spec_of(p) {
        Ok(s) => {
            let names: Vec<&'static str> = s.arguments.iter().chain(&s.aux_states).map(|n| intern(n)).collect();
            intern_list(names)
        }
        Err(_) => &[],
    }
}

pub(super) fn intern_list(v: Vec<&'static str>) -> &'static [&'static str] {
    static LISTS: OnceLock<Mutex<HashMap<Vec<&'static str>, &'static [&'static str]>>> = OnceLock::new();
    let lists = LISTS.get_or_init(Default::default);
    let mut g = lists.lock();
    if let Some(l) = g.get(&v) {
        return l;
    }
    let leaked: &'static [&'static str] = Box::leak(v.clone().into_boxed_slice());
    g.insert(v, leaked);
    leaked
}

fn output_names(p: &Params) -> Vec<String> {
    spec_of(p).map(|s| s.outputs).unwrap_or_default()
}

fn num_outputs(p: &Params) -> usize {
    spec_of(p).map(|s| s.outputs.len()).unwrap_or(1)
}

/// The auxiliary states are the inputs after the arguments; the op writes them.
fn aux_inputs(p: &Params) -> Vec<usize> {
    match spec_of(p) {
        Ok(s) => (s.arguments.len()..s.arguments.len() + s.aux_states.len()).collect(),
        Err(_) => Vec::new(),
    }
}

fn custom_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let spec = spec_of(a.params)?;
    let (t, kw) = call_args(a.params);
    let n = spec.arguments.len();
    if a.shapes.len() != n + spec.aux_states.len() {
        return Err(a.err(format!(
            "custom operator '{t}' takes {} inputs (arguments {:?}, auxiliary states {:?}), got {}",
            n + spec.aux_states.len(),
            spec.arguments,
            spec.aux_states,
            a.shapes.len()
        )));
    }
    let args: Vec<Shape> = a.shapes[..n].iter().map(|s| Shape::from_slice(s)).collect();
    let (ia, outs, aux) = host()?.infer_shape(&t, &kw, &args)?;
    for (i, (want, got)) in ia.iter().chain(&aux).zip(a.shapes.iter()).enumerate() {
        if want.as_slice() != *got {
            let name = spec.arguments.iter().chain(&spec.aux_states).nth(i).cloned().unwrap_or_default();
            return Err(a.err(format!(
                "custom operator '{t}' infers shape {} for input '{name}', but it has shape {}",
                crate::shape::fmt_shape(want),
                crate::shape::fmt_shape(got)
            )));
        }
    }
    let (_, out_types, _) = host()?.infer_type(&t, &kw, &a.dtypes[..n])?;
    Ok(outs.into_iter().zip(out_types).collect())
}

/// Symbolic inference: the prop's infer_shape gives the shapes of arguments and
/// auxiliary states not given (weights, states) once the data's are known.
fn custom_fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let spec = spec_of(p)?;
    let n = spec.arguments.len().min(shapes.len());
    if shapes.iter().all(|s| s.is_some()) || shapes[..n].iter().all(|s| s.is_none()) {
        return Ok(());
    }
    // As MXNet: the prop sees unknown argument shapes as empty and may fill them.
    let complete = shapes[..n].iter().all(|s| s.is_some());
    let args: Vec<Shape> = shapes[..n].iter().map(|s| s.clone().unwrap_or_default()).collect();
    let (t, kw) = call_args(p);
    let (ia, _, aux) = match host()?.infer_shape(&t, &kw, &args) {
        Ok(r) => r,
        Err(e) if complete => return Err(e),
        Err(_) => return Ok(()),
    };
    for (slot, s) in shapes.iter_mut().zip(ia.into_iter().chain(aux)) {
        if slot.is_none() && !s.is_empty() && !s.contains(&0) {
            *slot = Some(s);
        }
    }
    Ok(())
}

fn custom_dtype_fill(p: &Params, dtypes: &mut [Option<DType>]) {
    let Ok(spec) = spec_of(p) else { return };
    let n = spec.arguments.len();
    let n = n.min(dtypes.len());
    // Unknown argument dtypes are shown as the first known one (MXNet's default prop
    // gives every argument the first one's dtype).
    let Some(first) = dtypes[..n].iter().flatten().next().copied() else {
        return;
    };
    let args: Vec<DType> = dtypes[..n].iter().map(|d| d.unwrap_or(first)).collect();
    let (t, kw) = call_args(p);
    if let Ok((ia, _, aux)) = host().and_then(|h| h.infer_type(&t, &kw, &args)) {
        for (slot, d) in dtypes.iter_mut().zip(ia.into_iter().chain(aux)) {
            if slot.is_none() {
                *slot = Some(d);
            }
        }
    }
}

fn custom_host(p: &Params, inputs: &[NDArray], outputs: &[NDArray], is_train: bool) -> Result<()> {
    let (t, kw) = call_args(p);
    host()?.forward(&t, &kw, inputs, outputs, is_train)
}

fn custom_grad(p: &Params, inputs: &[NDArray], outputs: &[NDArray], out_grads: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    let spec = spec_of(p)?;
    let (t, kw) = call_args(p);
    let mut g = host()?.backward(&t, &kw, out_grads, inputs, outputs)?;
    // The auxiliary states get no gradient.
    g.resize(spec.arguments.len() + spec.aux_states.len(), None);
    Ok(g)
}

fn not_on_engine(c: &mut OpCall) -> Result<()> {
    Err(Error::op(c.op.name, "a custom operator runs on the calling thread, not as an engine kernel"))
}

const CUSTOM_PARAMS: &[ParamSpec] = &[ParamSpec::new(
    "op_type",
    PType::Str,
    None,
    "Name of the custom operator. This is the name that is passed to `mx.operator.register` to register the operator.",
)];

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "Custom",
            "Apply a custom operator implemented in a frontend language (like Python).

Custom operators should override required methods like `forward` and `backward`.
Other keyword arguments are passed, as strings, to the operator's CustomOpProp.",
            Arity::Dynamic { all: &[], select: input_names },
            CUSTOM_PARAMS,
            custom_infer,
            not_on_engine,
        )
        .open_params()
        .host(custom_host)
        .mutate_with(aux_inputs)
        .outputs(num_outputs)
        .output_names(output_names)
        .fill(custom_fill)
        .dtype_fill(custom_dtype_fill)
        .grad(custom_grad)
        .no_partial(),
    );
}
