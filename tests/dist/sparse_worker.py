"""Worker script of tests/test_dist_kvstore.py: row_sparse keys on dist stores, checked
against MXNet 1.9.1's dist_sync semantics (its nightly dist_sync_kvstore.py checks, with
the same values) and NumPy. Any failed check exits non-zero, which fails the job."""
import os
import warnings

import numpy as np

import oxnet as mx
from oxnet import autograd, gluon
from oxnet.base import MXNetError

S = int(os.environ["DMLC_NUM_SERVER"])
BOUND = int(os.environ["MXNET_KVSTORE_BIGARRAY_BOUND"])
rate = 2


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def raises(f, words):
    try:
        f()
    except MXNetError as e:
        for w in words:
            check(w in str(e), "error %r should mention %r" % (str(e), w))
        return
    raise AssertionError("no MXNetError (expected one mentioning %r)" % (words,))


def dense(a):
    return a.asnumpy()


shape = (2, 3)
big_shape = (300, 20)          # above the test's MXNET_KVSTORE_BIGARRAY_BOUND: split by rows
check(big_shape[0] * big_shape[1] >= BOUND, "big_shape must be split")

# -- a store without an optimizer: pushed rows take the sum, other rows keep their value
kv0 = mx.kv.create("dist_sync")
r, W = kv0.rank, kv0.num_workers
kv0.init("a", mx.nd.ones((4, 3)).tostype("row_sparse"))
v = mx.nd.zeros((4, 3))
v[r] = r + 1
v[3] = 5
for it in range(2):
    kv0.push("a", v.tostype("row_sparse"))
    out = mx.nd.sparse.zeros("row_sparse", (4, 3))
    kv0.row_sparse_pull("a", out=out, row_ids=mx.nd.array([3, 0, 1, 2, 1]))
    exp = np.ones((4, 3), dtype=np.float32)
    for w in range(W):
        exp[w] = w + 1
    exp[3] = 5 * W
    check(np.array_equal(dense(out), exp), "no-optimizer rows %s vs %s" % (dense(out), exp))
    check(out.indices.asnumpy().tolist() == [0, 1, 2, 3], "unique sorted indices")
# a list of per-device values is summed before it is sent
kv0.push("a", [v.tostype("row_sparse"), v.tostype("row_sparse")])
kv0.row_sparse_pull("a", out=out, row_ids=mx.nd.array([3]))
check(out.indices.asnumpy().tolist() == [3] and np.allclose(dense(out)[3], 10 * W),
      "per-device sum: %s" % dense(out))

# pull refuses row_sparse keys as MXNet's dist stores do
raises(lambda: kv0.pull("a", out=mx.nd.zeros((4, 3))), ["a", "row_sparse_pull"])
raises(lambda: kv0.pull("a", out=out, ignore_sparse=False), ["ignore_sparse"])
before = dense(out)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    kv0.pull("a", out=out)
check(np.array_equal(dense(out), before), "a sparse output of pull is ignored")
check(any("row_sparse_pull" in str(c.message) for c in caught), "pull warns")

# bad input: clear errors, nothing sent, stored values intact
raises(lambda: kv0.row_sparse_pull("a", out=out, row_ids=mx.nd.array([4])), ["a", "range"])
raises(lambda: kv0.row_sparse_pull("a", out=out, row_ids=mx.nd.array([-1])), ["range"])
raises(lambda: kv0.row_sparse_pull("a", out=mx.nd.zeros((4, 3)), row_ids=mx.nd.array([0])),
       ["row_sparse"])
raises(lambda: kv0.row_sparse_pull("a", out=mx.nd.sparse.zeros("row_sparse", (5, 3)),
                                   row_ids=mx.nd.array([0])), ["shape"])
raises(lambda: kv0.row_sparse_pull("a", out=mx.nd.sparse.zeros("row_sparse", (4, 3),
                                                                dtype="float16"),
                                   row_ids=mx.nd.array([0])), ["dtype"])
raises(lambda: kv0.push("a", mx.nd.sparse.zeros("row_sparse", (5, 3))), ["shape"])
raises(lambda: kv0.push("a", mx.nd.sparse.zeros("csr", (4, 3))), ["csr"])
raises(lambda: kv0.init("c", mx.nd.sparse.zeros("csr", (4, 3))), ["csr"])
raises(lambda: kv0.init("a", mx.nd.ones((4, 3)).tostype("row_sparse")), ["already"])
kv0.init("d", mx.nd.ones((4, 3)))
raises(lambda: kv0.row_sparse_pull("d", out=out, row_ids=mx.nd.array([0])), ["d", "row_sparse"])
exp2 = exp.copy()
exp2[:W] *= 2
exp2[3] = 10 * W
kv0.row_sparse_pull("a", out=out, row_ids=mx.nd.arange(0, 4))
check(np.array_equal(dense(out), exp2), "values intact after errors: %s" % dense(out))

# several outputs, each with its own row ids
o1 = mx.nd.sparse.zeros("row_sparse", (4, 3))
o2 = mx.nd.sparse.zeros("row_sparse", (4, 3))
kv0.row_sparse_pull("a", out=[o1, o2], row_ids=[mx.nd.array([2]), mx.nd.array([[0, 3]])])
check(o1.indices.asnumpy().tolist() == [2] and o2.indices.asnumpy().tolist() == [0, 3],
      "per-output row ids")
check(np.array_equal(dense(o1)[2], exp2[2]) and np.array_equal(dense(o2)[[0, 3]], exp2[[0, 3]])
      and np.all(dense(o2)[[1, 2]] == 0), "per-output rows")

# a row_sparse push to a dense key (sparse gradients of a dense weight)
kv0.push("d", v.tostype("row_sparse"))
od = mx.nd.zeros((4, 3))
kv0.pull("d", out=od)
check(np.allclose(dense(od), exp), "row_sparse push to a dense key: %s" % dense(od))

# only the requested rows travel: the servers send exactly those rows' bytes
kv0.init("e", mx.nd.ones((1000, 50)).tostype("row_sparse"))
kv0.barrier()
if r == 0:
    sent0 = sum(s["sent"] for s in kv0._server_stats())
    oe = mx.nd.sparse.zeros("row_sparse", (1000, 50))
    kv0.row_sparse_pull("e", out=oe, row_ids=mx.nd.array([7, 999, 7, 500]))
    sent1 = sum(s["sent"] for s in kv0._server_stats())
    check(sent1 - sent0 == 3 * 50 * 4, "row_sparse_pull moved %d bytes" % (sent1 - sent0))
    check(oe.indices.asnumpy().tolist() == [7, 500, 999] and np.allclose(dense(oe.data), 1),
          "pulled rows of e")
kv0.barrier()

# -- MXNet's nightly checks: the 'test' optimizer (weight += rescale_grad * grad) on the
# servers, float16 (multi-precision) and float32, small and big (split) keys
kv = mx.kv.create("dist_sync")
rsp_keys = {"float32": ["9", "11", "97"], "float16": ["10", "12", "98"]}
for dt in ("float32", "float16"):
    k, kz, kbig = rsp_keys[dt]
    kv.init([k, kz], [mx.nd.ones(shape, dtype=dt).tostype("row_sparse")] * 2)
    kv.init(kbig, mx.nd.ones(big_shape, dtype=dt).tostype("row_sparse"))
kv.set_optimizer(mx.optimizer.create("test", rescale_grad=rate, multi_precision=True))
nrepeat = 3
for dt in ("float16", "float32"):
    k, kz, kbig = rsp_keys[dt]
    # check_row_sparse_keys
    v = mx.nd.zeros(shape, dtype=dt)
    v[r % shape[0]] = r + 1
    for i in range(nrepeat):
        kv.push(k, v.tostype("row_sparse"))
        row_ids_np = np.random.randint(shape[0], size=shape[0])
        row_ids = mx.nd.array(row_ids_np).reshape((shape[0] // 2, 2)).astype(dt)
        val = mx.nd.sparse.zeros("row_sparse", shape, dtype=dt)
        kv.row_sparse_pull(k, out=val, row_ids=row_ids)
        upd = np.ones(shape, dtype=dt)
        for rank in range(W):
            upd[rank % shape[0]] += (rank + 1) * rate * (i + 1)
        exp = np.zeros(shape, dtype=dt)
        exp[row_ids_np] = upd[row_ids_np]
        check(np.array_equal(dense(val), exp), "check_row_sparse_keys %s %d" % (dt, i))
    # check_row_sparse_keys_with_zeros
    for i in range(nrepeat):
        kv.push(kz, mx.nd.sparse.zeros("row_sparse", shape, dtype=dt))
        kv.push(kbig, mx.nd.sparse.zeros("row_sparse", big_shape, dtype=dt))
        val = mx.nd.sparse.zeros("row_sparse", shape, dtype=dt)
        big_val = mx.nd.sparse.zeros("row_sparse", big_shape, dtype=dt)
        kv.row_sparse_pull(kz, out=val, row_ids=mx.nd.array(np.arange(shape[0])))
        kv.row_sparse_pull(kbig, out=big_val, row_ids=mx.nd.array(np.arange(big_shape[0])))
        check(np.all(dense(val) == 1) and np.all(dense(big_val) == 1), "zeros pushed %s" % dt)
        kv.row_sparse_pull(kz, out=val, row_ids=mx.nd.array([]))
        kv.row_sparse_pull(kbig, out=big_val, row_ids=mx.nd.array([]))
        check(np.all(dense(val) == 0) and np.all(dense(big_val) == 0), "empty pull %s" % dt)
    # check_big_row_sparse_keys
    rnd = np.random.RandomState(123)
    indices = np.argwhere(rnd.rand(big_shape[0]) < 0.3).flatten()
    update_rows = [indices[::(rank + 1) * 2] for rank in range(W)]
    v = np.zeros(big_shape, dtype=dt)
    v[update_rows[r]] = r + 1
    for i in range(nrepeat):
        kv.push(kbig, mx.nd.array(v, dtype=dt).tostype("row_sparse"))
        row_ids_np = np.random.RandomState(r + i).randint(big_shape[0], size=big_shape[0])
        row_ids = mx.nd.array(row_ids_np).reshape((big_shape[0] // 2, 2)).astype(dt)
        val = mx.nd.sparse.zeros("row_sparse", big_shape, dtype=dt)
        kv.row_sparse_pull(kbig, out=val, row_ids=row_ids)
        upd = np.ones(big_shape, dtype=dt)
        for rank in range(W):
            upd[update_rows[rank]] += (rank + 1) * rate * (i + 1)
        exp = np.zeros(big_shape, dtype=dt)
        exp[row_ids_np] = upd[row_ids_np]
        check(np.array_equal(dense(val), exp), "check_big_row_sparse_keys %s %d: %s"
              % (dt, i, np.abs(dense(val).astype(np.float64) - exp).max()))

# lazy update on the servers: SGD with momentum touches only the pushed rows
kvm = mx.kv.create("dist_sync")
kvm.init(0, mx.nd.ones((6, 2)).tostype("row_sparse"))
kvm.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9))
ref = np.ones((6, 2), dtype=np.float32)
mom = np.zeros((6, 2), dtype=np.float32)
for step in range(3):
    # step 0: rows 1, 4 and 2 or 3; later steps: row 1 only (rows 2-4 keep their momentum,
    # unapplied: lazy)
    g = np.zeros((6, 2), dtype=np.float32)
    gsum = np.zeros((6, 2), dtype=np.float32)
    g[1] = 1.0
    gsum[1] = W
    if step == 0:
        g[4] = 1.0
        g[2 + r % 2] = 2.0
        gsum[4] = W
        for w in range(W):
            gsum[2 + w % 2] += 2.0
    kvm.push(0, mx.nd.array(g).tostype("row_sparse"))
    rows = np.flatnonzero(gsum.any(axis=1))
    mom[rows] = 0.9 * mom[rows] - 0.1 * gsum[rows]
    ref[rows] += mom[rows]
out = mx.nd.sparse.zeros("row_sparse", (6, 2))
kvm.row_sparse_pull(0, out=out, row_ids=mx.nd.arange(0, 6))
check(np.allclose(dense(out), ref, atol=1e-6), "lazy sgd: %s vs %s" % (dense(out), ref))
check(np.all(dense(out)[[0, 5]] == 1), "untouched rows keep their value")

# dist_async: every push is applied when it arrives
kva = mx.kv.create("dist_async")
kva.init(0, mx.nd.zeros((W, 2)).tostype("row_sparse"))
kva.set_optimizer(mx.optimizer.create("test", rescale_grad=1))
g = np.zeros((W, 2), dtype=np.float32)
g[r] = r + 1
kva.push(0, mx.nd.array(g).tostype("row_sparse"))
out = mx.nd.sparse.zeros("row_sparse", (W, 2))
kva.row_sparse_pull(0, out=out, row_ids=mx.nd.array([r]))
check(np.allclose(dense(out)[r], r + 1), "async own row")
kva.barrier()
kva.row_sparse_pull(0, out=out, row_ids=mx.nd.arange(0, W))
check(np.allclose(dense(out), np.arange(1, W + 1)[:, None] * np.ones((1, 2))), "async rows")

# row_sparse_pull returns at once: the rows arrive later, and reads of the outputs wait.
# The last worker pushes only after a barrier that the others reach after their
# row_sparse_pull: a blocking row_sparse_pull would never return
kvl = mx.kv.create("dist_sync")
kvl.init(0, mx.nd.zeros(big_shape).tostype("row_sparse"))
g = np.zeros(big_shape, dtype=np.float32)
g[[0, 7, 299]] = r + 1
o_all = mx.nd.sparse.zeros("row_sparse", big_shape)
o_sub = mx.nd.sparse.zeros("row_sparse", big_shape)
if r == W - 1:
    kvl.barrier()
kvl.push(0, mx.nd.array(g).tostype("row_sparse"))
kvl.row_sparse_pull(0, out=[o_all, o_sub], row_ids=[mx.nd.array([299, 0, 7, 150]),
                                                    mx.nd.array([7, 299])])
if r != W - 1:
    kvl.barrier()
want = np.zeros(big_shape, dtype=np.float32)
want[[0, 7, 299]] = W * (W + 1) / 2
check(np.allclose(dense(o_all)[[0, 7, 150, 299]], want[[0, 7, 150, 299]]), "late rows: %s"
      % dense(o_all)[[0, 7, 150, 299]])
check(o_all.indices.asnumpy().tolist() == [0, 7, 150, 299], "late rows: indices %s"
      % o_all.indices.asnumpy())
check(o_sub.indices.asnumpy().tolist() == [7, 299] and
      np.allclose(o_sub.data.asnumpy(), want[[7, 299]]), "late rows, subset: %s"
      % o_sub.data.asnumpy())
kvl.barrier()

print("kvstore ok", r)

# -- Gluon: an Embedding with sparse gradients (dense weight) and a row_sparse weight,
# trained on dist_sync, end where one process with the whole batch ends
B, K, V, D = 4, 3, 20, 3
rng = np.random.RandomState(0)
X = rng.randint(0, V // 2, size=(K, W * B)).astype(np.float32)   # rows >= V/2 never used
Y = rng.randn(K, W * B, D).astype(np.float32)


def embed_net():
    mx.random.seed(3)
    net = gluon.nn.Embedding(V, D, sparse_grad=True)
    net.initialize(mx.init.Uniform(0.5))
    return net


def train(net, trainer, shard):
    for k in range(K):
        x, y = X[k], Y[k]
        if shard:
            x, y = x[r * B:(r + 1) * B], y[r * B:(r + 1) * B]
        with autograd.record():
            loss = gluon.loss.L2Loss()(net(mx.nd.array(x)), mx.nd.array(y))
        loss.backward()
        trainer.step(W * B)
    return net.weight.data().asnumpy()


opt = {"learning_rate": 0.5, "momentum": 0.9}
ref_net = embed_net()
w0 = ref_net.weight.data().asnumpy()
ref_w = train(ref_net, gluon.Trainer(ref_net.collect_params(), "sgd", opt, kvstore=None), False)
net = embed_net()
tr = gluon.Trainer(net.collect_params(), "sgd", opt, kvstore="dist_sync")
got = train(net, tr, True)
check(tr._update_on_kvstore, "sparse gradients update on the servers")
check(np.allclose(got, ref_w, rtol=1e-5, atol=1e-6), "Embedding(sparse_grad) dist vs one "
      "process: %s" % np.abs(got - ref_w).max())
check(np.array_equal(got[V // 2:], w0[V // 2:]), "unused rows untouched (lazy update)")
net2 = embed_net()
try:
    gluon.Trainer(net2.collect_params(), "sgd", opt, kvstore="dist_sync",
                  update_on_kvstore=False)._init_kvstore()
    raise AssertionError("update_on_kvstore=False with sparse gradients should fail")
except ValueError as e:
    check("sparse" in str(e), str(e))

# a row_sparse weight: the servers hold it, devices pull the rows a batch needs
params = gluon.ParameterDict("rsp_")
x = params.get("x", shape=(8, 2), stype="row_sparse", grad_stype="row_sparse")
params.initialize(ctx=mx.cpu(0), init="ones")
trs = gluon.Trainer(params, "sgd", {"learning_rate": 0.1}, kvstore="dist_sync")
rows = mx.nd.array([r, 4 + r])
for step in range(2):
    wrows = x.row_sparse_data(rows)
    check(wrows.indices.asnumpy().tolist() == [r, 4 + r], "row_sparse_data rows")
    # a gradient of ones on this worker's rows
    gr = np.zeros((8, 2), dtype=np.float32)
    gr[[r, 4 + r]] = 1.0
    x.list_grad()[0][:] = mx.nd.array(gr).tostype("row_sparse")
    trs.step(1)
check(trs._update_on_kvstore, "row_sparse weights update on the store")
full = x.row_sparse_data(mx.nd.arange(0, 8)).asnumpy()
exp = np.ones((8, 2), dtype=np.float32)
for w in range(W):
    exp[[w, 4 + w]] -= 0.1 * 2
check(np.allclose(full, exp), "row_sparse weight: %s vs %s" % (full, exp))
kv.barrier()
print("WORKER_OK", r)
