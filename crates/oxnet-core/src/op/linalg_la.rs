//! MXNet's LAPACK-style linear algebra ops on stacks of matrices: `_linalg_potrf`,
//! `_linalg_potri`, `_linalg_trmm`, `_linalg_trsm`, `_linalg_syrk`,
//! `_linalg_sumlogdiag`, `_linalg_extractdiag`, `_linalg_makediag`,
//! `_linalg_extracttrian`, `_linalg_maketrian`, `_linalg_gelqf`, `_linalg_syevd`,
//! `_linalg_inverse`, `_linalg_det` and `_linalg_slogdet` (with their `linalg_*`
//! aliases). The matrices are the trailing two axes; every leading axis is a batch
//! axis, and the batch runs in parallel on the engine's pool. Inputs are float32 or
//! float64; the factorizations run in float64 on `faer` (float32 inputs are widened
//! and the results rounded back). The gradients live in `linalg_la_grad.rs`; the diagonal
//! and triangle ops in `linalg_la_diag.rs`, gelqf/syevd/inverse/det/slogdet in
//! `linalg_la_decomp.rs` (registered here).
//!
//! `potrf` and `trsm` on matrices of order up to [`SMALL_N`] skip `faer` and the
//! float64 widening: they run [`small_la`]'s in-place kernels on the contiguous batch
//! in the input's own dtype, in chunks of matrices across the pool.
//!
//! Why `faer`: a pure-Rust, maintained LAPACK-quality library (Cholesky, triangular
//! solves, QR, LU with pivoting, symmetric eigensolver) that needs no system BLAS or
//! LAPACK, so the wheel stays self-contained. `gelqf` is a small Householder LQ of
//! our own because MXNet's results carry LAPACK's sign convention.

use super::{check_same_dtype, Arity, Blob, InferArgs, OpCall, OpDef, PType, ParamSpec, Registry};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::cpu::small_la::{self, LaFloat, SMALL_N};
use crate::shape::{fmt_shape, Shape};
use faer::linalg::solvers::DenseSolveCore;
use faer::linalg::triangular_solve::{solve_lower_triangular_in_place, solve_upper_triangular_in_place};
use faer::{Mat, MatRef, Par, Side};
use rayon::prelude::*;

// ---- element access and batching ----------------------------------------------

/// A float32 or float64 blob read and written as float64.
#[derive(Clone, Copy)]
pub(super) struct Buf {
    ptr: usize,
    len: usize,
    f64_: bool,
}

impl Buf {
    pub(super) fn of(b: &Blob) -> Buf {
        Buf { ptr: b.ptr as usize, len: b.size(), f64_: b.dtype == DType::F64 }
    }
    #[inline]
    pub(super) fn get(self, i: usize) -> f64 {
        // An index past the blob is a bug in an op's shape checks: stop (the engine
        // turns the panic into an error) rather than read outside the buffer.
        assert!(i < self.len, "linalg: element {i} of a {}-element array", self.len);
        // SAFETY: the engine gives the op exclusive use of its blobs while it runs, and
        // `i` is inside the blob (checked above).
        unsafe {
            if self.f64_ {
                *(self.ptr as *const f64).add(i)
            } else {
                *(self.ptr as *const f32).add(i) as f64
            }
        }
    }
    #[inline]
    pub(super) fn set(self, i: usize, v: f64) {
        assert!(i < self.len, "linalg: element {i} of a {}-element array", self.len);
        // SAFETY: as for `get`; each batch item writes only its own matrix.
        unsafe {
            if self.f64_ {
                *(self.ptr as *mut f64).add(i) = v
            } else {
                *(self.ptr as *mut f32).add(i) = v as f32
            }
        }
    }
    /// The row-major `r × c` matrix stored at element offset `off`.
    pub(super) fn mat(self, off: usize, r: usize, c: usize) -> Mat<f64> {
        Mat::from_fn(r, c, |i, j| self.get(off + i * c + j))
    }
    /// Writes `m` row-major at element offset `off`.
    pub(super) fn put(self, off: usize, m: MatRef<'_, f64>) {
        let c = m.ncols();
        for i in 0..m.nrows() {
            for j in 0..c {
                self.set(off + i * c + j, m[(i, j)]);
            }
        }
    }
}

/// Runs `f` for every batch item (in parallel when the work is worth it). The
/// first failing item (lowest index) gives the op's error.
pub(super) fn for_batch(
    op: &str,
    count: usize,
    work_each: usize,
    f: impl Fn(usize) -> std::result::Result<(), String> + Sync + Send,
) -> Result<()> {
    let run = |i: usize| f(i).err().map(|m| (i, m));
    let first = if count > 1 && count.saturating_mul(work_each) >= 1 << 15 {
        (0..count).into_par_iter().filter_map(run).min_by_key(|e| e.0)
    } else {
        (0..count).find_map(run)
    };
    match first {
        Some((_, m)) => Err(Error::op(op, m)),
        None => Ok(()),
    }
}

/// Number of matrices in a stack of shape `s` (the product of all but the last two
/// axes).
pub(super) fn batch_of(s: &[usize]) -> usize {
    s[..s.len().saturating_sub(2)].iter().product()
}

/// The lower triangle of `a` (`lower`), or the upper one transposed: the lower
/// triangular factor that the op reads from `a`.
pub(super) fn lower_part(a: &Mat<f64>, lower: bool) -> Mat<f64> {
    let n = a.nrows();
    Mat::from_fn(n, n, |i, j| {
        if i < j {
            0.0
        } else if lower {
            a[(i, j)]
        } else {
            a[(j, i)]
        }
    })
}

/// `a` with the triangle that the op does not read set to zero.
pub(super) fn tri(a: &Mat<f64>, lower: bool) -> Mat<f64> {
    let n = a.nrows();
    Mat::from_fn(n, n, |i, j| if (lower && i >= j) || (!lower && i <= j) { a[(i, j)] } else { 0.0 })
}

/// Solves `t x = rhs` in place for a triangular `t` (`lower` tells which).
pub(super) fn solve_tri(t: MatRef<'_, f64>, lower: bool, rhs: &mut Mat<f64>) {
    if lower {
        solve_lower_triangular_in_place(t, rhs.as_mut(), Par::Seq)
    } else {
        solve_upper_triangular_in_place(t, rhs.as_mut(), Par::Seq)
    }
}

pub(super) fn scale(m: &mut Mat<f64>, s: f64) {
    if s != 1.0 {
        for j in 0..m.ncols() {
            for i in 0..m.nrows() {
                m[(i, j)] *= s;
            }
        }
    }
}

// ---- inference helpers ------------------------------------------------------------

/// The common dtype of the inputs: float32 or float64.
pub(super) fn la_dtype(a: &InferArgs) -> Result<DType> {
    let d = check_same_dtype(a)?;
    match d {
        DType::F32 | DType::F64 => Ok(d),
        _ => Err(a.err(format!("{} inputs are not supported: {} only supports float32 and float64", d.name(), a.op.name))),
    }
}

/// Input `i` as a stack of matrices (at least two axes).
pub(super) fn matrices<'a>(a: &'a InferArgs, i: usize, what: &str) -> Result<&'a [usize]> {
    let s = a.shapes[i];
    if s.len() < 2 {
        return Err(a.err(format!("{what} must have at least 2 dimensions, got shape {}", fmt_shape(s))));
    }
    Ok(s)
}

/// Input `i` as a stack of square matrices; their order.
pub(super) fn square(a: &InferArgs, i: usize, what: &str) -> Result<usize> {
    let s = matrices(a, i, what)?;
    let (r, c) = (s[s.len() - 2], s[s.len() - 1]);
    if r != c {
        return Err(a.err(format!("{what} must be a stack of square matrices, got shape {}", fmt_shape(s))));
    }
    Ok(r)
}

/// The shape of a per-matrix scalar result: the leading axes, `(1,)` for one matrix.
pub(super) fn scalar_shape(s: &[usize]) -> Shape {
    if s.len() == 2 {
        Shape::from_slice(&[1])
    } else {
        Shape::from_slice(&s[..s.len() - 2])
    }
}

fn with_last(s: &[usize], drop: usize, add: &[usize]) -> Shape {
    let mut v: Vec<usize> = s[..s.len() - drop].to_vec();
    v.extend_from_slice(add);
    Shape::from_slice(&v)
}

fn same_as_input(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    square(a, 0, "A")?;
    Ok(vec![(Shape::from_slice(a.shapes[0]), la_dtype(a)?)])
}

// ---- parameters ---------------------------------------------------------------------

const A: Arity = Arity::Fixed(&["A"]);
const AB: Arity = Arity::Fixed(&["A", "B"]);

const LOWER_DOC: &str = "True if the triangular matrix is lower triangular, false if it is upper triangular.";
pub(super) const CHOL_PARAMS: &[ParamSpec] = &[ParamSpec::new("lower", PType::Bool, Some("True"), LOWER_DOC)];
pub(super) const TRIANG_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("transpose", PType::Bool, Some("False"), "Use transpose of the triangular matrix"),
    ParamSpec::new("rightside", PType::Bool, Some("False"), "Multiply triangular matrix from the right to non-triangular one."),
    ParamSpec::new("lower", PType::Bool, Some("True"), LOWER_DOC),
    ParamSpec::new("alpha", PType::Float, Some("1"), "Scalar factor to be applied to the result."),
];
pub(super) const SYRK_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("transpose", PType::Bool, Some("False"), "Use transpose of input matrix."),
    ParamSpec::new("alpha", PType::Float, Some("1"), "Scalar factor to be applied to the result."),
];
pub(super) const DIAG_PARAMS: &[ParamSpec] = &[ParamSpec::new(
    "offset",
    PType::Int,
    Some("0"),
    "Offset of the diagonal versus the main diagonal. 0 corresponds to the main diagonal, a negative/positive value to diagonals below/above the main diagonal.",
)];
pub(super) const TRIAN_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "offset",
        PType::Int,
        Some("0"),
        "Offset of the diagonal versus the main diagonal. 0 corresponds to the main diagonal, a negative/positive value to diagonals below/above the main diagonal.",
    ),
    ParamSpec::new(
        "lower",
        PType::Bool,
        Some("True"),
        "Refer to the lower triangular matrix if lower=true, refer to the upper otherwise. Only relevant when offset=0",
    ),
];

// ---- potrf / potri ------------------------------------------------------------------

/// Runs `f(first, chunk)` over chunks of whole matrices of the stack `out` (`per`
/// elements each; `first` is the chunk's first matrix), across the pool when the
/// work is worth it. `f` gives the index and message of a failing matrix; the
/// lowest failing index gives the op's error.
fn for_chunks<T: Send>(
    op: &str,
    out: &mut [T],
    per: usize,
    work_each: usize,
    f: impl Fn(usize, &mut [T]) -> std::result::Result<(), (usize, String)> + Sync + Send,
) -> Result<()> {
    if per == 0 || out.is_empty() {
        return Ok(());
    }
    let count = out.len() / per;
    let threads = crate::engine::threads();
    let first = if count > 1 && threads > 1 && count.saturating_mul(work_each) >= 1 << 15 {
        let chunk = count.div_ceil(threads * 4);
        crate::engine::install(|| {
            out.par_chunks_mut(chunk * per).enumerate().filter_map(|(ci, o)| f(ci * chunk, o).err()).min_by_key(|e| e.0)
        })
    } else {
        f(0, out).err()
    };
    match first {
        Some((_, m)) => Err(Error::op(op, m)),
        None => Ok(()),
    }
}

fn not_positive_definite(i: usize, s: &[usize]) -> String {
    format!(
        "the matrix at batch index {i} is not symmetric positive definite (Cholesky factorization failed); input shape {}",
        fmt_shape(s)
    )
}

/// `potrf` on matrices of order <= `SMALL_N`: in place in the output, in `T`.
fn potrf_small<T: LaFloat>(c: &OpCall, lower: bool) -> Result<()> {
    let s = &c.inputs[0].shape;
    let n = s[s.len() - 1];
    let nn = n * n;
    if c.outputs[0].size() == 0 {
        return Ok(());
    }
    // SAFETY: the op is not in place, so the output does not alias the input; the
    // engine gives the op exclusive use of its output while it runs.
    let (a, out) = unsafe { (c.inputs[0].slice::<T>(), c.outputs[0].slice_mut::<T>()) };
    for_chunks(c.op.name, out, nn, nn * n, |first, o| {
        let a = &a[first * nn..first * nn + o.len()];
        small_la::potrf_batch(a, o, n, lower).map_err(|j| (first + j, not_positive_definite(first + j, s)))
    })
}

fn potrf_compute(c: &mut OpCall) -> Result<()> {
    let lower = c.params.bool("lower");
    let s = &c.inputs[0].shape;
    let n = s[s.len() - 1];
    if n <= SMALL_N {
        match c.inputs[0].dtype {
            DType::F32 => return potrf_small::<f32>(c, lower),
            DType::F64 => return potrf_small::<f64>(c, lower),
            _ => {}
        }
    }
    let (a, o) = (Buf::of(&c.inputs[0]), Buf::of(&c.outputs[0]));
    for_batch(c.op.name, batch_of(s), n * n * n, |i| {
        let off = i * n * n;
        let l = lower_sym(&a.mat(off, n, n), lower).llt(Side::Lower).map_err(|_| not_positive_definite(i, s))?;
        let l = Mat::from_fn(n, n, |r, k| if r >= k { l.L()[(r, k)] } else { 0.0 });
        o.put(off, if lower { l.as_ref() } else { l.transpose() });
        Ok(())
    })
}

/// The symmetric matrix whose lower triangle the factorization reads: `a` itself
/// (`lower`), or `a` transposed, so that the upper triangle is read.
fn lower_sym(a: &Mat<f64>, lower: bool) -> Mat<f64> {
    if lower {
        a.clone()
    } else {
        a.transpose().to_owned()
    }
}

/// `(L L^T)^-1` from the lower factor `l`.
pub(super) fn chol_inverse(l: &Mat<f64>) -> Mat<f64> {
    let n = l.nrows();
    let mut linv = Mat::<f64>::identity(n, n);
    solve_tri(l.as_ref(), true, &mut linv);
    linv.transpose() * &linv
}

fn potri_compute(c: &mut OpCall) -> Result<()> {
    let lower = c.params.bool("lower");
    let s = &c.inputs[0].shape;
    let n = s[s.len() - 1];
    let (a, o) = (Buf::of(&c.inputs[0]), Buf::of(&c.outputs[0]));
    for_batch(c.op.name, batch_of(s), n * n * n, |i| {
        let off = i * n * n;
        let l = lower_part(&a.mat(off, n, n), lower);
        o.put(off, chol_inverse(&l).as_ref());
        Ok(())
    })
}

// ---- trmm / trsm ----------------------------------------------------------------------

fn triang_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let n = square(a, 0, "A")?;
    let b = matrices(a, 1, "B")?;
    let sa = a.shapes[0];
    let right = a.params.bool("rightside");
    let (m, k) = (b[b.len() - 2], b[b.len() - 1]);
    if sa.len() != b.len() || sa[..sa.len() - 2] != b[..b.len() - 2] || (if right { k } else { m }) != n {
        return Err(a.err(format!(
            "shapes of A {} and B {} do not match (rightside={}): A must be square with order equal to the {} of B, and both must have the same leading dimensions",
            fmt_shape(sa),
            fmt_shape(b),
            if right { "True" } else { "False" },
            if right { "number of columns" } else { "number of rows" },
        )));
    }
    Ok(vec![(Shape::from_slice(b), la_dtype(a)?)])
}

/// `op(tri(A))` of trmm/trsm, and whether it is lower triangular.
pub(super) fn op_tri(a: &Mat<f64>, lower: bool, transpose: bool) -> (Mat<f64>, bool) {
    let t = tri(a, lower);
    if transpose {
        (t.transpose().to_owned(), !lower)
    } else {
        (t, lower)
    }
}

fn trmm_compute(c: &mut OpCall) -> Result<()> {
    let p = c.params;
    let (tr, right, lower, alpha) = (p.bool("transpose"), p.bool("rightside"), p.bool("lower"), p.float("alpha"));
    let (sa, sb) = (&c.inputs[0].shape, &c.inputs[1].shape);
    let n = sa[sa.len() - 1];
    let (m, k) = (sb[sb.len() - 2], sb[sb.len() - 1]);
    let (a, b, o) = (Buf::of(&c.inputs[0]), Buf::of(&c.inputs[1]), Buf::of(&c.outputs[0]));
    for_batch(c.op.name, batch_of(sb), n * m * k, |i| {
        let (t, _) = op_tri(&a.mat(i * n * n, n, n), lower, tr);
        let bm = b.mat(i * m * k, m, k);
        let mut r = if right { &bm * &t } else { &t * &bm };
        scale(&mut r, alpha);
        o.put(i * m * k, r.as_ref());
        Ok(())
    })
}

/// `alpha * op(T)^-1 * B` (or `alpha * B * op(T)^-1` with `right`).
pub(super) fn trsm_one(t: &Mat<f64>, t_lower: bool, b: &Mat<f64>, alpha: f64, right: bool) -> Mat<f64> {
    if right {
        // X op(T) = B  <=>  op(T)^T X^T = B^T
        let mut xt = b.transpose().to_owned();
        solve_tri(t.transpose(), !t_lower, &mut xt);
        scale(&mut xt, alpha);
        xt.transpose().to_owned()
    } else {
        let mut x = b.clone();
        solve_tri(t.as_ref(), t_lower, &mut x);
        scale(&mut x, alpha);
        x
    }
}

/// `trsm` on triangles of order <= `SMALL_N`: in place in the output, in `T`.
fn trsm_small<T: LaFloat>(c: &OpCall, tr: bool, right: bool, lower: bool, alpha: f64) -> Result<()> {
    let (sa, sb) = (&c.inputs[0].shape, &c.inputs[1].shape);
    let n = sa[sa.len() - 1];
    let (m, k) = (sb[sb.len() - 2], sb[sb.len() - 1]);
    let (nn, mk) = (n * n, m * k);
    if c.outputs[0].size() == 0 {
        return Ok(());
    }
    // SAFETY: as in `potrf_small` (trsm is not in place either).
    let (a, b, out) = unsafe { (c.inputs[0].slice::<T>(), c.inputs[1].slice::<T>(), c.outputs[0].slice_mut::<T>()) };
    let alpha = T::from_f64(alpha);
    for_chunks(c.op.name, out, mk, n * mk, |first, o| {
        let count = o.len() / mk;
        let (a, b) = (&a[first * nn..(first + count) * nn], &b[first * mk..first * mk + o.len()]);
        small_la::trsm_batch(a, b, o, small_la::Trsm { n, m, k, lower, transpose: tr, right }, alpha);
        Ok(())
    })
}

fn trsm_compute(c: &mut OpCall) -> Result<()> {
    let p = c.params;
    let (tr, right, lower, alpha) = (p.bool("transpose"), p.bool("rightside"), p.bool("lower"), p.float("alpha"));
    let (sa, sb) = (&c.inputs[0].shape, &c.inputs[1].shape);
    let n = sa[sa.len() - 1];
    if n <= SMALL_N {
        match c.inputs[1].dtype {
            DType::F32 => return trsm_small::<f32>(c, tr, right, lower, alpha),
            DType::F64 => return trsm_small::<f64>(c, tr, right, lower, alpha),
            _ => {}
        }
    }
    let (m, k) = (sb[sb.len() - 2], sb[sb.len() - 1]);
    let (a, b, o) = (Buf::of(&c.inputs[0]), Buf::of(&c.inputs[1]), Buf::of(&c.outputs[0]));
    for_batch(c.op.name, batch_of(sb), n * m * k, |i| {
        let (t, tl) = op_tri(&a.mat(i * n * n, n, n), lower, tr);
        let x = trsm_one(&t, tl, &b.mat(i * m * k, m, k), alpha, right);
        o.put(i * m * k, x.as_ref());
        Ok(())
    })
}

// ---- syrk -----------------------------------------------------------------------------

fn syrk_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let s = matrices(a, 0, "A")?;
    let k = if a.params.bool("transpose") { s[s.len() - 1] } else { s[s.len() - 2] };
    Ok(vec![(with_last(s, 2, &[k, k]), la_dtype(a)?)])
}

fn syrk_compute(c: &mut OpCall) -> Result<()> {
    let (tr, alpha) = (c.params.bool("transpose"), c.params.float("alpha"));
    let s = &c.inputs[0].shape;
    let (m, n) = (s[s.len() - 2], s[s.len() - 1]);
    let k = if tr { n } else { m };
    let (a, o) = (Buf::of(&c.inputs[0]), Buf::of(&c.outputs[0]));
    for_batch(c.op.name, batch_of(s), m * n * k, |i| {
        let am = a.mat(i * m * n, m, n);
        let mut r = if tr { am.transpose() * &am } else { &am * am.transpose() };
        scale(&mut r, alpha);
        o.put(i * k * k, r.as_ref());
        Ok(())
    })
}

#[path = "linalg_la_decomp.rs"]
mod decomp;
#[path = "linalg_la_diag.rs"]
mod diag;
use decomp::*;
use diag::*;

// ---- registration ---------------------------------------------------------------------

fn two(_: &super::Params) -> usize {
    2
}

#[allow(clippy::too_many_arguments)]
fn la(
    name: &'static str,
    alias: &'static [&'static str],
    doc: &'static str,
    inputs: Arity,
    params: &'static [ParamSpec],
    infer: super::InferFn,
    cpu: super::ComputeFn,
) -> OpDef {
    OpDef::new(name, doc, inputs, params, infer, cpu).aliases(alias).cost(16).grad(super::linalg_la_grad::grad_of(name))
}

pub(super) fn register(r: &mut Registry) {
    r.add(la(
        "_linalg_potrf",
        &["linalg_potrf"],
        "Performs Cholesky factorization of a symmetric positive-definite matrix.\n\
         Input is a tensor *A* of dimension *n >= 2*.\n\n\
         If *n=2*, the Cholesky factor *B* of the symmetric, positive definite matrix *A* is\n\
         computed. *B* is triangular (entries of upper or lower triangle are all zero), has\n\
         positive diagonal entries, and:\n\n  *A* = *B* \\* *B*\\ :sup:`T`  if *lower* = *true*\n  \
         *A* = *B*\\ :sup:`T` \\* *B*  otherwise\n\n\
         If *n>2*, *potrf* is performed separately on the trailing two dimensions for all inputs\n\
         (batch mode).\n\n.. note:: The operator supports float32 and float64 data types only.",
        A,
        CHOL_PARAMS,
        same_as_input,
        potrf_compute,
    ));
    r.add(la(
        "_linalg_potri",
        &["linalg_potri"],
        "Performs matrix inversion from a Cholesky factorization.\n\
         Input is a tensor *A* of dimension *n >= 2*.\n\n\
         If *n=2*, *A* is a triangular matrix (entries of upper or lower triangle are all zero)\n\
         with positive diagonal. We compute:\n\n  *out* = *A*\\ :sup:`-T` \\* *A*\\ :sup:`-1` if *lower* = *true*\n  \
         *out* = *A*\\ :sup:`-1` \\* *A*\\ :sup:`-T` otherwise\n\n\
         In other words, if *A* is the Cholesky factor of a symmetric positive definite matrix\n\
         *B* (obtained by *potrf*), then\n\n  *out* = *B*\\ :sup:`-1`\n\n\
         If *n>2*, *potri* is performed separately on the trailing two dimensions for all inputs\n\
         (batch mode).\n\n.. note:: The operator supports float32 and float64 data types only.",
        A,
        CHOL_PARAMS,
        same_as_input,
        potri_compute,
    ));
    r.add(la(
        "_linalg_trmm",
        &["linalg_trmm"],
        "Performs multiplication with a lower triangular matrix.\n\
         Input are tensors *A*, *B*, each of dimension *n >= 2* and having the same shape\n\
         on the leading *n-2* dimensions.\n\n\
         If *n=2*, *A* must be triangular. The operator performs the BLAS3 function\n\
         *trmm*:\n\n   *out* = *alpha* \\* *op*\\ (*A*) \\* *B*\n\n\
         if *rightside=False*, or\n\n   *out* = *alpha* \\* *B* \\* *op*\\ (*A*)\n\n\
         if *rightside=True*. Here, *alpha* is a scalar parameter, and *op()* is either the\n\
         identity or the matrix transposition (depending on *transpose*). Only the triangle\n\
         of *A* named by *lower* is read.\n\n\
         If *n>2*, *trmm* is performed separately on the trailing two dimensions for all inputs\n\
         (batch mode).\n\n.. note:: The operator supports float32 and float64 data types only.",
        AB,
        TRIANG_PARAMS,
        triang_infer,
        trmm_compute,
    ));
    r.add(la(
        "_linalg_trsm",
        &["linalg_trsm"],
        "Solves matrix equation involving a lower triangular matrix.\n\
         Input are tensors *A*, *B*, each of dimension *n >= 2* and having the same shape\n\
         on the leading *n-2* dimensions.\n\n\
         If *n=2*, *A* must be triangular. The operator performs the BLAS3 function\n\
         *trsm*, solving for *out* in:\n\n   *op*\\ (*A*) \\* *out* = *alpha* \\* *B*\n\n\
         if *rightside=False*, or\n\n   *out* \\* *op*\\ (*A*) = *alpha* \\* *B*\n\n\
         if *rightside=True*. Here, *alpha* is a scalar parameter, and *op()* is either the\n\
         identity or the matrix transposition (depending on *transpose*).\n\n\
         If *n>2*, *trsm* is performed separately on the trailing two dimensions for all inputs\n\
         (batch mode).\n\n.. note:: The operator supports float32 and float64 data types only.",
        AB,
        TRIANG_PARAMS,
        triang_infer,
        trsm_compute,
    ));
    r.add(la(
        "_linalg_syrk",
        &["linalg_syrk"],
        "Multiplication of matrix with its transpose.\n\
         Input is a tensor *A* of dimension *n >= 2*.\n\n\
         If *n=2*, the operator performs the BLAS3 function *syrk*:\n\n  \
         *out* = *alpha* \\* *A* \\* *A*\\ :sup:`T`\n\nif *transpose=False*, or\n\n  \
         *out* = *alpha* \\* *A*\\ :sup:`T` \\ \\* *A*\n\nif *transpose=True*.\n\n\
         If *n>2*, *syrk* is performed separately on the trailing two dimensions for all\n\
         inputs (batch mode).\n\n.. note:: The operator supports float32 and float64 data types only.",
        A,
        SYRK_PARAMS,
        syrk_infer,
        syrk_compute,
    ));
    r.add(la(
        "_linalg_sumlogdiag",
        &["linalg_sumlogdiag"],
        "Computes the sum of the logarithms of the diagonal elements of a square matrix.\n\
         Input is a tensor *A* of dimension *n >= 2*.\n\n\
         If *n=2*, *A* must be square with positive diagonal entries. We sum the natural\n\
         logarithms of the diagonal elements, the result has shape (1,).\n\n\
         If *n>2*, *sumlogdiag* is performed separately on the trailing two dimensions for all\n\
         inputs (batch mode).\n\n.. note:: The operator supports float32 and float64 data types only.",
        A,
        &[],
        scalar_infer,
        sumlogdiag_compute,
    ));
    r.add(la(
        "_linalg_extractdiag",
        &["linalg_extractdiag"],
        "Extracts the diagonal entries of a square matrix.\n\
         Input is a tensor *A* of dimension *n >= 2*.\n\n\
         If *n=2*, then *A* represents a single square matrix which diagonal elements get\n\
         extracted as a 1-dimensional tensor.\n\n\
         If *n>2*, then *A* represents a batch of square matrices on the trailing two\n\
         dimensions. The extracted diagonals are returned as an *n-1*-dimensional tensor.\n\n\
         .. note:: The operator supports float32 and float64 data types only.",
        A,
        DIAG_PARAMS,
        extractdiag_infer,
        extractdiag_compute,
    ));
    r.add(la(
        "_linalg_makediag",
        &["linalg_makediag"],
        "Constructs a square matrix with the input as diagonal.\n\
         Input is a tensor *A* of dimension *n >= 1*.\n\n\
         If *n=1*, then *A* represents the diagonal entries of a single square matrix. This\n\
         matrix will be returned as a 2-dimensional tensor.\n\
         If *n>1*, then *A* represents a batch of diagonals of square matrices. The batch of\n\
         diagonal matrices will be returned as an *n+1*-dimensional tensor.\n\n\
         .. note:: The operator supports float32 and float64 data types only.",
        A,
        DIAG_PARAMS,
        makediag_infer,
        makediag_compute,
    ));
    r.add(la(
        "_linalg_extracttrian",
        &["linalg_extracttrian"],
        "Extracts a triangular sub-matrix from a square matrix.\n\
         Input is a tensor *A* of dimension *n >= 2*.\n\n\
         If *n=2*, then *A* represents a single square matrix from which a triangular\n\
         sub-matrix is extracted as a 1-dimensional tensor, row by row.\n\n\
         If *n>2*, then *A* represents a batch of square matrices on the trailing two\n\
         dimensions. The extracted triangular sub-matrices are returned as an\n\
         *n-1*-dimensional tensor.\n\n\
         The *offset* and *lower* parameters determine the triangle to be extracted:\n\n\
         - When *offset = 0* either the lower or upper triangle with respect to the main\n  \
         diagonal is extracted depending on the value of parameter *lower*.\n\
         - When *offset = k > 0* the upper triangle with respect to the k-th diagonal above\n  \
         the main diagonal is extracted.\n\
         - When *offset = k < 0* the lower triangle with respect to the k-th diagonal below\n  \
         the main diagonal is extracted.\n\n\
         .. note:: The operator supports float32 and float64 data types only.",
        A,
        TRIAN_PARAMS,
        extracttrian_infer,
        extracttrian_compute,
    ));
    r.add(la(
        "_linalg_maketrian",
        &["linalg_maketrian"],
        "Constructs a square matrix with the input representing a specific triangular\n\
         sub-matrix. This is basically the inverse of *linalg.extracttrian*. Input is a\n\
         tensor *A* of dimension *n >= 1*.\n\n\
         If *n=1*, then *A* represents the entries of a triangular matrix which is lower\n\
         triangular if *offset<0* or *offset=0*, *lower=true*. The resulting matrix is\n\
         derived by first constructing the square matrix with the entries outside the\n\
         triangle set to zero and then adding *offset*-times an additional diagonal with\n\
         zero entries to the square matrix.\n\n\
         If *n>1*, then *A* represents a batch of triangular sub-matrices. The batch of\n\
         corresponding square matrices is returned as an *n+1*-dimensional tensor.\n\n\
         .. note:: The operator supports float32 and float64 data types only.",
        A,
        TRIAN_PARAMS,
        maketrian_infer,
        maketrian_compute,
    ));
    r.add(
        la(
            "_linalg_gelqf",
            &["linalg_gelqf"],
            "LQ factorization for general matrix.\n\
             Input is a tensor *A* of dimension *n >= 2*.\n\n\
             If *n=2*, we compute the LQ factorization (LAPACK *gelqf*, followed by *orglq*). *A*\n\
             must have shape *(x, y)* with *x <= y*, and must have full rank *=x*. The LQ\n\
             factorization consists of *L* with shape *(x, x)* and *Q* with shape *(x, y)*, so\n\
             that:\n\n   *A* = *L* \\* *Q*\n\n\
             Here, *L* is lower triangular (upper triangle equal to zero) with nonzero diagonal,\n\
             and *Q* is row-orthonormal, meaning that\n\n   *Q* \\* *Q*\\ :sup:`T`\n\n\
             is equal to the identity matrix of shape *(x, x)*.\n\n\
             If *n>2*, *gelqf* is performed separately on the trailing two dimensions for all\n\
             inputs (batch mode).\n\n.. note:: The operator supports float32 and float64 data types only.",
            A,
            &[],
            gelqf_infer,
            gelqf_compute,
        )
        .outputs(two),
    );
    r.add(
        la(
            "_linalg_syevd",
            &["linalg_syevd"],
            "Eigendecomposition for symmetric matrix.\n\
             Input is a tensor *A* of dimension *n >= 2*.\n\n\
             If *n=2*, *A* must be symmetric, of shape *(x, x)*. We compute the eigendecomposition,\n\
             resulting in the orthonormal matrix *U* of eigenvectors, shape *(x, x)*, and the\n\
             vector *L* of eigenvalues, shape *(x,)*, so that:\n\n   \
             *U* \\* *A* = *diag(L)* \\* *U*\n\n\
             Here:\n\n   *U* \\* *U*\\ :sup:`T` = *U*\\ :sup:`T` \\* *U* = *I*\n\n\
             where *I* is the identity matrix. Also, *L(0) <= L(1) <= L(2) <= ...* (ascending order).\n\n\
             If *n>2*, *syevd* is performed separately on the trailing two dimensions of *A* (batch\n\
             mode). In this case, *U* has *n* dimensions like *A*, and *L* has *n-1* dimensions.\n\n\
             .. note:: The operator supports float32 and float64 data types only.",
            A,
            &[],
            syevd_infer,
            syevd_compute,
        )
        .outputs(two),
    );
    r.add(la(
        "_linalg_inverse",
        &["linalg_inverse"],
        "Compute the inverse of a matrix.\n\
         Input is a tensor *A* of dimension *n >= 2*.\n\n\
         If *n=2*, *A* is a square matrix. We compute:\n\n  *out* = *A*\\ :sup:`-1`\n\n\
         If *n>2*, *inverse* is performed separately on the trailing two dimensions\n\
         for all inputs (batch mode).\n\n.. note:: The operator supports float32 and float64 data types only.",
        A,
        &[],
        same_as_input,
        inverse_compute,
    ));
    r.add(la(
        "_linalg_det",
        &["linalg_det"],
        "Compute the determinant of a matrix.\n\
         Input is a tensor *A* of dimension *n >= 2*.\n\n\
         If *n=2*, *A* is a square matrix. We compute:\n\n  *out* = *det(A)*\n\n\
         If *n>2*, *det* is performed separately on the trailing two dimensions\n\
         for all inputs (batch mode).\n\n.. note:: The operator supports float32 and float64 data types only.",
        A,
        &[],
        scalar_infer,
        det_compute,
    ));
    r.add(
        la(
            "_linalg_slogdet",
            &["linalg_slogdet"],
            "Compute the sign and log of the determinant of a matrix.\n\
             Input is a tensor *A* of dimension *n >= 2*.\n\n\
             If *n=2*, *A* is a square matrix. We compute:\n\n  *sign* = *sign(det(A))*\n  \
             *logabsdet* = *log(abs(det(A)))*\n\n\
             If *n>2*, *slogdet* is performed separately on the trailing two dimensions\n\
             for all inputs (batch mode).\n\n.. note:: The operator supports float32 and float64 data types only.",
            A,
            &[],
            slogdet_infer,
            slogdet_compute,
        )
        .outputs(two),
    );
    super::linalg_la_grad::register(r);
}

#[cfg(test)]
#[path = "linalg_la_tests.rs"]
mod tests;
