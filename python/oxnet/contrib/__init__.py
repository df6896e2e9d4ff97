"""``mx.contrib``: experimental APIs outside MXNet's core (``contrib.amp``, the legacy
``contrib.autograd``)."""

from . import amp  # noqa: F401
from . import autograd  # noqa: F401
