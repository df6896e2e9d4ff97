//! cuDNN 9, opened at run time ([`super::libs`]): convolution forward, data gradient
//! and filter gradient through the (still supported) descriptor API.
//!
//! One handle per device on its compute stream. A plan (descriptors, and for each
//! direction the algorithm cuDNN's heuristics rank first among those that fit the
//! workspace limit, and its workspace size) is made once per (device, dtype,
//! geometry) and kept; workspaces come from the device's caching allocator.
//! float32 convolutions use FMA kernels only (no TF32) unless `OXNET_CUDA_ALLOW_TF32`
//! / `MXNET_CUDA_ALLOW_TENSOR_CORE_CONVERSION` is set, so their results match the
//! CPU's as closely as cuBLAS's; float16 and bfloat16 use tensor cores with float32
//! accumulation. Every failure is an [`Error`]; the caller falls back to its own
//! im2col + cuBLAS path. Opt-in (`OXNET_CUDNN=1`, see [`enabled`]).

use super::libs::{self, CudaLib};
use super::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

type Handle = *mut c_void;
type Desc = *mut c_void;
type Status = i32;

/// cuDNN's `cudnnConvolution*AlgoPerf_t` (the three directions share the layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct AlgoPerf {
    algo: i32,
    status: i32,
    time: f32,
    memory: usize,
    determinism: i32,
    math_type: i32,
    reserved: [i32; 3],
}

type GetAlgo = unsafe extern "C" fn(Handle, Desc, Desc, Desc, Desc, i32, *mut i32, *mut AlgoPerf) -> Status;
type GetWs = unsafe extern "C" fn(Handle, Desc, Desc, Desc, Desc, i32, *mut usize) -> Status;
type Run = unsafe extern "C" fn(
    Handle,
    *const c_void,
    Desc,
    *const c_void,
    Desc,
    *const c_void,
    Desc,
    i32,
    *mut c_void,
    usize,
    *const c_void,
    Desc,
    *mut c_void,
) -> Status;

struct Api {
    version: usize,
    create: unsafe extern "C" fn(*mut Handle) -> Status,
    set_stream: unsafe extern "C" fn(Handle, *mut c_void) -> Status,
    err_str: unsafe extern "C" fn(Status) -> *const c_char,
    create_tensor: unsafe extern "C" fn(*mut Desc) -> Status,
    set_tensor_nd: unsafe extern "C" fn(Desc, i32, i32, *const i32, *const i32) -> Status,
    create_filter: unsafe extern "C" fn(*mut Desc) -> Status,
    set_filter_nd: unsafe extern "C" fn(Desc, i32, i32, i32, *const i32) -> Status,
    create_conv: unsafe extern "C" fn(*mut Desc) -> Status,
    set_conv_nd: unsafe extern "C" fn(Desc, i32, *const i32, *const i32, *const i32, i32, i32) -> Status,
    set_group_count: unsafe extern "C" fn(Desc, i32) -> Status,
    set_math_type: unsafe extern "C" fn(Desc, i32) -> Status,
    fwd_algo: GetAlgo,
    fwd_ws: GetWs,
    fwd: Run,
    bwd_data_algo: GetAlgo,
    bwd_data_ws: GetWs,
    bwd_data: Run,
    bwd_filter_algo: GetAlgo,
    bwd_filter_ws: GetWs,
    bwd_filter: Run,
}

// SAFETY: plain function pointers into a library kept open for the process.
unsafe impl Send for Api {}
unsafe impl Sync for Api {}

static API: OnceLock<std::result::Result<Api, String>> = OnceLock::new();

fn load() -> std::result::Result<Api, String> {
    let lib = libs::open(CudaLib::Cudnn)?;
    let n = "cuDNN";
    // SAFETY: the types are cuDNN 9's documented signatures (cudnn_graph.h,
    // cudnn_ops.h, cudnn_cnn.h).
    unsafe {
        let get_version: unsafe extern "C" fn() -> usize = libs::symbol(lib, n, "cudnnGetVersion")?;
        Ok(Api {
            version: get_version(),
            create: libs::symbol(lib, n, "cudnnCreate")?,
            set_stream: libs::symbol(lib, n, "cudnnSetStream")?,
            err_str: libs::symbol(lib, n, "cudnnGetErrorString")?,
            create_tensor: libs::symbol(lib, n, "cudnnCreateTensorDescriptor")?,
            set_tensor_nd: libs::symbol(lib, n, "cudnnSetTensorNdDescriptor")?,
            create_filter: libs::symbol(lib, n, "cudnnCreateFilterDescriptor")?,
            set_filter_nd: libs::symbol(lib, n, "cudnnSetFilterNdDescriptor")?,
            create_conv: libs::symbol(lib, n, "cudnnCreateConvolutionDescriptor")?,
            set_conv_nd: libs::symbol(lib, n, "cudnnSetConvolutionNdDescriptor")?,
            set_group_count: libs::symbol(lib, n, "cudnnSetConvolutionGroupCount")?,
            set_math_type: libs::symbol(lib, n, "cudnnSetConvolutionMathType")?,
            fwd_algo: libs::symbol(lib, n, "cudnnGetConvolutionForwardAlgorithm_v7")?,
            fwd_ws: libs::symbol(lib, n, "cudnnGetConvolutionForwardWorkspaceSize")?,
            fwd: libs::symbol(lib, n, "cudnnConvolutionForward")?,
            bwd_data_algo: libs::symbol(lib, n, "cudnnGetConvolutionBackwardDataAlgorithm_v7")?,
            bwd_data_ws: libs::symbol(lib, n, "cudnnGetConvolutionBackwardDataWorkspaceSize")?,
            bwd_data: libs::symbol(lib, n, "cudnnConvolutionBackwardData")?,
            bwd_filter_algo: libs::symbol(lib, n, "cudnnGetConvolutionBackwardFilterAlgorithm_v7")?,
            bwd_filter_ws: libs::symbol(lib, n, "cudnnGetConvolutionBackwardFilterWorkspaceSize")?,
            bwd_filter: libs::symbol(lib, n, "cudnnConvolutionBackwardFilter")?,
        })
    }
}

fn api() -> std::result::Result<&'static Api, String> {
    API.get_or_init(load).as_ref().map_err(|e| e.clone())
}

/// Whether cuDNN's convolution API can be opened here.
pub fn available() -> bool {
    api().is_ok()
}

/// cuDNN's version number (e.g. 91000 for 9.10.0), when it loads.
pub fn version() -> Option<usize> {
    api().ok().map(|a| a.version)
}

/// Whether convolutions go through cuDNN: only with `OXNET_CUDNN=1` (then MXNet's
/// `cudnn_off=True` still keeps an op on im2col + cuBLAS). Measured on an H100
/// (2026-11-27, ResNet-18 training, batch 128, 32x32): im2col + cuBLAS ran 18,700
/// img/s in float32 against 10,900 through cuDNN (10,700 with TF32), and 15,200 vs
/// 8,400 with bfloat16 weights, so cuDNN is not the default until its per-call cost
/// and NCHW half-precision layouts are dealt with.
pub fn enabled() -> bool {
    static V: OnceLock<bool> = OnceLock::new();
    *V.get_or_init(|| std::env::var("OXNET_CUDNN").is_ok_and(|v| v.trim() == "1"))
}

static CALLS: AtomicU64 = AtomicU64::new(0);

/// Convolution calls (any direction) cuDNN has run so far in this process.
pub fn calls() -> u64 {
    CALLS.load(Ordering::Relaxed)
}

fn status(a: &Api, s: Status) -> String {
    // SAFETY: cudnnGetErrorString returns a static C string for any status.
    let p = unsafe { (a.err_str)(s) };
    if p.is_null() {
        format!("status {s}")
    } else {
        // SAFETY: non-null static C string.
        format!("{} ({s})", unsafe { CStr::from_ptr(p) }.to_string_lossy())
    }
}

fn check(d: &Device, a: &Api, what: &str, s: Status) -> Result<()> {
    if s == 0 {
        Ok(())
    } else {
        Err(Error::new(format!("{}: cuDNN {what} failed: {}", d.ctx, status(a, s))))
    }
}

struct H(Handle);
// SAFETY: a cuDNN handle may be used from any thread when calls on it do not
// overlap; every use holds its lock.
unsafe impl Send for H {}

static HANDLES: super::DeviceSlots<H> = super::DeviceSlots::new();

fn handle(d: &Device, a: &Api) -> Result<&'static Mutex<H>> {
    HANDLES.get_or_make(d, || {
        let mut h: Handle = std::ptr::null_mut();
        // SAFETY: out parameter; the device's context is current.
        check(d, a, "cudnnCreate", unsafe { (a.create)(&mut h) })?;
        // SAFETY: live handle; the stream belongs to the same context.
        check(d, a, "cudnnSetStream", unsafe { (a.set_stream)(h, d.stream.cu_stream() as *mut c_void) })?;
        Ok(H(h))
    })
}

const CUDNN_DATA_FLOAT: i32 = 0;
const CUDNN_DATA_DOUBLE: i32 = 1;
const CUDNN_DATA_HALF: i32 = 2;
const CUDNN_DATA_BFLOAT16: i32 = 9;
const CUDNN_TENSOR_NCHW: i32 = 0;
const CUDNN_CROSS_CORRELATION: i32 = 1;
const CUDNN_DEFAULT_MATH: i32 = 0;
const CUDNN_TENSOR_OP_MATH: i32 = 1;
const CUDNN_FMA_MATH: i32 = 3;

/// Workspace allowed per call.
const WS_LIMIT: usize = 1 << 29;

/// A convolution in cuDNN's terms: NC(D)HW data, KC(D)HW filters, symmetric padding.
/// Plain data (no allocation): it is the plan cache's key on every call.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ConvShape {
    pub dtype: DType,
    pub batch: usize,
    pub c: usize,
    pub f: usize,
    pub groups: usize,
    /// Spatial dims (1 to 3): the last `nd` entries of the arrays below are used.
    pub nd: usize,
    /// Spatial sizes of input, output and kernel, strides, dilations, paddings.
    pub x: [usize; 3],
    pub y: [usize; 3],
    pub k: [usize; 3],
    pub s: [usize; 3],
    pub d: [usize; 3],
    pub p: [usize; 3],
}

struct Plan {
    x: Desc,
    w: Desc,
    y: Desc,
    conv: Desc,
    /// (algorithm, workspace bytes) per direction; None where no algorithm fits.
    fwd: Option<(i32, usize)>,
    bwd_data: Option<(i32, usize)>,
    bwd_filter: Option<(i32, usize)>,
}
// SAFETY: the descriptors are immutable after the plan is made and only read by
// cuDNN calls made under the handle's lock.
unsafe impl Send for Plan {}
unsafe impl Sync for Plan {}

type PlanKey = (i32, ConvShape);
static PLANS: OnceLock<Mutex<HashMap<PlanKey, Arc<Plan>>>> = OnceLock::new();

use super::allow_tf32;

fn types(dt: DType) -> Option<(i32, i32)> {
    match dt {
        DType::F32 => Some((CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT)),
        DType::F64 => Some((CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE)),
        DType::F16 => Some((CUDNN_DATA_HALF, CUDNN_DATA_FLOAT)),
        DType::BF16 => Some((CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT)),
        _ => None,
    }
}

fn to_i32(v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::new(format!("cuDNN: size {v} does not fit 32 bits")))
}

fn packed(dims: &[i32]) -> Vec<i32> {
    let mut st = vec![1i32; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        st[i] = st[i + 1] * dims[i + 1];
    }
    st
}

/// The math type a float32 convolution may use, and whether a heuristic result with
/// math type `m` is acceptable for `dt`.
fn math_for(dt: DType) -> i32 {
    match dt {
        DType::F16 | DType::BF16 => CUDNN_TENSOR_OP_MATH,
        DType::F32 if allow_tf32() => CUDNN_DEFAULT_MATH,
        DType::F32 => CUDNN_FMA_MATH,
        _ => CUDNN_DEFAULT_MATH,
    }
}

fn acceptable(dt: DType, m: i32) -> bool {
    // Without TF32 allowed, only algorithms reported with FMA math: the default math
    // type permits tensor-op (TF32) kernels on Ampere and later.
    dt != DType::F32 || allow_tf32() || m == CUDNN_FMA_MATH
}

/// The FFT and non-fused Winograd algorithms of each direction, whose rounding errors
/// grow with the whole tensor's norm. Full-precision convolutions never use them: on
/// an H100 a float32 filter gradient over 40,960 products per entry came out 0.7% of
/// its largest value off with FMA math enforced (the algorithm was not recorded), and
/// within 1e-3 once these were excluded.
fn lossy(dir: Dir, algo: i32) -> bool {
    match dir {
        Dir::Forward => matches!(algo, 4 | 5 | 7),
        Dir::BackwardData => matches!(algo, 2 | 3 | 5),
        Dir::BackwardFilter => matches!(algo, 2 | 5 | 6),
    }
}

fn pick(perfs: &[AlgoPerf], dt: DType, dir: Dir) -> Option<(i32, usize)> {
    let full = matches!(dt, DType::F32 | DType::F64);
    perfs
        .iter()
        .find(|p| p.status == 0 && p.memory <= WS_LIMIT && acceptable(dt, p.math_type) && !(full && lossy(dir, p.algo)))
        .map(|p| (p.algo, p.memory))
}

fn make_plan(d: &Device, a: &Api, h: Handle, g: &ConvShape) -> Result<Plan> {
    let (data, compute) = types(g.dtype).ok_or_else(|| Error::new(format!("cuDNN: dtype {} is not supported", g.dtype.name())))?;
    // 1-D convolutions run as 2-D with a height of one (cuDNN wants 4 or 5 dims).
    let mut sp: Vec<[usize; 6]> = (3 - g.nd..3).map(|i| [g.x[i], g.y[i], g.k[i], g.s[i], g.d[i], g.p[i]]).collect();
    if sp.len() == 1 {
        sp.insert(0, [1, 1, 1, 1, 1, 0]);
    }
    let col = |j: usize| -> Result<Vec<i32>> { sp.iter().map(|v| to_i32(v[j])).collect() };
    let (xs, ys, ks) = (col(0)?, col(1)?, col(2)?);
    let (ss, ds, ps) = (col(3)?, col(4)?, col(5)?);
    let (n, c, f, gr) = (to_i32(g.batch)?, to_i32(g.c)?, to_i32(g.f)?, to_i32(g.groups)?);
    let xdims: Vec<i32> = [n, c].into_iter().chain(xs.iter().copied()).collect();
    let ydims: Vec<i32> = [n, f].into_iter().chain(ys.iter().copied()).collect();
    let wdims: Vec<i32> = [f, c / gr].into_iter().chain(ks.iter().copied()).collect();
    let nd = xdims.len() as i32;
    let (mut x, mut y, mut w, mut conv): (Desc, Desc, Desc, Desc) =
        (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: out parameters and arrays of `nd` (or nd - 2) ints that outlive the calls.
    unsafe {
        check(d, a, "cudnnCreateTensorDescriptor", (a.create_tensor)(&mut x))?;
        check(d, a, "cudnnCreateTensorDescriptor", (a.create_tensor)(&mut y))?;
        check(d, a, "cudnnCreateFilterDescriptor", (a.create_filter)(&mut w))?;
        check(d, a, "cudnnCreateConvolutionDescriptor", (a.create_conv)(&mut conv))?;
        check(d, a, "cudnnSetTensorNdDescriptor (data)", (a.set_tensor_nd)(x, data, nd, xdims.as_ptr(), packed(&xdims).as_ptr()))?;
        check(d, a, "cudnnSetTensorNdDescriptor (output)", (a.set_tensor_nd)(y, data, nd, ydims.as_ptr(), packed(&ydims).as_ptr()))?;
        check(d, a, "cudnnSetFilterNdDescriptor", (a.set_filter_nd)(w, data, CUDNN_TENSOR_NCHW, nd, wdims.as_ptr()))?;
        check(
            d,
            a,
            "cudnnSetConvolutionNdDescriptor",
            (a.set_conv_nd)(conv, nd - 2, ps.as_ptr(), ss.as_ptr(), ds.as_ptr(), CUDNN_CROSS_CORRELATION, compute),
        )?;
        check(d, a, "cudnnSetConvolutionGroupCount", (a.set_group_count)(conv, gr))?;
        check(d, a, "cudnnSetConvolutionMathType", (a.set_math_type)(conv, math_for(g.dtype)))?;
    }
    const N: usize = 16;
    let rank = |f: GetAlgo, d0: Desc, d1: Desc, d3: Desc, dir: Dir| -> Result<Option<(i32, usize)>> {
        let mut perf = [AlgoPerf::default(); N];
        let mut got = 0i32;
        // SAFETY: live handle and descriptors; perf holds N entries.
        check(d, a, "algorithm heuristics", unsafe { f(h, d0, d1, conv, d3, N as i32, &mut got, perf.as_mut_ptr()) })?;
        let perf = &perf[..(got.clamp(0, N as i32) as usize)];
        if verbose() {
            let all: Vec<(i32, i32, usize, i32)> = perf.iter().map(|p| (p.algo, p.status, p.memory, p.math_type)).collect();
            eprintln!("oxnet cuDNN {dir:?} candidates (algorithm, status, workspace, math): {all:?}");
        }
        Ok(pick(perf, g.dtype, dir))
    };
    let fwd = rank(a.fwd_algo, x, w, y, Dir::Forward)?;
    let bwd_data = rank(a.bwd_data_algo, w, y, x, Dir::BackwardData)?;
    let bwd_filter = rank(a.bwd_filter_algo, x, y, w, Dir::BackwardFilter)?;
    // The workspace each chosen algorithm needs, as cuDNN computes it for these descriptors.
    let ws = |f: GetWs, d0: Desc, d1: Desc, d3: Desc, algo: Option<(i32, usize)>| -> Result<Option<(i32, usize)>> {
        let Some((al, mem)) = algo else { return Ok(None) };
        let mut bytes = 0usize;
        // SAFETY: live handle and descriptors; out parameter.
        check(d, a, "workspace size", unsafe { f(h, d0, d1, conv, d3, al, &mut bytes) })?;
        Ok(Some((al, bytes.max(mem))))
    };
    Ok(Plan {
        fwd: ws(a.fwd_ws, x, w, y, fwd)?,
        bwd_data: ws(a.bwd_data_ws, w, y, x, bwd_data)?,
        bwd_filter: ws(a.bwd_filter_ws, x, y, w, bwd_filter)?,
        x,
        w,
        y,
        conv,
    })
}

fn verbose() -> bool {
    static V: OnceLock<bool> = OnceLock::new();
    *V.get_or_init(|| std::env::var("OXNET_CUDNN_VERBOSE").is_ok_and(|v| v.trim() == "1"))
}

fn plan(d: &Device, a: &Api, h: Handle, g: &ConvShape) -> Result<Arc<Plan>> {
    let map = PLANS.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (d.ctx.dev_id, *g);
    if let Some(p) = map.lock().get(&key) {
        return Ok(p.clone());
    }
    let p = Arc::new(make_plan(d, a, h, g)?);
    if verbose() {
        eprintln!("oxnet cuDNN plan {g:?}: forward {:?}, data gradient {:?}, filter gradient {:?} (algorithm, workspace)", p.fwd, p.bwd_data, p.bwd_filter);
    }
    map.lock().insert(key, p.clone());
    Ok(p)
}

/// Which computation of the convolution to run.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Dir {
    /// `y = conv(x, w)`.
    Forward,
    /// `dx = conv^T(dy, w)`.
    BackwardData,
    /// `dw = corr(x, dy)`.
    BackwardFilter,
}

/// Runs one direction of convolution `g` on device addresses (`x`, `w`, `y` hold
/// data, filter and output or their gradients as `dir` says; the written operand is
/// overwritten). Enqueued on the device's stream.
pub fn convolution(d: &'static Device, g: &ConvShape, dir: Dir, x: u64, w: u64, y: u64) -> Result<()> {
    let a = api().map_err(|e| Error::new(format!("{}: {e}", d.ctx)))?;
    let hm = handle(d, a)?;
    d.cu.bind_to_thread().map_err(|e| super::driver_err(d.ctx, "binding the context", e))?;
    let hl = hm.lock();
    let p = plan(d, a, hl.0, g)?;
    let chosen = match dir {
        Dir::Forward => p.fwd,
        Dir::BackwardData => p.bwd_data,
        Dir::BackwardFilter => p.bwd_filter,
    };
    let (algo, ws_bytes) =
        chosen.ok_or_else(|| Error::new(format!("{}: cuDNN has no {dir:?} algorithm for this convolution within the workspace limit", d.ctx)))?;
    let ws = d.scratch(ws_bytes.max(1))?;
    let (af, bf, ad, bd) = (1.0f32, 0.0f32, 1.0f64, 0.0f64);
    let (alpha, beta): (*const c_void, *const c_void) = if g.dtype == DType::F64 {
        (&ad as *const f64 as *const c_void, &bd as *const f64 as *const c_void)
    } else {
        (&af as *const f32 as *const c_void, &bf as *const f32 as *const c_void)
    };
    let wsp = ws.ptr as *mut c_void;
    // SAFETY: the addresses are device blocks holding the operands the plan's
    // descriptors describe (the caller's geometry comes from the op's shapes), the
    // workspace has the size cuDNN asked for, and the handle is locked.
    let s = unsafe {
        match dir {
            Dir::Forward => (a.fwd)(hl.0, alpha, p.x, x as _, p.w, w as _, p.conv, algo, wsp, ws_bytes, beta, p.y, y as *mut c_void),
            Dir::BackwardData => {
                (a.bwd_data)(hl.0, alpha, p.w, w as _, p.y, y as _, p.conv, algo, wsp, ws_bytes, beta, p.x, x as *mut c_void)
            }
            Dir::BackwardFilter => {
                (a.bwd_filter)(hl.0, alpha, p.x, x as _, p.y, y as _, p.conv, algo, wsp, ws_bytes, beta, p.w, w as *mut c_void)
            }
        }
    };
    check(d, a, &format!("convolution {dir:?} (algorithm {algo})"), s)?;
    CALLS.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_struct_matches_cudnn_layout() {
        // int, int, float, (pad), size_t, int, int, int[3] -> 48 bytes on 64-bit.
        assert_eq!(std::mem::size_of::<AlgoPerf>(), 48);
        assert_eq!(std::mem::offset_of!(AlgoPerf, memory), 16);
        assert_eq!(std::mem::offset_of!(AlgoPerf, math_type), 28);
    }

    #[test]
    fn packed_strides_and_algorithm_choice() {
        assert_eq!(packed(&[2, 3, 4, 5]), vec![60, 20, 5, 1]);
        let p = |algo, status, memory, math_type| AlgoPerf { algo, status, memory, math_type, ..Default::default() };
        // Failed or too-large entries are skipped; the first fitting one wins.
        let perfs = [p(1, 3, 0, 3), p(2, 0, WS_LIMIT + 1, 3), p(5, 0, 1024, 3), p(6, 0, 0, 3)];
        assert_eq!(pick(&perfs, DType::F16, Dir::Forward), Some((5, 1024)));
        // Full precision skips the FFT / non-fused Winograd algorithms.
        assert_eq!(pick(&perfs, DType::F32, Dir::Forward), Some((6, 0)));
        assert_eq!(pick(&[p(2, 0, 0, 3), p(1, 0, 0, 3)], DType::F64, Dir::BackwardFilter), Some((1, 0)));
        if !allow_tf32() {
            // float32 without TF32 refuses tensor-op and default-math entries.
            let perfs = [p(0, 0, 0, CUDNN_TENSOR_OP_MATH), p(1, 0, 0, CUDNN_DEFAULT_MATH), p(3, 0, 0, CUDNN_FMA_MATH)];
            assert_eq!(pick(&perfs, DType::F32, Dir::BackwardFilter), Some((3, 0)));
        }
        assert_eq!(pick(&[], DType::F32, Dir::Forward), None);
    }
}
