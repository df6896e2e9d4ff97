//! Products over a batch of matrices: `batch_dot`, `_linalg_gemm2` (`linalg_gemm2`)
//! and `_linalg_gemm` (`linalg_gemm`), all on `gemm_batched`.

use super::{check_stype, float_dtype, tf, DOT_PARAMS, LHS_RHS};
use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::cpu::gemm::{gemm_batched, GemmElem};
use crate::op::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Registry};
use crate::shape::{fmt_shape, Shape};
use half::f16;

// ---- batched products ----------------------------------------------------------

/// A batch of products over arrays whose matrices sit at `(row_axis, last)`:
/// shapes are `(pre..., R, mid..., C)`; the batch runs over `pre` and `mid`.
pub(in crate::op) struct BatchGeom {
    pub(in crate::op) m: usize,
    pub(in crate::op) n: usize,
    pub(in crate::op) k: usize,
    /// Product of the dims before the row axis, and of those between it and the last.
    pub(in crate::op) pre: usize,
    pub(in crate::op) mid: usize,
    /// Stored rows and columns of A and B (before any transpose).
    pub(in crate::op) a_rc: (usize, usize),
    pub(in crate::op) b_rc: (usize, usize),
    pub(in crate::op) ta: bool,
    pub(in crate::op) tb: bool,
    pub(in crate::op) out: Shape,
}

impl BatchGeom {
    pub(in crate::op) fn batch(&self) -> usize {
        self.pre * self.mid
    }
    /// Element offsets of matrix `i` in A, B and the output.
    pub(in crate::op) fn offsets(&self, i: usize) -> [usize; 3] {
        let (p, q) = (i / self.mid, i % self.mid);
        let (ra, ca) = self.a_rc;
        let (rb, cb) = self.b_rc;
        [p * ra * self.mid * ca + q * ca, p * rb * self.mid * cb + q * cb, p * self.m * self.mid * self.n + q * self.n]
    }
    /// Row strides of A, B and the output as stored.
    pub(in crate::op) fn lds(&self) -> [usize; 3] {
        [self.mid * self.a_rc.1, self.mid * self.b_rc.1, self.mid * self.n]
    }
}

/// Matrices at `(axis, ndim-1)` of two arrays of equal rank; every other dim must
/// match. `what` names the convention in messages.
fn batch_geom(op: &str, l: &[usize], r: &[usize], axis: usize, ta: bool, tb: bool) -> Result<BatchGeom> {
    let nd = l.len();
    let last = nd - 1;
    for i in 0..nd {
        if i != axis && i != last && l[i] != r[i] {
            return Err(crate::error::Error::op(
                op,
                format!(
                    "shape mismatch: {} X {}: the batch dimensions must be equal, but dimension {i} is {} vs {}",
                    fmt_shape(l),
                    fmt_shape(r),
                    l[i],
                    r[i]
                ),
            ));
        }
    }
    let (m, lk) = if ta { (l[last], l[axis]) } else { (l[axis], l[last]) };
    let (rk, n) = if tb { (r[last], r[axis]) } else { (r[axis], r[last]) };
    if lk != rk {
        return Err(crate::error::Error::op(
            op,
            format!(
                "shape mismatch: {} X {} (transpose_a={}, transpose_b={}): the summed-over dimensions {lk} and {rk} differ",
                fmt_shape(l),
                fmt_shape(r),
                tf(ta),
                tf(tb)
            ),
        ));
    }
    let mut out = Shape::from_slice(l);
    out[axis] = m;
    out[last] = n;
    Ok(BatchGeom {
        m,
        n,
        k: lk,
        pre: l[..axis].iter().product(),
        mid: l[axis + 1..last].iter().product(),
        a_rc: (l[axis], l[last]),
        b_rc: (r[axis], r[last]),
        ta,
        tb,
        out,
    })
}

/// `out = alpha * op(A) * op(B) + beta * out` over the batch.
fn batch_run<T: GemmElem>(g: &BatchGeom, a: *const T, b: *const T, o: *mut T, alpha: f64, beta: f64) {
    let [lda, ldb, ldc] = g.lds();
    // SAFETY: the geometry was derived from the blobs' shapes, so every matrix of
    // the batch lies inside its buffer and the output matrices are disjoint; the
    // output does not alias the inputs (the ops are not in-place).
    unsafe {
        gemm_batched(g.batch(), g.m, g.n, g.k, T::from_f64(alpha), a, lda, g.ta, b, ldb, g.tb, T::from_f64(beta), o, ldc, |i| g.offsets(i))
    };
}

pub(in crate::op) fn batch_dot_geom(op: &str, l: &[usize], r: &[usize], ta: bool, tb: bool) -> Result<BatchGeom> {
    if l.len() < 3 || l.len() != r.len() {
        return Err(crate::error::Error::op(
            op,
            format!("batch_dot only supports N-D x N-D arrays with the same N >= 3, got lhs {} and rhs {}", fmt_shape(l), fmt_shape(r)),
        ));
    }
    batch_geom(op, l, r, l.len() - 2, ta, tb)
}

fn batch_dot_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    check_stype(a)?;
    let g = batch_dot_geom(a.op.name, a.shapes[0], a.shapes[1], a.params.bool("transpose_a"), a.params.bool("transpose_b"))?;
    let d = float_dtype(a, true)?;
    Ok(vec![(g.out, d)])
}

fn batch_dot_compute(c: &mut OpCall) -> Result<()> {
    let (ta, tb) = (c.params.bool("transpose_a"), c.params.bool("transpose_b"));
    let g = batch_dot_geom(c.op.name, &c.inputs[0].shape, &c.inputs[1].shape, ta, tb)?;
    let (a, b, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    match o.dtype {
        DType::F32 => batch_run::<f32>(&g, a.ptr_as(), b.ptr_as(), o.ptr_as(), 1.0, 0.0),
        DType::F64 => batch_run::<f64>(&g, a.ptr_as(), b.ptr_as(), o.ptr_as(), 1.0, 0.0),
        DType::F16 => batch_run::<f16>(&g, a.ptr_as(), b.ptr_as(), o.ptr_as(), 1.0, 0.0),
        DType::BF16 => batch_run::<half::bf16>(&g, a.ptr_as(), b.ptr_as(), o.ptr_as(), 1.0, 0.0),
        d => return Err(crate::error::Error::op(c.op.name, format!("{} inputs are not supported", d.name()))),
    }
    Ok(())
}

// ---- linalg_gemm2 / linalg_gemm ------------------------------------------------------

const GEMM2_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("transpose_a", PType::Bool, Some("False"), "Multiply with transposed of first input (A)."),
    ParamSpec::new("transpose_b", PType::Bool, Some("False"), "Multiply with transposed of second input (B)."),
    ParamSpec::new("alpha", PType::Float, Some("1"), "Scalar factor multiplied with A*B."),
    ParamSpec::new("axis", PType::Int, Some("-2"), "Axis corresponding to the matrix row indices."),
];

const GEMM_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("transpose_a", PType::Bool, Some("False"), "Multiply with transposed of first input (A)."),
    ParamSpec::new("transpose_b", PType::Bool, Some("False"), "Multiply with transposed of second input (B)."),
    ParamSpec::new("alpha", PType::Float, Some("1"), "Scalar factor multiplied with A*B."),
    ParamSpec::new("beta", PType::Float, Some("1"), "Scalar factor multiplied with C."),
    ParamSpec::new("axis", PType::Int, Some("-2"), "Axis corresponding to the matrix rows."),
];

pub(in crate::op) fn gemm2_geom(op: &str, l: &[usize], r: &[usize], axis: i64, ta: bool, tb: bool) -> Result<BatchGeom> {
    if l.len() < 2 || l.len() != r.len() {
        return Err(crate::error::Error::op(
            op,
            format!("A and B must have the same number of dimensions (at least 2), got A {} and B {}", fmt_shape(l), fmt_shape(r)),
        ));
    }
    let nd = l.len() as i64;
    let ax = if axis < 0 { axis + nd } else { axis };
    if ax < 0 || ax >= nd - 1 {
        return Err(crate::error::Error::op(
            op,
            format!("invalid row axis {axis} for inputs of dimension {nd}: it must lie in [{}, {}) and not be the last axis", -nd, nd - 1),
        ));
    }
    batch_geom(op, l, r, ax as usize, ta, tb)
}

fn gemm2_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let p = a.params;
    let g = gemm2_geom(a.op.name, a.shapes[0], a.shapes[1], p.int("axis"), p.bool("transpose_a"), p.bool("transpose_b"))?;
    let d = float_dtype(a, false)?;
    Ok(vec![(g.out, d)])
}

fn gemm2_compute(c: &mut OpCall) -> Result<()> {
    let p = c.params;
    let (ta, tb) = (p.bool("transpose_a"), p.bool("transpose_b"));
    let g = gemm2_geom(c.op.name, &c.inputs[0].shape, &c.inputs[1].shape, p.int("axis"), ta, tb)?;
    let (a, b, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let alpha = p.float("alpha");
    match o.dtype {
        DType::F32 => batch_run::<f32>(&g, a.ptr_as(), b.ptr_as(), o.ptr_as(), alpha, 0.0),
        DType::F64 => batch_run::<f64>(&g, a.ptr_as(), b.ptr_as(), o.ptr_as(), alpha, 0.0),
        d => return Err(crate::error::Error::op(c.op.name, format!("{} inputs are not supported", d.name()))),
    }
    Ok(())
}

fn gemm_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let p = a.params;
    let g = gemm2_geom(a.op.name, a.shapes[0], a.shapes[1], p.int("axis"), p.bool("transpose_a"), p.bool("transpose_b"))?;
    if a.shapes[2] != &g.out[..] {
        return Err(a.err(format!(
            "shape mismatch: C has shape {} but op(A) * op(B) of A {} and B {} (transpose_a={}, transpose_b={}) has shape {}",
            fmt_shape(a.shapes[2]),
            fmt_shape(a.shapes[0]),
            fmt_shape(a.shapes[1]),
            tf(p.bool("transpose_a")),
            tf(p.bool("transpose_b")),
            fmt_shape(&g.out)
        )));
    }
    let d = float_dtype(a, false)?;
    Ok(vec![(g.out, d)])
}

fn gemm_compute(c: &mut OpCall) -> Result<()> {
    let p = c.params;
    let (ta, tb) = (p.bool("transpose_a"), p.bool("transpose_b"));
    let g = gemm2_geom(c.op.name, &c.inputs[0].shape, &c.inputs[1].shape, p.int("axis"), ta, tb)?;
    let (a, b, cc, o) = (&c.inputs[0], &c.inputs[1], &c.inputs[2], &c.outputs[0]);
    let (alpha, beta) = (p.float("alpha"), p.float("beta"));
    // out = C first (the output is a fresh buffer, never C itself), then the product
    // is accumulated onto it.
    crate::op::copy::copy_bytes(cc.ptr, o.ptr, o.size() * o.dtype.size());
    match o.dtype {
        DType::F32 => batch_run::<f32>(&g, a.ptr_as(), b.ptr_as(), o.ptr_as(), alpha, beta),
        DType::F64 => batch_run::<f64>(&g, a.ptr_as(), b.ptr_as(), o.ptr_as(), alpha, beta),
        d => return Err(crate::error::Error::op(c.op.name, format!("{} inputs are not supported", d.name()))),
    }
    Ok(())
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "batch_dot",
            "Batchwise dot product.\n\n\
             ``batch_dot`` is used to compute dot product of ``x`` and ``y`` when ``x`` and\n\
             ``y`` are data in batch, namely N-D (N >= 3) arrays in shape of `(B0, ..., B_i, :, :)`.\n\n\
             For example, given ``x`` with shape `(B_0, ..., B_i, N, M)` and ``y`` with shape\n\
             `(B_0, ..., B_i, M, K)`, the result array will have shape `(B_0, ..., B_i, N, K)`,\n\
             which is computed by::\n\n   \
             batch_dot(x,y)[b_0, ..., b_i, :, :] = dot(x[b_0, ..., b_i, :, :], y[b_0, ..., b_i, :, :])",
            LHS_RHS,
            DOT_PARAMS,
            batch_dot_infer,
            batch_dot_compute,
        )
        .cost(8),
    );
    r.add(
        OpDef::new(
            "_linalg_gemm2",
            "Performs general matrix multiplication.\n\
             Input are tensors *A*, *B*, each of dimension *n >= 2* and having the same shape\n\
             on the leading *n-2* dimensions.\n\n\
             If *n=2*, the BLAS3 function *gemm* is performed:\n\n   \
             *out* = *alpha* \\* *op*\\ (*A*) \\* *op*\\ (*B*)\n\n\
             Here *alpha* is a scalar parameter and *op()* is either the identity or the matrix\n\
             transposition (depending on *transpose_a*, *transpose_b*).\n\n\
             If *n>2*, *gemm* is performed separately for a batch of matrices. The column indices of the matrices\n\
             are given by the last dimensions of the tensors, the row indices by the axis specified with the *axis*\n\
             parameter. By default, the trailing two dimensions will be used for matrix encoding.\n\n\
             .. note:: The operator supports float32 and float64 data types only.",
            Arity::Fixed(&["A", "B"]),
            GEMM2_PARAMS,
            gemm2_infer,
            gemm2_compute,
        )
        .aliases(&["linalg_gemm2"])
        .cost(8),
    );
    r.add(
        OpDef::new(
            "_linalg_gemm",
            "Performs general matrix multiplication and accumulation.\n\
             Input are tensors *A*, *B*, *C*, each of dimension *n >= 2* and having the same shape\n\
             on the leading *n-2* dimensions.\n\n\
             If *n=2*, the BLAS3 function *gemm* is performed:\n\n   \
             *out* = *alpha* \\* *op*\\ (*A*) \\* *op*\\ (*B*) + *beta* \\* *C*\n\n\
             Here, *alpha* and *beta* are scalar parameters, and *op()* is either the identity or\n\
             matrix transposition (depending on *transpose_a*, *transpose_b*).\n\n\
             If *n>2*, *gemm* is performed separately for a batch of matrices. The column indices of the matrices\n\
             are given by the last dimensions of the tensors, the row indices by the axis specified with the *axis*\n\
             parameter. By default, the trailing two dimensions will be used for matrix encoding.\n\n\
             .. note:: The operator supports float32 and float64 data types only.",
            Arity::Fixed(&["A", "B", "C"]),
            GEMM_PARAMS,
            gemm_infer,
            gemm_compute,
        )
        .aliases(&["linalg_gemm"])
        .cost(8),
    );
}
