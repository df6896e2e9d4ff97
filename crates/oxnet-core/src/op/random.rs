//! Random sampling ops: `_random_uniform`, `_random_normal`, `_random_randint`.
//! Each draws a fresh key from the device's generator (in engine order) and fills
//! its output from the counter-based stream, in parallel.

use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Registry};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::kernels::cpu::{par_for, SendPtr};
use crate::random::{bits, uniform01};
use crate::shape::Shape;
use crate::with_dtype;

const NONE: Arity = Arity::Fixed(&[]);
const SHAPE: ParamSpec = ParamSpec::new("shape", PType::Tuple, Some("()"), "Shape of the output.");
const CTX: ParamSpec = ParamSpec::new("ctx", PType::Ctx, Some("cpu(0)"), "Context of output, in format [cpu|gpu|cpu_pinned](n). Only used for imperative calls.");

const UNIFORM_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("low", PType::Float, Some("0"), "Lower bound of the distribution."),
    ParamSpec::new("high", PType::Float, Some("1"), "Upper bound of the distribution."),
    SHAPE,
    CTX,
    ParamSpec::new("dtype", PType::DType, Some("float32"), "DType of the output in case this can't be inferred."),
];
const NORMAL_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("loc", PType::Float, Some("0"), "Mean of the distribution."),
    ParamSpec::new("scale", PType::Float, Some("1"), "Standard deviation of the distribution."),
    SHAPE,
    CTX,
    ParamSpec::new("dtype", PType::DType, Some("float32"), "DType of the output in case this can't be inferred."),
];
const RANDINT_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("low", PType::Int, None, "Lower bound of the distribution."),
    ParamSpec::new("high", PType::Int, None, "Upper bound of the distribution."),
    SHAPE,
    CTX,
    ParamSpec::new("dtype", PType::DType, Some("int32"), "DType of the output in case this can't be inferred."),
];

fn infer_random(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let shape = super::init::shape_param(a)?;
    let d = a.params.dtype("dtype").unwrap_or(DType::F32);
    match a.op.name {
        "_random_randint" => {
            if !matches!(d, DType::I32 | DType::I64) {
                return Err(a.err(format!("dtype must be int32 or int64, got {}", d.name())));
            }
            if a.params.int("low") >= a.params.int("high") {
                return Err(a.err(format!("low ({}) must be less than high ({})", a.params.int("low"), a.params.int("high"))));
            }
        }
        "_random_normal" if a.params.float("scale") < 0.0 => return Err(a.err("scale must be non-negative")),
        "_random_uniform" if a.params.float("low") > a.params.float("high") => {
            return Err(a.err("low must be less than or equal to high"))
        }
        _ => {}
    }
    if !d.is_float() && a.op.name != "_random_randint" {
        return Err(a.err(format!("dtype must be a floating point type, got {}", d.name())));
    }
    Ok(vec![(shape, d)])
}

fn key(c: &mut OpCall) -> Result<u64> {
    c.rng.as_mut().map(|g| g.next_key()).ok_or_else(|| Error::op(c.op.name, "no random generator"))
}

fn fill_with<T: Element>(o: *mut T, n: usize, f: impl Fn(u64) -> f64 + Sync + Send) {
    let o = SendPtr(o);
    par_for(n, 1 << 14, move |s, e| {
        let o = o.get();
        for i in s..e {
            // SAFETY: i < n.
            unsafe { *o.add(i) = T::from_f64(f(i as u64)) };
        }
    });
}

fn uniform_compute(c: &mut OpCall) -> Result<()> {
    let k = key(c)?;
    let (lo, hi) = (c.params.float("low"), c.params.float("high"));
    let o = &c.outputs[0];
    with_dtype!(o.dtype, T, { fill_with::<T>(o.ptr_as(), o.size(), move |i| lo + (hi - lo) * uniform01(k, i)) });
    Ok(())
}

fn normal_compute(c: &mut OpCall) -> Result<()> {
    let k = key(c)?;
    let (loc, scale) = (c.params.float("loc"), c.params.float("scale"));
    let o = &c.outputs[0];
    with_dtype!(o.dtype, T, {
        fill_with::<T>(o.ptr_as(), o.size(), move |i| {
            // Box-Muller: elements 2j and 2j+1 share one pair of uniforms.
            let j = i & !1;
            let u1 = 1.0 - uniform01(k, j);
            let u2 = uniform01(k, j + 1);
            let r = (-2.0 * u1.ln()).sqrt();
            let t = 2.0 * std::f64::consts::PI * u2;
            loc + scale * r * if i & 1 == 0 { t.cos() } else { t.sin() }
        })
    });
    Ok(())
}

fn randint_compute(c: &mut OpCall) -> Result<()> {
    let k = key(c)?;
    let (lo, hi) = (c.params.int("low"), c.params.int("high"));
    let span = (hi - lo) as u64;
    let o = &c.outputs[0];
    with_dtype!(o.dtype, T, { fill_with::<T>(o.ptr_as(), o.size(), move |i| (lo + (bits(k, i) % span) as i64) as f64) });
    Ok(())
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new("_random_uniform", "Draw random samples from a uniform distribution on [low, high).", NONE, UNIFORM_PARAMS, infer_random, uniform_compute)
            .aliases(&["uniform", "random_uniform"])
            .random(),
    );
    r.add(
        OpDef::new("_random_normal", "Draw random samples from a normal (Gaussian) distribution.", NONE, NORMAL_PARAMS, infer_random, normal_compute)
            .aliases(&["normal", "random_normal"])
            .random(),
    );
    r.add(
        OpDef::new("_random_randint", "Draw random samples from a discrete uniform distribution on [low, high).", NONE, RANDINT_PARAMS, infer_random, randint_compute)
            .aliases(&["random_randint"])
            .random(),
    );
}
