//! Winograd F(4×4, 3×3) for float32 2-D convolutions with 3×3 kernels at stride 1
//! (one group, no dilation, any padding), used by [`super::conv::conv_forward`] (and
//! for the data gradient, which is such a convolution of `dy` with the flipped,
//! transposed weights) where [`applies`] says so.
//!
//! The output is cut into 4×4 tiles; tile `t` reads the 6×6 input patch under it.
//! With the transforms `V = Bᵀ d B` of each patch and channel, `U = G g Gᵀ` of each
//! filter and channel, and `Y = Aᵀ M A` of each product, the convolution becomes 36
//! independent GEMMs `M[ξ] = U[ξ] · V[ξ]` (`f × c` times `c × tiles`), 36
//! multiplications per 16 outputs and channel instead of 144.
//!
//! Layout and vectorisation:
//! - The tiles are walked in blocks of whole tile rows (a tile row: the `⌈yw/4⌉`
//!   tiles side by side under four output rows), sized so that a block's `V` and `M`
//!   stay near the cache. Within a block, tile `j` is column `j` of `V[ξ]` and `M[ξ]`.
//! - Input transform: sixteen horizontally adjacent tiles at a time, one per SIMD
//!   lane. Their patches' rows are 64 (+2) consecutive inputs; one row is split into
//!   its six stride-4 phases (`x[4l + s]`, `s < 6`) by two-source permutes
//!   (AVX-512) or plain loads, so the six rows of sixteen patches are 36 vectors with
//!   no scalar gather. `· B` runs on each row as it is split, `Bᵀ ·` on the six rows;
//!   edge tiles read through a zero-padded copy of the row.
//! - Output transform: the inverse: sixteen tiles' `Aᵀ M A` in lanes, then each of
//!   the four output rows is interleaved from its four phases into 64 consecutive
//!   outputs, finished by the epilogue (scale, bias, residual, clamp) and stored.
//! - The 36 GEMMs run on a register-blocked micro-kernel (8 filters × 32 tiles,
//!   accumulators in registers over all channels) against `U` packed once per call
//!   in blocks of 8 filters (each channel's 8 values contiguous); `V` is read in
//!   place, its columns padded to a multiple of 32.
//! - Every transform and the GEMM are compiled for AVX-512 and for AVX2+FMA and
//!   picked at run time ([`super::isa`]), with a portable build elsewhere.
//! - Parallelism: per block, the input transform splits the channels across the
//!   compute pool, the GEMMs the (ξ, filter block) pairs, the output transform the
//!   filters; one image (batch 1) uses every thread.
//!
//! When it runs: `OXNET_CONV_WINOGRAD=1` forces it on for every convolution it can
//! take ([`suitable`]), `=0` forces it off; otherwise (the default) it runs where
//! [`pays`] says it measured faster than im2col + GEMM.
//!
//! Numerics: the transforms of F(4×4, 3×3) have entries up to 8 and 1/24, and an
//! output's value is recovered from products that mix its whole 4×4 tile, so the
//! rounding error scales with the tile's magnitude rather than the output's own: it
//! stays under 2e-5 of the largest `Σ|w·x|` within the output's tile (the bound the
//! tests check against a float64 reference, forward and data gradient, on every
//! instruction set the CPU runs).

use super::conv::{par_ranges, ConvGeom, Epilogue, Scratch};
use super::{env_mode, isa, Isa, Mode, SendPtr};
use crate::error::Result;

/// SIMD lanes: tiles transformed together.
const L: usize = 16;
type Lanes = [f32; L];

/// Filters per micro-tile of the GEMM: `U` is packed in blocks of this many filters
/// (the last one zero-padded), `M` has that many rows per block.
const MR: usize = 8;

/// Tiles per micro-tile of the GEMM: the columns of `V` and `M` are padded to a
/// multiple of this.
const NC: usize = 32;

/// Row stride of `V` and `M` (`ld`), and the stride between their 36 planes (`vs`,
/// `ms`), in floats.
#[derive(Clone, Copy)]
struct Strides {
    ld: usize,
    vs: usize,
    ms: usize,
}

/// A block's budget: about this many floats of `V` (36 · c · tiles).
const BLOCK_FLOATS: usize = 1 << 21;

/// How the environment sets the choice (`OXNET_CONV_WINOGRAD`): unset, by shape
/// ([`pays`]); `1`, every [`suitable`] convolution; `0`, none.
fn mode() -> Mode {
    static MODE: std::sync::OnceLock<Mode> = std::sync::OnceLock::new();
    env_mode(&MODE, "OXNET_CONV_WINOGRAD")
}

/// True when the Winograd kernel runs this (float32) forward convolution.
pub fn applies(g: &ConvGeom) -> bool {
    suitable(g)
        && match mode() {
            Mode::On => true,
            Mode::Off => false,
            Mode::Auto => pays(g),
        }
}

/// A convolution Winograd can take: 2-D, 3×3, stride 1, no dilation, one group.
pub fn suitable(g: &ConvGeom) -> bool {
    g.x[0] == 1
        && g.k == [1, 3, 3]
        && g.s == [1, 1, 1]
        && g.d == [1, 1, 1]
        && g.p[0] == 0
        && g.groups == 1
        && g.c > 0
        && g.f > 0
        && g.y_len() > 0
}

/// Where the default (no `OXNET_CONV_WINOGRAD`) takes Winograd: measured against
/// im2col + GEMM on the 2-core AVX-512 machine (3×3 stride-1 convolutions of
/// ResNet, batch 1 and 32): it wins when the GEMMs are wide and deep enough for
/// the micro-kernel (at least 32 channels and filters) and there are enough tiles
/// (batch · tiles per image at least [`MIN_TILES`]) that the padding of the tile
/// columns to 32 and the per-call weight transform (36 · f · c values) are small
/// next to the products.
pub fn pays(g: &ConvGeom) -> bool {
    suitable(g) && g.c >= 32 && g.f >= 32 && g.batch * tiles(g) >= MIN_TILES
}

/// Fewest tiles (over the batch) for which the default takes Winograd.
const MIN_TILES: usize = 48;

/// (tile rows per image, tiles per tile row).
fn grid(g: &ConvGeom) -> (usize, usize) {
    (g.y[1].div_ceil(4), g.y[2].div_ceil(4))
}

/// Tiles per image.
fn tiles(g: &ConvGeom) -> usize {
    let (th, tw) = grid(g);
    th * tw
}

/// Kernels transformed together: one per filter of a filter block.
type W8 = [f32; MR];

#[inline(always)]
fn w8(f: impl Fn(usize) -> f32) -> W8 {
    std::array::from_fn(f)
}

/// `G · (g0, g1, g2)ᵀ` for [`MR`] kernels at once (products by the reciprocals
/// rather than divisions: the weight transform ran at ~1 µs per 3×3 kernel with
/// ten divisions each).
#[inline(always)]
fn g_col(g0: &W8, g1: &W8, g2: &W8) -> [W8; 6] {
    const R6: f32 = 1.0 / 6.0;
    const R12: f32 = 1.0 / 12.0;
    const R24: f32 = 1.0 / 24.0;
    [
        w8(|l| g0[l] * 0.25),
        w8(|l| -(g0[l] + g1[l] + g2[l]) * R6),
        w8(|l| -(g0[l] - g1[l] + g2[l]) * R6),
        w8(|l| g0[l] * R24 + g1[l] * R12 + g2[l] * R6),
        w8(|l| g0[l] * R24 - g1[l] * R12 + g2[l] * R6),
        *g2,
    ]
}

/// The 36 values `(G k Gᵀ)[ξ]` of [`MR`] 3×3 kernels `k` (`k[i]`: tap `i`,
/// row-major, of each kernel).
#[inline(always)]
fn weight_tile(k: &[W8; 9]) -> [W8; 36] {
    // G k (6×3), then (G k) Gᵀ (6×6).
    let mut gk = [[[0f32; MR]; 3]; 6];
    for j in 0..3 {
        let col = g_col(&k[j], &k[3 + j], &k[6 + j]);
        for i in 0..6 {
            gk[i][j] = col[i];
        }
    }
    let mut out = [[0f32; MR]; 36];
    for (i, row) in gk.iter().enumerate() {
        out[i * 6..i * 6 + 6].copy_from_slice(&g_col(&row[0], &row[1], &row[2]));
    }
    out
}

/// Filter blocks (of [`MR`]) of a run whose output has `f` channels.
fn filter_blocks(f: usize) -> usize {
    f.div_ceil(MR)
}

/// The weight transform of `w` `(f, c, 3, 3)` packed for the GEMM: `U[ξ]` is the
/// `rows × cols` matrix `(G w[r][q] Gᵀ)[ξ]`, stored as `up[((ξ · nb + r / MR) · cols
/// + q) · MR + r % MR]` (`nb` blocks of [`MR`] rows, the padding rows zero). With
/// `flip`, of the weights of the data gradient instead: `w'[c][f] = rot180(w[f][c])`
/// (rows `c`, columns `f`).
unsafe fn transform_weights(g: &ConvGeom, w: *const f32, flip: bool, up: *mut f32) -> Result<()> {
    let (f, c) = (g.f, g.c);
    let (rows, cols) = if flip { (c, f) } else { (f, c) };
    let nb = filter_blocks(rows);
    let pw = SendPtr(w as *mut f32);
    let pu = SendPtr(up);
    let run = move |_: usize, b0: usize, b1: usize| -> Result<()> {
        for rb in b0..b1 {
            for q in 0..cols {
                // k[i][ri]: tap i of the kernel of row rb·MR + ri (zero past rows).
                let mut k = [[0f32; MR]; 9];
                for ri in 0..MR.min(rows - rb * MR) {
                    let r = rb * MR + ri;
                    let (fi, ci) = if flip { (q, r) } else { (r, q) };
                    // SAFETY: w holds f·c·9 elements; fi < f, ci < c.
                    let src = unsafe { pw.get().add((fi * c + ci) * 9) };
                    for (i, kk) in k.iter_mut().enumerate() {
                        kk[ri] = unsafe { *src.add(if flip { 8 - i } else { i }) };
                    }
                }
                let vals = weight_tile(&k);
                for (xi, v) in vals.iter().enumerate() {
                    // SAFETY: up holds 36·nb·cols·MR elements.
                    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), pu.get().add(((xi * nb + rb) * cols + q) * MR), MR) };
                }
            }
        }
        Ok(())
    };
    par_ranges(nb, crate::engine::threads(), &run)
}

#[inline(always)]
fn lanes(f: impl Fn(usize) -> f32) -> Lanes {
    let mut o = [0f32; L];
    for (l, v) in o.iter_mut().enumerate() {
        *v = f(l);
    }
    o
}

/// `Bᵀ · d` for six lanes vectors (one column, or one row, of patches).
#[inline(always)]
fn bt(d: [&Lanes; 6]) -> [Lanes; 6] {
    let [d0, d1, d2, d3, d4, d5] = d;
    [
        lanes(|l| 4.0 * d0[l] - 5.0 * d2[l] + d4[l]),
        lanes(|l| -4.0 * (d1[l] + d2[l]) + d3[l] + d4[l]),
        lanes(|l| 4.0 * (d1[l] - d2[l]) - d3[l] + d4[l]),
        lanes(|l| 2.0 * (d3[l] - d1[l]) - d2[l] + d4[l]),
        lanes(|l| 2.0 * (d1[l] - d3[l]) - d2[l] + d4[l]),
        lanes(|l| 4.0 * d1[l] - 5.0 * d3[l] + d5[l]),
    ]
}

/// `Aᵀ · m` for six lanes vectors.
#[inline(always)]
fn at(m: [&Lanes; 6]) -> [Lanes; 4] {
    let [m0, m1, m2, m3, m4, m5] = m;
    [
        lanes(|l| m0[l] + m1[l] + m2[l] + m3[l] + m4[l]),
        lanes(|l| m1[l] - m2[l] + 2.0 * (m3[l] - m4[l])),
        lanes(|l| m1[l] + m2[l] + 4.0 * (m3[l] + m4[l])),
        lanes(|l| m1[l] - m2[l] + 8.0 * (m3[l] - m4[l]) + m5[l]),
    ]
}

/// Inputs one lanes group of patch rows reads: `4 · L + 2`, rounded up to what the
/// AVX-512 split loads (`4 + 4 · L`).
const ROW_SPAN: usize = 4 * L + 4;

/// The six stride-4 phases of `p[0 .. 4·L + 2]`: `d[s][l] = p[4l + s]`. Reads
/// `p[0 .. ROW_SPAN]`.
#[inline(always)]
unsafe fn split_portable(p: *const f32) -> [Lanes; 6] {
    let mut d = [[0f32; L]; 6];
    for l in 0..L {
        for (s, ds) in d.iter_mut().enumerate() {
            ds[l] = *p.add(4 * l + s);
        }
    }
    d
}

/// `out[4l + s] = o[s][l]` (`out`: 64 values).
#[inline(always)]
fn merge_portable(o: &[Lanes; 4], out: &mut [f32; 4 * L]) {
    for l in 0..L {
        for (s, os) in o.iter().enumerate() {
            out[4 * l + s] = os[l];
        }
    }
}

/// [`split_portable`] by permutes: phase `s` of 64 values `a‖b‖c‖d` takes
/// elements `s, s+4, …, s+28` of `a‖b` into lanes 0-7 and of `c‖d` into 8-15.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn split_avx512(p: *const f32) -> [Lanes; 6] {
    use std::arch::x86_64::*;
    let mut d = [[0f32; L]; 6];
    for (first, base) in [(0usize, p), (4, p.add(4))] {
        let (a, b) = (_mm512_loadu_ps(base), _mm512_loadu_ps(base.add(16)));
        let (c, e) = (_mm512_loadu_ps(base.add(32)), _mm512_loadu_ps(base.add(48)));
        for s in 0..(if first == 0 { 4 } else { 2 }) {
            let s = s as i32;
            let idx = _mm512_setr_epi32(
                s,
                s + 4,
                s + 8,
                s + 12,
                s + 16,
                s + 20,
                s + 24,
                s + 28,
                s,
                s + 4,
                s + 8,
                s + 12,
                s + 16,
                s + 20,
                s + 24,
                s + 28,
            );
            let lo = _mm512_permutex2var_ps(a, idx, b);
            let hi = _mm512_permutex2var_ps(c, idx, e);
            _mm512_storeu_ps(d[first + s as usize].as_mut_ptr(), _mm512_mask_blend_ps(0xFF00, lo, hi));
        }
    }
    d
}

/// [`merge_portable`] by permutes: output vector `k` lane `q` is phase `q % 4`,
/// tile `4k + q / 4`; phases 0/1 come from one two-source permute, 2/3 from another
/// with the same indices.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn merge_avx512(o: &[Lanes; 4], out: &mut [f32; 4 * L]) {
    use std::arch::x86_64::*;
    let p: [__m512; 4] = std::array::from_fn(|s| _mm512_loadu_ps(o[s].as_ptr()));
    for k in 0..4 {
        let b = 4 * k as i32;
        let idx = _mm512_setr_epi32(
            b,
            b + 16,
            b,
            b + 16,
            b + 1,
            b + 17,
            b + 1,
            b + 17,
            b + 2,
            b + 18,
            b + 2,
            b + 18,
            b + 3,
            b + 19,
            b + 3,
            b + 19,
        );
        let lo = _mm512_permutex2var_ps(p[0], idx, p[1]);
        let hi = _mm512_permutex2var_ps(p[2], idx, p[3]);
        _mm512_storeu_ps(out.as_mut_ptr().add(16 * k), _mm512_mask_blend_ps(0xCCCC, lo, hi));
    }
}

/// The instruction-set variants of the transforms, as a const parameter.
const PORTABLE: u8 = 0;
const AVX2: u8 = 1;
const AVX512: u8 = 2;

#[inline(always)]
unsafe fn split<const V: u8>(p: *const f32) -> [Lanes; 6] {
    #[cfg(target_arch = "x86_64")]
    if V == AVX512 {
        return split_avx512(p);
    }
    split_portable(p)
}

#[inline(always)]
unsafe fn merge<const V: u8>(o: &[Lanes; 4], out: &mut [f32; 4 * L]) {
    #[cfg(target_arch = "x86_64")]
    if V == AVX512 {
        return merge_avx512(o, out);
    }
    merge_portable(o, out)
}

/// Input transform of the tile rows `r0..r1` (global over the batch: row `rr` is
/// tile row `rr % th` of sample `rr / th`) for channels `c0..c1` of `x`, into `v`
/// (`36 × c × ld`, tile `l` of row `rr` at column `(rr - r0) · tw + l`); columns
/// from the block's last tile up to `np` are zeroed.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn input_body<const V: u8>(
    g: &ConvGeom,
    x: *const f32,
    r0: usize,
    r1: usize,
    c0: usize,
    c1: usize,
    v: *mut f32,
    st: Strides,
    np: usize,
) {
    let Strides { ld, vs, .. } = st;
    let (th_n, tw) = grid(g);
    let [_, xh, xw] = g.x;
    let (ph, pw) = (g.p[1] as isize, g.p[2] as isize);
    let xlen = xh * xw;
    let nt = (r1 - r0) * tw;
    let mut buf = [0f32; ROW_SPAN];
    for c in c0..c1 {
        for rr in r0..r1 {
            let (n, th) = (rr / th_n, rr % th_n);
            let plane = x.add((n * g.c + c) * xlen);
            let col0 = (rr - r0) * tw;
            let mut l0 = 0;
            while l0 < tw {
                let nl = L.min(tw - l0);
                let iw0 = (4 * l0) as isize - pw;
                // e[r·6 + j]: patch row r times B.
                let mut e = [[0f32; L]; 36];
                for r in 0..6 {
                    let ih = (4 * th + r) as isize - ph;
                    if ih < 0 || ih >= xh as isize {
                        continue;
                    }
                    let row = plane.add(ih as usize * xw);
                    let src: *const f32 = if iw0 >= 0 && iw0 + ROW_SPAN as isize <= xw as isize {
                        row.add(iw0 as usize)
                    } else {
                        let lo = (-iw0).clamp(0, ROW_SPAN as isize) as usize;
                        let hi = (xw as isize - iw0).clamp(lo as isize, ROW_SPAN as isize) as usize;
                        buf[..lo].fill(0.0);
                        std::ptr::copy_nonoverlapping(row.offset(iw0 + lo as isize), buf.as_mut_ptr().add(lo), hi - lo);
                        buf[hi..].fill(0.0);
                        buf.as_ptr()
                    };
                    let d = split::<V>(src);
                    let t = bt([&d[0], &d[1], &d[2], &d[3], &d[4], &d[5]]);
                    e[r * 6..r * 6 + 6].copy_from_slice(&t);
                }
                for j in 0..6 {
                    let col = bt([&e[j], &e[6 + j], &e[12 + j], &e[18 + j], &e[24 + j], &e[30 + j]]);
                    for (i, vals) in col.iter().enumerate() {
                        let dst = v.add((i * 6 + j) * vs + c * ld + col0 + l0);
                        std::ptr::copy_nonoverlapping(vals.as_ptr(), dst, nl);
                    }
                }
                l0 += L;
            }
        }
        if np > nt {
            for xi in 0..36 {
                std::ptr::write_bytes(v.add(xi * vs + c * ld + nt), 0, np - nt);
            }
        }
    }
}

/// Output transform of the tile rows `r0..r1` for filters `f0..f1` from `m`
/// (36 planes of `fp` rows, laid out as [`input_body`]'s `v`) into `y`, finished by `ep`.
/// Reads up to `L - 1` columns past a tile row's last tile (so `m` must extend
/// `L` floats past its last row).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn output_body<const V: u8>(
    g: &ConvGeom,
    m: *const f32,
    st: Strides,
    r0: usize,
    r1: usize,
    f0: usize,
    f1: usize,
    ep: &Epilogue<f32>,
    y: *mut f32,
) {
    let Strides { ld, ms, .. } = st;
    let (th_n, tw) = grid(g);
    let [_, yh, yw] = g.y;
    let ylen = yh * yw;
    let mut out = [0f32; 4 * L];
    for f in f0..f1 {
        let b = ep.bias.map_or(0.0, |b| *b.add(f));
        let sc = ep.scale.map_or(1.0, |v| *v.add(f));
        for rr in r0..r1 {
            let (n, th) = (rr / th_n, rr % th_n);
            let col0 = (rr - r0) * tw;
            let at_ = (n * g.f + f) * ylen;
            let plane = y.add(at_);
            let res = ep.residual.map(|r| r.add(at_));
            let mut l0 = 0;
            while l0 < tw {
                let mut e = [[0f32; L]; 24];
                for s in 0..6 {
                    let col: [Lanes; 6] =
                        std::array::from_fn(|r| std::ptr::read_unaligned(m.add((r * 6 + s) * ms + f * ld + col0 + l0) as *const Lanes));
                    for (r, v) in at([&col[0], &col[1], &col[2], &col[3], &col[4], &col[5]]).iter().enumerate() {
                        e[r * 6 + s] = *v;
                    }
                }
                let width = (4 * L).min(yw - 4 * l0);
                for r in 0..4 {
                    let oh = 4 * th + r;
                    if oh >= yh {
                        break;
                    }
                    let row = at([&e[r * 6], &e[r * 6 + 1], &e[r * 6 + 2], &e[r * 6 + 3], &e[r * 6 + 4], &e[r * 6 + 5]]);
                    let row = row.map(|v| lanes(|l| v[l] * sc + b));
                    merge::<V>(&row, &mut out);
                    let i = oh * yw + 4 * l0;
                    if let Some(res) = res {
                        let rs = std::slice::from_raw_parts(res.add(i), width);
                        for (o, a) in out.iter_mut().zip(rs) {
                            *o += *a;
                        }
                    }
                    if let Some((lo, hi)) = ep.clamp {
                        for o in out[..width].iter_mut() {
                            // (NaN stays NaN, as MXNet's relu keeps it.)
                            if *o < lo {
                                *o = lo;
                            } else if *o > hi {
                                *o = hi;
                            }
                        }
                    }
                    std::ptr::copy_nonoverlapping(out.as_ptr(), plane.add(i), width);
                }
                l0 += L;
            }
        }
    }
}

/// The GEMMs of filter blocks `b0..b1` of `M[ξ]`: `M[ξ][fb·MR ..][0..np] =
/// U[ξ] block fb (packed, `c × MR`) · V[ξ] (`c × np`, row stride `ld`)`, `np` a
/// multiple of [`NC`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_portable(
    up: *const f32,
    c: usize,
    nb: usize,
    xi: usize,
    b0: usize,
    b1: usize,
    v: *const f32,
    m: *mut f32,
    st: Strides,
    np: usize,
) {
    let Strides { ld, vs, ms } = st;
    let vx = v.add(xi * vs);
    for fb in b0..b1 {
        let a = up.add((xi * nb + fb) * c * MR);
        let mx = m.add(xi * ms + fb * MR * ld);
        for j0 in (0..np).step_by(NC) {
            let mut acc = [[0f32; NC]; MR];
            for p in 0..c {
                let brow = &*(vx.add(p * ld + j0) as *const [f32; NC]);
                for (i, r) in acc.iter_mut().enumerate() {
                    let av = *a.add(p * MR + i);
                    for (o, bv) in r.iter_mut().zip(brow) {
                        *o += av * bv;
                    }
                }
            }
            for (i, r) in acc.iter().enumerate() {
                std::ptr::copy_nonoverlapping(r.as_ptr(), mx.add(i * ld + j0), NC);
            }
        }
    }
}

/// [`gemm_portable`] on one instruction set: `MR × (NV · lanes)` tiles, `MR · NV`
/// accumulators kept in registers over all channels. One macro stamps out the
/// AVX-512 kernel (8 × 32, 16 accumulators) and the AVX2 one (8 × 8, 8): the same
/// loop over a different vector type.
macro_rules! gemm_isa {
    ($name:ident, $feat:literal, $nv:expr, $lanes:expr, $zero:ident, $load:ident, $store:ident, $set1:ident, $fma:ident) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $feat)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $name(
            up: *const f32,
            c: usize,
            nb: usize,
            xi: usize,
            b0: usize,
            b1: usize,
            v: *const f32,
            m: *mut f32,
            st: Strides,
            np: usize,
        ) {
            let Strides { ld, vs, ms } = st;
            use std::arch::x86_64::*;
            let vx = v.add(xi * vs);
            for fb in b0..b1 {
                let a = up.add((xi * nb + fb) * c * MR);
                let mx = m.add(xi * ms + fb * MR * ld);
                for j0 in (0..np).step_by($nv * $lanes) {
                    let mut acc = [[$zero(); $nv]; MR];
                    let mut bp = vx.add(j0);
                    let mut ap = a;
                    for _ in 0..c {
                        let bv: [_; $nv] = std::array::from_fn(|q| $load(bp.add(q * $lanes)));
                        for (i, r) in acc.iter_mut().enumerate() {
                            let av = $set1(*ap.add(i));
                            for (o, b) in r.iter_mut().zip(&bv) {
                                *o = $fma(av, *b, *o);
                            }
                        }
                        bp = bp.add(ld);
                        ap = ap.add(MR);
                    }
                    for (i, r) in acc.iter().enumerate() {
                        for (q, o) in r.iter().enumerate() {
                            $store(mx.add(i * ld + j0 + q * $lanes), *o);
                        }
                    }
                }
            }
        }
    };
}

gemm_isa!(gemm_avx512, "avx512f,fma", 2, 16, _mm512_setzero_ps, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_fmadd_ps);
gemm_isa!(gemm_avx2, "avx2,fma", 1, 8, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_fmadd_ps);

macro_rules! isa_variants {
    ($input:ident, $output:ident, $feat:literal, $v:expr) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $feat)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $input(g: &ConvGeom, x: *const f32, r0: usize, r1: usize, c0: usize, c1: usize, v: *mut f32, st: Strides, np: usize) {
            input_body::<{ $v }>(g, x, r0, r1, c0, c1, v, st, np)
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $feat)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $output(
            g: &ConvGeom,
            m: *const f32,
            st: Strides,
            r0: usize,
            r1: usize,
            f0: usize,
            f1: usize,
            ep: &Epilogue<f32>,
            y: *mut f32,
        ) {
            output_body::<{ $v }>(g, m, st, r0, r1, f0, f1, ep, y)
        }
    };
}

isa_variants!(input_avx512, output_avx512, "avx512f,fma", AVX512);
isa_variants!(input_avx2, output_avx2, "avx2,fma", AVX2);

#[allow(clippy::too_many_arguments)]
unsafe fn input(isa: Isa, g: &ConvGeom, x: *const f32, r0: usize, r1: usize, c0: usize, c1: usize, v: *mut f32, st: Strides, np: usize) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => input_avx512(g, x, r0, r1, c0, c1, v, st, np),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => input_avx2(g, x, r0, r1, c0, c1, v, st, np),
        _ => input_body::<PORTABLE>(g, x, r0, r1, c0, c1, v, st, np),
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn output(
    isa: Isa,
    g: &ConvGeom,
    m: *const f32,
    st: Strides,
    r0: usize,
    r1: usize,
    f0: usize,
    f1: usize,
    ep: &Epilogue<f32>,
    y: *mut f32,
) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => output_avx512(g, m, st, r0, r1, f0, f1, ep, y),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => output_avx2(g, m, st, r0, r1, f0, f1, ep, y),
        _ => output_body::<PORTABLE>(g, m, st, r0, r1, f0, f1, ep, y),
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn gemm(
    isa: Isa,
    up: *const f32,
    c: usize,
    nb: usize,
    xi: usize,
    b0: usize,
    b1: usize,
    v: *const f32,
    m: *mut f32,
    st: Strides,
    np: usize,
) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => gemm_avx512(up, c, nb, xi, b0, b1, v, m, st, np),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => gemm_avx2(up, c, nb, xi, b0, b1, v, m, st, np),
        _ => gemm_portable(up, c, nb, xi, b0, b1, v, m, st, np),
    }
}

/// Forward convolution by Winograd: `y = ep(w ⋆ x)`, `y` overwritten.
///
/// # Safety
/// The pointers must be valid for the extents `g` gives (which must be
/// [`suitable`]; [`applies`] says when it pays), and `y` must not overlap the
/// inputs or `ep`'s residual.
pub unsafe fn forward(g: &ConvGeom, x: *const f32, w: *const f32, ep: &Epilogue<f32>, y: *mut f32) -> Result<()> {
    forward_with(isa(), g, x, w, ep, y)
}

/// [`forward`] with the kernels of `isa` (which the CPU must run).
unsafe fn forward_with(isa: Isa, g: &ConvGeom, x: *const f32, w: *const f32, ep: &Epilogue<f32>, y: *mut f32) -> Result<()> {
    if g.batch <= CACHE_MAX_BATCH {
        let u = cached_weights(g, w)?;
        return run(isa, g, x, u.as_ptr(), ep, y);
    }
    let u = Scratch::<f32>::new(36 * filter_blocks(g.f) * MR * g.c)?;
    transform_weights(g, w, false, u.ptr)?;
    run(isa, g, x, u.ptr, ep, y)
}

/// Largest batch whose forward calls keep their transformed weights: at batch 1
/// the transform (36/9 of the weights written per call: 2.4 MB for 128 × 128
/// filters) costs a part of the convolution; at batch 32 it does not, and training
/// changes the weights every step.
const CACHE_MAX_BATCH: usize = 8;

/// Floats (raw copies and transforms) the cache keeps at most.
const CACHE_FLOATS: usize = 1 << 24;

/// A forward call's weights: where they were, a copy of them and their transform.
struct Cached {
    at: usize,
    f: usize,
    c: usize,
    raw: Vec<u32>,
    u: std::sync::Arc<Vec<f32>>,
}

static CACHE: std::sync::Mutex<Vec<Cached>> = std::sync::Mutex::new(Vec::new());

/// The transform of `w` (`(f, c, 3, 3)`) for the forward GEMM: reused from an
/// earlier call with the same address and shape whose weights are bit for bit the
/// same (compared in full on every call, so an array written in place, or freed and
/// reused, is transformed again); else computed and kept, the oldest entries
/// dropped beyond [`CACHE_FLOATS`].
///
/// # Safety
/// `w` must hold `f · c · 9` floats.
unsafe fn cached_weights(g: &ConvGeom, w: *const f32) -> Result<std::sync::Arc<Vec<f32>>> {
    let n = g.f * g.c * 9;
    // (Bits, not values: -0.0 and NaN weights compare as what they are.)
    let raw = std::slice::from_raw_parts(w as *const u32, n);
    let key = (w as usize, g.f, g.c);
    {
        let cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = cache.iter().find(|e| (e.at, e.f, e.c) == key && e.raw[..] == raw[..]) {
            return Ok(e.u.clone());
        }
    }
    let len = 36 * filter_blocks(g.f) * MR * g.c;
    let mut u: Vec<f32> = Vec::new();
    u.try_reserve_exact(len).map_err(|_| crate::error::Error::new("Convolution: out of memory for the Winograd weights"))?;
    // (The transform writes all `len` floats, the padding rows' zeros included, as
    // it does into the uninitialised scratch of the uncached path.)
    transform_weights(g, w, false, u.as_mut_ptr())?;
    u.set_len(len);
    let u = std::sync::Arc::new(u);
    let mut copy: Vec<u32> = Vec::new();
    if copy.try_reserve_exact(n).is_ok() && n + len <= CACHE_FLOATS {
        copy.extend_from_slice(raw);
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        cache.retain(|e| (e.at, e.f, e.c) != key);
        cache.push(Cached { at: key.0, f: g.f, c: g.c, raw: copy, u: u.clone() });
        let mut total: usize = cache.iter().map(|e| e.raw.len() + e.u.len()).sum();
        while total > CACHE_FLOATS {
            let e = cache.remove(0);
            total -= e.raw.len() + e.u.len();
        }
    }
    Ok(u)
}

/// The data gradient of a convolution `g` (which [`backward_data_applies`] to) by
/// Winograd: `dx = conv(dy, rot180(wᵀ))` with padding `2 - p`; overwritten.
///
/// # Safety
/// As for [`forward`], with `dy` the input and `dx` the output.
pub unsafe fn backward_data(g: &ConvGeom, w: *const f32, dy: *const f32, dx: *mut f32) -> Result<()> {
    let t = transposed(g);
    let u = Scratch::<f32>::new(36 * filter_blocks(g.c) * MR * g.f)?;
    transform_weights(g, w, true, u.ptr)?;
    run(isa(), &t, dy, u.ptr, &Epilogue::bias(None), dx)
}

/// True when Winograd runs `g`'s data gradient (the forward convolution of `dy`
/// with the flipped weights, padding `2 - p`): by default where that forward
/// convolution [`pays`] (measured on ResNet-18's 3×3 layers at batch 32, the data
/// gradient took 0.45–0.9× the time of im2col + GEMM); `OXNET_CONV_WINOGRAD`
/// forces it as for the forward pass.
pub fn backward_data_applies(g: &ConvGeom) -> bool {
    backward_data_suitable(g)
        && match mode() {
            Mode::On => true,
            Mode::Off => false,
            Mode::Auto => pays(&transposed(g)),
        }
}

fn backward_data_suitable(g: &ConvGeom) -> bool {
    g.p[1] <= 2 && g.p[2] <= 2 && suitable(g) && suitable(&transposed(g))
}

fn transposed(g: &ConvGeom) -> ConvGeom {
    ConvGeom { c: g.f, f: g.c, x: g.y, y: g.x, p: [0, 2usize.saturating_sub(g.p[1]), 2usize.saturating_sub(g.p[2])], ..g.clone() }
}

/// The tile walk: per block of tile rows, transform the inputs, 36 GEMMs,
/// transform the outputs. `up`: the weights as [`transform_weights`] packs them.
unsafe fn run(isa: Isa, g: &ConvGeom, x: *const f32, up: *const f32, ep: &Epilogue<f32>, y: *mut f32) -> Result<()> {
    let (th_n, tw) = grid(g);
    let rows = g.batch * th_n;
    let threads = crate::engine::threads().max(1);
    let nb = filter_blocks(g.f);
    let fp = nb * MR;
    // Tile rows per block: about BLOCK_FLOATS of V, between 4 and 32 lane groups
    // of tiles, at least one row, at most all.
    let tb = (BLOCK_FLOATS / (36 * g.c.max(fp))).clamp(4 * L, 32 * L);
    let rb = (tb / tw).clamp(1, rows);
    // Row and plane strides an odd number of cache lines (ld ≡ 16 mod 32, planes
    // 16 floats apart): with strides of a multiple of 4 KiB the GEMM's rows of V
    // and the output transform's 36 planes of M fell into a few L1 sets.
    let ld = (rb * tw).div_ceil(NC) * NC + 16;
    let st = Strides { ld, vs: g.c * ld + 16, ms: fp * ld + 16 };
    let v = Scratch::<f32>::new(36 * st.vs)?;
    // (L floats of slack: the output transform's last lanes group reads past the
    // last column; they are never stored.)
    let m = Scratch::<f32>::new(36 * st.ms + L)?;
    // What those reads may reach and no GEMM writes: the last 16 columns of each
    // row, the gaps between the planes, the slack.
    for xi in 0..36 {
        for r in 0..fp {
            std::ptr::write_bytes(m.ptr.add(xi * st.ms + r * ld + ld - 16), 0, 16);
        }
        std::ptr::write_bytes(m.ptr.add(xi * st.ms + fp * ld), 0, 16);
    }
    std::ptr::write_bytes(m.ptr.add(36 * st.ms), 0, L);
    let (px, py, pv, pm, pu) = (SendPtr(x as *mut f32), SendPtr(y), SendPtr(v.ptr), SendPtr(m.ptr), SendPtr(up as *mut f32));
    let mut r0 = 0;
    while r0 < rows {
        let r1 = (r0 + rb).min(rows);
        let np = ((r1 - r0) * tw).div_ceil(NC) * NC;
        par_ranges(g.c, threads, &|_, c0, c1| {
            // SAFETY: each task writes the V rows of its own channels.
            unsafe { input(isa, g, px.get(), r0, r1, c0, c1, pv.get(), st, np) };
            Ok(())
        })?;
        par_ranges(36 * nb, threads, &|_, s, e| {
            // SAFETY: each task writes the M rows of its own (ξ, filter block) pairs.
            unsafe {
                let mut i = s;
                while i < e {
                    let (xi, b0) = (i / nb, i % nb);
                    let b1 = nb.min(b0 + (e - i));
                    gemm(isa, pu.get(), g.c, nb, xi, b0, b1, pv.get(), pm.get(), st, np);
                    i += b1 - b0;
                }
            }
            Ok(())
        })?;
        // The M columns a block's output transform reads past np (its last lanes
        // group) hold finite values: zeros or an earlier block's products.
        par_ranges(g.f, threads, &|_, f0, f1| {
            // SAFETY: each task writes the output planes of its own filters.
            unsafe { output(isa, g, pm.get(), st, r0, r1, f0, f1, ep, py.get()) };
            Ok(())
        })?;
        r0 = r1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::cpu::conv::tests::data_f32 as data;
    use crate::kernels::cpu::conv::{conv_backward_data, conv_forward, conv_forward_general};

    fn geom(batch: usize, c: usize, f: usize, h: usize, w: usize, p: usize) -> ConvGeom {
        let y = [1, h + 2 * p - 2, w + 2 * p - 2];
        ConvGeom { batch, c, f, groups: 1, x: [1, h, w], y, k: [1, 3, 3], s: [1; 3], d: [1; 3], p: [0, p, p] }
    }

    /// float64 reference `(y, Σ|w·x|)` per output.
    fn reference(g: &ConvGeom, x: &[f32], w: &[f32]) -> (Vec<f64>, Vec<f64>) {
        let [_, xh, xw] = g.x;
        let [_, yh, yw] = g.y;
        let mut y = vec![0.0; g.batch * g.f * yh * yw];
        let mut mag = y.clone();
        for n in 0..g.batch {
            for f in 0..g.f {
                for oh in 0..yh {
                    for ow in 0..yw {
                        let (mut acc, mut m) = (0.0f64, 0.0f64);
                        for c in 0..g.c {
                            for kh in 0..3 {
                                for kw in 0..3 {
                                    let ih = (oh + kh) as isize - g.p[1] as isize;
                                    let iw = (ow + kw) as isize - g.p[2] as isize;
                                    if ih < 0 || iw < 0 || ih >= xh as isize || iw >= xw as isize {
                                        continue;
                                    }
                                    let xv = x[((n * g.c + c) * xh + ih as usize) * xw + iw as usize] as f64;
                                    let wv = w[((f * g.c + c) * 3 + kh) * 3 + kw] as f64;
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

    /// The documented bound: the error of an output is at most 2e-5 of the largest
    /// `Σ|w·x|` in its 4×4 output tile (an output whose own taps all lie in the
    /// padding is then not exactly zero, as its tile's transforms mix in its
    /// neighbours'). `h`, `w`: the output planes' size.
    fn check(what: &str, g: &ConvGeom, (h, w): (usize, usize), got: &[f32], want: &[f64], mag: &[f64]) {
        let tile_max = |i: usize| {
            let (plane, r, c) = (i / (h * w), (i % (h * w)) / w, i % w);
            let (r0, c0) = (r / 4 * 4, c / 4 * 4);
            let mut m = 0f64;
            for rr in r0..(r0 + 4).min(h) {
                for cc in c0..(c0 + 4).min(w) {
                    m = m.max(mag[plane * h * w + rr * w + cc]);
                }
            }
            m
        };
        for (i, (a, b)) in got.iter().zip(want).enumerate() {
            let err = (*a as f64 - b).abs();
            let m = tile_max(i);
            assert!(err <= 2e-5 * m, "{what} {g:?} at {i}: {a} vs {b} (largest |w·x| sum in the tile {m})");
        }
    }

    /// The instruction sets this CPU runs, the portable kernels included.
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

    /// Small-batch forward calls reuse the transformed weights only while the
    /// weights are the same bits: written in place between calls (one weight, or a
    /// sign of zero), the result is that of the new weights, as computed from a
    /// copy at another address (whose transform the cache cannot hold yet).
    #[test]
    fn cached_transform_follows_weights_written_in_place() {
        let g = geom(1, 16, 24, 12, 12, 1);
        let x = data(g.c * g.x_len(), 11);
        let mut w = data(g.f * g.c * 9, 12);
        let ep = Epilogue::bias(None);
        let run_at = |w: &[f32]| {
            let mut y = vec![f32::NAN; g.f * g.y_len()];
            unsafe { forward_with(isa(), &g, x.as_ptr(), w.as_ptr(), &ep, y.as_mut_ptr()).unwrap() };
            y
        };
        let first = run_at(&w);
        assert_eq!(run_at(&w), first, "a hit gives the same result");
        for (at, v) in [(5, 0.75f32), (g.f * g.c * 9 - 1, -0.0), (0, 0.0)] {
            w[at] = v;
            let fresh = run_at(&w.clone());
            let got = run_at(&w);
            assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), fresh.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
            assert_ne!(got, first);
        }
        // Another shape at the same address is another entry.
        let g2 = geom(1, 24, 16, 12, 12, 1);
        let x2 = data(g2.c * g2.x_len(), 13);
        let (want, mag) = reference(&g2, &x2, &w);
        let mut y2 = vec![f32::NAN; g2.f * g2.y_len()];
        unsafe { forward_with(isa(), &g2, x2.as_ptr(), w.as_ptr(), &ep, y2.as_mut_ptr()).unwrap() };
        check("reshaped", &g2, (g2.y[1], g2.y[2]), &y2, &want, &mag);
    }

    #[test]
    fn forward_within_bound_of_float64_on_every_isa() {
        for (g, bias) in [
            (geom(1, 16, 16, 8, 8, 1), false),
            (geom(2, 17, 19, 9, 11, 1), true),
            (geom(3, 16, 32, 7, 5, 0), false),
            (geom(1, 32, 16, 14, 13, 2), true),
            (geom(2, 16, 20, 5, 13, 3), false),
            (geom(1, 3, 2, 3, 3, 0), true),
            // tile rows wider than a lanes group (80 and 17 tiles), one narrower
            (geom(1, 8, 9, 320, 6, 1), false),
            (geom(1, 5, 7, 6, 67, 0), true),
            // more tiles than one block: several blocks, the last one short
            (geom(2, 16, 16, 70, 69, 1), true),
            (geom(1, 300, 9, 40, 40, 1), false),
        ] {
            let x = data(g.batch * g.c * g.x_len(), 1);
            let w = data(g.f * g.c * 9, 2);
            let b = data(g.f, 3);
            let (mut want, mag) = reference(&g, &x, &w);
            if bias {
                for (i, v) in want.iter_mut().enumerate() {
                    *v += b[(i / g.y_len()) % g.f] as f64;
                }
            }
            let mag: Vec<f64> = mag.iter().map(|m| m + if bias { 1.0 } else { 0.0 }).collect();
            for isa in isas() {
                let mut y = vec![f32::NAN; g.batch * g.f * g.y_len()];
                let ep = Epilogue::bias(bias.then_some(b.as_ptr()));
                unsafe { forward_with(isa, &g, x.as_ptr(), w.as_ptr(), &ep, y.as_mut_ptr()).unwrap() };
                check(&format!("forward {isa:?}"), &g, (g.y[1], g.y[2]), &y, &want, &mag);
            }
        }
    }

    /// Random shapes (odd sizes, batch 1 included, padding 0-2, channel counts off
    /// the lanes and filter-block sizes) against im2col + GEMM in float64, on every
    /// instruction set, with a full epilogue on every other shape.
    #[test]
    fn random_shapes_match_im2col_reference() {
        let mut s = 12345u64;
        let mut next = |lo: usize, hi: usize| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            lo + ((s >> 33) as usize) % (hi - lo + 1)
        };
        for case in 0..24 {
            let p = next(0, 2);
            let (h, w) = (next(3usize.saturating_sub(2 * p).max(1), 41), next(3usize.saturating_sub(2 * p).max(1), 75));
            let batch = if case % 3 == 0 { 1 } else { next(1, 3) };
            let g = geom(batch, next(1, 40), next(1, 37), h, w, p);
            if !suitable(&g) {
                continue;
            }
            let x = data(g.batch * g.c * g.x_len(), 20 + case);
            let wt = data(g.f * g.c * 9, 40 + case);
            let sc = data(g.f, 60 + case);
            let b = data(g.f, 80 + case);
            let r = data(g.batch * g.f * g.y_len(), 100 + case);
            let full = case % 2 == 1;
            let f64s = |v: &[f32]| v.iter().map(|&a| a as f64).collect::<Vec<f64>>();
            let (x64, w64) = (f64s(&x), f64s(&wt));
            let mut want = vec![0f64; g.batch * g.f * g.y_len()];
            unsafe { conv_forward_general(&g, x64.as_ptr(), w64.as_ptr(), &Epilogue::bias(None), want.as_mut_ptr()).unwrap() };
            let (xa, wa): (Vec<f64>, Vec<f64>) = (x64.iter().map(|v| v.abs()).collect(), w64.iter().map(|v| v.abs()).collect());
            let mut mag = vec![0f64; want.len()];
            unsafe { conv_forward_general(&g, xa.as_ptr(), wa.as_ptr(), &Epilogue::bias(None), mag.as_mut_ptr()).unwrap() };
            let ylen = g.y_len();
            if full {
                for (i, v) in want.iter_mut().enumerate() {
                    let f = (i / ylen) % g.f;
                    *v = (*v * sc[f] as f64 + b[f] as f64 + r[i] as f64).clamp(-0.3, 0.4);
                }
                for (i, m) in mag.iter_mut().enumerate() {
                    *m = *m * (sc[(i / ylen) % g.f] as f64).abs() + 2.0;
                }
            }
            let ep = if full {
                Epilogue { scale: Some(sc.as_ptr()), bias: Some(b.as_ptr()), residual: Some(r.as_ptr()), clamp: Some((-0.3, 0.4)) }
            } else {
                Epilogue::bias(None)
            };
            for isa in isas() {
                let mut y = vec![f32::NAN; want.len()];
                unsafe { forward_with(isa, &g, x.as_ptr(), wt.as_ptr(), &ep, y.as_mut_ptr()).unwrap() };
                check(&format!("random {isa:?} full={full}"), &g, (g.y[1], g.y[2]), &y, &want, &mag);
            }
        }
    }

    #[test]
    fn split_and_merge_are_inverse_phase_shuffles() {
        let src: Vec<f32> = (0..ROW_SPAN).map(|i| i as f32).collect();
        let want = unsafe { split_portable(src.as_ptr()) };
        for s in 0..6 {
            for l in 0..L {
                assert_eq!(want[s][l], (4 * l + s) as f32);
            }
        }
        let o: [Lanes; 4] = std::array::from_fn(|s| lanes(|l| (100 * s + l) as f32));
        let mut merged = [0f32; 4 * L];
        merge_portable(&o, &mut merged);
        for (i, v) in merged.iter().enumerate() {
            assert_eq!(*v, (100 * (i % 4) + i / 4) as f32);
        }
        #[cfg(target_arch = "x86_64")]
        if isas().contains(&Isa::Avx512) {
            assert_eq!(unsafe { split_avx512(src.as_ptr()) }, want);
            let mut m2 = [0f32; 4 * L];
            unsafe { merge_avx512(&o, &mut m2) };
            assert_eq!(m2, merged);
        }
    }

    #[test]
    fn suitability_and_the_dispatch_agree() {
        let g = geom(4, 32, 32, 16, 16, 1);
        assert!(suitable(&g) && pays(&g));
        assert!(!suitable(&ConvGeom { groups: 2, ..g.clone() }));
        assert!(!suitable(&ConvGeom { s: [1, 2, 2], ..g.clone() }));
        // too few tiles, too few channels: suitable, but the default keeps im2col
        assert!(suitable(&geom(1, 512, 512, 7, 7, 1)) && !pays(&geom(1, 512, 512, 7, 7, 1)));
        assert!(!pays(&geom(8, 16, 64, 32, 32, 1)));
        let want = match mode() {
            Mode::On => true,
            Mode::Off => false,
            Mode::Auto => true,
        };
        assert_eq!(applies(&g), want);
        let x = data(g.batch * g.c * g.x_len(), 4);
        let w = data(g.f * g.c * 9, 5);
        let mut y = vec![0f32; g.batch * g.f * g.y_len()];
        unsafe { conv_forward(&g, x.as_ptr(), w.as_ptr(), None, y.as_mut_ptr()).unwrap() };
        let (want, mag) = reference(&g, &x, &w);
        check("conv_forward", &g, (g.y[1], g.y[2]), &y, &want, &mag);
    }

    #[test]
    fn epilogue_adds_residual_and_clamps_on_every_path() {
        use crate::kernels::cpu::conv::{conv_forward_fused, conv_forward_general};
        // Winograd (f32, applies), im2col (f32 forced; f64), both batch chunking
        // regimes (a small image: chunks of samples; a larger one: one sample).
        for g in [geom(3, 16, 16, 12, 12, 1), geom(9, 16, 16, 4, 4, 1)] {
            let x = data(g.batch * g.c * g.x_len(), 8);
            let w = data(g.f * g.c * 9, 9);
            let b = data(g.f, 10);
            let r = data(g.batch * g.f * g.y_len(), 11);
            let sc = data(g.f, 12);
            let ep = Epilogue { scale: Some(sc.as_ptr()), bias: Some(b.as_ptr()), residual: Some(r.as_ptr()), clamp: Some((0.0, 0.5)) };
            let (want, mag) = reference(&g, &x, &w);
            let want: Vec<f64> = want
                .iter()
                .enumerate()
                .map(|(i, v)| (v * sc[(i / g.y_len()) % g.f] as f64 + b[(i / g.y_len()) % g.f] as f64 + r[i] as f64).clamp(0.0, 0.5))
                .collect();
            let mag: Vec<f64> = mag.iter().map(|m| m + 2.0).collect();
            let mut y = vec![f32::NAN; want.len()];
            unsafe { conv_forward_fused(&g, x.as_ptr(), w.as_ptr(), &ep, y.as_mut_ptr()).unwrap() };
            check("fused", &g, (g.y[1], g.y[2]), &y, &want, &mag);
            let mut y = vec![f32::NAN; want.len()];
            unsafe { conv_forward_general(&g, x.as_ptr(), w.as_ptr(), &ep, y.as_mut_ptr()).unwrap() };
            check("general", &g, (g.y[1], g.y[2]), &y, &want, &mag);
            let f64s = |v: &[f32]| v.iter().map(|&a| a as f64).collect::<Vec<f64>>();
            let (x64, w64, b64, r64, s64) = (f64s(&x), f64s(&w), f64s(&b), f64s(&r), f64s(&sc));
            let ep64 =
                Epilogue { scale: Some(s64.as_ptr()), bias: Some(b64.as_ptr()), residual: Some(r64.as_ptr()), clamp: Some((0.0, 0.5)) };
            let mut y64 = vec![f64::NAN; want.len()];
            unsafe { conv_forward_fused(&g, x64.as_ptr(), w64.as_ptr(), &ep64, y64.as_mut_ptr()).unwrap() };
            for (a, b) in y64.iter().zip(&want) {
                assert!((a - b).abs() < 1e-12, "f64 {g:?}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn data_gradient_matches_general_path() {
        for p in 0..=2 {
            let g = geom(2, 16, 24, 13, 15, p);
            assert!(backward_data_suitable(&g), "{g:?}");
            let w = data(g.f * g.c * 9, 6);
            let dy = data(g.batch * g.f * g.y_len(), 7);
            let mut dx = vec![f32::NAN; g.batch * g.c * g.x_len()];
            // By Winograd ...
            unsafe { backward_data(&g, w.as_ptr(), dy.as_ptr(), dx.as_mut_ptr()).unwrap() };
            // ... against the general path in float64.
            let w64: Vec<f64> = w.iter().map(|&v| v as f64).collect();
            let dy64: Vec<f64> = dy.iter().map(|&v| v as f64).collect();
            let mut want = vec![0f64; dx.len()];
            unsafe { conv_backward_data(&g, w64.as_ptr(), dy64.as_ptr(), want.as_mut_ptr()).unwrap() };
            // The magnitude: the same transposed convolution of |w| and |dy|.
            let wa: Vec<f64> = w64.iter().map(|v| v.abs()).collect();
            let da: Vec<f64> = dy64.iter().map(|v| v.abs()).collect();
            let mut mag = vec![0f64; dx.len()];
            unsafe { conv_backward_data(&g, wa.as_ptr(), da.as_ptr(), mag.as_mut_ptr()).unwrap() };
            check("backward_data", &g, (g.x[1], g.x[2]), &dx, &want, &mag);
        }
        assert!(!backward_data_suitable(&geom(2, 16, 24, 13, 15, 3)));
    }

    /// Release-mode timing against im2col + GEMM on ResNet's 3×3 shapes (stride 1,
    /// pad 1), same process, back to back:
    /// `cargo test -p oxnet-core --profile ci-test --lib winograd_timing -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn winograd_timing() {
        for (b, c, hw) in [(1, 64, 56), (1, 128, 28), (1, 256, 14), (1, 512, 7), (32, 64, 56), (32, 128, 28), (32, 256, 14), (32, 512, 7)] {
            let g = geom(b, c, c, hw, hw, 1);
            let x = data(g.batch * g.c * g.x_len(), 1);
            let w = data(g.f * g.c * 9, 2);
            let mut y = vec![0f32; g.batch * g.f * g.y_len()];
            let reps = if b == 1 { 15 } else { 3 };
            let time = |f: &mut dyn FnMut()| {
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
            };
            let ep = Epilogue::bias(None);
            let wino = time(&mut || unsafe { forward(&g, x.as_ptr(), w.as_ptr(), &ep, y.as_mut_ptr()).unwrap() });
            // The im2col + GEMM path, bypassing the dispatch.
            let gen = time(&mut || unsafe { conv_forward_general(&g, x.as_ptr(), w.as_ptr(), &ep, y.as_mut_ptr()).unwrap() });
            let gflop = 2.0 * (g.batch * g.f * g.c * 9 * g.y_len()) as f64 / 1e9;
            println!(
                "b{b} c{c} {hw}x{hw}: winograd {wino:.2} ms ({:.0} GFLOP/s eq), im2col {gen:.2} ms ({:.0} GFLOP/s), pays={}",
                gflop / wino * 1e3,
                gflop / gen * 1e3,
                pays(&g)
            );
        }
    }
}
