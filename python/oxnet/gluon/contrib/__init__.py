"""``mx.gluon.contrib``: layers outside gluon's core set (MXNet 1.9.1 names)."""

from . import nn  # noqa: F401
