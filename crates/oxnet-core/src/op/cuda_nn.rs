//! CUDA launchers of the neural-network ops (kernels in `kernels::cuda::nn`):
//! `Pooling`, `Activation`, `LeakyReLU`, `BatchNorm`, `Dropout`, `LayerNorm`,
//! `InstanceNorm`, `GroupNorm`, `SoftmaxOutput`, `SoftmaxActivation`, `Embedding`,
//! `L2Normalization`, `LRN`, `UpSampling` (nearest), `softmax_cross_entropy` and their
//! backward ops. Each mirrors its CPU compute (`op::nn`, `op::nn_conv`): the same
//! inputs, outputs (hidden ones included), parameters and training behaviour.
//! Float types only (float32, float64, float16); statistics accumulate in double.

use super::cuda::{cfg, elems, launch_src, ptr, too_many_dims, Strided};
use super::{Blob, ComputeFn, OpCall};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::cpu::conv::PoolKind;
use crate::kernels::cuda::gen::MAX_DIMS;
use crate::kernels::cuda::nn::NAME;
use crate::shape::norm_axis;
use cudarc::driver::{DeviceRepr, LaunchConfig};

/// The CUDA compute of the op registered as `name`, where this family has one.
pub(super) fn lookup(name: &str) -> Option<ComputeFn> {
    Some(match name {
        "Activation" => act,
        "_backward_Activation" => act_bwd,
        "LeakyReLU" => lrelu,
        "_backward_LeakyReLU" => lrelu_bwd,
        "BatchNorm" | "BatchNorm_v1" => bn,
        "_backward_BatchNorm" => bn_bwd,
        "Dropout" => dropout,
        "_backward_Dropout" => dropout_bwd,
        "Pooling" => pool,
        "_backward_Pooling" => pool_bwd,
        "LayerNorm" => ln,
        "_backward_LayerNorm" => ln_bwd,
        "InstanceNorm" => inorm,
        "_backward_InstanceNorm" => inorm_bwd,
        "GroupNorm" => gnorm,
        "_backward_GroupNorm" => gnorm_bwd,
        "SoftmaxOutput" | "Softmax" => smo,
        "_backward_SoftmaxOutput" => smo_bwd,
        "SoftmaxActivation" => sma,
        "_backward_SoftmaxActivation" => sma_bwd,
        "Embedding" | "_contrib_SparseEmbedding" => emb,
        "_backward_Embedding" => emb_bwd,
        "L2Normalization" => l2n,
        "_backward_L2Normalization" => l2n_bwd,
        "LRN" => lrn,
        "_backward_LRN" => lrn_bwd,
        "UpSampling" => up,
        "_backward_UpSampling" => up_bwd,
        "softmax_cross_entropy" => sce,
        "_backward_softmax_cross_entropy" => sce_bwd,
        _ => return None,
    })
}

// ---- helpers -------------------------------------------------------------------------

/// The kernel tag of a float dtype (the kernels are instantiated for these only).
fn tag(c: &OpCall, d: DType) -> Result<&'static str> {
    match d {
        DType::F32 => Ok("f32"),
        DType::F64 => Ok("f64"),
        DType::F16 => Ok("f16"),
        DType::BF16 => Ok("bf16"),
        _ => Err(Error::op(c.op.name, format!("dtype {} is not supported on {} (float16, float32 or float64 only)", d.name(), c.ctx))),
    }
}

/// `nn_<kernel>_<tag>`.
fn kn(kernel: &str, tag: &str) -> String {
    format!("nn_{kernel}_{tag}")
}

/// The code `ox_ld_any` reads an array of dtype `d` with.
fn dcode(d: DType) -> i32 {
    match d {
        DType::F32 => 0,
        DType::F64 => 1,
        DType::F16 => 2,
        DType::I32 => 3,
        DType::I64 => 4,
        DType::U8 => 5,
        DType::I8 => 6,
        DType::Bool => 7,
        DType::BF16 => 8,
    }
}

/// Every input and output of the call has dtype `d` (the kernels take one type).
fn all_same(c: &OpCall, blobs: &[&Blob], d: DType) -> Result<()> {
    for b in blobs {
        if b.dtype != d {
            return Err(Error::op(
                c.op.name,
                format!("on {} every array must have the data's dtype {} (got {})", c.ctx, d.name(), b.dtype.name()),
            ));
        }
    }
    Ok(())
}

/// One block of 256 threads per item (channel), at most 65536 blocks (the kernels loop).
fn per_block(n: usize) -> LaunchConfig {
    cfg(n)
}

/// One warp per group: 8 groups per block of 256 threads.
fn per_warp(groups: usize) -> LaunchConfig {
    cfg(groups.div_ceil(8))
}

fn outer_inner(shape: &[usize], ax: usize) -> (usize, usize, usize) {
    (shape[..ax].iter().product(), shape[ax], shape[ax + 1..].iter().product())
}

fn need(c: &OpCall, n_in: usize, n_out: usize) -> Result<()> {
    if c.inputs.len() < n_in || c.outputs.len() < n_out {
        return Err(Error::op(
            c.op.name,
            format!("expected {n_in} inputs and {n_out} outputs, got {} and {}", c.inputs.len(), c.outputs.len()),
        ));
    }
    Ok(())
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Pool {
    x: [i64; 3],
    y: [i64; 3],
    k: [i64; 3],
    s: [i64; 3],
    plo: [i64; 3],
    phi: [i64; 3],
    batch: i64,
    ch: i64,
    cl: i64,
    kind: i64,
    p: i64,
    include_pad: i64,
    lowest: f64,
}

// SAFETY: plain #[repr(C)] data laid out as the kernels' OxStrided and OxPool.
unsafe impl DeviceRepr for Pool {}

// ---- Activation / LeakyReLU ------------------------------------------------------------

/// The kernels' activation code and slope of `act_type`.
fn act_code(c: &OpCall) -> Result<(i32, f64)> {
    let p = c.params;
    Ok(match p.str("act_type") {
        "relu" => (0, 0.0),
        "sigmoid" => (1, 0.0),
        "tanh" => (2, 0.0),
        "softrelu" => (3, 0.0),
        "softsign" => (4, 0.0),
        "leaky" => (5, p.float("slope")),
        "elu" => (6, p.float("slope")),
        "selu" => (7, 0.0),
        "gelu" => (8, 0.0),
        a => return Err(Error::op(c.op.name, format!("act_type '{a}' is not supported on {}", c.ctx))),
    })
}

fn act(c: &mut OpCall) -> Result<()> {
    need(c, 1, 1)?;
    let (x, y) = (&c.inputs[0], &c.outputs[0]);
    all_same(c, &[y], x.dtype)?;
    let t = tag(c, x.dtype)?;
    let (a, s) = act_code(c)?;
    let n = y.size() as u64;
    if n == 0 {
        return Ok(());
    }
    let (xp, yp) = (ptr(x), ptr(y));
    launch_src!(c, NAME, &kn("act_fwd", t), elems(y.size()), [&xp, &yp, &n, &a, &s])
}

fn act_bwd(c: &mut OpCall) -> Result<()> {
    need(c, 3, 1)?;
    let (g, x, y, dx) = (&c.inputs[0], &c.inputs[1], &c.inputs[2], &c.outputs[0]);
    all_same(c, &[x, y, dx], g.dtype)?;
    let t = tag(c, g.dtype)?;
    let (a, s) = act_code(c)?;
    let n = dx.size() as u64;
    if n == 0 {
        return Ok(());
    }
    let (gp, xp, yp, dp) = (ptr(g), ptr(x), ptr(y), ptr(dx));
    launch_src!(c, NAME, &kn("act_bwd", t), elems(dx.size()), [&gp, &xp, &yp, &dp, &n, &a, &s])
}

/// PReLU's `(outer, groups, inner, one)` from the CPU's `prelu_layout`.
fn prelu_layout(c: &OpCall, shape: &[usize], gamma: &[usize]) -> Result<(i64, i64, i64, i32)> {
    let (ch, inner) = super::nn::prelu_layout(shape, gamma).map_err(|m| Error::op(c.op.name, m))?;
    let total: usize = shape.iter().product();
    let outer = total.checked_div(ch * inner).unwrap_or(0);
    Ok((outer as i64, ch as i64, inner as i64, (ch == 1) as i32))
}

fn lrelu(c: &mut OpCall) -> Result<()> {
    need(c, 1, 1)?;
    let (x, y) = (&c.inputs[0], &c.outputs[0]);
    all_same(c, &[y], x.dtype)?;
    let t = tag(c, x.dtype)?;
    let n = y.size() as u64;
    match c.params.str("act_type") {
        "prelu" => {
            need(c, 2, 1)?;
            let gm = &c.inputs[1];
            all_same(c, &[gm], x.dtype)?;
            if n == 0 {
                return Ok(());
            }
            let (_, ch, inner, one) = prelu_layout(c, &x.shape, &gm.shape)?;
            let (xp, gp, yp) = (ptr(x), ptr(gm), ptr(y));
            launch_src!(c, NAME, &kn("prelu_fwd", t), elems(y.size()), [&xp, &gp, &yp, &n, &ch, &inner, &one])
        }
        "rrelu" => {
            need(c, 1, 2)?;
            let m = &c.outputs[1];
            all_same(c, &[m], x.dtype)?;
            let (lo, hi) = (c.params.float("lower_bound"), c.params.float("upper_bound"));
            let train = c.is_train as i32;
            let key = if c.is_train { c.rng.as_mut().ok_or_else(|| Error::op(c.op.name, "no random generator"))?.next_key() } else { 0 };
            if n == 0 {
                return Ok(());
            }
            let (x, y, m) = (&c.inputs[0], &c.outputs[0], &c.outputs[1]);
            let (xp, yp, mp) = (ptr(x), ptr(y), ptr(m));
            launch_src!(c, NAME, &kn("rrelu_fwd", t), elems(y.size()), [&xp, &yp, &mp, &n, &key, &lo, &hi, &train])
        }
        _ => act(c),
    }
}

fn lrelu_bwd(c: &mut OpCall) -> Result<()> {
    match c.params.str("act_type") {
        "prelu" => {
            need(c, 4, 2)?;
            let (g, x, gm, dx, dgm) = (&c.inputs[0], &c.inputs[1], &c.inputs[3], &c.outputs[0], &c.outputs[1]);
            all_same(c, &[x, gm, dx, dgm], g.dtype)?;
            let t = tag(c, g.dtype)?;
            let (outer, ch, inner, _) = prelu_layout(c, &x.shape, &gm.shape)?;
            if dx.size() == 0 && dgm.size() == 0 {
                return Ok(());
            }
            let (gp, xp, gmp, dp, dgp) = (ptr(g), ptr(x), ptr(gm), ptr(dx), ptr(dgm));
            launch_src!(c, NAME, &kn("prelu_bwd", t), per_block(ch as usize), [&gp, &xp, &gmp, &dp, &dgp, &outer, &ch, &inner])
        }
        "rrelu" => {
            need(c, 4, 1)?;
            let (g, x, m, dx) = (&c.inputs[0], &c.inputs[1], &c.inputs[3], &c.outputs[0]);
            all_same(c, &[x, m, dx], g.dtype)?;
            let t = tag(c, g.dtype)?;
            let n = dx.size() as u64;
            if n == 0 {
                return Ok(());
            }
            let (gp, xp, mp, dp) = (ptr(g), ptr(x), ptr(m), ptr(dx));
            launch_src!(c, NAME, &kn("rrelu_bwd", t), elems(dx.size()), [&gp, &xp, &mp, &dp, &n])
        }
        _ => act_bwd(c),
    }
}

// ---- BatchNorm -------------------------------------------------------------------------

/// The kernel tag of BatchNorm's (data, parameter) dtypes.
fn bn_tag(c: &OpCall, d: DType, pd: DType) -> Result<&'static str> {
    match (d, pd) {
        (DType::F16, DType::F32) => Ok("f16_f32"),
        (DType::BF16, DType::F32) => Ok("bf16_f32"),
        _ if d == pd => tag(c, d),
        _ => Err(Error::op(
            c.op.name,
            format!(
                "data of dtype {} with parameters of dtype {} is not supported on {} (same dtype, or float16/bfloat16 data with float32 parameters)",
                d.name(),
                pd.name(),
                c.ctx
            ),
        )),
    }
}

fn bn(c: &mut OpCall) -> Result<()> {
    need(c, 5, 3)?;
    let p = c.params;
    let x = &c.inputs[0];
    let pd = c.inputs[1].dtype;
    all_same(c, &[&c.inputs[2], &c.inputs[3], &c.inputs[4], &c.outputs[1], &c.outputs[2]], pd)?;
    all_same(c, &[&c.outputs[0]], x.dtype)?;
    let t = bn_tag(c, x.dtype, pd)?;
    let ax = norm_axis(p.int("axis"), x.shape.len(), c.op.name)?;
    let (outer, ch, inner) = outer_inner(&x.shape, ax);
    if ch == 0 {
        return Ok(());
    }
    let eps = p.float("eps");
    let fix_gamma = p.bool("fix_gamma") as i32;
    let training = (c.is_train && !p.bool("use_global_stats")) as i32;
    let ones = (c.is_train && p.bool("fix_gamma")) as i32;
    let (outer, ch, inner) = (outer as i64, ch as i64, inner as i64);
    let (xp, gp, bp, mmp, mvp) = (ptr(x), ptr(&c.inputs[1]), ptr(&c.inputs[2]), ptr(&c.inputs[3]), ptr(&c.inputs[4]));
    let (yp, mop, iop) = (ptr(&c.outputs[0]), ptr(&c.outputs[1]), ptr(&c.outputs[2]));
    launch_src!(
        c,
        NAME,
        &kn("bn_fwd", t),
        per_block(ch as usize),
        [&xp, &gp, &bp, &mmp, &mvp, &yp, &mop, &iop, &outer, &ch, &inner, &eps, &fix_gamma, &training, &ones]
    )
}

fn bn_bwd(c: &mut OpCall) -> Result<()> {
    need(c, 7, 3)?;
    let p = c.params;
    let (g, x) = (&c.inputs[0], &c.inputs[1]);
    let pd = c.inputs[2].dtype;
    all_same(c, &[&c.inputs[3], &c.inputs[4], &c.inputs[5], &c.inputs[6], &c.outputs[1], &c.outputs[2]], pd)?;
    all_same(c, &[x, &c.outputs[0]], g.dtype)?;
    let t = bn_tag(c, g.dtype, pd)?;
    let ax = norm_axis(p.int("axis"), x.shape.len(), c.op.name)?;
    let (outer, ch, inner) = outer_inner(&x.shape, ax);
    if ch == 0 {
        return Ok(());
    }
    let (eps, momentum) = (p.float("eps"), p.float("momentum"));
    let fix_gamma = p.bool("fix_gamma") as i32;
    let batch = (c.is_train && !p.bool("use_global_stats")) as i32;
    let (outer, ch, inner) = (outer as i64, ch as i64, inner as i64);
    let (gp, xp, gmp, mp, ip, mmp, mvp) =
        (ptr(g), ptr(x), ptr(&c.inputs[2]), ptr(&c.inputs[3]), ptr(&c.inputs[4]), ptr(&c.inputs[5]), ptr(&c.inputs[6]));
    let (dxp, dgp, dbp) = (ptr(&c.outputs[0]), ptr(&c.outputs[1]), ptr(&c.outputs[2]));
    launch_src!(
        c,
        NAME,
        &kn("bn_bwd", t),
        per_block(ch as usize),
        [&gp, &xp, &gmp, &mp, &ip, &mmp, &mvp, &dxp, &dgp, &dbp, &outer, &ch, &inner, &eps, &momentum, &fix_gamma, &batch]
    )
}

// ---- Dropout ---------------------------------------------------------------------------

fn dropout(c: &mut OpCall) -> Result<()> {
    need(c, 1, 2)?;
    let (x, y, m) = (&c.inputs[0], &c.outputs[0], &c.outputs[1]);
    all_same(c, &[y, m], x.dtype)?;
    let t = tag(c, x.dtype)?;
    let pr = c.params.float("p");
    let active = (c.is_train || c.params.str("mode") == "always") && pr > 0.0;
    let n = y.size() as u64;
    if !active {
        if n == 0 {
            return Ok(());
        }
        let (xp, yp, mp) = (ptr(x), ptr(y), ptr(m));
        return launch_src!(c, NAME, &kn("dropout_id", t), elems(y.size()), [&xp, &yp, &mp, &n]);
    }
    let nd = x.shape.len();
    let mut axes = Vec::new();
    for &a in &c.params.tuple("axes") {
        if a < -(nd as i64) || a >= nd as i64 {
            return Err(Error::op(c.op.name, format!("axes entry {a} is out of range for data with {nd} dimensions")));
        }
        axes.push(a.rem_euclid(nd.max(1) as i64) as usize);
    }
    let mut sh = Strided { ndim: 0, shape: [1; MAX_DIMS], stride: [0; MAX_DIMS] };
    if !axes.is_empty() {
        if nd > MAX_DIMS {
            return Err(too_many_dims(c, nd));
        }
        let st = crate::shape::strides(&x.shape);
        sh.ndim = nd as i32;
        for d in 0..nd {
            sh.shape[d] = x.shape[d] as i64;
            sh.stride[d] = if axes.contains(&d) { 0 } else { st[d] as i64 };
        }
    }
    let key = c.rng.as_mut().ok_or_else(|| Error::op(c.op.name, "no random generator"))?.next_key();
    if n == 0 {
        return Ok(());
    }
    let (x, y, m) = (&c.inputs[0], &c.outputs[0], &c.outputs[1]);
    let (xp, yp, mp) = (ptr(x), ptr(y), ptr(m));
    launch_src!(c, NAME, &kn("dropout_fwd", t), elems(y.size()), [&xp, &yp, &mp, &n, &key, &pr, &sh])
}

fn dropout_bwd(c: &mut OpCall) -> Result<()> {
    need(c, 2, 1)?;
    let (g, m, dx) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    all_same(c, &[m, dx], g.dtype)?;
    let t = tag(c, g.dtype)?;
    let n = dx.size() as u64;
    if n == 0 {
        return Ok(());
    }
    let (gp, mp, dp) = (ptr(g), ptr(m), ptr(dx));
    launch_src!(c, NAME, &kn("mul", t), elems(dx.size()), [&gp, &mp, &dp, &n])
}

// ---- Pooling ---------------------------------------------------------------------------

/// The kernels' geometry of Pooling on data of shape `data` (the CPU's checks).
fn pool_desc(c: &OpCall, data: &[usize], dtype: DType) -> Result<Pool> {
    let g = super::nn_conv::pool_geom(c.op.name, c.params, data)?;
    let kind = super::nn_conv::pool_kind(c.op.name, c.params)?;
    let (kind, p, include_pad) = match kind {
        PoolKind::Max => (0, 0, 0),
        PoolKind::Avg { include_pad } => (1, 0, include_pad as i64),
        PoolKind::Sum => (2, 0, 0),
        PoolKind::Lp(p) => (3, p as i64, 0),
    };
    let a = |v: [usize; 3]| v.map(|e| e as i64);
    let lowest = match dtype {
        DType::F16 => -65504.0,
        DType::BF16 => -3.3895313892515355e38,
        DType::F32 => f32::MIN as f64,
        _ => f64::MIN,
    };
    Ok(Pool {
        x: a(g.x),
        y: a(g.y),
        k: a(g.k),
        s: a(g.s),
        plo: a(g.p_lo),
        phi: a(g.p_hi),
        batch: g.batch as i64,
        ch: g.ch as i64,
        cl: g.channels_last as i64,
        kind,
        p,
        include_pad,
        lowest,
    })
}

fn pool(c: &mut OpCall) -> Result<()> {
    need(c, 1, 1)?;
    let (x, y) = (&c.inputs[0], &c.outputs[0]);
    all_same(c, &[y], x.dtype)?;
    let t = tag(c, x.dtype)?;
    let g = pool_desc(c, &x.shape, x.dtype)?;
    if y.size() == 0 {
        return Ok(());
    }
    let (xp, yp) = (ptr(x), ptr(y));
    launch_src!(c, NAME, &kn("pool_fwd", t), elems(y.size()), [&xp, &yp, &g])
}

fn pool_bwd(c: &mut OpCall) -> Result<()> {
    need(c, 3, 1)?;
    let (dy, x, y, dx) = (&c.inputs[0], &c.inputs[1], &c.inputs[2], &c.outputs[0]);
    all_same(c, &[x, y, dx], dy.dtype)?;
    let t = tag(c, dy.dtype)?;
    let g = pool_desc(c, &x.shape, x.dtype)?;
    let nx = dx.size() as u64;
    if nx == 0 {
        return Ok(());
    }
    let (xp, yp, dyp, dxp) = (ptr(x), ptr(y), ptr(dy), ptr(dx));
    // Windows that share no element: one thread per window (dx zeroed first, as
    // elements in no window get nothing); else one thread per input element.
    let disjoint = (0..3).all(|a| g.y[a] <= 1 || g.s[a] >= g.k[a]);
    if disjoint {
        launch_src!(c, NAME, &kn("zero", t), elems(dx.size()), [&dxp, &nx])?;
        if dy.size() == 0 {
            return Ok(());
        }
        launch_src!(c, NAME, &kn("pool_bwd_scatter", t), elems(dy.size()), [&xp, &yp, &dyp, &dxp, &g])
    } else {
        launch_src!(c, NAME, &kn("pool_bwd_gather", t), elems(dx.size()), [&xp, &yp, &dyp, &dxp, &g])
    }
}

// ---- LayerNorm -------------------------------------------------------------------------

fn ln_layout(c: &OpCall, shape: &[usize]) -> Result<(i64, i64, i64)> {
    let nd = shape.len() as i64;
    let ax = c.params.int("axis");
    if nd == 0 || ax < -nd || ax >= nd {
        return Err(Error::op(c.op.name, format!("axis {ax} is out of range for data with {nd} dimensions")));
    }
    let (o, n, i) = outer_inner(shape, ax.rem_euclid(nd) as usize);
    Ok((o as i64, n as i64, i as i64))
}

fn ln(c: &mut OpCall) -> Result<()> {
    need(c, 3, 3)?;
    let x = &c.inputs[0];
    all_same(c, &[&c.inputs[1], &c.inputs[2], &c.outputs[0], &c.outputs[1], &c.outputs[2]], x.dtype)?;
    let t = tag(c, x.dtype)?;
    let (outer, n, inner) = ln_layout(c, &x.shape)?;
    if x.size() == 0 {
        return Ok(());
    }
    let eps = c.params.float("eps");
    let (xp, gp, bp) = (ptr(x), ptr(&c.inputs[1]), ptr(&c.inputs[2]));
    let (yp, mp, sp) = (ptr(&c.outputs[0]), ptr(&c.outputs[1]), ptr(&c.outputs[2]));
    launch_src!(c, NAME, &kn("ln_fwd", t), per_warp((outer * inner) as usize), [&xp, &gp, &bp, &yp, &mp, &sp, &outer, &n, &inner, &eps])
}

fn ln_bwd(c: &mut OpCall) -> Result<()> {
    need(c, 5, 3)?;
    let (g, x) = (&c.inputs[0], &c.inputs[1]);
    all_same(c, &[x, &c.inputs[2], &c.inputs[3], &c.inputs[4], &c.outputs[0], &c.outputs[1], &c.outputs[2]], g.dtype)?;
    let t = tag(c, g.dtype)?;
    let (outer, n, inner) = ln_layout(c, &x.shape)?;
    if c.inputs[3].size() as i64 != outer * inner || c.inputs[4].size() as i64 != outer * inner || c.inputs[2].size() as i64 != n {
        return Err(Error::op(c.op.name, "mean/std or gamma do not match the data's shape"));
    }
    let (gp, xp, gmp, mp, sp) = (ptr(g), ptr(x), ptr(&c.inputs[2]), ptr(&c.inputs[3]), ptr(&c.inputs[4]));
    let (dxp, dgp, dbp) = (ptr(&c.outputs[0]), ptr(&c.outputs[1]), ptr(&c.outputs[2]));
    if n == 0 {
        return Ok(());
    }
    if outer * inner > 0 {
        launch_src!(
            c,
            NAME,
            &kn("ln_bwd_dx", t),
            per_warp((outer * inner) as usize),
            [&gp, &xp, &gmp, &mp, &sp, &dxp, &outer, &n, &inner]
        )?;
    }
    launch_src!(c, NAME, &kn("ln_bwd_dgb", t), per_block(n as usize), [&gp, &xp, &mp, &sp, &dgp, &dbp, &outer, &n, &inner])
}

// ---- InstanceNorm ----------------------------------------------------------------------

fn in_layout(c: &OpCall, shape: &[usize]) -> Result<(i64, i64, i64)> {
    if shape.len() < 3 {
        return Err(Error::op(c.op.name, format!("data must have rank 3 or more, got {} dimensions", shape.len())));
    }
    let len: usize = shape[2..].iter().product();
    Ok(((shape[0] * shape[1]) as i64, shape[1] as i64, len as i64))
}

fn inorm(c: &mut OpCall) -> Result<()> {
    need(c, 3, 3)?;
    let x = &c.inputs[0];
    all_same(c, &[&c.inputs[1], &c.inputs[2], &c.outputs[0], &c.outputs[1], &c.outputs[2]], x.dtype)?;
    let t = tag(c, x.dtype)?;
    let (rows, ch, len) = in_layout(c, &x.shape)?;
    if len == 0 || rows == 0 {
        return Ok(());
    }
    let eps = c.params.float("eps");
    let (xp, gp, bp) = (ptr(x), ptr(&c.inputs[1]), ptr(&c.inputs[2]));
    let (yp, mp, ip) = (ptr(&c.outputs[0]), ptr(&c.outputs[1]), ptr(&c.outputs[2]));
    launch_src!(c, NAME, &kn("in_fwd", t), per_warp(rows as usize), [&xp, &gp, &bp, &yp, &mp, &ip, &rows, &ch, &len, &eps])
}

fn inorm_bwd(c: &mut OpCall) -> Result<()> {
    need(c, 5, 3)?;
    let (g, x) = (&c.inputs[0], &c.inputs[1]);
    all_same(c, &[x, &c.inputs[2], &c.inputs[3], &c.inputs[4], &c.outputs[0], &c.outputs[1], &c.outputs[2]], g.dtype)?;
    let t = tag(c, g.dtype)?;
    let (rows, ch, len) = in_layout(c, &x.shape)?;
    if c.inputs[3].size() as i64 != rows {
        return Err(Error::op(c.op.name, "mean/invstd do not match the data's shape"));
    }
    let (gp, xp, gmp, mp, ip) = (ptr(g), ptr(x), ptr(&c.inputs[2]), ptr(&c.inputs[3]), ptr(&c.inputs[4]));
    let (dxp, dgp, dbp) = (ptr(&c.outputs[0]), ptr(&c.outputs[1]), ptr(&c.outputs[2]));
    if ch == 0 {
        return Ok(());
    }
    if len == 0 || rows == 0 {
        // The CPU gives zero gradients of gamma and beta.
        let nc = ch as u64;
        launch_src!(c, NAME, &kn("zero", t), elems(ch as usize), [&dgp, &nc])?;
        return launch_src!(c, NAME, &kn("zero", t), elems(ch as usize), [&dbp, &nc]);
    }
    let d = crate::storage::cuda::device(c.ctx).map_err(|e| Error::op(c.op.name, e))?;
    let part = d.scratch(rows as usize * 2 * 8).map_err(|e| Error::op(c.op.name, e))?;
    let pp = part.ptr;
    launch_src!(c, NAME, &kn("in_bwd_dx", t), per_warp(rows as usize), [&gp, &xp, &gmp, &mp, &ip, &dxp, &pp, &rows, &ch, &len])?;
    launch_src!(c, NAME, &kn("in_bwd_dgb", t), per_block(ch as usize), [&pp, &dgp, &dbp, &rows, &ch])
}

// ---- GroupNorm -------------------------------------------------------------------------

/// `(rows = batch * groups, groups, elements per row)` (the CPU's `geometry`).
fn gn_layout(c: &OpCall, s: &[usize]) -> Result<(i64, i64, i64)> {
    let g = c.params.int("num_groups");
    if s.len() < 2 || g <= 0 || !s[1].is_multiple_of(g as usize) {
        return Err(Error::op(c.op.name, format!("data must be (N, C, ...) with C a multiple of num_groups={g}")));
    }
    let m = s[1..].iter().product::<usize>() / g as usize;
    Ok((s[0] as i64 * g, g, m as i64))
}

fn gnorm(c: &mut OpCall) -> Result<()> {
    need(c, 3, 3)?;
    let x = &c.inputs[0];
    all_same(c, &[&c.inputs[1], &c.inputs[2], &c.outputs[0], &c.outputs[1], &c.outputs[2]], x.dtype)?;
    let t = tag(c, x.dtype)?;
    let (rows, g, m) = gn_layout(c, &x.shape)?;
    if rows == 0 || m == 0 {
        return Ok(());
    }
    let eps = c.params.float("eps");
    let (xp, gp, bp) = (ptr(x), ptr(&c.inputs[1]), ptr(&c.inputs[2]));
    let (yp, mp, sp) = (ptr(&c.outputs[0]), ptr(&c.outputs[1]), ptr(&c.outputs[2]));
    launch_src!(c, NAME, &kn("gn_fwd", t), per_warp(rows as usize), [&xp, &gp, &bp, &yp, &mp, &sp, &rows, &g, &m, &eps])
}

fn gnorm_bwd(c: &mut OpCall) -> Result<()> {
    need(c, 3, 3)?;
    let (og, x) = (&c.inputs[0], &c.inputs[1]);
    all_same(c, &[x, &c.inputs[2], &c.outputs[0], &c.outputs[1], &c.outputs[2]], og.dtype)?;
    let t = tag(c, og.dtype)?;
    let (rows, g, m) = gn_layout(c, &x.shape)?;
    let (ogp, xp, gp) = (ptr(og), ptr(x), ptr(&c.inputs[2]));
    let (dxp, dgp, dbp) = (ptr(&c.outputs[0]), ptr(&c.outputs[1]), ptr(&c.outputs[2]));
    if rows == 0 || m == 0 {
        // No element: zero gradients of gamma and beta, as the CPU's sums.
        let ng = g as u64;
        launch_src!(c, NAME, &kn("zero", t), elems(g as usize), [&dgp, &ng])?;
        return launch_src!(c, NAME, &kn("zero", t), elems(g as usize), [&dbp, &ng]);
    }
    let eps = c.params.float("eps");
    let d = crate::storage::cuda::device(c.ctx).map_err(|e| Error::op(c.op.name, e))?;
    let part = d.scratch(rows as usize * 2 * 8).map_err(|e| Error::op(c.op.name, e))?;
    let pp = part.ptr;
    launch_src!(c, NAME, &kn("gn_bwd_dx", t), per_warp(rows as usize), [&ogp, &xp, &gp, &dxp, &pp, &rows, &g, &m, &eps])?;
    launch_src!(c, NAME, &kn("in_bwd_dgb", t), per_block(g as usize), [&pp, &dgp, &dbp, &rows, &g])
}

// ---- SoftmaxOutput / SoftmaxActivation -------------------------------------------------

/// SoftmaxOutput's `(outer, classes, inner)` (the CPU's `smo_layout`).
fn smo_layout(c: &OpCall, s: &[usize]) -> (usize, usize, usize) {
    let p = c.params;
    let size: usize = s.iter().product();
    if p.bool("preserve_shape") {
        let last = *s.last().unwrap_or(&1);
        (size.checked_div(last).unwrap_or(0), last, 1)
    } else if p.bool("multi_output") {
        (s[0], s[1], s[2..].iter().product())
    } else {
        let n = s[0];
        (n, size.checked_div(n).unwrap_or(0), 1)
    }
}

fn softmax_run(c: &OpCall, outer: usize, n: usize, inner: usize) -> Result<()> {
    let (x, y) = (&c.inputs[0], &c.outputs[0]);
    all_same(c, &[y], x.dtype)?;
    let t = tag(c, x.dtype)?;
    if y.size() == 0 || n == 0 {
        return Ok(());
    }
    let (o, k, i) = (outer as i64, n as i64, inner as i64);
    let (xp, yp) = (ptr(x), ptr(y));
    launch_src!(c, NAME, &kn("softmax_fwd", t), per_warp(outer * inner), [&xp, &yp, &o, &k, &i])
}

fn smo(c: &mut OpCall) -> Result<()> {
    need(c, 1, 1)?;
    let s = c.inputs[0].shape.clone();
    if s.len() < 2 && !(s.len() == 1 && c.params.bool("preserve_shape")) {
        return Err(Error::op(c.op.name, "data must have at least 2 dimensions (batch, classes)"));
    }
    let (o, n, i) = smo_layout(c, &s);
    softmax_run(c, o, n, i)
}

fn smo_bwd(c: &mut OpCall) -> Result<()> {
    need(c, 3, 1)?;
    let p = c.params;
    let (g, l, y, dx) = (&c.inputs[0], &c.inputs[1], &c.inputs[2], &c.outputs[0]);
    all_same(c, &[y, dx], g.dtype)?;
    let t = tag(c, g.dtype)?;
    if y.shape.len() < 2 && !(y.shape.len() == 1 && p.bool("preserve_shape")) {
        return Err(Error::op(c.op.name, "output must have at least 2 dimensions (batch, classes)"));
    }
    let (outer, n, inner) = smo_layout(c, &y.shape);
    let soft = l.shape == y.shape;
    let ignore = p.float("ignore_label");
    let use_ignore = p.bool("use_ignore") as i32;
    let alpha = p.float("smooth_alpha");
    let multi = p.bool("multi_output") && !p.bool("preserve_shape");
    let groups = outer * inner;
    let mut scale = p.float("grad_scale");
    let mut count = false;
    match p.str("normalization") {
        "batch" => scale /= if multi { (outer * inner).max(1) } else { outer.max(1) } as f64,
        "valid" => {
            if soft {
                scale /= groups.max(1) as f64;
            } else {
                count = true;
            }
        }
        _ => {
            if multi {
                scale /= inner.max(1) as f64
            }
        }
    }
    if !soft && l.size() < groups {
        return Err(Error::op(c.op.name, format!("label has {} elements but {groups} are needed", l.size())));
    }
    let total = dx.size() as u64;
    if total == 0 {
        return Ok(());
    }
    let lcode = dcode(l.dtype);
    let use_head = p.bool("out_grad") as i32;
    let (gp, lp, yp, dp) = (ptr(g), ptr(l), ptr(y), ptr(dx));
    let (n, inner, soft) = (n as i64, inner as i64, soft as i32);
    let d = crate::storage::cuda::device(c.ctx).map_err(|e| Error::op(c.op.name, e))?;
    // The valid-label count stays on the device (no host round trip).
    let scratch = if count { Some(d.scratch(8).map_err(|e| Error::op(c.op.name, e))?) } else { None };
    let cnt = scratch.as_ref().map_or(0u64, |s| s.ptr);
    if count {
        let gr = groups as i64;
        launch_src!(c, NAME, "nn_smo_count", cfg(1), [&lp, &lcode, &gr, &ignore, &cnt])?;
    }
    launch_src!(
        c,
        NAME,
        &kn("smo_bwd", t),
        elems(dx.size()),
        [&gp, &lp, &lcode, &yp, &dp, &total, &n, &inner, &soft, &use_ignore, &ignore, &alpha, &scale, &cnt, &use_head]
    )
}

/// SoftmaxActivation's `(outer, n, inner)`: axis 1 for mode=channel, else the last.
fn sma_layout(c: &OpCall, s: &[usize]) -> Result<(usize, usize, usize)> {
    if s.is_empty() || (c.params.str("mode") == "channel" && s.len() < 2) {
        return Err(Error::op(c.op.name, format!("data with {} dimensions is not supported for mode={}", s.len(), c.params.str("mode"))));
    }
    Ok(if c.params.str("mode") == "channel" { outer_inner(s, 1) } else { outer_inner(s, s.len() - 1) })
}

fn sma(c: &mut OpCall) -> Result<()> {
    need(c, 1, 1)?;
    let (o, n, i) = sma_layout(c, &c.inputs[0].shape)?;
    softmax_run(c, o, n, i)
}

fn sma_bwd(c: &mut OpCall) -> Result<()> {
    need(c, 2, 1)?;
    let (g, y, dx) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    all_same(c, &[y, dx], g.dtype)?;
    let t = tag(c, g.dtype)?;
    let (outer, n, inner) = sma_layout(c, &y.shape)?;
    if dx.size() == 0 {
        return Ok(());
    }
    let (o, k, i) = (outer as i64, n as i64, inner as i64);
    let (gp, yp, dp) = (ptr(g), ptr(y), ptr(dx));
    launch_src!(c, NAME, &kn("softmax_bwd", t), per_warp(outer * inner), [&gp, &yp, &dp, &o, &k, &i])
}

// ---- Embedding -------------------------------------------------------------------------

fn emb(c: &mut OpCall) -> Result<()> {
    need(c, 2, 1)?;
    let (d, w, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    all_same(c, &[o], w.dtype)?;
    let t = tag(c, w.dtype)?;
    if w.shape.len() != 2 {
        return Err(Error::op(c.op.name, "weight must be 2-D (input_dim, output_dim)"));
    }
    let (rows, dim) = (w.shape[0] as i64, w.shape[1] as i64);
    let total = o.size() as u64;
    if total == 0 || rows == 0 {
        return Ok(());
    }
    let icode = dcode(d.dtype);
    let (dp, wp, op) = (ptr(d), ptr(w), ptr(o));
    launch_src!(c, NAME, &kn("emb_fwd", t), elems(o.size()), [&dp, &icode, &wp, &op, &total, &rows, &dim])
}

fn emb_bwd(c: &mut OpCall) -> Result<()> {
    need(c, 2, 1)?;
    let (g, d, dw) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    all_same(c, &[dw], g.dtype)?;
    let t = tag(c, g.dtype)?;
    if dw.shape.len() != 2 {
        return Err(Error::op(c.op.name, "the weight gradient must be 2-D (input_dim, output_dim)"));
    }
    let (rows, dim) = (dw.shape[0] as i64, dw.shape[1] as i64);
    let nw = dw.size() as u64;
    if nw == 0 {
        return Ok(());
    }
    let dwp = ptr(dw);
    launch_src!(c, NAME, &kn("zero", t), elems(dw.size()), [&dwp, &nw])?;
    let total = (d.size() as u64) * dim as u64;
    if total == 0 {
        return Ok(());
    }
    let icode = dcode(d.dtype);
    let (dp, gp) = (ptr(d), ptr(g));
    launch_src!(c, NAME, &kn("emb_bwd", t), elems(total as usize), [&dp, &icode, &gp, &dwp, &total, &rows, &dim])
}

// ---- L2Normalization -------------------------------------------------------------------

/// `(outer, red, inner)` of L2Normalization (the CPU's `l2n_geometry`).
fn l2n_layout(c: &OpCall, s: &[usize]) -> Result<(i64, i64, i64)> {
    let mode = c.params.str("mode");
    if s.len() < 2 || (mode != "instance" && s.len() < 3) {
        return Err(Error::op(c.op.name, format!("data with {} dimensions is not supported for mode '{mode}'", s.len())));
    }
    let rest: usize = s[2..].iter().product();
    let (o, r, i) = match mode {
        "instance" => (s[0], s[1..].iter().product(), 1),
        "channel" => (s[0], s[1], rest),
        _ => (s[0] * s[1], rest, 1),
    };
    Ok((o as i64, r as i64, i as i64))
}

fn l2n(c: &mut OpCall) -> Result<()> {
    need(c, 1, 1)?;
    let (x, y) = (&c.inputs[0], &c.outputs[0]);
    all_same(c, &[y], x.dtype)?;
    let t = tag(c, x.dtype)?;
    let (o, r, i) = l2n_layout(c, &x.shape)?;
    if y.size() == 0 {
        return Ok(());
    }
    let eps = c.params.float("eps");
    let (xp, yp) = (ptr(x), ptr(y));
    launch_src!(c, NAME, &kn("l2n_fwd", t), per_warp((o * i) as usize), [&xp, &yp, &o, &r, &i, &eps])
}

fn l2n_bwd(c: &mut OpCall) -> Result<()> {
    need(c, 2, 1)?;
    let (g, x, dx) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    all_same(c, &[x, dx], g.dtype)?;
    let t = tag(c, g.dtype)?;
    let (o, r, i) = l2n_layout(c, &x.shape)?;
    if dx.size() == 0 {
        return Ok(());
    }
    let eps = c.params.float("eps");
    let (gp, xp, dp) = (ptr(g), ptr(x), ptr(dx));
    launch_src!(c, NAME, &kn("l2n_bwd", t), per_warp((o * i) as usize), [&gp, &xp, &dp, &o, &r, &i, &eps])
}

// ---- LRN -------------------------------------------------------------------------------

/// LRN's (channels, H*W, half window, alpha, beta, knorm, nsize).
fn lrn_args(c: &OpCall, s: &[usize]) -> Result<(i64, i64, i64, f64, f64, f64, f64)> {
    if s.len() != 4 {
        return Err(Error::op(c.op.name, format!("data must be 4-D (N, C, H, W), got {} dimensions", s.len())));
    }
    let p = c.params;
    let nsize = p.int("nsize");
    Ok((s[1] as i64, (s[2] * s[3]) as i64, nsize / 2, p.float("alpha"), p.float("beta"), p.float("knorm"), nsize as f64))
}

fn lrn(c: &mut OpCall) -> Result<()> {
    need(c, 1, 1)?;
    let (x, y) = (&c.inputs[0], &c.outputs[0]);
    all_same(c, &[y], x.dtype)?;
    let t = tag(c, x.dtype)?;
    let (ch, hw, half, alpha, beta, k, size) = lrn_args(c, &x.shape)?;
    let total = y.size() as u64;
    if total == 0 {
        return Ok(());
    }
    let (xp, yp) = (ptr(x), ptr(y));
    launch_src!(c, NAME, &kn("lrn_fwd", t), elems(y.size()), [&xp, &yp, &total, &ch, &hw, &half, &alpha, &beta, &k, &size])
}

fn lrn_bwd(c: &mut OpCall) -> Result<()> {
    need(c, 2, 1)?;
    let (g, x, dx) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    all_same(c, &[x, dx], g.dtype)?;
    let t = tag(c, g.dtype)?;
    let (ch, hw, half, alpha, beta, k, size) = lrn_args(c, &x.shape)?;
    let total = dx.size() as u64;
    if total == 0 {
        return Ok(());
    }
    let (gp, xp, dp) = (ptr(g), ptr(x), ptr(dx));
    launch_src!(c, NAME, &kn("lrn_bwd", t), elems(dx.size()), [&gp, &xp, &dp, &total, &ch, &hw, &half, &alpha, &beta, &k, &size])
}

// ---- UpSampling (nearest) --------------------------------------------------------------

fn up_check(c: &OpCall, s: &[usize], oh: usize) -> Result<()> {
    if s.len() != 4 || s[2] == 0 || !oh.is_multiple_of(s[2]) {
        return Err(Error::op(c.op.name, "every input must be 4-D (N, C, H, W) with a whole scale"));
    }
    Ok(())
}

fn up(c: &mut OpCall) -> Result<()> {
    if c.params.str("sample_type") == "bilinear" {
        // A deconvolution: the Deconvolution op's CUDA kernels.
        let f = super::lookup("Deconvolution")?.cuda.ok_or_else(|| Error::op(c.op.name, "Deconvolution has no CUDA kernel"))?;
        return super::nn_extra::bilinear_compute(c, Some(f));
    }
    if c.params.str("sample_type") != "nearest" {
        return Err(Error::op(c.op.name, "only sample_type='nearest' or 'bilinear' is supported"));
    }
    need(c, 1, 1)?;
    let y = &c.outputs[0];
    if y.shape.len() != 4 {
        return Err(Error::op(c.op.name, "the output must be 4-D"));
    }
    let t = tag(c, y.dtype)?;
    let sum = c.params.str("multi_input_mode") == "sum";
    let (och, oh, ow) = (y.shape[1] as i64, y.shape[2] as i64, y.shape[3] as i64);
    let yp = ptr(y);
    let mut c0 = 0i64;
    for (j, x) in c.inputs.iter().enumerate() {
        all_same(c, &[x], y.dtype)?;
        up_check(c, &x.shape, oh as usize)?;
        let (ch, h, w) = (x.shape[1] as i64, x.shape[2] as i64, x.shape[3] as i64);
        let s = oh / h;
        let add = (sum && j > 0) as i32;
        let total = (y.shape[0] as u64) * ch as u64 * oh as u64 * ow as u64;
        let cs = if sum { 0 } else { c0 };
        if total > 0 {
            let xp = ptr(x);
            launch_src!(c, NAME, &kn("up_fwd", t), elems(total as usize), [&xp, &yp, &total, &ch, &h, &w, &och, &oh, &ow, &cs, &s, &add])?;
        }
        c0 += ch;
    }
    Ok(())
}

fn up_bwd(c: &mut OpCall) -> Result<()> {
    need(c, 2, 1)?;
    let g = &c.inputs[0];
    if g.shape.len() != 4 {
        return Err(Error::op(c.op.name, "the output gradient must be 4-D"));
    }
    let t = tag(c, g.dtype)?;
    let sum = c.params.str("multi_input_mode") == "sum";
    let (och, oh, ow) = (g.shape[1] as i64, g.shape[2] as i64, g.shape[3] as i64);
    let gp = ptr(g);
    let mut c0 = 0i64;
    for (x, dx) in c.inputs[1..].iter().zip(c.outputs.iter()) {
        all_same(c, &[x, dx], g.dtype)?;
        up_check(c, &x.shape, oh as usize)?;
        let (ch, h, w) = (x.shape[1] as i64, x.shape[2] as i64, x.shape[3] as i64);
        let s = oh / h;
        let cs = if sum { 0 } else { c0 };
        let total = dx.size() as u64;
        if total > 0 {
            let dp = ptr(dx);
            launch_src!(c, NAME, &kn("up_bwd", t), elems(dx.size()), [&gp, &dp, &total, &ch, &h, &w, &och, &oh, &ow, &cs, &s])?;
        }
        c0 += ch;
    }
    Ok(())
}

// ---- softmax_cross_entropy -------------------------------------------------------------

fn sce_dims(c: &OpCall, x: &Blob, l: &Blob) -> Result<(i64, i64)> {
    if x.shape.len() != 2 || l.size() != x.shape[0] {
        return Err(Error::op(c.op.name, "data must be (batch, classes) and label (batch,)"));
    }
    Ok((x.shape[0] as i64, x.shape[1] as i64))
}

fn sce(c: &mut OpCall) -> Result<()> {
    need(c, 2, 1)?;
    let (x, l, y) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    all_same(c, &[y], x.dtype)?;
    let t = tag(c, x.dtype)?;
    let (rows, k) = sce_dims(c, x, l)?;
    let d = crate::storage::cuda::device(c.ctx).map_err(|e| Error::op(c.op.name, e))?;
    let part = d.scratch(rows.max(1) as usize * 8).map_err(|e| Error::op(c.op.name, e))?;
    let (xp, lp, pp, yp, lcode, null) = (ptr(x), ptr(l), part.ptr, ptr(y), dcode(l.dtype), 0u64);
    if rows > 0 && k > 0 {
        launch_src!(c, NAME, &kn("sce_rows", t), per_warp(rows as usize), [&xp, &lp, &lcode, &pp, &null, &null, &rows, &k])?;
    }
    let rows = if k > 0 { rows } else { 0 };
    launch_src!(c, NAME, &kn("sum_part", t), cfg(1), [&pp, &yp, &rows])
}

fn sce_bwd(c: &mut OpCall) -> Result<()> {
    need(c, 3, 1)?;
    let (g, x, l, dx) = (&c.inputs[0], &c.inputs[1], &c.inputs[2], &c.outputs[0]);
    all_same(c, &[x, dx], g.dtype)?;
    let t = tag(c, g.dtype)?;
    let (rows, k) = sce_dims(c, x, l)?;
    if dx.size() == 0 {
        return Ok(());
    }
    if g.size() == 0 {
        return Err(Error::op(c.op.name, "the output gradient is empty"));
    }
    let (xp, lp, gp, dp, lcode, null) = (ptr(x), ptr(l), ptr(g), ptr(dx), dcode(l.dtype), 0u64);
    launch_src!(c, NAME, &kn("sce_rows", t), per_warp(rows as usize), [&xp, &lp, &lcode, &null, &gp, &dp, &rows, &k])
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPS: &[&str] = &[
        "Pooling",
        "_backward_Pooling",
        "Activation",
        "_backward_Activation",
        "LeakyReLU",
        "_backward_LeakyReLU",
        "BatchNorm",
        "BatchNorm_v1",
        "_backward_BatchNorm",
        "Dropout",
        "_backward_Dropout",
        "LayerNorm",
        "_backward_LayerNorm",
        "InstanceNorm",
        "_backward_InstanceNorm",
        "GroupNorm",
        "_backward_GroupNorm",
        "SoftmaxOutput",
        "Softmax",
        "_backward_SoftmaxOutput",
        "SoftmaxActivation",
        "_backward_SoftmaxActivation",
        "Embedding",
        "_backward_Embedding",
        "L2Normalization",
        "_backward_L2Normalization",
        "LRN",
        "_backward_LRN",
        "UpSampling",
        "_backward_UpSampling",
        "softmax_cross_entropy",
        "_backward_softmax_cross_entropy",
    ];

    #[test]
    fn every_nn_op_has_its_cuda_slot_filled() {
        for name in OPS {
            assert!(lookup(name).is_some(), "{name}");
            let op = super::super::lookup(name).unwrap();
            assert!(op.cuda.is_some(), "the registry fills {name}'s cuda slot");
        }
    }

    #[test]
    fn every_launched_kernel_is_in_the_source() {
        let src = crate::kernels::cuda::nn::source();
        for k in [
            "act_fwd",
            "act_bwd",
            "prelu_fwd",
            "prelu_bwd",
            "rrelu_fwd",
            "rrelu_bwd",
            "dropout_fwd",
            "dropout_id",
            "mul",
            "pool_fwd",
            "pool_bwd_scatter",
            "pool_bwd_gather",
            "zero",
            "ln_fwd",
            "ln_bwd_dx",
            "ln_bwd_dgb",
            "in_fwd",
            "in_bwd_dx",
            "in_bwd_dgb",
            "softmax_fwd",
            "softmax_bwd",
            "smo_bwd",
            "emb_fwd",
            "emb_bwd",
            "l2n_fwd",
            "l2n_bwd",
            "lrn_fwd",
            "lrn_bwd",
            "up_fwd",
            "up_bwd",
            "sce_rows",
            "sum_part",
            "gn_fwd",
            "gn_bwd_dx",
        ] {
            for t in ["f32", "f64", "f16", "bf16"] {
                assert!(src.contains(&format!("nn_{k}_##T(")), "{}", kn(k, t));
            }
        }
        for t in ["f32", "f64", "f16", "f16_f32", "bf16", "bf16_f32"] {
            assert!(src.contains(&format!("OX_NN_BN({t},")), "bn {t}");
        }
        assert!(src.contains("void nn_smo_count("));
    }

    #[test]
    fn struct_layouts_match_the_kernels() {
        assert_eq!(std::mem::size_of::<Strided>(), 8 + 2 * 8 * MAX_DIMS);
        // 18 + 6 int64 fields and one double.
        assert_eq!(std::mem::size_of::<Pool>(), 25 * 8);
    }

    #[test]
    fn prelu_layouts() {
        use super::super::nn::prelu_layout as pl;
        assert_eq!(pl(&[2, 3, 4], &[3]), Ok((3, 4)));
        assert_eq!(pl(&[2, 3, 4], &[1]), Ok((1, 24)));
        assert_eq!(pl(&[5], &[1]), Ok((1, 5)));
        assert_eq!(pl(&[5], &[5]), Ok((5, 1)));
        // per sample and channel, per sample, per channel as (1, C)
        assert_eq!(pl(&[2, 3, 4], &[2, 3]), Ok((6, 4)));
        assert_eq!(pl(&[2, 3, 4], &[2, 1]), Ok((2, 12)));
        assert_eq!(pl(&[2, 3, 4], &[1, 3]), Ok((3, 4)));
        // (N,) on 2-D data whose channels differ: one slope per sample, as MXNet
        assert_eq!(pl(&[2, 3], &[2]), Ok((2, 3)));
        assert!(pl(&[2, 3, 4], &[4]).is_err());
        assert!(pl(&[2, 3, 4], &[2, 3, 1]).is_err());
    }
}
