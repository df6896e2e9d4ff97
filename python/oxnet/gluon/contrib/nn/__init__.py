"""``mx.gluon.contrib.nn``: container layers that run their children side by side,
and pixel shuffling.

``Concurrent`` / ``HybridConcurrent`` feed the same input to every child and join the
children's outputs with ``concat`` along ``axis``; ``Identity`` returns its input (a
branch of a concurrent block that keeps the input, as in DenseNet).
``PixelShuffle1D/2D/3D`` move groups of channels into blocks of positions
(depth-to-space), with reshapes and one transpose.
"""

from ... import nn as _nn
from ....base import MXNetError
from ....ndarray import concat as _concat

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "PixelShuffle1D", "PixelShuffle2D",
           "PixelShuffle3D"]


class Concurrent(_nn.Sequential):
    """Runs every child on the input and concatenates their outputs on ``axis``
    (default -1)."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        return _concat(*[child(x) for child in self._children.values()], dim=self.axis)


class HybridConcurrent(_nn.HybridSequential):
    """The hybridizable :class:`Concurrent`: children must be HybridBlocks."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        return F.concat(*[child(x) for child in self._children.values()], dim=self.axis)


class Identity(_nn.HybridBlock):
    """Returns its input unchanged."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x):
        return x


class _PixelShuffle(_nn.HybridBlock):
    """(N, C*f1*...*fd, S1, ..., Sd) -> (N, C, S1*f1, ..., Sd*fd), the channel index
    read as (c, i1, ..., id) in row-major order."""

    _ndim = 0

    def __init__(self, factor):
        super().__init__()
        d = self._ndim
        if isinstance(factor, (list, tuple)):
            factors = tuple(int(f) for f in factor)
        else:
            factors = (int(factor),) * d
        if len(factors) != d or any(f <= 0 for f in factors):
            raise MXNetError("%s: factor must be a positive int or %d positive ints, got %r"
                             % (type(self).__name__, d, factor))
        self._factors = factors

    def hybrid_forward(self, F, x):
        d = self._ndim
        shape = getattr(x, "shape", None)
        if isinstance(shape, tuple):
            total = 1
            for f in self._factors:
                total *= f
            if len(shape) != d + 2 or shape[1] % total:
                raise MXNetError("%s: the input must be %d-D with channels divisible by %d, "
                                 "got shape %s" % (type(self).__name__, d + 2, total, shape))
        total = 1
        for f in self._factors:
            total *= f
        keep = (0,) * d
        # (N, C, f1*...*fd, S...) then peel f1, f2, ... off the factor axis
        x = F.reshape(x, shape=(0, -4, -1, total) + keep)
        rest = total
        for i, f in enumerate(self._factors[:-1]):
            rest //= f
            x = F.reshape(x, shape=(0,) * (2 + i) + (-4, f, rest) + keep)
        # (N, C, f1..fd, S1..Sd) -> (N, C, S1, f1, ..., Sd, fd) -> merge the pairs
        axes = (0, 1) + tuple(a for i in range(d) for a in (2 + d + i, 2 + i))
        x = F.transpose(x, axes=axes)
        return F.reshape(x, shape=(0, 0) + (-3,) * d)


class PixelShuffle1D(_PixelShuffle):
    """(N, f*C, W) -> (N, C, W*f)."""

    _ndim = 1

    def __repr__(self):
        return "{}({})".format(self.__class__.__name__, self._factors[0])


class PixelShuffle2D(_PixelShuffle):
    """(N, f1*f2*C, H, W) -> (N, C, H*f1, W*f2); ``factor`` an int or 2 ints."""

    _ndim = 2

    def __repr__(self):
        return "{}({})".format(self.__class__.__name__, self._factors)


class PixelShuffle3D(_PixelShuffle):
    """(N, f1*f2*f3*C, D, H, W) -> (N, C, D*f1, H*f2, W*f3); ``factor`` an int or 3
    ints."""

    _ndim = 3

    def __repr__(self):
        return "{}({})".format(self.__class__.__name__, self._factors)
