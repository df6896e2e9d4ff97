"""Basic definitions shared by the package: the error type, the `_Null` sentinel
that marks an argument the caller did not give, and the numeric type aliases."""

import numbers

import numpy as np

from . import _core

#: The error every failing oxnet operation raises (MXNet's ``MXNetError``).
MXNetError = _core.MXNetError


class MXNetIndexError(MXNetError, IndexError):
    """An out-of-range index: both an ``MXNetError`` and an ``IndexError``
    (MXNet 1.9 raises ``IndexError`` here; code catching either keeps working)."""


class MXNetValueError(MXNetError, ValueError):
    """A bad argument value where MXNet 1.9 raises ``ValueError`` (for example a
    missing array in ``Symbol.bind``): both an ``MXNetError`` and a ``ValueError``."""


class _NullType:
    """Placeholder for arguments not given by the caller."""

    def __repr__(self):
        return "_Null"


_Null = _NullType()
_core._set_null(_Null)

mx_real_t = np.float32
string_types = (str,)
numeric_types = (float, int, np.generic)
integer_types = (int, np.integer)

__all__ = ["MXNetError", "MXNetIndexError", "_Null", "mx_real_t", "string_types",
           "numeric_types", "integer_types", "numbers"]


def data_dir_default():
    """MXNet's default data directory: ``~/.mxnet``."""
    import os
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir():
    """The data directory: ``$MXNET_HOME`` when set, else ``~/.mxnet`` (pretrained
    model files live in its ``models`` folder)."""
    import os
    return os.getenv("MXNET_HOME", data_dir_default())
