"""gluon.rnn: cells and layers against MXNet 1.9.1 (fixtures written by
tests/fixtures/rnn/make_rnn_fixtures.py from the cases in tests/fixtures/rnn/cases.py:
same parameters and inputs, outputs and states compared), parameter names, shapes and
reprs as MXNet's, MXNet's parameter files loading, gradients against float64 central
differences, hybridized against imperative, a short training run, and clear errors
for bad inputs."""

import importlib.util
import json
import os

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon, nd
from oxnet.base import MXNetError
from oxnet.gluon import nn, rnn

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "fixtures", "rnn")
_spec = importlib.util.spec_from_file_location("rnn_cases", os.path.join(FIX, "cases.py"))
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)
IO = np.load(os.path.join(FIX, "rnn_io.npz"))
with open(os.path.join(FIX, "rnn_meta.json")) as _f:
    META = json.load(_f)


def _case_inputs(name):
    x = IO[name + "/x"]
    states = [IO["%s/s%d" % (name, i)] for i in range(8) if "%s/s%d" % (name, i) in IO]
    valid = IO[name + "/valid"] if name + "/valid" in IO else None
    return x, states, valid


def _loaded(name):
    block = cases.make_block(rnn, name)
    block.collect_params().initialize()
    block.load_parameters(os.path.join(FIX, name + ".params"))
    return block


# ---- against MXNet ------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_outputs_and_states_match_mxnet(name):
    block = _loaded(name)
    x, states, valid = _case_inputs(name)
    outs = cases.run(nd, name, block, x, states, valid)
    assert len(outs) == META[name]["n_out"]
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o.asnumpy(), IO["%s/out%d" % (name, i)], rtol=1e-5,
                                   atol=1e-6, err_msg="%s output %d" % (name, i))


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_parameter_names_shapes_and_repr_match_mxnet(name):
    block = cases.make_block(rnn, name)
    block.collect_params().initialize()
    x, states, valid = _case_inputs(name)
    cases.run(nd, name, block, x, states, valid)  # finishes deferred shapes
    assert [[k, list(p.shape)] for k, p in block.collect_params().items()] \
        == META[name]["params"]
    assert repr(block) == META[name]["repr"]


@pytest.mark.parametrize("name", ["lstm_2l_bi", "gru", "lstm_proj", "bidir", "seq"])
def test_save_parameters_writes_mxnet_names(name, tmp_path):
    block = _loaded(name)
    path = str(tmp_path / "p.params")
    block.save_parameters(path)
    ours, theirs = nd.load(path), nd.load(os.path.join(FIX, name + ".params"))
    assert sorted(ours) == sorted(theirs)
    for k in ours:
        np.testing.assert_array_equal(ours[k].asnumpy(), theirs[k].asnumpy())


def test_layer_reprs_and_state_info_before_init():
    assert repr(rnn.LSTM(10)) == "LSTM(None -> 10, TNC)"
    assert repr(rnn.GRU(10, num_layers=2, bidirectional=True, dropout=0.3, layout="NTC",
                        input_size=5)) == \
        "GRU(5 -> 10, NTC, num_layers=2, dropout=0.3, bidirectional)"
    assert repr(rnn.RNNCell(5, activation="relu")) == "RNNCell(None -> 5, relu)"
    assert repr(rnn.DropoutCell(0.5)) == "DropoutCell(rate=0.5, axes=())"
    lstm = rnn.LSTM(10, projection_size=4, num_layers=2, bidirectional=True)
    assert lstm.state_info(2) == [
        {"shape": (4, 2, 4), "__layout__": "LNC", "dtype": "float32"},
        {"shape": (4, 2, 10), "__layout__": "LNC", "dtype": "float32"}]
    assert rnn.LSTMCell(3).state_info(2) == [{"shape": (2, 3), "__layout__": "NC"}] * 2
    z = rnn.ZoneoutCell(rnn.LSTMCell(3, prefix="base_"), 0.1, 0.2)
    assert z.prefix == "base_zoneout"
    assert repr(z) == "ZoneoutCell(p_out=0.1, p_state=0.2, LSTMCell(None -> 12))"


def test_begin_state():
    layer = rnn.GRU(4, num_layers=3, bidirectional=True)
    st = layer.begin_state(2, dtype="float64")
    assert [s.shape for s in st] == [(6, 2, 4)] and st[0].dtype == np.float64
    st = layer.begin_state(2, func=nd.ones)
    assert st[0].asnumpy().sum() == 48
    cell = rnn.SequentialRNNCell()
    cell.add(rnn.LSTMCell(3))
    cell.add(rnn.GRUCell(5))
    assert [s.shape for s in cell.begin_state(batch_size=2)] == [(2, 3), (2, 3), (2, 5)]
    syms = rnn.LSTMCell(3, prefix="c_").begin_state(2, func=mx.sym.zeros)
    assert [s.name for s in syms] == ["c_begin_state_0", "c_begin_state_1"]


# ---- layers: calling conventions -----------------------------------------------------
def test_layer_with_and_without_states_and_deferred_input_size():
    layer = rnn.LSTM(4, num_layers=2)
    layer.initialize()
    x = nd.array(np.random.RandomState(0).randn(3, 2, 5))
    out = layer(x)
    assert isinstance(out, nd.NDArray) and out.shape == (3, 2, 4)
    assert layer.l0_i2h_weight.shape == (16, 5) and layer.l1_i2h_weight.shape == (16, 4)
    out2, states = layer(x, layer.begin_state(2))
    np.testing.assert_allclose(out2.asnumpy(), out.asnumpy(), rtol=1e-6)
    assert [s.shape for s in states] == [(2, 2, 4), (2, 2, 4)]
    # the final hidden state of the last layer is the last output step
    np.testing.assert_allclose(states[0][1].asnumpy(), out[-1].asnumpy(), rtol=1e-6)
    gru = rnn.GRU(3)
    gru.initialize()
    out, st = gru(nd.ones((2, 1, 2)), nd.zeros((1, 1, 3)))  # a single state as an NDArray
    assert out.shape == (2, 1, 3) and st[0].shape == (1, 1, 3)
    # hybridized: with and without states alternately (the graph is traced for each)
    layer.hybridize()
    for _ in range(2):
        h_out = layer(x)
        assert isinstance(h_out, nd.NDArray)
        np.testing.assert_allclose(h_out.asnumpy(), out2.asnumpy(), rtol=1e-5, atol=1e-7)
        h_out, h_states = layer(x, layer.begin_state(2))
        np.testing.assert_allclose(h_states[1].asnumpy(), states[1].asnumpy(), rtol=1e-5,
                                   atol=1e-7)


def test_layer_dropout_between_layers_only_in_training():
    layer = rnn.GRU(8, num_layers=2, dropout=0.5)
    layer.initialize(mx.init.Xavier())
    x = nd.array(np.random.RandomState(1).randn(4, 3, 5))
    pred = layer(x).asnumpy()
    np.testing.assert_allclose(layer(x).asnumpy(), pred)
    with autograd.record():
        train = layer(x).asnumpy()
    assert not np.allclose(train, pred)
    one = rnn.GRU(8, num_layers=1, dropout=0.5)  # no layer after the first: no dropout
    one.initialize()
    y = one(x).asnumpy()
    with autograd.record():
        np.testing.assert_allclose(one(x).asnumpy(), y, rtol=1e-6)


def test_lstm_state_clipping_against_numpy():
    # MXNet 1.9.1 clips only with cuDNN (its CPU kernel ignores the bounds); clipping
    # is done as documented: the cell state after each step, before h = o * tanh(c)
    layer = rnn.LSTM(3, state_clip_min=-0.2, state_clip_max=0.3, input_size=2)
    layer.initialize(mx.init.Uniform(1.0))
    rs = np.random.RandomState(2)
    for p in layer.collect_params().values():
        p.set_data(rs.uniform(-1, 1, p.shape))
    x = rs.uniform(-2, 2, (4, 2, 2)).astype(np.float32)
    out, (h, c) = layer(nd.array(x), layer.begin_state(2))
    P = {k[len(layer.prefix):]: v.data().asnumpy() for k, v in layer.collect_params().items()}
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    hh, cc, ref = np.zeros((2, 3)), np.zeros((2, 3)), []
    for t in range(4):
        g = x[t] @ P["l0_i2h_weight"].T + P["l0_i2h_bias"] + hh @ P["l0_h2h_weight"].T \
            + P["l0_h2h_bias"]
        i, f, n, o = np.split(g, 4, axis=1)
        cc = np.clip(sig(f) * cc + sig(i) * np.tanh(n), -0.2, 0.3)
        hh = sig(o) * np.tanh(cc)
        ref.append(hh)
    np.testing.assert_allclose(out.asnumpy(), np.stack(ref), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c.asnumpy()[0], cc, rtol=1e-5, atol=1e-6)
    assert c.asnumpy().max() <= 0.3 + 1e-7 and c.asnumpy().min() >= -0.2 - 1e-7
    # NaN: propagates, or becomes the lower bound with state_clip_nan
    bad = x.copy()
    bad[1, 0, 0] = np.nan
    _, (_, c) = layer(nd.array(bad), layer.begin_state(2))
    assert np.isnan(c.asnumpy()[0, 0]).all() and not np.isnan(c.asnumpy()[0, 1]).any()
    guarded = rnn.LSTM(3, state_clip_min=-0.2, state_clip_max=0.3, state_clip_nan=True,
                       input_size=2, params=layer.collect_params())
    _, (_, c) = guarded(nd.array(bad), guarded.begin_state(2))
    assert not np.isnan(c.asnumpy()).any()


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_layer_sequence_length_matches_bidirectional_cells_with_valid_length(mode):
    # MXNet 1.9.1's CPU kernel does not honour sequence_length (its LSTM ignores it,
    # its GRU fails); the result here is that of the cells' unroll with valid_length,
    # whose agreement with MXNet the fixtures check
    rs = np.random.RandomState(12)
    layer = getattr(rnn, mode)(3, bidirectional=True, use_sequence_length=True,
                               layout="NTC", input_size=2)
    layer.initialize(mx.init.Xavier())
    x = nd.array(rs.randn(3, 4, 2))
    valid = nd.array([4, 2, 1])
    states = [nd.array(rs.randn(*i["shape"])) for i in layer.state_info(3)]
    out, new = layer(x, states, sequence_length=valid)
    make = getattr(rnn, mode + "Cell")
    kw = {"activation": "relu"} if mode == "RNN" else {}
    bi = rnn.BidirectionalCell(make(3, input_size=2, **kw), make(3, input_size=2, **kw))
    bi.initialize()
    for d, cell in zip("lr", bi._children.values()):
        for k in ["i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"]:
            getattr(cell, k).set_data(getattr(layer, "%s0_%s" % (d, k)).data())
    n = len(states)
    begin = [s[0] for s in states] + [s[1] for s in states]  # l_cell's, then r_cell's
    ref, ref_states = bi.unroll(4, x, begin_state=begin, merge_outputs=True,
                                valid_length=valid)
    np.testing.assert_allclose(out.asnumpy(), ref.asnumpy(), rtol=1e-6, atol=1e-7)
    assert (out.asnumpy()[2, 1:] == 0).all()
    # float32: the fused op's recurrent product sums in another order than the
    # cells' FullyConnected (a packed FMA kernel), so a few ulps apart
    for i in range(n):
        np.testing.assert_allclose(new[i].asnumpy()[0], ref_states[i].asnumpy(), rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(new[i].asnumpy()[1], ref_states[n + i].asnumpy(),
                                   rtol=1e-5, atol=1e-6)
    layer.hybridize()
    out_h, _ = layer(x, states, sequence_length=valid)
    np.testing.assert_allclose(out_h.asnumpy(), out.asnumpy(), rtol=1e-6, atol=1e-7)


# ---- gradients ----------------------------------------------------------------------
EPS = 1e-6


def _objective(fn, heads):
    outs = fn()
    return sum(float((o.asnumpy() * h).sum()) for o, h in zip(outs, heads))


def _grad_check(block, fn, inputs, rs, n_probe=4):
    """``fn()`` runs ``block`` on ``inputs`` (float64 NDArrays) and returns a list of
    NDArrays; the gradients of sum(out * head) of the inputs and of every parameter
    are compared with central differences."""
    heads = [rs.randn(*o.shape) for o in fn()]
    for x in inputs:
        x.attach_grad()
    with autograd.record():
        outs = fn()
    autograd.backward(outs, [nd.array(h, dtype="float64") for h in heads])
    arrays = [("input %d" % i, x, x.grad.asnumpy().copy()) for i, x in enumerate(inputs)]
    arrays += [(k, p.data(), p.grad().asnumpy().copy())
               for k, p in block.collect_params().items()]
    for what, arr, grad in arrays:
        for i in rs.choice(arr.size, min(n_probe, arr.size), replace=False):
            pos = np.unravel_index(i, arr.shape)
            v = arr[pos].asscalar()
            arr[pos] = v + EPS
            fp = _objective(fn, heads)
            arr[pos] = v - EPS
            fm = _objective(fn, heads)
            arr[pos] = v
            np.testing.assert_allclose(grad[pos], (fp - fm) / (2 * EPS), rtol=1e-4,
                                       atol=1e-7, err_msg="%s at %s" % (what, pos))
    return [o.asnumpy() for o in outs], [g for _, _, g in arrays]


def _f64(block, *shapes):
    block.initialize(mx.init.Xavier())
    block.cast("float64")
    rs = np.random.RandomState(4)
    return rs, [nd.array(rs.uniform(-1, 1, s), dtype="float64") for s in shapes]


_GRAD_LAYERS = [
    ("lstm_2l_bi_states", lambda: rnn.LSTM(3, num_layers=2, bidirectional=True), True),
    ("gru_ntc_states", lambda: rnn.GRU(3, layout="NTC"), True),
    ("rnn_tanh_bi", lambda: rnn.RNN(3, activation="tanh", bidirectional=True), False),
    ("lstm_proj", lambda: rnn.LSTM(3, projection_size=2), True),
    ("gru_bi_seqlen", lambda: rnn.GRU(3, bidirectional=True, use_sequence_length=True),
     True),
]


@pytest.mark.parametrize("name,make,with_states", _GRAD_LAYERS,
                         ids=[c[0] for c in _GRAD_LAYERS])
def test_layer_gradients_numeric_and_hybridized(name, make, with_states):
    block = make()
    shape = (2, 3, 2)  # (T, N, C) or (N, T, C): 2 x 3 either way
    rs, (x,) = _f64(block, shape)
    batch = x.shape[block._layout.find("N")]
    states = []
    if with_states:
        states = [nd.array(rs.uniform(-1, 1, i["shape"]), dtype="float64")
                  for i in block.state_info(batch)]

    seqlen = [nd.array([2, 1, 2])] if block._use_sequence_length else []

    def fn():
        if with_states:
            out, new = block(x, states, *seqlen)
            return [out] + list(new)
        return [block(x, None, *seqlen)]

    fn()  # deferred initialization
    outs, _ = _grad_check(block, fn, [x] + states, rs)
    block.hybridize()
    rs2 = np.random.RandomState(4)
    heads = [rs2.randn(*o.shape) for o in outs]
    for a in [x] + states:
        a.grad[:] = 0
    with autograd.record():
        outs_h = fn()
    autograd.backward(outs_h, [nd.array(h, dtype="float64") for h in heads])
    assert block._cached_op is not None
    for a, b in zip(outs_h, outs):
        np.testing.assert_allclose(a.asnumpy(), b, rtol=1e-10, atol=1e-12)
    grads_h = [a.grad.asnumpy() for a in [x] + states]
    grads_h += [p.grad().asnumpy() for p in block.collect_params().values()]
    # the heads differ from _grad_check's (different draws): compare against a fresh
    # imperative pass with the same heads
    block.hybridize(False)
    for a in [x] + states:
        a.grad[:] = 0
    with autograd.record():
        outs_i = fn()
    autograd.backward(outs_i, [nd.array(h, dtype="float64") for h in heads])
    grads_i = [a.grad.asnumpy() for a in [x] + states]
    grads_i += [p.grad().asnumpy() for p in block.collect_params().values()]
    for a, b in zip(grads_h, grads_i):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


_GRAD_CELLS = [
    ("lstmcell", lambda: rnn.LSTMCell(3), {}),
    ("grucell_tnc", lambda: rnn.GRUCell(3), {"layout": "TNC"}),
    ("rnncell_relu", lambda: rnn.RNNCell(3, "relu"), {}),
    ("bidir_valid", lambda: rnn.BidirectionalCell(rnn.LSTMCell(2), rnn.GRUCell(2)),
     {"valid": True}),
    ("residual", lambda: rnn.ResidualCell(rnn.GRUCell(2)), {}),
]


@pytest.mark.parametrize("name,make,kw", _GRAD_CELLS, ids=[c[0] for c in _GRAD_CELLS])
def test_cell_unroll_gradients_numeric(name, make, kw):
    cell = make()
    layout = kw.get("layout", "NTC")
    rs, (x,) = _f64(cell, (3, 3, 2))
    valid = nd.array([3, 1, 2]) if kw.get("valid") else None

    def fn():
        out, states = cell.unroll(3, x, layout=layout, merge_outputs=True,
                                  valid_length=valid)
        return [out] + list(states)

    fn()
    _grad_check(cell, fn, [x], rs)


def test_hybridized_cells_match_imperative():
    rs = np.random.RandomState(5)
    x = nd.array(rs.randn(2, 3))
    for make in (lambda: rnn.LSTMCell(4), lambda: rnn.GRUCell(4), lambda: rnn.RNNCell(4)):
        cell = make()
        cell.initialize(mx.init.Xavier())
        states = [s + 0.5 for s in cell.begin_state(2)]
        ref = cell(x, states)
        cell.hybridize()
        for _ in range(2):
            got = cell(x, states)
            assert cell._cached_op is not None
            for a, b in zip([got[0]] + got[1], [ref[0]] + ref[1]):
                np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6)


def test_hybridized_parent_traces_again_for_a_new_sequence_length(tmp_path):
    class Net(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.emb = nn.Embedding(10, 4)
                self.lstm = rnn.LSTM(5, layout="NTC", num_layers=2, bidirectional=True)
                self.out = nn.Dense(3, flatten=False)

        def hybrid_forward(self, F, x):
            return self.out(self.lstm(self.emb(x)))

    net = Net()
    net.initialize(mx.init.Xavier())
    rs = np.random.RandomState(6)
    xs = [nd.array(rs.randint(0, 10, s)) for s in [(2, 5), (3, 7), (2, 5)]]
    refs = [net(x).asnumpy() for x in xs]
    net.hybridize()
    for x, ref in zip(xs, refs):
        y = net(x)
        assert y.shape == ref.shape
        np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    net.export(str(tmp_path / "net"))
    sb = gluon.SymbolBlock.imports(str(tmp_path / "net-symbol.json"), ["data"],
                                   str(tmp_path / "net-0000.params"))
    np.testing.assert_allclose(sb(xs[0]).asnumpy(), refs[0], rtol=1e-5, atol=1e-6)


def test_symbol_inputs():
    # the fused RNN op: any sequence length, the parameters inferred from the data
    out = rnn.GRU(4, prefix="g0_")(mx.sym.var("data", shape=(0, 2, 3)))
    assert out.infer_shape(data=(7, 2, 3))[1] == [(7, 2, 4)]
    assert "g0_l0_i2h_weight" in out.list_arguments()
    out = rnn.GRU(4)(mx.sym.var("data", shape=(5, 2, 3)))
    assert out.infer_shape(data=(5, 2, 3))[1] == [(5, 2, 4)]
    outs, states = rnn.LSTMCell(4).unroll(3, mx.sym.var("data"), merge_outputs=True)
    assert outs.infer_shape(data=(2, 3, 5))[1] == [(2, 3, 4)]
    assert [s.infer_shape(data=(2, 3, 5))[1] for s in states] == [[(2, 4)], [(2, 4)]]


# ---- modifiers in training ----------------------------------------------------------
def test_zoneout_and_dropout_cells_in_training():
    mx.random.seed(0)
    base = rnn.GRUCell(6)
    cell = rnn.ZoneoutCell(base, zoneout_outputs=0.5, zoneout_states=0.5)
    cell.initialize(mx.init.Xavier())
    x = nd.array(np.random.RandomState(7).randn(4, 3, 5))
    cell.reset()
    states = cell.begin_state(batch_size=4, func=nd.zeros)
    prev = np.zeros((4, 6))
    counts = np.zeros(2)
    for t in range(3):
        with autograd.record():
            out, new_states = cell(x[:, t], states)
        # what the base cell computes from the same states (no zoneout)
        o_new, s_new = base(x[:, t], states)
        o, o_new = out.asnumpy(), o_new.asnumpy()
        # each unit: the base cell's new value, or (zoned out) the previous one
        assert np.all(np.isclose(o, o_new) | (o == prev))
        s, sn, old = new_states[0].asnumpy(), s_new[0].asnumpy(), states[0].asnumpy()
        assert np.all(np.isclose(s, sn) | (s == old))
        counts += [np.sum((o == prev) & ~np.isclose(o, o_new)), np.sum(~np.isclose(o, prev))]
        prev, states = o, new_states
    assert counts.min() > 0  # both kept and updated units occur
    # in predict mode zoneout does nothing
    out_p, _ = cell.unroll(3, x, merge_outputs=True)
    base._modified = False
    ref, _ = base.unroll(3, x, merge_outputs=True)
    base._modified = True
    np.testing.assert_allclose(out_p.asnumpy(), ref.asnumpy(), rtol=1e-6)
    drop = rnn.DropoutCell(0.5)
    y, st = drop.unroll(3, x, merge_outputs=True)
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())
    assert st == []
    with autograd.record():
        y, _ = drop.unroll(3, x, merge_outputs=True)
    yy = y.asnumpy()
    assert np.any(yy == 0) and np.allclose(yy[yy != 0], 2 * x.asnumpy()[yy != 0], rtol=1e-6)


# ---- training -----------------------------------------------------------------------
def test_tiny_lstm_learns_to_echo_the_previous_step():
    mx.random.seed(1)
    rs = np.random.RandomState(8)
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(rnn.LSTM(8, layout="NTC"))
        net.add(nn.Dense(1, flatten=False))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.03})
    loss_fn = gluon.loss.L2Loss()
    losses = []
    for _ in range(60):
        x = rs.choice([-1.0, 1.0], (16, 6, 1))
        y = np.concatenate([np.zeros((16, 1, 1)), x[:, :-1]], axis=1)
        with autograd.record():
            loss = loss_fn(net(nd.array(x)), nd.array(y))
        loss.backward()
        trainer.step(16)
        losses.append(loss.mean().asscalar())
    assert np.mean(losses[-5:]) < 0.25 * np.mean(losses[:5])


# ---- bad inputs ---------------------------------------------------------------------
def _intact(arrays, block):
    snap = [a.asnumpy().copy() for a in arrays]
    params = {k: p.data().asnumpy().copy() for k, p in block.collect_params().items()}

    def check():
        for a, s in zip(arrays, snap):
            np.testing.assert_array_equal(a.asnumpy(), s)
        for k, p in block.collect_params().items():
            np.testing.assert_array_equal(p.data().asnumpy(), params[k])
    return check


def test_layer_bad_inputs_raise_clear_errors():
    layer = rnn.LSTM(4, prefix="lstm9_")
    with pytest.raises(MXNetError, match=r"LSTM 'lstm9'.*rank-3.*\(4, 2\)"):
        layer.initialize()
        layer(nd.ones((4, 2)))
    x = nd.array(np.random.RandomState(9).randn(3, 2, 5))
    layer(x)
    check = _intact([x], layer)
    with pytest.raises(MXNetError, match=r"LSTM 'lstm9'.*7 features.*takes 5"):
        layer(nd.ones((3, 2, 7)))
    good = layer.begin_state(2)
    with pytest.raises(MXNetError, match=r"LSTM 'lstm9'.*Expecting \(1, 2, 4\), got \(1, 3, 4\)"):
        layer(x, [nd.zeros((1, 3, 4)), good[1]])
    with pytest.raises(MXNetError, match=r"LSTM 'lstm9'.*expected 2 recurrent state"):
        layer(x, good[:1])
    layer.hybridize()
    with pytest.raises(MXNetError, match=r"LSTM 'lstm9'.*Expecting"):
        layer(x, [good[0], nd.zeros((2, 2, 4))])
    check()
    with pytest.raises(MXNetError, match=r"GRU 'gru9'.*invalid layout 'CTN'"):
        rnn.GRU(4, layout="CTN", prefix="gru9_")
    with pytest.raises(MXNetError, match=r"RNN 'rnn9'.*invalid mode 'rnn_sigmoid'"):
        rnn.RNN(4, activation="sigmoid", prefix="rnn9_")
    with pytest.raises(MXNetError, match=r"LSTM 'lstm9'.*use_sequence_length=False"):
        layer(x, sequence_length=nd.array([1, 2]))
    seq = rnn.GRU(4, use_sequence_length=True, prefix="gru7_")
    seq.initialize()
    with pytest.raises(MXNetError, match=r"GRU 'gru7'.*needs sequence_length.*\(2,\)"):
        seq(x)
    with pytest.raises(MXNetError, match=r"GRU 'gru7'.*must lie in \[1, 3\]"):
        seq(x, sequence_length=nd.array([4, 1]))


def test_cell_bad_inputs_raise_clear_errors():
    cell = rnn.GRUCell(4, prefix="gru8_")
    cell.initialize()
    x = nd.array(np.random.RandomState(10).randn(2, 3))
    states = cell.begin_state(2)
    cell(x, states)
    check = _intact([x] + states, cell)
    with pytest.raises(MXNetError, match=r"GRUCell 'gru8'.*state 0 must have shape \(2, 4\)"):
        cell(x, [nd.zeros((3, 4))])
    with pytest.raises(MXNetError, match=r"GRUCell 'gru8'.*list of 1 arrays"):
        cell(x, states[0])
    with pytest.raises(MXNetError, match=r"GRUCell 'gru8'.*5 features.*takes 3"):
        cell(nd.ones((2, 5)), states)
    with pytest.raises(MXNetError, match=r"unroll: length 4 does not match the 3 steps"):
        cell.unroll(4, nd.ones((2, 3, 3)))
    with pytest.raises(MXNetError, match=r"unroll: invalid layout 'TCN'"):
        cell.unroll(3, nd.ones((2, 3, 3)), layout="TCN")
    check()
    bi = rnn.BidirectionalCell(rnn.GRUCell(2), rnn.GRUCell(2))
    with pytest.raises(MXNetError, match="cannot be stepped"):
        bi(x, [])
    base = rnn.LSTMCell(2, prefix="base7_")
    rnn.ResidualCell(base)
    with pytest.raises(MXNetError, match="already modified"):
        rnn.ZoneoutCell(base)
    with pytest.raises(MXNetError, match="LSTMCell 'base7'.*modifier"):
        base.begin_state(2)


# ---- contrib ------------------------------------------------------------------------
@pytest.mark.parametrize("drop_states", [0.0, 0.5])
def test_variational_dropout_cell_masks_are_shared_over_time(drop_states):
    from oxnet.gluon.contrib.rnn import VariationalDropoutCell
    mx.random.seed(2)
    base = rnn.GRUCell(8, prefix="vbase_")
    cell = VariationalDropoutCell(base, drop_inputs=0.5, drop_states=drop_states,
                                  drop_outputs=0.5)
    assert cell.prefix == "vbase_vardrop"
    assert repr(cell) == "VariationalDropoutCell(p_out = 0.5, p_state = %s)" % drop_states
    cell.initialize(mx.init.Xavier())
    x = nd.array(np.random.RandomState(11).uniform(0.5, 1.5, (4, 5, 3)))
    out_p, _ = cell.unroll(5, x, merge_outputs=True)
    base._modified = False
    ref, _ = base.unroll(5, x, merge_outputs=True)
    base._modified = True
    np.testing.assert_allclose(out_p.asnumpy(), ref.asnumpy(), rtol=1e-6)  # predict mode
    with autograd.record():
        out, _ = cell.unroll(5, x, merge_outputs=True)
    zero = out.asnumpy() == 0
    assert zero.any() and not zero.all()
    assert (zero == zero[:, :1]).all()  # the same output units dropped at every step
