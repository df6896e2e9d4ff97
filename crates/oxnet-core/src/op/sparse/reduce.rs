//! `_square_sum`: the sum of squares over axes (what the norm of a row_sparse
//! gradient needs). On dense input it is `sum(square(x))`; on row_sparse input with
//! `axis=1, keepdims=True` it stays row_sparse (one value per stored row, MXNet's
//! rule), otherwise the result is dense.

use super::cast::sparse_to_dense;
use super::{parts_of, read_idx, run_kernel, SparseCall, SparseImpl};
use crate::error::Result;
use crate::ndarray::sparse::{fresh_array, host_slice};
use crate::ndarray::{AnyArray, NDArray, SType};
use crate::op::reduce::{infer_reduce, REDUCE_PARAMS};
use crate::dtype::DType;
use crate::op::{Arity, InferArgs, OpCall, OpDef, Params, Registry};
use crate::shape::Shape;
use crate::with_float;

/// Float inputs only (as MXNet's `_square_sum`), then `sum`'s shape rule.
fn square_sum_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    if !a.dtypes[0].is_float() {
        return Err(a.err(format!("data must be a floating-point array, got {}", a.dtypes[0].name())));
    }
    infer_reduce::<false>(a)
}

fn square_sum_dense(c: &mut OpCall) -> Result<()> {
    let x = &c.inputs[0];
    let sq = NDArray::empty(&x.shape, c.ctx, x.dtype)?;
    let sq_blob = super::blob(&sq)?;
    with_float!(x.dtype, T, {
        // SAFETY: the input is read and the temporary is ours, inside this op's run.
        let (src, dst) = unsafe { (x.slice::<T>(), sq_blob.slice_mut::<T>()) };
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = s * s;
        }
    });
    let sum = crate::op::lookup("sum")?;
    let mut call = OpCall {
        op: sum,
        params: c.params,
        inputs: std::slice::from_ref(&sq_blob),
        outputs: c.outputs,
        ctx: c.ctx,
        rng: None,
        is_train: c.is_train,
    };
    (sum.cpu)(&mut call)
}

fn stype_fn(p: &Params, ins: &[SType]) -> Option<Vec<SType>> {
    if ins[0] != SType::RowSparse {
        return None;
    }
    let axis = p.opt_tuple("axis");
    let row_wise = matches!(axis.as_deref(), Some([1]) | Some([-1])) && p.bool("keepdims") && !p.bool("exclude");
    Some(vec![if row_wise { SType::RowSparse } else { SType::Default }])
}

fn compute(c: &SparseCall) -> Result<()> {
    let x = &c.inputs[0];
    let p = parts_of(x);
    match &c.outputs[0] {
        AnyArray::Sparse(os) => {
            let rows = p.nnz();
            let width = x.shape()[1..].iter().product::<usize>();
            with_float!(x.dtype(), T, {
                // SAFETY: read inside this op's engine operation.
                let v = unsafe { host_slice::<T>(&p.data)? };
                let sums: Vec<T> = (0..rows).map(|r| v[r * width..(r + 1) * width].iter().fold(T::from(0u8), |a, &b| a + b * b)).collect();
                let mut ds = os.shape().to_vec();
                ds[0] = rows;
                let idx = read_idx(&p.aux[0])?;
                os.set_parts(crate::ndarray::sparse::Parts {
                    data: fresh_array(&ds, &sums, c.ctx)?,
                    aux: vec![super::idx_array(&idx, os.aux_types()[0], c.ctx)?],
                });
            });
            Ok(())
        }
        AnyArray::Dense(o) => {
            let tmp = NDArray::empty(x.shape(), c.ctx, x.dtype())?;
            sparse_to_dense(SType::RowSparse, &p, &tmp)?;
            run_kernel("_square_sum", c.params, &[tmp], std::slice::from_ref(o), c.ctx)
        }
    }
}

static SQUARE_SUM: SparseImpl = SparseImpl { stype: stype_fn, compute };

// ---- getnnz ------------------------------------------------------------------------

const GETNNZ_PARAMS: &[crate::op::ParamSpec] = &[crate::op::ParamSpec::new(
    "axis",
    crate::op::PType::OptInt,
    Some("None"),
    "Select between the number of values across the whole matrix, in each column, or in each row.",
)];

fn getnnz_infer(a: &crate::op::InferArgs) -> Result<Vec<(crate::shape::Shape, crate::dtype::DType)>> {
    if a.shapes[0].len() != 2 {
        return Err(a.err("getnnz expects a 2-D csr matrix"));
    }
    let n = match a.params.opt_int("axis") {
        None => 1,
        Some(0) => a.shapes[0][1],
        Some(1) | Some(-1) => a.shapes[0][0],
        Some(x) => return Err(a.err(format!("axis={x} is out of range for a 2-D matrix"))),
    };
    Ok(vec![(crate::shape::Shape::from_slice(&[n]), crate::dtype::DType::I64)])
}

fn getnnz_dense(c: &mut OpCall) -> Result<()> {
    Err(crate::error::Error::op(c.op.name, "getnnz needs a csr input, got default storage"))
}

fn getnnz(c: &SparseCall) -> Result<()> {
    let p = parts_of(&c.inputs[0]);
    let (ip, ix) = (read_idx(&p.aux[0])?, read_idx(&p.aux[1])?);
    let (rows, cols) = (c.inputs[0].shape()[0], c.inputs[0].shape()[1]);
    let counts: Vec<i64> = match c.params.opt_int("axis") {
        None => vec![ip[rows] - ip[0]],
        Some(0) => {
            let mut v = vec![0i64; cols];
            for &col in &ix[ip[0] as usize..ip[rows] as usize] {
                v[col as usize] += 1;
            }
            v
        }
        _ => (0..rows).map(|r| ip[r + 1] - ip[r]).collect(),
    };
    let o = c.outputs[0].dense().unwrap();
    // SAFETY: the output is this op's to write.
    unsafe { crate::ndarray::sparse::host_slice_mut::<i64>(o)? }.copy_from_slice(&counts);
    Ok(())
}

static GETNNZ: SparseImpl = SparseImpl { stype: |_, ins| (ins[0] == SType::Csr).then(|| vec![SType::Default]), compute: getnnz };

pub(super) fn lookup(name: &str) -> Option<&'static SparseImpl> {
    match name {
        "_square_sum" => Some(&SQUARE_SUM),
        "_contrib_getnnz" => Some(&GETNNZ),
        _ => None,
    }
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "_contrib_getnnz",
            "Number of stored values of a csr matrix: in all (axis=None), in each column (axis=0) or in each row (axis=1).",
            Arity::Fixed(&["data"]),
            GETNNZ_PARAMS,
            getnnz_infer,
            getnnz_dense,
        )
        .unnamed_inputs(),
    );
    r.add(
        OpDef::new(
            "_square_sum",
            "Computes the square sum of array elements over a given axis for row-sparse matrix (and dense input).",
            Arity::Fixed(&["data"]),
            REDUCE_PARAMS,
            square_sum_infer,
            square_sum_dense,
        )
        .unnamed_inputs(),
    );
}
