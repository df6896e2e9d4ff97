"""Copies across devices, the caching allocator, engine ordering on the device's
stream, seeds, memory info."""

import os
import subprocess
import sys

import numpy as np
import pytest

import oxnet as mx
from oxnet import _core

from .common import GPU, rand, requires_gpu

pytestmark = requires_gpu


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "uint8"])
def test_copies_host_device_host(dtype):
    x = rand((129, 3), dtype)
    a = mx.nd.array(x, dtype=dtype)
    g = a.as_in_context(GPU)
    assert g.context == GPU
    np.testing.assert_array_equal(g.asnumpy(), x)
    back = g.copyto(mx.cpu())
    np.testing.assert_array_equal(back.asnumpy(), x)
    dst = mx.nd.zeros((129, 3), ctx=GPU, dtype=dtype)
    a.copyto(dst)
    np.testing.assert_array_equal(dst.asnumpy(), x)
    g2 = g.copy()
    assert g2.context == GPU
    np.testing.assert_array_equal(g2.asnumpy(), x)


@pytest.mark.skipif(mx.context.num_gpus() < 2, reason="needs two GPUs")
def test_copies_between_gpus():
    x = rand((1000,), "float32")
    a = mx.nd.array(x, ctx=mx.gpu(0))
    b = a.copyto(mx.gpu(1))
    assert b.context == mx.gpu(1)
    np.testing.assert_array_equal((b * 2).asnumpy(), x * 2)


def test_engine_orders_a_chain_of_writes_on_the_stream():
    a = mx.nd.zeros((1 << 20,), ctx=GPU)
    for _ in range(200):
        a += 1
    b = a * 2
    a += 1
    assert float(a[0].asscalar()) == 201.0
    np.testing.assert_array_equal(b.asnumpy(), np.full(1 << 20, 400.0, "float32"))


def test_pushing_does_not_block_the_host_and_wait_to_read_waits():
    a = mx.nd.ones((1 << 24,), ctx=GPU)
    for _ in range(50):
        a = a * 1.0 + 0.0
    a.wait_to_read()
    mx.nd.waitall()
    assert float(a.sum().asscalar()) == float(1 << 24)


def test_allocator_reuses_freed_blocks():
    mx.nd.waitall()
    before = _core.gpu_pool_stats(0)
    for _ in range(10):
        a = mx.nd.ones((12345,), ctx=GPU)
        a.wait_to_read()
        del a
    after = _core.gpu_pool_stats(0)
    assert after["hits"] >= before["hits"] + 9
    assert after["peak"] >= 12345 * 4
    GPU.empty_cache()
    assert _core.gpu_pool_stats(0)["cached"] == 0


def test_out_of_memory_is_an_error_and_the_pool_survives():
    free, total = mx.context.gpu_memory_info(0)
    with pytest.raises(mx.base.MXNetError) as e:
        mx.nd.empty((total // 4 * 2,), ctx=GPU)  # 2x the device memory in float32
    assert "out of memory" in str(e.value) and "gpu(0)" in str(e.value)
    assert _core.gpu_pool_stats(0)["oom_retries"] >= 1
    np.testing.assert_array_equal(mx.nd.ones((4,), ctx=GPU).asnumpy(), np.ones(4))


def test_gpu_memory_info():
    free, total = mx.context.gpu_memory_info(0)
    assert 0 < free <= total


def test_random_is_reproducible_by_seed():
    mx.random.seed(42, ctx=GPU)
    a = mx.nd.random.uniform(shape=(10000,), ctx=GPU).asnumpy()
    b = mx.nd.random.normal(shape=(10000,), ctx=GPU).asnumpy()
    mx.random.seed(42, ctx=GPU)
    np.testing.assert_array_equal(mx.nd.random.uniform(shape=(10000,), ctx=GPU).asnumpy(), a)
    np.testing.assert_array_equal(mx.nd.random.normal(shape=(10000,), ctx=GPU).asnumpy(), b)
    assert 0 <= a.min() and a.max() < 1 and abs(a.mean() - 0.5) < 0.02
    assert abs(b.mean()) < 0.05 and abs(b.std() - 1) < 0.05


def test_gluon_seed_learns_on_gpu():
    seed = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "seeds", "gluon_seed.py")
    data = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "data",
                        "mnist-subset")
    env = dict(os.environ, SEED_CTX="gpu", OXNET_MNIST_DIR=data, SEED_EPOCHS=os.environ.get("SEED_EPOCHS", "3"))
    r = subprocess.run([sys.executable, seed, "oxnet"], capture_output=True, text=True, timeout=900, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    accs = [float(line.rsplit("Test_acc", 1)[1]) for line in r.stdout.splitlines() if "Test_acc" in line]
    assert accs and accs[-1] >= 0.9, r.stdout[-2000:]
