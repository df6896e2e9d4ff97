//! oxnet._core: the PyO3 glue between the Rust core and the Python package. Only
//! conversion lives here (handles, values, errors); every computation is in
//! oxnet-core. Errors become `MXNetError`; blocking calls release the GIL.

use pyo3::prelude::*;

mod array;
mod autograd;
mod comm;
mod convert;
mod custom;
mod dataio;
mod dlpack;
mod invoke;
mod io;
mod kvstore;
mod profiler;
mod sparse;
mod symbol;

pyo3::create_exception!(_core, MXNetError, pyo3::exceptions::PyRuntimeError, "Error raised by oxnet (MXNet's MXNetError).");

/// The Python class of an index error (`oxnet.base.MXNetIndexError`: both an
/// `MXNetError` and an `IndexError`), set by `oxnet.base` at import.
static INDEX_ERROR: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();

/// Registers the class raised for index errors (see [`err`]).
#[pyfunction]
fn _set_index_error(py: Python<'_>, cls: Py<PyAny>) {
    let _ = INDEX_ERROR.set(py, cls);
}

/// A core error as a Python `MXNetError` (an `MXNetIndexError`, also an
/// `IndexError`, for an index out of range, where MXNet raises `IndexError`).
pub(crate) fn err(e: oxnet_core::Error) -> PyErr {
    if e.kind() == oxnet_core::error::ErrorKind::Index {
        let made = Python::attach(|py| {
            let cls = INDEX_ERROR.get(py)?.bind(py);
            cls.call1((e.message(),)).ok().map(|v| PyErr::from_value(v))
        });
        if let Some(pe) = made {
            return pe;
        }
    }
    MXNetError::new_err(e.message().to_string())
}

pub(crate) trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}
impl<T> IntoPy<T> for oxnet_core::Result<T> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(err)
    }
}

/// Blocks until every pushed operation has finished; raises the first deferred error.
#[pyfunction]
fn waitall(py: Python<'_>) -> PyResult<()> {
    py.detach(|| {
        oxnet_core::engine::wait_all()?;
        oxnet_core::storage::cuda::synchronize_all()
    })
    .py_err()
}

/// `(free, total)` bytes of GPU `dev_id`.
#[pyfunction]
fn gpu_memory_info(dev_id: i32) -> PyResult<(usize, usize)> {
    oxnet_core::storage::cuda::memory_info(dev_id).py_err()
}

/// The caching allocator's counters of GPU `dev_id` as a dict.
#[pyfunction]
fn gpu_pool_stats(py: Python<'_>, dev_id: i32) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let s = oxnet_core::storage::cuda::pool_stats(dev_id).py_err()?;
    let d = pyo3::types::PyDict::new(py);
    d.set_item("allocated", s.allocated)?;
    d.set_item("cached", s.cached)?;
    d.set_item("peak", s.peak)?;
    d.set_item("hits", s.hits)?;
    d.set_item("misses", s.misses)?;
    d.set_item("oom_retries", s.oom_retries)?;
    Ok(d)
}

/// Gives GPU `dev_id`'s cached blocks back to the driver (after all pending work).
#[pyfunction]
fn gpu_release(py: Python<'_>, dev_id: i32) -> PyResult<usize> {
    py.detach(|| {
        oxnet_core::engine::wait_all()?;
        let d = oxnet_core::storage::cuda::device(oxnet_core::Context::gpu(dev_id))?;
        d.synchronize()?;
        Ok(d.release_cache())
    })
    .py_err()
}

/// Every generated CUDA kernel source as (name, text).
#[pyfunction]
fn cuda_kernel_sources() -> Vec<(String, String)> {
    oxnet_core::kernels::cuda::sources()
}

/// Compiles CUDA source `src` (named `name`) with NVRTC for sm_`arch`; the CUBIN.
#[pyfunction]
fn nvrtc_compile(py: Python<'_>, name: &str, src: &str, arch: u32) -> PyResult<Vec<u8>> {
    py.detach(|| oxnet_core::kernels::cuda::nvrtc::compile(name, src, arch, oxnet_core::kernels::cuda::nvrtc::Output::Cubin)).py_err()
}

/// Registers the `nvidia` package folders of this Python (where NVIDIA's pip
/// wheels put cuBLAS, cuDNN and NCCL) for the CUDA library locator.
#[pyfunction]
fn cuda_set_wheel_roots(roots: Vec<String>) {
    oxnet_core::storage::cuda::libs::set_wheel_roots(roots.into_iter().map(std::path::PathBuf::from).collect());
}

/// Where each NVIDIA library would be opened from: (name, path or None).
#[pyfunction]
fn cuda_libraries() -> Vec<(&'static str, Option<String>)> {
    use oxnet_core::storage::cuda::libs::{locate, CudaLib};
    CudaLib::ALL.iter().map(|l| (l.name(), locate(*l).map(|p| p.display().to_string()))).collect()
}

/// cuDNN's state: (convolutions enabled, version when it loads, convolution calls
/// cuDNN has run in this process).
#[pyfunction]
fn cudnn_info() -> (bool, Option<usize>, u64) {
    use oxnet_core::storage::cuda::dnn;
    (dnn::enabled(), dnn::version(), dnn::calls())
}

/// Number of CUDA devices (0 without an NVIDIA driver).
#[pyfunction]
fn num_gpus() -> i32 {
    oxnet_core::storage::cuda::num_gpus()
}

/// Raises MXNetError unless the context can be used.
#[pyfunction]
fn check_context(dev_type: i32, dev_id: i32) -> PyResult<()> {
    let ctx = convert::make_ctx(dev_type, dev_id)?;
    if ctx.is_host() {
        Ok(())
    } else {
        oxnet_core::storage::cuda::ensure_available(ctx).py_err()
    }
}

/// The host pool's counters as a dict.
#[pyfunction]
fn pool_stats(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let s = oxnet_core::storage::host_pool_stats();
    let d = pyo3::types::PyDict::new(py);
    d.set_item("os_allocs", s.os_allocs)?;
    d.set_item("reuses", s.reuses)?;
    d.set_item("in_use_bytes", s.in_use_bytes)?;
    d.set_item("cached_bytes", s.cached_bytes)?;
    Ok(d)
}

/// Gives the host pool's cached blocks back to the OS.
#[pyfunction]
fn pool_release(py: Python<'_>) -> PyResult<()> {
    py.detach(oxnet_core::engine::wait_all).py_err()?;
    oxnet_core::storage::host_pool_release();
    Ok(())
}

/// Sets this thread's training-mode flag (what Dropout and BatchNorm see as
/// `is_train`); returns the previous value.
#[pyfunction]
fn _set_is_training(on: bool) -> bool {
    oxnet_core::autograd::set_training(on)
}

/// Seeds the random generator of one device, or of all devices.
#[pyfunction]
#[pyo3(signature = (seed, dev_type=None, dev_id=0))]
fn random_seed(seed: i64, dev_type: Option<i32>, dev_id: i32) -> PyResult<()> {
    let ctx = match dev_type {
        Some(t) => Some(convert::make_ctx(t, dev_id)?),
        None => None,
    };
    oxnet_core::random::seed(seed as u64, ctx).py_err()
}

/// Holds the calling Python thread back (with the GIL released) while the engine
/// has more than its bound of operations pending; see `engine::throttle`.
#[inline]
pub(crate) fn throttle(py: Python<'_>) {
    if oxnet_core::engine::should_throttle() {
        py.detach(oxnet_core::engine::throttle);
    }
}

/// Operations pushed to the engine and not yet finished.
#[pyfunction]
fn _engine_pending() -> usize {
    oxnet_core::engine::pending()
}

/// Threads of the compute pool the engine runs operations on.
#[pyfunction]
fn _engine_threads() -> usize {
    oxnet_core::engine::threads()
}

/// The engine's bound on pending operations (0: none); sets it when `n` is given
/// and returns the previous value.
#[pyfunction]
#[pyo3(signature = (n=None))]
fn _engine_max_pending(n: Option<usize>) -> usize {
    match n {
        Some(n) => oxnet_core::engine::set_max_pending(n),
        None => oxnet_core::engine::max_pending(),
    }
}

/// True when the engine runs every op synchronously (NaiveEngine).
#[pyfunction]
fn engine_is_naive() -> bool {
    oxnet_core::engine::is_naive()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MXNetError", m.py().get_type::<MXNetError>())?;
    m.add_class::<array::NDArray>()?;
    m.add_class::<invoke::Op>()?;
    m.add_function(wrap_pyfunction!(waitall, m)?)?;
    m.add_function(wrap_pyfunction!(_set_index_error, m)?)?;
    m.add_function(wrap_pyfunction!(num_gpus, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_set_wheel_roots, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_libraries, m)?)?;
    m.add_function(wrap_pyfunction!(cudnn_info, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_memory_info, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_pool_stats, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_release, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_kernel_sources, m)?)?;
    m.add_function(wrap_pyfunction!(nvrtc_compile, m)?)?;
    m.add_function(wrap_pyfunction!(check_context, m)?)?;
    m.add_function(wrap_pyfunction!(pool_stats, m)?)?;
    m.add_function(wrap_pyfunction!(pool_release, m)?)?;
    m.add_function(wrap_pyfunction!(random_seed, m)?)?;
    m.add_function(wrap_pyfunction!(_set_is_training, m)?)?;
    m.add_function(wrap_pyfunction!(engine_is_naive, m)?)?;
    m.add_function(wrap_pyfunction!(_engine_pending, m)?)?;
    m.add_function(wrap_pyfunction!(_engine_threads, m)?)?;
    m.add_function(wrap_pyfunction!(_engine_max_pending, m)?)?;
    invoke::add_functions(m)?;
    array::add_functions(m)?;
    io::add_functions(m)?;
    dataio::add_functions(m)?;
    kvstore::add_functions(m)?;
    autograd::add_functions(m)?;
    symbol::add_functions(m)?;
    custom::add_functions(m)?;
    comm::add_functions(m)?;
    sparse::add_functions(m)?;
    dlpack::add_functions(m)?;
    profiler::add_functions(m)?;
    Ok(())
}
