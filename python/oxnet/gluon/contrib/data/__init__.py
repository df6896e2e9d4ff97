"""``gluon.contrib.data``: contributed samplers (``IntervalSampler``) and text datasets
(``text.WikiText2``, ``text.WikiText103``)."""

from . import sampler  # noqa: F401
from . import text  # noqa: F401
from .sampler import *  # noqa: F401,F403
