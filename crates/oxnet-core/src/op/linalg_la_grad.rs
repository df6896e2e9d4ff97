//! Gradients of the ops of `linalg_la.rs`, with MXNet's formulas. The
//! factorizations and triangular ops have backward ops of their own, registered
//! under MXNet's names (`_backward_linalg_potrf`, ...) and computed here in float64
//! on `faer`; the others (`syrk`, `sumlogdiag`, the diagonal and triangle ops,
//! `inverse`, `det`, `slogdet`) are compositions of registry ops, so that they can be
//! differentiated again.
//!
//! Conventions, as MXNet's: `potrf` and `syevd` return the symmetric gradient of
//! their symmetric input; `potri`, `trmm` and `trsm` return zero outside the
//! triangle they read.

use super::linalg_la::{batch_of, for_batch, la_dtype, lower_part, op_tri, scale, solve_tri, tri, Buf};
use super::{call1, invoke, lookup, Arity, InferArgs, OpCall, OpDef, Params, Registry, Value};
use crate::dtype::DType;
use crate::error::Result;
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};
use faer::Mat;

type Grads = Result<Vec<Option<NDArray>>>;

/// Runs the backward op `name` with the forward op's parameters.
fn back(name: &str, p: &Params, ins: &[NDArray]) -> Result<Vec<NDArray>> {
    invoke(lookup(name)?, ins, p.clone(), None, None)
}

fn c1(name: &str, ins: &[NDArray], attrs: &[(&str, Value)]) -> Result<NDArray> {
    call1(name, ins, attrs)
}

/// The forward op's parameters as attributes for another op.
fn attrs<'a>(p: &Params, names: &[&'a str]) -> Vec<(&'a str, Value)> {
    names.iter().map(|n| (*n, p.get(n).clone())).collect()
}

/// `a` with its last two axes swapped.
fn swap_last(a: &NDArray) -> Result<NDArray> {
    let nd = a.ndim() as i64;
    c1("SwapAxis", std::slice::from_ref(a), &[("dim1", Value::Int(nd - 2)), ("dim2", Value::Int(nd - 1))])
}

/// A per-matrix scalar (shape `(1,)` or the leading axes) as `(..., 1, 1)`.
fn as_mat11(g: &NDArray, a: &NDArray) -> Result<NDArray> {
    let s = a.shape();
    let mut t: Vec<i64> = s[..s.len() - 2].iter().map(|&d| d as i64).collect();
    t.extend([1, 1]);
    c1("Reshape", std::slice::from_ref(g), &[("shape", Value::Tuple(t))])
}

// ---- gradient functions (GradFn) --------------------------------------------------

fn g_potrf(p: &Params, _: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(back("_backward_linalg_potrf", p, &[g[0].clone(), o[0].clone()])?.remove(0))])
}

fn g_potri(p: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(back("_backward_linalg_potri", p, &[g[0].clone(), i[0].clone(), o[0].clone()])?.remove(0))])
}

fn g_trmm(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let r = back("_backward_linalg_trmm", p, &[g[0].clone(), i[0].clone(), i[1].clone()])?;
    Ok(r.into_iter().map(Some).collect())
}

fn g_trsm(p: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    let r = back("_backward_linalg_trsm", p, &[g[0].clone(), i[0].clone(), o[0].clone()])?;
    Ok(r.into_iter().map(Some).collect())
}

fn g_gelqf(p: &Params, _: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    let ins = [g[0].clone(), g[1].clone(), o[0].clone(), o[1].clone()];
    Ok(vec![Some(back("_backward_linalg_gelqf", p, &ins)?.remove(0))])
}

fn g_syevd(p: &Params, _: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    let ins = [g[0].clone(), g[1].clone(), o[0].clone(), o[1].clone()];
    Ok(vec![Some(back("_backward_linalg_syevd", p, &ins)?.remove(0))])
}

/// `out = alpha A A^T`: `dA = alpha (G + G^T) A`; with `transpose`
/// (`out = alpha A^T A`): `dA = alpha A (G + G^T)`.
fn g_syrk(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let gs = c1("elemwise_add", &[g[0].clone(), swap_last(&g[0])?], &[])?;
    let alpha = ("alpha", Value::Float(p.float("alpha")));
    let r = if p.bool("transpose") {
        c1("_linalg_gemm2", &[i[0].clone(), gs], &[alpha])?
    } else {
        c1("_linalg_gemm2", &[gs, i[0].clone()], &[alpha])?
    };
    Ok(vec![Some(r)])
}

/// `dA = diag(G / diag(A))`.
fn g_sumlogdiag(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let d = c1("_linalg_extractdiag", std::slice::from_ref(&i[0]), &[])?;
    let s = i[0].shape();
    let mut t: Vec<i64> = s[..s.len() - 2].iter().map(|&x| x as i64).collect();
    t.push(1);
    let gg = c1("Reshape", std::slice::from_ref(&g[0]), &[("shape", Value::Tuple(t))])?;
    let q = c1("broadcast_div", &[gg, d], &[])?;
    Ok(vec![Some(c1("_linalg_makediag", &[q], &[])?)])
}

fn g_extractdiag(p: &Params, _: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(c1("_linalg_makediag", &[g[0].clone()], &attrs(p, &["offset"]))?)])
}

fn g_makediag(p: &Params, _: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(c1("_linalg_extractdiag", &[g[0].clone()], &attrs(p, &["offset"]))?)])
}

fn g_extracttrian(p: &Params, _: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(c1("_linalg_maketrian", &[g[0].clone()], &attrs(p, &["offset", "lower"]))?)])
}

fn g_maketrian(p: &Params, _: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(c1("_linalg_extracttrian", &[g[0].clone()], &attrs(p, &["offset", "lower"]))?)])
}

/// `out = A^-1`: `dA = -out^T G out^T`.
fn g_inverse(_: &Params, _: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    let t = ("transpose_a", Value::Bool(true));
    let x = c1("_linalg_gemm2", &[o[0].clone(), g[0].clone()], &[t])?;
    let r = c1("_linalg_gemm2", &[x, o[0].clone()], &[("transpose_b", Value::Bool(true)), ("alpha", Value::Float(-1.0))])?;
    Ok(vec![Some(r)])
}

/// `out = det(A)`: `dA = G det(A) A^-T`.
fn g_det(_: &Params, i: &[NDArray], o: &[NDArray], g: &[NDArray]) -> Grads {
    let gd = c1("elemwise_mul", &[g[0].clone(), o[0].clone()], &[])?;
    let inv_t = swap_last(&c1("_linalg_inverse", std::slice::from_ref(&i[0]), &[])?)?;
    Ok(vec![Some(c1("broadcast_mul", &[as_mat11(&gd, &i[0])?, inv_t], &[])?)])
}

/// `(sign, logabsdet) = slogdet(A)`: `dA = G_logabsdet A^-T` (the sign has none).
fn g_slogdet(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let inv_t = swap_last(&c1("_linalg_inverse", std::slice::from_ref(&i[0]), &[])?)?;
    Ok(vec![Some(c1("broadcast_mul", &[as_mat11(&g[1], &i[0])?, inv_t], &[])?)])
}

/// The gradient of the forward op `name` of `linalg_la.rs`.
pub(super) fn grad_of(name: &str) -> super::GradFn {
    match name {
        "_linalg_potrf" => g_potrf,
        "_linalg_potri" => g_potri,
        "_linalg_trmm" => g_trmm,
        "_linalg_trsm" => g_trsm,
        "_linalg_syrk" => g_syrk,
        "_linalg_sumlogdiag" => g_sumlogdiag,
        "_linalg_extractdiag" => g_extractdiag,
        "_linalg_makediag" => g_makediag,
        "_linalg_extracttrian" => g_extracttrian,
        "_linalg_maketrian" => g_maketrian,
        "_linalg_gelqf" => g_gelqf,
        "_linalg_syevd" => g_syevd,
        "_linalg_inverse" => g_inverse,
        "_linalg_det" => g_det,
        "_linalg_slogdet" => g_slogdet,
        _ => unreachable!("no linalg gradient for {name}"),
    }
}

// ---- backward ops ---------------------------------------------------------------------

/// Outputs shaped like inputs `like` of the backward op (the forward op's inputs).
fn like_inputs(a: &InferArgs, like: &[usize]) -> Result<Vec<(Shape, DType)>> {
    let d = la_dtype(a)?;
    for &k in like {
        let s = a.shapes[k];
        if s.len() < 2 {
            return Err(a.err(format!("input {k} must have at least 2 dimensions, got shape {}", fmt_shape(s))));
        }
    }
    Ok(like.iter().map(|&k| (Shape::from_slice(a.shapes[k]), d)).collect())
}

/// `copyLTU(M)`: the symmetric matrix with the lower triangle of `m`.
fn copy_ltu(m: &Mat<f64>) -> Mat<f64> {
    let n = m.nrows();
    Mat::from_fn(n, n, |i, j| if i >= j { m[(i, j)] } else { m[(j, i)] })
}

fn inv_lower(l: &Mat<f64>) -> Mat<f64> {
    let n = l.nrows();
    let mut x = Mat::<f64>::identity(n, n);
    solve_tri(l.as_ref(), true, &mut x);
    x
}

/// Inputs `(dL, L)`: `dA = 0.5 L^-T copyLTU(L^T dL) L^-1` (symmetric).
fn potrf_back(c: &mut OpCall) -> Result<()> {
    let lower = c.params.bool("lower");
    let s = &c.inputs[1].shape;
    let n = s[s.len() - 1];
    let (dl, l, o) = (Buf::of(&c.inputs[0]), Buf::of(&c.inputs[1]), Buf::of(&c.outputs[0]));
    for_batch(c.op.name, batch_of(s), n * n * n * 4, |i| {
        let off = i * n * n;
        let lm = lower_part(&l.mat(off, n, n), lower);
        let dm = dl.mat(off, n, n);
        let dm = if lower { dm } else { dm.transpose().to_owned() };
        let li = inv_lower(&lm);
        let mut r = li.transpose() * copy_ltu(&(lm.transpose() * &dm)) * &li;
        scale(&mut r, 0.5);
        o.put(off, r.as_ref());
        Ok(())
    })
}

/// Inputs `(dOut, L, Out)`: `dL = -tril(Out (dOut + dOut^T) L^-T)` (transposed to
/// the upper triangle when `lower` is false).
fn potri_back(c: &mut OpCall) -> Result<()> {
    let lower = c.params.bool("lower");
    let s = &c.inputs[1].shape;
    let n = s[s.len() - 1];
    let (g, l, x, o) = (Buf::of(&c.inputs[0]), Buf::of(&c.inputs[1]), Buf::of(&c.inputs[2]), Buf::of(&c.outputs[0]));
    for_batch(c.op.name, batch_of(s), n * n * n * 4, |i| {
        let off = i * n * n;
        let lm = lower_part(&l.mat(off, n, n), lower);
        let gm = g.mat(off, n, n);
        let gs = &gm + gm.transpose();
        let r = x.mat(off, n, n) * gs * inv_lower(&lm).transpose();
        let r = Mat::from_fn(n, n, |a, b| if a >= b { -r[(a, b)] } else { 0.0 });
        o.put(off, if lower { r.as_ref() } else { r.transpose() });
        Ok(())
    })
}

/// `d op(T)` turned into the gradient of `A`: transposed back and masked to the
/// triangle that the op reads.
fn tri_grad(d_opt: Mat<f64>, lower: bool, transpose: bool) -> Mat<f64> {
    let d = if transpose { d_opt.transpose().to_owned() } else { d_opt };
    tri(&d, lower)
}

/// Inputs `(dOut, A, B)`, outputs `(dA, dB)`.
fn trmm_back(c: &mut OpCall) -> Result<()> {
    let p = c.params;
    let (tr, right, lower, alpha) = (p.bool("transpose"), p.bool("rightside"), p.bool("lower"), p.float("alpha"));
    let (sa, sb) = (&c.inputs[1].shape, &c.inputs[2].shape);
    let n = sa[sa.len() - 1];
    let (m, k) = (sb[sb.len() - 2], sb[sb.len() - 1]);
    let (g, a, b) = (Buf::of(&c.inputs[0]), Buf::of(&c.inputs[1]), Buf::of(&c.inputs[2]));
    let (da, db) = (Buf::of(&c.outputs[0]), Buf::of(&c.outputs[1]));
    for_batch(c.op.name, batch_of(sb), n * m * k * 2, |i| {
        let (t, _) = op_tri(&a.mat(i * n * n, n, n), lower, tr);
        let (gm, bm) = (g.mat(i * m * k, m, k), b.mat(i * m * k, m, k));
        let (mut dbm, mut dt) =
            if right { (&gm * t.transpose(), bm.transpose() * &gm) } else { (t.transpose() * &gm, &gm * bm.transpose()) };
        scale(&mut dbm, alpha);
        scale(&mut dt, alpha);
        db.put(i * m * k, dbm.as_ref());
        da.put(i * n * n, tri_grad(dt, lower, tr).as_ref());
        Ok(())
    })
}

/// Inputs `(dOut, A, Out)`, outputs `(dA, dB)`. With `Y = op(T)^-T dOut` (left) or
/// `dOut op(T)^-T` (right): `dB = alpha Y`, `d op(T) = -Y Out^T` or `-Out^T Y`.
fn trsm_back(c: &mut OpCall) -> Result<()> {
    let p = c.params;
    let (tr, right, lower, alpha) = (p.bool("transpose"), p.bool("rightside"), p.bool("lower"), p.float("alpha"));
    let (sa, sb) = (&c.inputs[1].shape, &c.inputs[2].shape);
    let n = sa[sa.len() - 1];
    let (m, k) = (sb[sb.len() - 2], sb[sb.len() - 1]);
    let (g, a, x) = (Buf::of(&c.inputs[0]), Buf::of(&c.inputs[1]), Buf::of(&c.inputs[2]));
    let (da, db) = (Buf::of(&c.outputs[0]), Buf::of(&c.outputs[1]));
    for_batch(c.op.name, batch_of(sb), n * m * k * 3, |i| {
        let (t, tl) = op_tri(&a.mat(i * n * n, n, n), lower, tr);
        let (gm, xm) = (g.mat(i * m * k, m, k), x.mat(i * m * k, m, k));
        // Y solves op(T)^T Y = G (left) or Y op(T)^T = G (right).
        let y = if right {
            let mut yt = gm.transpose().to_owned();
            solve_tri(t.as_ref(), tl, &mut yt);
            yt.transpose().to_owned()
        } else {
            let mut y = gm;
            solve_tri(t.transpose(), !tl, &mut y);
            y
        };
        let mut dt = if right { xm.transpose() * &y } else { &y * xm.transpose() };
        scale(&mut dt, -1.0);
        let mut dbm = y;
        scale(&mut dbm, alpha);
        db.put(i * m * k, dbm.as_ref());
        da.put(i * n * n, tri_grad(dt, lower, tr).as_ref());
        Ok(())
    })
}

/// Inputs `(dQ, dL, Q, L)`: `dA = L^-T (dQ + copyLTU(M) Q)`, `M = L^T dL - dQ Q^T`.
fn gelqf_back(c: &mut OpCall) -> Result<()> {
    let s = &c.inputs[2].shape;
    let (m, n) = (s[s.len() - 2], s[s.len() - 1]);
    let (dq, dl, q, l, o) =
        (Buf::of(&c.inputs[0]), Buf::of(&c.inputs[1]), Buf::of(&c.inputs[2]), Buf::of(&c.inputs[3]), Buf::of(&c.outputs[0]));
    for_batch(c.op.name, batch_of(s), m * m * n * 4, |i| {
        let (dqm, qm) = (dq.mat(i * m * n, m, n), q.mat(i * m * n, m, n));
        let (dlm, lm) = (dl.mat(i * m * m, m, m), lower_part(&l.mat(i * m * m, m, m), true));
        let mm = lm.transpose() * &dlm - &dqm * qm.transpose();
        let mut r = dqm + copy_ltu(&mm) * &qm;
        // L^T X = r
        solve_tri(lm.transpose(), false, &mut r);
        o.put(i * m * n, r.as_ref());
        Ok(())
    })
}

/// Inputs `(dU, dL, U, L)`: `dA = U^T (diag(dL) + F) U` with
/// `F_ij = (K_ij - K_ji) / (2 (L_j - L_i))`, `K = U dU^T` (symmetric).
fn syevd_back(c: &mut OpCall) -> Result<()> {
    let s = &c.inputs[2].shape;
    let n = s[s.len() - 1];
    let (du, dl, u, l, o) =
        (Buf::of(&c.inputs[0]), Buf::of(&c.inputs[1]), Buf::of(&c.inputs[2]), Buf::of(&c.inputs[3]), Buf::of(&c.outputs[0]));
    for_batch(c.op.name, batch_of(s), n * n * n * 4, |i| {
        let (dum, um) = (du.mat(i * n * n, n, n), u.mat(i * n * n, n, n));
        let lam: Vec<f64> = (0..n).map(|j| l.get(i * n + j)).collect();
        let k = &um * dum.transpose();
        let mid = Mat::from_fn(n, n, |a, b| {
            if a == b {
                dl.get(i * n + a)
            } else {
                let d = lam[b] - lam[a];
                if d == 0.0 {
                    0.0
                } else {
                    (k[(a, b)] - k[(b, a)]) / (2.0 * d)
                }
            }
        });
        let r = um.transpose() * mid * &um;
        o.put(i * n * n, r.as_ref());
        Ok(())
    })
}

fn potr_back_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    like_inputs(a, &[1])
}
fn triang_back_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let out = like_inputs(a, &[1, 2])?;
    let (g, sa, sb) = (a.shapes[0], a.shapes[1], a.shapes[2]);
    let (ra, rb) = (sa.len(), sb.len());
    let n = sa[ra - 1];
    let inner = if a.params.bool("rightside") { sb[rb - 1] } else { sb[rb - 2] };
    if g != sb || ra != rb || sa[..ra - 2] != sb[..rb - 2] || sa[ra - 2] != n || inner != n {
        return Err(a.err(format!(
            "A must be (..., n, n) with n matching B's {} and the same batch dimensions, and the output gradient shaped like B: got dC {}, A {}, B {}",
            if a.params.bool("rightside") { "columns" } else { "rows" },
            fmt_shape(g),
            fmt_shape(sa),
            fmt_shape(sb)
        )));
    }
    Ok(out)
}
fn gelqf_back_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    like_inputs(a, &[2])
}
fn syevd_back_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let d = la_dtype(a)?;
    let (du, dl, u, l) = (a.shapes[0], a.shapes[1], a.shapes[2], a.shapes[3]);
    let square = u.len() >= 2 && u[u.len() - 1] == u[u.len() - 2];
    if !square || du != u || l != &u[..u.len() - 1] || dl != l {
        return Err(a.err(format!(
            "U and dU must be the same (..., n, n) and L and dL the same (..., n): got dU {}, dL {}, U {}, L {}",
            fmt_shape(du),
            fmt_shape(dl),
            fmt_shape(u),
            fmt_shape(l)
        )));
    }
    Ok(vec![(Shape::from_slice(u), d)])
}

fn two(_: &Params) -> usize {
    2
}

pub(super) fn register(r: &mut Registry) {
    use super::linalg_la::{CHOL_PARAMS, TRIANG_PARAMS};
    let doc = "Backward of the linalg op of the same name (internal).";
    r.add(OpDef::new("_backward_linalg_potrf", doc, Arity::Fixed(&["dL", "L"]), CHOL_PARAMS, potr_back_infer, potrf_back).cost(16));
    r.add(OpDef::new("_backward_linalg_potri", doc, Arity::Fixed(&["dA", "L", "A"]), CHOL_PARAMS, potr_back_infer, potri_back).cost(16));
    r.add(
        OpDef::new("_backward_linalg_trmm", doc, Arity::Fixed(&["dC", "A", "B"]), TRIANG_PARAMS, triang_back_infer, trmm_back)
            .outputs(two)
            .cost(16),
    );
    r.add(
        OpDef::new("_backward_linalg_trsm", doc, Arity::Fixed(&["dC", "A", "C"]), TRIANG_PARAMS, triang_back_infer, trsm_back)
            .outputs(two)
            .cost(16),
    );
    r.add(OpDef::new("_backward_linalg_gelqf", doc, Arity::Fixed(&["dQ", "dL", "Q", "L"]), &[], gelqf_back_infer, gelqf_back).cost(16));
    r.add(OpDef::new("_backward_linalg_syevd", doc, Arity::Fixed(&["dU", "dL", "U", "L"]), &[], syevd_back_infer, syevd_back).cost(16));
}
