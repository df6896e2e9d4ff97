//! Cholesky factorization and triangular solves for small dense matrices, stored
//! row-major and contiguous, one batch slice at a time: no allocation, no copy into
//! another layout, generic over float32 and float64 (each computed in its own type,
//! as LAPACK does). The inner loops run along contiguous rows (`axpy`, and dot
//! products with eight fixed accumulators), so the compiler vectorises them; on
//! x86_64 with AVX2 the same code is compiled a second time for 256-bit vectors and
//! picked at run time (the results are bit-identical: no FMA, same operation order).
//!
//! `op::linalg_la` uses these for matrices of order up to [`SMALL_N`]; larger ones
//! go to `faer`, whose blocked algorithms win there. This module knows nothing of
//! the engine or the ops: the caller splits the batch across threads.

use std::ops::{Add, Div, Mul, Sub};

/// Largest order handled here (larger matrices go to `faer`).
pub const SMALL_N: usize = 64;

/// float32 or float64.
pub trait LaFloat:
    Copy + Send + Sync + PartialOrd + 'static + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;
    fn sqrt(self) -> Self;
    fn from_f64(v: f64) -> Self;
}

impl LaFloat for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    #[inline(always)]
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl LaFloat for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    #[inline(always)]
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v
    }
}

/// `sum(a[i] * b[i])` over the shorter length, with eight partial sums.
#[inline(always)]
fn dot<T: LaFloat>(a: &[T], b: &[T]) -> T {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [T::ZERO; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] = acc[l] + x[l] * y[l];
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (x, y) in ra.iter().zip(rb) {
        s = s + *x * *y;
    }
    s
}

/// `y -= s * x`.
#[inline(always)]
fn axpy_sub<T: LaFloat>(y: &mut [T], s: T, x: &[T]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi = *yi - s * *xi;
    }
}

#[inline(always)]
fn div_all<T: LaFloat>(y: &mut [T], d: T) {
    for yi in y.iter_mut() {
        *yi = *yi / d;
    }
}

/// In place: the upper triangle of the `n × n` matrix `u` (the symmetric matrix's
/// upper triangle) becomes its Cholesky factor `U` (`S = U^T U`); the strict lower
/// triangle is set to zero and never read. Right-looking: each step updates the
/// trailing rows with `axpy`s along contiguous rows. False when the matrix is not
/// positive definite (a pivot is not > 0, NaN included).
#[inline(always)]
#[allow(clippy::neg_cmp_op_on_partial_ord)] // `!(d > 0)` is meant: NaN fails too
fn cholesky_upper<T: LaFloat>(u: &mut [T], n: usize) -> bool {
    for k in 0..n {
        let (head, tail) = u.split_at_mut((k + 1) * n);
        let row = &mut head[k * n..];
        let d = row[k];
        if !(d > T::ZERO) {
            return false;
        }
        let d = d.sqrt();
        row[k] = d;
        div_all(&mut row[k + 1..], d);
        for x in &mut row[..k] {
            *x = T::ZERO;
        }
        for (r, i) in tail.chunks_exact_mut(n).zip(k + 1..n) {
            axpy_sub(&mut r[i..], row[i], &row[i..]);
        }
    }
    true
}

/// One `potrf`: `out` gets the lower factor `L` of the symmetric matrix whose lower
/// triangle `a` holds (`lower`), or the upper factor `U = L^T` of the one whose upper
/// triangle it holds; the other triangle of `out` is zero.
#[inline(always)]
fn potrf_one<T: LaFloat>(a: &[T], out: &mut [T], n: usize, lower: bool) -> bool {
    for i in 0..n {
        if lower {
            for j in i..n {
                out[i * n + j] = a[j * n + i];
            }
        } else {
            out[i * n + i..(i + 1) * n].copy_from_slice(&a[i * n + i..(i + 1) * n]);
        }
    }
    if !cholesky_upper(out, n) {
        return false;
    }
    if lower {
        for i in 0..n {
            for j in i + 1..n {
                out[j * n + i] = out[i * n + j];
                out[i * n + j] = T::ZERO;
            }
        }
    }
    true
}

/// The shapes and flags of a `trsm`: `A` is `n × n`, `B` and the output `m × k`
/// (`n = m`, or `n = k` with `right`).
#[derive(Clone, Copy, Debug)]
pub struct Trsm {
    pub n: usize,
    pub m: usize,
    pub k: usize,
    /// `A` is the lower triangle (else the upper one); the other is not read.
    pub lower: bool,
    pub transpose: bool,
    pub right: bool,
}

/// One `trsm`: `out = alpha * op(A)^-1 * B`, or `alpha * B * op(A)^-1` with `right`,
/// where `A` is the `n × n` triangle of `a` (`lower` or upper; the other triangle is
/// not read), `op` transposes with `transpose`, and `B`/`out` are `m × k` (`n = m`,
/// or `n = k` with `right`).
#[inline(always)]
fn trsm_one<T: LaFloat>(a: &[T], b: &[T], out: &mut [T], s: Trsm, alpha: T) {
    let Trsm { n, m, k, lower, transpose, right } = s;
    for (o, x) in out[..m * k].iter_mut().zip(&b[..m * k]) {
        *o = alpha * *x;
    }
    // op(A)[i][j]
    let opa = |i: usize, j: usize| if transpose { a[j * n + i] } else { a[i * n + j] };
    if !right {
        // op(A) X = alpha B, one row of X at a time (the rows are contiguous).
        if lower != transpose {
            for i in 0..m {
                let (prev, cur) = out.split_at_mut(i * k);
                let row = &mut cur[..k];
                for j in 0..i {
                    axpy_sub(row, opa(i, j), &prev[j * k..j * k + k]);
                }
                div_all(row, opa(i, i));
            }
        } else {
            for i in (0..m).rev() {
                let (head, rest) = out.split_at_mut((i + 1) * k);
                let row = &mut head[i * k..];
                for j in i + 1..m {
                    axpy_sub(row, opa(i, j), &rest[(j - i - 1) * k..(j - i) * k]);
                }
                div_all(row, opa(i, i));
            }
        }
        return;
    }
    // X op(A) = alpha B, row by row: x op(A) = b.
    for row in out[..m * k].chunks_exact_mut(k) {
        if transpose {
            // x A^T = b  <=>  A x^T = b^T: dot products along the rows of A.
            if lower {
                for i in 0..k {
                    let s = row[i] - dot(&a[i * n..i * n + i], &row[..i]);
                    row[i] = s / a[i * n + i];
                }
            } else {
                for i in (0..k).rev() {
                    let s = row[i] - dot(&a[i * n + i + 1..i * n + n], &row[i + 1..]);
                    row[i] = s / a[i * n + i];
                }
            }
        } else if lower {
            // x A = b, A lower: x[j] = (b[j] - sum_{l>j} x[l] A[l][j]) / A[j][j], last first.
            for j in (0..k).rev() {
                let xj = row[j] / a[j * n + j];
                row[j] = xj;
                axpy_sub(&mut row[..j], xj, &a[j * n..j * n + j]);
            }
        } else {
            for j in 0..k {
                let xj = row[j] / a[j * n + j];
                row[j] = xj;
                axpy_sub(&mut row[j + 1..], xj, &a[j * n + j + 1..j * n + n]);
            }
        }
    }
}

#[inline(always)]
fn potrf_batch_any<T: LaFloat>(a: &[T], out: &mut [T], n: usize, lower: bool) -> Result<(), usize> {
    let nn = n * n;
    if nn == 0 {
        return Ok(());
    }
    for (i, (x, o)) in a.chunks_exact(nn).zip(out.chunks_exact_mut(nn)).enumerate() {
        if !potrf_one(x, o, n, lower) {
            return Err(i);
        }
    }
    Ok(())
}

#[inline(always)]
fn trsm_batch_any<T: LaFloat>(a: &[T], b: &[T], out: &mut [T], s: Trsm, alpha: T) {
    let (nn, mk) = (s.n * s.n, s.m * s.k);
    if mk == 0 {
        return;
    }
    for (i, (x, o)) in b.chunks_exact(mk).zip(out.chunks_exact_mut(mk)).enumerate() {
        trsm_one(&a[i * nn..(i + 1) * nn], x, o, s, alpha);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn potrf_batch_avx2<T: LaFloat>(a: &[T], out: &mut [T], n: usize, lower: bool) -> Result<(), usize> {
    potrf_batch_any(a, out, n, lower)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn trsm_batch_avx2<T: LaFloat>(a: &[T], b: &[T], out: &mut [T], s: Trsm, alpha: T) {
    trsm_batch_any(a, b, out, s, alpha)
}

#[inline]
fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Cholesky factors of the `n × n` matrices stacked in `a`, written to `out` (the
/// same layout); see `potrf_one` for `lower`. `Err(i)`: matrix `i` (counted from the
/// start of `a`) is not positive definite; the matrices before it are done, `a` is
/// untouched.
pub fn potrf_batch<T: LaFloat>(a: &[T], out: &mut [T], n: usize, lower: bool) -> Result<(), usize> {
    assert_eq!(a.len(), out.len(), "potrf_batch: input and output sizes differ");
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports AVX2.
        return unsafe { potrf_batch_avx2(a, out, n, lower) };
    }
    potrf_batch_any(a, out, n, lower)
}

/// Triangular solves for the stacks `a` (`n × n` each) and `b`/`out` (`m × k` each);
/// see [`Trsm`] and `trsm_one`.
pub fn trsm_batch<T: LaFloat>(a: &[T], b: &[T], out: &mut [T], s: Trsm, alpha: T) {
    assert_eq!(b.len(), out.len(), "trsm_batch: B and output sizes differ");
    assert_eq!(s.n, if s.right { s.k } else { s.m }, "trsm_batch: A's order does not match B");
    let count = b.len().checked_div(s.m * s.k).unwrap_or(0);
    assert!(a.len() >= count * s.n * s.n, "trsm_batch: too few matrices in A");
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports AVX2.
        return unsafe { trsm_batch_avx2(a, b, out, s, alpha) };
    }
    trsm_batch_any(a, b, out, s, alpha)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic values in [-1, 1).
    fn vals(len: usize, seed: u64) -> Vec<f64> {
        let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (0..len)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
            })
            .collect()
    }

    /// A symmetric positive definite `n × n` matrix: `R R^T + n I`.
    fn spd(n: usize, seed: u64) -> Vec<f64> {
        let r = vals(n * n, seed);
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                a[i * n + j] = (0..n).map(|l| r[i * n + l] * r[j * n + l]).sum::<f64>() + if i == j { n as f64 } else { 0.0 };
            }
        }
        a
    }

    fn matmul(a: &[f64], b: &[f64], m: usize, p: usize, k: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * k];
        for i in 0..m {
            for j in 0..k {
                c[i * k + j] = (0..p).map(|l| a[i * p + l] * b[l * k + j]).sum();
            }
        }
        c
    }

    fn transpose(a: &[f64], r: usize, c: usize) -> Vec<f64> {
        (0..c * r).map(|x| a[(x % r) * c + x / r]).collect()
    }

    /// Naive Cholesky (column by column, in f64) of the full symmetric matrix.
    fn naive_chol(a: &[f64], n: usize) -> Vec<f64> {
        let mut l = vec![0.0; n * n];
        for j in 0..n {
            let d = a[j * n + j] - (0..j).map(|p| l[j * n + p] * l[j * n + p]).sum::<f64>();
            l[j * n + j] = d.sqrt();
            for i in j + 1..n {
                l[i * n + j] = (a[i * n + j] - (0..j).map(|p| l[i * n + p] * l[j * n + p]).sum::<f64>()) / l[j * n + j];
            }
        }
        l
    }

    fn close(got: &[f64], want: &[f64], tol: f64, what: &str) {
        assert_eq!(got.len(), want.len(), "{what}");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{what}: element {i}: {g} vs {w}");
        }
    }

    fn cast<T: LaFloat>(v: &[f64]) -> Vec<T> {
        v.iter().map(|x| T::from_f64(*x)).collect()
    }

    fn back<T: LaFloat + Into<f64>>(v: &[T]) -> Vec<f64> {
        v.iter().map(|x| (*x).into()).collect()
    }

    fn potrf_cases<T: LaFloat + Into<f64>>(tol: f64) {
        for n in [0usize, 1, 2, 3, 7, 8, 9, 17, 32, 64] {
            let batch = 3;
            let full: Vec<Vec<f64>> = (0..batch).map(|b| spd(n, 10 + b as u64 + n as u64)).collect();
            for lower in [true, false] {
                // The triangle the op must not read holds garbage.
                let mut a = Vec::new();
                for m in &full {
                    let mut x = m.clone();
                    for i in 0..n {
                        for j in 0..n {
                            if (lower && j > i) || (!lower && j < i) {
                                x[i * n + j] = 1e3 + (i * n + j) as f64;
                            }
                        }
                    }
                    a.extend(x);
                }
                let a_t: Vec<T> = cast(&a);
                let mut out = vec![T::from_f64(-7.0); a.len()];
                potrf_batch(&a_t, &mut out, n, lower).unwrap();
                let got = back(&out);
                let mut want = Vec::new();
                for m in &full {
                    let l = naive_chol(m, n);
                    want.extend(if lower { l } else { transpose(&l, n, n) });
                }
                close(&got, &want, tol, &format!("potrf n={n} lower={lower} {}", std::any::type_name::<T>()));
            }
        }
    }

    #[test]
    fn potrf_matches_naive_f64() {
        potrf_cases::<f64>(1e-12);
    }

    #[test]
    fn potrf_matches_naive_f32() {
        potrf_cases::<f32>(2e-5);
    }

    #[test]
    fn potrf_reports_first_failing_matrix() {
        let n = 4;
        let mut a = spd(n, 1);
        a.extend(spd(n, 2));
        let mut bad = spd(n, 3);
        bad[2 * n + 2] = -50.0;
        a.extend(&bad);
        let mut nan = spd(n, 4);
        nan[0] = f64::NAN;
        a.extend(&nan);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let before = bits(&a);
        let mut out = vec![0.0; a.len()];
        assert_eq!(potrf_batch(&a, &mut out, n, true), Err(2));
        assert_eq!(bits(&a), before);
        assert_eq!(potrf_batch(&a[3 * n * n..], &mut out[..n * n], n, false), Err(0));
    }

    fn trsm_cases<T: LaFloat + Into<f64>>(tol: f64) {
        let batch = 2;
        for (m, k) in [(1usize, 1usize), (3, 5), (5, 3), (8, 8), (9, 17), (32, 32), (64, 5)] {
            for right in [false, true] {
                let n = if right { k } else { m };
                for lower in [true, false] {
                    for tr in [false, true] {
                        for alpha in [1.0, -2.5] {
                            let mut a = Vec::new();
                            let mut b = Vec::new();
                            let mut want = Vec::new();
                            for bi in 0..batch {
                                // A well-conditioned triangle (a diagonal that dominates); the other one is garbage.
                                let mut t = vals(n * n, 100 + bi as u64);
                                let mut clean = vec![0.0; n * n];
                                for i in 0..n {
                                    for j in 0..n {
                                        let inside = if lower { j <= i } else { j >= i };
                                        if i == j {
                                            t[i * n + j] = 1.0 + n as f64 / 2.0 + t[i * n + j].abs();
                                        }
                                        if inside {
                                            clean[i * n + j] = t[i * n + j] * if i == j { 1.0 } else { 0.5 };
                                            t[i * n + j] = clean[i * n + j];
                                        } else {
                                            t[i * n + j] = 1e3;
                                        }
                                    }
                                }
                                let opa = if tr { transpose(&clean, n, n) } else { clean.clone() };
                                // Pick X, form B = op(A) X / alpha (or X op(A) / alpha).
                                let x = vals(m * k, 200 + bi as u64);
                                let prod = if right { matmul(&x, &opa, m, k, k) } else { matmul(&opa, &x, m, m, k) };
                                b.extend(prod.iter().map(|v| v / alpha));
                                a.extend(t);
                                want.extend(x);
                            }
                            let (a_t, b_t): (Vec<T>, Vec<T>) = (cast(&a), cast(&b));
                            let mut out = vec![T::from_f64(9.0); b.len()];
                            trsm_batch(&a_t, &b_t, &mut out, Trsm { n, m, k, lower, transpose: tr, right }, T::from_f64(alpha));
                            let what = format!(
                                "trsm m={m} k={k} right={right} lower={lower} transpose={tr} alpha={alpha} {}",
                                std::any::type_name::<T>()
                            );
                            close(&back(&out), &want, tol, &what);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn trsm_matches_naive_f64() {
        trsm_cases::<f64>(1e-10);
    }

    #[test]
    fn trsm_matches_naive_f32() {
        trsm_cases::<f32>(1e-3);
    }

    #[test]
    fn dot_handles_every_remainder() {
        for len in 0..20 {
            let a = vals(len, 5);
            let b = vals(len, 6);
            let want: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - want).abs() < 1e-12, "len {len}");
        }
    }
}
