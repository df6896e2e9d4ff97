//! NDArray and the engine from plain Rust, no Python: `cargo run --example ndarray_basics`.

use oxnet_core::op::{call1, Value};
use oxnet_core::{Context, NDArray, Result};

fn main() -> Result<()> {
    let ctx = Context::cpu(0);
    let a = NDArray::from_vec(&[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], ctx)?;
    let b = call1("_ones", &[], &[("shape", Value::Tuple(vec![2, 3]))])?;
    // Each call returns at once; the engine orders the work by the arrays it touches.
    let c = call1("broadcast_add", &[a.clone(), b], &[])?;
    let d = call1("_mul_scalar", &[c], &[("scalar", Value::Float(10.0))])?;
    let e = call1("exp", &[call1("_mul_scalar", &[a], &[("scalar", Value::Float(0.0))])?], &[])?;
    println!("(a + 1) * 10 = {:?}", d.to_vec::<f32>()?);
    println!("exp(0 * a)   = {:?}", e.to_vec::<f32>()?);
    oxnet_core::engine::wait_all()?;
    Ok(())
}
