//! Classifies an image with a saved MXNet model, no Python:
//!
//! ```text
//! cargo run --release --example predict -- model-symbol.json model-0000.params image.jpg \
//!     [--size 224] [--synset synset.txt] [--top 5] [--repeat N]
//! ```
//!
//! The image is prepared as gluon's model-zoo networks expect: RGB, shorter side
//! resized to `size * 256 / 224`, centre crop `size x size`, `x / 255` normalised by
//! ImageNet's mean and standard deviation, NCHW. Prints the `top` classes with their
//! softmax probabilities (and names, from a synset file with one class per line).
//! Try it on the MXNet-exported fixture:
//! `cargo run --release --example predict -- data/mxnet-models/mobilenet0.25/model-symbol.json
//! data/mxnet-models/mobilenet0.25/model-0000.params data/mxnet-models/mobilenet0.25/chelsea.jpg`
//! (random weights: the classes mean nothing, the numbers match MXNet's).
//!
//! `--repeat N` times N more forward passes after the first (a warm-up) and prints
//! their median and minimum (`benches/bench_predict.py` uses it).

use oxnet_core::io::{image, imgproc};
use oxnet_core::predict::Predictor;
use oxnet_core::{nd, Context, Error, Result};

const MEAN: [f32; 3] = [0.485, 0.456, 0.406];
const STD: [f32; 3] = [0.229, 0.224, 0.225];

/// Decodes, resizes, crops and normalises `path` into a (1, 3, size, size) batch.
fn prepare(path: &str, size: usize, ctx: Context) -> Result<oxnet_core::NDArray> {
    let bytes = std::fs::read(path).map_err(|e| Error::new(format!("cannot read {path}: {e}")))?;
    let img = image::decode(&bytes, 1, true)?;
    let (h, w) = imgproc::short_side_size(img.h, img.w, size * 256 / 224);
    let resized = imgproc::resize_u8(&img.data, img.h, img.w, img.c, h, w, 1)?;
    let (y0, x0) = ((h - size) / 2, (w - size) / 2);
    let crop = imgproc::crop_u8(&resized, w, img.c, y0, x0, size, size);
    let mut chw = vec![0f32; 3 * size * size];
    for (i, px) in crop.chunks_exact(3).enumerate() {
        for c in 0..3 {
            chw[c * size * size + i] = (px[c] as f32 / 255.0 - MEAN[c]) / STD[c];
        }
    }
    nd::array(&chw, &[1, 3, size, size], ctx)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        || Error::new("usage: predict <model-symbol.json> <model-0000.params> <image> [--size N] [--synset FILE] [--top K] [--repeat N]");
    let mut pos = Vec::new();
    let (mut size, mut synset, mut top, mut repeat) = (224usize, None, 5usize, 0usize);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--size" => size = it.next().and_then(|v| v.parse().ok()).ok_or_else(usage)?,
            "--top" => top = it.next().and_then(|v| v.parse().ok()).ok_or_else(usage)?,
            "--synset" => synset = Some(it.next().ok_or_else(usage)?.clone()),
            "--repeat" => repeat = it.next().and_then(|v| v.parse().ok()).ok_or_else(usage)?,
            _ => pos.push(a.clone()),
        }
    }
    let [sym, params, img] = &pos[..] else { return Err(usage()) };
    let ctx = Context::cpu(0);
    let x = prepare(img, size, ctx)?;
    let mut model = Predictor::load(sym, params, &[("data", &[1, 3, size, size])], ctx)?;
    let t = std::time::Instant::now();
    let out = model.forward(&[("data", &x)])?;
    let probs = out[0].softmax(-1)?.to_vec::<f32>()?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let names: Vec<String> = match synset {
        Some(f) => {
            std::fs::read_to_string(&f).map_err(|e| Error::new(format!("cannot read {f}: {e}")))?.lines().map(String::from).collect()
        }
        None => Vec::new(),
    };
    let mut order: Vec<usize> = (0..probs.len()).collect();
    order.sort_by(|&a, &b| probs[b].total_cmp(&probs[a]));
    println!("{img}: {} classes, forward {ms:.1} ms", probs.len());
    for &k in order.iter().take(top) {
        let name = names.get(k).map(String::as_str).unwrap_or("");
        println!("  class {k:4}  p={:.5}  {name}", probs[k]);
    }
    if repeat > 0 {
        let mut times = Vec::with_capacity(repeat);
        for _ in 0..repeat {
            let t = std::time::Instant::now();
            let out = model.forward(&[("data", &x)])?;
            out[0].wait_to_read()?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        println!("latency over {repeat} runs: median {:.3} ms, min {:.3} ms", times[repeat / 2], times[0]);
    }
    oxnet_core::engine::wait_all()
}
