"""Reduction operators (sum, mean, max, min, prod, nansum, nanprod, norm, argmax, argmin,
argmax_channel) and the softmax family through the Python API, checked against NumPy
with MXNet 1.9.1's conventions (confirmed with the MXNet oracle):

* reducing every axis without keepdims gives shape ``(1,)``, not a scalar;
* integer ``mean`` truncates toward zero and keeps the integer dtype;
* ``argmax``/``argmin`` return the indices in the input's dtype (float32 for float32).
"""

import numpy as np
import pytest

import oxnet as mx

RED = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
       "nansum": np.nansum, "nanprod": np.nanprod}


def _np_axes(ndim, axis, exclude):
    if axis is None:
        axes = tuple(range(ndim))
    else:
        axes = tuple(a % ndim for a in ((axis,) if isinstance(axis, int) else axis))
    if exclude:
        axes = tuple(a for a in range(ndim) if a not in axes)
    return axes


def np_reduce(op, x, axis=None, keepdims=False, exclude=False):
    """NumPy version of MXNet's legacy reduction (shape (1,) for a full reduction)."""
    axes = _np_axes(x.ndim, axis, exclude)
    if np.issubdtype(x.dtype, np.integer) and op == "mean":
        s = np.sum(x.astype(np.int64), axis=axes, keepdims=keepdims)
        n = int(np.prod([x.shape[a] for a in axes]))
        want = np.trunc(s / n).astype(x.dtype)
    elif np.issubdtype(x.dtype, np.integer):
        want = RED[op](x, axis=axes, keepdims=keepdims).astype(x.dtype)
    else:
        want = RED[op](x.astype(np.float64), axis=axes, keepdims=keepdims).astype(x.dtype)
    want = np.asarray(want)
    if want.ndim == 0:
        want = want.reshape(1)
    return want


def _data(shape, dtype, seed=0):
    rs = np.random.RandomState(seed)
    if np.issubdtype(np.dtype(dtype), np.integer):
        lo = 0 if np.dtype(dtype).kind == "u" else -4
        return rs.randint(lo, 5, size=shape).astype(dtype)
    return (rs.rand(*shape) * 2 - 0.5).astype(dtype)


def _check(got, want, rtol=1e-5, atol=1e-6):
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.dtype(got.dtype) == want.dtype, (got.dtype, want.dtype)
    if np.issubdtype(want.dtype, np.integer):
        np.testing.assert_array_equal(got.asnumpy(), want)
    else:
        np.testing.assert_allclose(got.asnumpy(), want, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------
# sum / mean / max / min / prod / nansum / nanprod


@pytest.mark.parametrize("op", list(RED))
@pytest.mark.parametrize("axis, exclude", [
    (None, False), (0, False), (1, False), (-1, False), ((0, 2), False), ((1, 2), False),
    ((0, 1, 2), False), (0, True), (1, True), (-1, True), ((0, 2), True), ((1, 2), True),
    ((0, 1, 2), True), ((), True),
])  # axis=() without exclude: test_axis_empty_tuple_reduces_all
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_axes(op, axis, keepdims, exclude):
    x = _data((2, 3, 4), "float32")
    kw = dict(keepdims=keepdims, exclude=exclude)
    if axis is not None:
        kw["axis"] = axis
    want = np_reduce(op, x, axis, keepdims, exclude)
    _check(getattr(mx.nd, op)(mx.nd.array(x), **kw), want)


@pytest.mark.parametrize("op", list(RED))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "float16", "uint8", "int8"])
def test_reduce_dtypes(op, dtype):
    x = _data((3, 5), dtype, seed=1)
    if dtype in ("uint8", "int8") and op in ("prod", "nanprod"):
        x = np.clip(x, -2, 2).astype(dtype)
    a = mx.nd.array(x, dtype=dtype)
    tol = dict(rtol=2e-3, atol=2e-3) if dtype == "float16" else {}
    for axis in (0, 1, None):
        kw = {} if axis is None else dict(axis=axis)
        _check(getattr(mx.nd, op)(a, **kw), np_reduce(op, x, axis), **tol)


def test_full_reduction_gives_shape_1():
    a = mx.nd.array(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    for op in RED:
        assert getattr(mx.nd, op)(a).shape == (1,)
        assert getattr(mx.nd, op)(a, keepdims=True).shape == (1, 1, 1)
    assert mx.nd.sum(a).asscalar() == 276


def test_axis_empty_tuple_reduces_all():
    # MXNet 1.9.1: axis=() reduces every axis, with or without exclude
    x = _data((2, 3), "float32")
    for op in ("sum", "max", "prod"):
        want = np_reduce(op, x)
        _check(getattr(mx.nd, op)(mx.nd.array(x), axis=()), want)
        _check(getattr(mx.nd, op)(mx.nd.array(x), axis=(), exclude=True), want)


def test_integer_mean_truncates_toward_zero():
    a = mx.nd.array([[1, 2], [-1, -2], [3, 6]], dtype="int32")
    _check(mx.nd.mean(a, axis=1), np.array([1, -1, 4], np.int32))


def test_integer_sum_wraps_in_its_dtype():
    _check(mx.nd.sum(mx.nd.array([[100, 100]], dtype="int8"), axis=1), np.array([-56], np.int8))
    _check(mx.nd.sum(mx.nd.array([[200, 100]], dtype="uint8"), axis=1), np.array([44], np.uint8))


def test_nan_handling():
    x = np.array([[1, np.nan], [2, 3]], np.float32)
    a = mx.nd.array(x)
    _check(mx.nd.nansum(a, axis=1), np.array([1, 5], np.float32))
    _check(mx.nd.nanprod(a, axis=1), np.array([1, 6], np.float32))
    assert np.isnan(mx.nd.sum(a, axis=1).asnumpy()[0])
    assert np.isnan(mx.nd.max(a, axis=1).asnumpy()[0])
    _check(mx.nd.nansum(mx.nd.array([[np.nan, np.nan]]), axis=1), np.array([0], np.float32))
    _check(mx.nd.nanprod(mx.nd.array([[np.nan, np.nan]]), axis=1), np.array([1], np.float32))


def test_infinities():
    assert mx.nd.max(mx.nd.array([-np.inf, -np.inf])).asscalar() == -np.inf
    assert mx.nd.min(mx.nd.array([np.inf, 1])).asscalar() == 1
    assert np.isnan(mx.nd.sum(mx.nd.array([np.inf, -np.inf])).asscalar())


@pytest.mark.parametrize("alias, op", [("sum_axis", "sum"), ("max_axis", "max"), ("min_axis", "min")])
def test_reduce_aliases(alias, op):
    x = _data((3, 4), "float32")
    _check(getattr(mx.nd, alias)(mx.nd.array(x), axis=1), np_reduce(op, x, 1))


@pytest.mark.parametrize("shape, axis", [
    ((400, 300), 0), ((400, 300), 1), ((400, 300), None), ((30, 40, 70), 1), ((30, 40, 70), (0, 2)),
    ((70, 1000), 1), ((2, 70000), 1), ((70000, 2), 0),
])
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
def test_reduce_large_parallel_paths(shape, axis, op):
    x = _data(shape, "float64", seed=2)
    kw = {} if axis is None else dict(axis=axis)
    _check(getattr(mx.nd, op)(mx.nd.array(x, dtype="float64"), **kw), np_reduce(op, x, axis),
           rtol=1e-10, atol=1e-9)
    x32 = x.astype(np.float32)
    _check(getattr(mx.nd, op)(mx.nd.array(x32), **kw), np_reduce(op, x32, axis), rtol=1e-4, atol=1e-4)


def test_reduce_on_views():
    x = _data((4, 3, 5), "float32")
    a = mx.nd.array(x)
    _check(mx.nd.sum(a[1:3], axis=2), np_reduce("sum", x[1:3], 2))
    _check(mx.nd.max(a[2], axis=0), np_reduce("max", x[2], 0))
    _check(mx.nd.mean(a.reshape((12, 5)), axis=0), np_reduce("mean", x.reshape(12, 5), 0))


def test_reduce_out_argument():
    x = _data((3, 4), "float32")
    out = mx.nd.zeros((4,))
    mx.nd.sum(mx.nd.array(x), axis=0, out=out)
    _check(out, np_reduce("sum", x, 0))


def test_fluent_reductions():
    x = _data((2, 3, 4), "float32")
    a = mx.nd.array(x)
    _check(a.sum(axis=1), np_reduce("sum", x, 1))
    _check(a.sum(1), np_reduce("sum", x, 1))
    _check(a.mean(axis=(0, 2), keepdims=True), np_reduce("mean", x, (0, 2), True))
    _check(a.max(), np_reduce("max", x))
    _check(a.min(axis=-1), np_reduce("min", x, -1))
    _check(a.prod(axis=0), np_reduce("prod", x, 0))
    _check(a.nansum(axis=2), np_reduce("nansum", x, 2))
    _check(a.nanprod(axis=2), np_reduce("nanprod", x, 2))
    _check(a.norm(), np.asarray([np.sqrt((x.astype(np.float64) ** 2).sum())], np.float32))
    _check(a.argmax(axis=2), np.argmax(x, 2).astype(np.float32))
    _check(a.argmin(axis=1), np.argmin(x, 1).astype(np.float32))


# ---------------------------------------------------------------------------
# norm


def np_norm(x, ord=2, axis=None, keepdims=False):
    axes = tuple(range(x.ndim)) if axis is None else \
        tuple(a % x.ndim for a in ((axis,) if isinstance(axis, int) else axis))
    x64 = x.astype(np.float64)
    if ord == 1:
        r = np.abs(x64).sum(axis=axes, keepdims=keepdims)
    else:
        r = np.sqrt((x64 * x64).sum(axis=axes, keepdims=keepdims))
    r = np.asarray(r)
    return r.reshape(1) if r.ndim == 0 else r


@pytest.mark.parametrize("ord", [1, 2])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1), (1, 2), (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_norm(ord, axis, keepdims, dtype):
    x = _data((2, 3, 4), dtype) - 0.5
    kw = dict(ord=ord, keepdims=keepdims)
    if axis is not None:
        kw["axis"] = axis
    want = np_norm(x, ord, axis, keepdims).astype(dtype)
    _check(mx.nd.norm(mx.nd.array(x, dtype=dtype), **kw), want)


def test_norm_defaults_and_out_dtype():
    x = np.array([[3, 4], [-6, 8]], np.float32)
    a = mx.nd.array(x)
    _check(mx.nd.norm(a), np.array([np.sqrt(125)], np.float32))
    _check(mx.nd.norm(a, axis=1), np.array([5, 10], np.float32))
    _check(mx.nd.norm(a, ord=1, axis=0), np.array([9, 12], np.float32))
    _check(mx.nd.norm(a, axis=1, out_dtype="float64"), np.array([5, 10], np.float64))
    h = mx.nd.array(x, dtype="float16")
    _check(mx.nd.norm(h, axis=1), np.array([5, 10], np.float16))


def test_norm_large():
    x = _data((300, 400), "float64", seed=5)
    a = mx.nd.array(x, dtype="float64")
    _check(mx.nd.norm(a), np_norm(x), rtol=1e-10)
    _check(mx.nd.norm(a, ord=1, axis=0), np_norm(x, 1, 0), rtol=1e-10)


# ---------------------------------------------------------------------------
# argmax / argmin / argmax_channel


@pytest.mark.parametrize("fn, npfn", [("argmax", np.argmax), ("argmin", np.argmin)])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, None])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "float16"])
def test_argmax_argmin(fn, npfn, axis, keepdims, dtype):
    # distinct values so there are no ties
    x = np.random.RandomState(7).permutation(24).reshape(2, 3, 4).astype(dtype)
    kw = dict(keepdims=keepdims)
    if axis is not None:
        kw["axis"] = axis
    got = getattr(mx.nd, fn)(mx.nd.array(x, dtype=dtype), **kw)
    if axis is None:
        want = np.asarray(npfn(x)).reshape((1, 1, 1) if keepdims else (1,))
    else:
        want = npfn(x, axis=axis)
        if keepdims:
            want = np.expand_dims(want, axis)
    _check(got, want.astype(dtype))


def test_argmax_ties_pick_first_index():
    a = mx.nd.array([[1, 1, 0], [0, 2, 2]])
    _check(mx.nd.argmax(a, axis=1), np.array([0, 1], np.float32))
    _check(mx.nd.argmin(mx.nd.array([[1, 0, 0]]), axis=1), np.array([1], np.float32))


def test_argmax_large():
    x = np.random.RandomState(8).rand(300, 401).astype(np.float32)
    a = mx.nd.array(x)
    _check(mx.nd.argmax(a, axis=1), np.argmax(x, 1).astype(np.float32))
    _check(mx.nd.argmin(a, axis=0), np.argmin(x, 0).astype(np.float32))
    _check(mx.nd.argmax(a), np.array([np.argmax(x)], np.float32))


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4), (2, 3, 4, 5)])
def test_argmax_channel(shape):
    # MXNet 1.9.1 reduces axis 1 (the channel axis), whatever the rank
    x = np.random.RandomState(9).permutation(int(np.prod(shape))).reshape(shape).astype(np.float32)
    want = np.argmax(x, axis=1).astype(np.float32)
    _check(mx.nd.argmax_channel(mx.nd.array(x)), want)
    _check(mx.nd.array(x).argmax_channel(), want)


# ---------------------------------------------------------------------------
# softmax / log_softmax / softmin


def np_softmax(x, axis=-1, t=1.0):
    z = x.astype(np.float64) / t
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def np_log_softmax(x, axis=-1, t=1.0):
    z = x.astype(np.float64) / t
    z = z - z.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("axis", [-1, 0, 1, 2, -2])
@pytest.mark.parametrize("temperature", [None, 0.5, 3.0])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_softmax_family(axis, temperature, dtype):
    x = (_data((2, 3, 4), "float64") * 6).astype(dtype)
    a = mx.nd.array(x, dtype=dtype)
    kw = dict(axis=axis)
    if temperature is not None:
        kw["temperature"] = temperature
    t = temperature or 1.0
    tol = dict(rtol=3e-3, atol=3e-3) if dtype == "float16" else dict(rtol=1e-5, atol=1e-6)
    _check(mx.nd.softmax(a, **kw), np_softmax(x, axis, t).astype(dtype), **tol)
    _check(mx.nd.log_softmax(a, **kw), np_log_softmax(x, axis, t).astype(dtype), **tol)
    _check(mx.nd.softmin(a, **kw), np_softmax(-x.astype(np.float64), axis, t).astype(dtype), **tol)


def test_softmax_default_axis_and_fluent():
    x = _data((3, 5), "float32")
    a = mx.nd.array(x)
    _check(mx.nd.softmax(a), np_softmax(x).astype(np.float32))
    _check(a.softmax(), np_softmax(x).astype(np.float32))
    _check(a.log_softmax(axis=0), np_log_softmax(x, 0).astype(np.float32))
    _check(a.softmin(), np_softmax(-x).astype(np.float32))


@pytest.mark.parametrize("in_dtype, out_dtype", [
    ("float32", "float64"), ("float64", "float32"), ("float16", "float32"), ("float32", "float32"),
])
def test_softmax_dtype_param(in_dtype, out_dtype):
    x = (_data((2, 5), "float64") * 4).astype(in_dtype)
    a = mx.nd.array(x, dtype=in_dtype)
    tol = dict(rtol=2e-3, atol=2e-3) if "float16" in (in_dtype,) else {}
    _check(mx.nd.softmax(a, dtype=out_dtype), np_softmax(x).astype(out_dtype), **tol)
    _check(mx.nd.log_softmax(a, dtype=out_dtype), np_log_softmax(x).astype(out_dtype), **tol)


def test_softmax_is_stable_for_large_inputs():
    a = mx.nd.array([1000, 1000, -1000])
    _check(mx.nd.softmax(a), np.array([0.5, 0.5, 0], np.float32))
    _check(mx.nd.log_softmax(a), np.array([-np.log(2), -np.log(2), -2000 - np.log(2)], np.float32))


@pytest.mark.parametrize("shape, axis", [
    ((300, 300), -1), ((300, 300), 0), ((20, 300, 30), 1), ((70000,), 0),
])
def test_softmax_large_parallel_paths(shape, axis):
    x = _data(shape, "float32", seed=3) * 5
    a = mx.nd.array(x)
    _check(mx.nd.softmax(a, axis=axis), np_softmax(x, axis).astype(np.float32), rtol=1e-4, atol=1e-7)
    _check(mx.nd.log_softmax(a, axis=axis), np_log_softmax(x, axis).astype(np.float32), rtol=1e-4, atol=1e-5)


def test_softmax_use_length():
    x = np.array([[1, 5, 2], [7, 0, 7]], np.float32)
    length = mx.nd.array([2, 3], dtype="int32")
    got = mx.nd.softmax(mx.nd.array(x), length=length, use_length=True)
    want = np.zeros_like(x, dtype=np.float64)
    want[0, :2] = np_softmax(x[0, :2])
    want[1] = np_softmax(x[1])
    _check(got, want.astype(np.float32))


# ---------------------------------------------------------------------------
# dot / batch_dot (contractions)


def np_dot(a, b, ta=False, tb=False):
    """MXNet's dot: contracts the last axis of lhs (the first with transpose_a) with the
    first axis of rhs (the last with transpose_b), the other axes keeping their order
    (confirmed with the MXNet oracle); 1-D . 1-D gives shape (1,)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    la = 0 if ta else a64.ndim - 1
    rb = b64.ndim - 1 if tb else 0
    r = np.tensordot(a64, b64, axes=([la], [rb]))
    r = np.asarray(r)
    return r.reshape(1) if r.ndim == 0 else r


@pytest.mark.parametrize("lshape, rshape, ta, tb", [
    ((2, 3), (3, 4), False, False), ((3, 2), (3, 4), True, False), ((2, 3), (4, 3), False, True),
    ((3, 2), (4, 3), True, True), ((3,), (3,), False, False), ((3,), (3, 4), False, False),
    ((2, 3), (3,), False, False), ((2, 3), (2,), True, False), ((2, 3, 4), (4, 5), False, False),
    ((2, 3, 4), (4, 5, 2), False, False), ((4, 3, 2), (4, 5), True, False),
    ((2, 3, 4), (5, 2, 4), False, True), ((1, 1), (1, 1), False, False),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dot(lshape, rshape, ta, tb, dtype):
    a, b = _data(lshape, dtype), _data(rshape, dtype, seed=1)
    got = mx.nd.dot(mx.nd.array(a, dtype=dtype), mx.nd.array(b, dtype=dtype), transpose_a=ta, transpose_b=tb)
    _check(got, np_dot(a, b, ta, tb).astype(dtype), rtol=1e-5 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("m, k, n, ta, tb", [
    (129, 257, 65, False, False), (64, 300, 33, True, False), (200, 31, 150, False, True),
    (97, 130, 211, True, True), (1, 513, 300, False, False), (300, 1, 300, False, False),
])
def test_dot_large_gemm_paths(m, k, n, ta, tb):
    a = _data((k, m) if ta else (m, k), "float32", seed=m)
    b = _data((n, k) if tb else (k, n), "float32", seed=n)
    got = mx.nd.dot(mx.nd.array(a), mx.nd.array(b), transpose_a=ta, transpose_b=tb)
    _check(got, np_dot(a, b, ta, tb).astype(np.float32), rtol=1e-4, atol=1e-4)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    got64 = mx.nd.dot(mx.nd.array(a64, dtype="float64"), mx.nd.array(b64, dtype="float64"),
                      transpose_a=ta, transpose_b=tb)
    _check(got64, np_dot(a64, b64, ta, tb), rtol=1e-11, atol=1e-11)


def test_dot_float16():
    a, b = _data((5, 7), "float16"), _data((7, 3), "float16", seed=1)
    got = mx.nd.dot(mx.nd.array(a, dtype="float16"), mx.nd.array(b, dtype="float16"))
    _check(got, np_dot(a, b).astype(np.float16), rtol=5e-3, atol=5e-3)


@pytest.mark.parametrize("lshape, rshape, ta, tb", [
    ((2, 3, 4), (2, 4, 5), False, False), ((2, 4, 3), (2, 4, 5), True, False),
    ((2, 3, 4), (2, 5, 4), False, True), ((2, 4, 3), (2, 5, 4), True, True),
    ((2, 2, 3, 4), (2, 2, 4, 5), False, False), ((1, 1, 1), (1, 1, 1), False, False),
    ((7, 33, 65), (7, 65, 17), False, False), ((3, 70, 40), (3, 50, 70), True, True),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_dot(lshape, rshape, ta, tb, dtype):
    a, b = _data(lshape, dtype), _data(rshape, dtype, seed=1)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if ta:
        a64 = np.swapaxes(a64, -1, -2)
    if tb:
        b64 = np.swapaxes(b64, -1, -2)
    want = np.matmul(a64, b64).astype(dtype)
    got = mx.nd.batch_dot(mx.nd.array(a, dtype=dtype), mx.nd.array(b, dtype=dtype),
                          transpose_a=ta, transpose_b=tb)
    _check(got, want, rtol=1e-4 if dtype == "float32" else 1e-11, atol=1e-4 if dtype == "float32" else 1e-11)


def test_dot_on_views_and_out():
    x = _data((4, 6), "float32")
    a = mx.nd.array(x)
    _check(mx.nd.dot(a[1:3], a.reshape((6, 4))), np_dot(x[1:3], x.reshape(6, 4)).astype(np.float32))
    out = mx.nd.zeros((4, 4))
    mx.nd.dot(a, a, transpose_b=True, out=out)
    _check(out, np_dot(x, x, False, True).astype(np.float32))


def test_dot_accepts_forward_stype():
    a, b = _data((2, 3), "float32"), _data((3, 4), "float32")
    got = mx.nd.dot(mx.nd.array(a), mx.nd.array(b), forward_stype="default")
    _check(got, np_dot(a, b).astype(np.float32))
    # a sparse forward_stype gives the product in that storage type
    got = mx.nd.dot(mx.nd.array(a), mx.nd.array(b), forward_stype="csr")
    assert got.stype == "csr"
    _check(got.tostype("default"), np_dot(a, b).astype(np.float32))


def test_softmax_use_length_axis_grad_and_errors():
    # values from MXNet 1.9.1
    x3 = mx.nd.array(np.arange(12).reshape(2, 3, 2))
    L3 = mx.nd.array([[1, 2], [3, 0]], dtype="int32")
    got = mx.nd.softmax(x3, length=L3, use_length=True, axis=1)
    want = [[[1.0, 0.11920292], [0.0, 0.880797], [0.0, 0.0]],
            [[0.01587624, 0.0], [0.11731043, 0.0], [0.86681336, 0.0]]]
    _check(got, np.array(want, np.float32), rtol=1e-5, atol=1e-7)
    x = mx.nd.array([[1, 5, 2], [7, 0, 7]])
    L = mx.nd.array([2, 3], dtype="int32")
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.softmax(x, length=L, use_length=True)
    y.backward(mx.nd.array([[1, 2, 3], [4, 5, 6]]))
    _check(x.grad, np.array([[-0.0176627, 0.01766279, 0.0], [-0.49977216, 0.0, 0.49977216]],
                            np.float32), rtol=1e-4, atol=1e-6)
    # as in MXNet, a float length fails when the op runs, not in type inference
    with pytest.raises(mx.base.MXNetError, match="softmax.*only support integer types, not float32"):
        mx.nd.softmax(x, length=mx.nd.array([2, 3]), use_length=True).asnumpy()
    with pytest.raises(mx.base.MXNetError, match=r"softmax.*length has shape \(3,\), expected \(2,\)"):
        mx.nd.softmax(x, length=mx.nd.array([2, 3, 1], dtype="int32"), use_length=True)
    with pytest.raises(mx.base.MXNetError, match="log_softmax.*only supported by softmax"):
        mx.nd.log_softmax(x, use_length=True)
