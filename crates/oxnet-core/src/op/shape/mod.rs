//! Shape and layout ops: `Reshape`, `Flatten`, `expand_dims`, `squeeze`,
//! `transpose`, `SwapAxis`, `Concat`, `stack`, `SliceChannel`, `slice`,
//! `slice_axis`, `tile`, `repeat`, `reverse`, `broadcast_to`, `broadcast_axis`,
//! `broadcast_like`, and the slice assignments behind `NDArray.__setitem__`
//! (`_slice_assign`, `_slice_assign_scalar`).
//!
//! Every data movement here is one or more strided copies
//! ([`crate::kernels::cpu::layout`]); the ops only work out shapes and strides.
//!
//! One file per family: `reshape.rs` (`reshape_like`, `Reshape`, `Flatten`,
//! `expand_dims`, `squeeze`), `transpose.rs` (`transpose`, `SwapAxis`),
//! `concat_split.rs` (`Concat`, `stack`, `SliceChannel`), `slicing.rs` (`slice`,
//! `slice_axis`, `_slice_assign`, `_slice_assign_scalar`), `tile_repeat.rs` (`tile`,
//! `repeat`, `reverse`) and `broadcast.rs` (`broadcast_to`, `broadcast_axis`,
//! `broadcast_like`). Helpers they share live here.

mod broadcast;
mod concat_split;
mod reshape;
mod slicing;
#[cfg(test)]
mod tests;
mod tile_repeat;
mod transpose;

pub(super) use concat_split::{concat_layout, stack_axis};
pub use reshape::infer_reshape;
pub(super) use slicing::{slice_axis_range, spec_in_compute};
pub(super) use tile_repeat::{repeat_dims, reverse_axes, tile_dims};

use super::copy::copy_bytes;
use super::{Arity, Blob, InferArgs, OpCall, Registry};
use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::cpu::layout::strided_copy;
use crate::shape::{fmt_shape, Shape};

type Out = Result<Vec<(Shape, DType)>>;

const DATA: Arity = Arity::Fixed(&["data"]);

/// `(2, -1, None)`: a parameter tuple the way MXNet prints it.
fn fmt_spec(t: &[i64]) -> String {
    let items: Vec<String> = t.iter().map(|x| if *x == i64::MIN { "None".to_string() } else { x.to_string() }).collect();
    match items.len() {
        1 => format!("({},)", items[0]),
        _ => format!("({})", items.join(", ")),
    }
}

/// Normalises `axis` against `ndim` (negative counts from the end).
fn norm_axis(a: &InferArgs, name: &str, axis: i64, ndim: usize, shape: &[usize]) -> Result<usize> {
    let n = ndim as i64;
    let v = if axis < 0 { axis + n } else { axis };
    if v < 0 || v >= n {
        return Err(a.err(format!(
            "{name}={axis} is out of bounds for an array of {ndim} dimension(s) (shape {}); it must be in [{}, {})",
            fmt_shape(shape),
            -n,
            n
        )));
    }
    Ok(v as usize)
}

/// Pointer to element `off` of a blob.
fn at(b: &Blob, off: isize) -> *mut u8 {
    // SAFETY: callers only form offsets inside the blob.
    unsafe { b.ptr.offset(off * b.dtype.size() as isize) }
}

/// Copies a strided view of `src` into a strided view of `dst`.
fn copy_view(shape: &[usize], src: &Blob, soff: isize, ss: &[isize], dst: &Blob, doff: isize, ds: &[isize]) {
    // SAFETY: the ops build views inside their blobs; the engine gives exclusive
    // access to the outputs, and invoke never hands an op an output overlapping an
    // input unless the op handles it (the `inplace` ops below check).
    unsafe { strided_copy(src.dtype.size(), shape, at(src, soff), ss, at(dst, doff), ds) }
}

/// Whole-buffer copy (for ops that only change the shape). A no-op in place.
fn copy_all(c: &mut OpCall) -> Result<()> {
    let (a, o) = (&c.inputs[0], &c.outputs[0]);
    copy_bytes(a.ptr, o.ptr, o.size() * o.dtype.size());
    Ok(())
}

pub(super) fn register(r: &mut Registry) {
    reshape::register(r);
    transpose::register(r);
    concat_split::register(r);
    slicing::register(r);
    tile_repeat::register(r);
    broadcast::register(r);
}
