//! Small indexing ops of MXNet's contrib namespace: `_contrib_index_copy` (with
//! `_backward_index_copy`), `_contrib_index_array` and `_contrib_allclose`, as in
//! MXNet 1.9.1.
//!
//! - `index_copy(old_tensor, index_vector, new_tensor)` copies row `i` of the new
//!   tensor to row `index_vector[i]` of a copy of the old one; the old tensor's
//!   gradient is the output gradient with the overwritten rows zeroed, the new
//!   tensor's the output gradient's rows at the index.
//! - `index_array(data, axes=None)` gives, for every element of `data`, its index
//!   along `axes` (all by default): int64 `data.shape + (len(axes),)`; no gradient.
//! - `allclose(a, b, rtol, atol, equal_nan)` is 1 when every
//!   `|a - b| <= atol + rtol * |b|`, else 0 (an int32 scalar, shape `()`); no gradient.

use super::util::{read_f64, write_f64};
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};

type Out = Result<Vec<(Shape, DType)>>;
type Grads = Result<Vec<Option<NDArray>>>;

// ---- index_copy ---------------------------------------------------------------------

fn index_copy_check(a: &InferArgs, old: &[usize], idx: &[usize], new: &[usize]) -> Result<()> {
    if old.is_empty() {
        return Err(a.err("old_tensor must have at least one dimension"));
    }
    if idx.len() != 1 {
        return Err(a.err(format!("index_vector must be 1-D, got {}", fmt_shape(idx))));
    }
    if new.len() != old.len() || new[1..] != old[1..] || new[0] != idx[0] {
        return Err(a.err(format!(
            "new_tensor {} must have the shape of old_tensor {} with {} rows (the length of index_vector)",
            fmt_shape(new),
            fmt_shape(old),
            idx[0]
        )));
    }
    Ok(())
}

fn index_copy_infer(a: &InferArgs) -> Out {
    index_copy_check(a, a.shapes[0], a.shapes[1], a.shapes[2])?;
    if a.dtypes[2] != a.dtypes[0] {
        return Err(a.err(format!("new_tensor has dtype {} but old_tensor has {}", a.dtypes[2].name(), a.dtypes[0].name())));
    }
    Ok(vec![(Shape::from_slice(a.shapes[0]), a.dtypes[0])])
}

/// The target rows, checked against the old tensor's row count.
fn rows(op: &str, idx: &[f64], n: usize) -> Result<Vec<usize>> {
    idx.iter()
        .map(|&v| {
            if v < 0.0 || v >= n as f64 {
                Err(Error::op(op, format!("index {v} is out of bounds for old_tensor with {n} rows")))
            } else {
                Ok(v as usize)
            }
        })
        .collect()
}

fn index_copy_compute(c: &mut OpCall) -> Result<()> {
    let mut out = read_f64(&c.inputs[0]);
    let n = c.inputs[0].shape[0];
    let row = out.len().checked_div(n).unwrap_or(0);
    let idx = rows(c.op.name, &read_f64(&c.inputs[1]), n)?;
    let new = read_f64(&c.inputs[2]);
    for (i, &r) in idx.iter().enumerate() {
        out[r * row..(r + 1) * row].copy_from_slice(&new[i * row..(i + 1) * row]);
    }
    write_f64(&c.outputs[0], &out);
    Ok(())
}

/// `(ograd, old_tensor, index_vector, new_tensor)` → gradients of old and new.
fn index_copy_backward_infer(a: &InferArgs) -> Out {
    index_copy_check(a, a.shapes[1], a.shapes[2], a.shapes[3])?;
    Ok(vec![(Shape::from_slice(a.shapes[1]), a.dtypes[0]), (Shape::from_slice(a.shapes[3]), a.dtypes[0])])
}

fn index_copy_backward_compute(c: &mut OpCall) -> Result<()> {
    let mut gold = read_f64(&c.inputs[0]);
    let n = c.inputs[1].shape[0];
    let row = gold.len().checked_div(n).unwrap_or(0);
    let idx = rows("_contrib_index_copy", &read_f64(&c.inputs[2]), n)?;
    let mut gnew = vec![0f64; idx.len() * row];
    for (i, &r) in idx.iter().enumerate() {
        gnew[i * row..(i + 1) * row].copy_from_slice(&gold[r * row..(r + 1) * row]);
    }
    for &r in &idx {
        gold[r * row..(r + 1) * row].iter_mut().for_each(|v| *v = 0.0);
    }
    write_f64(&c.outputs[0], &gold);
    write_f64(&c.outputs[1], &gnew);
    Ok(())
}

fn g_index_copy(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let og = g.first().ok_or_else(|| Error::op("_contrib_index_copy", "gradient called without an output gradient"))?;
    let mut r = super::call("_backward_index_copy", &[og.clone(), i[0].clone(), i[1].clone(), i[2].clone()], &[])?;
    let gnew = r.pop();
    let gold = r.pop();
    Ok(vec![gold, None, gnew])
}

fn two(_: &Params) -> usize {
    2
}

// ---- index_array --------------------------------------------------------------------

const INDEX_ARRAY_PARAMS: &[ParamSpec] =
    &[ParamSpec::new("axes", PType::OptTuple, Some("None"), "The axes to include in the index array. Supports negative values.")];

fn index_axes(a: &InferArgs) -> Result<Vec<usize>> {
    let nd = a.shapes[0].len() as i64;
    match a.params.opt_tuple("axes") {
        None => Ok((0..nd as usize).collect()),
        Some(v) => v
            .iter()
            .map(|&x| {
                let y = if x < 0 { x + nd } else { x };
                if y < 0 || y >= nd {
                    Err(a.err(format!("axis {x} is out of bounds for data of {nd} dimensions")))
                } else {
                    Ok(y as usize)
                }
            })
            .collect(),
    }
}

fn index_array_infer(a: &InferArgs) -> Out {
    let axes = index_axes(a)?;
    let mut s = Shape::from_slice(a.shapes[0]);
    s.push(axes.len());
    Ok(vec![(s, DType::I64)])
}

fn index_array_compute(c: &mut OpCall) -> Result<()> {
    let shape = &c.inputs[0].shape;
    let k = *c.outputs[0].shape.last().unwrap_or(&0);
    let nd = shape.len() as i64;
    let axes: Vec<usize> = match c.params.opt_tuple("axes") {
        None => (0..shape.len()).collect(),
        Some(v) => v.iter().map(|&x| if x < 0 { (x + nd) as usize } else { x as usize }).collect(),
    };
    let total: usize = shape.iter().product();
    // SAFETY: the output is int64 and ours to write, `total * k` elements.
    let out = unsafe { c.outputs[0].slice_mut::<i64>() };
    let mut idx = vec![0usize; shape.len()];
    for e in 0..total {
        for (j, &ax) in axes.iter().enumerate() {
            out[e * k + j] = idx[ax] as i64;
        }
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(())
}

fn no_grad(_: &Params, i: &[NDArray], _: &[NDArray], _: &[NDArray]) -> Grads {
    Ok(vec![None; i.len()])
}

// ---- allclose -----------------------------------------------------------------------

const ALLCLOSE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("rtol", PType::Float, Some("1e-05"), "Relative tolerance."),
    ParamSpec::new("atol", PType::Float, Some("1e-08"), "Absolute tolerance."),
    ParamSpec::new(
        "equal_nan",
        PType::Bool,
        Some("True"),
        "Whether to compare NaN's as equal. If True, NaN's in A will be considered equal to NaN's in B in the output array.",
    ),
];

fn allclose_infer(a: &InferArgs) -> Out {
    if a.shapes[0] != a.shapes[1] {
        return Err(a.err(format!("a {} and b {} must have the same shape", fmt_shape(a.shapes[0]), fmt_shape(a.shapes[1]))));
    }
    Ok(vec![(Shape::new(), DType::I32)])
}

fn allclose_compute(c: &mut OpCall) -> Result<()> {
    let (a, b) = (read_f64(&c.inputs[0]), read_f64(&c.inputs[1]));
    let p = c.params;
    let (rtol, atol, nan) = (p.float("rtol"), p.float("atol"), p.bool("equal_nan"));
    let close = a.iter().zip(&b).all(|(&x, &y)| {
        if x.is_nan() || y.is_nan() {
            nan && x.is_nan() && y.is_nan()
        } else if x == y {
            true
        } else {
            (x - y).abs() <= atol + rtol * y.abs()
        }
    });
    write_f64(&c.outputs[0], &[if close { 1.0 } else { 0.0 }]);
    Ok(())
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "_contrib_index_copy",
            "Copies the elements of a `new_tensor` into the `old_tensor`. This operator copies the elements by selecting the indices in the order given in `index`: row i of new_tensor goes to row index[i] of the output, the other rows are those of old_tensor.",
            Arity::Fixed(&["old_tensor", "index_vector", "new_tensor"]),
            &[],
            index_copy_infer,
            index_copy_compute,
        )
        .grad(g_index_copy),
    );
    r.add(
        OpDef::new(
            "_backward_index_copy",
            "Gradient of index_copy: `(ograd, old_tensor, index_vector, new_tensor)` to the gradients of old_tensor and new_tensor.",
            Arity::Fixed(&["ograd", "old_tensor", "index_vector", "new_tensor"]),
            &[],
            index_copy_backward_infer,
            index_copy_backward_compute,
        )
        .outputs(two),
    );
    r.add(
        OpDef::new(
            "_contrib_index_array",
            "Returns an array of indexes of the input array: for an input of shape (d1, ..., dn) the output is an int64 array of shape (d1, ..., dn, len(axes)) holding each element's index along `axes` (all axes by default).",
            Arity::Fixed(&["data"]),
            INDEX_ARRAY_PARAMS,
            index_array_infer,
            index_array_compute,
        )
        .grad(no_grad),
    );
    r.add(
        OpDef::new(
            "_contrib_allclose",
            "This operators implements the numpy.allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False): 1 when |a - b| <= atol + rtol * |b| for every element, else 0.",
            Arity::Fixed(&["a", "b"]),
            ALLCLOSE_PARAMS,
            allclose_infer,
            allclose_compute,
        )
        .grad(no_grad),
    );
}
