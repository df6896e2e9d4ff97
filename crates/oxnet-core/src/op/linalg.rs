//! Matrix products: `dot` (MXNet's N-d dot), `batch_dot`, `_linalg_gemm2`
//! (`linalg_gemm2`) and `_linalg_gemm` (`linalg_gemm`). All of them run on the
//! GEMM of `kernels::cpu::gemm`; float32 and float64 everywhere, float16 for
//! `dot`/`batch_dot` (MXNet accepts it there on GPU; here on every device, with
//! float32 accumulation). Integer and bool inputs are rejected, as in MXNet.

use super::{check_same_dtype, Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Registry};
use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::cpu::gemm::{gemm, gemm_batched, GemmElem};
use crate::shape::{fmt_shape, Shape};
use half::f16;

const LHS_RHS: Arity = Arity::Fixed(&["lhs", "rhs"]);

const DOT_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "transpose_a",
        PType::Bool,
        Some("False"),
        "If true then transpose the first input before dot.",
    ),
    ParamSpec::new(
        "transpose_b",
        PType::Bool,
        Some("False"),
        "If true then transpose the second input before dot.",
    ),
    ParamSpec::choice(
        "forward_stype",
        &["None", "csr", "default", "row_sparse"],
        Some("None"),
        "The desired storage type of the forward output given by user, if thecombination of input storage types and this hint does not matchany implemented ones, the dot operator will perform fallback operationand still produce an output of the desired storage type.",
    ),
];

/// oxnet stores every array densely: a sparse `forward_stype` is refused.
fn check_stype(a: &InferArgs) -> Result<()> {
    // Any forward_stype is fine: a sparse one is honoured by the storage dispatch
    // (op::sparse), which casts the result.
    let _ = a;
    Ok(())
}

fn tf(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// Common dtype of the two (or three) inputs; float32/float64 always, float16 when
/// `half_ok`.
fn float_dtype(a: &InferArgs, half_ok: bool) -> Result<DType> {
    let d = check_same_dtype(a)?;
    match d {
        DType::F32 | DType::F64 => Ok(d),
        DType::F16 | DType::BF16 if half_ok => Ok(d),
        _ => Err(a.err(format!(
            "{} inputs are not supported: {} only supports {}",
            d.name(),
            a.op.name,
            if half_ok { "float32, float64, float16 and bfloat16" } else { "32-bit and 64-bit floating point (float32, float64)" }
        ))),
    }
}

// ---- dot --------------------------------------------------------------------

/// How `dot` sees its inputs as matrices: `op(A)` is `m × k`, `op(B)` is `k × n`,
/// the output has shape `out`.
pub(super) struct DotGeom {
    pub(super) m: usize,
    pub(super) n: usize,
    pub(super) k: usize,
    pub(super) out: Shape,
}

/// MXNet's N-d `dot`: without `transpose_a`, lhs is `(prod(shape[:-1]), shape[-1])`;
/// with it, lhs is `(shape[0], prod(shape[1:]))` transposed. Without `transpose_b`,
/// rhs is `(shape[0], prod(shape[1:]))`; with it, `(prod(shape[:-1]), shape[-1])`
/// transposed. The output shape is the kept dims of lhs followed by those of rhs,
/// `(1,)` when both are vectors.
pub(super) fn dot_geom(op: &str, l: &[usize], r: &[usize], ta: bool, tb: bool) -> Result<DotGeom> {
    let err = |msg: String| crate::error::Error::op(op, msg);
    if l.is_empty() || r.is_empty() {
        return Err(err(format!("inputs must have at least one dimension, got lhs {} and rhs {}", fmt_shape(l), fmt_shape(r))));
    }
    if l.len() == 1 && r.len() == 1 {
        if ta || tb {
            return Err(err(format!(
                "cannot transpose vectors: lhs {} and rhs {} are both 1-D (transpose_a={}, transpose_b={})",
                fmt_shape(l),
                fmt_shape(r),
                tf(ta),
                tf(tb)
            )));
        }
        if l[0] != r[0] {
            return Err(err(format!("shape mismatch: lhs {} and rhs {} must have the same length", fmt_shape(l), fmt_shape(r))));
        }
        return Ok(DotGeom { m: 1, n: 1, k: l[0], out: Shape::from_slice(&[1]) });
    }
    let (lk, lkeep) = if ta { (l[0], &l[1..]) } else { (l[l.len() - 1], &l[..l.len() - 1]) };
    let (rk, rkeep) = if tb { (r[r.len() - 1], &r[..r.len() - 1]) } else { (r[0], &r[1..]) };
    if lk != rk {
        return Err(err(format!(
            "shape mismatch: lhs {} X rhs {} (transpose_a={}, transpose_b={}): the summed-over dimensions {} and {} differ",
            fmt_shape(l),
            fmt_shape(r),
            tf(ta),
            tf(tb),
            lk,
            rk
        )));
    }
    let mut out: Shape = lkeep.iter().chain(rkeep).copied().collect();
    if out.is_empty() {
        out.push(1);
    }
    Ok(DotGeom { m: lkeep.iter().product(), n: rkeep.iter().product(), k: lk, out })
}

fn dot_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    check_stype(a)?;
    let g = dot_geom(a.op.name, a.shapes[0], a.shapes[1], a.params.bool("transpose_a"), a.params.bool("transpose_b"))?;
    let d = float_dtype(a, true)?;
    Ok(vec![(g.out, d)])
}

fn dot_run<T: GemmElem>(c: &OpCall, g: &DotGeom, ta: bool, tb: bool) {
    let (l, r, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let lda = if ta { g.m } else { g.k };
    let ldb = if tb { g.k } else { g.n };
    // SAFETY: the blobs hold m*k, k*n and m*n elements as the geometry says; the
    // engine gives this op exclusive write access to the output, which invoke never
    // aliases with an input for this (non-inplace) op.
    unsafe { gemm::<T>(g.m, g.n, g.k, T::from_f64(1.0), l.ptr_as(), lda, ta, r.ptr_as(), ldb, tb, T::zero(), o.ptr_as(), g.n) };
}

fn dot_compute(c: &mut OpCall) -> Result<()> {
    let (ta, tb) = (c.params.bool("transpose_a"), c.params.bool("transpose_b"));
    let g = dot_geom(c.op.name, &c.inputs[0].shape, &c.inputs[1].shape, ta, tb)?;
    match c.outputs[0].dtype {
        DType::F32 => dot_run::<f32>(c, &g, ta, tb),
        DType::F64 => dot_run::<f64>(c, &g, ta, tb),
        DType::F16 => dot_run::<f16>(c, &g, ta, tb),
        DType::BF16 => dot_run::<half::bf16>(c, &g, ta, tb),
        d => return Err(crate::error::Error::op(c.op.name, format!("{} inputs are not supported", d.name()))),
    }
    Ok(())
}

// ---- batched products ----------------------------------------------------------

/// A batch of products over arrays whose matrices sit at `(row_axis, last)`:
/// shapes are `(pre..., R, mid..., C)`; the batch runs over `pre` and `mid`.
pub(super) struct BatchGeom {
    pub(super) m: usize,
    pub(super) n: usize,
    pub(super) k: usize,
    /// Product of the dims before the row axis, and of those between it and the last.
    pub(super) pre: usize,
    pub(super) mid: usize,
    /// Stored rows and columns of A and B (before any transpose).
    pub(super) a_rc: (usize, usize),
    pub(super) b_rc: (usize, usize),
    pub(super) ta: bool,
    pub(super) tb: bool,
    pub(super) out: Shape,
}

impl BatchGeom {
    pub(super) fn batch(&self) -> usize {
        self.pre * self.mid
    }
    /// Element offsets of matrix `i` in A, B and the output.
    pub(super) fn offsets(&self, i: usize) -> [usize; 3] {
        let (p, q) = (i / self.mid, i % self.mid);
        let (ra, ca) = self.a_rc;
        let (rb, cb) = self.b_rc;
        [p * ra * self.mid * ca + q * ca, p * rb * self.mid * cb + q * cb, p * self.m * self.mid * self.n + q * self.n]
    }
    /// Row strides of A, B and the output as stored.
    pub(super) fn lds(&self) -> [usize; 3] {
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

pub(super) fn batch_dot_geom(op: &str, l: &[usize], r: &[usize], ta: bool, tb: bool) -> Result<BatchGeom> {
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

pub(super) fn gemm2_geom(op: &str, l: &[usize], r: &[usize], axis: i64, ta: bool, tb: bool) -> Result<BatchGeom> {
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
    super::copy::copy_bytes(cc.ptr, o.ptr, o.size() * o.dtype.size());
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
            "dot",
            "Dot product of two arrays.\n\n\
             ``dot``'s behavior depends on the input array dimensions:\n\n\
             - 1-D arrays: inner product of vectors (the result has shape ``(1,)``)\n\
             - 2-D arrays: matrix multiplication\n\
             - N-D arrays: a sum product over the last axis of the first input and the first\n  \
             axis of the second input\n\n  \
             For example, given 3-D ``x`` with shape `(n,m,k)` and ``y`` with shape `(k,r,s)`, the\n  \
             result array will have shape `(n,m,r,s)`. It is computed by::\n\n    \
             dot(x,y)[i,j,a,b] = sum(x[i,j,:]*y[:,a,b])\n\n\
             With ``transpose_a`` the first input is seen as the matrix `(shape[0], prod(shape[1:]))`\n\
             and transposed (the sum runs over its first axis); with ``transpose_b`` the second input\n\
             is seen as `(prod(shape[:-1]), shape[-1])` and transposed (the sum runs over its last axis).",
            LHS_RHS,
            DOT_PARAMS,
            dot_infer,
            dot_compute,
        )
        .cost(8),
    );
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

#[cfg(test)]
mod tests {
    use crate::dtype::{DType, Element};
    use crate::op::{call1, Value};
    use crate::{Context, NDArray};
    use half::f16;

    /// The inputs of every case: multiples of 1/4 in [-1.5, 1.5], so every product
    /// and partial sum below is exact in float32 and float64 and results compare
    /// exactly. NumPy: `((np.arange(n) * 7 + 3 + seed) % 13) / 4 - 1.5`.
    fn gen(n: usize, seed: usize) -> Vec<f64> {
        (0..n).map(|i| ((i * 7 + 3 + seed) % 13) as f64 / 4.0 - 1.5).collect()
    }

    /// Two positional checksums of a result (computed the same way in NumPy).
    fn checksum(v: &[f64]) -> (f64, f64) {
        let a = v.iter().enumerate().map(|(i, x)| x * ((i % 7) as f64 - 3.0)).sum();
        let b = v.iter().enumerate().map(|(i, x)| x * x * (i % 5) as f64).sum();
        (a, b)
    }

    fn arr<T: Element>(shape: &[usize], seed: usize) -> NDArray {
        let n = shape.iter().product();
        let v: Vec<T> = gen(n, seed).into_iter().map(T::from_f64).collect();
        NDArray::from_vec(shape, &v, Context::cpu(0)).unwrap()
    }

    struct Case {
        op: &'static str,
        lhs: &'static [usize],
        rhs: &'static [usize],
        c: Option<&'static [usize]>,
        params: &'static [(&'static str, Value)],
        out: &'static [usize],
        checksum: (f64, f64),
        values: Option<&'static [f64]>,
    }

    /// Generated by a NumPy script (lhs = gen(seed 0), rhs = gen(seed 5), C = gen(seed 2));
    /// every case was also checked against MXNet 1.9.1 (shapes and checksums).
    const CASES: &[Case] = &[
        Case {
            op: "dot",
            lhs: &[2, 3],
            rhs: &[3, 4],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(false))],
            out: &[2, 4],
            checksum: (-4.5625, 35.00390625),
            values: Some(&[-0.125, 0.25, 1.4375, 0.1875, 2.625, -1.125, -1.625, -0.5]),
        },
        Case {
            op: "dot",
            lhs: &[2, 3],
            rhs: &[4, 3],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(true))],
            out: &[2, 4],
            checksum: (11.0625, 50.85546875),
            values: Some(&[-1.75, 1.8125, -1.9375, -1.625, 2.0, -1.9375, 3.875, 0.75]),
        },
        Case {
            op: "dot",
            lhs: &[3, 2],
            rhs: &[3, 4],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(false))],
            out: &[2, 4],
            checksum: (5.5625, 68.44140625),
            values: Some(&[-1.25, 1.0, -0.8125, 0.625, 4.0, -1.625, 0.0625, -0.6875]),
        },
        Case {
            op: "dot",
            lhs: &[3, 2],
            rhs: &[4, 3],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(true))],
            out: &[2, 4],
            checksum: (14.9375, 19.49609375),
            values: Some(&[-0.0625, 0.1875, -1.1875, 0.6875, 0.375, -0.25, 3.1875, -1.5]),
        },
        Case {
            op: "dot",
            lhs: &[67, 45],
            rhs: &[45, 83],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(false))],
            out: &[67, 83],
            checksum: (75.625, 725878.484375),
            values: None,
        },
        Case {
            op: "dot",
            lhs: &[67, 45],
            rhs: &[83, 45],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(true))],
            out: &[67, 83],
            checksum: (93.75, 3733241.8203125),
            values: None,
        },
        Case {
            op: "dot",
            lhs: &[45, 67],
            rhs: &[45, 83],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(false))],
            out: &[67, 83],
            checksum: (-131.25, 893987.37109375),
            values: None,
        },
        Case {
            op: "dot",
            lhs: &[45, 67],
            rhs: &[83, 45],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(true))],
            out: &[67, 83],
            checksum: (16.9375, 1245010.0390625),
            values: None,
        },
        Case {
            op: "dot",
            lhs: &[130, 257],
            rhs: &[257, 129],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(false))],
            out: &[130, 129],
            checksum: (-674.375, 363527183.90625),
            values: None,
        },
        Case {
            op: "dot",
            lhs: &[130, 257],
            rhs: &[129, 257],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(true))],
            out: &[130, 129],
            checksum: (643.375, 363527183.90625),
            values: None,
        },
        Case {
            op: "dot",
            lhs: &[257, 130],
            rhs: &[257, 129],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(false))],
            out: &[130, 129],
            checksum: (56.6875, 55438.90625),
            values: None,
        },
        Case {
            op: "dot",
            lhs: &[257, 130],
            rhs: &[129, 257],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(true))],
            out: &[130, 129],
            checksum: (-64.5, 55438.90625),
            values: None,
        },
        Case {
            op: "dot",
            lhs: &[2, 5, 3],
            rhs: &[3, 4, 6],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(false))],
            out: &[2, 5, 4, 6],
            checksum: (40.8125, 664.06640625),
            values: None,
        },
        Case {
            op: "dot",
            lhs: &[2, 5, 3],
            rhs: &[4, 6, 3],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(true))],
            out: &[2, 5, 4, 6],
            checksum: (-16.625, 1804.09375),
            values: None,
        },
        Case {
            op: "dot",
            lhs: &[3, 2, 5],
            rhs: &[3, 4, 6],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(false))],
            out: &[2, 5, 4, 6],
            checksum: (-41.4375, 648.30078125),
            values: None,
        },
        Case {
            op: "dot",
            lhs: &[3, 2, 5],
            rhs: &[4, 6, 3],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(true))],
            out: &[2, 5, 4, 6],
            checksum: (-10.4375, 1436.0390625),
            values: None,
        },
        Case {
            op: "dot",
            lhs: &[5],
            rhs: &[5],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(false))],
            out: &[1],
            checksum: (8.8125, 0.0),
            values: Some(&[-2.9375]),
        },
        Case {
            op: "dot",
            lhs: &[3],
            rhs: &[3, 4],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(false))],
            out: &[4],
            checksum: (-1.5625, 4.30078125),
            values: Some(&[-0.125, 0.25, 1.4375, 0.1875]),
        },
        Case {
            op: "dot",
            lhs: &[3],
            rhs: &[4, 3],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(true))],
            out: &[4],
            checksum: (3.5625, 18.71484375),
            values: Some(&[-1.75, 1.8125, -1.9375, -1.625]),
        },
        Case {
            op: "dot",
            lhs: &[3],
            rhs: &[3, 4],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(false))],
            out: &[4],
            checksum: (-1.5625, 4.30078125),
            values: Some(&[-0.125, 0.25, 1.4375, 0.1875]),
        },
        Case {
            op: "dot",
            lhs: &[4, 3],
            rhs: &[3],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(false))],
            out: &[4],
            checksum: (-0.4375, 20.2421875),
            values: Some(&[-1.75, 2.0, 1.6875, -1.875]),
        },
        Case {
            op: "dot",
            lhs: &[3, 4],
            rhs: &[3],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(false))],
            out: &[4],
            checksum: (3.5625, 9.45703125),
            values: Some(&[0.0625, -1.9375, 0.125, 1.375]),
        },
        Case {
            op: "dot",
            lhs: &[4, 3],
            rhs: &[3],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(true))],
            out: &[4],
            checksum: (-0.4375, 20.2421875),
            values: Some(&[-1.75, 2.0, 1.6875, -1.875]),
        },
        Case {
            op: "dot",
            lhs: &[2, 2, 2, 3],
            rhs: &[3],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(false))],
            out: &[2, 2, 2],
            checksum: (-8.3125, 40.5703125),
            values: Some(&[-1.75, 2.0, 1.6875, -1.875, 1.875, -1.6875, -0.375, 1.75]),
        },
        Case {
            op: "dot",
            lhs: &[3],
            rhs: &[3, 2, 2, 2],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(false))],
            out: &[2, 2, 2],
            checksum: (-15.6875, 30.25),
            values: Some(&[1.5, 0.25, -1.8125, 0.1875, -1.875, 0.125, -1.9375, 1.6875]),
        },
        Case {
            op: "dot",
            lhs: &[3, 5, 2],
            rhs: &[3, 4, 6],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(false))],
            out: &[5, 2, 4, 6],
            checksum: (-41.4375, 648.30078125),
            values: None,
        },
        Case {
            op: "dot",
            lhs: &[2, 5, 3],
            rhs: &[2, 4, 6],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(false))],
            out: &[5, 3, 4, 6],
            checksum: (-28.1875, 1428.69140625),
            values: None,
        },
        Case {
            op: "dot",
            lhs: &[3, 5, 2],
            rhs: &[4, 6, 3],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(true))],
            out: &[5, 2, 4, 6],
            checksum: (-10.4375, 1436.0390625),
            values: None,
        },
        Case {
            op: "dot",
            lhs: &[1, 1],
            rhs: &[1, 1],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(false))],
            out: &[1, 1],
            checksum: (1.125, 0.0),
            values: Some(&[-0.375]),
        },
        Case {
            op: "batch_dot",
            lhs: &[2, 3, 4],
            rhs: &[2, 4, 5],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(false))],
            out: &[2, 3, 5],
            checksum: (-13.875, 230.19921875),
            values: Some(&[
                0.8125, 0.9375, 1.0625, 1.1875, 1.3125, -2.0, 3.25, -2.0625, 3.1875, -2.125, -0.75, -0.9375, -1.125, -1.3125, -1.5, 1.75,
                1.0, 1.875, -1.3125, 2.0, 1.5, 1.0, 2.125, -2.4375, 2.75, -1.1875, -2.25, -1.6875, 2.125, -2.1875,
            ]),
        },
        Case {
            op: "batch_dot",
            lhs: &[2, 3, 4],
            rhs: &[2, 5, 4],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(true))],
            out: &[2, 3, 5],
            checksum: (-9.875, 447.27734375),
            values: Some(&[
                -2.6875, -2.1875, -0.0625, 2.875, 3.375, -0.5, -0.625, -0.75, -0.0625, -0.1875, 2.5, 1.75, -0.625, -2.1875, -2.9375,
                -0.5625, 2.125, 2.375, 2.625, -2.8125, -0.6875, 1.375, 2.625, 3.875, -3.8125, 0.0, -1.8125, -2.8125, -3.8125, 4.125,
            ]),
        },
        Case {
            op: "batch_dot",
            lhs: &[2, 4, 3],
            rhs: &[2, 4, 5],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(false))],
            out: &[2, 3, 5],
            checksum: (2.875, 359.33984375),
            values: Some(&[
                -1.9375, 3.25, -2.125, 3.0625, -2.3125, 3.25, -2.0625, 3.1875, -2.125, 3.125, -2.125, 3.1875, -2.0625, 3.25, -2.0, 1.9375,
                -0.25, 2.4375, -2.1875, 2.9375, -1.375, 1.375, -1.5625, 3.625, -1.75, -1.4375, 1.375, -1.5, -1.9375, -1.5625,
            ]),
        },
        Case {
            op: "batch_dot",
            lhs: &[2, 4, 3],
            rhs: &[2, 5, 4],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(true))],
            out: &[2, 3, 5],
            checksum: (-3.625, 140.609375),
            values: Some(&[
                -0.6875, -1.0625, -1.4375, 0.625, 0.25, -0.75, -0.875, 3.875, 0.5, 0.375, -0.8125, -0.6875, -1.375, 0.375, 0.5, -1.3125,
                1.3125, 2.3125, 3.3125, -3.0, 3.9375, -0.5, -0.875, -1.25, 0.8125, -1.375, -0.6875, -0.8125, -0.9375, 0.5625,
            ]),
        },
        Case {
            op: "batch_dot",
            lhs: &[2, 3, 3, 4],
            rhs: &[2, 3, 4, 5],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(false))],
            out: &[2, 3, 3, 5],
            checksum: (2.6875, 557.87109375),
            values: None,
        },
        Case {
            op: "batch_dot",
            lhs: &[2, 3, 3, 4],
            rhs: &[2, 3, 5, 4],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(true))],
            out: &[2, 3, 3, 5],
            checksum: (-45.875, 1092.4921875),
            values: None,
        },
        Case {
            op: "batch_dot",
            lhs: &[2, 3, 4, 3],
            rhs: &[2, 3, 4, 5],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(false))],
            out: &[2, 3, 3, 5],
            checksum: (7.8125, 800.21484375),
            values: None,
        },
        Case {
            op: "batch_dot",
            lhs: &[2, 3, 4, 3],
            rhs: &[2, 3, 5, 4],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(true))],
            out: &[2, 3, 3, 5],
            checksum: (-42.375, 627.953125),
            values: None,
        },
        Case {
            op: "batch_dot",
            lhs: &[2, 100, 120],
            rhs: &[2, 120, 110],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(false))],
            out: &[2, 100, 110],
            checksum: (-401.125, 34712636.82421875),
            values: None,
        },
        Case {
            op: "batch_dot",
            lhs: &[2, 100, 120],
            rhs: &[2, 110, 120],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(true))],
            out: &[2, 100, 110],
            checksum: (804.25, 104062711.69140625),
            values: None,
        },
        Case {
            op: "batch_dot",
            lhs: &[2, 120, 100],
            rhs: &[2, 120, 110],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(false))],
            out: &[2, 100, 110],
            checksum: (1869.9375, 19904125.640625),
            values: None,
        },
        Case {
            op: "batch_dot",
            lhs: &[2, 120, 100],
            rhs: &[2, 110, 120],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(true))],
            out: &[2, 100, 110],
            checksum: (-440.5625, 24771177.3828125),
            values: None,
        },
        Case {
            op: "batch_dot",
            lhs: &[3000, 8, 8],
            rhs: &[3000, 8, 8],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(false))],
            out: &[3000, 8, 8],
            checksum: (-109.3125, 1544030.64453125),
            values: None,
        },
        Case {
            op: "batch_dot",
            lhs: &[3000, 8, 8],
            rhs: &[3000, 8, 8],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(true))],
            out: &[3000, 8, 8],
            checksum: (39.875, 5597937.73828125),
            values: None,
        },
        Case {
            op: "batch_dot",
            lhs: &[3000, 8, 8],
            rhs: &[3000, 8, 8],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(false))],
            out: &[3000, 8, 8],
            checksum: (42.5625, 4912404.73828125),
            values: None,
        },
        Case {
            op: "batch_dot",
            lhs: &[3000, 8, 8],
            rhs: &[3000, 8, 8],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(true))],
            out: &[3000, 8, 8],
            checksum: (-82.1875, 1544234.1640625),
            values: None,
        },
        Case {
            op: "batch_dot",
            lhs: &[7, 1, 9],
            rhs: &[7, 9, 1],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(false))],
            out: &[7, 1, 1],
            checksum: (3.1875, 186.0703125),
            values: Some(&[-2.9375, -4.875, -2.3125, -2.5625, -5.625, -2.5625, -2.3125]),
        },
        Case {
            op: "batch_dot",
            lhs: &[7, 1, 9],
            rhs: &[7, 1, 9],
            c: None,
            params: &[("transpose_a", Value::Bool(false)), ("transpose_b", Value::Bool(true))],
            out: &[7, 1, 1],
            checksum: (3.1875, 186.0703125),
            values: Some(&[-2.9375, -4.875, -2.3125, -2.5625, -5.625, -2.5625, -2.3125]),
        },
        Case {
            op: "batch_dot",
            lhs: &[7, 9, 1],
            rhs: &[7, 9, 1],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(false))],
            out: &[7, 1, 1],
            checksum: (3.1875, 186.0703125),
            values: Some(&[-2.9375, -4.875, -2.3125, -2.5625, -5.625, -2.5625, -2.3125]),
        },
        Case {
            op: "batch_dot",
            lhs: &[7, 9, 1],
            rhs: &[7, 1, 9],
            c: None,
            params: &[("transpose_a", Value::Bool(true)), ("transpose_b", Value::Bool(true))],
            out: &[7, 1, 1],
            checksum: (3.1875, 186.0703125),
            values: Some(&[-2.9375, -4.875, -2.3125, -2.5625, -5.625, -2.5625, -2.3125]),
        },
        Case {
            op: "linalg_gemm2",
            lhs: &[3, 4],
            rhs: &[4, 5],
            c: None,
            params: &[
                ("transpose_a", Value::Bool(false)),
                ("transpose_b", Value::Bool(false)),
                ("alpha", Value::Float(1.0)),
                ("axis", Value::Int(-2)),
            ],
            out: &[3, 5],
            checksum: (1.0, 99.44921875),
            values: Some(&[
                0.8125, 0.9375, 1.0625, 1.1875, 1.3125, -2.0, 3.25, -2.0625, 3.1875, -2.125, -0.75, -0.9375, -1.125, -1.3125, -1.5,
            ]),
        },
        Case {
            op: "linalg_gemm2",
            lhs: &[4, 3],
            rhs: &[4, 5],
            c: None,
            params: &[
                ("transpose_a", Value::Bool(true)),
                ("transpose_b", Value::Bool(false)),
                ("alpha", Value::Float(2.5)),
                ("axis", Value::Int(-2)),
            ],
            out: &[3, 5],
            checksum: (14.53125, 1329.1259765625),
            values: Some(&[
                -4.84375, 8.125, -5.3125, 7.65625, -5.78125, 8.125, -5.15625, 7.96875, -5.3125, 7.8125, -5.3125, 7.96875, -5.15625, 8.125,
                -5.0,
            ]),
        },
        Case {
            op: "linalg_gemm2",
            lhs: &[3, 4],
            rhs: &[5, 4],
            c: None,
            params: &[
                ("transpose_a", Value::Bool(false)),
                ("transpose_b", Value::Bool(true)),
                ("alpha", Value::Float(-0.5)),
                ("axis", Value::Int(0)),
            ],
            out: &[3, 5],
            checksum: (-9.15625, 32.3837890625),
            values: Some(&[
                1.34375, 1.09375, 0.03125, -1.4375, -1.6875, 0.25, 0.3125, 0.375, 0.03125, 0.09375, -1.25, -0.875, 0.3125, 1.09375, 1.46875,
            ]),
        },
        Case {
            op: "linalg_gemm2",
            lhs: &[3, 2, 4],
            rhs: &[4, 2, 5],
            c: None,
            params: &[
                ("transpose_a", Value::Bool(false)),
                ("transpose_b", Value::Bool(false)),
                ("alpha", Value::Float(1.0)),
                ("axis", Value::Int(0)),
            ],
            out: &[3, 2, 5],
            checksum: (9.5625, 205.64453125),
            values: Some(&[
                -0.5, -0.375, -0.25, 1.5, 0.0, 1.25, 0.8125, 1.1875, 0.75, 1.125, 0.875, 0.6875, 0.5, -1.3125, 0.125, -2.1875, 2.75,
                -2.0625, 2.875, -1.9375, 0.625, 0.9375, 1.25, -3.3125, 1.875, 2.5, -3.4375, 2.0, -3.9375, 1.5,
            ]),
        },
        Case {
            op: "linalg_gemm2",
            lhs: &[2, 4, 2, 3],
            rhs: &[2, 4, 2, 5],
            c: None,
            params: &[
                ("transpose_a", Value::Bool(true)),
                ("transpose_b", Value::Bool(false)),
                ("alpha", Value::Float(1.0)),
                ("axis", Value::Int(1)),
            ],
            out: &[2, 3, 2, 5],
            checksum: (-48.125, 331.96875),
            values: None,
        },
        Case {
            op: "linalg_gemm2",
            lhs: &[2, 3, 2, 4],
            rhs: &[2, 5, 2, 4],
            c: None,
            params: &[
                ("transpose_a", Value::Bool(false)),
                ("transpose_b", Value::Bool(true)),
                ("alpha", Value::Float(2.0)),
                ("axis", Value::Int(-3)),
            ],
            out: &[2, 3, 2, 5],
            checksum: (-60.625, 2817.015625),
            values: None,
        },
        Case {
            op: "linalg_gemm2",
            lhs: &[2, 2, 3, 4],
            rhs: &[2, 2, 4, 5],
            c: None,
            params: &[
                ("transpose_a", Value::Bool(false)),
                ("transpose_b", Value::Bool(false)),
                ("alpha", Value::Float(1.0)),
                ("axis", Value::Int(2)),
            ],
            out: &[2, 2, 3, 5],
            checksum: (-2.0, 414.8203125),
            values: None,
        },
        Case {
            op: "linalg_gemm2",
            lhs: &[4, 2, 2, 3],
            rhs: &[5, 2, 2, 4],
            c: None,
            params: &[
                ("transpose_a", Value::Bool(true)),
                ("transpose_b", Value::Bool(true)),
                ("alpha", Value::Float(0.25)),
                ("axis", Value::Int(0)),
            ],
            out: &[3, 2, 2, 5],
            checksum: (16.796875, 41.364990234375),
            values: None,
        },
        Case {
            op: "linalg_gemm2",
            lhs: &[40, 3, 50],
            rhs: &[50, 3, 60],
            c: None,
            params: &[
                ("transpose_a", Value::Bool(false)),
                ("transpose_b", Value::Bool(false)),
                ("alpha", Value::Float(1.0)),
                ("axis", Value::Int(0)),
            ],
            out: &[40, 3, 60],
            checksum: (-49.375, 1981288.9609375),
            values: None,
        },
        Case {
            op: "linalg_gemm",
            lhs: &[3, 4],
            rhs: &[4, 5],
            c: Some(&[3, 5]),
            params: &[
                ("transpose_a", Value::Bool(false)),
                ("transpose_b", Value::Bool(false)),
                ("alpha", Value::Float(2.0)),
                ("beta", Value::Float(0.5)),
                ("axis", Value::Int(-2)),
            ],
            out: &[3, 5],
            checksum: (0.0, 417.421875),
            values: Some(&[1.5, 2.625, 2.125, 1.625, 2.75, -4.625, 6.75, -4.625, 6.75, -4.625, -1.0, -2.125, -1.625, -2.75, -2.25]),
        },
        Case {
            op: "linalg_gemm",
            lhs: &[3, 2, 4],
            rhs: &[4, 2, 5],
            c: Some(&[3, 2, 5]),
            params: &[
                ("transpose_a", Value::Bool(false)),
                ("transpose_b", Value::Bool(false)),
                ("alpha", Value::Float(1.0)),
                ("beta", Value::Float(1.0)),
                ("axis", Value::Int(0)),
            ],
            out: &[3, 2, 5],
            checksum: (10.3125, 170.67578125),
            values: Some(&[
                -0.75, 1.125, -0.25, 0.0, 0.25, 0.0, 1.3125, 0.1875, 1.5, 0.375, 1.875, 0.1875, 1.75, -1.5625, 1.625, -2.1875, 1.25,
                -1.8125, 1.625, -1.4375, -0.375, 1.6875, 0.5, -2.3125, 1.375, 3.75, -3.6875, 3.5, -3.9375, 0.0,
            ]),
        },
        Case {
            op: "linalg_gemm",
            lhs: &[2, 4, 3],
            rhs: &[2, 5, 4],
            c: Some(&[2, 3, 5]),
            params: &[
                ("transpose_a", Value::Bool(true)),
                ("transpose_b", Value::Bool(true)),
                ("alpha", Value::Float(-1.0)),
                ("beta", Value::Float(0.0)),
                ("axis", Value::Int(-2)),
            ],
            out: &[2, 3, 5],
            checksum: (3.625, 140.609375),
            values: Some(&[
                0.6875, 1.0625, 1.4375, -0.625, -0.25, 0.75, 0.875, -3.875, -0.5, -0.375, 0.8125, 0.6875, 1.375, -0.375, -0.5, 1.3125,
                -1.3125, -2.3125, -3.3125, 3.0, -3.9375, 0.5, 0.875, 1.25, -0.8125, 1.375, 0.6875, 0.8125, 0.9375, -0.5625,
            ]),
        },
        Case {
            op: "linalg_gemm",
            lhs: &[4, 3],
            rhs: &[5, 4],
            c: Some(&[3, 5]),
            params: &[
                ("transpose_a", Value::Bool(true)),
                ("transpose_b", Value::Bool(true)),
                ("alpha", Value::Float(1.5)),
                ("beta", Value::Float(-2.0)),
                ("axis", Value::Int(0)),
            ],
            out: &[3, 5],
            checksum: (-14.59375, 288.3671875),
            values: Some(&[
                -0.53125, -4.59375, -2.15625, 3.9375, -0.125, 1.375, -2.3125, 7.8125, -0.75, 2.0625, -3.21875, -0.03125, -4.5625, 1.0625,
                -2.25,
            ]),
        },
    ];

    fn run_case<T: Element>(c: &Case) {
        let mut inputs = vec![arr::<T>(c.lhs, 0), arr::<T>(c.rhs, 5)];
        if let Some(cs) = c.c {
            inputs.push(arr::<T>(cs, 2));
        }
        let o = call1(c.op, &inputs, c.params).unwrap_or_else(|e| panic!("{} {:?} {:?}: {e}", c.op, c.lhs, c.rhs));
        let what = format!("{} {:?} x {:?} {:?} as {}", c.op, c.lhs, c.rhs, c.params, T::DTYPE.name());
        assert_eq!(o.shape(), c.out, "{what}");
        assert_eq!(o.dtype(), T::DTYPE, "{what}");
        let got: Vec<f64> = o.to_vec::<T>().unwrap().into_iter().map(|x| x.to_f64()).collect();
        if let Some(v) = c.values {
            assert_eq!(&got[..], v, "{what}");
        }
        assert_eq!(checksum(&got), c.checksum, "{what}");
    }

    #[test]
    fn numpy_cases_f32() {
        for c in CASES {
            run_case::<f32>(c);
        }
    }

    #[test]
    fn numpy_cases_f64() {
        for c in CASES {
            run_case::<f64>(c);
        }
    }

    #[test]
    fn numpy_cases_f16() {
        // float16 for the small dot/batch_dot cases (their results are exact in float16).
        for c in CASES.iter().filter(|c| c.values.is_some() && (c.op == "dot" || c.op == "batch_dot")) {
            run_case::<f16>(c);
        }
    }

    /// Non-exact data, compared with a plain triple loop (relative tolerance), on a
    /// size that goes through the multi-threaded path.
    #[test]
    fn random_large_against_naive() {
        let (m, k, n) = (150, 311, 170);
        let a: Vec<f64> = (0..m * k).map(|i| ((i as f64) * 0.618).sin()).collect();
        let b: Vec<f64> = (0..k * n).map(|i| ((i as f64) * 0.377).cos()).collect();
        let mut want = vec![0.0f64; m * n];
        for i in 0..m {
            for p in 0..k {
                for j in 0..n {
                    want[i * n + j] += a[i * k + p] * b[p * n + j];
                }
            }
        }
        let af: Vec<f32> = a.iter().map(|&x| x as f32).collect();
        let bf: Vec<f32> = b.iter().map(|&x| x as f32).collect();
        let ctx = Context::cpu(0);
        let o = call1("dot", &[NDArray::from_vec(&[m, k], &af, ctx).unwrap(), NDArray::from_vec(&[k, n], &bf, ctx).unwrap()], &[]).unwrap();
        for (g, w) in o.to_vec::<f32>().unwrap().iter().zip(&want) {
            assert!((*g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()), "{g} vs {w}");
        }
        let o = call1("dot", &[NDArray::from_vec(&[m, k], &a, ctx).unwrap(), NDArray::from_vec(&[k, n], &b, ctx).unwrap()], &[]).unwrap();
        for (g, w) in o.to_vec::<f64>().unwrap().iter().zip(&want) {
            assert!((g - w).abs() <= 1e-12 * (1.0 + w.abs()), "{g} vs {w}");
        }
    }

    #[test]
    fn output_ignores_old_contents_and_empty_dims() {
        // beta = 0: NaNs already in the output buffer must not leak into the result.
        let ctx = Context::cpu(0);
        let a = arr::<f32>(&[4, 3], 0);
        let b = arr::<f32>(&[3, 5], 5);
        let out = NDArray::from_vec(&[4, 5], &[f32::NAN; 20], ctx).unwrap();
        let op = crate::op::lookup("dot").unwrap();
        let r = crate::op::invoke(op, &[a.clone(), b.clone()], op.parse(vec![]).unwrap(), Some(&[out]), None).unwrap();
        assert!(r[0].to_vec::<f32>().unwrap().iter().all(|x| x.is_finite()));
        // k = 0: the product is all zeros; m = 0: an empty result.
        let z = call1("dot", &[arr::<f32>(&[2, 0], 0), arr::<f32>(&[0, 3], 5)], &[]).unwrap();
        assert_eq!(z.shape(), &[2, 3]);
        assert_eq!(z.to_vec::<f32>().unwrap(), vec![0.0; 6]);
        let z = call1("batch_dot", &[arr::<f64>(&[0, 2, 3], 0), arr::<f64>(&[0, 3, 4], 5)], &[]).unwrap();
        assert_eq!(z.shape(), &[0, 2, 4]);
    }

    fn err(op: &str, shapes: &[&[usize]], dtype: DType, params: &[(&str, Value)]) -> String {
        let ins: Vec<NDArray> = shapes.iter().map(|s| NDArray::empty(s, Context::cpu(0), dtype).unwrap()).collect();
        let e = call1(op, &ins, params).err().unwrap_or_else(|| panic!("{op} {shapes:?} should fail"));
        let m = e.message().to_string();
        assert!(m.contains(&format!("operator {op}")), "{m}");
        m
    }

    #[test]
    fn errors_name_op_and_shapes() {
        let f = DType::F32;
        let m = err("dot", &[&[2, 3], &[4, 5]], f, &[]);
        assert!(m.contains("(2, 3)") && m.contains("(4, 5)"), "{m}");
        let m = err("dot", &[&[2, 5, 3], &[4, 3, 6]], f, &[("transpose_b", Value::Bool(true))]);
        assert!(m.contains("(2, 5, 3)") && m.contains("(4, 3, 6)") && m.contains("transpose_b=True"), "{m}");
        let m = err("dot", &[&[2], &[3]], f, &[]);
        assert!(m.contains("(2,)") && m.contains("(3,)"), "{m}");
        let m = err("dot", &[&[3], &[3]], f, &[("transpose_a", Value::Bool(true))]);
        assert!(m.contains("cannot transpose vectors"), "{m}");
        let m = err("dot", &[&[], &[3]], f, &[]);
        assert!(m.contains("at least one dimension"), "{m}");
        let m = err("dot", &[&[2, 3], &[3, 4]], DType::I32, &[]);
        assert!(m.contains("int32"), "{m}");
        let ins = [NDArray::empty(&[2, 3], Context::cpu(0), f).unwrap(), NDArray::empty(&[3, 4], Context::cpu(0), DType::F64).unwrap()];
        let m = call1("dot", &ins, &[]).unwrap_err().message().to_string();
        assert!(m.contains("dtype mismatch") && m.contains("operator dot"), "{m}");

        let m = err("batch_dot", &[&[3, 4], &[4, 5]], f, &[]);
        assert!(m.contains("N >= 3") && m.contains("(3, 4)"), "{m}");
        let m = err("batch_dot", &[&[2, 3, 4], &[2, 2, 4, 5]], f, &[]);
        assert!(m.contains("(2, 3, 4)") && m.contains("(2, 2, 4, 5)"), "{m}");
        let m = err("batch_dot", &[&[2, 3, 4], &[3, 4, 5]], f, &[]);
        assert!(m.contains("batch dimensions") && m.contains("(3, 4, 5)"), "{m}");
        let m = err("batch_dot", &[&[2, 3, 4], &[2, 3, 5]], f, &[]);
        assert!(m.contains("summed-over dimensions 4 and 3"), "{m}");
        let m = err("batch_dot", &[&[2, 3, 4], &[2, 4, 5]], DType::I64, &[]);
        assert!(m.contains("int64"), "{m}");

        let m = err("_linalg_gemm2", &[&[2, 2, 3, 4], &[2, 2, 4, 5]], f, &[("axis", Value::Int(-1))]);
        assert!(m.contains("row axis -1"), "{m}");
        let m = err("_linalg_gemm2", &[&[3, 2, 4], &[4, 2, 5]], f, &[("axis", Value::Int(-4))]);
        assert!(m.contains("row axis -4"), "{m}");
        let m = err("_linalg_gemm2", &[&[3, 4], &[5, 5]], f, &[]);
        assert!(m.contains("(3, 4)") && m.contains("(5, 5)"), "{m}");
        let m = err("_linalg_gemm2", &[&[3], &[3]], f, &[]);
        assert!(m.contains("at least 2"), "{m}");
        let m = err("_linalg_gemm2", &[&[2, 3], &[3, 2]], DType::F16, &[]);
        assert!(m.contains("float16"), "{m}");
        let m = err("_linalg_gemm", &[&[3, 4], &[4, 5], &[3, 4]], f, &[]);
        assert!(m.contains("C has shape (3, 4)") && m.contains("(3, 5)"), "{m}");
    }

    #[test]
    fn aliases_resolve() {
        assert_eq!(crate::op::lookup("linalg_gemm2").unwrap().name, "_linalg_gemm2");
        assert_eq!(crate::op::lookup("linalg_gemm").unwrap().name, "_linalg_gemm");
    }
}
