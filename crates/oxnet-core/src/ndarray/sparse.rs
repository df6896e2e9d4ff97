//! Sparse storage: MXNet 1.x's `row_sparse` and `csr` arrays.
//!
//! A [`SparseArray`] has a logical shape and dtype like a dense array, and one engine
//! var that orders every access to it, as a dense chunk's var does. Its parts are dense
//! arrays in MXNet's order: the values (`data`), then the aux arrays (`indices` for
//! row_sparse; `indptr` then `indices` for csr). How many values an array stores is
//! known only when the operation writing it runs, so the parts sit behind a lock and
//! that operation replaces them: an op on sparse arrays is pushed before its inputs
//! exist, exactly like an op on dense ones.
//!
//! The parts' own vars order nothing while they belong to a sparse array: they are
//! touched only inside engine operations that declared the sparse array's var, or
//! after waiting on it ([`SparseArray::parts_now`]). This module allocates and copies;
//! it knows nothing of operators.

use crate::context::Context;
use crate::dtype::{DType, Element};
use crate::engine::{self, Var};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};
use parking_lot::{Mutex, MutexGuard};
use std::sync::Arc;

/// A storage type (MXNet's ids: default 0, row_sparse 1, csr 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SType {
    Default,
    RowSparse,
    Csr,
}

impl SType {
    pub fn name(self) -> &'static str {
        match self {
            SType::Default => "default",
            SType::RowSparse => "row_sparse",
            SType::Csr => "csr",
        }
    }
    pub fn from_name(s: &str) -> Result<SType> {
        match s {
            "default" => Ok(SType::Default),
            "row_sparse" => Ok(SType::RowSparse),
            "csr" => Ok(SType::Csr),
            _ => Err(Error::new(format!("unknown storage type '{s}' (expected 'default', 'row_sparse' or 'csr')"))),
        }
    }
    pub fn id(self) -> i32 {
        match self {
            SType::Default => 0,
            SType::RowSparse => 1,
            SType::Csr => 2,
        }
    }
    pub fn from_id(id: i32) -> Result<SType> {
        match id {
            0 => Ok(SType::Default),
            1 => Ok(SType::RowSparse),
            2 => Ok(SType::Csr),
            _ => Err(Error::new(format!("unknown storage type id {id}"))),
        }
    }
    /// Number of aux arrays.
    pub fn num_aux(self) -> usize {
        match self {
            SType::Default => 0,
            SType::RowSparse => 1,
            SType::Csr => 2,
        }
    }
}

/// The values and aux arrays of a sparse array.
#[derive(Clone)]
pub struct Parts {
    pub data: NDArray,
    pub aux: Vec<NDArray>,
}

impl Parts {
    /// Number of stored rows (row_sparse) or values (csr).
    pub fn nnz(&self) -> usize {
        self.data.shape().first().copied().unwrap_or(0)
    }
}

struct Inner {
    stype: SType,
    shape: Shape,
    dtype: DType,
    aux_types: Vec<DType>,
    ctx: Context,
    var: Arc<Var>,
    parts: Mutex<Parts>,
}

/// A row_sparse or csr array; clones share the array.
#[derive(Clone)]
pub struct SparseArray {
    inner: Arc<Inner>,
    /// The autograd variable this handle is (`attach_grad` on a sparse array): ops
    /// that read it while recording take it through a recorded cast to dense. Shared
    /// by clones; [`SparseArray::detach`] makes a handle without it.
    ag: Arc<Mutex<Option<crate::autograd::Entry>>>,
}

/// The aux dtypes MXNet uses when none are given (int64 everywhere).
pub fn default_aux_types(stype: SType) -> Vec<DType> {
    vec![DType::I64; stype.num_aux()]
}

/// A fresh host array holding `data` (written directly: nobody else can see it yet).
pub fn fresh_array<T: Element>(shape: &[usize], data: &[T], ctx: Context) -> Result<NDArray> {
    let a = NDArray::empty(shape, ctx, T::DTYPE)?;
    if !ctx.is_host() {
        return Err(Error::new(format!("sparse arrays live on the CPU for now; got {ctx}")));
    }
    if !data.is_empty() {
        let p = a.chunk().storage.try_ptr()?;
        // SAFETY: the array was just allocated with exactly this many elements of T.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr() as *const u8, p, std::mem::size_of_val(data)) };
    }
    Ok(a)
}

/// A fresh zero-filled host array.
pub fn fresh_zeros(shape: &[usize], dtype: DType, ctx: Context) -> Result<NDArray> {
    let a = NDArray::empty(shape, ctx, dtype)?;
    if !ctx.is_host() {
        return Err(Error::new(format!("sparse arrays live on the CPU for now; got {ctx}")));
    }
    if a.nbytes() > 0 {
        let p = a.chunk().storage.try_ptr()?;
        // SAFETY: fresh allocation of nbytes.
        unsafe { std::ptr::write_bytes(p, 0, a.nbytes()) };
    }
    Ok(a)
}

/// The parts of an all-zero array: no stored rows or values.
pub fn zero_parts(stype: SType, shape: &[usize], dtype: DType, aux_types: &[DType], ctx: Context) -> Result<Parts> {
    match stype {
        SType::RowSparse => {
            let mut ds = shape.to_vec();
            ds[0] = 0;
            Ok(Parts { data: fresh_zeros(&ds, dtype, ctx)?, aux: vec![fresh_zeros(&[0], aux_types[0], ctx)?] })
        }
        SType::Csr => Ok(Parts {
            data: fresh_zeros(&[0], dtype, ctx)?,
            aux: vec![fresh_zeros(&[shape[0] + 1], aux_types[0], ctx)?, fresh_zeros(&[0], aux_types[1], ctx)?],
        }),
        SType::Default => Err(Error::new("zero_parts: not a sparse storage type")),
    }
}

fn check_layout(stype: SType, shape: &[usize], aux_types: &[DType]) -> Result<()> {
    match stype {
        SType::Default => return Err(Error::new("a sparse array needs storage type 'row_sparse' or 'csr'")),
        SType::RowSparse if shape.is_empty() => {
            return Err(Error::new("a row_sparse array needs at least one dimension"));
        }
        SType::Csr if shape.len() != 2 => {
            return Err(Error::new(format!("a csr array must be 2-dimensional, got shape {}", fmt_shape(shape))));
        }
        _ => {}
    }
    if aux_types.len() != stype.num_aux() {
        return Err(Error::new(format!("a {} array has {} aux arrays, got {} aux dtypes", stype.name(), stype.num_aux(), aux_types.len())));
    }
    for d in aux_types {
        if !matches!(d, DType::I64 | DType::I32 | DType::U8 | DType::I8) {
            return Err(Error::new(format!("aux (index) arrays must have an integer dtype, got {}", d.name())));
        }
    }
    Ok(())
}

impl SparseArray {
    /// An all-zero sparse array.
    pub fn zeros(stype: SType, shape: &[usize], ctx: Context, dtype: DType, aux_types: Option<&[DType]>) -> Result<SparseArray> {
        let aux_types = aux_types.map(|a| a.to_vec()).unwrap_or_else(|| default_aux_types(stype));
        check_layout(stype, shape, &aux_types)?;
        let parts = zero_parts(stype, shape, dtype, &aux_types, ctx)?;
        Ok(Self::adopt(stype, shape, dtype, aux_types, ctx, parts))
    }

    /// A sparse array owning `parts` (which nobody else may use afterwards).
    pub fn adopt(stype: SType, shape: &[usize], dtype: DType, aux_types: Vec<DType>, ctx: Context, parts: Parts) -> SparseArray {
        SparseArray {
            inner: Arc::new(Inner {
                stype,
                shape: Shape::from_slice(shape),
                dtype,
                aux_types,
                ctx,
                var: Var::new(),
                parts: Mutex::new(parts),
            }),
            ag: Arc::new(Mutex::new(None)),
        }
    }

    /// A sparse array whose parts are copies of `data` and `aux` (in MXNet's order),
    /// made in engine order after their pending writes. Checks the parts' shapes and
    /// dtypes; their values are checked by [`SparseArray::check_format`].
    pub fn from_parts(stype: SType, shape: &[usize], data: &NDArray, aux: &[NDArray]) -> Result<SparseArray> {
        let aux_types: Vec<DType> = aux.iter().map(|a| a.dtype()).collect();
        check_layout(stype, shape, &aux_types)?;
        let ctx = data.ctx();
        let name = stype.name();
        match stype {
            SType::RowSparse => {
                let idx = &aux[0];
                if idx.ndim() != 1 {
                    return Err(Error::new(format!("row_sparse indices must be 1-dimensional, got shape {}", fmt_shape(idx.shape()))));
                }
                if data.ndim() != shape.len() || data.shape()[1..] != shape[1..] || data.shape()[0] != idx.shape()[0] {
                    return Err(Error::new(format!(
                        "row_sparse data of shape {} does not fit indices of shape {} and array shape {}",
                        fmt_shape(data.shape()),
                        fmt_shape(idx.shape()),
                        fmt_shape(shape)
                    )));
                }
            }
            SType::Csr => {
                let (indptr, indices) = (&aux[0], &aux[1]);
                if data.ndim() != 1 || indices.ndim() != 1 || indptr.ndim() != 1 {
                    return Err(Error::new(format!("{name}: data, indices and indptr must be 1-dimensional")));
                }
                if indices.shape()[0] != data.shape()[0] {
                    return Err(Error::new(format!("{name}: data has {} values but indices has {}", data.shape()[0], indices.shape()[0])));
                }
                if indptr.shape()[0] != shape[0] + 1 {
                    return Err(Error::new(format!(
                        "{name}: indptr must have {} entries (rows + 1) for shape {}, got {}",
                        shape[0] + 1,
                        fmt_shape(shape),
                        indptr.shape()[0]
                    )));
                }
            }
            SType::Default => unreachable!(),
        }
        for a in aux {
            if a.ctx() != ctx {
                return Err(Error::new(format!("{name}: all parts must live on the same context")));
            }
        }
        let new_data = NDArray::empty(data.shape(), ctx, data.dtype())?;
        let new_aux: Vec<NDArray> = aux.iter().map(|a| NDArray::empty(a.shape(), ctx, a.dtype())).collect::<Result<_>>()?;
        let out = Self::adopt(stype, shape, data.dtype(), aux_types, ctx, Parts { data: new_data.clone(), aux: new_aux.clone() });
        let mut reads: Vec<Arc<Var>> = vec![data.var().clone()];
        reads.extend(aux.iter().map(|a| a.var().clone()));
        let srcs: Vec<NDArray> = std::iter::once(data.clone()).chain(aux.iter().cloned()).collect();
        let dsts: Vec<NDArray> = std::iter::once(new_data).chain(new_aux).collect();
        engine::push(
            move || {
                for (s, d) in srcs.iter().zip(&dsts) {
                    copy_host(s, d)?;
                }
                Ok(())
            },
            &reads,
            std::slice::from_ref(out.var()),
            false,
        )?;
        Ok(out)
    }

    pub fn stype(&self) -> SType {
        self.inner.stype
    }
    pub fn shape(&self) -> &[usize] {
        &self.inner.shape
    }
    pub fn dtype(&self) -> DType {
        self.inner.dtype
    }
    pub fn aux_types(&self) -> &[DType] {
        &self.inner.aux_types
    }
    pub fn ctx(&self) -> Context {
        self.inner.ctx
    }
    pub fn var(&self) -> &Arc<Var> {
        &self.inner.var
    }
    /// True when both handles are the same array.
    pub fn same(&self, other: &SparseArray) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
    /// The parts, for code running inside an engine operation that declared this
    /// array's var.
    pub fn lock(&self) -> MutexGuard<'_, Parts> {
        self.inner.parts.lock()
    }
    /// Replaces the parts (inside an engine operation that writes this array).
    pub fn set_parts(&self, parts: Parts) {
        *self.inner.parts.lock() = parts;
    }
    /// The autograd entry of this array when it is a variable.
    pub fn ag_entry(&self) -> Option<crate::autograd::Entry> {
        self.ag.lock().clone()
    }
    pub fn set_ag_entry(&self, e: Option<crate::autograd::Entry>) {
        *self.ag.lock() = e;
    }
    /// The same array (same storage) outside any autograd graph.
    pub fn detach(&self) -> SparseArray {
        SparseArray { inner: self.inner.clone(), ag: Arc::new(Mutex::new(None)) }
    }
    /// Waits for pending writes (raising a deferred error), then the parts.
    pub fn parts_now(&self) -> Result<Parts> {
        self.wait_to_read()?;
        Ok(self.lock().clone())
    }
    pub fn wait_to_read(&self) -> Result<()> {
        engine::wait_for_read(self.var())
    }
    pub fn wait_to_write(&self) -> Result<()> {
        engine::wait_for_write(self.var())
    }
    /// Stored rows (row_sparse) or values (csr), after pending writes.
    pub fn nnz(&self) -> Result<usize> {
        Ok(self.parts_now()?.nnz())
    }
}

impl std::fmt::Debug for SparseArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SparseArray({} {} {} @{})", self.stype().name(), fmt_shape(self.shape()), self.dtype().name(), self.ctx())
    }
}

/// Copies `src` into `dst` (same byte size, host) inside an engine operation that
/// ordered both.
pub fn copy_host(src: &NDArray, dst: &NDArray) -> Result<()> {
    let n = src.nbytes();
    if n != dst.nbytes() {
        return Err(Error::new("copy_host: size mismatch"));
    }
    if n == 0 {
        return Ok(());
    }
    let s = src.chunk().storage.try_ptr()?;
    let d = dst.chunk().storage.try_ptr()?;
    // SAFETY: both arrays hold n bytes from their offsets; the caller holds their vars
    // (or owns them).
    unsafe { std::ptr::copy_nonoverlapping(s.add(src.offset() * src.dtype().size()), d.add(dst.offset() * dst.dtype().size()), n) };
    Ok(())
}

/// The elements of a host array as a slice, inside an engine operation that ordered it.
///
/// # Safety
/// The caller holds the array's var (or the sparse var owning it) for reading, and
/// `T` is the array's element type.
pub unsafe fn host_slice<T>(a: &NDArray) -> Result<&[T]> {
    let p = a.chunk().storage.try_ptr()?.add(a.offset() * a.dtype().size());
    Ok(std::slice::from_raw_parts(p as *const T, a.size()))
}

/// Like [`host_slice`], mutable.
///
/// # Safety
/// The caller holds the var for writing and nothing else aliases the array.
#[allow(clippy::mut_from_ref)]
pub unsafe fn host_slice_mut<T>(a: &NDArray) -> Result<&mut [T]> {
    let p = a.chunk().storage.try_ptr()?.add(a.offset() * a.dtype().size());
    Ok(std::slice::from_raw_parts_mut(p as *mut T, a.size()))
}

/// A dense or a sparse array: what an op dispatching on storage types sees.
#[derive(Clone, Debug)]
pub enum AnyArray {
    Dense(NDArray),
    Sparse(SparseArray),
}

impl AnyArray {
    pub fn stype(&self) -> SType {
        match self {
            AnyArray::Dense(_) => SType::Default,
            AnyArray::Sparse(s) => s.stype(),
        }
    }
    pub fn shape(&self) -> &[usize] {
        match self {
            AnyArray::Dense(a) => a.shape(),
            AnyArray::Sparse(s) => s.shape(),
        }
    }
    pub fn dtype(&self) -> DType {
        match self {
            AnyArray::Dense(a) => a.dtype(),
            AnyArray::Sparse(s) => s.dtype(),
        }
    }
    pub fn ctx(&self) -> Context {
        match self {
            AnyArray::Dense(a) => a.ctx(),
            AnyArray::Sparse(s) => s.ctx(),
        }
    }
    pub fn var(&self) -> &Arc<Var> {
        match self {
            AnyArray::Dense(a) => a.var(),
            AnyArray::Sparse(s) => s.var(),
        }
    }
    pub fn dense(&self) -> Option<&NDArray> {
        match self {
            AnyArray::Dense(a) => Some(a),
            AnyArray::Sparse(_) => None,
        }
    }
    pub fn sparse(&self) -> Option<&SparseArray> {
        match self {
            AnyArray::Dense(_) => None,
            AnyArray::Sparse(s) => Some(s),
        }
    }
}

/// The values of an index array (integer, or float truncated toward zero) as i64.
/// Only inside an engine operation that ordered `a`, or after waiting on its owner.
pub fn index_values(a: &NDArray) -> Result<Vec<i64>> {
    // SAFETY: see above; typed by the array's dtype.
    unsafe {
        Ok(match a.dtype() {
            DType::I64 => host_slice::<i64>(a)?.to_vec(),
            DType::I32 => host_slice::<i32>(a)?.iter().map(|&v| v as i64).collect(),
            DType::U8 | DType::Bool => host_slice::<u8>(a)?.iter().map(|&v| v as i64).collect(),
            DType::I8 => host_slice::<i8>(a)?.iter().map(|&v| v as i64).collect(),
            DType::F32 => host_slice::<f32>(a)?.iter().map(|&v| v as i64).collect(),
            DType::F64 => host_slice::<f64>(a)?.iter().map(|&v| v as i64).collect(),
            DType::F16 => host_slice::<half::f16>(a)?.iter().map(|&v| v.to_f64() as i64).collect(),
            DType::BF16 => host_slice::<half::bf16>(a)?.iter().map(|&v| v.to_f64() as i64).collect(),
        })
    }
}

impl SparseArray {
    /// MXNet's `check_format`: the parts' shapes always; with `full_check`, the
    /// indices too (csr: indptr starts at 0, never decreases and ends at nnz; column
    /// indices in range and increasing within each row. row_sparse: row indices in
    /// range and increasing). Waits for pending writes.
    pub fn check_format(&self, full_check: bool) -> Result<()> {
        let p = self.parts_now()?;
        let shape = self.shape();
        let bad = |m: String| Err(Error::op("check_format", m));
        match self.stype() {
            SType::Csr => {
                let (indptr, indices) = (&p.aux[0], &p.aux[1]);
                if indptr.ndim() != 1 || indptr.shape()[0] != shape[0] + 1 {
                    return bad(format!("csr indptr must have {} entries, got shape {}", shape[0] + 1, fmt_shape(indptr.shape())));
                }
                if indices.shape() != p.data.shape() {
                    return bad(format!(
                        "csr indices (shape {}) and data (shape {}) must have the same length",
                        fmt_shape(indices.shape()),
                        fmt_shape(p.data.shape())
                    ));
                }
                if !full_check {
                    return Ok(());
                }
                let ip = index_values(indptr)?;
                let ix = index_values(indices)?;
                if ip[0] != 0 {
                    return bad(format!("csr indptr must start at 0, got {}", ip[0]));
                }
                if *ip.last().unwrap() != ix.len() as i64 {
                    return bad(format!("csr indptr must end at nnz = {}, got {}", ix.len(), ip.last().unwrap()));
                }
                for r in 0..shape[0] {
                    let (a, b) = (ip[r], ip[r + 1]);
                    if b < a || b > ix.len() as i64 || a < 0 {
                        return bad(format!(
                            "csr indptr must be non-decreasing and within [0, nnz]: indptr[{r}] = {a}, indptr[{}] = {b}",
                            r + 1
                        ));
                    }
                    let row = &ix[a as usize..b as usize];
                    for (k, &c) in row.iter().enumerate() {
                        if c < 0 || c >= shape[1] as i64 {
                            return bad(format!("csr column index {c} in row {r} is out of range [0, {})", shape[1]));
                        }
                        if k > 0 && row[k - 1] >= c {
                            return bad(format!("csr column indices of row {r} must be sorted and unique"));
                        }
                    }
                }
            }
            SType::RowSparse => {
                let idx = &p.aux[0];
                if idx.ndim() != 1 || idx.shape()[0] != p.nnz() {
                    return bad(format!(
                        "row_sparse indices (shape {}) must have one entry per stored row ({})",
                        fmt_shape(idx.shape()),
                        p.nnz()
                    ));
                }
                if !full_check {
                    return Ok(());
                }
                let ix = index_values(idx)?;
                for (k, &r) in ix.iter().enumerate() {
                    if r < 0 || r >= shape[0] as i64 {
                        return bad(format!("row_sparse row index {r} is out of range [0, {})", shape[0]));
                    }
                    if k > 0 && ix[k - 1] >= r {
                        return bad("row_sparse indices must be sorted and unique".to_string());
                    }
                }
            }
            SType::Default => {}
        }
        Ok(())
    }
}
