//! Probability density / mass functions of the sampling distributions:
//! `_random_pdf_uniform normal gamma exponential poisson negative_binomial
//! generalized_negative_binomial dirichlet` (alias `random_pdf_*`), with `is_log`,
//! and their gradients with respect to the sample and to every parameter (the
//! `_backward_pdf_*` ops). Parameters have one shape P; the sample has shape P + S
//! (`prod(S)` samples per parameter element; for Dirichlet the alpha vector's length
//! K is the last axis of both) and the output has the sample's shape (without K for
//! Dirichlet). Parameter gradients sum over the samples of their element. Values are
//! computed in f64. Gamma's `beta` is a rate, as in MXNet.

use super::dist::{digamma, lgamma};
use super::{call, Arity, Blob, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::kernels::cpu::{par_for, SendPtr};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};
use crate::with_dtype;

const IS_LOG: &[ParamSpec] = &[ParamSpec::new(
    "is_log",
    PType::Bool,
    Some("False"),
    "If set, compute the density of the log-probability instead of the probability.",
)];

#[derive(Clone, Copy)]
enum Dist {
    Uniform,
    Normal,
    Gamma,
    Exponential,
    Poisson,
    NegBinomial,
    GenNegBinomial,
}

fn dist_of(name: &str) -> Option<Dist> {
    Some(match name.trim_start_matches("_backward").trim_start_matches("_random").trim_start_matches("_pdf_") {
        "uniform" => Dist::Uniform,
        "normal" => Dist::Normal,
        "gamma" => Dist::Gamma,
        "exponential" => Dist::Exponential,
        "poisson" => Dist::Poisson,
        "negative_binomial" => Dist::NegBinomial,
        "generalized_negative_binomial" => Dist::GenNegBinomial,
        _ => return None,
    })
}

const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// Log density at `x` and its derivatives (d/dx, d/da, d/db).
fn logpdf(d: Dist, x: f64, a: f64, b: f64) -> (f64, f64, f64, f64) {
    match d {
        Dist::Uniform => {
            let w = b - a;
            let lp = if x >= a && x <= b { -w.ln() } else { f64::NEG_INFINITY };
            (lp, 0.0, 1.0 / w, -1.0 / w)
        }
        Dist::Normal => {
            let z = (x - a) / b;
            (-0.5 * z * z - b.ln() - LN_SQRT_2PI, -z / b, z / b, z * z / b - 1.0 / b)
        }
        Dist::Gamma => {
            let lp = a * b.ln() + (a - 1.0) * x.ln() - b * x - lgamma(a);
            (lp, (a - 1.0) / x - b, b.ln() + x.ln() - digamma(a), a / b - x)
        }
        Dist::Exponential => (a.ln() - a * x, -a, 1.0 / a - x, 0.0),
        Dist::Poisson => (x * a.ln() - a - lgamma(x + 1.0), 0.0, x / a - 1.0, 0.0),
        Dist::NegBinomial => {
            let (k, p) = (a, b);
            let lp = lgamma(x + k) - lgamma(x + 1.0) - lgamma(k) + k * p.ln() + x * (1.0 - p).ln();
            (lp, 0.0, digamma(x + k) - digamma(k) + p.ln(), k / p - x / (1.0 - p))
        }
        Dist::GenNegBinomial => {
            let (mu, al) = (a, b);
            let k = 1.0 / al;
            let q = 1.0 + mu * al;
            let p = 1.0 / q;
            let lp = lgamma(x + k) - lgamma(x + 1.0) - lgamma(k) - k * q.ln() + x * ((mu * al).ln() - q.ln());
            let dlp_dp = k / p - x / (1.0 - p);
            let dlp_dk = digamma(x + k) - digamma(k) + p.ln();
            let dp_dmu = -al / (q * q);
            let dp_dal = -mu / (q * q);
            (lp, 0.0, dlp_dp * dp_dmu, dlp_dk * (-1.0 / (al * al)) + dlp_dp * dp_dal)
        }
    }
}

fn read(b: &Blob) -> Vec<f64> {
    // SAFETY: inputs are only read during the op.
    with_dtype!(b.dtype, T, { unsafe { b.slice::<T>() }.iter().map(|v| v.to_f64()).collect() })
}

fn write(b: &Blob, v: &[f64]) {
    with_dtype!(b.dtype, T, {
        // SAFETY: outputs are only written by their op.
        for (d, x) in unsafe { b.slice_mut::<T>() }.iter_mut().zip(v) {
            *d = T::from_f64(*x);
        }
    });
}

fn infer_pdf(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let dirichlet = a.op.name.ends_with("dirichlet");
    let sample = a.shapes[0];
    let p = a.shapes[1];
    for (i, s) in a.shapes.iter().enumerate().skip(2) {
        if *s != p {
            return Err(a.err(format!(
                "Shape inconsistent: parameter {i} has shape {}, parameter 1 has shape {}",
                fmt_shape(s),
                fmt_shape(p)
            )));
        }
    }
    for (i, d) in a.dtypes.iter().enumerate() {
        if !d.is_float() {
            return Err(a.err(format!("input {i} must be a floating point array, got {}", d.name())));
        }
        if *d != a.dtypes[0] {
            return Err(a.err(format!("Incompatible attr at {i}-th input: expected {}, got {}", a.dtypes[0].name(), d.name())));
        }
    }
    let lead = if dirichlet { p.len().saturating_sub(1) } else { p.len() };
    let ok = if dirichlet {
        !p.is_empty() && sample.len() >= p.len() && sample[..lead] == p[..lead] && sample.last() == p.last()
    } else {
        sample.len() >= p.len() && sample[..lead] == *p
    };
    if !ok {
        return Err(a.err(format!(
            "Shape inconsistent: the sample's shape {} must start with the parameters' shape {}{}",
            fmt_shape(sample),
            fmt_shape(if dirichlet { &p[..lead] } else { p }),
            if dirichlet { " and end with the length of alpha" } else { "" }
        )));
    }
    let out: Shape = if dirichlet { sample[..sample.len() - 1].into() } else { sample.into() };
    Ok(vec![(out, a.dtypes[0])])
}

fn pdf_compute(c: &mut OpCall) -> Result<()> {
    let is_log = c.params.bool("is_log");
    let o = &c.outputs[0];
    if c.op.name.ends_with("dirichlet") {
        let x = read(&c.inputs[0]);
        let al = read(&c.inputs[1]);
        let k = *c.inputs[1].shape.last().unwrap_or(&1);
        let np = al.len().checked_div(k).unwrap_or(0);
        let n = o.size();
        let m = n.checked_div(np).unwrap_or(1);
        let mut v = vec![0.0; n];
        for (i, r) in v.iter_mut().enumerate() {
            let a = &al[(i / m) * k..(i / m + 1) * k];
            let xs = &x[i * k..(i + 1) * k];
            let s: f64 = a.iter().sum();
            let mut lp = lgamma(s);
            for (ai, xi) in a.iter().zip(xs) {
                lp += (ai - 1.0) * xi.ln() - lgamma(*ai);
            }
            *r = if is_log { lp } else { lp.exp() };
        }
        write(o, &v);
        return Ok(());
    }
    let Some(d) = dist_of(c.op.name) else { return Ok(()) };
    let x = read(&c.inputs[0]);
    let pa = read(&c.inputs[1]);
    let pb = if c.inputs.len() > 2 { read(&c.inputs[2]) } else { vec![0.0; pa.len()] };
    let n = x.len();
    let m = n.checked_div(pa.len()).unwrap_or(1);
    with_dtype!(o.dtype, T, {
        let out = SendPtr(o.ptr_as::<T>());
        let (x, pa, pb) = (&x, &pa, &pb);
        par_for(n, 1 << 12, move |s, e| {
            for i in s..e {
                let lp = logpdf(d, x[i], pa[i / m], pb[i / m]).0;
                // SAFETY: i < n, ranges are disjoint.
                unsafe { *out.get().add(i) = T::from_f64(if is_log { lp } else { lp.exp() }) };
            }
        });
    });
    Ok(())
}

macro_rules! pdf_grad {
    ($f:ident, $back:expr) => {
        fn $f(p: &Params, ins: &[NDArray], _outs: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
            let mut v = vec![og[0].clone()];
            v.extend(ins.iter().cloned());
            let g = call($back, &v, &[("is_log", Value::Bool(p.bool("is_log")))])?;
            Ok(g.into_iter().map(Some).collect())
        }
    };
}
pdf_grad!(g_uniform, "_backward_pdf_uniform");
pdf_grad!(g_normal, "_backward_pdf_normal");
pdf_grad!(g_gamma, "_backward_pdf_gamma");
pdf_grad!(g_exponential, "_backward_pdf_exponential");
pdf_grad!(g_poisson, "_backward_pdf_poisson");
pdf_grad!(g_nb, "_backward_pdf_negative_binomial");
pdf_grad!(g_gnb, "_backward_pdf_generalized_negative_binomial");
pdf_grad!(g_dirichlet, "_backward_pdf_dirichlet");

fn infer_backward(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    Ok(a.shapes[1..].iter().zip(&a.dtypes[1..]).map(|(s, d)| (Shape::from(*s), *d)).collect())
}

fn backward_compute(c: &mut OpCall) -> Result<()> {
    let is_log = c.params.bool("is_log");
    let og = read(&c.inputs[0]);
    let x = read(&c.inputs[1]);
    if c.op.name.ends_with("dirichlet") {
        let al = read(&c.inputs[2]);
        let k = *c.inputs[2].shape.last().unwrap_or(&1);
        let np = al.len().checked_div(k).unwrap_or(0);
        let n = og.len();
        let m = n.checked_div(np).unwrap_or(1);
        let mut gx = vec![0.0; x.len()];
        let mut ga = vec![0.0; al.len()];
        for (i, &ogi) in og.iter().enumerate() {
            let r = i / m;
            let a = &al[r * k..(r + 1) * k];
            let xs = &x[i * k..(i + 1) * k];
            let s: f64 = a.iter().sum();
            let mut lp = lgamma(s);
            for (ai, xi) in a.iter().zip(xs) {
                lp += (ai - 1.0) * xi.ln() - lgamma(*ai);
            }
            let w = ogi * if is_log { 1.0 } else { lp.exp() };
            let ds = digamma(s);
            let gxs = &mut gx[i * k..(i + 1) * k];
            let gas = &mut ga[r * k..(r + 1) * k];
            for (((g, ga), aj), xj) in gxs.iter_mut().zip(gas.iter_mut()).zip(a).zip(xs) {
                *g = w * (aj - 1.0) / xj;
                *ga += w * (ds - digamma(*aj) + xj.ln());
            }
        }
        write(&c.outputs[0], &gx);
        write(&c.outputs[1], &ga);
        return Ok(());
    }
    let Some(d) = dist_of(c.op.name) else { return Ok(()) };
    let pa = read(&c.inputs[2]);
    let two = c.inputs.len() > 3;
    let pb = if two { read(&c.inputs[3]) } else { vec![0.0; pa.len()] };
    let n = x.len();
    let m = n.checked_div(pa.len()).unwrap_or(1);
    let mut gx = vec![0.0; n];
    let mut ga = vec![0.0; pa.len()];
    let mut gb = vec![0.0; pa.len()];
    for (i, (g, (&xi, &ogi))) in gx.iter_mut().zip(x.iter().zip(&og)).enumerate() {
        let r = i / m;
        let (lp, dx, da, db) = logpdf(d, xi, pa[r], pb[r]);
        let w = ogi * if is_log { 1.0 } else { lp.exp() };
        *g = w * dx;
        ga[r] += w * da;
        gb[r] += w * db;
    }
    write(&c.outputs[0], &gx);
    write(&c.outputs[1], &ga);
    if two {
        write(&c.outputs[2], &gb);
    }
    Ok(())
}

type G = fn(&Params, &[NDArray], &[NDArray], &[NDArray]) -> Result<Vec<Option<NDArray>>>;
/// (name, backward name, aliases, inputs, doc, number of inputs, gradient)
type PdfEntry = (&'static str, &'static str, &'static [&'static str], &'static [&'static str], &'static str, usize, G);

pub(super) fn register(r: &mut Registry) {
    let ops: [PdfEntry; 8] = [
        ("_random_pdf_uniform", "_backward_pdf_uniform", &["random_pdf_uniform"], &["sample", "low", "high"], "Computes the value of the PDF of samples of uniform distributions on [low, high).", 3, g_uniform),
        ("_random_pdf_normal", "_backward_pdf_normal", &["random_pdf_normal"], &["sample", "mu", "sigma"], "Computes the value of the PDF of samples of normal distributions with parameters mu (mean) and sigma (standard deviation).", 3, g_normal),
        ("_random_pdf_gamma", "_backward_pdf_gamma", &["random_pdf_gamma"], &["sample", "alpha", "beta"], "Computes the value of the PDF of samples of gamma distributions with parameters alpha (shape) and beta (rate).", 3, g_gamma),
        ("_random_pdf_exponential", "_backward_pdf_exponential", &["random_pdf_exponential"], &["sample", "lam"], "Computes the value of the PDF of samples of exponential distributions with parameters lambda (rate).", 2, g_exponential),
        ("_random_pdf_poisson", "_backward_pdf_poisson", &["random_pdf_poisson"], &["sample", "lam"], "Computes the value of the PDF of samples of Poisson distributions with parameters lambda (rate).", 2, g_poisson),
        ("_random_pdf_negative_binomial", "_backward_pdf_negative_binomial", &["random_pdf_negative_binomial"], &["sample", "k", "p"], "Computes the value of the PDF of samples of negative binomial distributions with parameters k (failure limit) and p (failure probability).", 3, g_nb),
        ("_random_pdf_generalized_negative_binomial", "_backward_pdf_generalized_negative_binomial", &["random_pdf_generalized_negative_binomial"], &["sample", "mu", "alpha"], "Computes the value of the PDF of samples of generalized negative binomial distributions with parameters mu (mean) and alpha (dispersion).", 3, g_gnb),
        ("_random_pdf_dirichlet", "_backward_pdf_dirichlet", &["random_pdf_dirichlet"], &["sample", "alpha"], "Computes the value of the PDF of samples of Dirichlet distributions with parameter alpha (the last axis holds the concentration vector).", 2, g_dirichlet),
    ];
    let back_inputs: [&'static [&'static str]; 2] = [&["ograd", "sample", "p1"], &["ograd", "sample", "p1", "p2"]];
    for (name, back, alias, inputs, doc, n, g) in ops {
        r.add(OpDef::new(name, doc, Arity::Fixed(inputs), IS_LOG, infer_pdf, pdf_compute).aliases(alias).cost(8).grad(g));
        r.add(
            OpDef::new(
                back,
                "Gradient of a random_pdf op with respect to its sample and parameters.",
                Arity::Fixed(back_inputs[n - 2]),
                IS_LOG,
                infer_backward,
                backward_compute,
            )
            .outputs(if n == 3 { |_| 3 } else { |_| 2 }),
        );
    }
}
