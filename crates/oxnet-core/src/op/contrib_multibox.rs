//! The SSD multibox ops of MXNet's contrib namespace: `_contrib_MultiBoxPrior`
//! (anchor boxes for a feature map), `_contrib_MultiBoxTarget` (training targets
//! from anchors, labels and class predictions) and `_contrib_MultiBoxDetection`
//! (decoded, suppressed detections). Names, parameters, defaults and shapes follow
//! MXNet 1.9.1; the kernels compute in f64 and store in the element type. None of
//! them passes a gradient back (MXNet's backward writes zeros).
//!
//! Where MXNet's CPU code differs from its GPU code or leaves stale data, we do the
//! sensible thing: MultiBoxTarget honours `minimum_negative_samples` (as MXNet's
//! GPU kernel does; its CPU loop ignores it), and MultiBoxDetection with `nms_topk`
//! keeps only the top-k detections (MXNet's CPU loop leaves the unsorted rows past
//! k in the output). MultiBoxDetection's `background_id` class is skipped and the
//! class ids above it move down by one (MXNet's default of 0 gives `id - 1`).

use super::util::{read_f64, write_f64};
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};

type Out = Result<Vec<(Shape, DType)>>;
type Grads = Result<Vec<Option<NDArray>>>;

fn float_inputs(a: &InferArgs) -> Result<()> {
    for (i, d) in a.dtypes.iter().enumerate() {
        if !d.is_float() {
            return Err(a.err(format!("input {i} must be a floating-point array, got {}", d.name())));
        }
    }
    Ok(())
}

fn g_none(_: &Params, i: &[NDArray], _: &[NDArray], _: &[NDArray]) -> Grads {
    Ok(vec![None; i.len()])
}

fn variances(a: &InferArgs) -> Result<Vec<f64>> {
    let v = a.params.floats("variances");
    if v.len() != 4 {
        return Err(a.err(format!("variances must have 4 values, got {}", v.len())));
    }
    Ok(v)
}

// ---- MultiBoxPrior ------------------------------------------------------------------------

const PRIOR_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("sizes", PType::FloatTuple, Some("(1,)"), "List of sizes of generated MultiBoxPriores."),
    ParamSpec::new("ratios", PType::FloatTuple, Some("(1,)"), "List of aspect ratios of generated MultiBoxPriores."),
    ParamSpec::new("clip", PType::Bool, Some("False"), "Whether to clip out-of-boundary boxes."),
    ParamSpec::new("steps", PType::FloatTuple, Some("(-1, -1)"), "Priorbox step across y and x, -1 for auto calculation."),
    ParamSpec::new("offsets", PType::FloatTuple, Some("(0.5, 0.5)"), "Priorbox center offsets, y and x respectively"),
];

fn prior_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    let p = a.params;
    if s.len() < 4 {
        return Err(a.err(format!("input data should be 4D: batch-channel-y-x, got shape {}", fmt_shape(s))));
    }
    if s[2] == 0 || s[3] == 0 {
        return Err(a.err(format!("input height and width should be > 0, got shape {}", fmt_shape(s))));
    }
    let (sizes, ratios, steps, offsets) = (p.floats("sizes"), p.floats("ratios"), p.floats("steps"), p.floats("offsets"));
    if sizes.is_empty() || ratios.is_empty() {
        return Err(a.err("sizes and ratios must not be empty"));
    }
    if steps.len() != 2 {
        return Err(a.err(format!("steps must have 2 values (step_y, step_x), got {}", steps.len())));
    }
    if offsets.len() != 2 || offsets.iter().any(|o| !(0.0..=1.0).contains(o)) {
        return Err(a.err(format!("offsets must be 2 values in [0, 1] (y, x), got {offsets:?}")));
    }
    if steps[0] * steps[1] < 0.0 {
        return Err(a.err("must specify both step_y and step_x"));
    }
    let n = s[2] * s[3] * (sizes.len() + ratios.len() - 1);
    Ok(vec![(Shape::from_slice(&[1, n, 4]), a.dtypes[0])])
}

fn prior_compute(c: &mut OpCall) -> Result<()> {
    let p = c.params;
    let (h, w) = (c.inputs[0].shape[2], c.inputs[0].shape[3]);
    let (sizes, ratios, mut steps, offsets) = (p.floats("sizes"), p.floats("ratios"), p.floats("steps"), p.floats("offsets"));
    if steps[0] <= 0.0 || steps[1] <= 0.0 {
        steps = vec![1.0 / h as f64, 1.0 / w as f64];
    }
    let hw = h as f64 / w as f64;
    let mut out = Vec::with_capacity(h * w * (sizes.len() + ratios.len() - 1) * 4);
    let mut push = |cx: f64, cy: f64, bw: f64, bh: f64| out.extend_from_slice(&[cx - bw, cy - bh, cx + bw, cy + bh]);
    for r in 0..h {
        let cy = (r as f64 + offsets[0]) * steps[0];
        for col in 0..w {
            let cx = (col as f64 + offsets[1]) * steps[1];
            // Every size with the first ratio, then the first size with the other ratios.
            let r0 = ratios[0].sqrt();
            for &s in &sizes {
                push(cx, cy, s * hw * r0 / 2.0, s / r0 / 2.0);
            }
            for &ratio in &ratios[1..] {
                let rt = ratio.sqrt();
                push(cx, cy, sizes[0] * hw * rt / 2.0, sizes[0] / rt / 2.0);
            }
        }
    }
    if p.bool("clip") {
        out.iter_mut().for_each(|v| *v = v.clamp(0.0, 1.0));
    }
    write_f64(&c.outputs[0], &out);
    Ok(())
}

// ---- MultiBoxTarget -----------------------------------------------------------------------

const TARGET_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("overlap_threshold", PType::Float, Some("0.5"), "Anchor-GT overlap threshold to be regarded as a positive match."),
    ParamSpec::new("ignore_label", PType::Float, Some("-1"), "Label for ignored anchors."),
    ParamSpec::new("negative_mining_ratio", PType::Float, Some("-1"), "Max negative to positive samples ratio, use -1 to disable mining"),
    ParamSpec::new("negative_mining_thresh", PType::Float, Some("0.5"), "Threshold used for negative mining."),
    ParamSpec::new("minimum_negative_samples", PType::Int, Some("0"), "Minimum number of negative samples."),
    ParamSpec::new("variances", PType::FloatTuple, Some("(0.1, 0.1, 0.2, 0.2)"), "Variances to be encoded in box regression target."),
];

fn target_infer(a: &InferArgs) -> Out {
    float_inputs(a)?;
    variances(a)?;
    let (an, lb, cp) = (a.shapes[0], a.shapes[1], a.shapes[2]);
    if an.len() != 3 || an[0] != 1 || an[1] == 0 || an[2] != 4 {
        return Err(a.err(format!("anchor should be a batch-shared (1, N, 4) tensor, got shape {}", fmt_shape(an))));
    }
    if lb.len() != 3 || lb[1] == 0 || lb[2] < 5 {
        return Err(a.err(format!("label should be (batch, num_labels > 0, label_width >= 5), got shape {}", fmt_shape(lb))));
    }
    if cp.len() != 3 || cp[2] != an[1] || cp[0] != lb[0] {
        return Err(a.err(format!(
            "cls_pred should be (batch, num_classes, num_anchors) = ({}, C, {}), got shape {}",
            lb[0],
            an[1],
            fmt_shape(cp)
        )));
    }
    let d = a.dtypes[0];
    Ok(vec![
        (Shape::from_slice(&[lb[0], an[1] * 4]), d),
        (Shape::from_slice(&[lb[0], an[1] * 4]), d),
        (Shape::from_slice(&[lb[0], an[1]]), d),
    ])
}

// The matching loops follow MXNet's index-based description of the algorithm.
#[allow(clippy::needless_range_loop)]
fn target_compute(c: &mut OpCall) -> Result<()> {
    let p = c.params;
    let (anchors, labels, preds) = (read_f64(&c.inputs[0]), read_f64(&c.inputs[1]), read_f64(&c.inputs[2]));
    let na = c.inputs[0].shape[1];
    let (nb, nl, lw) = (c.inputs[1].shape[0], c.inputs[1].shape[1], c.inputs[1].shape[2]);
    let ncls = c.inputs[2].shape[1];
    let var = p.floats("variances");
    let thresh = p.float("overlap_threshold");
    let (ratio, neg_thresh) = (p.float("negative_mining_ratio"), p.float("negative_mining_thresh"));
    let min_neg = p.int("minimum_negative_samples").max(0) as usize;
    let mut loc = vec![0f64; nb * na * 4];
    let mut mask = vec![0f64; nb * na * 4];
    let mut cls = vec![p.float("ignore_label"); nb * na];
    for b in 0..nb {
        let lab = &labels[b * nl * lw..(b + 1) * nl * lw];
        // Labels end at the first row whose class is -1 (padding).
        let ngt = (0..nl).take_while(|&i| lab[i * lw] != -1.0).count();
        if ngt == 0 {
            continue;
        }
        let gt = |k: usize| &lab[k * lw + 1..k * lw + 5];
        let ov: Vec<f64> = (0..na)
            .flat_map(|j| {
                let a = &anchors[j * 4..j * 4 + 4];
                (0..ngt).map(move |k| (j, k, a))
            })
            .map(|(_, k, a)| {
                let g = gt(k);
                let iw = (a[2].min(g[2]) - a[0].max(g[0])).max(0.0);
                let ih = (a[3].min(g[3]) - a[1].max(g[1])).max(0.0);
                let i = iw * ih;
                let u = (a[2] - a[0]) * (a[3] - a[1]) + (g[2] - g[0]) * (g[3] - g[1]) - i;
                if u == 0.0 {
                    0.0
                } else {
                    i / u
                }
            })
            .collect();
        let overlap = |j: usize, k: usize| ov[j * ngt + k];
        let mut gt_done = vec![false; ngt];
        let mut matches: Vec<(f64, i64)> = vec![(-1.0, -1); na];
        // -1: don't care, 0: negative, 1: positive
        let mut flags = vec![-1i8; na];
        let mut npos = 0usize;
        // Bipartite: each ground truth takes its best free anchor, best pairs first.
        while gt_done.iter().any(|d| !d) {
            let (mut best_a, mut best_g, mut best) = (None, 0, 1e-6);
            for j in 0..na {
                if flags[j] == 1 {
                    continue;
                }
                for k in 0..ngt {
                    if !gt_done[k] && overlap(j, k) > best {
                        (best_a, best_g, best) = (Some(j), k, overlap(j, k));
                    }
                }
            }
            let Some(j) = best_a else { break };
            matches[j] = (best, best_g as i64);
            npos += 1;
            gt_done[best_g] = true;
            flags[j] = 1;
        }
        let best_gt = |j: usize| -> (f64, i64) {
            let mut m = (-1.0, -1);
            for k in 0..ngt {
                if overlap(j, k) > m.0 {
                    m = (overlap(j, k), k as i64);
                }
            }
            m
        };
        if thresh > 0.0 {
            for j in 0..na {
                if flags[j] == 1 {
                    continue;
                }
                let m = best_gt(j);
                if m.1 >= 0 {
                    matches[j] = m;
                    if m.0 > thresh {
                        npos += 1;
                        gt_done[m.1 as usize] = true;
                        flags[j] = 1;
                    }
                }
            }
        }
        if ratio > 0.0 {
            if neg_thresh <= 0.0 {
                return Err(Error::op(c.op.name, format!("negative_mining_thresh must be > 0, got {neg_thresh}")));
            }
            let nneg = ((npos as f64 * ratio) as usize).max(min_neg).min(na - npos);
            if nneg > 0 {
                let pb = &preds[b * ncls * na..(b + 1) * ncls * na];
                let mut cand: Vec<(f64, usize)> = Vec::new();
                for j in 0..na {
                    if flags[j] == 1 {
                        continue;
                    }
                    if matches[j].0 < 0.0 {
                        let m = best_gt(j);
                        if m.1 >= 0 {
                            matches[j] = m;
                        }
                    }
                    if matches[j].0 < neg_thresh && flags[j] == -1 {
                        // background probability by softmax over the classes
                        let mx = (0..ncls).map(|k| pb[j + na * k]).fold(f64::NEG_INFINITY, f64::max);
                        let sum: f64 = (0..ncls).map(|k| (pb[j + na * k] - mx).exp()).sum();
                        cand.push((-(pb[j] - mx).exp() / sum, j));
                    }
                }
                // Hardest negatives first: lowest background probability.
                cand.sort_by(|x, y| y.0.partial_cmp(&x.0).unwrap_or(std::cmp::Ordering::Equal));
                for &(_, j) in cand.iter().take(nneg) {
                    flags[j] = 0;
                }
            }
        } else {
            flags.iter_mut().filter(|f| **f != 1).for_each(|f| *f = 0);
        }
        for j in 0..na {
            let o = (b * na + j) * 4;
            match flags[j] {
                1 => {
                    let k = matches[j].1 as usize;
                    cls[b * na + j] = lab[k * lw] + 1.0;
                    mask[o..o + 4].fill(1.0);
                    let (a, g) = (&anchors[j * 4..j * 4 + 4], gt(k));
                    let (aw, ah, gw, gh) = (a[2] - a[0], a[3] - a[1], g[2] - g[0], g[3] - g[1]);
                    let (ax, ay, gx, gy) = ((a[0] + a[2]) * 0.5, (a[1] + a[3]) * 0.5, (g[0] + g[2]) * 0.5, (g[1] + g[3]) * 0.5);
                    loc[o..o + 4].copy_from_slice(&[
                        (gx - ax) / aw / var[0],
                        (gy - ay) / ah / var[1],
                        (gw / aw).ln() / var[2],
                        (gh / ah).ln() / var[3],
                    ]);
                }
                0 => cls[b * na + j] = 0.0,
                _ => {}
            }
        }
    }
    write_f64(&c.outputs[0], &loc);
    write_f64(&c.outputs[1], &mask);
    write_f64(&c.outputs[2], &cls);
    Ok(())
}

fn target_names(_: &Params) -> Vec<String> {
    vec!["loc_target".into(), "loc_mask".into(), "cls_target".into()]
}

// ---- MultiBoxDetection --------------------------------------------------------------------

const DET_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("clip", PType::Bool, Some("True"), "Clip out-of-boundary boxes."),
    ParamSpec::new("threshold", PType::Float, Some("0.01"), "Threshold to be a positive prediction."),
    ParamSpec::new("background_id", PType::Int, Some("0"), "Background id."),
    ParamSpec::new("nms_threshold", PType::Float, Some("0.5"), "Non-maximum suppression threshold."),
    ParamSpec::new("force_suppress", PType::Bool, Some("False"), "Suppress all detections regardless of class_id."),
    ParamSpec::new("variances", PType::FloatTuple, Some("(0.1, 0.1, 0.2, 0.2)"), "Variances to be decoded from box regression output."),
    ParamSpec::new("nms_topk", PType::Int, Some("-1"), "Keep maximum top k detections before nms, -1 for no limit."),
];

fn det_infer(a: &InferArgs) -> Out {
    float_inputs(a)?;
    variances(a)?;
    let (cp, lp, an) = (a.shapes[0], a.shapes[1], a.shapes[2]);
    if cp.len() != 3 {
        return Err(a.err(format!("cls_prob should be (batch, num_classes, num_anchors), got shape {}", fmt_shape(cp))));
    }
    let na = cp[2];
    if an.len() != 3 || an[0] != 1 || an[1] != na || an[2] != 4 {
        return Err(a.err(format!("anchor should be (1, {na}, 4), got shape {}", fmt_shape(an))));
    }
    if lp.len() != 2 || lp[0] != cp[0] || lp[1] != na * 4 {
        return Err(a.err(format!("loc_pred should be ({}, {}), got shape {}", cp[0], na * 4, fmt_shape(lp))));
    }
    let bg = a.params.int("background_id");
    if bg < 0 || bg as usize >= cp[1] {
        return Err(a.err(format!("background_id {bg} is out of range [0, {})", cp[1])));
    }
    Ok(vec![(Shape::from_slice(&[cp[0], na, 6]), a.dtypes[0])])
}

fn det_compute(c: &mut OpCall) -> Result<()> {
    let p = c.params;
    let (prob, locp, anchors) = (read_f64(&c.inputs[0]), read_f64(&c.inputs[1]), read_f64(&c.inputs[2]));
    let (nb, ncls, na) = (c.inputs[0].shape[0], c.inputs[0].shape[1], c.inputs[0].shape[2]);
    let v = p.floats("variances");
    let (clip, thresh, bg) = (p.bool("clip"), p.float("threshold"), p.int("background_id") as usize);
    let (nms, force, topk) = (p.float("nms_threshold"), p.bool("force_suppress"), p.int("nms_topk"));
    let mut out = vec![-1f64; nb * na * 6];
    let cl = |x: f64| if clip { x.clamp(0.0, 1.0) } else { x };
    for b in 0..nb {
        let pr = &prob[b * ncls * na..(b + 1) * ncls * na];
        let mut dets: Vec<[f64; 6]> = Vec::new();
        for i in 0..na {
            let (mut score, mut id) = (-1.0, None);
            for j in (0..ncls).filter(|&j| j != bg) {
                if pr[j * na + i] > score {
                    score = pr[j * na + i];
                    id = Some(j);
                }
            }
            let Some(id) = id.filter(|_| score >= thresh) else { continue };
            let a = &anchors[i * 4..i * 4 + 4];
            let l = &locp[(b * na + i) * 4..(b * na + i) * 4 + 4];
            let (aw, ah) = (a[2] - a[0], a[3] - a[1]);
            let (ax, ay) = ((a[0] + a[2]) / 2.0, (a[1] + a[3]) / 2.0);
            let (ox, oy) = (l[0] * v[0] * aw + ax, l[1] * v[1] * ah + ay);
            let (ow, oh) = ((l[2] * v[2]).exp() * aw / 2.0, (l[3] * v[3]).exp() * ah / 2.0);
            // Class ids skip the background: the classes after it move down by one.
            let cid = if id > bg { id - 1 } else { id };
            dets.push([cid as f64, score, cl(ox - ow), cl(oy - oh), cl(ox + ow), cl(oy + oh)]);
        }
        if !dets.is_empty() && nms > 0.0 && nms <= 1.0 {
            dets.sort_by(|x, y| y[1].partial_cmp(&x[1]).unwrap_or(std::cmp::Ordering::Equal));
            if topk > 0 && (topk as usize) < dets.len() {
                dets.truncate(topk as usize);
            }
            for i in 0..dets.len() {
                if dets[i][0] < 0.0 {
                    continue;
                }
                for j in i + 1..dets.len() {
                    if dets[j][0] < 0.0 || !(force || dets[i][0] == dets[j][0]) {
                        continue;
                    }
                    let (x, y) = (&dets[i][2..6], &dets[j][2..6]);
                    let w = (x[2].min(y[2]) - x[0].max(y[0])).max(0.0);
                    let h = (x[3].min(y[3]) - x[1].max(y[1])).max(0.0);
                    let inter = w * h;
                    let u = (x[2] - x[0]) * (x[3] - x[1]) + (y[2] - y[0]) * (y[3] - y[1]) - inter;
                    let iou = if u <= 0.0 { 0.0 } else { inter / u };
                    if iou >= nms {
                        dets[j][0] = -1.0;
                    }
                }
            }
        }
        for (k, d) in dets.iter().enumerate() {
            out[(b * na + k) * 6..(b * na + k + 1) * 6].copy_from_slice(d);
        }
    }
    write_f64(&c.outputs[0], &out);
    Ok(())
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "_contrib_MultiBoxPrior",
            "Generate prior(anchor) boxes from data, sizes and ratios: for every position of the (N, C, H, W) feature map, one box per size (with the first ratio) and one per further ratio (with the first size), as (1, H*W*(len(sizes)+len(ratios)-1), 4) corner boxes in [0, 1] coordinates.",
            Arity::Fixed(&["data"]),
            PRIOR_PARAMS,
            prior_infer,
            prior_compute,
        )
        .grad(g_none),
    );
    r.add(
        OpDef::new(
            "_contrib_MultiBoxTarget",
            "Compute Multibox training targets: the box regression targets (batch, num_anchors*4), their masks and the class targets (batch, num_anchors) from anchors (1, num_anchors, 4), labels (batch, num_labels, 5+) and class predictions (batch, num_classes, num_anchors).",
            Arity::Fixed(&["anchor", "label", "cls_pred"]),
            TARGET_PARAMS,
            target_infer,
            target_compute,
        )
        .outputs(|_| 3)
        .output_names(target_names)
        .grad(g_none),
    );
    r.add(
        OpDef::new(
            "_contrib_MultiBoxDetection",
            "Convert multibox detection predictions: decodes the location predictions against the anchors, keeps the best non-background class per anchor above `threshold` and applies non-maximum suppression; output (batch, num_anchors, 6) rows of [id, score, xmin, ymin, xmax, ymax], -1 for removed rows.",
            Arity::Fixed(&["cls_prob", "loc_pred", "anchor"]),
            DET_PARAMS,
            det_infer,
            det_compute,
        )
        .grad(g_none),
    );
}
