"""NumPy scalars on either side of an NDArray operator give NDArrays (MXNet's
behaviour), with NumPy as the oracle for the values."""

import operator

import numpy as np
import pytest

import oxnet as mx

OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
       operator.mod, operator.eq, operator.ne, operator.lt, operator.le, operator.gt,
       operator.ge]


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.__name__)
@pytest.mark.parametrize("scalar", [np.float32(2.5), np.float64(3.0), np.int32(3),
                                    np.int64(2), np.float16(1.5)], ids=repr)
def test_numpy_scalar_on_either_side(op, scalar):
    a = np.array([1.0, 2.0, 4.0], np.float32)
    x = mx.nd.array(a)
    for got, want in ((op(x, scalar), op(a, np.float32(scalar))),
                      (op(scalar, x), op(np.float32(scalar), a))):
        assert isinstance(got, mx.nd.NDArray), type(got)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got.asnumpy(), np.asarray(want, np.float32), rtol=1e-6)


def test_asscalar_round_trip_and_inplace():
    x = mx.nd.array([1.0, 5.0])
    y = x - x[0].asscalar()
    assert isinstance(y, mx.nd.NDArray)
    np.testing.assert_array_equal(y.asnumpy(), [0.0, 4.0])
    x += np.float32(1)
    x *= np.int64(2)
    assert isinstance(x, mx.nd.NDArray)
    np.testing.assert_array_equal(x.asnumpy(), [4.0, 12.0])


def test_unsupported_operands_still_fail_clearly():
    with pytest.raises(TypeError):
        mx.nd.ones(2) + object()
