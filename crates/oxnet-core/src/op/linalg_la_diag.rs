//! `_linalg_sumlogdiag`, `_linalg_extractdiag`, `_linalg_makediag`,
//! `_linalg_extracttrian` and `_linalg_maketrian`: shape inference and kernels (registered
//! in `linalg_la.rs`, whose helpers they use).

use super::*;
// ---- sumlogdiag, diagonals and triangles -------------------------------------------

pub(super) fn scalar_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    square(a, 0, "A")?;
    Ok(vec![(scalar_shape(a.shapes[0]), la_dtype(a)?)])
}

pub(super) fn sumlogdiag_compute(c: &mut OpCall) -> Result<()> {
    let s = &c.inputs[0].shape;
    let n = s[s.len() - 1];
    let (a, o) = (Buf::of(&c.inputs[0]), Buf::of(&c.outputs[0]));
    for i in 0..batch_of(s) {
        o.set(i, (0..n).map(|j| a.get(i * n * n + j * (n + 1)).ln()).sum());
    }
    Ok(())
}

/// `offset` checked against the order `n` of the matrices.
pub(super) fn offset_of(a: &InferArgs, n: usize) -> Result<usize> {
    let k = a.params.int("offset");
    if k.unsigned_abs() as usize >= n.max(1) {
        return Err(a.err(format!(
            "offset {k} is out of range for matrices of order {n} (|offset| must be smaller than {n}), input shape {}",
            fmt_shape(a.shapes[0])
        )));
    }
    Ok(k.unsigned_abs() as usize)
}

pub(super) fn extractdiag_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let n = square(a, 0, "A")?;
    let k = offset_of(a, n)?;
    Ok(vec![(with_last(a.shapes[0], 2, &[n - k]), la_dtype(a)?)])
}

/// The (row, column) of element `j` of diagonal `offset`.
pub(super) fn diag_pos(j: usize, offset: i64) -> (usize, usize) {
    let k = offset.unsigned_abs() as usize;
    if offset >= 0 {
        (j, j + k)
    } else {
        (j + k, j)
    }
}

pub(super) fn extractdiag_compute(c: &mut OpCall) -> Result<()> {
    let off = c.params.int("offset");
    let s = &c.inputs[0].shape;
    let n = s[s.len() - 1];
    let m = n - off.unsigned_abs() as usize;
    let (a, o) = (Buf::of(&c.inputs[0]), Buf::of(&c.outputs[0]));
    for i in 0..batch_of(s) {
        for j in 0..m {
            let (r, q) = diag_pos(j, off);
            o.set(i * m + j, a.get(i * n * n + r * n + q));
        }
    }
    Ok(())
}

pub(super) fn makediag_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let s = a.shapes[0];
    if s.is_empty() {
        return Err(a.err("A must have at least 1 dimension, got shape ()"));
    }
    let n = s[s.len() - 1] + a.params.int("offset").unsigned_abs() as usize;
    Ok(vec![(with_last(s, 1, &[n, n]), la_dtype(a)?)])
}

pub(super) fn makediag_compute(c: &mut OpCall) -> Result<()> {
    let off = c.params.int("offset");
    let s = &c.inputs[0].shape;
    let m = s[s.len() - 1];
    let n = m + off.unsigned_abs() as usize;
    let (a, o) = (Buf::of(&c.inputs[0]), Buf::of(&c.outputs[0]));
    let count: usize = s[..s.len() - 1].iter().product();
    for i in 0..count {
        for e in 0..n * n {
            o.set(i * n * n + e, 0.0);
        }
        for j in 0..m {
            let (r, q) = diag_pos(j, off);
            o.set(i * n * n + r * n + q, a.get(i * m + j));
        }
    }
    Ok(())
}

/// The (row, column) positions of a triangle of an `n × n` matrix, row by row, as
/// MXNet packs them: `offset > 0` is the upper triangle starting at that diagonal,
/// `offset < 0` the lower one, `offset == 0` the one `lower` names.
pub(super) fn trian_positions(n: usize, offset: i64, lower: bool) -> Vec<(usize, usize)> {
    let k = offset.unsigned_abs() as usize;
    let mut v = Vec::new();
    if offset > 0 || (offset == 0 && !lower) {
        for r in 0..n.saturating_sub(k) {
            for q in r + k..n {
                v.push((r, q));
            }
        }
    } else {
        for r in k..n {
            for q in 0..=r - k {
                v.push((r, q));
            }
        }
    }
    v
}

pub(super) fn extracttrian_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let n = square(a, 0, "A")?;
    let m = n - offset_of(a, n)?;
    Ok(vec![(with_last(a.shapes[0], 2, &[m * (m + 1) / 2]), la_dtype(a)?)])
}

pub(super) fn extracttrian_compute(c: &mut OpCall) -> Result<()> {
    let s = &c.inputs[0].shape;
    let n = s[s.len() - 1];
    let pos = trian_positions(n, c.params.int("offset"), c.params.bool("lower"));
    let (a, o) = (Buf::of(&c.inputs[0]), Buf::of(&c.outputs[0]));
    for i in 0..batch_of(s) {
        for (j, &(r, q)) in pos.iter().enumerate() {
            o.set(i * pos.len() + j, a.get(i * n * n + r * n + q));
        }
    }
    Ok(())
}

pub(super) fn maketrian_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let s = a.shapes[0];
    if s.is_empty() {
        return Err(a.err("A must have at least 1 dimension, got shape ()"));
    }
    let len = s[s.len() - 1];
    // m (m + 1) / 2 == len
    let m = (((8 * len + 1) as f64).sqrt() as usize).saturating_sub(1) / 2;
    let m = (m.saturating_sub(1)..=m + 1).find(|&m| m * (m + 1) / 2 == len);
    let Some(m) = m.filter(|&m| m > 0) else {
        return Err(a.err(format!(
            "the last dimension of A ({len}) must be a triangular number m*(m+1)/2 with m > 0, input shape {}",
            fmt_shape(s)
        )));
    };
    let n = m + a.params.int("offset").unsigned_abs() as usize;
    Ok(vec![(with_last(s, 1, &[n, n]), la_dtype(a)?)])
}

pub(super) fn maketrian_compute(c: &mut OpCall) -> Result<()> {
    let so = &c.outputs[0].shape;
    let n = so[so.len() - 1];
    let pos = trian_positions(n, c.params.int("offset"), c.params.bool("lower"));
    let (a, o) = (Buf::of(&c.inputs[0]), Buf::of(&c.outputs[0]));
    for i in 0..batch_of(so) {
        for e in 0..n * n {
            o.set(i * n * n + e, 0.0);
        }
        for (j, &(r, q)) in pos.iter().enumerate() {
            o.set(i * n * n + r * n + q, a.get(i * pos.len() + j));
        }
    }
    Ok(())
}
