//! Reductions: `sum` (`sum_axis`), `mean`, `prod`, `nansum`, `nanprod`, `max`
//! (`max_axis`), `min` (`min_axis`), `norm`, `argmax`, `argmin`, `argmax_channel`.
//!
//! As in MXNet 1.x: `axis=None` or `axis=()` reduces every axis (also with
//! `exclude`), reducing every axis without `keepdims` gives shape `(1,)`, the output
//! has the input's dtype (integer sums wrap in that type; `mean` of integers divides
//! the wrapped sum, truncating), and arg-reductions return positions in the input's
//! dtype. Float sums and products accumulate in f64; float16 results are computed in
//! f64 and rounded once.

use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Registry};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::kernels::cpu::reduce::{self as k, ArgR, Num, Plan, Reducer};
use crate::shape::{fmt_shape, norm_axis, Shape};

const DATA: Arity = Arity::Fixed(&["data"]);

const AXIS_DOC: &str = "The axis or axes along which to perform the reduction.

      The default, `axis=()`, will compute over all elements into a
      scalar array with shape `(1,)`.

      If `axis` is int, a reduction is performed on a particular axis.

      If `axis` is a tuple of ints, a reduction is performed on all the axes
      specified in the tuple.

      If `exclude` is true, reduction will be performed on the axes that are
      NOT in axis instead.

      Negative values means indexing from right to left.";

pub(crate) const REDUCE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("axis", PType::OptTuple, Some("None"), AXIS_DOC),
    ParamSpec::new(
        "keepdims",
        PType::Bool,
        Some("False"),
        "If this is set to `True`, the reduced axes are left in the result as dimension with size one.",
    ),
    ParamSpec::new("exclude", PType::Bool, Some("False"), "Whether to perform reduction on axis that are NOT in axis instead."),
];

/// Which axes of `shape` are reduced, MXNet's rules: None or `()` reduces all (with
/// or without `exclude`); negative axes count from the end; out-of-range and
/// duplicate axes are errors.
pub(super) fn reduce_mask(op: &str, shape: &[usize], axis: Option<&[i64]>, exclude: bool) -> Result<Vec<bool>> {
    let nd = shape.len();
    let axes = match axis {
        None | Some([]) => return Ok(vec![true; nd]),
        Some(a) => a,
    };
    let mut norm = Vec::with_capacity(axes.len());
    for &a in axes {
        let v = if a < 0 { a + nd as i64 } else { a };
        if v < 0 || v >= nd as i64 {
            return Err(Error::op(
                op,
                format!(
                    "reduction axis {a} is out of bounds for input of shape {} (valid range is [-{nd}, {}])",
                    fmt_shape(shape),
                    nd as i64 - 1
                ),
            ));
        }
        norm.push(v as usize);
    }
    let mut mask = vec![false; nd];
    for (&v, &a) in norm.iter().zip(axes) {
        if mask[v] {
            return Err(Error::op(
                op,
                format!("reduction axes have duplicates: axis {a} refers to axis {v}, which is already in {axes:?}"),
            ));
        }
        mask[v] = true;
    }
    if exclude {
        mask.iter_mut().for_each(|m| *m = !*m);
    }
    Ok(mask)
}

/// The reduced shape: reduced axes become 1 with `keepdims`, else disappear; no
/// axis left gives `(1,)`.
pub(super) fn reduced_shape(shape: &[usize], mask: &[bool], keepdims: bool) -> Shape {
    let s: Shape = if keepdims {
        shape.iter().zip(mask).map(|(&d, &m)| if m { 1 } else { d }).collect()
    } else {
        shape.iter().zip(mask).filter(|(_, &m)| !m).map(|(&d, _)| d).collect()
    };
    if s.is_empty() && !keepdims {
        Shape::from_slice(&[1])
    } else {
        s
    }
}

fn mask_of(op: &str, p: &super::Params, shape: &[usize]) -> Result<Vec<bool>> {
    reduce_mask(op, shape, p.opt_tuple("axis").as_deref(), p.bool("exclude"))
}

/// Reductions without an identity (max, min, argmax) cannot reduce an empty extent.
fn check_nonempty(a: &InferArgs, shape: &[usize], mask: &[bool]) -> Result<()> {
    let red: usize = shape.iter().zip(mask).filter(|(_, &m)| m).map(|(&d, _)| d).product();
    let kept: usize = shape.iter().zip(mask).filter(|(_, &m)| !m).map(|(&d, _)| d).product();
    if red == 0 && kept > 0 {
        return Err(a.err(format!(
            "cannot reduce over a zero-size extent of input shape {} ({} has no identity)",
            fmt_shape(shape),
            a.op.name
        )));
    }
    Ok(())
}

pub(crate) fn infer_reduce<const NEEDS_ELEMENTS: bool>(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let shape = a.shapes[0];
    let mask = mask_of(a.op.name, a.params, shape)?;
    if NEEDS_ELEMENTS {
        check_nonempty(a, shape, &mask)?;
    }
    Ok(vec![(reduced_shape(shape, &mask, a.params.bool("keepdims")), a.dtypes[0])])
}

/// Binds `$T` to the element type of `$d`, running `$f` for float types and `$i`
/// for integer types (bool as u8).
macro_rules! by_kind {
    ($d:expr, $T:ident, $f:block, $i:block) => {
        match $d {
            DType::F32 => {
                type $T = f32;
                $f
            }
            DType::F64 => {
                type $T = f64;
                $f
            }
            DType::F16 => {
                type $T = half::f16;
                $f
            }
            DType::BF16 => {
                type $T = half::bf16;
                $f
            }
            DType::U8 | DType::Bool => {
                type $T = u8;
                $i
            }
            DType::I32 => {
                type $T = i32;
                $i
            }
            DType::I8 => {
                type $T = i8;
                $i
            }
            DType::I64 => {
                type $T = i64;
                $i
            }
        }
    };
}

fn run<T: Num, R: Reducer<T>, F: Fn(R::A) -> T + Sync + Send + Copy>(c: &OpCall, plan: &Plan, rd: R, fin: F) {
    // SAFETY: the engine gives this op read access to the input and exclusive write
    // access to the output, which does not alias it (invoke copies when it would).
    let (x, o) = unsafe { (c.inputs[0].slice::<T>(), c.outputs[0].slice_mut::<T>()) };
    k::reduce(x, plan, o, rd, fin);
}

/// An integer result stored in `T` (bool: nonzero is true).
#[inline(always)]
fn int_out<T: Num>(v: i64, is_bool: bool) -> T {
    T::wrap_i64(if is_bool { (v != 0) as i64 } else { v })
}

const SUM: u8 = 0;
const MEAN: u8 = 1;
const PROD: u8 = 2;
const NANSUM: u8 = 3;
const NANPROD: u8 = 4;
const MAX: u8 = 5;
const MIN: u8 = 6;

fn reduce_compute<const OP: u8>(c: &mut OpCall) -> Result<()> {
    let x = &c.inputs[0];
    let plan = Plan::new(&x.shape, &mask_of(c.op.name, c.params, &x.shape)?);
    let n = plan.red_count();
    let is_bool = x.dtype == DType::Bool;
    by_kind!(
        x.dtype,
        T,
        {
            match OP {
                SUM => run::<T, _, _>(c, &plan, k::SumF, T::from_f64),
                MEAN => run::<T, _, _>(c, &plan, k::SumF, move |a| T::from_f64(a / n as f64)),
                PROD => run::<T, _, _>(c, &plan, k::ProdF, T::from_f64),
                NANSUM => run::<T, _, _>(c, &plan, k::NanSumF, T::from_f64),
                NANPROD => run::<T, _, _>(c, &plan, k::NanProdF, T::from_f64),
                MAX => run::<T, _, _>(c, &plan, k::MaxR, |a| a),
                _ => run::<T, _, _>(c, &plan, k::MinR, |a| a),
            }
        },
        {
            match OP {
                SUM | NANSUM => run::<T, _, _>(c, &plan, k::SumI, move |a| int_out::<T>(a, is_bool)),
                MEAN => run::<T, _, _>(c, &plan, k::SumI, move |a| {
                    if is_bool {
                        int_out::<T>(a, true)
                    } else {
                        // MXNet divides the sum as stored in the type (wrapped), truncating.
                        let s = T::wrap_i64(a).to_i64();
                        T::wrap_i64(if n == 0 { 0 } else { s / n as i64 })
                    }
                }),
                PROD | NANPROD => run::<T, _, _>(c, &plan, k::ProdI, move |a| int_out::<T>(a, is_bool)),
                MAX => run::<T, _, _>(c, &plan, k::MaxR, |a| a),
                _ => run::<T, _, _>(c, &plan, k::MinR, |a| a),
            }
        }
    );
    Ok(())
}

// ---- norm ------------------------------------------------------------------

const NORM_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("ord", PType::Int, Some("2"), "Order of the norm. Currently ord=1 and ord=2 is supported."),
    ParamSpec::new(
        "axis",
        PType::OptTuple,
        Some("None"),
        "The axis or axes along which to perform the reduction.

      The default, `axis=()`, will compute over all elements into a
      scalar array with shape `(1,)`.
      If `axis` is int, a reduction is performed on a particular axis.
      If `axis` is a 2-tuple, it specifies the axes that hold 2-D matrices,
      and the matrix norms of these matrices are computed.",
    ),
    ParamSpec::new(
        "out_dtype",
        PType::OptDType,
        Some("None"),
        "The data type of the output (one of None, 'float16', 'float32', 'float64', 'int32', 'int64', 'int8').",
    ),
    ParamSpec::new(
        "keepdims",
        PType::Bool,
        Some("False"),
        "If this is set to `True`, the reduced axis is left in the result as dimension with size one.",
    ),
];

fn infer_norm(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let ord = a.params.int("ord");
    if ord != 1 && ord != 2 {
        return Err(a.err(format!("norm only supports ord=1 and ord=2, got ord={ord}")));
    }
    let out = match a.params.dtype("out_dtype") {
        None => a.dtypes[0],
        Some(d @ (DType::F16 | DType::F32 | DType::F64 | DType::I32 | DType::I64 | DType::I8)) => d,
        Some(d) => {
            return Err(a.err(format!(
                "Invalid Input: '{}' for out_dtype, valid values are: {{None, 'float16', 'float32', 'float64', 'int32', 'int64', 'int8'}}",
                d.name()
            )))
        }
    };
    let shape = a.shapes[0];
    let mask = reduce_mask(a.op.name, shape, a.params.opt_tuple("axis").as_deref(), false)?;
    Ok(vec![(reduced_shape(shape, &mask, a.params.bool("keepdims")), out)])
}

fn norm_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let mask = reduce_mask(c.op.name, &x.shape, c.params.opt_tuple("axis").as_deref(), false)?;
    let plan = Plan::new(&x.shape, &mask);
    let ord1 = c.params.int("ord") == 1;
    let mut tmp = vec![0.0f64; o.size()];
    crate::with_dtype!(x.dtype, T, {
        // SAFETY: read access to the input.
        let xs = unsafe { x.slice::<T>() };
        if ord1 {
            k::reduce(xs, &plan, &mut tmp, k::AbsSum, |a| a);
        } else if x.dtype == DType::F64 {
            k::reduce(xs, &plan, &mut tmp, k::Nrm2, k::Nrm2::value);
        } else {
            k::reduce(xs, &plan, &mut tmp, k::SqSum, f64::sqrt);
        }
    });
    crate::with_dtype!(o.dtype, U, {
        // SAFETY: exclusive write access to the output.
        let os = unsafe { o.slice_mut::<U>() };
        for (d, &v) in os.iter_mut().zip(&tmp) {
            *d = if <U as Num>::FLOAT { <U as Element>::from_f64(v) } else { U::wrap_i64(v as i64) };
        }
    });
    Ok(())
}

// ---- argmax / argmin ---------------------------------------------------------

const ARG_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("axis", PType::OptInt, Some("None"), "The axis along which to perform the reduction. Negative values means indexing from right to left. If None, the position in the flattened input is returned."),
    ParamSpec::new("keepdims", PType::Bool, Some("False"), "If this is set to `True`, the reduced axis is left in the result as dimension with size one."),
];

/// The reduced-axis mask of an arg-reduction (`axis=None`: all axes).
fn arg_mask(op: &str, shape: &[usize], axis: Option<i64>) -> Result<Vec<bool>> {
    Ok(match axis {
        None => vec![true; shape.len()],
        Some(a) => {
            let ax = norm_axis(a, shape.len(), op)?;
            (0..shape.len()).map(|d| d == ax).collect()
        }
    })
}

fn infer_arg_common(a: &InferArgs, axis: Option<i64>, keepdims: bool) -> Result<Vec<(Shape, DType)>> {
    if a.dtypes[0] == DType::Bool {
        return Err(a.err("bool input is not supported (positions are returned in the input's dtype)"));
    }
    let shape = a.shapes[0];
    let mask = arg_mask(a.op.name, shape, axis)?;
    check_nonempty(a, shape, &mask)?;
    Ok(vec![(reduced_shape(shape, &mask, keepdims), a.dtypes[0])])
}

fn infer_arg(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    infer_arg_common(a, a.params.opt_int("axis"), a.params.bool("keepdims"))
}

fn infer_argmax_channel(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    infer_arg_common(a, Some(1), false)
}

fn arg_run<const MAXIMUM: bool>(c: &OpCall, axis: Option<i64>) -> Result<()> {
    let x = &c.inputs[0];
    let plan = Plan::new(&x.shape, &arg_mask(c.op.name, &x.shape, axis)?);
    crate::with_dtype!(x.dtype, T, { run::<T, _, _>(c, &plan, ArgR::<MAXIMUM>, |a: (T, usize)| { T::from_index(a.1) }) });
    Ok(())
}

fn arg_compute<const MAXIMUM: bool>(c: &mut OpCall) -> Result<()> {
    arg_run::<MAXIMUM>(c, c.params.opt_int("axis"))
}

fn argmax_channel_compute(c: &mut OpCall) -> Result<()> {
    arg_run::<true>(c, Some(1))
}

pub(super) fn register(r: &mut Registry) {
    let reg = |r: &mut Registry,
               name: &'static str,
               aliases: &'static [&'static str],
               doc: &'static str,
               infer: super::InferFn,
               cpu: super::ComputeFn| {
        r.add(OpDef::new(name, doc, DATA, REDUCE_PARAMS, infer, cpu).aliases(aliases).unnamed_inputs());
    };
    reg(r, "sum", &["sum_axis"], "Computes the sum of array elements over given axes.", infer_reduce::<false>, reduce_compute::<SUM>);
    reg(r, "mean", &[], "Computes the mean of array elements over given axes.", infer_reduce::<false>, reduce_compute::<MEAN>);
    reg(r, "prod", &[], "Computes the product of array elements over given axes.", infer_reduce::<false>, reduce_compute::<PROD>);
    reg(
        r,
        "nansum",
        &[],
        "Computes the sum of array elements over given axes treating Not a Numbers (``NaN``) as zero.",
        infer_reduce::<false>,
        reduce_compute::<NANSUM>,
    );
    reg(
        r,
        "nanprod",
        &[],
        "Computes the product of array elements over given axes treating Not a Numbers (``NaN``) as one.",
        infer_reduce::<false>,
        reduce_compute::<NANPROD>,
    );
    reg(r, "max", &["max_axis"], "Computes the max of array elements over given axes.", infer_reduce::<true>, reduce_compute::<MAX>);
    reg(r, "min", &["min_axis"], "Computes the min of array elements over given axes.", infer_reduce::<true>, reduce_compute::<MIN>);
    r.add(
        OpDef::new(
            "norm",
            "Computes the norm on an NDArray.

This operator computes the norm on an NDArray with the specified axis, depending
on the value of the ord parameter. By default, it computes the L2 norm on the entire
array. Currently only ord=2 supports sparse ndarrays.",
            DATA,
            NORM_PARAMS,
            infer_norm,
            norm_compute,
        )
        .unnamed_inputs(),
    );
    r.add(
        OpDef::new("argmax", "Returns indices of the maximum values along an axis.", DATA, ARG_PARAMS, infer_arg, arg_compute::<true>)
            .unnamed_inputs(),
    );
    r.add(
        OpDef::new("argmin", "Returns indices of the minimum values along an axis.", DATA, ARG_PARAMS, infer_arg, arg_compute::<false>)
            .unnamed_inputs(),
    );
    r.add(
        OpDef::new(
            "argmax_channel",
            "Returns argmax indices of each channel from the input array (the argmax along axis 1).",
            DATA,
            &[],
            infer_argmax_channel,
            argmax_channel_compute,
        )
        .unnamed_inputs(),
    );
}

/// Helpers shared by the tests of the reduce, index and softmax families.
#[cfg(test)]
pub(super) mod test_util {
    use crate::dtype::{DType, Element};
    use crate::op::{call, call1, Value};
    use crate::{Context, NDArray};

    /// An array of `dtype` holding `data` (converted from f64 by `Cast`).
    pub fn arr(shape: &[usize], data: &[f64], dtype: DType) -> NDArray {
        let a = NDArray::from_vec(shape, data, Context::cpu(0)).unwrap();
        if dtype == DType::F64 {
            a
        } else {
            call1("Cast", &[a], &[("dtype", Value::DType(dtype))]).unwrap()
        }
    }

    /// The test inputs: `((i*37 % 23) - 11) * 0.25` ("a") or `1 + ((i*37 % 23) - 11) / 32`
    /// ("b"), as in the NumPy scripts that produced the expected values.
    pub fn pattern(n: usize, kind: &str) -> Vec<f64> {
        (0..n)
            .map(|i| {
                let v = ((i * 37 % 23) as f64) - 11.0;
                if kind == "a" {
                    v * 0.25
                } else {
                    1.0 + v / 32.0
                }
            })
            .collect()
    }

    /// Any array's values as f64.
    pub fn vals(a: &NDArray) -> Vec<f64> {
        crate::with_dtype!(a.dtype(), T, { a.to_vec::<T>().unwrap().into_iter().map(|v| v.to_f64()).collect() })
    }

    #[track_caller]
    pub fn close(what: &str, got: &[f64], want: &[f64], rtol: f64) {
        assert_eq!(got.len(), want.len(), "{what}: length");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= rtol * w.abs().max(1e-3);
            assert!(ok, "{what}: element {i}: got {g}, want {w}\n got {got:?}\nwant {want:?}");
        }
    }

    /// The error of a call, whether raised at once (inference) or when reading the
    /// outputs (compute).
    pub fn err_of(name: &str, inputs: &[NDArray], attrs: &[(&str, Value)]) -> String {
        match call(name, inputs, attrs) {
            Err(e) => e.message().to_string(),
            Ok(outs) => match outs[0].wait_to_read() {
                Err(e) => e.message().to_string(),
                Ok(()) => panic!("{name} with {attrs:?} should have failed"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::*;
    use crate::dtype::DType;
    use crate::op::{call1, Value};

    #[track_caller]
    fn case(op: &str, shape: &[usize], kind: &str, attrs: &[(&str, Value)], want_shape: &[usize], want: &[f64]) {
        let n = shape.iter().product();
        for dt in [DType::F32, DType::F64] {
            let x = arr(shape, &pattern(n, kind), dt);
            let y = call1(op, &[x], attrs).unwrap();
            assert_eq!(y.shape(), want_shape, "{op} {attrs:?}");
            assert_eq!(y.dtype(), dt);
            close(&format!("{op} {attrs:?} {}", dt.name()), &vals(&y), want, if dt == DType::F32 { 2e-6 } else { 1e-12 });
        }
    }

    /// Expected values from NumPy (`np.sum(x, axis=..., keepdims=...)` etc., with
    /// `exclude` turned into the complementary axes and `axis=()` into all axes).
    #[test]
    #[rustfmt::skip]
    fn reductions_match_numpy() {
        case("sum", &[2, 3, 4], "a", &[], &[1], &[-2.75]);
        case("sum", &[2, 3, 4], "a", &[("keepdims", Value::Bool(true))], &[1, 1, 1], &[-2.75]);
        case("sum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0]))], &[3, 4], &[-3.75, 3.25, -1.25, 0.0, 1.25, -3.25, 3.75, -0.75, 0.5, 1.75, -2.75, -1.5]);
        case("sum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![1]))], &[2, 4], &[-0.75, -1.75, -2.75, 2.0, -1.25, 3.5, 2.5, -4.25]);
        case("sum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![-1]))], &[2, 3], &[-1.5, -3.0, 1.25, -0.25, 4.0, -3.25]);
        case("sum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![-1])), ("keepdims", Value::Bool(true))], &[2, 3, 1], &[-1.5, -3.0, 1.25, -0.25, 4.0, -3.25]);
        case("sum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0, 2]))], &[3], &[-1.75, 1.0, -2.0]);
        case("sum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![-1, 0])), ("keepdims", Value::Bool(true))], &[1, 3, 1], &[-1.75, 1.0, -2.0]);
        case("sum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![]))], &[1], &[-2.75]);
        case("sum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![])), ("exclude", Value::Bool(true))], &[1], &[-2.75]);
        case("sum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![1])), ("exclude", Value::Bool(true))], &[3], &[-1.75, 1.0, -2.0]);
        case("sum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0, 2])), ("keepdims", Value::Bool(true)), ("exclude", Value::Bool(true))], &[2, 1, 4], &[-0.75, -1.75, -2.75, 2.0, -1.25, 3.5, 2.5, -4.25]);
        case("sum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0, 1, 2])), ("exclude", Value::Bool(true))], &[2, 3, 4], &[-2.75, 0.75, -1.5, 2.0, -0.25, -2.5, 1.0, -1.25, 2.25, 0.0, -2.25, 1.25, -1.0, 2.5, 0.25, -2.0, 1.5, -0.75, 2.75, 0.5, -1.75, 1.75, -0.5, -2.75]);
        case("sum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![2, 0]))], &[3], &[-1.75, 1.0, -2.0]);
        case("mean", &[2, 3, 4], "a", &[], &[1], &[-0.11458333333333333]);
        case("mean", &[2, 3, 4], "a", &[("keepdims", Value::Bool(true))], &[1, 1, 1], &[-0.11458333333333333]);
        case("mean", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0]))], &[3, 4], &[-1.875, 1.625, -0.625, 0.0, 0.625, -1.625, 1.875, -0.375, 0.25, 0.875, -1.375, -0.75]);
        case("mean", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![1]))], &[2, 4], &[-0.25, -0.5833333333333334, -0.9166666666666666, 0.6666666666666666, -0.4166666666666667, 1.1666666666666667, 0.8333333333333334, -1.4166666666666667]);
        case("mean", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![-1]))], &[2, 3], &[-0.375, -0.75, 0.3125, -0.0625, 1.0, -0.8125]);
        case("mean", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![-1])), ("keepdims", Value::Bool(true))], &[2, 3, 1], &[-0.375, -0.75, 0.3125, -0.0625, 1.0, -0.8125]);
        case("mean", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0, 2]))], &[3], &[-0.21875, 0.125, -0.25]);
        case("mean", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![-1, 0])), ("keepdims", Value::Bool(true))], &[1, 3, 1], &[-0.21875, 0.125, -0.25]);
        case("mean", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![]))], &[1], &[-0.11458333333333333]);
        case("mean", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![])), ("exclude", Value::Bool(true))], &[1], &[-0.11458333333333333]);
        case("mean", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![1])), ("exclude", Value::Bool(true))], &[3], &[-0.21875, 0.125, -0.25]);
        case("mean", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0, 2])), ("keepdims", Value::Bool(true)), ("exclude", Value::Bool(true))], &[2, 1, 4], &[-0.25, -0.5833333333333334, -0.9166666666666666, 0.6666666666666666, -0.4166666666666667, 1.1666666666666667, 0.8333333333333334, -1.4166666666666667]);
        case("mean", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0, 1, 2])), ("exclude", Value::Bool(true))], &[2, 3, 4], &[-2.75, 0.75, -1.5, 2.0, -0.25, -2.5, 1.0, -1.25, 2.25, 0.0, -2.25, 1.25, -1.0, 2.5, 0.25, -2.0, 1.5, -0.75, 2.75, 0.5, -1.75, 1.75, -0.5, -2.75]);
        case("mean", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![2, 0]))], &[3], &[-0.21875, 0.125, -0.25]);
        case("max", &[2, 3, 4], "a", &[], &[1], &[2.75]);
        case("max", &[2, 3, 4], "a", &[("keepdims", Value::Bool(true))], &[1, 1, 1], &[2.75]);
        case("max", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0]))], &[3, 4], &[-1.0, 2.5, 0.25, 2.0, 1.5, -0.75, 2.75, 0.5, 2.25, 1.75, -0.5, 1.25]);
        case("max", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![1]))], &[2, 4], &[2.25, 0.75, 1.0, 2.0, 1.5, 2.5, 2.75, 0.5]);
        case("max", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![-1]))], &[2, 3], &[2.0, 1.0, 2.25, 2.5, 2.75, 1.75]);
        case("max", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![-1])), ("keepdims", Value::Bool(true))], &[2, 3, 1], &[2.0, 1.0, 2.25, 2.5, 2.75, 1.75]);
        case("max", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0, 2]))], &[3], &[2.5, 2.75, 2.25]);
        case("max", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![-1, 0])), ("keepdims", Value::Bool(true))], &[1, 3, 1], &[2.5, 2.75, 2.25]);
        case("max", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![]))], &[1], &[2.75]);
        case("max", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![])), ("exclude", Value::Bool(true))], &[1], &[2.75]);
        case("max", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![1])), ("exclude", Value::Bool(true))], &[3], &[2.5, 2.75, 2.25]);
        case("max", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0, 2])), ("keepdims", Value::Bool(true)), ("exclude", Value::Bool(true))], &[2, 1, 4], &[2.25, 0.75, 1.0, 2.0, 1.5, 2.5, 2.75, 0.5]);
        case("max", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0, 1, 2])), ("exclude", Value::Bool(true))], &[2, 3, 4], &[-2.75, 0.75, -1.5, 2.0, -0.25, -2.5, 1.0, -1.25, 2.25, 0.0, -2.25, 1.25, -1.0, 2.5, 0.25, -2.0, 1.5, -0.75, 2.75, 0.5, -1.75, 1.75, -0.5, -2.75]);
        case("max", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![2, 0]))], &[3], &[2.5, 2.75, 2.25]);
        case("min", &[2, 3, 4], "a", &[], &[1], &[-2.75]);
        case("min", &[2, 3, 4], "a", &[("keepdims", Value::Bool(true))], &[1, 1, 1], &[-2.75]);
        case("min", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0]))], &[3, 4], &[-2.75, 0.75, -1.5, -2.0, -0.25, -2.5, 1.0, -1.25, -1.75, 0.0, -2.25, -2.75]);
        case("min", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![1]))], &[2, 4], &[-2.75, -2.5, -2.25, -1.25, -1.75, -0.75, -0.5, -2.75]);
        case("min", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![-1]))], &[2, 3], &[-2.75, -2.5, -2.25, -2.0, -0.75, -2.75]);
        case("min", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![-1])), ("keepdims", Value::Bool(true))], &[2, 3, 1], &[-2.75, -2.5, -2.25, -2.0, -0.75, -2.75]);
        case("min", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0, 2]))], &[3], &[-2.75, -2.5, -2.75]);
        case("min", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![-1, 0])), ("keepdims", Value::Bool(true))], &[1, 3, 1], &[-2.75, -2.5, -2.75]);
        case("min", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![]))], &[1], &[-2.75]);
        case("min", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![])), ("exclude", Value::Bool(true))], &[1], &[-2.75]);
        case("min", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![1])), ("exclude", Value::Bool(true))], &[3], &[-2.75, -2.5, -2.75]);
        case("min", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0, 2])), ("keepdims", Value::Bool(true)), ("exclude", Value::Bool(true))], &[2, 1, 4], &[-2.75, -2.5, -2.25, -1.25, -1.75, -0.75, -0.5, -2.75]);
        case("min", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0, 1, 2])), ("exclude", Value::Bool(true))], &[2, 3, 4], &[-2.75, 0.75, -1.5, 2.0, -0.25, -2.5, 1.0, -1.25, 2.25, 0.0, -2.25, 1.25, -1.0, 2.5, 0.25, -2.0, 1.5, -0.75, 2.75, 0.5, -1.75, 1.75, -0.5, -2.75]);
        case("min", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![2, 0]))], &[3], &[-2.75, -2.5, -2.75]);
        case("prod", &[2, 3, 4], "b", &[], &[1], &[0.3923212832374595]);
        case("prod", &[2, 3, 4], "b", &[("keepdims", Value::Bool(true))], &[1, 1, 1], &[0.3923212832374595]);
        case("prod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![0]))], &[3, 4], &[0.57421875, 1.435546875, 0.837890625, 0.9375, 1.150390625, 0.623046875, 1.51171875, 0.896484375, 1.0009765625, 1.21875, 0.673828125, 0.7587890625]);
        case("prod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![1]))], &[2, 4], &[0.814544677734375, 0.751953125, 0.656982421875, 1.219482421875, 0.811767578125, 1.44964599609375, 1.29913330078125, 0.52294921875]);
        case("prod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![-1]))], &[2, 3], &[0.7289886474609375, 0.6321945190429688, 1.064788818359375, 0.88824462890625, 1.5364875793457031, 0.5857944488525391]);
        case("prod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![-1])), ("keepdims", Value::Bool(true))], &[2, 3, 1], &[0.7289886474609375, 0.6321945190429688, 1.064788818359375, 0.88824462890625, 1.5364875793457031, 0.5857944488525391]);
        case("prod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![0, 2]))], &[3], &[0.6475202506408095, 0.9713590262399521, 0.6237473789951764]);
        case("prod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![-1, 0])), ("keepdims", Value::Bool(true))], &[1, 3, 1], &[0.6475202506408095, 0.9713590262399521, 0.6237473789951764]);
        case("prod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![]))], &[1], &[0.3923212832374595]);
        case("prod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![])), ("exclude", Value::Bool(true))], &[1], &[0.3923212832374595]);
        case("prod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![1])), ("exclude", Value::Bool(true))], &[3], &[0.6475202506408095, 0.9713590262399521, 0.6237473789951764]);
        case("prod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![0, 2])), ("keepdims", Value::Bool(true)), ("exclude", Value::Bool(true))], &[2, 1, 4], &[0.814544677734375, 0.751953125, 0.656982421875, 1.219482421875, 0.811767578125, 1.44964599609375, 1.29913330078125, 0.52294921875]);
        case("prod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![0, 1, 2])), ("exclude", Value::Bool(true))], &[2, 3, 4], &[0.65625, 1.09375, 0.8125, 1.25, 0.96875, 0.6875, 1.125, 0.84375, 1.28125, 1.0, 0.71875, 1.15625, 0.875, 1.3125, 1.03125, 0.75, 1.1875, 0.90625, 1.34375, 1.0625, 0.78125, 1.21875, 0.9375, 0.65625]);
        case("prod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![2, 0]))], &[3], &[0.6475202506408095, 0.9713590262399521, 0.6237473789951764]);
        case("nansum", &[2, 3, 4], "a", &[], &[1], &[-2.75]);
        case("nansum", &[2, 3, 4], "a", &[("keepdims", Value::Bool(true))], &[1, 1, 1], &[-2.75]);
        case("nansum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0]))], &[3, 4], &[-3.75, 3.25, -1.25, 0.0, 1.25, -3.25, 3.75, -0.75, 0.5, 1.75, -2.75, -1.5]);
        case("nansum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![1]))], &[2, 4], &[-0.75, -1.75, -2.75, 2.0, -1.25, 3.5, 2.5, -4.25]);
        case("nansum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![-1]))], &[2, 3], &[-1.5, -3.0, 1.25, -0.25, 4.0, -3.25]);
        case("nansum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![-1])), ("keepdims", Value::Bool(true))], &[2, 3, 1], &[-1.5, -3.0, 1.25, -0.25, 4.0, -3.25]);
        case("nansum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0, 2]))], &[3], &[-1.75, 1.0, -2.0]);
        case("nansum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![-1, 0])), ("keepdims", Value::Bool(true))], &[1, 3, 1], &[-1.75, 1.0, -2.0]);
        case("nansum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![]))], &[1], &[-2.75]);
        case("nansum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![])), ("exclude", Value::Bool(true))], &[1], &[-2.75]);
        case("nansum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![1])), ("exclude", Value::Bool(true))], &[3], &[-1.75, 1.0, -2.0]);
        case("nansum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0, 2])), ("keepdims", Value::Bool(true)), ("exclude", Value::Bool(true))], &[2, 1, 4], &[-0.75, -1.75, -2.75, 2.0, -1.25, 3.5, 2.5, -4.25]);
        case("nansum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0, 1, 2])), ("exclude", Value::Bool(true))], &[2, 3, 4], &[-2.75, 0.75, -1.5, 2.0, -0.25, -2.5, 1.0, -1.25, 2.25, 0.0, -2.25, 1.25, -1.0, 2.5, 0.25, -2.0, 1.5, -0.75, 2.75, 0.5, -1.75, 1.75, -0.5, -2.75]);
        case("nansum", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![2, 0]))], &[3], &[-1.75, 1.0, -2.0]);
        case("nanprod", &[2, 3, 4], "b", &[], &[1], &[0.3923212832374595]);
        case("nanprod", &[2, 3, 4], "b", &[("keepdims", Value::Bool(true))], &[1, 1, 1], &[0.3923212832374595]);
        case("nanprod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![0]))], &[3, 4], &[0.57421875, 1.435546875, 0.837890625, 0.9375, 1.150390625, 0.623046875, 1.51171875, 0.896484375, 1.0009765625, 1.21875, 0.673828125, 0.7587890625]);
        case("nanprod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![1]))], &[2, 4], &[0.814544677734375, 0.751953125, 0.656982421875, 1.219482421875, 0.811767578125, 1.44964599609375, 1.29913330078125, 0.52294921875]);
        case("nanprod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![-1]))], &[2, 3], &[0.7289886474609375, 0.6321945190429688, 1.064788818359375, 0.88824462890625, 1.5364875793457031, 0.5857944488525391]);
        case("nanprod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![-1])), ("keepdims", Value::Bool(true))], &[2, 3, 1], &[0.7289886474609375, 0.6321945190429688, 1.064788818359375, 0.88824462890625, 1.5364875793457031, 0.5857944488525391]);
        case("nanprod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![0, 2]))], &[3], &[0.6475202506408095, 0.9713590262399521, 0.6237473789951764]);
        case("nanprod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![-1, 0])), ("keepdims", Value::Bool(true))], &[1, 3, 1], &[0.6475202506408095, 0.9713590262399521, 0.6237473789951764]);
        case("nanprod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![]))], &[1], &[0.3923212832374595]);
        case("nanprod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![])), ("exclude", Value::Bool(true))], &[1], &[0.3923212832374595]);
        case("nanprod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![1])), ("exclude", Value::Bool(true))], &[3], &[0.6475202506408095, 0.9713590262399521, 0.6237473789951764]);
        case("nanprod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![0, 2])), ("keepdims", Value::Bool(true)), ("exclude", Value::Bool(true))], &[2, 1, 4], &[0.814544677734375, 0.751953125, 0.656982421875, 1.219482421875, 0.811767578125, 1.44964599609375, 1.29913330078125, 0.52294921875]);
        case("nanprod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![0, 1, 2])), ("exclude", Value::Bool(true))], &[2, 3, 4], &[0.65625, 1.09375, 0.8125, 1.25, 0.96875, 0.6875, 1.125, 0.84375, 1.28125, 1.0, 0.71875, 1.15625, 0.875, 1.3125, 1.03125, 0.75, 1.1875, 0.90625, 1.34375, 1.0625, 0.78125, 1.21875, 0.9375, 0.65625]);
        case("nanprod", &[2, 3, 4], "b", &[("axis", Value::Tuple(vec![2, 0]))], &[3], &[0.6475202506408095, 0.9713590262399521, 0.6237473789951764]);
    }

    #[track_caller]
    fn arg_case(op: &str, shape: &[usize], attrs: &[(&str, Value)], want_shape: &[usize], want: &[f64]) {
        let n: usize = shape.iter().product();
        let data: Vec<f64> = (0..n).map(|i| ((i * 7) % 5) as f64).collect();
        for dt in [DType::F32, DType::F16, DType::I32, DType::I64, DType::U8] {
            let y = call1(op, &[arr(shape, &data, dt)], attrs).unwrap();
            assert_eq!(y.shape(), want_shape, "{op} {attrs:?}");
            assert_eq!(y.dtype(), dt, "{op} returns positions in the input dtype");
            close(&format!("{op} {attrs:?} {}", dt.name()), &vals(&y), want, 0.0);
        }
    }

    /// Norms: `np.sum(np.abs(x))` and `np.sqrt(np.sum(x * x))` over the axes;
    /// arg-reductions: `np.argmax` / `np.argmin` (first position on ties).
    #[test]
    #[rustfmt::skip]
    fn norm_and_arg_match_numpy() {
        case("norm", &[2, 3, 4], "a", &[("ord", Value::Int(1))], &[1], &[35.75]);
        case("norm", &[2, 3, 4], "a", &[("keepdims", Value::Bool(true)), ("ord", Value::Int(1))], &[1, 1, 1], &[35.75]);
        case("norm", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![1])), ("ord", Value::Int(1))], &[2, 4], &[5.25, 3.25, 4.75, 4.5, 4.25, 5.0, 3.5, 5.25]);
        case("norm", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![-1])), ("keepdims", Value::Bool(true)), ("ord", Value::Int(1))], &[2, 3, 1], &[7.0, 5.0, 5.75, 5.75, 5.5, 6.75]);
        case("norm", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0, 2])), ("ord", Value::Int(1))], &[3], &[12.75, 10.5, 12.5]);
        case("norm", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![2, 0, 1])), ("ord", Value::Int(1))], &[1], &[35.75]);
        case("norm", &[2, 3, 4], "a", &[("ord", Value::Int(2))], &[1], &[8.415016339853418]);
        case("norm", &[2, 3, 4], "a", &[("keepdims", Value::Bool(true)), ("ord", Value::Int(2))], &[1, 1, 1], &[8.415016339853418]);
        case("norm", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![1])), ("ord", Value::Int(2))], &[2, 4], &[3.5619517121937516, 2.6100766272276377, 2.883140648667699, 2.669269563007828, 2.5124689052802225, 3.142451272494134, 2.806243040080456, 3.43693177121688]);
        case("norm", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![-1])), ("keepdims", Value::Bool(true)), ("ord", Value::Int(2))], &[2, 3, 1], &[3.7914377220257753, 2.979093821953246, 3.418698582794336, 3.3634060117684275, 3.2596012026013246, 3.7332961307670196]);
        case("norm", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![0, 2])), ("ord", Value::Int(2))], &[3], &[5.0682837331783235, 4.415880433163924, 5.062114182829147]);
        case("norm", &[2, 3, 4], "a", &[("axis", Value::Tuple(vec![2, 0, 1])), ("ord", Value::Int(2))], &[1], &[8.415016339853418]);
        // argmax/argmin data: ((i*7)%5) reshaped to (2,3,4)
        arg_case("argmax", &[2, 3, 4], &[], &[1], &[2.0]);
        arg_case("argmax", &[2, 3, 4], &[("keepdims", Value::Bool(true))], &[1, 1, 1], &[2.0]);
        arg_case("argmax", &[2, 3, 4], &[("axis", Value::Int(0))], &[3, 4], &[1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
        arg_case("argmax", &[2, 3, 4], &[("axis", Value::Int(1)), ("keepdims", Value::Bool(true))], &[2, 1, 4], &[1.0, 2.0, 0.0, 1.0, 0.0, 1.0, 2.0, 1.0]);
        arg_case("argmax", &[2, 3, 4], &[("axis", Value::Int(-1))], &[2, 3], &[2.0, 3.0, 1.0, 0.0, 1.0, 2.0]);
        arg_case("argmin", &[2, 3, 4], &[], &[1], &[0.0]);
        arg_case("argmin", &[2, 3, 4], &[("keepdims", Value::Bool(true))], &[1, 1, 1], &[0.0]);
        arg_case("argmin", &[2, 3, 4], &[("axis", Value::Int(0))], &[3, 4], &[0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0]);
        arg_case("argmin", &[2, 3, 4], &[("axis", Value::Int(1)), ("keepdims", Value::Bool(true))], &[2, 1, 4], &[0.0, 1.0, 2.0, 0.0, 2.0, 0.0, 1.0, 0.0]);
        arg_case("argmin", &[2, 3, 4], &[("axis", Value::Int(-1))], &[2, 3], &[0.0, 1.0, 2.0, 3.0, 2.0, 0.0]);
        arg_case("argmax_channel", &[2, 3, 4], &[], &[2, 4], &[1.0, 2.0, 0.0, 1.0, 0.0, 1.0, 2.0, 1.0]);
    }

    #[test]
    fn integer_bool_and_half_dtypes() {
        // Integer sums wrap in the type, as MXNet: uint8 200 + 100 = 44, int8 100 + 100 = -56.
        let s = call1("sum", &[arr(&[2], &[200.0, 100.0], DType::U8)], &[]).unwrap();
        assert_eq!((s.dtype(), vals(&s)), (DType::U8, vec![44.0]));
        let s = call1("sum", &[arr(&[2], &[100.0, 100.0], DType::I8)], &[]).unwrap();
        assert_eq!(vals(&s), vec![-56.0]);
        // mean of integers divides the (wrapped) sum, truncating toward zero.
        let m = call1("mean", &[arr(&[2], &[200.0, 100.0], DType::U8)], &[]).unwrap();
        assert_eq!(vals(&m), vec![22.0]);
        let m = call1("mean", &[arr(&[3], &[-1.0, -2.0, -2.0], DType::I32)], &[]).unwrap();
        assert_eq!((m.dtype(), vals(&m)), (DType::I32, vec![-1.0]));
        // int64 sums are exact beyond 2^53.
        let big = (1i64 << 60) + 1;
        let x = crate::NDArray::from_vec(&[2], &[big, 1i64], crate::Context::cpu(0)).unwrap();
        assert_eq!(call1("sum", std::slice::from_ref(&x), &[]).unwrap().to_vec::<i64>().unwrap(), vec![big + 1]);
        assert_eq!(call1("prod", std::slice::from_ref(&x), &[]).unwrap().to_vec::<i64>().unwrap(), vec![big]);
        assert_eq!(call1("max", &[x], &[]).unwrap().to_vec::<i64>().unwrap(), vec![big]);
        // bool: sum/mean/max are "any", prod/min are "all" (MXNet gives True for sum([1,0,1])).
        let b = arr(&[3], &[1.0, 0.0, 1.0], DType::Bool);
        for (op, want) in [("sum", 1.0), ("mean", 1.0), ("max", 1.0), ("prod", 0.0), ("min", 0.0)] {
            let y = call1(op, std::slice::from_ref(&b), &[]).unwrap();
            assert_eq!((y.dtype(), vals(&y)), (DType::Bool, vec![want]), "{op}");
        }
        let many = arr(&[256], &[1.0; 256], DType::Bool);
        assert_eq!(vals(&call1("sum", &[many], &[]).unwrap()), vec![1.0], "256 trues do not wrap to false");
        // float16 accumulates in f64: 10000 ones sum to 10000 (f16 accumulation would stall at 2048).
        let h = arr(&[10000], &[1.0; 10000], DType::F16);
        assert_eq!(vals(&call1("sum", std::slice::from_ref(&h), &[]).unwrap()), vec![10000.0]);
        assert_eq!(vals(&call1("mean", &[h], &[]).unwrap()), vec![1.0]);
        // Integer prod wraps: int8 100 * 3 = 44.
        assert_eq!(vals(&call1("prod", &[arr(&[2], &[100.0, 3.0], DType::I8)], &[]).unwrap()), vec![44.0]);
        // nansum / nanprod on integers are sum / prod.
        assert_eq!(vals(&call1("nansum", &[arr(&[2], &[1.0, 2.0], DType::I32)], &[]).unwrap()), vec![3.0]);
        assert_eq!(vals(&call1("nanprod", &[arr(&[2], &[3.0, 2.0], DType::I32)], &[]).unwrap()), vec![6.0]);
    }

    #[test]
    fn nan_handling() {
        let x = arr(&[4], &[1.0, f64::NAN, 3.0, f64::NAN], DType::F32);
        for (op, want) in
            [("sum", f64::NAN), ("max", f64::NAN), ("min", f64::NAN), ("nansum", 4.0), ("nanprod", 3.0), ("argmax", 1.0), ("argmin", 1.0)]
        {
            close(op, &vals(&call1(op, std::slice::from_ref(&x), &[]).unwrap()), &[want], 0.0);
        }
        let inf = arr(&[2], &[f64::NEG_INFINITY, f64::NEG_INFINITY], DType::F32);
        assert_eq!(vals(&call1("max", std::slice::from_ref(&inf), &[]).unwrap()), vec![f64::NEG_INFINITY]);
        assert_eq!(vals(&call1("argmax", &[inf], &[]).unwrap()), vec![0.0]);
    }

    #[test]
    fn aliases() {
        let x = arr(&[2, 3], &pattern(6, "a"), DType::F32);
        for (alias, op) in [("sum_axis", "sum"), ("max_axis", "max"), ("min_axis", "min")] {
            let a = call1(alias, std::slice::from_ref(&x), &[("axis", Value::Int(1))]).unwrap();
            let b = call1(op, std::slice::from_ref(&x), &[("axis", Value::Int(1))]).unwrap();
            assert_eq!(vals(&a), vals(&b));
        }
    }

    #[test]
    fn norm_dtypes() {
        let x = arr(&[2, 2], &[3.0, 4.0, 6.0, 8.0], DType::F32);
        let y = call1("norm", std::slice::from_ref(&x), &[("axis", Value::Int(1)), ("out_dtype", Value::DType(DType::F64))]).unwrap();
        assert_eq!((y.dtype(), vals(&y)), (DType::F64, vec![5.0, 10.0]));
        let y = call1("norm", &[x], &[("ord", Value::Int(1)), ("out_dtype", Value::DType(DType::I32))]).unwrap();
        assert_eq!((y.dtype(), vals(&y)), (DType::I32, vec![21.0]));
        // Integer input: the L2 norm truncated to the type (MXNet's own int kernel is inexact).
        let y = call1("norm", &[arr(&[2], &[3.0, 4.0], DType::I32)], &[]).unwrap();
        assert_eq!((y.dtype(), vals(&y)), (DType::I32, vec![5.0]));
        // float32 values whose squares overflow float32 but not the f64 accumulator.
        let y = call1("norm", &[arr(&[2], &[1e30, 1e30], DType::F32)], &[]).unwrap();
        close("norm big", &vals(&y), &[1.4142135e30], 1e-6);
        // float64 values whose squares overflow f64: scaled accumulation.
        let y = call1("norm", &[arr(&[2], &[1e200, 1e200], DType::F64)], &[]).unwrap();
        close("norm huge", &vals(&y), &[std::f64::consts::SQRT_2 * 1e200], 1e-14);
        let y = call1("norm", &[arr(&[3], &[1e-200, 1e-200, 0.0], DType::F64)], &[]).unwrap();
        close("norm tiny", &vals(&y), &[std::f64::consts::SQRT_2 * 1e-200], 1e-14);
    }

    /// A sum over 10^7 float32 elements runs in parallel chunks and accumulates in
    /// f64: NumPy (float64) gives -1.75 for this pattern, and 0.1f32 * 10^7 is 1e6.
    #[test]
    fn large_sums_are_accurate() {
        let n = 10_000_000;
        let data: Vec<f32> = pattern(n, "a").into_iter().map(|v| v as f32).collect();
        let x = crate::NDArray::from_vec(&[n], &data, crate::Context::cpu(0)).unwrap();
        assert_eq!(call1("sum", std::slice::from_ref(&x), &[]).unwrap().to_vec::<f32>().unwrap(), vec![-1.75]);
        let x2 = x.reshape_view(&[1000, 10_000]).unwrap();
        let rows = call1("sum", std::slice::from_ref(&x2), &[("axis", Value::Int(1))]).unwrap().to_vec::<f32>().unwrap();
        let cols = call1("sum", &[x2], &[("axis", Value::Int(0))]).unwrap().to_vec::<f32>().unwrap();
        let total: f64 = rows.iter().map(|v| *v as f64).sum();
        let total2: f64 = cols.iter().map(|v| *v as f64).sum();
        assert_eq!((rows.len(), cols.len()), (1000, 10_000));
        assert!((total + 1.75).abs() < 1e-6 && (total2 + 1.75).abs() < 1e-6, "{total} {total2}");
        let tenth = crate::NDArray::from_vec(&[n], &vec![0.1f32; n], crate::Context::cpu(0)).unwrap();
        assert_eq!(call1("sum", &[tenth], &[]).unwrap().to_vec::<f32>().unwrap(), vec![1_000_000.0]);
    }

    #[test]
    fn errors_name_the_op_and_the_problem() {
        let x = arr(&[2, 3, 4], &pattern(24, "a"), DType::F32);
        let e = err_of("sum", std::slice::from_ref(&x), &[("axis", Value::Int(3))]);
        assert!(e.contains("operator sum") && e.contains("axis 3") && e.contains("(2, 3, 4)"), "{e}");
        let e = err_of("mean", std::slice::from_ref(&x), &[("axis", Value::Int(-4))]);
        assert!(e.contains("operator mean") && e.contains("axis -4"), "{e}");
        let e = err_of("max", std::slice::from_ref(&x), &[("axis", Value::Tuple(vec![0, -3]))]);
        assert!(e.contains("operator max") && e.contains("duplicates"), "{e}");
        let e = err_of("sum", std::slice::from_ref(&x), &[("axis", Value::Tuple(vec![1, 1])), ("exclude", Value::Bool(true))]);
        assert!(e.contains("duplicates"), "{e}");
        let e = err_of("norm", std::slice::from_ref(&x), &[("ord", Value::Int(3))]);
        assert!(e.contains("operator norm") && e.contains("ord=3"), "{e}");
        let e = err_of("norm", std::slice::from_ref(&x), &[("out_dtype", Value::DType(DType::U8))]);
        assert!(e.contains("operator norm") && e.contains("uint8"), "{e}");
        let e = err_of("argmax", std::slice::from_ref(&x), &[("axis", Value::Int(3))]);
        assert!(e.contains("operator argmax") && e.contains("axis 3"), "{e}");
        let e = err_of("argmax", &[arr(&[2], &[1.0, 0.0], DType::Bool)], &[]);
        assert!(e.contains("operator argmax") && e.contains("bool"), "{e}");
        let e = err_of("argmax_channel", &[arr(&[3], &[1.0, 3.0, 2.0], DType::F32)], &[]);
        assert!(e.contains("operator argmax_channel") && e.contains("axis 1"), "{e}");
        let e = err_of("sum", &[x], &[("axis", Value::Str("(a)".into()))]);
        assert!(e.contains("operator sum") && e.contains("axis"), "{e}");
        // Reductions without an identity reject empty extents; sum/prod/mean do not.
        let empty = crate::NDArray::empty(&[0, 3], crate::Context::cpu(0), DType::F32).unwrap();
        let e = err_of("max", std::slice::from_ref(&empty), &[("axis", Value::Int(0))]);
        assert!(e.contains("operator max") && e.contains("zero-size"), "{e}");
        assert_eq!(vals(&call1("sum", std::slice::from_ref(&empty), &[("axis", Value::Int(0))]).unwrap()), vec![0.0; 3]);
        assert_eq!(vals(&call1("prod", std::slice::from_ref(&empty), &[("axis", Value::Int(0))]).unwrap()), vec![1.0; 3]);
        assert!(vals(&call1("mean", std::slice::from_ref(&empty), &[("axis", Value::Int(0))]).unwrap()).iter().all(|v| v.is_nan()));
        assert_eq!(call1("max", &[empty], &[("axis", Value::Int(1))]).unwrap().shape(), &[0]);
    }
}
