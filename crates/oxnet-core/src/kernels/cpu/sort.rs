//! Sorting along one axis of a row-major array seen as `(outer, n, inner)`: the
//! positions of the `k` first elements of each line in the requested order.
//!
//! The order is total: ties keep their original order (stable, in both directions)
//! and NaN sorts above every number (last ascending, first descending), as NumPy.

use super::reduce::Num;
use rayon::prelude::*;
use std::cmp::Ordering;

/// Ascending total order with NaN largest.
#[inline(always)]
pub fn total_cmp<T: Num>(a: T, b: T) -> Ordering {
    match a.partial_cmp(&b) {
        Some(o) => o,
        None => a.is_nan().cmp(&b.is_nan()),
    }
}

const GRAIN: usize = 1 << 14;

/// For every line `(o, i)` (in `o * inner + i` order), the positions along the axis
/// of its first `k` elements in ascending (or descending) order.
pub fn top_positions<T: Num>(x: &[T], outer: usize, n: usize, inner: usize, k: usize, ascend: bool) -> Vec<usize> {
    debug_assert!(k <= n);
    let lines = outer * inner;
    let mut perm = vec![0usize; lines * k];
    if k == 0 || lines == 0 {
        return perm;
    }
    let line = |(l, dst): (usize, &mut [usize]), keys: &mut Vec<T>, pos: &mut Vec<usize>| {
        let (o, i) = (l / inner, l % inner);
        keys.clear();
        keys.extend((0..n).map(|r| x[(o * n + r) * inner + i]));
        pos.clear();
        pos.extend(0..n);
        let cmp = |a: &usize, b: &usize| {
            let c = if ascend { total_cmp(keys[*a], keys[*b]) } else { total_cmp(keys[*b], keys[*a]) };
            c.then(a.cmp(b))
        };
        if k < n {
            pos.select_nth_unstable_by(k - 1, cmp);
            pos.truncate(k);
        }
        pos.sort_unstable_by(cmp);
        dst.copy_from_slice(&pos[..k]);
    };
    if lines * n < GRAIN {
        let (mut keys, mut pos) = (Vec::new(), Vec::new());
        for item in perm.chunks_mut(k).enumerate() {
            line(item, &mut keys, &mut pos);
        }
    } else {
        let min_len = (GRAIN / n.max(1)).max(1);
        crate::engine::install(|| {
            perm.par_chunks_mut(k)
                .enumerate()
                .with_min_len(min_len)
                .for_each_init(|| (Vec::with_capacity(n), Vec::with_capacity(n)), |(keys, pos), item| line(item, keys, pos))
        });
    }
    perm
}
