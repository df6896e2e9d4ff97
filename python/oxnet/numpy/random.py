"""``mx.np.random``: NumPy-style samplers over the registry's random ops (the one
generator ``mx.random.seed`` seeds)."""

import numpy as _np

from .. import ndarray as _mx_nd
from ..random import seed  # noqa: F401
from .multiarray import _wrap, _reshape_nd, _ctx_of, _is_scalar, _out

__all__ = ["uniform", "normal", "randint", "rand", "randn", "seed"]


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
    dtype = _np.dtype("float32" if dtype is None else dtype)
    res = getattr(_mx_nd.random, op)(a, b, shape=shape if shape else (1,), dtype=dtype.name,
                                     ctx=_ctx_of(ctx), **kw)
    return _out(_reshape_nd(res, shape), out)


def uniform(low=0.0, high=1.0, size=None, dtype=None, ctx=None, out=None):
    """Samples of U[low, high) of shape ``size`` (None: a zero-dim array); float32 unless
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
