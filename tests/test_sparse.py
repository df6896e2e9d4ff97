"""Sparse storage (row_sparse, csr): creation, conversion, operators, optimizers,
KVStore, autograd, Gluon, files. NumPy/SciPy are the oracles."""

import io
import pickle

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError

sp = pytest.importorskip("scipy.sparse")


def rand_dense(shape, density=0.3, seed=0, dtype=np.float32):
    rng = np.random.RandomState(seed)
    a = rng.uniform(-1, 1, size=shape).astype(dtype)
    a[rng.uniform(size=shape) > density] = 0
    return a


def rand_rows(shape, density=0.4, seed=0):
    rng = np.random.RandomState(seed)
    a = rng.uniform(-1, 1, size=shape).astype(np.float32)
    a[rng.uniform(size=shape[0]) > density] = 0
    return a


# -- creation and conversion ---------------------------------------------------------


def test_csr_from_parts_and_back():
    d = rand_dense((5, 7))
    s = sp.csr_matrix(d)
    c = mx.nd.sparse.csr_matrix((s.data, s.indices, s.indptr), shape=d.shape)
    assert isinstance(c, mx.nd.sparse.CSRNDArray) and isinstance(c, mx.nd.NDArray)
    assert c.stype == "csr" and c.shape == (5, 7) and c.dtype == np.float32
    np.testing.assert_array_equal(c.asnumpy(), d)
    np.testing.assert_array_equal(c.indptr.asnumpy(), s.indptr)
    np.testing.assert_array_equal(c.indices.asnumpy(), s.indices)
    np.testing.assert_array_equal(c.data.asnumpy(), s.data)
    assert c.indices.dtype == np.int64 and c.indptr.dtype == np.int64
    back = c.asscipy()
    np.testing.assert_array_equal(back.toarray(), d)


def test_csr_from_coo_scipy_and_dense():
    d = rand_dense((6, 4), seed=1)
    coo = sp.coo_matrix(d)
    c = mx.nd.sparse.csr_matrix((coo.data, (coo.row, coo.col)), shape=d.shape)
    np.testing.assert_array_equal(c.asnumpy(), d)
    c2 = mx.nd.sparse.array(sp.csr_matrix(d))
    np.testing.assert_array_equal(c2.asnumpy(), d)
    c3 = mx.nd.array(d).tostype("csr")
    assert c3.stype == "csr"
    np.testing.assert_array_equal(c3.asnumpy(), d)
    # nnz: only nonzeros are stored
    assert c3.data.shape[0] == np.count_nonzero(d)
    e = mx.nd.sparse.csr_matrix((3, 4))
    assert e.shape == (3, 4) and e.data.shape == (0,)
    np.testing.assert_array_equal(e.asnumpy(), np.zeros((3, 4)))


def test_row_sparse_creation_and_conversion():
    d = rand_rows((8, 3))
    r = mx.nd.array(d).tostype("row_sparse")
    assert isinstance(r, mx.nd.sparse.RowSparseNDArray)
    present = np.where(np.abs(d).sum(axis=1) != 0)[0]
    np.testing.assert_array_equal(r.indices.asnumpy(), present)
    np.testing.assert_array_equal(r.data.asnumpy(), d[present])
    np.testing.assert_array_equal(r.asnumpy(), d)
    r2 = mx.nd.sparse.row_sparse_array((d[present], present), shape=d.shape)
    np.testing.assert_array_equal(r2.asnumpy(), d)
    z = mx.nd.zeros((4, 2), stype="row_sparse")
    assert z.stype == "row_sparse" and z.indices.shape == (0,)
    np.testing.assert_array_equal(z.asnumpy(), np.zeros((4, 2)))
    assert r.tostype("default").stype == "default"
    assert "RowSparseNDArray 8x3 @cpu(0)" in repr(r)


def test_copy_astype_and_setitem():
    d = rand_dense((4, 5), seed=2)
    c = mx.nd.array(d).tostype("csr")
    c2 = c.copy()
    assert c2.stype == "csr"
    np.testing.assert_array_equal(c2.asnumpy(), d)
    c64 = c.astype(np.float64)
    assert c64.dtype == np.float64 and c64.stype == "csr"
    np.testing.assert_allclose(c64.asnumpy(), d)
    z = mx.nd.sparse.zeros("csr", (4, 5))
    z[:] = c
    np.testing.assert_array_equal(z.asnumpy(), d)
    z[:] = 2 * d
    np.testing.assert_array_equal(z.asnumpy(), 2 * d)
    dense = mx.nd.zeros((4, 5))
    c.copyto(dense)
    np.testing.assert_array_equal(dense.asnumpy(), d)
    with pytest.raises(ValueError):
        c[1:2] = c
    with pytest.raises(NotImplementedError):
        c.reshape((5, 4))


def test_csr_row_slicing():
    d = rand_dense((6, 5), seed=3)
    c = mx.nd.array(d).tostype("csr")
    np.testing.assert_array_equal(c[2:5].asnumpy(), d[2:5])
    np.testing.assert_array_equal(c[1].asnumpy(), d[1:2])
    s = mx.nd.slice(c, begin=(1, 1), end=(4, 4))
    assert s.stype == "csr"
    np.testing.assert_array_equal(s.asnumpy(), d[1:4, 1:4])


def test_check_format_errors():
    good = mx.nd.sparse.csr_matrix(([1.0, 2.0], [0, 2], [0, 1, 2]), shape=(2, 3))
    good.check_format()
    unsorted = mx.nd.sparse.csr_matrix(([1.0, 2.0], [2, 0], [0, 2, 2]), shape=(2, 3))
    with pytest.raises(MXNetError, match="sorted"):
        unsorted.check_format()
    out_of_range = mx.nd.sparse.csr_matrix(([1.0], [5], [0, 1, 1]), shape=(2, 3))
    with pytest.raises(MXNetError, match="out of range"):
        out_of_range.check_format()
    out_of_range.check_format(full_check=False)
    rsp = mx.nd.sparse.row_sparse_array(([[1.0], [2.0]], [3, 1]), shape=(4, 1))
    with pytest.raises(MXNetError, match="sorted"):
        rsp.check_format()
    # wrong part lengths are refused at creation, naming what is wrong
    with pytest.raises(MXNetError, match="indptr"):
        mx.nd.sparse.csr_matrix(([1.0], [0], [0, 1]), shape=(3, 3))
    with pytest.raises(MXNetError, match="indices"):
        mx.nd.sparse.csr_matrix(([1.0, 2.0], [0], [0, 1, 2]), shape=(2, 3))
    with pytest.raises(MXNetError, match="row_sparse"):
        mx.nd.sparse.row_sparse_array(([[1.0, 2.0]], [0, 1]), shape=(4, 2))


# -- operators -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dot_csr_dense(dtype):
    a = rand_dense((9, 6), seed=4, dtype=dtype)
    b = np.random.RandomState(5).randn(6, 4).astype(dtype)
    c = mx.nd.array(a, dtype=dtype).tostype("csr")
    out = mx.nd.dot(c, mx.nd.array(b, dtype=dtype))
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), a @ b, rtol=1e-5, atol=1e-6)
    # transpose_b
    bt = np.ascontiguousarray(b.T)
    out = mx.nd.dot(c, mx.nd.array(bt, dtype=dtype), transpose_b=True)
    np.testing.assert_allclose(out.asnumpy(), a @ b, rtol=1e-5, atol=1e-6)


def test_dot_csr_transposed_gives_row_sparse():
    a = rand_dense((10, 8), density=0.15, seed=6)
    b = np.random.RandomState(7).randn(10, 3).astype(np.float32)
    c = mx.nd.array(a).tostype("csr")
    out = mx.nd.dot(c, mx.nd.array(b), transpose_a=True)
    assert out.stype == "row_sparse"
    np.testing.assert_allclose(out.asnumpy(), a.T @ b, rtol=1e-5, atol=1e-6)
    cols = np.where(np.abs(a).sum(axis=0) != 0)[0]
    np.testing.assert_array_equal(out.indices.asnumpy(), cols)
    dense = mx.nd.dot(c, mx.nd.array(b), transpose_a=True, forward_stype="default")
    assert dense.stype == "default"
    np.testing.assert_allclose(dense.asnumpy(), a.T @ b, rtol=1e-5, atol=1e-6)


def test_dot_dense_csr_and_rsp_rhs():
    a = np.random.RandomState(8).randn(3, 6).astype(np.float32)
    b = rand_dense((6, 5), seed=9)
    out = mx.nd.dot(mx.nd.array(a), mx.nd.array(b).tostype("csr"))
    assert out.stype == "csr"
    np.testing.assert_allclose(out.asnumpy(), a @ b, rtol=1e-5, atol=1e-6)
    csr = mx.nd.array(rand_dense((4, 6), seed=10)).tostype("csr")
    r = rand_rows((6, 2), seed=11)
    out = mx.nd.dot(csr, mx.nd.array(r).tostype("row_sparse"))
    np.testing.assert_allclose(out.asnumpy(), csr.asnumpy() @ r, rtol=1e-5, atol=1e-6)


def test_dot_dtype_mismatch_and_bad_shapes():
    c = mx.nd.array(rand_dense((3, 4))).tostype("csr")
    with pytest.raises(MXNetError, match="dot"):
        mx.nd.dot(c, mx.nd.ones((5, 2)))
    with pytest.raises(MXNetError, match="dot"):
        mx.nd.dot(c, mx.nd.ones((4, 2), dtype="float64")).wait_to_read()


def test_elemwise_storage_types():
    a, b = rand_rows((6, 3), seed=12), rand_rows((6, 3), seed=13)
    ra, rb = mx.nd.array(a).tostype("row_sparse"), mx.nd.array(b).tostype("row_sparse")
    for fn, ref in [(mx.nd.elemwise_add, a + b), (mx.nd.elemwise_sub, a - b), (mx.nd.elemwise_mul, a * b)]:
        out = fn(ra, rb)
        assert out.stype == "row_sparse"
        np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-6)
    ca, cb = mx.nd.array(rand_dense((4, 5), seed=14)).tostype("csr"), mx.nd.array(rand_dense((4, 5), seed=15)).tostype("csr")
    out = ca + cb
    assert out.stype == "csr"
    np.testing.assert_allclose(out.asnumpy(), ca.asnumpy() + cb.asnumpy(), rtol=1e-6)
    dense = mx.nd.array(b)
    out = mx.nd.elemwise_sub(ra, dense)
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), a - b, rtol=1e-6)
    out = mx.nd.elemwise_sub(dense, ra)
    np.testing.assert_allclose(out.asnumpy(), b - a, rtol=1e-6)
    out = mx.nd.elemwise_mul(ra, dense)
    assert out.stype == "row_sparse"
    np.testing.assert_allclose(out.asnumpy(), a * b, rtol=1e-6)
    # scalars and zero-preserving unary ops keep the storage type
    for out, ref in [(ra * 3, a * 3), (ra / 2, a / 2), (-ra, -a), (mx.nd.abs(ra), np.abs(a)),
                     (mx.nd.square(ca), ca.asnumpy() ** 2), (mx.nd.sqrt(mx.nd.abs(ca)), np.sqrt(np.abs(ca.asnumpy())))]:
        assert out.stype != "default"
        np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-6)
    # a non-zero-preserving op falls back to dense
    out = ra + 1
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), a + 1, rtol=1e-6)
    out = mx.nd.exp(ra)
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), np.exp(a), rtol=1e-6)


def test_inplace_sparse_arithmetic():
    a = rand_rows((5, 2), seed=16)
    r = mx.nd.array(a).tostype("row_sparse")
    r += r
    assert r.stype == "row_sparse"
    np.testing.assert_allclose(r.asnumpy(), 2 * a, rtol=1e-6)
    r *= 0.5
    np.testing.assert_allclose(r.asnumpy(), a, rtol=1e-6)


def test_retain_add_n_square_sum_zeros_like():
    a = rand_rows((7, 3), density=0.6, seed=17)
    r = mx.nd.array(a).tostype("row_sparse")
    kept = mx.nd.sparse.retain(r, mx.nd.array([0, 2, 5, 6], dtype="int64"))
    ref = np.zeros_like(a)
    ref[[0, 2, 5, 6]] = a[[0, 2, 5, 6]]
    assert kept.stype == "row_sparse"
    np.testing.assert_array_equal(kept.asnumpy(), ref)
    # a dense input (a graph's sparse argument bound densely) keeps the listed rows
    np.testing.assert_array_equal(mx.nd.sparse.retain(mx.nd.array(a), mx.nd.array([2, 5])).asnumpy()[[2, 5]], a[[2, 5]])
    assert mx.nd.sparse.retain(mx.nd.array(a), mx.nd.array([2])).asnumpy()[0].sum() == 0
    with pytest.raises(MXNetError, match="_sparse_retain"):
        mx.nd.sparse.retain(r, mx.nd.array([9])).wait_to_read()
    b = rand_rows((7, 3), seed=18)
    s = mx.nd.add_n(r, mx.nd.array(b).tostype("row_sparse"), r)
    assert s.stype == "row_sparse"
    np.testing.assert_allclose(s.asnumpy(), 2 * a + b, rtol=1e-6)
    q = mx.nd._internal._square_sum(r, axis=1, keepdims=True)
    assert q.stype == "row_sparse"
    np.testing.assert_allclose(q.asnumpy(), (a ** 2).sum(axis=1, keepdims=True), rtol=1e-5)
    q0 = mx.nd._internal._square_sum(r, axis=0)
    assert q0.stype == "default"
    np.testing.assert_allclose(q0.asnumpy(), (a ** 2).sum(axis=0), rtol=1e-5)
    z = mx.nd.zeros_like(r)
    assert z.stype == "row_sparse" and z.indices.shape == (0,)


def test_fallback_ops_give_dense_results():
    d = rand_dense((4, 3), seed=19)
    c = mx.nd.array(d).tostype("csr")
    np.testing.assert_allclose(mx.nd.sum(c, axis=0).asnumpy(), d.sum(axis=0), rtol=1e-6)
    np.testing.assert_allclose(mx.nd.mean(c, axis=1).asnumpy(), d.mean(axis=1), rtol=1e-6)
    out = mx.nd.zeros((4, 3), stype="row_sparse")
    mx.nd.exp(mx.nd.array(d), out=out)
    assert out.stype == "row_sparse"
    np.testing.assert_allclose(out.asnumpy(), np.exp(d), rtol=1e-6)


def test_broadcast_mul_csr_by_vector():
    d = rand_dense((3, 4), seed=20)
    c = mx.nd.array(d).tostype("csr")
    v = np.array([[1.0], [2.0], [3.0]], dtype=np.float32)
    out = mx.nd.broadcast_mul(c, mx.nd.array(v))
    assert out.stype == "csr"
    np.testing.assert_allclose(out.asnumpy(), d * v, rtol=1e-6)
    w = np.array([[1.0, 2.0, 4.0, 8.0]], dtype=np.float32)
    out = mx.nd.broadcast_div(c, mx.nd.array(w))
    np.testing.assert_allclose(out.asnumpy(), d / w, rtol=1e-6)


# -- optimizers --------------------------------------------------------------------------


def test_lazy_sgd_updates_present_rows_only():
    w = np.random.RandomState(21).randn(6, 2).astype(np.float32)
    g = np.zeros_like(w)
    g[[1, 4]] = [[1.0, 2.0], [3.0, 4.0]]
    weight = mx.nd.array(w)
    grad = mx.nd.array(g).tostype("row_sparse")
    mx.nd.sgd_update(weight, grad, lr=0.1, wd=0.5, out=weight)
    ref = w.copy()
    ref[[1, 4]] = (1 - 0.1 * 0.5) * w[[1, 4]] - 0.1 * g[[1, 4]]
    np.testing.assert_allclose(weight.asnumpy(), ref, rtol=1e-6)
    # lazy_update=False: the standard update (every row decays)
    weight = mx.nd.array(w)
    mx.nd.sgd_update(weight, grad, lr=0.1, wd=0.5, lazy_update=False, out=weight)
    np.testing.assert_allclose(weight.asnumpy(), (1 - 0.05) * w - 0.1 * g, rtol=1e-6)


def test_lazy_adam_updates_states_of_present_rows():
    rng = np.random.RandomState(22)
    w = rng.randn(5, 3).astype(np.float32)
    g = np.zeros_like(w)
    g[[0, 3]] = rng.randn(2, 3)
    weight, mean, var = mx.nd.array(w), mx.nd.zeros((5, 3)), mx.nd.zeros((5, 3))
    mx.nd.adam_update(weight, mx.nd.array(g).tostype("row_sparse"), mean, var, lr=0.01, out=weight)
    m = 0.1 * g
    v = 0.001 * g * g
    ref = w - 0.01 * m / (np.sqrt(v) + 1e-8)
    np.testing.assert_allclose(weight.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mean.asnumpy(), m, rtol=1e-6)
    untouched = [1, 2, 4]
    np.testing.assert_array_equal(weight.asnumpy()[untouched], w[untouched])


def test_sparse_grad_out_of_range_row_is_an_error():
    weight = mx.nd.ones((3, 2))
    grad = mx.nd.sparse.row_sparse_array(([[1.0, 1.0]], [5]), shape=(3, 2))
    with pytest.raises(MXNetError):
        mx.nd.sgd_update(weight, grad, lr=0.1, out=weight).wait_to_read()


def test_optimizer_class_with_row_sparse_grad():
    opt = mx.optimizer.SGD(learning_rate=0.5, momentum=0.9)
    upd = mx.optimizer.get_updater(opt)
    w = mx.nd.ones((4, 2))
    g = mx.nd.sparse.row_sparse_array(([[1.0, 1.0]], [2]), shape=(4, 2))
    upd(0, g, w)
    ref = np.ones((4, 2), dtype=np.float32)
    ref[2] -= 0.5
    np.testing.assert_allclose(w.asnumpy(), ref, rtol=1e-6)


# -- autograd and Gluon ----------------------------------------------------------------


def test_attach_grad_row_sparse():
    w = mx.nd.array(np.arange(12, dtype=np.float32).reshape(6, 2))
    w.attach_grad(stype="row_sparse")
    idx = mx.nd.array([1, 4, 1])
    with mx.autograd.record():
        y = mx.nd.Embedding(idx, w, input_dim=6, output_dim=2)
        loss = (y * y).sum()
    loss.backward()
    g = w.grad
    assert g.stype == "row_sparse"
    ref = np.zeros((6, 2), dtype=np.float32)
    wn = w.asnumpy()
    for i in [1, 4, 1]:
        ref[i] += 2 * wn[i]
    np.testing.assert_allclose(g.asnumpy(), ref, rtol=1e-6)
    np.testing.assert_array_equal(g.indices.asnumpy(), [1, 4])


def test_gluon_embedding_sparse_grad_trains_used_rows():
    net = mx.gluon.nn.Embedding(10, 3, sparse_grad=True)
    net.initialize(mx.init.One())
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0, "wd": 0.1})
    x = mx.nd.array([2, 7])
    with mx.autograd.record():
        loss = net(x).sum()
    loss.backward()
    assert net.weight.grad().stype == "row_sparse"
    trainer.step(1)
    w = net.weight.data().asnumpy()
    ref = np.ones((10, 3), dtype=np.float32)
    ref[[2, 7]] = (1 - 0.1) * 1 - 1.0
    np.testing.assert_allclose(w, ref, rtol=1e-6)


def test_row_sparse_parameter_through_trainer():
    p = mx.gluon.Parameter("w", shape=(6, 2), stype="row_sparse", grad_stype="row_sparse")
    p.initialize(init=mx.init.One())
    with pytest.raises(RuntimeError):
        p.data()
    trainer = mx.gluon.Trainer([p], "sgd", {"learning_rate": 1.0})
    rows = p.row_sparse_data(mx.nd.array([0, 3], dtype="int64"))
    assert rows.stype == "row_sparse"
    np.testing.assert_array_equal(rows.indices.asnumpy(), [0, 3])
    g = p.list_grad()[0]
    mx.nd.sparse.row_sparse_array(([[1.0, 1.0]], [3]), shape=(6, 2)).copyto(g)
    trainer.step(1)
    full = p.row_sparse_data(mx.nd.arange(0, 6, dtype="int64")).asnumpy()
    ref = np.ones((6, 2), dtype=np.float32)
    ref[3] = 0
    np.testing.assert_allclose(full, ref)


# -- KVStore -------------------------------------------------------------------------------


def test_kvstore_row_sparse_push_and_pull():
    kv = mx.kv.create("local")
    shape = (6, 2)
    kv.init("e", mx.nd.zeros(shape, stype="row_sparse"))
    a = mx.nd.sparse.row_sparse_array(([[1.0, 1.0]], [1]), shape=shape)
    b = mx.nd.sparse.row_sparse_array(([[2.0, 2.0], [3.0, 3.0]], [1, 4]), shape=shape)
    kv.push("e", [a, b])
    out = mx.nd.zeros(shape, stype="row_sparse")
    kv.row_sparse_pull("e", out=out, row_ids=mx.nd.array([4, 4, 0], dtype="int64"))
    ref = np.zeros(shape, dtype=np.float32)
    ref[4] = 3
    np.testing.assert_array_equal(out.asnumpy(), ref)
    full = mx.nd.zeros(shape, stype="row_sparse")
    kv.pull("e", out=full, ignore_sparse=False)
    ref[1] = 3
    np.testing.assert_array_equal(full.asnumpy(), ref)
    with pytest.raises(MXNetError, match="row_sparse"):
        kv.row_sparse_pull("e", out=mx.nd.zeros(shape), row_ids=mx.nd.array([1]))
    kv.init("d", mx.nd.zeros(shape))
    with pytest.raises(MXNetError, match="row_sparse"):
        kv.row_sparse_pull("d", out=out, row_ids=mx.nd.array([1]))


# -- files and pickling --------------------------------------------------------------------


def test_save_load_and_pickle(tmp_path):
    c = mx.nd.array(rand_dense((4, 5), seed=23)).tostype("csr")
    r = mx.nd.array(rand_rows((6, 2), seed=24)).tostype("row_sparse")
    d = mx.nd.ones((2, 2))
    f = str(tmp_path / "x.params")
    mx.nd.save(f, {"c": c, "r": r, "d": d})
    back = mx.nd.load(f)
    assert back["c"].stype == "csr" and back["r"].stype == "row_sparse" and back["d"].stype == "default"
    for k, v in [("c", c), ("r", r), ("d", d)]:
        np.testing.assert_array_equal(back[k].asnumpy(), v.asnumpy())
    for a in (c, r):
        b = pickle.loads(pickle.dumps(a))
        assert b.stype == a.stype
        np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())


def test_fuzzed_sparse_files_raise_mxneterror(tmp_path):
    c = mx.nd.array(rand_dense((5, 6), seed=25)).tostype("csr")
    r = mx.nd.array(rand_rows((5, 3), seed=26)).tostype("row_sparse")
    f = tmp_path / "s.params"
    mx.nd.save(str(f), [c, r])
    raw = f.read_bytes()
    rng = np.random.RandomState(0)
    for trial in range(300):
        buf = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            buf[rng.randint(len(buf))] = rng.randint(256)
        if trial % 5 == 0:
            buf = buf[: rng.randint(len(buf))]
        try:
            arrays = mx.nd.load_frombuffer(bytes(buf))
        except MXNetError:
            continue
        for a in arrays:
            # a loaded sparse array is well-formed (its logical shape may be huge)
            if a.stype != "default":
                a.check_format()
                a.data.asnumpy()
            else:
                a.asnumpy()


@pytest.mark.parametrize("req", ["write", "add"])
def test_embedding_sparse_grad_is_made_sparse(req):
    # Embedding(sparse_grad=True) with a row_sparse buffer: rows of repeated ids summed,
    # only the ids present stored; 'add' accumulates over two backward passes
    w = mx.nd.array(np.arange(20, dtype=np.float32).reshape(10, 2))
    w.attach_grad(grad_req=req, stype="row_sparse")
    idx = mx.nd.array([[7, 2], [7, 9]])
    head = np.random.RandomState(27).randn(2, 2, 2).astype(np.float32)
    for _ in range(2 if req == "add" else 1):
        with mx.autograd.record():
            y = mx.nd.Embedding(idx, w, input_dim=10, output_dim=2, sparse_grad=True)
        y.backward(mx.nd.array(head))
    ref = np.zeros((10, 2), dtype=np.float32)
    for (i, j), r in np.ndenumerate(idx.asnumpy()):
        ref[int(r)] += head[i, j]
    if req == "add":
        ref *= 2
    g = w.grad
    assert g.stype == "row_sparse"
    np.testing.assert_array_equal(g.indices.asnumpy(), [2, 7, 9])
    np.testing.assert_allclose(g.asnumpy(), ref, rtol=1e-6)


def test_lazy_update_of_a_row_sparse_weight():
    # a row_sparse weight (all rows stored) with a row_sparse gradient: only the
    # gradient's rows change, the result stays row_sparse
    w = np.random.RandomState(28).randn(5, 2).astype(np.float32)
    weight = mx.nd.array(w).tostype("row_sparse")
    mom = mx.nd.zeros((5, 2))
    g = mx.nd.sparse.row_sparse_array(([[1.0, 1.0]], [3]), shape=(5, 2))
    mx.nd.sgd_mom_update(weight, g, mom, lr=0.5, momentum=0.9, wd=0.1, out=weight)
    assert weight.stype == "row_sparse"
    ref = w.copy()
    ref[3] = w[3] + (-0.5 * 0.1 * w[3] - 0.5 * 1.0)
    np.testing.assert_allclose(weight.asnumpy(), ref, rtol=1e-6)
    # RMSProp has no lazy form in MXNet: every row gets the dense update
    weight = mx.nd.array(w)
    n = mx.nd.zeros((5, 2))
    mx.nd.rmsprop_update(weight, g, n, lr=0.1, wd=0.5, out=weight)
    assert not np.allclose(weight.asnumpy()[0], w[0])
