"""``mx.nd.random``: sampling functions over the registry's random ops, with MXNet
1.9.1's signatures and dispatch: scalar parameters call the ``_random_*`` ops (one
sample, shape ``(1,)``, when no shape is given), NDArray parameters call the
``_sample_*`` ops (one distribution per parameter element, output shape = parameter
shape + ``shape``). Each device has its own generator; ``mx.random.seed`` makes the
numbers reproducible."""

from ..base import numeric_types, _Null
from ..context import current_context
from .ndarray import NDArray
from . import _internal

__all__ = ["uniform", "normal", "randn", "poisson", "exponential", "gamma",
           "multinomial", "negative_binomial", "generalized_negative_binomial",
           "shuffle", "randint"]


def _random_helper(random, sampler, params, shape, dtype, ctx, out, kwargs):
    """Scalar parameters → ``random`` (``_random_*``), NDArrays → ``sampler``."""
    if isinstance(params[0], NDArray):
        for i in params[1:]:
            assert isinstance(i, NDArray), \
                "Distribution parameters must all have the same type, but got " \
                "both %s and %s." % (type(params[0]), type(i))
        return sampler(*params, shape=shape, dtype=dtype, out=out, **kwargs)
    elif isinstance(params[0], numeric_types):
        if ctx is None:
            # into `out`: sample on out's device (not the thread's default context)
            ctx = out.context if isinstance(out, NDArray) else current_context()
        if shape is _Null and out is None:
            shape = 1
        for i in params[1:]:
            assert isinstance(i, numeric_types), \
                "Distribution parameters must all have the same type, but got " \
                "both %s and %s." % (type(params[0]), type(i))
        if out is not None:
            if shape is _Null:
                shape = out.shape  # fills `out` whole when no shape is given
            if dtype is _Null or dtype is None:
                dtype = out.dtype
        return random(*params, shape=shape, dtype=dtype, ctx=ctx, out=out, **kwargs)
    raise ValueError("Distribution parameters must be either NDArray or numbers, "
                     "but got %s." % type(params[0]))


def uniform(low=0, high=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draw random samples from a uniform distribution on [low, high).

    ``low``/``high`` are numbers (output shape ``shape``, default ``(1,)``) or NDArrays
    of one shape P (output P + ``shape``)."""
    return _random_helper(_internal._random_uniform, _internal._sample_uniform,
                          [low, high], shape, dtype, ctx, out, kwargs)


def normal(loc=0, scale=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draw random samples from a normal (Gaussian) distribution of mean ``loc`` and
    standard deviation ``scale`` (numbers or NDArrays, as in :func:`uniform`)."""
    return _random_helper(_internal._random_normal, _internal._sample_normal,
                          [loc, scale], shape, dtype, ctx, out, kwargs)


def randn(*shape, **kwargs):
    """Draw samples of the given shape from a normal distribution (``loc``, ``scale``
    as keyword arguments; default the standard normal)."""
    loc = kwargs.pop("loc", 0)
    scale = kwargs.pop("scale", 1)
    dtype = kwargs.pop("dtype", _Null)
    ctx = kwargs.pop("ctx", None)
    out = kwargs.pop("out", None)
    assert isinstance(loc, (int, float, NDArray))
    assert isinstance(scale, (int, float, NDArray))
    return _random_helper(_internal._random_normal, _internal._sample_normal,
                          [loc, scale], shape, dtype, ctx, out, kwargs)


def poisson(lam=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draw random samples from a Poisson distribution of rate ``lam`` (returned as
    floating point)."""
    return _random_helper(_internal._random_poisson, _internal._sample_poisson,
                          [lam], shape, dtype, ctx, out, kwargs)


def exponential(scale=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draw samples from an exponential distribution of scale ``scale`` (= 1/rate)."""
    return _random_helper(_internal._random_exponential, _internal._sample_exponential,
                          [1.0 / scale], shape, dtype, ctx, out, kwargs)


def gamma(alpha=1, beta=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draw random samples from a gamma distribution of shape ``alpha`` and scale
    ``beta``."""
    return _random_helper(_internal._random_gamma, _internal._sample_gamma,
                          [alpha, beta], shape, dtype, ctx, out, kwargs)


def negative_binomial(k=1, p=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draw random samples from a negative binomial distribution (``k`` failures,
    success probability ``p``), returned as floating point."""
    return _random_helper(_internal._random_negative_binomial,
                          _internal._sample_negative_binomial,
                          [k, p], shape, dtype, ctx, out, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=_Null, dtype=_Null, ctx=None,
                                  out=None, **kwargs):
    """Draw random samples from a generalized negative binomial distribution of mean
    ``mu`` and dispersion ``alpha``, returned as floating point."""
    return _random_helper(_internal._random_generalized_negative_binomial,
                          _internal._sample_generalized_negative_binomial,
                          [mu, alpha], shape, dtype, ctx, out, kwargs)


def multinomial(data, shape=_Null, get_prob=False, out=None, dtype="int32", **kwargs):
    """Concurrent sampling from multiple multinomial distributions (``data``'s last
    axis holds each distribution's probabilities). With ``get_prob`` also returns the
    log-likelihood of the drawn samples, differentiable with respect to ``data``."""
    return _internal._sample_multinomial(data, shape, get_prob, out=out, dtype=dtype, **kwargs)


def shuffle(data, **kwargs):
    """Shuffle the rows of ``data`` (along the first axis) randomly."""
    return _internal._shuffle(data, **kwargs)


def randint(low, high, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draw random integers from a discrete uniform distribution on [low, high)."""
    return _random_helper(_internal._random_randint, None,
                          [low, high], shape, dtype, ctx, out, kwargs)


def _attach_like(module, internal):
    """``uniform_like`` etc.: the registry's ``_random_*_like`` ops, as MXNet lists
    them in its random module."""
    names = []
    for name in dir(internal):
        if name.startswith("_random_") and name.endswith("_like"):
            short = name[len("_random_"):]
            module[short] = getattr(internal, name)
            names.append(short)
    return names


__all__ += _attach_like(globals(), _internal)
