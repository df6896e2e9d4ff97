"""NumPy scalars (``np.float32(2)``, ``np.int64(3)``, what ``asscalar`` returns) on either
side of an NDArray operator give NDArrays, as in MXNet: the operators take them as the
Python numbers they hold. (Without this, NumPy would turn the NDArray into a NumPy array
and answer with one.) NDArray's ``__array_priority__`` makes NumPy defer to these."""

import numpy as np

from .ndarray import NDArray

_OPS = ("__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__",
        "__rmul__", "__imul__", "__truediv__", "__rtruediv__", "__itruediv__", "__mod__",
        "__rmod__", "__imod__", "__pow__", "__rpow__", "__eq__", "__ne__", "__lt__", "__le__",
        "__gt__", "__ge__")


def _taking_numpy_scalars(name, method):
    def op(self, other):
        if isinstance(other, np.generic):
            other = other.item()
        return method(self, other)
    op.__name__ = name
    op.__doc__ = method.__doc__
    return op


def install():
    """Wraps NDArray's operators so that NumPy scalars act as Python numbers."""
    for name in _OPS:
        method = getattr(NDArray, name, None)
        if method is not None and not getattr(method, "_numpy_scalars", False):
            wrapped = _taking_numpy_scalars(name, method)
            wrapped._numpy_scalars = True
            setattr(NDArray, name, wrapped)


install()
