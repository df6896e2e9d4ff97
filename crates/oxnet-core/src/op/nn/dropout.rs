//! `Dropout` (with `axes` for variational dropout) and its backward op.

use super::{copy_compute, float_input, head, names, need_outputs, rd, run_bwd, same_first, wr, DATA};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::cpu::nn::{self as k};
use crate::ndarray::NDArray;
use crate::op::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry};
use crate::random::uniform01;
use crate::shape::Shape;
use crate::with_float;

// ---- Dropout ---------------------------------------------------------------------------

const DROPOUT_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("p", PType::Float, Some("0.5"), "Fraction of the input that gets dropped out during training time."),
    ParamSpec::choice(
        "mode",
        &["always", "training"],
        Some("training"),
        "Whether to only turn on dropout during training or to also turn on for inference.",
    ),
    ParamSpec::new("axes", PType::Tuple, Some("()"), "Axes for variational dropout kernel."),
    ParamSpec::new(
        "cudnn_off",
        PType::Bool,
        Some("False"),
        "Whether to turn off cudnn in dropout operator. This option is ignored if axes is specified.",
    ),
];

fn dropout_axes(op: &str, p: &Params, nd: usize) -> Result<Vec<usize>> {
    p.tuple("axes")
        .iter()
        .map(|&a| {
            if a < -(nd as i64) || a >= nd as i64 {
                Err(Error::op(op, format!("axes entry {a} is out of range for data with {nd} dimensions")))
            } else {
                Ok(a.rem_euclid(nd.max(1) as i64) as usize)
            }
        })
        .collect()
}

fn dropout_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, "data")?;
    let pr = a.params.float("p");
    if !(0.0..=1.0).contains(&pr) {
        return Err(a.err(format!("value {pr} for Parameter p exceed bound [0,1]")));
    }
    dropout_axes(a.op.name, a.params, a.shapes[0].len())?;
    Ok(vec![same_first(a), same_first(a)])
}

fn dropout_compute(c: &mut OpCall) -> Result<()> {
    let (x, y, m) = (&c.inputs[0], &c.outputs[0], &c.outputs[1]);
    let pr = c.params.float("p");
    let active = (c.is_train || c.params.str("mode") == "always") && pr > 0.0;
    if !active {
        copy_compute(c)?;
        with_float!(m.dtype, T, { wr::<T>(m).fill(<T as crate::dtype::Element>::from_f64(1.0)) });
        return Ok(());
    }
    let key = c.rng.as_mut().map(|g| g.next_key()).ok_or_else(|| Error::op(c.op.name, "no random generator"))?;
    let axes = dropout_axes(c.op.name, c.params, x.shape.len())?;
    if axes.is_empty() {
        with_float!(x.dtype, T, { k::dropout::<T>(rd(x), wr(y), wr(m), pr, move |i| uniform01(key, i as u64)) });
    } else {
        // Elements that differ only along `axes` share a draw: index the draw by
        // the position with those axes zeroed.
        let shape = x.shape.clone();
        let st = crate::shape::strides(&shape);
        let shared: Vec<bool> = (0..shape.len()).map(|d| axes.contains(&d)).collect();
        let draw = move |i: usize| {
            let mut rem = i;
            let mut key_i = 0usize;
            for d in 0..shape.len() {
                let q = rem / st[d];
                rem %= st[d];
                if !shared[d] {
                    key_i += q * st[d];
                }
            }
            uniform01(key, key_i as u64)
        };
        with_float!(x.dtype, T, { k::dropout::<T>(rd(x), wr(y), wr(m), pr, draw) });
    }
    Ok(())
}

pub(super) fn two_same_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    float_input(a, 0, a.op.input_names(a.params)[0].as_str())?;
    crate::op::check_same_shape(a)?;
    crate::op::check_same_dtype(a)?;
    Ok(vec![same_first(a)])
}

fn dropout_bwd_compute(c: &mut OpCall) -> Result<()> {
    let (g, m, dx) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    with_float!(g.dtype, T, { k::mul::<T>(rd(g), rd(m), wr(dx)) });
    Ok(())
}

fn dropout_grad(p: &Params, _: &[NDArray], o: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    need_outputs("Dropout", o, 2)?;
    Ok(run_bwd("_backward_Dropout", &[head("Dropout", og)?, o[1].clone()], p)?.into_iter().map(Some).collect())
}

/// The gradient of `_backward_Dropout(out_grad, mask) = out_grad * mask`: linear in
/// `out_grad` with the same mask; the mask holds random draws, no gradient.
fn dropout_bwd_grad(p: &Params, i: &[NDArray], _: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    let g = run_bwd("_backward_Dropout", &[head("_backward_Dropout", og)?, i[1].clone()], p)?;
    Ok(vec![g.into_iter().next(), None])
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "Dropout",
            "Applies dropout operation to input array.

- During training, each element of the input is set to zero with probability p.
  The whole array is rescaled by :math:`1/(1-p)` to keep the expected
  sum of the input unchanged.

- During testing, this operator does not change the input if mode is 'training'.
  If mode is 'always', the same computation as during training will be applied.

``axes`` lists axes along which one random draw is shared (variational dropout).",
            DATA,
            DROPOUT_PARAMS,
            dropout_infer,
            dropout_compute,
        )
        .grad(dropout_grad)
        .visible(|_| 1)
        .output_names(|_| names(&["output", "mask"]))
        .random(),
    );
    r.add(
        OpDef::new(
            "_backward_Dropout",
            "Gradient of Dropout.",
            Arity::Fixed(&["out_grad", "mask"]),
            DROPOUT_PARAMS,
            two_same_infer,
            dropout_bwd_compute,
        )
        .grad(dropout_bwd_grad)
        .inplace(),
    );
}
