//! Spatial transformer ops: `GridGenerator` (affine and warp grids),
//! `BilinearSampler` and `SpatialTransformer` (an affine grid sampled bilinearly),
//! with their gradients (`_backward_GridGenerator`, `_backward_BilinearSampler`,
//! `_backward_SpatialTransformer`).
//!
//! As in MXNet 1.9.1: a sampling grid `(N, 2, H', W')` holds normalised source
//! coordinates in `[-1, 1]` (x in channel 0, y in channel 1); the sample at
//! `(x, y)` reads the source pixel `((x + 1) * (W - 1) / 2, (y + 1) * (H - 1) / 2)`
//! bilinearly, neighbours outside the source counting as zero. The target grid of
//! an affine transform is `x_t = -1 + 2 j / (W' - 1)`, `y_t = -1 + 2 i / (H' - 1)`.
//! The kernels compute in f64 and store in the element type.

use super::util::{read_f64, write_f64};
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};

type Out = Result<Vec<(Shape, DType)>>;
type Grads = Result<Vec<Option<NDArray>>>;

const GRID_PARAMS: &[ParamSpec] = &[
    ParamSpec::choice(
        "transform_type",
        &["affine", "warp"],
        None,
        "The type of transformation. For `affine`, input data should be an affine matrix of size (batch, 6). For `warp`, input data should be an optical flow of size (batch, 2, h, w).",
    ),
    ParamSpec::new(
        "target_shape",
        PType::Tuple,
        Some("(0, 0)"),
        "Specifies the output shape (H, W). This is required if transformation type is `affine`. If transformation type is `warp`, this parameter is ignored.",
    ),
];

const SAMPLER_PARAMS: &[ParamSpec] =
    &[ParamSpec::new("cudnn_off", PType::Str, Some("None"), "whether to turn cudnn off (no effect on the CPU)")];

const STN_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("target_shape", PType::Tuple, Some("(0, 0)"), "output shape(h, w) of spatial transformer: (y, x)"),
    ParamSpec::choice("transform_type", &["affine"], None, "transformation type"),
    ParamSpec::choice("sampler_type", &["bilinear"], None, "sampling type"),
    ParamSpec::new("cudnn_off", PType::Str, Some("None"), "whether to turn cudnn off (no effect on the CPU)"),
];

fn float_inputs(a: &InferArgs) -> Result<DType> {
    let d = a.dtypes[0];
    for (i, t) in a.dtypes.iter().enumerate() {
        if !t.is_float() || *t != d {
            return Err(a.err(format!("input {i} must be a floating-point array of input 0's dtype {}, got {}", d.name(), t.name())));
        }
    }
    Ok(d)
}

fn target(op: &str, p: &Params) -> Result<(usize, usize)> {
    let t = p.tuple("target_shape");
    if t.len() != 2 || t[0] <= 0 || t[1] <= 0 {
        return Err(Error::op(op, format!("target_shape must be two positive sizes (H, W), got {t:?}")));
    }
    Ok((t[0] as usize, t[1] as usize))
}

/// Normalised target coordinate `k` of `n`: `-1 + 2k/(n-1)`, from -1 to 1.
fn norm(k: usize, n: usize) -> f64 {
    -1.0 + k as f64 * 2.0 / (n as f64 - 1.0)
}

/// The affine grid `(N, 2, h, w)` of the transforms `theta` `(N, 6)`.
fn affine_grid(theta: &[f64], nb: usize, h: usize, w: usize) -> Vec<f64> {
    let plane = h * w;
    let mut out = vec![0f64; nb * 2 * plane];
    for n in 0..nb {
        let t = &theta[n * 6..n * 6 + 6];
        for i in 0..h {
            for j in 0..w {
                let (x, y) = (norm(j, w), norm(i, h));
                out[(n * 2) * plane + i * w + j] = t[0] * x + t[1] * y + t[2];
                out[(n * 2 + 1) * plane + i * w + j] = t[3] * x + t[4] * y + t[5];
            }
        }
    }
    out
}

/// Gradient of [`affine_grid`] with respect to `theta`.
fn affine_grid_backward(og: &[f64], nb: usize, h: usize, w: usize) -> Vec<f64> {
    let plane = h * w;
    let mut g = vec![0f64; nb * 6];
    for n in 0..nb {
        for i in 0..h {
            for j in 0..w {
                let (x, y) = (norm(j, w), norm(i, h));
                let gx = og[(n * 2) * plane + i * w + j];
                let gy = og[(n * 2 + 1) * plane + i * w + j];
                let r = &mut g[n * 6..n * 6 + 6];
                r[0] += gx * x;
                r[1] += gx * y;
                r[2] += gx;
                r[3] += gy * x;
                r[4] += gy * y;
                r[5] += gy;
            }
        }
    }
    g
}

// ---- GridGenerator ------------------------------------------------------------------

fn grid_infer(a: &InferArgs) -> Out {
    let d = float_inputs(a)?;
    let s = a.shapes[0];
    if a.params.str("transform_type") == "affine" {
        if s.len() != 2 || s[1] != 6 {
            return Err(a.err(format!("an affine transform needs data of shape (batch, 6), got {}", fmt_shape(s))));
        }
        let (h, w) = target(a.op.name, a.params)?;
        Ok(vec![(Shape::from_slice(&[s[0], 2, h, w]), d)])
    } else {
        if s.len() != 4 || s[1] != 2 {
            return Err(a.err(format!("a warp transform needs a flow of shape (batch, 2, h, w), got {}", fmt_shape(s))));
        }
        Ok(vec![(Shape::from_slice(s), d)])
    }
}

fn grid_compute(c: &mut OpCall) -> Result<()> {
    let x = read_f64(&c.inputs[0]);
    let s = &c.outputs[0].shape;
    let (nb, h, w) = (s[0], s[2], s[3]);
    let out = if c.params.str("transform_type") == "affine" {
        affine_grid(&x, nb, h, w)
    } else {
        let plane = h * w;
        let (sx, sy) = ((w as f64 - 1.0) / 2.0, (h as f64 - 1.0) / 2.0);
        let mut out = vec![0f64; x.len()];
        for n in 0..nb {
            for i in 0..h {
                for j in 0..w {
                    let k = i * w + j;
                    out[(n * 2) * plane + k] = (j as f64 + x[(n * 2) * plane + k]) / sx - 1.0;
                    out[(n * 2 + 1) * plane + k] = (i as f64 + x[(n * 2 + 1) * plane + k]) / sy - 1.0;
                }
            }
        }
        out
    };
    write_f64(&c.outputs[0], &out);
    Ok(())
}

/// `(ograd, data)` → the gradient of data.
fn grid_backward_infer(a: &InferArgs) -> Out {
    Ok(vec![(Shape::from_slice(a.shapes[1]), a.dtypes[1])])
}

fn grid_backward_compute(c: &mut OpCall) -> Result<()> {
    let og = read_f64(&c.inputs[0]);
    let s = &c.inputs[0].shape;
    let (nb, h, w) = (s[0], s[2], s[3]);
    let g = if c.params.str("transform_type") == "affine" {
        affine_grid_backward(&og, nb, h, w)
    } else {
        let plane = h * w;
        let (sx, sy) = ((w as f64 - 1.0) / 2.0, (h as f64 - 1.0) / 2.0);
        let mut g = og.clone();
        for n in 0..nb {
            for k in 0..plane {
                g[(n * 2) * plane + k] /= sx;
                g[(n * 2 + 1) * plane + k] /= sy;
            }
        }
        g
    };
    write_f64(&c.outputs[0], &g);
    Ok(())
}

// ---- bilinear sampling --------------------------------------------------------------

/// Sizes of a sampling: batch, channels, source and target planes.
#[derive(Clone, Copy)]
struct Geom {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    oh: usize,
    ow: usize,
}

/// Source position of grid point `(n, k)` (k in the target plane).
fn source_pos(g: &Geom, grid: &[f64], n: usize, k: usize) -> (f64, f64) {
    let plane = g.oh * g.ow;
    let x = (grid[(n * 2) * plane + k] + 1.0) * (g.w as f64 - 1.0) / 2.0;
    let y = (grid[(n * 2 + 1) * plane + k] + 1.0) * (g.h as f64 - 1.0) / 2.0;
    (x, y)
}

/// The four neighbours of `(x, y)`: `(y0, x0)` top left and the weights.
fn corners(x: f64, y: f64) -> (i64, i64, f64, f64) {
    let (y0, x0) = (y.floor(), x.floor());
    (y0 as i64, x0 as i64, 1.0 - (y - y0), 1.0 - (x - x0))
}

fn pixel(im: &[f64], g: &Geom, y: i64, x: i64) -> f64 {
    if y >= 0 && x >= 0 && (y as usize) < g.h && (x as usize) < g.w {
        im[y as usize * g.w + x as usize]
    } else {
        0.0
    }
}

fn sample_forward(g: &Geom, data: &[f64], grid: &[f64]) -> Vec<f64> {
    let (plane, iplane) = (g.oh * g.ow, g.h * g.w);
    let mut out = vec![0f64; g.n * g.c * plane];
    for n in 0..g.n {
        for k in 0..plane {
            let (x, y) = source_pos(g, grid, n, k);
            let (y0, x0, wy, wx) = corners(x, y);
            for ch in 0..g.c {
                let im = &data[(n * g.c + ch) * iplane..][..iplane];
                out[(n * g.c + ch) * plane + k] = wy * wx * pixel(im, g, y0, x0)
                    + wy * (1.0 - wx) * pixel(im, g, y0, x0 + 1)
                    + (1.0 - wy) * wx * pixel(im, g, y0 + 1, x0)
                    + (1.0 - wy) * (1.0 - wx) * pixel(im, g, y0 + 1, x0 + 1);
            }
        }
    }
    out
}

/// Gradients of [`sample_forward`]: data and grid.
fn sample_backward(g: &Geom, og: &[f64], data: &[f64], grid: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let (plane, iplane) = (g.oh * g.ow, g.h * g.w);
    let mut gdata = vec![0f64; data.len()];
    let mut ggrid = vec![0f64; grid.len()];
    for n in 0..g.n {
        for k in 0..plane {
            let (x, y) = source_pos(g, grid, n, k);
            let (y0, x0, wy, wx) = corners(x, y);
            let (mut gy, mut gx) = (0.0, 0.0);
            for ch in 0..g.c {
                let base = (n * g.c + ch) * iplane;
                let im = &data[base..base + iplane];
                let o = og[(n * g.c + ch) * plane + k];
                let (tl, tr) = (pixel(im, g, y0, x0), pixel(im, g, y0, x0 + 1));
                let (bl, br) = (pixel(im, g, y0 + 1, x0), pixel(im, g, y0 + 1, x0 + 1));
                for (yy, xx, wt) in [
                    (y0, x0, wy * wx),
                    (y0, x0 + 1, wy * (1.0 - wx)),
                    (y0 + 1, x0, (1.0 - wy) * wx),
                    (y0 + 1, x0 + 1, (1.0 - wy) * (1.0 - wx)),
                ] {
                    if yy >= 0 && xx >= 0 && (yy as usize) < g.h && (xx as usize) < g.w {
                        gdata[base + yy as usize * g.w + xx as usize] += o * wt;
                    }
                }
                // d(wy)/dy = d(wx)/dx = -1.
                gy += o * (-(wx * tl + (1.0 - wx) * tr) + (wx * bl + (1.0 - wx) * br));
                gx += o * (-(wy * tl + (1.0 - wy) * bl) + (wy * tr + (1.0 - wy) * br));
            }
            ggrid[(n * 2) * plane + k] = gx * (g.w as f64 - 1.0) / 2.0;
            ggrid[(n * 2 + 1) * plane + k] = gy * (g.h as f64 - 1.0) / 2.0;
        }
    }
    (gdata, ggrid)
}

fn check_data(op: &str, s: &[usize]) -> Result<()> {
    if s.len() != 4 {
        return Err(Error::op(op, format!("data must be 4-D (batch, channel, height, width), got {}", fmt_shape(s))));
    }
    Ok(())
}

fn sampler_infer(a: &InferArgs) -> Out {
    let d = float_inputs(a)?;
    let (s, gs) = (a.shapes[0], a.shapes[1]);
    check_data(a.op.name, s)?;
    if gs.len() != 4 || gs[0] != s[0] || gs[1] != 2 {
        return Err(a.err(format!("grid must have shape ({}, 2, H, W) for data {}, got {}", s[0], fmt_shape(s), fmt_shape(gs))));
    }
    Ok(vec![(Shape::from_slice(&[s[0], s[1], gs[2], gs[3]]), d)])
}

fn sampler_geom(data: &[usize], grid: &[usize]) -> Geom {
    Geom { n: data[0], c: data[1], h: data[2], w: data[3], oh: grid[2], ow: grid[3] }
}

fn sampler_compute(c: &mut OpCall) -> Result<()> {
    let g = sampler_geom(&c.inputs[0].shape, &c.inputs[1].shape);
    let out = sample_forward(&g, &read_f64(&c.inputs[0]), &read_f64(&c.inputs[1]));
    write_f64(&c.outputs[0], &out);
    Ok(())
}

/// `(ograd, data, grid)` → gradients of data and grid.
fn sampler_backward_infer(a: &InferArgs) -> Out {
    let d = a.dtypes[1];
    Ok(vec![(Shape::from_slice(a.shapes[1]), d), (Shape::from_slice(a.shapes[2]), d)])
}

fn sampler_backward_compute(c: &mut OpCall) -> Result<()> {
    let g = sampler_geom(&c.inputs[1].shape, &c.inputs[2].shape);
    let (gd, gg) = sample_backward(&g, &read_f64(&c.inputs[0]), &read_f64(&c.inputs[1]), &read_f64(&c.inputs[2]));
    write_f64(&c.outputs[0], &gd);
    write_f64(&c.outputs[1], &gg);
    Ok(())
}

// ---- SpatialTransformer -------------------------------------------------------------

fn stn_infer(a: &InferArgs) -> Out {
    let d = float_inputs(a)?;
    let (s, l) = (a.shapes[0], a.shapes[1]);
    check_data(a.op.name, s)?;
    if l.len() != 2 || l[0] != s[0] || l[1] != 6 {
        return Err(a.err(format!("loc must have shape ({}, 6), got {}", s[0], fmt_shape(l))));
    }
    let (h, w) = target(a.op.name, a.params)?;
    Ok(vec![(Shape::from_slice(&[s[0], s[1], h, w]), d)])
}

/// `loc` is `(batch, 6)` for the data's batch.
fn stn_fill(_: &Params, s: &mut [Option<Shape>]) -> Result<()> {
    if let (Some(d), None) = (&s[0], &s[1]) {
        if !d.is_empty() {
            s[1] = Some(Shape::from_slice(&[d[0], 6]));
        }
    }
    Ok(())
}

fn stn_geom(op: &str, p: &Params, data: &[usize]) -> Result<Geom> {
    let (oh, ow) = target(op, p)?;
    Ok(Geom { n: data[0], c: data[1], h: data[2], w: data[3], oh, ow })
}

fn stn_compute(c: &mut OpCall) -> Result<()> {
    let g = stn_geom(c.op.name, c.params, &c.inputs[0].shape)?;
    let grid = affine_grid(&read_f64(&c.inputs[1]), g.n, g.oh, g.ow);
    let out = sample_forward(&g, &read_f64(&c.inputs[0]), &grid);
    write_f64(&c.outputs[0], &out);
    Ok(())
}

/// `(ograd, data, loc)` → gradients of data and loc.
fn stn_backward_compute(c: &mut OpCall) -> Result<()> {
    let g = stn_geom("SpatialTransformer", c.params, &c.inputs[1].shape)?;
    let grid = affine_grid(&read_f64(&c.inputs[2]), g.n, g.oh, g.ow);
    let (gd, gg) = sample_backward(&g, &read_f64(&c.inputs[0]), &read_f64(&c.inputs[1]), &grid);
    write_f64(&c.outputs[0], &gd);
    write_f64(&c.outputs[1], &affine_grid_backward(&gg, g.n, g.oh, g.ow));
    Ok(())
}

// ---- gradients ----------------------------------------------------------------------

fn grad_with(fwd: &str, bwd: &str, p: &Params, i: &[NDArray], g: &[NDArray]) -> Grads {
    let og = g.first().ok_or_else(|| Error::op(fwd, "gradient called without an output gradient"))?;
    let attrs: Vec<(&str, Value)> = p.to_strings().into_iter().map(|(n, v)| (n, Value::Str(v))).collect();
    let mut ins = vec![og.clone()];
    ins.extend(i.iter().cloned());
    Ok(super::call(bwd, &ins, &attrs)?.into_iter().map(Some).collect())
}

fn g_grid(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    grad_with("GridGenerator", "_backward_GridGenerator", p, i, g)
}
fn g_sampler(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    grad_with("BilinearSampler", "_backward_BilinearSampler", p, i, g)
}
fn g_stn(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    grad_with("SpatialTransformer", "_backward_SpatialTransformer", p, i, g)
}

fn two(_: &Params) -> usize {
    2
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "GridGenerator",
            "Generates 2D sampling grid for bilinear sampling. For `affine`, data (batch, 6) holds affine matrices and the output (batch, 2, H, W) the transformed normalised target coordinates; for `warp`, data (batch, 2, H, W) is an optical flow in pixels added to the target coordinates, which are then normalised to [-1, 1].",
            Arity::Fixed(&["data"]),
            GRID_PARAMS,
            grid_infer,
            grid_compute,
        )
        .grad(g_grid),
    );
    r.add(OpDef::new(
        "_backward_GridGenerator",
        "Gradient of GridGenerator: `(ograd, data)` to the gradient of data.",
        Arity::Fixed(&["ograd", "data"]),
        GRID_PARAMS,
        grid_backward_infer,
        grid_backward_compute,
    ));
    r.add(
        OpDef::new(
            "BilinearSampler",
            "Applies bilinear sampling to input feature map: data (batch, channel, H, W) is sampled at the normalised coordinates of grid (batch, 2, H', W') (x in channel 0, y in channel 1, both in [-1, 1]); neighbours outside the input count as zero. The output is (batch, channel, H', W').",
            Arity::Fixed(&["data", "grid"]),
            SAMPLER_PARAMS,
            sampler_infer,
            sampler_compute,
        )
        .grad(g_sampler),
    );
    r.add(
        OpDef::new(
            "_backward_BilinearSampler",
            "Gradient of BilinearSampler: `(ograd, data, grid)` to the gradients of data and grid.",
            Arity::Fixed(&["ograd", "data", "grid"]),
            SAMPLER_PARAMS,
            sampler_backward_infer,
            sampler_backward_compute,
        )
        .outputs(two),
    );
    r.add(
        OpDef::new(
            "SpatialTransformer",
            "Applies a spatial transformer to input feature map: the affine transforms loc (batch, 6) map the target grid of target_shape onto data (batch, channel, H, W), which is sampled bilinearly there. The output is (batch, channel, target_shape[0], target_shape[1]).",
            Arity::Fixed(&["data", "loc"]),
            STN_PARAMS,
            stn_infer,
            stn_compute,
        )
        .fill(stn_fill)
        .grad(g_stn),
    );
    r.add(
        OpDef::new(
            "_backward_SpatialTransformer",
            "Gradient of SpatialTransformer: `(ograd, data, loc)` to the gradients of data and loc.",
            Arity::Fixed(&["ograd", "data", "loc"]),
            STN_PARAMS,
            sampler_backward_infer,
            stn_backward_compute,
        )
        .outputs(two),
    );
}
