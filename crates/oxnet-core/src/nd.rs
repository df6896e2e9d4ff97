//! A typed Rust API over the operator registry: array creation, methods and
//! operator traits on [`NDArray`], and [`Op`], a builder that calls any registered
//! operator by name. Every function here is a call of a registry op (listed in each
//! doc line); none computes anything itself, so the Rust API, `mx.nd` and `mx.sym`
//! run the same code.
//!
//! Arithmetic through `+ - * /` broadcasts like `mx.nd`'s operators and returns a
//! `Result` (a shape mismatch is an error, never a panic):
//!
//! ```
//! use oxnet_core::{nd, Context};
//! let ctx = Context::cpu(0);
//! let a = nd::ones(&[2, 3], ctx)?;
//! let b = nd::arange(0.0, 3.0, 1.0, ctx)?; // shape (3,): broadcast over a's rows
//! let c = ((&a + &b)? * 2.0)?;
//! assert_eq!(c.to_vec::<f32>()?, vec![2.0, 4.0, 6.0, 2.0, 4.0, 6.0]);
//! let m = a.matmul(&nd::ones(&[3, 4], ctx)?)?;
//! assert_eq!(m.shape(), &[2, 4]);
//! assert!((&a + &nd::ones(&[4], ctx)?).is_err());
//! # Ok::<(), oxnet_core::Error>(())
//! ```
//!
//! Operations return at once and run on the engine; reading values
//! ([`NDArray::to_vec`]) waits for them. Any op of the registry, with its MXNet
//! parameters:
//!
//! ```
//! use oxnet_core::{nd, nd::Op, Context};
//! let x = nd::array(&[1.0f32, -2.0, 3.0, -4.0], &[2, 2], Context::cpu(0))?;
//! let y = Op::new("LeakyReLU")?.input(&x).attr("act_type", "leaky").attr("slope", 0.5).call1()?;
//! assert_eq!(y.to_vec::<f32>()?, vec![1.0, -1.0, 3.0, -2.0]);
//! # Ok::<(), oxnet_core::Error>(())
//! ```
//!
//! Autograd: [`NDArray::attach_grad`], [`record`], [`NDArray::backward`]:
//!
//! ```
//! use oxnet_core::{nd, Context};
//! let mut x = nd::array(&[1.0f32, 2.0, 3.0], &[3], Context::cpu(0))?;
//! x.attach_grad()?;
//! let y = nd::record(|| (&x * &x)?.sum())?; // y = sum(x^2)
//! y.backward()?;
//! assert_eq!(x.grad().unwrap().to_vec::<f32>()?, vec![2.0, 4.0, 6.0]);
//! # Ok::<(), oxnet_core::Error>(())
//! ```

use crate::autograd::{self, GradReq};
use crate::context::Context;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::op::{self, OpDef, Value};

// ---- values of parameters --------------------------------------------------------------

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Bool(v)
    }
}
impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}
impl From<i32> for Value {
    fn from(v: i32) -> Value {
        Value::Int(v as i64)
    }
}
impl From<usize> for Value {
    fn from(v: usize) -> Value {
        Value::Int(v as i64)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Float(v)
    }
}
impl From<f32> for Value {
    fn from(v: f32) -> Value {
        Value::Float(v as f64)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Str(v.to_string())
    }
}
impl From<&[i64]> for Value {
    fn from(v: &[i64]) -> Value {
        Value::Tuple(v.to_vec())
    }
}
impl<const N: usize> From<[i64; N]> for Value {
    fn from(v: [i64; N]) -> Value {
        Value::Tuple(v.to_vec())
    }
}
impl From<&[usize]> for Value {
    fn from(v: &[usize]) -> Value {
        Value::Tuple(v.iter().map(|&d| d as i64).collect())
    }
}
impl From<DType> for Value {
    fn from(v: DType) -> Value {
        Value::DType(v)
    }
}
impl From<Context> for Value {
    fn from(v: Context) -> Value {
        Value::Ctx(v)
    }
}

// ---- calling any op ----------------------------------------------------------------------

/// A call of one registered operator: inputs, MXNet parameters (by name, as
/// `mx.nd.<op>(**kwargs)` takes them), optionally the arrays to write into.
#[derive(Clone)]
pub struct Op {
    op: &'static OpDef,
    inputs: Vec<NDArray>,
    attrs: Vec<(String, Value)>,
    out: Option<Vec<NDArray>>,
    ctx: Option<Context>,
}

impl Op {
    /// The op registered under `name` (an MXNet name or alias: `"FullyConnected"`,
    /// `"broadcast_add"`, `"_linalg_gemm2"`, ...).
    pub fn new(name: &str) -> Result<Op> {
        Ok(Op { op: op::lookup(name)?, inputs: Vec::new(), attrs: Vec::new(), out: None, ctx: None })
    }
    /// Appends an input.
    pub fn input(mut self, a: &NDArray) -> Op {
        self.inputs.push(a.clone());
        self
    }
    /// Appends inputs.
    pub fn inputs(mut self, a: &[&NDArray]) -> Op {
        self.inputs.extend(a.iter().map(|x| (*x).clone()));
        self
    }
    /// Sets a parameter (checked and converted when the op is called).
    pub fn attr(mut self, key: &str, v: impl Into<Value>) -> Op {
        self.attrs.push((key.to_string(), v.into()));
        self
    }
    /// Writes the results into `out` (MXNet's `out=`) instead of new arrays.
    pub fn out(mut self, out: &[&NDArray]) -> Op {
        self.out = Some(out.iter().map(|x| (*x).clone()).collect());
        self
    }
    /// The context of an op without inputs (creation, sampling).
    pub fn ctx(mut self, ctx: Context) -> Op {
        self.ctx = Some(ctx);
        self
    }
    /// Runs the op (asynchronously) and returns its outputs.
    pub fn call(self) -> Result<Vec<NDArray>> {
        let params = self.op.parse(self.attrs)?;
        op::invoke(self.op, &self.inputs, params, self.out.as_deref(), self.ctx)
    }
    /// Runs an op with one output (the first, for ops with more).
    pub fn call1(self) -> Result<NDArray> {
        Ok(self.call()?.swap_remove(0))
    }
}

fn shape_value(shape: &[usize]) -> Value {
    Value::from(shape)
}

// ---- creation ----------------------------------------------------------------------------

/// An array of the given float32 values (`from_vec`, for other element types use
/// [`NDArray::from_vec`]).
pub fn array<T: Element>(data: &[T], shape: &[usize], ctx: Context) -> Result<NDArray> {
    NDArray::from_vec(shape, data, ctx)
}

/// float32 zeros (`_zeros`).
pub fn zeros(shape: &[usize], ctx: Context) -> Result<NDArray> {
    zeros_dtype(shape, DType::F32, ctx)
}

/// Zeros of any dtype (`_zeros`).
pub fn zeros_dtype(shape: &[usize], dtype: DType, ctx: Context) -> Result<NDArray> {
    Op::new("_zeros")?.attr("shape", shape_value(shape)).attr("dtype", dtype).ctx(ctx).call1()
}

/// float32 ones (`_ones`).
pub fn ones(shape: &[usize], ctx: Context) -> Result<NDArray> {
    Op::new("_ones")?.attr("shape", shape_value(shape)).ctx(ctx).call1()
}

/// float32 array filled with `value` (`_full`).
pub fn full(shape: &[usize], value: f64, ctx: Context) -> Result<NDArray> {
    Op::new("_full")?.attr("shape", shape_value(shape)).attr("value", value).ctx(ctx).call1()
}

/// `start, start + step, ...` below `stop`, float32 (`_arange`).
pub fn arange(start: f64, stop: f64, step: f64, ctx: Context) -> Result<NDArray> {
    Op::new("_arange")?.attr("start", start).attr("stop", stop).attr("step", step).ctx(ctx).call1()
}

/// The n x n identity, float32 (`_eye`).
pub fn eye(n: usize, ctx: Context) -> Result<NDArray> {
    Op::new("_eye")?.attr("N", n).ctx(ctx).call1()
}

/// Samples of U(low, high), float32 (`_random_uniform`; seeded by [`crate::random`]).
pub fn random_uniform(low: f64, high: f64, shape: &[usize], ctx: Context) -> Result<NDArray> {
    Op::new("_random_uniform")?.attr("low", low).attr("high", high).attr("shape", shape_value(shape)).ctx(ctx).call1()
}

/// Samples of N(loc, scale^2), float32 (`_random_normal`).
pub fn random_normal(loc: f64, scale: f64, shape: &[usize], ctx: Context) -> Result<NDArray> {
    Op::new("_random_normal")?.attr("loc", loc).attr("scale", scale).attr("shape", shape_value(shape)).ctx(ctx).call1()
}

/// Joins arrays along `axis` (`Concat`).
pub fn concat(arrays: &[&NDArray], axis: i64) -> Result<NDArray> {
    Op::new("Concat")?.inputs(arrays).attr("num_args", arrays.len()).attr("dim", axis).call1()
}

/// Stacks arrays of one shape along a new `axis` (`stack`).
pub fn stack(arrays: &[&NDArray], axis: i64) -> Result<NDArray> {
    Op::new("stack")?.inputs(arrays).attr("num_args", arrays.len()).attr("axis", axis).call1()
}

// ---- autograd ----------------------------------------------------------------------------

/// Runs `f` with autograd recording on and in training mode (MXNet's
/// `autograd.record()`), restoring both flags afterwards.
pub fn record<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    let prev_r = autograd::set_recording(true);
    let prev_t = autograd::set_training(true);
    let r = f();
    autograd::set_training(prev_t);
    autograd::set_recording(prev_r);
    r
}

/// Runs `f` with recording off (MXNet's `autograd.pause()`).
pub fn pause<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    let prev = autograd::set_recording(false);
    let r = f();
    autograd::set_recording(prev);
    r
}

// ---- methods -----------------------------------------------------------------------------

fn unary(name: &str, a: &NDArray) -> Result<NDArray> {
    Op::new(name)?.input(a).call1()
}

fn binary(name: &str, a: &NDArray, b: &NDArray) -> Result<NDArray> {
    Op::new(name)?.input(a).input(b).call1()
}

fn scalar(name: &str, a: &NDArray, s: f64) -> Result<NDArray> {
    Op::new(name)?.input(a).attr("scalar", s).call1()
}

fn reduce(name: &str, a: &NDArray, axis: Option<&[i64]>, keepdims: bool) -> Result<NDArray> {
    let mut o = Op::new(name)?.input(a).attr("keepdims", keepdims);
    if let Some(ax) = axis {
        o = o.attr("axis", ax);
    }
    o.call1()
}

impl NDArray {
    /// `self + other`, broadcasting (`broadcast_add`).
    pub fn add(&self, other: &NDArray) -> Result<NDArray> {
        binary("broadcast_add", self, other)
    }
    /// `self - other`, broadcasting (`broadcast_sub`).
    pub fn sub(&self, other: &NDArray) -> Result<NDArray> {
        binary("broadcast_sub", self, other)
    }
    /// `self * other`, broadcasting (`broadcast_mul`).
    pub fn mul(&self, other: &NDArray) -> Result<NDArray> {
        binary("broadcast_mul", self, other)
    }
    /// `self / other`, broadcasting (`broadcast_div`).
    pub fn div(&self, other: &NDArray) -> Result<NDArray> {
        binary("broadcast_div", self, other)
    }
    /// `self ** other`, broadcasting (`broadcast_power`).
    pub fn pow(&self, other: &NDArray) -> Result<NDArray> {
        binary("broadcast_power", self, other)
    }
    /// Elementwise maximum, broadcasting (`broadcast_maximum`).
    pub fn maximum(&self, other: &NDArray) -> Result<NDArray> {
        binary("broadcast_maximum", self, other)
    }
    /// Elementwise minimum, broadcasting (`broadcast_minimum`).
    pub fn minimum(&self, other: &NDArray) -> Result<NDArray> {
        binary("broadcast_minimum", self, other)
    }
    /// Matrix product of 2-D arrays, MXNet's N-d `dot` otherwise (`dot`).
    pub fn matmul(&self, other: &NDArray) -> Result<NDArray> {
        binary("dot", self, other)
    }
    /// Batched matrix product over the leading axis (`batch_dot`).
    pub fn batch_matmul(&self, other: &NDArray) -> Result<NDArray> {
        binary("batch_dot", self, other)
    }
    /// `exp` of each element.
    pub fn exp(&self) -> Result<NDArray> {
        unary("exp", self)
    }
    /// Natural logarithm of each element (`log`).
    pub fn ln(&self) -> Result<NDArray> {
        unary("log", self)
    }
    /// `sqrt` of each element.
    pub fn sqrt(&self) -> Result<NDArray> {
        unary("sqrt", self)
    }
    /// `square` of each element.
    pub fn square(&self) -> Result<NDArray> {
        unary("square", self)
    }
    /// `abs` of each element.
    pub fn abs(&self) -> Result<NDArray> {
        unary("abs", self)
    }
    /// `tanh` of each element.
    pub fn tanh(&self) -> Result<NDArray> {
        unary("tanh", self)
    }
    /// `sigmoid` of each element.
    pub fn sigmoid(&self) -> Result<NDArray> {
        unary("sigmoid", self)
    }
    /// `relu` of each element.
    pub fn relu(&self) -> Result<NDArray> {
        unary("relu", self)
    }
    /// Softmax along `axis` (`softmax`).
    pub fn softmax(&self, axis: i64) -> Result<NDArray> {
        Op::new("softmax")?.input(self).attr("axis", axis).call1()
    }
    /// Log-softmax along `axis` (`log_softmax`).
    pub fn log_softmax(&self, axis: i64) -> Result<NDArray> {
        Op::new("log_softmax")?.input(self).attr("axis", axis).call1()
    }
    /// Clips to `[lo, hi]` (`clip`).
    pub fn clip(&self, lo: f64, hi: f64) -> Result<NDArray> {
        Op::new("clip")?.input(self).attr("a_min", lo).attr("a_max", hi).call1()
    }
    /// Sum of all elements, shape `(1,)` as in MXNet (`sum`).
    pub fn sum(&self) -> Result<NDArray> {
        reduce("sum", self, None, false)
    }
    /// Sum over `axis` (`sum`).
    pub fn sum_axis(&self, axis: &[i64], keepdims: bool) -> Result<NDArray> {
        reduce("sum", self, Some(axis), keepdims)
    }
    /// Mean of all elements (`mean`).
    pub fn mean(&self) -> Result<NDArray> {
        reduce("mean", self, None, false)
    }
    /// Mean over `axis` (`mean`).
    pub fn mean_axis(&self, axis: &[i64], keepdims: bool) -> Result<NDArray> {
        reduce("mean", self, Some(axis), keepdims)
    }
    /// Maximum over `axis` (`max`).
    pub fn max_axis(&self, axis: &[i64], keepdims: bool) -> Result<NDArray> {
        reduce("max", self, Some(axis), keepdims)
    }
    /// Minimum over `axis` (`min`).
    pub fn min_axis(&self, axis: &[i64], keepdims: bool) -> Result<NDArray> {
        reduce("min", self, Some(axis), keepdims)
    }
    /// Index of the maximum along `axis`, as float32 like MXNet (`argmax`).
    pub fn argmax(&self, axis: i64) -> Result<NDArray> {
        Op::new("argmax")?.input(self).attr("axis", axis).call1()
    }
    /// The `k` largest values' indices along `axis` (`topk`).
    pub fn topk(&self, axis: i64, k: usize) -> Result<NDArray> {
        Op::new("topk")?.input(self).attr("axis", axis).attr("k", k).call1()
    }
    /// A copy with a new shape; MXNet's special values 0, -1, -2, -3, -4 work
    /// (`Reshape`).
    pub fn reshape(&self, shape: &[i64]) -> Result<NDArray> {
        Op::new("Reshape")?.input(self).attr("shape", shape).call1()
    }
    /// Permuted axes (reversed when `axes` is empty) (`transpose`).
    pub fn transpose(&self, axes: &[i64]) -> Result<NDArray> {
        Op::new("transpose")?.input(self).attr("axes", axes).call1()
    }
    /// Items `begin..end` along `axis` (`slice_axis`).
    pub fn slice_axis(&self, axis: i64, begin: i64, end: i64) -> Result<NDArray> {
        Op::new("slice_axis")?.input(self).attr("axis", axis).attr("begin", begin).attr("end", end).call1()
    }
    /// A new axis of size 1 at `axis` (`expand_dims`).
    pub fn expand_dims(&self, axis: i64) -> Result<NDArray> {
        Op::new("expand_dims")?.input(self).attr("axis", axis).call1()
    }
    /// Converted to `dtype` (`Cast`).
    pub fn astype(&self, dtype: DType) -> Result<NDArray> {
        Op::new("Cast")?.input(self).attr("dtype", dtype).call1()
    }
    /// A copy on `ctx` (`_copyto`).
    pub fn copy_to(&self, ctx: Context) -> Result<NDArray> {
        let out = NDArray::empty(self.shape(), ctx, self.dtype())?;
        Op::new("_copyto")?.input(self).out(&[&out]).call()?;
        Ok(out)
    }
    /// Copies `self` into `dst` (same shape) (`_copyto`).
    pub fn copy_into(&self, dst: &NDArray) -> Result<()> {
        Op::new("_copyto")?.input(self).out(&[dst]).call().map(|_| ())
    }
    /// The first value as `f64`, after waiting for it (MXNet's `asscalar` for a
    /// one-element array).
    pub fn scalar(&self) -> Result<f64> {
        if self.size() != 1 {
            return Err(Error::new(format!("scalar: the array has {} elements, not 1", self.size())));
        }
        Ok(self.astype(DType::F64)?.to_vec::<f64>()?[0])
    }

    /// Gives the array a gradient buffer (zeros; `grad_req` 'write') and makes it a
    /// variable of autograd (MXNet's `attach_grad()`).
    pub fn attach_grad(&mut self) -> Result<()> {
        let g = zeros_dtype(self.shape(), self.dtype(), self.ctx())?;
        autograd::mark_variable(self, g, GradReq::Write)
    }
    /// The gradient buffer of a variable (after [`NDArray::backward`]).
    pub fn grad(&self) -> Option<NDArray> {
        self.ag_entry().and_then(|e| e.grad())
    }
    /// Back-propagates from this (recorded) array with a head gradient of ones,
    /// into the gradient buffers of the variables it depends on.
    pub fn backward(&self) -> Result<()> {
        autograd::backward(std::slice::from_ref(self), &[None], None, false, true, false).map(|_| ())
    }
}

// ---- operator traits ---------------------------------------------------------------------

macro_rules! binop {
    ($tr:ident, $m:ident, $op:literal, $sop:literal) => {
        impl std::ops::$tr<&NDArray> for &NDArray {
            type Output = Result<NDArray>;
            fn $m(self, rhs: &NDArray) -> Result<NDArray> {
                binary($op, self, rhs)
            }
        }
        impl std::ops::$tr<f64> for &NDArray {
            type Output = Result<NDArray>;
            fn $m(self, rhs: f64) -> Result<NDArray> {
                scalar($sop, self, rhs)
            }
        }
        impl std::ops::$tr<&NDArray> for NDArray {
            type Output = Result<NDArray>;
            fn $m(self, rhs: &NDArray) -> Result<NDArray> {
                binary($op, &self, rhs)
            }
        }
        impl std::ops::$tr<f64> for NDArray {
            type Output = Result<NDArray>;
            fn $m(self, rhs: f64) -> Result<NDArray> {
                scalar($sop, &self, rhs)
            }
        }
    };
}

binop!(Add, add, "broadcast_add", "_plus_scalar");
binop!(Sub, sub, "broadcast_sub", "_minus_scalar");
binop!(Mul, mul, "broadcast_mul", "_mul_scalar");
binop!(Div, div, "broadcast_div", "_div_scalar");

impl std::ops::Neg for &NDArray {
    type Output = Result<NDArray>;
    fn neg(self) -> Result<NDArray> {
        unary("negative", self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &NDArray) -> Vec<f32> {
        a.to_vec::<f32>().unwrap()
    }

    #[test]
    fn creation_and_arithmetic() {
        let c = Context::cpu(0);
        assert_eq!(v(&zeros(&[2], c).unwrap()), vec![0.0, 0.0]);
        assert_eq!(v(&full(&[3], 2.5, c).unwrap()), vec![2.5; 3]);
        assert_eq!(v(&eye(2, c).unwrap()), vec![1.0, 0.0, 0.0, 1.0]);
        let a = array(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2], c).unwrap();
        assert_eq!(v(&(&a - 1.0).unwrap()), vec![0.0, 1.0, 2.0, 3.0]);
        assert_eq!(v(&(&a / &a).unwrap()), vec![1.0; 4]);
        assert_eq!(v(&(-&a).unwrap()), vec![-1.0, -2.0, -3.0, -4.0]);
        assert_eq!(v(&a.matmul(&a).unwrap()), vec![7.0, 10.0, 15.0, 22.0]);
        assert_eq!(v(&a.transpose(&[]).unwrap()), vec![1.0, 3.0, 2.0, 4.0]);
        assert_eq!(v(&a.sum_axis(&[1], false).unwrap()), vec![3.0, 7.0]);
        assert_eq!(a.reshape(&[-1]).unwrap().shape(), &[4]);
        assert_eq!(concat(&[&a, &a], 0).unwrap().shape(), &[4, 2]);
        assert_eq!(stack(&[&a, &a], 0).unwrap().shape(), &[2, 2, 2]);
        assert_eq!(a.sum().unwrap().scalar().unwrap(), 10.0);
        assert_eq!(v(&a.argmax(1).unwrap()), vec![1.0, 1.0]);
    }

    #[test]
    fn errors_name_the_op_and_leave_inputs() {
        let c = Context::cpu(0);
        let a = ones(&[2, 3], c).unwrap();
        let e = (&a + &ones(&[4], c).unwrap()).unwrap_err();
        assert!(e.message().contains("broadcast_add"), "{}", e.message());
        assert!(Op::new("no_such_op").is_err());
        let e = Op::new("FullyConnected").unwrap().input(&a).attr("num_hidden", 2).call().unwrap_err();
        assert!(e.message().contains("FullyConnected"), "{}", e.message());
        assert!(a.scalar().is_err());
        assert_eq!(v(&a), vec![1.0; 6]);
    }

    #[test]
    fn autograd_from_rust() {
        let c = Context::cpu(0);
        let mut w = array(&[0.5f32, -1.0], &[2, 1], c).unwrap();
        w.attach_grad().unwrap();
        let x = array(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2], c).unwrap();
        // loss = sum(tanh(x w)); d/dw = x^T (1 - tanh^2(x w))
        let loss = record(|| x.matmul(&w)?.tanh()?.sum()).unwrap();
        loss.backward().unwrap();
        let xw = [1.0f32 * 0.5 - 2.0, 3.0 * 0.5 - 4.0];
        let d: Vec<f32> = xw.iter().map(|z| 1.0 - z.tanh().powi(2)).collect();
        let want = [1.0 * d[0] + 3.0 * d[1], 2.0 * d[0] + 4.0 * d[1]];
        let got = v(&w.grad().unwrap());
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-5, "{got:?} vs {want:?}");
        }
        assert!(!autograd::is_recording());
    }
}
