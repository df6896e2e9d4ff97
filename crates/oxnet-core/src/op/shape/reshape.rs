//! `reshape_like`, `Reshape` (with MXNet's special codes), `Flatten`, `expand_dims` and
//! `squeeze`: ops that only change the shape (a whole-buffer copy, none in place).

use super::{copy_all, fmt_spec, norm_axis, Out, DATA};
use crate::error::{Error, Result};
use crate::op::{Arity, InferArgs, OpDef, PType, ParamSpec, Registry};
use crate::shape::{fmt_shape, Shape};

// ---------------------------------------------------------------- reshape_like

const RESHAPE_LIKE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "lhs_begin",
        PType::OptInt,
        Some("None"),
        "Defaults to 0. The beginning index along which the lhs dimensions are to be reshaped. Supports negative indices.",
    ),
    ParamSpec::new(
        "lhs_end",
        PType::OptInt,
        Some("None"),
        "Defaults to None. The ending index along which the lhs dimensions are to be used for reshaping. Supports negative indices.",
    ),
    ParamSpec::new(
        "rhs_begin",
        PType::OptInt,
        Some("None"),
        "Defaults to 0. The beginning index along which the rhs dimensions are to be used for reshaping. Supports negative indices.",
    ),
    ParamSpec::new(
        "rhs_end",
        PType::OptInt,
        Some("None"),
        "Defaults to None. The ending index along which the rhs dimensions are to be used for reshaping. Supports negative indices.",
    ),
];

/// `[begin, end)` of an axis range with optional, possibly negative, bounds.
fn axis_range(a: &InferArgs, ndim: usize, begin: Option<i64>, end: Option<i64>, what: &str) -> Result<(usize, usize)> {
    let n = ndim as i64;
    let fix = |v: i64| if v < 0 { v + n } else { v };
    let b = fix(begin.unwrap_or(0));
    let e = fix(end.unwrap_or(n));
    if b < 0 || e > n || b > e {
        return Err(a.err(format!("invalid {what} range [{b}, {e}) for an input of {ndim} dimensions")));
    }
    Ok((b as usize, e as usize))
}

fn reshape_like_infer(a: &InferArgs) -> Out {
    let (l, r) = (a.shapes[0], a.shapes[1]);
    let (lb, le) = axis_range(a, l.len(), a.params.opt_int("lhs_begin"), a.params.opt_int("lhs_end"), "lhs")?;
    let (rb, re) = axis_range(a, r.len(), a.params.opt_int("rhs_begin"), a.params.opt_int("rhs_end"), "rhs")?;
    let mut out: Shape = Shape::from_slice(&l[..lb]);
    out.extend_from_slice(&r[rb..re]);
    out.extend_from_slice(&l[le..]);
    if crate::shape::size(&out) != crate::shape::size(l) {
        return Err(a.err(format!(
            "cannot reshape lhs of shape {} like {}: the new shape {} has a different size",
            fmt_shape(l),
            fmt_shape(r),
            fmt_shape(&out)
        )));
    }
    Ok(vec![(out, a.dtypes[0])])
}

// ---------------------------------------------------------------- Reshape

/// MXNet's `Reshape` rule: the output shape for input shape `src` and target
/// `spec`, which may hold the special values
/// - `0`: copy the next input dimension;
/// - `-1`: infer this dimension from the remaining size (at most one);
/// - `-2`: copy all remaining input dimensions;
/// - `-3`: the product of the next two input dimensions;
/// - `-4`: split the next input dimension into the two values that follow
///   (one of them may be -1).
///
/// Positive values consume one input dimension each, like `0` and `-1`. With
/// `reverse`, input dims and `spec` are both read right to left (and the result
/// reversed back). The result must hold exactly as many elements as `src`.
pub fn infer_reshape(src: &[usize], spec: &[i64], reverse: bool) -> Result<Shape> {
    let err = |msg: String| {
        Error::op(
            "Reshape",
            format!("{msg} (input shape {}, shape={}, reverse={})", fmt_shape(src), fmt_spec(spec), if reverse { "True" } else { "False" }),
        )
    };
    if spec.is_empty() {
        return Err(err("the target shape must be given".into()));
    }
    let mut dims: Vec<usize> = src.to_vec();
    let mut sp: Vec<i64> = spec.to_vec();
    if reverse {
        dims.reverse();
        sp.reverse();
    }
    // Position of item i of `sp` in the caller's spec, for messages.
    let pos = |i: usize| if reverse { spec.len() - 1 - i } else { i };
    let mut out: Vec<usize> = Vec::with_capacity(sp.len() + dims.len());
    let mut infer_at: Option<usize> = None;
    let mut si = 0usize;
    let mut i = 0usize;
    while i < sp.len() {
        match sp[i] {
            0 => {
                let d = *dims.get(si).ok_or_else(|| {
                    err(format!("0 at position {} copies input dimension {si}, but the input has only {} dimension(s)", pos(i), dims.len()))
                })?;
                out.push(d);
                si += 1;
            }
            -1 => {
                if infer_at.is_some() {
                    return Err(err("only one dimension can be inferred (-1)".into()));
                }
                infer_at = Some(out.len());
                out.push(1);
                si += 1;
            }
            -2 => {
                while si < dims.len() {
                    out.push(dims[si]);
                    si += 1;
                }
            }
            -3 => {
                if si + 1 >= dims.len() {
                    return Err(err(format!(
                        "-3 at position {} merges input dimensions {si} and {}, but the input has only {} dimension(s)",
                        pos(i),
                        si + 1,
                        dims.len()
                    )));
                }
                out.push(dims[si] * dims[si + 1]);
                si += 2;
            }
            -4 => {
                if i + 2 >= sp.len() {
                    return Err(err(format!("-4 at position {} must be followed by the two dimensions to split into", pos(i))));
                }
                let d0 = *dims.get(si).ok_or_else(|| {
                    err(format!(
                        "-4 at position {} splits input dimension {si}, but the input has only {} dimension(s)",
                        pos(i),
                        dims.len()
                    ))
                })?;
                si += 1;
                let (mut d1, mut d2) = (sp[i + 1], sp[i + 2]);
                i += 2;
                if d1 == -1 && d2 == -1 {
                    return Err(err("the two dimensions after -4 cannot both be -1".into()));
                }
                if d1 < -1 || d2 < -1 {
                    return Err(err(format!("the dimensions after -4 must be non-negative or -1, got {d1}, {d2}")));
                }
                if d1 == -1 && d2 > 0 && d0 as i64 % d2 == 0 {
                    d1 = d0 as i64 / d2;
                }
                if d2 == -1 && d1 > 0 && d0 as i64 % d1 == 0 {
                    d2 = d0 as i64 / d1;
                }
                if d1 < 0 || d2 < 0 || d1 * d2 != d0 as i64 {
                    return Err(err(format!("split dimensions {}, {} do not divide input dimension {d0}", sp[i - 1], sp[i])));
                }
                out.push(d1 as usize);
                out.push(d2 as usize);
            }
            d if d > 0 => {
                out.push(d as usize);
                si += 1;
            }
            d => {
                return Err(err(format!(
                    "invalid value {d} at position {}: dimensions must be positive or one of the special values 0, -1, -2, -3, -4",
                    pos(i)
                )))
            }
        }
        i += 1;
    }
    let total: usize = src.iter().product();
    if let Some(k) = infer_at {
        let known: usize = out.iter().product();
        if known == 0 {
            return Err(err(format!("cannot infer the -1 dimension: the other dimensions hold no element, the input holds {total}")));
        }
        if !total.is_multiple_of(known) {
            return Err(err(format!("cannot infer the -1 dimension: {total} elements do not divide into parts of {known}")));
        }
        out[k] = total / known;
    }
    if reverse {
        out.reverse();
    }
    let size: usize = out.iter().product();
    if size != total {
        return Err(err(format!("target shape {} holds {size} element(s) but the input holds {total}", fmt_shape(&out))));
    }
    Ok(Shape::from_slice(&out))
}

/// The deprecated `target_shape` / `keep_highest` rule: one 0 (after the kept
/// first dim) is inferred from the remaining size.
fn legacy_reshape(a: &InferArgs, src: &[usize], target: &[i64], keep_highest: bool) -> Result<Shape> {
    let mut t = target.to_vec();
    if keep_highest {
        let d = *src.first().ok_or_else(|| a.err("keep_highest needs an input with at least one dimension"))?;
        t[0] = d as i64;
    }
    if let Some(d) = t.iter().find(|d| **d < 0) {
        return Err(a.err(format!("negative dimension {d} in target_shape {}", fmt_spec(target))));
    }
    let start = usize::from(keep_highest);
    let zeros: Vec<usize> = (start..t.len()).filter(|&i| t[i] == 0).collect();
    let total: usize = src.iter().product();
    if zeros.len() == 1 {
        let known: i64 = t.iter().enumerate().filter(|(i, _)| *i != zeros[0]).map(|(_, d)| *d).product();
        if known == 0 || total as i64 % known != 0 {
            return Err(a.err(format!(
                "cannot infer the 0 dimension of target_shape {} from input shape {}",
                fmt_spec(target),
                fmt_shape(src)
            )));
        }
        t[zeros[0]] = total as i64 / known;
    }
    let out: Shape = t.iter().map(|d| *d as usize).collect();
    if out.iter().product::<usize>() != total {
        return Err(a.err(format!("cannot reshape array of shape {} into target_shape {}", fmt_shape(src), fmt_spec(target))));
    }
    Ok(out)
}

const RESHAPE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("shape", PType::Tuple, Some("()"), "The target shape"),
    ParamSpec::new("reverse", PType::Bool, Some("False"), "If true then the special values are inferred from right to left"),
    ParamSpec::new(
        "target_shape",
        PType::Tuple,
        Some("()"),
        "(Deprecated! Use ``shape`` instead.) Target new shape. One and only one dim can be 0, in which case it will be inferred from the rest of dims",
    ),
    ParamSpec::new(
        "keep_highest",
        PType::Bool,
        Some("False"),
        "(Deprecated! Use ``shape`` instead.) Whether keep the highest dim unchanged.If set to true, then the first dim in target_shape is ignored,and always fixed as input",
    ),
];

fn reshape_infer(a: &InferArgs) -> Out {
    let src = a.shapes[0];
    let spec = a.params.tuple("shape");
    let out = if !spec.is_empty() {
        infer_reshape(src, &spec, a.params.bool("reverse"))?
    } else {
        let target = a.params.tuple("target_shape");
        if target.is_empty() {
            return Err(a.err(format!("the target shape must be given (input shape {})", fmt_shape(src))));
        }
        legacy_reshape(a, src, &target, a.params.bool("keep_highest"))?
    };
    Ok(vec![(out, a.dtypes[0])])
}

fn flatten_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    if s.is_empty() {
        return Err(a.err("cannot flatten a 0-d array: the input needs at least one dimension"));
    }
    Ok(vec![(Shape::from_slice(&[s[0], s[1..].iter().product()]), a.dtypes[0])])
}

const EXPAND_PARAMS: &[ParamSpec] = &[ParamSpec::new(
    "axis",
    PType::Int,
    None,
    "Position where new axis is to be inserted. Suppose that the input `NDArray`'s dimension is `ndim`, the range of the inserted axis is `[-ndim, ndim]`",
)];

fn expand_dims_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    let n = s.len() as i64;
    let axis = a.params.int("axis");
    let ax = if axis < 0 { axis + n + 1 } else { axis };
    if ax < 0 || ax > n {
        return Err(a.err(format!("axis={axis} is out of range for input shape {}: it must be in [{}, {n}]", fmt_shape(s), -n - 1)));
    }
    let mut out = Shape::from_slice(s);
    out.insert(ax as usize, 1);
    Ok(vec![(out, a.dtypes[0])])
}

const SQUEEZE_PARAMS: &[ParamSpec] = &[ParamSpec::new(
    "axis",
    PType::OptTuple,
    Some("None"),
    "Selects a subset of the single-dimensional entries in the shape. If an axis is selected with shape entry greater than one, an error is raised.",
)];

fn squeeze_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    let mut keep = vec![true; s.len()];
    match a.params.opt_tuple("axis") {
        None => {
            for (k, d) in keep.iter_mut().zip(s) {
                *k = *d != 1;
            }
        }
        Some(axes) => {
            for ax in axes {
                let i = norm_axis(a, "axis", ax, s.len(), s)?;
                if !keep[i] {
                    return Err(a.err(format!("duplicate value {ax} in axis")));
                }
                if s[i] != 1 {
                    return Err(a.err(format!("cannot squeeze axis {ax} of shape {}: its size is {}, not 1", fmt_shape(s), s[i])));
                }
                keep[i] = false;
            }
        }
    }
    let mut out: Shape = s.iter().zip(&keep).filter(|(_, k)| **k).map(|(d, _)| *d).collect();
    if out.is_empty() && !s.is_empty() {
        // MXNet keeps one dimension when every axis is squeezed out.
        out.push(1);
    }
    Ok(vec![(out, a.dtypes[0])])
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "reshape_like",
            "Reshapes some or all dimensions of `lhs` to have the same shape as some or all dimensions of `rhs`.",
            Arity::Fixed(&["lhs", "rhs"]),
            RESHAPE_LIKE_PARAMS,
            reshape_like_infer,
            copy_all,
        )
        .inplace(),
    );
    r.add(
        OpDef::new(
            "Reshape",
            "Reshapes the input array to `shape`, which may use the special values\n\
             0 (copy this input dimension), -1 (infer from the remaining size), -2 (copy all\n\
             remaining input dimensions), -3 (product of the next two input dimensions) and -4\n\
             (split the next input dimension into the two values that follow, one of which may\n\
             be -1). With `reverse=True` the special values are matched from right to left.",
            DATA,
            RESHAPE_PARAMS,
            reshape_infer,
            copy_all,
        )
        .unnamed_inputs()
        .aliases(&["reshape"])
        .inplace(),
    );
    r.add(
        OpDef::new(
            "Flatten",
            "Flattens the input array into a 2-D array by collapsing the higher dimensions: (d1, d2*...*dk).",
            DATA,
            &[],
            flatten_infer,
            copy_all,
        )
        .unnamed_inputs()
        .aliases(&["flatten"])
        .inplace(),
    );
    r.add(
        OpDef::new(
            "expand_dims",
            "Inserts a new axis of size 1 into the array shape at `axis`.",
            DATA,
            EXPAND_PARAMS,
            expand_dims_infer,
            copy_all,
        )
        .unnamed_inputs()
        .inplace(),
    );
    r.add(
        OpDef::new(
            "squeeze",
            "Removes single-dimensional entries from the shape of an array (those in `axis`, or all).",
            DATA,
            SQUEEZE_PARAMS,
            squeeze_infer,
            copy_all,
        )
        .inplace(),
    );
}
