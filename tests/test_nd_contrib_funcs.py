"""mx.nd.contrib.isinf / isfinite / isnan (MXNet's Python-defined contrib functions)
against NumPy."""

import numpy as np
import pytest

import oxnet as mx


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("name", ["isinf", "isfinite", "isnan"])
def test_against_numpy(name, dtype):
    x = np.array([[np.inf, -np.inf, np.nan], [-1.5, 0.0, 7.0]], dtype=dtype)
    got = getattr(mx.nd.contrib, name)(mx.nd.array(x, dtype=dtype))
    assert got.dtype == np.dtype(dtype) and got.shape == x.shape
    np.testing.assert_array_equal(got.asnumpy(), getattr(np, name)(x).astype(dtype))


def test_integer_arrays_are_finite():
    a = mx.nd.array([1, -2, 3], dtype="int32")
    np.testing.assert_array_equal(mx.nd.contrib.isfinite(a).asnumpy(), [1, 1, 1])
    np.testing.assert_array_equal(mx.nd.contrib.isinf(a).asnumpy(), [0, 0, 0])
    np.testing.assert_array_equal(mx.nd.contrib.isnan(a).asnumpy(), [0, 0, 0])


def test_non_ndarray_input_is_rejected():
    with pytest.raises(AttributeError):
        mx.nd.contrib.isinf([1.0, np.inf])
