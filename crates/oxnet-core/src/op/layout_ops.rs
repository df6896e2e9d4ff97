//! Shape and layout ops built on strided copies and index arithmetic: `diag`,
//! `depth_to_space`, `space_to_depth`, `slice_like`, `shape_array`, `size_array`,
//! `_split_v2`, `add_n` (`ElementWiseSum`), `batch_take`, `ravel_multi_index`,
//! `unravel_index`, `_linspace`, `khatri_rao`, `_onehot_encode` and
//! `fill_element_0index`, with the backward ops their gradients need.

use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::kernels::cpu::elemwise as k;
use crate::kernels::cpu::layout::{strided_copy, strides_of};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};
use crate::with_dtype;

type Out = Result<Vec<(Shape, DType)>>;
type Grads = Result<Vec<Option<NDArray>>>;

const DATA: Arity = Arity::Fixed(&["data"]);

fn c1(name: &str, ins: &[NDArray], attrs: &[(&str, Value)]) -> Result<NDArray> {
    super::call1(name, ins, attrs)
}

fn norm_axis(op: &str, axis: i64, nd: usize, shape: &[usize]) -> Result<usize> {
    let n = nd as i64;
    let v = if axis < 0 { axis + n } else { axis };
    if v < 0 || v >= n {
        return Err(Error::op(
            op,
            format!("axis {axis} is out of bounds for an array of shape {} (valid range [{}, {}))", fmt_shape(shape), -n, n),
        ));
    }
    Ok(v as usize)
}

/// Copies a `shape`-d view of `src` (element offset and strides) into `dst`.
fn copy(shape: &[usize], src: &super::Blob, soff: usize, ss: &[isize], dst: &super::Blob, doff: usize, ds: &[isize]) {
    if shape.contains(&0) {
        return;
    }
    // A view that strays out of its blob is a bug in an op's checks: stop it here (the
    // engine turns the panic into an error) rather than read or write past the buffer.
    let inside = |off: usize, st: &[isize], len: usize| {
        let (mut lo, mut hi) = (off as i128, off as i128);
        for (&d, &s) in shape.iter().zip(st) {
            let reach = (d as i128 - 1) * s as i128;
            if reach < 0 {
                lo += reach
            } else {
                hi += reach
            }
        }
        lo >= 0 && hi < len as i128
    };
    assert!(
        inside(soff, ss, src.size()) && inside(doff, ds, dst.size()),
        "strided copy of shape {shape:?} outside its arrays ({} and {} elements)",
        src.size(),
        dst.size()
    );
    let e = src.dtype.size();
    // SAFETY: both views were checked to lie inside their blobs just above; outputs
    // don't overlap inputs.
    unsafe { strided_copy(e, shape, src.ptr.add(soff * e), ss, dst.ptr.add(doff * e), ds) }
}

fn zero(o: &super::Blob) {
    // SAFETY: the output is ours to write.
    unsafe { std::ptr::write_bytes(o.ptr, 0, o.size() * o.dtype.size()) }
}

// ---- diag ---------------------------------------------------------------------

const DIAG_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("k", PType::Int, Some("0"), "Diagonal in question. The default is 0. Use k>0 for diagonals above the main diagonal, and k<0 for diagonals below the main diagonal. If input has shape (S0 S1) k must be between -S0 and S1"),
    ParamSpec::new("axis1", PType::Int, Some("0"), "The first axis of the sub-arrays of interest. Ignored when the input is a 1-D array."),
    ParamSpec::new("axis2", PType::Int, Some("1"), "The second axis of the sub-arrays of interest. Ignored when the input is a 1-D array."),
];

/// For an N-d input: the two axes, the diagonal's length and its first element.
struct DiagPlan {
    a1: usize,
    a2: usize,
    len: usize,
    off: usize,
}

fn diag_plan(op: &str, p: &Params, s: &[usize]) -> Result<DiagPlan> {
    let nd = s.len();
    let a1 = norm_axis(op, p.int("axis1"), nd, s)?;
    let a2 = norm_axis(op, p.int("axis2"), nd, s)?;
    if a1 == a2 {
        return Err(Error::op(op, format!("axis1 and axis2 cannot refer to the same axis {a1}")));
    }
    let k = p.int("k");
    let (r0, c0) = if k >= 0 { (0usize, k as usize) } else { ((-k) as usize, 0usize) };
    if r0 > s[a1] || c0 > s[a2] {
        return Err(Error::op(
            op,
            format!("Diagonal does not exist: k={k} is outside [-{}, {}] for axes of sizes ({}, {})", s[a1], s[a2], s[a1], s[a2]),
        ));
    }
    let len = if r0 >= s[a1] || c0 >= s[a2] { 0 } else { (s[a1] - r0).min(s[a2] - c0) };
    let st = strides_of(s);
    let off = if len == 0 { 0 } else { r0 * st[a1] as usize + c0 * st[a2] as usize };
    Ok(DiagPlan { a1, a2, len, off })
}

fn diag_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    if s.is_empty() {
        return Err(a.err("input must be at least 1-D, got a scalar"));
    }
    if s.len() == 1 {
        let n = s[0] + a.params.int("k").unsigned_abs() as usize;
        return Ok(vec![(Shape::from_slice(&[n, n]), a.dtypes[0])]);
    }
    let pl = diag_plan(a.op.name, a.params, s)?;
    let mut out: Shape = s.iter().enumerate().filter(|(i, _)| *i != pl.a1 && *i != pl.a2).map(|(_, &d)| d).collect();
    out.push(pl.len);
    Ok(vec![(out, a.dtypes[0])])
}

/// The N-d diagonal view: (dims, strides) over the input, in output order.
fn diag_view(s: &[usize], pl: &DiagPlan) -> (Vec<usize>, Vec<isize>) {
    let st = strides_of(s);
    let mut dims = Vec::new();
    let mut strides = Vec::new();
    for i in 0..s.len() {
        if i != pl.a1 && i != pl.a2 {
            dims.push(s[i]);
            strides.push(st[i]);
        }
    }
    dims.push(pl.len);
    strides.push(st[pl.a1] + st[pl.a2]);
    (dims, strides)
}

fn diag_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    if x.shape.len() == 1 {
        let k = c.params.int("k");
        let n = o.shape[0];
        zero(o);
        let off = if k >= 0 { k as usize } else { (-k) as usize * n };
        copy(&[x.shape[0]], x, 0, &[1], o, off, &[n as isize + 1]);
        return Ok(());
    }
    let pl = diag_plan(c.op.name, c.params, &x.shape)?;
    let (dims, ss) = diag_view(&x.shape, &pl);
    copy(&dims, x, pl.off, &ss, o, 0, &strides_of(&dims));
    Ok(())
}

fn diag_backward_compute(c: &mut OpCall) -> Result<()> {
    let (g, o) = (&c.inputs[0], &c.outputs[0]);
    if o.shape.len() == 1 {
        let k = c.params.int("k");
        let n = g.shape[0];
        let off = if k >= 0 { k as usize } else { (-k) as usize * n };
        copy(&[o.shape[0]], g, off, &[n as isize + 1], o, 0, &[1]);
        return Ok(());
    }
    zero(o);
    let pl = diag_plan(c.op.name, c.params, &o.shape)?;
    let (dims, ds) = diag_view(&o.shape, &pl);
    copy(&dims, g, 0, &strides_of(&dims), o, pl.off, &ds);
    Ok(())
}

fn like_second(a: &InferArgs) -> Out {
    Ok(vec![(Shape::from_slice(a.shapes[1]), a.dtypes[0])])
}

fn pass_params(p: &Params) -> Vec<(&'static str, Value)> {
    p.to_strings().into_iter().map(|(n, v)| (n, Value::Str(v))).collect()
}

fn g_diag(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let attrs = pass_params(p);
    Ok(vec![Some(c1("_backward_diag", &[g[0].clone(), i[0].clone()], &attrs)?)])
}

// ---- depth_to_space / space_to_depth --------------------------------------------

const BLOCK_PARAMS: &[ParamSpec] = &[ParamSpec::new("block_size", PType::Int, None, "Blocks of [block_size. block_size] are moved")];

fn block_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    let b = a.params.int("block_size");
    if s.len() != 4 {
        return Err(a.err(format!("data must be 4-D (N, C, H, W), got shape {}", fmt_shape(s))));
    }
    if b <= 0 {
        return Err(a.err(format!("block_size must be positive, got {b}")));
    }
    // As in MXNet, no dimension may be zero (even under NumPy shapes).
    if let Some(d) = s.iter().position(|&v| v == 0) {
        return Err(a.err(format!("dimension {d} of data shape {} must not be 0", fmt_shape(s))));
    }
    let b = b as usize;
    let (n, ch, h, w) = (s[0], s[1], s[2], s[3]);
    // b * b past usize is more than any channel count: not a multiple of it
    let bb = b.checked_mul(b).unwrap_or(usize::MAX);
    let out = if a.op.name == "depth_to_space" {
        if bb == usize::MAX || ch % bb != 0 {
            return Err(a.err(format!(
                "the channel dimension {ch} of shape {} must be a multiple of block_size^2 (block_size {b})",
                fmt_shape(s)
            )));
        }
        [n, ch / bb, h * b, w * b]
    } else {
        if h % b != 0 || w % b != 0 {
            return Err(a.err(format!("height {h} and width {w} of shape {} must be multiples of block_size {b}", fmt_shape(s))));
        }
        [n, ch * bb, h / b, w / b]
    };
    Ok(vec![(Shape::from_slice(&out), a.dtypes[0])])
}

fn depth_to_space_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let b = c.params.int("block_size") as usize;
    let (n, ch, h, w) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
    let cc = ch / (b * b);
    let hw = (h * w) as isize;
    // output viewed as (n, c', h, i, w, j); input channel (i*b + j)*c' + c
    let dims = [n, cc, h, b, w, b];
    let ss = [ch as isize * hw, hw, w as isize, (b * cc) as isize * hw, 1, cc as isize * hw];
    copy(&dims, x, 0, &ss, o, 0, &strides_of(&dims));
    Ok(())
}

fn space_to_depth_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let b = c.params.int("block_size") as usize;
    let (n, ch, h, w) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
    // output viewed as (n, i, j, c, h', w'); input (n, c, h'*b + i, w'*b + j)
    let dims = [n, b, b, ch, h / b, w / b];
    let ss = [(ch * h * w) as isize, w as isize, 1, (h * w) as isize, (b * w) as isize, b as isize];
    copy(&dims, x, 0, &ss, o, 0, &strides_of(&dims));
    Ok(())
}

fn g_d2s(p: &Params, _: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(c1("space_to_depth", &[g[0].clone()], &[("block_size", Value::Int(p.int("block_size")))])?)])
}
fn g_s2d(p: &Params, _: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(c1("depth_to_space", &[g[0].clone()], &[("block_size", Value::Int(p.int("block_size")))])?)])
}

// ---- slice_like -----------------------------------------------------------------

const SLICE_LIKE_PARAMS: &[ParamSpec] = &[ParamSpec::new(
    "axes",
    PType::Tuple,
    Some("()"),
    "List of axes on which input data will be sliced according to the corresponding size of the second input. By default will slice on all axes. Negative axes are supported.",
)];

fn slice_like_shape(op: &str, p: &Params, s: &[usize], like: &[usize]) -> Result<Shape> {
    let axes = p.tuple("axes");
    let mut out = Shape::from_slice(s);
    let picked: Vec<usize> = if axes.is_empty() {
        if s.len() != like.len() {
            return Err(Error::op(
                op,
                format!(
                    "data {} and shape_like {} must have the same number of dimensions when axes is empty",
                    fmt_shape(s),
                    fmt_shape(like)
                ),
            ));
        }
        (0..s.len()).collect()
    } else {
        let mut v = Vec::new();
        for &ax in &axes {
            let a = norm_axis(op, ax, s.len(), s)?;
            if a >= like.len() {
                return Err(Error::op(op, format!("axis {ax} is out of bounds for shape_like of shape {}", fmt_shape(like))));
            }
            v.push(a);
        }
        v
    };
    for a in picked {
        if like[a] > s[a] {
            return Err(Error::op(
                op,
                format!(
                    "slice size {} of axis {a} (from shape_like {}) exceeds the data's size {} (shape {})",
                    like[a],
                    fmt_shape(like),
                    s[a],
                    fmt_shape(s)
                ),
            ));
        }
        out[a] = like[a];
    }
    Ok(out)
}

fn slice_like_infer(a: &InferArgs) -> Out {
    Ok(vec![(slice_like_shape(a.op.name, a.params, a.shapes[0], a.shapes[1])?, a.dtypes[0])])
}

fn slice_like_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    copy(&o.shape, x, 0, &strides_of(&x.shape), o, 0, &strides_of(&o.shape));
    Ok(())
}

/// `_backward_slice_like(ograd, data)`: the gradient in the leading corner, zeros elsewhere.
fn corner_backward_compute(c: &mut OpCall) -> Result<()> {
    let (g, o) = (&c.inputs[0], &c.outputs[0]);
    zero(o);
    copy(&g.shape, g, 0, &strides_of(&g.shape), o, 0, &strides_of(&o.shape));
    Ok(())
}

fn g_slice_like(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(c1("_backward_slice_like", &[g[0].clone(), i[0].clone()], &[])?), None])
}

// ---- shape_array / size_array ------------------------------------------------------

fn shape_array_infer(a: &InferArgs) -> Out {
    let n = if a.op.name == "shape_array" { a.shapes[0].len() } else { 1 };
    Ok(vec![(Shape::from_slice(&[n]), DType::I64)])
}

fn shape_array_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    // SAFETY: the output holds its elements.
    let out = unsafe { o.slice_mut::<i64>() };
    if c.op.name == "shape_array" {
        for (d, s) in out.iter_mut().zip(x.shape.iter()) {
            *d = *s as i64;
        }
    } else {
        out[0] = x.size() as i64;
    }
    Ok(())
}

fn no_grad(_: &Params, i: &[NDArray], _: &[NDArray], _: &[NDArray]) -> Grads {
    Ok(vec![None; i.len()])
}

// ---- _split_v2 -----------------------------------------------------------------------

const SPLIT_V2_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "indices",
        PType::Tuple,
        None,
        "Indices of splits. The elements should denote the boundaries of at which split is performed along the `axis`.",
    ),
    ParamSpec::new("axis", PType::Int, Some("1"), "Axis along which to split."),
    ParamSpec::new(
        "squeeze_axis",
        PType::Bool,
        Some("False"),
        "If true, Removes the axis with length 1 from the shapes of the output arrays.",
    ),
    ParamSpec::new("sections", PType::Int, Some("0"), "Number of sections if equally splitted. Default to 0 which means split by indices."),
];

fn split_v2_count(p: &Params) -> usize {
    let s = p.int("sections");
    if s > 0 {
        s as usize
    } else {
        p.tuple("indices").len().max(1)
    }
}

/// The `[begin, end)` of every part along the axis.
pub(super) fn split_v2_bounds(op: &str, p: &Params, s: &[usize]) -> Result<(usize, Vec<(usize, usize)>)> {
    let ax = norm_axis(op, p.int("axis"), s.len(), s)?;
    let n = s[ax];
    let sections = p.int("sections");
    let mut bounds = Vec::new();
    if sections > 0 {
        let k = sections as usize;
        if !n.is_multiple_of(k) {
            return Err(Error::op(op, format!("cannot split axis {ax} of shape {} into {k} equal sections", fmt_shape(s))));
        }
        for i in 0..k {
            bounds.push((i * n / k, (i + 1) * n / k));
        }
    } else {
        let idx = p.tuple("indices");
        for (i, &b) in idx.iter().enumerate() {
            let e = if i + 1 < idx.len() { idx[i + 1] } else { n as i64 };
            if b < 0 || e < b || e as usize > n {
                return Err(Error::op(
                    op,
                    format!("indices {idx:?} must be increasing and within the size {n} of axis {ax} (shape {})", fmt_shape(s)),
                ));
            }
            bounds.push((b as usize, e as usize));
        }
        if bounds.is_empty() {
            bounds.push((0, n));
        }
    }
    Ok((ax, bounds))
}

fn split_v2_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    let (ax, bounds) = split_v2_bounds(a.op.name, a.params, s)?;
    let squeeze = a.params.bool("squeeze_axis");
    let mut outs = Vec::new();
    for (b, e) in bounds {
        let mut o = Shape::from_slice(s);
        if squeeze {
            if e - b != 1 {
                return Err(a.err(format!("squeeze_axis=True needs every part to have size 1 along axis {ax}, but one has size {}", e - b)));
            }
            o.remove(ax);
        } else {
            o[ax] = e - b;
        }
        outs.push((o, a.dtypes[0]));
    }
    Ok(outs)
}

fn split_v2_compute(c: &mut OpCall) -> Result<()> {
    let x = &c.inputs[0];
    let s = &x.shape;
    let (ax, bounds) = split_v2_bounds(c.op.name, c.params, s)?;
    let outer: usize = s[..ax].iter().product();
    let inner: usize = s[ax + 1..].iter().product();
    for (o, (b, e)) in c.outputs.iter().zip(bounds) {
        let row = (e - b) * inner;
        copy(&[outer, row], x, b * inner, &[(s[ax] * inner) as isize, 1], o, 0, &[row as isize, 1]);
    }
    Ok(())
}

fn g_split_v2(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let s = i[0].shape();
    let (ax, bounds) = split_v2_bounds("_split_v2", p, s)?;
    let mut parts = Vec::new();
    for (gi, (b, e)) in g.iter().zip(bounds) {
        let mut shp: Vec<i64> = s.iter().map(|&d| d as i64).collect();
        shp[ax] = (e - b) as i64;
        parts.push(c1("Reshape", std::slice::from_ref(gi), &[("shape", Value::Tuple(shp))])?);
    }
    let n = parts.len() as i64;
    Ok(vec![Some(c1("Concat", &parts, &[("num_args", Value::Int(n)), ("dim", Value::Int(ax as i64))])?)])
}

// ---- add_n ------------------------------------------------------------------------

const ADD_N_PARAMS: &[ParamSpec] = &[ParamSpec::new("num_args", PType::Int, None, "Number of inputs to be summed.")];

fn add_n_infer(a: &InferArgs) -> Out {
    if a.shapes.is_empty() {
        return Err(a.err("needs at least one input"));
    }
    let s = super::check_same_shape(a)?;
    let d = super::check_same_dtype(a)?;
    Ok(vec![(s, d)])
}

fn add_n_compute(c: &mut OpCall) -> Result<()> {
    let o = &c.outputs[0];
    with_dtype!(o.dtype, T, {
        let srcs: Vec<*const T> = c.inputs.iter().map(|b| b.ptr_as::<T>() as *const T).collect();
        if srcs.iter().any(|&p| std::ptr::eq(p, o.ptr_as::<T>())) {
            // An input is the output: sum into a temporary first.
            let mut tmp = vec![T::from_f64(0.0); o.size()];
            k::sum::<T>(&srcs, tmp.as_mut_ptr(), o.size());
            // SAFETY: the output holds o.size() elements.
            unsafe { o.slice_mut::<T>().copy_from_slice(&tmp) };
        } else {
            k::sum::<T>(&srcs, o.ptr_as(), o.size());
        }
    });
    Ok(())
}

fn g_add_n(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(i.iter().map(|_| Some(g[0].clone())).collect())
}

// ---- batch_take, ravel/unravel -------------------------------------------------------

fn batch_take_infer(a: &InferArgs) -> Out {
    let (s, idx) = (a.shapes[0], a.shapes[1]);
    if s.is_empty() || s[s.len() - 1] == 0 {
        return Err(a.err(format!("a must have a non-empty last axis, got shape {}", fmt_shape(s))));
    }
    if !matches!(a.dtypes[1], DType::I32 | DType::I64) {
        return Err(a.err(format!("indices must be int32 or int64, got {}", a.dtypes[1].name())));
    }
    let rows = s.iter().product::<usize>() / s[s.len() - 1];
    if idx.iter().product::<usize>() != rows {
        return Err(a.err(format!(
            "indices {} must hold one index per row of a {} ({rows} rows of its last axis)",
            fmt_shape(idx),
            fmt_shape(s)
        )));
    }
    Ok(vec![(Shape::from_slice(idx), a.dtypes[0])])
}

fn batch_take_compute(c: &mut OpCall) -> Result<()> {
    let (x, ib, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let m = x.shape[x.shape.len() - 1];
    let idx: Vec<i64> = with_dtype!(ib.dtype, I, { unsafe { ib.slice::<I>() }.iter().map(|v| v.to_f64() as i64).collect() });
    with_dtype!(x.dtype, T, {
        // SAFETY: sizes checked by inference.
        let (xs, os) = unsafe { (x.slice::<T>(), o.slice_mut::<T>()) };
        for (r, &j) in idx.iter().enumerate() {
            let j = j.clamp(0, m as i64 - 1) as usize;
            os[r] = xs[r * m + j];
        }
    });
    Ok(())
}

const RAVEL_PARAMS: &[ParamSpec] =
    &[ParamSpec::new("shape", PType::OptTuple, Some("None"), "Shape of the array into which the multi-indices apply.")];

fn ravel_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    let shape = a.params.opt_tuple("shape").ok_or_else(|| a.err("shape is required"))?;
    // The leading size never enters the arithmetic: as in MXNet it may be -1 (or
    // anything) when unknown.
    if shape.is_empty() || shape[1..].iter().any(|&d| d <= 0) {
        return Err(a.err(format!("shape must be a non-empty tuple of positive sizes (the first may be -1), got {shape:?}")));
    }
    if a.op.name == "ravel_multi_index" {
        if s.is_empty() || s[0] != shape.len() {
            return Err(a.err(format!(
                "data must have shape ({}, ...) for a shape of {} dimensions, got {}",
                shape.len(),
                shape.len(),
                fmt_shape(s)
            )));
        }
        Ok(vec![(Shape::from_slice(&s[1..]), a.dtypes[0])])
    } else {
        let mut o = Shape::from_slice(&[shape.len()]);
        o.extend_from_slice(s);
        Ok(vec![(o, a.dtypes[0])])
    }
}

fn ravel_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let shape: Vec<i64> = c.params.opt_tuple("shape").unwrap_or_default();
    let nd = shape.len();
    let mut st = vec![1i64; nd];
    for d in (0..nd.saturating_sub(1)).rev() {
        st[d] = st[d + 1] * shape[d + 1];
    }
    with_dtype!(x.dtype, T, {
        // SAFETY: sizes checked by inference.
        let (xs, os) = unsafe { (x.slice::<T>(), o.slice_mut::<T>()) };
        if c.op.name == "ravel_multi_index" {
            let n = o.size();
            for j in 0..n {
                let mut v = 0f64;
                for d in 0..nd {
                    v += xs[d * n + j].to_f64() * st[d] as f64;
                }
                os[j] = T::from_f64(v);
            }
        } else {
            let n = x.size();
            // As MXNet (C arithmetic): the leading coordinate keeps what is left.
            for j in 0..n {
                let mut v = xs[j].to_f64() as i64;
                for d in (1..nd).rev() {
                    os[d * n + j] = T::from_f64((v % shape[d]) as f64);
                    v /= shape[d];
                }
                os[j] = T::from_f64(v as f64);
            }
        }
    });
    Ok(())
}

// ---- _linspace -------------------------------------------------------------------------

const LINSPACE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("start", PType::Float, None, "Start of interval."),
    ParamSpec::new("stop", PType::Float, None, "End of interval."),
    ParamSpec::new("num", PType::Int, None, "Number of samples to generate. Must be non-negative."),
    ParamSpec::new("endpoint", PType::Bool, Some("True"), "If True, stop is the last sample. Otherwise, it is not included."),
    ParamSpec::new("ctx", PType::Ctx, Some("cpu(0)"), "Context of output, in format [cpu|gpu|cpu_pinned](n)."),
    ParamSpec::new("dtype", PType::DType, Some("float32"), "Target data type."),
];

fn linspace_infer(a: &InferArgs) -> Out {
    let n = a.params.int("num");
    if n < 0 {
        return Err(a.err(format!("num must be non-negative, got {n}")));
    }
    Ok(vec![(Shape::from_slice(&[n as usize]), a.params.dtype("dtype").unwrap_or(DType::F32))])
}

fn linspace_compute(c: &mut OpCall) -> Result<()> {
    let o = &c.outputs[0];
    let (start, stop, n) = (c.params.float("start"), c.params.float("stop"), c.params.int("num") as usize);
    let div = if c.params.bool("endpoint") { n.saturating_sub(1) } else { n };
    let step = if div > 0 { (stop - start) / div as f64 } else { 0.0 };
    with_dtype!(o.dtype, T, {
        // SAFETY: the output is ours to write.
        let out = unsafe { o.slice_mut::<T>() };
        for (i, x) in out.iter_mut().enumerate() {
            let v = if c.params.bool("endpoint") && n > 1 && i == n - 1 { stop } else { start + i as f64 * step };
            *x = T::from_f64(v);
        }
    });
    Ok(())
}

// ---- khatri_rao, _onehot_encode, fill_element_0index --------------------------------------

const KR_PARAMS: &[ParamSpec] = &[ParamSpec::new("num_args", PType::Int, None, "Number of input matrices.")];

fn kr_infer(a: &InferArgs) -> Out {
    if a.shapes.is_empty() {
        return Err(a.err("needs at least one input matrix"));
    }
    let d = super::check_same_dtype(a)?;
    let r = a.shapes[0].get(1).copied().unwrap_or(0);
    let mut rows = 1usize;
    for s in a.shapes {
        if s.len() != 2 || s[1] != r {
            return Err(a.err(format!("every input must be a matrix with {r} columns, got shape {}", fmt_shape(s))));
        }
        rows *= s[0];
    }
    Ok(vec![(Shape::from_slice(&[rows, r]), d)])
}

fn kr_compute(c: &mut OpCall) -> Result<()> {
    let o = &c.outputs[0];
    let r = o.shape[1];
    with_dtype!(o.dtype, T, {
        // SAFETY: sizes from inference.
        let os = unsafe { o.slice_mut::<T>() };
        let mut cur: Vec<f64> = vec![1.0; r];
        let mut rows = 1usize;
        for b in c.inputs.iter() {
            let xs = unsafe { b.slice::<T>() };
            let m = b.shape[0];
            let mut next = vec![0f64; rows * m * r];
            for i in 0..rows {
                for j in 0..m {
                    for col in 0..r {
                        next[(i * m + j) * r + col] = cur[i * r + col] * xs[j * r + col].to_f64();
                    }
                }
            }
            cur = next;
            rows *= m;
        }
        for (d, v) in os.iter_mut().zip(cur) {
            *d = T::from_f64(v);
        }
    });
    Ok(())
}

fn onehot_infer(a: &InferArgs) -> Out {
    let (i, o) = (a.shapes[0], a.shapes[1]);
    if o.len() != 2 || i.iter().product::<usize>() != o[0] {
        return Err(a.err(format!("out must be a matrix with one row per index: indices {}, out {}", fmt_shape(i), fmt_shape(o))));
    }
    Ok(vec![(Shape::from_slice(o), a.dtypes[1])])
}

fn onehot_compute(c: &mut OpCall) -> Result<()> {
    let (ib, o) = (&c.inputs[0], &c.outputs[0]);
    let m = o.shape[1];
    let idx: Vec<f64> = with_dtype!(ib.dtype, I, { unsafe { ib.slice::<I>() }.iter().map(|v| v.to_f64()).collect() });
    zero(o);
    with_dtype!(o.dtype, T, {
        // SAFETY: sizes from inference.
        let os = unsafe { o.slice_mut::<T>() };
        for (r, &j) in idx.iter().enumerate() {
            if j >= 0.0 && (j as usize) < m {
                os[r * m + j as usize] = T::from_f64(1.0);
            }
        }
    });
    Ok(())
}

fn fill0_infer(a: &InferArgs) -> Out {
    let (l, m, r) = (a.shapes[0], a.shapes[1], a.shapes[2]);
    if l.len() != 2 || m != [l[0]] || r != [l[0]] {
        return Err(a.err(format!(
            "lhs must be a matrix (n, m) with mhs and rhs of shape (n,): lhs {}, mhs {}, rhs {}",
            fmt_shape(l),
            fmt_shape(m),
            fmt_shape(r)
        )));
    }
    Ok(vec![(Shape::from_slice(l), a.dtypes[0])])
}

fn fill0_compute(c: &mut OpCall) -> Result<()> {
    let (l, mb, rb, o) = (&c.inputs[0], &c.inputs[1], &c.inputs[2], &c.outputs[0]);
    let m = l.shape[1];
    let idx: Vec<f64> = with_dtype!(rb.dtype, I, { unsafe { rb.slice::<I>() }.iter().map(|v| v.to_f64()).collect() });
    let vals: Vec<f64> = with_dtype!(mb.dtype, I, { unsafe { mb.slice::<I>() }.iter().map(|v| v.to_f64()).collect() });
    with_dtype!(o.dtype, T, {
        if l.ptr != o.ptr {
            // SAFETY: distinct blobs of the same size.
            unsafe { o.slice_mut::<T>().copy_from_slice(l.slice::<T>()) };
        }
        let os = unsafe { o.slice_mut::<T>() };
        for (r, (&j, &v)) in idx.iter().zip(&vals).enumerate() {
            if j >= 0.0 && (j as usize) < m {
                os[r * m + j as usize] = T::from_f64(v);
            }
        }
    });
    Ok(())
}

// ---- registration ------------------------------------------------------------------------

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "diag",
            "Extracts a diagonal or constructs a diagonal array: a 1-D input gives a 2-D array with it on diagonal k; an N-D input gives the diagonal k of the sub-arrays of axes (axis1, axis2), appended as the last axis.",
            DATA,
            DIAG_PARAMS,
            diag_infer,
            diag_compute,
        )
        .grad(g_diag),
    );
    r.add(OpDef::new(
        "_backward_diag",
        "Gradient of diag.",
        Arity::Fixed(&["ograd", "data"]),
        DIAG_PARAMS,
        like_second,
        diag_backward_compute,
    ));
    r.add(
        OpDef::new("depth_to_space", "Rearranges (permutes) data from depth into blocks of spatial data (the inverse of space_to_depth): (N, C, H, W) -> (N, C/(b^2), H*b, W*b).", DATA, BLOCK_PARAMS, block_infer, depth_to_space_compute)
            .grad(g_d2s),
    );
    r.add(
        OpDef::new(
            "space_to_depth",
            "Rearranges (permutes) blocks of spatial data into depth: (N, C, H, W) -> (N, C*(b^2), H/b, W/b).",
            DATA,
            BLOCK_PARAMS,
            block_infer,
            space_to_depth_compute,
        )
        .grad(g_s2d),
    );
    r.add(
        OpDef::new(
            "slice_like",
            "Slices a region of the array like the shape of another array: along each of `axes` (all axes when empty), items 0 to shape_like's size.",
            Arity::Fixed(&["data", "shape_like"]),
            SLICE_LIKE_PARAMS,
            slice_like_infer,
            slice_like_compute,
        )
        .grad(g_slice_like),
    );
    r.add(OpDef::new(
        "_backward_slice_like",
        "Gradient of slice_like: the output gradient in the leading corner of zeros shaped like data.",
        Arity::Fixed(&["ograd", "data"]),
        &[],
        like_second,
        corner_backward_compute,
    ));
    r.add(
        OpDef::new(
            "shape_array",
            "Returns a 1D int64 array containing the shape of data.",
            DATA,
            &[],
            shape_array_infer,
            shape_array_compute,
        )
        .unnamed_inputs()
        .grad(no_grad),
    );
    r.add(
        OpDef::new(
            "size_array",
            "Returns a 1D int64 array containing the size of data.",
            DATA,
            &[],
            shape_array_infer,
            shape_array_compute,
        )
        .unnamed_inputs()
        .grad(no_grad),
    );
    r.add(
        OpDef::new(
            "_split_v2",
            "Splits an array along a particular axis into multiple sub-arrays, at the given indices or into equal sections.",
            DATA,
            SPLIT_V2_PARAMS,
            split_v2_infer,
            split_v2_compute,
        )
        .outputs(split_v2_count)
        .grad(g_split_v2),
    );
    r.add(
        OpDef::new(
            "add_n",
            "Adds all input arguments element-wise.",
            Arity::Variadic { name: "args", count: "num_args" },
            ADD_N_PARAMS,
            add_n_infer,
            add_n_compute,
        )
        .aliases(&["ElementWiseSum"])
        .inplace()
        .grad(g_add_n),
    );
    r.add(
        OpDef::new(
            "batch_take",
            "Takes elements from a data batch: ``out[i] = a[i, indices[i]]`` (indices are clipped).",
            Arity::Fixed(&["a", "indices"]),
            &[],
            batch_take_infer,
            batch_take_compute,
        ), // As MXNet: no gradient (binding it for training is an error).
    );
    r.add(
        OpDef::new(
            "ravel_multi_index",
            "Converts a batch of index arrays into an array of flat indices: data is (ndim, ...) for an array of `shape`.",
            DATA,
            RAVEL_PARAMS,
            ravel_infer,
            ravel_compute,
        )
        .aliases(&["_ravel_multi_index"])
        .grad(no_grad),
    );
    r.add(
        OpDef::new(
            "unravel_index",
            "Converts an array of flat indices into a batch of index arrays: the output is (ndim, ...) for an array of `shape`.",
            DATA,
            RAVEL_PARAMS,
            ravel_infer,
            ravel_compute,
        )
        .aliases(&["_unravel_index"])
        .grad(no_grad),
    );
    r.add(OpDef::new(
        "_linspace",
        "Return evenly spaced numbers over a specified interval. Similar to Numpy",
        Arity::Fixed(&[]),
        LINSPACE_PARAMS,
        linspace_infer,
        linspace_compute,
    ));
    r.add(
        OpDef::new(
            "khatri_rao",
            "Computes the Khatri-Rao product (column-wise Kronecker product) of the input matrices.",
            Arity::Variadic { name: "args", count: "num_args" },
            KR_PARAMS,
            kr_infer,
            kr_compute,
        )
        .grad(no_grad),
    );
    r.add(
        OpDef::new(
            "_onehot_encode",
            "One-hot encodes `lhs` (indices) into the shape of `rhs`.",
            Arity::Fixed(&["lhs", "rhs"]),
            &[],
            onehot_infer,
            onehot_compute,
        )
        .unnamed_inputs()
        .grad(no_grad),
    );
    r.add(
        OpDef::new(
            "fill_element_0index",
            "Fills lhs[i, rhs[i]] with mhs[i] (the rest is lhs).",
            Arity::Fixed(&["lhs", "mhs", "rhs"]),
            &[],
            fill0_infer,
            fill0_compute,
        )
        .unnamed_inputs()
        .grad(no_grad),
    );
}
