//! CUDA launchers of the GEMM-based ops: `dot`, `batch_dot`, `_linalg_gemm`,
//! `_linalg_gemm2`, `FullyConnected`, `Convolution`, `Deconvolution` and their
//! backward ops, on cuBLAS (`storage::cuda::blas`) and the hand-written
//! convolution kernels (`kernels::cuda::conv`).
//!
//! Convolution is im2col + GEMM over chunks of images: the chunk's columns are laid
//! side by side (`[C*K][n*Y]`), so each group is one GEMM of `n*Y` columns; the
//! `[F][n][Y]` result is swapped into `[n][F][Y]` with the bias added on the way.
//! Backward: the output gradient is gathered to `[F][n][Y]`; the weight gradient is
//! one GEMM per group accumulated over chunks; the data gradient is `W^T` times it
//! into columns, then col2im (a gather, deterministic).

use super::cuda::{cfg, elems, launch_src, ptr};
use super::{ComputeFn, OpCall};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::cpu::conv::ConvGeom;
use crate::kernels::cuda::{conv as src, gen::ctype};
use crate::storage::cuda::blas::{self, Gemm};
use crate::storage::cuda::dnn;
use crate::storage::cuda::{device, Device};
use cudarc::driver::DeviceRepr;

fn dev(c: &OpCall) -> Result<&'static Device> {
    device(c.ctx).map_err(|e| Error::op(c.op.name, e))
}

fn float_only(c: &OpCall, d: DType) -> Result<&'static str> {
    match d {
        DType::F32 | DType::F64 | DType::F16 | DType::BF16 => Ok(ctype(d).tag),
        _ => Err(Error::op(c.op.name, format!("dtype {} is not supported on {}", d.name(), c.ctx))),
    }
}

fn gemm_err(c: &OpCall, e: Error) -> Error {
    Error::op(c.op.name, e)
}

/// Address of element `i` of a device array of `d`.
fn at(base: u64, i: usize, d: DType) -> u64 {
    base + (i * d.size()) as u64
}

// ---- dot / batch_dot / linalg_gemm(2) ----------------------------------------------------

fn dot(c: &mut OpCall) -> Result<()> {
    let (ta, tb) = (c.params.bool("transpose_a"), c.params.bool("transpose_b"));
    let g = super::linalg::dot_geom(c.op.name, &c.inputs[0].shape, &c.inputs[1].shape, ta, tb)?;
    let dt = c.outputs[0].dtype;
    float_only(c, dt)?;
    let d = dev(c)?;
    blas::gemm(d, dt, Gemm::new(ta, tb, g.m, g.n, g.k), ptr(&c.inputs[0]), ptr(&c.inputs[1]), ptr(&c.outputs[0]))
        .map_err(|e| gemm_err(c, e))
}

/// `out = alpha * op(A) op(B) + beta * out` over a batch geometry.
fn batch_gemm(c: &OpCall, g: &super::linalg::BatchGeom, alpha: f64, beta: f64) -> Result<()> {
    let dt = c.outputs[0].dtype;
    float_only(c, dt)?;
    let d = dev(c)?;
    let [lda, ldb, ldc] = g.lds();
    let gm = Gemm { ta: g.ta, tb: g.tb, m: g.m, n: g.n, k: g.k, alpha, beta, lda, ldb, ldc };
    let (a, b, o) = (ptr(&c.inputs[0]), ptr(&c.inputs[1]), ptr(&c.outputs[0]));
    if g.batch() == 0 {
        return Ok(());
    }
    if g.mid == 1 {
        let [sa, sb, sc] = if g.batch() > 1 { g.offsets(1) } else { [0; 3] };
        return blas::gemm_batched(d, dt, gm, a, sa, b, sb, o, sc, g.pre).map_err(|e| gemm_err(c, e));
    }
    let [sa, sb, sc] = [g.a_rc.1, g.b_rc.1, g.n];
    for p in 0..g.pre {
        let [oa, ob, oc] = g.offsets(p * g.mid);
        blas::gemm_batched(d, dt, gm, at(a, oa, dt), sa, at(b, ob, dt), sb, at(o, oc, dt), sc, g.mid).map_err(|e| gemm_err(c, e))?;
    }
    Ok(())
}

fn batch_dot(c: &mut OpCall) -> Result<()> {
    let (ta, tb) = (c.params.bool("transpose_a"), c.params.bool("transpose_b"));
    let g = super::linalg::batch_dot_geom(c.op.name, &c.inputs[0].shape, &c.inputs[1].shape, ta, tb)?;
    batch_gemm(c, &g, 1.0, 0.0)
}

fn linalg_gemm2(c: &mut OpCall) -> Result<()> {
    let p = c.params;
    let g = super::linalg::gemm2_geom(
        c.op.name,
        &c.inputs[0].shape,
        &c.inputs[1].shape,
        p.int("axis"),
        p.bool("transpose_a"),
        p.bool("transpose_b"),
    )?;
    batch_gemm(c, &g, p.float("alpha"), 0.0)
}

fn linalg_gemm(c: &mut OpCall) -> Result<()> {
    let p = c.params;
    let g = super::linalg::gemm2_geom(
        c.op.name,
        &c.inputs[0].shape,
        &c.inputs[1].shape,
        p.int("axis"),
        p.bool("transpose_a"),
        p.bool("transpose_b"),
    )?;
    let o = &c.outputs[0];
    dev(c)?.copy_dtod(ptr(o), ptr(&c.inputs[2]), o.size() * o.dtype.size()).map_err(|e| Error::op(c.op.name, e))?;
    batch_gemm(c, &g, p.float("alpha"), p.float("beta"))
}

// ---- shared kernels ---------------------------------------------------------------------

/// `out[ch] = sum over (nb, len) of y[nb][ch][len]`.
fn channel_sum(c: &OpCall, tag: &str, y: u64, out: u64, nb: usize, ch: usize, len: usize) -> Result<()> {
    let (nb, chl, len) = (nb as i64, ch as i64, len as i64);
    launch_src!(c, src::NAME, &format!("conv_channel_sum_{tag}"), cfg(ch), [&y, &out, &nb, &chl, &len])
}

// ---- FullyConnected -----------------------------------------------------------------------

fn fc(c: &mut OpCall) -> Result<()> {
    let (rows, kin, _) = super::nn_conv::fc_geom(c.op.name, c.params, &c.inputs[0].shape)?;
    let h = c.params.int("num_hidden") as usize;
    let dt = c.outputs[0].dtype;
    let tag = float_only(c, dt)?;
    let d = dev(c)?;
    let y = ptr(&c.outputs[0]);
    // y (rows x h) = x (rows x k) . w^T (w is h x k)
    blas::gemm(d, dt, Gemm::new(false, true, rows, h, kin), ptr(&c.inputs[0]), ptr(&c.inputs[1]), y).map_err(|e| gemm_err(c, e))?;
    if let Some(b) = c.inputs.get(2) {
        let (bp, r, hh) = (ptr(b), rows as i64, h as i64);
        launch_src!(c, src::NAME, &format!("conv_bias_rows_{tag}"), elems(rows * h), [&y, &bp, &r, &hh])?;
    }
    Ok(())
}

fn fc_backward(c: &mut OpCall) -> Result<()> {
    let (rows, kin, _) = super::nn_conv::fc_geom(c.op.name, c.params, &c.inputs[1].shape)?;
    let h = c.params.int("num_hidden") as usize;
    let dt = c.outputs[0].dtype;
    let tag = float_only(c, dt)?;
    let d = dev(c)?;
    let (dy, x, w) = (ptr(&c.inputs[0]), ptr(&c.inputs[1]), ptr(&c.inputs[2]));
    let (dx, rest) = if super::nn_conv::skips_data_grad(c.op.name) { (None, c.outputs) } else { (Some(&c.outputs[0]), &c.outputs[1..]) };
    if let Some(dx) = dx {
        // dx (rows x k) = dy (rows x h) . w (h x k)
        blas::gemm(d, dt, Gemm::new(false, false, rows, kin, h), dy, w, ptr(dx)).map_err(|e| gemm_err(c, e))?;
    }
    // dw (h x k) = dy^T (h x rows) . x (rows x k)
    blas::gemm(d, dt, Gemm::new(true, false, h, kin, rows), dy, x, ptr(&rest[0])).map_err(|e| gemm_err(c, e))?;
    if let Some(db) = rest.get(1) {
        channel_sum(c, tag, dy, ptr(db), rows, h, 1)?;
    }
    Ok(())
}

// ---- Convolution / Deconvolution -----------------------------------------------------------

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct ConvArgs {
    n0: i64,
    nc: i64,
    c: i64,
    f: i64,
    groups: i64,
    x: [i64; 3],
    y: [i64; 3],
    k: [i64; 3],
    s: [i64; 3],
    d: [i64; 3],
    p: [i64; 3],
    xl: i64,
    yl: i64,
    kl: i64,
}

// SAFETY: plain #[repr(C)] data laid out as the kernels' OxConv (all 64-bit fields).
unsafe impl DeviceRepr for ConvArgs {}

fn i3(a: [usize; 3]) -> [i64; 3] {
    a.map(|v| v as i64)
}

fn conv_args(g: &ConvGeom, n0: usize, nc: usize) -> ConvArgs {
    ConvArgs {
        n0: n0 as i64,
        nc: nc as i64,
        c: g.c as i64,
        f: g.f as i64,
        groups: g.groups as i64,
        x: i3(g.x),
        y: i3(g.y),
        k: i3(g.k),
        s: i3(g.s),
        d: i3(g.d),
        p: i3(g.p),
        xl: g.x_len() as i64,
        yl: g.y_len() as i64,
        kl: g.k_len() as i64,
    }
}

/// Elements of the column buffer allowed per chunk (256 MiB of float32).
const COL_BUDGET: usize = 1 << 26;

/// Images per chunk: as many as fit the column budget, at least one.
fn chunk(g: &ConvGeom) -> usize {
    let per_image = (g.c * g.k_len() * g.y_len()).max(1);
    (COL_BUDGET / per_image).clamp(1, g.batch.max(1))
}

/// y = conv(x, w) (+ bias), y `[N][F][Y]`.
fn conv_forward(c: &OpCall, g: &ConvGeom, x: u64, w: u64, bias: Option<u64>, y: u64) -> Result<()> {
    let dt = c.outputs[0].dtype;
    let tag = float_only(c, dt)?;
    let d = dev(c)?;
    let (cgk, fg, yl) = (g.cg() * g.k_len(), g.fg(), g.y_len());
    let nc_max = chunk(g);
    let col = d.scratch(g.c * g.k_len() * nc_max * yl * dt.size()).map_err(|e| Error::op(c.op.name, e))?;
    let tmp = d.scratch(g.f * nc_max * yl * dt.size()).map_err(|e| Error::op(c.op.name, e))?;
    let mut n0 = 0;
    while n0 < g.batch {
        let nc = nc_max.min(g.batch - n0);
        let a = conv_args(g, n0, nc);
        let colp = col.ptr;
        launch_src!(c, src::NAME, &format!("conv_im2col_{tag}"), elems(g.c * g.k_len() * nc * yl), [&x, &colp, &a])?;
        let cols = nc * yl;
        // tmp_g (fg x cols) = w_g (fg x cgk) . col_g (cgk x cols), one product per group
        blas::gemm_batched(d, dt, Gemm::new(false, false, fg, cols, cgk), w, fg * cgk, colp, cgk * cols, tmp.ptr, fg * cols, g.groups)
            .map_err(|e| gemm_err(c, e))?;
        let (tp, bp, hb) = (tmp.ptr, bias.unwrap_or(0), bias.is_some() as i32);
        let (f, ncl, yll, n0l) = (g.f as i64, nc as i64, yl as i64, n0 as i64);
        launch_src!(c, src::NAME, &format!("conv_out_fwd_{tag}"), elems(g.f * nc * yl), [&tp, &bp, &hb, &y, &f, &ncl, &yll, &n0l])?;
        n0 += nc;
    }
    Ok(())
}

/// The gradients of a convolution `y = conv(x, w)`: `dx` (when wanted) and `dw`
/// (when wanted) from `dy`.
#[allow(clippy::too_many_arguments)]
fn conv_backward(c: &OpCall, g: &ConvGeom, x: u64, w: u64, dy: u64, dx: Option<u64>, dw: Option<u64>, dt: DType) -> Result<()> {
    let tag = float_only(c, dt)?;
    let d = dev(c)?;
    let (cgk, fg, yl) = (g.cg() * g.k_len(), g.fg(), g.y_len());
    let nc_max = chunk(g);
    let col = d.scratch(g.c * g.k_len() * nc_max * yl * dt.size()).map_err(|e| Error::op(c.op.name, e))?;
    let tmp = d.scratch(g.f * nc_max * yl * dt.size()).map_err(|e| Error::op(c.op.name, e))?;
    let mut n0 = 0;
    while n0 < g.batch {
        let nc = nc_max.min(g.batch - n0);
        let a = conv_args(g, n0, nc);
        let cols = nc * yl;
        let (colp, tp) = (col.ptr, tmp.ptr);
        let (f, ncl, yll, n0l) = (g.f as i64, nc as i64, yl as i64, n0 as i64);
        launch_src!(c, src::NAME, &format!("conv_dy_gather_{tag}"), elems(g.f * cols), [&dy, &tp, &f, &ncl, &yll, &n0l])?;
        if let Some(dw) = dw {
            launch_src!(c, src::NAME, &format!("conv_im2col_{tag}"), elems(g.c * g.k_len() * cols), [&x, &colp, &a])?;
            // dw_g (fg x cgk) (+)= tmp_g (fg x cols) . col_g^T (cols x cgk)
            let beta = if n0 == 0 { 0.0 } else { 1.0 };
            blas::gemm_batched(
                d,
                dt,
                Gemm::new(false, true, fg, cgk, cols).scale(1.0, beta),
                tp,
                fg * cols,
                colp,
                cgk * cols,
                dw,
                fg * cgk,
                g.groups,
            )
            .map_err(|e| gemm_err(c, e))?;
        }
        if let Some(dx) = dx {
            // col_g (cgk x cols) = w_g^T (cgk x fg) . tmp_g (fg x cols)
            blas::gemm_batched(d, dt, Gemm::new(true, false, cgk, cols, fg), w, fg * cgk, tp, fg * cols, colp, cgk * cols, g.groups)
                .map_err(|e| gemm_err(c, e))?;
            launch_src!(c, src::NAME, &format!("conv_col2im_{tag}"), elems(nc * g.c * g.x_len()), [&colp, &dx, &a])?;
        }
        n0 += nc;
    }
    Ok(())
}

// ---- cuDNN ----------------------------------------------------------------------------

/// The convolution `g` (with `nd` spatial dims, the last `nd` of its three) in cuDNN's
/// terms, when cuDNN is to run it: enabled, not `cudnn_off`, channels-first layout.
fn cudnn_shape(c: &OpCall, g: &ConvGeom, nd: usize, dt: DType) -> Option<dnn::ConvShape> {
    if !dnn::enabled() || c.params.bool("cudnn_off") || !(1..=3).contains(&nd) {
        return None;
    }
    Some(dnn::ConvShape { dtype: dt, batch: g.batch, c: g.c, f: g.f, groups: g.groups, nd, x: g.x, y: g.y, k: g.k, s: g.s, d: g.d, p: g.p })
}

/// Reports, once per process, that cuDNN failed and im2col + cuBLAS runs instead.
fn cudnn_fell_back(c: &OpCall, e: &Error) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| eprintln!("oxnet: {}: cuDNN could not run it ({}); using im2col + cuBLAS instead", c.op.name, e.message()));
}

/// `conv` through cuDNN; false (after the one-time notice) when cuDNN cannot run it.
fn try_cudnn(c: &OpCall, shape: &Option<dnn::ConvShape>, dir: dnn::Dir, x: u64, w: u64, y: u64) -> Result<bool> {
    let Some(sh) = shape else { return Ok(false) };
    let d = dev(c)?;
    match dnn::convolution(d, sh, dir, x, w, y) {
        Ok(()) => Ok(true),
        Err(e) => {
            cudnn_fell_back(c, &e);
            Ok(false)
        }
    }
}

fn convolution(c: &mut OpCall) -> Result<()> {
    let g = super::nn_conv::conv_geom(c.op.name, c.params, &c.inputs[0].shape)?;
    let bias = c.inputs.get(2).map(ptr);
    let dt = c.outputs[0].dtype;
    let sh = cudnn_shape(c, &g, c.inputs[0].shape.len() - 2, dt);
    let (x, w, y) = (ptr(&c.inputs[0]), ptr(&c.inputs[1]), ptr(&c.outputs[0]));
    if try_cudnn(c, &sh, dnn::Dir::Forward, x, w, y)? {
        if let Some(b) = bias {
            let tag = float_only(c, dt)?;
            let (ch, len, total) = (g.f as i64, g.y_len() as i64, c.outputs[0].size() as u64);
            launch_src!(c, src::NAME, &format!("conv_bias_chan_{tag}"), elems(c.outputs[0].size()), [&y, &b, &ch, &len, &total])?;
        }
        return Ok(());
    }
    conv_forward(c, &g, x, w, bias, y)
}

fn convolution_backward(c: &mut OpCall) -> Result<()> {
    let g = super::nn_conv::conv_geom(c.op.name, c.params, &c.inputs[1].shape)?;
    let dt = c.outputs[0].dtype;
    let (dy, x, w) = (ptr(&c.inputs[0]), ptr(&c.inputs[1]), ptr(&c.inputs[2]));
    let (dx, rest) =
        if super::nn_conv::skips_data_grad(c.op.name) { (None, c.outputs) } else { (Some(ptr(&c.outputs[0])), &c.outputs[1..]) };
    let sh = cudnn_shape(c, &g, c.inputs[1].shape.len() - 2, dt);
    let dw = ptr(&rest[0]);
    let data_done = match dx {
        Some(dxp) => try_cudnn(c, &sh, dnn::Dir::BackwardData, dxp, w, dy)?,
        None => true,
    };
    let filter_done = data_done && try_cudnn(c, &sh, dnn::Dir::BackwardFilter, x, dw, dy)?;
    if !(data_done && filter_done) {
        conv_backward(c, &g, x, w, dy, dx, Some(dw), dt)?;
    }
    if let Some(db) = rest.get(1) {
        channel_sum(c, float_only(c, dt)?, dy, ptr(db), g.batch, g.f, g.y_len())?;
    }
    Ok(())
}

/// Deconvolution is the data gradient of the convolution whose input is the
/// deconvolution's output (see `nn_conv::deconv_geom`).
fn deconvolution(c: &mut OpCall) -> Result<()> {
    let g = super::nn_conv::deconv_geom(c.op.name, c.params, &c.inputs[0].shape)?;
    let dt = c.outputs[0].dtype;
    let tag = float_only(c, dt)?;
    let out = ptr(&c.outputs[0]);
    conv_backward(c, &g, 0, ptr(&c.inputs[1]), ptr(&c.inputs[0]), Some(out), None, dt)?;
    if let Some(b) = c.inputs.get(2) {
        // out[n][ch][l] += bias[ch], through the swap kernels and a scratch copy.
        let d = dev(c)?;
        let bytes = c.outputs[0].size() * dt.size();
        let t = d.scratch(bytes).map_err(|e| Error::op(c.op.name, e))?;
        // t[ch][n][l] = out[n][ch][l]; out[n][ch][l] = t[ch][n][l] + bias[ch]
        let (tp, bp, one) = (t.ptr, ptr(b), 1i32);
        let (ch, nb, l, z) = (g.c as i64, g.batch as i64, g.x_len() as i64, 0i64);
        let n = c.outputs[0].size();
        launch_src!(c, src::NAME, &format!("conv_dy_gather_{tag}"), elems(n), [&out, &tp, &ch, &nb, &l, &z])?;
        launch_src!(c, src::NAME, &format!("conv_out_fwd_{tag}"), elems(n), [&tp, &bp, &one, &out, &ch, &nb, &l, &z])?;
    }
    Ok(())
}

fn deconvolution_backward(c: &mut OpCall) -> Result<()> {
    let g = super::nn_conv::deconv_geom(c.op.name, c.params, &c.inputs[1].shape)?;
    let dt = c.outputs[0].dtype;
    let (dy, x, w) = (ptr(&c.inputs[0]), ptr(&c.inputs[1]), ptr(&c.inputs[2]));
    // In convolution terms dy is the input and x the output.
    conv_forward(c, &g, dy, w, None, ptr(&c.outputs[0]))?;
    conv_backward(c, &g, dy, w, x, None, Some(ptr(&c.outputs[1])), dt)?;
    if let Some(db) = c.outputs.get(2) {
        channel_sum(c, float_only(c, dt)?, dy, ptr(db), g.batch, g.c, g.x_len())?;
    }
    Ok(())
}

/// The CUDA compute of the op registered as `name`, where this family has one.
pub(super) fn lookup(name: &str) -> Option<ComputeFn> {
    Some(match name {
        "dot" => dot,
        "batch_dot" => batch_dot,
        "_linalg_gemm" => linalg_gemm,
        "_linalg_gemm2" => linalg_gemm2,
        "FullyConnected" => fc,
        "_backward_FullyConnected" | "_backward_FullyConnected_weight" => fc_backward,
        "Convolution" => convolution,
        "_backward_Convolution" | "_backward_Convolution_weight" => convolution_backward,
        "Deconvolution" => deconvolution,
        "_backward_Deconvolution" => deconvolution_backward,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemm_ops_have_cuda_paths() {
        for n in [
            "dot",
            "batch_dot",
            "_linalg_gemm",
            "_linalg_gemm2",
            "FullyConnected",
            "_backward_FullyConnected",
            "_backward_FullyConnected_weight",
            "Convolution",
            "_backward_Convolution",
            "_backward_Convolution_weight",
            "Deconvolution",
            "_backward_Deconvolution",
        ] {
            assert!(super::super::lookup(n).unwrap().cuda.is_some(), "{n}");
        }
    }

    #[test]
    fn conv_args_match_the_kernel_struct_and_chunks_fit_the_budget() {
        assert_eq!(std::mem::size_of::<ConvArgs>(), 8 * (5 + 6 * 3 + 3));
        let g = ConvGeom {
            batch: 128,
            c: 64,
            f: 64,
            groups: 1,
            x: [1, 32, 32],
            y: [1, 32, 32],
            k: [1, 3, 3],
            s: [1; 3],
            d: [1; 3],
            p: [0, 1, 1],
        };
        let n = chunk(&g);
        assert!(n >= 1 && n * g.c * g.k_len() * g.y_len() <= COL_BUDGET, "{n}");
    }
}
