//! `slice`, `slice_axis` and the slice assignments behind `NDArray.__setitem__`
//! (`_slice_assign`, `_slice_assign_scalar`).

use super::{at, copy_view, fmt_spec, norm_axis, Out, DATA};
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::kernels::cpu::layout::{strided_fill, strides_of};
use crate::op::copy::copy_bytes;
use crate::op::{Arity, Blob, InferArgs, OpCall, OpDef, PType, ParamSpec, Registry};
use crate::shape::{fmt_shape, Shape};
use crate::with_dtype;

// ---------------------------------------------------------------- slicing

/// A resolved slice: per input dim, first index, step and output length.
pub(in crate::op) struct SliceSpec {
    begin: Vec<isize>,
    step: Vec<isize>,
    pub(in crate::op) out: Shape,
}

impl SliceSpec {
    /// Offset of the first element and element strides of the sliced view of an
    /// array of shape `shape`.
    pub(in crate::op) fn view(&self, shape: &[usize]) -> (isize, Vec<isize>) {
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
pub(in crate::op) fn spec_in_compute(c: &OpCall, shape: &[usize]) -> Result<SliceSpec> {
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
pub(in crate::op) fn slice_axis_range(a: &InferArgs, s: &[usize]) -> Result<(usize, usize, usize)> {
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

pub(super) fn register(r: &mut Registry) {
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
}
