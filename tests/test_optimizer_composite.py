"""Adamax, Nadam, FTML, SGLD, DCASGD, LBSGD, LARS, Test, ccSGD against NumPy
implementations of the update rules MXNet 1.9.1 documents."""

import math

import numpy as np
import pytest

import oxnet as mx
from oxnet import optimizer as opt

SHAPE = (3, 4)


def _arrays(dtype=np.float32):
    w = np.random.uniform(0.1, 1, SHAPE).astype(dtype)
    g = np.random.uniform(-1, 1, SHAPE).astype(dtype)
    return w, g


def _steps(o, w, grads):
    wn = mx.nd.array(w, dtype=w.dtype)
    state = o.create_state_multi_precision(0, wn)
    for g in grads:
        o.update_multi_precision(0, wn, mx.nd.array(g, dtype=g.dtype), state)
    return wn.asnumpy(), state


def _prep(g, w, rescale, wd, clip):
    g = g * rescale + wd * w
    return np.clip(g, -clip, clip) if clip is not None else g


@pytest.mark.parametrize("kw", [{}, dict(wd=0.05, rescale_grad=0.5, clip_gradient=0.3)])
def test_adamax(kw):
    w, g = _arrays()
    grads = [g, g * 0.5]
    got, _ = _steps(opt.Adamax(**kw), w, grads)
    lr, b1, b2 = 0.002, 0.9, 0.999
    m, u, x = np.zeros(SHAPE), np.zeros(SHAPE), w.astype(np.float64)
    for t, gr in enumerate(grads, 1):
        gg = _prep(gr, x, kw.get("rescale_grad", 1), kw.get("wd", 0), kw.get("clip_gradient"))
        m = b1 * m + (1 - b1) * gg
        u = np.maximum(b2 * u, np.abs(gg))
        x = x - lr / (1 - b1 ** t) * m / u
    np.testing.assert_allclose(got, x, rtol=1e-5, atol=1e-6)


def test_nadam():
    w, g = _arrays()
    grads = [g, -g, g * 2]
    got, _ = _steps(opt.Nadam(wd=0.01), w, grads)
    lr, b1, b2, eps, sd = 0.001, 0.9, 0.999, 1e-8, 0.004
    m, v, x, sched = np.zeros(SHAPE), np.zeros(SHAPE), w.astype(np.float64), 1.0
    for t, gr in enumerate(grads, 1):
        gg = gr + 0.01 * x
        mt = b1 * (1 - 0.5 * 0.96 ** (t * sd))
        mt1 = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * sd))
        sched *= mt
        m = b1 * m + (1 - b1) * gg
        v = b2 * v + (1 - b2) * gg * gg
        mbar = (1 - mt) * gg / (1 - sched) + mt1 * m / (1 - sched * mt1)
        x = x - lr * mbar / (np.sqrt(v / (1 - b2 ** t)) + eps)
    np.testing.assert_allclose(got, x, rtol=1e-5, atol=1e-6)


def test_ftml():
    w, g = _arrays()
    grads = [g, g * 0.3]
    got, state = _steps(opt.FTML(beta1=0.5, clip_gradient=0.6), w, grads)
    lr, b1, b2, eps = 0.0025, 0.5, 0.999, 1e-8
    d, v, z, x = np.zeros(SHAPE), np.zeros(SHAPE), np.zeros(SHAPE), w.astype(np.float64)
    for t, gr in enumerate(grads, 1):
        gg = np.clip(gr, -0.6, 0.6)
        v = b2 * v + (1 - b2) * gg * gg
        dt = (1 - b1 ** t) / lr * (np.sqrt(v / (1 - b2 ** t)) + eps)
        z = b1 * z + (1 - b1) * gg - (dt - b1 * d) * x
        d = dt
        x = -z / d
    np.testing.assert_allclose(got, x, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(state[0].asnumpy(), d, rtol=1e-4)


def test_sgld_is_reproducible_under_a_seed_and_has_the_right_noise_scale():
    w, g = _arrays(np.float64)
    mx.random.seed(7)
    a, _ = _steps(opt.SGLD(learning_rate=0.01), w, [g])
    mx.random.seed(7)
    b, _ = _steps(opt.SGLD(learning_rate=0.01), w, [g])
    np.testing.assert_array_equal(a, b)
    noise = a - (w - 0.01 / 2 * g)
    assert abs(noise.std() - 0.1) < 0.06       # N(0, sqrt(lr))
    big = mx.nd.zeros((20000,), dtype="float64")
    o = opt.SGLD(learning_rate=0.04)
    o.update(0, big, mx.nd.zeros((20000,), dtype="float64"), None)
    assert abs(big.asnumpy().std() - 0.2) < 0.01


def test_dcasgd_with_and_without_momentum():
    w, g = _arrays()
    for mom in (0.0, 0.9):
        got, _ = _steps(opt.DCASGD(momentum=mom, lamda=0.1, learning_rate=0.1), w, [g, g])
        x, prev = w.astype(np.float64), w.astype(np.float64)
        m = np.zeros(SHAPE)
        for gr in (g, g):
            step = -0.1 * (gr + 0.1 * gr * gr * (x - prev))
            m = mom * m + step if mom else step
            prev = x.copy()
            x = x + m
        np.testing.assert_allclose(got, x, rtol=1e-5, atol=1e-6)


def test_lbsgd_accumulates_then_steps_with_warmup():
    w, g = _arrays()
    o = opt.LBSGD(learning_rate=0.1, batch_scale=2, warmup_epochs=1, updates_per_epoch=4)
    wn = mx.nd.array(w)
    state = o.create_state(0, wn)
    o.update(0, wn, mx.nd.array(g), state)
    np.testing.assert_allclose(wn.asnumpy(), w)          # first half of a large batch
    o.update(0, wn, mx.nd.array(g * 3), state)
    mult = 1.0 + (2 - 1) * 2 / 4.0                       # linear warm-up after 2 updates
    np.testing.assert_allclose(wn.asnumpy(), w - 0.1 * mult * (g + 3 * g) / 2, rtol=1e-5)
    assert o._get_lbmult(10) == 2.0


def test_lars_scales_the_rate_by_the_norm_ratio():
    w, g = _arrays()
    o = opt.LARS(learning_rate=0.1, eta=0.01, param_idx2name={0: "fc_weight", 1: "fc_bias"})
    got, _ = _steps(o, w, [g])
    ratio = 0.01 * np.linalg.norm(w) / np.linalg.norm(g)
    np.testing.assert_allclose(got, w - 0.1 * ratio * g, rtol=1e-4)
    b = mx.nd.array(w)
    o.update(1, b, mx.nd.array(g), None)                 # biases keep the plain rate
    np.testing.assert_allclose(b.asnumpy(), w - 0.1 * g, rtol=1e-5)


def test_test_optimizer_ccsgd_and_registry():
    w, g = _arrays()
    got, state = _steps(opt.Test(rescale_grad=2.0), w, [g])
    np.testing.assert_allclose(got, w + 2 * g, rtol=1e-6)
    np.testing.assert_allclose(state.asnumpy(), got)
    for name in ("adamax", "nadam", "ftml", "sgld", "dcasgd", "lbsgd", "lars", "test", "ccsgd"):
        assert isinstance(opt.create(name), opt.Optimizer)
    a, _ = _steps(opt.ccSGD(momentum=0.9, learning_rate=0.1), w, [g, g])
    b, _ = _steps(opt.SGD(momentum=0.9, learning_rate=0.1), w, [g, g])
    np.testing.assert_array_equal(a, b)


def test_learning_rate_with_a_scheduler():
    sched = mx.lr_scheduler.FactorScheduler(step=1, base_lr=1024)
    assert opt.Optimizer(lr_scheduler=sched).learning_rate == 1024
    sched = mx.lr_scheduler.FactorScheduler(step=1)
    o = opt.Optimizer(lr_scheduler=sched, learning_rate=0.3)
    assert o.learning_rate == 0.3
    sched.base_lr = 0.4
    assert o.learning_rate == 0.4
    with pytest.raises(UserWarning):
        o.set_learning_rate(0.5)
    assert opt.Optimizer().learning_rate == 0.01


def test_aggregated_update_equals_one_by_one():
    ws = [np.random.rand(2, 3).astype(np.float32) for _ in range(3)]
    gs = [np.random.rand(2, 3).astype(np.float32) for _ in range(3)]
    o1, o2 = opt.Adamax(), opt.Adamax()
    a = [mx.nd.array(w) for w in ws]
    b = [mx.nd.array(w) for w in ws]
    st = [o1.create_state_multi_precision(i, a[i]) for i in range(3)]
    o1.update_multi_precision([0, 1, 2], a, [mx.nd.array(g) for g in gs], st)
    for i in range(3):
        s = o2.create_state_multi_precision(i, b[i])
        o2.update_multi_precision(i, b[i], mx.nd.array(gs[i]), s)
        np.testing.assert_array_equal(a[i].asnumpy(), b[i].asnumpy())


def test_float16_with_multi_precision_keeps_a_float32_master():
    w, g = _arrays(np.float16)
    got, state = _steps(opt.Adamax(multi_precision=True), w, [g])
    assert got.dtype == np.float16 and state[0].dtype == np.float32
    want, _ = _steps(opt.Adamax(), w.astype(np.float32), [g.astype(np.float32)])
    np.testing.assert_allclose(got, want.astype(np.float16), rtol=1e-3, atol=1e-3)
    assert math.isfinite(float(got.sum()))
