//! Elementwise ops: binary on equal shapes (`elemwise_add`, `_mod`, `_equal`, ...),
//! broadcast binary (`broadcast_add`, ...), binary with a scalar (`_plus_scalar`,
//! `_rminus_scalar`, ...), unary math (`exp`, `relu`, ...) and `clip`.

use super::{infer_like_first, infer_same, Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Registry};
use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::cpu::elemwise::{self as k, BinFn, Compute, Elem, UnFn};
use crate::shape::{self, broadcast_shapes, Shape};
use crate::{bin_fn, un_fn, with_dtype};

// ---- binary functors -------------------------------------------------------

bin_fn!(Add, |a, b| a + b, a.wrapping_add(b));
bin_fn!(Sub, |a, b| a - b, a.wrapping_sub(b));
bin_fn!(Mul, |a, b| a * b, a.wrapping_mul(b));
bin_fn!(Div, |a, b| a / b, if b == 0 { 0 } else { a.wrapping_div(b) });
bin_fn!(
    Mod,
    |a, b| if b == 0.0 {
        0.0
    } else {
        let r = a % b;
        if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
            r + b
        } else {
            r
        }
    },
    if b == 0 {
        0
    } else {
        let r = a.wrapping_rem(b);
        if r != 0 && ((r < 0) != (b < 0)) {
            r + b
        } else {
            r
        }
    }
);
bin_fn!(Pow, |a, b| a.powf(b), (a as f64).powf(b as f64) as i64);
bin_fn!(Max, |a, b| if a > b || a.is_nan() { a } else { b }, a.max(b));
bin_fn!(Min, |a, b| if a < b || a.is_nan() { a } else { b }, a.min(b));
bin_fn!(Eq, |a, b| (a == b) as i32 as _, (a == b) as i64);
bin_fn!(Ne, |a, b| (a != b) as i32 as _, (a != b) as i64);
bin_fn!(Gt, |a, b| (a > b) as i32 as _, (a > b) as i64);
bin_fn!(Ge, |a, b| (a >= b) as i32 as _, (a >= b) as i64);
bin_fn!(Lt, |a, b| (a < b) as i32 as _, (a < b) as i64);
bin_fn!(Le, |a, b| (a <= b) as i32 as _, (a <= b) as i64);
bin_fn!(Hypot, |a, b| a.hypot(b), (a as f64).hypot(b as f64) as i64);
bin_fn!(LogicalAnd, |a, b| (a != 0.0 && b != 0.0) as i32 as _, (a != 0 && b != 0) as i64);
bin_fn!(LogicalOr, |a, b| (a != 0.0 || b != 0.0) as i32 as _, (a != 0 || b != 0) as i64);
bin_fn!(LogicalXor, |a, b| ((a != 0.0) != (b != 0.0)) as i32 as _, ((a != 0) != (b != 0)) as i64);

fn same_compute<F: BinFn>(c: &mut OpCall) -> Result<()> {
    let (a, b, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    with_dtype!(o.dtype, T, { k::binary::<T, F>(a.ptr_as(), b.ptr_as(), o.ptr_as(), o.size()) });
    Ok(())
}

fn bcast_infer(a: &InferArgs) -> Result<Vec<(Shape, crate::dtype::DType)>> {
    let d = super::check_same_dtype(a)?;
    Ok(vec![(broadcast_shapes(a.shapes[0], a.shapes[1], a.op.name)?, d)])
}

/// Strides of `s` read over `out` (right-aligned; 0 on broadcast axes).
fn bcast_strides(s: &[usize], out: &[usize]) -> Shape {
    let st = shape::strides(s);
    let pad = out.len() - s.len();
    (0..out.len()).map(|i| if i < pad || s[i - pad] == 1 { 0 } else { st[i - pad] }).collect()
}

fn bcast_compute<F: BinFn>(c: &mut OpCall) -> Result<()> {
    let (a, b, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let n = o.size();
    with_dtype!(o.dtype, T, {
        if a.shape == b.shape {
            k::binary::<T, F>(a.ptr_as(), b.ptr_as(), o.ptr_as(), n);
        } else if b.size() == 1 && a.size() == n {
            // SAFETY: b holds one element.
            let s = unsafe { (*b.ptr_as::<T>()).ld() };
            k::scalar::<T, F>(a.ptr_as(), s, o.ptr_as(), n, false);
        } else if a.size() == 1 && b.size() == n {
            // SAFETY: a holds one element.
            let s = unsafe { (*a.ptr_as::<T>()).ld() };
            k::scalar::<T, F>(b.ptr_as(), s, o.ptr_as(), n, true);
        } else {
            let (sa, sb) = (bcast_strides(&a.shape, &o.shape), bcast_strides(&b.shape, &o.shape));
            k::broadcast::<T, F>(a.ptr_as(), &sa, b.ptr_as(), &sb, o.ptr_as(), &o.shape);
        }
    });
    Ok(())
}

const SCALAR_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("scalar", PType::Float, Some("1"), "scalar input value"),
    ParamSpec::new(
        "is_int",
        PType::Bool,
        Some("True"),
        "Indicate whether scalar input is int type (accepted for MXNet compatibility; the scalar is converted to the array's dtype)",
    ),
];

fn scalar_compute<F: BinFn, const REV: bool>(c: &mut OpCall) -> Result<()> {
    let (a, o) = (&c.inputs[0], &c.outputs[0]);
    let s = c.params.float("scalar");
    with_dtype!(o.dtype, T, {
        let sv = <<T as Elem>::C as Compute>::from_f64(s);
        k::scalar::<T, F>(a.ptr_as(), sv, o.ptr_as(), o.size(), REV)
    });
    Ok(())
}

const LHS_RHS: Arity = Arity::Fixed(&["lhs", "rhs"]);
const DATA: Arity = Arity::Fixed(&["data"]);

macro_rules! binary_family {
    ($r:expr, $F:ident, $what:literal, $elem:literal, $ea:expr, $bcast:literal, $ba:expr, $scalar:literal, $rscalar:expr) => {{
        $r.add(
            OpDef::new(
                $elem,
                concat!($what, " of two arrays of the same shape, element-wise."),
                LHS_RHS,
                &[],
                infer_same,
                same_compute::<$F>,
            )
            .aliases($ea)
            .fill(super::fill_same_shape)
            .inplace(),
        );
        $r.add(
            OpDef::new(
                $bcast,
                concat!($what, " of two arrays, element-wise with broadcasting (NumPy's rules)."),
                LHS_RHS,
                &[],
                bcast_infer,
                bcast_compute::<$F>,
            )
            .aliases($ba)
            .inplace(),
        );
        $r.add(
            OpDef::new(
                $scalar,
                concat!($what, " of an array and a scalar, element-wise."),
                DATA,
                SCALAR_PARAMS,
                infer_like_first,
                scalar_compute::<$F, false>,
            )
            .inplace()
            .unnamed_inputs(),
        );
        let rs: Option<&'static str> = $rscalar;
        if let Some(name) = rs {
            $r.add(
                OpDef::new(
                    name,
                    concat!($what, " of a scalar and an array (scalar on the left), element-wise."),
                    DATA,
                    SCALAR_PARAMS,
                    infer_like_first,
                    scalar_compute::<$F, true>,
                )
                .inplace()
                .unnamed_inputs(),
            );
        }
    }};
}

// ---- unary functors ---------------------------------------------------------

fn via_f64(a: i64, f: fn(f64) -> f64) -> i64 {
    f(a as f64) as i64
}

un_fn!(Neg, |a| -a, a.wrapping_neg());
un_fn!(Abs, |a| a.abs(), a.wrapping_abs());
un_fn!(
    Sign,
    |a| if a > 0.0 {
        1.0
    } else if a < 0.0 {
        -1.0
    } else {
        0.0 * a
    },
    a.signum()
);
un_fn!(Floor, |a| a.floor(), a);
un_fn!(Ceil, |a| a.ceil(), a);
un_fn!(Round, |a| a.round(), a);
un_fn!(Rint, |a| a.round_ties_even(), a);
un_fn!(Trunc, |a| a.trunc(), a);
un_fn!(Sqrt, |a| a.sqrt(), via_f64(a, f64::sqrt));
un_fn!(Rsqrt, |a| 1.0 / a.sqrt(), via_f64(a, |x| 1.0 / x.sqrt()));
un_fn!(Cbrt, |a| a.cbrt(), via_f64(a, f64::cbrt));
un_fn!(Rcbrt, |a| 1.0 / a.cbrt(), via_f64(a, |x| 1.0 / x.cbrt()));
un_fn!(Square, |a| a * a, a.wrapping_mul(a));
un_fn!(Reciprocal, |a| 1.0 / a, if a == 0 { 0 } else { 1 / a });
un_fn!(Exp, |a| a.exp(), via_f64(a, f64::exp));
un_fn!(Expm1, |a| a.exp_m1(), via_f64(a, f64::exp_m1));
un_fn!(Log, |a| a.ln(), via_f64(a, f64::ln));
un_fn!(Log10, |a| a.log10(), via_f64(a, f64::log10));
un_fn!(Log2, |a| a.log2(), via_f64(a, f64::log2));
un_fn!(Log1p, |a| a.ln_1p(), via_f64(a, f64::ln_1p));
un_fn!(Sin, |a| a.sin(), via_f64(a, f64::sin));
un_fn!(Cos, |a| a.cos(), via_f64(a, f64::cos));
un_fn!(Tan, |a| a.tan(), via_f64(a, f64::tan));
un_fn!(Arcsin, |a| a.asin(), via_f64(a, f64::asin));
un_fn!(Arccos, |a| a.acos(), via_f64(a, f64::acos));
un_fn!(Arctan, |a| a.atan(), via_f64(a, f64::atan));
un_fn!(Sinh, |a| a.sinh(), via_f64(a, f64::sinh));
un_fn!(Cosh, |a| a.cosh(), via_f64(a, f64::cosh));
un_fn!(Tanh, |a| a.tanh(), via_f64(a, f64::tanh));
un_fn!(Arcsinh, |a| a.asinh(), via_f64(a, f64::asinh));
un_fn!(Arccosh, |a| a.acosh(), via_f64(a, f64::acosh));
un_fn!(Arctanh, |a| a.atanh(), via_f64(a, f64::atanh));
un_fn!(Degrees, |a| a.to_degrees(), via_f64(a, f64::to_degrees));
un_fn!(Radians, |a| a.to_radians(), via_f64(a, f64::to_radians));
un_fn!(Sigmoid, |a| 1.0 / (1.0 + (-a).exp()), via_f64(a, |x| 1.0 / (1.0 + (-x).exp())));
un_fn!(Relu, |a| if a > 0.0 || a.is_nan() { a } else { 0.0 }, a.max(0));
un_fn!(Softsign, |a| a / (1.0 + a.abs()), via_f64(a, |x| x / (1.0 + x.abs())));
un_fn!(LogicalNot, |a| (a == 0.0) as i32 as _, (a == 0) as i64);

fn unary_compute<F: UnFn>(c: &mut OpCall) -> Result<()> {
    let (a, o) = (&c.inputs[0], &c.outputs[0]);
    with_dtype!(o.dtype, T, { k::unary::<T, F>(a.ptr_as(), o.ptr_as(), o.size()) });
    Ok(())
}

macro_rules! unary_op {
    ($r:expr, $F:ident, $name:literal, $doc:literal) => {
        $r.add(OpDef::new($name, $doc, DATA, &[], infer_like_first, unary_compute::<$F>).inplace().unnamed_inputs())
    };
    ($r:expr, $F:ident, $name:literal, $doc:literal, $cost:expr) => {
        $r.add(OpDef::new($name, $doc, DATA, &[], infer_like_first, unary_compute::<$F>).inplace().cost($cost).unnamed_inputs())
    };
}

// ---- clip -------------------------------------------------------------------

const CLIP_PARAMS: &[ParamSpec] =
    &[ParamSpec::new("a_min", PType::Float, None, "Minimum value"), ParamSpec::new("a_max", PType::Float, None, "Maximum value")];

fn clip_compute(c: &mut OpCall) -> Result<()> {
    let (a, o) = (&c.inputs[0], &c.outputs[0]);
    let (lo, hi) = (c.params.float("a_min"), c.params.float("a_max"));
    with_dtype!(o.dtype, T, {
        let lo = <<T as Elem>::C as Compute>::from_f64(lo);
        let hi = <<T as Elem>::C as Compute>::from_f64(hi);
        k::scalar::<T, Max>(a.ptr_as(), lo, o.ptr_as(), o.size(), false);
        k::scalar::<T, Min>(o.ptr_as(), hi, o.ptr_as(), o.size(), false);
    });
    Ok(())
}

fn clip_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    infer_like_first(a)
}

pub(super) fn register(r: &mut Registry) {
    binary_family!(r, Add, "Adds", "elemwise_add", &["_plus", "_add", "_Plus"], "broadcast_add", &["broadcast_plus"], "_plus_scalar", None);
    binary_family!(
        r,
        Sub,
        "Subtracts",
        "elemwise_sub",
        &["_minus", "_sub", "_Minus"],
        "broadcast_sub",
        &["broadcast_minus"],
        "_minus_scalar",
        Some("_rminus_scalar")
    );
    binary_family!(r, Mul, "Multiplies", "elemwise_mul", &["_mul", "_Mul"], "broadcast_mul", &[], "_mul_scalar", None);
    binary_family!(r, Div, "Divides", "elemwise_div", &["_div", "_Div"], "broadcast_div", &[], "_div_scalar", Some("_rdiv_scalar"));
    binary_family!(
        r,
        Mod,
        "Modulo (the result has the divisor's sign)",
        "_mod",
        &["_Mod"],
        "broadcast_mod",
        &[],
        "_mod_scalar",
        Some("_rmod_scalar")
    );
    binary_family!(r, Pow, "Power", "_power", &["_Power"], "broadcast_power", &[], "_power_scalar", Some("_rpower_scalar"));
    binary_family!(r, Max, "Maximum", "_maximum", &["_Maximum"], "broadcast_maximum", &[], "_maximum_scalar", None);
    binary_family!(r, Min, "Minimum", "_minimum", &["_Minimum"], "broadcast_minimum", &[], "_minimum_scalar", None);
    binary_family!(r, Eq, "Equality test (1 where equal, 0 elsewhere)", "_equal", &[], "broadcast_equal", &[], "_equal_scalar", None);
    binary_family!(r, Ne, "Inequality test (1 where not equal)", "_not_equal", &[], "broadcast_not_equal", &[], "_not_equal_scalar", None);
    binary_family!(r, Gt, "Greater-than test", "_greater", &[], "broadcast_greater", &[], "_greater_scalar", None);
    binary_family!(r, Ge, "Greater-or-equal test", "_greater_equal", &[], "broadcast_greater_equal", &[], "_greater_equal_scalar", None);
    binary_family!(r, Lt, "Less-than test", "_lesser", &[], "broadcast_lesser", &[], "_lesser_scalar", None);
    binary_family!(r, Le, "Less-or-equal test", "_lesser_equal", &[], "broadcast_lesser_equal", &[], "_lesser_equal_scalar", None);
    binary_family!(r, Hypot, "Hypotenuse", "_hypot", &[], "broadcast_hypot", &[], "_hypot_scalar", None);
    binary_family!(r, LogicalAnd, "Logical and", "_logical_and", &[], "broadcast_logical_and", &[], "_logical_and_scalar", None);
    binary_family!(r, LogicalOr, "Logical or", "_logical_or", &[], "broadcast_logical_or", &[], "_logical_or_scalar", None);
    binary_family!(r, LogicalXor, "Logical xor", "_logical_xor", &[], "broadcast_logical_xor", &[], "_logical_xor_scalar", None);

    // MXNet's scatter ops: on dense arrays exactly elemwise_div, _plus_scalar and
    // _minus_scalar (same kernels and gradients); on a sparse left-hand input they
    // compute only the stored values (op::sparse::elemwise).
    r.add(
        OpDef::new(
            "_scatter_elemwise_div",
            "Divides arguments element-wise. If the left-hand-side input is 'row_sparse', only the values stored in it are computed \
             (the output keeps its rows); otherwise it is elemwise_div.",
            LHS_RHS,
            &[],
            infer_same,
            same_compute::<Div>,
        )
        .fill(super::fill_same_shape),
    );
    r.add(OpDef::new(
        "_scatter_plus_scalar",
        "Adds a scalar to a tensor element-wise. If the input is 'row_sparse' or 'csr', only its stored values are computed \
         (the output keeps its storage); otherwise it is _plus_scalar.",
        DATA,
        SCALAR_PARAMS,
        infer_like_first,
        scalar_compute::<Add, false>,
    ));
    r.add(OpDef::new(
        "_scatter_minus_scalar",
        "Subtracts a scalar from a tensor element-wise. If the input is 'row_sparse' or 'csr', only its stored values are \
         computed (the output keeps its storage); otherwise it is _minus_scalar.",
        DATA,
        SCALAR_PARAMS,
        infer_like_first,
        scalar_compute::<Sub, false>,
    ));

    unary_op!(r, Neg, "negative", "Numerical negative of the argument, element-wise.");
    unary_op!(r, Abs, "abs", "Returns element-wise absolute value of the input.");
    unary_op!(r, Sign, "sign", "Returns element-wise sign of the input.");
    unary_op!(r, Floor, "floor", "Returns element-wise floor of the input.");
    unary_op!(r, Ceil, "ceil", "Returns element-wise ceiling of the input.");
    unary_op!(r, Round, "round", "Returns element-wise rounded value to the nearest integer of the input (halves away from zero).");
    unary_op!(r, Rint, "rint", "Returns element-wise rounded value to the nearest integer of the input (halves to even).");
    unary_op!(r, Trunc, "trunc", "Return the element-wise truncated value of the input.");
    unary_op!(r, Trunc, "fix", "Returns element-wise rounded value to the nearest integer towards zero of the input.");
    unary_op!(r, Sqrt, "sqrt", "Returns element-wise square-root value of the input.");
    unary_op!(r, Rsqrt, "rsqrt", "Returns element-wise inverse square-root value of the input.");
    unary_op!(r, Cbrt, "cbrt", "Returns element-wise cube-root value of the input.");
    unary_op!(r, Rcbrt, "rcbrt", "Returns element-wise inverse cube-root value of the input.");
    unary_op!(r, Square, "square", "Returns element-wise squared value of the input.");
    unary_op!(r, Reciprocal, "reciprocal", "Returns the reciprocal of the argument, element-wise.");
    unary_op!(r, Exp, "exp", "Returns element-wise exponential value of the input.", 4);
    unary_op!(r, Expm1, "expm1", "Returns ``exp(x) - 1`` computed element-wise on the input.", 4);
    unary_op!(r, Log, "log", "Returns element-wise Natural logarithmic value of the input.", 4);
    unary_op!(r, Log10, "log10", "Returns element-wise Base-10 logarithmic value of the input.", 4);
    unary_op!(r, Log2, "log2", "Returns element-wise Base-2 logarithmic value of the input.", 4);
    unary_op!(r, Log1p, "log1p", "Returns element-wise ``log(1 + x)`` value of the input.", 4);
    unary_op!(r, Sin, "sin", "Computes the element-wise sine of the input array.", 4);
    unary_op!(r, Cos, "cos", "Computes the element-wise cosine of the input array.", 4);
    unary_op!(r, Tan, "tan", "Computes the element-wise tangent of the input array.", 4);
    unary_op!(r, Arcsin, "arcsin", "Returns element-wise inverse sine of the input array.", 4);
    unary_op!(r, Arccos, "arccos", "Returns element-wise inverse cosine of the input array.", 4);
    unary_op!(r, Arctan, "arctan", "Returns element-wise inverse tangent of the input array.", 4);
    unary_op!(r, Sinh, "sinh", "Returns the hyperbolic sine of the input array, computed element-wise.", 4);
    unary_op!(r, Cosh, "cosh", "Returns the hyperbolic cosine of the input array, computed element-wise.", 4);
    unary_op!(r, Tanh, "tanh", "Returns the hyperbolic tangent of the input array, computed element-wise.", 4);
    unary_op!(r, Arcsinh, "arcsinh", "Returns the element-wise inverse hyperbolic sine of the input array.", 4);
    unary_op!(r, Arccosh, "arccosh", "Returns the element-wise inverse hyperbolic cosine of the input array.", 4);
    unary_op!(r, Arctanh, "arctanh", "Returns the element-wise inverse hyperbolic tangent of the input array.", 4);
    unary_op!(r, Degrees, "degrees", "Converts each element of the input array from radians to degrees.");
    unary_op!(r, Radians, "radians", "Converts each element of the input array from degrees to radians.");
    unary_op!(r, Sigmoid, "sigmoid", "Computes sigmoid of x element-wise: ``y = 1 / (1 + exp(-x))``.", 4);
    unary_op!(r, Relu, "relu", "Computes rectified linear activation: ``max(x, 0)``.");
    unary_op!(r, Softsign, "softsign", "Computes softsign of x element-wise: ``y = x / (1 + abs(x))``.");
    unary_op!(r, LogicalNot, "logical_not", "Returns the result of logical NOT (!) function.");

    r.add(
        OpDef::new(
            "clip",
            "Clips (limits) the values in an array: values below ``a_min`` become ``a_min``, above ``a_max`` become ``a_max``.",
            DATA,
            CLIP_PARAMS,
            clip_infer,
            clip_compute,
        )
        .inplace()
        .unnamed_inputs(),
    );
}
