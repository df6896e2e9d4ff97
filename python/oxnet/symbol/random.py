"""``mx.sym.random``: the symbolic sampling functions, with MXNet 1.9.1's signatures
and dispatch (scalar parameters → ``_random_*`` ops, Symbol parameters →
``_sample_*`` ops), built on the registry's ops like ``mx.nd.random``."""

from ..base import numeric_types, _Null
from .symbol import Symbol

__all__ = ["uniform", "normal", "randn", "poisson", "exponential", "gamma",
           "multinomial", "negative_binomial", "generalized_negative_binomial",
           "shuffle", "randint"]


def _internal():
    from . import _internal as mod
    return mod


def _random_helper(random, sampler, params, shape, dtype, kwargs):
    """Scalar parameters → ``random`` (``_random_*``), Symbols → ``sampler``."""
    if isinstance(params[0], Symbol):
        for i in params[1:]:
            assert isinstance(i, Symbol), \
                "Distribution parameters must all have the same type, but got " \
                "both %s and %s." % (type(params[0]), type(i))
        return getattr(_internal(), sampler)(*params, shape=shape, dtype=dtype, **kwargs)
    elif isinstance(params[0], numeric_types):
        for i in params[1:]:
            assert isinstance(i, numeric_types), \
                "Distribution parameters must all have the same type, but got " \
                "both %s and %s." % (type(params[0]), type(i))
        return getattr(_internal(), random)(*params, shape=shape, dtype=dtype, **kwargs)
    raise ValueError("Distribution parameters must be either Symbol or numbers, "
                     "but got %s." % type(params[0]))


def uniform(low=0, high=1, shape=_Null, dtype=_Null, **kwargs):
    """Draw random samples from a uniform distribution on [low, high)."""
    return _random_helper("_random_uniform", "_sample_uniform", [low, high], shape, dtype, kwargs)


def normal(loc=0, scale=1, shape=_Null, dtype=_Null, **kwargs):
    """Draw random samples from a normal (Gaussian) distribution."""
    return _random_helper("_random_normal", "_sample_normal", [loc, scale], shape, dtype, kwargs)


def randn(*shape, **kwargs):
    """Draw samples of the given shape from a normal distribution (``loc``, ``scale``
    as keyword arguments)."""
    loc = kwargs.pop("loc", 0)
    scale = kwargs.pop("scale", 1)
    dtype = kwargs.pop("dtype", _Null)
    return _random_helper("_random_normal", "_sample_normal", [loc, scale], shape, dtype, kwargs)


def poisson(lam=1, shape=_Null, dtype=_Null, **kwargs):
    """Draw random samples from a Poisson distribution (returned as floating point)."""
    return _random_helper("_random_poisson", "_sample_poisson", [lam], shape, dtype, kwargs)


def exponential(scale=1, shape=_Null, dtype=_Null, **kwargs):
    """Draw samples from an exponential distribution of scale ``scale`` (= 1/rate)."""
    return _random_helper("_random_exponential", "_sample_exponential", [1.0 / scale], shape,
                          dtype, kwargs)


def gamma(alpha=1, beta=1, shape=_Null, dtype=_Null, **kwargs):
    """Draw random samples from a gamma distribution (shape ``alpha``, scale ``beta``)."""
    return _random_helper("_random_gamma", "_sample_gamma", [alpha, beta], shape, dtype, kwargs)


def negative_binomial(k=1, p=1, shape=_Null, dtype=_Null, **kwargs):
    """Draw random samples from a negative binomial distribution."""
    return _random_helper("_random_negative_binomial", "_sample_negative_binomial", [k, p],
                          shape, dtype, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=_Null, dtype=_Null, **kwargs):
    """Draw random samples from a generalized negative binomial distribution."""
    return _random_helper("_random_generalized_negative_binomial",
                          "_sample_generalized_negative_binomial", [mu, alpha], shape, dtype,
                          kwargs)


def multinomial(data, shape=_Null, get_prob=True, dtype="int32", **kwargs):
    """Concurrent sampling from multiple multinomial distributions; with ``get_prob``
    (the default here, as in MXNet's symbol API) also the samples' log-likelihood."""
    return _internal()._sample_multinomial(data, shape, get_prob, dtype=dtype, **kwargs)


def shuffle(data, **kwargs):
    """Shuffle the rows of ``data`` (along the first axis) randomly."""
    return _internal()._shuffle(data, **kwargs)


def randint(low, high, shape=_Null, dtype=_Null, **kwargs):
    """Draw random integers from a discrete uniform distribution on [low, high)."""
    return _random_helper("_random_randint", None, [low, high], shape, dtype, kwargs)


def _attach_like(module):
    from . import _internal as internal
    names = []
    for name in dir(internal):
        if name.startswith("_random_") and name.endswith("_like"):
            module[name[len("_random_"):]] = getattr(internal, name)
            names.append(name[len("_random_"):])
    return names
