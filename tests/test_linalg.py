"""The linalg family (`mx.nd.linalg.*`, `mx.sym.linalg.*`, `linalg_*`): NumPy as the
oracle over float32/float64 and batch shapes, central-difference gradient checks for
every differentiable op, MXNet 1.9.1's gradient values on small cases, bad inputs."""

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError

NAMES = ["gemm", "gemm2", "potrf", "potri", "trmm", "trsm", "syrk", "sumlogdiag", "extractdiag",
         "makediag", "extracttrian", "maketrian", "gelqf", "syevd", "inverse", "det", "slogdet"]
DTYPES = [np.float32, np.float64]
BATCHES = [(), (3,), (2, 2)]


def tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)


def rng(seed=0):
    return np.random.RandomState(seed)


def spd(batch, n, seed=0):
    a = rng(seed).uniform(-1, 1, batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def lower_tri(batch, n, seed=0):
    a = np.tril(rng(seed).uniform(-1, 1, batch + (n, n)))
    idx = np.arange(n)
    a[..., idx, idx] = rng(seed + 1).uniform(1, 2, batch + (n,))
    return a


def nd(a, dtype):
    return mx.nd.array(np.asarray(a), dtype=dtype)


def T(a):
    return np.swapaxes(a, -1, -2)


# ---- names -----------------------------------------------------------------------


def test_namespaces():
    import oxnet.ndarray.linalg as ndl
    import oxnet.symbol.linalg as syl
    for n in NAMES:
        assert callable(getattr(mx.nd.linalg, n)), n
        assert callable(getattr(mx.sym.linalg, n)), n
        assert callable(getattr(mx.nd, "linalg_" + n)), n
        assert callable(getattr(mx.sym, "linalg_" + n)), n
        assert getattr(ndl, n) is getattr(mx.nd.linalg, n)
        assert getattr(syl, n) is getattr(mx.sym.linalg, n)


def test_symbolic_forward():
    a = mx.sym.var("a")
    s = mx.sym.linalg.trsm(mx.sym.linalg.potrf(a), a, alpha=2.0)
    x = spd((2,), 3)
    out = s.eval(ctx=mx.cpu(), a=nd(x, np.float64))[0].asnumpy()
    want = 2 * np.linalg.solve(np.linalg.cholesky(x), x)
    np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-12)
    q, l = mx.sym.linalg.gelqf(a)
    assert len(mx.sym.linalg.gelqf(a).list_outputs()) == 2
    assert len(mx.sym.linalg_slogdet(a).list_outputs()) == 2
    assert q is not None and l is not None


# ---- forward against NumPy ----------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("lower", [True, False])
def test_potrf_potri(dtype, batch, lower):
    a = spd(batch, 4)
    ln = np.linalg.cholesky(a)
    want = ln if lower else T(ln)
    b = nd(a, dtype)
    got = mx.nd.linalg.potrf(b, lower=lower)
    assert got.dtype == dtype and got.shape == a.shape
    np.testing.assert_allclose(got.asnumpy(), want, **tol(dtype))
    np.testing.assert_allclose(b.asnumpy(), a.astype(dtype))  # input intact
    inv = mx.nd.linalg.potri(got, lower=lower)
    np.testing.assert_allclose(inv.asnumpy(), np.linalg.inv(a), **tol(dtype))
    # Only the named triangle is read.
    junk = want + (np.triu(np.ones(4), 1) if lower else np.tril(np.ones(4), -1))
    np.testing.assert_allclose(mx.nd.linalg.potri(nd(junk, dtype), lower=lower).asnumpy(),
                               np.linalg.inv(a), **tol(dtype))


def op_a(a, lower, transpose):
    t = np.tril(a) if lower else np.triu(a)
    return T(t) if transpose else t


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [(), (2, 3)])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("rightside", [False, True])
@pytest.mark.parametrize("lower", [False, True])
def test_trmm_trsm(dtype, batch, transpose, rightside, lower):
    r = rng(1)
    a = r.uniform(-1, 1, batch + (3, 3)) + 3 * np.eye(3)
    b = r.uniform(-1, 1, batch + ((4, 3) if rightside else (3, 4)))
    t = op_a(a, lower, transpose)
    kw = dict(transpose=transpose, rightside=rightside, lower=lower, alpha=1.5)
    got = mx.nd.linalg.trmm(nd(a, dtype), nd(b, dtype), **kw).asnumpy()
    np.testing.assert_allclose(got, 1.5 * (b @ t if rightside else t @ b), **tol(dtype))
    got = mx.nd.linalg.trsm(nd(a, dtype), nd(b, dtype), **kw).asnumpy()
    want = 1.5 * (b @ np.linalg.inv(t) if rightside else np.linalg.solve(t, b))
    np.testing.assert_allclose(got, want, **tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
def test_syrk_sumlogdiag(dtype, batch):
    a = rng(2).uniform(-1, 1, batch + (3, 5))
    got = mx.nd.linalg.syrk(nd(a, dtype), alpha=0.5).asnumpy()
    np.testing.assert_allclose(got, 0.5 * a @ T(a), **tol(dtype))
    got = mx.nd.linalg.syrk(nd(a, dtype), transpose=True).asnumpy()
    np.testing.assert_allclose(got, T(a) @ a, **tol(dtype))
    s = spd(batch, 4)
    got = mx.nd.linalg.sumlogdiag(nd(s, dtype)).asnumpy()
    want = np.log(np.diagonal(s, axis1=-2, axis2=-1)).sum(-1)
    assert got.shape == (batch or (1,))
    np.testing.assert_allclose(got, np.reshape(want, batch or (1,)), **tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("offset", [0, 1, -2])
def test_diag(dtype, batch, offset):
    a = rng(3).uniform(-1, 1, batch + (4, 4))
    d = mx.nd.linalg.extractdiag(nd(a, dtype), offset=offset).asnumpy()
    np.testing.assert_allclose(d, np.diagonal(a, offset, -2, -1), **tol(dtype))
    m = mx.nd.linalg.makediag(nd(d, dtype), offset=offset).asnumpy()
    want = np.zeros(batch + (4, 4))
    for idx in np.ndindex(*batch):
        want[idx] = np.diag(d[idx], offset)
    np.testing.assert_allclose(m, want, **tol(dtype))


def trian_np(a, offset, lower):
    n = a.shape[-1]
    if offset > 0 or (offset == 0 and not lower):
        r, c = np.triu_indices(n, offset)
    else:
        r, c = np.tril_indices(n, offset)
    return r, c  # NumPy's order is row by row, as MXNet packs


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("offset,lower", [(0, True), (0, False), (1, True), (-1, False), (-2, True)])
def test_trian(dtype, batch, offset, lower):
    a = rng(4).uniform(-1, 1, batch + (4, 4))
    r, c = trian_np(a, offset, lower)
    t = mx.nd.linalg.extracttrian(nd(a, dtype), offset=offset, lower=lower).asnumpy()
    np.testing.assert_allclose(t, a[..., r, c], **tol(dtype))
    m = mx.nd.linalg.maketrian(nd(t, dtype), offset=offset, lower=lower).asnumpy()
    want = np.zeros_like(a)
    want[..., r, c] = a[..., r, c]
    np.testing.assert_allclose(m, want, **tol(dtype))


def test_trian_docs_examples():
    a = mx.nd.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    assert mx.nd.linalg.extracttrian(a).asnumpy().tolist() == [1, 4, 5, 7, 8, 9]
    assert mx.nd.linalg.extracttrian(a, lower=False).asnumpy().tolist() == [1, 2, 3, 5, 6, 9]
    assert mx.nd.linalg.extracttrian(a, 1).asnumpy().tolist() == [2, 3, 6]
    assert mx.nd.linalg.extracttrian(a, -1).asnumpy().tolist() == [4, 7, 8]
    v = mx.nd.array([1.0, 2.0, 3.0])
    assert mx.nd.linalg.maketrian(v, offset=1).asnumpy().tolist() == [[0, 1, 2], [0, 0, 3], [0, 0, 0]]
    assert mx.nd.linalg.maketrian(v, lower=False).asnumpy().tolist() == [[1, 2], [0, 3]]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
def test_gelqf(dtype, batch):
    a = rng(5).uniform(-1, 1, batch + (3, 5))
    q, l = mx.nd.linalg.gelqf(nd(a, dtype))
    q, l = q.asnumpy(), l.asnumpy()
    assert q.shape == a.shape and l.shape == batch + (3, 3)
    for idx in np.ndindex(*batch):
        qq, rr = np.linalg.qr(a[idx].T)  # LAPACK's signs, as MXNet's gelqf gives
        np.testing.assert_allclose(q[idx], qq.T, **tol(dtype))
        np.testing.assert_allclose(l[idx], rr.T, **tol(dtype))


def syevd_np(a):
    w, v = np.linalg.eigh(a)
    u = T(v).copy()
    for idx in np.ndindex(*u.shape[:-1]):
        row = u[idx]
        if row[np.argmax(np.abs(row))] < 0:
            u[idx] = -row
    return u, w


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
def test_syevd(dtype, batch):
    a = spd(batch, 4, seed=6) - 3 * np.eye(4)
    u, w = mx.nd.linalg.syevd(nd(a, dtype))
    wu, ww = syevd_np(a)
    np.testing.assert_allclose(w.asnumpy(), ww, **tol(dtype))
    np.testing.assert_allclose(u.asnumpy(), wu, rtol=1e-3 if dtype == np.float32 else 1e-8,
                               atol=1e-3 if dtype == np.float32 else 1e-8)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
def test_inverse_det_slogdet(dtype, batch):
    a = rng(7).uniform(-1, 1, batch + (4, 4)) + np.eye(4)
    np.testing.assert_allclose(mx.nd.linalg.inverse(nd(a, dtype)).asnumpy(), np.linalg.inv(a),
                               **tol(dtype))
    shape = batch or (1,)
    d = mx.nd.linalg.det(nd(a, dtype)).asnumpy()
    assert d.shape == shape
    np.testing.assert_allclose(d, np.reshape(np.linalg.det(a), shape), **tol(dtype))
    s, ld = mx.nd.linalg.slogdet(nd(a, dtype))
    ws, wl = np.linalg.slogdet(a)
    np.testing.assert_allclose(s.asnumpy(), np.reshape(ws, shape))
    np.testing.assert_allclose(ld.asnumpy(), np.reshape(wl, shape), **tol(dtype))


def test_singular_det_slogdet():
    a = mx.nd.array([[1.0, 2.0], [2.0, 4.0]])
    assert mx.nd.linalg.det(a).asnumpy().tolist() == [0.0]
    s, ld = mx.nd.linalg.slogdet(a)
    assert s.asnumpy().tolist() == [0.0] and ld.asnumpy().tolist() == [-np.inf]


# ---- gradients ------------------------------------------------------------------------


def numeric_grad(f, xs, eps=1e-6):
    """Central differences of sum(f(*xs) * heads) w.r.t. each x (float64)."""
    outs = f(*[nd(x, np.float64) for x in xs])
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    heads = [rng(99 + i).uniform(-1, 1, o.shape) for i, o in enumerate(outs)]

    def val(arrs):
        o = f(*[nd(x, np.float64) for x in arrs])
        o = o if isinstance(o, (list, tuple)) else [o]
        return sum(float((oi.asnumpy() * h).sum()) for oi, h in zip(o, heads))
    grads = []
    for k, x in enumerate(xs):
        g = np.zeros_like(x)
        for idx in np.ndindex(*x.shape):
            xp = [v.copy() for v in xs]
            xp[k][idx] += eps
            fp = val(xp)
            xp[k][idx] -= 2 * eps
            g[idx] = (fp - val(xp)) / (2 * eps)
        grads.append(g)
    return heads, grads


def check_grad(f, xs, rtol=1e-5, atol=1e-6):
    heads, want = numeric_grad(f, xs)
    arrs = [nd(x, np.float64) for x in xs]
    for a in arrs:
        a.attach_grad()
    with mx.autograd.record():
        outs = f(*arrs)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    mx.autograd.backward(list(outs), [nd(h, np.float64) for h in heads])
    for a, w in zip(arrs, want):
        np.testing.assert_allclose(a.grad.asnumpy(), w, rtol=rtol, atol=atol)


def sym_(x):
    """(x + x^T) / 2: the symmetric input that potrf/syevd differentiate against."""
    return (x + mx.nd.swapaxes(x, -1, -2)) * 0.5


@pytest.mark.parametrize("lower", [True, False])
def test_grad_potrf_potri(lower):
    x = spd((2,), 3, seed=8)
    check_grad(lambda a: mx.nd.linalg.potrf(sym_(a), lower=lower), [x])
    l = np.linalg.cholesky(x)
    l = l if lower else T(l)
    check_grad(lambda a: mx.nd.linalg.potri(a, lower=lower), [l])


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("rightside", [False, True])
@pytest.mark.parametrize("lower", [False, True])
def test_grad_trmm_trsm(transpose, rightside, lower):
    r = rng(9)
    a = r.uniform(-1, 1, (2, 3, 3)) + 3 * np.eye(3)
    b = r.uniform(-1, 1, (2, 2, 3) if rightside else (2, 3, 2))
    kw = dict(transpose=transpose, rightside=rightside, lower=lower, alpha=0.7)
    check_grad(lambda x, y: mx.nd.linalg.trmm(x, y, **kw), [a, b])
    check_grad(lambda x, y: mx.nd.linalg.trsm(x, y, **kw), [a, b])


@pytest.mark.parametrize("transpose", [False, True])
def test_grad_syrk(transpose):
    a = rng(10).uniform(-1, 1, (2, 3, 4))
    check_grad(lambda x: mx.nd.linalg.syrk(x, transpose=transpose, alpha=1.3), [a])


def test_grad_sumlogdiag_diag_trian():
    check_grad(lambda x: mx.nd.linalg.sumlogdiag(x), [spd((2,), 3, seed=11)])
    check_grad(lambda x: mx.nd.linalg.sumlogdiag(x), [spd((), 3, seed=11)])
    a = rng(12).uniform(-1, 1, (2, 4, 4))
    check_grad(lambda x: mx.nd.linalg.extractdiag(x, offset=-1), [a])
    check_grad(lambda x: mx.nd.linalg.makediag(x, offset=2), [a[:, 0]])
    check_grad(lambda x: mx.nd.linalg.extracttrian(x, offset=1), [a])
    check_grad(lambda x: mx.nd.linalg.extracttrian(x, lower=False), [a])
    check_grad(lambda x: mx.nd.linalg.maketrian(x, offset=-1), [a[:, 0, :3]])


def test_grad_gelqf_syevd():
    a = rng(13).uniform(-1, 1, (2, 3, 4))
    check_grad(lambda x: list(mx.nd.linalg.gelqf(x)), [a])
    s = spd((2,), 3, seed=14)
    check_grad(lambda x: list(mx.nd.linalg.syevd(sym_(x))), [s])


def test_grad_inverse_det_slogdet():
    a = rng(15).uniform(-1, 1, (2, 3, 3)) + 2 * np.eye(3)
    check_grad(lambda x: mx.nd.linalg.inverse(x), [a])
    check_grad(lambda x: mx.nd.linalg.det(x), [a])
    check_grad(lambda x: mx.nd.linalg.det(x), [a[0]])
    check_grad(lambda x: mx.nd.linalg.slogdet(x)[1], [a])


def test_grads_match_mxnet_values():
    """Values MXNet 1.9.1 gives on these small cases (its conventions: potrf and
    syevd return a symmetric gradient, potri a lower triangular one)."""
    def grad(f, x, head=None):
        x = nd(x, np.float64)
        x.attach_grad()
        with mx.autograd.record():
            y = f(x)
        y.backward(None if head is None else nd(head, np.float64))
        return x.grad.asnumpy()
    g = grad(mx.nd.linalg.potrf, [[4.0, 1], [1, 3]], [[1.0, 0], [2, 3]])
    np.testing.assert_allclose(g, [[0.18153337710833067, 0.2738664915666773],
                                   [0.2738664915666773, 0.9045340337332909]], rtol=1e-12)
    g = grad(mx.nd.linalg.potri, [[2.0, 0], [1, 3]], [[1.0, 5], [2, 3]])
    np.testing.assert_allclose(g, [[-0.08333333333333336, 0.0],
                                   [-0.3333333333333333, 0.018518518518518524]], rtol=1e-12, atol=1e-15)
    w = nd([[1, 2], [3, 4.0]], np.float64)

    def syevd_loss(x):
        u, lam = mx.nd.linalg.syevd(x)
        return (u * w).sum() + (lam * lam).sum()
    g = grad(syevd_loss, [[4.0, 1], [1, 3]])
    np.testing.assert_allclose(g, [[8.015340627107909, 1.9923296864460447],
                                   [1.992329686446045, 5.9846593728920885]], rtol=1e-10)
    w3 = nd([[1, 2, 3], [3, 4.0, 5]], np.float64)

    def gelqf_loss(x):
        q, l = mx.nd.linalg.gelqf(x)
        return (q * w3).sum() + (l * l).sum()
    g = grad(gelqf_loss, [[4.0, 1, 2], [1, 3, 5]])
    np.testing.assert_allclose(g, [[7.687165633898192, 2.418532361568469, 4.416402551419379],
                                   [1.9902694507535352, 5.824850113563649, 10.107036041711103]],
                               rtol=1e-10)


# ---- bad inputs -----------------------------------------------------------------------


def test_potrf_not_positive_definite_names_batch_index():
    a = np.stack([np.eye(2) * 4, [[1.0, 2], [2, 1]], np.eye(2)])
    x = nd(a, np.float64)
    with pytest.raises(MXNetError, match=r"(?s)_linalg_potrf.*batch index 1.*positive definite"):
        mx.nd.linalg.potrf(x).asnumpy()
    np.testing.assert_array_equal(x.asnumpy(), a)
    # The array stays usable.
    assert mx.nd.linalg.potrf(x[0:1]).asnumpy().shape == (1, 2, 2)


def test_bad_shapes_and_dtypes_name_the_op():
    sq = mx.nd.ones((2, 3, 3))
    with pytest.raises(MXNetError, match=r"(?s)_linalg_potrf.*square"):
        mx.nd.linalg.potrf(mx.nd.ones((2, 3)))
    with pytest.raises(MXNetError, match=r"(?s)_linalg_inverse.*at least 2 dimensions"):
        mx.nd.linalg.inverse(mx.nd.ones((3,)))
    with pytest.raises(MXNetError, match=r"(?s)_linalg_det.*int32"):
        mx.nd.linalg.det(mx.nd.ones((3, 3), dtype="int32"))
    with pytest.raises(MXNetError, match=r"(?s)_linalg_trsm.*do not match"):
        mx.nd.linalg.trsm(sq, mx.nd.ones((2, 4, 3)))
    with pytest.raises(MXNetError, match=r"(?s)_linalg_trmm.*do not match"):
        mx.nd.linalg.trmm(sq, mx.nd.ones((3, 3, 3)))
    with pytest.raises(MXNetError, match=r"(?s)_linalg_trsm.*dtype"):
        mx.nd.linalg.trsm(sq, mx.nd.ones((2, 3, 3), dtype="float64"))
    with pytest.raises(MXNetError, match=r"(?s)_linalg_maketrian.*triangular number"):
        mx.nd.linalg.maketrian(mx.nd.ones((4,)))
    with pytest.raises(MXNetError, match=r"(?s)_linalg_extractdiag.*offset"):
        mx.nd.linalg.extractdiag(sq, offset=3)
    with pytest.raises(MXNetError, match=r"(?s)_linalg_gelqf.*rows"):
        mx.nd.linalg.gelqf(mx.nd.ones((4, 3)))
    with pytest.raises(MXNetError, match=r"(?s)_linalg_inverse.*batch index 0.*singular"):
        mx.nd.linalg.inverse(mx.nd.array([[1.0, 2], [2, 4]])).asnumpy()
    with pytest.raises(MXNetError, match=r"(?s)_linalg_potrf.*lower"):
        mx.nd.linalg.potrf(sq, lower="maybe")
