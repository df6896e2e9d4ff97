//! Float32 convolution with 16 *filters* as the vector (AVX-512), for the layers
//! with few output pixels: ResNet's 3×3 layers at 28×28 and below at batch 1
//! (784, 196 or 49 pixels, 128 to 512 channels), where a vector along the pixels
//! is mostly padding (a 7-pixel row in 16 lanes) and an unfolded copy of the input
//! costs a sixth of the time.
//!
//! - The input is copied once with its zero padding (`c × (xh + 2·ph) × (xw +
//!   2·pw)` per image); every tap of every pixel is then an address in it.
//! - Work units are blocks of [`FB`] filters (times a split of the pixels where
//!   the blocks are fewer than twice the threads). Per unit, the reduction axis
//!   (`c · kh · kw`, the weights' own order) goes in blocks of at most [`KB`] rows:
//!   the block's weights are transposed, 16 × 16 at a time, into a buffer of rows
//!   of `FB` filters (each weight is packed once per call: nothing is cached, so
//!   nothing can go stale), then every pixel tile runs over it.
//! - A micro-tile is `P ≤ 6` pixels × `FB = 64` filters: 24 accumulators; per
//!   reduction row, four weight vectors and `P` broadcast inputs. The pixels of a
//!   tile may cross rows and images (each has its own input offset).
//! - Partial sums live in a per-unit `pixels × FB` buffer between reduction
//!   blocks; at the end it is transposed back (16 pixels × 16 filters at a time)
//!   through the epilogue (scale, bias, residual, clamp: the arithmetic of
//!   [`super::conv::finish_row_f32`]) into `y`.
//!
//! Numerics: each output is a float32 sum over the reduction axis in its order, by
//! fused multiply-adds, as the other kernels'; the tests compare against float64.
//!
//! `OXNET_CONV_FVEC=1` / `=0` force it on (wherever it can run) / off.

use super::conv::{par_ranges, ConvGeom, Epilogue, Scratch};
use super::{env_mode, isa, Isa, Mode, SendPtr};
use crate::error::Result;

/// Filters per vector, per unit.
const L: usize = 16;
const FB: usize = 64;
/// Reduction rows per packed block (64 KiB of weights: L2).
const KB: usize = 256;
/// Most pixels per micro-tile.
const P: usize = 6;

fn mode() -> Mode {
    static MODE: std::sync::OnceLock<Mode> = std::sync::OnceLock::new();
    env_mode(&MODE, "OXNET_CONV_FVEC")
}

/// A convolution the kernel can take: 2-D, one group, on a CPU with AVX-512.
pub fn suitable(g: &ConvGeom) -> bool {
    isa() == Isa::Avx512 && g.groups == 1 && g.x[0] == 1 && g.k[0] == 1 && g.p[0] == 0 && g.c > 0 && g.f > 0 && g.y_len() > 0
}

/// True when the kernel runs this (float32) forward convolution: by default where
/// the pixels over the batch are few ([`MAX_PIXELS`]) and the filters fill its
/// vectors (at least 64) and the channels its reduction blocks (at least 32).
pub fn applies(g: &ConvGeom) -> bool {
    suitable(g)
        && match mode() {
            Mode::On => true,
            Mode::Off => false,
            Mode::Auto => g.k_len() > 1 && g.batch * g.y_len() <= MAX_PIXELS && g.f >= 64 && g.c >= 32,
        }
}

/// Most output pixels (over the batch) for which the default takes the kernel.
const MAX_PIXELS: usize = 1024;

/// Forward `y = ep(w ⋆ x)`, `y` overwritten.
///
/// # Safety
/// [`suitable`] must hold for `g`; the pointers must be valid for the extents `g`
/// and `ep` give; `y` must not overlap the inputs.
pub unsafe fn forward(g: &ConvGeom, x: *const f32, w: *const f32, ep: &Epilogue<f32>, y: *mut f32) -> Result<()> {
    #[cfg(target_arch = "x86_64")]
    {
        let [_, xh, xw] = g.x;
        let [_, yh, yw] = g.y;
        let (hp, wp) = (xh + 2 * g.p[1], xw + 2 * g.p[2]);
        let plane = hp * wp;
        let threads = crate::engine::threads().max(1);
        // The padded input (the input itself where there is no padding).
        let padded = g.p != [0, 0, 0];
        let xpad = Scratch::<f32>::new(if padded { g.batch * g.c * plane } else { 0 })?;
        let (px, pp) = (SendPtr(x as *mut f32), SendPtr(if padded { xpad.ptr } else { x as *mut f32 }));
        let planes = if padded { g.batch * g.c } else { 0 };
        par_ranges(planes, threads.min(planes.div_ceil(16)).max(1), &|_, q0, q1| {
            for q in q0..q1 {
                // SAFETY: plane q of x and of the copy (the task's own).
                unsafe {
                    let dst = pp.get().add(q * plane);
                    std::ptr::write_bytes(dst, 0, plane);
                    for ih in 0..xh {
                        std::ptr::copy_nonoverlapping(px.get().add((q * xh + ih) * xw), dst.add((ih + g.p[1]) * wp + g.p[2]), xw);
                    }
                }
            }
            Ok(())
        })?;
        // Each output pixel's input offset (tap (0, 0) of channel 0).
        let ylen = yh * yw;
        let npix = g.batch * ylen;
        let offs: Vec<usize> = (0..npix)
            .map(|q| {
                let (n, r) = (q / ylen, q % ylen);
                n * g.c * plane + (r / yw) * g.s[1] * wp + (r % yw) * g.s[2]
            })
            .collect();
        // Reduction rows: (channel, tap) -> offset from a pixel's base.
        let taps: Vec<usize> = (0..g.k[1] * g.k[2]).map(|t| (t / g.k[2]) * g.d[1] * wp + (t % g.k[2]) * g.d[2]).collect();
        let fblocks = g.f.div_ceil(FB);
        let psplit = if fblocks >= 2 * threads { 1 } else { (2 * threads).div_ceil(fblocks).min(npix.div_ceil(4 * P)).max(1) };
        let pchunk = npix.div_ceil(psplit);
        let units = fblocks * psplit;
        // Reduction rows per packed block: whole channels, at least one.
        let kb_rows = (KB / taps.len()).max(1) * taps.len();
        let (pw, py) = (SendPtr(w as *mut f32), SendPtr(y));
        let (offs, taps) = (&offs, &taps);
        par_ranges(units, threads.min(units), &|_, u0, u1| {
            // (16 rows of slack each: whole vectors are stored and read; zeroed once.)
            let pack = Scratch::<f32>::new((kb_rows + L) * FB)?;
            let acc = Scratch::<f32>::new((pchunk + L) * FB)?;
            // SAFETY: the task's own buffers.
            unsafe {
                std::ptr::write_bytes(pack.ptr, 0, (kb_rows + L) * FB);
                std::ptr::write_bytes(acc.ptr, 0, (pchunk + L) * FB);
            }
            for u in u0..u1 {
                let (fb, ps) = (u / psplit, u % psplit);
                let (q0, q1) = (ps * pchunk, ((ps + 1) * pchunk).min(npix));
                if q0 >= q1 {
                    continue;
                }
                // SAFETY: the unit writes y's rows of its filters at its pixels;
                // the buffers are the task's.
                unsafe { unit(g, fb * FB, (q0, q1), offs, taps, (pp.get(), pw.get(), py.get()), ep, (pack.ptr, acc.ptr)) };
            }
            Ok(())
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (g, x, w, ep, y);
        Err(crate::error::Error::new("Convolution: internal error: the AVX-512 filter-vector kernel was chosen on another CPU"))
    }
}

/// Filters `f0 .. f0 + FB` at pixels `q0 .. q1`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn unit(
    g: &ConvGeom,
    f0: usize,
    (q0, q1): (usize, usize),
    offs: &[usize],
    taps: &[usize],
    (xpad, w, y): (*mut f32, *mut f32, *mut f32),
    ep: &Epilogue<f32>,
    (pack, acc): (*mut f32, *mut f32),
) {
    use super::conv::finish_store16;
    use super::conv_wgrad::load_transposed16;
    use std::arch::x86_64::*;
    let k = g.col_rows();
    let nt = taps.len();
    let plane = (g.x[1] + 2 * g.p[1]) * (g.x[2] + 2 * g.p[2]);
    let nf = FB.min(g.f - f0);
    let npix = q1 - q0;
    // Reduction blocks of whole channels.
    let cpb = (KB / nt).max(1);
    let mut c0 = 0;
    while c0 < g.c {
        let c1 = (c0 + cpb).min(g.c);
        let (k0, k1) = (c0 * nt, c1 * nt);
        let kn = k1 - k0;
        // pack[r][f] = w[f0 + f][k0 + r], zero for filters past the last.
        for v in 0..FB / L {
            let mut r = 0;
            while r < kn {
                let cnt = L.min(kn - r);
                let rows = nf.saturating_sub(v * L).min(L);
                let t = load_transposed16(rows, ((1u32 << cnt) - 1) as u16, |i| w.add((f0 + v * L + i) * k + k0 + r));
                // (Rows past the block's land in rows the tiles do not read.)
                for (i, tv) in t.iter().enumerate() {
                    _mm512_storeu_ps(pack.add((r + i) * FB + v * L), *tv);
                }
                r += cnt;
            }
        }
        // Every pixel tile over the block.
        let first = c0 == 0;
        let tiles = npix.div_ceil(P);
        for t in 0..tiles {
            // Near-equal tiles of at most P pixels.
            let (a, b) = (t * npix / tiles, (t + 1) * npix / tiles);
            let xb = xpad.add(c0 * plane) as *const f32;
            let at = acc.add(a * FB);
            match b - a {
                6 => tile::<6>(xb, &offs[q0 + a..q0 + b], taps, plane, c1 - c0, pack, at, first),
                5 => tile::<5>(xb, &offs[q0 + a..q0 + b], taps, plane, c1 - c0, pack, at, first),
                4 => tile::<4>(xb, &offs[q0 + a..q0 + b], taps, plane, c1 - c0, pack, at, first),
                3 => tile::<3>(xb, &offs[q0 + a..q0 + b], taps, plane, c1 - c0, pack, at, first),
                2 => tile::<2>(xb, &offs[q0 + a..q0 + b], taps, plane, c1 - c0, pack, at, first),
                _ => tile::<1>(xb, &offs[q0 + a..q0 + b], taps, plane, c1 - c0, pack, at, first),
            }
        }
        c0 = c1;
    }
    // acc [pixel][filter] -> y[n][f][pixel], 16 × 16 at a time, through the epilogue.
    let ylen = g.y_len();
    for v in 0..nf.div_ceil(L) {
        let nv = L.min(nf - v * L);
        let mut p = 0;
        while p < npix {
            // Pixels p .. p + cnt, within one image.
            let q = q0 + p;
            let (n, r) = (q / ylen, q % ylen);
            let cnt = L.min(npix - p).min(ylen - r);
            // (Pixels past `cnt` are other images' or the slack's: masked off below.)
            let t = load_transposed16(L, u16::MAX, |i| acc.add((p + i) * FB + v * L));
            for (i, &tv) in t.iter().enumerate() {
                if i >= nv {
                    break;
                }
                let f = f0 + v * L + i;
                finish_store16(ep, f, tv, y, (n * g.f + f) * ylen + r, ((1u32 << cnt) - 1) as u16);
            }
            p += cnt;
        }
    }
}

/// `N` pixels × [`FB`] filters over channels `0 .. nc` of `xb` (planes `plane`
/// apart) and the packed weights: `acc[i][f] (+)= Σ_{c, t} x[c][offs[i] + taps[t]] ·
/// pack[c · taps + t][f]` (overwritten when `first`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
#[inline]
#[allow(clippy::too_many_arguments)]
unsafe fn tile<const N: usize>(
    xb: *const f32,
    offs: &[usize],
    taps: &[usize],
    plane: usize,
    nc: usize,
    pack: *const f32,
    acc: *mut f32,
    first: bool,
) {
    use std::arch::x86_64::*;
    let offs: [usize; N] = std::array::from_fn(|i| offs[i]);
    let mut s = [[_mm512_setzero_ps(); 4]; N];
    if !first {
        for (i, si) in s.iter_mut().enumerate() {
            for (j, sv) in si.iter_mut().enumerate() {
                *sv = _mm512_loadu_ps(acc.add(i * FB + j * L));
            }
        }
    }
    let mut wp = pack;
    for c in 0..nc {
        let xc = xb.add(c * plane);
        for &t in taps {
            let xt = xc.add(t);
            let wv = [_mm512_loadu_ps(wp), _mm512_loadu_ps(wp.add(L)), _mm512_loadu_ps(wp.add(2 * L)), _mm512_loadu_ps(wp.add(3 * L))];
            for i in 0..N {
                let xv = _mm512_set1_ps(*xt.add(offs[i]));
                for j in 0..4 {
                    s[i][j] = _mm512_fmadd_ps(xv, wv[j], s[i][j]);
                }
            }
            wp = wp.add(FB);
        }
    }
    for (i, si) in s.iter().enumerate() {
        for (j, sv) in si.iter().enumerate() {
            _mm512_storeu_ps(acc.add(i * FB + j * L), *sv);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::conv::tests::{data, geom, naive_conv};
    use super::*;

    /// Against the float64 definition: ResNet's batch-1 3×3 shapes (stride 1 and 2),
    /// filters not a multiple of 64 or 16, channels not a multiple of the reduction
    /// block, a 7×7 kernel, dilation, uneven padding and strides, batch 3 (tiles
    /// and 16-pixel groups crossing images), every part of the epilogue.
    #[test]
    fn fvec_matches_float64_reference() {
        if !suitable(&geom(1, 4, 4, 1, [1, 4, 4], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1])) {
            return; // no AVX-512 here: the kernel never runs
        }
        let cases = [
            geom(1, 256, 256, 1, [1, 14, 14], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1]),
            geom(1, 128, 256, 1, [1, 28, 28], [1, 3, 3], [1, 2, 2], [1; 3], [0, 1, 1]),
            geom(1, 96, 72, 1, [1, 7, 7], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1]),
            geom(1, 33, 20, 1, [1, 9, 11], [1, 3, 3], [1, 1, 2], [1, 2, 1], [0, 2, 1]),
            geom(3, 40, 70, 1, [1, 5, 6], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1]),
            geom(1, 3, 64, 1, [1, 23, 23], [1, 7, 7], [1, 2, 2], [1; 3], [0, 3, 3]),
            geom(1, 5, 17, 1, [1, 1, 9], [1, 1, 3], [1; 3], [1; 3], [0, 0, 0]),
            // more taps than a reduction block (one channel per block)
            geom(1, 2, 64, 1, [1, 20, 20], [1, 17, 17], [1; 3], [1; 3], [0, 8, 8]),
            // 1×1 (read in place: no padding), and strided
            geom(1, 160, 96, 1, [1, 7, 7], [1, 1, 1], [1; 3], [1; 3], [0, 0, 0]),
            geom(2, 64, 80, 1, [1, 9, 8], [1, 1, 1], [1, 2, 2], [1; 3], [0, 0, 0]),
        ];
        for g in &cases {
            assert!(suitable(g), "{g:?}");
            let x = data(g.batch * g.c * g.x_len(), 1);
            let w = data(g.f * g.col_rows(), 2);
            let plain = naive_conv(g, &x, &w);
            let (x32, w32) = (x.iter().map(|&v| v as f32).collect::<Vec<_>>(), w.iter().map(|&v| v as f32).collect::<Vec<_>>());
            let ylen = plain.len();
            let sc: Vec<f32> = data(g.f, 3).iter().map(|v| (v * 3.0) as f32).collect();
            let b: Vec<f32> = data(g.f, 4).iter().map(|&v| v as f32).collect();
            let r: Vec<f32> = data(ylen, 5).iter().map(|&v| v as f32).collect();
            // Magnitude of each output's terms, for the tolerance.
            let mag = naive_conv(g, &x.iter().map(|v| v.abs()).collect::<Vec<_>>(), &w.iter().map(|v| v.abs()).collect::<Vec<_>>());
            for mask in [0u32, 3, 15] {
                let ep = Epilogue {
                    scale: (mask & 1 != 0).then_some(sc.as_ptr()),
                    bias: (mask & 2 != 0).then_some(b.as_ptr()),
                    residual: (mask & 4 != 0).then_some(r.as_ptr()),
                    clamp: (mask & 8 != 0).then_some((-0.5f32, 0.7f32)),
                };
                let mut got = vec![f32::NAN; ylen];
                unsafe { forward(g, x32.as_ptr(), w32.as_ptr(), &ep, got.as_mut_ptr()).unwrap() };
                for (i, &o) in got.iter().enumerate() {
                    let f = (i / g.y_len()) % g.f;
                    let mut want = plain[i];
                    let mut tol = 1e-6 * mag[i];
                    if mask & 1 != 0 {
                        want *= sc[f] as f64;
                        tol *= (sc[f] as f64).abs();
                    }
                    if mask & 2 != 0 {
                        want += b[f] as f64;
                    }
                    if mask & 4 != 0 {
                        want += r[i] as f64;
                    }
                    if mask & 8 != 0 {
                        want = want.clamp(-0.5, 0.7);
                    }
                    assert!((o as f64 - want).abs() <= tol + 1e-6 * (1.0 + want.abs()), "{g:?} mask {mask} y[{i}]: {o} vs {want}");
                }
            }
        }
    }
}
