//! Smaller NN layers and training utilities: `L2Normalization`, `LRN`, `UpSampling`
//! (nearest; bilinear is the fixed-stride grouped `Deconvolution` it is in MXNet,
//! run through that op's kernels), `SVMOutput`, `softmax_cross_entropy`, `all_finite`,
//! `multi_all_finite`, `multi_sum_sq`, `reset_arrays`, `amp_cast`, `amp_multicast`,
//! with the backward ops their gradients need. The kernels compute in f64 and store
//! in the element type: these layers are not on any hot path.

use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};
use crate::with_dtype;

type Out = Result<Vec<(Shape, DType)>>;
type Grads = Result<Vec<Option<NDArray>>>;

const DATA: Arity = Arity::Fixed(&["data"]);

fn read(b: &super::Blob) -> Vec<f64> {
    // SAFETY: a blob holds its elements; nothing writes it during the call.
    with_dtype!(b.dtype, T, { unsafe { b.slice::<T>() }.iter().map(|v| v.to_f64()).collect() })
}

fn write(b: &super::Blob, v: &[f64]) {
    // SAFETY: the output is ours to write and holds v.len() elements.
    with_dtype!(b.dtype, T, {
        for (d, s) in unsafe { b.slice_mut::<T>() }.iter_mut().zip(v) {
            *d = T::from_f64(*s);
        }
    })
}

fn pass(p: &Params) -> Vec<(&'static str, Value)> {
    p.to_strings().into_iter().map(|(n, v)| (n, Value::Str(v))).collect()
}

fn bwd(name: &str, ins: &[NDArray], p: &Params) -> Result<NDArray> {
    super::call1(name, ins, &pass(p))
}

fn float_input(a: &InferArgs, i: usize) -> Result<()> {
    if !a.dtypes[i].is_float() {
        return Err(a.err(format!("input {i} must be a floating-point array, got {}", a.dtypes[i].name())));
    }
    Ok(())
}

fn like_data(a: &InferArgs) -> Out {
    float_input(a, 0)?;
    Ok(vec![(Shape::from_slice(a.shapes[0]), a.dtypes[0])])
}

/// Backward ops `(ograd, data, ...)`: the gradient is shaped like `data`.
fn like_second(a: &InferArgs) -> Out {
    Ok(vec![(Shape::from_slice(a.shapes[1]), a.dtypes[1])])
}

// ---- L2Normalization ---------------------------------------------------------------

const L2N_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("eps", PType::Float, Some("1e-10"), "A small constant for numerical stability."),
    ParamSpec::choice(
        "mode",
        &["channel", "instance", "spatial"],
        Some("instance"),
        "Specify the dimension along which to compute L2 norm.",
    ),
];

/// `(outer, red, inner)`: the norm is over the middle extent.
fn l2n_geometry(op: &str, p: &Params, s: &[usize]) -> Result<(usize, usize, usize)> {
    let mode = p.str("mode");
    if s.len() < 2 || (mode != "instance" && s.len() < 3) {
        return Err(Error::op(op, format!("data of shape {} has too few dimensions for mode '{mode}'", fmt_shape(s))));
    }
    let rest: usize = s[2..].iter().product();
    Ok(match mode {
        "instance" => (s[0], s[1..].iter().product(), 1),
        "channel" => (s[0], s[1], rest),
        _ => (s[0] * s[1], rest, 1),
    })
}

fn l2n_infer(a: &InferArgs) -> Out {
    float_input(a, 0)?;
    l2n_geometry(a.op.name, a.params, a.shapes[0])?;
    like_data(a)
}

fn l2n_norms(x: &[f64], (o, r, i): (usize, usize, usize), eps: f64) -> Vec<f64> {
    let mut n = vec![0f64; o * i];
    for a in 0..o {
        for b in 0..r {
            for c in 0..i {
                let v = x[(a * r + b) * i + c];
                n[a * i + c] += v * v;
            }
        }
    }
    n.iter().map(|s| (s + eps).sqrt()).collect()
}

fn l2n_compute(c: &mut OpCall) -> Result<()> {
    let x = read(&c.inputs[0]);
    let g = l2n_geometry(c.op.name, c.params, &c.inputs[0].shape)?;
    let n = l2n_norms(&x, g, c.params.float("eps"));
    let (_, r, i) = g;
    let y: Vec<f64> = x.iter().enumerate().map(|(j, v)| v / n[(j / (r * i)) * i + j % i]).collect();
    write(&c.outputs[0], &y);
    Ok(())
}

fn l2n_backward_compute(c: &mut OpCall) -> Result<()> {
    let (gr, x) = (read(&c.inputs[0]), read(&c.inputs[1]));
    let g = l2n_geometry(c.op.name, c.params, &c.inputs[1].shape)?;
    let n = l2n_norms(&x, g, c.params.float("eps"));
    let (o, r, i) = g;
    let mut dot = vec![0f64; o * i];
    for (j, (gv, xv)) in gr.iter().zip(&x).enumerate() {
        dot[(j / (r * i)) * i + j % i] += gv * xv;
    }
    let dx: Vec<f64> = (0..x.len())
        .map(|j| {
            let k = (j / (r * i)) * i + j % i;
            gr[j] / n[k] - x[j] * dot[k] / (n[k] * n[k] * n[k])
        })
        .collect();
    write(&c.outputs[0], &dx);
    Ok(())
}

fn g_l2n(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(bwd("_backward_L2Normalization", &[g[0].clone(), i[0].clone()], p)?)])
}

// ---- LRN ------------------------------------------------------------------------------

const LRN_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("alpha", PType::Float, Some("0.0001"), "The variance scaling parameter alpha in the LRN expression."),
    ParamSpec::new("beta", PType::Float, Some("0.75"), "The power parameter beta in the LRN expression."),
    ParamSpec::new("knorm", PType::Float, Some("2"), "The parameter k in the LRN expression."),
    ParamSpec::new("nsize", PType::Int, None, "normalization window width in elements."),
];

fn lrn_infer(a: &InferArgs) -> Out {
    float_input(a, 0)?;
    let s = a.shapes[0];
    if s.len() != 4 {
        return Err(a.err(format!("data must be 4-D (N, C, H, W), got shape {}", fmt_shape(s))));
    }
    if a.params.int("nsize") <= 0 || a.params.int("nsize") % 2 == 0 {
        return Err(a.err(format!("nsize must be a positive odd number, got {}", a.params.int("nsize"))));
    }
    like_data(a)
}

/// The scale `knorm + alpha/nsize * sum over the channel window of x^2`, per element.
fn lrn_scale(x: &[f64], s: &[usize], p: &Params) -> Vec<f64> {
    let (n, ch, hw) = (s[0], s[1], s[2] * s[3]);
    let half = (p.int("nsize") / 2) as usize;
    let (alpha, k, size) = (p.float("alpha"), p.float("knorm"), p.int("nsize") as f64);
    let mut out = vec![0f64; x.len()];
    for b in 0..n {
        for c in 0..ch {
            let (lo, hi) = (c.saturating_sub(half), (c + half).min(ch - 1));
            for j in 0..hw {
                let mut acc = 0.0;
                for cc in lo..=hi {
                    let v = x[(b * ch + cc) * hw + j];
                    acc += v * v;
                }
                out[(b * ch + c) * hw + j] = k + alpha / size * acc;
            }
        }
    }
    out
}

fn lrn_compute(c: &mut OpCall) -> Result<()> {
    let x = read(&c.inputs[0]);
    let sc = lrn_scale(&x, &c.inputs[0].shape, c.params);
    let beta = c.params.float("beta");
    let y: Vec<f64> = x.iter().zip(&sc).map(|(v, s)| v * s.powf(-beta)).collect();
    write(&c.outputs[0], &y);
    Ok(())
}

fn lrn_backward_compute(c: &mut OpCall) -> Result<()> {
    let (g, x) = (read(&c.inputs[0]), read(&c.inputs[1]));
    let s = &c.inputs[1].shape;
    let sc = lrn_scale(&x, s, c.params);
    let (beta, alpha, size) = (c.params.float("beta"), c.params.float("alpha"), c.params.int("nsize") as f64);
    let half = (c.params.int("nsize") / 2) as usize;
    let (n, ch, hw) = (s[0], s[1], s[2] * s[3]);
    // t = g * x * scale^(-beta-1), summed over the windows that contain each channel
    let t: Vec<f64> = (0..x.len()).map(|j| g[j] * x[j] * sc[j].powf(-beta - 1.0)).collect();
    let mut dx = vec![0f64; x.len()];
    for b in 0..n {
        for cidx in 0..ch {
            let (lo, hi) = (cidx.saturating_sub(half), (cidx + half).min(ch - 1));
            for j in 0..hw {
                let e = (b * ch + cidx) * hw + j;
                let mut acc = 0.0;
                for cc in lo..=hi {
                    acc += t[(b * ch + cc) * hw + j];
                }
                dx[e] = g[e] * sc[e].powf(-beta) - 2.0 * alpha * beta / size * x[e] * acc;
            }
        }
    }
    write(&c.outputs[0], &dx);
    Ok(())
}

fn g_lrn(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(bwd("_backward_LRN", &[g[0].clone(), i[0].clone()], p)?)])
}

// ---- UpSampling -------------------------------------------------------------------------

const UP_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("scale", PType::Int, None, "Up sampling scale"),
    ParamSpec::new("num_filter", PType::Int, Some("0"), "Input filter. Only used by bilinear sample_type."),
    ParamSpec::choice("sample_type", &["bilinear", "nearest"], None, "upsampling method"),
    ParamSpec::choice("multi_input_mode", &["concat", "sum"], Some("concat"), "How to handle multiple input. concat means concatenate upsampled images along the channel dimension. sum means add all images together, only available for nearest neighbor upsampling."),
    ParamSpec::new("num_args", PType::Int, Some("1"), "Number of inputs to be upsampled."),
    ParamSpec::new("workspace", PType::Int, Some("512"), "Tmp workspace for deconvolution (MB)"),
];

fn bilinear(p: &Params) -> bool {
    p.str("sample_type") == "bilinear"
}

/// The `Deconvolution` that bilinear UpSampling is, as in MXNet: kernel
/// `2*scale - scale%2`, stride `scale`, pad `ceil((scale-1)/2)`, `num_filter` groups
/// (one filter per channel), no bias; its weight (the interpolation filter, an input)
/// has shape `(channels, 1, kernel, kernel)`.
fn bilinear_deconv(p: &Params) -> Result<(&'static OpDef, Params)> {
    let op = "UpSampling";
    let (scale, nf) = (p.int("scale"), p.int("num_filter"));
    if scale < 1 {
        return Err(Error::op(op, format!("scale must be at least 1, got {scale}")));
    }
    if nf < 1 {
        return Err(Error::op(op, format!("sample_type='bilinear' needs num_filter (the channel count) >= 1, got {nf}")));
    }
    if p.int("num_args") != 2 {
        return Err(Error::op(
            op,
            format!("sample_type='bilinear' takes two inputs, the data and the weight: num_args must be 2, got {}", p.int("num_args")),
        ));
    }
    // pad = ceil((scale - 1) / 2)
    let (k, pad) = (2 * scale - scale % 2, scale / 2);
    let de = super::lookup("Deconvolution")?;
    let t = |v: i64| Value::Tuple(vec![v, v]);
    let dp = de.parse(vec![
        ("kernel".into(), t(k)),
        ("stride".into(), t(scale)),
        ("pad".into(), t(pad)),
        ("num_filter".into(), Value::Int(nf)),
        ("num_group".into(), Value::Int(nf)),
        ("no_bias".into(), Value::Bool(true)),
        ("workspace".into(), Value::Int(p.int("workspace"))),
    ])?;
    Ok((de, dp))
}

/// Errors of the underlying Deconvolution, named for UpSampling.
fn as_up(e: Error) -> Error {
    let m = e.message();
    let m = m.strip_prefix("Error in operator Deconvolution: ").unwrap_or(m);
    Error::op("UpSampling", format!("sample_type='bilinear' (a deconvolution): {m}"))
}

/// Bilinear UpSampling's forward on `c`'s device: the Deconvolution kernels (its CPU
/// compute, or `cuda` on a GPU).
pub(super) fn bilinear_compute(c: &mut OpCall, cuda: Option<super::ComputeFn>) -> Result<()> {
    let (de, dp) = bilinear_deconv(c.params)?;
    let f = match cuda {
        Some(f) => f,
        None => de.cpu,
    };
    let mut call = OpCall { op: de, params: &dp, inputs: c.inputs, outputs: c.outputs, ctx: c.ctx, rng: None, is_train: c.is_train };
    f(&mut call).map_err(as_up)
}

fn up_fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    if !bilinear(p) || shapes.len() != 2 {
        return Ok(());
    }
    let (de, dp) = bilinear_deconv(p)?;
    match de.fill {
        Some(f) => f(&dp, shapes).map_err(as_up),
        None => Ok(()),
    }
}

fn up_infer(a: &InferArgs) -> Out {
    if bilinear(a.params) {
        let (de, dp) = bilinear_deconv(a.params)?;
        if a.shapes[0].len() != 4 {
            return Err(a.err(format!("inputs must be 4-D (N, C, H, W), got shape {}", fmt_shape(a.shapes[0]))));
        }
        return de.infer(&dp, a.shapes, a.dtypes).map_err(as_up);
    }
    let scale = a.params.int("scale");
    if scale < 1 || a.shapes.is_empty() {
        return Err(a.err(format!("scale must be at least 1 and there must be an input (scale={scale})")));
    }
    let s0 = a.shapes[0];
    if s0.len() != 4 {
        return Err(a.err(format!("inputs must be 4-D (N, C, H, W), got shape {}", fmt_shape(s0))));
    }
    let (oh, ow) = (s0[2] * scale as usize, s0[3] * scale as usize);
    let mut ch = 0;
    for s in a.shapes {
        if s.len() != 4 || s[0] != s0[0] || s[2] == 0 || oh % s[2] != 0 || ow % s[3] != 0 || oh / s[2] != ow / s[3] {
            return Err(a.err(format!("input of shape {} cannot be upsampled by an integer scale to ({oh}, {ow})", fmt_shape(s))));
        }
        if a.params.str("multi_input_mode") == "sum" && s[1] != s0[1] {
            return Err(a.err(format!("multi_input_mode='sum' needs equal channels, got {} and {}", fmt_shape(s0), fmt_shape(s))));
        }
        ch += s[1];
    }
    if a.params.str("multi_input_mode") == "sum" {
        ch = s0[1];
    }
    let d = super::check_same_dtype(a)?;
    Ok(vec![(Shape::from_slice(&[s0[0], ch, oh, ow]), d)])
}

fn up_compute(c: &mut OpCall) -> Result<()> {
    if bilinear(c.params) {
        return bilinear_compute(c, None);
    }
    let o = &c.outputs[0];
    let (n, och, oh, ow) = (o.shape[0], o.shape[1], o.shape[2], o.shape[3]);
    let sum = c.params.str("multi_input_mode") == "sum";
    let mut out = vec![0f64; o.size()];
    let mut c0 = 0;
    for b in c.inputs.iter() {
        let x = read(b);
        let (ch, h, w) = (b.shape[1], b.shape[2], b.shape[3]);
        let s = oh / h;
        for bi in 0..n {
            for ci in 0..ch {
                let oc = if sum { ci } else { c0 + ci };
                for y in 0..oh {
                    for xx in 0..ow {
                        out[((bi * och + oc) * oh + y) * ow + xx] += x[((bi * ch + ci) * h + y / s) * w + xx / s];
                    }
                }
            }
        }
        let _ = w;
        c0 += ch;
    }
    write(o, &out);
    Ok(())
}

/// `_backward_UpSampling(ograd, inputs...)`: one gradient per input, the sum of
/// the output gradient over each input pixel's block.
fn up_backward_infer(a: &InferArgs) -> Out {
    Ok(a.shapes[1..].iter().zip(&a.dtypes[1..]).map(|(s, d)| (Shape::from_slice(s), *d)).collect())
}

fn up_backward_compute(c: &mut OpCall) -> Result<()> {
    let gb = &c.inputs[0];
    let g = read(gb);
    let (n, och, oh, ow) = (gb.shape[0], gb.shape[1], gb.shape[2], gb.shape[3]);
    let sum = c.params.str("multi_input_mode") == "sum";
    let mut c0 = 0;
    for (b, o) in c.inputs[1..].iter().zip(c.outputs.iter()) {
        let (ch, h, w) = (b.shape[1], b.shape[2], b.shape[3]);
        let s = oh / h;
        let mut dx = vec![0f64; b.size()];
        for bi in 0..n {
            for ci in 0..ch {
                let oc = if sum { ci } else { c0 + ci };
                for y in 0..oh {
                    for xx in 0..ow {
                        dx[((bi * ch + ci) * h + y / s) * w + xx / s] += g[((bi * och + oc) * oh + y) * ow + xx];
                    }
                }
            }
        }
        write(o, &dx);
        c0 += ch;
    }
    Ok(())
}

fn g_up(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    if bilinear(p) {
        // The deconvolution's data and weight gradients.
        let (_, dp) = bilinear_deconv(p)?;
        let bw = super::lookup("_backward_Deconvolution")?;
        let r = super::invoke(bw, &[g[0].clone(), i[0].clone(), i[1].clone()], dp, None, None).map_err(as_up)?;
        return Ok(r.into_iter().map(Some).collect());
    }
    let mut ins = vec![g[0].clone()];
    ins.extend(i.iter().cloned());
    let mut attrs = pass(p);
    attrs.retain(|(n, _)| *n != "num_args");
    attrs.push(("num_args", Value::Int(ins.len() as i64)));
    let r = super::call("_backward_UpSampling", &ins, &attrs)?;
    Ok(r.into_iter().map(Some).collect())
}

// ---- SVMOutput -------------------------------------------------------------------------------

const SVM_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "margin",
        PType::Float,
        Some("1"),
        "The loss function penalizes outputs that lie outside this margin. Default margin is 1.",
    ),
    ParamSpec::new(
        "regularization_coefficient",
        PType::Float,
        Some("1"),
        "Regularization parameter for the SVM. This balances the tradeoff between coefficient size and error.",
    ),
    ParamSpec::new("use_linear", PType::Bool, Some("False"), "Whether to use L1-SVM objective. L2-SVM objective is used by default."),
];

fn svm_infer(a: &InferArgs) -> Out {
    let (s, l) = (a.shapes[0], a.shapes[1]);
    if s.len() < 2 || l.iter().product::<usize>() != s[0] * s[2..].iter().product::<usize>() {
        return Err(a.err(format!(
            "label of shape {} does not match data of shape {} (one class index per row)",
            fmt_shape(l),
            fmt_shape(s)
        )));
    }
    like_data(a)
}

fn svm_fill(_: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    if let (Some(d), None) = (shapes[0].clone(), &shapes[1]) {
        if !d.is_empty() {
            shapes[1] = Some(Shape::from_slice(&[d[0]]));
        }
    }
    Ok(())
}

fn svm_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    if x.ptr != o.ptr {
        // SAFETY: distinct blobs of equal size.
        unsafe { std::ptr::copy_nonoverlapping(x.ptr, o.ptr, x.size() * x.dtype.size()) };
    }
    Ok(())
}

/// `_backward_SVMOutput(data, label)`: the hinge loss gradient (head gradient ignored).
fn svm_backward_compute(c: &mut OpCall) -> Result<()> {
    let (x, l) = (read(&c.inputs[0]), read(&c.inputs[1]));
    let k = c.inputs[0].shape[1];
    let (margin, reg, linear) = (c.params.float("margin"), c.params.float("regularization_coefficient"), c.params.bool("use_linear"));
    let dx: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(j, v)| {
            let (row, col) = (j / k, j % k);
            let sign = if l[row] as i64 == col as i64 { 1.0 } else { -1.0 };
            let slack = margin - sign * v;
            if linear {
                if slack > 0.0 {
                    -sign * reg
                } else {
                    0.0
                }
            } else {
                -2.0 * sign * slack.max(0.0) * reg
            }
        })
        .collect();
    write(&c.outputs[0], &dx);
    Ok(())
}

fn g_svm(p: &Params, i: &[NDArray], _: &[NDArray], _: &[NDArray]) -> Grads {
    Ok(vec![Some(bwd("_backward_SVMOutput", &[i[0].clone(), i[1].clone()], p)?), None])
}

// ---- softmax_cross_entropy -------------------------------------------------------------

fn sce_infer(a: &InferArgs) -> Out {
    float_input(a, 0)?;
    let (s, l) = (a.shapes[0], a.shapes[1]);
    if s.len() != 2 || l != [s[0]] {
        return Err(a.err(format!("data must be (batch, classes) and label (batch,): got data {}, label {}", fmt_shape(s), fmt_shape(l))));
    }
    Ok(vec![(Shape::from_slice(&[1]), a.dtypes[0])])
}

fn sce_backward_infer(a: &InferArgs) -> Out {
    float_input(a, 1)?;
    let (g, s, l) = (a.shapes[0], a.shapes[1], a.shapes[2]);
    if s.len() != 2 || l != [s[0]] || g.iter().product::<usize>() != 1 {
        return Err(a.err(format!(
            "ograd must hold one value, data be (batch, classes) and label (batch,): got ograd {}, data {}, label {}",
            fmt_shape(g),
            fmt_shape(s),
            fmt_shape(l)
        )));
    }
    Ok(vec![(Shape::from_slice(s), a.dtypes[1])])
}

fn softmax_rows(x: &[f64], k: usize) -> Vec<f64> {
    let mut out = vec![0f64; x.len()];
    for (r, row) in x.chunks(k).enumerate() {
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
        for (j, v) in row.iter().enumerate() {
            out[r * k + j] = (v - m).exp() / s;
        }
    }
    out
}

fn sce_compute(c: &mut OpCall) -> Result<()> {
    let (x, l) = (read(&c.inputs[0]), read(&c.inputs[1]));
    let k = c.inputs[0].shape[1];
    let sm = softmax_rows(&x, k);
    let mut loss = 0.0;
    for (r, lab) in l.iter().enumerate() {
        let j = (*lab as i64).clamp(0, k as i64 - 1) as usize;
        loss -= sm[r * k + j].max(1e-300).ln();
    }
    write(&c.outputs[0], &[loss]);
    Ok(())
}

fn sce_backward_compute(c: &mut OpCall) -> Result<()> {
    let (g, x, l) = (read(&c.inputs[0]), read(&c.inputs[1]), read(&c.inputs[2]));
    let k = c.inputs[1].shape[1];
    let mut dx = softmax_rows(&x, k);
    for (r, lab) in l.iter().enumerate() {
        let j = (*lab as i64).clamp(0, k as i64 - 1) as usize;
        dx[r * k + j] -= 1.0;
    }
    dx.iter_mut().for_each(|v| *v *= g[0]);
    write(&c.outputs[0], &dx);
    Ok(())
}

fn g_sce(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let dx = super::call1("_backward_softmax_cross_entropy", &[g[0].clone(), i[0].clone(), i[1].clone()], &[])?;
    Ok(vec![Some(dx), None])
}

// ---- all_finite, multi_all_finite, multi_sum_sq, reset_arrays ------------------------------

const ALL_FINITE_PARAMS: &[ParamSpec] = &[ParamSpec::new("init_output", PType::Bool, Some("True"), "Initialize output to 1.")];
const MULTI_FINITE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("num_arrays", PType::Int, Some("1"), "Number of arrays."),
    ParamSpec::new("init_output", PType::Bool, Some("True"), "Initialize output to 1."),
];
const NUM_ARRAYS: &[ParamSpec] = &[ParamSpec::new("num_arrays", PType::Int, None, "number of input arrays.")];

fn flag_infer(_: &InferArgs) -> Out {
    Ok(vec![(Shape::from_slice(&[1]), DType::F32)])
}

fn all_finite_compute(c: &mut OpCall) -> Result<()> {
    let o = &c.outputs[0];
    // SAFETY: the output is one float32.
    let out = unsafe { o.slice_mut::<f32>() };
    if c.params.bool("init_output") {
        out[0] = 1.0;
    }
    for b in c.inputs {
        if b.dtype.is_float() && read(b).iter().any(|v| !v.is_finite()) {
            out[0] = 0.0;
        }
    }
    Ok(())
}

fn sum_sq_infer(a: &InferArgs) -> Out {
    Ok(vec![(Shape::from_slice(&[a.shapes.len()]), DType::F32)])
}

fn sum_sq_compute(c: &mut OpCall) -> Result<()> {
    let v: Vec<f64> = c.inputs.iter().map(|b| read(b).iter().map(|x| x * x).sum()).collect();
    write(&c.outputs[0], &v);
    Ok(())
}

fn reset_infer(_: &InferArgs) -> Out {
    Ok(vec![])
}

fn reset_compute(c: &mut OpCall) -> Result<()> {
    for b in c.inputs {
        // SAFETY: the op declares every input as written (mutate).
        unsafe { std::ptr::write_bytes(b.ptr, 0, b.size() * b.dtype.size()) };
    }
    Ok(())
}

const ALL_INPUTS: &[usize] = &{
    let mut a = [0usize; 256];
    let mut i = 0;
    while i < 256 {
        a[i] = i;
        i += 1;
    }
    a
};

fn no_grad(_: &Params, i: &[NDArray], _: &[NDArray], _: &[NDArray]) -> Grads {
    Ok(vec![None; i.len()])
}

// ---- amp_cast, amp_multicast -------------------------------------------------------------------

const AMP_CAST_PARAMS: &[ParamSpec] = &[ParamSpec::new("dtype", PType::DType, None, "Output data type.")];
const AMP_MULTICAST_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("num_outputs", PType::Int, None, "Number of input/output pairs to be casted to the widest type."),
    ParamSpec::new("cast_narrow", PType::Bool, Some("False"), "Whether to cast to the narrowest type"),
];

fn amp_cast_infer(a: &InferArgs) -> Out {
    let to = a.params.dtype("dtype").unwrap_or(DType::F32);
    // As MXNet: only floating-point data is cast; other types pass through.
    let d = if a.dtypes[0].is_float() { to } else { a.dtypes[0] };
    Ok(vec![(Shape::from_slice(a.shapes[0]), d)])
}

fn cast_into(x: &super::Blob, o: &super::Blob) {
    if x.dtype == o.dtype {
        if x.ptr != o.ptr {
            // SAFETY: distinct blobs of equal size.
            unsafe { std::ptr::copy_nonoverlapping(x.ptr, o.ptr, x.size() * x.dtype.size()) };
        }
        return;
    }
    write(o, &read(x));
}

fn amp_cast_compute(c: &mut OpCall) -> Result<()> {
    cast_into(&c.inputs[0], &c.outputs[0]);
    Ok(())
}

fn rank(d: DType) -> u8 {
    match d {
        DType::F16 | DType::BF16 => 1,
        DType::F32 => 2,
        DType::F64 => 3,
        _ => 0,
    }
}

fn amp_multicast_infer(a: &InferArgs) -> Out {
    let n = a.params.int("num_outputs");
    if n as usize != a.shapes.len() {
        return Err(a.err(format!("num_outputs={n} but {} inputs were given", a.shapes.len())));
    }
    let floats: Vec<DType> = a.dtypes.iter().copied().filter(|d| d.is_float()).collect();
    let target = if a.params.bool("cast_narrow") {
        floats.iter().copied().min_by_key(|d| rank(*d))
    } else {
        floats.iter().copied().max_by_key(|d| rank(*d))
    };
    Ok(a.shapes.iter().zip(a.dtypes).map(|(s, d)| (Shape::from_slice(s), if d.is_float() { target.unwrap_or(*d) } else { *d })).collect())
}

fn amp_multicast_compute(c: &mut OpCall) -> Result<()> {
    for (x, o) in c.inputs.iter().zip(c.outputs.iter()) {
        cast_into(x, o);
    }
    Ok(())
}

fn g_amp_cast(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(i.iter()
        .zip(g)
        .map(|(x, gi)| super::call1("amp_cast", std::slice::from_ref(gi), &[("dtype", Value::DType(x.dtype()))]).ok())
        .collect())
}

// ---- registration --------------------------------------------------------------------------------

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "L2Normalization",
            "Normalize the input array using the L2 norm: ``out = data / sqrt(sum(data**2) + eps)`` over all but the first axis (instance), over axis 1 (channel) or over the axes after 1 (spatial).",
            DATA,
            L2N_PARAMS,
            l2n_infer,
            l2n_compute,
        )
        .grad(g_l2n),
    );
    r.add(OpDef::new(
        "_backward_L2Normalization",
        "Gradient of L2Normalization.",
        Arity::Fixed(&["ograd", "data"]),
        L2N_PARAMS,
        like_second,
        l2n_backward_compute,
    ));
    r.add(
        OpDef::new(
            "LRN",
            "Applies local response normalization across channels: ``out = x / (knorm + alpha/nsize * sum_{window} x^2)^beta``.",
            DATA,
            LRN_PARAMS,
            lrn_infer,
            lrn_compute,
        )
        .grad(g_lrn),
    );
    r.add(OpDef::new("_backward_LRN", "Gradient of LRN.", Arity::Fixed(&["ograd", "data"]), LRN_PARAMS, like_second, lrn_backward_compute));
    r.add(
        OpDef::new(
            "UpSampling",
            "Upsamples the given input data.

Nearest neighbour (``sample_type='nearest'``): several inputs are each scaled to the
first's size times ``scale`` and concatenated along the channels (or summed).

Bilinear (``sample_type='bilinear'``): two inputs, the data ``(N, C, H, W)`` and a
weight ``(C, 1, k, k)`` with ``k = 2*scale - scale%2`` (usually initialised with
``mx.init.Bilinear``), ``num_args=2`` and ``num_filter=C``: a deconvolution with stride
``scale``, one filter per channel, giving ``(N, C, H*scale, W*scale)``.",
            Arity::Variadic { name: "data", count: "num_args" },
            UP_PARAMS,
            up_infer,
            up_compute,
        )
        .fill(up_fill)
        .grad(g_up),
    );
    r.add(
        OpDef::new(
            "_backward_UpSampling",
            "Gradient of UpSampling.",
            Arity::Variadic { name: "data", count: "num_args" },
            UP_PARAMS,
            up_backward_infer,
            up_backward_compute,
        )
        .outputs(|p| (p.int("num_args") - 1).max(1) as usize),
    );
    r.add(
        OpDef::new(
            "SVMOutput",
            "Computes support vector machine based transformation of the input: the forward is the identity; the backward gives the hinge loss gradient (L1-SVM with use_linear, L2-SVM otherwise).",
            Arity::Fixed(&["data", "label"]),
            SVM_PARAMS,
            svm_infer,
            svm_compute,
        )
        .fill(svm_fill)
        .grad(g_svm),
    );
    r.add(OpDef::new(
        "_backward_SVMOutput",
        "Gradient of SVMOutput.",
        Arity::Fixed(&["data", "label"]),
        SVM_PARAMS,
        like_data,
        svm_backward_compute,
    ));
    r.add(
        OpDef::new(
            "softmax_cross_entropy",
            "Calculate cross entropy of softmax output and one-hot label: the sum over the batch of ``-log(softmax(data)[label])``.",
            Arity::Fixed(&["data", "label"]),
            &[],
            sce_infer,
            sce_compute,
        )
        .grad(g_sce),
    );
    r.add(OpDef::new(
        "_backward_softmax_cross_entropy",
        "Gradient of softmax_cross_entropy.",
        Arity::Fixed(&["ograd", "data", "label"]),
        &[],
        sce_backward_infer,
        sce_backward_compute,
    ));
    r.add(
        OpDef::new(
            "all_finite",
            "Check if all the float numbers in the array are finite (used for AMP)",
            DATA,
            ALL_FINITE_PARAMS,
            flag_infer,
            all_finite_compute,
        )
        .grad(no_grad),
    );
    r.add(
        OpDef::new(
            "multi_all_finite",
            "Check if all the float numbers in all the arrays are finite (used for AMP)",
            Arity::Variadic { name: "data", count: "num_arrays" },
            MULTI_FINITE_PARAMS,
            flag_infer,
            all_finite_compute,
        )
        .grad(no_grad),
    );
    r.add(
        OpDef::new(
            "multi_sum_sq",
            "Compute the sums of squares of multiple arrays",
            Arity::Variadic { name: "data", count: "num_arrays" },
            NUM_ARRAYS,
            sum_sq_infer,
            sum_sq_compute,
        )
        .grad(no_grad),
    );
    r.add(
        OpDef::new(
            "reset_arrays",
            "Set to zero multiple arrays",
            Arity::Variadic { name: "data", count: "num_arrays" },
            NUM_ARRAYS,
            reset_infer,
            reset_compute,
        )
        .mutate(ALL_INPUTS)
        .outputs(|_| 0)
        .grad(no_grad),
    );
    r.add(
        OpDef::new(
            "amp_cast",
            "Cast function between low precision float/FP32 used by AMP.",
            DATA,
            AMP_CAST_PARAMS,
            amp_cast_infer,
            amp_cast_compute,
        )
        .unnamed_inputs()
        .grad(g_amp_cast),
    );
    r.add(
        OpDef::new(
            "amp_multicast",
            "Cast function used by AMP, that casts its inputs to the common widest type (or the narrowest with cast_narrow).",
            Arity::Variadic { name: "data", count: "num_outputs" },
            AMP_MULTICAST_PARAMS,
            amp_multicast_infer,
            amp_multicast_compute,
        )
        .outputs(|p| p.int("num_outputs").max(0) as usize)
        .grad(g_amp_cast),
    );
}
