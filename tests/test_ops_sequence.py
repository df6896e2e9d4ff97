"""Sequence ops (op/sequence.rs): SequenceMask, SequenceLast, SequenceReverse, with
and without sequence_length, axis 0 and 1, gradients and bad inputs. NumPy loops
written here are the oracle (values checked against MXNet 1.9.1)."""

import numpy as np
import pytest

import oxnet as mx

nd = mx.nd


def data(shape, seed=0, dtype="float64"):
    return np.random.RandomState(seed).uniform(-1, 1, size=shape).astype(dtype)


def ref_mask(x, lens, value, axis):
    y = x.copy()
    for b, n in enumerate(lens):
        if axis == 0:
            y[int(n):, b] = value
        else:
            y[b, int(n):] = value
    return y


def ref_last(x, lens, axis):
    if axis == 0:
        return np.stack([x[int(n) - 1, b] for b, n in enumerate(lens)])
    return np.stack([x[b, int(n) - 1] for b, n in enumerate(lens)])


def ref_reverse(x, lens):
    y = x.copy()
    for b, n in enumerate(lens):
        n = int(n)
        y[:n, b] = x[:n, b][::-1]
    return y


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32"])
def test_mask_and_last(axis, dtype):
    shape = (5, 3, 2) if axis == 0 else (3, 5, 2)
    x = (data(shape) * 10).astype(dtype)
    lens = np.array([2, 5, 1], dtype="float32")
    y = nd.SequenceMask(nd.array(x, dtype=dtype), nd.array(lens), use_sequence_length=True, value=-7, axis=axis)
    np.testing.assert_array_equal(y.asnumpy(), ref_mask(x, lens, -7, axis))
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(nd.SequenceMask(nd.array(x, dtype=dtype), axis=axis).asnumpy(), x)
    z = nd.SequenceLast(nd.array(x, dtype=dtype), nd.array(lens, dtype="int32"), use_sequence_length=True, axis=axis)
    np.testing.assert_array_equal(z.asnumpy(), ref_last(x, lens, axis))
    full = np.full(3, shape[axis])
    np.testing.assert_array_equal(nd.SequenceLast(nd.array(x, dtype=dtype), axis=axis).asnumpy(), ref_last(x, full, axis))


def test_reverse():
    x = np.arange(8.0).reshape(4, 2)
    y = nd.SequenceReverse(nd.array(x), nd.array([2, 3]), use_sequence_length=True)
    assert y.asnumpy().tolist() == [[2, 5], [0, 3], [4, 1], [6, 7]]
    x = data((4, 3, 2))
    np.testing.assert_array_equal(nd.SequenceReverse(nd.array(x, dtype="float64")).asnumpy(), x[::-1])
    y = nd.SequenceReverse(nd.array(x, dtype="float64"), nd.array([1, 4, 2]), use_sequence_length=True)
    np.testing.assert_array_equal(y.asnumpy(), ref_reverse(x, [1, 4, 2]))


def grad_of(fn, x, w):
    a = nd.array(x, dtype="float64")
    a.attach_grad()
    with mx.autograd.record():
        y = fn(a)
    y.backward(nd.array(w, dtype="float64"))
    return a.grad.asnumpy()


@pytest.mark.parametrize("axis", [0, 1])
def test_gradients(axis):
    shape = (4, 3, 2) if axis == 0 else (3, 4, 2)
    x = data(shape, seed=1)
    lens = nd.array([1, 4, 2])
    w = data(shape, seed=2)
    # SequenceMask is linear: its gradient is the mask applied to the head gradient
    g = grad_of(lambda a: nd.SequenceMask(a, lens, use_sequence_length=True, value=3, axis=axis), x, w)
    np.testing.assert_allclose(g, ref_mask(w, [1, 4, 2], 0, axis))
    wl = data((3, 2), seed=3)
    g = grad_of(lambda a: nd.SequenceLast(a, lens, use_sequence_length=True, axis=axis), x, wl)
    want = np.zeros(shape)
    for b, n in enumerate([1, 4, 2]):
        if axis == 0:
            want[n - 1, b] = wl[b]
        else:
            want[b, n - 1] = wl[b]
    np.testing.assert_allclose(g, want)
    if axis == 0:
        g = grad_of(lambda a: nd.SequenceReverse(a, lens, use_sequence_length=True), x, w)
        np.testing.assert_allclose(g, ref_reverse(w, [1, 4, 2]))


def test_symbolic():
    d, l = mx.sym.var("d"), mx.sym.var("l")
    s = mx.sym.SequenceLast(d, l, use_sequence_length=True)
    assert s.list_arguments() == ["d", "l"]
    _, out, _ = s.infer_shape(d=(5, 3, 4), l=(3,))
    assert out == [(3, 4)]
    s = mx.sym.SequenceMask(d)
    assert s.list_arguments() == ["d"]


def test_bad_inputs():
    x = nd.ones((4, 3))
    with pytest.raises(mx.MXNetError, match=r"SequenceMask.*sequence_length must have shape \(3,\)"):
        nd.SequenceMask(x, nd.ones((4,)), use_sequence_length=True)
    with pytest.raises(mx.MXNetError, match="SequenceLast.*axis must be 0 or 1"):
        nd.SequenceLast(x, axis=2)
    with pytest.raises(mx.MXNetError, match="SequenceReverse.*only axis=0"):
        nd.SequenceReverse(x, axis=1)
    with pytest.raises(mx.MXNetError, match="SequenceMask.*at least 2 dimensions"):
        nd.SequenceMask(nd.ones((4,)))
    assert x.asnumpy().sum() == 12
