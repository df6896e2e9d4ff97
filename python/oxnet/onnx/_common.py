"""Shared helpers of the ONNX exporter and importer: importing the optional
``onnx`` package, reading MXNet attribute strings, loading model files."""

import ast

import numpy as np

from ..base import MXNetError

# The opsets the exporter writes and the importer reads.
MIN_EXPORT_OPSET = 12
MAX_EXPORT_OPSET = 21
MIN_IMPORT_OPSET = 7
MAX_IMPORT_OPSET = 22


def require_onnx():
    """The ``onnx`` module, or an MXNetError saying how to install it."""
    try:
        import onnx  # noqa: F401
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise MXNetError("ONNX support needs the onnx package: pip install oxnet[onnx] "
                         "(or pip install onnx); importing it failed: %s" % e) from None
    return onnx


def default_opset():
    onnx = require_onnx()
    from onnx.defs import onnx_opset_version
    return max(MIN_EXPORT_OPSET, min(onnx_opset_version(), 18))


# ---- MXNet attribute strings ------------------------------------------------------

def a_str(attrs, key, default=None):
    v = attrs.get(key)
    if v is None or v == "None":
        return default
    return str(v)


def a_bool(attrs, key, default=False):
    v = attrs.get(key)
    if v is None or v == "None":
        return default
    return str(v).strip().lower() in ("true", "1")


def a_int(attrs, key, default=None):
    v = attrs.get(key)
    if v is None or v == "None":
        return default
    return int(float(v))


def a_float(attrs, key, default=None):
    v = attrs.get(key)
    if v is None or v == "None":
        return default
    return float(v)


def a_tuple(attrs, key, default=None):
    """A shape-like attribute "(1, 2)", "[1, 2]", "3" -> tuple; entries "None" stay None."""
    v = attrs.get(key)
    if v is None or v == "None":
        return default
    if isinstance(v, (tuple, list)):
        return tuple(v)
    text = str(v).strip()
    try:
        val = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise MXNetError("cannot read attribute %s=%r" % (key, v)) from None
    if isinstance(val, (int, float)) or val is None:
        return (val,)
    return tuple(val)


def load_params(params):
    """(arg_params, aux_params) from a .params path, one dict (names may carry
    "arg:"/"aux:" prefixes) or a list/tuple of two dicts; values as NumPy arrays."""
    from .. import ndarray as nd
    if isinstance(params, str):
        try:
            params = nd.load(params)
        except MXNetError:
            raise
        except Exception as e:
            raise MXNetError("export_model: cannot read the params file %r: %s" % (params, e)) \
                from None
    if isinstance(params, (list, tuple)):
        if len(params) != 2 or not all(isinstance(p, dict) for p in params):
            raise MXNetError("export_model: params as a list must be [arg_params, aux_params]")
        merged = {}
        merged.update(params[0])
        merged.update(params[1])
        params = merged
    if not isinstance(params, dict):
        raise MXNetError("export_model: params must be a path, a dict or [arg_params, aux_params],"
                         " got %s" % type(params).__name__)
    out = {}
    for k, v in params.items():
        if k.startswith("arg:") or k.startswith("aux:"):
            k = k[4:]
        out[k] = v.asnumpy() if hasattr(v, "asnumpy") else np.asarray(v)
    return out


class Translations:
    """Name -> translation function, filled by the ``register`` decorator (one table
    for export, one for import)."""

    def __init__(self):
        self._fns = {}

    def register(self, *names):
        def deco(fn):
            for n in names:
                self._fns[n] = fn
            return fn
        return deco

    def get(self, name):
        return self._fns.get(name)

    def supported_ops(self):
        return sorted(self._fns)


def fail(msg):
    raise MXNetError(msg)
