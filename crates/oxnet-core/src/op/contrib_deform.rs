//! Deformable 2-D convolutions of MXNet's contrib namespace:
//! `_contrib_DeformableConvolution` (v1: learnt offsets) and
//! `_contrib_ModulatedDeformableConvolution` (v2: learnt offsets and modulation
//! masks), each with its backward op. Every kernel tap of output position `(y, x)`
//! samples the input bilinearly at `(y*stride - pad + i*dilate + dy, ...)` (v1 and
//! v2 differ at the borders: see `Tap`) where
//! `(dy, dx)` come from `offset` (layout `(N, dg*2*kh*kw, OH, OW)`, `dy` first) and,
//! for v2, multiplies the sample by `mask` (`(N, dg*kh*kw, OH, OW)`). The sampled
//! columns are then multiplied by the weight as in an im2col convolution. The
//! gradients (data, offset, mask, weight, bias) follow MXNet 1.9.1's
//! `deformable_im2col`/`col2im`/`col2im_coord` definitions. The kernels compute in
//! the element type (f32 for the half types): per image, the bilinear taps are built
//! once per deformable group, the columns are sampled one channel per task, and the
//! products with the weight run on the project's GEMM.

use super::util::{read_as, write_as, Real};
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::cpu::gemm::gemm;
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

/// The bilinear sampling of one kernel tap at one output position (shared by every
/// channel of a deformable group): the four neighbours' offsets in the plane (0 for
/// a neighbour outside, whose weights are 0), their interpolation weights, their
/// weights in d(sample)/dy and d(sample)/dx (MXNet's coordinate weights), and the
/// modulation (1 without a mask). With a mask (v2, DCNv2's sampling) a point
/// outside (-1, H) x (-1, W) samples 0 and each neighbour outside counts 0; without
/// (v1) see [`Tap::new_v1`].
#[derive(Clone, Copy)]
struct Tap<T> {
    idx: [u32; 4],
    w: [T; 4],
    gy: [T; 4],
    gx: [T; 4],
    m: T,
}

impl<T: Real> Tap<T> {
    fn new(h: usize, w: usize, y: f64, x: f64, m: T) -> Self {
        let z = T::of(0.0);
        let mut t = Tap { idx: [0; 4], w: [z; 4], gy: [z; 4], gx: [z; 4], m };
        if y <= -1.0 || x <= -1.0 || y >= h as f64 || x >= w as f64 {
            return t;
        }
        let (yl, xl) = (y.floor(), x.floor());
        let (ly, lx) = (y - yl, x - xl);
        let (hy, hx) = (1.0 - ly, 1.0 - lx);
        let (yl, xl) = (yl as i64, xl as i64);
        let corners = [
            (yl, xl, hy * hx, -hx, -hy),
            (yl, xl + 1, hy * lx, -lx, hy),
            (yl + 1, xl, ly * hx, hx, -ly),
            (yl + 1, xl + 1, ly * lx, lx, ly),
        ];
        for (n, (yy, xx, wt, gy, gx)) in corners.into_iter().enumerate() {
            if yy >= 0 && xx >= 0 && yy < h as i64 && xx < w as i64 {
                t.idx[n] = (yy as usize * w + xx as usize) as u32;
                t.w[n] = T::of(wt);
                t.gy[n] = T::of(gy);
                t.gx[n] = T::of(gx);
            }
        }
        t
    }

    /// DeformableConvolution's (v1) sampling, as MXNet 1.9.1's CPU kernel does it:
    /// a point outside [0, H) x [0, W) samples 0; a point in the last row (column)
    /// band [H-1, H) is clamped onto the last row (column), where its derivative
    /// along that axis is 0.
    fn new_v1(h: usize, w: usize, y: f64, x: f64) -> Self {
        let z = T::of(0.0);
        let mut t = Tap { idx: [0; 4], w: [z; 4], gy: [z; 4], gx: [z; 4], m: T::of(1.0) };
        if !(y >= 0.0 && x >= 0.0 && y < h as f64 && x < w as f64) {
            return t;
        }
        let (mut yl, mut xl) = (y as usize, x as usize);
        let (yh, xh, ly, lx, ycl, xcl);
        if yl >= h - 1 {
            (yl, yh, ly, ycl) = (h - 1, h - 1, 0.0, true);
        } else {
            (yh, ly, ycl) = (yl + 1, y - yl as f64, false);
        }
        if xl >= w - 1 {
            (xl, xh, lx, xcl) = (w - 1, w - 1, 0.0, true);
        } else {
            (xh, lx, xcl) = (xl + 1, x - xl as f64, false);
        }
        let (hy, hx) = (1.0 - ly, 1.0 - lx);
        let corners = [(yl, xl, hy * hx, -hx, -hy), (yl, xh, hy * lx, -lx, hy), (yh, xl, ly * hx, hx, -ly), (yh, xh, ly * lx, lx, ly)];
        for (n, (yy, xx, wt, gy, gx)) in corners.into_iter().enumerate() {
            t.idx[n] = (yy * w + xx) as u32;
            t.w[n] = T::of(wt);
            t.gy[n] = if ycl { z } else { T::of(gy) };
            t.gx[n] = if xcl { z } else { T::of(gx) };
        }
        t
    }

    #[inline(always)]
    fn sample(&self, im: &[T]) -> T {
        let i = &self.idx;
        self.w[0] * im[i[0] as usize] + self.w[1] * im[i[1] as usize] + self.w[2] * im[i[2] as usize] + self.w[3] * im[i[3] as usize]
    }
}

/// The taps of image `b`: `[(q * K + k) * OH * OW + oy * OW + ox]` for deformable
/// group `q` and kernel tap `k = i * KW + j`, built in parallel.
fn taps<T: Real>(g: &Geom, off: &[T], mask: Option<&[T]>, b: usize) -> Vec<Tap<T>> {
    use rayon::prelude::*;
    let (k, plane) = (g.k(), g.oh * g.ow);
    let z = T::of(0.0);
    let mut t = vec![Tap { idx: [0; 4], w: [z; 4], gy: [z; 4], gx: [z; 4], m: z }; g.dg * k * plane];
    crate::engine::install(|| {
        t.par_chunks_mut(plane).enumerate().for_each(|(row, tr)| {
            let (q, kk) = (row / k, row % k);
            let (i, j) = (kk / g.kw, kk % g.kw);
            let ob = (b * g.dg + q) * 2 * k;
            let (offy, offx) = (&off[(ob + 2 * kk) * plane..][..plane], &off[(ob + 2 * kk + 1) * plane..][..plane]);
            let mrow = mask.map(|m| &m[((b * g.dg + q) * k + kk) * plane..][..plane]);
            for oy in 0..g.oh {
                let y0 = (oy * g.sh) as f64 - g.ph as f64 + (i * g.dh) as f64;
                for ox in 0..g.ow {
                    let pos = oy * g.ow + ox;
                    let x0 = (ox * g.sw) as f64 - g.pw as f64 + (j * g.dw) as f64;
                    let (y, x) = (y0 + offy[pos].get(), x0 + offx[pos].get());
                    tr[pos] = match mrow {
                        Some(m) => Tap::new(g.h, g.w, y, x, m[pos]),
                        None => Tap::new_v1(g.h, g.w, y, x),
                    };
                }
            }
        })
    });
    t
}

/// The sampled columns of image b, `[c * K + k][oy * OW + ox]` (deformable im2col),
/// one channel per task.
fn columns<T: Real>(g: &Geom, data: &[T], taps: &[Tap<T>], b: usize) -> Vec<T> {
    use rayon::prelude::*;
    let (k, plane, cpd, hw) = (g.k(), g.oh * g.ow, g.c / g.dg, g.h * g.w);
    let mut col = vec![T::of(0.0); g.c * k * plane];
    crate::engine::install(|| {
        col.par_chunks_mut(k * plane).enumerate().for_each(|(c, cc)| {
            let im = &data[(b * g.c + c) * hw..][..hw];
            let tq = &taps[(c / cpd) * k * plane..][..k * plane];
            for (v, t) in cc.iter_mut().zip(tq) {
                *v = t.m * t.sample(im);
            }
        })
    });
    col
}

/// data, offset, (mask,) weight of a call, starting at input `first`.
struct Ins<'a, T: Clone> {
    data: std::borrow::Cow<'a, [T]>,
    off: std::borrow::Cow<'a, [T]>,
    mask: Option<std::borrow::Cow<'a, [T]>>,
    weight: std::borrow::Cow<'a, [T]>,
}

fn read_ins<'a, T: Real>(op: &str, blobs: &'a [super::Blob], first: usize) -> Ins<'a, T> {
    let m = modulated(op);
    let wi = first + if m { 3 } else { 2 };
    Ins {
        data: read_as(&blobs[first]),
        off: read_as(&blobs[first + 1]),
        mask: if m { Some(read_as(&blobs[first + 2])) } else { None },
        weight: read_as(&blobs[wi]),
    }
}

fn forward_compute(c: &mut OpCall) -> Result<()> {
    if c.inputs[0].dtype == DType::F64 {
        forward_kernel::<f64>(c)
    } else {
        forward_kernel::<f32>(c)
    }
}

/// Forward, per image: the taps, the sampled columns, then one GEMM per group
/// (`out[grp] = W[grp] · col[grp]`) on top of the bias.
fn forward_kernel<T: Real>(c: &OpCall) -> Result<()> {
    let op = c.op.name;
    let g = geom(op, c.params, &c.inputs[0].shape)?;
    let x = read_ins::<T>(op, c.inputs, 0);
    let bias = if c.params.bool("no_bias") { None } else { Some(read_as::<T>(c.inputs.last().unwrap())) };
    let (k, plane, cg, fg) = (g.k(), g.oh * g.ow, g.cg(), g.fg());
    write_as::<T>(&c.outputs[0], |out| {
        for b in 0..g.n {
            let t = taps(&g, &x.off, x.mask.as_deref(), b);
            let col = columns(&g, &x.data, &t, b);
            drop(t);
            let ob = &mut out[b * g.f * plane..(b + 1) * g.f * plane];
            match &bias {
                Some(bs) => ob.chunks_mut(plane).zip(bs.iter()).for_each(|(o, &v)| o.iter_mut().for_each(|e| *e = v)),
                None => ob.iter_mut().for_each(|e| *e = T::of(0.0)),
            }
            for grp in 0..g.groups {
                // SAFETY: weight is (F, cg*K), col (C*K, P), the output block (F, P); the
                // output does not overlap the inputs.
                unsafe {
                    gemm::<T>(
                        fg,
                        plane,
                        cg * k,
                        T::of(1.0),
                        x.weight.as_ptr().add(grp * fg * cg * k),
                        cg * k,
                        false,
                        col.as_ptr().add(grp * cg * k * plane),
                        plane,
                        false,
                        T::of(1.0),
                        ob.as_mut_ptr().add(grp * fg * plane),
                        plane,
                    )
                }
            }
        }
    });
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

/// One (deformable group, tap) row of an image's offset gradient: its index, the
/// `dy` and `dx` rows together, and (v2) the mask gradient's row.
type CoordRow<'a, T> = (usize, &'a mut [T], Option<&'a mut [T]>);

fn backward_compute(c: &mut OpCall) -> Result<()> {
    if c.inputs[1].dtype == DType::F64 {
        backward_kernel::<f64>(c)
    } else {
        backward_kernel::<f32>(c)
    }
}

/// Backward, per image: the taps and columns again; `dW += dout · colᵀ`,
/// `db += Σ dout`, `dcol = Wᵀ · dout` (GEMMs per group); then through the sampling:
/// the data gradient one channel per task (each owns its plane), the offset and mask
/// gradients one (deformable group, tap) row per task (summing over the group's
/// channels).
fn backward_kernel<T: Real>(c: &OpCall) -> Result<()> {
    use rayon::prelude::*;
    let op = forward_name(c.op.name);
    let g = geom(op, c.params, &c.inputs[1].shape)?;
    let og = read_as::<T>(&c.inputs[0]);
    let x = read_ins::<T>(op, c.inputs, 1);
    let mask = x.mask.as_deref();
    let (k, plane, cg, fg, cpd, hw) = (g.k(), g.oh * g.ow, g.cg(), g.fg(), g.c / g.dg, g.h * g.w);
    let z = T::of(0.0);
    let mut gdata = vec![z; x.data.len()];
    let mut goff = vec![z; x.off.len()];
    let mut gmask = vec![z; mask.map(|m| m.len()).unwrap_or(0)];
    let mut gw = vec![z; x.weight.len()];
    let mut gb = vec![z; g.f];
    let mut dcol = vec![z; g.c * k * plane];
    for b in 0..g.n {
        let t = taps(&g, &x.off, mask, b);
        let col = columns(&g, &x.data, &t, b);
        let ogb = &og[b * g.f * plane..(b + 1) * g.f * plane];
        for (f, o) in ogb.chunks(plane).enumerate() {
            gb[f] += o.iter().copied().sum::<T>();
        }
        for grp in 0..g.groups {
            // SAFETY: dout block (F, P), col (C*K, P), weight and its gradient
            // (F, cg*K), dcol (C*K, P); outputs do not overlap the inputs.
            unsafe {
                gemm::<T>(
                    fg,
                    cg * k,
                    plane,
                    T::of(1.0),
                    ogb.as_ptr().add(grp * fg * plane),
                    plane,
                    false,
                    col.as_ptr().add(grp * cg * k * plane),
                    plane,
                    true,
                    if b == 0 { z } else { T::of(1.0) },
                    gw.as_mut_ptr().add(grp * fg * cg * k),
                    cg * k,
                );
                gemm::<T>(
                    cg * k,
                    plane,
                    fg,
                    T::of(1.0),
                    x.weight.as_ptr().add(grp * fg * cg * k),
                    cg * k,
                    true,
                    ogb.as_ptr().add(grp * fg * plane),
                    plane,
                    false,
                    z,
                    dcol.as_mut_ptr().add(grp * cg * k * plane),
                    plane,
                );
            }
        }
        drop(col);
        let (data, dcol) = (&x.data, &dcol);
        crate::engine::install(|| {
            gdata[b * g.c * hw..(b + 1) * g.c * hw].par_chunks_mut(hw).enumerate().for_each(|(ch, gd)| {
                let tq = &t[(ch / cpd) * k * plane..][..k * plane];
                let dc = &dcol[ch * k * plane..][..k * plane];
                for (tp, &d) in tq.iter().zip(dc) {
                    let d = d * tp.m;
                    for n in 0..4 {
                        gd[tp.idx[n] as usize] += tp.w[n] * d;
                    }
                }
            });
            let goff_b = &mut goff[b * g.dg * 2 * k * plane..(b + 1) * g.dg * 2 * k * plane];
            let mut gmask_rows: Vec<&mut [T]> = if mask.is_some() {
                gmask[b * g.dg * k * plane..(b + 1) * g.dg * k * plane].chunks_mut(plane).collect()
            } else {
                Vec::new()
            };
            let mut rows: Vec<CoordRow<T>> = Vec::with_capacity(g.dg * k);
            let mut mrows = gmask_rows.drain(..);
            for (row, pair) in goff_b.chunks_mut(2 * plane).enumerate() {
                rows.push((row, pair, mrows.next()));
            }
            rows.into_par_iter().for_each(|(row, pair, gm)| {
                let q = row / k;
                let tr = &t[row * plane..][..plane];
                let (gy_row, gx_row) = pair.split_at_mut(plane);
                let mut gm = gm;
                for ch in q * cpd..(q + 1) * cpd {
                    let im = &data[(b * g.c + ch) * hw..][..hw];
                    let dc = &dcol[(ch * k + row % k) * plane..][..plane];
                    for p in 0..plane {
                        let (tp, d) = (&tr[p], dc[p]);
                        let i = &tp.idx;
                        let v = [im[i[0] as usize], im[i[1] as usize], im[i[2] as usize], im[i[3] as usize]];
                        let dm = d * tp.m;
                        gy_row[p] += dm * (tp.gy[0] * v[0] + tp.gy[1] * v[1] + tp.gy[2] * v[2] + tp.gy[3] * v[3]);
                        gx_row[p] += dm * (tp.gx[0] * v[0] + tp.gx[1] * v[1] + tp.gx[2] * v[2] + tp.gx[3] * v[3]);
                        if let Some(gm) = gm.as_deref_mut() {
                            gm[p] += d * (tp.w[0] * v[0] + tp.w[1] * v[1] + tp.w[2] * v[2] + tp.w[3] * v[3]);
                        }
                    }
                }
            });
        });
    }
    let mut o = 0;
    write_as::<T>(&c.outputs[o], |d| d.copy_from_slice(&gdata));
    o += 1;
    write_as::<T>(&c.outputs[o], |d| d.copy_from_slice(&goff));
    o += 1;
    if mask.is_some() {
        write_as::<T>(&c.outputs[o], |d| d.copy_from_slice(&gmask));
        o += 1;
    }
    write_as::<T>(&c.outputs[o], |d| d.copy_from_slice(&gw));
    if let Some(bo) = c.outputs.get(o + 1) {
        write_as::<T>(bo, |d| d.copy_from_slice(&gb));
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
