//! Memory interop: DLPack capsules both ways and NumPy arrays adopted without a copy.
//!
//! The structs follow dlpack.h's v0.x ABI (`DLManagedTensor`, what a capsule named
//! "dltensor" holds). Exporting ([`to_dlpack`]) hands out a tensor over the array's
//! own memory; the tensor keeps the array (and so its memory) alive until its
//! deleter runs: the consumer calls it once it is done, and a capsule nobody
//! consumed (still named "dltensor") calls it when it is freed. Importing
//! ([`from_dlpack`], [`from_numpy`]) wraps the producer's memory in a foreign
//! [`oxnet_core::storage::Storage`] whose owner is a Python object: the NumPy array
//! itself, or a small capsule whose destructor calls the producer's deleter. Dropping
//! a Python object off the interpreter's thread only queues its release (pyo3's
//! reference pool), so a producer's deleter always runs with the GIL held, never on an
//! engine worker that could be waited on by the thread holding the GIL.

use crate::array::NDArray as PyND;
use crate::convert::dtype_of;
use crate::{err, IntoPy};
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use oxnet_core::{Context, DType, Error};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use std::ffi::{c_char, c_void, CStr};

const DL_CPU: i32 = 1;
const DL_CUDA: i32 = 2;
const DL_CUDA_HOST: i32 = 3;

const CODE_INT: u8 = 0;
const CODE_UINT: u8 = 1;
const CODE_FLOAT: u8 = 2;
const CODE_BFLOAT: u8 = 4;
const CODE_BOOL: u8 = 6;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    /// Null: compact row-major.
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

const DLTENSOR: &CStr = c"dltensor";
const USED_DLTENSOR: &CStr = c"used_dltensor";
const OWNER: &CStr = c"oxnet.dlpack_owner";

fn dl_dtype(d: DType) -> DLDataType {
    let (code, bits) = match d {
        DType::F32 => (CODE_FLOAT, 32),
        DType::F64 => (CODE_FLOAT, 64),
        DType::F16 => (CODE_FLOAT, 16),
        DType::BF16 => (CODE_BFLOAT, 16),
        DType::U8 => (CODE_UINT, 8),
        DType::I8 => (CODE_INT, 8),
        DType::I32 => (CODE_INT, 32),
        DType::I64 => (CODE_INT, 64),
        DType::Bool => (CODE_BOOL, 8),
    };
    DLDataType { code, bits, lanes: 1 }
}

fn dtype_of_dl(t: DLDataType) -> Option<DType> {
    if t.lanes != 1 {
        return None;
    }
    Some(match (t.code, t.bits) {
        (CODE_FLOAT, 32) => DType::F32,
        (CODE_FLOAT, 64) => DType::F64,
        (CODE_FLOAT, 16) => DType::F16,
        (CODE_BFLOAT, 16) => DType::BF16,
        (CODE_UINT, 8) => DType::U8,
        (CODE_INT, 8) => DType::I8,
        (CODE_INT, 32) => DType::I32,
        (CODE_INT, 64) => DType::I64,
        (CODE_BOOL, 8) => DType::Bool,
        _ => return None,
    })
}

/// The DLPack device of a context: host memory is kDLCPU, `gpu(i)` kDLCUDA `i`.
fn dl_device(ctx: Context) -> DLDevice {
    if ctx.is_host() {
        DLDevice { device_type: DL_CPU, device_id: 0 }
    } else {
        DLDevice { device_type: DL_CUDA, device_id: ctx.dev_id }
    }
}

// ---- export ---------------------------------------------------------------------------

/// One exported tensor: the managed tensor first (its address is the whole's), then
/// what it points into.
#[repr(C)]
struct Export {
    managed: DLManagedTensor,
    _array: oxnet_core::NDArray,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

unsafe extern "C" fn export_deleter(t: *mut DLManagedTensor) {
    if t.is_null() {
        return;
    }
    // SAFETY: manager_ctx is the Box<Export> leaked by `to_dlpack`; the deleter runs once.
    let ctx = unsafe { (*t).manager_ctx };
    if !ctx.is_null() {
        drop(unsafe { Box::from_raw(ctx as *mut Export) });
    }
}

/// Destructor of a capsule we made: an unconsumed capsule ("dltensor") still owns its
/// tensor and calls the deleter; a consumed one ("used_dltensor") does nothing.
unsafe extern "C" fn dltensor_capsule_destructor(cap: *mut ffi::PyObject) {
    // SAFETY: called by Python with the capsule; IsValid sets no error.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, DLTENSOR.as_ptr()) == 1 {
            let t = ffi::PyCapsule_GetPointer(cap, DLTENSOR.as_ptr()) as *mut DLManagedTensor;
            if let Some(d) = t.as_ref().and_then(|t| t.deleter) {
                d(t);
            }
        }
    }
}

/// A capsule named "dltensor" over `a`'s memory (`write`: waits for every pending
/// operation, as `to_dlpack_for_write`; else for pending writes). `what` names the
/// caller in errors.
pub(crate) fn to_dlpack(py: Python<'_>, a: &PyND, write: bool, what: &str) -> PyResult<Py<PyAny>> {
    if a.sparse.is_some() {
        return Err(err(Error::new(format!("{what}: only arrays of default storage can be exported through DLPack"))));
    }
    let arr = a.inner.clone();
    let waited = arr.clone();
    py.detach(move || {
        if write {
            waited.wait_to_write()?;
        }
        waited.wait_to_read()
    })
    .py_err()?;
    let base = arr.chunk().storage.try_ptr().py_err()?;
    // SAFETY: the offset lies within the chunk.
    let data = unsafe { base.add(arr.offset() * arr.dtype().size()) };
    let shape: Vec<i64> = arr.shape().iter().map(|&d| d as i64).collect();
    let mut strides = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1].max(1);
    }
    let device = dl_device(arr.ctx());
    let dtype = dl_dtype(arr.dtype());
    let ndim = shape.len() as i32;
    let mut ex = Box::new(Export {
        managed: DLManagedTensor {
            dl_tensor: DLTensor {
                data: data as *mut c_void,
                device,
                ndim,
                dtype,
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(export_deleter),
        },
        _array: arr,
        shape,
        strides,
    });
    // The vectors' buffers do not move when the box does.
    ex.managed.dl_tensor.shape = ex.shape.as_mut_ptr();
    ex.managed.dl_tensor.strides = ex.strides.as_mut_ptr();
    let raw = Box::into_raw(ex);
    // SAFETY: raw is a live Export; its first field is the managed tensor.
    unsafe { (*raw).managed.manager_ctx = raw as *mut c_void };
    // SAFETY: a valid pointer, a static name and a destructor that frees it at most once.
    let cap = unsafe { ffi::PyCapsule_New(raw as *mut c_void, DLTENSOR.as_ptr(), Some(dltensor_capsule_destructor)) };
    if cap.is_null() {
        // SAFETY: the capsule was not made, so nothing else owns raw.
        unsafe { export_deleter(raw as *mut DLManagedTensor) };
        return Err(PyErr::fetch(py));
    }
    // SAFETY: a new reference.
    Ok(unsafe { Bound::from_owned_ptr(py, cap) }.unbind())
}

// ---- import ---------------------------------------------------------------------------

/// Keeps an imported tensor alive; its destructor (run with the GIL, see the module
/// docs) calls the producer's deleter.
unsafe extern "C" fn owner_capsule_destructor(cap: *mut ffi::PyObject) {
    // SAFETY: our own capsule, named OWNER, holding the consumed managed tensor.
    unsafe {
        let t = ffi::PyCapsule_GetPointer(cap, OWNER.as_ptr()) as *mut DLManagedTensor;
        if t.is_null() {
            ffi::PyErr_Clear();
            return;
        }
        if let Some(d) = (*t).deleter {
            d(t);
        }
    }
}

fn capsule_name(cap: &Bound<'_, PyAny>) -> Option<String> {
    // SAFETY: cap is a capsule; the name pointer (if any) lives as long as it does.
    unsafe {
        let p = ffi::PyCapsule_GetName(cap.as_ptr());
        if p.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        Some(CStr::from_ptr(p as *const c_char).to_string_lossy().into_owned())
    }
}

fn import_err(msg: impl std::fmt::Display) -> PyErr {
    err(Error::new(format!("from_dlpack: {msg}")))
}

/// An NDArray over the memory of a DLPack capsule ("dltensor", which is renamed
/// "used_dltensor") or of an object with `__dlpack__` (NumPy arrays, PyTorch tensors,
/// NDArrays), without a copy.
#[pyfunction]
fn from_dlpack(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<PyND> {
    let cap = if obj.cast::<PyCapsule>().is_ok() {
        obj.clone()
    } else if obj.is_none() {
        return Err(import_err("expected a DLPack capsule or an object with __dlpack__, got None"));
    } else if obj.hasattr("__dlpack__")? {
        let c = obj
            .call_method0("__dlpack__")
            .map_err(|e| import_err(format!("{}.__dlpack__() failed: {e}", obj.get_type().name().map(|n| n.to_string()).unwrap_or_default())))?;
        if c.cast::<PyCapsule>().is_err() {
            return Err(import_err(format!("__dlpack__() returned {}, not a capsule", c.get_type().name()?)));
        }
        c
    } else {
        return Err(import_err(format!("expected a DLPack capsule or an object with __dlpack__, got {}", obj.get_type().name()?)));
    };
    // SAFETY: cap is a capsule; IsValid sets no error.
    if unsafe { ffi::PyCapsule_IsValid(cap.as_ptr(), DLTENSOR.as_ptr()) } != 1 {
        return Err(match capsule_name(&cap).as_deref() {
            Some("used_dltensor") => {
                import_err("the capsule was already consumed (it is named 'used_dltensor'); a DLPack capsule can be imported once")
            }
            Some(n) => import_err(format!("expected a capsule named 'dltensor', got one named '{n}'")),
            None => import_err("expected a capsule named 'dltensor', got one without a name"),
        });
    }
    // SAFETY: a valid "dltensor" capsule holds a DLManagedTensor.
    let t = unsafe { ffi::PyCapsule_GetPointer(cap.as_ptr(), DLTENSOR.as_ptr()) } as *mut DLManagedTensor;
    if t.is_null() {
        return Err(import_err("the capsule holds a null tensor"));
    }
    // SAFETY: the producer keeps the managed tensor valid until its deleter is called.
    let dl = unsafe { &(*t).dl_tensor };
    let ctx = match dl.device.device_type {
        DL_CPU | DL_CUDA_HOST => Context::cpu(0),
        DL_CUDA => Context::gpu(dl.device.device_id),
        d => return Err(import_err(format!("unsupported device type {d} (oxnet takes kDLCPU=1, kDLCUDA=2 and kDLCUDAHost=3)"))),
    };
    let dtype = dtype_of_dl(dl.dtype).ok_or_else(|| {
        import_err(format!(
            "unsupported dtype (code {}, bits {}, lanes {}); oxnet takes float16/32/64, bfloat16, int8/32/64, uint8 and bool, one lane",
            dl.dtype.code, dl.dtype.bits, dl.dtype.lanes
        ))
    })?;
    if dl.ndim < 0 || (dl.ndim > 0 && dl.shape.is_null()) {
        return Err(import_err(format!("invalid tensor: ndim {} with {} shape", dl.ndim, if dl.shape.is_null() { "a null" } else { "a" })));
    }
    let nd = dl.ndim as usize;
    // SAFETY: the producer's shape (and strides, when not null) hold ndim values.
    let shape_i: &[i64] = if nd == 0 { &[] } else { unsafe { std::slice::from_raw_parts(dl.shape, nd) } };
    if let Some(d) = shape_i.iter().find(|&&d| d < 0) {
        return Err(import_err(format!("invalid tensor: negative dimension {d} in shape {shape_i:?}")));
    }
    let shape: Vec<usize> = shape_i.iter().map(|&d| d as usize).collect();
    if !dl.strides.is_null() && nd > 0 && shape.iter().all(|&d| d > 0) {
        // SAFETY: as above.
        let strides = unsafe { std::slice::from_raw_parts(dl.strides, nd) };
        let mut want = 1i64;
        for i in (0..nd).rev() {
            if shape[i] > 1 && strides[i] != want {
                return Err(import_err(format!(
                    "only compact row-major tensors can be adopted; got shape {shape_i:?} with strides {strides:?} (in elements)"
                )));
            }
            want = want.saturating_mul(shape_i[i]);
        }
    }
    let data = (dl.data as *mut u8).wrapping_add(dl.byte_offset as usize);
    let data = if dl.data.is_null() { std::ptr::null_mut() } else { data };
    // Consumed from here on: the owner capsule calls the deleter.
    // SAFETY: cap is a capsule; the name is static.
    if unsafe { ffi::PyCapsule_SetName(cap.as_ptr(), USED_DLTENSOR.as_ptr()) } != 0 {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: t is the consumed managed tensor; the destructor calls its deleter once.
    let owner = unsafe { ffi::PyCapsule_New(t as *mut c_void, OWNER.as_ptr(), Some(owner_capsule_destructor)) };
    if owner.is_null() {
        // SAFETY: nothing else will call the deleter now.
        unsafe {
            if let Some(d) = (*t).deleter {
                d(t);
            }
        }
        return Err(PyErr::fetch(py));
    }
    // SAFETY: a new reference.
    let owner: Py<PyAny> = unsafe { Bound::from_owned_ptr(py, owner) }.unbind();
    // SAFETY: the producer keeps `data` valid until the deleter runs, which the owner does.
    let a = unsafe { oxnet_core::NDArray::from_foreign("from_dlpack", ctx, data, &shape, dtype, Box::new(owner)) }.py_err()?;
    Ok(PyND::new(a))
}

/// Capsules of `a` for `to_dlpack_for_read` (`write` false) / `_for_write` (true).
#[pyfunction]
fn to_dlpack_capsule(py: Python<'_>, a: PyRef<'_, PyND>, write: bool) -> PyResult<Py<PyAny>> {
    to_dlpack(py, &a, write, if write { "to_dlpack_for_write" } else { "to_dlpack_for_read" })
}

/// The (device_type, device_id) DLPack gives `a`'s memory.
#[pyfunction]
fn dlpack_device(a: PyRef<'_, PyND>) -> (i32, i32) {
    let d = dl_device(a.inner.ctx());
    (d.device_type, d.device_id)
}

/// An NDArray over a C-contiguous, aligned NumPy array's own memory (the caller
/// checks those and makes the NumPy array read-only, as MXNet's `from_numpy`). The
/// NDArray keeps the NumPy array alive.
#[pyfunction]
#[pyo3(signature = (a, dev_type=1, dev_id=0))]
fn from_numpy_zero_copy(a: &Bound<'_, PyAny>, dev_type: i32, dev_id: i32) -> PyResult<PyND> {
    let ctx = crate::convert::make_ctx(dev_type, dev_id)?;
    if !ctx.is_host() {
        return Err(err(Error::new(format!("from_numpy: a NumPy array's memory can back host arrays only, not {ctx}"))));
    }
    let arr = a.cast::<PyUntypedArray>().map_err(|_| err(Error::new("from_numpy: expected a numpy.ndarray")))?;
    if !arr.is_c_contiguous() {
        return Err(pyo3::exceptions::PyValueError::new_err("Only c-contiguous arrays are supported for zero-copy"));
    }
    let dtype = dtype_of(&arr.dtype().into_any())?;
    let shape: Vec<usize> = arr.shape().to_vec();
    // SAFETY: a C-contiguous array's data pointer covers its len * itemsize bytes.
    let data = unsafe { (*arr.as_array_ptr()).data } as *mut u8;
    let owner: Py<PyAny> = a.clone().unbind();
    // SAFETY: the NumPy array (kept alive by the owner) holds its data for as long as it lives.
    let nd = unsafe { oxnet_core::NDArray::from_foreign("from_numpy", ctx, data, &shape, dtype, Box::new(owner)) }.py_err()?;
    Ok(PyND::new(nd))
}

pub(crate) fn add_functions(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(to_dlpack_capsule, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack_device, m)?)?;
    m.add_function(wrap_pyfunction!(from_numpy_zero_copy, m)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi_layout_matches_dlpack_h() {
        // dlpack.h v0.x on 64-bit targets.
        assert_eq!(std::mem::size_of::<DLDevice>(), 8);
        assert_eq!(std::mem::size_of::<DLDataType>(), 4);
        assert_eq!(std::mem::size_of::<DLTensor>(), 48);
        assert_eq!(std::mem::offset_of!(DLTensor, ndim), 16);
        assert_eq!(std::mem::offset_of!(DLTensor, dtype), 20);
        assert_eq!(std::mem::offset_of!(DLTensor, shape), 24);
        assert_eq!(std::mem::offset_of!(DLTensor, byte_offset), 40);
        assert_eq!(std::mem::size_of::<DLManagedTensor>(), 64);
    }

    #[test]
    fn dtypes_round_trip() {
        for d in oxnet_core::dtype::ALL_DTYPES {
            assert_eq!(dtype_of_dl(dl_dtype(d)), Some(d));
        }
        assert_eq!(dl_dtype(DType::BF16).code, 4);
        assert_eq!((dl_dtype(DType::F16).code, dl_dtype(DType::F16).bits), (2, 16));
        assert_eq!(dtype_of_dl(DLDataType { code: 2, bits: 32, lanes: 4 }), None);
    }
}
