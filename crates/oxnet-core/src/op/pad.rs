//! `Pad` (alias `pad`): constant, edge or reflect padding of 4-D and 5-D arrays on
//! their spatial axes, as MXNet 1.9.1, and `_backward_Pad` (each output gradient
//! added back to the element it was copied from).

use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::kernels::cpu::layout::strides_of;
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};
use crate::with_dtype;

type Out = Result<Vec<(Shape, DType)>>;
type Grads = Result<Vec<Option<NDArray>>>;

const DATA: Arity = Arity::Fixed(&["data"]);

fn like_second(a: &InferArgs) -> Out {
    Ok(vec![(Shape::from_slice(a.shapes[1]), a.dtypes[0])])
}

fn pass_params(p: &Params) -> Vec<(&'static str, Value)> {
    p.to_strings().into_iter().map(|(n, v)| (n, Value::Str(v))).collect()
}

// ---- Pad ---------------------------------------------------------------------------------

const PAD_PARAMS: &[ParamSpec] = &[
    ParamSpec::choice("mode", &["constant", "edge", "reflect"], None, "Padding type to use. \"constant\" pads with `constant_value` \"edge\" pads using the edge values of the input array \"reflect\" pads by reflecting values with respect to the edges."),
    ParamSpec::new("pad_width", PType::Tuple, None, "Widths of the padding regions applied to the edges of each axis, (before_1, after_1, ... , before_N, after_N)."),
    ParamSpec::new("constant_value", PType::Float, Some("0"), "The value used for padding when `mode` is \"constant\"."),
];

pub(super) fn pad_widths(op: &str, p: &Params, s: &[usize]) -> Result<Vec<(usize, usize)>> {
    let w = p.tuple("pad_width");
    if w.len() != 2 * s.len() {
        return Err(Error::op(
            op,
            format!("pad_width must have 2*ndim = {} entries for data of shape {}, got {w:?}", 2 * s.len(), fmt_shape(s)),
        ));
    }
    if s.len() < 4 || s.len() > 5 {
        return Err(Error::op(op, format!("only 4-D and 5-D inputs are supported, got shape {}", fmt_shape(s))));
    }
    if w[..4].iter().any(|&v| v != 0) {
        return Err(Error::op(op, format!("padding on the first two axes (batch, channel) is not supported: pad_width {w:?}")));
    }
    if w.iter().any(|&v| v < 0) {
        return Err(Error::op(op, format!("pad_width entries must be non-negative, got {w:?}")));
    }
    let out: Vec<(usize, usize)> = w.chunks(2).map(|c| (c[0] as usize, c[1] as usize)).collect();
    if p.str("mode") == "reflect" {
        for (d, &(b, e)) in out.iter().enumerate() {
            if b >= s[d].max(1) && b > 0 || e >= s[d].max(1) && e > 0 {
                return Err(Error::op(
                    op,
                    format!("reflect padding of ({b}, {e}) on axis {d} needs the axis size {} to exceed both", s[d]),
                ));
            }
        }
    }
    Ok(out)
}

fn pad_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    let w = pad_widths(a.op.name, a.params, s)?;
    Ok(vec![(s.iter().zip(&w).map(|(&d, &(b, e))| d + b + e).collect(), a.dtypes[0])])
}

/// Source index along an axis of size `n` for output coordinate `i` (None: constant).
fn pad_src(mode: &str, i: usize, before: usize, n: usize) -> Option<usize> {
    let j = i as i64 - before as i64;
    let n = n as i64;
    if (0..n).contains(&j) {
        return Some(j as usize);
    }
    match mode {
        "constant" => None,
        "edge" => Some(j.clamp(0, n - 1) as usize),
        _ => {
            // reflect without repeating the edge
            let period = 2 * (n - 1).max(1);
            let mut m = j.rem_euclid(period);
            if m >= n {
                m = period - m;
            }
            Some(m as usize)
        }
    }
}

/// For every output element, its source element (or None).
fn pad_map(mode: &str, s: &[usize], w: &[(usize, usize)], os: &[usize]) -> Vec<Option<usize>> {
    let nd = s.len();
    let st = strides_of(s);
    let per_axis: Vec<Vec<Option<usize>>> = (0..nd).map(|d| (0..os[d]).map(|i| pad_src(mode, i, w[d].0, s[d])).collect()).collect();
    let total: usize = os.iter().product();
    let mut out = Vec::with_capacity(total);
    let mut idx = vec![0usize; nd];
    for _ in 0..total {
        let mut off = Some(0usize);
        for d in 0..nd {
            off = match (off, per_axis[d][idx[d]]) {
                (Some(o), Some(j)) => Some(o + j * st[d] as usize),
                _ => None,
            };
        }
        out.push(off);
        for d in (0..nd).rev() {
            idx[d] += 1;
            if idx[d] < os[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

fn pad_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let w = pad_widths(c.op.name, c.params, &x.shape)?;
    let map = pad_map(c.params.str("mode"), &x.shape, &w, &o.shape);
    let cv = c.params.float("constant_value");
    with_dtype!(x.dtype, T, {
        // SAFETY: sizes from inference.
        let (xs, os) = unsafe { (x.slice::<T>(), o.slice_mut::<T>()) };
        let v = T::from_f64(cv);
        for (d, m) in os.iter_mut().zip(&map) {
            *d = match m {
                Some(j) => xs[*j],
                None => v,
            };
        }
    });
    Ok(())
}

/// `_backward_Pad(ograd, data)`: every output gradient added to its source element.
fn pad_backward_compute(c: &mut OpCall) -> Result<()> {
    let (g, o) = (&c.inputs[0], &c.outputs[0]);
    let w = pad_widths(c.op.name, c.params, &o.shape)?;
    let map = pad_map(c.params.str("mode"), &o.shape, &w, &g.shape);
    with_dtype!(o.dtype, T, {
        // SAFETY: sizes from inference.
        let (gs, os) = unsafe { (g.slice::<T>(), o.slice_mut::<T>()) };
        let mut acc = vec![0f64; os.len()];
        for (gv, m) in gs.iter().zip(&map) {
            if let Some(j) = m {
                acc[*j] += gv.to_f64();
            }
        }
        for (d, a) in os.iter_mut().zip(acc) {
            *d = T::from_f64(a);
        }
    });
    Ok(())
}

fn g_pad(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(super::call1("_backward_Pad", &[g[0].clone(), i[0].clone()], &pass_params(p))?)])
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "Pad",
            "Pads an input array with a constant or edge values of the array (4-D and 5-D inputs, no padding of the first two axes).",
            DATA,
            PAD_PARAMS,
            pad_infer,
            pad_compute,
        )
        .aliases(&["pad"])
        .grad(g_pad),
    );
    r.add(OpDef::new("_backward_Pad", "Gradient of Pad.", Arity::Fixed(&["ograd", "data"]), PAD_PARAMS, like_second, pad_backward_compute));
}
