//! `Correlation` (FlowNet's correlation layer) and its gradient
//! `_backward_Correlation`, as in MXNet 1.9.1.
//!
//! Both inputs `(N, C, H, W)` are zero-padded by `pad_size`; output channel
//! `(dy, dx)` (a `(2r+1)^2` neighbourhood, `r = max_displacement / stride2`) at
//! `(i, j)` compares the `kernel_size` window of data1 at
//! `(i*stride1 + max_displacement, j*stride1 + max_displacement)` with the window of
//! data2 displaced by `(dy*stride2, dx*stride2)`: the mean over the window and the
//! channels of the products (`is_multiply`) or of the absolute differences. The
//! output is `(N, (2r+1)^2, ceil((H + 2 pad - 2 border) / stride1), ...)` with
//! `border = max_displacement + (kernel_size - 1) / 2`.

use super::util::{read_f64, write_f64};
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};

type Out = Result<Vec<(Shape, DType)>>;
type Grads = Result<Vec<Option<NDArray>>>;

const NAME: &str = "Correlation";

const PARAMS: &[ParamSpec] = &[
    ParamSpec::new("kernel_size", PType::Int, Some("1"), "kernel size for Correlation must be an odd number"),
    ParamSpec::new("max_displacement", PType::Int, Some("1"), "Max displacement of Correlation "),
    ParamSpec::new("stride1", PType::Int, Some("1"), "stride1 quantize data1 globally"),
    ParamSpec::new("stride2", PType::Int, Some("1"), "stride2 quantize data2 within the neighborhood centered around data1"),
    ParamSpec::new("pad_size", PType::Int, Some("0"), "pad for Correlation"),
    ParamSpec::new("is_multiply", PType::Bool, Some("True"), "operation type is either multiplication or subduction"),
];

/// The geometry of one call.
#[derive(Clone, Copy)]
struct Geom {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    k: usize,
    md: usize,
    s1: usize,
    s2: usize,
    pad: usize,
    radius: usize,
    oh: usize,
    ow: usize,
}

impl Geom {
    fn grid(&self) -> usize {
        2 * self.radius + 1
    }
}

fn geom(p: &Params, s: &[usize]) -> Result<Geom> {
    if s.len() != 4 {
        return Err(Error::op(NAME, format!("data1 must be 4-D (batch, channel, height, width), got {}", fmt_shape(s))));
    }
    let (k, md, s1, s2, pad) = (p.int("kernel_size"), p.int("max_displacement"), p.int("stride1"), p.int("stride2"), p.int("pad_size"));
    if k <= 0 || k % 2 == 0 {
        return Err(Error::op(NAME, format!("kernel_size must be a positive odd number, got {k}")));
    }
    if md < 0 || pad < 0 || s1 <= 0 || s2 <= 0 {
        return Err(Error::op(
            NAME,
            format!(
                "max_displacement ({md}) and pad_size ({pad}) must not be negative, stride1 ({s1}) and stride2 ({s2}) must be positive"
            ),
        ));
    }
    let (k, md, s1, s2, pad) = (k as usize, md as usize, s1 as usize, s2 as usize, pad as usize);
    let border = md + (k - 1) / 2;
    let (ph, pw) = (s[2] + 2 * pad, s[3] + 2 * pad);
    if ph < 2 * border + 1 || pw < 2 * border + 1 {
        return Err(Error::op(
            NAME,
            format!(
                "Correlation cannot be done with current settings: neighborhood and kernel don't fit in blob (padded input {ph}x{pw}, border {border})"
            ),
        ));
    }
    let oh = (ph - 2 * border).div_ceil(s1);
    let ow = (pw - 2 * border).div_ceil(s1);
    Ok(Geom { n: s[0], c: s[1], h: s[2], w: s[3], k, md, s1, s2, pad, radius: md / s2, oh, ow })
}

fn infer(a: &InferArgs) -> Out {
    let d = a.dtypes[0];
    if !d.is_float() || a.dtypes[1] != d {
        return Err(a.err(format!(
            "data1 and data2 must be floating-point arrays of one dtype, got {} and {}",
            d.name(),
            a.dtypes[1].name()
        )));
    }
    if a.shapes[0] != a.shapes[1] {
        return Err(a.err(format!("data1 {} and data2 {} must have the same shape", fmt_shape(a.shapes[0]), fmt_shape(a.shapes[1]))));
    }
    let g = geom(a.params, a.shapes[0])?;
    Ok(vec![(Shape::from_slice(&[g.n, g.grid() * g.grid(), g.oh, g.ow]), d)])
}

/// Index in the unpadded plane of padded position `(y, x)`, if inside.
fn at(g: &Geom, y: usize, x: usize) -> Option<usize> {
    if y < g.pad || x < g.pad || y - g.pad >= g.h || x - g.pad >= g.w {
        None
    } else {
        Some((y - g.pad) * g.w + (x - g.pad))
    }
}

/// Visits every compared pair: `f(output index, index in data1's plane or None,
/// index in data2's plane or None, channel base offset)`.
fn visit(g: &Geom, mut f: impl FnMut(usize, Option<usize>, Option<usize>, usize)) {
    let (plane, grid) = (g.h * g.w, g.grid());
    for n in 0..g.n {
        for tc in 0..grid * grid {
            let dx = (tc % grid) as i64 - g.radius as i64;
            let dy = (tc / grid) as i64 - g.radius as i64;
            for i in 0..g.oh {
                for j in 0..g.ow {
                    let o = ((n * grid * grid + tc) * g.oh + i) * g.ow + j;
                    let (y1, x1) = (i * g.s1 + g.md, j * g.s1 + g.md);
                    let y2 = y1 as i64 + dy * g.s2 as i64;
                    let x2 = x1 as i64 + dx * g.s2 as i64;
                    for h in 0..g.k {
                        for w in 0..g.k {
                            let a = at(g, y1 + h, x1 + w);
                            let (yy, xx) = (y2 + h as i64, x2 + w as i64);
                            let b = if yy < 0 || xx < 0 { None } else { at(g, yy as usize, xx as usize) };
                            if a.is_none() && b.is_none() {
                                continue;
                            }
                            for ch in 0..g.c {
                                f(o, a, b, (n * g.c + ch) * plane);
                            }
                        }
                    }
                }
            }
        }
    }
}

fn compute(c: &mut OpCall) -> Result<()> {
    let g = geom(c.params, &c.inputs[0].shape)?;
    let (d1, d2) = (read_f64(&c.inputs[0]), read_f64(&c.inputs[1]));
    let mul = c.params.bool("is_multiply");
    let mut out = vec![0f64; c.outputs[0].size()];
    visit(&g, |o, a, b, base| {
        let v1 = a.map(|i| d1[base + i]).unwrap_or(0.0);
        let v2 = b.map(|i| d2[base + i]).unwrap_or(0.0);
        out[o] += if mul { v1 * v2 } else { (v1 - v2).abs() };
    });
    let norm = (g.k * g.k * g.c) as f64;
    out.iter_mut().for_each(|v| *v /= norm);
    write_f64(&c.outputs[0], &out);
    Ok(())
}

/// `(ograd, data1, data2)` → gradients of data1 and data2.
fn backward_infer(a: &InferArgs) -> Out {
    let g = geom(a.params, a.shapes[1])?;
    let want = [g.n, g.grid() * g.grid(), g.oh, g.ow];
    if a.shapes[0] != want {
        return Err(a.err(format!("output gradient has shape {}, expected {}", fmt_shape(a.shapes[0]), fmt_shape(&want))));
    }
    let d = a.dtypes[1];
    Ok(vec![(Shape::from_slice(a.shapes[1]), d), (Shape::from_slice(a.shapes[2]), d)])
}

fn backward_compute(c: &mut OpCall) -> Result<()> {
    let g = geom(c.params, &c.inputs[1].shape)?;
    let og = read_f64(&c.inputs[0]);
    let (d1, d2) = (read_f64(&c.inputs[1]), read_f64(&c.inputs[2]));
    let mul = c.params.bool("is_multiply");
    let norm = (g.k * g.k * g.c) as f64;
    let mut g1 = vec![0f64; d1.len()];
    let mut g2 = vec![0f64; d2.len()];
    visit(&g, |o, a, b, base| {
        let go = og[o] / norm;
        let v1 = a.map(|i| d1[base + i]).unwrap_or(0.0);
        let v2 = b.map(|i| d2[base + i]).unwrap_or(0.0);
        let (da, db) = if mul {
            (go * v2, go * v1)
        } else {
            let s = if v1 >= v2 { 1.0 } else { -1.0 };
            (go * s, -go * s)
        };
        if let Some(i) = a {
            g1[base + i] += da;
        }
        if let Some(i) = b {
            g2[base + i] += db;
        }
    });
    write_f64(&c.outputs[0], &g1);
    write_f64(&c.outputs[1], &g2);
    Ok(())
}

fn grad(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let og = g.first().ok_or_else(|| Error::op(NAME, "gradient called without an output gradient"))?;
    let attrs: Vec<(&str, Value)> = p.to_strings().into_iter().map(|(n, v)| (n, Value::Str(v))).collect();
    let r = super::call("_backward_Correlation", &[og.clone(), i[0].clone(), i[1].clone()], &attrs)?;
    Ok(r.into_iter().map(Some).collect())
}

fn two(_: &Params) -> usize {
    2
}

/// data2 has data1's shape and the other way round.
fn fill(_: &Params, s: &mut [Option<Shape>]) -> Result<()> {
    match (s[0].clone(), s[1].clone()) {
        (Some(a), None) => s[1] = Some(a),
        (None, Some(b)) => s[0] = Some(b),
        _ => {}
    }
    Ok(())
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            NAME,
            "Applies correlation to inputs. The correlation layer performs multiplicative patch comparisons between two feature maps (FlowNet): for each displacement within max_displacement (sampled every stride2) and each output position (every stride1), the mean over a kernel_size window and the channels of data1 * data2 (is_multiply) or |data1 - data2|.",
            Arity::Fixed(&["data1", "data2"]),
            PARAMS,
            infer,
            compute,
        )
        .fill(fill)
        .grad(grad),
    );
    r.add(
        OpDef::new(
            "_backward_Correlation",
            "Gradient of Correlation: `(ograd, data1, data2)` to the gradients of data1 and data2.",
            Arity::Fixed(&["ograd", "data1", "data2"]),
            PARAMS,
            backward_infer,
            backward_compute,
        )
        .outputs(two),
    );
}
