//! The caching device allocator (one per GPU). Blocks are rounded up to a size class
//! and, when freed, kept in that class's bin for the next request of the class
//! instead of going back to the driver (cudaMalloc/cudaFree synchronise the device).
//! When the device is out of memory the cache is released and the request retried
//! once; a second failure is an [`Error`] with the request size and the pool state,
//! and the pool stays usable.
//!
//! The device side is behind [`DeviceMemory`]: the CUDA driver in production, a
//! fake with a byte budget in the tests below.

use crate::error::{Error, Result};
use std::collections::HashMap;

/// A failed device allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllocFailure {
    OutOfMemory,
    Other(String),
}

/// Raw device memory: what the allocator asks the driver for.
pub trait DeviceMemory: Send {
    /// A block of exactly `bytes` bytes (an address on the device).
    fn alloc(&mut self, bytes: usize) -> std::result::Result<u64, AllocFailure>;
    /// Gives back a block from [`DeviceMemory::alloc`].
    fn free(&mut self, ptr: u64, bytes: usize);
}

/// Counters for tests and `gpu_memory_info`-style reporting (bytes are class sizes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocStats {
    /// Bytes in blocks handed out and not yet freed.
    pub allocated: usize,
    /// Bytes in freed blocks kept for reuse.
    pub cached: usize,
    /// Largest `allocated` seen.
    pub peak: usize,
    /// Requests served from the cache.
    pub hits: u64,
    /// Requests that went to the device.
    pub misses: u64,
    /// Times an out-of-memory released the cache and retried.
    pub oom_retries: u64,
}

/// Smallest block handed out (and the alignment of every class).
pub const MIN_BLOCK: usize = 512;

/// The size class of a request: at least [`MIN_BLOCK`], then rounded up to a
/// quarter of its power of two (at most 25% waste).
pub fn size_class(bytes: usize) -> usize {
    if bytes <= MIN_BLOCK {
        return MIN_BLOCK;
    }
    let top = usize::BITS - 1 - bytes.leading_zeros();
    let step = 1usize << (top - 2);
    bytes.div_ceil(step) * step
}

pub struct CachingAllocator<B: DeviceMemory> {
    backend: B,
    device: String,
    bins: HashMap<usize, Vec<u64>>,
    stats: AllocStats,
}

impl<B: DeviceMemory> CachingAllocator<B> {
    /// `device` names the device in errors (e.g. `gpu(0)`).
    pub fn new(backend: B, device: impl Into<String>) -> Self {
        CachingAllocator { backend, device: device.into(), bins: HashMap::new(), stats: AllocStats::default() }
    }

    pub fn stats(&self) -> AllocStats {
        self.stats
    }

    /// A block of at least `bytes` bytes: `(address, class)`; give it back with
    /// [`CachingAllocator::free`] and the same class.
    pub fn alloc(&mut self, bytes: usize) -> Result<(u64, usize)> {
        let class = size_class(bytes);
        if let Some(p) = self.bins.get_mut(&class).and_then(|v| v.pop()) {
            self.stats.cached -= class;
            self.stats.hits += 1;
            self.took(class);
            return Ok((p, class));
        }
        self.stats.misses += 1;
        let ptr = match self.backend.alloc(class) {
            Ok(p) => p,
            Err(AllocFailure::OutOfMemory) => {
                self.stats.oom_retries += 1;
                let released = self.release();
                match self.backend.alloc(class) {
                    Ok(p) => p,
                    Err(f) => return Err(self.oom_error(bytes, class, released, f)),
                }
            }
            Err(AllocFailure::Other(e)) => {
                return Err(Error::new(format!("{}: allocating {bytes} bytes failed: {e}", self.device)));
            }
        };
        self.took(class);
        Ok((ptr, class))
    }

    fn took(&mut self, class: usize) {
        self.stats.allocated += class;
        self.stats.peak = self.stats.peak.max(self.stats.allocated);
    }

    fn oom_error(&self, bytes: usize, class: usize, released: usize, f: AllocFailure) -> Error {
        let why = match f {
            AllocFailure::OutOfMemory => "out of memory".to_string(),
            AllocFailure::Other(e) => e,
        };
        Error::new(format!(
            "{}: {why} allocating {bytes} bytes (block of {class} bytes); pool: {} bytes in use, {} bytes cached after releasing {released} cached bytes, peak {} bytes",
            self.device, self.stats.allocated, self.stats.cached, self.stats.peak
        ))
    }

    /// Returns a block to its bin.
    pub fn free(&mut self, ptr: u64, class: usize) {
        self.stats.allocated -= class;
        self.stats.cached += class;
        self.bins.entry(class).or_default().push(ptr);
    }

    /// Gives every cached block back to the device; returns the bytes released.
    pub fn release(&mut self) -> usize {
        let mut n = 0;
        for (class, ptrs) in self.bins.drain() {
            for p in ptrs {
                self.backend.free(p, class);
                n += class;
            }
        }
        self.stats.cached = 0;
        n
    }

    pub fn backend(&self) -> &B {
        &self.backend
    }
}

/// A device for tests: a byte budget, addresses counting up, every live block known.
#[derive(Debug, Default)]
pub struct FakeDevice {
    pub budget: usize,
    pub used: usize,
    pub next: u64,
    pub live: HashMap<u64, usize>,
    pub device_allocs: u64,
    pub device_frees: u64,
}

impl FakeDevice {
    pub fn new(budget: usize) -> Self {
        FakeDevice { budget, next: 0x1000, ..Default::default() }
    }
}

impl DeviceMemory for FakeDevice {
    fn alloc(&mut self, bytes: usize) -> std::result::Result<u64, AllocFailure> {
        if self.used + bytes > self.budget {
            return Err(AllocFailure::OutOfMemory);
        }
        let p = self.next;
        self.next += bytes as u64;
        self.used += bytes;
        self.live.insert(p, bytes);
        self.device_allocs += 1;
        Ok(p)
    }
    fn free(&mut self, ptr: u64, bytes: usize) {
        let b = self.live.remove(&ptr).expect("freeing a block the fake device never gave");
        assert_eq!(b, bytes, "freed with another size than allocated");
        self.used -= bytes;
        self.device_frees += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(budget: usize) -> CachingAllocator<FakeDevice> {
        CachingAllocator::new(FakeDevice::new(budget), "gpu(0)")
    }

    #[test]
    fn size_classes_round_up_by_at_most_a_quarter() {
        assert_eq!(size_class(0), 512);
        assert_eq!(size_class(512), 512);
        assert_eq!(size_class(513), 640);
        assert_eq!(size_class(1000), 1024);
        assert_eq!(size_class(1025), 1280);
        assert_eq!(size_class(1 << 20), 1 << 20);
        for n in [513usize, 777, 4097, 1_000_003, 123_456_789] {
            let c = size_class(n);
            assert!(c >= n && c - n <= n / 4 + 1, "{n} -> {c}");
            assert_eq!(c % 128, 0);
        }
    }

    #[test]
    fn freed_blocks_are_reused_and_counted() {
        let mut p = pool(1 << 20);
        let (a, ca) = p.alloc(1000).unwrap();
        assert_eq!(ca, 1024);
        assert_eq!(p.stats(), AllocStats { allocated: 1024, cached: 0, peak: 1024, hits: 0, misses: 1, oom_retries: 0 });
        p.free(a, ca);
        assert_eq!(p.stats().allocated, 0);
        assert_eq!(p.stats().cached, 1024);
        // Same class (1000 and 900 both round to 1024): the cached block comes back.
        let (b, cb) = p.alloc(900).unwrap();
        assert_eq!((b, cb), (a, ca));
        let s = p.stats();
        assert_eq!((s.hits, s.misses, s.cached, s.allocated, s.peak), (1, 1, 0, 1024, 1024));
        // Another class goes to the device.
        let (c, cc) = p.alloc(5000).unwrap();
        assert_ne!(c, a);
        assert_eq!(p.stats().misses, 2);
        assert_eq!(p.stats().peak, 1024 + cc);
        assert_eq!(p.backend().device_allocs, 2);
        p.free(b, cb);
        p.free(c, cc);
        assert_eq!(p.stats().peak, 1024 + cc, "peak stays");
        assert_eq!(p.release(), 1024 + cc);
        assert_eq!(p.backend().used, 0);
        assert_eq!(p.stats().cached, 0);
    }

    #[test]
    fn out_of_memory_releases_the_cache_and_retries_once() {
        let mut p = pool(4096);
        let (a, ca) = p.alloc(2048).unwrap();
        let (b, cb) = p.alloc(1024).unwrap();
        p.free(a, ca); // 2048 cached, 1024 in use: the device has 1024 left
        let (c, cc) = p.alloc(3000).unwrap(); // class 3072: fits only after releasing the cache
        assert_eq!(cc, 3072);
        let s = p.stats();
        assert_eq!((s.oom_retries, s.cached, s.allocated), (1, 0, 4096));
        assert_eq!(p.backend().device_frees, 1);
        p.free(b, cb);
        p.free(c, cc);
    }

    #[test]
    fn out_of_memory_twice_is_an_error_with_the_pool_state_and_the_pool_survives() {
        let mut p = pool(4096);
        let (a, ca) = p.alloc(1024).unwrap();
        let (b, cb) = p.alloc(512).unwrap();
        p.free(b, cb);
        let e = p.alloc(10_000).unwrap_err().to_string();
        assert!(e.contains("gpu(0)"), "{e}");
        assert!(e.contains("out of memory"), "{e}");
        assert!(e.contains("10000 bytes"), "request size: {e}");
        assert!(e.contains("1024 bytes in use"), "pool state: {e}");
        assert!(e.contains("releasing 512"), "{e}");
        // Nothing leaked, and the pool still serves requests.
        assert_eq!(p.stats().allocated, 1024);
        assert_eq!(p.backend().used, 1024);
        let (d, cd) = p.alloc(2000).unwrap();
        p.free(d, cd);
        p.free(a, ca);
        assert_eq!(p.stats().allocated, 0);
        p.release();
        assert!(p.backend().live.is_empty());
    }

    #[test]
    fn other_driver_failures_name_the_device_and_size() {
        struct Broken;
        impl DeviceMemory for Broken {
            fn alloc(&mut self, _: usize) -> std::result::Result<u64, AllocFailure> {
                Err(AllocFailure::Other("CUDA_ERROR_ILLEGAL_ADDRESS".into()))
            }
            fn free(&mut self, _: u64, _: usize) {}
        }
        let mut p = CachingAllocator::new(Broken, "gpu(1)");
        let e = p.alloc(64).unwrap_err().to_string();
        assert!(e.contains("gpu(1)") && e.contains("64 bytes") && e.contains("ILLEGAL_ADDRESS"), "{e}");
        assert_eq!(p.stats().oom_retries, 0);
    }

    #[test]
    fn many_mixed_requests_keep_the_books_balanced() {
        let mut p = pool(64 << 20);
        let mut live = Vec::new();
        let mut seed = 12345u64;
        for i in 0..2000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let n = (seed >> 33) as usize % 100_000;
            if i % 3 == 2 && !live.is_empty() {
                let (ptr, c) = live.swap_remove((seed as usize) % live.len());
                p.free(ptr, c);
            } else {
                live.push(p.alloc(n).unwrap());
            }
            let s = p.stats();
            assert_eq!(s.allocated, live.iter().map(|x| x.1).sum::<usize>());
            assert_eq!(s.allocated + s.cached, p.backend().used);
        }
        assert!(p.stats().hits > 0);
    }
}
