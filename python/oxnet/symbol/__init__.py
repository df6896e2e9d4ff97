"""``mx.sym`` / ``mx.symbol``: Symbol, Variable, Group, load, and every registered
operator as a function building a symbol (generated from the registry by the same
generator as ``mx.nd``)."""

import sys as _sys
import types as _types

from ..ndarray import register as _register
from .symbol import *  # noqa: F401,F403
from .symbol import Symbol, Variable, var, Group, load, load_json, _symbol_invoke  # noqa: F401

_internal = _types.ModuleType("oxnet.symbol._internal", "Internal (underscore-named) operators.")
op = _types.ModuleType("oxnet.symbol.op", "Every public registered operator.")
contrib = _types.ModuleType("oxnet.symbol.contrib", "Contrib operators.")
linalg = _types.ModuleType("oxnet.symbol.linalg", "Linear algebra operators.")
image = _types.ModuleType("oxnet.symbol.image", "Image operators (_image_*).")
_sys.modules[linalg.__name__] = linalg  # `import oxnet.symbol.linalg` works as in MXNet

_register.generate(op, _internal, {"contrib": contrib, "linalg": linalg, "image": image},
                   symbolic_invoke=_symbol_invoke, module="oxnet.symbol")

for _name in dir(op):
    if not _name.startswith("__") and _name not in globals():
        globals()[_name] = getattr(op, _name)


def _attach_fluent():
    """MXNet's fluent methods on symbols (``s.reshape(...)``, ``s.sum(axis=1)``)."""
    from ..ndarray.ndarray import _FLUENT
    for _n in _FLUENT:
        fn = getattr(op, _n, None)
        if fn is None or hasattr(Symbol, _n):
            continue

        def method(self, *args, __fn=fn, **kwargs):
            return __fn(self, *args, **kwargs)
        method.__name__ = _n
        method.__doc__ = "Convenience fluent method for :py:func:`%s`." % _n
        setattr(Symbol, _n, method)


_attach_fluent()


def zeros(shape, dtype=None, **kwargs):
    """A symbol of zeros of ``shape`` (``_zeros`` op)."""
    return _internal._zeros(shape=shape, dtype="float32" if dtype is None else dtype, **kwargs)


def ones(shape, dtype=None, **kwargs):
    """A symbol of ones of ``shape`` (``_ones`` op)."""
    return _internal._ones(shape=shape, dtype="float32" if dtype is None else dtype, **kwargs)


def _reshape(self, *shape, **kwargs):
    """Fluent ``Reshape``: ``s.reshape((2, -1))`` or ``s.reshape(shape=(2, -1))``."""
    if shape:
        kwargs["shape"] = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    return op.Reshape(self, **kwargs)


def _astype(self, dtype):
    """Fluent ``Cast``."""
    return op.Cast(self, dtype=dtype)


Symbol.reshape = _reshape
Symbol.astype = _astype


def _ufunc(left, right, bcast, scalar, rscalar, fn):
    """MXNet's symbol ufuncs: a broadcast op for two symbols, a scalar op when one
    side is a number, plain Python for two numbers."""
    if isinstance(left, Symbol) and isinstance(right, Symbol):
        return getattr(op, bcast)(left, right)
    if isinstance(left, Symbol):
        return getattr(_internal, scalar)(left, scalar=right)
    if isinstance(right, Symbol):
        return getattr(_internal, rscalar)(right, scalar=left)
    return fn(left, right)


def maximum(left, right):
    """Element-wise maximum of symbols or numbers (with broadcasting)."""
    return _ufunc(left, right, "broadcast_maximum", "_maximum_scalar", "_maximum_scalar",
                  lambda a, b: a if a > b else b)


def minimum(left, right):
    """Element-wise minimum of symbols or numbers (with broadcasting)."""
    return _ufunc(left, right, "broadcast_minimum", "_minimum_scalar", "_minimum_scalar",
                  lambda a, b: a if a < b else b)


def power(base, exp):
    """``base ** exp`` element-wise for symbols or numbers (with broadcasting)."""
    return _ufunc(base, exp, "broadcast_power", "_power_scalar", "_rpower_scalar",
                  lambda a, b: a ** b)


pow = power  # noqa: A001


def hypot(left, right):
    """``sqrt(left**2 + right**2)`` element-wise (with broadcasting)."""
    return _ufunc(left, right, "broadcast_hypot", "_hypot_scalar", "_hypot_scalar",
                  lambda a, b: (a * a + b * b) ** 0.5)


from . import random  # noqa: E402
random.__all__ += random._attach_like(vars(random))
from . import py_ops as _py_ops  # noqa: E402
_py_ops._internal = _internal
from .py_ops import eye, full, arange, linspace, histogram, split_v2  # noqa: E402,F401,A004
from ..ndarray.contrib_funcs import rand_zipfian_symbol as _rand_zipfian  # noqa: E402
contrib.rand_zipfian = _rand_zipfian
_rand_zipfian.__name__ = "rand_zipfian"


def Custom(*data, **kwargs):  # noqa: N802 - MXNet's name
    """Apply a custom operator implemented in a frontend language (like Python).

    ``data`` are the operator's arguments then its auxiliary states (positional, or
    by name as keyword Symbols); ``op_type`` names an operator registered with
    ``mx.operator.register``; other keyword arguments go to its CustomOpProp as
    strings. The node runs the operator's forward and backward when the graph runs.
    """
    from ..operator import _invoke_symbol
    return _invoke_symbol(data, kwargs)


op.Custom = Custom


# ``mx.sym.sparse``: every public operator, and the ``_sparse_*`` ones without their
# prefix (``sparse.retain``), as MXNet's namespace; a graph's sparse inputs are bound
# as dense values (see Executor).
sparse = _types.ModuleType("oxnet.symbol.sparse", "Operators on sparse storage (and all others).")
_sys.modules[sparse.__name__] = sparse
for _name in dir(op):
    if not _name.startswith("_"):
        setattr(sparse, _name, getattr(op, _name))
for _name in dir(_internal):
    if _name.startswith("_sparse_"):
        setattr(sparse, _name[len("_sparse_"):], getattr(_internal, _name))
from . import control_flow as _control_flow  # noqa: E402
_control_flow.install(contrib)
