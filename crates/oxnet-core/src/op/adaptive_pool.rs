//! `_contrib_AdaptiveAvgPooling2D` and its gradient `_backward_AdaptiveAvgPooling2D`,
//! as in MXNet 1.9.1: output cell `(oh, ow)` of an `(N, C, H, W)` input averages
//! rows `floor(oh*H/OH) .. ceil((oh+1)*H/OH)` and the columns likewise.

use super::util::{read_f64, write_f64};
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};

type Out = Result<Vec<(Shape, DType)>>;
type Grads = Result<Vec<Option<NDArray>>>;

const NAME: &str = "_contrib_AdaptiveAvgPooling2D";

const PARAMS: &[ParamSpec] =
    &[ParamSpec::new("output_size", PType::Tuple, Some("()"), "int (output size) or a tuple of int for output (height, width).")];

fn out_size(p: &Params) -> Result<(usize, usize)> {
    let t = p.tuple("output_size");
    let (h, w) = match t.len() {
        0 => (1, 1),
        1 => (t[0], t[0]),
        2 => (t[0], t[1]),
        _ => return Err(Error::op(NAME, format!("output_size must be an int or a pair (height, width), got {t:?}"))),
    };
    if h <= 0 || w <= 0 {
        return Err(Error::op(NAME, format!("output_size must be positive, got ({h}, {w})")));
    }
    Ok((h as usize, w as usize))
}

fn infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    if s.len() != 4 {
        return Err(a.err(format!("data must be 4-D (batch, channel, height, width), got {}", fmt_shape(s))));
    }
    if !a.dtypes[0].is_float() {
        return Err(a.err(format!("data must be a floating-point array, got {}", a.dtypes[0].name())));
    }
    let (h, w) = out_size(a.params)?;
    Ok(vec![(Shape::from_slice(&[s[0], s[1], h, w]), a.dtypes[0])])
}

/// The input range `[start, end)` of output cell `o` of `out` over `inp` cells.
fn span(o: usize, out: usize, inp: usize) -> (usize, usize) {
    ((o * inp) / out, ((o + 1) * inp).div_ceil(out))
}

/// Visits every (output index, input index, weight) of the averaging.
fn visit(s: &[usize], oh: usize, ow: usize, mut f: impl FnMut(usize, usize, f64)) {
    let (planes, h, w) = (s[0] * s[1], s[2], s[3]);
    for p in 0..planes {
        for i in 0..oh {
            let (y0, y1) = span(i, oh, h);
            for j in 0..ow {
                let (x0, x1) = span(j, ow, w);
                let wt = 1.0 / ((y1 - y0) * (x1 - x0)) as f64;
                let o = (p * oh + i) * ow + j;
                for y in y0..y1 {
                    for x in x0..x1 {
                        f(o, (p * h + y) * w + x, wt);
                    }
                }
            }
        }
    }
}

fn compute(c: &mut OpCall) -> Result<()> {
    let x = read_f64(&c.inputs[0]);
    let os = &c.outputs[0].shape;
    let mut out = vec![0f64; c.outputs[0].size()];
    visit(&c.inputs[0].shape, os[2], os[3], |o, i, wt| out[o] += wt * x[i]);
    write_f64(&c.outputs[0], &out);
    Ok(())
}

/// `(ograd, data)` → the gradient of data.
fn backward_infer(a: &InferArgs) -> Out {
    Ok(vec![(Shape::from_slice(a.shapes[1]), a.dtypes[0])])
}

fn backward_compute(c: &mut OpCall) -> Result<()> {
    let og = read_f64(&c.inputs[0]);
    let os = &c.inputs[0].shape;
    let mut g = vec![0f64; c.outputs[0].size()];
    visit(&c.inputs[1].shape, os[2], os[3], |o, i, wt| g[i] += wt * og[o]);
    write_f64(&c.outputs[0], &g);
    Ok(())
}

fn grad(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let og = g.first().ok_or_else(|| Error::op(NAME, "gradient called without an output gradient"))?;
    let attrs: Vec<(&str, Value)> = p.to_strings().into_iter().map(|(n, v)| (n, Value::Str(v))).collect();
    Ok(vec![Some(super::call1("_backward_AdaptiveAvgPooling2D", &[og.clone(), i[0].clone()], &attrs)?)])
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            NAME,
            "Applies a 2D adaptive average pooling over a 4D input with the shape of (NCHW). The pooling kernel and stride sizes are automatically chosen for desired output sizes: output cell (i, j) averages input rows floor(i*H/OH) to ceil((i+1)*H/OH) and the columns likewise. If output_size is one int, the output is square; if it is empty, 1x1.",
            Arity::Fixed(&["data"]),
            PARAMS,
            infer,
            compute,
        )
        .grad(grad)
        .unnamed_inputs(),
    );
    r.add(OpDef::new(
        "_backward_AdaptiveAvgPooling2D",
        "Gradient of AdaptiveAvgPooling2D: `(ograd, data)` to the gradient of data.",
        Arity::Fixed(&["ograd", "data"]),
        PARAMS,
        backward_infer,
        backward_compute,
    ));
}
