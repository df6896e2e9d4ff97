"""The fused ``RNN`` op (op/rnn.rs): every mode against a NumPy implementation written
here (MXNet's flat parameter layout, cuDNN's GRU), multi-layer, bidirectional,
projection, state clipping and sequence_length; gradients against central
differences; symbolic shape inference of the parameters; bad inputs."""

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError

nd = mx.nd
GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def param_size(mode, L, D, C, H, P=None):
    G = GATES[mode]
    proj = P is not None
    P = P or H
    n = 0
    for l in range(L):
        ins = C if l == 0 else D * P
        n += D * (G * H * ins + G * H * P + (P * H if proj else 0) + 2 * G * H)
    return n


def unpack(w, mode, L, D, C, H, P=None):
    """Per (layer, direction): dict of Wx, Wh, Wr, bx, bh from the flat vector."""
    G = GATES[mode]
    proj = P is not None
    P = P or H
    out, o = [], 0
    for l in range(L):
        ins = C if l == 0 else D * P
        for _ in range(D):
            e = {"Wx": w[o:o + G * H * ins].reshape(G * H, ins)}
            o += G * H * ins
            e["Wh"] = w[o:o + G * H * P].reshape(G * H, P)
            o += G * H * P
            if proj:
                e["Wr"] = w[o:o + P * H].reshape(P, H)
                o += P * H
            out.append(e)
    for e in out:
        e["bx"] = w[o:o + G * H]
        o += G * H
        e["bh"] = w[o:o + G * H]
        o += G * H
    assert o == w.size
    return out


def ref_rnn(x, w, h0, c0, mode, L, D, H, P=None, lens=None, clip=None, clip_nan=False):
    """NumPy oracle: (out, hy, cy)."""
    T, N, C = x.shape
    lens = [T] * N if lens is None else [int(v) for v in lens]
    ps = unpack(w, mode, L, D, C, H, P)
    Pz = P or H
    hy, cy = np.zeros_like(h0), None if c0 is None else np.zeros_like(c0)
    inp = x
    for l in range(L):
        y = np.zeros((T, N, D * Pz))
        for d in range(D):
            e = ps[l * D + d]
            for b in range(N):
                h = h0[l * D + d, b].copy()
                c = None if c0 is None else c0[l * D + d, b].copy()
                steps = range(lens[b]) if d == 0 else range(lens[b] - 1, -1, -1)
                for t in steps:
                    xa = e["Wx"] @ inp[t, b] + e["bx"]
                    ha = e["Wh"] @ h + e["bh"]
                    if mode == "rnn_tanh":
                        h = np.tanh(xa + ha)
                    elif mode == "rnn_relu":
                        h = np.maximum(xa + ha, 0)
                    elif mode == "gru":
                        r = sigmoid(xa[:H] + ha[:H])
                        z = sigmoid(xa[H:2 * H] + ha[H:2 * H])
                        n = np.tanh(xa[2 * H:] + r * ha[2 * H:])
                        h = (1 - z) * n + z * h
                    else:
                        a = xa + ha
                        i, f = sigmoid(a[:H]), sigmoid(a[H:2 * H])
                        g, o = np.tanh(a[2 * H:3 * H]), sigmoid(a[3 * H:])
                        c = f * c + i * g
                        if clip is not None:
                            c = np.clip(c, clip[0], clip[1])
                            if clip_nan:
                                c = np.where(np.isnan(c), clip[0], c)
                        h = o * np.tanh(c)
                        if P is not None:
                            h = e["Wr"] @ h
                    y[t, b, d * Pz:(d + 1) * Pz] = h
                hy[l * D + d, b] = h
                if c is not None:
                    cy[l * D + d, b] = c
        inp = y
    return inp, hy, cy


def make(mode, T, N, C, H, L=1, D=1, P=None, seed=0, dtype="float64"):
    rs = np.random.RandomState(seed)
    x = rs.uniform(-1, 1, (T, N, C))
    w = rs.uniform(-0.5, 0.5, param_size(mode, L, D, C, H, P))
    h0 = rs.uniform(-0.5, 0.5, (L * D, N, P or H))
    c0 = rs.uniform(-0.5, 0.5, (L * D, N, H)) if mode == "lstm" else None
    return [a if a is None else a.astype(dtype) for a in (x, w, h0, c0)]


def run_op(x, w, h0, c0, mode, L, D, H, P=None, lens=None, **kw):
    args = [nd.array(x, dtype=x.dtype), nd.array(w, dtype=w.dtype), nd.array(h0, dtype=h0.dtype)]
    if c0 is not None:
        args.append(nd.array(c0, dtype=c0.dtype))
    if lens is not None:
        args.append(nd.array(lens))
        kw["use_sequence_length"] = True
    if P is not None:
        kw["projection_size"] = P
    return nd.RNN(*args, state_size=H, num_layers=L, bidirectional=D == 2, mode=mode,
                  state_outputs=True, **kw)


@pytest.mark.parametrize("mode", ["rnn_relu", "rnn_tanh", "lstm", "gru"])
@pytest.mark.parametrize("L,D", [(1, 1), (2, 1), (1, 2), (2, 2)])
def test_forward_matches_numpy(mode, L, D):
    T, N, C, H = 4, 3, 5, 6
    x, w, h0, c0 = make(mode, T, N, C, H, L, D)
    res = run_op(x, w, h0, c0, mode, L, D, H)
    out, hy, cy = ref_rnn(x, w, h0, c0, mode, L, D, H)
    np.testing.assert_allclose(res[0].asnumpy(), out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res[1].asnumpy(), hy, rtol=1e-10, atol=1e-12)
    if mode == "lstm":
        np.testing.assert_allclose(res[2].asnumpy(), cy, rtol=1e-10, atol=1e-12)
    assert len(res) == (3 if mode == "lstm" else 2)


def test_float32_and_single_output():
    x, w, h0, c0 = make("lstm", 5, 2, 3, 4, 2, 2, dtype="float32")
    y = nd.RNN(nd.array(x), nd.array(w), nd.array(h0), nd.array(c0), state_size=4,
               num_layers=2, bidirectional=True, mode="lstm")
    assert isinstance(y, nd.NDArray) and y.shape == (5, 2, 8) and y.dtype == np.float32
    out, _, _ = ref_rnn(x.astype("float64"), w.astype("float64"), h0.astype("float64"),
                        c0.astype("float64"), "lstm", 2, 2, 4)
    np.testing.assert_allclose(y.asnumpy(), out, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("D", [1, 2])
def test_projection(D):
    T, N, C, H, P = 3, 2, 4, 5, 3
    x, w, h0, c0 = make("lstm", T, N, C, H, 2, D, P)
    res = run_op(x, w, h0, c0, "lstm", 2, D, H, P)
    out, hy, cy = ref_rnn(x, w, h0, c0, "lstm", 2, D, H, P)
    assert res[0].shape == (T, N, D * P) and res[1].shape == (2 * D, N, P)
    np.testing.assert_allclose(res[0].asnumpy(), out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res[1].asnumpy(), hy, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res[2].asnumpy(), cy, rtol=1e-10, atol=1e-12)


def test_state_clip():
    x, w, h0, c0 = make("lstm", 6, 3, 4, 5, 1, 1, seed=3)
    w = w * 4
    res = run_op(x, w, h0, c0, "lstm", 1, 1, 5, lstm_state_clip_min=-0.3,
                 lstm_state_clip_max=0.2)
    out, hy, cy = ref_rnn(x, w, h0, c0, "lstm", 1, 1, 5, clip=(-0.3, 0.2))
    np.testing.assert_allclose(res[0].asnumpy(), out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res[2].asnumpy(), cy, rtol=1e-10, atol=1e-12)
    assert res[2].asnumpy().max() <= 0.2 and res[2].asnumpy().min() >= -0.3


@pytest.mark.parametrize("mode", ["rnn_tanh", "lstm", "gru"])
@pytest.mark.parametrize("D", [1, 2])
def test_sequence_length(mode, D):
    T, N, C, H = 5, 4, 3, 4
    lens = np.array([5, 2, 3, 1], dtype="float64")
    x, w, h0, c0 = make(mode, T, N, C, H, 2, D)
    res = run_op(x, w, h0, c0, mode, 2, D, H, lens=lens)
    out, hy, cy = ref_rnn(x, w, h0, c0, mode, 2, D, H, lens=lens)
    np.testing.assert_allclose(res[0].asnumpy(), out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res[1].asnumpy(), hy, rtol=1e-10, atol=1e-12)
    assert (res[0].asnumpy()[2:, 1] == 0).all()


def numeric_grads(f, arrays, h=1e-6):
    grads = []
    for a in arrays:
        g = np.zeros_like(a)
        it = np.nditer(a, flags=["multi_index"])
        for _ in it:
            i = it.multi_index
            old = a[i]
            a[i] = old + h
            fp = f()
            a[i] = old - h
            fm = f()
            a[i] = old
            g[i] = (fp - fm) / (2 * h)
        grads.append(g)
    return grads


@pytest.mark.parametrize("mode,L,D,P,lens", [
    ("rnn_tanh", 2, 2, None, None),
    ("rnn_relu", 1, 1, None, None),
    ("lstm", 2, 2, None, None),
    ("lstm", 2, 1, 2, None),
    ("gru", 2, 2, None, None),
    ("gru", 1, 2, None, [3, 1]),
    ("lstm", 1, 2, None, [2, 3]),
])
def test_gradients(mode, L, D, P, lens):
    T, N, C, H = 3, 2, 3, 3
    x, w, h0, c0 = make(mode, T, N, C, H, L, D, P, seed=7)
    rs = np.random.RandomState(1)
    wo = rs.uniform(0.5, 1.5, (T, N, D * (P or H)))
    wh = rs.uniform(0.5, 1.5, h0.shape)
    wc = rs.uniform(0.5, 1.5, c0.shape) if c0 is not None else None
    lens_a = None if lens is None else np.array(lens, dtype="float64")

    def loss_np():
        out, hy, cy = ref_rnn(x, w, h0, c0, mode, L, D, H, P, lens=lens_a)
        v = (out * wo).sum() + (hy * wh).sum()
        return v + ((cy * wc).sum() if cy is not None else 0)

    arrs = [x, w, h0] + ([c0] if c0 is not None else [])
    num = numeric_grads(loss_np, arrs)
    ins = [nd.array(a, dtype="float64") for a in arrs]
    for a in ins:
        a.attach_grad()
    kw = {"projection_size": P} if P else {}
    if lens is not None:
        ins_all = ins + [nd.array(lens_a)]
        kw["use_sequence_length"] = True
    else:
        ins_all = ins
    with mx.autograd.record():
        res = nd.RNN(*ins_all, state_size=H, num_layers=L, bidirectional=D == 2, mode=mode,
                     state_outputs=True, **kw)
        loss = (res[0] * nd.array(wo, dtype="float64")).sum() + (res[1] * nd.array(wh, dtype="float64")).sum()
        if c0 is not None:
            loss = loss + (res[2] * nd.array(wc, dtype="float64")).sum()
    loss.backward()
    for a, g in zip(ins, num):
        np.testing.assert_allclose(a.grad.asnumpy(), g, rtol=1e-5, atol=1e-7)


def test_gradient_out_only():
    # without state_outputs the gradient comes from the output alone
    x, w, h0, c0 = make("gru", 3, 2, 2, 3, 1, 1)
    xa, wa, ha = nd.array(x, dtype="float64"), nd.array(w, dtype="float64"), nd.array(h0, dtype="float64")
    for a in (xa, wa, ha):
        a.attach_grad()
    with mx.autograd.record():
        y = nd.RNN(xa, wa, ha, state_size=3, num_layers=1, mode="gru")
    y.backward()

    def f():
        return ref_rnn(x, w, h0, None, "gru", 1, 1, 3)[0].sum()

    for a, g in zip((xa, wa, ha), numeric_grads(f, [x, w, h0])):
        np.testing.assert_allclose(a.grad.asnumpy(), g, rtol=1e-5, atol=1e-7)



def _grads(x, w, h0, c0, mode, L, D, H, P=None, lens=None, weights=None, data_grad=True, **kw):
    """The op's output and the gradients of sum(output * wo) + sum(hy * wh) (+ cy * wc)
    with respect to data (None when not attached), parameters, state (and cell)."""
    ins = [nd.array(a, dtype=a.dtype) for a in (x, w, h0) + (() if c0 is None else (c0,))]
    for i, a in enumerate(ins):
        if i > 0 or data_grad:
            a.attach_grad()
    wo, wh, wc = weights
    if P:
        kw["projection_size"] = P
    extra = []
    if lens is not None:
        extra = [nd.array(lens, dtype=x.dtype)]
        kw["use_sequence_length"] = True
    with mx.autograd.record():
        res = nd.RNN(*ins, *extra, state_size=H, num_layers=L, bidirectional=D == 2, mode=mode,
                     state_outputs=True, **kw)
        loss = (res[0] * nd.array(wo, dtype=x.dtype)).sum() + (res[1] * nd.array(wh, dtype=x.dtype)).sum()
        if c0 is not None:
            loss = loss + (res[2] * nd.array(wc, dtype=x.dtype)).sum()
    loss.backward()
    grads = [a.grad.asnumpy() if (i > 0 or data_grad) else None for i, a in enumerate(ins)]
    return res[0].asnumpy(), grads


@pytest.mark.parametrize("mode,D,P,ragged", [
    ("lstm", 1, None, False),
    ("lstm", 2, None, True),
    ("lstm", 2, 3, False),
    ("gru", 2, None, True),
    ("rnn_tanh", 1, None, True),
    ("rnn_relu", 2, None, False),
])
def test_large_batch_matches_items_one_by_one(mode, D, P, ragged):
    # a batch of 34 items runs its recurrence in parts of rows (on a machine with
    # several compute threads; the last part not a whole tile of the kernel); each
    # item alone must give the same output and the same data/state gradients, and
    # the parameter gradient is the sum of the items'
    T, N, C, H, L = 4, 34, 5, 6, 2
    x, w, h0, c0 = make(mode, T, N, C, H, L, D, P, seed=11)
    rs = np.random.RandomState(5)
    lens = rs.randint(1, T + 1, N).astype("float64") if ragged else None
    wo = rs.uniform(0.5, 1.5, (T, N, D * (P or H)))
    wh = rs.uniform(0.5, 1.5, h0.shape)
    wc = rs.uniform(0.5, 1.5, c0.shape) if c0 is not None else None
    out, grads = _grads(x, w, h0, c0, mode, L, D, H, P, lens, (wo, wh, wc))
    ref_out, _, _ = ref_rnn(x, w, h0, c0, mode, L, D, H, P, lens=lens)
    np.testing.assert_allclose(out, ref_out, rtol=1e-10, atol=1e-12)
    dw_sum = np.zeros_like(w)
    for i in range(N):
        sl = slice(i, i + 1)
        c0_i = None if c0 is None else c0[:, sl]
        wc_i = None if wc is None else wc[:, sl]
        lens_i = None if lens is None else lens[sl]
        out_i, g_i = _grads(x[:, sl], w, h0[:, sl], c0_i, mode, L, D, H, P, lens_i, (wo[:, sl], wh[:, sl], wc_i))
        np.testing.assert_allclose(out[:, sl], out_i, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(grads[0][:, sl], g_i[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(grads[2][:, sl], g_i[2], rtol=1e-10, atol=1e-12)
        if c0 is not None:
            np.testing.assert_allclose(grads[3][:, sl], g_i[3], rtol=1e-10, atol=1e-12)
        dw_sum += g_i[1]
    np.testing.assert_allclose(grads[1], dw_sum, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_parameter_gradient_without_data_gradient(mode):
    # data without a gradient (a layer fed by the batch) takes the backward that
    # skips the data gradient: the other gradients are the same
    T, N, C, H, L = 5, 17, 4, 6, 2
    x, w, h0, c0 = make(mode, T, N, C, H, L, 2, seed=4)
    rs = np.random.RandomState(9)
    weights = (rs.uniform(0.5, 1.5, (T, N, 2 * H)), rs.uniform(0.5, 1.5, h0.shape),
               None if c0 is None else rs.uniform(0.5, 1.5, c0.shape))
    _, full = _grads(x, w, h0, c0, mode, L, 2, H, weights=weights)
    _, part = _grads(x, w, h0, c0, mode, L, 2, H, weights=weights, data_grad=False)
    assert part[0] is None
    for a, b in zip(full[1:], part[1:]):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)


def test_float32_lstm_gradients_match_float64():
    # the float32 LSTM backward runs a vectorised cell (its own tanh)
    T, N, C, H, L = 6, 33, 5, 7, 2
    x, w, h0, c0 = make("lstm", T, N, C, H, L, 2, seed=8)
    rs = np.random.RandomState(2)
    weights = (rs.uniform(0.5, 1.5, (T, N, 2 * H)), rs.uniform(0.5, 1.5, h0.shape), rs.uniform(0.5, 1.5, c0.shape))
    out64, g64 = _grads(x, w, h0, c0, "lstm", L, 2, H, weights=weights)
    f32 = [a.astype("float32") for a in (x, w, h0, c0)]
    out32, g32 = _grads(*f32, "lstm", L, 2, H, weights=weights)
    np.testing.assert_allclose(out32, out64, rtol=1e-4, atol=1e-5)
    for a, b in zip(g32, g64):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_state_clip_gradients():
    T, N, C, H = 3, 2, 3, 3
    x, w, h0, c0 = make("lstm", T, N, C, H, 1, 1, seed=3)
    w = w * 3
    clip = (-0.35, 0.3)
    rs = np.random.RandomState(4)
    wo = rs.uniform(0.5, 1.5, (T, N, H))
    wc = rs.uniform(0.5, 1.5, c0.shape)

    def loss_np():
        out, _, cy = ref_rnn(x, w, h0, c0, "lstm", 1, 1, H, clip=clip)
        return (out * wo).sum() + (cy * wc).sum()

    num = numeric_grads(loss_np, [x, w, h0, c0])
    _, got = _grads(x, w, h0, c0, "lstm", 1, 1, H, weights=(wo, np.zeros(h0.shape), wc),
                    lstm_state_clip_min=clip[0], lstm_state_clip_max=clip[1])
    for a, g in zip(got, num):
        np.testing.assert_allclose(a, g, rtol=1e-5, atol=1e-7)


def test_dropout_training_only():
    x, w, h0, c0 = make("lstm", 4, 3, 3, 8, 3, 1, dtype="float32")
    args = [nd.array(a) for a in (x, w, h0, c0)]
    kw = dict(state_size=8, num_layers=3, mode="lstm", p=0.5)
    y_inf = nd.RNN(*args, **kw).asnumpy()
    ref, _, _ = ref_rnn(*(a.astype("float64") for a in (x, w, h0, c0)), "lstm", 3, 1, 8)
    np.testing.assert_allclose(y_inf, ref, rtol=1e-5, atol=1e-6)
    with mx.autograd.train_mode():
        y_tr = nd.RNN(*args, **kw).asnumpy()
    assert not np.allclose(y_tr, y_inf)


def test_symbol_infers_parameters():
    data = mx.sym.Variable("data")
    for mode, G in GATES.items():
        for bi in (False, True):
            sym = mx.sym.RNN(data=data, mode=mode, num_layers=2, state_size=7,
                             bidirectional=bi, state_outputs=True, name="rnn")
            arg, out, _ = sym.infer_shape(data=(5, 4, 3))
            names = sym.list_arguments()
            D = 2 if bi else 1
            shapes = dict(zip(names, arg))
            assert shapes["rnn_parameters"] == (param_size(mode, 2, D, 3, 7),)
            assert shapes["rnn_state"] == (2 * D, 4, 7)
            assert out[0] == (5, 4, 7 * D)
            want = ["rnn_output", "rnn_state_output"] + (["rnn_statecell_output"] if mode == "lstm" else [])
            assert sym.list_outputs() == want
            if mode == "lstm":
                assert shapes["rnn_state_cell"] == (2 * D, 4, 7)


def test_symbol_forward_backward_matches_ndarray():
    x, w, h0, c0 = make("lstm", 3, 2, 4, 5, 2, 1, dtype="float32")
    sym = mx.sym.RNN(mx.sym.var("data"), mx.sym.var("parameters"), mx.sym.var("state"),
                     mx.sym.var("state_cell"), state_size=5, num_layers=2, mode="lstm")
    args = {"data": nd.array(x), "parameters": nd.array(w), "state": nd.array(h0),
            "state_cell": nd.array(c0)}
    grads = {k: nd.zeros(v.shape) for k, v in args.items()}
    ex = sym.bind(mx.cpu(), args, args_grad=grads)
    out = ex.forward(is_train=True)[0]
    ex.backward(nd.ones(out.shape))
    nargs = [nd.array(a) for a in (x, w, h0, c0)]
    for a in nargs:
        a.attach_grad()
    with mx.autograd.record():
        y = nd.RNN(*nargs, state_size=5, num_layers=2, mode="lstm")
    y.backward()
    np.testing.assert_allclose(out.asnumpy(), y.asnumpy(), rtol=1e-6)
    for k, a in zip(["data", "parameters", "state", "state_cell"], nargs):
        np.testing.assert_allclose(grads[k].asnumpy(), a.grad.asnumpy(), rtol=1e-5, atol=1e-6)


def test_bad_inputs():
    x, w, h0, c0 = make("lstm", 3, 2, 4, 5)
    X, W, H0, C0 = (nd.array(a) for a in (x, w, h0, c0))
    kw = dict(state_size=5, num_layers=1, mode="lstm")
    with pytest.raises(MXNetError, match="RNN.*parameters"):
        nd.RNN(X, nd.zeros((w.size + 1,)), H0, C0, **kw)
    with pytest.raises(MXNetError, match="RNN.*state"):
        nd.RNN(X, W, nd.zeros((1, 3, 5)), C0, **kw)
    with pytest.raises(MXNetError, match="RNN.*state_cell"):
        nd.RNN(X, W, H0, nd.zeros((1, 2, 4)), **kw)
    with pytest.raises(MXNetError, match="RNN.*rank-3"):
        nd.RNN(nd.zeros((3, 4)), W, H0, C0, **kw)
    with pytest.raises(MXNetError, match="RNN"):
        nd.RNN(X, W, H0, **kw)  # the LSTM needs state_cell
    with pytest.raises(MXNetError, match="RNN.*projection_size"):
        nd.RNN(X, W, H0, state_size=5, num_layers=1, mode="gru", projection_size=2)
    with pytest.raises(MXNetError, match="RNN.*sequence_length"):
        nd.RNN(X, W, H0, C0, nd.array([1, 2, 3]), use_sequence_length=True, **kw)
    with pytest.raises(MXNetError, match="RNN"):
        nd.RNN(X.astype("int32"), W, H0, C0, **kw)


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
def test_fused_cell_matches_unfused_with_default_states(mode):
    # mx.rnn.FusedRNNCell unrolls to the RNN op; its default begin states are
    # zeros of shape (L * D, 0, H), the batch size inferred at bind time
    T, N, C, H = 3, 2, 4, 5
    fused = mx.rnn.FusedRNNCell(H, num_layers=2, mode=mode, bidirectional=True, prefix="f_")
    stack = fused.unfuse()
    data = mx.sym.var("data")
    y1, _ = fused.unroll(T, data, layout="TNC", merge_outputs=True)
    y2, _ = stack.unroll(T, data, layout="TNC", merge_outputs=True)
    arg_shapes, out_shapes, _ = y1.infer_shape(data=(T, N, C))
    assert out_shapes == [(T, N, 2 * H)]
    rs = np.random.RandomState(0)
    x = nd.array(rs.uniform(-1, 1, (T, N, C)))
    params = {n: nd.array(rs.uniform(-0.3, 0.3, s))
              for n, s in zip(y1.list_arguments(), arg_shapes) if n != "data"}
    out1 = y1.bind(mx.cpu(), dict(params, data=x)).forward()[0].asnumpy()
    unpacked = stack.pack_weights(fused.unpack_weights(params))
    args2 = {n: unpacked[n] for n in y2.list_arguments() if n != "data"}
    out2 = y2.bind(mx.cpu(), dict(args2, data=x)).forward()[0].asnumpy()
    np.testing.assert_allclose(out1, out2, rtol=1e-4, atol=1e-5)


def test_zeros_with_unknown_dims_bind():
    # MXNet 1.x: a 0 in zeros' shape is an unknown dimension, fixed by its consumers
    y = mx.sym.var("x") + mx.sym.zeros((0, 4))
    assert y.infer_shape(x=(3, 4))[1] == [(3, 4)]
    out = y.bind(mx.cpu(), {"x": nd.ones((3, 4))}).forward()[0]
    np.testing.assert_allclose(out.asnumpy(), np.ones((3, 4)))
