"""MXNet's NDArray API. The class itself (handles, arithmetic operators, data access)
is defined in Rust (``oxnet._core.NDArray``); this module adds the rest of MXNet's
methods to it (indexing, repr, pickling, fluent methods) and defines the creation
functions (``array``, ``zeros``, ``arange``...) over the registry's ops."""

import numpy as np

from .. import _core
from ..base import MXNetError, MXNetValueError, _Null, mx_real_t, numeric_types
from ..base import bfloat16, np_dtype, _is_bfloat16, dtype_name as _dtype_name  # noqa: F401
from ..context import Context, current_context, _ctx_from_tuple

NDArray = _core.NDArray
NDArray.__module__ = "oxnet.ndarray"

# MXNet's names for Python's slice (kept because MXNet code imports it from here) and
# its storage-type codes (the ids a symbol's ``__storage_type__`` attribute holds).
py_slice = slice
_STORAGE_TYPE_UNDEFINED = -1
_STORAGE_TYPE_DEFAULT = 0
_STORAGE_TYPE_ROW_SPARSE = 1
_STORAGE_TYPE_CSR = 2
_STORAGE_TYPE_STR_TO_ID = {
    'undefined': _STORAGE_TYPE_UNDEFINED,
    'default': _STORAGE_TYPE_DEFAULT,
    'row_sparse': _STORAGE_TYPE_ROW_SPARSE,
    'csr': _STORAGE_TYPE_CSR,
}
_STORAGE_TYPE_ID_TO_STR = {v: k for k, v in _STORAGE_TYPE_STR_TO_ID.items()}

# MXNet's dtype codes (the ints its C API and a CustomOpProp's create_operator use).
_DTYPE_NP_TO_MX = {
    None: -1,
    np.float32: 0,
    np.float64: 1,
    np.float16: 2,
    np.uint8: 3,
    np.int32: 4,
    np.int8: 5,
    np.int64: 6,
    np.bool_: 7,
    np.int16: 8,
    np.uint16: 9,
    np.uint32: 10,
    np.uint64: 11,
    bfloat16: 12,
}
_DTYPE_MX_TO_NP = {v: k for k, v in _DTYPE_NP_TO_MX.items()}

_internal = None  # set by oxnet.ndarray.__init__ to the generated _internal module
_op = None  # set by oxnet.ndarray.__init__ to the generated op namespace


def _ctx(ctx):
    return current_context() if ctx is None else (ctx if isinstance(ctx, Context) else Context(ctx))


def _dtype(dtype, default=mx_real_t):
    if dtype is None or dtype is _Null:
        dtype = default
    return np_dtype(dtype)


# ---------------------------------------------------------------------------
# Creation


def empty(shape, ctx=None, dtype=None, stype=None):
    """Returns a new array of given shape and type, without initializing entries."""
    if stype is not None and stype != "default":
        from oxnet.ndarray import sparse as _sp  # (absolute: no __package__ check under an mxnet alias)
        return _sp.empty(stype, shape, ctx=ctx, dtype=dtype)
    if isinstance(shape, int):
        shape = (shape,)
    ctx = _ctx(ctx)
    return _core.empty(tuple(shape), ctx.device_typeid, ctx.device_id, _dtype_name(_dtype(dtype)))


def _check_legacy_shape(op, shape):
    """Outside NumPy-shape semantics (``mx.np_shape``) a 0 in a shape means "unknown"
    and ``()`` an unknown rank, as in MXNet 1.9.1: creating such an array fails
    there, as MXNet's shape inference does."""
    from oxnet.util import is_np_shape  # (absolute: no __package__ check under an mxnet alias)
    if is_np_shape():
        return
    shape = tuple(shape)
    if not shape or any(int(d) == 0 for d in shape):
        raise MXNetError("Operator %s inferring shapes failed: shape %s is unknown outside "
                         "NumPy-shape semantics (0 and () mean an unknown dimension and "
                         "rank there); use `with mx.np_shape():` for zero-size and scalar "
                         "arrays" % (op, shape))


def zeros(shape, ctx=None, dtype=None, stype=None, **kwargs):
    """Returns a new array filled with all zeros, with the given shape and type.

    Outside ``mx.np_shape()`` a shape with a 0 or ``()`` raises MXNetError (unknown
    shape), as in MXNet."""
    if stype is not None and stype != "default":
        from oxnet.ndarray import sparse as _sp  # (absolute: no __package__ check under an mxnet alias)
        return _sp.zeros(stype, shape, ctx=ctx, dtype=dtype, **kwargs)
    if isinstance(shape, int):
        shape = (shape,)
    _check_legacy_shape("_zeros", shape)
    return _filled("_zeros", shape, ctx, dtype, kwargs)


def ones(shape, ctx=None, dtype=None, stype=None, **kwargs):
    """Returns a new array filled with all ones, with the given shape and type.

    Outside ``mx.np_shape()`` a shape with a 0 or ``()`` raises MXNetError (unknown
    shape), as in MXNet."""
    if isinstance(shape, int):
        shape = (shape,)
    _check_legacy_shape("_ones", shape)
    return _filled("_ones", shape, ctx, dtype, kwargs)


def _filled(op, shape, ctx=None, dtype=None, kwargs=None):
    """``_zeros``/``_ones`` of any shape, zero-size and scalar included (``mx.np``'s
    creation functions, which always have NumPy shapes, come here)."""
    if isinstance(shape, int):
        shape = (shape,)
    return getattr(_internal, op)(shape=shape, ctx=_ctx(ctx), dtype=_dtype_name(_dtype(dtype)),
                                  **(kwargs or {}))


def full(shape, val, ctx=None, dtype=mx_real_t, out=None):
    """Returns a new array of given shape and type, filled with the given value `val`."""
    if isinstance(shape, int):
        shape = (shape,)
    return _internal._full(shape=shape, ctx=_ctx(ctx), dtype=_dtype_name(_dtype(dtype)), value=float(val), out=out)


def array(source_array, ctx=None, dtype=None):
    """Creates an array from any object exposing the array interface.

    As in MXNet, the dtype defaults to float32 for anything but an NDArray source; a
    sparse NDArray or a SciPy sparse matrix gives a sparse array."""
    if isinstance(source_array, NDArray) and source_array.stype != "default":
        from oxnet.ndarray import sparse as _sp  # (absolute: no __package__ check under an mxnet alias)
        return _sp.array(source_array, ctx=ctx, dtype=dtype)
    if type(source_array).__module__.startswith("scipy.sparse"):
        from oxnet.ndarray import sparse as _sp  # (absolute: no __package__ check under an mxnet alias)
        return _sp.array(source_array, ctx=ctx, dtype=dtype)
    if isinstance(source_array, NDArray):
        dtype = source_array.dtype if dtype is None else dtype
    else:
        dtype = mx_real_t if dtype is None else dtype
        if not isinstance(source_array, np.ndarray):
            try:
                source_array = np.array(source_array, dtype=np.float32 if _is_bfloat16(dtype) else dtype)
            except Exception as e:
                raise TypeError("source_array must be array like object") from e
    arr = empty(source_array.shape, ctx, dtype)
    arr[:] = source_array
    return arr


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None, dtype=mx_real_t):
    """Returns evenly spaced values within a given interval."""
    if infer_range is not None:
        raise ValueError("infer_range argument has been deprecated")
    return _internal._arange(start=start, stop=stop, step=step, repeat=repeat,
                             ctx=_ctx(ctx), dtype=_dtype_name(_dtype(dtype)))


def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):
    """Return a 2-D array with ones on the diagonal and zeros elsewhere."""
    return _internal._eye(N=N, M=M, k=k, ctx=_ctx(ctx), dtype=_dtype_name(_dtype(dtype)), **kwargs)


def waitall():
    """Wait for all asynchronous operations to finish; raises the first deferred error."""
    _core.waitall()


# ---------------------------------------------------------------------------
# Element-wise helpers taking arrays or scalars (MXNet's ``_ufunc_helper``)


def _ufunc_helper(lhs, rhs, fn_array, fn_scalar, lfn_scalar, rfn_scalar=None):
    if isinstance(lhs, numeric_types):
        if isinstance(rhs, numeric_types):
            return fn_scalar(lhs, rhs)
        if rfn_scalar is None:
            return lfn_scalar(rhs, scalar=float(lhs))
        return rfn_scalar(rhs, scalar=float(lhs))
    if isinstance(rhs, numeric_types):
        return lfn_scalar(lhs, scalar=float(rhs))
    if isinstance(rhs, NDArray):
        return fn_array(lhs, rhs)
    raise TypeError("type %s not supported" % str(type(rhs)))


def _make_ufunc(array_op, scalar_op, py_fn, rscalar_op=None, doc=""):
    def fn(lhs, rhs):
        return _ufunc_helper(lhs, rhs, getattr(_op, array_op), py_fn,
                             getattr(_internal, scalar_op),
                             getattr(_internal, rscalar_op) if rscalar_op else None)
    fn.__doc__ = doc
    return fn


import operator as _operator  # noqa: E402

add = _make_ufunc("broadcast_add", "_plus_scalar", _operator.add, doc="Returns element-wise sum of the input arrays with broadcasting.")
subtract = _make_ufunc("broadcast_sub", "_minus_scalar", _operator.sub, "_rminus_scalar", "Returns element-wise difference of the input arrays with broadcasting.")
multiply = _make_ufunc("broadcast_mul", "_mul_scalar", _operator.mul, doc="Returns element-wise product of the input arrays with broadcasting.")
divide = _make_ufunc("broadcast_div", "_div_scalar", _operator.truediv, "_rdiv_scalar", "Returns element-wise division of the input arrays with broadcasting.")
true_divide = divide
modulo = _make_ufunc("broadcast_mod", "_mod_scalar", _operator.mod, "_rmod_scalar", "Returns element-wise modulo of the input arrays with broadcasting.")
power = _make_ufunc("broadcast_power", "_power_scalar", _operator.pow, "_rpower_scalar", "Returns result of first array elements raised to powers from second array, element-wise with broadcasting.")
maximum = _make_ufunc("broadcast_maximum", "_maximum_scalar", lambda x, y: x if x > y else y, doc="Returns element-wise maximum of the input arrays with broadcasting.")
minimum = _make_ufunc("broadcast_minimum", "_minimum_scalar", lambda x, y: x if x < y else y, doc="Returns element-wise minimum of the input arrays with broadcasting.")
hypot = _make_ufunc("broadcast_hypot", "_hypot_scalar", lambda x, y: (x * x + y * y) ** 0.5, doc="Given the legs of a right triangle, returns its hypotenuse.")
equal = _make_ufunc("broadcast_equal", "_equal_scalar", lambda x, y: 1 if x == y else 0, doc="Returns the result of element-wise equal to (==) comparison operation with broadcasting.")
not_equal = _make_ufunc("broadcast_not_equal", "_not_equal_scalar", lambda x, y: 1 if x != y else 0, doc="Returns the result of element-wise not equal to (!=) comparison operation with broadcasting.")
greater = _make_ufunc("broadcast_greater", "_greater_scalar", lambda x, y: 1 if x > y else 0, "_lesser_scalar", "Returns the result of element-wise greater than (>) comparison operation with broadcasting.")
greater_equal = _make_ufunc("broadcast_greater_equal", "_greater_equal_scalar", lambda x, y: 1 if x >= y else 0, "_lesser_equal_scalar", "Returns the result of element-wise greater than or equal to (>=) comparison operation with broadcasting.")
lesser = _make_ufunc("broadcast_lesser", "_lesser_scalar", lambda x, y: 1 if x < y else 0, "_greater_scalar", "Returns the result of element-wise lesser than (<) comparison operation with broadcasting.")
lesser_equal = _make_ufunc("broadcast_lesser_equal", "_lesser_equal_scalar", lambda x, y: 1 if x <= y else 0, "_greater_equal_scalar", "Returns the result of element-wise lesser than or equal to (<=) comparison operation with broadcasting.")
logical_and = _make_ufunc("broadcast_logical_and", "_logical_and_scalar", lambda x, y: 1 if x and y else 0, doc="Returns the result of element-wise logical and comparison operation with broadcasting.")
logical_or = _make_ufunc("broadcast_logical_or", "_logical_or_scalar", lambda x, y: 1 if x or y else 0, doc="Returns the result of element-wise logical or comparison operation with broadcasting.")
logical_xor = _make_ufunc("broadcast_logical_xor", "_logical_xor_scalar", lambda x, y: 1 if bool(x) != bool(y) else 0, doc="Returns the result of element-wise logical xor comparison operation with broadcasting.")

def concatenate(arrays, axis=0, always_copy=True):
    """Joins a sequence of arrays along an existing axis (MXNet's legacy helper)."""
    if not arrays:
        raise ValueError("arrays must not be empty")
    if not always_copy and len(arrays) == 1:
        return arrays[0]
    return _op.concat(*arrays, dim=axis)


# ---------------------------------------------------------------------------
# Methods added to the Rust class


def _context(self):
    """Device context of the array."""
    return _ctx_from_tuple(self._ctx)


def _repr(self):
    shape_info = "x".join(["%d" % x for x in self.shape])
    return "\n%s\n<%s %s @%s>" % (str(self.asnumpy()), self.__class__.__name__, shape_info, self.context)


def _len(self):
    if self.ndim == 0:
        raise TypeError("len() of unsized object")
    return self.shape[0]


def _bool(self):
    num_elements = self.size
    if num_elements == 0:
        return False
    if num_elements == 1:
        return bool(self.asscalar())
    raise ValueError("The truth value of an NDArray with multiple elements is ambiguous.")


def _iter(self):
    for i in range(len(self)):
        yield self[i]


def _getstate(self):
    """MXNet's pickle state: ``{'handle': bytearray}`` in the single-array .params format."""
    return {"handle": bytearray(_core.save_raw(self))}


def _reduce(self):
    return (_from_state, (_getstate(self),))


def _from_state(state):
    """Rebuilds an array from ``__getstate__``'s dict (MXNet loads it on cpu(0); a gpu
    array loads onto its GPU when there is one, else onto cpu(0))."""
    handle = state["handle"]
    if handle is None:
        raise MXNetError("cannot unpickle an NDArray saved without data (handle None): "
                         "oxnet has no handle-less NDArray")
    return _core.load_raw(bytes(handle))


def _setstate(self, state):
    """Loads ``__getstate__``'s dict into this array.

    MXNet points the array at a new handle. oxnet's array handle is fixed at creation,
    so the loaded values are copied in instead: this works when the loaded array has
    this array's shape, dtype and context (as when restoring a state into an array
    made alike), and raises an MXNetError otherwise. Unlike MXNet, views taken of this
    array before see the new values."""
    loaded = _from_state(state)
    if loaded.shape != self.shape or np.dtype(loaded.dtype) != np.dtype(self.dtype) or \
            loaded._ctx != self._ctx:
        raise MXNetError(
            "__setstate__: the state holds an array of shape %s, dtype %s on %s; this array "
            "is %s, %s on %s, and oxnet cannot rebind an existing NDArray to another "
            "shape, dtype or context (unpickle with pickle.loads instead)"
            % (loaded.shape, np.dtype(loaded.dtype).name, loaded.context, self.shape,
               np.dtype(self.dtype).name, self.context))
    _core.copyto(loaded, self)


def _array(self, dtype=None, copy=None):
    a = self.asnumpy()
    return a if dtype is None else a.astype(dtype)


def _tolist(self):
    return self.asnumpy().tolist()


def _copy(self):
    """Makes a copy of this array, on the same context."""
    return self.copyto(self.context)


def _copyto(self, other):
    """Copies the value of this array to another array (returned) or to a new array
    on context ``other``."""
    if isinstance(other, NDArray):
        if other is self:
            import warnings
            warnings.warn("You are attempting to copy an array to itself", RuntimeWarning)
            return False
        if other.stype != "default":
            if np.dtype(other.dtype) != np.dtype(self.dtype):
                _core._copy_any(self.astype(other.dtype), other)
            else:
                _core._copy_any(self, other)
            return other
        _core.copyto(self, other)
        return other
    if isinstance(other, Context):
        hret = empty(self.shape, other, self.dtype)
        _core.copyto(self, hret)
        return hret
    raise TypeError("copyto does not support type " + str(type(other)))


def _as_in_context(self, context):
    """Returns an array on the target device with the same value as this array; this
    array itself when it is already there."""
    if self.context == context:
        return self
    return self.copyto(context)


def _astype(self, dtype, copy=True):
    """Returns a copy of the array after casting to a specified type."""
    dtype = np_dtype(dtype)
    if not copy and np_dtype(self.dtype) == dtype:
        return self
    return _op.cast(self, dtype=_dtype_name(dtype))


def _T(self):
    """Returns a copy of the array with axes transposed (2-D and below)."""
    if len(self.shape) < 2:
        return self
    return _op.transpose(self)


def _reshape(self, *shape, **kwargs):
    """Returns a **view** of this array with a new shape, MXNet's special values
    (0, -1, -2, -3, -4) and ``reverse`` included."""
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    elif not shape:
        shape = kwargs.get("shape")
        if shape is None:
            raise TypeError("Shape must be provided.")
    reverse = kwargs.get("reverse", False)
    bad = [k for k in kwargs if k not in ("shape", "reverse")]
    if bad:
        raise TypeError("Got unknown keywords in reshape: %s. Accepted keyword arguments "
                        "are 'shape' and 'reverse'." % ", ".join(bad))
    try:
        new_shape = _core.infer_reshape(tuple(self.shape), tuple(int(s) for s in shape), bool(reverse))
    except MXNetError as e:
        # MXNet 1.9.1 raises a ValueError for an impossible target shape.
        raise MXNetValueError(str(e)) from None
    return self._reshape_view(list(new_shape))


def _reshape_like(self, *args, **kwargs):
    return _op.reshape_like(self, *args, **kwargs)


_FLUENT = """reshape_like zeros_like ones_like broadcast_axes repeat pad swapaxes split split_v2
slice slice_axis slice_like take one_hot pick sort topk argsort argmax argmax_channel argmin
clip abs sign flatten shape_array size_array expand_dims tile transpose flip depth_to_space
space_to_depth diag sum nansum prod nanprod mean max min norm round rint fix floor ceil trunc
sin cos tan arcsin arccos arctan degrees radians sinh cosh tanh arcsinh arccosh arctanh exp
expm1 log log10 log2 log1p log_sigmoid sqrt rsqrt cbrt rcbrt square reciprocal relu sigmoid
softmax log_softmax softmin squeeze broadcast_to broadcast_like""".split()


def _attach_fluent(op_namespace):
    """Adds MXNet's fluent methods (``a.sum()``, ``a.exp()``...) for the ops that exist."""
    NDArray.broadcast_to = _broadcast_to
    NDArray.broadcast_like = _broadcast_like
    for name in _FLUENT:
        if name in ("broadcast_to", "broadcast_like"):
            continue
        fn = getattr(op_namespace, name, None)
        if fn is None:
            continue

        def method(self, *args, __fn=fn, **kwargs):
            return __fn(self, *args, **kwargs)
        method.__name__ = name
        method.__doc__ = "Convenience fluent method for :py:func:`%s`." % name
        setattr(NDArray, name, method)


def _broadcast_to(self, shape):
    """Broadcasts the array to ``shape``, adding leading axes as needed (MXNet's method)."""
    shape = tuple(shape)
    cur = tuple(self.shape)
    if len(shape) < len(cur):
        raise MXNetError("Error in operator broadcast_to: cannot broadcast shape %s to %s"
                         % (cur, shape))
    if len(shape) > len(cur):
        return _op.broadcast_to(self.reshape((1,) * (len(shape) - len(cur)) + cur), shape=shape)
    return _op.broadcast_to(self, shape=shape)


def _broadcast_like(self, other, **kwargs):
    """Broadcasts the array to the shape of ``other`` (MXNet's method); with
    ``lhs_axes``/``rhs_axes``, only those axes (the ``broadcast_like`` op)."""
    if kwargs:
        return _op.broadcast_like(self, other, **kwargs)
    return _broadcast_to(self, other.shape)


# ---------------------------------------------------------------------------
# Autograd methods (the tape is in Rust: oxnet_core::autograd)


def _attach_grad(self, grad_req='write', stype=None):
    """Attach a gradient buffer to this NDArray, so that `backward`
    can compute gradient with respect to it.

    The gradient is initialized to zeros.

    Parameters
    ----------
    grad_req : {'write', 'add', 'null'}
        How gradient will be accumulated.
        - 'write': gradient will be overwritten on every backward.
        - 'add': gradient will be added to existing value on every backward.
        - 'null': do not compute gradient for this NDArray.
    stype : str, optional
        The storage type of the gradient array ('default', 'row_sparse' or 'csr').
        Defaults to the same stype of this NDArray.
    """
    if stype is None:
        stype = self.stype
    if stype not in ("default", "row_sparse", "csr"):
        raise MXNetError("attach_grad: unknown storage type %r" % (stype,))
    if stype != "default":
        _core.attach_grad_sparse(self, grad_req, stype)
    else:
        _core.attach_grad(self, grad_req)


def _grad(self):
    """Returns gradient buffer attached to this NDArray."""
    return _core.get_grad(self)


def _detach(self):
    """Returns a new NDArray, detached from the current graph."""
    return _core.detach(self)


def _backward(self, out_grad=None, retain_graph=False, train_mode=True):
    """Compute the gradients of this NDArray w.r.t variables.

    Parameters
    ----------
    out_grad : NDArray, optional
        Gradient with respect to head.
    retain_graph : bool, optional
        Whether to retain the computaion graph for another backward
        pass on the same graph. By default the computaion history
        is cleared.
    train_mode : bool, optional
        Whether to compute gradient for training or inference.
    """
    if out_grad is not None and out_grad.stype != "default":
        out_grad = out_grad.tostype("default")
    _core.backward([self], [out_grad], None, bool(retain_graph), bool(train_mode), False)


def _tostype(self, stype):
    """A copy of this array in storage type ``stype`` ('default', 'csr' or 'row_sparse')."""
    if stype not in ("default", "csr", "row_sparse"):
        raise MXNetError("tostype: unknown storage type %r" % (stype,))
    if stype == "csr" and len(self.shape) != 2:
        raise ValueError("To convert to a CSR, the NDArray should be 2 Dimensional. Current "
                         "shape is %s" % str(self.shape))
    return _core._cast_storage(self, stype)


def _install():
    NDArray.tostype = _tostype
    NDArray.context = property(_context)
    NDArray.ctx = property(_context)
    NDArray.stype = property(lambda self: "default")
    NDArray.handle = property(lambda self: self)
    NDArray.__repr__ = _repr
    NDArray.__str__ = _repr
    NDArray.__len__ = _len
    NDArray.__bool__ = _bool
    NDArray.__iter__ = _iter
    NDArray.__reduce__ = _reduce
    NDArray.__getstate__ = _getstate
    NDArray.__setstate__ = _setstate
    NDArray.__array__ = _array
    from . import indexing
    indexing.install()
    NDArray.tolist = _tolist
    NDArray.copy = _copy
    NDArray.copyto = _copyto
    NDArray.as_in_context = _as_in_context
    NDArray.as_in_ctx = _as_in_context
    NDArray.astype = _astype
    NDArray.T = property(_T)
    NDArray.reshape = _reshape
    NDArray.__array_priority__ = 1000.0
    NDArray.attach_grad = _attach_grad
    NDArray.grad = property(_grad)
    NDArray.detach = _detach
    NDArray.backward = _backward
    NDArray._fresh_grad = property(lambda self: _core.get_fresh_grad(self),
                                   lambda self, v: _core.set_fresh_grad(self, bool(v)))


_install()

from .interop import from_numpy, from_dlpack, to_dlpack_for_read, to_dlpack_for_write  # noqa: E402
from . import interop as _interop  # noqa: E402
_interop.install()

__all__ = ["NDArray", "empty", "zeros", "ones", "full", "array", "arange", "eye", "waitall",
           "add", "subtract", "multiply", "divide", "true_divide", "modulo", "power", "maximum",
           "minimum", "hypot", "equal", "not_equal", "greater", "greater_equal", "lesser",
           "lesser_equal", "logical_and", "logical_or", "logical_xor", "concatenate", "from_numpy",
           "from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write"]
