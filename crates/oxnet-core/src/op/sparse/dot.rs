//! `dot` on sparse storage, as MXNet 1.9.1 implements it:
//! - dot(csr, default) = default; dot(csr, default, transpose_a=True) = row_sparse
//!   (default with forward_stype='default');
//! - dot(csr, row_sparse) = default;
//! - dot(default, csr) = csr (default with forward_stype='default'); with
//!   transpose_b=True, default.
//!
//! Other combinations fall back to dense; a `forward_stype` asks for the result in
//! that storage type whatever the inputs.

use super::cast::{dense_to_csr, dense_to_rsp, sparse_to_dense};
use super::{idx_array, parts_of, read_idx, SparseCall, SparseImpl};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::cpu::SendPtr;
use crate::ndarray::sparse::{copy_host, fresh_array, host_slice, host_slice_mut, Parts};
use crate::ndarray::{AnyArray, NDArray, SType};
use crate::op::Params;

fn forward(p: &Params) -> Option<SType> {
    match p.str("forward_stype") {
        "None" => None,
        s => SType::from_name(s).ok(),
    }
}

fn stype_fn(p: &Params, ins: &[SType]) -> Option<Vec<SType>> {
    let (ta, tb, fs) = (p.bool("transpose_a"), p.bool("transpose_b"), forward(p));
    let out = match (ins[0], ins[1]) {
        (SType::Csr, SType::Default) if ta => fs.unwrap_or(SType::RowSparse),
        (SType::Csr, SType::Default) => fs.unwrap_or(SType::Default),
        (SType::Csr, SType::RowSparse) if !tb => fs.unwrap_or(SType::Default),
        (SType::Default, SType::Csr) if !ta && !tb => fs.unwrap_or(SType::Csr),
        (SType::Default, SType::Csr) if !ta => fs.unwrap_or(SType::Default),
        (SType::Default, SType::Default) => match fs {
            Some(s) if s != SType::Default => s,
            _ => return None,
        },
        _ => return None,
    };
    Some(vec![out])
}

static DOT: SparseImpl = SparseImpl { stype: stype_fn, compute };

pub(super) fn lookup(name: &str) -> Option<&'static SparseImpl> {
    (name == "dot").then_some(&DOT)
}

/// A float the sparse products compute in.
trait Num: crate::dtype::Element + Default + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> + 'static {}
impl Num for f32 {}
impl Num for f64 {}

/// A dense operand as a row-major matrix (transposed into a copy when asked).
fn matrix<T: Num>(a: &NDArray, transpose: bool) -> Result<(Vec<T>, usize, usize)> {
    let (r, c) = (a.shape()[0], a.size() / a.shape()[0].max(1));
    // SAFETY: inside dot's engine operation, which reads `a`.
    let v = unsafe { host_slice::<T>(a)? };
    if !transpose {
        return Ok((v.to_vec(), r, c));
    }
    let mut t = vec![T::default(); v.len()];
    for i in 0..r {
        for j in 0..c {
            t[j * r + i] = v[i * c + j];
        }
    }
    Ok((t, c, r))
}

/// Runs `f(start, end)` over row ranges on the compute pool when the work is large.
fn par_rows<F: Fn(usize, usize) + Sync + Send>(rows: usize, work: usize, f: F) {
    let threads = crate::engine::threads().max(1);
    if work < (1 << 15) || threads == 1 || rows < 2 {
        f(0, rows);
        return;
    }
    let chunks = (threads * 4).min(rows);
    let size = rows.div_ceil(chunks);
    crate::engine::install(|| {
        rayon::scope(|s| {
            for c in 0..chunks {
                let f = &f;
                let (a, b) = (c * size, ((c + 1) * size).min(rows));
                if a < b {
                    s.spawn(move |_| f(a, b));
                }
            }
        })
    });
}

/// csr (m×k) · B (k×n) → dense m×n.
fn csr_dense<T: Num>(indptr: &[i64], indices: &[i64], data: &[T], b: &[T], n: usize, out: &mut [T]) {
    let m = indptr.len() - 1;
    let o = SendPtr(out.as_mut_ptr());
    par_rows(m, data.len() * n, |r0, r1| {
        for r in r0..r1 {
            // SAFETY: each task writes its own rows of the output.
            let row = unsafe { std::slice::from_raw_parts_mut(o.get().add(r * n), n) };
            row.fill(T::default());
            for j in indptr[r] as usize..indptr[r + 1] as usize {
                let (v, c) = (data[j], indices[j] as usize);
                for (x, &y) in row.iter_mut().zip(&b[c * n..(c + 1) * n]) {
                    *x = *x + v * y;
                }
            }
        }
    });
}

/// csrᵀ · B: A is m×k, B is m×n; the result's rows are A's columns. Returns the
/// sorted columns present and their rows (compact), through a column-major copy of A
/// so that each output row is summed by one task.
fn csr_t_dense<T: Num>(indptr: &[i64], indices: &[i64], data: &[T], b: &[T], n: usize, k: usize) -> (Vec<i64>, Vec<T>) {
    let m = indptr.len() - 1;
    let mut count = vec![0usize; k + 1];
    for &c in indices {
        count[c as usize + 1] += 1;
    }
    for i in 0..k {
        count[i + 1] += count[i];
    }
    let colptr = count.clone();
    let mut fill = count;
    let mut rows_of = vec![0u32; indices.len()];
    let mut vals = vec![T::default(); indices.len()];
    for r in 0..m {
        for j in indptr[r] as usize..indptr[r + 1] as usize {
            let c = indices[j] as usize;
            rows_of[fill[c]] = r as u32;
            vals[fill[c]] = data[j];
            fill[c] += 1;
        }
    }
    let present: Vec<i64> = (0..k).filter(|&c| colptr[c + 1] > colptr[c]).map(|c| c as i64).collect();
    let mut out = vec![T::default(); present.len() * n];
    let o = SendPtr(out.as_mut_ptr());
    par_rows(present.len(), indices.len() * n, |p0, p1| {
        for (p, &c) in present.iter().enumerate().take(p1).skip(p0) {
            // SAFETY: each task writes its own rows of the output.
            let row = unsafe { std::slice::from_raw_parts_mut(o.get().add(p * n), n) };
            let c = c as usize;
            for j in colptr[c]..colptr[c + 1] {
                let (v, r) = (vals[j], rows_of[j] as usize);
                for (x, &y) in row.iter_mut().zip(&b[r * n..(r + 1) * n]) {
                    *x = *x + v * y;
                }
            }
        }
    });
    (present, out)
}

/// A (m×k dense) · csr (k×n) → dense m×n.
fn dense_csr<T: Num>(a: &[T], m: usize, k: usize, indptr: &[i64], indices: &[i64], data: &[T], n: usize, out: &mut [T]) {
    let o = SendPtr(out.as_mut_ptr());
    par_rows(m, m * data.len(), |i0, i1| {
        for i in i0..i1 {
            // SAFETY: each task writes its own rows of the output.
            let row = unsafe { std::slice::from_raw_parts_mut(o.get().add(i * n), n) };
            row.fill(T::default());
            for r in 0..k {
                let x = a[i * k + r];
                for j in indptr[r] as usize..indptr[r + 1] as usize {
                    let c = indices[j] as usize;
                    row[c] = row[c] + x * data[j];
                }
            }
        }
    });
}

fn check_csr(name: &str, indptr: &[i64], indices: &[i64], cols: usize) -> Result<()> {
    if let Some(&c) = indices.iter().find(|&&c| c < 0 || c as usize >= cols) {
        return Err(Error::op(name, format!("csr column index {c} is out of range [0, {cols})")));
    }
    if indptr.windows(2).any(|w| w[1] < w[0]) || indptr.last().map(|&l| l as usize > indices.len()).unwrap_or(false) {
        return Err(Error::op(name, "csr indptr must be non-decreasing and end at most at nnz"));
    }
    Ok(())
}

fn compute(c: &SparseCall) -> Result<()> {
    let d = c.outputs[0].dtype();
    match d {
        DType::F32 => compute_t::<f32>(c),
        DType::F64 => compute_t::<f64>(c),
        _ => Err(c.err(format!("sparse dot supports float32 and float64, got {}", d.name()))),
    }
}

/// Writes `vals` (a dense result of the output's shape) into the output, cast to its
/// storage type.
fn emit<T: Num>(c: &SparseCall, vals: Vec<T>) -> Result<()> {
    let o = &c.outputs[0];
    match o {
        AnyArray::Dense(d) => {
            // SAFETY: the engine gives this op the output for writing.
            unsafe { host_slice_mut::<T>(d)? }.copy_from_slice(&vals);
            Ok(())
        }
        AnyArray::Sparse(s) => {
            let tmp = fresh_array(s.shape(), &vals, c.ctx)?;
            let parts = match s.stype() {
                SType::RowSparse => dense_to_rsp(&tmp, s.aux_types()[0])?,
                _ => dense_to_csr(&tmp, s.aux_types())?,
            };
            s.set_parts(parts);
            Ok(())
        }
    }
}

/// The operand as a dense array (a sparse one converted inside this operation).
fn dense_of(a: &AnyArray, ctx: crate::context::Context) -> Result<NDArray> {
    match a {
        AnyArray::Dense(d) => Ok(d.clone()),
        AnyArray::Sparse(s) => {
            let tmp = NDArray::empty(s.shape(), ctx, s.dtype())?;
            sparse_to_dense(s.stype(), &parts_of(a), &tmp)?;
            Ok(tmp)
        }
    }
}

fn compute_t<T: Num>(c: &SparseCall) -> Result<()> {
    let (ta, tb) = (c.params.bool("transpose_a"), c.params.bool("transpose_b"));
    let (l, r) = (&c.inputs[0], &c.inputs[1]);
    if l.dtype() != r.dtype() {
        return Err(c.err(format!("lhs and rhs must have the same dtype, got {} and {}", l.dtype().name(), r.dtype().name())));
    }
    match (l.stype(), r.stype()) {
        (SType::Csr, _) => {
            let p = parts_of(l);
            let (indptr, indices) = (read_idx(&p.aux[0])?, read_idx(&p.aux[1])?);
            let (m, k) = (l.shape()[0], l.shape()[1]);
            check_csr(c.op.name, &indptr, &indices, k)?;
            // SAFETY: inside this op's engine operation, which reads the csr input.
            let data = unsafe { host_slice::<T>(&p.data)? };
            let rd = dense_of(r, c.ctx)?;
            let (b, _, n) = matrix::<T>(&rd, tb)?;
            if !ta {
                let mut out = vec![T::default(); m * n];
                csr_dense(&indptr, &indices, data, &b, n, &mut out);
                return emit(c, out);
            }
            let (present, rows) = csr_t_dense(&indptr, &indices, data, &b, n, k);
            match &c.outputs[0] {
                AnyArray::Sparse(s) if s.stype() == SType::RowSparse => {
                    let parts = Parts {
                        data: fresh_array(&[present.len(), n], &rows, c.ctx)?,
                        aux: vec![idx_array(&present, s.aux_types()[0], c.ctx)?],
                    };
                    s.set_parts(parts);
                    Ok(())
                }
                _ => {
                    let mut out = vec![T::default(); k * n];
                    for (p, &row) in present.iter().enumerate() {
                        out[row as usize * n..(row as usize + 1) * n].copy_from_slice(&rows[p * n..(p + 1) * n]);
                    }
                    emit(c, out)
                }
            }
        }
        (SType::Default, SType::Csr) if !ta => {
            let p = parts_of(r);
            let (indptr, indices) = (read_idx(&p.aux[0])?, read_idx(&p.aux[1])?);
            check_csr(c.op.name, &indptr, &indices, r.shape()[1])?;
            // SAFETY: as above.
            let data = unsafe { host_slice::<T>(&p.data)? };
            let ld = l.dense().unwrap();
            let (a, m, k) = matrix::<T>(ld, false)?;
            if tb {
                // A · Bᵀ with B csr (n×k): out[i, row] = Σ A[i, col] · v.
                let n = r.shape()[0];
                let mut out = vec![T::default(); m * n];
                for i in 0..m {
                    for row in 0..n {
                        let mut s = T::default();
                        for j in indptr[row] as usize..indptr[row + 1] as usize {
                            s = s + a[i * k + indices[j] as usize] * data[j];
                        }
                        out[i * n + row] = s;
                    }
                }
                return emit(c, out);
            }
            let n = r.shape()[1];
            let mut out = vec![T::default(); m * n];
            dense_csr(&a, m, k, &indptr, &indices, data, n, &mut out);
            emit(c, out)
        }
        _ => {
            // dense · dense with a sparse forward_stype: the dense product, cast.
            let (ld, rd) = (dense_of(l, c.ctx)?, dense_of(r, c.ctx)?);
            let out_shape = c.outputs[0].shape().to_vec();
            let tmp = NDArray::empty(&out_shape, c.ctx, c.outputs[0].dtype())?;
            super::run_kernel("dot", c.params, &[ld, rd], std::slice::from_ref(&tmp), c.ctx)?;
            match &c.outputs[0] {
                AnyArray::Dense(o) => copy_host(&tmp, o),
                AnyArray::Sparse(s) => {
                    let parts = match s.stype() {
                        SType::RowSparse => dense_to_rsp(&tmp, s.aux_types()[0])?,
                        _ => dense_to_csr(&tmp, s.aux_types())?,
                    };
                    s.set_parts(parts);
                    Ok(())
                }
            }
        }
    }
}
