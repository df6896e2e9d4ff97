"""``mx.contrib``: experimental APIs outside MXNet's core (``contrib.amp``, the legacy
``contrib.autograd``, ``contrib.text``), and MXNet's ``mx.contrib.nd`` / ``mx.contrib.sym``
(``mx.contrib.ndarray`` / ``mx.contrib.symbol``): the registry's ``_contrib_*``
operators, the same modules as ``mx.nd.contrib`` and ``mx.sym.contrib``."""

from . import amp  # noqa: F401
from . import autograd  # noqa: F401
from . import text  # noqa: F401
from . import onnx  # noqa: F401
from ..ndarray import contrib as ndarray  # noqa: F401
from ..symbol import contrib as symbol  # noqa: F401

nd = ndarray
sym = symbol
