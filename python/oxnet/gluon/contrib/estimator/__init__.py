"""``mx.gluon.contrib.estimator``: a training loop (``Estimator``) driven by event
handlers, as in MXNet 1.9.1."""

from . import estimator  # noqa: F401
from . import event_handler  # noqa: F401
from . import batch_processor  # noqa: F401
from .estimator import *  # noqa: F401,F403
from .event_handler import *  # noqa: F401,F403
from .batch_processor import *  # noqa: F401,F403
