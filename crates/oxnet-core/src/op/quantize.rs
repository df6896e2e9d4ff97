//! Quantization ops of MXNet's contrib namespace: `_contrib_quantize`,
//! `_contrib_quantize_v2` and `_contrib_dequantize`.
//!
//! As in MXNet 1.9.1: int8 quantization is symmetric (the real range is
//! `max(|min|, |max|)`, mapped onto `[-127, 127]`, values rounded half away from
//! zero); uint8 quantization maps `[min, max]` onto `[0, 255]` (rounded half up).
//! `quantize` and `quantize_v2` output the quantized data and the float32 range it
//! stands for (`(1,)` each); `dequantize` maps back. None of them has a gradient
//! (MXNet registers none).

use super::util::{read_f64, write_f64};
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::{fmt_shape, Shape};

type Out = Result<Vec<(Shape, DType)>>;

const QUANTIZE_PARAMS: &[ParamSpec] = &[ParamSpec::choice("out_type", &["int8", "uint8"], Some("uint8"), "Output data type.")];

const QUANTIZE_V2_PARAMS: &[ParamSpec] = &[
    ParamSpec::choice(
        "out_type",
        &["auto", "int8", "uint8"],
        Some("int8"),
        "Output data type. `auto` can be specified to automatically determine output type according to min_calib_range.",
    ),
    ParamSpec::new(
        "min_calib_range",
        PType::OptFloat,
        Some("None"),
        "The minimum scalar value in the form of float32. If present, it will be used to quantize the fp32 data into int8 or uint8.",
    ),
    ParamSpec::new(
        "max_calib_range",
        PType::OptFloat,
        Some("None"),
        "The maximum scalar value in the form of float32. If present, it will be used to quantize the fp32 data into int8 or uint8.",
    ),
];

const DEQUANTIZE_PARAMS: &[ParamSpec] = &[ParamSpec::choice("out_type", &["float32"], Some("float32"), "Output data type.")];

fn range_shape(a: &InferArgs, i: usize, what: &str) -> Result<()> {
    let s = a.shapes[i];
    if s.iter().product::<usize>() != 1 {
        return Err(a.err(format!("{what} must hold one value, got shape {}", fmt_shape(s))));
    }
    if !a.dtypes[i].is_float() {
        return Err(a.err(format!("{what} must be a floating-point array, got {}", a.dtypes[i].name())));
    }
    Ok(())
}

fn out_dtype(name: &str) -> DType {
    if name == "int8" {
        DType::I8
    } else {
        DType::U8
    }
}

fn with_range(data: Shape, d: DType) -> Vec<(Shape, DType)> {
    let one = Shape::from_slice(&[1]);
    vec![(data, d), (one.clone(), DType::F32), (one, DType::F32)]
}

fn quantize_infer(a: &InferArgs) -> Out {
    if a.dtypes[0] != DType::F32 {
        return Err(a.err(format!("data must be float32, got {}", a.dtypes[0].name())));
    }
    range_shape(a, 1, "min_range")?;
    range_shape(a, 2, "max_range")?;
    Ok(with_range(Shape::from_slice(a.shapes[0]), out_dtype(a.params.str("out_type"))))
}

/// `q` from `x` for the real range `[lo, hi]`; returns the range the output
/// stands for.
fn quantize_into(x: &[f64], lo: f64, hi: f64, int8: bool, q: &mut [f64]) -> (f64, f64) {
    if int8 {
        let real = lo.abs().max(hi.abs());
        let scale = if real > 0.0 { 127.0 / real } else { 0.0 };
        for (o, v) in q.iter_mut().zip(x) {
            let m = (v.abs() * scale + 0.5).min(127.0).trunc();
            *o = if *v < 0.0 { -m } else { m };
        }
        (-real, real)
    } else {
        let scale = if hi > lo { 255.0 / (hi - lo) } else { 0.0 };
        for (o, v) in q.iter_mut().zip(x) {
            *o = ((v - lo) * scale + 0.5).clamp(0.0, 255.0).trunc();
        }
        (lo, hi)
    }
}

fn quantize_compute(c: &mut OpCall) -> Result<()> {
    let x = read_f64(&c.inputs[0]);
    let lo = read_f64(&c.inputs[1])[0];
    let hi = read_f64(&c.inputs[2])[0];
    let mut q = vec![0f64; x.len()];
    let (a, b) = quantize_into(&x, lo, hi, c.params.str("out_type") == "int8", &mut q);
    write_f64(&c.outputs[0], &q);
    write_f64(&c.outputs[1], &[a]);
    write_f64(&c.outputs[2], &[b]);
    Ok(())
}

/// `auto` picks uint8 when the calibrated minimum is not negative, else int8
/// (without a calibration range the choice is int8: the data are not known yet).
fn v2_type(p: &Params) -> DType {
    match p.str("out_type") {
        "auto" => match p.opt_float("min_calib_range") {
            Some(m) if m >= 0.0 => DType::U8,
            _ => DType::I8,
        },
        t => out_dtype(t),
    }
}

fn quantize_v2_infer(a: &InferArgs) -> Out {
    let d = a.dtypes[0];
    if d != DType::F32 && d != DType::I8 && d != DType::U8 {
        return Err(a.err(format!("data must be float32, int8 or uint8, got {}", d.name())));
    }
    let p = a.params;
    if p.opt_float("min_calib_range").is_some() != p.opt_float("max_calib_range").is_some() {
        return Err(a.err("min_calib_range and max_calib_range must be given together"));
    }
    let out = if d == DType::F32 { v2_type(p) } else { d };
    Ok(with_range(Shape::from_slice(a.shapes[0]), out))
}

fn quantize_v2_compute(c: &mut OpCall) -> Result<()> {
    let x = read_f64(&c.inputs[0]);
    let p = c.params;
    let in_type = c.inputs[0].dtype;
    let (lo, hi) = match (p.opt_float("min_calib_range"), p.opt_float("max_calib_range")) {
        (Some(a), Some(b)) => (a, b),
        _ => {
            let lo = x.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            if x.is_empty() {
                (0.0, 0.0)
            } else {
                (lo, hi)
            }
        }
    };
    if in_type != DType::F32 {
        // Already quantized: passed through with its type's range.
        write_f64(&c.outputs[0], &x);
        let (a, b) = if in_type == DType::I8 { (-127.0, 127.0) } else { (0.0, 255.0) };
        write_f64(&c.outputs[1], &[a]);
        write_f64(&c.outputs[2], &[b]);
        return Ok(());
    }
    let int8 = c.outputs[0].dtype == DType::I8;
    let mut q = vec![0f64; x.len()];
    let (a, b) = quantize_into(&x, lo, hi, int8, &mut q);
    write_f64(&c.outputs[0], &q);
    write_f64(&c.outputs[1], &[a]);
    write_f64(&c.outputs[2], &[b]);
    Ok(())
}

fn dequantize_infer(a: &InferArgs) -> Out {
    let d = a.dtypes[0];
    if d != DType::I8 && d != DType::U8 && d != DType::I32 {
        return Err(a.err(format!("data must be int8, uint8 or int32, got {}", d.name())));
    }
    range_shape(a, 1, "min_range")?;
    range_shape(a, 2, "max_range")?;
    Ok(vec![(Shape::from_slice(a.shapes[0]), DType::F32)])
}

fn dequantize_compute(c: &mut OpCall) -> Result<()> {
    let q = read_f64(&c.inputs[0]);
    let lo = read_f64(&c.inputs[1])[0];
    let hi = read_f64(&c.inputs[2])[0];
    let out: Vec<f64> = match c.inputs[0].dtype {
        DType::U8 => {
            let s = (hi - lo) / 255.0;
            q.iter().map(|v| v * s + lo).collect()
        }
        DType::I8 | DType::I32 => {
            let limit = if c.inputs[0].dtype == DType::I8 { 127.0 } else { i32::MAX as f64 };
            let s = lo.abs().max(hi.abs()) / limit;
            q.iter().map(|v| v * s).collect()
        }
        d => return Err(Error::op(c.op.name, format!("cannot dequantize {}", d.name()))),
    };
    write_f64(&c.outputs[0], &out);
    Ok(())
}

/// The range inputs are float32 whatever the data's type.
fn range_dtypes(_: &Params, d: &mut [Option<DType>]) {
    for x in d.iter_mut().skip(1) {
        if x.is_none() {
            *x = Some(DType::F32);
        }
    }
}

fn three(_: &Params) -> usize {
    3
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "_contrib_quantize",
            "Quantize a input tensor from float to `out_type`, with user-specified `min_range` and `max_range`. int8 output is symmetric: `out = sign(x) * min(|x| * 127 / max(|min_range|, |max_range|) + 0.5, 127)`; uint8 output is `out = (x - min_range) * 255 / (max_range - min_range) + 0.5`. Also outputs the range the quantized values stand for.",
            Arity::Fixed(&["data", "min_range", "max_range"]),
            QUANTIZE_PARAMS,
            quantize_infer,
            quantize_compute,
        )
        .outputs(three)
        .dtype_fill(range_dtypes),
    );
    r.add(
        OpDef::new(
            "_contrib_quantize_v2",
            "Quantize a input tensor from float to `out_type`, with user-specified `min_calib_range` and `max_calib_range` or the input range collected at runtime. Outputs the quantized data and the range it stands for.",
            Arity::Fixed(&["data"]),
            QUANTIZE_V2_PARAMS,
            quantize_v2_infer,
            quantize_v2_compute,
        )
        .outputs(three),
    );
    r.add(
        OpDef::new(
            "_contrib_dequantize",
            "Dequantize the input tensor into a float tensor. min_range and max_range are scalar floats that specify the range for the output data: int8 input gives `q * max(|min_range|, |max_range|) / 127`, uint8 input `q * (max_range - min_range) / 255 + min_range`.",
            Arity::Fixed(&["data", "min_range", "max_range"]),
            DEQUANTIZE_PARAMS,
            dequantize_infer,
            dequantize_compute,
        )
        .dtype_fill(range_dtypes),
    );
}
