//! The store's host kernels: the sum of the arrays pushed for a key (optionally
//! through MXNet's 2-bit gradient compression with per-source residuals) and the
//! copy of the stored value into every pulled array. Both walk the data in blocks
//! that stay in cache: the sum reads each source once and streams the result; the
//! broadcast reads the stored value once per block and writes it to every
//! destination with non-temporal stores.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::cpu::{elemwise::for_output, par_for, SendPtr};
use crate::op::Blob;
use half::f16;

/// An element that can be summed (integers wrap, float16 sums in float32).
trait Sum: Copy + Send + Sync + 'static {
    type A: Copy;
    fn ld(self) -> Self::A;
    fn add(a: Self::A, b: Self) -> Self::A;
    fn st(a: Self::A) -> Self;
}
macro_rules! sum_float {
    ($t:ty) => {
        impl Sum for $t {
            type A = $t;
            #[inline(always)]
            fn ld(self) -> $t {
                self
            }
            #[inline(always)]
            fn add(a: $t, b: $t) -> $t {
                a + b
            }
            #[inline(always)]
            fn st(a: $t) -> $t {
                a
            }
        }
    };
}
macro_rules! sum_int {
    ($t:ty) => {
        impl Sum for $t {
            type A = $t;
            #[inline(always)]
            fn ld(self) -> $t {
                self
            }
            #[inline(always)]
            fn add(a: $t, b: $t) -> $t {
                a.wrapping_add(b)
            }
            #[inline(always)]
            fn st(a: $t) -> $t {
                a
            }
        }
    };
}
sum_float!(f32);
sum_float!(f64);
sum_int!(u8);
sum_int!(i8);
sum_int!(i32);
sum_int!(i64);
impl Sum for f16 {
    type A = f32;
    #[inline(always)]
    fn ld(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn add(a: f32, b: f16) -> f32 {
        a + b.to_f32()
    }
    #[inline(always)]
    fn st(a: f32) -> f16 {
        f16::from_f32(a)
    }
}

fn sum_typed<T: Sum>(dst: &Blob, srcs: &[Blob]) {
    let ptrs: Vec<SendPtr<T>> = srcs.iter().map(|b| SendPtr(b.ptr_as::<T>())).collect();
    let ptrs = &ptrs;
    for_output(dst.ptr_as::<T>(), dst.size(), move |start, len, out| {
        // SAFETY: every source holds dst.size() elements and is only read; `out` is
        // this block's own buffer (or its slice of dst, which no source overlaps:
        // the store never sums an array into itself).
        let src = |i: usize| unsafe { std::slice::from_raw_parts(ptrs[i].get().add(start) as *const T, len) };
        let out = unsafe { std::slice::from_raw_parts_mut(out, len) };
        match ptrs.len() {
            1 => out.copy_from_slice(src(0)),
            2 => {
                for ((o, a), b) in out.iter_mut().zip(src(0)).zip(src(1)) {
                    *o = T::st(T::add(a.ld(), *b));
                }
            }
            3 => {
                for (((o, a), b), c) in out.iter_mut().zip(src(0)).zip(src(1)).zip(src(2)) {
                    *o = T::st(T::add(T::add(a.ld(), *b), *c));
                }
            }
            4 => {
                for ((((o, a), b), c), d) in out.iter_mut().zip(src(0)).zip(src(1)).zip(src(2)).zip(src(3)) {
                    *o = T::st(T::add(T::add(T::add(a.ld(), *b), *c), *d));
                }
            }
            k => {
                // pairs of sources at a time, accumulating in the compute type
                let mut acc: Vec<T::A> = src(0).iter().map(|a| a.ld()).collect();
                for i in 1..k {
                    for (a, b) in acc.iter_mut().zip(src(i)) {
                        *a = T::add(*a, *b);
                    }
                }
                for (o, a) in out.iter_mut().zip(acc) {
                    *o = T::st(a);
                }
            }
        }
    });
}

/// `dst = srcs[0] + srcs[1] + ...` (left to right), elementwise. Every blob has
/// `dst`'s size and dtype; at least one source.
pub fn sum(dst: &Blob, srcs: &[Blob]) -> Result<()> {
    if srcs.is_empty() {
        return Err(Error::new("kvstore: nothing to sum"));
    }
    match dst.dtype {
        DType::F32 => sum_typed::<f32>(dst, srcs),
        DType::F64 => sum_typed::<f64>(dst, srcs),
        DType::F16 => sum_typed::<f16>(dst, srcs),
        DType::U8 | DType::Bool => sum_typed::<u8>(dst, srcs),
        DType::I8 => sum_typed::<i8>(dst, srcs),
        DType::I32 => sum_typed::<i32>(dst, srcs),
        DType::I64 => sum_typed::<i64>(dst, srcs),
    }
    Ok(())
}

/// MXNet's 2-bit compression, summed: for each source `i`, `res_i += src_i`, the
/// quantised value `q_i` is `+threshold` where `res_i >= threshold`, `-threshold`
/// where `res_i <= -threshold`, else 0; `res_i -= q_i`; `dst = sum_i q_i`.
/// float32 only.
pub fn sum_2bit(dst: &Blob, srcs: &[Blob], residuals: &[Blob], threshold: f32) {
    let s: Vec<SendPtr<f32>> = srcs.iter().map(|b| SendPtr(b.ptr_as::<f32>())).collect();
    let r: Vec<SendPtr<f32>> = residuals.iter().map(|b| SendPtr(b.ptr_as::<f32>())).collect();
    let o = SendPtr(dst.ptr_as::<f32>());
    let (s, r) = (&s, &r);
    par_for(dst.size(), 1 << 14, move |a, b| {
        for j in a..b {
            let mut acc = 0.0f32;
            for (sp, rp) in s.iter().zip(r.iter()) {
                // SAFETY: every blob holds dst.size() elements; this worker owns j.
                unsafe {
                    let res = rp.get().add(j);
                    let v = *res + *sp.get().add(j);
                    let q = if v >= threshold {
                        threshold
                    } else if v <= -threshold {
                        -threshold
                    } else {
                        0.0
                    };
                    *res = v - q;
                    acc += q;
                }
            }
            // SAFETY: as above.
            unsafe { *o.get().add(j) = acc };
        }
    });
}

/// Copies `bytes` (a multiple of 16) from `src` to the 16-byte aligned `dst` with
/// non-temporal stores.
#[cfg(target_arch = "x86_64")]
unsafe fn stream_copy(dst: *mut u8, src: *const u8, bytes: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    let mut i = 0;
    while i < bytes {
        _mm_stream_si128(dst.add(i) as *mut __m128i, _mm_loadu_si128(src.add(i) as *const __m128i));
        i += 16;
    }
}

/// Copies `n` bytes, streaming the aligned middle when the copy is large.
unsafe fn copy_bytes(dst: *mut u8, src: *const u8, n: usize, stream: bool) {
    #[cfg(target_arch = "x86_64")]
    if stream {
        let head = (16 - (dst as usize) % 16) % 16;
        if head < n {
            std::ptr::copy_nonoverlapping(src, dst, head);
            let mid = (n - head) / 16 * 16;
            stream_copy(dst.add(head), src.add(head), mid);
            let done = head + mid;
            std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), n - done);
            return;
        }
    }
    let _ = stream;
    std::ptr::copy_nonoverlapping(src, dst, n);
}

/// Bytes of the stored value copied to every destination before moving on: small
/// enough to stay in L2 while it is written out several times.
const BCAST_BLOCK: usize = 64 << 10;
/// Copies of at least this many bytes use non-temporal stores.
const STREAM_MIN: usize = 1 << 20;

/// Writes `src` into every blob of `dsts` (same byte size).
pub fn broadcast(src: &Blob, dsts: &[Blob]) {
    let bytes = src.size() * src.dtype.size();
    let s = SendPtr(src.ptr);
    let d: Vec<SendPtr<u8>> = dsts.iter().map(|b| SendPtr(b.ptr)).collect();
    let d = &d;
    let stream = bytes >= STREAM_MIN;
    let blocks = bytes.div_ceil(BCAST_BLOCK);
    let run = move |a: usize, b: usize| {
        for blk in a..b {
            let off = blk * BCAST_BLOCK;
            let n = BCAST_BLOCK.min(bytes - off);
            for p in d.iter() {
                // SAFETY: every destination has `bytes` bytes; blocks are disjoint.
                unsafe { copy_bytes(p.get().add(off), s.get().add(off), n, stream) };
            }
        }
        #[cfg(target_arch = "x86_64")]
        if stream {
            // SAFETY: orders the streamed stores before the op completes.
            unsafe { std::arch::x86_64::_mm_sfence() };
        }
    };
    // Split the blocks across the pool (par_for counts elements, not blocks).
    let threads = rayon::current_num_threads().max(1);
    let work = bytes * dsts.len();
    if threads == 1 || blocks < 2 || work < (1 << 20) {
        run(0, blocks);
        return;
    }
    let chunks = (threads * 4).min(blocks);
    let per = blocks.div_ceil(chunks);
    let run = &run;
    rayon::scope(|sc| {
        for c in 0..chunks {
            let (a, b) = (c * per, ((c + 1) * per).min(blocks));
            if a < b {
                sc.spawn(move |_| run(a, b));
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Shape;

    fn blob(v: &mut [f32]) -> Blob {
        Blob { ptr: v.as_mut_ptr() as *mut u8, shape: Shape::from_slice(&[v.len()]), dtype: DType::F32 }
    }

    #[test]
    fn sums_and_broadcasts_any_count() {
        for k in 1..6 {
            let n = 300_000;
            let mut srcs: Vec<Vec<f32>> = (0..k).map(|i| (0..n).map(|j| (j % 7) as f32 + i as f32).collect()).collect();
            let mut dst = vec![0f32; n];
            let sb: Vec<Blob> = srcs.iter_mut().map(|v| blob(v)).collect();
            sum(&blob(&mut dst), &sb).unwrap();
            for j in (0..n).step_by(997) {
                let want: f32 = (0..k).map(|i| (j % 7) as f32 + i as f32).sum();
                assert_eq!(dst[j], want);
            }
            let mut outs: Vec<Vec<f32>> = (0..k).map(|_| vec![0f32; n]).collect();
            let ob: Vec<Blob> = outs.iter_mut().map(|v| blob(v)).collect();
            broadcast(&blob(&mut dst), &ob);
            for o in &outs {
                assert_eq!(o, &dst);
            }
        }
    }

    #[test]
    fn two_bit_keeps_residuals() {
        let mut g1 = vec![0.3f32, 0.6, -0.7, 2.0];
        let mut g2 = g1.clone();
        let (mut r1, mut r2) = (vec![0f32; 4], vec![0f32; 4]);
        let mut out = vec![0f32; 4];
        for want in [[0.0, 1.0, -1.0, 1.0], [1.0, 1.0, -1.0, 1.0]] {
            sum_2bit(&blob(&mut out), &[blob(&mut g1), blob(&mut g2)], &[blob(&mut r1), blob(&mut r2)], 0.5);
            assert_eq!(out, want);
        }
    }
}
