"""GEMM-based ops on gpu(0) (cuBLAS plus the convolution kernels) against the CPU:
dot, batch_dot, linalg_gemm/gemm2, FullyConnected, Convolution, Deconvolution,
forward and gradients."""

import os

import numpy as np
import pytest

import oxnet as mx

from .common import GPU, rand, requires_gpu

pytestmark = requires_gpu

TOL = {"float32": (1e-4, 1e-4), "float64": (1e-10, 1e-10), "float16": (2e-2, 2e-2)}


def close(g, c, dtype):
    g = g.asnumpy() if hasattr(g, "asnumpy") else g
    c = c.asnumpy() if hasattr(c, "asnumpy") else c
    assert g.shape == c.shape and g.dtype == c.dtype
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(g.astype("float64"), c.astype("float64"), rtol=rtol, atol=atol * max(1.0, np.abs(c).max()))


def run_both(fn, arrays, dtype, grad=True):
    """fn(*arrays) on the CPU and on gpu(0), forward and (with grad) the gradients of
    every input for a random head gradient; compares them."""
    outs = {}
    for ctx in (mx.cpu(), GPU):
        xs = [mx.nd.array(a, dtype=a.dtype, ctx=ctx) for a in arrays]
        if grad:
            for x in xs:
                x.attach_grad()
            with mx.autograd.record():
                y = fn(*xs)
            head = mx.nd.array(rand(y.shape, dtype, seed=9), dtype=dtype, ctx=ctx)
            y.backward(head)
            outs[ctx.device_type] = (y, [x.grad for x in xs])
        else:
            outs[ctx.device_type] = (fn(*xs), [])
    (yc, gc), (yg, gg) = outs["cpu"], outs["gpu"]
    assert yg.context == GPU
    close(yg, yc, dtype)
    for a, b in zip(gg, gc):
        close(a, b, dtype)


FLOATS = ["float32", "float64", "float16"]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("sa,sb,ta,tb", [((5, 7), (7, 3), False, False), ((7, 5), (7, 3), True, False),
                                         ((5, 7), (3, 7), False, True), ((7, 5), (3, 7), True, True),
                                         ((2, 3, 4), (4, 5), False, False), ((6,), (6,), False, False),
                                         ((64, 96), (96, 33), False, False)])
def test_dot(dtype, sa, sb, ta, tb):
    a, b = rand(sa, dtype, -1, 1, seed=1), rand(sb, dtype, -1, 1, seed=2)
    run_both(lambda x, y: mx.nd.dot(x, y, transpose_a=ta, transpose_b=tb), [a, b], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_batch_dot(dtype, ta, tb):
    sa = (4, 6, 5) if ta else (4, 5, 6)
    sb = (4, 3, 6) if tb else (4, 6, 3)
    a, b = rand(sa, dtype, -1, 1, seed=1), rand(sb, dtype, -1, 1, seed=2)
    run_both(lambda x, y: mx.nd.batch_dot(x, y, transpose_a=ta, transpose_b=tb), [a, b], dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linalg_gemm_and_gemm2(dtype):
    a, b, c = rand((2, 3, 4), dtype, seed=1), rand((2, 4, 5), dtype, seed=2), rand((2, 3, 5), dtype, seed=3)
    run_both(lambda x, y: mx.nd.linalg.gemm2(x, y, alpha=0.5), [a, b], dtype)
    run_both(lambda x, y, z: mx.nd.linalg.gemm(x, y, z, alpha=2.0, beta=0.5), [a, b, c], dtype)
    # Row axis not next to last: several products per leading index.
    a2, b2 = rand((2, 3, 2, 4), dtype, seed=4), rand((2, 4, 2, 5), dtype, seed=5)
    run_both(lambda x, y: mx.nd.linalg.gemm2(x, y, axis=-3), [a2, b2], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,flatten,no_bias", [((8, 10), True, False), ((4, 3, 5), True, True),
                                                   ((4, 3, 5), False, False), ((1, 7), True, False)])
def test_fully_connected(dtype, shape, flatten, no_bias):
    h = 6
    k = int(np.prod(shape[1:])) if flatten else shape[-1]
    arrays = [rand(shape, dtype, -1, 1, seed=1), rand((h, k), dtype, -1, 1, seed=2)]
    if not no_bias:
        arrays.append(rand((h,), dtype, -1, 1, seed=3))

    def fn(*xs):
        return mx.nd.FullyConnected(*xs, num_hidden=h, flatten=flatten, no_bias=no_bias)
    run_both(fn, arrays, dtype)


CONV_CASES = [
    # data shape, kernel, stride, pad, dilate, num_filter, groups, no_bias
    ((2, 3, 9, 9), (3, 3), (1, 1), (1, 1), (1, 1), 4, 1, False),
    ((2, 4, 8, 7), (3, 2), (2, 1), (0, 1), (1, 1), 6, 2, False),
    ((1, 4, 10, 10), (3, 3), (1, 1), (2, 2), (2, 2), 4, 4, True),
    ((3, 2, 6, 6), (1, 1), (1, 1), (0, 0), (1, 1), 5, 1, False),
    ((2, 3, 11), (3,), (2,), (1,), (1,), 4, 1, False),
    ((1, 2, 5, 6, 4), (2, 3, 2), (1, 2, 1), (1, 0, 1), (1, 1, 1), 3, 1, False),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CONV_CASES)
def test_convolution(dtype, case):
    shape, k, s, p, d, f, g, no_bias = case
    c = shape[1]
    arrays = [rand(shape, dtype, -1, 1, seed=1), rand((f, c // g) + k, dtype, -1, 1, seed=2)]
    if not no_bias:
        arrays.append(rand((f,), dtype, -1, 1, seed=3))

    def fn(*xs):
        return mx.nd.Convolution(*xs, kernel=k, stride=s, pad=p, dilate=d, num_filter=f, num_group=g, no_bias=no_bias)
    run_both(fn, arrays, dtype)


def test_convolution_float16():
    x, w, b = rand((2, 4, 8, 8), "float16", -1, 1, seed=1), rand((8, 4, 3, 3), "float16", -1, 1, seed=2), \
        rand((8,), "float16", -1, 1, seed=3)
    run_both(lambda *xs: mx.nd.Convolution(*xs, kernel=(3, 3), pad=(1, 1), num_filter=8), [x, w, b], "float16")


def test_convolution_weight_only_gradient():
    """The first layer of a net: no gradient for the data (_backward_Convolution_weight)."""
    x, w = rand((2, 3, 8, 8), "float32", seed=1), rand((4, 3, 3, 3), "float32", seed=2)
    res = {}
    for ctx in (mx.cpu(), GPU):
        xa, wa = mx.nd.array(x, ctx=ctx), mx.nd.array(w, ctx=ctx)
        wa.attach_grad()
        with mx.autograd.record():
            y = mx.nd.Convolution(xa, wa, kernel=(3, 3), num_filter=4, no_bias=True)
        y.backward()
        res[ctx.device_type] = wa.grad.asnumpy()
    np.testing.assert_allclose(res["gpu"], res["cpu"], rtol=1e-4, atol=1e-4)


def test_convolution_large_batch_spans_several_chunks():
    """A batch whose columns exceed one im2col chunk is processed in pieces; same result."""
    x, w = rand((40, 64, 32, 32), "float32", seed=1), rand((8, 64, 5, 5), "float32", seed=2)
    run_both(lambda a, b: mx.nd.Convolution(a, b, kernel=(5, 5), pad=(2, 2), num_filter=8, no_bias=True,
                                            cudnn_off=True), [x, w], "float32")


DECONV_CASES = [
    ((2, 3, 5, 5), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 4, 1, False),
    ((1, 4, 4, 6), (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), 2, 2, True),
    ((2, 2, 7), (3,), (1,), (0,), (0,), (2,), 3, 1, False),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", DECONV_CASES)
def test_deconvolution(dtype, case):
    shape, k, s, p, adj, d, f, g, no_bias = case
    c = shape[1]
    arrays = [rand(shape, dtype, -1, 1, seed=1), rand((c, f // g) + k, dtype, -1, 1, seed=2)]
    if not no_bias:
        arrays.append(rand((f,), dtype, -1, 1, seed=3))

    def fn(*xs):
        return mx.nd.Deconvolution(*xs, kernel=k, stride=s, pad=p, adj=adj, dilate=d, num_filter=f, num_group=g,
                                   no_bias=no_bias)
    run_both(fn, arrays, dtype)


def test_integer_dot_is_refused_with_the_op_named():
    a = mx.nd.ones((2, 2), ctx=GPU, dtype="int32")
    with pytest.raises(mx.MXNetError, match="dot"):
        mx.nd.dot(a, a).wait_to_read()


def test_library_report_matches_features():
    libs = mx.runtime.cuda_libraries()
    assert set(libs) == {"cuBLAS", "cuBLASLt", "cuDNN", "NCCL"}
    feats = mx.runtime.Features()
    assert feats.is_enabled("CUDNN") == (libs["cuDNN"] is not None)
    assert feats.is_enabled("NCCL") == (libs["NCCL"] is not None)


_CUDNN_SCRIPT = r"""
import sys
import numpy as np
import oxnet as mx
from oxnet import _core
from tests.gpu import test_gpu_blas as t

enabled, version, before = _core.cudnn_info()
assert enabled and version is not None and version >= 90000, (enabled, version)
GPU = mx.gpu(0)
cases = [((4, 6, 11, 11), (8, 6, 3, 3), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), num_filter=8), 1),
         ((2, 4, 9, 9), (8, 2, 3, 3), dict(kernel=(3, 3), pad=(1, 1), num_filter=8, num_group=2), 1),
         ((2, 3, 16), (5, 3, 3), dict(kernel=(3,), pad=(1,), num_filter=5), 1),
         ((1, 2, 5, 6, 6), (4, 2, 3, 3, 3), dict(kernel=(3, 3, 3), pad=(1, 1, 1), num_filter=4), 1),
         # Each filter-gradient entry sums 40,960 products in cuDNN's own order.
         ((40, 64, 32, 32), (8, 64, 5, 5), dict(kernel=(5, 5), pad=(2, 2), num_filter=8), 10)]
for dtype in ("float32", "float16", "bfloat16"):
    for xs, ws, kw, loose in cases:
        x = t.rand(xs, "float32", -1, 1, seed=4)
        w = t.rand(ws, "float32", -1, 1, seed=5)
        b = t.rand((ws[0],), "float32", -1, 1, seed=6)
        outs = []
        for off in (False, True):
            arrs = [mx.nd.array(a, ctx=GPU).astype(dtype) for a in (x, w, b)]
            for v in arrs:
                v.attach_grad()
            with mx.autograd.record():
                y = mx.nd.Convolution(*arrs, cudnn_off=off, **kw)
            y.backward(mx.nd.array(t.rand(y.shape, "float32", seed=7), ctx=GPU).astype(dtype))
            outs.append([y.astype("float32").asnumpy()] + [v.grad.astype("float32").asnumpy() for v in arrs])
        rtol = {"float32": 1e-4 * loose, "float16": 2e-2, "bfloat16": 3e-2}[dtype]
        for a, c in zip(*outs):
            np.testing.assert_allclose(a, c, rtol=rtol, atol=rtol * max(1.0, np.abs(c).max()),
                                       err_msg="%s %s" % (dtype, xs))
after = _core.cudnn_info()[2]
assert after >= before + 3 * 3 * len(cases), (before, after)
print("OK")
"""


def test_cudnn_convolutions_match_im2col_when_enabled():
    """OXNET_CUDNN=1 (in a child process: the switch is read once): forward, data,
    filter and bias gradients through cuDNN equal the im2col + cuBLAS path
    (cudnn_off=True) for 1-D, 2-D, 3-D and grouped convolutions in float32, float16
    and bfloat16, and cuDNN really ran them."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, OXNET_CUDNN="1", PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", _CUDNN_SCRIPT], env=env, capture_output=True, text=True, timeout=300,
                       cwd=root)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout[-3000:] + r.stderr[-3000:]


def test_convolutions_default_to_im2col():
    from oxnet import _core
    enabled, _, before = _core.cudnn_info()
    if os.environ.get("OXNET_CUDNN") != "1":
        assert not enabled
    x = mx.nd.array(rand((2, 3, 8, 8), "float32", seed=1), ctx=GPU)
    w = mx.nd.array(rand((4, 3, 3, 3), "float32", seed=2), ctx=GPU)
    mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=4, no_bias=True).wait_to_read()
    if not enabled:
        assert _core.cudnn_info()[2] == before
