"""Correlation (op/correlation.rs) against a NumPy reference of FlowNet's
correlation (multiplicative and absolute-difference), its gradients against
central differences, symbol inference and bad inputs."""

import numpy as np
import pytest

import oxnet as mx
from _gradcheck import grad_check
from oxnet.base import MXNetError

nd = mx.nd


def corr_ref(d1, d2, k, md, s1, s2, pad, mul):
    N, C, H, W = d1.shape
    p1 = np.pad(d1, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    p2 = np.pad(d2, ((0, 0), (0, 0), (pad + 20, pad + 20), (pad + 20, pad + 20)))
    border = md + (k - 1) // 2
    oh = -(-(H + 2 * pad - 2 * border) // s1)
    ow = -(-(W + 2 * pad - 2 * border) // s1)
    r = md // s2
    g = 2 * r + 1
    out = np.zeros((N, g * g, oh, ow))
    for tc in range(g * g):
        dx, dy = (tc % g - r) * s2, (tc // g - r) * s2
        for i in range(oh):
            for j in range(ow):
                y1, x1 = i * s1 + md, j * s1 + md
                a = p1[:, :, y1:y1 + k, x1:x1 + k]
                b = p2[:, :, y1 + dy + 20:y1 + dy + 20 + k, x1 + dx + 20:x1 + dx + 20 + k]
                a = np.pad(a, ((0, 0), (0, 0), (0, k - a.shape[2]), (0, k - a.shape[3])))
                v = a * b if mul else np.abs(a - b)
                out[:, tc, i, j] = v.sum(axis=(1, 2, 3))
    return out / (k * k * C)


@pytest.mark.parametrize("k,md,s1,s2,pad,mul", [(1, 2, 1, 1, 2, True), (3, 2, 2, 2, 1, False), (3, 1, 1, 1, 0, True)])
def test_correlation_forward_and_grad(k, md, s1, s2, pad, mul):
    rng = np.random.RandomState(0)
    d1, d2 = rng.randn(2, 2, 6, 7), rng.randn(2, 2, 6, 7)
    kw = dict(kernel_size=k, max_displacement=md, stride1=s1, stride2=s2, pad_size=pad, is_multiply=mul)
    out = nd.Correlation(nd.array(d1, dtype="float64"), nd.array(d2, dtype="float64"), **kw).asnumpy()
    np.testing.assert_allclose(out, corr_ref(d1, d2, k, md, s1, s2, pad, mul), rtol=1e-10, atol=1e-12)
    a, b = nd.array(d1, dtype="float64"), nd.array(d2, dtype="float64")
    grad_check(lambda x: nd.Correlation(x, b, **kw), d1, rtol=1e-4, atol=1e-6)
    grad_check(lambda x: nd.Correlation(a, x, **kw), d2, rtol=1e-4, atol=1e-6)


def test_correlation_symbol_and_bad_inputs():
    s = mx.sym.Correlation(mx.sym.var("a"), mx.sym.var("b"), max_displacement=2, pad_size=2)
    args, outs, _ = s.infer_shape(a=(1, 3, 8, 8))
    assert args == [(1, 3, 8, 8), (1, 3, 8, 8)] and outs == [(1, 25, 8, 8)]
    x = nd.ones((1, 1, 28, 28))
    with pytest.raises(MXNetError, match="Correlation"):
        nd.Correlation(x, x, kernel_size=28)
    with pytest.raises(MXNetError, match="Correlation"):
        nd.Correlation(x, nd.ones((1, 1, 28, 27)))
    assert nd.Correlation(x, x, kernel_size=9).shape == (1, 9, 18, 18)
