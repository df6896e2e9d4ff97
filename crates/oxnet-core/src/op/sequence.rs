//! Sequence ops over padded batches: `SequenceMask`, `SequenceLast`,
//! `SequenceReverse` (and `_backward_SequenceLast`). The data is `(max_len, batch,
//! ...)` with `axis=0` or `(batch, max_len, ...)` with `axis=1`; the optional
//! `sequence_length` input (one length per batch item, any dtype) is used only with
//! `use_sequence_length=True`, as in MXNet.

use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};
use crate::with_dtype;

type Grads = Result<Vec<Option<NDArray>>>;

const MASK_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "use_sequence_length",
        PType::Bool,
        Some("False"),
        "If set to true, this layer takes in an extra input parameter `sequence_length` to specify variable length sequence",
    ),
    ParamSpec::new("value", PType::Float, Some("0"), "The value to be used as a mask."),
    ParamSpec::new("axis", PType::Int, Some("0"), "The sequence axis. Only values of 0 and 1 are currently supported."),
];
const SEQ_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "use_sequence_length",
        PType::Bool,
        Some("False"),
        "If set to true, this layer takes in an extra input parameter `sequence_length` to specify variable length sequence",
    ),
    ParamSpec::new("axis", PType::Int, Some("0"), "The sequence axis. Only values of 0 and 1 are currently supported."),
];

fn select(p: &Params) -> &'static [&'static str] {
    if p.bool("use_sequence_length") {
        &["data", "sequence_length"]
    } else {
        &["data"]
    }
}
const INPUTS: Arity = Arity::Dynamic { all: &["data", "sequence_length"], select };

/// `(max_len, batch, rest)` of the data, after checking the axis and lengths.
fn geometry(a: &InferArgs) -> Result<(usize, usize, usize)> {
    let s = a.shapes[0];
    let axis = a.params.int("axis");
    if axis != 0 && axis != 1 {
        return Err(a.err(format!("axis must be 0 or 1, got {axis}")));
    }
    if a.op.name == "SequenceReverse" && axis != 0 {
        return Err(a.err(format!("only axis=0 is supported, got {axis}")));
    }
    if s.len() < 2 {
        return Err(a.err(format!("data must have at least 2 dimensions (sequence and batch), got shape {}", fmt_shape(s))));
    }
    let (t, b) = if axis == 0 { (s[0], s[1]) } else { (s[1], s[0]) };
    if a.shapes.len() > 1 && a.params.bool("use_sequence_length") {
        let l = a.shapes[1];
        if l != [b] {
            return Err(a.err(format!(
                "sequence_length must have shape ({b},) (the batch size of data {}), got {}",
                fmt_shape(s),
                fmt_shape(l)
            )));
        }
    }
    Ok((t, b, s[2..].iter().product()))
}

fn mask_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    geometry(a)?;
    Ok(vec![(Shape::from_slice(a.shapes[0]), a.dtypes[0])])
}

fn last_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    geometry(a)?;
    let mut s = Shape::from_slice(a.shapes[0]);
    s.remove(a.params.int("axis") as usize);
    Ok(vec![(s, a.dtypes[0])])
}

/// The lengths (clamped to [0, max_len]), or max_len for every item.
fn lengths(c: &OpCall, which: Option<usize>, t: usize, b: usize) -> Vec<usize> {
    match which {
        Some(i) if c.params.bool("use_sequence_length") => {
            let l = &c.inputs[i];
            with_dtype!(l.dtype, L, {
                // SAFETY: the length input holds b elements (checked by inference).
                let v = unsafe { l.slice::<L>() };
                v.iter().map(|x| x.to_f64().clamp(0.0, t as f64) as usize).collect()
            })
        }
        _ => vec![t; b],
    }
}

/// Element offset of (step, item, 0).
fn at(axis0: bool, t: usize, b: usize, r: usize, step: usize, item: usize) -> usize {
    if axis0 {
        (step * b + item) * r
    } else {
        (item * t + step) * r
    }
}

fn dims(x: &[usize], axis0: bool) -> (usize, usize, usize) {
    let (t, b) = if axis0 { (x[0], x[1]) } else { (x[1], x[0]) };
    (t, b, x[2..].iter().product())
}

fn mask_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let axis0 = c.params.int("axis") == 0;
    let (t, b, r) = dims(&x.shape, axis0);
    let lens = lengths(c, Some(1), t, b);
    let val = c.params.float("value");
    with_dtype!(x.dtype, T, {
        // SAFETY: sizes checked by inference; in place the same index is read first.
        let (xs, os) = unsafe { (std::slice::from_raw_parts(x.ptr_as::<T>() as *const T, x.size()), o.slice_mut::<T>()) };
        let v = T::from_f64(val);
        for (item, &len) in lens.iter().enumerate() {
            for step in 0..t {
                let p = at(axis0, t, b, r, step, item);
                for j in p..p + r {
                    os[j] = if step < len { xs[j] } else { v };
                }
            }
        }
    });
    Ok(())
}

fn last_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let axis0 = c.params.int("axis") == 0;
    let (t, b, r) = dims(&x.shape, axis0);
    let lens = lengths(c, Some(1), t, b);
    with_dtype!(x.dtype, T, {
        // SAFETY: sizes checked by inference.
        let (xs, os) = unsafe { (x.slice::<T>(), o.slice_mut::<T>()) };
        for item in 0..b {
            let step = lens[item].max(1) - 1;
            let p = at(axis0, t, b, r, step, item);
            os[item * r..(item + 1) * r].copy_from_slice(&xs[p..p + r]);
        }
    });
    Ok(())
}

fn last_backward_compute(c: &mut OpCall) -> Result<()> {
    let (g, o) = (&c.inputs[0], &c.outputs[0]);
    let axis0 = c.params.int("axis") == 0;
    let (t, b, r) = dims(&o.shape, axis0);
    let lens = lengths(c, Some(2), t, b);
    with_dtype!(o.dtype, T, {
        // SAFETY: sizes checked by inference.
        let (gs, os) = unsafe { (g.slice::<T>(), o.slice_mut::<T>()) };
        os.fill(T::from_f64(0.0));
        for item in 0..b {
            let step = lens[item].max(1) - 1;
            let p = at(axis0, t, b, r, step, item);
            os[p..p + r].copy_from_slice(&gs[item * r..(item + 1) * r]);
        }
    });
    Ok(())
}

fn reverse_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let (t, b, r) = dims(&x.shape, true);
    let lens = lengths(c, Some(1), t, b);
    with_dtype!(x.dtype, T, {
        // SAFETY: sizes checked by inference; the op is not in place.
        let (xs, os) = unsafe { (x.slice::<T>(), o.slice_mut::<T>()) };
        for (item, &n) in lens.iter().enumerate() {
            for step in 0..t {
                let src = if step < n { n - 1 - step } else { step };
                let (d, s) = (at(true, t, b, r, step, item), at(true, t, b, r, src, item));
                os[d..d + r].copy_from_slice(&xs[s..s + r]);
            }
        }
    });
    Ok(())
}

fn pass(p: &Params) -> Vec<(&'static str, Value)> {
    vec![("use_sequence_length", Value::Bool(p.bool("use_sequence_length"))), ("axis", Value::Int(p.int("axis")))]
}

fn with_len(i: &[NDArray], first: NDArray) -> Vec<NDArray> {
    let mut v = vec![first];
    if i.len() > 1 {
        v.push(i[1].clone());
    }
    v
}

fn g_mask(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let mut attrs = pass(p);
    attrs.push(("value", Value::Float(0.0)));
    let gx = super::call1("SequenceMask", &with_len(i, g[0].clone()), &attrs)?;
    Ok(if i.len() > 1 { vec![Some(gx), None] } else { vec![Some(gx)] })
}

fn g_reverse(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let gx = super::call1("SequenceReverse", &with_len(i, g[0].clone()), &pass(p))?;
    Ok(if i.len() > 1 { vec![Some(gx), None] } else { vec![Some(gx)] })
}

fn g_last(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let len = if i.len() > 1 { i[1].clone() } else { i[0].clone() };
    let gx = super::call1("_backward_SequenceLast", &[g[0].clone(), i[0].clone(), len], &pass(p))?;
    Ok(if i.len() > 1 { vec![Some(gx), None] } else { vec![Some(gx)] })
}

fn last_backward_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let sub = InferArgs { op: a.op, params: a.params, shapes: &a.shapes[1..], dtypes: &a.dtypes[1..] };
    geometry(&sub)?;
    Ok(vec![(Shape::from_slice(a.shapes[1]), a.dtypes[1])])
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "SequenceMask",
            "Sets all elements outside the sequence to a constant value. The data is (max_sequence_length, batch_size, ...) with axis=0, or (batch_size, max_sequence_length, ...) with axis=1; sequence_length gives each item's length.",
            INPUTS,
            MASK_PARAMS,
            mask_infer,
            mask_compute,
        )
        .inplace()
        .grad(g_mask),
    );
    r.add(
        OpDef::new(
            "SequenceLast",
            "Takes the last element of a sequence: the output drops the sequence axis; with use_sequence_length the element at sequence_length-1 of each item.",
            INPUTS,
            SEQ_PARAMS,
            last_infer,
            last_compute,
        )
        .grad(g_last),
    );
    r.add(
        OpDef::new(
            "SequenceReverse",
            "Reverses the elements of each sequence: the first sequence_length steps of each item are reversed, padding stays in place.",
            INPUTS,
            SEQ_PARAMS,
            mask_infer,
            reverse_compute,
        )
        .grad(g_reverse),
    );
    r.add(OpDef::new(
        "_backward_SequenceLast",
        "Gradient of SequenceLast: the output gradient scattered to the last step of each sequence, zeros elsewhere.",
        Arity::Fixed(&["ograd", "data", "sequence_length"]),
        SEQ_PARAMS,
        last_backward_infer,
        last_backward_compute,
    ));
}
