"""Block details as MXNet 1.9.1: register_op_hook on hybridized blocks, summary()
refusing hybridized blocks, a warning for Blocks hidden in list/dict attributes,
gluon.nn.SymbolBlock."""

import warnings

import numpy as np
import pytest

import oxnet as mx
from oxnet import gluon, nd
from oxnet.gluon import nn


def test_op_hook_names_ops_and_values():
    net = nn.HybridSequential(prefix="m_")
    with net.name_scope():
        net.add(nn.Dense(2, in_units=3))
    net.initialize(mx.init.Constant(0.5))
    net.hybridize()
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append((name, op, arr.asnumpy())))
    x = np.arange(6.0).reshape(2, 3)
    out = net(nd.array(x))
    assert [(n, o) for n, o, _ in seen] == [("m_dense0_fwd_output", "FullyConnected")]
    np.testing.assert_allclose(seen[0][2], out.asnumpy())
    np.testing.assert_allclose(out.asnumpy(), x.sum(1, keepdims=True) * 0.5 + np.zeros((2, 2)))
    seen.clear()
    net.register_op_hook(lambda name, op, arr: seen.append(name), monitor_all=True)
    net(nd.array(x))
    assert seen == ["m_dense0_fwd_data", "m_dense0_fwd_weight", "m_dense0_fwd_bias",
                    "m_dense0_fwd_output"]


def test_summary_refuses_hybridized():
    net = nn.HybridSequential()
    net.add(nn.Dense(2, in_units=3))
    net.initialize()
    net.summary(nd.ones((1, 3)))
    net.hybridize()
    with pytest.raises(AssertionError, match="must not be hybridized"):
        net.summary(nd.ones((1, 3)))


def test_blocks_in_containers_warn():
    class Hidden(gluon.Block):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Dense(2), nn.Dense(3)]
            self.by_name = {"a": nn.Dense(1)}

    class Fine(gluon.Block):
        def __init__(self):
            super().__init__()
            self.seq = nn.Sequential()
            self.seq.add(nn.Dense(2))
            self.meta = {"a": 1, "b": [1, 2]}

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        Hidden().collect_params()
    msgs = [str(x.message) for x in w]
    assert any("Hidden.layers" in m for m in msgs) and any("Hidden.by_name" in m for m in msgs)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        Fine().collect_params()
    assert not w


def test_nn_symbolblock():
    assert nn.SymbolBlock is gluon.SymbolBlock


def test_parameter_unknown_stype_is_assertion():
    with pytest.raises(AssertionError, match="stype"):
        gluon.Parameter("w", shape=(2,), stype="invalid")
    with pytest.raises(AssertionError, match="grad_stype"):
        gluon.Parameter("w", shape=(2,), grad_stype="invalid")
