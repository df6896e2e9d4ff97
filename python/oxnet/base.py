"""Basic definitions shared by the package: the error type, the `_Null` sentinel
that marks an argument the caller did not give, and the numeric type aliases."""

import atexit  # noqa: F401
import ctypes
import inspect  # noqa: F401
import numbers
import os  # noqa: F401
import platform  # noqa: F401
import re  # noqa: F401
import sys  # noqa: F401

import numpy as np

from . import _core

#: The error every failing oxnet operation raises (MXNet's ``MXNetError``).
MXNetError = _core.MXNetError

#: MXNet's type of an array handle. A monitor callback gets the NDArray itself;
#: ``NDArray(ctypes.cast(arr, NDArrayHandle))`` (the MXNet idiom for the raw handle a
#: callback got) gives back an array sharing its memory.
NDArrayHandle = ctypes.c_void_p


class MXNetIndexError(MXNetError, IndexError):
    """An out-of-range index: both an ``MXNetError`` and an ``IndexError``
    (MXNet 1.9 raises ``IndexError`` here; code catching either keeps working)."""


# errors the core marks as index errors (gather_nd's out-of-range indices) raise this
_core._set_index_error(MXNetIndexError)


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

# bfloat16 as MXNet shows it to NumPy (which has no such type): a structured dtype of
# one uint16 field named 'bfloat16' holding the bits. ``asnumpy()`` of a bfloat16
# array has this dtype; ``astype('float32')`` gives the values.
bfloat16 = np.dtype([("bfloat16", np.uint16)])


_DTYPES = {}
_NAMES = {}


def _np_or_bf16(dtype):
    """``numpy.dtype(dtype)``, with 'bfloat16' (and ml_dtypes' bfloat16) as MXNet's
    structured stand-in. This runs on every array creation: answers are cached by the
    (hashable) dtype given."""
    try:
        return _DTYPES[dtype]
    except (KeyError, TypeError):
        pass
    if isinstance(dtype, str) and dtype in ("bfloat16", "bf16"):
        d = bfloat16
    else:
        d = np.dtype(dtype)
        if d.names == ("bfloat16",) and d.itemsize == 2 or d.name == "bfloat16":
            d = bfloat16
    try:
        if len(_DTYPES) < 1024:
            _DTYPES[dtype] = d
    except TypeError:
        pass
    return d


def _is_bfloat16(dtype):
    try:
        return _np_or_bf16(dtype) is bfloat16
    except TypeError:
        return False


def np_dtype(dtype):
    """``numpy.dtype(dtype)``, also for 'bfloat16' (MXNet's structured stand-in)."""
    return _np_or_bf16(dtype)


def np_type(dtype):
    """What MXNet reports for a dtype: the NumPy scalar type (numpy.float32, ...),
    or for bfloat16 its structured dtype object."""
    d = _np_or_bf16(dtype)
    return d if d is bfloat16 else d.type


def dtype_name(dtype):
    """The registry's name of a dtype: 'float32', ..., 'bfloat16'."""
    d = _np_or_bf16(dtype)
    try:
        return _NAMES[d]
    except KeyError:
        name = _NAMES[d] = "bfloat16" if d is bfloat16 else d.name
        return name


string_types = (str,)
numeric_types = (float, int, np.generic)
integer_types = (int, np.integer)

long = int
basestring = str

__all__ = ["MXNetError", "MXNetIndexError", "_Null", "mx_real_t", "string_types",
           "numeric_types", "integer_types", "numbers", "py_str", "NotImplementedForSymbol",
           "NotSupportedForSparseNDArray", "data_dir", "data_dir_default", "classproperty",
           "register_error", "error_types", "with_metaclass", "build_param_doc",
           "add_fileline_to_docstring", "long", "basestring"]


def py_str(x):
    """Text from the bytes the core (or a file) hands back; a str is returned as it is."""
    return x.decode("utf-8") if isinstance(x, (bytes, bytearray)) else x


def _as_list(obj):
    """``obj`` itself when it is a list or tuple, else ``[obj]``."""
    return obj if isinstance(obj, (list, tuple)) else [obj]


#: Error classes by name, as MXNet registers them for its C error handler.
error_types = {}


def register_error(func_name=None, cls=None):
    """Registers an error class in ``error_types`` under ``func_name`` (default: its
    class name). Usable as ``@register_error`` or ``@register_error("Name")``."""
    if callable(func_name):
        cls, func_name = func_name, func_name.__name__

    def register(mycls):
        error_types[func_name if isinstance(func_name, str) else mycls.__name__] = mycls
        return mycls
    return register if cls is None else register(cls)


class _UnavailableFor(MXNetError):
    """A function called with arguments of a kind it does not support."""

    _where = ""

    def __init__(self, function, alias, *args):
        super().__init__()
        self.function = function.__name__
        self.alias = alias
        self.args = [str(type(a)) for a in args]

    def __str__(self):
        text = "Function {}".format(self.function)
        if self.alias:
            text += ' (namely operator "{}")'.format(self.alias)
        if self.args:
            text += " with arguments ({})".format(", ".join(self.args))
        return text + self._where


@register_error
class NotImplementedForSymbol(_UnavailableFor):
    """A function that exists for NDArray but not for Symbol."""

    _where = " is not implemented for Symbol and only available in NDArray."


class NotSupportedForSparseNDArray(_UnavailableFor):
    """A function that exists for dense NDArrays but not for sparse ones."""

    _where = " is not supported for SparseNDArray and only available in NDArray."


for _name, _cls in (("ValueError", ValueError), ("TypeError", TypeError),
                    ("AttributeError", AttributeError), ("IndexError", IndexError),
                    ("NotImplementedError", NotImplementedError)):
    register_error(_name, _cls)


class _ClassPropertyDescriptor:
    """A property of a class: ``Cls.name`` calls the getter with the class; with a
    setter (and ``_ClassPropertyMeta`` as metaclass) ``Cls.name = v`` calls it."""

    def __init__(self, fget, fset=None):
        self.fget = fget
        self.fset = fset

    def __get__(self, obj, klass=None):
        if klass is None:
            klass = type(obj)
        return self.fget.__get__(obj, klass)()

    def __set__(self, obj, value):
        if self.fset is None:
            raise AttributeError("can't set attribute")
        klass = obj if isinstance(obj, type) else type(obj)
        return self.fset.__get__(obj, klass)(value)

    def setter(self, func):
        """Adds a setter (a function of the class and the value)."""
        if not isinstance(func, (classmethod, staticmethod)):
            func = classmethod(func)
        self.fset = func
        return self


class _ClassPropertyMeta(type):
    """Metaclass routing ``Cls.name = value`` to a class property's setter."""

    def __setattr__(cls, key, value):
        for klass in cls.__mro__:
            prop = klass.__dict__.get(key)
            if isinstance(prop, _ClassPropertyDescriptor):
                return prop.__set__(cls, value)
        return super().__setattr__(key, value)


def classproperty(func):
    """Decorator: a property of the class (``Cls.name`` calls ``func(Cls)``); add a
    setter with ``@name.setter`` (the class needs ``_ClassPropertyMeta``)."""
    if not isinstance(func, (classmethod, staticmethod)):
        func = classmethod(func)
    return _ClassPropertyDescriptor(func)


def with_metaclass(meta, *bases):
    """A base class to inherit from so that a class gets metaclass ``meta`` and bases
    ``bases``."""
    return meta("_WithMetaclassBase", bases or (object,), {})


def build_param_doc(arg_names, arg_types, arg_descs, remove_dup=True):
    """The "Parameters" section of a NumPy-style docstring from names, type strings and
    descriptions (``num_args`` left out; repeated names once when ``remove_dup``)."""
    seen, entries = set(), []
    for key, type_info, desc in zip(arg_names, arg_types, arg_descs):
        if key == "num_args" or (remove_dup and key in seen):
            continue
        seen.add(key)
        entries.append("%s : %s" % (key, type_info) + ("\n    " + desc if desc else ""))
    return "Parameters\n----------\n%s\n" % "\n".join(entries)


def add_fileline_to_docstring(module, incursive=True):
    """Appends "From:file:line" to the docstring of each function and class (and, when
    ``incursive``, their methods) defined in ``module`` (a module or its name)."""
    import inspect
    import sys

    def add(obj):
        if obj.__doc__ is None or "From:" in obj.__doc__:
            return
        try:
            fname = inspect.getsourcefile(obj)
            line = inspect.getsourcelines(obj)[-1]
        except (TypeError, OSError):
            return
        if fname is None:
            return
        try:
            obj.__doc__ += "\n\nFrom:%s:%d" % (fname, line)
        except (AttributeError, TypeError):
            pass

    if isinstance(module, str):
        module = sys.modules[module]
    for _, obj in inspect.getmembers(module):
        if inspect.isbuiltin(obj):
            continue
        if inspect.isfunction(obj):
            add(obj)
        if inspect.ismethod(obj):
            add(obj.__func__)
        if inspect.isclass(obj) and incursive:
            add_fileline_to_docstring(obj, False)


def data_dir_default():
    """MXNet's default data directory: ``~/.mxnet``."""
    import os
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir():
    """The data directory: ``$MXNET_HOME`` when set, else ``~/.mxnet`` (pretrained
    model files live in its ``models`` folder)."""
    import os
    return os.getenv("MXNET_HOME", data_dir_default())
