//! The transformer ops of MXNet's contrib namespace: the interleaved multi-head
//! attention matmuls (`_contrib_interleaved_matmul_selfatt_qk`,
//! `_contrib_interleaved_matmul_selfatt_valatt`, `_contrib_interleaved_matmul_encdec_qk`,
//! `_contrib_interleaved_matmul_encdec_valatt`) and `_contrib_div_sqrt_dim`, with their
//! gradients (`_backward_interleaved_matmul_*`).
//!
//! Layouts follow MXNet 1.9.1 (src/operator/contrib/transformer.cc): sequences are
//! time-major. A self-attention projection `(L, B, H*3*D)` holds, for each head `h`,
//! its query, key and value (each `D` wide) side by side; an encoder-decoder
//! key/value projection `(L, B, H*2*D)` holds key then value per head. Attention
//! scores are `(B*H, Lq, Lk)` with batch-major heads (`b*H + h`), the queries scaled
//! by `1/sqrt(D)`. The kernels compute in f64 and store in the element type.

use super::util::{read_f64, write_f64};
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};

type Out = Result<Vec<(Shape, DType)>>;
type Grads = Result<Vec<Option<NDArray>>>;

const PARAMS: &[ParamSpec] = &[ParamSpec::new("heads", PType::Int, None, "Set number of heads")];

/// Where one head's `D` features of one kind (query, key or value) sit in a
/// time-major projection `(L, B, W)`: element `(t, b, h, d)` is at
/// `(t*B + b)*W + h*head + base + d`.
#[derive(Clone, Copy)]
struct Part {
    width: usize,
    head: usize,
    base: usize,
}

impl Part {
    fn at(&self, nb: usize, t: usize, b: usize, h: usize) -> usize {
        (t * nb + b) * self.width + h * self.head + self.base
    }
}

/// Sizes of one call: batch, heads, head size, query and key lengths.
#[derive(Clone, Copy)]
struct Dims {
    nb: usize,
    heads: usize,
    d: usize,
    lq: usize,
    lk: usize,
}

fn float_inputs(a: &InferArgs) -> Result<DType> {
    let d = a.dtypes[0];
    for (i, t) in a.dtypes.iter().enumerate() {
        if !t.is_float() {
            return Err(a.err(format!("input {i} must be a floating-point array, got {}", t.name())));
        }
        if *t != d {
            return Err(a.err(format!("input {i} has dtype {} but input 0 has {}", t.name(), d.name())));
        }
    }
    Ok(d)
}

fn heads(op: &str, p: &Params) -> Result<usize> {
    let h = p.int("heads");
    if h <= 0 {
        return Err(Error::op(op, format!("heads must be positive, got {h}")));
    }
    Ok(h as usize)
}

/// `(L, B, heads*parts*D)` → `(L, B, D)`.
fn proj(op: &str, what: &str, s: &[usize], heads: usize, parts: usize) -> Result<(usize, usize, usize)> {
    if s.len() != 3 {
        return Err(Error::op(op, format!("{what} must be 3-D (seq_length, batch, features), got {}", fmt_shape(s))));
    }
    if !s[2].is_multiple_of(heads * parts) || s[2] == 0 {
        return Err(Error::op(
            op,
            format!("the last dimension of {what} {} must be a positive multiple of heads*{parts} = {}", fmt_shape(s), heads * parts),
        ));
    }
    Ok((s[0], s[1], s[2] / (heads * parts)))
}

fn check_att(op: &str, s: &[usize], want: [usize; 3]) -> Result<()> {
    if s != want {
        return Err(Error::op(op, format!("attention must have shape {}, got {}", fmt_shape(&want), fmt_shape(s))));
    }
    Ok(())
}

/// The geometry of a forward op (by name, so backward ops share it) from its input
/// shapes (the backward's inputs after the output gradient), with the parts read.
fn geometry(op: &str, p: &Params, s: &[&[usize]]) -> Result<(Dims, Part, Part)> {
    let h = heads(op, p)?;
    match op {
        "_contrib_interleaved_matmul_selfatt_qk" => {
            let (l, nb, d) = proj(op, "queries_keys_values", s[0], h, 3)?;
            let w = h * 3 * d;
            let dims = Dims { nb, heads: h, d, lq: l, lk: l };
            Ok((dims, Part { width: w, head: 3 * d, base: 0 }, Part { width: w, head: 3 * d, base: d }))
        }
        "_contrib_interleaved_matmul_selfatt_valatt" => {
            let (l, nb, d) = proj(op, "queries_keys_values", s[0], h, 3)?;
            check_att(op, s[1], [nb * h, l, l])?;
            let dims = Dims { nb, heads: h, d, lq: l, lk: l };
            let v = Part { width: h * 3 * d, head: 3 * d, base: 2 * d };
            Ok((dims, v, v))
        }
        "_contrib_interleaved_matmul_encdec_qk" => {
            let (lq, nb, d) = proj(op, "queries", s[0], h, 1)?;
            let (lk, nb2, d2) = proj(op, "keys_values", s[1], h, 2)?;
            if nb2 != nb || d2 != d {
                return Err(Error::op(
                    op,
                    format!("keys_values {} does not match queries {} (batch and heads*2*head_dim)", fmt_shape(s[1]), fmt_shape(s[0])),
                ));
            }
            let dims = Dims { nb, heads: h, d, lq, lk };
            Ok((dims, Part { width: h * d, head: d, base: 0 }, Part { width: h * 2 * d, head: 2 * d, base: 0 }))
        }
        "_contrib_interleaved_matmul_encdec_valatt" => {
            let (lk, nb, d) = proj(op, "keys_values", s[0], h, 2)?;
            if s[1].len() != 3 {
                return Err(Error::op(op, format!("attention must be 3-D (batch*heads, qlen, klen), got {}", fmt_shape(s[1]))));
            }
            let lq = s[1][1];
            check_att(op, s[1], [nb * h, lq, lk])?;
            let dims = Dims { nb, heads: h, d, lq, lk };
            let v = Part { width: h * 2 * d, head: 2 * d, base: d };
            Ok((dims, v, v))
        }
        _ => Err(Error::op(op, "not an interleaved attention op")),
    }
}

fn is_qk(op: &str) -> bool {
    op.ends_with("_qk")
}

fn infer(a: &InferArgs) -> Out {
    let dt = float_inputs(a)?;
    let (g, _, _) = geometry(a.op.name, a.params, a.shapes)?;
    let s = if is_qk(a.op.name) { [g.nb * g.heads, g.lq, g.lk] } else { [g.lq, g.nb, g.heads * g.d] };
    Ok(vec![(Shape::from_slice(&s), dt)])
}

/// `out[b*H+h, i, j] = scale * <q(i, b, h), k(j, b, h)>`.
fn qk_forward(g: &Dims, x: &[f64], pq: Part, y: &[f64], pk: Part) -> Vec<f64> {
    let scale = 1.0 / (g.d as f64).sqrt();
    let mut out = vec![0f64; g.nb * g.heads * g.lq * g.lk];
    for b in 0..g.nb {
        for h in 0..g.heads {
            let o = &mut out[(b * g.heads + h) * g.lq * g.lk..][..g.lq * g.lk];
            for i in 0..g.lq {
                let q = &x[pq.at(g.nb, i, b, h)..][..g.d];
                for j in 0..g.lk {
                    let k = &y[pk.at(g.nb, j, b, h)..][..g.d];
                    o[i * g.lk + j] = scale * q.iter().zip(k).map(|(a, b)| a * b).sum::<f64>();
                }
            }
        }
    }
    out
}

/// Gradients of [`qk_forward`] added into `gx` (the queries' buffer) and `gy` (the
/// keys' buffer); None for `gy` when the keys live in the queries' buffer
/// (self-attention).
#[allow(clippy::too_many_arguments)]
fn qk_backward(g: &Dims, og: &[f64], x: &[f64], pq: Part, y: &[f64], pk: Part, gx: &mut [f64], gy: Option<&mut [f64]>) {
    let scale = 1.0 / (g.d as f64).sqrt();
    let len = gy.as_ref().map(|v| v.len()).unwrap_or(gx.len());
    let gk = qk_keys_into(g, og, x, pq, pk, scale, len);
    let dst: &mut [f64] = match gy {
        Some(v) => v,
        None => &mut *gx,
    };
    for (a, b) in dst.iter_mut().zip(&gk) {
        *a += b;
    }
    qk_queries_into(g, og, y, pq, pk, scale, gx);
}

/// `gq(i, b, h) += scale * sum_j og[bh, i, j] k(j, b, h)`.
fn qk_queries_into(g: &Dims, og: &[f64], y: &[f64], pq: Part, pk: Part, scale: f64, gx: &mut [f64]) {
    for b in 0..g.nb {
        for h in 0..g.heads {
            let o = &og[(b * g.heads + h) * g.lq * g.lk..][..g.lq * g.lk];
            for i in 0..g.lq {
                let qa = pq.at(g.nb, i, b, h);
                for j in 0..g.lk {
                    let w = scale * o[i * g.lk + j];
                    if w == 0.0 {
                        continue;
                    }
                    let ka = pk.at(g.nb, j, b, h);
                    for d in 0..g.d {
                        gx[qa + d] += w * y[ka + d];
                    }
                }
            }
        }
    }
}

/// `gk(j, b, h) = scale * sum_i og[bh, i, j] q(i, b, h)`, in a buffer of `len`.
fn qk_keys_into(g: &Dims, og: &[f64], x: &[f64], pq: Part, pk: Part, scale: f64, len: usize) -> Vec<f64> {
    let mut gk = vec![0f64; len];
    for b in 0..g.nb {
        for h in 0..g.heads {
            let o = &og[(b * g.heads + h) * g.lq * g.lk..][..g.lq * g.lk];
            for i in 0..g.lq {
                let qa = pq.at(g.nb, i, b, h);
                for j in 0..g.lk {
                    let w = scale * o[i * g.lk + j];
                    if w == 0.0 {
                        continue;
                    }
                    let ka = pk.at(g.nb, j, b, h);
                    for d in 0..g.d {
                        gk[ka + d] += w * x[qa + d];
                    }
                }
            }
        }
    }
    gk
}

/// `out(i, b, h*D + d) = sum_j att[b*H+h, i, j] v(j, b, h)[d]`.
fn val_forward(g: &Dims, v: &[f64], pv: Part, att: &[f64]) -> Vec<f64> {
    let w = g.heads * g.d;
    let mut out = vec![0f64; g.lq * g.nb * w];
    for b in 0..g.nb {
        for h in 0..g.heads {
            let a = &att[(b * g.heads + h) * g.lq * g.lk..][..g.lq * g.lk];
            for i in 0..g.lq {
                let o = &mut out[(i * g.nb + b) * w + h * g.d..][..g.d];
                for j in 0..g.lk {
                    let s = a[i * g.lk + j];
                    let va = &v[pv.at(g.nb, j, b, h)..][..g.d];
                    for (x, y) in o.iter_mut().zip(va) {
                        *x += s * y;
                    }
                }
            }
        }
    }
    out
}

/// Gradients of [`val_forward`]: values (in the projection's layout, `gv` of the
/// projection's size) and attention.
fn val_backward(g: &Dims, og: &[f64], v: &[f64], pv: Part, att: &[f64], gv: &mut [f64]) -> Vec<f64> {
    let w = g.heads * g.d;
    let mut gatt = vec![0f64; att.len()];
    for b in 0..g.nb {
        for h in 0..g.heads {
            let base = (b * g.heads + h) * g.lq * g.lk;
            for i in 0..g.lq {
                let o = &og[(i * g.nb + b) * w + h * g.d..][..g.d];
                for j in 0..g.lk {
                    let va = pv.at(g.nb, j, b, h);
                    let s = att[base + i * g.lk + j];
                    let mut acc = 0.0;
                    for d in 0..g.d {
                        acc += o[d] * v[va + d];
                        gv[va + d] += s * o[d];
                    }
                    gatt[base + i * g.lk + j] = acc;
                }
            }
        }
    }
    gatt
}

fn forward_compute(c: &mut OpCall) -> Result<()> {
    let op = c.op.name;
    let shapes: Vec<&[usize]> = c.inputs.iter().map(|b| &b.shape[..]).collect();
    let (g, p0, p1) = geometry(op, c.params, &shapes)?;
    let x = read_f64(&c.inputs[0]);
    let out = match op {
        "_contrib_interleaved_matmul_selfatt_qk" => qk_forward(&g, &x, p0, &x, p1),
        "_contrib_interleaved_matmul_encdec_qk" => qk_forward(&g, &x, p0, &read_f64(&c.inputs[1]), p1),
        _ => val_forward(&g, &x, p0, &read_f64(&c.inputs[1])),
    };
    write_f64(&c.outputs[0], &out);
    Ok(())
}

fn forward_name(backward: &str) -> &'static str {
    match backward {
        "_backward_interleaved_matmul_selfatt_qk" => "_contrib_interleaved_matmul_selfatt_qk",
        "_backward_interleaved_matmul_selfatt_valatt" => "_contrib_interleaved_matmul_selfatt_valatt",
        "_backward_interleaved_matmul_encdec_qk" => "_contrib_interleaved_matmul_encdec_qk",
        _ => "_contrib_interleaved_matmul_encdec_valatt",
    }
}

/// Backward: `(ograd, inputs...)` → one gradient per forward input.
fn backward_infer(a: &InferArgs) -> Out {
    let fwd = forward_name(a.op.name);
    let (g, _, _) = geometry(fwd, a.params, &a.shapes[1..])?;
    let want = if is_qk(fwd) { vec![g.nb * g.heads, g.lq, g.lk] } else { vec![g.lq, g.nb, g.heads * g.d] };
    if a.shapes[0] != &want[..] {
        return Err(a.err(format!("output gradient has shape {}, expected {}", fmt_shape(a.shapes[0]), fmt_shape(&want))));
    }
    let d = a.dtypes[1];
    Ok(a.shapes[1..].iter().map(|s| (Shape::from_slice(s), d)).collect())
}

fn backward_compute(c: &mut OpCall) -> Result<()> {
    let fwd = forward_name(c.op.name);
    let shapes: Vec<&[usize]> = c.inputs[1..].iter().map(|b| &b.shape[..]).collect();
    let (g, p0, p1) = geometry(fwd, c.params, &shapes)?;
    let og = read_f64(&c.inputs[0]);
    let x = read_f64(&c.inputs[1]);
    let mut gx = vec![0f64; x.len()];
    match fwd {
        "_contrib_interleaved_matmul_selfatt_qk" => {
            qk_backward(&g, &og, &x, p0, &x, p1, &mut gx, None);
            write_f64(&c.outputs[0], &gx);
        }
        "_contrib_interleaved_matmul_encdec_qk" => {
            let y = read_f64(&c.inputs[2]);
            let mut gy = vec![0f64; y.len()];
            qk_backward(&g, &og, &x, p0, &y, p1, &mut gx, Some(&mut gy));
            write_f64(&c.outputs[0], &gx);
            write_f64(&c.outputs[1], &gy);
        }
        _ => {
            let att = read_f64(&c.inputs[2]);
            let gatt = val_backward(&g, &og, &x, p0, &att, &mut gx);
            write_f64(&c.outputs[0], &gx);
            write_f64(&c.outputs[1], &gatt);
        }
    }
    Ok(())
}

fn grad_with(bwd: &str, p: &Params, i: &[NDArray], g: &[NDArray]) -> Grads {
    let og = g.first().ok_or_else(|| Error::op(forward_name(bwd), "gradient called without an output gradient"))?;
    let attrs: Vec<(&str, Value)> = p.to_strings().into_iter().map(|(n, v)| (n, Value::Str(v))).collect();
    let mut ins = vec![og.clone()];
    ins.extend(i.iter().cloned());
    Ok(super::call(bwd, &ins, &attrs)?.into_iter().map(Some).collect())
}

fn g_selfatt_qk(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    grad_with("_backward_interleaved_matmul_selfatt_qk", p, i, g)
}
fn g_selfatt_valatt(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    grad_with("_backward_interleaved_matmul_selfatt_valatt", p, i, g)
}
fn g_encdec_qk(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    grad_with("_backward_interleaved_matmul_encdec_qk", p, i, g)
}
fn g_encdec_valatt(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    grad_with("_backward_interleaved_matmul_encdec_valatt", p, i, g)
}

fn two(_: &Params) -> usize {
    2
}

// ---- div_sqrt_dim ------------------------------------------------------------------

fn div_sqrt_infer(a: &InferArgs) -> Out {
    let d = a.dtypes[0];
    if !d.is_float() {
        return Err(a.err(format!("data must be a floating-point array, got {}", d.name())));
    }
    if a.shapes[0].is_empty() {
        return Err(a.err("data must have at least one dimension"));
    }
    Ok(vec![(Shape::from_slice(a.shapes[0]), d)])
}

fn div_sqrt_compute(c: &mut OpCall) -> Result<()> {
    let x = read_f64(&c.inputs[0]);
    let last = *c.inputs[0].shape.last().unwrap_or(&1) as f64;
    let s = 1.0 / last.sqrt();
    let out: Vec<f64> = x.iter().map(|v| v * s).collect();
    write_f64(&c.outputs[0], &out);
    Ok(())
}

/// The gradient scales the output gradient the same way.
fn g_div_sqrt(_: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let og = g.first().ok_or_else(|| Error::op("_contrib_div_sqrt_dim", "gradient called without an output gradient"))?;
    let last = *i[0].shape().last().unwrap_or(&1) as f64;
    Ok(vec![Some(super::call1("_mul_scalar", std::slice::from_ref(og), &[("scalar", Value::Float(1.0 / last.sqrt()))])?)])
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            "_contrib_interleaved_matmul_selfatt_qk",
            "Compute the matrix multiplication between the projections of queries and keys in multihead attention use as self attention. The input must be a single tensor of interleaved projections of queries, keys and values (seq_length, batch_size, num_heads*head_dim*3); the output (batch_size*num_heads, seq_length, seq_length) holds the scaled dot products of the queries (divided by sqrt(head_dim)) and the keys.",
            Arity::Fixed(&["queries_keys_values"]),
            PARAMS,
            infer,
            forward_compute,
        )
        .grad(g_selfatt_qk),
    );
    r.add(
        OpDef::new(
            "_contrib_interleaved_matmul_selfatt_valatt",
            "Compute the matrix multiplication between the projections of values and the attention weights in multihead attention use as self attention: queries_keys_values (seq_length, batch_size, num_heads*head_dim*3) and attention (batch_size*num_heads, seq_length, seq_length) give (seq_length, batch_size, num_heads*head_dim).",
            Arity::Fixed(&["queries_keys_values", "attention"]),
            PARAMS,
            infer,
            forward_compute,
        )
        .grad(g_selfatt_valatt),
    );
    r.add(
        OpDef::new(
            "_contrib_interleaved_matmul_encdec_qk",
            "Compute the matrix multiplication between the projections of queries and keys in multihead attention use as encoder-decoder: queries (qseq_length, batch_size, num_heads*head_dim) and interleaved keys_values (kseq_length, batch_size, num_heads*head_dim*2) give (batch_size*num_heads, qseq_length, kseq_length), the queries divided by sqrt(head_dim).",
            Arity::Fixed(&["queries", "keys_values"]),
            PARAMS,
            infer,
            forward_compute,
        )
        .grad(g_encdec_qk),
    );
    r.add(
        OpDef::new(
            "_contrib_interleaved_matmul_encdec_valatt",
            "Compute the matrix multiplication between the projections of values and the attention weights in multihead attention use as encoder-decoder: interleaved keys_values (kseq_length, batch_size, num_heads*head_dim*2) and attention (batch_size*num_heads, qseq_length, kseq_length) give (qseq_length, batch_size, num_heads*head_dim).",
            Arity::Fixed(&["keys_values", "attention"]),
            PARAMS,
            infer,
            forward_compute,
        )
        .grad(g_encdec_valatt),
    );
    r.add(OpDef::new(
        "_backward_interleaved_matmul_selfatt_qk",
        "Gradient of interleaved_matmul_selfatt_qk: `(ograd, queries_keys_values)` to the gradient of queries_keys_values.",
        Arity::Fixed(&["ograd", "queries_keys_values"]),
        PARAMS,
        backward_infer,
        backward_compute,
    ));
    r.add(
        OpDef::new(
            "_backward_interleaved_matmul_selfatt_valatt",
            "Gradient of interleaved_matmul_selfatt_valatt: `(ograd, queries_keys_values, attention)` to their gradients.",
            Arity::Fixed(&["ograd", "queries_keys_values", "attention"]),
            PARAMS,
            backward_infer,
            backward_compute,
        )
        .outputs(two),
    );
    r.add(
        OpDef::new(
            "_backward_interleaved_matmul_encdec_qk",
            "Gradient of interleaved_matmul_encdec_qk: `(ograd, queries, keys_values)` to their gradients.",
            Arity::Fixed(&["ograd", "queries", "keys_values"]),
            PARAMS,
            backward_infer,
            backward_compute,
        )
        .outputs(two),
    );
    r.add(
        OpDef::new(
            "_backward_interleaved_matmul_encdec_valatt",
            "Gradient of interleaved_matmul_encdec_valatt: `(ograd, keys_values, attention)` to their gradients.",
            Arity::Fixed(&["ograd", "keys_values", "attention"]),
            PARAMS,
            backward_infer,
            backward_compute,
        )
        .outputs(two),
    );
    r.add(
        OpDef::new(
            "_contrib_div_sqrt_dim",
            "Rescale the input by the square root of the channel dimension: out = data / sqrt(data.shape[-1]).",
            Arity::Fixed(&["data"]),
            &[],
            div_sqrt_infer,
            div_sqrt_compute,
        )
        .unnamed_inputs()
        .grad(g_div_sqrt),
    );
}
