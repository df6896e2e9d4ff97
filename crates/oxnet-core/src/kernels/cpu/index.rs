//! Gathers and scatters: copying rows (blocks of contiguous bytes) by index
//! (`take`, `gather_nd`, `scatter_nd`), picking one element per line (`pick`),
//! selecting between two arrays (`where`) and one-hot encoding.

use super::reduce::Num;
use super::{par_for, SendPtr};

const GRAIN: usize = 1 << 15;

/// The values of an index array as integers (floats truncate toward zero).
pub fn to_i64_vec<T: Num>(x: &[T]) -> Vec<i64> {
    x.iter().map(|v| v.to_i64()).collect()
}

/// `out` row `k` = `data` row `rows[k]`, rows being `row_bytes` long.
pub fn gather_rows(data: &[u8], row_bytes: usize, rows: &[usize], out: &mut [u8]) {
    debug_assert_eq!(out.len(), rows.len() * row_bytes);
    if row_bytes == 0 {
        return;
    }
    let (d, o) = (SendPtr(data.as_ptr() as *mut u8), SendPtr(out.as_mut_ptr()));
    let grain = (GRAIN / row_bytes).max(1);
    par_for(rows.len(), grain, move |s, e| {
        let (d, o) = (d.get(), o.get());
        for (k, &r) in rows[s..e].iter().enumerate() {
            // SAFETY: every source row is inside `data` (checked by the callers' index
            // resolution) and each output row is written once.
            unsafe { std::ptr::copy_nonoverlapping(d.add(r * row_bytes), o.add((s + k) * row_bytes), row_bytes) };
        }
    });
}

/// `out` row `rows[k]` = `src` row `k`, in order (on duplicates the last one wins).
pub fn scatter_rows(src: &[u8], row_bytes: usize, rows: &[usize], out: &mut [u8]) {
    debug_assert_eq!(src.len(), rows.len() * row_bytes);
    for (k, &r) in rows.iter().enumerate() {
        out[r * row_bytes..(r + 1) * row_bytes].copy_from_slice(&src[k * row_bytes..(k + 1) * row_bytes]);
    }
}

/// `out[o, i] = x[o, idx[o, i], i]` over `x` of shape `(outer, n, inner)`.
pub fn pick<T: Copy + Send + Sync>(x: &[T], n: usize, inner: usize, idx: &[usize], out: &mut [T]) {
    debug_assert_eq!(out.len(), idx.len());
    let (px, po) = (SendPtr(x.as_ptr() as *mut T), SendPtr(out.as_mut_ptr()));
    par_for(out.len(), GRAIN, move |s, e| {
        let (px, po) = (px.get(), po.get());
        for (j, &k) in idx.iter().enumerate().take(e).skip(s) {
            let (o, i) = (j / inner, j % inner);
            // SAFETY: k < n (resolved by the caller), so the source is inside x.
            unsafe { *po.add(j) = *px.add((o * n + k) * inner + i) };
        }
    });
}

/// `out[j] = if cond[j / group] { x[j] } else { y[j] }`.
pub fn select<T: Copy + Send + Sync>(cond: &[bool], group: usize, x: &[T], y: &[T], out: &mut [T]) {
    let (px, py, po) = (SendPtr(x.as_ptr() as *mut T), SendPtr(y.as_ptr() as *mut T), SendPtr(out.as_mut_ptr()));
    let n = out.len();
    par_for(n, GRAIN, move |s, e| {
        let (px, py, po) = (px.get(), py.get(), po.get());
        for j in s..e {
            // SAFETY: j < n for all three arrays; j / group < cond.len().
            unsafe { *po.add(j) = if cond[j / group] { *px.add(j) } else { *py.add(j) } };
        }
    });
}

/// One-hot rows: `out[k, :] = off` except `out[k, idx[k]] = on` when `idx[k]` is in
/// `[0, depth)`.
pub fn one_hot<U: Copy + Send + Sync>(idx: &[i64], depth: usize, on: U, off: U, out: &mut [U]) {
    debug_assert_eq!(out.len(), idx.len() * depth);
    out.fill(off);
    if depth == 0 {
        return;
    }
    for (row, &k) in out.chunks_exact_mut(depth).zip(idx) {
        if k >= 0 && (k as usize) < depth {
            row[k as usize] = on;
        }
    }
}
