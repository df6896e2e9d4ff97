//! Helpers shared by the op families: common inference rules and dtype dispatch.

use super::{InferArgs, Params};
use crate::dtype::DType;
use crate::error::Result;
use crate::shape::{fmt_shape, Shape};

/// One output with the first input's shape and dtype.
pub fn infer_like_first(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    Ok(vec![(Shape::from_slice(a.shapes[0]), a.dtypes[0])])
}

/// Every input must have the first input's dtype; returns it.
pub fn check_same_dtype(a: &InferArgs) -> Result<DType> {
    let d = a.dtypes[0];
    for (i, t) in a.dtypes.iter().enumerate().skip(1) {
        if *t != d {
            return Err(a.err(format!(
                "dtype mismatch: input 0 is {} but input {i} is {} (all inputs must have the same dtype)",
                d.name(),
                t.name()
            )));
        }
    }
    Ok(d)
}

/// Every input must have the first input's shape; returns it.
pub fn check_same_shape(a: &InferArgs) -> Result<Shape> {
    let s = a.shapes[0];
    for (i, t) in a.shapes.iter().enumerate().skip(1) {
        if *t != s {
            return Err(a.err(format!("shape mismatch: input 0 has shape {} but input {i} has shape {}", fmt_shape(s), fmt_shape(t))));
        }
    }
    Ok(Shape::from_slice(s))
}

/// Equal shapes and dtypes, one output like them.
pub fn infer_same(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let s = check_same_shape(a)?;
    let d = check_same_dtype(a)?;
    Ok(vec![(s, d)])
}

/// A blob's elements as f64 (for the ops that compute in f64: detection boxes,
/// small NN layers; not for hot paths).
pub fn read_f64(b: &super::Blob) -> Vec<f64> {
    use crate::dtype::Element;
    // SAFETY: a blob holds its elements; nothing writes it during the call.
    crate::with_dtype!(b.dtype, T, { unsafe { b.slice::<T>() }.iter().map(|v| v.to_f64()).collect() })
}

/// Stores `v` into a blob of any element type (`v` holds the blob's size).
pub fn write_f64(b: &super::Blob, v: &[f64]) {
    use crate::dtype::Element;
    // SAFETY: the output is ours to write and holds v.len() elements.
    crate::with_dtype!(b.dtype, T, {
        for (d, s) in unsafe { b.slice_mut::<T>() }.iter_mut().zip(v) {
            *d = T::from_f64(*s);
        }
    })
}

/// An array's elements as f64, waiting for pending writes (for the few ops whose
/// output shape depends on input values; see [`super::OpDef::dynamic_shape`]).
pub fn ndarray_f64(a: &crate::ndarray::NDArray) -> Result<Vec<f64>> {
    use crate::dtype::Element;
    let bytes = a.read_bytes()?;
    let n = a.size();
    crate::with_dtype!(a.dtype(), T, {
        let mut v: Vec<T> = Vec::with_capacity(n);
        // SAFETY: `bytes` holds exactly n elements of T, copied without alignment needs.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), v.as_mut_ptr().cast::<u8>(), n * std::mem::size_of::<T>());
            v.set_len(n);
        }
        Ok(v.iter().map(|x| x.to_f64()).collect())
    })
}

/// Backward shape inference of ops whose inputs all share one shape (MXNet's
/// `ElemwiseShape`): a known input gives the unknown ones. Known inputs that
/// disagree are left to the forward inference to report.
pub fn fill_same_shape(_: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let Some(first) = shapes.iter().flatten().next().cloned() else { return Ok(()) };
    if shapes.iter().flatten().any(|s| *s != first) {
        return Ok(());
    }
    for s in shapes.iter_mut().filter(|s| s.is_none()) {
        *s = Some(first.clone());
    }
    Ok(())
}

/// The element types the tuned detection kernels (`box_nms`, `ROIAlign`,
/// deformable convolution) compute in: float64 arrays in f64, every other float
/// type in f32 (float16/bfloat16 are widened on read and narrowed on write).
pub trait Real:
    crate::kernels::cpu::gemm::GemmElem
    + crate::dtype::Element
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + std::ops::AddAssign
    + std::iter::Sum
{
    fn of(v: f64) -> Self;
    fn get(self) -> f64;
    fn floor(self) -> Self;
}

macro_rules! impl_real {
    ($t:ty) => {
        impl Real for $t {
            #[inline(always)]
            fn of(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn get(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
        }
    };
}
impl_real!(f32);
impl_real!(f64);

/// A blob's elements as `T`: borrowed when the blob holds `T`, else converted.
pub fn read_as<T: Real>(b: &super::Blob) -> std::borrow::Cow<'_, [T]> {
    use crate::dtype::Element;
    if b.dtype == <T as Element>::DTYPE {
        // SAFETY: a blob holds its elements; nothing writes it during the call.
        return std::borrow::Cow::Borrowed(unsafe { b.slice::<T>() });
    }
    // SAFETY: as above.
    crate::with_dtype!(b.dtype, U, { std::borrow::Cow::Owned(unsafe { b.slice::<U>() }.iter().map(|v| T::of(v.to_f64())).collect()) })
}

/// Runs `f` on the output blob's elements as `T` (in place when the blob holds `T`,
/// else through a buffer converted afterwards). `f` must write every element.
pub fn write_as<T: Real>(b: &super::Blob, f: impl FnOnce(&mut [T])) {
    use crate::dtype::Element;
    if b.dtype == <T as Element>::DTYPE {
        // SAFETY: the output is ours to write.
        f(unsafe { b.slice_mut::<T>() });
        return;
    }
    let mut v = vec![T::of(0.0); b.size()];
    f(&mut v);
    // SAFETY: the output is ours to write and holds v.len() elements.
    crate::with_dtype!(b.dtype, U, {
        for (d, s) in unsafe { b.slice_mut::<U>() }.iter_mut().zip(&v) {
            *d = U::from_f64(s.get());
        }
    })
}
