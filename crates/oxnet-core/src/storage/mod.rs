//! Per-device storage. A [`Storage`] is one block of device memory taken from the
//! device's pool and given back to it on drop; nothing here knows about shapes or
//! dtypes. Host devices (every `cpu(i)`) share one host pool; `gpu(i)` blocks come
//! from the CUDA backend, which checks that the driver is present first.
//!
//! A storage may also hold *foreign* memory ([`Storage::foreign`]): a block another
//! library allocated (a NumPy array's data, a DLPack producer's tensor). It keeps an
//! owner value alive instead of a pool block; dropping the storage drops the owner
//! (which releases the memory in its own way) and never returns anything to a pool.
//! Foreign blocks are only as aligned as their producer made them (NumPy: 16 bytes),
//! so host kernels must not assume the pool's 64-byte alignment: those that stream
//! aligned stores (`kernels::cpu::elemwise::for_output`, the kvstore copies) check the
//! address first.

mod cpu;
pub mod cuda;

pub(crate) use cpu::{fork_child, fork_parent, fork_prepare};
pub use cpu::{host_pool_release, host_pool_stats, PoolStats};

use crate::context::Context;
use crate::error::Result;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, Ordering};

/// One block of device memory. `bytes` is what was asked for; the block behind it
/// may be larger (its size class).
///
/// Host blocks are taken from the pool when first touched ([`Storage::try_ptr`]),
/// not when the array is made: an operation pushed to the engine gets its output's
/// memory when it runs, just after the operations before it have given theirs back,
/// so a queue of operations cycles through a few warm blocks instead of holding one
/// cold block per queued output (MXNet delays allocation the same way).
pub struct Storage {
    /// Null until a host block has been taken; set at once for devices and for
    /// foreign memory.
    ptr: AtomicPtr<u8>,
    bytes: usize,
    class: usize,
    ctx: Context,
    /// For foreign memory: what keeps it alive (dropped with the storage).
    owner: Option<Box<dyn Send + Sync>>,
}

// SAFETY: a Storage owns its block exclusively; the engine orders every access,
// and the block is taken by a compare-and-swap, so two first touches cannot both
// keep one.
unsafe impl Send for Storage {}
unsafe impl Sync for Storage {}

impl Storage {
    /// `bytes` bytes (64-byte aligned on the host) of `ctx`'s pool. On the host the
    /// size is checked now and the block taken at the first touch; on a device the
    /// block is taken now.
    pub fn alloc(ctx: Context, bytes: usize) -> Result<Storage> {
        if ctx.is_host() {
            let class = cpu::checked_class(bytes)?;
            Ok(Storage { ptr: AtomicPtr::new(std::ptr::null_mut()), bytes, class, ctx, owner: None })
        } else {
            let (p, class) = cuda::device(ctx)?.alloc(bytes)?;
            let ptr =
                NonNull::new(p as *mut u8).ok_or_else(|| crate::error::Error::new(format!("{ctx}: the driver returned a null block")))?;
            Ok(Storage { ptr: AtomicPtr::new(ptr.as_ptr()), bytes, class, ctx, owner: None })
        }
    }
    /// Foreign memory: `bytes` bytes at `ptr` on `ctx`, kept alive by `owner`, which
    /// is dropped when the storage is (from whichever thread drops the last array
    /// using it). A null `ptr` is accepted only for 0 bytes.
    ///
    /// # Safety
    /// `ptr` must point to `bytes` bytes of `ctx`'s memory that stay valid, and are
    /// not freed or moved by anyone else, for as long as `owner` lives.
    pub unsafe fn foreign(ctx: Context, ptr: *mut u8, bytes: usize, owner: Box<dyn Send + Sync>) -> Result<Storage> {
        let ptr = if ptr.is_null() {
            if bytes != 0 {
                return Err(crate::error::Error::new(format!("foreign memory of {bytes} bytes at a null address")));
            }
            // Never dereferenced: a non-null address aligned for every element type.
            std::ptr::null_mut::<u8>().wrapping_add(64)
        } else {
            ptr
        };
        if !ctx.is_host() {
            cuda::device(ctx)?;
        }
        Ok(Storage { ptr: AtomicPtr::new(ptr), bytes, class: 0, ctx, owner: Some(owner) })
    }
    /// True for foreign memory (see [`Storage::foreign`]).
    pub fn is_foreign(&self) -> bool {
        self.owner.is_some()
    }
    /// The block, taken from the pool on the first call; fails only when the host
    /// is out of memory.
    #[inline]
    pub fn try_ptr(&self) -> Result<*mut u8> {
        let p = self.ptr.load(Ordering::Acquire);
        if !p.is_null() {
            return Ok(p);
        }
        self.take_block()
    }
    #[cold]
    fn take_block(&self) -> Result<*mut u8> {
        let (p, class) = cpu::alloc(self.bytes)?;
        debug_assert_eq!(class, self.class);
        match self.ptr.compare_exchange(std::ptr::null_mut(), p.as_ptr(), Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => Ok(p.as_ptr()),
            Err(theirs) => {
                cpu::free(p, class);
                Ok(theirs)
            }
        }
    }
    /// [`Storage::try_ptr`] for callers without an error path: out of memory
    /// unwinds with the [`crate::error::Error`] as payload, which the engine turns
    /// back into the operation's error.
    pub fn ptr(&self) -> *mut u8 {
        match self.try_ptr() {
            Ok(p) => p,
            Err(e) => std::panic::panic_any(e),
        }
    }
    /// True once the block has been taken (always, on a device).
    pub fn is_allocated(&self) -> bool {
        !self.ptr.load(Ordering::Acquire).is_null()
    }
    pub fn bytes(&self) -> usize {
        self.bytes
    }
    pub fn ctx(&self) -> Context {
        self.ctx
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        if let Some(owner) = self.owner.take() {
            drop(owner);
            return;
        }
        let Some(p) = NonNull::new(*self.ptr.get_mut()) else { return };
        if self.ctx.is_host() {
            cpu::free(p, self.class);
        } else if let Ok(d) = cuda::device(self.ctx) {
            d.free(p.as_ptr() as u64, self.class);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_block_is_taken_at_first_touch() {
        let s = Storage::alloc(Context::cpu(0), 4096).unwrap();
        assert!(!s.is_allocated());
        let p = s.try_ptr().unwrap();
        assert!(s.is_allocated());
        assert_eq!(p as usize % 64, 0);
        assert_eq!(s.ptr(), p);
        // SAFETY: the block is 4096 bytes and owned by `s`.
        unsafe { std::ptr::write_bytes(p, 7, 4096) };
    }

    #[test]
    fn foreign_memory_keeps_its_owner_and_skips_the_pool() {
        struct Owner(std::sync::Arc<std::sync::atomic::AtomicBool>, #[allow(dead_code)] Vec<u8>);
        impl Drop for Owner {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let dropped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut buf = vec![0u8; 100];
        let p = buf.as_mut_ptr().wrapping_add(4);
        // SAFETY: the owner holds the vector the pointer points into.
        let s = unsafe { Storage::foreign(Context::cpu(0), p, 96, Box::new(Owner(dropped.clone(), buf))) }.unwrap();
        assert!(s.is_foreign() && s.is_allocated());
        assert_eq!(s.ptr(), p);
        drop(s);
        assert!(dropped.load(Ordering::SeqCst));
        // SAFETY: a zero-byte foreign block may have a null address.
        let z = unsafe { Storage::foreign(Context::cpu(0), std::ptr::null_mut(), 0, Box::new(())) }.unwrap();
        assert!(!z.ptr().is_null());
        // SAFETY: refused before anything is kept.
        assert!(unsafe { Storage::foreign(Context::cpu(0), std::ptr::null_mut(), 8, Box::new(())) }.is_err());
    }

    #[test]
    fn untouched_storage_drops_without_a_block() {
        let s = Storage::alloc(Context::cpu(0), 1 << 20).unwrap();
        drop(s);
    }

    #[test]
    fn racing_first_touches_agree_on_one_block() {
        for _ in 0..50 {
            let s = std::sync::Arc::new(Storage::alloc(Context::cpu(0), 3000).unwrap());
            let ptrs: Vec<usize> = std::thread::scope(|sc| {
                let hs: Vec<_> = (0..4).map(|_| sc.spawn(|| s.ptr() as usize)).collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert!(ptrs.iter().all(|&p| p == ptrs[0] && p != 0));
        }
    }

    #[test]
    fn huge_request_fails_at_first_touch_with_an_error() {
        // Passes the size check (a valid layout) but no host has this much memory.
        let s = Storage::alloc(Context::cpu(0), 1 << 62).unwrap();
        let e = s.try_ptr().unwrap_err().to_string();
        assert!(e.contains("out of host memory"), "{e}");
        assert!(!s.is_allocated());
    }
}
