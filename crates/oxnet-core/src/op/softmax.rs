//! `softmax`, `log_softmax` and `softmin` along one axis, with MXNet's `axis`,
//! `temperature` and `dtype` parameters.
//!
//! `softmax` with `use_length=True` takes a second input `length` (integers, the
//! data's shape without `axis`): each line is normalised over its first `length`
//! entries and is 0 past them, as in MXNet (whose `log_softmax`/`softmin` have no
//! `length` input either).

use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Registry};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::kernels::cpu::softmax::{softmax, Kind};
use crate::shape::{norm_axis, Shape};
use crate::with_float;

const DATA: Arity = Arity::Fixed(&["data"]);
const DATA_LENGTH: &[&str] = &["data", "length"];

fn select_inputs(p: &super::Params) -> &'static [&'static str] {
    if p.bool("use_length") {
        DATA_LENGTH
    } else {
        &DATA_LENGTH[..1]
    }
}

const WITH_LENGTH: Arity = Arity::Dynamic { all: DATA_LENGTH, select: select_inputs };

const PARAMS: &[ParamSpec] = &[
    ParamSpec::new("axis", PType::Int, Some("-1"), "The axis along which to compute softmax."),
    ParamSpec::new("temperature", PType::OptFloat, Some("None"), "Temperature parameter in softmax"),
    ParamSpec::new(
        "dtype",
        PType::OptDType,
        Some("None"),
        "DType of the output in case this can't be inferred. Defaults to the same as input's dtype if not defined (dtype=None). One of None, 'float16', 'float32', 'float64'.",
    ),
    ParamSpec::new(
        "use_length",
        PType::Bool,
        Some("False"),
        "Whether to use the length input as a mask over the data input.",
    ),
];

fn check_use_length(op: &str, p: &super::Params) -> Result<()> {
    if p.bool("use_length") && op != "softmax" {
        return Err(Error::op(op, "use_length=True is only supported by softmax (as in MXNet)"));
    }
    Ok(())
}

fn infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    check_use_length(a.op.name, a.params)?;
    if a.params.bool("use_length") {
        let ax = norm_axis(a.params.int("axis"), a.shapes[0].len(), a.op.name)?;
        let mut want: Vec<usize> = a.shapes[0].to_vec();
        want.remove(ax);
        if a.shapes[1] != &want[..] {
            return Err(a.err(format!(
                "length has shape {}, expected {} (the data's shape {} without axis {ax})",
                crate::shape::fmt_shape(a.shapes[1]),
                crate::shape::fmt_shape(&want),
                crate::shape::fmt_shape(a.shapes[0])
            )));
        }
        // (An integer dtype for `length` is checked when the op runs, as in MXNet,
        // whose type inference lets a float32 `length` through to the forward.)
    }
    let d = a.dtypes[0];
    if !d.is_float() {
        return Err(a.err(format!("This operation only support floating point types, not {}", d.name())));
    }
    let out = match a.params.dtype("dtype") {
        None => d,
        Some(o) if o.is_float() => o,
        Some(o) => {
            return Err(
                a.err(format!("Invalid Input: '{}' for dtype, valid values are: {{None, 'float16', 'float32', 'float64'}}", o.name()))
            )
        }
    };
    norm_axis(a.params.int("axis"), a.shapes[0].len(), a.op.name)?;
    Ok(vec![(Shape::from_slice(a.shapes[0]), out)])
}

fn compute<const K: u8>(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    check_use_length(c.op.name, c.params)?;
    let ax = norm_axis(c.params.int("axis"), x.shape.len(), c.op.name)?;
    let outer: usize = x.shape[..ax].iter().product();
    let n = x.shape.get(ax).copied().unwrap_or(1);
    let inner: usize = x.shape[(ax + 1).min(x.shape.len())..].iter().product();
    let t = c.params.opt_float("temperature").unwrap_or(1.0);
    let kind = match K {
        0 => Kind::Softmax,
        1 => Kind::LogSoftmax,
        _ => Kind::Softmin,
    };
    if c.params.bool("use_length") {
        let l = &c.inputs[1];
        if l.dtype.is_float() {
            return Err(Error::op(
                c.op.name,
                format!("This operation only support integer types, not {} (the length input)", l.dtype.name()),
            ));
        }
        // SAFETY: read access to the length input.
        let len: Vec<i64> = crate::with_dtype!(l.dtype, L, { unsafe { l.slice::<L>() }.iter().map(|v| v.to_f64() as i64).collect() });
        with_float!(x.dtype, T, {
            with_float!(o.dtype, U, {
                // SAFETY: as below.
                let (xs, os) = unsafe { (x.slice::<T>(), o.slice_mut::<U>()) };
                masked_softmax(xs, os, &len, outer, n, inner, t);
            })
        });
        return Ok(());
    }
    let wide = x.dtype == DType::F64 || o.dtype == DType::F64;
    with_float!(x.dtype, T, {
        with_float!(o.dtype, U, {
            // SAFETY: read access to the input, exclusive write access to the output,
            // which does not alias it (invoke copies when it would).
            let (xs, os) = unsafe { (x.slice::<T>(), o.slice_mut::<U>()) };
            if wide {
                softmax::<T, U, f64>(xs, os, outer, n, inner, t, kind);
            } else {
                softmax::<T, U, f32>(xs, os, outer, n, inner, t, kind);
            }
        })
    });
    Ok(())
}

/// Softmax of each line `(o, ·, i)` over its first `len[o * inner + i]` entries
/// (clamped to `0..=n`), 0 past them; accumulated in f64.
fn masked_softmax<T: Element, U: Element>(x: &[T], out: &mut [U], len: &[i64], outer: usize, n: usize, inner: usize, t: f64) {
    for o in 0..outer {
        for i in 0..inner {
            let l = len[o * inner + i].clamp(0, n as i64) as usize;
            let at = |k: usize| (o * n + k) * inner + i;
            let m = (0..l).map(|k| x[at(k)].to_f64() / t).fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = (0..l).map(|k| (x[at(k)].to_f64() / t - m).exp()).sum();
            for k in 0..n {
                let v = if k < l { (x[at(k)].to_f64() / t - m).exp() / s } else { 0.0 };
                out[at(k)] = U::from_f64(v);
            }
        }
    }
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "softmax",
            "Applies the softmax function.

The resulting array contains elements in the range (0,1) and the elements along the given axis sum up to 1.

.. math::
   softmax(\\mathbf{z/t})_j = \\frac{e^{z_j/t}}{\\sum_{k=1}^K e^{z_k/t}}

for :math:`j = 1, ..., K`

t is the temperature parameter in softmax function. By default, t equals 1.0",
            WITH_LENGTH,
            PARAMS,
            infer,
            compute::<0>,
        )
        .cost(8),
    );
    r.add(
        OpDef::new(
            "log_softmax",
            "Computes the log softmax of the input. This is equivalent to computing softmax followed by log.",
            DATA,
            PARAMS,
            infer,
            compute::<1>,
        )
        .cost(8),
    );
    r.add(
        OpDef::new(
            "softmin",
            "Applies the softmin function.

The resulting array contains elements in the range (0,1) and the elements along the given axis sum up to 1.

.. math::
   softmin(\\mathbf{z/t})_j = \\frac{e^{-z_j/t}}{\\sum_{k=1}^K e^{-z_k/t}}

for :math:`j = 1, ..., K`

t is the temperature parameter in softmax function. By default, t equals 1.0",
            DATA,
            PARAMS,
            infer,
            compute::<2>,
        )
        .unnamed_inputs()
        .cost(8),
    );
}
