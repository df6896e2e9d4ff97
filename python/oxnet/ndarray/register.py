"""Generates the ``mx.nd`` functions from the Rust operator registry at import.

Each registered op becomes a Python function with MXNet's signature
(``sum(data=None, axis=_Null, keepdims=_Null, exclude=_Null, out=None, name=None,
**kwargs)``) and the registry's docstring; it hands its arguments, in order, to the one
generic call ``_core.invoke``. No op has a hand-written wrapper.
"""

import keyword

from .. import _core
from ..base import _Null

_PREFIXES = {"_contrib_": "contrib", "_linalg_": "linalg", "_sparse_": "sparse",
             "_image_": "image"}


def _make_symbol_function(name, op, invoke, module):
    """Like :func:`_make_function` for ``mx.sym``: ``name`` and ``attr`` go to
    ``invoke(op, hint, inputs, params, name, kwargs)``; ``out`` is accepted and
    ignored, as in MXNet's symbol functions."""
    params = [p for p in op.param_names if not keyword.iskeyword(p) and p not in op.input_names]
    if op.variadic is not None:
        src = (
            "def {name}(*{data}, **kwargs):\n"
            "    name = kwargs.pop('name', None)\n"
            "    vals = tuple(kwargs.pop(p, _Null) for p in _params)\n"
            "    return _invoke(_op, _hint, {data}, vals, name, kwargs)\n"
        ).format(name=name, data=op.input_names[0])
    else:
        inputs = list(op.input_names)
        args = ["%s=None" % i for i in inputs] + ["%s=_Null" % p for p in params]
        args += ["name=None", "out=None", "**kwargs"]
        src = (
            "def {name}({args}):\n"
            "    return _invoke(_op, _hint, ({inputs}), ({params}), name, kwargs)\n"
        ).format(name=name, args=", ".join(args),
                 inputs="".join("%s, " % i for i in inputs),
                 params="".join("%s, " % (p if p in params else "_Null") for p in op.param_names))
    env = {"_invoke": invoke, "_op": op, "_Null": _Null, "_params": tuple(op.param_names),
           "_hint": name.lower()}
    exec(compile(src, "<oxnet symbol op %s>" % name, "exec"), env)  # noqa: S102 - generated from the registry
    fn = env[name]
    fn.__doc__ = op.doc.replace("NDArray", "Symbol")
    fn.__module__ = module
    return fn


def _make_function(name, op):
    """Builds the Python function for one registered name of ``op``."""
    params = [p for p in op.param_names if not keyword.iskeyword(p) and p not in op.input_names]
    if op.variadic is not None:
        src = (
            "def {name}(*{data}, **kwargs):\n"
            "    out = kwargs.pop('out', None)\n"
            "    kwargs.pop('name', None)\n"
            "    vals = tuple(kwargs.pop(p, _Null) for p in _params)\n"
            "    return _invoke(_op, {data}, vals, out, kwargs)\n"
        ).format(name=name, data=op.input_names[0])
    else:
        inputs = list(op.input_names)
        args = ["%s=None" % i for i in inputs] + ["%s=_Null" % p for p in params]
        args += ["out=None", "name=None", "**kwargs"]
        src = (
            "def {name}({args}):\n"
            "    return _invoke(_op, ({inputs}), ({params}), out, kwargs)\n"
        ).format(name=name, args=", ".join(args),
                 inputs="".join("%s, " % i for i in inputs),
                 params="".join("%s, " % (p if p in params else "_Null") for p in op.param_names))
    env = {"_invoke": _core.invoke, "_op": op, "_Null": _Null, "_params": tuple(op.param_names)}
    exec(compile(src, "<oxnet op %s>" % name, "exec"), env)  # noqa: S102 - generated from the registry
    fn = env[name]
    fn.__doc__ = op.doc
    fn.__module__ = "oxnet.ndarray"
    return fn


def generate(public, internal, submodules, symbolic_invoke=None, module="oxnet.ndarray"):
    """Fills ``public`` (mx.nd), ``internal`` (mx.nd._internal) and the
    per-prefix ``submodules`` (contrib, linalg, ...) with one function per name.
    With ``symbolic_invoke`` the functions build symbols (mx.sym) instead."""
    for name, canonical in _core.list_ops():
        op = _core.get_op(canonical)
        fname = name if name.isidentifier() else canonical
        if symbolic_invoke is None:
            fn = _make_function(fname, op)
        else:
            fn = _make_symbol_function(fname, op, symbolic_invoke, module)
        for prefix, sub in _PREFIXES.items():
            if name.startswith(prefix) and sub in submodules:
                short = name[len(prefix):]
                setattr(submodules[sub], short, fn)
                break
        if name.startswith("_"):
            setattr(internal, name, fn)
        else:
            setattr(public, name, fn)
