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
