//! The CUDA backend's device side: the driver probe, one lazily made [`Device`] per
//! GPU (context, compute stream, caching allocator, compiled-module cache), memory
//! info and host<->device copies.
//!
//! The driver library is opened the first time a `gpu(i)` context is used; a machine
//! without it gets a clear error, never a panic (cudarc's dynamic loader would panic,
//! so we probe the library ourselves before any cudarc call).
//!
//! Ordering: every kernel and copy for a device goes on its one compute stream, in
//! the order the engine runs the operations that enqueue them, so stream order
//! carries the engine's dependencies on the device, and a block freed to the cache
//! can be handed to the next operation without waiting (the next use is later on
//! the same stream). Reads to the host synchronise the stream.

pub mod alloc;
pub mod blas;
pub mod dnn;
pub mod libs;
pub mod nccl;

pub use alloc::{AllocStats, CachingAllocator, DeviceMemory};

use crate::context::Context;
use crate::error::{Error, Result};
use cudarc::driver::{result as cu, sys, CudaContext, CudaFunction, CudaModule, CudaStream};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

struct CudaInfo {
    devices: i32,
    error: Option<String>,
}

static INFO: OnceLock<CudaInfo> = OnceLock::new();

const DRIVER_NAMES: [&str; 2] = ["libcuda.so.1", "libcuda.so"];

fn probe() -> CudaInfo {
    // SAFETY: opening a shared library runs its initialisers; libcuda's are benign.
    let found = DRIVER_NAMES.iter().any(|n| unsafe { libloading::Library::new(n) }.is_ok());
    if !found {
        return CudaInfo { devices: 0, error: Some("no NVIDIA driver (libcuda.so) was found on this machine".into()) };
    }
    let result = std::panic::catch_unwind(|| -> std::result::Result<i32, String> {
        cu::init().map_err(|e| format!("cuInit failed: {e:?}"))?;
        cu::device::get_count().map_err(|e| format!("cuDeviceGetCount failed: {e:?}"))
    });
    match result {
        Ok(Ok(n)) => CudaInfo { devices: n, error: None },
        Ok(Err(e)) => CudaInfo { devices: 0, error: Some(e) },
        Err(_) => CudaInfo { devices: 0, error: Some("the CUDA driver could not be loaded".into()) },
    }
}

fn info() -> &'static CudaInfo {
    INFO.get_or_init(probe)
}

/// Number of CUDA devices; 0 where there is no driver.
pub fn num_gpus() -> i32 {
    info().devices
}

/// Ok when `ctx` names a CUDA device that exists on this machine.
pub fn ensure_available(ctx: Context) -> Result<()> {
    let i = info();
    if let Some(e) = &i.error {
        return Err(Error::new(format!("cannot use {ctx}: {e}")));
    }
    if ctx.dev_id < 0 || ctx.dev_id >= i.devices {
        return Err(Error::new(format!("cannot use {ctx}: this machine has {} GPU(s)", i.devices)));
    }
    Ok(())
}

/// A driver error as an oxnet error naming the device and what was being done.
pub fn driver_err(ctx: Context, what: &str, e: cu::DriverError) -> Error {
    Error::new(format!("{ctx}: {what} failed: {e:?}"))
}

/// Device memory from the driver (the allocator's real backend).
struct DriverMemory {
    ctx: Arc<CudaContext>,
}

impl DeviceMemory for DriverMemory {
    fn alloc(&mut self, bytes: usize) -> std::result::Result<u64, alloc::AllocFailure> {
        self.ctx.bind_to_thread().map_err(|e| alloc::AllocFailure::Other(format!("{e:?}")))?;
        // SAFETY: the device's context is current on this thread.
        match unsafe { cu::malloc_sync(bytes) } {
            Ok(p) => Ok(p),
            Err(cu::DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY)) => Err(alloc::AllocFailure::OutOfMemory),
            Err(e) => Err(alloc::AllocFailure::Other(format!("{e:?}"))),
        }
    }
    fn free(&mut self, ptr: u64, _bytes: usize) {
        // Cached blocks are only released between uses; make sure the stream is done.
        let _ = self.ctx.bind_to_thread().and_then(|_| self.ctx.synchronize());
        // SAFETY: ptr came from malloc_sync on this context and is no longer used.
        let _ = unsafe { cu::free_sync(ptr) };
    }
}

/// One GPU: its context, compute stream, memory pool and compiled kernels.
pub struct Device {
    pub ctx: Context,
    pub cu: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    /// `sm_XY` as XY.
    pub arch: u32,
    pool: Mutex<CachingAllocator<DriverMemory>>,
    modules: Mutex<HashMap<String, Arc<CudaModule>>>,
    functions: Mutex<HashMap<String, CudaFunction>>,
}

/// One library handle per device (cuBLAS, cuDNN): made once by the first caller,
/// then read without a lock; calls on a handle hold its mutex.
pub(crate) struct DeviceSlots<H: 'static> {
    slots: [OnceLock<&'static Mutex<H>>; MAX_DEVICES],
    making: Mutex<()>,
}

impl<H: Send + 'static> DeviceSlots<H> {
    pub(crate) const fn new() -> Self {
        DeviceSlots { slots: [const { OnceLock::new() }; MAX_DEVICES], making: Mutex::new(()) }
    }

    /// The device's handle, made by `make` (with the device's context current) the
    /// first time.
    pub(crate) fn get_or_make(&self, d: &Device, make: impl FnOnce() -> Result<H>) -> Result<&'static Mutex<H>> {
        // The device exists, so its id is a valid slot.
        let slot = &self.slots[d.ctx.dev_id as usize];
        if let Some(h) = slot.get() {
            return Ok(h);
        }
        let _making = self.making.lock();
        if let Some(h) = slot.get() {
            return Ok(h);
        }
        d.cu.bind_to_thread().map_err(|e| driver_err(d.ctx, "binding the context", e))?;
        let h: &'static Mutex<H> = Box::leak(Box::new(Mutex::new(make()?)));
        let _ = slot.set(h);
        Ok(h)
    }
}

/// Whether float32 products (cuBLAS GEMMs, cuDNN convolutions) may use TF32 tensor
/// cores (MXNet's `MXNET_CUDA_ALLOW_TENSOR_CORE_CONVERSION`, or
/// `OXNET_CUDA_ALLOW_TF32`; off by default, like PyTorch's `allow_tf32` for matmul,
/// so float32 results match the CPU's).
pub(crate) fn allow_tf32() -> bool {
    static V: OnceLock<bool> = OnceLock::new();
    *V.get_or_init(|| {
        ["OXNET_CUDA_ALLOW_TF32", "MXNET_CUDA_ALLOW_TENSOR_CORE_CONVERSION"]
            .iter()
            .any(|k| std::env::var(k).is_ok_and(|v| v.trim() == "1" || v.trim().eq_ignore_ascii_case("true")))
    })
}

type KernelTable = HashMap<(i32, u64), ([Box<str>; 3], sys::CUfunction)>;

thread_local! {
    /// Kernel handles this thread has launched, by (device, hash of the names). The
    /// modules behind them live as long as their (leaked) device.
    static KERNELS: std::cell::RefCell<KernelTable> = std::cell::RefCell::new(HashMap::new());
}

/// Devices made so far, by id: read without a lock on every launch (a slot is set
/// once, under `MAKING`, and never changes).
pub(crate) const MAX_DEVICES: usize = 64;
static DEVICES: [OnceLock<&'static Device>; MAX_DEVICES] = [const { OnceLock::new() }; MAX_DEVICES];
static MAKING: Mutex<()> = Mutex::new(());

/// The device behind `ctx` (made on first use).
pub fn device(ctx: Context) -> Result<&'static Device> {
    if let Some(d) = usize::try_from(ctx.dev_id).ok().and_then(|i| DEVICES.get(i)).and_then(|s| s.get()) {
        return Ok(d);
    }
    ensure_available(ctx)?;
    let slot = DEVICES
        .get(ctx.dev_id as usize)
        .ok_or_else(|| Error::new(format!("cannot use {ctx}: oxnet handles at most {MAX_DEVICES} GPUs")))?;
    let _making = MAKING.lock();
    if let Some(d) = slot.get() {
        return Ok(d);
    }
    let cu = CudaContext::new(ctx.dev_id as usize).map_err(|e| driver_err(ctx, "creating the CUDA context", e))?;
    let (major, minor) = cu.compute_capability().map_err(|e| driver_err(ctx, "reading the compute capability", e))?;
    let stream = cu.new_stream().map_err(|e| driver_err(ctx, "creating a stream", e))?;
    let pool = Mutex::new(CachingAllocator::new(DriverMemory { ctx: cu.clone() }, ctx.to_string()));
    let d: &'static Device = Box::leak(Box::new(Device {
        ctx,
        cu,
        stream,
        arch: (major * 10 + minor) as u32,
        pool,
        modules: Mutex::new(HashMap::new()),
        functions: Mutex::new(HashMap::new()),
    }));
    let _ = slot.set(d);
    Ok(d)
}

impl Device {
    /// A block of at least `bytes` bytes: (address, class).
    pub fn alloc(&self, bytes: usize) -> Result<(u64, usize)> {
        self.pool.lock().alloc(bytes)
    }
    pub fn free(&self, ptr: u64, class: usize) {
        self.pool.lock().free(ptr, class)
    }
    /// Temporary device memory for one op's work (im2col buffers, partial sums):
    /// given back to the cache when dropped, which is safe as soon as the kernels
    /// using it are enqueued (every later use of the block is later on the stream).
    pub fn scratch(&'static self, bytes: usize) -> Result<Scratch> {
        let (ptr, class) = self.alloc(bytes.max(1))?;
        Ok(Scratch { dev: self, ptr, class })
    }
    pub fn pool_stats(&self) -> AllocStats {
        self.pool.lock().stats()
    }
    /// Gives the cached blocks back to the driver.
    pub fn release_cache(&self) -> usize {
        self.pool.lock().release()
    }

    /// Kernel `kernel` of generated source `source` (compiled by NVRTC for this
    /// device's architecture on first use, then cached).
    pub fn function(&self, source: &str, kernel: &str) -> Result<CudaFunction> {
        if let Some(f) = self.functions.lock().get(kernel) {
            return Ok(f.clone());
        }
        let module = self.module(source)?;
        let f = module
            .load_function(kernel)
            .map_err(|e| Error::new(format!("{}: kernel {kernel} not found in source {source}: {e:?}", self.ctx)))?;
        // The first function stored wins and is never replaced: raw handles of it are
        // cached per thread (see `kernel_handle`).
        Ok(self.functions.lock().entry(kernel.to_string()).or_insert(f).clone())
    }

    /// The handle of kernel `kernel` of source `source`, as [`Device::function`] but
    /// looked up in a per-thread table keyed by the names' hash: no lock and no
    /// allocation once the thread has launched the kernel before. `source_of` gives
    /// the source's name on a miss (generated families build it by formatting).
    pub fn kernel_handle(&self, parts: [&str; 3], source_of: impl FnOnce() -> String, kernel_of: impl FnOnce() -> String) -> Result<sys::CUfunction> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        parts.hash(&mut h);
        let key = (self.ctx.dev_id, h.finish());
        let hit = KERNELS.with(|k| {
            k.borrow().get(&key).and_then(|(names, f)| (names.iter().zip(parts.iter()).all(|(a, b)| &**a == *b)).then_some(*f))
        });
        if let Some(f) = hit {
            return Ok(f);
        }
        let f = self.function(&source_of(), &kernel_of())?;
        let raw = f.cu_function();
        KERNELS.with(|k| {
            // A hash collision with other names keeps the first entry (the other
            // kernel then always takes this slow path, still correct).
            k.borrow_mut().entry(key).or_insert_with(|| (parts.map(|p| p.to_string().into_boxed_str()), raw));
        });
        Ok(raw)
    }

    /// Launches `f` on this device's compute stream with `args` (pointers to the
    /// argument values, in the kernel's parameter order).
    ///
    /// # Safety
    /// `args` must match the kernel's signature, and every device address among the
    /// values must be valid for what the kernel accesses, in stream order.
    pub unsafe fn launch_raw(&self, f: sys::CUfunction, cfg: cudarc::driver::LaunchConfig, args: &mut [*mut std::ffi::c_void]) -> Result<()> {
        self.cu.bind_to_thread().map_err(|e| driver_err(self.ctx, "binding the context", e))?;
        cu::launch_kernel(f, cfg.grid_dim, cfg.block_dim, cfg.shared_mem_bytes, self.stream.cu_stream(), args)
            .map_err(|e| driver_err(self.ctx, "kernel launch", e))
    }

    fn module(&self, source: &str) -> Result<Arc<CudaModule>> {
        if let Some(m) = self.modules.lock().get(source) {
            return Ok(m.clone());
        }
        let src = crate::kernels::cuda::source_by_name(source)
            .ok_or_else(|| Error::new(format!("{}: no kernel source named {source}", self.ctx)))?;
        let cubin = crate::kernels::cuda::nvrtc::compile(source, &src, self.arch, crate::kernels::cuda::nvrtc::Output::Cubin)
            .map_err(|e| Error::new(format!("{}: {e}", self.ctx)))?;
        let m = self
            .cu
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
            .map_err(|e| driver_err(self.ctx, &format!("loading kernel module {source}"), e))?;
        // Two threads may compile the same source at once: the first module stored is
        // kept for the life of the device (functions taken from it stay valid); the
        // other is dropped (unloaded) before any of its functions is handed out.
        Ok(self.modules.lock().entry(source.to_string()).or_insert(m).clone())
    }

    /// Waits until everything enqueued on this device has run; surfaces an
    /// asynchronous kernel error.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(|e| driver_err(self.ctx, "synchronising the stream", e))
    }

    /// Enqueues a device-to-device copy.
    pub fn copy_dtod(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        if bytes == 0 || dst == src {
            return Ok(());
        }
        self.cu.bind_to_thread().map_err(|e| driver_err(self.ctx, "binding the context", e))?;
        // SAFETY: both ranges are device blocks of at least `bytes` bytes, ordered by the engine.
        unsafe { cu::memcpy_dtod_async(dst, src, bytes, self.stream.cu_stream()) }
            .map_err(|e| driver_err(self.ctx, "device-to-device copy", e))
    }

    /// Enqueues a copy between any two addresses (device or host: unified
    /// addressing tells the driver which).
    pub fn copy_any(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        if bytes == 0 || dst == src {
            return Ok(());
        }
        self.cu.bind_to_thread().map_err(|e| driver_err(self.ctx, "binding the context", e))?;
        // SAFETY: both ranges hold at least `bytes` bytes, ordered by the engine.
        unsafe { sys::cuMemcpyAsync(dst, src, bytes, self.stream.cu_stream()) }.result().map_err(|e| driver_err(self.ctx, "copy", e))
    }

    /// Copies host bytes to the device and waits for the copy (the host buffer may
    /// be freed afterwards).
    pub fn copy_htod(&self, dst: u64, src: &[u8]) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        self.cu.bind_to_thread().map_err(|e| driver_err(self.ctx, "binding the context", e))?;
        // SAFETY: dst is a device block of at least src.len() bytes, ordered by the engine.
        unsafe { cu::memcpy_htod_async(dst, src, self.stream.cu_stream()) }.map_err(|e| driver_err(self.ctx, "host-to-device copy", e))?;
        self.synchronize()
    }

    /// Copies device bytes into `dst` after everything enqueued before.
    pub fn copy_dtoh(&self, dst: &mut [u8], src: u64) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        self.cu.bind_to_thread().map_err(|e| driver_err(self.ctx, "binding the context", e))?;
        // SAFETY: src is a device block of at least dst.len() bytes, ordered by the engine.
        unsafe { cu::memcpy_dtoh_async(dst, src, self.stream.cu_stream()) }.map_err(|e| driver_err(self.ctx, "device-to-host copy", e))?;
        self.synchronize()
    }
}

/// See [`Device::scratch`].
pub struct Scratch {
    dev: &'static Device,
    pub ptr: u64,
    class: usize,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.dev.free(self.ptr, self.class);
    }
}

/// `(free, total)` bytes of GPU `dev_id` (MXNet's `gpu_memory_info`).
pub fn memory_info(dev_id: i32) -> Result<(usize, usize)> {
    let d = device(Context::gpu(dev_id))?;
    d.cu.mem_get_info().map_err(|e| driver_err(d.ctx, "cuMemGetInfo", e))
}

/// The caching allocator's counters for GPU `dev_id`.
pub fn pool_stats(dev_id: i32) -> Result<AllocStats> {
    Ok(device(Context::gpu(dev_id))?.pool_stats())
}

/// Waits for every device made so far.
pub fn synchronize_all() -> Result<()> {
    for d in DEVICES.iter().filter_map(|s| s.get()) {
        d.synchronize()?;
    }
    Ok(())
}
