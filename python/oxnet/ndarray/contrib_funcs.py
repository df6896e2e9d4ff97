"""The Python-defined functions of MXNet's ``mx.nd.contrib`` (the registered
``_contrib_*`` operators are generated into the same module). Each is written over
registry operators, as MXNet writes them."""

import math

import numpy as np

from ..base import MXNetError


def isinf(data):
    """Performs an element-wise check to determine if the NDArray contains an infinite
    element or not.

    Parameters
    ----------
    data : NDArray
        The input array.

    Returns
    -------
    NDArray
        1 where ``data`` is +inf or -inf, else 0 (``data``'s dtype).

    Examples
    --------
    >>> data = mx.nd.array([np.inf, -np.inf, np.nan, -1.0])
    >>> mx.nd.contrib.isinf(data)
    [1. 1. 0. 0.]
    <NDArray 4 @cpu(0)>
    """
    return data.abs() == np.inf


def isfinite(data):
    """Performs an element-wise check to determine if the NDArray contains only finite
    elements (neither infinite nor NaN).

    Parameters
    ----------
    data : NDArray
        The input array.

    Returns
    -------
    NDArray
        1 where ``data`` is finite, else 0 (``data``'s dtype).

    Examples
    --------
    >>> data = mx.nd.array([np.inf, -np.inf, np.nan, -1.0])
    >>> mx.nd.contrib.isfinite(data)
    [0. 0. 0. 1.]
    <NDArray 4 @cpu(0)>
    """
    from .ndarray import logical_and
    return logical_and(data.abs() != np.inf, data == data)


def isnan(data):
    """Performs an element-wise check to determine if the NDArray contains a NaN element.

    Parameters
    ----------
    data : NDArray
        The input array.

    Returns
    -------
    NDArray
        1 where ``data`` is NaN, else 0 (``data``'s dtype).

    Examples
    --------
    >>> data = mx.nd.array([np.inf, -np.inf, np.nan, -1.0])
    >>> mx.nd.contrib.isnan(data)
    [0. 0. 1. 0.]
    <NDArray 4 @cpu(0)>
    """
    return data != data


def _rand_zipfian(F, true_classes, num_sampled, range_max, **ctx):
    """``rand_zipfian`` written once over ``F`` (``mx.nd`` or ``mx.sym``)."""
    if int(range_max) <= 0 or int(num_sampled) <= 0:
        raise MXNetError("rand_zipfian: num_sampled and range_max must be positive, got "
                         "%r and %r" % (num_sampled, range_max))
    log_range = math.log(range_max + 1)
    rand = F.random.uniform(0, log_range, shape=(num_sampled,), dtype="float64", **ctx)
    # exp(u) - 1 for u uniform on [0, log(range_max + 1)): P(k) = log((k + 2) / (k + 1))
    # / log(range_max + 1); the modulo keeps rounding at the top end in [0, range_max)
    sampled_classes = F.Cast(F.expm1(rand), dtype="int64") % range_max

    def expected_prob(classes):
        c = F.Cast(classes, dtype="float64")
        return F.log((c + 2.0) / (c + 1.0)) / log_range

    if ctx and hasattr(true_classes, "as_in_context"):
        true_classes = true_classes.as_in_context(ctx["ctx"])
    expected_count_true = expected_prob(true_classes) * num_sampled
    expected_count_sampled = expected_prob(sampled_classes) * num_sampled
    return sampled_classes, expected_count_true, expected_count_sampled


def rand_zipfian(true_classes, num_sampled, range_max, ctx=None):
    """Draws ``num_sampled`` classes from the approximately log-uniform (Zipfian)
    distribution on [0, range_max): ``P(k) = (log(k + 2) - log(k + 1)) /
    log(range_max + 1)``, with replacement, and the expected counts of the true and
    the sampled classes (for sampled softmax).

    Parameters
    ----------
    true_classes : NDArray
        The target classes (1-D).
    num_sampled : int
        Number of classes to draw.
    range_max : int
        Number of possible classes.
    ctx : Context
        Device of the samples (default: the current context).

    Returns
    -------
    (samples (num_sampled,) int64, expected count of each true class (float64),
    expected count of each sampled class (float64))
    """
    from .. import ndarray as nd
    from ..context import current_context
    if ctx is None:
        ctx = current_context()
    return _rand_zipfian(nd, true_classes, num_sampled, range_max, ctx=ctx)


def rand_zipfian_symbol(true_classes, num_sampled, range_max):
    """``mx.sym.contrib.rand_zipfian``: see ``mx.nd.contrib.rand_zipfian``; returns three
    symbols."""
    from .. import symbol as sym
    return _rand_zipfian(sym, true_classes, num_sampled, range_max)


def install(contrib):
    """Adds the functions to the ``contrib`` module."""
    for fn in (isinf, isfinite, isnan, rand_zipfian):
        setattr(contrib, fn.__name__, fn)
