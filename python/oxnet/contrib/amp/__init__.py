"""``mx.contrib.amp``: dynamic loss scaling for mixed-precision training with a gluon
Trainer (``init_trainer``, ``scale_loss``, ``unscale``, ``LossScaler``)."""

from .amp import *  # noqa: F401,F403
from . import amp  # noqa: F401
from .loss_scaler import LossScaler  # noqa: F401
