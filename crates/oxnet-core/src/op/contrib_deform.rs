//! Deformable 2-D convolutions of MXNet's contrib namespace:
//! `_contrib_DeformableConvolution` (v1: learnt offsets) and
//! `_contrib_ModulatedDeformableConvolution` (v2: learnt offsets and modulation
//! masks), each with its backward op. Every kernel tap of output position `(y, x)`
//! samples the input bilinearly at `(y*stride - pad + i*dilate + dy, ...)` where
//! `(dy, dx)` come from `offset` (layout `(N, dg*2*kh*kw, OH, OW)`, `dy` first) and,
//! for v2, multiplies the sample by `mask` (`(N, dg*kh*kw, OH, OW)`). The sampled
//! columns are then multiplied by the weight as in an im2col convolution. The
//! gradients (data, offset, mask, weight, bias) follow MXNet 1.9.1's
//! `deformable_im2col`/`col2im`/`col2im_coord` definitions. The kernels compute in
//! f64 on the CPU and are plain loops (a reference implementation, not tuned).

use super::util::{read_f64, write_f64};
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};

type Out = Result<Vec<(Shape, DType)>>;
type Grads = Result<Vec<Option<NDArray>>>;

const LAYOUTS: &[&str] = &["None", "NCDHW", "NCHW", "NCW", "NDHWC", "NHWC"];

const PARAMS: &[ParamSpec] = &[
    ParamSpec::new("kernel", PType::Tuple, None, "Convolution kernel size: (h, w) or (d, h, w)"),
    ParamSpec::new("stride", PType::Tuple, Some("[]"), "Convolution stride: (h, w) or (d, h, w). Defaults to 1 for each dimension."),
    ParamSpec::new("dilate", PType::Tuple, Some("[]"), "Convolution dilate: (h, w) or (d, h, w). Defaults to 1 for each dimension."),
    ParamSpec::new("pad", PType::Tuple, Some("[]"), "Zero pad for convolution: (h, w) or (d, h, w). Defaults to no padding."),
    ParamSpec::new("num_filter", PType::Int, None, "Convolution filter(channel) number"),
    ParamSpec::new("num_group", PType::Int, Some("1"), "Number of group partitions."),
    ParamSpec::new("num_deformable_group", PType::Int, Some("1"), "Number of deformable group partitions."),
    ParamSpec::new(
        "workspace",
        PType::Int,
        Some("1024"),
        "Maximum temperal workspace allowed for convolution (MB). (Accepted for compatibility.)",
    ),
    ParamSpec::new("no_bias", PType::Bool, Some("False"), "Whether to disable bias parameter."),
    ParamSpec::new("im2col_step", PType::Int, Some("64"), "Maximum number of images per im2col computation. (Accepted for compatibility.)"),
    ParamSpec::choice("layout", LAYOUTS, Some("None"), "Set layout for input, output and weight. Empty for default layout: NCHW."),
];

const V1_ALL: &[&str] = &["data", "offset", "weight", "bias"];
const V1_NB: &[&str] = &["data", "offset", "weight"];
const V2_ALL: &[&str] = &["data", "offset", "mask", "weight", "bias"];
const V2_NB: &[&str] = &["data", "offset", "mask", "weight"];

fn v1_select(p: &Params) -> &'static [&'static str] {
    if p.bool("no_bias") {
        V1_NB
    } else {
        V1_ALL
    }
}
fn v2_select(p: &Params) -> &'static [&'static str] {
    if p.bool("no_bias") {
        V2_NB
    } else {
        V2_ALL
    }
}

fn modulated(op: &str) -> bool {
    op.contains("Modulated")
}

/// The geometry of one call.
#[derive(Clone, Copy)]
struct Geom {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    f: usize,
    groups: usize,
    dg: usize,
    kh: usize,
    kw: usize,
    sh: usize,
    sw: usize,
    ph: usize,
    pw: usize,
    dh: usize,
    dw: usize,
    oh: usize,
    ow: usize,
}

impl Geom {
    fn k(&self) -> usize {
        self.kh * self.kw
    }
    fn cg(&self) -> usize {
        self.c / self.groups
    }
    fn fg(&self) -> usize {
        self.f / self.groups
    }
    fn weight(&self) -> Shape {
        Shape::from_slice(&[self.f, self.cg(), self.kh, self.kw])
    }
    fn offset(&self) -> Shape {
        Shape::from_slice(&[self.n, self.dg * 2 * self.k(), self.oh, self.ow])
    }
    fn mask(&self) -> Shape {
        Shape::from_slice(&[self.n, self.dg * self.k(), self.oh, self.ow])
    }
}

fn pair(op: &str, p: &Params, name: &str, default: usize) -> Result<(usize, usize)> {
    let t = p.tuple(name);
    match t.len() {
        0 => Ok((default, default)),
        2 if t.iter().all(|&v| v >= 0) => Ok((t[0] as usize, t[1] as usize)),
        _ => Err(Error::op(op, format!("{name} must be a pair (h, w) of non-negative ints, got {t:?}"))),
    }
}

fn geom(op: &str, p: &Params, d: &[usize]) -> Result<Geom> {
    if d.len() != 4 {
        return Err(Error::op(
            op,
            format!("only 2-D deformable convolution is supported: data must be (N, C, H, W), got {}", fmt_shape(d)),
        ));
    }
    let lay = p.str("layout");
    if lay != "None" && lay != "NCHW" {
        return Err(Error::op(op, format!("layout {lay} is not supported; use NCHW")));
    }
    let (kh, kw) = pair(op, p, "kernel", 0)?;
    let (sh, sw) = pair(op, p, "stride", 1)?;
    let (dh, dw) = pair(op, p, "dilate", 1)?;
    let (ph, pw) = pair(op, p, "pad", 0)?;
    if kh == 0 || kw == 0 || sh == 0 || sw == 0 || dh == 0 || dw == 0 {
        return Err(Error::op(op, "kernel, stride and dilate must be positive"));
    }
    let (f, groups, dg) = (p.int("num_filter"), p.int("num_group"), p.int("num_deformable_group"));
    if f <= 0 || groups <= 0 || dg <= 0 {
        return Err(Error::op(op, format!("num_filter ({f}), num_group ({groups}) and num_deformable_group ({dg}) must be positive")));
    }
    let (f, groups, dg) = (f as usize, groups as usize, dg as usize);
    let (n, c, h, w) = (d[0], d[1], d[2], d[3]);
    if c % groups != 0 || f % groups != 0 {
        return Err(Error::op(op, format!("channels {c} and num_filter {f} must be multiples of num_group {groups}")));
    }
    if c % dg != 0 {
        return Err(Error::op(op, format!("channels {c} must be a multiple of num_deformable_group {dg}")));
    }
    let (ekh, ekw) = (dh * (kh - 1) + 1, dw * (kw - 1) + 1);
    if h + 2 * ph < ekh || w + 2 * pw < ekw {
        return Err(Error::op(op, format!("kernel (dilated {ekh}x{ekw}) is larger than the padded input {}", fmt_shape(d))));
    }
    let (oh, ow) = ((h + 2 * ph - ekh) / sh + 1, (w + 2 * pw - ekw) / sw + 1);
    Ok(Geom { n, c, h, w, f, groups, dg, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow })
}

fn check_shape(op: &str, what: &str, got: &[usize], want: &Shape) -> Result<()> {
    if got != &want[..] {
        return Err(Error::op(op, format!("{what} has shape {}, expected {}", fmt_shape(got), fmt_shape(want))));
    }
    Ok(())
}

fn infer(a: &InferArgs) -> Out {
    let op = a.op.name;
    let d = a.dtypes[0];
    if !d.is_float() {
        return Err(a.err(format!("data must be a floating-point array, got {}", d.name())));
    }
    if let Some((i, t)) = a.dtypes.iter().enumerate().find(|(_, t)| **t != d) {
        return Err(a.err(format!("dtype mismatch: input 0 is {} but input {i} is {}", d.name(), t.name())));
    }
    let g = geom(op, a.params, a.shapes[0])?;
    check_shape(op, "offset", a.shapes[1], &g.offset())?;
    let wi = if modulated(op) {
        check_shape(op, "mask", a.shapes[2], &g.mask())?;
        3
    } else {
        2
    };
    check_shape(op, "weight", a.shapes[wi], &g.weight())?;
    if let Some(b) = a.shapes.get(wi + 1) {
        check_shape(op, "bias", b, &Shape::from_slice(&[g.f]))?;
    }
    Ok(vec![(Shape::from_slice(&[g.n, g.f, g.oh, g.ow]), d)])
}

fn fill_with(op: &str, p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let Some(Some(d)) = shapes.first().cloned() else { return Ok(()) };
    let g = geom(op, p, &d)?;
    let mut want = vec![g.offset()];
    if modulated(op) {
        want.push(g.mask());
    }
    want.push(g.weight());
    want.push(Shape::from_slice(&[g.f]));
    for (slot, w) in shapes[1..].iter_mut().zip(want) {
        match slot {
            Some(s) if !s.is_empty() && s[..] != w[..] => {
                return Err(Error::op(op, format!("shape inconsistent: given {}, inferred {}", fmt_shape(s), fmt_shape(&w))));
            }
            _ => *slot = Some(w),
        }
    }
    Ok(())
}

fn fill_v1(p: &Params, s: &mut [Option<Shape>]) -> Result<()> {
    fill_with("_contrib_DeformableConvolution", p, s)
}
fn fill_v2(p: &Params, s: &mut [Option<Shape>]) -> Result<()> {
    fill_with("_contrib_ModulatedDeformableConvolution", p, s)
}

/// Bilinear sample of one channel plane at (y, x); 0 outside (-1, H) x (-1, W).
fn bilinear(im: &[f64], h: usize, w: usize, y: f64, x: f64) -> f64 {
    if y <= -1.0 || x <= -1.0 || y >= h as f64 || x >= w as f64 {
        return 0.0;
    }
    let (yl, xl) = (y.floor(), x.floor());
    let (ly, lx) = (y - yl, x - xl);
    let (hy, hx) = (1.0 - ly, 1.0 - lx);
    let (yl, xl) = (yl as i64, xl as i64);
    let at = |yy: i64, xx: i64| if yy >= 0 && xx >= 0 && yy < h as i64 && xx < w as i64 { im[yy as usize * w + xx as usize] } else { 0.0 };
    hy * hx * at(yl, xl) + hy * lx * at(yl, xl + 1) + ly * hx * at(yl + 1, xl) + ly * lx * at(yl + 1, xl + 1)
}

/// The four neighbours of (y, x) inside the plane with their bilinear weights.
fn neighbours(h: usize, w: usize, y: f64, x: f64) -> Vec<(usize, f64)> {
    if y <= -1.0 || x <= -1.0 || y >= h as f64 || x >= w as f64 {
        return vec![];
    }
    let (yl, xl) = (y.floor(), x.floor());
    let (ly, lx) = (y - yl, x - xl);
    let (yl, xl) = (yl as i64, xl as i64);
    let mut v = Vec::with_capacity(4);
    for (yy, xx, wt) in
        [(yl, xl, (1.0 - ly) * (1.0 - lx)), (yl, xl + 1, (1.0 - ly) * lx), (yl + 1, xl, ly * (1.0 - lx)), (yl + 1, xl + 1, ly * lx)]
    {
        if yy >= 0 && xx >= 0 && yy < h as i64 && xx < w as i64 {
            v.push((yy as usize * w + xx as usize, wt));
        }
    }
    v
}

/// d(bilinear)/dy and d(bilinear)/dx at (y, x) (MXNet's coordinate weights).
fn coord_grad(im: &[f64], h: usize, w: usize, y: f64, x: f64) -> (f64, f64) {
    if y <= -1.0 || x <= -1.0 || y >= h as f64 || x >= w as f64 {
        return (0.0, 0.0);
    }
    let (yl, xl) = (y.floor(), x.floor());
    let (ly, lx) = (y - yl, x - xl);
    let (yl, xl) = (yl as i64, xl as i64);
    let at = |yy: i64, xx: i64| if yy >= 0 && xx >= 0 && yy < h as i64 && xx < w as i64 { im[yy as usize * w + xx as usize] } else { 0.0 };
    let (v1, v2, v3, v4) = (at(yl, xl), at(yl, xl + 1), at(yl + 1, xl), at(yl + 1, xl + 1));
    let gy = -(1.0 - lx) * v1 - lx * v2 + (1.0 - lx) * v3 + lx * v4;
    let gx = -(1.0 - ly) * v1 + (1.0 - ly) * v2 - ly * v3 + ly * v4;
    (gy, gx)
}

/// Sampling position of tap (i, j) at output (oy, ox) for image b, deformable
/// group q; also the mask value (1 without a mask).
#[allow(clippy::too_many_arguments)]
fn sample_pos(
    g: &Geom,
    off: &[f64],
    mask: Option<&[f64]>,
    b: usize,
    q: usize,
    i: usize,
    j: usize,
    oy: usize,
    ox: usize,
) -> (f64, f64, f64) {
    let k = i * g.kw + j;
    let plane = g.oh * g.ow;
    let pos = oy * g.ow + ox;
    let ob = (b * g.dg + q) * 2 * g.k();
    let dy = off[(ob + 2 * k) * plane + pos];
    let dx = off[(ob + 2 * k + 1) * plane + pos];
    let y = (oy * g.sh) as f64 - g.ph as f64 + (i * g.dh) as f64 + dy;
    let x = (ox * g.sw) as f64 - g.pw as f64 + (j * g.dw) as f64 + dx;
    let m = mask.map(|m| m[((b * g.dg + q) * g.k() + k) * plane + pos]).unwrap_or(1.0);
    (y, x, m)
}

/// The sampled columns of image b: `[c * K + k][oy * OW + ox]`.
fn columns(g: &Geom, data: &[f64], off: &[f64], mask: Option<&[f64]>, b: usize) -> Vec<f64> {
    let (k, plane, cpd) = (g.k(), g.oh * g.ow, g.c / g.dg);
    let mut col = vec![0f64; g.c * k * plane];
    for c in 0..g.c {
        let im = &data[(b * g.c + c) * g.h * g.w..][..g.h * g.w];
        for i in 0..g.kh {
            for j in 0..g.kw {
                for oy in 0..g.oh {
                    for ox in 0..g.ow {
                        let (y, x, m) = sample_pos(g, off, mask, b, c / cpd, i, j, oy, ox);
                        col[(c * k + i * g.kw + j) * plane + oy * g.ow + ox] = m * bilinear(im, g.h, g.w, y, x);
                    }
                }
            }
        }
    }
    col
}

struct Ins {
    data: Vec<f64>,
    off: Vec<f64>,
    mask: Option<Vec<f64>>,
    weight: Vec<f64>,
}

/// Reads data, offset, (mask,) weight from `blobs` starting at `first`.
fn read_ins(op: &str, blobs: &[super::Blob], first: usize) -> Ins {
    let m = modulated(op);
    let wi = first + if m { 3 } else { 2 };
    Ins {
        data: read_f64(&blobs[first]),
        off: read_f64(&blobs[first + 1]),
        mask: if m { Some(read_f64(&blobs[first + 2])) } else { None },
        weight: read_f64(&blobs[wi]),
    }
}

fn forward_compute(c: &mut OpCall) -> Result<()> {
    let op = c.op.name;
    let g = geom(op, c.params, &c.inputs[0].shape)?;
    let x = read_ins(op, c.inputs, 0);
    let bias = if c.params.bool("no_bias") { None } else { Some(read_f64(c.inputs.last().unwrap())) };
    let (k, plane, cg, fg) = (g.k(), g.oh * g.ow, g.cg(), g.fg());
    let mut out = vec![0f64; g.n * g.f * plane];
    for b in 0..g.n {
        let col = columns(&g, &x.data, &x.off, x.mask.as_deref(), b);
        for f in 0..g.f {
            let grp = f / fg;
            let o = &mut out[(b * g.f + f) * plane..][..plane];
            if let Some(bs) = &bias {
                o.iter_mut().for_each(|v| *v = bs[f]);
            }
            for r in 0..cg * k {
                let wv = x.weight[f * cg * k + r];
                if wv == 0.0 {
                    continue;
                }
                let crow = &col[(grp * cg * k + r) * plane..][..plane];
                for (ov, cv) in o.iter_mut().zip(crow) {
                    *ov += wv * cv;
                }
            }
        }
    }
    write_f64(&c.outputs[0], &out);
    Ok(())
}

/// Backward: `(ograd, data, offset, [mask,] weight)` → gradients of data, offset,
/// [mask,] weight and (without `no_bias`) bias.
fn backward_infer(a: &InferArgs) -> Out {
    let fwd = forward_name(a.op.name);
    let g = geom(fwd, a.params, a.shapes[1])?;
    check_shape(a.op.name, "output gradient", a.shapes[0], &Shape::from_slice(&[g.n, g.f, g.oh, g.ow]))?;
    let d = a.dtypes[1];
    let mut v: Vec<(Shape, DType)> = a.shapes[1..].iter().map(|s| (Shape::from_slice(s), d)).collect();
    if !a.params.bool("no_bias") {
        v.push((Shape::from_slice(&[g.f]), d));
    }
    Ok(v)
}

fn forward_name(backward: &str) -> &'static str {
    if modulated(backward) {
        "_contrib_ModulatedDeformableConvolution"
    } else {
        "_contrib_DeformableConvolution"
    }
}

fn backward_compute(c: &mut OpCall) -> Result<()> {
    let op = forward_name(c.op.name);
    let g = geom(op, c.params, &c.inputs[1].shape)?;
    let og = read_f64(&c.inputs[0]);
    let x = read_ins(op, c.inputs, 1);
    let mask = x.mask.as_deref();
    let (k, plane, cg, fg, cpd) = (g.k(), g.oh * g.ow, g.cg(), g.fg(), g.c / g.dg);
    let mut gdata = vec![0f64; x.data.len()];
    let mut goff = vec![0f64; x.off.len()];
    let mut gmask = vec![0f64; mask.map(|m| m.len()).unwrap_or(0)];
    let mut gw = vec![0f64; x.weight.len()];
    let mut gb = vec![0f64; g.f];
    for b in 0..g.n {
        let col = columns(&g, &x.data, &x.off, mask, b);
        // dcol = W^T dout (per group); dW += dout col^T; db += sum dout.
        let mut dcol = vec![0f64; g.c * k * plane];
        for f in 0..g.f {
            let grp = f / fg;
            let o = &og[(b * g.f + f) * plane..][..plane];
            gb[f] += o.iter().sum::<f64>();
            for r in 0..cg * k {
                let row = (grp * cg * k + r) * plane;
                let wv = x.weight[f * cg * k + r];
                let mut acc = 0.0;
                for p in 0..plane {
                    acc += o[p] * col[row + p];
                    dcol[row + p] += wv * o[p];
                }
                gw[f * cg * k + r] += acc;
            }
        }
        // Through the sampling: data (bilinear weights), offsets (coordinate
        // derivatives) and masks (the unmodulated samples).
        for ch in 0..g.c {
            let q = ch / cpd;
            let base = (b * g.c + ch) * g.h * g.w;
            let im = &x.data[base..base + g.h * g.w];
            for i in 0..g.kh {
                for j in 0..g.kw {
                    let kk = i * g.kw + j;
                    for oy in 0..g.oh {
                        for ox in 0..g.ow {
                            let pos = oy * g.ow + ox;
                            let d = dcol[(ch * k + kk) * plane + pos];
                            if d == 0.0 {
                                continue;
                            }
                            let (y, xx, m) = sample_pos(&g, &x.off, mask, b, q, i, j, oy, ox);
                            for (idx, wt) in neighbours(g.h, g.w, y, xx) {
                                gdata[base + idx] += wt * d * m;
                            }
                            let (gy, gx) = coord_grad(im, g.h, g.w, y, xx);
                            let ob = (b * g.dg + q) * 2 * k;
                            goff[(ob + 2 * kk) * plane + pos] += gy * d * m;
                            goff[(ob + 2 * kk + 1) * plane + pos] += gx * d * m;
                            if mask.is_some() {
                                gmask[((b * g.dg + q) * k + kk) * plane + pos] += d * bilinear(im, g.h, g.w, y, xx);
                            }
                        }
                    }
                }
            }
        }
    }
    let mut o = 0;
    write_f64(&c.outputs[o], &gdata);
    o += 1;
    write_f64(&c.outputs[o], &goff);
    o += 1;
    if mask.is_some() {
        write_f64(&c.outputs[o], &gmask);
        o += 1;
    }
    write_f64(&c.outputs[o], &gw);
    if let Some(bo) = c.outputs.get(o + 1) {
        write_f64(bo, &gb);
    }
    Ok(())
}

fn grad_with(bwd: &str, p: &Params, i: &[NDArray], g: &[NDArray]) -> Grads {
    let og = g.first().ok_or_else(|| Error::op(forward_name(bwd), "gradient called without an output gradient"))?;
    let attrs: Vec<(&str, Value)> = p.to_strings().into_iter().map(|(n, v)| (n, Value::Str(v))).collect();
    let n_main = if modulated(bwd) { 4 } else { 3 };
    let mut ins = vec![og.clone()];
    ins.extend(i[..n_main].iter().cloned());
    Ok(super::call(bwd, &ins, &attrs)?.into_iter().map(Some).collect())
}

fn g_v1(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    grad_with("_backward_contrib_DeformableConvolution", p, i, g)
}
fn g_v2(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    grad_with("_backward_contrib_ModulatedDeformableConvolution", p, i, g)
}

fn bwd_outputs_v1(p: &Params) -> usize {
    if p.bool("no_bias") {
        3
    } else {
        4
    }
}
fn bwd_outputs_v2(p: &Params) -> usize {
    bwd_outputs_v1(p) + 1
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "_contrib_DeformableConvolution",
            "Compute 2-D deformable convolution on 4-D input (Deformable Convolutional Networks, Dai et al. 2017): each kernel tap samples the input bilinearly at its regular position moved by the learnt `offset` (N, num_deformable_group*2*kh*kw, OH, OW).",
            Arity::Dynamic { all: V1_ALL, select: v1_select },
            PARAMS,
            infer,
            forward_compute,
        )
        .fill(fill_v1)
        .grad(g_v1),
    );
    r.add(
        OpDef::new(
            "_backward_contrib_DeformableConvolution",
            "Gradient of DeformableConvolution: `(ograd, data, offset, weight)` to the gradients of data, offset, weight and bias.",
            Arity::Fixed(&["ograd", "data", "offset", "weight"]),
            PARAMS,
            backward_infer,
            backward_compute,
        )
        .outputs(bwd_outputs_v1),
    );
    r.add(
        OpDef::new(
            "_contrib_ModulatedDeformableConvolution",
            "Compute 2-D modulated deformable convolution on 4-D input (Deformable ConvNets v2, Zhu et al. 2018): each kernel tap samples the input bilinearly at its regular position moved by the learnt `offset` (N, num_deformable_group*2*kh*kw, OH, OW) and scales the sample by `mask` (N, num_deformable_group*kh*kw, OH, OW).",
            Arity::Dynamic { all: V2_ALL, select: v2_select },
            PARAMS,
            infer,
            forward_compute,
        )
        .fill(fill_v2)
        .grad(g_v2),
    );
    r.add(
        OpDef::new(
            "_backward_contrib_ModulatedDeformableConvolution",
            "Gradient of ModulatedDeformableConvolution: `(ograd, data, offset, mask, weight)` to the gradients of data, offset, mask, weight and bias.",
            Arity::Fixed(&["ograd", "data", "offset", "mask", "weight"]),
            PARAMS,
            backward_infer,
            backward_compute,
        )
        .outputs(bwd_outputs_v2),
    );
}
