"""Shape and layout ops (op/layout_ops.rs) and the Python helpers over them:
diag, depth_to_space, space_to_depth, slice_like, shape_array, size_array,
split_v2, add_n/ElementWiseSum, batch_take, ravel_multi_index, unravel_index,
linspace, Pad, khatri_rao, onehot_encode, fill_element_0index, choose_element_0index,
moveaxis, the inplace methods, and extra keyword arguments of parameterless ops.
NumPy is the oracle (values checked against MXNet 1.9.1)."""

import numpy as np
import pytest

import oxnet as mx
from _gradcheck import grad_check

nd = mx.nd


def rand(shape, seed=0, dtype="float64"):
    return np.random.RandomState(seed).uniform(-1, 1, size=shape).astype(dtype)



@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8"])
def test_diag(dtype):
    v = (np.arange(4) + 1).astype(dtype)
    for k in [0, 1, -2]:
        np.testing.assert_array_equal(nd.diag(nd.array(v, dtype=dtype), k=k).asnumpy(), np.diag(v, k))
    m = (np.arange(12).reshape(3, 4)).astype(dtype)
    for k in [0, 2, -1, 4, -3]:
        np.testing.assert_array_equal(nd.diag(nd.array(m, dtype=dtype), k=k).asnumpy(), np.diag(m, k))
    t = np.arange(60).reshape(3, 4, 5).astype(dtype)
    for (a1, a2, k) in [(0, 1, 0), (1, 2, 1), (2, 0, -1), (-1, -2, 2)]:
        np.testing.assert_array_equal(nd.diag(nd.array(t, dtype=dtype), k=k, axis1=a1, axis2=a2).asnumpy(),
                                      np.diagonal(t, offset=k, axis1=a1, axis2=a2))


def test_diag_grad():
    grad_check(lambda a: nd.diag(a, k=1), rand((3,)))
    grad_check(lambda a: nd.diag(a, k=-1), rand((3, 4)))
    grad_check(lambda a: nd.diag(a, k=1, axis1=1, axis2=2), rand((2, 3, 3)))


def d2s_ref(x, b):
    n, c, h, w = x.shape
    y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return y.reshape(n, c // (b * b), h * b, w * b)


def s2d_ref(x, b):
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
def test_depth_space(dtype):
    x = np.arange(2 * 8 * 3 * 2).reshape(2, 8, 3, 2).astype(dtype)
    np.testing.assert_array_equal(nd.depth_to_space(nd.array(x, dtype=dtype), block_size=2).asnumpy(), d2s_ref(x, 2))
    y = np.arange(2 * 3 * 4 * 6).reshape(2, 3, 4, 6).astype(dtype)
    np.testing.assert_array_equal(nd.space_to_depth(nd.array(y, dtype=dtype), block_size=2).asnumpy(), s2d_ref(y, 2))
    r = nd.depth_to_space(nd.space_to_depth(nd.array(y, dtype=dtype), block_size=2), block_size=2)
    np.testing.assert_array_equal(r.asnumpy(), y)
    grad_check(lambda a: nd.depth_to_space(a, block_size=2), rand((1, 4, 2, 1)))
    grad_check(lambda a: nd.space_to_depth(a, block_size=2), rand((1, 1, 2, 4)))


def test_slice_like():
    x = rand((4, 5, 6))
    like = nd.zeros((2, 3, 4))
    np.testing.assert_array_equal(nd.slice_like(nd.array(x), like).asnumpy(), x[:2, :3, :4].astype("float32"))
    np.testing.assert_array_equal(nd.slice_like(nd.array(x), like, axes=(0, -1)).asnumpy(), x[:2, :, :4].astype("float32"))
    np.testing.assert_array_equal(nd.slice_like(nd.array(x), nd.zeros((3, 2)), axes=(1,)).asnumpy(), x[:, :2].astype("float32"))
    grad_check(lambda a: nd.slice_like(a, nd.zeros((2, 2), dtype="float64")), rand((3, 4)))


def test_shape_size_array():
    a = nd.ones((2, 3, 4))
    s = nd.shape_array(a)
    assert s.dtype == np.int64 and s.asnumpy().tolist() == [2, 3, 4]
    assert nd.size_array(a).asnumpy().tolist() == [24]
    assert a.shape_array().asnumpy().tolist() == [2, 3, 4]


def test_split_v2():
    x = rand((4, 6, 3))
    for ios, axis in [(3, 1), ((1, 4), 1), ((2,), 0), (2, -1 + 3 - 2)]:
        outs = nd.split_v2(nd.array(x, dtype="float64"), ios, axis=axis)
        want = np.split(x, ios, axis=axis)
        assert len(outs) == len(want)
        for o, w in zip(outs, want):
            np.testing.assert_array_equal(o.asnumpy(), w)
    outs = nd.split_v2(nd.array(x), 4, axis=0, squeeze_axis=True)
    assert outs[0].shape == (6, 3)
    s = mx.sym.split_v2(mx.sym.var("x"), (1, 4), axis=1)
    assert len(s.list_outputs()) == 3
    _, shapes, _ = s.infer_shape(x=(4, 6, 3))
    assert shapes == [(4, 1, 3), (4, 3, 3), (4, 2, 3)]
    grad_check(lambda a: nd.split_v2(a, (1,), axis=1)[1] * 2 + nd.split_v2(a, (1,), axis=1)[0].sum(), rand((2, 3)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_add_n(dtype):
    xs = [(rand((3, 4), seed=i) * 10).astype(dtype) for i in range(4)]
    y = nd.add_n(*[nd.array(x, dtype=dtype) for x in xs])
    np.testing.assert_allclose(y.asnumpy(), sum(xs), rtol=1e-6)
    y = nd.ElementWiseSum(*[nd.array(x, dtype=dtype) for x in xs[:2]])
    np.testing.assert_allclose(y.asnumpy(), xs[0] + xs[1], rtol=1e-6)
    a = nd.array(xs[0], dtype=dtype)
    nd.add_n(a, a, out=a)
    np.testing.assert_allclose(a.asnumpy(), xs[0] * 2, rtol=1e-6)
    arrs = [nd.array(x, dtype="float64") for x in rand((3, 2, 2))]
    for v in arrs:
        v.attach_grad()
    with mx.autograd.record():
        y = nd.add_n(*arrs)
    y.backward()
    assert all(v.grad.asnumpy().tolist() == [[1, 1], [1, 1]] for v in arrs)


def test_batch_take_ravel():
    a = nd.array([[1, 2], [3, 4], [5, 6]])
    assert nd.batch_take(a, nd.array([0, 1, 5], dtype="int32")).asnumpy().tolist() == [1, 4, 6]
    idx = np.array([[1, 0, 1], [2, 1, 0]])
    r = nd.ravel_multi_index(nd.array(idx), shape=(2, 3))
    assert r.asnumpy().tolist() == np.ravel_multi_index(idx, (2, 3)).tolist()
    u = nd.unravel_index(nd.array([5, 0, 4]), shape=(2, 3))
    assert u.asnumpy().tolist() == np.array(np.unravel_index([5, 0, 4], (2, 3))).tolist()
    # beyond the shape, MXNet's C arithmetic: the leading coordinate keeps the rest
    assert nd.unravel_index(nd.array([30, -1]), shape=(2, 3)).asnumpy().tolist() == [[10, 0], [0, -1]]


def test_linspace_creation_symbols():
    np.testing.assert_allclose(nd.linspace(0, 1, 5).asnumpy(), np.linspace(0, 1, 5, dtype="float32"))
    np.testing.assert_allclose(nd.linspace(2, 3, 4, endpoint=False, dtype="float64").asnumpy(), np.linspace(2, 3, 4, endpoint=False))
    for s, want in [(mx.sym.linspace(0, 1, 3), np.linspace(0, 1, 3)), (mx.sym.arange(1, 4), np.arange(1, 4)),
                    (mx.sym.full((2, 2), 7), np.full((2, 2), 7)), (mx.sym.eye(3, k=1), np.eye(3, k=1))]:
        np.testing.assert_allclose(s.bind(mx.cpu(), {}).forward()[0].asnumpy(), want, rtol=1e-6)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
@pytest.mark.parametrize("shape", [(1, 2, 3, 4), (1, 1, 3, 3, 4)])
def test_pad(mode, shape):
    x = rand(shape)
    nd_pad = [0, 0, 0, 0] + [1, 2] * (len(shape) - 2)
    np_pad = [(0, 0), (0, 0)] + [(1, 2)] * (len(shape) - 2)
    kw = {"constant_values": 1.5} if mode == "constant" else {}
    want = np.pad(x, np_pad, mode=mode, **kw)
    y = nd.Pad(nd.array(x, dtype="float64"), mode=mode, pad_width=tuple(nd_pad), constant_value=1.5)
    np.testing.assert_allclose(y.asnumpy(), want)
    y = nd.pad(nd.array(x, dtype="float64"), mode=mode, pad_width=tuple(nd_pad), constant_value=1.5)
    np.testing.assert_allclose(y.asnumpy(), want)
    grad_check(lambda a: nd.Pad(a, mode=mode, pad_width=tuple(nd_pad)), x)


def test_khatri_onehot_fill_choose():
    a, b = np.array([[1.0, 2], [3, 4]]), np.array([[1.0, 1], [2, 2], [3, 3]])
    want = np.vstack([np.kron(a[:, i], b[:, i]) for i in range(2)]).T
    np.testing.assert_array_equal(nd.khatri_rao(nd.array(a), nd.array(b)).asnumpy(), want)
    o = nd.zeros((3, 4))
    r = nd.onehot_encode(nd.array([0, 3, 1]), o)
    assert o.asnumpy().tolist() == [[1, 0, 0, 0], [0, 0, 0, 1], [0, 1, 0, 0]] and r is o
    f = nd.fill_element_0index(nd.zeros((2, 3)), nd.array([5, 6]), nd.array([2, 0]))
    assert f.asnumpy().tolist() == [[0, 0, 5], [6, 0, 0]]
    c = nd.choose_element_0index(nd.array([[1, 2], [3, 4]]), nd.array([1, 0]))
    assert c.asnumpy().tolist() == [2, 3]


def test_moveaxis_and_inplace_methods():
    x = rand((2, 3, 4))
    for src, dst in [(0, -1), ((0, 1), (2, 0)), (-1, 0)]:
        np.testing.assert_array_equal(nd.moveaxis(nd.array(x, dtype="float64"), src, dst).asnumpy(), np.moveaxis(x, src, dst))
    a = nd.ones((2, 1, 3))
    v = a.squeeze(inplace=True)
    assert v.shape == (2, 3)
    v[:] = 5
    assert a.asnumpy().sum() == 30  # a view: writes reach the original
    assert a.squeeze(axis=1).shape == (2, 3)
    assert a.expand_dims(axis=0, inplace=True).shape == (1, 2, 1, 3)
    assert a.expand_dims(-1).shape == (2, 1, 3, 1)
    assert a.flatten(inplace=True).shape == (2, 3)


def test_parameterless_ops_ignore_extra_kwargs():
    a = nd.ones((2, 3))
    assert nd.broadcast_mul(a, a, axis=1).asnumpy().sum() == 6
    assert nd.exp(a, foo=3).shape == (2, 3)
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'foo'"):
        nd.sum(a, foo=3)


def test_bad_inputs():
    with pytest.raises(mx.MXNetError, match="diag.*Diagonal does not exist"):
        nd.diag(nd.ones((2, 3)), k=5)
    with pytest.raises(mx.MXNetError, match="diag.*same axis"):
        nd.diag(nd.ones((2, 3)), axis1=1, axis2=-1)
    with pytest.raises(mx.MXNetError, match="depth_to_space.*multiple of block_size"):
        nd.depth_to_space(nd.ones((1, 3, 2, 2)), block_size=2)
    with pytest.raises(mx.MXNetError, match="space_to_depth.*4-D"):
        nd.space_to_depth(nd.ones((3, 2, 2)), block_size=2)
    with pytest.raises(mx.MXNetError, match="slice_like.*exceeds"):
        nd.slice_like(nd.ones((2, 2)), nd.ones((3, 2)))
    with pytest.raises(mx.MXNetError, match="_split_v2.*increasing"):
        nd._internal._split_v2(nd.ones((2, 4)), indices=(0, 3, 2), axis=1)
    with pytest.raises(mx.MXNetError, match="add_n.*shape mismatch"):
        nd.add_n(nd.ones((2,)), nd.ones((3,)))
    with pytest.raises(mx.MXNetError, match="batch_take.*int32 or int64"):
        nd.batch_take(nd.ones((2, 2)), nd.array([0, 1]))
    with pytest.raises(mx.MXNetError, match=r"ravel_multi_index.*\(2, \.\.\.\)"):
        nd.ravel_multi_index(nd.ones((3, 2)), shape=(2, 3))
    with pytest.raises(mx.MXNetError, match="Pad.*first two axes"):
        nd.Pad(nd.ones((1, 1, 2, 2)), mode="edge", pad_width=(1, 1, 0, 0, 1, 1, 1, 1))
    with pytest.raises(mx.MXNetError, match="Pad.*needs the axis size"):
        nd.Pad(nd.ones((1, 1, 2, 2)), mode="reflect", pad_width=(0, 0, 0, 0, 2, 2, 1, 1))
    with pytest.raises(mx.MXNetError, match="Pad.*2\\*ndim"):
        nd.Pad(nd.ones((1, 1, 2, 2)), mode="edge", pad_width=(0, 0, 1, 1))
    with pytest.raises(mx.MXNetError, match="khatri_rao.*columns"):
        nd.khatri_rao(nd.ones((2, 2)), nd.ones((2, 3)))
    with pytest.raises(mx.MXNetError, match="_linspace.*non-negative"):
        nd.linspace(0, 1, -1)
    x = nd.ones((2, 2))
    with pytest.raises(mx.MXNetError):
        nd.add_n(x, nd.ones((3,)), out=x)
    assert x.asnumpy().sum() == 4


def test_newaxis_indexing():
    a = nd.arange(24).reshape((2, 3, 4))
    b = np.arange(24, dtype="float32").reshape(2, 3, 4)
    for k in [None, (None, 1), (slice(None), None), (1, None, slice(0, 2)), (Ellipsis, None),
              (None, Ellipsis, None, 1), (0, 1, None, 2)]:
        r = a[k]
        assert r.shape == b[k].shape, k
        np.testing.assert_array_equal(r.asnumpy(), b[k])
    with pytest.raises(mx.MXNetError):
        a[None, 5]
