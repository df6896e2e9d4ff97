//! Storage-type dispatch: how registry ops run on `row_sparse` and `csr` arrays.
//!
//! An op computes sparse storage when its registry entry has a [`SparseImpl`] (found
//! by name in [`lookup`], as gradients are): the impl's storage-type function says,
//! for the inputs' storage types and the parameters, which storage types the outputs
//! get (None: no sparse computation for this combination), and its compute function
//! runs inside one engine operation that reads every input's var and writes every
//! output's var, replacing the parts of sparse outputs. Every other combination falls
//! back to dense, as MXNet does: sparse inputs are cast to dense (an engine op), the
//! dense kernel runs, and a sparse `out` gets the result cast back.
//!
//! [`invoke_any`] is the entry point for arrays of any storage type; `invoke` (dense)
//! is unchanged. While autograd records, every op takes the dense path (gradients are
//! dense; a variable's `row_sparse` gradient buffer receives them cast, see autograd).

mod cast;
mod dot;
mod elemwise;
mod optim;
mod reduce;
pub mod stype;

use super::{invoke, lookup as op_lookup, Blob, OpCall, OpDef, Params, Registry, Value};
use crate::context::Context;
use crate::dtype::DType;
use crate::engine;
use crate::error::{Error, Result};
use crate::ndarray::sparse::{host_slice, Parts};
use crate::ndarray::{AnyArray, NDArray, SType, SparseArray};
use crate::shape::{fmt_shape, Shape};
use std::sync::Arc;

/// What a sparse compute function gets.
pub struct SparseCall<'a> {
    pub op: &'static OpDef,
    pub params: &'a Params,
    pub inputs: &'a [AnyArray],
    pub outputs: &'a [AnyArray],
    pub ctx: Context,
}

impl SparseCall<'_> {
    pub fn err(&self, msg: impl std::fmt::Display) -> Error {
        Error::op(self.op.name, msg)
    }
}

/// Output storage types for these input storage types, or None (fall back to dense).
pub type StypeFn = fn(&Params, &[SType]) -> Option<Vec<SType>>;
pub type SparseFn = fn(&SparseCall) -> Result<()>;

/// An op's sparse computation.
pub struct SparseImpl {
    pub stype: StypeFn,
    pub compute: SparseFn,
}

/// The sparse computation registered for the op named `name`.
pub(crate) fn lookup(name: &str) -> Option<&'static SparseImpl> {
    cast::lookup(name)
        .or_else(|| dot::lookup(name))
        .or_else(|| elemwise::lookup(name))
        .or_else(|| reduce::lookup(name))
        .or_else(|| optim::lookup(name))
}

/// Registers the ops that exist for sparse storage (`cast_storage`, `_sparse_retain`,
/// `_square_sum`, ...); their dense forms run through the usual registry path.
pub(super) fn register(r: &mut Registry) {
    cast::register(r);
    elemwise::register(r);
    reduce::register(r);
}

fn ctx_of(op: &OpDef, inputs: &[AnyArray], params: &Params, ctx: Option<Context>) -> Result<Context> {
    match inputs.first() {
        Some(first) => {
            let c = first.ctx();
            if let Some(a) = inputs.iter().find(|a| a.ctx() != c) {
                return Err(Error::op(op.name, format!("all inputs must live on the same context, got {c} and {}", a.ctx())));
            }
            Ok(c)
        }
        None => Ok(params.ctx("ctx").or(ctx).unwrap_or_default()),
    }
}

/// Runs `op` on arrays of any storage type (see the module docs). `out`, when given,
/// receives the results (cast to its storage types where they differ).
pub fn invoke_any(
    op: &'static OpDef,
    inputs: &[AnyArray],
    params: Params,
    out: Option<&[AnyArray]>,
    ctx: Option<Context>,
) -> Result<Vec<AnyArray>> {
    super::guard(op.name, || invoke_any_unguarded(op, inputs, params, out, ctx))
}

fn invoke_any_unguarded(
    op: &'static OpDef,
    inputs: &[AnyArray],
    params: Params,
    out: Option<&[AnyArray]>,
    ctx: Option<Context>,
) -> Result<Vec<AnyArray>> {
    let in_st: Vec<SType> = inputs.iter().map(|a| a.stype()).collect();
    stype::check_supported(op, &params, &in_st)?;
    let all_dense_out = out.map(|o| o.iter().all(|a| a.stype() == SType::Default)).unwrap_or(true);
    // While recording, an op whose inputs are in a graph takes the dense path (its
    // gradient is recorded); storage casts never are.
    let recorded = crate::autograd::is_recording()
        && op.name != "cast_storage"
        && inputs.iter().any(|a| match a {
            AnyArray::Dense(d) => crate::autograd::is_in_graph(d),
            AnyArray::Sparse(s) => s.ag_entry().is_some(),
        });
    let plan = match op.sparse {
        Some(imp) if !recorded => (imp.stype)(&params, &in_st).map(|st| (imp, st)),
        _ => None,
    };
    if plan.is_none() && in_st.iter().all(|s| *s == SType::Default) && all_dense_out {
        let dense: Vec<NDArray> = inputs.iter().map(|a| a.dense().unwrap().clone()).collect();
        let outs: Option<Vec<NDArray>> = out.map(|o| o.iter().map(|a| a.dense().unwrap().clone()).collect());
        return Ok(invoke(op, &dense, params, outs.as_deref(), ctx)?.into_iter().map(AnyArray::Dense).collect());
    }
    let Some((imp, out_st)) = plan else {
        return fallback(op, inputs, params, out, ctx);
    };
    let ctx = ctx_of(op, inputs, &params, ctx)?;
    if !ctx.is_host() {
        return Err(Error::op(op.name, format!("sparse storage runs on the CPU for now; the inputs are on {ctx}")));
    }
    let shapes: Vec<&[usize]> = inputs.iter().map(|a| a.shape()).collect();
    let dtypes: Vec<DType> = inputs.iter().map(|a| a.dtype()).collect();
    let info = op.infer(&params, &shapes, &dtypes)?;
    if info.len() != out_st.len() {
        return Err(Error::op(op.name, "internal: storage types and outputs disagree"));
    }
    // Outputs: the caller's where its storage type is what the op computes, else new.
    let mut outputs: Vec<AnyArray> = Vec::with_capacity(info.len());
    let mut cast_back: Vec<(usize, AnyArray)> = Vec::new();
    for (i, ((s, d), st)) in info.iter().zip(&out_st).enumerate() {
        if let Some(given) = out.and_then(|o| o.get(i)) {
            if given.shape() != &s[..] {
                return Err(Error::op(
                    op.name,
                    format!("output shape {} does not match the expected shape {}", fmt_shape(given.shape()), fmt_shape(s)),
                ));
            }
            let aliases_input = inputs.iter().any(|a| Arc::ptr_eq(a.var(), given.var()));
            if given.stype() == *st && given.dtype() == *d && (!aliases_input || *st != SType::Default || op.inplace) {
                outputs.push(given.clone());
                continue;
            }
            cast_back.push((i, given.clone()));
        }
        outputs.push(match st {
            SType::Default => AnyArray::Dense(NDArray::empty(s, ctx, *d)?),
            st => AnyArray::Sparse(SparseArray::zeros(*st, s, ctx, *d, None)?),
        });
    }
    let reads: Vec<Arc<engine::Var>> = inputs.iter().map(|a| a.var().clone()).collect();
    let mut writes: Vec<Arc<engine::Var>> = outputs.iter().map(|a| a.var().clone()).collect();
    for i in op.mutated(&params) {
        if let Some(a) = inputs.get(i) {
            writes.push(a.var().clone());
        }
    }
    let (ins, outs, p) = (inputs.to_vec(), outputs.clone(), params);
    engine::push(move || (imp.compute)(&SparseCall { op, params: &p, inputs: &ins, outputs: &outs, ctx }), &reads, &writes, false)?;
    for (i, given) in cast_back {
        cast_into(&outputs[i], &given)?;
        outputs[i] = given;
    }
    Ok(outputs)
}

/// Dense computation of an op given sparse arrays: inputs cast to dense, results
/// cast into sparse `out` arrays.
fn fallback(
    op: &'static OpDef,
    inputs: &[AnyArray],
    params: Params,
    out: Option<&[AnyArray]>,
    ctx: Option<Context>,
) -> Result<Vec<AnyArray>> {
    let dense: Vec<NDArray> = inputs.iter().map(to_dense_recorded).collect::<Result<_>>()?;
    let dense_out: Option<Vec<Option<NDArray>>> = out.map(|o| o.iter().map(|a| a.dense().cloned()).collect());
    let direct = dense_out.as_ref().map(|v| v.iter().all(|a| a.is_some())).unwrap_or(false);
    if direct && !op.mutated(&params).iter().any(|&i| inputs.get(i).map(|a| a.sparse().is_some()).unwrap_or(false)) {
        let o: Vec<NDArray> = dense_out.unwrap().into_iter().map(|a| a.unwrap()).collect();
        return Ok(invoke(op, &dense, params, Some(&o), ctx)?.into_iter().map(AnyArray::Dense).collect());
    }
    let mutated = op.mutated(&params);
    let res = invoke(op, &dense, params, None, ctx)?;
    // Sparse inputs the op writes (optimizer states) get the new values back.
    for i in mutated {
        if let (Some(AnyArray::Sparse(_)), Some(d)) = (inputs.get(i), dense.get(i)) {
            cast_into(&AnyArray::Dense(d.clone()), &inputs[i])?;
        }
    }
    let Some(out) = out else {
        return Ok(res.into_iter().map(AnyArray::Dense).collect());
    };
    if out.len() != res.len() {
        return Err(Error::op(op.name, format!("expects {} output(s), got {}", res.len(), out.len())));
    }
    for (r, o) in res.iter().zip(out) {
        if r.shape() != o.shape() {
            return Err(Error::op(
                op.name,
                format!("output shape {} does not match the expected shape {}", fmt_shape(o.shape()), fmt_shape(r.shape())),
            ));
        }
        cast_into(&AnyArray::Dense(r.clone()), o)?;
    }
    Ok(out.to_vec())
}

/// The array as dense storage (itself when dense; an engine cast otherwise).
pub fn to_dense(a: &AnyArray) -> Result<NDArray> {
    match a {
        AnyArray::Dense(d) => Ok(d.clone()),
        AnyArray::Sparse(_) => {
            let op = op_lookup("cast_storage")?;
            let p = op.parse(vec![("stype".into(), Value::Str("default".into()))])?;
            let r = invoke_any(op, std::slice::from_ref(a), p, None, None)?;
            Ok(r[0].dense().expect("cast to default is dense").clone())
        }
    }
}

/// Like [`to_dense`]; while recording, a sparse autograd variable's dense copy is
/// recorded as `cast_storage` of the variable, so that gradients reach it.
fn to_dense_recorded(a: &AnyArray) -> Result<NDArray> {
    let mut d = to_dense(a)?;
    if let AnyArray::Sparse(s) = a {
        if let (true, Some(e)) = (crate::autograd::is_recording(), s.ag_entry()) {
            // The variable's stand-in in the graph: the logical shape, never touched
            // (host memory is taken at first touch, so it costs nothing).
            let mut anchor = NDArray::empty(s.shape(), s.ctx(), s.dtype())?;
            anchor.set_ag_entry(Some(e));
            let op = op_lookup("cast_storage")?;
            let p = op.parse(vec![("stype".into(), Value::Str("default".into()))])?;
            crate::autograd::record(op, &p, std::slice::from_ref(&anchor), std::slice::from_mut(&mut d));
        }
    }
    Ok(d)
}

/// `src` cast to `dst`'s storage type and written into `dst` (engine order).
pub fn cast_into(src: &AnyArray, dst: &AnyArray) -> Result<()> {
    let op = op_lookup("cast_storage")?;
    let p = op.parse(vec![("stype".into(), Value::Str(dst.stype().name().into()))])?;
    if src.dtype() != dst.dtype() {
        let src = AnyArray::Dense(super::call1("Cast", &[to_dense(src)?], &[("dtype", Value::Str(dst.dtype().name().into()))])?);
        invoke_any(op, &[src], p, Some(std::slice::from_ref(dst)), None)?;
        return Ok(());
    }
    invoke_any(op, std::slice::from_ref(src), p, Some(std::slice::from_ref(dst)), None)?;
    Ok(())
}

/// Casts `a` to storage type `stype` (a new array).
pub fn cast_storage(a: &AnyArray, stype: SType) -> Result<AnyArray> {
    let op = op_lookup("cast_storage")?;
    let p = op.parse(vec![("stype".into(), Value::Str(stype.name().into()))])?;
    Ok(invoke_any(op, std::slice::from_ref(a), p, None, None)?.remove(0))
}

/// The row_sparse gradient of `Embedding(sparse_grad=True)`'s weight: one row per
/// distinct index, the output gradient's rows summed into it (an engine op; what
/// autograd uses for a weight whose gradient buffer is row_sparse, so the dense
/// gradient of the whole table is never made).
pub fn embedding_grad_rsp(og: &NDArray, data: &NDArray, p: &Params) -> Result<SparseArray> {
    let (input_dim, output_dim) = (p.int("input_dim").max(0) as usize, p.int("output_dim").max(0) as usize);
    let ctx = og.ctx();
    if !ctx.is_host() {
        return Err(Error::op("Embedding", format!("row_sparse gradients are computed on the CPU for now; got {ctx}")));
    }
    if og.size() != data.size() * output_dim {
        return Err(Error::op("Embedding", "the output gradient does not match the indices and output_dim"));
    }
    let dtype = og.dtype();
    let out = SparseArray::zeros(SType::RowSparse, &[input_dim, output_dim], ctx, dtype, None)?;
    let (o2, og2, d2) = (out.clone(), og.clone(), data.clone());
    engine::push(
        move || {
            let last = input_dim.saturating_sub(1) as i64;
            let idx: Vec<i64> = read_idx(&d2)?.into_iter().map(|r| r.clamp(0, last)).collect();
            let mut uniq = idx.clone();
            uniq.sort_unstable();
            uniq.dedup();
            let mut acc = vec![0f64; uniq.len() * output_dim];
            crate::with_dtype!(dtype, T, {
                #[allow(unused_imports)]
                use crate::dtype::Element;
                // SAFETY: this engine operation reads the output gradient.
                let g = unsafe { host_slice::<T>(&og2)? };
                for (k, r) in idx.iter().enumerate() {
                    let pos = uniq.binary_search(r).unwrap_or(0);
                    let (dst, src) = (&mut acc[pos * output_dim..(pos + 1) * output_dim], &g[k * output_dim..(k + 1) * output_dim]);
                    for (d, s) in dst.iter_mut().zip(src) {
                        *d += s.to_f64();
                    }
                }
                let vals: Vec<T> = acc.iter().map(|&v| T::from_f64(v)).collect();
                o2.set_parts(Parts {
                    data: crate::ndarray::sparse::fresh_array(&[uniq.len(), output_dim], &vals, ctx)?,
                    aux: vec![idx_array(&uniq, DType::I64, ctx)?],
                });
            });
            Ok(())
        },
        &[og.var().clone(), data.var().clone()],
        std::slice::from_ref(out.var()),
        false,
    )?;
    Ok(out)
}

// ---- helpers for the kernels ---------------------------------------------------------

/// Index values of an aux (or dense index) array as i64, inside an engine operation.
pub(crate) fn read_idx(a: &NDArray) -> Result<Vec<i64>> {
    crate::ndarray::sparse::index_values(a)
}

/// A fresh index array of dtype `d` holding `v`.
pub(crate) fn idx_array(v: &[i64], d: DType, ctx: Context) -> Result<NDArray> {
    use crate::ndarray::sparse::fresh_array;
    match d {
        DType::I64 => fresh_array(&[v.len()], v, ctx),
        DType::I32 => fresh_array(&[v.len()], &v.iter().map(|&x| x as i32).collect::<Vec<_>>(), ctx),
        DType::U8 => fresh_array(&[v.len()], &v.iter().map(|&x| x as u8).collect::<Vec<_>>(), ctx),
        DType::I8 => fresh_array(&[v.len()], &v.iter().map(|&x| x as i8).collect::<Vec<_>>(), ctx),
        _ => Err(Error::new(format!("index arrays must be integers, got {}", d.name()))),
    }
}

/// A blob over a host array (inside an engine operation that ordered it).
pub(crate) fn blob(a: &NDArray) -> Result<Blob> {
    let p = a.chunk().storage.try_ptr()?;
    // SAFETY: the offset lies within the chunk.
    let ptr = unsafe { p.add(a.offset() * a.dtype().size()) };
    Ok(Blob { ptr, shape: Shape::from_slice(a.shape()), dtype: a.dtype() })
}

/// Runs a dense op's kernel directly on host arrays, inside the current engine
/// operation (used on the values of sparse arrays).
pub(crate) fn run_kernel(op_name: &str, params: &Params, inputs: &[NDArray], outputs: &[NDArray], ctx: Context) -> Result<()> {
    let op = op_lookup(op_name)?;
    let ib: Vec<Blob> = inputs.iter().map(blob).collect::<Result<_>>()?;
    let ob: Vec<Blob> = outputs.iter().map(blob).collect::<Result<_>>()?;
    if ob.iter().any(|b| b.size() == 0) {
        return Ok(());
    }
    let mut call = OpCall { op, params, inputs: &ib, outputs: &ob, ctx, rng: None, is_train: false };
    (op.cpu)(&mut call)
}

/// The parts of a sparse input (a clone of the handles).
pub(crate) fn parts_of(a: &AnyArray) -> Parts {
    a.sparse().expect("a sparse input").lock().clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Context;

    fn dense(shape: &[usize], v: &[f32]) -> AnyArray {
        AnyArray::Dense(NDArray::from_vec(shape, v, Context::cpu(0)).unwrap())
    }
    fn values(a: &AnyArray) -> Vec<f32> {
        to_dense(a).unwrap().to_vec::<f32>().unwrap()
    }
    fn call(name: &str, ins: &[AnyArray], attrs: &[(&str, Value)]) -> AnyArray {
        let op = op_lookup(name).unwrap();
        let p = op.parse(attrs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()).unwrap();
        invoke_any(op, ins, p, None, None).unwrap().remove(0)
    }

    #[test]
    fn cast_round_trips_keep_only_nonzeros() {
        let v = [0.0, 1.0, 0.0, 2.0, 0.0, 0.0, 3.0, 0.0, 0.0];
        let d = dense(&[3, 3], &v);
        let csr = cast_storage(&d, SType::Csr).unwrap();
        assert_eq!(csr.stype(), SType::Csr);
        let p = csr.sparse().unwrap().parts_now().unwrap();
        assert_eq!(p.data.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0]);
        assert_eq!(p.aux[0].to_vec::<i64>().unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(p.aux[1].to_vec::<i64>().unwrap(), vec![1, 0, 0]);
        assert_eq!(values(&csr), v);
        let rsp = cast_storage(&d, SType::RowSparse).unwrap();
        let p = rsp.sparse().unwrap().parts_now().unwrap();
        assert_eq!(p.aux[0].to_vec::<i64>().unwrap(), vec![0, 1, 2]);
        assert_eq!(values(&rsp), v);
        let z = cast_storage(&dense(&[2, 2], &[0.0; 4]), SType::RowSparse).unwrap();
        assert_eq!(z.sparse().unwrap().nnz().unwrap(), 0);
    }

    #[test]
    fn dot_csr_dense_and_transposed() {
        // a = [[1, 0], [0, 2], [3, 0]] (3x2), b = [[1, 2], [3, 4], [5, 6]] (3x2)
        let a = cast_storage(&dense(&[3, 2], &[1.0, 0.0, 0.0, 2.0, 3.0, 0.0]), SType::Csr).unwrap();
        let b = dense(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let out = call("dot", &[a.clone(), b], &[]);
        assert_eq!(out.stype(), SType::Default);
        assert_eq!(values(&out), vec![1.0, 2.0, 6.0, 8.0, 3.0, 6.0]);
        let c = dense(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let t = call("dot", &[a, c], &[("transpose_a", Value::Bool(true))]);
        assert_eq!(t.stype(), SType::RowSparse);
        // aᵀ·c = [[1+15, 2+18], [6, 8]]
        assert_eq!(values(&t), vec![16.0, 20.0, 6.0, 8.0]);
    }

    #[test]
    fn row_sparse_sum_merges_rows_and_falls_back_for_dense_only_ops() {
        let a = cast_storage(&dense(&[3, 1], &[1.0, 0.0, 2.0]), SType::RowSparse).unwrap();
        let b = cast_storage(&dense(&[3, 1], &[0.0, 5.0, 1.0]), SType::RowSparse).unwrap();
        let s = call("elemwise_add", &[a.clone(), b], &[]);
        assert_eq!(s.stype(), SType::RowSparse);
        assert_eq!(values(&s), vec![1.0, 5.0, 3.0]);
        let e = call("exp", &[a], &[]);
        assert_eq!(e.stype(), SType::Default);
        assert!((values(&e)[1] - 1.0).abs() < 1e-6);
    }

    #[test]
    fn csr_sum_with_unsorted_columns() {
        // row 0 stores columns 2 then 0 (unsorted), the other operand column 0
        let data = NDArray::from_vec(&[2], &[5.0f32, 1.0], Context::cpu(0)).unwrap();
        let indptr = NDArray::from_vec(&[2], &[0i64, 2], Context::cpu(0)).unwrap();
        let idx = NDArray::from_vec(&[2], &[2i64, 0], Context::cpu(0)).unwrap();
        let a = AnyArray::Sparse(SparseArray::from_parts(SType::Csr, &[1, 3], &data, &[indptr, idx]).unwrap());
        let b = cast_storage(&dense(&[1, 3], &[10.0, 0.0, 0.0]), SType::Csr).unwrap();
        assert_eq!(values(&call("elemwise_add", &[a, b], &[])), vec![11.0, 0.0, 5.0]);
    }

    #[test]
    fn maximum_of_row_sparse_arrays_is_row_sparse() {
        let a = cast_storage(&dense(&[3, 1], &[1.0, 0.0, -2.0]), SType::RowSparse).unwrap();
        let b = cast_storage(&dense(&[3, 1], &[0.0, -5.0, 3.0]), SType::RowSparse).unwrap();
        let m = call("_maximum", &[a.clone(), b.clone()], &[]);
        assert_eq!(m.stype(), SType::RowSparse);
        assert_eq!(values(&m), vec![1.0, 0.0, 3.0]);
        assert_eq!(values(&call("_minimum", &[a.clone(), b], &[])), vec![0.0, -5.0, -2.0]);
        assert_eq!(call("_maximum", &[a, dense(&[3, 1], &[0.0; 3])], &[]).stype(), SType::Default);
    }

    #[test]
    fn bad_index_is_an_error_at_the_wait_and_nothing_is_lost() {
        let data = NDArray::from_vec(&[1, 2], &[1.0f32, 1.0], Context::cpu(0)).unwrap();
        let idx = NDArray::from_vec(&[1], &[7i64], Context::cpu(0)).unwrap();
        let g = AnyArray::Sparse(SparseArray::from_parts(SType::RowSparse, &[3, 2], &data, &[idx]).unwrap());
        assert!(g.sparse().unwrap().check_format(true).is_err());
        let w = NDArray::from_vec(&[3, 2], &[1.0f32; 6], Context::cpu(0)).unwrap();
        let op = op_lookup("sgd_update").unwrap();
        let p = op.parse(vec![("lr".into(), Value::Float(0.1))]).unwrap();
        let wa = AnyArray::Dense(w.clone());
        let r = invoke_any(op, &[wa.clone(), g], p, Some(std::slice::from_ref(&wa)), None);
        let waited = r.and_then(|_| w.wait_to_read());
        assert!(waited.unwrap_err().message().contains("out of range"));
    }
}
