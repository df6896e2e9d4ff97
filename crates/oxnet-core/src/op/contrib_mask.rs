//! `_contrib_boolean_mask`: the slices of `data` along `axis` whose `index` entry is
//! non-zero, and its backward. The output's length along `axis` depends on the
//! values of `index`, so the op declares a dynamic shape ([`OpDef::dynamic_shape`]):
//! run imperatively, [`super::invoke`] waits for `index` and counts its non-zero
//! entries before allocating the output (MXNet 1.9.1 does the same in its
//! FComputeEx); in a symbol the length stays unknown, and a hybridized block that
//! holds it runs its graph node by node (see `graph::cached`), as MXNet's dynamic
//! shape CachedOp does. Its gradient scatters the output gradient back to the kept
//! slices (zero elsewhere); `index` gets none.

use super::util::read_f64;
use super::{Arity, Blob, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};

type Out = Result<Vec<(Shape, DType)>>;
type Grads = Result<Vec<Option<NDArray>>>;

const PARAMS: &[ParamSpec] =
    &[ParamSpec::new("axis", PType::Int, Some("0"), "An integer that represents the axis in NDArray to mask from.")];

/// The checked axis of `data` (negative counts from the end).
fn axis_of(op: &str, p: &Params, data: &[usize]) -> Result<usize> {
    let nd = data.len() as i64;
    let ax = p.int("axis");
    let a = if ax < 0 { ax + nd } else { ax };
    if a < 0 || a >= nd {
        return Err(Error::op(op, format!("axis {ax} is out of range for data of shape {}", fmt_shape(data))));
    }
    Ok(a as usize)
}

fn check(op: &str, p: &Params, data: &[usize], index: &[usize]) -> Result<usize> {
    let ax = axis_of(op, p, data)?;
    if index.len() != 1 {
        return Err(Error::op(op, format!("index must be 1-D, got shape {}", fmt_shape(index))));
    }
    if index[0] != data[ax] {
        return Err(Error::op(
            op,
            format!("index of length {} does not match the length {} of data {} along axis {ax}", index[0], data[ax], fmt_shape(data)),
        ));
    }
    Ok(ax)
}

/// Static inference: the masked axis is unknown (0) until `index` is read.
fn mask_infer(a: &InferArgs) -> Out {
    let ax = check(a.op.name, a.params, a.shapes[0], a.shapes[1])?;
    let mut s = Shape::from_slice(a.shapes[0]);
    s[ax] = 0;
    Ok(vec![(s, a.dtypes[0])])
}

/// Dynamic inference: reads `index` (waiting for it) and counts what it keeps.
fn mask_dynamic(p: &Params, inputs: &[NDArray]) -> Out {
    let (data, index) = (&inputs[0], &inputs[1]);
    let ax = check("_contrib_boolean_mask", p, data.shape(), index.shape())?;
    let keep = super::util::ndarray_f64(index)?.iter().filter(|v| **v != 0.0).count();
    let mut s = Shape::from_slice(data.shape());
    s[ax] = keep;
    Ok(vec![(s, data.dtype())])
}

/// `(outer, n, inner bytes)` of data around `axis`.
fn geometry(b: &Blob, ax: usize) -> (usize, usize, usize) {
    let s = &b.shape;
    (s[..ax].iter().product(), s[ax], s[ax + 1..].iter().product::<usize>() * b.dtype.size())
}

fn mask_compute(c: &mut OpCall) -> Result<()> {
    let (data, index, out) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let ax = axis_of(c.op.name, c.params, &data.shape)?;
    let keep: Vec<usize> = read_f64(index).iter().enumerate().filter(|(_, v)| **v != 0.0).map(|(i, _)| i).collect();
    if keep.len() != out.shape[ax] {
        return Err(Error::op(c.op.name, format!("index keeps {} slices, the output holds {}", keep.len(), out.shape[ax])));
    }
    let (outer, n, inner) = geometry(data, ax);
    for o in 0..outer {
        for (k, &i) in keep.iter().enumerate() {
            // SAFETY: both ranges lie inside their blobs (inner bytes per slice).
            unsafe { std::ptr::copy_nonoverlapping(data.ptr.add((o * n + i) * inner), out.ptr.add((o * keep.len() + k) * inner), inner) };
        }
    }
    Ok(())
}

/// Backward: `(ograd, data, index)` → the gradient of data.
fn bwd_infer(a: &InferArgs) -> Out {
    let ax = check(a.op.name, a.params, a.shapes[1], a.shapes[2])?;
    let (g, d) = (a.shapes[0], a.shapes[1]);
    if g.len() != d.len() || g.iter().zip(d).enumerate().any(|(i, (x, y))| i != ax && x != y) {
        return Err(a.err(format!("output gradient of shape {} does not fit data of shape {}", fmt_shape(g), fmt_shape(d))));
    }
    Ok(vec![(Shape::from_slice(d), a.dtypes[0])])
}

fn bwd_compute(c: &mut OpCall) -> Result<()> {
    let (g, index, dx) = (&c.inputs[0], &c.inputs[2], &c.outputs[0]);
    let ax = axis_of(c.op.name, c.params, &dx.shape)?;
    let keep: Vec<usize> = read_f64(index).iter().enumerate().filter(|(_, v)| **v != 0.0).map(|(i, _)| i).collect();
    if keep.len() != g.shape[ax] {
        return Err(Error::op(c.op.name, format!("index keeps {} slices, the output gradient holds {}", keep.len(), g.shape[ax])));
    }
    let (outer, n, inner) = geometry(dx, ax);
    // SAFETY: the output is ours to write; zero bytes are zero in every dtype.
    unsafe { std::ptr::write_bytes(dx.ptr, 0, dx.size() * dx.dtype.size()) };
    for o in 0..outer {
        for (k, &i) in keep.iter().enumerate() {
            // SAFETY: both ranges lie inside their blobs.
            unsafe { std::ptr::copy_nonoverlapping(g.ptr.add((o * keep.len() + k) * inner), dx.ptr.add((o * n + i) * inner), inner) };
        }
    }
    Ok(())
}

fn g_mask(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let og = g.first().ok_or_else(|| Error::op("_contrib_boolean_mask", "gradient called without an output gradient"))?;
    let attrs: Vec<(&str, super::Value)> = p.to_strings().into_iter().map(|(n, v)| (n, super::Value::Str(v))).collect();
    let dx = super::call1("_backward_contrib_boolean_mask", &[og.clone(), i[0].clone(), i[1].clone()], &attrs)?;
    Ok(vec![Some(dx), None])
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "_contrib_boolean_mask",
            "Given an n-d NDArray data, and a 1-d NDArray index, the operator produces an un-predeterminable shaped n-d NDArray out, which stands for the rows in x where the corresonding element in index is non-zero.",
            Arity::Fixed(&["data", "index"]),
            PARAMS,
            mask_infer,
            mask_compute,
        )
        .dynamic_shape(mask_dynamic)
        .grad(g_mask),
    );
    r.add(OpDef::new(
        "_backward_contrib_boolean_mask",
        "Gradient of boolean_mask: `(ograd, data, index)` to the gradient of data.",
        Arity::Fixed(&["ograd", "data", "index"]),
        PARAMS,
        bwd_infer,
        bwd_compute,
    ));
}
