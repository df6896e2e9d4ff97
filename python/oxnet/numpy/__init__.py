"""``mx.np``: MXNet 1.9.1's NumPy-compatible array module on oxnet's registry ops.

``mx.np.ndarray`` follows NumPy's semantics (zero-dim arrays, NumPy broadcasting,
``array([...])`` printing); the functions here take and return it. See
:mod:`oxnet.numpy.multiarray` for what is built; a NumPy name that is not built is
absent (AttributeError), never approximated.
"""

import numpy as _np

from .multiarray import *  # noqa: F401,F403
from .multiarray import ndarray, _wrap  # noqa: F401
from . import random  # noqa: F401
from . import linalg  # noqa: F401

# NumPy's dtypes and constants, as MXNet's np module re-exports them.
float16 = _np.float16
float32 = _np.float32
float64 = _np.float64
int8 = _np.int8
uint8 = _np.uint8
int32 = _np.int32
int64 = _np.int64
bool_ = _np.bool_
dtype = _np.dtype
pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
newaxis = None
