"""``mx.nd.save`` / ``mx.nd.load`` in MXNet's ``.params`` format."""

from .. import _core
from .ndarray import NDArray
from ..util import is_np_shape


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
    # As MXNet: under NumPy shape semantics (mx.np_shape) arrays are written in the
    # format that only loads with them on, and sparse arrays cannot be saved.
    _core.save_any(str(fname), arrays, names, is_np_shape())


def load(fname):
    """Loads an array list (or a dict of str->array) from a file saved by ``save``
    or by MXNet. As in MXNet, arrays saved under NumPy shape semantics load only
    with them on (``with mx.np_shape(True)``), and the others only with them off."""
    try:
        with open(str(fname), "rb") as f:
            buf = f.read()
    except OSError as e:
        from ..base import MXNetError
        raise MXNetError("cannot read %s: %s" % (fname, e)) from None
    arrays, names = _core.load_any(buf, is_np_shape())
    if names:
        return dict(zip(names, arrays))
    return arrays


def load_frombuffer(buf):
    """Loads an array list or dict from a bytes buffer in the ``.params`` format."""
    arrays, names = _core.load_any(bytes(buf), is_np_shape())
    if names:
        return dict(zip(names, arrays))
    return arrays


__all__ = ["save", "load", "load_frombuffer"]
