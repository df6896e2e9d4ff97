"""bfloat16 on gpu(0) against the CPU's bfloat16 (both compute in float32 and round
to nearest even once per op): elementwise, reductions, casts, GEMM ops, convolution,
pooling, BatchNorm with float32 parameters, optimizer updates, a mixed-precision
training run, forward and gradients."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon
from oxnet.base import bfloat16

from .common import GPU, requires_gpu

pytestmark = requires_gpu

# One bfloat16 ulp is 2**-7 relative (8 significant bits); float32 sums in another
# order can land on the other side of a rounding boundary.
RTOL, ATOL = 2e-2, 2e-2


def f32(x):
    return x.astype("float32").asnumpy()


def rnd(shape, seed, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(np.float32)


def close(g, c, what="", rtol=RTOL, atol=ATOL):
    assert g.dtype == c.dtype == bfloat16, (what, g.dtype, c.dtype)
    assert g.context == GPU
    a, b = f32(g), f32(c)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol * max(1.0, np.abs(b).max()), err_msg=what)


def both(fn, arrays, grad=True, seed=7):
    """fn on bfloat16 copies of the float32 `arrays` on the CPU and on the GPU;
    with `grad`, the gradients of every input for the same random head gradient."""
    res = {}
    for ctx in (mx.cpu(), GPU):
        xs = [mx.nd.array(a, ctx=ctx).astype("bfloat16") for a in arrays]
        if grad:
            for x in xs:
                x.attach_grad()
            with autograd.record():
                y = fn(*xs)
            y.backward(mx.nd.array(rnd(y.shape, seed), ctx=ctx).astype("bfloat16"))
            res[ctx.device_type] = (y, [x.grad for x in xs])
        else:
            res[ctx.device_type] = (fn(*xs), [])
    (yc, gc), (yg, gg) = res["cpu"], res["gpu"]
    close(yg, yc, "output")
    for i, (a, b) in enumerate(zip(gg, gc)):
        close(a, b, "gradient of input %d" % i)


def test_cast_is_bit_exact_against_the_cpu():
    x = np.concatenate([rnd((4096,), 1, -1e3, 1e3), np.array([0.0, -0.0, np.inf, -np.inf, 3e38, 1e-40], np.float32)])
    g = mx.nd.array(x, ctx=GPU).astype("bfloat16")
    c = mx.nd.array(x).astype("bfloat16")
    np.testing.assert_array_equal(g.asnumpy().view(np.uint16), c.asnumpy().view(np.uint16))
    np.testing.assert_array_equal(f32(g), f32(c))
    # bfloat16 -> float16 / float64 / int32 on the device too.
    for d in ("float16", "float64", "int32"):
        np.testing.assert_array_equal(g.astype(d).asnumpy(), c.astype(d).asnumpy())


@pytest.mark.parametrize("op", ["exp", "relu", "sigmoid", "tanh", "sqrt", "square", "negative"])
def test_unary(op):
    low = 0.1 if op == "sqrt" else -2.0
    both(lambda x: getattr(mx.nd, op)(x), [rnd((7, 33), 2, low, 2.0)])


@pytest.mark.parametrize("op", ["elemwise_add", "elemwise_mul", "elemwise_sub", "broadcast_add", "broadcast_mul",
                                "broadcast_maximum"])
def test_binary(op):
    shape_b = (7, 33) if op.startswith("elemwise") else (1, 33)
    both(lambda x, y: getattr(mx.nd, op)(x, y), [rnd((7, 33), 3), rnd(shape_b, 4)])


def test_scalar_ops():
    both(lambda x: x * 3.5 + 1.25, [rnd((5, 9), 5)])
    both(lambda x: 2.0 / (x + 3.0), [rnd((5, 9), 6)])


@pytest.mark.parametrize("op,axis", [("sum", 1), ("mean", 0), ("max", 1), ("sum", None)])
def test_reductions(op, axis):
    both(lambda x: getattr(mx.nd, op)(x, axis=axis), [rnd((16, 40), 7)], grad=(op != "max"))


def test_softmax_and_log_softmax():
    both(lambda x: mx.nd.softmax(x, axis=-1), [rnd((6, 50), 8, -3, 3)])
    both(lambda x: mx.nd.log_softmax(x, axis=1), [rnd((6, 50), 9, -3, 3)])


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True)])
def test_dot(ta, tb):
    sa = (96, 64) if ta else (64, 96)
    sb = (40, 96) if tb else (96, 40)
    both(lambda a, b: mx.nd.dot(a, b, transpose_a=ta, transpose_b=tb), [rnd(sa, 10), rnd(sb, 11)])


def test_batch_dot():
    both(lambda a, b: mx.nd.batch_dot(a, b), [rnd((3, 20, 30), 12), rnd((3, 30, 10), 13)])


def test_fully_connected():
    both(lambda x, w, b: mx.nd.FullyConnected(x, w, b, num_hidden=24), [rnd((8, 50), 14), rnd((24, 50), 15), rnd((24,), 16)])


@pytest.mark.parametrize("stride,pad,groups", [((1, 1), (1, 1), 1), ((2, 2), (1, 1), 1), ((1, 1), (0, 0), 2)])
def test_convolution(stride, pad, groups):
    both(lambda x, w, b: mx.nd.Convolution(x, w, b, kernel=(3, 3), stride=stride, pad=pad, num_filter=8, num_group=groups),
         [rnd((2, 4, 9, 9), 17), rnd((8, 4 // groups, 3, 3), 18), rnd((8,), 19)])


@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_pooling(pool_type):
    both(lambda x: mx.nd.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type=pool_type),
         [rnd((2, 3, 10, 10), 20)])


def test_batchnorm_bfloat16_data_float32_parameters():
    x = rnd((4, 6, 5, 5), 21, -2, 3)
    gamma, beta = rnd((6,), 22, 0.5, 1.5), rnd((6,), 23)
    res = {}
    for ctx in (mx.cpu(), GPU):
        xd = mx.nd.array(x, ctx=ctx).astype("bfloat16")
        g, b = mx.nd.array(gamma, ctx=ctx), mx.nd.array(beta, ctx=ctx)
        mm, mv = mx.nd.zeros((6,), ctx=ctx), mx.nd.ones((6,), ctx=ctx)
        for v in (xd, g, b):
            v.attach_grad()
        with autograd.record():
            y = mx.nd.BatchNorm(xd, g, b, mm, mv, fix_gamma=False, momentum=0.9)
        y.backward(mx.nd.array(rnd(y.shape, 24), ctx=ctx).astype("bfloat16"))
        res[ctx.device_type] = (y, xd.grad, g.grad.asnumpy(), b.grad.asnumpy(), mm.asnumpy(), mv.asnumpy())
    c, gp = res["cpu"], res["gpu"]
    close(gp[0], c[0], "output")
    close(gp[1], c[1], "data gradient")
    for i, what in ((2, "gamma gradient"), (3, "beta gradient"), (4, "moving mean"), (5, "moving var")):
        np.testing.assert_allclose(gp[i], c[i], rtol=RTOL, atol=ATOL, err_msg=what)


def test_activation_and_softmax_output():
    both(lambda x: mx.nd.Activation(x, act_type="relu"), [rnd((5, 20), 25)])
    x, label = rnd((6, 10), 26), np.arange(6) % 10
    outs = []
    for ctx in (mx.cpu(), GPU):
        xd = mx.nd.array(x, ctx=ctx).astype("bfloat16")
        xd.attach_grad()
        with autograd.record():
            y = mx.nd.SoftmaxOutput(xd, mx.nd.array(label, ctx=ctx).astype("bfloat16"))
        y.backward()
        outs.append((y, xd.grad))
    close(outs[1][0], outs[0][0], "SoftmaxOutput")
    close(outs[1][1], outs[0][1], "SoftmaxOutput gradient")


@pytest.mark.parametrize("op", ["sgd_mom_update", "adam_update"])
def test_optimizer_updates(op):
    w, g = rnd((300,), 27), rnd((300,), 28)
    res = []
    for ctx in (mx.cpu(), GPU):
        wd = mx.nd.array(w, ctx=ctx).astype("bfloat16")
        gd = mx.nd.array(g, ctx=ctx).astype("bfloat16")
        if op == "sgd_mom_update":
            s = [mx.nd.zeros((300,), ctx=ctx, dtype="bfloat16")]
            kw = dict(lr=0.1, momentum=0.9, wd=1e-4)
        else:
            s = [mx.nd.zeros((300,), ctx=ctx, dtype="bfloat16"), mx.nd.zeros((300,), ctx=ctx, dtype="bfloat16")]
            kw = dict(lr=0.01, wd=1e-4)
        for _ in range(3):
            getattr(mx.nd, op)(wd, gd, *s, out=wd, **kw)
        res.append(wd)
    close(res[1], res[0], op)


def _train(ctx, steps=4):
    mx.random.seed(1)
    np.random.seed(1)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(8, 3, padding=1), gluon.nn.BatchNorm(), gluon.nn.Activation("relu"),
            gluon.nn.MaxPool2D(2), gluon.nn.Flatten(), gluon.nn.Dense(10))
    # Initialised on the host from the same seed, then moved: both runs start equal.
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    net(mx.nd.zeros((1, 3, 12, 12)))
    net.collect_params().reset_ctx(ctx)
    net.cast("bfloat16")
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9, "multi_precision": True})
    lossf = gluon.loss.SoftmaxCrossEntropyLoss()
    x = mx.nd.array(rnd((16, 3, 12, 12), 29), ctx=ctx).astype("bfloat16")
    y = mx.nd.array(np.arange(16) % 10, ctx=ctx).astype("bfloat16")
    losses = []
    for _ in range(steps):
        with autograd.record():
            loss = lossf(net(x), y)
        loss.backward()
        trainer.step(16)
        losses.append(float(loss.astype("float32").mean().asscalar()))
    return losses


def test_bfloat16_training_matches_the_cpu_and_learns():
    # Same initial weights on both (seeded initializer on the host, copied).
    lc, lg = _train(mx.cpu()), _train(GPU)
    np.testing.assert_allclose(lg, lc, rtol=5e-2, atol=5e-2)
    assert lg[-1] < lg[0]
