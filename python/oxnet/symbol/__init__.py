"""``mx.sym`` / ``mx.symbol``: Symbol, Variable, Group, load, and every registered
operator as a function building a symbol (generated from the registry by the same
generator as ``mx.nd``)."""

import types as _types

from ..ndarray import register as _register
from .symbol import *  # noqa: F401,F403
from .symbol import Symbol, Variable, var, Group, load, load_json, _symbol_invoke  # noqa: F401

_internal = _types.ModuleType("oxnet.symbol._internal", "Internal (underscore-named) operators.")
op = _types.ModuleType("oxnet.symbol.op", "Every public registered operator.")
contrib = _types.ModuleType("oxnet.symbol.contrib", "Contrib operators.")
linalg = _types.ModuleType("oxnet.symbol.linalg", "Linear algebra operators.")

_register.generate(op, _internal, {"contrib": contrib, "linalg": linalg},
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
