"""Index-family operators (take, pick, where, one_hot, topk, sort, argsort, gather_nd,
scatter_nd) through the Python API, checked against NumPy with MXNet 1.9.1's
conventions (confirmed with the MXNet oracle): indices come back as float32 unless a
``dtype`` is given; ``take``'s default mode is 'clip'; 'raise' rejects negative
indices too; topk with k<=0 returns the whole axis."""

import numpy as np
import pytest

import oxnet as mx


def _check(got, want, rtol=0, atol=0):
    assert isinstance(got, mx.nd.NDArray)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.dtype(got.dtype) == want.dtype, (got.dtype, want.dtype)
    if rtol or atol:
        np.testing.assert_allclose(got.asnumpy(), want, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(got.asnumpy(), want)


def _data(shape, dtype="float32"):
    return (np.arange(int(np.prod(shape))) % 97).astype(dtype).reshape(shape)


def _distinct(shape, dtype="float32", seed=0):
    n = int(np.prod(shape))
    return np.random.RandomState(seed).permutation(n).reshape(shape).astype(dtype)


# ---------------------------------------------------------------------------
# take


def np_take(x, idx, axis=0, mode="clip"):
    n = x.shape[axis]
    idx = np.asarray(idx)
    if np.issubdtype(idx.dtype, np.floating):
        idx = np.trunc(idx)  # MXNet casts float indices to int
    idx = idx.astype(np.int64)
    if mode == "wrap":
        idx = np.mod(idx, n)
    else:
        idx = np.clip(idx, 0, n - 1)
    return np.take(x, idx, axis=axis)


@pytest.mark.parametrize("mode", ["clip", "wrap", "raise"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("idx_shape", [(4,), (2, 3), ()])
def test_take_modes_axes(mode, axis, idx_shape):
    x = _data((3, 4, 5))
    n = x.shape[axis]
    rs = np.random.RandomState(abs(axis) * 7 + len(idx_shape))
    if mode == "raise":
        idx = rs.randint(0, n, size=idx_shape or (1,))
    else:
        idx = rs.randint(-2 * n, 2 * n, size=idx_shape or (1,))
    idx = idx.reshape(idx_shape) if idx_shape else idx
    got = mx.nd.take(mx.nd.array(x), mx.nd.array(idx), axis=axis, mode=mode)
    _check(got, np_take(x, idx, axis, mode))


def test_take_default_mode_is_clip_and_axis_0():
    x = _data((3, 4))
    idx = np.array([0, -1, 5, 2])
    _check(mx.nd.take(mx.nd.array(x), mx.nd.array(idx)), np_take(x, idx, 0, "clip"))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "float16"])
@pytest.mark.parametrize("idx_dtype", ["float32", "int32", "int64", "float64", "uint8"])
def test_take_dtypes(dtype, idx_dtype):
    x = _data((4, 3), dtype)
    idx = np.array([[3, 0], [1, 1]])
    got = mx.nd.take(mx.nd.array(x, dtype=dtype), mx.nd.array(idx, dtype=idx_dtype))
    _check(got, np.take(x, idx, axis=0))


def test_take_float_indices_truncate():
    x = _data((3, 4))
    _check(mx.nd.take(mx.nd.array(x), mx.nd.array([0, 1.7, 2.2])), x[[0, 1, 2]])
    _check(mx.nd.take(mx.nd.array(x), mx.nd.array([-1.7, 2.2]), mode="wrap"), x[[2, 2]])


def test_take_raise_in_range_and_fluent():
    x = _data((3, 4))
    a = mx.nd.array(x)
    _check(mx.nd.take(a, mx.nd.array([2, 0]), mode="raise"), x[[2, 0]])
    _check(a.take(mx.nd.array([1, 1]), axis=1), x[:, [1, 1]])


def test_take_large():
    x = np.random.RandomState(1).rand(1000, 130).astype(np.float32)
    idx = np.random.RandomState(2).randint(0, 1000, size=900)
    _check(mx.nd.take(mx.nd.array(x), mx.nd.array(idx, dtype="int64")), x[idx])
    idx2 = np.random.RandomState(3).randint(0, 130, size=(70,))
    _check(mx.nd.take(mx.nd.array(x), mx.nd.array(idx2), axis=1), x[:, idx2])


# ---------------------------------------------------------------------------
# pick


def np_pick(x, idx, axis=-1, keepdims=False, mode="clip"):
    axis = axis % x.ndim
    n = x.shape[axis]
    idx = np.asarray(idx).astype(np.int64)
    idx = np.mod(idx, n) if mode == "wrap" else np.clip(idx, 0, n - 1)
    idx = idx.reshape([s if d != axis else 1 for d, s in enumerate(x.shape)])
    r = np.take_along_axis(x, idx, axis=axis)
    return r if keepdims else np.squeeze(r, axis=axis)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_pick(axis, keepdims, mode):
    x = _data((3, 4, 5))
    n = x.shape[axis]
    oshape = [s for d, s in enumerate(x.shape) if d != axis % 3]
    idx = np.random.RandomState(axis + 5).randint(-n - 2, 2 * n, size=oshape)
    got = mx.nd.pick(mx.nd.array(x), mx.nd.array(idx), axis=axis, keepdims=keepdims, mode=mode)
    _check(got, np_pick(x, idx, axis, keepdims, mode))


def test_pick_defaults_and_keepdims_index():
    x = _data((3, 4))
    a = mx.nd.array(x)
    _check(mx.nd.pick(a, mx.nd.array([0, 2, 3])), x[[0, 1, 2], [0, 2, 3]])
    # an index with a unit axis where the picked axis was is accepted too
    _check(mx.nd.pick(a, mx.nd.array([[0], [2], [1]])), x[[0, 1, 2], [0, 2, 1]])
    _check(a.pick(mx.nd.array([1, 1, 1, 0]), axis=0), x[[1, 1, 1, 0], [0, 1, 2, 3]])


@pytest.mark.parametrize("dtype", ["float64", "int32", "float16"])
def test_pick_dtypes(dtype):
    x = _data((3, 4), dtype)
    idx = np.array([3, 0, 1])
    _check(mx.nd.pick(mx.nd.array(x, dtype=dtype), mx.nd.array(idx, dtype="int32")),
           x[[0, 1, 2], idx])


# ---------------------------------------------------------------------------
# where


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8"])
def test_where_same_shape(dtype):
    rs = np.random.RandomState(4)
    cond = rs.randint(-1, 2, size=(3, 4)).astype(np.float32)
    x, y = _data((3, 4), dtype), (_data((3, 4), dtype) * 2 + 1).astype(dtype)
    got = mx.nd.where(mx.nd.array(cond), mx.nd.array(x, dtype=dtype), mx.nd.array(y, dtype=dtype))
    _check(got, np.where(cond != 0, x, y))


def test_where_1d_condition_selects_rows():
    x, y = _data((2, 3)), -_data((2, 3))
    got = mx.nd.where(mx.nd.array([1, 0]), mx.nd.array(x), mx.nd.array(y))
    _check(got, np.where(np.array([1, 0])[:, None] != 0, x, y))


@pytest.mark.parametrize("cdtype", ["int32", "float64", "uint8"])
def test_where_condition_dtype(cdtype):
    cond = np.array([[1, 0], [0, 2]], cdtype)
    x, y = np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32)
    _check(mx.nd.where(mx.nd.array(cond, dtype=cdtype), mx.nd.array(x), mx.nd.array(y)),
           np.where(cond != 0, x, y))


def test_where_nan_condition_is_true_and_large():
    cond = np.array([np.nan, 0, -0.0, 3], np.float32)
    x, y = np.arange(4, dtype=np.float32), -np.ones(4, np.float32)
    _check(mx.nd.where(mx.nd.array(cond), mx.nd.array(x), mx.nd.array(y)), np.where(cond != 0, x, y))
    rs = np.random.RandomState(5)
    c = rs.randint(0, 2, size=(300, 300)).astype(np.float32)
    a, b = rs.rand(300, 300).astype(np.float32), rs.rand(300, 300).astype(np.float32)
    _check(mx.nd.where(mx.nd.array(c), mx.nd.array(a), mx.nd.array(b)), np.where(c != 0, a, b))


# ---------------------------------------------------------------------------
# one_hot


def np_one_hot(idx, depth, on=1.0, off=0.0, dtype="float32"):
    idx = np.trunc(np.asarray(idx, np.float64)).astype(np.int64)
    out = np.full(idx.shape + (depth,), off, dtype=np.float64)
    for pos in np.ndindex(*idx.shape):
        if 0 <= idx[pos] < depth:
            out[pos + (idx[pos],)] = on
    return out.astype(dtype)


@pytest.mark.parametrize("idx", [[0, 2, 1, 5, -1], [[0, 2], [1, 1]], [0.7, 2.2], [[[3]]]])
@pytest.mark.parametrize("depth", [3, 4, 1])
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64", "uint8"])
def test_one_hot(idx, depth, dtype):
    _check(mx.nd.one_hot(mx.nd.array(idx), depth=depth, dtype=dtype), np_one_hot(idx, depth, dtype=dtype))


def test_one_hot_on_off_values_and_default_dtype():
    idx = [[0, 2], [1, 1]]
    _check(mx.nd.one_hot(mx.nd.array(idx), depth=3, on_value=5, off_value=-1),
           np_one_hot(idx, 3, 5, -1))
    _check(mx.nd.one_hot(mx.nd.array(idx), 3), np_one_hot(idx, 3))
    _check(mx.nd.one_hot(mx.nd.array(idx, dtype="int32"), depth=0), np.zeros((2, 2, 0), np.float32))
    _check(mx.nd.array([1, 0]).one_hot(2), np_one_hot([1, 0], 2))


# ---------------------------------------------------------------------------
# topk / sort / argsort


def np_topk_indices(x, axis, k, is_ascend):
    order = np.argsort(x if is_ascend else -x, axis=axis, kind="stable")
    n = x.shape[axis]
    k = n if k <= 0 else k
    return np.take(order, np.arange(k), axis=axis)


@pytest.mark.parametrize("axis", [-1, 0, 1, 2])
@pytest.mark.parametrize("k", [1, 2, 3, 0])
@pytest.mark.parametrize("is_ascend", [False, True])
def test_topk_all_ret_types(axis, k, is_ascend):
    x = _distinct((3, 4, 5), seed=abs(axis) + k)
    a = mx.nd.array(x)
    kw = dict(axis=axis, k=k, is_ascend=is_ascend)
    ind = np_topk_indices(x, axis, k, is_ascend)
    val = np.take_along_axis(x, ind, axis=axis)
    _check(mx.nd.topk(a, **kw), ind.astype(np.float32))
    _check(mx.nd.topk(a, ret_typ="indices", **kw), ind.astype(np.float32))
    _check(mx.nd.topk(a, ret_typ="value", **kw), val)
    both = mx.nd.topk(a, ret_typ="both", **kw)
    assert isinstance(both, list) and len(both) == 2
    _check(both[0], val)
    _check(both[1], ind.astype(np.float32))
    mask = np.zeros_like(x)
    np.put_along_axis(mask, ind, 1, axis=axis)
    _check(mx.nd.topk(a, ret_typ="mask", **kw), mask)


def test_topk_defaults_and_fluent():
    x = np.array([[3, 1, 4, 1], [5, 9, 2, 6]], np.float32)
    a = mx.nd.array(x)
    _check(mx.nd.topk(a), np.array([[2], [1]], np.float32))
    _check(a.topk(), np.array([[2], [1]], np.float32))
    _check(a.topk(k=2, ret_typ="value"), np.array([[4, 3], [9, 6]], np.float32))
    _check(a.topk(k=-1), np.array([[2, 0, 1, 3], [1, 3, 0, 2]], np.float32))


def test_topk_axis_none_flattens():
    x = _distinct((3, 4), seed=3)
    ind = np.argsort(-x.ravel(), kind="stable")[:5]
    _check(mx.nd.topk(mx.nd.array(x), axis=None, k=5), ind.astype(np.float32))
    _check(mx.nd.topk(mx.nd.array(x), axis=None, k=5, ret_typ="value"), x.ravel()[ind])


@pytest.mark.parametrize("dtype", ["int32", "int64", "float64", "float16", "uint8"])
def test_topk_index_dtype_and_data_dtype(dtype):
    x = _distinct((2, 6), seed=4)
    ind = np_topk_indices(x, -1, 3, False)
    got = mx.nd.topk(mx.nd.array(x), k=3, dtype=dtype)
    _check(got, ind.astype(dtype))
    v, i = mx.nd.topk(mx.nd.array(x, dtype=dtype), k=3, ret_typ="both")
    _check(v, np.take_along_axis(x, ind, -1).astype(dtype))
    _check(i, ind.astype(np.float32))


def test_topk_mask_keeps_data_dtype():
    x = _distinct((2, 5), "int32", seed=6)
    ind = np_topk_indices(x, -1, 2, False)
    mask = np.zeros_like(x)
    np.put_along_axis(mask, ind, 1, axis=-1)
    _check(mx.nd.topk(mx.nd.array(x, dtype="int32"), k=2, ret_typ="mask"), mask)


def test_topk_ties_take_the_lower_index_first():
    x = np.array([[3, 1, 4, 1], [5, 5, 2, 5]], np.float32)
    _check(mx.nd.topk(mx.nd.array(x), k=3), np.array([[2, 0, 1], [0, 1, 3]], np.float32))
    _check(mx.nd.topk(mx.nd.array(x), k=2, is_ascend=True), np.array([[1, 3], [2, 0]], np.float32))


@pytest.mark.parametrize("axis", [-1, 0, 1, None])
@pytest.mark.parametrize("is_ascend", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "float16"])
def test_sort_argsort(axis, is_ascend, dtype):
    x = np.random.RandomState(7).randint(0, 9, size=(4, 6)).astype(dtype)  # has ties
    kw = dict(is_ascend=is_ascend, axis=axis)
    xs = x.ravel() if axis is None else x
    ax = -1 if axis is None else axis
    order = np.argsort(xs if is_ascend else -xs.astype(np.float64), axis=ax, kind="stable")
    _check(mx.nd.sort(mx.nd.array(x, dtype=dtype), **kw), np.take_along_axis(xs, order, ax))
    _check(mx.nd.argsort(mx.nd.array(x, dtype=dtype), **kw), order.astype(np.float32))
    _check(mx.nd.argsort(mx.nd.array(x, dtype=dtype), dtype="int32", **kw), order.astype(np.int32))


def test_sort_defaults_and_fluent():
    x = _distinct((3, 5), seed=8)
    a = mx.nd.array(x)
    _check(mx.nd.sort(a), np.sort(x, axis=-1))
    _check(a.sort(axis=0, is_ascend=False), -np.sort(-x, axis=0))
    _check(mx.nd.argsort(a), np.argsort(x, axis=-1).astype(np.float32))
    _check(a.argsort(axis=0), np.argsort(x, axis=0).astype(np.float32))


def test_sort_topk_large():
    x = np.random.RandomState(9).rand(300, 257).astype(np.float32)
    a = mx.nd.array(x)
    _check(mx.nd.sort(a), np.sort(x, axis=-1))
    _check(mx.nd.sort(a, axis=0), np.sort(x, axis=0))
    _check(mx.nd.argsort(a, axis=0), np.argsort(x, axis=0, kind="stable").astype(np.float32))
    ind = np_topk_indices(x, -1, 10, False)
    _check(mx.nd.topk(a, k=10), ind.astype(np.float32))
    _check(mx.nd.topk(a, k=10, ret_typ="value"), np.take_along_axis(x, ind, -1))


def test_sort_nan_and_inf():
    x = np.array([3, -np.inf, 1, np.inf, 0], np.float32)
    _check(mx.nd.sort(mx.nd.array(x)), np.sort(x))
    _check(mx.nd.sort(mx.nd.array(x), is_ascend=False), np.sort(x)[::-1])


# ---------------------------------------------------------------------------
# gather_nd / scatter_nd


def test_gather_nd():
    x = _data((3, 4, 2))
    idx = np.array([[0, 2, 1], [1, 3, 0]])
    _check(mx.nd.gather_nd(mx.nd.array(x), mx.nd.array(idx)), x[tuple(idx)])
    idx1 = np.array([[2, 0, 1]])
    _check(mx.nd.gather_nd(mx.nd.array(x), mx.nd.array(idx1, dtype="int32")), x[tuple(idx1)])


def test_scatter_nd():
    data = np.array([5, 6], np.float32)
    idx = np.array([[0, 2], [1, 3]])
    want = np.zeros((3, 4), np.float32)
    want[tuple(idx)] = data
    _check(mx.nd.scatter_nd(mx.nd.array(data), mx.nd.array(idx), shape=(3, 4)), want)


# ---------------------------------------------------------------------------
# inputs are views


def test_index_ops_read_views():
    x = _data((4, 5))
    a = mx.nd.array(x)
    _check(mx.nd.take(a[1:3], mx.nd.array([1, 0])), x[1:3][[1, 0]])
    _check(mx.nd.sort(a[2], is_ascend=False), np.sort(x[2])[::-1])
    _check(mx.nd.pick(a[1:4], mx.nd.array([0, 4, 2])), x[1:4][[0, 1, 2], [0, 4, 2]])


# ---- gradients of topk and sort (the values go back where they came from) -----------

@pytest.mark.parametrize("axis", [0, 1, -1, None])
@pytest.mark.parametrize("ret_typ", ["value", "both"])
def test_topk_gradient(axis, ret_typ):
    from _gradcheck import grad_check
    x = np.random.RandomState(3).permutation(24).reshape(4, 6).astype("float64")

    def fn(a):
        out = mx.nd.topk(a, axis=axis, k=2, ret_typ=ret_typ, is_ascend=False)
        return out[0] if ret_typ == "both" else out
    grad_check(fn, x)


def test_topk_indices_and_mask_have_zero_gradient():
    a = mx.nd.array(np.arange(6.0).reshape(2, 3))
    for rt in ("indices", "mask"):
        a.attach_grad()
        with mx.autograd.record():
            y = mx.nd.topk(a, k=2, ret_typ=rt)
        y.backward()
        assert (a.grad.asnumpy() == 0).all()


@pytest.mark.parametrize("axis", [0, -1, None])
@pytest.mark.parametrize("is_ascend", [True, False])
def test_sort_gradient(axis, is_ascend):
    from _gradcheck import grad_check
    x = np.random.RandomState(4).permutation(20).reshape(4, 5).astype("float64")
    grad_check(lambda a: mx.nd.sort(a, axis=axis, is_ascend=is_ascend), x)


# ---- gradients of gather_nd / take: repeated indices accumulate ---------------------

def test_gather_nd_gradient_accumulates_repeats():
    from _gradcheck import grad_check
    x = np.random.RandomState(5).standard_normal((4, 3, 2))
    idx = mx.nd.array([[0, 2, 0, 3], [1, 1, 1, 0]])
    grad_check(lambda a: mx.nd.gather_nd(a, idx), x)
    a = mx.nd.array(x)
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.gather_nd(a, idx)
    y.backward()
    want = np.zeros_like(x)
    np.add.at(want, ([0, 2, 0, 3], [1, 1, 1, 0]), 1.0)
    np.testing.assert_allclose(a.grad.asnumpy(), want)


def test_backward_gather_nd_and_scatter_nd():
    data = mx.nd.array([1.0, 2.0, 3.0])
    idx = mx.nd.array([[0, 1, 0]])
    out = mx.nd._internal._backward_gather_nd(data, idx, shape=(3,))
    np.testing.assert_allclose(out.asnumpy(), [4.0, 2.0, 0.0])
    from _gradcheck import grad_check
    grad_check(lambda d: mx.nd.scatter_nd(d, mx.nd.array([[2, 0]]), shape=(4,)), np.array([1.5, -2.0]))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("axis", [0, 1])
def test_take_gradient_any_dtype(dtype, axis):
    x = np.arange(12).reshape(3, 4).astype(dtype)
    a = mx.nd.array(x, dtype=dtype)
    idx = mx.nd.array([2, 0, 2])
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.take(a, idx, axis=axis)
    y.backward(mx.nd.ones(y.shape, dtype=dtype))
    want = np.zeros(x.shape)
    for i in [2, 0, 2]:
        if axis == 0:
            want[i] += 1
        else:
            want[:, i] += 1
    np.testing.assert_array_equal(a.grad.asnumpy(), want.astype(dtype))
