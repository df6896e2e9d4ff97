//! Float32 depthwise forward convolution (one filter per channel: MobileNet's 3×3
//! layers) on AVX-512 with 16 *channels* as the vector, in place of
//! [`super::conv_depthwise`]'s vectors along an output row. That kernel pays, per
//! channel plane, a padded copy, short rows (7 or 14 outputs in a 16-lane vector)
//! and a separate epilogue pass; at MobileNetV2's batch-1 sizes those cost three
//! to five times the arithmetic.
//!
//! Per task unit (an image, a block of 16 channels, a strip of output rows):
//! - the input rows the strip reads are transposed, 16 × 16 at a time, into a
//!   channels-last buffer with its zero padding (`rows × (xw + 2·pw) × 16`, about
//!   [`STRIP_FLOATS`], sized for L2); rows outside the image are zero rows;
//! - each output pixel is `Σ_taps w[tap] · buffer[pixel's tap]`, one vector
//!   multiply-add per tap for 16 channels, up to 8 pixels in registers, the taps
//!   in row-major order from zero (the other kernel's sum, term for term);
//! - the strip's outputs are transposed back (16 pixels × 16 channels at a time)
//!   and the epilogue (scale, bias, residual, clamp: the arithmetic of
//!   [`super::conv::finish_row_f32`]) is applied on the way to `y`.
//!
//! `OXNET_CONV_DW_BLOCKED=0` turns it off (`=1` or unset: on wherever it runs).

use super::conv::{par_ranges, ConvGeom, Epilogue, Scratch};
use super::{env_mode, isa, Isa, Mode, SendPtr};
use crate::error::Result;

/// Channels per vector.
const L: usize = 16;

/// Floats of a unit's input buffer (128 KiB: part of a core's L2).
const STRIP_FLOATS: usize = 1 << 15;

fn mode() -> Mode {
    static MODE: std::sync::OnceLock<Mode> = std::sync::OnceLock::new();
    env_mode(&MODE, "OXNET_CONV_DW_BLOCKED")
}

/// True when this kernel runs the (float32) forward convolution `g`: 2-D,
/// depthwise with one filter per channel, on a CPU with AVX-512.
pub fn applies(g: &ConvGeom) -> bool {
    isa() == Isa::Avx512
        && mode() != Mode::Off
        && g.groups == g.c
        && g.f == g.c
        && g.x[0] == 1
        && g.k[0] == 1
        && g.p[0] == 0
        && g.y_len() > 0
        && g.k[1] * g.k[2] <= 64
}

/// The unit layout of one call.
#[derive(Clone, Copy)]
struct Plan {
    /// Padded input row length (pixels).
    wp: usize,
    /// Output rows per strip, strips per plane, channel blocks.
    rows: usize,
    strips: usize,
    blocks: usize,
    /// Input rows a strip of `rows` output rows reads.
    in_rows: usize,
}

fn plan(g: &ConvGeom) -> Plan {
    let [_, _, xw] = g.x;
    let [_, yh, _] = g.y;
    let wp = xw + 2 * g.p[2];
    let reach = (g.k[1] - 1) * g.d[1] + 1;
    let cap = (STRIP_FLOATS / (wp * L)).max(1);
    let mut rows = if cap > reach { (cap - reach) / g.s[1] + 1 } else { 1 };
    rows = rows.clamp(1, yh);
    let strips = yh.div_ceil(rows);
    let rows = yh.div_ceil(strips);
    Plan { wp, rows, strips, blocks: g.c.div_ceil(L), in_rows: (rows - 1) * g.s[1] + reach }
}

/// Depthwise forward `y = ep(w ⋆ x)`, `y` overwritten.
///
/// # Safety
/// [`applies`] must hold for `g`; the pointers must be valid for the extents `g`
/// and `ep` give; `y` must not overlap the inputs.
pub unsafe fn forward(g: &ConvGeom, x: *const f32, w: *const f32, ep: &Epilogue<f32>, y: *mut f32) -> Result<()> {
    #[cfg(target_arch = "x86_64")]
    {
        let p = plan(g);
        let units = g.batch * p.blocks * p.strips;
        let threads = crate::engine::threads().max(1);
        let (px, pw, py) = (SendPtr(x as *mut f32), SendPtr(w as *mut f32), SendPtr(y));
        par_ranges(units, threads.min(units), &|_, u0, u1| {
            // (16 pixels of slack past each buffer: whole vectors are stored and read.)
            let buf = Scratch::<f32>::new((p.in_rows * p.wp + L) * L)?;
            let out = Scratch::<f32>::new((p.rows * g.y[2] + L) * L)?;
            let wt = Scratch::<f32>::new(g.k[1] * g.k[2] * L)?;
            // SAFETY: the task's own buffers (zeroed once: the slack is read).
            unsafe {
                std::ptr::write_bytes(buf.ptr, 0, (p.in_rows * p.wp + L) * L);
                std::ptr::write_bytes(out.ptr, 0, (p.rows * g.y[2] + L) * L);
            }
            for u in u0..u1 {
                let (n, rest) = (u / (p.blocks * p.strips), u % (p.blocks * p.strips));
                let (cb, strip) = (rest / p.strips, rest % p.strips);
                // SAFETY: the unit reads its image's channels and writes its own
                // output rows of its channels; the buffers are the task's.
                unsafe { unit(g, &p, (n, cb, strip), (px.get(), pw.get(), py.get()), ep, (buf.ptr, out.ptr, wt.ptr)) };
            }
            Ok(())
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (g, x, w, ep, y);
        Err(crate::error::Error::new("Convolution: internal error: the AVX-512 depthwise kernel was chosen on another CPU"))
    }
}

/// One unit: image `n`, channels `16·cb ..`, output rows of strip `strip`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn unit(
    g: &ConvGeom,
    p: &Plan,
    (n, cb, strip): (usize, usize, usize),
    (x, w, y): (*mut f32, *mut f32, *mut f32),
    ep: &Epilogue<f32>,
    (buf, out, wt): (*mut f32, *mut f32, *mut f32),
) {
    use super::conv::finish_store16;
    use super::conv_wgrad::load_transposed16;
    use std::arch::x86_64::*;
    let [_, xh, xw] = g.x;
    let [_, yh, yw] = g.y;
    let [_, kh, kw] = g.k;
    let [_, sh, sw] = g.s;
    let [_, dh, dw] = g.d;
    let [_, ph, pw] = g.p;
    let (xlen, ylen, taps) = (xh * xw, yh * yw, kh * kw);
    let c0 = cb * L;
    let nc = L.min(g.c - c0);
    let (a, b) = (strip * p.rows, ((strip + 1) * p.rows).min(yh));
    // Padded input rows r0 .. r1 of the strip.
    let r0 = a * sh;
    let r1 = (b - 1) * sh + (kh - 1) * dh + 1;

    // The weights, tap-major: wt[t][lane] = w[c0 + lane][t].
    for t in 0..taps {
        let v: [f32; L] = std::array::from_fn(|l| if l < nc { *w.add((c0 + l) * taps + t) } else { 0.0 });
        _mm512_storeu_ps(wt.add(t * L), _mm512_loadu_ps(v.as_ptr()));
    }

    // The input strip, channels last, zero padding around it. Each image row goes
    // 16 pixels at a time; all 16 transposed vectors are stored (the ones past the
    // row land on the next row's columns, written after, or in the slack past the
    // buffer's end), then the padding columns and rows are zeroed.
    let zero = _mm512_setzero_ps();
    let (ih_lo, ih_hi) = ((r0 as isize - ph as isize).max(0) as usize, (r1.saturating_sub(ph)).min(xh));
    let plane = x.add((n * g.c + c0) * xlen) as *const f32;
    for ih in ih_lo..ih_hi {
        let src = plane.add(ih * xw);
        let dst = buf.add(((ih + ph - r0) * p.wp + pw) * L);
        let mut iw = 0;
        while iw < xw {
            let cnt = L.min(xw - iw);
            let t = load_transposed16(nc, ((1u32 << cnt) - 1) as u16, |l| src.add(l * xlen + iw));
            for (i, tv) in t.iter().enumerate() {
                _mm512_storeu_ps(dst.add((iw + i) * L), *tv);
            }
            iw += cnt;
        }
    }
    for r in r0..r1 {
        let row = buf.add((r - r0) * p.wp * L);
        let ih = r as isize - ph as isize;
        if ih < 0 || ih >= xh as isize {
            for j in 0..p.wp {
                _mm512_storeu_ps(row.add(j * L), zero);
            }
        } else {
            for j in (0..pw).chain(pw + xw..p.wp) {
                _mm512_storeu_ps(row.add(j * L), zero);
            }
        }
    }

    // The outputs, channels last: out[(oh - a)·yw + ow].
    for oh in a..b {
        let orow = out.add((oh - a) * yw * L);
        let irow = buf.add((oh * sh - r0) * p.wp * L) as *const f32;
        let mut ow = 0;
        while ow < yw {
            let left = yw - ow;
            if left >= 8 {
                pixels::<8>(irow, p.wp, wt, (kh, kw), (dh, dw), sw, ow, orow);
                ow += 8;
            } else if left >= 4 {
                pixels::<4>(irow, p.wp, wt, (kh, kw), (dh, dw), sw, ow, orow);
                ow += 4;
            } else if left >= 2 {
                pixels::<2>(irow, p.wp, wt, (kh, kw), (dh, dw), sw, ow, orow);
                ow += 2;
            } else {
                pixels::<1>(irow, p.wp, wt, (kh, kw), (dh, dw), sw, ow, orow);
                ow += 1;
            }
        }
    }

    // Back to channel planes, 16 pixels at a time, through the epilogue.
    let total = (b - a) * yw;
    let mut q = 0;
    while q < total {
        let cnt = L.min(total - q);
        // (Pixels past `cnt` are the slack's or the next rows': masked off below.)
        let t = load_transposed16(L, u16::MAX, |i| out.add((q + i) * L));
        for (l, &tv) in t.iter().enumerate() {
            if l >= nc {
                break;
            }
            let ch = c0 + l;
            finish_store16(ep, ch, tv, y, (n * g.c + ch) * ylen + a * yw + q, ((1u32 << cnt) - 1) as u16);
        }
        q += cnt;
    }
}

/// `P` consecutive outputs `ow ..` of one output row: `Σ_t wt[t] · irow[...]`, taps
/// in row-major order from zero, stored channels-last at `orow[ow ..]`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
#[inline]
#[allow(clippy::too_many_arguments)]
unsafe fn pixels<const P: usize>(
    irow: *const f32,
    wp: usize,
    wt: *const f32,
    (kh, kw): (usize, usize),
    (dh, dw): (usize, usize),
    sw: usize,
    ow: usize,
    orow: *mut f32,
) {
    use std::arch::x86_64::*;
    if kw == 3 && dw == 1 && sw <= 2 {
        return if sw == 1 { pixels_k3::<P, 1>(irow, wp, wt, kh, dh, ow, orow) } else { pixels_k3::<P, 2>(irow, wp, wt, kh, dh, ow, orow) };
    }
    let mut acc = [_mm512_setzero_ps(); P];
    for i in 0..kh {
        for j in 0..kw {
            let wv = _mm512_loadu_ps(wt.add((i * kw + j) * L));
            let base = irow.add((i * dh * wp + j * dw + ow * sw) * L);
            for (pi, av) in acc.iter_mut().enumerate() {
                *av = _mm512_fmadd_ps(_mm512_loadu_ps(base.add(pi * sw * L)), wv, *av);
            }
        }
    }
    for (pi, av) in acc.iter().enumerate() {
        _mm512_storeu_ps(orow.add((ow + pi) * L), *av);
    }
}

/// [`pixels`] for 3-wide kernels at stride `S` (1 or 2), no horizontal dilation:
/// each kernel row's inputs for the `P` pixels (`(P - 1)·S + 3` vectors) are
/// loaded once and shared by its three taps, instead of one load per tap and
/// pixel. Same products, same order.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
#[inline]
unsafe fn pixels_k3<const P: usize, const S: usize>(
    irow: *const f32,
    wp: usize,
    wt: *const f32,
    kh: usize,
    dh: usize,
    ow: usize,
    orow: *mut f32,
) {
    use std::arch::x86_64::*;
    let span = (P - 1) * S + 3;
    let mut acc = [_mm512_setzero_ps(); P];
    for i in 0..kh {
        let base = irow.add((i * dh * wp + ow * S) * L);
        let mut xs = [_mm512_setzero_ps(); 17];
        for (e, xv) in xs.iter_mut().enumerate().take(span) {
            *xv = _mm512_loadu_ps(base.add(e * L));
        }
        for j in 0..3 {
            let wv = _mm512_loadu_ps(wt.add((i * 3 + j) * L));
            for (pi, av) in acc.iter_mut().enumerate() {
                *av = _mm512_fmadd_ps(xs[pi * S + j], wv, *av);
            }
        }
    }
    for (pi, av) in acc.iter().enumerate() {
        _mm512_storeu_ps(orow.add((ow + pi) * L), *av);
    }
}

#[cfg(test)]
mod tests {
    use super::super::conv::finish_row_f32;
    use super::super::conv::tests::{data, geom};
    use super::*;

    /// Against the row-vector kernel (`conv_depthwise`) followed by the epilogue
    /// pass, bit for bit (same products, same order, same epilogue arithmetic):
    /// MobileNetV2's sizes (several strips per plane at 112×112), channel counts
    /// that leave a partial block, strides, dilation, 5×5 and 3×1 kernels, no
    /// padding, batch 2, every part of the epilogue.
    #[test]
    fn blocked_matches_row_kernel_bit_for_bit() {
        if !applies(&geom(1, 16, 16, 16, [1, 4, 4], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1])) {
            return; // no AVX-512 here: the kernel never runs
        }
        let cases = [
            geom(1, 32, 32, 32, [1, 112, 112], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1]),
            geom(1, 96, 96, 96, [1, 112, 112], [1, 3, 3], [1, 2, 2], [1; 3], [0, 1, 1]),
            geom(1, 960, 960, 960, [1, 7, 7], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1]),
            geom(2, 20, 20, 20, [1, 15, 17], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1]),
            geom(2, 17, 17, 17, [1, 12, 13], [1, 3, 3], [1; 3], [1, 2, 2], [0, 2, 2]),
            geom(1, 3, 3, 3, [1, 9, 40], [1, 5, 5], [1, 2, 2], [1; 3], [0, 2, 2]),
            geom(1, 16, 16, 16, [1, 5, 5], [1, 3, 3], [1, 3, 3], [1; 3], [0, 0, 0]),
            geom(1, 24, 24, 24, [1, 300, 4], [1, 3, 1], [1, 1, 1], [1; 3], [0, 1, 0]),
            geom(1, 33, 33, 33, [1, 1, 1], [1, 1, 1], [1; 3], [1; 3], [0, 0, 0]),
        ];
        for g in &cases {
            assert!(applies(g), "{g:?}");
            let f32s = |n: usize, seed: u64| data(n, seed).into_iter().map(|v| v as f32).collect::<Vec<f32>>();
            let x = f32s(g.batch * g.c * g.x_len(), 1);
            let w = f32s(g.f * g.k_len(), 2);
            let sc = f32s(g.f, 3);
            let b = f32s(g.f, 4);
            let ylen = g.batch * g.f * g.y_len();
            let r = f32s(ylen, 5);
            for mask in [0u32, 2, 9, 15] {
                let ep = Epilogue {
                    scale: (mask & 1 != 0).then_some(sc.as_ptr()),
                    bias: (mask & 2 != 0).then_some(b.as_ptr()),
                    residual: (mask & 4 != 0).then_some(r.as_ptr()),
                    clamp: (mask & 8 != 0).then_some((-0.05f32, 0.1f32)),
                };
                let mut got = vec![f32::NAN; ylen];
                unsafe { forward(g, x.as_ptr(), w.as_ptr(), &ep, got.as_mut_ptr()).unwrap() };
                let mut want = vec![f32::NAN; ylen];
                unsafe { super::super::conv_depthwise::forward(g, x.as_ptr(), w.as_ptr(), None, want.as_mut_ptr(), None).unwrap() };
                if mask != 0 {
                    let (lo, hi) = ep.clamp.unwrap_or((f32::NEG_INFINITY, f32::INFINITY));
                    let l = g.y_len();
                    for (row, ys) in want.chunks_mut(l).enumerate() {
                        let f = row % g.f;
                        let rs = if mask & 4 != 0 { &r[row * l..(row + 1) * l] } else { &[][..] };
                        let s = if mask & 1 != 0 { sc[f] } else { 1.0 };
                        let bb = if mask & 2 != 0 { b[f] } else { 0.0 };
                        finish_row_f32(ys, s, bb, rs, lo, hi);
                    }
                }
                for (i, (a, e)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(a.to_bits(), e.to_bits(), "{g:?} mask {mask} y[{i}]: {a} vs {e}");
                }
            }
        }
    }
}
