//! `_sg_oxnet_conv`: a convolution with its following BatchNorm (inference form),
//! residual add and ReLU/ReLU6 fused into the convolution's output pass. It is
//! made only by the inference fusion of hybridized graphs (`graph::fuse`), never by
//! users, in the spirit of MXNet's `_sg_mkldnn_conv`.
//!
//! Inputs: `data`, `weight`, `bias` (unless `no_bias`), then with a BatchNorm its
//! `gamma`, `beta`, `moving_mean`, `moving_var`, then with a residual add the other
//! addend `residual` (the output's shape). Parameters: Convolution's, plus the
//! fusion's own, set by the graph pass (`__bn`, `__eps`, `__fix_gamma`,
//! `__residual`, `__lo`/`__hi` for the clamp of the activation).
//!
//! The BatchNorm is applied as a per-filter scale and shift of the convolution's
//! sums, `y = conv(x)·s + ((b - mean)·s + beta)` with `s = gamma / sqrt(var + eps)`,
//! so the weights are never rewritten (a new `moving_var` or `gamma` takes effect
//! on the next call, as the unfused graph's would).

use super::nn_conv::{conv_geom, CONV_PARAMS};
use super::{Arity, InferArgs, OpCall, OpDef, Params, Registry};
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::kernels::cpu::conv::{self as k, ConvElem, Epilogue};
use crate::op::Blob;
use crate::shape::{fmt_shape, Shape};
use crate::with_float;

pub const NAME: &str = "_sg_oxnet_conv";

const ALL: &[&str] = &["data", "weight", "bias", "gamma", "beta", "moving_mean", "moving_var", "residual"];

fn select(p: &Params) -> &'static [&'static str] {
    const SETS: [&[&str]; 8] = [
        &["data", "weight", "bias"],
        &["data", "weight"],
        &["data", "weight", "bias", "gamma", "beta", "moving_mean", "moving_var"],
        &["data", "weight", "gamma", "beta", "moving_mean", "moving_var"],
        &["data", "weight", "bias", "residual"],
        &["data", "weight", "residual"],
        &["data", "weight", "bias", "gamma", "beta", "moving_mean", "moving_var", "residual"],
        &["data", "weight", "gamma", "beta", "moving_mean", "moving_var", "residual"],
    ];
    let i = usize::from(p.bool("no_bias")) + 2 * usize::from(p.bool("__bn")) + 4 * usize::from(p.bool("__residual"));
    SETS[i]
}

/// Index of each optional input: (bias, first BatchNorm vector, residual).
fn slots(p: &Params) -> (Option<usize>, Option<usize>, Option<usize>) {
    let bias = (!p.bool("no_bias")).then_some(2);
    let next = 2 + usize::from(bias.is_some());
    let bn = p.bool("__bn").then_some(next);
    let res = p.bool("__residual").then_some(next + if bn.is_some() { 4 } else { 0 });
    (bias, bn, res)
}

fn infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let g = conv_geom(NAME, a.params, a.shapes[0])?;
    let d = a.dtypes[0];
    if !d.is_float() {
        return Err(a.err(format!("{} inputs are not supported: float32, float64, float16 or bfloat16 only", d.name())));
    }
    let nd = a.shapes[0].len() - 2;
    let mut out = Shape::from_slice(&[g.batch, g.f]);
    out.extend_from_slice(&g.y[3 - nd..]);
    let (bias, bn, res) = slots(a.params);
    // Data, weight, bias and residual share one dtype; the BatchNorm vectors may be
    // float32 under float16/bfloat16 data (as BatchNorm itself allows; AMP does it).
    let bn_range = bn.map_or(0..0, |b| b..b + 4);
    for i in 1..a.dtypes.len() {
        let di = a.dtypes[i];
        let ok = if bn_range.contains(&i) { di.is_float() } else { di == d };
        if !ok {
            return Err(a.err(format!("input {} is {} but data is {}", select(a.params).get(i).unwrap_or(&"?"), di.name(), d.name())));
        }
    }
    for i in bias.into_iter().chain(bn.into_iter().flat_map(|b| b..b + 4)) {
        if a.shapes[i] != [g.f] {
            return Err(a.err(format!("input {} must have shape ({},), got {}", select(a.params).get(i).unwrap_or(&"?"), g.f, fmt_shape(a.shapes[i]))));
        }
    }
    if let Some(r) = res {
        if a.shapes[r] != &out[..] {
            return Err(a.err(format!("residual must have the output's shape {}, got {}", fmt_shape(&out), fmt_shape(a.shapes[r]))));
        }
    }
    Ok(vec![(out, d)])
}

fn vals(b: &Blob) -> Vec<f64> {
    with_float!(b.dtype, T, {
        // SAFETY: the engine operation owning this call orders every access.
        unsafe { b.slice::<T>() }.iter().map(|v| Element::to_f64(*v)).collect()
    })
}

fn run<T: ConvElem>(c: &OpCall) -> Result<()> {
    let p = c.params;
    let g = conv_geom(NAME, p, &c.inputs[0].shape)?;
    let (bias, bn, res) = slots(p);
    let b: Option<Vec<f64>> = bias.map(|i| vals(&c.inputs[i]));
    let (scale, shift): (Option<Vec<T>>, Option<Vec<T>>) = match bn {
        Some(i) => {
            let eps = p.float("__eps");
            let gamma = if p.bool("__fix_gamma") { vec![1.0; g.f] } else { vals(&c.inputs[i]) };
            let (beta, mean, var) = (vals(&c.inputs[i + 1]), vals(&c.inputs[i + 2]), vals(&c.inputs[i + 3]));
            let s: Vec<f64> = (0..g.f).map(|f| gamma[f] / (var[f] + eps).sqrt()).collect();
            let sh: Vec<T> = (0..g.f).map(|f| T::from_f64((b.as_ref().map_or(0.0, |b| b[f]) - mean[f]) * s[f] + beta[f])).collect();
            (Some(s.into_iter().map(T::from_f64).collect()), Some(sh))
        }
        None => (None, b.map(|b| b.into_iter().map(T::from_f64).collect())),
    };
    let clamp = p.opt_float("__lo").map(|lo| (T::from_f64(lo), T::from_f64(p.opt_float("__hi").unwrap_or(f64::INFINITY))));
    let ep = Epilogue {
        scale: scale.as_ref().map(|v| v.as_ptr()),
        bias: shift.as_ref().map(|v| v.as_ptr()),
        residual: res.map(|i| c.inputs[i].ptr_as::<T>() as *const T),
        clamp,
    };
    // SAFETY: inference checked every extent; the output aliases no input.
    unsafe { k::conv_forward_fused::<T>(&g, c.inputs[0].ptr_as(), c.inputs[1].ptr_as(), &ep, c.outputs[0].ptr_as()) }
}

fn compute(c: &mut OpCall) -> Result<()> {
    with_float!(c.outputs[0].dtype, T, { run::<T>(c) })
}

pub fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            NAME,
            "Convolution fused with the BatchNorm, residual add and ReLU that follow it (made by the inference fusion of hybridized graphs).",
            Arity::Dynamic { all: ALL, select },
            CONV_PARAMS,
            infer,
            compute,
        )
        .cost(16),
    );
}
