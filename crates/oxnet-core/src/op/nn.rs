//! Neural-network ops other than convolution, fully-connected and pooling:
//! `Activation`, `LeakyReLU`, `BatchNorm`, `LayerNorm`, `InstanceNorm`, `Dropout`,
//! `Embedding`, the output layers (`SoftmaxOutput`/`Softmax`, `SoftmaxActivation`,
//! `LinearRegressionOutput`, `LogisticRegressionOutput`, `MAERegressionOutput`),
//! `BlockGrad`/`stop_gradient`, `make_loss` and `MakeLoss`, each with its MXNet
//! backward op (`_backward_Activation`, `_backward_BatchNorm`, ...) and a gradient
//! function that invokes it.
//!
//! Where oxnet differs from MXNet 1.9.1 on purpose:
//! - The third BatchNorm output (`output_mean_var=True`) is the inverse standard
//!   deviation `1/sqrt(var + eps)`, as MXNet returns it.
//! - `LeakyReLU(act_type='rrelu')` returns `[out, mask]` as MXNet does; outside
//!   training the mask holds the mean slope `(lower_bound + upper_bound) / 2`.
//! - `SoftmaxOutput(out_grad=True)` multiplies its gradient by the head gradient.
//! - `Embedding(sparse_grad=True)` gives a dense weight gradient.
//!
//! The module must not touch other families' ops; it only invokes registry ops.

use super::{invoke, lookup, Arity, Blob, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::cpu::nn::{self as k, Act};
use crate::ndarray::NDArray;
use crate::random::uniform01;
use crate::shape::{fmt_shape, norm_axis, Shape};
use crate::with_dtype;
use crate::with_float;

// ---- helpers -------------------------------------------------------------------------

/// # Safety: see [`Blob::slice`].
pub(super) fn rd<T>(b: &Blob) -> &[T] {
    // SAFETY: the engine operation owning this call orders every access to the blob.
    unsafe { b.slice::<T>() }
}
#[allow(clippy::mut_from_ref)]
pub(super) fn wr<T>(b: &Blob) -> &mut [T] {
    // SAFETY: outputs (and mutate inputs) are written only by this call.
    unsafe { b.slice_mut::<T>() }
}

/// Any blob's values as f64.
pub(super) fn to_f64(b: &Blob) -> Vec<f64> {
    with_dtype!(b.dtype, T, { rd::<T>(b).iter().map(|v| crate::dtype::Element::to_f64(*v)).collect() })
}

/// Writes f64 values into a float blob.
pub(super) fn from_f64(b: &Blob, v: &[f64]) {
    with_float!(b.dtype, T, {
        for (o, x) in wr::<T>(b).iter_mut().zip(v) {
            *o = <T as crate::dtype::Element>::from_f64(*x);
        }
    })
}

pub(super) fn float_input(a: &InferArgs, i: usize, name: &str) -> Result<DType> {
    let d = a.dtypes[i];
    if !d.is_float() {
        return Err(a.err(format!("input '{name}' must be a floating point array (float16, float32 or float64), got {}", d.name())));
    }
    Ok(d)
}

pub(super) fn expect_shape(a: &InferArgs, i: usize, name: &str, want: &[usize], why: &str) -> Result<()> {
    if a.shapes[i] != want {
        return Err(a.err(format!("input '{name}' has shape {} but {why} requires {}", fmt_shape(a.shapes[i]), fmt_shape(want))));
    }
    Ok(())
}

/// Fills unknown shapes `idx` with `want`; a known different shape is an error.
pub(super) fn fill_known(op: &str, shapes: &mut [Option<Shape>], idx: &[(usize, &str)], want: &[usize]) -> Result<()> {
    for &(i, name) in idx {
        if let Some(slot) = shapes.get_mut(i) {
            match slot {
                Some(s) if &s[..] != want => {
                    return Err(Error::op(op, format!("input '{name}' has shape {} but {} was inferred", fmt_shape(s), fmt_shape(want))))
                }
                Some(_) => {}
                None => *slot = Some(Shape::from_slice(want)),
            }
        }
    }
    Ok(())
}

/// Runs backward op `name` with the forward's parameters (backward ops declare the
/// same parameter list as their forward op).
pub(super) fn run_bwd(name: &str, inputs: &[NDArray], p: &Params) -> Result<Vec<NDArray>> {
    invoke(lookup(name)?, inputs, p.clone(), None, None)
}

pub(super) fn need_outputs(op: &str, outputs: &[NDArray], n: usize) -> Result<()> {
    if outputs.len() < n {
        return Err(Error::op(op, format!("gradient needs the forward's {n} outputs (hidden ones included), got {}", outputs.len())));
    }
    Ok(())
}

pub(super) fn head(op: &str, og: &[NDArray]) -> Result<NDArray> {
    og.first().cloned().ok_or_else(|| Error::op(op, "gradient called without an output gradient"))
}

fn outer_inner(shape: &[usize], ax: usize) -> (usize, usize, usize) {
    (shape[..ax].iter().product(), shape[ax], shape[ax + 1..].iter().product())
}

pub(super) fn same_first(a: &InferArgs) -> (Shape, DType) {
    (Shape::from_slice(a.shapes[0]), a.dtypes[0])
}

fn copy_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    if x.ptr != o.ptr {
        let n = x.size() * x.dtype.size();
        // SAFETY: distinct buffers of n bytes each (invoke copies when they overlap).
        unsafe { std::ptr::copy_nonoverlapping(x.ptr, o.ptr, n) };
    }
    Ok(())
}

const DATA: Arity = Arity::Fixed(&["data"]);

// ---- Activation ------------------------------------------------------------------------

const ACT_PARAMS: &[ParamSpec] =
    &[ParamSpec::choice("act_type", &["relu", "sigmoid", "softrelu", "softsign", "tanh"], None, "Activation function to be applied.")];

fn act_of(p: &Params) -> Act {
    match p.str("act_type") {
        "relu" => Act::Relu,
        "sigmoid" => Act::Sigmoid,
        "tanh" => Act::Tanh,
        "softrelu" => Act::SoftRelu,
        "softsign" => Act::SoftSign,
        "elu" => Act::Elu(p.float("slope")),
        "selu" => Act::Selu,
        "gelu" => Act::Gelu,
        _ => Act::Leaky(p.float("slope")),
    }
}

fn act_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "data")?;
    Ok(vec![same_first(a)])
}

fn act_compute(c: &mut OpCall) -> Result<()> {
    let (x, y) = (&c.inputs[0], &c.outputs[0]);
    let act = act_of(c.params);
    with_float!(x.dtype, T, { k::act_forward::<T>(rd(x), wr(y), act) });
    Ok(())
}

fn act_bwd_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "out_grad")?;
    super::check_same_shape(a)?;
    super::check_same_dtype(a)?;
    Ok(vec![same_first(a)])
}

fn act_bwd_compute(c: &mut OpCall) -> Result<()> {
    let (g, x, y, dx) = (&c.inputs[0], &c.inputs[1], &c.inputs[2], &c.outputs[0]);
    let act = act_of(c.params);
    with_float!(x.dtype, T, { k::act_backward::<T>(rd(g), rd(x), rd(y), wr(dx), act) });
    Ok(())
}

fn act_grad(p: &Params, i: &[NDArray], o: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    if crate::autograd::is_recording() {
        return Ok(vec![Some(act_grad_recorded(p.str("act_type"), &i[0], &o[0], &head("Activation", og)?)?)]);
    }
    let dx = run_bwd("_backward_Activation", &[head("Activation", og)?, i[0].clone(), o[0].clone()], p)?;
    Ok(vec![dx.into_iter().next()])
}

/// Activation's gradient made of elementwise ops, for a backward that is recorded
/// (`create_graph`) so that it can be differentiated again.
fn act_grad_recorded(act: &str, x: &NDArray, y: &NDArray, g: &NDArray) -> Result<NDArray> {
    let sc = |name: &str, a: &NDArray, v: f64| super::call1(name, std::slice::from_ref(a), &[("scalar", super::Value::Float(v))]);
    let un = |name: &str, a: &NDArray| super::call1(name, std::slice::from_ref(a), &[]);
    let mul = |a: &NDArray, b: &NDArray| super::call1("elemwise_mul", &[a.clone(), b.clone()], &[]);
    let d = match act {
        "relu" => sc("_greater_scalar", x, 0.0)?,
        "sigmoid" => mul(y, &sc("_rminus_scalar", y, 1.0)?)?,
        "tanh" => sc("_rminus_scalar", &un("square", y)?, 1.0)?,
        "softrelu" => un("sigmoid", x)?,
        _ => un("reciprocal", &un("square", &sc("_plus_scalar", &un("abs", x)?, 1.0)?)?)?,
    };
    mul(g, &d)
}

// ---- LeakyReLU -------------------------------------------------------------------------

const LRELU_PARAMS: &[ParamSpec] = &[
    ParamSpec::choice("act_type", &["elu", "gelu", "leaky", "prelu", "rrelu", "selu"], Some("leaky"), "Activation function to be applied."),
    ParamSpec::new("slope", PType::Float, Some("0.25"), "Init slope for the activation. (For leaky and elu only)"),
    ParamSpec::new("lower_bound", PType::Float, Some("0.125"), "Lower bound of random slope. (For rrelu only)"),
    ParamSpec::new("upper_bound", PType::Float, Some("0.334"), "Upper bound of random slope. (For rrelu only)"),
];

fn lrelu_inputs(p: &Params) -> &'static [&'static str] {
    if p.str("act_type") == "prelu" {
        &["data", "gamma"]
    } else {
        &["data"]
    }
}

/// MXNet's output names (`FListOutputNames`) for ops with hidden outputs.
pub(super) fn names(n: &[&str]) -> Vec<String> {
    n.iter().map(|s| s.to_string()).collect()
}

fn lrelu_output_names(p: &Params) -> Vec<String> {
    names(&["output", "mask"][..lrelu_visible(p)])
}

fn lrelu_visible(p: &Params) -> usize {
    if p.str("act_type") == "rrelu" {
        2
    } else {
        1
    }
}

/// How PReLU's `gamma` of shape `gamma` spreads over data of shape `data`, as MXNet
/// 1.9.1 broadcasts it: gamma's axes align from the right with the data's first two
/// axes (a slope per channel `(C,)`, per sample and channel `(N, C)`, per sample
/// `(N, 1)`, or one slope), each equal to the data's size or 1. The result
/// `(groups, inner)`: element `i` of the data uses slope `(i / inner) % groups`
/// (one group: slope 0 everywhere). Err: gamma does not broadcast so.
pub(super) fn prelu_layout(data: &[usize], gamma: &[usize]) -> std::result::Result<(usize, usize), String> {
    let total: usize = data.iter().product();
    let nd = data.len();
    let mut e = vec![1usize; nd];
    let mut s = gamma.len() as isize - 1;
    for i in (0..nd).rev() {
        if s >= 0 && i <= 1 && (data[i] == gamma[s as usize] || gamma[s as usize] == 1) {
            e[i] = gamma[s as usize];
            s -= 1;
        }
    }
    if s != -1 {
        return Err(format!(
            "gamma of shape {} does not broadcast to data of shape {}: its axes must match the data's first two axes (from the right), \
             each equal to the data's size or 1, e.g. ({},) for one slope per channel",
            fmt_shape(gamma),
            fmt_shape(data),
            data.get(1).copied().unwrap_or(1)
        ));
    }
    let (e0, e1) = (e.first().copied().unwrap_or(1), e.get(1).copied().unwrap_or(1));
    let rest: usize = data.iter().skip(2).product();
    Ok(match (e0 > 1, e1 > 1) {
        (true, true) => (data[0] * data[1], rest),
        (true, false) => (data[0], total.checked_div(data[0]).unwrap_or(0)),
        (false, true) => (data[1], rest),
        (false, false) => (1, total),
    })
}

fn lrelu_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let d = float_input(a, 0, "data")?;
    let p = a.params;
    if p.str("act_type") == "prelu" {
        prelu_layout(a.shapes[0], a.shapes[1]).map_err(|m| a.err(m))?;
        if a.dtypes[1] != d {
            return Err(a.err(format!("gamma has dtype {} but data has dtype {}", a.dtypes[1].name(), d.name())));
        }
    }
    if p.str("act_type") == "rrelu" {
        let (lo, hi) = (p.float("lower_bound"), p.float("upper_bound"));
        if lo > hi {
            return Err(a.err(format!("lower_bound ({lo}) must not exceed upper_bound ({hi})")));
        }
        return Ok(vec![same_first(a), same_first(a)]);
    }
    Ok(vec![same_first(a)])
}

/// An unknown gamma is one slope per channel (axis 1; one slope for 1-D data), as
/// MXNet infers it; a known one is checked by inference.
fn lrelu_fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    if p.str("act_type") == "prelu" {
        if let (Some(Some(d)), Some(None)) = (shapes.first().cloned(), shapes.get(1)) {
            let ch = if d.len() >= 2 { d[1] } else { 1 };
            fill_known("LeakyReLU", shapes, &[(1, "gamma")], &[ch])?;
        }
    }
    Ok(())
}

fn lrelu_compute(c: &mut OpCall) -> Result<()> {
    let x = &c.inputs[0];
    let y = &c.outputs[0];
    let p = c.params;
    match p.str("act_type") {
        "prelu" => {
            let (ch, inner) = prelu_layout(&x.shape, &c.inputs[1].shape).map_err(|m| Error::op(c.op.name, m))?;
            with_float!(x.dtype, T, { k::prelu_forward::<T>(rd(x), rd(&c.inputs[1]), wr(y), ch, inner) });
        }
        "rrelu" => {
            let (lo, hi) = (p.float("lower_bound"), p.float("upper_bound"));
            let mask = &c.outputs[1];
            if c.is_train {
                let key = c.rng.as_mut().map(|g| g.next_key()).ok_or_else(|| Error::op(c.op.name, "no random generator"))?;
                with_float!(x.dtype, T, {
                    k::rrelu_forward::<T>(rd(x), wr(y), wr(mask), move |i| lo + (hi - lo) * uniform01(key, i as u64))
                });
            } else {
                let s = (lo + hi) / 2.0;
                with_float!(x.dtype, T, { k::rrelu_forward::<T>(rd(x), wr(y), wr(mask), move |_| s) });
            }
        }
        _ => {
            let act = act_of(p);
            with_float!(x.dtype, T, { k::act_forward::<T>(rd(x), wr(y), act) });
        }
    }
    Ok(())
}

fn lrelu_bwd_inputs(p: &Params) -> &'static [&'static str] {
    match p.str("act_type") {
        "prelu" => &["out_grad", "data", "output", "gamma"],
        "rrelu" => &["out_grad", "data", "output", "mask"],
        _ => &["out_grad", "data", "output"],
    }
}

fn lrelu_bwd_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "out_grad")?;
    for i in 1..3 {
        if a.shapes[i] != a.shapes[0] {
            return Err(a.err(format!("out_grad has shape {} but input {i} has shape {}", fmt_shape(a.shapes[0]), fmt_shape(a.shapes[i]))));
        }
    }
    if a.params.str("act_type") == "prelu" {
        return Ok(vec![same_first(a), (Shape::from_slice(a.shapes[3]), a.dtypes[3])]);
    }
    Ok(vec![same_first(a)])
}

fn lrelu_bwd_compute(c: &mut OpCall) -> Result<()> {
    let (g, x, y, dx) = (&c.inputs[0], &c.inputs[1], &c.inputs[2], &c.outputs[0]);
    match c.params.str("act_type") {
        "prelu" => {
            let (ch, inner) = prelu_layout(&x.shape, &c.inputs[3].shape).map_err(|m| Error::op(c.op.name, m))?;
            with_float!(x.dtype, T, { k::prelu_backward::<T>(rd(g), rd(x), rd(&c.inputs[3]), wr(dx), wr(&c.outputs[1]), ch, inner) });
        }
        "rrelu" => with_float!(x.dtype, T, { k::rrelu_backward::<T>(rd(g), rd(x), rd(&c.inputs[3]), wr(dx)) }),
        _ => {
            let act = act_of(c.params);
            with_float!(x.dtype, T, { k::act_backward::<T>(rd(g), rd(x), rd(y), wr(dx), act) });
        }
    }
    Ok(())
}

fn lrelu_grad(p: &Params, i: &[NDArray], o: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    let mut ins = vec![head("LeakyReLU", og)?, i[0].clone(), o[0].clone()];
    match p.str("act_type") {
        "prelu" => ins.push(i[1].clone()),
        "rrelu" => {
            need_outputs("LeakyReLU", o, 2)?;
            ins.push(o[1].clone());
        }
        _ => {}
    }
    Ok(run_bwd("_backward_LeakyReLU", &ins, p)?.into_iter().map(Some).collect())
}

// ---- BatchNorm -------------------------------------------------------------------------

const BN_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("eps", PType::Float, Some("0.001"), "Epsilon to prevent div 0. Must be no less than CUDNN_BN_MIN_EPSILON defined in cudnn.h when using cudnn (usually 1e-5)"),
    ParamSpec::new("momentum", PType::Float, Some("0.9"), "Momentum for moving average"),
    ParamSpec::new("fix_gamma", PType::Bool, Some("True"), "Fix gamma while training"),
    ParamSpec::new("use_global_stats", PType::Bool, Some("False"), "Whether use global moving statistics instead of local batch-norm. This will force change batch-norm into a scale shift operator."),
    ParamSpec::new("output_mean_var", PType::Bool, Some("False"), "Output the mean and inverse std "),
    ParamSpec::new("axis", PType::Int, Some("1"), "Specify which shape axis the channel is specified"),
    ParamSpec::new("cudnn_off", PType::Bool, Some("False"), "Do not select CUDNN operator, if available"),
    ParamSpec::new("min_calib_range", PType::OptFloat, Some("None"), "The minimum scalar value in the form of float32 obtained through calibration. If present, it will be used to by quantized batch norm op to calculate primitive scale.Note: this calib_range is to calib bn output."),
    ParamSpec::new("max_calib_range", PType::OptFloat, Some("None"), "The maximum scalar value in the form of float32 obtained through calibration. If present, it will be used to by quantized batch norm op to calculate primitive scale.Note: this calib_range is to calib bn output."),
];

const BN_VEC: [&str; 4] = ["gamma", "beta", "moving_mean", "moving_var"];

fn mean_var_visible(p: &Params) -> usize {
    if p.bool("output_mean_var") {
        3
    } else {
        1
    }
}

fn bn_axis(a: &InferArgs) -> Result<usize> {
    let nd = a.shapes[0].len();
    if nd == 0 {
        return Err(a.err("data must have at least one dimension"));
    }
    let ax = a.params.int("axis");
    if ax < -(nd as i64) || ax >= nd as i64 {
        return Err(a.err(format!("axis {ax} is out of range for data of shape {} ({nd} dimensions)", fmt_shape(a.shapes[0]))));
    }
    Ok(norm_axis(ax, nd, a.op.name)?)
}

fn bn_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "data")?;
    let ax = bn_axis(a)?;
    let ch = a.shapes[0][ax];
    for (j, name) in BN_VEC.iter().enumerate() {
        expect_shape(a, j + 1, name, &[ch], &format!("data of shape {} with axis={}", fmt_shape(a.shapes[0]), a.params.int("axis")))?;
        float_input(a, j + 1, name)?;
    }
    let pd = a.dtypes[1];
    Ok(vec![same_first(a), (Shape::from_slice(&[ch]), pd), (Shape::from_slice(&[ch]), pd)])
}

/// Unknown parameter dtypes from the data's, as MXNet infers them: float32 under
/// float16 or bfloat16 data, the data's own type otherwise; unknown data from the
/// parameters.
pub(super) fn bn_dtype_fill(_: &Params, dtypes: &mut [Option<DType>]) {
    match dtypes.first().copied().flatten() {
        Some(d) => {
            let p = if matches!(d, DType::F16 | DType::BF16) { DType::F32 } else { d };
            for t in dtypes.iter_mut().skip(1).filter(|t| t.is_none()) {
                *t = Some(p);
            }
        }
        None => {
            let known = dtypes.iter().skip(1).find_map(|t| *t);
            if let (Some(k), Some(first)) = (known, dtypes.first_mut()) {
                *first = Some(k);
            }
        }
    }
}

fn bn_fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let Some(Some(d)) = shapes.first().cloned() else { return Ok(()) };
    let nd = d.len() as i64;
    let ax = p.int("axis");
    if nd == 0 || ax < -nd || ax >= nd {
        return Err(Error::op("BatchNorm", format!("axis {ax} is out of range for data of shape {}", fmt_shape(&d))));
    }
    let ch = d[ax.rem_euclid(nd) as usize];
    fill_known("BatchNorm", shapes, &[(1, "gamma"), (2, "beta"), (3, "moving_mean"), (4, "moving_var")], &[ch])
}

/// In training, `fix_gamma` makes the forward write ones into gamma (MXNet 1.9.1
/// does; the scale used is one either way).
pub(super) fn bn_train_writes(p: &Params) -> &'static [usize] {
    if p.bool("fix_gamma") {
        &[1]
    } else {
        &[]
    }
}

/// What BatchNorm and SyncBatchNorm share: the channel axis and the parameters.
pub(super) struct BnCfg {
    pub ax: usize,
    pub eps: f64,
    pub momentum: f64,
    pub fix_gamma: bool,
    pub use_global_stats: bool,
}

/// The forward of a batch norm on `c` (inputs data, gamma, beta, moving_mean,
/// moving_var): writes output 0 (and ones into gamma with `fix_gamma` in training);
/// returns the mean and variance used (the batch's in training) and the inverse
/// standard deviation.
pub(super) fn bn_forward(c: &OpCall, cfg: &BnCfg) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let x = &c.inputs[0];
    let (outer, ch, inner) = outer_inner(&x.shape, cfg.ax);
    let gamma = if cfg.fix_gamma { vec![1.0; ch] } else { to_f64(&c.inputs[1]) };
    let beta = to_f64(&c.inputs[2]);
    let training = c.is_train && !cfg.use_global_stats;
    let (mean, var) = if training {
        with_float!(x.dtype, T, { k::bn_stats::<T>(rd(x), outer, ch, inner) })
    } else {
        (to_f64(&c.inputs[3]), to_f64(&c.inputs[4]))
    };
    if c.is_train && cfg.fix_gamma {
        from_f64(&c.inputs[1], &gamma);
    }
    let invstd: Vec<f64> = var.iter().map(|v| 1.0 / (v + cfg.eps).sqrt()).collect();
    let scale: Vec<f64> = (0..ch).map(|j| gamma[j] * invstd[j]).collect();
    with_float!(x.dtype, T, { k::bn_apply::<T>(rd(x), wr(&c.outputs[0]), ch, inner, &mean, &scale, &beta) });
    (mean, var, invstd)
}

fn bn_compute(c: &mut OpCall) -> Result<()> {
    let p = c.params;
    let ax = norm_axis(p.int("axis"), c.inputs[0].shape.len(), c.op.name)?;
    let cfg = bn_cfg(p, ax);
    let (mean, _, invstd) = bn_forward(c, &cfg);
    from_f64(&c.outputs[1], &mean);
    from_f64(&c.outputs[2], &invstd);
    Ok(())
}

pub(super) fn bn_cfg(p: &Params, ax: usize) -> BnCfg {
    BnCfg {
        ax,
        eps: p.float("eps"),
        momentum: p.float("momentum"),
        fix_gamma: p.bool("fix_gamma"),
        use_global_stats: p.bool("use_global_stats"),
    }
}

fn bn_bwd_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "out_grad")?;
    if a.shapes[0] != a.shapes[1] {
        return Err(a.err(format!("out_grad has shape {} but data has shape {}", fmt_shape(a.shapes[0]), fmt_shape(a.shapes[1]))));
    }
    let ax = bn_axis(a)?;
    let ch = a.shapes[0][ax];
    for (i, name) in [(2, "gamma"), (3, "mean"), (4, "invstd"), (5, "moving_mean"), (6, "moving_var")] {
        expect_shape(a, i, name, &[ch], "the data's channel count")?;
    }
    let v = (Shape::from_slice(&[ch]), a.dtypes[2]);
    Ok(vec![same_first(a), v.clone(), v])
}

/// The backward of a batch norm on `c` (inputs out_grad, data, gamma, then three
/// the caller read, then moving_mean and moving_var at 5 and 6): the gradients of
/// data, gamma and beta from the `mean` and `invstd` the forward used; in training,
/// the moving statistics follow the batch's (`var`, the biased batch variance)
/// here, in the backward pass, as MXNet's CPU kernel does.
pub(super) fn bn_backward(c: &OpCall, cfg: &BnCfg, mean: &[f64], invstd: &[f64], var: &[f64]) {
    let (g, x) = (&c.inputs[0], &c.inputs[1]);
    let (outer, ch, inner) = outer_inner(&x.shape, cfg.ax);
    let gamma = if cfg.fix_gamma { vec![1.0; ch] } else { to_f64(&c.inputs[2]) };
    let batch = c.is_train && !cfg.use_global_stats;
    let sums =
        with_float!(x.dtype, T, { k::bn_backward::<T>(rd(g), rd(x), wr(&c.outputs[0]), outer, ch, inner, mean, invstd, &gamma, batch) });
    let dgamma: Vec<f64> = if cfg.fix_gamma { vec![0.0; ch] } else { sums.iter().map(|s| s.1).collect() };
    let dbeta: Vec<f64> = sums.iter().map(|s| s.0).collect();
    from_f64(&c.outputs[1], &dgamma);
    from_f64(&c.outputs[2], &dbeta);
    if batch {
        let m = cfg.momentum;
        let mm: Vec<f64> = to_f64(&c.inputs[5]).iter().zip(mean).map(|(a, b)| a * m + b * (1.0 - m)).collect();
        let mv: Vec<f64> = to_f64(&c.inputs[6]).iter().zip(var).map(|(a, b)| a * m + b * (1.0 - m)).collect();
        from_f64(&c.inputs[5], &mm);
        from_f64(&c.inputs[6], &mv);
    }
}

fn bn_bwd_compute(c: &mut OpCall) -> Result<()> {
    let p = c.params;
    let ax = norm_axis(p.int("axis"), c.inputs[1].shape.len(), c.op.name)?;
    let cfg = bn_cfg(p, ax);
    let mean = to_f64(&c.inputs[3]);
    let invstd = to_f64(&c.inputs[4]);
    // the batch variance comes back from invstd
    let var: Vec<f64> = invstd.iter().map(|s| (1.0 / (s * s) - cfg.eps).max(0.0)).collect();
    bn_backward(c, &cfg, &mean, &invstd, &var);
    Ok(())
}

fn bn_grad(p: &Params, i: &[NDArray], o: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    need_outputs("BatchNorm", o, 3)?;
    let ins = [head("BatchNorm", og)?, i[0].clone(), i[1].clone(), o[1].clone(), o[2].clone(), i[3].clone(), i[4].clone()];
    let r = run_bwd("_backward_BatchNorm", &ins, p)?;
    let mut v: Vec<Option<NDArray>> = r.into_iter().map(Some).collect();
    v.extend([None, None]);
    Ok(v)
}

// ---- LayerNorm -------------------------------------------------------------------------

const LN_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("axis", PType::Int, Some("-1"), "The axis to perform layer normalization. Usually, this should be be axis of the channel dimension. Negative values means indexing from right to left."),
    ParamSpec::new("eps", PType::Float, Some("1e-05"), "An `epsilon` parameter to prevent division by 0."),
    ParamSpec::new("output_mean_var", PType::Bool, Some("False"), "Output the mean and std calculated along the given axis."),
];

fn ln_axis(a: &InferArgs) -> Result<usize> {
    let nd = a.shapes[0].len();
    let ax = a.params.int("axis");
    if nd == 0 || ax < -(nd as i64) || ax >= nd as i64 {
        return Err(a.err(format!("axis {ax} is out of range for data of shape {}", fmt_shape(a.shapes[0]))));
    }
    Ok(ax.rem_euclid(nd as i64) as usize)
}

fn ln_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let d = float_input(a, 0, "data")?;
    let ax = ln_axis(a)?;
    let ch = a.shapes[0][ax];
    let why = format!("data of shape {} normalised along axis {}", fmt_shape(a.shapes[0]), a.params.int("axis"));
    expect_shape(a, 1, "gamma", &[ch], &why)?;
    expect_shape(a, 2, "beta", &[ch], &why)?;
    super::check_same_dtype(a)?;
    let mut ms = Shape::from_slice(a.shapes[0]);
    ms[ax] = 1;
    Ok(vec![same_first(a), (ms.clone(), d), (ms, d)])
}

fn ln_fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let Some(Some(d)) = shapes.first().cloned() else { return Ok(()) };
    let nd = d.len() as i64;
    let ax = p.int("axis");
    if nd == 0 || ax < -nd || ax >= nd {
        return Err(Error::op("LayerNorm", format!("axis {ax} is out of range for data of shape {}", fmt_shape(&d))));
    }
    fill_known("LayerNorm", shapes, &[(1, "gamma"), (2, "beta")], &[d[ax.rem_euclid(nd) as usize]])
}

fn ln_compute(c: &mut OpCall) -> Result<()> {
    let x = &c.inputs[0];
    let nd = x.shape.len() as i64;
    let ax = c.params.int("axis").rem_euclid(nd) as usize;
    let (outer, n, inner) = outer_inner(&x.shape, ax);
    let eps = c.params.float("eps");
    with_float!(x.dtype, T, {
        k::layer_norm::<T>(
            rd(x),
            rd(&c.inputs[1]),
            rd(&c.inputs[2]),
            wr(&c.outputs[0]),
            wr(&c.outputs[1]),
            wr(&c.outputs[2]),
            outer,
            n,
            inner,
            eps,
        )
    });
    Ok(())
}

fn norm_bwd_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "out_grad")?;
    if a.shapes[0] != a.shapes[1] {
        return Err(a.err(format!("out_grad has shape {} but data has shape {}", fmt_shape(a.shapes[0]), fmt_shape(a.shapes[1]))));
    }
    super::check_same_dtype(a)?;
    let v = (Shape::from_slice(a.shapes[2]), a.dtypes[2]);
    Ok(vec![same_first(a), v.clone(), v])
}

fn ln_bwd_compute(c: &mut OpCall) -> Result<()> {
    let (g, x) = (&c.inputs[0], &c.inputs[1]);
    let nd = x.shape.len() as i64;
    let ax = c.params.int("axis").rem_euclid(nd) as usize;
    let (outer, n, inner) = outer_inner(&x.shape, ax);
    if c.inputs[3].size() != outer * inner || c.inputs[2].size() != n {
        return Err(Error::op(c.op.name, "mean/std or gamma do not match the data's shape"));
    }
    let (dg, db) = with_float!(x.dtype, T, {
        k::layer_norm_backward::<T>(rd(g), rd(x), rd(&c.inputs[2]), rd(&c.inputs[3]), rd(&c.inputs[4]), wr(&c.outputs[0]), outer, n, inner)
    });
    from_f64(&c.outputs[1], &dg);
    from_f64(&c.outputs[2], &db);
    Ok(())
}

fn ln_grad(p: &Params, i: &[NDArray], o: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    need_outputs("LayerNorm", o, 3)?;
    let r = run_bwd("_backward_LayerNorm", &[head("LayerNorm", og)?, i[0].clone(), i[1].clone(), o[1].clone(), o[2].clone()], p)?;
    Ok(r.into_iter().map(Some).collect())
}

// ---- InstanceNorm ----------------------------------------------------------------------

const IN_PARAMS: &[ParamSpec] = &[ParamSpec::new("eps", PType::Float, Some("0.001"), "An `epsilon` parameter to prevent division by 0.")];

fn in_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let d = float_input(a, 0, "data")?;
    let s = a.shapes[0];
    if s.len() < 3 {
        return Err(a.err(format!(
            "InstanceNorm only supports input tensors of rank 3 or more (batch, channel, spatial...), got shape {}",
            fmt_shape(s)
        )));
    }
    let why = format!("data of shape {} ({} channels)", fmt_shape(s), s[1]);
    expect_shape(a, 1, "gamma", &[s[1]], &why)?;
    expect_shape(a, 2, "beta", &[s[1]], &why)?;
    super::check_same_dtype(a)?;
    let st = Shape::from_slice(&[s[0], s[1]]);
    Ok(vec![same_first(a), (st.clone(), d), (st, d)])
}

fn in_fill(_: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let Some(Some(d)) = shapes.first().cloned() else { return Ok(()) };
    if d.len() < 3 {
        return Err(Error::op("InstanceNorm", format!("data must have rank 3 or more, got shape {}", fmt_shape(&d))));
    }
    fill_known("InstanceNorm", shapes, &[(1, "gamma"), (2, "beta")], &[d[1]])
}

fn in_compute(c: &mut OpCall) -> Result<()> {
    let x = &c.inputs[0];
    let ch = x.shape[1];
    let len: usize = x.shape[2..].iter().product();
    let eps = c.params.float("eps");
    with_float!(x.dtype, T, {
        k::instance_norm::<T>(
            rd(x),
            rd(&c.inputs[1]),
            rd(&c.inputs[2]),
            wr(&c.outputs[0]),
            wr(&c.outputs[1]),
            wr(&c.outputs[2]),
            ch,
            len,
            eps,
        )
    });
    Ok(())
}

fn in_bwd_compute(c: &mut OpCall) -> Result<()> {
    let (g, x) = (&c.inputs[0], &c.inputs[1]);
    if x.shape.len() < 3 || c.inputs[3].size() != x.shape[0] * x.shape[1] {
        return Err(Error::op(c.op.name, "mean/invstd do not match the data's shape"));
    }
    let ch = x.shape[1];
    let len: usize = x.shape[2..].iter().product();
    let (dg, db) = with_float!(x.dtype, T, {
        k::instance_norm_backward::<T>(rd(g), rd(x), rd(&c.inputs[2]), rd(&c.inputs[3]), rd(&c.inputs[4]), wr(&c.outputs[0]), ch, len)
    });
    from_f64(&c.outputs[1], &dg);
    from_f64(&c.outputs[2], &db);
    Ok(())
}

fn in_grad(p: &Params, i: &[NDArray], o: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    need_outputs("InstanceNorm", o, 3)?;
    let r = run_bwd("_backward_InstanceNorm", &[head("InstanceNorm", og)?, i[0].clone(), i[1].clone(), o[1].clone(), o[2].clone()], p)?;
    Ok(r.into_iter().map(Some).collect())
}

// ---- Dropout ---------------------------------------------------------------------------

const DROPOUT_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("p", PType::Float, Some("0.5"), "Fraction of the input that gets dropped out during training time."),
    ParamSpec::choice(
        "mode",
        &["always", "training"],
        Some("training"),
        "Whether to only turn on dropout during training or to also turn on for inference.",
    ),
    ParamSpec::new("axes", PType::Tuple, Some("()"), "Axes for variational dropout kernel."),
    ParamSpec::new(
        "cudnn_off",
        PType::Bool,
        Some("False"),
        "Whether to turn off cudnn in dropout operator. This option is ignored if axes is specified.",
    ),
];

fn dropout_axes(op: &str, p: &Params, nd: usize) -> Result<Vec<usize>> {
    p.tuple("axes")
        .iter()
        .map(|&a| {
            if a < -(nd as i64) || a >= nd as i64 {
                Err(Error::op(op, format!("axes entry {a} is out of range for data with {nd} dimensions")))
            } else {
                Ok(a.rem_euclid(nd.max(1) as i64) as usize)
            }
        })
        .collect()
}

fn dropout_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "data")?;
    let pr = a.params.float("p");
    if !(0.0..=1.0).contains(&pr) {
        return Err(a.err(format!("value {pr} for Parameter p exceed bound [0,1]")));
    }
    dropout_axes(a.op.name, a.params, a.shapes[0].len())?;
    Ok(vec![same_first(a), same_first(a)])
}

fn dropout_compute(c: &mut OpCall) -> Result<()> {
    let (x, y, m) = (&c.inputs[0], &c.outputs[0], &c.outputs[1]);
    let pr = c.params.float("p");
    let active = (c.is_train || c.params.str("mode") == "always") && pr > 0.0;
    if !active {
        copy_compute(c)?;
        with_float!(m.dtype, T, { wr::<T>(m).fill(<T as crate::dtype::Element>::from_f64(1.0)) });
        return Ok(());
    }
    let key = c.rng.as_mut().map(|g| g.next_key()).ok_or_else(|| Error::op(c.op.name, "no random generator"))?;
    let axes = dropout_axes(c.op.name, c.params, x.shape.len())?;
    if axes.is_empty() {
        with_float!(x.dtype, T, { k::dropout::<T>(rd(x), wr(y), wr(m), pr, move |i| uniform01(key, i as u64)) });
    } else {
        // Elements that differ only along `axes` share a draw: index the draw by
        // the position with those axes zeroed.
        let shape = x.shape.clone();
        let st = crate::shape::strides(&shape);
        let shared: Vec<bool> = (0..shape.len()).map(|d| axes.contains(&d)).collect();
        let draw = move |i: usize| {
            let mut rem = i;
            let mut key_i = 0usize;
            for d in 0..shape.len() {
                let q = rem / st[d];
                rem %= st[d];
                if !shared[d] {
                    key_i += q * st[d];
                }
            }
            uniform01(key, key_i as u64)
        };
        with_float!(x.dtype, T, { k::dropout::<T>(rd(x), wr(y), wr(m), pr, draw) });
    }
    Ok(())
}

fn two_same_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, a.op.input_names(a.params)[0].as_str())?;
    super::check_same_shape(a)?;
    super::check_same_dtype(a)?;
    Ok(vec![same_first(a)])
}

fn dropout_bwd_compute(c: &mut OpCall) -> Result<()> {
    let (g, m, dx) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    with_float!(g.dtype, T, { k::mul::<T>(rd(g), rd(m), wr(dx)) });
    Ok(())
}

fn dropout_grad(p: &Params, _: &[NDArray], o: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    need_outputs("Dropout", o, 2)?;
    Ok(run_bwd("_backward_Dropout", &[head("Dropout", og)?, o[1].clone()], p)?.into_iter().map(Some).collect())
}

/// The gradient of `_backward_Dropout(out_grad, mask) = out_grad * mask`: linear in
/// `out_grad` with the same mask; the mask holds random draws, no gradient.
fn dropout_bwd_grad(p: &Params, i: &[NDArray], _: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    let g = run_bwd("_backward_Dropout", &[head("_backward_Dropout", og)?, i[1].clone()], p)?;
    Ok(vec![g.into_iter().next(), None])
}

// ---- Embedding -------------------------------------------------------------------------

const EMB_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("input_dim", PType::Int, None, "Vocabulary size of the input indices."),
    ParamSpec::new("output_dim", PType::Int, None, "Dimension of the embedding vectors."),
    ParamSpec::new("dtype", PType::DType, Some("float32"), "Data type of weight."),
    ParamSpec::new("sparse_grad", PType::Bool, Some("False"), "Compute row sparse gradient in the backward calculation. If set to True, the grad's storage type is row_sparse."),
    ParamSpec::new("deterministic", PType::Bool, Some("False"), "Force the backward gradient calculation to be executed based on a deterministic order at the cost of slower speed (_contrib_SparseEmbedding's parameter; oxnet's backward is always deterministic)."),
];

fn emb_dims(a: &InferArgs) -> Result<(usize, usize)> {
    let (i, o) = (a.params.int("input_dim"), a.params.int("output_dim"));
    if i <= 0 || o <= 0 {
        return Err(a.err(format!("input_dim ({i}) and output_dim ({o}) must be positive")));
    }
    Ok((i as usize, o as usize))
}

fn emb_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let (idim, odim) = emb_dims(a)?;
    expect_shape(a, 1, "weight", &[idim, odim], &format!("input_dim={idim}, output_dim={odim}"))?;
    let wd = float_input(a, 1, "weight")?;
    let d = a.params.dtype("dtype").unwrap_or(DType::F32);
    if wd != d {
        return Err(a.err(format!("weight has dtype {} but dtype={} was given", wd.name(), d.name())));
    }
    let mut s = Shape::from_slice(a.shapes[0]);
    s.push(odim);
    Ok(vec![(s, wd)])
}

fn emb_fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let (i, o) = (p.int("input_dim").max(0) as usize, p.int("output_dim").max(0) as usize);
    fill_known("Embedding", shapes, &[(1, "weight")], &[i, o])
}

/// As MXNet: the weight (and unknown indices) take the `dtype` parameter, whatever
/// the indices' dtype (int32 indices still give a float32 weight).
fn emb_dtype_fill(p: &Params, dtypes: &mut [Option<DType>]) {
    let d = p.dtype("dtype").unwrap_or(DType::F32);
    for t in dtypes.iter_mut() {
        if t.is_none() {
            *t = Some(d);
        }
    }
}

fn emb_indices(b: &Blob, rows: usize) -> Vec<usize> {
    with_dtype!(b.dtype, T, { rd::<T>(b).iter().map(|v| k::clip_index(crate::dtype::Element::to_f64(*v), rows)).collect() })
}

fn emb_compute(c: &mut OpCall) -> Result<()> {
    let (d, w, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let (rows, dim) = (w.shape[0], w.shape[1]);
    let idx = emb_indices(d, rows);
    with_float!(w.dtype, T, { k::embedding::<T>(&idx, rd(w), wr(o), dim) });
    Ok(())
}

fn emb_bwd_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let (idim, odim) = emb_dims(a)?;
    float_input(a, 0, "out_grad")?;
    let mut want = Shape::from_slice(a.shapes[1]);
    want.push(odim);
    expect_shape(a, 0, "out_grad", &want, "the indices' shape plus output_dim")?;
    Ok(vec![(Shape::from_slice(&[idim, odim]), a.dtypes[0])])
}

fn emb_bwd_compute(c: &mut OpCall) -> Result<()> {
    let (g, d, dw) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let (rows, dim) = (dw.shape[0], dw.shape[1]);
    let idx = emb_indices(d, rows);
    with_float!(g.dtype, T, { k::embedding_backward::<T>(&idx, rd(g), wr(dw), rows, dim) });
    Ok(())
}

fn emb_grad(p: &Params, i: &[NDArray], _: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    let dw = run_bwd("_backward_Embedding", &[head("Embedding", og)?, i[0].clone()], p)?;
    Ok(vec![None, dw.into_iter().next()])
}

// ---- SoftmaxOutput ---------------------------------------------------------------------

const SMO_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("grad_scale", PType::Float, Some("1"), "Scales the gradient by a float factor."),
    ParamSpec::new("ignore_label", PType::Float, Some("-1"), "The instances whose `labels` == `ignore_label` will be ignored during backward, if `use_ignore` is set to ``true``)."),
    ParamSpec::new("multi_output", PType::Bool, Some("False"), "If set to ``true``, the softmax function will be computed along axis ``1``. This is applied when the shape of input array differs from the shape of label array."),
    ParamSpec::new("use_ignore", PType::Bool, Some("False"), "If set to ``true``, the `ignore_label` value will not contribute to the backward gradient."),
    ParamSpec::new("preserve_shape", PType::Bool, Some("False"), "If set to ``true``, the softmax function will be computed along the last axis (``-1``)."),
    ParamSpec::choice("normalization", &["batch", "null", "valid"], Some("null"), "Normalizes the gradient."),
    ParamSpec::new("out_grad", PType::Bool, Some("False"), "Multiplies gradient with output gradient element-wise."),
    ParamSpec::new("smooth_alpha", PType::Float, Some("0"), "Constant for computing a label smoothed version of cross-entropyfor the backwards pass.  This constant gets subtracted from theone-hot encoding of the gold label and distributed uniformly toall other labels."),
];

const DATA_LABEL: Arity = Arity::Fixed(&["data", "label"]);

/// The softmax layout of SoftmaxOutput: `(outer, classes, inner)`.
fn smo_layout(p: &Params, s: &[usize]) -> (usize, usize, usize) {
    let size: usize = s.iter().product();
    if p.bool("preserve_shape") {
        let last = *s.last().unwrap_or(&1);
        (size.checked_div(last).unwrap_or(0), last, 1)
    } else if p.bool("multi_output") {
        let (n, kk) = (s[0], s[1]);
        (n, kk, s[2..].iter().product())
    } else {
        let n = s[0];
        (n, size.checked_div(n).unwrap_or(0), 1)
    }
}

/// The label shape SoftmaxOutput expects for data of shape `s` (class indices).
fn smo_label_shape(p: &Params, s: &[usize]) -> Shape {
    if p.bool("multi_output") && !p.bool("preserve_shape") {
        let rest: usize = s[2..].iter().product();
        Shape::from_slice(&[s[0], rest])
    } else {
        Shape::from_slice(&s[..s.len() - 1])
    }
}

/// With `multi_output`, MXNet also takes class labels of shape `(batch, d1, d2, ...)`
/// for data `(batch, classes, d1, d2, ...)` (the same elements as `(batch, d1*d2*...)`).
fn smo_spatial_label(p: &Params, s: &[usize], label: &[usize]) -> bool {
    p.bool("multi_output")
        && !p.bool("preserve_shape")
        && s.len() > 2
        && label.len() == s.len() - 1
        && label[0] == s[0]
        && label[1..] == s[2..]
}

fn smo_check_data(op: &str, p: &Params, s: &[usize]) -> Result<()> {
    let need = if p.bool("multi_output") { 2 } else { 1 };
    if s.len() < need.max(2) && !(s.len() == 1 && p.bool("preserve_shape")) {
        return Err(Error::op(op, format!("data must have at least 2 dimensions (batch, classes), got shape {}", fmt_shape(s))));
    }
    Ok(())
}

fn smo_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "data")?;
    let s = a.shapes[0];
    smo_check_data(a.op.name, a.params, s)?;
    let want = smo_label_shape(a.params, s);
    if a.shapes[1] != &want[..] && a.shapes[1] != s && !smo_spatial_label(a.params, s, a.shapes[1]) {
        return Err(a.err(format!(
            "label has shape {} but data of shape {} needs label shape {} (class indices) or {} (probabilities)",
            fmt_shape(a.shapes[1]),
            fmt_shape(s),
            fmt_shape(&want),
            fmt_shape(s)
        )));
    }
    Ok(vec![same_first(a)])
}

fn smo_fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let Some(Some(d)) = shapes.first().cloned() else { return Ok(()) };
    smo_check_data("SoftmaxOutput", p, &d)?;
    if let Some(Some(l)) = shapes.get(1) {
        if l[..] == d[..] {
            return Ok(());
        }
    }
    fill_known("SoftmaxOutput", shapes, &[(1, "label")], &smo_label_shape(p, &d))
}

fn smo_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let (outer, n, inner) = smo_layout(c.params, &x.shape);
    with_float!(x.dtype, T, {
        let (xs, os) = (rd::<T>(x), wr::<T>(o));
        if x.dtype == DType::F64 {
            crate::kernels::cpu::softmax::softmax::<T, T, f64>(xs, os, outer, n, inner, 1.0, crate::kernels::cpu::softmax::Kind::Softmax);
        } else {
            crate::kernels::cpu::softmax::softmax::<T, T, f32>(xs, os, outer, n, inner, 1.0, crate::kernels::cpu::softmax::Kind::Softmax);
        }
    });
    Ok(())
}

fn smo_bwd_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "out_grad")?;
    if a.shapes[0] != a.shapes[2] {
        return Err(a.err(format!("out_grad has shape {} but output has shape {}", fmt_shape(a.shapes[0]), fmt_shape(a.shapes[2]))));
    }
    smo_check_data(a.op.name, a.params, a.shapes[2])?;
    let want = smo_label_shape(a.params, a.shapes[2]);
    if a.shapes[1] != &want[..] && a.shapes[1] != a.shapes[2] && !smo_spatial_label(a.params, a.shapes[2], a.shapes[1]) {
        return Err(a.err(format!("label has shape {} but {} was expected", fmt_shape(a.shapes[1]), fmt_shape(&want))));
    }
    Ok(vec![(Shape::from_slice(a.shapes[2]), a.dtypes[2])])
}

fn smo_bwd_compute(c: &mut OpCall) -> Result<()> {
    let p = c.params;
    let (g, l, y, dx) = (&c.inputs[0], &c.inputs[1], &c.inputs[2], &c.outputs[0]);
    let (outer, n, inner) = smo_layout(p, &y.shape);
    let soft = l.shape == y.shape;
    let label = to_f64(l);
    let ignore = p.float("ignore_label");
    let use_ignore = p.bool("use_ignore");
    let alpha = p.float("smooth_alpha");
    let multi = p.bool("multi_output") && !p.bool("preserve_shape");
    let groups = outer * inner;
    // Normalisation, as MXNet computes it.
    let valid = if soft { groups } else { label.iter().take(groups).filter(|v| **v != ignore).count() };
    let mut scale = p.float("grad_scale");
    match p.str("normalization") {
        "batch" => scale /= if multi { (outer * inner).max(1) } else { outer.max(1) } as f64,
        "valid" => scale /= valid.max(1) as f64,
        _ => {
            if multi {
                scale /= inner.max(1) as f64
            }
        }
    }
    let use_head = p.bool("out_grad");
    let head = if use_head { to_f64(g) } else { Vec::new() };
    let ys = to_f64(y);
    let mut out = vec![0.0f64; ys.len()];
    let off = if n > 1 { alpha / (n - 1) as f64 } else { 0.0 };
    for o in 0..outer {
        for j in 0..inner {
            let gi = o * inner + j;
            let base = o * n * inner + j;
            if soft {
                for kk in 0..n {
                    let i = base + kk * inner;
                    out[i] = (ys[i] - label[i]) * scale;
                }
                continue;
            }
            let lv = label[gi];
            if use_ignore && lv == ignore {
                continue;
            }
            let li = lv as i64;
            for kk in 0..n {
                let i = base + kk * inner;
                let t = if li == kk as i64 { 1.0 - alpha } else { off };
                out[i] = (ys[i] - t) * scale;
            }
        }
    }
    if use_head {
        for (v, h) in out.iter_mut().zip(&head) {
            *v *= h;
        }
    }
    from_f64(dx, &out);
    Ok(())
}

fn smo_grad(p: &Params, i: &[NDArray], o: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    let g = og.first().cloned().unwrap_or_else(|| o[0].clone());
    let r = run_bwd("_backward_SoftmaxOutput", &[g, i[1].clone(), o[0].clone()], p)?;
    Ok(vec![r.into_iter().next(), None])
}

// ---- SoftmaxActivation -----------------------------------------------------------------

const SMA_PARAMS: &[ParamSpec] = &[ParamSpec::choice(
    "mode",
    &["channel", "instance"],
    Some("instance"),
    "Specifies how to compute the softmax. If set to ``instance``, it computes softmax for each instance. If set to ``channel``, It computes cross channel softmax for each position of each instance.",
)];

fn sma_layout(p: &Params, s: &[usize]) -> (usize, usize, usize) {
    if p.str("mode") == "channel" {
        outer_inner(s, 1)
    } else {
        outer_inner(s, s.len() - 1)
    }
}

fn sma_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "data")?;
    let s = a.shapes[0];
    if s.is_empty() || (a.params.str("mode") == "channel" && s.len() < 2) {
        return Err(a.err(format!("data of shape {} has too few dimensions for mode={}", fmt_shape(s), a.params.str("mode"))));
    }
    Ok(vec![same_first(a)])
}

fn sma_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let (outer, n, inner) = sma_layout(c.params, &x.shape);
    with_float!(x.dtype, T, {
        let (xs, os) = (rd::<T>(x), wr::<T>(o));
        if x.dtype == DType::F64 {
            crate::kernels::cpu::softmax::softmax::<T, T, f64>(xs, os, outer, n, inner, 1.0, crate::kernels::cpu::softmax::Kind::Softmax);
        } else {
            crate::kernels::cpu::softmax::softmax::<T, T, f32>(xs, os, outer, n, inner, 1.0, crate::kernels::cpu::softmax::Kind::Softmax);
        }
    });
    Ok(())
}

fn sma_bwd_compute(c: &mut OpCall) -> Result<()> {
    let (g, y, dx) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let (outer, n, inner) = sma_layout(c.params, &y.shape);
    with_float!(y.dtype, T, { k::softmax_backward::<T>(rd(g), rd(y), wr(dx), outer, n, inner) });
    Ok(())
}

fn sma_grad(p: &Params, _: &[NDArray], o: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    Ok(vec![run_bwd("_backward_SoftmaxActivation", &[head("SoftmaxActivation", og)?, o[0].clone()], p)?.into_iter().next()])
}

// ---- regression outputs ----------------------------------------------------------------

const REG_PARAMS: &[ParamSpec] = &[ParamSpec::new("grad_scale", PType::Float, Some("1"), "Scale the gradient by a float factor")];

/// The label shape a regression output infers for data of shape `s`: the data's
/// shape, without a trailing axis of length 1.
fn reg_label_shape(s: &[usize]) -> Shape {
    if s.len() >= 2 && s[s.len() - 1] == 1 {
        Shape::from_slice(&s[..s.len() - 1])
    } else {
        Shape::from_slice(s)
    }
}

fn reg_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "data")?;
    let s = a.shapes[0];
    if s.is_empty() {
        return Err(a.err("data must have at least one dimension"));
    }
    if a.shapes[1] != s && a.shapes[1] != &reg_label_shape(s)[..] {
        return Err(a.err(format!(
            "label has shape {} but data of shape {} needs label shape {}",
            fmt_shape(a.shapes[1]),
            fmt_shape(s),
            fmt_shape(&reg_label_shape(s))
        )));
    }
    Ok(vec![same_first(a)])
}

fn reg_fill(_: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let Some(Some(d)) = shapes.first().cloned() else { return Ok(()) };
    if let Some(Some(l)) = shapes.get(1) {
        if l[..] == d[..] {
            return Ok(());
        }
    }
    fill_known("RegressionOutput", shapes, &[(1, "label")], &reg_label_shape(&d))
}

/// 0: linear, 1: MAE, 2: logistic.
fn reg_compute<const K: u8>(c: &mut OpCall) -> Result<()> {
    if K == 2 {
        let (x, y) = (&c.inputs[0], &c.outputs[0]);
        with_float!(x.dtype, T, { k::act_forward::<T>(rd(x), wr(y), Act::Sigmoid) });
        Ok(())
    } else {
        copy_compute(c)
    }
}

fn reg_bwd_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 1, "output")?;
    if a.shapes[0].iter().product::<usize>() != a.shapes[1].iter().product::<usize>() {
        return Err(a.err(format!("label of shape {} does not match output of shape {}", fmt_shape(a.shapes[0]), fmt_shape(a.shapes[1]))));
    }
    Ok(vec![(Shape::from_slice(a.shapes[1]), a.dtypes[1])])
}

fn reg_bwd_compute<const K: u8>(c: &mut OpCall) -> Result<()> {
    let (l, y, dx) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let batch = l.shape.first().copied().unwrap_or(1).max(1);
    let per = (l.size() / batch).max(1);
    let scale = c.params.float("grad_scale") / per as f64;
    let (lv, yv) = (to_f64(l), to_f64(y));
    let out: Vec<f64> = yv
        .iter()
        .zip(&lv)
        .map(|(o, t)| {
            let d = o - t;
            scale * if K == 1 { d.signum() * (d != 0.0) as i32 as f64 } else { d }
        })
        .collect();
    from_f64(dx, &out);
    Ok(())
}

fn reg_grad<const K: u8>(p: &Params, i: &[NDArray], o: &[NDArray], _: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    let name = ["_backward_linear_reg_out", "_backward_mae_reg_out", "_backward_logistic_reg_out"][K as usize];
    Ok(vec![run_bwd(name, &[i[1].clone(), o[0].clone()], p)?.into_iter().next(), None])
}

// ---- BlockGrad, make_loss, MakeLoss ----------------------------------------------------

fn block_grad(_: &Params, _: &[NDArray], _: &[NDArray], _: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    Ok(vec![None])
}

fn make_loss_grad(_: &Params, i: &[NDArray], _: &[NDArray], _: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    Ok(vec![Some(super::call1("ones_like", &i[..1], &[])?)])
}

const MAKELOSS_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("grad_scale", PType::Float, Some("1"), "Gradient scale as a supplement to unary and binary operators"),
    ParamSpec::new("valid_thresh", PType::Float, Some("0"), "clip each element in the array to 0 when it is less than ``valid_thresh``. This is used when ``normalization`` is set to ``'valid'``."),
    ParamSpec::choice("normalization", &["batch", "null", "valid"], Some("null"), "If this is set to null, the output gradient will not be normalized. If this is set to batch, the output gradient will be divided by the batch size. If this is set to valid, the output gradient will be divided by the number of valid input elements."),
];

fn any_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    Ok(vec![same_first(a)])
}

fn makeloss_bwd_compute(c: &mut OpCall) -> Result<()> {
    let (x, dx) = (&c.inputs[0], &c.outputs[0]);
    let p = c.params;
    let mut v = p.float("grad_scale");
    match p.str("normalization") {
        "batch" => v /= x.shape.first().copied().unwrap_or(1).max(1) as f64,
        "valid" => {
            let t = p.float("valid_thresh");
            v /= to_f64(x).iter().filter(|e| **e > t).count().max(1) as f64;
        }
        _ => {}
    }
    with_float!(dx.dtype, T, { wr::<T>(dx).fill(<T as crate::dtype::Element>::from_f64(v)) });
    Ok(())
}

fn makeloss_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "data")?;
    Ok(vec![same_first(a)])
}

fn makeloss_grad(p: &Params, i: &[NDArray], _: &[NDArray], _: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    Ok(vec![run_bwd("_backward_MakeLoss", &i[..1], p)?.into_iter().next()])
}

// ---- registration ----------------------------------------------------------------------

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "Activation",
            "Applies an activation function element-wise to the input.

The following activation functions are supported:

- `relu`: Rectified Linear Unit, :math:`y = max(x, 0)`
- `sigmoid`: :math:`y = \\frac{1}{1 + exp(-x)}`
- `tanh`: Hyperbolic tangent, :math:`y = \\frac{exp(x) - exp(-x)}{exp(x) + exp(-x)}`
- `softrelu`: Soft ReLU, or SoftPlus, :math:`y = log(1 + exp(x))`
- `softsign`: :math:`y = \\frac{x}{1 + abs(x)}`",
            DATA,
            ACT_PARAMS,
            act_infer,
            act_compute,
        )
        .unnamed_inputs()
        .grad(act_grad)
        .cost(4),
    );
    r.add(
        OpDef::new(
            "_backward_Activation",
            "Gradient of Activation.",
            Arity::Fixed(&["out_grad", "data", "output"]),
            ACT_PARAMS,
            act_bwd_infer,
            act_bwd_compute,
        )
        .cost(4),
    );

    r.add(
        OpDef::new(
            "LeakyReLU",
            "Applies Leaky rectified linear unit activation element-wise to the input.

Leaky ReLUs attempt to fix the \"dying ReLU\" problem by allowing a small `slope`
when the input is negative and has a slope of one when input is positive.

The following modified ReLU Activation functions are supported:

- *elu*: Exponential Linear Unit. `y = x > 0 ? x : slope * (exp(x)-1)`
- *selu*: Scaled Exponential Linear Unit. `y = lambda * (x > 0 ? x : alpha * (exp(x) - 1))` where
  *lambda = 1.0507009873554804934193349852946* and *alpha = 1.6732632423543772848170429916717*.
- *leaky*: Leaky ReLU. `y = x > 0 ? x : slope * x`
- *prelu*: Parametric ReLU. This is same as *leaky* except that `slope` is learnt during training.
- *rrelu*: Randomized ReLU. same as *leaky* but the `slope` is uniformly and randomly chosen from
  *[lower_bound, upper_bound)* for training, while fixed to be
  *(lower_bound+upper_bound)/2* for inference.
- *gelu*: Gaussian Error Linear Unit. `y = 0.5 * x * (1 + erf(x / sqrt(2)))`",
            Arity::Dynamic { all: &["data", "gamma"], select: lrelu_inputs },
            LRELU_PARAMS,
            lrelu_infer,
            lrelu_compute,
        )
        .grad(lrelu_grad)
        .visible(lrelu_visible)
        .outputs(lrelu_visible)
        .output_names(lrelu_output_names)
        .fill(lrelu_fill)
        .random()
        .cost(4),
    );
    r.add(
        OpDef::new(
            "_backward_LeakyReLU",
            "Gradient of LeakyReLU.",
            Arity::Dynamic { all: &["out_grad", "data", "output", "gamma", "mask"], select: lrelu_bwd_inputs },
            LRELU_PARAMS,
            lrelu_bwd_infer,
            lrelu_bwd_compute,
        )
        .cost(4),
    );

    r.add(
        OpDef::new(
            "BatchNorm",
            "Batch normalization.

Normalizes a data batch by mean and variance, and applies a scale ``gamma`` as
well as offset ``beta``. The mean and variance are computed over every axis but
``axis`` (the channel axis, 1 by default):

.. math::

  out[:,i,:,...] = \\frac{data[:,i,:,...] - mean[i]}{\\sqrt{var[i]+\\epsilon}} * gamma[i] + beta[i]

In training mode (``autograd.train_mode()`` / ``record()``, an executor's
``is_train``) the batch's statistics are used, and the backward pass updates the
moving statistics: ``moving_mean = moving_mean * momentum + data_mean * (1 -
momentum)``, likewise ``moving_var`` with the (biased) batch variance. Otherwise, or with
``use_global_stats=True``, the moving statistics are used. With ``fix_gamma`` the
scale is fixed to 1. With ``output_mean_var=True`` the op also returns the mean
and the inverse standard deviation it used.",
            Arity::Fixed(&["data", "gamma", "beta", "moving_mean", "moving_var"]),
            BN_PARAMS,
            bn_infer,
            bn_compute,
        )
        .dtype_fill(bn_dtype_fill)
        .aliases(&["BatchNorm_v1"])
        .grad(bn_grad)
        .mutate(&[3, 4])
        .train_writes(bn_train_writes)
        .visible(mean_var_visible)
        .outputs(|_| 3)
        .output_names(|_| names(&["output", "mean", "var"]))
        .fill(bn_fill)
        .cost(4),
    );
    r.add(
        OpDef::new(
            "_backward_BatchNorm",
            "Gradient of BatchNorm: returns the gradients of data, gamma and beta. In
training mode it also updates the moving statistics from the batch's.",
            Arity::Fixed(&["out_grad", "data", "gamma", "mean", "invstd", "moving_mean", "moving_var"]),
            BN_PARAMS,
            bn_bwd_infer,
            bn_bwd_compute,
        )
        .mutate(&[5, 6])
        .cost(4),
    );

    r.add(
        OpDef::new(
            "LayerNorm",
            "Layer normalization.

Normalizes the channels of the input tensor by mean and variance, and applies a
scale ``gamma`` as well as offset ``beta``, along ``axis``:

.. math::

  out = \\frac{data - mean(data, axis)}{\\sqrt{var(data, axis) + \\epsilon}} * gamma + beta

With ``output_mean_var=True`` the op also returns the mean and the standard
deviation (``sqrt(var + eps)``), with ``axis`` kept as length 1.",
            Arity::Fixed(&["data", "gamma", "beta"]),
            LN_PARAMS,
            ln_infer,
            ln_compute,
        )
        .grad(ln_grad)
        .visible(mean_var_visible)
        .outputs(|_| 3)
        .output_names(|_| names(&["output", "mean", "std"]))
        .fill(ln_fill)
        .cost(4),
    );
    r.add(
        OpDef::new(
            "_backward_LayerNorm",
            "Gradient of LayerNorm.",
            Arity::Fixed(&["out_grad", "data", "gamma", "mean", "std"]),
            LN_PARAMS,
            norm_bwd_infer,
            ln_bwd_compute,
        )
        .cost(4),
    );

    r.add(
        OpDef::new(
            "InstanceNorm",
            "Applies instance normalization to the n-dimensional input array.

The input has shape [batch, channel, spatial_dim1, spatial_dim2, ...] (n > 2); each
(batch, channel) slice is normalised over its spatial positions:

.. math::

  out = \\frac{x - mean[data]}{ \\sqrt{Var[data] + \\epsilon}} * gamma + beta

``gamma`` and ``beta`` have shape [channel]. The same normalization is applied at
training and test time.",
            Arity::Fixed(&["data", "gamma", "beta"]),
            IN_PARAMS,
            in_infer,
            in_compute,
        )
        .grad(in_grad)
        .visible(|_| 1)
        .outputs(|_| 3)
        .output_names(|_| names(&["output", "mean", "var"]))
        .fill(in_fill)
        .cost(4),
    );
    r.add(
        OpDef::new(
            "_backward_InstanceNorm",
            "Gradient of InstanceNorm.",
            Arity::Fixed(&["out_grad", "data", "gamma", "mean", "invstd"]),
            IN_PARAMS,
            norm_bwd_infer,
            in_bwd_compute,
        )
        .cost(4),
    );

    r.add(
        OpDef::new(
            "Dropout",
            "Applies dropout operation to input array.

- During training, each element of the input is set to zero with probability p.
  The whole array is rescaled by :math:`1/(1-p)` to keep the expected
  sum of the input unchanged.

- During testing, this operator does not change the input if mode is 'training'.
  If mode is 'always', the same computation as during training will be applied.

``axes`` lists axes along which one random draw is shared (variational dropout).",
            DATA,
            DROPOUT_PARAMS,
            dropout_infer,
            dropout_compute,
        )
        .grad(dropout_grad)
        .visible(|_| 1)
        .output_names(|_| names(&["output", "mask"]))
        .random(),
    );
    r.add(
        OpDef::new(
            "_backward_Dropout",
            "Gradient of Dropout.",
            Arity::Fixed(&["out_grad", "mask"]),
            DROPOUT_PARAMS,
            two_same_infer,
            dropout_bwd_compute,
        )
        .grad(dropout_bwd_grad)
        .inplace(),
    );

    r.add(
        OpDef::new(
            "Embedding",
            "Maps integer indices to vector representations (embeddings).

This operator maps words to real-valued vectors in a high-dimensional space,
called word embeddings. If the input shape is (d1, ..., dK), the output shape is
(d1, ..., dK, output_dim). Indices are truncated toward zero and clipped to
[0, input_dim - 1]. The weight has shape (input_dim, output_dim).",
            Arity::Fixed(&["data", "weight"]),
            EMB_PARAMS,
            emb_infer,
            emb_compute,
        )
        .grad(emb_grad)
        .fill(emb_fill)
        .dtype_fill(emb_dtype_fill)
        .aliases(&["_contrib_SparseEmbedding"]),
    );
    r.add(OpDef::new(
        "_backward_Embedding",
        "Gradient of Embedding with respect to its weight (rows summed per index).",
        Arity::Fixed(&["out_grad", "data"]),
        EMB_PARAMS,
        emb_bwd_infer,
        emb_bwd_compute,
    ));

    r.add(
        OpDef::new(
            "SoftmaxOutput",
            "Computes the gradient of cross entropy loss with respect to softmax output.

- This operator computes the gradient in two steps. The cross entropy loss does not
  actually need to be computed.

  - Applies softmax function on the input array.
  - Computes and returns the gradient of cross entropy loss w.r.t. the softmax output.

- The softmax function, cross entropy loss and gradient is given by:

  - Softmax Function: :math:`\\text{softmax}(x)_i = \\frac{exp(x_i)}{\\sum_j exp(x_j)}`
  - Cross Entropy Function: :math:`\\text{CE(label, output)} = - \\sum_i \\text{label}_i \\log(\\text{output}_i)`
  - The gradient of cross entropy loss w.r.t softmax output: :math:`\\text{gradient} = \\text{output} - \\text{label}`

The backward pass ignores the head gradient (unless ``out_grad``): the gradient is
``(softmax(data) - onehot(label)) * grad_scale``, normalised by ``normalization``.
With ``multi_output`` the softmax is over axis 1 and the label has shape
(n, d2*d3*...); with ``preserve_shape`` it is over the last axis; a label of the
data's shape is taken as probabilities.",
            DATA_LABEL,
            SMO_PARAMS,
            smo_infer,
            smo_compute,
        )
        .aliases(&["Softmax"])
        .grad(smo_grad)
        .fill(smo_fill)
        .cost(8),
    );
    r.add(
        OpDef::new(
            "_backward_SoftmaxOutput",
            "Gradient of SoftmaxOutput.",
            Arity::Fixed(&["ograd", "label", "output"]),
            SMO_PARAMS,
            smo_bwd_infer,
            smo_bwd_compute,
        )
        .cost(4),
    );

    r.add(
        OpDef::new(
            "SoftmaxActivation",
            "Applies softmax activation to input. This is intended for internal layers.

With ``mode=instance`` the softmax is along the last axis; with ``mode=channel``
it is along axis 1 (across channels, for every position of every instance).",
            DATA,
            SMA_PARAMS,
            sma_infer,
            sma_compute,
        )
        .unnamed_inputs()
        .grad(sma_grad)
        .cost(8),
    );
    r.add(
        OpDef::new(
            "_backward_SoftmaxActivation",
            "Gradient of SoftmaxActivation.",
            Arity::Fixed(&["out_grad", "output"]),
            SMA_PARAMS,
            two_same_infer,
            sma_bwd_compute,
        )
        .cost(4),
    );

    const REG_DOC: &str = "The backward pass ignores the head gradient: the gradient is
``grad_scale / num_output * d`` where ``num_output`` is the label's size over its
first dimension.";
    let reg = [
        ("LinearRegressionOutput", "Computes and optimizes for squared loss during backward propagation. Just outputs ``data`` during forward propagation; the gradient is ``out - label``.", "_backward_linear_reg_out"),
        ("MAERegressionOutput", "Computes mean absolute error of the input. Just outputs ``data`` during forward propagation; the gradient is ``sign(out - label)``.", "_backward_mae_reg_out"),
        ("LogisticRegressionOutput", "Applies a logistic function to the input: ``1/(1+exp(-data))`` during forward propagation; the gradient is ``out - label``.", "_backward_logistic_reg_out"),
    ];
    let doc = |s: &str| -> &'static str { Box::leak(format!("{s}\n\n{REG_DOC}").into_boxed_str()) };
    r.add(OpDef::new(reg[0].0, doc(reg[0].1), DATA_LABEL, REG_PARAMS, reg_infer, reg_compute::<0>).grad(reg_grad::<0>).fill(reg_fill));
    r.add(OpDef::new(reg[1].0, doc(reg[1].1), DATA_LABEL, REG_PARAMS, reg_infer, reg_compute::<1>).grad(reg_grad::<1>).fill(reg_fill));
    r.add(
        OpDef::new(reg[2].0, doc(reg[2].1), DATA_LABEL, REG_PARAMS, reg_infer, reg_compute::<2>).grad(reg_grad::<2>).fill(reg_fill).cost(4),
    );
    let lo = Arity::Fixed(&["label", "output"]);
    r.add(OpDef::new(reg[0].2, "Gradient of LinearRegressionOutput.", lo, REG_PARAMS, reg_bwd_infer, reg_bwd_compute::<0>));
    r.add(OpDef::new(reg[1].2, "Gradient of MAERegressionOutput.", lo, REG_PARAMS, reg_bwd_infer, reg_bwd_compute::<1>));
    r.add(OpDef::new(reg[2].2, "Gradient of LogisticRegressionOutput.", lo, REG_PARAMS, reg_bwd_infer, reg_bwd_compute::<0>));

    r.add(
        OpDef::new(
            "BlockGrad",
            "Stops gradient computation.

Stops the accumulated gradient of the inputs from flowing through this operator
in the backward direction. In other words, this operator prevents the contribution
of its inputs to be taken into account for computing gradients.",
            DATA,
            &[],
            any_infer,
            copy_compute,
        )
        .unnamed_inputs()
        .aliases(&["stop_gradient"])
        .grad(block_grad)
        .inplace(),
    );
    r.add(
        OpDef::new(
            "make_loss",
            "Make your own loss function in network construction.

The output is the input; in the backward pass the gradient of the input is ones
(the head gradient is ignored), so the array can end a network as its loss.",
            DATA,
            &[],
            any_infer,
            copy_compute,
        )
        .unnamed_inputs()
        .grad(make_loss_grad)
        .inplace(),
    );
    r.add(
        OpDef::new(
            "MakeLoss",
            "Make your own loss function in network construction.

The output is the input. In the backward pass the gradient of the input is
``grad_scale`` (the head gradient is ignored), divided by the batch size
(``normalization='batch'``) or by the number of elements greater than
``valid_thresh`` (``normalization='valid'``).",
            DATA,
            MAKELOSS_PARAMS,
            makeloss_infer,
            copy_compute,
        )
        .grad(makeloss_grad)
        .inplace(),
    );
    r.add(OpDef::new("_backward_MakeLoss", "Gradient of MakeLoss.", DATA, MAKELOSS_PARAMS, makeloss_infer, makeloss_bwd_compute));
}

#[cfg(test)]
mod tests {
    use super::super::{call, Value};
    use crate::context::Context;
    use crate::ndarray::NDArray;

    fn arr(shape: &[usize], v: &[f64]) -> NDArray {
        NDArray::from_vec(shape, v, Context::cpu(0)).unwrap()
    }
    fn vals(a: &NDArray) -> Vec<f64> {
        a.to_vec::<f64>().unwrap()
    }
    fn close(a: &[f64], b: &[f64], tol: f64) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{a:?} vs {b:?}");
        }
    }
    fn s(v: &str) -> Value {
        Value::Str(v.into())
    }

    /// Numeric gradient of sum(op(x) * w) with respect to input `which`.
    fn num_grad(f: &dyn Fn(&[NDArray]) -> NDArray, ins: &[NDArray], which: usize, w: &[f64]) -> Vec<f64> {
        let base: Vec<Vec<f64>> = ins.iter().map(vals).collect();
        let mut out = vec![0.0; base[which].len()];
        let h = 1e-6;
        for (j, o) in out.iter_mut().enumerate() {
            let val = |d: f64| {
                let mut v = base[which].clone();
                v[j] += d;
                let mut args = ins.to_vec();
                args[which] = arr(ins[which].shape(), &v);
                vals(&f(&args)).iter().zip(w).map(|(a, b)| a * b).sum::<f64>()
            };
            *o = (val(h) - val(-h)) / (2.0 * h);
        }
        out
    }

    #[test]
    fn activation_grads_match_finite_differences() {
        let x = arr(&[2, 3], &[-1.5, -0.3, 0.2, 0.7, 1.9, -2.2]);
        let w = [0.3, -1.0, 0.5, 2.0, 1.0, -0.7];
        let g = arr(&[2, 3], &w);
        for act in ["relu", "sigmoid", "tanh", "softrelu", "softsign"] {
            let op = super::super::lookup("Activation").unwrap();
            let p = op.parse(vec![("act_type".into(), s(act))]).unwrap();
            let y = super::super::invoke(op, &[x.clone()], p.clone(), None, None).unwrap();
            let dx = super::act_grad(&p, &[x.clone()], &y, &[g.clone()]).unwrap()[0].clone().unwrap();
            let f = |a: &[NDArray]| call("Activation", a, &[("act_type", s(act))]).unwrap().remove(0);
            close(&vals(&dx), &num_grad(&f, &[x.clone()], 0, &w), 1e-5);
        }
        for act in ["leaky", "elu", "selu", "gelu"] {
            let f = |a: &[NDArray]| call("LeakyReLU", a, &[("act_type", s(act)), ("slope", Value::Float(0.2))]).unwrap().remove(0);
            let op = super::super::lookup("LeakyReLU").unwrap();
            let p = op.parse(vec![("act_type".into(), s(act)), ("slope".into(), Value::Float(0.2))]).unwrap();
            let y = super::super::invoke(op, &[x.clone()], p.clone(), None, None).unwrap();
            let dx = super::lrelu_grad(&p, &[x.clone()], &y, &[g.clone()]).unwrap()[0].clone().unwrap();
            close(&vals(&dx), &num_grad(&f, &[x.clone()], 0, &w), 1e-5);
        }
    }

    #[test]
    fn batchnorm_training_updates_moving_stats_and_grads_match() {
        let xv: Vec<f64> = (0..24).map(|i| ((i * 7 % 11) as f64) * 0.3 - 1.0).collect();
        let x = arr(&[2, 3, 4], &xv);
        let gamma = arr(&[3], &[1.0, 2.0, 0.5]);
        let beta = arr(&[3], &[0.1, 0.2, 0.3]);
        let mm = arr(&[3], &[0.0; 3]);
        let mv = arr(&[3], &[1.0; 3]);
        let prev = crate::autograd::set_training(true);
        let attrs = [("fix_gamma", Value::Bool(false))];
        let out = call("BatchNorm", &[x.clone(), gamma.clone(), beta.clone(), mm.clone(), mv.clone()], &attrs).unwrap();
        // Channel 0's batch statistics.
        let c0: Vec<f64> = (0..24).filter(|i| (i / 4) % 3 == 0).map(|i| xv[i]).collect();
        let m0 = c0.iter().sum::<f64>() / 8.0;
        let v0 = c0.iter().map(|v| (v - m0) * (v - m0)).sum::<f64>() / 8.0;
        close(&vals(&out[1])[..1], &[m0], 1e-12);
        close(&vals(&out[2])[..1], &[1.0 / (v0 + 1e-3).sqrt()], 1e-12);
        // The forward leaves the moving statistics alone; the backward updates them.
        close(&vals(&mm), &[0.0; 3], 0.0);
        close(&vals(&mv), &[1.0; 3], 0.0);
        // Gradients against finite differences of the training-mode forward.
        let w: Vec<f64> = (0..24).map(|i| ((i * 5 % 7) as f64) - 3.0).collect();
        let op = super::super::lookup("BatchNorm").unwrap();
        let p = op.parse(vec![("fix_gamma".into(), Value::Bool(false))]).unwrap();
        let grads =
            super::bn_grad(&p, &[x.clone(), gamma.clone(), beta.clone(), mm.clone(), mv.clone()], &out, &[arr(&[2, 3, 4], &w)]).unwrap();
        close(&vals(&mm)[..1], &[0.1 * m0], 1e-12);
        close(&vals(&mv)[..1], &[0.9 + 0.1 * v0], 1e-9);
        let f = |a: &[NDArray]| {
            let aux = [arr(&[3], &[0.0; 3]), arr(&[3], &[1.0; 3])];
            call("BatchNorm", &[a[0].clone(), a[1].clone(), a[2].clone(), aux[0].clone(), aux[1].clone()], &attrs).unwrap().remove(0)
        };
        let ins = [x.clone(), gamma.clone(), beta.clone()];
        for (j, gr) in grads.iter().take(3).enumerate() {
            close(&vals(gr.as_ref().unwrap()), &num_grad(&f, &ins, j, &w), 1e-4);
        }
        assert!(grads[3].is_none() && grads[4].is_none());
        crate::autograd::set_training(prev);
    }

    #[test]
    fn layer_and_instance_norm_grads_match() {
        let xv: Vec<f64> = (0..24).map(|i| ((i * 7 % 13) as f64) * 0.25 - 1.0).collect();
        let x = arr(&[2, 3, 4], &xv);
        let w: Vec<f64> = (0..24).map(|i| ((i * 5 % 7) as f64) - 3.0).collect();
        for axis in [-1i64, 1, 0] {
            let c = [2usize, 3, 4][axis.rem_euclid(3) as usize];
            let gamma = arr(&[c], &(0..c).map(|i| 1.0 + i as f64 * 0.3).collect::<Vec<_>>());
            let beta = arr(&[c], &(0..c).map(|i| i as f64 * 0.1).collect::<Vec<_>>());
            let attrs = [("axis", Value::Int(axis))];
            let f = |a: &[NDArray]| call("LayerNorm", a, &attrs).unwrap().remove(0);
            let ins = [x.clone(), gamma, beta];
            let out = call("LayerNorm", &ins, &attrs).unwrap();
            let p = super::super::lookup("LayerNorm").unwrap().parse(vec![("axis".into(), Value::Int(axis))]).unwrap();
            let grads = super::ln_grad(&p, &ins, &out, &[arr(&[2, 3, 4], &w)]).unwrap();
            for j in 0..3 {
                close(&vals(grads[j].as_ref().unwrap()), &num_grad(&f, &ins, j, &w), 1e-4);
            }
        }
        let x = arr(&[2, 3, 2, 2], &xv);
        let ins = [x, arr(&[3], &[1.0, 0.5, 2.0]), arr(&[3], &[0.0, 1.0, -1.0])];
        let f = |a: &[NDArray]| call("InstanceNorm", a, &[]).unwrap().remove(0);
        let out = call("InstanceNorm", &ins, &[]).unwrap();
        let p = super::super::lookup("InstanceNorm").unwrap().parse(vec![]).unwrap();
        let grads = super::in_grad(&p, &ins, &out, &[arr(&[2, 3, 2, 2], &w)]).unwrap();
        for j in 0..3 {
            close(&vals(grads[j].as_ref().unwrap()), &num_grad(&f, &ins, j, &w), 1e-4);
        }
    }

    #[test]
    fn softmax_output_gradient_ignores_head() {
        let x = arr(&[2, 3], &[1.0, 2.0, 3.0, 0.5, 0.5, -1.0]);
        let l = arr(&[2], &[2.0, 0.0]);
        let y = call("SoftmaxOutput", &[x.clone(), l.clone()], &[]).unwrap();
        let p = super::super::lookup("SoftmaxOutput").unwrap().parse(vec![("grad_scale".into(), Value::Float(2.0))]).unwrap();
        let g = super::smo_grad(&p, &[x, l], &y, &[arr(&[2, 3], &[9.0; 6])]).unwrap();
        let yv = vals(&y[0]);
        let want: Vec<f64> = yv.iter().enumerate().map(|(i, v)| 2.0 * (v - if i == 2 || i == 3 { 1.0 } else { 0.0 })).collect();
        close(&vals(g[0].as_ref().unwrap()), &want, 1e-12);
        assert!(g[1].is_none());
    }

    #[test]
    fn fill_infers_parameter_shapes() {
        let bn = super::super::lookup("BatchNorm").unwrap();
        let p = bn.parse(vec![]).unwrap();
        let mut shapes = vec![Some(crate::shape::Shape::from_slice(&[2, 5, 3])), None, None, None, None];
        (bn.fill.unwrap())(&p, &mut shapes).unwrap();
        assert!(shapes[1..].iter().all(|s| s.as_deref() == Some(&[5usize][..])));
        shapes[2] = Some(crate::shape::Shape::from_slice(&[4]));
        assert!((bn.fill.unwrap())(&p, &mut shapes).is_err());
        let e = super::super::lookup("Embedding").unwrap();
        let p = e.parse(vec![("input_dim".into(), Value::Int(7)), ("output_dim".into(), Value::Int(3))]).unwrap();
        let mut shapes = vec![None, None];
        (e.fill.unwrap())(&p, &mut shapes).unwrap();
        assert_eq!(shapes[1].as_deref(), Some(&[7usize, 3][..]));
        let so = super::super::lookup("SoftmaxOutput").unwrap();
        let p = so.parse(vec![("multi_output".into(), Value::Bool(true))]).unwrap();
        let mut shapes = vec![Some(crate::shape::Shape::from_slice(&[4, 5, 6])), None];
        (so.fill.unwrap())(&p, &mut shapes).unwrap();
        assert_eq!(shapes[1].as_deref(), Some(&[4usize, 6][..]));
    }
}
