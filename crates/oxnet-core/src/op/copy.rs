//! Copies and casts: `_copy` (a new array with the same data), `_copyto` (data into
//! an existing array, also across host devices) and `Cast`.

use super::{infer_like_first, Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Registry};
use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::cpu::elemwise::cast;
use crate::kernels::cpu::{par_for, SendPtr};
use crate::shape::Shape;
use crate::with_dtype;

const DATA: Arity = Arity::Fixed(&["data"]);

pub(crate) fn copy_bytes(src: *const u8, dst: *mut u8, n: usize) {
    if std::ptr::eq(src, dst) {
        return;
    }
    let (s, d) = (SendPtr(src as *mut u8), SendPtr(dst));
    par_for(n, 1 << 18, move |a, b| {
        // SAFETY: both ranges are within their buffers; they do not overlap (checked by invoke).
        unsafe { std::ptr::copy_nonoverlapping(s.get().add(a), d.get().add(a), b - a) };
    });
}

fn copy_compute(c: &mut OpCall) -> Result<()> {
    let (a, o) = (&c.inputs[0], &c.outputs[0]);
    copy_bytes(a.ptr, o.ptr, o.size() * o.dtype.size());
    Ok(())
}

const CAST_PARAMS: &[ParamSpec] = &[ParamSpec::new("dtype", PType::DType, None, "Output data type.")];

fn cast_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    Ok(vec![(Shape::from_slice(a.shapes[0]), a.params.dtype("dtype").unwrap_or(DType::F32))])
}

fn cast_compute(c: &mut OpCall) -> Result<()> {
    let (a, o) = (&c.inputs[0], &c.outputs[0]);
    if a.dtype == o.dtype {
        return copy_compute(c);
    }
    let to_bool = o.dtype == DType::Bool;
    with_dtype!(a.dtype, T, { with_dtype!(o.dtype, U, { cast::<T, U>(a.ptr_as(), o.ptr_as(), o.size(), to_bool) }) });
    Ok(())
}

/// `_identity_with_attr_like_rhs`: lhs passed through, with rhs's shape (both must
/// agree), so that a known rhs shape reaches lhs in symbolic inference.
fn like_rhs_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let s = super::check_same_shape(a)?;
    Ok(vec![(s, a.dtypes[0])])
}

/// Each side takes the other's shape.
fn like_rhs_fill(_: &super::Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    match (shapes[0].clone(), shapes[1].clone()) {
        (None, Some(r)) => shapes[0] = Some(r),
        (Some(l), None) => shapes[1] = Some(l),
        _ => {}
    }
    Ok(())
}

fn like_rhs_grad(
    _: &super::Params,
    _: &[crate::NDArray],
    _: &[crate::NDArray],
    g: &[crate::NDArray],
) -> Result<Vec<Option<crate::NDArray>>> {
    Ok(vec![Some(g[0].clone()), None])
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "_identity_with_attr_like_rhs",
            "Returns lhs unchanged; its shape is rhs's (an internal op for shape inference).",
            Arity::Fixed(&["lhs", "rhs"]),
            &[],
            like_rhs_infer,
            copy_compute,
        )
        .fill(like_rhs_fill)
        .grad(like_rhs_grad),
    );
    r.add(
        OpDef::new("_copy", "Returns a copy of the input.", DATA, &[], infer_like_first, copy_compute)
            .unnamed_inputs()
            .aliases(&["identity"])
            .inplace(),
    );
    r.add(
        OpDef::new(
            "_copyto",
            "Copies the input into the output array, which may live on another host device.",
            DATA,
            &[],
            infer_like_first,
            copy_compute,
        )
        .inplace()
        .cross_device(),
    );
    r.add(
        OpDef::new("Cast", "Casts all elements of the input to a new type.", DATA, CAST_PARAMS, cast_infer, cast_compute)
            .unnamed_inputs()
            .aliases(&["cast"]),
    );
}
