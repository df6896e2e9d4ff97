//! `_contrib_SyncBatchNorm` (`mx.nd.contrib.SyncBatchNorm`): batch normalization on
//! axis 1 whose statistics are those of the whole mini-batch split over `ndev`
//! devices. oxnet runs it on one device per call (`ndev=1`), where the synchronised
//! statistics are the local ones: it is BatchNorm (the same forward and backward
//! cores, see `nn.rs`) with MXNet's SyncBatchNorm interface: no `axis`, a `key`,
//! and a third output that is the batch variance (BatchNorm's is the inverse
//! standard deviation). `ndev > 1` (several devices meeting at a barrier keyed by
//! `key`) is an error naming the limitation.
//!
//! Outside training (and with `use_global_stats`) the `mean` and `var` outputs are
//! the moving statistics used (MXNet leaves them unwritten there).

use super::nn::{
    bn_backward, bn_dtype_fill, bn_forward, bn_train_writes, expect_shape, fill_known, float_input, from_f64, head, need_outputs, run_bwd,
    same_first, to_f64, BnCfg,
};
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};

const NAME: &str = "_contrib_SyncBatchNorm";

const PARAMS: &[ParamSpec] = &[
    ParamSpec::new("eps", PType::Float, Some("0.001"), "Epsilon to prevent div 0"),
    ParamSpec::new("momentum", PType::Float, Some("0.9"), "Momentum for moving average"),
    ParamSpec::new("fix_gamma", PType::Bool, Some("True"), "Fix gamma while training"),
    ParamSpec::new(
        "use_global_stats",
        PType::Bool,
        Some("False"),
        "Whether use global moving statistics instead of local batch-norm. This will force change batch-norm into a scale shift operator.",
    ),
    ParamSpec::new("output_mean_var", PType::Bool, Some("False"), "Output All,normal mean and var"),
    ParamSpec::new("ndev", PType::Int, Some("1"), "The count of GPU devices"),
    ParamSpec::new("key", PType::Str, None, "Hash key for synchronization"),
];

const VEC: [&str; 4] = ["gamma", "beta", "moving_mean", "moving_var"];

fn cfg(p: &Params) -> BnCfg {
    BnCfg {
        ax: 1,
        eps: p.float("eps"),
        momentum: p.float("momentum"),
        fix_gamma: p.bool("fix_gamma"),
        use_global_stats: p.bool("use_global_stats"),
    }
}

fn check_ndev(op: &str, p: &Params) -> Result<()> {
    let n = p.int("ndev");
    if n != 1 {
        return Err(Error::op(
            op,
            format!(
                "ndev={n}: sharing batch statistics across devices is not supported by oxnet; \
                 each call normalizes its own batch (use ndev=1, which is BatchNorm on axis 1)"
            ),
        ));
    }
    Ok(())
}

fn data_channels(a: &InferArgs, i: usize) -> Result<usize> {
    let s = a.shapes[i];
    if s.len() < 2 {
        return Err(a.err(format!("data must have at least 2 dimensions (N, C, ...), got shape {}", fmt_shape(s))));
    }
    Ok(s[1])
}

fn infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    check_ndev(a.op.name, a.params)?;
    float_input(a, 0, "data")?;
    let ch = data_channels(a, 0)?;
    let why = format!("data of shape {} ({ch} channels on axis 1)", fmt_shape(a.shapes[0]));
    for (j, name) in VEC.iter().enumerate() {
        expect_shape(a, j + 1, name, &[ch], &why)?;
        float_input(a, j + 1, name)?;
    }
    let pd = a.dtypes[1];
    Ok(vec![same_first(a), (Shape::from_slice(&[ch]), pd), (Shape::from_slice(&[ch]), pd)])
}

fn fill(_: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let Some(Some(d)) = shapes.first().cloned() else { return Ok(()) };
    if d.len() < 2 {
        return Err(Error::op(NAME, format!("data must have at least 2 dimensions (N, C, ...), got shape {}", fmt_shape(&d))));
    }
    fill_known(NAME, shapes, &[(1, "gamma"), (2, "beta"), (3, "moving_mean"), (4, "moving_var")], &[d[1]])
}

fn compute(c: &mut OpCall) -> Result<()> {
    check_ndev(c.op.name, c.params)?;
    let (mean, var, _) = bn_forward(c, &cfg(c.params));
    from_f64(&c.outputs[1], &mean);
    from_f64(&c.outputs[2], &var);
    Ok(())
}

fn visible(p: &Params) -> usize {
    if p.bool("output_mean_var") {
        3
    } else {
        1
    }
}

fn output_names(_: &Params) -> Vec<String> {
    vec!["output".into(), "mean".into(), "var".into()]
}

fn grad(p: &Params, i: &[NDArray], o: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    need_outputs(NAME, o, 3)?;
    let ins = [head(NAME, og)?, i[0].clone(), i[1].clone(), o[1].clone(), o[2].clone(), i[3].clone(), i[4].clone()];
    let r = run_bwd("_backward_contrib_SyncBatchNorm", &ins, p)?;
    let mut v: Vec<Option<NDArray>> = r.into_iter().map(Some).collect();
    v.extend([None, None]);
    Ok(v)
}

fn bwd_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "out_grad")?;
    if a.shapes[0] != a.shapes[1] {
        return Err(a.err(format!("out_grad has shape {} but data has shape {}", fmt_shape(a.shapes[0]), fmt_shape(a.shapes[1]))));
    }
    let ch = data_channels(a, 1)?;
    for (i, name) in [(2, "gamma"), (3, "mean"), (4, "var"), (5, "moving_mean"), (6, "moving_var")] {
        expect_shape(a, i, name, &[ch], "the data's channel count")?;
    }
    let v = (Shape::from_slice(&[ch]), a.dtypes[2]);
    Ok(vec![same_first(a), v.clone(), v])
}

fn bwd_compute(c: &mut OpCall) -> Result<()> {
    let cfg = cfg(c.params);
    let mean = to_f64(&c.inputs[3]);
    let var = to_f64(&c.inputs[4]);
    let invstd: Vec<f64> = var.iter().map(|v| 1.0 / (v + cfg.eps).sqrt()).collect();
    bn_backward(c, &cfg, &mean, &invstd, &var);
    Ok(())
}

pub fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            NAME,
            "Batch normalization over the whole mini-batch (axis 1), as
``mx.nd.contrib.SyncBatchNorm``: ``out = (data - mean) / sqrt(var + eps) * gamma + beta``
with the batch's mean and (biased) variance per channel in training, the moving
statistics otherwise (or with ``use_global_stats``). The backward pass updates
``moving_mean``/``moving_var`` with ``momentum`` in training. With
``output_mean_var=True`` it also returns the mean and the variance. ``key`` names
the synchronisation; oxnet normalizes each call's batch on its own device
(``ndev`` must be 1).",
            Arity::Fixed(&["data", "gamma", "beta", "moving_mean", "moving_var"]),
            PARAMS,
            infer,
            compute,
        )
        .dtype_fill(bn_dtype_fill)
        .grad(grad)
        .mutate(&[3, 4])
        .train_writes(bn_train_writes)
        .visible(visible)
        .outputs(|_| 3)
        .output_names(output_names)
        .fill(fill)
        .cost(4),
    );
    r.add(
        OpDef::new(
            "_backward_contrib_SyncBatchNorm",
            "Gradient of SyncBatchNorm: the gradients of data, gamma and beta; in training it also updates the moving statistics from the batch's.",
            Arity::Fixed(&["out_grad", "data", "gamma", "mean", "var", "moving_mean", "moving_var"]),
            PARAMS,
            bwd_infer,
            bwd_compute,
        )
        .mutate(&[5, 6])
        .cost(4),
    );
}
