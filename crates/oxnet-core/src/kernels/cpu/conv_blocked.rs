//! Float32 convolution by a register-blocked GEMM on the unfolded input, chunk by
//! chunk, with the weights read in place: used by [`super::conv::conv_forward`]
//! for the convolutions that neither the direct kernel nor Winograd takes where
//! [`applies`] says so: strided ones (ResNet's 7×7 stride-2 stem, its 3×3 and 1×1
//! stride-2 convolutions) and 3×3 ones with few output tiles (batch 1 at 14×14 and
//! 7×7).
//!
//! - The output pixels of the whole batch, column `q = n · L_out + pixel`, are cut
//!   into chunks. A chunk's unfolded input (`K = c · kh · kw` rows, its columns
//!   padded with zeros to a multiple of the micro-tile's width) is built in a
//!   per-task buffer of about [`COL_FLOATS`], sized to stay in the core's L2 cache,
//!   instead of unfolding whole images. A chunk may span several images, so small
//!   images (7×7 at batch 32) waste no padding.
//! - Micro-tiles of `MR` filters × `NR` columns keep their accumulators in
//!   registers over all of `K`: per step, `NR / lanes` vector loads of the unfolded
//!   input and `MR` broadcasts of `w[f][k]` read from the filters' own rows (`MR`
//!   sequential streams, so the weights need no packing: nothing is cached between
//!   calls, nothing can go stale). AVX-512: 8 × 32 (16 accumulators); AVX2+FMA:
//!   6 × 16 (12). Both kernels come from one macro; the CPU's is picked at run time.
//! - The epilogue (scale, bias, residual, clamp; see [`Epilogue`]) is applied to
//!   the registers and stored straight into `y`; tiles that straddle two images or
//!   end a chunk go through a small buffer and a scalar epilogue.
//! - Parallelism: the chunks are split across the compute pool; when there are
//!   fewer chunks than threads (batch 1 with few pixels), the filter blocks are
//!   split too, each task unfolding the chunk it needs.
//! - Few columns (fewer than [`MIN_COLUMNS`] over the batch: ResNet's 14×14 and
//!   7×7 layers at batch 1) take the narrow path instead ([`forward_narrow`],
//!   AVX-512VL): the whole unfolding is built once (the channels split across the
//!   pool) with its columns padded to a multiple of 8 only, stored panel by panel;
//!   256-bit micro-tiles of 8 filters × 8 to 24 columns; the filter blocks split
//!   across the pool. `OXNET_CONV_NARROW=1` / `=0` force it on / off.
//!
//! When it runs: `OXNET_CONV_BLOCKED=1` forces it on for every convolution it can
//! take ([`suitable`]), `=0` forces it off; otherwise [`pays`] decides.
//!
//! Numerics: a plain sum over `K` in float32 (per output, in `k` order), as the
//! im2col + GEMM path's; the tests compare against a float64 reference.

use super::conv::{par_ranges, valid_range, ConvGeom, Epilogue, Scratch};
use super::{env_mode, isa, Isa, Mode, SendPtr};
use crate::error::{Error, Result};

/// Largest micro-tile, over the instruction sets.
const MAX_MR: usize = 8;
const MAX_NR: usize = 32;

/// Unfolded floats per chunk (1 MiB: half a core's L2 on the 2-core AVX-512
/// machine, leaving room for the weights' rows).
const COL_FLOATS: usize = 1 << 18;

/// (filters, columns) per micro-tile for `isa`; None without a kernel.
fn tile_shape(isa: Isa) -> Option<(usize, usize)> {
    match isa {
        Isa::Avx512 => Some((8, 32)),
        Isa::Avx2 => Some((6, 16)),
        Isa::Portable => None,
    }
}

/// How the environment sets the choice (`OXNET_CONV_BLOCKED`).
fn mode() -> Mode {
    static MODE: std::sync::OnceLock<Mode> = std::sync::OnceLock::new();
    env_mode(&MODE, "OXNET_CONV_BLOCKED")
}

/// True when the blocked kernel runs this (float32) forward convolution.
pub fn applies(g: &ConvGeom) -> bool {
    suitable(g)
        && match mode() {
            Mode::On => true,
            Mode::Off => false,
            Mode::Auto => pays(g),
        }
}

/// A convolution the kernel can take: 1-D or 2-D (no depth), one group, on a CPU
/// with AVX-512 or AVX2+FMA. Any kernel size, stride, padding and dilation.
pub fn suitable(g: &ConvGeom) -> bool {
    tile_shape(isa()).is_some() && g.groups == 1 && g.x[0] == 1 && g.k[0] == 1 && g.p[0] == 0 && g.c > 0 && g.f > 0 && g.y_len() > 0
}

/// Where the default takes it: measured (CPU time, one core of the 2-core AVX-512
/// machine) against im2col + GEMM over ResNet-18's convolutions at batch 1 and 8:
/// kernels larger than 1×1 (a strided 1×1 one's unfolding is a small gather, and
/// the GEMM library's packed kernel was faster on it), enough filters and rows to
/// fill the micro-tile, and at least [`MIN_COLUMNS`] output pixels over the batch
/// (with fewer, as ResNet's 14×14 and 7×7 layers at batch 1, the padding of the
/// last tile's columns cost more than the library's packing).
///
/// Below [`MIN_COLUMNS`] it takes them too where the narrow path runs
/// ([`forward_narrow`]: AVX-512VL, columns padded to a multiple of 8 only, the
/// filters split across the threads), measured faster than im2col + GEMM there.
pub fn pays(g: &ConvGeom) -> bool {
    suitable(g) && g.k_len() > 1 && g.f >= 16 && g.col_rows() >= 16 && (g.batch * g.y_len() >= MIN_COLUMNS || narrow(isa(), g))
}

/// Fewest output pixels (over the batch) for which the default takes the kernel.
const MIN_COLUMNS: usize = 512;

/// Chunks and their split: `width` columns per chunk (a multiple of the tile's),
/// `chunks` of them, each chunk's filter blocks split into `fsplit` parts.
#[derive(Debug, Clone, Copy)]
struct Plan {
    width: usize,
    chunks: usize,
    fsplit: usize,
}

fn plan(g: &ConvGeom, mr: usize, nr: usize, threads: usize) -> Plan {
    let q = g.batch * g.y_len();
    let k = g.col_rows();
    let max_w = ((COL_FLOATS / k.max(1)) / nr * nr).max(nr);
    let mut chunks = q.div_ceil(max_w);
    if chunks > 1 {
        // A multiple of the threads: equal shares.
        chunks = chunks.div_ceil(threads) * threads;
    }
    let width = q.div_ceil(chunks).div_ceil(nr) * nr;
    let chunks = q.div_ceil(width);
    let nb = g.f.div_ceil(mr);
    let fsplit = if chunks >= threads { 1 } else { threads.div_ceil(chunks).min(nb) };
    Plan { width, chunks, fsplit }
}

/// Unfolds the output columns `q0 .. q0 + nq` (over the batch) of `g`'s input `x`
/// into `col` (`K` rows of `ld` floats); columns `nq..ld` are zeroed.
///
/// # Safety
/// `x` must hold the batch, `col` `K · ld` floats, `nq <= ld`.
unsafe fn unfold_chunk(isa: Isa, g: &ConvGeom, x: *const f32, q0: usize, nq: usize, col: *mut f32, ld: usize) {
    let mut r = 0;
    for c in 0..g.c {
        for kh in 0..g.k[1] {
            for kw in 0..g.k[2] {
                let dst = col.add(r * ld);
                r += 1;
                unfold_row(isa, g, x, (c, kh, kw), q0, nq, dst);
                if ld > nq {
                    std::ptr::write_bytes(dst.add(nq), 0, ld - nq);
                }
            }
        }
    }
}

/// Row `(c, kh, kw)` of the unfolding: the input values that tap `(kh, kw)` of
/// channel `c` reads for the output columns `q0 .. q0 + nq` (over the batch), into
/// `dst[0 .. nq]` (zeros where the tap falls in the padding).
///
/// # Safety
/// `x` must hold the batch, `dst` `nq` floats; `c`, `kh`, `kw` within `g`.
#[inline]
unsafe fn unfold_row(isa: Isa, g: &ConvGeom, x: *const f32, (c, kh, kw): (usize, usize, usize), q0: usize, nq: usize, dst: *mut f32) {
    let [_, xh, xw] = g.x;
    let [_, _, yw] = g.y;
    let (xlen, ylen) = (g.x_len(), g.y_len());
    let (sh, sw) = (g.s[1], g.s[2]);
    let off_h = (kh * g.d[1]) as isize - g.p[1] as isize;
    let off_w = (kw * g.d[2]) as isize - g.p[2] as isize;
    let (lo, hi) = valid_range(off_w, sw, xw, yw);
    let (mut q, end) = (q0, q0 + nq);
    while q < end {
        let (n, pix) = (q / ylen, q % ylen);
        let (oh, ow0) = (pix / yw, pix % yw);
        let seg = (yw - ow0).min(end - q);
        let ih = (oh * sh) as isize + off_h;
        #[cfg(target_arch = "x86_64")]
        if isa == Isa::Avx512 && (sw == 1 || ih < 0 || ih >= xh as isize) {
            // Masked 16-lane copies: the rows of small images (14 or 7 wide) were
            // a library call each, about a tenth of the narrow path's time.
            let inside = ih >= 0 && ih < xh as isize;
            let (a, b) = if inside { (lo.clamp(ow0, ow0 + seg), hi.clamp(lo.clamp(ow0, ow0 + seg), ow0 + seg)) } else { (ow0, ow0) };
            let row = x.wrapping_add((n * g.c + c) * xlen + if inside { ih as usize * xw } else { 0 });
            segment_s1_avx512(row.wrapping_offset(ow0 as isize + off_w), dst.add(q - q0), seg, a - ow0, b - ow0);
            q += seg;
            continue;
        }
        let d = std::slice::from_raw_parts_mut(dst.add(q - q0), seg);
        if ih < 0 || ih >= xh as isize {
            d.fill(0.0);
        } else {
            // Output columns ow0 .. ow0 + seg; those in lo..hi read the row.
            let a = lo.clamp(ow0, ow0 + seg);
            let b = hi.clamp(a, ow0 + seg);
            d[..a - ow0].fill(0.0);
            d[b - ow0..].fill(0.0);
            let src = x.add((n * g.c + c) * xlen + ih as usize * xw);
            let out = &mut d[a - ow0..b - ow0];
            if sw == 1 {
                let from = src.offset(a as isize + off_w);
                std::ptr::copy_nonoverlapping(from, out.as_mut_ptr(), b - a);
            } else if sw == 2 && isa == Isa::Avx512 {
                #[cfg(target_arch = "x86_64")]
                gather_s2_avx512(src.offset((2 * a) as isize + off_w), out.as_mut_ptr(), b - a);
            } else {
                for (j, v) in out.iter_mut().enumerate() {
                    *v = *src.offset(((a + j) * sw) as isize + off_w);
                }
            }
        }
        q += seg;
    }
}

/// `d[j] = base[j]` for `va <= j < vb`, `0.0` for the other `j < seg`: sixteen
/// lanes at a time by masked loads and stores (lanes outside `va..vb` are not
/// read, so `base` may point outside the input where they fall).
///
/// # Safety
/// `base[va..vb]` readable, `d[..seg]` writable, `va <= vb <= seg`; the CPU must
/// run AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn segment_s1_avx512(base: *const f32, d: *mut f32, seg: usize, va: usize, vb: usize) {
    use std::arch::x86_64::*;
    let lanes = |n: usize| -> u32 {
        if n >= 16 {
            0xffff
        } else {
            (1u32 << n) - 1
        }
    };
    let mut j0 = 0;
    while j0 < seg {
        let store = lanes(seg - j0) as __mmask16;
        let valid = (lanes(vb.saturating_sub(j0)) & !lanes(va.saturating_sub(j0))) as __mmask16;
        let v = _mm512_maskz_loadu_ps(valid, base.wrapping_add(j0));
        _mm512_mask_storeu_ps(d.add(j0), store, v);
        j0 += 16;
    }
}

/// `out[j] = src[2j]` for `j < n` (reads `src[0 ..= 2(n - 1)]` only): sixteen at
/// a time from two loads and a two-source permute, where the scalar loop cost
/// about as much as the products for the 7×7 stem.
///
/// # Safety
/// The extents as stated; the CPU must run AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn gather_s2_avx512(src: *const f32, out: *mut f32, n: usize) {
    use std::arch::x86_64::*;
    let idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let mut j = 0;
    // (A block reads src[2j .. 2j + 32): inside while 2j + 31 <= 2(n - 1).)
    while j + 16 < n {
        let (lo, hi) = (_mm512_loadu_ps(src.add(2 * j)), _mm512_loadu_ps(src.add(2 * j + 16)));
        _mm512_storeu_ps(out.add(j), _mm512_permutex2var_ps(lo, idx, hi));
        j += 16;
    }
    while j < n {
        *out.add(j) = *src.add(2 * j);
        j += 1;
    }
}

/// Where a micro-tile's results go. With `y` non-null (the tile's `NR` columns lie
/// in one image): `rows` rows finished by the epilogue into `y` (row `i` at
/// `y + i · ys`), reading the residual at the same offsets from `res` (when
/// non-null). Else the raw sums go to `buf` (row `i` at `buf + i · MAX_NR`).
struct Tile {
    y: *mut f32,
    res: *const f32,
    ys: usize,
    rows: usize,
    scale: [f32; MAX_MR],
    bias: [f32; MAX_MR],
    lo: f32,
    hi: f32,
    buf: *mut f32,
}

impl Tile {
    /// A tile for filters `f0..f0 + rows` with the epilogue's per-filter scale and
    /// bias (1 and 0 past the filters, or without them); output and residual are
    /// set per tile by the caller.
    ///
    /// # Safety
    /// `scale` and `bias`, when given, must hold the filters `f0..f0 + rows`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn for_filters(
        f0: usize,
        rows: usize,
        ys: usize,
        scale: Option<SendPtr<f32>>,
        bias: Option<SendPtr<f32>>,
        lo: f32,
        hi: f32,
        buf: *mut f32,
    ) -> Tile {
        Tile {
            y: std::ptr::null_mut(),
            res: std::ptr::null(),
            ys,
            rows,
            scale: std::array::from_fn(|i| scale.filter(|_| i < rows).map_or(1.0, |s| *s.get().add(f0 + i))),
            bias: std::array::from_fn(|i| bias.filter(|_| i < rows).map_or(0.0, |b| *b.get().add(f0 + i))),
            lo,
            hi,
            buf,
        }
    }
}

macro_rules! micro_kernel {
    ($name:ident, $feat:literal, $mr:expr, $lanes:expr, $zero:ident, $load:ident, $store:ident, $set1:ident,
     $fma:ident, $mul:ident, $add:ident, $max:ident, $min:ident) => {
        /// One micro-tile: `Σ_p w[i][p] · col[p][0 .. NV · lanes]` for the tile's
        /// filters `i` (`w[i]`: that filter's row of `K` weights; `col`'s rows `ld`
        /// apart), delivered as `t` says. `NV = 2` is the whole tile, `1` the
        /// pointwise path's half tile.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $feat)]
        unsafe fn $name<const NV: usize>(k: usize, w: &[*const f32; MAX_MR], col: *const f32, ld: usize, t: &Tile) {
            use std::arch::x86_64::*;
            let mut acc = [[$zero(); NV]; $mr];
            let mut bp = col;
            for p in 0..k {
                let b: [_; NV] = std::array::from_fn(|v| $load(bp.add(v * $lanes)));
                for i in 0..$mr {
                    let a = $set1(*w[i].add(p));
                    for v in 0..NV {
                        acc[i][v] = $fma(a, b[v], acc[i][v]);
                    }
                }
                bp = bp.add(ld);
            }
            if t.y.is_null() {
                for i in 0..$mr {
                    for v in 0..NV {
                        $store(t.buf.add(i * MAX_NR + v * $lanes), acc[i][v]);
                    }
                }
                return;
            }
            let (lo, hi) = ($set1(t.lo), $set1(t.hi));
            for i in 0..$mr.min(t.rows) {
                let (s, b) = ($set1(t.scale[i]), $set1(t.bias[i]));
                for v in 0..NV {
                    let at = i * t.ys + v * $lanes;
                    let mut o = $add($mul(acc[i][v], s), b);
                    if !t.res.is_null() {
                        o = $add(o, $load(t.res.add(at)));
                    }
                    // (Operand order: a NaN in `o` passes through, as MXNet's relu keeps it.)
                    o = $min(hi, $max(lo, o));
                    $store(t.y.add(at), o);
                }
            }
        }
    };
}

micro_kernel!(
    tile_avx512,
    "avx512f,fma",
    8,
    16,
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_mul_ps,
    _mm512_add_ps,
    _mm512_max_ps,
    _mm512_min_ps
);
micro_kernel!(
    tile_avx2,
    "avx2,fma",
    6,
    8,
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_mul_ps,
    _mm256_add_ps,
    _mm256_max_ps,
    _mm256_min_ps
);

/// [`tile`] over half the columns (one vector): the pointwise path's last tiles.
#[inline(always)]
unsafe fn half_tile(isa: Isa, k: usize, w: &[*const f32; MAX_MR], col: *const f32, ld: usize, t: &Tile) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => tile_avx512::<1>(k, w, col, ld, t),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => tile_avx2::<1>(k, w, col, ld, t),
        _ => {}
    }
}

#[inline(always)]
unsafe fn tile(isa: Isa, k: usize, w: &[*const f32; MAX_MR], col: *const f32, ld: usize, t: &Tile) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => tile_avx512::<2>(k, w, col, ld, t),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => tile_avx2::<2>(k, w, col, ld, t),
        // (forward_with refuses an ISA without a kernel.)
        _ => {}
    }
}

/// Forward convolution by the blocked kernel: `y = ep(w ⋆ x)`, `y` overwritten.
///
/// # Safety
/// `g` must be [`suitable`]; the pointers must be valid for the extents `g` gives,
/// and `y` must not overlap the inputs or `ep`'s residual.
pub unsafe fn forward(g: &ConvGeom, x: *const f32, w: *const f32, ep: &Epilogue<f32>, y: *mut f32) -> Result<()> {
    let (isa, threads) = (isa(), crate::engine::threads().max(1));
    if narrow(isa, g) {
        return forward_narrow(isa, threads, g, x, w, ep, y);
    }
    forward_with(isa, threads, g, x, w, ep, y)
}

/// [`forward`] with the kernel of `isa` (which the CPU must run) over `threads` tasks.
unsafe fn forward_with(
    isa: Isa,
    threads: usize,
    g: &ConvGeom,
    x: *const f32,
    w: *const f32,
    ep: &Epilogue<f32>,
    y: *mut f32,
) -> Result<()> {
    let Some((mr, nr)) = tile_shape(isa) else {
        return Err(Error::new("Convolution: internal error: the blocked kernel was chosen on a CPU without AVX2 or AVX-512"));
    };
    let p = plan(g, mr, nr, threads);
    let (k, ylen, f) = (g.col_rows(), g.y_len(), g.f);
    let q = g.batch * ylen;
    let nb = f.div_ceil(mr);
    let (lo, hi) = ep.clamp.unwrap_or((f32::NEG_INFINITY, f32::INFINITY));
    let (px, pw, py) = (SendPtr(x as *mut f32), SendPtr(w as *mut f32), SendPtr(y));
    let pres = ep.residual.map(|r| SendPtr(r as *mut f32));
    let (pscale, pbias) = (ep.scale.map(|v| SendPtr(v as *mut f32)), ep.bias.map(|v| SendPtr(v as *mut f32)));
    par_ranges(p.chunks * p.fsplit, threads, &|_, u0, u1| {
        let col = Scratch::<f32>::new(k * p.width)?;
        let mut buf = [0f32; MAX_MR * MAX_NR];
        let mut have = usize::MAX;
        for u in u0..u1 {
            let (ci, fi) = (u / p.fsplit, u % p.fsplit);
            let q0 = ci * p.width;
            let nq = p.width.min(q - q0);
            // SAFETY: the chunk's columns lie in the batch; col is the task's own.
            unsafe {
                if have != ci {
                    unfold_chunk(isa, g, px.get(), q0, nq, col.ptr, p.width);
                    have = ci;
                }
                for fb in fi * nb / p.fsplit..(fi + 1) * nb / p.fsplit {
                    let f0 = fb * mr;
                    let rows = mr.min(f - f0);
                    // Rows past the filters repeat the last one (computed, never stored).
                    let wr: [*const f32; MAX_MR] = std::array::from_fn(|i| pw.get().add((f0 + i.min(rows - 1)) * k) as *const f32);
                    let mut t = Tile::for_filters(f0, rows, ylen, pscale, pbias, lo, hi, buf.as_mut_ptr());
                    let mut j0 = 0;
                    while j0 < nq {
                        let qa = q0 + j0;
                        let cols = nr.min(nq - j0);
                        let (n, pix) = (qa / ylen, qa % ylen);
                        let fast = cols == nr && pix + nr <= ylen;
                        if fast {
                            let at = (n * f + f0) * ylen + pix;
                            t.y = py.get().add(at);
                            t.res = pres.map_or(std::ptr::null(), |r| r.get().add(at) as *const f32);
                        } else {
                            t.y = std::ptr::null_mut();
                        }
                        tile(isa, k, &wr, col.ptr.add(j0), p.width, &t);
                        if !fast {
                            finish_scalar(&t, buf.as_ptr(), MAX_NR, qa, cols, f0, f, ylen, pres, py);
                        }
                        j0 += nr;
                    }
                }
            }
        }
        Ok(())
    })
}

/// How the environment sets the pointwise path (`OXNET_CONV_POINTWISE`).
fn pointwise_mode() -> Mode {
    static MODE: std::sync::OnceLock<Mode> = std::sync::OnceLock::new();
    env_mode(&MODE, "OXNET_CONV_POINTWISE")
}

/// Fewest output pixels per image for which the default takes the pointwise path:
/// below, the padding of the last tile costs more than the GEMM library's packing
/// (a 1×1 map is a matrix-vector product, bound by reading the weights).
const POINTWISE_MIN_PIXELS: usize = 16;

/// True when [`forward_pointwise`] runs this (float32) convolution: a [`suitable`]
/// 1×1 one with stride 1 and no padding (the input is its own unfolding), at
/// least [`POINTWISE_MIN_PIXELS`] pixels per image, and not a large reduction
/// ([`REDUCTION_INPUT`]). `OXNET_CONV_POINTWISE=1` / `=0` force it on / off for
/// every such convolution.
pub fn pointwise_applies(g: &ConvGeom) -> bool {
    suitable(g)
        && g.pointwise()
        && match pointwise_mode() {
            Mode::On => true,
            Mode::Off => false,
            Mode::Auto => g.y_len() >= POINTWISE_MIN_PIXELS && !(g.c >= 4 * g.f && g.c * g.y_len() >= REDUCTION_INPUT),
        }
}

/// Channels × pixels of an image's input from which a 1×1 convolution with at
/// least four times as many channels as filters (ResNet-50's bottleneck reductions,
/// MobileNetV2's 96 → 24 at 56×56) goes to the GEMM library instead: with no
/// blocking of the reduction, every filter block streams the chunk's `c` rows from
/// L2. Measured alone at batch 1 on the 2-core AVX-512 machine (GEMM against this
/// path): 256 → 64 at 56×56 0.50 / 0.55 ms, 512 → 128 at 28×28 0.49 / 0.55,
/// 1024 → 256 at 14×14 0.51 / 0.62, 96 → 24 at 56×56 0.08 / 0.12; below the line
/// this path was as fast or faster (384 → 64 and 576 → 96 at 14×14, 960 → 160 at
/// 7×7: 8-12%).
const REDUCTION_INPUT: usize = 200_000;

/// A 1×1, stride-1, unpadded convolution by the micro-kernel reading the input in
/// place: image `n`'s input is the `c × L` matrix its channels' rows make, so a
/// tile of columns is `c` rows of consecutive floats `L` apart and nothing is
/// unfolded or packed. Each image's columns are cut into chunks (`c · width` of
/// about half of [`COL_FLOATS`], read from L2 by every filter block); the chunks,
/// and their filter blocks where the chunks are fewer than the threads (batch 1 at
/// 7×7), are split across the pool. Full tiles of `NR` columns, then tiles of
/// 8-column vectors (AVX-512VL's narrow tiles; else one half tile) read the input
/// directly and apply the epilogue in registers; the last columns of a chunk,
/// fewer than one such vector, are copied, zero-padded, into a small buffer.
///
/// # Safety
/// As for [`forward`]; `g` must be [`suitable`] and [`ConvGeom::pointwise`].
pub unsafe fn forward_pointwise(g: &ConvGeom, x: *const f32, w: *const f32, ep: &Epilogue<f32>, y: *mut f32) -> Result<()> {
    pointwise_with(isa(), crate::engine::threads().max(1), g, x, w, ep, y)
}

unsafe fn pointwise_with(
    isa: Isa,
    threads: usize,
    g: &ConvGeom,
    x: *const f32,
    w: *const f32,
    ep: &Epilogue<f32>,
    y: *mut f32,
) -> Result<()> {
    let Some((mr, nr)) = tile_shape(isa) else {
        return Err(Error::new("Convolution: internal error: the blocked kernel was chosen on a CPU without AVX2 or AVX-512"));
    };
    // The unit of the last columns: 8-column vectors on AVX-512VL (the narrow
    // tiles; a 7×7 map is 32 + 2 · 8 + 1 columns, 56 computed instead of 64), else
    // the half tile.
    let narrow = narrow_isa(isa);
    let tw = if narrow { NL } else { nr / 2 };
    let (k, hw, f) = (g.c, g.y_len(), g.f);
    let nb = f.div_ceil(mr);
    let max_w = ((COL_FLOATS / 2 / k.max(1)) / nr * nr).max(nr);
    let per_img = hw.div_ceil(max_w).max(1);
    let width = hw.div_ceil(per_img).next_multiple_of(nr);
    let per_img = hw.div_ceil(width).max(1);
    let chunks = g.batch * per_img;
    let fsplit = if chunks >= threads { 1 } else { threads.div_ceil(chunks).min(nb) };
    let (lo, hi) = ep.clamp.unwrap_or((f32::NEG_INFINITY, f32::INFINITY));
    let (px, pw, py) = (SendPtr(x as *mut f32), SendPtr(w as *mut f32), SendPtr(y));
    let pres = ep.residual.map(|r| SendPtr(r as *mut f32));
    let (pscale, pbias) = (ep.scale.map(|v| SendPtr(v as *mut f32)), ep.bias.map(|v| SendPtr(v as *mut f32)));
    par_ranges(chunks * fsplit, threads, &|_, u0, u1| {
        let mut tail: Option<Scratch<f32>> = None;
        let mut buf = [0f32; MAX_MR * MAX_NR];
        for u in u0..u1 {
            let (ci, fi) = (u / fsplit, u % fsplit);
            let (n, c0) = (ci / per_img, (ci % per_img) * width);
            let c1 = (c0 + width).min(hw);
            // Columns c0..full by whole tiles; full..part by vectors read in place
            // (up to NV_MAX narrow 8-column vectors per tile where the CPU runs
            // them, else one half tile); part..c1 (less than one vector `tw`) from
            // the zero-padded buffer.
            let full = c0 + (c1 - c0) / nr * nr;
            let part = full + (c1 - full) / tw * tw;
            // SAFETY: image n's rows, the chunk's columns, the task's own buffers;
            // the output blocks of (chunk, filter block) pairs are disjoint.
            unsafe {
                let xn = px.get().add(n * k * hw);
                if part < c1 {
                    if tail.is_none() {
                        tail = Some(Scratch::<f32>::new(k * tw)?);
                    }
                    let tb = tail.as_ref().map_or(std::ptr::null_mut(), |t| t.ptr);
                    for p in 0..k {
                        let d = tb.add(p * tw);
                        std::ptr::copy_nonoverlapping(xn.add(p * hw + part), d, c1 - part);
                        std::ptr::write_bytes(d.add(c1 - part), 0, tw - (c1 - part));
                    }
                }
                let tb = tail.as_ref().map_or(std::ptr::null_mut(), |t| t.ptr);
                // The chunk's tiles: (first column, columns, vectors of `tw`; 0 for a
                // whole tile). Fewer than `nr` columns lie in full..part: one tile
                // of at most NV_MAX narrow vectors, or one half tile.
                let tiles = || {
                    let mid = (full < part).then_some((full, part - full, (part - full) / tw));
                    let last = (part < c1).then_some((part, c1 - part, 1));
                    (c0..full).step_by(nr).map(|j| (j, nr, 0)).chain(mid).chain(last)
                };
                // Each weight is read once per chunk; the chunk's input, from L2,
                // by every filter block. (Tiles outer, filter blocks inner, measured
                // slower on MobileNetV2's layers but one: the many output rows.)
                for fb in fi * nb / fsplit..(fi + 1) * nb / fsplit {
                    let f0 = fb * mr;
                    let rows = mr.min(f - f0);
                    // Rows past the filters repeat the last one (computed, never stored).
                    let wr: [*const f32; MAX_MR] = std::array::from_fn(|i| pw.get().add((f0 + i.min(rows - 1)) * k) as *const f32);
                    let mut t = Tile::for_filters(f0, rows, hw, pscale, pbias, lo, hi, buf.as_mut_ptr());
                    for (j, cols, nv) in tiles() {
                        let at = (n * f + f0) * hw + j;
                        let inplace = j < part;
                        if inplace {
                            t.y = py.get().add(at);
                            t.res = pres.map_or(std::ptr::null(), |r| r.get().add(at) as *const f32);
                        } else {
                            t.y = std::ptr::null_mut();
                        }
                        let (src, ld) = if inplace { (xn.add(j) as *const f32, hw) } else { (tb as *const f32, tw) };
                        if nv == 0 {
                            tile(isa, k, &wr, src, ld, &t);
                        } else if narrow {
                            narrow_tile(nv, k, &wr, src, ld, std::ptr::null(), MAX_NR, &t);
                        } else {
                            half_tile(isa, k, &wr, src, ld, &t);
                        }
                        if !inplace {
                            finish_scalar(&t, buf.as_ptr(), MAX_NR, n * hw + j, cols, f0, f, hw, pres, py);
                        }
                    }
                }
            }
        }
        Ok(())
    })
}

/// The epilogue of a tile whose raw sums are in `buf` (rows `bs` floats apart):
/// columns `qa .. qa + cols` (over the batch) of filters `f0 .. f0 + t.rows`.
#[allow(clippy::too_many_arguments)]
unsafe fn finish_scalar(
    t: &Tile,
    buf: *const f32,
    bs: usize,
    qa: usize,
    cols: usize,
    f0: usize,
    f: usize,
    ylen: usize,
    res: Option<SendPtr<f32>>,
    y: SendPtr<f32>,
) {
    for i in 0..t.rows {
        for j in 0..cols {
            let qj = qa + j;
            let at = ((qj / ylen) * f + f0 + i) * ylen + qj % ylen;
            let mut v = *buf.add(i * bs + j) * t.scale[i] + t.bias[i];
            if let Some(r) = res {
                v += *r.get().add(at);
            }
            // (NaN stays NaN.)
            if v < t.lo {
                v = t.lo;
            } else if v > t.hi {
                v = t.hi;
            }
            *y.get().add(at) = v;
        }
    }
}

/// Lanes of the narrow kernel's vectors (256-bit: on the AVX-512 AMD EPYC (Zen 4)
/// two 256-bit FMAs issue per cycle, as many lanes as one 512-bit FMA, and the
/// narrower vectors pad the columns to a multiple of 8 instead of 32).
const NL: usize = 8;

/// Most vectors (of [`NL`] columns) per narrow micro-tile: 8 filters × 3 vectors,
/// 24 accumulators of the 32 registers AVX-512VL gives 256-bit code.
const NV_MAX: usize = 3;

/// Largest unfolding (floats) the narrow path builds whole.
const NARROW_FLOATS: usize = 1 << 22;

/// How the environment sets the narrow path's choice (`OXNET_CONV_NARROW`): `1`
/// takes it for every convolution the blocked kernel runs (where the unfolding
/// fits [`NARROW_FLOATS`]), `0` never; unset, below [`MIN_COLUMNS`] columns with
/// more than one compute thread.
fn narrow_mode() -> Mode {
    static MODE: std::sync::OnceLock<Mode> = std::sync::OnceLock::new();
    env_mode(&MODE, "OXNET_CONV_NARROW")
}

/// The CPU runs the narrow kernel (AVX-512F with VL and FMA).
fn narrow_isa(isa: Isa) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        isa == Isa::Avx512 && std::arch::is_x86_feature_detected!("avx512vl")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = isa;
        false
    }
}

/// The unfolding of the narrow path fits its budget.
fn narrow_fits(g: &ConvGeom) -> bool {
    g.col_rows().saturating_mul((g.batch * g.y_len()).div_ceil(NL) * NL) <= NARROW_FLOATS
}

/// True when [`forward`] takes the narrow path for `g` (which must be [`suitable`]).
fn narrow(isa: Isa, g: &ConvGeom) -> bool {
    narrow_isa(isa)
        && narrow_fits(g)
        && match narrow_mode() {
            Mode::On => true,
            Mode::Off => false,
            // (Its gain is the even split of the filters across the threads: on
            // one thread im2col + GEMM measured ~5% faster.)
            Mode::Auto => g.batch * g.y_len() < MIN_COLUMNS && crate::engine::threads() > 1,
        }
}

/// The narrow path's column tiles over `nvec` vectors: (first vector, vectors),
/// as few tiles as [`NV_MAX`] allows, their sizes differing by at most one.
fn narrow_tiles(nvec: usize) -> Vec<(usize, usize)> {
    let n = nvec.div_ceil(NV_MAX).max(1);
    let (base, extra) = (nvec / n, nvec % n);
    let mut v0 = 0;
    (0..n)
        .map(|t| {
            let nv = base + usize::from(t < extra);
            let tile = (v0, nv);
            v0 += nv;
            tile
        })
        .filter(|t| t.1 > 0)
        .collect()
}

/// One narrow micro-tile: `c[i] + Σ_p w[i][p] · b[p][0 .. NV · NL]` for the 8
/// filters `i` (`c` the partial sums at `cin`, rows `ldc` apart, or zero where
/// `cin` is null), `b`'s rows `ldb` floats apart (the narrow path's panel: `NV · NL`),
/// delivered as `t` says (raw sums in `t.buf`, rows `ldc` apart, where `t.y` is
/// null).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,fma")]
unsafe fn narrow_tile_avx512<const NV: usize>(k: usize, w: &[*const f32; MAX_MR], b: *const f32, ldb: usize, cin: *const f32, ldc: usize, t: &Tile) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm256_setzero_ps(); NV]; MAX_MR];
    if !cin.is_null() {
        for (i, r) in acc.iter_mut().enumerate() {
            for (v, o) in r.iter_mut().enumerate() {
                *o = _mm256_loadu_ps(cin.add(i * ldc + v * NL));
            }
        }
    }
    let mut bp = b;
    for p in 0..k {
        let mut bv = [_mm256_setzero_ps(); NV];
        for (v, o) in bv.iter_mut().enumerate() {
            *o = _mm256_loadu_ps(bp.add(v * NL));
        }
        for i in 0..MAX_MR {
            let a = _mm256_set1_ps(*w[i].add(p));
            for v in 0..NV {
                acc[i][v] = _mm256_fmadd_ps(a, bv[v], acc[i][v]);
            }
        }
        bp = bp.add(ldb);
    }
    if t.y.is_null() {
        for (i, r) in acc.iter().enumerate() {
            for (v, o) in r.iter().enumerate() {
                _mm256_storeu_ps(t.buf.add(i * ldc + v * NL), *o);
            }
        }
        return;
    }
    let (lo, hi) = (_mm256_set1_ps(t.lo), _mm256_set1_ps(t.hi));
    for (i, r) in acc.iter().enumerate().take(t.rows) {
        let (s, bias) = (_mm256_set1_ps(t.scale[i]), _mm256_set1_ps(t.bias[i]));
        for (v, a) in r.iter().enumerate() {
            let at = i * t.ys + v * NL;
            let mut o = _mm256_add_ps(_mm256_mul_ps(*a, s), bias);
            if !t.res.is_null() {
                o = _mm256_add_ps(o, _mm256_loadu_ps(t.res.add(at)));
            }
            // (Operand order: a NaN in `o` passes through, as MXNet's relu keeps it.)
            o = _mm256_min_ps(hi, _mm256_max_ps(lo, o));
            _mm256_storeu_ps(t.y.add(at), o);
        }
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn narrow_tile(nv: usize, k: usize, w: &[*const f32; MAX_MR], b: *const f32, ldb: usize, cin: *const f32, ldc: usize, t: &Tile) {
    #[cfg(target_arch = "x86_64")]
    match nv {
        1 => narrow_tile_avx512::<1>(k, w, b, ldb, cin, ldc, t),
        2 => narrow_tile_avx512::<2>(k, w, b, ldb, cin, ldc, t),
        _ => narrow_tile_avx512::<3>(k, w, b, ldb, cin, ldc, t),
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (nv, k, w, b, ldb, cin, ldc, t);
}

/// Floats of the unfolding per block of `K` rows on the narrow path (512 KiB:
/// half a core's L2 on the AVX-512 AMD EPYC): every filter block of a task reads
/// the block from L2, and each weight is read once per call.
const NARROW_KC_FLOATS: usize = 1 << 17;

/// The narrow path's blocks of `K` rows for `ld` columns: (rows per block, blocks),
/// the blocks as equal as whole rows allow.
fn narrow_kblocks(k: usize, ld: usize) -> (usize, usize) {
    let max = (NARROW_KC_FLOATS / ld.max(1)).max(16);
    let kc = k.div_ceil(k.div_ceil(max).max(1)).max(1);
    (kc, k.div_ceil(kc).max(1))
}

/// The narrow path, for few output columns (batch 1 at 14×14 and 7×7): the whole
/// batch's unfolding is built once, split over the channels across the pool, its
/// columns padded to a multiple of [`NL`] only and stored tile by tile (each
/// tile's panel contiguous, rows of 8 to 24 floats); then the filter blocks are
/// split across the pool, each running 8 filters × up to 24 columns micro-tiles
/// over its panels with the epilogue applied in registers.
///
/// # Safety
/// As for [`forward`]; the CPU must pass [`narrow_isa`].
unsafe fn forward_narrow(
    isa: Isa,
    threads: usize,
    g: &ConvGeom,
    x: *const f32,
    w: *const f32,
    ep: &Epilogue<f32>,
    y: *mut f32,
) -> Result<()> {
    let (k, ylen, f) = (g.col_rows(), g.y_len(), g.f);
    let q = g.batch * ylen;
    let nvec = q.div_ceil(NL);
    let ld = nvec * NL;
    let tiles = narrow_tiles(nvec);
    let col = Scratch::<f32>::new(k * ld)?;
    let (px, pw, py, pcol) = (SendPtr(x as *mut f32), SendPtr(w as *mut f32), SendPtr(y), SendPtr(col.ptr));
    let pres = ep.residual.map(|r| SendPtr(r as *mut f32));
    let (pscale, pbias) = (ep.scale.map(|v| SendPtr(v as *mut f32)), ep.bias.map(|v| SendPtr(v as *mut f32)));
    let (kh_n, kw_n) = (g.k[1], g.k[2]);
    let tiles = &tiles;
    par_ranges(g.c, threads, &|_, c0, c1| {
        let row = Scratch::<f32>::new(ld)?;
        // SAFETY: each task writes the rows of its own channels; row is its own.
        unsafe {
            std::ptr::write_bytes(row.ptr.add(q), 0, ld - q);
            for c in c0..c1 {
                for kh in 0..kh_n {
                    for kw in 0..kw_n {
                        let r = (c * kh_n + kh) * kw_n + kw;
                        unfold_row(isa, g, px.get(), (c, kh, kw), 0, q, row.ptr);
                        for &(v0, nv) in tiles {
                            std::ptr::copy_nonoverlapping(row.ptr.add(v0 * NL), pcol.get().add(k * v0 * NL + r * nv * NL), nv * NL);
                        }
                    }
                }
            }
        }
        Ok(())
    })?;
    let (lo, hi) = ep.clamp.unwrap_or((f32::NEG_INFINITY, f32::INFINITY));
    let nb = f.div_ceil(MAX_MR);
    let (kc, nkb) = narrow_kblocks(k, ld);
    // Twice as many tasks as threads: a thread slowed by another process's work
    // leaves part of its share to the others.
    par_ranges(nb, (2 * threads).min(nb), &|_, b0, b1| {
        // The task's partial sums over the K blocks: its filter blocks' rows of
        // `ld` columns.
        let acc = Scratch::<f32>::new((b1 - b0) * MAX_MR * ld)?;
        for kb in 0..nkb {
            let (k0, k1) = (kb * kc, (kb * kc + kc).min(k));
            let last = kb + 1 == nkb;
            for fb in b0..b1 {
                let f0 = fb * MAX_MR;
                let rows = MAX_MR.min(f - f0);
                // SAFETY: rows past the filters repeat the last one (computed, never
                // stored); the tiles' columns lie in the batch; each task writes the
                // output rows of its own filters and its own partial sums.
                unsafe {
                    let wr: [*const f32; MAX_MR] = std::array::from_fn(|i| pw.get().add((f0 + i.min(rows - 1)) * k + k0) as *const f32);
                    let cb = acc.ptr.add((fb - b0) * MAX_MR * ld);
                    let mut t = Tile::for_filters(f0, rows, ylen, pscale, pbias, lo, hi, std::ptr::null_mut());
                    for &(v0, nv) in tiles {
                        let qa = v0 * NL;
                        let cols = (nv * NL).min(q - qa);
                        let (n, pix) = (qa / ylen, qa % ylen);
                        let fast = last && cols == nv * NL && pix + cols <= ylen;
                        if fast {
                            let at = (n * f + f0) * ylen + pix;
                            t.y = py.get().add(at);
                            t.res = pres.map_or(std::ptr::null(), |r| r.get().add(at) as *const f32);
                        } else {
                            t.y = std::ptr::null_mut();
                            t.buf = cb.add(qa);
                        }
                        let cin = if kb == 0 { std::ptr::null() } else { cb.add(qa) as *const f32 };
                        narrow_tile(nv, k1 - k0, &wr, pcol.get().add(k * qa + k0 * nv * NL), nv * NL, cin, ld, &t);
                        if last && !fast {
                            finish_scalar(&t, cb.add(qa), ld, qa, cols, f0, f, ylen, pres, py);
                        }
                    }
                }
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::cpu::conv::tests::data_f32 as data;

    #[allow(clippy::too_many_arguments)]
    fn geom(
        batch: usize,
        c: usize,
        f: usize,
        (h, w): (usize, usize),
        (kh, kw): (usize, usize),
        s: (usize, usize),
        p: (usize, usize),
        d: (usize, usize),
    ) -> ConvGeom {
        let oh = ConvGeom::out_size(h, kh, s.0, d.0, p.0).unwrap();
        let ow = ConvGeom::out_size(w, kw, s.1, d.1, p.1).unwrap();
        ConvGeom {
            batch,
            c,
            f,
            groups: 1,
            x: [1, h, w],
            y: [1, oh, ow],
            k: [1, kh, kw],
            s: [1, s.0, s.1],
            d: [1, d.0, d.1],
            p: [0, p.0, p.1],
        }
    }

    /// float64 reference `(y, Σ|w·x|)` per output.
    fn reference(g: &ConvGeom, x: &[f32], w: &[f32]) -> (Vec<f64>, Vec<f64>) {
        let [_, xh, xw] = g.x;
        let [_, yh, yw] = g.y;
        let [_, kh, kw] = g.k;
        let mut y = vec![0.0; g.batch * g.f * yh * yw];
        let mut mag = y.clone();
        for n in 0..g.batch {
            for f in 0..g.f {
                for oh in 0..yh {
                    for ow in 0..yw {
                        let (mut acc, mut m) = (0.0f64, 0.0f64);
                        for c in 0..g.c {
                            for i in 0..kh {
                                for j in 0..kw {
                                    let ih = (oh * g.s[1] + i * g.d[1]) as isize - g.p[1] as isize;
                                    let iw = (ow * g.s[2] + j * g.d[2]) as isize - g.p[2] as isize;
                                    if ih < 0 || iw < 0 || ih >= xh as isize || iw >= xw as isize {
                                        continue;
                                    }
                                    let xv = x[((n * g.c + c) * xh + ih as usize) * xw + iw as usize] as f64;
                                    let wv = w[((f * g.c + c) * kh + i) * kw + j] as f64;
                                    acc += xv * wv;
                                    m += (xv * wv).abs();
                                }
                            }
                        }
                        let at = ((n * g.f + f) * yh + oh) * yw + ow;
                        y[at] = acc;
                        mag[at] = m;
                    }
                }
            }
        }
        (y, mag)
    }

    fn isas() -> Vec<Isa> {
        let mut v = vec![];
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

    type Runner = dyn Fn(Isa, usize, &ConvGeom, &[f32], &[f32], &Epilogue<f32>, &mut [f32]);

    /// Each geometry on each of `isas` and thread counts 1 to 3, with and without
    /// each part of the epilogue, against float64: the error of an output stays
    /// within 1e-5 of its `Σ|w·x|` (a float32 sum of K products) plus 1e-6.
    fn check_cases(cases: &[ConvGeom], isas: &[Isa], run: &Runner) {
        for g in cases {
            let (xn, wn, yn) = (g.batch * g.c * g.x_len(), g.f * g.col_rows(), g.batch * g.f * g.y_len());
            let x = data(xn, 1);
            let w = data(wn, 2);
            let scale = data(g.f, 3);
            let bias = data(g.f, 4);
            let res = data(yn, 5);
            let (want, mag) = reference(g, &x, &w);
            for &isa in isas {
                for threads in [1, 2, 3] {
                    for variant in 0..3 {
                        let ep = match variant {
                            0 => Epilogue::bias(None),
                            1 => Epilogue { scale: None, bias: Some(bias.as_ptr()), residual: None, clamp: Some((0.0, f32::INFINITY)) },
                            _ => Epilogue {
                                scale: Some(scale.as_ptr()),
                                bias: Some(bias.as_ptr()),
                                residual: Some(res.as_ptr()),
                                clamp: Some((-0.1, 0.2)),
                            },
                        };
                        let mut y = vec![f32::NAN; yn];
                        run(isa, threads, g, &x, &w, &ep, &mut y);
                        for (i, got) in y.iter().enumerate() {
                            let f = (i / g.y_len()) % g.f;
                            let mut v = want[i];
                            let mut tol = 1e-5 * mag[i] + 1e-6;
                            if variant >= 1 {
                                if variant == 2 {
                                    v *= scale[f] as f64;
                                    tol *= (scale[f] as f64).abs();
                                    v += res[i] as f64;
                                }
                                v += bias[f] as f64;
                                let (lo, hi) = if variant == 1 { (0.0, f64::INFINITY) } else { (-0.1, 0.2) };
                                v = v.clamp(lo, hi);
                            }
                            assert!(
                                ((*got as f64) - v).abs() <= tol + 1e-6,
                                "{isa:?} threads {threads} variant {variant} {g:?} at {i}: {got} vs {v}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn forward_matches_float64_reference() {
        let cases = [
            geom(1, 3, 64, (37, 41), (7, 7), (2, 2), (3, 3), (1, 1)),
            geom(1, 16, 32, (14, 14), (3, 3), (2, 2), (1, 1), (1, 1)),
            geom(2, 17, 19, (9, 11), (3, 3), (1, 1), (1, 1), (1, 1)),
            geom(3, 8, 13, (7, 7), (3, 3), (1, 1), (1, 1), (1, 1)),
            geom(1, 32, 24, (13, 9), (1, 1), (2, 2), (0, 0), (1, 1)),
            geom(2, 5, 17, (11, 10), (3, 2), (2, 3), (2, 1), (2, 1)),
            geom(1, 4, 9, (1, 50), (1, 5), (1, 2), (0, 2), (1, 3)),
            geom(5, 6, 40, (6, 5), (3, 3), (1, 1), (0, 0), (1, 1)),
            geom(2, 300, 16, (5, 5), (3, 3), (2, 2), (1, 1), (1, 1)),
        ];
        check_cases(&cases, &isas(), &|isa, threads, g, x, w, ep, y| unsafe {
            forward_with(isa, threads, g, x.as_ptr(), w.as_ptr(), ep, y.as_mut_ptr()).unwrap()
        });
    }

    /// The narrow path (where the CPU runs it) on the shapes it is for (14×14 and
    /// 7×7 at batch 1, stride 1 and 2) and odd ones: column counts that are not a
    /// multiple of 8 or of a tile, filters not a multiple of 8, tiles straddling
    /// images (batch > 1), 1×1, dilation, asymmetric padding.
    #[test]
    fn narrow_matches_float64_reference() {
        let cases = [
            geom(1, 24, 40, (14, 14), (3, 3), (1, 1), (1, 1), (1, 1)),
            geom(1, 20, 32, (7, 7), (3, 3), (1, 1), (1, 1), (1, 1)),
            geom(1, 16, 24, (28, 28), (3, 3), (2, 2), (1, 1), (1, 1)),
            geom(1, 16, 16, (14, 14), (3, 3), (2, 2), (1, 1), (1, 1)),
            geom(1, 32, 24, (14, 14), (1, 1), (2, 2), (0, 0), (1, 1)),
            geom(2, 9, 19, (7, 7), (3, 3), (1, 1), (1, 1), (1, 1)),
            geom(3, 5, 13, (5, 6), (3, 3), (1, 1), (0, 1), (1, 1)),
            geom(1, 7, 11, (9, 9), (3, 3), (1, 1), (2, 2), (2, 2)),
            geom(1, 3, 8, (1, 1), (3, 3), (1, 1), (1, 1), (1, 1)),
            geom(1, 6, 17, (3, 40), (2, 3), (1, 2), (1, 1), (1, 1)),
            geom(4, 12, 9, (8, 8), (3, 3), (2, 2), (1, 1), (1, 1)),
            // K in blocks: 2 of 7×7 (K = 2700), 3 of 14×14 (K = 1440).
            geom(1, 300, 20, (7, 7), (3, 3), (1, 1), (1, 1), (1, 1)),
            geom(1, 160, 12, (14, 14), (3, 3), (1, 1), (1, 1), (1, 1)),
            geom(2, 130, 10, (7, 7), (3, 3), (2, 2), (1, 1), (1, 1)),
        ];
        let isas: Vec<Isa> = isas().into_iter().filter(|&i| narrow_isa(i)).collect();
        check_cases(&cases, &isas, &|isa, threads, g, x, w, ep, y| unsafe {
            forward_narrow(isa, threads, g, x.as_ptr(), w.as_ptr(), ep, y.as_mut_ptr()).unwrap()
        });
    }

    #[test]
    fn narrow_kblocks_cover_k() {
        for k in 1..3000 {
            for ld in [8, 56, 200, 1000, 70000] {
                let (kc, n) = narrow_kblocks(k, ld);
                assert!(kc >= 1 && (n - 1) * kc < k && n * kc >= k, "{k} {ld}: {kc} {n}");
                assert!(kc * ld <= NARROW_KC_FLOATS.max(16 * ld), "{k} {ld}: {kc}");
            }
        }
        assert_eq!(narrow_kblocks(4608, 56).1, 2);
        assert_eq!(narrow_kblocks(2304, 200).1, 4);
    }

    #[test]
    fn narrow_tiles_cover_the_vectors() {
        for nvec in 1..100 {
            let t = narrow_tiles(nvec);
            let mut v0 = 0;
            for &(a, nv) in &t {
                assert_eq!(a, v0);
                assert!((1..=NV_MAX).contains(&nv), "{nvec}: {t:?}");
                v0 += nv;
            }
            assert_eq!(v0, nvec);
            assert_eq!(t.len(), nvec.div_ceil(NV_MAX));
        }
    }

    /// Small batch-1 convolutions go to the blocked kernel's narrow path where the
    /// CPU runs it (else to im2col + GEMM, as before), larger ones to the chunked one.
    #[test]
    fn narrow_dispatch() {
        let small = geom(1, 256, 256, (14, 14), (3, 3), (1, 1), (1, 1), (1, 1));
        let large = geom(8, 256, 256, (14, 14), (3, 3), (1, 1), (1, 1), (1, 1));
        if narrow_mode() == Mode::Auto && mode() == Mode::Auto {
            let on = narrow_isa(isa()) && crate::engine::threads() > 1;
            assert_eq!(pays(&small), on);
            assert_eq!(narrow(isa(), &small), on);
            assert!(!narrow(isa(), &large));
            assert_eq!(pays(&large), suitable(&large));
        }
    }

    #[test]
    fn nan_passes_the_clamp() {
        let g = geom(1, 2, 8, (4, 40), (1, 3), (1, 1), (0, 1), (1, 1));
        let mut x = data(g.c * g.x_len(), 7);
        x[5] = f32::NAN;
        let w = data(g.f * g.col_rows(), 8);
        for isa in isas() {
            let mut y = vec![0f32; g.f * g.y_len()];
            let ep = Epilogue { scale: None, bias: None, residual: None, clamp: Some((0.0, f32::INFINITY)) };
            for narrow_path in [false, true] {
                if narrow_path && !narrow_isa(isa) {
                    continue;
                }
                y.fill(0.0);
                unsafe {
                    if narrow_path {
                        forward_narrow(isa, 2, &g, x.as_ptr(), w.as_ptr(), &ep, y.as_mut_ptr()).unwrap()
                    } else {
                        forward_with(isa, 1, &g, x.as_ptr(), w.as_ptr(), &ep, y.as_mut_ptr()).unwrap()
                    }
                };
                // Outputs 4, 5, 6 of row 0 read x[5] in every filter.
                for f in 0..g.f {
                    for ow in 4..7 {
                        assert!(y[f * g.y_len() + ow].is_nan(), "{isa:?} narrow {narrow_path} filter {f} column {ow}");
                    }
                    assert!(!y[f * g.y_len() + 20].is_nan());
                }
            }
        }
    }

    /// The pointwise path: 1×1 stride-1 convolutions over column counts below,
    /// at and around the tile widths (whole tiles, a half tile, a padded tail), odd
    /// filter counts, batches, several chunks per image (large `c · L`).
    #[test]
    fn pointwise_matches_float64_reference() {
        let one = |b, c, f, h, w| geom(b, c, f, (h, w), (1, 1), (1, 1), (0, 0), (1, 1));
        let cases = [
            one(1, 16, 24, 7, 7),
            one(1, 40, 17, 1, 1),
            one(1, 8, 8, 1, 15),
            one(1, 9, 11, 4, 4),
            one(2, 24, 40, 5, 7),
            one(1, 3, 64, 8, 8),
            one(3, 13, 9, 6, 9),
            one(1, 32, 20, 1, 63),
            one(1, 300, 12, 30, 31),
            one(1, 960, 10, 7, 7),
            one(2, 16, 33, 112, 12),
        ];
        check_cases(&cases, &isas(), &|isa, threads, g, x, w, ep, y| unsafe {
            pointwise_with(isa, threads, g, x.as_ptr(), w.as_ptr(), ep, y.as_mut_ptr()).unwrap()
        });
    }

    #[test]
    fn plan_covers_the_columns() {
        for (g, threads) in [
            (geom(1, 512, 512, (7, 7), (3, 3), (1, 1), (1, 1), (1, 1)), 2),
            (geom(1, 3, 64, (224, 224), (7, 7), (2, 2), (3, 3), (1, 1)), 2),
            (geom(32, 256, 512, (14, 14), (3, 3), (2, 2), (1, 1), (1, 1)), 3),
            (geom(1, 1, 16, (4, 4), (3, 3), (1, 1), (1, 1), (1, 1)), 4),
        ] {
            let p = plan(&g, 8, 32, threads);
            let q = g.batch * g.y_len();
            assert_eq!(p.width % 32, 0);
            assert!(p.width * p.chunks >= q && p.width * (p.chunks - 1) < q, "{p:?}");
            assert!(p.fsplit >= 1 && p.fsplit <= g.f.div_ceil(8));
            assert!(p.width * g.col_rows() <= COL_FLOATS.max(32 * g.col_rows()), "{p:?}");
        }
    }
}
