"""Indexing: views for first-axis ints and step-1 slices (sharing memory as in
MXNet), copies otherwise; assignment through every kind of key."""

import numpy as np
import pytest

import oxnet as mx


def _arr(shape=(4, 5)):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    return x, mx.nd.array(x)


def test_int_and_slice_are_views():
    x, a = _arr()
    v = a[1]
    np.testing.assert_array_equal(v.asnumpy(), x[1])
    v[:] = -1
    assert (a.asnumpy()[1] == -1).all()
    s = a[1:3]
    assert s.shape == (2, 5)
    s += 100
    assert (a.asnumpy()[2] == x[2] + 100).all()
    np.testing.assert_array_equal(a[-1].asnumpy(), x[-1])
    np.testing.assert_array_equal(a[-3:-1].asnumpy(), a.asnumpy()[-3:-1])
    assert a[3:1].shape == (0, 5)


@pytest.mark.parametrize("key", [
    (1, 2), (0,), (slice(0, 1), 1), (1, slice(None, None, 2)), (slice(None, None, 2),),
    (slice(None), slice(1, 4)), (Ellipsis, 1), (slice(3, 0, -1), slice(None, None, -2)),
    slice(None, None, 2), slice(None, None, -1), (-1, -1),
])
def test_basic_keys_against_numpy(key):
    x, a = _arr()
    want = x[key]
    got = a[key]
    if np.ndim(want) == 0:
        want = np.array([want])
    np.testing.assert_array_equal(got.asnumpy(), want)


def test_three_d_leading_ints_are_views():
    x, a = _arr((2, 3, 4))
    v = a[1, 2]
    np.testing.assert_array_equal(v.asnumpy(), x[1, 2])
    v[:] = 0
    assert (a.asnumpy()[1, 2] == 0).all()


def test_out_of_range_raises_index_error_and_mxnet_error():
    _, a = _arr()
    for key in [4, -5, (0, 5), (7, 0)]:
        with pytest.raises(IndexError):
            a[key]
        with pytest.raises(mx.base.MXNetError, match="out of bounds"):
            a[key]
    with pytest.raises(mx.base.MXNetError):
        a[0, 0, 0]
    np.testing.assert_array_equal(a.asnumpy(), _arr()[0])


@pytest.mark.parametrize("value", [7, 2.5, np.arange(5), [[1, 2, 3, 4, 5]], "nd"])
def test_setitem_full_and_rows(value):
    x, a = _arr()
    if isinstance(value, str):
        value = mx.nd.arange(5)
        np_value = np.arange(5)
    else:
        np_value = value
    a[:] = value
    x[:] = np_value
    np.testing.assert_array_equal(a.asnumpy(), x)
    a[2] = value if not isinstance(value, list) else value[0]
    x[2] = np_value if not isinstance(np_value, list) else np_value[0]
    np.testing.assert_array_equal(a.asnumpy(), x)


def test_setitem_bad_shape_is_mxnet_error_and_keeps_data():
    x, a = _arr()
    with pytest.raises(mx.base.MXNetError):
        a[:] = np.ones((3, 3))
    np.testing.assert_array_equal(a.asnumpy(), x)


def test_readonly_array_refuses_writes():
    _, a = _arr()
    r = a._with_writable(False)
    with pytest.raises(ValueError):
        r[:] = 1
    with pytest.raises(ValueError):
        r += 1


# -- None (newaxis), contiguous views, advanced keys, autograd ----------------------

NEWAXIS_KEYS = [
    None, (None, 0), (0, None, slice(1, 3)), (Ellipsis, None), (None, Ellipsis, 1),
    (slice(None), None, slice(None, None, 2)), (1, None, -1, None),
]


@pytest.mark.parametrize("key", NEWAXIS_KEYS)
def test_newaxis_get_and_set_against_numpy(key):
    x, a = _arr((3, 4, 5))
    want = x[key]
    got = a[key].asnumpy()
    np.testing.assert_array_equal(got, want if np.ndim(want) else np.array([want]))
    x[key] = -7
    a[key] = -7
    np.testing.assert_array_equal(a.asnumpy(), x)
    val = np.arange(np.prod(np.shape(x[key])), dtype=np.float32).reshape(np.shape(x[key]))
    x[key] = val
    a[key] = mx.nd.array(val)
    np.testing.assert_array_equal(a.asnumpy(), x)


def test_setitem_with_newaxis_ignores_none():
    x, a = _arr((2, 3, 4))
    a[None, 0, None, None, 0, 0, None] = 1
    x[None, 0, None, None, 0, 0, None] = 1
    np.testing.assert_array_equal(a.asnumpy(), x)


def test_basic_indexing_slice_is_contiguous_matches_numpy_flags():
    import itertools
    f = mx.nd.NDArray._basic_indexing_slice_is_contiguous
    x = np.zeros((4, 5, 6))
    slices = [slice(None), slice(2), slice(1, 3), slice(None, None, 2), slice(0, 1),
              slice(None, None, -1), slice(3, None, -2), slice(3, 3)]
    for key in itertools.product(slices, repeat=3):
        assert f(key, x.shape) == x[key].flags.contiguous, key


def test_contiguous_basic_keys_are_views_others_copies():
    x, a = _arr((4, 5, 6))
    v = a[1:3, :, :]
    v[:] = -1
    assert (a.asnumpy()[1:3] == -1).all()
    w = a[2, 1:4]
    w[:] = -2
    assert (a.asnumpy()[2, 1:4] == -2).all()
    before = a.asnumpy()
    c = a[:, 1]  # not contiguous: a copy
    c[:] = -99
    np.testing.assert_array_equal(a.asnumpy(), before)


def test_assign_row_of_same_array():
    x, a = _arr((4, 5))
    a[0] = a[1]
    x[0] = x[1]
    np.testing.assert_array_equal(a.asnumpy(), x)
    a[1].copyto(a[2])
    x[2] = x[1]
    np.testing.assert_array_equal(a.asnumpy(), x)


def test_copyto_self_warns_and_returns_false():
    _, a = _arr()
    with pytest.warns(RuntimeWarning):
        assert a.copyto(a) is False


ADVANCED_KEYS = [
    [1, 2], [-1, 0], np.array([[0, 2], [1, 1]]), (1, [2, 3]), ([0, 1], slice(1, 3), [2, 3]),
    ([0, 1], None, [1, 2]), (slice(None), [0, 2], None, 1), (None, [1], [[2], [3]]),
    ([[1]], 2, slice(0, 5, 2)), (Ellipsis, [4, 0]),
]


@pytest.mark.parametrize("key", ADVANCED_KEYS)
def test_advanced_get_and_set_against_numpy(key):
    x, a = _arr((3, 4, 5))
    np.testing.assert_array_equal(a[key].asnumpy(), x[key])
    x[key] = -3
    a[key] = -3
    np.testing.assert_array_equal(a.asnumpy(), x)
    shape = x[key].shape
    val = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    x[key] = val
    a[key] = val
    np.testing.assert_array_equal(a.asnumpy(), x)
    x[key] = val[..., -1:]
    a[key] = mx.nd.array(val[..., -1:])  # broadcast
    np.testing.assert_array_equal(a.asnumpy(), x)


def test_advanced_key_as_ndarray_and_repeated_index():
    x, a = _arr((4, 3))
    idx = mx.nd.array([3, 1], dtype="int32")
    np.testing.assert_array_equal(a[idx].asnumpy(), x[[3, 1]])
    a[[1, 1], [0, 0]] = mx.nd.array([5, 6])
    x[[1, 1], [0, 0]] = [5, 6]  # the last write wins
    np.testing.assert_array_equal(a.asnumpy(), x)


def test_bad_keys_raise_index_errors():
    _, a = _arr((3, 4))
    for key in [[0, 3], ([0], [4]), (Ellipsis, Ellipsis), (0, 0, 0), ([0, 1], [0, 1, 2])]:
        with pytest.raises(mx.base.MXNetError):
            a[key]
        with pytest.raises(IndexError):
            a[key] = 1
    with pytest.raises(ValueError):
        a[::0]
    with pytest.raises(mx.base.MXNetError):
        a[[0, 1]] = np.ones((3, 4))


def test_setitem_of_recorded_value_while_recording_is_refused():
    x = mx.nd.zeros((3, 4))
    y = mx.nd.ones((4,))
    y.attach_grad()
    for key, n in [(0, 4), ((slice(None), 1), 3), ([0, 2], 4), ((1, slice(0, 4, 2)), 2)]:
        with mx.autograd.record():
            with pytest.raises(mx.base.MXNetError, match="Inplace operations"):
                x[key] = y[:n]
    with mx.autograd.record():
        x[:] = mx.nd.ones((3, 4)) * 2  # not recorded: nothing to refuse
        x[None] = y.reshape((1, 4)) * 1  # the whole array: a recorded copy, as in MXNet
    assert (x.asnumpy() == 1).all()


def test_boolean_numpy_key_selects_nonzero_positions():
    x, a = _arr((3, 4))
    m = x % 3 == 0
    np.testing.assert_array_equal(a[m].asnumpy(), x[m])
    row = np.array([True, False, True])
    np.testing.assert_array_equal(a[row].asnumpy(), x[row])
    np.testing.assert_array_equal(a[row, 1:3].asnumpy(), x[row, 1:3])
    a[m] = -1
    x[m] = -1
    np.testing.assert_array_equal(a.asnumpy(), x)
    with pytest.raises(IndexError, match="boolean index did not match"):
        a[np.array([True, False])]


def test_mxnet_indexing_helpers():
    f = mx.nd.indexing_key_expand_implicit_axes
    s = slice(None)
    assert f(np.s_[2, 1, 1], (3, 4, 5)) == (2, 1, 1)
    assert f(np.s_[0], (3, 4, 5)) == (0, s, s)
    assert f(np.s_[0, ...], (3, 4, 5)) == (0, s, s)
    assert f(np.s_[:2, None, 0, ...], (3, 4, 5)) == (slice(None, 2), None, 0, s)
    m = np.array([[True, False, True, False], [False, True, False, True], [True, False, True, False]])
    k = f(np.s_[m, None, 0:2], (3, 4, 5))
    np.testing.assert_array_equal(k[0], [0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(k[1], [0, 2, 1, 3, 0, 2])
    assert k[2:] == (None, slice(0, 2))
    with pytest.raises(IndexError):
        f((Ellipsis, 0, Ellipsis), (3, 4))
    with pytest.raises(IndexError):
        f((0, 0, 0), (3, 4))
    g = mx.nd.get_indexing_dispatch_code
    assert g((0, slice(None), None)) == 0
    assert g((0, [1, 2])) == 1 and g((mx.nd.array([1]),)) == 1 and g((np.array([1]), 0)) == 1
    assert g(((), 0)) == 2
    with pytest.raises(ValueError):
        g((1.5,))
    with pytest.raises(ValueError):
        mx.nd.zeros((2, 2))["a"]
    assert mx.nd.get_oshape_of_gather_nd_op((5, 6, 7), (2, 3, 4)) == (3, 4, 7)
    assert mx.nd.get_oshape_of_gather_nd_op((5, 6), (2, 3)) == (3,)


def test_assign_overlapping_rows_of_same_array():
    x, a = _arr((5, 3))
    a[0:3] = a[1:4]
    x[0:3] = x[1:4].copy()
    np.testing.assert_array_equal(a.asnumpy(), x)
    a[1:4] = a[0:3]
    x[1:4] = x[0:3].copy()
    np.testing.assert_array_equal(a.asnumpy(), x)
    a[2] = a[2]
    np.testing.assert_array_equal(a.asnumpy(), x)


def test_assign_sparse_into_dense_densifies():
    import oxnet as _mx
    a = _mx.nd.ones((3, 4))
    s = _mx.nd.sparse.csr_matrix((_mx.nd.array([1., 2.]), _mx.nd.array([0, 2], dtype="int64"),
                                  _mx.nd.array([0, 1, 1, 2], dtype="int64")), shape=(3, 4))
    a[:] = s
    np.testing.assert_array_equal(a.asnumpy(), s.asnumpy())
    a[:] = _mx.nd.sparse.zeros("row_sparse", (3, 4))
    assert a.asnumpy().sum() == 0
