//! Softmax, log-softmax and softmin along one axis of a row-major array seen as
//! `(outer, n, inner)`. Values are scaled by `1/temperature` (negated for softmin),
//! shifted by their maximum, exponentiated in the compute type `C` (f32 or f64) and
//! summed in f64.

use super::reduce::Num;
use super::SendPtr;
use rayon::prelude::*;

/// The compute type of the exponentials.
pub trait Real:
    Copy + Send + Sync + PartialOrd + std::ops::Sub<Output = Self> + std::ops::Div<Output = Self> + std::ops::Neg<Output = Self>
{
    const NEG_INF: Self;
    fn exp(self) -> Self;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
}
impl Real for f32 {
    const NEG_INF: f32 = f32::NEG_INFINITY;
    #[inline(always)]
    fn exp(self) -> f32 {
        f32::exp(self)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
}
impl Real for f64 {
    const NEG_INF: f64 = f64::NEG_INFINITY;
    #[inline(always)]
    fn exp(self) -> f64 {
        f64::exp(self)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> f64 {
        v
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Softmax,
    LogSoftmax,
    Softmin,
}

const GRAIN: usize = 1 << 14;
const IBLOCK: usize = 512;

#[inline(always)]
fn load<T: Num, C: Real>(x: T, t: C, neg: bool) -> C {
    let v = C::from_f64(x.to_f64()) / t;
    if neg {
        -v
    } else {
        v
    }
}

/// `out = kind(x)` along the middle axis of `(outer, n, inner)`.
#[allow(clippy::too_many_arguments)]
pub fn softmax<T: Num, U: Num, C: Real>(x: &[T], out: &mut [U], outer: usize, n: usize, inner: usize, temperature: f64, kind: Kind) {
    debug_assert_eq!(x.len(), outer * n * inner);
    debug_assert_eq!(out.len(), x.len());
    if x.is_empty() {
        return;
    }
    let t = C::from_f64(temperature);
    let neg = kind == Kind::Softmin;
    let log = kind == Kind::LogSoftmax;
    let po = SendPtr(out.as_mut_ptr());
    if inner == 1 {
        let row = move |buf: &mut Vec<C>, o: usize| {
            let xr = &x[o * n..(o + 1) * n];
            buf.clear();
            let mut m = C::NEG_INF;
            for &v in xr {
                let y = load(v, t, neg);
                if y > m {
                    m = y;
                }
                buf.push(y);
            }
            // SAFETY: row o of the output is written by this call only.
            let or = unsafe { std::slice::from_raw_parts_mut(po.get().add(o * n), n) };
            let mut s = 0.0f64;
            if log {
                for &y in buf.iter() {
                    s += (y - m).exp().to_f64();
                }
                let ls = s.ln();
                for (ov, &y) in or.iter_mut().zip(buf.iter()) {
                    *ov = U::from_f64((y - m).to_f64() - ls);
                }
            } else {
                for y in buf.iter_mut() {
                    *y = (*y - m).exp();
                    s += y.to_f64();
                }
                let sc = C::from_f64(s);
                for (ov, &e) in or.iter_mut().zip(buf.iter()) {
                    *ov = U::from_f64((e / sc).to_f64());
                }
            }
        };
        if outer * n < GRAIN {
            let mut buf = Vec::with_capacity(n);
            for o in 0..outer {
                row(&mut buf, o);
            }
        } else {
            let min_len = (GRAIN / n.max(1)).max(1);
            crate::engine::install(|| (0..outer).into_par_iter().with_min_len(min_len).for_each_init(|| Vec::with_capacity(n), row));
        }
        return;
    }
    let ib = inner.min(IBLOCK);
    let nb = inner.div_ceil(ib);
    let col = move |tmp: &mut (Vec<C>, Vec<f64>), task: usize| {
        let (o, b) = (task / nb, task % nb);
        let i0 = b * ib;
        let w = ib.min(inner - i0);
        let (m, s) = tmp;
        m.clear();
        m.resize(w, C::NEG_INF);
        s.clear();
        s.resize(w, 0.0);
        let at = |r: usize| (o * n + r) * inner + i0;
        for r in 0..n {
            for (mi, &v) in m.iter_mut().zip(&x[at(r)..at(r) + w]) {
                let y = load(v, t, neg);
                if y > *mi {
                    *mi = y;
                }
            }
        }
        for r in 0..n {
            for ((si, &mi), &v) in s.iter_mut().zip(m.iter()).zip(&x[at(r)..at(r) + w]) {
                *si += (load(v, t, neg) - mi).exp().to_f64();
            }
        }
        if log {
            for si in s.iter_mut() {
                *si = si.ln();
            }
        }
        for r in 0..n {
            // SAFETY: this task alone writes out[o, r, i0..i0 + w].
            let or = unsafe { std::slice::from_raw_parts_mut(po.get().add(at(r)), w) };
            for (((ov, &si), &mi), &v) in or.iter_mut().zip(s.iter()).zip(m.iter()).zip(&x[at(r)..at(r) + w]) {
                let d = load(v, t, neg) - mi;
                *ov = if log { U::from_f64(d.to_f64() - si) } else { U::from_f64((d.exp() / C::from_f64(si)).to_f64()) };
            }
        }
    };
    let tasks = outer * nb;
    if x.len() < GRAIN {
        let mut tmp = (Vec::new(), Vec::new());
        for task in 0..tasks {
            col(&mut tmp, task);
        }
    } else {
        let min_len = (GRAIN / (ib * n).max(1)).max(1);
        crate::engine::install(|| (0..tasks).into_par_iter().with_min_len(min_len).for_each_init(|| (Vec::new(), Vec::new()), col));
    }
}
