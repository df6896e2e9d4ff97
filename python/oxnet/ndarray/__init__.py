"""``mx.nd``: NDArray and every registered operator as a function."""

import sys as _sys
import types as _types

from . import register as _register
from . import ndarray as _nd_module
from .ndarray import *  # noqa: F401,F403
from .ndarray import NDArray

_internal = _types.ModuleType("oxnet.ndarray._internal", "Internal (underscore-named) operators.")
op = _types.ModuleType("oxnet.ndarray.op", "Every public registered operator.")
contrib = _types.ModuleType("oxnet.ndarray.contrib", "Contrib operators.")
linalg = _types.ModuleType("oxnet.ndarray.linalg", "Linear algebra operators.")
image = _types.ModuleType("oxnet.ndarray.image", "Image operators (_image_*).")
_sys.modules[linalg.__name__] = linalg  # `import oxnet.ndarray.linalg` works as in MXNet

_register.generate(op, _internal, {"contrib": contrib, "linalg": linalg, "image": image})
_nd_module._internal = _internal
_nd_module._op = op
_nd_module._attach_fluent(op)

# Public ops are also plain mx.nd functions, unless a Python helper of the same
# name exists (as in MXNet, e.g. mx.nd.maximum handles scalars).
for _name in dir(op):
    if not _name.startswith("__") and _name not in globals():
        globals()[_name] = getattr(op, _name)

from . import random  # noqa: E402
from .utils import save, load, load_frombuffer  # noqa: E402,F401
from .cached_op import CachedOp  # noqa: E402,F401
from . import numpy_scalars  # noqa: E402,F401

from . import py_ops as _py_ops  # noqa: E402
_py_ops.install(_internal, op)
from .py_ops import moveaxis, linspace, split_v2, histogram, onehot_encode  # noqa: E402,F401

from . import sparse  # noqa: E402
_sys.modules[__name__ + ".sparse"] = sparse
sparse.install(op, _internal, sparse)
from .sparse import CSRNDArray, RowSparseNDArray, BaseSparseNDArray  # noqa: E402,F401

from .custom import Custom  # noqa: E402,F401
op.Custom = Custom
from . import contrib_funcs as _contrib_funcs  # noqa: E402
_contrib_funcs.install(contrib)
from . import control_flow as _control_flow  # noqa: E402
_control_flow.install(contrib)
from .indexing import (indexing_key_expand_implicit_axes, get_indexing_dispatch_code,  # noqa: E402,F401
                       get_oshape_of_gather_nd_op)
