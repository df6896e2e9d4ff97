//! `transpose` and `SwapAxis`: axis permutations as one strided copy.

use super::{copy_view, fmt_spec, norm_axis, Out, DATA};
use crate::error::Result;
use crate::kernels::cpu::layout::strides_of;
use crate::op::{Blob, InferArgs, OpCall, OpDef, PType, ParamSpec, Registry};
use crate::shape::fmt_shape;

// ---------------------------------------------------------------- transpose

const TRANSPOSE_PARAMS: &[ParamSpec] =
    &[ParamSpec::new("axes", PType::Tuple, Some("()"), "Target axis order. By default the axes will be inverted.")];

/// The permutation: `axes` checked against `ndim`, or the reversal.
fn transpose_axes(a: &InferArgs, s: &[usize]) -> Result<Vec<usize>> {
    let axes = a.params.tuple("axes");
    let n = s.len();
    if axes.is_empty() {
        return Ok((0..n).rev().collect());
    }
    if axes.len() != n {
        return Err(a.err(format!(
            "axes {} has {} entries but the input shape {} has {n} dimension(s)",
            fmt_spec(&axes),
            axes.len(),
            fmt_shape(s)
        )));
    }
    let mut seen = vec![false; n];
    let mut out = Vec::with_capacity(n);
    for &ax in &axes {
        if ax < 0 || ax >= n as i64 {
            return Err(a.err(format!("axes {}: entry {ax} is out of range [0, {n}) for input shape {}", fmt_spec(&axes), fmt_shape(s))));
        }
        if seen[ax as usize] {
            return Err(a.err(format!("axes {} repeats axis {ax}; it must be a permutation of 0..{n}", fmt_spec(&axes))));
        }
        seen[ax as usize] = true;
        out.push(ax as usize);
    }
    Ok(out)
}

/// Copies `data` into `out`, whose dim i is input dim `perm[i]`.
fn permute(src: &Blob, dst: &Blob, perm: &[usize]) {
    let is = strides_of(&src.shape);
    let ss: Vec<isize> = perm.iter().map(|&p| is[p]).collect();
    copy_view(&dst.shape, src, 0, &ss, dst, 0, &strides_of(&dst.shape));
}

fn infer_permuted(a: &InferArgs, perm: &[usize]) -> Out {
    let s = a.shapes[0];
    Ok(vec![(perm.iter().map(|&p| s[p]).collect(), a.dtypes[0])])
}

fn transpose_infer(a: &InferArgs) -> Out {
    let perm = transpose_axes(a, a.shapes[0])?;
    infer_permuted(a, &perm)
}

fn transpose_compute(c: &mut OpCall) -> Result<()> {
    let n = c.inputs[0].shape.len();
    let axes = c.params.tuple("axes");
    let perm: Vec<usize> = if axes.is_empty() { (0..n).rev().collect() } else { axes.iter().map(|&x| x as usize).collect() };
    permute(&c.inputs[0], &c.outputs[0], &perm);
    Ok(())
}

const SWAP_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("dim1", PType::Int, Some("0"), "the first axis to be swapped."),
    ParamSpec::new("dim2", PType::Int, Some("0"), "the second axis to be swapped."),
];

fn swap_perm(a: &InferArgs) -> Result<Vec<usize>> {
    let s = a.shapes[0];
    let d1 = norm_axis(a, "dim1", a.params.int("dim1"), s.len(), s)?;
    let d2 = norm_axis(a, "dim2", a.params.int("dim2"), s.len(), s)?;
    let mut perm: Vec<usize> = (0..s.len()).collect();
    perm.swap(d1, d2);
    Ok(perm)
}

fn swap_infer(a: &InferArgs) -> Out {
    let perm = swap_perm(a)?;
    infer_permuted(a, &perm)
}

fn swap_compute(c: &mut OpCall) -> Result<()> {
    let n = c.inputs[0].shape.len() as i64;
    let norm = |d: i64| (if d < 0 { d + n } else { d }) as usize;
    let mut perm: Vec<usize> = (0..n as usize).collect();
    perm.swap(norm(c.params.int("dim1")), norm(c.params.int("dim2")));
    permute(&c.inputs[0], &c.outputs[0], &perm);
    Ok(())
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "transpose",
            "Permutes the dimensions of an array: output axis i is input axis axes[i] (reversed when axes is empty).",
            DATA,
            TRANSPOSE_PARAMS,
            transpose_infer,
            transpose_compute,
        )
        .unnamed_inputs(),
    );
    r.add(OpDef::new("SwapAxis", "Interchanges two axes of an array.", DATA, SWAP_PARAMS, swap_infer, swap_compute).aliases(&["swapaxes"]));
}
