//! Direct float32 convolution for images with few input channels (LeNet's first
//! layer: one channel, 5×5 kernel), used by [`super::conv::conv_forward`] in place
//! of im2col + GEMM where [`applies`] says so.
//!
//! With few channels the unfolded input has few rows (25 for a 5×5 kernel on one
//! channel): the GEMM is memory-bound on writing and reading the unfolded copy,
//! which is 25 times the input. Here the input is read in place instead. For a
//! stride-1 unpadded convolution, output `(oh, ow)` at the "wide" index
//! `j = oh·xw + ow` (rows as long as the input's) reads tap `(c, kh, kw)` at input
//! index `c·xlen + kh·xw + kw + j`: every tap is the input shifted by a constant,
//! so a run of consecutive wide outputs is a multiply-add of a contiguous input
//! slice per tap. A tile of `W` wide outputs for `FB` filters stays in registers
//! over all taps; the columns past `yw` of each wide row are computed and dropped.
//!
//! The kernels are compiled for AVX-512 and AVX2+FMA and picked at run time;
//! without either, [`applies`] is false and the general path runs.

use super::conv::ConvGeom;
use super::SendPtr;
use crate::error::{Error, Result};

/// Taps (`c · kh · kw`) up to which the direct path is used. Measured on LeNet's
/// 25-tap first layer (batch 64, one core): 0.40 ms against 0.66 ms for im2col +
/// GEMM with the output in cache, 0.69 against 0.93 ms with a cold output. GEMM
/// wins once the unfolded matrix has enough rows to amortise its copy.
const MAX_TAPS: usize = 32;

/// Tile shapes: (outputs per tile, filters per tile) for the two instruction sets,
/// sized so that the accumulators (`W/lanes · FB` vectors) stay in registers.
const W512: usize = 48;
const FB512: usize = 5;
const W256: usize = 16;
const FB256: usize = 5;

/// Which kernel the CPU can run, if any.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Isa {
    Avx512,
    Avx2,
}

fn isa() -> Option<Isa> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return Some(Isa::Avx512);
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            return Some(Isa::Avx2);
        }
    }
    None
}

/// Number of wide outputs of one filter of one sample: `(yh - 1) · xw + yw`.
fn wide_len(g: &ConvGeom) -> usize {
    (g.y[1] - 1) * g.x[2] + g.y[2]
}

fn tile(isa: Isa) -> (usize, usize) {
    match isa {
        Isa::Avx512 => (W512, FB512),
        Isa::Avx2 => (W256, FB256),
    }
}

/// True when the direct kernel runs this (float32) convolution: one group, 1-D or
/// 2-D (no depth), a kernel larger than 1×1, stride 1, no dilation, no padding,
/// few taps, wide rows not much longer than the output rows (the dropped columns
/// are wasted work), and a CPU with AVX-512 or AVX2+FMA. (A 1×1 convolution has
/// no unfolded copy to save: the general path multiplies the input in place, in
/// cache-sized blocks spread over the threads even for one sample, where this
/// kernel splits only the batch; MobileNetV2's 16- to 32-channel 1×1 layers ran
/// on one thread here at batch 1.)
pub fn applies(g: &ConvGeom) -> bool {
    let Some(isa) = isa() else { return false };
    let (w, _) = tile(isa);
    g.k_len() > 1
        && g.groups == 1
        && g.x[0] == 1
        && g.k[0] == 1
        && g.s == [1, 1, 1]
        && g.d == [1, 1, 1]
        && g.p == [0, 0, 0]
        && g.c * g.k_len() <= MAX_TAPS
        && 4 * g.x[2] <= 5 * g.y[2]
        && g.y_len() > 0
        && wide_len(g) >= w
}

/// Forward convolution by the direct kernel: `y = w ⋆ x (+ bias)`, `y` overwritten.
/// The batch is split into one contiguous range per pool thread.
///
/// # Safety
/// [`applies`] must hold for `g`; the pointers must be valid for the extents `g`
/// gives, and `y` must not overlap the inputs.
pub unsafe fn forward(g: &ConvGeom, x: *const f32, w: *const f32, bias: Option<*const f32>, y: *mut f32) -> Result<()> {
    let Some(isa) = isa() else {
        return Err(Error::new("Convolution: internal error: the direct kernel was chosen on a CPU without AVX2 or AVX-512"));
    };
    forward_with(isa, g, x, w, bias, y);
    Ok(())
}

/// [`forward`] with the kernel for `isa`, which the CPU must support.
unsafe fn forward_with(isa: Isa, g: &ConvGeom, x: *const f32, w: *const f32, bias: Option<*const f32>, y: *mut f32) {
    let (_, fb) = tile(isa);
    let taps = g.c * g.k_len();
    let (xs, ys) = (g.c * g.x_len(), g.f * g.y_len());
    let (px, pw, py) = (SendPtr(x as *mut f32), SendPtr(w as *mut f32), SendPtr(y));
    let pb = bias.map(|b| SendPtr(b as *mut f32));
    let threads = crate::engine::threads().clamp(1, g.batch.max(1));
    let per = g.batch.div_ceil(threads).max(1);
    let run = move |n0: usize, n1: usize| {
        let mut wide = vec![0f32; fb * wide_len(g)];
        let mut wb = vec![0f32; fb * taps];
        for n in n0..n1 {
            // SAFETY: sample n's input and output lie within the extents the caller
            // promised; ranges of samples are disjoint between tasks.
            unsafe {
                let (xn, yn) = (px.get().add(n * xs) as *const f32, py.get().add(n * ys));
                let b = pb.map(|b| b.get() as *const f32);
                let wp = pw.get() as *const f32;
                match isa {
                    Isa::Avx512 => sample_avx512(g, xn, wp, b, yn, &mut wide, &mut wb),
                    Isa::Avx2 => sample_avx2(g, xn, wp, b, yn, &mut wide, &mut wb),
                }
            }
        }
    };
    if threads == 1 {
        run(0, g.batch);
    } else {
        crate::engine::install(|| {
            rayon::scope(|s| {
                for n0 in (0..g.batch).step_by(per) {
                    let run = &run;
                    s.spawn(move |_| run(n0, (n0 + per).min(g.batch)));
                }
            })
        });
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sample_avx512(g: &ConvGeom, x: *const f32, w: *const f32, b: Option<*const f32>, y: *mut f32, wide: &mut [f32], wb: &mut [f32]) {
    sample::<W512, FB512>(g, x, w, b, y, wide, wb)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn sample_avx2(g: &ConvGeom, x: *const f32, w: *const f32, b: Option<*const f32>, y: *mut f32, wide: &mut [f32], wb: &mut [f32]) {
    sample::<W256, FB256>(g, x, w, b, y, wide, wb)
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn sample_avx512(_: &ConvGeom, _: *const f32, _: *const f32, _: Option<*const f32>, _: *mut f32, _: &mut [f32], _: &mut [f32]) {
    unreachable!("isa() is None off x86_64")
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn sample_avx2(_: &ConvGeom, _: *const f32, _: *const f32, _: Option<*const f32>, _: *mut f32, _: &mut [f32], _: &mut [f32]) {
    unreachable!("isa() is None off x86_64")
}

/// One sample: `x` `(c, xh, xw)`, `y` `(f, yh, yw)`. `wide` holds `FB` wide output
/// rows, `wb` one block of weights (`taps × FB`). Inlined into the
/// `target_feature` functions above, whose instruction sets it is vectorised for.
#[inline(always)]
unsafe fn sample<const W: usize, const FB: usize>(
    g: &ConvGeom,
    x: *const f32,
    w: *const f32,
    bias: Option<*const f32>,
    y: *mut f32,
    wide: &mut [f32],
    wb: &mut [f32],
) {
    let [_, kh, kw] = g.k;
    let [_, _, xw] = g.x;
    let [_, yh, yw] = g.y;
    let (xlen, ylen) = (g.x_len(), g.y_len());
    let taps = g.c * kh * kw;
    let l = wide_len(g);
    let mut f0 = 0;
    while f0 < g.f {
        let fb = FB.min(g.f - f0);
        // This block's weights tap-major (wb[t·FB + i] = w[f0 + i, t]); a short
        // last block repeats its last filter, whose results are not stored.
        for t in 0..taps {
            for i in 0..FB {
                wb[t * FB + i] = *w.add((f0 + i.min(fb - 1)) * taps + t);
            }
        }
        let mut j0 = 0;
        while j0 < l {
            // The last tile is moved back to end at l (l >= W), overlapping the
            // one before: every load stays inside the sample's input.
            let j = j0.min(l - W);
            let mut acc = [[0f32; W]; FB];
            for c in 0..g.c {
                for r in 0..kh {
                    let row = x.add(c * xlen + r * xw + j);
                    for s in 0..kw {
                        let t = (c * kh + r) * kw + s;
                        // SAFETY: the largest index read is
                        // c·xlen + (kh-1)·xw + (kw-1) + l - 1 = c·xlen + xlen - 1.
                        let xs = &*(row.add(s) as *const [f32; W]);
                        let ws: &[f32; FB] = wb[t * FB..(t + 1) * FB].try_into().unwrap();
                        for (a, &wv) in acc.iter_mut().zip(ws) {
                            for (av, &xv) in a.iter_mut().zip(xs) {
                                *av = xv.mul_add(wv, *av);
                            }
                        }
                    }
                }
            }
            for (i, a) in acc.iter().enumerate().take(fb) {
                wide[i * l + j..i * l + j + W].copy_from_slice(a);
            }
            j0 += W;
        }
        for i in 0..fb {
            let bv = bias.map_or(0.0, |b| *b.add(f0 + i));
            for oh in 0..yh {
                let src = &wide[i * l + oh * xw..i * l + oh * xw + yw];
                let dst = std::slice::from_raw_parts_mut(y.add((f0 + i) * ylen + oh * yw), yw);
                for (d, s) in dst.iter_mut().zip(src) {
                    *d = *s + bv;
                }
            }
        }
        f0 += fb;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geom(batch: usize, c: usize, f: usize, x: [usize; 3], k: [usize; 3], s: [usize; 3], p: [usize; 3]) -> ConvGeom {
        let mut y = [0; 3];
        for i in 0..3 {
            y[i] = ConvGeom::out_size(x[i], k[i], s[i], 1, p[i]).unwrap();
        }
        ConvGeom { batch, c, f, groups: 1, x, y, k, s, d: [1; 3], p }
    }

    fn data(n: usize, seed: u64) -> Vec<f32> {
        crate::kernels::cpu::conv::tests::data(n, seed).into_iter().map(|v| v as f32).collect()
    }

    /// Unpadded stride-1 convolution in float64, for comparison.
    fn naive(g: &ConvGeom, x: &[f32], w: &[f32], b: Option<&[f32]>) -> Vec<f32> {
        let [_, kh, kw] = g.k;
        let [_, xh, xw] = g.x;
        let [_, yh, yw] = g.y;
        let mut y = vec![0f32; g.batch * g.f * yh * yw];
        for n in 0..g.batch {
            for f in 0..g.f {
                for oh in 0..yh {
                    for ow in 0..yw {
                        let mut acc = b.map_or(0.0, |b| b[f] as f64);
                        for c in 0..g.c {
                            for r in 0..kh {
                                for s in 0..kw {
                                    let xv = x[((n * g.c + c) * xh + oh + r) * xw + ow + s] as f64;
                                    acc += xv * w[((f * g.c + c) * kh + r) * kw + s] as f64;
                                }
                            }
                        }
                        y[((n * g.f + f) * yh + oh) * yw + ow] = acc as f32;
                    }
                }
            }
        }
        y
    }

    /// The kernels this CPU can run (AVX2 too where AVX-512 is the default).
    fn isas() -> Vec<Isa> {
        let mut v = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                v.push(Isa::Avx512);
            }
            if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                v.push(Isa::Avx2);
            }
        }
        v
    }

    #[test]
    fn direct_matches_naive() {
        if isa().is_none() {
            return;
        }
        for (g, with_bias) in [
            // LeNet's first layer, a short batch
            (geom(3, 1, 20, [1, 28, 28], [1, 5, 5], [1; 3], [0; 3]), true),
            // filters not a multiple of the block, odd sizes, two channels
            (geom(2, 2, 7, [1, 13, 11], [1, 3, 3], [1; 3], [0; 3]), false),
            (geom(5, 3, 1, [1, 9, 17], [1, 3, 2], [1; 3], [0; 3]), true),
            // 1-D
            (geom(2, 1, 6, [1, 1, 70], [1, 1, 5], [1; 3], [0; 3]), true),
        ] {
            assert!(applies(&g), "{g:?}");
            let x = data(g.batch * g.c * g.x_len(), 1);
            let w = data(g.f * g.c * g.k_len(), 2);
            let b = data(g.f, 3);
            let bias = with_bias.then_some(&b[..]);
            let want = naive(&g, &x, &w, bias);
            let mut y = vec![f32::NAN; g.batch * g.f * g.y_len()];
            unsafe { forward(&g, x.as_ptr(), w.as_ptr(), bias.map(|b| b.as_ptr()), y.as_mut_ptr()).unwrap() };
            for (a, e) in y.iter().zip(&want) {
                assert!((a - e).abs() < 1e-5, "{g:?}: {a} vs {e}");
            }
            for isa in isas() {
                if wide_len(&g) < tile(isa).0 {
                    continue;
                }
                let mut y = vec![f32::NAN; g.batch * g.f * g.y_len()];
                unsafe { forward_with(isa, &g, x.as_ptr(), w.as_ptr(), bias.map(|b| b.as_ptr()), y.as_mut_ptr()) };
                for (a, e) in y.iter().zip(&want) {
                    assert!((a - e).abs() < 1e-5, "{isa:?} {g:?}: {a} vs {e}");
                }
            }
        }
    }

    #[test]
    fn direct_declines_other_geometries() {
        if isa().is_none() {
            return;
        }
        let base = geom(2, 1, 4, [1, 28, 28], [1, 5, 5], [1; 3], [0; 3]);
        assert!(applies(&base));
        let mut padded = geom(2, 1, 4, [1, 28, 28], [1, 5, 5], [1; 3], [0, 2, 2]);
        assert!(!applies(&padded));
        padded.p = [0, 0, 1];
        assert!(!applies(&padded));
        assert!(!applies(&geom(2, 1, 4, [1, 28, 28], [1, 5, 5], [1, 2, 2], [0; 3])));
        assert!(!applies(&ConvGeom { d: [1, 2, 1], y: [1, 20, 24], ..base.clone() }));
        assert!(!applies(&ConvGeom { groups: 2, c: 2, f: 4, ..base.clone() }));
        // many channels: the GEMM path
        assert!(!applies(&geom(2, 20, 50, [1, 12, 12], [1, 5, 5], [1; 3], [0; 3])));
        // 3-D with depth
        assert!(!applies(&geom(2, 1, 4, [3, 12, 12], [2, 3, 3], [1; 3], [0; 3])));
        // the kernel nearly as wide as the image: most wide columns wasted
        assert!(!applies(&geom(2, 1, 4, [1, 12, 12], [1, 5, 5], [1; 3], [0; 3])));
        // too few outputs for one tile
        assert!(!applies(&geom(2, 1, 4, [1, 1, 12], [1, 1, 2], [1; 3], [0; 3])));
        // 1×1 (MobileNetV2's 16-channel layer): the GEMM on the input in place
        assert!(!applies(&geom(1, 16, 96, [1, 112, 112], [1, 1, 1], [1; 3], [0; 3])));
    }
}
