"""``gluon.contrib.data``: contributed samplers (``IntervalSampler``)."""

from . import sampler  # noqa: F401
from .sampler import *  # noqa: F401,F403
