//! Special functions and small math ops: `gammaln`, `gamma`, `erf`, `erfinv` (with
//! their `_backward_*` ops), `hard_sigmoid`, `smooth_l1`, `cumsum` and `moments`.
//!
//! The special functions compute in f64 (C's libm for `lgamma`/`tgamma`/`erf`; our
//! own `erfinv` and `digamma`) and round to the element type. `cumsum` is a blocked
//! parallel scan: block sums in parallel, a short serial prefix over the blocks, then
//! each thread scans four blocks at a time so that four independent add chains run
//! together (a plain scan is bound by the latency of one add per element).

use super::{grad_wanted, infer_like_first, Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::kernels::cpu::elemwise as k;
use crate::kernels::cpu::{par_for, SendPtr};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};
use crate::{bin_fn, un_fn, with_dtype};

type Grads = Result<Vec<Option<NDArray>>>;

// ---- scalar special functions -------------------------------------------------

extern "C" {
    fn lgamma_r(x: f64, sign: *mut i32) -> f64;
    fn tgamma(x: f64) -> f64;
    fn erf(x: f64) -> f64;
}

/// `ln |Γ(x)|`.
pub fn gammaln(x: f64) -> f64 {
    let mut s = 0i32;
    // SAFETY: lgamma_r is the reentrant libm function; `s` is a valid out-pointer.
    unsafe { lgamma_r(x, &mut s) }
}

/// `Γ(x)`.
pub fn gamma_fn(x: f64) -> f64 {
    // SAFETY: plain libm call.
    unsafe { tgamma(x) }
}

/// The error function.
pub fn erf_fn(x: f64) -> f64 {
    // SAFETY: plain libm call.
    unsafe { erf(x) }
}

/// The inverse error function on [-1, 1] (±inf at ±1, NaN outside): Giles' single
/// precision approximation refined by two Newton steps on `erf`.
pub fn erfinv_fn(x: f64) -> f64 {
    if x.is_nan() || !(-1.0..=1.0).contains(&x) {
        return f64::NAN;
    }
    if x == 1.0 {
        return f64::INFINITY;
    }
    if x == -1.0 {
        return f64::NEG_INFINITY;
    }
    let w = -((1.0 - x) * (1.0 + x)).ln();
    let mut p;
    if w < 5.0 {
        let w = w - 2.5;
        p = 2.810_226_36e-08;
        p = 3.432_739_39e-07 + p * w;
        p = -3.523_387_7e-06 + p * w;
        p = -4.391_506_54e-06 + p * w;
        p = 0.000_218_580_87 + p * w;
        p = -0.001_253_725_03 + p * w;
        p = -0.004_177_681_64 + p * w;
        p = 0.246_640_727 + p * w;
        p = 1.501_409_41 + p * w;
    } else {
        let w = w.sqrt() - 3.0;
        p = -0.000_200_214_257;
        p = 0.000_100_950_558 + p * w;
        p = 0.001_349_343_22 + p * w;
        p = -0.003_673_428_44 + p * w;
        p = 0.005_739_507_73 + p * w;
        p = -0.007_622_461_3 + p * w;
        p = 0.009_438_870_47 + p * w;
        p = 1.001_674_06 + p * w;
        p = 2.832_976_82 + p * w;
    }
    let mut y = p * x;
    let k = 2.0 / std::f64::consts::PI.sqrt();
    for _ in 0..2 {
        let e = erf_fn(y) - x;
        y -= e / (k * (-y * y).exp());
    }
    y
}

/// The digamma function ψ(x) = d/dx ln Γ(x): reflection for x < 0, recurrence up
/// to x ≥ 10, then the asymptotic series (truncation error below 1e-13 there).
/// At the poles (0, -1, -2, ...) it is +inf, as MXNet's (so the gradient of
/// `gammaln` there is inf and that of `gamma` at 0 is inf, not nan).
pub fn digamma(x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x <= 0.0 && x == x.floor() {
        return f64::INFINITY;
    }
    if x < 0.0 {
        // ψ(1 - x) - ψ(x) = π cot(π x)
        return digamma(1.0 - x) - std::f64::consts::PI / (std::f64::consts::PI * x).tan();
    }
    let mut r = 0.0;
    let mut x = x;
    while x < 10.0 {
        r -= 1.0 / x;
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    let t = f * (-1.0 / 12.0 + f * (1.0 / 120.0 + f * (-1.0 / 252.0 + f * (1.0 / 240.0 + f * (-1.0 / 132.0)))));
    r + x.ln() - 0.5 / x + t
}

fn v(a: i64, f: fn(f64) -> f64) -> i64 {
    f(a as f64) as i64
}

un_fn!(Gammaln, |a| gammaln(a as f64) as _, v(a, gammaln));
un_fn!(Gamma, |a| gamma_fn(a as f64) as _, v(a, gamma_fn));
un_fn!(Erf, |a| erf_fn(a as f64) as _, v(a, erf_fn));
un_fn!(Erfinv, |a| erfinv_fn(a as f64) as _, v(a, erfinv_fn));
un_fn!(Digamma, |a| digamma(a as f64) as _, v(a, digamma));

fn bw(g: f64, x: f64, d: fn(f64) -> f64) -> f64 {
    g * d(x)
}
fn d_gammaln(x: f64) -> f64 {
    digamma(x)
}
fn d_gamma(x: f64) -> f64 {
    gamma_fn(x) * digamma(x)
}
fn d_erf(x: f64) -> f64 {
    2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp()
}
fn d_erfinv(x: f64) -> f64 {
    let y = erfinv_fn(x);
    std::f64::consts::PI.sqrt() / 2.0 * (y * y).exp()
}
fn bwi(g: i64, x: i64, d: fn(f64) -> f64) -> i64 {
    bw(g as f64, x as f64, d) as i64
}

bin_fn!(BwGammaln, |g, x| bw(g as f64, x as f64, d_gammaln) as _, bwi(g, x, d_gammaln));
bin_fn!(BwGamma, |g, x| bw(g as f64, x as f64, d_gamma) as _, bwi(g, x, d_gamma));
bin_fn!(BwErf, |g, x| bw(g as f64, x as f64, d_erf) as _, bwi(g, x, d_erf));
bin_fn!(BwErfinv, |g, x| bw(g as f64, x as f64, d_erfinv) as _, bwi(g, x, d_erfinv));

fn unary_compute<F: k::UnFn>(c: &mut OpCall) -> Result<()> {
    let (a, o) = (&c.inputs[0], &c.outputs[0]);
    with_dtype!(o.dtype, T, { k::unary::<T, F>(a.ptr_as(), o.ptr_as(), o.size()) });
    Ok(())
}

fn binary_compute<F: k::BinFn>(c: &mut OpCall) -> Result<()> {
    let (a, b, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    with_dtype!(o.dtype, T, { k::binary::<T, F>(a.ptr_as(), b.ptr_as(), o.ptr_as(), o.size()) });
    Ok(())
}

fn call1(name: &str, ins: &[NDArray], attrs: &[(&str, Value)]) -> Result<NDArray> {
    super::call1(name, ins, attrs)
}

fn special_grad(name: &'static str) -> impl Fn(&[NDArray], &[NDArray]) -> Grads {
    move |i, g| Ok(vec![Some(call1(name, &[g[0].clone(), i[0].clone()], &[])?)])
}

fn g_gammaln(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    special_grad("_backward_gammaln")(i, g)
}
fn g_gamma(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    special_grad("_backward_gamma")(i, g)
}
fn g_erf(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    special_grad("_backward_erf")(i, g)
}
fn g_erfinv(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    special_grad("_backward_erfinv")(i, g)
}

fn same_shape_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    super::infer_same(a)
}

// ---- hard_sigmoid, smooth_l1 -----------------------------------------------------

const HARD_SIGMOID_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("alpha", PType::Float, Some("0.2"), "Slope of hard sigmoid"),
    ParamSpec::new("beta", PType::Float, Some("0.5"), "Bias of hard sigmoid."),
];

fn float_map(c: &mut OpCall, f: impl Fn(f64) -> f64 + Sync + Send) {
    let (a, o) = (&c.inputs[0], &c.outputs[0]);
    let n = o.size();
    with_dtype!(o.dtype, T, {
        let (ap, op) = (SendPtr(a.ptr_as::<T>()), SendPtr(o.ptr_as::<T>()));
        par_for(n, 4096, |s, e| {
            for i in s..e {
                // SAFETY: i < n for both blobs; an in-place call reads before it writes.
                unsafe { *op.get().add(i) = T::from_f64(f((*ap.get().add(i)).to_f64())) };
            }
        });
    });
}

fn hard_sigmoid_compute(c: &mut OpCall) -> Result<()> {
    let (al, be) = (c.params.float("alpha"), c.params.float("beta"));
    float_map(c, move |x| (al * x + be).clamp(0.0, 1.0));
    Ok(())
}

fn g_hard_sigmoid(p: &Params, _: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    let sc = |name: &str, a: &NDArray, s: f64| call1(name, std::slice::from_ref(a), &[("scalar", Value::Float(s))]);
    let lo = sc("_greater_scalar", &o[0], 0.0)?;
    let hi = sc("_lesser_scalar", &o[0], 1.0)?;
    let m = call1("elemwise_mul", &[lo, hi], &[])?;
    let gm = call1("elemwise_mul", &[g[0].clone(), m], &[])?;
    Ok(vec![Some(sc("_mul_scalar", &gm, p.float("alpha"))?)])
}

const SMOOTH_L1_PARAMS: &[ParamSpec] = &[ParamSpec::new("scalar", PType::Float, Some("1"), "sigma: the scalar of the smooth L1 loss")];

fn smooth_l1_compute(c: &mut OpCall) -> Result<()> {
    let s2 = c.params.float("scalar").powi(2);
    float_map(c, move |x| if x.abs() < 1.0 / s2 { 0.5 * x * x * s2 } else { x.abs() - 0.5 / s2 });
    Ok(())
}

fn smooth_l1_bw_compute(c: &mut OpCall) -> Result<()> {
    let s2 = c.params.float("scalar").powi(2);
    let (g, x, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let n = o.size();
    with_dtype!(o.dtype, T, {
        let (gp, xp, op) = (SendPtr(g.ptr_as::<T>()), SendPtr(x.ptr_as::<T>()), SendPtr(o.ptr_as::<T>()));
        par_for(n, 4096, |s, e| {
            for i in s..e {
                // SAFETY: i < n for every blob.
                unsafe {
                    let x = (*xp.get().add(i)).to_f64();
                    let d = if x.abs() < 1.0 / s2 { s2 * x } else { x.signum() };
                    *op.get().add(i) = T::from_f64((*gp.get().add(i)).to_f64() * d);
                }
            }
        });
    });
    Ok(())
}

fn g_smooth_l1(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(call1("_backward_smooth_l1", &[g[0].clone(), i[0].clone()], &[("scalar", Value::Float(p.float("scalar")))])?)])
}

// ---- cumsum -------------------------------------------------------------------

const CUMSUM_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("axis", PType::OptInt, Some("None"), "Axis along which the cumulative sum is computed. The default (None) is to compute the cumsum over the flattened array."),
    ParamSpec::new("dtype", PType::OptDType, Some("None"), "Type of the returned array and of the accumulator in which the elements are summed. If dtype is not specified, it defaults to the dtype of a, unless a has an integer dtype with a precision less than that of the default platform integer."),
];

/// `(outer, len, inner)` of the scanned axis, or an error naming the op.
fn cumsum_geometry(op: &str, shape: &[usize], axis: Option<i64>) -> Result<(usize, usize, usize)> {
    match axis {
        None => Ok((1, shape.iter().product(), 1)),
        Some(ax) => {
            let nd = shape.len() as i64;
            let a = if ax < 0 { ax + nd } else { ax };
            if a < 0 || a >= nd {
                return Err(crate::error::Error::op(
                    op,
                    format!("axis {ax} is out of bounds for an array of shape {} (valid range [{}, {}))", fmt_shape(shape), -nd, nd),
                ));
            }
            let a = a as usize;
            Ok((shape[..a].iter().product(), shape[a], shape[a + 1..].iter().product()))
        }
    }
}

fn cumsum_dtype(p: &Params, input: DType) -> DType {
    match p.dtype("dtype") {
        Some(d) => d,
        None if input == DType::Bool => DType::I64,
        None => input,
    }
}

fn cumsum_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let s = a.shapes[0];
    let axis = a.params.opt_int("axis");
    cumsum_geometry(a.op.name, s, axis)?;
    let out = if axis.is_none() { Shape::from_slice(&[s.iter().product()]) } else { Shape::from_slice(s) };
    Ok(vec![(out, cumsum_dtype(a.params, a.dtypes[0]))])
}

/// Scan of one contiguous line `x[0..n]` into `o`, in parallel blocks.
fn scan_line<T: Copy + Send + Sync + std::ops::Add<Output = T> + Default>(x: *const T, o: *mut T, n: usize) {
    const B: usize = 1 << 14;
    let (xs, os) = (SendPtr(x as *mut T), SendPtr(o));
    let nb = n.div_ceil(B);
    if nb <= 1 || crate::engine::threads() <= 1 && n < 4 * B {
        let mut acc = T::default();
        for i in 0..n {
            // SAFETY: i < n.
            unsafe {
                acc = acc + *x.add(i);
                *o.add(i) = acc;
            }
        }
        return;
    }
    // Pass 1: the sum of every block.
    let mut sums = vec![T::default(); nb];
    let sp = SendPtr(sums.as_mut_ptr());
    par_for(nb, 4, |s, e| {
        for b in s..e {
            let (lo, hi) = (b * B, ((b + 1) * B).min(n));
            let mut acc = [T::default(); 8];
            let mut i = lo;
            // SAFETY: lo..hi lies inside x.
            unsafe {
                while i + 8 <= hi {
                    for (j, a) in acc.iter_mut().enumerate() {
                        *a = *a + *xs.get().add(i + j);
                    }
                    i += 8;
                }
                let mut t = T::default();
                for a in acc {
                    t = t + a;
                }
                while i < hi {
                    t = t + *xs.get().add(i);
                    i += 1;
                }
                *sp.get().add(b) = t;
            }
        }
    });
    // Pass 2: each block's starting offset.
    let mut run = T::default();
    for s in sums.iter_mut() {
        let t = *s;
        *s = run;
        run = run + t;
    }
    // Pass 3: scan four blocks at a time from their offsets.
    let sp = SendPtr(sums.as_mut_ptr());
    let groups = nb.div_ceil(4);
    par_for(groups, 1, |s, e| {
        for gi in s..e {
            let first = gi * 4;
            let cnt = (nb - first).min(4);
            // SAFETY: block indices < nb; element indices < n.
            unsafe {
                let mut acc = [T::default(); 4];
                for (j, a) in acc.iter_mut().enumerate().take(cnt) {
                    *a = *sp.get().add(first + j);
                }
                let full = cnt == 4 && (first + 4) * B <= n;
                if full {
                    let base = first * B;
                    for i in 0..B {
                        for (j, a) in acc.iter_mut().enumerate() {
                            let idx = base + j * B + i;
                            *a = *a + *xs.get().add(idx);
                            *os.get().add(idx) = *a;
                        }
                    }
                } else {
                    for (j, a) in acc.iter_mut().enumerate().take(cnt) {
                        let b = first + j;
                        for idx in b * B..((b + 1) * B).min(n) {
                            *a = *a + *xs.get().add(idx);
                            *os.get().add(idx) = *a;
                        }
                    }
                }
            }
        }
    });
}

/// Scan along the middle axis of `(outer, len, inner)` with `inner > 1`.
fn scan_strided<T: Copy + Send + Sync + std::ops::Add<Output = T> + Default>(
    x: *const T,
    o: *mut T,
    outer: usize,
    len: usize,
    inner: usize,
) {
    let (xs, os) = (SendPtr(x as *mut T), SendPtr(o));
    par_for(outer, (1 << 15) / (len * inner).max(1) + 1, |s, e| {
        for l in s..e {
            let base = l * len * inner;
            // SAFETY: every index is < outer*len*inner.
            unsafe {
                for t in 0..inner {
                    *os.get().add(base + t) = *xs.get().add(base + t);
                }
                for i in 1..len {
                    let (prev, cur) = (base + (i - 1) * inner, base + i * inner);
                    for t in 0..inner {
                        *os.get().add(cur + t) = *os.get().add(prev + t) + *xs.get().add(cur + t);
                    }
                }
            }
        }
    });
}

fn scan<T: Copy + Send + Sync + std::ops::Add<Output = T> + Default>(x: *const T, o: *mut T, outer: usize, len: usize, inner: usize) {
    if inner == 1 {
        if outer == 1 {
            scan_line(x, o, len);
        } else {
            let (xs, os) = (SendPtr(x as *mut T), SendPtr(o));
            par_for(outer, (1 << 15) / len.max(1) + 1, |s, e| {
                for l in s..e {
                    let mut acc = T::default();
                    for i in l * len..(l + 1) * len {
                        // SAFETY: i < outer*len.
                        unsafe {
                            acc = acc + *xs.get().add(i);
                            *os.get().add(i) = acc;
                        }
                    }
                }
            });
        }
    } else {
        scan_strided(x, o, outer, len, inner);
    }
}

fn cumsum_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let (outer, len, inner) = cumsum_geometry(c.op.name, &x.shape, c.params.opt_int("axis"))?;
    if outer * len * inner == 0 {
        return Ok(());
    }
    // A different output dtype: convert first, then scan in place.
    let src: *const u8 = if x.dtype != o.dtype {
        with_dtype!(x.dtype, S, {
            with_dtype!(o.dtype, D, {
                // SAFETY: both blobs hold x.size() elements.
                let (xs, os) = unsafe { (x.slice::<S>(), o.slice_mut::<D>()) };
                for (d, s) in os.iter_mut().zip(xs) {
                    *d = D::from_f64(s.to_f64());
                }
            })
        });
        o.ptr
    } else {
        x.ptr
    };
    match o.dtype {
        DType::F32 => scan::<f32>(src as *const f32, o.ptr_as(), outer, len, inner),
        DType::F64 => scan::<f64>(src as *const f64, o.ptr_as(), outer, len, inner),
        DType::F16 => scan::<F16Acc>(src as *const F16Acc, o.ptr_as(), outer, len, inner),
        DType::BF16 => scan::<Bf16Acc>(src as *const Bf16Acc, o.ptr_as(), outer, len, inner),
        DType::I32 => scan::<Wrap<i32>>(src as *const Wrap<i32>, o.ptr_as(), outer, len, inner),
        DType::I64 => scan::<Wrap<i64>>(src as *const Wrap<i64>, o.ptr_as(), outer, len, inner),
        DType::I8 => scan::<Wrap<i8>>(src as *const Wrap<i8>, o.ptr_as(), outer, len, inner),
        DType::U8 | DType::Bool => scan::<Wrap<u8>>(src as *const Wrap<u8>, o.ptr_as(), outer, len, inner),
    }
    Ok(())
}

/// Integers add with wrap-around, as C does.
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
struct Wrap<T>(T);
macro_rules! wrap_add {
    ($($t:ty),*) => {$(
        impl std::ops::Add for Wrap<$t> {
            type Output = Self;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                Wrap(self.0.wrapping_add(o.0))
            }
        }
    )*};
}
wrap_add!(i8, u8, i32, i64);

/// float16 storage summed through f32.
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
struct F16Acc(half::f16);
impl std::ops::Add for F16Acc {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        F16Acc(half::f16::from_f32(self.0.to_f32() + o.0.to_f32()))
    }
}

/// bfloat16 storage summed through f32.
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
struct Bf16Acc(half::bf16);
impl std::ops::Add for Bf16Acc {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Bf16Acc(half::bf16::from_f32(self.0.to_f32() + o.0.to_f32()))
    }
}

fn g_cumsum(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    // d/dx_j sum_{i>=j} g_i: the reversed cumulative sum of the gradient.
    let (g0, axis) = match p.opt_int("axis") {
        None => (g[0].clone(), 0),
        Some(a) => (g[0].clone(), a),
    };
    let rev = call1("reverse", &[g0], &[("axis", Value::Tuple(vec![axis]))])?;
    let cs = call1("cumsum", &[rev], &[("axis", Value::Int(axis))])?;
    let back = call1("reverse", &[cs], &[("axis", Value::Tuple(vec![axis]))])?;
    let back = if back.dtype() != i[0].dtype() { call1("Cast", &[back], &[("dtype", Value::DType(i[0].dtype()))])? } else { back };
    let shape: Vec<i64> = i[0].shape().iter().map(|&d| d as i64).collect();
    Ok(vec![Some(call1("Reshape", &[back], &[("shape", Value::Tuple(shape))])?)])
}

// ---- moments ------------------------------------------------------------------

const MOMENTS_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("axes", PType::OptTuple, Some("None"), "Array of ints. Axes along which to compute mean and variance."),
    ParamSpec::new("keepdims", PType::Bool, Some("False"), "produce moments with the same dimensionality as the input."),
];

fn moments_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let s = a.shapes[0];
    let axes = a.params.opt_tuple("axes");
    if axes.as_ref().is_none_or(|v| v.is_empty()) {
        return Err(a.err("Empty axes is not supported, if you would like to do global moments, please pass all axes to axes argument"));
    }
    let mask = super::reduce::reduce_mask(a.op.name, s, axes.as_deref(), false)?;
    let out = super::reduce::reduced_shape(s, &mask, a.params.bool("keepdims"));
    Ok(vec![(out.clone(), a.dtypes[0]), (out, a.dtypes[0])])
}

fn moments_compute(c: &mut OpCall) -> Result<()> {
    let x = &c.inputs[0];
    let s = &x.shape;
    let axes = c.params.opt_tuple("axes");
    let mask = super::reduce::reduce_mask(c.op.name, s, axes.as_deref(), false)?;
    // Output index of each input element: walk the input in order.
    let nd = s.len();
    let out_n = c.outputs[0].size();
    let mut ostride = vec![0usize; nd];
    let mut acc = 1usize;
    for d in (0..nd).rev() {
        if !mask[d] {
            ostride[d] = acc;
            acc *= s[d];
        }
    }
    let count = (x.size() / out_n.max(1)).max(1) as f64;
    with_dtype!(x.dtype, T, {
        // SAFETY: blobs hold their sizes; outputs don't alias the input.
        let (xs, mo, vo) = unsafe { (x.slice::<T>(), c.outputs[0].slice_mut::<T>(), c.outputs[1].slice_mut::<T>()) };
        let mut idx = vec![0usize; nd];
        let mut oi: Vec<usize> = Vec::with_capacity(xs.len());
        for _ in 0..xs.len() {
            oi.push(idx.iter().zip(&ostride).map(|(i, s)| i * s).sum());
            for d in (0..nd).rev() {
                idx[d] += 1;
                if idx[d] < s[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        let mut sum = vec![0f64; out_n];
        for (v, &o) in xs.iter().zip(&oi) {
            sum[o] += v.to_f64();
        }
        let mean: Vec<f64> = sum.iter().map(|t| t / count).collect();
        let mut var = vec![0f64; out_n];
        for (v, &o) in xs.iter().zip(&oi) {
            let d = v.to_f64() - mean[o];
            var[o] += d * d;
        }
        for j in 0..out_n {
            mo[j] = T::from_f64(mean[j]);
            vo[j] = T::from_f64(var[j] / count);
        }
    });
    Ok(())
}

fn g_moments(p: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    let x = &i[0];
    let s = x.shape();
    let axes = p.opt_tuple("axes");
    let mask = super::reduce::reduce_mask("moments", s, axes.as_deref(), false)?;
    let keep: Vec<i64> = s.iter().zip(&mask).map(|(&d, &m)| if m { 1 } else { d as i64 }).collect();
    let n = s.iter().zip(&mask).filter(|(_, &m)| m).map(|(&d, _)| d).product::<usize>().max(1) as f64;
    let rs = |a: &NDArray| call1("Reshape", std::slice::from_ref(a), &[("shape", Value::Tuple(keep.clone()))]);
    let (gm, gv, mean) = (rs(&g[0])?, rs(&g[1])?, rs(&o[0])?);
    let centered = call1("broadcast_sub", &[x.clone(), mean], &[])?;
    let t = call1("broadcast_mul", &[centered, gv], &[])?;
    let t = call1("_mul_scalar", &[t], &[("scalar", Value::Float(2.0 / n))])?;
    let gmn = call1("_mul_scalar", &[gm], &[("scalar", Value::Float(1.0 / n))])?;
    Ok(vec![Some(call1("broadcast_add", &[t, gmn], &[])?)])
}

// ---- _histogram ----------------------------------------------------------------

const HIST_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("bin_cnt", PType::OptInt, Some("None"), "Number of bins for uniform case"),
    ParamSpec::new(
        "range",
        PType::Str,
        Some("None"),
        "The lower and upper range of the bins, as a tuple (lo, hi). Values outside the range are ignored.",
    ),
];

fn hist_select(p: &Params) -> &'static [&'static str] {
    if p.opt_int("bin_cnt").is_some() {
        &["data"]
    } else {
        &["data", "bins"]
    }
}

/// The uniform case's `(bin_cnt, lo, hi)`.
fn hist_uniform(op: &str, p: &Params) -> Result<Option<(usize, f64, f64)>> {
    let Some(cnt) = p.opt_int("bin_cnt") else { return Ok(None) };
    let bad = || crate::error::Error::op(op, format!("range must be a tuple (lo, hi) with lo <= hi, got '{}'", p.str("range")));
    let r = p.str("range").trim().trim_start_matches(['(', '[']).trim_end_matches([')', ']']).to_string();
    let parts: Vec<f64> = r
        .split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|x| x.trim().parse::<f64>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| bad())?;
    if parts.len() != 2 || parts[0] > parts[1] {
        return Err(bad());
    }
    if cnt <= 0 {
        return Err(crate::error::Error::op(op, format!("bin_cnt must be positive, got {cnt}")));
    }
    Ok(Some((cnt as usize, parts[0], parts[1])))
}

fn hist_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let n = match hist_uniform(a.op.name, a.params)? {
        Some((cnt, _, _)) => cnt,
        None => {
            let b = a.shapes[1];
            if b.len() != 1 || b[0] < 2 {
                return Err(a.err(format!("bins must be a 1-D array of at least 2 edges, got shape {}", fmt_shape(b))));
            }
            b[0] - 1
        }
    };
    let ed = if a.dtypes.len() > 1 { a.dtypes[1] } else { a.dtypes[0] };
    Ok(vec![(Shape::from_slice(&[n]), DType::I64), (Shape::from_slice(&[n + 1]), ed)])
}

fn hist_compute(c: &mut OpCall) -> Result<()> {
    let x = &c.inputs[0];
    let vals: Vec<f64> = with_dtype!(x.dtype, T, { unsafe { x.slice::<T>() }.iter().map(|v| v.to_f64()).collect() });
    let (counts, edges) = (&c.outputs[0], &c.outputs[1]);
    let edge_vals: Vec<f64> = match hist_uniform(c.op.name, c.params)? {
        Some((cnt, lo, hi)) => (0..=cnt).map(|i| lo + (hi - lo) * i as f64 / cnt as f64).collect(),
        None => {
            let b = &c.inputs[1];
            with_dtype!(b.dtype, T, { unsafe { b.slice::<T>() }.iter().map(|v| v.to_f64()).collect() })
        }
    };
    let nb = edge_vals.len() - 1;
    let mut cnts = vec![0i64; nb];
    let (lo, hi) = (edge_vals[0], edge_vals[nb]);
    for v in vals {
        if !(v >= lo && v <= hi) {
            continue;
        }
        // the last bin holds its right edge
        let i = edge_vals.partition_point(|e| *e <= v).saturating_sub(1).min(nb - 1);
        cnts[i] += 1;
    }
    // SAFETY: output sizes from inference.
    unsafe { counts.slice_mut::<i64>().copy_from_slice(&cnts) };
    with_dtype!(edges.dtype, T, {
        for (d, e) in unsafe { edges.slice_mut::<T>() }.iter_mut().zip(&edge_vals) {
            *d = T::from_f64(*e);
        }
    });
    Ok(())
}

// ---- registration -------------------------------------------------------------

const DATA: Arity = Arity::Fixed(&["data"]);
const BW: Arity = Arity::Fixed(&["lhs", "rhs"]);

fn no_grad(_: &Params, i: &[NDArray], _: &[NDArray], _: &[NDArray]) -> Grads {
    Ok(vec![None; i.len()])
}

fn float_only(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    infer_like_first(a)
}

pub(super) fn register(r: &mut Registry) {
    let _ = grad_wanted;
    r.add(
        OpDef::new(
            "gammaln",
            "Returns element-wise log of the absolute value of the gamma function of the input.",
            DATA,
            &[],
            float_only,
            unary_compute::<Gammaln>,
        )
        .unnamed_inputs()
        .inplace()
        .cost(8)
        .grad(g_gammaln),
    );
    r.add(
        OpDef::new(
            "gamma",
            "Returns the gamma function (extension of the factorial function to the reals), computed element-wise on the input array.",
            DATA,
            &[],
            float_only,
            unary_compute::<Gamma>,
        )
        .unnamed_inputs()
        .inplace()
        .cost(8)
        .grad(g_gamma),
    );
    r.add(
        OpDef::new("erf", "Returns element-wise gauss error function of the input.", DATA, &[], float_only, unary_compute::<Erf>)
            .unnamed_inputs()
            .inplace()
            .cost(8)
            .grad(g_erf),
    );
    r.add(
        OpDef::new(
            "erfinv",
            "Returns element-wise inverse gauss error function of the input.",
            DATA,
            &[],
            float_only,
            unary_compute::<Erfinv>,
        )
        .unnamed_inputs()
        .inplace()
        .cost(16)
        .grad(g_erfinv),
    );
    r.add(
        OpDef::new(
            "_digamma",
            "Returns element-wise digamma (the derivative of the log of the gamma function) of the input.",
            DATA,
            &[],
            float_only,
            unary_compute::<Digamma>,
        )
        .inplace()
        .cost(8),
    );
    r.add(
        OpDef::new("_backward_gammaln", "Gradient of gammaln: lhs * digamma(rhs).", BW, &[], same_shape_infer, binary_compute::<BwGammaln>)
            .cost(8),
    );
    r.add(
        OpDef::new(
            "_backward_gamma",
            "Gradient of gamma: lhs * gamma(rhs) * digamma(rhs).",
            BW,
            &[],
            same_shape_infer,
            binary_compute::<BwGamma>,
        )
        .cost(8),
    );
    r.add(
        OpDef::new("_backward_erf", "Gradient of erf: lhs * 2/sqrt(pi) * exp(-rhs^2).", BW, &[], same_shape_infer, binary_compute::<BwErf>)
            .cost(8),
    );
    r.add(
        OpDef::new(
            "_backward_erfinv",
            "Gradient of erfinv: lhs * sqrt(pi)/2 * exp(erfinv(rhs)^2).",
            BW,
            &[],
            same_shape_infer,
            binary_compute::<BwErfinv>,
        )
        .cost(16),
    );
    r.add(
        OpDef::new(
            "hard_sigmoid",
            "Computes hard sigmoid of x element-wise: ``y = max(0, min(1, alpha * x + beta))``.",
            DATA,
            HARD_SIGMOID_PARAMS,
            infer_like_first,
            hard_sigmoid_compute,
        )
        .unnamed_inputs()
        .inplace()
        .grad(g_hard_sigmoid),
    );
    r.add(
        OpDef::new(
            "smooth_l1",
            "Calculate Smooth L1 Loss(lhs, scalar) by summing: ``0.5 (sigma x)^2`` if ``|x| < 1/sigma^2``, else ``|x| - 0.5/sigma^2``, where sigma is ``scalar``.",
            DATA,
            SMOOTH_L1_PARAMS,
            infer_like_first,
            smooth_l1_compute,
        ).unnamed_inputs()
        .inplace()
        .grad(g_smooth_l1),
    );
    r.add(OpDef::new("_backward_smooth_l1", "Gradient of smooth_l1.", BW, SMOOTH_L1_PARAMS, same_shape_infer, smooth_l1_bw_compute));
    r.add(
        OpDef::new(
            "_np_cumsum",
            "Return the cumulative sum of the elements along a given axis (over the flattened array when axis is None).",
            Arity::Fixed(&["a"]),
            CUMSUM_PARAMS,
            cumsum_infer,
            cumsum_compute,
        )
        .aliases(&["cumsum"])
        .grad(g_cumsum),
    );
    r.add(
        OpDef::new("moments", "Calculate the mean and variance of `data`.", DATA, MOMENTS_PARAMS, moments_infer, moments_compute)
            .outputs(|_| 2)
            .grad(g_moments),
    );
    r.add(
        OpDef::new("_histogram", "Computes the histogram of the input: counts per bin and the bin edges (uniform bins over `range` with `bin_cnt`, else the given `bins` edges).", Arity::Dynamic { all: &["data", "bins"], select: hist_select }, HIST_PARAMS, hist_infer, hist_compute)
            .outputs(|_| 2)
            .grad(no_grad),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_values() {
        assert!((gammaln(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((gamma_fn(5.0) - 24.0).abs() < 1e-10);
        assert!((erf_fn(0.5) - 0.520_499_877_813_046_5).abs() < 1e-12);
        for &x in &[-0.99, -0.5, 0.0, 0.1, 0.7, 0.999_9] {
            assert!((erf_fn(erfinv_fn(x)) - x).abs() < 1e-12, "erfinv({x})");
        }
        // psi(1) = -Euler's gamma
        assert!((digamma(1.0) + 0.577_215_664_901_532_9).abs() < 1e-12);
        assert!((digamma(-0.5) - 0.036_489_973_978_576_5).abs() < 1e-10);
        // poles give +inf (MXNet's value), so d/dx gamma at 0 is inf * inf = inf
        for x in [0.0, -1.0, -7.0] {
            assert_eq!(digamma(x), f64::INFINITY);
        }
        assert_eq!(d_gamma(0.0), f64::INFINITY);
    }

    #[test]
    fn scan_matches_serial() {
        let n = (1 << 14) * 9 + 123;
        let x: Vec<f64> = (0..n).map(|i| ((i * 7) % 13) as f64 - 6.0).collect();
        let mut o = vec![0f64; n];
        scan_line(x.as_ptr(), o.as_mut_ptr(), n);
        let mut acc = 0.0;
        for i in 0..n {
            acc += x[i];
            assert_eq!(o[i], acc);
        }
    }
}
