"""contrib.index_copy, contrib.index_array and contrib.allclose
(op/contrib_index.rs) against NumPy, index_copy's gradients, and bad inputs."""

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError

nd = mx.nd


def test_index_copy_and_grads():
    old = np.random.RandomState(0).randn(5, 3)
    new = np.random.RandomState(1).randn(2, 3)
    idx = np.array([4, 1])
    want = old.copy()
    want[idx] = new
    x, t = nd.array(old), nd.array(new)
    x.attach_grad()
    t.attach_grad()
    w = np.arange(15.0).reshape(5, 3)
    with mx.autograd.record():
        out = nd.contrib.index_copy(x, nd.array(idx, dtype="int64"), t)
    out.backward(nd.array(w))
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
    gx = w.copy()
    gx[idx] = 0
    np.testing.assert_allclose(x.grad.asnumpy(), gx)
    np.testing.assert_allclose(t.grad.asnumpy(), w[idx])


def test_index_array():
    shape = (2, 3, 4)
    want = np.stack(np.mgrid[tuple(slice(0, s) for s in shape)], axis=-1)
    got = nd.contrib.index_array(nd.ones(shape))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.asnumpy(), want)
    np.testing.assert_array_equal(nd.contrib.index_array(nd.ones(shape), axes=(-1, 0)).asnumpy(), want[..., [2, 0]])


def test_allclose():
    a = np.random.RandomState(2).randn(3, 4)
    assert nd.contrib.allclose(nd.array(a), nd.array(a + 1e-9)).asscalar() == 1
    assert nd.contrib.allclose(nd.array(a), nd.array(a + 1e-2)).asscalar() == 0
    assert nd.contrib.allclose(nd.array(a), nd.array(a + 1e-2), atol=0.1).asscalar() == 1


def test_bad_inputs():
    with pytest.raises(MXNetError, match="index_copy"):
        nd.contrib.index_copy(nd.ones((5, 3)), nd.array([0, 1]), nd.ones((3, 3)))
    with pytest.raises(MXNetError, match="index_copy"):
        nd.contrib.index_copy(nd.ones((5, 3)), nd.array([0, 9]), nd.ones((2, 3))).asnumpy()
    with pytest.raises(MXNetError, match="index_array"):
        nd.contrib.index_array(nd.ones((2, 3)), axes=(5,))
    with pytest.raises(MXNetError, match="allclose"):
        nd.contrib.allclose(nd.ones((2, 3)), nd.ones((3, 2)))


def adaptive_ref(x, oh, ow):
    N, C, H, W = x.shape
    y = np.zeros((N, C, oh, ow))
    for i in range(oh):
        y0, y1 = (i * H) // oh, -(-((i + 1) * H) // oh)
        for j in range(ow):
            x0, x1 = (j * W) // ow, -(-((j + 1) * W) // ow)
            y[:, :, i, j] = x[:, :, y0:y1, x0:x1].mean(axis=(2, 3))
    return y


def test_adaptive_avg_pooling():
    from _gradcheck import grad_check
    x = np.random.RandomState(5).randn(2, 2, 7, 5)
    for size, (oh, ow) in [(3, (3, 3)), ((4, 2), (4, 2)), ((), (1, 1))]:
        got = nd.contrib.AdaptiveAvgPooling2D(nd.array(x, dtype="float64"), output_size=size).asnumpy()
        np.testing.assert_allclose(got, adaptive_ref(x, oh, ow), rtol=1e-10)
    grad_check(lambda a: nd.contrib.AdaptiveAvgPooling2D(a, output_size=(3, 4)), x)
    with pytest.raises(MXNetError, match="AdaptiveAvgPooling2D"):
        nd.contrib.AdaptiveAvgPooling2D(nd.ones((2, 3, 4)), output_size=2)
