//! Random sampling ops with scalar parameters: `_random_uniform normal gamma
//! exponential poisson negative_binomial generalized_negative_binomial randint` and
//! the `_like` forms (`_random_uniform_like`, ...) whose output takes its shape and
//! dtype from an input. Each draws a fresh key from the device's generator (in engine
//! order) and fills its output chunk by chunk in parallel (see [`super::dist`]).
//! Parameters are checked as MXNet 1.9.1 checks them, with its messages.

use super::dist::{self, fill_chunks, Stream};
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::Shape;
use crate::with_dtype;

const NONE: Arity = Arity::Fixed(&[]);
const DATA: Arity = Arity::Fixed(&["data"]);
const SHAPE: ParamSpec = ParamSpec::new("shape", PType::Tuple, Some("()"), "Shape of the output.");
const CTX: ParamSpec = ParamSpec::new(
    "ctx",
    PType::Ctx,
    Some("cpu(0)"),
    "Context of output, in format [cpu|gpu|cpu_pinned](n). Only used for imperative calls.",
);
const DTYPE: ParamSpec = ParamSpec::new(
    "dtype",
    PType::OptDType,
    Some("None"),
    "DType of the output in case this can't be inferred. Defaults to float32 if not defined (dtype=None).",
);

macro_rules! p {
    ($n:expr, $d:expr, $doc:expr) => {
        ParamSpec::new($n, PType::Float, Some($d), $doc)
    };
}
const LOW: ParamSpec = p!("low", "0", "Lower bound of the distribution.");
const HIGH: ParamSpec = p!("high", "1", "Upper bound of the distribution.");
const LOC: ParamSpec = p!("loc", "0", "Mean of the distribution.");
const SCALE: ParamSpec = p!("scale", "1", "Standard deviation of the distribution.");
const ALPHA: ParamSpec = p!("alpha", "1", "Alpha parameter (shape) of the gamma distribution.");
const BETA: ParamSpec = p!("beta", "1", "Beta parameter (scale) of the distribution.");
const LAM: ParamSpec = p!("lam", "1", "Lambda parameter (rate) of the distribution.");
const K: ParamSpec = ParamSpec::new("k", PType::Int, Some("1"), "Limit of unsuccessful experiments.");
const P: ParamSpec = p!("p", "1", "Failure probability in each experiment.");
const MU: ParamSpec = p!("mu", "1", "Mean of the negative binomial distribution.");
const GALPHA: ParamSpec = p!("alpha", "1", "Alpha (dispersion) parameter of the negative binomial distribution.");

const UNIFORM_PARAMS: &[ParamSpec] = &[LOW, HIGH, SHAPE, CTX, DTYPE];
const NORMAL_PARAMS: &[ParamSpec] = &[LOC, SCALE, SHAPE, CTX, DTYPE];
const GAMMA_PARAMS: &[ParamSpec] = &[ALPHA, BETA, SHAPE, CTX, DTYPE];
const EXPONENTIAL_PARAMS: &[ParamSpec] = &[LAM, SHAPE, CTX, DTYPE];
const POISSON_PARAMS: &[ParamSpec] = &[LAM, SHAPE, CTX, DTYPE];
const NB_PARAMS: &[ParamSpec] = &[K, P, SHAPE, CTX, DTYPE];
const GNB_PARAMS: &[ParamSpec] = &[MU, GALPHA, SHAPE, CTX, DTYPE];
const RANDINT_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("low", PType::Int, None, "Lower bound of the distribution."),
    ParamSpec::new("high", PType::Int, None, "Upper bound of the distribution."),
    SHAPE,
    CTX,
    ParamSpec::new(
        "dtype",
        PType::OptDType,
        Some("None"),
        "DType of the output in case this can't be inferred. Defaults to int32 if not defined (dtype=None).",
    ),
];
const UNIFORM_LIKE: &[ParamSpec] = &[LOW, HIGH];
const NORMAL_LIKE: &[ParamSpec] = &[LOC, SCALE];
const GAMMA_LIKE: &[ParamSpec] = &[ALPHA, BETA];
const LAM_LIKE: &[ParamSpec] = &[LAM];
const NB_LIKE: &[ParamSpec] = &[K, P];
const GNB_LIKE: &[ParamSpec] = &[MU, GALPHA];

/// The distribution of an op, from its name (`_random_gamma`, `_random_gamma_like`).
fn base(name: &str) -> &str {
    name.trim_start_matches("_random_").trim_end_matches("_like")
}

/// MXNet's checks of the scalar parameters (`Check failed: ...` messages), made
/// when the op runs.
fn check_params(op: &str, p: &Params) -> Result<()> {
    let e = |m: String| Err(Error::op(op, m));
    match base(op) {
        "uniform" | "randint" if p.float("high") < p.float("low") => {
            e(format!("Check failed: param.high >= param.low ({} vs. {}) : low must be less or equal to high in uniform distribution", p.float("high"), p.float("low")))
        }
        "normal" if p.float("scale") <= 0.0 => {
            e(format!("Check failed: param.scale > 0 ({} vs. 0) : scale parameter in gaussian has to be positive", p.float("scale")))
        }
        "gamma" if p.float("alpha") <= 0.0 => {
            e(format!("Check failed: param.alpha > 0 ({} vs. 0) : alpha parameter in gamma distribution has to be positive", p.float("alpha")))
        }
        "gamma" if p.float("beta") <= 0.0 => {
            e(format!("Check failed: param.beta > 0 ({} vs. 0) : beta parameter in gamma distribution has to be positive", p.float("beta")))
        }
        "exponential" if p.float("lam") <= 0.0 => {
            e(format!("Check failed: param.lam > 0 ({} vs. 0) : lambda parameter in exponential distribution has to be positive", p.float("lam")))
        }
        "poisson" if p.float("lam") < 0.0 => {
            e(format!("Check failed: param.lam >= 0 ({} vs. 0) : lambda parameter in poisson distribution has to be non-negative", p.float("lam")))
        }
        "negative_binomial" if p.int("k") <= 0 => {
            e(format!("Check failed: param.k > 0 ({} vs. 0) : k parameter in negative binomial distribution has to be positive", p.int("k")))
        }
        "negative_binomial" if !(p.float("p") >= 0.0 && p.float("p") <= 1.0) => {
            e(format!("Check failed: param.p >= 0 && param.p <= 1 ({}) : p parameter in negative binomial distribution has to be in [0, 1]", p.float("p")))
        }
        "generalized_negative_binomial" if p.float("mu") <= 0.0 => {
            e(format!("Check failed: param.mu > 0 ({} vs. 0) : mu parameter in generalized negative binomial distribution has to be positive", p.float("mu")))
        }
        "generalized_negative_binomial" if p.float("alpha") < 0.0 => {
            e(format!("Check failed: param.alpha >= 0 ({} vs. 0) : alpha parameter in generalized negative binomial distribution has to be non-negative", p.float("alpha")))
        }
        _ => Ok(()),
    }
}

fn infer_random(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let shape = super::init::shape_param(a)?;
    let d = a.params.dtype("dtype");
    if a.op.name == "_random_randint" {
        let d = d.unwrap_or(DType::I32);
        if !matches!(d, DType::I32 | DType::I64) {
            return Err(a.err(format!("Invalid Input: '{}', valid values are: {{'None', 'int32', 'int64'}}", d.name())));
        }
        return Ok(vec![(shape, d)]);
    }
    let d = d.unwrap_or(DType::F32);
    if !d.is_float() {
        return Err(a.err(format!("Invalid Input: '{}', valid values are: {{'None', 'float16', 'float32', 'float64'}}", d.name())));
    }
    Ok(vec![(shape, d)])
}

fn infer_like(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    Ok(vec![(a.shapes[0].into(), a.dtypes[0])])
}

fn key(c: &mut OpCall) -> Result<u64> {
    c.rng.as_mut().map(|g| g.next_key()).ok_or_else(|| Error::op(c.op.name, "no random generator"))
}

/// One draw of the op's distribution with its scalar parameters.
fn scalar_sampler(op: &str, p: &Params) -> Box<dyn Fn(&mut Stream) -> f64 + Sync + Send> {
    match base(op) {
        "uniform" => {
            let (lo, hi) = (p.float("low"), p.float("high"));
            Box::new(move |s| lo + (hi - lo) * s.uniform())
        }
        "normal" => {
            let (loc, scale) = (p.float("loc"), p.float("scale"));
            Box::new(move |s| loc + scale * s.normal())
        }
        "gamma" => {
            let (a, b) = (p.float("alpha"), p.float("beta"));
            Box::new(move |s| dist::gamma(s, a) * b)
        }
        "exponential" => {
            let lam = p.float("lam");
            Box::new(move |s| -(1.0 - s.uniform()).ln() / lam)
        }
        "poisson" => {
            let lam = p.float("lam");
            Box::new(move |s| dist::poisson(s, lam))
        }
        "negative_binomial" => {
            let (k, pp) = (p.int("k") as f64, p.float("p"));
            Box::new(move |s| dist::negative_binomial(s, k, pp))
        }
        _ => {
            let (mu, alpha) = (p.float("mu"), p.float("alpha"));
            Box::new(move |s| dist::generalized_negative_binomial(s, mu, alpha))
        }
    }
}

// The parameter checks run with the kernel, as in MXNet: a bad scale is an error on
// the output, raised at the next wait (asnumpy, wait_to_read, waitall).
fn random_compute(c: &mut OpCall) -> Result<()> {
    check_params(c.op.name, c.params)?;
    let k = key(c)?;
    let f = scalar_sampler(c.op.name, c.params);
    let o = &c.outputs[0];
    with_dtype!(o.dtype, T, { fill_chunks::<T>(o.ptr_as(), o.size(), k, |s, _| f(s)) });
    Ok(())
}

fn randint_compute(c: &mut OpCall) -> Result<()> {
    check_params(c.op.name, c.params)?;
    let k = key(c)?;
    let (lo, hi) = (c.params.int("low"), c.params.int("high"));
    let span = hi.wrapping_sub(lo) as u64;
    let o = &c.outputs[0];
    with_dtype!(o.dtype, T, {
        fill_chunks::<T>(
            o.ptr_as(),
            o.size(),
            k,
            move |s, _| if span == 0 { lo as f64 } else { lo.wrapping_add(s.below(span) as i64) as f64 },
        )
    });
    Ok(())
}

/// Sampling ops have no gradient (MXNet's zero-gradient nodes).
pub(super) fn g_zero(_: &Params, ins: &[NDArray], _: &[NDArray], _: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    Ok(vec![None; ins.len()])
}

/// (name, doc, params, aliases)
type ScalarEntry = (&'static str, &'static str, &'static [ParamSpec], &'static [&'static str]);

pub(super) fn register(r: &mut Registry) {
    let scalar: [ScalarEntry; 7] = [
        (
            "_random_uniform",
            "Draw random samples from a uniform distribution on [low, high).",
            UNIFORM_PARAMS,
            &["uniform", "random_uniform"],
        ),
        ("_random_normal", "Draw random samples from a normal (Gaussian) distribution.", NORMAL_PARAMS, &["normal", "random_normal"]),
        ("_random_gamma", "Draw random samples from a gamma distribution (alpha: shape, beta: scale).", GAMMA_PARAMS, &["random_gamma"]),
        (
            "_random_exponential",
            "Draw random samples from an exponential distribution of rate lam.",
            EXPONENTIAL_PARAMS,
            &["random_exponential"],
        ),
        (
            "_random_poisson",
            "Draw random samples from a Poisson distribution (returned as floating point).",
            POISSON_PARAMS,
            &["random_poisson"],
        ),
        (
            "_random_negative_binomial",
            "Draw random samples from a negative binomial distribution (k failures, success probability p).",
            NB_PARAMS,
            &["random_negative_binomial"],
        ),
        (
            "_random_generalized_negative_binomial",
            "Draw random samples from a generalized negative binomial distribution (mean mu, dispersion alpha).",
            GNB_PARAMS,
            &["random_generalized_negative_binomial"],
        ),
    ];
    for (name, doc, params, aliases) in scalar {
        r.add(OpDef::new(name, doc, NONE, params, infer_random, random_compute).aliases(aliases).random().cost(8).grad(g_zero));
    }
    r.add(
        OpDef::new(
            "_random_randint",
            "Draw random samples from a discrete uniform distribution on [low, high).",
            NONE,
            RANDINT_PARAMS,
            infer_random,
            randint_compute,
        )
        .aliases(&["random_randint"])
        .random()
        .grad(g_zero),
    );
    let like: [(&'static str, &'static str, &'static [ParamSpec]); 7] = [
        ("_random_uniform_like", "Draw random samples from a uniform distribution on [low, high), shaped like the input.", UNIFORM_LIKE),
        ("_random_normal_like", "Draw random samples from a normal (Gaussian) distribution, shaped like the input.", NORMAL_LIKE),
        ("_random_gamma_like", "Draw random samples from a gamma distribution, shaped like the input.", GAMMA_LIKE),
        ("_random_exponential_like", "Draw random samples from an exponential distribution, shaped like the input.", LAM_LIKE),
        ("_random_poisson_like", "Draw random samples from a Poisson distribution, shaped like the input.", LAM_LIKE),
        ("_random_negative_binomial_like", "Draw random samples from a negative binomial distribution, shaped like the input.", NB_LIKE),
        (
            "_random_generalized_negative_binomial_like",
            "Draw random samples from a generalized negative binomial distribution, shaped like the input.",
            GNB_LIKE,
        ),
    ];
    for (name, doc, params) in like {
        r.add(OpDef::new(name, doc, DATA, params, infer_like, random_compute).random().cost(8).grad(g_zero).unnamed_inputs());
    }
}
