"""The Python-defined functions of MXNet's ``mx.nd.contrib`` (the registered
``_contrib_*`` operators are generated into the same module). Each is written over
registry operators, as MXNet writes them."""

import numpy as np


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


def install(contrib):
    """Adds the functions to the ``contrib`` module."""
    for fn in (isinf, isfinite, isnan):
        setattr(contrib, fn.__name__, fn)
