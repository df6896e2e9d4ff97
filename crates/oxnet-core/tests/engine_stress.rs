//! Engine stress from Rust: random programs of thousands of ops over shared arrays,
//! pushed from several threads, equal a sequential replay of the push order.

use oxnet_core::op::{call1, invoke, lookup, Params, Value};
use oxnet_core::{Context, NDArray};
use std::sync::{Arc, Mutex};

const N: usize = 8;
const LEN: usize = 20_000; // large enough that ops run asynchronously on the pool

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

#[derive(Clone, Copy, Debug)]
enum Step {
    /// dst = dst * k + src
    Axpy(usize, usize, f64),
    /// dst = src1 + src2 (new array in the slot)
    New(usize, usize, usize),
    /// dst[..] = src (copy into)
    Copy(usize, usize),
}

fn run(arrs: &mut [NDArray], s: Step) {
    match s {
        Step::Axpy(d, src, k) => {
            let scaled = call1("_mul_scalar", &[arrs[d].clone()], &[("scalar", Value::Float(k))]).unwrap();
            let out = arrs[d].clone();
            invoke(lookup("elemwise_add").unwrap(), &[scaled, arrs[src].clone()], Params::default(), Some(&[out]), None).unwrap();
        }
        Step::New(d, a, b) => {
            arrs[d] = call1("elemwise_add", &[arrs[a].clone(), arrs[b].clone()], &[]).unwrap();
            arrs[d] = call1("_mul_scalar", &[arrs[d].clone()], &[("scalar", Value::Float(0.5))]).unwrap();
        }
        Step::Copy(d, src) => {
            if d != src {
                let out = arrs[d].clone();
                invoke(lookup("_copyto").unwrap(), &[arrs[src].clone()], Params::default(), Some(&[out]), None).unwrap();
            }
        }
    }
}

fn replay(vals: &mut [Vec<f64>], s: Step) {
    match s {
        Step::Axpy(d, src, k) => {
            for i in 0..LEN {
                vals[d][i] = vals[d][i] * k + vals[src][i];
            }
        }
        Step::New(d, a, b) => {
            vals[d] = (0..LEN).map(|i| (vals[a][i] + vals[b][i]) * 0.5).collect();
        }
        Step::Copy(d, src) => vals[d] = vals[src].clone(),
    }
}

fn random_step(r: &mut Lcg) -> Step {
    let (d, a, b) = ((r.next() % N as u64) as usize, (r.next() % N as u64) as usize, (r.next() % N as u64) as usize);
    match r.next() % 3 {
        0 => Step::Axpy(d, a, (r.next() % 100) as f64 / 100.0 - 0.5),
        1 => Step::New(d, a, b),
        _ => Step::Copy(d, a),
    }
}

#[test]
fn threads_on_shared_arrays_equal_replay() {
    let ctx = Context::cpu(0);
    let init: Vec<Vec<f64>> = (0..N).map(|k| (0..LEN).map(|i| ((i * 7 + k * 13) % 17) as f64 / 17.0).collect()).collect();
    let arrs: Vec<NDArray> = init.iter().map(|v| NDArray::from_vec(&[LEN], v, ctx).unwrap()).collect();
    let shared = Arc::new(Mutex::new((arrs, Vec::<Step>::new())));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let shared = shared.clone();
            std::thread::spawn(move || {
                let mut r = Lcg(t as u64 + 1);
                for _ in 0..600 {
                    let s = random_step(&mut r);
                    let mut g = shared.lock().unwrap();
                    run(&mut g.0, s);
                    g.1.push(s);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let g = shared.lock().unwrap();
    let mut vals = init.clone();
    for s in &g.1 {
        replay(&mut vals, *s);
    }
    for (a, want) in g.0.iter().zip(&vals) {
        let got = a.to_vec::<f64>().unwrap();
        for (x, y) in got.iter().zip(want) {
            assert!((x - y).abs() <= 1e-9 * (1.0 + y.abs()), "{x} vs {y}");
        }
    }
    oxnet_core::engine::wait_all().unwrap();
}
