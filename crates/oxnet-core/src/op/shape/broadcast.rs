//! `broadcast_to`, `broadcast_axis` and `broadcast_like`: strided copies with zero
//! strides over the broadcast axes.

use super::{copy_view, fmt_spec, norm_axis, Out, DATA};
use crate::error::Result;
use crate::kernels::cpu::layout::strides_of;
use crate::op::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Registry};
use crate::shape::{fmt_shape, Shape};

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

pub(super) fn register(r: &mut Registry) {
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
