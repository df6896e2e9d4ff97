//! The region proposal ops of Faster R-CNN's RPN in MXNet's contrib namespace:
//! `_contrib_Proposal` (one image) and `_contrib_MultiProposal` (a batch). Names,
//! parameters, defaults, shapes and results follow MXNet 1.9.1's CPU operators:
//!
//! 1. anchors: for each ratio, then each scale, a box of area `feature_stride^2 /
//!    ratio` (rounded as MXNet rounds) scaled by `scale`, centred on the base cell
//!    `[0, 0, stride-1, stride-1]`, then shifted to every cell of the `(H, W)` map
//!    (anchor index fastest, then column, then row);
//! 2. each anchor moved by its predicted deltas (`dx, dy, dw, dh` on centre and log
//!    size; with `iou_loss`, offsets of the corners), clipped to the image
//!    (`im_info = [height, width, scale]`); anchors on cells past the image's real
//!    extent (`im_info / feature_stride`) get score -1;
//! 3. boxes narrower or shorter than `rpn_min_size * scale` get score -1 (and are
//!    grown by `min_size / 2` on each side);
//! 4. the `rpn_pre_nms_top_n` best scores (all with a value <= 0) go through greedy
//!    non-maximum suppression (IoU with +1 pixel sizes `> threshold` suppresses)
//!    until `rpn_post_nms_top_n` boxes are kept;
//! 5. the output has `rpn_post_nms_top_n` rows per image `[batch_index, x1, y1, x2,
//!    y2]` (and a score column), the kept boxes repeated cyclically when fewer were
//!    kept.
//!
//! The arithmetic is single precision, as MXNet's. Boxes of equal score are ordered
//! by anchor index (MXNet's sort leaves their order unspecified). Neither op passes
//! a gradient back (MXNet's backward writes zeros).

use super::util::{read_f64, write_f64};
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};
use rayon::prelude::*;

type Out = Result<Vec<(Shape, DType)>>;

const PARAMS: &[ParamSpec] = &[
    ParamSpec::new("rpn_pre_nms_top_n", PType::Int, Some("6000"), "Number of top scoring boxes to keep before applying NMS to RPN proposals"),
    ParamSpec::new(
        "rpn_post_nms_top_n",
        PType::Int,
        Some("300"),
        "Number of top scoring boxes to keep after applying NMS to RPN proposals",
    ),
    ParamSpec::new("threshold", PType::Float, Some("0.7"), "NMS value, below which to suppress."),
    ParamSpec::new("rpn_min_size", PType::Int, Some("16"), "Minimum height or width in proposal"),
    ParamSpec::new("scales", PType::FloatTuple, Some("(4, 8, 16, 32)"), "Used to generate anchor windows by enumerating scales"),
    ParamSpec::new("ratios", PType::FloatTuple, Some("(0.5, 1, 2)"), "Used to generate anchor windows by enumerating ratios"),
    ParamSpec::new(
        "feature_stride",
        PType::Int,
        Some("16"),
        "The size of the receptive field each unit in the convolution layer of the rpn, for example the product of all stride's prior to this layer.",
    ),
    ParamSpec::new("output_score", PType::Bool, Some("False"), "Add score to outputs"),
    ParamSpec::new("iou_loss", PType::Bool, Some("False"), "Usage of IoU Loss"),
];

/// The parameters, checked.
struct Cfg {
    pre: i64,
    post: usize,
    threshold: f32,
    min_size: i64,
    scales: Vec<f32>,
    ratios: Vec<f32>,
    stride: i64,
    iou_loss: bool,
}

fn cfg(op: &str, p: &Params) -> Result<Cfg> {
    let post = p.int("rpn_post_nms_top_n");
    if post < 1 {
        return Err(Error::op(op, format!("rpn_post_nms_top_n must be at least 1, got {post}")));
    }
    let stride = p.int("feature_stride");
    if stride < 1 {
        return Err(Error::op(op, format!("feature_stride must be at least 1, got {stride}")));
    }
    let scales: Vec<f32> = p.floats("scales").into_iter().map(|v| v as f32).collect();
    let ratios: Vec<f32> = p.floats("ratios").into_iter().map(|v| v as f32).collect();
    if scales.is_empty() || ratios.is_empty() {
        return Err(Error::op(op, "scales and ratios must not be empty"));
    }
    if let Some(r) = ratios.iter().find(|&&r| r <= 0.0 || !r.is_finite()) {
        return Err(Error::op(op, format!("ratios must be positive, got {r}")));
    }
    Ok(Cfg {
        pre: p.int("rpn_pre_nms_top_n"),
        post: post as usize,
        threshold: p.float("threshold") as f32,
        min_size: p.int("rpn_min_size"),
        scales,
        ratios,
        stride,
        iou_loss: p.bool("iou_loss"),
    })
}

fn multi(op: &str) -> bool {
    op == "_contrib_MultiProposal"
}

/// (batch, anchors, height, width) of `cls_prob`, with the other inputs checked.
fn geometry(a: &InferArgs, c: &Cfg) -> Result<(usize, usize, usize, usize)> {
    let cs = a.shapes[0];
    if cs.len() != 4 || !cs[1].is_multiple_of(2) || cs[1] == 0 {
        return Err(a.err(format!(
            "cls_prob must be 4-D (batch, 2 * num_anchors, height, width) with an even, nonzero channel count, got shape {}",
            fmt_shape(cs)
        )));
    }
    let (n, anchors, h, w) = (cs[0], cs[1] / 2, cs[2], cs[3]);
    if anchors != c.scales.len() * c.ratios.len() {
        return Err(a.err(format!(
            "cls_prob has {anchors} anchors per cell (shape {}) but scales x ratios gives {} x {} = {}",
            fmt_shape(cs),
            c.scales.len(),
            c.ratios.len(),
            c.scales.len() * c.ratios.len()
        )));
    }
    if !multi(a.op.name) && n != 1 {
        return Err(
            a.err(format!("takes one image (batch size 1), got cls_prob of shape {}; use MultiProposal for a batch", fmt_shape(cs)))
        );
    }
    let want = [n, 4 * anchors, h, w];
    if a.shapes[1] != want {
        return Err(a.err(format!(
            "bbox_pred must have shape {} for cls_prob of shape {}, got {}",
            fmt_shape(&want),
            fmt_shape(cs),
            fmt_shape(a.shapes[1])
        )));
    }
    if a.shapes[2] != [n, 3] {
        return Err(a.err(format!("im_info must have shape ({n}, 3) (height, width, scale per image), got {}", fmt_shape(a.shapes[2]))));
    }
    Ok((n, anchors, h, w))
}

fn infer(a: &InferArgs) -> Out {
    let c = cfg(a.op.name, a.params)?;
    for (i, d) in a.dtypes.iter().enumerate() {
        if !d.is_float() {
            return Err(a.err(format!("input {i} must be a floating-point array, got {}", d.name())));
        }
    }
    let (n, ..) = geometry(a, &c)?;
    let rows = if multi(a.op.name) { n * c.post } else { c.post };
    let d = a.dtypes[0];
    Ok(vec![(Shape::from_slice(&[rows, 5]), d), (Shape::from_slice(&[rows, 1]), d)])
}

fn fill(_: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let Some(Some(cs)) = shapes.first().cloned() else { return Ok(()) };
    if cs.len() != 4 {
        return Ok(());
    }
    if shapes[1].is_none() {
        shapes[1] = Some(Shape::from_slice(&[cs[0], cs[1] * 2, cs[2], cs[3]]));
    }
    if shapes[2].is_none() {
        shapes[2] = Some(Shape::from_slice(&[cs[0], 3]));
    }
    Ok(())
}

/// The anchors of one cell, `[x1, y1, x2, y2]`, ratios outer and scales inner.
fn base_anchors(c: &Cfg) -> Vec<[f32; 4]> {
    let s = c.stride as f32;
    let (w, h) = (s, s);
    let (xc, yc) = (0.5 * (w - 1.0), 0.5 * (h - 1.0));
    let size = w * h;
    let mut out = Vec::with_capacity(c.ratios.len() * c.scales.len());
    for &r in &c.ratios {
        for &sc in &c.scales {
            let size_ratios = (size / r).floor();
            let nw = ((size_ratios.sqrt() + 0.5).floor()) * sc;
            let nh = ((nw / sc * r) + 0.5).floor() * sc;
            out.push([xc - 0.5 * (nw - 1.0), yc - 0.5 * (nh - 1.0), xc + 0.5 * (nw - 1.0), yc + 0.5 * (nh - 1.0)]);
        }
    }
    out
}

/// One image's proposals: `post` rows of `[x1, y1, x2, y2]` and their scores.
/// `scores` the foreground scores (anchors, h, w), `deltas` (4 * anchors, h, w),
/// `info` `[height, width, scale]`.
#[allow(clippy::too_many_arguments)]
fn propose(
    op: &str,
    c: &Cfg,
    anchors: &[[f32; 4]],
    (na, h, w): (usize, usize, usize),
    scores: &[f32],
    deltas: &[f32],
    info: [f32; 3],
) -> Result<Vec<[f32; 5]>> {
    let count = na * h * w;
    let stride = c.stride as f32;
    let real_h = (info[0] / stride) as i64;
    let real_w = (info[1] / stride) as i64;
    if real_h > h as i64 || real_w > w as i64 {
        return Err(Error::op(
            op,
            format!(
                "im_info [{}, {}] (height, width) is larger than the feature map ({h}, {w}) times feature_stride {}",
                info[0], info[1], c.stride
            ),
        ));
    }
    let (im_h, im_w) = (info[0], info[1]);
    let min_size = c.min_size as f32 * info[2];
    let plane = h * w;
    let mut boxes = vec![[0f32; 5]; count];
    for y in 0..h {
        for x in 0..w {
            for (a, an) in anchors.iter().enumerate() {
                let idx = y * (w * na) + x * na + a;
                let (sx, sy) = ((x as i64 * c.stride) as f32, (y as i64 * c.stride) as f32);
                let b = [an[0] + sx, an[1] + sy, an[2] + sx, an[3] + sy];
                let cell = y * w + x;
                let d = |k: usize| deltas[(a * 4 + k) * plane + cell];
                let (mut x1, mut y1, mut x2, mut y2) = if c.iou_loss {
                    (b[0] + d(0), b[1] + d(1), b[2] + d(2), b[3] + d(3))
                } else {
                    let bw = b[2] - b[0] + 1.0;
                    let bh = b[3] - b[1] + 1.0;
                    let cx = b[0] + 0.5 * (bw - 1.0);
                    let cy = b[1] + 0.5 * (bh - 1.0);
                    let pcx = d(0) * bw + cx;
                    let pcy = d(1) * bh + cy;
                    let pw = d(2).exp() * bw;
                    let ph = d(3).exp() * bh;
                    (pcx - 0.5 * (pw - 1.0), pcy - 0.5 * (ph - 1.0), pcx + 0.5 * (pw - 1.0), pcy + 0.5 * (ph - 1.0))
                };
                x1 = x1.min(im_w - 1.0).max(0.0);
                y1 = y1.min(im_h - 1.0).max(0.0);
                x2 = x2.min(im_w - 1.0).max(0.0);
                y2 = y2.min(im_h - 1.0).max(0.0);
                let mut score = scores[a * plane + cell];
                if y as i64 >= real_h || x as i64 >= real_w {
                    score = -1.0;
                }
                // too small: grown by min_size / 2 on each side and scored -1
                if x2 - x1 + 1.0 < min_size || y2 - y1 + 1.0 < min_size {
                    x1 -= min_size / 2.0;
                    y1 -= min_size / 2.0;
                    x2 += min_size / 2.0;
                    y2 += min_size / 2.0;
                    score = -1.0;
                }
                boxes[idx] = [x1, y1, x2, y2, score];
            }
        }
    }
    let pre = if c.pre > 0 { (c.pre as usize).min(count) } else { count };
    let post = c.post.min(pre);
    let mut order: Vec<usize> = (0..count).collect();
    // best first; equal scores keep anchor order (NaN scores last)
    order.sort_by(|&i, &j| boxes[j][4].partial_cmp(&boxes[i][4]).unwrap_or_else(|| boxes[i][4].is_nan().cmp(&boxes[j][4].is_nan())));
    let dets: Vec<[f32; 5]> = order[..pre].iter().map(|&i| boxes[i]).collect();
    let area: Vec<f32> = dets.iter().map(|d| (d[2] - d[0] + 1.0) * (d[3] - d[1] + 1.0)).collect();
    let mut suppressed = vec![false; pre];
    let mut keep = Vec::with_capacity(post);
    for i in 0..pre {
        if keep.len() >= post {
            break;
        }
        if suppressed[i] {
            continue;
        }
        keep.push(i);
        let di = dets[i];
        for j in i + 1..pre {
            if suppressed[j] {
                continue;
            }
            let dj = dets[j];
            let iw = (di[2].min(dj[2]) - di[0].max(dj[0]) + 1.0).max(0.0);
            let ih = (di[3].min(dj[3]) - di[1].max(dj[1]) + 1.0).max(0.0);
            let inter = iw * ih;
            if inter / (area[i] + area[j] - inter) > c.threshold {
                suppressed[j] = true;
            }
        }
    }
    Ok((0..c.post).map(|i| dets[keep[i % keep.len()]]).collect())
}

fn compute(call: &mut OpCall) -> Result<()> {
    let op = call.op.name;
    let c = cfg(op, call.params)?;
    let cs = &call.inputs[0].shape;
    let (n, na, h, w) = (cs[0], cs[1] / 2, cs[2], cs[3]);
    let cls = read_f64(&call.inputs[0]);
    let deltas = read_f64(&call.inputs[1]);
    let info = read_f64(&call.inputs[2]);
    let anchors = base_anchors(&c);
    let plane = na * h * w;
    let per_image = |b: usize| -> Result<Vec<[f32; 5]>> {
        // foreground scores: the second half of the image's channels
        let scores: Vec<f32> = cls[(2 * b + 1) * plane..(2 * b + 2) * plane].iter().map(|&v| v as f32).collect();
        let d: Vec<f32> = deltas[4 * b * plane..4 * (b + 1) * plane].iter().map(|&v| v as f32).collect();
        let im = [info[3 * b] as f32, info[3 * b + 1] as f32, info[3 * b + 2] as f32];
        propose(op, &c, &anchors, (na, h, w), &scores, &d, im)
    };
    let results: Vec<Result<Vec<[f32; 5]>>> = crate::engine::install(|| (0..n).into_par_iter().map(per_image).collect());
    let mut rois = Vec::with_capacity(n * c.post * 5);
    let mut score = Vec::with_capacity(n * c.post);
    for (b, r) in results.into_iter().enumerate() {
        for d in r? {
            rois.extend([b as f64, d[0] as f64, d[1] as f64, d[2] as f64, d[3] as f64]);
            score.push(d[4] as f64);
        }
    }
    write_f64(&call.outputs[0], &rois);
    write_f64(&call.outputs[1], &score);
    Ok(())
}

fn visible(p: &Params) -> usize {
    if p.bool("output_score") {
        2
    } else {
        1
    }
}

fn output_names(_: &Params) -> Vec<String> {
    vec!["output".into(), "score".into()]
}

/// No gradient reaches the inputs (MXNet's backward writes zeros).
fn grad(_: &Params, i: &[NDArray], _: &[NDArray], _: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    Ok(vec![None; i.len()])
}

pub fn register(r: &mut Registry) {
    for (name, doc) in [
        (
            "_contrib_Proposal",
            "Generate region proposals via RPN for one image: from cls_prob (1, 2A, H, W), bbox_pred (1, 4A, H, W) and im_info (1, 3), `rpn_post_nms_top_n` rows [0, x1, y1, x2, y2] (and, with `output_score`, their scores) after decoding the anchors, clipping, dropping small boxes and non-maximum suppression.",
        ),
        (
            "_contrib_MultiProposal",
            "Generate region proposals via RPN for a batch of images: from cls_prob (N, 2A, H, W), bbox_pred (N, 4A, H, W) and im_info (N, 3), `rpn_post_nms_top_n` rows per image [batch_index, x1, y1, x2, y2] (and, with `output_score`, their scores), as Proposal does for each image.",
        ),
    ] {
        r.add(
            OpDef::new(name, doc, Arity::Fixed(&["cls_prob", "bbox_pred", "im_info"]), PARAMS, infer, compute)
                .outputs(|_| 2)
                .visible(visible)
                .output_names(output_names)
                .fill(fill)
                .grad(grad)
                .cost(64),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg_with(scales: &[f32], ratios: &[f32]) -> Cfg {
        Cfg {
            pre: 100,
            post: 5,
            threshold: 0.7,
            min_size: 1,
            scales: scales.to_vec(),
            ratios: ratios.to_vec(),
            stride: 16,
            iou_loss: false,
        }
    }

    #[test]
    fn anchors_as_faster_rcnn() {
        // the classic (0.5, 1, 2) x (8, 16, 32) anchors of stride 16
        let a = base_anchors(&cfg_with(&[8.0, 16.0, 32.0], &[0.5, 1.0, 2.0]));
        assert_eq!(a[0], [-84.0, -40.0, 99.0, 55.0]);
        assert_eq!(a[3], [-56.0, -56.0, 71.0, 71.0]);
        assert_eq!(a[4], [-120.0, -120.0, 135.0, 135.0]);
        assert_eq!(a[8], [-168.0, -344.0, 183.0, 359.0]);
    }

    #[test]
    fn nms_keeps_best_and_repeats() {
        let c = cfg_with(&[1.0], &[1.0]);
        let anchors = base_anchors(&c);
        // 1 anchor on a 1x2 map, zero deltas: two disjoint 16x16 boxes
        let out = propose("t", &c, &anchors, (1, 1, 2), &[0.2, 0.9], &[0.0; 8], [16.0, 32.0, 1.0]).unwrap();
        assert_eq!(out.len(), 5);
        assert_eq!(out[0], [16.0, 0.0, 31.0, 15.0, 0.9]);
        assert_eq!(out[1], [0.0, 0.0, 15.0, 15.0, 0.2]);
        assert_eq!(out[2], out[0]);
    }
}
