//! Elementwise ops of MXNet's contrib namespace: `_contrib_quadratic`
//! (`a*x^2 + b*x + c`, MXNet's example operator) and `_contrib_gradientmultiplier`
//! (the identity forward, the output gradient times `scalar` backward, used for
//! gradient reversal). Their gradients are other registry ops.

use super::util::{infer_like_first, read_f64, write_f64};
use super::{call1, Arity, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;

type Grads = Result<Vec<Option<NDArray>>>;

const QUAD_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("a", PType::Float, Some("0"), "Coefficient of the quadratic term in the quadratic function."),
    ParamSpec::new("b", PType::Float, Some("0"), "Coefficient of the linear term in the quadratic function."),
    ParamSpec::new("c", PType::Float, Some("0"), "Constant term in the quadratic function."),
];

fn quad_compute(c: &mut OpCall) -> Result<()> {
    let (a, b, k) = (c.params.float("a"), c.params.float("b"), c.params.float("c"));
    let y: Vec<f64> = read_f64(&c.inputs[0]).into_iter().map(|x| a * x * x + b * x + k).collect();
    write_f64(&c.outputs[0], &y);
    Ok(())
}

fn head<'a>(op: &str, g: &'a [NDArray]) -> Result<&'a NDArray> {
    g.first().ok_or_else(|| Error::op(op, "gradient called without an output gradient"))
}

/// d/dx (a x^2 + b x + c) = 2a x + b, itself a quadratic of x.
fn g_quad(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let g = head("_contrib_quadratic", g)?;
    let d = call1(
        "_contrib_quadratic",
        std::slice::from_ref(&i[0]),
        &[("a", Value::Float(0.0)), ("b", Value::Float(2.0 * p.float("a"))), ("c", Value::Float(p.float("b")))],
    )?;
    Ok(vec![Some(call1("elemwise_mul", &[g.clone(), d], &[])?)])
}

const GM_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("scalar", PType::Float, Some("1"), "Scalar input value"),
    ParamSpec::new("is_int", PType::Bool, Some("True"), "Indicate whether scalar input is int type"),
];

fn identity_compute(c: &mut OpCall) -> Result<()> {
    let (i, o) = (&c.inputs[0], &c.outputs[0]);
    if i.ptr != o.ptr {
        // SAFETY: both blobs hold size() elements of the same dtype and do not
        // overlap unless they are the same memory (checked above).
        unsafe { std::ptr::copy_nonoverlapping(i.ptr, o.ptr, i.size() * i.dtype.size()) };
    }
    Ok(())
}

fn g_gm(p: &Params, _: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let g = head("_contrib_gradientmultiplier", g)?;
    Ok(vec![Some(call1(
        "_mul_scalar",
        std::slice::from_ref(g),
        &[("scalar", Value::Float(p.float("scalar"))), ("is_int", Value::Bool(false))],
    )?)])
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "_contrib_quadratic",
            "This operators implements the quadratic function: ``f(x) = ax^2+bx+c`` where x is an input tensor and a, b, c are scalars.",
            Arity::Fixed(&["data"]),
            QUAD_PARAMS,
            infer_like_first,
            quad_compute,
        )
        .inplace()
        .grad(g_quad),
    );
    r.add(
        OpDef::new(
            "_contrib_gradientmultiplier",
            "This operator implements the gradient multiplier function. In forward pass it acts as an identity transform. During backpropagation it multiplies the gradient from the subsequent level by a scalar factor lambda and passes it to the preceding layer.",
            Arity::Fixed(&["data"]),
            GM_PARAMS,
            infer_like_first,
            identity_compute,
        ).unnamed_inputs()
        .inplace()
        .grad(g_gm),
    );
}
