//! The store's host kernels: the sum of the arrays pushed for a key (the n-ary sum
//! of the elementwise kernels, optionally through MXNet's 2-bit gradient
//! compression with per-source residuals), the sum fused into an optimizer update,
//! and the copy of the stored value into every pulled array. All walk the data in
//! blocks that stay in cache: the sum reads each source once and streams the
//! result; the fused update sums a block of gradient into a cache-resident buffer
//! and runs the update op on that block; the broadcast reads the stored value once
//! per block and writes it to every destination with non-temporal stores.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use crate::context::Context;
use crate::dtype::DType;
use crate::error::{Error, Result};
#[cfg(target_arch = "x86_64")]
use crate::kernels::cpu::elemwise::stream_copy;
use crate::kernels::cpu::elemwise::{self, sum_block, Elem};
use crate::kernels::cpu::{par_for, SendPtr};
use crate::op::{Blob, OpCall, OpDef, Params};
use crate::shape::Shape;
use half::f16;
use parking_lot::Mutex;
use smallvec::SmallVec;

fn sum_typed<T: Elem>(dst: &Blob, srcs: &[Blob]) {
    let ptrs: SmallVec<[*const T; 4]> = srcs.iter().map(|b| b.ptr_as::<T>() as *const T).collect();
    elemwise::sum(&ptrs, dst.ptr_as::<T>(), dst.size());
}

/// `dst = srcs[0] + srcs[1] + ...` (left to right), elementwise. Every blob has
/// `dst`'s size and dtype; at least one source; no source overlaps `dst`.
pub fn sum(dst: &Blob, srcs: &[Blob]) -> Result<()> {
    if srcs.is_empty() {
        return Err(Error::new("kvstore: nothing to sum"));
    }
    match dst.dtype {
        DType::F32 => sum_typed::<f32>(dst, srcs),
        DType::F64 => sum_typed::<f64>(dst, srcs),
        DType::F16 => sum_typed::<f16>(dst, srcs),
        DType::BF16 => sum_typed::<half::bf16>(dst, srcs),
        DType::U8 | DType::Bool => sum_typed::<u8>(dst, srcs),
        DType::I8 => sum_typed::<i8>(dst, srcs),
        DType::I32 => sum_typed::<i32>(dst, srcs),
        DType::I64 => sum_typed::<i64>(dst, srcs),
    }
    Ok(())
}

/// Bytes of summed gradient per block of a fused update: with the blocks of the
/// sources, the weight and the states it stays in L2.
const UPDATE_BLOCK_BYTES: usize = 32 << 10;

/// Elements `start..start + len` of `b` as a 1-D blob.
fn sub(b: &Blob, start: usize, len: usize) -> Blob {
    // SAFETY (of the pointer arithmetic): start + len <= b.size().
    Blob { ptr: b.ptr.wrapping_add(start * b.dtype.size()), shape: Shape::from_slice(&[len]), dtype: b.dtype }
}

fn fused_typed<T: Elem>(
    op: &'static OpDef,
    params: &Params,
    ctx: Context,
    weight: &Blob,
    out: &Blob,
    srcs: &[Blob],
    states: &[Blob],
) -> Result<()> {
    let n = weight.size();
    let block = UPDATE_BLOCK_BYTES / std::mem::size_of::<T>();
    let ptrs: SmallVec<[SendPtr<T>; 4]> = srcs.iter().map(|b| SendPtr(b.ptr_as::<T>())).collect();
    let failed: Mutex<Option<Error>> = Mutex::new(None);
    par_for(n, block, |s, e| {
        let mut buf = [0u128; UPDATE_BLOCK_BYTES / 16];
        let bp = buf.as_mut_ptr() as *mut T;
        let mut ins: SmallVec<[Blob; 6]> = SmallVec::new();
        let mut i = s;
        while i < e {
            let len = block.min(e - i);
            let grad = if ptrs.len() == 1 {
                sub(&srcs[0], i, len)
            } else {
                // SAFETY: every source holds n elements; buf holds `block` >= len.
                unsafe { sum_block(&ptrs, i, len, bp) };
                Blob { ptr: bp as *mut u8, shape: Shape::from_slice(&[len]), dtype: weight.dtype }
            };
            ins.clear();
            ins.push(sub(weight, i, len));
            ins.push(grad);
            // states of the weight's size are elementwise; others (scalars) whole
            ins.extend(states.iter().map(|st| if st.size() == n { sub(st, i, len) } else { st.clone() }));
            let outs = [sub(out, i, len)];
            let mut call = OpCall { op, params, inputs: &ins, outputs: &outs, ctx, rng: None, is_train: false };
            if let Err(err) = (op.cpu)(&mut call) {
                failed.lock().get_or_insert(err);
                return;
            }
            i += len;
        }
    });
    failed.into_inner().map_or(Ok(()), Err)
}

/// Runs the elementwise update `op(weight, grad, states...) -> out` with `grad` the
/// sum of `srcs`, block by block: each block of the sum is computed into a buffer
/// that stays in cache and handed straight to the op, so the sources, the weight
/// and the states are each read once and no merged array is written. `out` may be
/// `weight` (in place); the sizes of `weight`, `out` and `srcs` agree.
pub fn fused_update(
    op: &'static OpDef,
    params: &Params,
    ctx: Context,
    weight: &Blob,
    out: &Blob,
    srcs: &[Blob],
    states: &[Blob],
) -> Result<()> {
    if srcs.is_empty() {
        return Err(Error::op(op.name, "kvstore: nothing to sum"));
    }
    match weight.dtype {
        DType::F32 => fused_typed::<f32>(op, params, ctx, weight, out, srcs, states),
        DType::F64 => fused_typed::<f64>(op, params, ctx, weight, out, srcs, states),
        DType::F16 => fused_typed::<f16>(op, params, ctx, weight, out, srcs, states),
        DType::BF16 => fused_typed::<half::bf16>(op, params, ctx, weight, out, srcs, states),
        d => Err(Error::op(op.name, format!("weight dtype {} is not supported (float16, float32 or float64)", d.name()))),
    }
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
    let threads = crate::engine::threads().max(1);
    let work = bytes * dsts.len();
    if threads == 1 || blocks < 2 || work < (1 << 20) {
        run(0, blocks);
        return;
    }
    let chunks = (threads * 4).min(blocks);
    let per = blocks.div_ceil(chunks);
    let run = &run;
    crate::engine::install(|| {
        rayon::scope(|sc| {
            for c in 0..chunks {
                let (a, b) = (c * per, ((c + 1) * per).min(blocks));
                if a < b {
                    sc.spawn(move |_| run(a, b));
                }
            }
        })
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
