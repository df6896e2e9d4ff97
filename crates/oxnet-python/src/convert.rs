//! Conversions between Python values and core values: contexts, dtypes, op
//! parameter values.

use crate::err;
use oxnet_core::op::Value;
use oxnet_core::{Context, DType};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PyString, PyTuple};

pub(crate) fn make_ctx(dev_type: i32, dev_id: i32) -> PyResult<Context> {
    let t = oxnet_core::context::DeviceType::from_i32(dev_type)
        .ok_or_else(|| err(oxnet_core::Error::new(format!("unknown device type {dev_type}"))))?;
    Ok(Context { dev_type: t, dev_id })
}

/// Any dtype spelling Python code uses: 'float32', np.float32, np.dtype('f4').
pub(crate) fn dtype_of(obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(s) = obj.cast::<PyString>() {
        return DType::from_name(&s.to_cow()?).map_err(err);
    }
    let np = obj.py().import("numpy")?;
    let dt = np.getattr("dtype")?.call1((obj,))?;
    // MXNet's bfloat16 stand-in: a structured dtype whose one field is 'bfloat16'.
    let names = dt.getattr("names")?;
    if !names.is_none() {
        let names: Vec<String> = names.extract()?;
        if names.len() == 1 && names[0] == "bfloat16" && dt.getattr("itemsize")?.extract::<usize>()? == 2 {
            return Ok(DType::BF16);
        }
    }
    let name: String = dt.getattr("name")?.extract()?;
    DType::from_name(&name).map_err(err)
}

/// A context-like Python object: our Context (device_typeid, device_id) or a string.
pub(crate) fn ctx_of(obj: &Bound<'_, PyAny>) -> PyResult<Context> {
    if let Ok(s) = obj.cast::<PyString>() {
        return oxnet_core::op::params::parse_ctx(&s.to_cow()?)
            .ok_or_else(|| err(oxnet_core::Error::new(format!("invalid context '{s}'"))));
    }
    let t: i32 = obj.getattr("device_typeid")?.extract()?;
    let i: i32 = obj.getattr("device_id")?.extract()?;
    make_ctx(t, i)
}

/// A Python value as an op parameter value.
pub(crate) fn value_of(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    if obj.is_none() {
        return Ok(Value::None);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(Value::Int(obj.extract()?));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Value::Float(obj.extract()?));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::Str(s.to_cow()?.into_owned()));
    }
    if obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<PyList>() {
        let mut v = Vec::new();
        let mut floats = Vec::new();
        let mut all_numbers = true;
        for item in obj.try_iter()? {
            let item = item?;
            if item.is_none() {
                v.push(i64::MIN);
                all_numbers = false;
            } else if let Ok(i) = item.call_method0("__index__").and_then(|x| x.extract::<i64>()) {
                v.push(i);
                floats.push(i as f64);
            } else if let Ok(f) = item.call_method0("__float__").and_then(|x| x.extract::<f64>()) {
                // A tuple of floats (`sizes=(0.5, 0.25)`) goes as its string; a
                // float-tuple parameter parses it, an int-tuple one rejects it.
                floats.push(f);
                v.push(i64::MIN);
            } else {
                return Err(err(oxnet_core::Error::new(format!("expected a tuple of numbers, got an item {}", item))));
            }
        }
        if floats.len() == v.len() && all_numbers && v.contains(&i64::MIN) {
            let items: Vec<String> = floats.iter().map(|f| format!("{f:?}")).collect();
            return Ok(Value::Str(format!("({})", items.join(", "))));
        }
        return Ok(Value::Tuple(v));
    }
    if obj.hasattr("device_typeid")? {
        return Ok(Value::Ctx(ctx_of(obj)?));
    }
    // numpy scalars, numpy dtypes and types
    let np = obj.py().import("numpy")?;
    if obj.is_instance(&np.getattr("integer")?)? || obj.is_instance(&np.getattr("bool_")?)? {
        return Ok(Value::Int(obj.call_method0("__int__")?.extract()?));
    }
    if obj.is_instance(&np.getattr("floating")?)? {
        return Ok(Value::Float(obj.call_method0("__float__")?.extract()?));
    }
    if let Ok(d) = dtype_of(obj) {
        return Ok(Value::DType(d));
    }
    Ok(Value::Str(obj.str()?.to_cow()?.into_owned()))
}
