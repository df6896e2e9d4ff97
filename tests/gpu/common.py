"""Shared helpers of the GPU tests: every test module skips (not fails) when
``mx.context.num_gpus() == 0``."""

import numpy as np
import pytest

import oxnet as mx

requires_gpu = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU (mx.context.num_gpus() == 0)")

GPU = mx.gpu(0)
FLOATS = ["float32", "float64", "float16"]
INTS = ["int32", "int64", "int8", "uint8"]
TOL = {"float16": (2e-3, 2e-3), "float32": (1e-5, 1e-6), "float64": (1e-12, 1e-12)}


def rand(shape, dtype, low=-3.0, high=3.0, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(low, high, size=shape).astype(dtype)
    lo, hi = (0, 10) if dtype == "uint8" else (-10, 10)
    return rng.integers(lo, hi, size=shape).astype(dtype)


def same(gpu_result, cpu_result, dtype):
    """The GPU's result equals the CPU's (within float tolerance)."""
    g, c = gpu_result.asnumpy(), cpu_result.asnumpy()
    assert g.shape == c.shape and g.dtype == c.dtype
    if np.dtype(dtype).kind == "f":
        rtol, atol = TOL[dtype]
        np.testing.assert_allclose(g, c, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, c)


def both(fn, *arrays):
    """fn on the CPU arrays and on their copies on gpu(0)."""
    cpu = [mx.nd.array(a, dtype=a.dtype) for a in arrays]
    gpu = [a.as_in_context(GPU) for a in cpu]
    out_g = fn(*gpu)
    assert out_g.context == GPU
    return out_g, fn(*cpu)
