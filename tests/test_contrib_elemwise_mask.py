"""contrib quadratic and gradientmultiplier (op/contrib_elemwise.rs) and
boolean_mask with its data-dependent output shape (op/contrib_mask.rs), imperative,
under autograd, in a symbol and in a hybridized block. NumPy is the oracle."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import gluon
from _gradcheck import grad_check

nd = mx.nd


# ---- quadratic / gradientmultiplier ---------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_quadratic_forward(dtype):
    x = np.random.RandomState(0).randn(3, 4).astype(dtype)
    y = nd.contrib.quadratic(nd.array(x, dtype=dtype), a=0.5, b=-2, c=3)
    assert y.dtype == np.dtype(dtype)
    tol = 1e-2 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(y.asnumpy(), 0.5 * x * x - 2 * x + 3, rtol=tol, atol=tol)
    np.testing.assert_array_equal(nd.contrib.quadratic(nd.array(x)).asnumpy(), np.zeros((3, 4)))


def test_quadratic_gradient():
    grad_check(lambda a: nd.contrib.quadratic(a, a=1.5, b=-0.7, c=2.0), np.random.RandomState(1).randn(2, 3))


def test_gradientmultiplier():
    x = np.random.RandomState(2).randn(2, 5)
    y = nd.contrib.gradientmultiplier(nd.array(x, dtype="float64"), scalar=-0.3)
    np.testing.assert_array_equal(y.asnumpy(), x)
    grad_check(lambda a: nd.contrib.gradientmultiplier(nd.contrib.quadratic(a, a=1, b=2), scalar=1.0),
               np.random.RandomState(3).randn(3))
    a = nd.array(x)
    a.attach_grad()
    with mx.autograd.record():
        y = nd.contrib.gradientmultiplier(nd.contrib.quadratic(a, a=2.0, b=1.0, c=0.5), scalar=-0.3)
    y.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), (4 * x + 1) * -0.3, rtol=1e-5)
    # through a symbol
    s = mx.sym.contrib.gradientmultiplier(mx.sym.contrib.quadratic(mx.sym.Variable("data"), a=2.0, b=1.0), scalar=0.25)
    g = nd.zeros(x.shape)
    exe = s.bind(mx.cpu(), args={"data": nd.array(x)}, args_grad={"data": g})
    exe.forward(is_train=True)
    exe.backward(nd.ones(x.shape))
    np.testing.assert_allclose(g.asnumpy(), (4 * x + 1) * 0.25, rtol=1e-5)


def test_quadratic_bad_inputs():
    with pytest.raises(mx.MXNetError, match="quadratic"):
        nd.contrib.quadratic(nd.ones(3), a="x")
    with pytest.raises(mx.MXNetError, match="gradientmultiplier"):
        nd.contrib.gradientmultiplier(nd.ones(3), scalar="big")


# ---- boolean_mask --------------------------------------------------------------------------

def test_boolean_mask_imperative():
    data = np.arange(24, dtype="float32").reshape(4, 3, 2)
    for axis, index in [(0, [0, 1, 1, 0]), (1, [1, 0, 1]), (-1, [0, 1]), (0, [0, 0, 0, 0])]:
        out = nd.contrib.boolean_mask(nd.array(data), nd.array(index), axis=axis)
        ref = np.compress(np.array(index) != 0, data, axis=axis)
        assert out.shape == ref.shape
        np.testing.assert_array_equal(out.asnumpy(), ref)
    # integer data and index
    out = nd.contrib.boolean_mask(nd.array([[1, 2], [3, 4]], dtype="int32"), nd.array([1, 0], dtype="int32"))
    np.testing.assert_array_equal(out.asnumpy(), [[1, 2]])


def test_boolean_mask_waits_for_pending_index():
    # the index is the result of an op pushed just before: its values are read in order
    idx = nd.array([0, 1, 1]) * 1 + nd.array([1, -1, 0])
    out = nd.contrib.boolean_mask(nd.array([[1, 2], [3, 4], [5, 6]]), idx)
    np.testing.assert_array_equal(out.asnumpy(), [[1, 2], [5, 6]])


def test_boolean_mask_gradient():
    data = np.random.RandomState(4).randn(4, 3)
    index = nd.array([1, 0, 1, 1])
    grad_check(lambda a: nd.contrib.boolean_mask(a, index), data)
    a = nd.array(data)
    a.attach_grad()
    with mx.autograd.record():
        y = nd.contrib.boolean_mask(a, index) * 2
    y.backward()
    np.testing.assert_array_equal(a.grad.asnumpy(), [[2] * 3, [0] * 3, [2] * 3, [2] * 3])


class _Mask(gluon.HybridBlock):
    def hybrid_forward(self, F, data, index):
        return F.contrib.boolean_mask(data, index) + 1


def test_boolean_mask_hybridized_block():
    block = _Mask()
    block.hybridize()
    data = nd.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    data.attach_grad()
    for index, rows in [([0, 1, 1], [1, 2]), ([1, 0, 0], [0])]:
        with mx.autograd.record():
            out = block(data, nd.array(index))
        out.backward()
        np.testing.assert_array_equal(out.asnumpy(), data.asnumpy()[rows] + 1)
        grad = np.zeros((3, 3))
        grad[rows] = 1
        np.testing.assert_array_equal(data.grad.asnumpy(), grad)
    # inference (no recording) too
    np.testing.assert_array_equal(block(data, nd.array([1, 1, 0])).asnumpy(), data.asnumpy()[:2] + 1)


def test_boolean_mask_symbol_shape_unknown():
    s = mx.sym.contrib.boolean_mask(mx.sym.Variable("data"), mx.sym.Variable("index"))
    arg, out, _ = s.infer_shape_partial(data=(3, 4), index=(3,))
    assert arg == [(3, 4), (3,)]
    assert out[0] in ((0, 4), (), None) or 0 in out[0]


def test_boolean_mask_bad_inputs():
    with pytest.raises(mx.MXNetError, match="boolean_mask.*1-D"):
        nd.contrib.boolean_mask(nd.ones((3, 2)), nd.ones((3, 1)))
    with pytest.raises(mx.MXNetError, match="boolean_mask.*does not match"):
        nd.contrib.boolean_mask(nd.ones((3, 2)), nd.ones((2,)))
    with pytest.raises(mx.MXNetError, match="boolean_mask.*axis"):
        nd.contrib.boolean_mask(nd.ones((3, 2)), nd.ones((3,)), axis=2)
