"""Initializer details as MXNet 1.9.1: PReLU's gamma defaults to 0.25, Constant.dumps of
arrays, FusedRNN's packed layout, mx.init.load."""

import json

import numpy as np
import pytest

import oxnet as mx


def test_prelu_gamma_gets_constant_025():
    s = mx.sym.LeakyReLU(mx.sym.var("data"), act_type="prelu", name="lrelu")
    assert mx.sym.LeakyReLU(mx.sym.var("data"), act_type="leaky").list_arguments() == ["data"]
    assert s.attr_dict()["lrelu_gamma"]["__init__"] == '["Constant", {"value": 0.25}]'
    mod = mx.mod.Module(s, label_names=None)
    mod.bind(data_shapes=[("data", (4, 6))])
    mod.init_params()
    np.testing.assert_array_equal(mod.get_params()[0]["lrelu_gamma"].asnumpy(),
                                  np.full((6,), 0.25, np.float32))


@pytest.mark.parametrize("value", [mx.nd.ones((2, 3)), np.ones((2, 3))])
def test_constant_dumps_arrays_as_lists(value):
    init = mx.init.Constant(value)
    assert json.loads(init.dumps()) == ["constant", {"value": [[1.0] * 3] * 2}]
    assert init.dumps() == json.dumps(["constant", init._kwargs])
    assert mx.init.Constant(1).dumps() == '["constant", {"value": 1}]'


def _rnn_size(mode, hidden, layers, inputs, bidirectional):
    g = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}[mode]
    d = 2 if bidirectional else 1
    return (d * g * hidden * (inputs + hidden) + (layers - 1) * d * g * hidden * (hidden * d + hidden)
            + layers * d * 2 * g * hidden)


def test_fused_rnn_layout_weights_then_biases_with_forget_bias():
    h, layers, inputs = 3, 2, 5
    n = _rnn_size("lstm", h, layers, inputs, True)
    arr = mx.nd.zeros((n,))
    init = mx.init.FusedRNN(mx.init.Constant(0.5), h, layers, "lstm", True, forget_bias=2.0)
    init._init_weight(mx.init.InitDesc("lstm_parameters"), arr)
    a = arr.asnumpy()
    n_bias = layers * 2 * 2 * 4 * h
    assert (a[:n - n_bias] == 0.5).all()                 # every weight piece
    biases = a[n - n_bias:].reshape(layers * 2 * 2, 4, h)  # (layer, dir, i2h/h2h) x gates
    assert (biases[:, 1] == 2.0).all()                   # the forget gate
    assert (biases[:, [0, 2, 3]] == 0).all()             # bias names initialise to zero
    d = json.loads(init.dumps())
    assert d[0] == "fusedrnn" and d[1]["num_hidden"] == 3 and d[1]["mode"] == "lstm"
    again = mx.init.FusedRNN(mx.init.Constant(0.5).dumps(), h, layers, "lstm", True)
    assert isinstance(again._init, mx.init.Constant)


def test_fused_rnn_falls_back_to_the_global_initializer_and_checks_sizes():
    n = _rnn_size("gru", 4, 1, 2, False)
    arr = mx.nd.zeros((n,))
    init = mx.init.FusedRNN(None, 4, 1, "gru")
    init._init_weight(mx.init.InitDesc("p", global_init=mx.init.One()), arr)
    assert (arr.asnumpy()[:3 * 4 * 6] == 1).all() and (arr.asnumpy()[3 * 4 * 6:] == 0).all()
    with pytest.raises(ValueError, match="do not fit"):
        init._init_weight(mx.init.InitDesc("p", global_init=mx.init.One()), mx.nd.zeros((n + 1,)))
    with pytest.raises(ValueError, match="mode"):
        mx.init.FusedRNN(None, 4, 1, "bogus")


def test_init_load_is_ndarray_load(tmp_path):
    f = str(tmp_path / "p.params")
    mx.nd.save(f, {"w": mx.nd.ones((2,))})
    assert mx.init.load is mx.nd.load
    np.testing.assert_array_equal(mx.init.load(f)["w"].asnumpy(), [1, 1])


def test_arange_casts_start_and_step_to_the_dtype():
    # As NumPy and MXNet: integer outputs use int(start) and int(step).
    for dtype in ["int32", "uint8", "float32"]:
        for cfg in [(1.3, 456.6, 1.3), (50, -50, -2), (5, 100, 4)]:
            want = np.repeat(np.arange(*cfg, dtype=dtype), 2)
            got = mx.nd.arange(*cfg, repeat=2, dtype=dtype).asnumpy()
            np.testing.assert_allclose(got, want, rtol=1e-5)
