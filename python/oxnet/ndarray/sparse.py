"""``mx.nd.sparse``: compressed sparse row (``csr``) and row-sparse (``row_sparse``)
NDArrays, their constructors and the operators on them.

A sparse array is a ``CSRNDArray`` or ``RowSparseNDArray``, subclasses of NDArray
whose storage (values plus index arrays, in MXNet's layout) lives in the Rust core and
flows through the engine like a dense array's. Operators dispatch on storage type in
the core (``op::sparse``): those MXNet computes sparsely (``dot``, ``elemwise_*``,
zero-preserving unary ops, ``retain``, ``_square_sum``, optimizer updates with a
row_sparse gradient, ...) do so here; the others take the dense fallback.
"""

import numpy as np

from .. import _core
from ..base import MXNetError, numeric_types
from ..base import dtype_name, np_type
from ..context import Context, current_context
from .ndarray import NDArray, _DTYPE_NP_TO_MX, _ctx_from_tuple  # noqa: F401
# imported once here, not inside functions: a function-level relative import warns
# (ImportWarning) when this module was imported under an alias (mxnet.ndarray.sparse)
from . import ndarray as _nd_module

_STORAGE_AUX_TYPES = {"row_sparse": [np.int64], "csr": [np.int64, np.int64]}
_STORAGE_TYPE_STR_TO_ID = {"undefined": -1, "default": 0, "row_sparse": 1, "csr": 2}
_STORAGE_TYPE_ID_TO_STR = {v: k for k, v in _STORAGE_TYPE_STR_TO_ID.items()}

_op = None        # the generated op namespace (set by oxnet.ndarray)
_internal = None


def _ctx(ctx):
    return current_context() if ctx is None else (ctx if isinstance(ctx, Context) else Context(ctx))


def _dt(dtype, default=np.float32):
    return np.dtype(default if dtype is None else dtype)


class BaseSparseNDArray(NDArray):
    """The base class of an NDArray stored in a sparse format (MXNet's API).

    Sparse arrays support the operators with sparse implementations, conversion with
    ``tostype``, copying, and reading their parts; reshaping, indexing a single element
    and in-place writes to a region raise, as in MXNet."""

    def __repr__(self):
        shape_info = "x".join(["%d" % x for x in self.shape])
        return "\n<%s %s @%s>" % (self.__class__.__name__, shape_info, self.context)

    __str__ = __repr__

    # -- properties from the core ----------------------------------------------------
    def _info(self):
        return _core._sp_info(self)

    @property
    def shape(self):
        return tuple(self._info()[1])

    @property
    def dtype(self):
        return np.dtype(self._info()[2]).type

    @property
    def stype(self):
        return self._info()[0]

    @property
    def size(self):
        return int(np.prod(self.shape))

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def _ctx(self):
        return self._info()[3]

    @property
    def context(self):
        return _ctx_from_tuple(self._info()[3])

    ctx = context

    @property
    def _aux_types(self):
        return [np_type(t) for t in self._info()[4]]

    @property
    def _num_aux(self):
        return len(self._info()[4])

    def _aux_type(self, i):
        return self._aux_types[i]

    def __len__(self):
        return self.shape[0]

    def __bool__(self):
        raise NotImplementedError("bool() of a sparse NDArray is not supported")

    def __iter__(self):
        raise NotImplementedError("iterating over a sparse NDArray is not supported")

    # -- parts -----------------------------------------------------------------------
    def _data(self):
        """The values (an NDArray sharing the storage), after pending writes."""
        return _core._sp_part(self, -1)

    def _aux_data(self, i):
        """Aux array ``i`` (an NDArray sharing the storage), after pending writes."""
        return _core._sp_part(self, i)

    @property
    def data(self):
        return self._data()

    def check_format(self, full_check=True):
        """Checks the array's format; raises MXNetError if it is invalid.

        full_check: also check the index values (sorted, unique, in range)."""
        _core._sp_check_format(self, bool(full_check))

    def wait_to_read(self):
        _core._sp_wait(self, False)

    def detach(self):
        """The same array (same storage) outside any autograd graph."""
        return _core._sp_detach(self)

    def wait_to_write(self):
        _core._sp_wait(self, True)

    # -- conversion ------------------------------------------------------------------
    def asnumpy(self):
        """The dense values as a NumPy array."""
        return self.tostype("default").asnumpy()

    def asscalar(self):
        if self.size != 1:
            raise ValueError("The current array is not a scalar")
        return self.asnumpy().reshape(())[()]

    def tostype(self, stype):
        """A copy of this array in storage type ``stype`` (csr and row_sparse convert
        to and from default only, as in MXNet)."""
        if stype not in ("default", "csr", "row_sparse"):
            raise MXNetError("tostype: unknown storage type %r" % (stype,))
        if stype != "default" and stype != self.stype:
            raise ValueError("cast_storage from %s to %s is not supported" % (self.stype, stype))
        return _core._cast_storage(self, stype)

    def astype(self, dtype, copy=True):
        """A copy with values cast to ``dtype`` (same storage type)."""
        dtype = np.dtype(dtype)
        if not copy and np.dtype(self.dtype) == dtype:
            return self
        res = zeros(shape=self.shape, ctx=self.context, dtype=dtype, stype=self.stype)
        self.copyto(res)
        return res

    def copy(self):
        return self.copyto(self.context)

    def copyto(self, other):
        """Copies this array to ``other`` (an NDArray of any storage type, cast as
        needed) or to a new array of this storage type on context ``other``."""
        if isinstance(other, NDArray):
            if other is self:
                import warnings
                warnings.warn("You are attempting to copy an array to itself", RuntimeWarning)
                return False
            if np.dtype(other.dtype) != np.dtype(self.dtype):
                _core._copy_any(self.tostype("default").astype(other.dtype), other)
            else:
                _core._copy_any(self, other)
            return other
        if isinstance(other, Context):
            if other.device_type != "cpu" and other.device_type != "cpu_pinned":
                raise MXNetError("sparse arrays live on the CPU for now; cannot copy to %s" % other)
            res = zeros(self.stype, self.shape, ctx=other, dtype=self.dtype)
            _core._copy_any(self, res)
            return res
        raise TypeError("copyto does not support type " + str(type(other)))

    def as_in_context(self, context):
        if self.context == context:
            return self
        return self.copyto(context)

    as_in_ctx = as_in_context

    def __array__(self, dtype=None, copy=None):
        a = self.asnumpy()
        return a if dtype is None else a.astype(dtype)

    def tolist(self):
        return self.asnumpy().tolist()

    # -- unsupported, as in MXNet ------------------------------------------------------
    def _slice(self, start, stop):
        raise NotImplementedError("_slice is not supported for %s" % type(self).__name__)

    def _at(self, idx):
        raise NotImplementedError("_at is not supported for %s" % type(self).__name__)

    def reshape(self, *args, **kwargs):
        raise NotImplementedError("reshape is not supported for %s" % type(self).__name__)

    def _sync_copyfrom(self, source_array):
        raise NotImplementedError()

    # -- arithmetic ---------------------------------------------------------------------
    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(other, self)

    def __sub__(self, other):
        return subtract(self, other)

    def __rsub__(self, other):
        return subtract(other, self)

    def __mul__(self, other):
        return multiply(self, other)

    def __rmul__(self, other):
        return multiply(other, self)

    def __truediv__(self, other):
        return divide(self, other)

    def __rtruediv__(self, other):
        return divide(other, self)

    __div__ = __truediv__
    __rdiv__ = __rtruediv__

    def __neg__(self):
        return _op.negative(self)

    def __pow__(self, other):
        if isinstance(other, numeric_types):
            return _internal._power_scalar(self, scalar=float(other))
        _nd = _nd_module
        return _nd.power(self.tostype("default"), other)

    def __rpow__(self, other):
        _nd = _nd_module
        return _nd.power(other, self.tostype("default"))

    def __mod__(self, other):
        _nd = _nd_module
        return _nd.modulo(self.tostype("default"), other)

    def _iop(self, other, fn):
        res = fn(self, other)
        if res is self:
            return self
        if not isinstance(res, NDArray) or res.shape != self.shape:
            raise MXNetError("in-place operation: the result's shape %s differs from %s"
                             % (getattr(res, "shape", None), self.shape))
        res.copyto(self)
        return self

    def __iadd__(self, other):
        return self._iop(other, add)

    def __isub__(self, other):
        return self._iop(other, subtract)

    def __imul__(self, other):
        return self._iop(other, multiply)

    def __itruediv__(self, other):
        return self._iop(other, divide)

    __idiv__ = __itruediv__

    def _cmp(self, other, name, scalar_op):
        # with a scalar, the result stays sparse when the comparison keeps zeros
        # (e.g. x == 1), as in MXNet; otherwise it is dense
        if isinstance(other, numeric_types):
            return getattr(_internal, scalar_op)(self, scalar=float(other))
        _nd = _nd_module
        o = other.tostype("default") if isinstance(other, BaseSparseNDArray) else other
        return getattr(_nd, name)(self.tostype("default"), o)

    def __eq__(self, other):
        return self._cmp(other, "equal", "_equal_scalar")

    def __ne__(self, other):
        return self._cmp(other, "not_equal", "_not_equal_scalar")

    def __gt__(self, other):
        return self._cmp(other, "greater", "_greater_scalar")

    def __ge__(self, other):
        return self._cmp(other, "greater_equal", "_greater_equal_scalar")

    def __lt__(self, other):
        return self._cmp(other, "lesser", "_lesser_scalar")

    def __le__(self, other):
        return self._cmp(other, "lesser_equal", "_lesser_equal_scalar")

    __hash__ = NDArray.__hash__

    # -- pickling: MXNet's single-array .params record --------------------------------
    def __reduce__(self):
        return (_sparse_from_state, ({"handle": bytearray(_core.save_raw_any(self))},))


class CSRNDArray(BaseSparseNDArray):
    """A sparse matrix in compressed sparse row format: ``data`` (the values),
    ``indices`` (their column indices) and ``indptr`` (where each row starts)."""

    @property
    def indices(self):
        return self._aux_data(1)

    @property
    def indptr(self):
        return self._aux_data(0)

    def __getitem__(self, key):
        """``x[i]`` and ``x[i:j]`` (rows; step 1) give a CSRNDArray, as in MXNet."""
        if isinstance(key, int):
            if key < 0:
                key += self.shape[0]
            if key < 0 or key >= self.shape[0]:
                raise IndexError("index %d is out of bounds for axis 0 with size %d"
                                 % (key, self.shape[0]))
            return _op.slice(self, begin=(key,), end=(key + 1,))
        if isinstance(key, slice):
            if key.step is not None and key.step != 1:
                raise ValueError("CSRNDArray only supports continuous slicing on axis 0")
            if key.start is None and key.stop is None:
                return self
            return _op.slice(self, begin=(key.start,), end=(key.stop,))
        if isinstance(key, tuple):
            raise ValueError("Multi-dimension indexing is not supported")
        raise ValueError("Undefined behaviour for {}".format(key))

    def __setitem__(self, key, value):
        """``x[:] = value`` replaces the whole array (value: NDArray or NumPy array)."""
        if not isinstance(key, slice) or key != slice(None):
            raise ValueError("Assignment with slice for CSRNDArray is not implmented yet.")
        _assign_all(self, value)

    def asscipy(self):
        """The array as a ``scipy.sparse.csr_matrix`` (a copy)."""
        import scipy.sparse as spsp
        data = self.data.asnumpy()
        indices = self.indices.asnumpy()
        indptr = self.indptr.asnumpy()
        return spsp.csr_matrix((data, indices, indptr), shape=self.shape, dtype=self.dtype)


class RowSparseNDArray(BaseSparseNDArray):
    """A set of rows of a larger array: ``data`` holds the rows present, ``indices``
    their row numbers (sorted); the other rows are zero."""

    @property
    def indices(self):
        return self._aux_data(0)

    def __getitem__(self, key):
        if isinstance(key, slice) and key == slice(None):
            return self
        if isinstance(key, tuple):
            raise ValueError("Multi-dimension indexing is not supported")
        raise Exception("__getitem__ with int key is not implemented for RowSparseNDArray yet")

    def __setitem__(self, key, value):
        if not isinstance(key, slice) or key != slice(None):
            raise ValueError("Assignment with slice for RowSparseNDArray is not implmented yet.")
        _assign_all(self, value)

    def retain(self, *args, **kwargs):
        return _op_retain(self, *args, **kwargs)


def _sparse_from_state(state):
    return _core.load_raw_any(bytes(state["handle"]))


def _assign_all(dst, value):
    if isinstance(value, NDArray):
        if value is not dst:
            value.copyto(dst)
    elif isinstance(value, numeric_types):
        if dst.stype == "csr":
            raise ValueError("Assigning a numeric value to CSRNDArray is not supported")
        # every row of a row_sparse array takes the value
        _full = _nd_module.full
        _full(dst.shape, value, ctx=dst.context, dtype=dst.dtype).copyto(dst)
    elif isinstance(value, (np.ndarray, np.generic, list, tuple)):
        _dense = _nd_module.array
        _dense(np.asarray(value), ctx=dst.context, dtype=dst.dtype).copyto(dst)
    else:
        raise TypeError("type %s not supported" % str(type(value)))


_core._set_sparse_classes(RowSparseNDArray, CSRNDArray)


# ---------------------------------------------------------------------------
# Creation


def _as_nd(a, dtype=None, ctx=None):
    _dense = _nd_module.array
    if isinstance(a, NDArray):
        if a.stype != "default":
            raise TypeError("expected a dense array for a sparse array's part, got %s" % a.stype)
        if dtype is not None and np.dtype(a.dtype) != np.dtype(dtype):
            return a.astype(dtype)
        return a if ctx is None or a.context == ctx else a.copyto(ctx)
    arr = np.asarray(a)
    return _dense(arr, ctx=ctx, dtype=dtype if dtype is not None else arr.dtype)


def _infer_dtype(arr, dtype):
    if dtype is not None:
        return np.dtype(dtype)
    if isinstance(arr, NDArray):
        return np.dtype(arr.dtype)
    if isinstance(arr, np.ndarray):
        return arr.dtype
    return np.dtype(np.float32)


def _is_scipy_sparse(a):
    try:
        import scipy.sparse as spsp
    except ImportError:
        return False
    return spsp.issparse(a)


def zeros(stype, shape, ctx=None, dtype=None, aux_types=None, **kwargs):
    """An all-zero array of storage type ``stype`` ('csr', 'row_sparse' or 'default')."""
    if stype == "default":
        _dz = _nd_module.zeros
        return _dz(shape, ctx=ctx, dtype=dtype, **kwargs)
    if isinstance(shape, int):
        shape = (shape,)
    if stype not in _STORAGE_AUX_TYPES:
        raise ValueError("unknown storage type %r (expected 'default', 'csr' or 'row_sparse')" % (stype,))
    ctx = _ctx(ctx)
    aux = None if aux_types is None else [dtype_name(t) for t in aux_types]
    return _core._sparse_zeros(stype, tuple(int(s) for s in shape), ctx, _dt(dtype).name, aux)


def empty(stype, shape, ctx=None, dtype=None):
    """An array of storage type ``stype`` holding no values (all zeros)."""
    if stype == "default":
        _de = _nd_module.empty
        return _de(shape, ctx=ctx, dtype=dtype)
    return zeros(stype, shape, ctx=ctx, dtype=dtype)


def _check_shape(s1, s2):
    if s1 and s2 and tuple(s1) != tuple(s2):
        raise ValueError("Shape mismatch detected. " + str(s1) + " v.s. " + str(s2))


def csr_matrix(arg1, shape=None, ctx=None, dtype=None):
    """A CSRNDArray, MXNet's forms:

    - ``csr_matrix(D)``: from a dense NDArray/NumPy array ``D``;
    - ``csr_matrix(S)``: from a CSRNDArray or a SciPy sparse matrix ``S``;
    - ``csr_matrix((M, N))``: an empty M x N matrix;
    - ``csr_matrix((data, indices, indptr))``: from the three arrays;
    - ``csr_matrix((data, (row, col)))``: from coordinates (COO)."""
    if isinstance(arg1, tuple) and len(arg1) == 2 and all(isinstance(x, numeric_types + (np.integer,)) for x in arg1):
        _check_shape(arg1, shape)
        return zeros("csr", arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, tuple) and len(arg1) == 3:
        data, indices, indptr = arg1
        return _csr_from_parts(data, indices, indptr, shape, ctx, dtype)
    if isinstance(arg1, tuple) and len(arg1) == 2:
        import scipy.sparse as spsp
        data, (row, col) = arg1
        if isinstance(data, NDArray):
            data = data.asnumpy()
        if isinstance(row, NDArray):
            row = row.asnumpy()
        if isinstance(col, NDArray):
            col = col.asnumpy()
        dtype = _infer_dtype(data, dtype)
        coo = spsp.coo_matrix((data, (row, col)), shape=shape, dtype=dtype)
        csr = coo.tocsr()
        csr.sum_duplicates()
        csr.sort_indices()
        return _csr_from_parts(csr.data, csr.indices, csr.indptr, csr.shape, ctx, dtype)
    if isinstance(arg1, CSRNDArray):
        _check_shape(arg1.shape, shape)
        return array(arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, RowSparseNDArray):
        raise ValueError("Unexpected input type: RowSparseNDArray")
    if _is_scipy_sparse(arg1):
        csr = arg1.tocsr().copy()
        csr.sum_duplicates()
        csr.sort_indices()
        _check_shape(csr.shape, shape)
        dtype = _infer_dtype(csr.data, dtype)
        return _csr_from_parts(csr.data, csr.indices, csr.indptr, csr.shape, ctx, dtype)
    # dense input
    _dense = _nd_module.array
    dns = arg1 if isinstance(arg1, NDArray) else _dense(np.asarray(arg1), ctx=ctx, dtype=_infer_dtype(arg1, dtype))
    _check_shape(dns.shape, shape)
    if len(dns.shape) != 2:
        raise ValueError("a csr matrix must be 2-dimensional, got shape %s" % (dns.shape,))
    if ctx is not None and dns.context != _ctx(ctx):
        dns = dns.copyto(_ctx(ctx))
    res = dns.tostype("csr")
    if dtype is not None and np.dtype(dtype) != np.dtype(res.dtype):
        res = res.astype(dtype)
    return res


def _csr_from_parts(data, indices, indptr, shape, ctx, dtype):
    ctx = _ctx(ctx) if ctx is not None or not isinstance(data, NDArray) else data.context
    dtype = _infer_dtype(data, dtype)
    data = _as_nd(data, dtype=dtype, ctx=ctx)
    indptr = _as_nd(indptr, dtype=np.int64 if not isinstance(indptr, NDArray) else None, ctx=ctx)
    indices = _as_nd(indices, dtype=np.int64 if not isinstance(indices, NDArray) else None, ctx=ctx)
    if shape is None:
        if indices.shape[0] == 0:
            raise ValueError("invalid shape")
        shape = (indptr.shape[0] - 1, int(indices.asnumpy().max()) + 1)
    return _core._sparse_from_parts("csr", tuple(int(s) for s in shape), data, [indptr, indices])


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None):
    """A RowSparseNDArray, MXNet's forms:

    - ``row_sparse_array(D)``: from a dense NDArray/NumPy array;
    - ``row_sparse_array(S)``: from a RowSparseNDArray;
    - ``row_sparse_array((D0, D1, ..., Dn))``: an empty array of that shape;
    - ``row_sparse_array((data, indices))``: rows ``data`` at row numbers ``indices``."""
    if isinstance(arg1, tuple) and len(arg1) >= 1 and all(isinstance(x, numeric_types + (np.integer,)) for x in arg1):
        _check_shape(arg1, shape)
        return zeros("row_sparse", arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, tuple) and len(arg1) == 2:
        data, indices = arg1
        ctx = _ctx(ctx) if ctx is not None or not isinstance(data, NDArray) else data.context
        dtype = _infer_dtype(data, dtype)
        data = _as_nd(data, dtype=dtype, ctx=ctx)
        indices = _as_nd(indices, dtype=np.int64 if not isinstance(indices, NDArray) else None, ctx=ctx)
        if data.ndim == 1 and indices.shape[0] != data.shape[0]:
            pass
        if shape is None:
            if indices.shape[0] == 0:
                raise ValueError("invalid shape")
            shape = (int(indices.asnumpy().max()) + 1,) + tuple(data.shape[1:])
        return _core._sparse_from_parts("row_sparse", tuple(int(s) for s in shape), data, [indices])
    if isinstance(arg1, RowSparseNDArray):
        _check_shape(arg1.shape, shape)
        return array(arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, CSRNDArray):
        raise ValueError("Unexpected input type: CSRNDArray")
    _dense = _nd_module.array
    dns = arg1 if isinstance(arg1, NDArray) else _dense(np.asarray(arg1), ctx=ctx, dtype=_infer_dtype(arg1, dtype))
    _check_shape(dns.shape, shape)
    if ctx is not None and dns.context != _ctx(ctx):
        dns = dns.copyto(_ctx(ctx))
    res = dns.tostype("row_sparse")
    if dtype is not None and np.dtype(dtype) != np.dtype(res.dtype):
        res = res.astype(dtype)
    return res


def array(source_array, ctx=None, dtype=None):
    """A sparse array from a sparse NDArray (copied) or a SciPy sparse matrix (as csr)."""
    ctx = _ctx(ctx)
    if isinstance(source_array, BaseSparseNDArray):
        dtype = source_array.dtype if dtype is None else dtype
        arr = zeros(source_array.stype, source_array.shape, ctx=ctx, dtype=dtype)
        source_array.copyto(arr)
        return arr
    if isinstance(source_array, NDArray):
        raise ValueError("Please use mx.nd.array to create an NDArray with source_array of type NDArray")
    if _is_scipy_sparse(source_array):
        return csr_matrix(source_array, ctx=ctx, dtype=dtype if dtype is not None else source_array.dtype)
    raise ValueError("Unexpected source_array type: ", type(source_array))


# ---------------------------------------------------------------------------
# Arithmetic helpers (elementwise ops when the shapes agree, as MXNet's sparse module)


def _binary(lhs, rhs, elem, bcast, scalar, rscalar, py_fn):
    _nd = _nd_module
    if isinstance(lhs, numeric_types) and isinstance(rhs, numeric_types):
        return py_fn(lhs, rhs)
    if isinstance(rhs, numeric_types):
        return getattr(_internal, scalar)(lhs, scalar=float(rhs))
    if isinstance(lhs, numeric_types):
        if rscalar is None:
            return getattr(_internal, scalar)(rhs, scalar=float(lhs))
        return getattr(_internal, rscalar)(rhs, scalar=float(lhs))
    if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
        if tuple(lhs.shape) == tuple(rhs.shape):
            return getattr(_op, elem)(lhs, rhs)
        return getattr(_op, bcast)(lhs, rhs)
    if isinstance(rhs, np.ndarray):
        return _binary(lhs, _nd.array(rhs), elem, bcast, scalar, rscalar, py_fn)
    raise TypeError("type %s not supported" % str(type(rhs)))


def add(lhs, rhs):
    """Element-wise sum (elemwise_add when the shapes agree, else broadcast_add)."""
    import operator
    return _binary(lhs, rhs, "elemwise_add", "broadcast_add", "_plus_scalar", None, operator.add)


def subtract(lhs, rhs):
    """Element-wise difference (elemwise_sub when the shapes agree, else broadcast_sub)."""
    import operator
    return _binary(lhs, rhs, "elemwise_sub", "broadcast_sub", "_minus_scalar", "_rminus_scalar", operator.sub)


def multiply(lhs, rhs):
    """Element-wise product (elemwise_mul when the shapes agree, else broadcast_mul)."""
    import operator
    return _binary(lhs, rhs, "elemwise_mul", "broadcast_mul", "_mul_scalar", None, operator.mul)


def divide(lhs, rhs):
    """Element-wise division (elemwise_div when the shapes agree, else broadcast_div)."""
    import operator
    return _binary(lhs, rhs, "elemwise_div", "broadcast_div", "_div_scalar", "_rdiv_scalar", operator.truediv)


def _op_retain(data, indices, **kwargs):
    return _internal._sparse_retain(data, indices, **kwargs)


def retain(*args, **kwargs):
    """``retain(data, indices)``: the rows of a row_sparse ``data`` listed in
    ``indices`` (a row_sparse array)."""
    return _internal._sparse_retain(*args, **kwargs)


def install(op, internal, module):
    """Binds the generated op namespaces and exposes every public op (and the
    ``_sparse_*`` ones without their prefix) in ``mx.nd.sparse``, as MXNet does."""
    global _op, _internal
    _op, _internal = op, internal
    import builtins
    g = module.__dict__
    for name in dir(op):
        # (names of Python builtins, e.g. slice, sum, abs, stay attributes only)
        if not name.startswith("_") and name not in g and not hasattr(builtins, name):
            g[name] = getattr(op, name)
    for name in dir(internal):
        if name.startswith("_sparse_"):
            short = name[len("_sparse_"):]
            if short not in g and not hasattr(builtins, short):
                g[short] = getattr(internal, name)
    # the builtin-named ops, reachable as mx.nd.sparse.slice etc. without shadowing
    for name in dir(op):
        if not name.startswith("_") and hasattr(builtins, name):
            setattr(_SparseModuleOps, name, getattr(op, name))


class _SparseModuleOps:
    """Holder of ops whose names are Python builtins (see ``__getattr__``)."""


def __getattr__(name):
    try:
        return getattr(_SparseModuleOps, name)
    except AttributeError:
        raise AttributeError("module 'oxnet.ndarray.sparse' has no attribute %r" % name) from None


__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "csr_matrix", "row_sparse_array",
           "zeros", "empty", "array", "add", "subtract", "multiply", "divide", "retain"]
