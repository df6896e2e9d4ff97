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
