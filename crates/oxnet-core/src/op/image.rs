//! Image ops on HWC (or NHWC) arrays, MXNet's `_image_*` and `_cv*` families:
//! `_image_resize`, `_image_crop`, `_image_flip_left_right`,
//! `_image_flip_top_bottom`, `_cvimresize`, `_cvcopyMakeBorder`. The pixel loops
//! live in `io::imgproc` (OpenCV's conventions; interpolation codes 0 nearest,
//! 1 bilinear, 2 bicubic, 3 area, 4 Lanczos-4). Integer outputs are rounded and
//! saturated as OpenCV does. (`_cvimdecode`/`_cvimread` have data-dependent output
//! shapes, so `mx.image.imdecode` calls the decoder directly instead of an op.)

use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Registry};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::io::imgproc;
use crate::shape::Shape;
use crate::with_dtype;

const DATA: Arity = Arity::Fixed(&["data"]);
const SRC: Arity = Arity::Fixed(&["src"]);

fn hwc(a: &InferArgs) -> Result<()> {
    let s = a.shapes[0];
    if s.len() != 3 && s.len() != 4 {
        return Err(a.err(format!("expected an (H, W, C) or (N, H, W, C) image, got shape {s:?}")));
    }
    Ok(())
}

fn read_f32(b: &super::Blob) -> Vec<f32> {
    let mut v = Vec::with_capacity(b.size());
    with_dtype!(b.dtype, T, {
        // SAFETY: the engine orders this read against writers of the input.
        let s = unsafe { b.slice::<T>() };
        v.extend(s.iter().map(|x| x.to_f64() as f32));
    });
    v
}

fn write_from_f32(b: &super::Blob, v: &[f32]) {
    let int = !b.dtype.is_float();
    with_dtype!(b.dtype, T, {
        // SAFETY: this op is the only writer of its output.
        let o = unsafe { b.slice_mut::<T>() };
        for (d, &x) in o.iter_mut().zip(v) {
            let x = if int { (x as f64).round() } else { x as f64 };
            *d = T::from_f64(if b.dtype == DType::U8 { x.clamp(0.0, 255.0) } else { x });
        }
    });
}

/// (batch, h, w, c) of an HWC/NHWC shape.
fn dims(s: &[usize]) -> (usize, usize, usize, usize) {
    if s.len() == 4 {
        (s[0], s[1], s[2], s[3])
    } else {
        (1, s[0], s[1], s[2])
    }
}

fn with_hw(s: &[usize], h: usize, w: usize) -> Shape {
    let mut o: Vec<usize> = s.to_vec();
    let n = o.len();
    o[n - 3] = h;
    o[n - 2] = w;
    Shape::from_slice(&o)
}

// ---- _image_resize ---------------------------------------------------------------

const RESIZE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("size", PType::Tuple, Some("()"), "Size of new image. Could be (width, height) or (size)"),
    ParamSpec::new("keep_ratio", PType::Bool, Some("False"), "Whether to resize the short edge or both edges to `size`, if size is give as an integer."),
    ParamSpec::new("interp", PType::Int, Some("1"), "Interpolation method for resizing. By default uses bilinear interpolation. Options are INTER_NEAREST - a nearest-neighbor interpolation INTER_LINEAR - a bilinear interpolation INTER_AREA - resampling using pixel area relation INTER_CUBIC - a bicubic interpolation over 4x4 pixel neighborhood INTER_LANCZOS4 - a Lanczos interpolation over 8x8 pixel neighborhood"),
];

fn resize_target(a: &InferArgs) -> Result<(usize, usize)> {
    let (_, h, w, _) = dims(a.shapes[0]);
    let size = a.params.tuple("size");
    let (nw, nh) = match size.len() {
        1 => {
            let s = size[0];
            if s <= 0 {
                return Err(a.err(format!("size must be greater than 0, got {s}")));
            }
            let s = s as usize;
            if a.params.bool("keep_ratio") {
                if h > w {
                    (s, s * h / w)
                } else {
                    (s * w / h, s)
                }
            } else {
                (s, s)
            }
        }
        2 => {
            if size[0] <= 0 || size[1] <= 0 {
                return Err(a.err(format!("size must be greater than 0, got {size:?}")));
            }
            (size[0] as usize, size[1] as usize)
        }
        n => return Err(a.err(format!("size must be an int or (width, height), got {n} values"))),
    };
    Ok((nh, nw))
}

fn resize_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    hwc(a)?;
    let (nh, nw) = resize_target(a)?;
    Ok(vec![(with_hw(a.shapes[0], nh, nw), a.dtypes[0])])
}

fn resize_into(c: &OpCall, interp: i64) -> Result<()> {
    let (i, o) = (&c.inputs[0], &c.outputs[0]);
    let (n, h, w, ch) = dims(&i.shape);
    let (_, nh, nw, _) = dims(&o.shape);
    if i.dtype == DType::U8 && o.dtype == DType::U8 && i.ptr != o.ptr {
        // decoded images: resized from their u8 pixels straight into the output (the
        // same values as the f32 path below, rounded and saturated)
        // SAFETY: the engine orders this read against writers of the input, and this op
        // is the only writer of its output, a distinct buffer (checked above).
        let (src, dst) = unsafe { (i.slice::<u8>(), o.slice_mut::<u8>()) };
        let (isz, osz) = (h * w * ch, nh * nw * ch);
        for k in 0..n {
            imgproc::resize_crop_u8_into(
                &src[k * isz..(k + 1) * isz], h, w, ch, (nh, nw), interp as i32, (0, 0), (nh, nw),
                &mut dst[k * osz..(k + 1) * osz],
            )
            .map_err(|e| Error::op(c.op.name, e.message()))?;
        }
        return Ok(());
    }
    let src = read_f32(i);
    let mut out = Vec::with_capacity(n * nh * nw * ch);
    for k in 0..n {
        let img = &src[k * h * w * ch..(k + 1) * h * w * ch];
        out.extend(imgproc::resize_f32(img, h, w, ch, nh, nw, interp as i32).map_err(|e| Error::op(c.op.name, e.message()))?);
    }
    write_from_f32(o, &out);
    Ok(())
}

fn resize_compute(c: &mut OpCall) -> Result<()> {
    resize_into(c, c.params.int("interp"))
}

// ---- _cvimresize -------------------------------------------------------------------

const CVRESIZE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("w", PType::Int, None, "Width of resized image."),
    ParamSpec::new("h", PType::Int, None, "Height of resized image."),
    ParamSpec::new("interp", PType::Int, Some("1"), "Interpolation method (default=cv2.INTER_LINEAR)."),
];

fn cvresize_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    if a.shapes[0].len() != 3 {
        return Err(a.err(format!("expected an (H, W, C) image, got shape {:?}", a.shapes[0])));
    }
    let (w, h) = (a.params.int("w"), a.params.int("h"));
    if w <= 0 || h <= 0 {
        return Err(a.err(format!("target size {w}x{h} must be positive")));
    }
    Ok(vec![(with_hw(a.shapes[0], h as usize, w as usize), a.dtypes[0])])
}

// ---- _image_crop --------------------------------------------------------------------

const CROP_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("x", PType::Int, None, "Left boundary of the cropping area."),
    ParamSpec::new("y", PType::Int, None, "Top boundary of the cropping area."),
    ParamSpec::new("width", PType::Int, None, "Width of the cropping area."),
    ParamSpec::new("height", PType::Int, None, "Height of the cropping area."),
];

fn crop_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    hwc(a)?;
    let (_, h, w, _) = dims(a.shapes[0]);
    let (x, y, cw, ch) = (a.params.int("x"), a.params.int("y"), a.params.int("width"), a.params.int("height"));
    if cw <= 0 || ch <= 0 {
        return Err(a.err(format!("width and height must be greater than 0, got {cw}x{ch}")));
    }
    if x < 0 || y < 0 || (x + cw) as usize > w || (y + ch) as usize > h {
        return Err(a.err(format!("cropping area x={x} y={y} width={cw} height={ch} is outside the {h}x{w} image")));
    }
    Ok(vec![(with_hw(a.shapes[0], ch as usize, cw as usize), a.dtypes[0])])
}

fn crop_compute(c: &mut OpCall) -> Result<()> {
    let (i, o) = (&c.inputs[0], &c.outputs[0]);
    let (n, h, w, ch) = dims(&i.shape);
    let (_, oh, ow, _) = dims(&o.shape);
    let (x, y) = (c.params.int("x") as usize, c.params.int("y") as usize);
    let es = i.dtype.size();
    for k in 0..n {
        for r in 0..oh {
            let s = ((k * h + y + r) * w + x) * ch * es;
            let d = ((k * oh + r) * ow) * ch * es;
            // SAFETY: both ranges are inside their buffers (checked by inference); distinct arrays.
            unsafe { std::ptr::copy_nonoverlapping(i.ptr.add(s), o.ptr.add(d), ow * ch * es) };
        }
    }
    Ok(())
}

/// The gradient of a crop: the head gradient placed in the cropped window of a zero
/// image of the input's shape.
fn crop_grad(
    p: &super::Params,
    i: &[crate::ndarray::NDArray],
    _: &[crate::ndarray::NDArray],
    g: &[crate::ndarray::NDArray],
) -> Result<Vec<Option<crate::ndarray::NDArray>>> {
    let (x, y) = (p.int("x"), p.int("y"));
    let (ch, cw) = (p.int("height"), p.int("width"));
    let (begin, end) =
        if i[0].ndim() == 4 { (vec![0, y, x], vec![i[0].shape()[0] as i64, y + ch, x + cw]) } else { (vec![y, x], vec![y + ch, x + cw]) };
    let zeros = super::call1("zeros_like", std::slice::from_ref(&i[0]), &[])?;
    let gi =
        super::call1("_slice_assign", &[zeros, g[0].clone()], &[("begin", super::Value::Tuple(begin)), ("end", super::Value::Tuple(end))])?;
    Ok(vec![Some(gi)])
}

// ---- flips -------------------------------------------------------------------------

fn same_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    hwc(a)?;
    Ok(vec![(Shape::from_slice(a.shapes[0]), a.dtypes[0])])
}

fn flip<const LR: bool>(c: &mut OpCall) -> Result<()> {
    let (i, o) = (&c.inputs[0], &c.outputs[0]);
    let (n, h, w, ch) = dims(&i.shape);
    let es = i.dtype.size();
    let px = ch * es;
    for k in 0..n {
        for r in 0..h {
            for col in 0..w {
                let (sr, sc) = if LR { (r, w - 1 - col) } else { (h - 1 - r, col) };
                let s = ((k * h + sr) * w + sc) * px;
                let d = ((k * h + r) * w + col) * px;
                // SAFETY: in-bounds pixel copies between distinct arrays.
                unsafe { std::ptr::copy_nonoverlapping(i.ptr.add(s), o.ptr.add(d), px) };
            }
        }
    }
    Ok(())
}

// ---- _cvcopyMakeBorder ----------------------------------------------------------------

const BORDER_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("top", PType::Int, None, "Top margin."),
    ParamSpec::new("bot", PType::Int, None, "Bottom margin."),
    ParamSpec::new("left", PType::Int, None, "Left margin."),
    ParamSpec::new("right", PType::Int, None, "Right margin."),
    ParamSpec::new("type", PType::Int, Some("0"), "Filling type (default=cv2.BORDER_CONSTANT)."),
    ParamSpec::new("value", PType::Float, Some("0"), "(Deprecated! Use ``values`` instead.) Fill with single value."),
    ParamSpec::new("values", PType::Tuple, Some("()"), "Fill with value(RGB[A] or gray), up to 4 channels."),
];

fn border_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let s = a.shapes[0];
    if s.len() != 3 {
        return Err(a.err(format!("expected an (H, W, C) image, got shape {s:?}")));
    }
    let p = |n: &str| a.params.int(n);
    for n in ["top", "bot", "left", "right"] {
        if p(n) < 0 {
            return Err(a.err(format!("{n} must be >= 0, got {}", p(n))));
        }
    }
    if !(0..=4).contains(&p("type")) {
        return Err(a.err(format!("unknown border type {}", p("type"))));
    }
    let h = s[0] + (p("top") + p("bot")) as usize;
    let w = s[1] + (p("left") + p("right")) as usize;
    Ok(vec![(Shape::from_slice(&[h, w, s[2]]), a.dtypes[0])])
}

fn border_compute(c: &mut OpCall) -> Result<()> {
    let (i, o) = (&c.inputs[0], &c.outputs[0]);
    let (h, w, ch) = (i.shape[0], i.shape[1], i.shape[2]);
    let p = |n: &str| c.params.int(n) as usize;
    let vals = c.params.tuple("values");
    let fill: Vec<f32> = if vals.is_empty() { vec![c.params.float("value") as f32] } else { vals.iter().map(|v| *v as f32).collect() };
    let src = read_f32(i);
    let out = imgproc::copy_make_border(&src, h, w, ch, p("top"), p("bot"), p("left"), p("right"), c.params.int("type") as i32, &fill)
        .map_err(|e| Error::op(c.op.name, e.message()))?;
    write_from_f32(o, &out);
    Ok(())
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "_image_resize",
            "Resize an image NDArray of shape (H x W x C) or (N x H x W x C) to the given size.",
            DATA,
            RESIZE_PARAMS,
            resize_infer,
            resize_compute,
        )
        .unnamed_inputs()
        .cost(8),
    );
    r.add(OpDef::new("_cvimresize", "Resize image with OpenCV.", SRC, CVRESIZE_PARAMS, cvresize_infer, resize_compute).cost(8));
    r.add(
        OpDef::new(
            "_image_crop",
            "Crop an image NDArray of shape (H x W x C) or (N x H x W x C) to the given size.",
            DATA,
            CROP_PARAMS,
            crop_infer,
            crop_compute,
        )
        .unnamed_inputs()
        .grad(crop_grad),
    );
    r.add(
        OpDef::new(
            "_image_flip_left_right",
            "Reverses the order of the width axis of an image (H x W x C) or (N x H x W x C).",
            DATA,
            &[],
            same_infer,
            flip::<true>,
        )
        .unnamed_inputs(),
    );
    r.add(
        OpDef::new(
            "_image_flip_top_bottom",
            "Reverses the order of the height axis of an image (H x W x C) or (N x H x W x C).",
            DATA,
            &[],
            same_infer,
            flip::<false>,
        )
        .unnamed_inputs(),
    );
    r.add(OpDef::new("_cvcopyMakeBorder", "Pad image border with OpenCV.", SRC, BORDER_PARAMS, border_infer, border_compute).cost(4));
}
