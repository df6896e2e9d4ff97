"""``mx.nd.random``: sampling functions over the registry's random ops. Each device
has its own generator; ``mx.random.seed`` makes the numbers reproducible."""

from ..base import _Null
from ..context import current_context


def _call(opname, ctx, out, kwargs, **params):
    from . import _internal
    if out is None:
        params["ctx"] = current_context() if ctx is None else ctx
    else:
        params["ctx"] = out.context
        if params.get("shape", _Null) is _Null:
            params["shape"] = out.shape  # MXNet fills `out` whole when no shape is given
        if "dtype" in params and params["dtype"] in (_Null, None):
            params["dtype"] = out.dtype  # MXNet infers the dtype from `out` when not given
    for k, v in list(params.items()):
        if v is _Null:
            del params[k]
    if "shape" in params and isinstance(params["shape"], int):
        params["shape"] = (params["shape"],)
    return getattr(_internal, opname)(out=out, **params, **kwargs)


def _check_scalar(name, v):
    from .ndarray import NDArray
    if isinstance(v, NDArray):
        from ..base import MXNetError
        raise MXNetError("random: per-element distribution parameters (NDArray %s) are not "
                         "supported by oxnet's sampling ops; pass a scalar" % name)


def uniform(low=0, high=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draw random samples from a uniform distribution on [low, high)."""
    _check_scalar("low", low), _check_scalar("high", high)
    return _call("_random_uniform", ctx, out, kwargs, low=low, high=high, shape=shape, dtype=dtype)


def normal(loc=0, scale=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draw random samples from a normal (Gaussian) distribution."""
    _check_scalar("loc", loc), _check_scalar("scale", scale)
    return _call("_random_normal", ctx, out, kwargs, loc=loc, scale=scale, shape=shape, dtype=dtype)


def randn(*shape, **kwargs):
    """Draw samples from a standard normal distribution of the given shape."""
    loc = kwargs.pop("loc", 0)
    scale = kwargs.pop("scale", 1)
    return normal(loc, scale, shape=shape or (1,), **kwargs)


def randint(low, high, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draw random integers from a discrete uniform distribution on [low, high)."""
    return _call("_random_randint", ctx, out, kwargs, low=low, high=high, shape=shape, dtype=dtype)


__all__ = ["uniform", "normal", "randn", "randint"]
