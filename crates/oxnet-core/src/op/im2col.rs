//! `im2col` and `col2im`: sliding blocks of an (N, C, *spatial) array as columns
//! (N, C * prod(kernel), L) and back (overlaps summed), for 1 to 3 spatial
//! dimensions, with MXNet's kernel/stride/dilate/pad parameters. Each is the
//! other's gradient.

use super::{InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};
use crate::with_dtype;

type Out = Result<Vec<(Shape, DType)>>;
type Grads = Result<Vec<Option<NDArray>>>;

const DATA: super::Arity = super::Arity::Fixed(&["data"]);

fn read(b: &super::Blob) -> Vec<f64> {
    // SAFETY: a blob holds its elements; nothing writes it during the call.
    with_dtype!(b.dtype, T, { unsafe { b.slice::<T>() }.iter().map(|v| v.to_f64()).collect() })
}

fn write(b: &super::Blob, v: &[f64]) {
    // SAFETY: the output is ours to write and holds v.len() elements.
    with_dtype!(b.dtype, T, {
        for (d, s) in unsafe { b.slice_mut::<T>() }.iter_mut().zip(v) {
            *d = T::from_f64(*s);
        }
    })
}

// ---- im2col / col2im ----------------------------------------------------------------------------

const KERNEL: ParamSpec = ParamSpec::new("kernel", PType::Tuple, None, "Sliding kernel size: (w,), (h, w) or (d, h, w).");
const STRIDE: ParamSpec = ParamSpec::new(
    "stride",
    PType::Tuple,
    Some("()"),
    "The stride between adjacent sliding blocks in spatial dimension: (w,), (h, w) or (d, h, w). Defaults to 1 for each dimension.",
);
const DILATE: ParamSpec = ParamSpec::new(
    "dilate",
    PType::Tuple,
    Some("()"),
    "The spacing between adjacent kernel points: (w,), (h, w) or (d, h, w). Defaults to 1 for each dimension.",
);
const PAD: ParamSpec = ParamSpec::new(
    "pad",
    PType::Tuple,
    Some("()"),
    "The zero-value padding size on both sides of spatial dimension: (w,), (h, w) or (d, h, w). Defaults to no padding.",
);
const IM2COL_PARAMS: &[ParamSpec] = &[KERNEL, STRIDE, DILATE, PAD];
const COL2IM_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("output_size", PType::Tuple, None, "The spatial dimension of image array: (w,), (h, w) or (d, h, w)."),
    KERNEL,
    STRIDE,
    DILATE,
    PAD,
];

/// Kernel, stride, dilate, pad (defaults filled) and the output spatial size.
struct Window {
    k: Vec<usize>,
    st: Vec<usize>,
    di: Vec<usize>,
    pa: Vec<usize>,
    out: Vec<usize>,
}

fn window(op: &str, p: &Params, spatial: &[usize]) -> Result<Window> {
    let k = p.tuple("kernel");
    let n = k.len();
    if n == 0 || n > 3 || spatial.len() != n {
        return Err(Error::op(op, format!("kernel {k:?} must have 1 to 3 dimensions, as many as the spatial dimensions {spatial:?}")));
    }
    let get = |name: &str, dflt: i64| -> Result<Vec<usize>> {
        let v = p.tuple(name);
        if v.is_empty() {
            return Ok(vec![dflt as usize; n]);
        }
        if v.len() != n || v.iter().any(|&x| x < 0) {
            return Err(Error::op(op, format!("{name} {v:?} must have {n} non-negative entries (as kernel {k:?})")));
        }
        Ok(v.iter().map(|&x| x as usize).collect())
    };
    let (st, di, pa) = (get("stride", 1)?, get("dilate", 1)?, get("pad", 0)?);
    if k.iter().any(|&x| x <= 0) || st.contains(&0) || di.contains(&0) {
        return Err(Error::op(op, format!("kernel {k:?}, stride {st:?} and dilate {di:?} must be positive")));
    }
    let k: Vec<usize> = k.iter().map(|&x| x as usize).collect();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let span = di[i] * (k[i] - 1) + 1;
        let padded = spatial[i] + 2 * pa[i];
        if padded < span {
            return Err(Error::op(
                op,
                format!("the dilated kernel ({span}) is larger than the padded input ({padded}) on spatial axis {i}"),
            ));
        }
        out.push((padded - span) / st[i] + 1);
    }
    Ok(Window { k, st, di, pa, out })
}

fn im2col_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    if s.len() < 3 {
        return Err(a.err(format!("data must be (N, C, spatial...), got shape {}", fmt_shape(s))));
    }
    let w = window(a.op.name, a.params, &s[2..])?;
    let kk: usize = w.k.iter().product();
    Ok(vec![(Shape::from_slice(&[s[0], s[1] * kk, w.out.iter().product()]), a.dtypes[0])])
}

fn col2im_infer(a: &InferArgs) -> Out {
    let s = a.shapes[0];
    let size: Vec<usize> = a.params.tuple("output_size").iter().map(|&x| x.max(0) as usize).collect();
    let w = window(a.op.name, a.params, &size)?;
    let kk: usize = w.k.iter().product();
    let l: usize = w.out.iter().product();
    if s.len() != 3 || !s[1].is_multiple_of(kk) || s[2] != l {
        return Err(a.err(format!(
            "data must be (N, C*{kk}, {l}) for kernel {:?} and output_size {size:?}, got shape {}",
            w.k,
            fmt_shape(s)
        )));
    }
    let mut o = Shape::from_slice(&[s[0], s[1] / kk]);
    o.extend_from_slice(&size);
    Ok(vec![(o, a.dtypes[0])])
}

/// For every (kernel offset, output position): the input spatial offset, or None
/// in the padding.
fn col_map(spatial: &[usize], w: &Window) -> Vec<Option<usize>> {
    let n = spatial.len();
    let kk: usize = w.k.iter().product();
    let l: usize = w.out.iter().product();
    let mut map = Vec::with_capacity(kk * l);
    for ki in 0..kk {
        let mut kidx = vec![0usize; n];
        let mut r = ki;
        for d in (0..n).rev() {
            kidx[d] = r % w.k[d];
            r /= w.k[d];
        }
        for li in 0..l {
            let mut r = li;
            let mut off = Some(0usize);
            let mut stride = 1usize;
            let mut pos = vec![0usize; n];
            for d in (0..n).rev() {
                pos[d] = r % w.out[d];
                r /= w.out[d];
            }
            for d in (0..n).rev() {
                let c = (pos[d] * w.st[d] + kidx[d] * w.di[d]) as i64 - w.pa[d] as i64;
                off = match off {
                    Some(o) if c >= 0 && (c as usize) < spatial[d] => Some(o + c as usize * stride),
                    _ => None,
                };
                stride *= spatial[d];
            }
            map.push(off);
        }
    }
    map
}

fn im2col_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let w = window(c.op.name, c.params, &x.shape[2..])?;
    let map = col_map(&x.shape[2..], &w);
    let (n, ch) = (x.shape[0], x.shape[1]);
    let sp: usize = x.shape[2..].iter().product();
    with_dtype!(x.dtype, T, {
        // SAFETY: sizes from inference.
        let (xs, os) = unsafe { (x.slice::<T>(), o.slice_mut::<T>()) };
        let z = T::from_f64(0.0);
        let per = map.len();
        for b in 0..n {
            for cc in 0..ch {
                let src = &xs[(b * ch + cc) * sp..(b * ch + cc + 1) * sp];
                let dst = &mut os[(b * ch + cc) * per..(b * ch + cc + 1) * per];
                for (d, m) in dst.iter_mut().zip(&map) {
                    *d = m.map(|i| src[i]).unwrap_or(z);
                }
            }
        }
    });
    Ok(())
}

fn col2im_compute(c: &mut OpCall) -> Result<()> {
    let (x, o) = (&c.inputs[0], &c.outputs[0]);
    let w = window(c.op.name, c.params, &o.shape[2..])?;
    let map = col_map(&o.shape[2..], &w);
    let (n, ch) = (o.shape[0], o.shape[1]);
    let sp: usize = o.shape[2..].iter().product();
    let xs = read(x);
    let mut acc = vec![0f64; o.size()];
    let per = map.len();
    for b in 0..n {
        for cc in 0..ch {
            let src = &xs[(b * ch + cc) * per..(b * ch + cc + 1) * per];
            let dst = &mut acc[(b * ch + cc) * sp..(b * ch + cc + 1) * sp];
            for (v, m) in src.iter().zip(&map) {
                if let Some(i) = m {
                    dst[*i] += v;
                }
            }
        }
    }
    write(o, &acc);
    Ok(())
}

fn window_attrs(p: &Params) -> Vec<(&'static str, Value)> {
    ["kernel", "stride", "dilate", "pad"].iter().map(|&n| (n, Value::Tuple(p.tuple(n)))).collect()
}

fn g_im2col(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let mut attrs = window_attrs(p);
    attrs.push(("output_size", Value::Tuple(i[0].shape()[2..].iter().map(|&d| d as i64).collect())));
    Ok(vec![Some(super::call1("col2im", &[g[0].clone()], &attrs)?)])
}

fn g_col2im(p: &Params, _: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    Ok(vec![Some(super::call1("im2col", &[g[0].clone()], &window_attrs(p))?)])
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "im2col",
            "Extract sliding blocks from input array: (N, C, *spatial) -> (N, C * prod(kernel), L), L the number of block positions.",
            DATA,
            IM2COL_PARAMS,
            im2col_infer,
            im2col_compute,
        )
        .grad(g_im2col),
    );
    r.add(
        OpDef::new(
            "col2im",
            "Combining the output column matrix of im2col back to image array (overlapping values are summed).",
            DATA,
            COL2IM_PARAMS,
            col2im_infer,
            col2im_compute,
        )
        .grad(g_col2im),
    );
}
