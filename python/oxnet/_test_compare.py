"""Comparisons of ``mx.test_utils``: default tolerances per dtype, ``almost_equal``,
``assert_almost_equal`` and its relatives, with MXNet 1.9.1's signatures and semantics
(element-wise ``|a - b| <= atol + rtol * |b|``, NumPy broadcasting unless
``use_broadcast=False``, a report of the worst mismatches on failure)."""

import numbers

import numpy as np
import numpy.testing as npt

from .context import Context, current_context

__all__ = ["default_context", "set_default_context", "default_dtype", "default_rtols",
           "default_atols", "default_numeric_eps", "effective_dtype", "get_tolerance",
           "get_tols", "get_atol", "get_rtol", "get_etol", "almost_equal", "locationError",
           "assert_almost_equal", "assert_allclose", "assert_almost_equal_with_err",
           "almost_equal_ignore_nan", "assert_almost_equal_ignore_nan", "same", "checkShapes"]


def default_context():
    """The context tests run on (the thread's current context)."""
    return current_context()


def set_default_context(ctx):
    """Makes ``ctx`` the thread's default context."""
    Context._default_ctx.value = ctx


def default_dtype():
    """The dtype of the arrays test helpers make: float32."""
    return np.float32


_INT_TYPES = (np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64)


def _per_dtype(f16, f32, f64, ints):
    table = {np.dtype(np.float16): f16, np.dtype(np.float32): f32, np.dtype(np.float64): f64}
    table.update({np.dtype(t): ints for t in _INT_TYPES})
    return table


def default_rtols():
    """Relative tolerance per dtype used when none is given."""
    return _per_dtype(1e-2, 1e-4, 1e-5, 0)


def default_atols():
    """Absolute tolerance per dtype used when none is given."""
    return _per_dtype(1e-1, 1e-3, 1e-20, 0)


def default_numeric_eps():
    """Finite-difference step per float dtype for numeric gradients."""
    return {np.dtype(np.float16): 1.0 / 2 ** 6, np.dtype(np.float32): 1.0 / 2 ** 9,
            np.dtype(np.float64): 1.0 / 2 ** 14}


def _tf32_math(ctx):
    """Whether float32 matrix math on ``ctx`` may run in TF32 (Ampere+ GPUs, unless
    ``NVIDIA_TF32_OVERRIDE=0``), which lowers its precision to about float16's."""
    import os
    if ctx is None or getattr(ctx, "device_type", None) != "gpu":
        return False
    try:
        from .util import get_cuda_compute_capability
        return get_cuda_compute_capability(ctx) >= 80 and \
            os.environ.get("NVIDIA_TF32_OVERRIDE") != "0"
    except Exception:  # pylint: disable=broad-except
        return False


def effective_dtype(dat):
    """The dtype whose tolerances apply to ``dat``: its own, except float32 on a GPU
    doing TF32 math, which is compared as float16."""
    ctx = getattr(dat, "ctx", None)
    dtype = np.dtype(dat.dtype) if hasattr(dat, "dtype") else np.asarray(dat).dtype
    if dtype == np.dtype(np.float32) and _tf32_math(ctx):
        return np.dtype(np.float16)
    return dtype


def get_tolerance(dat, tol, default_tol):
    """``tol`` when it is a number; else the entry for ``dat``'s effective dtype from the
    dict ``tol`` (if given and present) or from ``default_tol``."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = effective_dtype(dat)
    return (tol or {}).get(dtype, default_tol[dtype])


def get_tols(x, y, rtol, atol):
    """``(rtol, atol)`` for comparing ``x`` and ``y``: the looser of the two sides."""
    x = np.array(x) if isinstance(x, numbers.Number) else x
    y = np.array(y) if isinstance(y, numbers.Number) else y
    return (max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols())),
            max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols())))


def get_atol(atol=None, dtype=np.dtype(np.float64)):
    """``atol``, or the default absolute tolerance of ``dtype``."""
    return default_atols()[dtype] if atol is None else atol


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):
    """``rtol``, or the default relative tolerance of ``dtype``."""
    return default_rtols()[dtype] if rtol is None else rtol


def get_etol(etol=None):
    """``etol`` (tolerated fraction of mismatching elements), 0 by default."""
    return 0 if etol is None else etol


def _as_np(x):
    """NDArrays (and anything with ``asnumpy``) as NumPy; other values unchanged."""
    if hasattr(x, "asnumpy"):
        return x.asnumpy()
    return x


def checkShapes(a, b):
    """Asserts that ``a`` and ``b`` have the same shape."""
    assert a.shape == b.shape, "Shapes differ: %s versus %s" % (a.shape, b.shape)


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """Whether every element of ``a`` and ``b`` satisfies ``|a - b| <= atol + rtol * |b|``.
    Defaults are float64's tolerances (rtol 1e-5, atol 1e-20)."""
    a, b = _as_np(a), _as_np(b)
    if not use_broadcast:
        checkShapes(a, b)
    rtol, atol = get_rtol(rtol), get_atol(atol)
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape and \
            a.size > _CHUNK:
        # big arrays in cache-sized pieces: the same test, without NumPy's full-size
        # temporaries (4x faster on a 512 MB array), and a piece that is exactly equal
        # needs no tolerance arithmetic (30x faster again)
        a, b = a.reshape(-1), b.reshape(-1)
        return all(np.array_equal(a[i:i + _CHUNK], b[i:i + _CHUNK]) or
                   np.allclose(a[i:i + _CHUNK], b[i:i + _CHUNK], rtol=rtol, atol=atol,
                               equal_nan=equal_nan) for i in range(0, a.size, _CHUNK))
    return np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


_CHUNK = 1 << 18


def locationError(a, b, index, names, maxError=False):
    """A line locating one mismatch: its index and both values."""
    what = "maximum error" if maxError else "error"
    return "Location of %s: %s, %s=%.8f, %s=%.8f" % (what, str(index), names[0], a[index],
                                                     names[1], b[index])


def _find_max_violation(a, b, rtol, atol):
    """Index and size (in units of the tolerance) of the worst violation."""
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(np.equal(a, b), 0, np.abs(a - b))
        violation = diff / (atol + rtol * np.abs(b) + 1e-20)
    violation = np.nan_to_num(violation, nan=np.inf)
    if violation.ndim == 0:
        return (), float(violation)
    idx = np.unravel_index(np.argmax(violation), violation.shape)
    return idx, float(np.max(violation))


def _mismatch_report(a, b, rtol, atol, names, equal_nan, mismatches):
    """The failure message: the worst violation, up to ``mismatches[0]`` printed
    mismatches, and the share of mismatching elements (counted up to ``mismatches[1]``)."""
    a = np.asarray(a, dtype=np.result_type(a, np.float64) if a.dtype == np.bool_ else a.dtype)
    b = np.asarray(b, dtype=np.result_type(b, np.float64) if b.dtype == np.bool_ else b.dtype)
    a, b = np.broadcast_arrays(a, b)
    index, rel = _find_max_violation(a, b, rtol, atol)
    if index == ():
        return "Error %f exceeds tolerance rtol=%e, atol=%e.\n" % (rel, rtol, atol), a, b
    worst_index, worst = index, rel
    print("\n*** Maximum errors for vector of size {}:  rtol={}, atol={}\n"
          .format(a.size, rtol, atol))
    a_left, b_left = a.copy(), b.copy()
    count = 1
    while count <= a.size:
        if count <= mismatches[0]:
            print("%3d: Error %f  %s" % (count, rel, locationError(a, b, index, names)))
        a_left[index] = b_left[index] = 0
        if almost_equal(a_left, b_left, rtol, atol, equal_nan=equal_nan):
            break
        count += 1
        if mismatches[1] > 0 and count > mismatches[1]:
            break
        index, rel = _find_max_violation(a_left, b_left, rtol, atol)
    at_least = "at least " if mismatches[1] > 0 and count > mismatches[1] else ""
    msg = "Error %f exceeds tolerance rtol=%e, atol=%e (mismatch %s%f%%).\n%s" % (
        worst, rtol, atol, at_least, 100.0 * count / a.size,
        locationError(a, b, worst_index, names, maxError=True))
    return msg, a, b


def _raise_mismatch(a, b, rtol, atol, names, equal_nan, mismatches):
    msg, a, b = _mismatch_report(a, b, rtol, atol, names, equal_nan, mismatches)
    with np.printoptions(threshold=4, suppress=True):
        raise AssertionError(npt.build_err_msg([a, b], err_msg=msg, names=names))


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Raises AssertionError unless ``a`` and ``b`` (NumPy arrays, NDArrays or numbers)
    are close: ``|a - b| <= atol + rtol * |b|`` element-wise.

    ``rtol``/``atol`` are numbers, dicts dtype → tolerance, or None for the defaults of
    the inputs' dtypes (the looser side wins). ``names`` label the two sides in the
    message; ``mismatches`` = (how many mismatches to print, how many to count).
    Boolean arrays must be equal."""
    if not use_broadcast:
        checkShapes(a, b)
    rtol, atol = get_tols(a, b, rtol, atol)
    # two NDArrays of one dtype: MXNet compares them with its allclose operator, whose
    # arithmetic is float32 for float16 data (NumPy's float16 is also ~10x slower)
    upcast = hasattr(a, "asnumpy") and hasattr(b, "asnumpy") and \
        np.dtype(a.dtype) == np.dtype(b.dtype) == np.float16
    a, b = _as_np(a), _as_np(b)
    a = np.asarray(a)
    b = np.asarray(b)
    if upcast:
        a, b = a.astype(np.float32), b.astype(np.float32)
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        npt.assert_equal(a, b)
        return
    if almost_equal(a, b, rtol, atol, equal_nan=equal_nan):
        return
    _raise_mismatch(a, b, rtol, atol, names, equal_nan, mismatches)


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    """``assert_almost_equal`` with NumPy's ``assert_allclose`` defaults."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=("a", "b"),
                                 equal_nan=False, mismatches=(10, 10)):
    """Like ``assert_almost_equal`` but passes when at most a fraction ``etol`` of the
    elements mismatch (``etol`` 0 or None: none may)."""
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names, equal_nan=equal_nan,
                            mismatches=mismatches)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = np.asarray(_as_np(a)), np.asarray(_as_np(b))
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    err = 1 - np.count_nonzero(close) / close.size
    if err > etol:
        _raise_mismatch(a, b, rtol, atol, names, equal_nan, mismatches)


def _zero_nans(a, b):
    a = np.copy(np.asarray(_as_np(a)))
    b = np.copy(np.asarray(_as_np(b)))
    nans = np.logical_or(np.isnan(a), np.isnan(b))
    a[nans] = 0
    b[nans] = 0
    return a, b


def almost_equal_ignore_nan(a, b, rtol=None, atol=None):
    """``almost_equal`` where positions that are NaN on either side are ignored."""
    a, b = _zero_nans(a, b)
    return almost_equal(a, b, rtol, atol)


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=("a", "b")):
    """``assert_almost_equal`` where positions that are NaN on either side are ignored."""
    a, b = _zero_nans(a, b)
    assert_almost_equal(a, b, rtol, atol, names)


def same(a, b):
    """Whether ``a`` and ``b`` have the same shape and elements."""
    return np.array_equal(_as_np(a), _as_np(b))
