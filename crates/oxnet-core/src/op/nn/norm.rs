//! `BatchNorm`, `LayerNorm` and `InstanceNorm`, with their backward ops. The BatchNorm
//! pieces are shared with `SyncBatchNorm`.

use super::{expect_shape, fill_known, float_input, from_f64, head, names, need_outputs, outer_inner, rd, run_bwd, same_first, to_f64, wr};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::cpu::nn::{self as k};
use crate::ndarray::NDArray;
use crate::op::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry};
use crate::shape::{fmt_shape, norm_axis, Shape};
use crate::with_float;

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
pub(in crate::op) fn bn_dtype_fill(_: &Params, dtypes: &mut [Option<DType>]) {
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
pub(in crate::op) fn bn_train_writes(p: &Params) -> &'static [usize] {
    if p.bool("fix_gamma") {
        &[1]
    } else {
        &[]
    }
}

/// What BatchNorm and SyncBatchNorm share: the channel axis and the parameters.
pub(in crate::op) struct BnCfg {
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
pub(in crate::op) fn bn_forward(c: &OpCall, cfg: &BnCfg) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
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
pub(in crate::op) fn bn_backward(c: &OpCall, cfg: &BnCfg, mean: &[f64], invstd: &[f64], var: &[f64]) {
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

pub(super) fn bn_grad(p: &Params, i: &[NDArray], o: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
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
    crate::op::check_same_dtype(a)?;
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
    crate::op::check_same_dtype(a)?;
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

pub(super) fn ln_grad(p: &Params, i: &[NDArray], o: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
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
    crate::op::check_same_dtype(a)?;
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

pub(super) fn in_grad(p: &Params, i: &[NDArray], o: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    need_outputs("InstanceNorm", o, 3)?;
    let r = run_bwd("_backward_InstanceNorm", &[head("InstanceNorm", og)?, i[0].clone(), i[1].clone(), o[1].clone(), o[2].clone()], p)?;
    Ok(r.into_iter().map(Some).collect())
}

pub(super) fn register(r: &mut Registry) {
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
}
