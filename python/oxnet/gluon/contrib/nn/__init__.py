"""``mx.gluon.contrib.nn``: container layers that run their children side by side.

``Concurrent`` / ``HybridConcurrent`` feed the same input to every child and join the
children's outputs with ``concat`` along ``axis``; ``Identity`` returns its input (a
branch of a concurrent block that keeps the input, as in DenseNet).
"""

from ... import nn as _nn
from ....ndarray import concat as _concat

__all__ = ["Concurrent", "HybridConcurrent", "Identity"]


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
