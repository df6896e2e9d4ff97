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
