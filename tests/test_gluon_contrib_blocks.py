"""gluon.contrib: the convolutional RNN/LSTM/GRU cells, LSTMPCell (and gluon.rnn.LSTM
with projection_size against a stack of them), gluon.rnn layers' _unfuse,
SyncBatchNorm, SparseEmbedding and dynamic_unroll; NumPy as the oracle, clear errors
for bad inputs."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon, nd
from oxnet.base import MXNetError
from oxnet.gluon import contrib, rnn
from oxnet.gluon.contrib.nn import SparseEmbedding, SyncBatchNorm


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _conv_nd(x, w, b, pad):
    """Stride-1 cross-correlation, NC... layout: x (N, C, *S), w (F, C, *K)."""
    d = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    k = w.shape[2:]
    out_sp = tuple(x.shape[2 + i] - k[i] + 1 for i in range(d))
    out = np.zeros((x.shape[0], w.shape[0]) + out_sp)
    for idx in np.ndindex(*out_sp):
        sl = tuple(slice(i, i + kk) for i, kk in zip(idx, k))
        patch = x[(slice(None), slice(None)) + sl]            # (N, C, *K)
        out[(slice(None), slice(None)) + idx] = np.tensordot(
            patch, w, axes=(list(range(1, d + 2)), list(range(1, d + 2))))
    return out + b.reshape((1, -1) + (1,) * d)


def _params(cell):
    return {k[len(cell.prefix):]: v.data().asnumpy().astype(np.float64)
            for k, v in cell.collect_params().items()}


def _init_random(block, seed=0):
    rng = np.random.RandomState(seed)
    for p in block.collect_params().values():
        p.set_data(nd.array(rng.uniform(-0.5, 0.5, p.shape)))


# ---- convolutional cells ----------------------------------------------------------
@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_conv_cell_one_step_against_numpy(dims, kind):
    spatial = (7, 6)[:dims]
    cls = getattr(contrib.rnn, "Conv%dD%sCell" % (dims, kind))
    cell = cls((3,) + spatial, 4, i2h_kernel=3, h2h_kernel=3, i2h_pad=1)
    cell.initialize()
    x = np.random.RandomState(1).uniform(-1, 1, (2, 3) + spatial)
    states = cell.begin_state(batch_size=2)
    assert [s.shape for s in states] == [(2, 4) + spatial] * (2 if kind == "LSTM" else 1)
    states = [nd.array(np.random.RandomState(2 + i).uniform(-1, 1, s.shape))
              for i, s in enumerate(states)]
    out, new = cell(nd.array(x), states)
    _init_random(cell)
    out, new = cell(nd.array(x), states)
    p = _params(cell)
    h = states[0].asnumpy().astype(np.float64)
    i2h = _conv_nd(x, p["i2h_weight"], p["i2h_bias"], (1,) * dims)
    h2h = _conv_nd(h, p["h2h_weight"], p["h2h_bias"], (1,) * dims)
    if kind == "RNN":
        want = [np.tanh(i2h + h2h)]
    elif kind == "LSTM":
        g = np.split(i2h + h2h, 4, axis=1)
        c = _sigmoid(g[1]) * states[1].asnumpy() + _sigmoid(g[0]) * np.tanh(g[2])
        want = [_sigmoid(g[3]) * np.tanh(c), c]
    else:
        ir, iz, i_n = np.split(i2h, 3, axis=1)
        hr, hz, hn = np.split(h2h, 3, axis=1)
        r, z = _sigmoid(ir + hr), _sigmoid(iz + hz)
        n = np.tanh(i_n + r * hn)
        want = [(1 - z) * n + z * h]
    np.testing.assert_allclose(out.asnumpy(), want[0], rtol=1e-4, atol=1e-5)
    for got, w in zip(new, want):
        np.testing.assert_allclose(got.asnumpy(), w, rtol=1e-4, atol=1e-5)


def test_conv_cell_names_shapes_and_symbolic_unroll():
    cell = contrib.rnn.Conv2DLSTMCell((10, 20, 50), 100, 3, 3, prefix="rnn_")
    assert cell.i2h_weight.shape == (400, 10, 3, 3)
    assert cell.h2h_weight.shape == (400, 100, 3, 3)
    assert cell.i2h_bias.shape == (400,)
    inputs = [mx.sym.Variable("rnn_t%d_data" % i) for i in range(2)]
    outputs, _ = cell.unroll(2, inputs)
    outputs = mx.sym.Group(outputs)
    assert outputs.list_outputs() == ["rnn_t0_out_output", "rnn_t1_out_output"]
    _, outs, _ = outputs.infer_shape(rnn_t0_data=(1, 10, 20, 50), rnn_t1_data=(1, 10, 20, 50))
    assert outs == [(1, 100, 18, 48)] * 2
    assert repr(cell) == "Conv2DLSTMCell(10 -> 400, tanh, NCHW)"
    assert contrib.rnn.Conv1DGRUCell((4, 9), 5, 3, 3).h2h_weight.shape == (15, 5, 3)


def test_conv_cell_channels_last_layout():
    cell = contrib.rnn.Conv1DRNNCell((9, 4), 5, 3, 3, conv_layout="NWC")
    assert cell.i2h_weight.shape == (5, 3, 4)
    assert cell.state_info(2)[0]["shape"] == (2, 7, 5)


def test_conv_cell_deferred_in_channels_and_unroll_gradients():
    for hybrid in (False, True):
        cell = contrib.rnn.Conv1DLSTMCell((0, 7), 10, (3,), (3,))
        if hybrid:
            cell.hybridize()
        cell.initialize()
        x = nd.ones((8, 3, 5, 7))
        x.attach_grad()
        with autograd.record():
            out, states = cell.unroll(3, x, merge_outputs=True)
            out.sum().backward()
        assert cell.i2h_weight.shape == (40, 5, 3)
        assert out.shape == (8, 3, 10, 5)
        assert x.grad.shape == x.shape and np.abs(x.grad.asnumpy()).sum() > 0


def test_conv_cell_bad_arguments():
    with pytest.raises(MXNetError, match="odd"):
        contrib.rnn.Conv1DRNNCell((3, 7), 4, 3, 2)
    with pytest.raises(MXNetError, match="input_shape"):
        contrib.rnn.Conv2DRNNCell((3, 7), 4, 3, 3)
    with pytest.raises(MXNetError, match="conv_layout"):
        contrib.rnn.Conv1DRNNCell((3, 7), 4, 3, 3, conv_layout="NCHW")
    with pytest.raises(MXNetError, match="i2h_kernel"):
        contrib.rnn.Conv2DRNNCell((3, 7, 7), 4, (3, 3, 3), 3)
    with pytest.raises(MXNetError, match="does not fit"):
        contrib.rnn.Conv1DRNNCell((3, 2), 4, 5, 3)
    with pytest.raises(MXNetError, match="does not fit"):      # an empty output
        contrib.rnn.Conv1DRNNCell((3, 2), 4, 3, 3)
    cell = contrib.rnn.Conv1DRNNCell((3, 7), 4, 3, 3)
    cell.initialize()
    with pytest.raises(MXNetError, match="3 dimensions"):
        cell(nd.ones((2, 3, 7, 1)), cell.begin_state(batch_size=2))
    with pytest.raises(MXNetError, match="state 0"):
        cell(nd.ones((2, 3, 7)), [nd.ones((2, 4, 6))])


# ---- LSTMPCell --------------------------------------------------------------------
def _lstmp_numpy(p, x, r, c):
    g = np.split(x @ p["i2h_weight"].T + p["i2h_bias"] + r @ p["h2h_weight"].T
                 + p["h2h_bias"], 4, axis=1)
    c = _sigmoid(g[1]) * c + _sigmoid(g[0]) * np.tanh(g[2])
    h = _sigmoid(g[3]) * np.tanh(c)
    return h @ p["h2r_weight"].T, c


def test_lstmp_cell_against_numpy():
    cell = contrib.rnn.LSTMPCell(6, 3, prefix="p_")
    assert sorted(cell.collect_params().keys()) == [
        "p_h2h_bias", "p_h2h_weight", "p_h2r_weight", "p_i2h_bias", "p_i2h_weight"]
    cell.initialize()
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (4, 3, 5))   # NTC
    out, (r, c) = cell.unroll(3, nd.array(x), merge_outputs=True)
    _init_random(cell)
    out, (r, c) = cell.unroll(3, nd.array(x), merge_outputs=True)
    p = _params(cell)
    assert p["h2r_weight"].shape == (3, 6) and p["h2h_weight"].shape == (24, 3)
    rr, cc = np.zeros((4, 3)), np.zeros((4, 6))
    steps = []
    for t in range(3):
        rr, cc = _lstmp_numpy(p, x[:, t], rr, cc)
        steps.append(rr)
    np.testing.assert_allclose(out.asnumpy(), np.stack(steps, 1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(r.asnumpy(), rr, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c.asnumpy(), cc, rtol=1e-4, atol=1e-5)
    assert repr(cell) == "LSTMPCell(5 -> 24 -> 3)"


def test_lstm_projection_layer_matches_lstmp_stack():
    for bidirectional in (False, True):
        layer = rnn.LSTM(8, projection_size=4, num_layers=2, layout="TNC",
                         bidirectional=bidirectional, prefix="lstm0_")
        stack = rnn.HybridSequentialRNNCell(prefix="lstm0_")
        with stack.name_scope():
            for i in range(2):
                if bidirectional:
                    stack.add(rnn.BidirectionalCell(
                        contrib.rnn.LSTMPCell(8, 4, prefix="l%d_" % i),
                        contrib.rnn.LSTMPCell(8, 4, prefix="r%d_" % i)))
                else:
                    stack.add(contrib.rnn.LSTMPCell(8, 4, prefix="l%d_" % i))
        layer.initialize()
        stack.initialize()
        x = nd.random.uniform(shape=(3, 2, 5))
        begin = layer.begin_state(2)
        layer.infer_shape(x, begin)
        rng = np.random.RandomState(3)
        for name, p in layer.collect_params().items():
            w = nd.array(rng.uniform(-0.5, 0.5, p.shape))
            p.set_data(w)
            stack.collect_params()[name].set_data(w)
        out, states = layer(x, begin)
        sout, sstates = stack.unroll(3, x, begin_state=stack.begin_state(batch_size=2),
                                     layout="TNC", merge_outputs=True)
        np.testing.assert_allclose(out.asnumpy(), sout.asnumpy(), rtol=1e-4, atol=1e-5)
        h = np.stack([s.asnumpy() for s in sstates[0::2]])
        c = np.stack([s.asnumpy() for s in sstates[1::2]])
        np.testing.assert_allclose(states[0].asnumpy(), h, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(states[1].asnumpy(), c, rtol=1e-4, atol=1e-5)


def test_lstmp_bad_arguments():
    with pytest.raises(MXNetError, match="projection_size"):
        contrib.rnn.LSTMPCell(8, 0)
    cell = contrib.rnn.LSTMPCell(8, 4)
    cell.initialize()
    with pytest.raises(MXNetError, match="states"):
        cell(nd.ones((2, 5)), [nd.ones((2, 8)), nd.ones((2, 8))])


# ---- _unfuse ----------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
def test_unfuse_matches_layer(mode):
    if mode == "lstm":
        layer = rnn.LSTM(4, num_layers=2, bidirectional=True)
    elif mode == "gru":
        layer = rnn.GRU(4, num_layers=2)
    else:
        layer = rnn.RNN(4, num_layers=2, activation=mode[4:], bidirectional=True)
    cells = layer._unfuse()
    assert isinstance(cells, rnn.HybridSequentialRNNCell)
    layer.initialize()
    x = nd.random.uniform(-1, 1, shape=(3, 2, 5))
    y = layer(x)
    _init_random(layer, seed=7)
    y = layer(x)
    y_cell = cells.unroll(3, x, layout="TNC", merge_outputs=True)[0]
    np.testing.assert_allclose(y.asnumpy(), y_cell.asnumpy(), rtol=1e-4, atol=1e-5)
    assert sorted(cells.collect_params().keys()) == sorted(layer.collect_params().keys())


def test_unfuse_refuses_projection_and_clipping():
    with pytest.raises(MXNetError, match="projection"):
        rnn.LSTM(4, projection_size=2)._unfuse()
    with pytest.raises(MXNetError, match="clipping"):
        rnn.LSTM(4, state_clip_min=-1, state_clip_max=1)._unfuse()


# ---- SyncBatchNorm, SparseEmbedding -----------------------------------------------
def test_sync_batchnorm_single_device_is_batchnorm():
    x = nd.random.uniform(shape=(4, 3, 5))
    sbn = SyncBatchNorm(in_channels=3, num_devices=1)
    bn = gluon.nn.BatchNorm(in_channels=3)
    for b in (sbn, bn):
        b.initialize()
    with autograd.record():
        ys = sbn(x)
        yb = bn(x)
    xn = x.asnumpy()
    want = (xn - xn.mean(axis=(0, 2), keepdims=True)) / np.sqrt(
        xn.var(axis=(0, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(ys.asnumpy(), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ys.asnumpy(), yb.asnumpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(sbn.running_mean.data().asnumpy(),
                               bn.running_mean.data().asnumpy(), rtol=1e-6)
    sbn.hybridize()
    np.testing.assert_allclose(sbn(x).asnumpy(), bn(x).asnumpy(), rtol=1e-6, atol=1e-6)
    assert sbn._kwargs["ndev"] == 1 and sbn._kwargs["key"] == sbn.prefix


def test_sync_batchnorm_default_devices_and_errors():
    with pytest.warns(UserWarning, match="num_devices"):
        b = SyncBatchNorm()
    assert b._kwargs["ndev"] == max(mx.context.num_gpus(), 1)
    with pytest.raises(MXNetError, match="num_devices"):
        SyncBatchNorm(num_devices=0)
    # sharing statistics across devices is not supported: a clear error
    two = SyncBatchNorm(in_channels=3, num_devices=2)
    two.initialize()
    with pytest.raises(MXNetError, match="SyncBatchNorm.*ndev"):
        two(nd.ones((2, 3)))


def test_sparse_embedding_row_sparse_gradient():
    from oxnet import gluon
    layer = SparseEmbedding(10, 4)
    assert repr(layer) == "SparseEmbedding(10 -> 4, float32)"
    layer.initialize()
    trainer = gluon.Trainer(layer.collect_params(), "sgd", {"learning_rate": 1.0})
    all_rows = nd.arange(0, 10, dtype="int64")
    w = layer.weight.row_sparse_data(all_rows).asnumpy()
    x = nd.array([3, 4, 2, 0, 1])
    with autograd.record():
        y = layer(x)
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), w[[3, 4, 2, 0, 1]])
    grad = layer.weight.grad()
    assert grad.stype == "row_sparse"
    g = grad.asnumpy()
    assert (g[:5] == 1).all() and (g[5:] == 0).all()
    trainer.step(1)
    # only the looked-up rows moved
    w2 = layer.weight.row_sparse_data(all_rows).asnumpy()
    np.testing.assert_allclose(w2[:5], w[:5] - 1, rtol=1e-6)
    np.testing.assert_array_equal(w2[5:], w[5:])
    with pytest.raises(RuntimeError, match="row_sparse_data"):
        layer.weight.data()


# ---- dynamic_unroll ---------------------------------------------------------------
@pytest.mark.skipif(not hasattr(nd.contrib, "foreach"),
                    reason="needs the control-flow operator contrib.foreach")
@pytest.mark.parametrize("layout", ["TNC", "NTC"])
def test_dynamic_unroll_matches_unroll(layout):
    cell = rnn.LSTMCell(5, prefix="rnn_")
    cell.initialize()
    shape = (4, 3, 6) if layout == "TNC" else (3, 4, 6)
    x = nd.random.uniform(shape=shape)
    states = [nd.random.uniform(shape=(3, 5)) for _ in range(2)]
    valid = nd.array([4, 2, 1])
    want, want_states = cell.unroll(4, x, states, layout=layout, merge_outputs=True,
                                    valid_length=valid)
    got, got_states = contrib.rnn.rnn_cell.dynamic_unroll(cell, x, states, layout=layout,
                                                          valid_length=valid)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    for a, b in zip(got_states, want_states):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-6)


def test_dynamic_unroll_without_foreach_is_a_clear_error():
    if hasattr(nd.contrib, "foreach"):
        pytest.skip("contrib.foreach exists")
    cell = rnn.RNNCell(5)
    cell.initialize()
    with pytest.raises(MXNetError, match="foreach"):
        contrib.rnn.rnn_cell.dynamic_unroll(cell, nd.ones((4, 3, 6)), [nd.zeros((3, 5))])


# ---- contrib.cnn: deformable convolutions -------------------------------------------
_HAS_DEFORM = hasattr(nd.contrib, "DeformableConvolution") and \
    hasattr(nd.contrib, "ModulatedDeformableConvolution")


def test_deformable_convolution_parameters_and_repr():
    from oxnet.gluon.contrib.cnn import (DeformableConvolution,
                                         ModulatedDeformableConvolution)
    layer = DeformableConvolution(10, kernel_size=(3, 2), padding=1, num_deformable_group=2,
                                  in_channels=4, prefix="d_")
    assert sorted(layer.collect_params().keys()) == [
        "d_deformable_conv_bias", "d_deformable_conv_weight", "d_offset_bias",
        "d_offset_weight"]
    assert layer.offset_weight.shape == (24, 4, 3, 2)      # 2 * 3 * 2 * 2 groups
    assert layer.deformable_conv_weight.shape == (10, 4, 3, 2)
    assert repr(layer) == ("DeformableConvolution(4 -> 10, kernel_size=(3, 2), "
                           "stride=(1, 1), padding=(1, 1))")
    no_bias = DeformableConvolution(6, 3, use_bias=False, offset_use_bias=False,
                                    activation="relu")
    assert no_bias.offset_bias is None and no_bias.deformable_conv_bias is None
    assert sorted(p[len(no_bias.prefix):] for p in no_bias.collect_params().keys()) == [
        "deformable_conv_weight", "offset_weight"]
    assert no_bias.prefix.startswith("deformable_conv")
    assert "bias=False" in repr(no_bias) and "Activation(relu)" in repr(no_bias)
    v2 = ModulatedDeformableConvolution(8, 3, in_channels=2)
    assert v2.offset_weight.shape == (27, 2, 3, 3)          # 18 offsets + 9 mask channels


def test_deformable_convolution_bad_arguments():
    from oxnet.gluon.contrib.cnn import DeformableConvolution
    with pytest.raises(MXNetError, match="layout"):
        DeformableConvolution(4, 3, layout="NCW")
    with pytest.raises(MXNetError, match="kernel_size"):
        DeformableConvolution(4, (3, 3, 3))
    with pytest.raises(MXNetError, match="divisible"):
        DeformableConvolution(4, 3, groups=2, in_channels=3)
    with pytest.raises(MXNetError, match="channels"):
        DeformableConvolution(0, 3)


@pytest.mark.skipif(_HAS_DEFORM, reason="the deformable convolution ops exist")
def test_deformable_convolution_without_the_op_is_a_clear_error():
    from oxnet.gluon.contrib.cnn import DeformableConvolution
    layer = DeformableConvolution(4, 3)
    layer.initialize()
    with pytest.raises(MXNetError, match="_contrib_DeformableConvolution"):
        layer(nd.ones((1, 2, 5, 5)))


@pytest.mark.skipif(not _HAS_DEFORM, reason="needs _contrib_(Modulated)DeformableConvolution")
@pytest.mark.parametrize("hybrid", [False, True])
def test_deformable_convolution_with_zero_offsets_is_convolution(hybrid):
    from oxnet.gluon.contrib.cnn import (DeformableConvolution,
                                         ModulatedDeformableConvolution)
    x = nd.random.uniform(shape=(2, 3, 7, 6))
    for cls, scale in ((DeformableConvolution, 1.0), (ModulatedDeformableConvolution, 0.5)):
        layer = cls(5, kernel_size=3, padding=1)
        layer.initialize()
        if hybrid:
            layer.hybridize()
        with autograd.record():
            y = layer(x)
        y.backward()
        assert layer.deformable_conv_weight.shape == (5, 3, 3, 3)
        w = layer.deformable_conv_weight.data().asnumpy()
        b = layer.deformable_conv_bias.data().asnumpy()
        # offsets are 0 (zero-initialised offset convolution); v2's mask is sigmoid(0)
        want = scale * _conv_nd(x.asnumpy(), w, np.zeros(5), (1, 1)) + b.reshape(1, -1, 1, 1)
        np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-4, atol=1e-5)


# ---- contrib.data -------------------------------------------------------------------
def test_contrib_interval_sampler():
    s = contrib.data.IntervalSampler(10, 3)
    assert list(s) == [0, 3, 6, 9, 1, 4, 7, 2, 5, 8] and len(s) == 10
    s = contrib.data.IntervalSampler(10, 3, rollover=False)
    assert list(s) == [0, 3, 6, 9] and len(s) == 4
    assert contrib.data.IntervalSampler is gluon.data.IntervalSampler
    with pytest.raises(AssertionError):
        contrib.data.IntervalSampler(3, 3)
