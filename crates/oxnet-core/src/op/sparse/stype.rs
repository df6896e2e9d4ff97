//! Storage-type inference for whole graphs (MXNet 1.9.1's `InferStorageType` pass, as
//! its executors see it): what each op's outputs are stored as, which combinations
//! MXNet refuses, and which storage type the gradient of each input gets.
//!
//! Forward: an op's [`super::SparseImpl`] says which storage types its outputs get
//! for its inputs' (the same rule [`super::invoke_any`] follows); every other
//! combination falls back to dense outputs. Backward: the gradient each op hands to
//! its inputs, given the storage type of its output gradient, follows MXNet's
//! backward ops: most are dense; zero-preserving unary ops keep a sparse gradient
//! when the output gradient has the input's storage type; ops whose gradient is zero
//! give a zero array of the input's type; `Embedding(sparse_grad=True)` and
//! `dot(csr, dense)` give row_sparse weight gradients. Gradients meeting at one
//! array are summed: row_sparse when all are, else dense.

use crate::error::{Error, Result};
use crate::ndarray::SType;
use crate::op::{OpDef, Params};

/// Fails where MXNet's storage inference refuses sparse inputs outright.
pub fn check_supported(op: &OpDef, params: &Params, ins: &[SType]) -> Result<()> {
    if ins.iter().all(|s| *s == SType::Default) {
        return Ok(());
    }
    match op.name {
        "BatchNorm" if params.bool("fix_gamma") => Err(Error::op(
            op.name,
            "fix_gamma=True is not supported for sparse ndarrays (MXNet issue #11647): use fix_gamma=False or dense inputs",
        )),
        _ => Ok(()),
    }
}

/// The storage types of `op`'s `n_out` outputs for inputs of storage types `ins`, and
/// whether the op computes on sparse storage (false: the dense fallback, or dense
/// inputs).
pub fn forward(op: &OpDef, params: &Params, ins: &[SType], n_out: usize) -> Result<(Vec<SType>, bool)> {
    check_supported(op, params, ins)?;
    if let Some(st) = op.sparse.and_then(|imp| (imp.stype)(params, ins)) {
        let mut st = st;
        st.resize(n_out.max(st.len()), SType::Default);
        return Ok((st, true));
    }
    Ok((vec![SType::Default; n_out], false))
}

/// Ops whose gradient is zero: MXNet gives a zero array of the input's storage type.
const ZERO_GRAD: &[&str] = &[
    "sign",
    "round",
    "rint",
    "ceil",
    "floor",
    "trunc",
    "fix",
    "zeros_like",
    "BlockGrad",
    "stop_gradient",
    "_equal_scalar",
    "_not_equal_scalar",
    "_greater_scalar",
    "_greater_equal_scalar",
    "_lesser_scalar",
    "_lesser_equal_scalar",
];

/// Unary ops whose backward computes on sparse storage: the gradient keeps the
/// input's storage type when the output gradient has it too.
const SPARSE_BACKWARD: &[&str] = &[
    "abs",
    "square",
    "relu",
    "negative",
    "_copy",
    "identity",
    "_mul_scalar",
    "_div_scalar",
    "_plus_scalar",
    "_minus_scalar",
    "_scatter_plus_scalar",
    "_scatter_minus_scalar",
];

/// The storage type of the gradient `op` gives each of its inputs (storage types
/// `ins`), when the gradient of its first output is stored as `ograd`.
pub fn backward(op: &OpDef, params: &Params, ins: &[SType], ograd: SType) -> Vec<SType> {
    use SType::*;
    let mut g = vec![Default; ins.len()];
    let Some(&x) = ins.first() else { return g };
    match op.name {
        n if ZERO_GRAD.contains(&n) => g[0] = x,
        n if SPARSE_BACKWARD.contains(&n) => {
            if x != Default && ograd == x {
                g[0] = x;
            }
        }
        "cast_storage" => g[0] = ograd,
        "elemwise_add" | "elemwise_sub" => {
            if ins.len() == 2 && ins[1] == x && x != Default && ograd == x {
                g = vec![x, x];
            }
        }
        "add_n" => {
            if ins.iter().all(|s| *s == RowSparse) && ograd == RowSparse {
                g = vec![RowSparse; ins.len()];
            }
        }
        "dot" => {
            let plain = !params.bool("transpose_a") && !params.bool("transpose_b");
            if ins.len() == 2 && x == Csr && ins[1] == Default && plain && ograd == Default {
                g[1] = RowSparse;
            }
        }
        "Embedding" if params.bool("sparse_grad") && ins.len() == 2 => g[1] = RowSparse,
        "_contrib_SparseEmbedding" if ins.len() == 2 => g[1] = RowSparse,
        "_square_sum" if x == RowSparse => g[0] = RowSparse,
        _ => {}
    }
    g
}

/// The storage type of the sum of gradients of these storage types meeting at one
/// array (none: dense).
pub fn sum_of(grads: &[SType]) -> SType {
    match grads {
        [] => SType::Default,
        [one] => *one,
        many if many.iter().all(|s| *s == SType::RowSparse) => SType::RowSparse,
        _ => SType::Default,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::{lookup, Value};

    fn params(op: &'static OpDef, kv: &[(&str, Value)]) -> Params {
        op.parse(kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()).unwrap()
    }

    #[test]
    fn forward_follows_the_sparse_impls_and_falls_back_to_dense() {
        let relu = lookup("relu").unwrap();
        let p = params(relu, &[]);
        assert_eq!(forward(relu, &p, &[SType::RowSparse], 1).unwrap(), (vec![SType::RowSparse], true));
        let exp = lookup("exp").unwrap();
        assert_eq!(forward(exp, &params(exp, &[]), &[SType::Csr], 1).unwrap(), (vec![SType::Default], false));
        let div = lookup("_scatter_elemwise_div").unwrap();
        let p = params(div, &[]);
        assert_eq!(forward(div, &p, &[SType::RowSparse, SType::Csr], 1).unwrap().0, vec![SType::RowSparse]);
        assert_eq!(forward(div, &p, &[SType::Csr, SType::RowSparse], 1).unwrap().0, vec![SType::Default]);
    }

    #[test]
    fn batchnorm_with_fix_gamma_refuses_sparse_inputs() {
        let bn = lookup("BatchNorm").unwrap();
        let ins = [SType::RowSparse, SType::Default, SType::Default, SType::Default, SType::Default];
        let e = forward(bn, &params(bn, &[]), &ins, 3).unwrap_err().to_string();
        assert!(e.contains("BatchNorm") && e.contains("fix_gamma"), "{e}");
        let ok = params(bn, &[("fix_gamma", Value::Bool(false))]);
        assert_eq!(forward(bn, &ok, &ins, 3).unwrap().0, vec![SType::Default; 3]);
        assert!(forward(bn, &params(bn, &[]), &[SType::Default; 5], 3).is_ok());
    }

    #[test]
    fn backward_rules() {
        let emb = lookup("Embedding").unwrap();
        let p = params(emb, &[("input_dim", Value::Int(5)), ("output_dim", Value::Int(2)), ("sparse_grad", Value::Bool(true))]);
        assert_eq!(backward(emb, &p, &[SType::Default, SType::Default], SType::Default), vec![SType::Default, SType::RowSparse]);
        let relu = lookup("relu").unwrap();
        assert_eq!(backward(relu, &params(relu, &[]), &[SType::RowSparse], SType::RowSparse), vec![SType::RowSparse]);
        assert_eq!(backward(relu, &params(relu, &[]), &[SType::RowSparse], SType::Default), vec![SType::Default]);
        assert_eq!(sum_of(&[SType::RowSparse, SType::RowSparse]), SType::RowSparse);
        assert_eq!(sum_of(&[SType::RowSparse, SType::Default]), SType::Default);
        assert_eq!(sum_of(&[]), SType::Default);
    }
}
