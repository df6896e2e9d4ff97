//! Elementwise loops: unary, binary on equal shapes, binary with a scalar, and
//! broadcast binary. Each op is a zero-sized functor with a body per compute type
//! (f32 for float32/float16, f64, i64 for every integer type); the loops are generic
//! over the element type and the functor, so each instantiation compiles to a plain
//! vectorisable loop. In-place use (output = input) is allowed: the loops read an
//! element before writing the same index.
//!
//! The loops take raw pointers: compute functions hand them the blobs of an engine
//! operation, whose vars guarantee the memory is valid and not written by anyone else
//! while the loop runs.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use super::{par_for, SendPtr};
use half::f16;

/// The arithmetic type of an element type.
pub trait Compute: Copy + Send + Sync + 'static {
    fn bin<F: BinFn>(a: Self, b: Self) -> Self;
    fn un<F: UnFn>(a: Self) -> Self;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
}

/// A binary elementwise function, one body per compute type.
pub trait BinFn: Send + Sync + 'static {
    fn f32(a: f32, b: f32) -> f32;
    fn f64(a: f64, b: f64) -> f64;
    fn i64(a: i64, b: i64) -> i64;
}

/// A unary elementwise function, one body per compute type.
pub trait UnFn: Send + Sync + 'static {
    fn f32(a: f32) -> f32;
    fn f64(a: f64) -> f64;
    fn i64(a: i64) -> i64;
}

impl Compute for f32 {
    #[inline(always)]
    fn bin<F: BinFn>(a: Self, b: Self) -> Self {
        F::f32(a, b)
    }
    #[inline(always)]
    fn un<F: UnFn>(a: Self) -> Self {
        F::f32(a)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
}
impl Compute for f64 {
    #[inline(always)]
    fn bin<F: BinFn>(a: Self, b: Self) -> Self {
        F::f64(a, b)
    }
    #[inline(always)]
    fn un<F: UnFn>(a: Self) -> Self {
        F::f64(a)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
}
impl Compute for i64 {
    #[inline(always)]
    fn bin<F: BinFn>(a: Self, b: Self) -> Self {
        F::i64(a, b)
    }
    #[inline(always)]
    fn un<F: UnFn>(a: Self) -> Self {
        F::i64(a)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as i64
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
}

/// A storable element and its compute type.
pub trait Elem: Copy + Send + Sync + 'static {
    type C: Compute;
    fn ld(self) -> Self::C;
    fn st(c: Self::C) -> Self;
}

macro_rules! elem_native {
    ($t:ty) => {
        impl Elem for $t {
            type C = $t;
            #[inline(always)]
            fn ld(self) -> $t {
                self
            }
            #[inline(always)]
            fn st(c: $t) -> $t {
                c
            }
        }
    };
}
elem_native!(f32);
elem_native!(f64);
elem_native!(i64);
macro_rules! elem_int {
    ($t:ty) => {
        impl Elem for $t {
            type C = i64;
            #[inline(always)]
            fn ld(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn st(c: i64) -> $t {
                c as $t
            }
        }
    };
}
elem_int!(u8);
elem_int!(i8);
elem_int!(i32);
impl Elem for f16 {
    type C = f32;
    #[inline(always)]
    fn ld(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn st(c: f32) -> f16 {
        f16::from_f32(c)
    }
}

const GRAIN: usize = 1 << 15;

/// `o[i] = F(a[i])`.
pub fn unary<T: Elem, F: UnFn>(a: *const T, o: *mut T, n: usize) {
    let (a, o) = (SendPtr(a as *mut T), SendPtr(o));
    par_for(n, GRAIN, move |s, e| {
        let (a, o) = (a.get(), o.get());
        for i in s..e {
            // SAFETY: i < n; the engine gives this op exclusive write access to o.
            unsafe { *o.add(i) = T::st(T::C::un::<F>((*a.add(i)).ld())) };
        }
    });
}

/// `o[i] = F(a[i], b[i])`.
pub fn binary<T: Elem, F: BinFn>(a: *const T, b: *const T, o: *mut T, n: usize) {
    let (a, b, o) = (SendPtr(a as *mut T), SendPtr(b as *mut T), SendPtr(o));
    par_for(n, GRAIN, move |s, e| {
        let (a, b, o) = (a.get(), b.get(), o.get());
        for i in s..e {
            // SAFETY: i < n for all three buffers.
            unsafe { *o.add(i) = T::st(T::C::bin::<F>((*a.add(i)).ld(), (*b.add(i)).ld())) };
        }
    });
}

/// `o[i] = F(a[i], s)`, or `F(s, a[i])` when `reverse`.
pub fn scalar<T: Elem, F: BinFn>(a: *const T, s: T::C, o: *mut T, n: usize, reverse: bool) {
    let (a, o) = (SendPtr(a as *mut T), SendPtr(o));
    par_for(n, GRAIN, move |st, e| {
        let (a, o) = (a.get(), o.get());
        if reverse {
            for i in st..e {
                // SAFETY: i < n.
                unsafe { *o.add(i) = T::st(T::C::bin::<F>(s, (*a.add(i)).ld())) };
            }
        } else {
            for i in st..e {
                // SAFETY: i < n.
                unsafe { *o.add(i) = T::st(T::C::bin::<F>((*a.add(i)).ld(), s)) };
            }
        }
    });
}

/// Broadcast binary: `a` and `b` are read with element strides `sa`, `sb` (0 on
/// broadcast axes) over the output shape `oshape` (all three of the same rank).
pub fn broadcast<T: Elem, F: BinFn>(a: *const T, sa: &[usize], b: *const T, sb: &[usize], o: *mut T, oshape: &[usize]) {
    let nd = oshape.len();
    if nd == 0 {
        // SAFETY: one element each.
        unsafe { *o = T::st(T::C::bin::<F>((*a).ld(), (*b).ld())) };
        return;
    }
    let inner = oshape[nd - 1];
    let rows: usize = oshape[..nd - 1].iter().product();
    let (ia, ib) = (sa[nd - 1], sb[nd - 1]);
    let (pa, pb, po) = (SendPtr(a as *mut T), SendPtr(b as *mut T), SendPtr(o));
    let grain_rows = (GRAIN / inner.max(1)).max(1);
    par_for(rows, grain_rows, move |r0, r1| {
        let (a, b, o) = (pa.get(), pb.get(), po.get());
        for r in r0..r1 {
            // offsets of row r in a and b
            let (mut oa, mut ob, mut rem) = (0usize, 0usize, r);
            for d in (0..nd - 1).rev() {
                let i = rem % oshape[d];
                rem /= oshape[d];
                oa += i * sa[d];
                ob += i * sb[d];
            }
            // SAFETY: offsets stay inside the inputs by construction of the strides.
            unsafe {
                let (ar, br, or) = (a.add(oa), b.add(ob), o.add(r * inner));
                match (ia, ib) {
                    (1, 1) => {
                        for j in 0..inner {
                            *or.add(j) = T::st(T::C::bin::<F>((*ar.add(j)).ld(), (*br.add(j)).ld()));
                        }
                    }
                    (1, 0) => {
                        let s = (*br).ld();
                        for j in 0..inner {
                            *or.add(j) = T::st(T::C::bin::<F>((*ar.add(j)).ld(), s));
                        }
                    }
                    (0, 1) => {
                        let s = (*ar).ld();
                        for j in 0..inner {
                            *or.add(j) = T::st(T::C::bin::<F>(s, (*br.add(j)).ld()));
                        }
                    }
                    _ => {
                        for j in 0..inner {
                            *or.add(j) = T::st(T::C::bin::<F>((*ar.add(j * ia)).ld(), (*br.add(j * ib)).ld()));
                        }
                    }
                }
            }
        }
    });
}

/// Defines a binary functor: `bin_fn!(Name, |a, b| float_expr, int_expr)`.
#[macro_export]
macro_rules! bin_fn {
    ($S:ident, |$a:ident, $b:ident| $fe:expr, $ie:expr) => {
        pub struct $S;
        impl $crate::kernels::cpu::elemwise::BinFn for $S {
            #[inline(always)]
            fn f32($a: f32, $b: f32) -> f32 {
                $fe
            }
            #[inline(always)]
            fn f64($a: f64, $b: f64) -> f64 {
                $fe
            }
            #[inline(always)]
            fn i64($a: i64, $b: i64) -> i64 {
                $ie
            }
        }
    };
}

/// Defines a unary functor: `un_fn!(Name, |a| float_expr, int_expr)`.
#[macro_export]
macro_rules! un_fn {
    ($S:ident, |$a:ident| $fe:expr, $ie:expr) => {
        pub struct $S;
        impl $crate::kernels::cpu::elemwise::UnFn for $S {
            #[inline(always)]
            fn f32($a: f32) -> f32 {
                $fe
            }
            #[inline(always)]
            fn f64($a: f64) -> f64 {
                $fe
            }
            #[inline(always)]
            fn i64($a: i64) -> i64 {
                $ie
            }
        }
    };
}

/// `o[i] = v`.
pub fn fill<T: Copy + Send + Sync>(o: *mut T, v: T, n: usize) {
    let o = SendPtr(o);
    par_for(n, GRAIN, move |s, e| {
        let o = o.get();
        for i in s..e {
            // SAFETY: i < n.
            unsafe { *o.add(i) = v };
        }
    });
}

/// `o[i] = U::from(a[i])` through f64 (exact for every supported pair except
/// int64 values beyond 2^53).
pub fn cast<T: crate::dtype::Element, U: crate::dtype::Element>(a: *const T, o: *mut U, n: usize, to_bool: bool) {
    let (a, o) = (SendPtr(a as *mut T), SendPtr(o));
    par_for(n, GRAIN, move |s, e| {
        let (a, o) = (a.get(), o.get());
        for i in s..e {
            // SAFETY: i < n in both buffers.
            unsafe {
                let v = (*a.add(i)).to_f64();
                *o.add(i) = U::from_f64(if to_bool { (v != 0.0) as i32 as f64 } else { v });
            }
        }
    });
}
