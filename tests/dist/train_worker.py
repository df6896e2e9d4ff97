"""Worker script of tests/test_dist_kvstore.py: Gluon Trainer and Module training on a
dist_sync store. Equivalence: W workers with batch B each end with the weights of one
process trained with batch W*B (to float tolerance)."""

import numpy as np

import oxnet as mx
from oxnet import gluon, autograd

kv = mx.kv.create("dist_sync")
r, W = kv.rank, kv.num_workers
B, K = 4, 3
rng = np.random.RandomState(0)
X = rng.randn(K, W * B, 5).astype(np.float32)
Y = rng.randn(K, W * B, 2).astype(np.float32)


def net_and_params(seed):
    mx.random.seed(seed)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(8, activation="relu", in_units=5), gluon.nn.Dense(2, in_units=8))
    net.initialize(mx.init.Xavier())
    return net


def train(net, trainer, shard):
    loss_fn = gluon.loss.L2Loss()
    for k in range(K):
        x, y = X[k], Y[k]
        if shard:
            x, y = x[r * B:(r + 1) * B], y[r * B:(r + 1) * B]
        with autograd.record():
            loss = loss_fn(net(mx.nd.array(x)), mx.nd.array(y))
        loss.backward()
        trainer.step(W * B)
    return [p.data().asnumpy() for p in net.collect_params().values()]


for update_on_kv in (None, False):
    ref = net_and_params(1)
    ref_w = train(ref, gluon.Trainer(ref.collect_params(), "sgd",
                                     {"learning_rate": 0.1, "momentum": 0.9}, kvstore=None), False)
    net = net_and_params(1)   # the same initial weights everywhere, as MXNet needs
    tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9},
                       kvstore=kv if update_on_kv is None else "dist_sync",
                       update_on_kvstore=update_on_kv)
    got = train(net, tr, True)
    if tr._update_on_kvstore != (update_on_kv is None):
        raise AssertionError("update_on_kvstore should be %s" % (update_on_kv is None))
    for a, b in zip(got, ref_w):
        if not np.allclose(a, b, rtol=1e-4, atol=1e-5):
            raise AssertionError("Trainer(update_on_kvstore=%s) differs from one process: %s"
                     % (update_on_kv, np.abs(a - b).max()))
    print("trainer ok", update_on_kv, r)

# Module.fit(kvstore='dist_sync'): rescale 1 / (B * num_workers), as MXNet
data = mx.sym.Variable("data")
fc = mx.sym.FullyConnected(data, num_hidden=2, name="fc")
out = mx.sym.LinearRegressionOutput(fc, mx.sym.Variable("lin_label"), name="lin")
Xf = X.reshape(K * W * B, 5)
Yf = Y.reshape(K * W * B, 2)
mine = np.concatenate([np.arange(k * W * B + r * B, k * W * B + (r + 1) * B) for k in range(K)])


def fit(x, y, batch, kvstore):
    mod = mx.mod.Module(out, data_names=["data"], label_names=["lin_label"])
    it = mx.io.NDArrayIter(x, y, batch_size=batch, label_name="lin_label")
    mod.fit(it, num_epoch=1, kvstore=kvstore, optimizer="sgd",
            optimizer_params={"learning_rate": 0.1},
            initializer=mx.init.Constant(0.1))
    return mod.get_params()[0]


p_ref = fit(Xf, Yf, W * B, None)
p_dist = fit(Xf[mine], Yf[mine], B, "dist_sync")
for name in p_ref:
    if not np.allclose(p_ref[name].asnumpy(), p_dist[name].asnumpy(), rtol=1e-4, atol=1e-5):
        raise AssertionError("Module.fit(dist_sync) differs from one process at %s" % name)
print("module ok", r)
kv.barrier()
print("WORKER_OK", r)
