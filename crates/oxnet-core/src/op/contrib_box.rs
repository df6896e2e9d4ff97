//! Bounding-box ops of MXNet's contrib namespace: `_contrib_box_nms` (alias
//! `_contrib_box_non_maximum_suppression`) with its backward, `_contrib_box_iou`,
//! `_contrib_bipartite_matching`, `_contrib_box_encode` and `_contrib_box_decode`.
//! Names, parameters, defaults, output shapes and the order of kept boxes follow
//! MXNet 1.9.1. `box_nms` computes in the element type (f32 for the half types) and
//! runs its classes in parallel; the other kernels compute in f64 and store in the
//! element type (they handle at most a few thousand boxes per image). Only `box_nms` has a gradient
//! (the output gradient flows back to the kept boxes); the others have none, as in
//! MXNet (their gradients are zero).

use super::util::{read_as, read_f64, write_as, write_f64, Real};
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
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

fn pass(p: &Params) -> Vec<(&'static str, Value)> {
    p.to_strings().into_iter().map(|(n, v)| (n, Value::Str(v))).collect()
}

/// Overlap of two boxes along one axis: `a`, `b` hold `(lo, _, hi)` in corner
/// format or `(center, _, extent)` in center format (MXNet's `Intersect`).
fn intersect(a0: f64, a2: f64, b0: f64, b2: f64, center: bool) -> f64 {
    let w = if center {
        let (al, ar) = (a0 - a2 / 2.0, a0 + a2 / 2.0);
        let (bl, br) = (b0 - b2 / 2.0, b0 + b2 / 2.0);
        br.min(ar) - bl.max(al)
    } else {
        a2.min(b2) - a0.max(b0)
    };
    if w > 0.0 {
        w
    } else {
        0.0
    }
}

fn area(b: &[f64], center: bool) -> f64 {
    let (w, h) = if center { (b[2], b[3]) } else { (b[2] - b[0], b[3] - b[1]) };
    if w < 0.0 || h < 0.0 {
        0.0
    } else {
        w * h
    }
}

/// Intersection over union of two 4-coordinate boxes (0 when they do not meet).
fn iou(a: &[f64], b: &[f64], center: bool) -> f64 {
    let i = intersect(a[0], a[2], b[0], b[2], center) * intersect(a[1], a[3], b[1], b[3], center);
    if i <= 0.0 {
        return 0.0;
    }
    i / (area(a, center) + area(b, center) - i)
}

// ---- box_nms ------------------------------------------------------------------------

const FORMATS: &[&str] = &["corner", "center"];

const NMS_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("overlap_thresh", PType::Float, Some("0.5"), "Overlapping(IoU) threshold to suppress object with smaller score."),
    ParamSpec::new("valid_thresh", PType::Float, Some("0"), "Filter input boxes to those whose scores greater than valid_thresh."),
    ParamSpec::new("topk", PType::Int, Some("-1"), "Apply nms to topk boxes with descending scores, -1 to no restriction."),
    ParamSpec::new("coord_start", PType::Int, Some("2"), "Start index of the consecutive 4 coordinates."),
    ParamSpec::new("score_index", PType::Int, Some("1"), "Index of the scores/confidence of boxes."),
    ParamSpec::new("id_index", PType::Int, Some("-1"), "Optional, index of the class categories, -1 to disable."),
    ParamSpec::new("background_id", PType::Int, Some("-1"), "Optional, id of the background class which will be ignored in nms."),
    ParamSpec::new(
        "force_suppress",
        PType::Bool,
        Some("False"),
        "Optional, if set false and id_index is provided, nms will only apply to boxes belongs to the same category",
    ),
    ParamSpec::choice(
        "in_format",
        FORMATS,
        Some("corner"),
        "The input box encoding type. \"corner\" means boxes are encoded as [xmin, ymin, xmax, ymax], \"center\" means boxes are encodes as [x, y, width, height].",
    ),
    ParamSpec::choice(
        "out_format",
        FORMATS,
        Some("corner"),
        "The output box encoding type. \"corner\" means boxes are encoded as [xmin, ymin, xmax, ymax], \"center\" means boxes are encodes as [x, y, width, height].",
    ),
];

/// `(batches, boxes per batch, box width)` of box_nms data.
fn nms_geometry(s: &[usize]) -> (usize, usize, usize) {
    let n = s.len();
    (s[..n - 2].iter().product(), s[n - 2], s[n - 1])
}

fn nms_infer(a: &InferArgs) -> Out {
    float_inputs(a)?;
    let s = a.shapes[0];
    let p = a.params;
    if s.len() < 2 {
        return Err(
            a.err(format!("input must have dim >= 2, the last two dimensions are num_box and box_width; {} provided", fmt_shape(s)))
        );
    }
    let width = s[s.len() - 1] as i64;
    let expected = if p.int("id_index") >= 0 { 6 } else { 5 };
    if width < expected {
        return Err(a.err(format!(
            "the last dimension must have at least 5 elements namely (score, coordinates x 4); {width} provided, {expected} expected"
        )));
    }
    let (cs, si, id) = (p.int("coord_start"), p.int("score_index"), p.int("id_index"));
    if si < 0 || si >= width {
        return Err(a.err(format!("score_index: {si} out of range: (0, {width})")));
    }
    if si >= cs && si <= cs + 3 {
        return Err(a.err(format!("score_index: {si} conflict with coordinates: ({cs}, {})", cs + 3)));
    }
    if cs < 0 || cs + 3 >= width {
        return Err(a.err(format!("coordinates: ({cs}, {}) out of range: (0, {width})", cs + 3)));
    }
    if id >= 0 {
        if id >= width {
            return Err(a.err(format!("id_index: {id} out of range: (0, {width})")));
        }
        if id >= cs && id <= cs + 3 {
            return Err(a.err(format!("id_index: {id} conflict with coordinates: ({cs}, {})", cs + 3)));
        }
        if id == si {
            return Err(a.err(format!("id_index: {id} conflict with score_index: {si}")));
        }
    }
    let mut rec = Shape::from_slice(s);
    *rec.last_mut().unwrap() = 1;
    Ok(vec![(Shape::from_slice(s), a.dtypes[0]), (rec, a.dtypes[0])])
}

/// Converts one box in place between encodings; rows whose first coordinate is
/// negative (the -1 padding) are left as they are, as in MXNet.
fn convert_box<T: Real>(b: &mut [T], to_center: bool) {
    if b[0] < T::of(0.0) {
        return;
    }
    let (x0, x1, x2, x3) = (b[0], b[1], b[2], b[3]);
    let two = T::of(2.0);
    if to_center {
        b.copy_from_slice(&[(x0 + x2) / two, (x1 + x3) / two, x2 - x0, x3 - x1]);
    } else {
        b.copy_from_slice(&[x0 - x2 / two, x1 - x3 / two, x0 + x2 / two, x1 + x3 / two]);
    }
}

/// One candidate of NMS: its corners (computed as MXNet's `Intersect` does for
/// either encoding) and its area (MXNet's `BoxArea`).
#[derive(Clone, Copy)]
struct Cand<T> {
    x0: T,
    y0: T,
    x1: T,
    y1: T,
    area: T,
}

impl<T: Real> Cand<T> {
    fn new(b: &[T], center: bool) -> Self {
        let zero = T::of(0.0);
        if center {
            let two = T::of(2.0);
            let area = if b[2] < zero || b[3] < zero { zero } else { b[2] * b[3] };
            Cand { x0: b[0] - b[2] / two, y0: b[1] - b[3] / two, x1: b[0] + b[2] / two, y1: b[1] + b[3] / two, area }
        } else {
            let (w, h) = (b[2] - b[0], b[3] - b[1]);
            let area = if w < zero || h < zero { zero } else { w * h };
            Cand { x0: b[0], y0: b[1], x1: b[2], y1: b[3], area }
        }
    }

    /// Intersection over union with `o` (0 when they do not meet), as [`iou`].
    #[inline(always)]
    fn iou(&self, o: &Self) -> T {
        let zero = T::of(0.0);
        let w = pmin(self.x1, o.x1) - pmax(self.x0, o.x0);
        if w <= zero {
            return zero;
        }
        let h = pmin(self.y1, o.y1) - pmax(self.y0, o.y0);
        if h <= zero {
            return zero;
        }
        let i = w * h;
        i / (self.area + o.area - i)
    }
}

#[inline(always)]
fn pmin<T: PartialOrd>(a: T, b: T) -> T {
    if b < a {
        b
    } else {
        a
    }
}
#[inline(always)]
fn pmax<T: PartialOrd>(a: T, b: T) -> T {
    if b > a {
        b
    } else {
        a
    }
}

/// Greedy suppression inside one class (or among all boxes with
/// `force_suppress`): `cands` in descending score order; returns which survive.
fn greedy<T: Real>(cands: &[Cand<T>], thresh: f64) -> Vec<bool> {
    let mut alive = vec![true; cands.len()];
    for a in 0..cands.len() {
        if !alive[a] {
            continue;
        }
        let ca = cands[a];
        for (q, cq) in cands.iter().enumerate().skip(a + 1) {
            if alive[q] && ca.iou(cq).get() > thresh {
                alive[q] = false;
            }
        }
    }
    alive
}

fn nms_compute(c: &mut OpCall) -> Result<()> {
    if c.inputs[0].dtype == DType::F64 {
        nms_kernel::<f64>(c)
    } else {
        nms_kernel::<f32>(c)
    }
}

/// box_nms: per batch, the valid boxes sorted once by descending score (ties in
/// input order), split by class (boxes of different classes never suppress each
/// other unless `force_suppress`), each class suppressed greedily on the pool,
/// then the survivors written in score order.
fn nms_kernel<T: Real>(c: &mut OpCall) -> Result<()> {
    use rayon::prelude::*;
    let p = c.params;
    let x = read_as::<T>(&c.inputs[0]);
    let (nb, num, w) = nms_geometry(&c.inputs[0].shape);
    let (cs, si, id) = (p.int("coord_start") as usize, p.int("score_index") as usize, p.int("id_index"));
    let center = p.str("in_format") == "center";
    let topk = if p.int("topk") < 0 { num } else { num.min(p.int("topk") as usize) };
    let convert = (p.str("in_format") != p.str("out_format")).then(|| p.str("out_format") == "center");
    let (vt, bg, thresh) = (p.float("valid_thresh"), p.int("background_id") as f64, p.float("overlap_thresh"));
    let by_class = !p.bool("force_suppress") && id >= 0;
    write_as::<T>(&c.outputs[1], |rec| {
        write_as::<T>(&c.outputs[0], |out| {
            if topk < 1 {
                // MXNet copies the input and records every box when topk is 0.
                out.copy_from_slice(&x);
                rec.iter_mut().enumerate().for_each(|(i, r)| *r = T::of(i as f64));
                return;
            }
            out.iter_mut().for_each(|v| *v = T::of(-1.0));
            rec.iter_mut().for_each(|v| *v = T::of(-1.0));
            for b in 0..nb {
                let rows = &x[b * num * w..(b + 1) * num * w];
                let row = |j: usize| &rows[j * w..(j + 1) * w];
                let mut idx: Vec<usize> =
                    (0..num).filter(|&j| row(j)[si].get() > vt && (id < 0 || row(j)[id as usize].get() != bg)).collect();
                // Descending scores, ties in input order (a stable sort).
                idx.sort_by(|&i, &j| row(j)[si].partial_cmp(&row(i)[si]).unwrap_or(std::cmp::Ordering::Equal));
                idx.truncate(topk);
                // Positions (in score order) of each class, each list in score order.
                let mut groups: Vec<Vec<usize>> = if by_class {
                    let mut order: Vec<usize> = (0..idx.len()).collect();
                    let class = |k: usize| row(idx[k])[id as usize].get() as i64;
                    order.sort_by_key(|&k| class(k));
                    let mut gs: Vec<Vec<usize>> = Vec::new();
                    let mut last = None;
                    for k in order {
                        if last != Some(class(k)) {
                            gs.push(Vec::new());
                            last = Some(class(k));
                        }
                        gs.last_mut().unwrap().push(k);
                    }
                    gs
                } else {
                    vec![(0..idx.len()).collect()]
                };
                // Largest classes first, so that the pool stays busy.
                groups.sort_by_key(|g| std::cmp::Reverse(g.len()));
                let keep_lists: Vec<Vec<usize>> = crate::engine::install(|| {
                    groups
                        .par_iter()
                        .map(|g| {
                            let cands: Vec<Cand<T>> = g.iter().map(|&k| Cand::new(&row(idx[k])[cs..cs + 4], center)).collect();
                            g.iter().zip(greedy(&cands, thresh)).filter(|(_, a)| *a).map(|(&k, _)| k).collect()
                        })
                        .collect()
                });
                let mut keep = vec![false; idx.len()];
                keep_lists.iter().flatten().for_each(|&k| keep[k] = true);
                for (count, &j) in idx.iter().zip(&keep).filter(|(_, &k)| k).map(|(j, _)| j).enumerate() {
                    let o = (b * num + count) * w;
                    out[o..o + w].copy_from_slice(row(j));
                    rec[b * num + count] = T::of((b * num + j) as f64);
                }
            }
            if let Some(to_center) = convert {
                for r in out.chunks_mut(w) {
                    convert_box(&mut r[cs..cs + 4], to_center);
                }
            }
        })
    });
    Ok(())
}

/// `(ograd, record)` → the input gradient: each kept box gets its output row's
/// gradient, suppressed boxes get zero.
fn nms_backward_infer(a: &InferArgs) -> Out {
    let (g, r) = (a.shapes[0], a.shapes[1]);
    if g.len() < 2 || r.len() != g.len() || r[..r.len() - 1] != g[..g.len() - 1] || r[r.len() - 1] != 1 {
        return Err(a.err(format!("gradient of shape {} does not fit the record of shape {}", fmt_shape(g), fmt_shape(r))));
    }
    Ok(vec![(Shape::from_slice(g), a.dtypes[0])])
}

fn nms_backward_compute(c: &mut OpCall) -> Result<()> {
    let g = read_f64(&c.inputs[0]);
    let rec = read_f64(&c.inputs[1]);
    let (_, _, w) = nms_geometry(&c.inputs[0].shape);
    let mut dx = vec![0f64; g.len()];
    for (i, &r) in rec.iter().enumerate() {
        if r >= 0.0 {
            let to = r as usize * w;
            dx[to..to + w].copy_from_slice(&g[i * w..(i + 1) * w]);
        }
    }
    write_f64(&c.outputs[0], &dx);
    Ok(())
}

fn g_nms(p: &Params, _: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    let og = g.first().ok_or_else(|| Error::op("_contrib_box_nms", "gradient called without an output gradient"))?;
    Ok(vec![Some(super::call1("_backward_contrib_box_nms", &[og.clone(), o[1].clone()], &pass(p))?)])
}

// ---- box_iou --------------------------------------------------------------------------

const IOU_PARAMS: &[ParamSpec] = &[ParamSpec::choice(
    "format",
    FORMATS,
    Some("corner"),
    "The box encoding type. \"corner\" means boxes are encoded as [xmin, ymin, xmax, ymax], \"center\" means boxes are encodes as [x, y, width, height].",
)];

fn iou_infer(a: &InferArgs) -> Out {
    float_inputs(a)?;
    if a.dtypes[0] != a.dtypes[1] {
        return Err(a.err(format!("lhs and rhs must have the same dtype, got {} and {}", a.dtypes[0].name(), a.dtypes[1].name())));
    }
    let mut o = Shape::new();
    for (side, s) in ["lhs", "rhs"].iter().zip(a.shapes) {
        if s.len() < 2 {
            return Err(a.err(format!("{side} must have dim >= 2, {} provided", fmt_shape(s))));
        }
        if s[s.len() - 1] != 4 {
            return Err(a.err(format!("last dimension of {side} must be 4, {} provided", s[s.len() - 1])));
        }
        o.extend_from_slice(&s[..s.len() - 1]);
    }
    Ok(vec![(o, a.dtypes[0])])
}

fn iou_compute(c: &mut OpCall) -> Result<()> {
    let (l, r) = (read_f64(&c.inputs[0]), read_f64(&c.inputs[1]));
    let center = c.params.str("format") == "center";
    let mut out = Vec::with_capacity(l.len() / 4 * r.len() / 4);
    for a in l.chunks(4) {
        for b in r.chunks(4) {
            out.push(iou(a, b, center));
        }
    }
    write_f64(&c.outputs[0], &out);
    Ok(())
}

fn g_none(_: &Params, i: &[NDArray], _: &[NDArray], _: &[NDArray]) -> Grads {
    Ok(vec![None; i.len()])
}

// ---- bipartite_matching ------------------------------------------------------------------

const BM_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "is_ascend",
        PType::Bool,
        Some("False"),
        "Use ascend order for scores instead of descending. Please set threshold accordingly.",
    ),
    ParamSpec::new(
        "threshold",
        PType::Float,
        None,
        "Ignore matching when score < thresh, if is_ascend=false, or ignore score > thresh, if is_ascend=true.",
    ),
    ParamSpec::new("topk", PType::Int, Some("-1"), "Limit the number of matches to topk, set -1 for no limit"),
];

fn bm_infer(a: &InferArgs) -> Out {
    float_inputs(a)?;
    let s = a.shapes[0];
    if s.len() < 2 {
        return Err(a.err(format!("score matrix must have dim >= 2, {} provided", fmt_shape(s))));
    }
    let rows = Shape::from_slice(&s[..s.len() - 1]);
    let mut cols = Shape::from_slice(&s[..s.len() - 2]);
    cols.push(s[s.len() - 1]);
    Ok(vec![(rows, a.dtypes[0]), (cols, a.dtypes[0])])
}

fn bm_compute(c: &mut OpCall) -> Result<()> {
    let x = read_f64(&c.inputs[0]);
    let s = &c.inputs[0].shape;
    let (nr, nc) = (s[s.len() - 2], s[s.len() - 1]);
    let nb = x.len().checked_div(nr * nc).unwrap_or(0);
    let asc = c.params.bool("is_ascend");
    let (thresh, topk) = (c.params.float("threshold"), c.params.int("topk"));
    let mut rm = vec![-1f64; nb * nr];
    let mut cm = vec![-1f64; nb * nc];
    for b in 0..nb {
        let sc = &x[b * nr * nc..(b + 1) * nr * nc];
        let mut order: Vec<usize> = (0..nr * nc).collect();
        order.sort_by(|&i, &j| {
            let o = sc[i].partial_cmp(&sc[j]).unwrap_or(std::cmp::Ordering::Equal);
            if asc {
                o
            } else {
                o.reverse()
            }
        });
        let (rmk, cmk) = (&mut rm[b * nr..(b + 1) * nr], &mut cm[b * nc..(b + 1) * nc]);
        let mut count = 0;
        for &k in &order {
            let (r, col) = (k / nc, k % nc);
            if rmk[r] == -1.0 && cmk[col] == -1.0 {
                if (!asc && sc[k] > thresh) || (asc && sc[k] < thresh) {
                    rmk[r] = col as f64;
                    cmk[col] = r as f64;
                    count += 1;
                    if topk > 0 && count > topk {
                        break;
                    }
                } else {
                    break;
                }
            }
        }
    }
    write_f64(&c.outputs[0], &rm);
    write_f64(&c.outputs[1], &cm);
    Ok(())
}

// ---- box_encode / box_decode ---------------------------------------------------------------

fn encode_infer(a: &InferArgs) -> Out {
    float_inputs(a)?;
    let (ss, ms, an, rs) = (a.shapes[0], a.shapes[1], a.shapes[2], a.shapes[3]);
    if ss.len() != 2 {
        return Err(a.err(format!("samples shape must have dim == 2, {} provided", fmt_shape(ss))));
    }
    if ms.len() != 2 {
        return Err(a.err(format!("matches shape must have dim == 2, {} provided", fmt_shape(ms))));
    }
    if an.len() != 3 || an[2] != 4 {
        return Err(a.err(format!("anchors must have shape (B, N, 4), {} provided", fmt_shape(an))));
    }
    if rs.len() != 3 || rs[2] != 4 {
        return Err(a.err(format!("refs must have shape (B, M, 4), {} provided", fmt_shape(rs))));
    }
    if ss != &an[..2] || ms != &an[..2] || rs[0] != an[0] {
        return Err(a.err(format!(
            "samples {} and matches {} must be (B, N) and refs {} (B, M, 4) for anchors {}",
            fmt_shape(ss),
            fmt_shape(ms),
            fmt_shape(rs),
            fmt_shape(an)
        )));
    }
    for (n, s) in ["means", "stds"].iter().zip(&a.shapes[4..6]) {
        if *s != [4] {
            return Err(a.err(format!("{n} must have shape (4,), {} provided", fmt_shape(s))));
        }
    }
    Ok(vec![(Shape::from_slice(an), a.dtypes[2]), (Shape::from_slice(an), a.dtypes[2])])
}

fn encode_compute(c: &mut OpCall) -> Result<()> {
    let ins: Vec<Vec<f64>> = c.inputs.iter().map(read_f64).collect();
    let (samples, matches, anchors, refs, means, stds) = (&ins[0], &ins[1], &ins[2], &ins[3], &ins[4], &ins[5]);
    let (n, m) = (c.inputs[2].shape[1], c.inputs[3].shape[1]);
    let mut t = vec![0f64; anchors.len()];
    let mut mask = vec![0f64; anchors.len()];
    for i in 0..samples.len() {
        if samples[i] <= 0.5 {
            continue;
        }
        let j = i / n;
        let mt = matches[i];
        if mt < 0.0 || mt as usize >= m {
            return Err(Error::op(c.op.name, format!("match index {mt} of sample {i} is out of range [0, {m})")));
        }
        let r = &refs[(j * m + mt as usize) * 4..][..4];
        let a = &anchors[i * 4..i * 4 + 4];
        let (rw, rh) = (r[2] - r[0], r[3] - r[1]);
        let (aw, ah) = (a[2] - a[0], a[3] - a[1]);
        let (rx, ry, ax, ay) = (r[0] + rw * 0.5, r[1] + rh * 0.5, a[0] + aw * 0.5, a[1] + ah * 0.5);
        let v = [(rx - ax) / aw, (ry - ay) / ah, (rw / aw).ln(), (rh / ah).ln()];
        for k in 0..4 {
            t[i * 4 + k] = (v[k] - means[k]) / stds[k];
            mask[i * 4 + k] = 1.0;
        }
    }
    write_f64(&c.outputs[0], &t);
    write_f64(&c.outputs[1], &mask);
    Ok(())
}

const DECODE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("std0", PType::Float, Some("1"), "value to be divided from the 1st encoded values"),
    ParamSpec::new("std1", PType::Float, Some("1"), "value to be divided from the 2nd encoded values"),
    ParamSpec::new("std2", PType::Float, Some("1"), "value to be divided from the 3rd encoded values"),
    ParamSpec::new("std3", PType::Float, Some("1"), "value to be divided from the 4th encoded values"),
    ParamSpec::new("clip", PType::Float, Some("-1"), "If larger than 0, bounding box target will be clipped to this value."),
    ParamSpec::choice(
        "format",
        FORMATS,
        Some("center"),
        "The box encoding type. \"corner\" means boxes are encoded as [xmin, ymin, xmax, ymax], \"center\" means boxes are encodes as [x, y, width, height].",
    ),
];

fn decode_infer(a: &InferArgs) -> Out {
    float_inputs(a)?;
    let (d, an) = (a.shapes[0], a.shapes[1]);
    if d.len() != 3 || d[2] != 4 {
        return Err(a.err(format!("data must have shape (B, N, 4), {} provided", fmt_shape(d))));
    }
    if an.len() != 3 || an[2] != 4 || an[0] != 1 || an[1] != d[1] {
        return Err(a.err(format!("anchors must have shape (1, {}, 4), {} provided", d[1], fmt_shape(an))));
    }
    Ok(vec![(Shape::from_slice(d), a.dtypes[0])])
}

fn decode_compute(c: &mut OpCall) -> Result<()> {
    let (x, an) = (read_f64(&c.inputs[0]), read_f64(&c.inputs[1]));
    let p = c.params;
    let n = c.inputs[0].shape[1];
    let std = [p.float("std0"), p.float("std1"), p.float("std2"), p.float("std3")];
    let clip = p.float("clip");
    let corner = p.str("format") == "corner";
    let mut out = vec![0f64; x.len()];
    for i in 0..x.len() / 4 {
        let a = &an[(i % n) * 4..(i % n) * 4 + 4];
        let (mut ax, mut ay, mut aw, mut ah) = (a[0], a[1], a[2], a[3]);
        if corner {
            aw -= ax;
            ah -= ay;
            ax += aw * 0.5;
            ay += ah * 0.5;
        }
        let e = &x[i * 4..i * 4 + 4];
        let ox = e[0] * std[0] * aw + ax;
        let oy = e[1] * std[1] * ah + ay;
        let (mut dw, mut dh) = (e[2] * std[2], e[3] * std[3]);
        if clip > 0.0 {
            dw = dw.min(clip);
            dh = dh.min(clip);
        }
        let (ow, oh) = (dw.exp() * aw * 0.5, dh.exp() * ah * 0.5);
        out[i * 4..i * 4 + 4].copy_from_slice(&[ox - ow, oy - oh, ox + ow, oy + oh]);
    }
    write_f64(&c.outputs[0], &out);
    Ok(())
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "_contrib_box_nms",
            "Apply non-maximum suppression to input. The output will be sorted in descending order according to `score`. Boxes with overlaps larger than `overlap_thresh`, smaller scores and background boxes will be removed and filled with -1, the corresponding position will be recorded for backward propagation. During back-propagation, the gradient will be copied to the original position according to the input index. For positions that have been suppressed, the in_grad will be assigned 0.",
            Arity::Fixed(&["data"]),
            NMS_PARAMS,
            nms_infer,
            nms_compute,
        ).unnamed_inputs()
        .aliases(&["_contrib_box_non_maximum_suppression"])
        .outputs(|_| 2)
        .visible(|_| 1)
        .grad(g_nms),
    );
    r.add(OpDef::new(
        "_backward_contrib_box_nms",
        "Gradient of box_nms: `(ograd, record)` to the input gradient.",
        Arity::Fixed(&["ograd", "record"]),
        NMS_PARAMS,
        nms_backward_infer,
        nms_backward_compute,
    ));
    r.add(
        OpDef::new(
            "_contrib_box_iou",
            "Bounding box overlap of two arrays. The overlap is defined as Intersection-over-Union, aka, IOU. lhs of shape (n, 4) (or more dims ending in 4) and rhs of shape (m, 4) give an output of shape lhs.shape[:-1] + rhs.shape[:-1].",
            Arity::Fixed(&["lhs", "rhs"]),
            IOU_PARAMS,
            iou_infer,
            iou_compute,
        )
        .grad(g_none),
    );
    r.add(
        OpDef::new(
            "_contrib_bipartite_matching",
            "Compute bipartite matching. The matching is performed on score matrix with shape [B, N, M]; greedily matches the best remaining pair first. Returns the row markers (B, N) and column markers (B, M); -1 means unmatched.",
            Arity::Fixed(&["data"]),
            BM_PARAMS,
            bm_infer,
            bm_compute,
        ).unnamed_inputs()
        .outputs(|_| 2)
        .grad(g_none),
    );
    r.add(
        OpDef::new(
            "_contrib_box_encode",
            "Encode bounding boxes training target with normalized center offsets. Input bounding boxes are using corner type: `x_{min}, y_{min}, x_{max}, y_{max}`. Returns the targets (B, N, 4) and the masks (B, N, 4).",
            Arity::Fixed(&["samples", "matches", "anchors", "refs", "means", "stds"]),
            &[],
            encode_infer,
            encode_compute,
        )
        .outputs(|_| 2)
        .grad(g_none),
    );
    r.add(
        OpDef::new(
            "_contrib_box_decode",
            "Decode bounding boxes training target with normalized center offsets. Input bounding boxes are using corner type: `x_{min}, y_{min}, x_{max}, y_{max}` or center type: `x, y, width, height`.",
            Arity::Fixed(&["data", "anchors"]),
            DECODE_PARAMS,
            decode_infer,
            decode_compute,
        )
        .grad(g_none),
    );
}
