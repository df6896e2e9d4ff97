"""The ``mx.nd`` functions MXNet 1.9.1 defines in Python over registered ops:
``moveaxis``, ``linspace``, ``split_v2``, ``histogram``, ``onehot_encode``, and the
``inplace`` forms of the ``flatten``/``expand_dims``/``squeeze`` methods. Each is a
thin argument shuffle in front of one registry op (``transpose``, ``_linspace``,
``_split_v2``, ``_histogram``, ``_onehot_encode``) or a reshape view."""

import numpy as np
try:  # NumPy 2
    from numpy.lib.array_utils import normalize_axis_tuple as _normalize_axis_tuple
except ImportError:  # NumPy 1.x
    from numpy.core.numeric import normalize_axis_tuple as _normalize_axis_tuple

from ..context import current_context
from ..base import mx_real_t
from .ndarray import NDArray

_internal = None
_op = None


def moveaxis(tensor, source, destination):
    """Moves the `source` axis into the `destination` position while leaving the
    other axes in their original order (NumPy's ``moveaxis``)."""
    try:
        source = _normalize_axis_tuple(source, tensor.ndim)
    except IndexError as e:
        raise ValueError('Source should verify 0 <= source < tensor.ndim'
                         'Got %d' % source) from e
    try:
        destination = _normalize_axis_tuple(destination, tensor.ndim)
    except IndexError as e:
        raise ValueError('Destination should verify 0 <= destination < tensor.ndim (%d).'
                         % tensor.ndim, 'Got %d' % destination) from e
    if len(source) != len(destination):
        raise ValueError('`source` and `destination` arguments must have '
                         'the same number of elements')
    order = [n for n in range(tensor.ndim) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return _op.transpose(tensor, axes=tuple(order))


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=mx_real_t):
    """Returns `num` evenly spaced samples over [start, stop] (stop excluded when
    ``endpoint`` is False)."""
    if ctx is None:
        ctx = current_context()
    from ..base import dtype_name
    dtype = dtype_name(dtype) if not isinstance(dtype, str) else dtype
    return _internal._linspace(start=start, stop=stop, num=num, endpoint=endpoint,
                               dtype=dtype, ctx=str(ctx))


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Splits an array into multiple sub-arrays: into `indices_or_sections` equal
    parts (an int) or at the given indices (a tuple)."""
    axis_size = ary.shape[axis]
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        if axis_size % sections:
            raise ValueError('array split does not result in an equal division')
        section_size = int(axis_size / sections)
        indices = [i * section_size for i in range(sections)]
    elif isinstance(indices_or_sections, tuple):
        indices = [0] + list(indices_or_sections)
    else:
        raise ValueError('indices_or_sections must either int or tuple of ints')
    return _internal._split_v2(ary, indices=tuple(indices), axis=axis,
                               squeeze_axis=squeeze_axis)


def histogram(a, bins=10, range=None):  # noqa: A002 - MXNet's signature
    """Computes the histogram of the input: (counts, bin edges)."""
    if isinstance(bins, NDArray):
        return _internal._histogram(data=a, bins=bins)
    if isinstance(bins, int):
        if range is None:
            import warnings
            warnings.warn("range is not specified, using numpy's result "
                          "to ensure consistency with numpy")
            from .ndarray import array
            res, bin_bounds = np.histogram(a.asnumpy(), bins=bins)
            return array(res), array(bin_bounds)
        return _internal._histogram(data=a, bin_cnt=bins, range=str(tuple(float(r) for r in range)))
    raise ValueError("bins argument should be either an integer or an NDArray")


def onehot_encode(indices, out):
    """One-hot encodes `indices` into `out` (a matrix with one row per index)."""
    return _internal._onehot_encode(indices, out, out=out)


def _flatten(self, inplace=False):
    """Flattens to 2-D; ``inplace=True`` returns a reshaped view."""
    return _op.flatten(self) if not inplace else self.reshape((0, -1))


def _expand_dims(self, axis, inplace=False):
    """Inserts a new axis of size 1; ``inplace=True`` returns a reshaped view."""
    if not inplace:
        return _op.expand_dims(self, axis=axis)
    new_shape = list(self.shape)
    assert -len(new_shape) - 1 <= axis <= len(new_shape), \
        "axis {} is out of range for {}d array".format(axis, len(new_shape))
    if axis < 0:
        axis += len(new_shape) + 1
    new_shape.insert(axis, 1)
    return self.reshape(new_shape)


def _squeeze(self, axis=None, inplace=False):
    """Removes axes of size 1; ``inplace=True`` returns a reshaped view."""
    if not inplace:
        return _op.squeeze(self, axis=axis)
    new_shape = list(self.shape)
    axes = axis
    if axes is None:
        axes = [i for i, s in enumerate(new_shape) if s == 1]
    elif isinstance(axes, int):
        axes = [axes]
    axes = sorted((a + len(new_shape)) if a < 0 else a for a in axes)
    for i in reversed(axes):
        assert new_shape[i] == 1, \
            "cannot select an axis to squeeze out which has size not equal to one"
        del new_shape[i]
    return self.reshape(new_shape) if new_shape else self.reshape((1,))


def _split_v2(self, *args, **kwargs):
    return split_v2(self, *args, **kwargs)


def _abs(self):
    """``abs(x)``: the ``abs`` op."""
    return _op.abs(self)


def install(internal, op):
    """Binds the op namespaces and adds the methods to NDArray."""
    global _internal, _op
    _internal, _op = internal, op
    NDArray.flatten = _flatten
    NDArray.expand_dims = _expand_dims
    NDArray.squeeze = _squeeze
    NDArray.split_v2 = _split_v2
    NDArray.__abs__ = _abs
