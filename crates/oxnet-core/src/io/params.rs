//! MXNet 1.9.1's binary NDArray format, byte-compatible both ways.
//!
//! # The list file (`mx.nd.save` / `mx.nd.load`)
//!
//! All integers are little-endian.
//!
//! ```text
//! u64 0x112                 list magic
//! u64 0                     reserved (MXNet writes 0 and ignores it on load; so do we)
//! u64 n                     number of arrays, then n arrays (below)
//! u64 k                     number of names: 0 (a list) or n (a dict)
//! k x (u64 len, len bytes)  the names, UTF-8
//! ```
//!
//! Bytes after the names are ignored, as MXNet ignores them.
//!
//! # One array
//!
//! ```text
//! u32 magic                 0xF993FAC9 (V2), or 0xF993FACA (V3, saved under NumPy shape
//!                           semantics), or 0xF993FAC8 (V1), or none at all (legacy)
//! i32 storage type          V2/V3 only: 0 dense, 1 row_sparse, 2 csr
//! shape                     sparse only: the storage shape first, then the shape (MXNet
//!                           takes the storage shape's first dim from the index array's
//!                           shape instead, and may write it stale; so do we read it)
//! shape                     i32 ndim, ndim x i64 dims (legacy: u32 ndim, u32 dims)
//! -- nothing more when the shape is "unknown" (MXNet's empty `none` array) --
//! i32 dev_type, i32 dev_id  the context the array was on
//! i32 dtype flag            0 f32, 1 f64, 2 f16, 3 u8, 4 i32, 5 i8, 6 i64, 7 bool
//! sparse only: per aux array (1 for row_sparse: the row indices; 2 for csr: indptr,
//!              then column indices) its i32 dtype flag and its shape
//! data                      the raw elements, row-major (sparse: the storage data)
//! sparse only: each aux array's raw elements
//! ```
//!
//! A shape is "unknown" when ndim is 0 under MXNet's legacy shape semantics (V1, V2,
//! legacy) and when ndim is -1 under NumPy semantics (V3), where ndim 0 is a 0-d
//! array. MXNet writes V2 arrays unless NumPy shape semantics are on (`mx.npx.set_np()`),
//! then V3. A zero-size array such as `(0, 3)` is a known shape in both and is written
//! with its context and dtype and no data bytes. `bool` is one byte per element.
//!
//! # What oxnet does differently, on purpose
//!
//! - Context: MXNet 1.9.1 loads every host array (`cpu(i)`, `cpu_pinned`, `cpu_shared`,
//!   and any unknown dev_type) onto `cpu(0)`: checked against the oracle, an array saved
//!   from `cpu(1)` loads on `cpu(0)`. A `gpu(i)` array loads onto `gpu(i)` in MXNet's
//!   CUDA build (not checkable on the CPU-only oracle, which loads it onto `cpu(0)`). We
//!   load a `gpu(i)` array onto `gpu(i)` when that device can hold it, and onto `cpu(0)`
//!   otherwise (no driver, no such device, or GPU memory not available in this build);
//!   everything else onto `cpu(0)`. [`ArrayInfo`] keeps the recorded context. Saving
//!   writes the array's own context (`cpu(1)` is written as 1, 1), as MXNet does.
//! - Shape semantics: MXNet refuses to load a V3 array unless NumPy shape semantics
//!   are on, and a V1/V2 array when they are on. [`load_any_from_bytes_with`] applies
//!   that rule ([`check_shape_semantics`]; `mx.nd.load` uses it); the other loaders
//!   load both and report each array's [`ArrayFormat`] in [`ArrayInfo`].
//! - A 0-d array has no V2 form (ndim 0 would read back as "unknown"), so saving one
//!   under [`ShapeSemantics::Legacy`] writes that array alone as V3.
//! - Sparse arrays: oxnet has no sparse storage, so `row_sparse` and `csr` arrays are
//!   validated and returned densified (their [`ArrayInfo::stype`] says what they were),
//!   within [`LoadOptions::max_densify_bytes`].
//! - Corrupt input is an [`Error`] that says the data is corrupt or truncated and what
//!   was found; nothing panics, and nothing is allocated before the bytes it needs
//!   are known to be there (a sparse array's densified size is bounded by
//!   [`LoadOptions::max_densify_bytes`] instead).
//!
//! Data bytes are written and read as they are in memory: this module assumes a
//! little-endian host, as MXNet's files do.

use crate::bail;
use crate::context::{Context, DeviceType};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::sparse::Parts as SparseParts;
use crate::ndarray::{AnyArray, NDArray, SType, SparseArray};
use crate::shape::fmt_shape;
use std::io::{Read, Write};
use std::path::Path;

/// Magic number of a list file.
pub const LIST_MAGIC: u64 = 0x112;
/// Magic number of a V1 array (no storage type field).
pub const NDARRAY_V1_MAGIC: u32 = 0xF993_FAC8;
/// Magic number of a V2 array (legacy shape semantics).
pub const NDARRAY_V2_MAGIC: u32 = 0xF993_FAC9;
/// Magic number of a V3 array (NumPy shape semantics).
pub const NDARRAY_V3_MAGIC: u32 = 0xF993_FACA;

/// Default for [`LoadOptions::max_densify_bytes`]: 2 GiB.
pub const DEFAULT_MAX_DENSIFY_BYTES: usize = 2 << 30;

/// Which version of the per-array format a loaded array was stored in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrayFormat {
    /// No magic: u32 ndim and u32 dims (MXNet before 0.9).
    Legacy,
    /// Magic 0xF993FAC8: i64 dims, no storage type.
    V1,
    /// Magic 0xF993FAC9: storage type; legacy shape semantics.
    V2,
    /// Magic 0xF993FACA: storage type; NumPy shape semantics.
    V3,
}

impl ArrayFormat {
    /// True for arrays saved under NumPy shape semantics (MXNet loads those only
    /// with NumPy semantics on, and the others only with them off).
    pub fn is_np_shape(self) -> bool {
        self == ArrayFormat::V3
    }
}

/// MXNet's storage types, as stored in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageType {
    Default = 0,
    RowSparse = 1,
    Csr = 2,
}

impl StorageType {
    pub fn name(self) -> &'static str {
        match self {
            StorageType::Default => "default",
            StorageType::RowSparse => "row_sparse",
            StorageType::Csr => "csr",
        }
    }
}

/// How a loaded array was stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrayInfo {
    pub format: ArrayFormat,
    /// The stored storage type (the returned array is dense either way).
    pub stype: StorageType,
    /// The context recorded in the file, raw (`dev_type`, `dev_id`): 1 cpu, 2 gpu,
    /// 3 cpu_pinned, 5 cpu_shared. See the module doc for where the array is put.
    pub saved_dev_type: i32,
    pub saved_dev_id: i32,
}

/// Everything a list file holds.
#[derive(Debug)]
pub struct Loaded {
    pub arrays: Vec<NDArray>,
    /// Empty for a list, one per array for a dict (in file order; duplicates kept).
    pub names: Vec<String>,
    /// One per array.
    pub info: Vec<ArrayInfo>,
}

/// Knobs for loading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadOptions {
    /// Largest dense size, in bytes, a sparse array may be densified to. A sparse
    /// array's dense size is not bounded by the file's length, so a corrupt (or very
    /// sparse) header could otherwise ask for any amount of memory.
    pub max_densify_bytes: usize,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions { max_densify_bytes: DEFAULT_MAX_DENSIFY_BYTES }
    }
}

/// Which magic [`save_with`] writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShapeSemantics {
    /// What MXNet writes by default: V2 (0-d arrays, which V2 cannot express, as V3).
    #[default]
    Legacy,
    /// What MXNet writes under `mx.npx.set_np()`: V3 for every array.
    Np,
}

// ---------------------------------------------------------------------------------
// Errors

fn corrupt(what: &str, msg: impl std::fmt::Display) -> Error {
    Error::new(format!("invalid NDArray {what} (corrupt or truncated): {msg}"))
}

/// Prefixes an error from reading array `i` with its index.
fn in_array(i: u64, e: Error) -> Error {
    Error::new(format!("array {i}: {}", e.message()))
}

fn dtype_from_flag(flag: i32) -> Result<DType> {
    DType::from_flag(flag).map_err(|_| {
        let known = match flag {
            8 => " (int16, not supported by oxnet)",
            9 => " (uint16, not supported by oxnet)",
            10 => " (uint32, not supported by oxnet)",
            11 => " (uint64, not supported by oxnet)",
            _ => "",
        };
        Error::new(format!("unknown dtype flag {flag}{known}"))
    })
}

// ---------------------------------------------------------------------------------
// Reading

/// A cursor over the input that never reads past its end.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(Error::new(format!("truncated: {what} at byte {} needs {n} bytes but only {} remain", self.pos, self.remaining())));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn bytes<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.bytes(what)?))
    }
    fn i32(&mut self, what: &str) -> Result<i32> {
        Ok(i32::from_le_bytes(self.bytes(what)?))
    }
    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.bytes(what)?))
    }
    fn i64(&mut self, what: &str) -> Result<i64> {
        Ok(i64::from_le_bytes(self.bytes(what)?))
    }
}

/// Reads an i32-ndim, i64-dims shape. `None` is MXNet's "unknown" shape.
fn read_shape(r: &mut Reader, np: bool, what: &str) -> Result<Option<Vec<usize>>> {
    let at = r.pos;
    let ndim = r.i32(&format!("{what} ndim"))?;
    if np && ndim == -1 || !np && ndim == 0 {
        return Ok(None);
    }
    if ndim < 0 {
        let lim = if np { -1 } else { 0 };
        return Err(Error::new(format!("{what} at byte {at} has ndim {ndim}, which is less than {lim}")));
    }
    let ndim = ndim as usize;
    if ndim * 8 > r.remaining() {
        return Err(Error::new(format!(
            "truncated: {what} at byte {at} has ndim {ndim}, whose dims need {} bytes but only {} remain",
            ndim * 8,
            r.remaining()
        )));
    }
    let mut dims = Vec::with_capacity(ndim);
    for _ in 0..ndim {
        let d = r.i64(&format!("{what} dim"))?;
        if d < 0 || d as u64 > isize::MAX as u64 {
            let hint = if np && d == -1 { " (an unknown dim, which cannot be loaded)" } else { "" };
            return Err(Error::new(format!("{what} at byte {at} has dim {d}{hint}")));
        }
        dims.push(d as usize);
    }
    Ok(Some(dims))
}

/// Reads the legacy u32-ndim, u32-dims shape whose ndim is `ndim` (already read).
fn read_legacy_shape(r: &mut Reader, ndim: u32, at: usize) -> Result<Vec<usize>> {
    if ndim == 0 {
        return Err(Error::new(format!("legacy-format array at byte {at} has no shape (ndim 0), which MXNet does not load either")));
    }
    let need = ndim as u64 * 4;
    if need > r.remaining() as u64 {
        return Err(Error::new(format!(
            "array magic 0x{ndim:08X} at byte {at} is not an NDArray magic (V1 0x{NDARRAY_V1_MAGIC:08X}, \
             V2 0x{NDARRAY_V2_MAGIC:08X}, V3 0x{NDARRAY_V3_MAGIC:08X}); read as a legacy-format ndim it \
             needs {need} bytes of dims but only {} remain",
            r.remaining()
        )));
    }
    (0..ndim).map(|_| Ok(r.u32("legacy shape dim")? as usize)).collect()
}

/// Number of elements of `shape`, or an error when it overflows. The product of the
/// non-zero dims must fit too, even when a zero dim makes the size 0: every running
/// product over the dims (in any order) then fits in a `usize`.
fn checked_size(shape: &[usize]) -> Result<usize> {
    let nonzero = shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::new(format!("shape {} has too many elements", fmt_shape(shape))))?;
    Ok(if shape.contains(&0) { 0 } else { nonzero })
}

fn checked_nbytes(shape: &[usize], dtype: DType, what: &str) -> Result<usize> {
    checked_size(shape)?
        .checked_mul(dtype.size())
        .ok_or_else(|| Error::new(format!("{what} {} of {} is too large", fmt_shape(shape), dtype.name())))
}

/// Makes the loaded array on the device MXNet would use (see the module doc).
fn make_array(shape: &[usize], dtype: DType, data: &[u8], dev_type: i32, dev_id: i32) -> Result<NDArray> {
    if dev_type == DeviceType::Gpu as i32 && dev_id >= 0 {
        if let Ok(a) = NDArray::empty(shape, Context::gpu(dev_id), dtype) {
            a.write_bytes(data)?;
            return Ok(a);
        }
    }
    let a = NDArray::empty(shape, Context::cpu(0), dtype)?;
    a.write_bytes(data)?;
    Ok(a)
}

/// Reads aux value `i` of an integer aux array as i64.
fn aux_value(bytes: &[u8], dtype: DType, i: usize) -> i64 {
    let s = dtype.size();
    let b = &bytes[i * s..(i + 1) * s];
    match dtype {
        DType::I64 => i64::from_le_bytes(b.try_into().unwrap_or([0; 8])),
        DType::I32 => i32::from_le_bytes(b.try_into().unwrap_or([0; 4])) as i64,
        DType::I8 => b[0] as i8 as i64,
        _ => b[0] as i64,
    }
}

/// Expands a row_sparse or csr array (already checked to be all in the input) to
/// dense bytes.
#[allow(clippy::too_many_arguments)]
fn densify(
    stype: StorageType,
    shape: &[usize],
    sshape: &[usize],
    dtype: DType,
    data: &[u8],
    aux: &[(DType, Vec<usize>, &[u8])],
    opts: &LoadOptions,
) -> Result<Vec<u8>> {
    let es = dtype.size();
    let nbytes = checked_nbytes(shape, dtype, "shape")?;
    if nbytes > opts.max_densify_bytes {
        return Err(Error::new(format!(
            "{} array of shape {} and dtype {} would take {nbytes} bytes densified, more than the limit of {} bytes",
            stype.name(),
            fmt_shape(shape),
            dtype.name(),
            opts.max_densify_bytes
        )));
    }
    let mut dense = vec![0u8; nbytes];
    match stype {
        StorageType::RowSparse => {
            if shape.is_empty() {
                bail!("row_sparse array has a 0-d shape");
            }
            let (idx_t, idx_shape, idx) = &aux[0];
            let nnr = idx_shape.iter().product::<usize>();
            if idx_shape.len() != 1 || sshape.is_empty() || sshape[0] != nnr || sshape[1..] != shape[1..] {
                bail!(
                    "row_sparse array of shape {} has storage shape {} and {} row indices, which do not fit",
                    fmt_shape(shape),
                    fmt_shape(sshape),
                    fmt_shape(idx_shape)
                );
            }
            let row_bytes = checked_nbytes(&shape[1..], dtype, "row shape")?;
            for k in 0..nnr {
                let row = aux_value(idx, *idx_t, k);
                if row < 0 || row as u64 >= shape[0] as u64 {
                    bail!("row_sparse row index {row} is out of range for shape {}", fmt_shape(shape));
                }
                let row = row as usize;
                dense[row * row_bytes..(row + 1) * row_bytes].copy_from_slice(&data[k * row_bytes..(k + 1) * row_bytes]);
            }
        }
        StorageType::Csr => {
            let (ptr_t, ptr_shape, indptr) = &aux[0];
            let (col_t, col_shape, cols) = &aux[1];
            if shape.len() != 2 {
                bail!("csr array has shape {}, which is not 2-d", fmt_shape(shape));
            }
            let (m, n) = (shape[0], shape[1]);
            let nnz = sshape.iter().product::<usize>();
            if sshape.len() != 1 || ptr_shape[..] != [m + 1] || col_shape[..] != [nnz] {
                bail!(
                    "csr array of shape {} has storage shape {}, indptr shape {} and indices shape {}, which do not fit",
                    fmt_shape(shape),
                    fmt_shape(sshape),
                    fmt_shape(ptr_shape),
                    fmt_shape(col_shape)
                );
            }
            if aux_value(indptr, *ptr_t, 0) != 0 || aux_value(indptr, *ptr_t, m) != nnz as i64 {
                bail!(
                    "csr indptr runs from {} to {}, not from 0 to the {nnz} stored values",
                    aux_value(indptr, *ptr_t, 0),
                    aux_value(indptr, *ptr_t, m)
                );
            }
            for i in 0..m {
                let (b, e) = (aux_value(indptr, *ptr_t, i), aux_value(indptr, *ptr_t, i + 1));
                if b > e || e > nnz as i64 {
                    bail!("csr indptr is not non-decreasing within [0, {nnz}] at row {i} ({b}, {e})");
                }
                for k in b as usize..e as usize {
                    let c = aux_value(cols, *col_t, k);
                    if c < 0 || c as u64 >= n as u64 {
                        bail!("csr column index {c} is out of range for shape {}", fmt_shape(shape));
                    }
                    let at = (i * n + c as usize) * es;
                    dense[at..at + es].copy_from_slice(&data[k * es..(k + 1) * es]);
                }
            }
        }
        StorageType::Default => {}
    }
    Ok(dense)
}

/// Reads one array (any format) at the reader's position, sparse ones densified.
fn read_array(r: &mut Reader, opts: &LoadOptions) -> Result<(NDArray, ArrayInfo)> {
    let (a, info) = read_array_any(r, opts, false)?;
    match a {
        AnyArray::Dense(d) => Ok((d, info)),
        AnyArray::Sparse(_) => unreachable!("sparse arrays are densified unless kept"),
    }
}

/// Reads one array; with `keep_sparse`, a row_sparse or csr array stays sparse (its
/// indices checked as `check_format` does).
fn read_array_any(r: &mut Reader, opts: &LoadOptions, keep_sparse: bool) -> Result<(AnyArray, ArrayInfo)> {
    let at = r.pos;
    let magic = r.u32("array magic")?;
    let (format, stype, sshape, shape) = match magic {
        NDARRAY_V2_MAGIC | NDARRAY_V3_MAGIC => {
            let np = magic == NDARRAY_V3_MAGIC;
            let format = if np { ArrayFormat::V3 } else { ArrayFormat::V2 };
            let st = r.i32("storage type")?;
            let stype = match st {
                0 => StorageType::Default,
                1 => StorageType::RowSparse,
                2 => StorageType::Csr,
                _ => bail!("unknown storage type {st} (0 dense, 1 row_sparse and 2 csr exist)"),
            };
            let sshape = if stype != StorageType::Default {
                Some(
                    read_shape(r, np, "storage shape")?
                        .ok_or_else(|| Error::new(format!("{} array has an unknown storage shape", stype.name())))?,
                )
            } else {
                None
            };
            (format, stype, sshape, read_shape(r, np, "shape")?)
        }
        NDARRAY_V1_MAGIC => (ArrayFormat::V1, StorageType::Default, None, read_shape(r, false, "shape")?),
        ndim => (ArrayFormat::Legacy, StorageType::Default, None, Some(read_legacy_shape(r, ndim, at)?)),
    };
    let shape = shape.ok_or_else(|| {
        Error::new(format!(
            "array at byte {at} has an unknown shape (MXNet's empty 'none' array, ndim {} in {:?} format), which cannot be loaded",
            if format == ArrayFormat::V3 { -1 } else { 0 },
            format
        ))
    })?;
    let dev_type = r.i32("context dev_type")?;
    let dev_id = r.i32("context dev_id")?;
    let dtype = dtype_from_flag(r.i32("dtype flag")?)?;
    let info = ArrayInfo { format, stype, saved_dev_type: dev_type, saved_dev_id: dev_id };
    let Some(mut sshape) = sshape else {
        let nbytes = checked_nbytes(&shape, dtype, "shape")?;
        let data = r.take(nbytes, &format!("data of shape {} and dtype {}", fmt_shape(&shape), dtype.name()))?;
        return Ok((AnyArray::Dense(make_array(&shape, dtype, data, dev_type, dev_id)?), info));
    };
    let naux = if stype == StorageType::Csr { 2 } else { 1 };
    let mut aux_meta = Vec::with_capacity(naux);
    for _ in 0..naux {
        let t = dtype_from_flag(r.i32("aux dtype flag")?)?;
        if !matches!(t, DType::I64 | DType::I32 | DType::I8 | DType::U8) {
            bail!("{} aux array has dtype {}, not an integer type", stype.name(), t.name());
        }
        let s = read_shape(r, format == ArrayFormat::V3, "aux shape")?.unwrap_or_default();
        aux_meta.push((t, s));
    }
    // MXNet takes the number of stored rows (row_sparse) or values (csr) from the
    // index array's shape, not from the stored storage shape, whose first dim it can
    // write stale (0 for a csr array saved right after `tostype`).
    let idx_shape = &aux_meta[naux - 1].1;
    if idx_shape.len() != 1 || sshape.is_empty() {
        bail!(
            "{} array has storage shape {} and index shape {}; both must have a first dim",
            stype.name(),
            fmt_shape(&sshape),
            fmt_shape(idx_shape)
        );
    }
    sshape[0] = idx_shape[0];
    let nbytes = checked_nbytes(&sshape, dtype, "storage shape")?;
    let data = r.take(nbytes, &format!("{} data of storage shape {}", stype.name(), fmt_shape(&sshape)))?;
    let mut aux = Vec::with_capacity(naux);
    for (t, s) in aux_meta {
        let nb = checked_nbytes(&s, t, "aux shape")?;
        let bytes = r.take(nb, &format!("aux data of shape {}", fmt_shape(&s)))?;
        aux.push((t, s, bytes));
    }
    if keep_sparse {
        let st = if stype == StorageType::Csr { SType::Csr } else { SType::RowSparse };
        let ctx = Context::cpu(0);
        let data = make_array(&sshape, dtype, data, DeviceType::Cpu as i32, 0)?;
        let mut parts = Vec::with_capacity(aux.len());
        let mut aux_types = Vec::with_capacity(aux.len());
        for (t, s, bytes) in &aux {
            parts.push(make_array(s, *t, bytes, DeviceType::Cpu as i32, 0)?);
            aux_types.push(*t);
        }
        if st == SType::RowSparse && (sshape.len() != shape.len() || sshape[1..] != shape[1..]) {
            bail!("row_sparse array of shape {} has storage shape {}, which does not fit", fmt_shape(&shape), fmt_shape(&sshape));
        }
        if st == SType::Csr && shape.len() != 2 {
            bail!("csr array has shape {}, which is not 2-d", fmt_shape(&shape));
        }
        let sp = SparseArray::adopt(st, &shape, dtype, aux_types, ctx, SparseParts { data, aux: parts });
        sp.check_format(true)?;
        return Ok((AnyArray::Sparse(sp), info));
    }
    let dense = densify(stype, &shape, &sshape, dtype, data, &aux, opts)?;
    Ok((AnyArray::Dense(make_array(&shape, dtype, &dense, dev_type, dev_id)?), info))
}

/// Applies MXNet's rule for loading array `i`, stored in `format`, under the caller's
/// shape semantics: arrays saved under NumPy shape semantics (V3) load only with
/// them on, the others only with them off. The one exception is a V3 0-d array
/// under legacy semantics: oxnet writes 0-d arrays that way when saving outside
/// NumPy semantics (V2 cannot hold them; MXNet itself saves them unloadably).
pub fn check_shape_semantics(i: usize, format: ArrayFormat, ndim: usize, sem: ShapeSemantics) -> Result<()> {
    match (sem, format.is_np_shape()) {
        (ShapeSemantics::Np, false) => Err(Error::new(format!(
            "load: array {i} was saved without NumPy shape semantics and cannot be loaded with them on; \
             load it inside `with mx.np_shape(False)`"
        ))),
        (ShapeSemantics::Legacy, true) if ndim != 0 => Err(Error::new(format!(
            "load: array {i} was saved with NumPy shape semantics and cannot be loaded with them off; \
             load it inside `with mx.np_shape(True)` (or under mx.npx.set_np())"
        ))),
        _ => Ok(()),
    }
}

/// [`load_any_from_bytes`] under shape semantics `sem`, as MXNet's `mx.nd.load`
/// (see [`check_shape_semantics`]).
pub fn load_any_from_bytes_with(bytes: &[u8], sem: ShapeSemantics) -> Result<(Vec<AnyArray>, Vec<String>)> {
    let opts = LoadOptions::default();
    let mut r = Reader::new(bytes);
    let fail = |e: Error| corrupt("file", e.message());
    let magic = r.u64("list magic").map_err(fail)?;
    if magic != LIST_MAGIC {
        return Err(corrupt("file", format!("list magic is 0x{magic:X}, expected 0x{LIST_MAGIC:X}")));
    }
    r.u64("reserved field").map_err(fail)?;
    let count = r.u64("array count").map_err(fail)?;
    let cap = (count as usize).min(r.remaining() / 8);
    let mut arrays = Vec::with_capacity(cap);
    for i in 0..count {
        let (a, info) = read_array_any(&mut r, &opts, true).map_err(|e| fail(in_array(i, e)))?;
        check_shape_semantics(i as usize, info.format, a.shape().len(), sem)?;
        arrays.push(a);
    }
    let names = read_names(&mut r, count)?;
    Ok((arrays, names))
}

/// Loads a list file from memory keeping sparse arrays sparse: the arrays and their
/// names (empty for a list).
pub fn load_any_from_bytes(bytes: &[u8]) -> Result<(Vec<AnyArray>, Vec<String>)> {
    let opts = LoadOptions::default();
    let mut r = Reader::new(bytes);
    let fail = |e: Error| corrupt("file", e.message());
    let magic = r.u64("list magic").map_err(fail)?;
    if magic != LIST_MAGIC {
        return Err(corrupt("file", format!("list magic is 0x{magic:X}, expected 0x{LIST_MAGIC:X}")));
    }
    r.u64("reserved field").map_err(fail)?;
    let count = r.u64("array count").map_err(fail)?;
    let cap = (count as usize).min(r.remaining() / 8);
    let mut arrays = Vec::with_capacity(cap);
    for i in 0..count {
        arrays.push(read_array_any(&mut r, &opts, true).map_err(|e| fail(in_array(i, e)))?.0);
    }
    let names = read_names(&mut r, count)?;
    Ok((arrays, names))
}

/// One array from its raw bytes, sparse ones kept sparse.
pub fn load_raw_any(bytes: &[u8]) -> Result<AnyArray> {
    Ok(read_array_any(&mut Reader::new(bytes), &LoadOptions::default(), true).map_err(|e| corrupt("bytes", e.message()))?.0)
}

fn read_names(r: &mut Reader, count: u64) -> Result<Vec<String>> {
    let fail = |e: Error| corrupt("file", e.message());
    let nnames = r.u64("name count").map_err(fail)?;
    if nnames != 0 && nnames != count {
        return Err(corrupt("file", format!("{nnames} names for {count} arrays (must be 0 or one per array)")));
    }
    let mut names = Vec::with_capacity(nnames as usize);
    for i in 0..nnames {
        let len = r.u64("name length").map_err(|e| fail(Error::new(format!("name {i}: {}", e.message()))))?;
        let what = format!("name {i} of length {len}");
        let raw = r.take(usize::try_from(len).unwrap_or(usize::MAX), &what).map_err(fail)?;
        let s =
            std::str::from_utf8(raw).map_err(|_| corrupt("file", format!("name {i} at byte {} is not valid UTF-8", r.pos - raw.len())))?;
        names.push(s.to_string());
    }
    Ok(names)
}

/// Loads a list file from memory, with details on how each array was stored.
pub fn load_detailed(bytes: &[u8], opts: &LoadOptions) -> Result<Loaded> {
    let mut r = Reader::new(bytes);
    let fail = |e: Error| corrupt("file", e.message());
    let magic = r.u64("list magic").map_err(fail)?;
    if magic != LIST_MAGIC {
        return Err(corrupt("file", format!("list magic is 0x{magic:X}, expected 0x{LIST_MAGIC:X}")));
    }
    r.u64("reserved field").map_err(fail)?;
    let count = r.u64("array count").map_err(fail)?;
    // Every array takes at least 8 bytes; never reserve for more than the input holds.
    let cap = (count as usize).min(r.remaining() / 8);
    let (mut arrays, mut info) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
    for i in 0..count {
        let (a, inf) = read_array(&mut r, opts).map_err(|e| fail(in_array(i, e)))?;
        arrays.push(a);
        info.push(inf);
    }
    let names = read_names(&mut r, count)?;
    Ok(Loaded { arrays, names, info })
}

/// Loads a list file from memory: the arrays and their names (empty for a list).
pub fn load_from_bytes(bytes: &[u8]) -> Result<(Vec<NDArray>, Vec<String>)> {
    let l = load_detailed(bytes, &LoadOptions::default())?;
    Ok((l.arrays, l.names))
}

/// Loads a list file from a reader (read to its end first).
pub fn load<R: Read>(r: &mut R) -> Result<(Vec<NDArray>, Vec<String>)> {
    let mut buf = Vec::new();
    r.read_to_end(&mut buf).map_err(|e| Error::new(format!("cannot read NDArray file: {e}")))?;
    load_from_bytes(&buf)
}

/// Loads a `.params` file, as `mx.nd.load` does (see the module doc for contexts).
pub fn load_file(path: impl AsRef<Path>) -> Result<(Vec<NDArray>, Vec<String>)> {
    let path = path.as_ref();
    let buf = std::fs::read(path).map_err(|e| Error::new(format!("cannot read '{}': {e}", path.display())))?;
    load_from_bytes(&buf).map_err(|e| Error::new(format!("'{}': {}", path.display(), e.message())))
}

/// Loads one array from its raw bytes (the pickled form, `NDArray.__setstate__`).
/// Bytes after the array are ignored, as MXNet ignores them.
pub fn load_raw_bytes_detailed(bytes: &[u8], opts: &LoadOptions) -> Result<(NDArray, ArrayInfo)> {
    read_array(&mut Reader::new(bytes), opts).map_err(|e| corrupt("bytes", e.message()))
}

/// Loads one array from its raw bytes (the pickled form, `NDArray.__setstate__`).
pub fn load_raw_bytes(bytes: &[u8]) -> Result<NDArray> {
    Ok(load_raw_bytes_detailed(bytes, &LoadOptions::default())?.0)
}

// ---------------------------------------------------------------------------------
// Writing

fn io_err(e: std::io::Error) -> Error {
    Error::new(format!("cannot write NDArray data: {e}"))
}

/// Writes one dense array (blocks until its pending writes finish).
fn write_array<W: Write>(w: &mut W, a: &NDArray, sem: ShapeSemantics) -> Result<()> {
    let magic = if sem == ShapeSemantics::Np || a.ndim() == 0 { NDARRAY_V3_MAGIC } else { NDARRAY_V2_MAGIC };
    let ndim = i32::try_from(a.ndim()).map_err(|_| Error::new(format!("cannot save an array of {} dims", a.ndim())))?;
    let mut head = Vec::with_capacity(24 + 8 * a.ndim());
    head.extend_from_slice(&magic.to_le_bytes());
    head.extend_from_slice(&(StorageType::Default as i32).to_le_bytes());
    head.extend_from_slice(&ndim.to_le_bytes());
    for &d in a.shape() {
        head.extend_from_slice(&(d as i64).to_le_bytes());
    }
    let ctx = a.ctx();
    head.extend_from_slice(&(ctx.dev_type as i32).to_le_bytes());
    head.extend_from_slice(&ctx.dev_id.to_le_bytes());
    head.extend_from_slice(&a.dtype().flag().to_le_bytes());
    let data = a.read_bytes()?;
    w.write_all(&head).map_err(io_err)?;
    w.write_all(&data).map_err(io_err)
}

fn push_shape(head: &mut Vec<u8>, shape: &[usize]) -> Result<()> {
    let ndim = i32::try_from(shape.len()).map_err(|_| Error::new(format!("cannot save an array of {} dims", shape.len())))?;
    head.extend_from_slice(&ndim.to_le_bytes());
    for &d in shape {
        head.extend_from_slice(&(d as i64).to_le_bytes());
    }
    Ok(())
}

/// Writes one sparse array in MXNet's layout: magic, storage type, storage shape,
/// shape, context, dtype, each aux array's dtype and shape, the values, the aux
/// arrays (blocks until pending writes finish).
fn write_sparse<W: Write>(w: &mut W, a: &SparseArray) -> Result<()> {
    let p = a.parts_now()?;
    let mut head = Vec::new();
    head.extend_from_slice(&NDARRAY_V2_MAGIC.to_le_bytes());
    head.extend_from_slice(&a.stype().id().to_le_bytes());
    push_shape(&mut head, p.data.shape())?;
    push_shape(&mut head, a.shape())?;
    let ctx = a.ctx();
    head.extend_from_slice(&(ctx.dev_type as i32).to_le_bytes());
    head.extend_from_slice(&ctx.dev_id.to_le_bytes());
    head.extend_from_slice(&a.dtype().flag().to_le_bytes());
    for x in &p.aux {
        head.extend_from_slice(&x.dtype().flag().to_le_bytes());
        push_shape(&mut head, x.shape())?;
    }
    w.write_all(&head).map_err(io_err)?;
    w.write_all(&p.data.read_bytes()?).map_err(io_err)?;
    for x in &p.aux {
        w.write_all(&x.read_bytes()?).map_err(io_err)?;
    }
    Ok(())
}

/// A list file in memory holding arrays of any storage type (MXNet's layout).
pub fn save_any_to_bytes(arrays: &[(Option<&str>, &AnyArray)]) -> Result<Vec<u8>> {
    save_any_to_bytes_with(arrays, ShapeSemantics::Legacy)
}

/// [`save_any_to_bytes`] writing dense arrays as `sem` says. As in MXNet, sparse
/// arrays cannot be saved under NumPy shape semantics.
pub fn save_any_to_bytes_with(arrays: &[(Option<&str>, &AnyArray)], sem: ShapeSemantics) -> Result<Vec<u8>> {
    if sem == ShapeSemantics::Np {
        if let Some((i, (_, a))) = arrays.iter().enumerate().find(|(_, (_, a))| a.stype() != SType::Default) {
            bail!(
                "save: array {i} is {}; only arrays of default storage can be saved under NumPy shape semantics",
                a.stype().name()
            );
        }
    }
    let named = arrays.iter().filter(|(n, _)| n.is_some()).count();
    if named != 0 && named != arrays.len() {
        bail!("cannot save named and unnamed arrays in one file: give every array a name (a dict) or none (a list)");
    }
    let mut w = Vec::new();
    w.extend_from_slice(&LIST_MAGIC.to_le_bytes());
    w.extend_from_slice(&0u64.to_le_bytes());
    w.extend_from_slice(&(arrays.len() as u64).to_le_bytes());
    for (_, a) in arrays {
        match a {
            AnyArray::Dense(d) => write_array(&mut w, d, sem)?,
            AnyArray::Sparse(s) => write_sparse(&mut w, s)?,
        }
    }
    w.extend_from_slice(&(named as u64).to_le_bytes());
    for (n, _) in arrays {
        if let Some(n) = n {
            w.extend_from_slice(&(n.len() as u64).to_le_bytes());
            w.extend_from_slice(n.as_bytes());
        }
    }
    Ok(w)
}

/// One array of any storage type in the single-array format (pickling).
pub fn save_raw_any(a: &AnyArray) -> Result<Vec<u8>> {
    let mut w = Vec::new();
    match a {
        AnyArray::Dense(d) => write_array(&mut w, d, ShapeSemantics::Legacy)?,
        AnyArray::Sparse(s) => write_sparse(&mut w, s)?,
    }
    Ok(w)
}

/// The names to write: none for a list, all for a dict.
fn names_of<'a>(arrays: &[(Option<&'a str>, &NDArray)]) -> Result<Vec<&'a str>> {
    let named = arrays.iter().filter(|(n, _)| n.is_some()).count();
    if named != 0 && named != arrays.len() {
        bail!(
            "cannot save {} named and {} unnamed arrays in one file: give every array a name (a dict) or none (a list)",
            named,
            arrays.len() - named
        );
    }
    Ok(arrays.iter().filter_map(|(n, _)| *n).collect())
}

/// Writes a list file. Arrays all named make a dict, all unnamed a list.
pub fn save_with<W: Write>(w: &mut W, arrays: &[(Option<&str>, &NDArray)], sem: ShapeSemantics) -> Result<()> {
    let names = names_of(arrays)?;
    let mut head = Vec::with_capacity(24);
    head.extend_from_slice(&LIST_MAGIC.to_le_bytes());
    head.extend_from_slice(&0u64.to_le_bytes());
    head.extend_from_slice(&(arrays.len() as u64).to_le_bytes());
    w.write_all(&head).map_err(io_err)?;
    for (_, a) in arrays {
        write_array(w, a, sem)?;
    }
    let mut tail = Vec::new();
    tail.extend_from_slice(&(names.len() as u64).to_le_bytes());
    for n in names {
        tail.extend_from_slice(&(n.len() as u64).to_le_bytes());
        tail.extend_from_slice(n.as_bytes());
    }
    w.write_all(&tail).map_err(io_err)
}

/// Writes a list file as MXNet does by default ([`ShapeSemantics::Legacy`]).
pub fn save<W: Write>(w: &mut W, arrays: &[(Option<&str>, &NDArray)]) -> Result<()> {
    save_with(w, arrays, ShapeSemantics::Legacy)
}

/// A list file in memory ([`ShapeSemantics::Legacy`]).
pub fn save_to_bytes(arrays: &[(Option<&str>, &NDArray)]) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    save(&mut v, arrays)?;
    Ok(v)
}

/// Writes a `.params` file, as `mx.nd.save` does.
pub fn save_file_with(path: impl AsRef<Path>, arrays: &[(Option<&str>, &NDArray)], sem: ShapeSemantics) -> Result<()> {
    let path = path.as_ref();
    names_of(arrays)?;
    let werr = |e: std::io::Error| Error::new(format!("cannot write '{}': {e}", path.display()));
    let f = std::fs::File::create(path).map_err(werr)?;
    let mut w = std::io::BufWriter::new(f);
    save_with(&mut w, arrays, sem)?;
    w.flush().map_err(werr)
}

/// Writes a `.params` file ([`ShapeSemantics::Legacy`]).
pub fn save_file(path: impl AsRef<Path>, arrays: &[(Option<&str>, &NDArray)]) -> Result<()> {
    save_file_with(path, arrays, ShapeSemantics::Legacy)
}

/// One array's raw bytes, the pickled form (`NDArray.__getstate__`), as MXNet
/// writes it for `sem`.
pub fn save_raw_bytes_with(a: &NDArray, sem: ShapeSemantics) -> Result<Vec<u8>> {
    let mut v = Vec::with_capacity(a.nbytes() + 64);
    write_array(&mut v, a, sem)?;
    Ok(v)
}

/// One array's raw bytes ([`ShapeSemantics::Legacy`]).
pub fn save_raw_bytes(a: &NDArray) -> Result<Vec<u8>> {
    save_raw_bytes_with(a, ShapeSemantics::Legacy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    #[test]
    fn shape_semantics_decide_what_loads() {
        let ctx = Context::cpu(0);
        let zero = AnyArray::Dense(NDArray::empty(&[2, 0, 1], ctx, DType::F32).unwrap());
        let two = AnyArray::Dense(NDArray::from_vec(&[2, 1], &[1.0f32, 2.0], ctx).unwrap());
        let list = [(None, &zero), (None, &two)];
        let legacy = save_any_to_bytes_with(&list, ShapeSemantics::Legacy).unwrap();
        let np = save_any_to_bytes_with(&list, ShapeSemantics::Np).unwrap();
        assert!(load_any_from_bytes_with(&legacy, ShapeSemantics::Legacy).is_ok());
        assert!(load_any_from_bytes_with(&np, ShapeSemantics::Np).is_ok());
        let e = load_any_from_bytes_with(&np, ShapeSemantics::Legacy).unwrap_err().to_string();
        assert!(e.contains("np_shape(True)"), "{e}");
        let e = load_any_from_bytes_with(&legacy, ShapeSemantics::Np).unwrap_err().to_string();
        assert!(e.contains("np_shape(False)"), "{e}");
        // oxnet's legacy form of a 0-d array loads back under legacy semantics
        let scalar = AnyArray::Dense(NDArray::from_vec(&[], &[3.0f32], ctx).unwrap());
        let b = save_any_to_bytes_with(&[(None, &scalar)], ShapeSemantics::Legacy).unwrap();
        assert_eq!(load_any_from_bytes_with(&b, ShapeSemantics::Legacy).unwrap().0[0].shape(), &[] as &[usize]);
        // sparse arrays cannot be saved under NumPy semantics
        let rsp = crate::op::sparse::cast_storage(&two, SType::RowSparse).unwrap();
        assert!(save_any_to_bytes_with(&[(None, &rsp)], ShapeSemantics::Np).is_err());
    }

    fn cpu() -> Context {
        Context::cpu(0)
    }

    fn le(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    /// The bytes MXNet writes for `mx.nd.save(f, [mx.nd.array([[1,2,3],[4,5,6]])])`
    /// (hex-dumped from the 1.9.1 oracle).
    fn mxnet_list_2x3() -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&0x112u64.to_le_bytes());
        v.extend_from_slice(&0u64.to_le_bytes());
        v.extend_from_slice(&1u64.to_le_bytes());
        v.extend_from_slice(&0xF993FAC9u32.to_le_bytes());
        v.extend_from_slice(&0i32.to_le_bytes());
        v.extend_from_slice(&2i32.to_le_bytes());
        v.extend_from_slice(&2i64.to_le_bytes());
        v.extend_from_slice(&3i64.to_le_bytes());
        v.extend_from_slice(&1i32.to_le_bytes());
        v.extend_from_slice(&0i32.to_le_bytes());
        v.extend_from_slice(&0i32.to_le_bytes());
        for x in [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend_from_slice(&0u64.to_le_bytes());
        v
    }

    #[test]
    fn writes_mxnet_bytes_for_a_list() {
        let a = NDArray::from_vec(&[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], cpu()).unwrap();
        assert_eq!(save_to_bytes(&[(None, &a)]).unwrap(), mxnet_list_2x3());
        let (arrs, names) = load_from_bytes(&mxnet_list_2x3()).unwrap();
        assert!(names.is_empty());
        assert_eq!(arrs[0].shape(), &[2, 3]);
        assert_eq!(arrs[0].to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    }

    #[test]
    fn round_trips_every_dtype_with_names() {
        let arrays = [
            NDArray::from_vec(&[2], &[1.5f32, -2.0], cpu()).unwrap(),
            NDArray::from_vec(&[1, 2], &[1e300f64, -0.25], cpu()).unwrap(),
            NDArray::from_vec(&[3], &[f16::from_f32(0.5), f16::from_f32(-1.0), f16::INFINITY], cpu()).unwrap(),
            NDArray::from_vec(&[2], &[0u8, 255], cpu()).unwrap(),
            NDArray::from_vec(&[2], &[i32::MIN, i32::MAX], cpu()).unwrap(),
            NDArray::from_vec(&[2], &[-128i8, 127], cpu()).unwrap(),
            NDArray::from_vec(&[2], &[i64::MIN, (1i64 << 53) + 1], cpu()).unwrap(),
            NDArray::empty(&[0, 3], cpu(), DType::F32).unwrap(),
        ];
        let names: Vec<String> = (0..arrays.len()).map(|i| format!("arg:p{i}")).collect();
        let list: Vec<(Option<&str>, &NDArray)> = names.iter().map(|n| Some(n.as_str())).zip(arrays.iter()).collect();
        let bytes = save_to_bytes(&list).unwrap();
        let (back, back_names) = load_from_bytes(&bytes).unwrap();
        assert_eq!(back_names, names);
        for (a, b) in arrays.iter().zip(&back) {
            assert_eq!(a.shape(), b.shape());
            assert_eq!(a.dtype(), b.dtype());
            assert_eq!(a.read_bytes().unwrap(), b.read_bytes().unwrap());
            assert_eq!(b.ctx(), cpu());
        }
        // Saving what was loaded gives the same bytes.
        let relist: Vec<(Option<&str>, &NDArray)> = names.iter().map(|n| Some(n.as_str())).zip(back.iter()).collect();
        assert_eq!(save_to_bytes(&relist).unwrap(), bytes);
    }

    #[test]
    fn zero_d_arrays_are_written_as_v3() {
        let s = NDArray::from_vec(&[], &[5.0f32], cpu()).unwrap();
        let raw = save_raw_bytes(&s).unwrap();
        // V3 magic, dense, ndim 0, cpu(0), float32, 5.0 (as MXNet writes under np semantics).
        let expect = le(&[
            &0xF993FACAu32.to_le_bytes(),
            &0i32.to_le_bytes(),
            &0i32.to_le_bytes(),
            &1i32.to_le_bytes(),
            &0i32.to_le_bytes(),
            &0i32.to_le_bytes(),
            &5.0f32.to_le_bytes(),
        ]);
        assert_eq!(raw, expect);
        let (b, info) = load_raw_bytes_detailed(&raw, &LoadOptions::default()).unwrap();
        assert_eq!(b.shape(), &[] as &[usize]);
        assert_eq!(b.to_vec::<f32>().unwrap(), vec![5.0]);
        assert_eq!(info.format, ArrayFormat::V3);
        // Under Np semantics every array is V3.
        let v = NDArray::from_vec(&[1], &[1.0f32], cpu()).unwrap();
        assert_eq!(save_raw_bytes_with(&v, ShapeSemantics::Np).unwrap()[..4], 0xF993FACAu32.to_le_bytes());
        assert_eq!(save_raw_bytes(&v).unwrap()[..4], 0xF993FAC9u32.to_le_bytes());
    }

    #[test]
    fn raw_bytes_ignore_trailing_bytes_like_mxnet() {
        let a = NDArray::from_vec(&[2], &[7i32, 8], cpu()).unwrap();
        let mut raw = save_raw_bytes(&a).unwrap();
        raw.extend_from_slice(b"junk");
        assert_eq!(load_raw_bytes(&raw).unwrap().to_vec::<i32>().unwrap(), vec![7, 8]);
    }

    #[test]
    fn saved_context_is_written_and_host_arrays_load_on_cpu0() {
        let a = NDArray::from_vec(&[2], &[1.0f32, 1.0], Context::cpu(1)).unwrap();
        let raw = save_raw_bytes(&a).unwrap();
        assert_eq!(&raw[20..28], &le(&[&1i32.to_le_bytes(), &1i32.to_le_bytes()])[..]);
        let (b, info) = load_raw_bytes_detailed(&raw, &LoadOptions::default()).unwrap();
        assert_eq!((info.saved_dev_type, info.saved_dev_id), (1, 1));
        assert_eq!(b.ctx(), Context::cpu(0));
    }

    #[test]
    fn gpu_saved_array_falls_back_to_cpu0_here() {
        let a = NDArray::from_vec(&[2], &[3.0f32, 4.0], cpu()).unwrap();
        let mut raw = save_raw_bytes(&a).unwrap();
        raw[20..24].copy_from_slice(&2i32.to_le_bytes());
        raw[24..28].copy_from_slice(&7i32.to_le_bytes());
        let (b, info) = load_raw_bytes_detailed(&raw, &LoadOptions::default()).unwrap();
        assert_eq!((info.saved_dev_type, info.saved_dev_id), (2, 7));
        // gpu(7) exists on no machine we test on.
        assert_eq!(b.ctx(), Context::cpu(0));
        assert_eq!(b.to_vec::<f32>().unwrap(), vec![3.0, 4.0]);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let full = mxnet_list_2x3();
        for n in 0..full.len() {
            let e = load_from_bytes(&full[..n]).unwrap_err();
            assert!(e.message().contains("corrupt or truncated"), "{n}: {e}");
            assert!(e.message().contains("truncated"), "{n}: {e}");
        }
    }

    #[test]
    fn bad_list_magic() {
        let mut b = mxnet_list_2x3();
        b[0] = 0x13;
        let e = load_from_bytes(&b).unwrap_err();
        assert!(e.message().contains("list magic is 0x113, expected 0x112"), "{e}");
    }

    #[test]
    fn unknown_dtype_flags_are_named() {
        let mut b = mxnet_list_2x3();
        b[0x3c..0x40].copy_from_slice(&8i32.to_le_bytes());
        let e = load_from_bytes(&b).unwrap_err();
        assert!(e.message().contains("array 0: unknown dtype flag 8 (int16"), "{e}");
        b[0x3c..0x40].copy_from_slice(&99i32.to_le_bytes());
        let e = load_from_bytes(&b).unwrap_err();
        assert!(e.message().contains("unknown dtype flag 99"), "{e}");
    }

    #[test]
    fn unknown_storage_type() {
        let mut b = mxnet_list_2x3();
        b[0x1c..0x20].copy_from_slice(&3i32.to_le_bytes());
        let e = load_from_bytes(&b).unwrap_err();
        assert!(e.message().contains("unknown storage type 3"), "{e}");
    }

    #[test]
    fn absurd_sizes_are_rejected_before_allocating() {
        let mut b = mxnet_list_2x3();
        // dims (2^40, 2^40): the product overflows no usize check but needs far more
        // bytes than the file has.
        b[0x24..0x2c].copy_from_slice(&(1i64 << 40).to_le_bytes());
        let e = load_from_bytes(&b).unwrap_err();
        assert!(e.message().contains("truncated: data of shape (1099511627776, 3)"), "{e}");
        b[0x2c..0x34].copy_from_slice(&(1i64 << 40).to_le_bytes());
        let e = load_from_bytes(&b).unwrap_err();
        assert!(e.message().contains("too many elements") || e.message().contains("too large"), "{e}");
        let mut b = mxnet_list_2x3();
        b[0x20..0x24].copy_from_slice(&1_000_000i32.to_le_bytes());
        let e = load_from_bytes(&b).unwrap_err();
        assert!(e.message().contains("has ndim 1000000, whose dims need 8000000 bytes"), "{e}");
        let mut b = mxnet_list_2x3();
        b[0x24..0x2c].copy_from_slice(&(-5i64).to_le_bytes());
        let e = load_from_bytes(&b).unwrap_err();
        assert!(e.message().contains("has dim -5"), "{e}");
        // A zero dim does not excuse dims whose product overflows (found by the fuzz test).
        let raw = |dims: &[i64]| {
            let mut c = le(&[&0xF993FAC9u32.to_le_bytes(), &0i32.to_le_bytes()]);
            c.extend_from_slice(&(dims.len() as i32).to_le_bytes());
            dims.iter().for_each(|d| c.extend_from_slice(&d.to_le_bytes()));
            c.extend_from_slice(&le(&[&1i32.to_le_bytes(), &0i32.to_le_bytes(), &0i32.to_le_bytes()]));
            c
        };
        assert_eq!(load_raw_bytes(&raw(&[0, 1 << 62])).unwrap().shape(), &[0, 1 << 62]);
        let e = load_raw_bytes(&raw(&[1 << 62, 0, 1 << 62])).unwrap_err();
        assert!(e.message().contains("has too many elements"), "{e}");
        let mut b = mxnet_list_2x3();
        b[0x10..0x18].copy_from_slice(&u64::MAX.to_le_bytes());
        let e = load_from_bytes(&b).unwrap_err();
        assert!(e.message().contains("array 1: "), "{e}");
    }

    #[test]
    fn unknown_shapes_are_errors() {
        // V2 with ndim 0: MXNet's 'none' array.
        let mut b = mxnet_list_2x3()[..0x20].to_vec();
        b.extend_from_slice(&0i32.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        let e = load_from_bytes(&b).unwrap_err();
        assert!(e.message().contains("unknown shape"), "{e}");
        // V2 with ndim -1 (MXNet 1.9.1 crashes on this one).
        let mut b = mxnet_list_2x3();
        b[0x20..0x24].copy_from_slice(&(-1i32).to_le_bytes());
        let e = load_from_bytes(&b).unwrap_err();
        assert!(e.message().contains("has ndim -1, which is less than 0"), "{e}");
        // V3 with a -1 dim.
        let mut b = mxnet_list_2x3();
        b[0x18..0x1c].copy_from_slice(&0xF993FACAu32.to_le_bytes());
        b[0x24..0x2c].copy_from_slice(&(-1i64).to_le_bytes());
        let e = load_from_bytes(&b).unwrap_err();
        assert!(e.message().contains("unknown dim"), "{e}");
    }

    #[test]
    fn unknown_array_magic_is_read_as_legacy_and_fails_clearly() {
        let mut b = mxnet_list_2x3();
        b[0x18..0x1c].copy_from_slice(&0xF993FACBu32.to_le_bytes());
        let e = load_from_bytes(&b).unwrap_err();
        assert!(e.message().contains("array magic 0xF993FACB at byte 24 is not an NDArray magic"), "{e}");
    }

    #[test]
    fn v1_and_legacy_formats_load() {
        let data: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        let tail = le(&[&1i32.to_le_bytes(), &0i32.to_le_bytes(), &0i32.to_le_bytes(), &data]);
        let v1 = le(&[&0xF993FAC8u32.to_le_bytes(), &1i32.to_le_bytes(), &2i64.to_le_bytes(), &tail]);
        let (a, info) = load_raw_bytes_detailed(&v1, &LoadOptions::default()).unwrap();
        assert_eq!((a.shape(), info.format), (&[2usize][..], ArrayFormat::V1));
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
        let legacy = le(&[&1u32.to_le_bytes(), &2u32.to_le_bytes(), &tail]);
        let (a, info) = load_raw_bytes_detailed(&legacy, &LoadOptions::default()).unwrap();
        assert_eq!((a.shape(), info.format), (&[2usize][..], ArrayFormat::Legacy));
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
        // ndim 0 in V1 or legacy: MXNet refuses it too.
        assert!(load_raw_bytes(&le(&[&0xF993FAC8u32.to_le_bytes(), &0i32.to_le_bytes()])).is_err());
        let e = load_raw_bytes(&0u32.to_le_bytes()).unwrap_err();
        assert!(e.message().contains("no shape (ndim 0)"), "{e}");
    }

    #[test]
    fn names_count_mismatch() {
        let a = NDArray::from_vec(&[1], &[1.0f32], cpu()).unwrap();
        let mut b = save_to_bytes(&[(Some("a"), &a)]).unwrap();
        let n = b.len();
        b[n - 17..n - 9].copy_from_slice(&2u64.to_le_bytes());
        let e = load_from_bytes(&b).unwrap_err();
        assert!(e.message().contains("2 names for 1 arrays"), "{e}");
    }

    #[test]
    fn bad_name_length_and_utf8() {
        let a = NDArray::from_vec(&[1], &[1.0f32], cpu()).unwrap();
        let b = save_to_bytes(&[(Some("ab"), &a)]).unwrap();
        let n = b.len();
        let mut c = b.clone();
        c[n - 10..n - 2].copy_from_slice(&u64::MAX.to_le_bytes());
        let e = load_from_bytes(&c).unwrap_err();
        assert!(e.message().contains("name 0 of length 18446744073709551615"), "{e}");
        let mut c = b;
        c[n - 1] = 0xFF;
        let e = load_from_bytes(&c).unwrap_err();
        assert!(e.message().contains("not valid UTF-8"), "{e}");
    }

    #[test]
    fn mixed_names_are_refused() {
        let a = NDArray::from_vec(&[1], &[1.0f32], cpu()).unwrap();
        let e = save_to_bytes(&[(Some("a"), &a), (None, &a)]).unwrap_err();
        assert!(e.message().contains("1 named and 1 unnamed"), "{e}");
    }

    /// row_sparse [[0,0],[1,2],[0,0],[3,4]] as MXNet 1.9.1 saves it.
    fn rsp_bytes(rows: [i64; 2]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend(0xF993FAC9u32.to_le_bytes());
        v.extend(1i32.to_le_bytes());
        let shape = |v: &mut Vec<u8>, d: &[i64]| {
            v.extend((d.len() as i32).to_le_bytes());
            d.iter().for_each(|x| v.extend(x.to_le_bytes()));
        };
        shape(&mut v, &[2, 2]);
        shape(&mut v, &[4, 2]);
        v.extend(1i32.to_le_bytes());
        v.extend(0i32.to_le_bytes());
        v.extend(0i32.to_le_bytes());
        v.extend(6i32.to_le_bytes());
        shape(&mut v, &[2]);
        [1.0f32, 2.0, 3.0, 4.0].iter().for_each(|x| v.extend(x.to_le_bytes()));
        rows.iter().for_each(|x| v.extend(x.to_le_bytes()));
        v
    }

    #[test]
    fn row_sparse_is_densified_and_checked() {
        let (a, info) = load_raw_bytes_detailed(&rsp_bytes([1, 3]), &LoadOptions::default()).unwrap();
        assert_eq!(info.stype, StorageType::RowSparse);
        assert_eq!(a.shape(), &[4, 2]);
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 4.0]);
        let e = load_raw_bytes(&rsp_bytes([1, 4])).unwrap_err();
        assert!(e.message().contains("row index 4 is out of range for shape (4, 2)"), "{e}");
        // A stale storage-shape first dim (MXNet can write 0) is ignored, as MXNet does.
        let mut stale = rsp_bytes([1, 3]);
        stale[12..20].copy_from_slice(&0i64.to_le_bytes());
        let a = load_raw_bytes(&stale).unwrap();
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 4.0]);
        // Its trailing dims are not: they size the stored rows.
        let mut bad = rsp_bytes([1, 3]);
        bad[20..28].copy_from_slice(&5i64.to_le_bytes());
        assert!(load_raw_bytes(&bad).is_err());
        let e = load_raw_bytes_detailed(&rsp_bytes([1, 3]), &LoadOptions { max_densify_bytes: 16 }).unwrap_err();
        assert!(e.message().contains("would take 32 bytes densified, more than the limit of 16"), "{e}");
    }
}
