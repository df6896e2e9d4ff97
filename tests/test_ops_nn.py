"""Neural-network ops (op/nn.rs): Activation, LeakyReLU, BatchNorm, LayerNorm,
InstanceNorm, Dropout, Embedding, the output layers (SoftmaxOutput, SoftmaxActivation,
regression outputs), BlockGrad, make_loss and MakeLoss.

Forward results are compared with NumPy references written here; the backward
registry ops (``_backward_*``) are compared with central finite differences of the
forward in float64, and the output layers' special gradients (which ignore the head
gradient) with their closed forms. Key values were checked against MXNet 1.9.1."""

import contextlib
import math

import numpy as np
import pytest

import oxnet as mx
from oxnet import _core

nd = mx.nd
bwd = nd._internal


@contextlib.contextmanager
def train_mode():
    """Training mode for the ops pushed inside (autograd.train_mode when present)."""
    ag = getattr(mx, "autograd", None)
    if ag is not None and hasattr(ag, "train_mode"):
        with ag.train_mode():
            yield
        return
    prev = _core._set_is_training(True)
    try:
        yield
    finally:
        _core._set_is_training(prev)


def rand(shape, seed=0, dtype="float64", scale=1.0):
    return (np.random.RandomState(seed).randn(*shape) * scale).astype(dtype)


def A(x, dtype=None):
    x = np.asarray(x)
    return nd.array(x, dtype=dtype or x.dtype)


def num_grad(f, arrays, which, w, h=1e-6):
    """d sum(w * f(*arrays)) / d arrays[which], by central differences (float64)."""
    base = [np.array(a, dtype="float64") for a in arrays]
    g = np.zeros_like(base[which])
    it = np.nditer(base[which], flags=["multi_index"])
    for _ in it:
        idx = it.multi_index
        vals = []
        for d in (h, -h):
            args = [b.copy() for b in base]
            args[which][idx] += d
            vals.append(float((f(*args) * w).sum()))
        g[idx] = (vals[0] - vals[1]) / (2 * h)
    return g


def close(got, want, rtol=1e-5, atol=1e-6):
    got = got.asnumpy() if isinstance(got, nd.NDArray) else np.asarray(got)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def expect_error(fn, op, fragments=(), inputs=()):
    before = [a.asnumpy().copy() for a in inputs]
    with pytest.raises(mx.base.MXNetError) as ei:
        r = fn()
        for x in (r if isinstance(r, (list, tuple)) else [r]):
            x.asnumpy()
    msg = str(ei.value)
    assert op in msg, msg
    for f in fragments:
        assert f in msg, "message lacks %r: %s" % (f, msg)
    for a, b in zip(inputs, before):
        np.testing.assert_array_equal(a.asnumpy(), b)
    return msg


# ---- NumPy references ---------------------------------------------------------------

_erf = np.vectorize(math.erf)
SELU_A, SELU_L = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def np_act(x, act, slope=0.25):
    return {
        "relu": lambda: np.maximum(x, 0),
        "sigmoid": lambda: 1 / (1 + np.exp(-x)),
        "tanh": lambda: np.tanh(x),
        "softrelu": lambda: np.log1p(np.exp(x)),
        "softsign": lambda: x / (1 + np.abs(x)),
        "leaky": lambda: np.where(x > 0, x, slope * x),
        "elu": lambda: np.where(x > 0, x, slope * (np.exp(x) - 1)),
        "selu": lambda: SELU_L * np.where(x > 0, x, SELU_A * (np.exp(x) - 1)),
        "gelu": lambda: 0.5 * x * (1 + _erf(x / np.sqrt(2))),
    }[act]()


def np_bn(x, gamma, beta, mean, var, eps, axis):
    shp = [1] * x.ndim
    shp[axis] = -1
    r = lambda v: np.reshape(v, shp)  # noqa: E731
    return (x - r(mean)) / np.sqrt(r(var) + eps) * r(gamma) + r(beta)


def np_layer_norm(x, gamma, beta, axis, eps):
    m = x.mean(axis=axis, keepdims=True)
    v = x.var(axis=axis, keepdims=True)
    shp = [1] * x.ndim
    shp[axis] = -1
    return (x - m) / np.sqrt(v + eps) * gamma.reshape(shp) + beta.reshape(shp), m, np.sqrt(v + eps)


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ---- Activation / LeakyReLU ---------------------------------------------------------

ACTS = ["relu", "sigmoid", "tanh", "softrelu", "softsign"]
LEAKY = ["leaky", "elu", "selu", "gelu"]


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_activation_forward(act, dtype):
    x = rand((3, 4, 5), seed=1, dtype=dtype, scale=2)
    close(nd.Activation(A(x), act_type=act), np_act(x.astype("float64"), act), rtol=1e-5, atol=1e-6)


def test_activation_float16():
    x = rand((4, 6), seed=2, dtype="float16")
    y = nd.Activation(A(x), act_type="tanh")
    assert y.dtype == np.float16
    close(y, np.tanh(x.astype("float64")), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("act", LEAKY)
def test_leaky_forward(act):
    x = rand((2, 3, 4), seed=3, scale=2)
    close(nd.LeakyReLU(A(x), act_type=act, slope=0.3), np_act(x, act, 0.3), rtol=1e-10, atol=1e-12)


def test_leaky_default_is_leaky_slope_quarter():
    x = np.array([-4.0, -1.0, 0.0, 2.0], dtype="float32")
    close(nd.LeakyReLU(A(x)), [-1.0, -0.25, 0.0, 2.0])


def test_gelu_matches_mxnet_values():
    # MXNet 1.9.1: LeakyReLU(act_type='gelu') at -3, -1.5, 0.5, 2.5.
    x = np.array([-3.0, -1.5, 0.5, 2.5], dtype="float32")
    close(nd.LeakyReLU(A(x), act_type="gelu"), [-0.00404987, -0.10021085, 0.3457312, 2.4844759], rtol=1e-5)


def test_prelu_per_channel_and_shared():
    x = rand((2, 3, 4), seed=4)
    g = np.array([0.1, 0.5, 2.0])
    want = np.where(x > 0, x, g.reshape(1, 3, 1) * x)
    close(nd.LeakyReLU(A(x), A(g), act_type="prelu"), want, rtol=1e-12)
    close(nd.LeakyReLU(A(x), A(np.array([0.5])), act_type="prelu"), np.where(x > 0, x, 0.5 * x), rtol=1e-12)


def test_rrelu_inference_uses_mean_slope_and_returns_mask():
    x = rand((3, 4), seed=5)
    out, mask = nd.LeakyReLU(A(x), act_type="rrelu", lower_bound=0.1, upper_bound=0.3)
    close(out, np.where(x > 0, x, 0.2 * x), rtol=1e-12)
    close(mask, np.full(x.shape, 0.2), rtol=1e-12)


def test_rrelu_training_draws_slopes_in_bounds():
    x = -np.abs(rand((50, 40), seed=6)) - 0.1
    with train_mode():
        out, mask = nd.LeakyReLU(A(x), act_type="rrelu", lower_bound=0.1, upper_bound=0.3)
    m = mask.asnumpy()
    assert m.min() >= 0.1 and m.max() < 0.3 and m.std() > 0.03
    close(out, m * x, rtol=1e-12)
    g = rand(x.shape, seed=7)
    close(bwd._backward_LeakyReLU(A(g), A(x), out, mask, act_type="rrelu"), g * m, rtol=1e-12)


@pytest.mark.parametrize("act", ACTS)
def test_backward_activation_finite_differences(act):
    x = rand((3, 4), seed=8, scale=1.5)
    x[np.abs(x) < 1e-3] = 0.5  # keep away from relu's kink
    w = rand((3, 4), seed=9)
    y = nd.Activation(A(x), act_type=act)
    got = bwd._backward_Activation(A(w), A(x), y, act_type=act)
    want = num_grad(lambda v: nd.Activation(A(v), act_type=act).asnumpy(), [x], 0, w)
    close(got, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("act", LEAKY + ["prelu"])
def test_backward_leaky_finite_differences(act):
    x = rand((2, 3, 4), seed=10, scale=1.5)
    x[np.abs(x) < 1e-3] = 0.5
    w = rand(x.shape, seed=11)
    if act == "prelu":
        g = np.array([0.1, 0.4, 1.5])
        y = nd.LeakyReLU(A(x), A(g), act_type="prelu")
        dx, dg = bwd._backward_LeakyReLU(A(w), A(x), y, A(g), act_type="prelu")
        f = lambda v, gg: nd.LeakyReLU(A(v), A(gg), act_type="prelu").asnumpy()  # noqa: E731
        close(dx, num_grad(f, [x, g], 0, w), rtol=1e-5, atol=1e-7)
        close(dg, num_grad(f, [x, g], 1, w), rtol=1e-5, atol=1e-7)
        # one shared slope
        g1 = np.array([0.3])
        y = nd.LeakyReLU(A(x), A(g1), act_type="prelu")
        dx, dg = bwd._backward_LeakyReLU(A(w), A(x), y, A(g1), act_type="prelu")
        close(dg, num_grad(f, [x, g1], 1, w), rtol=1e-5, atol=1e-7)
        return
    y = nd.LeakyReLU(A(x), act_type=act, slope=0.2)
    got = bwd._backward_LeakyReLU(A(w), A(x), y, act_type=act, slope=0.2)
    want = num_grad(lambda v: nd.LeakyReLU(A(v), act_type=act, slope=0.2).asnumpy(), [x], 0, w)
    close(got, want, rtol=1e-5, atol=1e-7)


# ---- BatchNorm ----------------------------------------------------------------------

def _bn_inputs(shape, axis, seed=12):
    c = shape[axis]
    x = rand(shape, seed=seed, dtype="float32", scale=2) + 1
    g = np.linspace(0.5, 2.0, c).astype("float32")
    b = np.linspace(-0.3, 0.3, c).astype("float32")
    mm = np.linspace(0.1, 0.5, c).astype("float32")
    mv = np.linspace(1.0, 3.0, c).astype("float32")
    return x, g, b, mm, mv


@pytest.mark.parametrize("shape,axis", [((4, 3, 5, 2), 1), ((4, 3), 1), ((6, 4, 3), -1), ((2, 5, 3), 0), ((300, 7), 1)])
@pytest.mark.parametrize("fix_gamma", [True, False])
def test_batchnorm_inference_uses_moving_stats(shape, axis, fix_gamma):
    x, g, b, mm, mv = _bn_inputs(shape, axis)
    ins = [A(v) for v in (x, g, b, mm, mv)]
    out, mean, invstd = nd.BatchNorm(*ins, axis=axis, fix_gamma=fix_gamma, output_mean_var=True)
    gg = np.ones_like(g) if fix_gamma else g
    close(out, np_bn(x, gg, b, mm, mv, 1e-3, axis % x.ndim), rtol=1e-5, atol=1e-5)
    close(mean, mm)
    close(invstd, 1 / np.sqrt(mv + 1e-3), rtol=1e-6)
    close(ins[3], mm)
    close(ins[4], mv)
    close(ins[1], g)  # gamma is never overwritten


@pytest.mark.parametrize("shape,axis", [((4, 3, 5, 2), 1), ((6, 4, 3), -1), ((200, 6), 1), ((3, 70, 2), 2)])
@pytest.mark.parametrize("fix_gamma", [True, False])
def test_batchnorm_training_batch_stats_and_moving_update(shape, axis, fix_gamma):
    x, g, b, mm, mv = _bn_inputs(shape, axis)
    ins = [A(v) for v in (x, g, b, mm, mv)]
    ins[0].attach_grad()
    with mx.autograd.record():
        out, mean, invstd = nd.BatchNorm(*ins, axis=axis, fix_gamma=fix_gamma, momentum=0.8, eps=1e-4, output_mean_var=True)
    # As MXNet's CPU kernel: the forward leaves the moving statistics alone ...
    close(ins[3], mm, rtol=0, atol=0)
    close(ins[4], mv, rtol=0, atol=0)
    out.backward()
    ax = axis % x.ndim
    red = tuple(i for i in range(x.ndim) if i != ax)
    xm = x.astype("float64").mean(axis=red)
    xv = x.astype("float64").var(axis=red)
    gg = np.ones_like(g) if fix_gamma else g
    close(out, np_bn(x, gg, b, xm, xv, 1e-4, ax), rtol=1e-4, atol=1e-4)
    close(mean, xm, rtol=1e-5, atol=1e-6)
    close(invstd, 1 / np.sqrt(xv + 1e-4), rtol=1e-5)
    # ... and the backward moves them towards the batch's.
    close(ins[3], 0.8 * mm + 0.2 * xm, rtol=1e-5, atol=1e-6)
    close(ins[4], 0.8 * mv + 0.2 * xv, rtol=1e-5)


def test_batchnorm_matches_mxnet_values():
    # MXNet 1.9.1: inference and training (under record) with these inputs.
    x = A(np.arange(-3, 3, 0.5).reshape(2, 3, 2), "float32")
    g, b = A([1.0, 2.0, 3.0], "float32"), A([0.1, 0.2, 0.3], "float32")
    mm, mv = A([0.5, 0.5, 0.5], "float32"), A([2.0, 2.0, 2.0], "float32")
    r = nd.BatchNorm(x, g, b, mm, mv, output_mean_var=True)
    close(r[0][0, 0], [-2.3742554, -2.0207903], rtol=1e-6)
    close(r[2], [0.7069301] * 3, rtol=1e-6)
    x.attach_grad()
    with mx.autograd.record():
        r = nd.BatchNorm(x, g, b, mm, mv, output_mean_var=True, fix_gamma=False)
    close(r[0][0, 0], [-1.0505441, -0.72181726], rtol=1e-6)
    close(r[1], [-1.25, -0.25, 0.75])
    close(r[2], [0.65745384] * 3, rtol=1e-6)
    close(mm, [0.5] * 3)  # MXNet's CPU kernel updates them in the backward
    r[0].backward()
    close(mm, [0.325, 0.425, 0.525], rtol=1e-6)
    close(mv, [2.03125] * 3, rtol=1e-6)


def test_batchnorm_fix_gamma_writes_ones_into_gamma_in_training_only():
    # MXNet 1.9.1 (oracle): a training forward with fix_gamma sets gamma to ones; an
    # inference forward leaves it, and the scale used is one either way.
    x, g, b, mm, mv = _bn_inputs((4, 3, 2), 1)
    ins = [A(v) for v in (x, g, b, mm, mv)]
    out = nd.BatchNorm(*ins, fix_gamma=True)
    close(ins[1], g, rtol=0, atol=0)
    close(out, np_bn(x, np.ones_like(g), b, mm, mv, 1e-3, 1), rtol=1e-5, atol=1e-5)
    with train_mode():
        nd.BatchNorm(*ins, fix_gamma=False).wait_to_read()
        close(ins[1], g, rtol=0, atol=0)
        nd.BatchNorm(*ins, fix_gamma=True).wait_to_read()
    close(ins[1], np.ones_like(g), rtol=0, atol=0)
    # the symbol keeps gamma an argument, not an auxiliary state
    s = mx.sym.BatchNorm(mx.sym.var("data"), name="bn")
    assert s.list_arguments() == ["data", "bn_gamma", "bn_beta"]
    assert s.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]


def test_batchnorm_use_global_stats_in_training():
    x, g, b, mm, mv = _bn_inputs((4, 3, 2), 1)
    ins = [A(v) for v in (x, g, b, mm, mv)]
    with train_mode():
        out = nd.BatchNorm(*ins, use_global_stats=True, fix_gamma=False)
    close(out, np_bn(x, g, b, mm, mv, 1e-3, 1), rtol=1e-5, atol=1e-5)
    close(ins[3], mm)
    close(ins[4], mv)


def test_batchnorm_returns_one_output_by_default():
    x, g, b, mm, mv = _bn_inputs((2, 3), 1)
    out = nd.BatchNorm(*[A(v) for v in (x, g, b, mm, mv)])
    assert isinstance(out, nd.NDArray) and out.shape == (2, 3)


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("axis", [1, -1])
def test_backward_batchnorm_finite_differences(train, axis):
    shape = (3, 4, 2)
    c = shape[axis]
    x = rand(shape, seed=13)
    g, b = np.linspace(0.5, 1.5, c), np.linspace(-1, 1, c)
    mm, mv = np.linspace(0.1, 0.3, c), np.linspace(1, 2, c)
    w = rand(shape, seed=14)
    kw = dict(axis=axis, fix_gamma=False, output_mean_var=True)
    ctx = train_mode() if train else contextlib.nullcontext()

    def f(xx, gg, bb):
        with (train_mode() if train else contextlib.nullcontext()):
            return nd.BatchNorm(A(xx), A(gg), A(bb), A(mm), A(mv), **kw)[0].asnumpy()

    with ctx:
        out, mean, invstd = nd.BatchNorm(A(x), A(g), A(b), A(mm), A(mv), **kw)
        amm, amv = A(mm), A(mv)
        dx, dg, db = bwd._backward_BatchNorm(A(w), A(x), A(g), mean, invstd, amm, amv, **kw)
    for got, j in ((dx, 0), (dg, 1), (db, 2)):
        close(got, num_grad(f, [x, g, b], j, w), rtol=1e-5, atol=1e-6)
    # The backward updates the moving statistics in training only.
    ax = axis % x.ndim
    red = tuple(i for i in range(x.ndim) if i != ax)
    if train:
        close(amm, 0.9 * mm + 0.1 * x.mean(axis=red), rtol=1e-9)
        close(amv, 0.9 * mv + 0.1 * x.var(axis=red), rtol=1e-9)
    else:
        close(amm, mm, rtol=0, atol=0)
        close(amv, mv, rtol=0, atol=0)


def test_backward_batchnorm_fix_gamma_gives_zero_gamma_grad():
    x = rand((4, 3), seed=15)
    ones = np.ones(3)
    with train_mode():
        out, mean, invstd = nd.BatchNorm(A(x), A(ones * 2), A(ones), A(ones * 0), A(ones), output_mean_var=True)
        dx, dg, db = bwd._backward_BatchNorm(A(x), A(x), A(ones * 2), mean, invstd, A(ones * 0), A(ones))
    close(dg, np.zeros(3))
    close(db, x.sum(axis=0), rtol=1e-12)


# ---- LayerNorm / InstanceNorm -------------------------------------------------------

@pytest.mark.parametrize("shape,axis", [((4, 6), -1), ((2, 3, 5), -1), ((2, 3, 5), 1), ((2, 3, 5), 0), ((3, 1000), -1), ((7,), 0)])
def test_layer_norm_forward(shape, axis):
    x = rand(shape, seed=16, dtype="float32") * 3 + 1
    c = shape[axis]
    g, b = np.linspace(0.5, 1.5, c).astype("float32"), np.linspace(-1, 1, c).astype("float32")
    out, mean, std = nd.LayerNorm(A(x), A(g), A(b), axis=axis, output_mean_var=True)
    want, wm, ws = np_layer_norm(x.astype("float64"), g, b, axis, 1e-5)
    close(out, want, rtol=1e-4, atol=1e-4)
    close(mean, wm, rtol=1e-5, atol=1e-5)
    close(std, ws, rtol=1e-5)
    assert nd.LayerNorm(A(x), A(g), A(b), axis=axis).shape == shape


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_backward_layer_norm_finite_differences(axis):
    shape = (2, 3, 4)
    c = shape[axis]
    x, w = rand(shape, seed=17), rand(shape, seed=18)
    g, b = np.linspace(0.5, 1.5, c), np.linspace(-1, 1, c)
    out, mean, std = nd.LayerNorm(A(x), A(g), A(b), axis=axis, output_mean_var=True)
    grads = bwd._backward_LayerNorm(A(w), A(x), A(g), mean, std, axis=axis)
    f = lambda xx, gg, bb: nd.LayerNorm(A(xx), A(gg), A(bb), axis=axis).asnumpy()  # noqa: E731
    for j in range(3):
        close(grads[j], num_grad(f, [x, g, b], j, w), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 4), (1, 2, 600)])
def test_instance_norm_forward(shape):
    x = rand(shape, seed=19, dtype="float32") * 2 + 0.5
    c = shape[1]
    g, b = np.linspace(0.5, 1.5, c).astype("float32"), np.linspace(-1, 1, c).astype("float32")
    red = tuple(range(2, len(shape)))
    xd = x.astype("float64")
    m, v = xd.mean(axis=red, keepdims=True), xd.var(axis=red, keepdims=True)
    shp = (1, c) + (1,) * (len(shape) - 2)
    want = (xd - m) / np.sqrt(v + 1e-3) * g.reshape(shp) + b.reshape(shp)
    close(nd.InstanceNorm(A(x), A(g), A(b)), want, rtol=1e-4, atol=1e-4)


def test_backward_instance_norm_finite_differences():
    shape = (2, 3, 2, 2)
    x, w = rand(shape, seed=20), rand(shape, seed=21)
    g, b = np.array([0.5, 1.0, 2.0]), np.array([0.1, -0.2, 0.3])
    # the backward op takes the per-(batch, channel) mean and inverse std
    outs = bwd._backward_InstanceNorm(A(w), A(x), A(g), *_hidden_in(x, g, b))
    f = lambda xx, gg, bb: nd.InstanceNorm(A(xx), A(gg), A(bb)).asnumpy()  # noqa: E731
    for j in range(3):
        close(outs[j], num_grad(f, [x, g, b], j, w), rtol=1e-5, atol=1e-6)


def _hidden_in(x, g, b, eps=1e-3):
    red = tuple(range(2, x.ndim))
    m = x.mean(axis=red)
    inv = 1 / np.sqrt(x.var(axis=red) + eps)
    return A(m), A(inv)


# ---- Dropout ------------------------------------------------------------------------

def test_dropout_is_identity_outside_training():
    x = rand((5, 6), seed=22, dtype="float32")
    close(nd.Dropout(A(x), p=0.7), x)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_training_statistics(p):
    x = np.ones((200, 300), dtype="float32")
    with train_mode():
        y = nd.Dropout(A(x), p=p).asnumpy()
    kept = y != 0
    assert abs(kept.mean() - (1 - p)) < 0.01
    np.testing.assert_allclose(y[kept], 1 / (1 - p), rtol=1e-6)
    assert abs(y.mean() - 1) < 0.03


def test_dropout_p_zero_and_one():
    x = rand((20, 30), seed=23, dtype="float32")
    with train_mode():
        close(nd.Dropout(A(x), p=0.0), x)
        # every element dropped: 0 * (1 / 0), NaN, as MXNet 1.9.1 gives
        assert np.isnan(nd.Dropout(A(x), p=1.0).asnumpy()).all()


def test_dropout_mode_always_drops_in_inference():
    x = np.ones((100, 100), dtype="float32")
    y = nd.Dropout(A(x), p=0.5, mode="always").asnumpy()
    assert 0.4 < (y == 0).mean() < 0.6


def test_dropout_axes_share_the_mask():
    x = np.ones((40, 30, 5), dtype="float32")
    y = nd.Dropout(A(x), p=0.5, mode="always", axes=(1,)).asnumpy()
    assert (y == y[:, :1, :]).all()
    assert 0.3 < (y[:, 0, :] == 0).mean() < 0.7
    assert not (y == y[:1]).all()


def test_dropout_reproducible_by_seed():
    x = np.ones((50, 50), dtype="float32")
    mx.random.seed(123)
    a = nd.Dropout(A(x), p=0.5, mode="always").asnumpy()
    b = nd.Dropout(A(x), p=0.5, mode="always").asnumpy()
    mx.random.seed(123)
    c = nd.Dropout(A(x), p=0.5, mode="always").asnumpy()
    np.testing.assert_array_equal(a, c)
    assert (a != b).any()


def test_backward_dropout_uses_the_mask():
    x, g = rand((30, 40), seed=24), rand((30, 40), seed=25)
    y = nd.Dropout(A(x), p=0.3, mode="always").asnumpy()
    m = np.where(y != 0, 1 / 0.7, 0.0)
    got = bwd._backward_Dropout(A(g), A(m), p=0.3)
    close(got, g * m, rtol=1e-12)


# ---- Embedding ----------------------------------------------------------------------

def test_embedding_forward_clips_and_truncates():
    w = np.arange(40, dtype="float32").reshape(10, 4)
    idx = np.array([[0, 3], [9, 12.7], [-1, 3.6]], dtype="float32")
    got = nd.Embedding(A(idx), A(w), input_dim=10, output_dim=4)
    want = w[np.clip(np.trunc(idx), 0, 9).astype(int)]
    assert got.shape == (3, 2, 4)
    close(got, want)


@pytest.mark.parametrize("idx_dtype", ["int32", "int64", "float64"])
def test_embedding_index_dtypes_and_weight_dtype(idx_dtype):
    w = rand((6, 3), seed=26)
    idx = np.array([5, 0, 2, 2], dtype=idx_dtype)
    got = nd.Embedding(A(idx), A(w), input_dim=6, output_dim=3, dtype="float64")
    assert got.dtype == np.float64
    close(got, w[idx.astype(int)], rtol=1e-12)


def test_backward_embedding_scatter_adds():
    idx = np.array([[1, 4, 1], [0, 4, 4]], dtype="float32")
    g = rand((2, 3, 5), seed=27, dtype="float32")
    got = bwd._backward_Embedding(A(g), A(idx), input_dim=6, output_dim=5)
    want = np.zeros((6, 5))
    np.add.at(want, idx.astype(int).ravel(), g.reshape(-1, 5))
    close(got, want, rtol=1e-6)
    assert got.shape == (6, 5)


# ---- output layers ------------------------------------------------------------------

def test_softmax_output_forward_and_alias():
    x = rand((3, 4), seed=28, dtype="float32")
    lab = np.array([0, 2, 3], dtype="float32")
    close(nd.SoftmaxOutput(A(x), A(lab)), np_softmax(x.astype("float64")), rtol=1e-5)
    close(nd.Softmax(A(x), A(lab)), np_softmax(x.astype("float64")), rtol=1e-5)


def _smo_grad(x, lab, **kw):
    y = nd.SoftmaxOutput(A(x), A(lab), **kw)
    head = A(np.full(x.shape, 7.0, dtype=x.dtype))  # ignored unless out_grad=True
    return y.asnumpy(), bwd._backward_SoftmaxOutput(head, A(lab), y, **kw).asnumpy()


def test_softmax_output_gradient_normalizations():
    x = rand((3, 4), seed=0, dtype="float32")
    lab = np.array([0, 2, 3], dtype="float32")
    p, g = _smo_grad(x, lab, grad_scale=2)
    oh = np.eye(4)[[0, 2, 3]]
    close(g, 2 * (p - oh), rtol=1e-5, atol=1e-6)
    _, g = _smo_grad(x, lab, normalization="batch")
    close(g, (p - oh) / 3, rtol=1e-5, atol=1e-6)
    _, g = _smo_grad(x, lab, use_ignore=True, ignore_label=2)
    close(g, (p - oh) * np.array([[1], [0], [1]]), rtol=1e-5, atol=1e-6)
    _, g = _smo_grad(x, lab, use_ignore=True, ignore_label=2, normalization="valid")
    close(g, (p - oh) * np.array([[1], [0], [1]]) / 2, rtol=1e-5, atol=1e-6)
    # MXNet 1.9.1 gradient with grad_scale=2 (head gradient 7 ignored).
    close(_smo_grad(rand((3, 4), seed=0, dtype="float32"), lab, grad_scale=2)[1][0],
          [-1.3980646, 0.15389259, 0.27446827, 0.9697039], rtol=1e-5)


def test_softmax_output_label_smoothing_and_soft_labels():
    x = rand((3, 4), seed=0, dtype="float32")
    lab = np.array([0, 2, 3], dtype="float32")
    p, g = _smo_grad(x, lab, smooth_alpha=0.1)
    t = np.full((3, 4), 0.1 / 3)
    t[np.arange(3), [0, 2, 3]] = 0.9
    close(g, p - t, rtol=1e-5, atol=1e-6)
    soft = np_softmax(rand((3, 4), seed=1)).astype("float32")
    p, g = _smo_grad(x, soft)
    close(g, p - soft, rtol=1e-5, atol=1e-6)


def test_softmax_output_multi_output():
    x = rand((2, 3, 4), seed=0, dtype="float32")
    lab = np.array([[0, 2, 1, 1], [1, 1, 0, 2]], dtype="float32")
    p, g = _smo_grad(x, lab, multi_output=True)
    close(p, np_softmax(x.astype("float64"), axis=1), rtol=1e-5)
    oh = np.eye(3)[lab.astype(int)].transpose(0, 2, 1)
    close(g, (p - oh) / 4, rtol=1e-5, atol=1e-6)
    _, g = _smo_grad(x, lab, multi_output=True, normalization="batch")
    close(g, (p - oh) / 8, rtol=1e-5, atol=1e-6)
    _, g = _smo_grad(x, lab, multi_output=True, normalization="valid", use_ignore=True, ignore_label=1)
    close(g, (p - oh) * (lab != 1)[:, None, :] / 4, rtol=1e-5, atol=1e-6)


def test_softmax_output_preserve_shape_and_out_grad():
    x = rand((2, 4, 3), seed=1, dtype="float32")
    lab = np.array([[0, 2, 1, 1], [1, 1, 0, 2]], dtype="float32")
    p, g = _smo_grad(x, lab, preserve_shape=True, normalization="batch")
    close(p, np_softmax(x.astype("float64"), axis=-1), rtol=1e-5)
    oh = np.eye(3)[lab.astype(int)]
    close(g, (p - oh) / 8, rtol=1e-5, atol=1e-6)
    p, g = _smo_grad(x, lab, preserve_shape=True, out_grad=True)
    close(g, (p - oh) * 7, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode,axis", [("instance", -1), ("channel", 1)])
def test_softmax_activation(mode, axis):
    x = rand((2, 3, 4), seed=29)
    y = nd.SoftmaxActivation(A(x), mode=mode)
    close(y, np_softmax(x, axis=axis), rtol=1e-10)
    w = rand((2, 3, 4), seed=30)
    got = bwd._backward_SoftmaxActivation(A(w), y, mode=mode)
    want = num_grad(lambda v: nd.SoftmaxActivation(A(v), mode=mode).asnumpy(), [x], 0, w)
    close(got, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("op,bname", [("LinearRegressionOutput", "_backward_linear_reg_out"),
                                      ("MAERegressionOutput", "_backward_mae_reg_out"),
                                      ("LogisticRegressionOutput", "_backward_logistic_reg_out")])
def test_regression_outputs(op, bname):
    x, lab = rand((4, 3), seed=31), rand((4, 3), seed=32)
    y = getattr(nd, op)(A(x), A(lab), grad_scale=3)
    want = 1 / (1 + np.exp(-x)) if op.startswith("Logistic") else x
    close(y, want, rtol=1e-12)
    g = getattr(bwd, bname)(A(lab), y, grad_scale=3)
    d = y.asnumpy() - lab
    close(g, np.sign(d) if op.startswith("MAE") else d, rtol=1e-12)  # 3 / num_output(3) = 1
    # label without the trailing unit axis
    x1, l1 = rand((5, 1), seed=33), rand((5,), seed=34)
    y1 = getattr(nd, op)(A(x1), A(l1))
    g1 = getattr(bwd, bname)(A(l1), y1)
    assert g1.shape == (5, 1)


def test_block_grad_make_loss_forward_identity():
    x = rand((3, 4), seed=35)
    for f in (nd.BlockGrad, nd.stop_gradient, nd.make_loss, nd.MakeLoss):
        close(f(A(x)), x, rtol=0)


def test_backward_make_loss_normalizations():
    x = rand((3, 4), seed=0)
    close(bwd._backward_MakeLoss(A(x)), np.ones((3, 4)))
    close(bwd._backward_MakeLoss(A(x), grad_scale=2), np.full((3, 4), 2.0))
    close(bwd._backward_MakeLoss(A(x), normalization="batch"), np.full((3, 4), 1 / 3))
    close(bwd._backward_MakeLoss(A(x), normalization="valid", valid_thresh=0.5), np.full((3, 4), 1 / (x > 0.5).sum()))


def test_sum_axis_is_registered():
    x = rand((3, 4), seed=36)
    close(nd.sum_axis(A(x), axis=1), x.sum(axis=1), rtol=1e-12)


# ---- bad inputs ---------------------------------------------------------------------

def test_bad_act_type():
    x = A(rand((2, 3), seed=37))
    expect_error(lambda: nd.Activation(x, act_type="foo"), "Activation", ["act_type"], [x])
    expect_error(lambda: nd.LeakyReLU(x, act_type="relu6"), "LeakyReLU", ["act_type"], [x])


def test_activation_needs_float_and_act_type():
    xi = A(np.arange(6).reshape(2, 3), "int32")
    expect_error(lambda: nd.Activation(xi, act_type="relu"), "Activation", ["int32"], [xi])
    x = A(rand((2, 3), seed=38))
    expect_error(lambda: nd.Activation(x), "Activation", ["act_type"], [x])


def test_bad_gamma_shapes():
    x, g, b, mm, mv = [A(v) for v in _bn_inputs((2, 3, 4), 1)]
    g4 = A(np.ones(4, dtype="float32"))
    expect_error(lambda: nd.BatchNorm(x, g4, b, mm, mv), "BatchNorm", ["gamma", "(4,)", "(3,)"], [x, g4, b, mm, mv])
    expect_error(lambda: nd.BatchNorm(x, g, b, g4, mv), "BatchNorm", ["moving_mean", "(4,)"], [x, g, b, g4, mv])
    expect_error(lambda: nd.BatchNorm(x, g, b, mm, mv, axis=3), "BatchNorm", ["axis"], [x, g, b, mm, mv])
    expect_error(lambda: nd.LayerNorm(x, g, b), "LayerNorm", ["gamma", "(3,)", "(4,)"], [x, g, b])
    expect_error(lambda: nd.InstanceNorm(x, g4, g4), "InstanceNorm", ["gamma", "(4,)", "(3,)"], [x, g4])
    x2 = A(np.ones((2, 3), dtype="float32"))
    expect_error(lambda: nd.InstanceNorm(x2, g, b), "InstanceNorm", ["rank 3"], [x2, g, b])
    # gamma broadcasts over the data's first two axes (MXNet's rule): (2,) is one
    # slope per sample of (2, 3, 4); (5,) fits neither axis
    g5 = A(np.ones(5, dtype="float32"))
    expect_error(lambda: nd.LeakyReLU(x, g5, act_type="prelu"), "LeakyReLU", ["gamma", "(5,)", "(2, 3, 4)"], [x, g5])


def test_bad_label_shapes():
    x = A(rand((3, 4), seed=39))
    l2 = A(np.array([1.0, 2.0]))
    expect_error(lambda: nd.SoftmaxOutput(x, l2), "SoftmaxOutput", ["label", "(2,)", "(3,)"], [x, l2])
    expect_error(lambda: nd.LinearRegressionOutput(x, l2), "LinearRegressionOutput", ["label", "(2,)"], [x, l2])
    l12 = A(np.ones(12))
    expect_error(lambda: nd.MAERegressionOutput(x, l12), "MAERegressionOutput", ["label", "(12,)"], [x, l12])


def test_dropout_p_out_of_range():
    x = A(rand((2, 3), seed=40))
    for p in (-0.1, 1.5):
        expect_error(lambda: nd.Dropout(x, p=p), "Dropout", ["p", "[0,1]"], [x])
    expect_error(lambda: nd.Dropout(x, mode="sometimes"), "Dropout", ["mode"], [x])
    expect_error(lambda: nd.Dropout(x, axes=(2,)), "Dropout", ["axes"], [x])


def test_embedding_bad_weight():
    d = A(np.array([1.0, 2.0]))
    w = A(np.ones((3, 4), dtype="float32"))
    expect_error(lambda: nd.Embedding(d, w, input_dim=3, output_dim=5), "Embedding", ["weight", "(3, 4)", "(3, 5)"], [d, w])
    expect_error(lambda: nd.Embedding(d, w, input_dim=3), "Embedding", ["output_dim"], [d, w])
    expect_error(lambda: nd.Embedding(d, w, input_dim=3, output_dim=4, dtype="float64"), "Embedding", ["dtype"], [d, w])


def test_bad_input_leaves_moving_stats_intact_in_training():
    x, g, b, mm, mv = [A(v) for v in _bn_inputs((2, 3, 4), 1)]
    bad = A(np.ones(5, dtype="float32"))
    with train_mode():
        expect_error(lambda: nd.BatchNorm(x, g, bad, mm, mv), "BatchNorm", ["beta"], [x, g, bad, mm, mv])
