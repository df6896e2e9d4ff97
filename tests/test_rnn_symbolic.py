"""mx.rnn (MXNet 1.x's symbolic RNN cells, bucketed sentence iterator, RNN
checkpoints): names as MXNet gives them, unrolled LSTM/GRU/RNN graphs against NumPy,
weight packing, and bad inputs. Begin states are given as Variables with full shapes
here (the default zeros of shape (0, H) need shape inference of unknown dims)."""

import numpy as np
import pytest

import oxnet as mx


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _params(cell_params, shapes, rng):
    return {k: rng.uniform(-0.5, 0.5, shapes[k]).astype(np.float32) for k in cell_params}


def _run(sym, values):
    exe = sym.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in values.items()})
    return [o.asnumpy() for o in exe.forward()]


def test_names_and_params_as_mxnet():
    cell = mx.rnn.RNNCell(100, prefix="rnn_")
    outputs, _ = cell.unroll(3, [mx.sym.Variable("rnn_t%d_data" % i) for i in range(3)])
    outputs = mx.sym.Group(outputs)
    assert sorted(cell.params._params) == ["rnn_h2h_bias", "rnn_h2h_weight",
                                           "rnn_i2h_bias", "rnn_i2h_weight"]
    assert outputs.list_outputs() == ["rnn_t0_out_output", "rnn_t1_out_output",
                                      "rnn_t2_out_output"]
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(5, prefix="l0_"))
    stack.add(mx.rnn.ResidualCell(mx.rnn.LSTMCell(5, prefix="l1_")))
    assert [b.name for b in stack.begin_state(func=mx.sym.Variable)] == \
        ["l0_begin_state_0", "l0_begin_state_1", "l1_begin_state_0", "l1_begin_state_1"]
    assert {"l0_i2h_weight", "l1_h2h_bias"} <= set(stack.params._params)
    bi = mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(4, prefix="l_"),
                                  mx.rnn.LSTMCell(4, prefix="r_"), output_prefix="bi_")
    out, _ = bi.unroll(2, [mx.sym.Variable("x0"), mx.sym.Variable("x1")],
                       begin_state=bi.begin_state(func=mx.sym.Variable))
    assert mx.sym.Group(out).list_outputs() == ["bi_t0_output", "bi_t1_output"]
    unfused = mx.rnn.FusedRNNCell(10, num_layers=2, mode="gru", bidirectional=True,
                                  prefix="f_").unfuse()
    out, _ = unfused.unroll(2, [mx.sym.Variable("x0"), mx.sym.Variable("x1")],
                            begin_state=unfused.begin_state(func=mx.sym.Variable))
    assert mx.sym.Group(out).list_outputs() == ["f_bi_l1_t0_output", "f_bi_l1_t1_output"]
    # the LSTM's forget bias travels as the i2h bias's initializer
    lstm = mx.rnn.LSTMCell(4, forget_bias=2.0, prefix="q_")
    assert lstm.params.get("i2h_bias").attr("__init__") == '["lstmbias", {"forget_bias": 2.0}]'


def test_lstm_unroll_matches_numpy():
    rng = np.random.RandomState(0)
    N, T, C, H = 2, 3, 5, 4
    cell = mx.rnn.LSTMCell(H, prefix="l_")
    begin = cell.begin_state(func=mx.sym.Variable)
    out, states = cell.unroll(T, mx.sym.Variable("data"), begin_state=begin, layout="NTC",
                              merge_outputs=True)
    sym = mx.sym.Group([out] + states)
    shapes = {"l_i2h_weight": (4 * H, C), "l_i2h_bias": (4 * H,),
              "l_h2h_weight": (4 * H, H), "l_h2h_bias": (4 * H,)}
    vals = _params(shapes, shapes, rng)
    x = rng.uniform(-1, 1, (N, T, C)).astype(np.float32)
    h0 = rng.uniform(-1, 1, (N, H)).astype(np.float32)
    c0 = rng.uniform(-1, 1, (N, H)).astype(np.float32)
    vals.update(data=x, l_begin_state_0=h0, l_begin_state_1=c0)
    got = _run(sym, vals)
    h, c, hs = h0, c0, []
    for t in range(T):
        g = x[:, t] @ vals["l_i2h_weight"].T + vals["l_i2h_bias"] + \
            h @ vals["l_h2h_weight"].T + vals["l_h2h_bias"]
        i, f, cc, o = np.split(g, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(cc)
        h = _sigmoid(o) * np.tanh(c)
        hs.append(h)
    np.testing.assert_allclose(got[0], np.stack(hs, axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], c, rtol=1e-5, atol=1e-6)


def test_gru_and_rnn_unroll_match_numpy_tnc():
    rng = np.random.RandomState(1)
    N, T, C, H = 3, 2, 4, 3
    x = rng.uniform(-1, 1, (T, N, C)).astype(np.float32)
    h0 = rng.uniform(-1, 1, (N, H)).astype(np.float32)
    for kind, gates in (("gru", 3), ("rnn", 1)):
        cell = mx.rnn.GRUCell(H, prefix="g_") if kind == "gru" else \
            mx.rnn.RNNCell(H, activation="relu", prefix="g_")
        out, _ = cell.unroll(T, mx.sym.Variable("data"),
                             begin_state=cell.begin_state(func=mx.sym.Variable), layout="TNC",
                             merge_outputs=False)
        shapes = {"g_i2h_weight": (gates * H, C), "g_i2h_bias": (gates * H,),
                  "g_h2h_weight": (gates * H, H), "g_h2h_bias": (gates * H,)}
        vals = _params(shapes, shapes, rng)
        vals.update(data=x, g_begin_state_0=h0)
        got = _run(mx.sym.Group(out), vals)
        h = h0
        for t in range(T):
            i2h = x[t] @ vals["g_i2h_weight"].T + vals["g_i2h_bias"]
            h2h = h @ vals["g_h2h_weight"].T + vals["g_h2h_bias"]
            if kind == "gru":
                ir, iz, ii = np.split(i2h, 3, axis=1)
                hr, hz, hh = np.split(h2h, 3, axis=1)
                r, z = _sigmoid(ir + hr), _sigmoid(iz + hz)
                h = (1 - z) * np.tanh(ii + r * hh) + z * h
            else:
                h = np.maximum(i2h + h2h, 0)
            np.testing.assert_allclose(got[t], h, rtol=1e-5, atol=1e-6)


def test_bidirectional_and_residual_match_numpy():
    rng = np.random.RandomState(2)
    N, T, C, H = 2, 3, 4, 2
    bi = mx.rnn.ResidualCell(mx.rnn.BidirectionalCell(
        mx.rnn.RNNCell(H, prefix="a_"), mx.rnn.RNNCell(H, prefix="b_")))
    begin = bi.begin_state(func=mx.sym.Variable)
    out, _ = bi.unroll(T, mx.sym.Variable("data"), begin_state=begin, merge_outputs=True)
    shapes = {}
    for p in ("a_", "b_"):
        shapes.update({p + "i2h_weight": (H, C), p + "i2h_bias": (H,),
                       p + "h2h_weight": (H, H), p + "h2h_bias": (H,)})
    vals = _params(shapes, shapes, rng)
    x = rng.uniform(-1, 1, (N, T, C)).astype(np.float32)
    vals.update(data=x, a_begin_state_0=np.zeros((N, H), np.float32),
                b_begin_state_0=np.zeros((N, H), np.float32))
    got = _run(out, vals)[0]

    def run(p, steps):
        h, res = np.zeros((N, H), np.float32), {}
        for t in steps:
            h = np.tanh(x[:, t] @ vals[p + "i2h_weight"].T + vals[p + "i2h_bias"]
                        + h @ vals[p + "h2h_weight"].T + vals[p + "h2h_bias"])
            res[t] = h
        return res
    fw, bw = run("a_", range(T)), run("b_", reversed(range(T)))
    want = np.stack([np.concatenate([fw[t], bw[t]], axis=1) for t in range(T)], axis=1) + x
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_pack_unpack_weights_round_trip():
    rng = np.random.RandomState(3)
    cell = mx.rnn.LSTMCell(3, prefix="l_")
    args = {"l_i2h_weight": mx.nd.array(rng.rand(12, 5)), "l_i2h_bias": mx.nd.array(rng.rand(12)),
            "l_h2h_weight": mx.nd.array(rng.rand(12, 3)), "l_h2h_bias": mx.nd.array(rng.rand(12))}
    un = cell.unpack_weights(args)
    assert sorted(un) == sorted("l_%s%s_%s" % (g, gate, k) for g in ("i2h", "h2h")
                                for gate in ("_i", "_f", "_c", "_o") for k in ("weight", "bias"))
    np.testing.assert_array_equal(un["l_i2h_f_weight"].asnumpy(),
                                  args["l_i2h_weight"].asnumpy()[3:6])
    back = cell.pack_weights(un)
    for k, v in args.items():
        np.testing.assert_array_equal(back[k].asnumpy(), v.asnumpy())
    # the fused layout: weights of every layer/direction first, then the biases
    fused = mx.rnn.FusedRNNCell(3, num_layers=2, mode="gru", bidirectional=True, prefix="f_")
    n_in, h, b, m = 4, 3, 2, 3
    total = (n_in + h + 2) * h * m * b + (2 - 1) * m * h * (h + b * h + 2) * b
    flat = mx.nd.array(rng.rand(total))
    un = fused.unpack_weights({"f_parameters": flat})
    assert un["f_l0_i2h_r_weight"].shape == (3, 4) and un["f_r1_i2h_o_weight"].shape == (3, 6)
    np.testing.assert_array_equal(un["f_l0_i2h_r_weight"].asnumpy().ravel(),
                                  flat.asnumpy()[:12])
    again = fused.pack_weights(un)
    np.testing.assert_array_equal(again["f_parameters"].asnumpy(), flat.asnumpy())


def test_encode_sentences_and_bucket_iter():
    res, vocab = mx.rnn.encode_sentences([["a", "b", "c"], ["b", "c", "d"]],
                                         vocab={"a": 1, "b": 2, "c": 3}, invalid_label=-1,
                                         invalid_key="\n", start_label=0, unknown_token="UNK")
    assert res == [[1, 2, 3], [2, 3, 0]] and vocab == {"a": 1, "b": 2, "c": 3, "UNK": 0}
    res, vocab = mx.rnn.encode_sentences([["x", "y", "x"]], invalid_label=0, start_label=0)
    assert res == [[1, 2, 1]] and vocab == {"\n": 0, "x": 1, "y": 2}
    with pytest.raises(mx.MXNetError, match="Unknown token"):
        mx.rnn.encode_sentences([["z"]], vocab={"a": 1})

    sents = [[1, 2, 3]] * 4 + [[4, 5, 6, 7, 8, 9]] * 4 + [list(range(1, 30))]
    it = mx.rnn.BucketSentenceIter(sents, 2, buckets=[2, 4, 8], invalid_label=-1)
    assert it.default_bucket_key == 8 and it.provide_data[0].shape == (2, 8)
    batches = list(it)
    assert sorted(b.bucket_key for b in batches) == [4, 4, 8, 8]   # bucket 2 is empty
    for b in batches:
        d, lab = b.data[0].asnumpy(), b.label[0].asnumpy()
        assert d.shape == (2, b.bucket_key) == b.provide_data[0].shape
        np.testing.assert_array_equal(lab[:, :-1], d[:, 1:])
        assert (lab[:, -1] == -1).all()
    it_tn = mx.rnn.BucketSentenceIter(sents, 2, buckets=[4, 8], layout="TN")
    assert next(iter(it_tn)).data[0].shape[1] == 2
    with pytest.raises(ValueError):
        mx.rnn.BucketSentenceIter(sents, 2, buckets=[4, 8], layout="XY")


def test_bad_uses_raise():
    base = mx.rnn.LSTMCell(3, prefix="l_")
    mx.rnn.ZoneoutCell(base, zoneout_outputs=0.5)
    with pytest.raises(mx.MXNetError, match="modifier"):
        base.begin_state()
    with pytest.raises(mx.MXNetError, match="unfuse"):
        mx.rnn.ZoneoutCell(mx.rnn.FusedRNNCell(3))
    with pytest.raises(NotImplementedError):
        mx.rnn.FusedRNNCell(3)(mx.sym.Variable("x"), [])
    with pytest.raises(mx.MXNetError, match="mode"):
        mx.rnn.FusedRNNCell(3, mode="bogus")
    with pytest.raises(mx.MXNetError, match="deprecated"):
        mx.rnn.RNNCell(3).unroll(2, None)
    with pytest.raises(mx.MXNetError, match="inputs given for length"):
        mx.rnn.RNNCell(3).unroll(3, [mx.sym.Variable("a")])
    with pytest.raises(mx.MXNetError, match="odd"):
        mx.rnn.ConvRNNCell((1, 3, 8, 8), 4, h2h_kernel=(2, 2))


def test_conv_cells_state_shape_and_names():
    cell = mx.rnn.ConvLSTMCell(input_shape=(1, 3, 16, 10), num_hidden=10, prefix="c_")
    assert cell.state_shape == [(0, 10, 16, 10), (0, 10, 16, 10)]
    begin = cell.begin_state(func=mx.sym.Variable)
    out, _ = cell.unroll(2, [mx.sym.Variable("x0"), mx.sym.Variable("x1")], begin_state=begin)
    out = mx.sym.Group(out)
    assert out.list_outputs() == ["c_t0_out_output", "c_t1_out_output"]
    _, shapes, _ = out.infer_shape(x0=(1, 3, 16, 10), x1=(1, 3, 16, 10),
                                   c_begin_state_0=(1, 10, 16, 10),
                                   c_begin_state_1=(1, 10, 16, 10))
    assert shapes == [(1, 10, 16, 10)] * 2
