"""``mx.contrib``: experimental APIs outside MXNet's core (``contrib.amp``, the legacy
``contrib.autograd``, ``contrib.text``)."""

from . import amp  # noqa: F401
from . import autograd  # noqa: F401
from . import text  # noqa: F401
