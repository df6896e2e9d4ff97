"""Helpers for tests, after MXNet 1.9.1's ``mx.test_utils``: the same public names,
signatures and behaviour (``from mxnet.test_utils import *`` gives what MXNet's gives,
``mx`` and ``np`` included).

Comparisons live in ``_test_compare``, checks that run symbols in ``_test_checks``,
data helpers in ``_test_data``; all are re-exported here."""

# The modules MXNet's test_utils exposes by name (tests reach them through `import *`).
import bz2  # noqa: F401
import errno  # noqa: F401
import gzip  # noqa: F401
import json  # noqa: F401
import logging  # noqa: F401
import numbers  # noqa: F401
import os
import platform
import struct  # noqa: F401
import sys  # noqa: F401
import time  # noqa: F401
import traceback  # noqa: F401
import zipfile  # noqa: F401
from collections import OrderedDict  # noqa: F401
from contextlib import contextmanager

import numpy as np
import numpy.random as rnd
import numpy.testing as npt  # noqa: F401

try:
    import scipy.stats as ss
except ImportError:  # pragma: no cover - scipy is optional
    ss = None
try:
    import requests  # noqa: F401
except ImportError:  # pragma: no cover - requests is optional
    pass

import oxnet as mx

from .context import Context, current_context  # noqa: F401
from .ndarray import array  # noqa: F401
from .symbol import Symbol  # noqa: F401
from .util import (use_np, use_np_array, use_np_shape, use_np_default_dtype,  # noqa: F401
                   getenv, setenv, get_cuda_compute_capability)
from .runtime import Features  # noqa: F401
from ._test_compare import *  # noqa: F401,F403
from ._test_compare import _as_np, _find_max_violation  # noqa: F401
from ._test_checks import *  # noqa: F401,F403
from ._test_checks import _parse_location, _parse_aux_states  # noqa: F401
from ._test_data import *  # noqa: F401,F403


# ---- environment and process ------------------------------------------------------

@contextmanager
def environment(*args):
    """Sets environment variables for the body of a ``with`` block (or of a function it
    decorates) and restores them afterwards, also when the body raises.

    ``environment(name, value)`` or ``environment({name: value, ...})``; a value of None
    unsets the variable. The values are set in the process environment, which both
    Python and oxnet's core read (checked through ``mx.util.getenv``)."""
    if len(args) == 1 and isinstance(args[0], dict):
        wanted = dict(args[0])
    elif len(args) == 2:
        wanted = {args[0]: args[1]}
    else:
        raise ValueError("environment() expects one dict, or a name and a value; got %d "
                         "arguments" % len(args))
    before = {k: os.environ.get(k) for k in wanted}

    def apply(values):
        for k, v in values.items():
            setenv(k, v)
            if getenv(k) != v:
                raise RuntimeError("Could not set env var {}={} for the core".format(k, v))

    apply(wanted)
    try:
        yield
    finally:
        mx.nd.waitall()   # work queued under the changed settings finishes under them
        apply(before)


@contextmanager
def discard_stderr():
    """Sends whatever is written to file descriptor 2 (Python's or the core's) to
    /dev/null inside the block."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def retry(n):
    """Decorator: reruns a test up to ``n`` times while it fails with AssertionError (for
    checks of random behaviour); the last failure propagates."""
    if n <= 0:
        raise ValueError("retry(n) needs n > 0, got %r" % (n,))

    def decorate(f):
        import functools

        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for attempt in range(n):
                try:
                    return f(*args, **kwargs)
                except AssertionError:
                    if attempt == n - 1:
                        raise
        return wrapper
    return decorate


def assert_exception(f, exception_type, *args, **kwargs):
    """Asserts that ``f(*args, **kwargs)`` raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError("%s did not raise %s" % (getattr(f, "__name__", f),
                                                  exception_type.__name__))


def list_gpus():
    """The ids of the CUDA devices this process can use, as a range."""
    return range(mx.context.num_gpus())


def is_cd_run():
    """Whether this runs inside MXNet's continuous-delivery pipeline (``CD_JOB=1``)."""
    return os.environ.get("CD_JOB", 0) == "1"


def is_aarch64_run():
    """Whether this runs on a 64-bit ARM machine."""
    return platform.machine() == "aarch64"


def is_op_runnable():
    """Whether TVM-generated operators can run here: oxnet has none, so only when the
    build reports TVM_OP (never in this build)."""
    return Features().is_enabled("TVM_OP")


def has_tvm_ops():
    """Whether the build has TVM-generated operators."""
    return Features().is_enabled("TVM_OP")


# ---- random data --------------------------------------------------------------------

def random_arrays(*shapes):
    """Standard-normal float32 NumPy arrays of the given shapes (one array for one shape)."""
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0
              else np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes, **kwargs):
    """Uniform NumPy arrays (``low`` 0, ``high`` 1, ``dtype`` float32 by default), one
    per shape, as a list."""
    low = kwargs.pop("low", 0.0)
    high = kwargs.pop("high", 1.0)
    dtype = kwargs.pop("dtype", default_dtype())
    if kwargs:
        raise TypeError("Got unexpected argument/s : " + str(kwargs.keys()))
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population, k):
    """``k`` elements of ``population`` in random order (without replacement)."""
    assert 0 <= k <= len(population), "random_sample: k=%d for %d elements" % (k, len(population))
    pool = population[:]
    np.random.shuffle(pool)
    return pool[0:k]


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    """A random 2-D shape with dims in [1, dim0] x [1, dim1] (from 0 if allowed)."""
    low = 0 if allow_zero_size else 1
    return rnd.randint(low, dim0 + 1), rnd.randint(low, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    """A random 3-D shape with dims up to dim0, dim1, dim2."""
    low = 0 if allow_zero_size else 1
    return rnd.randint(low, dim0 + 1), rnd.randint(low, dim1 + 1), rnd.randint(low, dim2 + 1)


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A random shape of ``num_dim`` dims, each in [1, dim] (or [0, dim])."""
    low = 0 if allow_zero_size else 1
    return tuple(rnd.randint(low, dim + 1, size=num_dim))


def rand_coord_2d(x_low, x_high, y_low, y_high):
    """A random point with integer coordinates in [x_low, x_high) x [y_low, y_high)."""
    return rnd.randint(x_low, x_high), rnd.randint(y_low, y_high)


def _uniform_csr(num_rows, num_cols, density, dtype, data_init=None, shuffle_csr_indices=False):
    """A random CSRNDArray whose nonzeros are spread uniformly (values in [0, 1))."""
    import scipy.sparse as spsp
    sp = spsp.random(num_rows, num_cols, density=density, dtype=np.float64, format="csr",
                     random_state=rnd.randint(0, 2 ** 31 - 1))
    sp.sort_indices()
    data = sp.data.astype(dtype)
    if data_init is not None:
        data.fill(data_init)
    if shuffle_csr_indices:
        shuffle_csr_column_indices(sp)
    return mx.nd.sparse.csr_matrix((data, sp.indices, sp.indptr), shape=(num_rows, num_cols),
                                   dtype=dtype)


def _powerlaw_csr(num_rows, num_cols, density, dtype):
    """A random CSRNDArray with a power-law row distribution (MXNet's test generator):
    every row holds column 0, then row ``r`` fills columns ``0 .. 2**(r+1) - 1`` (a whole
    row once that reaches the width), until ``density * num_rows * num_cols`` values are
    placed. Values are uniform in [1.001, 3)."""
    budget = int(num_rows * num_cols * density)
    dense = np.zeros((num_rows, num_cols), dtype=dtype)
    for r in range(num_rows):
        if budget <= 0:
            break
        dense[r, 0] = 1 + rnd.uniform(0.001, 2)
        budget -= 1
    width = 2
    for r in range(num_rows):
        if budget <= 0:
            break
        limit = min(num_cols, width)
        take = min(limit - 1, budget)
        if take > 0:
            dense[r, 1:1 + take] = 1 + rnd.uniform(0.001, 2, size=take)
            budget -= take
        width *= 2
    return mx.nd.array(dense, dtype=dtype).tostype("csr")


def rand_sparse_ndarray(shape, stype, density=None, dtype=None, distribution=None,
                        data_init=None, rsp_indices=None, modifier_func=None,
                        shuffle_csr_indices=False, ctx=None):
    """A random sparse NDArray and its parts (MXNet's test helper).

    row_sparse: each row is present with probability ``density`` (or the rows
    ``rsp_indices``), values uniform in [0, 1) (``data_init`` fills them, ``modifier_func``
    maps them); returns ``(arr, (values, indices))``. csr: ``distribution`` 'uniform'
    (default) or 'powerlaw'; returns ``(arr, (indptr, indices, data))``."""
    density = rnd.rand() if density is None else density
    dtype = default_dtype() if dtype is None else dtype
    distribution = "uniform" if distribution is None else distribution
    ctx = current_context() if ctx is None else ctx
    if stype == "row_sparse":
        if distribution != "uniform":
            raise ValueError("row_sparse arrays support the uniform distribution only")
        if rsp_indices is not None:
            indices = np.asarray(rsp_indices)
            assert len(indices) <= shape[0]
        else:
            indices = np.argwhere(rnd.rand(shape[0]) < density).flatten()
        if indices.shape[0] == 0:
            result = mx.nd.zeros(shape, stype="row_sparse", dtype=dtype, ctx=ctx)
            return result, (np.array([], dtype=dtype), np.array([]))
        val = rnd.rand(indices.shape[0], *shape[1:]).astype(dtype)
        if data_init is not None:
            val.fill(data_init)
        if modifier_func is not None:
            val = assign_each(val, modifier_func)
        arr = mx.nd.sparse.row_sparse_array((val, indices), shape=shape, dtype=dtype, ctx=ctx)
        return arr, (val, indices)
    if stype == "csr":
        assert len(shape) == 2
        if distribution == "uniform":
            csr = _uniform_csr(shape[0], shape[1], density, dtype, data_init=data_init,
                               shuffle_csr_indices=shuffle_csr_indices)
        elif distribution == "powerlaw":
            csr = _powerlaw_csr(shape[0], shape[1], density, dtype)
        else:
            raise ValueError("unknown distribution %r" % (distribution,))
        # As in MXNet, modifier_func applies to row_sparse values only.
        csr = csr.as_in_context(ctx)
        return csr, (csr.indptr, csr.indices, csr.data)
    raise ValueError("unknown storage type %r" % (stype,))


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A random NDArray of ``shape``: standard-normal values for dense storage, cast to
    ``dtype`` (float32 by default), on ``ctx``; for 'csr'/'row_sparse', see
    ``rand_sparse_ndarray``."""
    if stype == "default":
        dtype = default_dtype() if dtype is None else dtype
        return mx.nd.array(random_arrays(shape), dtype=dtype, ctx=ctx)
    return rand_sparse_ndarray(shape, stype, density=density, dtype=dtype,
                               modifier_func=modifier_func, distribution=distribution,
                               shuffle_csr_indices=shuffle_csr_indices, ctx=ctx)[0]


def create_sparse_array(shape, stype, data_init=None, rsp_indices=None, dtype=None,
                        modifier_func=None, density=.5, shuffle_csr_indices=False):
    """A random sparse array (see ``rand_sparse_ndarray``)."""
    if stype == "row_sparse":
        arr, _ = rand_sparse_ndarray(shape, stype, density=density, data_init=data_init,
                                     rsp_indices=rsp_indices, dtype=dtype, modifier_func=modifier_func)
    elif stype == "csr":
        arr, _ = rand_sparse_ndarray(shape, stype, density=density, data_init=data_init,
                                     dtype=dtype, modifier_func=modifier_func,
                                     shuffle_csr_indices=shuffle_csr_indices)
    else:
        raise ValueError("unknown storage type %r" % (stype,))
    return arr


def create_sparse_array_zd(shape, stype, density, data_init=None, rsp_indices=None,
                           dtype=None, modifier_func=None, shuffle_csr_indices=False):
    """Like ``create_sparse_array``; a row_sparse array has only the rows ``rsp_indices``
    (none when not given)."""
    if stype == "row_sparse":
        density = 0.0
        if rsp_indices is not None:
            assert len(rsp_indices) <= shape[0]
    return create_sparse_array(shape, stype, data_init=data_init, rsp_indices=rsp_indices,
                               dtype=dtype, modifier_func=modifier_func, density=density,
                               shuffle_csr_indices=shuffle_csr_indices)


def shuffle_csr_column_indices(csr):
    """Shuffles the column indices inside each row of ``csr`` (anything with ``indptr``
    and ``indices``, such as a SciPy CSR matrix) in place: valid CSR does not need
    sorted indices, and this exercises code paths that must not assume it."""
    indptr = np.asarray(_as_np(csr.indptr))
    for row in range(len(indptr) - 1):
        start, end = int(indptr[row]), int(indptr[row + 1])
        part = np.array(_as_np(csr.indices[start:end]))
        np.random.shuffle(part)
        csr.indices[start:end] = part


def create_vector(size, dtype=np.int64):
    """``arange(size)`` as an NDArray of ``dtype`` (for large-tensor tests)."""
    return mx.nd.arange(0, size, dtype=dtype)


def create_2d_tensor(rows, columns, dtype=np.int64):
    """A (rows, columns) NDArray whose row i holds the value i."""
    a = mx.nd.arange(0, rows, dtype=dtype).reshape(rows, 1)
    return mx.nd.broadcast_to(a, shape=(a.shape[0], columns))


def assign_each(the_input, function):
    """``function`` applied to each element of the NumPy array ``the_input`` (None: a
    copy)."""
    if function is None:
        return np.array(the_input)
    return np.vectorize(function)(the_input)


def assign_each2(input1, input2, function):
    """``function`` applied element-wise to two same-shape NumPy arrays (None: a copy of
    the first)."""
    if function is None:
        return np.array(input1)
    return np.vectorize(function)(input1, input2)


def same_array(array1, array2):
    """Whether two NDArrays share their memory (a change to one shows in the other).
    Both are left as they were."""
    array1[:] += 1
    if not same(array1.asnumpy(), array2.asnumpy()):
        array1[:] -= 1
        return False
    array1[:] -= 1
    return same(array1.asnumpy(), array2.asnumpy())


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """Reduces the NumPy array ``dat`` with ``numpy_reduce_func`` over ``axis`` (an int,
    a tuple/list, or None for all), one axis at a time from the last, keeping reduced
    axes as size 1 when ``keepdims``."""
    if isinstance(axis, int):
        axis = [axis]
    else:
        axis = list(axis) if axis is not None else range(len(dat.shape))
    ret = dat
    for i in reversed(sorted(axis)):
        ret = numpy_reduce_func(ret, axis=i)
    if keepdims:
        shape = list(dat.shape)
        for i in axis:
            shape[i] = 1
        ret = ret.reshape(tuple(shape))
    return ret


def collapse_sum_like(a, shape):
    """Sums the NumPy array ``a`` down to ``shape`` (the reverse of broadcasting ``shape``
    to ``a.shape``): what a broadcast input's gradient is."""
    assert len(a.shape) >= len(shape), "collapse_sum_like: %s is not broadcastable to %s" \
        % (shape, a.shape)
    if np.prod(shape) == 0 or a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = len(a.shape) - len(shape)
    axes = list(range(lead))
    for i, (da, ds) in enumerate(zip(a.shape[lead:], shape)):
        if da != ds:
            assert ds == 1, "collapse_sum_like: dim %d of %s is not 1" % (i, shape)
            axes.append(lead + i)
    return np.sum(a, axis=tuple(axes)).reshape(shape)


def get_identity_mat(size):
    """The ``size`` x ``size`` identity as a float NumPy array."""
    return np.eye(size)


def get_identity_mat_batch(size):
    """A batch of two ``size`` x ``size`` identities."""
    return np.array([np.eye(size), np.eye(size)])


# ---- random matrices with known eigenvalues ---------------------------------------

def new_orthonormal_matrix_2d(n):
    """A random ``n`` x ``n`` orthonormal matrix (from a QR decomposition)."""
    q, _ = np.linalg.qr(np.random.uniform(-10, 10, (n, n)))
    return q


def new_matrix_with_real_eigvals_2d(n):
    """A random ``n`` x ``n`` matrix with real eigenvalues: ``P D P^-1`` with a random
    orthonormal P and real diagonal D."""
    shape = (n, n)
    q = new_orthonormal_matrix_2d(n)
    d = np.diag(np.random.uniform(-1.0, 1.0, n)) if n else np.zeros(shape)
    return q @ d @ q.T


def new_matrix_with_real_eigvals_nd(shape):
    """A batch (``shape[:-2]``) of square matrices with real eigenvalues."""
    n = int(np.prod(shape[:-2]))
    mats = [new_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(n)]
    return np.array(mats).reshape(shape)


def new_sym_matrix_with_real_eigvals_2d(n):
    """A random symmetric ``n`` x ``n`` matrix (real eigenvalues)."""
    a = new_matrix_with_real_eigvals_2d(n)
    return (a + a.T) / 2


def new_sym_matrix_with_real_eigvals_nd(shape):
    """A batch (``shape[:-2]``) of random symmetric matrices."""
    n = int(np.prod(shape[:-2]))
    mats = [new_sym_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(n)]
    return np.array(mats).reshape(shape)


# ---- statistical checks of random generators --------------------------------------

def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """``nbuckets`` equal-probability buckets ``[(ppf(i/n), ppf((i+1)/n)), ...]`` of a
    distribution given by its percent-point function, and their probabilities."""
    edges = [ppf(i / float(nbuckets)) for i in range(nbuckets + 1)]
    buckets = [(edges[i], edges[i + 1]) for i in range(nbuckets)]
    probs = [1.0 / nbuckets for _ in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu, sigma, nsamples=1000000):
    """Whether the mean of ``generator(nsamples)`` lies within 3 standard errors of ``mu``."""
    samples = np.array(generator(nsamples))
    bound = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - bound < samples.mean() < mu + bound)


def var_check(generator, sigma, nsamples=1000000):
    """Whether the sample variance of ``generator(nsamples)`` lies within 3 standard
    errors of ``sigma**2`` (normal approximation)."""
    samples = np.array(generator(nsamples))
    var = samples.var(ddof=1)
    bound = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - bound < var < sigma ** 2 + bound)


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Pearson's chi-square test of ``generator(nsamples)`` against bucket
    probabilities. ``buckets`` are (low, high) pairs for a continuous distribution
    (ordered, disjoint) or the values of a discrete one. Returns
    ``(p_value, observed_counts, expected_counts)``."""
    if ss is None:
        raise ImportError("chi_square_check needs scipy")
    samples = np.asarray(generator(nsamples))
    assert len(probs) == len(buckets), "one probability per bucket"
    expected = (nsamples * np.array(probs, dtype=np.float32)).astype(np.int32)
    observed = np.zeros(len(buckets), dtype=np.int64)
    if isinstance(buckets[0], (list, tuple)):
        edges = np.zeros(2 * len(buckets), dtype=np.float32)
        for i, (lo, hi) in enumerate(buckets):
            assert lo <= hi, "bucket %d: low %r > high %r" % (i, lo, hi)
            if i + 1 < len(buckets):
                assert hi <= buckets[i + 1][0], "buckets %d and %d overlap" % (i, i + 1)
            edges[2 * i], edges[2 * i + 1] = lo, hi
        ids = np.searchsorted(edges, samples, side="right") // 2
        for i in range(len(buckets)):
            observed[i] = (ids == i).sum()
    else:
        for i, value in enumerate(buckets):
            observed[i] = (samples == value).sum()
    _, p = ss.chisquare(f_obs=observed, f_exp=expected)
    return p, observed, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5,
                     success_rate=0.2, alpha=0.05):
    """Runs :func:`chi_square_check` ``nrepeat`` times; raises AssertionError unless at
    least ``nrepeat * success_rate`` runs have p > ``alpha``. Returns the p-values."""
    results = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    pvals = [r[0] for r in results]
    if (np.array(pvals) > alpha).sum() < nrepeat * success_rate:
        raise AssertionError("Generator test fails, Chi-square p=%s, obs_freq=%s, "
                             "expected_freq=%s.\nbuckets=%s, probs=%s"
                             % (str(pvals), str([r[1] for r in results]),
                                str([r[2] for r in results]), str(buckets), str(probs)))
    return pvals
