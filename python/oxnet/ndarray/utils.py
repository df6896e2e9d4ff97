"""``mx.nd.save`` / ``mx.nd.load`` in MXNet's ``.params`` format."""

from .. import _core
from .ndarray import NDArray


def save(fname, data):
    """Saves a list of arrays or a dict of str->array to file (MXNet's format).

    Examples: ``mx.nd.save('x.params', [a, b])``, ``mx.nd.save('x.params', {'a': a})``."""
    if isinstance(data, NDArray):
        data = [data]
    if isinstance(data, dict):
        names = list(data.keys())
        arrays = list(data.values())
        if not all(isinstance(k, str) for k in names):
            raise TypeError("save only accept dict str->NDArray or list of NDArray")
    elif isinstance(data, (list, tuple)):
        names, arrays = [], list(data)
    else:
        raise ValueError("data needs to either be a NDArray, dict of str, NDArray pairs "
                         "or a list of NDarrays.")
    if not all(isinstance(a, NDArray) for a in arrays):
        raise TypeError("save only accept dict str->NDArray or list of NDArray")
    if any(a.stype != "default" for a in arrays):
        _core.save_any(str(fname), arrays, names)
    else:
        _core.save(str(fname), arrays, names)


def load(fname):
    """Loads an array list (or a dict of str->array) from a file saved by ``save``
    or by MXNet."""
    try:
        with open(str(fname), "rb") as f:
            buf = f.read()
    except OSError as e:
        from ..base import MXNetError
        raise MXNetError("cannot read %s: %s" % (fname, e)) from None
    arrays, names = _core.load_any(buf)
    if names:
        return dict(zip(names, arrays))
    return arrays


def load_frombuffer(buf):
    """Loads an array list or dict from a bytes buffer in the ``.params`` format."""
    arrays, names = _core.load_any(bytes(buf))
    if names:
        return dict(zip(names, arrays))
    return arrays


__all__ = ["save", "load", "load_frombuffer"]
