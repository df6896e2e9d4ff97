//! `dot`: MXNet's N-d dot product, one GEMM over the inputs seen as matrices.

use super::{check_stype, float_dtype, tf, DOT_PARAMS, LHS_RHS};
use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::cpu::gemm::{gemm, GemmElem};
use crate::op::{InferArgs, OpCall, OpDef, Registry};
use crate::shape::{fmt_shape, Shape};
use half::f16;

// ---- dot --------------------------------------------------------------------

/// How `dot` sees its inputs as matrices: `op(A)` is `m × k`, `op(B)` is `k × n`,
/// the output has shape `out`.
pub(in crate::op) struct DotGeom {
    pub(in crate::op) m: usize,
    pub(in crate::op) n: usize,
    pub(in crate::op) k: usize,
    pub(in crate::op) out: Shape,
}

/// MXNet's N-d `dot`: without `transpose_a`, lhs is `(prod(shape[:-1]), shape[-1])`;
/// with it, lhs is `(shape[0], prod(shape[1:]))` transposed. Without `transpose_b`,
/// rhs is `(shape[0], prod(shape[1:]))`; with it, `(prod(shape[:-1]), shape[-1])`
/// transposed. The output shape is the kept dims of lhs followed by those of rhs,
/// `(1,)` when both are vectors.
pub(in crate::op) fn dot_geom(op: &str, l: &[usize], r: &[usize], ta: bool, tb: bool) -> Result<DotGeom> {
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
}
