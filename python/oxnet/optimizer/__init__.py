"""``mx.optimizer``: optimizers whose updates are fused registry ops
(``sgd_mom_update``, ``adam_update``, ...) or short compositions of NDArray ops
(Adamax, Nadam, FTML, SGLD, ...), the ``Updater`` that keeps their states, and
``create`` / ``register`` / ``get_updater``."""

from . import optimizer
from .optimizer import (Optimizer, SGD, NAG, Adam, AdaGrad, RMSProp, AdaDelta, Signum, Ftrl,
                        FTRL, LAMB, Updater, create, register, get_updater, NDabs)
from . import composite
from .composite import Adamax, Nadam, FTML, SGLD, DCASGD, LBSGD, LARS, Test, ccSGD

__all__ = ["Optimizer", "SGD", "NAG", "Adam", "AdaGrad", "RMSProp", "AdaDelta", "Signum", "Ftrl",
           "FTRL", "LAMB", "Updater", "create", "register", "get_updater", "optimizer", "NDabs",
           "Adamax", "Nadam", "FTML", "SGLD", "DCASGD", "LBSGD", "LARS", "Test", "ccSGD"]
