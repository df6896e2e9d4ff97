"""gluon.nn layers of MXNet 1.9.1 built in Python on existing registry ops:
``BatchNormReLU`` (BatchNorm then ReLU), ``GroupNorm`` (normalization over groups
of channels, one gamma/beta per group as in MXNet 1.x) and ``ReflectionPad2D``
(mirror padding of the last two axes, from slices, ``reverse`` and ``concat``)."""

from ...base import MXNetError, numeric_types
from ..block import HybridBlock
from .basic_layers import BatchNorm, _add_scale_shift

__all__ = ["BatchNormReLU", "GroupNorm", "ReflectionPad2D"]


class BatchNormReLU(BatchNorm):
    """Batch normalization followed by ReLU; the parameters and arguments of
    :class:`BatchNorm` (parameter names ``gamma``, ``beta``, ``running_mean``,
    ``running_var``). MXNet runs one fused ``BatchNormWithReLU`` op; here the graph
    holds ``BatchNorm`` and ``relu``."""

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        out = super().hybrid_forward(F, x, gamma, beta, running_mean, running_var)
        return F.relu(out)


class GroupNorm(HybridBlock):
    """Group normalization (Wu & He 2018): the channels (axis 1) of each sample are
    split into ``num_groups`` groups, each normalized over its channels and spatial
    positions, then scaled and shifted by that group's ``gamma`` / ``beta`` (shape
    ``(num_groups,)``, as in MXNet 1.9.1).

    Parameters
    ----------
    num_groups : int, default 1
    epsilon : float, default 1e-5
    center : bool, default True
        Learn ``beta`` (else it stays 0).
    scale : bool, default True
        Learn ``gamma`` (else it stays 1).
    """

    def __init__(self, num_groups=1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        if int(num_groups) <= 0:
            raise MXNetError("GroupNorm: num_groups must be positive, got %r" % (num_groups,))
        self._kwargs = {"eps": epsilon, "num_groups": num_groups, "center": center,
                        "scale": scale}
        self._num_groups = int(num_groups)
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        _add_scale_shift(self, num_groups, center, scale, gamma_initializer,
                         beta_initializer)

    def hybrid_forward(self, F, data, gamma, beta):
        shape = getattr(data, "shape", None)
        if isinstance(shape, tuple):
            if len(shape) < 2 or shape[1] % self._num_groups:
                raise MXNetError("GroupNorm: the input's channel axis (axis 1) of shape %s must "
                                 "split into num_groups=%d groups"
                                 % (shape, self._num_groups))
        grouped = F.reshape(data, shape=(0, self._num_groups, -1))
        mean = F.mean(grouped, axis=2, keepdims=True)
        centered = F.broadcast_sub(grouped, mean)
        var = F.mean(F.square(centered), axis=2, keepdims=True)
        normed = F.broadcast_div(centered, F.sqrt(var + self._epsilon))
        g = F.reshape(gamma, shape=(1, self._num_groups, 1))
        b = F.reshape(beta, shape=(1, self._num_groups, 1))
        out = F.broadcast_add(F.broadcast_mul(normed, g), b)
        return F.reshape_like(out, data)

    def __repr__(self):
        return "{name}({content})".format(
            name=self.__class__.__name__,
            content=", ".join("=".join([k, repr(v)]) for k, v in self._kwargs.items()))


def _reflect(F, x, axis, before, after, size):
    if before == 0 and after == 0:
        return x
    if size is not None and (before >= size or after >= size):
        raise MXNetError("ReflectionPad2D: padding (%d, %d) of axis %d must be smaller than "
                         "the input's size %d there" % (before, after, axis, size))
    parts = []
    if before:
        parts.append(F.reverse(F.slice_axis(x, axis=axis, begin=1, end=before + 1), axis=axis))
    parts.append(x)
    if after:
        parts.append(F.reverse(F.slice_axis(x, axis=axis, begin=-after - 1, end=-1),
                               axis=axis))
    return F.concat(*parts, dim=axis)


class ReflectionPad2D(HybridBlock):
    """Pads the last two axes of an (N, C, H, W) input by mirroring (the edge not
    repeated). ``padding`` is an int (all four sides) or MXNet's 8-tuple pad width
    ``(0, 0, 0, 0, top, bottom, left, right)``; each amount must be smaller than the
    input's size on that axis."""

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, numeric_types):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        padding = tuple(int(p) for p in padding)
        if len(padding) != 8 or any(padding[:4]) or any(p < 0 for p in padding):
            raise MXNetError("ReflectionPad2D: padding must be an int or (0, 0, 0, 0, top, "
                             "bottom, left, right) with non-negative amounts, got %r"
                             % (padding,))
        self._padding = padding

    def hybrid_forward(self, F, x):
        shape = x.shape if isinstance(getattr(x, "shape", None), tuple) else None
        if shape is not None and len(shape) != 4:
            raise MXNetError("ReflectionPad2D: the input must be 4-D (N, C, H, W), got shape %s"
                             % (shape,))
        top, bottom, left, right = self._padding[4:]
        x = _reflect(F, x, 2, top, bottom, shape[2] if shape else None)
        return _reflect(F, x, 3, left, right, shape[3] if shape else None)
