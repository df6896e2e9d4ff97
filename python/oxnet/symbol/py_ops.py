"""The ``mx.sym`` functions MXNet 1.9.1 defines in Python over registered ops:
``arange``, ``full``, ``eye``, ``linspace``, ``split_v2``, ``histogram``."""

import numpy as np

_internal = None


def _dtype_name(dtype, default="float32"):
    if dtype is None:
        return default
    from ..base import dtype_name
    return dtype if isinstance(dtype, str) else dtype_name(dtype)


def eye(N, M=0, k=0, dtype=None, **kwargs):
    """A symbol of a 2-D array with ones on diagonal `k` and zeros elsewhere."""
    return _internal._eye(N=N, M=M, k=k, dtype=_dtype_name(dtype), **kwargs)


def full(shape, val, dtype=None, **kwargs):
    """A symbol of an array of `shape` filled with `val`."""
    if isinstance(shape, int):
        shape = (shape,)
    return _internal._full(shape=shape, dtype=_dtype_name(dtype), value=float(val), **kwargs)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None):
    """A symbol of evenly spaced values within a given interval."""
    return _internal._arange(start=start, stop=stop, step=step, repeat=repeat,
                             infer_range=infer_range, name=name, dtype=_dtype_name(dtype))


def linspace(start, stop, num, endpoint=True, name=None, dtype=None):
    """A symbol of `num` evenly spaced samples over [start, stop]."""
    return _internal._linspace(start=start, stop=stop, num=num, endpoint=endpoint,
                               name=name, dtype=_dtype_name(dtype))


def histogram(a, bins=10, range=None, **kwargs):  # noqa: A002 - MXNet's signature
    """A symbol of the histogram of `a`: (counts, bin edges)."""
    from .symbol import Symbol
    if isinstance(bins, Symbol):
        return _internal._histogram(data=a, bins=bins, **kwargs)
    if isinstance(bins, int):
        if range is None:
            raise ValueError("null range is not supported in symbol mode")
        return _internal._histogram(data=a, bin_cnt=bins,
                                    range=str(tuple(float(r) for r in range)), **kwargs)
    raise ValueError("bins argument should be either an integer or an NDArray")


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """A symbol splitting `ary` into equal sections (an int) or at indices (a tuple)."""
    indices = []
    sections = 0
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
    elif isinstance(indices_or_sections, tuple):
        indices = [0] + list(indices_or_sections)
    else:
        raise ValueError('indices_or_sections must either int or tuple of ints')
    return _internal._split_v2(ary, indices=tuple(indices), axis=axis,
                               squeeze_axis=squeeze_axis, sections=sections)
