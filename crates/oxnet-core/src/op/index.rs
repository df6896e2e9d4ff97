//! Indexing ops: `take`, `pick`, `where`, `one_hot`, `gather_nd`, `scatter_nd`, and
//! the ordering ops `topk`, `sort`, `argsort`.
//!
//! Index arrays may have any dtype; float indices are truncated toward zero, as in
//! MXNet (except `gather_nd`/`scatter_nd`, where a non-integer index is an error).
//! Out-of-range indices found while computing (`take` with `mode='raise'`,
//! `gather_nd`, `scatter_nd`) are errors naming the op and the index; like every
//! compute error they surface at the next blocking call on the outputs.

use super::{Arity, Blob, InferArgs, OpCall, OpDef, PType, ParamSpec, Registry};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::kernels::cpu::index as k;
use crate::kernels::cpu::reduce::Num;
use crate::kernels::cpu::sort::top_positions;
use crate::shape::{fmt_shape, norm_axis, Shape};
use crate::with_dtype;

/// The values of an index blob as integers (floats truncated toward zero).
fn read_indices(b: &Blob) -> Vec<i64> {
    // SAFETY: the engine gives this op read access to its inputs.
    with_dtype!(b.dtype, T, { k::to_i64_vec(unsafe { b.slice::<T>() }) })
}

/// Like [`read_indices`], but a non-integer (or NaN) value is an error.
fn read_integer_indices(op: &str, b: &Blob) -> Result<Vec<i64>> {
    with_dtype!(b.dtype, T, {
        // SAFETY: the engine gives this op read access to its inputs.
        let s = unsafe { b.slice::<T>() };
        if <T as Num>::FLOAT {
            if let Some(v) = s.iter().map(|v| v.to_f64()).find(|v| v.fract() != 0.0 || v.is_nan()) {
                return Err(Error::op(op, format!("index {v} is not an integer")));
            }
        }
        Ok(k::to_i64_vec(s))
    })
}

// ---- take --------------------------------------------------------------------

const TAKE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("axis", PType::Int, Some("0"), "The axis of input array to be taken.For input tensor of rank r, it could be in the range of [-r, r-1]"),
    ParamSpec::choice(
        "mode",
        &["clip", "raise", "wrap"],
        Some("clip"),
        "Specify how out-of-bound indices bahave. Default is \"clip\". \"clip\" means clip to the range. So, if all indices mentioned are too large, they are replaced by the index that addresses the last element along an axis. \"wrap\" means to wrap around. \"raise\" means to raise an error when index out of range.",
    ),
];

fn infer_take(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let (ds, is) = (a.shapes[0], a.shapes[1]);
    if ds.is_empty() {
        return Err(a.err("the input array must have at least one dimension"));
    }
    let ax = norm_axis(a.params.int("axis"), ds.len(), a.op.name)?;
    if ds[ax] == 0 && is.iter().product::<usize>() > 0 {
        return Err(a.err(format!("cannot take indices from axis {ax} of size 0 (input shape {})", fmt_shape(ds))));
    }
    let mut out: Shape = Shape::from_slice(&ds[..ax]);
    out.extend_from_slice(is);
    out.extend_from_slice(&ds[ax + 1..]);
    Ok(vec![(out, a.dtypes[0])])
}

/// Resolves `i` against an axis of size `n` by `mode` ("clip", "wrap"; anything else
/// checks the range); `None` when out of range.
#[inline]
fn resolve(i: i64, n: usize, mode: &str) -> Option<usize> {
    let n = n as i64;
    match mode {
        "clip" => Some(i.clamp(0, n - 1) as usize),
        "wrap" => Some(i.rem_euclid(n) as usize),
        _ => (0..n).contains(&i).then_some(i as usize),
    }
}

fn take_compute(c: &mut OpCall) -> Result<()> {
    let (d, o) = (&c.inputs[0], &c.outputs[0]);
    let ax = norm_axis(c.params.int("axis"), d.shape.len(), c.op.name)?;
    let mode = c.params.str("mode");
    let n = d.shape[ax];
    let outer: usize = d.shape[..ax].iter().product();
    let inner: usize = d.shape[ax + 1..].iter().product();
    let idx = read_indices(&c.inputs[1]);
    let mut res = Vec::with_capacity(idx.len());
    for &i in &idx {
        match resolve(i, n, mode) {
            Some(r) => res.push(r),
            None => return Err(Error::op(c.op.name, format!("index {i} is out of bounds for axis {ax} with size {n} (mode='raise')"))),
        }
    }
    let rows: Vec<usize> = (0..outer).flat_map(|oi| res.iter().map(move |&r| oi * n + r)).collect();
    let row_bytes = inner * d.dtype.size();
    // SAFETY: read access to the input, exclusive write access to the output.
    let (src, dst) = unsafe { (bytes(d), bytes_mut(o)) };
    k::gather_rows(src, row_bytes, &rows, dst);
    Ok(())
}

/// # Safety
/// The caller must have read access to `b`.
unsafe fn bytes(b: &Blob) -> &[u8] {
    std::slice::from_raw_parts(b.ptr, b.size() * b.dtype.size())
}

/// # Safety
/// The caller must have exclusive write access to `b`.
#[allow(clippy::mut_from_ref)]
unsafe fn bytes_mut(b: &Blob) -> &mut [u8] {
    std::slice::from_raw_parts_mut(b.ptr, b.size() * b.dtype.size())
}

// ---- pick --------------------------------------------------------------------

const PICK_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("axis", PType::OptInt, Some("-1"), "int or None. The axis to picking the elements. Negative values means indexing from right to left. If is `None`, the elements in the index w.r.t the flattened input will be picked."),
    ParamSpec::new("keepdims", PType::Bool, Some("False"), "If true, the axis where we pick the elements is left in the result as dimension with size one."),
    ParamSpec::choice(
        "mode",
        &["clip", "wrap"],
        Some("clip"),
        "Specify how out-of-bound indices behave. Default is \"clip\". \"clip\" means clip to the range. So, if all indices mentioned are too large, they are replaced by the index that addresses the last element along an axis.  \"wrap\" means to wrap around.",
    ),
];

fn pick_axis(a: &InferArgs) -> Result<usize> {
    match a.params.opt_int("axis") {
        None => Err(a.err("axis=None is not supported by pick yet. Must specify an axis.")),
        Some(ax) => norm_axis(ax, a.shapes[0].len(), a.op.name),
    }
}

fn infer_pick(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let (ds, is) = (a.shapes[0], a.shapes[1]);
    if ds.is_empty() {
        return Err(a.err("data must have at least one dimension, got a scalar (shape ())"));
    }
    let ax = pick_axis(a)?;
    let removed: Shape = ds.iter().enumerate().filter(|(d, _)| *d != ax).map(|(_, &s)| s).collect();
    let kept: Shape = ds.iter().enumerate().map(|(d, &s)| if d == ax { 1 } else { s }).collect();
    let removed_or_1 = if removed.is_empty() { Shape::from_slice(&[1]) } else { removed.clone() };
    if is != &removed[..] && is != &kept[..] && is != &removed_or_1[..] {
        return Err(a.err(format!(
            "index shape {} does not match data shape {} along axis {ax}: expected {} or {}",
            fmt_shape(is),
            fmt_shape(ds),
            fmt_shape(&removed_or_1),
            fmt_shape(&kept)
        )));
    }
    if ds[ax] == 0 && removed.iter().product::<usize>() > 0 {
        return Err(a.err(format!("cannot pick from axis {ax} of size 0 (data shape {})", fmt_shape(ds))));
    }
    Ok(vec![(if a.params.bool("keepdims") { kept } else { removed_or_1 }, a.dtypes[0])])
}

fn pick_compute(c: &mut OpCall) -> Result<()> {
    let (d, o) = (&c.inputs[0], &c.outputs[0]);
    let ax = norm_axis(c.params.opt_int("axis").unwrap_or(-1), d.shape.len(), c.op.name)?;
    let n = d.shape[ax];
    let inner: usize = d.shape[ax + 1..].iter().product();
    let mode = c.params.str("mode");
    let idx: Vec<usize> = read_indices(&c.inputs[1]).into_iter().map(|i| resolve(i, n, mode).unwrap_or(0)).collect();
    with_dtype!(d.dtype, T, {
        // SAFETY: read access to the input, exclusive write access to the output.
        let (xs, os) = unsafe { (d.slice::<T>(), o.slice_mut::<T>()) };
        k::pick(xs, n, inner, &idx, os);
    });
    Ok(())
}

// ---- where -------------------------------------------------------------------

fn infer_where(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let (cs, xs, ys) = (a.shapes[0], a.shapes[1], a.shapes[2]);
    if xs != ys {
        return Err(a.err(format!("x and y must have the same shape, got x: {} and y: {}", fmt_shape(xs), fmt_shape(ys))));
    }
    if a.dtypes[1] != a.dtypes[2] {
        return Err(a.err(format!("x and y must have the same dtype, got x: {} and y: {}", a.dtypes[1].name(), a.dtypes[2].name())));
    }
    let row_ok = cs.len() == 1 && !xs.is_empty() && cs[0] == xs[0];
    if cs != xs && !row_ok {
        return Err(a.err(format!(
            "condition must have the shape of x {} or be 1-D of length x.shape[0], got {}",
            fmt_shape(xs),
            fmt_shape(cs)
        )));
    }
    Ok(vec![(Shape::from_slice(xs), a.dtypes[1])])
}

fn where_compute(c: &mut OpCall) -> Result<()> {
    let (cb, x, y, o) = (&c.inputs[0], &c.inputs[1], &c.inputs[2], &c.outputs[0]);
    // SAFETY: read access to the inputs.
    let cond: Vec<bool> = with_dtype!(cb.dtype, T, { unsafe { cb.slice::<T>() }.iter().map(|v| v.to_f64() != 0.0).collect() });
    let group = if cb.shape == x.shape { 1 } else { x.shape[1..].iter().product::<usize>() };
    macro_rules! sel {
        ($U:ty) => {{
            // SAFETY: read access to x and y, exclusive write access to the output;
            // all three have the same size and element size.
            let (xs, ys, os) = unsafe { (x.slice::<$U>(), y.slice::<$U>(), o.slice_mut::<$U>()) };
            k::select(&cond, group.max(1), xs, ys, os)
        }};
    }
    match x.dtype.size() {
        1 => sel!(u8),
        2 => sel!(u16),
        4 => sel!(u32),
        _ => sel!(u64),
    }
    Ok(())
}

// ---- one_hot -----------------------------------------------------------------

const ONE_HOT_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("depth", PType::Int, None, "Depth of the one hot dimension."),
    ParamSpec::new("on_value", PType::Float, Some("1"), "The value assigned to the locations represented by indices."),
    ParamSpec::new("off_value", PType::Float, Some("0"), "The value assigned to the locations not represented by indices."),
    ParamSpec::new(
        "dtype",
        PType::DType,
        Some("float32"),
        "DType of the output (one of 'float16', 'float32', 'float64', 'int32', 'int64', 'int8', 'uint8')",
    ),
];

fn infer_one_hot(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let depth = a.params.int("depth");
    if depth < 0 {
        return Err(a.err(format!("depth must be a non-negative integer, got depth={depth}")));
    }
    let dt = a.params.dtype("dtype").unwrap_or(DType::F32);
    if dt == DType::Bool {
        return Err(a.err(
            "Invalid Input: 'bool' for dtype, valid values are: {'float16', 'float32', 'float64', 'int32', 'int64', 'int8', 'uint8'}",
        ));
    }
    let mut s = Shape::from_slice(a.shapes[0]);
    s.push(depth as usize);
    Ok(vec![(s, dt)])
}

fn one_hot_compute(c: &mut OpCall) -> Result<()> {
    let o = &c.outputs[0];
    let depth = c.params.int("depth").max(0) as usize;
    let idx = read_indices(&c.inputs[0]);
    let (on, off) = (c.params.float("on_value"), c.params.float("off_value"));
    with_dtype!(o.dtype, U, {
        // SAFETY: exclusive write access to the output.
        let os = unsafe { o.slice_mut::<U>() };
        k::one_hot(&idx, depth, <U as Element>::from_f64(on), <U as Element>::from_f64(off), os);
    });
    Ok(())
}

// ---- gather_nd / scatter_nd --------------------------------------------------

/// Source/destination rows (of `prod(shape[M..])` elements) addressed by the
/// `(M, Y...)` index array `idx` into an array of shape `shape`.
fn nd_rows(op: &str, idx: &[i64], m: usize, shape: &[usize]) -> Result<Vec<usize>> {
    let y = idx.len().checked_div(m).unwrap_or(0);
    let mut rows = vec![0usize; y];
    for (d, &dim) in shape[..m].iter().enumerate() {
        for (j, row) in rows.iter_mut().enumerate() {
            let v = idx[d * y + j];
            let n = dim as i64;
            if v < -n || v >= n {
                return Err(Error::index(op, format!("index {v} is out of bounds for axis {d} with size {dim}")));
            }
            *row = *row * dim + (if v < 0 { v + n } else { v }) as usize;
        }
    }
    Ok(rows)
}

fn infer_gather_nd(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let (ds, is) = (a.shapes[0], a.shapes[1]);
    if is.len() < 2 {
        return Err(a.err(format!("gather_nd requires index tensor to have at least 2 dimensions, got shape {}", fmt_shape(is))));
    }
    if is[0] > ds.len() {
        return Err(a.err(format!(
            "Number of indices exceeds data dimension: indices shape {} addresses {} axes of data shape {}",
            fmt_shape(is),
            is[0],
            fmt_shape(ds)
        )));
    }
    let mut out = Shape::from_slice(&is[1..]);
    out.extend_from_slice(&ds[is[0]..]);
    Ok(vec![(out, a.dtypes[0])])
}

fn gather_nd_compute(c: &mut OpCall) -> Result<()> {
    let (d, ib, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let m = ib.shape[0];
    let idx = read_integer_indices(c.op.name, ib)?;
    let rows = nd_rows(c.op.name, &idx, m, &d.shape)?;
    let row_bytes = d.shape[m..].iter().product::<usize>() * d.dtype.size();
    // SAFETY: read access to the input, exclusive write access to the output.
    let (src, dst) = unsafe { (bytes(d), bytes_mut(o)) };
    k::gather_rows(src, row_bytes, &rows, dst);
    Ok(())
}

const SCATTER_ND_PARAMS: &[ParamSpec] = &[ParamSpec::new("shape", PType::Tuple, None, "Shape of output.")];

fn infer_scatter_nd(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let (ds, is) = (a.shapes[0], a.shapes[1]);
    let os = super::init::shape_param(a)?;
    if is.len() < 2 {
        return Err(a.err(format!("scatter_nd requires index tensor to have at least 2 dimensions, got shape {}", fmt_shape(is))));
    }
    if is[0] > os.len() {
        return Err(a.err(format!(
            "Number of indices exceeds output dimension: indices shape {} for output shape {}",
            fmt_shape(is),
            fmt_shape(&os)
        )));
    }
    let mut want = Shape::from_slice(&is[1..]);
    want.extend_from_slice(&os[is[0]..]);
    if ds != &want[..] {
        return Err(a.err(format!(
            "Invalid data, indices, and output shape combination for scatter_nd: {}, {}, {} (data must have shape {})",
            fmt_shape(ds),
            fmt_shape(is),
            fmt_shape(&os),
            fmt_shape(&want)
        )));
    }
    Ok(vec![(os, a.dtypes[0])])
}

fn scatter_nd_compute(c: &mut OpCall) -> Result<()> {
    let (d, ib, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let m = ib.shape[0];
    let idx = read_integer_indices(c.op.name, ib)?;
    let rows = nd_rows(c.op.name, &idx, m, &o.shape)?;
    let row_bytes = o.shape[m..].iter().product::<usize>() * o.dtype.size();
    // SAFETY: read access to the input, exclusive write access to the output.
    let (src, dst) = unsafe { (bytes(d), bytes_mut(o)) };
    dst.fill(0);
    k::scatter_rows(src, row_bytes, &rows, dst);
    Ok(())
}

/// `_backward_gather_nd`: like scatter_nd, but the values of repeated indices add up
/// (the gradient of gather_nd).
fn scatter_add_nd_compute(c: &mut OpCall) -> Result<()> {
    let (d, ib, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let m = ib.shape[0];
    let idx = read_integer_indices(c.op.name, ib)?;
    let rows = nd_rows(c.op.name, &idx, m, &o.shape)?;
    let row: usize = o.shape[m..].iter().product();
    with_dtype!(o.dtype, T, {
        // SAFETY: read access to the input, exclusive write access to the output.
        let (src, dst) = unsafe { (d.slice::<T>(), o.slice_mut::<T>()) };
        dst.fill(T::from_f64(0.0));
        for (j, &r) in rows.iter().enumerate() {
            let (to, from) = (&mut dst[r * row..(r + 1) * row], &src[j * row..(j + 1) * row]);
            for (t, f) in to.iter_mut().zip(from) {
                *t = T::from_f64(t.to_f64() + f.to_f64());
            }
        }
    });
    Ok(())
}

// ---- topk / sort / argsort ---------------------------------------------------

/// `(outer, n, inner)` around the sorted axis.
type Layout = (usize, usize, usize);

const INDEX_DTYPES: &str = "{'float16', 'float32', 'float64', 'int32', 'int64', 'uint8'}";

/// The index dtype parameter, checked: allowed and able to hold positions `< n`.
fn index_dtype(a: &InferArgs, n: usize) -> Result<DType> {
    let d = a.params.dtype("dtype").unwrap_or(DType::F32);
    let max_exact: u64 = match d {
        DType::U8 => u8::MAX as u64,
        DType::F16 => 1 << 11,
        DType::F32 => 1 << 24,
        DType::F64 => 1 << 53,
        DType::I32 => i32::MAX as u64,
        DType::I64 => i64::MAX as u64,
        _ => return Err(a.err(format!("Invalid Input: '{}' for dtype, valid values are: {INDEX_DTYPES}", d.name()))),
    };
    if n > 0 && (n - 1) as u64 > max_exact {
        return Err(a.err(format!("dtype {} cannot represent the indices of an axis of length {n} exactly", d.name())));
    }
    Ok(d)
}

/// `(outer, n, inner)` around the sort axis (`None`: the flattened array).
fn sort_layout(op: &str, shape: &[usize], axis: Option<i64>) -> Result<(usize, usize, usize, Option<usize>)> {
    Ok(match axis {
        None => (1, shape.iter().product(), 1, None),
        Some(a) => {
            let ax = norm_axis(a, shape.len(), op)?;
            (shape[..ax].iter().product(), shape[ax], shape[ax + 1..].iter().product(), Some(ax))
        }
    })
}

/// The shape of the sorted/selected output: `k` along the axis (or `(k,)` flattened).
fn selected_shape(shape: &[usize], ax: Option<usize>, k: usize) -> Shape {
    match ax {
        None => Shape::from_slice(&[k]),
        Some(ax) => shape.iter().enumerate().map(|(d, &s)| if d == ax { k } else { s }).collect(),
    }
}

const TOPK_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("axis", PType::OptInt, Some("-1"), "Axis along which to choose the top k indices. If not given, the flattened array is used. Default is -1."),
    ParamSpec::new("k", PType::Int, Some("1"), "Number of top elements to select, should be always smaller than or equal to the element number in the given axis. A global sort is performed if set k < 1."),
    ParamSpec::choice(
        "ret_typ",
        &["both", "indices", "mask", "value"],
        Some("indices"),
        "The return type.\n \"value\" means to return the top k values, \"indices\" means to return the indices of the top k values, \"mask\" means to return a mask array containing 0 and 1. 1 means the top k values. \"both\" means to return a list of both values and indices of top k elements.",
    ),
    ParamSpec::new("is_ascend", PType::Bool, Some("False"), "Whether to choose k largest or k smallest elements. Top K largest elements will be chosen if set to false."),
    ParamSpec::new("dtype", PType::DType, Some("float32"), "DType of the output indices when ret_typ is \"indices\" or \"both\". An error will be raised if the selected data type cannot precisely represent the indices."),
];

/// The effective k of `topk` for an axis of length `n`.
fn topk_k(op: &str, k: i64, n: usize) -> Result<usize> {
    if k < 1 {
        return Ok(n);
    }
    if k as u64 > n as u64 {
        return Err(Error::op(op, format!("k must be smaller than or equal to {n} (the length of the axis), got k = {k}")));
    }
    Ok(k as usize)
}

fn infer_topk(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let shape = a.shapes[0];
    let (_, n, _, ax) = sort_layout(a.op.name, shape, a.params.opt_int("axis"))?;
    let k = topk_k(a.op.name, a.params.int("k"), n)?;
    let sel = selected_shape(shape, ax, k);
    let d = a.dtypes[0];
    Ok(match a.params.str("ret_typ") {
        "value" => vec![(sel, d)],
        "mask" => vec![(Shape::from_slice(shape), d)],
        "both" => {
            let id = index_dtype(a, n)?;
            vec![(sel.clone(), d), (sel, id)]
        }
        _ => vec![(sel, index_dtype(a, n)?)],
    })
}

/// Writes `perm` (positions per line) as values, indices or a mask.
fn write_selected(
    x: &Blob,
    perm: &[usize],
    (outer, n, inner): Layout,
    k: usize,
    values: Option<&Blob>,
    indices: Option<&Blob>,
    mask: Option<&Blob>,
) {
    let at = |line: usize, j: usize| ((line / inner) * k + j) * inner + line % inner;
    let src = |line: usize, p: usize| ((line / inner) * n + p) * inner + line % inner;
    let lines = outer * inner;
    with_dtype!(x.dtype, T, {
        // SAFETY: read access to the input.
        let xs = unsafe { x.slice::<T>() };
        if let Some(v) = values {
            // SAFETY: exclusive write access to the outputs.
            let os = unsafe { v.slice_mut::<T>() };
            for l in 0..lines {
                for j in 0..k {
                    os[at(l, j)] = xs[src(l, perm[l * k + j])];
                }
            }
        }
        if let Some(m) = mask {
            // SAFETY: exclusive write access to the outputs.
            let os = unsafe { m.slice_mut::<T>() };
            os.fill(T::from_f64(0.0));
            for l in 0..lines {
                for j in 0..k {
                    os[src(l, perm[l * k + j])] = T::from_f64(1.0);
                }
            }
        }
    });
    if let Some(ib) = indices {
        with_dtype!(ib.dtype, U, {
            // SAFETY: exclusive write access to the outputs.
            let os = unsafe { ib.slice_mut::<U>() };
            for l in 0..lines {
                for j in 0..k {
                    os[at(l, j)] = U::from_index(perm[l * k + j]);
                }
            }
        });
    }
}

fn positions(c: &OpCall, k: Option<usize>, ascend: bool) -> Result<(Vec<usize>, Layout, usize)> {
    let x = &c.inputs[0];
    let (outer, n, inner, _) = sort_layout(c.op.name, &x.shape, c.params.opt_int("axis"))?;
    let k = k.unwrap_or(n);
    let perm = with_dtype!(x.dtype, T, {
        // SAFETY: read access to the input.
        top_positions(unsafe { x.slice::<T>() }, outer, n, inner, k, ascend)
    });
    Ok((perm, (outer, n, inner), k))
}

fn topk_compute(c: &mut OpCall) -> Result<()> {
    let x = &c.inputs[0];
    let (_, n, _, _) = sort_layout(c.op.name, &x.shape, c.params.opt_int("axis"))?;
    let k = topk_k(c.op.name, c.params.int("k"), n)?;
    let (perm, layout, k) = positions(c, Some(k), c.params.bool("is_ascend"))?;
    let o = c.outputs;
    match c.params.str("ret_typ") {
        "value" => write_selected(x, &perm, layout, k, Some(&o[0]), None, None),
        "mask" => write_selected(x, &perm, layout, k, None, None, Some(&o[0])),
        "both" => write_selected(x, &perm, layout, k, Some(&o[0]), Some(&o[1]), None),
        _ => write_selected(x, &perm, layout, k, None, Some(&o[0]), None),
    }
    Ok(())
}

const SORT_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "axis",
        PType::OptInt,
        Some("-1"),
        "Axis along which to choose sort the input tensor. If not given, the flattened array is used. Default is -1.",
    ),
    ParamSpec::new("is_ascend", PType::Bool, Some("True"), "Whether to sort in ascending or descending order."),
];

const ARGSORT_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "axis",
        PType::OptInt,
        Some("-1"),
        "Axis along which to sort the input tensor. If not given, the flattened array is used. Default is -1.",
    ),
    ParamSpec::new("is_ascend", PType::Bool, Some("True"), "Whether to sort in ascending or descending order."),
    ParamSpec::new(
        "dtype",
        PType::DType,
        Some("float32"),
        "DType of the output indices. An error will be raised if the selected data type cannot precisely represent the indices.",
    ),
];

fn infer_sort<const ARG: bool>(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let shape = a.shapes[0];
    let (_, n, _, ax) = sort_layout(a.op.name, shape, a.params.opt_int("axis"))?;
    let d = if ARG { index_dtype(a, n)? } else { a.dtypes[0] };
    Ok(vec![(selected_shape(shape, ax, n), d)])
}

fn sort_compute<const ARG: bool>(c: &mut OpCall) -> Result<()> {
    let (perm, layout, k) = positions(c, None, c.params.bool("is_ascend"))?;
    let o = &c.outputs[0];
    if ARG {
        write_selected(&c.inputs[0], &perm, layout, k, None, Some(o), None);
    } else {
        write_selected(&c.inputs[0], &perm, layout, k, Some(o), None, None);
    }
    Ok(())
}

pub(super) fn register(r: &mut Registry) {
    r.add(OpDef::new(
        "take",
        "Takes elements from an input array along the given axis.

This function slices the input array along a particular axis with the provided indices.

Given data tensor of rank r >= 1, and indices tensor of rank q, gather entries of the axis
dimension of data (by default outer-most one as axis=0) indexed by indices, and concatenates them
in an output tensor of rank q + (r - 1).",
        Arity::Fixed(&["a", "indices"]),
        TAKE_PARAMS,
        infer_take,
        take_compute,
    ));
    r.add(
        OpDef::new(
            "pick",
            "Picks elements from an input array according to the input indices along the given axis.

Given an input array of shape ``(d0, d1)`` and indices of shape ``(i0,)``, the result will be
an output array of shape ``(i0,)`` with::

  output[i] = input[i, indices[i]]

By default, if any index mentioned is too large, it is replaced by the index that addresses
the last element along an axis (the `clip` mode).",
            Arity::Fixed(&["data", "index"]),
            PICK_PARAMS,
            infer_pick,
            pick_compute,
        )
        .aliases(&["choose_element_0index"]),
    );
    r.add(
        OpDef::new(
            "where",
            "Return the elements, either from x or y, depending on the condition.

Given three ndarrays, condition, x, and y, return an ndarray with the elements from x or y,
depending on the elements from condition are true or false. x and y must have the same shape.
If condition has the same shape as x, each element in the output array is from x if the
corresponding element in the condition is true, and from y if false.

If condition does not have the same shape as x, it must be a 1D array whose size is
the same as x's first dimension size. Each row of the output array is from x's row
if the corresponding element from condition is true, and from y's row if false.",
            Arity::Fixed(&["condition", "x", "y"]),
            &[],
            infer_where,
            where_compute,
        )
        .no_partial(),
    );
    r.add(OpDef::new(
        "one_hot",
        "Returns a one-hot array.

The locations represented by `indices` take value `on_value`, while all
other locations take value `off_value`.

`one_hot` operation with `indices` of shape ``(i0, i1)`` and `depth`  of ``d`` would result
in an output array of shape ``(i0, i1, d)``. Indices outside ``[0, depth)`` give rows of
`off_value`.",
        Arity::Fixed(&["indices"]),
        ONE_HOT_PARAMS,
        infer_one_hot,
        one_hot_compute,
    ));
    r.add(OpDef::new(
        "gather_nd",
        "Gather elements or slices from `data` and store to a tensor whose
shape is defined by `indices`.

Given `data` with shape `(X_0, X_1, ..., X_{N-1})` and indices with shape
`(M, Y_0, ..., Y_{K-1})`, the output will have shape `(Y_0, ..., Y_{K-1}, X_M, ..., X_{N-1})`,
where `M <= N`. If `M == N`, output shape will simply be `(Y_0, ..., Y_{K-1})`.
Negative indices count from the end of their axis.",
        Arity::Fixed(&["data", "indices"]),
        &[],
        infer_gather_nd,
        gather_nd_compute,
    ));
    r.add(OpDef::new(
        "scatter_nd",
        "Scatters data into a new tensor according to indices.

Given `data` with shape `(Y_0, ..., Y_{K-1}, X_M, ..., X_{N-1})` and indices with shape
`(M, Y_0, ..., Y_{K-1})`, the output will have shape `(X_0, X_1, ..., X_{N-1})`,
where `M <= N`. If `M == N`, data shape should simply be `(Y_0, ..., Y_{K-1})`.
All other entries in output are 0. On duplicate indices the last one wins.",
        Arity::Fixed(&["data", "indices"]),
        SCATTER_ND_PARAMS,
        infer_scatter_nd,
        scatter_nd_compute,
    ));
    r.add(OpDef::new(
        "_backward_gather_nd",
        "Accumulates data into a new tensor of the given shape at the positions in indices
(the gradient of gather_nd): unlike scatter_nd, the values of repeated indices add up.",
        Arity::Fixed(&["data", "indices"]),
        SCATTER_ND_PARAMS,
        infer_scatter_nd,
        scatter_add_nd_compute,
    ));
    r.add(
        OpDef::new(
            "topk",
            "Returns the indices of the top *k* elements in an input array along the given
 axis (by default).
 If ret_type is set to 'value' returns the value of top *k* elements (instead of indices).
 In case of ret_type = 'both', both value and index would be returned.
 The returned elements will be sorted. Ties keep their input order; NaN sorts above every number.",
            Arity::Fixed(&["data"]),
            TOPK_PARAMS,
            infer_topk,
            topk_compute,
        )
        .unnamed_inputs()
        .outputs(|p| if p.str("ret_typ") == "both" { 2 } else { 1 })
        .cost(8),
    );
    r.add(
        OpDef::new(
            "sort",
            "Returns a sorted copy of an input array along the given axis. Ties keep their input order; NaN sorts above every number.",
            Arity::Fixed(&["data"]),
            SORT_PARAMS,
            infer_sort::<false>,
            sort_compute::<false>,
        )
        .unnamed_inputs()
        .cost(8),
    );
    r.add(
        OpDef::new(
            "argsort",
            "Returns the indices that would sort an input array along the given axis.

This function performs sorting along the given axis and returns an array of indices having same shape
as an input array that index data in sorted order. Ties keep their input order; NaN sorts above every number.",
            Arity::Fixed(&["data"]),
            ARGSORT_PARAMS,
            infer_sort::<true>,
            sort_compute::<true>,
        )
        .unnamed_inputs()
        .cost(8),
    );
}
