"""FullyConnected, Convolution, Deconvolution and Pooling (and their ``_backward_*``
ops) through the Python API.

Forward results are checked against NumPy reference implementations written here,
over many configurations; the backward ops against finite differences of those
references in float64; a few configurations against values recorded with the MXNet
1.9.1 oracle (tests/fixtures/make_nn_conv_fixtures.py); bad inputs must raise
MXNetError naming the op and leave the inputs intact.
"""

import itertools
import json
import os

import numpy as np
import pytest

import oxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
nd = mx.nd


# ---- NumPy references ------------------------------------------------------------------

def np_fc(x, w, b=None, flatten=True):
    if flatten:
        x2 = x.reshape(x.shape[0], -1)
        y = x2 @ w.T
    else:
        y = x @ w.T
    if b is not None:
        y = y + b
    return y


def _tup(v, nd_, default):
    return tuple(v) if v else (default,) * nd_


def np_conv(x, w, b=None, stride=(), pad=(), dilate=(), groups=1):
    """Direct N-d convolution (cross-correlation) with zero padding."""
    nsp = x.ndim - 2
    k = w.shape[2:]
    s, p, d = _tup(stride, nsp, 1), _tup(pad, nsp, 0), _tup(dilate, nsp, 1)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pi, pi) for pi in p])
    out_sp = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nsp)]
    n, c = x.shape[:2]
    f = w.shape[0]
    cg, fg = c // groups, f // groups
    y = np.zeros((n, f) + tuple(out_sp), dtype=np.float64)
    for off in itertools.product(*[range(ki) for ki in k]):
        sl = tuple(slice(off[i] * d[i], off[i] * d[i] + s[i] * (out_sp[i] - 1) + 1, s[i]) for i in range(nsp))
        patch = xp[(slice(None), slice(None)) + sl]  # (n, c, *out)
        for g in range(groups):
            wg = w[(slice(g * fg, (g + 1) * fg), slice(None)) + tuple(off)]  # (fg, cg)
            y[:, g * fg:(g + 1) * fg] += np.einsum("nc...,fc->nf...", patch[:, g * cg:(g + 1) * cg], wg)
    if b is not None:
        y += b.reshape((1, f) + (1,) * nsp)
    return y


def deconv_pad_adj(in_sp, k, s, d, pad, adj, target):
    """MXNet's effective (pad, adj) of a deconvolution."""
    nsp = len(in_sp)
    if target and any(t != 0 for t in target):
        pads, adjs = [], []
        for i in range(nsp):
            total = s[i] * (in_sp[i] - 1) + d[i] * (k[i] - 1) + 1 - target[i]
            adjs.append(total % 2)
            pads.append((total + 1) // 2)
        return tuple(pads), tuple(adjs)
    return _tup(pad, nsp, 0), _tup(adj, nsp, 0)


def np_deconv(x, w, b=None, stride=(), pad=(), dilate=(), adj=(), target=(), groups=1):
    """Transposed convolution by scattering every input element's kernel."""
    nsp = x.ndim - 2
    k = w.shape[2:]
    s, d = _tup(stride, nsp, 1), _tup(dilate, nsp, 1)
    p, a = deconv_pad_adj(x.shape[2:], k, s, d, pad, adj, target)
    n, cin = x.shape[:2]
    fg = w.shape[1]
    f = fg * groups
    cg = cin // groups
    full = [s[i] * (x.shape[2 + i] - 1) + d[i] * (k[i] - 1) + 1 + a[i] for i in range(nsp)]
    y = np.zeros((n, f) + tuple(full), dtype=np.float64)
    for off in itertools.product(*[range(ki) for ki in k]):
        sl = tuple(slice(off[i] * d[i], off[i] * d[i] + s[i] * (x.shape[2 + i] - 1) + 1, s[i]) for i in range(nsp))
        for g in range(groups):
            wg = w[(slice(g * cg, (g + 1) * cg), slice(None)) + tuple(off)]  # (cg, fg)
            y[(slice(None), slice(g * fg, (g + 1) * fg)) + sl] += np.einsum(
                "nc...,cf->nf...", x[:, g * cg:(g + 1) * cg], wg)
    crop = tuple(slice(p[i], full[i] - p[i]) for i in range(nsp))
    y = y[(slice(None), slice(None)) + crop]
    if b is not None:
        y = y + b.reshape((1, f) + (1,) * nsp)
    return y


def np_pool(x, kernel=(), pool_type="max", stride=(), pad=(), convention="valid", global_pool=False,
            count_include_pad=True, p_value=None):
    """Pooling by looping over output positions (channels-first data)."""
    nsp = x.ndim - 2
    xs = x.shape[2:]
    if global_pool:
        k, s, plo, phi = xs, (1,) * nsp, (0,) * nsp, (0,) * nsp
        out = (1,) * nsp
    else:
        k = tuple(kernel)
        s = _tup(stride, nsp, 1)
        if convention == "same":
            out = tuple(-(-xs[i] // s[i]) for i in range(nsp))
            tot = [max((out[i] - 1) * s[i] + k[i] - xs[i], 0) for i in range(nsp)]
            plo = tuple(t // 2 for t in tot)
            phi = tuple(t - t // 2 for t in tot)
        else:
            p = _tup(pad, nsp, 0)
            plo = phi = p
            if convention == "full":
                out = tuple(1 + -(-(xs[i] + 2 * p[i] - k[i]) // s[i]) for i in range(nsp))
            else:
                out = tuple(1 + (xs[i] + 2 * p[i] - k[i]) // s[i] for i in range(nsp))
    y = np.zeros(x.shape[:2] + out, dtype=np.float64)
    for o in itertools.product(*[range(v) for v in out]):
        lo, hi, padded = [], [], 1
        for i in range(nsp):
            start = o[i] * s[i] - plo[i]
            end = min(start + k[i], xs[i] + phi[i])
            padded *= end - start
            lo.append(max(start, 0))
            hi.append(max(min(end, xs[i]), max(start, 0)))
        win = x[(slice(None), slice(None)) + tuple(slice(lo[i], hi[i]) for i in range(nsp))]
        win = win.reshape(x.shape[0], x.shape[1], -1).astype(np.float64)
        cnt = win.shape[2]
        idx = (slice(None), slice(None)) + o
        if pool_type == "max":
            y[idx] = win.max(axis=2) if cnt else np.finfo(x.dtype).min
        elif pool_type == "sum":
            y[idx] = win.sum(axis=2)
        elif pool_type == "avg":
            div = padded if count_include_pad else cnt
            y[idx] = win.sum(axis=2) / div if div else 0.0
        else:
            acc = (win ** p_value).sum(axis=2)
            y[idx] = np.cbrt(acc) if p_value == 3 else np.sign(acc) * np.abs(acc) ** (1.0 / p_value)
    return y


def rand(shape, seed, dtype=np.float32):
    return np.random.RandomState(seed).uniform(-1, 1, size=shape).astype(dtype)


def tol(dtype):
    return {np.float32: 1e-4, np.float64: 1e-10, np.float16: 2e-2}[dtype]


# ---- FullyConnected ------------------------------------------------------------------

@pytest.mark.parametrize("dshape,hidden,flatten,no_bias", [
    ((4, 7), 3, True, False),
    ((4, 2, 3, 2), 5, True, False),
    ((4, 2, 3, 2), 5, False, False),
    ((6,), 2, True, True),
    ((6,), 2, False, False),
    ((64, 800), 500, True, False),
    ((3, 5), 1, True, True),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fc_forward(dshape, hidden, flatten, no_bias, dtype):
    x = rand(dshape, 1, dtype)
    kin = int(np.prod(dshape[1:])) if flatten else dshape[-1]
    w = rand((hidden, kin), 2, dtype)
    b = rand((hidden,), 3, dtype)
    args = [nd.array(x, dtype=dtype), nd.array(w, dtype=dtype)] + ([] if no_bias else [nd.array(b, dtype=dtype)])
    y = nd.FullyConnected(*args, num_hidden=hidden, flatten=flatten, no_bias=no_bias)
    want = np_fc(x.astype(np.float64), w, None if no_bias else b, flatten)
    if not flatten and len(dshape) == 1:
        want = want.reshape(hidden)
    assert y.shape == want.shape and y.dtype == dtype
    np.testing.assert_allclose(y.asnumpy(), want, rtol=tol(dtype), atol=tol(dtype))


def test_fc_float16():
    x, w, b = rand((3, 8), 1), rand((4, 8), 2), rand((4,), 3)
    y = nd.FullyConnected(nd.array(x, dtype="float16"), nd.array(w, dtype="float16"),
                          nd.array(b, dtype="float16"), num_hidden=4)
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.asnumpy(), np_fc(x, w, b), atol=2e-2)


# ---- Convolution ---------------------------------------------------------------------

CONV_CASES = [
    # dshape, kernel, stride, pad, dilate, num_filter, groups
    ((2, 3, 9), (3,), (), (), (), 4, 1),
    ((2, 4, 10), (4,), (3,), (2,), (2,), 6, 2),
    ((1, 2, 7), (7,), (1,), (0,), (1,), 3, 1),
    ((2, 3, 7, 8), (3, 3), (), (), (), 5, 1),
    ((2, 4, 9, 7), (3, 2), (2, 1), (1, 2), (1, 2), 6, 2),
    ((3, 6, 8, 8), (1, 1), (), (), (), 4, 1),
    ((3, 6, 8, 8), (1, 1), (2, 2), (0, 0), (), 3, 3),
    ((2, 4, 6, 6), (3, 3), (1, 1), (1, 1), (), 4, 4),
    ((2, 2, 5, 5), (5, 5), (), (2, 2), (), 3, 1),
    ((2, 1, 28, 28), (5, 5), (), (), (), 20, 1),
    ((2, 20, 12, 12), (5, 5), (), (), (), 50, 1),
    ((2, 2, 5, 6, 4), (2, 3, 2), (), (), (), 3, 1),
    ((1, 4, 6, 5, 7), (3, 2, 3), (2, 1, 2), (1, 0, 1), (1, 2, 1), 4, 2),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=[str(c[0]) + str(c[1]) for c in CONV_CASES])
@pytest.mark.parametrize("no_bias", [False, True])
def test_conv_forward(case, no_bias):
    dshape, kernel, stride, pad, dilate, nf, groups = case
    x = rand(dshape, 1)
    w = rand((nf, dshape[1] // groups) + kernel, 2)
    b = rand((nf,), 3)
    args = [nd.array(x), nd.array(w)] + ([] if no_bias else [nd.array(b)])
    y = nd.Convolution(*args, kernel=kernel, stride=stride, pad=pad, dilate=dilate, num_filter=nf,
                       num_group=groups, no_bias=no_bias)
    want = np_conv(x.astype(np.float64), w, None if no_bias else b, stride, pad, dilate, groups)
    assert y.shape == want.shape
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_conv_dtypes(dtype):
    x, w, b = rand((2, 3, 6, 5), 1), rand((4, 3, 3, 2), 2), rand((4,), 3)
    y = nd.Convolution(nd.array(x, dtype=dtype), nd.array(w, dtype=dtype), nd.array(b, dtype=dtype),
                       kernel=(3, 2), pad=(1, 0), num_filter=4)
    assert y.dtype == dtype
    want = np_conv(x.astype(dtype).astype(np.float64), w.astype(dtype), b.astype(dtype), pad=(1, 0))
    np.testing.assert_allclose(y.asnumpy(), want, rtol=tol(dtype), atol=tol(dtype) * 10)


def test_conv_layout_explicit_and_none():
    x, w = rand((1, 2, 5, 5), 1), rand((2, 2, 3, 3), 2)
    a = nd.Convolution(nd.array(x), nd.array(w), kernel=(3, 3), num_filter=2, no_bias=True, layout="NCHW")
    b = nd.Convolution(nd.array(x), nd.array(w), kernel=(3, 3), num_filter=2, no_bias=True, layout=None)
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


# ---- Deconvolution -------------------------------------------------------------------

DECONV_CASES = [
    # dshape, kernel, stride, pad, dilate, adj, target, num_filter, groups
    ((2, 3, 5), (3,), (), (), (), (), (), 2, 1),
    ((2, 4, 5), (4,), (3,), (1,), (2,), (2,), (), 6, 2),
    ((2, 3, 4, 5), (3, 3), (), (), (), (), (), 4, 1),
    ((2, 4, 3, 4), (3, 3), (2, 2), (1, 1), (), (1, 0), (), 6, 2),
    ((1, 2, 4, 4), (4, 4), (2, 2), (1, 1), (1, 1), (), (), 3, 1),
    ((2, 2, 5, 5), (3, 3), (2, 2), (), (), (), (10, 10), 3, 1),
    ((2, 2, 5, 5), (3, 3), (2, 2), (), (), (), (9, 10), 3, 1),
    ((1, 2, 4, 3), (2, 2), (2, 3), (), (2, 1), (), (), 2, 1),
    ((1, 4, 3, 3, 2), (2, 3, 2), (2, 1, 2), (0, 1, 0), (), (1, 0, 0), (), 2, 2),
    ((2, 6, 4, 4), (1, 1), (), (), (), (), (), 3, 1),
]


@pytest.mark.parametrize("case", DECONV_CASES, ids=[str(c[0]) + str(c[1]) + str(c[6]) for c in DECONV_CASES])
@pytest.mark.parametrize("no_bias", [True, False])
def test_deconv_forward(case, no_bias):
    dshape, kernel, stride, pad, dilate, adj, target, nf, groups = case
    x = rand(dshape, 1)
    w = rand((dshape[1], nf // groups) + kernel, 2)
    b = rand((nf,), 3)
    args = [nd.array(x), nd.array(w)] + ([] if no_bias else [nd.array(b)])
    y = nd.Deconvolution(*args, kernel=kernel, stride=stride, pad=pad, dilate=dilate, adj=adj,
                         target_shape=target, num_filter=nf, num_group=groups, no_bias=no_bias)
    want = np_deconv(x.astype(np.float64), w, None if no_bias else b, stride, pad, dilate, adj, target, groups)
    assert y.shape == want.shape
    if target:
        assert y.shape[2:] == target
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-4, atol=1e-4)


def test_deconv_no_bias_default_true():
    x, w = rand((1, 2, 3, 3), 1), rand((2, 1, 2, 2), 2)
    y = nd.Deconvolution(nd.array(x), nd.array(w), kernel=(2, 2), num_filter=1)
    np.testing.assert_allclose(y.asnumpy(), np_deconv(x.astype(np.float64), w), rtol=1e-5, atol=1e-5)
    with pytest.raises(mx.base.MXNetError, match="Deconvolution"):
        nd.Deconvolution(nd.array(x), nd.array(w), kernel=(2, 2), num_filter=1, no_bias=False)


# ---- Pooling -------------------------------------------------------------------------

POOL_CASES = [
    # dshape, kernel, stride, pad, convention
    ((2, 3, 9), (3,), (2,), (1,), "valid"),
    ((2, 3, 9), (3,), (2,), (1,), "full"),
    ((2, 3, 10), (4,), (3,), (), "full"),
    ((2, 3, 9), (3,), (2,), (), "same"),
    ((2, 2, 10), (4,), (3,), (), "same"),
    ((2, 3, 7, 7), (2, 2), (2, 2), (), "valid"),
    ((2, 3, 7, 7), (3, 3), (2, 2), (1, 1), "valid"),
    ((2, 3, 7, 6), (3, 2), (2, 2), (1, 0), "full"),
    ((1, 2, 5, 5), (2, 2), (1, 1), (2, 2), "valid"),
    ((2, 3, 24, 24), (2, 2), (2, 2), (), "valid"),
    ((1, 2, 5, 5, 4), (2, 2, 2), (2, 1, 2), (), "valid"),
    ((1, 2, 5, 4, 5), (3, 2, 3), (2, 2, 2), (1, 1, 1), "full"),
]


@pytest.mark.parametrize("case", POOL_CASES, ids=[str(c[0]) + str(c[1]) + c[4] for c in POOL_CASES])
@pytest.mark.parametrize("pool_type,cip,p", [("max", True, None), ("avg", True, None), ("avg", False, None),
                                             ("sum", True, None), ("lp", True, 1), ("lp", True, 2),
                                             ("lp", True, 3)])
def test_pool_forward(case, pool_type, cip, p):
    dshape, kernel, stride, pad, conv = case
    x = rand(dshape, 4)
    kw = {}
    if pool_type == "lp":
        kw["p_value"] = p
    y = nd.Pooling(nd.array(x), kernel=kernel, stride=stride, pad=pad, pool_type=pool_type,
                   pooling_convention=conv, count_include_pad=cip, **kw)
    want = np_pool(x, kernel, pool_type, stride, pad, conv, count_include_pad=cip, p_value=p)
    assert y.shape == want.shape
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dshape", [(2, 3, 7), (2, 3, 5, 4), (1, 2, 3, 4, 5)])
@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
def test_global_pool(dshape, pool_type):
    x = rand(dshape, 5)
    y = nd.Pooling(nd.array(x), global_pool=True, pool_type=pool_type, kernel=(1,) * (len(dshape) - 2))
    want = np_pool(x, pool_type=pool_type, global_pool=True)
    assert y.shape == dshape[:2] + (1,) * (len(dshape) - 2)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-5, atol=1e-6)
    # The kernel may be left out with global_pool.
    y2 = nd.Pooling(nd.array(x), global_pool=True, pool_type=pool_type)
    np.testing.assert_array_equal(y.asnumpy(), y2.asnumpy())


@pytest.mark.parametrize("layout,perm", [("NWC", (0, 2, 1)), ("NHWC", (0, 2, 3, 1)), ("NDHWC", (0, 2, 3, 4, 1))])
def test_pool_channels_last(layout, perm):
    shape_cf = {3: (2, 3, 9), 4: (2, 3, 7, 6), 5: (1, 2, 5, 4, 6)}[len(perm)]
    x = rand(shape_cf, 6)
    k = (2,) * (len(perm) - 2)
    xl = np.ascontiguousarray(x.transpose(perm))
    y = nd.Pooling(nd.array(xl), kernel=k, stride=k, pool_type="avg", layout=layout)
    want = np_pool(x, k, "avg", k).transpose(perm)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_pool_empty_max_window_is_lowest():
    x = -np.ones((1, 1, 5, 5), np.float32)
    y = nd.Pooling(nd.array(x), kernel=(2, 2), pad=(2, 2)).asnumpy()
    assert y.shape == (1, 1, 8, 8)
    assert y[0, 0, 0, 0] == np.finfo(np.float32).min
    assert y[0, 0, 2, 2] == -1


# ---- backward ops vs finite differences (float64) -----------------------------------

def numgrad(f, arrays, head, eps=1e-6):
    """d sum(f(*arrays) * head) / d arrays[i] by central differences."""
    grads = []
    for a in arrays:
        g = np.zeros_like(a)
        it = np.nditer(a, flags=["multi_index"])
        for _ in it:
            i = it.multi_index
            old = a[i]
            a[i] = old + eps
            hi = (f(*arrays) * head).sum()
            a[i] = old - eps
            lo = (f(*arrays) * head).sum()
            a[i] = old
            g[i] = (hi - lo) / (2 * eps)
        grads.append(g)
    return grads


def _check_backward(bwd, fwd, arrays, out_shape, atol=1e-6):
    head = rand(out_shape, 99, np.float64)
    got = bwd(nd.array(head, dtype="float64"), *[nd.array(a, dtype="float64") for a in arrays])
    if not isinstance(got, (list, tuple)):
        got = [got]
    want = numgrad(fwd, [a.copy() for a in arrays], head)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == np.float64
        np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-5, atol=atol)


@pytest.mark.parametrize("dshape,hidden,flatten,no_bias", [
    ((3, 2, 2), 4, True, False), ((3, 2, 3), 2, False, False), ((2, 5), 3, True, True)])
def test_fc_backward(dshape, hidden, flatten, no_bias):
    x = rand(dshape, 1, np.float64)
    kin = int(np.prod(dshape[1:])) if flatten else dshape[-1]
    arrays = [x, rand((hidden, kin), 2, np.float64)] + ([] if no_bias else [rand((hidden,), 3, np.float64)])
    params = dict(num_hidden=hidden, flatten=flatten, no_bias=no_bias)
    out_shape = np_fc(*arrays[:2], flatten=flatten).shape

    def bwd(og, *ins):
        return nd._internal._backward_FullyConnected(og, ins[0], ins[1], **params)

    _check_backward(bwd, lambda *a: np_fc(a[0], a[1], a[2] if len(a) > 2 else None, flatten), arrays, out_shape)


CONV_BWD = [
    ((2, 2, 7), (3,), (2,), (1,), (1,), 3, 1),
    ((1, 4, 6, 5), (3, 2), (2, 1), (1, 1), (1, 2), 4, 2),
    ((2, 3, 4, 4), (1, 1), (), (), (), 2, 1),
    ((1, 2, 4, 3, 4), (2, 2, 2), (1, 1, 2), (1, 0, 0), (), 2, 1),
]


@pytest.mark.parametrize("case", CONV_BWD, ids=[str(c[0]) for c in CONV_BWD])
@pytest.mark.parametrize("no_bias", [False, True])
def test_conv_backward(case, no_bias):
    dshape, kernel, stride, pad, dilate, nf, groups = case
    arrays = [rand(dshape, 1, np.float64), rand((nf, dshape[1] // groups) + kernel, 2, np.float64)]
    if not no_bias:
        arrays.append(rand((nf,), 3, np.float64))
    params = dict(kernel=kernel, stride=stride, pad=pad, dilate=dilate, num_filter=nf, num_group=groups,
                  no_bias=no_bias)

    def fwd(*a):
        return np_conv(a[0], a[1], a[2] if len(a) > 2 else None, stride, pad, dilate, groups)

    def bwd(og, *ins):
        return nd._internal._backward_Convolution(og, ins[0], ins[1], **params)

    _check_backward(bwd, fwd, arrays, fwd(*arrays).shape)


DECONV_BWD = [
    ((2, 2, 4), (3,), (2,), (1,), (), (1,), (), 2, 1),
    ((1, 4, 3, 3), (3, 2), (2, 1), (1, 0), (1, 2), (), (), 4, 2),
    ((1, 2, 3, 3), (3, 3), (2, 2), (), (), (), (6, 5), 2, 1),
    ((1, 2, 2, 3, 2), (2, 2, 2), (2, 1, 1), (), (), (), (), 2, 1),
]


@pytest.mark.parametrize("case", DECONV_BWD, ids=[str(c[0]) for c in DECONV_BWD])
@pytest.mark.parametrize("no_bias", [True, False])
def test_deconv_backward(case, no_bias):
    dshape, kernel, stride, pad, dilate, adj, target, nf, groups = case
    arrays = [rand(dshape, 1, np.float64), rand((dshape[1], nf // groups) + kernel, 2, np.float64)]
    if not no_bias:
        arrays.append(rand((nf,), 3, np.float64))
    params = dict(kernel=kernel, stride=stride, pad=pad, dilate=dilate, adj=adj, target_shape=target,
                  num_filter=nf, num_group=groups, no_bias=no_bias)

    def fwd(*a):
        return np_deconv(a[0], a[1], a[2] if len(a) > 2 else None, stride, pad, dilate, adj, target, groups)

    def bwd(og, *ins):
        return nd._internal._backward_Deconvolution(og, ins[0], ins[1], **params)

    _check_backward(bwd, fwd, arrays, fwd(*arrays).shape)


POOL_BWD = [
    ((2, 2, 9), (3,), (2,), (1,), "valid"),
    ((1, 2, 7, 6), (3, 2), (2, 2), (1, 0), "full"),
    ((1, 2, 7, 7), (3, 3), (2, 2), (1, 1), "valid"),
    ((1, 1, 4, 5, 4), (2, 3, 2), (2, 1, 2), (), "valid"),
    ((1, 2, 9), (4,), (2,), (), "same"),
]


@pytest.mark.parametrize("case", POOL_BWD, ids=[str(c[0]) + c[4] for c in POOL_BWD])
@pytest.mark.parametrize("pool_type,cip,p", [("max", True, None), ("avg", True, None), ("avg", False, None),
                                             ("sum", True, None), ("lp", True, 2), ("lp", True, 3)])
def test_pool_backward(case, pool_type, cip, p):
    dshape, kernel, stride, pad, conv = case
    x = rand(dshape, 7, np.float64)
    if pool_type == "lp":
        x = np.abs(x) + 0.5  # keep (sum x^p)^(1/p) smooth
    kw = dict(kernel=kernel, stride=stride, pad=pad, pool_type=pool_type, pooling_convention=conv,
              count_include_pad=cip)
    if p is not None:
        kw["p_value"] = p

    def fwd(a):
        return np_pool(a, kernel, pool_type, stride, pad, conv, count_include_pad=cip, p_value=p)

    def bwd(og, data):
        out = nd.Pooling(data, **kw)
        return nd._internal._backward_Pooling(og, data, out, **kw)

    _check_backward(bwd, fwd, [x], fwd(x).shape)


def test_max_pool_backward_routes_to_first_argmax():
    x = np.array([[[1, 3, 3, 0, 2, 2]]], np.float32)
    y = nd.Pooling(nd.array(x), kernel=(3,), stride=(3,))
    g = nd._internal._backward_Pooling(nd.array([[[1.0, 10.0]]]), nd.array(x), y, kernel=(3,), stride=(3,))
    np.testing.assert_array_equal(g.asnumpy(), [[[0, 1, 0, 0, 10, 0]]])


def test_grad_accumulates_over_overlapping_windows():
    x = np.array([[[0, 5, 1, 2]]], np.float32)
    y = nd.Pooling(nd.array(x), kernel=(2,), stride=(1,))
    g = nd._internal._backward_Pooling(nd.ones((1, 1, 3)), nd.array(x), y, kernel=(2,), stride=(1,))
    np.testing.assert_array_equal(g.asnumpy(), [[[0, 2, 0, 1]]])


# ---- MXNet oracle fixtures -----------------------------------------------------------

with open(os.path.join(HERE, "fixtures", "nn_conv", "cases.json")) as _f:
    ORACLE_CASES = json.load(_f)


def _params(case):
    return {k: tuple(v) if isinstance(v, list) else v for k, v in case["params"].items()}


@pytest.mark.parametrize("case", ORACLE_CASES, ids=[c["name"] for c in ORACLE_CASES])
def test_against_mxnet_oracle(case):
    data = np.load(os.path.join(HERE, "fixtures", "nn_conv", "oracle.npz"))
    name, op, params = case["name"], case["op"], _params(case)
    ins = [data["%s_in%d" % (name, i)] for i in range(case["n_in"])]
    out = getattr(nd, op)(*[nd.array(a) for a in ins], **params)
    np.testing.assert_allclose(out.asnumpy(), data[name + "_out"], rtol=1e-4, atol=1e-5)
    head = nd.array(data[name + "_head"])
    if op == "Pooling":
        grads = [nd._internal._backward_Pooling(head, nd.array(ins[0]), out, **params)]
    else:
        grads = getattr(nd._internal, "_backward_" + op)(head, nd.array(ins[0]), nd.array(ins[1]), **params)
    assert len(grads) == len(ins)
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g.asnumpy(), data["%s_grad%d" % (name, i)], rtol=1e-4, atol=1e-4)


# ---- bad inputs ----------------------------------------------------------------------

def _intact(arrays, before):
    for a, b in zip(arrays, before):
        np.testing.assert_array_equal(a.asnumpy(), b)


BAD = [
    # (op, input shapes, params, message fragment)
    ("Convolution", [(2, 4, 5, 5), (4, 3, 3, 3), (4,)], dict(kernel=(3, 3), num_filter=4), "weight"),
    ("Convolution", [(2, 4, 5, 5), (4, 4, 3, 3), (5,)], dict(kernel=(3, 3), num_filter=4), "bias"),
    ("Convolution", [(2, 4, 5, 5), (4, 4, 7, 7), (4,)], dict(kernel=(7, 7), num_filter=4), "exceeds input"),
    ("Convolution", [(2, 4, 5, 5), (4, 4, 3, 3), (4,)], dict(kernel=(3, 3), num_filter=4, dilate=(3, 3)),
     "exceeds input"),
    ("Convolution", [(2, 4, 5, 5), (4, 4, 3, 3), (4,)], dict(kernel=(3, 3), num_filter=4, layout="NHWC"),
     "layout"),
    ("Convolution", [(2, 4, 5, 5), (4, 4, 3, 3), (4,)], dict(kernel=(3, 3), num_filter=4, layout="NCW"),
     "layout"),
    ("Convolution", [(2, 4, 5), (4, 4, 3, 3), (4,)], dict(kernel=(3, 3), num_filter=4), "4-D"),
    ("Convolution", [(2, 4, 5, 5, 5, 5), (4, 4, 3, 3), (4,)], dict(kernel=(3, 3), num_filter=4), "4-D"),
    ("Convolution", [(2, 4, 5, 5), (6, 2, 3, 3)], dict(kernel=(3, 3), num_filter=6, num_group=3, no_bias=True),
     "num_group"),
    ("Convolution", [(2, 4, 5, 5), (4, 4, 3, 3)], dict(kernel=(3, 3), num_filter=4, no_bias=True, stride=(0, 0)),
     "stride"),
    ("Convolution", [(2, 4, 5, 5), (4, 4, 3, 3)], dict(kernel=(3, 3), num_filter=4, no_bias=True, stride=(2,)),
     "stride"),
    ("Convolution", [(2, 4, 5, 5), (4, 4, 3, 3)], dict(kernel=(3, 3), num_filter=4), "input"),
    ("Convolution", [(2, 4, 5, 5, 5), (4, 4, 1, 1, 1, 1)], dict(kernel=(1, 1, 1, 1), num_filter=4, no_bias=True),
     "kernel"),
    ("Deconvolution", [(2, 4, 5, 5), (4, 4, 3, 3)], dict(kernel=(3, 3), num_filter=3), "weight"),
    ("Deconvolution", [(2, 4, 5, 5), (4, 3, 3, 3)], dict(kernel=(3, 3), num_filter=3, stride=(2, 2), adj=(2, 2)),
     "adj"),
    ("Deconvolution", [(2, 4, 5, 5), (4, 3, 3, 3)], dict(kernel=(3, 3), num_filter=3, stride=(2, 2),
                                                         target_shape=(12, 12)), "target_shape"),
    ("Deconvolution", [(2, 4, 5, 5), (4, 3, 3, 3)], dict(kernel=(3, 3), num_filter=3, pad=(4, 4)), "empty"),
    ("Deconvolution", [(2, 4, 5, 5), (4, 3, 3, 3)], dict(kernel=(3, 3), num_filter=3, layout="NDHWC"), "layout"),
    ("Deconvolution", [(2, 4, 5), (4, 3, 3, 3)], dict(kernel=(3, 3), num_filter=3), "4-D"),
    ("FullyConnected", [(2, 4, 5, 5), (3, 99), (3,)], dict(num_hidden=3), "weight"),
    ("FullyConnected", [(2, 4, 5, 5), (3, 5), (4,)], dict(num_hidden=3, flatten=False), "bias"),
    ("FullyConnected", [(2, 5), (3, 5), (3,)], dict(num_hidden=4), "weight"),
    ("Pooling", [(2, 4, 5, 5)], dict(kernel=(6, 6)), "exceeds input"),
    ("Pooling", [(2, 4, 5, 5)], dict(kernel=(3,)), "kernel"),
    ("Pooling", [(2, 3)], dict(kernel=(3,)), "3-D"),
    ("Pooling", [(2, 3, 4, 5, 6, 7)], dict(kernel=(3,)), "3-D"),
    ("Pooling", [(2, 4, 5, 5)], dict(kernel=(2, 2), layout="NCW"), "layout"),
    ("Pooling", [(2, 4, 5, 5)], dict(kernel=(2, 2), pool_type="lp"), "p_value"),
    ("Pooling", [(2, 4, 5, 5)], dict(kernel=(2, 2), pooling_convention="same"), "same"),
    ("Pooling", [(2, 4, 5, 5)], dict(), "kernel"),
    ("Pooling", [(2, 4, 5, 5)], dict(kernel=(2, 2), pool_type="median"), "pool_type"),
]


@pytest.mark.parametrize("op,shapes,params,frag", BAD, ids=["%s-%s" % (b[0], b[3]) for b in BAD])
def test_bad_inputs(op, shapes, params, frag):
    arrays = [nd.array(rand(s, i)) for i, s in enumerate(shapes)]
    before = [a.asnumpy() for a in arrays]
    with pytest.raises(mx.base.MXNetError) as e:
        getattr(nd, op)(*arrays, **params).wait_to_read()
    msg = str(e.value)
    assert op in msg and frag in msg, msg
    _intact(arrays, before)


def test_bad_dtypes():
    x, w = nd.ones((1, 2, 4, 4), dtype="int32"), nd.ones((2, 2, 3, 3), dtype="int32")
    with pytest.raises(mx.base.MXNetError, match="Convolution.*int32"):
        nd.Convolution(x, w, kernel=(3, 3), num_filter=2, no_bias=True)
    with pytest.raises(mx.base.MXNetError, match="Convolution.*dtype"):
        nd.Convolution(nd.ones((1, 2, 4, 4)), nd.ones((2, 2, 3, 3), dtype="float64"), kernel=(3, 3), num_filter=2,
                       no_bias=True)
    with pytest.raises(mx.base.MXNetError, match="Pooling.*int32"):
        nd.Pooling(x, kernel=(2, 2))


def test_backward_bad_out_grad():
    x, w = nd.ones((1, 2, 5, 5)), nd.ones((3, 2, 3, 3))
    og = nd.ones((1, 3, 4, 4))
    with pytest.raises(mx.base.MXNetError, match="_backward_Convolution.*out_grad"):
        nd._internal._backward_Convolution(og, x, w, kernel=(3, 3), num_filter=3, no_bias=True)
    np.testing.assert_array_equal(og.asnumpy(), np.ones((1, 3, 4, 4)))


def test_out_param():
    x, w = rand((2, 3, 5, 5), 1), rand((4, 3, 3, 3), 2)
    out = nd.zeros((2, 4, 3, 3))
    r = nd.Convolution(nd.array(x), nd.array(w), kernel=(3, 3), num_filter=4, no_bias=True, out=out)
    assert r is out
    np.testing.assert_allclose(out.asnumpy(), np_conv(x.astype(np.float64), w), rtol=1e-4, atol=1e-5)


# ---- fast paths ----------------------------------------------------------------------
# The direct kernel of few-channel convolutions (LeNet's first layer), the 2x2/2 max
# pooling backward and the weight-only backward ops must agree with the references;
# geometries next to the fast ones (padding, stride, dilation, groups, float64) take
# the general path and must agree too.

@pytest.mark.parametrize("dshape,wshape,kw", [
    ((3, 1, 28, 28), (20, 1, 5, 5), {}),                      # direct (LeNet conv1)
    ((2, 2, 13, 11), (7, 2, 3, 3), {}),                       # direct, odd sizes
    ((2, 1, 70), (6, 1, 5), {}),                              # direct, 1-D
    ((3, 1, 28, 28), (20, 1, 5, 5), {"pad": (2, 2)}),         # general: padded
    ((3, 1, 28, 28), (20, 1, 5, 5), {"stride": (2, 2)}),      # general: strided
    ((3, 1, 28, 28), (20, 1, 5, 5), {"dilate": (2, 1)}),      # general: dilated
    ((3, 2, 28, 28), (20, 1, 5, 5), {"num_group": 2}),        # general: groups
    ((2, 20, 12, 12), (50, 20, 5, 5), {}),                    # general: many channels
    ((1, 16, 7, 7), (24, 16, 1, 1), {}),                      # pointwise: tile, half, tail
    ((2, 9, 5, 13), (11, 9, 1, 1), {}),                       # pointwise: odd filters, batch
    ((1, 8, 4, 4), (8, 8, 1, 1), {}),                         # pointwise: one half tile
    ((1, 24, 3, 21), (40, 24, 1, 1), {}),                     # pointwise: 63 columns
    ((3, 5, 1, 70), (9, 5, 1, 1), {}),                        # pointwise: 1-D-like rows
    ((1, 40, 1, 1), (17, 40, 1, 1), {}),                      # 1x1 map: GEMM
    ((1, 16, 7, 7), (24, 16, 1, 1), {"pad": (1, 1)}),         # 1x1 padded: general
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("no_bias", [False, True])
def test_conv_fast_path_neighbours(dshape, wshape, kw, dtype, no_bias):
    x, w, b = rand(dshape, 11, dtype), rand(wshape, 12, dtype), rand(wshape[:1], 13, dtype)
    args = [nd.array(x, dtype=dtype), nd.array(w, dtype=dtype)] + ([] if no_bias else [nd.array(b, dtype=dtype)])
    y = nd.Convolution(*args, kernel=wshape[2:], num_filter=wshape[0], no_bias=no_bias, **kw)
    want = np_conv(x.astype(np.float64), w.astype(np.float64), None if no_bias else b.astype(np.float64),
                   stride=kw.get("stride", ()), pad=kw.get("pad", ()), dilate=kw.get("dilate", ()),
                   groups=kw.get("num_group", 1))
    np.testing.assert_allclose(y.asnumpy(), want, rtol=tol(dtype), atol=tol(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dshape", [(4, 20, 24, 24), (3, 5, 9, 7)])
def test_max_pool_2x2_backward_with_ties(dtype, dshape):
    # Rounded values: most windows hold ties, which go to the first maximum.
    x = np.round(rand(dshape, 21, dtype) * 2)
    og = rand(dshape[:2] + (dshape[2] // 2, dshape[3] // 2), 22, dtype)
    kw = dict(kernel=(2, 2), stride=(2, 2))
    y = nd.Pooling(nd.array(x, dtype=dtype), **kw)
    g = nd._internal._backward_Pooling(nd.array(og, dtype=dtype), nd.array(x, dtype=dtype), y, **kw).asnumpy()
    want = np.zeros_like(x)
    n, c, h, w = dshape
    for i in range(h // 2):
        for j in range(w // 2):
            win = x[:, :, 2 * i:2 * i + 2, 2 * j:2 * j + 2].reshape(n, c, 4)
            k = win.argmax(axis=2)  # the first maximum
            for a in range(n):
                for b in range(c):
                    want[a, b, 2 * i + k[a, b] // 2, 2 * j + k[a, b] % 2] = og[a, b, i, j]
    np.testing.assert_array_equal(g, want)


@pytest.mark.parametrize("op,wshape,kw", [
    ("Convolution", (4, 3, 3, 2), {"kernel": (3, 2), "num_filter": 4, "pad": (1, 0)}),
    ("Convolution", (6, 1, 5, 5), {"kernel": (5, 5), "num_filter": 6}),
    ("FullyConnected", (5, 3 * 9 * 8), {"num_hidden": 5}),
])
@pytest.mark.parametrize("no_bias", [False, True])
def test_weight_only_backward_matches_full(op, wshape, kw, no_bias):
    c = wshape[1] if op == "Convolution" else 3
    x, w = rand((2, c, 9, 8), 31), rand(wshape, 32)
    args = [nd.array(x), nd.array(w)]
    if not no_bias:
        args.append(nd.array(rand(wshape[:1], 33)))
    og = nd.array(rand(getattr(nd, op)(*args, no_bias=no_bias, **kw).shape, 34))
    full = getattr(nd._internal, "_backward_" + op)(og, args[0], args[1], no_bias=no_bias, **kw)
    part = getattr(nd._internal, "_backward_" + op + "_weight")(og, args[0], args[1], no_bias=no_bias, **kw)
    full, part = list(full), part if isinstance(part, (list, tuple)) else [part]
    assert len(part) == len(full) - 1
    for a, b in zip(full[1:], part):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


@pytest.mark.parametrize("hybrid", [False, True])
def test_first_layer_grads_without_data_grad(hybrid):
    # The data of the first layer gets no gradient: its convolution and dense
    # layers skip the data gradient; the parameters' gradients must not change.
    def grads(attach):
        net = mx.gluon.nn.HybridSequential()
        net.add(mx.gluon.nn.Conv2D(6, 5, activation="relu"), mx.gluon.nn.MaxPool2D(2, 2),
                mx.gluon.nn.Dense(7))
        net.initialize(mx.init.Xavier(), ctx=mx.cpu())
        x = nd.array(rand((3, 1, 14, 14), 41))
        net(x)  # shapes known: the parameters can be set
        for i, p in enumerate(net.collect_params().values()):
            p.set_data(nd.array(rand(p.shape, 50 + i)))
        if hybrid:
            net.hybridize()
        if attach:
            x.attach_grad()
        with mx.autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        return [p.grad().asnumpy() for p in net.collect_params().values()]

    with_dx, without_dx = grads(True), grads(False)
    assert len(with_dx) == len(without_dx) == 4
    for a, b in zip(with_dx, without_dx):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def np_conv_dw(x, dy, k, stride=(), pad=(), dilate=()):
    """Weight gradient of np_conv (one group): dw[f, c, *off] = sum dy * shifted x."""
    nsp = x.ndim - 2
    s, p, d = _tup(stride, nsp, 1), _tup(pad, nsp, 0), _tup(dilate, nsp, 1)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pi, pi) for pi in p])
    out_sp = dy.shape[2:]
    dw = np.zeros((dy.shape[1], x.shape[1]) + tuple(k))
    for off in itertools.product(*[range(ki) for ki in k]):
        sl = tuple(slice(off[i] * d[i], off[i] * d[i] + s[i] * (out_sp[i] - 1) + 1, s[i]) for i in range(nsp))
        patch = xp[(slice(None), slice(None)) + sl]
        dw[(slice(None), slice(None)) + tuple(off)] = np.einsum("nfp,ncp->fc", dy.reshape(dy.shape[:2] + (-1,)),
                                                               patch.reshape(patch.shape[:2] + (-1,)))
    return dw


@pytest.mark.parametrize("dshape,wshape,kw", [
    ((3, 1, 28, 28), (20, 1, 5, 5), {}),                      # direct (LeNet conv1)
    ((2, 2, 13, 11), (7, 2, 3, 3), {}),                       # direct, odd sizes
    ((2, 1, 70), (6, 1, 5), {}),                              # direct, 1-D
    ((3, 1, 28, 28), (20, 1, 5, 5), {"pad": (2, 2)}),         # general: padded
    ((3, 1, 28, 28), (20, 1, 5, 5), {"stride": (2, 2)}),      # general: strided
    ((2, 20, 12, 12), (50, 20, 5, 5), {}),                    # general: many channels
])
@pytest.mark.parametrize("weight_only", [False, True])
def test_conv_weight_grad_fast_path_neighbours(dshape, wshape, kw, weight_only):
    x, w, b = rand(dshape, 14), rand(wshape, 15), rand(wshape[:1], 16)
    params = dict(kernel=wshape[2:], num_filter=wshape[0], **kw)
    y = nd.Convolution(nd.array(x), nd.array(w), nd.array(b), **params)
    dy = rand(y.shape, 17)
    name = "_backward_Convolution_weight" if weight_only else "_backward_Convolution"
    outs = list(getattr(nd._internal, name)(nd.array(dy), nd.array(x), nd.array(w), **params))
    dw, db = outs[-2].asnumpy(), outs[-1].asnumpy()
    want = np_conv_dw(x.astype(np.float64), dy.astype(np.float64), wshape[2:], stride=kw.get("stride", ()),
                      pad=kw.get("pad", ()))
    np.testing.assert_allclose(dw, want, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(db, dy.astype(np.float64).sum(axis=tuple(i for i in range(dy.ndim) if i != 1)),
                               rtol=1e-4, atol=1e-3)


def test_pooling_same_convention_takes_no_pad():
    x = mx.nd.array(np.random.rand(1, 1, 10))
    out = mx.nd.Pooling(x, kernel=2, stride=2, pad=(0, 0, 0), pool_type="max", pooling_convention="same")
    assert out.shape == (1, 1, 5)
    with pytest.raises(mx.base.MXNetError, match="Pooling"):
        mx.nd.Pooling(x, kernel=2, stride=2, pad=2, pool_type="max", pooling_convention="same")


# Shapes the default dispatch sends to the Winograd F(4x4,3x3) kernel (float32, 3x3,
# stride 1, one group, >= 32 channels and filters, >= 48 output tiles), odd sizes,
# batch 1 included, padding 0 and 1; its error is bounded by the magnitude of the
# products (sum |w*x|), not the output's own value.
@pytest.mark.parametrize("dshape,nf,pad", [
    ((1, 32, 31, 29), 32, (1, 1)),
    ((1, 40, 27, 37), 33, (0, 0)),
    ((2, 35, 23, 19), 48, (1, 1)),
    ((1, 64, 30, 30), 64, (1, 1)),
])
@pytest.mark.parametrize("no_bias", [False, True])
def test_conv3x3_winograd_shapes_match_numpy(dshape, nf, pad, no_bias):
    x, w, b = rand(dshape, 21), rand((nf, dshape[1], 3, 3), 22), rand((nf,), 23)
    args = [nd.array(x), nd.array(w)] + ([] if no_bias else [nd.array(b)])
    y = nd.Convolution(*args, kernel=(3, 3), pad=pad, num_filter=nf, no_bias=no_bias).asnumpy()
    want = np_conv(x.astype(np.float64), w, None if no_bias else b, pad=pad)
    mag = np_conv(np.abs(x.astype(np.float64)), np.abs(w), None if no_bias else np.abs(b), pad=pad)
    assert y.shape == want.shape and y.dtype == np.float32
    err = np.abs(y - want)
    assert np.all(err <= 2e-5 * mag.max() + 1e-6), float((err / mag.max()).max())


# Shapes the default dispatch sends to the blocked kernel (float32, one group, 1-D or
# 2-D, kernel larger than 1x1, >= 16 filters and >= 16 unfolded rows, >= 512 output
# pixels over the batch, not taken by Winograd): a 7x7 stride-2 stem, 3x3 stride-2
# convolutions, 3x3 stride-1 ones with too few tiles for Winograd, dilation,
# asymmetric strides and padding, odd sizes, filters that are not a multiple of the
# micro-tile's, a 1-D convolution. Float32 sums of c*k products: the error is
# bounded by the products' magnitude (sum |w*x|).
@pytest.mark.parametrize("dshape,nf,kernel,stride,pad,dilate", [
    ((1, 3, 64, 50), 16, (7, 7), (2, 2), (3, 3), (1, 1)),
    ((2, 3, 32, 32), 64, (7, 7), (2, 2), (3, 3), (1, 1)),
    ((2, 16, 45, 33), 32, (3, 3), (2, 2), (1, 1), (1, 1)),
    ((5, 24, 25, 19), 20, (3, 3), (2, 2), (0, 0), (1, 1)),
    ((11, 32, 7, 7), 33, (3, 3), (1, 1), (1, 1), (1, 1)),
    ((2, 40, 18, 15), 48, (3, 3), (1, 1), (1, 1), (1, 1)),
    ((4, 8, 17, 19), 17, (3, 3), (1, 2), (2, 1), (2, 3)),
    ((20, 5, 10, 11), 16, (5, 3), (3, 1), (0, 2), (1, 1)),
    ((2, 16, 520), 17, (5,), (2,), (2,), (1,)),
])
@pytest.mark.parametrize("no_bias", [False, True])
def test_conv_blocked_shapes_match_numpy(dshape, nf, kernel, stride, pad, dilate, no_bias):
    x, w, b = rand(dshape, 31), rand((nf, dshape[1]) + kernel, 32), rand((nf,), 33)
    args = [nd.array(x), nd.array(w)] + ([] if no_bias else [nd.array(b)])
    y = nd.Convolution(*args, kernel=kernel, stride=stride, pad=pad, dilate=dilate, num_filter=nf,
                       no_bias=no_bias).asnumpy()
    kw = dict(stride=stride, pad=pad, dilate=dilate)
    want = np_conv(x.astype(np.float64), w, None if no_bias else b, **kw)
    mag = np_conv(np.abs(x.astype(np.float64)), np.abs(w), None if no_bias else np.abs(b), **kw)
    assert y.shape == want.shape and y.dtype == np.float32
    assert np.all(np.abs(y - want) <= 1e-5 * mag + 1e-6), float(np.abs(y - want).max())


# Batch-1 shapes of the filter-vector kernel (few output pixels, >= 64 filters: ResNet's
# 14x14 and 7x7 3x3 layers and their stride-2 entries), the channels-vector depthwise
# kernel (MobileNetV2's layers, a partial block of 16 channels, several row strips)
# and strided 1x1 convolutions (subsampled, then the pointwise path), against NumPy.
@pytest.mark.parametrize("dshape,nf,kernel,stride,pad,groups", [
    ((1, 256, 14, 14), 256, (3, 3), (1, 1), (1, 1), 1),
    ((1, 128, 14, 14), 80, (3, 3), (2, 2), (1, 1), 1),
    ((2, 64, 7, 7), 96, (3, 3), (1, 1), (1, 1), 1),
    ((1, 96, 112, 112), 96, (3, 3), (2, 2), (1, 1), 96),
    ((1, 20, 60, 41), 20, (3, 3), (1, 1), (1, 1), 20),
    ((2, 144, 14, 14), 144, (5, 5), (1, 1), (2, 2), 144),
    ((1, 64, 28, 28), 128, (1, 1), (2, 2), (0, 0), 1),
    ((2, 48, 13, 15), 40, (1, 1), (2, 3), (0, 0), 1),
])
def test_conv_batch1_kernels_match_numpy(dshape, nf, kernel, stride, pad, groups):
    x, w, b = rand(dshape, 51), rand((nf, dshape[1] // groups) + kernel, 52), rand((nf,), 53)
    y = nd.Convolution(nd.array(x), nd.array(w), nd.array(b), kernel=kernel, stride=stride, pad=pad,
                       num_filter=nf, num_group=groups).asnumpy()
    kw = dict(stride=stride, pad=pad, groups=groups)
    want = np_conv(x.astype(np.float64), w, b, **kw)
    mag = np_conv(np.abs(x.astype(np.float64)), np.abs(w), np.abs(b), **kw)
    assert y.shape == want.shape and y.dtype == np.float32
    assert np.all(np.abs(y - want) <= 1e-5 * mag + 1e-6), float(np.abs(y - want).max())


def test_conv_blocked_sees_new_weights():
    # Nothing is cached between calls: a weight changed in place is used at once.
    x = nd.array(rand((1, 16, 47, 47), 41))
    w = nd.array(rand((32, 16, 3, 3), 42))
    y1 = nd.Convolution(x, w, kernel=(3, 3), stride=(2, 2), num_filter=32, no_bias=True).asnumpy()
    w[:] = w * 2
    y2 = nd.Convolution(x, w, kernel=(3, 3), stride=(2, 2), num_filter=32, no_bias=True).asnumpy()
    np.testing.assert_allclose(y2, 2 * y1, rtol=1e-6, atol=1e-6)


def np_conv_dx(dy, w, xshape, stride=(), pad=(), dilate=()):
    """Data gradient of np_conv (one group): every tap's w^T dy added back at the
    input positions it read, the padding cut off."""
    nsp = len(xshape) - 2
    s, p, d = _tup(stride, nsp, 1), _tup(pad, nsp, 0), _tup(dilate, nsp, 1)
    dxp = np.zeros(xshape[:2] + tuple(xshape[2 + i] + 2 * p[i] for i in range(nsp)))
    out_sp = dy.shape[2:]
    for off in itertools.product(*[range(ki) for ki in w.shape[2:]]):
        sl = tuple(slice(off[i] * d[i], off[i] * d[i] + s[i] * (out_sp[i] - 1) + 1, s[i]) for i in range(nsp))
        dxp[(slice(None), slice(None)) + sl] += np.einsum("nf...,fc->nc...", dy, w[(slice(None), slice(None)) + off])
    return dxp[(slice(None), slice(None)) + tuple(slice(p[i], p[i] + xshape[2 + i]) for i in range(nsp))]


# Shapes whose float32 gradients the default dispatch sends to the specialised
# backward kernels: the weight gradient on the channels-last copy (conv_wgrad:
# kernel larger than 1x1, >= 16 channels and filters; strides, padding, dilation,
# channels and filters that fill no whole vector or micro-tile, rows shorter and
# longer than a block) and the Winograd data gradient (3x3 stride 1, >= 32 channels
# and filters, enough tiles). Float32 sums: errors bounded by the magnitude of the
# products (the same sums over |x|, |w|, |dy|).
@pytest.mark.parametrize("dshape,nf,kernel,stride,pad,dilate", [
    ((2, 16, 13, 15), 24, (3, 3), (1, 1), (1, 1), (1, 1)),
    ((3, 33, 9, 11), 50, (3, 3), (2, 2), (1, 1), (1, 1)),
    ((2, 20, 12, 10), 17, (5, 3), (1, 1), (2, 1), (2, 2)),
    ((1, 70, 8, 8), 16, (3, 3), (2, 2), (0, 0), (1, 1)),
    ((4, 64, 14, 14), 64, (3, 3), (1, 1), (1, 1), (1, 1)),
    ((2, 32, 31, 29), 40, (3, 3), (1, 1), (0, 0), (1, 1)),
    ((2, 16, 300), 32, (3,), (1,), (1,), (1,)),
])
def test_conv_backward_fast_kernels_match_numpy(dshape, nf, kernel, stride, pad, dilate):
    x, w, dy_seed = rand(dshape, 61), rand((nf, dshape[1]) + kernel, 62), 63
    kw = dict(kernel=kernel, stride=stride, pad=pad, dilate=dilate, num_filter=nf, no_bias=True)
    xa, wa = nd.array(x), nd.array(w)
    xa.attach_grad()
    wa.attach_grad()
    with mx.autograd.record():
        y = nd.Convolution(xa, wa, **kw)
    dy = rand(y.shape, dy_seed)
    y.backward(nd.array(dy))
    ref = dict(stride=stride, pad=pad, dilate=dilate)
    x64, w64, dy64 = x.astype(np.float64), w.astype(np.float64), dy.astype(np.float64)
    dw_want = np_conv_dw(x64, dy64, kernel, **ref)
    dw_mag = np_conv_dw(np.abs(x64), np.abs(dy64), kernel, **ref)
    dx_want = np_conv_dx(dy64, w64, x.shape, **ref)
    dx_mag = np_conv_dx(np.abs(dy64), np.abs(w64), x.shape, **ref)
    dw, dx = wa.grad.asnumpy(), xa.grad.asnumpy()
    assert dw.dtype == dx.dtype == np.float32
    assert np.all(np.abs(dw - dw_want) <= 2e-5 * dw_mag + 1e-6), float(np.abs(dw - dw_want).max())
    assert np.all(np.abs(dx - dx_want) <= 2e-5 * dx_mag.max() + 1e-6), float(np.abs(dx - dx_want).max())


# 2-D max pooling of any window, stride and padding (ResNet's 3x3 stride-2 padded
# one; overlapping and clipped windows; windows of padding only under "full"):
# the gradient goes to the first maximum of each window, accumulating where
# windows overlap; rounded values make most windows hold ties; a NaN first in its
# window keeps the gradient (nothing compares greater than it).
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dshape,kernel,stride,pad,conv", [
    ((2, 3, 12, 12), (3, 3), (2, 2), (1, 1), "valid"),
    ((1, 2, 11, 9), (3, 2), (1, 2), (1, 0), "valid"),
    ((2, 2, 7, 8), (2, 3), (3, 2), (1, 1), "full"),
    ((1, 1, 5, 5), (5, 5), (1, 1), (2, 2), "valid"),
])
def test_max_pool_2d_backward_first_maximum(dtype, dshape, kernel, stride, pad, conv):
    x = np.round(rand(dshape, 24, dtype) * 2)
    x[0, 0, 0, 0] = np.nan
    kw = dict(kernel=kernel, stride=stride, pad=pad, pool_type="max", pooling_convention=conv)
    y = nd.Pooling(nd.array(x, dtype=dtype), **kw)
    og = rand(y.shape, 25, dtype)
    g = nd._internal._backward_Pooling(nd.array(og, dtype=dtype), nd.array(x, dtype=dtype), y, **kw).asnumpy()
    want = np.zeros(dshape, np.float64)
    n, c, h, w = dshape
    for i in range(y.shape[2]):
        r0, r1 = max(i * stride[0] - pad[0], 0), min(i * stride[0] - pad[0] + kernel[0], h)
        for j in range(y.shape[3]):
            c0, c1 = max(j * stride[1] - pad[1], 0), min(j * stride[1] - pad[1] + kernel[1], w)
            if r0 >= r1 or c0 >= c1:
                continue
            for a in range(n):
                for b in range(c):
                    win = x[a, b, r0:r1, c0:c1]
                    best = (r0, c0)
                    for p in range(r0, r1):
                        for q in range(c0, c1):
                            if x[a, b, p, q] > x[a, b, best[0], best[1]]:
                                best = (p, q)
                    assert win.size
                    want[a, b, best[0], best[1]] += og[a, b, i, j]
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-6)
