//! The `cuda` compute of registry ops: launchers over the generated kernels
//! (`kernels::cuda::gen`). [`lookup`] gives the launcher of an op by name; the
//! registry fills each op's `cuda` slot from it, so the op families need no change.
//!
//! A launcher runs inside the engine operation that declared the op's vars: it
//! enqueues the kernel on the device's stream and returns without waiting, so the
//! host is not blocked; stream order carries the engine's order on the device.

use super::{ComputeFn, OpCall};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::cuda::gen::{self, ctype, kernel_name, source_name, Family, MAX_DIMS};
use crate::shape::{self, norm_axis};
use crate::storage::cuda::{device, Device};
use cudarc::driver::{DeviceRepr, LaunchConfig};

pub(super) const BLOCK: u32 = 256;
/// Enough blocks to fill an H100 many times over; the kernels loop over the rest.
pub(super) const MAX_GRID: usize = 1 << 16;

/// A strided view (the prelude's OxStrided), shared by the launcher families.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct Strided {
    pub(super) ndim: i32,
    pub(super) shape: [i64; MAX_DIMS],
    pub(super) stride: [i64; MAX_DIMS],
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Bcast {
    ndim: i32,
    shape: [i64; MAX_DIMS],
    sa: [i64; MAX_DIMS],
    sb: [i64; MAX_DIMS],
}

/// A reduction's kept and reduced axes (the prelude's OxReduce).
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct Reduce {
    nout: i32,
    oshape: [i64; MAX_DIMS],
    ostride: [i64; MAX_DIMS],
    nred: i32,
    rshape: [i64; MAX_DIMS],
    rstride: [i64; MAX_DIMS],
    rcount: i64,
}

// SAFETY: plain #[repr(C)] data laid out as the kernels' OxStrided/OxBcast/OxReduce.
unsafe impl DeviceRepr for Strided {}
unsafe impl DeviceRepr for Bcast {}
unsafe impl DeviceRepr for Reduce {}

pub(super) fn cfg(blocks: usize) -> LaunchConfig {
    LaunchConfig { grid_dim: (blocks.clamp(1, MAX_GRID) as u32, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 }
}

pub(super) fn elems(n: usize) -> LaunchConfig {
    cfg(n.div_ceil(BLOCK as usize))
}

pub(super) fn ptr(b: &super::Blob) -> u64 {
    b.ptr as u64
}

/// A kernel argument: a pointer to a value of a type the kernels can take.
#[inline(always)]
pub(super) fn karg<T: DeviceRepr>(v: &T) -> *mut std::ffi::c_void {
    v as *const T as *mut std::ffi::c_void
}

/// Looks up `family`'s kernel `key` for type `tag` on the call's device (a per-thread
/// table: no lock, no allocation) and launches it on the device's stream with the
/// arguments listed (references to values).
macro_rules! launch {
    ($c:expr, $family:expr, $key:expr, $tag:expr, $lc:expr, [$($arg:expr),* $(,)?]) => {{
        let c: &OpCall = $c;
        let d: &Device = device(c.ctx).map_err(|e| Error::op(c.op.name, e))?;
        let (family, key, tag): (Family, &str, &str) = ($family, $key, $tag);
        let f = d
            .kernel_handle([family.name(), key, tag], || source_name(family, tag), || kernel_name(family, key, tag))
            .map_err(|e| Error::op(c.op.name, e))?;
        let mut args = [$( $crate::op::cuda::karg($arg) ),*];
        // SAFETY: the arguments match the kernel's signature (both come from `gen`),
        // and every pointer is a device block the engine gives this op.
        unsafe { d.launch_raw(f, $lc, &mut args) }.map_err(|e| Error::op(c.op.name, e))
    }};
}

/// Launches kernel `kernel` of the hand-written source `source` (see
/// `kernels::cuda::source_by_name`) on the call's device stream with the arguments
/// listed (references to values).
#[allow(unused_macros)]
macro_rules! launch_src {
    ($c:expr, $source:expr, $kernel:expr, $lc:expr, [$($arg:expr),* $(,)?]) => {{
        let c: &$crate::op::OpCall = $c;
        let d: &$crate::storage::cuda::Device = $crate::storage::cuda::device(c.ctx).map_err(|e| $crate::error::Error::op(c.op.name, e))?;
        let (source, kernel): (&str, &str) = ($source, $kernel);
        let f = d
            .kernel_handle([source, kernel, ""], || source.to_string(), || kernel.to_string())
            .map_err(|e| $crate::error::Error::op(c.op.name, e))?;
        let mut args = [$( $crate::op::cuda::karg($arg) ),*];
        // SAFETY: the arguments match the kernel's signature in its source, and every
        // pointer is a device block the engine gives this op.
        unsafe { d.launch_raw(f, $lc, &mut args) }.map_err(|e| $crate::error::Error::op(c.op.name, e))
    }};
}
#[allow(unused_imports)]
pub(super) use launch_src;

pub(super) fn too_many_dims(c: &OpCall, nd: usize) -> Error {
    Error::op(c.op.name, format!("arrays with more than {MAX_DIMS} dimensions ({nd}) are not supported on {}", c.ctx))
}

fn unary(c: &mut OpCall) -> Result<()> {
    let (x, y) = (&c.inputs[0], &c.outputs[0]);
    let n = y.size() as u64;
    let (xp, yp) = (ptr(x), ptr(y));
    launch!(c, Family::Unary, c.op.name, ctype(y.dtype).tag, elems(y.size()), [&xp, &yp, &n])
}

fn clip(c: &mut OpCall) -> Result<()> {
    let (x, y) = (&c.inputs[0], &c.outputs[0]);
    let n = y.size() as u64;
    let (xp, yp, lo, hi) = (ptr(x), ptr(y), c.params.float("a_min"), c.params.float("a_max"));
    launch!(c, Family::Unary, "clip", ctype(y.dtype).tag, elems(y.size()), [&xp, &yp, &n, &lo, &hi])
}

/// The binary op of a registry name and whether it is the reversed-scalar form.
fn binary_of(name: &str) -> Option<(&'static gen::BinOp, Family, bool)> {
    // The scatter ops are their dense counterparts on dense arrays.
    let name = match name {
        "_scatter_elemwise_div" => "elemwise_div",
        "_scatter_plus_scalar" => "_plus_scalar",
        "_scatter_minus_scalar" => "_minus_scalar",
        n => n,
    };
    gen::BINARY.iter().find_map(|b| {
        if b.elem == name {
            Some((b, Family::Binary, false))
        } else if b.bcast == name {
            Some((b, Family::Broadcast, false))
        } else if b.scalar == name {
            Some((b, Family::Scalar, false))
        } else if b.rscalar == Some(name) {
            Some((b, Family::Scalar, true))
        } else {
            None
        }
    })
}

fn binary(c: &mut OpCall) -> Result<()> {
    let (op, family, rev) = binary_of(c.op.name).ok_or_else(|| Error::op(c.op.name, "no CUDA kernel"))?;
    let y = &c.outputs[0];
    let tag = ctype(y.dtype).tag;
    let n = y.size() as u64;
    let key = op.op.key;
    match family {
        Family::Scalar => {
            let (xp, yp, s, r) = (ptr(&c.inputs[0]), ptr(y), c.params.float("scalar"), rev as i32);
            launch!(c, family, key, tag, elems(y.size()), [&xp, &yp, &n, &s, &r])
        }
        _ if c.inputs[0].shape == c.inputs[1].shape => {
            let (ap, bp, yp) = (ptr(&c.inputs[0]), ptr(&c.inputs[1]), ptr(y));
            launch!(c, Family::Binary, key, tag, elems(y.size()), [&ap, &bp, &yp, &n])
        }
        _ => {
            let nd = y.shape.len();
            if nd > MAX_DIMS {
                return Err(too_many_dims(c, nd));
            }
            let mut p = Bcast { ndim: nd as i32, shape: [1; MAX_DIMS], sa: [0; MAX_DIMS], sb: [0; MAX_DIMS] };
            let (sa, sb) = (bcast_strides(&c.inputs[0].shape, &y.shape), bcast_strides(&c.inputs[1].shape, &y.shape));
            for i in 0..nd {
                p.shape[i] = y.shape[i] as i64;
                p.sa[i] = sa[i];
                p.sb[i] = sb[i];
            }
            let (ap, bp, yp) = (ptr(&c.inputs[0]), ptr(&c.inputs[1]), ptr(y));
            launch!(c, Family::Broadcast, key, tag, elems(y.size()), [&ap, &bp, &yp, &n, &p])
        }
    }
}

/// Strides of `s` read over `out` (right-aligned; 0 on broadcast axes).
pub(super) fn bcast_strides(s: &[usize], out: &[usize]) -> Vec<i64> {
    let st = shape::strides(s);
    let pad = out.len() - s.len();
    (0..out.len()).map(|i| if i < pad || s[i - pad] == 1 { 0 } else { st[i - pad] as i64 }).collect()
}

/// The kept and reduced axes of a reduction of `shape` over `mask`.
pub(super) fn reduce_params(c: &OpCall, shape: &[usize], mask: &[bool]) -> Result<Reduce> {
    let st = shape::strides(shape);
    let (kept, red): (Vec<usize>, Vec<usize>) = (0..shape.len()).partition(|&i| !mask[i]);
    if kept.len() > MAX_DIMS || red.len() > MAX_DIMS {
        return Err(too_many_dims(c, shape.len()));
    }
    let mut p = Reduce {
        nout: kept.len() as i32,
        oshape: [1; MAX_DIMS],
        ostride: [0; MAX_DIMS],
        nred: red.len() as i32,
        rshape: [1; MAX_DIMS],
        rstride: [0; MAX_DIMS],
        rcount: red.iter().map(|&i| shape[i] as i64).product(),
    };
    for (j, &i) in kept.iter().enumerate() {
        p.oshape[j] = shape[i] as i64;
        p.ostride[j] = st[i] as i64;
    }
    for (j, &i) in red.iter().enumerate() {
        p.rshape[j] = shape[i] as i64;
        p.rstride[j] = st[i] as i64;
    }
    Ok(p)
}

fn reduce(c: &mut OpCall) -> Result<()> {
    let (x, y) = (&c.inputs[0], &c.outputs[0]);
    let mask = super::reduce::reduce_mask(c.op.name, &x.shape, c.params.opt_tuple("axis").as_deref(), c.params.bool("exclude"))?;
    let p = reduce_params(c, &x.shape, &mask)?;
    let nout = y.size() as u64;
    let (xp, yp) = (ptr(x), ptr(y));
    launch!(c, Family::Reduce, c.op.name, ctype(x.dtype).tag, cfg(y.size()), [&xp, &yp, &nout, &p])
}

/// `_copy`, `Cast` to the same type and `_copyto`, which may cross devices (host to
/// GPU, GPU to host, GPU to GPU): one unified-address copy on the stream of the
/// device the call runs on. `_copyto` then waits for it, so that the destination
/// (possibly another device's stream, or the host) sees the data.
fn copy(c: &mut OpCall) -> Result<()> {
    let (x, y) = (&c.inputs[0], &c.outputs[0]);
    let d = device(c.ctx).map_err(|e| Error::op(c.op.name, e))?;
    d.copy_any(ptr(y), ptr(x), y.size() * y.dtype.size()).map_err(|e| Error::op(c.op.name, e))?;
    if c.op.cross_device {
        d.synchronize().map_err(|e| Error::op(c.op.name, e))?;
    }
    Ok(())
}

fn cast(c: &mut OpCall) -> Result<()> {
    let (x, y) = (&c.inputs[0], &c.outputs[0]);
    if x.dtype == y.dtype {
        return copy(c);
    }
    cast_pair(c, 0)
}

/// Output `i` = input `i` converted to the output's dtype (a copy when they agree).
fn cast_pair(c: &OpCall, i: usize) -> Result<()> {
    let (x, y) = (&c.inputs[i], &c.outputs[i]);
    let (xp, yp) = (ptr(x), ptr(y));
    if x.dtype == y.dtype {
        let d = device(c.ctx).map_err(|e| Error::op(c.op.name, e))?;
        return d.copy_dtod(yp, xp, y.size() * y.dtype.size()).map_err(|e| Error::op(c.op.name, e));
    }
    let n = y.size() as u64;
    let key = format!("to_{}", ctype(y.dtype).tag);
    launch!(c, Family::Cast, &key, ctype(x.dtype).tag, elems(y.size()), [&xp, &yp, &n])
}

/// `amp_cast` and `amp_multicast`: every input converted to its output's dtype.
fn amp_cast(c: &mut OpCall) -> Result<()> {
    for i in 0..c.outputs.len().min(c.inputs.len()) {
        cast_pair(c, i)?;
    }
    Ok(())
}

fn fill(c: &mut OpCall) -> Result<()> {
    let y = &c.outputs[0];
    let v = match c.op.name {
        "_zeros" | "zeros_like" => 0.0,
        "_ones" | "ones_like" => 1.0,
        _ => c.params.float("value"),
    };
    let n = y.size() as u64;
    let yp = ptr(y);
    launch!(c, Family::Fill, "value", ctype(y.dtype).tag, elems(y.size()), [&yp, &n, &v])
}

fn softmax(c: &mut OpCall) -> Result<()> {
    let (x, y) = (&c.inputs[0], &c.outputs[0]);
    if x.dtype != y.dtype || !x.dtype.is_float() {
        return Err(Error::op(
            c.op.name,
            format!("on {} the input and output dtypes must be the same float type (got {} and {})", c.ctx, x.dtype.name(), y.dtype.name()),
        ));
    }
    if c.params.bool("use_length") {
        return Err(Error::op(c.op.name, "use_length=True is not supported"));
    }
    let ax = norm_axis(c.params.int("axis"), x.shape.len(), c.op.name)?;
    let k = x.shape.get(ax).copied().unwrap_or(1) as i64;
    let inner: usize = x.shape[(ax + 1).min(x.shape.len())..].iter().product();
    let rows = (x.size() / (k.max(1) as usize)) as u64;
    let t = c.params.opt_float("temperature").unwrap_or(1.0);
    // softmin(x) = softmax(-x): a negated temperature.
    let t = if c.op.name == "softmin" { -t } else { t };
    let take_log = (c.op.name == "log_softmax") as i32;
    let (xp, yp, inner) = (ptr(x), ptr(y), inner as i64);
    launch!(c, Family::Softmax, "axis", ctype(x.dtype).tag, cfg(rows as usize), [&xp, &yp, &rows, &k, &inner, &t, &take_log])
}

fn random(c: &mut OpCall) -> Result<()> {
    let y = &c.outputs[0];
    if !y.dtype.is_float() {
        return Err(Error::op(c.op.name, format!("dtype {} is not supported on {}", y.dtype.name(), c.ctx)));
    }
    let seed = c.rng.as_mut().ok_or_else(|| Error::op(c.op.name, "no random generator"))?.next_key();
    let (key, a, b2) = if c.op.name == "_random_uniform" {
        ("uniform", c.params.float("low"), c.params.float("high"))
    } else {
        ("normal", c.params.float("loc"), c.params.float("scale"))
    };
    let n = y.size() as u64;
    let (yp, off) = (ptr(y), 0u64);
    launch!(c, Family::Random, key, ctype(y.dtype).tag, elems(y.size()), [&yp, &n, &seed, &off, &a, &b2])
}

/// `transpose`: a strided gather (only the element size matters).
fn transpose(c: &mut OpCall) -> Result<()> {
    let (x, y) = (&c.inputs[0], &c.outputs[0]);
    let nd = x.shape.len();
    if nd > MAX_DIMS {
        return Err(too_many_dims(c, nd));
    }
    let axes = c.params.tuple("axes");
    let perm: Vec<usize> = if axes.is_empty() { (0..nd).rev().collect() } else { axes.iter().map(|&a| a as usize).collect() };
    let st = shape::strides(&x.shape);
    let mut p = Strided { ndim: nd as i32, shape: [1; MAX_DIMS], stride: [0; MAX_DIMS] };
    for (i, &a) in perm.iter().enumerate() {
        p.shape[i] = x.shape[a] as i64;
        p.stride[i] = st[a] as i64;
    }
    let tag = match y.dtype.size() {
        1 => "b1",
        2 => "b2",
        4 => "b4",
        _ => "b8",
    };
    let (n, base) = (y.size() as u64, 0i64);
    let (xp, yp) = (ptr(x), ptr(y));
    launch!(c, Family::Gather, "strided", tag, elems(y.size()), [&xp, &yp, &n, &base, &p])
}

fn index_tag(c: &OpCall, d: DType) -> Result<&'static str> {
    match d {
        DType::Bool => Err(Error::op(c.op.name, format!("bool indices are not supported on {}", c.ctx))),
        _ => Ok(ctype(d).tag),
    }
}

/// `take` with mode clip or wrap (`raise` needs a device-to-host check: not on GPU).
fn take(c: &mut OpCall) -> Result<()> {
    let (a, idx, y) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let wrap = match c.params.str("mode") {
        "wrap" => 1i32,
        "clip" => 0,
        m => return Err(Error::op(c.op.name, format!("mode='{m}' is not supported on {} (use 'clip' or 'wrap')", c.ctx))),
    };
    let ax = norm_axis(c.params.int("axis"), a.shape.len(), c.op.name)?;
    let axis_len = a.shape[ax] as i64;
    let inner: i64 = a.shape[ax + 1..].iter().product::<usize>() as i64;
    let nidx = idx.size() as i64;
    let key = format!("take_{}", index_tag(c, idx.dtype)?);
    let n = y.size() as u64;
    let (ap, ip, yp) = (ptr(a), ptr(idx), ptr(y));
    launch!(c, Family::Index, &key, ctype(a.dtype).tag, elems(y.size()), [&ap, &ip, &yp, &n, &nidx, &axis_len, &inner, &wrap])
}

fn one_hot(c: &mut OpCall) -> Result<()> {
    let (idx, y) = (&c.inputs[0], &c.outputs[0]);
    let depth = c.params.int("depth");
    let (on, off) = (c.params.float("on_value"), c.params.float("off_value"));
    let key = format!("one_hot_{}", index_tag(c, idx.dtype)?);
    let n = y.size() as u64;
    let (ip, yp) = (ptr(idx), ptr(y));
    launch!(c, Family::Index, &key, ctype(y.dtype).tag, elems(y.size()), [&ip, &yp, &n, &depth, &on, &off])
}

/// The CUDA compute of the op registered as `name`, where there is one.
pub(super) fn lookup(name: &str) -> Option<ComputeFn> {
    if gen::UNARY.iter().any(|u| u.key == name) {
        return Some(unary);
    }
    if binary_of(name).is_some() {
        return Some(binary);
    }
    if gen::REDUCE.iter().any(|r| r.key == name) {
        return Some(reduce);
    }
    if let Some(f) = super::cuda_blas::lookup(name).or_else(|| super::cuda_nn::lookup(name)).or_else(|| super::cuda_misc::lookup(name)) {
        return Some(f);
    }
    Some(match name {
        "clip" => clip,
        "_copy" | "_copyto" => copy,
        "Cast" => cast,
        "amp_cast" | "amp_multicast" => amp_cast,
        "_zeros" | "_ones" | "_full" | "zeros_like" | "ones_like" => fill,
        "softmax" | "log_softmax" | "softmin" => softmax,
        "_random_uniform" | "_random_normal" => random,
        "transpose" => transpose,
        "take" => take,
        "one_hot" => one_hot,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_elementwise_reduce_and_copy_op_has_a_cuda_launcher() {
        for name in [
            "exp",
            "relu",
            "clip",
            "elemwise_add",
            "broadcast_mul",
            "_rminus_scalar",
            "sum",
            "mean",
            "max",
            "_copyto",
            "Cast",
            "_zeros",
            "_full",
            "softmax",
            "_random_normal",
        ] {
            assert!(lookup(name).is_some(), "{name}");
            let op = super::super::lookup(name).unwrap();
            assert!(op.cuda.is_some(), "the registry fills {name}'s cuda slot");
        }
        assert!(lookup("Convolution").is_some());
        assert!(lookup("_contrib_box_nms").is_none());
    }

    #[test]
    fn every_registry_name_in_the_kernel_tables_exists() {
        for u in gen::UNARY {
            assert!(super::super::lookup(u.key).is_ok(), "unary {}", u.key);
        }
        for b in gen::BINARY {
            for n in [b.elem, b.bcast, b.scalar].into_iter().chain(b.rscalar) {
                assert!(super::super::lookup(n).is_ok(), "binary {n}");
            }
        }
        for r in gen::REDUCE {
            assert!(super::super::lookup(r.key).is_ok(), "reduce {}", r.key);
        }
    }

    #[test]
    fn struct_layouts_match_the_kernels() {
        // int + padding, then int64 arrays: as the C structs in the prelude.
        assert_eq!(std::mem::size_of::<Strided>(), 8 + 2 * 8 * MAX_DIMS);
        assert_eq!(std::mem::size_of::<Bcast>(), 8 + 3 * 8 * MAX_DIMS);
        assert_eq!(std::mem::size_of::<Reduce>(), 8 + 2 * 8 * MAX_DIMS + 8 + 2 * 8 * MAX_DIMS + 8);
        assert_eq!(bcast_strides(&[3, 1], &[2, 3, 4]), vec![0, 1, 0]);
    }

    #[test]
    fn gpu_calls_without_a_gpu_are_clear_errors() {
        if crate::storage::cuda::num_gpus() > 0 {
            return;
        }
        let e = crate::NDArray::empty(&[2], crate::Context::gpu(0), DType::F32).unwrap_err().to_string();
        assert!(e.contains("gpu(0)"), "{e}");
        let e = super::super::call(
            "_ones",
            &[],
            &[("shape", super::super::Value::Str("(2,)".into())), ("ctx", super::super::Value::Str("gpu(0)".into()))],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("gpu(0)"), "{e}");
    }
}
