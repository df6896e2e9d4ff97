//! The operator registry: every op is defined once, here, with its MXNet name,
//! typed parameters, shape and dtype inference, CPU compute, a slot for its CUDA
//! compute and a slot for its gradient. `mx.nd.*` (and later `mx.sym.*`, autograd and
//! the executor) are all generated from these entries. [`invoke`] is the one way to
//! run an op imperatively: it checks inputs, infers outputs, allocates them and pushes
//! the compute to the engine.
//!
//! One file per op family; each family has a `register` function listed in
//! [`Registry::build`].

pub mod params;
mod util;

mod adaptive_pool;
mod attention;
mod contrib_box;
mod contrib_deform;
mod contrib_elemwise;
mod contrib_index;
mod contrib_mask;
mod contrib_multibox;
mod contrib_proposal;
pub mod control_flow;
mod copy;
mod correlation;
mod ctc;
mod cuda;
mod cuda_blas;
pub mod cuda_host;
mod cuda_misc;
mod cuda_nn;
pub mod custom;
mod dist;
mod elemwise;
mod grads;
mod group_norm;
mod im2col;
mod image;
mod image_tensor;
mod index;
mod init;
mod layout_ops;
mod linalg;
mod linalg_la;
mod linalg_la_grad;
mod math_special;
mod nn;
mod nn_conv;
mod nn_extra;
pub mod nn_fused;
mod optimizer;
mod pad;
mod quantize;
mod random;
mod random_pdf;
pub(crate) mod reduce;
mod resize;
mod rnn;
mod roi;
mod sample;
mod sequence;
pub mod shape;
mod softmax;
pub mod sparse;
mod spatial;
mod sync_batch_norm;

pub use init::infers_range;
pub use optimizer::blockwise_update;
pub use params::{PType, ParamSpec, Params, Value};
pub use util::*;

use crate::context::Context;
use crate::dtype::DType;
use crate::engine;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};
use smallvec::SmallVec;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// An op's inputs: a fixed list of names, or a variable number given by a count
/// parameter (e.g. `concat`'s `num_args`).
#[derive(Clone, Copy, Debug)]
pub enum Arity {
    Fixed(&'static [&'static str]),
    Variadic {
        name: &'static str,
        count: &'static str,
    },
    /// Inputs that depend on the parameters (e.g. `no_bias=True` drops `bias`):
    /// `all` lists every possible input in order, `select` the ones used with
    /// these parameters (a sub-sequence of `all`).
    Dynamic {
        all: &'static [&'static str],
        select: fn(&Params) -> &'static [&'static str],
    },
}

/// A tensor handed to a compute function: raw pointer, shape, dtype.
#[derive(Clone, Debug)]
pub struct Blob {
    pub ptr: *mut u8,
    pub shape: Shape,
    pub dtype: DType,
}

// SAFETY: a Blob is only dereferenced inside the engine operation that declared
// the vars of its chunk, which orders every access.
unsafe impl Send for Blob {}
unsafe impl Sync for Blob {}

impl Blob {
    pub fn size(&self) -> usize {
        self.shape.iter().product()
    }
    pub fn ptr_as<T>(&self) -> *mut T {
        self.ptr as *mut T
    }
    /// # Safety
    /// The caller must know that no output aliases this blob while the slice lives.
    pub unsafe fn slice<T>(&self) -> &[T] {
        self.check_element::<T>();
        std::slice::from_raw_parts(self.ptr as *const T, self.size())
    }
    /// # Safety
    /// The caller must know that nothing else reads or writes this blob meanwhile.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slice_mut<T>(&self) -> &mut [T] {
        self.check_element::<T>();
        std::slice::from_raw_parts_mut(self.ptr as *mut T, self.size())
    }
    /// A typed view must use the blob's element size: a kernel picked for another
    /// dtype (e.g. the f32 arm of `with_float!` reached with a uint8 blob) would read or
    /// write past the buffer. Stops the op instead (the op guard turns this into an
    /// MXNetError naming the op).
    fn check_element<T>(&self) {
        if std::mem::size_of::<T>() != self.dtype.size() {
            panic!(
                "a {} array was handed to a kernel for {}-byte elements ({})",
                self.dtype.name(),
                std::mem::size_of::<T>(),
                std::any::type_name::<T>()
            );
        }
    }
}

/// Everything a compute function gets.
pub struct OpCall<'a> {
    pub op: &'static OpDef,
    pub params: &'a Params,
    pub inputs: &'a [Blob],
    pub outputs: &'a [Blob],
    pub ctx: Context,
    /// The device's random generator, for ops marked `random`.
    pub rng: Option<&'a mut crate::random::Generator>,
    /// Training mode (autograd's `train_mode`, an executor's `is_train`) when the op
    /// was pushed: Dropout drops and BatchNorm uses batch statistics only then.
    pub is_train: bool,
}

/// What inference sees: the parameters and the inputs' shapes and dtypes.
pub struct InferArgs<'a> {
    pub op: &'static OpDef,
    pub params: &'a Params,
    pub shapes: &'a [&'a [usize]],
    pub dtypes: &'a [DType],
}

impl InferArgs<'_> {
    pub fn err(&self, msg: impl std::fmt::Display) -> Error {
        Error::op(self.op.name, msg)
    }
}

pub type InferFn = fn(&InferArgs) -> Result<Vec<(Shape, DType)>>;
pub type ComputeFn = fn(&mut OpCall) -> Result<()>;
/// Gradient slot: from the params, the inputs, the outputs and the gradients of the
/// outputs, the gradients of the inputs (None where an input gets none), computed
/// with registry ops. Filled by the autograd work.
pub type GradFn = fn(&Params, &[NDArray], &[NDArray], &[NDArray]) -> Result<Vec<Option<NDArray>>>;
thread_local! {
    /// Bit `i` set: the gradient of input `i` of the gradient function running now
    /// on this thread will not be used (see [`with_unwanted_grads`]).
    static UNWANTED_GRADS: Cell<u64> = const { Cell::new(0) };
}

/// Runs `f`, a call of an op's [`GradFn`], telling it which input gradients its
/// caller will use (`wanted[i]` for input `i`). Both backward walkers (autograd's
/// tape and a compiled graph) call gradient functions through this, so that an
/// expensive gradient can skip what nobody reads: a convolution whose data is the
/// batch (no gradient) computes only its weight and bias gradients. A gradient
/// function may return None (or anything) for an unwanted input; it must still
/// return one entry per input.
pub fn with_unwanted_grads<R>(wanted: impl IntoIterator<Item = bool>, f: impl FnOnce() -> R) -> R {
    let mut mask = 0u64;
    for (i, w) in wanted.into_iter().enumerate().take(64) {
        if !w {
            mask |= 1 << i;
        }
    }
    let prev = UNWANTED_GRADS.with(|c| c.replace(mask));
    // Restores the caller's mask however `f` ends (gradients do not nest today,
    // but a panic must not leave a stale mask behind).
    struct Restore(u64);
    impl Drop for Restore {
        fn drop(&mut self) {
            UNWANTED_GRADS.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(prev);
    f()
}

/// Whether the gradient function running now must produce the gradient of input
/// `i`: false only when its caller said, through [`with_unwanted_grads`], that it
/// will not use it (inputs past the 64th are always wanted).
pub fn grad_wanted(i: usize) -> bool {
    i >= 64 || UNWANTED_GRADS.with(|c| c.get()) & (1 << i) == 0
}

/// Backward shape inference (for symbols): given the parameters and the input
/// shapes known so far (None where unknown), fills in what the op determines, e.g.
/// `FullyConnected`'s weight `(num_hidden, in_units)` from its data's shape. Returns
/// an error when a known shape contradicts the others.
pub type FillFn = fn(&Params, &mut [Option<Shape>]) -> Result<()>;

/// One operator.
pub struct OpDef {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub doc: &'static str,
    pub inputs: Arity,
    pub params: &'static [ParamSpec],
    pub infer: InferFn,
    pub cpu: ComputeFn,
    pub cuda: Option<ComputeFn>,
    pub grad: Option<GradFn>,
    /// The output may be the same memory as an input (elementwise ops).
    pub inplace: bool,
    /// The op draws from the device's random generator.
    pub random: bool,
    /// Relative cost per output element, for the engine's run-inline decision.
    pub cost: u32,
    /// The output may live on another host device than the inputs (`_copyto`).
    pub cross_device: bool,
    /// Indices of the inputs the op also writes (MXNet's mutate inputs: BatchNorm's
    /// moving statistics, optimizer states). The engine orders them as writes; in a
    /// symbol they are the auxiliary states.
    pub mutate: &'static [usize],
    /// Inputs the op also writes in training mode with these parameters (BatchNorm
    /// with `fix_gamma` writes ones into gamma, as MXNet does); the engine orders
    /// them as writes then. Unlike `mutate`, they stay arguments in a symbol.
    pub train_writes: Option<fn(&Params) -> &'static [usize]>,
    /// How many of the outputs the user sees (the rest, e.g. Dropout's mask or
    /// BatchNorm's batch statistics, exist for the backward pass); None: all.
    pub visible: Option<fn(&Params) -> usize>,
    /// Backward shape inference for symbols; None: the op infers nothing backward.
    pub fill: Option<FillFn>,
    /// Number of outputs for these parameters (symbols need it before shapes are
    /// known); None: one output.
    pub num_outputs: Option<fn(&Params) -> usize>,
    /// Fills unknown input dtypes (symbol type inference) where they do not follow
    /// the other inputs, e.g. `Embedding`'s weight takes its `dtype` parameter
    /// whatever the indices' dtype; None: unknown inputs take the first known
    /// input's dtype.
    pub dtype_fill: Option<DTypeFillFn>,
    /// Whether symbolic inference may probe the op with partly known shapes (see
    /// graph::partial); false for ops that, as in MXNet, infer nothing until their
    /// inputs are whole (`where`).
    pub partial: bool,
    /// Keyword arguments beyond `params` are kept as strings (`Custom`).
    pub open_params: bool,
    /// Runs on the calling thread instead of as an engine kernel (`Custom`: the
    /// user's code pushes its own ops); see [`HostFn`].
    pub host: Option<HostFn>,
    /// Like `mutate`, when the written inputs depend on the parameters.
    pub mutate_fn: Option<fn(&Params) -> Vec<usize>>,
    /// Output names for `list_outputs` (`{node}_{name}`) when the op declares them.
    pub output_names: Option<fn(&Params) -> Vec<String>>,
    /// Its computation on sparse storage (see [`sparse`]); found by name when the op
    /// is registered.
    pub sparse: Option<&'static sparse::SparseImpl>,
    /// For ops whose output shape depends on input values (`boolean_mask`): the
    /// output shapes and dtypes from the inputs themselves (it waits for them).
    /// [`invoke`] uses it instead of `infer` (which still checks the inputs and
    /// gives 0 for the data-dependent dimensions); symbolic inference leaves those
    /// outputs unknown, and a cached op holding such a node runs node by node.
    pub dynamic: Option<DynShapeFn>,
    /// MXNet registers no input names for the op (no `FListInputNames`): a monitor
    /// (`set_monitor_callback(..., monitor_all=True)`, gluon's op hook) reports its
    /// inputs as `{node}_input0`, `{node}_input1`, ... instead of `{node}_data`.
    pub unnamed_inputs: bool,
    /// Symbolic inference with partly known shapes leaves an output dimension
    /// unknown wherever the first input's dimension at the same position is unknown
    /// (MXNet's slicing ops: a slice of an axis of unknown length is of unknown
    /// length, even where the bounds would fix it for every valid length).
    pub partial_per_axis: bool,
}

/// See [`OpDef::dynamic`].
pub type DynShapeFn = fn(&Params, &[NDArray]) -> Result<Vec<(Shape, DType)>>;

/// A host op's computation: the parameters, the inputs, the outputs to write (already
/// allocated) and the training flag.
pub type HostFn = fn(&Params, &[NDArray], &[NDArray], bool) -> Result<()>;

/// See [`OpDef::dtype_fill`].
pub type DTypeFillFn = fn(&Params, &mut [Option<DType>]);

impl OpDef {
    pub const fn new(
        name: &'static str,
        doc: &'static str,
        inputs: Arity,
        params: &'static [ParamSpec],
        infer: InferFn,
        cpu: ComputeFn,
    ) -> OpDef {
        OpDef {
            name,
            aliases: &[],
            doc,
            inputs,
            params,
            infer,
            cpu,
            cuda: None,
            grad: None,
            inplace: false,
            random: false,
            cost: 1,
            cross_device: false,
            mutate: &[],
            train_writes: None,
            visible: None,
            fill: None,
            num_outputs: None,
            dtype_fill: None,
            partial: true,
            open_params: false,
            host: None,
            mutate_fn: None,
            output_names: None,
            sparse: None,
            dynamic: None,
            unnamed_inputs: false,
            partial_per_axis: false,
        }
    }
    /// See [`OpDef::partial_per_axis`].
    pub const fn partial_per_axis(mut self) -> Self {
        self.partial_per_axis = true;
        self
    }
    /// See [`OpDef::unnamed_inputs`].
    pub const fn unnamed_inputs(mut self) -> Self {
        self.unnamed_inputs = true;
        self
    }
    pub const fn dynamic_shape(mut self, f: DynShapeFn) -> Self {
        self.dynamic = Some(f);
        self
    }
    pub const fn output_names(mut self, f: fn(&Params) -> Vec<String>) -> Self {
        self.output_names = Some(f);
        self
    }
    pub const fn open_params(mut self) -> Self {
        self.open_params = true;
        self
    }
    pub const fn host(mut self, f: HostFn) -> Self {
        self.host = Some(f);
        self
    }
    pub const fn mutate_with(mut self, f: fn(&Params) -> Vec<usize>) -> Self {
        self.mutate_fn = Some(f);
        self
    }
    /// The inputs a call with these parameters writes (see `mutate`).
    pub fn mutated(&self, params: &Params) -> Vec<usize> {
        match self.mutate_fn {
            Some(f) => f(params),
            None => self.mutate.to_vec(),
        }
    }
    pub const fn no_partial(mut self) -> Self {
        self.partial = false;
        self
    }
    pub const fn dtype_fill(mut self, f: DTypeFillFn) -> Self {
        self.dtype_fill = Some(f);
        self
    }
    pub const fn aliases(mut self, a: &'static [&'static str]) -> Self {
        self.aliases = a;
        self
    }
    pub const fn inplace(mut self) -> Self {
        self.inplace = true;
        self
    }
    pub const fn random(mut self) -> Self {
        self.random = true;
        self
    }
    pub const fn cross_device(mut self) -> Self {
        self.cross_device = true;
        self
    }
    pub const fn cost(mut self, c: u32) -> Self {
        self.cost = c;
        self
    }
    pub const fn grad(mut self, g: GradFn) -> Self {
        self.grad = Some(g);
        self
    }
    pub const fn cuda(mut self, f: ComputeFn) -> Self {
        self.cuda = Some(f);
        self
    }
    pub const fn mutate(mut self, m: &'static [usize]) -> Self {
        self.mutate = m;
        self
    }
    pub const fn train_writes(mut self, f: fn(&Params) -> &'static [usize]) -> Self {
        self.train_writes = Some(f);
        self
    }
    pub const fn visible(mut self, f: fn(&Params) -> usize) -> Self {
        self.visible = Some(f);
        self
    }
    pub const fn fill(mut self, f: FillFn) -> Self {
        self.fill = Some(f);
        self
    }
    pub const fn outputs(mut self, f: fn(&Params) -> usize) -> Self {
        self.num_outputs = Some(f);
        self
    }
    /// Number of outputs (visible or not) of a call with these parameters.
    pub fn num_outputs(&self, params: &Params) -> usize {
        self.num_outputs.map(|f| f(params)).unwrap_or(1)
    }

    /// Names of the inputs of a call with these parameters (variadic inputs are
    /// `arg0`, `arg1`, ... as in MXNet's symbols).
    pub fn input_names(&self, params: &Params) -> Vec<String> {
        match self.inputs {
            Arity::Fixed(names) => names.iter().map(|s| s.to_string()).collect(),
            Arity::Variadic { count, .. } => (0..params.int(count).max(0)).map(|i| format!("arg{i}")).collect(),
            Arity::Dynamic { select, .. } => select(params).iter().map(|s| s.to_string()).collect(),
        }
    }

    /// The names a monitor gives this op's inputs (after `{node}_`): the input
    /// names, or `input0`, `input1`, ... for ops MXNet registers without them.
    pub fn monitor_input_names(&self, params: &Params) -> Vec<String> {
        if self.unnamed_inputs {
            (0..self.num_inputs(params)).map(|i| format!("input{i}")).collect()
        } else {
            self.input_names(params)
        }
    }

    /// Number of outputs the user sees for these parameters, out of `total`.
    pub fn num_visible(&self, params: &Params, total: usize) -> usize {
        self.visible.map(|f| f(params).min(total)).unwrap_or(total)
    }

    /// Number of inputs for a call with these parameters.
    pub fn num_inputs(&self, params: &Params) -> usize {
        match self.inputs {
            Arity::Fixed(names) => names.len(),
            Arity::Variadic { count, .. } => params.int(count).max(0) as usize,
            Arity::Dynamic { select, .. } => select(params).len(),
        }
    }

    /// Parses `(name, value)` pairs against this op's parameters.
    pub fn parse(&'static self, given: Vec<(String, Value)>) -> Result<Params> {
        if self.open_params {
            return Params::parse_open(self.name, self.params, given);
        }
        Params::parse(self.name, self.params, given)
    }

    /// Output shapes and dtypes for inputs of these shapes and dtypes.
    pub fn infer(&'static self, params: &Params, shapes: &[&[usize]], dtypes: &[DType]) -> Result<Vec<(Shape, DType)>> {
        (self.infer)(&InferArgs { op: self, params, shapes, dtypes })
    }

    /// The MXNet-style docstring: description, then the Parameters section.
    pub fn docstring(&self) -> String {
        let mut s = String::from(self.doc.trim());
        s.push_str("\n\nParameters\n----------\n");
        match self.inputs {
            Arity::Fixed(names) => {
                for n in names {
                    s.push_str(&format!("{n} : NDArray\n    Input array.\n"));
                }
            }
            Arity::Variadic { name, .. } => s.push_str(&format!("{name} : NDArray[]\n    List of input arrays.\n")),
            Arity::Dynamic { all, .. } => {
                for n in all {
                    s.push_str(&format!("{n} : NDArray\n    Input array.\n"));
                }
            }
        }
        for p in self.params {
            s.push_str(&format!("{} : {}\n    {}\n", p.name, p.type_doc(), p.doc));
        }
        s.push_str("out : NDArray, optional\n    The output NDArray to hold the result.\n\nReturns\n-------\nout : NDArray or list of NDArrays\n    The output of this function.\n");
        s
    }
}

/// Name → op, built once from every family's `register`.
pub struct Registry {
    ops: Vec<&'static OpDef>,
    by_name: HashMap<&'static str, &'static OpDef>,
}

impl Registry {
    fn build() -> Registry {
        let mut r = Registry { ops: Vec::new(), by_name: HashMap::new() };
        elemwise::register(&mut r);
        init::register(&mut r);
        copy::register(&mut r);
        random::register(&mut r);
        sample::register(&mut r);
        random_pdf::register(&mut r);
        shape::register(&mut r);
        reduce::register(&mut r);
        index::register(&mut r);
        softmax::register(&mut r);
        linalg::register(&mut r);
        linalg_la::register(&mut r);
        optimizer::register(&mut r);
        nn::register(&mut r);
        nn_conv::register(&mut r);
        nn_fused::register(&mut r);
        image::register(&mut r);
        math_special::register(&mut r);
        sequence::register(&mut r);
        layout_ops::register(&mut r);
        nn_extra::register(&mut r);
        im2col::register(&mut r);
        pad::register(&mut r);
        group_norm::register(&mut r);
        custom::register(&mut r);
        sparse::register(&mut r);
        contrib_box::register(&mut r);
        contrib_multibox::register(&mut r);
        contrib_elemwise::register(&mut r);
        contrib_mask::register(&mut r);
        contrib_deform::register(&mut r);
        control_flow::register(&mut r);
        attention::register(&mut r);
        ctc::register(&mut r);
        quantize::register(&mut r);
        spatial::register(&mut r);
        contrib_index::register(&mut r);
        correlation::register(&mut r);
        adaptive_pool::register(&mut r);
        image_tensor::register(&mut r);
        roi::register(&mut r);
        resize::register(&mut r);
        rnn::register(&mut r);
        sync_batch_norm::register(&mut r);
        contrib_proposal::register(&mut r);
        r
    }
    /// Adds an op (called by the families' `register`).
    pub fn add(&mut self, mut op: OpDef) {
        if op.grad.is_none() {
            op.grad = grads::lookup(op.name);
        }
        if op.cuda.is_none() {
            op.cuda = cuda::lookup(op.name);
        }
        if op.sparse.is_none() {
            op.sparse = sparse::lookup(op.name);
        }
        let op: &'static OpDef = Box::leak(Box::new(op));
        assert!(self.by_name.insert(op.name, op).is_none(), "op {} registered twice", op.name);
        for a in op.aliases {
            assert!(self.by_name.insert(a, op).is_none(), "alias {a} registered twice");
        }
        self.ops.push(op);
    }
}

static REGISTRY: OnceLock<Registry> = OnceLock::new();

fn registry() -> &'static Registry {
    REGISTRY.get_or_init(Registry::build)
}

/// The op registered under `name` (or one of its aliases).
pub fn lookup(name: &str) -> Result<&'static OpDef> {
    registry().by_name.get(name).copied().ok_or_else(|| Error::new(format!("operator '{name}' is not registered")))
}

/// Every registered op.
pub fn all_ops() -> &'static [&'static OpDef] {
    &registry().ops
}

/// Every registered name (op names and aliases), sorted.
pub fn all_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = registry().by_name.keys().copied().collect();
    v.sort();
    v
}

/// Whether small ready GPU ops are launched on the calling thread (default) rather
/// than by an engine worker (`OXNET_CUDA_INLINE=0`).
fn cuda_inline() -> bool {
    static V: OnceLock<bool> = OnceLock::new();
    *V.get_or_init(|| !std::env::var("OXNET_CUDA_INLINE").is_ok_and(|v| v.trim() == "0"))
}

/// Calls above this many elements (inputs plus outputs, weighted by cost) go to the
/// worker pool even when ready; smaller ones run on the caller's thread.
const INLINE_LIMIT: usize = 1 << 15;

/// Runs `op` on `inputs`: checks contexts, infers output shapes and dtypes, allocates
/// the outputs (or checks `out`), and pushes the compute to the engine. Returns the
/// outputs at once; the compute runs asynchronously. Errors found before the push
/// (shapes, dtypes, contexts, parameters) are returned here and leave every input as
/// it was.
pub fn invoke(
    op: &'static OpDef,
    inputs: &[NDArray],
    params: Params,
    out: Option<&[NDArray]>,
    ctx: Option<Context>,
) -> Result<Vec<NDArray>> {
    guard(op.name, || invoke_unguarded(op, inputs, params, out, ctx))
}

/// Runs `f`, an op call's synchronous part (checks, inference, scheduling), turning a
/// panic into an error naming the op: a panic there is a bug, and it must reach the
/// caller as an error, never unwind into Python. A panic that carries an [`Error`]
/// (`Storage::ptr` when the host is out of memory) is that error.
pub(crate) fn guard<T>(op: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => match p.downcast::<Error>() {
            Ok(e) => Err(*e),
            Err(p) => Err(Error::op(op, format!("internal error (panic): {}", crate::engine::panic_message(p)))),
        },
    }
}

fn invoke_unguarded(
    op: &'static OpDef,
    inputs: &[NDArray],
    params: Params,
    out: Option<&[NDArray]>,
    ctx: Option<Context>,
) -> Result<Vec<NDArray>> {
    let n_in = op.num_inputs(&params);
    if inputs.len() != n_in {
        return Err(Error::op(op.name, format!("expects {n_in} input(s), got {}", inputs.len())));
    }
    let ctx = match inputs.first() {
        Some(first) => {
            let c = first.ctx();
            for (i, a) in inputs.iter().enumerate().skip(1) {
                if a.ctx() != c {
                    return Err(Error::op(
                        op.name,
                        format!(
                            "all inputs must live on the same context. But the first argument is on {c} while the {}-th argument is on {}",
                            i + 1,
                            a.ctx()
                        ),
                    ));
                }
            }
            c
        }
        None => params.ctx("ctx").or(ctx).unwrap_or_default(),
    };
    let recording = crate::autograd::is_recording();
    if recording {
        if let Some(o) = out {
            crate::autograd::check_outputs(op.name, o)?;
        }
    }
    let shapes: SmallVec<[&[usize]; 4]> = inputs.iter().map(|a| a.shape()).collect();
    let dtypes: SmallVec<[DType; 4]> = inputs.iter().map(|a| a.dtype()).collect();
    let mut outs_info = op.infer(&params, &shapes, &dtypes)?;
    if let Some(f) = op.dynamic {
        outs_info = f(&params, inputs)?;
    }
    for (i, (s, d)) in outs_info.iter().enumerate() {
        if crate::shape::checked_bytes(s, d.size()).is_none() {
            return Err(Error::op(
                op.name,
                format!("output {i} would have shape {} of {}: more bytes than memory can address", crate::shape::fmt_shape(s), d.name()),
            ));
        }
    }
    // A cross-device copy from the host to a GPU runs on the GPU.
    let ctx = match out {
        Some([o, ..]) if op.cross_device && ctx.is_host() && !o.ctx().is_host() => o.ctx(),
        _ => ctx,
    };
    // A host op (Custom, control flow) runs on the calling thread whatever the device.
    let compute = if ctx.is_host() || op.host.is_some() {
        op.cpu
    } else {
        crate::storage::cuda::ensure_available(ctx).map_err(|e| Error::op(op.name, e))?;
        cuda_host::select(op).ok_or_else(|| {
            Error::op(
                op.name,
                format!("no CUDA implementation yet; cannot run on {ctx} (OXNET_CUDA_HOST_FALLBACK=0 turns off the host path)"),
            )
        })?
    };

    // Outputs: the caller's, checked, or fresh ones.
    let mut outputs: Vec<NDArray> = Vec::with_capacity(outs_info.len());
    let mut copy_back: Vec<(NDArray, NDArray)> = Vec::new();
    match out {
        Some(given) => {
            if given.len() != outs_info.len() {
                return Err(Error::op(op.name, format!("expects {} output(s), got {}", outs_info.len(), given.len())));
            }
            for (o, (s, d)) in given.iter().zip(&outs_info) {
                if o.shape() != &s[..] {
                    return Err(Error::op(
                        op.name,
                        format!("output shape {} does not match the expected shape {}", fmt_shape(o.shape()), fmt_shape(s)),
                    ));
                }
                if o.dtype() != *d {
                    return Err(Error::op(
                        op.name,
                        format!("output dtype {} does not match the expected dtype {}", o.dtype().name(), d.name()),
                    ));
                }
                if o.ctx() != ctx && !op.cross_device {
                    return Err(Error::op(op.name, format!("output is on {} but the inputs are on {ctx}", o.ctx())));
                }
                let aliased = inputs.iter().any(|i| i.overlaps(o));
                let exact_alias = inputs.iter().all(|i| !i.overlaps(o) || (i.offset() == o.offset() && i.dtype() == o.dtype()));
                if aliased && !(op.inplace && exact_alias) {
                    let tmp = NDArray::empty(s, ctx, *d)?;
                    copy_back.push((tmp.clone(), o.clone()));
                    outputs.push(tmp);
                } else {
                    outputs.push(o.clone());
                }
            }
        }
        None => {
            for (s, d) in &outs_info {
                outputs.push(NDArray::empty(s, ctx, *d)?);
            }
        }
    }

    if let Some(h) = op.host {
        h(&params, inputs, &outputs, crate::autograd::is_training())?;
        for (tmp, o) in &copy_back {
            invoke(lookup("_copyto")?, std::slice::from_ref(tmp), Params::default(), Some(std::slice::from_ref(o)), None)?;
        }
        if recording {
            crate::autograd::record(op, &params, inputs, &mut outputs);
        }
        return Ok(outputs);
    }

    let work: usize =
        (inputs.iter().map(|a| a.size()).sum::<usize>() + outputs.iter().map(|a| a.size()).sum::<usize>()).saturating_mul(op.cost as usize);
    let inline_ok = work <= INLINE_LIMIT && (ctx.is_host() || op.host.is_some() || cuda_inline());

    let reads: SmallVec<[Arc<engine::Var>; 4]> = inputs.iter().map(|a| a.var().clone()).collect();
    let mut writes: SmallVec<[Arc<engine::Var>; 4]> = outputs.iter().map(|a| a.var().clone()).collect();
    for i in op.mutated(&params) {
        if let Some(a) = inputs.get(i) {
            writes.push(a.var().clone());
        }
    }
    let is_train = crate::autograd::is_training();
    if let (true, Some(f)) = (is_train, op.train_writes) {
        for &i in f(&params) {
            if let Some(a) = inputs.get(i) {
                writes.push(a.var().clone());
            }
        }
    }
    let gen = if op.random { Some(crate::random::generator(ctx)) } else { None };
    if let Some(g) = &gen {
        writes.push(g.var.clone());
    }
    // The compute needs only pointers, shapes and dtypes; the chunks are kept alive
    // until it has run.
    // The pointers are filled in when it runs: host memory is taken at first touch
    // (see `Storage`), so an output queued behind other work gets its block then.
    let mut in_blobs: SmallVec<[Blob; 3]> = SmallVec::new();
    let mut keep: SmallVec<[(Arc<crate::ndarray::Chunk>, usize); 4]> = SmallVec::new();
    for a in inputs {
        in_blobs.push(lazy_blob_of(a));
        keep.push((a.chunk().clone(), a.offset() * a.dtype().size()));
    }
    let mut out_blobs: SmallVec<[Blob; 1]> = SmallVec::new();
    for a in outputs.iter() {
        out_blobs.push(lazy_blob_of(a));
        keep.push((a.chunk().clone(), a.offset() * a.dtype().size()));
    }
    let rec_params = if recording { Some(params.clone()) } else { None };
    let func = move || {
        for (b, (c, off)) in in_blobs.iter_mut().chain(out_blobs.iter_mut()).zip(&keep) {
            // SAFETY: the offset lies within the chunk (the array was built on it).
            b.ptr = unsafe { c.storage.try_ptr()?.add(*off) };
        }
        let _keep = keep;
        let mut guard = gen.as_ref().map(|g| g.state.lock());
        let rng = guard.as_deref_mut();
        let mut call = OpCall { op, params: &params, inputs: &in_blobs, outputs: &out_blobs, ctx, rng, is_train };
        compute(&mut call)
    };
    // The profiler's one check when it is off; when on, the op is timed where it runs.
    let tag = if engine::profiler::ops_on() { engine::profiler::op_tag(op.name, Some(ctx)) } else { None };
    engine::push_named(func, &reads, &writes, inline_ok, tag)?;

    if copy_back.is_empty() {
        if let Some(p) = rec_params {
            crate::autograd::record(op, &p, inputs, &mut outputs);
        }
        return Ok(outputs);
    }
    let copy_op = lookup("_copyto")?;
    let mut result = Vec::with_capacity(outputs.len());
    let mut cb = copy_back.into_iter().peekable();
    for o in outputs {
        match cb.peek() {
            Some((tmp, dst)) if tmp.same_chunk(&o) => {
                invoke(copy_op, std::slice::from_ref(tmp), Params::default(), Some(std::slice::from_ref(dst)), None)?;
                result.push(dst.clone());
                cb.next();
            }
            _ => result.push(o),
        }
    }
    if let Some(p) = rec_params {
        crate::autograd::record(op, &p, inputs, &mut result);
    }
    Ok(result)
}

/// Looks up `name`, parses `attrs` and invokes it (convenience for Rust callers).
pub fn call(name: &str, inputs: &[NDArray], attrs: &[(&str, Value)]) -> Result<Vec<NDArray>> {
    let op = lookup(name)?;
    let params = op.parse(attrs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())?;
    invoke(op, inputs, params, None, None)
}

/// Like [`call`], for ops with one output.
pub fn call1(name: &str, inputs: &[NDArray], attrs: &[(&str, Value)]) -> Result<NDArray> {
    Ok(call(name, inputs, attrs)?.remove(0))
}

/// A blob for `a` whose pointer is set when the operation runs.
fn lazy_blob_of(a: &NDArray) -> Blob {
    Blob { ptr: std::ptr::null_mut(), shape: Shape::from_slice(a.shape()), dtype: a.dtype() }
}

#[cfg(test)]
mod blob_tests {
    use super::Blob;
    use crate::dtype::DType;

    #[test]
    fn a_typed_view_must_match_the_element_size() {
        let mut bytes = [0u8; 4];
        let b = Blob { ptr: bytes.as_mut_ptr(), shape: vec![4].into(), dtype: DType::U8 };
        // SAFETY: `bytes` outlives the views and nothing else touches it.
        assert_eq!(unsafe { b.slice::<u8>() }.len(), 4);
        // four uint8 elements read as float32 would be 16 bytes: refused
        let err = std::panic::catch_unwind(|| unsafe { b.slice::<f32>().len() }).unwrap_err();
        assert!(crate::engine::panic_message(err).contains("uint8"));
        assert!(std::panic::catch_unwind(|| unsafe { b.slice_mut::<i64>().len() }).is_err());
    }
}
