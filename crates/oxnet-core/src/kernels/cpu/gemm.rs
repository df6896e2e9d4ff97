//! Dense matrix multiply on the host: `C = alpha * op(A) * op(B) + beta * C` for
//! row-major matrices with arbitrary row strides, `op(X)` being `X` or `Xᵀ`.
//!
//! The products run on the `gemm` crate (see the measurements below).
//!
//! Every entry point takes raw pointers: the callers (the `linalg` ops) own the
//! buffers and the engine guarantees exclusive access to `C` while this runs.

use super::SendPtr;
use half::{bf16, f16};

/// The element types the GEMM supports: float32, float64, float16 (multiplied with
/// float32 accumulation) and bfloat16 (through float32).
pub trait GemmElem: Copy + Send + Sync + 'static {
    fn zero() -> Self;
    fn is_zero(self) -> bool;
    fn is_one(self) -> bool;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    /// The backend call. `c` is `m × n` with row stride `ldc`; `op(A)[i, p]` is at
    /// `a + i * rsa + p * csa`, `op(B)[p, j]` at `b + p * rsb + j * csb`. When
    /// `beta` is zero `C` is written without being read. `threads` > 1 lets the
    /// backend split the product across the rayon pool.
    ///
    /// # Safety
    /// All pointers must be valid for the extents the strides describe; `c` must
    /// not overlap `a` or `b`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn raw(
        m: usize,
        n: usize,
        k: usize,
        alpha: Self,
        a: *const Self,
        rsa: isize,
        csa: isize,
        b: *const Self,
        rsb: isize,
        csb: isize,
        beta: Self,
        c: *mut Self,
        ldc: usize,
        threads: usize,
    );
}

macro_rules! gemm_elem {
    ($t:ty, $zero:expr, $one:expr, $to:expr, $from:expr, $raw:path) => {
        impl GemmElem for $t {
            #[inline(always)]
            fn zero() -> Self {
                $zero
            }
            #[inline(always)]
            fn is_zero(self) -> bool {
                self == $zero
            }
            #[inline(always)]
            fn is_one(self) -> bool {
                self == $one
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                $from(v)
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                $to(self)
            }
            unsafe fn raw(
                m: usize,
                n: usize,
                k: usize,
                alpha: Self,
                a: *const Self,
                rsa: isize,
                csa: isize,
                b: *const Self,
                rsb: isize,
                csb: isize,
                beta: Self,
                c: *mut Self,
                ldc: usize,
                threads: usize,
            ) {
                $raw(m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, ldc, threads)
            }
        }
    };
}

/// The `gemm` crate's product for the types it supports.
#[allow(clippy::too_many_arguments)]
unsafe fn crate_raw<T: GemmElem + 'static>(
    m: usize,
    n: usize,
    k: usize,
    alpha: T,
    a: *const T,
    rsa: isize,
    csa: isize,
    b: *const T,
    rsb: isize,
    csb: isize,
    beta: T,
    c: *mut T,
    ldc: usize,
    threads: usize,
) {
    // The crate computes dst := alpha·dst + beta·lhs·rhs: its alpha is our beta.
    let par = if threads > 1 { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None };
    gemm::gemm(m, n, k, c, 1, ldc as isize, !beta.is_zero(), a, csa, rsa, b, csb, rsb, beta, alpha, false, false, false, par);
}

/// bfloat16 products (the `gemm` crate has no bfloat16): the operands are widened to
/// float32 (exact: bfloat16 is float32 with the low 16 mantissa bits dropped),
/// multiplied by the float32 kernel and rounded back to nearest-even once.
#[allow(clippy::too_many_arguments)]
unsafe fn bf16_raw(
    m: usize,
    n: usize,
    k: usize,
    alpha: bf16,
    a: *const bf16,
    rsa: isize,
    csa: isize,
    b: *const bf16,
    rsb: isize,
    csb: isize,
    beta: bf16,
    c: *mut bf16,
    ldc: usize,
    threads: usize,
) {
    // op(A) as a dense m×k and op(B) as a dense k×n float32 matrix.
    let mut a32 = vec![0f32; m * k];
    for i in 0..m {
        for p in 0..k {
            a32[i * k + p] = (*a.offset(i as isize * rsa + p as isize * csa)).to_f32();
        }
    }
    let mut b32 = vec![0f32; k * n];
    for p in 0..k {
        for j in 0..n {
            b32[p * n + j] = (*b.offset(p as isize * rsb + j as isize * csb)).to_f32();
        }
    }
    let mut c32 = vec![0f32; m * n];
    if !beta.is_zero() {
        for i in 0..m {
            for j in 0..n {
                c32[i * n + j] = (*c.add(i * ldc + j)).to_f32();
            }
        }
    }
    crate_raw::<f32>(m, n, k, alpha.to_f32(), a32.as_ptr(), k as isize, 1, b32.as_ptr(), n as isize, 1, beta.to_f32(), c32.as_mut_ptr(), n, threads);
    for i in 0..m {
        for j in 0..n {
            *c.add(i * ldc + j) = bf16::from_f32(c32[i * n + j]);
        }
    }
}

gemm_elem!(f32, 0.0f32, 1.0f32, |x: f32| x as f64, |v: f64| v as f32, crate_raw);
gemm_elem!(f64, 0.0f64, 1.0f64, |x: f64| x, |v: f64| v, crate_raw);
gemm_elem!(f16, f16::ZERO, f16::ONE, |x: f16| x.to_f64(), f16::from_f64, crate_raw);
gemm_elem!(bf16, bf16::ZERO, bf16::ONE, |x: bf16| x.to_f64(), crate::dtype::bf16_from_f64, bf16_raw);

/// Per-matrix work (multiply-adds) below which a matrix is multiplied on one
/// thread; batches of such matrices are split across the pool instead.
const PAR_MNK: usize = 96 * 96 * 96;

fn strides(ld: usize, trans: bool) -> (isize, isize) {
    if trans {
        (1, ld as isize)
    } else {
        (ld as isize, 1)
    }
}

/// `C[m×n] = alpha * op(A)[m×k] * op(B)[k×n] + beta * C`, multi-threaded on the
/// rayon pool when the product is large enough.
///
/// The matrices are row-major as stored: `A` is `m × k` (or `k × m` when
/// `trans_a`) with consecutive rows `lda` elements apart, `B` is `k × n` (or
/// `n × k` when `trans_b`) with row stride `ldb`, and `C` is `m × n` with row
/// stride `ldc`. With `beta == 0` the old contents of `C` are never read (NaNs
/// or uninitialised memory there do not leak into the result); with `k == 0`
/// the product is zero and `C` becomes `beta * C`.
///
/// # Safety
/// `a`, `b` and `c` must be valid for the extents described; `c` must not
/// overlap `a` or `b`; nothing else may access `c` meanwhile.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm<T: GemmElem>(
    m: usize,
    n: usize,
    k: usize,
    alpha: T,
    a: *const T,
    lda: usize,
    trans_a: bool,
    b: *const T,
    ldb: usize,
    trans_b: bool,
    beta: T,
    c: *mut T,
    ldc: usize,
) {
    let threads = if m.saturating_mul(n).saturating_mul(k) >= PAR_MNK { crate::engine::threads() } else { 1 };
    gemm_threads(m, n, k, alpha, a, lda, trans_a, b, ldb, trans_b, beta, c, ldc, threads)
}

/// [`gemm`] on an explicit number of threads (1: on the calling thread, for
/// callers that split the work themselves).
///
/// # Safety
/// As for [`gemm`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_threads<T: GemmElem>(
    m: usize,
    n: usize,
    k: usize,
    alpha: T,
    a: *const T,
    lda: usize,
    trans_a: bool,
    b: *const T,
    ldb: usize,
    trans_b: bool,
    beta: T,
    c: *mut T,
    ldc: usize,
    threads: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 || alpha.is_zero() {
        scale_rows(m, n, beta, c, ldc);
        return;
    }
    let (rsa, csa) = strides(lda, trans_a);
    let (rsb, csb) = strides(ldb, trans_b);
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>() {
        // T is f32: the casts change nothing.
        let (al, be) = (alpha.to_f64() as f32, beta.to_f64() as f32);
        let (af, bf, cf) = (a as *const f32, b as *const f32, c as *mut f32);
        if n == 1 && csa == 1 {
            // A matrix-vector product: row i of A (contiguous) · the column of B.
            return gemv_rows(m, k, al, af, rsa as usize, bf, rsb as usize, be, cf, ldc, threads);
        }
        if m == 1 && rsb == 1 {
            // A vector-matrix product: the row of A · column j of B (contiguous).
            return gemv_rows(n, k, al, bf, csb as usize, af, csa as usize, be, cf, 1, threads);
        }
    }
    if threads <= 1 {
        T::raw(m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, ldc, 1);
        return;
    }
    // The gemm crate splits the product on the current rayon pool: run it inside
    // oxnet's compute pool (a direct call on a pool thread).
    let (pa, pb, pc) = (SendPtr(a as *mut T), SendPtr(b as *mut T), SendPtr(c));
    crate::engine::install(move || {
        // SAFETY: as guaranteed by the caller; the pointers only cross threads.
        unsafe { T::raw(m, n, k, alpha, pa.get(), rsa, csa, pb.get(), rsb, csb, beta, pc.get(), ldc, threads) }
    });
}

/// `y[i · incy] = alpha · (row i of A) · x + beta · y[i · incy]` for `i < rows`, rows
/// of `A` contiguous (`k` floats, `lda` apart), `x` `k` floats `incx` apart (`y` not
/// read when `beta == 0`). Matrix-vector products (a batch-1 `FullyConnected`, a
/// convolution on a 1×1 map) are bound by reading `A` once: the GEMM library's
/// packing of `A` for them doubled that. Rows split across `threads`; each dot
/// product in float32 over 64 lanes.
///
/// # Safety
/// The pointers must be valid for those extents; `y` must not overlap `a` or `x`.
#[allow(clippy::too_many_arguments)]
unsafe fn gemv_rows(rows: usize, k: usize, alpha: f32, a: *const f32, lda: usize, x: *const f32, incx: usize, beta: f32, y: *mut f32, incy: usize, threads: usize) {
    let gathered: Vec<f32>;
    let xs: &[f32] = if incx == 1 {
        std::slice::from_raw_parts(x, k)
    } else {
        gathered = (0..k).map(|p| *x.add(p * incx)).collect();
        &gathered
    };
    let (pa, py) = (SendPtr(a as *mut f32), SendPtr(y));
    let run = move |r0: usize, r1: usize| {
        for i in r0..r1 {
            // SAFETY: row i of A and output i, as the caller promised.
            unsafe {
                let d = dot_f32(std::slice::from_raw_parts(pa.get().add(i * lda), k), xs);
                let o = py.get().add(i * incy);
                *o = if beta == 0.0 { alpha * d } else { alpha * d + beta * *o };
            }
        }
    };
    let tasks = if rows.saturating_mul(k) >= 1 << 15 { threads.clamp(1, rows) } else { 1 };
    if tasks <= 1 {
        run(0, rows);
    } else {
        par_chunks(rows, rows.div_ceil(tasks), &run);
    }
}

isa_dispatch! {
    /// `Σ a[p] · b[p]` in float32, over 64 lanes summed pairwise at the end.
    pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 => dot_f32_impl,
    check a.len() == b.len()
}

#[inline(always)]
fn dot_f32_impl(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 64];
    let (ca, cb) = (a.chunks_exact(64), b.chunks_exact(64));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for ((s, &u), &v) in acc.iter_mut().zip(x).zip(y) {
            *s += u * v;
        }
    }
    for ((s, &u), &v) in acc.iter_mut().zip(ra).zip(rb) {
        *s += u * v;
    }
    let mut w = 64;
    while w > 1 {
        w /= 2;
        for i in 0..w {
            acc[i] += acc[i + w];
        }
    }
    acc[0]
}

/// `C = beta * C` (`C = 0` when `beta == 0`, without reading `C`).
unsafe fn scale_rows<T: GemmElem>(m: usize, n: usize, beta: T, c: *mut T, ldc: usize) {
    for i in 0..m {
        let row = c.add(i * ldc);
        for j in 0..n {
            let p = row.add(j);
            *p = if beta.is_zero() { T::zero() } else { T::from_f64((*p).to_f64() * beta.to_f64()) };
        }
    }
}

/// `batch` independent products `C_i = alpha * op(A_i) * op(B_i) + beta * C_i`
/// with the same shapes and row strides as [`gemm`]; `offsets(i)` gives the
/// element offsets of `A_i`, `B_i` and `C_i` from `a`, `b` and `c`. Large
/// matrices are multiplied one after the other, each split across the pool;
/// batches of small ones are split across the pool, one matrix per task.
///
/// # Safety
/// As for [`gemm`], for every matrix of the batch; the `C_i` must not overlap
/// each other.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_batched<T: GemmElem, F: Fn(usize) -> [usize; 3] + Sync>(
    batch: usize,
    m: usize,
    n: usize,
    k: usize,
    alpha: T,
    a: *const T,
    lda: usize,
    trans_a: bool,
    b: *const T,
    ldb: usize,
    trans_b: bool,
    beta: T,
    c: *mut T,
    ldc: usize,
    offsets: F,
) {
    let mnk = m.saturating_mul(n).saturating_mul(k.max(1));
    let threads = crate::engine::threads();
    if batch <= 1 || mnk >= PAR_MNK && batch < 2 * threads {
        for i in 0..batch {
            let [oa, ob, oc] = offsets(i);
            gemm(m, n, k, alpha, a.add(oa), lda, trans_a, b.add(ob), ldb, trans_b, beta, c.add(oc), ldc);
        }
        return;
    }
    let (pa, pb, pc) = (SendPtr(a as *mut T), SendPtr(b as *mut T), SendPtr(c));
    // Tasks of at least ~PAR_MNK/4 multiply-adds each, so tiny matrices are grouped.
    let grain = (PAR_MNK / 4 / mnk).max(1);
    let run = |s: usize, e: usize| {
        for i in s..e {
            let [oa, ob, oc] = offsets(i);
            // SAFETY: the caller guarantees each matrix of the batch is valid and the
            // outputs are disjoint, so tasks write disjoint memory.
            unsafe {
                gemm_threads(m, n, k, alpha, pa.get().add(oa), lda, trans_a, pb.get().add(ob), ldb, trans_b, beta, pc.get().add(oc), ldc, 1)
            };
        }
    };
    if batch.saturating_mul(mnk) < PAR_MNK {
        run(0, batch);
    } else {
        par_chunks(batch, grain, &run);
    }
}

/// Splits `0..n` into chunks of at least `grain` across the pool (unlike
/// `par_for`, without a minimum total size: the caller has checked the work).
fn par_chunks(n: usize, grain: usize, f: &(dyn Fn(usize, usize) + Sync)) {
    let threads = crate::engine::threads().max(1);
    let chunks = (threads * 4).min(n.div_ceil(grain)).max(1);
    if chunks == 1 {
        f(0, n);
        return;
    }
    let size = n.div_ceil(chunks);
    crate::engine::install(|| {
        rayon::scope(|s| {
            for ch in 0..chunks {
                let (start, end) = (ch * size, ((ch + 1) * size).min(n));
                if start < end {
                    s.spawn(move |_| f(start, end));
                }
            }
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::cpu::conv::tests::data_f32 as data;

    /// The float32 matrix-vector and vector-matrix products (the `gemv_rows` path:
    /// `n == 1` with A's rows contiguous, `m == 1` with B's columns contiguous),
    /// with row strides wider than the rows, transposed operands, alpha and beta,
    /// one and two threads, lengths around the 64 lanes, against float64.
    #[test]
    fn matrix_vector_products_match_float64() {
        for (m, n, k) in [(1000, 1, 1280), (1, 1000, 512), (7, 1, 63), (1, 5, 65), (3, 1, 1), (1, 1, 200)] {
            for (trans_a, trans_b) in [(false, false), (false, true), (true, false), (true, true)] {
                let (lda, ldb, ldc) = (if trans_a { m } else { k } + 3, if trans_b { k } else { n } + 2, n + 1);
                let a = data(if trans_a { k } else { m } * lda, 1);
                let b = data(if trans_b { n } else { k } * ldb, 2);
                let c0 = data(m * ldc, 3);
                let at = |i: usize, p: usize| if trans_a { a[p * lda + i] } else { a[i * lda + p] } as f64;
                let bt = |p: usize, j: usize| if trans_b { b[j * ldb + p] } else { b[p * ldb + j] } as f64;
                for (alpha, beta, threads) in [(1.0f32, 0.0f32, 1), (0.5, 2.0, 2), (-1.5, 1.0, 2)] {
                    let mut c = c0.clone();
                    unsafe {
                        gemm_threads(m, n, k, alpha, a.as_ptr(), lda, trans_a, b.as_ptr(), ldb, trans_b, beta, c.as_mut_ptr(), ldc, threads)
                    };
                    for i in 0..m {
                        for j in 0..n {
                            let (dot, mag): (f64, f64) = (0..k).map(|p| (at(i, p) * bt(p, j), (at(i, p) * bt(p, j)).abs())).fold((0.0, 0.0), |s, v| (s.0 + v.0, s.1 + v.1));
                            let want = alpha as f64 * dot + if beta == 0.0 { 0.0 } else { beta as f64 * c0[i * ldc + j] as f64 };
                            let got = c[i * ldc + j] as f64;
                            assert!((got - want).abs() <= 1e-5 * (mag + 1.0), "{m}x{n}x{k} {trans_a} {trans_b} ({i}, {j}): {got} vs {want}");
                        }
                        // Padding past the row untouched.
                        for j in n..ldc {
                            assert_eq!(c[i * ldc + j].to_bits(), c0[i * ldc + j].to_bits());
                        }
                    }
                }
            }
        }
    }
}
