//! Depthwise convolution (MobileNet's 3×3 layers): one input channel per group
//! (`groups == c`), any channel multiplier `f / c`, 1-D or 2-D images, any
//! kernel, stride, dilation and padding. Used by [`super::conv::conv_forward`] and
//! [`super::conv::conv_backward`] in place of im2col + a one-row GEMM per group
//! where [`applies`] says so.
//!
//! Work is split over the `(sample, channel)` planes, one contiguous range per
//! pool thread. Each plane is first copied, in the accumulator type `A` (float32
//! for float16 and float32, float64 for float64), into a per-task buffer that
//! holds the zero padding and splits every row into `s_w` phases (columns
//! `j·s_w + r` of the padded row go to phase `r`), so that every tap of the
//! kernel reads a *contiguous* run of that buffer for consecutive outputs:
//! output `(oh, ow)`, tap `(kh, kw)` reads padded row `oh·s_h + kh·d_h`, phase
//! `(kw·d_w) mod s_w`, element `ow + (kw·d_w) / s_w`. A block of `R` output rows
//! by `W` columns (one vector) then stays in registers over all taps
//! ([`gather`]).
//!
//! - Forward: `y = bias + Σ_taps w · buffer[...]`, written once per output.
//! - Data gradient: the transposed operation as a gather. Inputs are split by
//!   their padded row and column modulo the stride; for one such phase only the
//!   taps with `k·d ≡ phase (mod s)` reach it, and they read `dy` at a constant
//!   shift, so each phase is again a run of [`gather`] blocks over a zero-padded
//!   copy of `dy` (all `f / c` filters of the channel summed in the same block).
//! - Weight gradient: `dw[f, tap] = Σ dy · buffer[...]`: one `dy` vector is
//!   loaded and multiplied into up to nine tap accumulators held in registers
//!   ([`dw_taps`]); per plane the sums go to a float64 partial per task, added
//!   at the end.
//!
//! The kernels are compiled for AVX-512 and AVX2+FMA and picked at run time; any
//! other CPU runs the same loops without fused multiply-adds.

use super::conv::{par_ranges, valid_range, ConvElem, ConvGeom, Scratch};
use super::{isa, Isa, SendPtr};
use crate::error::{Error, Result};
use half::f16;
use std::any::TypeId;
use std::ops::{Add, Mul};

/// Accumulator types: float32 and float64.
pub trait Acc: Copy + Send + Sync + 'static + Add<Output = Self> + Mul<Output = Self> {
    const ZERO: Self;
    /// `self + x·w` with one rounding (only called where the CPU has FMA).
    fn fused(self, x: Self, w: Self) -> Self;
    fn to_f64(self) -> f64;
}

impl Acc for f32 {
    const ZERO: f32 = 0.0;
    #[inline(always)]
    fn fused(self, x: f32, w: f32) -> f32 {
        x.mul_add(w, self)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
}

impl Acc for f64 {
    const ZERO: f64 = 0.0;
    #[inline(always)]
    fn fused(self, x: f64, w: f64) -> f64 {
        x.mul_add(w, self)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
}

/// Element types of the depthwise kernels and the type they accumulate in.
pub trait DwElem: ConvElem {
    type A: Acc;
    fn to_acc(self) -> Self::A;
    fn from_acc(a: Self::A) -> Self;
}

impl DwElem for f32 {
    type A = f32;
    #[inline(always)]
    fn to_acc(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_acc(a: f32) -> f32 {
        a
    }
}

impl DwElem for f64 {
    type A = f64;
    #[inline(always)]
    fn to_acc(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_acc(a: f64) -> f64 {
        a
    }
}

impl DwElem for f16 {
    type A = f32;
    #[inline(always)]
    fn to_acc(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn from_acc(a: f32) -> f16 {
        f16::from_f32(a)
    }
}

impl DwElem for half::bf16 {
    type A = f32;
    #[inline(always)]
    fn to_acc(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn from_acc(a: f32) -> half::bf16 {
        half::bf16::from_f32(a)
    }
}

/// `acc + x·w`, fused when `FMA`.
#[inline(always)]
fn madd<A: Acc, const FMA: bool>(acc: A, x: A, w: A) -> A {
    if FMA {
        acc.fused(x, w)
    } else {
        acc + x * w
    }
}

/// True when the depthwise kernels run this convolution of `T` (float32, float64
/// or float16): one input channel per group, no depth (1-D or 2-D), and something
/// to compute.
pub fn applies<T: 'static>(g: &ConvGeom) -> bool {
    let t = TypeId::of::<T>();
    (t == TypeId::of::<f32>() || t == TypeId::of::<f64>() || t == TypeId::of::<f16>())
        && g.c > 0
        && g.groups == g.c
        && g.f >= g.c
        && g.f.is_multiple_of(g.c)
        && g.x[0] == 1
        && g.k[0] == 1
        && g.p[0] == 0
        && g.y[0] == 1
        && g.k[1] > 0
        && g.k[2] > 0
        && g.s[1] > 0
        && g.s[2] > 0
        && g.d[1] > 0
        && g.d[2] > 0
        && g.batch > 0
        && g.x_len() > 0
        && g.y_len() > 0
}

/// Columns per block (one vector of float32 on AVX-512, two on AVX2; float64
/// blocks take twice the registers).
fn block_width(isa: Isa) -> usize {
    match isa {
        Isa::Avx512 => 16,
        Isa::Avx2 => 8,
        Isa::Portable => 4,
    }
}

/// One phase of the data gradient: the inputs at padded rows `a·s_h + rho`,
/// `a` in `alo..ahi`, and padded columns `j·s_w + r`, `j` in `jlo..jhi`, and the
/// taps that reach them: (offset into the padded `dy`, index `m·taps + t` of the
/// weight within the channel's filters).
struct Phase {
    rho: usize,
    r: usize,
    alo: usize,
    ahi: usize,
    jlo: usize,
    jhi: usize,
    taps: Vec<(usize, usize)>,
}

/// Everything about a geometry the kernels need, for column blocks of `w`.
struct Geo {
    c: usize,
    f: usize,
    mult: usize,
    taps: usize,
    xh: usize,
    xw: usize,
    yh: usize,
    yw: usize,
    sh: usize,
    sw: usize,
    ph: usize,
    pw: usize,
    /// The input buffer: `hp` padded rows of `sw` phases of `lq` elements.
    hp: usize,
    lq: usize,
    lrow: usize,
    /// Offset of each tap into the input buffer (row-major taps).
    xoff: Vec<usize>,
    /// The padded `dy` of the data gradient: `mult` planes of `dh × dw`, the data at
    /// row `ehmax`, column `emax`.
    ehmax: usize,
    emax: usize,
    dh: usize,
    dwid: usize,
    phases: Vec<Phase>,
}

impl Geo {
    fn new(g: &ConvGeom, w: usize) -> Geo {
        let [_, kh, kw] = g.k;
        let [_, xh, xw] = g.x;
        let [_, yh, yw] = g.y;
        let [_, sh, sw] = g.s;
        let [_, dh, dw] = g.d;
        let [_, ph, pw] = g.p;
        let emax = (kw - 1) * dw / sw;
        let ehmax = (kh - 1) * dh / sh;
        let lq = yw.div_ceil(w) * w + emax;
        let lrow = sw * lq;
        let hp = (yh - 1) * sh + (kh - 1) * dh + 1;
        let mut xoff = Vec::with_capacity(kh * kw);
        for i in 0..kh {
            for j in 0..kw {
                xoff.push(i * dh * lrow + (j * dw % sw) * lq + j * dw / sw);
            }
        }
        let mult = g.f / g.c;
        let taps = kh * kw;
        let mut phases = Vec::new();
        let (mut arows, mut jcols) = (yh, yw);
        for rho in 0..sh {
            let (alo, ahi) = valid_range(rho as isize - ph as isize, sh, xh, xh + ph + 1);
            for r in 0..sw {
                let (jlo, jhi) = valid_range(r as isize - pw as isize, sw, xw, xw + pw + 1);
                if alo >= ahi || jlo >= jhi {
                    continue;
                }
                arows = arows.max(ahi);
                jcols = jcols.max(jlo + (jhi - jlo).div_ceil(w) * w);
                phases.push(Phase { rho, r, alo, ahi, jlo, jhi, taps: Vec::new() });
            }
        }
        let dh_rows = ehmax + arows;
        let dwid = emax + jcols;
        for p in &mut phases {
            for m in 0..mult {
                for i in (0..kh).filter(|i| i * dh % sh == p.rho) {
                    for j in (0..kw).filter(|j| j * dw % sw == p.r) {
                        let off = m * dh_rows * dwid + (ehmax - i * dh / sh) * dwid + emax - j * dw / sw;
                        p.taps.push((off, m * taps + i * kw + j));
                    }
                }
            }
        }
        Geo { c: g.c, f: g.f, mult, taps, xh, xw, yh, yw, sh, sw, ph, pw, hp, lq, lrow, xoff, ehmax, emax, dh: dh_rows, dwid, phases }
    }

    fn xbuf_len(&self) -> usize {
        self.hp * self.lrow
    }

    fn dybuf_len(&self) -> usize {
        self.mult * self.dh * self.dwid
    }
}

/// Copies one input plane `x` `(xh, xw)` into the padded, phased buffer `b`
/// (whose other elements are zero and stay so).
///
/// # Safety
/// `x` must hold a plane, `b` [`Geo::xbuf_len`] elements.
#[inline(always)]
unsafe fn pack_x<T: DwElem>(g: &Geo, x: *const T, b: *mut T::A) {
    let rows = g.hp.min(g.xh + g.ph);
    let pw = g.pw as isize;
    if g.sw == 1 {
        let (lo, hi) = valid_range(-pw, 1, g.xw, g.lq);
        for i in g.ph..rows {
            let s = std::slice::from_raw_parts(x.add((i - g.ph) * g.xw).offset(lo as isize - pw), hi - lo);
            let d = std::slice::from_raw_parts_mut(b.add(i * g.lrow + lo), hi - lo);
            for (a, v) in d.iter_mut().zip(s) {
                *a = v.to_acc();
            }
        }
        return;
    }
    // Columns `lo..hi` of every phase are inside the row; stride 2 splits them
    // into even and odd elements in one (vectorised) pass, the rest go one by one.
    let ranges: Vec<(usize, usize)> = (0..g.sw).map(|r| valid_range(r as isize - pw, g.sw, g.xw, g.lq)).collect();
    let lo = ranges.iter().map(|r| r.0).max().unwrap_or(0);
    let hi = ranges.iter().map(|r| r.1).min().unwrap_or(0).max(lo);
    for i in g.ph..rows {
        let src = x.add((i - g.ph) * g.xw);
        let dst = b.add(i * g.lrow);
        let at = |j: usize, r: usize| (*src.offset((j * g.sw + r) as isize - pw)).to_acc();
        for (r, &(rlo, rhi)) in ranges.iter().enumerate() {
            for j in (rlo..rhi).filter(|j| !(lo..hi).contains(j) || g.sw != 2) {
                *dst.add(r * g.lq + j) = at(j, r);
            }
        }
        if g.sw == 2 && lo < hi {
            let s = std::slice::from_raw_parts(src.offset((2 * lo) as isize - pw), 2 * (hi - lo));
            let e = std::slice::from_raw_parts_mut(dst.add(lo), hi - lo);
            let o = std::slice::from_raw_parts_mut(dst.add(g.lq + lo), hi - lo);
            for ((e, o), p) in e.iter_mut().zip(o.iter_mut()).zip(s.chunks_exact(2)) {
                *e = p[0].to_acc();
                *o = p[1].to_acc();
            }
        }
    }
}

/// `R` rows of `W` sums `init + Σ_t w_t · inp[r·irs + off_t + i]`.
///
/// # Safety
/// Every element read must lie in `inp`'s buffer.
#[inline(always)]
unsafe fn gather<A: Acc, const W: usize, const R: usize, const FMA: bool>(
    inp: *const A,
    irs: usize,
    taps: &[(usize, A)],
    init: A,
) -> [[A; W]; R] {
    let mut acc = [[init; W]; R];
    for &(off, wv) in taps {
        let p = inp.add(off);
        for (r, a) in acc.iter_mut().enumerate() {
            let xs = &*(p.add(r * irs) as *const [A; W]);
            for (av, &xv) in a.iter_mut().zip(xs) {
                *av = madd::<A, FMA>(*av, xv, wv);
            }
        }
    }
    acc
}

/// Stores the first `n` columns of `R` rows to `out` (rows `ors` apart, columns
/// `step` apart).
///
/// # Safety
/// `out` must be valid for those positions.
#[inline(always)]
unsafe fn store<T: DwElem, const W: usize, const R: usize>(acc: &[[T::A; W]; R], out: *mut T, ors: usize, step: usize, n: usize) {
    for (r, a) in acc.iter().enumerate() {
        let o = out.add(r * ors);
        if step == 1 && n == W {
            let d = &mut *(o as *mut [T; W]);
            for (dv, &av) in d.iter_mut().zip(a) {
                *dv = T::from_acc(av);
            }
        } else {
            for (i, &av) in a.iter().enumerate().take(n) {
                *o.add(i * step) = T::from_acc(av);
            }
        }
    }
}

/// Runs `body` with `$i` and a constant `$R` over `lo..hi` in blocks of the
/// sizes given, each as often as it fits (the last size must be 1).
macro_rules! blocks {
    ([$($size:literal),+], $lo:expr, $hi:expr, |$i:ident, $R:ident| $body:block) => {{
        let (mut $i, hi) = ($lo, $hi);
        $(
            // (With a block size of 1 this reads `i + 1 <= hi`: the same form for
            // every size.)
            #[allow(clippy::int_plus_one)]
            while $i + $size <= hi {
                const $R: usize = $size;
                $body
                $i += $size;
            }
        )+
    }};
}

/// Pointers of one call, shareable between tasks.
#[derive(Clone, Copy)]
struct Job<T> {
    x: SendPtr<T>,
    w: SendPtr<T>,
    bias: Option<SendPtr<T>>,
    y: SendPtr<T>,
    dy: SendPtr<T>,
    dx: Option<SendPtr<T>>,
    /// Float64 partial weight gradients, `f · taps` per task.
    dw: Option<SendPtr<f64>>,
    /// Float64 partial bias gradients, `f` per task.
    db: Option<SendPtr<f64>>,
}

/// Forward over planes `q0..q1` (`q = n·c + channel`) with the input buffer `b`
/// (zeroed).
///
/// # Safety
/// As for [`forward`]; `b` holds [`Geo::xbuf_len`] zeros.
#[inline(always)]
unsafe fn fwd_task<T: DwElem, const W: usize, const FMA: bool>(g: &Geo, job: &Job<T>, q0: usize, q1: usize, b: *mut T::A) {
    let (xlen, ylen) = (g.xh * g.xw, g.yh * g.yw);
    let mut wt: Vec<(usize, T::A)> = g.xoff.iter().map(|&o| (o, T::A::ZERO)).collect();
    let irs = g.sh * g.lrow;
    for q in q0..q1 {
        pack_x::<T>(g, job.x.get().add(q * xlen), b);
        let (n, ch) = (q / g.c, q % g.c);
        for m in 0..g.mult {
            let f = ch * g.mult + m;
            for (t, e) in wt.iter_mut().enumerate() {
                e.1 = (*job.w.get().add(f * g.taps + t)).to_acc();
            }
            let init = job.bias.map_or(T::A::ZERO, |p| (*p.get().add(f)).to_acc());
            let yp = job.y.get().add((n * g.f + f) * ylen);
            blocks!([8, 4, 2, 1], 0, g.yh, |oh, R| {
                let mut ow = 0;
                while ow < g.yw {
                    let acc = gather::<T::A, W, R, FMA>(b.add(oh * irs + ow), irs, &wt, init);
                    store::<T, W, R>(&acc, yp.add(oh * g.yw + ow), g.yw, 1, W.min(g.yw - ow));
                    ow += W;
                }
            });
        }
    }
}

/// Sums `Σ dy[oh, ow] · b[oh·irs + off_t + ow]` over the plane for `TB` taps.
///
/// # Safety
/// `dy` must hold a plane, `b` a packed input.
#[inline(always)]
unsafe fn dw_taps<T: DwElem, const W: usize, const TB: usize, const FMA: bool>(
    g: &Geo,
    b: *const T::A,
    offs: &[usize],
    dy: *const T,
) -> [f64; TB] {
    let offs: &[usize; TB] = offs.try_into().unwrap();
    let irs = g.sh * g.lrow;
    let mut acc = [[T::A::ZERO; W]; TB];
    for oh in 0..g.yh {
        let brow = b.add(oh * irs);
        let drow = dy.add(oh * g.yw);
        let mut ow = 0;
        while ow + W <= g.yw {
            let d = &*(drow.add(ow) as *const [T; W]);
            let dv: [T::A; W] = std::array::from_fn(|i| d[i].to_acc());
            for (a, &o) in acc.iter_mut().zip(offs) {
                let xs = &*(brow.add(o + ow) as *const [T::A; W]);
                for ((av, &xv), &d) in a.iter_mut().zip(xs).zip(&dv) {
                    *av = madd::<T::A, FMA>(*av, d, xv);
                }
            }
            ow += W;
        }
        if ow < g.yw {
            // The last columns: lanes past the row are left alone (the input
            // there, if any, is not multiplied at all, so that an infinity the
            // convolution never reads cannot make a NaN).
            let n = g.yw - ow;
            let dv: [T::A; W] = std::array::from_fn(|i| if i < n { (*drow.add(ow + i)).to_acc() } else { T::A::ZERO });
            for (a, &o) in acc.iter_mut().zip(offs) {
                let xs = &*(brow.add(o + ow) as *const [T::A; W]);
                for (i, ((av, &xv), &d)) in a.iter_mut().zip(xs).zip(&dv).enumerate() {
                    let s = madd::<T::A, FMA>(*av, d, xv);
                    *av = if i < n { s } else { *av };
                }
            }
        }
    }
    std::array::from_fn(|t| hsum(&acc[t]))
}

/// The sum of a block's lanes in float64, as a tree (a chain of adds would wait
/// on each other: this ran at a third of the speed on 7×7 planes).
#[inline(always)]
fn hsum<A: Acc, const W: usize>(a: &[A; W]) -> f64 {
    debug_assert!(W.is_power_of_two());
    let mut v: [f64; W] = std::array::from_fn(|i| a[i].to_f64());
    let mut n = W;
    while n > 1 {
        n /= 2;
        for i in 0..n {
            v[i] += v[i + n];
        }
    }
    v[0]
}

/// `Σ v` in float64 with eight partial sums.
#[inline(always)]
fn plane_sum<T: DwElem>(v: &[T]) -> f64 {
    let mut acc = [0f64; 8];
    let mut it = v.chunks_exact(8);
    for c in &mut it {
        for (a, x) in acc.iter_mut().zip(c) {
            *a += x.to_acc().to_f64();
        }
    }
    for (a, x) in acc.iter_mut().zip(it.remainder()) {
        *a += x.to_acc().to_f64();
    }
    hsum(&acc)
}

/// Backward over planes `q0..q1`: the data gradient (with the padded `dy` buffer
/// `d`), the weight gradient's partial sums (with the input buffer `b`) and the
/// bias gradient's, as `job` asks; both buffers zeroed.
///
/// # Safety
/// As for [`backward`].
#[inline(always)]
unsafe fn bwd_task<T: DwElem, const W: usize, const FMA: bool>(g: &Geo, job: &Job<T>, q0: usize, q1: usize, b: *mut T::A, d: *mut T::A) {
    let (xlen, ylen) = (g.xh * g.xw, g.yh * g.yw);
    let plane = g.dh * g.dwid;
    let mut wt: Vec<(usize, T::A)> = Vec::new();
    for q in q0..q1 {
        let (n, ch) = (q / g.c, q % g.c);
        let dyp = |m: usize| job.dy.get().add((n * g.f + ch * g.mult + m) * ylen) as *const T;
        if let Some(dx) = job.dx {
            for m in 0..g.mult {
                for oh in 0..g.yh {
                    let s = std::slice::from_raw_parts(dyp(m).add(oh * g.yw), g.yw);
                    let o = std::slice::from_raw_parts_mut(d.add(m * plane + (g.ehmax + oh) * g.dwid + g.emax), g.yw);
                    for (a, v) in o.iter_mut().zip(s) {
                        *a = v.to_acc();
                    }
                }
            }
            let dxp = dx.get().add(q * xlen);
            let wc = job.w.get().add(ch * g.mult * g.taps) as *const T;
            for p in &g.phases {
                wt.clear();
                wt.extend(p.taps.iter().map(|&(o, i)| (o, (*wc.add(i)).to_acc())));
                let (ors, step) = (g.sh * g.xw, g.sw);
                blocks!([8, 4, 2, 1], p.alo, p.ahi, |a, R| {
                    let row = (a * g.sh + p.rho - g.ph) * g.xw;
                    let mut j = p.jlo;
                    while j < p.jhi {
                        let acc = gather::<T::A, W, R, FMA>(d.add(a * g.dwid + j), g.dwid, &wt, T::A::ZERO);
                        let out = dxp.add(row + j * g.sw + p.r - g.pw);
                        store::<T, W, R>(&acc, out, ors, step, W.min(p.jhi - j));
                        j += W;
                    }
                });
            }
        }
        if let Some(dwp) = job.dw {
            pack_x::<T>(g, job.x.get().add(q * xlen), b);
            for m in 0..g.mult {
                let f = ch * g.mult + m;
                let part = dwp.get().add(f * g.taps);
                blocks!([9, 4, 2, 1], 0, g.taps, |t, TB| {
                    let sums = dw_taps::<T, W, TB, FMA>(g, b, &g.xoff[t..t + TB], dyp(m));
                    for (i, s) in sums.iter().enumerate() {
                        *part.add(t + i) += s;
                    }
                });
            }
        }
        if let Some(db) = job.db {
            // (The planes were just read: from cache, not memory.)
            for m in 0..g.mult {
                *db.get().add(ch * g.mult + m) += plane_sum(std::slice::from_raw_parts(dyp(m), ylen));
            }
        }
    }
}

macro_rules! isa_entries {
    ($fwd:ident, $bwd:ident, $feat:literal) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $feat)]
        unsafe fn $fwd<T: DwElem, const W: usize>(g: &Geo, job: &Job<T>, q0: usize, q1: usize, b: *mut T::A) {
            fwd_task::<T, W, true>(g, job, q0, q1, b)
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $feat)]
        unsafe fn $bwd<T: DwElem, const W: usize>(g: &Geo, job: &Job<T>, q0: usize, q1: usize, b: *mut T::A, d: *mut T::A) {
            bwd_task::<T, W, true>(g, job, q0, q1, b, d)
        }
        #[cfg(not(target_arch = "x86_64"))]
        unsafe fn $fwd<T: DwElem, const W: usize>(_: &Geo, _: &Job<T>, _: usize, _: usize, _: *mut T::A) {
            unreachable!("isa() is Plain off x86_64")
        }
        #[cfg(not(target_arch = "x86_64"))]
        unsafe fn $bwd<T: DwElem, const W: usize>(_: &Geo, _: &Job<T>, _: usize, _: usize, _: *mut T::A, _: *mut T::A) {
            unreachable!("isa() is Plain off x86_64")
        }
    };
}

isa_entries!(fwd_avx512, bwd_avx512, "avx512f,avx2,fma");
isa_entries!(fwd_avx2, bwd_avx2, "avx2,fma");

/// Splits the planes into tasks (one per pool thread when there is enough work).
fn tasks_for(g: &ConvGeom) -> usize {
    let planes = g.batch * g.c;
    let work = planes.saturating_mul(g.f / g.c * g.y_len() * g.k_len());
    if work < 1 << 15 {
        1
    } else {
        crate::engine::threads().clamp(1, planes)
    }
}

/// A zeroed buffer of `len` elements from the host pool.
fn zeroed<A: Acc>(len: usize) -> Result<Scratch<A>> {
    let s = Scratch::<A>::new(len)?;
    // SAFETY: the scratch holds len elements.
    unsafe { std::slice::from_raw_parts_mut(s.ptr, len).fill(A::ZERO) };
    Ok(s)
}

fn cast<T, U>(p: Option<*mut T>) -> Option<*mut U> {
    p.map(|p| p.cast())
}

fn typed<T: 'static, U: 'static>() -> bool {
    TypeId::of::<T>() == TypeId::of::<U>()
}

/// Forward depthwise convolution: `y = w ⋆ x (+ bias)`; `y` is overwritten.
/// `finish(q)`, when given, is called right after the output planes of input
/// plane `q` (`sample · c + channel`) are written, by the task that wrote them.
///
/// # Safety
/// [`applies`] must hold for `g` and `T`; the pointers must be valid for the
/// extents `g` gives, and `y` must not overlap the inputs.
pub unsafe fn forward<T: ConvElem>(g: &ConvGeom, x: *const T, w: *const T, bias: Option<*const T>, y: *mut T, finish: Option<&Finish>) -> Result<()> {
    // The casts change nothing: T is the type named.
    if typed::<T, f32>() {
        forward_with::<f32>(isa(), g, x.cast(), w.cast(), bias.map(|b| b.cast()), y.cast(), finish)
    } else if typed::<T, f64>() {
        forward_with::<f64>(isa(), g, x.cast(), w.cast(), bias.map(|b| b.cast()), y.cast(), finish)
    } else if typed::<T, f16>() {
        forward_with::<f16>(isa(), g, x.cast(), w.cast(), bias.map(|b| b.cast()), y.cast(), finish)
    } else {
        Err(Error::new("Convolution: internal error: no depthwise kernel for this type"))
    }
}

/// What [`forward`] calls on each input plane's finished outputs.
pub type Finish<'a> = dyn Fn(usize) + Sync + 'a;

/// Columns per forward block: as [`block_width`], but half a vector on AVX-512 for
/// output rows of at most 8 (MobileNet's 7×7 layers: 7 of 16 columns were padding).
fn fwd_width(isa: Isa, g: &ConvGeom) -> usize {
    if isa == Isa::Avx512 && g.y[2] <= 8 {
        8
    } else {
        block_width(isa)
    }
}

unsafe fn forward_with<T: DwElem>(isa: Isa, g: &ConvGeom, x: *const T, w: *const T, bias: Option<*const T>, y: *mut T, finish: Option<&Finish>) -> Result<()> {
    let width = fwd_width(isa, g);
    let geo = Geo::new(g, width);
    let job = Job {
        x: SendPtr(x as *mut T),
        w: SendPtr(w as *mut T),
        bias: bias.map(|b| SendPtr(b as *mut T)),
        y: SendPtr(y),
        dy: SendPtr(std::ptr::null_mut()),
        dx: None,
        dw: None,
        db: None,
    };
    let (geo, job) = (&geo, &job);
    par_ranges(g.batch * g.c, tasks_for(g), &|_, q0, q1| {
        let b = zeroed::<T::A>(geo.xbuf_len())?;
        let run = |q0: usize, q1: usize| {
            // SAFETY: planes q0..q1 are this task's; extents as the caller promised.
            unsafe {
                match isa {
                    Isa::Avx512 if width == 8 => fwd_avx512::<T, 8>(geo, job, q0, q1, b.ptr),
                    Isa::Avx512 => fwd_avx512::<T, 16>(geo, job, q0, q1, b.ptr),
                    Isa::Avx2 => fwd_avx2::<T, 8>(geo, job, q0, q1, b.ptr),
                    Isa::Portable => fwd_task::<T, 4, false>(geo, job, q0, q1, b.ptr),
                }
            }
        };
        match finish {
            None => run(q0, q1),
            Some(finish) => {
                for q in q0..q1 {
                    run(q, q + 1);
                    finish(q);
                }
            }
        }
        Ok(())
    })
}

/// Gradients of a depthwise convolution, any of: the data gradient `dx`, the
/// weight gradient `dw` and the bias gradient `db` (each overwritten). `x` is
/// read only for `dw`, `w` only for `dx`.
///
/// # Safety
/// [`applies`] must hold for `g` and `T`; the pointers must be valid for the
/// extents `g` gives, and the outputs must not overlap the inputs or each other.
pub unsafe fn backward<T: ConvElem>(
    g: &ConvGeom,
    x: *const T,
    w: *const T,
    dy: *const T,
    dx: Option<*mut T>,
    dw: Option<*mut T>,
    db: Option<*mut T>,
) -> Result<()> {
    if typed::<T, f32>() {
        backward_with::<f32>(isa(), g, x.cast(), w.cast(), dy.cast(), cast(dx), cast(dw), cast(db))
    } else if typed::<T, f64>() {
        backward_with::<f64>(isa(), g, x.cast(), w.cast(), dy.cast(), cast(dx), cast(dw), cast(db))
    } else if typed::<T, f16>() {
        backward_with::<f16>(isa(), g, x.cast(), w.cast(), dy.cast(), cast(dx), cast(dw), cast(db))
    } else {
        Err(Error::new("Convolution: internal error: no depthwise kernel for this type"))
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn backward_with<T: DwElem>(
    isa: Isa,
    g: &ConvGeom,
    x: *const T,
    w: *const T,
    dy: *const T,
    dx: Option<*mut T>,
    dw: Option<*mut T>,
    db: Option<*mut T>,
) -> Result<()> {
    if dx.is_none() && dw.is_none() && db.is_none() {
        return Ok(());
    }
    let geo = Geo::new(g, block_width(isa));
    let tasks = tasks_for(g);
    // Per task: f · taps partial sums of dw, then f of db.
    let wlen = g.f * geo.taps;
    let plen = wlen + g.f;
    let mut partials = vec![0f64; if dw.is_some() || db.is_some() { tasks * plen } else { 0 }];
    let job = Job {
        x: SendPtr(x as *mut T),
        w: SendPtr(w as *mut T),
        bias: None,
        y: SendPtr(std::ptr::null_mut()),
        dy: SendPtr(dy as *mut T),
        dx: dx.map(SendPtr),
        dw: dw.map(|_| SendPtr(partials.as_mut_ptr())),
        db: db.map(|_| SendPtr(partials.as_mut_ptr().wrapping_add(wlen))),
    };
    let (geo, job) = (&geo, &job);
    par_ranges(g.batch * g.c, tasks, &|t, q0, q1| {
        let b = zeroed::<T::A>(if job.dw.is_some() { geo.xbuf_len() } else { 0 })?;
        let d = zeroed::<T::A>(if job.dx.is_some() { geo.dybuf_len() } else { 0 })?;
        let at = |p: Option<SendPtr<f64>>| p.map(|p| SendPtr(p.get().wrapping_add(t * plen)));
        let job = Job { dw: at(job.dw), db: at(job.db), ..*job };
        // SAFETY: planes q0..q1 and partial sum t are this task's; extents as the
        // caller promised.
        unsafe {
            match isa {
                Isa::Avx512 => bwd_avx512::<T, 16>(geo, &job, q0, q1, b.ptr, d.ptr),
                Isa::Avx2 => bwd_avx2::<T, 8>(geo, &job, q0, q1, b.ptr, d.ptr),
                Isa::Portable => bwd_task::<T, 4, false>(geo, &job, q0, q1, b.ptr, d.ptr),
            }
        }
        Ok(())
    })?;
    let sum = |out: *mut T, at: usize, len: usize| {
        // SAFETY: out holds len elements.
        let out = unsafe { std::slice::from_raw_parts_mut(out, len) };
        for (i, o) in out.iter_mut().enumerate() {
            *o = T::from_f64((0..tasks).map(|t| partials[t * plen + at + i]).sum());
        }
    };
    if let Some(dw) = dw {
        sum(dw, 0, wlen);
    }
    if let Some(db) = db {
        sum(db, wlen, g.f);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::conv::tests::{data, geom, naive_conv, time_ms};
    use super::super::conv::{conv_backward, conv_backward_general, conv_forward, conv_forward_general};
    use super::*;

    /// The kernels this CPU can run, the plain loops included.
    fn isas() -> Vec<Isa> {
        let mut v = vec![Isa::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            let fma = std::arch::is_x86_feature_detected!("fma");
            if std::arch::is_x86_feature_detected!("avx2") && fma {
                v.push(Isa::Avx2);
            }
            if std::arch::is_x86_feature_detected!("avx512f") && fma {
                v.push(Isa::Avx512);
            }
        }
        v
    }

    /// Depthwise geometries: every kernel × stride × dilation × padding of the
    /// brief, channel multipliers 1 and 2, batches 1 and 5, odd image sizes drawn
    /// from a fixed sequence (enlarged where the kernel would not fit).
    fn cases() -> Vec<ConvGeom> {
        let mut v = Vec::new();
        let mut s = 12345u64;
        let mut next = |n: usize| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 33) as usize % n
        };
        for k in [[1, 1, 1], [1, 3, 3], [1, 5, 5], [1, 3, 1]] {
            for st in 1..=3 {
                for di in 1..=2 {
                    for (p, mult, batch) in (0..=2).flat_map(|p| [(p, 1, 1), (p, 1, 5), (p, 2, 1), (p, 2, 5)]) {
                        let c = 1 + next(4);
                        let mut x = [1, 1 + next(15), 1 + next(21)];
                        // Sometimes different strides, dilations, paddings per axis.
                        let (s2, d2, p2) = if next(3) == 0 { (1 + next(3), 1 + next(2), next(3)) } else { (st, di, p) };
                        let (sv, dv, pv) = ([1, st, s2], [1, di, d2], [0, p, p2]);
                        // Images at least as large as the dilated kernel, less the padding.
                        for i in 1..3 {
                            x[i] = x[i].max((dv[i] * (k[i] - 1) + 1).saturating_sub(2 * pv[i]).max(1));
                        }
                        v.push(geom(batch, c, c * mult, c, x, k, sv, dv, pv));
                    }
                }
            }
        }
        // 1-D, and single-channel (groups = c = 1) with many filters.
        v.push(geom(3, 4, 8, 4, [1, 1, 37], [1, 1, 3], [1, 1, 2], [1, 1, 1], [0, 0, 1]));
        v.push(geom(2, 1, 6, 1, [1, 11, 9], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1]));
        // Large enough to split across tasks; rows longer than a block.
        v.push(geom(2, 24, 24, 24, [1, 30, 37], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1]));
        v.push(geom(3, 16, 32, 16, [1, 29, 41], [1, 3, 3], [1, 2, 2], [1; 3], [0, 1, 1]));
        v
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * (1.0 + b.abs())
    }

    /// Forward (with and without bias) and backward (every combination of
    /// outputs) of one geometry in `T`, each ISA, against the im2col path and,
    /// for the forward, the definition.
    fn check<T: DwElem>(g: &ConvGeom, tol: f64) {
        assert!(applies::<T>(g), "{g:?}");
        let cv = |v: Vec<f64>| v.into_iter().map(T::from_f64).collect::<Vec<T>>();
        let to64 = |v: &[T]| v.iter().map(|a| a.to_f64()).collect::<Vec<f64>>();
        let x = cv(data(g.batch * g.c * g.x_len(), 1));
        let w = cv(data(g.f * g.k_len(), 2));
        let b = cv(data(g.f, 3));
        let dy = cv(data(g.batch * g.f * g.y_len(), 4));
        let ylen = g.batch * g.f * g.y_len();
        let nan = T::from_f64(f64::NAN);
        let want = naive_conv(g, &to64(&x), &to64(&w));
        let mut general = vec![nan; ylen];
        unsafe {
            conv_forward_general(g, x.as_ptr(), w.as_ptr(), &super::super::conv::Epilogue::bias(Some(b.as_ptr())), general.as_mut_ptr())
                .unwrap()
        };
        let (mut gdx, mut gdw, mut gdb) = (vec![nan; x.len()], vec![nan; w.len()], vec![nan; g.f]);
        unsafe {
            let (px, pw, pb) = (gdx.as_mut_ptr(), gdw.as_mut_ptr(), gdb.as_mut_ptr());
            conv_backward_general(g, x.as_ptr(), w.as_ptr(), dy.as_ptr(), Some(px), Some(pw), Some(pb)).unwrap();
        }
        for isa in isas() {
            for with_bias in [false, true] {
                let mut y = vec![nan; ylen];
                unsafe { forward_with::<T>(isa, g, x.as_ptr(), w.as_ptr(), with_bias.then_some(b.as_ptr()), y.as_mut_ptr(), None).unwrap() };
                for (i, (a, e)) in y.iter().zip(&want).enumerate() {
                    let e = e + if with_bias { b[i / g.y_len() % g.f].to_f64() } else { 0.0 };
                    assert!(close(a.to_f64(), e, tol), "{isa:?} {g:?} y[{i}]: {} vs {e}", a.to_f64());
                }
                if with_bias {
                    for (i, (a, e)) in y.iter().zip(&general).enumerate() {
                        assert!(close(a.to_f64(), e.to_f64(), tol), "{isa:?} {g:?} y[{i}] vs im2col");
                    }
                }
            }
            for (want_dx, want_dw, want_db) in
                [(true, true, true), (true, false, false), (false, true, false), (false, false, true), (false, true, true)]
            {
                let (mut dx, mut dw, mut db) = (vec![nan; x.len()], vec![nan; w.len()], vec![nan; g.f]);
                unsafe {
                    let pdx = want_dx.then_some(dx.as_mut_ptr());
                    let pdw = want_dw.then_some(dw.as_mut_ptr());
                    let pdb = want_db.then_some(db.as_mut_ptr());
                    // The input is not read for dx alone, the weight not for dw alone.
                    let px = if want_dw { x.as_ptr() } else { std::ptr::null() };
                    let pw = if want_dx { w.as_ptr() } else { std::ptr::null() };
                    backward_with::<T>(isa, g, px, pw, dy.as_ptr(), pdx, pdw, pdb).unwrap();
                }
                if want_db {
                    for (i, (a, e)) in db.iter().zip(&gdb).enumerate() {
                        let tol = tol * (g.batch * g.y_len()) as f64;
                        assert!(close(a.to_f64(), e.to_f64(), tol), "{isa:?} {g:?} db[{i}]: {} vs {}", a.to_f64(), e.to_f64());
                    }
                }
                if want_dx {
                    for (i, (a, e)) in dx.iter().zip(&gdx).enumerate() {
                        assert!(close(a.to_f64(), e.to_f64(), tol), "{isa:?} {g:?} dx[{i}]: {} vs {}", a.to_f64(), e.to_f64());
                    }
                }
                if want_dw {
                    for (i, (a, e)) in dw.iter().zip(&gdw).enumerate() {
                        // dw sums many products: relative to their magnitude.
                        let tol = tol * (g.batch * g.y_len()) as f64;
                        assert!(close(a.to_f64(), e.to_f64(), tol), "{isa:?} {g:?} dw[{i}]: {} vs {}", a.to_f64(), e.to_f64());
                    }
                }
            }
        }
        // The dispatching entry points, with the bias gradient.
        let mut y = vec![nan; ylen];
        let (mut dx, mut dw, mut db) = (vec![nan; x.len()], vec![nan; w.len()], vec![nan; g.f]);
        unsafe {
            conv_forward(g, x.as_ptr(), w.as_ptr(), Some(b.as_ptr()), y.as_mut_ptr()).unwrap();
            let (px, pw, pb) = (dx.as_mut_ptr(), dw.as_mut_ptr(), db.as_mut_ptr());
            conv_backward(g, x.as_ptr(), w.as_ptr(), dy.as_ptr(), Some(px), Some(pw), Some(pb)).unwrap();
        }
        for (a, e) in y.iter().zip(&general).chain(dx.iter().zip(&gdx)) {
            assert!(close(a.to_f64(), e.to_f64(), tol), "{g:?}");
        }
        for (a, e) in dw.iter().zip(&gdw).chain(db.iter().zip(&gdb)) {
            assert!(close(a.to_f64(), e.to_f64(), tol * (g.batch * g.y_len()) as f64), "{g:?}");
        }
    }

    #[test]
    fn depthwise_f64_matches_naive_and_im2col() {
        let cases = cases();
        assert!(cases.len() > 280, "{}", cases.len());
        for g in &cases {
            check::<f64>(g, 1e-12);
        }
    }

    #[test]
    fn depthwise_f32_matches_naive_and_im2col() {
        for g in &cases() {
            check::<f32>(g, 1e-5);
        }
    }

    #[test]
    fn depthwise_f16_matches_im2col() {
        // float16 accumulates in float32 here and in float16 (or float32) in the
        // GEMM: a loose tolerance.
        for g in cases().iter().step_by(7) {
            check::<f16>(g, 2e-2);
        }
    }

    #[test]
    fn depthwise_declines_other_geometries() {
        let dw = geom(2, 4, 8, 4, [1, 9, 9], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1]);
        assert!(applies::<f32>(&dw) && applies::<f64>(&dw) && applies::<f16>(&dw));
        assert!(!applies::<i32>(&dw));
        // two input channels per group, one group, 3-D
        assert!(!applies::<f32>(&geom(2, 4, 8, 2, [1, 9, 9], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1])));
        assert!(!applies::<f32>(&geom(2, 4, 8, 1, [1, 9, 9], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1])));
        assert!(!applies::<f32>(&geom(2, 4, 8, 4, [3, 9, 9], [2, 3, 3], [1; 3], [1; 3], [0, 1, 1])));
    }

    /// Infinities in input columns that no output reads (the last column of an
    /// even-width image at stride 2, kernel 2) stay out of the weight gradient.
    #[test]
    fn depthwise_weight_gradient_ignores_unread_input() {
        let g = geom(1, 2, 2, 2, [1, 4, 5], [1, 2, 2], [1, 2, 2], [1; 3], [0; 3]);
        let mut x = data(g.c * g.x_len(), 1);
        for c in 0..2 {
            for h in 0..4 {
                x[c * 20 + h * 5 + 4] = f64::INFINITY;
            }
        }
        let dy = data(g.f * g.y_len(), 2);
        for isa in isas() {
            let mut dw = vec![f64::NAN; 8];
            unsafe { backward_with::<f64>(isa, &g, x.as_ptr(), std::ptr::null(), dy.as_ptr(), None, Some(dw.as_mut_ptr()), None).unwrap() };
            assert!(dw.iter().all(|v| v.is_finite()), "{isa:?}: {dw:?}");
        }
    }

    /// MobileNetV2's depthwise layers, float32, against im2col + GEMM:
    /// `cargo test --release -p oxnet-core --lib depthwise_timing -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn depthwise_timing() {
        let f32s = |n: usize, seed: u64| data(n, seed).into_iter().map(|v| v as f32).collect::<Vec<f32>>();
        let layers = [(32, 112, 1), (96, 112, 2), (144, 56, 1), (192, 28, 1), (384, 14, 1), (576, 14, 1), (960, 7, 1)];
        println!("threads: {}, isa: {:?}", crate::engine::threads(), isa());
        for batch in [1, 32] {
            let (mut tot_f, mut tot_b) = ([0.0; 2], [0.0; 2]);
            for &(c, hw, s) in &layers {
                let g = geom(batch, c, c, c, [1, hw, hw], [1, 3, 3], [1, s, s], [1; 3], [0, 1, 1]);
                let x = f32s(g.batch * g.c * g.x_len(), 1);
                let w = f32s(g.f * g.k_len(), 2);
                let b = f32s(g.f, 3);
                let mut y = vec![0f32; g.batch * g.f * g.y_len()];
                let dy = f32s(y.len(), 4);
                let (mut dx, mut dw, mut db) = (vec![0f32; x.len()], vec![0f32; w.len()], vec![0f32; g.f]);
                let reps = if batch == 1 { 51 } else { 7 };
                let (px, pw, pb, pdy) = (x.as_ptr(), w.as_ptr(), b.as_ptr(), dy.as_ptr());
                let fwd_new = time_ms(reps, || unsafe { conv_forward(&g, px, pw, Some(pb), y.as_mut_ptr()).unwrap() });
                let fwd_old = time_ms(reps, || unsafe {
                    conv_forward_general(&g, px, pw, &super::super::conv::Epilogue::bias(Some(pb)), y.as_mut_ptr()).unwrap()
                });
                let bwd_new = time_ms(reps, || unsafe {
                    conv_backward(&g, px, pw, pdy, Some(dx.as_mut_ptr()), Some(dw.as_mut_ptr()), Some(db.as_mut_ptr())).unwrap()
                });
                let bwd_old = time_ms(reps, || unsafe {
                    conv_backward_general(&g, px, pw, pdy, Some(dx.as_mut_ptr()), Some(dw.as_mut_ptr()), Some(db.as_mut_ptr())).unwrap()
                });
                let n = y.len();
                let copy = time_ms(reps, || y.copy_from_slice(&x[..n]));
                tot_f[0] += fwd_old;
                tot_f[1] += fwd_new;
                tot_b[0] += bwd_old;
                tot_b[1] += bwd_new;
                println!(
                    "batch {batch:2} c={c:3} {hw:3}x{hw:<3} s{s}: fwd {fwd_old:8.3} -> {fwd_new:7.3} ms ({:5.1}x)   bwd {bwd_old:8.3} -> {bwd_new:7.3} ms ({:5.1}x)   (copy of y: {copy:.3} ms)",
                    fwd_old / fwd_new,
                    bwd_old / bwd_new
                );
            }
            println!("batch {batch:2} total: fwd {:.3} -> {:.3} ms, bwd {:.3} -> {:.3} ms", tot_f[0], tot_f[1], tot_b[0], tot_b[1]);
        }
        // One input channel, many filters (LeNet's first layer), backward.
        let g = geom(64, 1, 20, 1, [1, 28, 28], [1, 5, 5], [1; 3], [1; 3], [0; 3]);
        let x = f32s(g.batch * g.x_len(), 1);
        let w = f32s(g.f * g.k_len(), 2);
        let dy = f32s(g.batch * g.f * g.y_len(), 4);
        let (mut dx, mut dw, mut db) = (vec![0f32; x.len()], vec![0f32; w.len()], vec![0f32; g.f]);
        let (px, pw, pdy) = (x.as_ptr(), w.as_ptr(), dy.as_ptr());
        let new = time_ms(21, || unsafe { conv_backward(&g, px, pw, pdy, None, Some(dw.as_mut_ptr()), Some(db.as_mut_ptr())).unwrap() });
        let old =
            time_ms(21, || unsafe { conv_backward_general(&g, px, pw, pdy, None, Some(dw.as_mut_ptr()), Some(db.as_mut_ptr())).unwrap() });
        let new_dx = time_ms(21, || unsafe { conv_backward(&g, px, pw, pdy, Some(dx.as_mut_ptr()), Some(dw.as_mut_ptr()), None).unwrap() });
        let old_dx =
            time_ms(21, || unsafe { conv_backward_general(&g, px, pw, pdy, Some(dx.as_mut_ptr()), Some(dw.as_mut_ptr()), None).unwrap() });
        println!("lenet conv1 (c=1, f=20) bwd weight: {old:.3} -> {new:.3} ms; with dx: {old_dx:.3} -> {new_dx:.3} ms");
    }
}
