"""Helpers for tests, after MXNet's ``mx.test_utils``."""

import numpy as np

from .context import Context, current_context


def default_context():
    """The context tests run on."""
    return current_context()


def set_default_context(ctx):
    Context._default_ctx.value = ctx


def _as_np(x):
    from .ndarray import NDArray
    return x.asnumpy() if isinstance(x, NDArray) else np.asarray(x)


def almost_equal(a, b, rtol=1e-5, atol=1e-20, equal_nan=False):
    """True when every element of a and b is close."""
    return np.allclose(_as_np(a), _as_np(b), rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal(a, b, rtol=1e-5, atol=1e-20, names=("a", "b"), equal_nan=False):
    """Raises AssertionError unless a and b (NDArrays or array-likes) are close."""
    a, b = _as_np(a), _as_np(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan,
                               err_msg="%s and %s differ" % names)


def same(a, b):
    """True when a and b are exactly equal."""
    return np.array_equal(_as_np(a), _as_np(b))


def rand_ndarray(shape, dtype="float32", ctx=None):
    from . import ndarray as nd
    return nd.array(np.random.uniform(-1, 1, size=shape), ctx=ctx, dtype=dtype)


__all__ = ["default_context", "set_default_context", "almost_equal", "assert_almost_equal",
           "same", "rand_ndarray"]
