"""Property tests (hypothesis) with NumPy as the oracle:

* broadcasting binary operators over random broadcast-compatible shapes (up to 4-D)
  and dtypes float32 / float64 / int32, through ``mx.nd.broadcast_*``, the ``mx.nd``
  helpers and the Python operators;
* reductions (sum, mean, max, min, prod) over random axis subsets with keepdims and
  exclude;
* basic indexing ``a[key]`` and ``a[key] = value`` with random int / slice / step keys.

MXNet conventions (checked with the MXNet 1.9.1 oracle): comparisons return 0/1 in the
input dtype; integer division truncates toward zero while ``%`` takes the divisor's
sign; a full reduction or an all-int index gives shape ``(1,)`` instead of a scalar.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import oxnet as mx

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

DTYPES = ["float32", "float64", "int32"]


def _elements(dtype, lo=-50, hi=50, nonzero=False):
    if dtype == "int32":
        s = st.integers(lo, hi)
        return s.filter(lambda v: v != 0) if nonzero else s
    width = 32 if dtype == "float32" else 64
    s = st.floats(lo, hi, width=width, allow_nan=False, allow_infinity=False)
    return s.filter(lambda v: abs(v) > 1e-3) if nonzero else s


@st.composite
def two_arrays(draw, nonzero_rhs=False):
    dtype = draw(st.sampled_from(DTYPES))
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=4,
                                                    min_side=1, max_side=5))
    lshape, rshape = shapes.input_shapes
    lhs = draw(hnp.arrays(dtype, lshape, elements=_elements(dtype)))
    rhs = draw(hnp.arrays(dtype, rshape, elements=_elements(dtype, nonzero=nonzero_rhs)))
    return lhs, rhs


def _np_trunc_div(x, y):
    if np.issubdtype(x.dtype, np.integer):
        q = np.abs(x.astype(np.int64)) // np.abs(y.astype(np.int64))
        return (np.sign(x.astype(np.int64)) * np.sign(y.astype(np.int64)) * q).astype(x.dtype)
    return (x / y).astype(x.dtype)


def _cmp(f):
    return lambda x, y: f(x, y).astype(np.result_type(x, y))


BINARY = {
    "broadcast_add": (lambda a, b: a + b, np.add),
    "broadcast_sub": (lambda a, b: a - b, np.subtract),
    "broadcast_mul": (lambda a, b: a * b, np.multiply),
    "broadcast_maximum": (mx.nd.maximum, np.maximum),
    "broadcast_minimum": (mx.nd.minimum, np.minimum),
    "broadcast_equal": (lambda a, b: a == b, _cmp(np.equal)),
    "broadcast_not_equal": (lambda a, b: a != b, _cmp(np.not_equal)),
    "broadcast_greater": (lambda a, b: a > b, _cmp(np.greater)),
    "broadcast_greater_equal": (lambda a, b: a >= b, _cmp(np.greater_equal)),
    "broadcast_lesser": (lambda a, b: a < b, _cmp(np.less)),
    "broadcast_lesser_equal": (lambda a, b: a <= b, _cmp(np.less_equal)),
}


def _assert_same(got, want, exact=True):
    want = np.asarray(want)
    assert isinstance(got, mx.nd.NDArray)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.dtype(got.dtype) == want.dtype, (got.dtype, want.dtype)
    if exact:
        np.testing.assert_array_equal(got.asnumpy(), want)
    else:
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", list(BINARY))
@SETTINGS
@given(data=two_arrays())
def test_broadcast_binary(name, data):
    lhs, rhs = data
    pyop, npop = BINARY[name]
    want = npop(lhs, rhs).astype(lhs.dtype)
    a, b = mx.nd.array(lhs, dtype=lhs.dtype), mx.nd.array(rhs, dtype=rhs.dtype)
    _assert_same(getattr(mx.nd, name)(a, b), want)
    _assert_same(pyop(a, b), want)
    # the inputs are untouched
    np.testing.assert_array_equal(a.asnumpy(), lhs)
    np.testing.assert_array_equal(b.asnumpy(), rhs)


@SETTINGS
@given(data=two_arrays(nonzero_rhs=True))
def test_broadcast_div_and_mod(data):
    lhs, rhs = data
    a, b = mx.nd.array(lhs, dtype=lhs.dtype), mx.nd.array(rhs, dtype=rhs.dtype)
    want = _np_trunc_div(*np.broadcast_arrays(lhs, rhs))
    _assert_same(mx.nd.broadcast_div(a, b), want)
    _assert_same(a / b, want)
    _assert_same(mx.nd.divide(a, b), want)
    if lhs.dtype == np.int32:
        _assert_same(mx.nd.broadcast_mod(a, b), np.mod(lhs, rhs).astype(np.int32))
        _assert_same(a % b, np.mod(lhs, rhs).astype(np.int32))


@SETTINGS
@given(data=two_arrays())
def test_broadcast_inplace_operators(data):
    lhs, rhs = data
    out_shape = np.broadcast_shapes(lhs.shape, rhs.shape)
    if out_shape != lhs.shape:
        return
    a, b = mx.nd.array(lhs, dtype=lhs.dtype), mx.nd.array(rhs, dtype=rhs.dtype)
    alias = a
    a += b
    assert a is alias
    _assert_same(a, (lhs + rhs).astype(lhs.dtype))
    a -= b
    a *= b
    _assert_same(a, ((lhs + rhs - rhs) * rhs).astype(lhs.dtype))


@SETTINGS
@given(data=two_arrays(), scalar=st.integers(-5, 5))
def test_scalar_operands(data, scalar):
    lhs, _ = data
    a = mx.nd.array(lhs, dtype=lhs.dtype)
    s = np.array(scalar, dtype=lhs.dtype)
    _assert_same(a + scalar, (lhs + s).astype(lhs.dtype))
    _assert_same(scalar - a, (s - lhs).astype(lhs.dtype))
    _assert_same(a * scalar, (lhs * s).astype(lhs.dtype))
    _assert_same(mx.nd.maximum(a, scalar), np.maximum(lhs, s).astype(lhs.dtype))
    _assert_same(mx.nd.minimum(scalar, a), np.minimum(lhs, s).astype(lhs.dtype))
    _assert_same(a > scalar, (lhs > s).astype(lhs.dtype))
    _assert_same(scalar >= a, (s >= lhs).astype(lhs.dtype))
    _assert_same(a == scalar, (lhs == s).astype(lhs.dtype))


# ---------------------------------------------------------------------------
# reductions


@st.composite
def reduce_case(draw):
    dtype = draw(st.sampled_from(DTYPES))
    op = draw(st.sampled_from(["sum", "mean", "max", "min", "prod"]))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5))
    if op == "prod":
        elems = st.integers(-2, 2) if dtype == "int32" else \
            st.floats(0.5, 1.5, width=32 if dtype == "float32" else 64)
    else:
        elems = _elements(dtype, -20, 20)
    x = draw(hnp.arrays(dtype, shape, elements=elems))
    ndim = len(shape)
    mode = draw(st.sampled_from(["none", "int", "tuple"]))
    if mode == "none":
        axis = None
    elif mode == "int":
        axis = draw(st.integers(-ndim, ndim - 1))
    else:
        axes = draw(st.lists(st.integers(0, ndim - 1), unique=True, min_size=1, max_size=ndim))
        # random negative spellings
        axis = tuple(a - ndim if draw(st.booleans()) else a for a in axes)
    keepdims = draw(st.booleans())
    exclude = draw(st.booleans()) if axis is not None else False
    return op, x, axis, keepdims, exclude


def np_reduce(op, x, axis, keepdims, exclude):
    ndim = x.ndim
    if axis is None:
        axes = tuple(range(ndim))
    else:
        axes = tuple(sorted(a % ndim for a in ((axis,) if isinstance(axis, int) else axis)))
    if exclude:
        axes = tuple(a for a in range(ndim) if a not in axes)
        if not axes:  # excluding every axis: nothing is reduced
            return x.copy()
    if np.issubdtype(x.dtype, np.integer):
        if op == "mean":
            s = np.sum(x.astype(np.int64), axis=axes, keepdims=keepdims)
            n = int(np.prod([x.shape[a] for a in axes]))
            r = np.trunc(s / n)
        else:
            r = getattr(np, op)(x.astype(np.int64), axis=axes, keepdims=keepdims)
    else:
        r = getattr(np, op)(x.astype(np.float64), axis=axes, keepdims=keepdims)
    r = np.asarray(r).astype(x.dtype)
    return r.reshape(1) if r.ndim == 0 else r


@SETTINGS
@given(case=reduce_case())
def test_reductions(case):
    op, x, axis, keepdims, exclude = case
    want = np_reduce(op, x, axis, keepdims, exclude)
    kw = dict(keepdims=keepdims)
    if axis is not None:
        kw.update(axis=axis, exclude=exclude)
    a = mx.nd.array(x, dtype=x.dtype)
    got = getattr(mx.nd, op)(a, **kw)
    assert got.shape == want.shape, (op, x.shape, kw, got.shape, want.shape)
    assert np.dtype(got.dtype) == x.dtype
    if x.dtype == np.int32:
        np.testing.assert_array_equal(got.asnumpy(), want)
    else:
        rtol = 1e-5 if x.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got.asnumpy(), want, rtol=rtol, atol=rtol * 10)
    # fluent spelling agrees
    np.testing.assert_array_equal(getattr(a, op)(**kw).asnumpy(), got.asnumpy())


# ---------------------------------------------------------------------------
# basic indexing


@st.composite
def index_case(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=6))
    nkey = draw(st.integers(1, len(shape)))
    # keys address the leading axes, or (after an Ellipsis) the trailing ones
    trailing = nkey < len(shape) and draw(st.booleans())
    dims = shape[len(shape) - nkey:] if trailing else shape[:nkey]
    key = []
    for n in dims:
        if draw(st.booleans()):
            key.append(draw(st.integers(-n, n - 1)))
        else:
            bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
            step = draw(st.sampled_from([None, 1, 2, 3, -1, -2, -3]))
            key.append(slice(draw(bound), draw(bound), step))
    if trailing:
        key.insert(0, Ellipsis)
    elif nkey < len(shape) and draw(st.booleans()):
        key.append(Ellipsis)
    key = tuple(key)
    if len(key) == 1 and draw(st.booleans()):
        key = key[0]
    return shape, key


@SETTINGS
@given(case=index_case(), dtype=st.sampled_from(DTYPES))
def test_basic_getitem(case, dtype):
    shape, key = case
    x = (np.arange(int(np.prod(shape))) - 7).astype(dtype).reshape(shape)
    a = mx.nd.array(x, dtype=dtype)
    want = np.asarray(x[key])
    if want.ndim == 0:
        want = want.reshape(1)  # MXNet gives (1,) where NumPy gives a scalar
    got = a[key]
    assert got.shape == want.shape, (shape, key, got.shape, want.shape)
    assert np.dtype(got.dtype) == x.dtype
    np.testing.assert_array_equal(got.asnumpy(), want)
    np.testing.assert_array_equal(a.asnumpy(), x)


@SETTINGS
@given(case=index_case(), dtype=st.sampled_from(DTYPES), as_array=st.booleans())
def test_basic_setitem(case, dtype, as_array):
    shape, key = case
    x = (np.arange(int(np.prod(shape))) - 7).astype(dtype).reshape(shape)
    a = mx.nd.array(x, dtype=dtype)
    target = np.asarray(x[key])
    # an empty target with an array value: see test_assign_empty_array_to_empty_region
    assume(not (as_array and target.size == 0))
    if as_array:
        val = (-np.arange(target.size) - 100).astype(dtype).reshape(target.shape)
        value = mx.nd.array(val.reshape(target.shape if target.ndim else (1,)), dtype=dtype)
    else:
        val = np.array(-3, dtype=dtype)
        value = -3
    want = x.copy()
    want[key] = val
    a[key] = value
    np.testing.assert_array_equal(a.asnumpy(), want)


def test_int_index_on_1d_gives_shape_1():
    a = mx.nd.array([5, 6, 7])
    assert a[0].shape == (1,)
    assert a[-1].shape == (1,)
    assert mx.nd.array(np.arange(6).reshape(2, 3))[1][2].shape == (1,)
    np.testing.assert_array_equal(a[1].asnumpy(), [6])


def test_negative_step_slice_starting_before_axis_is_empty():
    x = np.arange(6, dtype=np.float32).reshape(1, 6)
    a = mx.nd.array(x)
    for key in [(slice(None), slice(-8, None, -1)), (slice(None), slice(-7, None, -2)),
                (slice(None), slice(-8, 2, -1)), (0, slice(-8, None, -1)), slice(-5, None, -1)]:
        assert a[key].shape == x[key].shape, key


def test_negative_step_slice_assign_starting_before_axis_writes_nothing():
    x = np.arange(6, dtype=np.float32).reshape(1, 6)
    a = mx.nd.array(x)
    a[:, -8::-1] = 0
    np.testing.assert_array_equal(a.asnumpy(), x)


def test_assign_empty_array_to_empty_region():
    a = mx.nd.zeros((1, 1, 1))
    a[0, :0] = mx.nd.array(np.zeros((0, 1), np.float32))
    np.testing.assert_array_equal(a.asnumpy(), np.zeros((1, 1, 1), np.float32))
