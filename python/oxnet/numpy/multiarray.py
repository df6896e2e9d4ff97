"""``mx.np.ndarray`` and the NumPy-style functions over it.

An ``mx.np.ndarray`` follows NumPy's semantics (zero-dim arrays, NumPy broadcasting and
type promotion as MXNet 1.9.1 does them, NumPy-style printing ``array([...])``) and
computes with the registry's ops, like ``mx.nd``: every function here maps its NumPy
arguments to one or a few registered ops (no numeric loop in Python).

oxnet's ``NDArray`` class is defined in Rust and cannot yet be constructed as a Python
subclass around an existing dense array, so ``mx.np.ndarray`` holds its data as an
``mx.nd.NDArray`` (``as_nd_ndarray()`` returns it, sharing memory) instead of being an
``NDArray`` subclass as in MXNet. Autograd works through that array (``attach_grad``,
``backward``, ``grad``).

What is not built raises an error naming it; nothing here returns an approximation.
"""

import builtins as _builtins
import numbers

import numpy as _np

from .. import ndarray as _mx_nd
from .. import util as _util
from ..base import MXNetError, MXNetValueError
from ..context import Context, current_context
from ..ndarray.ndarray import NDArray

__all__ = ["ndarray", "array", "asarray", "zeros", "ones", "full", "empty", "zeros_like",
           "ones_like", "full_like", "empty_like", "arange", "eye", "identity", "linspace",
           "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "mod",
           "remainder", "power", "maximum", "minimum", "hypot", "equal", "not_equal",
           "greater", "greater_equal", "less", "less_equal", "logical_and", "logical_or",
           "logical_xor", "negative", "absolute", "abs", "sign", "exp", "expm1", "log", "log2",
           "log10", "log1p", "sqrt", "cbrt", "square", "reciprocal", "sin", "cos", "tan",
           "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
           "arctanh", "floor", "ceil", "trunc", "rint", "fix", "degrees", "radians",
           "logical_not", "sum", "mean", "max", "min", "amax", "amin", "prod", "argmax",
           "argmin", "reshape", "transpose", "swapaxes", "expand_dims", "squeeze",
           "broadcast_to", "concatenate", "stack", "split", "array_split", "dot", "clip",
           "where", "ravel", "copy", "shape", "ndim", "size", "matmul", "tile", "repeat",
           "flip", "sort", "argsort", "cumsum", "isnan", "isinf", "isfinite", "all", "any",
           "var", "std", "take", "moveaxis", "around", "round"]

float32 = _np.float32
_FLOAT32 = _np.dtype(_np.float32)


def _default_float():
    """mx.np's default float dtype: float32, or float64 under
    ``npx.set_np(dtype=True)`` / ``util.np_default_dtype``."""
    return _np.dtype(_np.float64) if _util.is_np_default_dtype() else _FLOAT32


# ---------------------------------------------------------------------------
# conversions between mx.np.ndarray and the NDArray holding its data

def _wrap(nd):
    """The ``mx.np.ndarray`` over NDArray ``nd`` (shares memory)."""
    if isinstance(nd, ndarray):
        return nd
    if not isinstance(nd, NDArray):
        raise TypeError("expected an NDArray, got %s" % type(nd).__name__)
    if nd.stype != "default":
        raise MXNetError("mx.np.ndarray holds dense arrays only; got a %s array" % nd.stype)
    obj = ndarray.__new__(ndarray)
    obj._nd = nd
    return obj


def _is_scalar(x):
    return isinstance(x, (numbers.Number, _np.generic)) and not isinstance(x, _np.ndarray)


def _nd_of(x, ctx=None):
    """The NDArray behind an array-like ``x`` (an ``mx.np.ndarray``, an ``NDArray``, a
    NumPy array or a nested list)."""
    if isinstance(x, ndarray):
        return x._nd
    if isinstance(x, NDArray):
        return x
    return array(x, ctx=ctx)._nd


def _full_nd(shape, value, dtype, ctx):
    return _mx_nd.full(tuple(shape), value, ctx=ctx, dtype=_np.dtype(dtype).name)


def _reshape_nd(nd, shape):
    shape = tuple(int(s) for s in shape)
    if tuple(nd.shape) == shape:
        return nd
    return nd._reshape_view(list(shape))


def _ctx_of(ctx):
    if ctx is None:
        return current_context()
    return ctx if isinstance(ctx, Context) else Context(ctx)


def _is_float(dt):
    return _np.dtype(dt).kind == "f"


def _promote(dt1, dt2):
    """MXNet 1.9.1's result type of a binary op on arrays of dtypes ``dt1``, ``dt2``: the
    float one when one is float and the other not (int32 + float32 is float32, unlike
    NumPy); NumPy's promotion otherwise."""
    dt1, dt2 = _np.dtype(dt1), _np.dtype(dt2)
    if dt1 == dt2:
        return dt1
    f1, f2 = _is_float(dt1), _is_float(dt2)
    if f1 and not f2:
        return dt1
    if f2 and not f1:
        return dt2
    return _np.result_type(dt1, dt2)


def _cast_nd(nd, dtype):
    dtype = _np.dtype(dtype)
    if _np.dtype(nd.dtype) == dtype:
        return nd
    return _mx_nd.cast(nd, dtype=dtype.name)


def _scalar_dtype(arr_dtype, scalar):
    """The dtype of ``array <op> python scalar`` (MXNet 1.9.1: the array's dtype unless
    the array is integral or boolean and the scalar is a float, then float32)."""
    arr_dtype = _np.dtype(arr_dtype)
    if isinstance(scalar, (bool, _np.bool_)):
        return arr_dtype
    if isinstance(scalar, (float, _np.floating)) and not _is_float(arr_dtype):
        return _default_float()
    if arr_dtype == _np.bool_:
        return _np.dtype(_np.int64) if isinstance(scalar, (int, _np.integer)) else arr_dtype
    return arr_dtype


def _binary_operands(x1, x2):
    """``(nd1, nd2, dtype)``: both operands as NDArrays of the result dtype (a scalar
    becomes a zero-dim array, which broadcasts)."""
    s1, s2 = _is_scalar(x1), _is_scalar(x2)
    if s1 and s2:
        raise TypeError("at least one operand must be an array")
    if s1 or s2:
        arr = _nd_of(x2 if s1 else x1)
        scalar = x1 if s1 else x2
        dtype = _scalar_dtype(arr.dtype, scalar)
        arr = _cast_nd(arr, dtype)
        snd = _full_nd((), scalar, dtype, arr.context)
        return (snd, arr, dtype) if s1 else (arr, snd, dtype)
    a, b = _nd_of(x1), _nd_of(x2)
    if a.context != b.context:
        raise MXNetError("operands are on different contexts: %s and %s"
                         % (a.context, b.context))
    dtype = _promote(a.dtype, b.dtype)
    return _cast_nd(a, dtype), _cast_nd(b, dtype), dtype


def _out(res, out):
    """Writes ``res`` (an NDArray) to ``out`` when given; returns the np array."""
    if out is None:
        return _wrap(res)
    if not isinstance(out, ndarray):
        raise TypeError("out must be an mx.np.ndarray, got %s" % type(out).__name__)
    if tuple(out.shape) != tuple(res.shape):
        raise ValueError("out has shape %s, the result has shape %s" % (out.shape, res.shape))
    res = _cast_nd(res, out.dtype)
    res.copyto(out._nd)
    return out


def _make_binary(name, op, result=None, float_out=False):
    """A NumPy binary function on registry op ``op`` (a broadcast_* op). ``result`` fixes
    the output dtype (bool for comparisons); ``float_out`` makes integer inputs float32
    first (true division)."""
    def fn(x1, x2, out=None, **kwargs):
        if kwargs:
            raise NotImplementedError("%s: arguments %s are not supported"
                                      % (name, ", ".join(sorted(kwargs))))
        a, b, dtype = _binary_operands(x1, x2)
        if float_out and not _is_float(dtype):
            a, b = _cast_nd(a, _default_float()), _cast_nd(b, _default_float())
        if result == "bool" and dtype == _np.bool_ and op not in (
                "broadcast_logical_and", "broadcast_logical_or", "broadcast_logical_xor"):
            a, b = _cast_nd(a, _np.int32), _cast_nd(b, _np.int32)
        res = getattr(_mx_nd, op)(a, b)
        if result == "bool":
            res = _cast_nd(res, _np.bool_)
        return _out(res, out)
    fn.__name__ = name
    fn.__doc__ = "NumPy's ``%s`` with broadcasting (registry op ``%s``)." % (name, op)
    return fn


add = _make_binary("add", "broadcast_add")
subtract = _make_binary("subtract", "broadcast_sub")
multiply = _make_binary("multiply", "broadcast_mul")
true_divide = _make_binary("true_divide", "broadcast_div", float_out=True)
divide = true_divide
mod = _make_binary("mod", "broadcast_mod")
remainder = mod
power = _make_binary("power", "broadcast_power")
maximum = _make_binary("maximum", "broadcast_maximum")
minimum = _make_binary("minimum", "broadcast_minimum")
hypot = _make_binary("hypot", "broadcast_hypot", float_out=True)
equal = _make_binary("equal", "broadcast_equal", "bool")
not_equal = _make_binary("not_equal", "broadcast_not_equal", "bool")
greater = _make_binary("greater", "broadcast_greater", "bool")
greater_equal = _make_binary("greater_equal", "broadcast_greater_equal", "bool")
less = _make_binary("less", "broadcast_lesser", "bool")
less_equal = _make_binary("less_equal", "broadcast_lesser_equal", "bool")
logical_and = _make_binary("logical_and", "broadcast_logical_and", "bool")
logical_or = _make_binary("logical_or", "broadcast_logical_or", "bool")
logical_xor = _make_binary("logical_xor", "broadcast_logical_xor", "bool")


def floor_divide(x1, x2, out=None):
    """NumPy's ``floor_divide`` (``//``): floor of the quotient, in the operands' dtype."""
    a, b, dtype = _binary_operands(x1, x2)
    if _is_float(dtype):
        res = _mx_nd.floor(_mx_nd.broadcast_div(a, b))
    else:
        wide = _np.float64
        res = _cast_nd(_mx_nd.floor(_mx_nd.broadcast_div(_cast_nd(a, wide), _cast_nd(b, wide))),
                       dtype)
    return _out(res, out)


def _make_unary(name, op, to_float=True):
    """A NumPy unary function on registry op ``op``; ``to_float`` computes integer
    inputs in float32 (as MXNet does for exp, log, sin...)."""
    def fn(x, out=None, **kwargs):
        if kwargs:
            raise NotImplementedError("%s: arguments %s are not supported"
                                      % (name, ", ".join(sorted(kwargs))))
        nd = _nd_of(x)
        if to_float and not _is_float(nd.dtype):
            nd = _cast_nd(nd, _default_float())
        return _out(getattr(_mx_nd, op)(nd), out)
    fn.__name__ = name
    fn.__doc__ = "NumPy's ``%s``, elementwise (registry op ``%s``)." % (name, op)
    return fn


negative = _make_unary("negative", "negative", False)
absolute = _make_unary("absolute", "abs", False)
abs = absolute  # noqa: A001 - NumPy's name
sign = _make_unary("sign", "sign", False)
square = _make_unary("square", "square", False)
exp = _make_unary("exp", "exp")
expm1 = _make_unary("expm1", "expm1")
log = _make_unary("log", "log")
log2 = _make_unary("log2", "log2")
log10 = _make_unary("log10", "log10")
log1p = _make_unary("log1p", "log1p")
sqrt = _make_unary("sqrt", "sqrt")
cbrt = _make_unary("cbrt", "cbrt")
reciprocal = _make_unary("reciprocal", "reciprocal")
sin = _make_unary("sin", "sin")
cos = _make_unary("cos", "cos")
tan = _make_unary("tan", "tan")
arcsin = _make_unary("arcsin", "arcsin")
arccos = _make_unary("arccos", "arccos")
arctan = _make_unary("arctan", "arctan")
sinh = _make_unary("sinh", "sinh")
cosh = _make_unary("cosh", "cosh")
tanh = _make_unary("tanh", "tanh")
arcsinh = _make_unary("arcsinh", "arcsinh")
arccosh = _make_unary("arccosh", "arccosh")
arctanh = _make_unary("arctanh", "arctanh")
degrees = _make_unary("degrees", "degrees")
radians = _make_unary("radians", "radians")
floor = _make_unary("floor", "floor", False)
ceil = _make_unary("ceil", "ceil", False)
trunc = _make_unary("trunc", "trunc", False)
rint = _make_unary("rint", "rint", False)
fix = _make_unary("fix", "fix", False)


def logical_not(x, out=None):
    """NumPy's ``logical_not``: a bool array."""
    nd = _nd_of(x)
    return _out(_cast_nd(_mx_nd.logical_not(_cast_nd(nd, _np.float32)), _np.bool_), out)


# ---------------------------------------------------------------------------
# reductions

def _norm_axis(axis, ndim):
    if axis is None:
        return None
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    res = []
    for ax in axes:
        ax = int(ax)
        if ax < -ndim or ax >= ndim:
            raise ValueError("axis %d is out of bounds for array of dimension %d" % (ax, ndim))
        res.append(ax % ndim)
    if len(set(res)) != len(res):
        raise ValueError("duplicate value in 'axis'")
    return tuple(res)


def _reduced_shape(shape, axes, keepdims):
    if axes is None:
        axes = tuple(range(len(shape)))
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _make_reduce(name, op, mean_like=False):
    def fn(a, axis=None, dtype=None, out=None, keepdims=False, initial=None):
        if initial is not None:
            raise NotImplementedError("%s: initial is not supported" % name)
        nd = _nd_of(a)
        axes = _norm_axis(axis, nd.ndim)
        if mean_like and not _is_float(nd.dtype) and dtype is None:
            nd = _cast_nd(nd, _default_float())
        elif nd.dtype == _np.bool_ and op in ("sum", "prod"):
            nd = _cast_nd(nd, _np.int64)
        if dtype is not None:
            nd = _cast_nd(nd, dtype)
        shape = _reduced_shape(nd.shape, () if axes == () else axes, keepdims)
        if axes == ():
            res = nd.copy()
        elif nd.size == 0 and op in ("max", "min"):
            raise ValueError("zero-size array to reduction operation %s which has no "
                             "identity" % name)
        else:
            kw = {} if axes is None else {"axis": axes}
            res = getattr(_mx_nd, op)(nd, keepdims=bool(keepdims), **kw)
        return _out(_reshape_nd(res, shape), out)
    fn.__name__ = name
    fn.__doc__ = ("NumPy's ``%s`` over ``axis`` (None: all axes), ``keepdims`` keeps the "
                  "reduced axes as size 1 (registry op ``%s``)." % (name, op))
    return fn


def _reduce_with_dtype(name, op, mean_like=False):
    return _make_reduce(name, op, mean_like)


sum = _reduce_with_dtype("sum", "sum")  # noqa: A001 - NumPy's name
mean = _reduce_with_dtype("mean", "mean", mean_like=True)
prod = _reduce_with_dtype("prod", "prod")
_max_r = _make_reduce("max", "max")
_min_r = _make_reduce("min", "min")


def max(a, axis=None, out=None, keepdims=False):  # noqa: A001 - NumPy's name
    """NumPy's ``max`` (``amax``) over ``axis``."""
    return _max_r(a, axis=axis, out=out, keepdims=keepdims)


def min(a, axis=None, out=None, keepdims=False):  # noqa: A001 - NumPy's name
    """NumPy's ``min`` (``amin``) over ``axis``."""
    return _min_r(a, axis=axis, out=out, keepdims=keepdims)


amax, amin = max, min


def _make_arg(name, op):
    def fn(a, axis=None, out=None):
        nd = _nd_of(a)
        if nd.size == 0:
            raise ValueError("attempt to get %s of an empty sequence" % name)
        if axis is None:
            res = getattr(_mx_nd, op)(_reshape_nd(nd, (nd.size,)), axis=0)
            res = _reshape_nd(res, ())
        else:
            ax = _norm_axis(axis, nd.ndim)[0]
            res = getattr(_mx_nd, op)(nd, axis=ax)
        return _out(_cast_nd(res, _np.int64), out)
    fn.__name__ = name
    fn.__doc__ = "NumPy's ``%s``: int64 indices (registry op ``%s``)." % (name, op)
    return fn


argmax = _make_arg("argmax", "argmax")
argmin = _make_arg("argmin", "argmin")


# ---------------------------------------------------------------------------
# shapes

def _np_shape_arg(shape):
    if isinstance(shape, (int, _np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def _resolve_reshape(old_shape, newshape):
    newshape = _np_shape_arg(newshape)
    size = int(_np.prod(old_shape, dtype=_np.int64))
    unknown = [i for i, s in enumerate(newshape) if s == -1]
    if len(unknown) > 1:
        raise MXNetValueError("can only specify one unknown dimension")
    if _builtins.any(s < -1 for s in newshape):
        raise MXNetValueError("negative dimensions not allowed in reshape to %s" % (newshape,))
    if unknown:
        known = int(_np.prod([s for s in newshape if s != -1], dtype=_np.int64))
        if known == 0 or size % known:
            raise MXNetValueError("cannot reshape array of size %d into shape %s" % (size, newshape))
        newshape = tuple(size // known if s == -1 else s for s in newshape)
    if int(_np.prod(newshape, dtype=_np.int64)) != size:
        raise MXNetValueError("cannot reshape array of size %d into shape %s" % (size, newshape))
    return newshape


def reshape(a, newshape, order="C"):
    """NumPy's ``reshape`` (``-1`` infers one dimension); a view sharing memory."""
    if order != "C":
        raise NotImplementedError("reshape: only order='C' is supported")
    nd = _nd_of(a)
    return _wrap(_reshape_nd(nd, _resolve_reshape(nd.shape, newshape)))


def ravel(x, order="C"):
    """NumPy's ``ravel``: the array as 1-D."""
    return reshape(x, (-1,), order)


def transpose(a, axes=None):
    """NumPy's ``transpose``: axes reversed, or permuted by ``axes``."""
    nd = _nd_of(a)
    if axes is None:
        axes = tuple(range(nd.ndim))[::-1]
    else:
        axes = _norm_axis(axes, nd.ndim)
        if len(axes) != nd.ndim:
            raise ValueError("axes don't match array")
    if nd.ndim <= 1:
        return _wrap(nd.copy())
    return _wrap(_mx_nd.transpose(nd, axes=axes))


def swapaxes(a, axis1, axis2):
    """NumPy's ``swapaxes``."""
    nd = _nd_of(a)
    axes = list(range(nd.ndim))
    i, j = _norm_axis(axis1, nd.ndim)[0], _norm_axis(axis2, nd.ndim)[0]
    axes[i], axes[j] = axes[j], axes[i]
    return transpose(nd, tuple(axes))


def expand_dims(a, axis):
    """NumPy's ``expand_dims``: a size-1 axis inserted at ``axis``."""
    nd = _nd_of(a)
    ax = _norm_axis(axis, nd.ndim + 1)[0]
    shape = tuple(nd.shape[:ax]) + (1,) + tuple(nd.shape[ax:])
    return _wrap(_reshape_nd(nd, shape))


def squeeze(a, axis=None):
    """NumPy's ``squeeze``: drops size-1 axes (those in ``axis``, which must be 1)."""
    nd = _nd_of(a)
    if axis is None:
        axes = tuple(i for i, s in enumerate(nd.shape) if s == 1)
    else:
        axes = _norm_axis(axis, nd.ndim)
        for ax in axes:
            if nd.shape[ax] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not "
                                 "equal to one")
    return _wrap(_reshape_nd(nd, tuple(s for i, s in enumerate(nd.shape) if i not in axes)))


def broadcast_to(array, shape):  # pylint: disable=redefined-outer-name
    """NumPy's ``broadcast_to``."""
    nd = _nd_of(array)
    shape = _np_shape_arg(shape)
    _np.broadcast_shapes(tuple(nd.shape), shape)  # raises NumPy's ValueError when impossible
    if len(shape) < nd.ndim or _np.broadcast_shapes(tuple(nd.shape), shape) != shape:
        raise ValueError("cannot broadcast array of shape %s to %s" % (nd.shape, shape))
    if tuple(nd.shape) == shape:
        return _wrap(nd.copy())
    if nd.ndim == 0:
        nd = _reshape_nd(nd, (1,))
    return _wrap(nd.broadcast_to(shape))


def concatenate(seq, axis=0, out=None):
    """NumPy's ``concatenate`` along ``axis`` (None: the arrays flattened)."""
    nds = [_nd_of(a) for a in seq]
    if not nds:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        nds = [_reshape_nd(a, (a.size,)) for a in nds]
        axis = 0
    if _builtins.any(a.ndim == 0 for a in nds):
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    ndim = nds[0].ndim
    if _builtins.any(a.ndim != ndim for a in nds):
        raise ValueError("all the input arrays must have same number of dimensions")
    ax = _norm_axis(axis, ndim)[0]
    dtype = nds[0].dtype
    for a in nds[1:]:
        dtype = _promote(dtype, a.dtype)
    nds = [_cast_nd(a, dtype) for a in nds]
    if len(nds) == 1:
        return _out(nds[0].copy(), out)
    return _out(_mx_nd.concat(*nds, dim=ax), out)


def stack(arrays, axis=0, out=None):
    """NumPy's ``stack``: the arrays (all one shape) joined along a new axis."""
    nds = [_nd_of(a) for a in arrays]
    if not nds:
        raise ValueError("need at least one array to stack")
    if _builtins.any(tuple(a.shape) != tuple(nds[0].shape) for a in nds):
        raise ValueError("all input arrays must have the same shape")
    ax = _norm_axis(axis, nds[0].ndim + 1)[0]
    dtype = nds[0].dtype
    for a in nds[1:]:
        dtype = _promote(dtype, a.dtype)
    nds = [_reshape_nd(_cast_nd(a, dtype), tuple(a.shape[:ax]) + (1,) + tuple(a.shape[ax:]))
           for a in nds]
    if len(nds) == 1:
        return _out(nds[0].copy(), out)
    return _out(_mx_nd.concat(*nds, dim=ax), out)


def _split_bounds(n, indices_or_sections, even):
    if isinstance(indices_or_sections, (int, _np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        if even and n % sections:
            raise ValueError("array split does not result in an equal division")
        each, extra = divmod(n, sections)
        bounds = [0]
        for i in range(sections):
            bounds.append(bounds[-1] + each + (1 if i < extra else 0))
        return bounds
    idx = [int(i) for i in indices_or_sections]
    return [0] + [_builtins.min(_builtins.max(i if i >= 0 else i + n, 0), n) for i in idx] + [n]


def _split(ary, indices_or_sections, axis, even):
    nd = _nd_of(ary)
    ax = _norm_axis(axis, nd.ndim)[0]
    bounds = _split_bounds(nd.shape[ax], indices_or_sections, even)
    res = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        hi = hi if hi >= lo else lo
        res.append(_wrap(_mx_nd.slice_axis(nd, axis=ax, begin=lo, end=hi)))
    return res


def split(ary, indices_or_sections, axis=0):
    """NumPy's ``split``: equal sections (an int, which must divide the axis) or the
    pieces between the given indices."""
    return _split(ary, indices_or_sections, axis, True)


def array_split(ary, indices_or_sections, axis=0):
    """NumPy's ``array_split``: like :func:`split`, sections need not divide the axis."""
    return _split(ary, indices_or_sections, axis, False)


def dot(a, b, out=None):
    """NumPy's ``dot``: scalars multiply; 1-D by 1-D is the inner product (a zero-dim
    array); otherwise the sum over ``a``'s last axis and ``b``'s second-to-last."""
    if _is_scalar(a) or _is_scalar(b):
        return multiply(a, b, out=out)
    x, y, dtype = _binary_operands(a, b)
    if x.ndim == 0 or y.ndim == 0:
        return _out(_mx_nd.broadcast_mul(x, y), out)
    if x.shape[-1] != y.shape[0 if y.ndim == 1 else -2]:
        raise ValueError("shapes %s and %s not aligned" % (x.shape, y.shape))
    if y.ndim > 2:
        perm = (y.ndim - 2,) + tuple(range(y.ndim - 2)) + (y.ndim - 1,)
        y = _mx_nd.transpose(y, axes=perm)
    shape = tuple(x.shape[:-1]) + (tuple(y.shape[1:]) if y.ndim > 1 else ())
    res = _mx_nd.dot(x, y)
    return _out(_reshape_nd(res, shape), out)


def clip(a, a_min, a_max, out=None):
    """NumPy's ``clip`` with scalar bounds (None: no bound on that side)."""
    if a_min is None and a_max is None:
        raise ValueError("One of max or min must be given")
    if not _is_scalar(a_min if a_min is not None else 0) or \
            not _is_scalar(a_max if a_max is not None else 0):
        raise NotImplementedError("clip: array bounds are not supported, only scalars")
    nd = _nd_of(a)
    lo = -_np.inf if a_min is None else float(a_min)
    hi = _np.inf if a_max is None else float(a_max)
    return _out(_mx_nd.clip(nd, a_min=lo, a_max=hi), out)


def where(condition, x=None, y=None):
    """NumPy's three-argument ``where`` (with broadcasting); the one-argument form is
    not built."""
    if x is None or y is None:
        raise NotImplementedError("where(condition) without x and y is not supported")
    if _is_scalar(x) and _is_scalar(y):
        x = array(x)
    xa, ya, dtype = _binary_operands(x, y)
    cond = _cast_nd(_nd_of(condition), dtype)
    shape = _np.broadcast_shapes(tuple(cond.shape), tuple(xa.shape), tuple(ya.shape))

    def _b(nd):
        if tuple(nd.shape) == shape:
            return nd
        if nd.ndim == 0:
            nd = _reshape_nd(nd, (1,))
        return nd.broadcast_to(shape)
    return _wrap(_mx_nd.where(_b(cond), _b(xa), _b(ya)))


def copy(a):
    """A copy of ``a``."""
    return _wrap(_nd_of(a).copy())


def shape(a):
    """The shape of ``a``."""
    return tuple(_nd_of(a).shape)


def ndim(a):
    """The number of dimensions of ``a``."""
    return _nd_of(a).ndim


def size(a):
    """The number of elements of ``a``."""
    return _nd_of(a).size


def matmul(a, b, out=None):
    """NumPy's ``matmul``: matrix products over the last two axes, the leading (batch)
    axes broadcast; a 1-D operand is a row (``a``) or column (``b``) vector."""
    if _is_scalar(a) or _is_scalar(b):
        raise ValueError("matmul: Input operand does not have enough dimensions")
    x, y, dtype = _binary_operands(a, b)
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    xv, yv = x.ndim == 1, y.ndim == 1
    if xv:
        x = _reshape_nd(x, (1, x.shape[0]))
    if yv:
        y = _reshape_nd(y, (y.shape[0], 1))
    if x.shape[-1] != y.shape[-2]:
        raise ValueError("matmul: Input operand 1 has a mismatch in its core dimension 0 "
                         "(size %d is different from %d)" % (y.shape[-2], x.shape[-1]))
    batch = _np.broadcast_shapes(tuple(x.shape[:-2]), tuple(y.shape[:-2]))
    m, k, n = x.shape[-2], x.shape[-1], y.shape[-1]

    def _batched(nd, rows, cols):
        full = batch + (rows, cols)
        if tuple(nd.shape) != full:
            nd = broadcast_to(_wrap(nd), full)._nd
        nb = int(_np.prod(batch, dtype=_np.int64)) if batch else 1
        return _reshape_nd(nd, (nb, rows, cols))
    res = _mx_nd.batch_dot(_batched(x, m, k), _batched(y, k, n))
    shape = batch + ((m,) if not xv else ()) + ((n,) if not yv else ())
    return _out(_reshape_nd(res, shape), out)


def tile(A, reps):
    """NumPy's ``tile``: ``A`` repeated ``reps`` times along each axis."""
    nd = _nd_of(A)
    reps = (int(reps),) if isinstance(reps, (int, _np.integer)) else tuple(int(r) for r in reps)
    if nd.ndim == 0:
        nd = _reshape_nd(nd, (1,))
    return _wrap(_mx_nd.tile(nd, reps=reps))


def repeat(a, repeats, axis=None):
    """NumPy's ``repeat`` with an int ``repeats`` (per-element counts are not built)."""
    if not isinstance(repeats, (int, _np.integer)):
        raise NotImplementedError("repeat: only an int number of repeats is supported")
    nd = _nd_of(a)
    if axis is None:
        return _wrap(_mx_nd.repeat(_reshape_nd(nd, (nd.size,)), repeats=int(repeats), axis=0))
    return _wrap(_mx_nd.repeat(nd, repeats=int(repeats), axis=_norm_axis(axis, nd.ndim)[0]))


def flip(m, axis=None):
    """NumPy's ``flip``: the order of elements reversed along ``axis`` (None: all)."""
    nd = _nd_of(m)
    axes = tuple(range(nd.ndim)) if axis is None else _norm_axis(axis, nd.ndim)
    if nd.ndim == 0 or not axes:
        return _wrap(nd.copy())
    return _wrap(_mx_nd.flip(nd, axis=axes))


def sort(a, axis=-1):
    """NumPy's ``sort`` (ascending; ``axis`` None sorts the flattened array)."""
    nd = _nd_of(a)
    if axis is None:
        nd, axis = _reshape_nd(nd, (nd.size,)), 0
    return _wrap(_mx_nd.sort(nd, axis=_norm_axis(axis, nd.ndim)[0]))


def argsort(a, axis=-1):
    """NumPy's ``argsort``: int64 indices that sort ``a`` (ascending)."""
    nd = _nd_of(a)
    if axis is None:
        nd, axis = _reshape_nd(nd, (nd.size,)), 0
    return _wrap(_mx_nd.argsort(nd, axis=_norm_axis(axis, nd.ndim)[0], dtype="int64"))


def cumsum(a, axis=None, dtype=None, out=None):
    """NumPy's ``cumsum`` along ``axis`` (None: over the flattened array)."""
    nd = _nd_of(a)
    if dtype is not None:
        nd = _cast_nd(nd, dtype)
    elif nd.dtype == _np.bool_:
        nd = _cast_nd(nd, _np.int64)
    if axis is None:
        nd, axis = _reshape_nd(nd, (nd.size,)), 0
    return _out(_mx_nd.cumsum(nd, axis=_norm_axis(axis, nd.ndim)[0]), out)


def _make_isx(name):
    def fn(x, out=None):
        nd = _nd_of(x)
        if not _is_float(nd.dtype):
            return _out(_full_nd(nd.shape, name == "isfinite", _np.bool_, nd.context), out)
        return _out(_cast_nd(getattr(_mx_nd.contrib, name)(nd), _np.bool_), out)
    fn.__name__ = name
    fn.__doc__ = "NumPy's ``%s``: a bool array." % name
    return fn


isnan = _make_isx("isnan")
isinf = _make_isx("isinf")
isfinite = _make_isx("isfinite")


def all(a, axis=None, out=None, keepdims=False):  # noqa: A001 - NumPy's name
    """NumPy's ``all``: whether every element (along ``axis``) is nonzero (bool)."""
    nz = not_equal(_wrap(_cast_nd(_nd_of(a), _np.float32)), 0.0)
    res = min(_wrap(_cast_nd(nz._nd, _np.float32)), axis=axis, keepdims=keepdims) \
        if nz.size else full((), True, dtype=_np.bool_)
    return _out(_cast_nd(res._nd, _np.bool_), out)


def any(a, axis=None, out=None, keepdims=False):  # noqa: A001 - NumPy's name
    """NumPy's ``any``: whether some element (along ``axis``) is nonzero (bool)."""
    nz = not_equal(_wrap(_cast_nd(_nd_of(a), _np.float32)), 0.0)
    res = max(_wrap(_cast_nd(nz._nd, _np.float32)), axis=axis, keepdims=keepdims) \
        if nz.size else full((), False, dtype=_np.bool_)
    return _out(_cast_nd(res._nd, _np.bool_), out)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """NumPy's ``var``: the mean squared deviation from the mean over ``axis``, divided by
    ``N - ddof``."""
    x = _wrap(_nd_of(a))
    if not _is_float(x.dtype) and dtype is None:
        x = x.astype(_default_float())
    elif dtype is not None:
        x = x.astype(dtype)
    axes = _norm_axis(axis, x.ndim)
    n = x.size if axes is None else int(_np.prod([x.shape[i] for i in axes], dtype=_np.int64))
    dev = x - mean(x, axis=axes, keepdims=True)
    res = sum(dev * dev, axis=axes, keepdims=keepdims) / float(_builtins.max(n - ddof, 0))
    return _out(res._nd, out)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """NumPy's ``std``: the square root of :func:`var`."""
    return _out(sqrt(var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims))._nd, out)


def take(a, indices, axis=None, mode="raise", out=None):
    """NumPy's ``take`` along ``axis`` (None: from the flattened array); ``mode`` 'clip'
    or 'wrap' as MXNet ('raise' checks the indices' range first)."""
    nd = _nd_of(a)
    if axis is None:
        nd, axis = _reshape_nd(nd, (nd.size,)), 0
    ax = _norm_axis(axis, nd.ndim)[0]
    scalar_idx = _is_scalar(indices)
    idx = _nd_of(_np.asarray(indices) if scalar_idx or isinstance(indices, list) else indices,
                 nd.context)
    if mode == "raise":
        iv = idx.asnumpy()
        if iv.size and (iv.max() >= nd.shape[ax] or iv.min() < -nd.shape[ax]):
            raise IndexError("take: index out of bounds for axis %d with size %d"
                             % (ax, nd.shape[ax]))
        mode = "wrap"
    elif mode not in ("clip", "wrap"):
        raise ValueError("take: mode must be 'raise', 'wrap' or 'clip'")
    res = _mx_nd.take(nd, _cast_nd(idx, _np.float32) if idx.ndim else
                      _reshape_nd(_cast_nd(idx, _np.float32), (1,)), axis=ax, mode=mode)
    if idx.ndim == 0:
        res = _reshape_nd(res, tuple(nd.shape[:ax]) + tuple(nd.shape[ax + 1:]))
    return _out(res, out)


def moveaxis(a, source, destination):
    """NumPy's ``moveaxis``."""
    nd = _nd_of(a)
    src = _norm_axis(source, nd.ndim)
    dst = _norm_axis(destination, nd.ndim)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number "
                         "of elements")
    order = [i for i in range(nd.ndim) if i not in src]
    for d, s_ in sorted(zip(dst, src)):
        order.insert(d, s_)
    return transpose(nd, tuple(order))


def around(x, decimals=0, out=None):
    """NumPy's ``around`` with ``decimals=0`` (round half to even, as NumPy)."""
    if decimals != 0:
        raise NotImplementedError("around: only decimals=0 is supported")
    return _out(_mx_nd.rint(_nd_of(x)), out)


round = around  # noqa: A001 - NumPy's name


# ---------------------------------------------------------------------------
# creation

def _dtype_of_source(obj, dtype):
    if dtype is not None:
        return _np.dtype(dtype)
    if isinstance(obj, (ndarray, NDArray)):
        return _np.dtype(obj.dtype)
    if isinstance(obj, _np.ndarray):
        return obj.dtype
    src = _np.asarray(obj)
    if src.dtype == _np.bool_:
        return src.dtype
    # MXNet 1.9.1: arrays from Python lists and scalars are float32 by default.
    return _default_float()


def array(object, dtype=None, ctx=None):  # pylint: disable=redefined-builtin
    """An ``mx.np.ndarray`` from ``object`` (a list, a NumPy array, an ``mx.np.ndarray``
    or ``NDArray``: always a copy). Python lists and scalars give float32 unless
    ``dtype`` says otherwise; NumPy and MXNet arrays keep their dtype."""
    ctx = _ctx_of(ctx)
    dt = _dtype_of_source(object, dtype)
    if isinstance(object, (ndarray, NDArray)):
        nd = _nd_of(object)
        res = _cast_nd(nd, dt)
        res = res.copyto(ctx) if res is nd or res.context != ctx else res
        return _wrap(res)
    src = _np.asarray(object)
    if src.dtype.kind in "OUSVM":
        raise TypeError("cannot make an mx.np.ndarray from %s of dtype %s"
                        % (type(object).__name__, src.dtype))
    src = src.astype(dt, copy=False)
    res = _mx_nd.empty(src.shape, ctx=ctx, dtype=dt.name)
    if src.size:
        res[:] = src if src.ndim else src.reshape(())
    return _wrap(res)


def asarray(obj, dtype=None, ctx=None):
    """``obj`` itself when it is an ``mx.np.ndarray`` of that dtype, else :func:`array`."""
    if isinstance(obj, ndarray) and (dtype is None or _np.dtype(dtype) == obj.dtype) and \
            (ctx is None or _ctx_of(ctx) == obj.ctx):
        return obj
    return array(obj, dtype=dtype, ctx=ctx)


def _creation_dtype(dtype):
    return _default_float() if dtype is None else _np.dtype(dtype)


def zeros(shape, dtype=None, order="C", ctx=None):  # pylint: disable=redefined-outer-name
    """An array of zeros (float32 unless ``dtype``)."""
    if order != "C":
        raise NotImplementedError("zeros: only order='C' is supported")
    return _wrap(_mx_nd.ndarray._filled("_zeros", _np_shape_arg(shape), ctx=_ctx_of(ctx),
                                        dtype=_creation_dtype(dtype).name))


def ones(shape, dtype=None, order="C", ctx=None):  # pylint: disable=redefined-outer-name
    """An array of ones (float32 unless ``dtype``)."""
    if order != "C":
        raise NotImplementedError("ones: only order='C' is supported")
    return _wrap(_mx_nd.ndarray._filled("_ones", _np_shape_arg(shape), ctx=_ctx_of(ctx),
                                        dtype=_creation_dtype(dtype).name))


def empty(shape, dtype=None, order="C", ctx=None):  # pylint: disable=redefined-outer-name
    """An uninitialized array (float32 unless ``dtype``)."""
    if order != "C":
        raise NotImplementedError("empty: only order='C' is supported")
    return _wrap(_mx_nd.empty(_np_shape_arg(shape), ctx=_ctx_of(ctx),
                              dtype=_creation_dtype(dtype).name))


def full(shape, fill_value, dtype=None, order="C", ctx=None, out=None):  # pylint: disable=redefined-outer-name
    """An array filled with ``fill_value`` (a scalar; its dtype follows MXNet: float32
    for a Python number unless ``dtype``)."""
    if order != "C":
        raise NotImplementedError("full: only order='C' is supported")
    if not _is_scalar(fill_value):
        fv = _nd_of(fill_value, ctx)
        dt = _np.dtype(dtype) if dtype is not None else _np.dtype(fv.dtype)
        return _out(broadcast_to(_wrap(_cast_nd(fv, dt)), shape)._nd, out)
    if dtype is None:
        dtype = _np.bool_ if isinstance(fill_value, (bool, _np.bool_)) else _default_float()
    return _out(_full_nd(_np_shape_arg(shape), fill_value, dtype, _ctx_of(ctx)), out)


def _like(a, dtype, ctx):
    nd = _nd_of(a)
    return (tuple(nd.shape), _np.dtype(nd.dtype) if dtype is None else _np.dtype(dtype),
            nd.context if ctx is None else _ctx_of(ctx))


def zeros_like(a, dtype=None, order="C", ctx=None, out=None):
    """An array of zeros with ``a``'s shape (and dtype unless ``dtype``)."""
    s, dt, c = _like(a, dtype, ctx)
    return _out(_full_nd(s, 0, dt, c), out)


def ones_like(a, dtype=None, order="C", ctx=None, out=None):
    """An array of ones with ``a``'s shape (and dtype unless ``dtype``)."""
    s, dt, c = _like(a, dtype, ctx)
    return _out(_full_nd(s, 1, dt, c), out)


def full_like(a, fill_value, dtype=None, order="C", ctx=None, out=None):
    """An array of ``fill_value`` with ``a``'s shape (and dtype unless ``dtype``)."""
    s, dt, c = _like(a, dtype, ctx)
    return _out(_full_nd(s, fill_value, dt, c), out)


def empty_like(prototype, dtype=None, order="C", subok=False, shape=None):  # pylint: disable=redefined-outer-name
    """An uninitialized array like ``prototype``."""
    s, dt, c = _like(prototype, dtype, None)
    return _wrap(_mx_nd.empty(s if shape is None else _np_shape_arg(shape), ctx=c,
                              dtype=dt.name))


def arange(start, stop=None, step=1, dtype=None, ctx=None):
    """NumPy's ``arange`` (float32 unless ``dtype``, as MXNet 1.9.1)."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ZeroDivisionError("step cannot be 0")
    dt = _creation_dtype(dtype)
    n = int(_np.ceil((stop - start) / step))
    if n <= 0:
        return _wrap(_mx_nd.empty((0,), ctx=_ctx_of(ctx), dtype=dt.name))
    idx = _mx_nd.arange(0, n, 1, ctx=_ctx_of(ctx), dtype="float64")
    return _wrap(_cast_nd(idx * float(step) + float(start), dt))


def eye(N, M=None, k=0, dtype=None, ctx=None):
    """NumPy's ``eye``: ones on diagonal ``k`` (float32 unless ``dtype``)."""
    return _wrap(_mx_nd.eye(N, 0 if M is None else M, k, ctx=_ctx_of(ctx),
                            dtype=_creation_dtype(dtype).name))


def identity(n, dtype=None, ctx=None):
    """The ``n`` x ``n`` identity."""
    return eye(n, dtype=dtype, ctx=ctx)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, ctx=None):
    """NumPy's ``linspace`` (float32 unless ``dtype``)."""
    if axis != 0:
        raise NotImplementedError("linspace: only axis=0 is supported")
    num = int(num)
    if num < 0:
        raise ValueError("Number of samples, %d, must be non-negative." % num)
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else _np.nan
    dt = _creation_dtype(dtype)
    if num == 0:
        res = _mx_nd.empty((0,), ctx=_ctx_of(ctx), dtype=dt.name)
    else:
        idx = _mx_nd.arange(0, num, 1, ctx=_ctx_of(ctx), dtype="float64")
        res = idx * (step if div > 0 else 0.0) + start
        if endpoint and num > 1:
            res[num - 1] = stop
        res = _cast_nd(res, dt)
    return (_wrap(res), step) if retstep else _wrap(res)


# ---------------------------------------------------------------------------
# the array class

def _key_of(key):
    """An indexing key with np arrays replaced by their NDArrays, and the NumPy key
    computing the result's shape."""
    if isinstance(key, tuple):
        parts = [_key_of(k) for k in key]
        return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
    if isinstance(key, ndarray):
        if key.dtype == _np.bool_:
            raise NotImplementedError("boolean mask indexing of mx.np.ndarray is not supported")
        return key._nd, key.asnumpy()
    if isinstance(key, NDArray):
        return key, key.asnumpy()
    if isinstance(key, _np.ndarray) and key.dtype == _np.bool_:
        raise NotImplementedError("boolean mask indexing of mx.np.ndarray is not supported")
    if isinstance(key, list):
        key = _np.asarray(key)
        if key.dtype == _np.bool_:
            raise NotImplementedError("boolean mask indexing of mx.np.ndarray is not supported")
    return key, key


class ndarray:  # pylint: disable=invalid-name
    """MXNet's NumPy-compatible array (``mx.np.ndarray``): NumPy's shape, dtype,
    broadcasting and printing, computed by oxnet's registry ops."""

    __slots__ = ("_nd", "__weakref__")
    __array_priority__ = 1000.0

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """A NumPy ufunc called on an mx.np array (``onp.exp(x)``, ``onp_arr + x``) runs
        the mx.np function of that name, as MXNet does; one that is not built raises."""
        fn = _UFUNC_NAMES.get(ufunc.__name__, ufunc.__name__)
        fn = globals().get(fn) if method == "__call__" else None
        if fn is None or not callable(fn):
            raise TypeError("mx.np.ndarray: NumPy's %s.%s is not supported on mx.np arrays"
                            % (ufunc.__name__, method))
        return fn(*inputs, **kwargs)

    def __init__(self, shape, dtype=_np.float32, ctx=None):  # pylint: disable=redefined-outer-name
        self._nd = _mx_nd.empty(_np_shape_arg(shape), ctx=_ctx_of(ctx),
                                dtype=_np.dtype(dtype).name)

    # -- attributes --
    @property
    def shape(self):
        return tuple(self._nd.shape)

    @property
    def dtype(self):
        return _np.dtype(self._nd.dtype)

    @property
    def ndim(self):
        return self._nd.ndim

    @property
    def size(self):
        return self._nd.size

    @property
    def ctx(self):
        return self._nd.context

    context = ctx

    @property
    def stype(self):
        return "default"

    @property
    def T(self):
        return transpose(self)

    @property
    def grad(self):
        g = self._nd.grad
        return None if g is None else _wrap(g)

    # -- conversions --
    def asnumpy(self):
        """A NumPy copy (blocks until computed)."""
        return self._nd.asnumpy()

    def as_nd_ndarray(self):
        """The same data as a legacy ``mx.nd.NDArray`` (shares memory)."""
        return self._nd

    def as_np_ndarray(self):
        return self

    def item(self, *args):
        """The element (the only one, or at ``args``) as a Python scalar."""
        return self.asnumpy().item(*args)

    def tolist(self):
        return self.asnumpy().tolist()

    def __array__(self, dtype=None, copy=None):
        a = self.asnumpy()
        return a if dtype is None else a.astype(dtype)

    def astype(self, dtype, copy=True):  # pylint: disable=redefined-outer-name
        dtype = _np.dtype(dtype)
        if not copy and dtype == self.dtype:
            return self
        if dtype == self.dtype:
            return _wrap(self._nd.copy())
        return _wrap(_cast_nd(self._nd, dtype))

    def copy(self, order="C"):
        return _wrap(self._nd.copy())

    def copyto(self, other):
        if isinstance(other, ndarray):
            self._nd.copyto(other._nd)
            return other
        return _wrap(self._nd.copyto(other))

    def as_in_ctx(self, ctx):
        return _wrap(self._nd.as_in_context(ctx))

    as_in_context = as_in_ctx

    def wait_to_read(self):
        self._nd.wait_to_read()

    # -- autograd --
    def attach_grad(self, grad_req="write"):
        self._nd.attach_grad(grad_req)

    def detach(self):
        return _wrap(self._nd.detach())

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        self._nd.backward(None if out_grad is None else _nd_of(out_grad),
                          retain_graph=retain_graph, train_mode=train_mode)

    # -- Python protocol --
    def __repr__(self):
        text = repr(self.asnumpy())
        if "dtype=" in text:
            if self.dtype == _default_float():
                text = text[:text.rindex(",")] + ")"
        elif self.dtype not in (_default_float(), _np.dtype(_np.bool_)):
            text = text[:-1] + ", dtype=%s)" % self.dtype.name
        if self.ctx.device_type != "cpu":
            text = text[:-1] + ", ctx=%s)" % self.ctx
        return text

    def __str__(self):
        return str(self.asnumpy())

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        for i in range(self.shape[0]):
            yield self[i]

    def __bool__(self):
        if self.size == 1:
            return bool(self.item())
        if self.size == 0:
            raise ValueError("The truth value of an empty array is ambiguous.")
        raise ValueError("The truth value of an ndarray with multiple elements is "
                         "ambiguous.")

    def __float__(self):
        if self.size != 1:
            raise TypeError("only size-1 arrays can be converted to Python scalars")
        return float(self.item())

    def __int__(self):
        if self.size != 1:
            raise TypeError("only size-1 arrays can be converted to Python scalars")
        return int(self.item())

    def __index__(self):
        if self.ndim != 0 or self.dtype.kind not in "iu":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self.item())

    __hash__ = object.__hash__

    # -- indexing --
    def _bool_mask(self, key):
        """The mask NDArray (float32 0/1, flattened) when ``key`` is one boolean array
        over this array's leading axes, else None."""
        if isinstance(key, ndarray) and key.dtype == _np.bool_:
            mask = key._nd
        elif isinstance(key, NDArray) and _np.dtype(key.dtype) == _np.bool_:
            mask = key
        elif isinstance(key, (_np.ndarray, list)) and _np.asarray(key).dtype == _np.bool_:
            mask = _nd_of(_np.asarray(key), self.ctx)
        else:
            return None
        k = mask.ndim
        if k == 0 or k > self.ndim or tuple(mask.shape) != self.shape[:k]:
            raise IndexError("boolean index of shape %s does not match the indexed array's "
                             "shape %s" % (tuple(mask.shape), self.shape))
        return _reshape_nd(_cast_nd(mask, _np.float32), (mask.size,)), k

    def __getitem__(self, key):
        masked = self._bool_mask(key)
        if masked is not None:
            mask, k = masked
            flat = _reshape_nd(self._nd, (mask.size,) + self.shape[k:])
            return _wrap(_mx_nd.contrib.boolean_mask(flat, mask, axis=0))
        ndkey, npkey = _key_of(key)
        want = _np.lib.stride_tricks.as_strided(_np.zeros(1, dtype=_np.int8), self.shape,
                                                (0,) * self.ndim)[npkey].shape
        if want == () and self.ndim > 0 and self.size:
            res = self._nd[ndkey]
        elif self.ndim == 0:
            if key is Ellipsis or key == ():
                return _wrap(self._nd._reshape_view([]))
            raise IndexError("too many indices for array: array is 0-dimensional")
        else:
            res = self._nd[ndkey]
        return _wrap(_reshape_nd(res, want))

    def __setitem__(self, key, value):
        if isinstance(value, ndarray):
            value = value._nd
        elif not _is_scalar(value) and not isinstance(value, NDArray):
            value = _np.asarray(value, dtype=self.dtype)
        if self.ndim == 0:
            if key is Ellipsis or key == () or (isinstance(key, slice) and key == slice(None)):
                nd1 = self._nd._reshape_view([1])
                nd1[:] = value.reshape((1,)) if hasattr(value, "reshape") else value
                return
            raise IndexError("too many indices for array: array is 0-dimensional")
        masked = self._bool_mask(key)
        if masked is not None:
            if not _is_scalar(value):
                raise NotImplementedError("boolean mask assignment of an array is not "
                                          "supported, only of a scalar")
            mask, k = masked
            shape_k = self.shape[:k] + (1,) * (self.ndim - k)
            cond = _reshape_nd(mask, shape_k)
            if shape_k != self.shape:
                cond = cond.broadcast_to(self.shape)
            fill = _full_nd(self.shape, value, self.dtype, self.ctx)
            _mx_nd.where(cond, fill, self._nd).copyto(self._nd)
            return
        ndkey, _ = _key_of(key)
        self._nd[ndkey] = value

    # -- methods --
    def reshape(self, *args, **kwargs):
        order = kwargs.pop("order", "C")
        if "shape" in kwargs or "newshape" in kwargs:
            args = (kwargs.pop("shape", kwargs.pop("newshape", None)),)
        if kwargs:
            raise TypeError("reshape got unexpected arguments %s" % ", ".join(kwargs))
        shp = args[0] if len(args) == 1 and not isinstance(args[0], (int, _np.integer)) else args
        return reshape(self, shp, order=order)

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return transpose(self, axes if axes else None)

    def swapaxes(self, axis1, axis2):
        return swapaxes(self, axis1, axis2)

    def squeeze(self, axis=None):
        return squeeze(self, axis)

    def flatten(self, order="C"):
        return _wrap(_reshape_nd(self._nd.copy(), (self.size,)))

    def ravel(self, order="C"):
        return ravel(self, order)

    def broadcast_to(self, shape):  # pylint: disable=redefined-outer-name
        return broadcast_to(self, shape)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        return sum(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        return mean(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False):
        return prod(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def max(self, axis=None, out=None, keepdims=False):
        return max(self, axis=axis, out=out, keepdims=keepdims)

    def min(self, axis=None, out=None, keepdims=False):
        return min(self, axis=axis, out=out, keepdims=keepdims)

    def argmax(self, axis=None, out=None):
        return argmax(self, axis=axis, out=out)

    def argmin(self, axis=None, out=None):
        return argmin(self, axis=axis, out=out)

    def clip(self, min=None, max=None, out=None):  # pylint: disable=redefined-builtin
        return clip(self, min, max, out=out)

    def dot(self, b, out=None):
        return dot(self, b, out=out)

    def all(self, axis=None, out=None, keepdims=False):
        return all(self, axis=axis, out=out, keepdims=keepdims)

    def any(self, axis=None, out=None, keepdims=False):
        return any(self, axis=axis, out=out, keepdims=keepdims)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        return var(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        return std(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)

    def cumsum(self, axis=None, dtype=None, out=None):
        return cumsum(self, axis=axis, dtype=dtype, out=out)

    def sort(self, axis=-1):
        """Sorts in place along ``axis`` (NumPy's method)."""
        sort(self, axis=axis)._nd.copyto(self._nd)

    def argsort(self, axis=-1):
        return argsort(self, axis=axis)

    def take(self, indices, axis=None, mode="raise"):
        return take(self, indices, axis=axis, mode=mode)

    def repeat(self, repeats, axis=None):
        return repeat(self, repeats, axis=axis)

    def tile(self, reps):
        return tile(self, reps)

    # -- operators --
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
        return true_divide(self, other)

    def __rtruediv__(self, other):
        return true_divide(other, self)

    def __floordiv__(self, other):
        return floor_divide(self, other)

    def __rfloordiv__(self, other):
        return floor_divide(other, self)

    def __mod__(self, other):
        return mod(self, other)

    def __rmod__(self, other):
        return mod(other, self)

    def __pow__(self, other):
        return power(self, other)

    def __rpow__(self, other):
        return power(other, self)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def __neg__(self):
        return negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return absolute(self)

    def __eq__(self, other):
        if other is None:
            return False
        return equal(self, other)

    def __ne__(self, other):
        if other is None:
            return True
        return not_equal(self, other)

    def __gt__(self, other):
        return greater(self, other)

    def __ge__(self, other):
        return greater_equal(self, other)

    def __lt__(self, other):
        return less(self, other)

    def __le__(self, other):
        return less_equal(self, other)

    def _inplace(self, fn, other):
        res = fn(self, other)
        if res.shape != self.shape:
            raise ValueError("non-broadcastable output operand with shape %s doesn't match "
                             "the broadcast shape %s" % (self.shape, res.shape))
        if res.dtype != self.dtype and _is_float(res.dtype) and not _is_float(self.dtype):
            raise TypeError("Cannot cast ufunc output from dtype('%s') to dtype('%s') with "
                            "casting rule 'same_kind'" % (res.dtype, self.dtype))
        _cast_nd(res._nd, self.dtype).copyto(self._nd)
        return self

    def __iadd__(self, other):
        return self._inplace(add, other)

    def __isub__(self, other):
        return self._inplace(subtract, other)

    def __imul__(self, other):
        return self._inplace(multiply, other)

    def __itruediv__(self, other):
        return self._inplace(true_divide, other)

    def __imod__(self, other):
        return self._inplace(mod, other)


_UFUNC_NAMES = {"divide": "true_divide", "absolute": "absolute"}


def _nd_as_np_ndarray(self):
    """This array as an ``mx.np.ndarray`` (shares memory)."""
    return _wrap(self)


NDArray.as_np_ndarray = _nd_as_np_ndarray
NDArray.as_nd_ndarray = lambda self: self
