"""``mx.random``: seeding, and the sampling functions of ``mx.nd.random``."""

from . import _core
from .context import Context
from .ndarray.random import *  # noqa: F401,F403
from .ndarray.random import __all__ as _nd_random_all


def seed(seed_state, ctx="all"):
    """Seeds the random number generators (of every device, or of ``ctx`` only).

    Ops pushed after this call draw the same numbers on every run with this seed."""
    if not isinstance(seed_state, int):
        raise ValueError("seed_state must be int")
    if ctx == "all":
        _core.random_seed(seed_state)
    else:
        ctx = Context(ctx)
        _core.random_seed(seed_state, ctx.device_typeid, ctx.device_id)


__all__ = ["seed"] + list(_nd_random_all)


# MXNet's mx.random also exposes base.integer_types.
from .base import integer_types  # noqa: E402,F401
