//! Optimizer update ops, fused: each reads the weight, the gradient and its states
//! once per element, writes the states in place (they are mutate inputs) and the
//! new weight to the output (`out=weight` updates in place). Formulas and parameter
//! names are MXNet 1.9.1's (`sgd_update`, `sgd_mom_update`, `mp_sgd_update`, `adam_update`,
//! ...); `adagrad_update` and `adadelta_update` are oxnet's fused forms of what MXNet's
//! Python AdaGrad and AdaDelta compute with several ops.
//!
//! Weights may be float32, float64 or float16 (computed in float32). The `mp_*` ops
//! take a float16 (or any float) weight plus float32 master weights and states.

use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::cpu::{par_for, SendPtr};
use crate::shape::{fmt_shape, Shape};
use half::f16;
use std::ops::{Add, Div, Mul, Neg, Sub};

/// Arithmetic type of the update formulas.
pub trait Real:
    Copy
    + Send
    + Sync
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + 'static
{
    fn c(v: f64) -> Self;
    fn sqrt(self) -> Self;
    fn abs(self) -> Self;
    fn to_f64(self) -> f64;
}
impl Real for f32 {
    #[inline(always)]
    fn c(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        f32::abs(self)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
}
impl Real for f64 {
    #[inline(always)]
    fn c(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        f64::abs(self)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
}

/// A stored float element and its arithmetic type.
pub trait Fl: Copy + Send + Sync + 'static {
    type R: Real;
    fn ld(self) -> Self::R;
    fn st(r: Self::R) -> Self;
}
impl Fl for f32 {
    type R = f32;
    #[inline(always)]
    fn ld(self) -> f32 {
        self
    }
    #[inline(always)]
    fn st(r: f32) -> f32 {
        r
    }
}
impl Fl for f64 {
    type R = f64;
    #[inline(always)]
    fn ld(self) -> f64 {
        self
    }
    #[inline(always)]
    fn st(r: f64) -> f64 {
        r
    }
}
impl Fl for f16 {
    type R = f32;
    #[inline(always)]
    fn ld(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn st(r: f32) -> f16 {
        f16::from_f32(r)
    }
}
impl Fl for half::bf16 {
    type R = f32;
    #[inline(always)]
    fn ld(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn st(r: f32) -> half::bf16 {
        half::bf16::from_f32(r)
    }
}

/// A typed pointer into a blob that may cross to pool workers.
#[derive(Clone, Copy)]
struct P<T>(SendPtr<T>);
impl<T: Copy> P<T> {
    #[inline(always)]
    fn get(self, i: usize) -> T {
        // SAFETY: i < the blob's size; the engine orders every access to the blob.
        unsafe { *self.0.get().add(i) }
    }
    #[inline(always)]
    fn set(self, i: usize, v: T) {
        // SAFETY: as above; each index is written by one worker.
        unsafe { *self.0.get().add(i) = v }
    }
}
fn p<T>(b: &super::Blob) -> P<T> {
    P(SendPtr(b.ptr_as::<T>()))
}

const GRAIN: usize = 1 << 14;

/// Runs `f(i)` for every element, in parallel chunks.
#[inline]
fn each<F: Fn(usize) + Sync + Send>(n: usize, f: F) {
    par_for(n, GRAIN, |s, e| {
        for i in s..e {
            f(i)
        }
    });
}

/// MXNet's gradient clipping: a negative bound means none.
#[inline(always)]
fn clip<R: Real>(x: R, bound: R, on: bool) -> R {
    if !on {
        x
    } else if x > bound {
        bound
    } else if x < -bound {
        -bound
    } else {
        x
    }
}

#[inline(always)]
fn sign<R: Real>(x: R) -> R {
    if x > R::c(0.0) {
        R::c(1.0)
    } else if x < R::c(0.0) {
        R::c(-1.0)
    } else {
        R::c(0.0)
    }
}

macro_rules! float_dispatch {
    ($c:expr, $dtype:expr, $T:ident, $body:block) => {
        match $dtype {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            DType::F16 => {
                type $T = f16;
                $body
            }
            DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            d => {
                return Err(Error::op(
                    $c.op.name,
                    format!("weight dtype {} is not supported (float16, bfloat16, float32 or float64)", d.name()),
                ))
            }
        }
    };
}

/// The common scalars of an update call, in the arithmetic type.
struct Common<R> {
    lr: R,
    wd: R,
    rescale: R,
    clip: R,
    clip_on: bool,
}
fn common<R: Real>(p: &Params) -> Common<R> {
    let c = p.float("clip_gradient");
    Common { lr: R::c(p.float("lr")), wd: R::c(p.float("wd")), rescale: R::c(p.float("rescale_grad")), clip: R::c(c), clip_on: c >= 0.0 }
}
impl<R: Real> Common<R> {
    #[inline(always)]
    fn g(&self, grad: R) -> R {
        clip(self.rescale * grad, self.clip, self.clip_on)
    }
}

// ---- compute functions --------------------------------------------------------

fn sgd<T: Fl>(c: &OpCall) {
    let k = common::<T::R>(c.params);
    let (w, g, o) = (p::<T>(&c.inputs[0]), p::<T>(&c.inputs[1]), p::<T>(&c.outputs[0]));
    let one = T::R::c(1.0);
    each(c.outputs[0].size(), |i| {
        let wv = w.get(i).ld();
        o.set(i, T::st((one - k.lr * k.wd) * wv - k.lr * k.g(g.get(i).ld())));
    });
}

/// True when no two of the blobs share memory, except an output that is exactly
/// its input (`out=weight`): then the kernels may use plain slices, which the
/// compiler vectorises.
fn disjoint(bs: &[&super::Blob], same: (usize, usize)) -> bool {
    let range = |b: &super::Blob| (b.ptr as usize, b.ptr as usize + b.size() * b.dtype.size());
    for i in 0..bs.len() {
        for j in i + 1..bs.len() {
            let ((a0, a1), (b0, b1)) = (range(bs[i]), range(bs[j]));
            if a0 < b1 && b0 < a1 && !((i, j) == same && a0 == b0 && a1 == b1) {
                return false;
            }
        }
    }
    true
}

fn sgd_mom<T: Fl>(c: &OpCall) {
    let k = common::<T::R>(c.params);
    let m = T::R::c(c.params.float("momentum"));
    let (w, g, mom, o) = (p::<T>(&c.inputs[0]), p::<T>(&c.inputs[1]), p::<T>(&c.inputs[2]), p::<T>(&c.outputs[0]));
    let n = c.outputs[0].size();
    let (bw, bo) = (&c.inputs[0], &c.outputs[0]);
    if bw.ptr == bo.ptr && disjoint(&[bw, &c.inputs[1], &c.inputs[2]], (usize::MAX, 0)) {
        // in place, on slices
        par_for(n, GRAIN, |s, e| {
            // SAFETY: the blobs are disjoint (checked) and hold n elements; each
            // worker owns s..e.
            let (ws, gs, ms) = unsafe {
                (
                    std::slice::from_raw_parts_mut(o.0.get().add(s), e - s),
                    std::slice::from_raw_parts(g.0.get().add(s) as *const T, e - s),
                    std::slice::from_raw_parts_mut(mom.0.get().add(s), e - s),
                )
            };
            for ((wr, gv), mr) in ws.iter_mut().zip(gs).zip(ms.iter_mut()) {
                let wv = wr.ld();
                let mv = m * mr.ld() - k.lr * k.wd * wv - k.lr * k.g(gv.ld());
                *mr = T::st(mv);
                *wr = T::st(wv + mv);
            }
        });
        return;
    }
    each(n, |i| {
        let wv = w.get(i).ld();
        let mv = m * mom.get(i).ld() - k.lr * k.wd * wv - k.lr * k.g(g.get(i).ld());
        mom.set(i, T::st(mv));
        o.set(i, T::st(wv + mv));
    });
}

fn mp_sgd<T: Fl>(c: &OpCall) {
    let k = common::<f32>(c.params);
    let (g, w32, o) = (p::<T>(&c.inputs[1]), p::<f32>(&c.inputs[2]), p::<T>(&c.outputs[0]));
    each(c.outputs[0].size(), |i| {
        let wv = w32.get(i);
        let gv: f64 = T::ld(g.get(i)).to_f64();
        let nw = (1.0 - k.lr * k.wd) * wv - k.lr * k.g(gv as f32);
        w32.set(i, nw);
        o.set(i, T::st(T::R::c(nw as f64)));
    });
}

fn mp_sgd_mom<T: Fl>(c: &OpCall) {
    let k = common::<f32>(c.params);
    let m = c.params.float("momentum") as f32;
    let (g, mom, w32, o) = (p::<T>(&c.inputs[1]), p::<f32>(&c.inputs[2]), p::<f32>(&c.inputs[3]), p::<T>(&c.outputs[0]));
    each(c.outputs[0].size(), |i| {
        let wv = w32.get(i);
        let gv = T::ld(g.get(i)).to_f64() as f32;
        let mv = m * mom.get(i) - k.lr * k.wd * wv - k.lr * k.g(gv);
        mom.set(i, mv);
        let nw = wv + mv;
        w32.set(i, nw);
        o.set(i, T::st(T::R::c(nw as f64)));
    });
}

fn nag_mom<T: Fl>(c: &OpCall) {
    let k = common::<T::R>(c.params);
    let m = T::R::c(c.params.float("momentum"));
    let (w, g, mom, o) = (p::<T>(&c.inputs[0]), p::<T>(&c.inputs[1]), p::<T>(&c.inputs[2]), p::<T>(&c.outputs[0]));
    each(c.outputs[0].size(), |i| {
        let wv = w.get(i).ld();
        let gr = k.g(g.get(i).ld()) + k.wd * wv;
        // MXNet 1.9.1: mom = momentum * mom - lr * g; weight += momentum * mom - lr * g
        let mv = m * mom.get(i).ld() - k.lr * gr;
        mom.set(i, T::st(mv));
        o.set(i, T::st(wv + m * mv - k.lr * gr));
    });
}

fn mp_nag_mom<T: Fl>(c: &OpCall) {
    let k = common::<f32>(c.params);
    let m = c.params.float("momentum") as f32;
    let (g, mom, w32, o) = (p::<T>(&c.inputs[1]), p::<f32>(&c.inputs[2]), p::<f32>(&c.inputs[3]), p::<T>(&c.outputs[0]));
    each(c.outputs[0].size(), |i| {
        let wv = w32.get(i);
        let gr = k.g(T::ld(g.get(i)).to_f64() as f32) + k.wd * wv;
        let mv = m * mom.get(i) - k.lr * gr;
        mom.set(i, mv);
        let nw = wv + m * mv - k.lr * gr;
        w32.set(i, nw);
        o.set(i, T::st(T::R::c(nw as f64)));
    });
}

fn adam<T: Fl>(c: &OpCall) {
    let k = common::<T::R>(c.params);
    let (b1, b2, eps) = (T::R::c(c.params.float("beta1")), T::R::c(c.params.float("beta2")), T::R::c(c.params.float("epsilon")));
    let one = T::R::c(1.0);
    let (w, g, mean, var, o) =
        (p::<T>(&c.inputs[0]), p::<T>(&c.inputs[1]), p::<T>(&c.inputs[2]), p::<T>(&c.inputs[3]), p::<T>(&c.outputs[0]));
    each(c.outputs[0].size(), |i| {
        let wv = w.get(i).ld();
        let gr = clip(k.rescale * g.get(i).ld() + k.wd * wv, k.clip, k.clip_on);
        let mv = b1 * mean.get(i).ld() + (one - b1) * gr;
        let vv = b2 * var.get(i).ld() + (one - b2) * gr * gr;
        mean.set(i, T::st(mv));
        var.set(i, T::st(vv));
        o.set(i, T::st(wv - k.lr * mv / (vv.sqrt() + eps)));
    });
}

/// FTML (Zheng & Kwok, 2017), MXNet's `ftml_update`: its gradient clip is the
/// `clip_grad` parameter and covers the weight decay term too.
fn ftml<T: Fl>(c: &OpCall) {
    let pf = |n: &str| T::R::c(c.params.float(n));
    let (lr, b1, b2, eps, wd, rescale) = (pf("lr"), pf("beta1"), pf("beta2"), pf("epsilon"), pf("wd"), pf("rescale_grad"));
    let cg = c.params.float("clip_grad");
    let t = c.params.int("t") as i32;
    let one = T::R::c(1.0);
    let b1t = T::R::c(c.params.float("beta1").powi(t));
    let b2t = T::R::c(c.params.float("beta2").powi(t));
    let (w, g, d, v, z, o) = (
        p::<T>(&c.inputs[0]),
        p::<T>(&c.inputs[1]),
        p::<T>(&c.inputs[2]),
        p::<T>(&c.inputs[3]),
        p::<T>(&c.inputs[4]),
        p::<T>(&c.outputs[0]),
    );
    each(c.outputs[0].size(), |i| {
        let wv = w.get(i).ld();
        let gr = clip(rescale * g.get(i).ld() + wd * wv, T::R::c(cg), cg >= 0.0);
        let vv = b2 * v.get(i).ld() + (one - b2) * gr * gr;
        let dt = (one - b1t) / lr * ((vv / (one - b2t)).sqrt() + eps);
        let zv = b1 * z.get(i).ld() + (one - b1) * gr - (dt - b1 * d.get(i).ld()) * wv;
        v.set(i, T::st(vv));
        z.set(i, T::st(zv));
        d.set(i, T::st(dt));
        o.set(i, T::st(-zv / dt));
    });
}

fn clip_w<R: Real>(w: R, cw: f64) -> R {
    if cw >= 0.0 {
        clip(w, R::c(cw), true)
    } else {
        w
    }
}

fn rmsprop<T: Fl>(c: &OpCall) {
    let k = common::<T::R>(c.params);
    let (g1, eps, cw) = (T::R::c(c.params.float("gamma1")), T::R::c(c.params.float("epsilon")), c.params.float("clip_weights"));
    let one = T::R::c(1.0);
    let (w, g, n, o) = (p::<T>(&c.inputs[0]), p::<T>(&c.inputs[1]), p::<T>(&c.inputs[2]), p::<T>(&c.outputs[0]));
    each(c.outputs[0].size(), |i| {
        let wv = w.get(i).ld();
        let gr = clip(k.rescale * g.get(i).ld() + k.wd * wv, k.clip, k.clip_on);
        let nv = (one - g1) * gr * gr + g1 * n.get(i).ld();
        n.set(i, T::st(nv));
        o.set(i, T::st(clip_w(wv - k.lr * (gr / (nv + eps).sqrt()), cw)));
    });
}

fn rmspropalex<T: Fl>(c: &OpCall) {
    let k = common::<T::R>(c.params);
    let (g1, g2) = (T::R::c(c.params.float("gamma1")), T::R::c(c.params.float("gamma2")));
    let (eps, cw) = (T::R::c(c.params.float("epsilon")), c.params.float("clip_weights"));
    let one = T::R::c(1.0);
    let (w, g, n, gs, d) = (p::<T>(&c.inputs[0]), p::<T>(&c.inputs[1]), p::<T>(&c.inputs[2]), p::<T>(&c.inputs[3]), p::<T>(&c.inputs[4]));
    let o = p::<T>(&c.outputs[0]);
    each(c.outputs[0].size(), |i| {
        let wv = w.get(i).ld();
        let gr = clip(k.rescale * g.get(i).ld() + k.wd * wv, k.clip, k.clip_on);
        let nv = (one - g1) * gr * gr + g1 * n.get(i).ld();
        let gv = (one - g1) * gr + g1 * gs.get(i).ld();
        let dv = g2 * d.get(i).ld() - k.lr * (gr / (nv - gv * gv + eps).sqrt());
        n.set(i, T::st(nv));
        gs.set(i, T::st(gv));
        d.set(i, T::st(dv));
        o.set(i, T::st(clip_w(wv + dv, cw)));
    });
}

fn ftrl<T: Fl>(c: &OpCall) {
    let k = common::<T::R>(c.params);
    let (l1, beta) = (T::R::c(c.params.float("lamda1")), T::R::c(c.params.float("beta")));
    let (w, g, z, n, o) = (p::<T>(&c.inputs[0]), p::<T>(&c.inputs[1]), p::<T>(&c.inputs[2]), p::<T>(&c.inputs[3]), p::<T>(&c.outputs[0]));
    each(c.outputs[0].size(), |i| {
        let wv = w.get(i).ld();
        let gr = k.g(g.get(i).ld());
        let nv0 = n.get(i).ld();
        let zv = z.get(i).ld() + gr - ((nv0 + gr * gr).sqrt() - nv0.sqrt()) * wv / k.lr;
        let nv = nv0 + gr * gr;
        z.set(i, T::st(zv));
        n.set(i, T::st(nv));
        let nw = if zv.abs() > l1 { (sign(zv) * l1 - zv) / ((beta + nv.sqrt()) / k.lr + k.wd) } else { T::R::c(0.0) };
        o.set(i, T::st(nw));
    });
}

fn signsgd<T: Fl>(c: &OpCall) {
    let k = common::<T::R>(c.params);
    let one = T::R::c(1.0);
    let (w, g, o) = (p::<T>(&c.inputs[0]), p::<T>(&c.inputs[1]), p::<T>(&c.outputs[0]));
    each(c.outputs[0].size(), |i| {
        let wv = w.get(i).ld();
        o.set(i, T::st((one - k.lr * k.wd) * wv - k.lr * sign(g.get(i).ld())));
    });
}

fn signum<T: Fl>(c: &OpCall) {
    let k = common::<T::R>(c.params);
    let (m, wd_lh) = (T::R::c(c.params.float("momentum")), T::R::c(c.params.float("wd_lh")));
    let one = T::R::c(1.0);
    let (w, g, mom, o) = (p::<T>(&c.inputs[0]), p::<T>(&c.inputs[1]), p::<T>(&c.inputs[2]), p::<T>(&c.outputs[0]));
    each(c.outputs[0].size(), |i| {
        let wv = w.get(i).ld();
        let mv = m * mom.get(i).ld() - (one - m) * k.wd * wv - (one - m) * k.g(g.get(i).ld());
        mom.set(i, T::st(mv));
        o.set(i, T::st((one - k.lr * wd_lh) * wv + k.lr * sign(mv)));
    });
}

fn lamb1<T: Fl>(c: &OpCall) {
    let k = common::<T::R>(c.params);
    let (b1, b2, eps) = (c.params.float("beta1"), c.params.float("beta2"), T::R::c(c.params.float("epsilon")));
    let t = c.params.int("t") as i32;
    let bc = c.params.bool("bias_correction");
    let (c1, c2) = if bc { (T::R::c(1.0 - b1.powi(t)), T::R::c(1.0 - b2.powi(t))) } else { (T::R::c(1.0), T::R::c(1.0)) };
    let (b1, b2) = (T::R::c(b1), T::R::c(b2));
    let one = T::R::c(1.0);
    let (w, g, mean, var, o) =
        (p::<T>(&c.inputs[0]), p::<T>(&c.inputs[1]), p::<T>(&c.inputs[2]), p::<T>(&c.inputs[3]), p::<T>(&c.outputs[0]));
    each(c.outputs[0].size(), |i| {
        let wv = w.get(i).ld();
        let gr = k.g(g.get(i).ld());
        let mv = b1 * mean.get(i).ld() + (one - b1) * gr;
        let vv = b2 * var.get(i).ld() + (one - b2) * gr * gr;
        mean.set(i, T::st(mv));
        var.set(i, T::st(vv));
        o.set(i, T::st((mv / c1) / ((vv / c2).sqrt() + eps) + k.wd * wv));
    });
}

fn lamb2<T: Fl>(c: &OpCall) {
    let lr = c.params.float("lr");
    let (lo, hi) = (c.params.float("lower_bound"), c.params.float("upper_bound"));
    let (w, g, o) = (p::<T>(&c.inputs[0]), p::<T>(&c.inputs[1]), p::<T>(&c.outputs[0]));
    let mut r1 = T::ld(p::<T>(&c.inputs[2]).get(0)).to_f64();
    let r2 = T::ld(p::<T>(&c.inputs[3]).get(0)).to_f64();
    if lo >= 0.0 {
        r1 = r1.max(lo);
    }
    if hi >= 0.0 {
        r1 = r1.min(hi);
    }
    let ratio = if r1 == 0.0 || r2 == 0.0 { 1.0 } else { r1 / r2 };
    let step = T::R::c(lr * ratio);
    each(c.outputs[0].size(), |i| {
        o.set(i, T::st(w.get(i).ld() - step * g.get(i).ld()));
    });
}

fn adagrad<T: Fl>(c: &OpCall) {
    let k = common::<T::R>(c.params);
    let eps = T::R::c(c.params.float("epsilon"));
    let (w, g, h, o) = (p::<T>(&c.inputs[0]), p::<T>(&c.inputs[1]), p::<T>(&c.inputs[2]), p::<T>(&c.outputs[0]));
    each(c.outputs[0].size(), |i| {
        let wv = w.get(i).ld();
        let gr = k.g(g.get(i).ld());
        let hv = h.get(i).ld() + gr * gr;
        h.set(i, T::st(hv));
        o.set(i, T::st(wv - k.lr * (gr / (hv + eps).sqrt() + wv * k.wd)));
    });
}

fn adadelta<T: Fl>(c: &OpCall) {
    let k = common::<T::R>(c.params);
    let rho64 = c.params.float("rho");
    let (rho, eps) = (T::R::c(rho64), T::R::c(c.params.float("epsilon")));
    // 1 - rho in double, then rounded once, as MXNet's Python optimizer computes it
    // (1 - 0.9f in float32 is 0.100000024, one ulp off 0.1f)
    let one_m_rho = T::R::c(1.0 - rho64);
    let (w, g, ag, ad, o) = (p::<T>(&c.inputs[0]), p::<T>(&c.inputs[1]), p::<T>(&c.inputs[2]), p::<T>(&c.inputs[3]), p::<T>(&c.outputs[0]));
    each(c.outputs[0].size(), |i| {
        let wv = w.get(i).ld();
        let gr = k.g(g.get(i).ld());
        let agv = rho * ag.get(i).ld() + one_m_rho * (gr * gr);
        let delta = (ad.get(i).ld() + eps).sqrt() / (agv + eps).sqrt() * gr;
        let adv = rho * ad.get(i).ld() + one_m_rho * (delta * delta);
        ag.set(i, T::st(agv));
        ad.set(i, T::st(adv));
        o.set(i, T::st(wv - (delta + k.wd * wv)));
    });
}

macro_rules! compute_fn {
    ($name:ident, $f:ident) => {
        fn $name(c: &mut OpCall) -> Result<()> {
            float_dispatch!(c, c.outputs[0].dtype, T, { $f::<T>(c) });
            Ok(())
        }
    };
}
compute_fn!(sgd_c, sgd);
compute_fn!(sgd_mom_c, sgd_mom);
compute_fn!(mp_sgd_c, mp_sgd);
compute_fn!(mp_sgd_mom_c, mp_sgd_mom);
compute_fn!(nag_mom_c, nag_mom);
compute_fn!(mp_nag_mom_c, mp_nag_mom);
compute_fn!(adam_c, adam);
compute_fn!(rmsprop_c, rmsprop);
compute_fn!(rmspropalex_c, rmspropalex);
compute_fn!(ftrl_c, ftrl);
compute_fn!(signsgd_c, signsgd);
compute_fn!(signum_c, signum);
compute_fn!(lamb1_c, lamb1);
compute_fn!(lamb2_c, lamb2);
compute_fn!(adagrad_c, adagrad);
compute_fn!(adadelta_c, adadelta);
compute_fn!(ftml_c, ftml);

// ---- inference ----------------------------------------------------------------

/// Every input has the weight's shape; the gradient and the states have the
/// weight's dtype, except the inputs listed in `f32_inputs` (master weights and
/// states of the `mp_*` ops), which are float32. `scalar_inputs` are (1,)-shaped.
fn check_inputs(a: &InferArgs, f32_inputs: &[usize], scalar_inputs: &[usize]) -> Result<Vec<(Shape, DType)>> {
    let names = a.op.input_names(&Params::default());
    let ws = a.shapes[0];
    let wd = a.dtypes[0];
    if !matches!(wd, DType::F32 | DType::F64 | DType::F16 | DType::BF16) {
        return Err(a.err(format!("weight dtype {} is not supported (float16, bfloat16, float32 or float64)", wd.name())));
    }
    for i in 1..a.shapes.len() {
        let name = names.get(i).map(|s| s.as_str()).unwrap_or("input");
        if scalar_inputs.contains(&i) {
            if a.shapes[i].iter().product::<usize>() != 1 {
                return Err(a.err(format!("{name} must hold one value, got shape {}", fmt_shape(a.shapes[i]))));
            }
        } else if a.shapes[i] != ws {
            return Err(a.err(format!(
                "shape mismatch: {name} has shape {} but weight has shape {}",
                fmt_shape(a.shapes[i]),
                fmt_shape(ws)
            )));
        }
        let want = if f32_inputs.contains(&i) { DType::F32 } else { wd };
        if a.dtypes[i] != want {
            return Err(a.err(format!("dtype mismatch: {name} is {} but {} was expected", a.dtypes[i].name(), want.name())));
        }
    }
    Ok(vec![(Shape::from_slice(ws), wd)])
}

fn infer_plain(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    check_inputs(a, &[], &[])
}
fn infer_mp1(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    check_inputs(a, &[2], &[])
}
fn infer_mp2(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    check_inputs(a, &[2, 3], &[])
}
fn infer_lamb2(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    check_inputs(a, &[], &[2, 3])
}

// ---- parameters ---------------------------------------------------------------

macro_rules! spec {
    (lr) => {
        ParamSpec::new("lr", PType::Float, None, "Learning rate")
    };
    (wd) => {
        ParamSpec::new("wd", PType::Float, Some("0"), "Weight decay augments the objective function with a regularization term that penalizes large weights. The penalty scales with the square of the magnitude of each weight.")
    };
    (rescale) => {
        ParamSpec::new("rescale_grad", PType::Float, Some("1"), "Rescale gradient to grad = rescale_grad*grad.")
    };
    (clip) => {
        ParamSpec::new("clip_gradient", PType::Float, Some("-1"), "Clip gradient to the range of [-clip_gradient, clip_gradient] If clip_gradient <= 0, gradient clipping is turned off. grad = max(min(grad, clip_gradient), -clip_gradient).")
    };
    (lazy) => {
        ParamSpec::new("lazy_update", PType::Bool, Some("True"), "If true, lazy updates are applied if gradient's stype is row_sparse (dense gradients always get the standard update).")
    };
    (momentum) => {
        ParamSpec::new("momentum", PType::Float, Some("0"), "The decay rate of momentum estimates at each epoch.")
    };
}

const SGD_P: &[ParamSpec] = &[spec!(lr), spec!(wd), spec!(rescale), spec!(clip), spec!(lazy)];
const SGD_MOM_P: &[ParamSpec] = &[spec!(lr), spec!(momentum), spec!(wd), spec!(rescale), spec!(clip), spec!(lazy)];
const NAG_P: &[ParamSpec] = &[spec!(lr), spec!(momentum), spec!(wd), spec!(rescale), spec!(clip)];
const ADAM_P: &[ParamSpec] = &[
    spec!(lr),
    ParamSpec::new("beta1", PType::Float, Some("0.9"), "The decay rate for the 1st moment estimates."),
    ParamSpec::new("beta2", PType::Float, Some("0.999"), "The decay rate for the 2nd moment estimates."),
    ParamSpec::new("epsilon", PType::Float, Some("1e-08"), "A small constant for numerical stability."),
    spec!(wd),
    spec!(rescale),
    spec!(clip),
    spec!(lazy),
];
const CLIP_W: ParamSpec = ParamSpec::new("clip_weights", PType::Float, Some("-1"), "Clip weights to the range of [-clip_weights, clip_weights] If clip_weights <= 0, weight clipping is turned off. weights = max(min(weights, clip_weights), -clip_weights).");
const RMSPROP_P: &[ParamSpec] = &[
    spec!(lr),
    ParamSpec::new("gamma1", PType::Float, Some("0.95"), "The decay rate of momentum estimates."),
    ParamSpec::new("epsilon", PType::Float, Some("1e-08"), "A small constant for numerical stability."),
    spec!(wd),
    spec!(rescale),
    spec!(clip),
    CLIP_W,
];
const RMSPROPALEX_P: &[ParamSpec] = &[
    spec!(lr),
    ParamSpec::new("gamma1", PType::Float, Some("0.95"), "Decay rate."),
    ParamSpec::new("gamma2", PType::Float, Some("0.9"), "Decay rate."),
    ParamSpec::new("epsilon", PType::Float, Some("1e-08"), "A small constant for numerical stability."),
    spec!(wd),
    spec!(rescale),
    spec!(clip),
    CLIP_W,
];
const FTRL_P: &[ParamSpec] = &[
    spec!(lr),
    ParamSpec::new("lamda1", PType::Float, Some("0.01"), "The L1 regularization coefficient."),
    ParamSpec::new("beta", PType::Float, Some("1"), "Per-Coordinate Learning Rate beta."),
    spec!(wd),
    spec!(rescale),
    spec!(clip),
];
const SIGNSGD_P: &[ParamSpec] = &[spec!(lr), spec!(wd), spec!(rescale), spec!(clip)];
const SIGNUM_P: &[ParamSpec] = &[
    spec!(lr),
    spec!(momentum),
    spec!(wd),
    spec!(rescale),
    spec!(clip),
    ParamSpec::new(
        "wd_lh",
        PType::Float,
        Some("0"),
        "The amount of weight decay that does not go into gradient/momentum calculationsotherwise do weight decay algorithmically only.",
    ),
];
const LAMB1_P: &[ParamSpec] = &[
    ParamSpec::new("beta1", PType::Float, Some("0.9"), "The decay rate for the 1st moment estimates."),
    ParamSpec::new("beta2", PType::Float, Some("0.999"), "The decay rate for the 2nd moment estimates."),
    ParamSpec::new("epsilon", PType::Float, Some("1e-06"), "A small constant for numerical stability."),
    ParamSpec::new("t", PType::Int, None, "Index update count."),
    ParamSpec::new("bias_correction", PType::Bool, Some("True"), "Whether to use bias correction."),
    ParamSpec::new(
        "wd",
        PType::Float,
        None,
        "Weight decay augments the objective function with a regularization term that penalizes large weights.",
    ),
    spec!(rescale),
    spec!(clip),
];
const LAMB2_P: &[ParamSpec] = &[
    spec!(lr),
    ParamSpec::new("lower_bound", PType::Float, Some("-1"), "Lower limit of norm of weight. If lower_bound <= 0, Lower limit is not set"),
    ParamSpec::new("upper_bound", PType::Float, Some("-1"), "Upper limit of norm of weight. If upper_bound <= 0, Upper limit is not set"),
];
const ADAGRAD_P: &[ParamSpec] = &[
    spec!(lr),
    ParamSpec::new("epsilon", PType::Float, Some("1e-07"), "A small constant added to the history for numerical stability."),
    spec!(wd),
    spec!(rescale),
    spec!(clip),
];
const ADADELTA_P: &[ParamSpec] = &[
    ParamSpec::new("rho", PType::Float, Some("0.9"), "Decay rate for both squared gradients and delta."),
    ParamSpec::new("epsilon", PType::Float, Some("1e-05"), "A small constant for numerical stability."),
    spec!(wd),
    spec!(rescale),
    spec!(clip),
];

const FTML_P: &[ParamSpec] = &[
    spec!(lr),
    ParamSpec::new("beta1", PType::Float, Some("0.6"), "Generally close to 0.5."),
    ParamSpec::new("beta2", PType::Float, Some("0.999"), "Generally close to 1."),
    ParamSpec::new("epsilon", PType::Float, Some("1e-08"), "Epsilon to prevent div 0."),
    ParamSpec::new("t", PType::Int, None, "Number of update."),
    spec!(wd),
    spec!(rescale),
    ParamSpec::new("clip_grad", PType::Float, Some("-1"), "Clip gradient to the range of [-clip_gradient, clip_gradient] If clip_gradient <= 0, gradient clipping is turned off. grad = max(min(grad, clip_gradient), -clip_gradient)."),
];

/// True for the update ops that work element by element on arrays of the weight's
/// size (every input of another size holds one value), so a caller may run them on
/// any sub-range of the elements: the kvstore fuses the gradient sum into them
/// block by block.
pub fn blockwise_update(name: &str) -> bool {
    matches!(
        name,
        "sgd_update"
            | "sgd_mom_update"
            | "mp_sgd_update"
            | "mp_sgd_mom_update"
            | "nag_mom_update"
            | "mp_nag_mom_update"
            | "adam_update"
            | "rmsprop_update"
            | "rmspropalex_update"
            | "ftrl_update"
            | "signsgd_update"
            | "signum_update"
            | "lamb_update_phase1"
            | "lamb_update_phase2"
            | "adagrad_update"
            | "adadelta_update"
            | "ftml_update"
    )
}

pub(super) fn register(r: &mut Registry) {
    let add = |r: &mut Registry,
               name: &'static str,
               doc: &'static str,
               ins: &'static [&'static str],
               ps: &'static [ParamSpec],
               infer: super::InferFn,
               f: super::ComputeFn,
               m: &'static [usize]| {
        r.add(OpDef::new(name, doc, Arity::Fixed(ins), ps, infer, f).inplace().mutate(m).cost(4).unnamed_inputs());
    };
    add(r, "sgd_update", "Update function for Stochastic Gradient Descent (SGD) optimizer.\n\n    weight = (1 - lr * wd) * weight - lr * clip(rescale_grad * grad, clip_gradient)", &["weight", "grad"], SGD_P, infer_plain, sgd_c, &[]);
    add(r, "sgd_mom_update", "Momentum update function for Stochastic Gradient Descent (SGD) optimizer.\n\n    mom = momentum * mom - lr * wd * weight - lr * clip(rescale_grad * grad)\n    weight = weight + mom", &["weight", "grad", "mom"], SGD_MOM_P, infer_plain, sgd_mom_c, &[2]);
    add(
        r,
        "mp_sgd_update",
        "Updater function for multi-precision sgd optimizer: the float32 master weights weight32 are updated and written, cast, to weight.",
        &["weight", "grad", "weight32"],
        SGD_P,
        infer_mp1,
        mp_sgd_c,
        &[2],
    );
    add(
        r,
        "mp_sgd_mom_update",
        "Updater function for multi-precision sgd optimizer with momentum (float32 mom and weight32).",
        &["weight", "grad", "mom", "weight32"],
        SGD_MOM_P,
        infer_mp2,
        mp_sgd_mom_c,
        &[2, 3],
    );
    add(r, "nag_mom_update", "Update function for Nesterov Accelerated Gradient (NAG) optimizer.\n\n    g = clip(rescale_grad * grad) + wd * weight\n    mom = momentum * mom - lr * g\n    weight = weight + momentum * mom - lr * g", &["weight", "grad", "mom"], NAG_P, infer_plain, nag_mom_c, &[2]);
    add(
        r,
        "mp_nag_mom_update",
        "Update function for multi-precision Nesterov Accelerated Gradient (NAG) optimizer.",
        &["weight", "grad", "mom", "weight32"],
        NAG_P,
        infer_mp2,
        mp_nag_mom_c,
        &[2, 3],
    );
    add(r, "adam_update", "Update function for Adam optimizer.\n\n    g = clip(rescale_grad * grad + wd * weight)\n    mean = beta1 * mean + (1 - beta1) * g\n    var = beta2 * var + (1 - beta2) * g^2\n    weight = weight - lr * mean / (sqrt(var) + epsilon)", &["weight", "grad", "mean", "var"], ADAM_P, infer_plain, adam_c, &[2, 3]);
    add(r, "rmsprop_update", "Update function for RMSProp optimizer (Tieleman & Hinton).\n\n    n = (1 - gamma1) * g^2 + gamma1 * n\n    weight = weight - lr * g / sqrt(n + epsilon)", &["weight", "grad", "n"], RMSPROP_P, infer_plain, rmsprop_c, &[2]);
    add(
        r,
        "rmspropalex_update",
        "Update function for RMSPropAlex optimizer (Graves' centered RMSProp).",
        &["weight", "grad", "n", "g", "delta"],
        RMSPROPALEX_P,
        infer_plain,
        rmspropalex_c,
        &[2, 3, 4],
    );
    add(r, "ftrl_update", "Update function for Ftrl optimizer.", &["weight", "grad", "z", "n"], FTRL_P, infer_plain, ftrl_c, &[2, 3]);
    add(
        r,
        "signsgd_update",
        "Update function for SignSGD optimizer.\n\n    weight = (1 - lr * wd) * weight - lr * sign(grad)",
        &["weight", "grad"],
        SIGNSGD_P,
        infer_plain,
        signsgd_c,
        &[],
    );
    add(r, "signum_update", "SIGN momentUM (Signum) optimizer.\n\n    mom = momentum * mom - (1 - momentum) * (wd * weight + clip(rescale_grad * grad))\n    weight = (1 - lr * wd_lh) * weight + lr * sign(mom)", &["weight", "grad", "mom"], SIGNUM_P, infer_plain, signum_c, &[2]);
    add(
        r,
        "lamb_update_phase1",
        "Phase I of the LAMB update: updates mean and var and returns the step direction g.",
        &["weight", "grad", "mean", "var"],
        LAMB1_P,
        infer_plain,
        lamb1_c,
        &[2, 3],
    );
    add(r, "lamb_update_phase2", "Phase II of the LAMB update: weight = weight - lr * (r1 / r2) * g, with r1 clipped to [lower_bound, upper_bound] and a ratio of 1 where r1 or r2 is 0.", &["weight", "g", "r1", "r2"], LAMB2_P, infer_lamb2, lamb2_c, &[]);
    add(r, "adagrad_update", "Fused update of the AdaGrad optimizer (oxnet).\n\n    g = clip(rescale_grad * grad)\n    history = history + g^2\n    weight = weight - lr * (g / sqrt(history + epsilon) + wd * weight)", &["weight", "grad", "history"], ADAGRAD_P, infer_plain, adagrad_c, &[2]);
    // MXNet's name for AdaGrad with a row_sparse gradient (the lazy form, op::sparse).
    r.add(
        OpDef::new(
            "_sparse_adagrad_update",
            "Update function for AdaGrad optimizer with a row_sparse gradient (rows present only).",
            Arity::Fixed(&["weight", "grad", "history"]),
            ADAGRAD_P,
            infer_plain,
            adagrad_c,
        )
        .inplace()
        .mutate(&[2])
        .cost(4)
        .unnamed_inputs(),
    );
    add(r, "adadelta_update", "Fused update of the AdaDelta optimizer (oxnet).\n\n    g = clip(rescale_grad * grad)\n    acc_g = rho * acc_g + (1 - rho) * g^2\n    delta = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * g\n    acc_delta = rho * acc_delta + (1 - rho) * delta^2\n    weight = weight - (delta + wd * weight)", &["weight", "grad", "acc_g", "acc_delta"], ADADELTA_P, infer_plain, adadelta_c, &[2, 3]);
    add(
        r,
        "ftml_update",
        "The FTML optimizer described in *FTML - Follow the Moving Leader in Deep Learning*.\n\n    g = clip(rescale_grad * grad + wd * weight, clip_grad)\n    v = beta2 * v + (1 - beta2) * g^2\n    d_t = (1 - beta1^t) / lr * (sqrt(v / (1 - beta2^t)) + epsilon)\n    z = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * weight\n    d = d_t\n    weight = - z / d_t",
        &["weight", "grad", "d", "v", "z"],
        FTML_P,
        infer_plain,
        ftml_c,
        &[2, 3, 4],
    );
}

#[cfg(test)]
mod tests {
    use crate::op::{call1, Value};
    use crate::{Context, NDArray};

    fn arr(v: &[f32]) -> NDArray {
        NDArray::from_vec(&[v.len()], v, Context::default()).unwrap()
    }

    #[test]
    fn sgd_mom_updates_state_and_weight() {
        let w = arr(&[1.0, 2.0]);
        let g = arr(&[0.5, -1.0]);
        let m = arr(&[0.1, 0.2]);
        let out =
            call1("sgd_mom_update", &[w.clone(), g, m.clone()], &[("lr", Value::Float(0.1)), ("momentum", Value::Float(0.9))]).unwrap();
        let mv = m.to_vec::<f32>().unwrap();
        assert!((mv[0] - (0.09 - 0.05)).abs() < 1e-6 && (mv[1] - (0.18 + 0.1)).abs() < 1e-6);
        let o = out.to_vec::<f32>().unwrap();
        assert!((o[0] - 1.04).abs() < 1e-6 && (o[1] - 2.28).abs() < 1e-6);
        // no out=: the weight itself is untouched
        assert_eq!(w.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    }

    #[test]
    fn shape_mismatch_names_the_input() {
        let e = call1("adam_update", &[arr(&[1.0, 2.0]), arr(&[1.0]), arr(&[0.0, 0.0]), arr(&[0.0, 0.0])], &[("lr", Value::Float(0.1))])
            .unwrap_err();
        assert!(e.message().contains("adam_update") && e.message().contains("grad"), "{}", e.message());
    }
}
