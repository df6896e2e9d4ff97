//! Axis reductions over row-major arrays.
//!
//! A reduction is described by a [`Reducer`] (initial accumulator, one step per
//! element, and a merge of two partial accumulators) and a [`Plan`] built from the
//! input shape and the set of reduced axes. After dropping size-1 axes and merging
//! neighbouring axes of the same kind, almost every reduction is one of
//! `[outer] x [reduced] x [inner]` ([`Plan::Block`]); other layouts (kept and reduced
//! axes interleaved more than once) use an odometer walk ([`Plan::General`]).
//!
//! Parallelism: many outputs are split across the rayon pool by output blocks; few
//! outputs over a long reduced extent (e.g. a full sum of 10^7 elements) are split
//! along the reduced extent into partial accumulators that are merged in order.
//! Contiguous rows are accumulated in 8 independent lanes, which breaks the
//! dependency chain (speed) and sums in a tree-like order (accuracy).

use super::{SendPtr, PAR_MIN};
use crate::dtype::Element;
use half::f16;
use rayon::prelude::*;

/// Element types seen by the reduction, sorting and indexing kernels.
pub trait Num: Element {
    const FLOAT: bool;
    /// Integer value (floats truncate toward zero, saturating).
    fn to_i64(self) -> i64;
    /// From an integer, wrapping for integer types (C cast semantics).
    fn wrap_i64(v: i64) -> Self;
    fn is_nan(self) -> bool;
    /// The smallest value (`-inf` for floats).
    fn lowest() -> Self;
    /// The largest value (`+inf` for floats).
    fn highest() -> Self;
    /// A position stored as this type (floats round, integers wrap).
    #[inline(always)]
    fn from_index(i: usize) -> Self {
        if Self::FLOAT {
            Self::from_f64(i as f64)
        } else {
            Self::wrap_i64(i as i64)
        }
    }
}

macro_rules! num_float {
    ($t:ty, $lo:expr, $hi:expr) => {
        impl Num for $t {
            const FLOAT: bool = true;
            #[inline(always)]
            fn to_i64(self) -> i64 {
                Element::to_f64(self) as i64
            }
            #[inline(always)]
            fn wrap_i64(v: i64) -> Self {
                <$t as Element>::from_f64(v as f64)
            }
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn is_nan(self) -> bool {
                self != self
            }
            #[inline(always)]
            fn lowest() -> Self {
                $lo
            }
            #[inline(always)]
            fn highest() -> Self {
                $hi
            }
        }
    };
}
num_float!(f32, f32::NEG_INFINITY, f32::INFINITY);
num_float!(f64, f64::NEG_INFINITY, f64::INFINITY);
num_float!(f16, f16::NEG_INFINITY, f16::INFINITY);
num_float!(half::bf16, half::bf16::NEG_INFINITY, half::bf16::INFINITY);

macro_rules! num_int {
    ($t:ty) => {
        impl Num for $t {
            const FLOAT: bool = false;
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn wrap_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                false
            }
            #[inline(always)]
            fn lowest() -> Self {
                <$t>::MIN
            }
            #[inline(always)]
            fn highest() -> Self {
                <$t>::MAX
            }
        }
    };
}
num_int!(u8);
num_int!(i8);
num_int!(i32);
num_int!(i64);

/// A reduction: `init`, `step` (with the element's position along the reduced
/// extent, used by arg-reductions) and an associative `merge` of partial results.
pub trait Reducer<T>: Copy + Send + Sync {
    type A: Copy + Send + Sync;
    fn init(self) -> Self::A;
    fn step(self, a: Self::A, x: T, r: usize) -> Self::A;
    fn merge(self, a: Self::A, b: Self::A) -> Self::A;
}

/// A stateless reducer over an accumulator of type `$a`: its initial value, how an
/// element `$x` folds into the accumulator, and the merge of two partial results.
macro_rules! reducer {
    ($(#[$doc:meta])* $name:ident, $a:ty, $init:expr, |$acc:ident, $x:ident| $step:expr, |$l:ident, $r:ident| $merge:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub struct $name;
        impl<T: Num> Reducer<T> for $name {
            type A = $a;
            #[inline(always)]
            fn init(self) -> $a {
                $init
            }
            #[inline(always)]
            fn step(self, $acc: $a, $x: T, _: usize) -> $a {
                $step
            }
            #[inline(always)]
            fn merge(self, $l: $a, $r: $a) -> $a {
                $merge
            }
        }
    };
}

reducer!(
    /// Sum in f64 (float types).
    SumF, f64, 0.0, |a, x| a + x.to_f64(), |a, b| a + b
);
reducer!(
    /// Sum in i64 with wrapping (integer types).
    SumI, i64, 0, |a, x| a.wrapping_add(x.to_i64()), |a, b| a.wrapping_add(b)
);
reducer!(
    /// Sum in f64 treating NaN as 0.
    NanSumF, f64, 0.0, |a, x| if x.to_f64().is_nan() { a } else { a + x.to_f64() }, |a, b| a + b
);
reducer!(
    /// Product in f64 (float types).
    ProdF, f64, 1.0, |a, x| a * x.to_f64(), |a, b| a * b
);
reducer!(
    /// Product in i64 with wrapping (integer types).
    ProdI, i64, 1, |a, x| a.wrapping_mul(x.to_i64()), |a, b| a.wrapping_mul(b)
);
reducer!(
    /// Product in f64 treating NaN as 1.
    NanProdF, f64, 1.0, |a, x| if x.to_f64().is_nan() { a } else { a * x.to_f64() }, |a, b| a * b
);
reducer!(
    /// Sum of absolute values in f64 (L1 norm).
    AbsSum, f64, 0.0, |a, x| a + x.to_f64().abs(), |a, b| a + b
);
reducer!(
    /// Sum of squares in f64 (L2 norm of types whose squares cannot overflow f64).
    SqSum, f64, 0.0, |a, x| a + x.to_f64() * x.to_f64(), |a, b| a + b
);

/// Scaled sum of squares `(scale, ssq)` with value `scale * sqrt(ssq)`: the L2 norm
/// of float64 data without overflow or underflow of the squares.
#[derive(Clone, Copy)]
pub struct Nrm2;
impl Nrm2 {
    /// The norm from an accumulator.
    pub fn value(a: (f64, f64)) -> f64 {
        if a.1.is_nan() {
            f64::NAN
        } else if a.0 == 0.0 {
            0.0
        } else {
            a.0 * a.1.sqrt()
        }
    }
}
impl<T: Num> Reducer<T> for Nrm2 {
    type A = (f64, f64);
    #[inline(always)]
    fn init(self) -> (f64, f64) {
        (0.0, 0.0)
    }
    #[inline(always)]
    fn step(self, a: (f64, f64), x: T, _: usize) -> (f64, f64) {
        let v = x.to_f64().abs();
        <Nrm2 as Reducer<T>>::merge(self, a, (v, if v == 0.0 { 0.0 } else { 1.0 }))
    }
    #[inline(always)]
    fn merge(self, a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
        if a.1.is_nan() || b.1.is_nan() || a.0.is_nan() || b.0.is_nan() {
            return (f64::NAN, f64::NAN);
        }
        let (big, small) = if a.0 >= b.0 { (a, b) } else { (b, a) };
        if big.0 == 0.0 {
            return (0.0, 0.0);
        }
        if big.0.is_infinite() {
            return (f64::INFINITY, 1.0);
        }
        let r = small.0 / big.0;
        (big.0, big.1 + small.1 * r * r)
    }
}

/// Maximum, NaN-propagating.
#[derive(Clone, Copy)]
pub struct MaxR;
impl<T: Num> Reducer<T> for MaxR {
    type A = T;
    #[inline(always)]
    fn init(self) -> T {
        T::lowest()
    }
    #[inline(always)]
    fn step(self, a: T, x: T, _: usize) -> T {
        if x > a || x.is_nan() {
            x
        } else {
            a
        }
    }
    #[inline(always)]
    fn merge(self, a: T, b: T) -> T {
        if a.is_nan() {
            a
        } else {
            <MaxR as Reducer<T>>::step(self, a, b, 0)
        }
    }
}

/// Minimum, NaN-propagating.
#[derive(Clone, Copy)]
pub struct MinR;
impl<T: Num> Reducer<T> for MinR {
    type A = T;
    #[inline(always)]
    fn init(self) -> T {
        T::highest()
    }
    #[inline(always)]
    fn step(self, a: T, x: T, _: usize) -> T {
        if x < a || x.is_nan() {
            x
        } else {
            a
        }
    }
    #[inline(always)]
    fn merge(self, a: T, b: T) -> T {
        if a.is_nan() {
            a
        } else {
            <MinR as Reducer<T>>::step(self, a, b, 0)
        }
    }
}

/// Position of the maximum (`MAX == true`) or minimum: the first one on ties; a NaN
/// beats every number (the first NaN wins), as in MXNet.
#[derive(Clone, Copy)]
pub struct ArgR<const MAX: bool>;
impl<T: Num, const MAX: bool> Reducer<T> for ArgR<MAX> {
    type A = (T, usize);
    #[inline(always)]
    fn init(self) -> (T, usize) {
        (if MAX { T::lowest() } else { T::highest() }, usize::MAX)
    }
    #[inline(always)]
    fn step(self, a: (T, usize), x: T, r: usize) -> (T, usize) {
        <Self as Reducer<T>>::merge(self, a, (x, r))
    }
    #[inline(always)]
    fn merge(self, a: (T, usize), b: (T, usize)) -> (T, usize) {
        let (an, bn) = (a.0.is_nan(), b.0.is_nan());
        let first = if a.1 <= b.1 { a } else { b };
        if an && bn {
            return first;
        }
        if an {
            return a;
        }
        if bn {
            return b;
        }
        let b_better = if MAX { b.0 > a.0 } else { b.0 < a.0 };
        let a_better = if MAX { a.0 > b.0 } else { a.0 < b.0 };
        if b_better {
            b
        } else if a_better {
            a
        } else {
            first
        }
    }
}

/// How a reduction walks its input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// `out[o, i] = reduce_r x[o, r, i]` over `x` of shape `(outer, red, inner)`.
    Block { outer: usize, red: usize, inner: usize },
    /// Interleaved kept and reduced axes: `(extent, stride)` of each merged kept axis
    /// (in output order) and of each merged reduced axis.
    General { kept: Vec<(usize, usize)>, red: Vec<(usize, usize)> },
}

impl Plan {
    /// The plan for reducing the axes of `shape` flagged in `reduce`.
    pub fn new(shape: &[usize], reduce: &[bool]) -> Plan {
        assert_eq!(shape.len(), reduce.len());
        // Merge neighbouring axes of the same kind; size-1 axes do not matter.
        let mut segs: Vec<(usize, bool)> = Vec::new();
        for (&d, &r) in shape.iter().zip(reduce) {
            if d == 1 {
                continue;
            }
            match segs.last_mut() {
                Some((s, kind)) if *kind == r => *s *= d,
                _ => segs.push((d, r)),
            }
        }
        let kinds: Vec<bool> = segs.iter().map(|s| s.1).collect();
        let sz = |i: usize| segs[i].0;
        match kinds.as_slice() {
            [] => Plan::Block { outer: 1, red: 1, inner: 1 },
            [false] => Plan::Block { outer: sz(0), red: 1, inner: 1 },
            [true] => Plan::Block { outer: 1, red: sz(0), inner: 1 },
            [false, true] => Plan::Block { outer: sz(0), red: sz(1), inner: 1 },
            [true, false] => Plan::Block { outer: 1, red: sz(0), inner: sz(1) },
            [false, true, false] => Plan::Block { outer: sz(0), red: sz(1), inner: sz(2) },
            _ => {
                let mut stride = 1;
                let mut strided = vec![(0, 0, false); segs.len()];
                for i in (0..segs.len()).rev() {
                    strided[i] = (segs[i].0, stride, segs[i].1);
                    stride *= segs[i].0;
                }
                Plan::General {
                    kept: strided.iter().filter(|s| !s.2).map(|s| (s.0, s.1)).collect(),
                    red: strided.iter().filter(|s| s.2).map(|s| (s.0, s.1)).collect(),
                }
            }
        }
    }

    /// Number of elements reduced into each output.
    pub fn red_count(&self) -> usize {
        match self {
            Plan::Block { red, .. } => *red,
            Plan::General { red, .. } => red.iter().map(|r| r.0).product(),
        }
    }
}

const LANES: usize = 8;
/// Elements per parallel task, roughly.
const GRAIN: usize = 1 << 15;
/// Width of the accumulator block of one task over the inner extent.
const IBLOCK: usize = 1024;

/// Accumulates `x[o, r0..r1, i0..i1]` into `acc` (one per inner position).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn acc_range<T: Copy, R: Reducer<T>>(
    x: &[T],
    red: usize,
    inner: usize,
    o: usize,
    r0: usize,
    r1: usize,
    i0: usize,
    acc: &mut [R::A],
    rd: R,
) {
    if inner == 1 {
        let row = &x[o * red + r0..o * red + r1];
        let mut lanes = [rd.init(); LANES];
        let mut chunks = row.chunks_exact(LANES);
        let mut r = r0;
        for ch in &mut chunks {
            for j in 0..LANES {
                lanes[j] = rd.step(lanes[j], ch[j], r + j);
            }
            r += LANES;
        }
        for (j, &v) in chunks.remainder().iter().enumerate() {
            lanes[j] = rd.step(lanes[j], v, r + j);
        }
        let mut a = lanes[0];
        for l in &lanes[1..] {
            a = rd.merge(a, *l);
        }
        acc[0] = rd.merge(acc[0], a);
    } else {
        let w = acc.len();
        for r in r0..r1 {
            let base = (o * red + r) * inner + i0;
            let row = &x[base..base + w];
            for (a, &v) in acc.iter_mut().zip(row) {
                *a = rd.step(*a, v, r);
            }
        }
    }
}

/// Reduces `x` along `plan` into `out`, applying `fin` to each accumulator.
pub fn reduce<T, R, U, F>(x: &[T], plan: &Plan, out: &mut [U], rd: R, fin: F)
where
    T: Copy + Send + Sync,
    R: Reducer<T>,
    U: Copy + Send + Sync,
    F: Fn(R::A) -> U + Sync + Send + Copy,
{
    match plan {
        Plan::Block { outer, red, inner } => block(x, *outer, *red, *inner, out, rd, fin),
        Plan::General { kept, red } => general(x, kept, red, out, rd, fin),
    }
}

fn block<T, R, U, F>(x: &[T], outer: usize, red: usize, inner: usize, out: &mut [U], rd: R, fin: F)
where
    T: Copy + Send + Sync,
    R: Reducer<T>,
    U: Copy + Send + Sync,
    F: Fn(R::A) -> U + Sync + Send + Copy,
{
    let n_out = outer * inner;
    debug_assert_eq!(out.len(), n_out);
    debug_assert_eq!(x.len(), n_out * red);
    if n_out == 0 {
        return;
    }
    let total = n_out * red;
    let threads = crate::engine::threads().max(1);
    let ib = inner.min(IBLOCK);
    if total < PAR_MIN || threads == 1 {
        let mut acc = vec![rd.init(); ib];
        for o in 0..outer {
            let mut i0 = 0;
            while i0 < inner {
                let w = ib.min(inner - i0);
                acc[..w].fill(rd.init());
                acc_range(x, red, inner, o, 0, red, i0, &mut acc[..w], rd);
                for (k, a) in acc[..w].iter().enumerate() {
                    out[o * inner + i0 + k] = fin(*a);
                }
                i0 += w;
            }
        }
        return;
    }
    if n_out < 4 * threads {
        // Few outputs over a long extent: split the extent, merge partials in order.
        let chunks = (threads * 4).min(red.div_ceil((GRAIN / n_out).max(1))).max(1);
        let per = red.div_ceil(chunks);
        let mut partials = vec![rd.init(); chunks * n_out];
        crate::engine::install(|| {
            partials.par_chunks_mut(n_out).enumerate().for_each(|(c, p)| {
                let (r0, r1) = ((c * per).min(red), ((c + 1) * per).min(red));
                if r0 < r1 {
                    for o in 0..outer {
                        acc_range(x, red, inner, o, r0, r1, 0, &mut p[o * inner..(o + 1) * inner], rd);
                    }
                }
            })
        });
        for (j, o) in out.iter_mut().enumerate() {
            let mut a = partials[j];
            for c in 1..chunks {
                a = rd.merge(a, partials[c * n_out + j]);
            }
            *o = fin(a);
        }
        return;
    }
    // Many outputs: one task per (outer index, block of inner positions).
    let nb = inner.div_ceil(ib);
    let tasks = outer * nb;
    let min_len = (GRAIN / (ib * red).max(1)).max(1);
    let po = SendPtr(out.as_mut_ptr());
    crate::engine::install(|| {
        (0..tasks).into_par_iter().with_min_len(min_len).for_each_init(
            || vec![rd.init(); ib],
            |acc, t| {
                let (o, b) = (t / nb, t % nb);
                let i0 = b * ib;
                let w = ib.min(inner - i0);
                let acc = &mut acc[..w];
                acc.fill(rd.init());
                acc_range(x, red, inner, o, 0, red, i0, acc, rd);
                for (k, a) in acc.iter().enumerate() {
                    // SAFETY: tasks write disjoint output ranges within `out`.
                    unsafe { *po.get().add(o * inner + i0 + k) = fin(*a) };
                }
            },
        )
    });
}

fn general<T, R, U, F>(x: &[T], kept: &[(usize, usize)], red: &[(usize, usize)], out: &mut [U], rd: R, fin: F)
where
    T: Copy + Send + Sync,
    R: Reducer<T>,
    U: Copy + Send + Sync,
    F: Fn(R::A) -> U + Sync + Send + Copy,
{
    let n_red: usize = red.iter().map(|r| r.0).product();
    let (last_n, last_s) = *red.last().expect("a general plan has reduced axes");
    let outer_red = &red[..red.len() - 1];
    let one = |j: usize| {
        // Offset of output j.
        let (mut rem, mut base) = (j, 0usize);
        for &(n, s) in kept.iter().rev() {
            base += (rem % n) * s;
            rem /= n;
        }
        let mut a = rd.init();
        let mut idx: smallvec::SmallVec<[usize; 8]> = smallvec::smallvec![0usize; outer_red.len()];
        let mut r = 0usize;
        loop {
            let off: usize = base + idx.iter().zip(outer_red).map(|(i, (_, s))| i * s).sum::<usize>();
            for k in 0..last_n {
                a = rd.step(a, x[off + k * last_s], r);
                r += 1;
            }
            // Advance the odometer over the other reduced axes.
            let mut d = outer_red.len();
            loop {
                if d == 0 {
                    return fin(a);
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < outer_red[d].0 {
                    break;
                }
                idx[d] = 0;
            }
        }
    };
    if out.len() * n_red < PAR_MIN {
        for (j, o) in out.iter_mut().enumerate() {
            *o = one(j);
        }
    } else {
        let min_len = (GRAIN / n_red.max(1)).max(1);
        crate::engine::install(|| out.par_iter_mut().with_min_len(min_len).enumerate().for_each(|(j, o)| *o = one(j)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(x: &[f64], shape: &[usize], mask: &[bool]) -> Vec<f64> {
        let oshape: Vec<usize> = shape.iter().zip(mask).map(|(&d, &m)| if m { 1 } else { d }).collect();
        let mut out = vec![0.0; oshape.iter().product()];
        let st = crate::shape::strides(shape);
        let ost = crate::shape::strides(&oshape);
        for (i, v) in x.iter().enumerate() {
            let mut o = 0;
            for d in 0..shape.len() {
                let c = (i / st[d]) % shape[d];
                if !mask[d] {
                    o += c * ost[d];
                }
            }
            out[o] += v;
        }
        out
    }

    #[test]
    fn plans() {
        assert_eq!(Plan::new(&[2, 3, 4], &[false, true, true]), Plan::Block { outer: 2, red: 12, inner: 1 });
        assert_eq!(Plan::new(&[2, 1, 4], &[true, false, false]), Plan::Block { outer: 1, red: 2, inner: 4 });
        assert_eq!(Plan::new(&[2, 3, 4], &[false, true, false]), Plan::Block { outer: 2, red: 3, inner: 4 });
        assert_eq!(Plan::new(&[2, 3, 4], &[true, false, true]), Plan::General { kept: vec![(3, 4)], red: vec![(2, 12), (4, 1)] });
    }

    #[test]
    fn all_layouts_match_naive() {
        // Small and large (parallel) shapes, every mask.
        for shape in [vec![3usize, 5, 7, 2], vec![40, 3, 700, 2], vec![2, 100_000], vec![100_000, 3]] {
            let n: usize = shape.iter().product();
            let x: Vec<f64> = (0..n).map(|i| ((i * 7919) % 1000) as f64 - 500.0).collect();
            for m in 0..(1u32 << shape.len()) {
                let mask: Vec<bool> = (0..shape.len()).map(|d| m & (1 << d) != 0).collect();
                let want = naive(&x, &shape, &mask);
                let plan = Plan::new(&shape, &mask);
                let mut got = vec![0.0; want.len()];
                reduce(&x, &plan, &mut got, SumF, |a| a);
                assert_eq!(got, want, "shape {shape:?} mask {mask:?}");
            }
        }
    }

    #[test]
    fn argmax_ties_and_nan() {
        let x = [1.0f32, 5.0, 5.0, 2.0, f32::NAN, 3.0, f32::NAN];
        let mut o = [(0.0f32, 0usize)];
        reduce(&x[..4], &Plan::Block { outer: 1, red: 4, inner: 1 }, &mut o, ArgR::<true>, |a| a);
        assert_eq!(o[0].1, 1);
        reduce(&x, &Plan::Block { outer: 1, red: 7, inner: 1 }, &mut o, ArgR::<true>, |a| a);
        assert_eq!(o[0].1, 4);
        reduce(&x, &Plan::Block { outer: 1, red: 7, inner: 1 }, &mut o, ArgR::<false>, |a| a);
        assert_eq!(o[0].1, 4);
        // Ties across lanes and parallel chunks: the first position wins.
        let big = vec![7i32; 300_000];
        let mut oi = [(0i32, 0usize)];
        reduce(&big, &Plan::Block { outer: 1, red: big.len(), inner: 1 }, &mut oi, ArgR::<true>, |a| a);
        assert_eq!(oi[0].1, 0);
    }

    #[test]
    fn nrm2_is_robust() {
        let x = [1e200f64, 1e200, 3.0];
        let mut o = [0.0];
        reduce(&x, &Plan::Block { outer: 1, red: 3, inner: 1 }, &mut o, Nrm2, Nrm2::value);
        assert!((o[0] / (2f64.sqrt() * 1e200) - 1.0).abs() < 1e-15);
        let x = [3.0f64, 4.0, 0.0];
        reduce(&x, &Plan::Block { outer: 1, red: 3, inner: 1 }, &mut o, Nrm2, Nrm2::value);
        assert!((o[0] - 5.0).abs() < 1e-15);
        let x = [f64::INFINITY, 1.0, f64::INFINITY];
        reduce(&x, &Plan::Block { outer: 1, red: 3, inner: 1 }, &mut o, Nrm2, Nrm2::value);
        assert_eq!(o[0], f64::INFINITY);
        let x = [1.0, f64::NAN, f64::INFINITY];
        reduce(&x, &Plan::Block { outer: 1, red: 3, inner: 1 }, &mut o, Nrm2, Nrm2::value);
        assert!(o[0].is_nan());
    }
}
