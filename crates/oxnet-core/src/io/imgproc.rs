//! Image geometry on HWC buffers, in OpenCV's conventions (what MXNet calls):
//! [`resize`] with OpenCV's interpolation codes (0 nearest, 1 bilinear, 2 bicubic,
//! 3 area, 4 Lanczos-4; MXNet passes its `interp` straight to `cv::resize`), crops,
//! flips and [`copy_make_border`]. Pixel centres are at half-integers as in OpenCV,
//! out-of-range taps replicate the border, `u8` results are rounded and saturated;
//! OpenCV's fixed-point `u8` arithmetic can differ from these by one level.
//!
//! Owns: pure pixel loops. Must not touch: decoding, randomness, the engine.

use crate::error::{Error, Result};

/// Per-output-coordinate taps along one axis: `k` source indices and weights each.
struct Taps {
    k: usize,
    idx: Vec<usize>,
    wt: Vec<f32>,
}

fn clampi(v: i64, n: usize) -> usize {
    v.clamp(0, n as i64 - 1) as usize
}

fn cubic_weights(x: f32) -> [f32; 4] {
    const A: f32 = -0.75;
    let w0 = ((A * (x + 1.0) - 5.0 * A) * (x + 1.0) + 8.0 * A) * (x + 1.0) - 4.0 * A;
    let w1 = ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let w2 = ((A + 2.0) * (1.0 - x) - (A + 3.0)) * (1.0 - x) * (1.0 - x) + 1.0;
    [w0, w1, w2, 1.0 - w0 - w1 - w2]
}

fn lanczos_weights(x: f32) -> [f32; 8] {
    let mut w = [0f32; 8];
    let mut sum = 0.0;
    for (i, wi) in w.iter_mut().enumerate() {
        let y = (x + 3.0 - i as f32) as f64;
        let v = if y.abs() < 1e-6 {
            1.0
        } else {
            let p = std::f64::consts::PI * y;
            4.0 * (p).sin() * (p / 4.0).sin() / (p * p)
        };
        *wi = v as f32;
        sum += v as f32;
    }
    for wi in w.iter_mut() {
        *wi /= sum;
    }
    w
}

fn taps(src: usize, dst: usize, interp: i32) -> Taps {
    let scale = src as f64 / dst as f64;
    match interp {
        0 => Taps { k: 1, idx: (0..dst).map(|d| ((d as f64 * scale).floor() as usize).min(src - 1)).collect(), wt: vec![1.0; dst] },
        1 | 2 | 4 => {
            let (k, off) = match interp {
                1 => (2, 0i64),
                2 => (4, 1),
                _ => (8, 3),
            };
            let mut idx = Vec::with_capacity(dst * k);
            let mut wt = Vec::with_capacity(dst * k);
            for d in 0..dst {
                let f = (d as f64 + 0.5) * scale - 0.5;
                let mut s = f.floor() as i64;
                let mut x = (f - s as f64) as f32;
                if interp == 1 {
                    if s < 0 {
                        s = 0;
                        x = 0.0;
                    }
                    if s >= src as i64 - 1 {
                        s = src as i64 - 1;
                        x = 0.0;
                    }
                    idx.extend([clampi(s, src), clampi(s + 1, src)]);
                    wt.extend([1.0 - x, x]);
                } else {
                    for j in 0..k as i64 {
                        idx.push(clampi(s - off + j, src));
                    }
                    if interp == 2 {
                        wt.extend(cubic_weights(x));
                    } else {
                        wt.extend(lanczos_weights(x));
                    }
                }
            }
            Taps { k, idx, wt }
        }
        _ => {
            // INTER_AREA
            if dst >= src {
                let inv = dst as f64 / src as f64;
                let mut idx = Vec::with_capacity(dst * 2);
                let mut wt = Vec::with_capacity(dst * 2);
                for d in 0..dst {
                    let s = (d as f64 * scale).floor() as i64;
                    let mut fx = (d as f64 + 1.0) - (s as f64 + 1.0) * inv;
                    fx = if fx <= 0.0 { 0.0 } else { fx - fx.floor() };
                    idx.extend([clampi(s, src), clampi(s + 1, src)]);
                    wt.extend([(1.0 - fx) as f32, fx as f32]);
                }
                Taps { k: 2, idx, wt }
            } else {
                let k = scale.ceil() as usize + 1;
                let mut idx = vec![0usize; dst * k];
                let mut wt = vec![0f32; dst * k];
                for d in 0..dst {
                    let a = d as f64 * scale;
                    let b = (a + scale).min(src as f64);
                    let mut j = 0;
                    let mut s = a.floor() as usize;
                    while (s as f64) < b && j < k && s < src {
                        let lo = (s as f64).max(a);
                        let hi = (s as f64 + 1.0).min(b);
                        if hi > lo {
                            idx[d * k + j] = s;
                            wt[d * k + j] = ((hi - lo) / scale) as f32;
                            j += 1;
                        }
                        s += 1;
                    }
                }
                Taps { k, idx, wt }
            }
        }
    }
}

/// The checks every resize makes: positive sizes, a known interpolation code.
fn check_resize(h: usize, w: usize, nh: usize, nw: usize, interp: i32) -> Result<()> {
    if h == 0 || w == 0 || nh == 0 || nw == 0 {
        return Err(Error::new(format!("imresize: cannot resize {h}x{w} to {nh}x{nw}: sizes must be positive")));
    }
    if !(0..=4).contains(&interp) {
        return Err(Error::new(format!("imresize: unknown interpolation method {interp} (0-4)")));
    }
    Ok(())
}

/// Resizes an HWC `f32` image to `nh x nw` with OpenCV interpolation code `interp`.
pub fn resize_f32(src: &[f32], h: usize, w: usize, c: usize, nh: usize, nw: usize, interp: i32) -> Result<Vec<f32>> {
    check_resize(h, w, nh, nw, interp)?;
    if src.len() != h * w * c {
        return Err(Error::new("imresize: buffer does not match the image shape"));
    }
    let tx = taps(w, nw, interp);
    let ty = taps(h, nh, interp);
    let mut tmp = vec![0f32; h * nw * c];
    for y in 0..h {
        let row = &src[y * w * c..(y + 1) * w * c];
        let orow = &mut tmp[y * nw * c..(y + 1) * nw * c];
        for x in 0..nw {
            let o = &mut orow[x * c..(x + 1) * c];
            for j in 0..tx.k {
                let wgt = tx.wt[x * tx.k + j];
                if wgt == 0.0 {
                    continue;
                }
                let s = &row[tx.idx[x * tx.k + j] * c..][..c];
                for ch in 0..c {
                    o[ch] += wgt * s[ch];
                }
            }
        }
    }
    let mut out = vec![0f32; nh * nw * c];
    let stride = nw * c;
    for y in 0..nh {
        let orow = &mut out[y * stride..(y + 1) * stride];
        for j in 0..ty.k {
            let wgt = ty.wt[y * ty.k + j];
            if wgt == 0.0 {
                continue;
            }
            let s = &tmp[ty.idx[y * ty.k + j] * stride..][..stride];
            for (o, v) in orow.iter_mut().zip(s) {
                *o += wgt * v;
            }
        }
    }
    Ok(out)
}

/// `v.round().clamp(0.0, 255.0) as u8` (half away from zero; NaN gives 0) without the
/// libm call `round` compiles to on baseline x86-64, and without branches, so loops
/// over it vectorise: after clamping, the truncating conversion is exact and the
/// fraction decides.
#[inline]
pub fn sat_u8(v: f32) -> u8 {
    let v = v.max(0.0).min(255.0); // (f32::max gives 0 for NaN)
    // SAFETY: v is finite and in [0, 255] here.
    let i = unsafe { v.to_int_unchecked::<i32>() };
    (i + (v - i as f32 >= 0.5) as i32) as u8
}

/// Rounds and saturates to `u8`.
pub fn to_u8(v: &[f32]) -> Vec<u8> {
    v.iter().map(|&x| sat_u8(x)).collect()
}

/// The window `[y0, y0+ch) x [x0, x0+cw)` of an HWC `u8` image resized to `nh x nw`
/// (see [`resize_f32`]): the same values as resizing the whole image and cropping,
/// computed for the window only (a separable filter: each output pixel depends on its
/// own taps), with the source converted on the fly. `ImageRecordIter`'s resize-then-crop
/// runs through it.
#[allow(clippy::too_many_arguments)]
pub fn resize_crop_u8(
    src: &[u8],
    h: usize,
    w: usize,
    c: usize,
    (nh, nw): (usize, usize),
    interp: i32,
    (y0, x0): (usize, usize),
    (ch, cw): (usize, usize),
) -> Result<Vec<u8>> {
    let mut out = vec![0u8; ch * cw * c];
    resize_crop_u8_into(src, h, w, c, (nh, nw), interp, (y0, x0), (ch, cw), &mut out)?;
    Ok(out)
}

/// [`resize_crop_u8`] writing the `ch x cw` window into `out` (`ch * cw * c` values).
#[allow(clippy::too_many_arguments)]
pub fn resize_crop_u8_into(
    src: &[u8],
    h: usize,
    w: usize,
    c: usize,
    (nh, nw): (usize, usize),
    interp: i32,
    (y0, x0): (usize, usize),
    (ch, cw): (usize, usize),
    out: &mut [u8],
) -> Result<()> {
    check_resize(h, w, nh, nw, interp)?;
    if src.len() != h * w * c || y0 + ch > nh || x0 + cw > nw || out.len() != ch * cw * c {
        return Err(Error::new("imresize: buffer or window does not match the image shape"));
    }
    let tx = taps(w, nw, interp);
    let ty = taps(h, nh, interp);
    // the source rows the window's vertical taps read
    let (mut r0, mut r1) = (usize::MAX, 0usize);
    for y in y0..y0 + ch {
        for j in 0..ty.k {
            if ty.wt[y * ty.k + j] != 0.0 {
                let r = ty.idx[y * ty.k + j];
                r0 = r0.min(r);
                r1 = r1.max(r + 1);
            }
        }
    }
    if r0 >= r1 {
        r0 = 0;
        r1 = 0;
    }
    let stride = cw * c;
    let mut tmp = vec![0f32; (r1 - r0) * stride];
    for r in r0..r1 {
        let row = &src[r * w * c..(r + 1) * w * c];
        let orow = &mut tmp[(r - r0) * stride..(r - r0 + 1) * stride];
        if tx.k == 2 && c == 3 {
            for (xi, o) in orow.chunks_exact_mut(3).enumerate() {
                let x = x0 + xi;
                let (i0, i1) = (tx.idx[2 * x] * 3, tx.idx[2 * x + 1] * 3);
                let (w0, w1) = (tx.wt[2 * x], tx.wt[2 * x + 1]);
                for k in 0..3 {
                    // (0 + w0*a) + w1*b, skipping zero weights, is w0*a + w1*b
                    let a = if w0 != 0.0 { w0 * row[i0 + k] as f32 } else { 0.0 };
                    o[k] = if w1 != 0.0 { a + w1 * row[i1 + k] as f32 } else { a };
                }
            }
            continue;
        }
        for (xi, o) in orow.chunks_exact_mut(c).enumerate() {
            let x = x0 + xi;
            for j in 0..tx.k {
                let wgt = tx.wt[x * tx.k + j];
                if wgt == 0.0 {
                    continue;
                }
                let s = &row[tx.idx[x * tx.k + j] * c..][..c];
                for k in 0..c {
                    o[k] += wgt * s[k] as f32;
                }
            }
        }
    }
    let mut acc = vec![0f32; stride];
    for y in y0..y0 + ch {
        acc.fill(0.0);
        for j in 0..ty.k {
            let wgt = ty.wt[y * ty.k + j];
            if wgt == 0.0 {
                continue;
            }
            let r = ty.idx[y * ty.k + j] - r0;
            for (o, v) in acc.iter_mut().zip(&tmp[r * stride..(r + 1) * stride]) {
                *o += wgt * v;
            }
        }
        for (o, v) in out[(y - y0) * stride..(y - y0 + 1) * stride].iter_mut().zip(&acc) {
            *o = sat_u8(*v);
        }
    }
    Ok(())
}

/// Resizes an HWC `u8` image (see [`resize_f32`]; the same values, rounded and
/// saturated, computed from the `u8` pixels directly: the whole image as the window).
pub fn resize_u8(src: &[u8], h: usize, w: usize, c: usize, nh: usize, nw: usize, interp: i32) -> Result<Vec<u8>> {
    resize_crop_u8(src, h, w, c, (nh, nw), interp, (0, 0), (nh, nw))
}

/// OpenCV's `copyMakeBorder` on an HWC buffer: border types 0 constant (`value`),
/// 1 replicate, 2 reflect, 3 wrap, 4 reflect-101.
#[allow(clippy::too_many_arguments)]
pub fn copy_make_border(
    src: &[f32],
    h: usize,
    w: usize,
    c: usize,
    top: usize,
    bot: usize,
    left: usize,
    right: usize,
    btype: i32,
    value: &[f32],
) -> Result<Vec<f32>> {
    if !(0..=4).contains(&btype) {
        return Err(Error::new(format!("copyMakeBorder: unknown border type {btype}")));
    }
    let (nh, nw) = (h + top + bot, w + left + right);
    let map = |p: i64, n: usize| -> Option<usize> {
        let n = n as i64;
        if (0..n).contains(&p) {
            return Some(p as usize);
        }
        match btype {
            0 => None,
            1 => Some(p.clamp(0, n - 1) as usize),
            3 => Some(p.rem_euclid(n) as usize),
            _ => {
                if n == 1 {
                    return Some(0);
                }
                let delta = if btype == 4 { 1 } else { 0 };
                let mut q = p;
                loop {
                    if q < 0 {
                        q = -q - 1 + delta;
                    } else if q >= n {
                        q = 2 * n - q - 1 - delta;
                    } else {
                        return Some(q as usize);
                    }
                }
            }
        }
    };
    let mut out = vec![0f32; nh * nw * c];
    for y in 0..nh {
        let sy = map(y as i64 - top as i64, h);
        for x in 0..nw {
            let sx = map(x as i64 - left as i64, w);
            let o = &mut out[(y * nw + x) * c..][..c];
            match (sy, sx) {
                (Some(sy), Some(sx)) => o.copy_from_slice(&src[(sy * w + sx) * c..][..c]),
                _ => {
                    for (ch, v) in o.iter_mut().enumerate() {
                        *v = *value.get(ch).or(value.first()).unwrap_or(&0.0);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// The `(h, w)` that resizes the shorter edge of `h x w` to `size` (MXNet's
/// `resize_short` arithmetic).
pub fn short_side_size(h: usize, w: usize, size: usize) -> (usize, usize) {
    if h > w {
        (size * h / w, size)
    } else {
        (size, size * w / h)
    }
}

/// Crops `[y0, y0+ch) x [x0, x0+cw)` of an HWC `u8` image.
pub fn crop_u8(src: &[u8], w: usize, c: usize, y0: usize, x0: usize, ch: usize, cw: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(ch * cw * c);
    for y in y0..y0 + ch {
        out.extend_from_slice(&src[(y * w + x0) * c..(y * w + x0 + cw) * c]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_and_constant() {
        let img: Vec<f32> = (0..5 * 7 * 3).map(|i| i as f32).collect();
        for interp in 0..=4 {
            let r = resize_f32(&img, 5, 7, 3, 5, 7, interp).unwrap();
            let d = r.iter().zip(&img).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
            assert!(d < 1e-3, "interp {interp}: {d}");
            let c = vec![9.0f32; 6 * 4];
            let r = resize_f32(&c, 6, 4, 1, 3, 11, interp).unwrap();
            assert!(r.iter().all(|v| (v - 9.0).abs() < 1e-4), "interp {interp}");
        }
    }

    #[test]
    fn area_halving_averages() {
        let img = vec![0f32, 2., 4., 6., 8., 10., 12., 14.];
        let r = resize_f32(&img, 2, 4, 1, 1, 2, 3).unwrap();
        assert_eq!(r, vec![5.0, 9.0]);
        let r = resize_f32(&img, 2, 4, 1, 1, 2, 1).unwrap();
        assert_eq!(r, vec![5.0, 9.0]);
    }

    #[test]
    fn bad_sizes() {
        assert!(resize_f32(&[1.0], 1, 1, 1, 0, 1, 1).is_err());
        assert!(resize_f32(&[1.0], 1, 1, 1, 1, 1, 7).is_err());
    }

    #[test]
    fn borders() {
        let img = vec![1f32, 2., 3.];
        let r = copy_make_border(&img, 1, 3, 1, 0, 0, 2, 2, 4, &[0.0]).unwrap();
        assert_eq!(r, vec![3., 2., 1., 2., 3., 2., 1.]);
        let r = copy_make_border(&img, 1, 3, 1, 0, 0, 2, 2, 2, &[0.0]).unwrap();
        assert_eq!(r, vec![2., 1., 1., 2., 3., 3., 2.]);
        let r = copy_make_border(&img, 1, 3, 1, 0, 0, 1, 1, 0, &[7.0]).unwrap();
        assert_eq!(r, vec![7., 1., 2., 3., 7.]);
    }

    #[test]
    fn sat_u8_is_round_then_clamp() {
        let mut vals = vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, -0.5, -0.49999997, 0.49999997, 0.5, 254.5, 254.49998, 255.0, 255.5, 1e9];
        vals.extend((0..100_000).map(|i| i as f32 * 0.00271 - 10.0));
        for v in vals {
            let want = if v.is_nan() { 0 } else { v.round().clamp(0.0, 255.0) as u8 };
            assert_eq!(sat_u8(v), want, "{v}");
        }
    }

    #[test]
    fn resize_crop_is_resize_then_crop() {
      for c in [1usize, 3, 4] {
        let (h, w) = (23, 31);
        let img: Vec<u8> = (0..h * w * c).map(|i| ((i * 7919) % 256) as u8).collect();
        let f: Vec<f32> = img.iter().map(|&v| v as f32).collect();
        for interp in 0..=4 {
            for &(nh, nw) in &[(29usize, 37usize), (17, 19), (23, 31), (40, 12), (7, 5)] {
                let full = to_u8(&resize_f32(&f, h, w, c, nh, nw, interp).unwrap());
                assert_eq!(resize_u8(&img, h, w, c, nh, nw, interp).unwrap(), full, "resize_u8 c {c} interp {interp}");
                for &(y0, x0, ch, cw) in &[(0usize, 0usize, nh, nw), (3, 2, nh - 5, nw - 4), (nh - 1, nw - 1, 1, 1)] {
                    let got = resize_crop_u8(&img, h, w, c, (nh, nw), interp, (y0, x0), (ch, cw)).unwrap();
                    let want: Vec<u8> =
                        (y0..y0 + ch).flat_map(|y| full[(y * nw + x0) * c..(y * nw + x0 + cw) * c].to_vec()).collect();
                    assert_eq!(got, want, "c {c} interp {interp} {nh}x{nw} window {y0},{x0} {ch}x{cw}");
                }
            }
        }
        assert!(resize_crop_u8(&img, h, w, c, (10, 10), 1, (5, 5), (6, 6)).is_err());
      }
    }
}
