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
impl Elem for half::bf16 {
    type C = f32;
    #[inline(always)]
    fn ld(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn st(c: f32) -> half::bf16 {
        half::bf16::from_f32(c)
    }
}

const GRAIN: usize = 1 << 15;

/// Outputs of at least this many bytes are written with non-temporal stores: the
/// result goes straight to memory without first reading the destination lines into
/// cache, which saves a quarter of the memory traffic of `c = a + b`.
const STREAM_MIN_BYTES: usize = 1 << 22;
/// Elements are computed into an L1-sized buffer of this many bytes, then streamed.
const BLOCK_BYTES: usize = 4096;

/// Copies `bytes` (a multiple of 16) from `src` to the 16-byte aligned `dst` with
/// non-temporal stores.
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe fn stream_copy(dst: *mut u8, src: *const u8, bytes: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    let mut i = 0;
    while i < bytes {
        _mm_stream_si128(dst.add(i) as *mut __m128i, _mm_loadu_si128(src.add(i) as *const __m128i));
        i += 16;
    }
}

/// Writes `o[0..n]` through `body(start, len, dst)`, which must compute elements
/// `start..start+len` into `dst[0..len]`. Splits the work across the pool; large
/// outputs are computed block by block into a cache-resident buffer and streamed
/// to memory.
pub fn for_output<T: Copy + Send + Sync, B: Fn(usize, usize, *mut T) + Sync + Send>(o: *mut T, n: usize, body: B) {
    let size = std::mem::size_of::<T>();
    let o = SendPtr(o);
    #[cfg(target_arch = "x86_64")]
    if n * size >= STREAM_MIN_BYTES && size <= 16 && BLOCK_BYTES % size == 0 {
        let block = BLOCK_BYTES / size;
        par_for(n, GRAIN, |s, e| {
            let o = o.get();
            // head: up to the first 64-byte aligned output element
            let mut i = s;
            while i < e && (o.wrapping_add(i) as usize) % 64 != 0 {
                i += 1;
            }
            if (o.wrapping_add(i) as usize) % 64 != 0 {
                body(s, e - s, o.wrapping_add(s));
                return;
            }
            if i > s {
                body(s, i - s, o.wrapping_add(s));
            }
            let mut buf = [0u128; BLOCK_BYTES / 16];
            let bp = buf.as_mut_ptr() as *mut T;
            while i + block <= e {
                body(i, block, bp);
                // SAFETY: o+i is 64-byte aligned; the block is BLOCK_BYTES long, inside o.
                unsafe { stream_copy(o.add(i) as *mut u8, bp as *const u8, BLOCK_BYTES) };
                i += block;
            }
            if i < e {
                body(i, e - i, o.wrapping_add(i));
            }
            // SAFETY: orders the streamed stores before the op is marked complete.
            unsafe { std::arch::x86_64::_mm_sfence() };
        });
        return;
    }
    par_for(n, GRAIN, move |s, e| body(s, e - s, o.get().wrapping_add(s)));
}

/// `o[i] = F(a[i])`.
pub fn unary<T: Elem, F: UnFn>(a: *const T, o: *mut T, n: usize) {
    let a = SendPtr(a as *mut T);
    for_output(o, n, move |s, len, dst| {
        let a = a.get();
        for j in 0..len {
            // SAFETY: s + j < n; dst has len elements.
            unsafe { *dst.add(j) = T::st(T::C::un::<F>((*a.add(s + j)).ld())) };
        }
    });
}

/// `o[i] = F(a[i], b[i])`.
pub fn binary<T: Elem, F: BinFn>(a: *const T, b: *const T, o: *mut T, n: usize) {
    let (a, b) = (SendPtr(a as *mut T), SendPtr(b as *mut T));
    for_output(o, n, move |s, len, dst| {
        // SAFETY: s + len <= n for both inputs; dst has len elements.
        unsafe {
            let (a, b) = (a.get().add(s), b.get().add(s));
            for j in 0..len {
                *dst.add(j) = T::st(T::C::bin::<F>((*a.add(j)).ld(), (*b.add(j)).ld()));
            }
        }
    });
}

/// `o[i] = F(a[i], s)`, or `F(s, a[i])` when `reverse`.
pub fn scalar<T: Elem, F: BinFn>(a: *const T, s: T::C, o: *mut T, n: usize, reverse: bool) {
    let a = SendPtr(a as *mut T);
    for_output(o, n, move |st, len, dst| {
        // SAFETY: st + len <= n; dst has len elements.
        unsafe {
            let a = a.get().add(st);
            if reverse {
                for j in 0..len {
                    *dst.add(j) = T::st(T::C::bin::<F>(s, (*a.add(j)).ld()));
                }
            } else {
                for j in 0..len {
                    *dst.add(j) = T::st(T::C::bin::<F>((*a.add(j)).ld(), s));
                }
            }
        }
    });
}

crate::bin_fn!(SumAdd, |a, b| a + b, a.wrapping_add(b));

/// Sources summed per pass when there are more than four: the partial sums stay in
/// a stack buffer of this many compute-type elements.
const SUM_CHUNK: usize = 256;

/// `dst[j] = srcs[0][start + j] + srcs[1][start + j] + ...` for `j < len`, added
/// left to right in the compute type (float16 sums in float32, integers wrap) and
/// rounded once. The block body of [`sum`], also used by the kvstore to sum pushed
/// gradients block by block straight into an optimizer update.
///
/// # Safety
/// Every source holds at least `start + len` elements; `dst` holds `len` and does
/// not overlap a source.
#[inline]
pub unsafe fn sum_block<T: Elem>(srcs: &[SendPtr<T>], start: usize, len: usize, dst: *mut T) {
    let src = |i: usize| std::slice::from_raw_parts(srcs[i].get().add(start) as *const T, len);
    let out = std::slice::from_raw_parts_mut(dst, len);
    let add = |a: T::C, b: T| T::C::bin::<SumAdd>(a, b.ld());
    match srcs.len() {
        0 => {}
        1 => out.copy_from_slice(src(0)),
        2 => {
            for ((o, a), b) in out.iter_mut().zip(src(0)).zip(src(1)) {
                *o = T::st(add(a.ld(), *b));
            }
        }
        3 => {
            for (((o, a), b), c) in out.iter_mut().zip(src(0)).zip(src(1)).zip(src(2)) {
                *o = T::st(add(add(a.ld(), *b), *c));
            }
        }
        4 => {
            for ((((o, a), b), c), d) in out.iter_mut().zip(src(0)).zip(src(1)).zip(src(2)).zip(src(3)) {
                *o = T::st(add(add(add(a.ld(), *b), *c), *d));
            }
        }
        k => {
            let mut acc = [T::C::from_f64(0.0); SUM_CHUNK];
            let mut c0 = 0;
            while c0 < len {
                let m = SUM_CHUNK.min(len - c0);
                for (a, x) in acc[..m].iter_mut().zip(&src(0)[c0..c0 + m]) {
                    *a = x.ld();
                }
                for i in 1..k {
                    for (a, x) in acc[..m].iter_mut().zip(&src(i)[c0..c0 + m]) {
                        *a = add(*a, *x);
                    }
                }
                for (o, a) in out[c0..c0 + m].iter_mut().zip(&acc[..m]) {
                    *o = T::st(*a);
                }
                c0 += m;
            }
        }
    }
}

/// `o = srcs[0] + srcs[1] + ...` over `n` elements (see [`sum_block`]); one pass
/// that reads every source once and streams large results to memory.
pub fn sum<T: Elem>(srcs: &[*const T], o: *mut T, n: usize) {
    let ptrs: smallvec::SmallVec<[SendPtr<T>; 4]> = srcs.iter().map(|&p| SendPtr(p as *mut T)).collect();
    let ptrs = &ptrs;
    // SAFETY: the caller's sources hold n elements; for_output hands out disjoint
    // blocks of o (or a block buffer), and no source is o.
    for_output(o, n, move |s, len, dst| unsafe { sum_block(ptrs, s, len, dst) });
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

/// `v` converted to an integer type as C's casts do (MXNet's `Cast`): truncated
/// toward zero, then wrapped modulo the type's range (-5 -> 251 as uint8).
fn wrap_to_int(v: f64, to: crate::dtype::DType) -> f64 {
    use crate::dtype::DType;
    let i = v as i64;
    match to {
        DType::U8 => i as u8 as f64,
        DType::I8 => i as i8 as f64,
        DType::I32 => i as i32 as f64,
        _ => i as f64,
    }
}

/// `o[i] = U::from(a[i])` through f64 (exact for every supported pair except
/// int64 values beyond 2^53); integer targets wrap as C's casts do.
pub fn cast<T: crate::dtype::Element, U: crate::dtype::Element>(a: *const T, o: *mut U, n: usize, to_bool: bool) {
    use crate::dtype::DType;
    let wrap = matches!(U::DTYPE, DType::U8 | DType::I8 | DType::I32 | DType::I64) && !to_bool;
    let (a, o) = (SendPtr(a as *mut T), SendPtr(o));
    par_for(n, GRAIN, move |s, e| {
        let (a, o) = (a.get(), o.get());
        for i in s..e {
            // SAFETY: i < n in both buffers.
            unsafe {
                let v = (*a.add(i)).to_f64();
                let v = if to_bool {
                    (v != 0.0) as i32 as f64
                } else if wrap {
                    wrap_to_int(v, U::DTYPE)
                } else {
                    v
                };
                *o.add(i) = U::from_f64(v);
            }
        }
    });
}
