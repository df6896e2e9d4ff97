"""``mx.contrib``: experimental APIs outside MXNet's core (``contrib.amp``)."""

from . import amp  # noqa: F401
