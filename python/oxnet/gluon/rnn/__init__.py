"""``gluon.rnn``: recurrent cells (one step at a time, ``unroll`` over a sequence) and
the recurrent layers ``RNN``, ``LSTM``, ``GRU`` (MXNet 1.9.1 names, parameters,
defaults). The layers are unrolled over time with the registry's ops (MXNet's fused
``RNN`` operator is not in the registry)."""

from .rnn_cell import *  # noqa: F401,F403
from .rnn_layer import *  # noqa: F401,F403
