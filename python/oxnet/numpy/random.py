"""``mx.np.random``: NumPy-style samplers over the registry's random ops (the one
generator ``mx.random.seed`` seeds)."""

import numpy as _np

from .. import ndarray as _mx_nd
from ..random import seed  # noqa: F401
from .multiarray import (_reshape_nd, _ctx_of, _is_scalar, _out, _nd_of, _cast_nd,
                         _default_float, ndarray)

__all__ = ["uniform", "normal", "randint", "choice", "shuffle", "rand", "randn", "seed"]


def _size(size):
    if size is None:
        return ()
    if isinstance(size, (int, _np.integer)):
        return (int(size),)
    return tuple(int(s) for s in size)


def _sample(op, a, b, size, dtype, ctx, out, **kw):
    if not (_is_scalar(a) and _is_scalar(b)):
        raise NotImplementedError("mx.np.random.%s: array-valued parameters are not "
                                  "supported, only scalars" % op)
    shape = _size(size)
    dtype = _default_float() if dtype is None else _np.dtype(dtype)
    res = getattr(_mx_nd.random, op)(a, b, shape=shape if shape else (1,), dtype=dtype.name,
                                     ctx=_ctx_of(ctx), **kw)
    return _out(_reshape_nd(res, shape), out)


def uniform(low=0.0, high=1.0, size=None, dtype=None, ctx=None, out=None):
    """Samples of U[low, high) of shape ``size`` (None: a zero-dim array); the default float unless
    ``dtype``."""
    return _sample("uniform", low, high, size, dtype, ctx, out)


def normal(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None, out=None):
    """Samples of N(loc, scale**2) of shape ``size`` (None: a zero-dim array)."""
    return _sample("normal", loc, scale, size, dtype, ctx, out)


def randint(low, high=None, size=None, dtype=None, ctx=None, out=None):
    """Integers in [low, high) (``high`` None: [0, low)); int64 unless ``dtype``."""
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError("low >= high")
    shape = _size(size)
    dtype = _np.dtype("int64" if dtype is None else dtype)
    res = _mx_nd.random.randint(int(low), int(high), shape=shape if shape else (1,),
                                dtype=dtype.name, ctx=_ctx_of(ctx))
    return _out(_reshape_nd(res, shape), out)


def rand(*size, **kwargs):
    """U[0, 1) samples of shape ``size``."""
    return uniform(size=size, **kwargs)


def randn(*size, **kwargs):
    """Standard normal samples of shape ``size``."""
    return normal(size=size, **kwargs)


def choice(a, size=None, replace=True, p=None, ctx=None, out=None):
    """Samples from ``a`` (a 1-D array, or an int n standing for ``arange(n)``, whose
    samples are int64): with replacement, uniformly or with probabilities ``p``;
    without replacement uniformly (``p`` with ``replace=False`` is not built)."""
    shape = _size(size)
    count = int(_np.prod(shape, dtype=_np.int64))
    if isinstance(a, (int, _np.integer)):
        n, pool = int(a), None
        if n <= 0:
            raise ValueError("a must be greater than 0 unless no samples are taken")
        c = _ctx_of(ctx)
    else:
        pool = _nd_of(a, ctx)
        if pool.ndim != 1:
            raise ValueError("a must be 1-dimensional")
        n, c = pool.shape[0], pool.context
        if n == 0:
            raise ValueError("a cannot be empty unless no samples are taken")
    if replace:
        if p is None:
            idx = _mx_nd.random.randint(0, n, shape=(count,), dtype="int64", ctx=c)
        else:
            prob = _cast_nd(_nd_of(p, c), _np.float32)
            if prob.shape != (n,):
                raise ValueError("a and p must have same size")
            pn = prob.asnumpy()
            if (pn < 0).any() or abs(float(pn.sum()) - 1.0) > 1e-5:
                raise ValueError("probabilities are not non-negative or do not sum to 1")
            idx = _cast_nd(_mx_nd.random.multinomial(prob, shape=(count,)), _np.int64)
    else:
        if p is not None:
            raise NotImplementedError("choice: p with replace=False is not supported")
        if count > n:
            raise ValueError("Cannot take a larger sample than population when "
                             "'replace=False'")
        perm = _mx_nd.random.shuffle(_mx_nd.arange(0, n, ctx=c, dtype="int64"))
        idx = _mx_nd.slice_axis(perm, axis=0, begin=0, end=count)
    res = idx if pool is None else _mx_nd.take(pool, idx)
    return _out(_reshape_nd(res, shape), out)


def shuffle(x):
    """Shuffles ``x`` in place along its first axis."""
    if not isinstance(x, ndarray):
        raise TypeError("shuffle takes an mx.np.ndarray, got %s" % type(x).__name__)
    _mx_nd.random.shuffle(x._nd).copyto(x._nd)
