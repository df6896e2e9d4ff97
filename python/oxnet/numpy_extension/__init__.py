"""``mx.npx``: MXNet 1.9.1's NumPy extensions: the NumPy-semantics switches
(``set_np``/``reset_np``/``is_np_array``/``is_np_shape``) and neural-network operators
taking and returning ``mx.np.ndarray``."""

import numpy as _np

from .. import ndarray as _mx_nd
from ..util import (set_np, reset_np, is_np_array, is_np_shape, set_np_shape,  # noqa: F401
                    np_shape, np_array, use_np, use_np_array, use_np_shape)
from ..context import cpu, gpu, current_context, num_gpus  # noqa: F401
from ..numpy.multiarray import _wrap, _nd_of, _cast_nd

__all__ = ["set_np", "reset_np", "is_np_array", "is_np_shape", "use_np", "use_np_array",
           "use_np_shape", "relu", "sigmoid", "softmax", "log_softmax", "activation",
           "one_hot", "cpu", "gpu", "current_context", "num_gpus"]


def relu(data):
    """max(data, 0), elementwise."""
    return _wrap(_mx_nd.relu(_nd_of(data)))


def sigmoid(data):
    """1 / (1 + exp(-data)), elementwise."""
    return _wrap(_mx_nd.sigmoid(_nd_of(data)))


def activation(data, act_type="relu"):
    """The activation ``act_type`` (relu, sigmoid, tanh, softrelu, softsign)."""
    return _wrap(_mx_nd.Activation(_nd_of(data), act_type=act_type))


def softmax(data, axis=-1, temperature=None):
    """Softmax over ``axis``."""
    kw = {} if temperature is None else {"temperature": temperature}
    return _wrap(_mx_nd.softmax(_nd_of(data), axis=axis, **kw))


def log_softmax(data, axis=-1, temperature=None):
    """Log-softmax over ``axis``."""
    kw = {} if temperature is None else {"temperature": temperature}
    return _wrap(_mx_nd.log_softmax(_nd_of(data), axis=axis, **kw))


def one_hot(data, depth, on_value=1.0, off_value=0.0, dtype="float32"):
    """One-hot vectors of length ``depth`` for the integer indices ``data``."""
    nd = _nd_of(data)
    return _wrap(_mx_nd.one_hot(_cast_nd(nd, _np.float32) if nd.dtype != _np.float32 else nd,
                                depth=depth, on_value=on_value, off_value=off_value,
                                dtype=_np.dtype(dtype).name))
