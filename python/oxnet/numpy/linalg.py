"""``mx.np.linalg``: NumPy's linear-algebra functions over the registry's ``_linalg_*``
and ``norm`` ops (float32/float64 inputs)."""

import numpy as _np

from .. import ndarray as _mx_nd
from .multiarray import (_wrap, _nd_of, _reshape_nd, _norm_axis, _reduced_shape, _is_float,
                         _cast_nd, _default_float)

__all__ = ["norm", "inv", "det", "slogdet"]


def _float_nd(a):
    nd = _nd_of(a)
    return nd if _is_float(nd.dtype) else _cast_nd(nd, _default_float())


def norm(x, ord=None, axis=None, keepdims=False):  # pylint: disable=redefined-builtin
    """NumPy's ``norm``: the 2-norm (Frobenius for matrices) over ``axis`` (None: the
    whole array), or the 1-norm of vectors with ``ord=1``; other orders are not built."""
    nd = _float_nd(x)
    axes = _norm_axis(axis, nd.ndim)
    if ord not in (None, 2, "fro", 1):
        raise NotImplementedError("linalg.norm: ord=%r is not supported" % (ord,))
    if ord == 2 and (axes is None and nd.ndim == 2 or axes is not None and len(axes) == 2):
        raise NotImplementedError("linalg.norm: the matrix 2-norm (largest singular value) "
                                  "is not supported; use ord='fro'")
    if ord == "fro" and not (axes is None and nd.ndim == 2 or axes is not None and
                             len(axes) == 2):
        raise ValueError("Invalid norm order 'fro' for vectors")
    if ord == 1:
        if axes is None and nd.ndim != 1 or axes is not None and len(axes) != 1:
            raise NotImplementedError("linalg.norm: ord=1 is supported for vectors only")
        res = _mx_nd.sum(_mx_nd.abs(nd), axis=axes[0] if axes else 0, keepdims=keepdims)
    else:
        kw = {} if axes is None else {"axis": axes}
        res = _mx_nd.norm(nd, ord=2, keepdims=bool(keepdims), **kw)
    return _wrap(_reshape_nd(res, _reduced_shape(nd.shape, axes, keepdims)))


def _square(nd, what):
    if nd.ndim < 2 or nd.shape[-1] != nd.shape[-2]:
        raise _np.linalg.LinAlgError("%s: the last 2 dimensions of the array must be square"
                                     % what)


def inv(a):
    """NumPy's ``inv``: the inverse of each square matrix in the last two axes."""
    nd = _float_nd(a)
    _square(nd, "inv")
    return _wrap(_mx_nd.linalg.inverse(nd))


def det(a):
    """NumPy's ``det``: the determinant of each square matrix in the last two axes."""
    nd = _float_nd(a)
    _square(nd, "det")
    return _wrap(_reshape_nd(_mx_nd.linalg.det(nd), nd.shape[:-2]))


def slogdet(a):
    """NumPy's ``slogdet``: ``(sign, log|det|)`` of each square matrix."""
    nd = _float_nd(a)
    _square(nd, "slogdet")
    sign, logdet = _mx_nd.linalg.slogdet(nd)
    return (_wrap(_reshape_nd(sign, nd.shape[:-2])), _wrap(_reshape_nd(logdet, nd.shape[:-2])))
