//! NDArray: a chunk of storage with its engine var, plus offset, shape and dtype.
//!
//! Arrays are always row-major and contiguous from their offset, as in MXNet 1.x:
//! reshapes and slices along the first axis are views that share the chunk (and its
//! var); every other slice is a copy made by an operator. Reading or writing the
//! data from the host goes through the engine ([`NDArray::read_bytes`],
//! [`NDArray::write_bytes`]); this module never bypasses it.

use crate::context::Context;
use crate::dtype::{DType, Element};
use crate::engine::{self, Var};
use crate::error::{Error, Result};
use crate::shape::{self, fmt_shape, Shape};
use crate::storage::Storage;
use std::sync::Arc;

pub mod sparse;
pub use sparse::{AnyArray, SType, SparseArray};

/// Memory plus the var that orders every access to it.
pub struct Chunk {
    pub storage: Storage,
    pub var: Arc<Var>,
}

#[derive(Clone)]
pub struct NDArray {
    chunk: Arc<Chunk>,
    offset: usize,
    shape: Shape,
    dtype: DType,
    /// Autograd identity: the recorded node (and output index) that produced this
    /// array, or the variable node `attach_grad` made. None for arrays outside any
    /// graph; views made by [`NDArray::reshape_view`] and friends start with none.
    ag: Option<crate::autograd::Entry>,
}

impl NDArray {
    /// An uninitialised array (its memory may hold anything).
    pub fn empty(shape: &[usize], ctx: Context, dtype: DType) -> Result<NDArray> {
        let bytes = shape::checked_bytes(shape, dtype.size()).ok_or_else(|| {
            Error::new(format!("an array of shape {} of {} is too large: more bytes than memory can address", fmt_shape(shape), dtype.name()))
        })?;
        let storage = Storage::alloc(ctx, bytes)?;
        Ok(NDArray { chunk: Arc::new(Chunk { storage, var: Var::new() }), offset: 0, shape: Shape::from_slice(shape), dtype, ag: None })
    }

    /// An array over foreign memory (a NumPy array's data, a DLPack tensor): `ptr`
    /// holds the elements of `shape` row-major, and `owner` keeps them alive (see
    /// [`Storage::foreign`]). `what` names the caller in errors. The address must be
    /// aligned to the element size.
    ///
    /// # Safety
    /// As [`Storage::foreign`]: `ptr` must hold `shape`'s elements of `dtype` on
    /// `ctx` for as long as `owner` lives.
    pub unsafe fn from_foreign(
        what: &str,
        ctx: Context,
        ptr: *mut u8,
        shape: &[usize],
        dtype: DType,
        owner: Box<dyn Send + Sync>,
    ) -> Result<NDArray> {
        let bytes = shape::checked_bytes(shape, dtype.size())
            .ok_or_else(|| Error::new(format!("{what}: an array of shape {} is too large", fmt_shape(shape))))?;
        if (ptr as usize) % dtype.size() != 0 {
            return Err(Error::new(format!(
                "{what}: the data at address {ptr:p} is not aligned to its element size ({} bytes for {})",
                dtype.size(),
                dtype.name()
            )));
        }
        let storage = Storage::foreign(ctx, ptr, bytes, owner).map_err(|e| Error::new(format!("{what}: {}", e.message())))?;
        Ok(NDArray { chunk: Arc::new(Chunk { storage, var: Var::new() }), offset: 0, shape: Shape::from_slice(shape), dtype, ag: None })
    }

    /// An array holding a copy of `data`.
    pub fn from_vec<T: Element>(shape: &[usize], data: &[T], ctx: Context) -> Result<NDArray> {
        if shape::size(shape) != data.len() {
            return Err(Error::new(format!(
                "from_vec: shape {} needs {} values, got {}",
                fmt_shape(shape),
                shape::size(shape),
                data.len()
            )));
        }
        let a = NDArray::empty(shape, ctx, T::DTYPE)?;
        // SAFETY: plain-old-data reinterpretation of a slice of T as bytes.
        let bytes = unsafe { std::slice::from_raw_parts(data.as_ptr() as *const u8, std::mem::size_of_val(data)) };
        a.write_bytes(bytes)?;
        Ok(a)
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    pub fn size(&self) -> usize {
        shape::size(&self.shape)
    }
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    pub fn ctx(&self) -> Context {
        self.chunk.storage.ctx()
    }
    /// The chunk behind this array (shared by its views).
    pub fn chunk(&self) -> &Arc<Chunk> {
        &self.chunk
    }
    pub fn var(&self) -> &Arc<Var> {
        &self.chunk.var
    }
    pub fn nbytes(&self) -> usize {
        self.size() * self.dtype.size()
    }
    /// Offset of the first element in the chunk, in elements.
    pub fn offset(&self) -> usize {
        self.offset
    }
    /// Pointer to the first element. Only to be dereferenced inside an engine
    /// operation that declared this array's var.
    pub fn data_ptr(&self) -> *mut u8 {
        // SAFETY: offset is within the chunk by construction.
        unsafe { self.chunk.storage.ptr().add(self.offset * self.dtype.size()) }
    }
    /// True when both arrays are backed by the same chunk.
    pub fn same_chunk(&self, other: &NDArray) -> bool {
        Arc::ptr_eq(&self.chunk, &other.chunk)
    }
    /// True when the element ranges of the two arrays overlap in memory.
    pub fn overlaps(&self, other: &NDArray) -> bool {
        if !self.same_chunk(other) {
            return false;
        }
        let (a0, a1) = (self.offset * self.dtype.size(), (self.offset * self.dtype.size()) + self.nbytes());
        let (b0, b1) = (other.offset * other.dtype.size(), (other.offset * other.dtype.size()) + other.nbytes());
        a0 < b1 && b0 < a1
    }

    /// A view with a new shape of the same size (shares memory).
    pub fn reshape_view(&self, shape: &[usize]) -> Result<NDArray> {
        if shape::size(shape) != self.size() {
            return Err(Error::op(
                "Reshape",
                format!("cannot reshape array of shape {} into shape {}", fmt_shape(&self.shape), fmt_shape(shape)),
            ));
        }
        Ok(NDArray { chunk: self.chunk.clone(), offset: self.offset, shape: Shape::from_slice(shape), dtype: self.dtype, ag: None })
    }

    /// The view `self[begin:end]` along the first axis (shares memory).
    pub fn slice_view(&self, begin: usize, end: usize) -> Result<NDArray> {
        if self.ndim() == 0 {
            return Err(Error::op("_slice", "cannot slice a 0-d array"));
        }
        if begin > end || end > self.shape[0] {
            return Err(Error::op(
                "_slice",
                format!("slice [{begin}:{end}] out of range for axis 0 of array with shape {}", fmt_shape(&self.shape)),
            ));
        }
        let row: usize = self.shape[1..].iter().product();
        let mut shape = self.shape.clone();
        shape[0] = end - begin;
        Ok(NDArray { chunk: self.chunk.clone(), offset: self.offset + begin * row, shape, dtype: self.dtype, ag: None })
    }

    /// The view `self[i]` (drops the first axis; shares memory).
    pub fn at(&self, i: usize) -> Result<NDArray> {
        if self.ndim() == 0 || i >= self.shape[0] {
            return Err(Error::op(
                "_at",
                format!("index {i} is out of bounds for axis 0 with size {}", self.shape.first().copied().unwrap_or(0)),
            ));
        }
        let v = self.slice_view(i, i + 1)?;
        let shape: Shape = Shape::from_slice(&self.shape[1..]);
        Ok(NDArray { shape, ..v })
    }

    /// The autograd entry (see [`crate::autograd`]).
    pub fn ag_entry(&self) -> Option<&crate::autograd::Entry> {
        self.ag.as_ref()
    }
    /// Replaces the autograd entry.
    pub fn set_ag_entry(&mut self, e: Option<crate::autograd::Entry>) {
        self.ag = e;
    }
    /// The same array (same memory) outside any autograd graph (MXNet's `detach`).
    pub fn detach(&self) -> NDArray {
        NDArray { ag: None, ..self.clone() }
    }

    /// Blocks until pending writes finish; returns (and clears) a deferred error.
    pub fn wait_to_read(&self) -> Result<()> {
        engine::wait_for_read(self.var())?;
        if !self.ctx().is_host() {
            // The engine has run the op that enqueued the last write; wait for the device too.
            crate::storage::cuda::device(self.ctx())?.synchronize()?;
        }
        Ok(())
    }
    /// Blocks until every pending operation on this array finishes.
    pub fn wait_to_write(&self) -> Result<()> {
        engine::wait_for_write(self.var())
    }

    /// Copies the data out into `dst` (exactly `nbytes()` long), in engine order.
    pub fn read_into(&self, dst: &mut [u8]) -> Result<()> {
        if dst.len() != self.nbytes() {
            return Err(Error::new(format!("read_into: buffer of {} bytes for an array of {} bytes", dst.len(), self.nbytes())));
        }
        let ctx = self.ctx();
        let src = self.data_ptr() as usize;
        let dptr = dst.as_mut_ptr() as usize;
        let n = dst.len();
        let keep = self.clone();
        engine::run_sync(
            Box::new(move || {
                let _keep = keep;
                // SAFETY: the engine holds this array's var for reading; dst outlives the call.
                let dst = unsafe { std::slice::from_raw_parts_mut(dptr as *mut u8, n) };
                if !ctx.is_host() {
                    return crate::storage::cuda::device(ctx)?.copy_dtoh(dst, src as u64);
                }
                // SAFETY: as above; src holds n bytes.
                unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst.as_mut_ptr(), n) };
                Ok(())
            }),
            std::slice::from_ref(self.var()),
            &[],
        )
    }

    /// The data as bytes (blocks; raises a deferred error).
    pub fn read_bytes(&self) -> Result<Vec<u8>> {
        let mut v = vec![0u8; self.nbytes()];
        self.read_into(&mut v)?;
        Ok(v)
    }

    /// The data as a vector of `T` (which must be this array's element type).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype && !(self.dtype == DType::Bool && T::DTYPE == DType::U8) {
            return Err(Error::new(format!("to_vec: array has dtype {}, asked for {}", self.dtype.name(), T::DTYPE.name())));
        }
        let mut v: Vec<T> = Vec::with_capacity(self.size());
        // SAFETY: the buffer is fully written by read_into before set_len's values are read.
        unsafe {
            let bytes = std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, self.nbytes());
            self.read_into(bytes)?;
            v.set_len(self.size());
        }
        Ok(v)
    }

    /// Overwrites the data with `src` (exactly `nbytes()` long), in engine order.
    pub fn write_bytes(&self, src: &[u8]) -> Result<()> {
        if src.len() != self.nbytes() {
            return Err(Error::new(format!(
                "cannot copy {} bytes into an array of shape {} and dtype {} ({} bytes)",
                src.len(),
                fmt_shape(&self.shape),
                self.dtype.name(),
                self.nbytes()
            )));
        }
        let ctx = self.ctx();
        let dst = self.data_ptr() as usize;
        let sptr = src.as_ptr() as usize;
        let n = src.len();
        let keep = self.clone();
        engine::run_sync(
            Box::new(move || {
                let _keep = keep;
                // SAFETY: the engine holds this array's var for writing; src outlives the call.
                let src = unsafe { std::slice::from_raw_parts(sptr as *const u8, n) };
                if !ctx.is_host() {
                    return crate::storage::cuda::device(ctx)?.copy_htod(dst as u64, src);
                }
                // SAFETY: as above; dst holds n bytes.
                unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst as *mut u8, n) };
                Ok(())
            }),
            &[],
            std::slice::from_ref(self.var()),
        )
    }
}

impl std::fmt::Debug for NDArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NDArray({} {} @{})", fmt_shape(&self.shape), self.dtype.name(), self.ctx())
    }
}
