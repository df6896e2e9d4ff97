"""contrib.quantize, quantize_v2 and dequantize (op/quantize.rs) against NumPy
formulas of MXNet's int8 (symmetric) and uint8 (affine) schemes, and bad inputs."""

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError

nd = mx.nd


def test_quantize_int8_and_back():
    a = np.array([[0.1392, -0.5928], [0.6027, 0.8579]], np.float32)
    q, lo, hi = nd.contrib.quantize(nd.array(a), nd.array([-0.5]), nd.array([1.0]), out_type="int8")
    assert q.dtype == np.int8
    want = np.sign(a) * np.minimum(np.trunc(np.abs(a) * 127 + 0.5), 127)
    np.testing.assert_array_equal(q.asnumpy(), want)
    assert lo.asscalar() == -1.0 and hi.asscalar() == 1.0
    back = nd.contrib.dequantize(q, lo, hi).asnumpy()
    np.testing.assert_allclose(back, want / 127, rtol=1e-6)


def test_quantize_uint8_and_v2():
    a = np.array([0.0, 0.25, 0.5, 1.0], np.float32)
    q, lo, hi = nd.contrib.quantize(nd.array(a), nd.array([0.0]), nd.array([1.0]))
    assert q.dtype == np.uint8
    np.testing.assert_array_equal(q.asnumpy(), np.trunc(a * 255 + 0.5))
    np.testing.assert_allclose(nd.contrib.dequantize(q, lo, hi).asnumpy(), np.trunc(a * 255 + 0.5) / 255, rtol=1e-6)
    q2, lo2, hi2 = nd.contrib.quantize_v2(nd.array(a - 0.5))
    assert q2.dtype == np.int8 and hi2.asscalar() == 0.5
    np.testing.assert_array_equal(q2.asnumpy(), np.sign(a - 0.5) * np.trunc(np.abs(a - 0.5) * 254 + 0.5))
    q3, _, _ = nd.contrib.quantize_v2(nd.array(a), out_type="auto", min_calib_range=0.0, max_calib_range=1.0)
    assert q3.dtype == np.uint8


def test_quantize_bad_inputs():
    with pytest.raises(MXNetError, match="_contrib_quantize"):
        nd.contrib.quantize(nd.ones((2,)), nd.ones((2,)), nd.ones((1,)))
    with pytest.raises(MXNetError, match="_contrib_dequantize"):
        nd.contrib.dequantize(nd.ones((2,)), nd.ones((1,)), nd.ones((1,)))
