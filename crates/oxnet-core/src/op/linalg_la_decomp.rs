//! `_linalg_gelqf`, `_linalg_syevd`, `_linalg_inverse`, `_linalg_det` and
//! `_linalg_slogdet`: shape inference and kernels (registered in `linalg_la.rs`, whose
//! helpers they use).

use super::*;
// ---- gelqf / syevd ----------------------------------------------------------------------

pub(super) fn gelqf_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let s = matrices(a, 0, "A")?;
    let (m, n) = (s[s.len() - 2], s[s.len() - 1]);
    if m > n || m == 0 {
        return Err(a.err(format!("A must have at least one row and no more rows than columns, got shape {}", fmt_shape(s))));
    }
    let d = la_dtype(a)?;
    Ok(vec![(Shape::from_slice(s), d), (with_last(s, 2, &[m, m]), d)])
}

/// LQ factorization `A = L Q` of an `m × n` matrix (`m <= n`) by Householder
/// reflections applied from the right, with LAPACK's sign conventions (`gelqf`
/// followed by `orglq`): each diagonal entry of `L` has the sign opposite to the
/// pivot it replaces, as MXNet's results do.
pub(super) fn lq(a: &Mat<f64>) -> (Mat<f64>, Mat<f64>) {
    let (m, n) = (a.nrows(), a.ncols());
    let mut w = a.clone();
    let mut refl: Vec<(Vec<f64>, f64)> = Vec::with_capacity(m);
    for i in 0..m {
        let alpha = w[(i, i)];
        let xnorm = (i + 1..n).map(|j| w[(i, j)] * w[(i, j)]).sum::<f64>().sqrt();
        let mut v = vec![0.0; n];
        v[i] = 1.0;
        let mut tau = 0.0;
        if xnorm != 0.0 {
            let beta = -(if alpha >= 0.0 { 1.0 } else { -1.0 }) * alpha.hypot(xnorm);
            tau = (beta - alpha) / beta;
            let s = 1.0 / (alpha - beta);
            for j in i + 1..n {
                v[j] = w[(i, j)] * s;
            }
            for r in i + 1..m {
                let d: f64 = (i..n).map(|j| w[(r, j)] * v[j]).sum();
                for j in i..n {
                    w[(r, j)] -= tau * d * v[j];
                }
            }
            w[(i, i)] = beta;
            for j in i + 1..n {
                w[(i, j)] = 0.0;
            }
        }
        refl.push((v, tau));
    }
    let l = Mat::from_fn(m, m, |r, k| if r >= k { w[(r, k)] } else { 0.0 });
    // Row r of Q is e_r^T H(m-1) ... H(0).
    let mut q = Mat::<f64>::zeros(m, n);
    let mut y = vec![0.0; n];
    for r in 0..m {
        y.iter_mut().for_each(|x| *x = 0.0);
        y[r] = 1.0;
        for (v, tau) in refl.iter().rev() {
            let d: f64 = y.iter().zip(v).map(|(a, b)| a * b).sum();
            for (x, vj) in y.iter_mut().zip(v) {
                *x -= tau * d * vj;
            }
        }
        for j in 0..n {
            q[(r, j)] = y[j];
        }
    }
    (q, l)
}

pub(super) fn gelqf_compute(c: &mut OpCall) -> Result<()> {
    let s = &c.inputs[0].shape;
    let (m, n) = (s[s.len() - 2], s[s.len() - 1]);
    let (a, oq, ol) = (Buf::of(&c.inputs[0]), Buf::of(&c.outputs[0]), Buf::of(&c.outputs[1]));
    for_batch(c.op.name, batch_of(s), m * m * n, |i| {
        let (q, l) = lq(&a.mat(i * m * n, m, n));
        oq.put(i * m * n, q.as_ref());
        ol.put(i * m * m, l.as_ref());
        Ok(())
    })
}

pub(super) fn syevd_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    square(a, 0, "A")?;
    let s = a.shapes[0];
    let d = la_dtype(a)?;
    Ok(vec![(Shape::from_slice(s), d), (with_last(s, 1, &[]), d)])
}

pub(super) fn syevd_compute(c: &mut OpCall) -> Result<()> {
    let s = &c.inputs[0].shape;
    let n = s[s.len() - 1];
    let (a, ou, ol) = (Buf::of(&c.inputs[0]), Buf::of(&c.outputs[0]), Buf::of(&c.outputs[1]));
    for_batch(c.op.name, batch_of(s), n * n * n * 4, |i| {
        let am = a.mat(i * n * n, n, n);
        let evd = am
            .self_adjoint_eigen(Side::Lower)
            .map_err(|e| format!("the eigendecomposition of the matrix at batch index {i} did not converge ({e:?})"))?;
        let (u, w) = (evd.U(), evd.S());
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&x, &y| w[x].total_cmp(&w[y]));
        for (r, &j) in order.iter().enumerate() {
            // Row r of U is eigenvector j, signed so that its entry of largest
            // magnitude (the first such) is positive, as MXNet does.
            let mut arg = 0;
            for k in 1..n {
                if u[(k, j)].abs() > u[(arg, j)].abs() {
                    arg = k;
                }
            }
            let sg = if u[(arg, j)] < 0.0 { -1.0 } else { 1.0 };
            for k in 0..n {
                ou.set(i * n * n + r * n + k, sg * u[(k, j)]);
            }
            ol.set(i * n + r, w[j]);
        }
        Ok(())
    })
}

// ---- inverse / det / slogdet --------------------------------------------------------

pub(super) fn inverse_compute(c: &mut OpCall) -> Result<()> {
    let s = &c.inputs[0].shape;
    let n = s[s.len() - 1];
    let (a, o) = (Buf::of(&c.inputs[0]), Buf::of(&c.outputs[0]));
    for_batch(c.op.name, batch_of(s), n * n * n, |i| {
        let lu = a.mat(i * n * n, n, n).partial_piv_lu();
        if (0..n).any(|j| lu.U()[(j, j)] == 0.0) {
            return Err(format!("the matrix at batch index {i} is singular and has no inverse"));
        }
        o.put(i * n * n, lu.inverse().as_ref());
        Ok(())
    })
}

/// `(sign, log|det|)` of the matrix, from its LU factorization with partial pivoting.
pub(super) fn slogdet_one(a: &Mat<f64>) -> (f64, f64) {
    let n = a.nrows();
    if n == 0 {
        return (1.0, 0.0);
    }
    let lu = a.partial_piv_lu();
    let u = lu.U();
    let (mut sign, mut log) = (1.0, 0.0);
    for j in 0..n {
        let d = u[(j, j)];
        if d == 0.0 {
            return (0.0, f64::NEG_INFINITY);
        }
        if d < 0.0 {
            sign = -sign;
        }
        log += d.abs().ln();
    }
    // The parity of the row permutation.
    let perm = lu.P().arrays().0;
    let mut seen = vec![false; n];
    for start in 0..n {
        if seen[start] {
            continue;
        }
        let mut len = 0;
        let mut j = start;
        while !seen[j] {
            seen[j] = true;
            j = perm[j];
            len += 1;
        }
        if len % 2 == 0 {
            sign = -sign;
        }
    }
    (sign, log)
}

pub(super) fn det_compute(c: &mut OpCall) -> Result<()> {
    let s = &c.inputs[0].shape;
    let n = s[s.len() - 1];
    let (a, o) = (Buf::of(&c.inputs[0]), Buf::of(&c.outputs[0]));
    for_batch(c.op.name, batch_of(s), n * n * n, |i| {
        let (sg, l) = slogdet_one(&a.mat(i * n * n, n, n));
        o.set(i, sg * l.exp());
        Ok(())
    })
}

pub(super) fn slogdet_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    square(a, 0, "A")?;
    let s = scalar_shape(a.shapes[0]);
    let d = la_dtype(a)?;
    Ok(vec![(s.clone(), d), (s, d)])
}

pub(super) fn slogdet_compute(c: &mut OpCall) -> Result<()> {
    let s = &c.inputs[0].shape;
    let n = s[s.len() - 1];
    let (a, os, ol) = (Buf::of(&c.inputs[0]), Buf::of(&c.outputs[0]), Buf::of(&c.outputs[1]));
    for_batch(c.op.name, batch_of(s), n * n * n, |i| {
        let (sg, l) = slogdet_one(&a.mat(i * n * n, n, n));
        os.set(i, sg);
        ol.set(i, l);
        Ok(())
    })
}
