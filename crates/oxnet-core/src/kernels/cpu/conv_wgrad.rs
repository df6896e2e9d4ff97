//! Float32 weight gradient of 2-D convolutions without unfolding: used by
//! [`super::conv::conv_backward`] where [`applies`] says so (ResNet's 3×3 layers,
//! stride 1 or 2).
//!
//! `dw[f][c][a][b] = Σ_n Σ_(i,j) dy[n][f][i][j] · x[n][c][i·s + a·d - p][j·s + b·d - p]`.
//! im2col + GEMM builds the unfolded input (`c · kh · kw` rows) and multiplies it
//! with `dy` by a library GEMM that packs both again, the unfolded one transposed.
//! Here the input is copied once, channels last and zero-padded:
//! `xp[n][r][s][c] = x[n][c][r - p][s - p]` (the channels padded to a multiple of
//! the vector width). For a tap `(a, b)` the input an output pixel `(i, j)` meets
//! is then the row of channels at `xp[n][i·s + a·d][j·s + b·d]`: a pointer offset.
//! So for every tap, `dw_tap[f][c] = Σ_q dy[f][q] · xp_tap[q][c]` is a GEMM whose
//! right operand is read in place, a vector of channels at a time, and whose left
//! operand is `dy` itself, read as broadcasts from its filters' rows.
//!
//! - Micro-tiles of `MR` filters × `NV` vectors of channels keep their sums in
//!   registers over a block of output rows (about [`BLOCK_PIXELS`] pixels): per
//!   pixel, `NV` vector loads of `xp` and `MR` broadcasts of `dy`. AVX-512: 6 × 4
//!   vectors (24 accumulators); AVX2+FMA: 4 × 2. Both come from one macro.
//! - A block's input rows (a few hundred KiB at most) stay in L2 while every tap,
//!   channel panel and filter panel walks them.
//! - The sums go to `acc[f][tap][c]`; the threads split the filters (each task
//!   owns its rows of `acc`: no reduction). `dw` is written from `acc` at the end.
//! - The batch is walked in slabs of samples whose padded copy stays under
//!   [`SLAB_FLOATS`].
//!
//! When it runs: `OXNET_CONV_WGRAD=1` forces it for every convolution it can take
//! ([`suitable`]), `=0` never; otherwise [`pays`] decides.
//!
//! Numerics: per output, float32 sums over each block's pixels in pixel order,
//! added block by block into `acc` (im2col + GEMM sums in the library's K blocks);
//! the tests compare against a float64 reference.

use super::conv::{par_ranges, ConvGeom, Scratch};
use super::{env_mode, isa, Isa, Mode, SendPtr};
use crate::error::Result;

/// Output pixels per block of rows (at least one row): the block's input for one
/// tap (`BLOCK_PIXELS · 64` floats for 4 vectors of channels) stays in L1. (32 to
/// 256 measured alike on ResNet-18's layers at batch 32.)
const BLOCK_PIXELS: usize = 128;

/// Largest padded copy of the input (floats) built at once: 64 MiB.
const SLAB_FLOATS: usize = 1 << 24;

/// (filters, vectors of channels, lanes) per micro-tile for `isa`.
fn tile_shape(isa: Isa) -> Option<(usize, usize, usize)> {
    match isa {
        Isa::Avx512 => Some((6, 4, 16)),
        Isa::Avx2 => Some((4, 2, 8)),
        Isa::Portable => None,
    }
}

fn mode() -> Mode {
    static MODE: std::sync::OnceLock<Mode> = std::sync::OnceLock::new();
    env_mode(&MODE, "OXNET_CONV_WGRAD")
}

/// True when this kernel computes the (float32) weight gradient of `g`.
pub fn applies(g: &ConvGeom) -> bool {
    suitable(g)
        && match mode() {
            Mode::On => true,
            Mode::Off => false,
            Mode::Auto => pays(g),
        }
}

/// A convolution the kernel can take: 2-D (or 1-D), one group, on a CPU with
/// AVX-512 or AVX2+FMA. Any kernel size, stride, padding and dilation.
pub fn suitable(g: &ConvGeom) -> bool {
    tile_shape(isa()).is_some()
        && g.groups == 1
        && g.x[0] == 1
        && g.k[0] == 1
        && g.p[0] == 0
        && g.c > 0
        && g.f > 0
        && g.batch > 0
        && g.y_len() > 0
}

/// Where the default takes it: measured on the 2-core AVX-512 machine against
/// im2col + GEMM over ResNet-18/50's convolutions at batch 32: kernels larger than
/// 1×1 (a 1×1 one needs no unfolding, and the copy here costs what it saves) with
/// at least 16 input channels (fewer waste most of each vector of channels) and
/// 16 filters.
pub fn pays(g: &ConvGeom) -> bool {
    suitable(g) && g.k_len() > 1 && g.c >= 16 && g.f >= 16
}

/// The padded copy's geometry.
#[derive(Clone, Copy, Debug)]
struct Layout {
    /// Padded rows and columns per sample: exactly what the taps reach.
    hp: usize,
    wp: usize,
    /// Channels per pixel (a multiple of the lanes).
    cp: usize,
}

impl Layout {
    fn new(g: &ConvGeom, lanes: usize) -> Layout {
        Layout {
            hp: (g.y[1] - 1) * g.s[1] + (g.k[1] - 1) * g.d[1] + 1,
            wp: (g.y[2] - 1) * g.s[2] + (g.k[2] - 1) * g.d[2] + 1,
            cp: g.c.div_ceil(lanes) * lanes,
        }
    }
    fn sample(&self) -> usize {
        self.hp * self.wp * self.cp
    }
}

/// Writes samples `n0 ..` rows `r0 .. r1` (counted over the slab: `n_local · hp + r`)
/// of the padded channels-last copy: zero rows and columns where the taps reach
/// the padding, the channels transposed in 16 × 16 tiles (AVX-512) where whole
/// tiles fit, one by one elsewhere. Channel blocks outside, rows inside: the rows
/// of 16 planes are read side by side.
unsafe fn pad_rows(isa: Isa, g: &ConvGeom, l: Layout, x: *const f32, n0: usize, xp: *mut f32, r0: usize, r1: usize) {
    let (h, w) = (g.x[1], g.x[2]);
    let (ph, pw) = (g.p[1], g.p[2]);
    let row = l.wp * l.cp;
    // Columns of x a row holds: s - pw for s in pw .. pw + cols.
    let cols = w.min(l.wp.saturating_sub(pw));
    let inside = |r: usize| r >= ph && r - ph < h;
    for rr in r0..r1 {
        let r = rr % l.hp;
        let dst = xp.add(rr * row);
        if !inside(r) {
            std::ptr::write_bytes(dst, 0, row);
            continue;
        }
        std::ptr::write_bytes(dst, 0, pw.min(l.wp) * l.cp);
        if pw + cols < l.wp {
            std::ptr::write_bytes(dst.add((pw + cols) * l.cp), 0, (l.wp - pw - cols) * l.cp);
        }
        if l.cp > g.c {
            for j in 0..cols {
                std::ptr::write_bytes(dst.add((pw + j) * l.cp + g.c), 0, l.cp - g.c);
            }
        }
    }
    let tiled = if isa == Isa::Avx512 { (g.c / 16) * 16 } else { 0 };
    let tcols = (cols / 16) * 16;
    let mut c0 = 0;
    while c0 < g.c {
        let cn = if c0 < tiled { 16 } else { g.c - c0 };
        for rr in r0..r1 {
            let (n, r) = (n0 + rr / l.hp, rr % l.hp);
            if !inside(r) {
                continue;
            }
            let src = x.add(((n * g.c + c0) * h + (r - ph)) * w);
            let dst = xp.add(rr * row + pw * l.cp + c0);
            let mut j0 = 0;
            if c0 < tiled && tcols > 0 {
                #[cfg(target_arch = "x86_64")]
                while j0 < tcols {
                    transpose16(src.add(j0), h * w, dst.add(j0 * l.cp), l.cp);
                    j0 += 16;
                }
            }
            for c in 0..cn {
                let s = src.add(c * h * w);
                for j in j0..cols {
                    *dst.add(j * l.cp + c) = *s.add(j);
                }
            }
        }
        c0 += cn;
    }
}

/// `dst[k · ds + i] = src[i · ss + k]` for `i, k < 16`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn transpose16(src: *const f32, ss: usize, dst: *mut f32, ds: usize) {
    use std::arch::x86_64::*;
    let r: [__m512; 16] = std::array::from_fn(|i| _mm512_loadu_ps(src.add(i * ss)));
    for (k, v) in transpose16_regs(&r).into_iter().enumerate() {
        _mm512_storeu_ps(dst.add(k * ds), v);
    }
}

/// The 16 × 16 transpose of the rows `row(i)` for `i < rows` (zero rows after),
/// each row's lanes `mask` loaded (the others zero): vector `k` of the result holds
/// element `k` of every row.
///
/// # Safety
/// `row(i)` must be valid for the masked lanes of 16 floats, for `i < rows`; the CPU
/// must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) unsafe fn load_transposed16(rows: usize, mask: u16, row: impl Fn(usize) -> *const f32) -> [std::arch::x86_64::__m512; 16] {
    use std::arch::x86_64::*;
    let r: [__m512; 16] = std::array::from_fn(|i| if i < rows { _mm512_maskz_loadu_ps(mask, row(i)) } else { _mm512_setzero_ps() });
    transpose16_regs(&r)
}

/// The 16 × 16 transpose of `r` (vector `k` of the result holds lane `k` of every
/// vector of `r`, in order).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) unsafe fn transpose16_regs(r: &[std::arch::x86_64::__m512; 16]) -> [std::arch::x86_64::__m512; 16] {
    use std::arch::x86_64::*;
    // Pairs of rows interleaved, then groups of four: u[4q + m] holds, in each
    // 128-bit lane L, column 4L + m of rows 4q .. 4q + 4.
    let mut u = [_mm512_setzero_ps(); 16];
    for q in 0..4 {
        let (a, b, c, d) = (r[4 * q], r[4 * q + 1], r[4 * q + 2], r[4 * q + 3]);
        let (t0, t1) = (_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
        let (t2, t3) = (_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
        u[4 * q] = _mm512_shuffle_ps::<0x44>(t0, t2);
        u[4 * q + 1] = _mm512_shuffle_ps::<0xEE>(t0, t2);
        u[4 * q + 2] = _mm512_shuffle_ps::<0x44>(t1, t3);
        u[4 * q + 3] = _mm512_shuffle_ps::<0xEE>(t1, t3);
    }
    // Lanes gathered across the groups: column 4L + m is lane L of u[m], u[4 + m],
    // u[8 + m], u[12 + m].
    let mut out = [_mm512_setzero_ps(); 16];
    for m in 0..4 {
        let v0 = _mm512_shuffle_f32x4::<0x88>(u[m], u[4 + m]);
        let v1 = _mm512_shuffle_f32x4::<0xDD>(u[m], u[4 + m]);
        let w0 = _mm512_shuffle_f32x4::<0x88>(u[8 + m], u[12 + m]);
        let w1 = _mm512_shuffle_f32x4::<0xDD>(u[8 + m], u[12 + m]);
        out[m] = _mm512_shuffle_f32x4::<0x88>(v0, w0);
        out[8 + m] = _mm512_shuffle_f32x4::<0xDD>(v0, w0);
        out[4 + m] = _mm512_shuffle_f32x4::<0x88>(v1, w1);
        out[12 + m] = _mm512_shuffle_f32x4::<0xDD>(v1, w1);
    }
    out
}

/// What a micro-tile call walks: the block's output rows and where they read.
struct Block<'a> {
    /// Per output row: offset of its first pixel's input row in the slab's copy
    /// (tap (0, 0), channel 0), and of its first pixel in `dy` (filter 0).
    rows: &'a [(usize, usize)],
    /// Pixels per output row.
    wo: usize,
    /// Floats between consecutive pixels' inputs (`stride · cp`).
    step: usize,
    /// Floats between a filter's plane and the next in `dy` (`ho · wo`).
    plane: usize,
}

macro_rules! micro_kernel {
    ($name:ident, $feat:literal, $lanes:expr, $vec:ty, $zero:ident, $load:ident, $store:ident, $set1:ident, $fma:ident, $add:ident) => {
        /// One micro-tile: for filters `f0 .. f0 + MR` and channels `c0 .. c0 + NV
        /// · lanes`, adds `Σ_q dy[f][q] · xp[q + off][c]` over the block's pixels
        /// `q` into `acc` (rows `ld` apart).
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $feat)]
        unsafe fn $name<const MR: usize, const NV: usize>(blk: &Block, xp: *const f32, dy: *const f32, acc: *mut f32, ld: usize) {
            use std::arch::x86_64::*;
            let mut s: [[$vec; NV]; MR] = [[$zero(); NV]; MR];
            for &(xo, yo) in blk.rows {
                let mut xb = xp.add(xo);
                let yb = dy.add(yo);
                for j in 0..blk.wo {
                    let mut b: [$vec; NV] = [$zero(); NV];
                    for v in 0..NV {
                        b[v] = $load(xb.add(v * $lanes));
                    }
                    for m in 0..MR {
                        let a = $set1(*yb.add(m * blk.plane + j));
                        for v in 0..NV {
                            s[m][v] = $fma(a, b[v], s[m][v]);
                        }
                    }
                    xb = xb.add(blk.step);
                }
            }
            for m in 0..MR {
                for v in 0..NV {
                    let o = acc.add(m * ld + v * $lanes);
                    $store(o, $add($load(o), s[m][v]));
                }
            }
        }
    };
}

micro_kernel!(
    tile_avx512,
    "avx512f,fma",
    16,
    __m512,
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_add_ps
);
micro_kernel!(
    tile_avx2,
    "avx2,fma",
    8,
    __m256,
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_add_ps
);

/// Runs the micro-tile of `isa` for `mr` filters and `nv` vectors (each at most
/// the ISA's tile).
#[inline(always)]
unsafe fn tile(isa: Isa, mr: usize, nv: usize, blk: &Block, xp: *const f32, dy: *const f32, acc: *mut f32, ld: usize) {
    macro_rules! arms {
        ($f:ident; $(($m:literal, $v:literal)),*) => {
            match (mr, nv) {
                $(($m, $v) => $f::<$m, $v>(blk, xp, dy, acc, ld),)*
                _ => unreachable!("micro-tile {mr}x{nv}"),
            }
        };
    }
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => arms!(tile_avx512;
            (1, 1), (1, 2), (1, 3), (1, 4), (2, 1), (2, 2), (2, 3), (2, 4), (3, 1), (3, 2), (3, 3), (3, 4),
            (4, 1), (4, 2), (4, 3), (4, 4), (5, 1), (5, 2), (5, 3), (5, 4), (6, 1), (6, 2), (6, 3), (6, 4)),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => arms!(tile_avx2; (1, 1), (1, 2), (2, 1), (2, 2), (3, 1), (3, 2), (4, 1), (4, 2)),
        // (backward_weight refuses an ISA without a kernel.)
        _ => {}
    }
}

/// Weight gradient `dw = Σ_n dy_n ⋆ x_n` (overwritten), `g` [`suitable`].
///
/// # Safety
/// The pointers must be valid for the extents `g` gives; `dw` must not overlap
/// the inputs.
pub unsafe fn backward_weight(g: &ConvGeom, x: *const f32, dy: *const f32, dw: *mut f32) -> Result<()> {
    backward_weight_with(isa(), crate::engine::threads().max(1), g, x, dy, dw)
}

/// [`backward_weight`] with the kernel of `isa` (which the CPU must run) over
/// `threads` tasks.
unsafe fn backward_weight_with(isa: Isa, threads: usize, g: &ConvGeom, x: *const f32, dy: *const f32, dw: *mut f32) -> Result<()> {
    let Some((mr_max, nv_max, lanes)) = tile_shape(isa) else {
        return Err(crate::error::Error::new("conv_wgrad: no vector kernel for this CPU"));
    };
    let l = Layout::new(g, lanes);
    let (kh, kw) = (g.k[1], g.k[2]);
    let taps = kh * kw;
    let (ho, wo) = (g.y[1], g.y[2]);
    let plane = ho * wo;
    // acc[f][tap][c]: one row of cp floats per (filter, tap).
    let ld = taps * l.cp;
    let acc = Scratch::<f32>::new(g.f * ld)?;
    std::ptr::write_bytes(acc.ptr, 0, g.f * ld);
    let slab = (SLAB_FLOATS / l.sample()).clamp(1, g.batch);
    let xp = Scratch::<f32>::new(slab * l.sample())?;
    let rb = (BLOCK_PIXELS / wo).clamp(1, ho * slab);
    // The filters split evenly over the tasks, each task's share cut into as few
    // micro-tiles as fit, their heights differing by at most one (a thin last tile
    // loads as much input per pixel as a full one for a fraction of the sums).
    let tasks = threads.min(g.f.div_ceil(mr_max));
    let cpanels = l.cp.div_ceil(nv_max * lanes);
    let (px, pxp, pdy, pacc) = (SendPtr(x as *mut f32), SendPtr(xp.ptr), SendPtr(dy as *mut f32), SendPtr(acc.ptr));
    let mut n0 = 0;
    while n0 < g.batch {
        let ns = slab.min(g.batch - n0);
        par_ranges(ns * l.hp, threads, &|_, r0, r1| {
            // SAFETY: each task writes its own rows of the slab's copy.
            unsafe { pad_rows(isa, g, l, px.get(), n0, pxp.get(), r0, r1) };
            Ok(())
        })?;
        par_ranges(g.f, tasks, &|_, fa, fb| {
            let tiles = (fb - fa).div_ceil(mr_max);
            let mut rows = Vec::with_capacity(rb);
            let mut q0 = 0;
            while q0 < ns * ho {
                let q1 = (q0 + rb).min(ns * ho);
                rows.clear();
                rows.extend((q0..q1).map(|q| {
                    let (n, i) = (q / ho, q % ho);
                    ((n * l.hp + i * g.s[1]) * l.wp * l.cp, ((n0 + n) * g.f * ho + i) * wo)
                }));
                for cpn in 0..cpanels {
                    let c0 = cpn * nv_max * lanes;
                    let nv = ((l.cp - c0) / lanes).min(nv_max);
                    for t in 0..taps {
                        let (a, b) = (t / kw, t % kw);
                        let off = (a * g.d[1] * l.wp + b * g.d[2]) * l.cp + c0;
                        let blk = Block { rows: &rows, wo, step: g.s[2] * l.cp, plane };
                        let mut f0 = fa;
                        for tile_i in 0..tiles {
                            let mr = (fb - fa) / tiles + usize::from(tile_i < (fb - fa) % tiles);
                            // SAFETY: the tile reads the slab's copy at offsets
                            // within it (the taps reach at most hp × wp) and dy's
                            // planes of filters f0 .. f0 + mr; it writes acc's rows
                            // of those filters, this task's own.
                            unsafe {
                                tile(
                                    isa,
                                    mr,
                                    nv,
                                    &blk,
                                    pxp.get().add(off),
                                    pdy.get().add(f0 * plane),
                                    pacc.get().add(f0 * ld + t * l.cp + c0),
                                    ld,
                                )
                            };
                            f0 += mr;
                        }
                    }
                }
                q0 = q1;
            }
            Ok(())
        })?;
        n0 += ns;
    }
    // dw[f][c][tap] = acc[f][tap][c].
    let pdw = SendPtr(dw);
    par_ranges(g.f, threads, &|_, f0, f1| {
        for f in f0..f1 {
            for c in 0..g.c {
                for t in 0..taps {
                    // SAFETY: in range of both; each task writes its filters' rows.
                    unsafe { *pdw.get().add((f * g.c + c) * taps + t) = *pacc.get().add(f * ld + t * l.cp + c) };
                }
            }
        }
        Ok(())
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::cpu::conv::tests::data_f32 as data;
    use crate::kernels::cpu::conv::conv_backward_general;

    fn geom(batch: usize, c: usize, f: usize, hw: (usize, usize), k: (usize, usize), s: usize, p: (usize, usize), d: usize) -> ConvGeom {
        let y1 = ConvGeom::out_size(hw.0, k.0, s, d, p.0).unwrap();
        let y2 = ConvGeom::out_size(hw.1, k.1, s, d, p.1).unwrap();
        ConvGeom {
            batch,
            c,
            f,
            groups: 1,
            x: [1, hw.0, hw.1],
            y: [1, y1, y2],
            k: [1, k.0, k.1],
            s: [1, s, s],
            d: [1, d, d],
            p: [0, p.0, p.1],
        }
    }

    /// Every ISA this CPU runs, 1 to 3 threads, over shapes that exercise ragged
    /// filter and channel panels, padding, stride, dilation, several blocks per
    /// slab and rows that cross samples: against the general path in float64,
    /// within a bound scaled by Σ|dy·x|.
    #[test]
    fn matches_float64_general_path() {
        let shapes = [
            geom(2, 16, 24, (13, 15), (3, 3), 1, (1, 1), 1),
            geom(3, 7, 13, (9, 11), (3, 3), 1, (0, 2), 1),
            geom(1, 70, 9, (8, 8), (3, 3), 2, (1, 1), 1),
            geom(2, 33, 50, (12, 10), (5, 3), 1, (2, 1), 2),
            geom(4, 20, 6, (7, 7), (1, 1), 2, (0, 0), 1),
            geom(2, 64, 64, (30, 30), (3, 3), 1, (1, 1), 1),
            geom(5, 17, 7, (6, 9), (2, 4), 3, (1, 2), 1),
            geom(1, 3, 1, (1, 40), (1, 7), 1, (0, 3), 1),
        ];
        let mut isas = vec![];
        for i in [Isa::Avx512, Isa::Avx2] {
            let ok = match i {
                Isa::Avx512 => isa() == Isa::Avx512,
                Isa::Avx2 => isa() != Isa::Portable,
                Isa::Portable => false,
            };
            if ok {
                isas.push(i);
            }
        }
        for g in &shapes {
            let x = data(g.batch * g.c * g.x_len(), 1);
            let dy = data(g.batch * g.f * g.y_len(), 2);
            let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            let dy64: Vec<f64> = dy.iter().map(|&v| v as f64).collect();
            let wl = g.f * g.col_rows();
            let mut want = vec![0f64; wl];
            let mut mag = vec![0f64; wl];
            let xa: Vec<f64> = x64.iter().map(|v| v.abs()).collect();
            let da: Vec<f64> = dy64.iter().map(|v| v.abs()).collect();
            unsafe {
                conv_backward_general(g, x64.as_ptr(), std::ptr::null(), dy64.as_ptr(), None, Some(want.as_mut_ptr()), None).unwrap();
                conv_backward_general(g, xa.as_ptr(), std::ptr::null(), da.as_ptr(), None, Some(mag.as_mut_ptr()), None).unwrap();
            }
            for &i in &isas {
                for threads in 1..=3 {
                    let mut dw = vec![f32::NAN; wl];
                    unsafe { backward_weight_with(i, threads, g, x.as_ptr(), dy.as_ptr(), dw.as_mut_ptr()).unwrap() };
                    for (k, ((&a, &b), &m)) in dw.iter().zip(&want).zip(&mag).enumerate() {
                        // Float32 sums of at most ~300 terms in sequence (a block's
                        // pixels, then the blocks): (n - 1) · 2^-24 · Σ|dy · x|.
                        let tol = 300.0 * f32::EPSILON as f64 / 2.0 * m + 1e-30;
                        assert!((a as f64 - b).abs() <= tol, "{i:?} t{threads} {g:?} [{k}]: {a} vs {b} (mag {m})");
                    }
                }
            }
        }
    }

    #[test]
    fn suitability() {
        let g = geom(2, 16, 24, (13, 15), (3, 3), 1, (1, 1), 1);
        assert_eq!(suitable(&g), isa() != Isa::Portable);
        assert!(!suitable(&ConvGeom { groups: 2, ..g.clone() }));
        assert!(!suitable(&ConvGeom { x: [2, 13, 15], k: [2, 3, 3], ..g.clone() }));
        // The default leaves 1×1 and few-channel convolutions to im2col + GEMM.
        assert!(!pays(&geom(2, 64, 64, (8, 8), (1, 1), 1, (0, 0), 1)));
        assert!(!pays(&geom(2, 3, 64, (8, 8), (3, 3), 1, (1, 1), 1)));
    }
}
