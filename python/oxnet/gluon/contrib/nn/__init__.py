"""``mx.gluon.contrib.nn``: container layers that run their children side by side,
and pixel shuffling.

``Concurrent`` / ``HybridConcurrent`` feed the same input to every child and join the
children's outputs with ``concat`` along ``axis``; ``Identity`` returns its input (a
branch of a concurrent block that keeps the input, as in DenseNet).
``PixelShuffle1D/2D/3D`` move groups of channels into blocks of positions
(depth-to-space), with reshapes and one transpose.
``SparseEmbedding`` is an Embedding whose weight and gradient are ``row_sparse`` (only
the looked-up rows move); ``SyncBatchNorm`` is BatchNorm whose batch statistics are
shared across ``num_devices`` devices.
"""

import warnings

from ... import nn as _nn
from ...block import Block
from .... import context as _context
from .... import ndarray as _ndarray
from ....base import MXNetError
from ....ndarray import concat as _concat

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "SparseEmbedding", "SyncBatchNorm",
           "PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D"]


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


class SparseEmbedding(Block):
    """Maps integer indices to vectors of ``output_dim`` with a ``row_sparse`` weight
    (``stype`` and ``grad_stype``): a forward pulls only the rows ``x`` looks up
    (``weight.row_sparse_data(x)``) and the gradient holds only those rows, so a
    Trainer updates only them. Not hybridizable (as in MXNet).

    Parameters
    ----------
    input_dim : int
        Size of the vocabulary (largest index + 1).
    output_dim : int
        Dimension of the vectors.
    dtype : str
        Data type of the weight (default float32).
    weight_initializer : Initializer
    """

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None,
                 **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype,
                        "sparse_grad": True}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim),
                                      init=weight_initializer, dtype=dtype,
                                      grad_stype="row_sparse", stype="row_sparse")

    def forward(self, x):
        weight = self.weight.row_sparse_data(x)
        return _ndarray.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self):
        return "{block_name}({input_dim} -> {output_dim}, {dtype})".format(
            block_name=self.__class__.__name__, **self._kwargs)


class SyncBatchNorm(_nn.BatchNorm):
    """Batch normalization (on axis 1) whose mean and variance are computed over the
    batches of all ``num_devices`` devices of a data-parallel step, as if the whole
    batch were on one device (MXNet's ``contrib.SyncBatchNorm``; ``key``, the block's
    prefix, pairs the per-device calls). With one device it is ``BatchNorm``; oxnet
    does not share statistics across devices, so ``num_devices > 1`` raises
    MXNetError at the first call.

    Parameters
    ----------
    in_channels : int
        Number of channels (0: inferred at the first call).
    num_devices : int
        Number of devices the batch is split over (default: the number of GPUs, or 1).
    momentum, epsilon, center, scale, use_global_stats, *_initializer
        As in ``gluon.nn.BatchNorm``.
    """

    def __init__(self, in_channels=0, num_devices=None, momentum=0.9, epsilon=1e-5,
                 center=True, scale=True, use_global_stats=False, beta_initializer="zeros",
                 gamma_initializer="ones", running_mean_initializer="zeros",
                 running_variance_initializer="ones", **kwargs):
        super().__init__(axis=1, momentum=momentum, epsilon=epsilon, center=center,
                         scale=scale, use_global_stats=use_global_stats,
                         beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer,
                         running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer,
                         in_channels=in_channels, **kwargs)
        if num_devices is None:
            warnings.warn("Caution using SyncBatchNorm: if not using all the GPUs, please "
                          "mannually set num_devices", UserWarning)
            num_devices = max(_context.num_gpus(), 1)
        if int(num_devices) < 1:
            raise MXNetError("SyncBatchNorm: num_devices must be >= 1, got %r"
                             % (num_devices,))
        self._num_devices = int(num_devices)
        self._kwargs = {"eps": epsilon, "momentum": momentum, "fix_gamma": not scale,
                        "use_global_stats": use_global_stats, "ndev": self._num_devices,
                        "key": self.prefix}

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        # the registry's contrib.SyncBatchNorm; ndev > 1 is an error there
        return F.contrib.SyncBatchNorm(x, gamma, beta, running_mean, running_var, name="fwd",
                                       **self._kwargs)


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
