//! The compute pool: the one rayon thread pool all of oxnet's parallel work runs
//! on. The engine spawns ready operations into it, and the kernels' parallel loops
//! (and the `gemm` crate's) run inside it through [`install`]. It is oxnet's own
//! pool, not rayon's global one, so that it can be replaced: a child process
//! created by `fork` has none of its parent's threads, and [`super::fork`] drops the
//! pointer to the parent's pool there; the next [`pool`] call builds a fresh one.
//!
//! Size: `RAYON_NUM_THREADS`, else `OMP_NUM_THREADS` (as MXNet's operators use it),
//! else one thread per available core.

use rayon::{ThreadPool, ThreadPoolBuilder};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

/// The current pool, leaked (a pool of the parent left behind in a forked child is
/// never dropped: its threads do not exist there, and dropping it would signal them).
static POOL: AtomicPtr<ThreadPool> = AtomicPtr::new(ptr::null_mut());

/// The compute pool, built on first use (and again on first use after a fork).
#[inline]
pub fn pool() -> &'static ThreadPool {
    let p = POOL.load(Ordering::Acquire);
    if p.is_null() {
        return init();
    }
    // SAFETY: non-null values of POOL come from Box::into_raw and are never freed.
    unsafe { &*p }
}

/// The pool if it was built (in this process), without building it.
pub(crate) fn built() -> Option<&'static ThreadPool> {
    let p = POOL.load(Ordering::Acquire);
    // SAFETY: as in `pool`.
    (!p.is_null()).then(|| unsafe { &*p })
}

#[cold]
fn init() -> &'static ThreadPool {
    super::fork::register();
    let new = Box::into_raw(Box::new(build()));
    match POOL.compare_exchange(ptr::null_mut(), new, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {
            // SAFETY: just stored; never freed.
            unsafe { &*new }
        }
        Err(cur) => {
            // Another thread built one first: ours never ran anything.
            // SAFETY: `new` came from Box::into_raw above and was not shared.
            drop(unsafe { Box::from_raw(new) });
            // SAFETY: as in `pool`.
            unsafe { &*cur }
        }
    }
}

/// The configured number of threads (0: rayon's default, one per core).
fn configured_threads() -> usize {
    let read = |name: &str| std::env::var(name).ok().and_then(|v| v.trim().parse::<usize>().ok()).filter(|&n| n > 0);
    read("RAYON_NUM_THREADS").or_else(|| read("OMP_NUM_THREADS")).unwrap_or(0)
}

fn build() -> ThreadPool {
    let named = |n: usize| ThreadPoolBuilder::new().num_threads(n).thread_name(|i| format!("oxnet-worker-{i}"));
    match named(configured_threads()).build() {
        Ok(p) => p,
        // The OS refused the threads: fall back to a single worker.
        Err(_) => named(1).build().unwrap_or_else(|e| panic!("oxnet: cannot start a compute thread: {e}")),
    }
}

/// Number of threads of the compute pool.
#[inline]
pub fn threads() -> usize {
    pool().current_num_threads().max(1)
}

/// Runs `f` inside the compute pool, so that rayon calls in it (parallel
/// iterators, `rayon::scope`, the `gemm` crate) use oxnet's threads. On a thread of
/// the pool this is a direct call; elsewhere the caller blocks until `f` is done.
#[inline]
pub fn install<R: Send, F: FnOnce() -> R + Send>(f: F) -> R {
    pool().install(f)
}

/// True on one of the compute pool's threads.
pub fn on_pool_thread() -> bool {
    built().is_some_and(|p| p.current_thread_index().is_some())
}

/// Forgets the pool (in a forked child, whose copy of it has no threads); the next
/// [`pool`] call builds a new one.
pub(crate) fn forget_after_fork() {
    POOL.store(ptr::null_mut(), Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_runs_on_the_pool() {
        let n = threads();
        assert!(n >= 1);
        let inside = install(|| (pool().current_thread_index().is_some(), rayon::current_num_threads()));
        assert!(inside.0, "install must run the closure on a pool thread");
        assert_eq!(inside.1, n, "rayon calls inside install must see oxnet's pool");
        // nested install on a pool thread is a direct call
        assert_eq!(install(|| install(|| 7)), 7);
    }
}
