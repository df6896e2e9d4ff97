//! Shapes: small inline vectors of dimensions, and the helpers the ops share
//! (sizes, row-major strides, axis normalisation, broadcasting).

use crate::error::{Error, Result};
use smallvec::SmallVec;

pub type Shape = SmallVec<[usize; 6]>;

pub fn shape_of(dims: &[usize]) -> Shape {
    Shape::from_slice(dims)
}

pub fn size(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// The bytes of an array of `shape` with `elem`-byte elements, or None when that does
/// not fit in the address space (more than `isize::MAX` bytes, or an element count
/// that overflows).
pub fn checked_bytes(shape: &[usize], elem: usize) -> Option<usize> {
    let n = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))?;
    n.checked_mul(elem).filter(|&b| b <= isize::MAX as usize)
}

/// Row-major strides in elements.
pub fn strides(shape: &[usize]) -> Shape {
    let mut s: Shape = smallvec::smallvec![0; shape.len()];
    let mut acc = 1;
    for i in (0..shape.len()).rev() {
        s[i] = acc;
        acc *= shape[i];
    }
    s
}

/// `(2, 3)` the way MXNet prints shapes in messages.
pub fn fmt_shape(shape: &[usize]) -> String {
    match shape.len() {
        1 => format!("({},)", shape[0]),
        _ => format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

/// Normalises a possibly negative axis against `ndim`.
pub fn norm_axis(axis: i64, ndim: usize, op: &str) -> Result<usize> {
    let n = ndim as i64;
    let a = if axis < 0 { axis + n } else { axis };
    if a < 0 || a >= n.max(1) && !(n == 0 && a == 0) {
        return Err(Error::op(op, format!("axis {axis} is out of bounds for array of dimension {ndim}")));
    }
    Ok(a as usize)
}

/// NumPy broadcasting of two shapes.
pub fn broadcast_shapes(a: &[usize], b: &[usize], op: &str) -> Result<Shape> {
    let n = a.len().max(b.len());
    let mut out: Shape = smallvec::smallvec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::op(op, format!("operands could not be broadcast together with shapes {} {}", fmt_shape(a), fmt_shape(b))));
        };
    }
    Ok(out)
}
