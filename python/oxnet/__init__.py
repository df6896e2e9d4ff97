"""oxnet: Apache MXNet 1.x's programming model on a Rust core.

    import oxnet as mx
    a = mx.nd.ones((2, 3))
    print((a * 2 + 1).asnumpy())
"""

__version__ = "0.1.0"

from . import base
from .base import MXNetError
from . import util
from .util import is_np_shape, set_np_shape, np_shape, use_np_shape
from .util import is_np_array, np_array, use_np_array, use_np
from . import runtime
from . import engine
from . import profiler
from . import error
from . import log
from . import registry
from . import context
from .context import Context, cpu, gpu, cpu_pinned, current_context, num_gpus
from . import ndarray
from . import ndarray as nd
from . import random
from . import random as rnd
from . import autograd
from . import name
from . import attribute
from .attribute import AttrScope
from . import symbol
from . import symbol as sym
from . import executor
from . import operator
from . import monitor
from . import monitor as mon
from . import visualization
from . import visualization as viz
from . import test_utils
from . import lr_scheduler
from . import optimizer
from . import kvstore
from . import kvstore as kv
from . import initializer
from . import initializer as init
from . import io
from . import metric
from . import model
from . import callback
from . import module
from . import module as mod
from . import rnn
from . import numpy
from . import numpy as np
from . import numpy_extension
from . import numpy_extension as npx
from . import gluon
from . import contrib  # noqa: E402
from . import onnx  # noqa: E402
from . import recordio  # noqa: E402
from . import image  # noqa: E402
from . import image as img  # noqa: E402

__all__ = ["nd", "ndarray", "random", "autograd", "context", "Context", "cpu", "gpu",
           "cpu_pinned", "current_context", "num_gpus", "MXNetError", "base", "test_utils",
           "kv", "kvstore", "optimizer", "lr_scheduler", "name", "initializer", "init", "io",
           "metric", "gluon", "sym", "symbol", "executor", "attribute", "AttrScope", "viz",
           "visualization", "model", "callback", "module", "mod", "util", "runtime",
           "engine", "rnn", "is_np_shape", "set_np_shape", "np_shape", "use_np_shape",
           "is_np_array", "np_array", "use_np_array", "use_np", "np", "npx", "numpy",
           "numpy_extension"]

# A server rank of a distributed kvstore job serves here and exits (MXNet does the
# same at import); a worker rank sets up its MPI side.
kvstore.kvstore_server._init_kvstore_server_module()
