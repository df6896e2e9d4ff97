//! The CUDA backend's entry check. The driver library is opened lazily, the first
//! time a `gpu(i)` context is used; a machine without it gets a clear error, never a
//! panic (cudarc's dynamic loader would panic, so we probe the library ourselves
//! before any cudarc call).

use crate::context::Context;
use crate::error::{Error, Result};
use std::sync::OnceLock;

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
        cudarc::driver::result::init().map_err(|e| format!("cuInit failed: {e:?}"))?;
        cudarc::driver::result::device::get_count().map_err(|e| format!("cuDeviceGetCount failed: {e:?}"))
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
