//! GEMM against a right-hand matrix packed once and reused: `C = A · B` (or
//! `C += A · B`) where the same `B` meets many skinny `A`s. The fused RNN op's
//! recurrence multiplies the `(N, P)` state by the same h2h weight at each of its T
//! steps; a general GEMM re-packs that weight at every call, which for N = 32 costs
//! about as much as the product.
//!
//! [`PackedB::pack`] lays `B` (`k × n`) out once as column panels of `NR` columns
//! (each panel `k × NR`, row-major, the last one zero-padded). [`gemm_packed`] runs an
//! `MR × NR` register-blocked micro-kernel (accumulators kept in registers over the
//! whole `k`) over every panel, splitting the panels across the compute pool. The
//! kernels are compiled for AVX-512 and AVX2+FMA, picked at run time, with a portable
//! fallback; the panel width is chosen at packing time for the CPU's vector width.

use super::gemm::GemmElem;
use super::{isa, Isa, SendPtr};
use std::ops::{Add, Mul};

/// The element types of the packed GEMM: float32 and float64 have SIMD kernels,
/// other types run the plain one.
pub trait PackElem: GemmElem + Add<Output = Self> + Mul<Output = Self> {}

impl PackElem for f32 {}
impl PackElem for f64 {}

/// Panel width (columns) for `isa` and an element of `size` bytes: two vectors.
fn panel_width(isa: Isa, size: usize) -> usize {
    let bytes = if isa == Isa::Avx512 { 64 } else { 32 };
    2 * bytes / size
}

/// Rows per micro-tile: enough accumulators to hide the FMA latency, few enough
/// to stay in registers (8 × 2 of AVX-512's 32, 6 × 2 of AVX2's 16).
fn tile_rows(isa: Isa) -> usize {
    match isa {
        Isa::Avx512 => 8,
        Isa::Avx2 => 6,
        Isa::Portable => 4,
    }
}

/// A `k × n` matrix packed in column panels for [`gemm_packed`].
pub struct PackedB<T> {
    buf: Vec<T>,
    k: usize,
    n: usize,
    nr: usize,
    isa: Isa,
}

impl<T: PackElem> PackedB<T> {
    /// Packs `op(B)` (`k × n`): `B[p, j]` is at `b + p * ldb + j`, or at
    /// `b + j * ldb + p` when `trans` (then `b` is an `n × k` row-major matrix, as
    /// an RNN weight `(G*H, P)` is for the product `h · Wᵀ`).
    ///
    /// # Safety
    /// `b` must be valid for the extent described.
    pub unsafe fn pack(k: usize, n: usize, b: *const T, ldb: usize, trans: bool) -> PackedB<T> {
        let simd =
            std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>() || std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>();
        Self::pack_for(if simd { isa() } else { Isa::Portable }, k, n, b, ldb, trans)
    }

    /// [`PackedB::pack`] for the kernel of `isa` (which the CPU must run).
    unsafe fn pack_for(isa: Isa, k: usize, n: usize, b: *const T, ldb: usize, trans: bool) -> PackedB<T> {
        let nr = panel_width(isa, std::mem::size_of::<T>());
        let panels = n.div_ceil(nr);
        let mut buf = vec![T::zero(); panels * k * nr];
        for (pi, dst) in buf.chunks_exact_mut((k * nr).max(1)).enumerate().take(panels) {
            let j0 = pi * nr;
            let w = nr.min(n - j0);
            if trans {
                for jj in 0..w {
                    let src = std::slice::from_raw_parts(b.add((j0 + jj) * ldb), k);
                    for (p, &v) in src.iter().enumerate() {
                        dst[p * nr + jj] = v;
                    }
                }
            } else {
                for p in 0..k {
                    let src = std::slice::from_raw_parts(b.add(p * ldb + j0), w);
                    dst[p * nr..p * nr + w].copy_from_slice(src);
                }
            }
        }
        PackedB { buf, k, n, nr, isa }
    }

    /// Rows of the packed matrix (the products' inner dimension).
    pub fn k(&self) -> usize {
        self.k
    }

    /// Columns of the packed matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Rows of A the micro-kernel takes at once: products whose row count is a
    /// multiple of it need no padded copy of A's last rows.
    pub fn tile_rows(&self) -> usize {
        tile_rows(self.isa)
    }
}

/// Multiply-adds below which a product runs on the calling thread.
const PAR_MNK: usize = 1 << 18;

/// `C[m × n] = A[m × k] · B` (`C += A · B` when `accumulate`), with `B` packed by
/// [`PackedB::pack`]. `A` is row-major with row stride `lda`, `C` with `ldc`. With
/// `accumulate` false the old contents of `C` are not read. The column panels are
/// split across the compute pool when the product is large enough.
///
/// # Safety
/// `a` and `c` must be valid for the extents described; `c` must not overlap `a`;
/// nothing else may access `c` meanwhile.
pub unsafe fn gemm_packed<T: PackElem>(m: usize, a: *const T, lda: usize, b: &PackedB<T>, accumulate: bool, c: *mut T, ldc: usize) {
    gemm_packed_threads(m, a, lda, b, accumulate, c, ldc, crate::engine::threads())
}

/// [`gemm_packed`] on at most `max_threads` threads (1: on the calling thread, for
/// callers that split the work themselves, e.g. by rows).
///
/// # Safety
/// As for [`gemm_packed`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_packed_threads<T: PackElem>(
    m: usize,
    a: *const T,
    lda: usize,
    b: &PackedB<T>,
    accumulate: bool,
    c: *mut T,
    ldc: usize,
    max_threads: usize,
) {
    if m == 0 || b.n == 0 {
        return;
    }
    let panels = b.n.div_ceil(b.nr);
    let work = m.saturating_mul(b.n).saturating_mul(b.k);
    let threads = if work >= PAR_MNK { max_threads.clamp(1, panels) } else { 1 };
    if threads == 1 {
        run_panels(b, m, a, lda, 0, panels, accumulate, c, ldc);
        return;
    }
    let per = panels.div_ceil(threads);
    let (pa, pc) = (SendPtr(a as *mut T), SendPtr(c));
    crate::engine::install(|| {
        rayon::scope(|s| {
            for p0 in (0..panels).step_by(per) {
                s.spawn(move |_| {
                    // SAFETY: each task writes the columns of its own panels of C.
                    unsafe { run_panels(b, m, pa.get(), lda, p0, (p0 + per).min(panels), accumulate, pc.get(), ldc) }
                });
            }
        })
    });
}

/// Panels `p0..p1` of the product, on the calling thread, by the kernel `b` was
/// packed for.
#[allow(clippy::too_many_arguments)]
unsafe fn run_panels<T: PackElem>(
    b: &PackedB<T>,
    m: usize,
    a: *const T,
    lda: usize,
    p0: usize,
    p1: usize,
    acc: bool,
    c: *mut T,
    ldc: usize,
) {
    let mr = tile_rows(b.isa);
    // A copy of the last rows of A, zero-padded to a whole tile.
    let tail = m % mr;
    let mut pad = Vec::new();
    if tail != 0 {
        pad = vec![T::zero(); mr * b.k];
        for i in 0..tail {
            let src = std::slice::from_raw_parts(a.add((m - tail + i) * lda), b.k);
            pad[i * b.k..(i + 1) * b.k].copy_from_slice(src);
        }
    }
    let args = Args { m, k: b.k, n: b.n, nr: b.nr, mr, a, lda, b: b.buf.as_ptr(), p0, p1, acc, c, ldc, pad: pad.as_ptr() };
    #[cfg(target_arch = "x86_64")]
    {
        let any: &dyn std::any::Any = &args;
        // SAFETY (all four): `b.isa` is an instruction set the CPU runs, and the
        // matrix was packed with the panel width of that kernel.
        match b.isa {
            Isa::Avx512 => {
                if let Some(g) = any.downcast_ref::<Args<f32>>() {
                    return avx512_f32(g);
                }
                if let Some(g) = any.downcast_ref::<Args<f64>>() {
                    return avx512_f64(g);
                }
            }
            Isa::Avx2 => {
                if let Some(g) = any.downcast_ref::<Args<f32>>() {
                    return avx2_f32(g);
                }
                if let Some(g) = any.downcast_ref::<Args<f64>>() {
                    return avx2_f64(g);
                }
            }
            Isa::Portable => {}
        }
    }
    portable(&args)
}

/// One call's operands (see [`gemm_packed`]): panels `p0..p1` of width `nr`, tiles
/// of `mr` rows; `pad` is the zero-padded copy of A's last `m % mr` rows
/// (`mr × k`), when there are such rows.
struct Args<T> {
    m: usize,
    k: usize,
    n: usize,
    nr: usize,
    mr: usize,
    a: *const T,
    lda: usize,
    b: *const T,
    p0: usize,
    p1: usize,
    acc: bool,
    c: *mut T,
    ldc: usize,
    pad: *const T,
}

/// The plain kernel (any CPU, any panel width): one `mr × nr` tile at a time.
unsafe fn portable<T: PackElem>(g: &Args<T>) {
    let (mr, nr) = (g.mr, g.nr);
    let mut acc = vec![T::zero(); mr * nr];
    for pi in g.p0..g.p1 {
        let bp = g.b.add(pi * g.k * nr);
        let j0 = pi * nr;
        let cols = nr.min(g.n - j0);
        let mut i0 = 0;
        while i0 < g.m {
            let rows = mr.min(g.m - i0);
            let (ap, la) = if rows == mr { (g.a.add(i0 * g.lda), g.lda) } else { (g.pad, g.k) };
            acc.fill(T::zero());
            for p in 0..g.k {
                let brow = std::slice::from_raw_parts(bp.add(p * nr), nr);
                for (i, row) in acc.chunks_exact_mut(nr).enumerate() {
                    let av = *ap.add(i * la + p);
                    for (x, &bv) in row.iter_mut().zip(brow) {
                        *x = *x + av * bv;
                    }
                }
            }
            for (i, row) in acc.chunks_exact(nr).enumerate().take(rows) {
                let crow = std::slice::from_raw_parts_mut(g.c.add((i0 + i) * g.ldc + j0), cols);
                if g.acc {
                    for (o, &v) in crow.iter_mut().zip(row) {
                        *o = *o + v;
                    }
                } else {
                    crow.copy_from_slice(&row[..cols]);
                }
            }
            i0 += mr;
        }
    }
}

/// The SIMD kernels: panels of two vectors' width (`2 · L` columns), tiles of `MR`
/// rows whose `2 · MR` accumulators stay in registers over all of `k`. Full
/// panels are stored with vector loads and stores, the last narrow one through a
/// buffer.
macro_rules! simd_kernel {
    ($name:ident, $feat:literal, $t:ty, $lanes:expr, $mr:expr, $zero:ident, $load:ident, $set1:ident, $fma:ident, $add:ident, $store:ident) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $feat)]
        unsafe fn $name(g: &Args<$t>) {
            use std::arch::x86_64::*;
            const L: usize = $lanes;
            const NR: usize = 2 * L;
            const MR: usize = $mr;
            debug_assert!(g.nr == NR && g.mr == MR);
            for pi in g.p0..g.p1 {
                let bp = g.b.add(pi * g.k * NR);
                let j0 = pi * NR;
                let cols = NR.min(g.n - j0);
                let mut i0 = 0;
                while i0 < g.m {
                    let rows = MR.min(g.m - i0);
                    let (ap, la) = if rows == MR { (g.a.add(i0 * g.lda), g.lda) } else { (g.pad, g.k) };
                    let z = $zero();
                    let mut acc = [[z; 2]; MR];
                    for p in 0..g.k {
                        let b0 = $load(bp.add(p * NR));
                        let b1 = $load(bp.add(p * NR + L));
                        for (i, r) in acc.iter_mut().enumerate() {
                            let av = $set1(*ap.add(i * la + p));
                            r[0] = $fma(av, b0, r[0]);
                            r[1] = $fma(av, b1, r[1]);
                        }
                    }
                    for (i, r) in acc.iter().enumerate() {
                        if i >= rows {
                            break;
                        }
                        let crow = g.c.add((i0 + i) * g.ldc + j0);
                        if cols == NR {
                            let (mut v0, mut v1) = (r[0], r[1]);
                            if g.acc {
                                v0 = $add(v0, $load(crow));
                                v1 = $add(v1, $load(crow.add(L)));
                            }
                            $store(crow, v0);
                            $store(crow.add(L), v1);
                        } else {
                            let mut tmp = [0 as $t; NR];
                            $store(tmp.as_mut_ptr(), r[0]);
                            $store(tmp.as_mut_ptr().add(L), r[1]);
                            for (j, &v) in tmp.iter().enumerate().take(cols) {
                                let o = crow.add(j);
                                *o = if g.acc { *o + v } else { v };
                            }
                        }
                    }
                    i0 += MR;
                }
            }
        }
    };
}

simd_kernel!(
    avx512_f32,
    "avx512f,fma",
    f32,
    16,
    8,
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_add_ps,
    _mm512_storeu_ps
);
simd_kernel!(
    avx512_f64,
    "avx512f,fma",
    f64,
    8,
    8,
    _mm512_setzero_pd,
    _mm512_loadu_pd,
    _mm512_set1_pd,
    _mm512_fmadd_pd,
    _mm512_add_pd,
    _mm512_storeu_pd
);
simd_kernel!(
    avx2_f32,
    "avx2,fma",
    f32,
    8,
    6,
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_add_ps,
    _mm256_storeu_ps
);
simd_kernel!(
    avx2_f64,
    "avx2,fma",
    f64,
    4,
    6,
    _mm256_setzero_pd,
    _mm256_loadu_pd,
    _mm256_set1_pd,
    _mm256_fmadd_pd,
    _mm256_add_pd,
    _mm256_storeu_pd
);

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(m: usize, n: usize, k: usize, a: &[f64], b: &[f64], trans: bool) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0;
                for p in 0..k {
                    s += a[i * k + p] * if trans { b[j * k + p] } else { b[p * n + j] };
                }
                c[i * n + j] = s;
            }
        }
        c
    }

    fn lcg(seed: &mut u64) -> f64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    fn check<T: PackElem>(m: usize, n: usize, k: usize, trans: bool, accumulate: bool, tol: f64) {
        let mut s = 7u64;
        let a: Vec<f64> = (0..m * k).map(|_| lcg(&mut s)).collect();
        let b: Vec<f64> = (0..k * n).map(|_| lcg(&mut s)).collect();
        let c0: Vec<f64> = (0..m * n).map(|_| lcg(&mut s)).collect();
        let at: Vec<T> = a.iter().map(|&v| T::from_f64(v)).collect();
        let bt: Vec<T> = b.iter().map(|&v| T::from_f64(v)).collect();
        // C with a row stride wider than n, its padding to stay untouched
        let ldc = n + 3;
        let mut c: Vec<T> = vec![T::from_f64(9.0); m * ldc];
        for i in 0..m {
            for j in 0..n {
                c[i * ldc + j] = T::from_f64(c0[i * n + j]);
            }
        }
        let pb = unsafe { PackedB::pack(k, n, bt.as_ptr(), if trans { k } else { n }, trans) };
        assert_eq!((pb.k(), pb.n()), (k, n));
        unsafe { gemm_packed(m, at.as_ptr(), k, &pb, accumulate, c.as_mut_ptr(), ldc) };
        let want = naive(m, n, k, &a, &b, trans);
        for i in 0..m {
            for j in 0..n {
                let w = want[i * n + j] + if accumulate { c0[i * n + j] } else { 0.0 };
                let got = c[i * ldc + j].to_f64();
                assert!((got - w).abs() <= tol * (1.0 + w.abs()), "m={m} n={n} k={k} ({i},{j}): {got} vs {w}");
            }
            for j in n..ldc {
                assert_eq!(c[i * ldc + j].to_f64(), 9.0);
            }
        }
    }

    #[test]
    fn packed_matches_naive() {
        for &(m, n, k) in &[(1, 1, 1), (32, 1024, 256), (7, 45, 13), (13, 33, 70), (32, 130, 512), (5, 3, 0)] {
            for trans in [false, true] {
                for accumulate in [false, true] {
                    check::<f32>(m, n, k, trans, accumulate, 1e-4);
                    check::<f64>(m, n, k, trans, accumulate, 1e-12);
                }
            }
        }
    }

    #[test]
    fn every_isa_matches_naive() {
        // each kernel this CPU can run, the portable one included
        let mut isas = vec![Isa::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            let fma = std::arch::is_x86_feature_detected!("fma");
            if std::arch::is_x86_feature_detected!("avx2") && fma {
                isas.push(Isa::Avx2);
            }
            if std::arch::is_x86_feature_detected!("avx512f") && fma {
                isas.push(Isa::Avx512);
            }
        }
        let (m, n, k) = (17, 75, 21);
        let mut s = 3u64;
        let a: Vec<f64> = (0..m * k).map(|_| lcg(&mut s)).collect();
        let b: Vec<f64> = (0..k * n).map(|_| lcg(&mut s)).collect();
        let want = naive(m, n, k, &a, &b, false);
        let a32: Vec<f32> = a.iter().map(|&v| v as f32).collect();
        let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
        for isa in isas {
            let pb = unsafe { PackedB::pack_for(isa, k, n, b.as_ptr(), n, false) };
            let mut c = vec![0.0; m * n];
            unsafe { gemm_packed(m, a.as_ptr(), k, &pb, false, c.as_mut_ptr(), n) };
            for (g, w) in c.iter().zip(&want) {
                assert!((g - w).abs() < 1e-12, "{isa:?}: {g} vs {w}");
            }
            let pb = unsafe { PackedB::pack_for(isa, k, n, b32.as_ptr(), n, false) };
            let mut c = vec![0f32; m * n];
            unsafe { gemm_packed(m, a32.as_ptr(), k, &pb, false, c.as_mut_ptr(), n) };
            for (g, w) in c.iter().zip(&want) {
                assert!((*g as f64 - w).abs() < 1e-4, "{isa:?}: {g} vs {w}");
            }
        }
    }
}
