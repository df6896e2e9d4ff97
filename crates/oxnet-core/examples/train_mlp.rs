//! A small MLP trained from Rust with autograd and the registry's SGD update, no
//! Python: `cargo run --release --example train_mlp [-- data/mnist-subset]`.
//!
//! Reads MNIST's IDX files (gzip is not read here: pass a folder with the
//! uncompressed `train-images-idx3-ubyte` / `train-labels-idx1-ubyte`), or, without
//! a folder, learns a synthetic 2-class problem (points inside/outside a circle).

use oxnet_core::nd::{self, Op};
use oxnet_core::{Context, Error, NDArray, Result};

struct Dense {
    w: NDArray,
    b: NDArray,
}

impl Dense {
    fn new(n_in: usize, n_out: usize, ctx: Context) -> Result<Dense> {
        let scale = (2.0 / n_in as f64).sqrt();
        let mut w = nd::random_normal(0.0, scale, &[n_out, n_in], ctx)?;
        let mut b = nd::zeros(&[n_out], ctx)?;
        w.attach_grad()?;
        b.attach_grad()?;
        Ok(Dense { w, b })
    }
    fn forward(&self, x: &NDArray) -> Result<NDArray> {
        Op::new("FullyConnected")?.inputs(&[x, &self.w, &self.b]).attr("num_hidden", self.w.shape()[0]).call1()
    }
    fn step(&self, lr: f64) -> Result<()> {
        for p in [&self.w, &self.b] {
            let g = p.grad().ok_or_else(|| Error::new("no gradient"))?;
            Op::new("sgd_update")?.inputs(&[p, &g]).attr("lr", lr).attr("wd", 1e-4).out(&[p]).call()?;
        }
        Ok(())
    }
}

fn read_idx(path: &std::path::Path) -> Result<(Vec<usize>, Vec<u8>)> {
    let b = std::fs::read(path).map_err(|e| Error::new(format!("cannot read {}: {e}", path.display())))?;
    if b.len() < 4 {
        return Err(Error::new(format!("{}: not an IDX file", path.display())));
    }
    let nd = b[3] as usize;
    let dims: Vec<usize> = (0..nd).map(|i| u32::from_be_bytes(b[4 + 4 * i..8 + 4 * i].try_into().unwrap()) as usize).collect();
    Ok((dims, b[4 + 4 * nd..].to_vec()))
}

/// (features n x d, labels n, classes).
fn dataset(dir: Option<&str>) -> Result<(Vec<f32>, Vec<f32>, usize, usize)> {
    match dir {
        Some(d) => {
            let d = std::path::Path::new(d);
            let (dims, px) = read_idx(&d.join("train-images-idx3-ubyte"))?;
            let (_, lb) = read_idx(&d.join("train-labels-idx1-ubyte"))?;
            let feat = dims[1..].iter().product();
            Ok((px.iter().map(|&p| p as f32 / 255.0).collect(), lb.iter().map(|&l| l as f32).collect(), feat, 10))
        }
        None => {
            let mut rng = 12345u64;
            let mut next = || {
                rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((rng >> 33) as f32 / (1u64 << 31) as f32) * 2.0 - 1.0
            };
            let (mut x, mut y) = (Vec::new(), Vec::new());
            for _ in 0..2048 {
                let (a, b) = (next(), next());
                x.extend([a, b]);
                y.push(if a * a + b * b < 0.5 { 1.0 } else { 0.0 });
            }
            Ok((x, y, 2, 2))
        }
    }
}

fn main() -> Result<()> {
    let dir = std::env::args().nth(1);
    let (x, y, d, classes) = dataset(dir.as_deref())?;
    let n = y.len();
    let ctx = Context::cpu(0);
    let (l1, l2) = (Dense::new(d, 64, ctx)?, Dense::new(64, classes, ctx)?);
    let batch = 64;
    for epoch in 0..10 {
        let (mut correct, mut loss_sum) = (0usize, 0f64);
        for start in (0..n - batch + 1).step_by(batch) {
            let xb = nd::array(&x[start * d..(start + batch) * d], &[batch, d], ctx)?;
            let yb = nd::array(&y[start..start + batch], &[batch], ctx)?;
            let (out, loss) = nd::record(|| {
                let out = l2.forward(&l1.forward(&xb)?.relu()?)?;
                let picked = Op::new("pick")?.inputs(&[&out.log_softmax(-1)?, &yb]).attr("axis", -1).call1()?;
                Ok((out, (-&picked.mean()?)?))
            })?;
            loss.backward()?;
            l1.step(0.1)?;
            l2.step(0.1)?;
            loss_sum += loss.scalar()?;
            let pred = out.argmax(1)?.to_vec::<f32>()?;
            correct += pred.iter().zip(&y[start..start + batch]).filter(|(p, t)| p == t).count();
        }
        let steps = n / batch;
        println!("epoch {epoch}: loss {:.4}  train accuracy {:.3}", loss_sum / steps as f64, correct as f64 / (steps * batch) as f64);
    }
    oxnet_core::engine::wait_all()
}
