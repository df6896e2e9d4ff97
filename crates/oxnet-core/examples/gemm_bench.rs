//! Times 1024×1024×1024 products: the GEMM kernel directly, and the `dot` op end to
//! end (engine, allocation), in float32 and float64, interleaved with NumPy's
//! `np.dot` (OpenBLAS) run in a `python3` child so both see the same machine load.
//!
//! `cargo run --release -p oxnet-core --example gemm_bench [n] [rounds]`
//!
//! Each round takes the best of 5 runs of every variant; the report gives, per
//! variant, the best and median over rounds and the median of the per-round ratios
//! to NumPy (robust against other processes sharing the cores).

use oxnet_core::kernels::cpu::gemm::gemm;
use oxnet_core::op::call1;
use oxnet_core::{Context, NDArray};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

const REPS: usize = 5;

fn best_of<F: FnMut()>(mut f: F) -> f64 {
    f();
    (0..REPS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

const NUMPY_LOOP: &str = r#"
import sys, time, numpy as np
n = int(sys.argv[1]); reps = int(sys.argv[2])
arrs = {d: (np.random.rand(n, n).astype(d), np.random.rand(n, n).astype(d)) for d in ("float32", "float64")}
for line in sys.stdin:
    a, b = arrs[line.strip()]
    np.dot(a, b)
    best = min((lambda t: (np.dot(a, b), time.perf_counter() - t)[1])(time.perf_counter()) for _ in range(reps))
    print(2 * n**3 / best / 1e9, flush=True)
"#;

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1024);
    let rounds: usize = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(6);
    let flop = 2.0 * (n as f64).powi(3);
    println!("n = {n}, compute threads = {}, rounds = {rounds}", oxnet_core::engine::threads());

    let mut py = Command::new("python3")
        .args(["-c", NUMPY_LOOP, &n.to_string(), &REPS.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok();
    let mut numpy = |dtype: &str| -> Option<f64> {
        let p = py.as_mut()?;
        writeln!(p.stdin.as_mut()?, "{dtype}").ok()?;
        let mut line = String::new();
        BufReader::new(p.stdout.as_mut()?).read_line(&mut line).ok()?;
        line.trim().parse().ok()
    };

    let a32: Vec<f32> = (0..n * n).map(|i| ((i * 7919) % 1000) as f32 / 1000.0).collect();
    let b32: Vec<f32> = (0..n * n).map(|i| ((i * 104729) % 1000) as f32 / 1000.0).collect();
    let a64: Vec<f64> = a32.iter().map(|&x| x as f64).collect();
    let b64: Vec<f64> = b32.iter().map(|&x| x as f64).collect();
    let (mut c32, mut c64) = (vec![0f32; n * n], vec![0f64; n * n]);
    let ctx = Context::cpu(0);
    let (na, nb) = (NDArray::from_vec(&[n, n], &a32, ctx).unwrap(), NDArray::from_vec(&[n, n], &b32, ctx).unwrap());

    let names = ["kernel f32", "dot op f32", "kernel f64"];
    let mut gf: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    let mut ratio: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    let mut np_gf: Vec<Vec<f64>> = vec![Vec::new(); 2];
    for r in 0..rounds {
        let mut line = format!("round {r}:");
        for (v, name) in names.iter().enumerate() {
            let t = match v {
                // SAFETY: the buffers are n×n, row-major, and c does not overlap a or b.
                0 => best_of(|| unsafe { gemm(n, n, n, 1.0f32, a32.as_ptr(), n, false, b32.as_ptr(), n, false, 0.0, c32.as_mut_ptr(), n) }),
                1 => best_of(|| {
                    call1("dot", &[na.clone(), nb.clone()], &[]).unwrap().wait_to_read().unwrap();
                }),
                _ => best_of(|| unsafe { gemm(n, n, n, 1.0f64, a64.as_ptr(), n, false, b64.as_ptr(), n, false, 0.0, c64.as_mut_ptr(), n) }),
            };
            let g = flop / t / 1e9;
            gf[v].push(g);
            line += &format!("  {name} {g:.1}");
            let dt = if v == 2 { "float64" } else { "float32" };
            if let Some(npg) = numpy(dt) {
                np_gf[(v == 2) as usize].push(npg);
                ratio[v].push(g / npg);
                line += &format!(" (numpy {npg:.1})");
            }
        }
        println!("{line}");
    }
    println!("GFLOP/s over {rounds} rounds (best of {REPS} runs each):");
    for (v, name) in names.iter().enumerate() {
        let best = gf[v].iter().cloned().fold(0.0, f64::max);
        let med = median(gf[v].clone());
        if ratio[v].is_empty() {
            println!("  {name:11} best {best:6.1}  median {med:6.1}");
        } else {
            println!("  {name:11} best {best:6.1}  median {med:6.1}  ratio to NumPy: median {:.2}", median(ratio[v].clone()));
        }
    }
    for (i, dt) in ["float32", "float64"].iter().enumerate() {
        if !np_gf[i].is_empty() {
            let best = np_gf[i].iter().cloned().fold(0.0, f64::max);
            println!("  numpy {dt} best {best:6.1}  median {:6.1}", median(np_gf[i].clone()));
        }
    }
}
