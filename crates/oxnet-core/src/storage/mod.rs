//! Per-device storage. A [`Storage`] is one block of device memory taken from the
//! device's pool and given back to it on drop; nothing here knows about shapes or
//! dtypes. Host devices (every `cpu(i)`) share one host pool; `gpu(i)` blocks come
//! from the CUDA backend, which checks that the driver is present first.

mod cpu;
pub mod cuda;

pub use cpu::{host_pool_release, host_pool_stats, PoolStats};
pub(crate) use cpu::{fork_child, fork_parent, fork_prepare};

use crate::context::Context;
use crate::error::Result;
use std::ptr::NonNull;

/// One block of device memory. `bytes` is what was asked for; the block behind it
/// may be larger (its size class).
pub struct Storage {
    ptr: NonNull<u8>,
    bytes: usize,
    class: usize,
    ctx: Context,
}

// SAFETY: a Storage owns its block exclusively; the engine orders every access.
unsafe impl Send for Storage {}
unsafe impl Sync for Storage {}

impl Storage {
    /// Takes `bytes` bytes (64-byte aligned on the host) from `ctx`'s pool.
    pub fn alloc(ctx: Context, bytes: usize) -> Result<Storage> {
        if ctx.is_host() {
            let (ptr, class) = cpu::alloc(bytes)?;
            Ok(Storage { ptr, bytes, class, ctx })
        } else {
            let (p, class) = cuda::device(ctx)?.alloc(bytes)?;
            let ptr = NonNull::new(p as *mut u8).ok_or_else(|| crate::error::Error::new(format!("{ctx}: the driver returned a null block")))?;
            Ok(Storage { ptr, bytes, class, ctx })
        }
    }
    pub fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
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
        if self.ctx.is_host() {
            cpu::free(self.ptr, self.class);
        } else if let Ok(d) = cuda::device(self.ctx) {
            d.free(self.ptr.as_ptr() as u64, self.class);
        }
    }
}
