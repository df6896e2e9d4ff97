//! `Concat`, `stack` and `SliceChannel` (`split`): joining arrays along an axis and
//! splitting one into equal parts.

use super::{copy_view, norm_axis, Out, DATA};
use crate::error::Result;
use crate::op::{check_same_dtype, Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Registry};
use crate::shape::{fmt_shape, Shape};

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
pub(in crate::op) fn concat_layout(c: &OpCall) -> (usize, usize, Vec<(usize, usize)>) {
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

pub(in crate::op) fn stack_axis(axis: i64, ndim: usize) -> Option<usize> {
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
    if n > i32::MAX as i64 {
        // MXNet's num_outputs is a C int
        return Err(a.err(format!("num_outputs={n} is out of range (at most {})", i32::MAX)));
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
    // (an empty axis divides into any number of parts: the list itself may not fit)
    let mut outs = Vec::new();
    outs.try_reserve_exact(n).map_err(|_| a.err(format!("num_outputs={n}: that many outputs do not fit in memory")))?;
    outs.resize(n, (part, a.dtypes[0]));
    Ok(outs)
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

pub(super) fn register(r: &mut Registry) {
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
}
