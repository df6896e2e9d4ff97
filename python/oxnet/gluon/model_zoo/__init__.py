"""``mx.gluon.model_zoo``: predefined networks (``vision``) with MXNet 1.9.1's
block structure and parameter names, and the store of pretrained weight files
(``model_store``)."""

from . import model_store  # noqa: F401
from . import vision  # noqa: F401
