"""Worker script of tests/test_dist_kvstore.py: run by every rank of an MPI job
(servers stop inside `import oxnet`). Checks MXNet's dist kvstore semantics with NumPy
as the oracle; any failed check exits non-zero, which fails the job."""
import os
import time

import numpy as np

import oxnet as mx
from oxnet.base import MXNetError

S = int(os.environ["DMLC_NUM_SERVER"])


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


def val(a):
    return a.asnumpy()


kv = mx.kv.create("dist_sync")
r, W = kv.rank, kv.num_workers
check(kv.type == "dist_sync" and 0 <= r < W, "type/rank")
check(W == int(os.environ["DMLC_NUM_WORKER"]), "num_workers")
shape = (2, 3)

# init: worker 0's value wins; push without updater stores the sum of all workers
kv.init(3, mx.nd.ones(shape) * (r + 10))
o = mx.nd.zeros(shape)
kv.pull(3, out=o)
check(np.allclose(val(o), 10), "init value of worker 0: %s" % val(o))
for it in range(3):
    kv.push(3, mx.nd.ones(shape) * (r + 1 + it))
    kv.pull(3, out=o)
    check(np.allclose(val(o), sum(i + 1 + it for i in range(W))), "sync sum %d" % it)

# lists, per-device lists, pushpull, keys in different orders on different workers
kv.init([5, 7], [mx.nd.zeros((4,)), mx.nd.zeros((2, 2))])
keys = [5, 7] if r % 2 == 0 else [7, 5]
vals = {5: [mx.nd.ones((4,)), mx.nd.ones((4,)) * 2], 7: mx.nd.ones((2, 2)) * 3}
kv.push(keys, [vals[k] for k in keys])
outs = {5: [mx.nd.zeros((4,)), mx.nd.zeros((4,))], 7: mx.nd.zeros((2, 2))}
kv.pull(keys, out=[outs[k] for k in keys])
check(all(np.allclose(val(x), 3 * W) for x in outs[5]), "list push/pull key 5")
check(np.allclose(val(outs[7]), 3 * W), "list push/pull key 7")
g = mx.nd.ones((4,)) * (r + 1)
kv.pushpull(5, g)
check(np.allclose(val(g), W * (W + 1) / 2), "pushpull in place")

# string keys (a second store: stores do not share keys)
kvs = mx.kv.create("dist_sync")
kvs.init(["w", "b"], [mx.nd.zeros((3,)), mx.nd.zeros((1,))])
kvs.push("w", mx.nd.array([1, 2, 3]) * (r + 1))
ow = mx.nd.zeros((3,))
kvs.pull("w", out=ow)
check(np.allclose(val(ow), np.array([1, 2, 3]) * W * (W + 1) / 2), "str key")

# bad input: MXNetError on the worker, stored values intact
raises(lambda: kv.push(3, mx.nd.ones((3, 2))), ["3", "shape"])
raises(lambda: kv.push(3, mx.nd.ones(shape, dtype="float64")), ["dtype"])
raises(lambda: kv.push(99, mx.nd.ones(shape)), ["99", "initialized"])
raises(lambda: kv.pull(99, out=mx.nd.ones(shape)), ["99"])
raises(lambda: kv.init(3, mx.nd.ones(shape)), ["3", "already"])
raises(lambda: kvs.push(3, mx.nd.ones(shape)), ["Mixed"])
kv.pull(3, out=o)
check(np.allclose(val(o), sum(i + 3 for i in range(W))), "stored value intact")

# float16 and a big array (split over the servers when S > 1)
big = (700, 100)   # 70,000 elements, over the bound set by the test
kv.init([11, 12],
        [mx.nd.zeros((5,), dtype="float16"), mx.nd.zeros(big)])
rng = np.random.RandomState(r)
gb = rng.randn(*big).astype(np.float32)
kv.push([11, 12], [mx.nd.ones((5,), dtype="float16") * 0.5, mx.nd.array(gb)])
oh, ob = mx.nd.zeros((5,), dtype="float16"), mx.nd.zeros(big)
kv.pull([11, 12], out=[oh, ob])
check(oh.dtype == np.float16 and np.allclose(val(oh), 0.5 * W), "float16")
expect = sum(np.random.RandomState(i).randn(*big).astype(np.float32) for i in range(W))
check(np.allclose(val(ob), expect, atol=1e-5), "big array")

# the _device types sum a worker's per-device arrays on the first array's device
for name in ("dist_device_sync", "dist_sync_device"):
    kvd = mx.kv.create(name)
    check(kvd.type == name, "type " + name)
    kvd.init(0, mx.nd.zeros((3,)))
    kvd.push(0, [mx.nd.ones((3,), ctx=mx.cpu(i)) * (i + 1) for i in range(2)])
    od = [mx.nd.zeros((3,), ctx=mx.cpu(i)) for i in range(2)]
    kvd.pull(0, out=od)
    check(all(np.allclose(val(x), 3 * W) for x in od), name)
raises(lambda: kv.row_sparse_pull(3, out=mx.nd.zeros(shape), row_ids=mx.nd.array([0])),
       ["row_sparse"])

# barrier
kv.barrier()

# optimizer on the servers (SGD with momentum), numpy oracle; save/load states
kvo = mx.kv.create("dist_sync")
kvo.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01))
w0 = np.arange(6, dtype=np.float32).reshape(2, 3)
kvo.init([0, 1], [mx.nd.array(w0), mx.nd.array(np.tile(w0.ravel(), 20000))])
w, mom = w0.astype(np.float64), np.zeros_like(w0, dtype=np.float64)
for it in range(3):
    grads = [np.full(w0.shape, j + 1.0 + it) for j in range(W)]
    kvo.push(0, mx.nd.array(grads[r]))
    kvo.push(1, mx.nd.ones((120000,)))
    out = mx.nd.zeros(w0.shape)
    kvo.pull(0, out=out)
    gsum = sum(grads)
    mom = 0.9 * mom - 0.1 * (gsum + 0.01 * w)
    w = w + mom
    check(np.allclose(val(out), w, rtol=1e-5, atol=1e-5), "server sgd step %d" % it)
fname = os.path.join(os.environ["DIST_TEST_DIR"], "states_%d" % r)
kvo.save_optimizer_states(fname)
kvo.push(0, mx.nd.ones(w0.shape))     # moves the momentum on
kvo.load_optimizer_states(fname)      # ... and back
kvo.push(0, mx.nd.ones(w0.shape))
kvo.pull(0, out=out)
mom2 = 0.9 * mom - 0.1 * (W + 0.01 * w)
w_a = w + mom2
mom3 = 0.9 * mom2 - 0.1 * (W + 0.01 * w_a)  # the step after the first extra push
# after load, the state is `mom` again but the weight moved once: w_a
mom_l = 0.9 * mom - 0.1 * (W + 0.01 * w_a)
check(np.allclose(val(out), w_a + mom_l, rtol=1e-5, atol=1e-5), "load_optimizer_states")

# commands: head 0 with a pickled optimizer, as MXNet's set_optimizer sends
kvo._send_command_to_servers(0, __import__("pickle").dumps(mx.optimizer.SGD(learning_rate=0.0)))
before = val(out)
kvo.push(0, mx.nd.ones(w0.shape))
kvo.pull(0, out=out)
check(np.allclose(val(out), before), "lr 0 optimizer from _send_command_to_servers")

# 2-bit compression with residuals (MXNet's semantics), no optimizer: sum of the
# quantised gradients
kvc = mx.kv.create("dist_sync")
kvc.set_gradient_compression({"type": "2bit", "threshold": 0.5})
kvc.init(0, mx.nd.zeros((4,)))
res = np.zeros(4, dtype=np.float32)
gs = [np.array([0.3, 0.6, -0.7, 0.1], dtype=np.float32), np.array([0.3, 0.0, -0.2, 0.1], np.float32)]
oc = mx.nd.zeros((4,))
for it, gg in enumerate(gs):
    kvc.push(0, mx.nd.array(gg))
    kvc.pull(0, out=oc)
    v = res + gg
    q = np.where(v >= 0.5, 0.5, np.where(v <= -0.5, -0.5, 0.0)).astype(np.float32)
    res = v - q
    check(np.allclose(val(oc), q * W), "2bit step %d: %s vs %s" % (it, val(oc), q * W))

# ... and the quantised values travel packed, 2 bits each (1/16 of float32's bytes)
sent = []
orig_request = kvc._ctx.request_async


def recording_request(server, header, data):
    if header.get("op") == "push":
        sent.append((header.get("comp"), sum(memoryview(d).nbytes for d in data)))
    return orig_request(server, header, data)


kvc._ctx.request_async = recording_request
g = np.random.RandomState(3).uniform(-1, 1, 1001).astype(np.float32)
kvc.init(1, mx.nd.zeros((1001,)))
kvc.push(1, mx.nd.array(g))
o1 = mx.nd.zeros((1001,))
kvc.pull(1, out=o1)
q = np.where(g >= 0.5, 0.5, np.where(g <= -0.5, -0.5, 0.0)).astype(np.float32)
check(np.allclose(val(o1), q * W), "2bit packed: %s vs %s" % (val(o1)[:8], (q * W)[:8]))
kvc._ctx.request_async = orig_request
check(sum(b for _, b in sent) == 251 and all(c == 0.5 for c, _ in sent),
      "2bit: 1001 values sent as %s" % sent)

# async store: an optimizer is required; with one, every push is applied
kva = mx.kv.create("dist_async")
kva.init(0, mx.nd.zeros((3,)))
raises(lambda: kva.push(0, mx.nd.ones((3,))), ["async", "optimizer"])
kva.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
for it in range(4):
    kva.push(0, mx.nd.ones((3,)))
oa = mx.nd.zeros((3,))
kva.pull(0, out=oa)     # answered after this worker's pushes (the pull names how many
oa.wait_to_read()       # came before it) ...
kva.barrier()           # ... so after the barrier every worker's pushes are applied
kva.pull(0, out=oa)
check(np.allclose(val(oa), -4.0 * W), "async: every push applied: %s" % val(oa))

# dense pulls reach the servers on their own channel, possibly before the pushes sent
# before them: each still waits for its round (sync), here with the last worker late
# every other round and keys split over the servers
kvp = mx.kv.create("dist_sync")
nk, pshape = 6, (40, 50)
kvp.init(list(range(nk)), [mx.nd.zeros(pshape) for _ in range(nk)])
pouts = [mx.nd.zeros(pshape) for _ in range(nk)]
for it in range(4):
    if r == W - 1 and it % 2 == 0:
        time.sleep(0.3)
    for k in range(nk):
        kvp.push(k, mx.nd.ones(pshape) * (r + 1 + it + k))
    for k in range(nk):
        kvp.pull(k, out=pouts[k])
    for k in range(nk):
        want = sum(i + 1 + it + k for i in range(W))
        check(np.allclose(val(pouts[k]), want), "pull after pushes, round %d key %d: %s vs %s"
              % (it, k, val(pouts[k])[0, 0], want))
# ... and in async mode, a pull right after this worker's pushes sees all of them
kva2 = mx.kv.create("dist_async")
kva2.init(0, mx.nd.zeros(pshape))
kva2.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
oa2 = mx.nd.zeros(pshape)
for it in range(3):
    for _ in range(5):
        kva2.push(0, mx.nd.ones(pshape))
    kva2.pull(0, out=oa2)
    check(np.all(val(oa2) <= -5.0 * (it + 1) + 1e-4), "async: own pushes seen by the pull, "
          "round %d: %s" % (it, val(oa2).max()))
kva2.barrier()

# overlap: a push/pull whose input is ready completes while a long computation that
# it does not depend on still runs; push and pull return at once
kv.init([20, 21], [mx.nd.zeros((300, 300)), mx.nd.zeros((10,))])
mx.nd.waitall()
x = mx.nd.ones((300, 300)) / 300.0
prev_bound = mx._core._engine_max_pending(0)   # queue the whole chain at once
t0 = time.time()
y = x
for _ in range(150):
    y = mx.nd.dot(y, x)
kv.push(20, y)
os_ = mx.nd.zeros((300, 300))
kv.pull(20, out=os_)
kv.push(21, mx.nd.ones((10,)))
of = mx.nd.zeros((10,))
kv.pull(21, out=of)
t_call = time.time() - t0
of.wait_to_read()
t_fast = time.time() - t0
pending = mx._core._engine_pending()
os_.wait_to_read()
t_slow = time.time() - t0
check(np.allclose(val(of), W) and np.allclose(val(os_), W / 300.0, rtol=1e-4), "overlap values")
check(pending > 0, "the fast pull should complete while the chain runs (%d pending)" % pending)
mx._core._engine_max_pending(prev_bound)
check(t_call < t_slow / 2, "push/pull calls should return at once (%.3fs of %.3fs)" % (t_call, t_slow))
print("overlap rank %d: calls %.3fs, fast pull done %.3fs, slow %.3fs, %d ops pending"
      % (r, t_call, t_fast, t_slow, pending))
kv.barrier()
print("WORKER_OK", r)
