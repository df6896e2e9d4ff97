//! Samplers and special functions shared by the random op families (`random.rs`,
//! `sample.rs`, `random_pdf.rs`); registers no op.
//!
//! Determinism: an op draws one key from its device's generator; its output is cut
//! into fixed chunks of [`CHUNK`] elements and chunk `c` draws from its own stream
//! `Stream::new(key, c)`. Chunks run in parallel on the engine's pool, and since the
//! chunking does not depend on the number of threads, one seed gives the same numbers
//! on any machine. Rejection samplers (gamma, Poisson) take as many draws as they need
//! from their chunk's stream.

use crate::dtype::Element;
use crate::kernels::cpu::SendPtr;
use crate::random::splitmix64;
use rayon::prelude::*;

/// Elements per stream.
pub const CHUNK: usize = 4096;
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// A SplitMix64 stream seeded from an op's key and a chunk index.
pub struct Stream {
    s: u64,
    cached: Option<f64>,
}

impl Stream {
    pub fn new(key: u64, idx: u64) -> Stream {
        Stream { s: splitmix64(key ^ splitmix64(idx.wrapping_mul(GOLDEN) ^ 0x5851_F42D_4C95_7F2D)), cached: None }
    }
    #[inline(always)]
    pub fn next_u64(&mut self) -> u64 {
        let r = splitmix64(self.s);
        self.s = self.s.wrapping_add(GOLDEN);
        r
    }
    /// Uniform in [0, 1), 53 random bits.
    #[inline(always)]
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Standard normal (Marsaglia's polar method; the pair's second value is kept
    /// for the next call).
    #[inline]
    pub fn normal(&mut self) -> f64 {
        if let Some(v) = self.cached.take() {
            return v;
        }
        loop {
            let u = 2.0 * self.uniform() - 1.0;
            let v = 2.0 * self.uniform() - 1.0;
            let s = u * u + v * v;
            if s < 1.0 && s > 0.0 {
                let f = (-2.0 * s.ln() / s).sqrt();
                self.cached = Some(v * f);
                return u * f;
            }
        }
    }
    /// Integer uniform on [0, span) (span > 0), by Lemire's multiply-shift with rejection.
    #[inline]
    pub fn below(&mut self, span: u64) -> u64 {
        loop {
            let x = self.next_u64();
            let m = (x as u128) * (span as u128);
            let lo = m as u64;
            if lo >= span.wrapping_neg() % span {
                return (m >> 64) as u64;
            }
        }
    }
}

/// Gamma(shape `a`, scale 1) by Marsaglia and Tsang (2000); `a < 1` by boosting to
/// `a + 1`. `a == 0` gives 0, a negative or NaN `a` gives NaN.
#[inline]
pub fn gamma(s: &mut Stream, a: f64) -> f64 {
    if a.is_nan() || a < 0.0 {
        return f64::NAN;
    }
    if a == 0.0 {
        return 0.0;
    }
    if a < 1.0 {
        let u = s.uniform();
        return gamma(s, a + 1.0) * u.powf(1.0 / a);
    }
    let d = a - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let (x, v) = loop {
            let x = s.normal();
            let v = 1.0 + c * x;
            if v > 0.0 {
                break (x, v);
            }
        };
        let v = v * v * v;
        let u = s.uniform();
        let x2 = x * x;
        if u < 1.0 - 0.0331 * x2 * x2 || u.ln() < 0.5 * x2 + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
}

/// Poisson(`lam`): multiplication of uniforms for `lam < 10`, Hörmann's PTRS
/// (transformed rejection with squeeze, 1993) above. `lam <= 0` gives 0.
#[inline]
pub fn poisson(s: &mut Stream, lam: f64) -> f64 {
    if lam.is_nan() {
        return f64::NAN;
    }
    if lam <= 0.0 {
        return 0.0;
    }
    if lam < 10.0 {
        let l = (-lam).exp();
        let mut k = 0.0;
        let mut p = s.uniform();
        while p > l {
            k += 1.0;
            p *= s.uniform();
        }
        return k;
    }
    let slam = lam.sqrt();
    let loglam = lam.ln();
    let b = 0.931 + 2.53 * slam;
    let a = -0.059 + 0.02483 * b;
    let inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
    let vr = 0.9277 - 3.6224 / (b - 2.0);
    loop {
        let u = s.uniform() - 0.5;
        let v = s.uniform();
        let us = 0.5 - u.abs();
        let k = ((2.0 * a / us + b) * u + lam + 0.43).floor();
        if us >= 0.07 && v <= vr {
            return k;
        }
        if k < 0.0 || (us < 0.013 && v > us) {
            continue;
        }
        if v.ln() + inv_alpha.ln() - (a / (us * us) + b).ln() <= -lam + k * loglam - lgamma(k + 1.0) {
            return k;
        }
    }
}

/// Negative binomial: failures before the `k`-th success with success probability
/// `p` (a gamma–Poisson mixture, as MXNet samples it).
#[inline]
pub fn negative_binomial(s: &mut Stream, k: f64, p: f64) -> f64 {
    if p >= 1.0 {
        return 0.0;
    }
    let lam = gamma(s, k) * (1.0 - p) / p;
    poisson(s, lam)
}

/// Generalized negative binomial with mean `mu` and dispersion `alpha` (Poisson when
/// `alpha == 0`).
#[inline]
pub fn generalized_negative_binomial(s: &mut Stream, mu: f64, alpha: f64) -> f64 {
    if alpha == 0.0 {
        return poisson(s, mu);
    }
    let lam = gamma(s, 1.0 / alpha) * alpha * mu;
    poisson(s, lam)
}

/// Fills `out[0..n]` with `f(stream, i)`, chunk by chunk in parallel, each chunk
/// from its own stream (see the module docs).
pub fn fill_chunks<T: Element>(out: *mut T, n: usize, key: u64, f: impl Fn(&mut Stream, usize) -> f64 + Sync + Send) {
    let o = SendPtr(out);
    let run = |c: usize| {
        let mut s = Stream::new(key, c as u64);
        let o = o.get();
        for i in c * CHUNK..((c + 1) * CHUNK).min(n) {
            let v = f(&mut s, i);
            // SAFETY: i < n, and each chunk writes its own range.
            unsafe { *o.add(i) = T::from_f64(v) };
        }
    };
    let chunks = n.div_ceil(CHUNK);
    if chunks <= 1 || crate::engine::threads() <= 1 {
        (0..chunks).for_each(run);
    } else {
        crate::engine::install(|| (0..chunks).into_par_iter().for_each(run));
    }
}

/// ln Γ(x) (Lanczos, g = 7, n = 9; reflection below 0.5).
pub fn lgamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let s = (std::f64::consts::PI * x).sin().abs();
        return std::f64::consts::PI.ln() - s.ln() - lgamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// ψ(x), the digamma function (one implementation, in `math_special`).
pub use super::math_special::digamma;

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(f: impl Fn(&mut Stream) -> f64, n: usize) -> (f64, f64) {
        let mut s = Stream::new(42, 7);
        let v: Vec<f64> = (0..n).map(|_| f(&mut s)).collect();
        let m = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n as f64;
        (m, var)
    }

    #[test]
    fn special_functions_match_known_values() {
        assert!((lgamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((lgamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
        assert!((digamma(1.0) + 0.577_215_664_901_532_9).abs() < 1e-12);
        assert!((digamma(0.5) + 1.963_510_026_021_423_5).abs() < 1e-12);
    }

    #[test]
    fn samplers_have_the_right_moments() {
        let (m, v) = moments(|s| gamma(s, 2.5), 200_000);
        assert!((m - 2.5).abs() < 0.03 && (v - 2.5).abs() < 0.08, "{m} {v}");
        let (m, v) = moments(|s| gamma(s, 0.3), 200_000);
        assert!((m - 0.3).abs() < 0.01 && (v - 0.3).abs() < 0.02, "{m} {v}");
        let (m, v) = moments(|s| poisson(s, 3.0), 200_000);
        assert!((m - 3.0).abs() < 0.03 && (v - 3.0).abs() < 0.08, "{m} {v}");
        let (m, v) = moments(|s| poisson(s, 500.0), 200_000);
        assert!((m - 500.0).abs() < 0.3 && (v - 500.0).abs() < 10.0, "{m} {v}");
        let (m, v) = moments(|s| s.normal(), 200_000);
        assert!(m.abs() < 0.01 && (v - 1.0).abs() < 0.02, "{m} {v}");
    }
}
