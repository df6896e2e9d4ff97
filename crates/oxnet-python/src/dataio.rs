//! The data pipeline's glue: RecordIO files, image codecs, resize and the
//! `ImageRecordIter` batch pipeline of oxnet-core's `io` module. Pixel buffers go
//! in and out as bytes (HWC `u8`) or as NumPy `float32` arrays written in place;
//! every decode/resize/batch runs with the GIL released.

use crate::IntoPy;
use numpy::{PyArray3, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use oxnet_core::io::{image, imgpipe, imgproc, recordio};
use oxnet_core::Error;
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

enum Handle {
    Reader(recordio::Reader),
    Writer(recordio::Writer),
    Closed,
}

/// An open RecordIO file (`'r'` or `'w'`), what `MXRecordIO.handle` holds.
#[pyclass(module = "oxnet._core")]
pub struct RecordFile {
    h: Mutex<Handle>,
    path: String,
}

#[pymethods]
impl RecordFile {
    #[new]
    fn new(py: Python<'_>, path: String, flag: &str) -> PyResult<Self> {
        let h = py
            .detach(|| match flag {
                "r" => recordio::Reader::open(&path).map(Handle::Reader),
                "w" => recordio::Writer::create(&path).map(Handle::Writer),
                f => Err(Error::new(format!("Invalid flag {f:?} for RecordIO file {path}: use 'r' or 'w'"))),
            })
            .py_err()?;
        Ok(RecordFile { h: Mutex::new(h), path })
    }
    /// The next record's bytes, or None at the end.
    fn read<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let rec = py
            .detach(|| match &mut *self.h.lock() {
                Handle::Reader(r) => r.read(),
                _ => Err(Error::new(format!("RecordIO {} is not open for reading", self.path))),
            })
            .py_err()?;
        Ok(rec.map(|r| PyBytes::new(py, &r)))
    }
    /// Up to `n` next records (fewer at the end of the file).
    fn read_many<'py>(&self, py: Python<'py>, n: usize) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let recs = py
            .detach(|| match &mut *self.h.lock() {
                Handle::Reader(r) => {
                    let mut v = Vec::with_capacity(n);
                    while v.len() < n {
                        match r.read()? {
                            Some(x) => v.push(x),
                            None => break,
                        }
                    }
                    Ok(v)
                }
                _ => Err(Error::new(format!("RecordIO {} is not open for reading", self.path))),
            })
            .py_err()?;
        Ok(recs.iter().map(|r| PyBytes::new(py, r)).collect())
    }
    /// The records at byte offsets `positions`, in that order.
    fn read_at<'py>(&self, py: Python<'py>, positions: Vec<u64>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let recs = py
            .detach(|| match &mut *self.h.lock() {
                Handle::Reader(r) => positions
                    .iter()
                    .map(|&p| {
                        r.seek(p)?;
                        r.read()?.ok_or_else(|| Error::new(format!("RecordIO {}: no record at offset {p} (end of file)", self.path)))
                    })
                    .collect::<oxnet_core::Result<Vec<_>>>(),
                _ => Err(Error::new(format!("RecordIO {} is not open for reading", self.path))),
            })
            .py_err()?;
        Ok(recs.iter().map(|r| PyBytes::new(py, r)).collect())
    }
    fn write(&self, py: Python<'_>, buf: &[u8]) -> PyResult<()> {
        py.detach(|| match &mut *self.h.lock() {
            Handle::Writer(w) => w.write(buf),
            _ => Err(Error::new(format!("RecordIO {} is not open for writing", self.path))),
        })
        .py_err()
    }
    fn tell(&self) -> u64 {
        match &*self.h.lock() {
            Handle::Reader(r) => r.tell(),
            Handle::Writer(w) => w.tell(),
            Handle::Closed => 0,
        }
    }
    fn seek(&self, py: Python<'_>, pos: u64) -> PyResult<()> {
        py.detach(|| match &mut *self.h.lock() {
            Handle::Reader(r) => r.seek(pos),
            _ => Err(Error::new(format!("RecordIO {}: seek needs a file open for reading", self.path))),
        })
        .py_err()
    }
    fn close(&self) -> PyResult<()> {
        let old = std::mem::replace(&mut *self.h.lock(), Handle::Closed);
        if let Handle::Writer(mut w) = old {
            w.flush().py_err()?;
        }
        Ok(())
    }
}

/// `IRHeader` + payload bytes (`recordio.pack`); `labels` non-empty sets flag.
#[pyfunction]
fn recordio_pack<'py>(py: Python<'py>, flag: u32, label: f32, id: u64, id2: u64, labels: Vec<f32>, payload: &[u8]) -> Bound<'py, PyBytes> {
    let h = recordio::Header { flag, label, id, id2, labels };
    PyBytes::new(py, &recordio::pack_header(&h, payload))
}

/// `(flag, label, id, id2, labels, payload_offset)` of a packed record.
#[pyfunction]
fn recordio_unpack(rec: &[u8]) -> PyResult<(u32, f32, u64, u64, Vec<f32>, usize)> {
    let (h, off) = recordio::unpack_header(rec).py_err()?;
    Ok((h.flag, h.label, h.id, h.id2, h.labels, off))
}

/// Decodes an encoded image: `(pixels, h, w, c)`, the pixels an HWC `uint8` NumPy array
/// that owns the decoder's buffer (no copy; an NDArray can adopt it in turn).
#[pyfunction]
fn image_decode<'py>(py: Python<'py>, buf: &[u8], flag: i32, to_rgb: bool) -> PyResult<(Bound<'py, PyArray3<u8>>, usize, usize, usize)> {
    let img = py.detach(|| image::decode(buf, flag, to_rgb)).py_err()?;
    let (h, w, c) = (img.h, img.w, img.c);
    let arr = numpy::ndarray::Array3::from_shape_vec((h, w, c), img.data)
        .map_err(|e| crate::err(Error::new(format!("imdecode: decoded buffer does not match {h}x{w}x{c}: {e}"))))?;
    Ok((PyArray3::from_owned_array(py, arr), h, w, c))
}

/// Encodes HWC u8 pixels as `fmt` ('.jpg' or '.png').
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn image_encode<'py>(
    py: Python<'py>,
    pixels: &[u8],
    h: usize,
    w: usize,
    c: usize,
    fmt: &str,
    quality: u8,
    bgr: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let img = image::Image { h, w, c, data: pixels.to_vec() };
    let out = py.detach(|| image::encode(&img, fmt, quality, bgr)).py_err()?;
    Ok(PyBytes::new(py, &out))
}

/// Resizes an HWC float32 array into `out` (shape `(nh, nw, c)`), OpenCV codes.
#[pyfunction]
fn image_resize(py: Python<'_>, src: &Bound<'_, PyArrayDyn<f32>>, out: &Bound<'_, PyArrayDyn<f32>>, interp: i32) -> PyResult<()> {
    let ro = src.readonly();
    let s = ro.as_slice().map_err(|e| crate::err(Error::new(format!("imresize: {e}"))))?;
    let sh = src.shape().to_vec();
    let mut rw = out.readwrite();
    let oshape = out.shape().to_vec();
    let o = rw.as_slice_mut().map_err(|e| crate::err(Error::new(format!("imresize: {e}"))))?;
    if sh.len() != 3 || oshape.len() != 3 || sh[2] != oshape[2] {
        return Err(crate::err(Error::new("imresize: expected HWC arrays with the same channel count")));
    }
    let r = py.detach(|| imgproc::resize_f32(s, sh[0], sh[1], sh[2], oshape[0], oshape[1], interp)).py_err()?;
    o.copy_from_slice(&r);
    Ok(())
}

/// OpenCV's copyMakeBorder on an HWC float32 array; returns the padded array's bytes.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn image_copy_make_border<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyArrayDyn<f32>>,
    top: usize,
    bot: usize,
    left: usize,
    right: usize,
    btype: i32,
    value: Vec<f32>,
) -> PyResult<Bound<'py, PyBytes>> {
    let ro = src.readonly();
    let s = ro.as_slice().map_err(|e| crate::err(Error::new(format!("copyMakeBorder: {e}"))))?;
    let sh = src.shape().to_vec();
    if sh.len() != 3 {
        return Err(crate::err(Error::new("copyMakeBorder: expected an HWC array")));
    }
    let r = py.detach(|| imgproc::copy_make_border(s, sh[0], sh[1], sh[2], top, bot, left, right, btype, &value)).py_err()?;
    let bytes: Vec<u8> = r.iter().flat_map(|v| v.to_le_bytes()).collect();
    Ok(PyBytes::new(py, &bytes))
}

fn pool(threads: usize) -> PyResult<Arc<rayon::ThreadPool>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    let mut m = POOLS.get_or_init(|| Mutex::new(HashMap::new())).lock();
    if let Some(p) = m.get(&threads) {
        return Ok(p.clone());
    }
    let p = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("oxnet-imgdec-{i}"))
        .build()
        .map_err(|e| crate::err(Error::new(format!("ImageRecordIter: cannot start decode threads: {e}"))))?;
    let p = Arc::new(p);
    m.insert(threads, p.clone());
    Ok(p)
}

/// Decodes and augments `records` into `data` (N,C,H,W float32) and `labels`
/// (N,label_width) on `threads` threads. `params` holds the augmentation settings
/// (see `imgpipe::AugParams`): ints `[c,h,w,resize,rand_crop,rand_mirror,mirror,
/// inter_method,label_width]` and floats `[max_rs,min_rs,max_ar,min_ar,brightness,
/// contrast,saturation,pca_noise,scale,mean0..3,std0..3]`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn image_record_batch(
    py: Python<'_>,
    records: Vec<Vec<u8>>,
    names: Vec<String>,
    seeds: Vec<u64>,
    ints: Vec<i64>,
    floats: Vec<f32>,
    threads: usize,
    data: &Bound<'_, PyArrayDyn<f32>>,
    labels: &Bound<'_, PyArrayDyn<f32>>,
) -> PyResult<()> {
    if ints.len() != 9 || floats.len() != 17 {
        return Err(crate::err(Error::new("ImageRecordIter: bad parameter vector")));
    }
    let p = imgpipe::AugParams {
        channels: ints[0] as usize,
        height: ints[1] as usize,
        width: ints[2] as usize,
        resize: ints[3],
        rand_crop: ints[4] != 0,
        rand_mirror: ints[5] != 0,
        mirror: ints[6] != 0,
        inter_method: ints[7] as i32,
        label_width: ints[8] as usize,
        max_random_scale: floats[0],
        min_random_scale: floats[1],
        max_aspect_ratio: floats[2],
        min_aspect_ratio: floats[3],
        brightness: floats[4],
        contrast: floats[5],
        saturation: floats[6],
        pca_noise: floats[7],
        scale: floats[8],
        mean: [floats[9], floats[10], floats[11], floats[12]],
        std: [floats[13], floats[14], floats[15], floats[16]],
    };
    let pool = pool(threads)?;
    let mut dw = data.readwrite();
    let d = dw.as_slice_mut().map_err(|e| crate::err(Error::new(format!("ImageRecordIter: {e}"))))?;
    let mut lw = labels.readwrite();
    let l = lw.as_slice_mut().map_err(|e| crate::err(Error::new(format!("ImageRecordIter: {e}"))))?;
    let recs: Vec<&[u8]> = records.iter().map(|r| r.as_slice()).collect();
    py.detach(|| imgpipe::process_batch(&pool, &recs, &names, &seeds, &p, d, l)).py_err()
}

pub(crate) fn add_functions(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RecordFile>()?;
    m.add_function(wrap_pyfunction!(recordio_pack, m)?)?;
    m.add_function(wrap_pyfunction!(recordio_unpack, m)?)?;
    m.add_function(wrap_pyfunction!(image_decode, m)?)?;
    m.add_function(wrap_pyfunction!(image_encode, m)?)?;
    m.add_function(wrap_pyfunction!(image_resize, m)?)?;
    m.add_function(wrap_pyfunction!(image_copy_make_border, m)?)?;
    m.add_function(wrap_pyfunction!(image_record_batch, m)?)?;
    Ok(())
}
