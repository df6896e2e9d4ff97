//! Region-of-interest pooling: `ROIPooling`, `_contrib_ROIAlign`,
//! `_contrib_RROIAlign` (rotated boxes, forward only as in MXNet) and
//! `_contrib_PSROIPooling`, the others each with its backward (`_backward_ROIPooling`, `_backward_ROIAlign`,
//! `_backward_PSROIPooling`).
//!
//! `rois` is `(R, 5)`: `(batch_index, x1, y1, x2, y2)` in image coordinates,
//! scaled by `spatial_scale` onto the feature map `(N, C, H, W)`. The output is
//! `(R, C', PH, PW)`. As in MXNet 1.9.1:
//! - `ROIPooling`: corners rounded to the grid, each bin the max of its cells
//!   (0 when empty); the gradient goes to the arg max.
//! - `ROIAlign`: each bin the mean of `sample_ratio^2` (or `ceil(bin size)` per
//!   side when `sample_ratio <= 0`) bilinear samples at regular points (Detectron's
//!   interpolation: clamped at the border, zero beyond one pixel outside);
//!   `position_sensitive` takes bin `(ph, pw)` of channel group `c` from channel
//!   `c*PH*PW + ph*PW + pw`; `aligned` shifts by half a pixel.
//! - `PSROIPooling`: position-sensitive average pooling; output channel `c`'s bin
//!   `(ph, pw)` averages channel `(c*G + gh)*G + gw` of the input.
//!
//! Batch indices outside `[0, N)` give zero outputs. `rois` gets a zero gradient.
//!
//! ROIPooling, PSROIPooling and ROIAlign compute in the data's type (float64, else
//! float32) on the compute pool: the bins (or sample tables) of each ROI once, then
//! the output planes in parallel; the backward splits the channels across the pool
//! (each task owns the data planes its channels reach, so no atomics) and adds in
//! ROI order, as MXNet's loops do.

use super::util::{read_as, read_f64, write_as, write_f64, Real};
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::cpu::SendPtr;
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};

type Out = Result<Vec<(Shape, DType)>>;
type Grads = Result<Vec<Option<NDArray>>>;

const POOL_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("pooled_size", PType::Tuple, None, "ROI pooling output shape (h,w) "),
    ParamSpec::new(
        "spatial_scale",
        PType::Float,
        None,
        "Ratio of input feature map height (or w) to raw image height (or w). Equals the reciprocal of total stride in convolutional layers",
    ),
];

const ALIGN_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("pooled_size", PType::Tuple, None, "ROI Align output roi feature map height and width: (h, w)"),
    ParamSpec::new(
        "spatial_scale",
        PType::Float,
        None,
        "Ratio of input feature map height (or w) to raw image height (or w). Equals the reciprocal of total stride in convolutional layers",
    ),
    ParamSpec::new("sample_ratio", PType::Int, Some("-1"), "Optional sampling ratio of ROI align, using adaptive size by default."),
    ParamSpec::new(
        "position_sensitive",
        PType::Bool,
        Some("False"),
        "Whether to perform position-sensitive RoI pooling. PSRoIPooling is first proposaled by R-FCN and it can reduce the input channels by ph*pw times, where (ph, pw) is the pooled_size",
    ),
    ParamSpec::new("aligned", PType::Bool, Some("False"), "Center-aligned ROIAlign introduced in Detectron2. To enable, set aligned to True."),
];

const RROI_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("pooled_size", PType::Tuple, None, "RROI align output shape (h,w) "),
    ParamSpec::new(
        "spatial_scale",
        PType::Float,
        None,
        "Ratio of input feature map height (or width) to raw image height (or width). Equals the reciprocal of total stride in convolutional layers",
    ),
    ParamSpec::new("sampling_ratio", PType::Int, Some("-1"), "Optional sampling ratio of RROI align, using adaptive size by default."),
];

const PS_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "spatial_scale",
        PType::Float,
        None,
        "Ratio of input feature map height (or w) to raw image height (or w). Equals the reciprocal of total stride in convolutional layers",
    ),
    ParamSpec::new("output_dim", PType::Int, None, "fix output dim"),
    ParamSpec::new("pooled_size", PType::Int, None, "fix pooled size"),
    ParamSpec::new("group_size", PType::Int, Some("0"), "fix group size"),
];

/// The forward op of a backward op.
fn forward_name(op: &str) -> &'static str {
    match op {
        "_backward_ROIPooling" | "ROIPooling" => "ROIPooling",
        "_backward_ROIAlign" | "_contrib_ROIAlign" => "_contrib_ROIAlign",
        _ => "_contrib_PSROIPooling",
    }
}

/// Output geometry: `(PH, PW, C')` for data channels `c`.
fn pooled(op: &str, p: &Params, c: usize) -> Result<(usize, usize, usize)> {
    if op == "_contrib_PSROIPooling" {
        let (od, ps, gs) = (p.int("output_dim"), p.int("pooled_size"), p.int("group_size"));
        let gs = if gs <= 0 { ps } else { gs };
        if od <= 0 || ps <= 0 {
            return Err(Error::op(op, format!("output_dim ({od}) and pooled_size ({ps}) must be positive")));
        }
        let want = (od * gs * gs) as usize;
        if c != want {
            return Err(Error::op(op, format!("data must have output_dim*group_size^2 = {want} channels, got {c}")));
        }
        return Ok((ps as usize, ps as usize, od as usize));
    }
    let t = p.tuple("pooled_size");
    let (ph, pw) = match t.len() {
        1 => (t[0], t[0]),
        2 => (t[0], t[1]),
        _ => return Err(Error::op(op, format!("pooled_size must be (h, w), got {t:?}"))),
    };
    if ph <= 0 || pw <= 0 {
        return Err(Error::op(op, format!("pooled_size must be positive, got ({ph}, {pw})")));
    }
    let (ph, pw) = (ph as usize, pw as usize);
    if op == "_contrib_ROIAlign" && p.bool("position_sensitive") {
        if !c.is_multiple_of(ph * pw) {
            return Err(Error::op(op, format!("with position_sensitive the channels ({c}) must be a multiple of ph*pw = {}", ph * pw)));
        }
        return Ok((ph, pw, c / (ph * pw)));
    }
    Ok((ph, pw, c))
}

fn check(op: &str, p: &Params, d: &[usize], r: &[usize]) -> Result<(usize, usize, usize)> {
    if d.len() != 4 {
        return Err(Error::op(op, format!("data must be 4-D (batch, channel, height, width), got {}", fmt_shape(d))));
    }
    if op == "_contrib_RROIAlign" {
        if r.len() != 2 || r[1] != 6 {
            return Err(Error::op(
                op,
                format!("rois must be 2-D (num_rois, 6) [batch_index, x_center, y_center, width, height, theta], got {}", fmt_shape(r)),
            ));
        }
    } else if r.len() != 2 || r[1] != 5 {
        return Err(Error::op(op, format!("rois must be 2-D (num_rois, 5) [batch_index, x1, y1, x2, y2], got {}", fmt_shape(r))));
    }
    pooled(op, p, d[1])
}

fn infer(a: &InferArgs) -> Out {
    let d = a.dtypes[0];
    if !d.is_float() {
        return Err(a.err(format!("data must be a floating-point array, got {}", d.name())));
    }
    let (ph, pw, c) = check(a.op.name, a.params, a.shapes[0], a.shapes[1])?;
    Ok(vec![(Shape::from_slice(&[a.shapes[1][0], c, ph, pw]), d)])
}

/// The sizes of one call.
#[derive(Clone, Copy)]
struct Geom {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    ph: usize,
    pw: usize,
    co: usize,
}

/// Every (output index, input index, weight) of a call of the ROIAlign family
/// (`_contrib_RROIAlign`, `_contrib_ROIAlign`): the output is the weighted sum of
/// its inputs.
fn visit(op: &str, p: &Params, g: &Geom, rois: &[f64], mut f: impl FnMut(usize, usize, f64)) {
    let scale = p.float("spatial_scale");
    let plane = g.h * g.w;
    let width = if op == "_contrib_RROIAlign" { 6 } else { 5 };
    for (r, roi) in rois.chunks(width).enumerate() {
        let b = roi[0];
        if b < 0.0 || b >= g.n as f64 {
            continue;
        }
        let b = b as usize;
        match op {
            "_contrib_RROIAlign" => {
                // A rotated box: centre, size, angle (degrees, counter-clockwise).
                let (cx, cy) = (roi[1] * scale, roi[2] * scale);
                let (rw, rh) = ((roi[3] * scale).max(1.0), (roi[4] * scale).max(1.0));
                let theta = roi[5] * std::f64::consts::PI / 180.0;
                let (cos, sin) = (theta.cos(), theta.sin());
                let (bh, bw) = (rh / g.ph as f64, rw / g.pw as f64);
                let sr = p.int("sampling_ratio");
                let gh = if sr > 0 { sr as usize } else { (rh / g.ph as f64).ceil() as usize };
                let gw = if sr > 0 { sr as usize } else { (rw / g.pw as f64).ceil() as usize };
                let count = (gh * gw).max(1) as f64;
                for c in 0..g.co {
                    let base = (b * g.c + c) * plane;
                    for i in 0..g.ph {
                        for j in 0..g.pw {
                            let o = ((r * g.co + c) * g.ph + i) * g.pw + j;
                            for iy in 0..gh {
                                let yy = -rh / 2.0 + i as f64 * bh + (iy as f64 + 0.5) * bh / gh as f64;
                                for ix in 0..gw {
                                    let xx = -rw / 2.0 + j as f64 * bw + (ix as f64 + 0.5) * bw / gw as f64;
                                    let x = xx * cos + yy * sin + cx;
                                    let y = yy * cos - xx * sin + cy;
                                    for (idx, wt) in bilinear(g.h, g.w, y, x) {
                                        f(o, base + idx, wt / count);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            // _contrib_ROIAlign
            _ => {
                let off = if p.bool("aligned") { 0.5 } else { 0.0 };
                let (sw, sh) = (roi[1] * scale - off, roi[2] * scale - off);
                let (ew, eh) = (roi[3] * scale - off, roi[4] * scale - off);
                let (mut rw, mut rh) = (ew - sw, eh - sh);
                if !p.bool("aligned") {
                    rw = rw.max(1.0);
                    rh = rh.max(1.0);
                }
                let (bh, bw) = (rh / g.ph as f64, rw / g.pw as f64);
                let sr = p.int("sample_ratio");
                let gh = if sr > 0 { sr as usize } else { (rh / g.ph as f64).ceil().max(0.0) as usize };
                let gw = if sr > 0 { sr as usize } else { (rw / g.pw as f64).ceil().max(0.0) as usize };
                let count = (gh * gw).max(1) as f64;
                let ps = p.bool("position_sensitive");
                for c in 0..g.co {
                    for i in 0..g.ph {
                        for j in 0..g.pw {
                            let cin = if ps { (c * g.ph + i) * g.pw + j } else { c };
                            let o = ((r * g.co + c) * g.ph + i) * g.pw + j;
                            let base = (b * g.c + cin) * plane;
                            for iy in 0..gh {
                                let y = sh + i as f64 * bh + (iy as f64 + 0.5) * bh / gh as f64;
                                for ix in 0..gw {
                                    let x = sw + j as f64 * bw + (ix as f64 + 0.5) * bw / gw as f64;
                                    for (idx, wt) in bilinear(g.h, g.w, y, x) {
                                        f(o, base + idx, wt / count);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Detectron's bilinear interpolation weights at `(y, x)` (none beyond one pixel
/// outside; clamped to the border inside that margin).
fn bilinear(h: usize, w: usize, y: f64, x: f64) -> Vec<(usize, f64)> {
    if y < -1.0 || y > h as f64 || x < -1.0 || x > w as f64 {
        return Vec::new();
    }
    let (mut y, mut x) = (y.max(0.0), x.max(0.0));
    let (mut yl, mut xl) = (y as usize, x as usize);
    let (yh, xh);
    if yl >= h - 1 {
        yl = h - 1;
        yh = h - 1;
        y = yl as f64;
    } else {
        yh = yl + 1;
    }
    if xl >= w - 1 {
        xl = w - 1;
        xh = w - 1;
        x = xl as f64;
    } else {
        xh = xl + 1;
    }
    let (ly, lx) = (y - yl as f64, x - xl as f64);
    let (hy, hx) = (1.0 - ly, 1.0 - lx);
    vec![(yl * w + xl, hy * hx), (yl * w + xh, hy * lx), (yh * w + xl, ly * hx), (yh * w + xh, ly * lx)]
}

fn geom(op: &str, p: &Params, d: &[usize], r: &[usize]) -> Result<Geom> {
    let (ph, pw, co) = check(op, p, d, r)?;
    Ok(Geom { n: d[0], c: d[1], h: d[2], w: d[3], ph, pw, co })
}

fn compute(c: &mut OpCall) -> Result<()> {
    let op = c.op.name;
    let g = geom(op, c.params, &c.inputs[0].shape, &c.inputs[1].shape)?;
    if op == "_contrib_ROIAlign" {
        if c.inputs[0].dtype == DType::F64 {
            align_forward::<f64>(c, &g);
        } else {
            align_forward::<f32>(c, &g);
        }
        return Ok(());
    }
    if op == "ROIPooling" || op == "_contrib_PSROIPooling" {
        if c.inputs[0].dtype == DType::F64 {
            pool_forward::<f64>(c, &g);
        } else {
            pool_forward::<f32>(c, &g);
        }
        return Ok(());
    }
    let x = read_f64(&c.inputs[0]);
    let rois = read_f64(&c.inputs[1]);
    let mut out = vec![0f64; c.outputs[0].size()];
    visit(op, c.params, &g, &rois, |o, i, wt| out[o] += wt * x[i]);
    write_f64(&c.outputs[0], &out);
    Ok(())
}

// ---- ROIPooling and PSROIPooling's kernels ---------------------------------------------

/// One bin of an ROI: the input cells `hs..he × ws..we` and, for PSROIPooling, the
/// bin's group `gh * G + gw` (its input channel is `c * G² + group`).
#[derive(Clone, Copy)]
struct Bin {
    hs: usize,
    he: usize,
    ws: usize,
    we: usize,
    group: usize,
}

impl Bin {
    fn empty(&self) -> bool {
        self.he <= self.hs || self.we <= self.ws
    }
    fn area(&self) -> usize {
        (self.he - self.hs) * (self.we - self.ws)
    }
}

/// The bins of one ROI (`PH * PW`, row-major) and its batch index, shared by every
/// channel; None for a batch index outside `[0, N)` (zero output, no gradient).
/// The bounds are computed as MXNet's kernels compute them: in the data's type `T`,
/// with `spatial_scale` a float32 parameter (so that bounds that land on a whole
/// cell round the same way).
fn pool_bins<T: Real>(op: &str, p: &Params, g: &Geom, roi: &[f64]) -> Option<(usize, Vec<Bin>)> {
    let b = roi[0];
    if b < 0.0 || b >= g.n as f64 {
        return None;
    }
    let t = |v: f64| T::of(v);
    let scale = t(p.float("spatial_scale") as f32 as f64);
    // floor and ceil of a T, exactly (through f64), clamped to [0, len]
    let lo = |v: T, len: usize| (v.get().floor().max(0.0) as usize).min(len);
    let hi = |v: T, len: usize| (v.get().ceil().max(0.0) as usize).min(len);
    let mut bins = Vec::with_capacity(g.ph * g.pw);
    if op == "ROIPooling" {
        // corners rounded to the grid; bins of floor/ceil bounds, clamped
        let rd = |v: f64| (t(v) * scale).get().round() as i64;
        let (sw, sh, ew, eh) = (rd(roi[1]), rd(roi[2]), rd(roi[3]), rd(roi[4]));
        let rh = (eh - sh + 1).max(1) as f64;
        let rw = (ew - sw + 1).max(1) as f64;
        let (bh, bw) = (t(rh) / t(g.ph as f64), t(rw) / t(g.pw as f64));
        let cell = |k: usize, bin: T, start: i64, len: usize, up: bool| {
            let v = (t(k as f64) * bin).get();
            let v = if up { v.ceil() } else { v.floor() } as i64 + start;
            v.clamp(0, len as i64) as usize
        };
        for i in 0..g.ph {
            let (hs, he) = (cell(i, bh, sh, g.h, false), cell(i + 1, bh, sh, g.h, true));
            for j in 0..g.pw {
                let (ws, we) = (cell(j, bw, sw, g.w, false), cell(j + 1, bw, sw, g.w, true));
                bins.push(Bin { hs, he, ws, we, group: 0 });
            }
        }
    } else {
        let (ps, gs) = (g.ph, p.int("group_size"));
        let gs = if gs <= 0 { ps } else { gs as usize };
        let sw = t(roi[1].round()) * scale;
        let sh = t(roi[2].round()) * scale;
        let ew = t(roi[3].round() + 1.0) * scale;
        let eh = t(roi[4].round() + 1.0) * scale;
        let min = t(0.1);
        let (rw, rh) = (ew - sw, eh - sh);
        let (rw, rh) = (if rw > min { rw } else { min }, if rh > min { rh } else { min });
        let (bh, bw) = (rh / t(ps as f64), rw / t(ps as f64));
        for i in 0..ps {
            let hs = lo(t(i as f64) * bh + sh, g.h);
            let he = hi(t((i + 1) as f64) * bh + sh, g.h);
            let gh = (i * gs / ps).min(gs - 1);
            for j in 0..ps {
                let ws = lo(t(j as f64) * bw + sw, g.w);
                let we = hi(t((j + 1) as f64) * bw + sw, g.w);
                let gw = (j * gs / ps).min(gs - 1);
                bins.push(Bin { hs, he, ws, we, group: gh * gs + gw });
            }
        }
    }
    Some((b as usize, bins))
}

/// The input channel of output channel `c` and bin `bin`.
#[inline(always)]
fn pool_cin(ps_groups: Option<usize>, c: usize, bin: &Bin) -> usize {
    match ps_groups {
        Some(g2) => c * g2 + bin.group,
        None => c,
    }
}

/// The plane offset of a non-empty bin's maximum (the first one in row-major
/// order; NaN where the first cell is NaN, as the reference loop).
#[inline(always)]
fn bin_argmax<T: Real>(im: &[T], w: usize, bin: &Bin) -> usize {
    let mut best = bin.hs * w + bin.ws;
    let mut m = im[best];
    for y in bin.hs..bin.he {
        let row = &im[y * w..y * w + bin.we];
        for (x, &v) in row.iter().enumerate().skip(bin.ws) {
            if v > m {
                m = v;
                best = y * w + x;
            }
        }
    }
    best
}

/// The sum of a bin's cells.
#[inline(always)]
fn bin_sum<T: Real>(im: &[T], w: usize, bin: &Bin) -> T {
    let mut acc = T::of(0.0);
    for y in bin.hs..bin.he {
        for &v in &im[y * w + bin.ws..y * w + bin.we] {
            acc += v;
        }
    }
    acc
}

/// The channel groups of PSROIPooling (`G²`), None for ROIPooling.
fn ps_groups(op: &str, g: &Geom) -> Option<usize> {
    (op != "ROIPooling").then(|| g.c / g.co.max(1))
}

/// ROIPooling (each bin's max, 0 when empty) and PSROIPooling (each bin's mean)
/// forward: the bins of every ROI computed once, then the (ROI, channel) planes of
/// the output in parallel.
fn pool_forward<T: Real>(c: &OpCall, g: &Geom) {
    use rayon::prelude::*;
    let op = c.op.name;
    let x = read_as::<T>(&c.inputs[0]);
    let rois = read_f64(&c.inputs[1]);
    let groups = ps_groups(op, g);
    let (plane, nbins) = (g.h * g.w, g.ph * g.pw);
    let tables: Vec<Option<(usize, Vec<Bin>)>> =
        crate::engine::install(|| rois.par_chunks(5).map(|roi| pool_bins::<T>(op, c.params, g, roi)).collect());
    write_as::<T>(&c.outputs[0], |out| {
        if nbins == 0 || out.is_empty() {
            return;
        }
        crate::engine::install(|| {
            out.par_chunks_mut(nbins).enumerate().for_each(|(rc, o)| {
                let (r, ch) = (rc / g.co, rc % g.co);
                let Some((b, bins)) = &tables[r] else {
                    o.fill(T::of(0.0));
                    return;
                };
                for (v, bin) in o.iter_mut().zip(bins) {
                    if bin.empty() {
                        *v = T::of(0.0);
                        continue;
                    }
                    let base = (b * g.c + pool_cin(groups, ch, bin)) * plane;
                    let im = &x[base..base + plane];
                    *v = match groups {
                        None => im[bin_argmax(im, g.w, bin)],
                        Some(_) => bin_sum(im, g.w, bin) / T::of(bin.area() as f64),
                    };
                }
            })
        })
    });
}

/// Their backward: the output gradient of each bin to its arg max (ROIPooling) or
/// spread evenly over its cells (PSROIPooling). The output channels are split
/// across the pool; each task owns the input planes its channels read (so the
/// scatter needs no atomics) and adds in ROI order.
fn pool_backward<T: Real>(c: &OpCall, g: &Geom, op: &str) {
    use rayon::prelude::*;
    let og = read_as::<T>(&c.inputs[0]);
    let x = read_as::<T>(&c.inputs[1]);
    let rois = read_f64(&c.inputs[2]);
    let groups = ps_groups(op, g);
    let (plane, nbins) = (g.h * g.w, g.ph * g.pw);
    let tables: Vec<Option<(usize, Vec<Bin>)>> =
        crate::engine::install(|| rois.par_chunks(5).map(|roi| pool_bins::<T>(op, c.params, g, roi)).collect());
    write_as::<T>(&c.outputs[0], |gx| {
        gx.fill(T::of(0.0));
        if nbins == 0 || g.co == 0 {
            return;
        }
        let tasks = (crate::engine::threads() * 4).clamp(1, g.co);
        let size = g.co.div_ceil(tasks);
        let gp = SendPtr(gx.as_mut_ptr());
        crate::engine::install(|| {
            (0..g.co.div_ceil(size)).into_par_iter().for_each(|t| {
                for ch in t * size..((t + 1) * size).min(g.co) {
                    for (r, tab) in tables.iter().enumerate() {
                        let Some((b, bins)) = tab else { continue };
                        let gv = &og[(r * g.co + ch) * nbins..(r * g.co + ch + 1) * nbins];
                        for (bin, &gk) in bins.iter().zip(gv) {
                            if bin.empty() {
                                continue;
                            }
                            let base = (b * g.c + pool_cin(groups, ch, bin)) * plane;
                            // SAFETY: output channel `ch` (this task's) alone reads
                            // and writes the input planes of its channels.
                            let dst = unsafe { std::slice::from_raw_parts_mut(gp.get().add(base), plane) };
                            match groups {
                                None => dst[bin_argmax(&x[base..base + plane], g.w, bin)] += gk,
                                Some(_) => {
                                    let dv = gk / T::of(bin.area() as f64);
                                    for y in bin.hs..bin.he {
                                        for d in &mut dst[y * g.w + bin.ws..y * g.w + bin.we] {
                                            *d += dv;
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            })
        });
    });
    write_f64(&c.outputs[1], &vec![0f64; rois.len()]);
}

// ---- ROIAlign's tuned kernels ----------------------------------------------------------

/// The samples of one ROI of ROIAlign, shared by every channel: for bin `k`
/// (`i * PW + j`), `taps[starts[k]..starts[k + 1]]` holds `(offset in the plane,
/// weight)`, one entry per input position (the weights of the samples that share
/// it added, each already divided by the sample count). The same points and
/// weights as [`visit`]'s `_contrib_ROIAlign` arm.
struct AlignTable<T> {
    batch: usize,
    starts: Vec<usize>,
    taps: Vec<(u32, T)>,
}

fn align_table<T: Real>(p: &Params, g: &Geom, roi: &[f64]) -> Option<AlignTable<T>> {
    let b = roi[0];
    if b < 0.0 || b >= g.n as f64 {
        return None;
    }
    let scale = p.float("spatial_scale");
    let aligned = p.bool("aligned");
    let off = if aligned { 0.5 } else { 0.0 };
    let (sw, sh) = (roi[1] * scale - off, roi[2] * scale - off);
    let (ew, eh) = (roi[3] * scale - off, roi[4] * scale - off);
    let (mut rw, mut rh) = (ew - sw, eh - sh);
    if !aligned {
        rw = rw.max(1.0);
        rh = rh.max(1.0);
    }
    let (bh, bw) = (rh / g.ph as f64, rw / g.pw as f64);
    let sr = p.int("sample_ratio");
    let gh = if sr > 0 { sr as usize } else { (rh / g.ph as f64).ceil().max(0.0) as usize };
    let gw = if sr > 0 { sr as usize } else { (rw / g.pw as f64).ceil().max(0.0) as usize };
    let count = (gh * gw).max(1) as f64;
    let mut starts = Vec::with_capacity(g.ph * g.pw + 1);
    let mut taps = Vec::with_capacity(g.ph * g.pw * gh * gw * 4);
    let mut wts: Vec<(u32, f64)> = Vec::with_capacity(gh * gw * 4);
    let mut acc = 0.0;
    for i in 0..g.ph {
        for j in 0..g.pw {
            starts.push(taps.len());
            for iy in 0..gh {
                let y = sh + i as f64 * bh + (iy as f64 + 0.5) * bh / gh as f64;
                for ix in 0..gw {
                    let x = sw + j as f64 * bw + (ix as f64 + 0.5) * bw / gw as f64;
                    for (idx, wt) in bilinear(g.h, g.w, y, x) {
                        wts.push((idx as u32, wt / count));
                    }
                }
            }
            // Samples of a bin share neighbours when the bin is small: one tap per
            // input position.
            wts.sort_unstable_by_key(|t| t.0);
            let mut last = u32::MAX;
            for &(idx, wt) in &wts {
                if idx == last {
                    acc += wt;
                } else {
                    if last != u32::MAX {
                        taps.push((last, T::of(acc)));
                    }
                    (last, acc) = (idx, wt);
                }
            }
            if last != u32::MAX {
                taps.push((last, T::of(acc)));
            }
            wts.clear();
        }
    }
    starts.push(taps.len());
    Some(AlignTable { batch: b as usize, starts, taps })
}

/// The input channel of output channel `c`, bin `k` (position-sensitive or not).
#[inline(always)]
fn align_cin(ps: bool, g: &Geom, c: usize, k: usize) -> usize {
    if ps {
        c * g.ph * g.pw + k
    } else {
        c
    }
}

/// ROIAlign forward: the ROIs in parallel, each with its sample table built once
/// and applied to every channel (with the data channels last, one axpy over the
/// channels per tap; position-sensitive pooling reads one channel per bin).
fn align_forward<T: Real>(c: &OpCall, g: &Geom) {
    use rayon::prelude::*;
    let x = read_as::<T>(&c.inputs[0]);
    let rois = read_f64(&c.inputs[1]);
    let ps = c.params.bool("position_sensitive");
    let plane = g.h * g.w;
    let per_roi = g.co * g.ph * g.pw;
    write_as::<T>(&c.outputs[0], |out| {
        if per_roi == 0 {
            return;
        }
        if !ps {
            // Channels last, so that each tap is one axpy over the channels.
            let xt = to_channels_last(&x, g.c, plane);
            let nbins = g.ph * g.pw;
            crate::engine::install(|| {
                out.par_chunks_mut(per_roi).zip(rois.par_chunks(5)).for_each(|(o, roi)| {
                    let Some(t) = align_table::<T>(c.params, g, roi) else {
                        o.iter_mut().for_each(|v| *v = T::of(0.0));
                        return;
                    };
                    let mut acc = vec![T::of(0.0); g.c];
                    for k in 0..nbins {
                        acc.iter_mut().for_each(|v| *v = T::of(0.0));
                        for &(idx, wt) in &t.taps[t.starts[k]..t.starts[k + 1]] {
                            let src = &xt[(t.batch * plane + idx as usize) * g.c..][..g.c];
                            for (a, &v) in acc.iter_mut().zip(src) {
                                *a += wt * v;
                            }
                        }
                        for (ch, &a) in acc.iter().enumerate() {
                            o[ch * nbins + k] = a;
                        }
                    }
                })
            });
            return;
        }
        crate::engine::install(|| {
            out.par_chunks_mut(per_roi).zip(rois.par_chunks(5)).for_each(|(o, roi)| {
                let Some(t) = align_table::<T>(c.params, g, roi) else {
                    o.iter_mut().for_each(|v| *v = T::of(0.0));
                    return;
                };
                let nbins = g.ph * g.pw;
                for ch in 0..g.co {
                    for k in 0..nbins {
                        let base = (t.batch * g.c + align_cin(ps, g, ch, k)) * plane;
                        let im = &x[base..base + plane];
                        let mut acc = T::of(0.0);
                        for &(idx, wt) in &t.taps[t.starts[k]..t.starts[k + 1]] {
                            acc += wt * im[idx as usize];
                        }
                        o[ch * nbins + k] = acc;
                    }
                }
            })
        })
    });
}

/// ROIAlign backward: the sample tables of every ROI, then the data gradient's
/// channels split across the pool (each task owns its channels' planes in every
/// image, so the scatter needs no atomics).
fn align_backward<T: Real>(c: &OpCall, g: &Geom) {
    use rayon::prelude::*;
    let og = read_as::<T>(&c.inputs[0]);
    let rois = read_f64(&c.inputs[2]);
    let ps = c.params.bool("position_sensitive");
    let (plane, nbins) = (g.h * g.w, g.ph * g.pw);
    let tables: Vec<Option<AlignTable<T>>> =
        crate::engine::install(|| rois.par_chunks(5).map(|roi| align_table::<T>(c.params, g, roi)).collect());
    if !ps {
        align_backward_channels_last(c, g, &og, &tables);
        write_f64(&c.outputs[1], &vec![0f64; rois.len()]);
        return;
    }
    write_as::<T>(&c.outputs[0], |gx| {
        gx.iter_mut().for_each(|v| *v = T::of(0.0));
        let chunks = (crate::engine::threads() * 4).clamp(1, g.c.max(1));
        let size = g.c.div_ceil(chunks).max(1);
        let gp = SendPtr(gx.as_mut_ptr());
        let total = gx.len();
        crate::engine::install(|| {
            (0..g.c.div_ceil(size)).into_par_iter().for_each(|t| {
                let (c0, c1) = (t * size, ((t + 1) * size).min(g.c));
                for (r, tab) in tables.iter().enumerate() {
                    let Some(tab) = tab else { continue };
                    for cin in c0..c1 {
                        // SAFETY: this task alone writes the planes of channels c0..c1.
                        let dst = unsafe { std::slice::from_raw_parts_mut(gp.get().add((tab.batch * g.c + cin) * plane), plane) };
                        debug_assert!((tab.batch * g.c + cin + 1) * plane <= total);
                        let mut bin = |ch: usize, k: usize| {
                            let gv = og[(r * g.co + ch) * nbins + k];
                            for &(idx, wt) in &tab.taps[tab.starts[k]..tab.starts[k + 1]] {
                                dst[idx as usize] += wt * gv;
                            }
                        };
                        if ps {
                            bin(cin / nbins, cin % nbins);
                        } else {
                            (0..nbins).for_each(|k| bin(cin, k));
                        }
                    }
                }
            })
        });
    });
    write_f64(&c.outputs[1], &vec![0f64; rois.len()]);
}

/// `(N, C, S)` → `(N, S, C)`, in blocks of positions on the pool.
fn to_channels_last<T: Real>(x: &[T], c: usize, s: usize) -> Vec<T> {
    use rayon::prelude::*;
    const BLOCK: usize = 64;
    let mut t = vec![T::of(0.0); x.len()];
    if c == 0 || s == 0 {
        return t;
    }
    crate::engine::install(|| {
        t.par_chunks_mut(BLOCK * c).enumerate().for_each(|(blk, dst)| {
            // rows of `t` are (image, position) pairs
            let first = blk * BLOCK;
            for (r, row) in dst.chunks_mut(c).enumerate() {
                let (b, p) = ((first + r) / s, (first + r) % s);
                for (ch, d) in row.iter_mut().enumerate() {
                    *d = x[(b * c + ch) * s + p];
                }
            }
        })
    });
    t
}

/// `(N, S, C)` → `(N, C, S)` into `out`.
fn from_channels_last<T: Real>(t: &[T], c: usize, s: usize, out: &mut [T]) {
    use rayon::prelude::*;
    if c == 0 || s == 0 {
        return;
    }
    crate::engine::install(|| {
        out.par_chunks_mut(s).enumerate().for_each(|(plane, dst)| {
            let (b, ch) = (plane / c, plane % c);
            for (p, d) in dst.iter_mut().enumerate() {
                *d = t[(b * s + p) * c + ch];
            }
        })
    });
}

/// ROIAlign's data gradient with channels last: the output gradient of each ROI
/// transposed to `(bin, C)`, then every tap an axpy over a channel range (one range
/// per task, so that the scatter needs no atomics), then back to `(N, C, H, W)`.
fn align_backward_channels_last<T: Real>(c: &OpCall, g: &Geom, og: &[T], tables: &[Option<AlignTable<T>>]) {
    use rayon::prelude::*;
    let (plane, nbins, ch) = (g.h * g.w, g.ph * g.pw, g.c);
    let ogt = to_channels_last(og, ch, nbins);
    let mut gt = vec![T::of(0.0); g.n * plane * ch];
    let tasks = (crate::engine::threads() * 2).clamp(1, ch.max(1));
    let size = ch.div_ceil(tasks).max(1);
    let gp = SendPtr(gt.as_mut_ptr());
    crate::engine::install(|| {
        (0..ch.div_ceil(size)).into_par_iter().for_each(|t| {
            let (c0, c1) = (t * size, ((t + 1) * size).min(ch));
            for (r, tab) in tables.iter().enumerate() {
                let Some(tab) = tab else { continue };
                for k in 0..nbins {
                    let src = &ogt[(r * nbins + k) * ch + c0..(r * nbins + k) * ch + c1];
                    for &(idx, wt) in &tab.taps[tab.starts[k]..tab.starts[k + 1]] {
                        let at = (tab.batch * plane + idx as usize) * ch + c0;
                        // SAFETY: this task alone writes channels c0..c1 of every position.
                        let dst = unsafe { std::slice::from_raw_parts_mut(gp.get().add(at), c1 - c0) };
                        for (d, &v) in dst.iter_mut().zip(src) {
                            *d += wt * v;
                        }
                    }
                }
            }
        })
    });
    write_as::<T>(&c.outputs[0], |gx| from_channels_last(&gt, ch, plane, gx));
}

/// `(ograd, data, rois)` → gradients of data and rois (zero).
fn backward_infer(a: &InferArgs) -> Out {
    let d = a.dtypes[1];
    Ok(vec![(Shape::from_slice(a.shapes[1]), d), (Shape::from_slice(a.shapes[2]), a.dtypes[2])])
}

fn backward_compute(c: &mut OpCall) -> Result<()> {
    let op = forward_name(c.op.name);
    let g = geom(op, c.params, &c.inputs[1].shape, &c.inputs[2].shape)?;
    if op == "_contrib_ROIAlign" {
        if c.inputs[1].dtype == DType::F64 {
            align_backward::<f64>(c, &g);
        } else {
            align_backward::<f32>(c, &g);
        }
        return Ok(());
    }
    if c.inputs[1].dtype == DType::F64 {
        pool_backward::<f64>(c, &g, op);
    } else {
        pool_backward::<f32>(c, &g, op);
    }
    Ok(())
}

fn grad_with(bwd: &str, p: &Params, i: &[NDArray], g: &[NDArray]) -> Grads {
    let og = g.first().ok_or_else(|| Error::op(forward_name(bwd), "gradient called without an output gradient"))?;
    let attrs: Vec<(&str, Value)> = p.to_strings().into_iter().map(|(n, v)| (n, Value::Str(v))).collect();
    let r = super::call(bwd, &[og.clone(), i[0].clone(), i[1].clone()], &attrs)?;
    Ok(r.into_iter().map(Some).collect())
}

fn g_pool(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    grad_with("_backward_ROIPooling", p, i, g)
}
fn g_align(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    grad_with("_backward_ROIAlign", p, i, g)
}
fn g_ps(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    grad_with("_backward_PSROIPooling", p, i, g)
}

fn two(_: &Params) -> usize {
    2
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "ROIPooling",
            "Performs region of interest(ROI) pooling on the input array: each ROI (batch_index, x1, y1, x2, y2) of rois (num_rois, 5), scaled by spatial_scale and rounded, is divided into pooled_size bins whose maximum is taken. The output is (num_rois, channel, pooled_size[0], pooled_size[1]).",
            Arity::Fixed(&["data", "rois"]),
            POOL_PARAMS,
            infer,
            compute,
        )
        .grad(g_pool),
    );
    r.add(
        OpDef::new(
            "_backward_ROIPooling",
            "Gradient of ROIPooling: `(ograd, data, rois)` to the gradients of data (at each bin's arg max) and rois (zero).",
            Arity::Fixed(&["ograd", "data", "rois"]),
            POOL_PARAMS,
            backward_infer,
            backward_compute,
        )
        .outputs(two),
    );
    r.add(
        OpDef::new(
            "_contrib_ROIAlign",
            "This operator takes a 4D feature map as an input array and region proposals as rois, then align the feature map over sub-regions of input and produces a fixed-sized output array (num_rois, channel, pooled_size[0], pooled_size[1]): each bin is the mean of bilinear samples at regular points (sample_ratio per side, or ceil(bin size) when sample_ratio <= 0).",
            Arity::Fixed(&["data", "rois"]),
            ALIGN_PARAMS,
            infer,
            compute,
        )
        .grad(g_align),
    );
    r.add(
        OpDef::new(
            "_backward_ROIAlign",
            "Gradient of ROIAlign: `(ograd, data, rois)` to the gradients of data and rois (zero).",
            Arity::Fixed(&["ograd", "data", "rois"]),
            ALIGN_PARAMS,
            backward_infer,
            backward_compute,
        )
        .outputs(two),
    );
    r.add(OpDef::new(
        "_contrib_RROIAlign",
        "Performs Rotated ROI Align on the input array: each rotated ROI (batch_index, x_center, y_center, width, height, theta in degrees) of rois (num_rois, 6) is divided into pooled_size bins, each the mean of bilinear samples at regular points of the rotated bin (sampling_ratio per side, or ceil(bin size) when sampling_ratio <= 0). The output is (num_rois, channel, pooled_size[0], pooled_size[1]). No gradient, as in MXNet.",
        Arity::Fixed(&["data", "rois"]),
        RROI_PARAMS,
        infer,
        compute,
    ));
    r.add(
        OpDef::new(
            "_contrib_PSROIPooling",
            "Performs position-sensitive region-of-interest pooling (R-FCN) on the inputs: data has output_dim*group_size^2 channels; output channel c's bin (ph, pw) of each ROI averages input channel (c*group_size + gh)*group_size + gw over the bin. The output is (num_rois, output_dim, pooled_size, pooled_size).",
            Arity::Fixed(&["data", "rois"]),
            PS_PARAMS,
            infer,
            compute,
        )
        .grad(g_ps),
    );
    r.add(
        OpDef::new(
            "_backward_PSROIPooling",
            "Gradient of PSROIPooling: `(ograd, data, rois)` to the gradients of data and rois (zero).",
            Arity::Fixed(&["ograd", "data", "rois"]),
            PS_PARAMS,
            backward_infer,
            backward_compute,
        )
        .outputs(two),
    );
}
