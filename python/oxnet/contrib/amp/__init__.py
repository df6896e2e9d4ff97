"""``mx.contrib.amp``: automatic mixed precision (float16 / bfloat16) as in MXNet
1.9.1: ``init`` patches the operator functions, ``convert_symbol`` /
``convert_model`` / ``convert_hybrid_block`` / ``convert_bucketing_module`` rewrite
float32 graphs, and ``init_trainer`` / ``scale_loss`` / ``unscale`` do dynamic loss
scaling with a Gluon Trainer."""

from .amp import *  # noqa: F401,F403
from . import amp  # noqa: F401
from . import lists  # noqa: F401
from .loss_scaler import LossScaler  # noqa: F401
