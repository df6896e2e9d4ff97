//! Creation ops: `_zeros`, `_ones`, `_full`, `_arange`, `_contrib_arange_like`,
//! `_eye`, `zeros_like`, `ones_like`. (`mx.nd.zeros` and friends are thin Python conveniences over these.)

use super::{infer_like_first, Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Registry};
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::kernels::cpu::elemwise::fill;
use crate::shape::Shape;
use crate::with_dtype;

const NONE: Arity = Arity::Fixed(&[]);
const DATA: Arity = Arity::Fixed(&["data"]);

const CTX: ParamSpec = ParamSpec::new("ctx", PType::Ctx, Some("cpu(0)"), "Context of output, in format [cpu|gpu|cpu_pinned](n).");
const DTYPE: ParamSpec = ParamSpec::new("dtype", PType::DType, Some("float32"), "Target data type.");
const SHAPE: ParamSpec = ParamSpec::new("shape", PType::Tuple, Some("()"), "The shape of the output");

const FILL_PARAMS: &[ParamSpec] = &[SHAPE, CTX, DTYPE];
const FULL_PARAMS: &[ParamSpec] =
    &[SHAPE, CTX, DTYPE, ParamSpec::new("value", PType::Float, None, "Value with which to fill newly created tensor")];

pub(super) fn shape_param(a: &InferArgs) -> Result<Shape> {
    let t = a.params.tuple("shape");
    if let Some(d) = t.iter().find(|d| **d < 0) {
        return Err(a.err(format!("negative dimension {d} in shape {t:?}")));
    }
    Ok(t.iter().map(|d| *d as usize).collect())
}

fn infer_fill(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    Ok(vec![(shape_param(a)?, a.params.dtype("dtype").unwrap_or(DType::F32))])
}

fn fill_value<const V: i32>(c: &mut OpCall) -> Result<()> {
    let o = &c.outputs[0];
    let v = if V == 2 { c.params.float("value") } else { V as f64 };
    with_dtype!(o.dtype, T, { fill::<T>(o.ptr_as(), <T as Element>::from_f64(v), o.size()) });
    Ok(())
}

const ARANGE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("start", PType::Float, None, "Start of interval. The interval includes this value."),
    ParamSpec::new("stop", PType::OptFloat, Some("None"), "End of interval. The interval does not include this value, except in some cases where step is not an integer and floating point round-off affects the length of out."),
    ParamSpec::new("step", PType::Float, Some("1.0"), "Spacing between values."),
    ParamSpec::new("repeat", PType::Int, Some("1"), "The repeating time of all elements. E.g repeat=3, the element a will be repeated three times --> a, a, a."),
    ParamSpec::new("infer_range", PType::Bool, Some("False"), "When set to True, infer the stop position from the start, step, repeat, and output tensor size."),
    CTX,
    DTYPE,
];

fn arange_bounds(p: &super::Params) -> (f64, f64, f64) {
    let (start, stop) = match p.opt_float("stop") {
        Some(s) => (p.float("start"), s),
        None => (0.0, p.float("start")),
    };
    (start, stop, p.float("step"))
}

/// `infer_range=True` without `stop`: the length is unknown until a symbol's
/// consumers determine it (graph inference leaves the output partial and the
/// executor runs the op with `stop` set from the inferred length).
pub fn infers_range(p: &super::Params) -> bool {
    p.bool("infer_range") && p.opt_float("stop").is_none()
}

fn infer_arange(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    if infers_range(a.params) {
        return Err(
            a.err("infer_range=True without stop: the output size is unknown (in a symbol the consumers determine it; give stop here)")
        );
    }
    let (start, stop, step) = arange_bounds(a.params);
    if step == 0.0 {
        return Err(a.err("step can not be 0"));
    }
    let repeat = a.params.int("repeat");
    if repeat <= 0 {
        return Err(a.err(format!("repeat must be positive, got {repeat}")));
    }
    let n = ((stop - start) / step).ceil().max(0.0) as usize;
    Ok(vec![(Shape::from_slice(&[n * repeat as usize]), a.params.dtype("dtype").unwrap_or(DType::F32))])
}

fn arange_compute(c: &mut OpCall) -> Result<()> {
    let (start, _, step) = arange_bounds(c.params);
    fill_arange(&c.outputs[0], start, step, c.params.int("repeat").max(1) as usize);
    Ok(())
}

/// `o[i] = start + (i / repeat) * step`, in the output's type.
fn fill_arange(o: &super::Blob, start: f64, step: f64, repeat: usize) {
    // As MXNet, start and step are first cast to the output type (truncated for
    // integers, whose values then wrap around as C arithmetic does).
    let int = !o.dtype.is_float();
    let (start_i, step_i) = (start.trunc() as i64, step.trunc() as i64);
    with_dtype!(o.dtype, T, {
        let (start_t, step_t) = (<T as Element>::from_f64(start).to_f64(), <T as Element>::from_f64(step).to_f64());
        // SAFETY: the output is ours to write.
        let out = unsafe { o.slice_mut::<T>() };
        for (i, x) in out.iter_mut().enumerate() {
            let k = (i / repeat) as i64;
            *x = if int {
                let v = start_i.wrapping_add(k.wrapping_mul(step_i));
                let v = match o.dtype {
                    DType::U8 => v.rem_euclid(256),
                    DType::I8 => (v + 128).rem_euclid(256) - 128,
                    DType::I32 => v as i32 as i64,
                    _ => v,
                };
                <T as Element>::from_f64(v as f64)
            } else {
                <T as Element>::from_f64(start_t + k as f64 * step_t)
            };
        }
    });
}

const ARANGE_LIKE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("start", PType::Float, Some("0"), "Start of interval. The interval includes this value. The default start value is 0."),
    ParamSpec::new("step", PType::Float, Some("1"), "Spacing between values."),
    ParamSpec::new("repeat", PType::Int, Some("1"), "The repeating time of all elements. E.g repeat=3, the element a will be repeated three times --> a, a, a."),
    ParamSpec::new("ctx", PType::Ctx, Some("cpu(0)"), "Context of output, in format [cpu|gpu|cpu_pinned](n).Only used for imperative calls (the output lives with the input)."),
    ParamSpec::new("axis", PType::OptInt, Some("None"), "Arange elements according to the size of a certain axis of input array. The negative numbers are interpreted counting from the backward. If not provided, will arange elements according to the input shape."),
];

fn infer_arange_like(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let s = a.shapes[0];
    let repeat = a.params.int("repeat");
    if repeat <= 0 {
        return Err(a.err(format!("repeat must be positive, got {repeat}")));
    }
    let out = match a.params.opt_int("axis") {
        None => Shape::from_slice(s),
        Some(ax) => {
            let nd = s.len() as i64;
            if ax < -nd || ax >= nd {
                return Err(a.err(format!("axis {ax} is out of range for data of shape {}", crate::shape::fmt_shape(s))));
            }
            Shape::from_slice(&[s[ax.rem_euclid(nd) as usize]])
        }
    };
    Ok(vec![(out, a.dtypes[0])])
}

fn arange_like_compute(c: &mut OpCall) -> Result<()> {
    let p = c.params;
    fill_arange(&c.outputs[0], p.float("start"), p.float("step"), p.int("repeat").max(1) as usize);
    Ok(())
}

const EYE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("N", PType::Int, None, "Number of rows in the output."),
    ParamSpec::new("M", PType::Int, Some("0"), "Number of columns in the output. If 0, defaults to N"),
    ParamSpec::new("k", PType::Int, Some("0"), "Index of the diagonal. 0 (the default) refers to the main diagonal.A positive value refers to an upper diagonal.A negative value to a lower diagonal."),
    CTX,
    DTYPE,
];

fn infer_eye(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let n = a.params.int("N");
    let m = a.params.int("M");
    if n < 0 || m < 0 {
        return Err(a.err(format!("N and M must be non-negative, got N={n}, M={m}")));
    }
    let m = if m == 0 { n } else { m };
    Ok(vec![(Shape::from_slice(&[n as usize, m as usize]), a.params.dtype("dtype").unwrap_or(DType::F32))])
}

fn eye_compute(c: &mut OpCall) -> Result<()> {
    let o = &c.outputs[0];
    let (n, m) = (o.shape[0] as i64, o.shape[1] as i64);
    let k = c.params.int("k");
    with_dtype!(o.dtype, T, {
        // SAFETY: the output is ours to write.
        let out = unsafe { o.slice_mut::<T>() };
        out.fill(<T as Element>::from_f64(0.0));
        for i in 0..n {
            let j = i + k;
            if (0..m).contains(&j) {
                out[(i * m + j) as usize] = <T as Element>::from_f64(1.0);
            }
        }
    });
    Ok(())
}

pub(super) fn register(r: &mut Registry) {
    r.add(OpDef::new("_zeros", "fill target with zeros", NONE, FILL_PARAMS, infer_fill, fill_value::<0>));
    r.add(OpDef::new("_ones", "fill target with ones", NONE, FILL_PARAMS, infer_fill, fill_value::<1>));
    r.add(OpDef::new("_full", "fill target with a scalar value", NONE, FULL_PARAMS, infer_fill, fill_value::<2>));
    r.add(OpDef::new(
        "_arange",
        "Return evenly spaced values within a given interval. Similar to Numpy",
        NONE,
        ARANGE_PARAMS,
        infer_arange,
        arange_compute,
    ));
    r.add(
        OpDef::new(
            "_contrib_arange_like",
            "Return an array with evenly spaced values: with the input's shape when `axis` is not given, else 1-D with the size of that axis. Values `start + (i // repeat) * step`, in the input's dtype.",
            DATA,
            ARANGE_LIKE_PARAMS,
            infer_arange_like,
            arange_like_compute,
        )
        .grad(|_, i, _, _| Ok(vec![None; i.len()])),
    );
    r.add(OpDef::new(
        "_eye",
        "Return a 2-D array with ones on the diagonal and zeros elsewhere.",
        NONE,
        EYE_PARAMS,
        infer_eye,
        eye_compute,
    ));
    r.add(
        OpDef::new(
            "zeros_like",
            "Return an array of zeros with the same shape, type and storage type as the input array.",
            DATA,
            &[],
            infer_like_first,
            fill_value::<0>,
        )
        .unnamed_inputs(),
    );
    r.add(
        OpDef::new(
            "ones_like",
            "Return an array of ones with the same shape and type as the input array.",
            DATA,
            &[],
            infer_like_first,
            fill_value::<1>,
        )
        .unnamed_inputs(),
    );
}
