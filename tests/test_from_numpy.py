"""mx.nd.from_numpy: a copy with zero_copy=False; zero_copy=True (adopting NumPy's
memory) is not built yet and says so."""

import numpy as np
import pytest

import oxnet as mx


@pytest.mark.parametrize("src", [
    np.array([[1, 2], [3, 4], [5, 6]], dtype="float32"),
    np.array((1,)).reshape(()),
    np.array(()).reshape((1, 0, 2)),
    np.arange(6, dtype="int32").reshape(2, 3),
])
def test_copy_keeps_values_shape_and_dtype(src):
    a = mx.nd.from_numpy(src, zero_copy=False)
    assert a.shape == src.shape and a.dtype == src.dtype
    np.testing.assert_array_equal(a.asnumpy(), src)
    if src.size:
        a[:] = 0  # a copy: the source is untouched
        assert src.flags["WRITEABLE"] and np.any(src != 0)


def test_zero_copy_checks_contiguity_then_refuses_clearly():
    src = np.array([[1, 2], [3, 4], [5, 6]]).transpose()
    with pytest.raises(ValueError):
        mx.nd.from_numpy(src)
    src = np.ones((2, 2), dtype="float32")
    with pytest.raises(mx.base.MXNetError, match="zero_copy=False"):
        mx.nd.from_numpy(src)
    assert src.flags["WRITEABLE"]  # left as it was


def test_bad_inputs():
    with pytest.raises(TypeError):
        mx.nd.from_numpy([1, 2], zero_copy=False)
    with pytest.raises(ValueError):
        mx.nd.from_numpy(np.ones(2), zero_copy=False, array_cls=list)
