"""Special functions and small math ops (op/math_special.rs): gammaln, gamma, erf,
erfinv, hard_sigmoid, smooth_l1, cumsum, moments, _histogram (mx.nd.histogram).

SciPy/NumPy are the oracle; gradients are checked against central differences of
the forward in float64; bad inputs must raise an MXNetError naming the op."""

import numpy as np
import pytest
import scipy.special as sp

import oxnet as mx
from _gradcheck import grad_check as _grad_check

nd = mx.nd


def rand(shape, seed=0, lo=-2.0, hi=2.0, dtype="float64"):
    return np.random.RandomState(seed).uniform(lo, hi, size=shape).astype(dtype)


def grad_check(fn, x, h=1e-6, rtol=1e-4, atol=1e-6, seed=1):
    _grad_check(fn, x, h=h, rtol=rtol, atol=atol, seed=seed)

SPECIAL = [
    ("gammaln", sp.gammaln, (0.2, 5.0)),
    ("gamma", sp.gamma, (0.2, 4.0)),
    ("erf", sp.erf, (-2.0, 2.0)),
    ("erfinv", sp.erfinv, (-0.95, 0.95)),
]


@pytest.mark.parametrize("name,ref,rng", SPECIAL)
@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-12), ("float16", 2e-3)])
def test_special_forward(name, ref, rng, dtype, tol):
    x = rand((3, 7), lo=rng[0], hi=rng[1], dtype=dtype)
    y = getattr(nd, name)(nd.array(x, dtype=dtype))
    assert y.dtype == np.dtype(dtype) and y.shape == x.shape
    np.testing.assert_allclose(y.asnumpy().astype("float64"), ref(x.astype("float64")), rtol=tol * 10, atol=tol)


@pytest.mark.parametrize("name,ref,rng", SPECIAL)
def test_special_gradient(name, ref, rng):
    x = rand((2, 3), seed=3, lo=rng[0], hi=rng[1])
    grad_check(getattr(nd, name), x)


def test_special_edge_values():
    y = nd.erfinv(nd.array([-1, 1, 0, 2], dtype="float64")).asnumpy()
    assert y[0] == -np.inf and y[1] == np.inf and y[2] == 0 and np.isnan(y[3])
    np.testing.assert_allclose(nd.gammaln(nd.array([-0.5, 10])).asnumpy(), sp.gammaln([-0.5, 10]), rtol=1e-5)
    # the gradient of gammaln is digamma, also for negative non-integers
    grad_check(nd.gammaln, np.array([-0.5, -1.5, 0.3, 7.0]))


def test_special_symbol():
    x = mx.sym.var("x")
    for name, ref, rng in SPECIAL:
        s = getattr(mx.sym, name)(x)
        xv = rand((4,), lo=rng[0], hi=rng[1], dtype="float32")
        ex = s.bind(mx.cpu(), {"x": nd.array(xv)})
        np.testing.assert_allclose(ex.forward()[0].asnumpy(), ref(xv), rtol=1e-4, atol=1e-5)


def test_hard_sigmoid():
    x = rand((4, 5), lo=-4, hi=4)
    for alpha, beta in [(0.2, 0.5), (0.5, 0.1)]:
        y = nd.hard_sigmoid(nd.array(x, dtype="float64"), alpha=alpha, beta=beta).asnumpy()
        np.testing.assert_allclose(y, np.clip(alpha * x + beta, 0, 1), rtol=1e-12)
        grad_check(lambda a, al=alpha, be=beta: nd.hard_sigmoid(a, alpha=al, beta=be), x[:2, :3])
    assert nd.hard_sigmoid(nd.array(x, dtype="float16")).dtype == np.float16


def test_smooth_l1():
    x = rand((3, 6), lo=-3, hi=3)
    for sigma in [1.0, 2.0, 0.5]:
        s2 = sigma ** 2
        ref = np.where(np.abs(x) < 1 / s2, 0.5 * s2 * x * x, np.abs(x) - 0.5 / s2)
        np.testing.assert_allclose(nd.smooth_l1(nd.array(x, dtype="float64"), scalar=sigma).asnumpy(), ref, rtol=1e-12)
        xs = x[0]
        xs = xs[np.abs(np.abs(xs) - 1 / s2) > 1e-3]
        grad_check(lambda a, s=sigma: nd.smooth_l1(a, scalar=s), xs)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "float16"])
@pytest.mark.parametrize("shape,axis", [((7,), None), ((3, 4, 5), None), ((3, 4, 5), 0), ((3, 4, 5), 1), ((3, 4, 5), -1), ((2, 0, 3), 1)])
def test_cumsum(dtype, shape, axis):
    x = np.random.RandomState(0).randint(-5, 6, size=shape).astype(dtype)
    y = nd.cumsum(nd.array(x, dtype=dtype), axis=axis)
    ref = np.cumsum(x, axis=axis)
    assert y.shape == ref.shape
    assert y.dtype == np.dtype(dtype)  # MXNet keeps the input dtype
    np.testing.assert_allclose(y.asnumpy().astype("float64"), ref.astype("float64"), rtol=1e-3 if dtype == "float16" else 1e-6)


def test_cumsum_dtype_and_large():
    x = np.random.RandomState(1).uniform(-1, 1, size=(1 << 18) + 77)
    y = nd.cumsum(nd.array(x, dtype="float64")).asnumpy()
    np.testing.assert_allclose(y, np.cumsum(x), rtol=1e-9, atol=1e-9)
    y = nd.cumsum(nd.array([1, 2, 3], dtype="int32"), dtype="float64")
    assert y.dtype == np.float64 and y.asnumpy().tolist() == [1, 3, 6]
    assert nd.cumsum(nd.array([[1, 2], [3, 4]]), axis=0).asnumpy().tolist() == [[1, 2], [4, 6]]
    assert mx.nd._internal._np_cumsum(nd.array([1, 2])).asnumpy().tolist() == [1, 3]


def test_cumsum_gradient():
    x = rand((3, 4), seed=5)
    grad_check(lambda a: nd.cumsum(a), x)
    grad_check(lambda a: nd.cumsum(a, axis=1), x)
    grad_check(lambda a: nd.cumsum(a, axis=0), x)


@pytest.mark.parametrize("axes,keepdims", [((0,), False), ((1, 2), True), ((0, 1, 2), False), ((-1,), True)])
def test_moments(axes, keepdims):
    x = rand((3, 4, 5), seed=2)
    m, v = nd.moments(nd.array(x, dtype="float64"), axes=axes, keepdims=keepdims)
    np.testing.assert_allclose(m.asnumpy(), np.mean(x, axis=axes, keepdims=keepdims).reshape(m.shape), rtol=1e-12)
    np.testing.assert_allclose(v.asnumpy(), np.var(x, axis=axes, keepdims=keepdims).reshape(v.shape), rtol=1e-12)
    xs = x[:2, :2, :3]
    grad_check(lambda a: nd.moments(a, axes=axes, keepdims=keepdims)[0], xs)
    grad_check(lambda a: nd.moments(a, axes=axes, keepdims=keepdims)[1], xs)


def test_histogram():
    x = np.random.RandomState(0).uniform(0, 10, size=200)
    cnt, edges = nd.histogram(nd.array(x), bins=5, range=(0, 10))
    rc, re = np.histogram(x.astype("float32"), bins=5, range=(0, 10))
    assert cnt.asnumpy().tolist() == rc.tolist() and cnt.dtype == np.int64
    np.testing.assert_allclose(edges.asnumpy(), re, rtol=1e-6)
    bins = np.array([0.0, 1.0, 4.0, 10.0])
    cnt, edges = nd.histogram(nd.array(x), bins=nd.array(bins))
    assert cnt.asnumpy().tolist() == np.histogram(x.astype("float32"), bins=bins)[0].tolist()
    # without a range NumPy chooses the bins, as in MXNet
    cnt, edges = nd.histogram(nd.array(x), bins=4)
    assert cnt.asnumpy().sum() == 200


def test_bad_inputs():
    with pytest.raises(mx.MXNetError, match="_np_cumsum.*axis 3 is out of bounds"):
        nd.cumsum(nd.ones((2, 3)), axis=3)
    with pytest.raises(mx.MXNetError, match="moments.*Empty axes is not supported"):
        nd.moments(nd.ones((2, 3)))
    with pytest.raises(mx.MXNetError, match="moments.*out of bounds"):
        nd.moments(nd.ones((2, 3)), axes=(4,))
    with pytest.raises(mx.MXNetError, match="hard_sigmoid.*Cannot find argument 'gamma'"):
        nd.hard_sigmoid(nd.ones((2,)), gamma=1)
    with pytest.raises(mx.MXNetError, match="_histogram.*range"):
        nd._internal._histogram(nd.ones((3,)), bin_cnt=3, range="(2, 1)")
    with pytest.raises(mx.MXNetError, match="_backward_erf.*shape"):
        nd._internal._backward_erf(nd.ones((2,)), nd.ones((3,)))
    a = nd.array([1.0, 2.0])
    with pytest.raises(mx.MXNetError):
        nd.cumsum(a, axis=-2)
    assert a.asnumpy().tolist() == [1.0, 2.0]
