//! `tile`, `repeat` and `reverse`.

use super::{copy_view, fmt_spec, norm_axis, Out, DATA};
use crate::error::Result;
use crate::kernels::cpu::layout::strides_of;
use crate::op::{InferArgs, OpCall, OpDef, PType, ParamSpec, Registry};
use crate::shape::{fmt_shape, Shape};

// ---------------------------------------------------------------- tile, repeat, reverse

const TILE_PARAMS: &[ParamSpec] = &[ParamSpec::new(
    "reps",
    PType::Tuple,
    None,
    "The number of times for repeating the tensor a. Each dim size of reps must be a positive integer. If reps has length d, the result will have dimension of max(d, a.ndim); If a.ndim < d, a is promoted to be d-dimensional by prepending new axes. If a.ndim > d, reps is promoted to a.ndim by pre-pending 1's to it.",
)];

/// Input shape and reps, both padded with leading 1s to the output rank.
pub(in crate::op) fn tile_dims(a: &InferArgs, s: &[usize]) -> Result<(Vec<usize>, Vec<usize>)> {
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
pub(in crate::op) fn repeat_dims(a: &InferArgs, s: &[usize]) -> Result<(usize, usize, usize, usize)> {
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
pub(in crate::op) fn reverse_axes(a: &InferArgs, s: &[usize]) -> Result<Vec<bool>> {
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

pub(super) fn register(r: &mut Registry) {
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
}
