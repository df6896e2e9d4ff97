//! Shape and layout ops: `Reshape`, `Flatten`, `expand_dims`, `squeeze`,
//! `transpose`, `SwapAxis`, `Concat`, `stack`, `SliceChannel`, `slice`,
//! `slice_axis`, `tile`, `repeat`, `reverse`, `broadcast_to`, `broadcast_axis`,
//! `broadcast_like`, and the slice assignments behind `NDArray.__setitem__`
//! (`_slice_assign`, `_slice_assign_scalar`).
//!
//! Every data movement here is one or more strided copies
//! ([`crate::kernels::cpu::layout`]); the ops only work out shapes and strides.

use super::copy::copy_bytes;
use super::{check_same_dtype, Arity, Blob, InferArgs, OpCall, OpDef, PType, ParamSpec, Registry};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::kernels::cpu::layout::{strided_copy, strided_fill, strides_of};
use crate::shape::{fmt_shape, Shape};
use crate::with_dtype;

type Out = Result<Vec<(Shape, DType)>>;

const DATA: Arity = Arity::Fixed(&["data"]);

/// `(2, -1, None)`: a parameter tuple the way MXNet prints it.
fn fmt_spec(t: &[i64]) -> String {
    let items: Vec<String> = t.iter().map(|x| if *x == i64::MIN { "None".to_string() } else { x.to_string() }).collect();
    match items.len() {
        1 => format!("({},)", items[0]),
        _ => format!("({})", items.join(", ")),
    }
}

/// Normalises `axis` against `ndim` (negative counts from the end).
fn norm_axis(a: &InferArgs, name: &str, axis: i64, ndim: usize, shape: &[usize]) -> Result<usize> {
    let n = ndim as i64;
    let v = if axis < 0 { axis + n } else { axis };
    if v < 0 || v >= n {
        return Err(a.err(format!(
            "{name}={axis} is out of bounds for an array of {ndim} dimension(s) (shape {}); it must be in [{}, {})",
            fmt_shape(shape),
            -n,
            n
        )));
    }
    Ok(v as usize)
}

/// Pointer to element `off` of a blob.
fn at(b: &Blob, off: isize) -> *mut u8 {
    // SAFETY: callers only form offsets inside the blob.
    unsafe { b.ptr.offset(off * b.dtype.size() as isize) }
}

/// Copies a strided view of `src` into a strided view of `dst`.
fn copy_view(shape: &[usize], src: &Blob, soff: isize, ss: &[isize], dst: &Blob, doff: isize, ds: &[isize]) {
    // SAFETY: the ops build views inside their blobs; the engine gives exclusive
    // access to the outputs, and invoke never hands an op an output overlapping an
    // input unless the op handles it (the `inplace` ops below check).
    unsafe { strided_copy(src.dtype.size(), shape, at(src, soff), ss, at(dst, doff), ds) }
}

/// Whole-buffer copy (for ops that only change the shape). A no-op in place.
fn copy_all(c: &mut OpCall) -> Result<()> {
    let (a, o) = (&c.inputs[0], &c.outputs[0]);
    copy_bytes(a.ptr, o.ptr, o.size() * o.dtype.size());
    Ok(())
}

// ---------------------------------------------------------------- reshape_like

const RESHAPE_LIKE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "lhs_begin",
        PType::OptInt,
        Some("None"),
        "Defaults to 0. The beginning index along which the lhs dimensions are to be reshaped. Supports negative indices.",
    ),
    ParamSpec::new(
        "lhs_end",
        PType::OptInt,
        Some("None"),
        "Defaults to None. The ending index along which the lhs dimensions are to be used for reshaping. Supports negative indices.",
    ),
    ParamSpec::new(
        "rhs_begin",
        PType::OptInt,
        Some("None"),
        "Defaults to 0. The beginning index along which the rhs dimensions are to be used for reshaping. Supports negative indices.",
    ),
    ParamSpec::new(
        "rhs_end",
        PType::OptInt,
        Some("None"),
        "Defaults to None. The ending index along which the rhs dimensions are to be used for reshaping. Supports negative indices.",
    ),
];

/// `[begin, end)` of an axis range with optional, possibly negative, bounds.
fn axis_range(a: &InferArgs, ndim: usize, begin: Option<i64>, end: Option<i64>, what: &str) -> Result<(usize, usize)> {
    let n = ndim as i64;
    let fix = |v: i64| if v < 0 { v + n } else { v };
    let b = fix(begin.unwrap_or(0));
    let e = fix(end.unwrap_or(n));
    if b < 0 || e > n || b > e {
        return Err(a.err(format!("invalid {what} range [{b}, {e}) for an input of {ndim} dimensions")));
    }
    Ok((b as usize, e as usize))
}

fn reshape_like_infer(a: &InferArgs) -> Out {
    let (l, r) = (a.shapes[0], a.shapes[1]);
    let (lb, le) = axis_range(a, l.len(), a.params.opt_int("lhs_begin"), a.params.opt_int("lhs_end"), "lhs")?;
    let (rb, re) = axis_range(a, r.len(), a.params.opt_int("rhs_begin"), a.params.opt_int("rhs_end"), "rhs")?;
    let mut out: Shape = Shape::from_slice(&l[..lb]);
    out.extend_from_slice(&r[rb..re]);
    out.extend_from_slice(&l[le..]);
    if crate::shape::size(&out) != crate::shape::size(l) {
        return Err(a.err(format!(
            "cannot reshape lhs of shape {} like {}: the new shape {} has a different size",
            fmt_shape(l),
            fmt_shape(r),
            fmt_shape(&out)
        )));
    }
    Ok(vec![(out, a.dtypes[0])])
}

// ---------------------------------------------------------------- Reshape

/// MXNet's `Reshape` rule: the output shape for input shape `src` and target
/// `spec`, which may hold the special values
/// - `0`: copy the next input dimension;
/// - `-1`: infer this dimension from the remaining size (at most one);
/// - `-2`: copy all remaining input dimensions;
/// - `-3`: the product of the next two input dimensions;
/// - `-4`: split the next input dimension into the two values that follow
///   (one of them may be -1).
///
/// Positive values consume one input dimension each, like `0` and `-1`. With
/// `reverse`, input dims and `spec` are both read right to left (and the result
/// reversed back). The result must hold exactly as many elements as `src`.
pub fn infer_reshape(src: &[usize], spec: &[i64], reverse: bool) -> Result<Shape> {
    let err = |msg: String| {
        Error::op(
            "Reshape",
            format!("{msg} (input shape {}, shape={}, reverse={})", fmt_shape(src), fmt_spec(spec), if reverse { "True" } else { "False" }),
        )
    };
    if spec.is_empty() {
        return Err(err("the target shape must be given".into()));
    }
    let mut dims: Vec<usize> = src.to_vec();
    let mut sp: Vec<i64> = spec.to_vec();
    if reverse {
        dims.reverse();
        sp.reverse();
    }
    // Position of item i of `sp` in the caller's spec, for messages.
    let pos = |i: usize| if reverse { spec.len() - 1 - i } else { i };
    let mut out: Vec<usize> = Vec::with_capacity(sp.len() + dims.len());
    let mut infer_at: Option<usize> = None;
    let mut si = 0usize;
    let mut i = 0usize;
    while i < sp.len() {
        match sp[i] {
            0 => {
                let d = *dims.get(si).ok_or_else(|| {
                    err(format!("0 at position {} copies input dimension {si}, but the input has only {} dimension(s)", pos(i), dims.len()))
                })?;
                out.push(d);
                si += 1;
            }
            -1 => {
                if infer_at.is_some() {
                    return Err(err("only one dimension can be inferred (-1)".into()));
                }
                infer_at = Some(out.len());
                out.push(1);
                si += 1;
            }
            -2 => {
                while si < dims.len() {
                    out.push(dims[si]);
                    si += 1;
                }
            }
            -3 => {
                if si + 1 >= dims.len() {
                    return Err(err(format!(
                        "-3 at position {} merges input dimensions {si} and {}, but the input has only {} dimension(s)",
                        pos(i),
                        si + 1,
                        dims.len()
                    )));
                }
                out.push(dims[si] * dims[si + 1]);
                si += 2;
            }
            -4 => {
                if i + 2 >= sp.len() {
                    return Err(err(format!("-4 at position {} must be followed by the two dimensions to split into", pos(i))));
                }
                let d0 = *dims.get(si).ok_or_else(|| {
                    err(format!(
                        "-4 at position {} splits input dimension {si}, but the input has only {} dimension(s)",
                        pos(i),
                        dims.len()
                    ))
                })?;
                si += 1;
                let (mut d1, mut d2) = (sp[i + 1], sp[i + 2]);
                i += 2;
                if d1 == -1 && d2 == -1 {
                    return Err(err("the two dimensions after -4 cannot both be -1".into()));
                }
                if d1 < -1 || d2 < -1 {
                    return Err(err(format!("the dimensions after -4 must be non-negative or -1, got {d1}, {d2}")));
                }
                if d1 == -1 && d2 > 0 && d0 as i64 % d2 == 0 {
                    d1 = d0 as i64 / d2;
                }
                if d2 == -1 && d1 > 0 && d0 as i64 % d1 == 0 {
                    d2 = d0 as i64 / d1;
                }
                if d1 < 0 || d2 < 0 || d1 * d2 != d0 as i64 {
                    return Err(err(format!("split dimensions {}, {} do not divide input dimension {d0}", sp[i - 1], sp[i])));
                }
                out.push(d1 as usize);
                out.push(d2 as usize);
            }
            d if d > 0 => {
                out.push(d as usize);
                si += 1;
            }
            d => {
                return Err(err(format!(
                    "invalid value {d} at position {}: dimensions must be positive or one of the special values 0, -1, -2, -3, -4",
                    pos(i)
                )))
            }
        }
        i += 1;
    }
    let total: usize = src.iter().product();
    if let Some(k) = infer_at {
        let known: usize = out.iter().product();
        if known == 0 {
            return Err(err(format!("cannot infer the -1 dimension: the other dimensions hold no element, the input holds {total}")));
        }
        if !total.is_multiple_of(known) {
            return Err(err(format!("cannot infer the -1 dimension: {total} elements do not divide into parts of {known}")));
        }
        out[k] = total / known;
    }
    if reverse {
        out.reverse();
    }
    let size: usize = out.iter().product();
    if size != total {
        return Err(err(format!("target shape {} holds {size} element(s) but the input holds {total}", fmt_shape(&out))));
    }
    Ok(Shape::from_slice(&out))
}

/// The deprecated `target_shape` / `keep_highest` rule: one 0 (after the kept
/// first dim) is inferred from the remaining size.
fn legacy_reshape(a: &InferArgs, src: &[usize], target: &[i64], keep_highest: bool) -> Result<Shape> {
    let mut t = target.to_vec();
    if keep_highest {
        let d = *src.first().ok_or_else(|| a.err("keep_highest needs an input with at least one dimension"))?;
        t[0] = d as i64;
    }
    if let Some(d) = t.iter().find(|d| **d < 0) {
        return Err(a.err(format!("negative dimension {d} in target_shape {}", fmt_spec(target))));
    }
    let start = usize::from(keep_highest);
    let zeros: Vec<usize> = (start..t.len()).filter(|&i| t[i] == 0).collect();
    let total: usize = src.iter().product();
    if zeros.len() == 1 {
        let known: i64 = t.iter().enumerate().filter(|(i, _)| *i != zeros[0]).map(|(_, d)| *d).product();
        if known == 0 || total as i64 % known != 0 {
            return Err(a.err(format!(
                "cannot infer the 0 dimension of target_shape {} from input shape {}",
                fmt_spec(target),
                fmt_shape(src)
            )));
        }
        t[zeros[0]] = total as i64 / known;
    }
    let out: Shape = t.iter().map(|d| *d as usize).collect();
    if out.iter().product::<usize>() != total {
        return Err(a.err(format!("cannot reshape array of shape {} into target_shape {}", fmt_shape(src), fmt_spec(target))));
    }
    Ok(out)
}

const RESHAPE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("shape", PType::Tuple, Some("()"), "The target shape"),
    ParamSpec::new("reverse", PType::Bool, Some("False"), "If true then the special values are inferred from right to left"),
    ParamSpec::new(
        "target_shape",
        PType::Tuple,
        Some("()"),
        "(Deprecated! Use ``shape`` instead.) Target new shape. One and only one dim can be 0, in which case it will be inferred from the rest of dims",
    ),
    ParamSpec::new(
        "keep_highest",
        PType::Bool,
        Some("False"),
        "(Deprecated! Use ``shape`` instead.) Whether keep the highest dim unchanged.If set to true, then the first dim in target_shape is ignored,and always fixed as input",
    ),
];

fn reshape_infer(a: &InferArgs) -> Out {
    let src = a.shapes[0];
    let spec = a.params.tuple("shape");
    let out = if !spec.is_empty() {
        infer_reshape(src, &spec, a.params.bool("reverse"))?
    } else {
        let target = a.params.tuple("target_shape");
        if target.is_empty() {
            return Err(a.err(format!("the target shape must be given (input shape {})", fmt_shape(src))));
        }
        legacy_reshape(a, src, &target, a.params.bool("keep_highest"))?
    };
    Ok(vec![(out, a.dtypes[0])])
}

fn flatten_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    if s.is_empty() {
        return Err(a.err("cannot flatten a 0-d array: the input needs at least one dimension"));
    }
    Ok(vec![(Shape::from_slice(&[s[0], s[1..].iter().product()]), a.dtypes[0])])
}

const EXPAND_PARAMS: &[ParamSpec] = &[ParamSpec::new(
    "axis",
    PType::Int,
    None,
    "Position where new axis is to be inserted. Suppose that the input `NDArray`'s dimension is `ndim`, the range of the inserted axis is `[-ndim, ndim]`",
)];

fn expand_dims_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    let n = s.len() as i64;
    let axis = a.params.int("axis");
    let ax = if axis < 0 { axis + n + 1 } else { axis };
    if ax < 0 || ax > n {
        return Err(a.err(format!("axis={axis} is out of range for input shape {}: it must be in [{}, {n}]", fmt_shape(s), -n - 1)));
    }
    let mut out = Shape::from_slice(s);
    out.insert(ax as usize, 1);
    Ok(vec![(out, a.dtypes[0])])
}

const SQUEEZE_PARAMS: &[ParamSpec] = &[ParamSpec::new(
    "axis",
    PType::OptTuple,
    Some("None"),
    "Selects a subset of the single-dimensional entries in the shape. If an axis is selected with shape entry greater than one, an error is raised.",
)];

fn squeeze_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    let mut keep = vec![true; s.len()];
    match a.params.opt_tuple("axis") {
        None => {
            for (k, d) in keep.iter_mut().zip(s) {
                *k = *d != 1;
            }
        }
        Some(axes) => {
            for ax in axes {
                let i = norm_axis(a, "axis", ax, s.len(), s)?;
                if !keep[i] {
                    return Err(a.err(format!("duplicate value {ax} in axis")));
                }
                if s[i] != 1 {
                    return Err(a.err(format!("cannot squeeze axis {ax} of shape {}: its size is {}, not 1", fmt_shape(s), s[i])));
                }
                keep[i] = false;
            }
        }
    }
    let mut out: Shape = s.iter().zip(&keep).filter(|(_, k)| **k).map(|(d, _)| *d).collect();
    if out.is_empty() && !s.is_empty() {
        // MXNet keeps one dimension when every axis is squeezed out.
        out.push(1);
    }
    Ok(vec![(out, a.dtypes[0])])
}

// ---------------------------------------------------------------- transpose

const TRANSPOSE_PARAMS: &[ParamSpec] =
    &[ParamSpec::new("axes", PType::Tuple, Some("()"), "Target axis order. By default the axes will be inverted.")];

/// The permutation: `axes` checked against `ndim`, or the reversal.
fn transpose_axes(a: &InferArgs, s: &[usize]) -> Result<Vec<usize>> {
    let axes = a.params.tuple("axes");
    let n = s.len();
    if axes.is_empty() {
        return Ok((0..n).rev().collect());
    }
    if axes.len() != n {
        return Err(a.err(format!(
            "axes {} has {} entries but the input shape {} has {n} dimension(s)",
            fmt_spec(&axes),
            axes.len(),
            fmt_shape(s)
        )));
    }
    let mut seen = vec![false; n];
    let mut out = Vec::with_capacity(n);
    for &ax in &axes {
        if ax < 0 || ax >= n as i64 {
            return Err(a.err(format!("axes {}: entry {ax} is out of range [0, {n}) for input shape {}", fmt_spec(&axes), fmt_shape(s))));
        }
        if seen[ax as usize] {
            return Err(a.err(format!("axes {} repeats axis {ax}; it must be a permutation of 0..{n}", fmt_spec(&axes))));
        }
        seen[ax as usize] = true;
        out.push(ax as usize);
    }
    Ok(out)
}

/// Copies `data` into `out`, whose dim i is input dim `perm[i]`.
fn permute(src: &Blob, dst: &Blob, perm: &[usize]) {
    let is = strides_of(&src.shape);
    let ss: Vec<isize> = perm.iter().map(|&p| is[p]).collect();
    copy_view(&dst.shape, src, 0, &ss, dst, 0, &strides_of(&dst.shape));
}

fn infer_permuted(a: &InferArgs, perm: &[usize]) -> Out {
    let s = a.shapes[0];
    Ok(vec![(perm.iter().map(|&p| s[p]).collect(), a.dtypes[0])])
}

fn transpose_infer(a: &InferArgs) -> Out {
    let perm = transpose_axes(a, a.shapes[0])?;
    infer_permuted(a, &perm)
}

fn transpose_compute(c: &mut OpCall) -> Result<()> {
    let n = c.inputs[0].shape.len();
    let axes = c.params.tuple("axes");
    let perm: Vec<usize> = if axes.is_empty() { (0..n).rev().collect() } else { axes.iter().map(|&x| x as usize).collect() };
    permute(&c.inputs[0], &c.outputs[0], &perm);
    Ok(())
}

const SWAP_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("dim1", PType::Int, Some("0"), "the first axis to be swapped."),
    ParamSpec::new("dim2", PType::Int, Some("0"), "the second axis to be swapped."),
];

fn swap_perm(a: &InferArgs) -> Result<Vec<usize>> {
    let s = a.shapes[0];
    let d1 = norm_axis(a, "dim1", a.params.int("dim1"), s.len(), s)?;
    let d2 = norm_axis(a, "dim2", a.params.int("dim2"), s.len(), s)?;
    let mut perm: Vec<usize> = (0..s.len()).collect();
    perm.swap(d1, d2);
    Ok(perm)
}

fn swap_infer(a: &InferArgs) -> Out {
    let perm = swap_perm(a)?;
    infer_permuted(a, &perm)
}

fn swap_compute(c: &mut OpCall) -> Result<()> {
    let n = c.inputs[0].shape.len() as i64;
    let norm = |d: i64| (if d < 0 { d + n } else { d }) as usize;
    let mut perm: Vec<usize> = (0..n as usize).collect();
    perm.swap(norm(c.params.int("dim1")), norm(c.params.int("dim2")));
    permute(&c.inputs[0], &c.outputs[0], &perm);
    Ok(())
}

// ---------------------------------------------------------------- Concat, stack, split

const CONCAT_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("num_args", PType::Int, None, "Number of inputs to be concated."),
    ParamSpec::new("dim", PType::Int, Some("1"), "the dimension to be concated."),
];

fn concat_axis(a: &InferArgs) -> Result<usize> {
    let s0 = a.shapes[0];
    let nd = s0.len();
    let dim = a.params.int("dim");
    let n = nd as i64;
    let v = if dim < 0 { dim + n } else { dim };
    if v < 0 || v >= n {
        return Err(a.err(format!("dim={dim} is out of range for inputs of shape {} (it must be in [{}, {n}))", fmt_shape(s0), -n)));
    }
    Ok(v as usize)
}

fn concat_infer(a: &InferArgs) -> Out {
    if a.shapes.is_empty() {
        return Err(a.err("num_args must be at least 1"));
    }
    let d = check_same_dtype(a)?;
    let axis = concat_axis(a)?;
    let s0 = a.shapes[0];
    let mut out = Shape::from_slice(s0);
    out[axis] = 0;
    for (k, s) in a.shapes.iter().enumerate() {
        let ok = s.len() == s0.len() && (0..s0.len()).all(|i| i == axis || s[i] == s0[i]);
        if !ok {
            return Err(a.err(format!(
                "shape mismatch: input 0 has shape {} but input {k} has shape {}; all dimensions except dim={} must match",
                fmt_shape(s0),
                fmt_shape(s),
                a.params.int("dim")
            )));
        }
        out[axis] += s[axis];
    }
    Ok(vec![(out, d)])
}

/// How `Concat` lays its inputs into the output: each input `i` is an
/// `outer x row_i` matrix copied into the output's `outer x total` one at column
/// `off_i`. Returns (outer, total, [(row_i, off_i)]); the CPU and CUDA computes share it.
pub(super) fn concat_layout(c: &OpCall) -> (usize, usize, Vec<(usize, usize)>) {
    let o = &c.outputs[0];
    let nd = o.shape.len() as i64;
    let dim = c.params.int("dim");
    let axis = (if dim < 0 { dim + nd } else { dim }) as usize;
    let outer: usize = o.shape[..axis].iter().product();
    let inner: usize = o.shape[axis + 1..].iter().product();
    let mut off = 0usize;
    let parts = c
        .inputs
        .iter()
        .map(|x| {
            let row = x.shape[axis] * inner;
            off += row;
            (row, off - row)
        })
        .collect();
    (outer, o.shape[axis] * inner, parts)
}

fn concat_compute(c: &mut OpCall) -> Result<()> {
    let (outer, total, parts) = concat_layout(c);
    for (x, (row, off)) in c.inputs.iter().zip(parts) {
        copy_view(&[outer, row], x, 0, &[row as isize, 1], &c.outputs[0], off as isize, &[total as isize, 1]);
    }
    Ok(())
}

const STACK_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("axis", PType::Int, Some("0"), "The axis in the result array along which the input arrays are stacked."),
    ParamSpec::new("num_args", PType::Int, None, "Number of inputs to be stacked."),
];

pub(super) fn stack_axis(axis: i64, ndim: usize) -> Option<usize> {
    let n = ndim as i64 + 1;
    let v = if axis < 0 { axis + n } else { axis };
    (0..n).contains(&v).then_some(v as usize)
}

fn stack_infer(a: &InferArgs) -> Out {
    if a.shapes.is_empty() {
        return Err(a.err("num_args must be at least 1"));
    }
    let d = check_same_dtype(a)?;
    let s0 = a.shapes[0];
    for (k, s) in a.shapes.iter().enumerate().skip(1) {
        if *s != s0 {
            return Err(a.err(format!(
                "shape mismatch: input 0 has shape {} but input {k} has shape {}; all inputs must have the same shape",
                fmt_shape(s0),
                fmt_shape(s)
            )));
        }
    }
    let axis = a.params.int("axis");
    let ax = stack_axis(axis, s0.len()).ok_or_else(|| {
        a.err(format!(
            "axis={axis} is out of range for stacking inputs of shape {} (it must be in [{}, {}])",
            fmt_shape(s0),
            -(s0.len() as i64) - 1,
            s0.len()
        ))
    })?;
    let mut out = Shape::from_slice(s0);
    out.insert(ax, a.shapes.len());
    Ok(vec![(out, d)])
}

fn stack_compute(c: &mut OpCall) -> Result<()> {
    let o = &c.outputs[0];
    let s = &c.inputs[0].shape;
    let ax = stack_axis(c.params.int("axis"), s.len()).unwrap_or(0);
    let outer: usize = s[..ax].iter().product();
    let inner: usize = s[ax..].iter().product();
    let k = c.inputs.len();
    for (i, x) in c.inputs.iter().enumerate() {
        copy_view(&[outer, inner], x, 0, &[inner as isize, 1], o, (i * inner) as isize, &[(k * inner) as isize, 1]);
    }
    Ok(())
}

const SPLIT_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("num_outputs", PType::Int, None, "Number of splits. Note that this should evenly divide the length of the `axis`."),
    ParamSpec::new("axis", PType::Int, Some("1"), "Axis along which to split."),
    ParamSpec::new(
        "squeeze_axis",
        PType::Bool,
        Some("False"),
        "If true, Removes the axis with length 1 from the shapes of the output arrays. **Note** that setting `squeeze_axis` to ``true`` removes axis with length 1 only along the `axis` which it is split. Also `squeeze_axis` can be set to ``true`` only if ``input.shape[axis] == num_outputs``.",
    ),
];

fn split_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    let n = a.params.int("num_outputs");
    if n < 1 {
        return Err(a.err(format!("num_outputs must be at least 1, got {n}")));
    }
    let ax = norm_axis(a, "axis", a.params.int("axis"), s.len(), s)?;
    let n = n as usize;
    if !s[ax].is_multiple_of(n) {
        return Err(a.err(format!(
            "cannot split axis {ax} of shape {} into num_outputs={n} equal parts: {n} does not divide {}",
            fmt_shape(s),
            s[ax]
        )));
    }
    let mut part = Shape::from_slice(s);
    if a.params.bool("squeeze_axis") {
        if s[ax] != n {
            return Err(a.err(format!(
                "squeeze_axis=True needs the split axis to have size num_outputs={n}, but axis {ax} of shape {} has size {}",
                fmt_shape(s),
                s[ax]
            )));
        }
        part.remove(ax);
    } else {
        part[ax] = s[ax] / n;
    }
    Ok(vec![(part, a.dtypes[0]); n])
}

fn split_compute(c: &mut OpCall) -> Result<()> {
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
        copy_view(&[outer, row], x, (k * row) as isize, &[(s[ax] * inner) as isize, 1], o, 0, &[row as isize, 1]);
    }
    Ok(())
}

// ---------------------------------------------------------------- slicing

/// A resolved slice: per input dim, first index, step and output length.
pub(super) struct SliceSpec {
    begin: Vec<isize>,
    step: Vec<isize>,
    pub(super) out: Shape,
}

impl SliceSpec {
    /// Offset of the first element and element strides of the sliced view of an
    /// array of shape `shape`.
    pub(super) fn view(&self, shape: &[usize]) -> (isize, Vec<isize>) {
        let st = strides_of(shape);
        let off = self.begin.iter().zip(&st).map(|(b, s)| b * s).sum();
        let ss = self.step.iter().zip(&st).map(|(k, s)| k * s).collect();
        (off, ss)
    }
}

/// Python slicing of one axis of length `len`: (first index, number of items).
fn slice_dim(len: usize, b: Option<i64>, e: Option<i64>, step: i64) -> (i64, usize) {
    let n = len as i64;
    if step > 0 {
        let clamp = |v: i64| if v < 0 { (v + n).max(0) } else { v.min(n) };
        let b = b.map_or(0, clamp);
        let e = e.map_or(n, clamp);
        (b, if e > b { ((e - b - 1) / step + 1) as usize } else { 0 })
    } else {
        let clamp = |v: i64| if v < 0 { (v + n).max(-1) } else { v.min(n - 1) };
        let b = b.map_or(n - 1, clamp);
        let e = e.map_or(-1, clamp);
        (b, if b > e { ((b - e - 1) / (-step) + 1) as usize } else { 0 })
    }
}

/// Resolves `begin`/`end`/`step` (None items stored as `i64::MIN`) against `shape`
/// with Python's slicing rules; dims past `begin`'s length are taken whole.
fn slice_spec(a: &InferArgs, shape: &[usize]) -> Result<SliceSpec> {
    let p = a.params;
    let (begin, end, step) = (p.tuple("begin"), p.tuple("end"), p.tuple("step"));
    if shape.is_empty() {
        return Err(a.err("cannot slice a 0-d array"));
    }
    if begin.len() != end.len() {
        return Err(a.err(format!("begin {} and end {} must have the same length", fmt_spec(&begin), fmt_spec(&end))));
    }
    if begin.len() > shape.len() {
        return Err(a.err(format!(
            "begin {} slices {} axes but the input shape {} has only {}",
            fmt_spec(&begin),
            begin.len(),
            fmt_shape(shape),
            shape.len()
        )));
    }
    if !step.is_empty() && step.len() != begin.len() {
        return Err(a.err(format!("step {} and begin {} must have the same length", fmt_spec(&step), fmt_spec(&begin))));
    }
    let opt = |v: i64| (v != i64::MIN).then_some(v);
    let mut spec = SliceSpec { begin: Vec::new(), step: Vec::new(), out: Shape::new() };
    for (i, &len) in shape.iter().enumerate() {
        if i < begin.len() {
            let s = step.get(i).copied().and_then(opt).unwrap_or(1);
            if s == 0 {
                return Err(a.err(format!("step[{i}] cannot be 0 (step={})", fmt_spec(&step))));
            }
            let (b, n) = slice_dim(len, opt(begin[i]), opt(end[i]), s);
            spec.begin.push(if n == 0 { 0 } else { b as isize });
            spec.step.push(s as isize);
            spec.out.push(n);
        } else {
            spec.begin.push(0);
            spec.step.push(1);
            spec.out.push(len);
        }
    }
    Ok(spec)
}

const SLICE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("begin", PType::OptIntTuple, None, "starting indices for the slice operation, supports negative indices."),
    ParamSpec::new("end", PType::OptIntTuple, None, "ending indices for the slice operation, supports negative indices."),
    ParamSpec::new("step", PType::OptIntTuple, Some("()"), "step for the slice operation, supports negative values."),
];

/// `InferArgs` is needed by `slice_spec` for its messages; computes rebuild one.
pub(super) fn spec_in_compute(c: &OpCall, shape: &[usize]) -> Result<SliceSpec> {
    let shapes = [shape];
    let a = InferArgs { op: c.op, params: c.params, shapes: &shapes, dtypes: &[] };
    slice_spec(&a, shape)
}

fn slice_infer(a: &InferArgs) -> Out {
    let spec = slice_spec(a, a.shapes[0])?;
    Ok(vec![(spec.out, a.dtypes[0])])
}

fn slice_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let spec = spec_in_compute(c, &x.shape)?;
    let (off, ss) = spec.view(&x.shape);
    copy_view(&o.shape, x, off, &ss, o, 0, &strides_of(&o.shape));
    Ok(())
}

const SLICE_AXIS_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("axis", PType::Int, None, "Axis along which to be sliced, supports negative indexes."),
    ParamSpec::new("begin", PType::Int, None, "The beginning index along the axis to be sliced,  supports negative indexes."),
    ParamSpec::new("end", PType::OptInt, None, "The ending index along the axis to be sliced,  supports negative indexes."),
];

/// (axis, begin, end) of `slice_axis`, checked: `0 <= begin < end <= len`.
pub(super) fn slice_axis_range(a: &InferArgs, s: &[usize]) -> Result<(usize, usize, usize)> {
    let ax = norm_axis(a, "axis", a.params.int("axis"), s.len(), s)?;
    let len = s[ax] as i64;
    let b0 = a.params.int("begin");
    let e0 = a.params.opt_int("end");
    let b = if b0 < 0 { b0 + len } else { b0 };
    let e = match e0 {
        None => len,
        Some(e) if e < 0 => e + len,
        Some(e) => e,
    };
    let shown = e0.map_or("None".to_string(), |e| e.to_string());
    if b < 0 || b >= len {
        return Err(a.err(format!("begin={b0} is out of range for axis {ax} of size {len} (shape {})", fmt_shape(s))));
    }
    if e > len {
        return Err(a.err(format!("end={shown} is out of range for axis {ax} of size {len} (shape {})", fmt_shape(s))));
    }
    if b >= e {
        return Err(a.err(format!("invalid range begin={b0}, end={shown} for axis {ax} of size {len}: begin must come before end")));
    }
    Ok((ax, b as usize, e as usize))
}

fn slice_axis_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    let (ax, b, e) = slice_axis_range(a, s)?;
    let mut out = Shape::from_slice(s);
    out[ax] = e - b;
    Ok(vec![(out, a.dtypes[0])])
}

fn slice_axis_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let shapes = [&x.shape[..]];
    let a = InferArgs { op: c.op, params: c.params, shapes: &shapes, dtypes: &[] };
    let (ax, b, _) = slice_axis_range(&a, &x.shape)?;
    let st = strides_of(&x.shape);
    copy_view(&o.shape, x, b as isize * st[ax], &st, o, 0, &strides_of(&o.shape));
    Ok(())
}

const SLICE_ASSIGN_PARAMS: &[ParamSpec] = SLICE_PARAMS;

fn slice_assign_infer(a: &InferArgs) -> Out {
    let (lhs, rhs) = (a.shapes[0], a.shapes[1]);
    if a.dtypes[0] != a.dtypes[1] {
        return Err(a.err(format!("dtype mismatch: lhs is {} but rhs is {}", a.dtypes[0].name(), a.dtypes[1].name())));
    }
    let spec = slice_spec(a, lhs)?;
    if rhs != &spec.out[..] {
        return Err(a.err(format!(
            "rhs has shape {} but the slice begin={}, end={}, step={} of lhs shape {} has shape {}",
            fmt_shape(rhs),
            fmt_spec(&a.params.tuple("begin")),
            fmt_spec(&a.params.tuple("end")),
            fmt_spec(&a.params.tuple("step")),
            fmt_shape(lhs),
            fmt_shape(&spec.out)
        )));
    }
    Ok(vec![(Shape::from_slice(lhs), a.dtypes[0])])
}

fn overlaps(a: &Blob, b: &Blob) -> bool {
    let (a0, a1) = (a.ptr as usize, a.ptr as usize + a.size() * a.dtype.size());
    let (b0, b1) = (b.ptr as usize, b.ptr as usize + b.size() * b.dtype.size());
    a0 < b1 && b0 < a1
}

/// `out = lhs; out[slice] = rhs`. `out` may be `lhs` itself (then only the slice
/// region is written); an `rhs` sharing memory with `out` is read from a copy.
fn slice_assign_compute(c: &mut OpCall) -> Result<()> {
    let (lhs, rhs, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let spec = spec_in_compute(c, &lhs.shape)?;
    let esize = o.dtype.size();
    let rbytes = rhs.size() * esize;
    let mut tmp: Vec<u64> = Vec::new();
    let rsrc = if overlaps(rhs, o) {
        tmp.resize(rbytes.div_ceil(8), 0);
        copy_bytes(rhs.ptr, tmp.as_mut_ptr() as *mut u8, rbytes);
        Blob { ptr: tmp.as_mut_ptr() as *mut u8, shape: rhs.shape.clone(), dtype: rhs.dtype }
    } else {
        rhs.clone()
    };
    copy_bytes(lhs.ptr, o.ptr, o.size() * esize);
    let (off, ds) = spec.view(&o.shape);
    copy_view(&spec.out, &rsrc, 0, &strides_of(&spec.out), o, off, &ds);
    Ok(())
}

const SLICE_ASSIGN_SCALAR_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("scalar", PType::Float, Some("0"), "The scalar value for assignment."),
    SLICE_PARAMS[0],
    SLICE_PARAMS[1],
    SLICE_PARAMS[2],
];

fn slice_assign_scalar_infer(a: &InferArgs) -> Out {
    slice_spec(a, a.shapes[0])?;
    Ok(vec![(Shape::from_slice(a.shapes[0]), a.dtypes[0])])
}

fn slice_assign_scalar_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let spec = spec_in_compute(c, &x.shape)?;
    let esize = o.dtype.size();
    copy_bytes(x.ptr, o.ptr, o.size() * esize);
    let v = c.params.float("scalar");
    let mut bytes = [0u8; 8];
    if o.dtype == DType::Bool {
        bytes[0] = (v != 0.0) as u8;
    } else {
        with_dtype!(o.dtype, T, {
            let t = <T as Element>::from_f64(v);
            // SAFETY: T is plain old data of esize <= 8 bytes.
            unsafe { std::ptr::copy_nonoverlapping(std::ptr::addr_of!(t).cast::<u8>(), bytes.as_mut_ptr(), esize) };
        });
    }
    let (off, ds) = spec.view(&o.shape);
    // SAFETY: the view lies inside the output, which we own.
    unsafe { strided_fill(esize, &spec.out, at(o, off), &ds, &bytes[..esize]) };
    Ok(())
}

// ---------------------------------------------------------------- tile, repeat, reverse

const TILE_PARAMS: &[ParamSpec] = &[ParamSpec::new(
    "reps",
    PType::Tuple,
    None,
    "The number of times for repeating the tensor a. Each dim size of reps must be a positive integer. If reps has length d, the result will have dimension of max(d, a.ndim); If a.ndim < d, a is promoted to be d-dimensional by prepending new axes. If a.ndim > d, reps is promoted to a.ndim by pre-pending 1's to it.",
)];

/// Input shape and reps, both padded with leading 1s to the output rank.
pub(super) fn tile_dims(a: &InferArgs, s: &[usize]) -> Result<(Vec<usize>, Vec<usize>)> {
    let reps = a.params.tuple("reps");
    if let Some(r) = reps.iter().find(|r| **r < 1) {
        return Err(a.err(format!("reps {} must hold positive integers, got {r}", fmt_spec(&reps))));
    }
    let n = s.len().max(reps.len());
    let mut ds = vec![1usize; n - s.len()];
    ds.extend_from_slice(s);
    let mut rs = vec![1usize; n - reps.len()];
    rs.extend(reps.iter().map(|r| *r as usize));
    Ok((ds, rs))
}

fn tile_infer(a: &InferArgs) -> Out {
    let (ds, rs) = tile_dims(a, a.shapes[0])?;
    Ok(vec![(ds.iter().zip(&rs).map(|(d, r)| d * r).collect(), a.dtypes[0])])
}

fn tile_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let shapes = [&x.shape[..]];
    let a = InferArgs { op: c.op, params: c.params, shapes: &shapes, dtypes: &[] };
    let (ds, rs) = tile_dims(&a, &x.shape)?;
    // Output index (r_i * d_i + k_i) read as the 2n-d index (r_0, k_0, r_1, k_1, ...).
    let st = strides_of(&ds);
    let mut shape = Vec::with_capacity(2 * ds.len());
    let mut ss = Vec::with_capacity(2 * ds.len());
    for i in 0..ds.len() {
        shape.extend([rs[i], ds[i]]);
        ss.extend([0, st[i]]);
    }
    copy_view(&shape, x, 0, &ss, o, 0, &strides_of(&shape));
    Ok(())
}

const REPEAT_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("repeats", PType::Int, None, "The number of repetitions for each element."),
    ParamSpec::new(
        "axis",
        PType::OptInt,
        Some("None"),
        "The axis along which to repeat values. The negative numbers are interpreted counting from the backward. By default, use the flattened input array, and return a flat output array.",
    ),
];

/// The input viewed as (outer, len, inner) and the repeat count.
pub(super) fn repeat_dims(a: &InferArgs, s: &[usize]) -> Result<(usize, usize, usize, usize)> {
    let r = a.params.int("repeats");
    if r < 0 {
        return Err(a.err(format!("repeats cannot be a negative number, got {r}")));
    }
    match a.params.opt_int("axis") {
        None => Ok((1, s.iter().product(), 1, r as usize)),
        Some(axis) => {
            let ax = norm_axis(a, "axis", axis, s.len(), s)?;
            Ok((s[..ax].iter().product(), s[ax], s[ax + 1..].iter().product(), r as usize))
        }
    }
}

fn repeat_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    let (_, _, _, r) = repeat_dims(a, s)?;
    let out = match a.params.opt_int("axis") {
        None => Shape::from_slice(&[s.iter().product::<usize>() * r]),
        Some(axis) => {
            let ax = norm_axis(a, "axis", axis, s.len(), s)?;
            let mut out = Shape::from_slice(s);
            out[ax] *= r;
            out
        }
    };
    Ok(vec![(out, a.dtypes[0])])
}

fn repeat_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let shapes = [&x.shape[..]];
    let a = InferArgs { op: c.op, params: c.params, shapes: &shapes, dtypes: &[] };
    let (outer, len, inner, r) = repeat_dims(&a, &x.shape)?;
    let shape = [outer, len, r, inner];
    let ss = [(len * inner) as isize, inner as isize, 0, 1];
    copy_view(&shape, x, 0, &ss, o, 0, &strides_of(&shape));
    Ok(())
}

const REVERSE_PARAMS: &[ParamSpec] = &[ParamSpec::new("axis", PType::Tuple, None, "The axis which to reverse elements.")];

/// Which axes end up reversed (an axis listed twice is reversed twice).
pub(super) fn reverse_axes(a: &InferArgs, s: &[usize]) -> Result<Vec<bool>> {
    let axes = a.params.tuple("axis");
    let mut flip = vec![false; s.len()];
    for &ax in &axes {
        if ax < 0 || ax >= s.len() as i64 {
            return Err(a.err(format!(
                "axis {} holds {ax}, out of range [0, {}) for input shape {}",
                fmt_spec(&axes),
                s.len(),
                fmt_shape(s)
            )));
        }
        flip[ax as usize] ^= true;
    }
    Ok(flip)
}

fn reverse_infer(a: &InferArgs) -> Out {
    reverse_axes(a, a.shapes[0])?;
    Ok(vec![(Shape::from_slice(a.shapes[0]), a.dtypes[0])])
}

fn reverse_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let shapes = [&x.shape[..]];
    let a = InferArgs { op: c.op, params: c.params, shapes: &shapes, dtypes: &[] };
    let flip = reverse_axes(&a, &x.shape)?;
    let mut ss = strides_of(&x.shape);
    let mut off = 0isize;
    for (i, f) in flip.iter().enumerate() {
        if *f && x.shape[i] > 0 {
            off += (x.shape[i] as isize - 1) * ss[i];
            ss[i] = -ss[i];
        }
    }
    copy_view(&o.shape, x, off, &ss, o, 0, &strides_of(&o.shape));
    Ok(())
}

// ---------------------------------------------------------------- broadcasts

/// Copies `x` broadcast to the output's shape (same rank; size-1 dims repeat).
fn broadcast_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let mut ss = strides_of(&x.shape);
    for (i, s) in ss.iter_mut().enumerate() {
        if x.shape[i] != o.shape[i] {
            *s = 0;
        }
    }
    copy_view(&o.shape, x, 0, &ss, o, 0, &strides_of(&o.shape));
    Ok(())
}

const BROADCAST_TO_PARAMS: &[ParamSpec] = &[ParamSpec::new(
    "shape",
    PType::Tuple,
    Some("()"),
    "The shape of the desired array. We can set the dim to zero if it's same as the original. E.g `A = broadcast_to(B, shape=(10, 0, 0))` has the same meaning as `A = broadcast_axis(B, axis=0, size=10)`.",
)];

fn broadcast_to_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    let t = a.params.tuple("shape");
    let bad = || a.err(format!("array of shape {} cannot be broadcast to shape {}", fmt_shape(s), fmt_spec(&t)));
    if t.len() != s.len() {
        return Err(a.err(format!(
            "array of shape {} cannot be broadcast to shape {}: the target must have the same number of dimensions ({})",
            fmt_shape(s),
            fmt_spec(&t),
            s.len()
        )));
    }
    let mut out = Shape::new();
    for (d, &want) in s.iter().zip(&t) {
        if want < 0 {
            return Err(bad());
        }
        let w = if want == 0 { *d } else { want as usize };
        if *d != w && *d != 1 {
            return Err(bad());
        }
        out.push(w);
    }
    Ok(vec![(out, a.dtypes[0])])
}

const BROADCAST_AXIS_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("axis", PType::Tuple, Some("()"), "The axes to perform the broadcasting."),
    ParamSpec::new("size", PType::Tuple, Some("()"), "Target sizes of the broadcasting axes."),
];

fn broadcast_axis_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    let (axes, sizes) = (a.params.tuple("axis"), a.params.tuple("size"));
    if axes.len() != sizes.len() {
        return Err(a.err(format!("axis {} and size {} must have the same length", fmt_spec(&axes), fmt_spec(&sizes))));
    }
    let mut out = Shape::from_slice(s);
    for (&ax, &sz) in axes.iter().zip(&sizes) {
        if ax < 0 || ax >= s.len() as i64 {
            return Err(a.err(format!("axis {ax} is out of range [0, {}) for input shape {}", s.len(), fmt_shape(s))));
        }
        if sz < 0 {
            return Err(a.err(format!("size {sz} for axis {ax} must be non-negative")));
        }
        if out[ax as usize] != 1 {
            return Err(a.err(format!(
                "broadcasting axis {ax} must have size 1, but it has size {} (input shape {})",
                out[ax as usize],
                fmt_shape(s)
            )));
        }
        out[ax as usize] = sz as usize;
    }
    Ok(vec![(out, a.dtypes[0])])
}

const BROADCAST_LIKE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("lhs_axes", PType::OptTuple, Some("None"), "Axes to perform broadcast on in the first input array"),
    ParamSpec::new("rhs_axes", PType::OptTuple, Some("None"), "Axes to copy from the second input array"),
];

fn broadcast_like_infer(a: &InferArgs) -> Out {
    let (l, r) = (a.shapes[0], a.shapes[1]);
    let mut out = Shape::from_slice(l);
    match (a.params.opt_tuple("lhs_axes"), a.params.opt_tuple("rhs_axes")) {
        (Some(la), Some(ra)) => {
            if la.is_empty() || ra.is_empty() {
                return Err(a.err("empty lhs_axes or rhs_axes are not allowed"));
            }
            if la.len() != ra.len() {
                return Err(a.err(format!("lhs_axes {} and rhs_axes {} must have the same length", fmt_spec(&la), fmt_spec(&ra))));
            }
            for (&x, &y) in la.iter().zip(&ra) {
                let i = norm_axis(a, "lhs_axes entry", x, l.len(), l)?;
                let j = norm_axis(a, "rhs_axes entry", y, r.len(), r)?;
                if l[i] != 1 {
                    return Err(a.err(format!(
                        "lhs axis {x} has size {} (lhs shape {}), it must be 1 to be broadcast to {}",
                        l[i],
                        fmt_shape(l),
                        r[j]
                    )));
                }
                out[i] = r[j];
            }
        }
        _ => {
            if l.len() != r.len() {
                return Err(a.err(format!(
                    "lhs of shape {} cannot be broadcast like rhs of shape {}: they must have the same number of dimensions",
                    fmt_shape(l),
                    fmt_shape(r)
                )));
            }
            for i in 0..l.len() {
                if l[i] != r[i] && l[i] != 1 {
                    return Err(a.err(format!("lhs of shape {} cannot be broadcast to shape {}", fmt_shape(l), fmt_shape(r))));
                }
                out[i] = r[i];
            }
        }
    }
    Ok(vec![(out, a.dtypes[0])])
}

// ---------------------------------------------------------------- registration

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "reshape_like",
            "Reshapes some or all dimensions of `lhs` to have the same shape as some or all dimensions of `rhs`.",
            Arity::Fixed(&["lhs", "rhs"]),
            RESHAPE_LIKE_PARAMS,
            reshape_like_infer,
            copy_all,
        )
        .inplace(),
    );
    r.add(
        OpDef::new(
            "Reshape",
            "Reshapes the input array to `shape`, which may use the special values\n\
             0 (copy this input dimension), -1 (infer from the remaining size), -2 (copy all\n\
             remaining input dimensions), -3 (product of the next two input dimensions) and -4\n\
             (split the next input dimension into the two values that follow, one of which may\n\
             be -1). With `reverse=True` the special values are matched from right to left.",
            DATA,
            RESHAPE_PARAMS,
            reshape_infer,
            copy_all,
        )
        .unnamed_inputs()
        .aliases(&["reshape"])
        .inplace(),
    );
    r.add(
        OpDef::new(
            "Flatten",
            "Flattens the input array into a 2-D array by collapsing the higher dimensions: (d1, d2*...*dk).",
            DATA,
            &[],
            flatten_infer,
            copy_all,
        )
        .unnamed_inputs()
        .aliases(&["flatten"])
        .inplace(),
    );
    r.add(
        OpDef::new(
            "expand_dims",
            "Inserts a new axis of size 1 into the array shape at `axis`.",
            DATA,
            EXPAND_PARAMS,
            expand_dims_infer,
            copy_all,
        )
        .unnamed_inputs()
        .inplace(),
    );
    r.add(
        OpDef::new(
            "squeeze",
            "Removes single-dimensional entries from the shape of an array (those in `axis`, or all).",
            DATA,
            SQUEEZE_PARAMS,
            squeeze_infer,
            copy_all,
        )
        .inplace(),
    );
    r.add(
        OpDef::new(
            "transpose",
            "Permutes the dimensions of an array: output axis i is input axis axes[i] (reversed when axes is empty).",
            DATA,
            TRANSPOSE_PARAMS,
            transpose_infer,
            transpose_compute,
        )
        .unnamed_inputs(),
    );
    r.add(OpDef::new("SwapAxis", "Interchanges two axes of an array.", DATA, SWAP_PARAMS, swap_infer, swap_compute).aliases(&["swapaxes"]));
    r.add(
        OpDef::new(
            "Concat",
            "Joins input arrays along a given axis. All dimensions except `dim` must match.",
            Arity::Variadic { name: "data", count: "num_args" },
            CONCAT_PARAMS,
            concat_infer,
            concat_compute,
        )
        .aliases(&["concat"]),
    );
    r.add(OpDef::new(
        "stack",
        "Joins a sequence of arrays of the same shape along a new axis.",
        Arity::Variadic { name: "data", count: "num_args" },
        STACK_PARAMS,
        stack_infer,
        stack_compute,
    ));
    r.add(
        OpDef::new(
            "SliceChannel",
            "Splits an array along a particular axis into `num_outputs` equal sub-arrays.",
            DATA,
            SPLIT_PARAMS,
            split_infer,
            split_compute,
        )
        .aliases(&["split"])
        .outputs(|p| p.int("num_outputs").max(1) as usize),
    );
    r.add(
        OpDef::new(
            "slice",
            "Slices a region of the array: along each of the first len(begin) axes, items begin[i]:end[i]:step[i] with Python's rules (None items take the defaults).",
            DATA,
            SLICE_PARAMS,
            slice_infer,
            slice_compute,
        ).unnamed_inputs()
        .partial_per_axis()
        .aliases(&["crop"]),
    );
    r.add(
        OpDef::new(
            "slice_axis",
            "Slices along a given axis: items begin:end (end None means the axis length).",
            DATA,
            SLICE_AXIS_PARAMS,
            slice_axis_infer,
            slice_axis_compute,
        )
        .unnamed_inputs()
        .partial_per_axis(),
    );
    r.add(
        OpDef::new(
            "_slice_assign",
            "Returns lhs with the region lhs[begin:end:step] replaced by rhs (whose shape must be the region's).",
            Arity::Fixed(&["lhs", "rhs"]),
            SLICE_ASSIGN_PARAMS,
            slice_assign_infer,
            slice_assign_compute,
        )
        .aliases(&["_crop_assign"])
        .inplace(),
    );
    r.add(
        OpDef::new(
            "_slice_assign_scalar",
            "Returns data with the region data[begin:end:step] set to `scalar`.",
            DATA,
            SLICE_ASSIGN_SCALAR_PARAMS,
            slice_assign_scalar_infer,
            slice_assign_scalar_compute,
        )
        .unnamed_inputs()
        .aliases(&["_crop_assign_scalar"])
        .inplace(),
    );
    r.add(OpDef::new(
        "tile",
        "Repeats the whole array multiple times along each axis (`reps`).",
        DATA,
        TILE_PARAMS,
        tile_infer,
        tile_compute,
    ));
    r.add(OpDef::new(
        "repeat",
        "Repeats each element of an array `repeats` times along `axis` (of the flattened array when axis is None).",
        DATA,
        REPEAT_PARAMS,
        repeat_infer,
        repeat_compute,
    ));
    r.add(
        OpDef::new(
            "reverse",
            "Reverses the order of elements along the given axes while preserving the array shape.",
            DATA,
            REVERSE_PARAMS,
            reverse_infer,
            reverse_compute,
        )
        .aliases(&["flip"]),
    );
    r.add(
        OpDef::new(
            "broadcast_to",
            "Broadcasts the input array to a new shape (0 keeps the input dimension).",
            DATA,
            BROADCAST_TO_PARAMS,
            broadcast_to_infer,
            broadcast_compute,
        )
        .unnamed_inputs(),
    );
    r.add(
        OpDef::new(
            "broadcast_axis",
            "Broadcasts the input array over the given axes (of size 1) to the given sizes.",
            DATA,
            BROADCAST_AXIS_PARAMS,
            broadcast_axis_infer,
            broadcast_compute,
        )
        .unnamed_inputs()
        .aliases(&["broadcast_axes"]),
    );
    r.add(OpDef::new(
        "broadcast_like",
        "Broadcasts lhs to the shape of rhs, or only lhs_axes to the sizes of rhs_axes of rhs.",
        Arity::Fixed(&["lhs", "rhs"]),
        BROADCAST_LIKE_PARAMS,
        broadcast_like_infer,
        broadcast_compute,
    ));
}

#[cfg(test)]
mod tests {
    //! Expected values in the `numpy_*` tests were computed with NumPy (inputs are
    //! `arange` arrays, the k-th input offset by 100*k); Reshape shapes with special
    //! codes were checked against MXNet 1.9.1.
    use super::*;
    use crate::context::Context;
    use crate::ndarray::NDArray;
    use crate::op::{call, call1, invoke, lookup, Value};

    const N: i64 = i64::MIN;

    fn t(v: &[i64]) -> Value {
        Value::Tuple(v.to_vec())
    }

    fn arange(shape: &[usize], start: f32) -> NDArray {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n).map(|i| start + i as f32).collect();
        NDArray::from_vec(shape, &v, Context::cpu(0)).unwrap()
    }

    fn check(op: &str, inputs: &[NDArray], params: &[(&str, Value)], shape: &[usize], data: &[f32]) {
        let out = call1(op, inputs, params).unwrap_or_else(|e| panic!("{op} {params:?}: {e}"));
        assert_eq!(out.shape(), shape, "{op} {params:?}");
        assert_eq!(out.to_vec::<f32>().unwrap(), data, "{op} {params:?}");
    }

    fn check_multi(op: &str, inputs: &[NDArray], params: &[(&str, Value)], outs: &[(&[usize], &[f32])]) {
        let got = call(op, inputs, params).unwrap_or_else(|e| panic!("{op} {params:?}: {e}"));
        assert_eq!(got.len(), outs.len(), "{op} {params:?}");
        for (g, (s, d)) in got.iter().zip(outs) {
            assert_eq!(g.shape(), *s, "{op} {params:?}");
            assert_eq!(g.to_vec::<f32>().unwrap(), *d, "{op} {params:?}");
        }
    }

    /// The call fails synchronously with a message naming the op and each needle.
    fn check_err(op: &str, inputs: &[NDArray], params: &[(&str, Value)], needles: &[&str]) {
        let e = call(op, inputs, params).err().unwrap_or_else(|| panic!("{op} {params:?} should fail"));
        let m = e.message();
        let name = lookup(op).unwrap().name;
        assert!(m.contains(&format!("operator {name}")), "{m}");
        for n in needles {
            assert!(m.contains(n), "{op} {params:?}: '{m}' lacks '{n}'");
        }
    }

    fn slice_table(cases: &[(i64, i64, i64, &[i64])]) {
        let x = arange(&[5], 0.0);
        for (b, e, s, want) in cases {
            let p = [("begin", t(&[*b])), ("end", t(&[*e])), ("step", t(&[*s]))];
            let out = call1("slice", std::slice::from_ref(&x), &p).unwrap();
            let got: Vec<i64> = out.to_vec::<f32>().unwrap().iter().map(|v| *v as i64).collect();
            assert_eq!(&got[..], *want, "slice [{b}:{e}:{s}] (i64::MIN is None)");
        }
    }

    fn transpose_checksum(shape: &[usize], axes: &[i64], want: f64) {
        let out = call1("transpose", &[arange(shape, 0.0)], &[("axes", t(axes))]).unwrap();
        let cs: f64 = out.to_vec::<f32>().unwrap().iter().enumerate().map(|(i, x)| (i as f64 + 1.0) * *x as f64).sum();
        assert_eq!(cs, want, "transpose {shape:?} by {axes:?}");
    }

    #[test]
    fn reshape_like_ranges() {
        let ctx = Context::cpu(0);
        let a = NDArray::from_vec(&[2, 3, 4], &(0..24).map(|x| x as f32).collect::<Vec<_>>(), ctx).unwrap();
        let b = NDArray::from_vec(&[6, 2, 2], &[0f32; 24], ctx).unwrap();
        let r = call1("reshape_like", &[a.clone(), b.clone()], &[]).unwrap();
        assert_eq!(r.shape(), &[6, 2, 2]);
        let c = NDArray::from_vec(&[5, 12], &[0f32; 60], ctx).unwrap();
        let r = call1("reshape_like", &[a.clone(), c], &[("lhs_begin", Value::Int(1)), ("rhs_begin", Value::Int(-1))]).unwrap();
        assert_eq!(r.shape(), &[2, 12]);
        assert_eq!(r.to_vec::<f32>().unwrap()[5], 5.0);
        let e = call1("reshape_like", &[a, b], &[("lhs_end", Value::Int(1))]).unwrap_err();
        assert!(e.message().contains("reshape_like"), "{}", e.message());
    }

    #[test]
    fn reshape_special_codes() {
        type Case<'a> = (&'a [usize], &'a [i64], bool, &'a [usize]);
        let cases: &[Case] = &[
            (&[2, 3, 4], &[4, 0, -1], false, &[4, 3, 2]),
            (&[2, 3, 4], &[-2], false, &[2, 3, 4]),
            (&[2, 3, 4], &[2, -2], false, &[2, 3, 4]),
            (&[2, 3, 4], &[-2, 1, 1], false, &[2, 3, 4, 1, 1]),
            (&[2, 3, 4], &[-3, 4], false, &[6, 4]),
            (&[2, 3, 4], &[-4, 1, 2, -2], false, &[1, 2, 3, 4]),
            (&[2, 3, 4], &[2, -4, -1, 3, -2], false, &[2, 1, 3, 4]),
            (&[2, 3, 4], &[-4, -1, 1, -3], false, &[2, 1, 12]),
            (&[10, 5, 4], &[-1, 0], false, &[40, 5]),
            (&[10, 5, 4], &[-1, 0], true, &[50, 4]),
            (&[10, 5, 4], &[-3, 0], true, &[50, 4]),
            (&[10, 5, 4], &[0, -3], true, &[10, 20]),
            (&[10, 5, 4], &[-2, -1], true, &[10, 5, 4]),
            (&[10, 5, 4], &[0, 0, 0, -1], false, &[10, 5, 4, 1]),
            (&[10, 5, 4], &[-4, 2, 5, 0, 0], false, &[2, 5, 5, 4]),
            (&[10, 5, 4], &[0, 0, -4, 2, 2], false, &[10, 5, 2, 2]),
            (&[10, 5, 4], &[2, 5, -4, 0, 0], true, &[2, 5, 5, 4]),
            (&[2, 3, 4], &[0, -1], true, &[3, 8]),
            (&[8, 3, 4], &[-1, 2, -4, -1, 2], true, &[4, 2, 6, 2]),
            (&[2, 3, 4, 5], &[0, -3, 0], true, &[2, 12, 5]),
            (&[2, 3, 4, 5], &[-2, -3], true, &[2, 3, 20]),
            (&[5], &[0, -1], false, &[5, 1]),
            (&[0, 5, 4], &[-1, 4], false, &[0, 4]),
            // -1 after -2/-4: the documented rule (MXNet 1.9.1 mis-indexes the inferred
            // dim here and returns (2, 1, 4, 1) and (2, 3, 1, 4)).
            (&[2, 3, 4], &[-2, -1], false, &[2, 3, 4, 1]),
            (&[6, 4, 1], &[-4, 2, 3, -1, 1], false, &[2, 3, 4, 1]),
        ];
        for (src, spec, rev, want) in cases {
            let got = infer_reshape(src, spec, *rev).unwrap_or_else(|e| panic!("{src:?} {spec:?} {rev}: {e}"));
            assert_eq!(&got[..], *want, "{src:?} {spec:?} reverse={rev}");
            let n: usize = src.iter().product();
            let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
            check("Reshape", &[arange(src, 0.0)], &[("shape", t(spec)), ("reverse", Value::Bool(*rev))], want, &data);
        }
    }

    #[test]
    fn reshape_errors() {
        let cases: &[(&[usize], &[i64], bool, &str)] = &[
            (&[10, 5, 4], &[-1, -1], false, "only one dimension can be inferred"),
            (&[10, 5, 4], &[0, 0, 0, 0], false, "the input has only 3 dimension(s)"),
            (&[10, 5, 4], &[-5, 0], false, "invalid value -5"),
            (&[10, 5, 4], &[-4, 2], false, "-4 at position 0 must be followed"),
            (&[10, 5, 4], &[-3, -3], false, "-3 at position 1"),
            (&[10, 5, 4], &[-4, -1, -1, 0, 0], false, "cannot both be -1"),
            (&[10, 5, 4], &[-4, 3, -1, 0, 0], false, "do not divide input dimension 10"),
            (&[10, 5, 4], &[7, -1], false, "cannot infer the -1 dimension"),
            (&[10, 5, 4], &[3, 7], false, "holds 21 element(s) but the input holds 200"),
            (&[2, 3, 4], &[6, -2], false, "holds 72 element(s) but the input holds 24"),
            (&[10, 5, 4], &[-3, -2], true, "-3 at position 0"),
            (&[0, 5, 4], &[0, -1], false, "cannot infer the -1 dimension"),
        ];
        for (src, spec, rev, needle) in cases {
            let e = infer_reshape(src, spec, *rev).unwrap_err();
            assert!(e.message().contains("operator Reshape") && e.message().contains(needle), "{src:?} {spec:?}: {}", e.message());
            check_err("reshape", &[arange(src, 0.0)], &[("shape", t(spec)), ("reverse", Value::Bool(*rev))], &[needle, &fmt_shape(src)]);
        }
        check_err("Reshape", &[arange(&[2, 3], 0.0)], &[], &["target shape must be given", "(2, 3)"]);
    }

    #[test]
    fn reshape_legacy_target_shape() {
        let data: Vec<f32> = (0..200).map(|i| i as f32).collect();
        let x = || arange(&[10, 5, 4], 0.0);
        check("Reshape", &[x()], &[("target_shape", t(&[0, 10]))], &[20, 10], &data);
        check("Reshape", &[x()], &[("target_shape", t(&[5, 0])), ("keep_highest", Value::Bool(true))], &[10, 20], &data);
        check("Reshape", &[x()], &[("target_shape", t(&[20, 10]))], &[20, 10], &data);
        check_err("Reshape", &[x()], &[("target_shape", t(&[20, 0, 0]))], &["cannot reshape array of shape (10, 5, 4)"]);
        check_err("Reshape", &[x()], &[("target_shape", t(&[3, 0]))], &["cannot infer the 0 dimension"]);
    }

    #[test]
    fn shape_op_errors() {
        let x = |s: &[usize]| arange(s, 0.0);
        let i = |v: i64| Value::Int(v);
        check_err("transpose", &[x(&[2, 3, 4])], &[("axes", t(&[0, 1]))], &["has 2 entries", "(2, 3, 4)"]);
        check_err("transpose", &[x(&[2, 3, 4])], &[("axes", t(&[0, 0, 1]))], &["repeats axis 0"]);
        check_err("transpose", &[x(&[2, 3, 4])], &[("axes", t(&[0, 1, 3]))], &["entry 3 is out of range"]);
        check_err("transpose", &[x(&[2, 3, 4])], &[("axes", t(&[-1, 0, 1]))], &["entry -1 is out of range"]);
        check_err("SwapAxis", &[x(&[2, 3, 4])], &[("dim1", i(3))], &["dim1=3 is out of bounds", "(2, 3, 4)"]);
        check_err("swapaxes", &[x(&[2, 3, 4])], &[("dim2", i(-4))], &["dim2=-4 is out of bounds"]);
        check_err("expand_dims", &[x(&[2, 3])], &[("axis", i(3))], &["axis=3 is out of range", "[-3, 2]"]);
        check_err("expand_dims", &[x(&[2, 3])], &[("axis", i(-4))], &["axis=-4"]);
        check_err("squeeze", &[x(&[1, 2, 1])], &[("axis", i(1))], &["cannot squeeze axis 1", "size is 2"]);
        check_err("squeeze", &[x(&[1, 2, 1])], &[("axis", t(&[0, 0]))], &["duplicate value 0"]);
        check_err("squeeze", &[x(&[1, 2, 1])], &[("axis", i(3))], &["axis=3 is out of bounds"]);
        check_err("Flatten", &[x(&[])], &[], &["0-d"]);
        let two = |a: &[usize], b: &[usize]| vec![x(a), arange(b, 100.0)];
        check_err("Concat", &two(&[2, 3], &[3, 1]), &[("num_args", i(2))], &["shape mismatch", "(2, 3)", "(3, 1)", "dim=1"]);
        check_err("concat", &two(&[2, 3], &[2, 1, 1]), &[("num_args", i(2))], &["(2, 1, 1)"]);
        check_err("concat", &two(&[2, 3], &[2, 1]), &[("num_args", i(2)), ("dim", i(2))], &["dim=2 is out of range"]);
        let i32s = NDArray::from_vec(&[2, 1], &[1i32, 2], Context::cpu(0)).unwrap();
        check_err("concat", &[x(&[2, 3]), i32s], &[("num_args", i(2))], &["dtype mismatch", "float32", "int32"]);
        check_err("stack", &two(&[2, 3], &[3, 2]), &[("num_args", i(2))], &["shape mismatch", "(2, 3)", "(3, 2)"]);
        check_err("stack", &two(&[2, 3], &[2, 3]), &[("num_args", i(2)), ("axis", i(3))], &["axis=3 is out of range"]);
        check_err("stack", &two(&[2, 3], &[2, 3]), &[("num_args", i(2)), ("axis", i(-4))], &["axis=-4 is out of range"]);
        check_err("split", &[x(&[2, 5])], &[("num_outputs", i(3))], &["does not divide 5", "(2, 5)"]);
        check_err("split", &[x(&[2, 6])], &[("num_outputs", i(3)), ("squeeze_axis", Value::Bool(true))], &["squeeze_axis", "size 6"]);
        check_err("SliceChannel", &[x(&[2, 6])], &[("num_outputs", i(0))], &["num_outputs must be at least 1"]);
        check_err("split", &[x(&[2, 6])], &[("num_outputs", i(2)), ("axis", i(2))], &["axis=2 is out of bounds"]);
        let sl = |b: &[i64], e: &[i64], s: &[i64]| vec![("begin", t(b)), ("end", t(e)), ("step", t(s))];
        check_err("slice", &[x(&[5])], &sl(&[1], &[3], &[0]), &["step[0] cannot be 0"]);
        check_err("slice", &[x(&[5])], &sl(&[1, 1], &[3, 3], &[]), &["has only 1", "(5,)"]);
        check_err("slice", &[x(&[5, 3])], &sl(&[1, 1], &[3], &[]), &["must have the same length"]);
        check_err("slice", &[x(&[5, 3])], &sl(&[1, 1], &[3, 3], &[2]), &["step (2,) and begin (1, 1)"]);
        check_err("crop", &[x(&[])], &sl(&[], &[], &[]), &["0-d"]);
        let sa = |ax: i64, b: i64, e: Value| vec![("axis", i(ax)), ("begin", i(b)), ("end", e)];
        check_err("slice_axis", &[x(&[3, 4])], &sa(1, 3, i(1)), &["begin must come before end"]);
        check_err("slice_axis", &[x(&[3, 4])], &sa(1, 2, i(2)), &["begin must come before end"]);
        check_err("slice_axis", &[x(&[3, 4])], &sa(1, 1, i(7)), &["end=7 is out of range", "size 4"]);
        check_err("slice_axis", &[x(&[3, 4])], &sa(1, -7, Value::None), &["begin=-7 is out of range"]);
        check_err("slice_axis", &[x(&[3, 4])], &sa(2, 1, i(2)), &["axis=2 is out of bounds"]);
        check_err("tile", &[x(&[2, 3])], &[("reps", t(&[0, 2]))], &["positive", "got 0"]);
        check_err("tile", &[x(&[2, 3])], &[("reps", t(&[-1, 2]))], &["positive", "got -1"]);
        check_err("repeat", &[x(&[2, 3])], &[("repeats", i(-1))], &["negative"]);
        check_err("repeat", &[x(&[2, 3])], &[("repeats", i(2)), ("axis", i(2))], &["axis=2 is out of bounds"]);
        check_err("reverse", &[x(&[2, 3])], &[("axis", t(&[2]))], &["holds 2, out of range [0, 2)"]);
        check_err("flip", &[x(&[2, 3])], &[("axis", t(&[-1]))], &["holds -1"]);
        check_err("broadcast_to", &[x(&[2, 1])], &[("shape", t(&[3, 3]))], &["(2, 1) cannot be broadcast to shape (3, 3)"]);
        check_err("broadcast_to", &[x(&[2, 1])], &[("shape", t(&[4, 2, 3]))], &["same number of dimensions"]);
        let bax = |a: &[i64], s: &[i64]| vec![("axis", t(a)), ("size", t(s))];
        check_err("broadcast_axis", &[x(&[1, 3, 1])], &bax(&[1], &[4]), &["axis 1 must have size 1", "size 3"]);
        check_err("broadcast_axes", &[x(&[1, 3, 1])], &bax(&[0, 2], &[2]), &["same length"]);
        check_err("broadcast_axis", &[x(&[1, 3, 1])], &bax(&[3], &[2]), &["axis 3 is out of range"]);
        check_err("broadcast_axis", &[x(&[1, 3, 1])], &bax(&[-1], &[2]), &["axis -1 is out of range"]);
        check_err("broadcast_axis", &[x(&[1, 3, 1])], &bax(&[0], &[-2]), &["size -2"]);
        check_err("broadcast_like", &two(&[2, 3], &[4, 3]), &[], &["(2, 3) cannot be broadcast to shape (4, 3)"]);
        check_err("broadcast_like", &two(&[1, 3], &[4, 2, 3]), &[], &["same number of dimensions"]);
        let bl = |l: &[i64], r: &[i64]| vec![("lhs_axes", t(l)), ("rhs_axes", t(r))];
        check_err("broadcast_like", &two(&[2, 3], &[5, 6]), &bl(&[0], &[0]), &["lhs axis 0 has size 2"]);
        check_err("broadcast_like", &two(&[1, 3], &[5, 6]), &bl(&[0], &[0, 1]), &["same length"]);
        check_err("broadcast_like", &two(&[1, 3], &[5, 6]), &bl(&[2], &[0]), &["lhs_axes entry=2 is out of bounds"]);
        check_err("broadcast_like", &two(&[1, 3], &[5, 6]), &bl(&[], &[]), &["empty"]);
        let asg = |b: &[i64], e: &[i64]| vec![("begin", t(b)), ("end", t(e))];
        check_err("_slice_assign", &two(&[3, 4], &[2, 3]), &asg(&[0, 1], &[2, 3]), &["rhs has shape (2, 3)", "has shape (2, 2)"]);
        let i32s = NDArray::from_vec(&[1, 4], &[1i32, 2, 3, 4], Context::cpu(0)).unwrap();
        check_err("_slice_assign", &[x(&[3, 4]), i32s], &asg(&[1], &[2]), &["dtype mismatch"]);
        check_err(
            "_slice_assign_scalar",
            &[x(&[3, 4])],
            &[("begin", t(&[0])), ("end", t(&[1])), ("step", t(&[0]))],
            &["step[0] cannot be 0"],
        );
    }

    #[test]
    fn other_dtypes() {
        let c = Context::cpu(0);
        let a = NDArray::from_vec(&[2, 3], &[1i64, 2, 3, 4, 5, 6], c).unwrap();
        let o = call1("transpose", &[a], &[]).unwrap();
        assert_eq!(o.to_vec::<i64>().unwrap(), [1, 4, 2, 5, 3, 6]);
        let h: Vec<half::f16> = (0..6).map(|v| half::f16::from_f32(v as f32 + 0.5)).collect();
        let a = NDArray::from_vec(&[2, 3], &h, c).unwrap();
        let o = call1("flip", &[a], &[("axis", t(&[1]))]).unwrap();
        let got: Vec<f32> = o.to_vec::<half::f16>().unwrap().iter().map(|v| v.to_f32()).collect();
        assert_eq!(got, [2.5, 1.5, 0.5, 5.5, 4.5, 3.5]);
        let a = NDArray::from_vec(&[2, 2], &[1i8, -2, 3, -4], c).unwrap();
        let b = NDArray::from_vec(&[2, 1], &[9i8, 8], c).unwrap();
        let o = call1("concat", &[a, b], &[("num_args", Value::Int(2))]).unwrap();
        assert_eq!(o.to_vec::<i8>().unwrap(), [1, -2, 9, 3, -4, 8]);
        let a = NDArray::from_vec(&[2, 3], &[1.5f64, 2., 3., 4., 5., 6.], c).unwrap();
        let o = call1("tile", &[a], &[("reps", t(&[1, 2]))]).unwrap();
        assert_eq!(o.to_vec::<f64>().unwrap(), [1.5, 2., 3., 1.5, 2., 3., 4., 5., 6., 4., 5., 6.]);
        // int32 truncates the scalar like MXNet (-2.7 -> -2); bool stores 0/1.
        let a = NDArray::from_vec(&[2, 3], &[0i32, 1, 2, 3, 4, 5], c).unwrap();
        let p = [("scalar", Value::Float(-2.7)), ("begin", t(&[N, 1])), ("end", t(&[N, N]))];
        let o = call1("_slice_assign_scalar", &[a], &p).unwrap();
        assert_eq!(o.to_vec::<i32>().unwrap(), [0, -2, -2, 3, -2, -2]);
        let z = NDArray::from_vec(&[4], &[0u8, 0, 0, 0], c).unwrap();
        let b = call1("Cast", &[z], &[("dtype", Value::DType(DType::Bool))]).unwrap();
        let p = [("scalar", Value::Float(2.0)), ("begin", t(&[1])), ("end", t(&[3]))];
        let o = call1("_slice_assign_scalar", &[b], &p).unwrap();
        assert_eq!(o.dtype(), DType::Bool);
        assert_eq!(o.to_vec::<u8>().unwrap(), [0, 1, 1, 0]);
    }

    #[test]
    fn slice_assign_in_place() {
        let op = lookup("_slice_assign").unwrap();
        let params = op.parse(vec![("begin".into(), t(&[0, 1])), ("end".into(), t(&[2, 3]))]).unwrap();
        let lhs = arange(&[3, 4], 0.0);
        let res = invoke(op, &[lhs.clone(), arange(&[2, 2], 100.0)], params, Some(std::slice::from_ref(&lhs)), None).unwrap();
        assert!(res[0].same_chunk(&lhs));
        assert_eq!(lhs.to_vec::<f32>().unwrap(), [0., 100., 101., 3., 4., 102., 103., 7., 8., 9., 10., 11.]);

        // rhs is a view of lhs itself: NumPy semantics (x[:, 0:2] = x[0:2].reshape(4, 2)).
        let x = arange(&[4, 4], 0.0);
        let rhs = x.slice_view(0, 2).unwrap().reshape_view(&[4, 2]).unwrap();
        let params = op.parse(vec![("begin".into(), t(&[N, 0])), ("end".into(), t(&[N, 2]))]).unwrap();
        invoke(op, &[x.clone(), rhs], params, Some(std::slice::from_ref(&x)), None).unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap(), [0., 1., 2., 3., 2., 3., 6., 7., 4., 5., 10., 11., 6., 7., 14., 15.]);

        let op = lookup("_slice_assign_scalar").unwrap();
        let params = op.parse(vec![("scalar".into(), Value::Float(9.0)), ("begin".into(), t(&[1])), ("end".into(), t(&[2]))]).unwrap();
        let x = arange(&[3, 2], 0.0);
        invoke(op, std::slice::from_ref(&x), params, Some(std::slice::from_ref(&x)), None).unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap(), [0., 1., 9., 9., 4., 5.]);

        // Reshape into a view of its own input is a no-op copy.
        let op = lookup("Reshape").unwrap();
        let x = arange(&[2, 3], 0.0);
        let v = x.reshape_view(&[3, 2]).unwrap();
        let params = op.parse(vec![("shape".into(), t(&[3, -1]))]).unwrap();
        invoke(op, std::slice::from_ref(&x), params, Some(std::slice::from_ref(&v)), None).unwrap();
        assert_eq!(v.to_vec::<f32>().unwrap(), [0., 1., 2., 3., 4., 5.]);
    }

    #[test]
    fn zero_size_and_0d() {
        check("slice", &[arange(&[3, 4], 0.0)], &[("begin", t(&[N, 3])), ("end", t(&[N, 1]))], &[3, 0], &[]);
        check(
            "concat",
            &[arange(&[2, 0], 0.0), arange(&[2, 2], 100.0)],
            &[("num_args", Value::Int(2))],
            &[2, 2],
            &[100., 101., 102., 103.],
        );
        check("transpose", &[arange(&[0, 3], 0.0)], &[], &[3, 0], &[]);
        check("expand_dims", &[arange(&[], 5.0)], &[("axis", Value::Int(0))], &[1], &[5.]);
        check("transpose", &[arange(&[], 5.0)], &[], &[], &[5.]);
        check("stack", &[arange(&[], 5.0), arange(&[], 7.0)], &[("num_args", Value::Int(2))], &[2], &[5., 7.]);
        check_multi(
            "split",
            &[arange(&[3], 0.0)],
            &[("num_outputs", Value::Int(3)), ("axis", Value::Int(0)), ("squeeze_axis", Value::Bool(true))],
            &[(&[], &[0.]), (&[], &[1.]), (&[], &[2.])],
        );
    }

    #[test]
    fn names_and_aliases() {
        for (alias, name) in [
            ("reshape", "Reshape"),
            ("flatten", "Flatten"),
            ("concat", "Concat"),
            ("split", "SliceChannel"),
            ("crop", "slice"),
            ("flip", "reverse"),
            ("swapaxes", "SwapAxis"),
            ("broadcast_axes", "broadcast_axis"),
        ] {
            assert_eq!(lookup(alias).unwrap().name, name);
        }
        let names: Vec<&str> = lookup("Reshape").unwrap().params.iter().map(|p| p.name).collect();
        assert_eq!(names, ["shape", "reverse", "target_shape", "keep_highest"]);
        let names: Vec<&str> = lookup("_slice_assign_scalar").unwrap().params.iter().map(|p| p.name).collect();
        assert_eq!(names, ["scalar", "begin", "end", "step"]);
    }

    #[test]
    fn numpy_transpose_swapaxes() {
        check(
            "transpose",
            &[arange(&[2, 3, 4], 0.0)],
            &[],
            &[4, 3, 2],
            &[
                0.0, 12.0, 4.0, 16.0, 8.0, 20.0, 1.0, 13.0, 5.0, 17.0, 9.0, 21.0, 2.0, 14.0, 6.0, 18.0, 10.0, 22.0, 3.0, 15.0, 7.0, 19.0,
                11.0, 23.0,
            ],
        );
        check(
            "transpose",
            &[arange(&[2, 3, 4], 0.0)],
            &[("axes", t(&[1, 0, 2]))],
            &[3, 2, 4],
            &[
                0.0, 1.0, 2.0, 3.0, 12.0, 13.0, 14.0, 15.0, 4.0, 5.0, 6.0, 7.0, 16.0, 17.0, 18.0, 19.0, 8.0, 9.0, 10.0, 11.0, 20.0, 21.0,
                22.0, 23.0,
            ],
        );
        check(
            "transpose",
            &[arange(&[2, 3, 4], 0.0)],
            &[("axes", t(&[2, 0, 1]))],
            &[4, 2, 3],
            &[
                0.0, 4.0, 8.0, 12.0, 16.0, 20.0, 1.0, 5.0, 9.0, 13.0, 17.0, 21.0, 2.0, 6.0, 10.0, 14.0, 18.0, 22.0, 3.0, 7.0, 11.0, 15.0,
                19.0, 23.0,
            ],
        );
        check(
            "transpose",
            &[arange(&[5, 7], 0.0)],
            &[("axes", t(&[1, 0]))],
            &[7, 5],
            &[
                0.0, 7.0, 14.0, 21.0, 28.0, 1.0, 8.0, 15.0, 22.0, 29.0, 2.0, 9.0, 16.0, 23.0, 30.0, 3.0, 10.0, 17.0, 24.0, 31.0, 4.0, 11.0,
                18.0, 25.0, 32.0, 5.0, 12.0, 19.0, 26.0, 33.0, 6.0, 13.0, 20.0, 27.0, 34.0,
            ],
        );
        check(
            "transpose",
            &[arange(&[2, 5, 6], 0.0)],
            &[("axes", t(&[0, 2, 1]))],
            &[2, 6, 5],
            &[
                0.0, 6.0, 12.0, 18.0, 24.0, 1.0, 7.0, 13.0, 19.0, 25.0, 2.0, 8.0, 14.0, 20.0, 26.0, 3.0, 9.0, 15.0, 21.0, 27.0, 4.0, 10.0,
                16.0, 22.0, 28.0, 5.0, 11.0, 17.0, 23.0, 29.0, 30.0, 36.0, 42.0, 48.0, 54.0, 31.0, 37.0, 43.0, 49.0, 55.0, 32.0, 38.0,
                44.0, 50.0, 56.0, 33.0, 39.0, 45.0, 51.0, 57.0, 34.0, 40.0, 46.0, 52.0, 58.0, 35.0, 41.0, 47.0, 53.0, 59.0,
            ],
        );
        check("transpose", &[arange(&[6], 0.0)], &[], &[6], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        check(
            "SwapAxis",
            &[arange(&[2, 3, 4], 0.0)],
            &[("dim1", Value::Int(0)), ("dim2", Value::Int(2))],
            &[4, 3, 2],
            &[
                0.0, 12.0, 4.0, 16.0, 8.0, 20.0, 1.0, 13.0, 5.0, 17.0, 9.0, 21.0, 2.0, 14.0, 6.0, 18.0, 10.0, 22.0, 3.0, 15.0, 7.0, 19.0,
                11.0, 23.0,
            ],
        );
        check(
            "swapaxes",
            &[arange(&[2, 3, 4], 0.0)],
            &[("dim1", Value::Int(-1)), ("dim2", Value::Int(1))],
            &[2, 4, 3],
            &[
                0.0, 4.0, 8.0, 1.0, 5.0, 9.0, 2.0, 6.0, 10.0, 3.0, 7.0, 11.0, 12.0, 16.0, 20.0, 13.0, 17.0, 21.0, 14.0, 18.0, 22.0, 15.0,
                19.0, 23.0,
            ],
        );
        check(
            "swapaxes",
            &[arange(&[2, 3, 4], 0.0)],
            &[],
            &[2, 3, 4],
            &[
                0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0,
                22.0, 23.0,
            ],
        );
    }

    #[test]
    fn numpy_reshape_family() {
        check("expand_dims", &[arange(&[2, 3], 0.0)], &[("axis", Value::Int(-1))], &[2, 3, 1], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        check("expand_dims", &[arange(&[2, 3], 0.0)], &[("axis", Value::Int(0))], &[1, 2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        check("expand_dims", &[arange(&[2, 3], 0.0)], &[("axis", Value::Int(-3))], &[1, 2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        check("squeeze", &[arange(&[1, 2, 1, 3], 0.0)], &[], &[2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        check("squeeze", &[arange(&[1, 2, 1, 3], 0.0)], &[("axis", t(&[0, -2]))], &[2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        check("squeeze", &[arange(&[1, 2, 1, 3], 0.0)], &[("axis", Value::Int(2))], &[1, 2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        check("squeeze", &[arange(&[1, 1], 0.0)], &[], &[1], &[0.0]);
        check(
            "Flatten",
            &[arange(&[2, 3, 4], 0.0)],
            &[],
            &[2, 12],
            &[
                0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0,
                22.0, 23.0,
            ],
        );
        check("flatten", &[arange(&[5], 0.0)], &[], &[5, 1], &[0.0, 1.0, 2.0, 3.0, 4.0]);
        check(
            "Reshape",
            &[arange(&[2, 3, 4], 0.0)],
            &[("shape", t(&[4, 0, -1]))],
            &[4, 3, 2],
            &[
                0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0,
                22.0, 23.0,
            ],
        );
        check(
            "reshape",
            &[arange(&[2, 3, 4], 0.0)],
            &[("shape", t(&[-1]))],
            &[24],
            &[
                0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0,
                22.0, 23.0,
            ],
        );
    }

    #[test]
    fn numpy_concat_stack_split() {
        check(
            "Concat",
            &[arange(&[2, 3], 0.0), arange(&[2, 1], 100.0)],
            &[("num_args", Value::Int(2)), ("dim", Value::Int(1))],
            &[2, 4],
            &[0.0, 1.0, 2.0, 100.0, 3.0, 4.0, 5.0, 101.0],
        );
        check(
            "concat",
            &[arange(&[2, 3], 0.0), arange(&[1, 3], 100.0)],
            &[("num_args", Value::Int(2)), ("dim", Value::Int(0))],
            &[3, 3],
            &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 100.0, 101.0, 102.0],
        );
        check(
            "concat",
            &[arange(&[2, 2, 3], 0.0), arange(&[2, 1, 3], 100.0), arange(&[2, 3, 3], 200.0)],
            &[("num_args", Value::Int(3)), ("dim", Value::Int(-2))],
            &[2, 6, 3],
            &[
                0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 100.0, 101.0, 102.0, 200.0, 201.0, 202.0, 203.0, 204.0, 205.0, 206.0, 207.0, 208.0, 6.0, 7.0,
                8.0, 9.0, 10.0, 11.0, 103.0, 104.0, 105.0, 209.0, 210.0, 211.0, 212.0, 213.0, 214.0, 215.0, 216.0, 217.0,
            ],
        );
        check("concat", &[arange(&[2, 3], 0.0)], &[("num_args", Value::Int(1))], &[2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        check(
            "stack",
            &[arange(&[2, 3], 0.0), arange(&[2, 3], 100.0)],
            &[("num_args", Value::Int(2)), ("axis", Value::Int(0))],
            &[2, 2, 3],
            &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 100.0, 101.0, 102.0, 103.0, 104.0, 105.0],
        );
        check(
            "stack",
            &[arange(&[2, 3], 0.0), arange(&[2, 3], 100.0)],
            &[("num_args", Value::Int(2)), ("axis", Value::Int(1))],
            &[2, 2, 3],
            &[0.0, 1.0, 2.0, 100.0, 101.0, 102.0, 3.0, 4.0, 5.0, 103.0, 104.0, 105.0],
        );
        check(
            "stack",
            &[arange(&[2, 3], 0.0), arange(&[2, 3], 100.0)],
            &[("num_args", Value::Int(2)), ("axis", Value::Int(2))],
            &[2, 3, 2],
            &[0.0, 100.0, 1.0, 101.0, 2.0, 102.0, 3.0, 103.0, 4.0, 104.0, 5.0, 105.0],
        );
        check(
            "stack",
            &[arange(&[2, 3], 0.0), arange(&[2, 3], 100.0)],
            &[("num_args", Value::Int(2)), ("axis", Value::Int(-1))],
            &[2, 3, 2],
            &[0.0, 100.0, 1.0, 101.0, 2.0, 102.0, 3.0, 103.0, 4.0, 104.0, 5.0, 105.0],
        );
        check(
            "stack",
            &[arange(&[4], 0.0), arange(&[4], 100.0), arange(&[4], 200.0)],
            &[("num_args", Value::Int(3)), ("axis", Value::Int(1))],
            &[4, 3],
            &[0.0, 100.0, 200.0, 1.0, 101.0, 201.0, 2.0, 102.0, 202.0, 3.0, 103.0, 203.0],
        );
        check_multi(
            "SliceChannel",
            &[arange(&[2, 6], 0.0)],
            &[("num_outputs", Value::Int(3))],
            &[
                (&[2, 2][..], &[0.0, 1.0, 6.0, 7.0][..]),
                (&[2, 2][..], &[2.0, 3.0, 8.0, 9.0][..]),
                (&[2, 2][..], &[4.0, 5.0, 10.0, 11.0][..]),
            ],
        );
        check_multi(
            "split",
            &[arange(&[4, 3], 0.0)],
            &[("num_outputs", Value::Int(2)), ("axis", Value::Int(0))],
            &[(&[2, 3][..], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0][..]), (&[2, 3][..], &[6.0, 7.0, 8.0, 9.0, 10.0, 11.0][..])],
        );
        check_multi(
            "split",
            &[arange(&[2, 3, 2], 0.0)],
            &[("num_outputs", Value::Int(3)), ("axis", Value::Int(-2)), ("squeeze_axis", Value::Bool(true))],
            &[
                (&[2, 2][..], &[0.0, 1.0, 6.0, 7.0][..]),
                (&[2, 2][..], &[2.0, 3.0, 8.0, 9.0][..]),
                (&[2, 2][..], &[4.0, 5.0, 10.0, 11.0][..]),
            ],
        );
        check_multi(
            "split",
            &[arange(&[2, 5], 0.0)],
            &[("num_outputs", Value::Int(1))],
            &[(&[2, 5][..], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0][..])],
        );
    }

    #[test]
    fn numpy_slices() {
        check("slice", &[arange(&[3, 4], 0.0)], &[("begin", t(&[0, 1])), ("end", t(&[2, 3]))], &[2, 2], &[1.0, 2.0, 5.0, 6.0]);
        check("slice", &[arange(&[3, 4], 0.0)], &[("begin", t(&[N, 1])), ("end", t(&[N, 3]))], &[3, 2], &[1.0, 2.0, 5.0, 6.0, 9.0, 10.0]);
        check(
            "slice",
            &[arange(&[3, 4], 0.0)],
            &[("begin", t(&[1])), ("end", t(&[3]))],
            &[2, 4],
            &[4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0],
        );
        check("slice", &[arange(&[3, 4], 0.0)], &[("begin", t(&[-2, -1])), ("end", t(&[N, N]))], &[2, 1], &[7.0, 11.0]);
        check(
            "crop",
            &[arange(&[3, 4], 0.0)],
            &[("begin", t(&[N, N])), ("end", t(&[N, N])), ("step", t(&[-1, -2]))],
            &[3, 2],
            &[11.0, 9.0, 7.0, 5.0, 3.0, 1.0],
        );
        check(
            "slice",
            &[arange(&[3, 4], 0.0)],
            &[("begin", t(&[2, 3])), ("end", t(&[0, 0])), ("step", t(&[-1, -2]))],
            &[2, 2],
            &[11.0, 9.0, 7.0, 5.0],
        );
        check(
            "slice",
            &[arange(&[4, 5, 6], 0.0)],
            &[("begin", t(&[1, N, -1])), ("end", t(&[N, -1, 0])), ("step", t(&[2, 2, -2]))],
            &[2, 2, 3],
            &[35.0, 33.0, 31.0, 47.0, 45.0, 43.0, 95.0, 93.0, 91.0, 107.0, 105.0, 103.0],
        );
        check(
            "slice",
            &[arange(&[4, 5, 6], 0.0)],
            &[("begin", t(&[N, 3])), ("end", t(&[N, 9])), ("step", t(&[N, 1]))],
            &[4, 2, 6],
            &[
                18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0,
                56.0, 57.0, 58.0, 59.0, 78.0, 79.0, 80.0, 81.0, 82.0, 83.0, 84.0, 85.0, 86.0, 87.0, 88.0, 89.0, 108.0, 109.0, 110.0, 111.0,
                112.0, 113.0, 114.0, 115.0, 116.0, 117.0, 118.0, 119.0,
            ],
        );
        check(
            "slice_axis",
            &[arange(&[3, 4], 0.0)],
            &[("axis", Value::Int(1)), ("begin", Value::Int(1)), ("end", Value::None)],
            &[3, 3],
            &[1.0, 2.0, 3.0, 5.0, 6.0, 7.0, 9.0, 10.0, 11.0],
        );
        check(
            "slice_axis",
            &[arange(&[3, 4], 0.0)],
            &[("axis", Value::Int(-1)), ("begin", Value::Int(-3)), ("end", Value::Int(-1))],
            &[3, 2],
            &[1.0, 2.0, 5.0, 6.0, 9.0, 10.0],
        );
        check(
            "slice_axis",
            &[arange(&[3, 4], 0.0)],
            &[("axis", Value::Int(0)), ("begin", Value::Int(1)), ("end", Value::Int(3))],
            &[2, 4],
            &[4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0],
        );
    }

    #[test]
    fn numpy_slice_1d_python_rules() {
        let cases: &[(i64, i64, i64, &[i64])] = &[
            (N, N, N, &[0, 1, 2, 3, 4][..]),
            (N, N, 1, &[0, 1, 2, 3, 4][..]),
            (N, N, 2, &[0, 2, 4][..]),
            (N, N, -1, &[4, 3, 2, 1, 0][..]),
            (N, N, -3, &[4, 1][..]),
            (N, -6, N, &[][..]),
            (N, -6, 1, &[][..]),
            (N, -6, 2, &[][..]),
            (N, -6, -1, &[4, 3, 2, 1, 0][..]),
            (N, -6, -3, &[4, 1][..]),
            (N, -5, N, &[][..]),
            (N, -5, 1, &[][..]),
            (N, -5, 2, &[][..]),
            (N, -5, -1, &[4, 3, 2, 1][..]),
            (N, -5, -3, &[4, 1][..]),
            (N, -2, N, &[0, 1, 2][..]),
            (N, -2, 1, &[0, 1, 2][..]),
            (N, -2, 2, &[0, 2][..]),
            (N, -2, -1, &[4][..]),
            (N, -2, -3, &[4][..]),
            (N, 0, N, &[][..]),
            (N, 0, 1, &[][..]),
            (N, 0, 2, &[][..]),
            (N, 0, -1, &[4, 3, 2, 1][..]),
            (N, 0, -3, &[4, 1][..]),
            (N, 1, N, &[0][..]),
            (N, 1, 1, &[0][..]),
            (N, 1, 2, &[0][..]),
            (N, 1, -1, &[4, 3, 2][..]),
            (N, 1, -3, &[4][..]),
            (N, 3, N, &[0, 1, 2][..]),
            (N, 3, 1, &[0, 1, 2][..]),
            (N, 3, 2, &[0, 2][..]),
            (N, 3, -1, &[4][..]),
            (N, 3, -3, &[4][..]),
            (N, 5, N, &[0, 1, 2, 3, 4][..]),
            (N, 5, 1, &[0, 1, 2, 3, 4][..]),
            (N, 5, 2, &[0, 2, 4][..]),
            (N, 5, -1, &[][..]),
            (N, 5, -3, &[][..]),
            (N, 6, N, &[0, 1, 2, 3, 4][..]),
            (N, 6, 1, &[0, 1, 2, 3, 4][..]),
            (N, 6, 2, &[0, 2, 4][..]),
            (N, 6, -1, &[][..]),
            (N, 6, -3, &[][..]),
            (-6, N, N, &[0, 1, 2, 3, 4][..]),
            (-6, N, 1, &[0, 1, 2, 3, 4][..]),
            (-6, N, 2, &[0, 2, 4][..]),
            (-6, N, -1, &[][..]),
            (-6, N, -3, &[][..]),
            (-6, -6, N, &[][..]),
            (-6, -6, 1, &[][..]),
            (-6, -6, 2, &[][..]),
            (-6, -6, -1, &[][..]),
            (-6, -6, -3, &[][..]),
            (-6, -5, N, &[][..]),
            (-6, -5, 1, &[][..]),
            (-6, -5, 2, &[][..]),
            (-6, -5, -1, &[][..]),
            (-6, -5, -3, &[][..]),
            (-6, -2, N, &[0, 1, 2][..]),
            (-6, -2, 1, &[0, 1, 2][..]),
            (-6, -2, 2, &[0, 2][..]),
            (-6, -2, -1, &[][..]),
            (-6, -2, -3, &[][..]),
            (-6, 0, N, &[][..]),
            (-6, 0, 1, &[][..]),
            (-6, 0, 2, &[][..]),
            (-6, 0, -1, &[][..]),
            (-6, 0, -3, &[][..]),
            (-6, 1, N, &[0][..]),
            (-6, 1, 1, &[0][..]),
            (-6, 1, 2, &[0][..]),
            (-6, 1, -1, &[][..]),
            (-6, 1, -3, &[][..]),
            (-6, 3, N, &[0, 1, 2][..]),
            (-6, 3, 1, &[0, 1, 2][..]),
            (-6, 3, 2, &[0, 2][..]),
            (-6, 3, -1, &[][..]),
            (-6, 3, -3, &[][..]),
            (-6, 5, N, &[0, 1, 2, 3, 4][..]),
            (-6, 5, 1, &[0, 1, 2, 3, 4][..]),
            (-6, 5, 2, &[0, 2, 4][..]),
            (-6, 5, -1, &[][..]),
            (-6, 5, -3, &[][..]),
            (-6, 6, N, &[0, 1, 2, 3, 4][..]),
            (-6, 6, 1, &[0, 1, 2, 3, 4][..]),
            (-6, 6, 2, &[0, 2, 4][..]),
            (-6, 6, -1, &[][..]),
            (-6, 6, -3, &[][..]),
            (-5, N, N, &[0, 1, 2, 3, 4][..]),
            (-5, N, 1, &[0, 1, 2, 3, 4][..]),
            (-5, N, 2, &[0, 2, 4][..]),
            (-5, N, -1, &[0][..]),
            (-5, N, -3, &[0][..]),
            (-5, -6, N, &[][..]),
            (-5, -6, 1, &[][..]),
            (-5, -6, 2, &[][..]),
            (-5, -6, -1, &[0][..]),
            (-5, -6, -3, &[0][..]),
            (-5, -5, N, &[][..]),
            (-5, -5, 1, &[][..]),
            (-5, -5, 2, &[][..]),
            (-5, -5, -1, &[][..]),
            (-5, -5, -3, &[][..]),
            (-5, -2, N, &[0, 1, 2][..]),
            (-5, -2, 1, &[0, 1, 2][..]),
            (-5, -2, 2, &[0, 2][..]),
            (-5, -2, -1, &[][..]),
            (-5, -2, -3, &[][..]),
            (-5, 0, N, &[][..]),
            (-5, 0, 1, &[][..]),
            (-5, 0, 2, &[][..]),
            (-5, 0, -1, &[][..]),
            (-5, 0, -3, &[][..]),
            (-5, 1, N, &[0][..]),
            (-5, 1, 1, &[0][..]),
            (-5, 1, 2, &[0][..]),
            (-5, 1, -1, &[][..]),
            (-5, 1, -3, &[][..]),
            (-5, 3, N, &[0, 1, 2][..]),
            (-5, 3, 1, &[0, 1, 2][..]),
            (-5, 3, 2, &[0, 2][..]),
            (-5, 3, -1, &[][..]),
            (-5, 3, -3, &[][..]),
            (-5, 5, N, &[0, 1, 2, 3, 4][..]),
            (-5, 5, 1, &[0, 1, 2, 3, 4][..]),
            (-5, 5, 2, &[0, 2, 4][..]),
            (-5, 5, -1, &[][..]),
            (-5, 5, -3, &[][..]),
            (-5, 6, N, &[0, 1, 2, 3, 4][..]),
            (-5, 6, 1, &[0, 1, 2, 3, 4][..]),
            (-5, 6, 2, &[0, 2, 4][..]),
            (-5, 6, -1, &[][..]),
            (-5, 6, -3, &[][..]),
            (-2, N, N, &[3, 4][..]),
            (-2, N, 1, &[3, 4][..]),
            (-2, N, 2, &[3][..]),
            (-2, N, -1, &[3, 2, 1, 0][..]),
            (-2, N, -3, &[3, 0][..]),
            (-2, -6, N, &[][..]),
            (-2, -6, 1, &[][..]),
            (-2, -6, 2, &[][..]),
            (-2, -6, -1, &[3, 2, 1, 0][..]),
            (-2, -6, -3, &[3, 0][..]),
            (-2, -5, N, &[][..]),
            (-2, -5, 1, &[][..]),
            (-2, -5, 2, &[][..]),
            (-2, -5, -1, &[3, 2, 1][..]),
            (-2, -5, -3, &[3][..]),
            (-2, -2, N, &[][..]),
            (-2, -2, 1, &[][..]),
            (-2, -2, 2, &[][..]),
            (-2, -2, -1, &[][..]),
            (-2, -2, -3, &[][..]),
            (-2, 0, N, &[][..]),
            (-2, 0, 1, &[][..]),
            (-2, 0, 2, &[][..]),
            (-2, 0, -1, &[3, 2, 1][..]),
            (-2, 0, -3, &[3][..]),
            (-2, 1, N, &[][..]),
            (-2, 1, 1, &[][..]),
            (-2, 1, 2, &[][..]),
            (-2, 1, -1, &[3, 2][..]),
            (-2, 1, -3, &[3][..]),
            (-2, 3, N, &[][..]),
            (-2, 3, 1, &[][..]),
            (-2, 3, 2, &[][..]),
            (-2, 3, -1, &[][..]),
            (-2, 3, -3, &[][..]),
            (-2, 5, N, &[3, 4][..]),
            (-2, 5, 1, &[3, 4][..]),
            (-2, 5, 2, &[3][..]),
            (-2, 5, -1, &[][..]),
            (-2, 5, -3, &[][..]),
            (-2, 6, N, &[3, 4][..]),
            (-2, 6, 1, &[3, 4][..]),
            (-2, 6, 2, &[3][..]),
            (-2, 6, -1, &[][..]),
            (-2, 6, -3, &[][..]),
            (0, N, N, &[0, 1, 2, 3, 4][..]),
            (0, N, 1, &[0, 1, 2, 3, 4][..]),
            (0, N, 2, &[0, 2, 4][..]),
            (0, N, -1, &[0][..]),
            (0, N, -3, &[0][..]),
            (0, -6, N, &[][..]),
            (0, -6, 1, &[][..]),
            (0, -6, 2, &[][..]),
            (0, -6, -1, &[0][..]),
            (0, -6, -3, &[0][..]),
            (0, -5, N, &[][..]),
            (0, -5, 1, &[][..]),
            (0, -5, 2, &[][..]),
            (0, -5, -1, &[][..]),
            (0, -5, -3, &[][..]),
            (0, -2, N, &[0, 1, 2][..]),
            (0, -2, 1, &[0, 1, 2][..]),
            (0, -2, 2, &[0, 2][..]),
            (0, -2, -1, &[][..]),
            (0, -2, -3, &[][..]),
            (0, 0, N, &[][..]),
            (0, 0, 1, &[][..]),
            (0, 0, 2, &[][..]),
            (0, 0, -1, &[][..]),
            (0, 0, -3, &[][..]),
            (0, 1, N, &[0][..]),
            (0, 1, 1, &[0][..]),
            (0, 1, 2, &[0][..]),
            (0, 1, -1, &[][..]),
            (0, 1, -3, &[][..]),
            (0, 3, N, &[0, 1, 2][..]),
            (0, 3, 1, &[0, 1, 2][..]),
            (0, 3, 2, &[0, 2][..]),
            (0, 3, -1, &[][..]),
            (0, 3, -3, &[][..]),
            (0, 5, N, &[0, 1, 2, 3, 4][..]),
            (0, 5, 1, &[0, 1, 2, 3, 4][..]),
            (0, 5, 2, &[0, 2, 4][..]),
            (0, 5, -1, &[][..]),
            (0, 5, -3, &[][..]),
            (0, 6, N, &[0, 1, 2, 3, 4][..]),
            (0, 6, 1, &[0, 1, 2, 3, 4][..]),
            (0, 6, 2, &[0, 2, 4][..]),
            (0, 6, -1, &[][..]),
            (0, 6, -3, &[][..]),
            (1, N, N, &[1, 2, 3, 4][..]),
            (1, N, 1, &[1, 2, 3, 4][..]),
            (1, N, 2, &[1, 3][..]),
            (1, N, -1, &[1, 0][..]),
            (1, N, -3, &[1][..]),
            (1, -6, N, &[][..]),
            (1, -6, 1, &[][..]),
            (1, -6, 2, &[][..]),
            (1, -6, -1, &[1, 0][..]),
            (1, -6, -3, &[1][..]),
            (1, -5, N, &[][..]),
            (1, -5, 1, &[][..]),
            (1, -5, 2, &[][..]),
            (1, -5, -1, &[1][..]),
            (1, -5, -3, &[1][..]),
            (1, -2, N, &[1, 2][..]),
            (1, -2, 1, &[1, 2][..]),
            (1, -2, 2, &[1][..]),
            (1, -2, -1, &[][..]),
            (1, -2, -3, &[][..]),
            (1, 0, N, &[][..]),
            (1, 0, 1, &[][..]),
            (1, 0, 2, &[][..]),
            (1, 0, -1, &[1][..]),
            (1, 0, -3, &[1][..]),
            (1, 1, N, &[][..]),
            (1, 1, 1, &[][..]),
            (1, 1, 2, &[][..]),
            (1, 1, -1, &[][..]),
            (1, 1, -3, &[][..]),
            (1, 3, N, &[1, 2][..]),
            (1, 3, 1, &[1, 2][..]),
            (1, 3, 2, &[1][..]),
            (1, 3, -1, &[][..]),
            (1, 3, -3, &[][..]),
            (1, 5, N, &[1, 2, 3, 4][..]),
            (1, 5, 1, &[1, 2, 3, 4][..]),
            (1, 5, 2, &[1, 3][..]),
            (1, 5, -1, &[][..]),
            (1, 5, -3, &[][..]),
            (1, 6, N, &[1, 2, 3, 4][..]),
            (1, 6, 1, &[1, 2, 3, 4][..]),
            (1, 6, 2, &[1, 3][..]),
            (1, 6, -1, &[][..]),
            (1, 6, -3, &[][..]),
            (3, N, N, &[3, 4][..]),
            (3, N, 1, &[3, 4][..]),
            (3, N, 2, &[3][..]),
            (3, N, -1, &[3, 2, 1, 0][..]),
            (3, N, -3, &[3, 0][..]),
            (3, -6, N, &[][..]),
            (3, -6, 1, &[][..]),
            (3, -6, 2, &[][..]),
            (3, -6, -1, &[3, 2, 1, 0][..]),
            (3, -6, -3, &[3, 0][..]),
            (3, -5, N, &[][..]),
            (3, -5, 1, &[][..]),
            (3, -5, 2, &[][..]),
            (3, -5, -1, &[3, 2, 1][..]),
            (3, -5, -3, &[3][..]),
            (3, -2, N, &[][..]),
            (3, -2, 1, &[][..]),
            (3, -2, 2, &[][..]),
            (3, -2, -1, &[][..]),
            (3, -2, -3, &[][..]),
            (3, 0, N, &[][..]),
            (3, 0, 1, &[][..]),
            (3, 0, 2, &[][..]),
            (3, 0, -1, &[3, 2, 1][..]),
            (3, 0, -3, &[3][..]),
            (3, 1, N, &[][..]),
            (3, 1, 1, &[][..]),
            (3, 1, 2, &[][..]),
            (3, 1, -1, &[3, 2][..]),
            (3, 1, -3, &[3][..]),
            (3, 3, N, &[][..]),
            (3, 3, 1, &[][..]),
            (3, 3, 2, &[][..]),
            (3, 3, -1, &[][..]),
            (3, 3, -3, &[][..]),
            (3, 5, N, &[3, 4][..]),
            (3, 5, 1, &[3, 4][..]),
            (3, 5, 2, &[3][..]),
            (3, 5, -1, &[][..]),
            (3, 5, -3, &[][..]),
            (3, 6, N, &[3, 4][..]),
            (3, 6, 1, &[3, 4][..]),
            (3, 6, 2, &[3][..]),
            (3, 6, -1, &[][..]),
            (3, 6, -3, &[][..]),
            (5, N, N, &[][..]),
            (5, N, 1, &[][..]),
            (5, N, 2, &[][..]),
            (5, N, -1, &[4, 3, 2, 1, 0][..]),
            (5, N, -3, &[4, 1][..]),
            (5, -6, N, &[][..]),
            (5, -6, 1, &[][..]),
            (5, -6, 2, &[][..]),
            (5, -6, -1, &[4, 3, 2, 1, 0][..]),
            (5, -6, -3, &[4, 1][..]),
            (5, -5, N, &[][..]),
            (5, -5, 1, &[][..]),
            (5, -5, 2, &[][..]),
            (5, -5, -1, &[4, 3, 2, 1][..]),
            (5, -5, -3, &[4, 1][..]),
            (5, -2, N, &[][..]),
            (5, -2, 1, &[][..]),
            (5, -2, 2, &[][..]),
            (5, -2, -1, &[4][..]),
            (5, -2, -3, &[4][..]),
            (5, 0, N, &[][..]),
            (5, 0, 1, &[][..]),
            (5, 0, 2, &[][..]),
            (5, 0, -1, &[4, 3, 2, 1][..]),
            (5, 0, -3, &[4, 1][..]),
            (5, 1, N, &[][..]),
            (5, 1, 1, &[][..]),
            (5, 1, 2, &[][..]),
            (5, 1, -1, &[4, 3, 2][..]),
            (5, 1, -3, &[4][..]),
            (5, 3, N, &[][..]),
            (5, 3, 1, &[][..]),
            (5, 3, 2, &[][..]),
            (5, 3, -1, &[4][..]),
            (5, 3, -3, &[4][..]),
            (5, 5, N, &[][..]),
            (5, 5, 1, &[][..]),
            (5, 5, 2, &[][..]),
            (5, 5, -1, &[][..]),
            (5, 5, -3, &[][..]),
            (5, 6, N, &[][..]),
            (5, 6, 1, &[][..]),
            (5, 6, 2, &[][..]),
            (5, 6, -1, &[][..]),
            (5, 6, -3, &[][..]),
            (6, N, N, &[][..]),
            (6, N, 1, &[][..]),
            (6, N, 2, &[][..]),
            (6, N, -1, &[4, 3, 2, 1, 0][..]),
            (6, N, -3, &[4, 1][..]),
            (6, -6, N, &[][..]),
            (6, -6, 1, &[][..]),
            (6, -6, 2, &[][..]),
            (6, -6, -1, &[4, 3, 2, 1, 0][..]),
            (6, -6, -3, &[4, 1][..]),
            (6, -5, N, &[][..]),
            (6, -5, 1, &[][..]),
            (6, -5, 2, &[][..]),
            (6, -5, -1, &[4, 3, 2, 1][..]),
            (6, -5, -3, &[4, 1][..]),
            (6, -2, N, &[][..]),
            (6, -2, 1, &[][..]),
            (6, -2, 2, &[][..]),
            (6, -2, -1, &[4][..]),
            (6, -2, -3, &[4][..]),
            (6, 0, N, &[][..]),
            (6, 0, 1, &[][..]),
            (6, 0, 2, &[][..]),
            (6, 0, -1, &[4, 3, 2, 1][..]),
            (6, 0, -3, &[4, 1][..]),
            (6, 1, N, &[][..]),
            (6, 1, 1, &[][..]),
            (6, 1, 2, &[][..]),
            (6, 1, -1, &[4, 3, 2][..]),
            (6, 1, -3, &[4][..]),
            (6, 3, N, &[][..]),
            (6, 3, 1, &[][..]),
            (6, 3, 2, &[][..]),
            (6, 3, -1, &[4][..]),
            (6, 3, -3, &[4][..]),
            (6, 5, N, &[][..]),
            (6, 5, 1, &[][..]),
            (6, 5, 2, &[][..]),
            (6, 5, -1, &[][..]),
            (6, 5, -3, &[][..]),
            (6, 6, N, &[][..]),
            (6, 6, 1, &[][..]),
            (6, 6, 2, &[][..]),
            (6, 6, -1, &[][..]),
            (6, 6, -3, &[][..]),
        ];
        slice_table(cases);
    }

    #[test]
    fn numpy_tile_repeat_reverse() {
        check(
            "tile",
            &[arange(&[2, 3], 0.0)],
            &[("reps", t(&[2, 2]))],
            &[4, 6],
            &[0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 3.0, 4.0, 5.0, 0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 3.0, 4.0, 5.0],
        );
        check(
            "tile",
            &[arange(&[2, 3], 0.0)],
            &[("reps", t(&[2]))],
            &[2, 6],
            &[0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 3.0, 4.0, 5.0],
        );
        check(
            "tile",
            &[arange(&[2, 3], 0.0)],
            &[("reps", t(&[2, 1, 2]))],
            &[2, 2, 6],
            &[0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 3.0, 4.0, 5.0, 0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 3.0, 4.0, 5.0],
        );
        check("tile", &[arange(&[2, 3], 0.0)], &[("reps", t(&[]))], &[2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        check(
            "tile",
            &[arange(&[3, 1, 2], 0.0)],
            &[("reps", t(&[1, 3, 1]))],
            &[3, 3, 2],
            &[0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 2.0, 3.0, 2.0, 3.0, 2.0, 3.0, 4.0, 5.0, 4.0, 5.0, 4.0, 5.0],
        );
        check(
            "repeat",
            &[arange(&[2, 3], 0.0)],
            &[("repeats", Value::Int(2))],
            &[12],
            &[0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0, 5.0, 5.0],
        );
        check(
            "repeat",
            &[arange(&[2, 3], 0.0)],
            &[("repeats", Value::Int(2)), ("axis", Value::Int(1))],
            &[2, 6],
            &[0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0, 5.0, 5.0],
        );
        check(
            "repeat",
            &[arange(&[2, 3], 0.0)],
            &[("repeats", Value::Int(3)), ("axis", Value::Int(-2))],
            &[6, 3],
            &[0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 3.0, 4.0, 5.0, 3.0, 4.0, 5.0],
        );
        check("repeat", &[arange(&[2, 3], 0.0)], &[("repeats", Value::Int(0)), ("axis", Value::Int(1))], &[2, 0], &[]);
        check("reverse", &[arange(&[2, 3], 0.0)], &[("axis", t(&[1]))], &[2, 3], &[2.0, 1.0, 0.0, 5.0, 4.0, 3.0]);
        check("flip", &[arange(&[2, 3], 0.0)], &[("axis", t(&[0, 1]))], &[2, 3], &[5.0, 4.0, 3.0, 2.0, 1.0, 0.0]);
        check("flip", &[arange(&[2, 3], 0.0)], &[("axis", t(&[1, 1]))], &[2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        check(
            "flip",
            &[arange(&[2, 3, 4], 0.0)],
            &[("axis", t(&[0, 2]))],
            &[2, 3, 4],
            &[
                15.0, 14.0, 13.0, 12.0, 19.0, 18.0, 17.0, 16.0, 23.0, 22.0, 21.0, 20.0, 3.0, 2.0, 1.0, 0.0, 7.0, 6.0, 5.0, 4.0, 11.0, 10.0,
                9.0, 8.0,
            ],
        );
    }

    #[test]
    fn numpy_broadcasts() {
        check("broadcast_to", &[arange(&[1, 3], 0.0)], &[("shape", t(&[2, 3]))], &[2, 3], &[0.0, 1.0, 2.0, 0.0, 1.0, 2.0]);
        check("broadcast_to", &[arange(&[2, 1], 0.0)], &[("shape", t(&[0, 3]))], &[2, 3], &[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
        check(
            "broadcast_to",
            &[arange(&[1, 2, 1], 0.0)],
            &[("shape", t(&[3, 2, 4]))],
            &[3, 2, 4],
            &[0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0],
        );
        check(
            "broadcast_axis",
            &[arange(&[1, 3, 1], 0.0)],
            &[("axis", t(&[0, 2])), ("size", t(&[2, 2]))],
            &[2, 3, 2],
            &[0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 0.0, 0.0, 1.0, 1.0, 2.0, 2.0],
        );
        check(
            "broadcast_axes",
            &[arange(&[1, 3, 1], 0.0)],
            &[("axis", t(&[2])), ("size", t(&[4]))],
            &[1, 3, 4],
            &[0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0],
        );
        check("broadcast_axis", &[arange(&[1, 3, 1], 0.0)], &[], &[1, 3, 1], &[0.0, 1.0, 2.0]);
        check("broadcast_like", &[arange(&[1, 3], 0.0), arange(&[2, 3], 100.0)], &[], &[2, 3], &[0.0, 1.0, 2.0, 0.0, 1.0, 2.0]);
        check(
            "broadcast_like",
            &[arange(&[1, 3, 1], 0.0), arange(&[5, 6], 100.0)],
            &[("lhs_axes", t(&[0, 2])), ("rhs_axes", t(&[1, 0]))],
            &[6, 3, 5],
            &[
                0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0,
                1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0,
                0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0,
                2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0,
            ],
        );
        check(
            "broadcast_like",
            &[arange(&[1, 3, 1], 0.0), arange(&[5, 6], 100.0)],
            &[("lhs_axes", t(&[-1])), ("rhs_axes", t(&[-2]))],
            &[1, 3, 5],
            &[0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0],
        );
    }

    #[test]
    fn numpy_slice_assign() {
        check(
            "_slice_assign",
            &[arange(&[3, 4], 0.0), arange(&[2, 2], 100.0)],
            &[("begin", t(&[0, 1])), ("end", t(&[2, 3]))],
            &[3, 4],
            &[0.0, 100.0, 101.0, 3.0, 4.0, 102.0, 103.0, 7.0, 8.0, 9.0, 10.0, 11.0],
        );
        check(
            "_slice_assign",
            &[arange(&[3, 4], 0.0), arange(&[3, 2], 100.0)],
            &[("begin", t(&[N, N])), ("end", t(&[N, N])), ("step", t(&[-1, -2]))],
            &[3, 4],
            &[0.0, 105.0, 2.0, 104.0, 4.0, 103.0, 6.0, 102.0, 8.0, 101.0, 10.0, 100.0],
        );
        check(
            "_slice_assign",
            &[arange(&[3, 4], 0.0), arange(&[1, 4], 100.0)],
            &[("begin", t(&[1])), ("end", t(&[2]))],
            &[3, 4],
            &[0.0, 1.0, 2.0, 3.0, 100.0, 101.0, 102.0, 103.0, 8.0, 9.0, 10.0, 11.0],
        );
        check(
            "_slice_assign",
            &[arange(&[4, 5, 6], 0.0), arange(&[2, 2, 3], 100.0)],
            &[("begin", t(&[1, N, -1])), ("end", t(&[N, -1, 0])), ("step", t(&[2, 2, -2]))],
            &[4, 5, 6],
            &[
                0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0,
                22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 102.0, 32.0, 101.0, 34.0, 100.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0,
                42.0, 105.0, 44.0, 104.0, 46.0, 103.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0,
                62.0, 63.0, 64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0, 72.0, 73.0, 74.0, 75.0, 76.0, 77.0, 78.0, 79.0, 80.0, 81.0,
                82.0, 83.0, 84.0, 85.0, 86.0, 87.0, 88.0, 89.0, 90.0, 108.0, 92.0, 107.0, 94.0, 106.0, 96.0, 97.0, 98.0, 99.0, 100.0,
                101.0, 102.0, 111.0, 104.0, 110.0, 106.0, 109.0, 108.0, 109.0, 110.0, 111.0, 112.0, 113.0, 114.0, 115.0, 116.0, 117.0,
                118.0, 119.0,
            ],
        );
        check(
            "_slice_assign_scalar",
            &[arange(&[3, 4], 0.0)],
            &[("scalar", Value::Float(-2.5)), ("begin", t(&[0, 1])), ("end", t(&[2, 3]))],
            &[3, 4],
            &[0.0, -2.5, -2.5, 3.0, 4.0, -2.5, -2.5, 7.0, 8.0, 9.0, 10.0, 11.0],
        );
        check(
            "_slice_assign_scalar",
            &[arange(&[3, 4], 0.0)],
            &[("scalar", Value::Float(7.0)), ("begin", t(&[N])), ("end", t(&[N])), ("step", t(&[2]))],
            &[3, 4],
            &[7.0, 7.0, 7.0, 7.0, 4.0, 5.0, 6.0, 7.0, 7.0, 7.0, 7.0, 7.0],
        );
        check(
            "_slice_assign_scalar",
            &[arange(&[3, 4], 0.0)],
            &[("begin", t(&[N, -1])), ("end", t(&[N, 0])), ("step", t(&[N, -2]))],
            &[3, 4],
            &[0.0, 0.0, 2.0, 0.0, 4.0, 0.0, 6.0, 0.0, 8.0, 0.0, 10.0, 0.0],
        );
    }

    #[test]
    fn numpy_large_transpose_checksums() {
        transpose_checksum(&[3, 50, 70], &[0, 2, 1], 375523642375.0);
        transpose_checksum(&[64, 33, 5], &[2, 0, 1], 314066896000.0);
        transpose_checksum(&[300, 257], &[1, 0], 114854418849500.0);
        transpose_checksum(&[4, 5, 6, 7, 8], &[4, 2, 0, 3, 1], 76548920560.0);
    }
}
