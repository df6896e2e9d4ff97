//! Expected values in the `numpy_*` tests were computed with NumPy (inputs are
//! `arange` arrays, the k-th input offset by 100*k); Reshape shapes with special
//! codes were checked against MXNet 1.9.1.

mod numpy_cases;
mod slice_rules;

use super::*;
use crate::context::Context;
use crate::ndarray::NDArray;
use crate::op::{call, call1, invoke, lookup, Value};

const N: i64 = i64::MIN;

fn t(v: &[i64]) -> Value {
    Value::Tuple(v.to_vec())
}

fn arange(shape: &[usize], start: f32) -> NDArray {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| start + i as f32).collect();
    NDArray::from_vec(shape, &v, Context::cpu(0)).unwrap()
}

fn check(op: &str, inputs: &[NDArray], params: &[(&str, Value)], shape: &[usize], data: &[f32]) {
    let out = call1(op, inputs, params).unwrap_or_else(|e| panic!("{op} {params:?}: {e}"));
    assert_eq!(out.shape(), shape, "{op} {params:?}");
    assert_eq!(out.to_vec::<f32>().unwrap(), data, "{op} {params:?}");
}

fn check_multi(op: &str, inputs: &[NDArray], params: &[(&str, Value)], outs: &[(&[usize], &[f32])]) {
    let got = call(op, inputs, params).unwrap_or_else(|e| panic!("{op} {params:?}: {e}"));
    assert_eq!(got.len(), outs.len(), "{op} {params:?}");
    for (g, (s, d)) in got.iter().zip(outs) {
        assert_eq!(g.shape(), *s, "{op} {params:?}");
        assert_eq!(g.to_vec::<f32>().unwrap(), *d, "{op} {params:?}");
    }
}

/// The call fails synchronously with a message naming the op and each needle.
fn check_err(op: &str, inputs: &[NDArray], params: &[(&str, Value)], needles: &[&str]) {
    let e = call(op, inputs, params).err().unwrap_or_else(|| panic!("{op} {params:?} should fail"));
    let m = e.message();
    let name = lookup(op).unwrap().name;
    assert!(m.contains(&format!("operator {name}")), "{m}");
    for n in needles {
        assert!(m.contains(n), "{op} {params:?}: '{m}' lacks '{n}'");
    }
}

fn slice_table(cases: &[(i64, i64, i64, &[i64])]) {
    let x = arange(&[5], 0.0);
    for (b, e, s, want) in cases {
        let p = [("begin", t(&[*b])), ("end", t(&[*e])), ("step", t(&[*s]))];
        let out = call1("slice", std::slice::from_ref(&x), &p).unwrap();
        let got: Vec<i64> = out.to_vec::<f32>().unwrap().iter().map(|v| *v as i64).collect();
        assert_eq!(&got[..], *want, "slice [{b}:{e}:{s}] (i64::MIN is None)");
    }
}

fn transpose_checksum(shape: &[usize], axes: &[i64], want: f64) {
    let out = call1("transpose", &[arange(shape, 0.0)], &[("axes", t(axes))]).unwrap();
    let cs: f64 = out.to_vec::<f32>().unwrap().iter().enumerate().map(|(i, x)| (i as f64 + 1.0) * *x as f64).sum();
    assert_eq!(cs, want, "transpose {shape:?} by {axes:?}");
}

#[test]
fn reshape_like_ranges() {
    let ctx = Context::cpu(0);
    let a = NDArray::from_vec(&[2, 3, 4], &(0..24).map(|x| x as f32).collect::<Vec<_>>(), ctx).unwrap();
    let b = NDArray::from_vec(&[6, 2, 2], &[0f32; 24], ctx).unwrap();
    let r = call1("reshape_like", &[a.clone(), b.clone()], &[]).unwrap();
    assert_eq!(r.shape(), &[6, 2, 2]);
    let c = NDArray::from_vec(&[5, 12], &[0f32; 60], ctx).unwrap();
    let r = call1("reshape_like", &[a.clone(), c], &[("lhs_begin", Value::Int(1)), ("rhs_begin", Value::Int(-1))]).unwrap();
    assert_eq!(r.shape(), &[2, 12]);
    assert_eq!(r.to_vec::<f32>().unwrap()[5], 5.0);
    let e = call1("reshape_like", &[a, b], &[("lhs_end", Value::Int(1))]).unwrap_err();
    assert!(e.message().contains("reshape_like"), "{}", e.message());
}

#[test]
fn reshape_special_codes() {
    type Case<'a> = (&'a [usize], &'a [i64], bool, &'a [usize]);
    let cases: &[Case] = &[
        (&[2, 3, 4], &[4, 0, -1], false, &[4, 3, 2]),
        (&[2, 3, 4], &[-2], false, &[2, 3, 4]),
        (&[2, 3, 4], &[2, -2], false, &[2, 3, 4]),
        (&[2, 3, 4], &[-2, 1, 1], false, &[2, 3, 4, 1, 1]),
        (&[2, 3, 4], &[-3, 4], false, &[6, 4]),
        (&[2, 3, 4], &[-4, 1, 2, -2], false, &[1, 2, 3, 4]),
        (&[2, 3, 4], &[2, -4, -1, 3, -2], false, &[2, 1, 3, 4]),
        (&[2, 3, 4], &[-4, -1, 1, -3], false, &[2, 1, 12]),
        (&[10, 5, 4], &[-1, 0], false, &[40, 5]),
        (&[10, 5, 4], &[-1, 0], true, &[50, 4]),
        (&[10, 5, 4], &[-3, 0], true, &[50, 4]),
        (&[10, 5, 4], &[0, -3], true, &[10, 20]),
        (&[10, 5, 4], &[-2, -1], true, &[10, 5, 4]),
        (&[10, 5, 4], &[0, 0, 0, -1], false, &[10, 5, 4, 1]),
        (&[10, 5, 4], &[-4, 2, 5, 0, 0], false, &[2, 5, 5, 4]),
        (&[10, 5, 4], &[0, 0, -4, 2, 2], false, &[10, 5, 2, 2]),
        (&[10, 5, 4], &[2, 5, -4, 0, 0], true, &[2, 5, 5, 4]),
        (&[2, 3, 4], &[0, -1], true, &[3, 8]),
        (&[8, 3, 4], &[-1, 2, -4, -1, 2], true, &[4, 2, 6, 2]),
        (&[2, 3, 4, 5], &[0, -3, 0], true, &[2, 12, 5]),
        (&[2, 3, 4, 5], &[-2, -3], true, &[2, 3, 20]),
        (&[5], &[0, -1], false, &[5, 1]),
        (&[0, 5, 4], &[-1, 4], false, &[0, 4]),
        // -1 after -2/-4: the documented rule (MXNet 1.9.1 mis-indexes the inferred
        // dim here and returns (2, 1, 4, 1) and (2, 3, 1, 4)).
        (&[2, 3, 4], &[-2, -1], false, &[2, 3, 4, 1]),
        (&[6, 4, 1], &[-4, 2, 3, -1, 1], false, &[2, 3, 4, 1]),
    ];
    for (src, spec, rev, want) in cases {
        let got = infer_reshape(src, spec, *rev).unwrap_or_else(|e| panic!("{src:?} {spec:?} {rev}: {e}"));
        assert_eq!(&got[..], *want, "{src:?} {spec:?} reverse={rev}");
        let n: usize = src.iter().product();
        let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
        check("Reshape", &[arange(src, 0.0)], &[("shape", t(spec)), ("reverse", Value::Bool(*rev))], want, &data);
    }
}

#[test]
fn reshape_errors() {
    let cases: &[(&[usize], &[i64], bool, &str)] = &[
        (&[10, 5, 4], &[-1, -1], false, "only one dimension can be inferred"),
        (&[10, 5, 4], &[0, 0, 0, 0], false, "the input has only 3 dimension(s)"),
        (&[10, 5, 4], &[-5, 0], false, "invalid value -5"),
        (&[10, 5, 4], &[-4, 2], false, "-4 at position 0 must be followed"),
        (&[10, 5, 4], &[-3, -3], false, "-3 at position 1"),
        (&[10, 5, 4], &[-4, -1, -1, 0, 0], false, "cannot both be -1"),
        (&[10, 5, 4], &[-4, 3, -1, 0, 0], false, "do not divide input dimension 10"),
        (&[10, 5, 4], &[7, -1], false, "cannot infer the -1 dimension"),
        (&[10, 5, 4], &[3, 7], false, "holds 21 element(s) but the input holds 200"),
        (&[2, 3, 4], &[6, -2], false, "holds 72 element(s) but the input holds 24"),
        (&[10, 5, 4], &[-3, -2], true, "-3 at position 0"),
        (&[0, 5, 4], &[0, -1], false, "cannot infer the -1 dimension"),
    ];
    for (src, spec, rev, needle) in cases {
        let e = infer_reshape(src, spec, *rev).unwrap_err();
        assert!(e.message().contains("operator Reshape") && e.message().contains(needle), "{src:?} {spec:?}: {}", e.message());
        check_err("reshape", &[arange(src, 0.0)], &[("shape", t(spec)), ("reverse", Value::Bool(*rev))], &[needle, &fmt_shape(src)]);
    }
    check_err("Reshape", &[arange(&[2, 3], 0.0)], &[], &["target shape must be given", "(2, 3)"]);
}

#[test]
fn reshape_legacy_target_shape() {
    let data: Vec<f32> = (0..200).map(|i| i as f32).collect();
    let x = || arange(&[10, 5, 4], 0.0);
    check("Reshape", &[x()], &[("target_shape", t(&[0, 10]))], &[20, 10], &data);
    check("Reshape", &[x()], &[("target_shape", t(&[5, 0])), ("keep_highest", Value::Bool(true))], &[10, 20], &data);
    check("Reshape", &[x()], &[("target_shape", t(&[20, 10]))], &[20, 10], &data);
    check_err("Reshape", &[x()], &[("target_shape", t(&[20, 0, 0]))], &["cannot reshape array of shape (10, 5, 4)"]);
    check_err("Reshape", &[x()], &[("target_shape", t(&[3, 0]))], &["cannot infer the 0 dimension"]);
}

#[test]
fn shape_op_errors() {
    let x = |s: &[usize]| arange(s, 0.0);
    let i = |v: i64| Value::Int(v);
    check_err("transpose", &[x(&[2, 3, 4])], &[("axes", t(&[0, 1]))], &["has 2 entries", "(2, 3, 4)"]);
    check_err("transpose", &[x(&[2, 3, 4])], &[("axes", t(&[0, 0, 1]))], &["repeats axis 0"]);
    check_err("transpose", &[x(&[2, 3, 4])], &[("axes", t(&[0, 1, 3]))], &["entry 3 is out of range"]);
    check_err("transpose", &[x(&[2, 3, 4])], &[("axes", t(&[-1, 0, 1]))], &["entry -1 is out of range"]);
    check_err("SwapAxis", &[x(&[2, 3, 4])], &[("dim1", i(3))], &["dim1=3 is out of bounds", "(2, 3, 4)"]);
    check_err("swapaxes", &[x(&[2, 3, 4])], &[("dim2", i(-4))], &["dim2=-4 is out of bounds"]);
    check_err("expand_dims", &[x(&[2, 3])], &[("axis", i(3))], &["axis=3 is out of range", "[-3, 2]"]);
    check_err("expand_dims", &[x(&[2, 3])], &[("axis", i(-4))], &["axis=-4"]);
    check_err("squeeze", &[x(&[1, 2, 1])], &[("axis", i(1))], &["cannot squeeze axis 1", "size is 2"]);
    check_err("squeeze", &[x(&[1, 2, 1])], &[("axis", t(&[0, 0]))], &["duplicate value 0"]);
    check_err("squeeze", &[x(&[1, 2, 1])], &[("axis", i(3))], &["axis=3 is out of bounds"]);
    check_err("Flatten", &[x(&[])], &[], &["0-d"]);
    let two = |a: &[usize], b: &[usize]| vec![x(a), arange(b, 100.0)];
    check_err("Concat", &two(&[2, 3], &[3, 1]), &[("num_args", i(2))], &["shape mismatch", "(2, 3)", "(3, 1)", "dim=1"]);
    check_err("concat", &two(&[2, 3], &[2, 1, 1]), &[("num_args", i(2))], &["(2, 1, 1)"]);
    check_err("concat", &two(&[2, 3], &[2, 1]), &[("num_args", i(2)), ("dim", i(2))], &["dim=2 is out of range"]);
    let i32s = NDArray::from_vec(&[2, 1], &[1i32, 2], Context::cpu(0)).unwrap();
    check_err("concat", &[x(&[2, 3]), i32s], &[("num_args", i(2))], &["dtype mismatch", "float32", "int32"]);
    check_err("stack", &two(&[2, 3], &[3, 2]), &[("num_args", i(2))], &["shape mismatch", "(2, 3)", "(3, 2)"]);
    check_err("stack", &two(&[2, 3], &[2, 3]), &[("num_args", i(2)), ("axis", i(3))], &["axis=3 is out of range"]);
    check_err("stack", &two(&[2, 3], &[2, 3]), &[("num_args", i(2)), ("axis", i(-4))], &["axis=-4 is out of range"]);
    check_err("split", &[x(&[2, 5])], &[("num_outputs", i(3))], &["does not divide 5", "(2, 5)"]);
    check_err("split", &[x(&[2, 6])], &[("num_outputs", i(3)), ("squeeze_axis", Value::Bool(true))], &["squeeze_axis", "size 6"]);
    check_err("SliceChannel", &[x(&[2, 6])], &[("num_outputs", i(0))], &["num_outputs must be at least 1"]);
    check_err("split", &[x(&[2, 6])], &[("num_outputs", i(2)), ("axis", i(2))], &["axis=2 is out of bounds"]);
    let sl = |b: &[i64], e: &[i64], s: &[i64]| vec![("begin", t(b)), ("end", t(e)), ("step", t(s))];
    check_err("slice", &[x(&[5])], &sl(&[1], &[3], &[0]), &["step[0] cannot be 0"]);
    check_err("slice", &[x(&[5])], &sl(&[1, 1], &[3, 3], &[]), &["has only 1", "(5,)"]);
    check_err("slice", &[x(&[5, 3])], &sl(&[1, 1], &[3], &[]), &["must have the same length"]);
    check_err("slice", &[x(&[5, 3])], &sl(&[1, 1], &[3, 3], &[2]), &["step (2,) and begin (1, 1)"]);
    check_err("crop", &[x(&[])], &sl(&[], &[], &[]), &["0-d"]);
    let sa = |ax: i64, b: i64, e: Value| vec![("axis", i(ax)), ("begin", i(b)), ("end", e)];
    check_err("slice_axis", &[x(&[3, 4])], &sa(1, 3, i(1)), &["begin must come before end"]);
    check_err("slice_axis", &[x(&[3, 4])], &sa(1, 2, i(2)), &["begin must come before end"]);
    check_err("slice_axis", &[x(&[3, 4])], &sa(1, 1, i(7)), &["end=7 is out of range", "size 4"]);
    check_err("slice_axis", &[x(&[3, 4])], &sa(1, -7, Value::None), &["begin=-7 is out of range"]);
    check_err("slice_axis", &[x(&[3, 4])], &sa(2, 1, i(2)), &["axis=2 is out of bounds"]);
    check_err("tile", &[x(&[2, 3])], &[("reps", t(&[0, 2]))], &["positive", "got 0"]);
    check_err("tile", &[x(&[2, 3])], &[("reps", t(&[-1, 2]))], &["positive", "got -1"]);
    check_err("repeat", &[x(&[2, 3])], &[("repeats", i(-1))], &["negative"]);
    check_err("repeat", &[x(&[2, 3])], &[("repeats", i(2)), ("axis", i(2))], &["axis=2 is out of bounds"]);
    check_err("reverse", &[x(&[2, 3])], &[("axis", t(&[2]))], &["holds 2, out of range [0, 2)"]);
    check_err("flip", &[x(&[2, 3])], &[("axis", t(&[-1]))], &["holds -1"]);
    check_err("broadcast_to", &[x(&[2, 1])], &[("shape", t(&[3, 3]))], &["(2, 1) cannot be broadcast to shape (3, 3)"]);
    check_err("broadcast_to", &[x(&[2, 1])], &[("shape", t(&[4, 2, 3]))], &["same number of dimensions"]);
    let bax = |a: &[i64], s: &[i64]| vec![("axis", t(a)), ("size", t(s))];
    check_err("broadcast_axis", &[x(&[1, 3, 1])], &bax(&[1], &[4]), &["axis 1 must have size 1", "size 3"]);
    check_err("broadcast_axes", &[x(&[1, 3, 1])], &bax(&[0, 2], &[2]), &["same length"]);
    check_err("broadcast_axis", &[x(&[1, 3, 1])], &bax(&[3], &[2]), &["axis 3 is out of range"]);
    check_err("broadcast_axis", &[x(&[1, 3, 1])], &bax(&[-1], &[2]), &["axis -1 is out of range"]);
    check_err("broadcast_axis", &[x(&[1, 3, 1])], &bax(&[0], &[-2]), &["size -2"]);
    check_err("broadcast_like", &two(&[2, 3], &[4, 3]), &[], &["(2, 3) cannot be broadcast to shape (4, 3)"]);
    check_err("broadcast_like", &two(&[1, 3], &[4, 2, 3]), &[], &["same number of dimensions"]);
    let bl = |l: &[i64], r: &[i64]| vec![("lhs_axes", t(l)), ("rhs_axes", t(r))];
    check_err("broadcast_like", &two(&[2, 3], &[5, 6]), &bl(&[0], &[0]), &["lhs axis 0 has size 2"]);
    check_err("broadcast_like", &two(&[1, 3], &[5, 6]), &bl(&[0], &[0, 1]), &["same length"]);
    check_err("broadcast_like", &two(&[1, 3], &[5, 6]), &bl(&[2], &[0]), &["lhs_axes entry=2 is out of bounds"]);
    check_err("broadcast_like", &two(&[1, 3], &[5, 6]), &bl(&[], &[]), &["empty"]);
    let asg = |b: &[i64], e: &[i64]| vec![("begin", t(b)), ("end", t(e))];
    check_err("_slice_assign", &two(&[3, 4], &[2, 3]), &asg(&[0, 1], &[2, 3]), &["rhs has shape (2, 3)", "has shape (2, 2)"]);
    let i32s = NDArray::from_vec(&[1, 4], &[1i32, 2, 3, 4], Context::cpu(0)).unwrap();
    check_err("_slice_assign", &[x(&[3, 4]), i32s], &asg(&[1], &[2]), &["dtype mismatch"]);
    check_err("_slice_assign_scalar", &[x(&[3, 4])], &[("begin", t(&[0])), ("end", t(&[1])), ("step", t(&[0]))], &["step[0] cannot be 0"]);
}

#[test]
fn other_dtypes() {
    let c = Context::cpu(0);
    let a = NDArray::from_vec(&[2, 3], &[1i64, 2, 3, 4, 5, 6], c).unwrap();
    let o = call1("transpose", &[a], &[]).unwrap();
    assert_eq!(o.to_vec::<i64>().unwrap(), [1, 4, 2, 5, 3, 6]);
    let h: Vec<half::f16> = (0..6).map(|v| half::f16::from_f32(v as f32 + 0.5)).collect();
    let a = NDArray::from_vec(&[2, 3], &h, c).unwrap();
    let o = call1("flip", &[a], &[("axis", t(&[1]))]).unwrap();
    let got: Vec<f32> = o.to_vec::<half::f16>().unwrap().iter().map(|v| v.to_f32()).collect();
    assert_eq!(got, [2.5, 1.5, 0.5, 5.5, 4.5, 3.5]);
    let a = NDArray::from_vec(&[2, 2], &[1i8, -2, 3, -4], c).unwrap();
    let b = NDArray::from_vec(&[2, 1], &[9i8, 8], c).unwrap();
    let o = call1("concat", &[a, b], &[("num_args", Value::Int(2))]).unwrap();
    assert_eq!(o.to_vec::<i8>().unwrap(), [1, -2, 9, 3, -4, 8]);
    let a = NDArray::from_vec(&[2, 3], &[1.5f64, 2., 3., 4., 5., 6.], c).unwrap();
    let o = call1("tile", &[a], &[("reps", t(&[1, 2]))]).unwrap();
    assert_eq!(o.to_vec::<f64>().unwrap(), [1.5, 2., 3., 1.5, 2., 3., 4., 5., 6., 4., 5., 6.]);
    // int32 truncates the scalar like MXNet (-2.7 -> -2); bool stores 0/1.
    let a = NDArray::from_vec(&[2, 3], &[0i32, 1, 2, 3, 4, 5], c).unwrap();
    let p = [("scalar", Value::Float(-2.7)), ("begin", t(&[N, 1])), ("end", t(&[N, N]))];
    let o = call1("_slice_assign_scalar", &[a], &p).unwrap();
    assert_eq!(o.to_vec::<i32>().unwrap(), [0, -2, -2, 3, -2, -2]);
    let z = NDArray::from_vec(&[4], &[0u8, 0, 0, 0], c).unwrap();
    let b = call1("Cast", &[z], &[("dtype", Value::DType(DType::Bool))]).unwrap();
    let p = [("scalar", Value::Float(2.0)), ("begin", t(&[1])), ("end", t(&[3]))];
    let o = call1("_slice_assign_scalar", &[b], &p).unwrap();
    assert_eq!(o.dtype(), DType::Bool);
    assert_eq!(o.to_vec::<u8>().unwrap(), [0, 1, 1, 0]);
}

#[test]
fn slice_assign_in_place() {
    let op = lookup("_slice_assign").unwrap();
    let params = op.parse(vec![("begin".into(), t(&[0, 1])), ("end".into(), t(&[2, 3]))]).unwrap();
    let lhs = arange(&[3, 4], 0.0);
    let res = invoke(op, &[lhs.clone(), arange(&[2, 2], 100.0)], params, Some(std::slice::from_ref(&lhs)), None).unwrap();
    assert!(res[0].same_chunk(&lhs));
    assert_eq!(lhs.to_vec::<f32>().unwrap(), [0., 100., 101., 3., 4., 102., 103., 7., 8., 9., 10., 11.]);

    // rhs is a view of lhs itself: NumPy semantics (x[:, 0:2] = x[0:2].reshape(4, 2)).
    let x = arange(&[4, 4], 0.0);
    let rhs = x.slice_view(0, 2).unwrap().reshape_view(&[4, 2]).unwrap();
    let params = op.parse(vec![("begin".into(), t(&[N, 0])), ("end".into(), t(&[N, 2]))]).unwrap();
    invoke(op, &[x.clone(), rhs], params, Some(std::slice::from_ref(&x)), None).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), [0., 1., 2., 3., 2., 3., 6., 7., 4., 5., 10., 11., 6., 7., 14., 15.]);

    let op = lookup("_slice_assign_scalar").unwrap();
    let params = op.parse(vec![("scalar".into(), Value::Float(9.0)), ("begin".into(), t(&[1])), ("end".into(), t(&[2]))]).unwrap();
    let x = arange(&[3, 2], 0.0);
    invoke(op, std::slice::from_ref(&x), params, Some(std::slice::from_ref(&x)), None).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), [0., 1., 9., 9., 4., 5.]);

    // Reshape into a view of its own input is a no-op copy.
    let op = lookup("Reshape").unwrap();
    let x = arange(&[2, 3], 0.0);
    let v = x.reshape_view(&[3, 2]).unwrap();
    let params = op.parse(vec![("shape".into(), t(&[3, -1]))]).unwrap();
    invoke(op, std::slice::from_ref(&x), params, Some(std::slice::from_ref(&v)), None).unwrap();
    assert_eq!(v.to_vec::<f32>().unwrap(), [0., 1., 2., 3., 4., 5.]);
}

#[test]
fn zero_size_and_0d() {
    check("slice", &[arange(&[3, 4], 0.0)], &[("begin", t(&[N, 3])), ("end", t(&[N, 1]))], &[3, 0], &[]);
    check("concat", &[arange(&[2, 0], 0.0), arange(&[2, 2], 100.0)], &[("num_args", Value::Int(2))], &[2, 2], &[100., 101., 102., 103.]);
    check("transpose", &[arange(&[0, 3], 0.0)], &[], &[3, 0], &[]);
    check("expand_dims", &[arange(&[], 5.0)], &[("axis", Value::Int(0))], &[1], &[5.]);
    check("transpose", &[arange(&[], 5.0)], &[], &[], &[5.]);
    check("stack", &[arange(&[], 5.0), arange(&[], 7.0)], &[("num_args", Value::Int(2))], &[2], &[5., 7.]);
    check_multi(
        "split",
        &[arange(&[3], 0.0)],
        &[("num_outputs", Value::Int(3)), ("axis", Value::Int(0)), ("squeeze_axis", Value::Bool(true))],
        &[(&[], &[0.]), (&[], &[1.]), (&[], &[2.])],
    );
}

#[test]
fn names_and_aliases() {
    for (alias, name) in [
        ("reshape", "Reshape"),
        ("flatten", "Flatten"),
        ("concat", "Concat"),
        ("split", "SliceChannel"),
        ("crop", "slice"),
        ("flip", "reverse"),
        ("swapaxes", "SwapAxis"),
        ("broadcast_axes", "broadcast_axis"),
    ] {
        assert_eq!(lookup(alias).unwrap().name, name);
    }
    let names: Vec<&str> = lookup("Reshape").unwrap().params.iter().map(|p| p.name).collect();
    assert_eq!(names, ["shape", "reverse", "target_shape", "keep_highest"]);
    let names: Vec<&str> = lookup("_slice_assign_scalar").unwrap().params.iter().map(|p| p.name).collect();
    assert_eq!(names, ["scalar", "begin", "end", "step"]);
}
