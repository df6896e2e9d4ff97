"""The interleaved multi-head attention ops and div_sqrt_dim (op/attention.rs):
forward against NumPy (per-head q.k^T / sqrt(d) and att.v on the interleaved
projections), gradients against central differences, and bad inputs."""

import numpy as np
import pytest

import oxnet as mx
from _gradcheck import grad_check
from oxnet.base import MXNetError

nd = mx.nd
L, B, H, D = 3, 2, 2, 4


def split(x, parts):
    """(L, B, H*parts*D) -> list of `parts` arrays (B, H, L, D)."""
    l, b, _ = x.shape
    x = x.reshape(l, b, H, parts, -1)
    return [np.transpose(x[:, :, :, p], (1, 2, 0, 3)) for p in range(parts)]


def test_selfatt_forward():
    rng = np.random.RandomState(0)
    qkv = rng.randn(L, B, H * 3 * D)
    att = rng.randn(B * H, L, L)
    q, k, v = split(qkv, 3)
    want = np.einsum("bhid,bhjd->bhij", q / np.sqrt(D), k).reshape(B * H, L, L)
    got = nd.contrib.interleaved_matmul_selfatt_qk(nd.array(qkv, dtype="float64"), heads=H).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-10)
    want = np.einsum("bhij,bhjd->ibhd", att.reshape(B, H, L, L), v).reshape(L, B, H * D)
    got = nd.contrib.interleaved_matmul_selfatt_valatt(nd.array(qkv, dtype="float64"), nd.array(att, dtype="float64"),
                                                       heads=H).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_encdec_forward():
    rng = np.random.RandomState(1)
    lk = 5
    q = rng.randn(L, B, H * D)
    kv = rng.randn(lk, B, H * 2 * D)
    att = rng.randn(B * H, L, lk)
    (qh,) = split(q, 1)
    k, v = split(kv, 2)
    want = np.einsum("bhid,bhjd->bhij", qh / np.sqrt(D), k).reshape(B * H, L, lk)
    got = nd.contrib.interleaved_matmul_encdec_qk(nd.array(q), nd.array(kv), heads=H).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-5)
    want = np.einsum("bhij,bhjd->ibhd", att.reshape(B, H, L, lk), v).reshape(L, B, H * D)
    got = nd.contrib.interleaved_matmul_encdec_valatt(nd.array(kv), nd.array(att), heads=H).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_gradients():
    rng = np.random.RandomState(2)
    qkv = rng.randn(L, B, H * 3 * D)
    att = nd.array(rng.randn(B * H, L, L), dtype="float64")
    grad_check(lambda x: nd.contrib.interleaved_matmul_selfatt_qk(x, heads=H), qkv)
    grad_check(lambda x: nd.contrib.interleaved_matmul_selfatt_valatt(x, att, heads=H), qkv)
    qkv_nd = nd.array(qkv, dtype="float64")
    grad_check(lambda a: nd.contrib.interleaved_matmul_selfatt_valatt(qkv_nd, a, heads=H), att.asnumpy())
    q = rng.randn(L, B, H * D)
    kv = rng.randn(4, B, H * 2 * D)
    q_nd, kv_nd = nd.array(q, dtype="float64"), nd.array(kv, dtype="float64")
    grad_check(lambda x: nd.contrib.interleaved_matmul_encdec_qk(x, kv_nd, heads=H), q)
    grad_check(lambda x: nd.contrib.interleaved_matmul_encdec_qk(q_nd, x, heads=H), kv)
    att2 = nd.array(rng.randn(B * H, L, 4), dtype="float64")
    grad_check(lambda x: nd.contrib.interleaved_matmul_encdec_valatt(x, att2, heads=H), kv)
    grad_check(lambda a: nd.contrib.interleaved_matmul_encdec_valatt(kv_nd, a, heads=H), att2.asnumpy())


def test_div_sqrt_dim():
    x = np.random.RandomState(3).randn(2, 3, 9)
    np.testing.assert_allclose(nd.contrib.div_sqrt_dim(nd.array(x, dtype="float64")).asnumpy(), x / 3.0)
    grad_check(lambda a: nd.contrib.div_sqrt_dim(a), x)


def test_bad_inputs():
    with pytest.raises(MXNetError, match="interleaved_matmul_selfatt_qk"):
        nd.contrib.interleaved_matmul_selfatt_qk(nd.ones((2, 2, 10)), heads=3)
    with pytest.raises(MXNetError, match="interleaved_matmul_selfatt_valatt"):
        nd.contrib.interleaved_matmul_selfatt_valatt(nd.ones((2, 2, 12)), nd.ones((4, 2, 3)), heads=2)
    with pytest.raises(MXNetError, match="interleaved_matmul_encdec_qk"):
        nd.contrib.interleaved_matmul_encdec_qk(nd.ones((2, 2, 4)), nd.ones((2, 3, 8)), heads=2)
    with pytest.raises(MXNetError, match="div_sqrt_dim"):
        nd.contrib.div_sqrt_dim(nd.ones((2, 3), dtype="int32"))
