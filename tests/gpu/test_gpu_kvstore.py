"""KVStore 'local', 'device' and 'nccl' with arrays on gpu(0): sums, pulls, the optimizer run
in the store, and a Gluon Trainer through the store, against the same on the CPU."""

import numpy as np
import pytest

import oxnet as mx

from .common import GPU, rand, requires_gpu

pytestmark = requires_gpu


@pytest.mark.parametrize("kind", ["local", "device", "nccl"])
def test_push_sums_gpu_arrays_and_pull_fills_gpu_outputs(kind):
    kv = mx.kv.create(kind)
    shape = (4, 5)
    kv.init(3, mx.nd.zeros(shape, ctx=GPU))
    vals = [mx.nd.array(rand(shape, "float32", seed=i), ctx=GPU) for i in range(3)]
    kv.push(3, vals)
    outs = [mx.nd.zeros(shape, ctx=GPU) for _ in range(2)]
    kv.pull(3, out=outs)
    want = sum(v.asnumpy() for v in vals)
    for o in outs:
        assert o.context == GPU
        np.testing.assert_allclose(o.asnumpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["local", "device", "nccl"])
def test_store_runs_the_optimizer_like_the_cpu(kind):
    results = {}
    for ctx in (mx.cpu(), GPU):
        kv = mx.kv.create(kind)
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=1e-3))
        kv.init("w", mx.nd.array(rand((6, 3), "float32", seed=1), ctx=ctx))
        w = mx.nd.zeros((6, 3), ctx=ctx)
        for step in range(3):
            kv.push("w", [mx.nd.array(rand((6, 3), "float32", seed=10 + step + k), ctx=ctx) for k in range(2)])
        kv.pull("w", out=w)
        results[ctx.device_type] = w.asnumpy()
    np.testing.assert_allclose(results["gpu"], results["cpu"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kvstore", ["device", "local", "nccl", None])
def test_trainer_through_the_store_matches_the_cpu(kvstore):
    x = rand((8, 5), "float32", seed=3)
    y = rand((8, 2), "float32", seed=4)
    results = {}
    for ctx in (mx.cpu(), GPU):
        net = mx.gluon.nn.Dense(2, in_units=5)
        net.initialize(mx.init.Constant(0.1), ctx=ctx)
        trainer = mx.gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01}, kvstore=kvstore)
        xd, yd = mx.nd.array(x, ctx=ctx), mx.nd.array(y, ctx=ctx)
        for _ in range(3):
            with mx.autograd.record():
                loss = mx.gluon.loss.L2Loss()(net(xd), yd)
            loss.backward()
            trainer.step(8)
        results[ctx.device_type] = net.weight.data().asnumpy()
    np.testing.assert_allclose(results["gpu"], results["cpu"], rtol=1e-5, atol=1e-6)


def test_nccl_store_mixes_host_and_gpu_outputs():
    kv = mx.kv.create("nccl")
    kv.init("k", mx.nd.array(rand((5,), "float32", seed=1), ctx=GPU))
    kv.push("k", [mx.nd.ones((5,), ctx=GPU), mx.nd.ones((5,), ctx=GPU) * 2])
    outs = [mx.nd.zeros((5,), ctx=GPU), mx.nd.zeros((5,)), mx.nd.zeros((5,), ctx=GPU)]
    kv.pull("k", out=outs)
    for o in outs:
        np.testing.assert_allclose(o.asnumpy(), np.full(5, 3.0))
