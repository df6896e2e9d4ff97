//! Host kernels of the neural-network ops in `op/nn.rs`: activations (forward and
//! backward), batch/layer/instance normalisation statistics and their gradients,
//! dropout masks, embedding gather and scatter-add, and the output layers'
//! special gradients.
//!
//! Every kernel works on float storage (`f32`, `f64`, `f16`) through [`Store`]:
//! arithmetic happens in the storage's compute type ([`Real`]: `f32` for
//! `f32`/`f16`, `f64` for `f64`); sums over many elements accumulate in `f64`.
//! Loops are split over rows or channels with rayon when they are large enough.
//! The slices come from the blobs of one engine operation, which orders every access.

use super::{par_for, SendPtr};
use half::f16;
use rayon::prelude::*;

/// The arithmetic type of a float element (`f32` or `f64`).
pub trait Real:
    Copy
    + Send
    + Sync
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + 'static
{
    const ZERO: Self;
    const ONE: Self;
    fn c(v: f64) -> Self;
    fn f(self) -> f64;
    fn exp(self) -> Self;
    fn exp_m1(self) -> Self;
    fn ln_1p(self) -> Self;
    fn tanh(self) -> Self;
    fn sqrt(self) -> Self;
    fn abs(self) -> Self;
}

macro_rules! real {
    ($t:ty) => {
        impl Real for $t {
            const ZERO: $t = 0.0;
            const ONE: $t = 1.0;
            #[inline(always)]
            fn c(v: f64) -> $t {
                v as $t
            }
            #[inline(always)]
            fn f(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn exp(self) -> $t {
                <$t>::exp(self)
            }
            #[inline(always)]
            fn exp_m1(self) -> $t {
                <$t>::exp_m1(self)
            }
            #[inline(always)]
            fn ln_1p(self) -> $t {
                <$t>::ln_1p(self)
            }
            #[inline(always)]
            fn tanh(self) -> $t {
                <$t>::tanh(self)
            }
            #[inline(always)]
            fn sqrt(self) -> $t {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn abs(self) -> $t {
                <$t>::abs(self)
            }
        }
    };
}
real!(f32);
real!(f64);

/// A float storage type and its compute type.
pub trait Store: Copy + Send + Sync + 'static {
    type R: Real;
    fn ld(self) -> Self::R;
    fn st(v: Self::R) -> Self;
}
impl Store for f32 {
    type R = f32;
    #[inline(always)]
    fn ld(self) -> f32 {
        self
    }
    #[inline(always)]
    fn st(v: f32) -> f32 {
        v
    }
}
impl Store for f64 {
    type R = f64;
    #[inline(always)]
    fn ld(self) -> f64 {
        self
    }
    #[inline(always)]
    fn st(v: f64) -> f64 {
        v
    }
}
impl Store for f16 {
    type R = f32;
    #[inline(always)]
    fn ld(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn st(v: f32) -> f16 {
        f16::from_f32(v)
    }
}
impl Store for half::bf16 {
    type R = f32;
    #[inline(always)]
    fn ld(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn st(v: f32) -> half::bf16 {
        half::bf16::from_f32(v)
    }
}

const GRAIN: usize = 1 << 13;

/// The error function, accurate to about 1e-15 (series near 0, continued fraction
/// for the complement in the tails).
pub fn erf(x: f64) -> f64 {
    let a = x.abs();
    let r = if a < 3.0 {
        // erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1))
        let x2 = a * a;
        let mut term = a;
        let mut sum = a;
        let mut n = 0.0;
        while term.abs() > 1e-17 * sum.abs() {
            n += 1.0;
            term *= -x2 / n;
            sum += term / (2.0 * n + 1.0);
            if n > 200.0 {
                break;
            }
        }
        sum * std::f64::consts::FRAC_2_SQRT_PI
    } else if a > 6.5 {
        1.0
    } else {
        // erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), from the tail up.
        let mut f = a;
        for k in (1..60).rev() {
            f = a + (k as f64 * 0.5) / f;
        }
        1.0 - (-a * a).exp() / std::f64::consts::PI.sqrt() / f
    };
    if x < 0.0 {
        -r
    } else {
        r
    }
}

// ---- activations ---------------------------------------------------------------

const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
const SELU_LAMBDA: f64 = 1.050_700_987_355_480_5;

/// An elementwise activation (Activation's and LeakyReLU's act_types other than
/// prelu and rrelu, which need more inputs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Act {
    Relu,
    Sigmoid,
    Tanh,
    SoftRelu,
    SoftSign,
    Leaky(f64),
    Elu(f64),
    Selu,
    Gelu,
}

#[inline(always)]
fn act_one<R: Real>(x: R, a: Act) -> R {
    match a {
        Act::Relu => {
            if x > R::ZERO {
                x
            } else {
                R::ZERO
            }
        }
        Act::Sigmoid => R::ONE / (R::ONE + (-x).exp()),
        Act::Tanh => x.tanh(),
        Act::SoftRelu => {
            // log(1 + exp(x)), stable for large |x|.
            if x > R::c(20.0) {
                x
            } else {
                x.exp().ln_1p()
            }
        }
        Act::SoftSign => x / (R::ONE + x.abs()),
        Act::Leaky(s) => {
            if x > R::ZERO {
                x
            } else {
                R::c(s) * x
            }
        }
        Act::Elu(s) => {
            if x > R::ZERO {
                x
            } else {
                R::c(s) * x.exp_m1()
            }
        }
        Act::Selu => {
            // lambda * (alpha * expm1(x)), rounded in this order as MXNet does.
            let l = R::c(SELU_LAMBDA);
            if x > R::ZERO {
                l * x
            } else {
                l * (R::c(SELU_ALPHA) * x.exp_m1())
            }
        }
        Act::Gelu => R::c(0.5 * x.f() * (1.0 + erf(x.f() * std::f64::consts::FRAC_1_SQRT_2))),
    }
}

/// d out / d x, from the input `x` and the output `y`.
#[inline(always)]
fn act_deriv<R: Real>(x: R, y: R, a: Act) -> R {
    match a {
        Act::Relu => {
            if y > R::ZERO {
                R::ONE
            } else {
                R::ZERO
            }
        }
        Act::Sigmoid => y * (R::ONE - y),
        Act::Tanh => R::ONE - y * y,
        Act::SoftRelu => R::ONE / (R::ONE + (-x).exp()),
        Act::SoftSign => {
            let d = R::ONE + x.abs();
            R::ONE / (d * d)
        }
        Act::Leaky(s) => {
            if x > R::ZERO {
                R::ONE
            } else {
                R::c(s)
            }
        }
        Act::Elu(s) => {
            if x > R::ZERO {
                R::ONE
            } else {
                y + R::c(s)
            }
        }
        Act::Selu => {
            if x > R::ZERO {
                R::c(SELU_LAMBDA)
            } else {
                y + R::c(SELU_LAMBDA * SELU_ALPHA)
            }
        }
        Act::Gelu => {
            let xf = x.f();
            let cdf = 0.5 * (1.0 + erf(xf * std::f64::consts::FRAC_1_SQRT_2));
            let pdf = (-0.5 * xf * xf).exp() / (2.0 * std::f64::consts::PI).sqrt();
            R::c(cdf + xf * pdf)
        }
    }
}

/// `y = act(x)`.
pub fn act_forward<T: Store>(x: &[T], y: &mut [T], a: Act) {
    let yp = SendPtr(y.as_mut_ptr());
    par_for(x.len(), GRAIN, |s, e| {
        // SAFETY: disjoint ranges of y.
        let y = unsafe { std::slice::from_raw_parts_mut(yp.get().add(s), e - s) };
        if a == Act::Relu {
            // The common case, in a loop of its own so that it vectorises.
            for (o, v) in y.iter_mut().zip(&x[s..e]) {
                *o = T::st(act_one(v.ld(), Act::Relu));
            }
            return;
        }
        for (o, v) in y.iter_mut().zip(&x[s..e]) {
            *o = T::st(act_one(v.ld(), a));
        }
    });
}

/// `dx = g * act'(x)`.
pub fn act_backward<T: Store>(g: &[T], x: &[T], y: &[T], dx: &mut [T], a: Act) {
    let dp = SendPtr(dx.as_mut_ptr());
    par_for(x.len(), GRAIN, |s, e| {
        // SAFETY: disjoint ranges of dx.
        let dx = unsafe { std::slice::from_raw_parts_mut(dp.get().add(s), e - s) };
        if a == Act::Relu {
            for ((d, gv), yv) in dx.iter_mut().zip(&g[s..e]).zip(&y[s..e]) {
                *d = T::st(gv.ld() * act_deriv(T::R::ZERO, yv.ld(), Act::Relu));
            }
            return;
        }
        for i in s..e {
            dx[i - s] = T::st(g[i].ld() * act_deriv(x[i].ld(), y[i].ld(), a));
        }
    });
}

/// PReLU over `(outer, c, inner)`: `y = x > 0 ? x : gamma[ch] * x`, `gamma` of
/// length `c` or 1.
pub fn prelu_forward<T: Store>(x: &[T], gamma: &[T], y: &mut [T], c: usize, inner: usize) {
    let yp = SendPtr(y.as_mut_ptr());
    let one = gamma.len() == 1;
    par_for(x.len(), GRAIN, |s, e| {
        // SAFETY: disjoint ranges of y.
        let y = unsafe { std::slice::from_raw_parts_mut(yp.get().add(s), e - s) };
        for i in s..e {
            let v = x[i].ld();
            let gm = gamma[if one { 0 } else { (i / inner) % c }].ld();
            y[i - s] = T::st(if v > <T::R as Real>::ZERO { v } else { gm * v });
        }
    });
}

/// PReLU gradients: `dx = g * (x > 0 ? 1 : gamma)`, `dgamma[ch] = sum g * min(x, 0)`.
pub fn prelu_backward<T: Store>(g: &[T], x: &[T], gamma: &[T], dx: &mut [T], dgamma: &mut [T], c: usize, inner: usize) {
    let one = gamma.len() == 1;
    let outer = if c * inner == 0 { 0 } else { x.len() / (c * inner) };
    let dp = SendPtr(dx.as_mut_ptr());
    let sums: Vec<f64> = crate::engine::install(|| {
        (0..c)
            .into_par_iter()
            .with_min_len(((1 << 14) / (outer * inner).max(1)).max(1))
            .map(|ch| {
                let gm = gamma[if one { 0 } else { ch }].ld();
                let mut acc = 0.0f64;
                for o in 0..outer {
                    let base = (o * c + ch) * inner;
                    for i in base..base + inner {
                        let v = x[i].ld();
                        let gi = g[i].ld();
                        let d = if v > <T::R as Real>::ZERO {
                            gi
                        } else {
                            acc += (gi * v).f();
                            gi * gm
                        };
                        // SAFETY: each (o, ch) block of dx is written by one task.
                        unsafe { *dp.get().add(i) = T::st(d) };
                    }
                }
                acc
            })
            .collect()
    });
    if one {
        dgamma[0] = T::st(<T::R as Real>::c(sums.iter().sum()));
    } else {
        for (d, s) in dgamma.iter_mut().zip(sums) {
            *d = T::st(<T::R as Real>::c(s));
        }
    }
}

/// RReLU: `y = x > 0 ? x : mask * x`; in training the mask holds one slope per
/// element drawn uniformly from `[lower, upper)`, else the mean slope.
pub fn rrelu_forward<T: Store>(x: &[T], y: &mut [T], mask: &mut [T], slope: impl Fn(usize) -> f64 + Sync) {
    let yp = SendPtr(y.as_mut_ptr());
    let mp = SendPtr(mask.as_mut_ptr());
    par_for(x.len(), GRAIN, |s, e| {
        for i in s..e {
            let a = <T::R as Real>::c(slope(i));
            let v = x[i].ld();
            // SAFETY: disjoint ranges of y and mask.
            unsafe {
                *mp.get().add(i) = T::st(a);
                *yp.get().add(i) = T::st(if v > <T::R as Real>::ZERO { v } else { a * v });
            }
        }
    });
}

/// RReLU gradient: `dx = g * (x > 0 ? 1 : mask)`.
pub fn rrelu_backward<T: Store>(g: &[T], x: &[T], mask: &[T], dx: &mut [T]) {
    let dp = SendPtr(dx.as_mut_ptr());
    par_for(x.len(), GRAIN, |s, e| {
        for i in s..e {
            let d = if x[i].ld() > <T::R as Real>::ZERO { g[i].ld() } else { g[i].ld() * mask[i].ld() };
            // SAFETY: disjoint ranges of dx.
            unsafe { *dp.get().add(i) = T::st(d) };
        }
    });
}

// ---- per-channel sums over (outer, c, inner) -------------------------------------

/// Per-channel sums of an `(outer, c, inner)` array: `f(ch, start, end)` returns the
/// two sums over the flat range `start .. end`, which lies in one `(o, ch)` row; the
/// rows' results are added in float64.
pub fn channel_sums2(outer: usize, c: usize, inner: usize, f: impl Fn(usize, usize, usize) -> (f64, f64) + Sync) -> Vec<(f64, f64)> {
    if c == 0 {
        return Vec::new();
    }
    let per_ch = outer * inner;
    if inner >= 32 || outer < 64 {
        crate::engine::install(|| {
            (0..c)
                .into_par_iter()
                .with_min_len(((1 << 14) / per_ch.max(1)).max(1))
                .map(|ch| {
                    let (mut a, mut b) = (0.0f64, 0.0f64);
                    for o in 0..outer {
                        let base = (o * c + ch) * inner;
                        let (u, v) = f(ch, base, base + inner);
                        a += u;
                        b += v;
                    }
                    (a, b)
                })
                .collect()
        })
    } else {
        let rows_per = ((1 << 14) / (c * inner).max(1)).max(1);
        crate::engine::install(|| {
            (0..outer)
                .into_par_iter()
                .with_min_len(rows_per)
                .fold(
                    || vec![(0.0f64, 0.0f64); c],
                    |mut acc, o| {
                        for ch in 0..c {
                            let base = (o * c + ch) * inner;
                            let (u, v) = f(ch, base, base + inner);
                            acc[ch].0 += u;
                            acc[ch].1 += v;
                        }
                        acc
                    },
                )
                .reduce(
                    || vec![(0.0f64, 0.0f64); c],
                    |mut a, b| {
                        for (x, y) in a.iter_mut().zip(b) {
                            x.0 += y.0;
                            x.1 += y.1;
                        }
                        a
                    },
                )
        })
    }
}

/// `Σ_k (u(k), v(k))` for `k < n`: the terms in `R`, added into 16 lanes over blocks
/// of 256 (independent chains the compiler vectorises), each block's lanes then
/// added into the float64 totals.
#[inline(always)]
fn lane_sums<R: Real>(n: usize, f: impl Fn(usize) -> (R, R)) -> (f64, f64) {
    let (mut ta, mut tb) = (0.0f64, 0.0f64);
    let mut k = 0;
    while k < n {
        let end = (k + 256).min(n);
        let (mut a, mut b) = ([R::ZERO; 16], [R::ZERO; 16]);
        let mut j = k;
        while j + 16 <= end {
            for l in 0..16 {
                let (u, v) = f(j + l);
                a[l] = a[l] + u;
                b[l] = b[l] + v;
            }
            j += 16;
        }
        for l in 0..16 {
            ta += a[l].f();
            tb += b[l].f();
        }
        for jj in j..end {
            let (u, v) = f(jj);
            ta += u.f();
            tb += v.f();
        }
        k = end;
    }
    (ta, tb)
}

/// Runs `f(ch, start, end)` over the flat range of an `(outer, c, inner)` array of
/// `len` elements, in parallel; each call's range lies in one `(o, ch)` row.
fn channel_rows(len: usize, c: usize, inner: usize, f: impl Fn(usize, usize, usize) + Sync) {
    if inner == 0 || c == 0 {
        return;
    }
    par_for(len, GRAIN, |s, e| {
        let mut i = s;
        while i < e {
            let row = i / inner;
            let end = ((row + 1) * inner).min(e);
            f(row % c, i, end);
            i = end;
        }
    });
}

/// `y[i] = f(i, ch)` over a `(outer, c, inner)` array, in parallel.
pub fn channel_map<T: Store>(y: &mut [T], c: usize, inner: usize, f: impl Fn(usize, usize) -> T::R + Sync) {
    let yp = SendPtr(y.as_mut_ptr());
    channel_rows(y.len(), c, inner, |ch, s, e| {
        for i in s..e {
            // SAFETY: disjoint ranges of y.
            unsafe { *yp.get().add(i) = T::st(f(i, ch)) };
        }
    });
}

/// `y[s..e] = f(x[s..e])` row by row of an `(outer, c, inner)` array, `f` given the
/// channel and `s`: the row's slices, so that its loop vectorises.
fn channel_rows_map<T: Store>(x: &[T], y: &mut [T], c: usize, inner: usize, f: impl Fn(usize, usize, &[T], &mut [T]) + Sync) {
    assert_eq!(x.len(), y.len());
    let yp = SendPtr(y.as_mut_ptr());
    channel_rows(y.len(), c, inner, |ch, s, e| {
        // SAFETY: disjoint ranges of y, within its length.
        let ys = unsafe { std::slice::from_raw_parts_mut(yp.get().add(s), e - s) };
        f(ch, s, &x[s..e], ys);
    });
}

// ---- batch normalisation ------------------------------------------------------------

/// `s` as float32 when `T` is.
fn f32s<T: 'static>(s: &[T]) -> Option<&[f32]> {
    // SAFETY: T is f32.
    (std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>()).then(|| unsafe { std::slice::from_raw_parts(s.as_ptr() as *const f32, s.len()) })
}

fn f32s_mut<T: 'static>(s: &mut [T]) -> Option<&mut [f32]> {
    if std::any::TypeId::of::<T>() != std::any::TypeId::of::<f32>() {
        return None;
    }
    // SAFETY: T is f32.
    Some(unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut f32, s.len()) })
}

isa_dispatch! {
    /// A row's float32 batch-norm sums, as [`lane_sums`] adds them: with `g`
    /// empty, `Σ x` (or `Σ (x - m)²` when `sq`); else `(Σ g, Σ g · (x - m))`.
    pub fn sums_f32(g: &[f32], x: &[f32], m: f32, sq: bool) -> (f64, f64) => sums_f32_impl,
    check x.is_empty() || g.is_empty() || g.len() == x.len()
}

#[inline(always)]
fn sums_f32_impl(g: &[f32], x: &[f32], m: f32, sq: bool) -> (f64, f64) {
    if x.is_empty() {
        // (The first form: the row is in g.)
        return if sq {
            lane_sums(g.len(), |k| {
                let d = g[k] - m;
                (d * d, 0.0)
            })
        } else {
            lane_sums(g.len(), |k| (g[k], 0.0))
        };
    }
    let x = &x[..g.len()];
    lane_sums(g.len(), |k| (g[k], g[k] * (x[k] - m)))
}

isa_dispatch! {
    /// A row of the float32 batch-norm maps: with `g` empty, the forward
    /// `y = (x - c[0]) · c[1] + c[2]`; else the gradient
    /// `y = c[3] · g + c[1] · (x - c[0]) + c[2]`. The generic loops' arithmetic.
    pub fn bn_row_f32(x: &[f32], g: &[f32], y: &mut [f32], c: [f32; 4]) => bn_row_f32_impl,
    check x.len() == y.len() && (g.is_empty() || g.len() == y.len())
}

#[inline(always)]
fn bn_row_f32_impl(x: &[f32], g: &[f32], y: &mut [f32], c: [f32; 4]) {
    if g.is_empty() {
        for (o, v) in y.iter_mut().zip(x) {
            *o = (*v - c[0]) * c[1] + c[2];
        }
    } else {
        for ((o, v), gi) in y.iter_mut().zip(x).zip(g) {
            *o = c[3] * *gi + c[1] * (*v - c[0]) + c[2];
        }
    }
}

/// Batch mean and biased variance per channel (two passes: the mean, then the
/// squared deviations from it; each row summed in `T`'s precision over blocks of
/// 256, the blocks in float64).
pub fn bn_stats<T: Store>(x: &[T], outer: usize, c: usize, inner: usize) -> (Vec<f64>, Vec<f64>) {
    let n = (outer * inner).max(1) as f64;
    let s = channel_sums2(outer, c, inner, |_, s, e| {
        if let Some(xs) = f32s(&x[s..e]) {
            return sums_f32(xs, &[], 0.0, false);
        }
        let xs = &x[s..e];
        lane_sums(xs.len(), |k| (xs[k].ld(), T::R::ZERO))
    });
    let mean: Vec<f64> = s.iter().map(|p| p.0 / n).collect();
    let s = channel_sums2(outer, c, inner, |ch, s, e| {
        if let Some(xs) = f32s(&x[s..e]) {
            return sums_f32(xs, &[], mean[ch] as f32, true);
        }
        let xs = &x[s..e];
        let m = T::R::c(mean[ch]);
        lane_sums(xs.len(), |k| {
            let d = xs[k].ld() - m;
            (d * d, T::R::ZERO)
        })
    });
    let var = s.iter().map(|p| p.0 / n).collect();
    (mean, var)
}

/// `y = (x - mean[ch]) * scale[ch] + shift[ch]`.
pub fn bn_apply<T: Store>(x: &[T], y: &mut [T], c: usize, inner: usize, mean: &[f64], scale: &[f64], shift: &[f64]) {
    let m: Vec<T::R> = mean.iter().map(|v| T::R::c(*v)).collect();
    let a: Vec<T::R> = scale.iter().map(|v| T::R::c(*v)).collect();
    let b: Vec<T::R> = shift.iter().map(|v| T::R::c(*v)).collect();
    channel_rows_map(x, y, c, inner, |ch, _, xs, ys| {
        if let (Some(xf), Some(yf)) = (f32s(xs), f32s_mut(ys)) {
            return bn_row_f32(xf, &[], yf, [mean[ch] as f32, scale[ch] as f32, shift[ch] as f32, 0.0]);
        }
        let (m, a, b) = (m[ch], a[ch], b[ch]);
        for (o, v) in ys.iter_mut().zip(xs) {
            *o = T::st((v.ld() - m) * a + b);
        }
    });
}

/// Batch-norm gradients. `batch`: the statistics were the batch's (their gradient
/// flows to x); else they were constants. Returns per-channel `(sum g, sum g*xhat)`
/// and writes `dx`. (Per-element arithmetic in `T`'s precision, sums as in
/// [`bn_stats`].)
#[allow(clippy::too_many_arguments)]
pub fn bn_backward<T: Store>(
    g: &[T],
    x: &[T],
    dx: &mut [T],
    outer: usize,
    c: usize,
    inner: usize,
    mean: &[f64],
    invstd: &[f64],
    gamma: &[f64],
    batch: bool,
) -> Vec<(f64, f64)> {
    assert_eq!(g.len(), x.len());
    let sums = channel_sums2(outer, c, inner, |ch, s, e| {
        let (gs, xs) = (&g[s..e], &x[s..e]);
        if let (Some(gf), Some(xf)) = (f32s(gs), f32s(xs)) {
            let (sg, sgx) = sums_f32(gf, xf, mean[ch] as f32, false);
            return (sg, sgx * invstd[ch]);
        }
        let m = T::R::c(mean[ch]);
        let (sg, sgx) = lane_sums(gs.len(), |k| {
            let gi = gs[k].ld();
            (gi, gi * (xs[k].ld() - m))
        });
        (sg, sgx * invstd[ch])
    });
    let n = (outer * inner).max(1) as f64;
    let k1: Vec<f64> = (0..c).map(|ch| gamma[ch] * invstd[ch]).collect();
    if batch {
        // dx = k1 · (g - mean(g) - xhat · mean(g · xhat)), xhat = (x - mean) · invstd:
        // per channel, dx = a·g + b·(x - mean) + c.
        let coef: Vec<(T::R, T::R, T::R, T::R)> = (0..c)
            .map(|ch| {
                let (mg, mgx) = (sums[ch].0 / n, sums[ch].1 / n);
                let r = T::R::c;
                (r(k1[ch]), r(-k1[ch] * invstd[ch] * mgx), r(-k1[ch] * mg), r(mean[ch]))
            })
            .collect();
        channel_rows_map(x, dx, c, inner, |ch, s, xs, ds| {
            let (a, b, cc, m) = coef[ch];
            let gs = &g[s..s + xs.len()];
            if let (Some(gf), Some(xf), Some(df)) = (f32s(gs), f32s(xs), f32s_mut(ds)) {
                let r = |v: T::R| v.f() as f32;
                return bn_row_f32(xf, gf, df, [r(m), r(b), r(cc), r(a)]);
            }
            for ((o, v), gi) in ds.iter_mut().zip(xs).zip(gs) {
                *o = T::st(a * gi.ld() + b * (v.ld() - m) + cc);
            }
        });
    } else {
        let k: Vec<T::R> = k1.iter().map(|v| T::R::c(*v)).collect();
        channel_rows_map(g, dx, c, inner, |ch, _, gs, ds| {
            let k = k[ch];
            for (o, gi) in ds.iter_mut().zip(gs) {
                *o = T::st(gi.ld() * k);
            }
        });
    }
    sums
}

// ---- layer / instance normalisation --------------------------------------------------

/// Normalises along the middle axis of `(outer, n, inner)`: for each `(o, j)`,
/// `y = (x - mean) / std * gamma[k] + beta[k]` with `std = sqrt(var + eps)`; writes
/// the mean and std of each `(o, j)` (shape `(outer, inner)`).
#[allow(clippy::too_many_arguments)]
pub fn layer_norm<T: Store>(
    x: &[T],
    gamma: &[T],
    beta: &[T],
    y: &mut [T],
    mean: &mut [T],
    std: &mut [T],
    _outer: usize,
    n: usize,
    inner: usize,
    eps: f64,
) {
    let block = n * inner;
    if block == 0 {
        return;
    }
    let rows = ((1 << 14) / block).max(1);
    crate::engine::install(|| {
        y.par_chunks_mut(block).zip(mean.par_chunks_mut(inner).zip(std.par_chunks_mut(inner))).enumerate().with_min_len(rows).for_each(
            |(o, (yb, (mb, sb)))| {
                let xb = &x[o * block..(o + 1) * block];
                let mut s = vec![0.0f64; inner];
                for k in 0..n {
                    for (acc, v) in s.iter_mut().zip(&xb[k * inner..(k + 1) * inner]) {
                        *acc += v.ld().f();
                    }
                }
                for v in s.iter_mut() {
                    *v /= n as f64;
                }
                let mut q = vec![0.0f64; inner];
                for k in 0..n {
                    for ((acc, v), m) in q.iter_mut().zip(&xb[k * inner..(k + 1) * inner]).zip(&s) {
                        let d = v.ld().f() - m;
                        *acc += d * d;
                    }
                }
                let inv: Vec<T::R> = q.iter().map(|v| T::R::c(1.0 / (v / n as f64 + eps).sqrt())).collect();
                let mr: Vec<T::R> = s.iter().map(|v| T::R::c(*v)).collect();
                for k in 0..n {
                    let (gk, bk) = (gamma[k].ld(), beta[k].ld());
                    let xs = &xb[k * inner..(k + 1) * inner];
                    let ys = &mut yb[k * inner..(k + 1) * inner];
                    for j in 0..inner {
                        ys[j] = T::st((xs[j].ld() - mr[j]) * inv[j] * gk + bk);
                    }
                }
                for j in 0..inner {
                    mb[j] = T::st(mr[j]);
                    sb[j] = T::st(T::R::c((q[j] / n as f64 + eps).sqrt()));
                }
            },
        )
    });
}

/// Layer-norm gradients along the middle axis of `(outer, n, inner)`: writes `dx`,
/// returns `(dgamma, dbeta)` (length `n`).
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_backward<T: Store>(
    g: &[T],
    x: &[T],
    gamma: &[T],
    mean: &[T],
    std: &[T],
    dx: &mut [T],
    _outer: usize,
    n: usize,
    inner: usize,
) -> (Vec<f64>, Vec<f64>) {
    let block = n * inner;
    if block == 0 {
        return (vec![0.0; n], vec![0.0; n]);
    }
    let rows = ((1 << 14) / block).max(1);
    let nf = n as f64;
    crate::engine::install(|| {
        dx.par_chunks_mut(block)
            .enumerate()
            .with_min_len(rows)
            .fold(
                || (vec![0.0f64; n], vec![0.0f64; n]),
                |(mut dg, mut db), (o, dxb)| {
                    let xb = &x[o * block..(o + 1) * block];
                    let gb = &g[o * block..(o + 1) * block];
                    let m: Vec<f64> = mean[o * inner..(o + 1) * inner].iter().map(|v| v.ld().f()).collect();
                    let inv: Vec<f64> = std[o * inner..(o + 1) * inner].iter().map(|v| 1.0 / v.ld().f()).collect();
                    // Per position j: mean of g*gamma and of g*gamma*xhat over k.
                    let mut a = vec![0.0f64; inner];
                    let mut b = vec![0.0f64; inner];
                    for k in 0..n {
                        let gk = gamma[k].ld().f();
                        let (mut sg, mut sgx) = (0.0, 0.0);
                        for j in 0..inner {
                            let gi = gb[k * inner + j].ld().f();
                            let xh = (xb[k * inner + j].ld().f() - m[j]) * inv[j];
                            a[j] += gi * gk;
                            b[j] += gi * gk * xh;
                            sg += gi;
                            sgx += gi * xh;
                        }
                        db[k] += sg;
                        dg[k] += sgx;
                    }
                    for k in 0..n {
                        let gk = gamma[k].ld().f();
                        for j in 0..inner {
                            let i = k * inner + j;
                            let xh = (xb[i].ld().f() - m[j]) * inv[j];
                            let v = (gb[i].ld().f() * gk - a[j] / nf - xh * b[j] / nf) * inv[j];
                            dxb[i] = T::st(T::R::c(v));
                        }
                    }
                    (dg, db)
                },
            )
            .reduce(
                || (vec![0.0f64; n], vec![0.0f64; n]),
                |(mut g1, mut b1), (g2, b2)| {
                    for k in 0..n {
                        g1[k] += g2[k];
                        b1[k] += b2[k];
                    }
                    (g1, b1)
                },
            )
    })
}

/// Instance norm: rows of length `len` (one per (batch, channel)), channel
/// `row % c`. Writes y and each row's mean and inverse std.
#[allow(clippy::too_many_arguments)]
pub fn instance_norm<T: Store>(
    x: &[T],
    gamma: &[T],
    beta: &[T],
    y: &mut [T],
    mean: &mut [T],
    invstd: &mut [T],
    c: usize,
    len: usize,
    eps: f64,
) {
    if len == 0 {
        return;
    }
    let rows = ((1 << 14) / len).max(1);
    crate::engine::install(|| {
        y.par_chunks_mut(len).zip(mean.par_iter_mut().zip(invstd.par_iter_mut())).enumerate().with_min_len(rows).for_each(
            |(r, (yr, (m, s)))| {
                let xr = &x[r * len..(r + 1) * len];
                let mu = xr.iter().map(|v| v.ld().f()).sum::<f64>() / len as f64;
                let var = xr
                    .iter()
                    .map(|v| {
                        let d = v.ld().f() - mu;
                        d * d
                    })
                    .sum::<f64>()
                    / len as f64;
                let inv = 1.0 / (var + eps).sqrt();
                let ch = r % c;
                let a = T::R::c(inv * gamma[ch].ld().f());
                let b = beta[ch].ld();
                let mr = T::R::c(mu);
                for (o, v) in yr.iter_mut().zip(xr) {
                    *o = T::st((v.ld() - mr) * a + b);
                }
                *m = T::st(mr);
                *s = T::st(T::R::c(inv));
            },
        )
    });
}

/// Instance-norm gradients: writes dx, returns per-channel `(dgamma, dbeta)`.
#[allow(clippy::too_many_arguments)]
pub fn instance_norm_backward<T: Store>(
    g: &[T],
    x: &[T],
    gamma: &[T],
    mean: &[T],
    invstd: &[T],
    dx: &mut [T],
    c: usize,
    len: usize,
) -> (Vec<f64>, Vec<f64>) {
    if len == 0 {
        return (vec![0.0; c], vec![0.0; c]);
    }
    let rows = ((1 << 14) / len).max(1);
    let parts: Vec<(usize, f64, f64)> = crate::engine::install(|| {
        dx.par_chunks_mut(len)
            .enumerate()
            .with_min_len(rows)
            .map(|(r, dr)| {
                let xr = &x[r * len..(r + 1) * len];
                let gr = &g[r * len..(r + 1) * len];
                let (mu, inv) = (mean[r].ld().f(), invstd[r].ld().f());
                let ch = r % c;
                let gm = gamma[ch].ld().f();
                let (mut sg, mut sgx) = (0.0, 0.0);
                for (gv, xv) in gr.iter().zip(xr) {
                    let gi = gv.ld().f();
                    sg += gi;
                    sgx += gi * (xv.ld().f() - mu) * inv;
                }
                let (mg, mgx) = (sg / len as f64, sgx / len as f64);
                for ((d, gv), xv) in dr.iter_mut().zip(gr).zip(xr) {
                    let xh = (xv.ld().f() - mu) * inv;
                    *d = T::st(T::R::c(gm * inv * (gv.ld().f() - mg - xh * mgx)));
                }
                (ch, sgx, sg)
            })
            .collect()
    });
    let mut dg = vec![0.0; c];
    let mut db = vec![0.0; c];
    for (ch, a, b) in parts {
        dg[ch] += a;
        db[ch] += b;
    }
    (dg, db)
}

// ---- dropout ------------------------------------------------------------------------

/// Fills the dropout mask (`1/(1-p)` where kept, 0 where dropped) and `y = x * mask`.
/// `draw(i)` is the uniform number deciding element `i` (elements sharing a mask
/// position along the broadcast axes get the same number). With `p = 1` every
/// element is dropped and the mask is `0 * (1/0)`, NaN, as MXNet 1.9.1 computes it.
pub fn dropout<T: Store>(x: &[T], y: &mut [T], mask: &mut [T], p: f64, draw: impl Fn(usize) -> f64 + Sync) {
    let scale = 1.0 / (1.0 - p);
    let yp = SendPtr(y.as_mut_ptr());
    let mp = SendPtr(mask.as_mut_ptr());
    let (keep, zero) = (<T::R as Real>::c(scale), <T::R as Real>::c(0.0 * scale));
    par_for(x.len(), GRAIN, |s, e| {
        for i in s..e {
            let m = if draw(i) >= p { keep } else { zero };
            // SAFETY: disjoint ranges of y and mask.
            unsafe {
                *mp.get().add(i) = T::st(m);
                *yp.get().add(i) = T::st(x[i].ld() * m);
            }
        }
    });
}

/// `y = a * b`, elementwise.
pub fn mul<T: Store>(a: &[T], b: &[T], y: &mut [T]) {
    let yp = SendPtr(y.as_mut_ptr());
    par_for(a.len(), GRAIN, |s, e| {
        for i in s..e {
            // SAFETY: disjoint ranges of y.
            unsafe { *yp.get().add(i) = T::st(a[i].ld() * b[i].ld()) };
        }
    });
}

// ---- embedding ----------------------------------------------------------------------

/// Row index of an embedding lookup: the value truncated toward zero and clipped
/// to `[0, rows)`, as MXNet does.
#[inline(always)]
pub fn clip_index(v: f64, rows: usize) -> usize {
    if v.is_nan() || v <= 0.0 {
        0
    } else {
        (v as usize).min(rows.saturating_sub(1))
    }
}

/// `out[i, :] = weight[idx[i], :]`.
pub fn embedding<T: Copy + Send + Sync>(idx: &[usize], weight: &[T], out: &mut [T], dim: usize) {
    if dim == 0 {
        return;
    }
    crate::engine::install(|| {
        out.par_chunks_mut(dim).with_min_len((GRAIN / dim).max(1)).enumerate().for_each(|(i, row)| {
            let r = idx[i];
            row.copy_from_slice(&weight[r * dim..(r + 1) * dim]);
        })
    });
}

/// `dw[r, :] = sum of g[i, :] over i with idx[i] == r`. Rows of dw are split among
/// tasks; each scans the indices for its rows (no atomics).
pub fn embedding_backward<T: Store>(idx: &[usize], g: &[T], dw: &mut [T], rows: usize, dim: usize) {
    if dim == 0 || rows == 0 {
        return;
    }
    let tasks = if idx.len() * dim < (1 << 15) { 1 } else { (crate::engine::threads() * 2).min(rows) };
    let per = rows.div_ceil(tasks.max(1));
    crate::engine::install(|| {
        dw.par_chunks_mut(per * dim).enumerate().for_each(|(t, part)| {
            let (lo, hi) = (t * per, ((t + 1) * per).min(rows));
            let mut acc = vec![0.0f64; (hi - lo) * dim];
            for (i, &r) in idx.iter().enumerate() {
                if r >= lo && r < hi {
                    let a = &mut acc[(r - lo) * dim..(r - lo + 1) * dim];
                    for (s, v) in a.iter_mut().zip(&g[i * dim..(i + 1) * dim]) {
                        *s += v.ld().f();
                    }
                }
            }
            for (o, v) in part.iter_mut().zip(acc) {
                *o = T::st(<T::R as Real>::c(v));
            }
        })
    });
}

// ---- softmax gradient -----------------------------------------------------------------

/// `dx = y * (g - sum_k g*y)` along the middle axis of `(outer, n, inner)`.
pub fn softmax_backward<T: Store>(g: &[T], y: &[T], dx: &mut [T], _outer: usize, n: usize, inner: usize) {
    let block = n * inner;
    if block == 0 {
        return;
    }
    crate::engine::install(|| {
        dx.par_chunks_mut(block).enumerate().with_min_len(((1 << 14) / block).max(1)).for_each(|(o, db)| {
            let gb = &g[o * block..(o + 1) * block];
            let yb = &y[o * block..(o + 1) * block];
            let mut s = vec![0.0f64; inner];
            for k in 0..n {
                for j in 0..inner {
                    s[j] += gb[k * inner + j].ld().f() * yb[k * inner + j].ld().f();
                }
            }
            for k in 0..n {
                for j in 0..inner {
                    let i = k * inner + j;
                    db[i] = T::st(T::R::c(yb[i].ld().f() * (gb[i].ld().f() - s[j])));
                }
            }
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, v) in [
            (0.0, 0.0),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.5, 0.999_593_047_982_555),
            (3.5, 0.999_999_256_901_627_7),
            (-1.0, -0.842_700_792_949_714_9),
        ] {
            assert!((erf(x) - v).abs() < 1e-13, "erf({x}) = {} != {v}", erf(x));
        }
    }

    #[test]
    fn channel_sums_both_paths_agree() {
        let (outer, c, inner) = (100, 3, 2);
        let x: Vec<f64> = (0..outer * c * inner).map(|i| (i as f64 * 0.37).sin()).collect();
        let a = channel_sums2(outer, c, inner, |_, s, e| x[s..e].iter().fold((0.0, 0.0), |t, v| (t.0 + v, t.1 + v * v)));
        let mut want = vec![(0.0, 0.0); c];
        for (i, v) in x.iter().enumerate() {
            let ch = (i / inner) % c;
            want[ch].0 += v;
            want[ch].1 += v * v;
        }
        for (p, q) in a.iter().zip(&want) {
            assert!((p.0 - q.0).abs() < 1e-9 && (p.1 - q.1).abs() < 1e-9);
        }
        let b = channel_sums2(2, c, 50, |_, s, e| (x[s..e].iter().sum(), 0.0));
        let mut w = vec![0.0; c];
        for (i, v) in x[..2 * c * 50].iter().enumerate() {
            w[(i / 50) % c] += v;
        }
        for (p, q) in b.iter().zip(&w) {
            assert!((p.0 - q).abs() < 1e-9);
        }
    }

    #[test]
    fn embedding_scatter_adds_repeats() {
        let idx = [1usize, 0, 1];
        let g = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let mut dw = [9.0f32; 6];
        embedding_backward(&idx, &g, &mut dw, 3, 2);
        assert_eq!(dw, [3.0, 4.0, 6.0, 8.0, 0.0, 0.0]);
    }
}
