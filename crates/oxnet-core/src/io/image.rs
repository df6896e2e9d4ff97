//! Image decoding and encoding (JPEG, PNG) into HWC `u8` pixel buffers, in the
//! conventions of MXNet's OpenCV-based `imdecode` / `imencode`.
//!
//! Crates (chosen by measurement, see `tests` and the commit message): `zune-jpeg`
//! decodes JPEG (SIMD YCbCr→RGB and IDCT; about 1.6-2x `jpeg-decoder`, the decoder
//! `image` used before 0.25), `jpeg-encoder` encodes JPEG (writes BGR directly, as
//! OpenCV holds images), `png` decodes and encodes PNG. No OpenCV, no C.
//!
//! Colour order: [`decode`] returns RGB when `to_rgb` is true (MXNet's default for
//! `mx.image.imdecode`) and BGR otherwise (`to_rgb=0`, OpenCV's order, what
//! `recordio.unpack_img` returns). `flag`: 1 colour (3 channels), 0 grayscale (1
//! channel), -1 unchanged (as stored: 1, 3 or 4 channels).
//!
//! Owns: pixel codecs. Must not touch: the engine, NDArrays (callers wrap buffers).

use crate::error::{Error, Result};

/// An 8-bit image, rows of `w` pixels of `c` interleaved channels.
#[derive(Clone, Debug, PartialEq)]
pub struct Image {
    pub h: usize,
    pub w: usize,
    pub c: usize,
    pub data: Vec<u8>,
}

impl Image {
    pub fn new(h: usize, w: usize, c: usize) -> Image {
        Image { h, w, c, data: vec![0; h * w * c] }
    }
}

/// The format of an encoded buffer, from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Jpeg,
    Png,
}

pub fn sniff(buf: &[u8]) -> Option<Format> {
    if buf.len() >= 3 && buf[0] == 0xFF && buf[1] == 0xD8 && buf[2] == 0xFF {
        Some(Format::Jpeg)
    } else if buf.len() >= 8 && buf[..8] == [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A] {
        Some(Format::Png)
    } else {
        None
    }
}

/// Decodes `buf`. `flag`: 1 colour, 0 grayscale, -1 unchanged; `to_rgb`: channel
/// order of colour output (false gives BGR).
pub fn decode(buf: &[u8], flag: i32, to_rgb: bool) -> Result<Image> {
    if buf.is_empty() {
        return Err(Error::new("imdecode: the image buffer is empty"));
    }
    let fmt =
        sniff(buf).ok_or_else(|| Error::new(format!("imdecode: cannot decode image: not a JPEG or PNG buffer ({} bytes)", buf.len())))?;
    // The decoders are not supposed to panic on bad input; make sure none escapes.
    let res = std::panic::catch_unwind(|| match fmt {
        Format::Jpeg => decode_jpeg(buf, flag),
        Format::Png => decode_png(buf),
    })
    .map_err(|_| Error::new("imdecode: cannot decode image: the decoder failed on a corrupt buffer"))?;
    let img = res?;
    Ok(convert(img, flag, to_rgb))
}

/// Output of a decoder before channel conversion: RGB(A) or gray.
fn convert(img: Image, flag: i32, to_rgb: bool) -> Image {
    let want = match flag {
        0 => 1,
        f if f > 0 => 3,
        _ => img.c,
    };
    let mut out = match (img.c, want) {
        (a, b) if a == b => img,
        (1, 3) => {
            let mut o = Image::new(img.h, img.w, 3);
            for (d, &s) in o.data.chunks_exact_mut(3).zip(img.data.iter()) {
                d.fill(s);
            }
            o
        }
        (2, 3) | (2, 1) => {
            let mut o = Image::new(img.h, img.w, want);
            for (d, s) in o.data.chunks_exact_mut(want).zip(img.data.chunks_exact(2)) {
                d.fill(s[0]);
            }
            o
        }
        (2, _) => convert(Image { c: 2, ..img }, 3, true),
        (3, 1) | (4, 1) => {
            // OpenCV's RGB->gray weights (fixed point, rounded).
            let mut o = Image::new(img.h, img.w, 1);
            for (d, s) in o.data.iter_mut().zip(img.data.chunks_exact(img.c)) {
                let v = 4899 * s[0] as u32 + 9617 * s[1] as u32 + 1868 * s[2] as u32;
                *d = ((v + (1 << 13)) >> 14) as u8;
            }
            o
        }
        (4, 3) => {
            let mut o = Image::new(img.h, img.w, 3);
            for (d, s) in o.data.chunks_exact_mut(3).zip(img.data.chunks_exact(4)) {
                d.copy_from_slice(&s[..3]);
            }
            o
        }
        _ => img,
    };
    if !to_rgb && out.c >= 3 {
        for p in out.data.chunks_exact_mut(out.c) {
            p.swap(0, 2);
        }
    }
    out
}

fn decode_jpeg(buf: &[u8], flag: i32) -> Result<Image> {
    use zune_core::colorspace::ColorSpace;
    use zune_core::options::DecoderOptions;
    let bad = |e: &dyn std::fmt::Debug| Error::new(format!("imdecode: cannot decode JPEG image: {e:?}"));
    let mut probe = zune_jpeg::JpegDecoder::new(buf);
    probe.decode_headers().map_err(|e| bad(&e))?;
    let gray_src = matches!(probe.get_input_colorspace(), Some(ColorSpace::Luma));
    let out_cs = if flag == 0 || (flag < 0 && gray_src) { ColorSpace::Luma } else { ColorSpace::RGB };
    let opts =
        DecoderOptions::default().jpeg_set_out_colorspace(out_cs).set_max_width(1 << 16).set_max_height(1 << 16).set_strict_mode(true);
    let mut d = zune_jpeg::JpegDecoder::new_with_options(buf, opts);
    let data = d.decode().map_err(|e| bad(&e))?;
    let info = d.info().ok_or_else(|| Error::new("imdecode: cannot decode JPEG image: no header"))?;
    let (h, w) = (info.height as usize, info.width as usize);
    let c = if out_cs == ColorSpace::Luma { 1 } else { 3 };
    if data.len() != h * w * c {
        return Err(Error::new(format!("imdecode: cannot decode JPEG image: decoder gave {} bytes for {h}x{w}x{c}", data.len())));
    }
    Ok(Image { h, w, c, data })
}

fn decode_png(buf: &[u8]) -> Result<Image> {
    let bad = |e: &dyn std::fmt::Display| Error::new(format!("imdecode: cannot decode PNG image: {e}"));
    let mut dec = png::Decoder::new(std::io::Cursor::new(buf));
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = dec.read_info().map_err(|e| bad(&e))?;
    let mut data = vec![0u8; reader.output_buffer_size()];
    let info = reader.next_frame(&mut data).map_err(|e| bad(&e))?;
    data.truncate(info.buffer_size());
    let c = match info.color_type {
        png::ColorType::Grayscale => 1,
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        png::ColorType::Indexed => return Err(Error::new("imdecode: cannot decode PNG image: palette not expanded")),
    };
    Ok(Image { h: info.height as usize, w: info.width as usize, c, data })
}

/// Encodes `img` (1 or 3 channels; 3 channels are BGR when `bgr`, else RGB) as
/// `".jpg"`/`".jpeg"` with `quality` (1-100) or `".png"`.
pub fn encode(img: &Image, fmt: &str, quality: u8, bgr: bool) -> Result<Vec<u8>> {
    if img.data.len() != img.h * img.w * img.c {
        return Err(Error::new("imencode: pixel buffer does not match the image size"));
    }
    if img.h == 0 || img.w == 0 || img.h > 65535 || img.w > 65535 {
        return Err(Error::new(format!("imencode: cannot encode an image of {}x{}", img.h, img.w)));
    }
    let fmt = fmt.trim_start_matches('.').to_ascii_lowercase();
    let mut out = Vec::new();
    match fmt.as_str() {
        "jpg" | "jpeg" => {
            use jpeg_encoder::{ColorType, Encoder};
            let ct = match (img.c, bgr) {
                (1, _) => ColorType::Luma,
                (3, true) => ColorType::Bgr,
                (3, false) => ColorType::Rgb,
                (c, _) => return Err(Error::new(format!("imencode: JPEG needs 1 or 3 channels, got {c}"))),
            };
            let enc = Encoder::new(&mut out, quality.clamp(1, 100));
            enc.encode(&img.data, img.w as u16, img.h as u16, ct)
                .map_err(|e| Error::new(format!("imencode: JPEG encoding failed: {e}")))?;
        }
        "png" => {
            let data: std::borrow::Cow<[u8]> = if img.c >= 3 && bgr {
                let mut rgb = img.data.clone();
                for p in rgb.chunks_exact_mut(img.c) {
                    p.swap(0, 2);
                }
                std::borrow::Cow::Owned(rgb)
            } else {
                std::borrow::Cow::Borrowed(&img.data[..])
            };
            let ct = match img.c {
                1 => png::ColorType::Grayscale,
                2 => png::ColorType::GrayscaleAlpha,
                3 => png::ColorType::Rgb,
                4 => png::ColorType::Rgba,
                c => return Err(Error::new(format!("imencode: PNG needs 1-4 channels, got {c}"))),
            };
            let mut enc = png::Encoder::new(&mut out, img.w as u32, img.h as u32);
            enc.set_color(ct);
            enc.set_depth(png::BitDepth::Eight);
            let mut wr = enc.write_header().map_err(|e| Error::new(format!("imencode: PNG encoding failed: {e}")))?;
            wr.write_image_data(&data).map_err(|e| Error::new(format!("imencode: PNG encoding failed: {e}")))?;
            wr.finish().map_err(|e| Error::new(format!("imencode: PNG encoding failed: {e}")))?;
        }
        other => return Err(Error::new(format!("imencode: unsupported image format '.{other}' (use .jpg or .png)"))),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gradient(h: usize, w: usize) -> Image {
        let mut img = Image::new(h, w, 3);
        for y in 0..h {
            for x in 0..w {
                let p = &mut img.data[(y * w + x) * 3..][..3];
                p[0] = (x * 255 / w) as u8;
                p[1] = (y * 255 / h) as u8;
                p[2] = 128;
            }
        }
        img
    }

    #[test]
    fn jpeg_roundtrip_and_channel_order() {
        let img = gradient(40, 56);
        let jpg = encode(&img, ".jpg", 95, false).unwrap();
        let rgb = decode(&jpg, 1, true).unwrap();
        assert_eq!((rgb.h, rgb.w, rgb.c), (40, 56, 3));
        let maxdiff = rgb.data.iter().zip(&img.data).map(|(a, b)| (*a as i32 - *b as i32).abs()).max().unwrap();
        assert!(maxdiff <= 12, "{maxdiff}");
        let bgr = decode(&jpg, 1, false).unwrap();
        assert_eq!(bgr.data[0], rgb.data[2]);
        let gray = decode(&jpg, 0, true).unwrap();
        assert_eq!(gray.c, 1);
    }

    #[test]
    fn png_roundtrip_exact() {
        let img = gradient(9, 7);
        let p = encode(&img, ".png", 0, true).unwrap();
        let back = decode(&p, 1, false).unwrap();
        assert_eq!(back, img);
        let un = decode(&p, -1, false).unwrap();
        assert_eq!(un.c, 3);
    }

    #[test]
    fn bad_buffers_are_errors() {
        assert!(decode(&[], 1, true).is_err());
        assert!(decode(b"not an image", 1, true).is_err());
        let jpg = encode(&gradient(32, 32), ".jpg", 90, false).unwrap();
        assert!(decode(&jpg[..jpg.len() / 2], 1, true).is_err());
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..300 {
            let mut m = jpg.clone();
            for _ in 0..1 + next() % 6 {
                let i = 3 + (next() as usize) % (m.len() - 3);
                m[i] = next() as u8;
            }
            let _ = decode(&m, 1, true);
        }
    }

    /// The measurement behind the crate choice: zune-jpeg vs jpeg-decoder on the same
    /// buffers (run with `--ignored --nocapture`).
    #[test]
    #[ignore]
    fn measure_jpeg_decoders() {
        let img = gradient(256, 256);
        let jpg = encode(&img, ".jpg", 90, false).unwrap();
        let n = 300;
        let t = std::time::Instant::now();
        for _ in 0..n {
            decode(&jpg, 1, true).unwrap();
        }
        let zune = t.elapsed();
        let t = std::time::Instant::now();
        for _ in 0..n {
            let mut d = jpeg_decoder::Decoder::new(std::io::Cursor::new(&jpg));
            d.decode().unwrap();
        }
        let jd = t.elapsed();
        eprintln!("zune-jpeg {:?}/img, jpeg-decoder {:?}/img", zune / n, jd / n);
    }
}
