"""The neural-network ops on gpu(0) (kernels/cuda/nn.rs, op/cuda_nn.rs) against the CPU:
forward results, every input gradient, and the hidden/mutated state (BatchNorm's moving
statistics, Dropout's mask)."""

import numpy as np
import pytest

import oxnet as mx

from .common import GPU, rand, requires_gpu

pytestmark = requires_gpu

FLOATS = ["float32", "float64", "float16"]
# Looser than common.TOL: these ops chain several roundings (float16 above all).
NN_TOL = {"float16": (1e-2, 1e-2), "float32": (1e-4, 1e-5), "float64": (1e-10, 1e-10)}


def close(g, c, dtype, what=""):
    g, c = np.asarray(g), np.asarray(c)
    assert g.shape == c.shape, (what, g.shape, c.shape)
    assert g.dtype == c.dtype, (what, g.dtype, c.dtype)
    rtol, atol = NN_TOL[str(np.dtype(dtype))]
    np.testing.assert_allclose(g.astype("float64"), c.astype("float64"), rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def run(fn, arrays, ctx, grad_idx=None, train=True, head_seed=11, backward=True):
    """fn(*arrays) on ctx under autograd; returns (outputs, input gradients, inputs after)."""
    xs = [mx.nd.array(a, ctx=ctx, dtype=a.dtype) for a in arrays]
    idx = list(range(len(xs))) if grad_idx is None else list(grad_idx)
    for i in idx:
        xs[i].attach_grad()
    with mx.autograd.record(train_mode=train):
        out = fn(*xs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    grads = []
    if backward:
        h = rand(outs[0].shape, outs[0].dtype, -1, 1, seed=head_seed)
        outs[0].backward(mx.nd.array(h, ctx=ctx, dtype=h.dtype))
        grads = [xs[i].grad.asnumpy() for i in idx]
    return [o.asnumpy() for o in outs], grads, [x.asnumpy() for x in xs]


def check(fn, arrays, dtype, grad_idx=None, train=True, backward=True, state=()):
    """fn on gpu(0) and cpu: outputs, gradients and the inputs listed in `state` agree."""
    og, gg, xg = run(fn, arrays, GPU, grad_idx, train, backward=backward)
    oc, gc, xc = run(fn, arrays, mx.cpu(), grad_idx, train, backward=backward)
    for i, (a, b) in enumerate(zip(og, oc)):
        close(a, b, dtype, f"output {i}")
    for i, (a, b) in enumerate(zip(gg, gc)):
        close(a, b, dtype, f"gradient {i}")
    for i in state:
        close(xg[i], xc[i], dtype, f"input {i} after the call")
    return og, gg


# ---- Pooling --------------------------------------------------------------------------

POOLS = [
    ((2, 3, 8, 8), dict(kernel=(2, 2), stride=(2, 2), pool_type="max")),
    ((2, 3, 9, 9), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max")),
    ((2, 3, 7, 6), dict(kernel=(3, 3), stride=(1, 1), pad=(1, 1), pool_type="avg")),
    ((2, 3, 7, 6), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg", count_include_pad=False)),
    ((2, 3, 7, 6), dict(kernel=(2, 3), stride=(1, 2), pool_type="sum")),
    ((2, 3, 8, 8), dict(kernel=(2, 2), stride=(2, 2), pool_type="lp", p_value=2)),
    ((2, 3, 7, 7), dict(kernel=(3, 3), stride=(1, 1), pool_type="lp", p_value=3)),
    ((2, 3, 7, 7), dict(kernel=(3, 3), stride=(2, 2), pool_type="max", pooling_convention="full")),
    ((2, 3, 7, 7), dict(kernel=(3, 3), stride=(2, 2), pool_type="avg", pooling_convention="full")),
    ((2, 4, 5, 6), dict(global_pool=True, pool_type="max", kernel=(1, 1))),
    ((2, 4, 5, 6), dict(global_pool=True, pool_type="avg", kernel=(1, 1))),
    ((2, 3, 11), dict(kernel=(3,), stride=(2,), pool_type="max", pooling_convention="same")),
    ((2, 3, 11), dict(kernel=(4,), stride=(1,), pad=(2,), pool_type="avg")),
    ((1, 2, 4, 6, 5), dict(kernel=(2, 2, 2), stride=(2, 2, 2), pool_type="max")),
    ((1, 2, 4, 6, 5), dict(kernel=(2, 3, 2), stride=(1, 2, 1), pad=(1, 1, 0), pool_type="avg")),
    ((2, 8, 8, 3), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max", layout="NHWC")),
    ((2, 8, 8, 3), dict(kernel=(2, 2), stride=(2, 2), pool_type="avg", layout="NHWC")),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", range(len(POOLS)))
def test_pooling(case, dtype):
    shape, kw = POOLS[case]
    x = rand(shape, dtype, seed=case)
    check(lambda a: mx.nd.Pooling(a, **kw), [x], dtype)


def test_pooling_max_ties_go_to_the_first_maximum():
    x = np.zeros((1, 1, 4, 4), "float32")
    check(lambda a: mx.nd.Pooling(a, kernel=(2, 2), stride=(2, 2), pool_type="max"), [x], "float32")
    check(lambda a: mx.nd.Pooling(a, kernel=(3, 3), stride=(1, 1), pool_type="max"), [x], "float32")


# ---- Activation / LeakyReLU -----------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh", "softrelu", "softsign"])
def test_activation(act, dtype):
    x = rand((4, 5, 6), dtype, -4, 4, seed=1)
    x.flat[:3] = 0
    check(lambda a: mx.nd.Activation(a, act_type=act), [x], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("act", ["leaky", "elu", "selu", "gelu"])
def test_leaky_relu(act, dtype):
    x = rand((3, 4, 5), dtype, -3, 3, seed=2)
    check(lambda a: mx.nd.LeakyReLU(a, act_type=act, slope=0.3), [x], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("gshape", ["channel", "one"])
@pytest.mark.parametrize("shape", [(3, 4, 5, 2), (6, 4), (7,)])
def test_prelu(shape, gshape, dtype):
    if len(shape) == 1 and gshape == "channel":
        pytest.skip("1-D data has one channel")
    x = rand(shape, dtype, seed=3)
    ch = shape[1] if gshape == "channel" else 1
    gm = rand((ch,), dtype, 0.1, 0.5, seed=4)
    check(lambda a, g: mx.nd.LeakyReLU(a, g, act_type="prelu"), [x, gm], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_rrelu_inference_matches_cpu(dtype):
    x = rand((5, 6), dtype, seed=5)
    g = mx.nd.LeakyReLU(mx.nd.array(x, ctx=GPU, dtype=dtype), act_type="rrelu", lower_bound=0.1, upper_bound=0.3)
    c = mx.nd.LeakyReLU(mx.nd.array(x, dtype=dtype), act_type="rrelu", lower_bound=0.1, upper_bound=0.3)
    for a, b in zip(g, c):
        close(a.asnumpy(), b.asnumpy(), dtype)


def test_rrelu_training_slopes_and_gradient():
    x = rand((40, 50), "float32", seed=6)
    xa = mx.nd.array(x, ctx=GPU)
    xa.attach_grad()
    with mx.autograd.record():
        y, mask = mx.nd.LeakyReLU(xa, act_type="rrelu", lower_bound=0.1, upper_bound=0.3)
    y.backward(mx.nd.ones_like(y))
    m = mask.asnumpy()
    assert (m >= 0.1).all() and (m < 0.3 + 1e-7).all() and m.std() > 0.03
    np.testing.assert_allclose(y.asnumpy(), np.where(x > 0, x, m * x), rtol=1e-6)
    np.testing.assert_allclose(xa.grad.asnumpy(), np.where(x > 0, 1, m), rtol=1e-6)


# ---- BatchNorm ------------------------------------------------------------------------

def _bn_inputs(shape, axis, dtype, pdtype):
    ch = shape[axis]
    return [rand(shape, dtype, seed=7), rand((ch,), pdtype, 0.5, 1.5, seed=8), rand((ch,), pdtype, seed=9),
            rand((ch,), pdtype, -0.5, 0.5, seed=10), rand((ch,), pdtype, 0.5, 2, seed=11)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("fix_gamma", [False, True])
@pytest.mark.parametrize("shape,axis", [((4, 3, 5, 6), 1), ((8, 5), 1), ((2, 5, 4, 3), -1), ((3, 4, 6), 2)])
def test_batchnorm_training(shape, axis, fix_gamma, dtype):
    ins = _bn_inputs(shape, axis, dtype, dtype)
    check(lambda x, g, b, mm, mv: mx.nd.BatchNorm(x, g, b, mm, mv, axis=axis, fix_gamma=fix_gamma, momentum=0.8,
                                                  eps=1e-3, output_mean_var=True),
          ins, dtype, grad_idx=[0, 1, 2], state=(1, 3, 4))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("use_global_stats", [False, True])
def test_batchnorm_inference_and_global_stats(use_global_stats, dtype):
    ins = _bn_inputs((4, 3, 5, 5), 1, dtype, dtype)
    f = lambda x, g, b, mm, mv: mx.nd.BatchNorm(x, g, b, mm, mv, fix_gamma=False, use_global_stats=use_global_stats,
                                                output_mean_var=True)
    # Inference (no backward), then training with use_global_stats.
    check(f, ins, dtype, train=False, backward=False, state=(1, 3, 4))
    check(f, ins, dtype, grad_idx=[0, 1, 2], state=(1, 3, 4))


def test_batchnorm_float16_data_float32_parameters():
    ins = _bn_inputs((4, 3, 5, 5), 1, "float16", "float32")
    f = lambda x, g, b, mm, mv: mx.nd.BatchNorm(x, g, b, mm, mv, fix_gamma=False)
    check(f, ins, "float16", grad_idx=[0, 1, 2], state=(3, 4))


# ---- Dropout --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
def test_dropout_training(dtype):
    x = rand((50, 40), dtype, 1, 2, seed=12)
    xa = mx.nd.array(x, ctx=GPU, dtype=dtype)
    xa.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Dropout(xa, p=0.3)
    y.backward(mx.nd.ones_like(y))
    yv, gv = y.asnumpy().astype("float64"), xa.grad.asnumpy().astype("float64")
    keep = yv != 0
    assert 0.6 < keep.mean() < 0.8
    scale = 1 / (1 - 0.3)
    rtol = NN_TOL[dtype][0]
    np.testing.assert_allclose(yv[keep], x.astype("float64")[keep] * scale, rtol=rtol)
    np.testing.assert_allclose(gv, np.where(keep, scale, 0), rtol=rtol)


def test_dropout_axes_share_the_mask():
    x = np.ones((6, 7, 8), "float32")
    y = mx.nd.Dropout(mx.nd.array(x, ctx=GPU), p=0.5, axes=(1,), mode="always").asnumpy()
    assert (y == y[:, :1, :]).all()
    assert 0.2 < (y != 0).mean() < 0.8


def test_dropout_inference_is_identity_and_draws_differ():
    x = rand((30, 30), "float32", seed=13)
    xa = mx.nd.array(x, ctx=GPU)
    np.testing.assert_array_equal(mx.nd.Dropout(xa, p=0.5).asnumpy(), x)
    a = mx.nd.Dropout(xa, p=0.5, mode="always").asnumpy()
    b = mx.nd.Dropout(xa, p=0.5, mode="always").asnumpy()
    assert ((a != 0) != (b != 0)).any()
    with mx.autograd.record():
        np.testing.assert_array_equal(mx.nd.Dropout(xa, p=0.0).asnumpy(), x)


# ---- LayerNorm / InstanceNorm ----------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((4, 6, 40), -1), ((3, 70), -1), ((4, 5, 6), 1), ((5, 4, 3), 0)])
def test_layernorm(shape, axis, dtype):
    n = shape[axis]
    ins = [rand(shape, dtype, seed=14), rand((n,), dtype, 0.5, 1.5, seed=15), rand((n,), dtype, seed=16)]
    check(lambda x, g, b: mx.nd.LayerNorm(x, g, b, axis=axis, eps=1e-4, output_mean_var=True), ins, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(2, 3, 10), (3, 4, 5, 6)])
def test_instancenorm(shape, dtype):
    ch = shape[1]
    ins = [rand(shape, dtype, seed=17), rand((ch,), dtype, 0.5, 1.5, seed=18), rand((ch,), dtype, seed=19)]
    check(lambda x, g, b: mx.nd.InstanceNorm(x, g, b, eps=1e-3), ins, dtype)


# ---- SoftmaxOutput / SoftmaxActivation -------------------------------------------------

SMO = [
    ((6, 5), (6,), {}),
    ((6, 5), (6,), dict(grad_scale=2.0, normalization="batch")),
    ((6, 5), (6,), dict(use_ignore=True, ignore_label=1, normalization="valid")),
    ((6, 5), (6,), dict(smooth_alpha=0.1)),
    ((3, 4, 5), (3, 5), dict(multi_output=True)),
    ((3, 4, 5, 2), (3, 5, 2), dict(multi_output=True, normalization="batch")),
    ((3, 4, 5), (3, 5), dict(multi_output=True, use_ignore=True, ignore_label=2, normalization="valid")),
    ((3, 4, 5), (3, 4), dict(preserve_shape=True)),
    ((6, 5), (6, 5), dict(normalization="valid")),
    ((6, 5), (6,), dict(out_grad=True)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", range(len(SMO)))
def test_softmax_output(case, dtype):
    dshape, lshape, kw = SMO[case]
    x = rand(dshape, dtype, seed=20)
    if lshape == dshape:
        lab = rand(lshape, "float32", 0, 1, seed=21)
    else:
        k = dshape[-1] if kw.get("preserve_shape") else dshape[1]
        lab = np.random.default_rng(22).integers(0, k, size=lshape).astype("float32")
    check(lambda a, l: mx.nd.SoftmaxOutput(a, l, **kw), [x, lab], dtype, grad_idx=[0])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode,shape", [("instance", (4, 7)), ("instance", (2, 3, 40)), ("channel", (2, 5, 3, 4))])
def test_softmax_activation(mode, shape, dtype):
    x = rand(shape, dtype, seed=23)
    check(lambda a: mx.nd.SoftmaxActivation(a, mode=mode), [x], dtype)


# ---- Embedding ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("idx_dtype", ["float32", "int32", "int64"])
def test_embedding(idx_dtype, dtype):
    idx = np.array([[0, 3, 3], [9, 1, 3]], idx_dtype)
    if idx_dtype == "float32":
        idx[0, 0] = -2.5  # clipped to row 0, as on the CPU
        idx[1, 0] = 12.7  # clipped to the last row
    w = rand((10, 6), dtype, seed=24)
    check(lambda i, ww: mx.nd.Embedding(i, ww, input_dim=10, output_dim=6, dtype=dtype), [idx, w], dtype, grad_idx=[1])


# ---- L2Normalization / LRN / UpSampling / softmax_cross_entropy --------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", ["instance", "channel", "spatial"])
def test_l2_normalization(mode, dtype):
    x = rand((3, 4, 5, 2), dtype, seed=25)
    check(lambda a: mx.nd.L2Normalization(a, mode=mode, eps=1e-6), [x], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("nsize", [1, 3, 5])
def test_lrn(nsize, dtype):
    x = rand((2, 6, 3, 4), dtype, seed=26)
    check(lambda a: mx.nd.LRN(a, nsize=nsize, alpha=0.01, beta=0.75, knorm=2), [x], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", ["concat", "sum"])
def test_upsampling_nearest(mode, dtype):
    a, b = rand((2, 3, 4, 4), dtype, seed=27), rand((2, 3, 2, 2), dtype, seed=28)
    check(lambda x: mx.nd.UpSampling(x, scale=2, sample_type="nearest"), [a], dtype)
    check(lambda x, y: mx.nd.UpSampling(x, y, scale=2, sample_type="nearest", num_args=2, multi_input_mode=mode),
          [a, b], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_cross_entropy(dtype):
    x = rand((7, 5), dtype, seed=29)
    lab = np.array([0, 4, 2, 2, 1, 3, 0], "float32")
    check(lambda a, l: mx.nd.softmax_cross_entropy(a, l), [x, lab], dtype, grad_idx=[0])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,groups", [((2, 6, 5), 3), ((3, 4, 3, 3), 2), ((2, 4, 7), 1)])
def test_groupnorm(shape, groups, dtype):
    ins = [rand(shape, dtype, seed=30), rand((groups,), dtype, 0.5, 1.5, seed=31), rand((groups,), dtype, seed=32)]
    check(lambda x, g, b: mx.nd.GroupNorm(x, g, b, num_groups=groups, eps=1e-4, output_mean_var=True), ins, dtype)
