"""``gluon.contrib``: contributed Gluon blocks (MXNet 1.9.1's ``gluon.contrib``);
so far ``contrib.rnn.VariationalDropoutCell``."""

from . import rnn  # noqa: F401
