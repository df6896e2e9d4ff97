//! Times LeNet's layers on MNIST-sized batches, forward and backward, through the
//! registry ops end to end (engine, allocation from the pool):
//!
//! conv1 (64,1,28,28) k5 → 20, pool1 max 2×2/2, conv2 (64,20,12,12) k5 → 50,
//! pool2 max 2×2/2, fc1 800 → 500, fc2 500 → 10.
//!
//! `cargo run --release --example conv_bench -p oxnet-core [batch] [reps]`
//!
//! Each layer runs `reps` times after a warm-up; the report gives the best and the
//! median time and the GFLOP/s of the median (multiply-adds count 2). Reference
//! targets on 2 cores (PyTorch with oneDNN): conv1 forward 0.33 ms, conv2 forward
//! 1.34 ms.

use oxnet_core::op::{invoke, lookup, Params, Value};
use oxnet_core::{Context, NDArray};
use std::time::Instant;

fn arr(shape: &[usize], seed: u32) -> NDArray {
    let n: usize = shape.iter().product();
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(1);
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s % 2000) as f32 / 1000.0 - 1.0
        })
        .collect();
    NDArray::from_vec(shape, &v, Context::default()).unwrap()
}

fn params(op: &str, kv: &[(&str, Value)]) -> Params {
    lookup(op).unwrap().parse(kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()).unwrap()
}

/// (best, median) seconds of `reps` runs of `f`, each waited for.
fn time<F: FnMut() -> Vec<NDArray>>(reps: usize, mut f: F) -> (f64, f64) {
    for _ in 0..3 {
        for o in f() {
            o.wait_to_read().unwrap();
        }
    }
    let mut v: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            for o in f() {
                o.wait_to_read().unwrap();
            }
            t.elapsed().as_secs_f64()
        })
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (v[0], v[v.len() / 2])
}

fn report(name: &str, flops: f64, (best, med): (f64, f64)) {
    let gf = if flops > 0.0 { format!("{:7.1} GFLOP/s", flops / med / 1e9) } else { String::new() };
    println!("{name:<16} best {:8.3} ms   median {:8.3} ms   {gf}", best * 1e3, med * 1e3);
}

fn tuple(v: &[i64]) -> Value {
    Value::Tuple(v.to_vec())
}

fn main() {
    let batch: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(64);
    let reps: usize = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(30);
    println!("LeNet layers, batch {batch}, float32, compute threads = {}, {reps} runs each", oxnet_core::engine::threads());

    // (name, data shape, filters, out spatial)
    for (name, c, hw, f) in [("conv1", 1usize, 28usize, 20usize), ("conv2", 20, 12, 50)] {
        let x = arr(&[batch, c, hw, hw], 1);
        let w = arr(&[f, c, 5, 5], 2);
        let b = arr(&[f], 3);
        let p = params("Convolution", &[("kernel", tuple(&[5, 5])), ("num_filter", Value::Int(f as i64))]);
        let o = hw - 4;
        let flops = 2.0 * (batch * f * o * o * c * 25) as f64;
        let op = lookup("Convolution").unwrap();
        let ins = [x.clone(), w.clone(), b.clone()];
        report(&format!("{name} fwd"), flops, time(reps, || invoke(op, &ins, p.clone(), None, None).unwrap()));
        let dy = arr(&[batch, f, o, o], 4);
        let bop = lookup("_backward_Convolution").unwrap();
        let bins = [dy, x, w];
        report(&format!("{name} bwd"), 2.0 * flops, time(reps, || invoke(bop, &bins, p.clone(), None, None).unwrap()));
    }

    for (name, c, hw) in [("pool1", 20usize, 24usize), ("pool2", 50, 8)] {
        let x = arr(&[batch, c, hw, hw], 5);
        let p = params("Pooling", &[("kernel", tuple(&[2, 2])), ("stride", tuple(&[2, 2])), ("pool_type", Value::Str("max".into()))]);
        let op = lookup("Pooling").unwrap();
        let ins = [x.clone()];
        report(&format!("{name} fwd"), 0.0, time(reps, || invoke(op, &ins, p.clone(), None, None).unwrap()));
        let y = invoke(op, &ins, p.clone(), None, None).unwrap().remove(0);
        let dy = arr(&[batch, c, hw / 2, hw / 2], 6);
        let bop = lookup("_backward_Pooling").unwrap();
        let bins = [dy, x, y];
        report(&format!("{name} bwd"), 0.0, time(reps, || invoke(bop, &bins, p.clone(), None, None).unwrap()));
    }

    for (name, k, h) in [("fc1", 800usize, 500usize), ("fc2", 500, 10)] {
        let x = arr(&[batch, k], 7);
        let w = arr(&[h, k], 8);
        let b = arr(&[h], 9);
        let p = params("FullyConnected", &[("num_hidden", Value::Int(h as i64))]);
        let flops = 2.0 * (batch * k * h) as f64;
        let op = lookup("FullyConnected").unwrap();
        let ins = [x.clone(), w.clone(), b];
        report(&format!("{name} fwd"), flops, time(reps, || invoke(op, &ins, p.clone(), None, None).unwrap()));
        let dy = arr(&[batch, h], 10);
        let bop = lookup("_backward_FullyConnected").unwrap();
        let bins = [dy, x, w];
        report(&format!("{name} bwd"), 2.0 * flops, time(reps, || invoke(bop, &bins, p.clone(), None, None).unwrap()));
    }
}
