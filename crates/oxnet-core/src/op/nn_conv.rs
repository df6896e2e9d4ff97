//! The compute-heavy neural-network layers: `FullyConnected`, `Convolution`,
//! `Deconvolution` and `Pooling` (1-, 2- and 3-D), their backward ops
//! (`_backward_FullyConnected`, `_backward_Convolution`, `_backward_Deconvolution`,
//! `_backward_Pooling`, named as in MXNet) and the gradients that call them.
//!
//! Parameters, defaults, shapes and errors follow MXNet 1.9.1. Kernels live in
//! `kernels::cpu::conv` (im2col + GEMM); this file owns parameter checking, shape
//! inference (forward and, for symbols, the backward `fill` of weight and bias
//! shapes) and dispatch.
//!
//! The backward ops take `(out_grad, data, weight)` (Pooling: `(out_grad, data,
//! output)`) with the forward op's parameters and return the gradients of the
//! forward inputs in order (`data`, `weight`, and `bias` unless `no_bias`).
//!
//! Where oxnet differs from MXNet 1.9.1:
//! - channels-last layouts (`NWC`, `NHWC`, `NDHWC`) are accepted by Pooling, but
//!   Convolution and Deconvolution reject them (MXNet supports them only on GPU);
//! - integer inputs are rejected (float32, float64 and float16 are supported);
//! - `pooling_convention='same'` works for 1-D pooling (MXNet accepts the shape and
//!   then fails); Deconvolution's `target_shape` with an odd padding (which MXNet's
//!   MKL-DNN path fails to run) is computed;
//! - `count_include_pad` is a boolean defaulting to True (MXNet's default `None`
//!   means True).

use super::{check_same_dtype, grad_wanted, invoke, lookup, Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::cpu::conv::{self as k, ConvElem, ConvGeom, PoolGeom, PoolKind};
use crate::kernels::cpu::gemm::gemm;
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};
use crate::with_float;

const LAYOUTS: &[&str] = &["None", "NCDHW", "NCHW", "NCW", "NDHWC", "NHWC"];
const POOL_LAYOUTS: &[&str] = &["None", "NCDHW", "NCHW", "NCW", "NDHWC", "NHWC", "NWC"];
const CUDNN_TUNE: &[&str] = &["None", "fastest", "limited_workspace", "off"];
const WITH_BIAS: &[&str] = &["data", "weight", "bias"];
const NO_BIAS: &[&str] = &["data", "weight"];

fn select_inputs(p: &Params) -> &'static [&'static str] {
    if p.bool("no_bias") {
        NO_BIAS
    } else {
        WITH_BIAS
    }
}

const DWB: Arity = Arity::Dynamic { all: WITH_BIAS, select: select_inputs };
const BACKWARD_IN: Arity = Arity::Fixed(&["out_grad", "data", "weight"]);

/// The inputs' common dtype, which must be a float type.
fn float_dtype(a: &InferArgs) -> Result<DType> {
    let d = check_same_dtype(a)?;
    if !d.is_float() {
        return Err(a.err(format!("{} inputs are not supported: {} needs float32, float64 or float16", d.name(), a.op.name)));
    }
    Ok(d)
}

fn tf(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

fn fmt_tuple(t: &[usize]) -> String {
    fmt_shape(t)
}

/// Checks a shape given for an input against the one the op expects.
fn expect_shape(op: &str, what: &str, got: &[usize], want: &[usize], why: impl FnOnce() -> String) -> Result<()> {
    if got != want {
        return Err(Error::op(op, format!("{what} has shape {} but {} expects {} ({})", fmt_shape(got), op, fmt_shape(want), why())));
    }
    Ok(())
}

/// Fills `slot` with `want`, or checks it against `want` when already known.
fn fill_slot(op: &str, what: &str, slot: &mut Option<Shape>, want: Shape) -> Result<()> {
    match slot {
        Some(s) if !s.is_empty() && s[..] != want[..] => {
            Err(Error::op(op, format!("Shape inconsistent: {what} is given as {} but inferred as {}", fmt_shape(s), fmt_shape(&want))))
        }
        _ => {
            *slot = Some(want);
            Ok(())
        }
    }
}

// ---- FullyConnected -----------------------------------------------------------------

const FC_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("num_hidden", PType::Int, None, "Number of hidden nodes of the output."),
    ParamSpec::new("no_bias", PType::Bool, Some("False"), "Whether to disable bias parameter."),
    ParamSpec::new("flatten", PType::Bool, Some("True"), "Whether to collapse all but the first axis of the input data tensor."),
];

/// (rows, in_units, out shape) of a FullyConnected on `data`.
pub(super) fn fc_geom(op: &str, p: &Params, data: &[usize]) -> Result<(usize, usize, Shape)> {
    let h = p.int("num_hidden");
    if h <= 0 {
        return Err(Error::op(op, format!("num_hidden must be positive, got {h}")));
    }
    if data.is_empty() {
        return Err(Error::op(op, "data must have at least one dimension, got a 0-d array"));
    }
    let h = h as usize;
    if p.bool("flatten") {
        let k = data[1..].iter().product();
        Ok((data[0], k, Shape::from_slice(&[data[0], h])))
    } else {
        let k = data[data.len() - 1];
        let mut out = Shape::from_slice(data);
        *out.last_mut().unwrap() = h;
        Ok((data[..data.len() - 1].iter().product(), k, out))
    }
}

fn fc_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let op = a.op.name;
    let (_, kin, out) = fc_geom(op, a.params, a.shapes[0])?;
    let h = a.params.int("num_hidden") as usize;
    expect_shape(op, "weight", a.shapes[1], &[h, kin], || {
        format!("(num_hidden, in_units) for data {} with num_hidden={h}, flatten={}", fmt_shape(a.shapes[0]), tf(a.params.bool("flatten")))
    })?;
    // MXNet also takes a (num_hidden, 1) bias (the same values).
    if a.shapes.len() > 2 && a.shapes[2] != [h, 1] {
        expect_shape(op, "bias", a.shapes[2], &[h], || format!("(num_hidden,) with num_hidden={h}"))?;
    }
    Ok(vec![(out, float_dtype(a)?)])
}

fn fc_fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let op = "FullyConnected";
    let h = p.int("num_hidden").max(0) as usize;
    if let Some(Some(d)) = shapes.first().cloned() {
        let (_, kin, _) = fc_geom(op, p, &d)?;
        fill_slot(op, "weight", &mut shapes[1], Shape::from_slice(&[h, kin]))?;
    }
    if shapes.len() > 2 {
        fill_slot(op, "bias", &mut shapes[2], Shape::from_slice(&[h]))?;
    }
    Ok(())
}

fn fc_run<T: ConvElem>(c: &OpCall) -> Result<()> {
    let (rows, kin, _) = fc_geom(c.op.name, c.params, &c.inputs[0].shape)?;
    let h = c.params.int("num_hidden") as usize;
    let bias = c.inputs.get(2).map(|b| b.ptr_as::<T>() as *const T);
    // SAFETY: shapes were checked by inference; the output is fresh or a
    // non-aliasing `out` (invoke copies through a temporary otherwise).
    unsafe { k::fc_forward::<T>(rows, kin, h, c.inputs[0].ptr_as(), c.inputs[1].ptr_as(), bias, c.outputs[0].ptr_as()) };
    Ok(())
}

fn fc_compute(c: &mut OpCall) -> Result<()> {
    with_float!(c.outputs[0].dtype, T, { fc_run::<T>(c) })
}

fn fc_backward_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let op = a.op.name;
    let (_, kin, out) = fc_geom(op, a.params, a.shapes[1])?;
    let h = a.params.int("num_hidden") as usize;
    expect_shape(op, "out_grad", a.shapes[0], &out, || "the output's shape".into())?;
    expect_shape(op, "weight", a.shapes[2], &[h, kin], || "(num_hidden, in_units)".into())?;
    let d = float_dtype(a)?;
    let mut v = vec![(Shape::from_slice(a.shapes[1]), d), (Shape::from_slice(&[h, kin]), d)];
    if !a.params.bool("no_bias") {
        v.push((Shape::from_slice(&[h]), d));
    }
    Ok(without_data_grad(a, v))
}

/// The `_weight` variants of the backward ops (`_backward_Convolution_weight`,
/// `_backward_FullyConnected_weight`) take the same inputs and compute the same
/// gradients, less the data gradient: what a layer needs when its input gets no
/// gradient (the first layer of a net, fed the batch).
pub(super) fn skips_data_grad(op: &str) -> bool {
    op.ends_with("_weight")
}

/// The backward outputs `v` (data, weight, bias), less the data gradient for the
/// `_weight` variants.
fn without_data_grad(a: &InferArgs, mut v: Vec<(Shape, DType)>) -> Vec<(Shape, DType)> {
    if skips_data_grad(a.op.name) {
        v.remove(0);
    }
    v
}

fn fc_backward_run<T: ConvElem>(c: &OpCall) -> Result<()> {
    let (rows, kin, _) = fc_geom(c.op.name, c.params, &c.inputs[1].shape)?;
    let h = c.params.int("num_hidden") as usize;
    let (dy, x, w) = (c.inputs[0].ptr_as::<T>(), c.inputs[1].ptr_as::<T>(), c.inputs[2].ptr_as::<T>());
    let one = T::from_f64(1.0);
    let (dx, rest) = if skips_data_grad(c.op.name) { (None, c.outputs) } else { (Some(&c.outputs[0]), &c.outputs[1..]) };
    // SAFETY: shapes checked by inference; outputs are distinct fresh arrays.
    unsafe {
        if let Some(dx) = dx {
            // dx (rows×k) = dy (rows×h) · w (h×k)
            gemm::<T>(rows, kin, h, one, dy, h, false, w, kin, false, T::zero(), dx.ptr_as(), kin);
        }
        // dw (h×k) = dyᵀ (h×rows) · x (rows×k)
        gemm::<T>(h, kin, rows, one, dy, h, true, x, kin, false, T::zero(), rest[0].ptr_as(), kin);
        if let Some(db) = rest.get(1) {
            k::column_sum::<T>(dy, db.ptr_as(), rows, h);
        }
    }
    Ok(())
}

fn fc_backward_compute(c: &mut OpCall) -> Result<()> {
    with_float!(c.outputs[0].dtype, T, { fc_backward_run::<T>(c) })
}

/// Gradient of a layer whose backward op `name` takes `(out_grad, data, weight)`;
/// through `weight_only` (its `_weight` variant, where there is one) when the data
/// gradient is not wanted.
fn grad_dwb(name: &str, weight_only: Option<&str>, p: &Params, inputs: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    let (op, with_dx) = match weight_only {
        Some(w) if !grad_wanted(0) => (lookup(w)?, false),
        _ => (lookup(name)?, true),
    };
    let outs = invoke(op, &[og[0].clone(), inputs[0].clone(), inputs[1].clone()], p.clone(), None, None)?;
    let lead = if with_dx { None } else { Some(None) };
    Ok(lead.into_iter().chain(outs.into_iter().map(Some)).collect())
}

fn fc_grad(p: &Params, inputs: &[NDArray], _outputs: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    if crate::autograd::is_recording() {
        return fc_grad_recorded(inputs, og);
    }
    grad_dwb("_backward_FullyConnected", Some("_backward_FullyConnected_weight"), p, inputs, og)
}

/// FullyConnected's gradient made of `dot` and `sum`, for a backward that is
/// recorded (`create_graph`) so that it can be differentiated again.
fn fc_grad_recorded(inputs: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    use super::{call1, Value};
    let (x, w) = (&inputs[0], &inputs[1]);
    let (h, kin) = (w.shape()[0], w.shape()[1]);
    let rows = x.size() / kin.max(1);
    let reshape = |a: &NDArray, s: &[usize]| {
        call1("Reshape", std::slice::from_ref(a), &[("shape", Value::Tuple(s.iter().map(|&d| d as i64).collect()))])
    };
    let g2 = reshape(&og[0], &[rows, h])?;
    let dx = reshape(&call1("dot", &[g2.clone(), w.clone()], &[])?, x.shape())?;
    let dw = call1("dot", &[g2.clone(), reshape(x, &[rows, kin])?], &[("transpose_a", Value::Bool(true))])?;
    let mut grads = vec![Some(dx), Some(dw)];
    if inputs.len() > 2 {
        grads.push(Some(call1("sum", &[g2], &[("axis", Value::Tuple(vec![0]))])?));
    }
    Ok(grads)
}

// ---- Convolution / Deconvolution -----------------------------------------------------

pub(super) const CONV_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("kernel", PType::Tuple, None, "Convolution kernel size: (w,), (h, w) or (d, h, w)"),
    ParamSpec::new("stride", PType::Tuple, Some("[]"), "Convolution stride: (w,), (h, w) or (d, h, w). Defaults to 1 for each dimension."),
    ParamSpec::new("dilate", PType::Tuple, Some("[]"), "Convolution dilate: (w,), (h, w) or (d, h, w). Defaults to 1 for each dimension."),
    ParamSpec::new("pad", PType::Tuple, Some("[]"), "Zero pad for convolution: (w,), (h, w) or (d, h, w). Defaults to no padding."),
    ParamSpec::new("num_filter", PType::Int, None, "Convolution filter(channel) number"),
    ParamSpec::new("num_group", PType::Int, Some("1"), "Number of group partitions."),
    ParamSpec::new("workspace", PType::Int, Some("1024"), "Maximum temporary workspace allowed (MB) in convolution. (Accepted for compatibility; oxnet sizes its own scratch.)"),
    ParamSpec::new("no_bias", PType::Bool, Some("False"), "Whether to disable bias parameter."),
    ParamSpec::choice("cudnn_tune", CUDNN_TUNE, Some("None"), "Whether to pick convolution algo by running performance test."),
    ParamSpec::new("cudnn_off", PType::Bool, Some("False"), "Turn off cudnn for this layer."),
    ParamSpec::choice(
        "layout",
        LAYOUTS,
        Some("None"),
        "Set layout for input, output and weight. Empty for default layout: NCW for 1d, NCHW for 2d and NCDHW for 3d. NHWC and NDHWC are only supported on GPU.",
    ),
];

const DECONV_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("kernel", PType::Tuple, None, "Deconvolution kernel size: (w,), (h, w) or (d, h, w). This is same as the kernel size used for the corresponding convolution"),
    ParamSpec::new("stride", PType::Tuple, Some("[]"), "The stride used for the corresponding convolution: (w,), (h, w) or (d, h, w). Defaults to 1 for each dimension."),
    ParamSpec::new("dilate", PType::Tuple, Some("[]"), "Dilation factor for each dimension of the input: (w,), (h, w) or (d, h, w). Defaults to 1 for each dimension."),
    ParamSpec::new("pad", PType::Tuple, Some("[]"), "The amount of implicit zero padding added during convolution for each dimension of the input: (w,), (h, w) or (d, h, w). If `target_shape` is set, `pad` will be ignored and a padding that will generate the target shape will be used. Defaults to no padding."),
    ParamSpec::new("adj", PType::Tuple, Some("[]"), "Adjustment for output shape: (w,), (h, w) or (d, h, w). If `target_shape` is set, `adj` will be ignored and computed accordingly."),
    ParamSpec::new("target_shape", PType::Tuple, Some("[]"), "Shape of the output tensor: (w,), (h, w) or (d, h, w)."),
    ParamSpec::new("num_filter", PType::Int, None, "Number of output filters."),
    ParamSpec::new("num_group", PType::Int, Some("1"), "Number of groups partition."),
    ParamSpec::new("workspace", PType::Int, Some("512"), "Maximum temporary workspace allowed (MB) in deconvolution. (Accepted for compatibility; oxnet sizes its own scratch.)"),
    ParamSpec::new("no_bias", PType::Bool, Some("True"), "Whether to disable bias parameter."),
    ParamSpec::choice("cudnn_tune", CUDNN_TUNE, Some("None"), "Whether to pick convolution algorithm by running performance test."),
    ParamSpec::new("cudnn_off", PType::Bool, Some("False"), "Turn off cudnn for this layer."),
    ParamSpec::choice(
        "layout",
        LAYOUTS,
        Some("None"),
        "Set layout for input, output and weight. Empty for default layout, NCW for 1d, NCHW for 2d and NCDHW for 3d. NHWC and NDHWC are only supported on GPU.",
    ),
];

/// Spatial names for error messages.
fn layout_name(nd: usize) -> &'static str {
    ["NCW", "NCHW", "NCDHW"][nd - 1]
}

/// A per-axis tuple parameter: `default` when empty, else exactly `nd` values,
/// each at least `min`. Returned padded to 3 axes (leading `fill`).
fn axis_param(op: &str, p: &Params, name: &str, nd: usize, default: usize, min: i64, fill: usize) -> Result<[usize; 3]> {
    let t = p.tuple(name);
    let mut out = [fill; 3];
    if t.is_empty() {
        for o in out.iter_mut().skip(3 - nd) {
            *o = default;
        }
        return Ok(out);
    }
    if t.len() != nd {
        return Err(Error::op(
            op,
            format!(
                "{name} must have the same number of dimensions as kernel: kernel has {nd} but {name} is {}",
                super::params::value_to_string(p.get(name))
            ),
        ));
    }
    for (i, &v) in t.iter().enumerate() {
        if v < min {
            return Err(Error::op(
                op,
                format!(
                    "{name} must be {} along every axis, got {}",
                    if min == 0 { "non-negative" } else { "positive" },
                    super::params::value_to_string(p.get(name))
                ),
            ));
        }
        out[3 - nd + i] = v as usize;
    }
    Ok(out)
}

/// The checked kernel-related parameters of a (de)convolution.
struct ConvParams {
    nd: usize,
    kernel: [usize; 3],
    stride: [usize; 3],
    dilate: [usize; 3],
    pad: [usize; 3],
    num_filter: usize,
    groups: usize,
}

fn conv_params(op: &str, p: &Params) -> Result<ConvParams> {
    let kt = p.tuple("kernel");
    let nd = kt.len();
    if !(1..=3).contains(&nd) {
        return Err(Error::op(
            op,
            format!(
                "kernel must have 1, 2 or 3 dimensions ((w,), (h, w) or (d, h, w)), got {}",
                super::params::value_to_string(p.get("kernel"))
            ),
        ));
    }
    let kernel = axis_param(op, p, "kernel", nd, 1, 1, 1)?;
    let stride = axis_param(op, p, "stride", nd, 1, 1, 1)?;
    let dilate = axis_param(op, p, "dilate", nd, 1, 1, 1)?;
    let pad = axis_param(op, p, "pad", nd, 0, 0, 0)?;
    let num_filter = p.int("num_filter");
    let groups = p.int("num_group");
    if num_filter <= 0 {
        return Err(Error::op(op, format!("num_filter must be positive, got {num_filter}")));
    }
    if groups <= 0 {
        return Err(Error::op(op, format!("num_group must be positive, got {groups}")));
    }
    let layout = p.str("layout");
    if layout != "None" && layout != layout_name(nd) {
        if layout.ends_with('C') {
            return Err(Error::op(
                op,
                format!("layout {layout} is only supported on GPU (as in MXNet); use the channels-first layout {} on CPU", layout_name(nd)),
            ));
        }
        return Err(Error::op(
            op,
            format!("layout {layout} does not match the {nd}-D kernel {}: expected {}", fmt_tuple(&kernel[3 - nd..]), layout_name(nd)),
        ));
    }
    Ok(ConvParams { nd, kernel, stride, dilate, pad, num_filter: num_filter as usize, groups: groups as usize })
}

fn check_data_ndim(op: &str, cp: &ConvParams, data: &[usize]) -> Result<()> {
    if data.len() != cp.nd + 2 {
        let names = ["(batch, channel, width)", "(batch, channel, height, width)", "(batch, channel, depth, height, width)"];
        return Err(Error::op(
            op,
            format!(
                "data must be {}-D {} for the {}-D kernel {}, got shape {}",
                cp.nd + 2,
                names[cp.nd - 1],
                cp.nd,
                fmt_tuple(&cp.kernel[3 - cp.nd..]),
                fmt_shape(data)
            ),
        ));
    }
    Ok(())
}

fn pad3(sp: &[usize]) -> [usize; 3] {
    let mut out = [1; 3];
    out[3 - sp.len()..].copy_from_slice(sp);
    out
}

/// The geometry of `Convolution` on `data`, all checks included.
pub(super) fn conv_geom(op: &str, p: &Params, data: &[usize]) -> Result<ConvGeom> {
    let cp = conv_params(op, p)?;
    check_data_ndim(op, &cp, data)?;
    let (c, f, g) = (data[1], cp.num_filter, cp.groups);
    if c % g != 0 || f % g != 0 {
        return Err(Error::op(
            op,
            format!("num_group={g} must divide both the input channels ({c}, data {}) and num_filter ({f})", fmt_shape(data)),
        ));
    }
    let x = pad3(&data[2..]);
    let mut y = [1; 3];
    for i in 3 - cp.nd..3 {
        y[i] = ConvGeom::out_size(x[i], cp.kernel[i], cp.stride[i], cp.dilate[i], cp.pad[i]).ok_or_else(|| {
            Error::op(
                op,
                format!(
                    "kernel size exceeds input: the dilated kernel is {} along axis {} but the padded input is {} (data {}, kernel {}, dilate {}, pad {})",
                    cp.dilate[i] * (cp.kernel[i] - 1) + 1,
                    i - (3 - cp.nd) + 2,
                    x[i] + 2 * cp.pad[i],
                    fmt_shape(data),
                    fmt_tuple(&cp.kernel[3 - cp.nd..]),
                    fmt_tuple(&cp.dilate[3 - cp.nd..]),
                    fmt_tuple(&cp.pad[3 - cp.nd..]),
                ),
            )
        })?;
    }
    Ok(ConvGeom { batch: data[0], c, f, groups: g, x, y, k: cp.kernel, s: cp.stride, d: cp.dilate, p: cp.pad })
}

fn weight_shape(f: usize, cg: usize, cp_k: &[usize; 3], nd: usize) -> Shape {
    let mut w = Shape::from_slice(&[f, cg]);
    w.extend_from_slice(&cp_k[3 - nd..]);
    w
}

fn out_shape(batch: usize, ch: usize, sp: &[usize; 3], nd: usize) -> Shape {
    let mut s = Shape::from_slice(&[batch, ch]);
    s.extend_from_slice(&sp[3 - nd..]);
    s
}

fn nd_of(p: &Params) -> usize {
    p.tuple("kernel").len().clamp(1, 3)
}

fn conv_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let op = a.op.name;
    let g = conv_geom(op, a.params, a.shapes[0])?;
    let nd = nd_of(a.params);
    let w = weight_shape(g.f, g.cg(), &g.k, nd);
    expect_shape(op, "weight", a.shapes[1], &w, || {
        format!(
            "(num_filter, in_channels / num_group, *kernel) for data {} with num_filter={}, num_group={}",
            fmt_shape(a.shapes[0]),
            g.f,
            g.groups
        )
    })?;
    if a.shapes.len() > 2 {
        expect_shape(op, "bias", a.shapes[2], &[g.f], || format!("(num_filter,) with num_filter={}", g.f))?;
    }
    Ok(vec![(out_shape(g.batch, g.f, &g.y, nd), float_dtype(a)?)])
}

fn conv_fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let op = "Convolution";
    let cp = conv_params(op, p)?;
    if let Some(Some(d)) = shapes.first().cloned() {
        let g = conv_geom(op, p, &d)?;
        fill_slot(op, "weight", &mut shapes[1], weight_shape(g.f, g.cg(), &g.k, cp.nd))?;
    }
    if shapes.len() > 2 {
        fill_slot(op, "bias", &mut shapes[2], Shape::from_slice(&[cp.num_filter]))?;
    }
    Ok(())
}

fn conv_run<T: ConvElem>(c: &OpCall) -> Result<()> {
    let g = conv_geom(c.op.name, c.params, &c.inputs[0].shape)?;
    let bias = c.inputs.get(2).map(|b| b.ptr_as::<T>() as *const T);
    // SAFETY: inference checked every extent; the output does not alias the inputs.
    unsafe { k::conv_forward::<T>(&g, c.inputs[0].ptr_as(), c.inputs[1].ptr_as(), bias, c.outputs[0].ptr_as()) }
}

fn conv_compute(c: &mut OpCall) -> Result<()> {
    with_float!(c.outputs[0].dtype, T, { conv_run::<T>(c) })
}

fn conv_backward_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let op = a.op.name;
    let g = conv_geom(op, a.params, a.shapes[1])?;
    let nd = nd_of(a.params);
    let w = weight_shape(g.f, g.cg(), &g.k, nd);
    expect_shape(op, "out_grad", a.shapes[0], &out_shape(g.batch, g.f, &g.y, nd), || "the output's shape".into())?;
    expect_shape(op, "weight", a.shapes[2], &w, || "(num_filter, in_channels / num_group, *kernel)".into())?;
    let d = float_dtype(a)?;
    let mut v = vec![(Shape::from_slice(a.shapes[1]), d), (w, d)];
    if !a.params.bool("no_bias") {
        v.push((Shape::from_slice(&[g.f]), d));
    }
    Ok(without_data_grad(a, v))
}

fn conv_backward_run<T: ConvElem>(c: &OpCall) -> Result<()> {
    let g = conv_geom(c.op.name, c.params, &c.inputs[1].shape)?;
    let (dy, x, w) = (c.inputs[0].ptr_as::<T>(), c.inputs[1].ptr_as::<T>(), c.inputs[2].ptr_as::<T>());
    let (dx, rest) = if skips_data_grad(c.op.name) { (None, c.outputs) } else { (Some(c.outputs[0].ptr_as::<T>()), &c.outputs[1..]) };
    let db = rest.get(1).map(|b| b.ptr_as::<T>());
    // SAFETY: inference checked every extent; outputs are fresh, distinct arrays.
    unsafe { k::conv_backward::<T>(&g, x, w, dy, dx, Some(rest[0].ptr_as()), db) }
}

fn conv_backward_compute(c: &mut OpCall) -> Result<()> {
    with_float!(c.outputs[0].dtype, T, { conv_backward_run::<T>(c) })
}

fn conv_grad(p: &Params, inputs: &[NDArray], _outputs: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    grad_dwb("_backward_Convolution", Some("_backward_Convolution_weight"), p, inputs, og)
}

/// The geometry of `Deconvolution` on `data`, seen as the convolution it is the
/// transpose of: the convolution's input `x` is the deconvolution's output
/// (`num_filter` channels), its output `y` the deconvolution's input.
pub(super) fn deconv_geom(op: &str, p: &Params, data: &[usize]) -> Result<ConvGeom> {
    let cp = conv_params(op, p)?;
    check_data_ndim(op, &cp, data)?;
    let nd = cp.nd;
    let (cin, f, g) = (data[1], cp.num_filter, cp.groups);
    if cin % g != 0 || f % g != 0 {
        return Err(Error::op(
            op,
            format!("num_group={g} must divide both the input channels ({cin}, data {}) and num_filter ({f})", fmt_shape(data)),
        ));
    }
    let adj = axis_param(op, p, "adj", nd, 0, 0, 0)?;
    let target = p.tuple("target_shape");
    let use_target = !target.is_empty() && target.iter().any(|&t| t != 0);
    let target = if use_target { axis_param(op, p, "target_shape", nd, 0, 0, 1)? } else { [0; 3] };
    let inp = pad3(&data[2..]);
    let (mut pad, mut adj_eff, mut out) = (cp.pad, adj, [1usize; 3]);
    for i in 3 - nd..3 {
        let axis = i - (3 - nd);
        let dk = cp.dilate[i] * (cp.kernel[i] - 1) + 1;
        let full = cp.stride[i] * (inp[i].max(1) - 1) + dk;
        if inp[i] == 0 {
            return Err(Error::op(op, format!("data {} has a zero spatial dimension", fmt_shape(data))));
        }
        if use_target {
            if target[i] > full {
                return Err(Error::op(
                    op,
                    format!(
                        "target_shape {} is too big: at most {full} along axis {axis} for data {} (stride {}, kernel {})",
                        fmt_tuple(&target[3 - nd..]),
                        fmt_shape(data),
                        cp.stride[i],
                        cp.kernel[i]
                    ),
                ));
            }
            let total = full - target[i];
            adj_eff[i] = total % 2;
            pad[i] = total.div_ceil(2);
        }
        if adj_eff[i] >= cp.stride[i] {
            return Err(Error::op(
                op,
                format!(
                    "adj must be smaller than stride along every axis: adj {} vs stride {} along axis {axis}{}",
                    adj_eff[i],
                    cp.stride[i],
                    if use_target { format!(" (adj computed for target_shape {})", fmt_tuple(&target[3 - nd..])) } else { String::new() }
                ),
            ));
        }
        if full + adj_eff[i] <= 2 * pad[i] {
            return Err(Error::op(
                op,
                format!(
                    "output would be empty along axis {axis}: stride*(input-1) + dilated kernel + adj = {} is not larger than 2*pad = {} (data {})",
                    full + adj_eff[i],
                    2 * pad[i],
                    fmt_shape(data)
                ),
            ));
        }
        out[i] = full + adj_eff[i] - 2 * pad[i];
    }
    Ok(ConvGeom { batch: data[0], c: f, f: cin, groups: g, x: out, y: inp, k: cp.kernel, s: cp.stride, d: cp.dilate, p: pad })
}

fn deconv_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let op = a.op.name;
    let g = deconv_geom(op, a.params, a.shapes[0])?;
    let nd = nd_of(a.params);
    // Weight (in_channels, num_filter / num_group, *kernel): the convolution's (f, c/g, k).
    let w = weight_shape(g.f, g.cg(), &g.k, nd);
    expect_shape(op, "weight", a.shapes[1], &w, || {
        format!(
            "(in_channels, num_filter / num_group, *kernel) for data {} with num_filter={}, num_group={}",
            fmt_shape(a.shapes[0]),
            g.c,
            g.groups
        )
    })?;
    if a.shapes.len() > 2 {
        expect_shape(op, "bias", a.shapes[2], &[g.c], || format!("(num_filter,) with num_filter={}", g.c))?;
    }
    Ok(vec![(out_shape(g.batch, g.c, &g.x, nd), float_dtype(a)?)])
}

fn deconv_fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let op = "Deconvolution";
    let cp = conv_params(op, p)?;
    if let Some(Some(d)) = shapes.first().cloned() {
        let g = deconv_geom(op, p, &d)?;
        fill_slot(op, "weight", &mut shapes[1], weight_shape(g.f, g.cg(), &g.k, cp.nd))?;
    }
    if shapes.len() > 2 {
        fill_slot(op, "bias", &mut shapes[2], Shape::from_slice(&[cp.num_filter]))?;
    }
    Ok(())
}

fn deconv_run<T: ConvElem>(c: &OpCall) -> Result<()> {
    let g = deconv_geom(c.op.name, c.params, &c.inputs[0].shape)?;
    let out = c.outputs[0].ptr_as::<T>();
    // SAFETY: inference checked every extent; the output does not alias the inputs.
    unsafe {
        k::conv_backward_data::<T>(&g, c.inputs[1].ptr_as(), c.inputs[0].ptr_as(), out)?;
        if let Some(b) = c.inputs.get(2) {
            k::add_bias::<T>(out, b.ptr_as(), g.batch, g.c, g.x_len());
        }
    }
    Ok(())
}

fn deconv_compute(c: &mut OpCall) -> Result<()> {
    with_float!(c.outputs[0].dtype, T, { deconv_run::<T>(c) })
}

fn deconv_backward_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let op = a.op.name;
    let g = deconv_geom(op, a.params, a.shapes[1])?;
    let nd = nd_of(a.params);
    let w = weight_shape(g.f, g.cg(), &g.k, nd);
    expect_shape(op, "out_grad", a.shapes[0], &out_shape(g.batch, g.c, &g.x, nd), || "the output's shape".into())?;
    expect_shape(op, "weight", a.shapes[2], &w, || "(in_channels, num_filter / num_group, *kernel)".into())?;
    let d = float_dtype(a)?;
    let mut v = vec![(Shape::from_slice(a.shapes[1]), d), (w, d)];
    if !a.params.bool("no_bias") {
        v.push((Shape::from_slice(&[g.c]), d));
    }
    Ok(v)
}

fn deconv_backward_run<T: ConvElem>(c: &OpCall) -> Result<()> {
    let g = deconv_geom(c.op.name, c.params, &c.inputs[1].shape)?;
    let (dy, x, w) = (c.inputs[0].ptr_as::<T>(), c.inputs[1].ptr_as::<T>(), c.inputs[2].ptr_as::<T>());
    // SAFETY: inference checked every extent; outputs are fresh, distinct arrays.
    unsafe {
        // In convolution terms dy is the input, x the output.
        k::conv_forward::<T>(&g, dy, w, None, c.outputs[0].ptr_as())?;
        k::conv_backward_weight::<T>(&g, dy, x, c.outputs[1].ptr_as(), None)?;
        if let Some(db) = c.outputs.get(2) {
            k::channel_sum::<T>(dy, db.ptr_as(), g.batch, g.c, g.x_len());
        }
    }
    Ok(())
}

fn deconv_backward_compute(c: &mut OpCall) -> Result<()> {
    with_float!(c.outputs[0].dtype, T, { deconv_backward_run::<T>(c) })
}

fn deconv_grad(p: &Params, inputs: &[NDArray], _outputs: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    grad_dwb("_backward_Deconvolution", None, p, inputs, og)
}

// ---- Pooling -------------------------------------------------------------------------

const POOL_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("kernel", PType::Tuple, Some("[]"), "Pooling kernel size: (y, x) or (d, y, x)"),
    ParamSpec::choice("pool_type", &["avg", "lp", "max", "sum"], Some("max"), "Pooling type to be applied."),
    ParamSpec::new("global_pool", PType::Bool, Some("False"), "Ignore kernel size, do global pooling based on current input feature map. "),
    ParamSpec::new("cudnn_off", PType::Bool, Some("False"), "Turn off cudnn pooling and use MXNet pooling operator. "),
    ParamSpec::choice("pooling_convention", &["full", "same", "valid"], Some("valid"), "Pooling convention to be applied."),
    ParamSpec::new("stride", PType::Tuple, Some("[]"), "Stride: for pooling (y, x) or (d, y, x). Defaults to 1 for each dimension."),
    ParamSpec::new("pad", PType::Tuple, Some("[]"), "Pad for pooling: (y, x) or (d, y, x). Defaults to no padding."),
    ParamSpec::new("p_value", PType::OptInt, Some("None"), "Value of p for Lp pooling, can be 1 or 2, required for Lp Pooling."),
    ParamSpec::new(
        "count_include_pad",
        PType::Bool,
        Some("True"),
        "Only used for AvgPool, specify whether to count padding elements for average calculation. For example, with a 5*5 kernel on a 3*3 corner of a image, the sum of the 9 valid elements will be divided by 25 if this is set to true, or it will be divided by 9 if this is set to false. Defaults to true.",
    ),
    ParamSpec::choice(
        "layout",
        POOL_LAYOUTS,
        Some("None"),
        "Set layout for input and output. Empty for default layout: NCW for 1d, NCHW for 2d and NCDHW for 3d.",
    ),
];

pub(super) fn pool_kind(op: &str, p: &Params) -> Result<PoolKind> {
    Ok(match p.str("pool_type") {
        "avg" => PoolKind::Avg { include_pad: p.bool("count_include_pad") },
        "sum" => PoolKind::Sum,
        "lp" => match p.opt_int("p_value") {
            Some(v) if v >= 1 => PoolKind::Lp(v.min(i32::MAX as i64) as i32),
            Some(v) => return Err(Error::op(op, format!("p_value must be a positive integer for Lp pooling, got {v}"))),
            None => return Err(Error::op(op, "p_value is required for pool_type='lp'")),
        },
        _ => PoolKind::Max,
    })
}

/// The geometry of `Pooling` on `data`, all checks included.
pub(super) fn pool_geom(op: &str, p: &Params, data: &[usize]) -> Result<PoolGeom> {
    if !(3..=5).contains(&data.len()) {
        return Err(Error::op(
            op,
            format!(
                "data must be 3-D (batch, channel, x), 4-D (batch, channel, y, x) or 5-D (batch, channel, d, y, x), got shape {}",
                fmt_shape(data)
            ),
        ));
    }
    let nd = data.len() - 2;
    let layout = p.str("layout");
    let channels_last = match layout {
        "None" => false,
        l if l == layout_name(nd) => false,
        l if l == ["NWC", "NHWC", "NDHWC"][nd - 1] => true,
        l => {
            return Err(Error::op(
                op,
                format!(
                    "layout {l} does not match the {}-D data {}: expected {} or {}",
                    data.len(),
                    fmt_shape(data),
                    layout_name(nd),
                    ["NWC", "NHWC", "NDHWC"][nd - 1]
                ),
            ))
        }
    };
    let (batch, ch, sp) = if channels_last { (data[0], data[nd + 1], &data[1..nd + 1]) } else { (data[0], data[1], &data[2..]) };
    let x = pad3(sp);
    let global = p.bool("global_pool");
    let convention = p.str("pooling_convention");
    let mut g = PoolGeom { batch, ch, x, y: [1; 3], k: [1; 3], s: [1; 3], p_lo: [0; 3], p_hi: [0; 3], channels_last };
    if global {
        g.k = x;
        return Ok(g);
    }
    let kt = p.tuple("kernel");
    if kt.is_empty() {
        return Err(Error::op(op, "kernel is required unless global_pool=True"));
    }
    if kt.len() != nd {
        return Err(Error::op(
            op,
            format!(
                "kernel {} has {} dimension(s) but data {} has {nd} spatial dimension(s)",
                super::params::value_to_string(p.get("kernel")),
                kt.len(),
                fmt_shape(data)
            ),
        ));
    }
    g.k = axis_param(op, p, "kernel", nd, 1, 1, 1)?;
    g.s = axis_param(op, p, "stride", nd, 1, 1, 1)?;
    if convention == "same" {
        // As MXNet: 'same' computes its own padding and takes no pad (any zeros).
        if p.tuple("pad").iter().any(|&v| v != 0) {
            return Err(Error::op(
                op,
                format!(
                    "Same pooling convention disables the use of pad parameter, got pad {}",
                    super::params::value_to_string(p.get("pad"))
                ),
            ));
        }
        if nd != 1 {
            return Err(Error::op(
                op,
                format!("pooling_convention='same' supports only 1-D pooling (3-D data), got data {}", fmt_shape(data)),
            ));
        }
        let i = 2;
        let out = x[i].div_ceil(g.s[i]);
        let total = ((out - 1) * g.s[i] + g.k[i]).saturating_sub(x[i]);
        g.y[i] = out;
        g.p_lo[i] = total / 2;
        g.p_hi[i] = total - total / 2;
        return Ok(g);
    }
    let pad = axis_param(op, p, "pad", nd, 0, 0, 0)?;
    for i in 3 - nd..3 {
        let padded = x[i] + 2 * pad[i];
        if g.k[i] > padded {
            return Err(Error::op(
                op,
                format!(
                    "kernel size ({}) exceeds input ({} padded to {}) along axis {} (data {})",
                    g.k[i],
                    x[i],
                    padded,
                    i - (3 - nd) + 2,
                    fmt_shape(data)
                ),
            ));
        }
        let span = padded - g.k[i];
        g.y[i] = 1 + if convention == "full" { span.div_ceil(g.s[i]) } else { span / g.s[i] };
        g.p_lo[i] = pad[i];
        g.p_hi[i] = pad[i];
    }
    Ok(g)
}

fn pool_out_shape(g: &PoolGeom, nd: usize) -> Shape {
    if g.channels_last {
        let mut s = Shape::from_slice(&[g.batch]);
        s.extend_from_slice(&g.y[3 - nd..]);
        s.push(g.ch);
        s
    } else {
        out_shape(g.batch, g.ch, &g.y, nd)
    }
}

fn pool_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let g = pool_geom(a.op.name, a.params, a.shapes[0])?;
    pool_kind(a.op.name, a.params)?;
    Ok(vec![(pool_out_shape(&g, a.shapes[0].len() - 2), float_dtype(a)?)])
}

fn pool_run<T: ConvElem>(c: &OpCall) -> Result<()> {
    let g = pool_geom(c.op.name, c.params, &c.inputs[0].shape)?;
    let kind = pool_kind(c.op.name, c.params)?;
    // SAFETY: inference checked the extents; the output does not alias the input.
    unsafe { k::pool_forward::<T>(&g, kind, c.inputs[0].ptr_as(), c.outputs[0].ptr_as()) };
    Ok(())
}

fn pool_compute(c: &mut OpCall) -> Result<()> {
    with_float!(c.outputs[0].dtype, T, { pool_run::<T>(c) })
}

fn pool_backward_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let op = a.op.name;
    let g = pool_geom(op, a.params, a.shapes[1])?;
    pool_kind(op, a.params)?;
    let out = pool_out_shape(&g, a.shapes[1].len() - 2);
    expect_shape(op, "out_grad", a.shapes[0], &out, || "the output's shape".into())?;
    expect_shape(op, "output", a.shapes[2], &out, || "the output's shape".into())?;
    Ok(vec![(Shape::from_slice(a.shapes[1]), float_dtype(a)?)])
}

fn pool_backward_run<T: ConvElem>(c: &OpCall) -> Result<()> {
    let g = pool_geom(c.op.name, c.params, &c.inputs[1].shape)?;
    let kind = pool_kind(c.op.name, c.params)?;
    // SAFETY: inference checked the extents; the output is a fresh array.
    unsafe { k::pool_backward::<T>(&g, kind, c.inputs[1].ptr_as(), c.inputs[2].ptr_as(), c.inputs[0].ptr_as(), c.outputs[0].ptr_as()) };
    Ok(())
}

fn pool_backward_compute(c: &mut OpCall) -> Result<()> {
    with_float!(c.outputs[0].dtype, T, { pool_backward_run::<T>(c) })
}

fn pool_grad(p: &Params, inputs: &[NDArray], outputs: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    let op = lookup("_backward_Pooling")?;
    let outs = invoke(op, &[og[0].clone(), inputs[0].clone(), outputs[0].clone()], p.clone(), None, None)?;
    Ok(outs.into_iter().map(Some).collect())
}

// ---- registration --------------------------------------------------------------------

const FC_DOC: &str = "Applies a linear transformation: :math:`Y = XW^T + b`.\n\nIf ``flatten`` is set to be true, then the shapes are:\n\n- **data**: `(batch_size, x1, x2, ..., xn)`\n- **weight**: `(num_hidden, x1 * x2 * ... * xn)`\n- **bias**: `(num_hidden,)`\n- **out**: `(batch_size, num_hidden)`\n\nIf ``flatten`` is set to be false, then the shapes are:\n\n- **data**: `(x1, x2, ..., xn, input_dim)`\n- **weight**: `(num_hidden, input_dim)`\n- **bias**: `(num_hidden,)`\n- **out**: `(x1, x2, ..., xn, num_hidden)`\n\nThe learnable parameters include both ``weight`` and ``bias``. If ``no_bias`` is set to be true, then the ``bias`` term is ignored.";

const CONV_DOC: &str = "Compute *N*-D convolution on *(N+2)*-D input.\n\nFor 2-D convolution with the default layout, the shapes are\n\n- **data**: *(batch_size, channel, height, width)*\n- **weight**: *(num_filter, channel, kernel[0], kernel[1])*\n- **bias**: *(num_filter,)*\n- **out**: *(batch_size, num_filter, out_height, out_width)*.\n\nwhere out_height = floor((height + 2*pad[0] - dilate[0]*(kernel[0]-1) - 1) / stride[0]) + 1 (likewise for the width). With ``num_group`` > 1 the channels are split into that many groups convolved separately (weight *(num_filter, channel/num_group, ...)*). 1-D (NCW) and 3-D (NCDHW) inputs work the same way.";

const DECONV_DOC: &str = "Computes 1-D, 2-D or 3-D transposed convolution (aka fractionally strided convolution) of the input tensor. This operation can be seen as the gradient of Convolution operation with respect to its input.\n\nThe weight has shape *(channel, num_filter/num_group, *kernel)*; the output size along each axis is stride*(in-1) + dilate*(kernel-1) + 1 - 2*pad + adj, or ``target_shape`` when given.";

const POOL_DOC: &str = "Performs pooling on the input.\n\nThe shapes for 1-D pooling are\n\n- **data** and **out**: *(batch_size, channel, width)* (NCW layout) or *(batch_size, width, channel)* (NWC layout),\n\nand for 2-D and 3-D likewise with *(height, width)* and *(depth, height, width)*. With ``pooling_convention='valid'`` the output size is floor((x + 2*p - k) / s) + 1, with ``'full'`` ceil((x + 2*p - k) / s) + 1, with ``'same'`` (1-D only) ceil(x / s). Pool types: max, avg (``count_include_pad`` chooses whether padding counts), sum, and lp (``(sum x^p)^(1/p)``, ``p_value`` required). ``global_pool`` pools each feature map to one value.";

pub fn register(r: &mut Registry) {
    r.add(OpDef::new("FullyConnected", FC_DOC, DWB, FC_PARAMS, fc_infer, fc_compute).grad(fc_grad).fill(fc_fill).cost(8));
    r.add(
        OpDef::new(
            "_backward_FullyConnected",
            "Backward of FullyConnected: gradients of data, weight (and bias).",
            BACKWARD_IN,
            FC_PARAMS,
            fc_backward_infer,
            fc_backward_compute,
        )
        .cost(8),
    );
    r.add(
        OpDef::new(
            "_backward_FullyConnected_weight",
            "Backward of FullyConnected without the data gradient: gradients of weight (and bias).",
            BACKWARD_IN,
            FC_PARAMS,
            fc_backward_infer,
            fc_backward_compute,
        )
        .cost(8),
    );
    r.add(OpDef::new("Convolution", CONV_DOC, DWB, CONV_PARAMS, conv_infer, conv_compute).grad(conv_grad).fill(conv_fill).cost(16));
    r.add(
        OpDef::new(
            "_backward_Convolution",
            "Backward of Convolution: gradients of data, weight (and bias).",
            BACKWARD_IN,
            CONV_PARAMS,
            conv_backward_infer,
            conv_backward_compute,
        )
        .cost(16),
    );
    r.add(
        OpDef::new(
            "_backward_Convolution_weight",
            "Backward of Convolution without the data gradient: gradients of weight (and bias).",
            BACKWARD_IN,
            CONV_PARAMS,
            conv_backward_infer,
            conv_backward_compute,
        )
        .cost(16),
    );
    r.add(
        OpDef::new("Deconvolution", DECONV_DOC, DWB, DECONV_PARAMS, deconv_infer, deconv_compute)
            .grad(deconv_grad)
            .fill(deconv_fill)
            .cost(16),
    );
    r.add(
        OpDef::new(
            "_backward_Deconvolution",
            "Backward of Deconvolution: gradients of data, weight (and bias).",
            BACKWARD_IN,
            DECONV_PARAMS,
            deconv_backward_infer,
            deconv_backward_compute,
        )
        .cost(16),
    );
    r.add(OpDef::new("Pooling", POOL_DOC, Arity::Fixed(&["data"]), POOL_PARAMS, pool_infer, pool_compute).grad(pool_grad).cost(4));
    r.add(
        OpDef::new(
            "_backward_Pooling",
            "Backward of Pooling: the gradient of data.",
            Arity::Fixed(&["out_grad", "data", "output"]),
            POOL_PARAMS,
            pool_backward_infer,
            pool_backward_compute,
        )
        .cost(4),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::{call, call1, Value};

    fn arr(shape: &[usize], f: impl Fn(usize) -> f32) -> NDArray {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n).map(f).collect();
        NDArray::from_vec(shape, &v, crate::Context::default()).unwrap()
    }

    fn t(v: &[i64]) -> Value {
        Value::Tuple(v.to_vec())
    }

    #[test]
    fn conv_shapes_and_values() {
        let x = arr(&[1, 1, 3, 3], |i| i as f32);
        let w = arr(&[1, 1, 2, 2], |_| 1.0);
        let b = arr(&[1], |_| 0.5);
        let y = call1("Convolution", &[x.clone(), w.clone(), b], &[("kernel", t(&[2, 2])), ("num_filter", Value::Int(1))]).unwrap();
        assert_eq!(y.shape(), &[1, 1, 2, 2]);
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![8.5, 12.5, 20.5, 24.5]);
        // no_bias drops the bias input.
        let y = call1(
            "Convolution",
            &[x.clone(), w.clone()],
            &[("kernel", t(&[2, 2])), ("num_filter", Value::Int(1)), ("no_bias", Value::Bool(true))],
        )
        .unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![8.0, 12.0, 20.0, 24.0]);
        // A wrong weight shape names the op and the expected shape.
        let e = call(
            "Convolution",
            &[x.clone(), arr(&[1, 2, 2, 2], |_| 1.0)],
            &[("kernel", t(&[2, 2])), ("num_filter", Value::Int(1)), ("no_bias", Value::Bool(true))],
        )
        .unwrap_err();
        assert!(e.message().contains("Convolution") && e.message().contains("(1, 1, 2, 2)"), "{}", e.message());
        let e = call("Convolution", &[x, w], &[("kernel", t(&[4, 4])), ("num_filter", Value::Int(1)), ("no_bias", Value::Bool(true))])
            .unwrap_err();
        assert!(e.message().contains("exceeds input"), "{}", e.message());
    }

    #[test]
    fn deconv_is_conv_transpose() {
        // Deconvolution of a single 1 spreads the kernel.
        let x = arr(&[1, 1, 2, 2], |i| if i == 0 { 1.0 } else { 0.0 });
        let w = arr(&[1, 1, 2, 2], |i| i as f32 + 1.0);
        let y = call1("Deconvolution", &[x, w], &[("kernel", t(&[2, 2])), ("num_filter", Value::Int(1)), ("stride", t(&[2, 2]))]).unwrap();
        assert_eq!(y.shape(), &[1, 1, 4, 4]);
        let v = y.to_vec::<f32>().unwrap();
        assert_eq!(&v[..2], &[1.0, 2.0]);
        assert_eq!(&v[4..6], &[3.0, 4.0]);
        assert_eq!(v.iter().sum::<f32>(), 10.0);
    }

    #[test]
    fn fill_infers_weight_and_bias() {
        let op = lookup("Convolution").unwrap();
        let p = op
            .parse(vec![("kernel".into(), t(&[3, 3])), ("num_filter".into(), Value::Int(8)), ("num_group".into(), Value::Int(2))])
            .unwrap();
        let mut shapes = vec![Some(Shape::from_slice(&[2, 4, 9, 9])), None, None];
        (op.fill.unwrap())(&p, &mut shapes).unwrap();
        assert_eq!(shapes[1].as_deref(), Some(&[8, 2, 3, 3][..]));
        assert_eq!(shapes[2].as_deref(), Some(&[8][..]));
        let mut bad = vec![Some(Shape::from_slice(&[2, 4, 9, 9])), Some(Shape::from_slice(&[8, 4, 3, 3])), None];
        assert!((op.fill.unwrap())(&p, &mut bad).is_err());
        let fc = lookup("FullyConnected").unwrap();
        let p = fc.parse(vec![("num_hidden".into(), Value::Int(5))]).unwrap();
        let mut shapes = vec![Some(Shape::from_slice(&[2, 3, 4])), None, None];
        (fc.fill.unwrap())(&p, &mut shapes).unwrap();
        assert_eq!(shapes[1].as_deref(), Some(&[5, 12][..]));
        let de = lookup("Deconvolution").unwrap();
        let p =
            de.parse(vec![("kernel".into(), t(&[3])), ("num_filter".into(), Value::Int(6)), ("num_group".into(), Value::Int(3))]).unwrap();
        let mut shapes = vec![Some(Shape::from_slice(&[2, 9, 5])), None];
        (de.fill.unwrap())(&p, &mut shapes).unwrap();
        assert_eq!(shapes[1].as_deref(), Some(&[9, 2, 3][..]));
    }

    #[test]
    fn unwanted_data_grad_is_skipped() {
        // Convolution and FullyConnected: with the data gradient unwanted, the
        // gradient gives None for it and the same weight and bias gradients.
        let x = arr(&[2, 3, 6, 5], |i| ((i * 7) % 11) as f32 - 5.0);
        let w = arr(&[4, 3, 3, 2], |i| ((i * 5) % 7) as f32 - 3.0);
        let b = arr(&[4], |i| i as f32);
        let conv = lookup("Convolution").unwrap();
        let p = conv.parse(vec![("kernel".into(), t(&[3, 2])), ("num_filter".into(), Value::Int(4)), ("pad".into(), t(&[1, 0]))]).unwrap();
        let y = invoke(conv, &[x.clone(), w.clone(), b.clone()], p.clone(), None, None).unwrap();
        let og = arr(y[0].shape(), |i| ((i * 3) % 5) as f32 - 2.0);
        let fc = lookup("FullyConnected").unwrap();
        let pf = fc.parse(vec![("num_hidden".into(), Value::Int(3))]).unwrap();
        let wf = arr(&[3, 90], |i| ((i * 13) % 9) as f32 - 4.0);
        let bf = arr(&[3], |i| i as f32);
        let ogf = arr(&[2, 3], |i| i as f32 - 1.0);
        for (op, p, ins, og) in [(conv, &p, vec![x.clone(), w, b], og), (fc, &pf, vec![x, wf, bf], ogf)] {
            let grad = op.grad.unwrap();
            let all = grad(p, &ins, &[], std::slice::from_ref(&og)).unwrap();
            assert!(crate::op::grad_wanted(0));
            let some = crate::op::with_unwanted_grads([false, true, true], || {
                assert!(!crate::op::grad_wanted(0) && crate::op::grad_wanted(1));
                grad(p, &ins, &[], std::slice::from_ref(&og))
            })
            .unwrap();
            // The mask is cleared after the call.
            assert!(crate::op::grad_wanted(0));
            assert!(all[0].is_some() && some[0].is_none() && some.len() == 3, "{}", op.name);
            for i in 1..3 {
                let (a, s) = (all[i].as_ref().unwrap().to_vec::<f32>().unwrap(), some[i].as_ref().unwrap().to_vec::<f32>().unwrap());
                assert_eq!(a, s, "{} input {i}", op.name);
            }
        }
    }

    #[test]
    fn grads_call_backward_ops() {
        let x = arr(&[2, 3], |i| i as f32);
        let w = arr(&[4, 3], |i| (i % 5) as f32);
        let b = arr(&[4], |_| 0.0);
        let fc = lookup("FullyConnected").unwrap();
        let p = fc.parse(vec![("num_hidden".into(), Value::Int(4))]).unwrap();
        let y = invoke(fc, &[x.clone(), w.clone(), b.clone()], p.clone(), None, None).unwrap();
        let og = arr(&[2, 4], |_| 1.0);
        let g = (fc.grad.unwrap())(&p, &[x, w, b], &y, &[og]).unwrap();
        assert_eq!(g.len(), 3);
        assert_eq!(g[2].as_ref().unwrap().to_vec::<f32>().unwrap(), vec![2.0; 4]);
        // dW[h, k] = sum_b x[b, k] = [3, 5, 7] for every h.
        assert_eq!(&g[1].as_ref().unwrap().to_vec::<f32>().unwrap()[..3], &[3.0, 5.0, 7.0]);
        let pool = lookup("Pooling").unwrap();
        let p = pool.parse(vec![("kernel".into(), t(&[2])), ("stride".into(), t(&[2]))]).unwrap();
        let x = arr(&[1, 1, 4], |i| [3.0, 1.0, 2.0, 5.0][i]);
        let y = invoke(pool, std::slice::from_ref(&x), p.clone(), None, None).unwrap();
        assert_eq!(y[0].to_vec::<f32>().unwrap(), vec![3.0, 5.0]);
        let g = (pool.grad.unwrap())(&p, &[x], &y, &[arr(&[1, 1, 2], |i| i as f32 + 1.0)]).unwrap();
        assert_eq!(g[0].as_ref().unwrap().to_vec::<f32>().unwrap(), vec![1.0, 0.0, 0.0, 2.0]);
    }
}
