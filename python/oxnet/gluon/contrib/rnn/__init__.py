"""``gluon.contrib.rnn``: contributed recurrent cells: convolutional RNN/LSTM/GRU cells
in 1, 2 and 3 dimensions, ``LSTMPCell``, ``VariationalDropoutCell``, and
``dynamic_unroll``."""

from . import conv_rnn_cell, rnn_cell  # noqa: F401
from .conv_rnn_cell import *  # noqa: F401,F403
from .rnn_cell import *  # noqa: F401,F403
