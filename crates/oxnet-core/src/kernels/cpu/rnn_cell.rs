//! Float32 LSTM cell arithmetic in one vectorised pass: the gate nonlinearities
//! (sigmoid, tanh), the cell update and the output of one batch row, for the fused
//! RNN op's forward, the gradient of one such row for its backward, and a
//! vectorised `tanh` of a slice.
//!
//! The library `expf`/`tanhf` are scalar calls that keep these loops from
//! vectorising; here `exp` is Cephes' single-precision polynomial (argument
//! reduction by `ln 2`, a degree-6 polynomial, the power of two built in the
//! exponent bits; about 1 ulp), `tanh` Cephes' odd polynomial below 0.625 and
//! `(1 - e^{-2|x|}) / (1 + e^{-2|x|})` above. NaN inputs give NaN. The loops are
//! compiled for AVX-512 and AVX2+FMA, picked at run time, and plainly elsewhere.

#[inline(always)]
fn exp_f32(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    let xc = x.clamp(-87.336_54, 88.376_26);
    let n = (xc * LOG2E + 0.5).floor();
    let r = xc - n * 0.693_359_4 + n * 2.121_944_4e-4;
    let mut p = 1.987_569_1e-4f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 0.166_666_65;
    p = p * r + 0.5;
    let y = p * r * r + r + 1.0;
    let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
    let v = y * scale;
    if x.is_nan() {
        x
    } else {
        v
    }
}

#[inline(always)]
fn sigmoid_f32(x: f32) -> f32 {
    1.0 / (1.0 + exp_f32(-x))
}

#[inline(always)]
fn tanh_f32(x: f32) -> f32 {
    let ax = x.abs();
    let e = exp_f32(-2.0 * ax);
    let big = ((1.0 - e) / (1.0 + e)).copysign(x);
    let z = x * x;
    let small = ((((-5.704_988_7e-3 * z + 2.063_908_9e-2) * z - 5.373_971_6e-2) * z + 0.133_314_42) * z - 0.333_332_82) * z * x + x;
    if ax < 0.625 {
        small
    } else {
        big
    }
}

isa_dispatch! {
    /// One LSTM row of `h` units, without state clipping: with the pre-activations
    /// `a = xr + hr` (gates `i, f, g, o`, `4h` each), `gates` gets `σ(a_i), σ(a_f),
    /// tanh(a_g), σ(a_o)`, `c` becomes `f·c + i·g` (also written to `cn`) and `out`
    /// gets `o·tanh(c)`.
    #[allow(clippy::too_many_arguments)]
    pub fn lstm_row(h: usize, xr: &[f32], hr: &[f32], c: &mut [f32], gates: &mut [f32], cn: &mut [f32], out: &mut [f32]) => lstm_row_impl,
    check xr.len() >= 4 * h && hr.len() >= 4 * h && gates.len() >= 4 * h && c.len() >= h && cn.len() >= h && out.len() >= h
}

#[inline(always)]
fn lstm_row_impl(h: usize, xr: &[f32], hr: &[f32], c: &mut [f32], gates: &mut [f32], cn: &mut [f32], out: &mut [f32]) {
    let (xi, xf, xg, xo) = (&xr[..h], &xr[h..2 * h], &xr[2 * h..3 * h], &xr[3 * h..4 * h]);
    let (hi, hf, hg, ho) = (&hr[..h], &hr[h..2 * h], &hr[2 * h..3 * h], &hr[3 * h..4 * h]);
    let (gi, rest) = gates[..4 * h].split_at_mut(h);
    let (gf, rest) = rest.split_at_mut(h);
    let (gg, go) = rest.split_at_mut(h);
    let (c, cn, out) = (&mut c[..h], &mut cn[..h], &mut out[..h]);
    for j in 0..h {
        let ig = sigmoid_f32(xi[j] + hi[j]);
        let fg = sigmoid_f32(xf[j] + hf[j]);
        let g = tanh_f32(xg[j] + hg[j]);
        let og = sigmoid_f32(xo[j] + ho[j]);
        let cv = fg * c[j] + ig * g;
        gi[j] = ig;
        gf[j] = fg;
        gg[j] = g;
        go[j] = og;
        c[j] = cv;
        cn[j] = cv;
        out[j] = og * tanh_f32(cv);
    }
}

isa_dispatch! {
    /// The gradient of one LSTM row of `h` units, without state clipping: from the
    /// saved activations `gates` (`i, f, g, o`, `4h`), the cell before (`cp`) and after
    /// (`cn`) the step and the gradient `dh` of the row's output, `ax` (`4h`) gets the
    /// gradients of the four pre-activations and `dc` (the cell gradient coming from the
    /// next step, in) becomes the cell gradient of the previous step (out).
    pub fn lstm_bwd_row(h: usize, gates: &[f32], cn: &[f32], cp: &[f32], dh: &[f32], dc: &mut [f32], ax: &mut [f32]) => lstm_bwd_row_impl,
    check gates.len() >= 4 * h && cn.len() >= h && cp.len() >= h && dh.len() >= h && dc.len() >= h && ax.len() >= 4 * h
}

#[inline(always)]
fn lstm_bwd_row_impl(h: usize, gates: &[f32], cn: &[f32], cp: &[f32], dh: &[f32], dc: &mut [f32], ax: &mut [f32]) {
    let (gi, gf, gg, go) = (&gates[..h], &gates[h..2 * h], &gates[2 * h..3 * h], &gates[3 * h..4 * h]);
    let (ai, rest) = ax[..4 * h].split_at_mut(h);
    let (af, rest) = rest.split_at_mut(h);
    let (ag, ao) = rest.split_at_mut(h);
    let (cn, cp, dh, dc) = (&cn[..h], &cp[..h], &dh[..h], &mut dc[..h]);
    for j in 0..h {
        let (ig, fg, g, og) = (gi[j], gf[j], gg[j], go[j]);
        let th = tanh_f32(cn[j]);
        let d = dh[j];
        let dct = dc[j] + d * og * (1.0 - th * th);
        dc[j] = dct * fg;
        ai[j] = dct * g * ig * (1.0 - ig);
        af[j] = dct * cp[j] * fg * (1.0 - fg);
        ag[j] = dct * ig * (1.0 - g * g);
        ao[j] = d * th * og * (1.0 - og);
    }
}

isa_dispatch! {
    /// `dst[i] = tanh(src[i])` over the shorter of the two.
    pub fn tanh_slice(src: &[f32], dst: &mut [f32]) => tanh_impl,
    check true
}

#[inline(always)]
fn tanh_impl(src: &[f32], dst: &mut [f32]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = tanh_f32(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> Vec<f32> {
        let mut v: Vec<f32> = (-4000..=4000).map(|i| i as f32 * 0.005).collect();
        v.extend([-100.0, -88.0, -87.0, -30.0, -1e-6, 0.0, 1e-6, 1e-3, 0.624, 0.626, 30.0, 88.0, 89.0, 100.0, 1e30, -1e30]);
        v
    }

    fn rel(got: f32, want: f64) -> f64 {
        (got as f64 - want).abs() / want.abs().max(1e-30)
    }

    #[test]
    fn exp_sigmoid_tanh_match_libm() {
        for x in grid() {
            let xd = x as f64;
            if xd.abs() < 80.0 {
                assert!(rel(exp_f32(x), xd.exp()) < 4e-7, "exp({x}) = {} vs {}", exp_f32(x), xd.exp());
            }
            let s = 1.0 / (1.0 + (-xd).exp());
            assert!((sigmoid_f32(x) as f64 - s).abs() <= 4e-7 * s.max(1e-30) + 1e-38, "sigmoid({x})");
            let t = xd.tanh();
            assert!(rel(tanh_f32(x), t) < 1e-6 || (tanh_f32(x) as f64 - t).abs() < 1e-38, "tanh({x}) = {} vs {t}", tanh_f32(x));
        }
        assert!(exp_f32(f32::NAN).is_nan() && sigmoid_f32(f32::NAN).is_nan() && tanh_f32(f32::NAN).is_nan());
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert_eq!(sigmoid_f32(f32::INFINITY), 1.0);
        assert!(sigmoid_f32(f32::NEG_INFINITY) < 1e-37);
    }

    #[test]
    fn lstm_row_matches_scalar_formula() {
        let h = 37;
        let xr: Vec<f32> = (0..4 * h).map(|i| ((i * 7919) % 97) as f32 / 12.0 - 4.0).collect();
        let hr: Vec<f32> = (0..4 * h).map(|i| ((i * 104729) % 89) as f32 / 20.0 - 2.2).collect();
        let c0: Vec<f32> = (0..h).map(|i| (i as f32 - 18.0) / 5.0).collect();
        let mut c = c0.clone();
        let (mut gates, mut cn, mut out) = (vec![0f32; 4 * h], vec![0f32; h], vec![0f32; h]);
        lstm_row(h, &xr, &hr, &mut c, &mut gates, &mut cn, &mut out);
        let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
        for j in 0..h {
            let a = |q: usize| xr[q * h + j] as f64 + hr[q * h + j] as f64;
            let (i, f, g, o) = (sig(a(0)), sig(a(1)), a(2).tanh(), sig(a(3)));
            let cv = f * c0[j] as f64 + i * g;
            for (got, want) in [(gates[j], i), (gates[h + j], f), (gates[2 * h + j], g), (gates[3 * h + j], o), (c[j], cv), (cn[j], cv)] {
                assert!((got as f64 - want).abs() < 1e-6, "unit {j}: {got} vs {want}");
            }
            assert!((out[j] as f64 - o * cv.tanh()).abs() < 1e-6);
        }
        // the backward of the same row against the scalar formula
        let dh: Vec<f32> = (0..h).map(|j| ((j * 31) % 17) as f32 / 8.0 - 1.0).collect();
        let dc0: Vec<f32> = (0..h).map(|j| ((j * 13) % 11) as f32 / 5.0 - 1.0).collect();
        let (mut dc, mut ax) = (dc0.clone(), vec![0f32; 4 * h]);
        lstm_bwd_row(h, &gates, &cn, &c0, &dh, &mut dc, &mut ax);
        for j in 0..h {
            let g = |q: usize| gates[q * h + j] as f64;
            let th = (cn[j] as f64).tanh();
            let dct = dc0[j] as f64 + dh[j] as f64 * g(3) * (1.0 - th * th);
            let want = [
                dct * g(2) * g(0) * (1.0 - g(0)),
                dct * c0[j] as f64 * g(1) * (1.0 - g(1)),
                dct * g(0) * (1.0 - g(2) * g(2)),
                dh[j] as f64 * th * g(3) * (1.0 - g(3)),
            ];
            for (q, w) in want.iter().enumerate() {
                assert!((ax[q * h + j] as f64 - w).abs() < 1e-5 * (1.0 + w.abs()), "unit {j} gate {q}: {} vs {w}", ax[q * h + j]);
            }
            assert!((dc[j] as f64 - dct * g(1)).abs() < 1e-5 * (1.0 + dct.abs()));
        }
        let mut t = vec![0f32; xr.len()];
        tanh_slice(&xr, &mut t);
        for (g, &x) in t.iter().zip(&xr) {
            assert!((*g as f64 - (x as f64).tanh()).abs() < 1e-6);
        }
    }
}
