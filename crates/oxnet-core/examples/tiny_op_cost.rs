//! Measures the Rust-side cost of one tiny op (no Python): `cargo run --release --example tiny_op_cost`.

use oxnet_core::op::{self, Params};
use oxnet_core::{Context, NDArray};
use std::time::Instant;

fn main() -> oxnet_core::Result<()> {
    let a = NDArray::from_vec(&[2, 2], &[1.0f32; 4], Context::cpu(0))?;
    let b = NDArray::from_vec(&[2, 2], &[1.0f32; 4], Context::cpu(0))?;
    let add = op::lookup("broadcast_add")?;
    for round in 0..3 {
        let n: usize = std::env::var("N").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
        let t = Instant::now();
        for _ in 0..n {
            let c = op::invoke(add, &[a.clone(), b.clone()], Params::default(), None, None)?;
            std::hint::black_box(c);
        }
        oxnet_core::engine::wait_all()?;
        println!("round {round}: {:.1} ns per tiny add", t.elapsed().as_nanos() as f64 / n as f64);
    }
    let t = Instant::now();
    let n = 200_000;
    for _ in 0..n {
        let c = op::invoke(add, &[a.clone(), b.clone()], Params::default(), None, None)?;
        c[0].read_bytes()?;
    }
    println!("add + read: {:.1} ns", t.elapsed().as_nanos() as f64 / n as f64);
    Ok(())
}
