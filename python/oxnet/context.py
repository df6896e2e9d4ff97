"""Devices. ``cpu(i)`` are distinct logical devices sharing host memory; ``gpu(i)``
are CUDA devices. ``with mx.Context(...)`` sets the default device of the thread."""

import importlib.util
import os
import threading

from . import _core
from .base import classproperty, _ClassPropertyMeta

def _find_nvrtc():
    """Points the core at NVRTC from the pip package ``nvidia-cuda-nvrtc`` (its
    library is not on the linker's path) unless ``OXNET_NVRTC_LIBRARY`` is set."""
    if os.environ.get("OXNET_NVRTC_LIBRARY"):
        return
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return
    for root in (spec.submodule_search_locations or []) if spec else []:
        for sub, name in (("cu13", "libnvrtc.so.13"), ("cuda_nvrtc", "libnvrtc.so.12")):
            path = os.path.join(root, sub, "lib", name)
            if os.path.isfile(path):
                os.environ["OXNET_NVRTC_LIBRARY"] = path
                return

_find_nvrtc()


def _register_cuda_wheels():
    """Tells the core where NVIDIA's pip wheels (cuBLAS, cuDNN, NCCL) live in this
    Python: the folders of the ``nvidia`` namespace package."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return
    roots = list(spec.submodule_search_locations or []) if spec else []
    if roots:
        _core.cuda_set_wheel_roots([str(r) for r in roots])


_register_cuda_wheels()

class Context(metaclass=_ClassPropertyMeta):
    """A device: ``Context('cpu', 0)``, ``Context('gpu', 1)``; usable as ``with ctx:``."""

    _default_ctx = threading.local()
    devtype2str = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type = {"cpu": 1, "gpu": 2, "cpu_pinned": 3, "cpu_shared": 5}

    def __init__(self, device_type, device_id=0):
        if isinstance(device_type, Context):
            self.device_typeid = device_type.device_typeid
            self.device_id = device_type.device_id
        else:
            if device_type not in Context.devstr2type:
                raise ValueError("unknown device type %r" % (device_type,))
            self.device_typeid = Context.devstr2type[device_type]
            self.device_id = int(device_id)
        self._old_ctx = None

    @property
    def device_type(self):
        """Returns the device type of current context: 'cpu', 'gpu', ..."""
        return Context.devtype2str[self.device_typeid]

    def __hash__(self):
        return hash((self.device_typeid, self.device_id))

    def __eq__(self, other):
        return (isinstance(other, Context) and self.device_typeid == other.device_typeid
                and self.device_id == other.device_id)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __str__(self):
        return "%s(%d)" % (self.device_type, self.device_id)

    def __repr__(self):
        return self.__str__()

    def __enter__(self):
        if not hasattr(Context._default_ctx, "value"):
            Context._default_ctx.value = Context("cpu", 0)
        self._old_ctx = Context._default_ctx.value
        Context._default_ctx.value = self
        return self

    def __exit__(self, ptype, value, trace):
        Context._default_ctx.value = self._old_ctx

    @classproperty
    def default_ctx(cls):  # pylint: disable=no-self-argument
        """[Deprecated: use ``current_context()``] this thread's default context;
        settable (``Context.default_ctx = ctx``)."""
        import warnings
        warnings.warn("Context.default_ctx has been deprecated. Please use "
                      "Context.current_context() instead. Please use "
                      "test_utils.set_default_context to set a default context",
                      DeprecationWarning)
        if not hasattr(Context._default_ctx, "value"):
            Context._default_ctx.value = Context("cpu", 0)
        return Context._default_ctx.value

    @default_ctx.setter
    def default_ctx(cls, val):  # pylint: disable=no-self-argument
        import warnings
        warnings.warn("Context.default_ctx has been deprecated. Please use "
                      "Context.current_context() instead. Please use "
                      "test_utils.set_default_context to set a default context",
                      DeprecationWarning)
        Context._default_ctx.value = val

    def empty_cache(self):
        """Releases the memory the device's pool holds for reuse."""
        if self.device_typeid != 2:
            _core.pool_release()
        else:
            _core.gpu_release(self.device_id)

    # MXNet exposes the thread's default as a class attribute too.
    @classmethod
    def _current(cls):
        if not hasattr(cls._default_ctx, "value"):
            cls._default_ctx.value = Context("cpu", 0)
        return cls._default_ctx.value

def cpu(device_id=0):
    """Returns a CPU context. ``cpu(i)`` for different ``i`` are distinct devices
    sharing host memory."""
    return Context("cpu", device_id)

def cpu_pinned(device_id=0):
    """Returns a CPU pinned memory context (host memory)."""
    return Context("cpu_pinned", device_id)

def gpu(device_id=0):
    """Returns a GPU context. Using it on a machine without an NVIDIA driver raises
    ``MXNetError``."""
    return Context("gpu", device_id)

def num_gpus():
    """Query CUDA for the number of GPUs present (0 without a driver)."""
    return _core.num_gpus()

def gpu_memory_info(device_id=0):
    """Returns ``(free, total)`` bytes of GPU memory of device ``device_id``; raises
    ``MXNetError`` where there is no such GPU."""
    return _core.gpu_memory_info(int(device_id))

def current_context():
    """Returns the current context (``cpu(0)`` unless changed with ``with ctx:``)."""
    return Context._current()

_CTX_CACHE = {}

def _ctx_from_tuple(t):
    c = _CTX_CACHE.get(t)
    if c is None:
        c = Context(Context.devtype2str[t[0]], t[1])
        _CTX_CACHE[t] = c
    return c

__all__ = ["Context", "cpu", "gpu", "cpu_pinned", "num_gpus", "gpu_memory_info", "current_context"]
