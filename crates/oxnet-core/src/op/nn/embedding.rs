//! `Embedding` and its backward op (the weight gradient, rows summed per index).

use super::{expect_shape, fill_known, float_input, head, rd, run_bwd, wr};
use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::cpu::nn::{self as k};
use crate::ndarray::NDArray;
use crate::op::{Arity, Blob, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry};
use crate::shape::Shape;
use crate::with_dtype;
use crate::with_float;

// ---- Embedding -------------------------------------------------------------------------

const EMB_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("input_dim", PType::Int, None, "Vocabulary size of the input indices."),
    ParamSpec::new("output_dim", PType::Int, None, "Dimension of the embedding vectors."),
    ParamSpec::new("dtype", PType::DType, Some("float32"), "Data type of weight."),
    ParamSpec::new("sparse_grad", PType::Bool, Some("False"), "Compute row sparse gradient in the backward calculation. If set to True, the grad's storage type is row_sparse."),
    ParamSpec::new("deterministic", PType::Bool, Some("False"), "Force the backward gradient calculation to be executed based on a deterministic order at the cost of slower speed (_contrib_SparseEmbedding's parameter; oxnet's backward is always deterministic)."),
];

fn emb_dims(a: &InferArgs) -> Result<(usize, usize)> {
    let (i, o) = (a.params.int("input_dim"), a.params.int("output_dim"));
    if i <= 0 || o <= 0 {
        return Err(a.err(format!("input_dim ({i}) and output_dim ({o}) must be positive")));
    }
    Ok((i as usize, o as usize))
}

fn emb_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let (idim, odim) = emb_dims(a)?;
    expect_shape(a, 1, "weight", &[idim, odim], &format!("input_dim={idim}, output_dim={odim}"))?;
    let wd = float_input(a, 1, "weight")?;
    let d = a.params.dtype("dtype").unwrap_or(DType::F32);
    if wd != d {
        return Err(a.err(format!("weight has dtype {} but dtype={} was given", wd.name(), d.name())));
    }
    let mut s = Shape::from_slice(a.shapes[0]);
    s.push(odim);
    Ok(vec![(s, wd)])
}

fn emb_fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let (i, o) = (p.int("input_dim").max(0) as usize, p.int("output_dim").max(0) as usize);
    fill_known("Embedding", shapes, &[(1, "weight")], &[i, o])
}

/// As MXNet: the weight (and unknown indices) take the `dtype` parameter, whatever
/// the indices' dtype (int32 indices still give a float32 weight).
fn emb_dtype_fill(p: &Params, dtypes: &mut [Option<DType>]) {
    let d = p.dtype("dtype").unwrap_or(DType::F32);
    for t in dtypes.iter_mut() {
        if t.is_none() {
            *t = Some(d);
        }
    }
}

fn emb_indices(b: &Blob, rows: usize) -> Vec<usize> {
    with_dtype!(b.dtype, T, { rd::<T>(b).iter().map(|v| k::clip_index(crate::dtype::Element::to_f64(*v), rows)).collect() })
}

fn emb_compute(c: &mut OpCall) -> Result<()> {
    let (d, w, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let (rows, dim) = (w.shape[0], w.shape[1]);
    let idx = emb_indices(d, rows);
    with_float!(w.dtype, T, { k::embedding::<T>(&idx, rd(w), wr(o), dim) });
    Ok(())
}

fn emb_bwd_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let (idim, odim) = emb_dims(a)?;
    float_input(a, 0, "out_grad")?;
    let mut want = Shape::from_slice(a.shapes[1]);
    want.push(odim);
    expect_shape(a, 0, "out_grad", &want, "the indices' shape plus output_dim")?;
    Ok(vec![(Shape::from_slice(&[idim, odim]), a.dtypes[0])])
}

fn emb_bwd_compute(c: &mut OpCall) -> Result<()> {
    let (g, d, dw) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let (rows, dim) = (dw.shape[0], dw.shape[1]);
    let idx = emb_indices(d, rows);
    with_float!(g.dtype, T, { k::embedding_backward::<T>(&idx, rd(g), wr(dw), rows, dim) });
    Ok(())
}

fn emb_grad(p: &Params, i: &[NDArray], _: &[NDArray], og: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    let dw = run_bwd("_backward_Embedding", &[head("Embedding", og)?, i[0].clone()], p)?;
    Ok(vec![None, dw.into_iter().next()])
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "Embedding",
            "Maps integer indices to vector representations (embeddings).

This operator maps words to real-valued vectors in a high-dimensional space,
called word embeddings. If the input shape is (d1, ..., dK), the output shape is
(d1, ..., dK, output_dim). Indices are truncated toward zero and clipped to
[0, input_dim - 1]. The weight has shape (input_dim, output_dim).",
            Arity::Fixed(&["data", "weight"]),
            EMB_PARAMS,
            emb_infer,
            emb_compute,
        )
        .grad(emb_grad)
        .fill(emb_fill)
        .dtype_fill(emb_dtype_fill)
        .aliases(&["_contrib_SparseEmbedding"]),
    );
    r.add(OpDef::new(
        "_backward_Embedding",
        "Gradient of Embedding with respect to its weight (rows summed per index).",
        Arity::Fixed(&["out_grad", "data"]),
        EMB_PARAMS,
        emb_bwd_infer,
        emb_bwd_compute,
    ));
}
