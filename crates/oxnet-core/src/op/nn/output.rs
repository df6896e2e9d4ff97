//! The output layers (`SoftmaxOutput`/`Softmax`, `SoftmaxActivation`, the regression
//! outputs) and `BlockGrad`/`stop_gradient`, `make_loss`, `MakeLoss`, with their
//! backward ops.

use super::dropout::two_same_infer;
use super::{copy_compute, fill_known, float_input, from_f64, head, outer_inner, rd, run_bwd, same_first, to_f64, wr, DATA};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::cpu::nn::{self as k, Act};
use crate::ndarray::NDArray;
use crate::op::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry};
use crate::shape::{fmt_shape, Shape};
use crate::with_float;

// ---- SoftmaxOutput ---------------------------------------------------------------------

const SMO_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("grad_scale", PType::Float, Some("1"), "Scales the gradient by a float factor."),
    ParamSpec::new("ignore_label", PType::Float, Some("-1"), "The instances whose `labels` == `ignore_label` will be ignored during backward, if `use_ignore` is set to ``true``)."),
    ParamSpec::new("multi_output", PType::Bool, Some("False"), "If set to ``true``, the softmax function will be computed along axis ``1``. This is applied when the shape of input array differs from the shape of label array."),
    ParamSpec::new("use_ignore", PType::Bool, Some("False"), "If set to ``true``, the `ignore_label` value will not contribute to the backward gradient."),
    ParamSpec::new("preserve_shape", PType::Bool, Some("False"), "If set to ``true``, the softmax function will be computed along the last axis (``-1``)."),
    ParamSpec::choice("normalization", &["batch", "null", "valid"], Some("null"), "Normalizes the gradient."),
    ParamSpec::new("out_grad", PType::Bool, Some("False"), "Multiplies gradient with output gradient element-wise."),
    ParamSpec::new("smooth_alpha", PType::Float, Some("0"), "Constant for computing a label smoothed version of cross-entropyfor the backwards pass.  This constant gets subtracted from theone-hot encoding of the gold label and distributed uniformly toall other labels."),
];

const DATA_LABEL: Arity = Arity::Fixed(&["data", "label"]);

/// The softmax layout of SoftmaxOutput: `(outer, classes, inner)`.
fn smo_layout(p: &Params, s: &[usize]) -> (usize, usize, usize) {
    let size: usize = s.iter().product();
    if p.bool("preserve_shape") {
        let last = *s.last().unwrap_or(&1);
        (size.checked_div(last).unwrap_or(0), last, 1)
    } else if p.bool("multi_output") {
        let (n, kk) = (s[0], s[1]);
        (n, kk, s[2..].iter().product())
    } else {
        let n = s[0];
        (n, size.checked_div(n).unwrap_or(0), 1)
    }
}

/// The label shape SoftmaxOutput expects for data of shape `s` (class indices).
fn smo_label_shape(p: &Params, s: &[usize]) -> Shape {
    if p.bool("multi_output") && !p.bool("preserve_shape") {
        let rest: usize = s[2..].iter().product();
        Shape::from_slice(&[s[0], rest])
    } else {
        Shape::from_slice(&s[..s.len() - 1])
    }
}

/// With `multi_output`, MXNet also takes class labels of shape `(batch, d1, d2, ...)`
/// for data `(batch, classes, d1, d2, ...)` (the same elements as `(batch, d1*d2*...)`).
fn smo_spatial_label(p: &Params, s: &[usize], label: &[usize]) -> bool {
    p.bool("multi_output")
        && !p.bool("preserve_shape")
        && s.len() > 2
        && label.len() == s.len() - 1
        && label[0] == s[0]
        && label[1..] == s[2..]
}

fn smo_check_data(op: &str, p: &Params, s: &[usize]) -> Result<()> {
    let need = if p.bool("multi_output") { 2 } else { 1 };
    if s.len() < need.max(2) && !(s.len() == 1 && p.bool("preserve_shape")) {
        return Err(Error::op(op, format!("data must have at least 2 dimensions (batch, classes), got shape {}", fmt_shape(s))));
    }
    Ok(())
}

fn smo_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "data")?;
    let s = a.shapes[0];
    smo_check_data(a.op.name, a.params, s)?;
    let want = smo_label_shape(a.params, s);
    if a.shapes[1] != &want[..] && a.shapes[1] != s && !smo_spatial_label(a.params, s, a.shapes[1]) {
        return Err(a.err(format!(
            "label has shape {} but data of shape {} needs label shape {} (class indices) or {} (probabilities)",
            fmt_shape(a.shapes[1]),
            fmt_shape(s),
            fmt_shape(&want),
            fmt_shape(s)
        )));
    }
    Ok(vec![same_first(a)])
}

fn smo_fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let Some(Some(d)) = shapes.first().cloned() else { return Ok(()) };
    smo_check_data("SoftmaxOutput", p, &d)?;
    if let Some(Some(l)) = shapes.get(1) {
        if l[..] == d[..] {
            return Ok(());
        }
    }
    fill_known("SoftmaxOutput", shapes, &[(1, "label")], &smo_label_shape(p, &d))
}

fn smo_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let (outer, n, inner) = smo_layout(c.params, &x.shape);
    with_float!(x.dtype, T, {
        let (xs, os) = (rd::<T>(x), wr::<T>(o));
        if x.dtype == DType::F64 {
            crate::kernels::cpu::softmax::softmax::<T, T, f64>(xs, os, outer, n, inner, 1.0, crate::kernels::cpu::softmax::Kind::Softmax);
        } else {
            crate::kernels::cpu::softmax::softmax::<T, T, f32>(xs, os, outer, n, inner, 1.0, crate::kernels::cpu::softmax::Kind::Softmax);
        }
    });
    Ok(())
}

fn smo_bwd_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "out_grad")?;
    if a.shapes[0] != a.shapes[2] {
        return Err(a.err(format!("out_grad has shape {} but output has shape {}", fmt_shape(a.shapes[0]), fmt_shape(a.shapes[2]))));
    }
    smo_check_data(a.op.name, a.params, a.shapes[2])?;
    let want = smo_label_shape(a.params, a.shapes[2]);
    if a.shapes[1] != &want[..] && a.shapes[1] != a.shapes[2] && !smo_spatial_label(a.params, a.shapes[2], a.shapes[1]) {
        return Err(a.err(format!("label has shape {} but {} was expected", fmt_shape(a.shapes[1]), fmt_shape(&want))));
    }
    Ok(vec![(Shape::from_slice(a.shapes[2]), a.dtypes[2])])
}

fn smo_bwd_compute(c: &mut OpCall) -> Result<()> {
    let p = c.params;
    let (g, l, y, dx) = (&c.inputs[0], &c.inputs[1], &c.inputs[2], &c.outputs[0]);
    let (outer, n, inner) = smo_layout(p, &y.shape);
    let soft = l.shape == y.shape;
    let label = to_f64(l);
    let ignore = p.float("ignore_label");
    let use_ignore = p.bool("use_ignore");
    let alpha = p.float("smooth_alpha");
    let multi = p.bool("multi_output") && !p.bool("preserve_shape");
    let groups = outer * inner;
    // Normalisation, as MXNet computes it.
    let valid = if soft { groups } else { label.iter().take(groups).filter(|v| **v != ignore).count() };
    let mut scale = p.float("grad_scale");
    match p.str("normalization") {
        "batch" => scale /= if multi { (outer * inner).max(1) } else { outer.max(1) } as f64,
        "valid" => scale /= valid.max(1) as f64,
        _ => {
            if multi {
                scale /= inner.max(1) as f64
            }
        }
    }
    let use_head = p.bool("out_grad");
    let head = if use_head { to_f64(g) } else { Vec::new() };
    let ys = to_f64(y);
    let mut out = vec![0.0f64; ys.len()];
    let off = if n > 1 { alpha / (n - 1) as f64 } else { 0.0 };
    for o in 0..outer {
        for j in 0..inner {
            let gi = o * inner + j;
            let base = o * n * inner + j;
            if soft {
                for kk in 0..n {
                    let i = base + kk * inner;
                    out[i] = (ys[i] - label[i]) * scale;
                }
                continue;
            }
            let lv = label[gi];
            if use_ignore && lv == ignore {
                continue;
            }
            let li = lv as i64;
            for kk in 0..n {
                let i = base + kk * inner;
                let t = if li == kk as i64 { 1.0 - alpha } else { off };
                out[i] = (ys[i] - t) * scale;
            }
        }
    }
    if use_head {
        for (v, h) in out.iter_mut().zip(&head) {
            *v *= h;
        }
    }
    from_f64(dx, &out);
    Ok(())
}

pub(super) fn smo_grad(p: &Params, i: &[NDArray], o: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    let g = og.first().cloned().unwrap_or_else(|| o[0].clone());
    let r = run_bwd("_backward_SoftmaxOutput", &[g, i[1].clone(), o[0].clone()], p)?;
    Ok(vec![r.into_iter().next(), None])
}

// ---- SoftmaxActivation -----------------------------------------------------------------

const SMA_PARAMS: &[ParamSpec] = &[ParamSpec::choice(
    "mode",
    &["channel", "instance"],
    Some("instance"),
    "Specifies how to compute the softmax. If set to ``instance``, it computes softmax for each instance. If set to ``channel``, It computes cross channel softmax for each position of each instance.",
)];

fn sma_layout(p: &Params, s: &[usize]) -> (usize, usize, usize) {
    if p.str("mode") == "channel" {
        outer_inner(s, 1)
    } else {
        outer_inner(s, s.len() - 1)
    }
}

fn sma_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "data")?;
    let s = a.shapes[0];
    if s.is_empty() || (a.params.str("mode") == "channel" && s.len() < 2) {
        return Err(a.err(format!("data of shape {} has too few dimensions for mode={}", fmt_shape(s), a.params.str("mode"))));
    }
    Ok(vec![same_first(a)])
}

fn sma_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let (outer, n, inner) = sma_layout(c.params, &x.shape);
    with_float!(x.dtype, T, {
        let (xs, os) = (rd::<T>(x), wr::<T>(o));
        if x.dtype == DType::F64 {
            crate::kernels::cpu::softmax::softmax::<T, T, f64>(xs, os, outer, n, inner, 1.0, crate::kernels::cpu::softmax::Kind::Softmax);
        } else {
            crate::kernels::cpu::softmax::softmax::<T, T, f32>(xs, os, outer, n, inner, 1.0, crate::kernels::cpu::softmax::Kind::Softmax);
        }
    });
    Ok(())
}

fn sma_bwd_compute(c: &mut OpCall) -> Result<()> {
    let (g, y, dx) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let (outer, n, inner) = sma_layout(c.params, &y.shape);
    with_float!(y.dtype, T, { k::softmax_backward::<T>(rd(g), rd(y), wr(dx), outer, n, inner) });
    Ok(())
}

fn sma_grad(p: &Params, _: &[NDArray], o: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    Ok(vec![run_bwd("_backward_SoftmaxActivation", &[head("SoftmaxActivation", og)?, o[0].clone()], p)?.into_iter().next()])
}

// ---- regression outputs ----------------------------------------------------------------

const REG_PARAMS: &[ParamSpec] = &[ParamSpec::new("grad_scale", PType::Float, Some("1"), "Scale the gradient by a float factor")];

/// The label shape a regression output infers for data of shape `s`: the data's
/// shape, without a trailing axis of length 1.
fn reg_label_shape(s: &[usize]) -> Shape {
    if s.len() >= 2 && s[s.len() - 1] == 1 {
        Shape::from_slice(&s[..s.len() - 1])
    } else {
        Shape::from_slice(s)
    }
}

fn reg_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "data")?;
    let s = a.shapes[0];
    if s.is_empty() {
        return Err(a.err("data must have at least one dimension"));
    }
    if a.shapes[1] != s && a.shapes[1] != &reg_label_shape(s)[..] {
        return Err(a.err(format!(
            "label has shape {} but data of shape {} needs label shape {}",
            fmt_shape(a.shapes[1]),
            fmt_shape(s),
            fmt_shape(&reg_label_shape(s))
        )));
    }
    Ok(vec![same_first(a)])
}

fn reg_fill(_: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let Some(Some(d)) = shapes.first().cloned() else { return Ok(()) };
    if let Some(Some(l)) = shapes.get(1) {
        if l[..] == d[..] {
            return Ok(());
        }
    }
    fill_known("RegressionOutput", shapes, &[(1, "label")], &reg_label_shape(&d))
}

/// 0: linear, 1: MAE, 2: logistic.
fn reg_compute<const K: u8>(c: &mut OpCall) -> Result<()> {
    if K == 2 {
        let (x, y) = (&c.inputs[0], &c.outputs[0]);
        with_float!(x.dtype, T, { k::act_forward::<T>(rd(x), wr(y), Act::Sigmoid) });
        Ok(())
    } else {
        copy_compute(c)
    }
}

fn reg_bwd_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 1, "output")?;
    if a.shapes[0].iter().product::<usize>() != a.shapes[1].iter().product::<usize>() {
        return Err(a.err(format!("label of shape {} does not match output of shape {}", fmt_shape(a.shapes[0]), fmt_shape(a.shapes[1]))));
    }
    Ok(vec![(Shape::from_slice(a.shapes[1]), a.dtypes[1])])
}

fn reg_bwd_compute<const K: u8>(c: &mut OpCall) -> Result<()> {
    let (l, y, dx) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let batch = l.shape.first().copied().unwrap_or(1).max(1);
    let per = (l.size() / batch).max(1);
    let scale = c.params.float("grad_scale") / per as f64;
    let (lv, yv) = (to_f64(l), to_f64(y));
    let out: Vec<f64> = yv
        .iter()
        .zip(&lv)
        .map(|(o, t)| {
            let d = o - t;
            scale * if K == 1 { d.signum() * (d != 0.0) as i32 as f64 } else { d }
        })
        .collect();
    from_f64(dx, &out);
    Ok(())
}

fn reg_grad<const K: u8>(p: &Params, i: &[NDArray], o: &[NDArray], _: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    let name = ["_backward_linear_reg_out", "_backward_mae_reg_out", "_backward_logistic_reg_out"][K as usize];
    Ok(vec![run_bwd(name, &[i[1].clone(), o[0].clone()], p)?.into_iter().next(), None])
}

// ---- BlockGrad, make_loss, MakeLoss ----------------------------------------------------

fn block_grad(_: &Params, _: &[NDArray], _: &[NDArray], _: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    Ok(vec![None])
}

fn make_loss_grad(_: &Params, i: &[NDArray], _: &[NDArray], _: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    Ok(vec![Some(crate::op::call1("ones_like", &i[..1], &[])?)])
}

const MAKELOSS_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("grad_scale", PType::Float, Some("1"), "Gradient scale as a supplement to unary and binary operators"),
    ParamSpec::new("valid_thresh", PType::Float, Some("0"), "clip each element in the array to 0 when it is less than ``valid_thresh``. This is used when ``normalization`` is set to ``'valid'``."),
    ParamSpec::choice("normalization", &["batch", "null", "valid"], Some("null"), "If this is set to null, the output gradient will not be normalized. If this is set to batch, the output gradient will be divided by the batch size. If this is set to valid, the output gradient will be divided by the number of valid input elements."),
];

fn any_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    Ok(vec![same_first(a)])
}

fn makeloss_bwd_compute(c: &mut OpCall) -> Result<()> {
    let (x, dx) = (&c.inputs[0], &c.outputs[0]);
    let p = c.params;
    let mut v = p.float("grad_scale");
    match p.str("normalization") {
        "batch" => v /= x.shape.first().copied().unwrap_or(1).max(1) as f64,
        "valid" => {
            let t = p.float("valid_thresh");
            v /= to_f64(x).iter().filter(|e| **e > t).count().max(1) as f64;
        }
        _ => {}
    }
    with_float!(dx.dtype, T, { wr::<T>(dx).fill(<T as crate::dtype::Element>::from_f64(v)) });
    Ok(())
}

fn makeloss_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "data")?;
    Ok(vec![same_first(a)])
}

fn makeloss_grad(p: &Params, i: &[NDArray], _: &[NDArray], _: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    Ok(vec![run_bwd("_backward_MakeLoss", &i[..1], p)?.into_iter().next()])
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "SoftmaxOutput",
            "Computes the gradient of cross entropy loss with respect to softmax output.

- This operator computes the gradient in two steps. The cross entropy loss does not
  actually need to be computed.

  - Applies softmax function on the input array.
  - Computes and returns the gradient of cross entropy loss w.r.t. the softmax output.

- The softmax function, cross entropy loss and gradient is given by:

  - Softmax Function: :math:`\\text{softmax}(x)_i = \\frac{exp(x_i)}{\\sum_j exp(x_j)}`
  - Cross Entropy Function: :math:`\\text{CE(label, output)} = - \\sum_i \\text{label}_i \\log(\\text{output}_i)`
  - The gradient of cross entropy loss w.r.t softmax output: :math:`\\text{gradient} = \\text{output} - \\text{label}`

The backward pass ignores the head gradient (unless ``out_grad``): the gradient is
``(softmax(data) - onehot(label)) * grad_scale``, normalised by ``normalization``.
With ``multi_output`` the softmax is over axis 1 and the label has shape
(n, d2*d3*...); with ``preserve_shape`` it is over the last axis; a label of the
data's shape is taken as probabilities.",
            DATA_LABEL,
            SMO_PARAMS,
            smo_infer,
            smo_compute,
        )
        .aliases(&["Softmax"])
        .grad(smo_grad)
        .fill(smo_fill)
        .cost(8),
    );
    r.add(
        OpDef::new(
            "_backward_SoftmaxOutput",
            "Gradient of SoftmaxOutput.",
            Arity::Fixed(&["ograd", "label", "output"]),
            SMO_PARAMS,
            smo_bwd_infer,
            smo_bwd_compute,
        )
        .cost(4),
    );

    r.add(
        OpDef::new(
            "SoftmaxActivation",
            "Applies softmax activation to input. This is intended for internal layers.

With ``mode=instance`` the softmax is along the last axis; with ``mode=channel``
it is along axis 1 (across channels, for every position of every instance).",
            DATA,
            SMA_PARAMS,
            sma_infer,
            sma_compute,
        )
        .unnamed_inputs()
        .grad(sma_grad)
        .cost(8),
    );
    r.add(
        OpDef::new(
            "_backward_SoftmaxActivation",
            "Gradient of SoftmaxActivation.",
            Arity::Fixed(&["out_grad", "output"]),
            SMA_PARAMS,
            two_same_infer,
            sma_bwd_compute,
        )
        .cost(4),
    );

    const REG_DOC: &str = "The backward pass ignores the head gradient: the gradient is
``grad_scale / num_output * d`` where ``num_output`` is the label's size over its
first dimension.";
    let reg = [
        ("LinearRegressionOutput", "Computes and optimizes for squared loss during backward propagation. Just outputs ``data`` during forward propagation; the gradient is ``out - label``.", "_backward_linear_reg_out"),
        ("MAERegressionOutput", "Computes mean absolute error of the input. Just outputs ``data`` during forward propagation; the gradient is ``sign(out - label)``.", "_backward_mae_reg_out"),
        ("LogisticRegressionOutput", "Applies a logistic function to the input: ``1/(1+exp(-data))`` during forward propagation; the gradient is ``out - label``.", "_backward_logistic_reg_out"),
    ];
    let doc = |s: &str| -> &'static str { Box::leak(format!("{s}\n\n{REG_DOC}").into_boxed_str()) };
    r.add(OpDef::new(reg[0].0, doc(reg[0].1), DATA_LABEL, REG_PARAMS, reg_infer, reg_compute::<0>).grad(reg_grad::<0>).fill(reg_fill));
    r.add(OpDef::new(reg[1].0, doc(reg[1].1), DATA_LABEL, REG_PARAMS, reg_infer, reg_compute::<1>).grad(reg_grad::<1>).fill(reg_fill));
    r.add(
        OpDef::new(reg[2].0, doc(reg[2].1), DATA_LABEL, REG_PARAMS, reg_infer, reg_compute::<2>).grad(reg_grad::<2>).fill(reg_fill).cost(4),
    );
    let lo = Arity::Fixed(&["label", "output"]);
    r.add(OpDef::new(reg[0].2, "Gradient of LinearRegressionOutput.", lo, REG_PARAMS, reg_bwd_infer, reg_bwd_compute::<0>));
    r.add(OpDef::new(reg[1].2, "Gradient of MAERegressionOutput.", lo, REG_PARAMS, reg_bwd_infer, reg_bwd_compute::<1>));
    r.add(OpDef::new(reg[2].2, "Gradient of LogisticRegressionOutput.", lo, REG_PARAMS, reg_bwd_infer, reg_bwd_compute::<0>));

    r.add(
        OpDef::new(
            "BlockGrad",
            "Stops gradient computation.

Stops the accumulated gradient of the inputs from flowing through this operator
in the backward direction. In other words, this operator prevents the contribution
of its inputs to be taken into account for computing gradients.",
            DATA,
            &[],
            any_infer,
            copy_compute,
        )
        .unnamed_inputs()
        .aliases(&["stop_gradient"])
        .grad(block_grad)
        .inplace(),
    );
    r.add(
        OpDef::new(
            "make_loss",
            "Make your own loss function in network construction.

The output is the input; in the backward pass the gradient of the input is ones
(the head gradient is ignored), so the array can end a network as its loss.",
            DATA,
            &[],
            any_infer,
            copy_compute,
        )
        .unnamed_inputs()
        .grad(make_loss_grad)
        .inplace(),
    );
    r.add(
        OpDef::new(
            "MakeLoss",
            "Make your own loss function in network construction.

The output is the input. In the backward pass the gradient of the input is
``grad_scale`` (the head gradient is ignored), divided by the batch size
(``normalization='batch'``) or by the number of elements greater than
``valid_thresh`` (``normalization='valid'``).",
            DATA,
            MAKELOSS_PARAMS,
            makeloss_infer,
            copy_compute,
        )
        .grad(makeloss_grad)
        .inplace(),
    );
    r.add(OpDef::new("_backward_MakeLoss", "Gradient of MakeLoss.", DATA, MAKELOSS_PARAMS, makeloss_infer, makeloss_bwd_compute));
}
