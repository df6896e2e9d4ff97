"""mx.nd.contrib.rand_zipfian / mx.sym.contrib.rand_zipfian (log-uniform candidate
sampling, composed of registry ops as in MXNet) against NumPy's formula; symbolic
samplers ignore keyword symbols as MXNet's composition does."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import nd
from oxnet.base import MXNetError


def _expected(classes, num_sampled, range_max):
    c = np.asarray(classes, dtype=np.float64)
    return np.log((c + 2) / (c + 1)) / np.log(range_max + 1) * num_sampled


def test_rand_zipfian_ndarray():
    mx.random.seed(7)
    true = nd.array([0, 3, 19, 7]).astype("int32")
    sampled, exp_true, exp_sampled = nd.contrib.rand_zipfian(true, 20000, 20)
    assert sampled.shape == (20000,) and sampled.dtype == np.int64
    assert exp_true.dtype == np.float64 and exp_sampled.dtype == np.float64
    s = sampled.asnumpy()
    assert s.min() >= 0 and s.max() < 20
    np.testing.assert_allclose(exp_true.asnumpy(), _expected([0, 3, 19, 7], 20000, 20))
    np.testing.assert_allclose(exp_sampled.asnumpy(), _expected(s, 20000, 20))
    # the empirical frequencies follow P(k) = log((k + 2) / (k + 1)) / log(21)
    freq = np.bincount(s, minlength=20) / 20000.0
    np.testing.assert_allclose(freq, _expected(np.arange(20), 1, 20), atol=0.01)


def test_rand_zipfian_symbol_matches_formula():
    out = mx.sym.Group(mx.sym.contrib.rand_zipfian(mx.sym.var("t"), 50, 10))
    assert len(out.list_outputs()) == 3
    true = nd.array([1, 2]).astype("int32")
    ex = out.bind(mx.cpu(), {"t": true})
    ex.forward()
    sampled, exp_true, exp_sampled = [o.asnumpy() for o in ex.outputs]
    assert sampled.shape == (50,) and ((sampled >= 0) & (sampled < 10)).all()
    np.testing.assert_allclose(exp_true, _expected([1, 2], 50, 10))
    np.testing.assert_allclose(exp_sampled, _expected(sampled, 50, 10))


def test_rand_zipfian_bad_arguments():
    with pytest.raises(MXNetError, match="positive"):
        nd.contrib.rand_zipfian(nd.array([1]), 0, 10)
    with pytest.raises(MXNetError, match="positive"):
        mx.sym.contrib.rand_zipfian(mx.sym.var("t"), 5, 0)


def test_sampler_symbol_ignores_keyword_symbols():
    # MXNet composes keyword symbols only into inputs not given positionally: an op
    # without inputs drops them (test_random passes data= to randn)
    s = mx.sym.random.normal(loc=1.0, scale=2.0, shape=(2, 3), data=mx.sym.var("unused"))
    assert s.list_arguments() == []
    assert s.infer_shape()[1] == [(2, 3)]
    # ops with inputs still reject unknown ones
    with pytest.raises(MXNetError, match="unknown input"):
        mx.sym.relu(mx.sym.var("x"), weight=mx.sym.var("w"))
