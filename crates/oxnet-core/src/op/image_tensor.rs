//! Image-to-tensor ops of MXNet's `image` namespace: `_image_normalize` (with its
//! gradient `_backward_image_normalize`) and `_image_to_tensor`, as in MXNet 1.9.1.
//!
//! - `normalize(data, mean, std)` on `(C, H, W)` or `(N, C, H, W)`: channel `c`
//!   becomes `(x - mean[c]) / std[c]`; a single mean or std applies to every
//!   channel. The gradient is the output gradient divided by `std[c]`.
//! - `to_tensor(data)` turns `(H, W, C)` or `(N, H, W, C)` images (any element type,
//!   values 0..255) into float32 `(C, H, W)` / `(N, C, H, W)` tensors in `[0, 1)`;
//!   no gradient.

use super::util::{read_f64, write_f64};
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};

type Out = Result<Vec<(Shape, DType)>>;
type Grads = Result<Vec<Option<NDArray>>>;

const NORM: &str = "_image_normalize";

const NORM_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("mean", PType::FloatTuple, Some("(0, 0, 0, 0)"), "Sequence of means for each channel. Default value is 0."),
    ParamSpec::new("std", PType::FloatTuple, Some("(1, 1, 1, 1)"), "Sequence of standard deviations for each channel. Default value is 1."),
];

/// Per-channel mean and std for `c` channels.
fn stats(p: &Params, c: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let pick = |name: &str| -> Result<Vec<f64>> {
        let v = p.floats(name);
        match v.len() {
            1 => Ok(vec![v[0]; c]),
            n if n >= c && c > 0 => Ok(v[..c].to_vec()),
            n => Err(Error::op(NORM, format!("{name} must have 1 or {c} (the number of channels) values, got {n}"))),
        }
    };
    let (m, s) = (pick("mean")?, pick("std")?);
    if let Some(z) = s.iter().find(|&&x| x == 0.0) {
        return Err(Error::op(NORM, format!("std must not be zero, got {z}")));
    }
    Ok((m, s))
}

/// `(channels, plane)` of the data and the number of images.
fn layout(s: &[usize]) -> Result<(usize, usize, usize)> {
    match s.len() {
        3 => Ok((1, s[0], s[1] * s[2])),
        4 => Ok((s[0], s[1], s[2] * s[3])),
        _ => Err(Error::op(NORM, format!("data must be 3-D (C, H, W) or 4-D (N, C, H, W), got {}", fmt_shape(s)))),
    }
}

fn norm_infer(a: &InferArgs) -> Out {
    let (_, c, _) = layout(a.shapes[0])?;
    if !a.dtypes[0].is_float() {
        return Err(a.err(format!("data must be a floating-point array, got {}", a.dtypes[0].name())));
    }
    if c != 1 && c != 3 {
        return Err(a.err(format!("data must have 1 or 3 channels, got {c} (shape {})", fmt_shape(a.shapes[0]))));
    }
    stats(a.params, c)?;
    Ok(vec![(Shape::from_slice(a.shapes[0]), a.dtypes[0])])
}

/// `out = (x - shift[c]) * scale[c]` over every image.
fn per_channel(s: &[usize], x: &[f64], shift: &[f64], scale: &[f64]) -> Result<Vec<f64>> {
    let (n, c, plane) = layout(s)?;
    let mut out = vec![0f64; x.len()];
    for i in 0..n {
        for ch in 0..c {
            let base = (i * c + ch) * plane;
            for k in base..base + plane {
                out[k] = (x[k] - shift[ch]) * scale[ch];
            }
        }
    }
    Ok(out)
}

fn norm_compute(c: &mut OpCall) -> Result<()> {
    let s = &c.inputs[0].shape;
    let (n, ch, plane) = layout(s)?;
    let (m, sd) = stats(c.params, ch)?;
    let inv: Vec<f64> = sd.iter().map(|v| 1.0 / v).collect();
    if c.inputs[0].dtype == DType::F32 && c.inputs[0].ptr != c.outputs[0].ptr {
        // float32 (what ToTensor gives): the same f64 arithmetic per element, without
        // the f64 copies of the whole array
        // SAFETY: the engine orders this read against the input's writers; this op is the
        // only writer of its output, a distinct buffer (checked above).
        let (x, o) = unsafe { (c.inputs[0].slice::<f32>(), c.outputs[0].slice_mut::<f32>()) };
        for i in 0..n * ch {
            let (mc, ic) = (m[i % ch], inv[i % ch]);
            let r = i * plane..(i + 1) * plane;
            for (d, &v) in o[r.clone()].iter_mut().zip(&x[r]) {
                *d = ((v as f64 - mc) * ic) as f32;
            }
        }
        return Ok(());
    }
    let out = per_channel(s, &read_f64(&c.inputs[0]), &m, &inv)?;
    write_f64(&c.outputs[0], &out);
    Ok(())
}

/// `(ograd)` → the gradient of data.
fn norm_backward_compute(c: &mut OpCall) -> Result<()> {
    let s = &c.inputs[0].shape;
    let (_, ch, _) = layout(s)?;
    let (_, sd) = stats(c.params, ch)?;
    let inv: Vec<f64> = sd.iter().map(|v| 1.0 / v).collect();
    let zero = vec![0f64; ch];
    let out = per_channel(s, &read_f64(&c.inputs[0]), &zero, &inv)?;
    write_f64(&c.outputs[0], &out);
    Ok(())
}

fn norm_grad(p: &Params, _: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let og = g.first().ok_or_else(|| Error::op(NORM, "gradient called without an output gradient"))?;
    let attrs: Vec<(&str, Value)> = p.to_strings().into_iter().map(|(n, v)| (n, Value::Str(v))).collect();
    Ok(vec![Some(super::call1("_backward_image_normalize", std::slice::from_ref(og), &attrs)?)])
}

fn to_tensor_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    let out = match s.len() {
        3 => [s[2], s[0], s[1]].to_vec(),
        4 => [s[0], s[3], s[1], s[2]].to_vec(),
        _ => return Err(a.err(format!("data must be 3-D (H, W, C) or 4-D (N, H, W, C), got {}", fmt_shape(s)))),
    };
    Ok(vec![(Shape::from_slice(&out), DType::F32)])
}

fn to_tensor_compute(c: &mut OpCall) -> Result<()> {
    let s = &c.inputs[0].shape;
    let (n, h, w, ch) = if s.len() == 3 { (1, s[0], s[1], s[2]) } else { (s[0], s[1], s[2], s[3]) };
    if c.inputs[0].dtype == DType::U8 && c.inputs[0].ptr != c.outputs[0].ptr {
        // decoded images: each of the 256 levels' value (v / 255 in f64, as below) from a
        // table, written channel-planar
        let lut: Vec<f32> = (0..256).map(|v| (v as f64 / 255.0) as f32).collect();
        // SAFETY: the engine orders this read against the input's writers; this op is the
        // only writer of its (float32, distinct) output.
        let (x, o) = unsafe { (c.inputs[0].slice::<u8>(), c.outputs[0].slice_mut::<f32>()) };
        let plane = h * w;
        for i in 0..n {
            let img = &x[i * plane * ch..(i + 1) * plane * ch];
            let out = &mut o[i * plane * ch..(i + 1) * plane * ch];
            for k in 0..ch {
                for (d, px) in out[k * plane..(k + 1) * plane].iter_mut().zip(img[k..].iter().step_by(ch)) {
                    *d = lut[*px as usize];
                }
            }
        }
        return Ok(());
    }
    let x = read_f64(&c.inputs[0]);
    let mut out = vec![0f64; x.len()];
    for i in 0..n {
        for y in 0..h {
            for xx in 0..w {
                for k in 0..ch {
                    out[((i * ch + k) * h + y) * w + xx] = x[((i * h + y) * w + xx) * ch + k] / 255.0;
                }
            }
        }
    }
    write_f64(&c.outputs[0], &out);
    Ok(())
}

fn no_grad(_: &Params, i: &[NDArray], _: &[NDArray], _: &[NDArray]) -> Grads {
    Ok(vec![None; i.len()])
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            NORM,
            "Normalize an tensor of shape (C x H x W) or (N x C x H x W) with mean and standard deviation: output[i] = (input[i] - mean[i]) / std[i] for each channel i. A single mean or std value applies to every channel.",
            Arity::Fixed(&["data"]),
            NORM_PARAMS,
            norm_infer,
            norm_compute,
        )
        .grad(norm_grad),
    );
    r.add(OpDef::new(
        "_backward_image_normalize",
        "Gradient of image.normalize: the output gradient divided by each channel's std.",
        Arity::Fixed(&["ograd"]),
        NORM_PARAMS,
        norm_infer,
        norm_backward_compute,
    ));
    r.add(
        OpDef::new(
            "_image_to_tensor",
            "Converts an image NDArray of shape (H x W x C) or (N x H x W x C) with values in [0, 255] to a float32 tensor of shape (C x H x W) or (N x C x H x W) with values in [0, 1).",
            Arity::Fixed(&["data"]),
            &[],
            to_tensor_infer,
            to_tensor_compute,
        )
        .grad(no_grad),
    );
}
