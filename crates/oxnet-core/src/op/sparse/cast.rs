//! `cast_storage`: dense ↔ row_sparse, dense ↔ csr (and copies within a storage
//! type). A dense array cast to row_sparse keeps the rows holding any nonzero; to csr,
//! the nonzero values of each row, as MXNet does.

use super::{idx_array, parts_of, SparseCall, SparseImpl};
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::ndarray::sparse::{copy_host, fresh_array, host_slice, host_slice_mut, Parts};
use crate::ndarray::{AnyArray, NDArray, SType};
use crate::op::{infer_like_first, Arity, OpCall, OpDef, ParamSpec, Params, Registry};
use crate::with_dtype;

const PARAMS: &[ParamSpec] = &[ParamSpec::choice("stype", &["default", "row_sparse", "csr"], None, "Output storage type.")];

fn dense_copy(c: &mut OpCall) -> Result<()> {
    let (a, o) = (&c.inputs[0], &c.outputs[0]);
    super::super::copy::copy_bytes(a.ptr, o.ptr, o.size() * o.dtype.size());
    Ok(())
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "cast_storage",
            "Casts tensor storage type to the new type.\n\nWhen an NDArray with default storage type is cast to csr or row_sparse storage, the result is compact, which means:\n\n- for csr, zero values will not be retained\n- for row_sparse, row slices of all zeros will not be retained",
            Arity::Fixed(&["data"]),
            PARAMS,
            infer_like_first,
            dense_copy,
        ).unnamed_inputs()
        .grad(|_, _, _, g| Ok(vec![Some(g[0].clone())])),
    );
}

fn stype_fn(p: &Params, ins: &[SType]) -> Option<Vec<SType>> {
    let to = SType::from_name(p.str("stype")).ok()?;
    if to == SType::Default && ins[0] == SType::Default {
        return None;
    }
    Some(vec![to])
}

static CAST: SparseImpl = SparseImpl { stype: stype_fn, compute };

pub(super) fn lookup(name: &str) -> Option<&'static SparseImpl> {
    (name == "cast_storage").then_some(&CAST)
}

fn compute(c: &SparseCall) -> Result<()> {
    let (src, dst) = (&c.inputs[0], &c.outputs[0]);
    match (src, dst) {
        (AnyArray::Dense(a), AnyArray::Dense(o)) => copy_host(a, o),
        (AnyArray::Dense(a), AnyArray::Sparse(o)) => {
            let parts = match o.stype() {
                SType::RowSparse => dense_to_rsp(a, o.aux_types()[0])?,
                _ => dense_to_csr(a, o.aux_types())?,
            };
            o.set_parts(parts);
            Ok(())
        }
        (AnyArray::Sparse(s), AnyArray::Dense(o)) => sparse_to_dense(s.stype(), &parts_of(src), o),
        (AnyArray::Sparse(s), AnyArray::Sparse(o)) => {
            if s.same(o) {
                return Ok(());
            }
            if s.stype() == o.stype() {
                o.set_parts(copy_parts(&parts_of(src), o.aux_types())?);
                return Ok(());
            }
            // Between sparse types: through dense.
            let tmp = NDArray::empty(s.shape(), c.ctx, s.dtype())?;
            sparse_to_dense(s.stype(), &parts_of(src), &tmp)?;
            let parts = match o.stype() {
                SType::RowSparse => dense_to_rsp(&tmp, o.aux_types()[0])?,
                _ => dense_to_csr(&tmp, o.aux_types())?,
            };
            o.set_parts(parts);
            Ok(())
        }
    }
}

/// Fresh copies of `p` (aux arrays in the wanted dtypes).
pub(super) fn copy_parts(p: &Parts, aux_types: &[DType]) -> Result<Parts> {
    let ctx = p.data.ctx();
    let data = NDArray::empty(p.data.shape(), ctx, p.data.dtype())?;
    copy_host(&p.data, &data)?;
    let mut aux = Vec::with_capacity(p.aux.len());
    for (a, &d) in p.aux.iter().zip(aux_types) {
        if a.dtype() == d {
            let n = NDArray::empty(a.shape(), ctx, d)?;
            copy_host(a, &n)?;
            aux.push(n);
        } else {
            aux.push(idx_array(&super::read_idx(a)?, d, ctx)?);
        }
    }
    Ok(Parts { data, aux })
}

fn is_zero<T: Element>(v: T) -> bool {
    v.to_f64() == 0.0
}

pub(super) fn dense_to_rsp(a: &NDArray, idx_t: DType) -> Result<Parts> {
    let ctx = a.ctx();
    let rows = a.shape()[0];
    let width = if rows == 0 { 0 } else { a.size() / rows };
    with_dtype!(a.dtype(), T, {
        // SAFETY: inside the cast's engine operation, which reads `a`.
        let v = unsafe { host_slice::<T>(a)? };
        let keep: Vec<i64> = (0..rows).filter(|&r| v[r * width..(r + 1) * width].iter().any(|&x| !is_zero(x))).map(|r| r as i64).collect();
        let mut ds = a.shape().to_vec();
        ds[0] = keep.len();
        let mut data: Vec<T> = Vec::with_capacity(keep.len() * width);
        for &r in &keep {
            data.extend_from_slice(&v[r as usize * width..(r as usize + 1) * width]);
        }
        Ok(Parts { data: fresh_array(&ds, &data, ctx)?, aux: vec![idx_array(&keep, idx_t, ctx)?] })
    })
}

pub(super) fn dense_to_csr(a: &NDArray, aux_t: &[DType]) -> Result<Parts> {
    let ctx = a.ctx();
    let (rows, cols) = (a.shape()[0], a.shape()[1]);
    with_dtype!(a.dtype(), T, {
        // SAFETY: as in dense_to_rsp.
        let v = unsafe { host_slice::<T>(a)? };
        let mut indptr = Vec::with_capacity(rows + 1);
        let mut indices = Vec::new();
        let mut data: Vec<T> = Vec::new();
        indptr.push(0i64);
        for r in 0..rows {
            for (cidx, &x) in v[r * cols..(r + 1) * cols].iter().enumerate() {
                if !is_zero(x) {
                    indices.push(cidx as i64);
                    data.push(x);
                }
            }
            indptr.push(indices.len() as i64);
        }
        Ok(Parts {
            data: fresh_array(&[data.len()], &data, ctx)?,
            aux: vec![idx_array(&indptr, aux_t[0], ctx)?, idx_array(&indices, aux_t[1], ctx)?],
        })
    })
}

/// Writes the dense form of a sparse array's parts into `o`.
pub(super) fn sparse_to_dense(st: SType, p: &Parts, o: &NDArray) -> Result<()> {
    with_dtype!(o.dtype(), T, {
        // SAFETY: inside an engine operation that writes `o` and reads the parts' owner.
        let out = unsafe { host_slice_mut::<T>(o)? };
        out.fill(T::from_f64(0.0));
        let data = unsafe { host_slice::<T>(&p.data)? };
        match st {
            SType::RowSparse => {
                let rows = o.shape()[0];
                let width = if rows == 0 { 0 } else { o.size() / rows };
                for (k, &r) in super::read_idx(&p.aux[0])?.iter().enumerate() {
                    if r < 0 || r as usize >= rows {
                        return Err(crate::error::Error::op("cast_storage", format!("row index {r} out of range [0, {rows})")));
                    }
                    let r = r as usize;
                    out[r * width..(r + 1) * width].copy_from_slice(&data[k * width..(k + 1) * width]);
                }
            }
            _ => {
                let cols = o.shape()[1];
                let indptr = super::read_idx(&p.aux[0])?;
                let indices = super::read_idx(&p.aux[1])?;
                for r in 0..o.shape()[0] {
                    let (a, b) = (indptr[r].max(0) as usize, (indptr[r + 1].max(0) as usize).min(indices.len()));
                    for k in a..b {
                        let cidx = indices[k];
                        if cidx < 0 || cidx as usize >= cols {
                            return Err(crate::error::Error::op("cast_storage", format!("column index {cidx} out of range [0, {cols})")));
                        }
                        out[r * cols + cidx as usize] = data[k];
                    }
                }
            }
        }
        Ok(())
    })
}
