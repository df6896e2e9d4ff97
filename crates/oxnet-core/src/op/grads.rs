//! Gradients of the base op families (elementwise, reductions, shape, indexing,
//! softmax, linalg, copies), as registry ops: each [`GradFn`] gets the op's params,
//! inputs, outputs and output gradients and returns the input gradients computed
//! with other registry ops, so backward runs through the engine like any op.
//! [`lookup`] gives the gradient of an op by name; [`super::Registry::add`] fills
//! it in for ops registered without one. Families added later (the NN ops) set
//! their gradient on their own `OpDef` with `.grad(...)`.
//!
//! Ops whose gradient is zero everywhere (comparisons, rounding, argmax, ...)
//! return `None` for their inputs, as MXNet's zero-gradient ops do.

use super::reduce::reduce_mask;
use super::{call1, GradFn, Params, Value};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::fmt_shape;

type Grads = Result<Vec<Option<NDArray>>>;

fn c(name: &str, ins: &[NDArray], attrs: &[(&str, Value)]) -> Result<NDArray> {
    call1(name, ins, attrs)
}
fn mul(a: &NDArray, b: &NDArray) -> Result<NDArray> {
    c("broadcast_mul", &[a.clone(), b.clone()], &[])
}
fn div(a: &NDArray, b: &NDArray) -> Result<NDArray> {
    c("broadcast_div", &[a.clone(), b.clone()], &[])
}
fn add(a: &NDArray, b: &NDArray) -> Result<NDArray> {
    c("broadcast_add", &[a.clone(), b.clone()], &[])
}
fn sub(a: &NDArray, b: &NDArray) -> Result<NDArray> {
    c("broadcast_sub", &[a.clone(), b.clone()], &[])
}
fn neg(a: &NDArray) -> Result<NDArray> {
    c("negative", std::slice::from_ref(a), &[])
}
fn un(name: &str, a: &NDArray) -> Result<NDArray> {
    c(name, std::slice::from_ref(a), &[])
}
fn sc(name: &str, a: &NDArray, s: f64) -> Result<NDArray> {
    c(name, std::slice::from_ref(a), &[("scalar", Value::Float(s)), ("is_int", Value::Bool(false))])
}
fn tuple(v: &[usize]) -> Value {
    Value::Tuple(v.iter().map(|&x| x as i64).collect())
}
fn reshape(a: &NDArray, shape: &[usize]) -> Result<NDArray> {
    if crate::autograd::is_recording() && crate::autograd::is_in_graph(a) {
        // A gradient being recorded (create_graph): the view must be in the graph too.
        return c("Reshape", std::slice::from_ref(a), &[("shape", tuple(shape))]);
    }
    a.reshape_view(shape)
}
fn one(g: Result<NDArray>) -> Grads {
    Ok(vec![Some(g?)])
}

/// Sums `g` over the axes that broadcasting added or stretched, back to `shape`.
pub fn sum_to(g: &NDArray, shape: &[usize]) -> Result<NDArray> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let gs = g.shape();
    if gs.len() < shape.len() {
        return Err(Error::new(format!("autograd: cannot reduce a gradient of shape {} to shape {}", fmt_shape(gs), fmt_shape(shape))));
    }
    let lead = gs.len() - shape.len();
    let axes: Vec<i64> = (0..gs.len()).filter(|&i| i < lead || (shape[i - lead] == 1 && gs[i] != 1)).map(|i| i as i64).collect();
    let s = if axes.is_empty() {
        g.clone()
    } else {
        c("sum", std::slice::from_ref(g), &[("axis", Value::Tuple(axes)), ("keepdims", Value::Bool(true))])?
    };
    reshape(&s, shape)
}

/// `g` (shaped like a reduction's output) broadcast back over `shape`, where
/// `mask` marks the reduced axes.
fn unreduce(g: &NDArray, shape: &[usize], mask: &[bool]) -> Result<NDArray> {
    let keep: Vec<usize> = shape.iter().zip(mask).map(|(&d, &m)| if m { 1 } else { d }).collect();
    let g = reshape(g, &keep)?;
    c("broadcast_to", &[g], &[("shape", tuple(shape))])
}

fn zero(_: &Params, i: &[NDArray], _: &[NDArray], _: &[NDArray]) -> Grads {
    Ok(vec![None; i.len()])
}

// ---- elementwise ------------------------------------------------------------

fn g_add(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(sum_to(&g[0], i[0].shape())?), Some(sum_to(&g[0], i[1].shape())?)])
}
fn g_sub(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(sum_to(&g[0], i[0].shape())?), Some(sum_to(&neg(&g[0])?, i[1].shape())?)])
}
fn g_mul(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(sum_to(&mul(&g[0], &i[1])?, i[0].shape())?), Some(sum_to(&mul(&g[0], &i[0])?, i[1].shape())?)])
}
fn g_div(_: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    let ga = div(&g[0], &i[1])?;
    let gb = neg(&mul(&ga, &o[0])?)?;
    Ok(vec![Some(sum_to(&ga, i[0].shape())?), Some(sum_to(&gb, i[1].shape())?)])
}
fn g_pow(_: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    // d a^b / da = b a^(b-1); d a^b / db = a^b ln a
    let bm1 = sc("_minus_scalar", &i[1], 1.0)?;
    let ga = mul(&g[0], &mul(&i[1], &c("broadcast_power", &[i[0].clone(), bm1], &[])?)?)?;
    let gb = mul(&g[0], &mul(&o[0], &un("log", &i[0])?)?)?;
    Ok(vec![Some(sum_to(&ga, i[0].shape())?), Some(sum_to(&gb, i[1].shape())?)])
}
fn masked2(i: &[NDArray], g: &[NDArray], lhs_cmp: &str, rhs_cmp: &str) -> Grads {
    let ma = c(lhs_cmp, &[i[0].clone(), i[1].clone()], &[])?;
    let mb = c(rhs_cmp, &[i[0].clone(), i[1].clone()], &[])?;
    Ok(vec![Some(sum_to(&mul(&g[0], &ma)?, i[0].shape())?), Some(sum_to(&mul(&g[0], &mb)?, i[1].shape())?)])
}
fn g_maximum(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    masked2(i, g, "broadcast_greater_equal", "broadcast_lesser")
}
fn g_minimum(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    masked2(i, g, "broadcast_lesser_equal", "broadcast_greater")
}
// As in MXNet, mod's gradients are 0 on integer types (its mod_grad/mod_rgrad are 1
// and -floor(a / b) for floats only).
fn g_mod(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    if !i[0].dtype().is_float() {
        return Ok(vec![Some(un("zeros_like", &i[0])?), Some(un("zeros_like", &i[1])?)]);
    }
    let q = un("floor", &div(&i[0], &i[1])?)?;
    let gb = neg(&mul(&g[0], &q)?)?;
    Ok(vec![Some(sum_to(&g[0], i[0].shape())?), Some(sum_to(&gb, i[1].shape())?)])
}
fn g_hypot(_: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    let go = div(&g[0], &o[0])?;
    Ok(vec![Some(sum_to(&mul(&go, &i[0])?, i[0].shape())?), Some(sum_to(&mul(&go, &i[1])?, i[1].shape())?)])
}

fn g_ident(_: &Params, _: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(g[0].clone())])
}
fn g_neg(_: &Params, _: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    one(neg(&g[0]))
}
fn g_mul_scalar(p: &Params, _: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    one(sc("_mul_scalar", &g[0], p.float("scalar")))
}
fn g_div_scalar(p: &Params, _: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    one(sc("_div_scalar", &g[0], p.float("scalar")))
}
fn g_rdiv_scalar(_: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    // d (s / a) / da = -(s / a) / a
    one(neg(&mul(&g[0], &div(&o[0], &i[0])?)?))
}
fn g_power_scalar(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let s = p.float("scalar");
    one(mul(&g[0], &sc("_mul_scalar", &sc("_power_scalar", &i[0], s - 1.0)?, s)?))
}
fn g_rpower_scalar(p: &Params, _: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    one(mul(&g[0], &sc("_mul_scalar", &o[0], p.float("scalar").ln())?))
}
fn g_mod_scalar(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    if !i[0].dtype().is_float() {
        return one(un("zeros_like", &i[0]));
    }
    Ok(vec![Some(g[0].clone())])
}
fn g_rmod_scalar(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    if !i[0].dtype().is_float() {
        return one(un("zeros_like", &i[0]));
    }
    let q = un("floor", &sc("_rdiv_scalar", &i[0], p.float("scalar"))?)?;
    one(neg(&mul(&g[0], &q)?))
}
fn g_maximum_scalar(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    one(mul(&g[0], &sc("_greater_equal_scalar", &i[0], p.float("scalar"))?))
}
fn g_minimum_scalar(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    one(mul(&g[0], &sc("_lesser_equal_scalar", &i[0], p.float("scalar"))?))
}
fn g_hypot_scalar(_: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    one(mul(&g[0], &div(&i[0], &o[0])?))
}
fn g_clip(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let lo = sc("_greater_equal_scalar", &i[0], p.float("a_min"))?;
    let hi = sc("_lesser_equal_scalar", &i[0], p.float("a_max"))?;
    one(mul(&g[0], &mul(&lo, &hi)?))
}

/// Unary math: the derivative as a function of the input `x` and output `y`.
macro_rules! unary_grad {
    ($name:ident, |$x:ident, $y:ident| $d:expr) => {
        fn $name(_: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
            let ($x, $y) = (&i[0], &o[0]);
            let _ = (&$x, &$y);
            let d: Result<NDArray> = $d;
            one(mul(&g[0], &d?))
        }
    };
}

unary_grad!(g_abs, |x, y| un("sign", x));
unary_grad!(g_sqrt, |x, y| sc("_rdiv_scalar", y, 0.5));
unary_grad!(g_rsqrt, |x, y| sc("_mul_scalar", &div(y, x)?, -0.5));
unary_grad!(g_cbrt, |x, y| sc("_rdiv_scalar", &un("square", y)?, 1.0 / 3.0));
unary_grad!(g_rcbrt, |x, y| sc("_mul_scalar", &div(y, x)?, -1.0 / 3.0));
unary_grad!(g_square, |x, y| sc("_mul_scalar", x, 2.0));
unary_grad!(g_reciprocal, |x, y| neg(&un("square", y)?));
unary_grad!(g_exp, |x, y| Ok(y.clone()));
unary_grad!(g_expm1, |x, y| sc("_plus_scalar", y, 1.0));
unary_grad!(g_log, |x, y| un("reciprocal", x));
unary_grad!(g_log10, |x, y| sc("_rdiv_scalar", x, 1.0 / std::f64::consts::LN_10));
unary_grad!(g_log2, |x, y| sc("_rdiv_scalar", x, 1.0 / std::f64::consts::LN_2));
unary_grad!(g_log1p, |x, y| sc("_rdiv_scalar", &sc("_plus_scalar", x, 1.0)?, 1.0));
unary_grad!(g_sin, |x, y| un("cos", x));
unary_grad!(g_cos, |x, y| neg(&un("sin", x)?));
unary_grad!(g_tan, |x, y| sc("_plus_scalar", &un("square", y)?, 1.0));
unary_grad!(g_arcsin, |x, y| un("rsqrt", &sc("_rminus_scalar", &un("square", x)?, 1.0)?));
unary_grad!(g_arccos, |x, y| neg(&un("rsqrt", &sc("_rminus_scalar", &un("square", x)?, 1.0)?)?));
unary_grad!(g_arctan, |x, y| sc("_rdiv_scalar", &sc("_plus_scalar", &un("square", x)?, 1.0)?, 1.0));
unary_grad!(g_sinh, |x, y| un("cosh", x));
unary_grad!(g_cosh, |x, y| un("sinh", x));
unary_grad!(g_tanh, |x, y| sc("_rminus_scalar", &un("square", y)?, 1.0));
unary_grad!(g_arcsinh, |x, y| un("rsqrt", &sc("_plus_scalar", &un("square", x)?, 1.0)?));
unary_grad!(g_arccosh, |x, y| un("rsqrt", &sc("_minus_scalar", &un("square", x)?, 1.0)?));
unary_grad!(g_arctanh, |x, y| sc("_rdiv_scalar", &sc("_rminus_scalar", &un("square", x)?, 1.0)?, 1.0));
unary_grad!(g_degrees, |x, y| sc("_plus_scalar", &un("zeros_like", x)?, 180.0 / std::f64::consts::PI));
unary_grad!(g_radians, |x, y| sc("_plus_scalar", &un("zeros_like", x)?, std::f64::consts::PI / 180.0));
unary_grad!(g_sigmoid, |x, y| mul(y, &sc("_rminus_scalar", y, 1.0)?));
// 1 where x > 0 (inf included), 0 where x <= 0, NaN where x is NaN: MXNet's nd.relu
// propagates a NaN input into its gradient (Activation's relu does not).
unary_grad!(g_relu, |x, y| sc("_maximum_scalar", &un("sign", x)?, 0.0));
unary_grad!(g_softsign, |x, y| sc("_rdiv_scalar", &un("square", &sc("_plus_scalar", &un("abs", x)?, 1.0)?)?, 1.0));

// ---- reductions -------------------------------------------------------------

fn rmask(name: &str, p: &Params, x: &NDArray) -> Result<Vec<bool>> {
    reduce_mask(name, x.shape(), p.opt_tuple("axis").as_deref(), p.bool("exclude"))
}
fn g_sum(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    one(unreduce(&g[0], i[0].shape(), &rmask("sum", p, &i[0])?))
}
fn g_square_sum(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let back = unreduce(&g[0], i[0].shape(), &rmask("_square_sum", p, &i[0])?)?;
    one(mul(&back, &sc("_mul_scalar", &i[0], 2.0)?))
}
fn g_mean(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let m = rmask("mean", p, &i[0])?;
    let n: usize = i[0].shape().iter().zip(&m).filter(|(_, &r)| r).map(|(&d, _)| d).product();
    one(sc("_div_scalar", &unreduce(&g[0], i[0].shape(), &m)?, n.max(1) as f64))
}
fn not_nan(x: &NDArray) -> Result<NDArray> {
    c("broadcast_equal", &[x.clone(), x.clone()], &[])
}
fn g_nansum(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    one(mul(&unreduce(&g[0], i[0].shape(), &rmask("nansum", p, &i[0])?)?, &not_nan(&i[0])?))
}
fn g_prod(p: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    let m = rmask("prod", p, &i[0])?;
    let go = mul(&g[0], &o[0])?;
    one(div(&unreduce(&go, i[0].shape(), &m)?, &i[0]))
}
fn g_nanprod(p: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    let m = rmask("nanprod", p, &i[0])?;
    let go = mul(&g[0], &o[0])?;
    one(mul(&div(&unreduce(&go, i[0].shape(), &m)?, &i[0])?, &not_nan(&i[0])?))
}
fn g_maxmin(p: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    let m = rmask("max", p, &i[0])?;
    let at = c("broadcast_equal", &[i[0].clone(), unreduce(&o[0], i[0].shape(), &m)?], &[])?;
    one(mul(&unreduce(&g[0], i[0].shape(), &m)?, &at))
}
fn g_norm(p: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    let x = &i[0];
    let m = reduce_mask("norm", x.shape(), p.opt_tuple("axis").as_deref(), false)?;
    let (g0, o0) = if o[0].dtype() != x.dtype() {
        let d = Value::DType(x.dtype());
        (c("Cast", &[g[0].clone()], &[("dtype", d.clone())])?, c("Cast", &[o[0].clone()], &[("dtype", d)])?)
    } else {
        (g[0].clone(), o[0].clone())
    };
    let gb = unreduce(&g0, x.shape(), &m)?;
    if p.int("ord") == 1 {
        return one(mul(&gb, &un("sign", x)?));
    }
    let ob = unreduce(&o0, x.shape(), &m)?;
    // x / norm, with 0 where the norm is 0
    let safe = add(&ob, &sc("_equal_scalar", &ob, 0.0)?)?;
    one(mul(&gb, &div(x, &safe)?))
}

// ---- shape ------------------------------------------------------------------

fn g_reshape(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    one(reshape(&g[0], i[0].shape()))
}
fn g_reshape_like(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(reshape(&g[0], i[0].shape())?), None])
}
fn g_transpose(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let nd = i[0].ndim();
    let axes = p.tuple("axes");
    let perm: Vec<usize> = if axes.is_empty() {
        (0..nd).rev().collect()
    } else {
        axes.iter().map(|&a| if a < 0 { (a + nd as i64) as usize } else { a as usize }).collect()
    };
    let mut inv = vec![0usize; nd];
    for (k, &a) in perm.iter().enumerate() {
        inv[a] = k;
    }
    one(c("transpose", &[g[0].clone()], &[("axes", tuple(&inv))]))
}
fn g_swapaxes(p: &Params, _: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    one(c("SwapAxis", &[g[0].clone()], &[("dim1", Value::Int(p.int("dim1"))), ("dim2", Value::Int(p.int("dim2")))]))
}
fn norm_ax(a: i64, nd: usize) -> i64 {
    if a < 0 {
        a + nd as i64
    } else {
        a
    }
}
fn slice_axis(g: &NDArray, axis: usize, b: usize, e: usize) -> Result<NDArray> {
    c(
        "slice_axis",
        std::slice::from_ref(g),
        &[("axis", Value::Int(axis as i64)), ("begin", Value::Int(b as i64)), ("end", Value::Int(e as i64))],
    )
}
fn g_concat(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let ax = norm_ax(p.int("dim"), i[0].ndim()) as usize;
    let mut at = 0;
    let mut out = Vec::with_capacity(i.len());
    for a in i {
        let n = a.shape()[ax];
        out.push(Some(slice_axis(&g[0], ax, at, at + n)?));
        at += n;
    }
    Ok(out)
}
fn g_stack(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let ax = norm_ax(p.int("axis"), i[0].ndim() + 1) as usize;
    (0..i.len()).map(|k| Ok(Some(reshape(&slice_axis(&g[0], ax, k, k + 1)?, i[k].shape())?))).collect()
}
fn g_split(p: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    let ax = norm_ax(p.int("axis"), i[0].ndim()) as usize;
    let mut parts = Vec::with_capacity(g.len());
    for (gk, ok) in g.iter().zip(o) {
        let mut s = ok.shape().to_vec();
        if s.len() < i[0].ndim() {
            s.insert(ax, 1);
        }
        parts.push(reshape(gk, &s)?);
    }
    one(c("Concat", &parts, &[("num_args", Value::Int(parts.len() as i64)), ("dim", Value::Int(ax as i64))]))
}
fn g_slice(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let z = un("zeros_like", &i[0])?;
    let attrs = [("begin", p.get("begin").clone()), ("end", p.get("end").clone()), ("step", p.get("step").clone())];
    one(c("_slice_assign", &[z, g[0].clone()], &attrs))
}
/// `_slice_assign(lhs, rhs)`: the region goes to `rhs`, the rest to `lhs`.
fn g_slice_assign(p: &Params, _: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let region = [("begin", p.get("begin").clone()), ("end", p.get("end").clone()), ("step", p.get("step").clone())];
    let scalar = [region[0].clone(), region[1].clone(), region[2].clone(), ("scalar", Value::Float(0.0))];
    Ok(vec![
        Some(c("_slice_assign_scalar", std::slice::from_ref(&g[0]), &scalar)?),
        Some(c("slice", std::slice::from_ref(&g[0]), &region)?),
    ])
}
fn g_slice_assign_scalar(p: &Params, _: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let attrs =
        [("begin", p.get("begin").clone()), ("end", p.get("end").clone()), ("step", p.get("step").clone()), ("scalar", Value::Float(0.0))];
    one(c("_slice_assign_scalar", std::slice::from_ref(&g[0]), &attrs))
}
fn g_slice_axis(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let s = i[0].shape();
    let ax = norm_ax(p.int("axis"), s.len()) as usize;
    let n = s[ax] as i64;
    let cl = |v: i64| (if v < 0 { v + n } else { v }).clamp(0, n);
    let b = cl(p.int("begin"));
    let e = p.opt_int("end").map(cl).unwrap_or(n);
    let mut begin: Vec<i64> = vec![0; s.len()];
    let mut end: Vec<i64> = s.iter().map(|&d| d as i64).collect();
    begin[ax] = b;
    end[ax] = e.max(b);
    let z = un("zeros_like", &i[0])?;
    one(c("_slice_assign", &[z, g[0].clone()], &[("begin", Value::Tuple(begin)), ("end", Value::Tuple(end))]))
}
fn g_tile(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let reps = p.tuple("reps");
    let s = i[0].shape();
    let nd = s.len().max(reps.len());
    let pad_s: Vec<usize> = std::iter::repeat_n(1, nd - s.len()).chain(s.iter().copied()).collect();
    let pad_r: Vec<usize> = std::iter::repeat_n(1, nd - reps.len()).chain(reps.iter().map(|&r| r.max(0) as usize)).collect();
    if pad_r.contains(&0) {
        return one(un("zeros_like", &i[0]));
    }
    let split: Vec<usize> = pad_r.iter().zip(&pad_s).flat_map(|(&r, &d)| [r, d]).collect();
    let axes: Vec<i64> = (0..nd).map(|k| 2 * k as i64).collect();
    let gs = reshape(&g[0], &split)?;
    one(reshape(&c("sum", &[gs], &[("axis", Value::Tuple(axes))])?, s))
}
fn g_repeat(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let r = p.int("repeats").max(0) as usize;
    let s = i[0].shape();
    if r == 0 {
        return one(un("zeros_like", &i[0]));
    }
    let (split, ax) = match p.opt_int("axis") {
        None => (vec![i[0].size(), r], 1),
        Some(a) => {
            let a = norm_ax(a, s.len()) as usize;
            let mut v = s.to_vec();
            v.insert(a + 1, r);
            (v, a + 1)
        }
    };
    let gs = reshape(&g[0], &split)?;
    one(reshape(&c("sum", &[gs], &[("axis", Value::Int(ax as i64))])?, s))
}
fn g_reverse(p: &Params, _: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    one(c("reverse", &[g[0].clone()], &[("axis", Value::Tuple(p.tuple("axis")))]))
}
fn g_broadcast(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let mut v = vec![Some(sum_to(&g[0], i[0].shape())?)];
    v.resize(i.len(), None);
    Ok(v)
}
fn g_cast(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    one(c("Cast", &[g[0].clone()], &[("dtype", Value::DType(i[0].dtype()))]))
}

// ---- indexing ---------------------------------------------------------------

/// Indices made valid per `mode` ("clip" or "wrap"), as float positions of g's dtype.
fn fix_indices(idx: &NDArray, n: usize, mode: &str) -> Result<NDArray> {
    let idx = if mode == "wrap" {
        sc("_mod_scalar", idx, n as f64)?
    } else {
        c("clip", std::slice::from_ref(idx), &[("a_min", Value::Float(0.0)), ("a_max", Value::Float(n as f64 - 1.0))])?
    };
    Ok(idx)
}
/// take: the output gradient is added back at the taken rows of the axis (repeated
/// indices accumulate), through the accumulating scatter of gather_nd's gradient, so
/// any dtype works and memory stays the size of the data.
fn g_take(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let (a, idx) = (&i[0], &i[1]);
    let s = a.shape();
    let ax = norm_ax(p.int("axis"), s.len()) as usize;
    let n = s[ax];
    let k = idx.size();
    let pre: usize = s[..ax].iter().product();
    let post: usize = s[ax + 1..].iter().product();
    let idx = fix_indices(&un("fix", &reshape(idx, &[1, k])?)?, n, p.str("mode"))?;
    let g3 = reshape(&g[0], &[pre, k, post])?;
    let gt = c("transpose", &[g3], &[("axes", tuple(&[1, 0, 2]))])?;
    let acc = c("_backward_gather_nd", &[gt, idx], &[("shape", tuple(&[n, pre, post]))])?;
    let ga = c("transpose", &[acc], &[("axes", tuple(&[1, 0, 2]))])?;
    Ok(vec![Some(reshape(&ga, s)?), None])
}
fn g_pick(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let (a, idx) = (&i[0], &i[1]);
    let s = a.shape();
    let (shape, ax) = match p.opt_int("axis") {
        None => (vec![a.size()], 0),
        Some(x) => (s.to_vec(), norm_ax(x, s.len()) as usize),
    };
    let n = shape[ax];
    let mut rest = shape.clone();
    rest.remove(ax);
    let idx = fix_indices(&reshape(idx, &rest)?, n, p.str("mode"))?;
    let oh = c("one_hot", &[idx], &[("depth", Value::Int(n as i64)), ("dtype", Value::DType(g[0].dtype()))])?;
    // one_hot puts the class axis last; move it to `ax`
    let nd = shape.len();
    let mut perm: Vec<usize> = (0..nd - 1).collect();
    perm.insert(ax, nd - 1);
    let oh = if ax == nd - 1 { oh } else { c("transpose", &[oh], &[("axes", tuple(&perm))])? };
    let mut keep = shape.clone();
    keep[ax] = 1;
    let ga = mul(&oh, &reshape(&g[0], &keep)?)?;
    Ok(vec![Some(reshape(&ga, s)?), None])
}
/// The gradient of selected values (topk's values, sort's output): each output
/// gradient goes back to the position its value came from along the axis (the
/// flattened array when `axis` is None); `idx` holds those positions.
fn scatter_selected(axis: Option<i64>, data: &NDArray, idx: &NDArray, g: &NDArray) -> Result<NDArray> {
    let s = data.shape().to_vec();
    let (nd, ax) = match axis {
        None => (1, 0),
        Some(x) => (s.len(), norm_ax(x, s.len()) as usize),
    };
    let n = if axis.is_none() { data.size() } else { s[ax] };
    // one_hot(idx) has the selection's shape plus a last axis of length n; weighting it
    // by the gradient and summing over the selected axis leaves (other axes..., n).
    let oh = c("one_hot", std::slice::from_ref(idx), &[("depth", Value::Int(n as i64)), ("dtype", Value::DType(g.dtype()))])?;
    let mut gs = g.shape().to_vec();
    gs.push(1);
    let w = mul(&oh, &reshape(g, &gs)?)?;
    let summed = c("sum", &[w], &[("axis", tuple(&[ax]))])?;
    let res = if ax == nd - 1 {
        summed
    } else {
        let mut perm: Vec<usize> = (0..nd - 1).collect();
        perm.insert(ax, nd - 1);
        c("transpose", &[summed], &[("axes", tuple(&perm))])?
    };
    reshape(&res, &s)
}
/// gather_nd: the gradient adds up at the gathered positions (repeats accumulate).
fn g_gather_nd(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let gd = c("_backward_gather_nd", &[g[0].clone(), i[1].clone()], &[("shape", tuple(i[0].shape()))])?;
    Ok(vec![Some(gd), None])
}
/// scatter_nd and its accumulating form: each value's gradient is read back from
/// the position it went to.
fn g_scatter_nd(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(c("gather_nd", &[g[0].clone(), i[1].clone()], &[])?), None])
}
fn axis_value(p: &Params) -> Value {
    match p.opt_int("axis") {
        Some(a) => Value::Int(a),
        None => Value::None,
    }
}
/// topk: the values' gradient goes back to where they were taken from; indices and
/// masks have none (MXNet's zero gradient).
fn g_topk(p: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    let idx = match p.str("ret_typ") {
        "both" => o[1].clone(),
        "value" => c(
            "topk",
            std::slice::from_ref(&i[0]),
            &[
                ("axis", axis_value(p)),
                ("k", Value::Int(p.int("k"))),
                ("ret_typ", Value::Str("indices".into())),
                ("is_ascend", Value::Bool(p.bool("is_ascend"))),
                ("dtype", Value::DType(crate::dtype::DType::F64)),
            ],
        )?,
        _ => return Ok(vec![None]),
    };
    Ok(vec![Some(scatter_selected(p.opt_int("axis"), &i[0], &idx, &g[0])?)])
}
/// sort: the gradient of a permutation, routed back through argsort's positions.
fn g_sort(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let idx = c(
        "argsort",
        std::slice::from_ref(&i[0]),
        &[("axis", axis_value(p)), ("is_ascend", Value::Bool(p.bool("is_ascend"))), ("dtype", Value::DType(crate::dtype::DType::F64))],
    )?;
    Ok(vec![Some(scatter_selected(p.opt_int("axis"), &i[0], &idx, &g[0])?)])
}
fn g_where(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let z = un("zeros_like", &g[0])?;
    let gx = c("where", &[i[0].clone(), g[0].clone(), z.clone()], &[])?;
    let gy = c("where", &[i[0].clone(), z, g[0].clone()], &[])?;
    Ok(vec![None, Some(gx), Some(gy)])
}

// ---- softmax ----------------------------------------------------------------

fn softmax_common(p: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray], kind: u8) -> Grads {
    let x = &i[0];
    let ax = Value::Int(p.int("axis"));
    let t = p.opt_float("temperature").unwrap_or(1.0);
    let (y, gy) = if o[0].dtype() != x.dtype() {
        let d = Value::DType(x.dtype());
        (c("Cast", &[o[0].clone()], &[("dtype", d.clone())])?, c("Cast", &[g[0].clone()], &[("dtype", d)])?)
    } else {
        (o[0].clone(), g[0].clone())
    };
    let ssum = |v: &NDArray| c("sum", std::slice::from_ref(v), &[("axis", ax.clone()), ("keepdims", Value::Bool(true))]);
    let gx = if kind == 1 {
        sub(&gy, &mul(&un("exp", &y)?, &ssum(&gy)?)?)?
    } else {
        let d = mul(&y, &sub(&gy, &ssum(&mul(&gy, &y)?)?)?)?;
        if kind == 2 {
            neg(&d)?
        } else {
            d
        }
    };
    let gx = if t != 1.0 { sc("_div_scalar", &gx, t)? } else { gx };
    // softmax's `length` input (use_length) gets no gradient
    let mut grads = vec![Some(gx)];
    grads.resize(i.len(), None);
    Ok(grads)
}
fn g_softmax(p: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    softmax_common(p, i, o, g, 0)
}
fn g_log_softmax(p: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    softmax_common(p, i, o, g, 1)
}
fn g_softmin(p: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    softmax_common(p, i, o, g, 2)
}

// ---- linalg -----------------------------------------------------------------

/// `a` seen as the 2-D matrix `dot` multiplies (before its transpose flag).
fn as_mat(a: &NDArray, transposed: bool, is_lhs: bool) -> Result<NDArray> {
    let s = a.shape();
    if s.is_empty() {
        return reshape(a, &[1, 1]);
    }
    let split_last = is_lhs != transposed;
    let m = if split_last { [s[..s.len() - 1].iter().product(), s[s.len() - 1]] } else { [s[0], s[1..].iter().product()] };
    reshape(a, &m)
}
fn dot2(a: &NDArray, b: &NDArray, ta: bool, tb: bool) -> Result<NDArray> {
    c("dot", &[a.clone(), b.clone()], &[("transpose_a", Value::Bool(ta)), ("transpose_b", Value::Bool(tb))])
}
fn g_dot(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let (ta, tb) = (p.bool("transpose_a"), p.bool("transpose_b"));
    let (a, b) = (as_mat(&i[0], ta, true)?, as_mat(&i[1], tb, false)?);
    let rows = if ta { a.shape()[1] } else { a.shape()[0] };
    let cols = if tb { b.shape()[0] } else { b.shape()[1] };
    let g2 = reshape(&g[0], &[rows, cols])?;
    let (ga, gb) = match (ta, tb) {
        (false, false) => (dot2(&g2, &b, false, true)?, dot2(&a, &g2, true, false)?),
        (true, false) => (dot2(&b, &g2, false, true)?, dot2(&a, &g2, false, false)?),
        (false, true) => (dot2(&g2, &b, false, false)?, dot2(&g2, &a, true, false)?),
        (true, true) => (dot2(&b, &g2, true, true)?, dot2(&g2, &a, true, true)?),
    };
    Ok(vec![Some(reshape(&ga, i[0].shape())?), Some(reshape(&gb, i[1].shape())?)])
}
fn bdot(a: &NDArray, b: &NDArray, ta: bool, tb: bool) -> Result<NDArray> {
    c("batch_dot", &[a.clone(), b.clone()], &[("transpose_a", Value::Bool(ta)), ("transpose_b", Value::Bool(tb))])
}
fn g_batch_dot(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let (ta, tb) = (p.bool("transpose_a"), p.bool("transpose_b"));
    let (a, b, g) = (&i[0], &i[1], &g[0]);
    let (ga, gb) = match (ta, tb) {
        (false, false) => (bdot(g, b, false, true)?, bdot(a, g, true, false)?),
        (true, false) => (bdot(b, g, false, true)?, bdot(a, g, false, false)?),
        (false, true) => (bdot(g, b, false, false)?, bdot(g, a, true, false)?),
        (true, true) => (bdot(b, g, true, true)?, bdot(g, a, true, true)?),
    };
    Ok(vec![Some(ga), Some(gb)])
}

/// `_linalg_gemm2` (`alpha * op(A) op(B)`) and `_linalg_gemm` (`+ beta * C`). A row
/// axis other than `-2` is swapped next to the column axis, differentiated there and
/// swapped back.
fn gemm_grads(p: &Params, i: &[NDArray], g: &[NDArray], name: &str) -> Result<(NDArray, NDArray)> {
    let nd = i[0].ndim();
    let (ax, last) = (norm_ax(p.int("axis"), nd), nd as i64 - 2);
    if nd < 2 || ax < 0 || ax > last {
        return Err(Error::op(name, format!("invalid row axis {} for inputs of dimension {nd}", p.int("axis"))));
    }
    if ax != last {
        let sw = |a: &NDArray| c("SwapAxis", std::slice::from_ref(a), &[("dim1", Value::Int(ax)), ("dim2", Value::Int(last))]);
        let (ga, gb) = gemm_grads_last(p, &[sw(&i[0])?, sw(&i[1])?], &[sw(&g[0])?], name)?;
        return Ok((sw(&ga)?, sw(&gb)?));
    }
    gemm_grads_last(p, i, g, name)
}
/// [`gemm_grads`] with the matrix axes last.
fn gemm_grads_last(p: &Params, i: &[NDArray], g: &[NDArray], name: &str) -> Result<(NDArray, NDArray)> {
    let alpha = p.float("alpha");
    let to3 = |a: &NDArray| {
        let s = a.shape();
        let n = s.len();
        reshape(a, &[s[..n - 2].iter().product(), s[n - 2], s[n - 1]])
    };
    let (a, b, g3) = (to3(&i[0])?, to3(&i[1])?, to3(&g[0])?);
    let mut r = g_batch_dot(p, &[a, b], &[], &[g3])?;
    let (ga, gb) = (r.remove(0), r.remove(0));
    let fix = |x: Option<NDArray>, like: &NDArray| -> Result<NDArray> {
        let x = x.ok_or_else(|| Error::op(name, "missing gradient"))?;
        reshape(&sc("_mul_scalar", &x, alpha)?, like.shape())
    };
    Ok((fix(ga, &i[0])?, fix(gb, &i[1])?))
}
fn g_gemm2(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let (ga, gb) = gemm_grads(p, i, g, "_linalg_gemm2")?;
    Ok(vec![Some(ga), Some(gb)])
}
fn g_gemm(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let (ga, gb) = gemm_grads(p, i, g, "_linalg_gemm")?;
    let gc = sc("_mul_scalar", &g[0], p.float("beta"))?;
    Ok(vec![Some(ga), Some(gb), Some(gc)])
}

/// The gradient registered for the op named `name`, if this module has one.
pub(super) fn lookup(name: &str) -> Option<GradFn> {
    let f: GradFn = match name {
        "elemwise_add" | "broadcast_add" => g_add,
        "elemwise_sub" | "broadcast_sub" => g_sub,
        "elemwise_mul" | "broadcast_mul" => g_mul,
        "elemwise_div" | "broadcast_div" | "_scatter_elemwise_div" => g_div,
        "_power" | "broadcast_power" => g_pow,
        "_maximum" | "broadcast_maximum" => g_maximum,
        "_minimum" | "broadcast_minimum" => g_minimum,
        "_mod" | "broadcast_mod" => g_mod,
        "_hypot" | "broadcast_hypot" => g_hypot,
        "_plus_scalar" | "_minus_scalar" | "_scatter_plus_scalar" | "_scatter_minus_scalar" | "_copy" | "_copyto" => g_ident,
        "_mod_scalar" => g_mod_scalar,
        "_rminus_scalar" | "negative" => g_neg,
        "_mul_scalar" => g_mul_scalar,
        "_div_scalar" => g_div_scalar,
        "_rdiv_scalar" => g_rdiv_scalar,
        "_power_scalar" => g_power_scalar,
        "_rpower_scalar" => g_rpower_scalar,
        "_rmod_scalar" => g_rmod_scalar,
        "_maximum_scalar" => g_maximum_scalar,
        "_minimum_scalar" => g_minimum_scalar,
        "_hypot_scalar" => g_hypot_scalar,
        "clip" => g_clip,
        "abs" => g_abs,
        "sqrt" => g_sqrt,
        "rsqrt" => g_rsqrt,
        "cbrt" => g_cbrt,
        "rcbrt" => g_rcbrt,
        "square" => g_square,
        "reciprocal" => g_reciprocal,
        "exp" => g_exp,
        "expm1" => g_expm1,
        "log" => g_log,
        "log10" => g_log10,
        "log2" => g_log2,
        "log1p" => g_log1p,
        "sin" => g_sin,
        "cos" => g_cos,
        "tan" => g_tan,
        "arcsin" => g_arcsin,
        "arccos" => g_arccos,
        "arctan" => g_arctan,
        "sinh" => g_sinh,
        "cosh" => g_cosh,
        "tanh" => g_tanh,
        "arcsinh" => g_arcsinh,
        "arccosh" => g_arccosh,
        "arctanh" => g_arctanh,
        "degrees" => g_degrees,
        "radians" => g_radians,
        "sigmoid" => g_sigmoid,
        "relu" => g_relu,
        "softsign" => g_softsign,
        "sum" => g_sum,
        "_square_sum" => g_square_sum,
        "mean" => g_mean,
        "nansum" => g_nansum,
        "prod" => g_prod,
        "nanprod" => g_nanprod,
        "max" | "min" => g_maxmin,
        "norm" => g_norm,
        "Reshape" | "Flatten" | "expand_dims" | "squeeze" => g_reshape,
        "reshape_like" => g_reshape_like,
        "transpose" => g_transpose,
        "SwapAxis" => g_swapaxes,
        "Concat" => g_concat,
        "stack" => g_stack,
        "SliceChannel" => g_split,
        "slice" => g_slice,
        "slice_axis" => g_slice_axis,
        "_slice_assign" => g_slice_assign,
        "_slice_assign_scalar" => g_slice_assign_scalar,
        "tile" => g_tile,
        "repeat" => g_repeat,
        "reverse" => g_reverse,
        "broadcast_to" | "broadcast_axis" | "broadcast_like" => g_broadcast,
        "Cast" => g_cast,
        "take" => g_take,
        "pick" => g_pick,
        "where" => g_where,
        "topk" => g_topk,
        "gather_nd" => g_gather_nd,
        "scatter_nd" | "_backward_gather_nd" => g_scatter_nd,
        "sort" => g_sort,
        "softmax" => g_softmax,
        "log_softmax" => g_log_softmax,
        "softmin" => g_softmin,
        "dot" => g_dot,
        "batch_dot" => g_batch_dot,
        "_linalg_gemm2" => g_gemm2,
        "_linalg_gemm" => g_gemm,
        // zero gradient everywhere, as in MXNet
        "sign" | "floor" | "ceil" | "round" | "rint" | "trunc" | "fix" | "logical_not" | "argmax" | "argmin" | "argsort" | "one_hot"
        | "zeros_like" | "ones_like" => zero,
        n if n.starts_with("_equal")
            || n.starts_with("_not_equal")
            || n.starts_with("_greater")
            || n.starts_with("_lesser")
            || n.starts_with("_logical")
            || n.starts_with("broadcast_equal")
            || n.starts_with("broadcast_not_equal")
            || n.starts_with("broadcast_greater")
            || n.starts_with("broadcast_lesser")
            || n.starts_with("broadcast_logical") =>
        {
            zero
        }
        _ => return None,
    };
    Some(f)
}
