//! cuBLAS, opened at run time ([`super::libs`]): one handle per device, bound to
//! the device's compute stream, and row-major GEMM entry points over device
//! addresses ([`gemm`], [`gemm_batched`]) for every float type (float16 and
//! bfloat16 accumulate in float32, on tensor cores).

use super::libs::{self, CudaLib};
use super::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::ffi::c_void;
use std::sync::OnceLock;

type Handle = *mut c_void;
type Status = i32;

#[allow(clippy::type_complexity)]
struct Api {
    create: unsafe extern "C" fn(*mut Handle) -> Status,
    set_stream: unsafe extern "C" fn(Handle, *mut c_void) -> Status,
    set_math_mode: unsafe extern "C" fn(Handle, i32) -> Status,
    gemm_ex: unsafe extern "C" fn(
        Handle,
        i32,
        i32,
        i32,
        i32,
        i32,
        *const c_void,
        *const c_void,
        i32,
        i32,
        *const c_void,
        i32,
        i32,
        *const c_void,
        *mut c_void,
        i32,
        i32,
        i32,
        i32,
    ) -> Status,
    gemm_strided_batched_ex: unsafe extern "C" fn(
        Handle,
        i32,
        i32,
        i32,
        i32,
        i32,
        *const c_void,
        *const c_void,
        i32,
        i32,
        i64,
        *const c_void,
        i32,
        i32,
        i64,
        *const c_void,
        *mut c_void,
        i32,
        i32,
        i64,
        i32,
        i32,
        i32,
    ) -> Status,
}

// SAFETY: plain function pointers into a library kept open for the process.
unsafe impl Send for Api {}
unsafe impl Sync for Api {}

static API: OnceLock<std::result::Result<Api, String>> = OnceLock::new();

fn load() -> std::result::Result<Api, String> {
    let lib = libs::open(CudaLib::Cublas)?;
    let n = "cuBLAS";
    // SAFETY: the types are cuBLAS's documented signatures (cublas_api.h).
    unsafe {
        Ok(Api {
            create: libs::symbol(lib, n, "cublasCreate_v2")?,
            set_stream: libs::symbol(lib, n, "cublasSetStream_v2")?,
            set_math_mode: libs::symbol(lib, n, "cublasSetMathMode")?,
            gemm_ex: libs::symbol(lib, n, "cublasGemmEx")?,
            gemm_strided_batched_ex: libs::symbol(lib, n, "cublasGemmStridedBatchedEx")?,
        })
    }
}

fn api() -> std::result::Result<&'static Api, String> {
    API.get_or_init(load).as_ref().map_err(|e| e.clone())
}

/// Whether cuBLAS can be opened here (for `mx.runtime.Features`).
pub fn available() -> bool {
    api().is_ok()
}

struct H(Handle);
// SAFETY: a cuBLAS handle may be used from any thread when calls on it do not
// overlap; every use holds the device's handle lock.
unsafe impl Send for H {}

/// Each device's handle, read without a lock per GEMM.
static HANDLES: super::DeviceSlots<H> = super::DeviceSlots::new();

const CUBLAS_DEFAULT_MATH: i32 = 0;
const CUBLAS_TF32_TENSOR_OP_MATH: i32 = 3;

fn handle(d: &Device) -> Result<&'static Mutex<H>> {
    HANDLES.get_or_make(d, || {
        let a = api().map_err(|e| Error::new(format!("{}: {e}", d.ctx)))?;
        let mut h: Handle = std::ptr::null_mut();
        // SAFETY: h is an out parameter; the device's context is current.
        check(d, "cublasCreate", unsafe { (a.create)(&mut h) })?;
        // SAFETY: h is a live handle and the stream belongs to the same context.
        check(d, "cublasSetStream", unsafe { (a.set_stream)(h, d.stream.cu_stream() as *mut c_void) })?;
        let mode = if super::allow_tf32() { CUBLAS_TF32_TENSOR_OP_MATH } else { CUBLAS_DEFAULT_MATH };
        // SAFETY: h is a live handle.
        check(d, "cublasSetMathMode", unsafe { (a.set_math_mode)(h, mode) })?;
        Ok(H(h))
    })
}

fn check(d: &Device, what: &str, s: Status) -> Result<()> {
    if s == 0 {
        Ok(())
    } else {
        Err(Error::new(format!("{}: {what} failed with cuBLAS status {s} ({})", d.ctx, status_name(s))))
    }
}

fn status_name(s: Status) -> &'static str {
    match s {
        1 => "NOT_INITIALIZED",
        3 => "ALLOC_FAILED",
        7 => "INVALID_VALUE",
        8 => "ARCH_MISMATCH",
        11 => "MAPPING_ERROR",
        13 => "EXECUTION_FAILED",
        14 => "INTERNAL_ERROR",
        15 => "NOT_SUPPORTED",
        16 => "LICENSE_ERROR",
        _ => "unknown",
    }
}

const CUDA_R_32F: i32 = 0;
const CUDA_R_64F: i32 = 1;
const CUDA_R_16F: i32 = 2;
const CUDA_R_16BF: i32 = 14;
const CUBLAS_COMPUTE_32F: i32 = 68;
const CUBLAS_COMPUTE_64F: i32 = 70;
const CUBLAS_GEMM_DEFAULT: i32 = -1;

/// (data type, compute type) of a float dtype.
fn types(dtype: DType) -> Option<(i32, i32)> {
    match dtype {
        DType::F32 => Some((CUDA_R_32F, CUBLAS_COMPUTE_32F)),
        DType::F64 => Some((CUDA_R_64F, CUBLAS_COMPUTE_64F)),
        DType::F16 => Some((CUDA_R_16F, CUBLAS_COMPUTE_32F)),
        DType::BF16 => Some((CUDA_R_16BF, CUBLAS_COMPUTE_32F)),
        _ => None,
    }
}

/// One row-major GEMM: `C[m, n] = alpha * op(A) @ op(B) + beta * C`, where `op(A)`
/// is `A` (`m x k`, row stride `lda`) or, with `ta`, the transpose of `A` stored as
/// `k x m`; likewise `B` (`k x n`, or `n x k` with `tb`); `C`'s row stride is `ldc`.
#[derive(Clone, Copy, Debug)]
pub struct Gemm {
    pub ta: bool,
    pub tb: bool,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub alpha: f64,
    pub beta: f64,
    pub lda: usize,
    pub ldb: usize,
    pub ldc: usize,
}

impl Gemm {
    /// Dense operands: row strides from the shapes.
    pub fn new(ta: bool, tb: bool, m: usize, n: usize, k: usize) -> Gemm {
        Gemm { ta, tb, m, n, k, alpha: 1.0, beta: 0.0, lda: if ta { m } else { k }, ldb: if tb { k } else { n }, ldc: n }
    }
    pub fn scale(mut self, alpha: f64, beta: f64) -> Gemm {
        self.alpha = alpha;
        self.beta = beta;
        self
    }
}

fn to_i32(d: &Device, v: usize, what: &str) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::new(format!("{}: GEMM {what} {v} is larger than cuBLAS's 32-bit sizes", d.ctx)))
}

/// Enqueues `g` over device addresses `a`, `b`, `c` of type `dtype` (float16,
/// float32, float64), repeated `batch` times with element strides `sa`, `sb`, `sc`
/// between the operands of consecutive products.
#[allow(clippy::too_many_arguments)]
pub fn gemm_batched(
    d: &Device,
    dtype: DType,
    g: Gemm,
    a: u64,
    sa: usize,
    b: u64,
    sb: usize,
    c: u64,
    sc: usize,
    batch: usize,
) -> Result<()> {
    if g.m == 0 || g.n == 0 || batch == 0 {
        return Ok(());
    }
    let (dt, ct) = types(dtype).ok_or_else(|| Error::new(format!("{}: GEMM on dtype {} is not supported", d.ctx, dtype.name())))?;
    let a_api = api().map_err(|e| Error::new(format!("{}: {e}", d.ctx)))?;
    let h = handle(d)?;
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the
    // operands and the sizes, keep each operand's own transpose flag.
    let (m, n, k) = (to_i32(d, g.n, "size")?, to_i32(d, g.m, "size")?, to_i32(d, g.k, "size")?);
    let (lda, ldb, ldc) = (to_i32(d, g.ldb, "stride")?, to_i32(d, g.lda, "stride")?, to_i32(d, g.ldc, "stride")?);
    let (opa, opb) = (g.tb as i32, g.ta as i32);
    let (af, bf) = (g.alpha as f32, g.beta as f32);
    let (alpha, beta): (*const c_void, *const c_void) = if ct == CUBLAS_COMPUTE_64F {
        (&g.alpha as *const f64 as *const c_void, &g.beta as *const f64 as *const c_void)
    } else {
        (&af as *const f32 as *const c_void, &bf as *const f32 as *const c_void)
    };
    d.cu.bind_to_thread().map_err(|e| super::driver_err(d.ctx, "binding the context", e))?;
    let hl = h.lock();
    let s = if batch == 1 {
        // SAFETY: the pointers are device blocks holding the operands the sizes and
        // strides describe (checked by the callers' shape inference); alpha and beta
        // live until the call returns (host pointer mode).
        unsafe {
            (a_api.gemm_ex)(
                hl.0,
                opa,
                opb,
                m,
                n,
                k,
                alpha,
                b as *const c_void,
                dt,
                lda,
                a as *const c_void,
                dt,
                ldb,
                beta,
                c as *mut c_void,
                dt,
                ldc,
                ct,
                CUBLAS_GEMM_DEFAULT,
            )
        }
    } else {
        let bc = to_i32(d, batch, "batch count")?;
        // SAFETY: as above, for `batch` products at the given element strides.
        unsafe {
            (a_api.gemm_strided_batched_ex)(
                hl.0,
                opa,
                opb,
                m,
                n,
                k,
                alpha,
                b as *const c_void,
                dt,
                lda,
                sb as i64,
                a as *const c_void,
                dt,
                ldb,
                sa as i64,
                beta,
                c as *mut c_void,
                dt,
                ldc,
                sc as i64,
                bc,
                ct,
                CUBLAS_GEMM_DEFAULT,
            )
        }
    };
    check(d, "cublasGemmEx", s)
}

/// One product (see [`gemm_batched`]).
pub fn gemm(d: &Device, dtype: DType, g: Gemm, a: u64, b: u64, c: u64) -> Result<()> {
    gemm_batched(d, dtype, g, a, 0, b, 0, c, 0, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_strides_follow_the_transposes() {
        let g = Gemm::new(false, false, 2, 3, 4);
        assert_eq!((g.lda, g.ldb, g.ldc), (4, 3, 3));
        let g = Gemm::new(true, true, 2, 3, 4);
        assert_eq!((g.lda, g.ldb, g.ldc), (2, 4, 3));
        assert!(types(DType::I32).is_none());
        assert_eq!(types(DType::F16), Some((CUDA_R_16F, CUBLAS_COMPUTE_32F)));
    }
}
