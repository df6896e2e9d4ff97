"""``mx.optimizer``: optimizers whose updates are fused registry ops
(``sgd_mom_update``, ``adam_update``, ...), the ``Updater`` that keeps their
states, and ``create`` / ``register`` / ``get_updater``."""

from . import optimizer
from .optimizer import (Optimizer, SGD, NAG, Adam, AdaGrad, RMSProp, AdaDelta, Signum, Ftrl,
                        FTRL, LAMB, Updater, create, register, get_updater)

__all__ = ["Optimizer", "SGD", "NAG", "Adam", "AdaGrad", "RMSProp", "AdaDelta", "Signum", "Ftrl",
           "FTRL", "LAMB", "Updater", "create", "register", "get_updater", "optimizer"]
