//! `Activation` and `LeakyReLU` (leaky, prelu, rrelu, elu, selu, gelu), with their
//! backward ops.

use super::{fill_known, float_input, head, names, need_outputs, rd, run_bwd, same_first, wr, DATA};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::cpu::nn::{self as k, Act};
use crate::ndarray::NDArray;
use crate::op::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry};
use crate::random::uniform01;
use crate::shape::{fmt_shape, Shape};
use crate::with_float;

// ---- Activation ------------------------------------------------------------------------

const ACT_PARAMS: &[ParamSpec] =
    &[ParamSpec::choice("act_type", &["relu", "sigmoid", "softrelu", "softsign", "tanh"], None, "Activation function to be applied.")];

fn act_of(p: &Params) -> Act {
    match p.str("act_type") {
        "relu" => Act::Relu,
        "sigmoid" => Act::Sigmoid,
        "tanh" => Act::Tanh,
        "softrelu" => Act::SoftRelu,
        "softsign" => Act::SoftSign,
        "elu" => Act::Elu(p.float("slope")),
        "selu" => Act::Selu,
        "gelu" => Act::Gelu,
        _ => Act::Leaky(p.float("slope")),
    }
}

fn act_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "data")?;
    Ok(vec![same_first(a)])
}

fn act_compute(c: &mut OpCall) -> Result<()> {
    let (x, y) = (&c.inputs[0], &c.outputs[0]);
    let act = act_of(c.params);
    with_float!(x.dtype, T, { k::act_forward::<T>(rd(x), wr(y), act) });
    Ok(())
}

fn act_bwd_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "out_grad")?;
    crate::op::check_same_shape(a)?;
    crate::op::check_same_dtype(a)?;
    Ok(vec![same_first(a)])
}

fn act_bwd_compute(c: &mut OpCall) -> Result<()> {
    let (g, x, y, dx) = (&c.inputs[0], &c.inputs[1], &c.inputs[2], &c.outputs[0]);
    let act = act_of(c.params);
    with_float!(x.dtype, T, { k::act_backward::<T>(rd(g), rd(x), rd(y), wr(dx), act) });
    Ok(())
}

pub(super) fn act_grad(p: &Params, i: &[NDArray], o: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    if crate::autograd::is_recording() {
        return Ok(vec![Some(act_grad_recorded(p.str("act_type"), &i[0], &o[0], &head("Activation", og)?)?)]);
    }
    let dx = run_bwd("_backward_Activation", &[head("Activation", og)?, i[0].clone(), o[0].clone()], p)?;
    Ok(vec![dx.into_iter().next()])
}

/// Activation's gradient made of elementwise ops, for a backward that is recorded
/// (`create_graph`) so that it can be differentiated again.
fn act_grad_recorded(act: &str, x: &NDArray, y: &NDArray, g: &NDArray) -> Result<NDArray> {
    let sc = |name: &str, a: &NDArray, v: f64| crate::op::call1(name, std::slice::from_ref(a), &[("scalar", crate::op::Value::Float(v))]);
    let un = |name: &str, a: &NDArray| crate::op::call1(name, std::slice::from_ref(a), &[]);
    let mul = |a: &NDArray, b: &NDArray| crate::op::call1("elemwise_mul", &[a.clone(), b.clone()], &[]);
    let d = match act {
        "relu" => sc("_greater_scalar", x, 0.0)?,
        "sigmoid" => mul(y, &sc("_rminus_scalar", y, 1.0)?)?,
        "tanh" => sc("_rminus_scalar", &un("square", y)?, 1.0)?,
        "softrelu" => un("sigmoid", x)?,
        _ => un("reciprocal", &un("square", &sc("_plus_scalar", &un("abs", x)?, 1.0)?)?)?,
    };
    mul(g, &d)
}

// ---- LeakyReLU -------------------------------------------------------------------------

const LRELU_PARAMS: &[ParamSpec] = &[
    ParamSpec::choice("act_type", &["elu", "gelu", "leaky", "prelu", "rrelu", "selu"], Some("leaky"), "Activation function to be applied."),
    ParamSpec::new("slope", PType::Float, Some("0.25"), "Init slope for the activation. (For leaky and elu only)"),
    ParamSpec::new("lower_bound", PType::Float, Some("0.125"), "Lower bound of random slope. (For rrelu only)"),
    ParamSpec::new("upper_bound", PType::Float, Some("0.334"), "Upper bound of random slope. (For rrelu only)"),
];

fn lrelu_inputs(p: &Params) -> &'static [&'static str] {
    if p.str("act_type") == "prelu" {
        &["data", "gamma"]
    } else {
        &["data"]
    }
}

fn lrelu_output_names(p: &Params) -> Vec<String> {
    names(&["output", "mask"][..lrelu_visible(p)])
}

fn lrelu_visible(p: &Params) -> usize {
    if p.str("act_type") == "rrelu" {
        2
    } else {
        1
    }
}

/// How PReLU's `gamma` of shape `gamma` spreads over data of shape `data`, as MXNet
/// 1.9.1 broadcasts it: gamma's axes align from the right with the data's first two
/// axes (a slope per channel `(C,)`, per sample and channel `(N, C)`, per sample
/// `(N, 1)`, or one slope), each equal to the data's size or 1. The result
/// `(groups, inner)`: element `i` of the data uses slope `(i / inner) % groups`
/// (one group: slope 0 everywhere). Err: gamma does not broadcast so.
pub(in crate::op) fn prelu_layout(data: &[usize], gamma: &[usize]) -> std::result::Result<(usize, usize), String> {
    let total: usize = data.iter().product();
    let nd = data.len();
    let mut e = vec![1usize; nd];
    let mut s = gamma.len() as isize - 1;
    for i in (0..nd).rev() {
        if s >= 0 && i <= 1 && (data[i] == gamma[s as usize] || gamma[s as usize] == 1) {
            e[i] = gamma[s as usize];
            s -= 1;
        }
    }
    if s != -1 {
        return Err(format!(
            "gamma of shape {} does not broadcast to data of shape {}: its axes must match the data's first two axes (from the right), \
             each equal to the data's size or 1, e.g. ({},) for one slope per channel",
            fmt_shape(gamma),
            fmt_shape(data),
            data.get(1).copied().unwrap_or(1)
        ));
    }
    let (e0, e1) = (e.first().copied().unwrap_or(1), e.get(1).copied().unwrap_or(1));
    let rest: usize = data.iter().skip(2).product();
    Ok(match (e0 > 1, e1 > 1) {
        (true, true) => (data[0] * data[1], rest),
        (true, false) => (data[0], total.checked_div(data[0]).unwrap_or(0)),
        (false, true) => (data[1], rest),
        (false, false) => (1, total),
    })
}

fn lrelu_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let d = float_input(a, 0, "data")?;
    let p = a.params;
    if p.str("act_type") == "prelu" {
        prelu_layout(a.shapes[0], a.shapes[1]).map_err(|m| a.err(m))?;
        if a.dtypes[1] != d {
            return Err(a.err(format!("gamma has dtype {} but data has dtype {}", a.dtypes[1].name(), d.name())));
        }
    }
    if p.str("act_type") == "rrelu" {
        let (lo, hi) = (p.float("lower_bound"), p.float("upper_bound"));
        if lo > hi {
            return Err(a.err(format!("lower_bound ({lo}) must not exceed upper_bound ({hi})")));
        }
        return Ok(vec![same_first(a), same_first(a)]);
    }
    Ok(vec![same_first(a)])
}

/// An unknown gamma is one slope per channel (axis 1; one slope for 1-D data), as
/// MXNet infers it; a known one is checked by inference.
fn lrelu_fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    if p.str("act_type") == "prelu" {
        if let (Some(Some(d)), Some(None)) = (shapes.first().cloned(), shapes.get(1)) {
            let ch = if d.len() >= 2 { d[1] } else { 1 };
            fill_known("LeakyReLU", shapes, &[(1, "gamma")], &[ch])?;
        }
    }
    Ok(())
}

fn lrelu_compute(c: &mut OpCall) -> Result<()> {
    let x = &c.inputs[0];
    let y = &c.outputs[0];
    let p = c.params;
    match p.str("act_type") {
        "prelu" => {
            let (ch, inner) = prelu_layout(&x.shape, &c.inputs[1].shape).map_err(|m| Error::op(c.op.name, m))?;
            with_float!(x.dtype, T, { k::prelu_forward::<T>(rd(x), rd(&c.inputs[1]), wr(y), ch, inner) });
        }
        "rrelu" => {
            let (lo, hi) = (p.float("lower_bound"), p.float("upper_bound"));
            let mask = &c.outputs[1];
            if c.is_train {
                let key = c.rng.as_mut().map(|g| g.next_key()).ok_or_else(|| Error::op(c.op.name, "no random generator"))?;
                with_float!(x.dtype, T, {
                    k::rrelu_forward::<T>(rd(x), wr(y), wr(mask), move |i| lo + (hi - lo) * uniform01(key, i as u64))
                });
            } else {
                let s = (lo + hi) / 2.0;
                with_float!(x.dtype, T, { k::rrelu_forward::<T>(rd(x), wr(y), wr(mask), move |_| s) });
            }
        }
        _ => {
            let act = act_of(p);
            with_float!(x.dtype, T, { k::act_forward::<T>(rd(x), wr(y), act) });
        }
    }
    Ok(())
}

fn lrelu_bwd_inputs(p: &Params) -> &'static [&'static str] {
    match p.str("act_type") {
        "prelu" => &["out_grad", "data", "output", "gamma"],
        "rrelu" => &["out_grad", "data", "output", "mask"],
        _ => &["out_grad", "data", "output"],
    }
}

fn lrelu_bwd_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "out_grad")?;
    for i in 1..3 {
        if a.shapes[i] != a.shapes[0] {
            return Err(a.err(format!("out_grad has shape {} but input {i} has shape {}", fmt_shape(a.shapes[0]), fmt_shape(a.shapes[i]))));
        }
    }
    if a.params.str("act_type") == "prelu" {
        return Ok(vec![same_first(a), (Shape::from_slice(a.shapes[3]), a.dtypes[3])]);
    }
    Ok(vec![same_first(a)])
}

fn lrelu_bwd_compute(c: &mut OpCall) -> Result<()> {
    let (g, x, y, dx) = (&c.inputs[0], &c.inputs[1], &c.inputs[2], &c.outputs[0]);
    match c.params.str("act_type") {
        "prelu" => {
            let (ch, inner) = prelu_layout(&x.shape, &c.inputs[3].shape).map_err(|m| Error::op(c.op.name, m))?;
            with_float!(x.dtype, T, { k::prelu_backward::<T>(rd(g), rd(x), rd(&c.inputs[3]), wr(dx), wr(&c.outputs[1]), ch, inner) });
        }
        "rrelu" => with_float!(x.dtype, T, { k::rrelu_backward::<T>(rd(g), rd(x), rd(&c.inputs[3]), wr(dx)) }),
        _ => {
            let act = act_of(c.params);
            with_float!(x.dtype, T, { k::act_backward::<T>(rd(g), rd(x), rd(y), wr(dx), act) });
        }
    }
    Ok(())
}

pub(super) fn lrelu_grad(p: &Params, i: &[NDArray], o: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    let mut ins = vec![head("LeakyReLU", og)?, i[0].clone(), o[0].clone()];
    match p.str("act_type") {
        "prelu" => ins.push(i[1].clone()),
        "rrelu" => {
            need_outputs("LeakyReLU", o, 2)?;
            ins.push(o[1].clone());
        }
        _ => {}
    }
    Ok(run_bwd("_backward_LeakyReLU", &ins, p)?.into_iter().map(Some).collect())
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "Activation",
            "Applies an activation function element-wise to the input.

The following activation functions are supported:

- `relu`: Rectified Linear Unit, :math:`y = max(x, 0)`
- `sigmoid`: :math:`y = \\frac{1}{1 + exp(-x)}`
- `tanh`: Hyperbolic tangent, :math:`y = \\frac{exp(x) - exp(-x)}{exp(x) + exp(-x)}`
- `softrelu`: Soft ReLU, or SoftPlus, :math:`y = log(1 + exp(x))`
- `softsign`: :math:`y = \\frac{x}{1 + abs(x)}`",
            DATA,
            ACT_PARAMS,
            act_infer,
            act_compute,
        )
        .unnamed_inputs()
        .grad(act_grad)
        .cost(4),
    );
    r.add(
        OpDef::new(
            "_backward_Activation",
            "Gradient of Activation.",
            Arity::Fixed(&["out_grad", "data", "output"]),
            ACT_PARAMS,
            act_bwd_infer,
            act_bwd_compute,
        )
        .cost(4),
    );

    r.add(
        OpDef::new(
            "LeakyReLU",
            "Applies Leaky rectified linear unit activation element-wise to the input.

Leaky ReLUs attempt to fix the \"dying ReLU\" problem by allowing a small `slope`
when the input is negative and has a slope of one when input is positive.

The following modified ReLU Activation functions are supported:

- *elu*: Exponential Linear Unit. `y = x > 0 ? x : slope * (exp(x)-1)`
- *selu*: Scaled Exponential Linear Unit. `y = lambda * (x > 0 ? x : alpha * (exp(x) - 1))` where
  *lambda = 1.0507009873554804934193349852946* and *alpha = 1.6732632423543772848170429916717*.
- *leaky*: Leaky ReLU. `y = x > 0 ? x : slope * x`
- *prelu*: Parametric ReLU. This is same as *leaky* except that `slope` is learnt during training.
- *rrelu*: Randomized ReLU. same as *leaky* but the `slope` is uniformly and randomly chosen from
  *[lower_bound, upper_bound)* for training, while fixed to be
  *(lower_bound+upper_bound)/2* for inference.
- *gelu*: Gaussian Error Linear Unit. `y = 0.5 * x * (1 + erf(x / sqrt(2)))`",
            Arity::Dynamic { all: &["data", "gamma"], select: lrelu_inputs },
            LRELU_PARAMS,
            lrelu_infer,
            lrelu_compute,
        )
        .grad(lrelu_grad)
        .visible(lrelu_visible)
        .outputs(lrelu_visible)
        .output_names(lrelu_output_names)
        .fill(lrelu_fill)
        .random()
        .cost(4),
    );
    r.add(
        OpDef::new(
            "_backward_LeakyReLU",
            "Gradient of LeakyReLU.",
            Arity::Dynamic { all: &["out_grad", "data", "output", "gamma", "mask"], select: lrelu_bwd_inputs },
            LRELU_PARAMS,
            lrelu_bwd_infer,
            lrelu_bwd_compute,
        )
        .cost(4),
    );
}
