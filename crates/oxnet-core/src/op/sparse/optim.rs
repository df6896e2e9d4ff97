//! Optimizer updates with a row_sparse gradient: the lazy update MXNet does (only the
//! rows the gradient stores change, in the weight and in every state). The rows are
//! gathered, the op's own dense kernel runs on them (one definition of the update's
//! arithmetic), and they are scattered back. `lazy_update=False` falls back to the
//! dense update (the gradient cast to dense), as MXNet's standard update.

use super::cast::sparse_to_dense;
use super::{blob, idx_array, parts_of, read_idx, SparseCall, SparseImpl};
use crate::error::{Error, Result};
use crate::ndarray::sparse::copy_host;
use crate::ndarray::AnyArray;
use crate::ndarray::{NDArray, SType};
use crate::op::{lookup as op_lookup, Blob, OpCall, Params};
use crate::shape::Shape;

/// The ops MXNet updates lazily for a row_sparse gradient (the others, e.g. RMSProp,
/// take the dense update).
const ROWWISE: &[&str] = &["_sparse_adagrad_update", "sgd_update", "sgd_mom_update", "adam_update", "ftrl_update", "adagrad_update"];

fn stype_fn(p: &Params, ins: &[SType]) -> Option<Vec<SType>> {
    let lazy = p.iter().find(|(k, _)| *k == "lazy_update").map(|_| p.bool("lazy_update")).unwrap_or(true);
    let ok = ins.len() >= 2 && ins[0] != SType::Csr && ins[1] == SType::RowSparse && ins[2..].iter().all(|s| *s == SType::Default) && lazy;
    // A row_sparse weight stays row_sparse (MXNet's rule); its rows are updated the
    // same lazy way.
    ok.then(|| vec![ins[0]])
}

fn compute(c: &SparseCall) -> Result<()> {
    match (&c.inputs[0], &c.outputs[0]) {
        (AnyArray::Dense(w), AnyArray::Dense(out)) => lazy_dense(c, w, out),
        (AnyArray::Sparse(ws), AnyArray::Sparse(os)) => {
            // Through a dense copy of the weight; the result keeps the rows stored.
            let tmp = NDArray::empty(ws.shape(), c.ctx, ws.dtype())?;
            sparse_to_dense(SType::RowSparse, &parts_of(&c.inputs[0]), &tmp)?;
            lazy_dense(c, &tmp, &tmp)?;
            let old = read_idx(&parts_of(&c.inputs[0]).aux[0])?;
            let mut rows = read_idx(&parts_of(&c.inputs[1]).aux[0])?;
            rows.extend(old);
            rows.sort_unstable();
            rows.dedup();
            os.set_parts(rows_of(&tmp, &rows, os.aux_types()[0])?);
            Ok(())
        }
        _ => Err(c.err("the weight and the output must have the same storage type")),
    }
}

/// The rows `rows` of a dense host array as row_sparse parts.
fn rows_of(a: &NDArray, rows: &[i64], idx_t: crate::dtype::DType) -> Result<crate::ndarray::sparse::Parts> {
    let n = a.shape()[0];
    let row_bytes = if n == 0 { 0 } else { a.nbytes() / n };
    let b = blob(a)?;
    let mut shape = a.shape().to_vec();
    shape[0] = rows.len();
    let data = NDArray::empty(&shape, a.ctx(), a.dtype())?;
    let d = blob(&data)?;
    for (k, &r) in rows.iter().enumerate() {
        // SAFETY: r < n (rows come from checked indices); data holds rows.len() rows.
        unsafe { std::ptr::copy_nonoverlapping(b.ptr.add(r as usize * row_bytes), d.ptr.add(k * row_bytes), row_bytes) };
    }
    Ok(crate::ndarray::sparse::Parts { data, aux: vec![idx_array(rows, idx_t, a.ctx())?] })
}

fn lazy_dense(c: &SparseCall, w: &NDArray, out: &NDArray) -> Result<()> {
    let gp = parts_of(&c.inputs[1]);
    let states: Vec<&NDArray> = c.inputs[2..].iter().map(|a| a.dense().unwrap()).collect();
    let rows = w.shape()[0];
    let width = if rows == 0 { 0 } else { w.size() / rows };
    if c.inputs[1].shape() != w.shape() || states.iter().any(|s| s.shape() != w.shape()) {
        return Err(c.err("weight, grad and states must have the same shape"));
    }
    if !(out.same_chunk(w) && out.offset() == w.offset()) {
        copy_host(w, out)?;
    }
    let idx = read_idx(&gp.aux[0])?;
    if let Some(&r) = idx.iter().find(|&&r| r < 0 || r as usize >= rows) {
        return Err(c.err(format!("row_sparse gradient row {r} is out of range [0, {rows})")));
    }
    let nnz = idx.len();
    if nnz == 0 {
        return Ok(());
    }
    let es = w.dtype().size();
    let row_bytes = width * es;
    let gather = |src: &NDArray| -> Result<Vec<u8>> {
        let b = blob(src)?;
        let mut v = vec![0u8; nnz * row_bytes];
        for (k, &r) in idx.iter().enumerate() {
            // SAFETY: row r lies within src (checked above); the engine orders src.
            unsafe { std::ptr::copy_nonoverlapping(b.ptr.add(r as usize * row_bytes), v.as_mut_ptr().add(k * row_bytes), row_bytes) };
        }
        Ok(v)
    };
    let scatter = |v: &[u8], dst: &NDArray| -> Result<()> {
        let b = blob(dst)?;
        for (k, &r) in idx.iter().enumerate() {
            // SAFETY: as in gather; this op writes dst.
            unsafe { std::ptr::copy_nonoverlapping(v.as_ptr().add(k * row_bytes), b.ptr.add(r as usize * row_bytes), row_bytes) };
        }
        Ok(())
    };
    let mut wrows = gather(out)?;
    let mut srows: Vec<Vec<u8>> = states.iter().map(|s| gather(s)).collect::<Result<_>>()?;
    let shape = Shape::from_slice(&[nnz, width]);
    let mk = |p: *mut u8, dtype| Blob { ptr: p, shape: shape.clone(), dtype };
    let gb = blob(&gp.data)?;
    if gb.size() != nnz * width || gp.data.dtype() != w.dtype() {
        return Err(c.err("the row_sparse gradient's values do not match its indices or the weight's dtype"));
    }
    let mut inputs = vec![mk(wrows.as_mut_ptr(), w.dtype()), mk(gb.ptr, w.dtype())];
    for (s, st) in srows.iter_mut().zip(&states) {
        inputs.push(mk(s.as_mut_ptr(), st.dtype()));
    }
    let outputs = [mk(wrows.as_mut_ptr(), w.dtype())];
    let op = op_lookup(c.op.name)?;
    let mut call = OpCall { op, params: c.params, inputs: &inputs, outputs: &outputs, ctx: c.ctx, rng: None, is_train: false };
    (op.cpu)(&mut call).map_err(|e| Error::op(c.op.name, e))?;
    scatter(&wrows, out)?;
    for (s, st) in srows.iter().zip(&states) {
        scatter(s, st)?;
    }
    Ok(())
}

static LAZY: SparseImpl = SparseImpl { stype: stype_fn, compute };

pub(super) fn lookup(name: &str) -> Option<&'static SparseImpl> {
    ROWWISE.contains(&name).then_some(&LAZY)
}
