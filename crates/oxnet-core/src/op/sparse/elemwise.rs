//! Elementwise ops on sparse storage (MXNet 1.9.1's storage-type rules):
//! - zero-preserving unary ops (`abs`, `sqrt`, `relu`, `_mul_scalar`, ...) keep the
//!   input's storage type and apply the dense kernel to the stored values;
//! - `elemwise_add`/`elemwise_sub`: rsp±rsp = rsp, csr±csr = csr, sparse±dense = dense;
//!   `_maximum`/`_minimum`/`_hypot`: rsp·rsp = rsp, csr·csr = csr (else dense fallback);
//!   `elemwise_mul`: rsp·rsp = rsp, csr·csr = csr, rsp·dense = rsp, csr·dense = csr;
//! - `add_n` of row_sparse arrays = row_sparse; `zeros_like`, `_copy` keep the type;
//! - `_sparse_retain(rsp, indices)`: the rows listed; `slice` of a csr: csr;
//! - `broadcast_mul`/`broadcast_div` of a csr by a dense vector: csr;
//! - the scatter ops compute only what the left-hand input stores:
//!   `_scatter_elemwise_div(rsp, any)` = rsp with the left-hand rows (a missing
//!   right-hand row divides by zero), `_scatter_plus_scalar` / `_scatter_minus_scalar`
//!   of rsp or csr keep the input's storage and add to its stored values only.

use super::cast::copy_parts;
use super::{idx_array, parts_of, read_idx, run_kernel, SparseCall, SparseImpl};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::ndarray::sparse::{copy_host, fresh_array, host_slice, host_slice_mut, zero_parts, Parts};
use crate::ndarray::{AnyArray, NDArray, SType};
use crate::op::{Arity, InferArgs, OpDef, Params, Registry};
use crate::shape::Shape;
use crate::with_dtype;

/// Unary ops f with f(0) = 0 (MXNet registers row_sparse and csr forms for these).
const ZERO_PRESERVING: &[&str] = &[
    "abs",
    "sign",
    "round",
    "rint",
    "ceil",
    "floor",
    "trunc",
    "fix",
    "square",
    "sqrt",
    "sin",
    "tan",
    "arcsin",
    "arctan",
    "sinh",
    "tanh",
    "arcsinh",
    "arctanh",
    "expm1",
    "log1p",
    "relu",
    "negative",
    "degrees",
    "radians",
    "_mul_scalar",
    "_div_scalar",
    "_copy",
    "clip",
    "cbrt",
];

fn unary_stype(p: &Params, ins: &[SType]) -> Option<Vec<SType>> {
    let _ = p;
    (ins[0] != SType::Default).then(|| vec![ins[0]])
}

fn clip_stype(p: &Params, ins: &[SType]) -> Option<Vec<SType>> {
    let (lo, hi) = (p.float("a_min"), p.float("a_max"));
    (ins[0] != SType::Default && lo <= 0.0 && hi >= 0.0).then(|| vec![ins[0]])
}

fn unary(c: &SparseCall) -> Result<()> {
    let p = parts_of(&c.inputs[0]);
    let o = c.outputs[0].sparse().unwrap();
    let data = NDArray::empty(p.data.shape(), c.ctx, o.dtype())?;
    run_kernel(c.op.name, c.params, std::slice::from_ref(&p.data), std::slice::from_ref(&data), c.ctx)?;
    let aux = copy_parts(&Parts { data: p.data.clone(), aux: p.aux.clone() }, o.aux_types())?.aux;
    o.set_parts(Parts { data, aux });
    Ok(())
}

static UNARY: SparseImpl = SparseImpl { stype: unary_stype, compute: unary };

// Scalar ops that keep zeros only for some scalars: f(0, s) == 0.
macro_rules! scalar_impl {
    ($name:ident, $cond:expr) => {
        static $name: SparseImpl = SparseImpl {
            stype: |p, ins| {
                let cond: fn(f64) -> bool = $cond;
                (ins[0] != SType::Default && cond(p.float("scalar"))).then(|| vec![ins[0]])
            },
            compute: unary,
        };
    };
}
scalar_impl!(SC_NONZERO, |s| s != 0.0);
scalar_impl!(SC_ZERO, |s| s == 0.0);
scalar_impl!(SC_NONNEG, |s| s >= 0.0);
scalar_impl!(SC_POS, |s| s > 0.0);
scalar_impl!(SC_NONPOS, |s| s <= 0.0);
scalar_impl!(SC_NEG, |s| s < 0.0);
static CLIP: SparseImpl = SparseImpl { stype: clip_stype, compute: unary };

// ---- zeros_like ------------------------------------------------------------------

fn zeros_like(c: &SparseCall) -> Result<()> {
    let o = c.outputs[0].sparse().unwrap();
    o.set_parts(zero_parts(o.stype(), o.shape(), o.dtype(), o.aux_types(), c.ctx)?);
    Ok(())
}
static ZEROS_LIKE: SparseImpl = SparseImpl { stype: unary_stype, compute: zeros_like };

// ---- binary ------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Bin {
    Add,
    Sub,
    Mul,
    Max,
    Min,
    Hypot,
}

fn bin_of(name: &str) -> Bin {
    match name {
        "elemwise_sub" => Bin::Sub,
        "elemwise_mul" => Bin::Mul,
        "_maximum" => Bin::Max,
        "_minimum" => Bin::Min,
        "_hypot" => Bin::Hypot,
        _ => Bin::Add,
    }
}

/// `_maximum`, `_minimum`, `_hypot` (f(0, 0) = 0): rsp·rsp = rsp, csr·csr = csr over
/// the union of the stored entries; other combinations fall back to dense.
fn same_sparse_stype(_: &Params, ins: &[SType]) -> Option<Vec<SType>> {
    match (ins[0], ins[1]) {
        (SType::RowSparse, SType::RowSparse) => Some(vec![SType::RowSparse]),
        (SType::Csr, SType::Csr) => Some(vec![SType::Csr]),
        _ => None,
    }
}

fn add_stype(_: &Params, ins: &[SType]) -> Option<Vec<SType>> {
    Some(vec![match (ins[0], ins[1]) {
        (SType::RowSparse, SType::RowSparse) => SType::RowSparse,
        (SType::Csr, SType::Csr) => SType::Csr,
        (SType::Default, SType::Default) => return None,
        (SType::Csr, SType::RowSparse) | (SType::RowSparse, SType::Csr) => return None,
        _ => SType::Default,
    }])
}

fn mul_stype(_: &Params, ins: &[SType]) -> Option<Vec<SType>> {
    Some(vec![match (ins[0], ins[1]) {
        (SType::RowSparse, SType::RowSparse) | (SType::RowSparse, SType::Default) | (SType::Default, SType::RowSparse) => SType::RowSparse,
        (SType::Csr, SType::Csr) | (SType::Csr, SType::Default) | (SType::Default, SType::Csr) => SType::Csr,
        _ => return None,
    }])
}

fn apply(op: Bin, a: f64, b: f64) -> f64 {
    match op {
        Bin::Add => a + b,
        Bin::Sub => a - b,
        Bin::Mul => a * b,
        Bin::Max => {
            if a > b || a.is_nan() {
                a
            } else {
                b
            }
        }
        Bin::Min => {
            if a < b || a.is_nan() {
                a
            } else {
                b
            }
        }
        Bin::Hypot => a.hypot(b),
    }
}

/// Replaces a csr output's parts with these values, row pointers and column indices.
fn set_csr<T: Element>(
    os: &crate::ndarray::SparseArray,
    vals: &[T],
    indptr: &[i64],
    idx: &[i64],
    ctx: crate::context::Context,
) -> Result<()> {
    let at = os.aux_types();
    os.set_parts(Parts {
        data: fresh_array(&[vals.len()], vals, ctx)?,
        aux: vec![idx_array(indptr, at[0], ctx)?, idx_array(idx, at[1], ctx)?],
    });
    Ok(())
}

/// The stored (index, row values) of a sparse operand as a map-like sorted list.
struct Rows<T> {
    idx: Vec<i64>,
    vals: Vec<T>,
    width: usize,
}

fn rsp_rows<T: Element>(p: &Parts, width: usize) -> Result<Rows<T>> {
    // SAFETY: inside the op's engine operation, which reads the owner.
    let vals = unsafe { host_slice::<T>(&p.data)? }.to_vec();
    Ok(Rows { idx: read_idx(&p.aux[0])?, vals, width })
}

/// Merges two sorted index lists of rows (or columns) with `f` on the values.
fn merge<T: Element>(a: &Rows<T>, b: &Rows<T>, op: Bin) -> Rows<T> {
    let w = a.width;
    let (mut i, mut j) = (0, 0);
    let mut out = Rows { idx: Vec::new(), vals: Vec::new(), width: w };
    let zero = vec![T::from_f64(0.0); w];
    while i < a.idx.len() || j < b.idx.len() {
        let (ia, ib) = (a.idx.get(i).copied().unwrap_or(i64::MAX), b.idx.get(j).copied().unwrap_or(i64::MAX));
        let take_a = ia <= ib;
        let take_b = ib <= ia;
        if op == Bin::Mul && !(take_a && take_b) {
            if take_a {
                i += 1;
            } else {
                j += 1;
            }
            continue;
        }
        let ra = if take_a { &a.vals[i * w..(i + 1) * w] } else { &zero[..] };
        let rb = if take_b { &b.vals[j * w..(j + 1) * w] } else { &zero[..] };
        out.idx.push(ia.min(ib));
        out.vals.extend(ra.iter().zip(rb).map(|(&x, &y)| T::from_f64(apply(op, x.to_f64(), y.to_f64()))));
        if take_a {
            i += 1;
        }
        if take_b {
            j += 1;
        }
    }
    out
}

/// One csr row as `Rows` of width 1, in column order.
fn sorted_row<T: Element>(idx: &[i64], vals: &[T]) -> Rows<T> {
    let mut order: Vec<usize> = (0..idx.len()).collect();
    order.sort_by_key(|&k| idx[k]);
    Rows { idx: order.iter().map(|&k| idx[k]).collect(), vals: order.iter().map(|&k| vals[k]).collect(), width: 1 }
}

fn binary(c: &SparseCall) -> Result<()> {
    let op = bin_of(c.op.name);
    let (l, r) = (&c.inputs[0], &c.inputs[1]);
    if l.dtype() != r.dtype() {
        return Err(c.err(format!("both inputs must have the same dtype, got {} and {}", l.dtype().name(), r.dtype().name())));
    }
    if l.shape() != r.shape() {
        return Err(c.err("both inputs must have the same shape"));
    }
    with_dtype!(l.dtype(), T, { binary_t::<T>(c, op) })
}

fn binary_t<T: Element>(c: &SparseCall, op: Bin) -> Result<()> {
    let (l, r, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let shape = l.shape().to_vec();
    let rows = shape[0];
    let width = if rows == 0 { 0 } else { shape.iter().product::<usize>() / rows };
    match (l.stype(), r.stype(), o) {
        (SType::RowSparse, SType::RowSparse, AnyArray::Sparse(os)) => {
            let m = merge(&rsp_rows::<T>(&parts_of(l), width)?, &rsp_rows::<T>(&parts_of(r), width)?, op);
            let mut ds = shape.clone();
            ds[0] = m.idx.len();
            os.set_parts(Parts { data: fresh_array(&ds, &m.vals, c.ctx)?, aux: vec![idx_array(&m.idx, os.aux_types()[0], c.ctx)?] });
            Ok(())
        }
        (SType::Csr, SType::Csr, AnyArray::Sparse(os)) => {
            let (pl, pr) = (parts_of(l), parts_of(r));
            let (ipl, ixl, ipr, ixr) = (read_idx(&pl.aux[0])?, read_idx(&pl.aux[1])?, read_idx(&pr.aux[0])?, read_idx(&pr.aux[1])?);
            // SAFETY: as in rsp_rows.
            let (vl, vr) = unsafe { (host_slice::<T>(&pl.data)?, host_slice::<T>(&pr.data)?) };
            let mut indptr = vec![0i64];
            let (mut idx, mut vals) = (Vec::new(), Vec::new());
            for row in 0..rows {
                let (a0, a1, b0, b1) = (ipl[row] as usize, ipl[row + 1] as usize, ipr[row] as usize, ipr[row + 1] as usize);
                // A row's column indices need not be sorted (MXNet's csr arrays may be
                // shuffled within rows): merge them in column order.
                let a = sorted_row(&ixl[a0..a1], &vl[a0..a1]);
                let b = sorted_row(&ixr[b0..b1], &vr[b0..b1]);
                let m = merge(&a, &b, op);
                idx.extend(m.idx);
                vals.extend(m.vals);
                indptr.push(idx.len() as i64);
            }
            set_csr(os, &vals, &indptr, &idx, c.ctx)?;
            Ok(())
        }
        (_, _, AnyArray::Dense(od)) => {
            // sparse ± dense (either order) = dense.
            // SAFETY: the engine gives this op the output for writing and the inputs for reading.
            let out = unsafe { host_slice_mut::<T>(od)? };
            let (sp, dn, sparse_first) = if l.stype() != SType::Default { (l, r, true) } else { (r, l, false) };
            let dn = dn.dense().unwrap();
            if !dn.same_chunk(od) || dn.offset() != od.offset() {
                copy_host(dn, od)?;
            }
            let sign = |x: f64, y: f64| if sparse_first { apply(op, x, y) } else { apply(op, y, x) };
            let p = parts_of(sp);
            // SAFETY: as above.
            let v = unsafe { host_slice::<T>(&p.data)? };
            // out holds the dense operand d; out = sparse op d where stored, else 0 op d.
            let cols = if sp.stype() == SType::Csr { shape[1] } else { width };
            let mut touched = vec![false; out.len()];
            match sp.stype() {
                SType::RowSparse => {
                    for (k, &ri) in read_idx(&p.aux[0])?.iter().enumerate() {
                        for j in 0..width {
                            let at = ri as usize * width + j;
                            out[at] = T::from_f64(sign(v[k * width + j].to_f64(), out[at].to_f64()));
                            touched[at] = true;
                        }
                    }
                }
                _ => {
                    let (ip, ix) = (read_idx(&p.aux[0])?, read_idx(&p.aux[1])?);
                    for row in 0..rows {
                        for k in ip[row] as usize..ip[row + 1] as usize {
                            let at = row * cols + ix[k] as usize;
                            out[at] = T::from_f64(sign(v[k].to_f64(), out[at].to_f64()));
                            touched[at] = true;
                        }
                    }
                }
            }
            if op == Bin::Sub && sparse_first {
                for (x, t) in out.iter_mut().zip(&touched) {
                    if !t {
                        *x = T::from_f64(-x.to_f64());
                    }
                }
            }
            Ok(())
        }
        (_, _, AnyArray::Sparse(os)) => {
            // sparse · dense (either order) = sparse of the sparse operand's type.
            let (sp, dn) = if l.stype() != SType::Default { (l, r) } else { (r, l) };
            let p = parts_of(sp);
            // SAFETY: as above.
            let (v, d) = unsafe { (host_slice::<T>(&p.data)?, host_slice::<T>(dn.dense().unwrap())?) };
            let mut vals = Vec::with_capacity(v.len());
            match sp.stype() {
                SType::RowSparse => {
                    for (k, &ri) in read_idx(&p.aux[0])?.iter().enumerate() {
                        for j in 0..width {
                            vals.push(T::from_f64(v[k * width + j].to_f64() * d[ri as usize * width + j].to_f64()));
                        }
                    }
                }
                _ => {
                    let (ip, ix) = (read_idx(&p.aux[0])?, read_idx(&p.aux[1])?);
                    for row in 0..rows {
                        for k in ip[row] as usize..ip[row + 1] as usize {
                            vals.push(T::from_f64(v[k].to_f64() * d[row * shape[1] + ix[k] as usize].to_f64()));
                        }
                    }
                }
            }
            let aux = copy_parts(&p, os.aux_types())?.aux;
            os.set_parts(Parts { data: fresh_array(p.data.shape(), &vals, c.ctx)?, aux });
            Ok(())
        }
    }
}

static ADD: SparseImpl = SparseImpl { stype: add_stype, compute: binary };
static MUL: SparseImpl = SparseImpl { stype: mul_stype, compute: binary };
static MAX_MIN_HYPOT: SparseImpl = SparseImpl { stype: same_sparse_stype, compute: binary };

// ---- add_n -------------------------------------------------------------------------

fn add_n_stype(_: &Params, ins: &[SType]) -> Option<Vec<SType>> {
    if ins.iter().all(|s| *s == SType::RowSparse) {
        return Some(vec![SType::RowSparse]);
    }
    if ins.iter().any(|s| *s != SType::Default) && ins.iter().all(|s| *s != SType::Csr) {
        return Some(vec![SType::Default]);
    }
    None
}

fn add_n(c: &SparseCall) -> Result<()> {
    let d = c.inputs[0].dtype();
    if c.inputs.iter().any(|a| a.dtype() != d || a.shape() != c.inputs[0].shape()) {
        return Err(c.err("all inputs must have the same shape and dtype"));
    }
    with_dtype!(d, T, {
        let shape = c.inputs[0].shape().to_vec();
        let rows = shape[0];
        let width = if rows == 0 { 0 } else { shape.iter().product::<usize>() / rows };
        match &c.outputs[0] {
            AnyArray::Sparse(os) => {
                let mut acc = Rows::<T> { idx: Vec::new(), vals: Vec::new(), width };
                for a in c.inputs {
                    acc = merge(&acc, &rsp_rows::<T>(&parts_of(a), width)?, Bin::Add);
                }
                let mut ds = shape.clone();
                ds[0] = acc.idx.len();
                os.set_parts(Parts {
                    data: fresh_array(&ds, &acc.vals, c.ctx)?,
                    aux: vec![idx_array(&acc.idx, os.aux_types()[0], c.ctx)?],
                });
            }
            AnyArray::Dense(od) => {
                // SAFETY: the output is this op's to write; the inputs are read.
                let out = unsafe { host_slice_mut::<T>(od)? };
                let mut acc = vec![0f64; out.len()];
                for a in c.inputs {
                    match a {
                        AnyArray::Dense(x) => {
                            for (s, v) in acc.iter_mut().zip(unsafe { host_slice::<T>(x)? }) {
                                *s += v.to_f64();
                            }
                        }
                        AnyArray::Sparse(_) => {
                            let rr = rsp_rows::<T>(&parts_of(a), width)?;
                            for (k, &ri) in rr.idx.iter().enumerate() {
                                for j in 0..width {
                                    acc[ri as usize * width + j] += rr.vals[k * width + j].to_f64();
                                }
                            }
                        }
                    }
                }
                for (o, s) in out.iter_mut().zip(acc) {
                    *o = T::from_f64(s);
                }
            }
        }
        Ok(())
    })
}
static ADD_N: SparseImpl = SparseImpl { stype: add_n_stype, compute: add_n };

// ---- _sparse_retain ---------------------------------------------------------------------

fn retain_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    if a.shapes[1].len() != 1 {
        return Err(a.err("indices must be a 1-D array"));
    }
    Ok(vec![(Shape::from_slice(a.shapes[0]), a.dtypes[0])])
}

/// Dense data (a graph's sparse argument bound densely): the listed rows kept, the
/// others zero.
fn retain_dense(c: &mut crate::op::OpCall) -> Result<()> {
    let (x, idx, o) = (&c.inputs[0], &c.inputs[1], &c.outputs[0]);
    let rows = x.shape.first().copied().unwrap_or(0);
    let row_bytes = if rows == 0 { 0 } else { x.size() / rows * x.dtype.size() };
    let mut keep = vec![false; rows];
    with_dtype!(idx.dtype, I, {
        // SAFETY: the engine orders the inputs of this op.
        for &r in unsafe { idx.slice::<I>() } {
            let r = r.to_f64() as i64;
            if r < 0 || r as usize >= rows {
                return Err(Error::op(c.op.name, format!("row index {r} is out of range [0, {rows})")));
            }
            keep[r as usize] = true;
        }
    });
    // SAFETY: the output is this op's to write; the input is read.
    unsafe {
        let (src, dst) = (std::slice::from_raw_parts(x.ptr, rows * row_bytes), std::slice::from_raw_parts_mut(o.ptr, rows * row_bytes));
        for (r, k) in keep.iter().enumerate() {
            let d = &mut dst[r * row_bytes..(r + 1) * row_bytes];
            if *k {
                d.copy_from_slice(&src[r * row_bytes..(r + 1) * row_bytes]);
            } else {
                d.fill(0);
            }
        }
    }
    Ok(())
}

fn retain_grad(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    Ok(vec![Some(crate::op::call1("_sparse_retain", &[g[0].clone(), i[1].clone()], &[])?), None])
}

fn retain_stype(_: &Params, ins: &[SType]) -> Option<Vec<SType>> {
    (ins[0] == SType::RowSparse && ins[1] == SType::Default).then(|| vec![SType::RowSparse])
}

fn retain(c: &SparseCall) -> Result<()> {
    let d = c.inputs[0].dtype();
    let os = c.outputs[0].sparse().unwrap();
    let want = read_idx(c.inputs[1].dense().unwrap())?;
    with_dtype!(d, T, {
        let shape = c.inputs[0].shape().to_vec();
        let width = shape[1..].iter().product::<usize>();
        let rr = rsp_rows::<T>(&parts_of(&c.inputs[0]), width)?;
        if let Some(&r) = want.iter().find(|&&r| r < 0 || r as usize >= shape[0]) {
            return Err(c.err(format!("row index {r} is out of range [0, {})", shape[0])));
        }
        let mut keep: Vec<i64> = want.clone();
        keep.sort_unstable();
        keep.dedup();
        let (mut idx, mut vals) = (Vec::new(), Vec::new());
        for k in keep {
            if let Ok(pos) = rr.idx.binary_search(&k) {
                idx.push(k);
                vals.extend_from_slice(&rr.vals[pos * width..(pos + 1) * width]);
            }
        }
        let mut ds = shape.clone();
        ds[0] = idx.len();
        os.set_parts(Parts { data: fresh_array(&ds, &vals, c.ctx)?, aux: vec![idx_array(&idx, os.aux_types()[0], c.ctx)?] });
        Ok(())
    })
}
static RETAIN: SparseImpl = SparseImpl { stype: retain_stype, compute: retain };

// ---- slice of a csr ----------------------------------------------------------------------

fn slice_stype(p: &Params, ins: &[SType]) -> Option<Vec<SType>> {
    if ins[0] != SType::Csr {
        return None;
    }
    let step = p.opt_tuple("step").unwrap_or_default();
    step.iter().all(|&s| s == 1 || s == i64::MIN).then(|| vec![SType::Csr])
}

fn slice_csr(c: &SparseCall) -> Result<()> {
    let os = c.outputs[0].sparse().unwrap();
    let shape = c.inputs[0].shape();
    let bounds = |i: usize| -> (usize, usize) {
        let get = |name: &str| c.params.opt_tuple(name).and_then(|v| v.get(i).copied()).filter(|&v| v != i64::MIN);
        let n = shape[i] as i64;
        let norm = |v: i64| if v < 0 { (v + n).max(0) } else { v.min(n) };
        (get("begin").map(norm).unwrap_or(0) as usize, get("end").map(norm).unwrap_or(n) as usize)
    };
    let (r0, r1) = bounds(0);
    let (c0, c1) = bounds(1);
    let p = parts_of(&c.inputs[0]);
    let (ip, ix) = (read_idx(&p.aux[0])?, read_idx(&p.aux[1])?);
    with_dtype!(c.inputs[0].dtype(), T, {
        // SAFETY: the input is read inside this op's engine operation.
        let v = unsafe { host_slice::<T>(&p.data)? };
        let mut indptr = vec![0i64];
        let (mut idx, mut vals) = (Vec::new(), Vec::new());
        for row in r0..r1.max(r0) {
            for k in ip[row] as usize..ip[row + 1] as usize {
                let col = ix[k] as usize;
                if col >= c0 && col < c1 {
                    idx.push((col - c0) as i64);
                    vals.push(v[k]);
                }
            }
            indptr.push(idx.len() as i64);
        }
        set_csr(os, &vals, &indptr, &idx, c.ctx)?;
        Ok(())
    })
}
static SLICE: SparseImpl = SparseImpl { stype: slice_stype, compute: slice_csr };

// ---- broadcast_mul / broadcast_div of a csr by a vector ---------------------------------

fn bcast_stype(_: &Params, ins: &[SType]) -> Option<Vec<SType>> {
    (ins[0] == SType::Csr && ins[1] == SType::Default).then(|| vec![SType::Csr])
}

fn bcast(c: &SparseCall) -> Result<()> {
    let (l, r) = (&c.inputs[0], c.inputs[1].dense().unwrap());
    let os = c.outputs[0].sparse().unwrap();
    let (rows, cols) = (l.shape()[0], l.shape()[1]);
    let rs = r.shape();
    let by_row = rs.len() == 2 && rs[0] == rows && rs[1] == 1;
    let by_col = (rs.len() == 2 && rs[0] == 1 && rs[1] == cols) || (rs.len() == 1 && rs[0] == cols);
    let scalar = r.size() == 1;
    if !(by_row || by_col || scalar) {
        return Err(c.err(format!("cannot broadcast a csr of shape ({rows}, {cols}) with an operand of shape {:?}", rs)));
    }
    let div = c.op.name == "broadcast_div";
    let p = parts_of(l);
    let (ip, ix) = (read_idx(&p.aux[0])?, read_idx(&p.aux[1])?);
    with_dtype!(l.dtype(), T, {
        // SAFETY: inputs are read inside this op's engine operation.
        let (v, d) = unsafe { (host_slice::<T>(&p.data)?, host_slice::<T>(r)?) };
        let mut vals = Vec::with_capacity(v.len());
        for row in 0..rows {
            for k in ip[row] as usize..ip[row + 1] as usize {
                let y = if scalar {
                    d[0]
                } else if by_row {
                    d[row]
                } else {
                    d[ix[k] as usize]
                };
                let (x, y) = (v[k].to_f64(), y.to_f64());
                vals.push(T::from_f64(if div { x / y } else { x * y }));
            }
        }
        let aux = copy_parts(&p, os.aux_types())?.aux;
        os.set_parts(Parts { data: fresh_array(&[vals.len()], &vals, c.ctx)?, aux });
        Ok(())
    })
}
static BCAST: SparseImpl = SparseImpl { stype: bcast_stype, compute: bcast };

// ---- take of csr rows --------------------------------------------------------------------

fn take_stype(p: &Params, ins: &[SType]) -> Option<Vec<SType>> {
    let axis = p.int("axis");
    (ins[0] == SType::Csr && ins[1] == SType::Default && axis == 0 && p.str("mode") != "raise").then(|| vec![SType::Csr])
}

fn take_csr(c: &SparseCall) -> Result<()> {
    let os = c.outputs[0].sparse().unwrap();
    let rows = c.inputs[0].shape()[0] as i64;
    let wrap = c.params.str("mode") == "wrap";
    let want: Vec<i64> = read_idx(c.inputs[1].dense().unwrap())?
        .into_iter()
        .map(|i| if wrap { ((i % rows) + rows) % rows } else { i.clamp(0, rows - 1) })
        .collect();
    let p = parts_of(&c.inputs[0]);
    let (ip, ix) = (read_idx(&p.aux[0])?, read_idx(&p.aux[1])?);
    with_dtype!(c.inputs[0].dtype(), T, {
        // SAFETY: the input is read inside this op's engine operation.
        let v = unsafe { host_slice::<T>(&p.data)? };
        let mut indptr = vec![0i64];
        let (mut idx, mut vals) = (Vec::new(), Vec::new());
        for r in want {
            let (a, b) = (ip[r as usize] as usize, ip[r as usize + 1] as usize);
            idx.extend_from_slice(&ix[a..b]);
            vals.extend_from_slice(&v[a..b]);
            indptr.push(idx.len() as i64);
        }
        set_csr(os, &vals, &indptr, &idx, c.ctx)?;
        Ok(())
    })
}
static TAKE: SparseImpl = SparseImpl { stype: take_stype, compute: take_csr };

// ---- scatter ops: only the values stored in the left-hand input are computed ----

/// `_scatter_elemwise_div(row_sparse, any)`: row_sparse with the left-hand rows.
fn scatter_div_stype(_: &Params, ins: &[SType]) -> Option<Vec<SType>> {
    (ins[0] == SType::RowSparse).then(|| vec![SType::RowSparse])
}

fn scatter_div(c: &SparseCall) -> Result<()> {
    let (l, r) = (&c.inputs[0], &c.inputs[1]);
    if l.dtype() != r.dtype() {
        return Err(c.err(format!("both inputs must have the same dtype, got {} and {}", l.dtype().name(), r.dtype().name())));
    }
    if l.shape() != r.shape() {
        return Err(c.err(format!(
            "both inputs must have the same shape, got {} and {}",
            crate::shape::fmt_shape(l.shape()),
            crate::shape::fmt_shape(r.shape())
        )));
    }
    with_dtype!(l.dtype(), T, { scatter_div_t::<T>(c) })
}

fn scatter_div_t<T: Element>(c: &SparseCall) -> Result<()> {
    let (l, r) = (&c.inputs[0], &c.inputs[1]);
    let os = c.outputs[0].sparse().unwrap();
    let shape = l.shape().to_vec();
    let rows = shape.first().copied().unwrap_or(0);
    let width = if rows == 0 { 0 } else { shape.iter().product::<usize>() / rows };
    let lr = rsp_rows::<T>(&parts_of(l), width)?;
    // The right-hand row `ri` as f64 values (zeros where it stores nothing).
    let rhs_row: Box<dyn Fn(usize) -> Result<Vec<f64>>> = match r {
        AnyArray::Dense(d) => {
            // SAFETY: the engine gives this op its inputs for reading.
            let v = unsafe { host_slice::<T>(d)? };
            Box::new(move |ri| Ok(v[ri * width..(ri + 1) * width].iter().map(|x| x.to_f64()).collect()))
        }
        AnyArray::Sparse(_) if r.stype() == SType::RowSparse => {
            let rr = rsp_rows::<T>(&parts_of(r), width)?;
            Box::new(move |ri| {
                Ok(match rr.idx.binary_search(&(ri as i64)) {
                    Ok(k) => rr.vals[k * width..(k + 1) * width].iter().map(|x| x.to_f64()).collect(),
                    Err(_) => vec![0.0; width],
                })
            })
        }
        AnyArray::Sparse(_) => {
            let p = parts_of(r);
            let (ip, ix) = (read_idx(&p.aux[0])?, read_idx(&p.aux[1])?);
            // SAFETY: as above.
            let v = unsafe { host_slice::<T>(&p.data)? }.to_vec();
            Box::new(move |ri| {
                let mut row = vec![0.0; width];
                for k in ip[ri] as usize..ip[ri + 1] as usize {
                    row[ix[k] as usize] = v[k].to_f64();
                }
                Ok(row)
            })
        }
    };
    let mut vals = Vec::with_capacity(lr.vals.len());
    for (k, &ri) in lr.idx.iter().enumerate() {
        let den = rhs_row(ri as usize)?;
        vals.extend(lr.vals[k * width..(k + 1) * width].iter().zip(&den).map(|(x, y)| T::from_f64(x.to_f64() / y)));
    }
    let mut ds = shape.clone();
    ds[0] = lr.idx.len();
    os.set_parts(Parts { data: fresh_array(&ds, &vals, c.ctx)?, aux: vec![idx_array(&lr.idx, os.aux_types()[0], c.ctx)?] });
    Ok(())
}
static SCATTER_DIV: SparseImpl = SparseImpl { stype: scatter_div_stype, compute: scatter_div };

/// `_scatter_plus_scalar` / `_scatter_minus_scalar` of a sparse array: the scalar
/// applied to the stored values only; the output keeps the input's storage.
static SCATTER_SCALAR: SparseImpl = SparseImpl { stype: unary_stype, compute: unary };

pub(super) fn lookup(name: &str) -> Option<&'static SparseImpl> {
    match name {
        "_scatter_elemwise_div" => Some(&SCATTER_DIV),
        "_scatter_plus_scalar" | "_scatter_minus_scalar" => Some(&SCATTER_SCALAR),
        "clip" => Some(&CLIP),
        n if ZERO_PRESERVING.contains(&n) => Some(&UNARY),
        "zeros_like" => Some(&ZEROS_LIKE),
        "elemwise_add" | "elemwise_sub" => Some(&ADD),
        "elemwise_mul" => Some(&MUL),
        "_maximum" | "_minimum" | "_hypot" => Some(&MAX_MIN_HYPOT),
        "add_n" => Some(&ADD_N),
        "_sparse_retain" => Some(&RETAIN),
        "slice" => Some(&SLICE),
        "broadcast_mul" | "broadcast_div" => Some(&BCAST),
        "_equal_scalar" => Some(&SC_NONZERO),
        "_not_equal_scalar" | "_plus_scalar" | "_minus_scalar" | "_rminus_scalar" => Some(&SC_ZERO),
        "_greater_scalar" => Some(&SC_NONNEG),
        "_greater_equal_scalar" => Some(&SC_POS),
        "_lesser_scalar" => Some(&SC_NONPOS),
        "_lesser_equal_scalar" => Some(&SC_NEG),
        "take" => Some(&TAKE),
        "_contrib_quadratic" => Some(&QUAD),
        _ => None,
    }
}

// ---- _contrib_quadratic (op::contrib_elemwise) keeps csr storage when c == 0 ----
// (MXNet 1.9.1 registers the csr form only; a row_sparse input falls back to dense.)

static QUAD: SparseImpl = SparseImpl { stype: |p, ins| (ins[0] == SType::Csr && p.float("c") == 0.0).then(|| vec![ins[0]]), compute: unary };

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "_sparse_retain",
            "Pick rows specified by user input index array from a row sparse matrix and save them in the output sparse matrix.",
            Arity::Fixed(&["data", "indices"]),
            &[],
            retain_infer,
            retain_dense,
        )
        .grad(retain_grad)
        .aliases(&["sparse_retain"]),
    );
}
