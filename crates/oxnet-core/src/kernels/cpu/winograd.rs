//! Winograd F(4×4, 3×3) for float32 2-D convolutions with 3×3 kernels at stride 1
//! (one group, no dilation, any padding), used by [`super::conv::conv_forward`] (and
//! for the data gradient, which is such a convolution of `dy` with the flipped,
//! transposed weights) where [`applies`] says so.
//!
//! The output is cut into 4×4 tiles; tile `t` reads the 6×6 input patch under it.
//! With the transforms `V = Bᵀ d B` of each patch and channel, `U = G g Gᵀ` of each
//! filter and channel, and `Y = Aᵀ M A` of each product, the convolution becomes 36
//! independent GEMMs `M[ξ] = U[ξ] · V[ξ]` (`f × c` times `c × tiles`), 36
//! multiplications per 16 outputs and channel instead of 144. The tiles are
//! walked in blocks sized so that a block's transformed inputs stay near the cache;
//! per block the input transform runs in parallel over channels, the GEMMs over
//! `ξ`, the output transform over filters, so one image (batch 1) uses every
//! thread as well as a batch does.
//!
//! Transforms are computed for 16 tiles at a time, one tile per SIMD lane, and
//! compiled for AVX-512 and AVX2+FMA, picked at run time (a generic build elsewhere).
//!
//! Numerics: the transforms of F(4×4, 3×3) have entries up to 8 and 1/24, and an
//! output's value is recovered from products that mix its whole 4×4 tile, so the
//! rounding error scales with the tile's magnitude rather than the output's own: it
//! stays under 2e-5 of the largest `Σ|w·x|` within the output's tile (the bound the
//! tests check against a float64 reference, forward and data gradient).

use super::conv::{par_ranges, ConvGeom, Epilogue, Scratch};
use super::gemm::gemm_batched;
use super::SendPtr;
use crate::error::Result;

/// SIMD lanes: tiles transformed together.
const L: usize = 16;
type Lanes = [f32; L];

/// Transformed input elements per block and channel budget: a block holds about
/// this many floats of `V` (36 · c · tiles).
const BLOCK_FLOATS: usize = 1 << 21;

/// True when the Winograd kernel runs this (float32) convolution: when it is
/// [`enabled`] and [`suitable`].
pub fn applies(g: &ConvGeom) -> bool {
    enabled() && suitable(g)
}

/// A convolution Winograd can take and should pay on: 2-D, 3×3, stride 1, no
/// dilation, one group, enough channels and filters for the GEMMs to be efficient,
/// and enough tiles that the transformed weights (4× the weights) are reused.
pub fn suitable(g: &ConvGeom) -> bool {
    g.x[0] == 1
        && g.k == [1, 3, 3]
        && g.s == [1, 1, 1]
        && g.d == [1, 1, 1]
        && g.p[0] == 0
        && g.groups == 1
        && g.c >= 16
        && g.f >= 16
        && g.y_len() > 0
        && g.batch * tiles(g).0 >= 32
}

/// Whether convolutions may take Winograd: only when the environment sets
/// `OXNET_CONV_WINOGRAD=1`. Measured on the 2-core AVX-512 machine
/// (benches/RESULTS.md, 2026-11-27) it was not yet faster than im2col + GEMM on
/// most ResNet shapes: the patch gathers and tile scatters of the transforms are
/// scalar and the 36 GEMMs per block are narrow. Until they are vectorised it is
/// opt-in; its numerics are tested either way.
pub fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("OXNET_CONV_WINOGRAD").map(|v| v.trim() == "1").unwrap_or(false))
}

/// (tiles per image, tiles per row).
fn tiles(g: &ConvGeom) -> (usize, usize) {
    let (th, tw) = (g.y[1].div_ceil(4), g.y[2].div_ceil(4));
    (th * tw, tw)
}

/// The weight transform `U[ξ][f][c] = (G g Gᵀ)[ξ]` of `w` `(f, c, 3, 3)`; with
/// `flip`, of the weights of the data gradient instead: `w'[c][f] = rot180(w[f][c])`
/// (then `U` is `36 × c × f`).
unsafe fn transform_weights(g: &ConvGeom, w: *const f32, flip: bool, u: *mut f32) {
    let (f, c) = (g.f, g.c);
    let (rows, cols) = if flip { (c, f) } else { (f, c) };
    let pw = SendPtr(w as *mut f32);
    let pu = SendPtr(u);
    let run = move |_: usize, s: usize, e: usize| -> Result<()> {
        for r in s..e {
            for q in 0..cols {
                let (fi, ci) = if flip { (q, r) } else { (r, q) };
                // SAFETY: w holds f·c·9 elements and u 36·rows·cols; r < rows.
                unsafe {
                    let src = pw.get().add((fi * c + ci) * 9);
                    let mut k = [0f32; 9];
                    for (i, v) in k.iter_mut().enumerate() {
                        *v = *src.add(if flip { 8 - i } else { i });
                    }
                    // G k (6×3), then (G k) Gᵀ (6×6).
                    let mut gk = [[0f32; 3]; 6];
                    for j in 0..3 {
                        let col = g_col(k[j], k[3 + j], k[6 + j]);
                        for i in 0..6 {
                            gk[i][j] = col[i];
                        }
                    }
                    for (i, row) in gk.iter().enumerate() {
                        let out = g_col(row[0], row[1], row[2]);
                        for (j, v) in out.iter().enumerate() {
                            *pu.get().add(((i * 6 + j) * rows + r) * cols + q) = *v;
                        }
                    }
                }
            }
        }
        Ok(())
    };
    let _ = par_ranges(rows, crate::engine::threads(), &run);
}

/// `G · (g0, g1, g2)ᵀ`.
#[inline(always)]
fn g_col(g0: f32, g1: f32, g2: f32) -> [f32; 6] {
    [g0 / 4.0, -(g0 + g1 + g2) / 6.0, -(g0 - g1 + g2) / 6.0, g0 / 24.0 + g1 / 12.0 + g2 / 6.0, g0 / 24.0 - g1 / 12.0 + g2 / 6.0, g2]
}

#[inline(always)]
fn lanes(f: impl Fn(usize) -> f32) -> Lanes {
    let mut o = [0f32; L];
    for (l, v) in o.iter_mut().enumerate() {
        *v = f(l);
    }
    o
}

/// `Bᵀ · d` for six lanes vectors (one column of patches).
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

/// Where tile `t` (global over the batch) lies: (sample, top row, left column) of
/// its output; its input patch starts `p` rows and columns before.
#[inline(always)]
fn tile_at(t: usize, per: usize, tw: usize) -> (usize, usize, usize) {
    let (n, r) = (t / per, t % per);
    (n, (r / tw) * 4, (r % tw) * 4)
}

/// Input transform of tiles `t0..t0 + nt` for channels `c0..c1` of `x`, into `v`
/// (`36 × c × ld`, tile `t0 + i` at column `i`).
#[inline(always)]
unsafe fn input_body(g: &ConvGeom, x: *const f32, t0: usize, nt: usize, c0: usize, c1: usize, v: *mut f32, ld: usize) {
    let (per, tw) = tiles(g);
    let [_, xh, xw] = g.x;
    let (ph, pw) = (g.p[1] as isize, g.p[2] as isize);
    let xlen = xh * xw;
    let mut d = [[0f32; L]; 36];
    for c in c0..c1 {
        let mut i0 = 0;
        while i0 < nt {
            let n_l = L.min(nt - i0);
            for l in 0..L {
                if l >= n_l {
                    for k in d.iter_mut() {
                        k[l] = 0.0;
                    }
                    continue;
                }
                let (n, oh, ow) = tile_at(t0 + i0 + l, per, tw);
                let plane = x.add((n * g.c + c) * xlen);
                let (ih0, iw0) = (oh as isize - ph, ow as isize - pw);
                if ih0 >= 0 && iw0 >= 0 && ih0 + 6 <= xh as isize && iw0 + 6 <= xw as isize {
                    let base = plane.add(ih0 as usize * xw + iw0 as usize);
                    for r in 0..6 {
                        let row = base.add(r * xw);
                        for s in 0..6 {
                            d[r * 6 + s][l] = *row.add(s);
                        }
                    }
                } else {
                    for r in 0..6 {
                        let ih = ih0 + r as isize;
                        let inside = ih >= 0 && ih < xh as isize;
                        for s in 0..6 {
                            let iw = iw0 + s as isize;
                            d[r * 6 + s][l] =
                                if inside && iw >= 0 && iw < xw as isize { *plane.add(ih as usize * xw + iw as usize) } else { 0.0 };
                        }
                    }
                }
            }
            // Bᵀ d along the patch's rows (per column), then · B along its columns.
            let mut e = [[0f32; L]; 36];
            for s in 0..6 {
                let col = bt([&d[s], &d[6 + s], &d[12 + s], &d[18 + s], &d[24 + s], &d[30 + s]]);
                for (r, v) in col.iter().enumerate() {
                    e[r * 6 + s] = *v;
                }
            }
            for r in 0..6 {
                let row = bt([&e[r * 6], &e[r * 6 + 1], &e[r * 6 + 2], &e[r * 6 + 3], &e[r * 6 + 4], &e[r * 6 + 5]]);
                for (s, vals) in row.iter().enumerate() {
                    let dst = v.add(((r * 6 + s) * g.c + c) * ld + i0);
                    std::ptr::copy_nonoverlapping(vals.as_ptr(), dst, L);
                }
            }
            i0 += L;
        }
    }
}

/// Output transform of tiles `t0..t0 + nt` for filters `f0..f1` from `m`
/// (`36 × f × ld`) into `y`, finished by `ep`.
#[inline(always)]
unsafe fn output_body(g: &ConvGeom, m: *const f32, ld: usize, t0: usize, nt: usize, f0: usize, f1: usize, ep: &Epilogue<f32>, y: *mut f32) {
    let (per, tw) = tiles(g);
    let [_, yh, yw] = g.y;
    let ylen = yh * yw;
    for f in f0..f1 {
        let b = ep.bias.map_or(0.0, |b| *b.add(f));
        let sc = ep.scale.map_or(1.0, |v| *v.add(f));
        let (lo, hi) = ep.clamp.unwrap_or((f32::NEG_INFINITY, f32::INFINITY));
        let mut i0 = 0;
        while i0 < nt {
            let n_l = L.min(nt - i0);
            let mut e = [[0f32; L]; 24];
            for s in 0..6 {
                let col: [&Lanes; 6] = std::array::from_fn(|r| &*(m.add(((r * 6 + s) * g.f + f) * ld + i0) as *const Lanes));
                for (r, v) in at(col).iter().enumerate() {
                    e[r * 6 + s] = *v;
                }
            }
            let mut o = [[0f32; L]; 16];
            for r in 0..4 {
                let row = at([&e[r * 6], &e[r * 6 + 1], &e[r * 6 + 2], &e[r * 6 + 3], &e[r * 6 + 4], &e[r * 6 + 5]]);
                for (s, vals) in row.iter().enumerate() {
                    o[r * 4 + s] = lanes(|l| vals[l] * sc + b);
                }
            }
            for l in 0..n_l {
                let (n, oh, ow) = tile_at(t0 + i0 + l, per, tw);
                let at = (n * g.f + f) * ylen;
                let plane = y.add(at);
                let res = ep.residual.map(|r| r.add(at));
                let rows = 4.min(yh - oh);
                let cols = 4.min(yw - ow);
                for r in 0..rows {
                    let i = (oh + r) * yw + ow;
                    for s in 0..cols {
                        let mut v = o[r * 4 + s][l];
                        if let Some(res) = res {
                            v += *res.add(i + s);
                        }
                        if ep.clamp.is_some() {
                            v = if v < lo {
                                lo
                            } else if v > hi {
                                hi
                            } else {
                                v
                            };
                        }
                        *plane.add(i + s) = v;
                    }
                }
            }
            i0 += L;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn input_avx512(g: &ConvGeom, x: *const f32, t0: usize, nt: usize, c0: usize, c1: usize, v: *mut f32, ld: usize) {
    input_body(g, x, t0, nt, c0, c1, v, ld)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn input_avx2(g: &ConvGeom, x: *const f32, t0: usize, nt: usize, c0: usize, c1: usize, v: *mut f32, ld: usize) {
    input_body(g, x, t0, nt, c0, c1, v, ld)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn output_avx512(
    g: &ConvGeom,
    m: *const f32,
    ld: usize,
    t0: usize,
    nt: usize,
    f0: usize,
    f1: usize,
    ep: &Epilogue<f32>,
    y: *mut f32,
) {
    output_body(g, m, ld, t0, nt, f0, f1, ep, y)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn output_avx2(g: &ConvGeom, m: *const f32, ld: usize, t0: usize, nt: usize, f0: usize, f1: usize, ep: &Epilogue<f32>, y: *mut f32) {
    output_body(g, m, ld, t0, nt, f0, f1, ep, y)
}

#[derive(Clone, Copy)]
enum Isa {
    Avx512,
    Avx2,
    Generic,
}

fn isa() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("fma") {
            return Isa::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            return Isa::Avx2;
        }
    }
    Isa::Generic
}

#[allow(clippy::too_many_arguments)]
unsafe fn input(isa: Isa, g: &ConvGeom, x: *const f32, t0: usize, nt: usize, c0: usize, c1: usize, v: *mut f32, ld: usize) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => input_avx512(g, x, t0, nt, c0, c1, v, ld),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => input_avx2(g, x, t0, nt, c0, c1, v, ld),
        _ => input_body(g, x, t0, nt, c0, c1, v, ld),
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn output(
    isa: Isa,
    g: &ConvGeom,
    m: *const f32,
    ld: usize,
    t0: usize,
    nt: usize,
    f0: usize,
    f1: usize,
    ep: &Epilogue<f32>,
    y: *mut f32,
) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => output_avx512(g, m, ld, t0, nt, f0, f1, ep, y),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => output_avx2(g, m, ld, t0, nt, f0, f1, ep, y),
        _ => output_body(g, m, ld, t0, nt, f0, f1, ep, y),
    }
}

/// Forward convolution by Winograd: `y = ep(w ⋆ x)`, `y` overwritten.
///
/// # Safety
/// The pointers must be valid for the extents `g` gives (which must be a 2-D 3×3
/// stride-1 convolution of one group; [`applies`] says when it pays), and `y` must
/// not overlap the inputs or `ep`'s residual.
pub unsafe fn forward(g: &ConvGeom, x: *const f32, w: *const f32, ep: &Epilogue<f32>, y: *mut f32) -> Result<()> {
    let u = Scratch::<f32>::new(36 * g.f * g.c)?;
    transform_weights(g, w, false, u.ptr);
    run(g, x, u.ptr, ep, y)
}

/// The data gradient of a convolution `g` (which [`applies`] with padding at most
/// 2) by Winograd: `dx = conv(dy, rot180(wᵀ))` with padding `2 - p`; overwritten.
///
/// # Safety
/// As for [`forward`], with `dy` the input and `dx` the output.
pub unsafe fn backward_data(g: &ConvGeom, w: *const f32, dy: *const f32, dx: *mut f32) -> Result<()> {
    let t = transposed(g);
    let u = Scratch::<f32>::new(36 * g.f * g.c)?;
    transform_weights(g, w, true, u.ptr);
    run(&t, dy, u.ptr, &Epilogue::bias(None), dx)
}

/// True when Winograd runs `g`'s data gradient (the forward convolution of `dy`
/// with the flipped weights, padding `2 - p`).
pub fn backward_data_applies(g: &ConvGeom) -> bool {
    enabled() && backward_data_suitable(g)
}

fn backward_data_suitable(g: &ConvGeom) -> bool {
    g.p[1] <= 2 && g.p[2] <= 2 && suitable(&transposed(g))
}

fn transposed(g: &ConvGeom) -> ConvGeom {
    ConvGeom { c: g.f, f: g.c, x: g.y, y: g.x, p: [0, 2usize.saturating_sub(g.p[1]), 2usize.saturating_sub(g.p[2])], ..g.clone() }
}

/// The tile walk: per block, transform the inputs, 36 GEMMs, transform the outputs.
unsafe fn run(g: &ConvGeom, x: *const f32, u: *const f32, ep: &Epilogue<f32>, y: *mut f32) -> Result<()> {
    let isa = isa();
    let total = g.batch * tiles(g).0;
    let threads = crate::engine::threads().max(1);
    // Tiles per block: a multiple of the lanes, about BLOCK_FLOATS of V, at least
    // 4 lane groups (GEMMs narrower than that waste the kernel), at most all.
    let tb = (BLOCK_FLOATS / (36 * g.c.max(g.f))).clamp(4 * L, 32 * L) / L * L;
    let tb = tb.min(total.div_ceil(L) * L);
    let v = Scratch::<f32>::new(36 * g.c * tb)?;
    let m = Scratch::<f32>::new(36 * g.f * tb)?;
    let (px, py, pv, pm) = (SendPtr(x as *mut f32), SendPtr(y), SendPtr(v.ptr), SendPtr(m.ptr));
    let mut t0 = 0;
    while t0 < total {
        let nt = tb.min(total - t0);
        par_ranges(g.c, threads, &|_, c0, c1| {
            // SAFETY: each task writes V rows of its own channels.
            unsafe { input(isa, g, px.get(), t0, nt, c0, c1, pv.get(), tb) };
            Ok(())
        })?;
        // Whole lane groups: the padding lanes of V are zeros, so every column of M
        // the output transform reads is written.
        let np = nt.div_ceil(L) * L;
        let (fc, ct, ft) = (g.f * g.c, g.c * tb, g.f * tb);
        gemm_batched(36, g.f, np, g.c, 1.0f32, u, g.c, false, v.ptr, tb, false, 0.0, m.ptr, tb, |xi| [xi * fc, xi * ct, xi * ft]);
        par_ranges(g.f, threads, &|_, f0, f1| {
            // SAFETY: each task writes the output planes of its own filters.
            unsafe { output(isa, g, pm.get(), tb, t0, nt, f0, f1, &ep, py.get()) };
            Ok(())
        })?;
        t0 += nt;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::cpu::conv::{conv_backward_data, conv_forward};

    fn geom(batch: usize, c: usize, f: usize, h: usize, w: usize, p: usize) -> ConvGeom {
        let y = [1, h + 2 * p - 2, w + 2 * p - 2];
        ConvGeom { batch, c, f, groups: 1, x: [1, h, w], y, k: [1, 3, 3], s: [1; 3], d: [1; 3], p: [0, p, p] }
    }

    fn data(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((s >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect()
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

    #[test]
    fn forward_within_bound_of_float64() {
        for (g, bias) in [
            (geom(1, 16, 16, 8, 8, 1), false),
            (geom(2, 17, 19, 9, 11, 1), true),
            (geom(3, 16, 32, 7, 5, 0), false),
            (geom(1, 32, 16, 14, 13, 2), true),
            (geom(2, 16, 20, 5, 13, 3), false),
            (geom(1, 3, 2, 3, 3, 0), true),
            // more tiles than one block: blocks end inside images and lane groups
            (geom(2, 16, 16, 70, 69, 1), true),
        ] {
            let x = data(g.batch * g.c * g.x_len(), 1);
            let w = data(g.f * g.c * 9, 2);
            let b = data(g.f, 3);
            let mut y = vec![f32::NAN; g.batch * g.f * g.y_len()];
            unsafe { forward(&g, x.as_ptr(), w.as_ptr(), &Epilogue::bias(bias.then_some(b.as_ptr())), y.as_mut_ptr()).unwrap() };
            let (mut want, mag) = reference(&g, &x, &w);
            if bias {
                for (i, v) in want.iter_mut().enumerate() {
                    *v += b[(i / g.y_len()) % g.f] as f64;
                }
            }
            let mag: Vec<f64> = mag.iter().map(|m| m + if bias { 1.0 } else { 0.0 }).collect();
            check("forward", &g, (g.y[1], g.y[2]), &y, &want, &mag);
        }
    }

    #[test]
    fn suitability_and_the_dispatch_agree() {
        let g = geom(2, 16, 16, 16, 16, 1);
        assert!(suitable(&g));
        assert!(!suitable(&ConvGeom { groups: 2, ..g.clone() }));
        assert!(!suitable(&ConvGeom { s: [1, 2, 2], ..g.clone() }));
        assert_eq!(applies(&g), enabled());
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

    /// Release-mode timing against im2col + GEMM on ResNet shapes:
    /// `cargo test --release -p oxnet-core winograd_timing -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn winograd_timing() {
        for (b, c, hw) in [(1, 64, 56), (1, 128, 28), (1, 256, 14), (1, 512, 7), (32, 64, 56), (32, 128, 28), (32, 256, 14), (32, 512, 7)] {
            let g = geom(b, c, c, hw, hw, 1);
            let x = data(g.batch * g.c * g.x_len(), 1);
            let w = data(g.f * g.c * 9, 2);
            let mut y = vec![0f32; g.batch * g.f * g.y_len()];
            let time = |f: &mut dyn FnMut()| {
                f();
                let mut t: Vec<f64> = (0..5)
                    .map(|_| {
                        let t0 = std::time::Instant::now();
                        f();
                        t0.elapsed().as_secs_f64() * 1e3
                    })
                    .collect();
                t.sort_by(|a, b| a.partial_cmp(b).unwrap());
                t[2]
            };
            let ep = Epilogue::bias(None);
            let wino = time(&mut || unsafe { forward(&g, x.as_ptr(), w.as_ptr(), &ep, y.as_mut_ptr()).unwrap() });
            // The im2col + GEMM path, bypassing the dispatch.
            let gen = time(&mut || unsafe {
                crate::kernels::cpu::conv::conv_forward_general(&g, x.as_ptr(), w.as_ptr(), &ep, y.as_mut_ptr()).unwrap()
            });
            let gflop = 2.0 * (g.batch * g.f * g.c * 9 * g.y_len()) as f64 / 1e9;
            println!(
                "b{b} c{c} {hw}x{hw}: winograd {wino:.2} ms ({:.0} GFLOP/s eq), im2col {gen:.2} ms ({:.0} GFLOP/s)",
                gflop / wino * 1e3,
                gflop / gen * 1e3
            );
        }
    }
}
