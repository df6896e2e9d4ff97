"""NDArray indexing: ``x[key]`` and ``x[key] = value`` with MXNet 1.9.1's rules.

Keys are NumPy's: ints, slices (any step), ``Ellipsis``, ``None`` (newaxis), and
advanced keys (lists, tuples, NumPy arrays, NDArrays, mixed with ints and slices).
Results follow NumPy's shapes, except that a key made only of ints gives shape
``(1,)`` (MXNet's legacy NDArray has no 0-d result).

* Basic keys (ints, slices, ``Ellipsis``, ``None``): when the selected elements are
  one contiguous block of memory (:func:`basic_indexing_slice_is_contiguous`), the
  result is a view sharing memory with the array, as in MXNet; otherwise a copy made
  by the ``slice`` op. Assignment uses ``_slice_assign`` / ``_slice_assign_scalar``,
  or writes the whole array directly when the key selects all of it.
* Advanced keys: the per-axis index arrays are broadcast as NumPy does (advanced
  indices that are not adjacent put their broadcast shape first) and stacked into the
  index array of ``gather_nd`` (reading). Assigning writes through ``scatter_nd`` and
  ``where`` (the registry has no ``_scatter_set_nd``); as on MXNet's CPU, the last
  write wins for a repeated index.
* While autograd records, assigning an array that is in the graph into part of
  another (``x[idx] = y``) raises MXNet's "Inplace operations" error: the target
  would be both an input and the output of the recorded assignment.

This module computes index arrays (their size is the result's) on the host with
NumPy; it never loops over elements in Python.
"""

from math import prod

import numpy as np

from .. import _core
from ..base import MXNetError, MXNetIndexError, MXNetValueError, numeric_types, integer_types
from ..base import _is_bfloat16, dtype_name

NDArray = _core.NDArray

_INPLACE_MSG = ("Inplace operations (+=, -=, x[:]=, etc) are not supported when recording "
                "with autograd.")


def _nd():
    from . import ndarray as nd_mod  # the module that installs us; imported late
    return nd_mod


# ---------------------------------------------------------------------------
# Keys


def _as_int(k):
    """The Python int of an integer key (Python or NumPy int, 0-d integer array), or None."""
    if isinstance(k, integer_types):
        return int(k)
    if isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu":
        return int(k)
    return None


def _is_advanced(k):
    return isinstance(k, (NDArray, np.ndarray, list, tuple, range)) and _as_int(k) is None


def _norm_int(i, size, axis):
    if i < -size or i >= size:
        raise MXNetIndexError("index %d is out of bounds for axis %d with size %d" % (i, axis, size))
    return i + size if i < 0 else i


# MXNet's dispatch codes (``get_indexing_dispatch_code``)
_NDARRAY_UNSUPPORTED_INDEXING = -1
_NDARRAY_BASIC_INDEXING = 0
_NDARRAY_ADVANCED_INDEXING = 1
_NDARRAY_EMPTY_TUPLE_INDEXING = 2


def indexing_key_expand_implicit_axes(key, shape):
    """Makes implicit axes explicit (MXNet's helper): ``Ellipsis``, or the missing
    trailing axes, become ``slice(None)``; ``None`` entries stay where they are; a
    boolean NumPy array becomes the integer arrays of its ``nonzero()``.

    Examples
    --------
    >>> indexing_key_expand_implicit_axes(np.s_[0], (3, 4, 5))
    (0, slice(None, None, None), slice(None, None, None))
    >>> indexing_key_expand_implicit_axes(np.s_[:2, None, 0, ...], (3, 4, 5))
    (slice(None, 2, None), None, 0, slice(None, None, None))
    """
    if not isinstance(key, tuple):
        key = (key,)
    # Explicit loops: tuple.index/count compare with ==, which arrays overload.
    ell, out, axis = None, [], 0
    for idx in key:
        if idx is Ellipsis:
            if ell is not None:
                raise MXNetIndexError("Cannot use more than one ellipsis (`...`) for indexing")
            ell = len(out)
        elif idx is None:
            out.append(None)
        elif isinstance(idx, np.ndarray) and idx.dtype == np.bool_:
            if idx.ndim == 0 or axis + idx.ndim > len(shape):
                raise MXNetIndexError("boolean index of shape %s does not fit an array of shape %s "
                                      "from axis %d" % (idx.shape, tuple(shape), axis))
            for i, n in enumerate(idx.shape):
                if shape[axis + i] != n:
                    raise MXNetIndexError(
                        "boolean index did not match indexed array along axis %d; size is %d but "
                        "corresponding boolean size is %d" % (axis + i, shape[axis + i], n))
            out.extend(idx.nonzero())
            axis += idx.ndim
        else:
            out.append(idx)
            axis += 1
    if axis > len(shape):
        raise MXNetIndexError("too many indices (%d) for an array of %d dimensions" % (axis, len(shape)))
    if ell is None:
        ell = len(out)
    return tuple(out[:ell]) + (slice(None),) * (len(shape) - axis) + tuple(out[ell:])


def get_indexing_dispatch_code(key):
    """MXNet's dispatch code of an expanded key (a tuple): 0 basic (ints, slices,
    None), 1 advanced (an array-like entry), 2 an empty tuple entry; a ValueError for an
    entry of another type."""
    if not isinstance(key, tuple):
        raise MXNetValueError("get_indexing_dispatch_code expects a tuple, got %s" % type(key))
    for idx in key:
        if isinstance(idx, (NDArray, np.ndarray, list, tuple, range)) and _as_int(idx) is None:
            if isinstance(idx, tuple) and len(idx) == 0:
                return _NDARRAY_EMPTY_TUPLE_INDEXING
            return _NDARRAY_ADVANCED_INDEXING
        if not (isinstance(idx, slice) or _as_int(idx) is not None or idx is None):
            raise MXNetValueError("NDArray does not support slicing with key %r of type %s."
                                  % (idx, type(idx)))
    return _NDARRAY_BASIC_INDEXING


def get_oshape_of_gather_nd_op(dshape, ishape):
    """The output shape of ``gather_nd`` for data of shape ``dshape`` and indices of
    shape ``ishape`` (MXNet's helper)."""
    if not dshape or not ishape:
        raise MXNetValueError("gather_nd needs non-scalar data and indices, got shapes %s and %s"
                              % (tuple(dshape), tuple(ishape)))
    oshape = list(ishape[1:])
    if ishape[0] < len(dshape):
        oshape.extend(dshape[ishape[0]:])
    return tuple(oshape)


def _expand_key(key, shape):
    """The key expanded (:func:`indexing_key_expand_implicit_axes`) and whether it is
    advanced."""
    key = indexing_key_expand_implicit_axes(key, shape)
    code = get_indexing_dispatch_code(key)
    if code == _NDARRAY_EMPTY_TUPLE_INDEXING:
        raise MXNetIndexError("an empty tuple inside an index is not supported: %r" % (key,))
    return key, code == _NDARRAY_ADVANCED_INDEXING


def _slice_len(slc, n):
    return len(range(*slc.indices(n)))


def basic_indexing_slice_is_contiguous(slc_key, shape):
    """Whether slicing a C-contiguous array of ``shape`` with ``slc_key`` (one ``slice``
    per axis) selects one contiguous block of memory (MXNet's
    ``NDArray._basic_indexing_slice_is_contiguous``; NumPy's ``flags.contiguous``
    of the result). Going from the last axis to the first: an axis selecting more than
    one element must have step 1, and once an axis selects a proper subset, every axis
    before it must select at most one element."""
    if len(slc_key) != len(shape):
        raise MXNetValueError("slc_key has %d entries for an array of %d dimensions"
                              % (len(slc_key), len(shape)))
    lens = [_slice_len(s, n) for s, n in zip(slc_key, shape)]
    if prod(lens) in (0, 1):
        return True
    partial = False
    for slc, n, m in zip(reversed(slc_key), reversed(shape), reversed(lens)):
        step = slc.indices(n)[2]
        if m > 1 and step != 1:
            return False
        if partial:
            if m > 1:
                return False
        elif m < n:
            partial = True
    return True


def _basic_plan(shape, key):
    """For a basic key (expanded): one slice per axis (ints as length-1 slices), the
    result's NumPy shape (ints dropped, ``None`` as 1) and the selected region's shape
    (one entry per axis)."""
    slcs, out_shape, ax = [], [], 0
    for k in key:
        if k is None:
            out_shape.append(1)
            continue
        n = shape[ax]
        i = _as_int(k)
        if i is not None:
            i = _norm_int(i, n, ax)
            slcs.append(slice(i, i + 1, 1))
        else:
            if k.step is not None and k.step == 0:
                raise MXNetValueError("slice step cannot be zero")
            slcs.append(k)
            out_shape.append(_slice_len(k, n))
        ax += 1
    region = tuple(_slice_len(s, n) for s, n in zip(slcs, shape))
    return slcs, tuple(out_shape), region


def _begin_end_step(slcs, shape):
    """The ``slice`` op's begin/end/step for one slice per axis (an empty selection is
    (0, 0, 1); a negative step running through index 0 gets end None)."""
    begin, end, step = [], [], []
    for slc, n in zip(slcs, shape):
        b, e, s = slc.indices(n)
        if len(range(b, e, s)) == 0:
            b, e, s = 0, 0, 1
        elif s < 0 and e < 0:
            e = None
        begin.append(b), end.append(e), step.append(s)
    return tuple(begin), tuple(end), tuple(step)


def _index_array(k, size, axis):
    """An advanced key entry as a NumPy int64 array with negative entries wrapped and
    bounds checked (MXNet casts non-integer index arrays to integers)."""
    if isinstance(k, NDArray):
        a = k.asnumpy()
    else:
        try:
            a = np.asarray(k)
        except Exception as e:
            raise MXNetIndexError("cannot index with %r" % (k,)) from e
    if a.dtype.kind not in "iubf":
        raise MXNetIndexError("arrays used as indices must be of integer type, got %s" % a.dtype)
    a = a.astype(np.int64)
    if a.size:
        lo, hi = int(a.min()), int(a.max())
        if lo < -size or hi >= size:
            bad = lo if lo < -size else hi
            raise MXNetIndexError("index %d is out of bounds for axis %d with size %d" % (bad, axis, size))
        if lo < 0:
            a = np.where(a < 0, a + size, a)
    return a


def _advanced_plan(shape, key):
    """For an advanced key (expanded): the result's NumPy shape and the ``gather_nd``
    index array (ndim x result shape), built as NumPy combines advanced and basic
    indices."""
    items, adv_pos, ax = [], [], 0
    for pos, k in enumerate(key):
        if k is None:
            items.append(("n", None))
            continue
        n = shape[ax]
        i = _as_int(k)
        if i is not None:
            items.append(("a", np.asarray(_norm_int(i, n, ax), dtype=np.int64)))
            adv_pos.append(pos)
        elif isinstance(k, slice):
            if k.step is not None and k.step == 0:
                raise MXNetValueError("slice step cannot be zero")
            items.append(("s", np.arange(*k.indices(n), dtype=np.int64)))
        else:
            items.append(("a", _index_array(k, n, ax)))
            adv_pos.append(pos)
        ax += 1
    try:
        bshape = np.broadcast_shapes(*[items[p][1].shape for p in adv_pos])
    except ValueError:
        raise MXNetIndexError("shape mismatch: indexing arrays could not be broadcast together "
                              "with shapes %s" % " ".join(str(items[p][1].shape) for p in adv_pos)) from None
    adjacent = adv_pos == list(range(adv_pos[0], adv_pos[-1] + 1))
    # Result dims: (kind, item index or None for the broadcast block)
    dims = []
    if adjacent:
        for pos, (kind, _) in enumerate(items):
            if pos == adv_pos[0]:
                dims.append(("b", None))
            elif kind != "a":
                dims.append((kind, pos))
    else:
        dims.append(("b", None))
        dims.extend((kind, pos) for pos, (kind, _) in enumerate(items) if kind != "a")
    out_shape, where = [], {}
    for kind, pos in dims:
        if kind == "b":
            where["b"] = len(out_shape)
            out_shape.extend(bshape)
        else:
            where[pos] = len(out_shape)
            out_shape.append(1 if kind == "n" else len(items[pos][1]))
    out_shape = tuple(out_shape)
    grids = []
    for pos, (kind, a) in enumerate(items):
        if kind == "n":
            continue
        view = [1] * len(out_shape)
        if kind == "s":
            view[where[pos]] = len(a)
        else:
            b0 = where["b"]
            view[b0 + len(bshape) - a.ndim:b0 + len(bshape)] = a.shape
        grids.append(np.broadcast_to(a.reshape(view), out_shape))
    return out_shape, np.stack(grids) if grids else np.zeros((0,) + out_shape, np.int64)


# ---------------------------------------------------------------------------
# Reading


def getitem(self, key):
    """``x[key]``: a view for ints, step-1 slices and other contiguous basic keys; a
    copy (``slice``, ``take``, ``gather_nd``) otherwise."""
    nd = _nd()
    if self.ndim == 0:
        if (isinstance(key, tuple) and not key) or (isinstance(key, slice) and key == slice(None)):
            return self
        raise MXNetIndexError("too many indices for a 0-d array")
    i = _as_int(key)
    if i is not None:
        i = _norm_int(i, self.shape[0], 0)
        return self._slice(i, i + 1) if self.ndim == 1 else self._at(i)
    if isinstance(key, slice) and (key.step is None or key.step == 1):
        start, stop, _ = key.indices(self.shape[0])
        return self._slice(start, max(start, stop))
    if isinstance(key, tuple) and not key:
        return self
    if not isinstance(key, tuple) and _is_advanced(key) and \
            not (isinstance(key, np.ndarray) and key.dtype == np.bool_):
        # One index array: rows along axis 0 (NumPy's result shape: key.shape + rest).
        idx = _index_array(key, self.shape[0], 0)
        return nd._op.take(self, nd.array(idx, ctx=self.context, dtype=np.int64), axis=0)
    key, advanced = _expand_key(key, self.shape)
    if advanced:
        out_shape, idx = _advanced_plan(self.shape, key)
        res = nd._op.gather_nd(self, nd.array(idx, ctx=self.context, dtype=np.int64))
        return res if res.shape == out_shape else res.reshape(out_shape)
    slcs, out_shape, region = _basic_plan(self.shape, key)
    if basic_indexing_slice_is_contiguous(slcs, self.shape) and self.size:
        total = prod(region)
        begin, stride = 0, 1
        if total:
            for slc, n in zip(reversed(slcs), reversed(self.shape)):
                begin += slc.indices(n)[0] * stride
                stride *= n
        res = self._reshape_view([self.size])._slice(begin, begin + total)
    else:
        begin, end, step = _begin_end_step(slcs, self.shape)
        res = nd._op.slice(self, begin=begin, end=end, step=step)
    final = list(out_shape) or [1]
    return res if tuple(res.shape) == tuple(final) else res._reshape_view(final)


# ---------------------------------------------------------------------------
# Writing


def _prepare_value(self, value, out_shape, region):
    """`value` as an NDArray (this array's context and dtype) of the region's shape:
    broadcast to the NumPy result shape `out_shape` (leading size-1 axes of a longer
    value dropped), then reshaped to `region` (one entry per axis)."""
    nd = _nd()
    target = tuple(out_shape) or (1,)
    if isinstance(value, NDArray):
        v = value.as_in_context(self.context)
        if getattr(v, "stype", "default") != "default" and getattr(self, "stype", "default") == "default":
            # A sparse value written into a dense array is densified (MXNet's
            # CopyFromTo casts the storage).
            v = v.tostype("default")
        if np.dtype(v.dtype) != np.dtype(self.dtype):
            v = v.astype(self.dtype)
        while v.ndim > len(target) and v.shape[0] == 1:
            v = v.reshape(tuple(v.shape[1:]))
        if tuple(v.shape) != target:
            v = v.broadcast_to(target)  # an MXNetError of broadcast_to if it cannot
    else:
        v = _prepare_numpy(self, value, target)
        v = nd.array(v, ctx=self.context, dtype=self.dtype)
    return v if tuple(v.shape) == tuple(region) else v.reshape(tuple(region))


def _prepare_numpy(self, value, target):
    try:
        a = np.asarray(value)
        if _is_bfloat16(self.dtype):
            # NumPy has no bfloat16 arithmetic: other values stay float32 here and
            # the registry's Cast rounds them when they are written (_assign_all).
            if a.dtype != self.dtype:
                a = np.asarray(value, dtype=np.float32)
        else:
            a = np.asarray(value, dtype=self.dtype)
    except (TypeError, ValueError) as e:
        raise TypeError("NDArray does not support assignment with non-array-like object %r of "
                        "type %s" % (value, type(value))) from e
    while a.ndim > len(target) and a.shape[0] == 1:
        a = a.reshape(a.shape[1:])
    try:
        return np.broadcast_to(a, target)
    except ValueError:
        raise MXNetValueError("could not broadcast the value of shape %s to the indexed shape %s"
                              % (np.shape(value), target)) from None


def _check_recording(op_name, value_nd):
    """MXNet refuses, while recording, an op whose output is also one of its inputs when
    an input is in the graph (``x[idx] = y`` with ``y`` recorded)."""
    if _core.is_recording() and _core.in_graph(value_nd):
        raise MXNetError("Error in operator %s: %s" % (op_name, _INPLACE_MSG))


def _is_scalar(value):
    return isinstance(value, numeric_types) and not isinstance(value, np.ndarray)


def _fill(self, value):
    nd = _nd()
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    nd._internal._full(shape=self.shape, ctx=self.context, dtype=dtype_name(self.dtype),
                       value=float(value), out=self)


def _assign_all(self, value, out_shape):
    """Writes `value` over the whole array (the key selected all of it, in order)."""
    if _is_scalar(value):
        _fill(self, value)
    elif isinstance(value, NDArray):
        if value is self:
            return
        v = _prepare_value(self, value, out_shape, self.shape)
        _core.copyto(v, self)
    else:
        a = _prepare_numpy(self, value, tuple(out_shape) or (1,)).reshape(self.shape)
        if a.dtype != self.dtype:
            # (float32 values for a bfloat16 array: copyto casts them)
            _core.copyto(_nd().array(a, ctx=self.context, dtype=a.dtype), self)
        else:
            self._sync_copyfrom(np.ascontiguousarray(a))


def setitem(self, key, value):
    """``x[key] = value``: value a scalar, NDArray, NumPy array or array-like that
    broadcasts to ``x[key]``'s shape."""
    if not self.writable:
        raise ValueError("Cannot assign to readonly NDArray")
    nd = _nd()
    if self.ndim == 0:
        if not ((isinstance(key, tuple) and not key) or isinstance(key, slice)):
            raise MXNetIndexError("scalar tensor can only accept `()` and `:` as index")
        _assign_all(self, value, ())
        return
    if self.size == 0:
        return
    if isinstance(key, slice) and key == slice(None):
        _assign_all(self, value, self.shape)
        return
    i = _as_int(key)
    if i is not None or (isinstance(key, slice) and (key.step is None or key.step == 1)):
        # A row or a block of rows: a contiguous view, written like the whole array
        # (but refused while recording if the value is in the graph, as the
        # _slice_assign MXNet runs here would be).
        if i is not None:
            i = _norm_int(i, self.shape[0], 0)
            view = self._at(i) if self.ndim > 1 else self._slice(i, i + 1)
            out_shape = tuple(self.shape[1:])
        else:
            start, stop, _ = key.indices(self.shape[0])
            view = self._slice(start, max(start, stop))
            out_shape = tuple(view.shape)
        if view.size == 0:
            return
        if isinstance(value, NDArray) and view.shape != self.shape:
            _check_recording("_slice_assign", value)
        _assign_all(view, value, out_shape)
        return
    key, advanced = _expand_key(key, self.shape)
    if advanced:
        out_shape, idx = _advanced_plan(self.shape, key)
        if prod(out_shape) == 0:
            return
        if _is_scalar(value):
            v = nd.full(out_shape, value, ctx=self.context, dtype=self.dtype)
        else:
            v = _prepare_value(self, value, out_shape, out_shape)
        _check_recording("_scatter_set_nd", v)
        idx = nd.array(idx, ctx=self.context, dtype=np.int64)
        shape = tuple(self.shape)
        mask = nd._op.scatter_nd(nd._op.ones_like(v), idx, shape=shape)
        new = nd._op.scatter_nd(v, idx, shape=shape)
        nd._op.where(mask, new, self, out=self)
        return
    slcs, out_shape, region = _basic_plan(self.shape, key)
    if prod(region) == 0:
        return
    begin, end, step = _begin_end_step(slcs, self.shape)
    if tuple(region) == tuple(self.shape) and all(s > 0 for s in step):
        _assign_all(self, value, out_shape)
    elif _is_scalar(value):
        if isinstance(value, (bool, np.bool_)):
            value = int(value)
        nd._internal._slice_assign_scalar(self, scalar=float(value), begin=begin, end=end,
                                          step=step, out=self)
    else:
        v = _prepare_value(self, value, out_shape, region)
        _check_recording("_slice_assign", v)
        nd._internal._slice_assign(self, v, begin=begin, end=end, step=step, out=self)


def install():
    NDArray.__getitem__ = getitem
    NDArray.__setitem__ = setitem
    NDArray._basic_indexing_slice_is_contiguous = staticmethod(basic_indexing_slice_is_contiguous)
