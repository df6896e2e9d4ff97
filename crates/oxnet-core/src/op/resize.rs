//! `_contrib_BilinearResize2D` and its gradient `_backward_BilinearResize2D`, as in
//! MXNet 1.9.1.
//!
//! The output size of an `(N, C, H, W)` input comes from `mode`: `size` (`height`
//! and `width`, or `scale_height`/`scale_width` times the input's), `odd_scale`
//! (even sizes scaled, odd ones `(s - 1) * scale + 1`), `like` (the second input's
//! last two dimensions), or `to_even_down`/`to_even_up`/`to_odd_down`/`to_odd_up`.
//! With `align_corners` (the default) output pixel `i` reads input position
//! `i * (H - 1) / (OH - 1)`; without, `(i + 0.5) * H / OH - 0.5` (clamped at 0).
//! The gradient spreads the output gradient with the same weights; `like` gets none.

use super::util::{read_f64, write_f64};
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};

type Out = Result<Vec<(Shape, DType)>>;
type Grads = Result<Vec<Option<NDArray>>>;

const NAME: &str = "_contrib_BilinearResize2D";

const MODES: &[&str] = &["size", "odd_scale", "like", "to_even_down", "to_even_up", "to_odd_down", "to_odd_up"];

const PARAMS: &[ParamSpec] = &[
    ParamSpec::new("height", PType::Int, Some("1"), "output height (required, but ignored if scale_height is defined or mode is not \"size\")"),
    ParamSpec::new("width", PType::Int, Some("1"), "output width (required, but ignored if scale_width is defined or mode is not \"size\")"),
    ParamSpec::new("scale_height", PType::OptFloat, Some("None"), "sampling scale of the height (optional, used in modes \"scale\" and \"odd_scale\")"),
    ParamSpec::new("scale_width", PType::OptFloat, Some("None"), "sampling scale of the width (optional, used in modes \"scale\" and \"odd_scale\")"),
    ParamSpec::choice(
        "mode",
        MODES,
        Some("size"),
        "resizing mode. \"simple\" - output height equals parameter \"height\" if \"scale_height\" parameter is not defined or input height multiplied by \"scale_height\" otherwise. Same for width;\"odd_scale\" - if original height or width is odd, then result height is calculated like result_h = (original_h - 1) * scale + 1; for scale > 1 the result shape would be like if we did deconvolution with kernel = (1, 1) and stride = (height_scale, width_scale); and for scale < 1 shape would be like we did convolution with kernel = (1, 1) and stride = (int(1 / height_scale), int( 1/ width_scale);\"like\" - resize first input to the height and width of second input; \"to_even_down\" - resize input to nearest lower even height and width (if original height is odd then result height = original height - 1);\"to_even_up\" - resize input to nearest bigger even height and width (if original height is odd then result height = original height + 1);\"to_odd_down\" - resize input to nearest odd height and width (if original height is odd then result height = original height - 1);\"to_odd_up\" - resize input to nearest odd height and width (if original height is odd then result height = original height + 1);",
    ),
    ParamSpec::new("align_corners", PType::Bool, Some("True"), "With align_corners = True, the interpolating doesn't proportionally align theoutput and input pixels, and thus the output values can depend on the input size."),
];

const ALL: &[&str] = &["data", "like"];

fn select(p: &Params) -> &'static [&'static str] {
    if p.str("mode") == "like" {
        ALL
    } else {
        &ALL[..1]
    }
}

const BWD_ALL: &[&str] = &["ograd", "data", "like"];

fn bwd_select(p: &Params) -> &'static [&'static str] {
    if p.str("mode") == "like" {
        BWD_ALL
    } else {
        &BWD_ALL[..2]
    }
}

/// `scale * size` as MXNet computes it (in float32).
fn scaled(size: usize, scale: f64) -> usize {
    ((scale as f32) * (size as f32)).max(0.0) as usize
}

/// The output height and width for input `s` (and `like`'s shape in mode `like`).
fn out_size(p: &Params, s: &[usize], like: Option<&[usize]>) -> Result<(usize, usize)> {
    let (h, w) = (s[2], s[3]);
    let (sh, sw) = (p.opt_float("scale_height"), p.opt_float("scale_width"));
    let r = match p.str("mode") {
        "size" => {
            let oh = match sh {
                Some(v) => scaled(h, v),
                None => p.int("height").max(0) as usize,
            };
            let ow = match sw {
                Some(v) => scaled(w, v),
                None => p.int("width").max(0) as usize,
            };
            (oh, ow)
        }
        "odd_scale" => {
            let (Some(sh), Some(sw)) = (sh, sw) else {
                return Err(Error::op(NAME, "mode 'odd_scale' needs scale_height and scale_width"));
            };
            let f = |n: usize, sc: f64| if n.is_multiple_of(2) { scaled(n, sc) } else { scaled(n - 1, sc) + 1 };
            (f(h, sh), f(w, sw))
        }
        "like" => match like {
            Some(l) if l.len() == 4 => (l[2], l[3]),
            Some(l) => return Err(Error::op(NAME, format!("like must be 4-D, got {}", fmt_shape(l)))),
            None => return Err(Error::op(NAME, "mode 'like' needs the second input `like`")),
        },
        "to_even_down" => (h - h % 2, w - w % 2),
        "to_even_up" => (h + h % 2, w + w % 2),
        "to_odd_down" => (if h % 2 == 1 { h } else { h.saturating_sub(1) }, if w % 2 == 1 { w } else { w.saturating_sub(1) }),
        _ => (if h % 2 == 1 { h } else { h + 1 }, if w % 2 == 1 { w } else { w + 1 }),
    };
    if r.0 == 0 || r.1 == 0 {
        return Err(Error::op(NAME, format!("the output size ({}, {}) must be positive", r.0, r.1)));
    }
    Ok(r)
}

fn infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    if s.len() != 4 {
        return Err(a.err(format!("data must be 4-D (batch, channel, height, width), got {}", fmt_shape(s))));
    }
    if !a.dtypes[0].is_float() {
        return Err(a.err(format!("data must be a floating-point array, got {}", a.dtypes[0].name())));
    }
    let (oh, ow) = out_size(a.params, s, a.shapes.get(1).copied())?;
    Ok(vec![(Shape::from_slice(&[s[0], s[1], oh, ow]), a.dtypes[0])])
}

/// Source index, its neighbour step (0 at the border) and the weight of the
/// neighbour, for output index `o` of `out` over `inp`.
fn source(o: usize, out: usize, inp: usize, align: bool) -> (usize, usize, f64) {
    let r = if align {
        let ratio = if out > 1 { (inp as f64 - 1.0) / (out as f64 - 1.0) } else { 0.0 };
        ratio * o as f64
    } else {
        let v = (inp as f64 / out as f64) * (o as f64 + 0.5) - 0.5;
        v.max(0.0)
    };
    let i = (r.floor() as usize).min(inp - 1);
    let step = usize::from(i < inp - 1);
    (i, step, r - i as f64)
}

/// Every (output index, input index, weight) of the interpolation.
fn visit(s: &[usize], oh: usize, ow: usize, align: bool, mut f: impl FnMut(usize, usize, f64)) {
    let (planes, h, w) = (s[0] * s[1], s[2], s[3]);
    let same = oh == h && ow == w;
    for p in 0..planes {
        for i in 0..oh {
            let (y, dy, ly) = source(i, oh, h, align);
            for j in 0..ow {
                let o = (p * oh + i) * ow + j;
                if same {
                    f(o, (p * h + i) * w + j, 1.0);
                    continue;
                }
                let (x, dx, lx) = source(j, ow, w, align);
                let at = |yy: usize, xx: usize| (p * h + yy) * w + xx;
                f(o, at(y, x), (1.0 - ly) * (1.0 - lx));
                f(o, at(y, x + dx), (1.0 - ly) * lx);
                f(o, at(y + dy, x), ly * (1.0 - lx));
                f(o, at(y + dy, x + dx), ly * lx);
            }
        }
    }
}

fn compute(c: &mut OpCall) -> Result<()> {
    let x = read_f64(&c.inputs[0]);
    let os = &c.outputs[0].shape;
    let align = c.params.bool("align_corners");
    let mut out = vec![0f64; c.outputs[0].size()];
    visit(&c.inputs[0].shape, os[2], os[3], align, |o, i, wt| out[o] += wt * x[i]);
    write_f64(&c.outputs[0], &out);
    Ok(())
}

/// `(ograd, data, [like])` → gradients of data (and like: zero).
fn backward_infer(a: &InferArgs) -> Out {
    Ok(a.shapes[1..].iter().zip(&a.dtypes[1..]).map(|(s, d)| (Shape::from_slice(s), *d)).collect())
}

fn backward_compute(c: &mut OpCall) -> Result<()> {
    let og = read_f64(&c.inputs[0]);
    let os = &c.inputs[0].shape;
    let align = c.params.bool("align_corners");
    let mut g = vec![0f64; c.outputs[0].size()];
    visit(&c.inputs[1].shape, os[2], os[3], align, |o, i, wt| g[i] += wt * og[o]);
    write_f64(&c.outputs[0], &g);
    if let Some(l) = c.outputs.get(1) {
        write_f64(l, &vec![0f64; l.size()]);
    }
    Ok(())
}

fn grad(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let og = g.first().ok_or_else(|| Error::op(NAME, "gradient called without an output gradient"))?;
    let attrs: Vec<(&str, Value)> = p.to_strings().into_iter().map(|(n, v)| (n, Value::Str(v))).collect();
    let mut ins = vec![og.clone()];
    ins.extend(i.iter().cloned());
    Ok(super::call("_backward_BilinearResize2D", &ins, &attrs)?.into_iter().map(Some).collect())
}

fn bwd_outputs(p: &Params) -> usize {
    select(p).len()
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            NAME,
            "Perform 2D resizing (upsampling or downsampling) for 4D input using bilinear interpolation. Expected input is a 4 dimensional NDArray (NCHW) and the output with the shape of (N x C x height x width); the output size follows `mode` (see its description).",
            Arity::Dynamic { all: ALL, select },
            PARAMS,
            infer,
            compute,
        )
        .grad(grad),
    );
    r.add(
        OpDef::new(
            "_backward_BilinearResize2D",
            "Gradient of BilinearResize2D: `(ograd, data, [like])` to the gradients of data (and like, zero).",
            Arity::Dynamic { all: BWD_ALL, select: bwd_select },
            PARAMS,
            backward_infer,
            backward_compute,
        )
        .outputs(bwd_outputs),
    );
}
