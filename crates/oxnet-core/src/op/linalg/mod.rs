//! Matrix products: `dot` (MXNet's N-d dot), `batch_dot`, `_linalg_gemm2`
//! (`linalg_gemm2`) and `_linalg_gemm` (`linalg_gemm`). All of them run on the
//! GEMM of `kernels::cpu::gemm`; float32 and float64 everywhere, float16 for
//! `dot`/`batch_dot` (MXNet accepts it there on GPU; here on every device, with
//! float32 accumulation). Integer and bool inputs are rejected, as in MXNet.
//!
//! One file per group: `dot` in `dot.rs`; `batch_dot`, `_linalg_gemm2` and
//! `_linalg_gemm` (the products over a batch of matrices) in `batched.rs`.

mod batched;
mod dot;
#[cfg(test)]
mod tests;

pub(super) use batched::{batch_dot_geom, gemm2_geom, BatchGeom};
pub(super) use dot::dot_geom;

use super::{check_same_dtype, Arity, InferArgs, PType, ParamSpec, Registry};
use crate::dtype::DType;
use crate::error::Result;

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

pub(super) fn register(r: &mut Registry) {
    dot::register(r);
    batched::register(r);
}
