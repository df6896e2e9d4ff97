"""``gluon.contrib.rnn``: contributed recurrent cells (``VariationalDropoutCell``)."""

from .rnn_cell import *  # noqa: F401,F403
