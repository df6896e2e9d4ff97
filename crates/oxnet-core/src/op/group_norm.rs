//! `GroupNorm` as MXNet 1.9.1 defines it: the channels of (N, C, ...) data split
//! into `num_groups` groups, each normalised over its channels and spatial
//! positions; `gamma` and `beta` have one value per group. Outputs the result and,
//! with `output_mean_var`, the per-(sample, group) mean and standard deviation
//! `sqrt(var + eps)`. `_backward_GroupNorm` gives the data, gamma and beta gradients.

use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};
use crate::with_dtype;

type Out = Result<Vec<(Shape, DType)>>;
type Grads = Result<Vec<Option<NDArray>>>;

const PARAMS: &[ParamSpec] = &[
    ParamSpec::new("num_groups", PType::Int, Some("1"), "Total number of groups."),
    ParamSpec::new("eps", PType::Float, Some("1e-05"), "An `epsilon` parameter to prevent division by 0."),
    ParamSpec::new("output_mean_var", PType::Bool, Some("False"), "Output the mean and std calculated along the given axis."),
];

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

/// `(batch, groups, elements per group)`.
fn geometry(op: &str, p: &Params, s: &[usize]) -> Result<(usize, usize, usize)> {
    let g = p.int("num_groups");
    if s.len() < 2 || g <= 0 || !s[1].is_multiple_of(g as usize) {
        return Err(Error::op(op, format!("data must be (N, C, ...) with C a multiple of num_groups={g}, got shape {}", fmt_shape(s))));
    }
    let g = g as usize;
    Ok((s[0], g, s[1..].iter().product::<usize>() / g))
}

fn infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    let (n, g, _) = geometry(a.op.name, a.params, s)?;
    for (i, name) in [(1, "gamma"), (2, "beta")] {
        if a.shapes[i] != [g] {
            return Err(a.err(format!("{name} must have shape ({g},) (one value per group), got {}", fmt_shape(a.shapes[i]))));
        }
    }
    let d = super::check_same_dtype(a)?;
    if !d.is_float() {
        return Err(a.err(format!("data must be a floating-point array, got {}", d.name())));
    }
    let stat = Shape::from_slice(&[n, g]);
    Ok(vec![(Shape::from_slice(s), d), (stat.clone(), d), (stat, d)])
}

fn fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let g = p.int("num_groups").max(1) as usize;
    for slot in shapes.iter_mut().skip(1).take(2) {
        if slot.is_none() {
            *slot = Some(Shape::from_slice(&[g]));
        }
    }
    Ok(())
}

/// Per (sample, group): mean and std.
fn stats(x: &[f64], (n, g, m): (usize, usize, usize), eps: f64) -> (Vec<f64>, Vec<f64>) {
    let mut mean = vec![0f64; n * g];
    let mut std = vec![0f64; n * g];
    for k in 0..n * g {
        let v = &x[k * m..(k + 1) * m];
        let mu = v.iter().sum::<f64>() / m as f64;
        let var = v.iter().map(|t| (t - mu) * (t - mu)).sum::<f64>() / m as f64;
        mean[k] = mu;
        std[k] = (var + eps).sqrt();
    }
    (mean, std)
}

fn compute(c: &mut OpCall) -> Result<()> {
    let x = read(&c.inputs[0]);
    let (gamma, beta) = (read(&c.inputs[1]), read(&c.inputs[2]));
    let geo = geometry(c.op.name, c.params, &c.inputs[0].shape)?;
    let (_, g, m) = geo;
    let (mean, std) = stats(&x, geo, c.params.float("eps"));
    let y: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let k = i / m;
            (v - mean[k]) / std[k] * gamma[k % g] + beta[k % g]
        })
        .collect();
    write(&c.outputs[0], &y);
    write(&c.outputs[1], &mean);
    write(&c.outputs[2], &std);
    Ok(())
}

fn backward_infer(a: &InferArgs) -> Out {
    Ok(vec![
        (Shape::from_slice(a.shapes[1]), a.dtypes[1]),
        (Shape::from_slice(a.shapes[2]), a.dtypes[2]),
        (Shape::from_slice(a.shapes[2]), a.dtypes[2]),
    ])
}

/// `_backward_GroupNorm(ograd, data, gamma)` -> (d data, d gamma, d beta).
fn backward_compute(c: &mut OpCall) -> Result<()> {
    let (og, x, gamma) = (read(&c.inputs[0]), read(&c.inputs[1]), read(&c.inputs[2]));
    let geo = geometry(c.op.name, c.params, &c.inputs[1].shape)?;
    let (n, g, m) = geo;
    let (mean, std) = stats(&x, geo, c.params.float("eps"));
    let mut dx = vec![0f64; x.len()];
    let (mut dgamma, mut dbeta) = (vec![0f64; g], vec![0f64; g]);
    for k in 0..n * g {
        let gi = k % g;
        let r = k * m..(k + 1) * m;
        let xh: Vec<f64> = x[r.clone()].iter().map(|v| (v - mean[k]) / std[k]).collect();
        let o = &og[r.clone()];
        let mut s1 = 0.0;
        let mut s2 = 0.0;
        for j in 0..m {
            dgamma[gi] += xh[j] * o[j];
            dbeta[gi] += o[j];
            let t = o[j] * gamma[gi] / std[k];
            s1 += t;
            s2 += t * xh[j];
        }
        let (s1, s2) = (s1 / m as f64, s2 / m as f64);
        for j in 0..m {
            dx[k * m + j] = o[j] * gamma[gi] / std[k] - s1 - xh[j] * s2;
        }
    }
    write(&c.outputs[0], &dx);
    write(&c.outputs[1], &dgamma);
    write(&c.outputs[2], &dbeta);
    Ok(())
}

fn grad(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let attrs: Vec<(&str, Value)> = p.to_strings().into_iter().map(|(n, v)| (n, Value::Str(v))).collect();
    let r = super::call("_backward_GroupNorm", &[g[0].clone(), i[0].clone(), i[1].clone()], &attrs)?;
    Ok(r.into_iter().map(Some).collect())
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "GroupNorm",
            "Group normalization: the C channels of (N, C, ...) data are split into num_groups groups, each normalised to zero mean and unit variance over its channels and positions, then scaled by gamma and shifted by beta (one value per group).",
            Arity::Fixed(&["data", "gamma", "beta"]),
            PARAMS,
            infer,
            compute,
        )
        .outputs(|_| 3)
        .visible(|p| if p.bool("output_mean_var") { 3 } else { 1 })
        .output_names(|_| super::nn::names(&["output", "mean", "std"]))
        .fill(fill)
        .grad(grad),
    );
    r.add(
        OpDef::new(
            "_backward_GroupNorm",
            "Gradient of GroupNorm.",
            Arity::Fixed(&["ograd", "data", "gamma"]),
            PARAMS,
            backward_infer,
            backward_compute,
        )
        .outputs(|_| 3),
    );
}
