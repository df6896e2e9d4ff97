//! The host pool: 64-byte aligned blocks, recycled by size class. A program that
//! allocates and frees arrays of the same sizes touches the OS allocator only in its
//! first round; later rounds reuse warm, already-faulted pages.

use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::alloc::{dealloc, Layout};
use std::ptr::NonNull;

const ALIGN: usize = 64;

/// Counters of the host pool, for tests and diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Blocks obtained from the OS allocator.
    pub os_allocs: u64,
    /// Blocks handed out again from the pool.
    pub reuses: u64,
    /// Bytes currently handed out to arrays.
    pub in_use_bytes: u64,
    /// Bytes held in the pool's free lists.
    pub cached_bytes: u64,
}

struct Pool {
    /// Free blocks per size class: (class size, pointers).
    free: Vec<(usize, Vec<usize>)>,
    stats: PoolStats,
    /// The most bytes ever handed out at once.
    peak: u64,
}

/// Bytes the pool may always keep cached (see [`keeps`]).
const CACHE_FLOOR: u64 = 1 << 30;

/// Whether a freed block of `class` bytes goes to the free lists (else back to the
/// OS): while the cache stays within the program's peak of bytes in use, or 1 GiB.
/// A loop that reuses its arrays keeps all of them (its cache never exceeds what it
/// had in use); a program that frees ever new sizes (variable-length batches, or the
/// op fuzzer's every-op-every-shape run, whose worker was killed for memory at 8.8
/// GB of cached blocks) no longer grows without bound.
fn keeps(cached: u64, class: u64, peak: u64) -> bool {
    cached + class <= peak.max(CACHE_FLOOR)
}

impl Pool {
    fn list(&mut self, class: usize) -> &mut Vec<usize> {
        let i = class_index(class);
        if self.free.len() <= i {
            self.free.resize_with(i + 1, || (0, Vec::new()));
        }
        self.free[i].0 = class;
        &mut self.free[i].1
    }
}

/// A dense index for each size class.
fn class_index(class: usize) -> usize {
    let log = class.trailing_zeros().max(usize::BITS - 1 - class.leading_zeros()) as usize;
    if class <= 1 << 16 {
        return log;
    }
    // classes above 64 KiB: 16 steps per power of two
    let p = class.next_power_of_two();
    let step = p / 16;
    let k = class / step; // 9..=16
    17 + (p.trailing_zeros() as usize - 17) * 16 + (k - 1)
}

static POOL: Mutex<Option<Pool>> = Mutex::new(None);

/// The size class of a request: powers of two up to 64 KiB, then steps of an
/// eighth of the enclosing power of two (at most 12.5% slack).
pub(crate) fn size_class(bytes: usize) -> usize {
    let b = bytes.max(ALIGN);
    if b <= 1 << 16 {
        return b.next_power_of_two();
    }
    let p = b.next_power_of_two();
    let step = p / 16;
    b.div_ceil(step) * step
}

/// The size class of a request of `bytes`, or an error when no block that large
/// can exist.
pub(crate) fn checked_class(bytes: usize) -> Result<usize> {
    let class = bytes.checked_next_power_of_two().map(|_| size_class(bytes));
    match class {
        Some(c) if Layout::from_size_align(c, ALIGN).is_ok() => Ok(c),
        _ => Err(Error::new(format!("cannot allocate {bytes} bytes: size too large"))),
    }
}

pub(crate) fn alloc(bytes: usize) -> Result<(NonNull<u8>, usize)> {
    let class = checked_class(bytes)?;
    {
        let mut g = POOL.lock();
        let pool = g.get_or_insert_with(|| {
            crate::engine::register_fork_handlers();
            Pool { free: Vec::new(), stats: PoolStats::default(), peak: 0 }
        });
        if let Some(p) = pool.list(class).pop() {
            pool.stats.reuses += 1;
            pool.stats.in_use_bytes += class as u64;
            pool.stats.cached_bytes -= class as u64;
            // SAFETY: only non-null pointers are stored in the free lists.
            return Ok((unsafe { NonNull::new_unchecked(p as *mut u8) }, class));
        }
        pool.stats.os_allocs += 1;
        pool.stats.in_use_bytes += class as u64;
        pool.peak = pool.peak.max(pool.stats.in_use_bytes);
    }
    let layout = Layout::from_size_align(class, ALIGN).map_err(|_| Error::new(format!("cannot allocate {bytes} bytes: size too large")))?;
    // SAFETY: layout has non-zero size.
    let mut p = unsafe { std::alloc::alloc(layout) };
    if p.is_null() {
        // Cached blocks of other sizes may be what is missing: give them back, retry.
        host_pool_release();
        // SAFETY: as above.
        p = unsafe { std::alloc::alloc(layout) };
    }
    match NonNull::new(p) {
        Some(p) => Ok((p, class)),
        None => {
            POOL.lock().as_mut().unwrap().stats.in_use_bytes -= class as u64;
            Err(Error::new(format!("out of host memory allocating {bytes} bytes")))
        }
    }
}

pub(crate) fn free(ptr: NonNull<u8>, class: usize) {
    {
        let mut g = POOL.lock();
        if let Some(pool) = g.as_mut() {
            pool.stats.in_use_bytes -= class as u64;
            if keeps(pool.stats.cached_bytes, class as u64, pool.peak) {
                pool.stats.cached_bytes += class as u64;
                pool.list(class).push(ptr.as_ptr() as usize);
                return;
            }
        }
    }
    let layout = Layout::from_size_align(class, ALIGN).unwrap();
    // SAFETY: the block came from `alloc` with this exact layout and is no longer used.
    unsafe { dealloc(ptr.as_ptr(), layout) };
}

/// Before a fork: takes the pool's lock, so that no thread is half-way through an
/// allocation when the process is copied; the fork handlers release it on both sides.
pub(crate) fn fork_prepare() {
    std::mem::forget(POOL.lock());
}

/// After a fork, in the parent: releases the lock taken by [`fork_prepare`].
pub(crate) fn fork_parent() {
    // SAFETY: `fork_prepare` locked it on this thread and forgot the guard.
    unsafe { POOL.force_unlock() };
}

/// After a fork, in the child: releases the lock taken by [`fork_prepare`] (the
/// child's only thread is the one that took it).
pub(crate) fn fork_child() {
    // SAFETY: as in `fork_parent`.
    unsafe { POOL.force_unlock() };
}

/// The host pool's counters.
pub fn host_pool_stats() -> PoolStats {
    POOL.lock().as_ref().map(|p| p.stats).unwrap_or_default()
}

/// Gives every cached block back to the OS.
pub fn host_pool_release() {
    let blocks: Vec<(usize, Vec<usize>)> = {
        let mut g = POOL.lock();
        match g.as_mut() {
            Some(pool) => {
                pool.stats.cached_bytes = 0;
                pool.free.iter_mut().map(|(c, v)| (*c, std::mem::take(v))).collect()
            }
            None => return,
        }
    };
    for (class, ptrs) in blocks {
        let layout = Layout::from_size_align(class, ALIGN).unwrap();
        for p in ptrs {
            // SAFETY: each pointer came from `alloc` with this exact layout.
            unsafe { dealloc(p as *mut u8, layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn classes_cover_requests() {
        for b in [0, 1, 63, 64, 65, 1000, 65536, 65537, 1 << 20, (1 << 20) + 1, 123_456_789] {
            let c = size_class(b);
            assert!(c >= b && c % ALIGN == 0);
            assert!(b < 1 << 16 || c as f64 <= b as f64 * 1.125 + 64.0);
        }
        // distinct classes get distinct indices
        let mut seen = std::collections::HashMap::new();
        for b in (1..5000).map(|i| i * 977) {
            let c = size_class(b);
            if let Some(prev) = seen.insert(class_index(c), c) {
                assert_eq!(prev, c);
            }
        }
    }

    #[test]
    fn the_cache_is_bounded_by_the_peak_in_use_or_the_floor() {
        let gib = 1u64 << 30;
        // under the floor: always kept
        assert!(keeps(0, 1000, 0));
        assert!(keeps(gib - 1000, 1000, 0));
        assert!(!keeps(gib - 999, 1000, 0));
        // a program that once had 5 GiB in use may cache 5 GiB, not more
        assert!(keeps(4 * gib, gib, 5 * gib));
        assert!(!keeps(4 * gib + 1, gib, 5 * gib));
        // a freed block over the bound goes back to the OS, and the pool still works
        let (p, class) = alloc(3 << 20).unwrap();
        free(p, class);
        let (q, class2) = alloc(3 << 20).unwrap();
        assert_eq!(class, class2);
        free(q, class2);
    }

    #[test]
    fn impossible_sizes_are_refused_up_front() {
        assert!(checked_class(usize::MAX).is_err());
        assert!(checked_class(isize::MAX as usize).is_err());
        assert_eq!(checked_class(100).unwrap(), 128);
    }
}
