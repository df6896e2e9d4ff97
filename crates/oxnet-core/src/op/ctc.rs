//! Connectionist Temporal Classification: `CTCLoss` (aliases `ctc_loss`,
//! `_contrib_CTCLoss`, `_contrib_ctc_loss`) and its gradient `_backward_CTCLoss`.
//!
//! As in MXNet 1.9.1: `data` `(T, B, C)` holds unnormalised activations (a softmax
//! over the last axis is applied inside), `label` `(B, L)` the label sequences. With
//! `blank_label='first'` the blank is class 0 and labels are padded with 0; with
//! `'last'` the blank is class `C-1` and labels are padded with -1. Without
//! `use_label_lengths` a sequence ends at its first padding value; with
//! `use_data_lengths` only the first `data_lengths[b]` steps of sample `b` count
//! (the rest get no gradient). The output is the negative log-likelihood per sample
//! `(B,)`; the gradient with respect to the activations is
//! `softmax - occupancy`, scaled by the output gradient. Computed in f64 with the
//! forward-backward recursions in log space.

use super::util::{read_f64, write_f64};
use super::{Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry, Value};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::{fmt_shape, Shape};

type Out = Result<Vec<(Shape, DType)>>;
type Grads = Result<Vec<Option<NDArray>>>;

const NAME: &str = "CTCLoss";

const PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "use_data_lengths",
        PType::Bool,
        Some("False"),
        "Whether the data lenghts are decided by `data_lengths`. If false, the lengths are equal to the max sequence length.",
    ),
    ParamSpec::new(
        "use_label_lengths",
        PType::Bool,
        Some("False"),
        "Whether the label lenghts are decided by `label_lengths`, or derived from `padding_mask`. If false, the lengths are derived from the first occurrence of the value of `padding_mask`. The value of `padding_mask` is ``0`` when first CTC label is reserved for blank, and ``-1`` when last label is reserved for blank. See `blank_label`.",
    ),
    ParamSpec::choice(
        "blank_label",
        &["first", "last"],
        Some("first"),
        "Set the label that is reserved for blank label.If \"first\", 0-th label is reserved, and label values for tokens in the vocabulary are between ``1`` and ``alphabet_size-1``, and the padding mask is ``-1``. If \"last\", last label value ``alphabet_size-1`` is reserved for blank label instead, and label values for tokens in the vocabulary are between ``0`` and ``alphabet_size-2``, and the padding mask is ``0``.",
    ),
];

const ALL: &[&str] = &["data", "label", "data_lengths", "label_lengths"];
const BWD_ALL: &[&str] = &["ograd", "data", "label", "data_lengths", "label_lengths"];

fn select(p: &Params) -> &'static [&'static str] {
    match (p.bool("use_data_lengths"), p.bool("use_label_lengths")) {
        (false, false) => &ALL[..2],
        (true, false) => &ALL[..3],
        (false, true) => &["data", "label", "label_lengths"],
        (true, true) => ALL,
    }
}

fn bwd_select(p: &Params) -> &'static [&'static str] {
    match (p.bool("use_data_lengths"), p.bool("use_label_lengths")) {
        (false, false) => &BWD_ALL[..3],
        (true, false) => &BWD_ALL[..4],
        (false, true) => &["ograd", "data", "label", "label_lengths"],
        (true, true) => BWD_ALL,
    }
}

/// Checks the forward inputs' shapes (`s`: data, label, [lengths...]); returns
/// `(T, B, C, L)`.
fn check(p: &Params, s: &[&[usize]]) -> Result<(usize, usize, usize, usize)> {
    let d = s[0];
    if d.len() != 3 {
        return Err(Error::op(NAME, format!("data must be 3-D (sequence_length, batch_size, alphabet_size), got {}", fmt_shape(d))));
    }
    let (t, b, c) = (d[0], d[1], d[2]);
    if c < 2 {
        return Err(Error::op(NAME, format!("alphabet_size (data's last dimension) must be at least 2, got {c}")));
    }
    let l = s[1];
    if l.len() != 2 || l[0] != b {
        return Err(Error::op(NAME, format!("label must be 2-D (batch_size, label_sequence_length) = ({b}, L), got {}", fmt_shape(l))));
    }
    let names = select(p);
    for (i, sh) in s.iter().enumerate().skip(2) {
        if *sh != [b] {
            return Err(Error::op(NAME, format!("{} must have shape ({b},), got {}", names[i], fmt_shape(sh))));
        }
    }
    Ok((t, b, c, l[1]))
}

fn infer(a: &InferArgs) -> Out {
    let d = a.dtypes[0];
    if !d.is_float() {
        return Err(a.err(format!("data must be a floating-point array, got {}", d.name())));
    }
    let (_, b, _, _) = check(a.params, a.shapes)?;
    Ok(vec![(Shape::from_slice(&[b]), d)])
}

/// Lengths arrays take the batch size from data.
fn fill(_: &Params, s: &mut [Option<Shape>]) -> Result<()> {
    let b = match &s[0] {
        Some(d) if d.len() == 3 => d[1],
        _ => return Ok(()),
    };
    for x in s.iter_mut().skip(2) {
        if x.is_none() {
            *x = Some(Shape::from_slice(&[b]));
        }
    }
    Ok(())
}

fn log_add(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let m = a.max(b);
    m + ((a - m).exp() + (b - m).exp()).ln()
}

/// Everything one call reads: activations, labels and the per-sample lengths.
struct Batch {
    t: usize,
    b: usize,
    c: usize,
    data: Vec<f64>,
    labels: Vec<Vec<usize>>,
    lens: Vec<usize>,
    blank: usize,
}

fn read_batch(p: &Params, ins: &[super::Blob]) -> Result<Batch> {
    let shapes: Vec<&[usize]> = ins.iter().map(|x| &x.shape[..]).collect();
    let (t, b, c, l) = check(p, &shapes)?;
    let first = p.str("blank_label") == "first";
    let blank = if first { 0 } else { c - 1 };
    let pad = if first { 0.0 } else { -1.0 };
    let data = read_f64(&ins[0]);
    let label = read_f64(&ins[1]);
    let mut next = 2;
    let data_lens = if p.bool("use_data_lengths") {
        next += 1;
        Some(read_f64(&ins[next - 1]))
    } else {
        None
    };
    let label_lens = if p.bool("use_label_lengths") { Some(read_f64(&ins[next])) } else { None };
    let mut lens = Vec::with_capacity(b);
    let mut labels = Vec::with_capacity(b);
    for s in 0..b {
        let row = &label[s * l..(s + 1) * l];
        let n = match &label_lens {
            Some(v) => {
                let n = v[s];
                if !(0.0..=l as f64).contains(&n) {
                    return Err(Error::op(NAME, format!("label_lengths[{s}] = {n} is outside [0, {l}]")));
                }
                n as usize
            }
            None => row.iter().position(|&v| v == pad).unwrap_or(l),
        };
        let mut seq = Vec::with_capacity(n);
        for &v in &row[..n] {
            // As MXNet, a label equal to the blank is not rejected (only indices
            // outside the alphabet are).
            if v < 0.0 || v >= c as f64 || v.fract() != 0.0 {
                return Err(Error::op(NAME, format!("label value {v} of sample {s} is not a class index in [0, {c})")));
            }
            seq.push(v as usize);
        }
        labels.push(seq);
        let len = match &data_lens {
            Some(v) => {
                let n = v[s];
                if !(0.0..=t as f64).contains(&n) {
                    return Err(Error::op(NAME, format!("data_lengths[{s}] = {n} is outside [0, {t}]")));
                }
                n as usize
            }
            None => t,
        };
        lens.push(len);
    }
    Ok(Batch { t, b, c, data, labels, lens, blank })
}

/// Negative log-likelihood of sample `s` and, when `grad` is given, the gradient
/// of it with respect to the activations `(T, B, C)` of this sample, scaled by `scale`.
fn sample(x: &Batch, s: usize, grad: Option<(&mut [f64], f64)>) -> f64 {
    let (c, tn) = (x.c, x.lens[s]);
    let lab = &x.labels[s];
    // Log-softmax of the counted steps.
    let mut lp = vec![0f64; tn * c];
    for t in 0..tn {
        let row = &x.data[(t * x.b + s) * c..][..c];
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z = m + row.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
        for k in 0..c {
            lp[t * c + k] = row[k] - z;
        }
    }
    let ns = 2 * lab.len() + 1;
    let ext: Vec<usize> = (0..ns).map(|i| if i % 2 == 0 { x.blank } else { lab[i / 2] }).collect();
    // s-2 -> s allowed: s is a label different from the one two back.
    let skip = |i: usize| i >= 2 && ext[i] != x.blank && ext[i] != ext[i - 2];
    let ninf = f64::NEG_INFINITY;
    if tn == 0 {
        // No steps: only the empty label has probability one (no gradient).
        return if lab.is_empty() { 0.0 } else { f64::INFINITY };
    }
    let mut alpha = vec![ninf; tn * ns];
    alpha[0] = lp[ext[0]];
    if ns > 1 {
        alpha[1] = lp[ext[1]];
    }
    for t in 1..tn {
        for i in 0..ns {
            let mut a = alpha[(t - 1) * ns + i];
            if i >= 1 {
                a = log_add(a, alpha[(t - 1) * ns + i - 1]);
            }
            if skip(i) {
                a = log_add(a, alpha[(t - 1) * ns + i - 2]);
            }
            alpha[t * ns + i] = if a == ninf { ninf } else { a + lp[t * c + ext[i]] };
        }
    }
    let last = (tn - 1) * ns;
    let ll = if ns > 1 { log_add(alpha[last + ns - 1], alpha[last + ns - 2]) } else { alpha[last] };
    let Some((g, scale)) = grad else {
        return -ll;
    };
    // beta[t][i]: log-probability of finishing from state i at step t, the
    // emission at t included.
    let mut beta = vec![ninf; tn * ns];
    beta[last + ns - 1] = lp[(tn - 1) * c + ext[ns - 1]];
    if ns > 1 {
        beta[last + ns - 2] = lp[(tn - 1) * c + ext[ns - 2]];
    }
    for t in (0..tn - 1).rev() {
        for i in 0..ns {
            let mut b = beta[(t + 1) * ns + i];
            if i + 1 < ns {
                b = log_add(b, beta[(t + 1) * ns + i + 1]);
            }
            if i + 2 < ns && skip(i + 2) {
                b = log_add(b, beta[(t + 1) * ns + i + 2]);
            }
            beta[t * ns + i] = if b == ninf { ninf } else { b + lp[t * c + ext[i]] };
        }
    }
    for t in 0..tn {
        let mut occ = vec![ninf; c];
        for i in 0..ns {
            let v = alpha[t * ns + i] + beta[t * ns + i];
            occ[ext[i]] = log_add(occ[ext[i]], v);
        }
        let gr = &mut g[(t * x.b + s) * c..][..c];
        for k in 0..c {
            let y = lp[t * c + k].exp();
            // occupancy = sum alpha*beta / (y * p)
            let o = if ll == ninf || occ[k] == ninf { 0.0 } else { (occ[k] - lp[t * c + k] - ll).exp() };
            gr[k] = scale * (y - o);
        }
    }
    -ll
}

fn forward_compute(c: &mut OpCall) -> Result<()> {
    let x = read_batch(c.params, c.inputs)?;
    let out: Vec<f64> = (0..x.b).map(|s| sample(&x, s, None)).collect();
    write_f64(&c.outputs[0], &out);
    Ok(())
}

fn backward_infer(a: &InferArgs) -> Out {
    let (_, b, _, _) = check(a.params, &a.shapes[1..])?;
    if a.shapes[0] != [b] {
        return Err(a.err(format!("output gradient has shape {}, expected ({b},)", fmt_shape(a.shapes[0]))));
    }
    Ok(vec![(Shape::from_slice(a.shapes[1]), a.dtypes[1])])
}

fn backward_compute(c: &mut OpCall) -> Result<()> {
    let og = read_f64(&c.inputs[0]);
    let x = read_batch(c.params, &c.inputs[1..])?;
    let mut g = vec![0f64; x.t * x.b * x.c];
    for (s, &scale) in og.iter().enumerate().take(x.b) {
        sample(&x, s, Some((&mut g, scale)));
    }
    write_f64(&c.outputs[0], &g);
    Ok(())
}

/// The activations get `_backward_CTCLoss`; labels and lengths get none.
fn grad(p: &Params, i: &[NDArray], _: &[NDArray], g: &[NDArray]) -> Grads {
    let og = g.first().ok_or_else(|| Error::op(NAME, "gradient called without an output gradient"))?;
    let attrs: Vec<(&str, Value)> = p.to_strings().into_iter().map(|(n, v)| (n, Value::Str(v))).collect();
    let mut ins = vec![og.clone()];
    ins.extend(i.iter().cloned());
    let gd = super::call1("_backward_CTCLoss", &ins, &attrs)?;
    let mut v = vec![Some(gd)];
    v.resize(i.len(), None);
    Ok(v)
}

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(
            NAME,
            "Connectionist Temporal Classification Loss. The shapes of the inputs and outputs: data (sequence_length, batch_size, alphabet_size), label (batch_size, label_sequence_length), out (batch_size). The data holds unnormalised activations (a softmax is applied over the alphabet inside); the output is the negative log-likelihood of each label sequence.",
            Arity::Dynamic { all: ALL, select },
            PARAMS,
            infer,
            forward_compute,
        )
        .aliases(&["ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"])
        .fill(fill)
        .grad(grad),
    );
    r.add(OpDef::new(
        "_backward_CTCLoss",
        "Gradient of CTCLoss: `(ograd, data, label, [data_lengths], [label_lengths])` to the gradient of data.",
        Arity::Dynamic { all: BWD_ALL, select: bwd_select },
        PARAMS,
        backward_infer,
        backward_compute,
    ));
}
