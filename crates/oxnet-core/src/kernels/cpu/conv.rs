//! Host kernels for convolution (and, through its adjoints, deconvolution) and
//! pooling over 1-, 2- and 3-D images in channels-first layout.
//!
//! Convolution is lowered to GEMM: the input is unfolded (`im2col`) into a
//! `(C/g · k) × L_out` matrix per sample and group, multiplied by the
//! `(F/g) × (C/g · k)` weights with the GEMM of [`super::gemm`]. The data gradient
//! folds `Wᵀ·dy` back (`col2im`), the weight gradient accumulates `dy·colᵀ` over the
//! batch. The batch is split into one contiguous range per rayon thread, and each
//! range is walked in chunks of samples unfolded side by side, so that one wide GEMM
//! per chunk replaces a narrow one per sample (see [`Plan`]); forward, data
//! gradient and weight gradient share that walk ([`for_chunks`]). Scratch comes from
//! the host storage pool (no allocation per call once the pool is warm). Float32
//! forward passes go to a specialised kernel where one applies: [`conv_direct`]
//! (few input channels), [`conv_depthwise`], [`winograd`] (3×3 stride 1, many
//! tiles), [`conv_blocked`] (strided and other unfolded convolutions with enough
//! output pixels). Max pooling with 2×2 windows at stride 2, and 2-D max pooling
//! in general, have loops of their own.
//!
//! Every geometry is handled as 3-D: 1-D and 2-D images get leading spatial dims of
//! size 1. This module owns no shapes beyond what [`ConvGeom`] and [`PoolGeom`]
//! describe; parameter checking is the op layer's business (`op::nn_conv`).

use super::gemm::{gemm, gemm_threads, GemmElem};
use super::winograd;
use super::SendPtr;
use super::{conv_blocked, conv_depthwise, conv_direct, conv_dw_blocked, conv_fvec, conv_wgrad};
use crate::context::Context;
use crate::error::Result;
use crate::storage::Storage;
use std::ops::{Add, Mul};

/// Element types of the convolution kernels: float32, float64, float16.
pub trait ConvElem: GemmElem + Add<Output = Self> + Mul<Output = Self> + PartialOrd {}
impl<T: GemmElem + Add<Output = T> + Mul<Output = T> + PartialOrd> ConvElem for T {}

/// One convolution `y = w ⋆ x`: `x` is `(batch, c, x[0], x[1], x[2])`, `y` is
/// `(batch, f, y[0], y[1], y[2])`, the weight `(f, c / groups, k[0], k[1], k[2])`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvGeom {
    pub batch: usize,
    pub c: usize,
    pub f: usize,
    pub groups: usize,
    pub x: [usize; 3],
    pub y: [usize; 3],
    pub k: [usize; 3],
    pub s: [usize; 3],
    pub d: [usize; 3],
    pub p: [usize; 3],
}

impl ConvGeom {
    pub fn x_len(&self) -> usize {
        self.x.iter().product()
    }
    pub fn y_len(&self) -> usize {
        self.y.iter().product()
    }
    pub fn k_len(&self) -> usize {
        self.k.iter().product()
    }
    /// Input channels per group.
    pub fn cg(&self) -> usize {
        self.c / self.groups
    }
    /// Output channels per group.
    pub fn fg(&self) -> usize {
        self.f / self.groups
    }
    /// Rows of the unfolded input: `c/g · prod(k)`.
    pub fn col_rows(&self) -> usize {
        self.cg() * self.k_len()
    }
    /// A 1×1 kernel with stride 1 and no padding: the input is its own unfolding.
    pub fn pointwise(&self) -> bool {
        self.k == [1, 1, 1] && self.s == [1, 1, 1] && self.p == [0, 0, 0]
    }
    /// Output size along one axis for input size `x` (the usual formula); None when
    /// the dilated kernel does not fit the padded input.
    pub fn out_size(x: usize, k: usize, s: usize, d: usize, p: usize) -> Option<usize> {
        let dk = d * (k - 1) + 1;
        let padded = x + 2 * p;
        (padded >= dk).then(|| (padded - dk) / s + 1)
    }
}

/// Scratch memory from the host pool, viewed as `len` elements of `T`.
pub(super) struct Scratch<T> {
    _store: Option<Storage>,
    pub(super) ptr: *mut T,
}

impl<T> Scratch<T> {
    pub(super) fn new(len: usize) -> Result<Scratch<T>> {
        if len == 0 {
            return Ok(Scratch { _store: None, ptr: std::ptr::NonNull::dangling().as_ptr() });
        }
        let s = Storage::alloc(Context::default(), len * std::mem::size_of::<T>())?;
        let ptr = s.ptr() as *mut T;
        Ok(Scratch { _store: Some(s), ptr })
    }
}

/// Splits `0..n` into at most `tasks` contiguous ranges run on the pool; returns
/// the first error.
pub(super) fn par_ranges(n: usize, tasks: usize, f: &(dyn Fn(usize, usize, usize) -> Result<()> + Sync)) -> Result<()> {
    let (tasks, size) = split(n, tasks);
    if tasks == 1 {
        return f(0, 0, n);
    }
    let errs = parking_lot::Mutex::new(None);
    crate::engine::install(|| {
        rayon::scope(|s| {
            for t in 0..tasks {
                let (start, end) = (t * size, ((t + 1) * size).min(n));
                if start >= end {
                    continue;
                }
                let errs = &errs;
                s.spawn(move |_| {
                    if let Err(e) = f(t, start, end) {
                        errs.lock().get_or_insert(e);
                    }
                });
            }
        })
    });
    match errs.into_inner() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `0..n` in `tasks` ranges of `size` (the last may be shorter), none empty:
/// returns (tasks, size).
fn split(n: usize, tasks: usize) -> (usize, usize) {
    let size = n.div_ceil(tasks.clamp(1, n.max(1))).max(1);
    (n.div_ceil(size).max(1), size)
}

/// How to spread `batch` samples of `macs` multiply-adds each: (tasks, GEMM threads).
fn plan(batch: usize, macs: usize) -> (usize, usize) {
    let threads = crate::engine::threads().max(1);
    if threads == 1 || batch.saturating_mul(macs) < 1 << 16 {
        (1, 1)
    } else if batch >= threads {
        (threads.min(batch), 1)
    } else {
        (1, threads)
    }
}

/// The `ow` range `[lo, hi)` of `0..ylen` for which `ow * s + off` lies in `0..xlen`.
#[inline]
pub(super) fn valid_range(off: isize, s: usize, xlen: usize, ylen: usize) -> (usize, usize) {
    let s = s as isize;
    let lo = if off >= 0 { 0 } else { (-off + s - 1) / s };
    let room = xlen as isize - off;
    let hi = if room <= 0 { 0 } else { (room + s - 1) / s };
    let hi = (hi as usize).min(ylen);
    ((lo as usize).min(hi), hi)
}

/// Unfolds one group of one sample, `x` `(c/g, x...)`, into `col` `(c/g·k, y...)`
/// whose rows are `ld` elements apart (`ld >= prod(y)`; wider rows leave room for
/// the columns of other samples).
///
/// # Safety
/// `x` and `col` must be valid for those extents.
pub unsafe fn im2col<T: ConvElem>(g: &ConvGeom, x: *const T, col: *mut T, ld: usize) {
    let [_, xh, xw] = g.x;
    let [yd, yh, yw] = g.y;
    let xlen = g.x_len();
    let mut row = 0;
    for c in 0..g.cg() {
        let xc = x.add(c * xlen);
        for kd in 0..g.k[0] {
            let off_d = (kd * g.d[0]) as isize - g.p[0] as isize;
            for kh in 0..g.k[1] {
                let off_h = (kh * g.d[1]) as isize - g.p[1] as isize;
                for kw in 0..g.k[2] {
                    let off_w = (kw * g.d[2]) as isize - g.p[2] as isize;
                    let (lo, hi) = valid_range(off_w, g.s[2], xw, yw);
                    let dst = col.add(row * ld);
                    row += 1;
                    if yd == 1 && g.x[0] == 1 && off_d == 0 && g.s[2] == 1 {
                        // 1-D and 2-D images, unit stride along w (the usual case).
                        let (hlo, hhi) = valid_range(off_h, g.s[1], xh, yh);
                        let rows = Rows { step: g.s[1] * xw, yw, yh, hlo, hhi, lo, hi };
                        let first = hlo as isize * (g.s[1] * xw) as isize + off_h * xw as isize + lo as isize + off_w;
                        // (wrapping: with no valid row or column, `first` may lie
                        // outside the input; nothing is read then.)
                        unfold_rows(&rows, xc.wrapping_offset(first), dst);
                        continue;
                    }
                    for od in 0..yd {
                        let id = (od * g.s[0]) as isize + off_d;
                        for oh in 0..yh {
                            let ih = (oh * g.s[1]) as isize + off_h;
                            let drow = std::slice::from_raw_parts_mut(dst.add((od * yh + oh) * yw), yw);
                            if id < 0 || id >= g.x[0] as isize || ih < 0 || ih >= xh as isize {
                                drow.fill(T::zero());
                                continue;
                            }
                            let src = xc.add((id as usize * xh + ih as usize) * xw);
                            // (Guarded: an empty fill would still call memset.)
                            if lo > 0 {
                                drow[..lo].fill(T::zero());
                            }
                            if g.s[2] == 1 {
                                let from = src.offset(lo as isize + off_w);
                                copy_row(from, drow.as_mut_ptr().add(lo), hi - lo);
                            } else {
                                for (ow, v) in drow[lo..hi].iter_mut().enumerate() {
                                    *v = *src.offset(((ow + lo) * g.s[2]) as isize + off_w);
                                }
                            }
                            if hi < yw {
                                drow[hi..].fill(T::zero());
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The output rows `oh` of one unfolded row of a 2-D image (unit stride along w):
/// rows `hlo..hhi` read the input, every `step` elements from the first one's
/// column `lo`; columns outside `lo..hi` and the other rows are zero.
struct Rows {
    step: usize,
    yw: usize,
    yh: usize,
    hlo: usize,
    hhi: usize,
    lo: usize,
    hi: usize,
}

/// [`im2col`]'s inner loops for [`Rows`], kept out of line: inlined into the
/// general loops they were compiled with a dozen values spilled to the stack,
/// which made LeNet's second convolution 15% slower in one build than another.
///
/// # Safety
/// `src` (the first copied element) and `dst` (`yh · yw` elements) must be valid
/// for the extents `r` describes.
#[inline(never)]
unsafe fn unfold_rows<T: ConvElem>(r: &Rows, src: *const T, dst: *mut T) {
    let z = T::zero();
    if r.hlo > 0 {
        std::slice::from_raw_parts_mut(dst, r.hlo * r.yw).fill(z);
    }
    let n = r.hi - r.lo;
    for (i, oh) in (r.hlo..r.hhi).enumerate() {
        let d = dst.add(oh * r.yw);
        if r.lo > 0 {
            std::slice::from_raw_parts_mut(d, r.lo).fill(z);
        }
        copy_row(src.add(i * r.step), d.add(r.lo), n);
        if r.hi < r.yw {
            std::slice::from_raw_parts_mut(d.add(r.hi), r.yw - r.hi).fill(z);
        }
    }
    if r.hhi < r.yh {
        std::slice::from_raw_parts_mut(dst.add(r.hhi * r.yw), (r.yh - r.hhi) * r.yw).fill(z);
    }
}

/// Copies `n` elements from `src` to `dst` (not overlapping). Rows of unfolded
/// images are short (8 elements for LeNet's second convolution), and a call of
/// the C library's memcpy per row cost more than the copy: rows up to 32
/// elements are copied with fixed-size moves and no loop (a loop would be turned
/// back into a memcpy call by LLVM), longer ones by memcpy.
///
/// # Safety
/// `src` and `dst` must be valid for `n` elements and must not overlap.
#[inline(always)]
unsafe fn copy_row<T: Copy>(src: *const T, dst: *mut T, n: usize) {
    if n > 32 {
        std::ptr::copy_nonoverlapping(src, dst, n);
        return;
    }
    #[inline(always)]
    unsafe fn block<T: Copy, const N: usize>(src: *const T, dst: *mut T, at: usize) {
        (dst.add(at) as *mut [T; N]).write_unaligned((src.add(at) as *const [T; N]).read_unaligned());
    }
    if n >= 8 {
        block::<T, 8>(src, dst, 0);
    }
    if n >= 16 {
        block::<T, 8>(src, dst, 8);
    }
    if n >= 24 {
        block::<T, 8>(src, dst, 16);
    }
    if n >= 32 {
        block::<T, 8>(src, dst, 24);
    }
    let mut at = n & !7;
    if n & 4 != 0 {
        block::<T, 4>(src, dst, at);
        at += 4;
    }
    if n & 2 != 0 {
        block::<T, 2>(src, dst, at);
        at += 2;
    }
    if n & 1 != 0 {
        block::<T, 1>(src, dst, at);
    }
}

/// Folds `col` `(c/g·k, y...)` (rows `ld` elements apart) back onto `x` `(c/g, x...)`,
/// adding to what is there.
///
/// # Safety
/// `x` and `col` must be valid for those extents and must not overlap.
pub unsafe fn col2im<T: ConvElem>(g: &ConvGeom, col: *const T, x: *mut T, ld: usize) {
    let [_, xh, xw] = g.x;
    let [yd, yh, yw] = g.y;
    let xlen = g.x_len();
    let mut row = 0;
    for c in 0..g.cg() {
        let xc = x.add(c * xlen);
        for kd in 0..g.k[0] {
            let off_d = (kd * g.d[0]) as isize - g.p[0] as isize;
            for kh in 0..g.k[1] {
                let off_h = (kh * g.d[1]) as isize - g.p[1] as isize;
                for kw in 0..g.k[2] {
                    let off_w = (kw * g.d[2]) as isize - g.p[2] as isize;
                    let (lo, hi) = valid_range(off_w, g.s[2], xw, yw);
                    let src = col.add(row * ld);
                    row += 1;
                    if lo >= hi {
                        continue;
                    }
                    for od in 0..yd {
                        let id = (od * g.s[0]) as isize + off_d;
                        if id < 0 || id >= g.x[0] as isize {
                            continue;
                        }
                        for oh in 0..yh {
                            let ih = (oh * g.s[1]) as isize + off_h;
                            if ih < 0 || ih >= xh as isize {
                                continue;
                            }
                            let srow = src.add((od * yh + oh) * yw);
                            let dst = xc.add((id as usize * xh + ih as usize) * xw);
                            if g.s[2] == 1 {
                                let d = std::slice::from_raw_parts_mut(dst.offset(lo as isize + off_w), hi - lo);
                                let s = std::slice::from_raw_parts(srow.add(lo), hi - lo);
                                for (a, b) in d.iter_mut().zip(s) {
                                    *a = *a + *b;
                                }
                            } else {
                                for ow in lo..hi {
                                    let p = dst.offset((ow * g.s[2]) as isize + off_w);
                                    *p = *p + *srow.add(ow);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `y[n, f, :] += bias[f]`.
///
/// # Safety
/// `y` must hold `batch · ch · len` elements and `bias` `ch`.
pub unsafe fn add_bias<T: ConvElem>(y: *mut T, bias: *const T, batch: usize, ch: usize, len: usize) {
    let py = SendPtr(y);
    let pb = SendPtr(bias as *mut T);
    super::par_for(batch * ch, (1 << 14) / len.max(1) + 1, move |s, e| {
        for row in s..e {
            // SAFETY: rows are disjoint; extents as the caller promised.
            unsafe {
                let b = *pb.get().add(row % ch);
                let r = std::slice::from_raw_parts_mut(py.get().add(row * len), len);
                for v in r {
                    *v = *v + b;
                }
            }
        }
    });
}

/// `out[f] = Σ_n Σ_i y[n, f, i]`, accumulated in float64.
///
/// # Safety
/// `y` must hold `batch · ch · len` elements and `out` `ch`.
pub unsafe fn channel_sum<T: ConvElem>(y: *const T, out: *mut T, batch: usize, ch: usize, len: usize) {
    let py = SendPtr(y as *mut T);
    let po = SendPtr(out);
    super::par_for(ch, (1 << 16) / (batch * len).max(1) + 1, move |s, e| {
        for f in s..e {
            // Eight independent partial sums: the adds pipeline (and vectorise)
            // instead of waiting on one another.
            let mut acc = [0.0f64; 8];
            for n in 0..batch {
                // SAFETY: reads within the extents the caller promised.
                let r = unsafe { std::slice::from_raw_parts(py.get().add((n * ch + f) * len), len) };
                let mut it = r.chunks_exact(8);
                for c in &mut it {
                    for (a, v) in acc.iter_mut().zip(c) {
                        *a += v.to_f64();
                    }
                }
                for (a, v) in acc.iter_mut().zip(it.remainder()) {
                    *a += v.to_f64();
                }
            }
            // SAFETY: each task writes its own channels.
            unsafe { *po.get().add(f) = T::from_f64(acc.iter().sum()) };
        }
    });
}

/// How a convolution walks its batch: `tasks` contiguous ranges of samples on the
/// pool, each in chunks of up to `chunk` samples whose unfolded inputs sit side by
/// side in one `(c/g·k) × (chunk·L_out)` matrix. One GEMM per chunk and group then
/// covers them all, so that small samples do not pay a GEMM call (and a packing of
/// the weights) each; large samples go one per chunk (see [`CHUNK_ELEMS`]).
/// `gemm_th`: threads per GEMM (more than one only when the batch is too small to
/// split).
struct Plan {
    tasks: usize,
    chunk: usize,
    gemm_th: usize,
}

/// Unfolded elements per chunk. Samples are chunked only when they are small
/// (under 8K unfolded elements): measured on LeNet's convolutions (14K and 32K
/// unfolded elements per sample, 2 cores), 1 MiB chunks were 1.3-1.6x slower than a
/// GEMM per sample, the wide product and the copy out of `tmp` costing more than
/// packing the weights once per sample.
const CHUNK_ELEMS: usize = 1 << 13;

fn conv_plan(g: &ConvGeom) -> Plan {
    let (tasks, gemm_th) = plan(g.batch, g.f * g.col_rows() * g.y_len());
    let (tasks, size) = split(g.batch, tasks);
    let cap = (CHUNK_ELEMS / (g.col_rows() * g.y_len()).max(1)).max(1);
    let chunk = size.div_ceil(size.div_ceil(cap).max(1)).max(1);
    Plan { tasks, chunk, gemm_th }
}

/// Runs `f(task, n0, nb, first, col, tmp)` over the chunks `n0..n0 + nb` of every
/// task's range of samples (`first`: the task's first chunk), each task with its
/// own scratch: `col` for `col_rows × chunk·L_out` elements (none for a pointwise
/// convolution taken one sample at a time) and `tmp` for `f/g × chunk·L_out` (none
/// when chunks are single samples).
#[allow(clippy::type_complexity)]
fn for_chunks<T: ConvElem>(
    g: &ConvGeom,
    p: &Plan,
    f: &(dyn Fn(usize, usize, usize, bool, *mut T, *mut T) -> Result<()> + Sync),
) -> Result<()> {
    let width = p.chunk * g.y_len();
    let col_len = if p.chunk == 1 && g.pointwise() { 0 } else { g.col_rows() * width };
    let tmp_len = if p.chunk > 1 { g.fg() * width } else { 0 };
    par_ranges(g.batch, p.tasks, &|t, start, end| {
        let col = Scratch::<T>::new(col_len)?;
        let tmp = Scratch::<T>::new(tmp_len)?;
        let mut n0 = start;
        while n0 < end {
            let nb = p.chunk.min(end - n0);
            f(t, n0, nb, n0 == start, col.ptr, tmp.ptr)?;
            n0 += nb;
        }
        Ok(())
    })
}

/// The unfolded inputs of samples `n0..n0 + nb`, group `gi`, as a matrix and its row
/// stride: the input itself for a pointwise convolution of one sample, else `col`
/// filled side by side.
///
/// # Safety
/// `x` must hold the batch and `col` `col_rows × nb·L_out` elements (unless unused).
unsafe fn unfold<T: ConvElem>(g: &ConvGeom, x: *const T, n0: usize, nb: usize, gi: usize, col: *mut T) -> (*const T, usize) {
    let (xlen, ylen) = (g.x_len(), g.y_len());
    let xg = |n: usize| x.add((n * g.c + gi * g.cg()) * xlen);
    if nb == 1 && g.pointwise() {
        return (xg(n0), ylen);
    }
    let ld = nb * ylen;
    for j in 0..nb {
        im2col(g, xg(n0 + j), col.add(j * ylen), ld);
    }
    (col, ld)
}

/// What the forward pass does to each output after the sum:
/// `y = clamp(y · scale[f] + bias[f] + residual, lo, hi)`, each part optional.
/// `residual` has the output's layout. Fused inference graphs use the scale and
/// bias for a following BatchNorm, the residual for a residual add, the clamp for
/// ReLU (`(0, ∞)`) or ReLU6.
#[derive(Clone, Copy)]
pub struct Epilogue<T> {
    pub scale: Option<*const T>,
    pub bias: Option<*const T>,
    pub residual: Option<*const T>,
    pub clamp: Option<(T, T)>,
}

// SAFETY: the pointers are only read, by the kernels the caller hands them to,
// under that call's safety contract.
unsafe impl<T> Send for Epilogue<T> {}
unsafe impl<T> Sync for Epilogue<T> {}

impl<T> Epilogue<T> {
    pub fn bias(bias: Option<*const T>) -> Epilogue<T> {
        Epilogue { scale: None, bias, residual: None, clamp: None }
    }
    /// Whether the epilogue changes nothing.
    pub fn is_plain(&self) -> bool {
        self.scale.is_none() && self.bias.is_none() && self.residual.is_none() && self.clamp.is_none()
    }
}

/// `y[i] = clamp(y[i] · s + b + r[i])` over one row (`s`, `r` optional).
#[inline(always)]
unsafe fn finish_row<T: ConvElem>(y: *mut T, s: Option<T>, b: T, r: Option<*const T>, clamp: Option<(T, T)>, len: usize) {
    if is_f32::<T>() {
        // T is f32: the casts change nothing.
        let s = s.map(|s| *(&s as *const T as *const f32));
        let b = *(&b as *const T as *const f32);
        let (lo, hi) = match clamp {
            Some((lo, hi)) => (*(&lo as *const T as *const f32), *(&hi as *const T as *const f32)),
            None => (f32::NEG_INFINITY, f32::INFINITY),
        };
        let row = std::slice::from_raw_parts_mut(y as *mut f32, len);
        let r = r.map(|r| std::slice::from_raw_parts(r as *const f32, len));
        finish_row_f32(row, s.unwrap_or(1.0), b, r.unwrap_or(&[]), lo, hi);
        return;
    }
    let row = std::slice::from_raw_parts_mut(y, len);
    if let Some(s) = s {
        for v in row.iter_mut() {
            *v = *v * s;
        }
    }
    match r {
        Some(r) => {
            let r = std::slice::from_raw_parts(r, len);
            for (v, a) in row.iter_mut().zip(r) {
                *v = *v + b + *a;
            }
        }
        None => {
            for v in row.iter_mut() {
                *v = *v + b;
            }
        }
    }
    if let Some((lo, hi)) = clamp {
        for v in row.iter_mut() {
            // (NaN stays NaN, as MXNet's relu keeps it.)
            if *v < lo {
                *v = lo;
            } else if *v > hi {
                *v = hi;
            }
        }
    }
}

isa_dispatch! {
    /// The float32 epilogue in one vectorised pass: `y[i] = clamp(y[i]·s + b + r[i],
    /// lo, hi)`, `r` empty for none. The same arithmetic as the generic loops
    /// (`s = 1`, `b = 0`, `lo = -∞`, `hi = ∞` change nothing: multiplying by one
    /// and the comparisons are exact, and `+ 0` is what the generic loop adds
    /// without a bias); NaN stays NaN.
    pub fn finish_row_f32(y: &mut [f32], s: f32, b: f32, r: &[f32], lo: f32, hi: f32) => finish_row_f32_impl,
    check r.is_empty() || r.len() == y.len()
}

#[inline(always)]
fn finish_row_f32_impl(y: &mut [f32], s: f32, b: f32, r: &[f32], lo: f32, hi: f32) {
    #[inline(always)]
    fn clamp(v: f32, lo: f32, hi: f32) -> f32 {
        if v < lo {
            lo
        } else if v > hi {
            hi
        } else {
            v
        }
    }
    if r.is_empty() {
        for v in y.iter_mut() {
            *v = clamp(*v * s + b, lo, hi);
        }
    } else {
        for (v, a) in y.iter_mut().zip(r) {
            *v = clamp(*v * s + b + *a, lo, hi);
        }
    }
}

/// Stores 16 raw sums `v` of output row `f` (a filter) at `y[at ..]`, lanes `mask`,
/// through `ep` with [`finish_row_f32`]'s arithmetic (`v·s + b (+ r)`, clamped; a
/// plain epilogue stores `v` as it is): the AVX-512 kernels that hold their sums
/// transposed finish them on the way out.
///
/// # Safety
/// `y` (and `ep`'s residual) must be valid for the masked lanes at `at`; `ep`'s
/// scale and bias must hold filter `f`; the CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) unsafe fn finish_store16(ep: &Epilogue<f32>, f: usize, v: std::arch::x86_64::__m512, y: *mut f32, at: usize, mask: u16) {
    use std::arch::x86_64::*;
    let mut o = v;
    if !ep.is_plain() {
        let (lo, hi) = ep.clamp.unwrap_or((f32::NEG_INFINITY, f32::INFINITY));
        let s = ep.scale.map_or(1.0, |s| *s.add(f));
        let b = ep.bias.map_or(0.0, |b| *b.add(f));
        o = _mm512_add_ps(_mm512_mul_ps(o, _mm512_set1_ps(s)), _mm512_set1_ps(b));
        if let Some(r) = ep.residual {
            o = _mm512_add_ps(o, _mm512_maskz_loadu_ps(mask, r.add(at)));
        }
        o = _mm512_min_ps(_mm512_set1_ps(hi), _mm512_max_ps(_mm512_set1_ps(lo), o));
    }
    _mm512_mask_storeu_ps(y.add(at), mask, o);
}

/// Applies `ep` to a raw output `y` of `g` (for kernels without an epilogue).
unsafe fn finish_output<T: ConvElem>(g: &ConvGeom, ep: &Epilogue<T>, y: *mut T) {
    if ep.is_plain() {
        return;
    }
    let py = SendPtr(y);
    super::par_for(g.batch * g.f, (1 << 14) / g.y_len().max(1) + 1, move |s, e| {
        for row in s..e {
            // SAFETY: rows are disjoint; extents as the caller promised.
            unsafe { finish_output_row(g, ep, py.get(), row) };
        }
    });
}

/// Applies `ep` to output row `row` (`sample · f + filter`) of `y`.
///
/// # Safety
/// As for [`finish_output`], and nothing else may access that row meanwhile.
#[inline]
unsafe fn finish_output_row<T: ConvElem>(g: &ConvGeom, ep: &Epilogue<T>, y: *mut T, row: usize) {
    let ylen = g.y_len();
    let f = row % g.f;
    let sv = ep.scale.map(|v| *v.add(f));
    let bv = ep.bias.map_or(T::zero(), |v| *v.add(f));
    finish_row(y.add(row * ylen), sv, bv, ep.residual.map(|r| r.add(row * ylen)), ep.clamp, ylen);
}

/// Forward convolution: `y = w ⋆ x (+ bias)`; `y` is overwritten.
///
/// # Safety
/// The pointers must be valid for the extents `g` gives; `y` must not overlap the
/// inputs and nothing else may access it meanwhile.
pub unsafe fn conv_forward<T: ConvElem>(g: &ConvGeom, x: *const T, w: *const T, bias: Option<*const T>, y: *mut T) -> Result<()> {
    conv_forward_fused(g, x, w, &Epilogue::bias(bias), y)
}

/// Forward convolution with an epilogue: `y = ep(w ⋆ x)`; `y` is overwritten.
///
/// # Safety
/// As for [`conv_forward`]; `ep`'s bias holds `f` elements and its residual the
/// output's extent (it may not overlap `y`).
pub unsafe fn conv_forward_fused<T: ConvElem>(g: &ConvGeom, x: *const T, w: *const T, ep: &Epilogue<T>, y: *mut T) -> Result<()> {
    if is_f32::<T>() && conv_direct::applies(g) {
        // T is f32: the casts change nothing.
        conv_direct::forward(g, x as *const f32, w as *const f32, None, y as *mut f32)?;
        finish_output(g, ep, y);
        return Ok(());
    }
    if is_f32::<T>() && conv_dw_blocked::applies(g) {
        // T is f32: the casts and the transmute change nothing.
        let ep32: &Epilogue<f32> = &*(ep as *const Epilogue<T> as *const Epilogue<f32>);
        return conv_dw_blocked::forward(g, x as *const f32, w as *const f32, ep32, y as *mut f32);
    }
    if conv_depthwise::applies::<T>(g) {
        if ep.is_plain() {
            return conv_depthwise::forward(g, x, w, None, y, None);
        }
        // Each plane is finished as soon as it is computed, while it is in cache.
        let (py, mult) = (SendPtr(y), g.f / g.c);
        let finish = move |q: usize| {
            let first = (q / g.c) * g.f + (q % g.c) * mult;
            for row in first..first + mult {
                // SAFETY: the depthwise task that just wrote input plane q's output
                // rows owns them.
                unsafe { finish_output_row(g, ep, py.get(), row) };
            }
        };
        return conv_depthwise::forward(g, x, w, None, y, Some(&finish));
    }
    if is_f32::<T>() && conv_blocked::pointwise_applies(g) {
        // T is f32: the transmute changes nothing.
        let ep32: &Epilogue<f32> = &*(ep as *const Epilogue<T> as *const Epilogue<f32>);
        return conv_blocked::forward_pointwise(g, x as *const f32, w as *const f32, ep32, y as *mut f32);
    }
    if is_f32::<T>() {
        if let Some(g1) = strided_pointwise(g) {
            // T is f32: the casts and the transmute change nothing.
            let ep32: &Epilogue<f32> = &*(ep as *const Epilogue<T> as *const Epilogue<f32>);
            return forward_strided_pointwise(g, &g1, x as *const f32, w as *const f32, ep32, y as *mut f32);
        }
    }
    if is_f32::<T>() && winograd::applies(g) {
        // T is f32: the transmute changes nothing.
        let ep32: &Epilogue<f32> = &*(ep as *const Epilogue<T> as *const Epilogue<f32>);
        return winograd::forward(g, x as *const f32, w as *const f32, ep32, y as *mut f32);
    }
    if is_f32::<T>() && conv_fvec::applies(g) {
        // T is f32: the casts and the transmute change nothing.
        let ep32: &Epilogue<f32> = &*(ep as *const Epilogue<T> as *const Epilogue<f32>);
        return conv_fvec::forward(g, x as *const f32, w as *const f32, ep32, y as *mut f32);
    }
    if is_f32::<T>() && conv_blocked::applies(g) {
        // T is f32: the transmute changes nothing.
        let ep32: &Epilogue<f32> = &*(ep as *const Epilogue<T> as *const Epilogue<f32>);
        return conv_blocked::forward(g, x as *const f32, w as *const f32, ep32, y as *mut f32);
    }
    conv_forward_general(g, x, w, ep, y)
}

/// For a strided, unpadded 1×1 convolution (ResNet's downsampling shortcuts and
/// ResNet-50's strided bottleneck entries): the stride-1 geometry of the same
/// convolution on the subsampled input, when the pointwise path takes that.
fn strided_pointwise(g: &ConvGeom) -> Option<ConvGeom> {
    if g.k != [1, 1, 1] || g.p != [0, 0, 0] || g.s == [1, 1, 1] || g.groups != 1 {
        return None;
    }
    let g1 = ConvGeom { x: g.y, s: [1, 1, 1], d: [1, 1, 1], ..*g };
    conv_blocked::pointwise_applies(&g1).then_some(g1)
}

/// [`conv_forward_fused`] for [`strided_pointwise`] geometries: the input pixels
/// the convolution reads are gathered into a dense `c × L_out` copy per image (a
/// quarter or less of the input at stride 2), then the pointwise path runs on it.
///
/// # Safety
/// As for [`conv_forward_fused`]; `g1` is `strided_pointwise(g)`.
unsafe fn forward_strided_pointwise(
    g: &ConvGeom,
    g1: &ConvGeom,
    x: *const f32,
    w: *const f32,
    ep: &Epilogue<f32>,
    y: *mut f32,
) -> Result<()> {
    let (xlen, ylen) = (g.x_len(), g.y_len());
    let planes = g.batch * g.c;
    let sub = Scratch::<f32>::new(planes * ylen)?;
    let (px, ps) = (SendPtr(x as *mut f32), SendPtr(sub.ptr));
    let [yd, yh, yw] = g.y;
    let [_, xh, xw] = g.x;
    super::par_for(planes, (1 << 14) / ylen.max(1) + 1, move |p0, p1| {
        for p in p0..p1 {
            // SAFETY: plane p of x, read at pixels inside it (unpadded, 1×1); plane p
            // of the copy is this task's.
            unsafe {
                let (src, dst) = (px.get().add(p * xlen) as *const f32, ps.get().add(p * ylen));
                let mut o = 0;
                for od in 0..yd {
                    for oh in 0..yh {
                        let row = src.add((od * g.s[0] * xh + oh * g.s[1]) * xw);
                        for ow in 0..yw {
                            *dst.add(o) = *row.add(ow * g.s[2]);
                            o += 1;
                        }
                    }
                }
            }
        }
    });
    conv_blocked::forward_pointwise(g1, sub.ptr, w, ep, y)
}

/// Output elements per block of [`gemm_blocks`]: 256 KiB of float32, a part of
/// one core's L2 cache, so that the epilogue reads the block from there.
const BLOCK_ELEMS: usize = 1 << 16;

/// `y = w · src` for one sample: `w` `fg × kk` (rows `kk` apart), `src` `kk × ylen`
/// (rows `ld` apart), `y` `fg × ylen`; in blocks of filters × columns of at most
/// about [`BLOCK_ELEMS`], spread over `threads` tasks, each block handed to
/// `fin(f0, f1, c0, c1)` right after its product, while it is in cache. One sample
/// has no batch to split: the blocks give the threads their work (columns first,
/// filters where the columns are too few).
///
/// # Safety
/// The pointers must be valid for those extents; nothing else may access `y`.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_blocks<T: ConvElem>(
    fg: usize,
    ylen: usize,
    kk: usize,
    w: *const T,
    src: *const T,
    ld: usize,
    y: *mut T,
    threads: usize,
    fin: &(dyn Fn(usize, usize, usize, usize) + Sync),
) -> Result<()> {
    let threads = threads.max(1);
    // Column chunks of at least 64 columns (a multiple of 16), as many as the block
    // size asks, a multiple of the threads when more than one.
    let mut cc = (fg * ylen).div_ceil(BLOCK_ELEMS).clamp(1, ylen.div_ceil(64).max(1));
    if cc > 1 && threads > 1 {
        cc = cc.div_ceil(threads) * threads;
    }
    let cw = ylen.div_ceil(cc).next_multiple_of(16).min(ylen.max(1));
    let cc = ylen.div_ceil(cw).max(1);
    // Filter blocks (multiples of 8 rows) where the chunks are fewer than threads.
    let fb = if cc < threads { (threads / cc).min(fg.div_ceil(8)).max(1) } else { 1 };
    let fw = fg.div_ceil(fb).next_multiple_of(8).min(fg.max(1));
    let fb = fg.div_ceil(fw).max(1);
    let blocks = fb * cc;
    let (pw, ps, py) = (SendPtr(w as *mut T), SendPtr(src as *mut T), SendPtr(y));
    if blocks == 1 {
        gemm_threads(fg, ylen, kk, T::from_f64(1.0), w, kk, false, src, ld, false, T::zero(), y, ylen, threads);
        fin(0, fg, 0, ylen);
        return Ok(());
    }
    par_ranges(blocks, threads.min(blocks), &|_, b0, b1| {
        for b in b0..b1 {
            let (f0, c0) = ((b / cc) * fw, (b % cc) * cw);
            let (f1, c1) = ((f0 + fw).min(fg), (c0 + cw).min(ylen));
            // SAFETY: block b's rows f0..f1 and columns c0..c1 of y are its own;
            // the reads stay within w and src.
            unsafe {
                gemm_threads(
                    f1 - f0,
                    c1 - c0,
                    kk,
                    T::from_f64(1.0),
                    pw.get().add(f0 * kk),
                    kk,
                    false,
                    ps.get().add(c0),
                    ld,
                    false,
                    T::zero(),
                    py.get().add(f0 * ylen + c0),
                    ylen,
                    1,
                );
            }
            fin(f0, f1, c0, c1);
        }
        Ok(())
    })
}

/// [`conv_forward_fused`] by im2col + GEMM, whatever the shape.
///
/// # Safety
/// As for [`conv_forward_fused`].
pub unsafe fn conv_forward_general<T: ConvElem>(g: &ConvGeom, x: *const T, w: *const T, ep: &Epilogue<T>, y: *mut T) -> Result<()> {
    let (fg, kk, ylen) = (g.fg(), g.col_rows(), g.y_len());
    let p = conv_plan(g);
    let (px, pw, py) = (SendPtr(x as *mut T), SendPtr(w as *mut T), SendPtr(y));
    let pbias = ep.bias.map(|b| SendPtr(b as *mut T));
    let pscale = ep.scale.map(|b| SendPtr(b as *mut T));
    let pres = ep.residual.map(|r| SendPtr(r as *mut T));
    let clamp = ep.clamp;
    let plain = pscale.is_none() && pbias.is_none() && pres.is_none() && clamp.is_none();
    for_chunks::<T>(g, &p, &|_, n0, nb, _, col, tmp| {
        for gi in 0..g.groups {
            // SAFETY: offsets stay within the chunk's samples of group gi and the
            // task's own scratch; chunks write disjoint samples of y.
            unsafe {
                let (src, ld) = unfold(g, px.get(), n0, nb, gi, col);
                let wg = pw.get().add(gi * fg * kk);
                let off = |n: usize| (n * g.f + gi * fg) * ylen;
                let bv = |f: usize| pbias.map_or(T::zero(), |b| *b.get().add(gi * fg + f));
                let sv = |f: usize| pscale.map(|v| *v.get().add(gi * fg + f));
                let res = |n: usize, f: usize| pres.map(|r| r.get().add(off(n) + f * ylen) as *const T);
                if nb == 1 {
                    let yn = SendPtr(py.get().add(off(n0)));
                    let fin = |f0: usize, f1: usize, c0: usize, c1: usize| {
                        if !plain {
                            for f in f0..f1 {
                                // (SAFETY: the block's rows and columns, just computed.)
                                finish_row(yn.get().add(f * ylen + c0), sv(f), bv(f), res(n0, f).map(|r| r.add(c0)), clamp, c1 - c0);
                            }
                        }
                    };
                    gemm_blocks(fg, ylen, kk, wg, src, ld, yn.get(), p.gemm_th, &fin)?;
                    continue;
                }
                // (f/g) × (nb·L_out) into tmp, then each sample's rows to y, finished.
                gemm_threads(fg, ld, kk, T::from_f64(1.0), wg, kk, false, src, ld, false, T::zero(), tmp, ld, p.gemm_th);
                for j in 0..nb {
                    for f in 0..fg {
                        let d = py.get().add(off(n0 + j) + f * ylen);
                        std::ptr::copy_nonoverlapping(tmp.add(f * ld + j * ylen), d, ylen);
                        if !plain {
                            finish_row(d, sv(f), bv(f), res(n0 + j, f), clamp, ylen);
                        }
                    }
                }
            }
        }
        Ok(())
    })
}

fn is_f32<T: 'static>() -> bool {
    std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>()
}

/// Gradients of a convolution, any of: the data gradient `dx = col2im(wᵀ · dy)`, the
/// weight gradient `dw = Σ_n dy_n · im2col(x_n)ᵀ` (per group) and the bias gradient
/// `db[f] = Σ dy[:, f, ...]`; each is overwritten. One pass over the batch serves
/// them all: a chunk's `dy` is gathered once, its input unfolded once, and `dw`
/// accumulates across the chunks of a task inside the GEMM (one partial sum per
/// task beyond the first, added at the end). `x` is read only for `dw`, `w` only
/// for `dx`. Depthwise convolutions go to [`conv_depthwise`].
///
/// # Safety
/// As for [`conv_forward`], with `dx`, `dw` and `db` the outputs.
pub unsafe fn conv_backward<T: ConvElem>(
    g: &ConvGeom,
    x: *const T,
    w: *const T,
    dy: *const T,
    dx: Option<*mut T>,
    dw: Option<*mut T>,
    db: Option<*mut T>,
) -> Result<()> {
    if conv_depthwise::applies::<T>(g) {
        return conv_depthwise::backward(g, x, w, dy, dx, dw, db);
    }
    // Float32 gradients a specialised kernel takes; the rest by im2col + GEMM.
    // (T is f32 wherever the casts run: they change nothing.)
    let mut dx = dx;
    if let Some(dxp) = dx {
        if is_f32::<T>() && winograd::backward_data_applies(g) {
            winograd::backward_data(g, w as *const f32, dy as *const f32, dxp as *mut f32)?;
            dx = None;
        }
    }
    let mut dw = dw;
    if let Some(dwp) = dw {
        if is_f32::<T>() && conv_wgrad::applies(g) {
            conv_wgrad::backward_weight(g, x as *const f32, dy as *const f32, dwp as *mut f32)?;
            dw = None;
        }
    }
    conv_backward_general(g, x, w, dy, dx, dw, db)
}

/// [`conv_backward`] by im2col + GEMM, whatever the geometry.
///
/// # Safety
/// As for [`conv_backward`].
pub unsafe fn conv_backward_general<T: ConvElem>(
    g: &ConvGeom,
    x: *const T,
    w: *const T,
    dy: *const T,
    dx: Option<*mut T>,
    dw: Option<*mut T>,
    db: Option<*mut T>,
) -> Result<()> {
    let (fg, kk, ylen, xlen, cg) = (g.fg(), g.col_rows(), g.y_len(), g.x_len(), g.cg());
    let w_len = g.f * kk;
    let p = conv_plan(g);
    if dx.is_some() || dw.is_some() {
        let partials = Scratch::<T>::new(if dw.is_some() { (p.tasks - 1) * w_len } else { 0 })?;
        let (px, pw, pdy, pp) = (SendPtr(x as *mut T), SendPtr(w as *mut T), SendPtr(dy as *mut T), SendPtr(partials.ptr));
        let (pdx, pdw) = (dx.map(SendPtr), dw.map(SendPtr));
        let pointwise = g.pointwise();
        for_chunks::<T>(g, &p, &|t, n0, nb, first, col, tmp| {
            for gi in 0..g.groups {
                // SAFETY: offsets stay within the chunk's samples of group gi, the
                // task's scratch and its own accumulator; chunks write disjoint
                // samples of dx.
                unsafe {
                    let dyg = |n: usize| pdy.get().add((n * g.f + gi * fg) * ylen) as *const T;
                    // The chunk's dy as one (f/g) × (nb·L_out) matrix.
                    let (dyc, ld) = if nb == 1 {
                        (dyg(n0), ylen)
                    } else {
                        let ld = nb * ylen;
                        for j in 0..nb {
                            for f in 0..fg {
                                std::ptr::copy_nonoverlapping(dyg(n0 + j).add(f * ylen), tmp.add(f * ld + j * ylen), ylen);
                            }
                        }
                        (tmp as *const T, ld)
                    };
                    if let Some(dw) = pdw {
                        let acc = if t == 0 { dw.get() } else { pp.get().add((t - 1) * w_len) };
                        let (src, lds) = unfold(g, px.get(), n0, nb, gi, col);
                        let beta = if first { T::zero() } else { T::from_f64(1.0) };
                        gemm_threads(
                            fg,
                            kk,
                            ld,
                            T::from_f64(1.0),
                            dyc,
                            ld,
                            false,
                            src,
                            lds,
                            true,
                            beta,
                            acc.add(gi * fg * kk),
                            kk,
                            p.gemm_th,
                        );
                    }
                    if let Some(dx) = pdx {
                        let dxg = |n: usize| dx.get().add((n * g.c + gi * cg) * xlen);
                        let wg = pw.get().add(gi * fg * kk);
                        if nb == 1 && pointwise {
                            gemm_threads(kk, ylen, fg, T::from_f64(1.0), wg, kk, true, dyc, ld, false, T::zero(), dxg(n0), ylen, p.gemm_th);
                            continue;
                        }
                        gemm_threads(kk, ld, fg, T::from_f64(1.0), wg, kk, true, dyc, ld, false, T::zero(), col, ld, p.gemm_th);
                        for j in 0..nb {
                            let d = dxg(n0 + j);
                            std::slice::from_raw_parts_mut(d, cg * xlen).fill(T::zero());
                            col2im(g, col.add(j * ylen), d, ld);
                        }
                    }
                }
            }
            Ok(())
        })?;
        if let Some(dw) = dw {
            let dws = std::slice::from_raw_parts_mut(dw, w_len);
            for t in 1..p.tasks {
                let part = std::slice::from_raw_parts(partials.ptr.add((t - 1) * w_len), w_len);
                for (a, b) in dws.iter_mut().zip(part) {
                    *a = *a + *b;
                }
            }
            if g.batch == 0 {
                dws.fill(T::zero());
            }
        }
    }
    if let Some(db) = db {
        channel_sum(dy, db, g.batch, g.f, ylen);
    }
    Ok(())
}

/// Data gradient of a convolution: `dx = col2im(wᵀ · dy)`; `dx` is overwritten.
/// (This is also the forward pass of a deconvolution.)
///
/// # Safety
/// As for [`conv_forward`], with `dx` the output.
pub unsafe fn conv_backward_data<T: ConvElem>(g: &ConvGeom, w: *const T, dy: *const T, dx: *mut T) -> Result<()> {
    conv_backward(g, std::ptr::null(), w, dy, Some(dx), None, None)
}

/// Weight gradient of a convolution: `dw = Σ_n dy_n · im2col(x_n)ᵀ` (per group),
/// and, when given, `db[f] = Σ dy[:, f, ...]`. Both are overwritten.
///
/// # Safety
/// As for [`conv_forward`], with `dw` and `db` the outputs.
pub unsafe fn conv_backward_weight<T: ConvElem>(g: &ConvGeom, x: *const T, dy: *const T, dw: *mut T, db: Option<*mut T>) -> Result<()> {
    conv_backward(g, x, std::ptr::null(), dy, None, Some(dw), db)
}

// ---- pooling ------------------------------------------------------------------

/// What a pooling window computes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PoolKind {
    Max,
    /// Mean; `include_pad`: divide by the window clipped to the padded input,
    /// else by the number of real elements.
    Avg {
        include_pad: bool,
    },
    Sum,
    /// `(Σ x^p)^(1/p)` (signs kept for odd `p`).
    Lp(i32),
}

/// A pooling of `(batch, ch, x...)` (or channels-last `(batch, x..., ch)`) to
/// `(batch, ch, y...)`; windows start at `o·s - p_lo` and are clipped to the input.
/// `p_hi` bounds the padded input at the end (`x + p_hi`) for counting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolGeom {
    pub batch: usize,
    pub ch: usize,
    pub x: [usize; 3],
    pub y: [usize; 3],
    pub k: [usize; 3],
    pub s: [usize; 3],
    pub p_lo: [usize; 3],
    pub p_hi: [usize; 3],
    pub channels_last: bool,
}

impl PoolGeom {
    /// (plane base offset, element stride) for plane `(n, c)` of an image with
    /// `len` positions.
    #[inline]
    fn plane(&self, plane: usize, len: usize) -> (usize, usize) {
        let (n, c) = (plane / self.ch, plane % self.ch);
        if self.channels_last {
            (n * len * self.ch + c, self.ch)
        } else {
            (plane * len, 1)
        }
    }
}

#[inline]
fn pow_p(v: f64, p: i32) -> f64 {
    match p {
        1 => v,
        2 => v * v,
        3 => v * v * v,
        _ => v.powi(p),
    }
}

#[inline]
fn root_p(v: f64, p: i32) -> f64 {
    match p {
        1 => v,
        2 => v.sqrt(),
        3 => v.cbrt(),
        _ => v.powf(1.0 / p as f64),
    }
}

/// One axis of a window: clipped `[lo, hi)` and the padded extent `hi_pad - lo_pad`.
#[inline]
fn window(o: usize, s: usize, k: usize, p_lo: usize, p_hi: usize, x: usize) -> (usize, usize, usize) {
    let start = (o * s) as isize - p_lo as isize;
    let end_pad = (start + k as isize).min((x + p_hi) as isize);
    let lo = start.max(0) as usize;
    let hi = (end_pad.max(0) as usize).min(x);
    let padded = (end_pad - start).max(0) as usize;
    (lo, hi.max(lo), padded)
}

/// Windows of output `o` (3-D index) of `g`: the clipped ranges and the padded size.
#[inline]
fn windows(g: &PoolGeom, od: usize, oh: usize, ow: usize) -> ([(usize, usize); 3], usize) {
    let a = window(od, g.s[0], g.k[0], g.p_lo[0], g.p_hi[0], g.x[0]);
    let b = window(oh, g.s[1], g.k[1], g.p_lo[1], g.p_hi[1], g.x[1]);
    let c = window(ow, g.s[2], g.k[2], g.p_lo[2], g.p_hi[2], g.x[2]);
    ([(a.0, a.1), (b.0, b.1), (c.0, c.1)], a.2 * b.2 * c.2)
}

/// A max pooling with 2×2 windows at stride 2, unpadded, channels-first, every window
/// inside the input (LeNet's and most CNNs'): it gets tight loops of its own.
fn is_max_2x2(g: &PoolGeom, kind: PoolKind) -> bool {
    kind == PoolKind::Max
        && !g.channels_last
        && g.k == [1, 2, 2]
        && g.s == [1, 2, 2]
        && g.p_lo == [0, 0, 0]
        && g.y[0] == g.x[0]
        && 2 * g.y[1] <= g.x[1]
        && 2 * g.y[2] <= g.x[2]
}

/// Runs `f(start, end)` over `0..planes`, one range per pool thread when the planes
/// (`per` elements each) are enough work to pay for it.
fn par_planes(planes: usize, per: usize, f: impl Fn(usize, usize) + Sync + Send) {
    let threads = crate::engine::threads().max(1);
    if threads == 1 || planes < 2 || planes.saturating_mul(per) < 1 << 15 {
        f(0, planes);
        return;
    }
    let size = planes.div_ceil(threads.min(planes));
    crate::engine::install(|| {
        rayon::scope(|s| {
            let f = &f;
            for start in (0..planes).step_by(size) {
                s.spawn(move |_| f(start, (start + size).min(planes)));
            }
        })
    });
}

/// The first maximal element of one 2×2 window (rows `r0`, `r1`, columns `2·ow`,
/// `2·ow + 1`) as (value, 0..4 in row-major window order).
#[inline(always)]
fn max4<T: ConvElem>(r0: &[T], r1: &[T], ow: usize) -> (T, usize) {
    let mut m = (r0[2 * ow], 0);
    for (i, v) in [r0[2 * ow + 1], r1[2 * ow], r1[2 * ow + 1]].into_iter().enumerate() {
        if v > m.0 {
            m = (v, i + 1);
        }
    }
    m
}

/// [`pool_forward`] for [`is_max_2x2`] geometries.
unsafe fn max_pool_2x2<T: ConvElem>(g: &PoolGeom, x: *const T, y: *mut T) {
    let [d, xh, xw] = g.x;
    let [_, yh, yw] = g.y;
    let (px, py) = (SendPtr(x as *mut T), SendPtr(y));
    par_planes(g.batch * g.ch * d, xh * xw, move |s, e| {
        for plane in s..e {
            // SAFETY: rows of this plane only (every window is inside the input);
            // planes are disjoint in y.
            unsafe {
                let xp = px.get().add(plane * xh * xw) as *const T;
                let yp = py.get().add(plane * yh * yw);
                for oh in 0..yh {
                    let r0 = std::slice::from_raw_parts(xp.add(2 * oh * xw), 2 * yw);
                    let r1 = std::slice::from_raw_parts(xp.add((2 * oh + 1) * xw), 2 * yw);
                    for (ow, o) in std::slice::from_raw_parts_mut(yp.add(oh * yw), yw).iter_mut().enumerate() {
                        *o = max4(r0, r1, ow).0;
                    }
                }
            }
        }
    });
}

/// A 2-D channels-first max pooling of any window, stride and padding (ResNet's
/// 3×3 stride-2 padded one): loops of its own, [`max_pool_2d`].
fn is_max_2d(g: &PoolGeom, kind: PoolKind) -> bool {
    kind == PoolKind::Max && !g.channels_last && g.x[0] == 1 && g.y[0] == 1 && g.k[0] == 1 && g.p_lo[0] == 0 && g.p_hi[0] == 0
}

/// [`pool_backward`] for [`is_max_2d`] geometries: each output's gradient goes to
/// the element the generic loop picks (the first maximal one in row-major window
/// order, by `>`), with the windows' clipped rows and columns tabled once instead
/// of worked out per output (ResNet's 3×3 stride-2 pooling of 32×64×112×112: the
/// generic loop took 5× its forward's time).
unsafe fn max_pool_2d_backward<T: ConvElem>(g: &PoolGeom, x: *const T, dy: *const T, dx: *mut T) {
    let [_, xh, xw] = g.x;
    let [_, yh, yw] = g.y;
    let span = |o: usize, ax: usize, len: usize| {
        let (lo, hi, _) = window(o, g.s[ax], g.k[ax], g.p_lo[ax], g.p_hi[ax], len);
        (lo, hi)
    };
    let rows: Vec<(usize, usize)> = (0..yh).map(|o| span(o, 1, xh)).collect();
    let cols: Vec<(usize, usize)> = (0..yw).map(|o| span(o, 2, xw)).collect();
    let (xlen, ylen) = (xh * xw, yh * yw);
    let (px, pdy, pdx) = (SendPtr(x as *mut T), SendPtr(dy as *mut T), SendPtr(dx));
    let work = ylen * g.k[1] * g.k[2];
    super::par_for(g.batch * g.ch, (1 << 15) / work.max(1) + 1, |s, e| {
        for plane in s..e {
            // SAFETY: within the plane's extents; planes are disjoint in dx.
            unsafe {
                let xp = px.get().add(plane * xlen) as *const T;
                let dyp = pdy.get().add(plane * ylen) as *const T;
                let dxp = std::slice::from_raw_parts_mut(pdx.get().add(plane * xlen), xlen);
                dxp.fill(T::zero());
                for (oh, &(r0, r1)) in rows.iter().enumerate() {
                    if r0 >= r1 {
                        continue;
                    }
                    for (ow, &(c0, c1)) in cols.iter().enumerate() {
                        if c0 >= c1 {
                            continue;
                        }
                        let mut at = r0 * xw + c0;
                        let mut m = *xp.add(at);
                        for ih in r0..r1 {
                            for iw in c0..c1 {
                                // (Selects, not a branch: which element wins is data
                                // the branch predictor cannot learn.)
                                let i = ih * xw + iw;
                                let v = *xp.add(i);
                                let gt = v > m;
                                m = if gt { v } else { m };
                                at = if gt { i } else { at };
                            }
                        }
                        dxp[at] = dxp[at] + *dyp.add(oh * yw + ow);
                    }
                }
            }
        }
    });
}

/// Outputs a block of [`max_pool_2d`] computes side by side (independent running
/// maxima, so that their compare-and-select chains overlap).
const POOL_BLOCK: usize = 8;

/// [`pool_forward`] for [`is_max_2d`] geometries, with the generic loop's result
/// (the first maximal element in row-major window order, by `>`; the lowest value
/// for a window of padding only). Each output row takes its clipped window rows
/// once; its outputs whose windows lie inside the row go [`POOL_BLOCK`] at a time
/// (measured on ResNet's 3×3 stride-2 pooling of 64×112×112, one core: 6.8 ms for
/// the generic loop, 0.4 ms for MXNet 1.9.1's).
unsafe fn max_pool_2d<T: ConvElem>(g: &PoolGeom, x: *const T, y: *mut T) {
    let [_, xh, xw] = g.x;
    let [_, yh, yw] = g.y;
    let (kw, sw) = (g.k[2], g.s[2]);
    let low = T::from_f64(lowest::<T>());
    // Clipped column windows of the outputs, and which are whole (k columns).
    let cols: Vec<(usize, usize)> = (0..yw)
        .map(|ow| {
            let (lo, hi, _) = window(ow, sw, kw, g.p_lo[2], g.p_hi[2], xw);
            (lo, hi)
        })
        .collect();
    let whole = |ow: usize| cols[ow].1 - cols[ow].0 == kw;
    // Float32 at stride 1 or 2 on AVX-512: 16 outputs per vector ([`max16_avx512`]).
    let wide = is_f32::<T>() && (sw == 1 || sw == 2) && super::isa() == super::Isa::Avx512;
    let (px, py) = (SendPtr(x as *mut T), SendPtr(y));
    let cols = &cols;
    par_planes(g.batch * g.ch, yh * yw * g.k[1] * kw, move |s, e| {
        for plane in s..e {
            // SAFETY: windows are clipped to the plane; planes are disjoint in y.
            unsafe {
                let xp = px.get().add(plane * xh * xw) as *const T;
                let yp = py.get().add(plane * yh * yw);
                for oh in 0..yh {
                    let (h0, h1, _) = window(oh, g.s[1], g.k[1], g.p_lo[1], g.p_hi[1], xh);
                    let out = std::slice::from_raw_parts_mut(yp.add(oh * yw), yw);
                    if h0 == h1 {
                        out.fill(low);
                        continue;
                    }
                    let mut ow = 0;
                    while ow < yw {
                        #[cfg(target_arch = "x86_64")]
                        if wide && ow + 16 > yw && yw >= 16 && ow > yw - 16 && whole(yw - 16) && whole(yw - 1) {
                            // The row's last 16 outputs, overlapping the block before
                            // (the same values again), instead of one at a time.
                            max16_avx512(
                                xp as *const f32,
                                xw,
                                (h0, h1),
                                cols[yw - 16].0,
                                kw,
                                sw,
                                out.as_mut_ptr().add(yw - 16) as *mut f32,
                            );
                            break;
                        }
                        #[cfg(target_arch = "x86_64")]
                        if wide && ow + 16 <= yw && whole(ow) && whole(ow + 15) {
                            // SAFETY: T is f32 (`wide`); whole windows of this plane;
                            // the CPU has AVX-512F.
                            max16_avx512(xp as *const f32, xw, (h0, h1), cols[ow].0, kw, sw, out.as_mut_ptr().add(ow) as *mut f32);
                            ow += 16;
                            continue;
                        }
                        if ow + POOL_BLOCK <= yw && whole(ow) && whole(ow + POOL_BLOCK - 1) {
                            // Whole windows, columns c0 + l·sw + j.
                            let c0 = cols[ow].0;
                            let mut m: [T; POOL_BLOCK] = std::array::from_fn(|l| *xp.add(h0 * xw + c0 + l * sw));
                            for ih in h0..h1 {
                                let row = xp.add(ih * xw + c0);
                                for j in 0..kw {
                                    for (l, ml) in m.iter_mut().enumerate() {
                                        let v = *row.add(l * sw + j);
                                        if v > *ml {
                                            *ml = v;
                                        }
                                    }
                                }
                            }
                            out[ow..ow + POOL_BLOCK].copy_from_slice(&m);
                            ow += POOL_BLOCK;
                            continue;
                        }
                        let (w0, w1) = cols[ow];
                        out[ow] = if w0 == w1 {
                            low
                        } else {
                            let mut m = *xp.add(h0 * xw + w0);
                            for ih in h0..h1 {
                                for &v in std::slice::from_raw_parts(xp.add(ih * xw + w0), w1 - w0) {
                                    if v > m {
                                        m = v;
                                    }
                                }
                            }
                            m
                        };
                        ow += 1;
                    }
                }
            }
        }
    });
}

/// 16 consecutive outputs of a max pooling row whose windows are whole (columns
/// `c0 + l·sw + j`, `j < kw`, rows `h0..h1`), stride 1 or 2: one vector per tap, the
/// taps in row-major window order, each folded in by `max(v, m)`, which is
/// `v > m ? v : m` (NaN or equal: `m` kept): the generic loop's result, bit for bit.
///
/// # Safety
/// Rows `h0..h1` of the plane at `xp` (`xw` columns) must hold the windows; `out`
/// 16 floats; the CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn max16_avx512(xp: *const f32, xw: usize, (h0, h1): (usize, usize), c0: usize, kw: usize, sw: usize, out: *mut f32) {
    use std::arch::x86_64::*;
    let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let mut m = _mm512_setzero_ps();
    for ih in h0..h1 {
        let row = xp.add(ih * xw + c0);
        for j in 0..kw {
            let v = if sw == 1 {
                _mm512_loadu_ps(row.add(j))
            } else {
                // Columns j, j + 2, ..., j + 30: the even elements of 31 (the 32nd
                // is not read: it may lie past the plane).
                let a = _mm512_loadu_ps(row.add(j));
                let b = _mm512_maskz_loadu_ps(0x7fff, row.add(j + 16));
                _mm512_permutex2var_ps(a, even, b)
            };
            m = if ih == h0 && j == 0 { v } else { _mm512_max_ps(v, m) };
        }
    }
    _mm512_storeu_ps(out, m);
}

/// [`pool_backward`] for [`is_max_2x2`] geometries: each output's gradient goes to
/// its window's first maximal element, found again from `x`; the rest is zero.
/// Which element of a window is its maximum is as good as random, so the element
/// is picked with arithmetic on the comparisons, not with branches: a mispredicted
/// branch or two per window made this 13 times slower than the forward pass
/// (2.2 ms against 0.17 ms for LeNet's first pooling on one core, 0.47 ms now).
unsafe fn max_pool_2x2_backward<T: ConvElem>(g: &PoolGeom, x: *const T, dy: *const T, dx: *mut T) {
    let [d, xh, xw] = g.x;
    let [_, yh, yw] = g.y;
    let (px, pdy, pdx) = (SendPtr(x as *mut T), SendPtr(dy as *mut T), SendPtr(dx));
    par_planes(g.batch * g.ch * d, xh * xw, move |s, e| {
        for plane in s..e {
            // SAFETY: as in max_pool_2x2; planes are disjoint in dx.
            unsafe {
                let xp = px.get().add(plane * xh * xw) as *const T;
                let dyp = pdy.get().add(plane * yh * yw) as *const T;
                let dxp = pdx.get().add(plane * xh * xw);
                std::slice::from_raw_parts_mut(dxp, xh * xw).fill(T::zero());
                for oh in 0..yh {
                    let r0 = std::slice::from_raw_parts(xp.add(2 * oh * xw), 2 * yw);
                    let r1 = std::slice::from_raw_parts(xp.add((2 * oh + 1) * xw), 2 * yw);
                    let gy = std::slice::from_raw_parts(dyp.add(oh * yw), yw);
                    let rows = std::slice::from_raw_parts_mut(dxp.add(2 * oh * xw), 2 * xw);
                    for (ow, &gv) in gy.iter().enumerate() {
                        let k = max4_packed(r0, r1, ow);
                        rows[(k >> 1) * xw + 2 * ow + (k & 1)] = gv;
                    }
                }
            }
        }
    });
}

/// The first maximal element of the 2×2 window `ow` of rows `r0`, `r1`, as its
/// (row, column) offsets packed into 0..4 (`2 * row + column`), computed without
/// data-dependent branches (same result as [`max4`]).
#[inline(always)]
fn max4_packed<T: ConvElem>(r0: &[T], r1: &[T], ow: usize) -> usize {
    let (a, b, c, e) = (r0[2 * ow], r0[2 * ow + 1], r1[2 * ow], r1[2 * ow + 1]);
    let tb = (b > a) as usize;
    let m1 = if b > a { b } else { a };
    let tc = (c > m1) as usize;
    let m2 = if c > m1 { c } else { m1 };
    let te = (e > m2) as usize;
    let i = tb + tc * (2 - tb);
    i + te * (3 - i)
}

/// Pooling forward; `y` is overwritten. A max window with no input element in it
/// (all padding) gives the lowest finite value.
///
/// # Safety
/// `x` and `y` must be valid for the extents of `g` and must not overlap.
pub unsafe fn pool_forward<T: ConvElem>(g: &PoolGeom, kind: PoolKind, x: *const T, y: *mut T) {
    if is_max_2x2(g, kind) {
        return max_pool_2x2(g, x, y);
    }
    if is_max_2d(g, kind) {
        return max_pool_2d(g, x, y);
    }
    if is_whole_plane_sum(g, kind) {
        return whole_plane_sum(g, kind, x, y);
    }
    let (xlen, ylen) = (g.x.iter().product::<usize>(), g.y.iter().product::<usize>());
    let [_, xh, xw] = g.x;
    let [yd, yh, yw] = g.y;
    let (px, py) = (SendPtr(x as *mut T), SendPtr(y));
    let planes = g.batch * g.ch;
    let work = ylen * g.k.iter().product::<usize>();
    super::par_for(planes, (1 << 15) / work.max(1) + 1, move |s, e| {
        for plane in s..e {
            let (xb, xs) = g.plane(plane, xlen);
            let (yb, ys) = g.plane(plane, ylen);
            // SAFETY: within the plane's extents; planes are disjoint in y.
            unsafe {
                let xp = px.get().add(xb) as *const T;
                let yp = py.get().add(yb);
                for od in 0..yd {
                    for oh in 0..yh {
                        for ow in 0..yw {
                            let (r, padded) = windows(g, od, oh, ow);
                            let out = yp.add(((od * yh + oh) * yw + ow) * ys);
                            match kind {
                                PoolKind::Max => {
                                    let mut m: Option<T> = None;
                                    for id in r[0].0..r[0].1 {
                                        for ih in r[1].0..r[1].1 {
                                            let row = xp.add((id * xh + ih) * xw * xs);
                                            for iw in r[2].0..r[2].1 {
                                                let v = *row.add(iw * xs);
                                                if m.is_none_or(|m| v > m) {
                                                    m = Some(v);
                                                }
                                            }
                                        }
                                    }
                                    *out = m.unwrap_or_else(|| T::from_f64(lowest::<T>()));
                                }
                                _ => {
                                    let mut acc = 0.0f64;
                                    let mut count = 0usize;
                                    for id in r[0].0..r[0].1 {
                                        for ih in r[1].0..r[1].1 {
                                            let row = xp.add((id * xh + ih) * xw * xs);
                                            for iw in r[2].0..r[2].1 {
                                                let v = (*row.add(iw * xs)).to_f64();
                                                acc += if let PoolKind::Lp(p) = kind { pow_p(v, p) } else { v };
                                                count += 1;
                                            }
                                        }
                                    }
                                    *out = T::from_f64(match kind {
                                        PoolKind::Avg { include_pad } => {
                                            let n = if include_pad { padded } else { count };
                                            if n == 0 {
                                                0.0
                                            } else {
                                                acc / n as f64
                                            }
                                        }
                                        PoolKind::Lp(p) => root_p(acc, p),
                                        _ => acc,
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
    });
}

/// An average or sum pooling whose one window is the whole unpadded plane (global
/// pooling, as at the end of ResNet and MobileNet), channels-first.
fn is_whole_plane_sum(g: &PoolGeom, kind: PoolKind) -> bool {
    matches!(kind, PoolKind::Avg { .. } | PoolKind::Sum)
        && !g.channels_last
        && g.y == [1, 1, 1]
        && g.k == g.x
        && g.p_lo == [0, 0, 0]
        && g.p_hi == [0, 0, 0]
}

/// [`pool_forward`] for [`is_whole_plane_sum`]: each plane summed in float64 over
/// eight independent partial sums (one chain of additions made the loop wait on
/// each addition's latency), then divided by its size for the average.
unsafe fn whole_plane_sum<T: ConvElem>(g: &PoolGeom, kind: PoolKind, x: *const T, y: *mut T) {
    let len = g.x.iter().product::<usize>();
    let (px, py) = (SendPtr(x as *mut T), SendPtr(y));
    super::par_for(g.batch * g.ch, (1 << 15) / len.max(1) + 1, move |s, e| {
        for plane in s..e {
            // SAFETY: plane `plane` of x and its one output; planes are disjoint in y.
            unsafe {
                let v = std::slice::from_raw_parts(px.get().add(plane * len) as *const T, len);
                let mut acc = [0.0f64; 8];
                let mut chunks = v.chunks_exact(8);
                for c in &mut chunks {
                    for (a, &t) in acc.iter_mut().zip(c) {
                        *a += t.to_f64();
                    }
                }
                for (a, &t) in acc.iter_mut().zip(chunks.remainder()) {
                    *a += t.to_f64();
                }
                let sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
                let out = if matches!(kind, PoolKind::Sum) || len == 0 { sum } else { sum / len as f64 };
                *py.get().add(plane) = T::from_f64(out);
            }
        }
    });
}

/// The lowest finite value of `T` (float16's is -65504).
fn lowest<T: ConvElem>() -> f64 {
    match std::mem::size_of::<T>() {
        2 => -65504.0,
        4 => f32::MIN as f64,
        _ => f64::MIN,
    }
}

/// Pooling backward: `dx` is overwritten with the gradient of the pooled output.
/// Max routes each output's gradient to the first maximal element of its window;
/// avg spreads it over the window's count; sum copies it; Lp scales it by
/// `(x / y)^(p-1)` (zero where `y` is zero).
///
/// # Safety
/// `x`, `y`, `dy` and `dx` must be valid for the extents of `g`; `dx` must not
/// overlap the others.
pub unsafe fn pool_backward<T: ConvElem>(g: &PoolGeom, kind: PoolKind, x: *const T, y: *const T, dy: *const T, dx: *mut T) {
    if is_max_2x2(g, kind) {
        return max_pool_2x2_backward(g, x, dy, dx);
    }
    if is_max_2d(g, kind) {
        return max_pool_2d_backward(g, x, dy, dx);
    }
    let (xlen, ylen) = (g.x.iter().product::<usize>(), g.y.iter().product::<usize>());
    let [_, xh, xw] = g.x;
    let [yd, yh, yw] = g.y;
    let (px, py, pdy, pdx) = (SendPtr(x as *mut T), SendPtr(y as *mut T), SendPtr(dy as *mut T), SendPtr(dx));
    let planes = g.batch * g.ch;
    let work = ylen * g.k.iter().product::<usize>();
    super::par_for(planes, (1 << 15) / work.max(1) + 1, move |s, e| {
        for plane in s..e {
            let (xb, xs) = g.plane(plane, xlen);
            let (yb, ys) = g.plane(plane, ylen);
            // SAFETY: within the plane's extents; planes are disjoint in dx.
            unsafe {
                let xp = px.get().add(xb) as *const T;
                let dxp = pdx.get().add(xb);
                for i in 0..xlen {
                    *dxp.add(i * xs) = T::zero();
                }
                for od in 0..yd {
                    for oh in 0..yh {
                        for ow in 0..yw {
                            let (r, padded) = windows(g, od, oh, ow);
                            let yi = yb + ((od * yh + oh) * yw + ow) * ys;
                            let gy = *pdy.get().add(yi);
                            match kind {
                                PoolKind::Max => {
                                    let mut best: Option<(T, usize)> = None;
                                    for id in r[0].0..r[0].1 {
                                        for ih in r[1].0..r[1].1 {
                                            for iw in r[2].0..r[2].1 {
                                                let at = ((id * xh + ih) * xw + iw) * xs;
                                                let v = *xp.add(at);
                                                if best.is_none_or(|(m, _)| v > m) {
                                                    best = Some((v, at));
                                                }
                                            }
                                        }
                                    }
                                    if let Some((_, at)) = best {
                                        *dxp.add(at) = *dxp.add(at) + gy;
                                    }
                                }
                                _ => {
                                    let scale = match kind {
                                        PoolKind::Avg { include_pad } => {
                                            let mut n = padded;
                                            if !include_pad {
                                                n = (r[0].1 - r[0].0) * (r[1].1 - r[1].0) * (r[2].1 - r[2].0);
                                            }
                                            if n == 0 {
                                                0.0
                                            } else {
                                                1.0 / n as f64
                                            }
                                        }
                                        _ => 1.0,
                                    };
                                    let gyf = gy.to_f64() * scale;
                                    let yv = (*py.get().add(yi)).to_f64();
                                    for id in r[0].0..r[0].1 {
                                        for ih in r[1].0..r[1].1 {
                                            for iw in r[2].0..r[2].1 {
                                                let at = ((id * xh + ih) * xw + iw) * xs;
                                                let gv = match kind {
                                                    PoolKind::Lp(p) => {
                                                        if yv == 0.0 {
                                                            0.0
                                                        } else {
                                                            gyf * pow_p((*xp.add(at)).to_f64() / yv, p - 1)
                                                        }
                                                    }
                                                    _ => gyf,
                                                };
                                                *dxp.add(at) = T::from_f64((*dxp.add(at)).to_f64() + gv);
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    });
}

/// Runs `gemm` for a fully-connected layer: `y (b×h) = x (b×k) · wᵀ (+ bias)`.
///
/// # Safety
/// Extents as described; `y` must not overlap the inputs.
pub unsafe fn fc_forward<T: ConvElem>(b: usize, k: usize, h: usize, x: *const T, w: *const T, bias: Option<*const T>, y: *mut T) {
    gemm(b, h, k, T::from_f64(1.0), x, k, false, w, k, true, T::zero(), y, h);
    if let Some(bias) = bias {
        let bias = std::slice::from_raw_parts(bias, h);
        for r in 0..b {
            for (v, bv) in std::slice::from_raw_parts_mut(y.add(r * h), h).iter_mut().zip(bias) {
                *v = *v + *bv;
            }
        }
    }
}

/// `out[j] = Σ_i y[i, j]` over a `rows × cols` matrix, accumulated in float64.
///
/// # Safety
/// `y` must hold `rows · cols` elements and `out` `cols`.
pub unsafe fn column_sum<T: ConvElem>(y: *const T, out: *mut T, rows: usize, cols: usize) {
    let mut acc = vec![0.0f64; cols];
    for r in 0..rows {
        for (a, v) in acc.iter_mut().zip(std::slice::from_raw_parts(y.add(r * cols), cols)) {
            *a += v.to_f64();
        }
    }
    for (j, a) in acc.into_iter().enumerate() {
        *out.add(j) = T::from_f64(a);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Convolution by its definition, in float64 (also the reference of
    /// `conv_depthwise`'s tests).
    pub(in crate::kernels::cpu) fn naive_conv(g: &ConvGeom, x: &[f64], w: &[f64]) -> Vec<f64> {
        let mut y = vec![0.0; g.batch * g.f * g.y_len()];
        let (cg, fg) = (g.cg(), g.fg());
        for n in 0..g.batch {
            for f in 0..g.f {
                let gi = f / fg;
                for od in 0..g.y[0] {
                    for oh in 0..g.y[1] {
                        for ow in 0..g.y[2] {
                            let mut acc = 0.0;
                            for c in 0..cg {
                                for kd in 0..g.k[0] {
                                    for kh in 0..g.k[1] {
                                        for kw in 0..g.k[2] {
                                            let id = (od * g.s[0] + kd * g.d[0]) as isize - g.p[0] as isize;
                                            let ih = (oh * g.s[1] + kh * g.d[1]) as isize - g.p[1] as isize;
                                            let iw = (ow * g.s[2] + kw * g.d[2]) as isize - g.p[2] as isize;
                                            if id < 0 || ih < 0 || iw < 0 {
                                                continue;
                                            }
                                            let (id, ih, iw) = (id as usize, ih as usize, iw as usize);
                                            if id >= g.x[0] || ih >= g.x[1] || iw >= g.x[2] {
                                                continue;
                                            }
                                            let xv = x[(((n * g.c + gi * cg + c) * g.x[0] + id) * g.x[1] + ih) * g.x[2] + iw];
                                            let wv = w[(((f * cg + c) * g.k[0] + kd) * g.k[1] + kh) * g.k[2] + kw];
                                            acc += xv * wv;
                                        }
                                    }
                                }
                            }
                            y[(((n * g.f + f) * g.y[0] + od) * g.y[1] + oh) * g.y[2] + ow] = acc;
                        }
                    }
                }
            }
        }
        y
    }

    pub(in crate::kernels::cpu) fn geom(
        batch: usize,
        c: usize,
        f: usize,
        groups: usize,
        x: [usize; 3],
        k: [usize; 3],
        s: [usize; 3],
        d: [usize; 3],
        p: [usize; 3],
    ) -> ConvGeom {
        let mut y = [0; 3];
        for i in 0..3 {
            y[i] = ConvGeom::out_size(x[i], k[i], s[i], d[i], p[i]).unwrap();
        }
        ConvGeom { batch, c, f, groups, x, y, k, s, d, p }
    }

    /// [`data`]'s sequence computed in float32 (the kernels' tests' inputs).
    pub(in crate::kernels::cpu) fn data_f32(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((s >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect()
    }

    pub(in crate::kernels::cpu) fn data(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((s >> 33) as f64 / (1u64 << 31) as f64) - 0.5
            })
            .collect()
    }

    #[test]
    fn forward_matches_naive() {
        for g in [
            geom(3, 4, 6, 2, [1, 7, 6], [1, 3, 2], [1, 2, 1], [1, 1, 2], [0, 1, 2]),
            geom(2, 3, 2, 1, [4, 5, 5], [2, 3, 3], [2, 1, 2], [1, 2, 1], [1, 1, 0]),
            geom(5, 2, 4, 1, [1, 1, 9], [1, 1, 1], [1, 1, 1], [1, 1, 1], [0, 0, 0]),
            geom(5, 2, 4, 2, [1, 1, 9], [1, 1, 4], [1, 1, 3], [1, 1, 1], [0, 0, 3]),
            // one sample (the unchunked paths), pointwise and not
            geom(1, 3, 5, 1, [1, 6, 7], [1, 1, 1], [1, 1, 1], [1, 1, 1], [0, 0, 0]),
            geom(1, 4, 2, 2, [1, 6, 7], [1, 3, 2], [1, 1, 1], [1, 1, 1], [0, 1, 0]),
            // enough work to split the batch across tasks, in several chunks each
            geom(9, 3, 8, 1, [1, 12, 12], [1, 3, 3], [1, 1, 1], [1, 1, 1], [0, 0, 0]),
            geom(7, 2, 6, 1, [1, 1, 40000], [1, 1, 2], [1, 1, 1], [1, 1, 1], [0, 0, 0]),
            geom(9, 1, 4, 1, [1, 1, 30000], [1, 1, 3], [1, 1, 1], [1, 1, 1], [0, 0, 0]),
        ] {
            let x = data(g.batch * g.c * g.x_len(), 1);
            let w = data(g.f * g.col_rows(), 2);
            let mut y = vec![0.0; g.batch * g.f * g.y_len()];
            unsafe { conv_forward(&g, x.as_ptr(), w.as_ptr(), None, y.as_mut_ptr()).unwrap() };
            let want = naive_conv(&g, &x, &w);
            for (a, b) in y.iter().zip(&want) {
                assert!((a - b).abs() < 1e-12, "{g:?}: {a} vs {b}");
            }
            // Adjoint identities: <conv(x), dy> = <x, conv_bwd_data(dy)> and
            // = <w, conv_bwd_weight(x, dy)>.
            let dy = data(y.len(), 3);
            let mut dx = vec![0.0; x.len()];
            let mut dw = vec![0.0; w.len()];
            let mut db = vec![0.0; g.f];
            unsafe {
                conv_backward_data(&g, w.as_ptr(), dy.as_ptr(), dx.as_mut_ptr()).unwrap();
                conv_backward_weight(&g, x.as_ptr(), dy.as_ptr(), dw.as_mut_ptr(), Some(db.as_mut_ptr())).unwrap();
            }
            let lhs: f64 = y.iter().zip(&dy).map(|(a, b)| a * b).sum();
            let rx: f64 = x.iter().zip(&dx).map(|(a, b)| a * b).sum();
            let rw: f64 = w.iter().zip(&dw).map(|(a, b)| a * b).sum();
            assert!((lhs - rx).abs() < 1e-10 && (lhs - rw).abs() < 1e-10, "{g:?}: {lhs} {rx} {rw}");
            let total: f64 = dy.iter().sum();
            assert!((db.iter().sum::<f64>() - total).abs() < 1e-10);
        }
    }

    /// The fused epilogue (scale, bias, residual, clamp, each optional) on every
    /// forward path: direct (few input channels), depthwise (finished plane by
    /// plane), im2col + GEMM (batch 1 and chunked), blocked; float32 and float64,
    /// against the plain convolution finished in float64. NaN in the residual stays
    /// NaN through the clamp.
    #[test]
    fn fused_epilogue_matches_plain_conv_then_epilogue() {
        fn check<T: ConvElem>(g: &ConvGeom, tol: f64) {
            let cast = |v: Vec<f64>| v.into_iter().map(T::from_f64).collect::<Vec<T>>();
            let x = cast(data(g.batch * g.c * g.x_len(), 11));
            let w = cast(data(g.f * g.col_rows(), 12));
            let ylen = g.batch * g.f * g.y_len();
            let mut plain = vec![T::zero(); ylen];
            unsafe { conv_forward_general(g, x.as_ptr(), w.as_ptr(), &Epilogue::bias(None), plain.as_mut_ptr()).unwrap() };
            let sc: Vec<T> = cast(data(g.f, 13).iter().map(|v| v * 3.0).collect());
            let b: Vec<T> = cast(data(g.f, 14));
            let mut r: Vec<T> = cast(data(ylen, 15));
            r[ylen / 2] = T::from_f64(f64::NAN);
            for mask in 0..16u32 {
                let ep = Epilogue {
                    scale: (mask & 1 != 0).then_some(sc.as_ptr()),
                    bias: (mask & 2 != 0).then_some(b.as_ptr()),
                    residual: (mask & 4 != 0).then_some(r.as_ptr()),
                    clamp: (mask & 8 != 0).then_some((T::from_f64(-0.05), T::from_f64(0.1))),
                };
                let mut y = vec![T::from_f64(7.0); ylen];
                unsafe { conv_forward_fused(g, x.as_ptr(), w.as_ptr(), &ep, y.as_mut_ptr()).unwrap() };
                for (i, got) in y.iter().enumerate() {
                    let f = (i / g.y_len()) % g.f;
                    let mut want = plain[i].to_f64();
                    if mask & 1 != 0 {
                        want *= sc[f].to_f64();
                    }
                    if mask & 2 != 0 {
                        want += b[f].to_f64();
                    }
                    if mask & 4 != 0 {
                        want += r[i].to_f64();
                    }
                    if mask & 8 != 0 && !want.is_nan() {
                        want = want.clamp(-0.05, 0.1);
                    }
                    let got = got.to_f64();
                    let ok = if want.is_nan() { got.is_nan() } else { (got - want).abs() <= tol * (1.0 + want.abs()) };
                    assert!(ok, "{g:?} mask {mask} at {i}: {got} vs {want}");
                }
            }
        }
        for g in [
            // few input channels (the direct kernel), depthwise with and without a
            // channel multiplier and with a stride, pointwise at batch 1 and 3,
            // strided 3×3 (the blocked kernel), grouped (the general path)
            geom(2, 3, 20, 1, [1, 30, 33], [1, 3, 3], [1, 1, 1], [1, 1, 1], [0, 0, 0]),
            geom(1, 24, 24, 24, [1, 37, 29], [1, 3, 3], [1, 1, 1], [1, 1, 1], [0, 1, 1]),
            geom(2, 16, 32, 16, [1, 40, 40], [1, 3, 3], [1, 2, 2], [1, 1, 1], [0, 1, 1]),
            geom(1, 40, 36, 1, [1, 30, 31], [1, 1, 1], [1, 1, 1], [1, 1, 1], [0, 0, 0]),
            geom(3, 40, 36, 1, [1, 20, 21], [1, 1, 1], [1, 1, 1], [1, 1, 1], [0, 0, 0]),
            geom(1, 32, 48, 1, [1, 50, 50], [1, 3, 3], [1, 2, 2], [1, 1, 1], [0, 1, 1]),
            geom(2, 8, 12, 4, [1, 11, 13], [1, 3, 3], [1, 1, 1], [1, 1, 1], [0, 1, 1]),
            // one sample with more output than one block: split into column chunks
            // (pointwise, and grouped 3×3 through im2col)
            geom(1, 8, 40, 1, [1, 64, 67], [1, 1, 1], [1, 1, 1], [1, 1, 1], [0, 0, 0]),
            geom(1, 8, 50, 2, [1, 70, 69], [1, 3, 3], [1, 1, 1], [1, 1, 1], [0, 1, 1]),
            // strided 1×1 (subsampled, then the pointwise path): a 7×7 input at
            // stride 2 (16 outputs), uneven strides, batch 2
            geom(1, 24, 40, 1, [1, 7, 7], [1, 1, 1], [1, 2, 2], [1, 1, 1], [0, 0, 0]),
            geom(2, 40, 36, 1, [1, 20, 21], [1, 1, 1], [1, 2, 3], [1, 1, 1], [0, 0, 0]),
            // depthwise with a partial channel block at stride 2, and a plane tall
            // enough for several strips
            geom(1, 20, 20, 20, [1, 33, 35], [1, 3, 3], [1, 2, 2], [1, 1, 1], [0, 1, 1]),
            geom(1, 32, 32, 32, [1, 150, 60], [1, 3, 3], [1, 1, 1], [1, 1, 1], [0, 1, 1]),
        ] {
            check::<f32>(&g, 1e-5);
            check::<f64>(&g, 1e-12);
        }
    }

    #[test]
    fn copy_row_copies_every_length() {
        let src: Vec<f64> = (0..40).map(|i| i as f64).collect();
        for n in 0..=40 {
            let mut dst = vec![-1.0; 41];
            unsafe { copy_row(src.as_ptr(), dst.as_mut_ptr(), n) };
            assert_eq!(&dst[..n], &src[..n], "n={n}");
            assert!(dst[n..].iter().all(|&v| v == -1.0), "n={n}");
        }
    }

    #[test]
    fn max_pool_2x2_matches_generic_windows() {
        // 5×7 planes (the last row and column are in no window), values with ties.
        let g = PoolGeom {
            batch: 2,
            ch: 3,
            x: [1, 5, 7],
            y: [1, 2, 3],
            k: [1, 2, 2],
            s: [1, 2, 2],
            p_lo: [0; 3],
            p_hi: [0; 3],
            channels_last: false,
        };
        assert!(is_max_2x2(&g, PoolKind::Max));
        let x: Vec<f64> = data(2 * 3 * 35, 4).iter().map(|v| (v * 6.0).round()).collect();
        let dy = data(2 * 3 * 6, 5);
        let mut y = vec![0.0; 36];
        let mut dx = vec![7.0; x.len()];
        unsafe {
            pool_forward(&g, PoolKind::Max, x.as_ptr(), y.as_mut_ptr());
            pool_backward(&g, PoolKind::Max, x.as_ptr(), y.as_ptr(), dy.as_ptr(), dx.as_mut_ptr());
        }
        let mut want_dx = vec![0.0; x.len()];
        for p in 0..6 {
            for oh in 0..2 {
                for ow in 0..3 {
                    let mut best = (f64::NEG_INFINITY, 0);
                    for (dh, dw) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                        let at = p * 35 + (2 * oh + dh) * 7 + 2 * ow + dw;
                        if x[at] > best.0 {
                            best = (x[at], at);
                        }
                    }
                    let yi = p * 6 + oh * 3 + ow;
                    assert_eq!(y[yi], best.0);
                    want_dx[best.1] += dy[yi];
                }
            }
        }
        assert_eq!(dx, want_dx);
    }

    #[test]
    fn max_pool_2d_matches_a_naive_loop() {
        // Windows, strides and paddings (symmetric and not, windows of padding only),
        // values with ties, signed zeros and NaNs: the first maximal element in
        // row-major window order, by `>`, as the generic loop; the lowest value for
        // a window with no element.
        let cases = [
            ([3, 3], [2, 2], [1, 1], [1, 1], [64, 29]),
            ([3, 3], [2, 2], [1, 1], [2, 2], [17, 40]),
            ([2, 3], [1, 2], [0, 1], [1, 2], [9, 33]),
            ([3, 5], [3, 1], [2, 2], [2, 2], [11, 30]),
            ([1, 1], [2, 2], [0, 0], [0, 0], [7, 21]),
            ([2, 2], [3, 3], [1, 2], [3, 4], [5, 26]),
            // Rows long enough for the 16-output vectors (stride 2, an odd width; stride 1).
            ([3, 3], [2, 2], [1, 1], [1, 1], [9, 113]),
            ([3, 3], [1, 1], [1, 1], [1, 1], [6, 50]),
            ([2, 4], [2, 2], [0, 1], [1, 2], [5, 71]),
        ];
        for (k, st, lo, hi, [h, w]) in cases {
            let yh = (h + lo[0] + hi[0] - k[0]) / st[0] + 1;
            let yw = (w + lo[1] + hi[1] - k[1]) / st[1] + 1;
            let g = PoolGeom {
                batch: 2,
                ch: 3,
                x: [1, h, w],
                y: [1, yh, yw],
                k: [1, k[0], k[1]],
                s: [1, st[0], st[1]],
                p_lo: [0, lo[0], lo[1]],
                p_hi: [0, hi[0], hi[1]],
                channels_last: false,
            };
            assert!(is_max_2d(&g, PoolKind::Max) && !is_max_2x2(&g, PoolKind::Max));
            let mut x: Vec<f32> = data(6 * h * w, 9).iter().map(|v| (v * 4.0).round() as f32).collect();
            for (i, v) in x.iter_mut().enumerate() {
                if i % 37 == 5 {
                    *v = f32::NAN;
                } else if *v == 0.0 && i % 2 == 1 {
                    *v = -0.0;
                }
            }
            let mut y = vec![0f32; 6 * yh * yw];
            unsafe { pool_forward(&g, PoolKind::Max, x.as_ptr(), y.as_mut_ptr()) };
            for p in 0..6 {
                for oh in 0..yh {
                    for ow in 0..yw {
                        let mut m: Option<f32> = None;
                        for i in 0..k[0] {
                            for j in 0..k[1] {
                                let (ih, iw) = ((oh * st[0] + i) as isize - lo[0] as isize, (ow * st[1] + j) as isize - lo[1] as isize);
                                if ih < 0 || iw < 0 || ih >= h as isize || iw >= w as isize {
                                    continue;
                                }
                                let v = x[p * h * w + ih as usize * w + iw as usize];
                                if m.is_none_or(|m| v > m) {
                                    m = Some(v);
                                }
                            }
                        }
                        let want = m.unwrap_or(f32::MIN);
                        let got = y[(p * yh + oh) * yw + ow];
                        assert_eq!(got.to_bits(), want.to_bits(), "{k:?} {st:?} {lo:?} {hi:?} plane {p} ({oh}, {ow})");
                    }
                }
            }
        }
    }

    #[test]
    fn max_pool_2x2_backward_f32_many_planes() {
        // Enough planes for the parallel split, odd plane sizes (a row and a
        // column outside every window), ties in most windows, dx full of junk.
        let g = PoolGeom {
            batch: 4,
            ch: 90,
            x: [1, 11, 13],
            y: [1, 5, 6],
            k: [1, 2, 2],
            s: [1, 2, 2],
            p_lo: [0; 3],
            p_hi: [0; 3],
            channels_last: false,
        };
        let planes = 4 * 90;
        let x: Vec<f32> = data(planes * 143, 7).iter().map(|v| (v * 3.0).round() as f32).collect();
        let dy: Vec<f32> = data(planes * 30, 8).iter().map(|&v| v as f32).collect();
        let y = vec![0f32; dy.len()];
        let mut dx = vec![f32::NAN; x.len()];
        unsafe { pool_backward(&g, PoolKind::Max, x.as_ptr(), y.as_ptr(), dy.as_ptr(), dx.as_mut_ptr()) };
        let mut want = vec![0f32; x.len()];
        for p in 0..planes {
            for oh in 0..5 {
                for ow in 0..6 {
                    let mut best = (f32::NEG_INFINITY, 0);
                    for (dh, dw) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                        let at = p * 143 + (2 * oh + dh) * 13 + 2 * ow + dw;
                        if x[at] > best.0 {
                            best = (x[at], at);
                        }
                    }
                    want[best.1] = dy[p * 30 + oh * 6 + ow];
                }
            }
        }
        assert_eq!(dx, want);
    }

    /// Median milliseconds of `f` over `reps` runs (after one warm-up run).
    pub(in crate::kernels::cpu) fn time_ms(reps: usize, mut f: impl FnMut()) -> f64 {
        f();
        let mut t: Vec<f64> = (0..reps)
            .map(|_| {
                let t0 = std::time::Instant::now();
                f();
                t0.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        t.sort_by(|a, b| a.partial_cmp(b).unwrap());
        t[reps / 2]
    }

    /// LeNet's kernels at batch 64 (float32):
    /// `cargo test --release -p oxnet-core --lib bench_lenet_kernels -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn bench_lenet_kernels() {
        let f32s = |n: usize, seed: u64| data(n, seed).into_iter().map(|v| v as f32).collect::<Vec<f32>>();
        let pg = PoolGeom {
            batch: 64,
            ch: 20,
            x: [1, 24, 24],
            y: [1, 12, 12],
            k: [1, 2, 2],
            s: [1, 2, 2],
            p_lo: [0; 3],
            p_hi: [0; 3],
            channels_last: false,
        };
        let x = f32s(64 * 20 * 576, 1);
        let mut y = vec![0f32; 64 * 20 * 144];
        let dy = f32s(y.len(), 2);
        let mut dx = vec![0f32; x.len()];
        let fwd = time_ms(21, || unsafe { pool_forward(&pg, PoolKind::Max, x.as_ptr(), y.as_mut_ptr()) });
        let bwd = time_ms(21, || unsafe { pool_backward(&pg, PoolKind::Max, x.as_ptr(), y.as_ptr(), dy.as_ptr(), dx.as_mut_ptr()) });
        println!("pool1 max 2x2: fwd {fwd:.3} ms, bwd {bwd:.3} ms");
        for g in [
            geom(64, 1, 20, 1, [1, 28, 28], [1, 5, 5], [1; 3], [1; 3], [0; 3]),
            geom(64, 20, 50, 1, [1, 12, 12], [1, 5, 5], [1; 3], [1; 3], [0; 3]),
        ] {
            let x = f32s(g.batch * g.c * g.x_len(), 3);
            let w = f32s(g.f * g.col_rows(), 4);
            let b = f32s(g.f, 5);
            let mut y = vec![0f32; g.batch * g.f * g.y_len()];
            let dy = f32s(y.len(), 6);
            let mut dx = vec![0f32; x.len()];
            let mut dw = vec![0f32; w.len()];
            let mut db = vec![0f32; g.f];
            let fwd = time_ms(21, || unsafe { conv_forward(&g, x.as_ptr(), w.as_ptr(), Some(b.as_ptr()), y.as_mut_ptr()).unwrap() });
            let bwd = time_ms(21, || unsafe {
                let (dx, dw, db) = (dx.as_mut_ptr(), dw.as_mut_ptr(), db.as_mut_ptr());
                conv_backward(&g, x.as_ptr(), w.as_ptr(), dy.as_ptr(), Some(dx), Some(dw), Some(db)).unwrap()
            });
            let bwd_w = time_ms(21, || unsafe {
                let (dw, db) = (dw.as_mut_ptr(), db.as_mut_ptr());
                conv_backward(&g, x.as_ptr(), w.as_ptr(), dy.as_ptr(), None, Some(dw), Some(db)).unwrap()
            });
            println!("conv c={} f={}: fwd {fwd:.3} ms, bwd {bwd:.3} ms, bwd without dx {bwd_w:.3} ms", g.c, g.f);
        }
    }

    #[test]
    fn pooling_windows() {
        // 1-D, kernel 3 stride 2 pad 1 over [1..=5]: windows [-1,2) [1,4) [3,6).
        let g = PoolGeom {
            batch: 1,
            ch: 1,
            x: [1, 1, 5],
            y: [1, 1, 3],
            k: [1, 1, 3],
            s: [1, 1, 2],
            p_lo: [0, 0, 1],
            p_hi: [0, 0, 1],
            channels_last: false,
        };
        let x = [1.0f64, -2.0, 3.0, 4.0, 5.0];
        let mut y = [0.0; 3];
        unsafe { pool_forward(&g, PoolKind::Max, x.as_ptr(), y.as_mut_ptr()) };
        assert_eq!(y, [1.0, 4.0, 5.0]);
        unsafe { pool_forward(&g, PoolKind::Avg { include_pad: true }, x.as_ptr(), y.as_mut_ptr()) };
        assert_eq!(y, [-1.0 / 3.0, 5.0 / 3.0, 3.0]);
        unsafe { pool_forward(&g, PoolKind::Avg { include_pad: false }, x.as_ptr(), y.as_mut_ptr()) };
        assert_eq!(y, [-0.5, 5.0 / 3.0, 4.5]);
        let dy = [1.0, 10.0, 100.0];
        let mut dx = [0.0; 5];
        unsafe { pool_backward(&g, PoolKind::Max, x.as_ptr(), y.as_ptr(), dy.as_ptr(), dx.as_mut_ptr()) };
        assert_eq!(dx, [1.0, 0.0, 0.0, 10.0, 100.0]);
        unsafe { pool_backward(&g, PoolKind::Sum, x.as_ptr(), y.as_ptr(), dy.as_ptr(), dx.as_mut_ptr()) };
        assert_eq!(dx, [1.0, 11.0, 10.0, 110.0, 100.0]);
    }
}
