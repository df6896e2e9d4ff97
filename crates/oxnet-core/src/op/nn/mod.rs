//! Neural-network ops other than convolution, fully-connected and pooling:
//! `Activation`, `LeakyReLU`, `BatchNorm`, `LayerNorm`, `InstanceNorm`, `Dropout`,
//! `Embedding`, the output layers (`SoftmaxOutput`/`Softmax`, `SoftmaxActivation`,
//! `LinearRegressionOutput`, `LogisticRegressionOutput`, `MAERegressionOutput`),
//! `BlockGrad`/`stop_gradient`, `make_loss` and `MakeLoss`, each with its MXNet
//! backward op (`_backward_Activation`, `_backward_BatchNorm`, ...) and a gradient
//! function that invokes it.
//!
//! Where oxnet differs from MXNet 1.9.1 on purpose:
//! - The third BatchNorm output (`output_mean_var=True`) is the inverse standard
//!   deviation `1/sqrt(var + eps)`, as MXNet returns it.
//! - `LeakyReLU(act_type='rrelu')` returns `[out, mask]` as MXNet does; outside
//!   training the mask holds the mean slope `(lower_bound + upper_bound) / 2`.
//! - `SoftmaxOutput(out_grad=True)` multiplies its gradient by the head gradient.
//! - `Embedding(sparse_grad=True)` gives a dense weight gradient.
//!
//! The module must not touch other families' ops; it only invokes registry ops.
//!
//! One file per family: `activation.rs` (`Activation`, `LeakyReLU`), `norm.rs`
//! (`BatchNorm`, `LayerNorm`, `InstanceNorm`), `dropout.rs`, `embedding.rs` and
//! `output.rs` (the output layers, `BlockGrad`, `make_loss`, `MakeLoss`). The helpers
//! here are shared with the other nn-like families (`sync_batch_norm`, `group_norm`).

mod activation;
mod dropout;
mod embedding;
mod norm;
mod output;
#[cfg(test)]
mod tests;

pub(super) use activation::prelu_layout;
pub(super) use norm::{bn_backward, bn_dtype_fill, bn_forward, bn_train_writes, BnCfg};

use super::{invoke, lookup, Arity, Blob, InferArgs, OpCall, Params, Registry};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};
use crate::with_dtype;
use crate::with_float;

// ---- helpers -------------------------------------------------------------------------

/// # Safety: see [`Blob::slice`].
pub(super) fn rd<T>(b: &Blob) -> &[T] {
    // SAFETY: the engine operation owning this call orders every access to the blob.
    unsafe { b.slice::<T>() }
}
#[allow(clippy::mut_from_ref)]
pub(super) fn wr<T>(b: &Blob) -> &mut [T] {
    // SAFETY: outputs (and mutate inputs) are written only by this call.
    unsafe { b.slice_mut::<T>() }
}

/// Any blob's values as f64.
pub(super) fn to_f64(b: &Blob) -> Vec<f64> {
    with_dtype!(b.dtype, T, { rd::<T>(b).iter().map(|v| crate::dtype::Element::to_f64(*v)).collect() })
}

/// Writes f64 values into a float blob.
pub(super) fn from_f64(b: &Blob, v: &[f64]) {
    with_float!(b.dtype, T, {
        for (o, x) in wr::<T>(b).iter_mut().zip(v) {
            *o = <T as crate::dtype::Element>::from_f64(*x);
        }
    })
}

pub(super) fn float_input(a: &InferArgs, i: usize, name: &str) -> Result<DType> {
    let d = a.dtypes[i];
    if !d.is_float() {
        return Err(a.err(format!("input '{name}' must be a floating point array (float16, float32 or float64), got {}", d.name())));
    }
    Ok(d)
}

pub(super) fn expect_shape(a: &InferArgs, i: usize, name: &str, want: &[usize], why: &str) -> Result<()> {
    if a.shapes[i] != want {
        return Err(a.err(format!("input '{name}' has shape {} but {why} requires {}", fmt_shape(a.shapes[i]), fmt_shape(want))));
    }
    Ok(())
}

/// Fills unknown shapes `idx` with `want`; a known different shape is an error.
pub(super) fn fill_known(op: &str, shapes: &mut [Option<Shape>], idx: &[(usize, &str)], want: &[usize]) -> Result<()> {
    for &(i, name) in idx {
        if let Some(slot) = shapes.get_mut(i) {
            match slot {
                Some(s) if &s[..] != want => {
                    return Err(Error::op(op, format!("input '{name}' has shape {} but {} was inferred", fmt_shape(s), fmt_shape(want))))
                }
                Some(_) => {}
                None => *slot = Some(Shape::from_slice(want)),
            }
        }
    }
    Ok(())
}

/// Runs backward op `name` with the forward's parameters (backward ops declare the
/// same parameter list as their forward op).
pub(super) fn run_bwd(name: &str, inputs: &[NDArray], p: &Params) -> Result<Vec<NDArray>> {
    invoke(lookup(name)?, inputs, p.clone(), None, None)
}

pub(super) fn need_outputs(op: &str, outputs: &[NDArray], n: usize) -> Result<()> {
    if outputs.len() < n {
        return Err(Error::op(op, format!("gradient needs the forward's {n} outputs (hidden ones included), got {}", outputs.len())));
    }
    Ok(())
}

pub(super) fn head(op: &str, og: &[NDArray]) -> Result<NDArray> {
    og.first().cloned().ok_or_else(|| Error::op(op, "gradient called without an output gradient"))
}

fn outer_inner(shape: &[usize], ax: usize) -> (usize, usize, usize) {
    (shape[..ax].iter().product(), shape[ax], shape[ax + 1..].iter().product())
}

pub(super) fn same_first(a: &InferArgs) -> (Shape, DType) {
    (Shape::from_slice(a.shapes[0]), a.dtypes[0])
}

fn copy_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    if x.ptr != o.ptr {
        let n = x.size() * x.dtype.size();
        // SAFETY: distinct buffers of n bytes each (invoke copies when they overlap).
        unsafe { std::ptr::copy_nonoverlapping(x.ptr, o.ptr, n) };
    }
    Ok(())
}

const DATA: Arity = Arity::Fixed(&["data"]);

/// MXNet's output names (`FListOutputNames`) for ops with hidden outputs.
pub(super) fn names(n: &[&str]) -> Vec<String> {
    n.iter().map(|s| s.to_string()).collect()
}

pub(super) fn register(r: &mut Registry) {
    activation::register(r);
    norm::register(r);
    dropout::register(r);
    embedding::register(r);
    output::register(r);
}
