//! Sampling with per-element parameters: `_sample_uniform normal gamma exponential
//! poisson negative_binomial generalized_negative_binomial` (parameter arrays of one
//! shape P, output P + `shape`: `prod(shape)` draws per parameter element),
//! `_sample_multinomial` (with `get_prob` and its gradient), `_shuffle` (rows along
//! the first axis) and `_sample_unique_zipfian`. Parallel and deterministic as
//! described in [`super::dist`]. As in MXNet, the parameter values themselves are not
//! checked (a negative scale scales by a negative number).

use super::dist::{self, fill_chunks, Stream};
use super::random::g_zero;
use super::{call, Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::kernels::cpu::{par_for, SendPtr};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};
use crate::with_dtype;

const SHAPE: ParamSpec = ParamSpec::new("shape", PType::Tuple, Some("[]"), "Shape to be sampled from each random distribution.");
const DTYPE: ParamSpec = ParamSpec::new(
    "dtype",
    PType::OptDType,
    Some("None"),
    "DType of the output in case this can't be inferred. Defaults to float32 if not defined (dtype=None).",
);
const SAMPLE_PARAMS: &[ParamSpec] = &[SHAPE, DTYPE];
const MULTINOMIAL_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("shape", PType::Tuple, Some("[]"), "Shape to be sampled from each random distribution."),
    ParamSpec::new("get_prob", PType::Bool, Some("False"), "Whether to also return the log probability of sampled result. This is usually used for differentiating through stochastic variables, e.g. in reinforcement learning."),
    ParamSpec::new("dtype", PType::OptDType, Some("int32"), "DType of the output in case this can't be inferred."),
];
const ZIPFIAN_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("range_max", PType::Int, None, "The number of possible classes."),
    ParamSpec::new(
        "shape",
        PType::Tuple,
        Some("None"),
        "2-D shape of the output, where shape[0] is the batch size, and shape[1] is the number of candidates to sample for each batch.",
    ),
];

fn key(c: &mut OpCall) -> Result<u64> {
    c.rng.as_mut().map(|g| g.next_key()).ok_or_else(|| Error::op(c.op.name, "no random generator"))
}

fn extra_shape(a: &InferArgs) -> Result<Shape> {
    let t = a.params.tuple("shape");
    if let Some(d) = t.iter().find(|d| **d < 0) {
        return Err(a.err(format!("negative dimension {d} in shape {t:?}")));
    }
    Ok(t.iter().map(|d| *d as usize).collect())
}

fn infer_sample(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let first = a.shapes[0];
    for (i, s) in a.shapes.iter().enumerate().skip(1) {
        if *s != first {
            return Err(a.err(format!(
                "the parameter arrays must have the same shape: input 0 has shape {}, input {i} has shape {}",
                fmt_shape(first),
                fmt_shape(s)
            )));
        }
    }
    for (i, d) in a.dtypes.iter().enumerate() {
        if !d.is_float() {
            return Err(a.err(format!("parameter input {i} must be a floating point array, got {}", d.name())));
        }
        if *d != a.dtypes[0] {
            return Err(a.err(format!("Incompatible attr at {i}-th input: expected {}, got {}", a.dtypes[0].name(), d.name())));
        }
    }
    let d = a.params.dtype("dtype").unwrap_or(DType::F32);
    if !d.is_float() {
        return Err(a.err(format!("Invalid Input: '{}', valid values are: {{'None', 'float16', 'float32', 'float64'}}", d.name())));
    }
    let mut out: Shape = first.into();
    out.extend(extra_shape(a)?);
    Ok(vec![(out, d)])
}

fn read_f64(b: &super::Blob) -> Vec<f64> {
    // SAFETY: inputs are only read during the op.
    with_dtype!(b.dtype, T, { unsafe { b.slice::<T>() }.iter().map(|v| v.to_f64()).collect() })
}

fn sample_compute(c: &mut OpCall) -> Result<()> {
    let k = key(c)?;
    let p1 = read_f64(&c.inputs[0]);
    let p2 = if c.inputs.len() > 1 { read_f64(&c.inputs[1]) } else { Vec::new() };
    let o = &c.outputs[0];
    let n = o.size();
    let m = n.checked_div(p1.len()).unwrap_or(1);
    let name = c.op.name.trim_start_matches("_sample_");
    let f: fn(&mut Stream, f64, f64) -> f64 = match name {
        "uniform" => |s, lo, hi| lo + (hi - lo) * s.uniform(),
        "normal" => |s, mu, sigma| mu + sigma * s.normal(),
        "gamma" => |s, a, b| dist::gamma(s, a) * b,
        "exponential" => |s, lam, _| -(1.0 - s.uniform()).ln() / lam,
        "poisson" => |s, lam, _| dist::poisson(s, lam),
        "negative_binomial" => |s, k, p| dist::negative_binomial(s, k, p),
        _ => |s, mu, alpha| dist::generalized_negative_binomial(s, mu, alpha),
    };
    let (p1, p2) = (&p1, &p2);
    with_dtype!(o.dtype, T, {
        fill_chunks::<T>(o.ptr_as(), n, k, |s, i| {
            let j = i / m;
            f(s, p1[j], p2.get(j).copied().unwrap_or(0.0))
        })
    });
    Ok(())
}

// ---- multinomial ----

fn infer_multinomial(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let s = a.shapes[0];
    if s.is_empty() {
        return Err(a.err("data must have at least one dimension (the outcomes)"));
    }
    if !a.dtypes[0].is_float() {
        return Err(a.err(format!("data must be a floating point array of probabilities, got {}", a.dtypes[0].name())));
    }
    let d = a.params.dtype("dtype").unwrap_or(DType::I32);
    let k = s[s.len() - 1] as u64;
    let limit: u64 = match d {
        DType::U8 => 1 << 8,
        DType::F16 => 1 << 11,
        DType::F32 => 1 << 24,
        DType::I32 => 1 << 31,
        DType::F64 => 1 << 53,
        other => {
            return Err(a.err(format!(
                "Invalid Input: '{}', valid values are: {{'float16', 'float32', 'float64', 'int32', 'uint8'}}",
                other.name()
            )))
        }
    };
    if k > limit {
        return Err(
            a.err(format!("Check failed: the number of outcomes ({k}) is too large for the output dtype {} (at most {limit})", d.name()))
        );
    }
    let mut out: Shape = s[..s.len() - 1].into();
    out.extend(extra_shape(a)?);
    if out.is_empty() {
        out.push(1); // one draw from one distribution: shape (1,), as MXNet 1.x
    }
    let mut v = vec![(out.clone(), d)];
    if a.params.bool("get_prob") {
        v.push((out, a.dtypes[0]));
    }
    Ok(v)
}

fn multinomial_compute(c: &mut OpCall) -> Result<()> {
    let key = key(c)?;
    let data = read_f64(&c.inputs[0]);
    let k = *c.inputs[0].shape.last().unwrap_or(&1);
    let rows = data.len().checked_div(k).unwrap_or(0);
    // Cumulative sums per distribution (not renormalized, as MXNet).
    let mut cdf = data.clone();
    for row in cdf.chunks_mut(k.max(1)).take(rows) {
        let mut acc = 0.0;
        for v in row.iter_mut() {
            acc += *v;
            *v = acc;
        }
    }
    let o = &c.outputs[0];
    let n = o.size();
    let m = n.checked_div(rows).unwrap_or(1);
    let cdf = &cdf;
    let pick = |s: &mut Stream, i: usize| -> usize {
        let r = i / m;
        let u = s.uniform();
        let row = &cdf[r * k..(r + 1) * k];
        row.partition_point(|&c| c <= u).min(k.saturating_sub(1))
    };
    with_dtype!(o.dtype, T, { fill_chunks::<T>(o.ptr_as(), n, key, |s, i| pick(s, i) as f64) });
    if c.outputs.len() > 1 {
        let lp = &c.outputs[1];
        let idx = read_f64(o);
        with_dtype!(lp.dtype, T, {
            // SAFETY: the second output is only written by this op.
            let l = unsafe { lp.slice_mut::<T>() };
            for (i, v) in l.iter_mut().enumerate() {
                let r = i / m;
                *v = T::from_f64(data[r * k + idx[i] as usize].ln());
            }
        });
    }
    Ok(())
}

/// d(log p[y]) / d p[y] = 1 / p[y], summed over the draws.
fn g_multinomial(p: &Params, ins: &[NDArray], outs: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    if !p.bool("get_prob") || outs.len() < 2 {
        return Ok(vec![None]);
    }
    let g = call("_backward_sample_multinomial", &[og[1].clone(), ins[0].clone(), outs[0].clone()], &[])?;
    Ok(vec![g.into_iter().next()])
}

fn infer_multinomial_backward(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    Ok(vec![(a.shapes[1].into(), a.dtypes[1])])
}

fn multinomial_backward(c: &mut OpCall) -> Result<()> {
    let og = read_f64(&c.inputs[0]);
    let data = read_f64(&c.inputs[1]);
    let idx = read_f64(&c.inputs[2]);
    let k = *c.inputs[1].shape.last().unwrap_or(&1);
    let rows = data.len().checked_div(k).unwrap_or(0);
    let m = idx.len().checked_div(rows).unwrap_or(1);
    let mut g = vec![0.0f64; data.len()];
    for (i, &y) in idx.iter().enumerate() {
        let j = (i / m) * k + y as usize;
        g[j] += og[i] / data[j];
    }
    let o = &c.outputs[0];
    with_dtype!(o.dtype, T, {
        // SAFETY: the output is only written by this op.
        for (d, v) in unsafe { o.slice_mut::<T>() }.iter_mut().zip(&g) {
            *d = T::from_f64(*v);
        }
    });
    Ok(())
}

// ---- shuffle ----

fn infer_same(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    Ok(vec![(a.shapes[0].into(), a.dtypes[0])])
}

fn shuffle_compute(c: &mut OpCall) -> Result<()> {
    let key = key(c)?;
    let x = &c.inputs[0];
    let o = &c.outputs[0];
    let rows = x.shape.first().copied().unwrap_or(1);
    let n = x.size();
    let row = n.checked_div(rows).unwrap_or(0);
    let mut perm: Vec<usize> = (0..rows).collect();
    let mut s = Stream::new(key, 0);
    for i in (1..rows).rev() {
        let j = s.below(i as u64 + 1) as usize;
        perm.swap(i, j);
    }
    let bytes = x.dtype.size() * row;
    let (src, dst) = (SendPtr(x.ptr), SendPtr(o.ptr));
    let perm = &perm;
    par_for(rows, (1 << 16) / bytes.max(1) + 1, move |a, b| {
        for (r, &from) in perm.iter().enumerate().take(b).skip(a) {
            // SAFETY: rows of distinct indices; the output does not alias the input.
            unsafe { std::ptr::copy_nonoverlapping(src.get().add(from * bytes), dst.get().add(r * bytes), bytes) };
        }
    });
    Ok(())
}

// ---- unique zipfian ----

fn infer_zipfian(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let s = extra_shape(a)?;
    if s.len() != 2 {
        return Err(a.err(format!("shape must be 2-D (batch_size, num_sampled), got {}", fmt_shape(&s))));
    }
    let range = a.params.int("range_max");
    if range <= 0 || s[1] as i64 > range {
        return Err(a.err(format!("cannot draw {} unique classes out of range_max = {range}", s[1])));
    }
    Ok(vec![(s.clone(), DType::I64), (Shape::from(&[s[0]][..]), DType::I64)])
}

fn zipfian_compute(c: &mut OpCall) -> Result<()> {
    let key = key(c)?;
    let range = c.params.int("range_max") as u64;
    let (batch, num) = (c.outputs[0].shape[0], c.outputs[0].shape[1]);
    let log_range = ((range + 1) as f64).ln();
    let (out, trials) = (SendPtr(c.outputs[0].ptr_as::<i64>()), SendPtr(c.outputs[1].ptr_as::<i64>()));
    par_for(batch, 1, move |a, b| {
        for r in a..b {
            let mut s = Stream::new(key, r as u64);
            let mut seen = std::collections::HashSet::with_capacity(num * 2);
            let mut t = 0i64;
            let mut filled = 0;
            while filled < num {
                t += 1;
                let v = (((s.uniform() * log_range).exp() - 1.0) as u64).min(range - 1);
                if seen.insert(v) {
                    // SAFETY: row r of the output belongs to this iteration.
                    unsafe { *out.get().add(r * num + filled) = v as i64 };
                    filled += 1;
                }
            }
            // SAFETY: as above.
            unsafe { *trials.get().add(r) = t };
        }
    });
    Ok(())
}

fn multinomial_outputs(p: &Params) -> usize {
    1 + usize::from(p.bool("get_prob"))
}

/// (name, aliases, doc, inputs)
type SampleEntry = (&'static str, &'static [&'static str], &'static str, &'static [&'static str]);

pub(super) fn register(r: &mut Registry) {
    let ops: [SampleEntry; 7] = [
        ("_sample_uniform", &["sample_uniform"], "Concurrent sampling from multiple uniform distributions on [low, high).", &["low", "high"]),
        ("_sample_normal", &["sample_normal"], "Concurrent sampling from multiple normal distributions with parameters mu (mean) and sigma (standard deviation).", &["mu", "sigma"]),
        ("_sample_gamma", &["sample_gamma"], "Concurrent sampling from multiple gamma distributions with parameters alpha (shape) and beta (scale).", &["alpha", "beta"]),
        ("_sample_exponential", &["sample_exponential"], "Concurrent sampling from multiple exponential distributions with parameters lambda (rate).", &["lam"]),
        ("_sample_poisson", &["sample_poisson"], "Concurrent sampling from multiple Poisson distributions with parameters lambda (rate).", &["lam"]),
        ("_sample_negative_binomial", &["sample_negative_binomial"], "Concurrent sampling from multiple negative binomial distributions with parameters k (failure limit) and p (failure probability).", &["k", "p"]),
        (
            "_sample_generalized_negative_binomial",
            &["sample_generalized_negative_binomial"],
            "Concurrent sampling from multiple generalized negative binomial distributions with parameters mu (mean) and alpha (dispersion).",
            &["mu", "alpha"],
        ),
    ];
    for (name, alias, doc, inputs) in ops {
        r.add(
            OpDef::new(name, doc, Arity::Fixed(inputs), SAMPLE_PARAMS, infer_sample, sample_compute)
                .aliases(alias)
                .random()
                .cost(8)
                .grad(g_zero),
        );
    }
    r.add(
        OpDef::new(
            "_sample_multinomial",
            "Concurrent sampling from multiple multinomial distributions (the last axis of data holds the probabilities of each distribution).",
            Arity::Fixed(&["data"]),
            MULTINOMIAL_PARAMS,
            infer_multinomial,
            multinomial_compute,
        ).unnamed_inputs()
        .aliases(&["sample_multinomial"])
        .outputs(multinomial_outputs)
        .random()
        .cost(8)
        .grad(g_multinomial),
    );
    r.add(OpDef::new(
        "_backward_sample_multinomial",
        "Gradient of _sample_multinomial's log-probability output with respect to its data.",
        Arity::Fixed(&["ograd", "data", "sample"]),
        &[],
        infer_multinomial_backward,
        multinomial_backward,
    ));
    r.add(
        OpDef::new(
            "_shuffle",
            "Randomly shuffle the elements along the first axis.",
            Arity::Fixed(&["data"]),
            &[],
            infer_same,
            shuffle_compute,
        )
        .unnamed_inputs()
        .aliases(&["shuffle"])
        .random()
        .grad(g_zero),
    );
    r.add(
        OpDef::new(
            "_sample_unique_zipfian",
            "Draw random samples from an approximately log-uniform or Zipfian distribution without replacement: P(class) = (log(class + 2) - log(class + 1)) / log(range_max + 1). Also returns the number of trials per batch row.",
            Arity::Fixed(&[]),
            ZIPFIAN_PARAMS,
            infer_zipfian,
            zipfian_compute,
        )
        .outputs(|_| 2)
        .random(),
    );
}
