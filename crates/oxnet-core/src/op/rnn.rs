//! The fused recurrent op `RNN` (MXNet 1.9.1's): multi-layer, optionally
//! bidirectional vanilla RNN (`rnn_relu`, `rnn_tanh`), LSTM (with an optional
//! projection and cell-state clipping) and GRU (cuDNN's formula: the reset gate
//! multiplies the h2h output, its bias included), over `data` of layout TNC, and
//! `_backward_RNN`, its gradient.
//!
//! `parameters` is one flat vector in MXNet's layout: the weights of every layer and
//! direction first (per layer, per direction: i2h `(G*H, in)`, h2h `(G*H, P)`, and
//! h2r `(P, H)` with a projection), then the biases (per layer, per direction: i2h
//! `(G*H,)`, h2h `(G*H,)`). Gates are ordered `i, f, g, o` (LSTM) and `r, z, n` (GRU).
//!
//! The CPU kernel projects the input of all time steps with one GEMM per layer and
//! direction, then runs one `(N, P) x (P, G*H)` GEMM and the gate arithmetic per
//! step; the h2h weight is packed once per layer and direction and reused by the T
//! steps' products (`kernels::cpu::packed_gemm`), forward and backward, and the
//! float32 LSTM cell and its gradient run as vectorised passes
//! (`kernels::cpu::rnn_cell`). The items of a batch are independent through the
//! recurrence: a batch of at least two kernel tiles per thread is split into parts
//! of rows, each running all the steps on its own thread with no synchronisation
//! between steps (a smaller batch splits each step's product by columns instead).
//! The backward's weight gradients are one GEMM over all steps per weight, its
//! input gradient one GEMM; `_backward_RNN_no_data` (chosen by the gradient when
//! the data's is not wanted) skips the first layer's. The forward writes what the
//! backward needs (gate activations, the states before each step (stored by time
//! step), the cells, the layers' inputs and dropout masks) into a hidden last
//! output, the reserve; `_backward_RNN` reads it back, so the backward does not
//! run the forward again. With `use_sequence_length`, the steps past each item's
//! length leave its states unchanged and its outputs 0, and the reverse direction
//! starts at the item's last step (cuDNN's semantics; MXNet 1.9.1's CPU kernel
//! refuses the option). Only float32 and float64 are computed (as MXNet's CPU
//! kernel); `p` (dropout between layers) acts in training only.

use super::{invoke, lookup, Arity, InferArgs, OpCall, OpDef, PType, ParamSpec, Params, Registry};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::cpu::gemm::{gemm, gemm_threads as gemm_threads_on};
use crate::kernels::cpu::packed_gemm::{gemm_packed_threads, PackElem, PackedB};
use crate::kernels::cpu::{rnn_cell, SendPtr};
use crate::ndarray::NDArray;
use crate::random::uniform01;
use crate::shape::{fmt_shape, Shape};
use crate::with_dtype;

const NAME: &str = "RNN";

const PARAMS: &[ParamSpec] = &[
    ParamSpec::new("state_size", PType::Int, None, "size of the state for each layer"),
    ParamSpec::new("num_layers", PType::Int, None, "number of stacked layers"),
    ParamSpec::new("bidirectional", PType::Bool, Some("False"), "whether to use bidirectional recurrent layers"),
    ParamSpec::choice("mode", &["gru", "lstm", "rnn_relu", "rnn_tanh"], None, "the type of RNN to compute"),
    ParamSpec::new(
        "p",
        PType::Float,
        Some("0"),
        "drop rate of the dropout on the outputs of each RNN layer, except the last layer.",
    ),
    ParamSpec::new("state_outputs", PType::Bool, Some("False"), "Whether to have the states as symbol outputs."),
    ParamSpec::new("projection_size", PType::OptInt, Some("None"), "size of project size"),
    ParamSpec::new(
        "lstm_state_clip_min",
        PType::OptFloat,
        Some("None"),
        "Minimum clip value of LSTM states. This option must be used together with lstm_state_clip_max.",
    ),
    ParamSpec::new(
        "lstm_state_clip_max",
        PType::OptFloat,
        Some("None"),
        "Maximum clip value of LSTM states. This option must be used together with lstm_state_clip_min.",
    ),
    ParamSpec::new(
        "lstm_state_clip_nan",
        PType::Bool,
        Some("False"),
        "Whether to stop NaN from propagating in state by clipping it to min/max. If clipping range is not specified, this option is ignored.",
    ),
    ParamSpec::new(
        "use_sequence_length",
        PType::Bool,
        Some("False"),
        "If set to true, this layer takes in an extra input parameter `sequence_length` to specify variable length sequence",
    ),
];

type Grads = Result<Vec<Option<NDArray>>>;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Relu,
    Tanh,
    Lstm,
    Gru,
}

fn mode_of(p: &Params) -> Mode {
    match p.str("mode") {
        "rnn_relu" => Mode::Relu,
        "rnn_tanh" => Mode::Tanh,
        "lstm" => Mode::Lstm,
        _ => Mode::Gru,
    }
}

fn select(p: &Params) -> &'static [&'static str] {
    match (mode_of(p) == Mode::Lstm, p.bool("use_sequence_length")) {
        (true, true) => &["data", "parameters", "state", "state_cell", "sequence_length"],
        (true, false) => &["data", "parameters", "state", "state_cell"],
        (false, true) => &["data", "parameters", "state", "sequence_length"],
        (false, false) => &["data", "parameters", "state"],
    }
}
const INPUTS: Arity = Arity::Dynamic { all: &["data", "parameters", "state", "state_cell", "sequence_length"], select };

fn bwd_select(p: &Params) -> &'static [&'static str] {
    let lstm = mode_of(p) == Mode::Lstm;
    match (lstm, p.bool("use_sequence_length"), p.bool("state_outputs")) {
        (true, true, true) => {
            &["data", "parameters", "state", "state_cell", "sequence_length", "reserve", "out_grad", "state_grad", "state_cell_grad"]
        }
        (true, true, false) => &["data", "parameters", "state", "state_cell", "sequence_length", "reserve", "out_grad"],
        (true, false, true) => &["data", "parameters", "state", "state_cell", "reserve", "out_grad", "state_grad", "state_cell_grad"],
        (true, false, false) => &["data", "parameters", "state", "state_cell", "reserve", "out_grad"],
        (false, true, true) => &["data", "parameters", "state", "sequence_length", "reserve", "out_grad", "state_grad"],
        (false, true, false) => &["data", "parameters", "state", "sequence_length", "reserve", "out_grad"],
        (false, false, true) => &["data", "parameters", "state", "reserve", "out_grad", "state_grad"],
        (false, false, false) => &["data", "parameters", "state", "reserve", "out_grad"],
    }
}
const BWD_INPUTS: Arity = Arity::Dynamic {
    all: &["data", "parameters", "state", "state_cell", "sequence_length", "reserve", "out_grad", "state_grad", "state_cell_grad"],
    select: bwd_select,
};

/// Number of visible outputs: out, and hy (and cy for LSTM) with `state_outputs`.
fn visible(p: &Params) -> usize {
    if p.bool("state_outputs") {
        if mode_of(p) == Mode::Lstm {
            3
        } else {
            2
        }
    } else {
        1
    }
}

fn output_names(p: &Params) -> Vec<String> {
    ["output", "state_output", "statecell_output"][..visible(p)].iter().map(|s| s.to_string()).collect()
}

/// The geometry of one call.
#[derive(Clone, Debug)]
struct Cfg {
    mode: Mode,
    layers: usize,
    dirs: usize,
    /// Hidden size.
    h: usize,
    /// Size of the recurrent state h (the projection size, or `h`).
    p: usize,
    proj: bool,
    /// Gates per step.
    g: usize,
    t: usize,
    n: usize,
    c: usize,
    clip: Option<(f64, f64)>,
    clip_nan: bool,
    drop: f64,
}

/// Offsets (elements) of one layer and direction's weights and biases in `parameters`.
#[derive(Clone, Copy, Debug, Default)]
struct WOff {
    wx: usize,
    wh: usize,
    wr: usize,
    bx: usize,
    bh: usize,
}

/// Offsets (elements) of one layer and direction's saved values in the reserve.
#[derive(Clone, Copy, Debug, Default)]
struct ROff {
    gates: usize,
    hprev: usize,
    cprev: usize,
    cnew: usize,
    hn: usize,
}

impl Cfg {
    fn new(p: &Params, data: &[usize]) -> Result<Cfg> {
        let err = |m: String| Error::op(NAME, m);
        if data.len() != 3 {
            return Err(err(format!(
                "Input data should be rank-3 tensor of dim [sequence length, batch size, input size], got shape {}",
                fmt_shape(data)
            )));
        }
        let (h, l) = (p.int("state_size"), p.int("num_layers"));
        if h <= 0 || l <= 0 {
            return Err(err(format!("state_size ({h}) and num_layers ({l}) must be positive")));
        }
        let mode = mode_of(p);
        let proj = p.opt_int("projection_size");
        if let Some(pr) = proj {
            if mode != Mode::Lstm {
                return Err(err(format!("projection_size is only supported with mode='lstm', got mode='{}'", p.str("mode"))));
            }
            if pr <= 0 {
                return Err(err(format!("projection_size must be positive, got {pr}")));
            }
        }
        let drop = p.float("p");
        if !(0.0..1.0).contains(&drop) {
            return Err(err(format!("value {drop} for Parameter p exceed bound [0,1)")));
        }
        let (lo, hi) = (p.opt_float("lstm_state_clip_min"), p.opt_float("lstm_state_clip_max"));
        let clip = match (lo, hi) {
            (None, None) => None,
            _ if mode != Mode::Lstm => return Err(err("lstm_state_clip_min/max are only supported with mode='lstm'".into())),
            (lo, hi) => {
                let (lo, hi) = (lo.unwrap_or(f64::NEG_INFINITY), hi.unwrap_or(f64::INFINITY));
                if lo > hi {
                    return Err(err(format!("lstm_state_clip_min ({lo}) must not exceed lstm_state_clip_max ({hi})")));
                }
                Some((lo, hi))
            }
        };
        let h = h as usize;
        Ok(Cfg {
            mode,
            layers: l as usize,
            dirs: if p.bool("bidirectional") { 2 } else { 1 },
            h,
            p: proj.map(|v| v as usize).unwrap_or(h),
            proj: proj.is_some(),
            g: match mode {
                Mode::Lstm => 4,
                Mode::Gru => 3,
                _ => 1,
            },
            t: data[0],
            n: data[1],
            c: data[2],
            clip,
            clip_nan: p.bool("lstm_state_clip_nan"),
            drop,
        })
    }
    fn gh(&self) -> usize {
        self.g * self.h
    }
    fn in_size(&self, l: usize) -> usize {
        if l == 0 {
            self.c
        } else {
            self.dirs * self.p
        }
    }
    fn nsd(&self) -> usize {
        self.layers * self.dirs
    }
    /// Per layer and direction, where its weights lie; and the total size.
    fn weights(&self) -> (Vec<WOff>, usize) {
        let gh = self.gh();
        let mut o = 0;
        let mut v = Vec::with_capacity(self.nsd());
        for l in 0..self.layers {
            for _ in 0..self.dirs {
                let mut w = WOff { wx: o, ..Default::default() };
                o += gh * self.in_size(l);
                w.wh = o;
                o += gh * self.p;
                w.wr = o;
                if self.proj {
                    o += self.p * self.h;
                }
                v.push(w);
            }
        }
        for w in v.iter_mut() {
            w.bx = o;
            o += gh;
            w.bh = o;
            o += gh;
        }
        (v, o)
    }
    fn has_mask(&self) -> bool {
        self.drop > 0.0 && self.layers > 1
    }
    /// The reserve's layout: per layer > 0 the layer's input (and its dropout mask),
    /// per layer and direction the saved step values; and the total size.
    fn reserve(&self) -> (Vec<usize>, Vec<usize>, Vec<ROff>, usize) {
        let tn = self.t * self.n;
        let io = tn * self.dirs * self.p;
        let mut o = 0;
        let (mut xin, mut mask) = (vec![0; self.layers], vec![0; self.layers]);
        for l in 1..self.layers {
            xin[l] = o;
            o += io;
            if self.has_mask() {
                mask[l] = o;
                o += io;
            }
        }
        let mut r = Vec::with_capacity(self.nsd());
        for _ in 0..self.nsd() {
            let mut x = ROff { gates: o, ..Default::default() };
            o += tn * self.gh();
            x.hprev = o;
            o += tn * self.p;
            if self.mode == Mode::Lstm {
                x.cprev = o;
                o += tn * self.h;
                x.cnew = o;
                o += tn * self.h;
            }
            if self.mode == Mode::Gru {
                x.hn = o;
                o += tn * self.h;
            }
            r.push(x);
        }
        (xin, mask, r, o)
    }
}

// ---- inference ---------------------------------------------------------------------

fn expect(a: &InferArgs, i: usize, name: &str, want: &[usize]) -> Result<()> {
    if a.shapes[i] != want {
        return Err(a.err(format!(
            "input '{name}' has shape {} but {} is expected (mode={}, num_layers={}, state_size={}, bidirectional={}, data {})",
            fmt_shape(a.shapes[i]),
            fmt_shape(want),
            a.params.str("mode"),
            a.params.int("num_layers"),
            a.params.int("state_size"),
            a.params.bool("bidirectional"),
            fmt_shape(a.shapes[0])
        )));
    }
    Ok(())
}

/// Checks the inputs; returns the geometry and the data dtype.
fn check(a: &InferArgs) -> Result<(Cfg, DType)> {
    let cfg = Cfg::new(a.params, a.shapes[0])?;
    let d = a.dtypes[0];
    if d != DType::F32 && d != DType::F64 {
        return Err(a.err(format!("data has dtype {}; RNN computes float32 and float64 on the CPU", d.name())));
    }
    let names = select(a.params);
    let lstm = cfg.mode == Mode::Lstm;
    let (_, total) = cfg.weights();
    expect(a, 1, "parameters", &[total])?;
    expect(a, 2, "state", &[cfg.nsd(), cfg.n, cfg.p])?;
    if lstm {
        expect(a, 3, "state_cell", &[cfg.nsd(), cfg.n, cfg.h])?;
    }
    if a.params.bool("use_sequence_length") {
        expect(a, names.len() - 1, "sequence_length", &[cfg.n])?;
    }
    let n_float = if lstm { 4 } else { 3 };
    for (name, t) in names.iter().zip(a.dtypes).take(n_float).skip(1) {
        if *t != d {
            return Err(a.err(format!("input '{name}' has dtype {} but data has {}", t.name(), d.name())));
        }
    }
    Ok((cfg, d))
}

fn rnn_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let (cfg, d) = check(a)?;
    let mut v = vec![(Shape::from_slice(&[cfg.t, cfg.n, cfg.dirs * cfg.p]), d)];
    if a.params.bool("state_outputs") {
        v.push((Shape::from_slice(&[cfg.nsd(), cfg.n, cfg.p]), d));
        if cfg.mode == Mode::Lstm {
            v.push((Shape::from_slice(&[cfg.nsd(), cfg.n, cfg.h]), d));
        }
    }
    v.push((Shape::from_slice(&[cfg.reserve().3]), d));
    Ok(v)
}

fn fill_one(slot: Option<&mut Option<Shape>>, name: &str, want: &[usize]) -> Result<()> {
    if let Some(slot) = slot {
        match slot {
            Some(s) if &s[..] != want => {
                return Err(Error::op(NAME, format!("input '{name}' has shape {} but {} was inferred", fmt_shape(s), fmt_shape(want))))
            }
            Some(_) => {}
            None => *slot = Some(Shape::from_slice(want)),
        }
    }
    Ok(())
}

/// Symbols: the parameters' size, the states' and the lengths' shapes from data's.
fn rnn_fill(p: &Params, shapes: &mut [Option<Shape>]) -> Result<()> {
    let Some(Some(d)) = shapes.first().cloned() else { return Ok(()) };
    if d.len() != 3 || d.contains(&0) {
        return Ok(());
    }
    let cfg = Cfg::new(p, &d)?;
    let names = select(p);
    fill_one(shapes.get_mut(1), "parameters", &[cfg.weights().1])?;
    fill_one(shapes.get_mut(2), "state", &[cfg.nsd(), cfg.n, cfg.p])?;
    if cfg.mode == Mode::Lstm {
        fill_one(shapes.get_mut(3), "state_cell", &[cfg.nsd(), cfg.n, cfg.h])?;
    }
    if p.bool("use_sequence_length") {
        fill_one(shapes.get_mut(names.len() - 1), "sequence_length", &[cfg.n])?;
    }
    Ok(())
}

fn bwd_infer(a: &InferArgs) -> Result<Vec<(Shape, DType)>> {
    let nf = select(a.params).len();
    let sub = InferArgs { op: a.op, params: a.params, shapes: &a.shapes[..nf], dtypes: &a.dtypes[..nf] };
    let (cfg, d) = check(&sub)?;
    let (_, _, _, rsize) = cfg.reserve();
    if a.shapes[nf] != [rsize] {
        return Err(a.err(format!("reserve has shape {} but ({rsize},) is expected", fmt_shape(a.shapes[nf]))));
    }
    let want_out = [cfg.t, cfg.n, cfg.dirs * cfg.p];
    if a.shapes[nf + 1] != want_out {
        return Err(a.err(format!("out_grad has shape {} but {} is expected", fmt_shape(a.shapes[nf + 1]), fmt_shape(&want_out))));
    }
    let n_float = if cfg.mode == Mode::Lstm { 4 } else { 3 };
    let first = if a.op.name == NO_DATA { 1 } else { 0 };
    Ok((first..n_float).map(|i| (Shape::from_slice(a.shapes[i]), d)).collect())
}

/// `_backward_RNN` without the data gradient (the gradient function's choice when
/// nobody reads it, e.g. for a layer fed by the batch): its outputs are the
/// gradients of parameters, state (and state_cell), and the last layer's input
/// product `dA·Wx` is skipped.
const NO_DATA: &str = "_backward_RNN_no_data";

// ---- the kernel ----------------------------------------------------------------------

trait Real:
    PackElem
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::AddAssign
    + std::ops::Neg<Output = Self>
{
    fn exp_(self) -> Self;
    fn tanh_(self) -> Self;
    fn is_nan_(self) -> bool;
    /// One LSTM row of `h` units without state clipping: gates from the
    /// pre-activations `xr + hr`, `c` updated (and copied to `cn`), `out = o·tanh(c)`.
    #[allow(clippy::too_many_arguments)]
    fn lstm_row(h: usize, xr: &[Self], hr: &[Self], c: &mut [Self], gates: &mut [Self], cn: &mut [Self], out: &mut [Self]) {
        for j in 0..h {
            let ig = sigmoid(xr[j] + hr[j]);
            let fg = sigmoid(xr[h + j] + hr[h + j]);
            let gg = (xr[2 * h + j] + hr[2 * h + j]).tanh_();
            let og = sigmoid(xr[3 * h + j] + hr[3 * h + j]);
            let cv = fg * c[j] + ig * gg;
            gates[j] = ig;
            gates[h + j] = fg;
            gates[2 * h + j] = gg;
            gates[3 * h + j] = og;
            c[j] = cv;
            cn[j] = cv;
            out[j] = og * cv.tanh_();
        }
    }
    /// The gradient of one LSTM row without state clipping (see
    /// [`rnn_cell::lstm_bwd_row`]): `ax` the pre-activations' gradients, `dc` the
    /// cell gradient carried to the previous step.
    #[allow(clippy::too_many_arguments)]
    fn lstm_bwd_row(h: usize, gr: &[Self], cn: &[Self], cp: &[Self], dh: &[Self], dc: &mut [Self], ax: &mut [Self]) {
        let one = Self::from_f64(1.0);
        for j in 0..h {
            let (ig, fg, gg, og) = (gr[j], gr[h + j], gr[2 * h + j], gr[3 * h + j]);
            let th = cn[j].tanh_();
            let d = dh[j];
            let dct = dc[j] + d * og * (one - th * th);
            dc[j] = dct * fg;
            ax[j] = dct * gg * ig * (one - ig);
            ax[h + j] = dct * cp[j] * fg * (one - fg);
            ax[2 * h + j] = dct * ig * (one - gg * gg);
            ax[3 * h + j] = d * th * og * (one - og);
        }
    }
}
impl Real for f32 {
    fn exp_(self) -> Self {
        self.exp()
    }
    fn tanh_(self) -> Self {
        self.tanh()
    }
    fn is_nan_(self) -> bool {
        self.is_nan()
    }
    fn lstm_row(h: usize, xr: &[f32], hr: &[f32], c: &mut [f32], gates: &mut [f32], cn: &mut [f32], out: &mut [f32]) {
        rnn_cell::lstm_row(h, xr, hr, c, gates, cn, out)
    }
    fn lstm_bwd_row(h: usize, gr: &[f32], cn: &[f32], cp: &[f32], dh: &[f32], dc: &mut [f32], ax: &mut [f32]) {
        rnn_cell::lstm_bwd_row(h, gr, cn, cp, dh, dc, ax)
    }
}
impl Real for f64 {
    fn exp_(self) -> Self {
        self.exp()
    }
    fn tanh_(self) -> Self {
        self.tanh()
    }
    fn is_nan_(self) -> bool {
        self.is_nan()
    }
}

#[inline(always)]
fn sigmoid<T: Real>(x: T) -> T {
    let one = T::from_f64(1.0);
    one / (one + (-x).exp_())
}

/// `len` elements from `p + off`.
///
/// # Safety
/// The range must lie in one buffer that nothing else touches while the slice lives.
#[allow(clippy::mut_from_ref)]
unsafe fn at<'a, T>(p: *mut T, off: usize, len: usize) -> &'a mut [T] {
    std::slice::from_raw_parts_mut(p.add(off), len)
}

/// The time step item `b` reads at iteration `s` of direction `dir` (None: past its
/// length).
#[inline(always)]
fn step_of(s: usize, len: usize, dir: usize) -> Option<usize> {
    if s >= len {
        None
    } else if dir == 0 {
        Some(s)
    } else {
        Some(len - 1 - s)
    }
}

/// Raw pointers of one call's buffers.
struct Bufs<T> {
    x: *mut T,
    w: *mut T,
    h0: *mut T,
    c0: *mut T,
    res: *mut T,
}

/// The batch rows split for the recurrence: each part runs its rows through all
/// the steps on its own thread (the rows of a recurrent layer are independent), so
/// the steps need no synchronisation between threads; one part when the batch is
/// too small to split (then each step's product is split by columns instead). Parts
/// are multiples of the packed kernel's tile of `mr` rows.
fn row_parts(n: usize, mr: usize) -> Vec<(usize, usize)> {
    let threads = crate::engine::threads();
    let k = threads.min(n / (2 * mr).max(1)).max(1);
    if k <= 1 {
        return vec![(0, n)];
    }
    let per = n.div_ceil(k).div_ceil(mr) * mr;
    (0..n).step_by(per).map(|r0| (r0, (r0 + per).min(n))).collect()
}

/// Runs `f(r0, r1)` for every part, in parallel when there are several.
fn run_parts<F: Fn(usize, usize) + Sync>(parts: &[(usize, usize)], f: F) {
    if let [(r0, r1)] = parts {
        f(*r0, *r1);
        return;
    }
    crate::engine::install(|| {
        rayon::scope(|sc| {
            for &(r0, r1) in parts {
                let f = &f;
                sc.spawn(move |_| f(r0, r1));
            }
        })
    });
}

// (the loops over a part's rows index the lengths and compute buffer offsets by `bi`)
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
unsafe fn forward<T: Real>(cfg: &Cfg, b: &Bufs<T>, lens: &[usize], out: *mut T, hy: *mut T, cy: *mut T, key: Option<u64>) {
    let (t, n, h, p, gh, dirs) = (cfg.t, cfg.n, cfg.h, cfg.p, cfg.gh(), cfg.dirs);
    let tn = t * n;
    let (woff, _) = cfg.weights();
    let (xin_off, mask_off, roff, _) = cfg.reserve();
    let zero = T::zero();
    let one = T::from_f64(1.0);
    let full = lens.iter().all(|&l| l == t);
    let mut xp = vec![zero; tn * gh];
    let clip = cfg.clip.map(|(lo, hi)| (T::from_f64(lo), T::from_f64(hi)));
    for l in 0..cfg.layers {
        let ins = cfg.in_size(l);
        let x: *mut T = if l == 0 { b.x } else { b.res.add(xin_off[l]) };
        let y: *mut T = if l + 1 == cfg.layers { out } else { b.res.add(xin_off[l + 1]) };
        let ystride = dirs * p;
        if !full {
            at(y, 0, tn * ystride).fill(zero);
        }
        for d in 0..dirs {
            let ld = l * dirs + d;
            let (wo, ro) = (woff[ld], roff[ld]);
            if !full {
                // the states before the steps past an item's length stay 0 (the
                // backward multiplies them by zero gradients)
                at(b.res, ro.hprev, tn * p).fill(zero);
            }
            // input projection of every step, with the i2h bias
            gemm(tn, gh, ins, one, x, ins, false, b.w.add(wo.wx), ins, true, zero, xp.as_mut_ptr(), gh);
            let bx = at(b.w, wo.bx, gh);
            let bh: &[T] = at(b.w, wo.bh, gh);
            for row in xp.chunks_exact_mut(gh) {
                for (v, &bb) in row.iter_mut().zip(bx.iter()) {
                    *v += bb;
                }
            }
            // h2h weight packed once for the T steps' products h · Whᵀ
            let whp = PackedB::pack(p, gh, b.w.add(wo.wh), p, true);
            let hs_all = hy.add(ld * n * p);
            at(hs_all, 0, n * p).copy_from_slice(at(b.h0, ld * n * p, n * p));
            let cs_all = if cfg.mode == Mode::Lstm {
                at(cy, ld * n * h, n * h).copy_from_slice(at(b.c0, ld * n * h, n * h));
                cy.add(ld * n * h)
            } else {
                std::ptr::null_mut()
            };
            let parts = row_parts(n, whp.tile_rows());
            let gemm_threads = if parts.len() > 1 { 1 } else { crate::engine::threads() };
            let (xp_s, hs_s, cs_s, y_s, res_s, w_s) =
                (SendPtr(xp.as_mut_ptr()), SendPtr(hs_all), SendPtr(cs_all), SendPtr(y), SendPtr(b.res), SendPtr(b.w));
            let whp = &whp;
            run_parts(&parts, |r0, r1| {
                // SAFETY: this part reads and writes only the rows r0..r1 of the
                // shared buffers (states, reserve rows, outputs).
                unsafe {
                    let rows = r1 - r0;
                    let (xp, res, w) = (xp_s.get(), res_s.get(), w_s.get());
                    let hs = at(hs_s.get(), r0 * p, rows * p);
                    let cs: &mut [T] = if cfg.mode == Mode::Lstm { at(cs_s.get(), r0 * h, rows * h) } else { &mut [] };
                    let mut hh = vec![zero; rows * gh];
                    let mut rr = vec![zero; if cfg.proj { rows * h } else { 0 }];
                    let mut ptmp = vec![zero; if cfg.proj { rows * p } else { 0 }];
                    for s in 0..t {
                        for bi in r0..r1 {
                            if let Some(tau) = step_of(s, lens[bi], d) {
                                let src = &hs[(bi - r0) * p..(bi - r0 + 1) * p];
                                at(res, ro.hprev + (tau * n + bi) * p, p).copy_from_slice(src);
                            }
                        }
                        if cfg.mode == Mode::Lstm {
                            at(res, ro.cprev + (s * n + r0) * h, rows * h).copy_from_slice(cs);
                        }
                        for row in hh.chunks_exact_mut(gh) {
                            row.copy_from_slice(bh);
                        }
                        gemm_packed_threads(rows, hs.as_ptr(), p, whp, true, hh.as_mut_ptr(), gh, gemm_threads);
                        let gates = at(res, ro.gates + (s * n + r0) * gh, rows * gh);
                        for bi in r0..r1 {
                            let i = bi - r0;
                            let Some(tau) = step_of(s, lens[bi], d) else {
                                if cfg.proj {
                                    rr[i * h..(i + 1) * h].fill(zero);
                                }
                                continue;
                            };
                            let xr = at(xp, (tau * n + bi) * gh, gh);
                            let hr = &hh[i * gh..(i + 1) * gh];
                            let gr = &mut gates[i * gh..(i + 1) * gh];
                            let hrow = &mut hs[i * p..(i + 1) * p];
                            match cfg.mode {
                                Mode::Relu | Mode::Tanh => {
                                    for j in 0..h {
                                        let a = xr[j] + hr[j];
                                        let v = if cfg.mode == Mode::Tanh {
                                            a.tanh_()
                                        } else if a > zero {
                                            a
                                        } else {
                                            zero
                                        };
                                        gr[j] = v;
                                        hrow[j] = v;
                                    }
                                }
                                Mode::Lstm if clip.is_none() => {
                                    let crow = &mut cs[i * h..(i + 1) * h];
                                    let cn = at(res, ro.cnew + (s * n + bi) * h, h);
                                    let outr: &mut [T] = if cfg.proj { &mut rr[i * h..(i + 1) * h] } else { &mut hrow[..h] };
                                    T::lstm_row(h, xr, hr, crow, gr, cn, outr);
                                }
                                Mode::Lstm => {
                                    let crow = &mut cs[i * h..(i + 1) * h];
                                    let cn = at(res, ro.cnew + (s * n + bi) * h, h);
                                    for j in 0..h {
                                        let ig = sigmoid(xr[j] + hr[j]);
                                        let fg = sigmoid(xr[h + j] + hr[h + j]);
                                        let gg = (xr[2 * h + j] + hr[2 * h + j]).tanh_();
                                        let og = sigmoid(xr[3 * h + j] + hr[3 * h + j]);
                                        let mut c = fg * crow[j] + ig * gg;
                                        if let Some((lo, hi)) = clip {
                                            if c < lo {
                                                c = lo;
                                            } else if c > hi {
                                                c = hi;
                                            } else if c.is_nan_() && cfg.clip_nan {
                                                c = lo;
                                            }
                                        }
                                        gr[j] = ig;
                                        gr[h + j] = fg;
                                        gr[2 * h + j] = gg;
                                        gr[3 * h + j] = og;
                                        crow[j] = c;
                                        cn[j] = c;
                                        let r = og * c.tanh_();
                                        if cfg.proj {
                                            rr[i * h + j] = r;
                                        } else {
                                            hrow[j] = r;
                                        }
                                    }
                                }
                                Mode::Gru => {
                                    let hn = at(res, ro.hn + (s * n + bi) * h, h);
                                    for j in 0..h {
                                        let r = sigmoid(xr[j] + hr[j]);
                                        let z = sigmoid(xr[h + j] + hr[h + j]);
                                        let nn = (xr[2 * h + j] + r * hr[2 * h + j]).tanh_();
                                        gr[j] = r;
                                        gr[h + j] = z;
                                        gr[2 * h + j] = nn;
                                        hn[j] = hr[2 * h + j];
                                        hrow[j] = (one - z) * nn + z * hrow[j];
                                    }
                                }
                            }
                        }
                        if cfg.proj {
                            gemm_threads_on(
                                rows,
                                p,
                                h,
                                one,
                                rr.as_ptr(),
                                h,
                                false,
                                w.add(wo.wr),
                                h,
                                true,
                                zero,
                                ptmp.as_mut_ptr(),
                                p,
                                gemm_threads,
                            );
                            for bi in r0..r1 {
                                if s < lens[bi] {
                                    let i = bi - r0;
                                    hs[i * p..(i + 1) * p].copy_from_slice(&ptmp[i * p..(i + 1) * p]);
                                }
                            }
                        }
                        for bi in r0..r1 {
                            if let Some(tau) = step_of(s, lens[bi], d) {
                                let i = bi - r0;
                                at(y_s.get(), (tau * n + bi) * ystride + d * p, p).copy_from_slice(&hs[i * p..(i + 1) * p]);
                            }
                        }
                    }
                }
            });
        }
        if l + 1 < cfg.layers && cfg.has_mask() {
            let yv = at(y, 0, tn * ystride);
            let m = at(b.res, mask_off[l + 1], tn * ystride);
            match key {
                Some(k) => {
                    let scale = T::from_f64(1.0 / (1.0 - cfg.drop));
                    let base = (l * tn * ystride) as u64;
                    for (i, (v, mv)) in yv.iter_mut().zip(m.iter_mut()).enumerate() {
                        *mv = if uniform01(k, base + i as u64) < cfg.drop { zero } else { scale };
                        *v = *v * *mv;
                    }
                }
                None => m.fill(one),
            }
        }
    }
}

/// Column sums of `a` (rows × cols) added into `out`.
fn add_colsum<T: Real>(a: &[T], cols: usize, out: &mut [T]) {
    for row in a.chunks_exact(cols) {
        for (o, &v) in out.iter_mut().zip(row) {
            *o += v;
        }
    }
}

/// `_backward_RNN`: the gradients of data (into `dx`, unless null: not wanted),
/// parameters, state and state_cell.
///
/// Per layer (top down) and direction, the steps run backwards with the batch rows
/// split across the threads (see [`row_parts`]): each step's gate gradients `dA`
/// (one row per item, written at the item's time step), then `dH_prev = dA · Wh`
/// by the packed h2h weight. After the steps the weight gradients are one GEMM over
/// all steps each (`dWx = dAᵀ·X`, `dWh = dAᵀ·H_prev`, the saved states being stored
/// by time step), and the input gradient one GEMM (`dX = dA·Wx`).
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
unsafe fn backward<T: Real>(
    cfg: &Cfg,
    b: &Bufs<T>,
    lens: &[usize],
    dout: *mut T,
    dhy: Option<*mut T>,
    dcy: Option<*mut T>,
    dx: *mut T,
    dw: *mut T,
    dh0: *mut T,
    dc0: *mut T,
) {
    let (t, n, h, p, gh, dirs) = (cfg.t, cfg.n, cfg.h, cfg.p, cfg.gh(), cfg.dirs);
    let tn = t * n;
    let (woff, wtotal) = cfg.weights();
    let (xin_off, mask_off, roff, _) = cfg.reserve();
    let zero = T::zero();
    let one = T::from_f64(1.0);
    let lstm = cfg.mode == Mode::Lstm;
    let gru = cfg.mode == Mode::Gru;
    let full = lens.iter().all(|&l| l == t);
    at(dw, 0, wtotal).fill(zero);
    let ystride = dirs * p;
    // the gradient of the current layer's output, and of its input
    let mut dy: Vec<T> = at(dout, 0, tn * ystride).to_vec();
    let mut dxin: Vec<T> = Vec::new();
    // the gate gradients by time step: of the i2h pre-activations, and (GRU only,
    // where the n gate's differ) of the h2h ones
    let mut dax = vec![zero; tn * gh];
    let mut dah = vec![zero; if gru { tn * gh } else { 0 }];
    // with a projection: the gradient of each step's state and the unprojected
    // outputs, for dWhr after the steps
    let mut dhs = vec![zero; if cfg.proj { tn * p } else { 0 }];
    let mut rs = vec![zero; if cfg.proj { tn * h } else { 0 }];
    let mut colsum = vec![zero; gh];
    for l in (0..cfg.layers).rev() {
        let ins = cfg.in_size(l);
        let x: *mut T = if l == 0 { b.x } else { b.res.add(xin_off[l]) };
        let dxl: *mut T = if l == 0 {
            dx
        } else {
            dxin.resize(tn * ins, zero);
            dxin.as_mut_ptr()
        };
        for d in 0..dirs {
            let ld = l * dirs + d;
            let (wo, ro) = (woff[ld], roff[ld]);
            // h2h weight packed once for the T steps' products dA · Wh
            let whp = PackedB::pack(gh, p, b.w.add(wo.wh), p, false);
            if !full {
                // rows of steps past an item's length are not written below
                dax.fill(zero);
                dah.fill(zero);
            }
            let parts = row_parts(n, whp.tile_rows());
            let gemm_threads = if parts.len() > 1 { 1 } else { crate::engine::threads() };
            let (dax_s, dah_s, dhs_s, rs_s) =
                (SendPtr(dax.as_mut_ptr()), SendPtr(dah.as_mut_ptr()), SendPtr(dhs.as_mut_ptr()), SendPtr(rs.as_mut_ptr()));
            let (res_s, w_s, dy_s) = (SendPtr(b.res), SendPtr(b.w), SendPtr(dy.as_mut_ptr()));
            let (dh0_s, dc0_s) = (SendPtr(dh0), SendPtr(dc0));
            let (dhy_s, dcy_s) = (dhy.map(SendPtr), dcy.map(SendPtr));
            let whp = &whp;
            run_parts(&parts, |r0, r1| {
                // SAFETY: this part reads and writes only the rows r0..r1 of the
                // shared buffers (gate gradients, state gradients).
                unsafe {
                    let rows = r1 - r0;
                    let (res, w, dy) = (res_s.get(), w_s.get(), dy_s.get());
                    let mut dh = vec![zero; rows * p];
                    let mut dc = vec![zero; if lstm { rows * h } else { 0 }];
                    // this step's h2h gate gradients, one row per item of the part
                    let mut da = vec![zero; rows * gh];
                    let mut tmp = vec![zero; rows * p];
                    let mut direct = vec![zero; if gru { rows * h } else { 0 }];
                    let mut dr = vec![zero; if cfg.proj { rows * h } else { 0 }];
                    if let Some(g) = dhy_s {
                        dh.copy_from_slice(at(g.get(), (ld * n + r0) * p, rows * p));
                    }
                    if let Some(g) = dcy_s {
                        dc.copy_from_slice(at(g.get(), (ld * n + r0) * h, rows * h));
                    }
                    for s in (0..t).rev() {
                        for bi in r0..r1 {
                            if let Some(tau) = step_of(s, lens[bi], d) {
                                let g = at(dy, (tau * n + bi) * ystride + d * p, p);
                                for (a, &v) in dh[(bi - r0) * p..(bi - r0 + 1) * p].iter_mut().zip(g.iter()) {
                                    *a += v;
                                }
                            }
                        }
                        let gates = at(res, ro.gates + (s * n + r0) * gh, rows * gh);
                        if cfg.proj {
                            let cn = at(res, ro.cnew + (s * n + r0) * h, rows * h);
                            let rr = at(rs_s.get(), (s * n + r0) * h, rows * h);
                            for bi in r0..r1 {
                                let i = bi - r0;
                                for j in 0..h {
                                    rr[i * h + j] = if s < lens[bi] { gates[i * gh + 3 * h + j] * cn[i * h + j].tanh_() } else { zero };
                                }
                            }
                            at(dhs_s.get(), (s * n + r0) * p, rows * p).copy_from_slice(&dh);
                            // dR = dH · Whr
                            gemm_threads_on(
                                rows,
                                h,
                                p,
                                one,
                                dh.as_ptr(),
                                p,
                                false,
                                w.add(wo.wr),
                                h,
                                false,
                                zero,
                                dr.as_mut_ptr(),
                                h,
                                gemm_threads,
                            );
                        }
                        for bi in r0..r1 {
                            let i = bi - r0;
                            let ah = &mut da[i * gh..(i + 1) * gh];
                            let Some(tau) = step_of(s, lens[bi], d) else {
                                ah.fill(zero);
                                continue;
                            };
                            let gr = &gates[i * gh..(i + 1) * gh];
                            let ax = at(dax_s.get(), (tau * n + bi) * gh, gh);
                            let dhr: &[T] = if cfg.proj { &dr[i * h..(i + 1) * h] } else { &dh[i * p..(i + 1) * p] };
                            match cfg.mode {
                                Mode::Relu | Mode::Tanh => {
                                    for j in 0..h {
                                        let v = gr[j];
                                        ax[j] = if cfg.mode == Mode::Tanh {
                                            dhr[j] * (one - v * v)
                                        } else if v > zero {
                                            dhr[j]
                                        } else {
                                            zero
                                        };
                                    }
                                    ah.copy_from_slice(ax);
                                }
                                Mode::Lstm => {
                                    let cn = at(res, ro.cnew + (s * n + bi) * h, h);
                                    let cp = at(res, ro.cprev + (s * n + bi) * h, h);
                                    let dcr = &mut dc[i * h..(i + 1) * h];
                                    match cfg.clip {
                                        None => T::lstm_bwd_row(h, gr, cn, cp, dhr, dcr, ax),
                                        Some((lo, hi)) => {
                                            for j in 0..h {
                                                let (ig, fg, gg, og) = (gr[j], gr[h + j], gr[2 * h + j], gr[3 * h + j]);
                                                let c = cn[j];
                                                let th = c.tanh_();
                                                let dro = dhr[j];
                                                let mut dct = dcr[j] + dro * og * (one - th * th);
                                                let cf = c.to_f64();
                                                if cf <= lo || cf >= hi {
                                                    dct = zero;
                                                }
                                                dcr[j] = dct * fg;
                                                ax[j] = dct * gg * ig * (one - ig);
                                                ax[h + j] = dct * cp[j] * fg * (one - fg);
                                                ax[2 * h + j] = dct * ig * (one - gg * gg);
                                                ax[3 * h + j] = dro * th * og * (one - og);
                                            }
                                        }
                                    }
                                    ah.copy_from_slice(ax);
                                }
                                Mode::Gru => {
                                    let hn = at(res, ro.hn + (s * n + bi) * h, h);
                                    let hp = at(res, ro.hprev + (tau * n + bi) * p, p);
                                    for j in 0..h {
                                        let (r, z, nn) = (gr[j], gr[h + j], gr[2 * h + j]);
                                        let g = dhr[j];
                                        let dn = g * (one - z);
                                        let dz = g * (hp[j] - nn);
                                        let dan = dn * (one - nn * nn);
                                        let drr = dan * hn[j];
                                        let dar = drr * r * (one - r);
                                        let daz = dz * z * (one - z);
                                        ax[j] = dar;
                                        ax[h + j] = daz;
                                        ax[2 * h + j] = dan;
                                        ah[j] = dar;
                                        ah[h + j] = daz;
                                        ah[2 * h + j] = dan * r;
                                        direct[i * h + j] = g * z;
                                    }
                                    at(dah_s.get(), (tau * n + bi) * gh, gh).copy_from_slice(ah);
                                }
                            }
                        }
                        // dH_prev = dA_h · Wh (+ GRU's direct term); items past their
                        // length keep their gradient
                        gemm_packed_threads(rows, da.as_ptr(), gh, whp, false, tmp.as_mut_ptr(), p, gemm_threads);
                        for bi in r0..r1 {
                            if s >= lens[bi] {
                                continue;
                            }
                            let i = bi - r0;
                            let row = &mut dh[i * p..(i + 1) * p];
                            row.copy_from_slice(&tmp[i * p..(i + 1) * p]);
                            if gru {
                                for (a, &v) in row.iter_mut().zip(&direct[i * h..(i + 1) * h]) {
                                    *a += v;
                                }
                            }
                        }
                    }
                    at(dh0_s.get(), (ld * n + r0) * p, rows * p).copy_from_slice(&dh);
                    if lstm {
                        at(dc0_s.get(), (ld * n + r0) * h, rows * h).copy_from_slice(&dc);
                    }
                }
            });
            // weight and bias gradients over all steps at once (the gate gradients
            // and the saved states are both by time step)
            let dahs: &[T] = if gru { &dah } else { &dax };
            gemm(gh, p, tn, one, dahs.as_ptr(), gh, true, b.res.add(ro.hprev), p, false, one, dw.add(wo.wh), p);
            gemm(gh, ins, tn, one, dax.as_ptr(), gh, true, x, ins, false, one, dw.add(wo.wx), ins);
            if cfg.proj {
                // dWhr = Σ_s dH_sᵀ · R_s
                gemm(p, h, tn, one, dhs.as_ptr(), p, true, rs.as_ptr(), h, false, one, dw.add(wo.wr), h);
            }
            colsum.fill(zero);
            add_colsum(&dax, gh, &mut colsum);
            for (o, &v) in at(dw, wo.bx, gh).iter_mut().zip(&colsum) {
                *o += v;
            }
            if gru {
                colsum.fill(zero);
                add_colsum(&dah, gh, &mut colsum);
            }
            for (o, &v) in at(dw, wo.bh, gh).iter_mut().zip(&colsum) {
                *o += v;
            }
            if !dxl.is_null() {
                let beta = if d == 0 { zero } else { one };
                gemm(tn, ins, gh, one, dax.as_ptr(), gh, false, b.w.add(wo.wx), ins, false, beta, dxl, ins);
            }
        }
        if l > 0 {
            // the gradient of the layer below's output: through the dropout mask
            if cfg.has_mask() {
                let m = at(b.res, mask_off[l], tn * ystride);
                for (v, &mv) in dxin.iter_mut().zip(m.iter()) {
                    *v = *v * mv;
                }
            }
            std::mem::swap(&mut dy, &mut dxin);
        }
    }
}

/// The sequence lengths (clamped to [0, T]), or T for every item.
fn lengths(c: &OpCall, idx: Option<usize>, t: usize, n: usize) -> Vec<usize> {
    use crate::dtype::Element;
    match idx {
        Some(i) => {
            let l = &c.inputs[i];
            with_dtype!(l.dtype, L, {
                // SAFETY: the lengths hold n elements (checked by inference).
                let v = unsafe { l.slice::<L>() };
                v.iter().map(|x| Element::to_f64(*x).clamp(0.0, t as f64) as usize).collect()
            })
        }
        None => vec![t; n],
    }
}

fn rnn_compute(c: &mut OpCall) -> Result<()> {
    let cfg = Cfg::new(c.params, &c.inputs[0].shape)?;
    let names = select(c.params);
    let lstm = cfg.mode == Mode::Lstm;
    let seq = if c.params.bool("use_sequence_length") { Some(names.len() - 1) } else { None };
    let lens = lengths(c, seq, cfg.t, cfg.n);
    let key = if c.is_train && cfg.has_mask() {
        Some(c.rng.as_mut().map(|g| g.next_key()).ok_or_else(|| Error::op(NAME, "no random generator"))?)
    } else {
        None
    };
    let nv = visible(c.params);
    let dt = c.inputs[0].dtype;
    macro_rules! run {
        ($T:ty) => {{
            let nsd = cfg.nsd();
            // final states go to the outputs, or to scratch space when not returned
            let mut hy_s: Vec<$T> = Vec::new();
            let mut cy_s: Vec<$T> = Vec::new();
            let hy = if nv > 1 {
                c.outputs[1].ptr_as::<$T>()
            } else {
                hy_s.resize(nsd * cfg.n * cfg.p, 0.0);
                hy_s.as_mut_ptr()
            };
            let cy = if nv > 2 {
                c.outputs[2].ptr_as::<$T>()
            } else {
                cy_s.resize(if lstm { nsd * cfg.n * cfg.h } else { 0 }, 0.0);
                cy_s.as_mut_ptr()
            };
            let b = Bufs {
                x: c.inputs[0].ptr_as::<$T>(),
                w: c.inputs[1].ptr_as::<$T>(),
                h0: c.inputs[2].ptr_as::<$T>(),
                c0: if lstm { c.inputs[3].ptr_as::<$T>() } else { std::ptr::null_mut() },
                res: c.outputs[nv].ptr_as::<$T>(),
            };
            // SAFETY: every buffer has the size inference gave it; the outputs are ours.
            unsafe { forward::<$T>(&cfg, &b, &lens, c.outputs[0].ptr_as::<$T>(), hy, cy, key) };
        }};
    }
    match dt {
        DType::F32 => run!(f32),
        DType::F64 => run!(f64),
        d => return Err(Error::op(NAME, format!("dtype {} is not supported (float32, float64)", d.name()))),
    }
    Ok(())
}

fn bwd_compute(c: &mut OpCall) -> Result<()> {
    let cfg = Cfg::new(c.params, &c.inputs[0].shape)?;
    let nf = select(c.params).len();
    let lstm = cfg.mode == Mode::Lstm;
    let seq = if c.params.bool("use_sequence_length") { Some(nf - 1) } else { None };
    let lens = lengths(c, seq, cfg.t, cfg.n);
    let so = c.params.bool("state_outputs");
    let no_data = c.op.name == NO_DATA;
    let dt = c.inputs[0].dtype;
    macro_rules! run {
        ($T:ty) => {{
            let b = Bufs {
                x: c.inputs[0].ptr_as::<$T>(),
                w: c.inputs[1].ptr_as::<$T>(),
                h0: c.inputs[2].ptr_as::<$T>(),
                c0: if lstm { c.inputs[3].ptr_as::<$T>() } else { std::ptr::null_mut() },
                res: c.inputs[nf].ptr_as::<$T>(),
            };
            let dhy = if so { Some(c.inputs[nf + 2].ptr_as::<$T>()) } else { None };
            let dcy = if so && lstm { Some(c.inputs[nf + 3].ptr_as::<$T>()) } else { None };
            let (dxp, o) = if no_data { (std::ptr::null_mut(), 0) } else { (c.outputs[0].ptr_as::<$T>(), 1) };
            let dc0 = if lstm { c.outputs[o + 2].ptr_as::<$T>() } else { std::ptr::null_mut() };
            // SAFETY: sizes checked by inference; the outputs are ours, the inputs
            // only read.
            unsafe {
                backward::<$T>(
                    &cfg,
                    &b,
                    &lens,
                    c.inputs[nf + 1].ptr_as::<$T>(),
                    dhy,
                    dcy,
                    dxp,
                    c.outputs[o].ptr_as::<$T>(),
                    c.outputs[o + 1].ptr_as::<$T>(),
                    dc0,
                )
            };
        }};
    }
    match dt {
        DType::F32 => run!(f32),
        DType::F64 => run!(f64),
        d => return Err(Error::op(NAME, format!("dtype {} is not supported (float32, float64)", d.name()))),
    }
    Ok(())
}

fn rnn_grad(p: &Params, i: &[NDArray], o: &[NDArray], og: &[NDArray]) -> Grads {
    let nv = visible(p);
    if o.len() <= nv || og.len() < nv {
        return Err(Error::op(NAME, format!("gradient needs the forward's {} outputs (the reserve included), got {}", nv + 1, o.len())));
    }
    let mut ins: Vec<NDArray> = i.to_vec();
    ins.push(o[nv].clone());
    ins.extend(og[..nv].iter().cloned());
    let no_data = !super::grad_wanted(0);
    let r = invoke(lookup(if no_data { NO_DATA } else { "_backward_RNN" })?, &ins, p.clone(), None, None)?;
    let mut g: Vec<Option<NDArray>> = if no_data { vec![None] } else { Vec::new() };
    g.extend(r.into_iter().map(Some));
    if p.bool("use_sequence_length") {
        g.push(None);
    }
    Ok(g)
}

/// Unknown input dtypes follow data's, but for `sequence_length` (any type; it
/// gets data's when unknown, as in MXNet).
fn rnn_dtype_fill(_: &Params, dtypes: &mut [Option<DType>]) {
    if let Some(Some(d)) = dtypes.first().cloned() {
        for t in dtypes.iter_mut().filter(|t| t.is_none()) {
            *t = Some(d);
        }
    }
}

const DOC: &str = "Applies recurrent layers to input data. Currently, vanilla RNN, LSTM and GRU are
implemented, with both multi-layer and bidirectional support.

**Vanilla RNN**: h_t = relu(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh), or with tanh.

**LSTM**: i, f, g, o = sigmoid, sigmoid, tanh, sigmoid(W_i* x_t + b_i* + W_h* h_(t-1) + b_h*);
c_t = f * c_(t-1) + i * g; h_t = o * tanh(c_t) (then r_t = W_hr h_t with projection_size).

**GRU** (cuDNN's variant): r, z = sigmoid(W_i* x_t + b_i* + W_h* h_(t-1) + b_h*);
n_t = tanh(W_in x_t + b_in + r_t * (W_hn h_(t-1) + b_hn)); h_t = (1 - z_t) * n_t + z_t * h_(t-1).

data is (sequence length, batch size, input size); parameters is the flat vector of
all weights (per layer and direction: i2h, h2h[, h2r]) followed by all biases (i2h,
h2h); state (and state_cell for LSTM) is (num_layers * directions, batch, size).";

pub(super) fn register(r: &mut Registry) {
    r.add(
        OpDef::new(NAME, DOC, INPUTS, PARAMS, rnn_infer, rnn_compute)
            .aliases(&["_npx_rnn"])
            .grad(rnn_grad)
            .fill(rnn_fill)
            .dtype_fill(rnn_dtype_fill)
            .outputs(|p| visible(p) + 1)
            .visible(visible)
            .output_names(output_names)
            .random()
            .cost(64),
    );
    r.add(
        OpDef::new(
            "_backward_RNN",
            "Gradient of RNN: the gradients of data, parameters, state (and state_cell) from the forward's inputs, its reserve and the output gradients.",
            BWD_INPUTS,
            PARAMS,
            bwd_infer,
            bwd_compute,
        )
        .cost(64),
    );
    r.add(
        OpDef::new(
            NO_DATA,
            "Gradient of RNN without the data gradient: the gradients of parameters, state (and state_cell) from the forward's inputs, its reserve and the output gradients.",
            BWD_INPUTS,
            PARAMS,
            bwd_infer,
            bwd_compute,
        )
        .outputs(|p| if mode_of(p) == Mode::Lstm { 3 } else { 2 })
        .cost(64),
    );
}
