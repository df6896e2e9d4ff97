"""``mx.rnn``: MXNet 1.x's symbolic RNN API (the cells that build unrolled Symbols,
bucketed sentence iterators, RNN checkpoints). Gluon's cells are ``mx.gluon.rnn``."""

from . import io
from . import rnn_cell
from .rnn_cell import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .io import *  # noqa: F401,F403
