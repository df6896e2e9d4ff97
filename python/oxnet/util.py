"""Small utilities MXNet keeps in ``mx.util``: environment variables seen by the core,
the NumPy-shape / NumPy-array semantics switches and their scopes and decorators,
GPU queries and directory helpers.

The two semantics switches follow MXNet 1.9.1:

* *NumPy shape* (``set_np_shape``/``np_shape``/``use_np_shape``): whether a 0 in a
  shape is a real zero-size dimension and ``()`` a scalar shape (on), or 0 means
  "unknown" as in legacy MXNet (off). It has a process-wide setting
  (``set_np_shape(2)``) and a per-thread one (``set_np_shape(True)``); the per-thread
  one wins when set in that thread.
* *NumPy array* (``set_np_array``/``np_array``/``use_np_array``): whether Gluon
  creates ``mx.np`` arrays. It is per thread.
"""

import functools
import inspect
import logging
import os
import threading

from .base import py_str  # noqa: F401

__all__ = ["makedirs", "get_gpu_count", "get_gpu_memory", "set_np_shape", "is_np_shape",
           "np_shape", "use_np_shape", "set_module", "np_array", "is_np_array",
           "use_np_array", "use_np", "is_np_default_dtype", "set_np_default_dtype",
           "np_default_dtype", "use_np_default_dtype", "np_ufunc_legal_option", "wrap_np_unary_func",
           "wrap_np_binary_func", "set_np", "reset_np", "getenv", "setenv",
           "set_flush_denorms", "get_cuda_compute_capability", "get_rtc_compile_opts"]


def makedirs(d):
    """Creates directory ``d`` and its parents; no error when it exists."""
    os.makedirs(os.path.expanduser(d), exist_ok=True)


def get_gpu_count():
    """The number of CUDA devices this process can use."""
    from .context import num_gpus
    return num_gpus()


def get_gpu_memory(gpu_dev_id):
    """``(free, total)`` memory in bytes of CUDA device ``gpu_dev_id``."""
    from .context import gpu_memory_info
    return gpu_memory_info(gpu_dev_id)


def get_cuda_compute_capability(ctx):
    """The compute capability of ``ctx``'s CUDA device as an int (``80`` for 8.0)."""
    if ctx.device_type != "gpu":
        raise ValueError("Expecting a gpu context to get cuda compute capability, "
                         "while received ctx {}".format(str(ctx)))
    from . import _core
    major, minor = _core.gpu_compute_capability(ctx.device_id)
    return major * 10 + minor


def get_rtc_compile_opts(ctx):
    """NVRTC options for runtime-compiled kernels on ``ctx``: the target architecture."""
    arch = get_cuda_compute_capability(ctx)
    return ["--gpu-architecture=compute_%d" % arch]


# ---- environment ------------------------------------------------------------------

def _libc_getenv():
    import ctypes
    try:
        fn = ctypes.CDLL(None).getenv
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_char_p
    fn.argtypes = [ctypes.c_char_p]
    return fn


_C_GETENV = _libc_getenv()


def getenv(name):
    """The value of environment variable ``name`` as the core sees it (read from the C
    runtime's environment, which the core's code reads), or None when unset."""
    if _C_GETENV is None:
        return os.environ.get(name)
    value = _C_GETENV(name.encode("utf-8"))
    return None if value is None else value.decode("utf-8")


def setenv(name, value):
    """Sets environment variable ``name`` for Python and the core (both read the one
    process environment); ``value`` None removes it."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


_flush_denorms = [False]


def set_flush_denorms(value):
    """Records whether denormal floats should flush to zero; returns the previous
    setting. oxnet's kernels do not change the CPU's floating-point mode, so this only
    keeps MXNet's bookkeeping (MXNet returns the previous value the same way)."""
    prev = _flush_denorms[0]
    _flush_denorms[0] = bool(value)
    return prev


# ---- NumPy-shape semantics ----------------------------------------------------------

_NP_SHAPE_OFF, _NP_SHAPE_THREAD, _NP_SHAPE_GLOBAL = 0, 1, 2
_np_shape_global = [_NP_SHAPE_OFF]
_np_shape_local = threading.local()
_np_shape_logged = [False]


def is_np_shape():
    """Whether NumPy-shape semantics are on in this thread (by its own setting, else
    by the process-wide one)."""
    local = getattr(_np_shape_local, "value", None)
    if local is not None:
        return bool(local)
    return _np_shape_global[0] == _NP_SHAPE_GLOBAL


def set_np_shape(active):
    """Turns NumPy-shape semantics on (True/1: this thread; 2: every thread) or off
    (False/0: this thread and the process-wide setting); returns the previous state
    as a bool."""
    active = int(active)
    if active not in (_NP_SHAPE_OFF, _NP_SHAPE_THREAD, _NP_SHAPE_GLOBAL):
        raise ValueError("set_np_shape expects 0, 1 (this thread) or 2 (all threads), got %r"
                         % (active,))
    if active:
        if not _np_shape_logged[0]:
            logging.info("NumPy-shape semantics has been activated in your code. This is "
                         "required for creating and manipulating scalar and zero-size "
                         "tensors, which were not supported in MXNet before.")
            _np_shape_logged[0] = True
    elif is_np_array():
        raise ValueError("Deactivating NumPy shape semantics while NumPy array semantics "
                         "is still active is not allowed. Please consider calling "
                         "`npx.reset_np()` to deactivate both of them.")
    prev = is_np_shape()
    if active == _NP_SHAPE_GLOBAL:
        _np_shape_global[0] = _NP_SHAPE_GLOBAL
        _np_shape_local.value = None
    elif active == _NP_SHAPE_THREAD:
        _np_shape_local.value = True
    else:
        _np_shape_global[0] = _NP_SHAPE_OFF
        _np_shape_local.value = None
    return prev


class _NumpyShapeScope:
    """``with _NumpyShapeScope(flag):`` sets NumPy-shape semantics for the block and
    restores the previous state after it."""

    def __init__(self, is_np_shape):  # pylint: disable=redefined-outer-name
        self._enter_is_np_shape = is_np_shape
        self._prev_is_np_shape = None

    def __enter__(self):
        if self._enter_is_np_shape is not None:
            self._prev_is_np_shape = set_np_shape(self._enter_is_np_shape)

    def __exit__(self, ptype, value, trace):
        if self._enter_is_np_shape is not None and \
                self._prev_is_np_shape != self._enter_is_np_shape:
            set_np_shape(self._prev_is_np_shape)


def np_shape(active=True):
    """A scope (``with np_shape(True):``) with NumPy-shape semantics on or off."""
    return _NumpyShapeScope(active)


def _wrap_scoped(func, scope_factory, what):
    """``func`` (a function or a class, whose methods are all wrapped) run inside
    ``scope_factory()``."""
    if isinstance(func, type):
        for name, method in inspect.getmembers(
                func, predicate=lambda f: inspect.isfunction(f) or inspect.ismethod(f)):
            setattr(func, name, _wrap_scoped(method, scope_factory, what))
        return func
    if callable(func):
        @functools.wraps(func)
        def _with_scope(*args, **kwargs):
            with scope_factory():
                return func(*args, **kwargs)
        return _with_scope
    raise TypeError("%s can only decorate classes and callable objects, while received "
                    "a {}".format(str(type(func))) % what)


def use_np_shape(func):
    """Decorator: ``func`` (or every method of a class) runs with NumPy-shape semantics."""
    return _wrap_scoped(func, lambda: np_shape(True), "use_np_shape")


# ---- NumPy-array semantics ----------------------------------------------------------

class _NumpyArrayScope:
    """``with _NumpyArrayScope(flag):`` sets NumPy-array semantics for the block in this
    thread. ``_NumpyArrayScope._current.value`` holds the scope in force."""

    _current = threading.local()

    def __init__(self, is_np_array):  # pylint: disable=redefined-outer-name
        self._old_scope = None
        self._is_np_array = is_np_array

    def __enter__(self):
        if not hasattr(_NumpyArrayScope._current, "value"):
            _NumpyArrayScope._current.value = _NumpyArrayScope(False)
        self._old_scope = _NumpyArrayScope._current.value
        _NumpyArrayScope._current.value = self
        return self

    def __exit__(self, ptype, value, trace):
        assert self._old_scope
        _NumpyArrayScope._current.value = self._old_scope


def np_array(active=True):
    """A scope (``with np_array(True):``) with NumPy-array semantics on or off."""
    return _NumpyArrayScope(active)


def is_np_array():
    """Whether NumPy-array semantics are on in this thread."""
    current = _NumpyArrayScope._current
    return current.value._is_np_array if hasattr(current, "value") else False


def use_np_array(func):
    """Decorator: ``func`` (or every method of a class) runs with NumPy-array semantics."""
    return _wrap_scoped(func, lambda: np_array(True), "use_np_array")


def use_np(func):
    """Decorator: both NumPy-shape and NumPy-array semantics for ``func``."""
    return use_np_shape(use_np_array(func))


def _set_np_array(active):
    """Sets NumPy-array semantics in this thread; returns the previous state."""
    active = bool(active)
    if active:
        logging.info("NumPy array semantics has been activated in your code. This allows "
                     "you to use operators from MXNet NumPy and NumPy Extension modules "
                     "as well as MXNet NumPy `ndarray`s.")
    cur = _NumpyArrayScope._current
    prev = cur.value._is_np_array if hasattr(cur, "value") else False
    cur.value = _NumpyArrayScope(active)
    return prev


def set_np(shape=True, array=True, dtype=False):
    """Turns NumPy shape and array semantics on (array semantics need shape semantics);
    ``dtype=True`` also makes float64 the default dtype of ``mx.np``'s array creation
    (float32 otherwise, as MXNet 1.9.1)."""
    if not shape and array:
        raise ValueError("NumPy Shape semantics is required in using NumPy array semantics.")
    _set_np_array(array)
    set_np_shape(shape)
    set_np_default_dtype(dtype)


def reset_np():
    """Turns NumPy shape and array semantics (and the float64 default dtype) off."""
    set_np(shape=False, array=False, dtype=False)


# ---- NumPy default dtype -------------------------------------------------------------

_np_default_dtype = [False]


def is_np_default_dtype():
    """Whether ``mx.np`` creates float64 arrays by default (NumPy's default) instead of
    float32."""
    return _np_default_dtype[0]


def set_np_default_dtype(is_np_default_dtype=True):  # pylint: disable=redefined-outer-name
    """Makes float64 (True) or float32 (False) ``mx.np``'s default dtype; returns the
    previous setting."""
    prev = _np_default_dtype[0]
    _np_default_dtype[0] = bool(is_np_default_dtype)
    return prev


class _NumpyDefaultDtypeScope:
    def __init__(self, is_np_default_dtype):  # pylint: disable=redefined-outer-name
        self._enter = is_np_default_dtype
        self._prev = None

    def __enter__(self):
        if self._enter is not None:
            self._prev = set_np_default_dtype(self._enter)

    def __exit__(self, ptype, value, trace):
        if self._enter is not None and self._prev != self._enter:
            set_np_default_dtype(self._prev)


def np_default_dtype(active=True):
    """A scope (``with np_default_dtype(True):``) with float64 as ``mx.np``'s default
    dtype (or float32 with False)."""
    return _NumpyDefaultDtypeScope(active)


def use_np_default_dtype(func):
    """Decorator: ``func`` (or every method of a class) runs with float64 as ``mx.np``'s
    default dtype."""
    return _wrap_scoped(func, lambda: np_default_dtype(True), "use_np_default_dtype")


def set_module(module):
    """Decorator setting ``__module__`` of the decorated object (how MXNet makes its
    NumPy-style functions print as ``mxnet.numpy.X``)."""
    def decorator(func):
        if module is not None:
            func.__module__ = module
        return func
    return decorator


# ---- NumPy ufunc-style argument checks ---------------------------------------------

_NP_UFUNC_DEFAULTS = {"where": True, "casting": "same_kind", "order": "K", "dtype": None,
                      "subok": True}
_NP_UFUNC_ALLOWED = {"casting": ("no", "equiv", "safe", "same_kind", "unsafe"),
                     "order": ("C", "F", "A", "K")}


def np_ufunc_legal_option(key, value):
    """Whether ufunc keyword ``key=value`` is one MXNet's NumPy-style functions accept
    (the defaults, plus any casting or order value; dtype may be any dtype)."""
    if key not in _NP_UFUNC_DEFAULTS:
        return False
    if key == "dtype":
        import numpy as np
        return value is None or np.dtype(value) is not None
    if key in _NP_UFUNC_ALLOWED:
        return value in _NP_UFUNC_ALLOWED[key]
    return value == _NP_UFUNC_DEFAULTS[key]


def _check_ufunc_kwargs(name, kwargs):
    for key, value in kwargs.items():
        if key == "out":
            continue
        if key not in _NP_UFUNC_DEFAULTS:
            raise TypeError("{} got an unexpected keyword argument '{}'".format(name, key))
        if not np_ufunc_legal_option(key, value):
            raise NotImplementedError("{}={} is not implemented yet for operator {}"
                                      .format(key, value, name))


def wrap_np_unary_func(func):
    """Decorator for a one-input NumPy-style function: accepts NumPy's ufunc keywords
    (``where``, ``casting``, ``order``, ``dtype``, ``subok``) at their supported values
    and rejects others clearly; passes ``out`` through."""
    @functools.wraps(func)
    def _wrap(x, out=None, **kwargs):
        _check_ufunc_kwargs(func.__name__, kwargs)
        return func(x, out=out)
    return _wrap


def wrap_np_binary_func(func):
    """The two-input form of :func:`wrap_np_unary_func`."""
    @functools.wraps(func)
    def _wrap(x1, x2, out=None, **kwargs):
        _check_ufunc_kwargs(func.__name__, kwargs)
        return func(x1, x2, out=out)
    return _wrap
