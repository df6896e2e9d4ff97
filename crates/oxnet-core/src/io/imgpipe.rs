//! The decode-and-augment pipeline behind `mx.io.ImageRecordIter`: one packed
//! image record (`IRHeader` + JPEG/PNG) in, one normalised CHW `f32` sample and its
//! labels out, following MXNet's default augmenter (`image_aug_default.cc`): resize
//! the shorter edge, random scale / aspect ratio, random or centre crop to
//! `data_shape`, mirror, brightness / contrast / saturation / PCA lighting, then
//! `(pixel - mean) / std * scale` in RGB order. A batch runs on a rayon pool of
//! `preprocess_threads` threads with the GIL released by the caller.
//!
//! Randomness: each record gets its own 64-bit seed from the caller, so a batch is
//! reproducible for a given iterator seed whatever the thread count.
//!
//! Owns: the per-record pipeline. Must not touch: file reading (the caller passes
//! record bytes), the engine.

use super::image::decode;
use super::imgproc::{crop_u8, resize_crop_u8, resize_u8};
use super::recordio::unpack_header;
use crate::error::{Error, Result};
use rayon::prelude::*;

/// The augmentation parameters of `ImageRecordIter` (MXNet's names).
#[derive(Clone, Debug)]
pub struct AugParams {
    pub channels: usize,
    pub height: usize,
    pub width: usize,
    pub resize: i64,
    pub rand_crop: bool,
    pub rand_mirror: bool,
    pub mirror: bool,
    pub max_random_scale: f32,
    pub min_random_scale: f32,
    pub max_aspect_ratio: f32,
    pub min_aspect_ratio: f32,
    pub brightness: f32,
    pub contrast: f32,
    pub saturation: f32,
    pub pca_noise: f32,
    pub mean: [f32; 4],
    pub std: [f32; 4],
    pub scale: f32,
    pub inter_method: i32,
    pub label_width: usize,
}

/// A small, fast generator (splitmix64) for per-record randomness.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `[0, 1)`.
    pub fn uniform(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.uniform()
    }
    /// Uniform integer in `[0, n]`.
    pub fn upto(&mut self, n: usize) -> usize {
        (self.next_u64() % (n as u64 + 1)) as usize
    }
    pub fn normal(&mut self) -> f32 {
        let u1 = self.uniform().max(1e-7);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f32::consts::PI * u2).cos()
    }
}

fn interp_for(code: i32, oh: usize, ow: usize, nh: usize, nw: usize, rng: &mut Rng) -> i32 {
    match code {
        9 => {
            if nh > oh && nw > ow {
                2
            } else if nh < oh && nw < ow {
                3
            } else {
                1
            }
        }
        10 => rng.upto(4) as i32,
        c => c,
    }
}

const EIGVAL: [f32; 3] = [55.46, 4.794, 1.148];
const EIGVEC: [[f32; 3]; 3] = [[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]];

/// Decodes and augments one record into `out` (`channels*height*width`, CHW) and
/// `label` (`label_width`). `name` names the record in errors.
pub fn process_record(rec: &[u8], p: &AugParams, seed: u64, out: &mut [f32], label: &mut [f32], name: &str) -> Result<()> {
    let ctx = |e: Error| Error::new(format!("{name}: {}", e.message()));
    let (hdr, off) = unpack_header(rec).map_err(ctx)?;
    if hdr.flag == 0 {
        label.fill(0.0);
        label[0] = hdr.label;
    } else {
        if hdr.labels.len() < p.label_width {
            return Err(Error::new(format!("{name}: the record has {} labels but label_width is {}", hdr.labels.len(), p.label_width)));
        }
        label.copy_from_slice(&hdr.labels[..p.label_width]);
    }
    let mut rng = Rng::new(seed);
    let flag = if p.channels == 1 { 0 } else { 1 };
    let img = decode(&rec[off..], flag, true).map_err(ctx)?;
    let c = img.c;
    let (mut h, mut w, mut data) = (img.h, img.w, img.data);
    // A resize still to apply: (from h x w, interpolation); the last one is fused with
    // the crop (only the cropped window is computed).
    let mut pending: Option<(usize, usize, i32)> = None;
    if p.resize > 0 {
        let (nh, nw) = super::imgproc::short_side_size(h, w, p.resize as usize);
        if (nh, nw) != (h, w) {
            let m = interp_for(p.inter_method, h, w, nh, nw, &mut rng);
            pending = Some((h, w, m));
            h = nh;
            w = nw;
        }
    }
    if p.max_random_scale != 1.0 || p.min_random_scale != 1.0 || p.max_aspect_ratio != 0.0 {
        let s = rng.range(p.min_random_scale, p.max_random_scale);
        let ratio = if p.max_aspect_ratio != 0.0 { rng.range(p.min_aspect_ratio, p.max_aspect_ratio) } else { 1.0 };
        let sq = ratio.max(1e-3).sqrt();
        let nw = ((w as f32 * s * sq).round() as usize).max(1);
        let nh = ((h as f32 * s / sq).round() as usize).max(1);
        if (nh, nw) != (h, w) {
            if let Some((sh, sw, m)) = pending.take() {
                data = resize_u8(&data, sh, sw, c, h, w, m).map_err(ctx)?;
            }
            let m = interp_for(p.inter_method, h, w, nh, nw, &mut rng);
            pending = Some((h, w, m));
            h = nh;
            w = nw;
        }
    }
    let (ch, cw) = (p.height, p.width);
    if h < ch || w < cw {
        return Err(Error::new(format!(
            "{name}: image of {h}x{w} (after resize) is smaller than the crop {ch}x{cw} of data_shape; set resize"
        )));
    }
    let (y0, x0) = if p.rand_crop { (rng.upto(h - ch), rng.upto(w - cw)) } else { ((h - ch) / 2, (w - cw) / 2) };
    let crop = match pending {
        Some((sh, sw, m)) => resize_crop_u8(&data, sh, sw, c, (h, w), m, (y0, x0), (ch, cw)).map_err(ctx)?,
        None if (y0, x0, ch, cw) == (0, 0, h, w) => data,
        None => crop_u8(&data, w, c, y0, x0, ch, cw),
    };
    let flip = p.mirror || (p.rand_mirror && rng.next_u64() & 1 == 1);
    let jitter = c == 3 && (p.brightness > 0.0 || p.contrast > 0.0 || p.saturation > 0.0);
    // colour jitter, as MXNet: factors on the whole image
    let mut fl: Vec<f32> = if jitter { crop.iter().map(|&v| v as f32).collect() } else { Vec::new() };
    if jitter {
        let gray_of = |px: &[f32]| 0.299 * px[0] + 0.587 * px[1] + 0.114 * px[2];
        if p.brightness > 0.0 {
            let a = 1.0 + rng.range(-p.brightness, p.brightness);
            fl.iter_mut().for_each(|v| *v *= a);
        }
        if p.contrast > 0.0 {
            let a = 1.0 + rng.range(-p.contrast, p.contrast);
            let mean = fl.chunks_exact(3).map(gray_of).sum::<f32>() / (ch * cw) as f32;
            fl.iter_mut().for_each(|v| *v = *v * a + mean * (1.0 - a));
        }
        if p.saturation > 0.0 {
            let a = 1.0 + rng.range(-p.saturation, p.saturation);
            for px in fl.chunks_exact_mut(3) {
                let g = gray_of(px) * (1.0 - a);
                px.iter_mut().for_each(|v| *v = *v * a + g);
            }
        }
        fl.iter_mut().for_each(|v| *v = v.clamp(0.0, 255.0));
    }
    let mut shift = [0f32; 3];
    if c == 3 && p.pca_noise > 0.0 {
        let alpha = [rng.normal() * p.pca_noise, rng.normal() * p.pca_noise, rng.normal() * p.pca_noise];
        for (k, s) in shift.iter_mut().enumerate() {
            *s = (0..3).map(|j| EIGVEC[k][j] * alpha[j] * EIGVAL[j]).sum();
        }
    }
    let plane = ch * cw;
    let norm = |k: usize, v: f32| (v + if c == 3 { shift[k] } else { 0.0 } - p.mean[k]) / p.std[k] * p.scale;
    if jitter {
        for y in 0..ch {
            for x in 0..cw {
                let sx = if flip { cw - 1 - x } else { x };
                let src = &fl[(y * cw + sx) * c..][..c];
                for k in 0..c {
                    out[k * plane + y * cw + x] = norm(k, src[k]);
                }
            }
        }
        return Ok(());
    }
    // u8 pixels: one table per channel of the 256 normalised values
    let mut lut = [[0f32; 256]; 4];
    for (k, t) in lut.iter_mut().enumerate().take(c) {
        for (v, o) in t.iter_mut().enumerate() {
            *o = norm(k, v as f32);
        }
    }
    for (k, t) in lut.iter().enumerate().take(c) {
        let oplane = &mut out[k * plane..(k + 1) * plane];
        for (y, orow) in oplane.chunks_exact_mut(cw).enumerate() {
            let row = &crop[y * cw * c..(y + 1) * cw * c];
            if flip {
                for (o, px) in orow.iter_mut().rev().zip(row.chunks_exact(c)) {
                    *o = t[px[k] as usize];
                }
            } else {
                for (o, px) in orow.iter_mut().zip(row.chunks_exact(c)) {
                    *o = t[px[k] as usize];
                }
            }
        }
    }
    Ok(())
}

/// Processes a batch of records on `pool`: sample `i` goes to `data[i*C*H*W..]`,
/// its labels to `labels[i*label_width..]`. `names[i]` names record `i` in errors.
pub fn process_batch(
    pool: &rayon::ThreadPool,
    records: &[&[u8]],
    names: &[String],
    seeds: &[u64],
    p: &AugParams,
    data: &mut [f32],
    labels: &mut [f32],
) -> Result<()> {
    let sz = p.channels * p.height * p.width;
    let n = records.len();
    if data.len() < n * sz || labels.len() < n * p.label_width || seeds.len() < n || names.len() < n {
        return Err(Error::new("ImageRecordIter: batch buffers are too small"));
    }
    if p.label_width == 0 || !(1..=4).contains(&p.channels) {
        return Err(Error::new("ImageRecordIter: label_width must be >= 1 and data_shape[0] in 1..4"));
    }
    pool.install(|| {
        data[..n * sz]
            .par_chunks_mut(sz)
            .zip(labels[..n * p.label_width].par_chunks_mut(p.label_width))
            .enumerate()
            .map(|(i, (d, l))| process_record(records[i], p, seeds[i], d, l, &names[i]))
            .collect::<Result<Vec<()>>>()
    })?;
    Ok(())
}
