//! CUDA launchers of the registry ops in the "misc" family: the ops that only
//! change the shape (one device copy), the strided layout ops (one strided-copy
//! kernel per CPU `copy_view`), argmax/argmin/pick and the optimizer updates
//! (kernels in `kernels::cuda::misc`). Each mirrors its CPU compute function.

use super::cuda::{cfg, elems, launch_src, ptr, reduce_params, too_many_dims};
use super::{Blob, ComputeFn, OpCall};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::cuda::gen::{ctype, MAX_DIMS};
use crate::kernels::cuda::misc::NAME as SRC;
use crate::shape::norm_axis;
use cudarc::driver::DeviceRepr;

/// Pointers of an optimizer update: inputs in registry order, the output last.
#[repr(C)]
#[derive(Clone, Copy)]
struct P8 {
    p: [u64; 8],
}

/// Scalars of an optimizer update (see the kernels for the layout of each).
#[repr(C)]
#[derive(Clone, Copy)]
struct H16 {
    v: [f64; 16],
}

/// Up to 32 source pointers (add_n).
#[repr(C)]
#[derive(Clone, Copy)]
struct P32 {
    p: [u64; 32],
}

/// Largest number of (merged) axes of a strided copy.
const VIEW_DIMS: usize = 32;

#[repr(C)]
#[derive(Clone, Copy)]
struct View {
    ndim: i32,
    shape: [i64; VIEW_DIMS],
    ss: [i64; VIEW_DIMS],
    ds: [i64; VIEW_DIMS],
}

/// Pad's shapes: input and output shapes, padding before each axis.
#[repr(C)]
#[derive(Clone, Copy)]
struct PadP {
    nd: i32,
    mode: i32,
    is: [i64; MAX_DIMS],
    os: [i64; MAX_DIMS],
    before: [i64; MAX_DIMS],
}

// SAFETY: plain #[repr(C)] data laid out as the kernels' OxP8, OxH16, OxView, OxPad,
// and OxP32.
unsafe impl DeviceRepr for P8 {}
unsafe impl DeviceRepr for H16 {}
unsafe impl DeviceRepr for View {}
unsafe impl DeviceRepr for PadP {}
unsafe impl DeviceRepr for P32 {}

fn op_err(c: &OpCall, msg: impl std::fmt::Display) -> Error {
    Error::op(c.op.name, msg)
}

/// Tag of the kernels that only move elements of this dtype's size.
fn size_tag(d: DType) -> &'static str {
    match d.size() {
        1 => "b1",
        2 => "b2",
        4 => "b4",
        _ => "b8",
    }
}

// ---------------------------------------------------------------- plain copies

/// The ops whose output is the input's bytes in the same order (Reshape, Flatten,
/// BlockGrad, ...): one device-to-device copy, nothing when the output is the input
/// (as the CPU's `copy_bytes`, which copies the output's size).
fn copy_all(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let d = crate::storage::cuda::device(c.ctx).map_err(|e| op_err(c, e))?;
    d.copy_dtod(ptr(o), ptr(x), o.size() * o.dtype.size()).map_err(|e| op_err(c, e))
}

/// `_backward_MakeLoss`: the gradient is `grad_scale`, divided by the batch size
/// (normalization 'batch') or by the number of inputs above `valid_thresh` ('valid',
/// counted on the device by a one-block launch).
fn makeloss_bwd(c: &mut OpCall) -> Result<()> {
    let (x, dx) = (&c.inputs[0], &c.outputs[0]);
    if !matches!(dx.dtype, DType::F32 | DType::F64 | DType::F16 | DType::BF16) {
        return Err(op_err(c, format!("dtype {} is not supported (float16, bfloat16, float32 or float64)", dx.dtype.name())));
    }
    let p = c.params;
    let mut v = p.float("grad_scale");
    let mut valid = 0i32;
    match p.str("normalization") {
        "batch" => v /= x.shape.first().copied().unwrap_or(1).max(1) as f64,
        "valid" => valid = 1,
        _ => {}
    }
    let n = dx.size();
    if n == 0 {
        return Ok(());
    }
    let lc = if valid != 0 { cfg(1) } else { elems(n) };
    let (xp, yp, nn, t) = (ptr(x), ptr(dx), n as u64, p.float("valid_thresh"));
    launch_src!(c, SRC, &format!("misc_makeloss_bwd_{}", ctype(dx.dtype).tag), lc, [&xp, &yp, &nn, &v, &valid, &t])
}

// ---------------------------------------------------------------- strided copies

/// The strided index space of `shape` with source and destination strides, with
/// axes of size 1 dropped and axes contiguous in both views merged.
fn make_view(c: &OpCall, shape: &[usize], ss: &[isize], ds: &[isize]) -> Result<View> {
    let mut dims: Vec<(i64, i64, i64)> = Vec::with_capacity(shape.len());
    for i in 0..shape.len() {
        let (e, s, d) = (shape[i] as i64, ss[i] as i64, ds[i] as i64);
        if e == 1 {
            continue;
        }
        if let Some(last) = dims.last_mut() {
            if last.1 == s * e && last.2 == d * e {
                *last = (last.0 * e, s, d);
                continue;
            }
        }
        dims.push((e, s, d));
    }
    if dims.len() > VIEW_DIMS {
        return Err(op_err(c, format!("strided copies over more than {VIEW_DIMS} axes ({}) are not supported on {}", dims.len(), c.ctx)));
    }
    let mut v = View { ndim: dims.len() as i32, shape: [1; VIEW_DIMS], ss: [0; VIEW_DIMS], ds: [0; VIEW_DIMS] };
    for (k, &(e, s, d)) in dims.iter().enumerate() {
        v.shape[k] = e;
        v.ss[k] = s;
        v.ds[k] = d;
    }
    Ok(v)
}

/// The CPU's `copy_view` on the device: for every index of `shape`,
/// `dst[doff + sum(i * ds)] = src[soff + sum(i * ss)]` (strides in elements).
#[allow(clippy::too_many_arguments)]
fn view_copy(c: &OpCall, shape: &[usize], src: &Blob, soff: isize, ss: &[isize], dst: &Blob, doff: isize, ds: &[isize]) -> Result<()> {
    view_copy_ptr(c, shape, ptr(src), soff, ss, dst, doff, ds)
}

/// [`view_copy`] from a raw device address (a scratch copy of the source).
#[allow(clippy::too_many_arguments)]
fn view_copy_ptr(c: &OpCall, shape: &[usize], src: u64, soff: isize, ss: &[isize], dst: &Blob, doff: isize, ds: &[isize]) -> Result<()> {
    let n: usize = shape.iter().product();
    if n == 0 {
        return Ok(());
    }
    let v = make_view(c, shape, ss, ds)?;
    let (xp, yp, nn, so, doo) = (src, ptr(dst), n as u64, soff as i64, doff as i64);
    launch_src!(c, SRC, &format!("misc_view_{}", size_tag(dst.dtype)), elems(n), [&xp, &yp, &nn, &so, &doo, &v])
}

/// Row-major strides in elements.
fn strides_of(shape: &[usize]) -> Vec<isize> {
    let mut st = vec![1isize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        st[i] = st[i + 1] * shape[i + 1] as isize;
    }
    st
}

/// `transpose`'s strided read of `src` into `dst` (axis i of dst is axis perm[i] of src).
fn permute(c: &OpCall, src: &Blob, dst: &Blob, perm: &[usize]) -> Result<()> {
    let is = strides_of(&src.shape);
    let ss: Vec<isize> = perm.iter().map(|&p| is[p]).collect();
    view_copy(c, &dst.shape, src, 0, &ss, dst, 0, &strides_of(&dst.shape))
}

fn swap(c: &mut OpCall) -> Result<()> {
    let n = c.inputs[0].shape.len() as i64;
    let norm = |d: i64| (if d < 0 { d + n } else { d }) as usize;
    let mut perm: Vec<usize> = (0..n as usize).collect();
    perm.swap(norm(c.params.int("dim1")), norm(c.params.int("dim2")));
    permute(c, &c.inputs[0], &c.outputs[0], &perm)
}

fn concat(c: &mut OpCall) -> Result<()> {
    let (outer, total, parts) = super::shape::concat_layout(c);
    for (x, (row, off)) in c.inputs.iter().zip(parts) {
        view_copy(c, &[outer, row], x, 0, &[row as isize, 1], &c.outputs[0], off as isize, &[total as isize, 1])?;
    }
    Ok(())
}

fn stack(c: &mut OpCall) -> Result<()> {
    let o = &c.outputs[0];
    let s = &c.inputs[0].shape;
    let ax = super::shape::stack_axis(c.params.int("axis"), s.len()).unwrap_or(0);
    let outer: usize = s[..ax].iter().product();
    let inner: usize = s[ax..].iter().product();
    let k = c.inputs.len();
    for (i, x) in c.inputs.iter().enumerate() {
        view_copy(c, &[outer, inner], x, 0, &[inner as isize, 1], o, (i * inner) as isize, &[(k * inner) as isize, 1])?;
    }
    Ok(())
}

fn split(c: &mut OpCall) -> Result<()> {
    let x = &c.inputs[0];
    let s = &x.shape;
    let nd = s.len() as i64;
    let axis = c.params.int("axis");
    let ax = (if axis < 0 { axis + nd } else { axis }) as usize;
    let n = c.outputs.len();
    let outer: usize = s[..ax].iter().product();
    let inner: usize = s[ax + 1..].iter().product();
    let row = s[ax] / n * inner;
    for (k, o) in c.outputs.iter().enumerate() {
        view_copy(c, &[outer, row], x, (k * row) as isize, &[(s[ax] * inner) as isize, 1], o, 0, &[row as isize, 1])?;
    }
    Ok(())
}

fn slice(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let spec = super::shape::spec_in_compute(c, &x.shape)?;
    let (off, ss) = spec.view(&x.shape);
    view_copy(c, &o.shape, x, off, &ss, o, 0, &strides_of(&o.shape))
}

fn slice_axis(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let shapes = [&x.shape[..]];
    let a = super::InferArgs { op: c.op, params: c.params, shapes: &shapes, dtypes: &[] };
    let (ax, b, _) = super::shape::slice_axis_range(&a, &x.shape)?;
    let st = strides_of(&x.shape);
    view_copy(c, &o.shape, x, b as isize * st[ax], &st, o, 0, &strides_of(&o.shape))
}

fn overlaps(a: &Blob, b: &Blob) -> bool {
    let (a0, a1) = (a.ptr as usize, a.ptr as usize + a.size() * a.dtype.size());
    let (b0, b1) = (b.ptr as usize, b.ptr as usize + b.size() * b.dtype.size());
    a0 < b1 && b0 < a1
}

/// `_slice_assign`: lhs copied to the output (nothing in place), then rhs into the
/// region; an rhs overlapping the output is first copied aside, as on the CPU.
fn slice_assign(c: &mut OpCall) -> Result<()> {
    let (lhs, rhs, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let spec = super::shape::spec_in_compute(c, &lhs.shape)?;
    let esize = o.dtype.size();
    let d = crate::storage::cuda::device(c.ctx).map_err(|e| op_err(c, e))?;
    let rbytes = rhs.size() * esize;
    let tmp = if overlaps(rhs, o) && rbytes > 0 {
        let t = d.scratch(rbytes).map_err(|e| op_err(c, e))?;
        d.copy_dtod(t.ptr, ptr(rhs), rbytes).map_err(|e| op_err(c, e))?;
        Some(t)
    } else {
        None
    };
    let rsrc = tmp.as_ref().map_or(ptr(rhs), |t| t.ptr);
    d.copy_dtod(ptr(o), ptr(lhs), o.size() * esize).map_err(|e| op_err(c, e))?;
    let (off, ds) = spec.view(&o.shape);
    view_copy_ptr(c, &spec.out, rsrc, 0, &strides_of(&spec.out), o, off, &ds)
}

/// `_slice_assign_scalar`: data copied to the output, then the region filled.
fn slice_assign_scalar(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let spec = super::shape::spec_in_compute(c, &x.shape)?;
    let d = crate::storage::cuda::device(c.ctx).map_err(|e| op_err(c, e))?;
    d.copy_dtod(ptr(o), ptr(x), o.size() * o.dtype.size()).map_err(|e| op_err(c, e))?;
    let n: usize = spec.out.iter().product();
    if n == 0 {
        return Ok(());
    }
    let (off, ds) = spec.view(&o.shape);
    let v = make_view(c, &spec.out, &ds, &ds)?;
    let (yp, nn, doff, val) = (ptr(o), n as u64, off as i64, c.params.float("scalar"));
    launch_src!(c, SRC, &format!("misc_fill_view_{}", ctype(o.dtype).tag), elems(n), [&yp, &nn, &doff, &v, &val])
}

/// Writes `value` into every element of `o`.
fn fill(c: &OpCall, o: &Blob, value: f64) -> Result<()> {
    let n = o.size();
    if n == 0 {
        return Ok(());
    }
    let v = make_view(c, &[n], &[1], &[1])?;
    let (yp, nn, doff) = (ptr(o), n as u64, 0i64);
    launch_src!(c, SRC, &format!("misc_fill_view_{}", ctype(o.dtype).tag), elems(n), [&yp, &nn, &doff, &v, &value])
}

/// `slice_like`: the leading corner of the data shaped like the output.
fn slice_like(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    view_copy(c, &o.shape, x, 0, &strides_of(&x.shape), o, 0, &strides_of(&o.shape))
}

/// `_backward_slice_like(ograd, data)`: the gradient in the leading corner, zeros elsewhere.
fn corner_backward(c: &mut OpCall) -> Result<()> {
    let (g, o) = (&c.inputs[0], &c.outputs[0]);
    fill(c, o, 0.0)?;
    view_copy(c, &g.shape, g, 0, &strides_of(&g.shape), o, 0, &strides_of(&o.shape))
}

fn split_v2(c: &mut OpCall) -> Result<()> {
    let x = &c.inputs[0];
    let s = &x.shape;
    let (ax, bounds) = super::layout_ops::split_v2_bounds(c.op.name, c.params, s)?;
    let outer: usize = s[..ax].iter().product();
    let inner: usize = s[ax + 1..].iter().product();
    for (o, (b, e)) in c.outputs.iter().zip(bounds) {
        let row = (e - b) * inner;
        view_copy(c, &[outer, row], x, (b * inner) as isize, &[(s[ax] * inner) as isize, 1], o, 0, &[row as isize, 1])?;
    }
    Ok(())
}

fn tile(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let shapes = [&x.shape[..]];
    let a = super::InferArgs { op: c.op, params: c.params, shapes: &shapes, dtypes: &[] };
    let (ds, rs) = super::shape::tile_dims(&a, &x.shape)?;
    let st = strides_of(&ds);
    let mut shape = Vec::with_capacity(2 * ds.len());
    let mut ss = Vec::with_capacity(2 * ds.len());
    for i in 0..ds.len() {
        shape.extend([rs[i], ds[i]]);
        ss.extend([0, st[i]]);
    }
    view_copy(c, &shape, x, 0, &ss, o, 0, &strides_of(&shape))
}

fn repeat(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let shapes = [&x.shape[..]];
    let a = super::InferArgs { op: c.op, params: c.params, shapes: &shapes, dtypes: &[] };
    let (outer, len, inner, r) = super::shape::repeat_dims(&a, &x.shape)?;
    let shape = [outer, len, r, inner];
    let ss = [(len * inner) as isize, inner as isize, 0, 1];
    view_copy(c, &shape, x, 0, &ss, o, 0, &strides_of(&shape))
}

fn reverse(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let shapes = [&x.shape[..]];
    let a = super::InferArgs { op: c.op, params: c.params, shapes: &shapes, dtypes: &[] };
    let flip = super::shape::reverse_axes(&a, &x.shape)?;
    let mut ss = strides_of(&x.shape);
    let mut off = 0isize;
    for (i, f) in flip.iter().enumerate() {
        if *f && x.shape[i] > 0 {
            off += (x.shape[i] as isize - 1) * ss[i];
            ss[i] = -ss[i];
        }
    }
    view_copy(c, &o.shape, x, off, &ss, o, 0, &strides_of(&o.shape))
}

/// broadcast_to, broadcast_axis, broadcast_like: stride 0 on the broadcast axes.
fn broadcast(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    if x.shape.len() != o.shape.len() {
        return Err(op_err(c, "input and output must have the same number of dimensions"));
    }
    let mut ss = strides_of(&x.shape);
    for (i, s) in ss.iter_mut().enumerate() {
        if x.shape[i] != o.shape[i] {
            *s = 0;
        }
    }
    view_copy(c, &o.shape, x, 0, &ss, o, 0, &strides_of(&o.shape))
}

// ---------------------------------------------------------------- add_n

/// `add_n` (`ElementWiseSum`): one kernel over up to 32 sources (an input may be the
/// output: each element reads every source before it writes); more sources are
/// summed 31 at a time into a temporary that is then copied out.
fn add_n(c: &mut OpCall) -> Result<()> {
    let o = &c.outputs[0];
    let n = o.size();
    if n == 0 || c.inputs.is_empty() {
        return Ok(());
    }
    let name = format!("misc_add_n_{}", ctype(o.dtype).tag);
    let srcs: Vec<u64> = c.inputs.iter().map(ptr).collect();
    let nn = n as u64;
    let lc = elems(n);
    if srcs.len() <= 32 {
        let mut p = P32 { p: [0; 32] };
        p.p[..srcs.len()].copy_from_slice(&srcs);
        let (yp, k) = (ptr(o), srcs.len() as i32);
        return launch_src!(c, SRC, &name, lc, [&yp, &nn, &p, &k]);
    }
    let bytes = n * o.dtype.size();
    let d = crate::storage::cuda::device(c.ctx).map_err(|e| op_err(c, e))?;
    let tmp = d.scratch(bytes).map_err(|e| op_err(c, e))?;
    let mut p = P32 { p: [0; 32] };
    p.p.copy_from_slice(&srcs[..32]);
    let (tp, k) = (tmp.ptr, 32i32);
    launch_src!(c, SRC, &name, lc, [&tp, &nn, &p, &k])?;
    for chunk in srcs[32..].chunks(31) {
        let mut p = P32 { p: [0; 32] };
        p.p[0] = tmp.ptr;
        p.p[1..=chunk.len()].copy_from_slice(chunk);
        let k = chunk.len() as i32 + 1;
        launch_src!(c, SRC, &name, lc, [&tp, &nn, &p, &k])?;
    }
    d.copy_dtod(ptr(o), tmp.ptr, bytes).map_err(|e| op_err(c, e))
}

// ---------------------------------------------------------------- where, Pad

/// `where`: the condition has x's shape or is one value per row of x.
fn where_(c: &mut OpCall) -> Result<()> {
    let (cb, x, y, o) = (&c.inputs[0], &c.inputs[1], &c.inputs[2], &c.outputs[0]);
    let group = if cb.shape == x.shape { 1 } else { x.shape[1..].iter().product::<usize>() };
    let n = o.size();
    if n == 0 {
        return Ok(());
    }
    let name = format!("misc_where_{}_{}", size_tag(x.dtype), ctype(cb.dtype).tag);
    let (cp, xp, yp, op, nn, gr) = (ptr(cb), ptr(x), ptr(y), ptr(o), n as u64, group.max(1) as u64);
    launch_src!(c, SRC, &name, elems(n), [&cp, &xp, &yp, &op, &nn, &gr])
}

/// Pad's shapes for data of shape `s` padded to `os`.
fn pad_params(c: &OpCall, s: &[usize], os: &[usize]) -> Result<PadP> {
    let w = super::pad::pad_widths(c.op.name, c.params, s)?;
    if s.len() > MAX_DIMS {
        return Err(too_many_dims(c, s.len()));
    }
    let mode = match c.params.str("mode") {
        "constant" => 0,
        "edge" => 1,
        _ => 2,
    };
    let mut p = PadP { nd: s.len() as i32, mode, is: [1; MAX_DIMS], os: [1; MAX_DIMS], before: [0; MAX_DIMS] };
    for d in 0..s.len() {
        p.is[d] = s[d] as i64;
        p.os[d] = os[d] as i64;
        p.before[d] = w[d].0 as i64;
    }
    Ok(p)
}

fn pad(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let p = pad_params(c, &x.shape, &o.shape)?;
    let n = o.size();
    if n == 0 {
        return Ok(());
    }
    let (xp, yp, nn, v) = (ptr(x), ptr(o), n as u64, c.params.float("constant_value"));
    launch_src!(c, SRC, &format!("misc_pad_{}", ctype(x.dtype).tag), elems(n), [&xp, &yp, &nn, &p, &v])
}

/// `_backward_Pad(ograd, data)`: every output gradient added (in float64, as the
/// CPU) to the element it came from.
fn pad_backward(c: &mut OpCall) -> Result<()> {
    let (g, o) = (&c.inputs[0], &c.outputs[0]);
    let p = pad_params(c, &o.shape, &g.shape)?;
    let (n, ng) = (o.size(), g.size());
    if n == 0 {
        return Ok(());
    }
    let d = crate::storage::cuda::device(c.ctx).map_err(|e| op_err(c, e))?;
    let acc = d.scratch(n * 8).map_err(|e| op_err(c, e))?;
    let tag = ctype(o.dtype).tag;
    let (ap, gp, yp, nn, ngg) = (acc.ptr, ptr(g), ptr(o), n as u64, ng as u64);
    launch_src!(c, SRC, "misc_zero_f64", elems(n), [&ap, &nn])?;
    if ng > 0 {
        launch_src!(c, SRC, &format!("misc_pad_bwd_{tag}"), elems(ng), [&gp, &ap, &ngg, &p])?;
    }
    launch_src!(c, SRC, &format!("misc_from_f64_{tag}"), elems(n), [&ap, &yp, &nn])
}

// ---------------------------------------------------------------- argmax, pick

/// argmax, argmin, argmax_channel: positions in the input's dtype, the first one on
/// ties, NaN beating every number (the CPU's `ArgR`).
fn arg(c: &mut OpCall) -> Result<()> {
    let (x, y) = (&c.inputs[0], &c.outputs[0]);
    if x.dtype == DType::Bool {
        return Err(op_err(c, "bool input is not supported (positions are returned in the input's dtype)"));
    }
    let axis = if c.op.name == "argmax_channel" { Some(1) } else { c.params.opt_int("axis") };
    let (outer, red, inner) = match axis {
        None => (1usize, x.size(), 1usize),
        Some(a) => {
            let ax = norm_axis(a, x.shape.len(), c.op.name)?;
            (x.shape[..ax].iter().product(), x.shape[ax], x.shape[ax + 1..].iter().product())
        }
    };
    let nout = outer * inner;
    if nout == 0 || y.size() == 0 {
        return Ok(());
    }
    if red == 0 {
        return Err(op_err(c, "cannot reduce an axis of size 0"));
    }
    let key = if c.op.name == "argmin" { "argmin" } else { "argmax" };
    let (xp, yp, o, r, i) = (ptr(x), ptr(y), outer as i64, red as i64, inner as i64);
    launch_src!(c, SRC, &format!("misc_{key}_{}", ctype(x.dtype).tag), cfg(nout), [&xp, &yp, &o, &r, &i])
}

/// pick (clip or wrap); indices of any dtype, floats truncated toward zero.
fn pick(c: &mut OpCall) -> Result<()> {
    let (d, idx, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let ax = norm_axis(c.params.opt_int("axis").unwrap_or(-1), d.shape.len(), c.op.name)?;
    let n = d.shape[ax];
    let inner: usize = d.shape[ax + 1..].iter().product();
    let nout = idx.size().min(o.size());
    if nout == 0 {
        return Ok(());
    }
    if n == 0 {
        return Err(op_err(c, format!("cannot pick from axis {ax} of size 0")));
    }
    let wrap = (c.params.str("mode") == "wrap") as i32;
    let name = format!("misc_pick_{}_{}", size_tag(d.dtype), ctype(idx.dtype).tag);
    let (xp, ip, yp, nn, n, inner) = (ptr(d), ptr(idx), ptr(o), nout as u64, n as i64, inner as i64);
    launch_src!(c, SRC, &name, elems(nout), [&xp, &ip, &yp, &nn, &n, &inner, &wrap])
}

// ---------------------------------------------------------------- topk, sort, argsort

/// Longest axis the per-line shared-memory sort handles.
const SORT_MAX: usize = 2048;

/// topk, sort and argsort: one block per line sorts (value, position) pairs in the
/// CPU's total order (NaN above every number, ties by position).
fn topk(c: &mut OpCall) -> Result<()> {
    let x = &c.inputs[0];
    if matches!(x.dtype, DType::Bool) {
        return Err(op_err(c, format!("dtype {} is not supported on {}", x.dtype.name(), c.ctx)));
    }
    let (outer, n, inner) = match c.params.opt_int("axis") {
        None => (1usize, x.size(), 1usize),
        Some(a) => {
            let ax = norm_axis(a, x.shape.len(), c.op.name)?;
            (x.shape[..ax].iter().product(), x.shape[ax], x.shape[ax + 1..].iter().product())
        }
    };
    let lines = outer * inner;
    if lines == 0 || n == 0 {
        return Ok(());
    }
    if n > SORT_MAX {
        return Err(op_err(c, format!("sorting along an axis longer than {SORT_MAX} (got {n}) is not supported on {}", c.ctx)));
    }
    let (k, ascend, flags, vals, idx, mask): (usize, bool, i32, Option<&Blob>, Option<&Blob>, Option<&Blob>) = match c.op.name {
        "sort" => (n, c.params.bool("is_ascend"), 1, Some(&c.outputs[0]), None, None),
        "argsort" => (n, c.params.bool("is_ascend"), 2, None, Some(&c.outputs[0]), None),
        _ => {
            let k = c.params.int("k");
            let k = if k < 1 { n } else { (k as usize).min(n) };
            let o = c.outputs;
            let asc = c.params.bool("is_ascend");
            match c.params.str("ret_typ") {
                "value" => (k, asc, 1, Some(&o[0]), None, None),
                "mask" => (k, asc, 4, None, None, Some(&o[0])),
                "both" => (k, asc, 3, Some(&o[0]), Some(&o[1]), None),
                _ => (k, asc, 2, None, Some(&o[0]), None),
            }
        }
    };
    let utag = match idx.map(|b| b.dtype) {
        None => "f32",
        Some(d @ (DType::F32 | DType::F64 | DType::F16 | DType::BF16 | DType::U8 | DType::I32 | DType::I64)) => ctype(d).tag,
        Some(d) => return Err(op_err(c, format!("index dtype {} is not supported on {}", d.name(), c.ctx))),
    };
    let name = format!("misc_topk_{}_{utag}", ctype(x.dtype).tag);
    let (xp, vp, ip, mp) = (ptr(x), vals.map_or(0, ptr), idx.map_or(0, ptr), mask.map_or(0, ptr));
    let (nn, inn, ln, kk, asc, fl) = (n as i64, inner as i64, lines as i64, k as i64, ascend as i32, flags);
    launch_src!(c, SRC, &name, cfg(lines), [&xp, &vp, &ip, &mp, &nn, &inn, &ln, &kk, &asc, &fl])
}

// ---------------------------------------------------------------- norm, all_finite, multi_sum_sq

/// `moments`: per output, the mean then the centred variance, in float64.
fn moments(c: &mut OpCall) -> Result<()> {
    let x = &c.inputs[0];
    if x.dtype == DType::Bool {
        return Err(op_err(c, format!("dtype bool is not supported on {}", c.ctx)));
    }
    let mask = super::reduce::reduce_mask(c.op.name, &x.shape, c.params.opt_tuple("axes").as_deref(), false)?;
    let p = reduce_params(c, &x.shape, &mask)?;
    let out_n = c.outputs[0].size();
    if out_n == 0 {
        return Ok(());
    }
    let count = (x.size() / out_n.max(1)).max(1) as f64;
    let (xp, mp, vp) = (ptr(x), ptr(&c.outputs[0]), ptr(&c.outputs[1]));
    launch_src!(c, SRC, &format!("misc_moments_{}", ctype(x.dtype).tag), cfg(out_n), [&xp, &mp, &vp, &p, &count])
}

/// `smooth_l1` and `_backward_smooth_l1` (elementwise, in float64 as the CPU).
fn smooth_l1(c: &mut OpCall) -> Result<()> {
    let o = &c.outputs[0];
    let n = o.size();
    if n == 0 {
        return Ok(());
    }
    if o.dtype == DType::Bool {
        return Err(op_err(c, format!("dtype bool is not supported on {}", c.ctx)));
    }
    let s2 = c.params.float("scalar").powi(2);
    let (yp, nn, tag) = (ptr(o), n as u64, ctype(o.dtype).tag);
    if c.op.name == "smooth_l1" {
        let xp = ptr(&c.inputs[0]);
        launch_src!(c, SRC, &format!("misc_smooth_l1_{tag}"), elems(n), [&xp, &yp, &nn, &s2])
    } else {
        let (gp, xp) = (ptr(&c.inputs[0]), ptr(&c.inputs[1]));
        launch_src!(c, SRC, &format!("misc_smooth_l1_bwd_{tag}"), elems(n), [&gp, &xp, &yp, &nn, &s2])
    }
}

/// `norm` (ord 1 or 2 over `axis`): per output, in float64 as the CPU (float64 data
/// with the overflow-safe scaled sum of squares), then stored in the output dtype.
fn norm(c: &mut OpCall) -> Result<()> {
    let (x, y) = (&c.inputs[0], &c.outputs[0]);
    if x.dtype == DType::Bool || y.dtype == DType::Bool || y.dtype == DType::U8 {
        return Err(op_err(c, format!("dtype {} -> {} is not supported on {}", x.dtype.name(), y.dtype.name(), c.ctx)));
    }
    let mask = super::reduce::reduce_mask(c.op.name, &x.shape, c.params.opt_tuple("axis").as_deref(), false)?;
    let p = reduce_params(c, &x.shape, &mask)?;
    let nout = y.size();
    if nout == 0 {
        return Ok(());
    }
    let mode: i32 = if c.params.int("ord") == 1 {
        0
    } else if x.dtype == DType::F64 {
        2
    } else {
        1
    };
    let d = crate::storage::cuda::device(c.ctx).map_err(|e| op_err(c, e))?;
    let acc = d.scratch(nout * 8).map_err(|e| op_err(c, e))?;
    let (xp, ap, yp, nn) = (ptr(x), acc.ptr, ptr(y), nout as u64);
    launch_src!(c, SRC, &format!("misc_norm_{}", ctype(x.dtype).tag), cfg(nout), [&xp, &ap, &p, &mode])?;
    launch_src!(c, SRC, &format!("misc_store_f64_{}", ctype(y.dtype).tag), elems(nout), [&ap, &yp, &nn])
}

/// `all_finite`, `multi_all_finite`: the float32 flag set to 1 (init_output), then to
/// 0 by any non-finite element of a float input.
fn all_finite(c: &mut OpCall) -> Result<()> {
    let o = &c.outputs[0];
    if o.dtype != DType::F32 || o.size() < 1 {
        return Err(op_err(c, "the output must be one float32"));
    }
    let op = ptr(o);
    if c.params.bool("init_output") {
        let one = 1.0f32;
        launch_src!(c, SRC, "misc_set_f32", cfg(1), [&op, &one])?;
    }
    for b in c.inputs {
        let n = b.size();
        if !b.dtype.is_float() || n == 0 {
            continue;
        }
        let (bp, nn) = (ptr(b), n as u64);
        launch_src!(c, SRC, &format!("misc_finite_{}", ctype(b.dtype).tag), elems(n), [&bp, &nn, &op])?;
    }
    Ok(())
}

/// `multi_sum_sq`: the sum of squares of each input (float64 partial sums) as float32.
fn multi_sum_sq(c: &mut OpCall) -> Result<()> {
    let o = &c.outputs[0];
    let k = c.inputs.len();
    if k == 0 {
        return Ok(());
    }
    let d = crate::storage::cuda::device(c.ctx).map_err(|e| op_err(c, e))?;
    let acc = d.scratch(k * 8).map_err(|e| op_err(c, e))?;
    let (ap, kk) = (acc.ptr, k as u64);
    launch_src!(c, SRC, "misc_zero_f64", elems(k), [&ap, &kk])?;
    for (j, b) in c.inputs.iter().enumerate() {
        let n = b.size();
        if n == 0 {
            continue;
        }
        let (bp, nn, aj) = (ptr(b), n as u64, acc.ptr + 8 * j as u64);
        launch_src!(c, SRC, &format!("misc_sum_sq_{}", ctype(b.dtype).tag), elems(n), [&bp, &nn, &aj])?;
    }
    let (op, nout) = (ptr(o), o.size().min(k) as u64);
    launch_src!(c, SRC, &format!("misc_store_f64_{}", ctype(o.dtype).tag), elems(k), [&ap, &op, &nout])
}

/// `reset_arrays`: every input (written in place) set to zero.
fn reset_arrays(c: &mut OpCall) -> Result<()> {
    for b in c.inputs {
        fill(c, b, 0.0)?;
    }
    Ok(())
}

// ---------------------------------------------------------------- _arange, _eye, _linspace

fn arange(c: &mut OpCall) -> Result<()> {
    let o = &c.outputs[0];
    let n = o.size();
    if n == 0 {
        return Ok(());
    }
    let p = c.params;
    let (start, step) = match p.opt_float("stop") {
        Some(_) => (p.float("start"), p.float("step")),
        None => (0.0, p.float("step")),
    };
    let repeat = p.int("repeat").max(1);
    let is_int = (!o.dtype.is_float()) as i32;
    let (yp, nn, si, sti) = (ptr(o), n as u64, start.trunc() as i64, step.trunc() as i64);
    launch_src!(c, SRC, &format!("misc_arange_{}", ctype(o.dtype).tag), elems(n), [&yp, &nn, &repeat, &start, &step, &si, &sti, &is_int])
}

fn eye(c: &mut OpCall) -> Result<()> {
    let o = &c.outputs[0];
    let n = o.size();
    if n == 0 {
        return Ok(());
    }
    let (yp, rows, cols, k) = (ptr(o), o.shape[0] as i64, o.shape[1] as i64, c.params.int("k"));
    launch_src!(c, SRC, &format!("misc_eye_{}", ctype(o.dtype).tag), elems(n), [&yp, &rows, &cols, &k])
}

fn linspace(c: &mut OpCall) -> Result<()> {
    let o = &c.outputs[0];
    let (start, stop, n) = (c.params.float("start"), c.params.float("stop"), c.params.int("num").max(0) as usize);
    let endpoint = c.params.bool("endpoint");
    let div = if endpoint { n.saturating_sub(1) } else { n };
    let step = if div > 0 { (stop - start) / div as f64 } else { 0.0 };
    let count = o.size().min(n);
    if count == 0 {
        return Ok(());
    }
    let last = (endpoint && n > 1 && count == n) as i32;
    let (yp, nn) = (ptr(o), count as u64);
    launch_src!(c, SRC, &format!("misc_linspace_{}", ctype(o.dtype).tag), elems(count), [&yp, &nn, &start, &step, &stop, &last])
}

// ---------------------------------------------------------------- Sequence*

/// The lengths of the items (device int64, clamped to [0, t]) when the op uses its
/// `sequence_length` input `which`; None: every item has length t.
fn seq_lengths(c: &OpCall, which: usize, t: usize, b: usize) -> Result<Option<crate::storage::cuda::Scratch>> {
    if !c.params.bool("use_sequence_length") || c.inputs.len() <= which || b == 0 {
        return Ok(None);
    }
    let l = &c.inputs[which];
    let d = crate::storage::cuda::device(c.ctx).map_err(|e| op_err(c, e))?;
    let s = d.scratch(b * 8).map_err(|e| op_err(c, e))?;
    let (lp, sp, bb, tt) = (ptr(l), s.ptr, b as u64, t as i64);
    launch_src!(c, SRC, &format!("misc_seq_len_{}", ctype(l.dtype).tag), elems(b), [&lp, &sp, &bb, &tt])?;
    Ok(Some(s))
}

/// (t, b, r) of sequence data with the sequence on axis 0 (else 1).
fn seq_dims(x: &[usize], axis0: bool) -> (usize, usize, usize) {
    let (t, b) = if axis0 { (x[0], x[1]) } else { (x[1], x[0]) };
    (t, b, x[2..].iter().product())
}

fn sequence(c: &mut OpCall) -> Result<()> {
    let o = &c.outputs[0];
    let axis0 = c.params.int("axis") == 0;
    let data = if c.op.name == "_backward_SequenceLast" { &c.inputs[1] } else { &c.inputs[0] };
    if data.shape.len() < 2 {
        return Err(op_err(c, "data must have at least 2 dimensions"));
    }
    let (t, b, r) = seq_dims(&data.shape, axis0);
    let n = o.size();
    if n == 0 {
        return Ok(());
    }
    let which = if c.op.name == "_backward_SequenceLast" { 2 } else { 1 };
    let lens = seq_lengths(c, which, t, b)?;
    let lp = lens.as_ref().map_or(0, |s| s.ptr);
    let tag = ctype(o.dtype).tag;
    let (x, yp, nn, tt, bb, rr, ax) = (ptr(&c.inputs[0]), ptr(o), n as u64, t as i64, b as i64, r as i64, axis0 as i32);
    match c.op.name {
        "SequenceMask" => {
            let v = c.params.float("value");
            launch_src!(c, SRC, &format!("misc_seq_mask_{tag}"), elems(n), [&x, &yp, &lp, &nn, &tt, &bb, &rr, &ax, &v])
        }
        "SequenceLast" => {
            if t == 0 {
                return Err(op_err(c, "the sequence axis is empty"));
            }
            launch_src!(c, SRC, &format!("misc_seq_last_{tag}"), elems(n), [&x, &yp, &lp, &tt, &bb, &rr, &ax])
        }
        "_backward_SequenceLast" => {
            launch_src!(c, SRC, &format!("misc_seq_last_bwd_{tag}"), elems(n), [&x, &yp, &lp, &nn, &tt, &bb, &rr, &ax])
        }
        _ => launch_src!(c, SRC, &format!("misc_seq_reverse_{tag}"), elems(n), [&x, &yp, &lp, &nn, &tt, &bb, &rr]),
    }
}

// ---------------------------------------------------------------- optimizer updates

/// The optimizer updates: one elementwise kernel each, writing the states in place
/// (mutate inputs) and the new weight to the output (which may be the weight).
/// The scalars are laid out as each kernel reads them (see `kernels::cuda::misc`).
fn update(c: &mut OpCall) -> Result<()> {
    let o = &c.outputs[0];
    if !matches!(o.dtype, DType::F32 | DType::F64 | DType::F16 | DType::BF16) {
        return Err(op_err(c, format!("weight dtype {} is not supported (float16, bfloat16, float32 or float64)", o.dtype.name())));
    }
    if c.inputs.len() > 7 {
        return Err(op_err(c, "too many inputs"));
    }
    let mut p = P8 { p: [0; 8] };
    for (k, b) in c.inputs.iter().enumerate() {
        p.p[k] = ptr(b);
    }
    p.p[7] = ptr(o);
    let f = |n: &str| c.params.float(n);
    let mut h = H16 { v: [0.0; 16] };
    let cg = f("clip_gradient");
    h.v[..5].copy_from_slice(&[f("lr"), f("wd"), f("rescale_grad"), cg, (cg >= 0.0) as i32 as f64]);
    let extra: Vec<f64> = match c.op.name {
        "sgd_update" | "mp_sgd_update" | "signsgd_update" => vec![],
        "sgd_mom_update" | "nag_mom_update" | "mp_sgd_mom_update" | "mp_nag_mom_update" => vec![f("momentum")],
        "adam_update" => vec![f("beta1"), f("beta2"), f("epsilon")],
        "ftml_update" => {
            let t = c.params.int("t") as i32;
            let cgr = f("clip_grad");
            vec![f("beta1"), f("beta2"), f("epsilon"), f("beta1").powi(t), f("beta2").powi(t), cgr, (cgr >= 0.0) as i32 as f64]
        }
        "rmsprop_update" => {
            let cw = f("clip_weights");
            vec![f("gamma1"), f("epsilon"), cw, (cw >= 0.0) as i32 as f64]
        }
        "rmspropalex_update" => {
            let cw = f("clip_weights");
            vec![f("gamma1"), f("gamma2"), f("epsilon"), cw, (cw >= 0.0) as i32 as f64]
        }
        "ftrl_update" => vec![f("lamda1"), f("beta")],
        "signum_update" => vec![f("momentum"), f("wd_lh")],
        "lamb_update_phase1" => {
            let (b1, b2, t) = (f("beta1"), f("beta2"), c.params.int("t") as i32);
            let (c1, c2) = if c.params.bool("bias_correction") { (1.0 - b1.powi(t), 1.0 - b2.powi(t)) } else { (1.0, 1.0) };
            vec![b1, b2, f("epsilon"), c1, c2]
        }
        "lamb_update_phase2" => vec![f("lower_bound"), f("upper_bound")],
        "adagrad_update" => vec![f("epsilon")],
        "adadelta_update" => vec![f("rho"), f("epsilon")],
        _ => return Err(op_err(c, "no CUDA kernel")),
    };
    h.v[5..5 + extra.len()].copy_from_slice(&extra);
    let n = o.size();
    if n == 0 {
        return Ok(());
    }
    let nn = n as u64;
    launch_src!(c, SRC, &format!("misc_{}_{}", c.op.name, ctype(o.dtype).tag), elems(n), [&nn, &p, &h])
}

/// The optimizer update ops with a CUDA kernel.
const UPDATES: &[&str] = &[
    "sgd_update",
    "sgd_mom_update",
    "nag_mom_update",
    "mp_sgd_update",
    "mp_sgd_mom_update",
    "mp_nag_mom_update",
    "adam_update",
    "rmsprop_update",
    "rmspropalex_update",
    "signsgd_update",
    "signum_update",
    "adagrad_update",
    "adadelta_update",
    "ftml_update",
    "ftrl_update",
    "lamb_update_phase1",
    "lamb_update_phase2",
];

/// The CUDA compute of the op registered as `name`, where this family has one.
pub(super) fn lookup(name: &str) -> Option<ComputeFn> {
    if UPDATES.contains(&name) {
        return Some(update);
    }
    Some(match name {
        "Reshape"
        | "Flatten"
        | "expand_dims"
        | "squeeze"
        | "reshape_like"
        | "_identity_with_attr_like_rhs"
        | "BlockGrad"
        | "make_loss"
        | "MakeLoss" => copy_all,
        "SwapAxis" => swap,
        "Concat" => concat,
        "stack" => stack,
        "SliceChannel" => split,
        "slice" => slice,
        "slice_axis" => slice_axis,
        "_slice_assign" => slice_assign,
        "_slice_assign_scalar" => slice_assign_scalar,
        "_backward_MakeLoss" => makeloss_bwd,
        "tile" => tile,
        "repeat" => repeat,
        "reverse" => reverse,
        "broadcast_to" | "broadcast_axis" | "broadcast_like" => broadcast,
        "argmax" | "argmin" | "argmax_channel" => arg,
        "pick" => pick,
        "_arange" => arange,
        "_eye" => eye,
        "_linspace" => linspace,
        "SequenceMask" | "SequenceLast" | "SequenceReverse" | "_backward_SequenceLast" => sequence,
        "norm" => norm,
        "moments" => moments,
        "smooth_l1" | "_backward_smooth_l1" => smooth_l1,
        "all_finite" | "multi_all_finite" => all_finite,
        "multi_sum_sq" => multi_sum_sq,
        "reset_arrays" => reset_arrays,
        "topk" | "sort" | "argsort" => topk,
        "where" => where_,
        "add_n" => add_n,
        "slice_like" => slice_like,
        "_backward_slice_like" => corner_backward,
        "_split_v2" => split_v2,
        "Pad" => pad,
        "_backward_Pad" => pad_backward,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every op this family covers.
    pub(super) const COVERED: &[&str] = &[
        "Reshape",
        "Flatten",
        "expand_dims",
        "squeeze",
        "reshape_like",
        "_identity_with_attr_like_rhs",
        "BlockGrad",
        "make_loss",
        "MakeLoss",
        "SwapAxis",
        "Concat",
        "stack",
        "SliceChannel",
        "slice",
        "slice_axis",
        "_slice_assign",
        "_slice_assign_scalar",
        "_backward_MakeLoss",
        "tile",
        "repeat",
        "reverse",
        "broadcast_to",
        "broadcast_axis",
        "broadcast_like",
        "argmax",
        "argmin",
        "argmax_channel",
        "pick",
        "moments",
        "smooth_l1",
        "_backward_smooth_l1",
        "_arange",
        "_eye",
        "_linspace",
        "SequenceMask",
        "SequenceLast",
        "SequenceReverse",
        "_backward_SequenceLast",
        "norm",
        "all_finite",
        "multi_all_finite",
        "multi_sum_sq",
        "reset_arrays",
        "topk",
        "sort",
        "argsort",
        "where",
        "add_n",
        "slice_like",
        "_backward_slice_like",
        "_split_v2",
        "Pad",
        "_backward_Pad",
    ];

    #[test]
    fn every_covered_op_has_its_cuda_slot_filled() {
        for name in COVERED.iter().chain(UPDATES) {
            assert!(lookup(name).is_some(), "{name}");
            let op = super::super::lookup(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(op.name, *name, "{name} is the registry name, not an alias");
            assert!(op.cuda.is_some(), "the registry fills {name}'s cuda slot");
        }
        for alias in ["reshape", "flatten", "stop_gradient", "concat", "split", "flip", "swapaxes", "crop"] {
            assert!(super::super::lookup(alias).unwrap().cuda.is_some(), "{alias}");
        }
        assert!(lookup("_copy").is_none(), "_copy stays with op::cuda");
    }

    #[test]
    fn struct_layouts_match_the_kernels() {
        assert_eq!(std::mem::size_of::<P8>(), 64);
        assert_eq!(std::mem::size_of::<H16>(), 128);
        assert_eq!(std::mem::size_of::<P32>(), 256);
        assert_eq!(std::mem::size_of::<super::super::cuda::Reduce>(), 8 + 2 * 8 * MAX_DIMS + 8 + 2 * 8 * MAX_DIMS + 8);
        // int + padding, then three int64 arrays: as OxView.
        assert_eq!(std::mem::size_of::<View>(), 8 + 3 * 8 * VIEW_DIMS);
        // two ints, then three int64 arrays: as OxPad.
        assert_eq!(std::mem::size_of::<PadP>(), 8 + 3 * 8 * MAX_DIMS);
    }

    #[test]
    fn every_kernel_a_launcher_names_is_in_the_source() {
        let src = crate::kernels::cuda::misc::source();
        // The instantiating macros paste the names; check the macro calls instead.
        for name in UPDATES {
            assert!(src.contains(&format!("OX_OPT_ALL({name},")), "{name}");
        }
        for m in [
            "OX_ARG_KERNELS(f32, float)",
            "OX_PICK_I(b4, unsigned int)",
            "OX_VIEW(b8, unsigned long long)",
            "OX_FILL_VIEW(bool, ox_bool)",
            "OX_MAKELOSS(f16, ox_f16)",
            "OX_WHERE_I(b8, unsigned long long)",
            "OX_PAD(bool, ox_bool)",
            "OX_ADD_N(bool, ox_bool)",
        ] {
            assert!(src.contains(m), "{m}");
        }
    }

    #[test]
    fn strides() {
        assert_eq!(strides_of(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(strides_of(&[]), Vec::<isize>::new());
    }
}
