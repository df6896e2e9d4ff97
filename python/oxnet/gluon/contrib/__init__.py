"""``mx.gluon.contrib``: blocks outside gluon's core set (MXNet 1.9.1's names):
``contrib.nn`` (Concurrent, HybridConcurrent, Identity, PixelShuffle) and
``contrib.rnn`` (VariationalDropoutCell)."""

from . import nn  # noqa: F401
from . import rnn  # noqa: F401
from . import estimator  # noqa: F401,E402
