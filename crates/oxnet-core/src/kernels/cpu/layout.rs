//! Data-movement kernels for the shape ops (transpose, slice, concat, tile,
//! broadcast, ...). Everything is expressed as one strided copy: a `shape`, and for
//! source and destination a base pointer plus one element stride per dimension
//! (strides may be 0 for broadcast reads or negative for reversed reads). Before
//! copying, size-1 dimensions are dropped and dimensions that are contiguous in both
//! views are merged, so most calls end up as a few long `copy_nonoverlapping` runs.
//! When the destination is contiguous along its last axis but the source is not
//! (a transpose), the copy is done in cache-sized square tiles.
//!
//! Kernels move elements by size only (1, 2, 4 or 8 bytes), never by dtype.

use super::{par_for, SendPtr};

/// Tile edge (in elements) of the blocked transpose.
const TILE: usize = 64;

/// Runs `f(start, end)` over `0..units` work units of about `unit_cost` elements
/// each, split across the pool when the total is large (see [`par_for`]).
fn par_units<F: Fn(usize, usize) + Sync + Send>(units: usize, unit_cost: usize, f: F) {
    let cost = unit_cost.max(1);
    let Some(total) = units.checked_mul(cost) else {
        // Absurd sizes: fall back to one thread rather than overflow.
        f(0, units);
        return;
    };
    // Consecutive element ranges [a, b), [b, c) map to disjoint unit ranges
    // [a / cost, b / cost), [b / cost, c / cost) that together cover 0..units.
    par_for(total, cost, move |a, b| {
        let (s, e) = (a / cost, b / cost);
        if s < e {
            f(s, e);
        }
    });
}

/// Drops size-1 dims and merges dims that are contiguous in both views. Returns
/// `None` when the shape holds no element.
fn coalesce(shape: &[usize], ss: &[isize], ds: &[isize]) -> Option<(Vec<usize>, Vec<isize>, Vec<isize>)> {
    if shape.contains(&0) {
        return None;
    }
    let mut n: Vec<usize> = Vec::with_capacity(shape.len());
    let mut s: Vec<isize> = Vec::with_capacity(shape.len());
    let mut d: Vec<isize> = Vec::with_capacity(shape.len());
    for i in 0..shape.len() {
        if shape[i] == 1 {
            continue;
        }
        if let Some(last) = n.len().checked_sub(1) {
            let len = shape[i] as isize;
            if s[last] == ss[i] * len && d[last] == ds[i] * len {
                n[last] *= shape[i];
                s[last] = ss[i];
                d[last] = ds[i];
                continue;
            }
        }
        n.push(shape[i]);
        s.push(ss[i]);
        d.push(ds[i]);
    }
    if n.is_empty() {
        n.push(1);
        s.push(1);
        d.push(1);
    }
    Some((n, s, d))
}

/// Offsets (source, destination) of the multi-index `idx` decomposed from `flat`
/// over `dims` (row-major), for the given strides.
#[inline]
fn offsets_of(mut flat: usize, dims: &[usize], ss: &[isize], ds: &[isize]) -> (isize, isize) {
    let (mut os, mut od) = (0isize, 0isize);
    for k in (0..dims.len()).rev() {
        let i = flat % dims[k];
        flat /= dims[k];
        os += i as isize * ss[k];
        od += i as isize * ds[k];
    }
    (os, od)
}

/// Copies the elements of a `shape`-d view of `src` (element strides `src_strides`)
/// into a view of `dst` (strides `dst_strides`), element by element in row-major
/// order of `shape`. Elements are `esize` bytes.
///
/// # Safety
/// Every addressed element must be inside its buffer, the destination view must not
/// address one element twice, and the two views must not overlap.
pub unsafe fn strided_copy(esize: usize, shape: &[usize], src: *const u8, src_strides: &[isize], dst: *mut u8, dst_strides: &[isize]) {
    debug_assert!(shape.len() == src_strides.len() && shape.len() == dst_strides.len());
    match esize {
        1 => copy_t::<u8>(shape, src, src_strides, dst, dst_strides),
        2 => copy_t::<u16>(shape, src as *const u16, src_strides, dst as *mut u16, dst_strides),
        4 => copy_t::<u32>(shape, src as *const u32, src_strides, dst as *mut u32, dst_strides),
        8 => copy_t::<u64>(shape, src as *const u64, src_strides, dst as *mut u64, dst_strides),
        _ => {
            // Any other element size: one more dimension over its bytes.
            let mut sh = shape.to_vec();
            let mut ss: Vec<isize> = src_strides.iter().map(|s| s * esize as isize).collect();
            let mut ds: Vec<isize> = dst_strides.iter().map(|s| s * esize as isize).collect();
            sh.push(esize);
            ss.push(1);
            ds.push(1);
            copy_t::<u8>(&sh, src, &ss, dst, &ds)
        }
    }
}

unsafe fn copy_t<T: Copy + Send + Sync>(shape: &[usize], src: *const T, ss: &[isize], dst: *mut T, ds: &[isize]) {
    let Some((n, s, d)) = coalesce(shape, ss, ds) else {
        return;
    };
    let k = n.len();
    let (inner, si, di) = (n[k - 1], s[k - 1], d[k - 1]);
    // Transpose-like: destination contiguous along the last axis, source contiguous
    // along another one. Copy in square tiles so both sides stay in cache.
    if k >= 2 && di == 1 && si != 0 && si.abs() != 1 {
        if let Some(r) = (0..k - 1).rev().find(|&r| s[r] == 1) {
            if n[r] >= 4 && inner >= 4 {
                return transpose_tiles(&n, &s, &d, r, src, dst);
            }
        }
    }
    let outer = &n[..k - 1];
    let (os, od) = (&s[..k - 1], &d[..k - 1]);
    let rows: usize = outer.iter().product();
    let (ps, pd) = (SendPtr(src as *mut T), SendPtr(dst));
    par_units(rows, inner, move |r0, r1| {
        let (src, dst) = (ps.get() as *const T, pd.get());
        let mut idx = vec![0usize; outer.len()];
        let mut rem = r0;
        for q in (0..outer.len()).rev() {
            idx[q] = rem % outer[q];
            rem /= outer[q];
        }
        let (mut so, mut dof) = offsets_of(r0, outer, os, od);
        for _ in r0..r1 {
            // SAFETY: the caller guarantees every addressed element is in bounds and
            // that the views do not overlap; distinct rows write distinct elements.
            unsafe {
                let (sp, dp) = (src.offset(so), dst.offset(dof));
                match (si, di) {
                    (1, 1) => std::ptr::copy_nonoverlapping(sp, dp, inner),
                    (0, 1) => std::slice::from_raw_parts_mut(dp, inner).fill(*sp),
                    (0, _) => {
                        let v = *sp;
                        for j in 0..inner {
                            *dp.offset(j as isize * di) = v;
                        }
                    }
                    (_, 1) => {
                        for j in 0..inner {
                            *dp.add(j) = *sp.offset(j as isize * si);
                        }
                    }
                    _ => {
                        for j in 0..inner {
                            *dp.offset(j as isize * di) = *sp.offset(j as isize * si);
                        }
                    }
                }
            }
            // Advance the row odometer.
            for q in (0..outer.len()).rev() {
                idx[q] += 1;
                so += os[q];
                dof += od[q];
                if idx[q] < outer[q] {
                    break;
                }
                so -= os[q] * outer[q] as isize;
                dof -= od[q] * outer[q] as isize;
                idx[q] = 0;
            }
        }
    });
}

/// Blocked copy for a destination contiguous along the last dim `c` and a source
/// contiguous (stride 1) along dim `r`: each work unit is one TILE x TILE tile of
/// the (r, c) plane at one index of the remaining dims.
unsafe fn transpose_tiles<T: Copy + Send + Sync>(n: &[usize], s: &[isize], d: &[isize], r: usize, src: *const T, dst: *mut T) {
    let c = n.len() - 1;
    let other: Vec<usize> = (0..c).filter(|&q| q != r).collect();
    let on: Vec<usize> = other.iter().map(|&q| n[q]).collect();
    let osrc: Vec<isize> = other.iter().map(|&q| s[q]).collect();
    let odst: Vec<isize> = other.iter().map(|&q| d[q]).collect();
    let (nr, nc) = (n[r], n[c]);
    let (sc, dr) = (s[c], d[r]);
    let (br, bc) = (nr.div_ceil(TILE), nc.div_ceil(TILE));
    let outer: usize = on.iter().product();
    let (ps, pd) = (SendPtr(src as *mut T), SendPtr(dst));
    par_units(outer * br * bc, TILE * TILE, move |u0, u1| {
        let (src, dst) = (ps.get() as *const T, pd.get());
        // Each tile goes through a small contiguous buffer: source rows are copied in
        // whole, destination rows written in whole, and the strided access stays in
        // L1 (power-of-two strides would otherwise thrash the cache sets).
        let mut buf: Vec<std::mem::MaybeUninit<T>> = Vec::with_capacity(TILE * TILE);
        // SAFETY: MaybeUninit needs no initialisation.
        unsafe { buf.set_len(TILE * TILE) };
        let tp = buf.as_mut_ptr() as *mut T;
        for u in u0..u1 {
            let tc = u % bc;
            let tr = (u / bc) % br;
            let o = u / (bc * br);
            let (so, dof) = offsets_of(o, &on, &osrc, &odst);
            let (i0, j0) = (tr * TILE, tc * TILE);
            let (h, w) = (TILE.min(nr - i0), TILE.min(nc - j0));
            let sb = so + i0 as isize + j0 as isize * sc;
            let db = dof + i0 as isize * dr + j0 as isize;
            // SAFETY: in-bounds by the caller's contract; tiles are disjoint; the
            // buffer holds TILE x TILE elements and row j of it is written before
            // it is read.
            unsafe {
                for j in 0..w {
                    std::ptr::copy_nonoverlapping(src.offset(sb + j as isize * sc), tp.add(j * TILE), h);
                }
                for i in 0..h {
                    let dp = dst.offset(db + i as isize * dr);
                    for j in 0..w {
                        *dp.add(j) = *tp.add(j * TILE + i);
                    }
                }
            }
        }
    });
}

/// Writes the `esize`-byte value `value` to every element of a `shape`-d view of
/// `dst` with element strides `dst_strides`.
///
/// # Safety
/// Every addressed element must be inside the buffer; `value` holds `esize` bytes.
pub unsafe fn strided_fill(esize: usize, shape: &[usize], dst: *mut u8, dst_strides: &[isize], value: &[u8]) {
    debug_assert!(value.len() == esize);
    match esize {
        1 => fill_t::<u8>(shape, dst, dst_strides, value[0]),
        2 => fill_t::<u16>(shape, dst as *mut u16, dst_strides, std::ptr::read_unaligned(value.as_ptr() as *const u16)),
        4 => fill_t::<u32>(shape, dst as *mut u32, dst_strides, std::ptr::read_unaligned(value.as_ptr() as *const u32)),
        8 => fill_t::<u64>(shape, dst as *mut u64, dst_strides, std::ptr::read_unaligned(value.as_ptr() as *const u64)),
        _ => {
            // Copy from the value with stride 0 over the elements and 1 over the bytes.
            let mut sh = shape.to_vec();
            let ss: Vec<isize> = vec![0; sh.len()].into_iter().chain([1]).collect();
            let mut ds: Vec<isize> = dst_strides.iter().map(|s| s * esize as isize).collect();
            sh.push(esize);
            ds.push(1);
            copy_t::<u8>(&sh, value.as_ptr(), &ss, dst, &ds)
        }
    }
}

unsafe fn fill_t<T: Copy + Send + Sync>(shape: &[usize], dst: *mut T, ds: &[isize], v: T) {
    // A stride-0 source of one element is exactly a fill.
    let zeros = vec![0isize; shape.len()];
    let one = [v];
    copy_t::<T>(shape, one.as_ptr(), &zeros, dst, ds)
}

/// Row-major element strides of `shape`, as signed values.
pub fn strides_of(shape: &[usize]) -> Vec<isize> {
    let mut s = vec![0isize; shape.len()];
    let mut acc = 1isize;
    for i in (0..shape.len()).rev() {
        s[i] = acc;
        acc *= shape[i] as isize;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: element-by-element copy by multi-index.
    fn reference(shape: &[usize], src: &[u32], ss: &[isize], sbase: isize, dst: &mut [u32], ds: &[isize], dbase: isize) {
        let total: usize = shape.iter().product();
        for f in 0..total {
            let (os, od) = offsets_of(f, shape, ss, ds);
            dst[(dbase + od) as usize] = src[(sbase + os) as usize];
        }
    }

    fn check(shape: &[usize], ss: &[isize], sbase: isize, src_len: usize, ds: &[isize], dbase: isize, dst_len: usize) {
        let src: Vec<u32> = (0..src_len as u32).collect();
        let mut want = vec![u32::MAX; dst_len];
        reference(shape, &src, ss, sbase, &mut want, ds, dbase);
        let mut got = vec![u32::MAX; dst_len];
        unsafe {
            strided_copy(4, shape, src.as_ptr().offset(sbase) as *const u8, ss, got.as_mut_ptr().offset(dbase) as *mut u8, ds);
        }
        assert_eq!(got, want, "shape {shape:?} ss {ss:?} ds {ds:?}");
    }

    #[test]
    fn transposes_match_reference() {
        // 2-D transposes of awkward sizes (partial tiles) and a 4-D permutation.
        for &(a, b) in &[(1usize, 7usize), (5, 3), (33, 65), (64, 32), (100, 37)] {
            check(&[b, a], &[1, b as isize], 0, a * b, &strides_of(&[b, a]), 0, a * b);
        }
        // (2,3,4,5) permuted by (2,0,3,1): output shape (4,2,5,3)
        let ins = strides_of(&[2, 3, 4, 5]);
        let oshape = [4, 2, 5, 3];
        check(&oshape, &[ins[2], ins[0], ins[3], ins[1]], 0, 120, &strides_of(&oshape), 0, 120);
        let ins = strides_of(&[7, 40, 50]);
        let oshape = [50, 7, 40];
        check(&oshape, &[ins[2], ins[0], ins[1]], 0, 14000, &strides_of(&oshape), 0, 14000);
    }

    #[test]
    fn negative_zero_and_scatter_strides() {
        // reversed rows, broadcast column, scatter into a wider destination
        check(&[3, 4], &[-4, 1], 8, 12, &[4, 1], 0, 12);
        check(&[3, 4], &[1, 0], 0, 3, &[4, 1], 0, 12);
        check(&[3, 4], &[4, 1], 0, 12, &[10, 2], 1, 30);
        check(&[2, 1, 3], &[3, 3, 1], 0, 6, &[3, 3, 1], 0, 6);
        check(&[0, 3], &[3, 1], 0, 0, &[3, 1], 0, 0);
    }

    #[test]
    fn large_parallel_copy() {
        // Large enough to go through the pool: transpose of 300 x 500.
        let (a, b) = (300usize, 500usize);
        check(&[b, a], &[1, b as isize], 0, a * b, &strides_of(&[b, a]), 0, a * b);
        // and a large gather with a step
        check(&[400, 250], &[1000, 2], 0, 400_000, &strides_of(&[400, 250]), 0, 100_000);
    }

    #[test]
    fn fills() {
        let mut v = vec![0u16; 12];
        unsafe { strided_fill(2, &[2, 2], v.as_mut_ptr().add(1) as *mut u8, &[4, 2], &7u16.to_ne_bytes()) };
        assert_eq!(v, [0, 7, 0, 7, 0, 7, 0, 7, 0, 0, 0, 0]);
    }
}
