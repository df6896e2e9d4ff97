"""``mx.gluon.contrib``: blocks outside gluon's core set (MXNet 1.9.1's names):
``contrib.nn`` (Concurrent, HybridConcurrent, Identity, SparseEmbedding, SyncBatchNorm,
PixelShuffle), ``contrib.rnn`` (convolutional cells, LSTMPCell, VariationalDropoutCell,
dynamic_unroll), ``contrib.cnn`` (deformable convolutions) and ``contrib.data``."""

from . import nn  # noqa: F401
from . import rnn  # noqa: F401
from . import cnn  # noqa: F401
from . import data  # noqa: F401
from . import estimator  # noqa: F401,E402
